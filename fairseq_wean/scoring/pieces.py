"""What is scored is text after fairseq's post-processing: one rule for the scorer, the report and
validation in fairseq-train.

fairseq-generate prints, per sentence, the ``H-`` line (the dictionary's tokens, after
``--post-process`` / ``--remove-bpe``) and the ``D-`` line (that, decoded by ``--bpe`` and
``--tokenizer``). Decoding with ``--bpe subword_nmt --bpe-codes ...`` without ``--remove-bpe``
leaves the pieces in ``H-`` (``wir@@ es``) and only ``D-`` is words; its ``T-`` lines keep the
pieces too. Scored as they are, pieces count as words: a perfect output scored BLEU 44.8 instead
of 100. So:

* :func:`post_process` is fairseq's ``data_utils.post_process`` (the same rules, tested equal;
  here so that the scorer starts without importing fairseq), plus ``characters`` (fairseq's
  ``--bpe characters``, whose decoding is sentencepiece's rule);
* :func:`piece_kind` recognises subword pieces in text, the forms fairseq's rules undo: ``@@`` at
  the end of a token (subword-nmt, fastBPE), ``▁`` (sentencepiece, and fairseq's ``characters``),
  ``_EOW``, the letter form (``t h e | c a t``), ``_``-marked word starts (fairseq's ``wordpiece``
  rule), ``<SIL>`` tokens; and one no rule undoes, WordPiece's ``##`` continuations (``un ##believ
  ##able``: fairseq's ``--bpe bert``, whose decoding joins them), refused with that fix;
* :func:`check_no_pieces` refuses, in one line naming the fix, any input that still holds pieces
  after the post-processing asked for: pieces on one side only are an error, not a score, and so
  are pieces on both sides (a score of pieces is not a score of words).
"""
import re

from fairseq_wean.errors import FairseqWeanError

# the names fairseq's --post-process takes (fairseq/data/data_utils.py), and characters
POST_PROCESS = ("subword_nmt", "@@ ", "@@", "sentencepiece", "characters", "wordpiece", "letter", "_EOW",
                "silence", "none")
FAIRSEQ_RULES = tuple(symbol for symbol in POST_PROCESS if symbol != "characters")  # data_utils.post_process's
SUBWORD_PIECE = re.compile(r"\S@@(?=\s|$)")
SENTENCEPIECE_MARK = "\u2581"


def post_process(sentence, symbol):
    """fairseq's ``data_utils.post_process(sentence, symbol)``; ``characters``: sentencepiece's rule
    (fairseq's ``Characters.decode`` escapes spaces as ``▁`` too); None or ``none``: unchanged."""
    if symbol in ("sentencepiece", "characters"):
        return sentence.replace(" ", "").replace(SENTENCEPIECE_MARK, " ").strip()
    if symbol == "wordpiece":
        return sentence.replace(" ", "").replace("_", " ").strip()
    if symbol == "letter":
        return sentence.replace(" ", "").replace("|", " ").strip()
    if symbol == "silence":
        return re.sub(" +", " ", sentence.replace("<SIL>", "")).strip()
    if symbol == "_EOW":
        return sentence.replace(" ", "").replace("_EOW", " ").strip()
    if symbol in ("subword_nmt", "@@ ", "@@"):
        marker = "@@ " if symbol == "subword_nmt" else symbol
        return (sentence + " ").replace(marker, "").rstrip()
    if symbol in (None, "none"):
        return sentence
    raise FairseqWeanError("unknown --post-process {!r}: choose one of {}".format(symbol, ", ".join(POST_PROCESS)))


# the mark each --post-process rule removes: a rule applied to an input without its mark deletes
# every space (sentencepiece, characters, wordpiece, letter, _EOW: each line glued into one token)
# or changes nothing (subword_nmt, @@, silence): either way it is refused (check_post_process)
MARKS = {"subword_nmt": "@@", "@@ ": "@@", "@@": "@@", "sentencepiece": SENTENCEPIECE_MARK,
         "characters": SENTENCEPIECE_MARK, "wordpiece": "_", "letter": "|", "_EOW": "_EOW", "silence": "<SIL>"}
GLUING = ("sentencepiece", "characters", "wordpiece", "letter", "_EOW")
LETTER_LINE = re.compile(r"^\S( \S)* \|( \S)+$")  # fairseq's letter form: t h e | c a t
EOW_PIECE = re.compile(r"\S_EOW(?=\s|$)")
WORDPIECE_LINE = re.compile(r"^_[^\s_]")  # fairseq's wordpiece form: _the _c at (a line starts with a marked word)
SILENCE_TOKEN = re.compile(r"(^|\s)<SIL>(?=\s|$)")
# WordPiece's continuation mark (BERT; fairseq's --bpe bert): no --post-process rule removes it
CONTINUATION = re.compile(r"(^|\s)##[^\s#]")
CONTINUATION_KIND = "wordpiece '##'"


