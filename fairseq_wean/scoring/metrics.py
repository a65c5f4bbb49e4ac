"""Corpus metrics for ``fairseq-wean-score``: BLEU, SARI, FKGL, ROUGE, output statistics, and
paired-bootstrap significance.

Every metric is computed from per-sentence sufficient statistics, so that the same code gives the
corpus score and the bootstrap resamples (``paired_bootstrap``). Heavy libraries are imported
lazily: this module is imported whenever the plugin is (``fairseq_wean.scoring`` imports every
module in its folder) and must stay cheap and import cleanly.

- ``bleu``: sacrebleu ``corpus_bleu`` with every reference stream (13a tokenization by default,
  for detokenized text; ``bleu_tokenize="none"`` for tokenized text, as multi-bleu.perl and the
  Multi30k literature score it; case-sensitive), identical to calling sacrebleu directly.
- ``chrf``, ``ter``: sacrebleu's chrF (character 6-grams, beta 2) and TER, likewise (TER is better
  lower).
- ``sari``: :mod:`fairseq_wean.scoring.sari` (EASSE's ``corpus_sari``).
- ``fkgl``: corpus-level Flesch-Kincaid grade of the system output,
  0.39 * words/sentences + 11.8 * syllables/words - 15.59, with words, syllables and sentences
  counted per line by textstat (``lexicon_count``, ``syllable_count``, ``sentence_count``) and
  summed over the corpus (an empty line counts nothing). On a single line this is textstat's
  ``flesch_kincaid_grade`` unrounded. Syllables come from textstat's pyphen (en_US) counter, never
  from NLTK's cmudict, which textstat would download at run time (see ``_textstat``).
- ``rouge1``/``rouge2``/``rougeL``: rouge-score F1 x 100, averaged over sentences; with several
  references, the best-scoring reference per sentence (rouge-score's ``score_multi``). Porter
  stemming on by default (as ROUGE-1.5.5 ``-m``); ``chars=True`` scores Chinese by character.
- ``stats``: average output length (whitespace tokens), UNK percentage (tokens ``<unk>`` or
  ``UNK``), copy percentage (output tokens that occur in the source) and exact-copy percentage
  (outputs identical to the source, whitespace-normalised); with references also the
  invented-word percentages (see ``invented_words``).
"""
import re
import unicodedata

import numpy as np

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import sari as sari_lib
from fairseq_wean.scoring.inputs import check_normalization
from fairseq_wean.scoring.bleu_checks import (  # noqa: F401  (BLEU's tokenizer and n-grams)
    bleu_tokenize_option, check_bleu_ngrams, check_bleu_tokenizer, sacrebleu_tokenizer_problem)
from fairseq_wean.scoring.scripts import (  # noqa: F401  (the script checks, here since every metric uses them)
    NO_WORD_BOUNDARIES, SEGMENT, UNK_FORMS, UNSEGMENTED_CHARACTERS_PER_TOKEN, WORD_BLEU_TOKENIZERS, check_bleu_tokenize,
    check_sides, check_word_boundaries, unsegmented_share)
from fairseq_wean.scoring.bounds import (  # noqa: F401  (the bound on a call's work)
    CHRF_BYTES_PER_CHARACTER, LINEAR_WORK, MAX_CALL_SECONDS, MAX_CHRF_BYTES, MAX_LINE_TOKENS, MAX_WORK, PAIR_UNITS,
    QUADRATIC_METRICS, READS_SOURCES, SECONDS_AT_BOUND, WORK_UNITS, _seconds, _shape, check_input_size,
    check_line_lengths, input_work, metric_work, ter_line_work)

METRICS = ("bleu", "chrf", "ter", "sari", "fkgl", "rouge1", "rouge2", "rougeL", "stats")
SACREBLEU_METRICS = ("bleu", "chrf", "ter")
BLEU_TOKENIZE = "13a"  # sacrebleu's default: for detokenized text


ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
UNK_TOKENS = frozenset(["<unk>", "UNK"])
BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 12345  # sacrebleu's default seed for its paired bootstrap


# ---------------------------------------------------------------------------------------------
# ROUGE
# a run of ASCII letters and digits (each not followed by a combining mark), else one grapheme cluster: a
# character with its combining marks ('a' + U+0308, Indic vowel signs, Hangul jamo of one syllable, emoji with
# their modifiers), one unit as on screen (the regex module, sacrebleu's dependency, knows Unicode's clusters)
CHARACTER_UNITS = r"(?:[A-Za-z0-9](?![\p{M}]))+|\X"
_UNITS = []


