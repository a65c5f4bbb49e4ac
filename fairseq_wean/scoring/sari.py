"""SARI (Xu et al., TACL 2016), computed exactly as EASSE's ``corpus_sari`` (feralvam/easse).

Paper: Xu, Napoles, Pavlick, Chen and Callison-Burch, "Optimizing Statistical Machine Translation
for Text Simplification" (TACL 4, 2016, pp. 401-415, ACL Anthology Q16-1029).

No installable SARI library is available, so this is an independent implementation of the
algorithm in ``easse/sari.py``; ``tests/test_scorer.py`` checks it against EASSE's published
value on TurkCorpus test (DRESS-LS output, legacy mode: 37.266058818588216).

Three modes (``mode=``):

``default``  EASSE's default: original, system output and references lowercased and tokenized
             with sacrebleu's 13a tokenizer; per n-gram order (1-4) the ADD, KEEP and DELETE F1
             are computed from corpus-level counts and averaged over the orders (the "macro"
             variant of the Java release that the authors used in their experiments); SARI is the
             mean of the three operation scores.
``legacy``   EASSE's ``legacy=True``: reproduces the numbers of earlier papers. Nothing is
             lowercased (the data is assumed lowercased already) and only the system output and
             the references are 13a-tokenized; the original is used as is (the bug of the original
             Java implementation). Same per-order averaging as ``default``.
``paper``    EASSE's ``use_paper_version=True`` with default normalisation: the equations of the
             paper ("micro"): precision and recall are each averaged over the orders first and the
             F1 of the averages is taken per operation.

In every mode DELETE uses F1 at corpus level (EASSE's ``use_f1_for_deletion=True``); the
precision-only DELETE of the paper applies to sentence-level scores, available here as
``use_f1_for_deletion=False``.

Counting (per sentence, summed over the corpus; ``r`` = number of references):
ADD counts distinct n-grams (binary), KEEP and DELETE count n-gram occurrences weighted by ``r``
against the summed reference counts, as in EASSE.

Nothing here registers a fairseq scorer: SARI needs the source sentence, which fairseq's scorer
interface never receives; ``fairseq-wean-score`` reads it from ``--orig`` (or the S- lines of a
fairseq-generate log).
"""
from collections import Counter

NGRAM_ORDER = 4
MODES = ("default", "legacy", "paper")

# Layout of one row of sufficient statistics: 9 counts x NGRAM_ORDER orders.
STAT_NAMES = (
    "add_sys_correct", "add_sys_total", "add_ref_total",
    "keep_sys_correct", "keep_sys_total", "keep_ref_total",
    "del_sys_correct", "del_sys_total", "del_ref_total",
)
NUM_STATS = len(STAT_NAMES) * NGRAM_ORDER

_TOKENIZERS = {}


def _tokenizer(name):
    if name not in _TOKENIZERS:
        if name == "13a":
            from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

            _TOKENIZERS[name] = Tokenizer13a()
        elif name == "none":
            _TOKENIZERS[name] = lambda s: s
        else:
            raise ValueError("unknown SARI tokenizer {!r} (use '13a' or 'none')".format(name))
    return _TOKENIZERS[name]


def normalize(sentence, lowercase=True, tokenizer="13a"):
    """EASSE's ``utils.preprocessing.normalize`` for the tokenizers used here."""
    if lowercase:
        sentence = sentence.lower()
    return _tokenizer(tokenizer)(sentence)


