"""``<unk-N>`` markers (fairseq_wean.data.markers) and the data safety of the tools that write files.

The command-line cases run the real tools (``python -m preprocess.unk_markers``, ``python -m
preprocess.coverage_report``, ``examples/word_attention_figure3.py``) as subprocesses, all at once
(start-up, importing torch and fairseq, dominates each run). Each case has its own directory;
the tests check the exit status, the one-line error, that every input is byte-identical
afterwards and that no output, partial or temporary, is left behind.
"""
import os
import sys

import pytest

from conftest import REPO, cli_concurrently
from fairseq_wean.data import markers

if REPO not in sys.path:  # preprocess/ is run as `python -m preprocess.X` from the repository
    sys.path.insert(0, REPO)

PREFIX = "fairseq-wean: error: "
FIGURE3 = os.path.join(REPO, "examples", "word_attention_figure3.py")


# ------------------------------------------------------------------ the format
def test_marker_format_and_parse():
    assert markers.marker(0) == "<unk-0>" and markers.marker(17) == "<unk-17>"
    for n in (0, 7, 123):
        assert markers.marker_position(markers.marker(n)) == n
        assert markers.is_position_marker(markers.marker(n))
    # only ASCII digits, nothing around the marker: fairseq tokens are whitespace-free
    for word in ("<unk>", "<unk->", "<unk-x>", "<unk-3>x", "x<unk-3>", "<unk-3>\n", "<unk-\u0663>", "<unk--1>",
                 "<UNK-3>", "unk-3"):
        assert not markers.is_position_marker(word), word
        assert markers.marker_position(word) is None, word


def test_marker_ids_of_a_fairseq_dictionary():
    from fairseq.data import Dictionary

    d = Dictionary()
    for word in ("the", "<unk-0>", "cat", "<unk-1>", "<unk-x>"):
        d.add_symbol(word)
    assert markers.marker_ids(d) == [d.index("<unk-0>"), d.index("<unk-1>")]


def test_encode_and_decode_are_inverse():
    vocabulary = {"the", "cat", "sat"}
    source = "the zorp cat zorp blix".split()
    marked_src, marked_tgt = markers.encode_pair(source, "blix sat zorp".split(), vocabulary)
    assert marked_src == ["the", "<unk-1>", "cat", "<unk-1>", "<unk-4>"]
    assert markers.decode_hypothesis(source, marked_tgt) == "blix sat zorp".split()
    # a word first seen at a position >= max_markers keeps its spelling
    assert markers.encode_pair(source, None, vocabulary, max_markers=2) == (
        ["the", "<unk-1>", "cat", "<unk-1>", "blix"], None)


def test_a_marker_past_the_end_of_its_own_source_is_unk():
    """A model may write any marker of its dictionary (sampling at a high temperature did, issue 43):
    where the hypothesis is known to be its source's (fairseq-interactive's BPE, sentence-id
    ordered logs), the marker points at no word and becomes <unk>; a file pair keeps the error."""
    from argparse import Namespace

    from fairseq.data import Dictionary, encoders

    import fairseq_wean  # noqa: F401  (registers the BPE)

    source = "the zorp cat".split()
    hypothesis = "<unk-1> sat <unk-7> <unk-2>".split()
    assert markers.decode_hypothesis(source, hypothesis, past_end="unk") == ["zorp", "sat", "<unk>", "cat"]
    with pytest.raises(ValueError, match="<unk-7> points past the end of its 3-word source"):
        markers.decode_hypothesis(source, hypothesis)
    d = Dictionary()
    for word in ("the", "cat", "sat", "<unk-0>", "<unk-1>", "<unk-2>", "<unk-7>"):
        d.add_symbol(word)
    bpe = encoders.build_bpe(Namespace(bpe="unk_markers", unk_markers_dict=None))
    bpe.set_dictionary(d)
    assert bpe.encode("the zorp cat") == "the <unk-1> cat"
    assert bpe.decode(" ".join(hypothesis), source=source) == "zorp sat <unk> cat"