def character_units():
    """The compiled :data:`CHARACTER_UNITS` (compiled when first used: this module is imported by the plugin)."""
    if not _UNITS:
        import regex

        _UNITS.append(regex.compile(CHARACTER_UNITS, regex.S))
    return _UNITS[0]


def character_tokens(text, lower=True):
    """The one character tokenization of every tool (ROUGE with --rouge-chars / --eval-rouge-chars /
    fairseq-generate --scoring rouge --rouge-chars, and the report's character units).

    Spaces never matter (the text is read without them: '雅虎 2014年' and '雅 虎 2 0 1 4 年' are
    the same tokens), nor do zero-width characters (:data:`ZERO_WIDTH`, invisible like a space); every other
    character is a token with its combining marks (a grapheme cluster: 'a' + U+0308 is one token, as 'ä' is),
    except that a run of ASCII letters and digits is one token, lowercased ('iPhone6' -> 'iphone6', also when
    written 'i P h o n e 6');
    fairseq's unknown-word forms are one token each, ``<<unk>>`` (its targets) and ``<unk>``
    (its hypotheses, markers ``<unk-N>`` too), which never match each other, as in fairseq's BLEU.
    ``lower=False`` keeps the case (``python -m preprocess.split_characters`` writes data so).
    """
    tokens = []
    position = 0
    for m in UNK_FORMS.finditer(text):
        tokens += _character_tokens(text[position:m.start()], lower)
        tokens.append("<<unk>>" if m.group(0) == "<<unk>>" else "<unk>")
        position = m.end()
    return tokens + _character_tokens(text[position:], lower)


# zero-width space, non-joiner, joiner, word joiner: invisible, so in character units they count as spaces do (not at all)
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060")


def _character_tokens(text, lower):
    squeezed = "".join(ch for ch in text if not ch.isspace() and ch not in ZERO_WIDTH)
    if lower:
        squeezed = "".join(ch.lower() if ch.isascii() else ch for ch in squeezed)
    return character_units().findall(squeezed)


class CharTokenizer:
    """rouge-score tokenizer for Chinese: :func:`character_tokens` (rouge-score's default
    tokenizer keeps only [a-z0-9] and would delete Chinese text entirely)."""

    def tokenize(self, text):
        return character_tokens(text)


def rouge_scorer(types=ROUGE_TYPES, chars=False, stemmer=True):
    from rouge_score import rouge_scorer as rs
    from rouge_score import tokenizers

    # an explicit tokenizer: same as rouge-score's default, without its "Using default tokenizer" log line
    tokenizer = CharTokenizer() if chars else tokenizers.DefaultTokenizer(use_stemmer=stemmer)
    return rs.RougeScorer(list(types), tokenizer=tokenizer)


def non_latin_share(texts):
    """(share, example): the share of the letters and digits of ``texts`` that ROUGE by words loses
    (rouge-score's tokenizer keeps only a-z and 0-9: Chinese, Cyrillic, Greek, ... vanish; an accent
    loses its letter only), and a text that loses some."""
    kept = lost = 0
    example = None
    for text in texts:
        for ch in text:
            if ch.isalnum():
                if ch.isascii():
                    kept += 1
                else:
                    lost += 1
                    example = example or text
    return (lost / (kept + lost) if kept + lost else 0.0), example


def latin_letter_share(texts):
    """(share, example, other_example): the share of the letters of ``texts`` that are ASCII a-z
    (digits are in every script and not counted, nor fairseq's unknown-word forms), a text that
    has some, and a text that has other letters."""
    latin = other = 0
    example = other_example = None
    for text in texts:
        for ch in UNK_FORMS.sub("", text):
            if ch.isalpha():
                if ch.isascii():
                    latin += 1
                    example = example or text
                else:
                    other += 1
                    other_example = other_example or text
    return (latin / (latin + other) if latin + other else 0.0), example, other_example


