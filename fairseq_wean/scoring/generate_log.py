"""The one parser of fairseq-generate (and fairseq-interactive) logs in this project.

fairseq-generate prints, per sentence and in the order its batches finish (not in sentence
order), one block of tab-separated lines keyed by the sentence id::

    S-<id>  source             T-<id>  reference
    H-<id>  <score>  hypothesis (tokenized, once per n-best entry, best first)
    D-<id>  <score>  detokenized hypothesis
    P-<id>  positional scores  A-<id>  alignment (--print-alignment)
    G-<id>  gates (this plugin's models, fairseq_wean.compat)

and ends with a summary line ``Generate <subset> with beam=<k>: <scores>`` (a log with ``T-``
lines that lacks it is incomplete, and refused). ``GenerateLog``
keeps the first line of every kind per id (for ``H``: the best of an n-best list) and puts
them back in sentence-id order with ``ordered``.

A log that holds two runs (e.g. ``cat gen1.out gen2.out``, or ``>>`` into the same file) is
refused: reading only one of them would score a system silently on the wrong outputs. Two
runs show as a sentence id whose block appears twice, sentence lines after the summary line,
or a second ``loading model(s) from`` header line.
"""
import os
import re

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError

SENTENCE_LINE = re.compile(r"^([A-Z])-(\d+)\t(.*)$")
SUMMARY_LINE = re.compile(r"^Generate \S+ with beam=\d+: ")
TRANSLATED_LINE = re.compile(r"\bTranslated ([\d,]+) sentences ")
# an H-/D- line's text is ``<score>\t<hypothesis>`` (fairseq-generate and -interactive print both;
# an empty hypothesis whose trailing tab was stripped is ``<score>`` alone)
SCORED_TEXT = re.compile(r"^([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan))(?:\t(.*))?$")
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
HEADER_LINE = re.compile(r"\| fairseq_cli\.\w+ \| loading model\(s\) from ")
# fairseq-generate's configuration line (its first INFO line: a dict, or a Namespace before 0.10)
SCORE_REFERENCE = re.compile(r"\bscore_reference'?(?::|=) ?True\b")
_KINDS = {"S": "src", "T": "tgt", "H": "hyp", "D": "detok", "A": "align", "P": "positional", "G": "gates"}


def check_text(lines, path, what):
    """Refuse, naming the file and line, a control character other than tab (a NUL of a zero-filled
    block after a crash, binary data): it would be scored as a letter that glues two words, and
    written raw into a report page. Every scored input is read through this (plain or log)."""
    for number, line in enumerate(lines, start=1):
        m = CONTROL_CHARS.search(line)
        if m:
            raise FairseqWeanError(
                "{} {} line {} holds the control character {!r} (column {}): binary data, not text (a NUL is "
                "what a crashed write leaves); fix or write that file again".format(
                    what, path, number, m.group(0), m.start() + 1))
    return lines


def check_complete_file(path, what="fairseq-generate log"):
    """Refuse a log file whose last line has no final newline: fairseq ends every line it prints, so the
    log was cut (a full disk, a killed job, copied while running), perhaps inside its last hypothesis;
    fairseq-interactive's logs have no summary line, so this is what tells a cut one. A pipe or
    standard input cannot be checked afterwards (the text was read once)."""
    if path in textio.STDIN_NAMES or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
    if last != b"\n":
        raise FairseqWeanError(
            "{} {} does not end with a newline: it is incomplete, its last line cut (a full disk, a killed job, or "
            "copied while fairseq was running); decode the test set again".format(what, path))


def looks_like_log(lines):
    """True if ``lines`` contain an ``H-<id><TAB>`` line (a plain output file does not)."""
    return any(line.startswith("H-") and SENTENCE_LINE.match(line) for line in lines)


def parse_hard_alignment(text):
    """``"0-0 2-1"`` (an ``A-`` line of --print-alignment) -> [(source index, target index), ...]."""
    return [tuple(int(x) for x in pair.split("-")) for pair in text.split()]


def parse_token_values(text):
    """``"-0.12 -1.5"`` (a ``P-`` or ``G-`` line) -> [floats]; None if it is not such a line's text."""
    try:
        return [float(v) for v in text.split()]
    except ValueError:
        return None


