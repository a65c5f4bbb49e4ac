"""The data of the ``fairseq-wean-report`` page: corpus scores, per-sentence scores, token classes.

Everything the page shows is computed here, as plain Python values; :mod:`.render` only turns
them into HTML. Inputs are read as ``fairseq-wean-score`` reads them, by the same code
(:mod:`fairseq_wean.scoring.inputs`): a system output is a plain file (one sentence per line) or
a fairseq-generate log (its ``H-`` lines, the first per sentence id, put back in id order;
``S-``/``T-`` lines stand in for ``--orig``/``--refs`` when those are not given). From a log the report also keeps, per sentence, the per-token values fairseq-generate
printed for that first hypothesis: ``P-`` (positional log2-probabilities, one per token plus
``</s>``) and ``G-`` (copy or contextual gates, the same shape), shown when hovering a token.

Nothing here scores or parses on its own: logs are read by the project's one generate-log parser
(:class:`fairseq_wean.scoring.generate_log.GenerateLog`, which keeps ``P-``/``G-`` lines too),
corpus scores and p-values come from :func:`fairseq_wean.scoring.score` (what
``fairseq-wean-score`` prints), per-sentence scores from
:func:`fairseq_wean.scoring.sentence_scores`, and a token is coloured "invented" by
:func:`fairseq_wean.scoring.metrics.is_invented`, the test behind the scorer's ``invented_pct``.
"""
import os
import re
from collections import Counter

from fairseq_wean.cli.options import check_labels
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import inputs
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import scores
from fairseq_wean.scoring.generate_log import parse_token_values

DEFAULT_METRICS = ("bleu", "sari", "stats")
METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF", "ter": "TER", "sari": "SARI", "fkgl": "FKGL", "rouge1": "ROUGE-1 F1",
                "rouge2": "ROUGE-2 F1", "rougeL": "ROUGE-L F1"}
STATS_NAMES = {"avg_len": "average length", "unk_pct": "% <unk>", "copy_pct": "% copied tokens",
               "exact_copy_pct": "% exact copies", "invented_pct": "% invented words",
               "invented_sent_pct": "% sentences with invented words"}
# token classes, in legend order: the monolingual view (simplification, summarization) and the
# cross-lingual one (translation: source words are no output words, so nothing is copied, deleted
# or invented; an output word is in a reference or not)
TOKEN_CLASSES = ("copied", "generated", "unk", "invented", "deleted")
CROSS_LINGUAL_CLASSES = ("matched", "unk", "unmatched")
VIEWS = ("auto", "monolingual", "cross-lingual")
# auto: cross-lingual when under this share of the references' words occur in their sources
CROSS_LINGUAL_OVERLAP = 0.2
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


def token_values(log):
    """{"P": {id: [float]}, "G": {id: [float]}}: the log's first ``P-``/``G-`` line per sentence id
    (the one that follows the best hypothesis of an n-best list); a line that is not a list of
    numbers is left out."""
    out = {}
    for kind, table in (("P", log.positional), ("G", log.gates)):
        parsed = ((sid, parse_token_values(text)) for sid, text in table.items())
        out[kind] = {sid: values for sid, values in parsed if values is not None}
    return out


def read_system_output(path, name, n=None, hyp_lines="auto"):
    """A :class:`SystemOutput` from a plain output file or a fairseq-generate log."""
    sentences, log = inputs.read_system(path, "--sys", n, hyp_lines)
    return SystemOutput(name, path, sentences, log, token_values(log) if log is not None else None)


def units(text, chars=False):
    """The page's units of ``text``: words, or with ``chars`` the characters ROUGE counts
    (:func:`fairseq_wean.scoring.metrics.character_tokens`: ASCII runs whole, spaces ignored)."""
    if chars:
        return M.character_tokens(text)
    return [u for u in _WORD_UNITS.findall(text) if not u.isspace()]


def source_reference_overlap(orig, refs):
    """The share of the first references' words (lowercased) that occur in their sources: about
    0.5 and more for simplification or summarization, under 0.2 between two languages."""
    total = found = 0
    for src, ref in zip(orig, refs[0]):
        src_words = set(src.lower().split())
        words = ref.lower().split()
        total += len(words)
        found += sum(w in src_words for w in words)
    return found / total if total else 1.0


