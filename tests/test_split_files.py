"""Every subset a fairseq command loads is decided as fairseq's loaders will decide it, before any work
(``fairseq_wean.data.folder_files.subset_problem``, the parse-time check of fairseq-train, -generate, -validate
and -eval-lm): a split with only its .bin or only its .idx, the wrong --dataset-impl (raw on binarized files,
lazy on an mmap index, mmap on a cached one), an index with a header fairseq did not write, a translation split
without its target side, raw text beside a binarized side (fairseq's ``infer_dataset_impl`` reads the text), an
incomplete training shard or one after a gap, and validation shards fairseq-train would refuse after building
the model are one line at parse. Tasks are recognised by class (translation_lev, a subclass, is checked too).

Each planted form is also given to fairseq's own loader (``task.load_dataset``, ``raise_if_valid_subsets_
unintentionally_ignored``) on the same folder: the forms refused are those fairseq fails on (a traceback after
the model was built) or reads wrongly (silently), and the forms kept are those it loads as they are."""
import os
import shutil
import sys

import pytest

from conftest import USER_DIR, cli

PARSERS = {"fairseq-train": "get_training_parser", "fairseq-generate": "get_generation_parser",
           "fairseq-validate": "get_validation_parser", "fairseq-eval-lm": "get_eval_lm_parser"}
# (command, task, the subset planted, its option): every command that loads a subset, with a task of each reader
CASES = [("fairseq-generate", "translation", "test", "--gen-subset"),
         ("fairseq-generate", "translation_lev", "test", "--gen-subset"),
         ("fairseq-validate", "translation", "valid", "--valid-subset"),
         ("fairseq-validate", "translation_lev", "valid", "--valid-subset"),
         ("fairseq-validate", "language_modeling", "valid", "--valid-subset"),
         ("fairseq-train", "translation", "train", "--train-subset"),
         ("fairseq-train", "translation_lev", "valid", "--valid-subset"),
         ("fairseq-train", "language_modeling", "train", "--train-subset"),
         ("fairseq-train", "language_modeling", "valid", "--valid-subset"),
         ("fairseq-eval-lm", "language_modeling", "test", "--gen-subset")]


def _sides(folder, split, lm):
    """The prefixes of the split's sides (source first): SPLIT for language modelling, SPLIT.src-tgt.LANG."""
    if lm:
        return [str(folder / split)]
    return [str(folder / "{}.src-tgt.{}".format(split, lang)) for lang in ("src", "tgt")]


def _remove(ext, which=slice(None)):
    def plant(folder, split, lm, raw):
        for prefix in _sides(folder, split, lm)[which]:
            for e in ext:
                os.remove(prefix + e)
    return plant


def _cached(folder, split, lm, raw):
    """Rewrite the split in fairseq's cached/lazy format (IndexedDatasetBuilder: header TNTIDX)."""
    from fairseq.data.indexed_dataset import IndexedDatasetBuilder, MMapIndexedDataset

    for prefix in _sides(folder, split, lm):
        items = [t.clone() for t in MMapIndexedDataset(prefix)]
        builder = IndexedDatasetBuilder(prefix + ".bin")
        for item in items:
            builder.add_item(item)
        builder.finalize(prefix + ".idx")


def _bad_header(folder, split, lm, raw):
    with open(_sides(folder, split, lm)[-1] + ".idx", "r+b") as f:
        f.write(b"NOTANIDX")


def _stray(folder, split, lm, raw):
    """The source text as the raw text of the last side, beside its binarized files (the same number of lines:
    fairseq reads it without a word)."""
    shutil.copy(os.path.join(str(raw), "{}.src".format(split)), _sides(folder, split, lm)[-1])


