"""Every metric's work is bounded per input, not per line: all sentences x all references x all systems
scored (probe B07, B08, B10, B12, D23, D24, E06), and refused BEFORE any work, with the metric's core
patched to fail if it is called. A metric added to metrics.METRICS without a crafted input here fails
test_every_metric_is_classified; an entry point that scores without metrics.check_input_size fails
test_over_the_total_bound_is_refused_before_any_metric_runs."""
import argparse

import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import scores

# metric -> (hyps, refs) just over its bound, the start of the one-line refusal
REPEATED = " ".join("w{}".format(i % 50) for i in range(200))
BOUNDED = {
    "rougeL": ([" ".join(["a"] * 3000)] * 6, "rougeL: these 6 sentences need about 54,000,120 units of work"),
    "ter": ([REPEATED] * 40, "ter: these 40 sentences need about "),
    "fkgl": (["a" * (M.MAX_WORD_CHARACTERS + 1)], "FKGL: line 1 of the output has a 'word' of 1,001 characters"),
}
LINEAR = ("bleu", "chrf", "sari", "rouge1", "rouge2", "stats")


def test_every_metric_is_classified():
    assert sorted(BOUNDED) + sorted(LINEAR) and set(BOUNDED) | set(LINEAR) == set(M.METRICS)
    assert set(M.QUADRATIC_METRICS) <= set(BOUNDED)
    assert set(M.MAX_WORK) == set(M.METRICS) and set(CRAFTED) == set(M.METRICS) | {"chrf-memory"}


@pytest.mark.parametrize("entry", ["score", "sentence_scores", "fairseq-scorer"])
@pytest.mark.parametrize("metric", sorted(BOUNDED))
def test_over_the_bound_is_refused_before_any_work(monkeypatch, metric, entry):
    hyps, expected = BOUNDED[metric]
    metrics_fail(monkeypatch)
    if entry != "score" and metric != "rougeL":
        pytest.skip("per sentence and in fairseq-generate --scoring rouge: only rougeL of these")
    with pytest.raises(FairseqWeanError) as e:
        if entry == "fairseq-scorer":  # fairseq-generate --scoring rouge (validation: the same function per batch)
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


def metrics_fail(monkeypatch):
    """Every metric's core (and the report's sentence BLEU) fails the test if it is reached."""
    def called(*args, **kwargs):
        raise AssertionError("a metric ran before the bound on the input's work was checked")

    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU, CHRF, TER
    for cls in (BLEU, CHRF, TER):
        monkeypatch.setattr(cls, "_extract_corpus_statistics", called)
    monkeypatch.setattr(BLEU, "sentence_score", called)
    monkeypatch.setattr(rouge_scorer.RougeScorer, "score", called)
    monkeypatch.setattr(rouge_scorer.RougeScorer, "score_multi", called)
    monkeypatch.setattr(M.sari_lib, "corpus_stats", called)
    monkeypatch.setattr(M, "_textstat", called)
    monkeypatch.setattr(M, "output_stats_rows", called)


# ------------------------------------------------------------------------------------ whole input
WORDS = "the cat sat on the mat and the dog ran after it "
LINE = (WORDS * 21)[:1000].strip()  # 1,000 characters of words
TER_LINE = " ".join("w{}".format(i % 10) for i in range(60))  # repetitive: 360 shift candidates
# case -> (hyp line, reference line, sentences): the same line object repeated, built in memory
CRAFTED = {m: (LINE, LINE, 100) for m in LINEAR}
CRAFTED.update({"chrf": (LINE, "the cat", 100),  # long outputs, short references: the work bound, not memory
                "chrf-memory": (LINE, LINE, 100),  # the references' n-gram statistics
                "ter": (TER_LINE, TER_LINE, 3), "rougeL": (" ".join(["a"] * 300),) * 2 + (10,),
                "fkgl": (LINE, "the cat", None)})


