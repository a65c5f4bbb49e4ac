"""CoRe's preprocessing: alignment table (eflomal), Table 2 coverage report, <unk-N> markers."""
import json
import os
import sys

import pytest

from conftest import REPO
from fairseq_wean.cli import align_table
from fairseq_wean.data.align_table import read_table, write_table
from fairseq_wean.data.dictionary import dictionary_words

if REPO not in sys.path:  # preprocess/ is run as `python -m preprocess.X` from the repository
    sys.path.insert(0, REPO)
from preprocess import coverage_report, unk_markers  # noqa: E402

# "big" is always rewritten as "large", "car" is copied; "the" is deleted.
SRC = ["the big car", "a big house", "the big dog", "a car", "big red car", "the house"]
TGT = ["large car", "a large house", "large dog", "a car", "large red car", "house"]


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "train.src").write_text("\n".join(SRC) + "\n")
    (tmp_path / "train.tgt").write_text("\n".join(TGT) + "\n")
    return tmp_path


def test_cli_writes_top_k_rewrites_per_source_word(corpus):
    out = corpus / "table.txt"
    align_table.cli_main(["--src", str(corpus / "train.src"), "--tgt", str(corpus / "train.tgt"),
                          "--topk", "2", "--out", str(out)])
    lines = out.read_text().splitlines()
    rows = [line.split("\t") for line in lines]
    assert all(len(r) == 3 for r in rows)
    table = {}
    for src, tgt, score in rows:
        table.setdefault(src, []).append((tgt, float(score)))
    assert all(len(v) <= 2 for v in table.values())
    assert all([s for _, s in v] == sorted([s for _, s in v], reverse=True) for v in table.values())
    assert table["big"][0][0] == "large"  # the rewrite pattern
    assert table["car"][0][0] == "car"
    # consecutive lines per source word, so that the model's "first k lines" are the best k
    sources = [r[0] for r in rows]
    assert sources == sorted(sources, key=sources.index)
    assert read_table(str(out))["big"][0] == "large"


def test_markers_and_empty_pairs_never_enter_the_table():
    table = align_table.build_table(
        [["<unk-0>", "big"], [], ["big", "<unk-1>"]] * 3,
        [["<unk-0>", "large"], ["x"], ["large", "<unk-1>"]] * 3,
        topk=10,
    )
    words = set(table) | {t for v in table.values() for t, _ in v}
    assert words == {"big", "large"}


def test_cli_errors(corpus, capsys):
    with pytest.raises(SystemExit, match="no such file"):
        align_table.cli_main(["--src", str(corpus / "nope"), "--tgt", str(corpus / "train.tgt"),
                              "--out", str(corpus / "t")])
    (corpus / "short.tgt").write_text("a\n")
    with pytest.raises(SystemExit, match="differ in length"):
        align_table.cli_main(["--src", str(corpus / "train.src"), "--tgt", str(corpus / "short.tgt"),
                              "--out", str(corpus / "t")])


def test_coverage_report_reproduces_table2_columns(tmp_path):
    """Hand-computed: 10 target tokens."""
    (tmp_path / "table").write_text("big\tlarge\t3\nbig\thuge\t1\ncar\tauto\t2\n")
    (tmp_path / "test.src").write_text("the big car\nred car\n")
    (tmp_path / "test.tgt").write_text("a large car is huge\nthe red auto goes far away\n")
    (tmp_path / "train.src").write_text("a a a the the x\n")
    (tmp_path / "train.tgt").write_text("a the is y\n")
    out = tmp_path / "report.json"
    report = coverage_report.main([
        "--train-src", str(tmp_path / "train.src"), "--train-tgt", str(tmp_path / "train.tgt"),
        "--src", str(tmp_path / "test.src"), "--tgt", str(tmp_path / "test.tgt"),
        "--table", str(tmp_path / "table"), "--topk", "1", "--num-frequent", "3", "--vocab-size", "4",
        "--json", str(out),
    ])
    # X: car, red = 2/11; +A(X) (top-1: large; auto): +large +auto = 4/11;
    # +U = {a, the, is}: +a +is +the = 7/11; |V|=4 {a, the, is, x}: a, is, the = 3/11
    assert report["target tokens"] == 11
    assert report["X"] == pytest.approx(100 * 2 / 11)
    assert report["X+A(X)"] == pytest.approx(100 * 4 / 11)
    assert report["X+A(X)+U"] == pytest.approx(100 * 7 / 11)
    assert report["|V|=4"] == pytest.approx(100 * 3 / 11)
    # |V_G|: sentence 1 {large, auto} u U u {unk, eos} = 7; sentence 2 {auto} u ... = 6
    assert report["avg |V_G|"] == pytest.approx(6.5)
    assert json.loads(out.read_text())["X"] == pytest.approx(report["X"])


