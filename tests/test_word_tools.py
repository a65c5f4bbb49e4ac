"""Every tool that reads WORDS refuses text in any other form, in one line, before any work:
subword pieces (BPE '@@', sentencepiece '▁', WordPiece '##') and Chinese / Thai left unsegmented
(fairseq_wean.scoring.pieces.check_words, the scorer's piece and script rules). Every module of
preprocess/ and fairseq_wean/cli/ is listed here as a word tool or exempted with a reason, so a
new tool has to take a side."""
import os
import sys

import pytest

from conftest import REPO
from fairseq_wean.errors import FairseqWeanError

if REPO not in sys.path:  # preprocess/ is run as `python -m preprocess.X` from the repository
    sys.path.insert(0, REPO)

WORDS = ["the cat sat on the mat", "a big dog ran"]
FORMS = {
    "words": WORDS,
    "bpe": ["the c@@ at sat on the mat", "a big d@@ og ran"],
    "sentencepiece": ["\u2581the \u2581c at \u2581sat", "\u2581a \u2581big \u2581dog"],
    "wordpiece": ["the c ##at sat on the mat", "a big d ##og ran"],
    "zh": ["我们的国家今天很好人民生活幸福快乐", "今天人民生活很好"],
    "thai": ["ฉันรักประเทศไทยมากที่สุดในโลก", "วันนี้อากาศดีมาก"],
}
PIECES = ("bpe", "sentencepiece", "wordpiece")
UNSEGMENTED = ("zh", "thai")


class Reached(Exception):
    """The tool got past its checks to its real work."""