def crafted(case, systems):
    """(metric, hyps, references, expected start, limit): the fewest references (FKGL: sentences) over
    the case's bound for ``systems`` outputs; one reference (sentence) fewer is under it."""
    metric = "chrf" if case == "chrf-memory" else case
    hyp, ref, n = CRAFTED[case]
    if case == "fkgl":
        n = M.MAX_WORK["fkgl"] // (systems * (len(hyp) + M.PAIR_UNITS)) + 1
        k = 1
    elif case == "chrf-memory":
        k = M.MAX_CHRF_BYTES // (M.CHRF_BYTES_PER_CHARACTER * n * len(ref)) + 1
    else:
        k = M.MAX_WORK[metric] // (systems * M.input_work(metric, [hyp] * n, [[ref] * n], [hyp] * n)) + 1
    hyps, refs = [hyp] * n, [[ref] * n] * k
    shape = "{}: these {:,} sentences{}{}".format(metric, n, " x {} references".format(k) if k > 1 else "",
                                                  " x {} systems".format(systems) if systems > 1 else "")
    assert k > 1 or case == "fkgl", "a bound this test meets with one reference: make CRAFTED's lines shorter"
    under = (hyps[1:], [r[1:] for r in refs]) if case == "fkgl" else (hyps, refs[1:])
    M.check_line_lengths(metric, *under, orig_sents=under[0], systems=systems)  # one fewer: scored
    return metric, hyps, refs, shape + " need about "


SYSTEMS = {"score": 1, "compare": 2, "sentence_scores": 1, "report": 2}
PER_SENTENCE = {"bleu": None, "sari": "sari", "rougeL": "rougeL"}  # sentence_scores: BLEU always, and its metric


@pytest.mark.parametrize("entry", sorted(SYSTEMS))
@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_over_the_total_bound_is_refused_before_any_metric_runs(monkeypatch, case, entry):
    """Many references (or, for FKGL, sentences) over the bound, each reference alone far under it: refused in
    one line naming the metric, the input's shape, the estimate and the limit, before any metric runs."""
    if entry == "sentence_scores" and case not in PER_SENTENCE:
        pytest.skip("sentence_scores computes BLEU, SARI and ROUGE-L only")
    metric, hyps, refs, expected = crafted(case, SYSTEMS[entry])
    metrics_fail(monkeypatch)
    with pytest.raises(FairseqWeanError) as e:
        if entry == "sentence_scores":
            scores.sentence_scores(hyps, sources=hyps, references=refs, metric=PER_SENTENCE[case])
        elif entry == "report":
            from fairseq_wean.report import build
            systems = [build.SystemOutput(name, name, list(hyps)) for name in ("a", "b")]
            build.build_report(systems, hyps, refs, metrics=[metric])
        else:
            scores.score(hyps, sources=hyps, references=refs, metrics=[metric],
                         compare_to=list(hyps) if entry == "compare" else None)
    message = str(e.value)
    limit = M.MAX_CHRF_BYTES >> 20 if case == "chrf-memory" else M.MAX_WORK[metric]
    assert message.startswith(expected) and "more than the {:,} ".format(limit) in message, message
    assert ("fewer references" in message) == (case != "fkgl") and "\n" not in message, message


