"""Every file fairseq reads by name from a data folder (the dictionaries, each binarized split's .idx and
.bin, an alignment file, the raw text fairseq prefers to a .bin beside it) that is a symbolic link out of
the folder, a hard link, a link to nothing, a named pipe or a folder is refused in one line, before any work, by every
entry point that reads the folder: fairseq-train, -generate, -validate, -interactive and the hub
(``fairseq_wean.data.folder_files``: one rule, ``folder_file_problem``, one check, ``check_data_folder``).
A link to a file of the folder itself is read as that file."""
import os
import shutil

import pytest

from conftest import USER_DIR, cli
from test_crafted_checkpoints import run_driver, train_argv

SIDES = [("dictionary", "dict.{}.txt".format(lang)) for lang in ("src", "tgt")] + [
    ("binarized data file", "{}.src-tgt.{}.{}".format(split, lang, ext))
    for split in ("train", "valid", "test") for lang in ("src", "tgt") for ext in ("idx", "bin")] + [
    ("binarized data file", "train.align.src-tgt.idx"),  # --load-alignments
    ("raw data file", "test.src-tgt.src"),  # beside its .bin: fairseq's infer_dataset_impl reads it instead
]
PLANTED = {  # kind -> (plant(path, outside), what the refusal says)
    "a link out of the folder": (lambda path, outside: os.symlink(outside, path),
                                 "is a symbolic link to a file outside its folder"),
    "a link to nothing": (lambda path, outside: os.symlink("gone", path),  # in the folder: fairseq saw no file
                          "is a symbolic link to nothing"),
    "a named pipe": (lambda path, outside: os.mkfifo(path), "is a named pipe, socket or device, not a regular file"),
    "a folder": (lambda path, outside: os.mkdir(path), "is a directory, not a regular file"),
    # the file itself, under a second name outside the folder (a tar archive or a copy can carry one)
    "a hard link": (lambda path, outside: os.link(outside, path), "has 2 hard links (a file with other names, "
                                                                  "which may lie outside the folder"),
}
ENTRY_POINTS = ("fairseq-train", "fairseq-generate", "fairseq-validate", "fairseq-interactive", "hub")


