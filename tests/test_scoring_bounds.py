"""Every metric's work is bounded per input, not per line, and refused BEFORE any work (probe B07, B08,
B10, B12): inputs just over each bound, with the metric's core patched to fail if it is called. A metric
added to metrics.METRICS without a bound in BOUNDED or LINEAR fails test_every_metric_is_classified."""
import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import scores

# metric -> (hyps, refs) just over its bound, the start of the one-line refusal
REPEATED = " ".join("w{}".format(i % 50) for i in range(200))
BOUNDED = {
    "rougeL": ([" ".join(["a"] * 3000)] * 6, "rougeL: these 6 sentences need about 54,000,000 units of work"),
    "ter": ([REPEATED] * 40, "ter: these 40 sentences need about "),
    "fkgl": (["a" * (M.MAX_WORD_CHARACTERS + 1)], "FKGL: line 1 of the output has a 'word' of 1,001 characters"),
}
LINEAR = ("bleu", "chrf", "sari", "rouge1", "rouge2", "stats")


def test_every_metric_is_classified():
    assert sorted(BOUNDED) + sorted(LINEAR) and set(BOUNDED) | set(LINEAR) == set(M.METRICS)
    assert set(M.QUADRATIC_METRICS) <= set(BOUNDED)


@pytest.mark.parametrize("entry", ["score", "sentence_scores", "fairseq-scorer"])
@pytest.mark.parametrize("metric", sorted(BOUNDED))
def test_over_the_bound_is_refused_before_any_work(monkeypatch, metric, entry):
    hyps, expected = BOUNDED[metric]

    def called(*args, **kwargs):
        raise AssertionError("the metric ran before the bound was checked")

    from rouge_score import rouge_scorer
    from sacrebleu.metrics import TER
    monkeypatch.setattr(TER, "_extract_corpus_statistics", called)
    monkeypatch.setattr(rouge_scorer.RougeScorer, "score", called)
    monkeypatch.setattr(M, "_textstat", called)
    if entry != "score" and metric != "rougeL":
        pytest.skip("per sentence and in fairseq-generate --scoring rouge: only rougeL of these")
    with pytest.raises(FairseqWeanError) as e:
        if entry == "fairseq-scorer":  # fairseq-generate --scoring rouge (validation: the same function per batch)
            import argparse
            from fairseq_wean.scoring.rouge import RougeScorer
            scorer = RougeScorer(argparse.Namespace(rouge_chars=False, rouge_no_stemmer=False))
            for hyp in hyps:
                scorer.add_string(hyp, hyp)
            scorer.result_string()
        elif entry == "score":
            scores.score(hyps, sources=hyps, references=[hyps], metrics=["bleu", metric])
        else:
            scores.sentence_scores(hyps, sources=hyps, references=[hyps], metric=metric)
    assert str(e.value).startswith(expected) and "\n" not in str(e.value), str(e.value)


def test_work_estimates_against_hand_counts():
    assert M.metric_work("rougeL", [["a", "b"], ["c"]], [[["a"], ["c", "d", "e"]]]) == 2 * 1 + 1 * 3
    # TER: hyp length x min(ref + 1, 51) x shift candidates (equal words within 50 positions)
    assert M.ter_line_work("a b a".split(), "a c".split()) == 3 * 3 * 2
    assert M.ter_line_work(["x"] * 60, ["x"] * 60) == 60 * 51 * 1000
    assert M.metric_work("ter", [["x"]], [[["y"]]]) == 0


def test_a_corpus_under_the_bounds_is_scored():
    """TurkCorpus-sized natural input is not refused (a bound must not refuse an ordinary test set)."""
    hyps = ["the cat sat on the mat , and the dog ran after it in the garden ."] * 400
    refs = ["the cat sat on a mat and the dog ran after it in a garden ."] * 400
    for metric in ("rougeL", "ter"):
        M.check_line_lengths(metric, hyps, [refs] * 8)


def test_unsegmented_share_is_a_share():
    """Thai vowel signs are marks, not letters: the share of a Thai text is 100%, not 114%."""
    thai = ["ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ"] * 3
    share, per_token, _ = M.unsegmented_share(thai)
    assert share == 1.0 and per_token == len(thai[0])
    with pytest.raises(FairseqWeanError, match=r"\(100% of the letters"):
        scores.score(thai, references=[thai], metrics=["ter"])


def test_stats_on_unsegmented_text_is_refused():
    zh = ["我们的国家今天很好人民生活"] * 5
    with pytest.raises(FairseqWeanError, match="^stats counts words, and the output are in a script"):
        scores.score(zh, sources=zh, references=[zh], metrics=["stats"])
    assert scores.score(["我 们 的 国 家"], sources=["我 们"], metrics=["stats"])["stats"]["avg_len"] == 5


@pytest.mark.parametrize("text", ["bleu,,chrf", ",bleu", "bleu,"])
def test_an_empty_metrics_item_is_refused(text):
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match="has an empty item"):
        scores.parse_metrics(text)
    with pytest.raises(FairseqWeanError, match="has an empty item"):
        scores.score(["a"], references=[["a"]], metrics=text)
