"""Reading what is scored: system outputs, sources and references, as ``fairseq-wean-score`` and
``fairseq-wean-report`` take them.

A system output is a plain file (one sentence per line) or a fairseq-generate log, recognised by
its ``H-<id>`` lines (:class:`fairseq_wean.scoring.generate_log.GenerateLog`: the best hypothesis
per id, in id order; its ``D-`` lines where the log was decoded with ``--bpe`` / ``--tokenizer``,
``--hyp-lines`` chooses). Without ``--orig`` / ``--refs`` a log's ``S-`` / ``T-`` lines stand in
for them. Every input must then have one line per test sentence, and hold words, not subword
pieces (:func:`words_only`, :mod:`fairseq_wean.scoring.pieces`), in one Unicode normalization form
(:func:`check_normalization`).
"""
import hashlib
import html
import os
import re
import unicodedata

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import pieces
from fairseq_wean.scoring.generate_log import GenerateLog, check_complete_file, check_text

HYP_LINES = ("auto", "H", "D")


def _post_process_option(name):
    """``--post-process``: a rule that removes something (``none`` changes nothing: refused)."""
    import argparse

    if name == "none":
        raise argparse.ArgumentTypeError("'none' changes nothing (text is scored as it is without the option): "
                                         "drop it")
    return name


def add_text_options(parser):
    """``--hyp-lines`` and ``--post-process``, the same in fairseq-wean-score and -report."""
    parser.add_argument("--hyp-lines", choices=HYP_LINES, default="auto",
                        help="which lines of a fairseq-generate log are the hypotheses: H (the dictionary's tokens "
                             "after fairseq's --post-process), D (those decoded by --bpe/--tokenizer), or auto "
                             "(default): D when the log was decoded with a BPE or tokenizer (its D- lines differ "
                             "from its H- lines), else H")
    parser.add_argument("--post-process", type=_post_process_option, metavar="NAME",
                        choices=[rule for rule in pieces.POST_PROCESS if rule != "none"],
                        help="remove subword pieces from every input before scoring, with fairseq's --post-process "
                             "rule NAME (subword_nmt, sentencepiece, characters, ...). Without it an input that "
                             "holds pieces ('@@ ', '\u2581') is refused: pieces scored as words give wrong scores")


def read_text(path, what):
    """The lines of a scored input (textio: UTF-8, a pipe or standard input too), with no control
    character but tab (:func:`~fairseq_wean.scoring.generate_log.check_text`)."""
    return check_text(textio.read_lines(path, what), path, what)


def read_system(path, what, n=None, hyp_lines="auto"):
    """(sentences, GenerateLog or None). ``n`` = expected number of sentences, if known."""
    lines = read_text(path, what)
    if not GenerateLog.looks_like_log(lines):
        return lines, None
    log = GenerateLog(path, lines)
    check_complete_file(path, what + " log")  # after the grammar's checks: fairseq-interactive's have no end line
    return log.hypotheses(n, hyp_lines), log


def words_only(systems, orig, orig_path, refs, ref_paths, post_process=None):
    """Every input post-processed with ``post_process`` (None: as it is) and checked to hold words.

    ``systems``: [(path, sentences, GenerateLog or None)]; ``orig`` / ``refs``: the sources and
    reference streams (from files, or from a log's S- / T- lines where their paths are None).
    Returns ``(system sentences list, orig, refs)``. (fairseq-generate decodes its S- and T- lines
    with --bpe / --tokenizer as it decodes the D- lines: they go together.)"""
    raw = ([sentences for _, sentences, _ in systems], orig, refs)
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
    before = list(raw[0]) + [raw[1]] + list(raw[2] or [])
    pieces.check_post_process([(name, lines, None) for (name, _, _), lines in zip(named, before)], post_process)
    pieces.check_no_pieces(named)
    check_normalization([(name, lines) for name, lines, _ in named])  # the files named, before any metric's work
    return out_systems, orig, refs


def read_sources_and_references(orig_path, ref_paths):
    """(orig, refs, n): the ``--orig`` lines and each ``--refs`` file's lines (None where not
    given) and the number of test sentences they give (None when neither is given)."""
    orig = read_text(orig_path, "--orig") if orig_path else None
    refs = [read_text(r, "--refs") for r in ref_paths] if ref_paths else None
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