def check_rouge_unit(refs_streams, chars, option="--rouge-chars"):
    """Refuse ROUGE in a unit that does not fit the references' script, naming ``option`` (the
    tool's switch: --rouge-chars, fairseq-train's --eval-rouge-chars):

    * by words (rouge-score's tokenizer keeps only a-z and 0-9): on text mostly in another script
      every score is computed on what is left (the digits, the Latin words), e.g. 100 for two
      different Cyrillic sentences with the same numbers: more than half of the references'
      letters and digits lost is refused;
    * by characters (:func:`character_tokens` reads no spaces and keeps a run of ASCII letters
      and digits as one token): on Latin text a line's words run together into one token, so every
      score is 100 or 0: more than half of the references' letters a-z is refused.
    """
    from fairseq_wean.errors import FairseqWeanError

    texts = [r for stream in refs_streams for r in stream]
    if chars:
        share, example, _ = latin_letter_share(texts)
        message = ("ROUGE by character reads no spaces and keeps a run of a-z/0-9 as one token, and {:.0f}% of the "
                   "references' letters are a-z (e.g. {!r}): each line's words would run together into one token "
                   "and every score would be 100 or 0; drop {} to score by words")
    else:
        share, example = non_latin_share(texts)
        message = ("ROUGE by words keeps only a-z and 0-9 (rouge-score's tokenizer), and {:.0f}% of the references' "
                   "letters and digits are outside them (e.g. {!r}): the scores would ignore that text; add {} to "
                   "score by character (Chinese, Japanese; e.g. LCSTS)")
    if share > 0.5:
        raise FairseqWeanError(message.format(100 * share, example[:40], option))
    if not chars:
        check_rouge_words(texts, "reference", option)


_ROUGE_KEPT = re.compile(r"[a-z0-9]")
# ROUGE by words: the share of words that may be deleted whole (French 'à', 'où': about 2%), and the share that
# may lose some letters (German ~10%, Spanish ~14%, French ~25% of words; Vietnamese ~85%, Czech and Polish over
# half), at most
ROUGE_DROPPED_WORDS = 0.05
ROUGE_DAMAGED_WORDS = 0.4


def _lost(ch):
    """Whether rouge-score's tokenizer deletes ``ch`` from a word (it keeps a-z and 0-9 after lowercasing): a
    letter or digit outside them, or a combining mark."""
    return not ch.isascii() and (ch.isalnum() or unicodedata.category(ch).startswith("M"))


def check_rouge_words(texts, what, option="--rouge-chars"):
    """Refuse ROUGE by words on ``texts`` where rouge-score's tokenizer (a-z and 0-9 after lowercasing, every other
    character a space) loses text: more than :data:`ROUGE_DROPPED_WORDS` of the words deleted whole (Cyrillic,
    Greek, accented-only words never count: 25% Cyrillic words, all of them wrong, gave ROUGE-1 = 100), or more
    than :data:`ROUGE_DAMAGED_WORDS` of the words losing letters ('mưa' and 'mua' become one word: Vietnamese with
    every word's diacritics changed gave ROUGE-1 83). Punctuation-only tokens are not words and are dropped by
    every ROUGE."""
    words = dropped = damaged = 0
    example = damaged_example = None
    for text in texts:
        for token in text.split():
            if not any(ch.isalnum() for ch in token):
                continue
            words += 1
            if not _ROUGE_KEPT.search(token.lower()):
                dropped += 1
                example = example or token
            if any(_lost(ch) for ch in token):
                damaged += 1
                damaged_example = damaged_example or token
    if dropped > ROUGE_DROPPED_WORDS * words:
        raise FairseqWeanError(
            "ROUGE drops {:.1f}% of the {}s' words (non a-z: {} of {}, e.g. {!r}): rouge-score's tokenizer keeps "
            "only a-z and 0-9, so those words would never count (over {:.0%} is refused); score them with chrF, "
            "or by character ({}) for Chinese/Japanese".format(100.0 * dropped / words, what, dropped, words,
                                                               example[:40], ROUGE_DROPPED_WORDS, option))
    if damaged > ROUGE_DAMAGED_WORDS * words:
        raise FairseqWeanError(
            "ROUGE by words loses letters of {:.1f}% of the {}s' words ({} of {}, e.g. {!r}; over {:.0%} is "
            "refused): rouge-score's tokenizer keeps only a-z and 0-9, so words that differ in the other letters "
            "(diacritics: 'mưa'/'mua') count as one; score with chrF or BLEU".format(
                100.0 * damaged / words, what, damaged, words, damaged_example[:40], ROUGE_DAMAGED_WORDS))


