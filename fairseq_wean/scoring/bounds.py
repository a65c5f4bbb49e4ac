"""The bound on the work of one scoring call, checked before any metric runs: each metric's work on the
whole input (:data:`MAX_WORK`, :func:`input_work`, :func:`check_line_lengths`) and the call's metrics
together (:data:`SECONDS_AT_BOUND`, :data:`MAX_CALL_SECONDS`, :func:`check_input_size`).

:mod:`fairseq_wean.scoring.metrics` re-exports every name here (``M.check_input_size``, ``M.MAX_WORK``);
the checks read the bounds here (a test that lowers one patches ``bounds``).
"""
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring.ter import WorkBound, line_work as ter_line_work  # TER's work: its estimate, its count


def _character_tokens(text):
    """:func:`fairseq_wean.scoring.metrics.character_tokens` (imported here when used: metrics imports this module)."""
    from fairseq_wean.scoring.metrics import character_tokens

    return character_tokens(text)


# Every metric's work on a whole input (all sentences x all references x all systems scored) is bounded
# by MAX_WORK[metric] (``input_work``), checked by :func:`check_line_lengths` BEFORE any metric runs.
# ROUGE-L and TER grow with the product of a sentence's length and its reference's: their unit is
# ROUGE-L's LCS cells (about 2.7 million a second on one core: 50 million is ~20 s) and TER's edit-distance
# cells (:func:`fairseq_wean.scoring.ter.line_work`: the first shift search's candidates after sacrebleu's
# filters x the searches there can be x the beam's cells; 0.009 us a unit on TurkCorpus tune, 2,000 x 8
# references, 2.0e9 units in 15-19 s of CPU (ASSET valid 1.1e9, 9-13 s), up to ~0.05 us on crafted block swaps;
# SECONDS_AT_BOUND takes 0.03); a line of more tokens than MAX_LINE_TOKENS is refused for them too. The estimate
# reads the first search only (a crafted input needs several times more): TER also counts its work as it goes,
# and stops past MAX_WORK["ter"] (:func:`ter_work_bound`), so its time is bounded whatever the input.
# Every other metric is linear: its unit is a character read, once per (sentence, reference) pair
# (BLEU, chrF, ROUGE-1/2: output + reference; SARI and stats: + source; FKGL: the output alone).
# Measured on 2 loaded cores, ASSET's valid set (2,000 sentences x 10 references, 4.3 million units):
# chrF 16.6 s, BLEU 5.3 s, SARI 7.8 s, sentence BLEU 3.2 s, stats 0.2 s; FKGL ~8 us a character; ROUGE-1
# 5.0 s of CPU for TurkCorpus tune's 4.0 million (ROUGE-L 5.7 s for its 8.7 million cells).
# chrF also keeps every reference's n-gram statistics at once: ~340 bytes a reference character
# (ASSET valid 672 MB, 60 references x 2,000 lines 1.3 GB), bounded by MAX_CHRF_BYTES.
# One call's metrics share one bound (:func:`check_input_size`): SECONDS_AT_BOUND[m], about what MAX_WORK[m] costs
# (measured as above), summed over the call's metrics, under MAX_CALL_SECONDS (not each metric's bound in turn).
QUADRATIC_METRICS = ("rougeL", "ter")
MAX_LINE_TOKENS = 4000
LINEAR_WORK = 2 * 10 ** 7
MAX_WORK = {"rougeL": 5 * 10 ** 7, "ter": 5 * 10 ** 9, "fkgl": 4 * 10 ** 6, "bleu": LINEAR_WORK, "chrf": LINEAR_WORK,
            "sari": LINEAR_WORK, "rouge1": LINEAR_WORK, "rouge2": LINEAR_WORK, "stats": LINEAR_WORK}
WORK_UNITS = {"rougeL": "sentence x reference lengths", "ter": "edit-distance cells of TER's shift search",
              "fkgl": "characters of the output"}