# the forms read through IndexedCachedDataset (only prefetched items): a command that reads items before fairseq
# prefetches them (fairseq-train's first batch) fails (a KeyError after the
# model was built), and is refused naming lazy, the reader of the same files
CACHED_READ = ("cached index, no --dataset-impl", "cached index, --dataset-impl cached")
READS_BEFORE_PREFETCH = ("fairseq-train",)  # fairseq-generate prefetches before the plugin's check reads
# form -> (plant, extra options, what the refusal says (None: kept), what fairseq's own loader does)
FORMS = {
    "intact": (None, [], None, "loads"),
    "only .bin": (_remove([".idx"]), [], "which fairseq does not load", "fails"),
    "only .idx": (_remove([".bin"]), [], "which fairseq does not load", "fails"),
    "--dataset-impl raw on binarized files": (None, ["--dataset-impl", "raw"],
                                              "which fairseq does not load", "fails"),
    "--dataset-impl lazy on an mmap index": (None, ["--dataset-impl", "lazy"],
                                             "idx is an mmap index (its header): --dataset-impl lazy reads only a "
                                             "cached one", "fails"),
    "--dataset-impl mmap on a cached index": (_cached, ["--dataset-impl", "mmap"],
                                              "idx is a cached index (its header): --dataset-impl mmap reads only an "
                                              "mmap one", "fails"),
    "cached index, --dataset-impl lazy": (_cached, ["--dataset-impl", "lazy"], None, "loads"),
    "cached index, no --dataset-impl": (_cached, [], None, "loads"),
    "cached index, --dataset-impl cached": (_cached, ["--dataset-impl", "cached"], None, "loads"),
    "an index fairseq did not write": (_bad_header, [], "is not an index fairseq writes", "fails"),
    "no target side": (_remove([".idx", ".bin"], slice(1, 2)), [], "without its target side", "silent"),
    "raw text beside the binarized side": (_stray, [], "are two forms of one side", "silent"),
    "raw text beside, --dataset-impl mmap": (_stray, ["--dataset-impl", "mmap"], None, "loads"),
}


def _lm_folder(data_bin, folder):
    """A language-modelling folder (dict.txt, SPLIT.idx/.bin) from the translation folder's source sides."""
    folder.mkdir()
    shutil.copy(os.path.join(str(data_bin), "dict.src.txt"), folder / "dict.txt")
    for split in ("train", "valid", "test"):
        for ext in ("idx", "bin"):
            shutil.copy(os.path.join(str(data_bin), "{}.src-tgt.src.{}".format(split, ext)),
                        folder / "{}.{}".format(split, ext))
    return folder


def _folder(data_bin, tmp_path, task):
    if task == "language_modeling":
        return _lm_folder(data_bin, tmp_path / "lm")
    folder = tmp_path / "bin"
    shutil.copytree(str(data_bin), str(folder))
    return folder


def _base(command, task, tmp_path):
    if command == "fairseq-train":
        arch = "transformer_lm" if task == "language_modeling" else "lstm"
        return ["--arch", arch, "--optimizer", "adam", "--max-tokens", "100", "--save-dir", str(tmp_path / "ck")]
    return ["--path", str(tmp_path / "x.pt"), "--max-tokens", "100"]


def parse(command, folder, task, argv, tmp_path, monkeypatch, as_command=True):
    """fairseq's parse of ``command`` in this process, with the plugin's parse-time checks of that command
    (``as_command``: sys.argv[0] names it; otherwise no command's, for the reference load)."""
    import fairseq_wean  # noqa: F401
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command if as_command else "reference"] + argv)
    return options.parse_args_and_arch(getattr(options, PARSERS[command])(), [
        str(folder), "--user-dir", USER_DIR, "--task", task, *_base(command, task, tmp_path), *argv])


def refusal(command, folder, task, argv, tmp_path, monkeypatch, capsys):
    """The one line a parse refuses with (exit 2, no traceback), or None where it parses."""
    try:
        parse(command, folder, task, argv, tmp_path, monkeypatch)
    except SystemExit as info:
        err = capsys.readouterr().err
        assert info.code == 2 and "Traceback" not in err, err
        lines = err.strip().splitlines()
        assert lines[-1].startswith(command + ": error: "), err
        return lines[-1]
    return None


