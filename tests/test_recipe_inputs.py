"""What the preprocess.prepare_* recipes read and take: every raw data file through one reader, every option once
and in effect.

* Every raw file a recipe reads from its data folder (--data-dir, --sumdata, --raw) is read before any work by
  ``preprocess.common.RawData`` (``read_complete_lines``, on ``fairseq_wean.textio``): a link out of the folder,
  a hard link, a named pipe, a folder, a missing file, non-UTF-8 text, a file cut inside a line and parallel
  files of different line counts are each refused in one line, exit 1, with nothing written. The plants are
  enumerated over every file of every recipe's tiny synthetic data folder, and a traced run of each recipe shows
  that it reads every one of those files, and nothing under its data folder any other way.
* A rerun over a finished --out with other options is refused in one line naming them (every option of every
  recipe is enumerated); every option given twice is argparse's usage error (``fairseq_wean.cli.options.once``).
* Options that do nothing: --data-dir with --sumdata/--raw, LCSTS's training options without PART I, a
  --valid-size that holds out every tune source, an explicit --valid-size under --tiny.
"""
import argparse
import builtins
import importlib
import json
import os
import shutil
import sys

import pytest

from conftest import REPO
from test_recipe_variant_options import parser_actions

if REPO not in sys.path:
    sys.path.insert(0, REPO)

from preprocess import common  # noqa: E402

RECIPES = ["prepare_gigaword", "prepare_iwslt14", "prepare_lcsts", "prepare_multi30k", "prepare_simplification"]


def _pairs(n, a="ein mann {} sieht ein rotes haus", b="a man {} sees a red house"):
    return [a.format(i) for i in range(n)], [b.format(i) for i in range(n)]


def _write(root, rel, lines):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _lcsts_part(n, labelled=True):
    docs = []
    for i in range(n):
        docs += ["<doc id={}>".format(i)] + (["    <human_label>{}</human_label>".format(3 + i % 3)] if labelled else [])
        docs += ["    <summary>", "        摘要{}好".format(i), "    </summary>", "    <short_text>",
                 "        这是第{}篇很长的新闻正文，讲了很多事情".format(i), "    </short_text>", "</doc>"]
    return docs


def build_data(mode, root):
    """A tiny data folder in the layout the recipe of ``mode`` reads; returns (folder, extra argv)."""
    de, en = _pairs(12)
    if mode == "multi30k":
        for stem in ("train", "val", "test_2016_flickr"):
            _write(root, "translation/multi30k_deen/tok/{}.lc.norm.tok.de".format(stem), de)
            _write(root, "translation/multi30k_deen/tok/{}.lc.norm.tok.en".format(stem), en)
        return root, ["--data-dir", root, "--variants", "word", "--seed", "3", "--max-sentences", "1000"]
    if mode == "simplification":
        src = ["the old cat number {} sat on the wide mat".format(i) for i in range(8)]
        simp = ["the cat {} sat".format(i) for i in range(8)]
        for split in ("tune", "test"):
            _write(root, "simplification/turkcorpus/{}.8turkers.tok.norm".format(split),
                   [s + (" in " + split if split == "test" else "") for s in src])
            for k in range(8):
                _write(root, "simplification/turkcorpus/{}.8turkers.tok.turk.{}".format(split, k), simp)
        _write(root, "simplification/asset/asset.valid.orig", src)
        for k in range(10):
            _write(root, "simplification/asset/asset.valid.simp.{}".format(k), simp)
        for stem, hi, lo in (("adv-ele", "adv", "ele"), ("adv-int", "adv", "int"), ("int-ele", "int", "ele")):
            _write(root, "simplification/onestopenglish/{}.{}".format(stem, hi), ["a long {} text".format(stem)] * 3)
            _write(root, "simplification/onestopenglish/{}.{}".format(stem, lo), ["a text"] * 3)
        for ext in ("src", "dst"):
            _write(root, "simplification/wikismall_pwkp/PWKP_108016.tag.80.aner.ori.test." + ext, ["Some Text"] * 4)
            _write(root, "simplification/wikilarge/wiki.full.aner.ori.train." + ext, ["Large Text"] * 4)
        return root, ["--data-dir", root, "--variants", "word", "--valid-size", "2", "--add-wikilarge"]
    if mode == "gigaword":
        g = "summarization/gigaword/"
        for stem in ("train", "valid"):
            suffix = ".filter" if stem == "valid" else ""
            _write(root, g + "sample_dongjunlee/{}.article{}.txt".format(stem, suffix), en)
            _write(root, g + "sample_dongjunlee/{}.title{}.txt".format(stem, suffix), [l[:9] for l in en])
        _write(root, g + "test.src", en)
        _write(root, g + "test.tgt", [l[:9] for l in en])
        return root, ["--data-dir", root, "--variants", "word"]
    if mode == "sumdata":
        for stem in ("train", "valid"):
            suffix = ".filter" if stem == "valid" else ""
            _write(root, "train/{}.article{}.txt".format(stem, suffix), en)
            _write(root, "train/{}.title{}.txt".format(stem, suffix), [l[:9] for l in en])
        _write(root, "Giga/input.txt", en)
        _write(root, "Giga/task1_ref0.txt", [l[:9] for l in en])
        return root, ["--sumdata", root, "--variants", "word"]
    if mode in ("lcsts", "lcsts-test"):
        _write(root, "summarization/lcsts/PART_III.txt", _lcsts_part(6))
        if mode == "lcsts":
            _write(root, "summarization/lcsts/PART_I.txt", _lcsts_part(10, labelled=False))
            _write(root, "summarization/lcsts/PART_II.txt", _lcsts_part(6))
        return root, ["--data-dir", root]
    if mode == "iwslt-staged":
        d = "translation/iwslt14_deen/"
        for name in ("valid", "test"):
            for sub in ("tok", "bpe10k"):
                _write(root, d + "{}/{}.de".format(sub, name), de)
                _write(root, d + "{}/{}.en".format(sub, name), en)
        _write(root, d + "bpe10k/code", ["#version: 0.2", "e i", "ei n</w>", "h a"])
        return root, ["--data-dir", root, "--variants", "bpe"]
    assert mode == "iwslt-raw"
    de, en = _pairs(50)
    _write(root, "train.tags.de-en.de", ["<url>http://x</url>"] + de)
    _write(root, "train.tags.de-en.en", ["<url>http://x</url>"] + en)
    from preprocess.prepare_iwslt14 import TEST_SETS

    for name in TEST_SETS:
        for lang, lines in (("de", de[:3]), ("en", en[:3])):
            _write(root, "{}.de-en.{}.xml".format(name, lang), ['<seg id="{}"> {} </seg>'.format(i, l)
                                                              for i, l in enumerate(lines)])
    return root, ["--raw", root, "--variants", "bpe", "--bpe-merges", "20"]


