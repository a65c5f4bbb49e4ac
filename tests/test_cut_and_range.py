"""A cut or inconsistent input is an error, not a score; a number out of range is an error before
any work (issue 57, classes 4 and 5, for the inputs named here).

* Every reader of fairseq-generate logs (``fairseq-wean-score``, ``fairseq-wean-report``, the
  comparison runner's ``extract_outputs``) goes through ``GenerateLog``, which refuses a log with
  ``T-`` lines but no final ``Generate ... with beam=`` line (a log cut in the middle of its last
  ``H-`` line used to be scored as complete).
* A file given as a fairseq dictionary is read by the one dictionary reader
  (``data.dictionary.dictionary_words``): ``unk_markers encode --vocab`` with a text file used to turn
  every word into a marker.
* Counts that cannot be negative or zero take ``errors.at_least``.
"""
import pytest

from conftest import cli
from fairseq_wean.errors import FairseqWeanError
from test_scorer import GEN_LOG


def cut_log(tmp_path):
    text = GEN_LOG[: GEN_LOG.index("H-1\t-0.40\tbirds") + len("H-1\t-0.40\tbi")]  # cut inside the last H- line
    path = tmp_path / "cut.log"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("tool", ["fairseq-wean-score", "fairseq-wean-report"])
def test_a_cut_log_is_refused_by_every_reader(tool, tmp_path):
    log = cut_log(tmp_path)
    extra = ["--metrics", "bleu"] + (["--out", tmp_path / "r.html"] if tool.endswith("report") else [])
    proc = cli(tool, "--sys", log, *extra, check=False)
    assert proc.returncode == 1 and "is incomplete" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()
    complete = tmp_path / "complete.log"
    complete.write_text(GEN_LOG, encoding="utf-8")
    assert cli(tool, "--sys", complete, *extra, check=False).returncode == 0


def test_a_cut_log_is_refused_by_the_comparison_runner(tmp_path):
    from fairseq_wean.compare.evaluate import extract_outputs

    src = tmp_path / "src"
    src.write_text("a\nb\nc\nd\n")
    with pytest.raises(FairseqWeanError, match="is incomplete"):
        extract_outputs(str(cut_log(tmp_path)), str(src), str(tmp_path / "out"), with_replace_unk=False)


def test_unk_markers_refuses_a_vocab_that_is_not_a_dictionary(tmp_path):
    (tmp_path / "vocab.txt").write_text("the\ncat\n")  # words, no counts: not a fairseq dictionary
    (tmp_path / "s").write_text("the cat\n")
    proc = cli("python", "-m", "preprocess.unk_markers", "encode", "--vocab", tmp_path / "vocab.txt",
               "--src", tmp_path / "s", "--src-out", tmp_path / "s.out", check=False)
    assert proc.returncode == 1 and "expected 'WORD COUNT'" in proc.stderr
    assert not (tmp_path / "s.out").exists()


@pytest.mark.parametrize("args,flag", [
    (["fairseq-wean-score", "--sys", "x", "--metrics", "bleu", "--bootstrap-samples", "0"], "--bootstrap-samples"),
    (["fairseq-wean-report", "--sys", "x", "--out", "y.html", "--bootstrap-samples", "-5"], "--bootstrap-samples"),
    (["python", "-m", "preprocess.unk_markers", "vocab", "--src", "a", "--tgt", "b", "--out", "c", "--markers", "-5"],
     "--markers"),
    (["python", "-m", "preprocess.unk_markers", "vocab", "--src", "a", "--tgt", "b", "--out", "c", "--min-count", "0"],
     "--min-count"),
])
def test_counts_out_of_range_are_refused_before_any_work(args, flag, tmp_path):
    proc = cli(*args, check=False)
    assert proc.returncode == 2 and "argument {}: must be >=".format(flag) in proc.stderr


@pytest.mark.parametrize("tool", ["fairseq-wean-score", "fairseq-wean-report"])
def test_an_unknown_bleu_tokenization_is_refused_before_any_work(tool):
    """A KeyError traceback from sacrebleu before (issue 57, class 6)."""
    extra = ["--out", "never.html"] if tool.endswith("report") else []
    proc = cli(tool, "--sys", "x", "--metrics", "bleu", "--bleu-tokenize", "bogus", *extra, check=False)
    assert proc.returncode == 2 and "unknown BLEU tokenization 'bogus': choose one of" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_run_named_twice_is_refused(tmp_path):
    """fairseq-wean-compare --runs lstm:word,lstm:word started both into one folder, clobbered
    train.log and ended in a traceback (issue 57, class 7)."""
    proc = cli("fairseq-wean-compare", "translation", tmp_path, "--runs", "lstm:word,lstm:word", "--out",
               tmp_path / "out", check=False)
    assert proc.returncode == 2 and "--runs names lstm:word twice" in proc.stderr
    assert not (tmp_path / "out").exists()