def check_post_process(named_inputs, symbol, option="--post-process", known=POST_PROCESS):
    """Refuse ``option symbol`` where it cannot be meant: a space-deleting rule on an input none of
    whose lines holds its mark (each line would become one token: BLEU 0.00), or a removing rule
    (subword_nmt, silence) when no input holds its mark (it would do nothing); a name not in ``known``
    (fairseq's own rules: :data:`FAIRSEQ_RULES`) or any rule on WordPiece's ``##`` pieces."""
    if symbol in (None, "none"):
        return
    if symbol not in MARKS or symbol not in known:  # fairseq's post_process: NotImplementedError, in validation
        raise FairseqWeanError("unknown {} {!r}: fairseq's post-processing knows {}".format(
            option, symbol, ", ".join(known)))
    mark = MARKS[symbol]
    continued = [name for name, lines, _ in named_inputs if lines is not None and CONTINUATION_KIND == piece_kind(
        lines)[0]]
    if continued:
        raise FairseqWeanError(
            "{} holds WordPiece '##' continuations, which {} {} does not remove (no fairseq rule does; its wordpiece "
            "rule joins '_'-marked pieces): score text decoded by --bpe bert (fairseq-generate's D- lines), or words"
            .format(continued[0], option, symbol))
    named = [(name, lines) for name, lines, _ in named_inputs if lines is not None]
    if not named:
        return
    without = [name for name, lines in named if not any(mark in line for line in lines)]
    if symbol in GLUING and without:
        raise FairseqWeanError(
            "{} {} deletes every space and turns {!r} into spaces, and {} has no {!r}: each line would be glued into "
            "one token; drop {}, or give that input in {}'s form".format(
                option, symbol, mark, without[0], mark, option, symbol))
    if len(without) == len(named):
        raise FairseqWeanError("{} {} removes {!r}, and no input holds it: it would change nothing; drop it".format(
            option, symbol, mark))


def piece_kind(lines):
    """(kind, example) of the first subword piece in ``lines``: kind ``subword_nmt`` (a token
    ending in ``@@``), ``sentencepiece`` (``▁``), ``_EOW``, ``letter``, ``wordpiece`` (a line that
    starts with a ``_``-marked word), ``silence`` (a ``<SIL>`` token), or :data:`CONTINUATION_KIND`
    (a token starting with ``##``); (None, None) for text without pieces."""
    for line in lines:
        for kind, pattern in (("subword_nmt", SUBWORD_PIECE), (CONTINUATION_KIND, CONTINUATION),
                              ("_EOW", EOW_PIECE), ("silence", SILENCE_TOKEN)):
            m = pattern.search(line)
            if m:
                return kind, line[max(0, m.start() - 20): m.end() + 20].strip()
        if SENTENCEPIECE_MARK in line:
            i = line.index(SENTENCEPIECE_MARK)
            return "sentencepiece", line[max(0, i - 20): i + 20].strip()
        if LETTER_LINE.match(line.strip()):
            return "letter", line.strip()[:40]
        if WORDPIECE_LINE.match(line.strip()):
            return "wordpiece", line.strip()[:40]
    return None, None


def check_no_pieces(named_inputs, option="--post-process"):
    """Refuse the first input that holds subword pieces. ``named_inputs``: (name, lines, fix) per
    input, where ``fix`` says how to get words for that input (``{kind}`` is filled in; None: the
    generic advice)."""
    for name, lines, fix in named_inputs:
        if lines is None:
            continue
        kind, example = piece_kind(lines)
        if kind is None:
            continue
        if kind == CONTINUATION_KIND:
            raise FairseqWeanError(
                "{} holds WordPiece '##' continuations ({!r}): scored as they are, pieces count as words, and no "
                "{} rule removes them (fairseq's wordpiece rule joins '_'-marked pieces): score text decoded by "
                "--bpe bert (fairseq-generate's D- lines), or words".format(name, example, option))
        raise FairseqWeanError(
            "{} holds {} pieces ({!r}): scored as they are, pieces count as words; {}, or pass {} {} to score "
            "every input after fairseq's post-processing".format(
                name, kind, example, (fix or "give words (the text before BPE / sentencepiece)").format(kind=kind),
                option, kind))


def apply(lines, symbol):
    """Every line post-processed with ``symbol`` (None: the lines as they are)."""
    if lines is None or symbol in (None, "none"):
        return lines
    return [post_process(line, symbol) for line in lines]
