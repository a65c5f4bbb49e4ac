"""Text given to a model for decoding is in the form of the model's source dictionary: words, subword-nmt
pieces, sentencepiece pieces or characters (fairseq-interactive's input, the hub's translate / sample /
encode).

fairseq looks each token of an input line up in the source dictionary after the configured ``--tokenizer``
and ``--bpe`` (``encode_line``); a token it does not find is ``<unk>``, and the line is translated anyway.
Sentencepiece text (``▁the ▁cat``) or subword-nmt text (``the c@@ at sat``) given to a model of words, or
words given to a model of pieces without ``--bpe``, became a line of ``<unk>`` that was decoded, exit 0.
:func:`form_problem` decides, for the text that ``encode_line`` receives, whether its form is the
dictionary's, by the rules of :mod:`fairseq_wean.scoring.pieces` (the scorer refuses the same mismatch). The
forms: words, subword-nmt pieces, sentencepiece pieces, WordPiece pieces, characters, byte-level BPE ids (what
``--bpe gpt2`` / ``hf_byte_bpe`` write: numbers) and, for a line only, unsegmented text in a script without spaces
between words (Chinese, Japanese, ...: :mod:`fairseq_wean.scoring.scripts`' rule):

* the form of a dictionary (:func:`dictionary_form`): the piece kind of its entries
  (:func:`pieces.piece_entries`) when at least :data:`DICTIONARY_PIECES` of them, or of the training
  tokens its counts count, are pieces of one kind,
  else :data:`IDS` when at least :data:`pieces.PIECE_DICTIONARY_SHARE` of its entries are numbers, else
  ``characters`` when most of its entries are one character, else ``words``;
* the form of a line (:func:`line_form`): a piece kind when pieces make up at least
  :data:`pieces.PIECE_DICTIONARY_SHARE` of its tokens (the share rule :func:`pieces.dictionary_kind`
  applies to a dictionary; the last piece of a subword-nmt word carries no mark and counts as a piece of
  it), :data:`IDS` when every token is a number (two at least), ``characters`` when most tokens are one
  character and it has fairseq's space mark ``▁`` or a script without spaces between words (Chinese,
  Japanese, ...), :data:`UNSEGMENTED` when most of its letters are in such a script at more than
  :data:`scripts.UNSEGMENTED_CHARACTERS_PER_TOKEN` per token, else ``words``. A line of words holding
  one ``@@`` or ``▁`` token is words;
* a mismatch is a line whose form is not the dictionary's and whose tokens of that form the dictionary
  mostly does not have (at least half of them would be ``<unk>``): a model of words given words with
  some unknown words, a model of pieces given text its ``--bpe`` encoded, a model of characters given
  characters are never refused. Two more signs, for pieces in a line of words below the share (a
  subword-nmt or sentencepiece encoding of long words: most of its tokens are unmarked continuations,
  which a dictionary of short pieces has): a split word whose subword-nmt pieces the dictionary does not
  have and whose joined word it has (``c@@ at`` for a dictionary with ``cat``), and
  :data:`FOREIGN_PIECES` or more marked pieces of a kind (:data:`MARKED_KINDS`: ``x@@``, ``▁x``, ``##x``)
  that the dictionary lacks when it has no entry of that kind at all (``▁eine ▁frau ...`` for a
  subword-nmt dictionary): the text was encoded for another dictionary. A line without any ``▁`` given to
  a sentencepiece dictionary is never its text (every word would be read as a piece inside a word, and
  many are such pieces), and a line of :data:`IDS_LINE` or more numbers one of which the dictionary lacks
  is byte-level BPE ids.

A mismatch is one line naming the form found, the dictionary's form and the fix (``--bpe X``, dropping a
``--bpe`` that makes the wrong form, giving words). The other direction, at parse: a ``--bpe`` whose decode
cannot read the model's target dictionary's form (:data:`DECODED_FORMS`, :func:`bpe_dictionary_problem`, called by
``tokenizer_files``). Imports neither fairseq nor torch.
"""
import re

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import pieces, scripts

