"""Every metric's work is bounded per input, not per line: all sentences x all references x all systems
scored (probe B07, B08, B10, B12, D23, D24, E06), and refused BEFORE any work, with the metric's core
patched to fail if it is called. A metric added to metrics.METRICS without a crafted input here fails
test_every_metric_is_classified; an entry point that scores without metrics.check_input_size fails
test_over_the_total_bound_is_refused_before_any_metric_runs. The bounds live in scoring/bounds.py (metrics re-exports
them): a test that lowers one patches bounds, where the checks read it."""
import argparse

import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import bounds
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import scores

# TER's adversary: blocks of 10 words swapped pairwise (B1 A1 B2 A2 ... against A1 B1 A2 B2 ...), every
# block a shift candidate within reach: sacrebleu's search checks its 1,000 candidates (0.7 s a pair here)
SWAP_HYP = " ".join(" ".join("{}{}_{}".format(c, b, i) for c in "ba" for i in range(10)) for b in range(8))
SWAP_REF = " ".join(" ".join("{}{}_{}".format(c, b, i) for c in "ab" for i in range(10)) for b in range(8))


def swapped_over_the_bound():
    n = M.MAX_WORK["ter"] // M.input_work("ter", [SWAP_HYP], [[SWAP_REF]]) + 1
    return [SWAP_HYP] * n, [[SWAP_REF] * n], "ter: these {:,} sentences need about ".format(n)


# metric -> (hyps, refs, the start of the one-line refusal): just over its bound
REPEATED = " ".join("w{}".format(i % 50) for i in range(200))
BOUNDED = {
    "rougeL": ([" ".join(["a"] * 3000)] * 6, None, "rougeL: these 6 sentences need about 54,000,120 units of work"),
    "ter": swapped_over_the_bound(),
    "fkgl": (["a" * (M.MAX_WORD_CHARACTERS + 1)], None, "FKGL: line 1 of the output has a 'word' of 1,001 characters"),
}
LINEAR = ("bleu", "chrf", "sari", "rouge1", "rouge2", "stats")


def test_every_metric_is_classified():
    assert sorted(BOUNDED) + sorted(LINEAR) and set(BOUNDED) | set(LINEAR) == set(M.METRICS)
    assert set(M.QUADRATIC_METRICS) <= set(BOUNDED)
    assert set(M.MAX_WORK) == set(M.METRICS) and set(CRAFTED) == set(M.METRICS) | {"chrf-memory"}