MAX_WORD_CHARACTERS = 1000  # textstat's syllable counter: ~8 us a character; no English word is near it


def check_english(metric, texts, what="the output"):
    """Refuse ``metric`` (FKGL: English syllables and words) on text mostly not in a-z letters, or with a
    'word' longer than :data:`MAX_WORD_CHARACTERS` (its syllables would be counted for seconds)."""
    for i, text in enumerate(texts, 1):
        if len(text) > MAX_WORD_CHARACTERS:
            longest = max(text.split() or [""], key=len)
            if len(longest) > MAX_WORD_CHARACTERS:
                raise FairseqWeanError(
                    "{}: line {} of {} has a 'word' of {:,} characters, more than the {:,} an English word can have "
                    "(its syllables would be counted for nothing): fix that line, or score without {}".format(
                        metric, i, what, len(longest), MAX_WORD_CHARACTERS, metric))
    share, _, example = latin_letter_share(texts)
    if example is not None and share < 0.5:
        raise FairseqWeanError(
            "{} is defined for English text (English syllables and words), and {:.0f}% of {}'s letters are not a-z "
            "(e.g. {!r}): the grade would be meaningless; score with another metric".format(
                metric, 100 * (1 - share), what, example[:40]))


def rouge_sentence_scores(sys_sents, refs_streams, types=ROUGE_TYPES, chars=False, stemmer=True,
                          unit_option="--rouge-chars"):
    """{type: array of per-sentence F1 x 100}. Every ROUGE of every tool is computed here, so the
    unit is checked here (:func:`check_rouge_unit`, naming ``unit_option``); ``unit_option=None``
    only where the caller checked all its references before (validation, batch by batch)."""
    if unit_option is not None:
        check_normalization([("the output", sys_sents), ("the references", [r for s in refs_streams for r in s])])
        check_rouge_unit(refs_streams, chars, unit_option)
        if not chars:
            check_rouge_words(sys_sents, "output", unit_option)
    check_input_size(types, sys_sents, refs_streams, chars=chars)
    scorer = rouge_scorer(types, chars, stemmer)
    out = {t: np.zeros(len(sys_sents)) for t in types}
    for i, hyp in enumerate(sys_sents):
        refs = [stream[i] for stream in refs_streams]
        scores = scorer.score_multi(refs, hyp) if len(refs) > 1 else scorer.score(refs[0], hyp)
        for t in types:
            out[t][i] = 100.0 * scores[t].fmeasure
    return out


# ---------------------------------------------------------------------------------------------
# BLEU
def sacrebleu_metric(name, bleu_tokenize=BLEU_TOKENIZE):
    from sacrebleu.metrics import BLEU, CHRF

    from fairseq_wean.scoring.ter import sacrebleu_ter

    if name == "bleu":
        check_bleu_tokenizer(bleu_tokenize)  # a tokenizer sacrebleu would download, or one it cannot build
        return BLEU(force=True, tokenize=bleu_tokenize)  # force: no "forgot to detokenize?" warning; same score
    return CHRF() if name == "chrf" else sacrebleu_ter()  # sacrebleu's TER, its search's edits computed faster


def bleu_sentence_stats(sys_sents, refs_streams, name="bleu", bleu_tokenize=BLEU_TOKENIZE):
    """sacrebleu's per-sentence sufficient statistics of BLEU (or chrF, TER): the ones its paired
    bootstrap uses."""
    if name == "bleu":
        check_bleu_tokenize(refs_streams, bleu_tokenize)
    elif name == "ter":
        check_word_boundaries("TER", [r for stream in refs_streams for r in stream], SEGMENT)
    check_line_lengths(name, sys_sents, refs_streams)
    metric = sacrebleu_metric(name, bleu_tokenize)
    stats = metric._extract_corpus_statistics(sys_sents, refs_streams)
    return metric, np.asarray(stats, dtype=float)


def bleu_from_stats(metric, totals):
    return metric._compute_score_from_stats(list(totals)).score


def corpus_bleu(sys_sents, refs_streams):
    import sacrebleu

    return sacrebleu.corpus_bleu(sys_sents, refs_streams, force=True).score


