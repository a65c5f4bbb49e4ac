"""Reading what is scored: system outputs, sources and references, as ``fairseq-wean-score`` and
``fairseq-wean-report`` take them.

A system output is a plain file (one sentence per line) or a fairseq-generate log, recognised by
its ``H-<id>`` lines (:class:`fairseq_wean.scoring.generate_log.GenerateLog`: the first ``H-``
line per id, in id order). Without ``--orig`` / ``--refs`` a log's ``S-`` / ``T-`` lines stand in
for them. Every input must then have one line per test sentence.
"""
from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring.generate_log import GenerateLog


def read_system(path, what, n=None):
    """(sentences, GenerateLog or None). ``n`` = expected number of sentences, if known."""
    lines = textio.read_lines(path, what)
    if not GenerateLog.looks_like_log(lines):
        return lines, None
    log = GenerateLog(path, lines)
    return log.hypotheses(n), log


def read_sources_and_references(orig_path, ref_paths):
    """(orig, refs, n): the ``--orig`` lines and each ``--refs`` file's lines (None where not
    given) and the number of test sentences they give (None when neither is given)."""
    orig = textio.read_lines(orig_path, "--orig") if orig_path else None
    refs = [textio.read_lines(r, "--refs") for r in ref_paths] if ref_paths else None
    n = len(orig) if orig is not None else (len(refs[0]) if refs else None)
    return orig, refs, n


def sources_and_references_from_log(orig, refs, log, n):
    """(orig, refs), each taken from the log's ``S-`` / ``T-`` lines where not given."""
    if orig is None and log is not None and log.src:
        orig = log.ordered(log.src, n, "source (S- line)")
    if refs is None and log is not None and log.tgt:
        refs = [log.ordered(log.tgt, n, "reference (T- line)")]
    return orig, refs


def check_line_counts(systems, orig, orig_path, refs, ref_paths):
    """Refuse inputs with different numbers of lines. ``systems``: ``(path, sentences)`` per
    system output; ``orig`` / ``refs`` may be None. Returns the ``(name, count)`` pairs."""
    counts = [("--sys " + path, len(sentences)) for path, sentences in systems]
    if orig is not None:
        counts.append(("--orig " + (orig_path or "(S- lines)"), len(orig)))
    for i, r in enumerate(refs or []):
        counts.append(("--refs " + (ref_paths[i] if ref_paths else "(T- lines)"), len(r)))
    if len(set(c for _, c in counts)) > 1:
        raise FairseqWeanError(
            "inputs have different numbers of lines: {}; every file must have one line per test "
            "sentence".format(", ".join("{} has {}".format(name, c) for name, c in counts)))
    return counts