def test_coverage_report_takes_u_from_a_fairseq_dictionary(tmp_path):
    (tmp_path / "table").write_text("b\tc\t1\n")  # a table with no pair is refused (test_keyed_files), and
    # one with a word --dict does not hold, as core_copy refuses it (tests/test_preprocess_tools.py)
    (tmp_path / "s").write_text("x\n")
    (tmp_path / "t").write_text("b c\n")
    (tmp_path / "dict.txt").write_text("b 5\n<unk-0> 4\nc 3\n")
    report = coverage_report.main(["--dict", str(tmp_path / "dict.txt"), "--src", str(tmp_path / "s"),
                                   "--tgt", str(tmp_path / "t"), "--table", str(tmp_path / "table"),
                                   "--num-frequent", "2"])
    assert report["X+A(X)+U"] == pytest.approx(100.0)  # markers are not in U: U = {b, c}
    assert "|V|=2" in report and not any(k.startswith("|V|=30000") for k in report)  # the dictionary's size


@pytest.mark.parametrize("flag,value", [("--topk", "0"), ("--num-frequent", "-5"), ("--vocab-size", "0")])
def test_coverage_report_refuses_impossible_sizes(flag, value, tmp_path, capsys):
    for name in ("table", "s", "t", "dict.txt"):
        (tmp_path / name).write_text("b 5\n" if name == "dict.txt" else "")
    with pytest.raises(SystemExit):
        coverage_report.main(["--dict", str(tmp_path / "dict.txt"), "--src", str(tmp_path / "s"),
                              "--tgt", str(tmp_path / "t"), "--table", str(tmp_path / "table"), flag, value])
    assert "argument {}: must be >=".format(flag) in capsys.readouterr().err


def test_markers_round_trip():
    vocab = {"the", "cat", "sat"}
    src, tgt = unk_markers.encode_pair("the zorp cat zorp blix".split(), "zorp sat blix on mat".split(), vocab)
    assert src == ["the", "<unk-1>", "cat", "<unk-1>", "<unk-4>"]
    assert tgt == ["<unk-1>", "sat", "<unk-4>", "on", "mat"]  # mat: not in the source, stays (-> <unk>)
    hyp = unk_markers.decode_hypothesis("the zorp cat zorp blix".split(), ["<unk-4>", "sat", "<unk-1>"])
    assert hyp == ["blix", "sat", "zorp"]
    with pytest.raises(ValueError, match="line-parallel"):
        unk_markers.decode_hypothesis(["a"], ["<unk-3>"])


def test_marker_scripts_and_fairseq_dictionary(tmp_path):
    from fairseq.data import Dictionary

    (tmp_path / "train.src").write_text("the cat sat\nthe dog sat\nthe zorp sat\n")
    (tmp_path / "train.tgt").write_text("cat sat\ndog sat\nzorp sat\n")
    unk_markers.main(["vocab", "--src", str(tmp_path / "train.src"), "--tgt", str(tmp_path / "train.tgt"),
                      "--min-count", "3", "--markers", "4", "--out", str(tmp_path / "dict.txt")])
    d = Dictionary.load(str(tmp_path / "dict.txt"))
    assert d.symbols[d.nspecial:] == ["sat", "the", "<unk-0>", "<unk-1>", "<unk-2>", "<unk-3>"]
    unk_markers.main(["encode", "--vocab", str(tmp_path / "dict.txt"), "--src", str(tmp_path / "train.src"),
                      "--tgt", str(tmp_path / "train.tgt"), "--src-out", str(tmp_path / "m.src"),
                      "--tgt-out", str(tmp_path / "m.tgt")])
    # singletons and pairs (count < 3) become markers, in the source and where copied
    assert (tmp_path / "m.src").read_text().splitlines() == ["the <unk-1> sat", "the <unk-1> sat", "the <unk-1> sat"]
    assert (tmp_path / "m.tgt").read_text().splitlines() == ["<unk-1> sat"] * 3
    (tmp_path / "hyp").write_text("cat\n<unk-1> sat\n\n")
    (tmp_path / "test.src").write_text("the cat\nthe qux sat\nx\n")
    unk_markers.main(["decode", "--src", str(tmp_path / "test.src"), "--hyp", str(tmp_path / "hyp"),
                      "--out", str(tmp_path / "out")])
    assert (tmp_path / "out").read_text().splitlines() == ["cat", "qux sat", ""]