# ---------------------------------------------------------------------------------------------
# FKGL
_TEXTSTAT = []


def _textstat():
    """A private textstat instance: no rounding, syllables from pyphen's en_US patterns.

    textstat >= 0.7.4 looks English words up in NLTK's cmudict and, when that corpus is not
    installed, downloads it on first use (and fails without internet). Scores would then depend
    on the machine. The locale "en-US" is not "en"-rooted for textstat (it splits on "_"), so
    textstat counts syllables with its pyphen fallback, while pyphen maps "en-US" to its en_US
    patterns: deterministic and offline (textstat's method before 0.7.4).
    tests/test_scorer.py pins this with hand-counted values.
    """
    if not _TEXTSTAT:
        import textstat

        ts = type(textstat.textstat)()
        ts.set_lang("en-US")
        ts.set_rounding_points(None)
        _TEXTSTAT.append(ts)
    return _TEXTSTAT[0]


def fkgl_sentence_stats(sys_sents):
    """Rows of (words, syllables, sentences) per output line, counted by textstat (English text only:
    :func:`check_english`)."""
    check_english("FKGL", sys_sents)
    ts = _textstat()
    rows = []
    for s in sys_sents:
        if not s.strip():
            rows.append((0, 0, 0))
            continue
        rows.append((ts.lexicon_count(s), ts.syllable_count(s), max(1, ts.sentence_count(s))))
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def fkgl_from_stats(totals):
    words, syllables, sentences = totals
    if words == 0 or sentences == 0:
        return 0.0
    return 0.39 * words / sentences + 11.8 * syllables / words - 15.59


# ---------------------------------------------------------------------------------------------
# stats
STATS_KEYS = ("avg_len", "unk_pct", "copy_pct", "exact_copy_pct")
INVENTED_KEYS = ("invented_pct", "invented_sent_pct")


def invented_words(hyp, src, refs):
    """The output tokens of one sentence found in neither its source nor any of its references.

    Faithfulness: a word a system writes that no input and no human rewrite contains was made
    up by the system (a hallucination, or a paraphrase no annotator chose).

    Tokens are the whitespace-separated tokens of the lowercased strings (``str.lower`` then
    ``str.split``, the tokens every other statistic here counts), compared exactly:

    * punctuation is not treated specially: a token made of punctuation (``,`` ``.`` ``'s``)
      is a word like any other, and a token with punctuation attached (``mat.``) differs
      from ``mat``. Score tokenized text (as TurkCorpus is) or text tokenized the same way
      on all sides;
    * ``<unk>`` and ``UNK`` (as written, before lowercasing) are never invented: they are
      counted by ``unk_pct``;
    * each occurrence counts: ``"x x"`` with ``x`` in no input is two invented words.

    Returns the invented tokens (lowercased) in output order.
    """
    known = known_words(src, refs)
    return [t.lower() for t in hyp.split() if is_invented(t, known)]


def known_words(src, refs):
    """The lowercased whitespace tokens of a source and its references (see ``invented_words``)."""
    known = set(src.lower().split())
    for ref in refs:
        known.update(ref.lower().split())
    return known


def is_invented(token, known):
    """True if the output token ``token`` is invented given ``known = known_words(src, refs)``:
    the one test behind ``invented_words`` (and the HTML report's "invented" colour)."""
    return token not in UNK_TOKENS and token.lower() not in known


def output_stats_rows(sys_sents, orig_sents, refs_streams=None):
    """Rows of (tokens, unk tokens, tokens found in the source, exact copy) per sentence, and with
    ``refs_streams`` (shape (n_references, n_sentences)) two more columns: (invented tokens,
    sentence has an invented token); see ``invented_words``."""
    rows = []
    for i, (hyp, src) in enumerate(zip(sys_sents, orig_sents)):
        toks = hyp.split()
        src_toks = src.split()
        src_set = set(src_toks)
        row = (
            len(toks),
            sum(t in UNK_TOKENS for t in toks),
            sum(t in src_set for t in toks),
            float(toks == src_toks),
        )
        if refs_streams:
            invented = len(invented_words(hyp, src, [stream[i] for stream in refs_streams]))
            row += (invented, float(invented > 0))
        rows.append(row)
    width = len(STATS_KEYS) + (len(INVENTED_KEYS) if refs_streams else 0)
    return np.asarray(rows, dtype=float).reshape(-1, width)