def test_decode_cli_past_end_unk(tmp_path):
    import subprocess

    (tmp_path / "src").write_text(SRC)
    (tmp_path / "hyp").write_text(HYP_BAD)
    proc = subprocess.run([sys.executable, "-m", "preprocess.unk_markers", "decode", "--src", str(tmp_path / "src"),
                           "--hyp", str(tmp_path / "hyp"), "--out", str(tmp_path / "out"), "--past-end", "unk"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out").read_text() == "a\nx <unk> y\nb h\n"


def test_the_tools_share_one_definition():
    """The model, the align-table CLI and the preprocess tools use the functions of data.markers."""
    from fairseq_wean.cli import align_table
    from fairseq_wean.models import core_copy
    from preprocess import coverage_report, unk_markers

    assert align_table.is_position_marker is markers.is_position_marker
    assert coverage_report.is_position_marker is markers.is_position_marker
    assert unk_markers.encode_pair is markers.encode_pair
    assert unk_markers.decode_hypothesis is markers.decode_hypothesis
    assert core_copy.marker_ids is markers.marker_ids


# ------------------------------------------------------------------ the tools, as subprocesses
SRC = "a b c\nd e f\ng h i\n"
HYP_BAD = "a\nx <unk-99> y\nb <unk-1>\n"  # line 2 points past its 3-word source


def _files(directory):
    return {p: open(os.path.join(directory, p), "rb").read() for p in sorted(os.listdir(directory))}


def _case(root, name, files):
    directory = root / name
    directory.mkdir()
    for file_name, content in files.items():
        path = directory / file_name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return directory


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("marker-cli")
    cases = {}  # name -> (directory, files before, command)

    def add(name, files, tool, *args):
        d = _case(root, name, files)
        before = _files(d)
        argv = [str(a).replace("@", str(d) + os.sep) for a in args]
        command = (["-m", tool] if tool.startswith("preprocess.") else [tool]) + argv
        cases[name] = (d, before, ("python", command, {"check": False}))

    um, cov = "preprocess.unk_markers", "preprocess.coverage_report"
    dict_txt = "b 5\nc 3\n<unk-0> 0\n<unk-1> 0\n"
    add("decode_out_is_hyp", {"src": SRC, "hyp": HYP_BAD}, um, "decode", "--src", "@src", "--hyp", "@hyp",
        "--out", "@hyp")
    add("decode_bad_marker", {"src": SRC, "hyp": HYP_BAD, "out": "an earlier output\n"}, um, "decode",
        "--src", "@src", "--hyp", "@hyp", "--out", "@out")
    add("decode_bad_marker_new_out", {"src": SRC, "hyp": HYP_BAD}, um, "decode",
        "--src", "@src", "--hyp", "@hyp", "--out", "@out")
    add("decode_not_utf8", {"src": SRC, "hyp": b"a\nb caf\xe9\nc\n"}, um, "decode",
        "--src", "@src", "--hyp", "@hyp", "--out", "@out")
    add("encode_tgt_without_tgt_out", {"dict": dict_txt, "src": SRC, "tgt": SRC}, um, "encode",
        "--vocab", "@dict", "--src", "@src", "--tgt", "@tgt", "--src-out", "@src.pg")
    add("encode_tgt_out_without_tgt", {"dict": dict_txt, "src": SRC}, um, "encode",
        "--vocab", "@dict", "--src", "@src", "--src-out", "@src.pg", "--tgt-out", "@tgt.pg")
    add("encode_missing_src", {"dict": dict_txt}, um, "encode", "--vocab", "@dict", "--src", "@missing.src",
        "--src-out", "@src.pg")
    add("encode_src_out_is_src", {"dict": dict_txt, "src": SRC}, um, "encode", "--vocab", "@dict",
        "--src", "@src", "--src-out", "@src")
    add("encode_tgt_out_is_vocab", {"dict": dict_txt, "src": SRC, "tgt": SRC}, um, "encode", "--vocab", "@dict",
        "--src", "@src", "--tgt", "@tgt", "--src-out", "@src.pg", "--tgt-out", "@dict")
    add("encode_same_two_outputs", {"dict": dict_txt, "src": SRC, "tgt": SRC}, um, "encode", "--vocab", "@dict",
        "--src", "@src", "--tgt", "@tgt", "--src-out", "@pg", "--tgt-out", "@pg")
    add("vocab_out_is_src", {"src": SRC, "tgt": SRC}, um, "vocab", "--src", "@src", "--tgt", "@tgt",
        "--out", "@src")
    add("encode_ok", {"dict": dict_txt, "src": "b zorp c zorp\n", "tgt": "zorp b\n"}, um, "encode",
        "--vocab", "@dict", "--src", "@src", "--tgt", "@tgt", "--src-out", "@src.pg", "--tgt-out", "@tgt.pg")
    cov_files = {"src": "b c\n", "tgt": "b d\n", "table": "b\td\t2\n"}
    add("coverage_missing_dict", cov_files, cov, "--dict", "@missing.dict", "--src", "@src", "--tgt", "@tgt",
        "--table", "@table")
    add("coverage_json_is_tgt", dict(cov_files, dict=dict_txt), cov, "--dict", "@dict", "--src", "@src",
        "--tgt", "@tgt", "--table", "@table", "--json", "@tgt")
    add("coverage_malformed_table", dict(cov_files, dict=dict_txt, table="b\td\t2\nb d 1\n"), cov,
        "--dict", "@dict", "--src", "@src", "--tgt", "@tgt", "--table", "@table", "--json", "@report.json")
    add("figure3_missing_dir", {"model.pt": b"not a checkpoint"}, FIGURE3, "--path", "@model.pt",
        "--source", "a b", "--output", "@no-such-dir/fig.png")
    add("figure3_output_is_checkpoint", {"model.pt": b"not a checkpoint"}, FIGURE3, "--path", "@model.pt",
        "--source", "a b", "--output", "@model.pt")
    procs = cli_concurrently([command for _, _, command in cases.values()])
    return {name: (d, before, proc) for (name, (d, before, _)), proc in zip(cases.items(), procs)}


def error_line(runs, name):
    """The one-line error of case ``name``; its directory holds exactly the files it held before."""
    directory, before, proc = runs[name]
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(PREFIX), proc.stderr[-3000:]
    assert _files(directory) == before  # inputs byte-identical, no output, no temporary file
    return line


def test_decode_refuses_to_overwrite_its_hypotheses(runs):
    line = error_line(runs, "decode_out_is_hyp")
    assert "--out" in line and "is also an input" in line and "choose another output path" in line


def test_decode_with_a_bad_marker_leaves_no_partial_output(runs):
    # line 1 decodes fine; line 2 fails: neither the earlier output nor a new one is touched
    for name in ("decode_bad_marker", "decode_bad_marker_new_out"):
        line = error_line(runs, name)
        assert "hyp line 2: <unk-99> points past the end of its 3-word source" in line
        assert "not line-parallel" in line and "nothing was written" in line and "--past-end unk" in line


def test_decode_of_a_hypothesis_file_that_is_not_utf8(runs):
    line = error_line(runs, "decode_not_utf8")
    assert "--hyp" in line and "hyp line 2 is not UTF-8" in line and "re-encode" in line


def test_encode_needs_tgt_and_tgt_out_together(runs):
    line = error_line(runs, "encode_tgt_without_tgt_out")
    assert "--tgt and --tgt-out go together (got only --tgt)" in line
    line = error_line(runs, "encode_tgt_out_without_tgt")
    assert "--tgt and --tgt-out go together (got only --tgt-out)" in line


def test_encode_with_a_missing_source(runs):
    line = error_line(runs, "encode_missing_src")
    assert "--src" in line and "missing.src: no such file" in line


def test_encode_and_vocab_refuse_an_output_equal_to_an_input(runs):
    for name, flag in (("encode_src_out_is_src", "--src-out"), ("encode_tgt_out_is_vocab", "--tgt-out"),
                       ("vocab_out_is_src", "--out")):
        line = error_line(runs, name)
        assert line.startswith(PREFIX + flag + " ") and "is also an input" in line, name
    line = error_line(runs, "encode_same_two_outputs")
    assert "--src-out and --tgt-out are both" in line and "two different files" in line


def test_encode_writes_both_sides(runs):
    directory, _, proc = runs["encode_ok"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (directory / "src.pg").read_text() == "b <unk-1> c <unk-1>\n"
    assert (directory / "tgt.pg").read_text() == "<unk-1> b\n"
    assert sorted(os.listdir(directory)) == ["dict", "src", "src.pg", "tgt", "tgt.pg"]  # no temporary file


def test_coverage_report_with_a_missing_dictionary(runs):
    line = error_line(runs, "coverage_missing_dict")
    assert "--dict" in line and "missing.dict: no such file" in line


def test_coverage_report_refuses_json_over_an_input(runs):
    line = error_line(runs, "coverage_json_is_tgt")
    assert "--json" in line and "is also an input" in line


def test_coverage_report_reads_the_table_with_the_models_checks(runs):
    line = error_line(runs, "coverage_malformed_table")
    assert "--table" in line and "line 2 is malformed (expected SOURCE<TAB>TARGET<TAB>SCORE" in line


def test_figure3_checks_its_output_before_loading_the_model(runs):
    # --path is not a checkpoint: an error about the output proves the output was checked first
    line = error_line(runs, "figure3_missing_dir")
    assert "--output" in line and "does not exist; create it first" in line
    line = error_line(runs, "figure3_output_is_checkpoint")
    assert "--output" in line and "is also an input" in line


def test_encode_replaces_both_outputs_or_neither(tmp_path, monkeypatch):
    """A failure while writing --tgt-out leaves the earlier --src-out and --tgt-out as they were
    (before: --src-out was already renamed over, with the new source and the old target)."""
    from preprocess import unk_markers

    (tmp_path / "src").write_text("a x c x\n")
    (tmp_path / "tgt").write_text("x a\n")
    (tmp_path / "dict").write_text("a 5\nb 4\nc 3\n<unk-0> 0\n<unk-1> 0\n")
    (tmp_path / "src.pg").write_text("an earlier source\n")
    (tmp_path / "tgt.pg").write_text("an earlier target\n")
    argv = ["encode", "--vocab", str(tmp_path / "dict"), "--src", str(tmp_path / "src"), "--tgt",
            str(tmp_path / "tgt"), "--src-out", str(tmp_path / "src.pg"), "--tgt-out", str(tmp_path / "tgt.pg")]
    real = unk_markers.encode_pair
    # the target side cannot be encoded as UTF-8: writing --tgt-out fails after --src-out is written
    monkeypatch.setattr(unk_markers, "encode_pair", lambda *a: (real(*a)[0], ["\ud800"]))
    with pytest.raises(UnicodeEncodeError):
        unk_markers.main(argv)
    assert (tmp_path / "src.pg").read_text() == "an earlier source\n"
    assert (tmp_path / "tgt.pg").read_text() == "an earlier target\n"
    assert sorted(os.listdir(tmp_path)) == ["dict", "src", "src.pg", "tgt", "tgt.pg"]  # no temporary file
    monkeypatch.setattr(unk_markers, "encode_pair", real)
    unk_markers.main(argv)
    assert (tmp_path / "src.pg").read_text() != "an earlier source\n"
    assert (tmp_path / "tgt.pg").read_text() != "an earlier target\n"
