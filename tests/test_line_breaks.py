"""Every line break of a recipe's raw files is the one its readers see, and every example is a line with text.

* The recipes read their raw files with ``preprocess.common.read_complete_lines`` (``textio.read_lines`` with
  ``strict=True``), whose lines end at ``\\n`` (or ``\\r\\n``). fairseq-preprocess reads the text a recipe writes in
  Python's text mode (universal newlines: ``\\r`` ends a line too) and splits it into tokens at any whitespace;
  ``str.splitlines`` also breaks at ``\\x0b \\x0c \\x1c-\\x1e \\x85 U+2028 U+2029``. So a ``\\r`` inside a line of
  any raw file of any recipe is refused in one line naming file and line, before any work; the other separators
  become a space: the recipe writes what it writes without them (byte for byte), and fairseq's own reader counts,
  in every text file written, the lines counted here and the sentences binarized.
* An empty line in a file of parallel lines (an empty source or reference: binarized as a lone ``</s>`` and
  scored) is refused in one line naming file and line.
* BPE codes (``--bpe-codes`` of every recipe that takes it, the staged IWSLT codes) are checked before any work:
  subword-nmt form, an optional ``#version:`` header once, at least one merge of two units per line.
"""
import filecmp
import importlib
import os

import pytest

from test_recipe_inputs import MODES, RECIPES, build_data, copy_mode, data_files_of, run, templates  # noqa: F401
from test_recipe_variant_options import parser_actions

from fairseq_wean import textio
from preprocess import common

BREAKS = textio.OTHER_BREAKS  # all but "\r": refused


def _all_files():
    import tempfile

    with tempfile.TemporaryDirectory() as base:
        return [(mode, rel) for mode in sorted(MODES) for rel in data_files_of(mode, build_data(mode, os.path.join(
            base, mode))[0])]


FILES = _all_files()


def _edit_line(path, number, edit):
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    lines[number - 1] = edit(lines[number - 1])
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))


