"""The data of the ``fairseq-wean-report`` page: corpus scores, per-sentence scores, token classes.

Everything the page shows is computed here, as plain Python values; :mod:`.render` only turns
them into HTML. Inputs are read as ``fairseq-wean-score`` reads them: a system output is a plain
file (one sentence per line) or a fairseq-generate log (its ``H-`` lines, the first per sentence
id, put back in id order; ``S-``/``T-`` lines stand in for ``--orig``/``--refs`` when those are
not given). From a log the report also keeps, per sentence, the per-token values fairseq-generate
printed for that first hypothesis: ``P-`` (positional log2-probabilities, one per token plus
``</s>``) and ``G-`` (copy or contextual gates, the same shape), shown when hovering a token.

Corpus scores are computed by the library functions ``fairseq-wean-score`` calls
(:func:`fairseq_wean.scoring.metrics.build_metrics`, ``output_stats_rows``, ``paired_bootstrap``)
so that the numbers are the same; per-sentence scores by :func:`sentence_scores`, the one place
that computes them.
"""
import os
import re
from collections import Counter

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import sari as sari_lib
from fairseq_wean.scoring.generate_log import GenerateLog

DEFAULT_METRICS = ("bleu", "sari", "stats")
METRIC_NAMES = {"bleu": "BLEU", "sari": "SARI", "fkgl": "FKGL", "rouge1": "ROUGE-1 F1",
                "rouge2": "ROUGE-2 F1", "rougeL": "ROUGE-L F1"}
STATS_NAMES = {"avg_len": "average length", "unk_pct": "% <unk>", "copy_pct": "% copied tokens",
               "exact_copy_pct": "% exact copies"}
# token classes, in legend order
TOKEN_CLASSES = ("copied", "generated", "unk", "invented", "deleted")
_TOKEN_LINE = re.compile(r"^([PG])-(\d+)\t(.*)$")
# a page unit: a word (whitespace token), or with --rouge-chars an ASCII letter/digit run or one
# other character (as ROUGE's character tokenizer counts them); whitespace is kept as it is
_WORD_UNITS = re.compile(r"\S+|\s+")
_CHAR_UNITS = re.compile(r"[A-Za-z0-9]+|\s+|\S")


class SystemOutput:
    """One system: its sentences, and per sentence the ``P-``/``G-`` values of its log (or None)."""

    def __init__(self, name, path, sentences, log=None, token_values=None):
        self.name = name
        self.path = path
        self.sentences = sentences
        self.log = log
        self.token_values = token_values or {}  # {"P": {id: [float]}, "G": {id: [float]}}

    def values(self, kind, sid):
        return self.token_values.get(kind, {}).get(sid)


def parse_token_lines(lines):
    """{"P": {id: [float]}, "G": {id: [float]}}: the first ``P-``/``G-`` line per sentence id
    (the one that follows the best hypothesis of an n-best list)."""
    out = {"P": {}, "G": {}}
    for line in lines:
        m = _TOKEN_LINE.match(line)
        if not m:
            continue
        try:
            values = [float(v) for v in m.group(3).split()]
        except ValueError:
            continue  # not a line fairseq-generate wrote; ignore it as GenerateLog ignores others
        out[m.group(1)].setdefault(int(m.group(2)), values)
    return out


def read_system(path, name, n=None):
    """A :class:`SystemOutput` from a plain output file or a fairseq-generate log."""
    lines = textio.read_lines(path, "--sys")
    if not GenerateLog.looks_like_log(lines):
        return SystemOutput(name, path, lines)
    log = GenerateLog(path, lines)
    if n is None:
        n = max(log.hyp) + 1
    sentences = log.ordered(log.hyp, n, "hypothesis (H- line)")
    return SystemOutput(name, path, sentences, log, parse_token_lines(lines))


def units(text, chars=False):
    """The page's units of ``text``: words, or with ``chars`` characters (ASCII runs kept whole)."""
    return [u for u in (_CHAR_UNITS if chars else _WORD_UNITS).findall(text) if not u.isspace()]