MODES = {"multi30k": "prepare_multi30k", "simplification": "prepare_simplification", "gigaword": "prepare_gigaword",
         "sumdata": "prepare_gigaword", "lcsts": "prepare_lcsts", "lcsts-test": "prepare_lcsts",
         "iwslt-staged": "prepare_iwslt14", "iwslt-raw": "prepare_iwslt14"}


def data_files_of(mode, root):
    """The files of the tiny data folder of ``mode`` (all of them are read: test_every_raw_file_...)."""
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def run(module, argv, capsys):
    """main_wrapper(main(argv)) in process: (exit status, stdout, stderr)."""
    tool = importlib.import_module("preprocess." + module)
    try:
        common.main_wrapper(lambda: tool.main([str(a) for a in argv]))
        code = 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    base = tmp_path_factory.mktemp("templates")
    made = {}
    for mode in MODES:
        root = str(base / mode)
        os.makedirs(root)
        made[mode] = (root, build_data(mode, root)[1], data_files_of(mode, root))
    return made


def copy_mode(templates, mode, tmp_path):
    root, argv, files = templates[mode]
    data = str(tmp_path / "data")
    shutil.copytree(root, data)
    return data, [data if a == root else a for a in argv], files


# ------------------------------------------------------------------------------------------------
# every recipe reads every one of its raw files through the one reader, and nothing else there