class GenerateLog:
    """The S-, T-, H-, D-, A-, P- and G- lines of one fairseq-generate log, by sentence id.

    Attributes ``src``, ``tgt``, ``hyp``, ``detok``, ``align``, ``positional``, ``gates``:
    {sentence id: text}. ``hyp`` and ``detok`` hold the hypothesis text without the score (the
    first, i.e. best, per id; an empty hypothesis is ``""``); ``align`` holds the raw ``A-`` text
    (see ``parse_hard_alignment``); ``positional`` and ``gates`` the raw text of the first ``P-``
    (positional log2-probabilities, one per token plus ``</s>``) and ``G-`` line (copy or
    contextual gates, printed by this plugin's models) per id, i.e. those of the best hypothesis
    (see ``parse_token_values``).
    """

    def __init__(self, path, lines):
        self.path = path
        self.src, self.tgt, self.hyp, self.detok, self.align = {}, {}, {}, {}, {}
        self.positional, self.gates = {}, {}
        self.hypothesis_lines = "H"
        first_line = {}  # sentence id -> line number of its block's first line
        current = None
        summary_at = header_at = translated = None
        last_score = {}  # (kind, sentence id) -> (score, line number) of its last n-best entry
        for number, line in enumerate(lines, start=1):
            t = TRANSLATED_LINE.search(line)
            if t and not line.startswith(("H-", "D-", "S-", "T-")):
                translated = (int(t.group(1).replace(",", "")), number)
                continue
            if not SENTENCE_LINE.match(line) and SCORE_REFERENCE.search(line):
                self._score_reference("its configuration (line {}) has score_reference True".format(number))
            if HEADER_LINE.search(line):
                if header_at is not None:
                    self._two_runs("a second header ('loading model(s) from') at line {} (the first is at "
                                   "line {})".format(number, header_at))
                header_at = number
                continue
            if SUMMARY_LINE.match(line):
                summary_at = number
                continue
            m = SENTENCE_LINE.match(line)
            if not m:
                continue
            kind, sid, rest = m.group(1), int(m.group(2)), m.group(3)
            if summary_at is not None:
                self._two_runs("sentence lines after the summary line {} (line {}: {}-{})".format(
                    summary_at, number, kind, sid))
            if kind in ("H", "D"):
                rest = self._scored_text(kind, sid, rest, number, last_score)
            if kind == "G":  # --print-gates writes them after fairseq's blocks, not inside them
                self.gates.setdefault(sid, rest)
                continue
            if sid != current:
                # fairseq prints all lines of a sentence together: a block seen before means a second run
                if sid in first_line:
                    self._two_runs("sentence id {} appears again at line {} (first at line {})".format(
                        sid, number, first_line[sid]))
                first_line[sid] = number
                current = sid
            table = getattr(self, _KINDS[kind]) if kind in _KINDS else None
            if table is None or sid in table:
                continue  # I-, ... lines; later n-best entries
            table[sid] = rest
        if self.tgt and summary_at is None:
            # fairseq-generate ends a log of a test set with references with its summary line: without
            # it the log was cut (a full disk, a killed job, copied while running), and its last
            # hypothesis may be cut in the middle
            raise FairseqWeanError(
                "fairseq-generate log {} has no final 'Generate <subset> with beam=...' line: it is incomplete (cut, "
                "or fairseq-generate was still running); decode the test set again".format(path))

        self._check_sentences(first_line)
        # a log of --score-reference is known by its configuration line; one whose every hypothesis equals its
        # T- line is a perfect system's as far as the log can tell (scored: refusing it would refuse a perfect
        # output too)
        if translated is not None and translated[0] != len(self.hyp):
            raise FairseqWeanError(
                "fairseq-generate log {} says 'Translated {} sentences' (line {}) but holds hypotheses (H- lines) "
                "for {}: the log was edited or cut; decode the test set again".format(
                    path, translated[0], translated[1], len(self.hyp)))

    def _check_sentences(self, first_line):
        """The lines of one sentence agree: its D- line is its H- line decoded (an empty H- line has an
        empty D- line), and its P- line has a value for every H- token and ``</s>`` (fairseq's
        --post-process only joins tokens, so never fewer)."""
        for sid, hyp in self.hyp.items():
            if not hyp.strip() and self.detok.get(sid, "").strip():
                self._bad_line(first_line[sid], "H", sid, "the H- line is empty but its D- line is not ({!r}): "
                               "fairseq decodes the D- line from the H- line, so the log was edited or cut".format(
                                   self.detok[sid][:40]))
            values = parse_token_values(self.positional.get(sid, ""))
            if sid in self.positional and (values is None or len(values) < len(hyp.split()) + 1):
                self._bad_line(first_line[sid], "P", sid, "the P- line has {} values for an H- line of {} tokens (it "
                               "has one per token and </s>, never fewer): the log was edited or cut".format(
                                   "no numeric" if values is None else len(values), len(hyp.split())))

    def _bad_line(self, number, kind, sid, why):
        raise FairseqWeanError(
            "fairseq-generate log {} line {} ({}-{}): {}".format(self.path, number, kind, sid, why))

    def _scored_text(self, kind, sid, rest, number, last_score):
        """``<score>\\t<text>`` of an H-/D- line -> text; one strict grammar: a missing or non-numeric
        score, control characters (NUL: binary text) or an n-best list not in fairseq's best-first
        order are refused (fairseq prints n-best entries best first; a log in another order was
        edited, and taking its first entry would not be taking its best)."""
        m = SCORED_TEXT.match(rest)
        if not m:
            self._bad_line(number, kind, sid, "expected '<score><TAB><hypothesis>' (fairseq prints both); this "
                           "line has no numeric score field: the log was edited or is not fairseq's")
        text = m.group(2) or ""
        if CONTROL_CHARS.search(text):
            self._bad_line(number, kind, sid, "the hypothesis holds a control character (e.g. NUL): binary text, "
                           "not a fairseq hypothesis")
        score = float(m.group(1))
        before = last_score.get((kind, sid))
        if before is not None and score > before[0]:
            self._bad_line(number, kind, sid, "its score {} is higher than that of the n-best entry before it "
                           "(line {}, {}): fairseq prints n-best entries best first, so this list was edited "
                           "or joined".format(m.group(1), before[1], before[0]))
        last_score[(kind, sid)] = (score, number)
        return text

    def _score_reference(self, what):
        raise FairseqWeanError(
            "fairseq-generate log {} was made with --score-reference ({}): it scores the references and decodes "
            "nothing, so its H- lines are no system's output; decode without --score-reference".format(self.path, what))

    def _two_runs(self, what):
        raise FairseqWeanError(
            "fairseq-generate log {} holds more than one run: {}; it looks like two logs concatenated "
            "(cat, or >> into the same file): score each run's log on its own".format(self.path, what))

    @classmethod
    def read(cls, path, what="fairseq-generate log"):
        """Parse the log at ``path`` (read with :mod:`fairseq_wean.textio`; text, complete)."""
        log = cls(path, check_text(textio.read_lines(path, what), path, what))
        check_complete_file(path, what)  # after the grammar's own checks (a generate log's summary line)
        return log

    @staticmethod
    def looks_like_log(lines):
        return looks_like_log(lines)

    def ordered(self, table, n, what):
        """``table``'s values for sentence ids 0..n-1, in order; an error names missing or extra ids."""
        missing = [i for i in range(n) if i not in table]
        extra = sorted(i for i in table if i >= n)
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + (", ..." if len(missing) > 10 else "")
            raise FairseqWeanError(
                "fairseq-generate log {} has no {} for sentence id(s) {} ({} of {} missing): generate the "
                "whole test set (no --max-sentences-style truncation, no "
                "--skip-invalid-size-inputs-valid-test) and score again".format(
                    self.path, what, shown, len(missing), n)
            )
        if extra:
            raise FairseqWeanError(
                "fairseq-generate log {} has sentence id(s) up to {} but the data has only {} lines: "
                "check that --orig/--refs are the files the log was generated from".format(
                    self.path, extra[-1], n)
            )
        return [table[i] for i in range(n)]

    def decoded(self):
        """Whether the log was decoded with ``--bpe`` / ``--tokenizer``: every H- line has its D- line
        and one differs from it (fairseq prints both; they are equal without a BPE or tokenizer)."""
        return all(i in self.detok for i in self.hyp) and any(self.detok[i] != text for i, text in self.hyp.items())

    def hypotheses(self, n=None, lines="auto"):
        """The best hypothesis per sentence, in sentence-id order (``n``: expected number).

        ``lines``: ``H`` (the dictionary's tokens after --post-process), ``D`` (those decoded by
        --bpe / --tokenizer: words), or ``auto``: D where the log was decoded (:meth:`decoded`),
        else H. The choice is kept in ``self.hypothesis_lines``."""
        if n is None:
            n = max(self.hyp) + 1 if self.hyp else 0
        if lines == "auto":
            lines = "D" if self.decoded() else "H"
        self.hypothesis_lines = lines
        if lines == "D":
            return self.ordered(self.detok, n, "detokenized hypothesis (D- line)")
        return self.ordered(self.hyp, n, "hypothesis (H- line)")
