"""The scorer as a Python library: corpus scores and per-sentence scores of a system output.

    from fairseq_wean.scoring import score, sentence_scores

    result = score(hyps, sources=src, references=[ref0, ref1], metrics=("sari", "bleu", "stats"))
    result["sari"], result["bleu"], result["stats"]["invented_pct"]

Inputs are lists of strings, one per test sentence; ``references`` is a list of reference
streams, each as long as ``hyps`` (shape (n_references, n_sentences), as sacrebleu and EASSE
take them). Reading files (plain outputs, fairseq-generate logs) is the job of
``fairseq-wean-score`` (:mod:`fairseq_wean.cli.score`), which calls ``score_with_statistics``
and prints exactly the dict ``score`` returns (``--json``).

Bad input (no sentences, streams of different lengths, a metric without the inputs it needs,
an unknown metric or option) raises ``FairseqWeanError`` with a one-line message.
"""
import argparse

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import sari as sari_lib

NEEDS_SOURCES = ("sari", "stats")
NEEDS_REFERENCES = M.SACREBLEU_METRICS + ("sari",) + M.ROUGE_TYPES
SENTENCE_METRICS = ("sari", "rougeL")


def _metric_names(metrics):
    names = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else list(metrics)
    if "" in names and len(names) > 1:
        raise FairseqWeanError("metrics {!r} has an empty item: name each metric once, between commas".format(metrics))
    names = [m for m in names if m]
    twice = sorted({m for m in names if names.count(m) > 1})
    if twice:
        raise FairseqWeanError("metric(s) {} named more than once: name each metric once".format(", ".join(twice)))
    bad = [m for m in names if m not in M.METRICS]
    if bad or not names:
        raise FairseqWeanError("unknown metric(s) {}: choose from {}".format(
            ", ".join(bad) or "(none)", ",".join(M.METRICS)))
    return list(dict.fromkeys(names))


def check_rouge_options(rouge_chars, rouge_stemmer, chars="rouge_chars", no_stemmer="rouge_stemmer=False"):
    """Refuse (one line) no stemming with ROUGE by character: the Porter stemmer applies to words only, so
    turning it off changes nothing; ``chars``/``no_stemmer``: the caller's names of the two settings."""
    if rouge_chars and not rouge_stemmer:
        raise FairseqWeanError("{} has no effect with {}: ROUGE by character never stems (the Porter stemmer is "
                               "for words): drop one of them".format(no_stemmer, chars))


def _check_inputs(hyps, sources, references, names, what="hyps"):
    if not len(hyps):
        raise FairseqWeanError("nothing to score: {} has no sentences".format(what))
    need = [m for m in names if m in NEEDS_SOURCES]
    if need and sources is None:
        raise FairseqWeanError("sources (the source sentences) are required for {}".format(", ".join(need)))
    need = [m for m in names if m in NEEDS_REFERENCES]
    if need and not references:
        raise FairseqWeanError("references (one or more streams) are required for {}".format(", ".join(need)))
    counts = [(what, len(hyps))]
    if sources is not None:
        counts.append(("sources", len(sources)))
    counts += [("references[{}]".format(i), len(stream)) for i, stream in enumerate(references or [])]
    if len({c for _, c in counts}) > 1:
        raise FairseqWeanError("inputs have different numbers of sentences: {}; give one line per test "
                               "sentence everywhere".format(", ".join("{} has {}".format(k, c) for k, c in counts)))


def _system_scores(names, hyps, sources, references, sari_mode, rouge_chars, rouge_stemmer, bleu_tokenize):
    corpus = M.build_metrics(names, hyps, sources, references, sari_mode=sari_mode, rouge_chars=rouge_chars,
                             rouge_stemmer=rouge_stemmer, bleu_tokenize=bleu_tokenize)
    values = {}
    for m in names:
        if m == "stats":
            rows = M.output_stats_rows(hyps, sources, references)
            values[m] = M.output_stats_from_stats(rows.sum(axis=0), len(hyps))
        else:
            values[m] = float(corpus[m].score())
    return corpus, values