SECONDS_AT_BOUND = {"bleu": 25, "chrf": 77, "ter": 150, "sari": 24, "fkgl": 32, "rouge1": 25, "rouge2": 25,
                    "rougeL": 33, "stats": 1}
MAX_CALL_SECONDS = 300
READS_SOURCES = ("sari", "stats")
PAIR_UNITS = 20  # what a (sentence, reference) pair costs whatever its length, in every unit (~10-20 us)
CHRF_BYTES_PER_CHARACTER, MAX_CHRF_BYTES = 340, 1500 * 2 ** 20


def metric_work(metric, sys_tokens, refs_tokens, limit=None):
    """The total work of ``metric`` (one of :data:`QUADRATIC_METRICS`) on token lists, summed over the
    lines and references (``refs_tokens``: a list of streams, or an iterable and its ``len``). Past
    ``limit`` the rest is not counted (a TER estimate costs a search): the pairs counted so far are
    extrapolated to all of them."""
    work = done = 0
    for done, stream in enumerate(refs_tokens, 1):
        for i, h in enumerate(sys_tokens):
            work += ter_line_work(h, stream[i]) if metric == "ter" else len(h) * len(stream[i])
            if limit is not None and work > limit[0]:
                return work * limit[1] * len(sys_tokens) // ((done - 1) * len(sys_tokens) + i + 1)
    return work