# ------------------------------------------------------------------ align-table outputs never destroy data
@pytest.fixture(scope="module")
def refused_runs(tmp_path_factory):
    """Four bad --out values, run as the real console script at once; the inputs are 300 lines.

    The target lines are empty, so building the table would fail before eflomal runs: had --out
    been checked only after building the table, the error would be "no non-empty sentence pair".
    """
    from conftest import cli_concurrently

    root = tmp_path_factory.mktemp("align-out")
    src = "big car\n" * 300
    tgt = "\n" * 300
    cases = {}
    for name, out in (("out_is_src", "train.src"), ("out_is_tgt", "train.tgt"),
                      ("out_in_missing_dir", os.path.join("no-such-dir", "table")), ("out_is_dir", "sub")):
        d = root / name
        d.mkdir()
        (d / "train.src").write_text(src)
        (d / "train.tgt").write_text(tgt)
        (d / "sub").mkdir()
        cases[name] = (d, ["--src", d / "train.src", "--tgt", d / "train.tgt", "--out", d / out])
    procs = cli_concurrently([("fairseq-wean-align-table", args, {"check": False}) for _, args in cases.values()])
    return {name: (d, proc, src, tgt) for (name, (d, _)), proc in zip(cases.items(), procs)}


@pytest.mark.parametrize("name, message", [
    ("out_is_src", "train.src is also an input"),
    ("out_is_tgt", "train.tgt is also an input"),
    ("out_in_missing_dir", "no-such-dir does not exist; create it first"),
    ("out_is_dir", "sub is a directory: give a file path"),
])
def test_align_table_refuses_a_bad_out_before_aligning(refused_runs, name, message):
    d, proc, src, tgt = refused_runs[name]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("fairseq-wean-align-table: error: --out ") and message in line, proc.stderr[-3000:]
    assert (d / "train.src").read_text() == src and (d / "train.tgt").read_text() == tgt
    assert sorted(os.listdir(d)) == ["sub", "train.src", "train.tgt"] and os.listdir(d / "sub") == []


def test_write_table_keeps_the_old_table_when_writing_fails(tmp_path):
    out = tmp_path / "table"
    out.write_text("old\tone\t1\n")

    class Unprintable:
        def __format__(self, spec):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_table({"a": [("b", 2)], "c": [("d", Unprintable())]}, str(out))
    assert out.read_text() == "old\tone\t1\n" and os.listdir(tmp_path) == ["table"]
    write_table({"a": [("b", 2), ("e", 1)]}, str(out))
    assert read_table(str(out)) == {"a": ["b", "e"]}


def test_table_reader_errors(tmp_path):
    from fairseq_wean.errors import FairseqWeanError

    table = tmp_path / "t"
    with pytest.raises(FairseqWeanError, match=r"--table .*t: no such file; build it with fairseq-wean-align-table"):
        read_table(str(table))
    for content, message in ((b"a\tb\t1\n\na\tc\n", "line 3 is malformed"), (b"a\tb\tx\n", "line 1 is malformed"),
                             (b"a\t\t1\n", "line 1 is malformed"), (b"a\tb\t1\n\xff\tb\t1\n", "line 2 is not UTF-8")):
        table.write_bytes(content)
        with pytest.raises(FairseqWeanError, match=message):
            read_table(str(table))
    table.write_bytes(b"a\tb\t1\r\n\na\tc\t0.5\n")
    assert read_table(str(table)) == {"a": ["b", "c"]}


def test_dict_reads_a_fairseq_dictionary_and_refuses_a_malformed_one(tmp_path):
    path = tmp_path / "dict.src.txt"
    path.write_text("the 10\n<unk-0> 0 #fairseq:overwrite\nword with space 3\nbig 2\n")
    assert dictionary_words(str(path)) == ["the", "<unk-0>", "word with space", "big"]  # file order
    path.write_text("the 10\nbroken\n")
    with pytest.raises(Exception, match=r"--dict .*dict.src.txt line 2: expected 'WORD COUNT'"):
        dictionary_words(str(path))


def test_words_outside_dict_are_aligned_as_unk_and_never_written(corpus):
    """--dict: 'dog' and 'red' are outside the dictionary; they are aligned as <unk> (the other words
    keep their links) and no pair names them or <unk>."""
    (corpus / "dict.txt").write_text("".join("{} 2\n".format(w) for w in
                                             ["the", "big", "car", "a", "house", "large"]))
    out = corpus / "table.txt"
    align_table.cli_main(["--src", str(corpus / "train.src"), "--tgt", str(corpus / "train.tgt"),
                          "--dict", str(corpus / "dict.txt"), "--topk", "3", "--out", str(out)])
    table = read_table(str(out))
    words = {w for s, targets in table.items() for w in [s] + targets}
    assert words <= {"the", "big", "car", "a", "house", "large"} and table["big"][0] == "large"