def score_with_statistics(hyps, *, sources=None, references=None, metrics, sari_mode="default",
                          rouge_chars=False, rouge_stemmer=True, compare_to=None,
                          bootstrap_samples=None, bleu_tokenize=M.BLEU_TOKENIZE):
    """``(score(...), {metric: CorpusMetric})``: the scores and the per-sentence sufficient
    statistics of ``hyps`` behind them (every metric but ``stats``), for callers that need more
    than the scores, e.g. SARI's add/keep/delete split (``sari_operation_scores``)."""
    names = _metric_names(metrics)
    if sari_mode not in sari_lib.MODES:
        raise FairseqWeanError("unknown SARI mode {!r}: choose from {}".format(sari_mode, ", ".join(sari_lib.MODES)))
    check_rouge_options(rouge_chars, rouge_stemmer)
    if "bleu" in names:
        M.check_bleu_tokenizer(bleu_tokenize, "bleu_tokenize")
    _check_inputs(hyps, sources, references, names)
    bootstrap_samples = M.check_bootstrap(bootstrap_samples, len(hyps), compared=compare_to is not None)
    if compare_to is not None:
        _check_inputs(compare_to, sources, references, names, what="compare_to")
        if len(compare_to) != len(hyps):
            raise FairseqWeanError("compare_to has {} sentences but hyps has {}: compare outputs of the same "
                                   "test set".format(len(compare_to), len(hyps)))
    # the bound on the work of every metric for both systems, before any is computed
    M.check_input_size(names, hyps, references, sources, rouge_chars, systems=1 + (compare_to is not None))
    if compare_to is not None and "bleu" in names:  # two BLEUs of 0 by construction would get p = 1
        M.check_bleu_ngrams(M.sacrebleu_metric("bleu", bleu_tokenize), references, bleu_tokenize)
    options = dict(sari_mode=sari_mode, rouge_chars=rouge_chars, rouge_stemmer=rouge_stemmer,
                   bleu_tokenize=bleu_tokenize)
    corpus, values = _system_scores(names, hyps, sources, references, **options)
    result = dict(values)
    if compare_to is not None:
        other_corpus, other_values = _system_scores(names, compare_to, sources, references, **options)
        result["compare_to"] = other_values
        result["p_values"] = M.paired_bootstrap(corpus, other_corpus, n_samples=bootstrap_samples)
    return result, corpus


def score(hyps, *, sources=None, references=None, metrics, sari_mode="default", rouge_chars=False,
          rouge_stemmer=True, compare_to=None, bootstrap_samples=None, bleu_tokenize=M.BLEU_TOKENIZE):
    """Corpus scores of the system output ``hyps`` (a list of strings), as a dict.

    Args:
        sources: the source sentences (needed by ``sari`` and ``stats``).
        references: reference streams, shape (n_references, n_sentences) (needed by ``bleu``,
            ``sari``, ``rouge*``; ``stats`` adds the invented-word columns when given).
        metrics: names from ``metrics.METRICS`` (``bleu chrf ter sari fkgl rouge1 rouge2 rougeL
            stats``), a sequence or a comma string; the result keeps their order.
        sari_mode: ``default``, ``legacy`` (published TurkCorpus numbers) or ``paper`` (see
            :mod:`fairseq_wean.scoring.sari`).
        rouge_chars: ROUGE by character (Chinese); ``rouge_stemmer``: Porter stemming (words).
        bleu_tokenize: sacrebleu's BLEU tokenization: ``13a`` (default) for detokenized text,
            ``none`` for tokenized text (multi-bleu.perl's convention).
        compare_to: another system's output on the same sentences: adds its scores and
            two-sided paired-bootstrap p-values (``bootstrap_samples`` resamples, fixed seed).

    Returns:
        ``{metric: float}`` for every metric but ``stats``, which is a dict with ``avg_len``,
        ``unk_pct``, ``copy_pct``, ``exact_copy_pct`` and, with references, ``invented_pct`` and
        ``invented_sent_pct`` (see ``metrics.invented_words``); with ``compare_to`` also
        ``"compare_to"`` (the same for the other system) and ``"p_values"`` ({metric: p} for
        every metric but ``stats``). ``fairseq-wean-score --json`` prints this dict (plus
        ``compare_to["file"]``).
    """
    if rouge_chars and not any(m in M.ROUGE_TYPES for m in _metric_names(metrics)):
        raise FairseqWeanError("rouge_chars changes only ROUGE, and metrics has none: drop it, or add rouge1")
    return score_with_statistics(
        hyps, sources=sources, references=references, metrics=metrics, sari_mode=sari_mode,
        rouge_chars=rouge_chars, rouge_stemmer=rouge_stemmer, compare_to=compare_to,
        bootstrap_samples=bootstrap_samples, bleu_tokenize=bleu_tokenize)[0]