WORDS, CHARACTERS = "words", "characters"
IDS = "byte-level BPE ids"  # what --bpe gpt2 and hf_byte_bpe write, and their models' dictionaries hold
UNSEGMENTED = "unsegmented"  # a line only: Chinese, Japanese, ... text not split into words or characters
NUMBER = re.compile(r"^(0|[1-9][0-9]*)$")  # a byte-level BPE id
# the piece kinds whose marked pieces tell a line of another dictionary (pieces.piece_entries' kinds), and
# how many of them, unknown to a dictionary with no entry of that kind, do
MARKED_KINDS = ("subword_nmt", "sentencepiece", pieces.CONTINUATION_KIND)
FOREIGN_PIECES = 2
IDS_LINE = 4  # a line of this many numbers is byte-level BPE ids when one is unknown (no real text line is)
# a dictionary holds pieces when at least this share of its entries are pieces of one kind. Measured: the
# word dictionaries of the recipes have none (0 of 2596 simplification, 0 of 13644 translation entries),
# Gigaword's words 0.3% ('##-year-old'); the iwslt14 recipe's subword-nmt dictionaries 30% to 38% (the
# scorer's dictionary rule, pieces.PIECE_DICTIONARY_SHARE, would take them for words)
DICTIONARY_PIECES = 0.1
SPACE_MARK = pieces.SENTENCEPIECE_MARK  # fairseq's --bpe characters writes a space as this token

NAMES = {WORDS: "words", CHARACTERS: "characters (one per token)", "subword_nmt": "subword-nmt pieces ('@@')",
         "sentencepiece": "sentencepiece pieces ('\u2581')", pieces.CONTINUATION_KIND: "WordPiece pieces ('##')",
         IDS: "byte-level BPE ids (numbers)", UNSEGMENTED: "unsegmented text (a script without spaces between words)"}
# the --bpe that writes each form, and the files it needs (options, the hub's from_pretrained keywords)
BPE_OF_FORM = {"subword_nmt": ("subword_nmt", ("--bpe-codes",), ("bpe_codes",)),
               "sentencepiece": ("sentencepiece", ("--sentencepiece-model",), ("sentencepiece_model",)),
               CHARACTERS: ("characters", (), ()), pieces.CONTINUATION_KIND: ("bert", (), ()),
               IDS: ("gpt2", ("--gpt2-encoder-json", "--gpt2-vocab-bpe"), ("gpt2_encoder_json", "gpt2_vocab_bpe"))}
FORM_OF_BPE = {"subword_nmt": "subword_nmt", "fastbpe": "subword_nmt", "sentencepiece": "sentencepiece",
               "characters": CHARACTERS, "bytes": CHARACTERS, "bert": pieces.CONTINUATION_KIND, "gpt2": IDS,
               "hf_byte_bpe": IDS}


# the dictionary forms each --bpe's decode reads (fairseq's decode functions), and what it does to any other form: a
# --bpe not here makes no claim (bert: its package is not installed here; unk_markers reads any form)
_JOINS = ("its decode deletes every space and makes each '\u2581' one: the dictionary's tokens would run together "
          "in every output line")
DECODED_FORMS = {
    "gpt2": ((IDS,), "its decode reads every token as a byte-level BPE id (int()): a ValueError traceback once the "
                     "whole test set is decoded"),
    "sentencepiece": (("sentencepiece", CHARACTERS), _JOINS),
    "subword_nmt": (("subword_nmt", WORDS), "its decode only joins '@@ ' pieces: every output line would stay in "
                                            "the dictionary's form")}
DECODED_FORMS.update({"hf_byte_bpe": DECODED_FORMS["gpt2"], "fastbpe": DECODED_FORMS["subword_nmt"],
                      "byte_bpe": DECODED_FORMS["sentencepiece"], "characters": DECODED_FORMS["sentencepiece"],
                      "bytes": DECODED_FORMS["sentencepiece"]})


def bpe_dictionary_problem(bpe, dictionary, what, keywords=False):
    """Why ``--bpe bpe`` cannot decode text of the model's target dictionary ``dictionary`` (a fairseq
    ``Dictionary``; ``what``: its name in the line, "the model's target dictionary PATH") by :data:`DECODED_FORMS`, with the fix, or None. ``keywords``:
    spelled for the hub (``bpe='gpt2'``)."""
    if bpe not in DECODED_FORMS:
        return None
    forms, reason = DECODED_FORMS[bpe]
    form, example = dictionary_form(dictionary)
    if form in forms:
        return None
    entries = dictionary.symbols[dictionary.nspecial:]
    example = example if example is not None else entries[0] if entries else None
    entry = "hub" if keywords else "fairseq-generate"
    if form in BPE_OF_FORM and form != WORDS:
        own, options, names = BPE_OF_FORM[form]
        fix = "give {}{} (the model's own)".format(_option(entry, "--bpe", own), "".join(
            ", " + _option(entry, o) for o in (names if keywords else options)))
    else:
        fix = "drop {}".format(_option(entry, "--bpe", bpe))
    return "{} cannot decode {}, of {}{}: {}; {}".format(
        _option(entry, "--bpe", bpe), what, name(form), " (e.g. {!r})".format(example) if example else "", reason, fix)


