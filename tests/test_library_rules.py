"""Probe B G3/G4: the library entries (scoring.score, report.build.build_report) enforce the CLI's
ranges and no-op rules (metrics.check_bootstrap, one home), and the bootstrap's work is bounded."""
import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring.scores import score

H, R = ["a b c", "d e f"], [["a b c", "d e g"]]
LIB = {
    "bs0": (dict(compare_to=R[0], bootstrap_samples=0), "bootstrap_samples must be an integer from 1 to 100000"),
    "bsneg": (dict(compare_to=R[0], bootstrap_samples=-5), "bootstrap_samples must be an integer from 1 to 100000"),
    "bsbool": (dict(compare_to=R[0], bootstrap_samples=True), "bootstrap_samples must be an integer from 1 to 100000"),
    "bsfloat": (dict(compare_to=R[0], bootstrap_samples=2.5), "bootstrap_samples must be an integer from 1 to 100000"),
    "bshuge": (dict(compare_to=R[0], bootstrap_samples=10 ** 9), "bootstrap_samples must be an integer from 1 to"),
    "bs_nocompare": (dict(bootstrap_samples=50), "bootstrap_samples has no effect without a second system"),
    "rougechars_norouge": (dict(rouge_chars=True), "rouge_chars changes only ROUGE"),
    "metric_twice": (dict(metrics="bleu,bleu"), "metric(s) bleu named more than once"),
}


@pytest.mark.parametrize("case", sorted(LIB))
def test_library_refuses(case):
    kwargs, expected = LIB[case]
    kwargs = dict(dict(metrics="bleu"), **kwargs)
    with pytest.raises(FairseqWeanError) as e:
        score(H, references=R, **kwargs)
    assert str(e.value).startswith(expected), str(e.value)


def test_library_default_still_works():
    hyps, refs = ["a b c d", "d e f g"], [["a b c d", "d e g h"]]  # 4 tokens: BLEU-4 can tell systems apart
    assert score(hyps, references=refs, metrics="bleu", compare_to=refs[0])["p_values"]["bleu"] > 0


def test_bootstrap_work_is_bounded_before_scoring():
    n = M.MAX_BOOTSTRAP_DRAWS // M.BOOTSTRAP_SAMPLES + 1
    with pytest.raises(FairseqWeanError, match=r"^paired bootstrap of {} sentences x 1000 resamples".format(n)):
        M.check_bootstrap(None, n)
    assert M.check_bootstrap(None, n - 1) == 1000


@pytest.mark.parametrize("tool,argv,expected", [
    ("score", ["--metrics", "bleu", "--bootstrap-samples", "50"], "--bootstrap-samples sets the paired bootstrap"),
    ("score", ["--metrics", "bleu", "--name", ""], "--name '' is empty"),
    ("score", ["--metrics", "bleu", "--compare-to", "R", "--compare-name", " "], "--compare-name ' ' is empty"),
    ("report", ["--out", "o.html", "--bootstrap-samples", "50"], "--bootstrap-samples sets the paired bootstrap"),
])
def test_cli_no_op_and_empty(tool, argv, expected, tmp_path):
    from fairseq_wean.cli import report, score as score_cli
    (tmp_path / "H").write_text("a b\n"), (tmp_path / "R").write_text("a b\n")
    argv = ["--sys", str(tmp_path / "H"), "--refs", str(tmp_path / "R")] + [
        str(tmp_path / a) if a in ("R", "o.html") else a for a in argv]
    mod = score_cli if tool == "score" else report
    with pytest.raises(FairseqWeanError) as e:
        parser = mod.get_parser()
        args = parser.parse_args(argv)
        if tool == "score":
            mod.check_options(parser, args)
        else:
            from fairseq_wean.cli import options
            options.check_effective(parser, args, always=mod.ALWAYS)
    assert str(e.value).startswith(expected), str(e.value)


# --------------------------------------------------------------------------------------------- G8: ROUGE's dropped words
MIX_REF = ["the big house and small car went home привет мир"] * 4
MIX_SYS = ["the big house and small car went home пока друг"] * 4


@pytest.mark.parametrize("side,sys_sents,refs,expected", [
    ("reference", ["the big house"] * 4, MIX_REF, "ROUGE drops 20.0% of the references' words (non a-z: 8 of 40"),
    ("output", MIX_SYS, [["the big house and small car went home"] * 4], "ROUGE drops 20.0% of the outputs' words"),
    ("accented-only", ["é x"] * 4, [["a b"] * 4], "ROUGE drops 50.0% of the outputs' words"),
])
@pytest.mark.parametrize("rtype", M.ROUGE_TYPES)
def test_rouge_refuses_words_it_would_drop(side, sys_sents, refs, expected, rtype):
    refs = refs if isinstance(refs[0], list) else [refs]
    with pytest.raises(FairseqWeanError) as e:
        M.rouge_sentence_scores(sys_sents, refs, (rtype,))
    assert str(e.value).startswith(expected), str(e.value)
    with pytest.raises(FairseqWeanError, match="^ROUGE drops"):  # the library entry, through build_metrics
        score(sys_sents, references=refs, metrics=rtype)


def test_rouge_keeps_punctuation_and_latin():
    assert M.rouge_sentence_scores(["the cat , sat ."], [["the cat sat ."]], ("rouge1",))["rouge1"][0] == 100.0