def sari_operation_scores(corpus_metrics, sari_mode="default"):
    """(add, keep, delete) x 100 of the SARI in ``corpus_metrics`` (from ``score_with_statistics``)."""
    return sari_lib.operation_scores_from_stats(list(corpus_metrics["sari"].rows.sum(axis=0)), mode=sari_mode)


def sentence_scores(hyps, *, sources=None, references, metric="sari", sari_mode="default", rouge_chars=False,
                    rouge_stemmer=True, statistics=None, bleu_tokenize=M.BLEU_TOKENIZE):
    """Per-sentence scores of ``hyps``, for inspecting outputs one by one (e.g. an HTML report).

    Returns one dict per sentence, in order, with

    * ``metric`` (``"sari"``, ``"rougeL"`` or None for neither): sentence SARI (EASSE's ``sentence_sari``: the
      corpus formula on that sentence alone, ``sari_mode`` as for ``score``; needs ``sources``),
      or rouge-score ROUGE-L F1 x 100 (best reference; ``rouge_chars``/``rouge_stemmer`` as
      for ``score``);
    * ``"bleu"``: sacrebleu's ``sentence_bleu`` against all references (``bleu_tokenize``, 13a
      by default, exponential smoothing, effective n-gram order);
    * ``"length_ratio"``: output tokens / source tokens (whitespace tokens; ``None`` without
      ``sources`` or for an empty source);
    * ``"invented_words"``: the output tokens found in neither the source nor any reference
      (``metrics.invented_words``; ``None`` without ``sources``).

    Sentence scores do not average to the corpus scores (SARI and BLEU are computed from
    corpus-level counts): use ``score`` for a system's score.

    ``statistics``: the ``{metric: CorpusMetric}`` that ``score_with_statistics`` returned for
    these ``hyps`` with the same options (``bleu_tokenize`` included): its per-sentence rows
    are reused instead of being computed again (SARI, ROUGE-L, BLEU), with the same values. A
    report of 50,000 sentences computed them twice.
    """
    if metric is not None and metric not in SENTENCE_METRICS:
        raise FairseqWeanError("sentence_scores: metric {!r} is not available per sentence: choose from {}".format(
            metric, ", ".join(SENTENCE_METRICS)))
    if sari_mode not in sari_lib.MODES:
        raise FairseqWeanError("unknown SARI mode {!r}: choose from {}".format(sari_mode, ", ".join(sari_lib.MODES)))
    check_rouge_options(rouge_chars, rouge_stemmer)
    M.check_bleu_tokenizer(bleu_tokenize, "bleu_tokenize")
    _check_inputs(hyps, sources, references, [m for m in (metric, "bleu") if m])
    M.check_normalization([("hyps", hyps), ("sources", sources or []), ("references", [r for s in references for r in s])])
    M.check_input_size([m for m in (metric, "bleu") if m], hyps, references, sources, rouge_chars)  # before any
    from sacrebleu.metrics import BLEU

    statistics = statistics or {}
    if metric == "sari":
        rows = statistics["sari"].rows if "sari" in statistics else sari_lib.corpus_stats(
            sources, hyps, references, mode=sari_mode)
        main = [sari_lib.sari_from_stats(list(row), mode=sari_mode) for row in rows]
    elif metric is None:
        main = None
    elif "rougeL" in statistics:
        main = statistics["rougeL"].rows[:, 0]
    else:
        main = M.rouge_sentence_scores(hyps, references, ("rougeL",), rouge_chars, rouge_stemmer)["rougeL"]
    bleu = BLEU(effective_order=True, force=True, tokenize=bleu_tokenize)
    # sentence BLEU is BLEU with effective order on the sentence's own corpus statistics
    bleu_rows = statistics["bleu"].rows if "bleu" in statistics else None
    out = []
    for i, hyp in enumerate(hyps):
        refs = [stream[i] for stream in references]
        sentence_bleu = (bleu.sentence_score(hyp, refs).score if bleu_rows is None else
                         M.bleu_from_stats(bleu, bleu_rows[i]))
        row = {"bleu": float(sentence_bleu), "length_ratio": None, "invented_words": None}
        if metric is not None:
            row[metric] = float(main[i])
        if sources is not None:
            src_len = len(sources[i].split())
            row["length_ratio"] = len(hyp.split()) / src_len if src_len else None
            row["invented_words"] = M.invented_words(hyp, sources[i], refs)
        out.append(row)
    return out