def choose_view(view, orig, refs):
    """``monolingual`` or ``cross-lingual``: ``view`` as given, or for ``auto`` by
    :func:`source_reference_overlap` (under ``CROSS_LINGUAL_OVERLAP``: cross-lingual)."""
    if view != "auto":
        return view
    return "cross-lingual" if source_reference_overlap(orig, refs) < CROSS_LINGUAL_OVERLAP else "monolingual"


def _segments(hyp, chars, word_class):
    """``hyp`` cut into units and whitespace, ``(text, cls)``: None for whitespace, ``unk`` for
    ``<unk>``/``UNK``, ``word_class(unit)`` for every other unit."""
    return [(seg, None if seg.isspace() else "unk" if seg in M.UNK_TOKENS else word_class(seg))
            for seg in (_CHAR_UNITS if chars else _WORD_UNITS).findall(hyp)]


def classify_cross_lingual(hyp, refs, chars=False):
    """``(segments, [])`` of an output in another language than its source: ``unk``, ``matched``
    (in a reference, lowercased) or ``unmatched``; no source comparison and no deletions."""
    in_refs = set(u.lower() for ref in refs for u in units(ref, chars))
    return _segments(hyp, chars, lambda u: "matched" if u.lower() in in_refs else "unmatched"), []


def classify_tokens(hyp, src, refs, chars=False):
    """Token classes of one output, and the source words it deleted.

    Returns ``(segments, deleted)``: ``segments`` is ``hyp`` cut into units and whitespace, as
    ``(text, cls)`` with cls one of ``unk`` (``<unk>``/``UNK``), ``copied`` (the unit is in the
    source, compared exactly as the ``stats`` metric's copy percentage does), ``invented``
    (in neither the source nor a reference, by :func:`fairseq_wean.scoring.metrics.is_invented`:
    lowercased, punctuation not special, so that the words coloured invented are those the
    scorer's ``invented_pct`` counts), ``generated`` (any other unit: in a reference, or in the
    source only up to case) and None for whitespace; ``deleted`` lists, in source order, the
    source units that the output does not contain (counted with multiplicity: a word twice in
    the source and once in the output is deleted once).

    With ``chars`` the units are characters (ASCII runs kept whole) and a unit is invented if it
    is in no source or reference unit, lowercased: the scorer's invented words are whitespace
    tokens, which unsegmented Chinese text does not have.
    """
    src_units = units(src, chars)
    src_set = set(src_units)
    if chars:
        known = set(u.lower() for text in [src] + list(refs) for u in units(text, chars))
    else:
        known = M.known_words(src, refs)
    segments = _segments(hyp, chars, lambda u: "copied" if u in src_set else
                         "invented" if M.is_invented(u, known) else "generated")
    left = Counter(units(hyp, chars))
    deleted = []
    for u in src_units:
        if left[u] > 0:
            left[u] -= 1
        else:
            deleted.append(u)
    return segments, deleted


def sentence_scores(sys_sents, orig, refs, columns, sari_mode="default", rouge_chars=False,
                    rouge_stemmer=True, statistics=None, bleu_tokenize=M.BLEU_TOKENIZE):
    """Per-sentence scores of one system: {column: [float per sentence]}, from
    :func:`fairseq_wean.scoring.sentence_scores`.

    ``columns`` among ``sari``, ``rougeL``, ``bleu`` and ``len_ratio`` (output units / source
    units, 0 for an empty source: the library's whitespace-token ratio, or with ``rouge_chars``
    the ratio of the page's character units). ``statistics``: the system's corpus statistics
    (:func:`corpus_scores`), reused rather than computed again.
    """
    opts = dict(sources=orig, references=refs, sari_mode=sari_mode, rouge_chars=rouge_chars,
                rouge_stemmer=rouge_stemmer, statistics=statistics, bleu_tokenize=bleu_tokenize)
    main = [c for c in columns if c in scores.SENTENCE_METRICS] or [None]  # None: bleu and length ratio only
    rows = {m: scores.sentence_scores(sys_sents, metric=m, **opts) for m in main}
    first = rows[main[0]]
    out = {}
    for c in columns:
        if c in rows:
            out[c] = [r[c] for r in rows[c]]
        elif c == "bleu":
            out[c] = [r["bleu"] for r in first]
        elif c == "len_ratio" and rouge_chars:
            out[c] = [len(units(h, True)) / len(units(s, True)) if units(s, True) else 0.0
                      for h, s in zip(sys_sents, orig)]
        elif c == "len_ratio":
            out[c] = [r["length_ratio"] or 0.0 for r in first]
    return out