def _ngrams(sentence):
    tokens = sentence.split()
    out = []
    for n in range(1, NGRAM_ORDER + 1):
        out.append(Counter(" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)))
    return out


def _scaled(counter, factor):
    return Counter({k: v * factor for k, v in counter.items()})


def sentence_stats(orig, sys, refs):
    """Sufficient statistics of one (already normalised) sentence: a list of ``NUM_STATS`` ints,
    ordered as ``STAT_NAMES`` (outer) x n-gram order (inner)."""
    orig_ngrams = _ngrams(orig)
    sys_ngrams = _ngrams(sys)
    refs_ngrams = [Counter() for _ in range(NGRAM_ORDER)]
    for ref in refs:
        for n, c in enumerate(_ngrams(ref)):
            refs_ngrams[n] += c
    r = len(refs)
    stats = [[0] * NGRAM_ORDER for _ in STAT_NAMES]
    for n in range(NGRAM_ORDER):
        o, s, rf = orig_ngrams[n], sys_ngrams[n], refs_ngrams[n]
        # ADD (binary): n-grams new with respect to the original
        sys_add = set(s) - set(o)
        stats[0][n] = len(sys_add & set(rf))
        stats[1][n] = len(sys_add)
        stats[2][n] = len(set(rf) - set(o))
        # KEEP (weighted by the number of references)
        o_r, s_r = _scaled(o, r), _scaled(s, r)
        orig_and_sys = o_r & s_r
        orig_and_ref = o_r & rf
        stats[3][n] = sum((orig_and_sys & orig_and_ref).values())
        stats[4][n] = sum(orig_and_sys.values())
        stats[5][n] = sum(orig_and_ref.values())
        # DELETE (weighted)
        orig_not_sys = o_r - s_r
        orig_not_ref = o_r - rf
        stats[6][n] = sum((orig_not_sys & orig_not_ref).values())
        stats[7][n] = sum(orig_not_sys.values())
        stats[8][n] = sum(orig_not_ref.values())
    return [v for row in stats for v in row]


def _prepare(orig_sents, sys_sents, refs_sents, mode, tokenizer):
    """Normalise as EASSE does. ``refs_sents`` has shape (n_references, n_samples)."""
    if mode not in MODES:
        raise ValueError("unknown SARI mode {!r} (choose from {})".format(mode, ", ".join(MODES)))
    if len(orig_sents) != len(sys_sents) or any(len(r) != len(orig_sents) for r in refs_sents):
        raise ValueError("SARI: original, system and every reference stream need the same number of lines")
    if mode == "legacy":
        lowercase = False
    else:
        lowercase = True
        orig_sents = [normalize(s, lowercase, tokenizer) for s in orig_sents]
    sys_sents = [normalize(s, lowercase, tokenizer) for s in sys_sents]
    refs_sents = [[normalize(s, lowercase, tokenizer) for s in stream] for stream in refs_sents]
    return orig_sents, sys_sents, refs_sents


def corpus_stats(orig_sents, sys_sents, refs_sents, mode="default", tokenizer="13a"):
    """Per-sentence sufficient statistics (list of rows), after EASSE's normalisation. Every SARI of
    every tool is computed here, so text without word boundaries is refused here
    (:func:`fairseq_wean.scoring.metrics.check_word_boundaries`)."""
    from fairseq_wean.scoring import metrics

    metrics.check_word_boundaries("SARI", [r for stream in refs_sents for r in stream], metrics.SEGMENT)
    orig_sents, sys_sents, refs_sents = _prepare(orig_sents, sys_sents, refs_sents, mode, tokenizer)
    return [
        sentence_stats(o, s, list(refs))
        for o, s, refs in zip(orig_sents, sys_sents, zip(*refs_sents) if refs_sents else [()] * len(sys_sents))
    ]


def _prf(correct, sys_total, ref_total):
    p = correct / sys_total if sys_total > 0 else 0.0
    r = correct / ref_total if ref_total > 0 else 0.0
    f = 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0
    return p, r, f


def operation_scores_from_stats(totals, mode="default", use_f1_for_deletion=True):
    """(add, keep, del) scores x 100 from summed sufficient statistics."""
    rows = [totals[i * NGRAM_ORDER:(i + 1) * NGRAM_ORDER] for i in range(len(STAT_NAMES))]
    prf = [[_prf(rows[3 * op][n], rows[3 * op + 1][n], rows[3 * op + 2][n]) for n in range(NGRAM_ORDER)]
           for op in range(3)]  # op: add, keep, del
    scores = []
    for op in range(3):
        want_f1 = op < 2 or use_f1_for_deletion
        if mode == "paper":
            p = sum(x[0] for x in prf[op]) / NGRAM_ORDER
            r = sum(x[1] for x in prf[op]) / NGRAM_ORDER
            if want_f1:
                scores.append(2 * p * r / (p + r) if p > 0 or r > 0 else 0.0)
            else:
                scores.append(p)
        else:
            scores.append(sum(x[2] if want_f1 else x[0] for x in prf[op]) / NGRAM_ORDER)
    return tuple(100.0 * s for s in scores)


def sari_from_stats(totals, mode="default", use_f1_for_deletion=True):
    return sum(operation_scores_from_stats(totals, mode, use_f1_for_deletion)) / 3


def sum_stats(rows):
    totals = [0] * NUM_STATS
    for row in rows:
        for i, v in enumerate(row):
            totals[i] += v
    return totals


def corpus_sari_operation_scores(orig_sents, sys_sents, refs_sents, mode="default", tokenizer="13a",
                                 use_f1_for_deletion=True):
    """(add, keep, del) x 100, as EASSE's ``get_corpus_sari_operation_scores``."""
    totals = sum_stats(corpus_stats(orig_sents, sys_sents, refs_sents, mode, tokenizer))
    return operation_scores_from_stats(totals, mode, use_f1_for_deletion)


def corpus_sari(orig_sents, sys_sents, refs_sents, mode="default", tokenizer="13a", use_f1_for_deletion=True):
    """Corpus SARI x 100. ``refs_sents``: one list per reference stream, each as long as ``sys_sents``."""
    return sum(corpus_sari_operation_scores(orig_sents, sys_sents, refs_sents, mode, tokenizer,
                                            use_f1_for_deletion)) / 3