def options_from_score_args(args):
    """Keyword arguments of ``score`` for a list of ``fairseq-wean-score`` options (the
    ``score_args`` of a recipe's test spec, e.g. ``["--rouge-chars"]``, ``["--sari-mode", "legacy"]``).

    Only the options that change how metrics are computed are accepted: ``--sari-mode MODE``,
    ``--rouge-chars``, ``--rouge-no-stemmer``, ``--bleu-tokenize TOK`` (sacrebleu's tokenizers).
    """
    from sacrebleu.metrics.bleu import BLEU

    # options with a value: flag -> (keyword, allowed values)
    valued = {"--sari-mode": ("sari_mode", sari_lib.MODES), "--bleu-tokenize": ("bleu_tokenize", BLEU.TOKENIZERS)}
    options, rest = {}, list(args)
    while rest:
        arg = rest.pop(0)
        flag = arg.split("=", 1)[0]
        if arg == "--rouge-chars":
            options["rouge_chars"] = True
        elif arg == "--rouge-no-stemmer":
            options["rouge_stemmer"] = False
        elif flag in valued:
            keyword, allowed = valued[flag]
            value = arg.split("=", 1)[1] if "=" in arg else (rest.pop(0) if rest else None)
            if value not in allowed:
                raise FairseqWeanError("score option {} needs one of {} (got {!r})".format(
                    flag, ", ".join(allowed), value))
            if keyword == "bleu_tokenize":
                M.check_bleu_tokenizer(value, "score option --bleu-tokenize")
            options[keyword] = value
        else:
            raise FairseqWeanError("unknown score option {!r} in score_args: use --sari-mode MODE, --rouge-chars, "
                                   "--rouge-no-stemmer or --bleu-tokenize TOK".format(arg))
    return options


def parse_metrics(text):
    """``--metrics`` of ``fairseq-wean-score`` and ``fairseq-wean-report`` (an argparse ``type``):
    a comma list of :data:`metrics.METRICS` names, each once -> list, in the given order."""
    names = [m.strip() for m in text.split(",")]
    if "" in names and len(names) > 1:
        raise argparse.ArgumentTypeError("{!r} has an empty item: name each metric once, between commas".format(text))
    names = [m for m in names if m]
    bad = [m for m in names if m not in M.METRICS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            "unknown metric(s) {}: choose from {}".format(", ".join(bad) or "(none)", ",".join(M.METRICS)))
    twice = list(dict.fromkeys(m for m in names if names.count(m) > 1))
    if twice:
        raise argparse.ArgumentTypeError("{} given twice in {}: name each metric once".format(", ".join(twice), text))
    return names