@pytest.mark.parametrize("tool", ["fairseq-wean-score", "fairseq-wean-report"])
@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_the_tools_refuse_before_any_metric_runs(tmp_path, monkeypatch, capsys, case, tool):
    """Both tools, through their files: the bound (lowered here, so that a few lines are over it) is checked
    before any metric, exit status 1, one line, no page written."""
    metric = "chrf" if case == "chrf-memory" else case
    hyps = ["the cat sat on the mat", "a dog ran after it", "the bird sang", "it rained all day"]
    refs = [hyps[::-1], hyps, hyps[1:] + hyps[:1]]
    for name, lines in [("sys", hyps), ("orig", hyps)] + [("ref{}".format(k), r) for k, r in enumerate(refs)]:
        (tmp_path / (name + ".txt")).write_text("".join(line + "\n" for line in lines))
    work = M.input_work(metric, hyps, [] if metric == "fkgl" else refs, hyps)
    if case == "chrf-memory":
        monkeypatch.setattr(M, "MAX_CHRF_BYTES", M.CHRF_BYTES_PER_CHARACTER * sum(map(len, hyps)) * 2)
    else:
        monkeypatch.setitem(M.MAX_WORK, metric, work * 6 // 10)
    metrics_fail(monkeypatch)
    out = tmp_path / "page.html"
    refs_args = ["--refs"] + [str(tmp_path / "ref{}.txt".format(k)) for k in range(3)]
    orig_args = ["--orig", str(tmp_path / "orig.txt")]
    if tool == "fairseq-wean-score":
        from fairseq_wean.cli.score import cli_main
        argv = (["--sys", str(tmp_path / "sys.txt"), "--metrics", metric] +
                (orig_args if metric in M.READS_SOURCES else []) + (refs_args if metric != "fkgl" else []))
    else:
        from fairseq_wean.cli.report import cli_main
        argv = ["--sys", str(tmp_path / "sys.txt"), "--metrics", metric, "--out", str(out)] + orig_args + refs_args
    with pytest.raises(SystemExit) as e:
        cli_main(argv)
    err = e.value.code  # sys.exit(message): the message on stderr, exit status 1
    assert isinstance(err, str) and capsys.readouterr().out == "" and not out.exists()
    assert err.startswith("{}: error: {}: these 4 sentences".format(tool, metric)) and "\n" not in err, err


def test_real_benchmarks_are_under_the_bounds():
    """The sizes of the real test sets (sentences x references, characters a line: output, reference, source)
    score with every metric, with a margin of 2: TurkCorpus (8 references), ASSET (10), IWSLT'14 de-en test,
    Gigaword test, Multi30k test. TER is bounded lower (it takes ~1 us a unit): ASSET valid and TurkCorpus tune
    (2,000 sentences x 8-10 references) are over it, their test sets (359 sentences) under it."""
    benchmarks = {"turkcorpus test": (359, 8, 120, 113, 120), "turkcorpus tune": (2000, 8, 113, 113, 121),
                  "asset test": (359, 10, 110, 105, 120), "asset valid": (2000, 10, 117, 105, 117),
                  "iwslt14 test": (6750, 1, 106, 97, 106), "gigaword test": (1951, 1, 50, 50, 200),
                  "multi30k test": (1000, 1, 62, 62, 62)}
    vocabulary = ["".join(chr(97 + (7 * i + 3 * j) % 26) for j in range(3 + i % 5)) for i in range(2000)]

    def text(chars, seed):  # about ``chars`` characters of words, little repeated (TER's shift candidates)
        words, length = [], -1
        while length < chars:
            words.append(vocabulary[(seed * 31 + len(words) * 17) % len(vocabulary)])
            length += 1 + len(words[-1])
        return " ".join(words)

    for name, (n, k, hyp, ref, src) in benchmarks.items():
        hyps = [text(hyp, i) for i in range(n)]
        refs = [[text(ref, i + 7 * j) for i in range(n)] for j in range(k)]
        sources = [text(src, i + 3) for i in range(n)]
        for metric in M.METRICS:
            if metric == "ter" and k > 1 and n > 1000:
                continue
            M.check_line_lengths(metric, hyps, refs, orig_sents=sources, systems=2)  # a comparison of two systems


def test_work_estimates_against_hand_counts():
    assert M.metric_work("rougeL", [["a", "b"], ["c"]], [[["a"], ["c", "d", "e"]]]) == 2 * 1 + 1 * 3
    # TER: hyp length x min(ref + 1, 51) x shift candidates (equal words within 50 positions; at least 1)
    assert M.ter_line_work("a b a".split(), "a c".split()) == 3 * 3 * 2
    assert M.ter_line_work(["x"] * 60, ["x"] * 60) == 60 * 51 * 1000
    assert M.metric_work("ter", [["x"]], [[["y"]]]) == 1 * 2 * 1
    # past the limit, the streams counted so far extrapolated to all: 2 cells a stream, 4 streams
    assert M.metric_work("rougeL", [["a", "b"]], iter([[["c"]]] * 4), limit=(1, 4)) == 2 * 4
    assert M.metric_work("rougeL", [["a", "b"]], iter([[["c"]]] * 4), limit=(100, 4)) == 2 * 4
    # every other metric: the characters read per (sentence, reference) pair + PAIR_UNITS a pair
    hyps, refs, src = ["ab", "c"], [["xyz", ""], ["q", "rs"]], ["s", "tt"]
    pairs = 2 * M.PAIR_UNITS * 2
    assert M.input_work("bleu", hyps, refs, src) == pairs + 2 * 3 + 3 + 3
    assert M.input_work("sari", hyps, refs, src) == pairs + 2 * (3 + 3) + 3 + 3
    assert M.input_work("fkgl", hyps, refs, src) == 2 * M.PAIR_UNITS + 3
    assert M.input_work("rougeL", ["a b"], [["a b c"], ["d"]]) == 2 * M.PAIR_UNITS + 2 * 3 + 2 * 1


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