def corpus_scores(metrics, systems, orig, refs, sari_mode="default", rouge_chars=False, rouge_stemmer=True,
                  bootstrap_samples=None, with_statistics=False, bleu_tokenize=M.BLEU_TOKENIZE):
    """Per system ``{"values": {metric: value}, "p_values": {metric: p}}``: what
    :func:`fairseq_wean.scoring.score` returns for it (``stats`` a dict of its values) and, for
    system k > 0, its paired-bootstrap p-values against system 0, as
    ``fairseq-wean-score --sys K --compare-to FIRST`` prints them. Each system's statistics are
    computed once (``with_statistics``: also returned, as ``(scores, [statistics per system])``)."""
    out, statistics = [], []
    if len(systems) > 1 and "bleu" in metrics:  # two BLEUs of 0 by construction would get p = 1
        M.check_bleu_ngrams(M.sacrebleu_metric("bleu", bleu_tokenize), refs, bleu_tokenize)
    bootstrap_samples = M.check_bootstrap(bootstrap_samples, len(systems[0].sentences) if systems else None,
                                          compared=len(systems) > 1)
    for k, system in enumerate(systems):
        values, corpus = scores.score_with_statistics(
            system.sentences, sources=orig, references=refs, metrics=metrics, sari_mode=sari_mode,
            rouge_chars=rouge_chars, rouge_stemmer=rouge_stemmer, bleu_tokenize=bleu_tokenize)
        p_values = M.paired_bootstrap(corpus, statistics[0], n_samples=bootstrap_samples) if k else {}
        out.append({"values": values, "p_values": p_values})
        statistics.append(corpus)
    return (out, statistics) if with_statistics else out


def sentence_columns(metrics):
    """Per-sentence score columns for ``--metrics``, each only when asked for: SARI, ROUGE-L (for
    any ROUGE), BLEU; then the length ratio, always (a translation report has no SARI column)."""
    cols = []
    if "sari" in metrics:
        cols.append("sari")
    if any(m.startswith("rouge") for m in metrics):
        cols.append("rougeL")
    if "bleu" in metrics:
        cols.append("bleu")
    return cols + ["len_ratio"]


def check_distinct_inputs(sys_paths, names=None, ref_paths=None, orig_path=None):
    """Refuse a system or reference file named twice, a file in two roles (a system as a reference:
    :func:`fairseq_wean.scoring.inputs.check_distinct_roles`), and two systems of one name (two columns
    that the page could not tell apart)."""
    if names is not None and len(names) != len(sys_paths):
        raise FairseqWeanError("--names has {} name(s) but --sys has {} file(s): give one name per "
                               "system".format(len(names), len(sys_paths)))
    # the one rule of a file named twice, in one list or by two roles (linear)
    inputs.check_distinct_roles({"--sys": list(sys_paths), "--orig": orig_path, "--refs": ref_paths})
    if names is not None:  # every tool's label rule: a label, no line break, each system its own
        check_labels([("--names", name) for name in names])
    shown = list(names) if names is not None else [os.path.basename(p) for p in sys_paths]
    counts = Counter(shown)
    twice = sorted(name for name, count in counts.items() if count > 1)
    if twice:
        raise FairseqWeanError("{} {} name two systems: give each system its own name{}".format(
            "--names" if names is not None else "the file names", ", ".join(map(repr, twice)),
            "" if names is not None else " with --names"))