def name(form):
    return NAMES.get(form, "{} pieces".format(form))


def dictionary_form(dictionary):
    """(form, example) of a fairseq ``Dictionary`` (its entries after the special symbols): a piece kind,
    :data:`CHARACTERS` or :data:`WORDS` (see the module's docstring); kept on the dictionary."""
    cached = getattr(dictionary, "_fairseq_wean_input_form", None)
    if cached is not None and cached[0] == len(dictionary.symbols):
        return cached[1]
    entries = list(dictionary.symbols[dictionary.nspecial:])
    counts = list(getattr(dictionary, "count", [])[dictionary.nspecial:])
    counts = dict(zip(entries, counts)) if len(counts) == len(entries) and sum(counts) > 0 else None
    # one character is no piece ('▁' alone is fairseq's --bpe characters' space, '@' a word)
    kinds = pieces.piece_entries([entry for entry in entries if len(entry) > 1])
    kind, found = max(kinds.items(), key=lambda kv: len(kv[1]), default=(None, []))
    # the share of its entries, or of the training text's tokens (the counts fairseq-preprocess wrote): a
    # small sentencepiece vocabulary has few '▁' entries, and one of them ('▁w') begins every word
    shares = [len(found) / len(entries) if entries else 0.0]
    if counts is not None and found:
        shares.append(sum(counts[entry] for entry in found) / sum(counts.values()))
    numbers = [entry for entry in entries if NUMBER.match(entry)]
    if max(shares) >= DICTIONARY_PIECES:
        form = (kind, found[0])
    elif entries and len(numbers) >= pieces.PIECE_DICTIONARY_SHARE * len(entries):
        form = (IDS, numbers[0])
    elif entries and sum(len(entry) == 1 for entry in entries) >= pieces.PIECE_DICTIONARY_SHARE * len(entries):
        form = (CHARACTERS, next(entry for entry in entries if len(entry) == 1))
    else:
        form = (WORDS, None)
    try:
        dictionary._fairseq_wean_input_form = (len(dictionary.symbols), form)
    except AttributeError:
        pass
    return form


def _split_words(tokens):
    """The subword-nmt words of ``tokens`` split into pieces: lists of their tokens (``c@@``, ``at``)."""
    words, current = [], []
    for token in tokens:
        if pieces.SUBWORD_PIECE.search(token):
            current.append(token)
        elif current:
            words.append(current + [token])
            current = []
    if current:
        words.append(current)
    return words


def line_form(tokens):
    """(form, the tokens of that form) of one line's ``tokens`` (see the module's docstring)."""
    if not tokens:
        return WORDS, []
    kinds = pieces.piece_entries(tokens)
    if "subword_nmt" in kinds:
        kinds["subword_nmt"] = [token for word in _split_words(tokens) for token in word]
    kind, found = max(kinds.items(), key=lambda kv: len(kv[1]), default=(None, []))
    if kind is not None and len(found) >= pieces.PIECE_DICTIONARY_SHARE * len(tokens):
        return kind, found
    if len(tokens) > 1 and all(NUMBER.match(token) for token in tokens):
        return IDS, tokens
    singles = [token for token in tokens if len(token) == 1]
    if len(singles) >= pieces.PIECE_DICTIONARY_SHARE * len(tokens) and (
            SPACE_MARK in singles or any(scripts.NO_WORD_BOUNDARIES.search(token) for token in singles)):
        return CHARACTERS, singles
    share, per_token, _ = scripts.unsegmented_share(tokens)
    if share > 0.5 and per_token > scripts.UNSEGMENTED_CHARACTERS_PER_TOKEN:
        return UNSEGMENTED, [token for token in tokens if scripts.NO_WORD_BOUNDARIES.search(token)]
    return WORDS, tokens


def _unknown(dictionary, tokens):
    return [token for token in tokens if token not in dictionary.indices]


