"""Reading what is scored: system outputs, sources and references, as ``fairseq-wean-score`` and
``fairseq-wean-report`` take them.

A system output is a plain file (one sentence per line) or a fairseq-generate log, recognised by
its ``H-<id>`` lines (:class:`fairseq_wean.scoring.generate_log.GenerateLog`: the best hypothesis
per id, in id order; its ``D-`` lines where the log was decoded with ``--bpe`` / ``--tokenizer``,
``--hyp-lines`` chooses). Without ``--orig`` / ``--refs`` a log's ``S-`` / ``T-`` lines stand in
for them. Every input must then have one line per test sentence, and hold words, not subword
pieces (:func:`words_only`, :mod:`fairseq_wean.scoring.pieces`).
"""
from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import pieces
from fairseq_wean.scoring.generate_log import GenerateLog

HYP_LINES = ("auto", "H", "D")


def add_text_options(parser):
    """``--hyp-lines`` and ``--post-process``, the same in fairseq-wean-score and -report."""
    parser.add_argument("--hyp-lines", choices=HYP_LINES, default="auto",
                        help="which lines of a fairseq-generate log are the hypotheses: H (the dictionary's tokens "
                             "after fairseq's --post-process), D (those decoded by --bpe/--tokenizer), or auto "
                             "(default): D when the log was decoded with a BPE or tokenizer (its D- lines differ "
                             "from its H- lines), else H")
    parser.add_argument("--post-process", choices=pieces.POST_PROCESS, metavar="NAME",
                        help="remove subword pieces from every input before scoring, with fairseq's --post-process "
                             "rule NAME (subword_nmt, sentencepiece, characters, ...). Without it an input that "
                             "holds pieces ('@@ ', '\u2581') is refused: pieces scored as words give wrong scores")


def read_system(path, what, n=None, hyp_lines="auto"):
    """(sentences, GenerateLog or None). ``n`` = expected number of sentences, if known."""
    lines = textio.read_lines(path, what)
    if not GenerateLog.looks_like_log(lines):
        return lines, None
    log = GenerateLog(path, lines)
    return log.hypotheses(n, hyp_lines), log


def words_only(systems, orig, orig_path, refs, ref_paths, post_process=None):
    """Every input post-processed with ``post_process`` (None: as it is) and checked to hold words.

    ``systems``: [(path, sentences, GenerateLog or None)]; ``orig`` / ``refs``: the sources and
    reference streams (from files, or from a log's S- / T- lines where their paths are None).
    Returns ``(system sentences list, orig, refs)``. (fairseq-generate decodes its S- and T- lines
    with --bpe / --tokenizer as it decodes the D- lines: they go together.)"""
    out_systems = [pieces.apply(sentences, post_process) for _, sentences, _ in systems]
    orig = pieces.apply(orig, post_process)
    refs = [pieces.apply(r, post_process) for r in refs] if refs is not None else None
    named = []
    for (path, _, system_log), sentences in zip(systems, out_systems):
        if system_log is not None and system_log.hypothesis_lines == "H":
            fix = ("decode with fairseq-generate --post-process {kind} (H- lines), or with --bpe and its model "
                   "so that the D- lines are words")
            name = "{} (H- lines)".format(path)
        else:
            fix, name = None, path
        named.append((name, sentences, fix))
    named.append(("--orig " + orig_path if orig_path else "the log's S- lines", orig,
                  None if orig_path else "give the sources as text with --orig FILE"))
    for i, r in enumerate(refs or []):
        named.append(("--refs " + ref_paths[i] if ref_paths else "the log's T- lines", r,
                      None if ref_paths else "give the references as text with --refs FILE (the raw test set)"))
    pieces.check_no_pieces(named)
    return out_systems, orig, refs


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