def input_work(metric, sys_sents, refs_streams, orig_sents=None, chars=False, systems=1):
    """``metric``'s work on one system's input, in its unit (see :data:`MAX_WORK`); once over the
    bound for ``systems`` outputs, an extrapolation (see :func:`metric_work`)."""
    refs_streams = refs_streams or []
    pairs = len(sys_sents) * (1 if metric == "fkgl" else max(1, len(refs_streams)))
    if metric in QUADRATIC_METRICS:
        split = _character_tokens if chars else str.split
        return PAIR_UNITS * pairs + metric_work(metric, [split(h) for h in sys_sents], (
            [split(r) for r in s] for s in refs_streams), (MAX_WORK[metric] // systems, len(refs_streams)))
    own = sum(map(len, sys_sents)) + (sum(map(len, orig_sents)) if metric in READS_SOURCES and orig_sents else 0)
    if metric == "fkgl":
        return PAIR_UNITS * pairs + own
    return PAIR_UNITS * pairs + own * max(1, len(refs_streams)) + sum(sum(map(len, stream)) for stream in refs_streams)


def check_input_size(names, sys_sents, refs_streams, orig_sents=None, chars=False, systems=1):
    """The one bound on a call's work, before any metric runs: :func:`check_line_lengths` for every metric
    of ``names``, then their estimated seconds together against :data:`MAX_CALL_SECONDS`."""
    seconds = {}
    for name in dict.fromkeys(names):
        work = check_line_lengths(name, sys_sents, refs_streams, chars and name == "rougeL", orig_sents, systems)
        seconds[name] = SECONDS_AT_BOUND[name] * work / MAX_WORK[name]
    if sum(seconds.values()) > MAX_CALL_SECONDS:
        raise FairseqWeanError(
            "these {} need about {} s of work with {} metrics ({}), more than the {} s one call takes; score the "
            "metrics in separate calls, or fewer or shorter sentences{}".format(
                _shape(None, sys_sents, refs_streams or [], systems), _seconds(sum(seconds.values())), len(seconds),
                ", ".join("{} {} s".format(name, _seconds(t)) for name, t in seconds.items()),
                _seconds(MAX_CALL_SECONDS), ", fewer references" if len(refs_streams or []) > 1 else ""))


def ter_work_bound(sentences, references=None):
    """The :class:`~fairseq_wean.scoring.ter.WorkBound` of one TER corpus (``sentences`` x ``references``, as
    sacrebleu's TER object is given them: one system's output): :data:`MAX_WORK` ``["ter"]`` edit-distance
    cells really computed (the estimate :func:`check_line_lengths` refuses on reads the first shift search
    only); past it, a one-line FairseqWeanError naming the limit and where it stopped."""
    def exceeded(work):
        return FairseqWeanError(
            "ter: these {} took more than the {:,} units of work ({}) this metric takes on one input, counted as "
            "it ran (its shift search can go on far past what the first search promises, on repeated blocks of "
            "words): stopped at sentence {:,}, nothing scored; score fewer or shorter sentences{}, or score without "
            "ter".format(_counted("ter", sentences, references or 1, 1), MAX_WORK["ter"], WORK_UNITS["ter"],
                         work.sentence, ", fewer references" if (references or 1) > 1 else ""))

    return WorkBound(MAX_WORK["ter"], exceeded)


def _seconds(t):
    return "{:,.0f}".format(t) if t >= 10 else "{:.2g}".format(t)


def _shape(metric, sys_sents, refs_streams, systems):
    return _counted(metric, len(sys_sents), len(refs_streams), systems)


def _counted(metric, sentences, references, systems):
    return "{:,} sentences{}{}".format(sentences, " x {} references".format(references) if references > 1 and
                                       metric != "fkgl" else "", " x {} systems".format(systems) if systems > 1 else "")


def check_line_lengths(metric, sys_sents, refs_streams, chars=False, orig_sents=None, systems=1):
    """Refuse (FairseqWeanError) ``metric`` on an input whose total work (``systems`` outputs scored
    against every reference) is over :data:`MAX_WORK` or, for chrF, whose reference statistics would
    need more than :data:`MAX_CHRF_BYTES`, and a :data:`QUADRATIC_METRICS` one on a line longer than
    :data:`MAX_LINE_TOKENS` (naming the side, the line and the limit), before any of it is computed.
    Returns the work (the call's bound sums it over the metrics: :func:`check_input_size`).
    Every entry point computes the metrics through :func:`build_metrics`, :func:`rouge_sentence_scores`
    and :func:`bleu_sentence_stats`, which call this first (the report and ``sentence_scores`` too)."""
    refs_streams = refs_streams or []
    count = (lambda text: len(_character_tokens(text))) if chars else (lambda text: len(text.split()))
    sides = [("the output", sys_sents)] + [("reference {}".format(k + 1) if len(refs_streams) > 1 else "the reference",
                                           stream) for k, stream in enumerate(refs_streams)]
    for side, sentences in sides if metric in QUADRATIC_METRICS else ():
        for i, text in enumerate(sentences, 1):
            if len(text) > MAX_LINE_TOKENS and count(text) > MAX_LINE_TOKENS:
                raise FairseqWeanError(
                    "{}: line {} of {} has {:,} tokens, more than the {:,} this metric takes (it compares every "
                    "token of a sentence with every token of its reference: time and memory grow with their "
                    "product); split the text into sentences, or score without {}".format(
                        metric, i, side, count(text), MAX_LINE_TOKENS, metric))
    work = systems * input_work(metric, sys_sents, refs_streams, orig_sents, chars, systems)
    shape = _shape(metric, sys_sents, refs_streams, systems)
    fewer = "score fewer or shorter sentences{}, or score without {}".format(
        ", fewer references" if len(refs_streams) > 1 and metric != "fkgl" else "", metric)
    if work > MAX_WORK[metric]:
        raise FairseqWeanError(
            "{}: these {} need about {:,} units of work ({}), more than the {:,} this metric takes on one input "
            "(it would run for minutes); {}".format(metric, shape, work, WORK_UNITS.get(
                metric, "characters read per sentence and reference"), MAX_WORK[metric], fewer))
    memory = CHRF_BYTES_PER_CHARACTER * sum(sum(map(len, stream)) for stream in refs_streams)
    if metric == "chrf" and memory > MAX_CHRF_BYTES:
        raise FairseqWeanError(
            "chrf: these {} need about {:,} MB for the references' n-gram statistics (~{} bytes a reference "
            "character), more than the {:,} MB this metric takes; {}".format(
                shape, memory >> 20, CHRF_BYTES_PER_CHARACTER, MAX_CHRF_BYTES >> 20, fewer))
    return work