def align_table(tmp_path, lines, monkeypatch):
    from fairseq_wean.cli import align_table as tool

    monkeypatch.setattr(tool, "build_table", lambda *a, **k: (_ for _ in ()).throw(Reached()))
    (tmp_path / "t.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "w.txt").write_text("\n".join(WORDS) + "\n")
    tool.main(["--src", str(tmp_path / "t.txt"), "--tgt", str(tmp_path / "w.txt"), "--out", str(tmp_path / "o")])


def unk_markers(command):
    def run(tmp_path, lines, monkeypatch):
        from preprocess import unk_markers as tool

        (tmp_path / "t.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (tmp_path / "w.txt").write_text("\n".join(WORDS) + "\n")
        (tmp_path / "dict.txt").write_text("the 9\ncat 5\n<unk-0> 0\n<unk-1> 0\n")
        t, w, o = (str(tmp_path / n) for n in ("t.txt", "w.txt", "o"))
        tool.main({"vocab": ["vocab", "--src", w, "--tgt", t, "--min-count", "1", "--out", o],
                   "encode": ["encode", "--vocab", str(tmp_path / "dict.txt"), "--src", t, "--src-out", o],
                   "decode": ["decode", "--src", t, "--hyp", t, "--out", o]}[command])
        raise Reached()
    return run


def split_characters(tmp_path, lines, monkeypatch):
    from preprocess import split_characters as tool

    (tmp_path / "t.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tool.main(["--input", str(tmp_path / "t.txt"), "--output", str(tmp_path / "o")])
    raise Reached()


def coverage_report(tmp_path, lines, monkeypatch):
    from preprocess import coverage_report as tool

    monkeypatch.setattr(tool, "coverage", lambda *a, **k: (_ for _ in ()).throw(Reached()))
    (tmp_path / "t.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "w.txt").write_text("\n".join(WORDS) + "\n")
    (tmp_path / "table.tsv").write_text("the\tthe\t0.9\n", encoding="utf-8")
    tool.main(["--train-src", str(tmp_path / "w.txt"), "--train-tgt", str(tmp_path / "w.txt"), "--src",
               str(tmp_path / "t.txt"), "--tgt", str(tmp_path / "w.txt"), "--table", str(tmp_path / "table.tsv"),
               "--json", str(tmp_path / "o")])


# module -> {the command: (runner, the forms it reads: "words", or "text" = words or unsegmented scripts)}
WORD_TOOLS = {
    "fairseq_wean.cli.align_table": {"fairseq-wean-align-table": (align_table, "words")},
    "preprocess.unk_markers": {"unk_markers " + c: (unk_markers(c), "words") for c in ("vocab", "encode", "decode")},
    "preprocess.split_characters": {"split_characters": (split_characters, "text")},
    "preprocess.coverage_report": {"coverage_report": (coverage_report, "words")},
}
EXEMPT = {
    "fairseq_wean.cli.score": "scores any form after --post-process; pieces and scripts refused per metric "
                              "(tests/test_post_process_forms.py)",
    "fairseq_wean.cli.report": "the scorer's rules (tests/test_post_process_forms.py)",
    "fairseq_wean.cli.options": "option helpers, no text read",
    "fairseq_wean.cli.patches": "fairseq's own commands, patched; no text read",
    "fairseq_wean.cli.train_cpu_dist": "a launcher of fairseq-train; no text read",
    "fairseq_wean.cli.__init__": "no tool",
    "preprocess.__init__": "no tool",
    "preprocess.common": "helpers of the prepare_* recipes",
    "preprocess.vocab_sizes": "helpers of the prepare_* recipes (vocabulary sizes asked and built), no text read",
    "preprocess.check_parallel": "cleans a pair of line-parallel files in any form (BPE'd text is binarized too)",
    "preprocess.fastbpe_codes": "reads BPE codes, not text (tests/test_fastbpe_codes.py)",
    "preprocess.prepare_gigaword": "reads its own benchmark's raw files and writes every vocabulary form",
    "preprocess.prepare_iwslt14": "reads its own benchmark's raw files and writes every vocabulary form",
    "preprocess.prepare_lcsts": "reads its own benchmark's raw files (Chinese, split into characters by it)",
    "preprocess.prepare_multi30k": "reads its own benchmark's raw files and writes every vocabulary form",
    "preprocess.prepare_simplification": "reads its own benchmark's raw files and writes every vocabulary form",
}


def test_every_tool_is_a_word_tool_or_exempted_with_a_reason():
    modules = {"{}.{}".format(package, name[:-3]) for folder, package in (("preprocess", "preprocess"), (
        os.path.join("fairseq_wean", "cli"), "fairseq_wean.cli")) for name in os.listdir(os.path.join(REPO, folder))
        if name.endswith(".py")}
    assert modules == set(WORD_TOOLS) | set(EXEMPT), "list the new tool in WORD_TOOLS, or in EXEMPT with a reason"
    assert not set(WORD_TOOLS) & set(EXEMPT)
    for module in WORD_TOOLS:  # each goes through the one check
        with open(os.path.join(REPO, *module.split(".")) + ".py", encoding="utf-8") as f:
            assert "check_words(" in f.read(), module


CASES = [(command, run, reads, form) for tools in WORD_TOOLS.values() for command, (run, reads) in tools.items()
         for form in FORMS]


@pytest.mark.parametrize("command, run, reads, form", CASES, ids=["{}-{}".format(c[0], c[3]) for c in CASES])
def test_word_tools_refuse_pieces_and_unsegmented_scripts(tmp_path, monkeypatch, command, run, reads, form):
    refused = form in PIECES or (form in UNSEGMENTED and reads == "words")
    if not refused:
        with pytest.raises(Reached):
            run(tmp_path, FORMS[form], monkeypatch)
        return
    with pytest.raises(FairseqWeanError) as info:
        run(tmp_path, FORMS[form], monkeypatch)
    message = str(info.value)
    assert "\n" not in message and "t.txt" in message, message
    if form in PIECES:
        # the fix: the text before subwords, or (a tool given the words it looks the text up in) one form
        assert " pieces (" in message and ("before BPE / sentencepiece / WordPiece" in message
                                           or "has none (a dictionary of words)" in message), message
    else:
        assert "a script without spaces between words" in message, message
    assert not (tmp_path / "o").exists()  # nothing written


# ------------------------------------------------------------ align-table: text and --dict of one form
SPM_DICT = ["\u2581the 9", "\u2581c 5", "at 5", "\u2581sat 4", "\u2581a 3", "\u2581big 3", "\u2581dog 3"]
WORD_DICT = ["the 9", "cat 5", "sat 4", "on 3", "mat 3", "a 3", "big 3", "dog 3", "ran 3"]


@pytest.mark.parametrize("form, dictionary, message", [
    ("words", WORD_DICT, None),
    ("sentencepiece", SPM_DICT, None),  # a table of pieces, for a model on pieces
    ("bpe", WORD_DICT, r"^--src \S+ holds subword_nmt pieces \('the c@@ at.*--dict \S+ has none"),
    ("sentencepiece", WORD_DICT, r"^--src \S+ holds sentencepiece pieces .* has none \(a dictionary of words\)"),
    ("words", SPM_DICT, r"^--dict \S+ is a dictionary of sentencepiece pieces \(86% of its entries"),
    ("zh", WORD_DICT, "a script without spaces between words"),
])
def test_align_table_text_and_dict_of_one_form(tmp_path, monkeypatch, form, dictionary, message):
    from fairseq_wean.cli import align_table as tool

    monkeypatch.setattr(tool, "build_table", lambda *a, **k: (_ for _ in ()).throw(Reached()))
    lines = FORMS[form]
    for name in ("s.txt", "t.txt"):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "dict.txt").write_text("\n".join(dictionary) + "\n", encoding="utf-8")
    argv = ["--src", str(tmp_path / "s.txt"), "--tgt", str(tmp_path / "t.txt"), "--dict", str(tmp_path / "dict.txt"),
            "--out", str(tmp_path / "o")]
    with pytest.raises(Reached if message is None else FairseqWeanError, match=message):
        tool.main(argv)
    assert not (tmp_path / "o").exists()