def output_stats_from_stats(totals, n):
    """{key: value} from the column sums of ``output_stats_rows``; ``invented_pct`` (share of output
    tokens, %) and ``invented_sent_pct`` (share of sentences with at least one, %) only when the
    rows have the invented-word columns."""
    tokens, unk, copied, exact = totals[:4]
    out = {
        "avg_len": tokens / n if n else 0.0,
        "unk_pct": 100.0 * unk / tokens if tokens else 0.0,
        "copy_pct": 100.0 * copied / tokens if tokens else 0.0,
        "exact_copy_pct": 100.0 * exact / n if n else 0.0,
    }
    if len(totals) > 4:
        invented, sentences_with_invented = totals[4:6]
        out["invented_pct"] = 100.0 * invented / tokens if tokens else 0.0
        out["invented_sent_pct"] = 100.0 * sentences_with_invented / n if n else 0.0
    return {k: float(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
class CorpusMetric:
    """A metric as per-sentence statistics (rows) plus a function of their sum."""

    def __init__(self, rows, from_totals):
        self.rows = np.asarray(rows, dtype=float)
        self.from_totals = from_totals

    def score(self, weights=None):
        totals = self.rows.sum(axis=0) if weights is None else weights @ self.rows
        return self.from_totals(totals)


def build_metrics(names, sys_sents, orig_sents, refs_streams, sari_mode="default", rouge_chars=False,
                  rouge_stemmer=True, bleu_tokenize=BLEU_TOKENIZE):
    """{name: CorpusMetric} for every requested metric except ``stats``. The text's script is checked
    for every requested metric first (the same checks each metric's code makes), so that nothing is
    computed for a call that is refused."""
    check_input_size(names, sys_sents, refs_streams, orig_sents, rouge_chars)  # the bound on work, first
    refs_text = [r for stream in refs_streams or [] for r in stream]
    if "bleu" in names:
        check_bleu_tokenize(refs_streams, bleu_tokenize)
    # every side a metric counts the whitespace tokens of, in one form (stats: lengths, copies, invented words)
    sides = {"sys": ("the output", sys_sents), "orig": ("the sources", orig_sents),
             "refs": ("the references", refs_text if refs_streams else None)}
    # one Unicode normalization form on every side compared (fairseq_wean.scoring.inputs, the files' rule)
    check_normalization(list(sides.values()))
    counted = {"sari": ("refs", "orig", "sys"), "ter": ("refs", "sys"), "stats": ("sys", "orig", "refs"),
               "bleu": ("refs", "sys") if bleu_tokenize in WORD_BLEU_TOKENIZERS else ()}
    for name, read in counted.items():
        if name in names and read:
            check_sides("BLEU with tokenization " + bleu_tokenize if name == "bleu" else
                        name if name == "stats" else name.upper(), [sides[side] for side in read])
    if "fkgl" in names:
        check_english("FKGL", sys_sents)
    if any(t in names for t in ROUGE_TYPES):
        check_rouge_unit(refs_streams, rouge_chars)
    out = {}
    n = len(sys_sents)
    for name in SACREBLEU_METRICS:
        if name in names:
            metric, rows = bleu_sentence_stats(sys_sents, refs_streams, name, bleu_tokenize)
            out[name] = CorpusMetric(rows, lambda t, m=metric: bleu_from_stats(m, t))
    if "sari" in names:
        rows = sari_lib.corpus_stats(orig_sents, sys_sents, refs_streams, mode=sari_mode)
        out["sari"] = CorpusMetric(rows, lambda t: sari_lib.sari_from_stats(list(t), mode=sari_mode))
    if "fkgl" in names:
        out["fkgl"] = CorpusMetric(fkgl_sentence_stats(sys_sents), fkgl_from_stats)
    types = [t for t in ROUGE_TYPES if t in names]
    if types:
        per_sent = rouge_sentence_scores(sys_sents, refs_streams, types, rouge_chars, rouge_stemmer)
        for t in types:
            out[t] = CorpusMetric(per_sent[t].reshape(-1, 1), lambda tot, n=n: float(tot[0]) / n if n else 0.0)
    return out


# --bootstrap-samples / bootstrap_samples: its one range, used by the library and both CLIs. Above
# 100,000 resamples a p-value's resolution (1e-5) is finer than any decision needs and only costs
# time; MAX_BOOTSTRAP_DRAWS bounds resamples x sentences (each draw is a random index and a row
# of every metric's statistics: 1e8 draws: ~4 s per metric pair measured,
# more with more metrics and memory), refused before any scoring.
MAX_BOOTSTRAP_SAMPLES = 100000
MAX_BOOTSTRAP_DRAWS = 10 ** 8


def check_bootstrap(n_samples, n_sentences=None, compared=True, option="bootstrap_samples"):
    """Refuse (one line) a bootstrap setting that is out of range, has no effect (``compared``:
    whether a second system is compared; without one no bootstrap runs) or would run unbounded.
    ``n_samples`` None: the default, :data:`BOOTSTRAP_SAMPLES`. Returns the number of samples."""
    if n_samples is None:
        n_samples = BOOTSTRAP_SAMPLES
    elif not compared:
        raise FairseqWeanError("{} has no effect without a second system to compare (compare_to / "
                               "--compare-to, or a second --sys): drop it".format(option))
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or not (
            1 <= n_samples <= MAX_BOOTSTRAP_SAMPLES):
        raise FairseqWeanError("{} must be an integer from 1 to {} (more resamples only cost time), not {!r}".format(
            option, MAX_BOOTSTRAP_SAMPLES, n_samples))
    if n_sentences is not None and n_samples * n_sentences > MAX_BOOTSTRAP_DRAWS:
        raise FairseqWeanError(
            "paired bootstrap of {} sentences x {} resamples = {:,} draws is over the bound of {:,} (it would run "
            "for minutes): give {} {} or fewer, or score a smaller test set".format(
                n_sentences, n_samples, n_samples * n_sentences, MAX_BOOTSTRAP_DRAWS, option,
                max(1, MAX_BOOTSTRAP_DRAWS // n_sentences)))
    return int(n_samples)


BOOTSTRAP_BLOCK = 1 << 22  # resample weights held at once by paired_bootstrap (32 MB)


def paired_bootstrap(metrics_a, metrics_b, n_samples=BOOTSTRAP_SAMPLES, seed=BOOTSTRAP_SEED):
    """Two-sided paired-bootstrap p-values, per metric (Koehn, "Statistical Significance Tests for
    Machine Translation Evaluation", EMNLP 2004).

    The same ``n_samples`` resamples of sentence indices (fixed ``seed``) are applied to both
    systems. The bootstrap differences are centred on their mean to approximate the null
    distribution, and p = (1 + #{|delta_b - mean| >= |delta_observed|}) / (1 + n_samples), the
    statistic sacrebleu's ``--paired-bs`` reports. Identical systems give p = 1.0 exactly.
    """
    names = [k for k in metrics_a if k in metrics_b]
    n_samples = check_bootstrap(n_samples, len(next(iter(metrics_a.values())).rows) if metrics_a else None)
    if not names:
        return {}
    n = len(next(iter(metrics_a.values())).rows)
    if n == 0:
        return {k: 1.0 for k in names}
    rng = np.random.RandomState(seed)
    deltas = {k: [] for k in names}
    # the resample weights in blocks of BOOTSTRAP_BLOCK numbers (all of them at once: 400 MB for
    # 1,000 resamples of 50,000 sentences); the same draws in the same order, so the same p-values
    block = max(1, min(n_samples, BOOTSTRAP_BLOCK // n))
    for start in range(0, n_samples, block):
        weights = np.zeros((min(block, n_samples - start), n))
        for b in range(len(weights)):
            weights[b] = np.bincount(rng.randint(0, n, size=n), minlength=n)
        for k in names:
            a, b = metrics_a[k], metrics_b[k]
            ta, tb = weights @ a.rows, weights @ b.rows
            deltas[k].extend(a.from_totals(ta[i]) - b.from_totals(tb[i]) for i in range(len(weights)))
    p_values = {}
    for k in names:
        observed = metrics_a[k].score() - metrics_b[k].score()
        centred = np.abs(np.array(deltas[k]) - np.mean(deltas[k]))
        # a small tolerance so that floating-point noise does not decide ties (identical systems)
        count = int(np.sum(centred >= abs(observed) - 1e-9))
        p_values[k] = (count + 1) / (n_samples + 1)
    return p_values
