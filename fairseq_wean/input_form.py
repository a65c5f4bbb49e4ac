"""Text given to a model for decoding is in the form of the model's source dictionary: words, subword-nmt
pieces, sentencepiece pieces or characters (fairseq-interactive's input, the hub's translate / sample /
encode).

fairseq looks each token of an input line up in the source dictionary after the configured ``--tokenizer``
and ``--bpe`` (``encode_line``); a token it does not find is ``<unk>``, and the line is translated anyway.
Sentencepiece text (``▁the ▁cat``) or subword-nmt text (``the c@@ at sat``) given to a model of words, or
words given to a model of pieces without ``--bpe``, became a line of ``<unk>`` that was decoded, exit 0.
:func:`form_problem` decides, for the text that ``encode_line`` receives, whether its form is the
dictionary's, by the rules of :mod:`fairseq_wean.scoring.pieces` (the scorer refuses the same mismatch):

* the form of a dictionary (:func:`dictionary_form`): the piece kind of its entries
  (:func:`pieces.piece_entries`) when at least :data:`DICTIONARY_PIECES` of them, or of the training
  tokens its counts count, are pieces of one kind,
  else ``characters`` when most of its entries are one character, else ``words``;
* the form of a line (:func:`line_form`): a piece kind when pieces make up at least
  :data:`pieces.PIECE_DICTIONARY_SHARE` of its tokens (the share rule :func:`pieces.dictionary_kind`
  applies to a dictionary; the last piece of a subword-nmt word carries no mark and counts as a piece of
  it), ``characters`` when most tokens are one character and it has fairseq's space mark ``▁`` or a
  script without spaces between words (Chinese, Japanese, ...), else ``words``. A line of words holding
  one ``@@`` or ``▁`` token is words;
* a mismatch is a line whose form is not the dictionary's and whose tokens of that form the dictionary
  mostly does not have (at least half of them would be ``<unk>``): a model of words given words with
  some unknown words, a model of pieces given text its ``--bpe`` encoded, a model of characters given
  characters are never refused. One more sign, for subword-nmt pieces in a line of words below the
  share: a split word whose pieces the dictionary does not have and whose joined word it has
  (``c@@ at`` for a dictionary with ``cat``): the text was encoded for another dictionary.

A mismatch is one line naming the form found, the dictionary's form and the fix (``--bpe X``, dropping a
``--bpe`` that makes the wrong form, giving words). Imports neither fairseq nor torch.
"""
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import pieces

WORDS, CHARACTERS = "words", "characters"
# a dictionary holds pieces when at least this share of its entries are pieces of one kind. Measured: the
# word dictionaries of the recipes have none (0 of 2596 simplification, 0 of 13644 translation entries),
# Gigaword's words 0.3% ('##-year-old'); the iwslt14 recipe's subword-nmt dictionaries 30% to 38% (the
# scorer's dictionary rule, pieces.PIECE_DICTIONARY_SHARE, would take them for words)
DICTIONARY_PIECES = 0.1
SPACE_MARK = pieces.SENTENCEPIECE_MARK  # fairseq's --bpe characters writes a space as this token

NAMES = {WORDS: "words", CHARACTERS: "characters (one per token)", "subword_nmt": "subword-nmt pieces ('@@')",
         "sentencepiece": "sentencepiece pieces ('\u2581')", pieces.CONTINUATION_KIND: "WordPiece pieces ('##')"}
# the --bpe that writes each form, and the file it needs (hub: the from_pretrained keyword)
BPE_OF_FORM = {"subword_nmt": ("subword_nmt", "--bpe-codes", "bpe_codes"),
               "sentencepiece": ("sentencepiece", "--sentencepiece-model", "sentencepiece_model"),
               CHARACTERS: ("characters", None, None), pieces.CONTINUATION_KIND: ("bert", None, None)}
FORM_OF_BPE = {"subword_nmt": "subword_nmt", "fastbpe": "subword_nmt", "sentencepiece": "sentencepiece",
               "characters": CHARACTERS, "bytes": CHARACTERS, "bert": pieces.CONTINUATION_KIND}


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
    if max(shares) >= DICTIONARY_PIECES:
        form = (kind, found[0])
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
    from fairseq_wean.scoring.metrics import NO_WORD_BOUNDARIES

    singles = [token for token in tokens if len(token) == 1]
    if len(singles) >= pieces.PIECE_DICTIONARY_SHARE * len(tokens) and (
            SPACE_MARK in singles or any(NO_WORD_BOUNDARIES.search(token) for token in singles)):
        return CHARACTERS, singles
    return WORDS, tokens


def _unknown(dictionary, tokens):
    return [token for token in tokens if token not in dictionary.indices]


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
        bpe_name, option, keyword = BPE_OF_FORM[expected]
        give = _option(entry, "--bpe", bpe_name)
        if option is not None:
            give += ", " + _option(entry, option if entry != "hub" else keyword, None) + " (the model's own)"
        if found == WORDS:
            return "pass {}{} so that words are encoded as its {}, or give the text in them{}".format(
                give, where, name(expected), "" if entry == "hub" or expected not in pieces.FAIRSEQ_RULES else
                " (and --post-process {} for words in the output)".format(expected))
        return "give the text as words with {}{}, or in the model's {}".format(give, where, name(expected))
    if expected == WORDS:
        return "give words (the text before {}), as the model's data was".format(
            "--bpe {}".format(BPE_OF_FORM[found][0]) if found in BPE_OF_FORM else "it was split")
    return "give the text in {}, as the model's data was".format(name(expected))


def form_problem(dictionary, line, bpe=None, entry="fairseq-interactive", what=None):
    """One line naming the mismatch between the form of ``line`` (the text ``encode_line`` receives:
    after ``--tokenizer`` and ``--bpe``) and the form of ``dictionary`` (the model's source dictionary),
    with the fix; None when they match. ``bpe``: the ``--bpe`` name in use (None: none); ``entry``:
    ``fairseq-interactive`` or ``hub`` (the spelling of the fix); ``what``: the line's name in the message."""
    tokens = line.split()
    if not tokens:
        return None
    expected, example = dictionary_form(dictionary)
    found, marked = line_form(tokens)
    unknown = None
    if found != expected:
        unknown = _unknown(dictionary, marked)
        if 2 * len(unknown) < len(marked):  # most of them the dictionary has: its --bpe wrote them
            unknown = None
    if unknown is None and expected != "subword_nmt" and found == WORDS:
        # subword-nmt pieces below the share: a split word the dictionary has joined, not in pieces
        for word in _split_words(tokens):
            joined = pieces.post_process(" ".join(word), "subword_nmt")
            if joined in dictionary.indices and _unknown(dictionary, word):
                found, unknown = "subword_nmt", word
                break
    if unknown is None:
        return None
    shown = line if len(line) <= 40 else line[:37] + "..."
    dict_name = "the model's source dictionary is of {}{}".format(
        name(expected), " (e.g. {!r})".format(example) if example is not None else "")
    return ("{} {!r} is in {}, and {}: {} of its {} tokens would be <unk> and translated as such; {}".format(
        what or "{} input".format(entry), shown, name(found), dict_name, len(_unknown(dictionary, tokens)),
        len(tokens), _fix(found, expected, bpe, entry)))


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
    one line before anything is decoded."""
    check_input_form(hub.src_dict, sentence, bpe_name(getattr(hub, "cfg", None)), "hub", "hub input")