@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_raw_file_is_read_through_the_one_reader(mode, templates, tmp_path, capsys, monkeypatch):
    data, argv, files = copy_mode(templates, mode, tmp_path)
    real = os.path.realpath(data)
    through, other = set(), []
    reader, os_open, b_open = common.read_complete_lines, os.open, builtins.open
    inside = []

    def traced_reader(path, folder=None, what="data file"):
        inside.append(path)
        try:
            return reader(path, folder, what)
        finally:
            inside.pop()

    def under(path):
        try:
            p = os.path.realpath(os.fspath(path))
        except TypeError:
            return None
        return os.path.relpath(p, real) if p.startswith(real + os.sep) else None

    def traced_os_open(path, *a, **k):
        rel = under(path)
        if rel is not None:
            (through.add(rel) if inside else other.append(rel))
        return os_open(path, *a, **k)

    def traced_open(path, *a, **k):
        rel = under(path) if isinstance(path, (str, bytes, os.PathLike)) else None
        if rel is not None:
            other.append(rel)
        return b_open(path, *a, **k)

    monkeypatch.setattr(common, "read_complete_lines", traced_reader)
    monkeypatch.setattr(os, "open", traced_os_open)
    monkeypatch.setattr(builtins, "open", traced_open)
    code, stdout, stderr = run(MODES[mode], argv + ["--out", tmp_path / "out"], capsys)
    monkeypatch.undo()
    assert code == 0, stderr[-3000:]
    assert other == [], "read under the data folder without the reader: {}".format(other)
    assert sorted(through) == files  # every file of the folder is read (so the plants below reach every one)
    recipe = json.loads((tmp_path / "out" / "recipe.json").read_text(encoding="utf-8"))
    assert recipe["options"] == common.recorded_options(importlib.import_module(
        "preprocess." + MODES[mode]).parse_args([str(a) for a in argv] + ["--out", str(tmp_path / "out")]))
    if mode == "multi30k":  # --seed with fewer pairs than --max-sentences: said in one line (A79)
        assert "--seed 3 chose nothing: all 12 training pairs are used, no sample is drawn (--max-sentences 1000)" \
            in stdout
    if mode == "sumdata":  # the folder read is the one recorded
        assert recipe["data_dir"] == os.path.abspath(data) and recipe["options"]["data_dir"] is None


def _plant(kind, path, tmp_path):
    """Plant ``kind`` at the data file ``path``; returns the message expected (after 'prepare: error: ')."""
    with open(path, "rb") as f:
        content = f.read()
    secret = tmp_path / "secret.txt"
    secret.write_bytes(content)  # same lines, outside the folder: only the link gives it away
    if kind in ("link-out", "fifo", "folder", "hard-link", "missing"):
        os.unlink(path)
    if kind == "link-out":
        os.symlink(str(secret), path)
        return "{} is a symbolic link".format(path)
    if kind == "hard-link":
        os.link(str(secret), path)
        return "{} has 2 hard links".format(path)
    if kind == "fifo":
        os.mkfifo(path)
        return "{} is not a regular file".format(path)
    if kind == "folder":
        os.mkdir(path)
        return "{} is a folder, not a regular file".format(path)
    if kind == "missing":
        return "missing {}".format(path)
    if kind == "non-utf8":
        lines = content.split(b"\n")
        lines[1] += b" \xe4"  # a Latin-1 byte in line 2
        content = b"\n".join(lines)
        expected = "{} line 2 is not UTF-8 text".format(path)
    elif kind == "cut":
        content = content[:-3]  # inside its last line (inside a character, for the Chinese of LCSTS)
        expected = "{} ends inside a line".format(path)
    elif kind == "short":
        content = content[:content.rstrip(b"\n").rindex(b"\n") + 1]  # its last line lost
        expected = "parallel files differ in line count"
    with open(path, "wb") as f:
        f.write(content)
    return expected


PLANTS = ["link-out", "hard-link", "fifo", "folder", "missing", "non-utf8", "cut", "short"]


def _cases():
    import tempfile

    cases = []
    with tempfile.TemporaryDirectory() as base:
        for mode in sorted(MODES):
            root = os.path.join(base, mode)
            build_data(mode, root)
            for rel in data_files_of(mode, root):
                for plant in PLANTS:
                    cases.append(pytest.param(mode, rel, plant, id="{}:{}:{}".format(mode, rel, plant)))
    return cases


@pytest.mark.parametrize("mode, rel, plant", _cases())
def test_a_bad_raw_file_is_refused_in_one_line_before_any_work(mode, rel, plant, templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, mode, tmp_path)
    path = os.path.join(data, rel)
    expected = _plant(plant, path, tmp_path)
    if plant == "short" and mode == "iwslt-raw":  # counted after filtering (train) and per <seg> (xml)
        expected = "English"
    if plant == "short" and (mode.startswith("lcsts") or rel.endswith("bpe10k/code")):
        pytest.skip("not a file of parallel lines (LCSTS records: test_an_lcsts_record_cut_or_incomplete_...)")
    if plant == "missing" and rel.endswith("PART_I.txt"):
        pytest.skip("without PART I the recipe prepares the test set only (test_lcsts_seed_without_part_i_...)")
    out = tmp_path / "out"
    code, _, err = run(MODES[mode], argv + ["--out", out], capsys)
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prepare: error: ") and expected in lines[0], err
    if plant == "short" and mode != "iwslt-raw":
        assert path in lines[0]
    assert not out.exists()  # nothing made, nothing written


