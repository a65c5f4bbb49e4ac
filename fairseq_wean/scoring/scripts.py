"""The forms of text in scripts written without spaces between words (Chinese, Japanese, Thai, ...):
the checks every metric that counts words makes, on every side it reads (the output, the sources,
the references), before anything is computed. Part of :mod:`fairseq_wean.scoring.metrics`, which
imports every name here.
"""
import re

from fairseq_wean.errors import FairseqWeanError

UNK_FORMS = re.compile(r"<<unk>>|<unk(?:-\d+)?>")  # fairseq's target <<unk>>, hypothesis <unk>, markers

# Scripts written without spaces between words: Chinese, Japanese, Thai, Lao, Khmer, Burmese. A
# metric that counts whitespace (or 13a) tokens sees an unsegmented sentence of them as one or a
# few "words": BLEU with a word tokenizer, SARI and TER are then 0 or 100 by sentence, whatever
# the output (chrF counts characters and ROUGE has --rouge-chars).
NO_WORD_BOUNDARIES = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
                                "\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
# segmented text has 1 (characters) to about 2 (Chinese words) such characters per token; an
# unsegmented sentence has tens
UNSEGMENTED_CHARACTERS_PER_TOKEN = 4
# the BLEU tokenizations that split text only at spaces and punctuation
WORD_BLEU_TOKENIZERS = ("13a", "intl", "none")


def unsegmented_share(texts):
    """(share, characters per token, example): the share of the letters of ``texts`` in a script
    without word boundaries, how many of them a whitespace token holds on average, and a text
    with some."""
    letters = unsegmented = tokens = 0
    example = None
    for text in texts:
        for token in UNK_FORMS.sub(" ", text).split():
            found = len(NO_WORD_BOUNDARIES.findall(token))
            letters += sum(ch.isalpha() or bool(NO_WORD_BOUNDARIES.match(ch)) for ch in token)  # Thai marks too
            if found:
                unsegmented += found
                tokens += 1
                example = example or text
    return (unsegmented / letters if letters else 0.0), (unsegmented / tokens if tokens else 0.0), example


def check_word_boundaries(metric, texts, fix, what="the references"):
    """Refuse (FairseqWeanError) ``metric`` on ``texts`` mostly in a script without spaces between
    words, left unsegmented (more than half of the letters, over
    :data:`UNSEGMENTED_CHARACTERS_PER_TOKEN` such characters per whitespace token); ``fix`` ends
    the message. Text segmented into words or characters passes."""
    share, per_token, example = unsegmented_share(texts)
    if share > 0.5 and per_token > UNSEGMENTED_CHARACTERS_PER_TOKEN:
        raise FairseqWeanError(
            "{} counts words, and {} are in a script without spaces between words ({:.0f}% of the letters, {:.0f} "
            "characters per space-separated token, e.g. {!r}): each sentence would be one or a few 'words' and the "
            "score meaningless; {}".format(metric, what, 100 * share, per_token, example[:40], fix))


SEGMENT = "segment the text into words (or characters: python -m preprocess.split_characters) on every side first"


def check_bleu_tokenize(refs_streams, bleu_tokenize, option="--bleu-tokenize"):
    """BLEU with a word tokenization (:data:`WORD_BLEU_TOKENIZERS`) on unsegmented Chinese,
    Japanese, Thai, ... is refused, naming ``option`` (the tool's switch)."""
    if bleu_tokenize in WORD_BLEU_TOKENIZERS:
        check_word_boundaries("BLEU with tokenization {}".format(bleu_tokenize),
                              [r for stream in refs_streams for r in stream],
                              "use {} zh (Chinese; ja-mecab for Japanese, char for other scripts), or {}".format(
                                  option, SEGMENT))


# the forms of segmented text in such a script: characters (about one such character per token:
# preprocess.split_characters) and words (Chinese words have about 1.5 to 2); text between the two
# bounds is not called either
CHARACTERS_PER_TOKEN_BOUND = 1.1
WORDS_PER_TOKEN_BOUND = 1.4


def text_form(texts):
    """(form, characters per token): ``unsegmented``, ``characters``, ``words`` or None (not mostly in
    such a script, or between the bounds) of ``texts`` (:func:`unsegmented_share`)."""
    share, per_token, _ = unsegmented_share(texts)
    if share <= 0.5:
        return None, per_token
    if per_token > UNSEGMENTED_CHARACTERS_PER_TOKEN:
        return "unsegmented", per_token
    if per_token < CHARACTERS_PER_TOKEN_BOUND:
        return "characters", per_token
    return ("words" if per_token >= WORDS_PER_TOKEN_BOUND else None), per_token


def check_sides(metric, sides, fix=SEGMENT):
    """Refuse ``metric`` (one that counts whitespace tokens) unless every side it reads is in one form:
    ``sides`` are (what, texts) (texts None: not given): a side left unsegmented is refused
    (:func:`check_word_boundaries`), and so are sides segmented differently (one into characters,
    another into words: their tokens could never match, e.g. 0% copied, 100% invented for an output
    that copies its source)."""
    forms = []
    for what, texts in sides:
        if texts is None:
            continue
        check_word_boundaries(metric, texts, fix, what=what)
        form, per_token = text_form(texts)
        if form is not None:
            forms.append((what, form, per_token))
    for what, form, per_token in forms[1:]:
        if form != forms[0][1]:
            raise FairseqWeanError(
                "{} counts words, and {} is segmented into {} ({:.1f} characters per token) but {} into {} ({:.1f}): "
                "their tokens cannot match; segment every side the same way (e.g. python -m "
                "preprocess.split_characters on each)".format(metric, forms[0][0], forms[0][1], forms[0][2], what,
                                                               form, per_token))