def fairseq_load(command, folder, task, split, argv, tmp_path, monkeypatch):
    """What fairseq's own loader does with the subset, as ``command`` loads it: "fails", "silent" (loads without
    a target side, or the raw text beside a binarized side) or "loads"."""
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = parse(command, folder, task, argv, tmp_path, monkeypatch, as_command=False)
    try:
        loaded = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
        loaded.load_dataset(split, combine=command == "fairseq-train" and split == "train")
        dataset = loaded.datasets[split]
    except (FileNotFoundError, AssertionError, ValueError, IndexError, OSError):
        return "fails"
    parts, seen = [dataset], []
    while parts:
        part = parts.pop()
        seen.append(type(part).__name__)
        parts += [getattr(part, name) for name in ("dataset", "src", "tgt") if getattr(part, name, None) is not None]
    if task != "language_modeling" and getattr(dataset, "tgt", None) is None or "IndexedRawTextDataset" in seen:
        return "silent"
    if command in READS_BEFORE_PREFETCH:
        try:  # an item read before any prefetch: what fairseq-train's first_batch does
            dataset[0]
        except KeyError:
            return "fails"
    return "loads"


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("command, task, split, option", CASES)
def test_every_form_of_a_subset_is_decided_as_fairseq_loads_it(data_bin, raw_dir, tmp_path, monkeypatch, capsys,
                                                               command, task, split, option, form):
    plant, extra, says, fairseq_does = FORMS[form]
    if form in CACHED_READ and command in READS_BEFORE_PREFETCH:
        says, fairseq_does = "is a cached index, read with", "fails"
    lm = task == "language_modeling"
    if lm and form == "no target side":
        pytest.skip("a language-modelling subset has one side")
    folder = _folder(data_bin, tmp_path, task)
    for planted in (["train", "valid", "test"] if extra else [split]):  # an option is about every subset
        if plant is not None:
            plant(folder, planted, lm, raw_dir)
    before = sorted(os.listdir(str(folder)))
    argv = [option, split] + extra
    line = refusal(command, folder, task, argv, tmp_path, monkeypatch, capsys)
    if says is None:
        assert line is None, line
    else:
        assert line is not None and says in line and "refused before any work" in line, line
        assert "give --dataset-impl lazy" in line if "cached index" in form else True, line
        # fairseq-train's training subset is checked first
        named = "train" if extra and command == "fairseq-train" else split
        assert "'{}'".format(named) in line or " {}.".format(named) in line, line
    assert sorted(os.listdir(str(folder))) == before and not (tmp_path / "ck").exists()  # nothing written
    assert fairseq_load(command, folder, task, split, argv, tmp_path, monkeypatch) == fairseq_does


def _copy_split(folder, split, to, lm, exts=("idx", "bin")):
    for prefix in _sides(folder, split, lm):
        for ext in exts:
            target = os.path.join(os.path.dirname(prefix), to + os.path.basename(prefix)[len(split):])
            shutil.copy(prefix + "." + ext, target + "." + ext)


# fairseq-train's shards and validation shards: (task, plant, extra options, the refusal (None: kept),
# what fairseq does: "fails" (its ValueError after the model was built), "silent" (a shard left out), "loads")
SHARDS = {
    "unused valid1": (lambda f, lm: _copy_split(f, "valid", "valid1", lm), [], "leaves unused", "fails"),
    "unused valid1, --ignore-unused-valid-subsets": (lambda f, lm: _copy_split(f, "valid", "valid1", lm),
                                                    ["--ignore-unused-valid-subsets"], None, "loads"),
    "valid1 named": (lambda f, lm: _copy_split(f, "valid", "valid1", lm), ["--valid-subset", "valid,valid1"],
                     "leaves unused", "fails"),  # translation: fairseq compares valid1.src-tgt.src with valid1
    "train1 with only its .bin": (lambda f, lm: _copy_split(f, "valid", "train1", lm, ("bin",)), [],
                                  "holds subset 'train1' only as", "silent"),
    "train2 without train1": (lambda f, lm: _copy_split(f, "valid", "train2", lm), [],
                              "after the missing shard train1", "silent"),
    "train1 complete": (lambda f, lm: _copy_split(f, "valid", "train1", lm), ["--upsample-primary", "1"], None,
                        "loads"),
}