def _kinds_of(dictionary):
    """The :data:`MARKED_KINDS` some entry of ``dictionary`` has (kept on it)."""
    cached = getattr(dictionary, "_fairseq_wean_marked_kinds", None)
    if cached is not None and cached[0] == len(dictionary.symbols):
        return cached[1]
    entries = [entry for entry in dictionary.symbols[dictionary.nspecial:] if len(entry) > 1]
    kinds = frozenset(kind for kind in pieces.piece_entries(entries) if kind in MARKED_KINDS)
    try:
        dictionary._fairseq_wean_marked_kinds = (len(dictionary.symbols), kinds)
    except AttributeError:
        pass
    return kinds


def foreign_pieces(dictionary, tokens):
    """(kind, pieces) of the marked pieces in ``tokens`` (a line of words by the share rule) that tell text
    encoded for another dictionary (see the module's docstring), or None."""
    for word in _split_words(tokens):  # subword-nmt: a split word the dictionary has joined, not in pieces
        joined = pieces.post_process(" ".join(word), "subword_nmt")
        if joined in dictionary.indices and _unknown(dictionary, word):
            return "subword_nmt", _unknown(dictionary, word)
    found = pieces.piece_entries([token for token in tokens if len(token) > 1])
    for kind in MARKED_KINDS:
        unknown = _unknown(dictionary, found.get(kind, ()))
        if len(unknown) >= FOREIGN_PIECES and kind not in _kinds_of(dictionary):
            return kind, unknown
    return None


def _option(entry, option, value=None):
    """``--bpe subword_nmt`` on the command line, ``bpe='subword_nmt'`` for the hub."""
    if entry == "hub":
        return "{}={}".format(option.lstrip("-").replace("-", "_"), "FILE" if value is None else repr(value))
    return "{} {}".format(option, "FILE" if value is None else value)


def _fix(found, expected, bpe, entry):
    """How to give the dictionary's form (``expected``) instead of ``found``, with ``--bpe bpe`` given."""
    where = " to from_pretrained" if entry == "hub" else ""
    if bpe is not None and FORM_OF_BPE.get(bpe) == found:
        drop = "drop {}{} (it writes {}; the model reads {})".format(_option(entry, "--bpe", bpe), where,
                                                                      name(found), name(expected))
        if expected == WORDS:
            return drop
        fix = _fix(WORDS, expected, None, entry)
        return "{}, and {}".format(drop, fix)
    if expected in BPE_OF_FORM:
        bpe_name, options, keywords = BPE_OF_FORM[expected]
        give = _option(entry, "--bpe", bpe_name)
        if options:
            give += ", " + ", ".join(_option(entry, option, None) for option in (
                keywords if entry == "hub" else options)) + " (the model's own)"
        if found in (WORDS, UNSEGMENTED):
            return "pass {}{} so that words are encoded as its {}, or give the text in them{}".format(
                give, where, name(expected), "" if entry == "hub" or expected not in pieces.FAIRSEQ_RULES else
                " (and --post-process {} for words in the output)".format(expected))
        return "give the text as words with {}{}, or in the model's {}".format(give, where, name(expected))
    if found == UNSEGMENTED:
        return "segment the text into {}, as the model's data was".format(name(expected))
    if expected == WORDS:
        return "give words (the text before {}), as the model's data was".format(
            "--bpe {}".format(BPE_OF_FORM[found][0]) if found in BPE_OF_FORM else "it was split")
    return "give the text in {}, as the model's data was".format(name(expected))


# characters that show nothing: a sentence made only of them (and whitespace) has no word. Unicode's control,
# format (zero-width space/joiners U+200B-U+200D, U+2060, the BOM, bidi marks, soft hyphen, tag characters),
# surrogate and separator categories, and the other default-ignorable code points (the combining grapheme joiner,
# the Hangul fillers, the variation selectors)
INVISIBLE_CATEGORIES = ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp")
INVISIBLE_POINTS = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
                              "\U000e0000-\U000e0fff]")
NUL = "\x00"


def blank(text):
    """Whether ``text`` has no visible character (only whitespace, control, format and other invisible characters:
    ``str.strip()`` keeps U+200B, the BOM, bidi marks, NUL)."""
    import unicodedata

    return all(char.isspace() or unicodedata.category(char) in INVISIBLE_CATEGORIES or INVISIBLE_POINTS.match(char)
               for char in text)


def empty_problem(what):
    """The one line for an empty sentence ``what`` given to a model (fairseq-interactive's line, the hub's sentence:
    no visible character, :func:`blank`): fairseq decoded it into a hypothesis of the maximum length."""
    return ("{} is empty (no word, only whitespace or invisible characters): there is nothing to translate (fairseq "
            "decoded it into a hypothesis of the maximum length); remove it".format(what))


