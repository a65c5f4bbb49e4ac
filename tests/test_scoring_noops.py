"""Options that change nothing, or whose data is wrong, are refused before any work, at every entry point
(probe B38, B42, B84, B92, B135): fairseq-wean-score, fairseq-wean-report, the library, fairseq's
``--scoring rouge`` scorer, and fairseq-generate's start (the references of --gen-subset, before decoding)."""
import argparse

import pytest

from fairseq_wean.cli import report as report_cli
from fairseq_wean.cli import score as score_cli
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import scores


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in (("sys", "the cat sat\n"), ("ref", "the cat sat\n"), ("orig", "the cat sat down\n")):
        paths[name] = tmp_path / (name + ".txt")
        paths[name].write_text(text, encoding="utf-8")
    paths["out"] = tmp_path / "page.html"
    return paths


def _score(files, *extra):
    # no --orig: no metric of these cases reads the sources (fairseq-wean-score refuses it there)
    return score_cli.main(["--sys", str(files["sys"]), "--refs", str(files["ref"]), *extra])


def _report(files, *extra):
    return report_cli.main(["--sys", str(files["sys"]), "--refs", str(files["ref"]), "--orig", str(files["orig"]),
                            "--out", str(files["out"]), *extra])


# (options, the start of the error): argparse's usage error (exit 2) or a FairseqWeanError
NOOPS = {
    "post-process-none": (["--metrics", "bleu", "--post-process", "none"], 2, "'none' changes nothing"),
    "metrics-empty-item": (["--metrics", "bleu,,chrf"], 2, "'bleu,,chrf' has an empty item"),
    "rouge-chars-no-stemmer": (["--metrics", "rougeL", "--rouge-chars", "--rouge-no-stemmer"], None,
                               "--rouge-no-stemmer has no effect with --rouge-chars"),
}


@pytest.mark.parametrize("tool", ["score", "report"])
@pytest.mark.parametrize("case", sorted(NOOPS))
def test_a_no_op_option_is_refused_before_reading(files, capsys, monkeypatch, case, tool):
    argv, status, expected = NOOPS[case]
    from fairseq_wean.scoring import inputs
    monkeypatch.setattr(inputs, "read_system", lambda *a, **k: pytest.fail("read the input before refusing"))
    run = _score if tool == "score" else _report
    if status is not None:
        with pytest.raises(SystemExit) as e:
            run(files, *argv)
        assert e.value.code == status and expected in capsys.readouterr().err
    else:
        with pytest.raises(FairseqWeanError, match="^" + expected):
            run(files, *argv)
    assert not files["out"].exists()


def test_the_library_and_fairseq_scorer_refuse_the_same():
    with pytest.raises(FairseqWeanError, match="rouge_stemmer=False has no effect with rouge_chars"):
        scores.score(["好"], references=[["好"]], metrics=["rougeL"], rouge_chars=True, rouge_stemmer=False)
    with pytest.raises(FairseqWeanError, match="rouge_stemmer=False has no effect"):
        scores.sentence_scores(["好"], references=[["好"]], metric="rougeL", rouge_chars=True, rouge_stemmer=False)
    from fairseq_wean.scoring.rouge import RougeScorer
    with pytest.raises(FairseqWeanError, match="^--rouge-no-stemmer has no effect with --rouge-chars"):
        RougeScorer(argparse.Namespace(rouge_chars=True, rouge_no_stemmer=True))
    assert RougeScorer(argparse.Namespace(rouge_chars=True, rouge_no_stemmer=False)).chars


def _task_and_dataset(lines):
    import torch
    from fairseq.data import Dictionary

    dictionary = Dictionary()
    for line in lines:
        for word in line.split():
            dictionary.add_symbol(word)
    targets = [torch.tensor([dictionary.index(w) for w in line.split()] + [dictionary.eos()]) for line in lines]
    return argparse.Namespace(target_dictionary=dictionary), argparse.Namespace(tgt=targets)


def _cfg(post_process=None, scoring=None, rouge_chars=False):
    scoring_cfg = argparse.Namespace(_name=scoring, rouge_chars=rouge_chars) if scoring else None
    return argparse.Namespace(common_eval=argparse.Namespace(post_process=post_process), scoring=scoring_cfg,
                              dataset=argparse.Namespace(gen_subset="test"),
                              generation=argparse.Namespace(prefix_size=0))


WORDS = ["the cat sat on the mat", "a dog ran"]
BPE = ["the c@@ at sat on the mat", "a d@@ og ran"]
SPM = ["\u2581the \u2581c at \u2581sat", "\u2581a \u2581dog"]
ZH = ["我们的国家今天很好", "人民生活幸福快乐"]
# (references, --post-process, --scoring, --rouge-chars) -> the start of the refusal, or None (accepted)
GENERATE = {
    "rouge-chars-on-latin": (WORDS, None, "rouge", True, "ROUGE by character reads no spaces"),
    "rouge-words-on-chinese": (ZH, None, "rouge", False, "ROUGE by words keeps only a-z"),
    "spm-rule-on-words": (WORDS, "sentencepiece", "bleu", False, "--post-process sentencepiece deletes every space"),
    "bpe-rule-on-words": (WORDS, "subword_nmt", "bleu", False, "--post-process subword_nmt removes '@@'"),
    "spm-rule-on-bpe": (BPE, "sentencepiece", "rouge", False, "--post-process sentencepiece deletes every space"),
    "rouge-after-post-process": (SPM, "sentencepiece", "rouge", True, "ROUGE by character reads no spaces"),
    "bpe-rule-on-bpe": (BPE, "subword_nmt", "rouge", False, None),
    "spm-rule-on-spm": (SPM, "sentencepiece", "rouge", False, None),
    "rouge-chars-on-chinese": (ZH, None, "rouge", True, None),
    "no-rule-words-bleu": (WORDS, None, "bleu", False, None),
}


@pytest.mark.parametrize("case", sorted(GENERATE))
def test_generate_checks_its_options_against_the_references_before_decoding(case):
    from fairseq_wean.fixes_decoding import check_generate_data

    lines, post_process, scoring, chars, expected = GENERATE[case]
    task, dataset = _task_and_dataset(lines)
    cfg = _cfg(post_process, scoring, chars)
    if expected is None:
        check_generate_data(cfg, task, dataset, "test")
        return
    with pytest.raises(FairseqWeanError) as e:
        check_generate_data(cfg, task, dataset, "test")
    assert str(e.value).startswith(expected) and "\n" not in str(e.value), str(e.value)


def test_generate_runs_the_check_at_its_first_batch_iterator(monkeypatch):
    """The hook: fairseq-generate's _main records its cfg; the installed FairseqTask.get_batch_iterator checks
    the subset it is given (before the first batch is decoded), once per run, and nothing outside a run."""
    from fairseq.tasks import FairseqTask

    import fairseq_wean  # noqa: F401  (installs the patches)
    from fairseq_wean import fixes_decoding

    task, dataset = _task_and_dataset(WORDS)
    monkeypatch.setattr(fixes_decoding, "_GENERATE_RUN", [_cfg(None, "rouge", True)])
    with pytest.raises(FairseqWeanError, match="^ROUGE by character reads no spaces"):
        FairseqTask.get_batch_iterator(task, dataset)
    assert fixes_decoding._GENERATE_RUN == [None]  # checked once
    monkeypatch.setattr(fixes_decoding, "_GENERATE_RUN", [])
    with pytest.raises(Exception) as e:  # outside fairseq-generate: fairseq's own method on a stand-in task
        FairseqTask.get_batch_iterator(task, dataset)
    assert not isinstance(e.value, FairseqWeanError)