@pytest.mark.parametrize("form", sorted(SHARDS))
@pytest.mark.parametrize("task", ["translation", "language_modeling"])
def test_training_shards_and_validation_shards_are_decided_as_fairseq_train_does(
        data_bin, tmp_path, monkeypatch, capsys, task, form):
    from fairseq.data import data_utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    plant, extra, says, fairseq_does = SHARDS[form]
    lm = task == "language_modeling"
    if lm and form == "valid1 named":
        extra, says, fairseq_does = extra, None, "loads"  # valid1.idx less its extension is valid1: fairseq agrees
    if lm and form == "train1 complete":
        extra = []
    folder = _folder(data_bin, tmp_path, task)
    plant(folder, lm)
    line = refusal("fairseq-train", folder, task, extra, tmp_path, monkeypatch, capsys)
    if says is None:
        assert line is None, line
    else:
        assert line is not None and says in line, line
    assert not (tmp_path / "ck").exists()
    # fairseq's own: its check of unused validation shards, then the training subset with its shards
    args = parse("fairseq-train", folder, task, extra, tmp_path, monkeypatch, as_command=False)
    cfg = convert_namespace_to_omegaconf(args)
    try:
        data_utils.raise_if_valid_subsets_unintentionally_ignored(cfg)
    except ValueError:
        assert fairseq_does == "fails"
        return
    from fairseq import tasks

    loaded = tasks.setup_task(cfg.task)
    loaded.load_dataset("train", combine=True)
    n_train = 400  # conftest.raw_dir's training pairs; a second shard is the valid split's 21
    if not lm:  # a shard with files that fairseq leaves out ("silent"), or the complete one it adds
        assert len(loaded.datasets["train"]) - n_train == (21 if form == "train1 complete" else 0)
    assert fairseq_does in ("silent", "loads")


@pytest.mark.parametrize("command, argv, says", [
    ("fairseq-validate", ["--combine-valid-subsets"], "--combine-valid-subsets does nothing here"),
    ("fairseq-generate", ["--combine-valid-subsets"], "--combine-valid-subsets does nothing here"),
    ("fairseq-eval-lm", ["--ignore-unused-valid-subsets"], "--ignore-unused-valid-subsets does nothing here"),
    ("fairseq-validate", ["--ignore-unused-valid-subsets"], "--ignore-unused-valid-subsets does nothing here"),
    ("fairseq-train", ["--combine-valid-subsets", "--valid-subset", "test"],
     "--valid-subset test does nothing with --combine-valid-subsets"),
    ("fairseq-train", ["--combine-valid-subsets", "--upsample-primary", "1"], None),
])
def test_options_of_the_splits_that_only_fairseq_train_reads(data_bin, tmp_path, monkeypatch, capsys, command, argv,
                                                              says):
    task = "language_modeling" if command == "fairseq-eval-lm" else "translation"
    folder = _folder(data_bin, tmp_path, task)
    line = refusal(command, folder, task, argv, tmp_path, monkeypatch, capsys)
    assert (line is None) if says is None else (line is not None and says in line), line


def test_split_reader_is_decided_by_the_tasks_class():
    from fairseq_wean.data.folder_files import split_reader

    assert {t: split_reader(t) for t in ("translation", "translation_lev", "translation_from_pretrained_bart",
                                         "translation_with_metrics", "language_modeling", "online_backtranslation",
                                         "sentence_prediction", "nosuch", None)} == {
        "translation": "pair", "translation_lev": "pair", "translation_from_pretrained_bart": "pair",
        "translation_with_metrics": "pair", "language_modeling": "lm", "online_backtranslation": None,
        "sentence_prediction": None, "nosuch": None, None: None}


