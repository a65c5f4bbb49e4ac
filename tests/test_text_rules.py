"""The text rules every scoring tool shares: fairseq's post-processing, piece detection, the one
character tokenization and the word-ROUGE script guard (tests/test_data_forms.py runs them end to end)."""
import pytest
from fairseq.data import data_utils

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import pieces
from fairseq_wean.scoring.metrics import ZERO_WIDTH, character_tokens, check_rouge_unit, rouge_sentence_scores

SENTENCES = ["wir@@ es su@@ ck ist gut", "\u2581wir \u2581hab en \u2581es", "t h e | c a t", "a@@ b@@ c d",
             "a b_EOW c d_EOW", "hello <SIL> world", "he_llo wor_ld", "", "plain words here"]


@pytest.mark.parametrize("symbol", [s for s in pieces.POST_PROCESS if s != "characters"])
def test_post_process_is_fairseqs(symbol):
    for sentence in SENTENCES:
        assert pieces.post_process(sentence, symbol) == data_utils.post_process(sentence, symbol), (symbol, sentence)


def test_characters_post_process_is_fairseqs_characters_decoding():
    from fairseq.data.encoders.characters import Characters

    for text in ("the cat sat", "雅虎 2014年", ""):
        encoded = Characters.encode(text)
        assert pieces.post_process(encoded, "characters") == Characters.decode(encoded) == text


@pytest.mark.parametrize("lines,kind", [
    (["wir@@ es"], "subword_nmt"), (["end@@"], "subword_nmt"), (["\u2581wir"], "sentencepiece"),
    (["plain words", "an e-mail@@host"], None), (["@@ at start", "x @@ y"], None), ([], None)])
def test_piece_kind(lines, kind):
    assert pieces.piece_kind(lines)[0] == kind


def test_pieces_are_refused_naming_the_input_and_the_fix():
    with pytest.raises(FairseqWeanError, match=r"--refs r holds subword_nmt pieces \('wir@@ es'\).*--post-process "
                                               r"subword_nmt"):
        pieces.check_no_pieces([("--sys s", ["wir es"], None), ("--refs r", ["wir@@ es"], None)])
    pieces.check_no_pieces([("--sys s", ["wir es"], None), ("--refs r", None, None)])


@pytest.mark.parametrize("a,b", [
    ("雅虎 2014年", "雅 虎 2 0 1 4 年"),  # spacing never matters
    ("苹果iPhone6", "苹 果 i P h o n e 6"),  # an ASCII run is one token, however written
    ("好<<unk>>吗", "好 <<unk>> 吗"),
] + [("雅虎 2014年", "雅{0}虎 20{0}14年{0}".format(z)) for z in sorted(ZERO_WIDTH)])  # invisible, as a space is
def test_one_character_tokenization_whatever_the_spacing(a, b):
    assert character_tokens(a) == character_tokens(b)
    assert rouge_sentence_scores([a], [[b]], chars=True, unit_option=None)["rouge1"][0] == 100.0


def test_unknown_words_are_one_token_and_never_match():
    assert character_tokens("好<<unk>>吗<unk>") == ["好", "<<unk>>", "吗", "<unk>"]
    assert character_tokens("<unk-12>") == ["<unk>"]
    assert rouge_sentence_scores(["好<unk>"], [["好<<unk>>"]], types=["rouge1"], chars=True)["rouge1"][0] == 50.0


@pytest.mark.parametrize("refs", [["Привет мир 2014", "Как дела 10"], ["我们今天去北京"], ["Ελληνικά 5"]])
def test_word_rouge_on_another_script_is_refused(refs):
    """The guard counts letters: Cyrillic with numbers used to pass (only a-z0-9-less references
    were refused) and scored 100 for different words with the same numbers."""
    with pytest.raises(FairseqWeanError, match="outside them"):
        check_rouge_unit([refs], chars=False)


@pytest.mark.parametrize("refs", [["the café is open", "naïve people"], ["über alles 10"], ["", "a"]])
def test_word_rouge_on_latin_text_with_accents_passes(refs):
    check_rouge_unit([refs], chars=False)


@pytest.mark.parametrize("refs", [["the cat sat on the mat"], ["police arrest 2 men", "我们"], ["café au lait"]])
def test_character_rouge_on_latin_text_is_refused(refs):
    """Character ROUGE reads no spaces and keeps an a-z/0-9 run whole: 'the cat sat' is one token,
    so every score on Latin text is 100 or 0."""
    with pytest.raises(FairseqWeanError, match="drop --rouge-chars"):
        check_rouge_unit([refs], chars=True)


@pytest.mark.parametrize("refs", [["雅虎 2014年"], ["苹果iPhone6发布会在北京举行"], ["2014", "10"], ["", "好"], ["Привет мир"]])
def test_character_rouge_on_chinese_with_names_and_numbers_passes(refs):
    """Digits are in every script and do not count; a Latin brand name in Chinese text is a minority."""
    check_rouge_unit([refs], chars=True)