def file_key(path):
    """What names one file: its device and inode where it exists (a symbolic or hard link to a file gives
    the file's), else its resolved path (:func:`fairseq_wean.textio.same_file`'s rule, as a key)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return ("path", os.path.realpath(path))
    return ("file", info.st_dev, info.st_ino)


# The lists whose files may not be copies of one another (byte-identical: one reference counted twice, its
# n-grams matched twice, the reference count of BLEU, SARI and TER changed). Not systems (two systems may write the
# same output) nor roles (a system's output may be its sources: the copy-source baseline).
CONTENT_DISTINCT = ("--refs", "--eval-refs")
HASH_CHUNK = 1 << 20


def content_digest(path):
    """SHA-256 of a file's bytes, read in chunks of :data:`HASH_CHUNK` (memory bounded whatever its size)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.digest()


def check_distinct_content(paths, option):
    """Refuse two byte-identical copies in ``option``'s list (one of :data:`CONTENT_DISTINCT`), naming both:
    only regular files of one size are read (a pipe or standard input, read once, is not), each once, streamed
    (:func:`content_digest`); empty files are left to the reading's "nothing to score". A file named twice is
    :func:`check_distinct`'s (its message first)."""
    by_size = {}
    for path in paths:
        if path in textio.STDIN_NAMES or textio.node_kind(path, follow=True) != textio.REGULAR:
            continue  # nothing there, a pipe, a device: the reading names it
        by_size.setdefault(os.stat(path).st_size, []).append(path)
    for size, group in by_size.items():
        seen = {}
        for path in group if len(group) > 1 and size else ():
            first = seen.setdefault(content_digest(path), path)
            if first != path:
                raise FairseqWeanError(
                    "{} names two copies of one file ({} and {} hold the same bytes): a reference given twice is "
                    "counted twice; give each reference once".format(option, first, path))


def check_distinct(paths, option):
    """Refuse one file named twice in ``option``'s list (a reference counted twice, a system
    compared with itself): one stat a path, linear in the list (a list of 600 references is checked
    in milliseconds); in the lists of :data:`CONTENT_DISTINCT` (references) also two copies of one file
    (:func:`check_distinct_content`). Standard input is not a file here (reading it twice is refused
    where inputs are read)."""
    seen = {}
    for i, a in enumerate(paths):
        if a in textio.STDIN_NAMES:
            continue
        first = seen.setdefault(file_key(a), i)
        if first != i:
            b = paths[first]
            raise FairseqWeanError("{} names {}: give each file once".format(
                option, "{} twice".format(a) if a == b else "one file twice ({} and {})".format(b, a)))
    if option in CONTENT_DISTINCT:
        check_distinct_content(paths, option)



# Two roles of one call that may not name one file (any name of it: a link, another spelling), as (the role
# named first, the later one) -> why. A system's output that is its sources is allowed: the identity
# ("copy source") baseline of simplification, which fairseq-wean-compare scores so.
SAME_FILE_ROLES = {
    ("--sys", "--compare-to"): "a system compared with itself has p = 1 by construction; give another system's "
                               "output",
    ("--sys", "--refs"): "a system scored against itself as its reference gets BLEU 100 by construction; give the "
                         "reference file(s)",
    ("--compare-to", "--refs"): "a system scored against itself as its reference gets BLEU 100 by construction; "
                                "give the reference file(s)",
    ("--orig", "--refs"): "the sources as their own reference reward copying them (SARI, stats); give the reference "
                          "file(s)",
}
ROLE_ORDER = ("--sys", "--compare-to", "--orig", "--refs")