def test_source_only_folders_are_generated_from(data_bin, tmp_path, monkeypatch, capsys):
    """fairseq's back-translation layout: every subset of the folder has its source side only; fairseq-generate
    decodes it (no references to miss). Where another subset has both sides, a one-sided one is refused."""
    folder = _folder(data_bin, tmp_path, "translation")
    for name in os.listdir(str(folder)):
        if ".src-tgt.tgt." in name:
            os.remove(str(folder / name))
    assert refusal("fairseq-generate", folder, "translation", ["--gen-subset", "test"], tmp_path, monkeypatch,
                   capsys) is None
    assert "without its target side" in refusal("fairseq-validate", folder, "translation", ["--valid-subset", "test"],
                                                 tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("command, argv, says", [
    ("fairseq-generate", ["--gen-subset", "test", "--beam", "2"], "which fairseq does not load"),
    ("fairseq-train", ["--arch", "lstm", "--optimizer", "adam", "--max-tokens", "100"], "leaves unused"),
])
def test_the_check_is_wired_into_the_real_commands(data_bin, tmp_path, command, argv, says):
    folder = _folder(data_bin, tmp_path, "translation")
    if command == "fairseq-generate":
        for lang in ("src", "tgt"):
            os.remove(str(folder / "test.src-tgt.{}.idx".format(lang)))
        argv = argv + ["--path", str(tmp_path / "x.pt")]
    else:
        _copy_split(folder, "valid", "valid1", False)
        argv = argv + ["--save-dir", str(tmp_path / "ck")]
    out = cli(command, str(folder), "--user-dir", USER_DIR, *argv, check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert lines[-1].startswith(command + ": error: ") and says in lines[-1], lines[-1]
    assert not (tmp_path / "ck").exists()



# a subset the loader does not find while the folder holds it under other names: (folder kind, task, options, what
# the line names). The line never says the folder "holds no subset 'test'" while listing test among what it holds
OTHER_NAMES = {
    "another language pair": ("translation", "translation", ["--source-lang", "xx", "--target-lang", "yy"],
                              "not for the language pair xx-yy that --source-lang xx --target-lang yy looks for"),
    "the reverse pair's languages": ("translation", "translation", ["--source-lang", "src", "--target-lang", "de"],
                                     "not for the language pair src-de"),
    "a translation folder to a language modeling task": ("translation", "language_modeling", [],
                                                         "(a translation folder?), and --task language_modeling"),
    "a language modeling folder to a translation task": ("language_modeling", "translation",
                                                         ["--source-lang", "src", "--target-lang", "tgt"],
                                                         "a language modeling folder, give its task"),
}


@pytest.mark.parametrize("case", sorted(OTHER_NAMES))
@pytest.mark.parametrize("command, split, option", [("fairseq-generate", "test", "--gen-subset"),
                                                    ("fairseq-validate", "valid", "--valid-subset"),
                                                    ("fairseq-train", "train", "--train-subset"),
                                                    ("fairseq-eval-lm", "test", "--gen-subset")])
def test_a_subset_held_under_other_names_is_named_with_what_is_missing(data_bin, tmp_path, monkeypatch, capsys,
                                                                       command, split, option, case):
    kind, task, extra, says = OTHER_NAMES[case]
    if command == "fairseq-eval-lm" and task != "language_modeling":
        pytest.skip("fairseq-eval-lm with a translation task: refused by its task (test_checkpoint_kind)")
    folder = _folder(data_bin, tmp_path, kind)
    before = sorted(os.listdir(str(folder)))
    line = refusal(command, folder, task, [option, split] + extra, tmp_path, monkeypatch, capsys)
    assert line is not None and says in line and "'{}'".format(split) in line, line
    assert "holds no subset" not in line and "refused before any work" in line, line
    assert sorted(os.listdir(str(folder))) == before and not (tmp_path / "ck").exists()
