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
  ##able``: fairseq's ``--bpe bert``, whose decoding joins them), refused with that fix, and
  sentencepiece's byte-fallback pieces (``<0x31><0x32>`` for ``12``: only sentencepiece decodes them);
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
# sentencepiece's byte-fallback pieces (a model trained with byte_fallback writes a character outside its
# vocabulary as its UTF-8 bytes, '12' as <0x31><0x32>): only sentencepiece's decoder turns them back into text,
# fairseq's string-level --post-process sentencepiece leaves them
BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")
BYTE_KIND = "sentencepiece byte-fallback"
# the kinds no --post-process rule undoes: (why, how to get words)
UNDONE = {
    CONTINUATION_KIND: ("no {option} rule removes them (fairseq's wordpiece rule joins '_'-marked pieces)",
                        "score text decoded by --bpe bert (fairseq-generate's D- lines), or words"),
    BYTE_KIND: ("no {option} rule decodes them (fairseq's sentencepiece rule joins pieces, not bytes)",
                "score text decoded by sentencepiece (fairseq-generate --bpe sentencepiece --sentencepiece-model "
                "M: its D- lines), or words"),
}


def with_vocabulary(lines, dictionary):
    """Binarized references decoded with ``dictionary`` (``lines``), plus one line of the dictionary's
    own symbols: what :func:`check_post_process` reads of binarized data. A small or tiny dictionary
    writes most rare pieces of a validation or test subset as ``<unk>``, so the references alone may
    show no piece mark although every output the model can write is made of the dictionary's pieces."""
    if lines is None or dictionary is None:
        return lines
    return list(lines) + [" ".join(dictionary.symbols[dictionary.nspecial:])]


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
    bytes_left = [name for name, lines, _ in named_inputs if lines is not None and any(
        BYTE_PIECE.search(line) for line in lines)]
    if bytes_left:
        why, fix = UNDONE[BYTE_KIND]
        raise FairseqWeanError("{} holds {} pieces, which {} {} leaves as they are: {}; {}".format(
            bytes_left[0], BYTE_KIND, option, symbol, why.format(option=option), fix))
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
    starts with a ``_``-marked word), ``silence`` (a ``<SIL>`` token), :data:`CONTINUATION_KIND`
    (a token starting with ``##``) or :data:`BYTE_KIND` (``<0x31>``); (None, None) for text without pieces."""
    for line in lines:
        for kind, pattern in (("subword_nmt", SUBWORD_PIECE), (CONTINUATION_KIND, CONTINUATION),
                              ("_EOW", EOW_PIECE), ("silence", SILENCE_TOKEN), (BYTE_KIND, BYTE_PIECE)):
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
        if kind in UNDONE:
            why, how = UNDONE[kind]
            raise FairseqWeanError("{} holds {} pieces ({!r}): scored as they are, pieces count as words, and {}: "
                                   "{}".format(name, kind, example, why.format(option=option), how))
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


# ---------------------------------------------------------------------------------------------
# Tools that read WORDS (fairseq-wean-align-table, preprocess.unk_markers, split_characters)
# Every mark piece_kind looks for contains one of these: a line without any cannot hold a piece
# (a quick filter, so that a training corpus of millions of lines is checked in seconds)
PIECE_MARKS = ("@@", "##", "_", "<SIL>", "|", SENTENCEPIECE_MARK, "<0x")
# the script check (metrics.check_word_boundaries) reads at most this many lines, evenly spread
SCRIPT_SAMPLE = 10000
# a dictionary of pieces: at least this share of its entries are pieces of one kind
PIECE_DICTIONARY_SHARE = 0.5


def piece_entries(words):
    """{kind: [the entries of ``words`` that are pieces of that kind]}, each entry's kind by
    :func:`piece_kind` (the count behind :func:`dictionary_kind`; fairseq_wean.input_form applies it
    to the tokens of one line)."""
    kinds = {}
    for word in words:
        if any(mark in word for mark in PIECE_MARKS):
            kind = piece_kind([word])[0]
            kind = "sentencepiece" if kind == BYTE_KIND else kind  # a byte-fallback entry: a sentencepiece model's
            if kind is not None:
                kinds.setdefault(kind, []).append(word)
    return kinds


def dictionary_kind(words):
    """(kind, share, example): the piece kind most entries of a dictionary (``words``) have, when
    at least :data:`PIECE_DICTIONARY_SHARE` of them do (a dictionary of pieces); (None, share, None)
    for a dictionary of words."""
    kinds = piece_entries(words)
    kind, found = max(kinds.items(), key=lambda kv: len(kv[1]), default=(None, []))
    share = len(found) / len(words) if words else 0.0
    return (kind, share, found[0]) if share >= PIECE_DICTIONARY_SHARE else (None, share, None)


def check_words(named_inputs, tool, expect="words", vocabulary=None):
    """Refuse, in one line naming the input and the fix, text that a tool reading words cannot use,
    before any work: ``named_inputs`` are (name, lines) (lines: strings; None: not given).

    * subword pieces, every form :func:`piece_kind` knows (BPE ``@@``, sentencepiece ``▁``, WordPiece
      ``##``, ...): the tool would count pieces as words. With ``vocabulary`` = (name, words), the
      dictionary the text is looked up in (fairseq-wean-align-table ``--dict``), text and dictionary
      must be of one form: pieces are accepted with a dictionary that holds pieces of that kind (a
      model on pieces), refused with one that has none (every piece would be ``<unk>``), and words
      are refused with a dictionary of pieces (:func:`dictionary_kind`);
    * ``expect="words"``: text in a script without spaces between words (Chinese, Japanese, Thai, ...)
      left unsegmented, by the scorer's rule (``metrics.check_word_boundaries``, on at most
      :data:`SCRIPT_SAMPLE` lines evenly spread): each sentence would be one "word".
      ``expect="text"``: such text is what the tool reads (preprocess.split_characters), pieces are not.
    """
    from fairseq_wean.scoring import metrics

    if expect not in ("words", "text"):
        raise ValueError("expect must be 'words' or 'text', not {!r}".format(expect))
    dict_name, dict_kind, share, dict_example = None, None, 0.0, None
    if vocabulary is not None:
        dict_name, words = vocabulary
        words = list(words)
        dict_kind, share, dict_example = dictionary_kind(words)
    for name, lines in named_inputs:
        if lines is None:
            continue
        kind, example = piece_kind(line for line in lines if any(mark in line for mark in PIECE_MARKS))
        if kind is not None and vocabulary is not None:
            if not any(piece_kind([word])[0] == kind for word in words
                       if any(mark in word for mark in PIECE_MARKS)):
                raise FairseqWeanError(
                    "{} holds {} pieces ({!r}), and {} has none (a dictionary of words): {} would see every "
                    "piece as <unk>; give the text that dictionary was built from (words), or the dictionary of "
                    "the pieces".format(name, kind, example, dict_name, tool))
        elif kind is not None:
            raise FairseqWeanError(
                "{} holds {} pieces ({!r}): {} reads {}; give it the text before BPE / sentencepiece / "
                "WordPiece".format(name, kind, example, tool, "words, and would take each piece for one" if expect
                                   == "words" else "text, and would take the pieces' marks for characters of it"))
        elif dict_kind is not None:
            raise FairseqWeanError(
                "{} is a dictionary of {} pieces ({:.0f}% of its entries, e.g. {!r}), and {} holds words: {} would "
                "see most words as <unk>; give the text in that dictionary's pieces, or the dictionary of the "
                "words".format(dict_name, dict_kind, 100 * share, dict_example, name, tool))
        if expect == "words":
            lines = list(lines) if not isinstance(lines, (list, tuple)) else lines
            sample = lines[::max(1, -(-len(lines) // SCRIPT_SAMPLE))]
            if any(metrics.NO_WORD_BOUNDARIES.search(line) for line in sample):
                metrics.check_word_boundaries(tool, sample, metrics.SEGMENT, what="the lines of " + name)