@pytest.fixture
def checkpoint(tmp_path):
    """What --path names: never opened, since every refusal comes first (a run that got past the check would
    fail on it, or train without it, and the test with it)."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "checkpoint_last.pt").write_bytes(b"never read: the refusal comes first")
    return folder / "checkpoint_last.pt"


def entry_job(entry, data, checkpoint, save_dir):
    common = [str(data), "--path", str(checkpoint), "--user-dir", USER_DIR, "--cpu"]
    argv = {
        "fairseq-train": train_argv(data, save_dir),
        "fairseq-generate": ["generate"] + common + ["--beam", "2"],
        "fairseq-validate": ["validate"] + common + ["--task", "translation", "--max-tokens", "2000"],
        "fairseq-interactive": ["interactive"] + common + ["--source-lang", "src", "--target-lang", "tgt"],
        "hub": ["hub"],
    }[entry]
    return {"argv": argv, "folder": str(checkpoint.parent), "crafted": str(checkpoint), "data": str(data)}


def plant(data_bin, folder, name, kind, outside):
    shutil.copytree(data_bin, folder)
    original = folder / name
    if original.exists():
        shutil.move(original, outside)  # the link out reaches the very file fairseq would have read
    else:
        shutil.copy(data_bin / "train.src-tgt.src.idx", outside)
    PLANTED[kind][0](original, outside)
    return original


def test_every_data_folder_file_that_is_not_a_file_of_the_folder_is_one_line_in_every_entry_point(
        data_bin, checkpoint, tmp_path):
    jobs, expected = [], []
    for i, (what, name) in enumerate(SIDES):
        for j, kind in enumerate(PLANTED):
            folder = tmp_path / "data-{}-{}".format(i, j)
            planted = plant(data_bin, folder, name, kind, tmp_path / "outside-{}-{}".format(i, j))
            for entry in ENTRY_POINTS:
                job = entry_job(entry, folder, checkpoint, tmp_path / "save-{}-{}-{}".format(i, j, entry))
                job["name"] = "{} / {} {}".format(entry, name, kind)
                jobs.append(job)
                expected.append("FairseqWeanError: {} {} {}".format(what, planted, PLANTED[kind][1]))
    # the control: links to files of the folder itself (dict.tgt.txt -> dict.tgt.txt.real, a split's files)
    # are read as those files: a model is trained there, then decoded and loaded by the hub
    inside = tmp_path / "data-linked-inside"
    shutil.copytree(data_bin, inside)
    for name in ("dict.tgt.txt", "train.src-tgt.src.bin", "test.src-tgt.tgt.idx", "valid.src-tgt.src.idx"):
        os.rename(inside / name, inside / (name + ".real"))
        os.symlink(name + ".real", inside / name)
    trained = tmp_path / "save-inside" / "checkpoint_last.pt"
    control = [dict(entry_job(entry, inside, trained, trained.parent), name="control: " + entry)
               for entry in ("fairseq-train", "fairseq-generate", "fairseq-validate", "hub")]  # interactive: stdin
    control[0]["argv"] += ["--encoder-hidden-size", "8", "--decoder-hidden-size", "8", "--embed-dim", "8"]
    results = run_driver(jobs + control, tmp_path, tmp_path / "no-marker", timeout=900)
    wrong = ["{}: {}".format(job["name"], result["outcome"][:300])
             for job, result, start in zip(jobs, results, expected)
             if not (result["outcome"].startswith(start) and "refused (nothing was read)" in result["outcome"]
                     and "\n" not in result["outcome"])]
    wrong += ["{}: {}".format(job["name"], result["outcome"][:300]) for job, result in zip(control, results[len(jobs):])
              if result["outcome"] != "ran to the end"]
    assert not wrong, "{} of {} wrong:\n{}".format(len(wrong), len(jobs + control), "\n".join(wrong))
    assert not [os.path.join(d, n) for d, _s, names in os.walk(tmp_path) for n in names
                if "save-" in d and "save-inside" not in d], "fairseq-train wrote in --save-dir"


def test_the_console_scripts_print_the_refusal_as_one_line(data_bin, checkpoint, tmp_path):
    """The real commands (not the in-process driver): exit status 1, one line, no traceback."""
    folder = tmp_path / "data"
    planted = plant(data_bin, folder, "train.src-tgt.tgt.bin", "a named pipe", tmp_path / "outside")
    for entry in ("fairseq-train", "fairseq-generate"):
        argv = entry_job(entry, folder, checkpoint, tmp_path / "save")["argv"]
        proc = cli(entry, *argv[1:], check=False, timeout=120)
        lines = [line for line in proc.stderr.splitlines() if "error" in line.lower() or "Traceback" in line]
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert lines == ["fairseq-wean: error: binarized data file {} is a named pipe, socket or device, not a "
                         "regular file: refused (nothing was read); put the file itself in the folder, or a link to "
                         "a file of the folder".format(planted)], proc.stderr[-3000:]
    assert not (tmp_path / "save").exists() or not os.listdir(tmp_path / "save")


def test_what_the_check_enumerates_is_every_name_fairseq_composes(tmp_path):
    """data_folder_files: dictionaries, binarized files of any split/shard/task, their raw text beside them
    and, with --dataset-impl raw, every SPLIT.SRC-TGT.LANG; nothing else of the folder."""
    from fairseq_wean.data.folder_files import data_folder_files

    names = ["dict.txt", "dict.de.txt", "train1.de-en.en.bin", "train1.de-en.en", "valid.align.de-en.idx",
             "test.bin", "test.de-en.de", "preprocess.log", "README", "notes-v1.txt"]
    for name in names:
        (tmp_path / name).write_text("")
    found = lambda raw: sorted(os.path.basename(p) for p, _ in data_folder_files(str(tmp_path), raw))  # noqa: E731
    assert found(False) == sorted(["dict.txt", "dict.de.txt", "train1.de-en.en.bin", "train1.de-en.en",
                                   "valid.align.de-en.idx", "test.bin"])
    assert found(True) == sorted(found(False) + ["test.de-en.de"])


def _subset_args(data, task="translation", **subsets):
    import argparse

    values = dict(data=str(data), task=task, train_subset="train", valid_subset="valid", gen_subset="test",
                  disable_validation=False)
    values.update(subsets)
    return argparse.Namespace(**values)


@pytest.mark.parametrize("command, dest", [(c, d) for c, pairs in __import__(
    "fairseq_wean.data.folder_files", fromlist=["SUBSET_OPTIONS"]).SUBSET_OPTIONS.items() for d, _ in pairs])
@pytest.mark.parametrize("task", ["translation", "translation_with_metrics", "language_modeling"])
def test_every_subset_option_of_every_command_names_a_subset_of_the_folder(tmp_path, command, dest, task):
    """A subset the data folder does not hold (fairseq: a ``Dataset not found`` traceback after the model was
    built) and --valid-subset naming one subset twice are one line before any work, for every subset option
    of every command that loads one (``SUBSET_OPTIONS``) and every task that reads SPLIT.* files."""
    from fairseq_wean.data.folder_files import folder_subsets, subset_problem

    # each subset complete as fairseq's loaders need it (both sides, .idx with fairseq's mmap header and .bin;
    # tests/test_split_files.py: every incomplete form)
    sides = ["{}.idx", "{}.bin"] if task == "language_modeling" else [
        "{}.src-tgt." + lang + ext for lang in ("src", "tgt") for ext in (".idx", ".bin")]
    for name in ["dict.src.txt", "dict.tgt.txt"] + [side.format(split) for split in ("train", "valid", "test", "train1")
                                                    for side in sides]:
        (tmp_path / name).write_bytes(b"MMIDIDX\x00\x00" if name.endswith(".idx") else b"x")
    assert folder_subsets(str(tmp_path)) == ["test", "train", "train1", "valid"]
    assert subset_problem(_subset_args(tmp_path, task), command) is None
    problem = subset_problem(_subset_args(tmp_path, task, **{dest: "nosuch"}), command)
    assert problem == ("--{} nosuch: the data folder {} holds no subset 'nosuch' (it holds: test, train, train1, "
                       "valid): refused before any work".format(dest.replace("_", "-"), tmp_path))
    if dest == "valid_subset":
        twice = subset_problem(_subset_args(tmp_path, task, valid_subset="valid,test,valid"), command)
        assert twice == "--valid-subset valid,test,valid names 'valid' twice: give each subset once"
        off = _subset_args(tmp_path, task, valid_subset="nosuch")
        off.disable_validation = True
        assert (subset_problem(off, command) is None) == (command == "train")
    # a task that names its files its own way, and a command that loads no subset: not looked at
    assert subset_problem(_subset_args(tmp_path, "sentence_prediction", **{dest: "nosuch"}), command) is None
    assert subset_problem(_subset_args(tmp_path, task, **{dest: "nosuch"}), "interactive") is None


def test_the_subset_table_covers_every_fairseq_command_with_a_subset_option():
    """A fairseq command whose parser has --train-subset/--valid-subset/--gen-subset and that reads it
    is in SUBSET_OPTIONS with each of them (fairseq-interactive's --gen-subset reads nothing: its own no-op)."""
    from fairseq import options

    from fairseq_wean.data.folder_files import SUBSET_OPTIONS

    parsers = {"train": options.get_training_parser, "validate": options.get_validation_parser,
               "generate": options.get_generation_parser, "eval_lm": options.get_eval_lm_parser}
    reads = {"train": {"train_subset", "valid_subset"}, "validate": {"valid_subset"}, "generate": {"gen_subset"},
             "eval_lm": {"gen_subset"}}
    for command, make in parsers.items():
        dests = {a.dest for a in make()._actions} & {"train_subset", "valid_subset", "gen_subset"}
        assert reads[command] <= dests
        assert {d for d, _ in SUBSET_OPTIONS[command]} == reads[command]