def check_distinct_roles(roles):
    """Refuse, before anything is read, a file named twice within one role (:func:`check_distinct`) or by two
    roles of :data:`SAME_FILE_ROLES` (``--refs sys.txt``: BLEU 100). ``roles``: ``{option: path, list of
    paths or None}`` of one call, the options of :data:`ROLE_ORDER`; one stat a path (linear)."""
    unknown = set(roles) - set(ROLE_ORDER)
    if unknown:
        raise ValueError("unknown input role(s) {}".format(sorted(unknown)))
    named = {}  # file key -> [(option, path)] of the roles that named it so far
    for option in ROLE_ORDER:
        value = roles.get(option)
        paths = [] if value is None else [value] if isinstance(value, str) else list(value)
        check_distinct(paths, option)
        for path in paths:
            if path in textio.STDIN_NAMES:
                continue
            key = file_key(path)
            for earlier, _ in named.get(key, ()):
                why = SAME_FILE_ROLES.get((earlier, option))
                if why is not None:
                    raise FairseqWeanError("{} {} is {} itself: {}".format(option, path, earlier, why))
            named.setdefault(key, []).append((option, path))

# -------------------------------------------------------------------------------------------------
# A log's S- / T- lines against the --orig / --refs given with it
_UNK_FORMS = re.compile(r"<<unk>>|<unk(?:-\d+)?>")
_MOSES_GLUE = re.compile(r" ?@([-,.])@ ?")


def _comparable(text):
    """``text`` as it is compared with a log's line: Unicode NFKC, HTML/Moses entities resolved,
    Moses ``@-@`` glue and subword marks (``@@``, ``\u2581``) removed, lowercased, no whitespace:
    what fairseq's tokenization, BPE and post-processing may change in a sentence."""
    text = unicodedata.normalize("NFKC", html.unescape(_MOSES_GLUE.sub(r"\1", text)))
    text = text.replace("@@ ", "").replace("@@", "").replace(pieces.SENTENCEPIECE_MARK, "")
    return "".join(text.split()).lower()


def log_line_matches(log_text, text):
    """Whether a log's ``S-``/``T-`` line can be fairseq's view of the file line ``text``: equal after
    :func:`_comparable`, where each ``<unk>`` / ``<<unk>>`` / ``<unk-N>`` of the log stands for one
    or more characters of ``text`` (a glob match, leftmost first: linear, never backtracking)."""
    parts = [_comparable(p) for p in _UNK_FORMS.split(log_text)]
    target = _comparable(text)
    if len(parts) == 1:
        return parts[0] == target
    if not target.startswith(parts[0]) or not target.endswith(parts[-1]):
        return False
    position, end = len(parts[0]), len(target) - len(parts[-1])
    for part in parts[1:-1]:
        found = target.find(part, position + 1, end)  # + 1: an <unk> stands for at least one character
        if found < 0:
            return False
        position = found + len(part)
    return end - position >= 1


def check_log_matches_inputs(log, n, orig, orig_path, refs, ref_paths, first_log=None, flags=("--orig", "--refs")):
    """Refuse a fairseq-generate log whose ``S-`` lines contradict ``--orig`` or whose ``T-`` lines
    match no ``--refs`` stream, naming the first sentence that differs: the log was generated from
    another test set (or subset) than the files given, and its scores would be meaningless (the
    line counts may agree by chance). Where ``orig``/``refs`` are not files but ``first_log``'s
    ``S-``/``T-`` lines, every other log is checked against them. See :func:`log_line_matches`
    for what may differ (fairseq's <unk> forms, tokenization, BPE, case). ``flags`` name the files
    in the message (the tool's options)."""
    other_log = first_log is not None and first_log is not log
    orig_what = (flags[0] + " " + orig_path if orig_path else
                 "the S- lines of " + first_log.path if other_log else None)
    refs_what = (flags[1] + " " + " ".join(ref_paths) if ref_paths else
                 "the T- lines of " + first_log.path if other_log else None)

    def short(text):
        return text if len(text) <= 60 else text[:57] + "..."

    checks = []
    if orig_what and orig is not None and log.src:
        checks.append(("S", log.src, [orig], orig_what))
    if refs_what and refs and log.tgt:
        checks.append(("T", log.tgt, refs, refs_what))
    for kind, table, streams, what in checks:
        for sid in sorted(i for i in table if i < n):
            if not any(log_line_matches(table[sid], stream[sid]) for stream in streams):
                raise FairseqWeanError(
                    "fairseq-generate log {} does not match {}: its {}-{} line {!r} differs from line {} {!r}; the "
                    "log was generated from other data (another --gen-subset or test set): give the files the log "
                    "was generated from".format(
                        log.path, what, kind, sid, short(table[sid]), sid + 1, short(streams[0][sid])))