def load_inputs(sys_paths, names, orig_path, ref_paths, hyp_lines="auto", post_process=None, check_logs=None):
    """(systems, orig, refs): every input read and checked for one line per test sentence, every
    log's S-/T- lines against the sources and references in use
    (:func:`fairseq_wean.scoring.inputs.check_log_matches_inputs`), and for words, not subword
    pieces (:func:`fairseq_wean.scoring.inputs.words_only`). ``check_logs(any system is a log)``
    is called once the systems are read (the caller's option rules)."""
    check_distinct_inputs(sys_paths, names, ref_paths, orig_path)
    orig, refs, n = inputs.read_sources_and_references(orig_path, ref_paths)
    systems = []
    for i, path in enumerate(sys_paths):
        name = names[i] if names else os.path.basename(path)
        systems.append(read_system_output(path, name, n, hyp_lines))
        if n is None:
            n = len(systems[0].sentences)
    first_log = next((s.log for s in systems if s.log is not None), None)
    orig, refs = inputs.sources_and_references_from_log(orig, refs, first_log, n)
    if orig is None:
        raise FairseqWeanError("--orig FILE (the source sentences) is required (or a fairseq-generate log "
                               "with S- lines as the first --sys)")
    if refs is None:
        raise FairseqWeanError("--refs FILE [FILE ...] is required (or a fairseq-generate log with T- lines "
                               "as the first --sys)")
    inputs.check_line_counts([(s.path, s.sentences) for s in systems], orig, orig_path, refs, ref_paths)
    for system in systems:
        if system.log is not None:
            inputs.check_log_matches_inputs(system.log, n, orig, orig_path, refs, ref_paths, first_log=first_log)
    if check_logs is not None:
        check_logs(any(s.log is not None for s in systems))
    texts, orig, refs = inputs.words_only([(s.path, s.sentences, s.log) for s in systems], orig, orig_path, refs,
                                          ref_paths, post_process)
    for system, sentences in zip(systems, texts):
        system.sentences = sentences
    return systems, orig, refs


def build_report(systems, orig, refs, metrics=DEFAULT_METRICS, sari_mode="default", rouge_chars=False,
                 rouge_stemmer=True, bootstrap_samples=None, view="auto", bleu_tokenize=M.BLEU_TOKENIZE):
    """Everything the page shows, as a dict (see :func:`fairseq_wean.report.render.render_page`).

    ``corpus[k]`` holds system k's corpus values and, for k > 0, ``p_values``: the paired
    bootstrap against system 0, as ``fairseq-wean-score --sys K --compare-to FIRST`` reports.
    """
    columns = sentence_columns(metrics)
    view = choose_view(view, orig, refs)
    opts = dict(sari_mode=sari_mode, rouge_chars=rouge_chars, rouge_stemmer=rouge_stemmer, bleu_tokenize=bleu_tokenize)
    M.check_input_size(dict.fromkeys(list(metrics) + [c for c in columns if c in M.METRICS] + ["bleu"]),
                       systems[0].sentences, refs, orig, rouge_chars, systems=len(systems))  # before any runs
    corpus, statistics = corpus_scores(metrics, systems, orig, refs, bootstrap_samples=bootstrap_samples,
                                       with_statistics=True, **opts)
    sentences = []
    per_system_scores = [sentence_scores(s.sentences, orig, list(refs), columns, statistics=st, **opts)
                         for s, st in zip(systems, statistics)]
    for i, src in enumerate(orig):
        row_refs = [r[i] for r in refs]
        outputs = []
        for k, system in enumerate(systems):
            segments, deleted = (classify_tokens(system.sentences[i], src, row_refs, rouge_chars)
                                 if view == "monolingual" else
                                 classify_cross_lingual(system.sentences[i], row_refs, rouge_chars))
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
        "view": view,
        "sari_mode": sari_mode,
        "bleu_tokenize": bleu_tokenize,
        "rouge_chars": rouge_chars,
        "columns": columns,
        "corpus": corpus,
        "bootstrap_samples": bootstrap_samples or M.BOOTSTRAP_SAMPLES,
        "n_refs": len(refs),
        "sentences": sentences,
        "source_lengths": [len(units(s, rouge_chars)) for s in orig],
        "ref_lengths": [len(units(r, rouge_chars)) for r in refs[0]],
    }