def classify_tokens(hyp, src, refs, chars=False):
    """Token classes of one output, and the source words it deleted.

    Returns ``(segments, deleted)``: ``segments`` is ``hyp`` cut into units and whitespace, as
    ``(text, cls)`` with cls one of ``copied`` (the unit is in the source), ``generated`` (in a
    reference but not in the source), ``unk`` (``<unk>``/``UNK``), ``invented`` (in neither) and
    None for whitespace; ``deleted`` lists, in source order, the source units that the output
    does not contain (counted with multiplicity: a word twice in the source and once in the
    output is deleted once). Units are compared exactly (case-sensitive), as the ``stats``
    metric's copy percentage does.
    """
    src_units = units(src, chars)
    src_set = set(src_units)
    ref_set = set(u for r in refs for u in units(r, chars))
    segments = []
    for seg in (_CHAR_UNITS if chars else _WORD_UNITS).findall(hyp):
        if seg.isspace():
            segments.append((seg, None))
        elif seg in M.UNK_TOKENS:
            segments.append((seg, "unk"))
        elif seg in src_set:
            segments.append((seg, "copied"))
        elif seg in ref_set:
            segments.append((seg, "generated"))
        else:
            segments.append((seg, "invented"))
    left = Counter(units(hyp, chars))
    deleted = []
    for u in src_units:
        if left[u] > 0:
            left[u] -= 1
        else:
            deleted.append(u)
    return segments, deleted


def sentence_scores(sys_sents, orig, refs, columns, sari_mode="default", rouge_chars=False,
                    rouge_stemmer=True):
    """Per-sentence scores of one system: {column: [float per sentence]}.

    ``columns`` among ``sari`` (EASSE's sentence SARI in ``sari_mode``: the corpus formula on one
    sentence's statistics), ``rougeL`` (rouge-score F1 x 100, best reference), ``bleu``
    (sacrebleu ``sentence_bleu``, exponential smoothing, all references) and ``len_ratio``
    (output units / source units; 0 for an empty source).

    This is the only place the page computes per-sentence scores: swap it for the scoring
    API's per-sentence scores when that exists.
    """
    out = {}
    if "sari" in columns:
        rows = sari_lib.corpus_stats(orig, sys_sents, refs, mode=sari_mode)
        out["sari"] = [sari_lib.sari_from_stats(row, mode=sari_mode) for row in rows]
    if "rougeL" in columns:
        per_sent = M.rouge_sentence_scores(sys_sents, refs, ("rougeL",), rouge_chars, rouge_stemmer)
        out["rougeL"] = [float(v) for v in per_sent["rougeL"]]
    if "bleu" in columns:
        import sacrebleu

        out["bleu"] = [sacrebleu.sentence_bleu(h, [r[i] for r in refs]).score for i, h in enumerate(sys_sents)]
    if "len_ratio" in columns:
        out["len_ratio"] = []
        for h, s in zip(sys_sents, orig):
            n_src = len(units(s, rouge_chars))
            out["len_ratio"].append(len(units(h, rouge_chars)) / n_src if n_src else 0.0)
    return out


def corpus_scores(metrics, sys_sents, orig, refs, sari_mode="default", rouge_chars=False,
                  rouge_stemmer=True):
    """``({metric: CorpusMetric}, {metric: value})`` exactly as ``fairseq-wean-score`` computes
    them (``stats`` is a dict of its four values)."""
    corpus = M.build_metrics(metrics, sys_sents, orig, refs, sari_mode=sari_mode, rouge_chars=rouge_chars,
                             rouge_stemmer=rouge_stemmer)
    values = {}
    for m in metrics:
        if m == "stats":
            rows = M.output_stats_rows(sys_sents, orig)
            values[m] = M.output_stats_from_stats(rows.sum(axis=0), len(sys_sents))
        else:
            values[m] = float(corpus[m].score())
    return corpus, values


def sentence_columns(metrics):
    """Per-sentence score columns for ``--metrics``: ROUGE-L when any ROUGE is asked for, SARI
    when SARI is or no ROUGE is, then BLEU and the length ratio."""
    rouge = any(m.startswith("rouge") for m in metrics)
    cols = []
    if "sari" in metrics or not rouge:
        cols.append("sari")
    if rouge:
        cols.append("rougeL")
    return cols + ["bleu", "len_ratio"]