# -------------------------------------------------------------------------------------------------
# Unicode normalization forms: one text, two spellings ('ä' as one character, NFC, or as 'a' and a combining
# U+0308, NFD) are different words and characters to every metric, as to sacrebleu (which normalizes nothing):
# a system in NFD scored against its own text in NFC got BLEU 75.5. Inputs that are each in one form score as
# sacrebleu scores them; inputs that mix the two forms are refused (the fix: every input in NFC), so that every
# score printed is sacrebleu's on the files as given.
NFC_FIX = ("normalize every input to NFC, e.g. python3 -c \"import sys, unicodedata; sys.stdout.write(unicodedata."
           "normalize('NFC', sys.stdin.read()))\" < FILE > FILE.nfc")


def _spelt(line, form, longer):
    """Whether ``line`` holds text that ``form`` spells with more (``longer``) or fewer characters: NFD writes a
    precomposed letter as a letter and marks (composed text), NFC a letter and its marks as one (decomposed
    text). A singleton such as the ohm sign, which both forms replace by one character, is neither."""
    if unicodedata.is_normalized(form, line):
        return False
    size = len(unicodedata.normalize(form, line))
    return size > len(line) if longer else size < len(line)


def normalization_forms(lines):
    """(decomposed example, composed example): a word of ``lines`` written decomposed (NFD: a letter and its
    combining marks, where NFC has one character) and one written composed (NFC: a precomposed letter), None
    where there is none. Cheap on ordinary text: a line in one form passes a quick check in C."""
    decomposed = composed = None
    for line in lines:
        if decomposed is None and _spelt(line, "NFC", longer=False):
            decomposed = next((w for w in line.split() if _spelt(w, "NFC", longer=False)), line[:30])
        if composed is None and _spelt(line, "NFD", longer=True):
            composed = next((w for w in line.split() if _spelt(w, "NFD", longer=True)), line[:30])
        if decomposed is not None and composed is not None:
            break
    return decomposed, composed


def _shown(word, decomposed):
    """A word as a message shows it, with the code points that differ (invisible on screen): its combining marks
    where ``decomposed``, else its precomposed letters."""
    codes = [ch for ch in word if unicodedata.combining(ch)] if decomposed else [
        ch for ch in word if len(unicodedata.normalize("NFD", ch)) > 1]
    return "{!r} with {}".format(word[:30], ", ".join("U+{:04X}".format(ord(ch)) for ch in codes[:3]) or "jamo")


SCORED_APART = ("the same text spelt in two forms scores as different words and characters (sacrebleu does not "
                "normalize)")


def check_normalization(named_inputs, harm=SCORED_APART):
    """Refuse, in one line naming the inputs and the fix (:data:`NFC_FIX`), inputs compared with one another
    whose text is in two Unicode normalization forms: some decomposed (NFD) and some composed (NFC), in two
    inputs or within one (lines of two origins concatenated). ``named_inputs``: (name, lines) per input (lines
    None: not given, or an iterator: read once, and only until both forms are seen); every scoring entry calls it
    (fairseq-wean-score, -report, -compare through the library, fairseq-generate --scoring rouge, validation in
    fairseq-train), as fairseq-preprocess does for a corpus (``harm``: what the two forms would do there)."""
    decomposed = composed = None
    for name, lines in named_inputs:
        if lines is None:
            continue
        d, c = normalization_forms(lines)
        decomposed = decomposed or (d and (name, d))
        composed = composed or (c and (name, c))
        if decomposed and composed:
            forms = "NFD (decomposed letters, e.g. {}) {} NFC (composed, e.g. {})".format(
                _shown(decomposed[1], True), "and" if decomposed[0] == composed[0] else "and " + composed[0] + " in",
                _shown(composed[1], False))
            raise FairseqWeanError(
                "{} {} Unicode {}: {}; {}".format(
                    decomposed[0], "mixes" if decomposed[0] == composed[0] else "is in", forms, harm, NFC_FIX))