def text_problem(text, what):
    """The one line for a sentence ``text`` (named ``what``) that is no text to translate: :func:`blank`, or holding a
    NUL character (binary data: fairseq-wean-score refuses it too; fairseq read it as a word's letter); or None."""
    if blank(text):
        return empty_problem(what)
    if NUL in text:
        return ("{} holds a NUL character (position {}): that is binary data, not text; remove it".format(
            what, text.index(NUL)))
    return None


def form_problem(dictionary, line, bpe=None, entry="fairseq-interactive", what=None):
    """One line naming the mismatch between the form of ``line`` (the text ``encode_line`` receives:
    after ``--tokenizer`` and ``--bpe``) and the form of ``dictionary`` (the model's source dictionary),
    with the fix; None when they match. ``bpe``: the ``--bpe`` name in use (None: none); ``entry``:
    ``fairseq-interactive`` or ``hub`` (the spelling of the fix); ``what``: the line's name in the message."""
    tokens = line.split()
    problem = text_problem(line.replace(SPACE_MARK, " "), what or "{} input".format(entry))  # (after --bpe: '\u2581')
    if problem is not None:
        return problem
    expected, example = dictionary_form(dictionary)
    found, marked = line_form(tokens)
    if found in (WORDS, CHARACTERS):  # pieces below the share, of another dictionary: named as such
        foreign = foreign_pieces(dictionary, tokens)
        if foreign is not None and foreign[0] != expected:
            found, marked = foreign
    unknown, unstarted = None, False
    if found == CHARACTERS and bpe is not None and FORM_OF_BPE.get(bpe) == expected != CHARACTERS:
        found = expected  # the model's own --bpe split letters it does not know (a bidi mark inside a word): its form
    if found != expected:
        unknown = _unknown(dictionary, marked)
        # most of them the dictionary has: its --bpe wrote them (a line of IDS_LINE numbers is no text of words)
        if 2 * len(unknown) < len(marked) and not (found == IDS and unknown and len(marked) >= IDS_LINE):
            unknown = None
    if unknown is None and expected == "sentencepiece" and found != expected and SPACE_MARK not in line:
        unknown, unstarted = _unknown(dictionary, tokens), True  # no word starts: not its text
    if unknown is None:
        return None
    shown = line if len(line) <= 40 else line[:37] + "..."
    dict_name = "the model's source dictionary is of {}{}".format(
        name(expected), " (e.g. {!r})".format(example) if example is not None else "")
    return ("{} {!r} is in {}, and {}: {} of its {} tokens would be <unk> and translated as such{}; {}".format(
        what or "{} input".format(entry), shown, name(found), dict_name, len(_unknown(dictionary, tokens)),
        len(tokens), ", the others as pieces inside words (none starts with '{}')".format(SPACE_MARK)
        if unstarted else "", _fix(found, expected, bpe, entry)))


def check_input_form(dictionary, line, bpe=None, entry="fairseq-interactive", what=None):
    """:func:`form_problem`, raised as a :class:`FairseqWeanError`."""
    problem = form_problem(dictionary, line, bpe, entry, what)
    if problem is not None:
        raise FairseqWeanError(problem)


def bpe_name(cfg):
    """The ``--bpe`` name of a fairseq config (its ``bpe`` section; None: no BPE)."""
    section = getattr(cfg, "bpe", None) if cfg is not None else None
    if section is None:
        return None
    if isinstance(section, str):  # a component registered without a dataclass is stored by its name
        return section or None
    value = section.get("_name", None) if hasattr(section, "get") else getattr(section, "_name", None)
    return value or None


def check_hub_input(hub, sentence):
    """The hub's check: ``sentence`` is what ``GeneratorHubInterface.binarize`` receives (after the
    hub's ``tokenize`` and ``apply_bpe``: translate, sample and encode all come through it); refused in
    one line before anything is decoded. Not a str (bytes, a number: the first argument of every hub method is
    checked by ``fairseq_wean.hub_inputs``): one line too."""
    if not isinstance(sentence, str):
        raise FairseqWeanError("hub input is {}: give a str".format(type(sentence).__name__))
    check_input_form(hub.src_dict, sentence, bpe_name(getattr(hub, "cfg", None)), "hub", "hub input")