@pytest.mark.parametrize("entry", ["score", "sentence_scores", "fairseq-scorer"])
@pytest.mark.parametrize("metric", sorted(BOUNDED))
def test_over_the_bound_is_refused_before_any_work(monkeypatch, metric, entry):
    hyps, refs, expected = BOUNDED[metric]
    refs = refs or [hyps]
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
            scores.score(hyps, sources=hyps, references=refs, metrics=["bleu", metric])
        else:
            scores.sentence_scores(hyps, sources=hyps, references=refs, metric=metric)
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
# case -> (hyp line, reference line, sentences): the same line object repeated, built in memory
CRAFTED = {m: (LINE, LINE, 100) for m in LINEAR}
CRAFTED.update({"chrf": (LINE, "the cat", 100),  # long outputs, short references: the work bound, not memory
                "chrf-memory": (LINE, LINE, 100),  # the references' n-gram statistics
                "ter": (SWAP_HYP, SWAP_REF, 10), "rougeL": (" ".join(["a"] * 300),) * 2 + (10,),
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
        monkeypatch.setattr(bounds, "MAX_CHRF_BYTES", M.CHRF_BYTES_PER_CHARACTER * sum(map(len, hyps)) * 2)
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


# the sizes of real test sets: sentences, references, characters a line (output, reference, source)
BENCHMARKS = {"turkcorpus test": (359, 8, 120, 113, 120), "turkcorpus tune": (2000, 8, 113, 113, 121),
              "asset test": (359, 10, 110, 105, 120), "asset valid": (2000, 10, 117, 105, 117),
              "iwslt14 test": (6750, 1, 106, 97, 106), "gigaword test": (1951, 1, 50, 50, 200),
              "multi30k test": (1000, 1, 62, 62, 62)}
VOCABULARY = ["".join(chr(97 + (7 * i + 3 * j) % 26) for j in range(3 + i % 5)) for i in range(2000)]


def synthetic_text(chars, seed):
    """About ``chars`` characters of words, little repeated."""
    words, length = [], -1
    while length < chars:
        words.append(VOCABULARY[(seed * 31 + len(words) * 17) % len(VOCABULARY)])
        length += 1 + len(words[-1])
    return " ".join(words)


def rewrite(sentence, j, chars):
    """Reference ``j`` of an output: a third of its words replaced, a clause of 3 words moved to the end, about
    ``chars`` characters (TER's estimate on it is that of the real sets: TurkCorpus tune 9.9e8 units here, 8.9e8
    on its real files)."""
    words = [w if (p + j) % 3 else VOCABULARY[(p * 13 + j * 101) % len(VOCABULARY)]
             for p, w in enumerate(sentence.split())]
    words = words[3:] + words[:3]
    while len(" ".join(words)) > chars + 8 and len(words) > 1:
        words.pop()
    return " ".join(words)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_real_benchmarks_are_under_the_bounds(name):
    """The shapes of the real test sets score with every metric, with a margin of 2 (as a comparison of two
    systems), TER too: TurkCorpus (8 references; its tune set 2,000 x 8), ASSET (10; valid 2,000 x 10), IWSLT'14 de-en
    test, Gigaword test, Multi30k test; and every metric in one call for two systems (the report's comparison)."""
    n, k, hyp, ref, src = BENCHMARKS[name]
    hyps = [synthetic_text(hyp, i) for i in range(n)]
    refs = [[rewrite(hyps[i], j, ref) for i in range(n)] for j in range(k)]
    sources = [synthetic_text(src, i + 3) for i in range(n)]
    M.check_input_size(M.METRICS, hyps, refs, sources, systems=2)  # each metric's bound and the call's, two systems


def test_ter_work_follows_sacrebleus_first_search():
    """TER's estimate, against sacrebleu's own search: one edit distance's cells x (the first search's candidates,
    as sacrebleu's _shift counts them, x the searches there can be, the edit distance + 1, at most 1,011 + 8 x the
    searches) + 4 x the matching pairs sacrebleu's first search looks at x the searches; the 4,000-token lines
    MAX_LINE_TOKENS lets through are over the bound (each row allocated)."""
    from sacrebleu.metrics import lib_ter

    from fairseq_wean.scoring import ter

    pairs = [("b a", "a b"), ("a b c d e", "c d e a b"), ("the cat sat on the mat", "on the mat the cat sat"),
             ("b1 b2 b3 a1 a2 a3 d1 d2 c1 c2", "a1 a2 a3 b1 b2 b3 c1 c2 d1 d2"),
             ("x y", "x y z w v u t s r q p o n m l k j i h g f e d c b a " * 3), ("", "a b")]
    for hyp, ref in pairs:
        h, r = hyp.split(), ref.split()
        distance = lib_ter.BeamEditDistance(r)
        first = lib_ter._shift(h, r, distance, 0)[2]
        searches = min(distance(h)[0], 1000) + 1 if first else 1
        candidates = min(first * searches, 1011)
        width = 25 if len(r) / max(len(h), 1) / 2 <= 25 else -(-len(r) // max(len(h), 1) // 2) - 25
        cells = len(h) * min(len(r) + 1, 2 * width) + len(r) + 1 + len(h) * (len(r) + 1) // 16  # + the rows' allocation
        pairs = sum(1 for _ in lib_ter._find_shifted_pairs(h, r))
        searched = min(searches, candidates + 1)
        assert ter.line_work(h, r) == cells * (candidates + 8 * searched) + 4 * pairs * searched, (hyp, ref, first)
    long = ["w{}".format(i % 300) for i in range(M.MAX_LINE_TOKENS)]
    assert ter.line_work(long, long[::-1]) > M.MAX_WORK["ter"]  # one pair: ~1e10 units, minutes of TER


def test_work_estimates_against_hand_counts():
    assert M.metric_work("rougeL", [["a", "b"], ["c"]], [[["a"], ["c", "d", "e"]]]) == 2 * 1 + 1 * 3
    # TER (edit-distance cells, see test_ter_work_follows_sacrebleus_first_search): an equal pair has no candidate,
    # one traced search of hyp x min(ref + 1, 50) cells, the last row and the rows' allocation (hyp x (ref + 1) / 16),
    # and its matching pairs, 4 units each (x x: 60 starts x the 101 within 50 positions, each up to 10 long)
    pairs = sum(min(10, 60 - max(h, r)) for h in range(60) for r in range(60) if abs(h - r) <= 50)
    assert M.ter_line_work(["x"] * 60, ["x"] * 60) == (60 * 50 + 61 + 60 * 61 // 16) * 8 + 4 * pairs
    assert M.metric_work("ter", [["x"]], [[["y"]]]) == (1 * 2 + 2 + 0) * 8
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


# ------------------------------------------------------------------------------------ the whole call
CALLS = {"score": ("bleu", "chrf", "sari"), "compare": ("bleu", "chrf"), "sentence_scores": ("sari", "bleu"),
         "report": ("bleu", "sari", "stats"), "fairseq-wean-score": ("bleu", "chrf", "sari"),
         "fairseq-wean-report": ("bleu", "chrf", "sari")}


@pytest.mark.parametrize("entry", sorted(CALLS))
def test_a_call_is_bounded_as_a_whole(tmp_path, monkeypatch, capsys, entry):
    """Every metric of a call under its own bound, their work together over the call's (lowered here so that a
    few lines are over it): refused in one line naming the call's estimate, each metric's and the limit, before any
    metric runs, in every entry point (a call asking for every metric does not do each one's bound in turn)."""
    hyps = ["the cat sat on the mat", "a dog ran after it", "the bird sang", "it rained all day"]
    refs = [hyps[::-1], hyps, hyps[1:] + hyps[:1]]
    systems = 2 if entry in ("compare", "report", "fairseq-wean-report") else 1
    names = CALLS[entry]
    seconds = {m: M.SECONDS_AT_BOUND[m] * systems * M.input_work(m, hyps, refs, hyps) / M.MAX_WORK[m] for m in names}
    assert sum(M.SECONDS_AT_BOUND.values()) > M.MAX_CALL_SECONDS  # every metric could not run its bound
    monkeypatch.setattr(bounds, "MAX_CALL_SECONDS", max(seconds.values()) * 1.01)  # each alone is under it
    metrics_fail(monkeypatch)
    out = tmp_path / "page.html"
    for name, lines in [("sys", hyps), ("sys2", hyps[::-1])] + [("ref{}".format(k), r) for k, r in enumerate(refs)]:
        (tmp_path / (name + ".txt")).write_text("".join(line + "\n" for line in lines))
    files = ["--orig", str(tmp_path / "sys.txt"), "--refs"] + [str(tmp_path / "ref{}.txt".format(k)) for k in range(3)]
    with pytest.raises((FairseqWeanError, SystemExit)) as e:
        if entry in ("score", "compare"):
            scores.score(hyps, sources=hyps, references=refs, metrics=list(names),
                         compare_to=hyps[::-1] if entry == "compare" else None)
        elif entry == "sentence_scores":
            scores.sentence_scores(hyps, sources=hyps, references=refs, metric="sari")
        elif entry == "report":
            from fairseq_wean.report import build
            build.build_report([build.SystemOutput(n, n, list(h)) for n, h in (("a", hyps), ("b", hyps[::-1]))], hyps,
                               refs, metrics=list(names))
        elif entry == "fairseq-wean-score":
            from fairseq_wean.cli.score import cli_main
            cli_main(["--sys", str(tmp_path / "sys.txt"), "--metrics", ",".join(names)] + files)
        else:
            from fairseq_wean.cli.report import cli_main
            cli_main(["--sys", str(tmp_path / "sys.txt"), str(tmp_path / "sys2.txt"), "--metrics", ",".join(names),
                      "--out", str(out)] + files)
    message = str(e.value.code if isinstance(e.value, SystemExit) else e.value)
    assert not out.exists() and capsys.readouterr().out == "" and "\n" not in message, message
    shape = "these 4 sentences x 3 references{} need about ".format(" x 2 systems" if systems > 1 else "")
    assert shape in message and "more than the {} s one call takes".format(
        M._seconds(bounds.MAX_CALL_SECONDS)) in message, message
    assert all("{} ".format(m) in message.split("(", 1)[1] for m in names), message