def _refused(module, argv, out, capsys, *expected):
    code, _, err = run(module, argv + ["--out", out], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("prepare: error: "), err
    assert all(e in lines[0] for e in expected), err
    assert not out.exists()  # nothing made, nothing written
    return lines[0]


# ------------------------------------------------------------------------------------------------ "\r" in a line

CR_FORMS = {"inside": lambda line: line[:len(line) // 2] + b"\r" + line[len(line) // 2:],
            "before the CRLF end": lambda line: line + b"\r\r"}  # "a\r\r\n": fairseq reads "a" and ""


@pytest.mark.parametrize("form", sorted(CR_FORMS))
@pytest.mark.parametrize("mode, rel", FILES, ids=["{}:{}".format(*f) for f in FILES])
def test_a_carriage_return_inside_a_line_is_refused_before_any_work(mode, rel, form, templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, mode, tmp_path)
    path = os.path.join(data, rel)
    _edit_line(path, 2, CR_FORMS[form])
    with open(path, encoding="utf-8") as f:  # fairseq-preprocess's reading: one line more
        assert len(list(f)) == len(textio.read_lines(path)) + 1
    _refused(MODES[mode], argv, tmp_path / "out", capsys, "{} line 2 holds a carriage return".format(path))


# ------------------------------------------------------------------------------------------------ other separators

def _fairseq_count(path):
    """The lines fairseq-preprocess reads in ``path`` (its own reader, as its Binarizer and Dictionary use it)."""
    from fairseq.file_chunker_utils import Chunker, find_offsets

    start, end = find_offsets(path, 1)
    with Chunker(path, start, end) as lines:
        return sum(1 for _ in lines)


def _binarized(call):
    """{text file: sentences fairseq binarized from it} of one ``common.fairseq_preprocess`` call."""
    from fairseq.data import data_utils

    (text_dir, dest, src, tgt), kw = call
    names = dict(common.subset_names([kw["train"]], "train"), **common.subset_names(kw["valid"], "valid"),
                 **common.subset_names(kw.get("test") or [], "test"))
    return {os.path.join(text_dir, "{}.{}".format(name, lang)): len(data_utils.load_indexed_dataset(
        os.path.join(dest, "{}.{}-{}.{}".format(subset, src, tgt, lang)), None))
        for name, subset in names.items() for lang in (src, tgt)}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_other_line_separators_become_spaces_read_alike_by_every_reader(mode, templates, tmp_path, capsys,
                                                                       monkeypatch):
    data, argv, files = copy_mode(templates, mode, tmp_path)
    calls, binarize = [], common.fairseq_preprocess
    monkeypatch.setattr(common, "fairseq_preprocess", lambda *a, **k: calls.append((a[:4], k)) or binarize(*a, **k))
    out = tmp_path / "out"
    code, _, err = run(MODES[mode], argv + ["--out", out], capsys)
    assert code == 0, err
    clean = tmp_path / "clean"
    out.rename(clean)
    planted = set()
    for rel in files:  # separator k for the first space of line k + 1 of every file
        path = os.path.join(data, rel)
        for k, ch in enumerate(BREAKS):
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
            if k + 1 < len(lines) and b" " in lines[k]:
                _edit_line(path, k + 1, lambda line: line.replace(b" ", ch.encode("utf-8"), 1))
                planted.add((rel, ch))
    assert {rel for rel, _ in planted} == set(files) and {ch for _, ch in planted} == set(BREAKS)
    del calls[:]
    code, _, err = run(MODES[mode], argv + ["--out", out], capsys)
    assert code == 0, err
    written = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)
    assert written == sorted(os.path.relpath(os.path.join(d, f), clean) for d, _, fs in os.walk(clean) for f in fs)
    for rel in written:  # what a recipe writes from the lines: as without the separators
        if not rel.endswith(".log"):
            assert filecmp.cmp(str(out / rel), str(clean / rel), shallow=False), rel
    texts = [rel for rel in written if rel.split(os.sep)[0].endswith("text")]
    assert texts
    for rel in texts:  # every reader counts the lines counted here
        path = str(out / rel)
        with open(path, encoding="utf-8") as f:
            content = f.read()
        n = len(textio.read_lines(path))
        assert _fairseq_count(path) == len(content.splitlines()) == n, rel
    assert calls or mode == "lcsts-test"  # (without PART I: the test set only, nothing binarized)
    for call in calls:  # and fairseq binarized a sentence for each line
        for path, count in _binarized(call).items():
            assert count == len(textio.read_lines(path)), path


# ------------------------------------------------------------------------------------------------ empty examples

def _group_files():
    """(mode, file) for every file of a parallel group (one example per line) of every recipe's data folder."""
    import tempfile

    cases = []
    for mode in sorted(MODES):
        module = importlib.import_module("preprocess." + MODES[mode])
        with tempfile.TemporaryDirectory() as base:
            root, argv = build_data(mode, os.path.join(base, mode))
            groups = module.data_files(module.parse_args([str(a) for a in argv]))[2]
            cases += [(mode, os.path.relpath(path, root)) for group in groups for path in group]
    return cases


GROUP_FILES = _group_files()


@pytest.mark.parametrize("mode, rel", GROUP_FILES, ids=["{}:{}".format(*f) for f in GROUP_FILES])
def test_an_empty_line_of_parallel_files_is_refused_naming_file_and_line(mode, rel, templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, mode, tmp_path)
    path = os.path.join(data, rel)
    _edit_line(path, 3, lambda line: b" \t")  # only whitespace: an empty sentence to fairseq too
    _refused(MODES[mode], argv, tmp_path / "out", capsys, "{} line 3 is empty".format(path))


def test_trailing_blank_lines_on_both_sides_are_refused(templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, "multi30k", tmp_path)
    tok = os.path.join(data, "translation", "multi30k_deen", "tok")
    for lang in ("de", "en"):  # the count check alone passes: both sides have it
        with open(os.path.join(tok, "val.lc.norm.tok." + lang), "a", encoding="utf-8") as f:
            f.write("\n")
    _refused("prepare_multi30k", argv, tmp_path / "out", capsys,
             "{} line 13 is empty".format(os.path.join(tok, "val.lc.norm.tok.de")))


# ------------------------------------------------------------------------------------------------ BPE codes

BAD_CODES = {
    "empty": ("", "holds no merge (it is empty)"),
    "header only": ("#version: 0.2\n", "holds no merge:"),
    "fastBPE form": ("e i 10\nei n</w> 7\n", "line 1 ('e i 10') is not a merge of two subword units separated by "
                                            "one space: these are fastBPE codes"),
    "header twice": ("#version: 0.2\ne i\n#version: 0.2\n", "line 3 ('#version: 0.2') is not a merge"),
    "header unreadable": ("#version:\ne i\n", "line 1 ('#version:') is no subword-nmt version header"),
    "three units": ("#version: 0.2\ne i n\n", "line 2 ('e i n') is not a merge"),
    "two spaces": ("#version: 0.2\ne  i\n", "line 2 ('e  i') is not a merge"),
    "tab": ("#version: 0.2\ne\ti\n", "line 2 ('e\\ti') is not a merge"),
    "empty line": ("#version: 0.2\ne i\n\nh a\n", "line 3 ('') is not a merge"),
    "carriage return": ("#version: 0.2\ne i\rh a\n", "line 2 holds a carriage return"),
}
CODES_RECIPES = [(mode, "bpe_codes") for mode in sorted(MODES) if any(
    a.dest == "bpe_codes" for a in parser_actions(importlib.import_module("preprocess." + MODES[mode])))]


def test_the_codes_taking_recipes_are_enumerated():
    takes = {name for name in RECIPES if any(a.dest == "bpe_codes" for a in parser_actions(
        importlib.import_module("preprocess." + name)))}
    assert takes == {MODES[mode] for mode, _ in CODES_RECIPES} == {"prepare_iwslt14"}


def _without(argv, flag):
    return argv[:argv.index(flag)] + argv[argv.index(flag) + 2:] if flag in argv else argv


@pytest.mark.parametrize("form", sorted(BAD_CODES))
@pytest.mark.parametrize("mode, where", CODES_RECIPES + [("iwslt-staged", "staged code")])
def test_bad_bpe_codes_are_refused_before_any_work(mode, where, form, templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, mode, tmp_path)
    text, expected = BAD_CODES[form]
    if where == "staged code":
        codes = os.path.join(data, "translation", "iwslt14_deen", "bpe10k", "code")
    else:
        codes = str(tmp_path / "codes.txt")
        argv = _without(argv, "--bpe-merges") + ["--bpe-codes", codes]
    with open(codes, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    line = _refused(MODES[mode], argv, tmp_path / "out", capsys, codes, expected)
    assert ("--bpe-codes " if where == "bpe_codes" else "data file ") + codes in line


@pytest.mark.parametrize("mode", [mode for mode, _ in CODES_RECIPES])
def test_good_bpe_codes_are_applied(mode, templates, tmp_path, capsys):
    data, argv, _ = copy_mode(templates, mode, tmp_path)
    codes = tmp_path / "codes.txt"
    codes.write_text("#version: 0.2\ne i \nh a\n", encoding="utf-8")  # a trailing space: subword-nmt's too
    code, _, err = run(MODES[mode], _without(argv, "--bpe-merges") + ["--bpe-codes", codes, "--out", tmp_path / "o"],
                       capsys)
    assert code == 0, err
    assert (tmp_path / "o" / "bpe.codes").read_text(encoding="utf-8") == codes.read_text(encoding="utf-8")
    text = (tmp_path / "o" / "bpe-text" / "test.de").read_text(encoding="utf-8")
    assert text.startswith("ei@@ n m@@ a@@ n@@ n 0 ") and " ha@@ u@@ s\n" in text  # e i merged, h a too


@pytest.mark.parametrize("content, lines", [
    (b"a b\r\nc\r\n", ["a b", "c"]),  # CRLF line ends: the lines fairseq reads
    (b"\xef\xbb\xbfa\x0bb\n\xe2\x80\xa8c\xc2\x85\n", ["a b", " c "]),  # a BOM dropped, separators made spaces
])
def test_the_reader_reads_the_lines_fairseq_reads(content, lines, tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(content)
    assert common.read_complete_lines(str(path), str(tmp_path)) == lines
    assert _fairseq_count(str(path)) == len(lines)