@pytest.mark.parametrize("rel, edit, expected", [
    ("PART_III.txt", lambda t: t[:t.rindex("</doc>")], "line 46: text outside a whole <doc> ... </doc> record"),
    ("PART_III.txt", lambda t: t.replace("<doc id=3>", "<dok id=3>"), "line 28: text outside a whole <doc>"),
    ("PART_III.txt", lambda t: t.replace("</doc>\n<doc id=2>", "\n<doc id=2>"), "line 19: text outside a whole"),
    ("PART_III.txt", lambda t: t.replace("    <human_label>5</human_label>\n", ""), "doc 2 has no <human_label>"),
    ("PART_II.txt", lambda t: t.replace("<human_label>4<", "<human_label>x<"), "doc 1 has <human_label> 'x'"),
    ("PART_I.txt", lambda t: t.replace("<short_text>", "<shorttext>", 1), "doc 0 lacks <summary> or <short_text>"),
])
def test_an_lcsts_record_cut_or_incomplete_is_refused(rel, edit, expected, templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, "lcsts", tmp_path)
    path = os.path.join(data, "summarization", "lcsts", rel)
    with open(path, encoding="utf-8") as f:
        text = edit(f.read())
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    code, _, err = run("prepare_lcsts", argv + ["--out", tmp_path / "out"], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and path in err and expected in err, err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# options: each once, each recorded, each in effect

# a value other than the base run's, for every option (a new option needs a row)
CHANGE = {"data_dir": "elsewhere", "max_sentences": "7", "max_eval": "5", "tiny": None, "seed": "5",
          "valid_decode": "3", "variants": "+char", "threshold": "3", "word_threshold": "3", "spm_vocab": "99",
          "bpe_merges": "77", "bpe_codes": "codes.txt", "sumdata": "sumdata", "max_valid": "9", "min_score": "4",
          "vocab": "77", "raw": "raw", "valid_size": "5", "add_wikilarge": None}
BASE_VARIANTS = {"prepare_gigaword": ("word,spm", "word,spm,char"), "prepare_iwslt14": ("bpe", "bpe,word"),
                 "prepare_lcsts": ("word", None), "prepare_multi30k": ("word,spm,bpe", "word,spm,bpe,char"),
                 "prepare_simplification": ("word,spm", "word,spm,char")}
OPTION_CASES = [(name, a.dest) for name in RECIPES
                for a in parser_actions(importlib.import_module("preprocess." + name))]


def _changed(name, dest, flag, base):
    value = CHANGE[dest]
    argv = list(base)
    if dest == "variants":
        return argv[:-1] + [BASE_VARIANTS[name][1]]
    if flag in argv:  # --data-dir: another value
        return argv[:argv.index(flag) + 1] + [value] + argv[argv.index(flag) + 2:]
    if dest in ("sumdata", "raw"):  # not with --data-dir (refused: it would not be read)
        argv = argv[2:]
    if dest == "variants":
        return argv[:-1] + [BASE_VARIANTS[name][1]]
    return argv + ([flag] if value is None else [flag, value])


def test_every_option_of_every_recipe_has_a_value_here():
    for name, dest in OPTION_CASES:
        assert dest in CHANGE or dest in common.NOT_RECORDED, (name, dest)


@pytest.mark.parametrize("name, dest", OPTION_CASES)
def test_a_rerun_with_other_options_is_refused_naming_them(name, dest, tmp_path, capsys):
    module = importlib.import_module("preprocess." + name)
    flag = [a for a in parser_actions(module) if a.dest == dest][0].option_strings[0]
    out = tmp_path / "out"
    base = ["--data-dir", str(tmp_path / "data"), "--out", str(out), "--variants", BASE_VARIANTS[name][0]]
    os.makedirs(out)
    common.write_recipe(str(out), {"variants": {}, "options": common.recorded_options(module.parse_args(base))})
    before = sorted(os.listdir(out)), (out / "recipe.json").read_bytes()
    capsys.readouterr()
    assert run(name, base, capsys)[0] == 0  # the same options: already prepared
    if dest in ("out", "force"):
        return
    if dest == "variants" and name == "prepare_lcsts":
        pytest.skip("one variant only")
    if dest in common.NOT_RECORDED:  # --workers: the same data
        code, stdout, err = run(name, base[:-2] + [flag, "2"] + base[-2:], capsys)
        assert code == 0 and "already prepared" in stdout, err
        return
    code, _, err = run(name, _changed(name, dest, flag, base[:-2]) + base[-2:] if dest != "variants"
                       else _changed(name, dest, flag, base), capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "prepared with other options (" in lines[0], err
    assert "--{}: ".format(dest.replace("_", "-")) in lines[0], err
    assert (sorted(os.listdir(out)), (out / "recipe.json").read_bytes()) == before


@pytest.mark.parametrize("name, dest", OPTION_CASES)
def test_every_option_given_twice_is_a_usage_error(name, dest, capsys):
    module = importlib.import_module("preprocess." + name)
    action = [a for a in parser_actions(module) if a.dest == dest][0]
    flag = action.option_strings[0]
    twice = [flag] * 2 if action.nargs == 0 else [flag, "1", flag, "1"]
    if dest == "variants":
        twice = [flag, "word", flag, "word"]
    with pytest.raises(SystemExit) as info:
        module.parse_args(twice)
    assert info.value.code == 2
    assert "argument {}: given more than once".format("/".join(action.option_strings)) in capsys.readouterr().err


@pytest.mark.parametrize("name, given, other", [("prepare_gigaword", "--sumdata", "--data-dir"),
                                                ("prepare_iwslt14", "--raw", "--data-dir")])
def test_data_dir_with_another_data_source_is_refused(name, given, other, capsys):
    module = importlib.import_module("preprocess." + name)
    with pytest.raises(SystemExit) as info:
        module.parse_args([given, "d", other, "e"])
    assert info.value.code == 2
    assert "error: --data-dir is not read with {}".format(given) in capsys.readouterr().err
    assert module.parse_args([given, "d"]).data_dir is None  # neither read nor recorded


def test_lcsts_options_each_have_their_condition():
    from preprocess import prepare_lcsts

    names = {a.option_strings[0] for a in parser_actions(prepare_lcsts)}
    assert names == set(prepare_lcsts.NEEDS_TRAIN) | set(prepare_lcsts.WITHOUT_TRAIN)


@pytest.mark.parametrize("option", ["--vocab", "--valid-decode", "--max-sentences", "--workers"])
def test_lcsts_training_options_without_part_i_are_refused(option, templates, tmp_path, capsys):
    from preprocess import prepare_lcsts

    assert option in prepare_lcsts.NEEDS_TRAIN
    data, argv, _ = copy_mode(templates, "lcsts-test", tmp_path)
    code, _, err = run("prepare_lcsts", argv + ["--out", tmp_path / "out", option, "3"], capsys)
    assert code == 1 and "prepare: error: {} act(s) on the training data (PART I)".format(option) in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_lcsts_seed_without_part_i_says_it_chose_nothing(templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, "lcsts-test", tmp_path)
    code, stdout, err = run("prepare_lcsts", argv + ["--out", tmp_path / "out", "--seed", "9"], capsys)
    assert code == 0, err
    assert "--seed 9 chose nothing: no training data (PART I)" in stdout


def test_note_sample_speaks_only_when_no_sample_is_drawn(capsys):
    def note(n, max_sentences, given=()):
        common.note_sample(argparse.Namespace(max_sentences=max_sentences, seed=4, given_options=set(given)), n)
        return capsys.readouterr().out

    assert note(10, 5, ["--seed"]) == ""  # a sample is drawn: the seed chose it
    assert note(10, None) == ""
    assert "--seed 4 chose nothing: all 10 training pairs are used" in note(10, 10, ["--seed"])
    assert "--seed 4 chose nothing: all 10 training pairs are used" in note(10, None, ["--seed"])
    assert "all 10 training pairs are used, no sample is drawn (--max-sentences 11)" in note(10, 11)


@pytest.mark.parametrize("argv, expected", [(["--tiny"], 12), (["--tiny", "--valid-size", "200"], 200),
                                            ([], 200), (["--valid-size", "7"], 7), (["--tiny", "--max-eval", "5"], 5)])
def test_simplification_valid_size_given_is_kept(argv, expected):
    from preprocess import prepare_simplification

    assert prepare_simplification.parse_args(argv).valid_size == expected


@pytest.mark.parametrize("size, refused", [(8, True), (100000, True), (7, False)])
def test_simplification_valid_size_must_leave_tune_sources_for_training(size, refused, templates, tmp_path, capsys):
    from preprocess import prepare_simplification

    if not refused:  # the boundary, without the work: 7 of the 8 tune sources held out leaves one
        prepare_simplification.check_valid_size(size, 8)
        return
    data, argv, _ = copy_mode(templates, "simplification", tmp_path)
    argv[argv.index("--valid-size") + 1] = str(size)
    code, _, err = run("prepare_simplification", argv + ["--out", tmp_path / "out"], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "--valid-size {} holds out every one of the 8 TurkCorpus tune sources".format(size) in err
    assert not (tmp_path / "out").exists()