def load_inputs(sys_paths, names, orig_path, ref_paths):
    """(systems, orig, refs): every input read and checked for one line per test sentence."""
    if names is not None and len(names) != len(sys_paths):
        raise FairseqWeanError("--names has {} name(s) but --sys has {} file(s): give one name per "
                               "system".format(len(names), len(sys_paths)))
    orig = textio.read_lines(orig_path, "--orig") if orig_path else None
    refs = [textio.read_lines(r, "--refs") for r in ref_paths] if ref_paths else None
    n = len(orig) if orig is not None else (len(refs[0]) if refs else None)
    systems = []
    for i, path in enumerate(sys_paths):
        name = names[i] if names else os.path.basename(path)
        systems.append(read_system(path, name, n))
        if n is None:
            n = len(systems[0].sentences)
    first_log = next((s.log for s in systems if s.log is not None), None)
    if orig is None and first_log is not None and first_log.src:
        orig = first_log.ordered(first_log.src, n, "source (S- line)")
    if refs is None and first_log is not None and first_log.tgt:
        refs = [first_log.ordered(first_log.tgt, n, "reference (T- line)")]
    if orig is None:
        raise FairseqWeanError("--orig FILE (the source sentences) is required (or a fairseq-generate log "
                               "with S- lines as the first --sys)")
    if refs is None:
        raise FairseqWeanError("--refs FILE [FILE ...] is required (or a fairseq-generate log with T- lines "
                               "as the first --sys)")
    counts = [("--sys " + s.path, len(s.sentences)) for s in systems]
    counts.append(("--orig " + (orig_path or "(S- lines)"), len(orig)))
    for i, r in enumerate(refs):
        counts.append(("--refs " + (ref_paths[i] if ref_paths else "(T- lines)"), len(r)))
    if len(set(c for _, c in counts)) > 1:
        raise FairseqWeanError(
            "inputs have different numbers of lines: {}; every file must have one line per test "
            "sentence".format(", ".join("{} has {}".format(name, c) for name, c in counts)))
    return systems, orig, refs


def build_report(systems, orig, refs, metrics=DEFAULT_METRICS, sari_mode="default", rouge_chars=False,
                 rouge_stemmer=True, bootstrap_samples=M.BOOTSTRAP_SAMPLES):
    """Everything the page shows, as a dict (see :func:`fairseq_wean.report.render.render_page`).

    ``corpus[k]`` holds system k's corpus values and, for k > 0, ``p_values``: the paired
    bootstrap against system 0, as ``fairseq-wean-score --sys K --compare-to FIRST`` reports.
    """
    columns = sentence_columns(metrics)
    opts = dict(sari_mode=sari_mode, rouge_chars=rouge_chars, rouge_stemmer=rouge_stemmer)
    corpus, first = [], None
    for k, system in enumerate(systems):
        metric_objs, values = corpus_scores(metrics, system.sentences, orig, refs, **opts)
        entry = {"values": values, "p_values": {}}
        if k == 0:
            first = metric_objs
        else:
            entry["p_values"] = M.paired_bootstrap(metric_objs, first, n_samples=bootstrap_samples)
        corpus.append(entry)
    sentences = []
    per_system_scores = [sentence_scores(s.sentences, orig, list(refs), columns, **opts) for s in systems]
    for i, src in enumerate(orig):
        row_refs = [r[i] for r in refs]
        outputs = []
        for k, system in enumerate(systems):
            segments, deleted = classify_tokens(system.sentences[i], src, row_refs, rouge_chars)
            outputs.append({
                "text": system.sentences[i],
                "segments": segments,
                "deleted": deleted,
                "scores": {c: per_system_scores[k][c][i] for c in columns},
                "positional": system.values("P", i),
                "gates": system.values("G", i),
            })
        sentences.append({"id": i, "source": src, "refs": row_refs, "outputs": outputs})
    return {
        "systems": [{"name": s.name, "path": s.path, "is_log": s.log is not None} for s in systems],
        "metrics": list(metrics),
        "sari_mode": sari_mode,
        "rouge_chars": rouge_chars,
        "columns": columns,
        "corpus": corpus,
        "bootstrap_samples": bootstrap_samples,
        "n_refs": len(refs),
        "sentences": sentences,
        "source_lengths": [len(units(s, rouge_chars)) for s in orig],
        "ref_lengths": [len(units(r, rouge_chars)) for r in refs[0]],
    }
