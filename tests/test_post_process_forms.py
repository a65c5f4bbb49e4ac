"""Probe B G2: every fairseq --post-process rule is checked against the data it is applied to, and
every unprocessed piece form it would undo is recognised (refused without --post-process)."""
import pytest
from fairseq.data.data_utils import post_process as fairseq_post_process

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import inputs, pieces

WORDS = ["the cat sat", "a dog ran"]
# each rule of fairseq's post_process (and this plugin's characters) -> the two lines in its form
FORMS = {
    "subword_nmt": ["the c@@ at sat", "a d@@ og ran"], "@@ ": ["the c@@ at sat", "a d@@ og ran"],
    "@@": ["the c@@at sat", "a d@@og ran"], "sentencepiece": ["\u2581the \u2581c at \u2581sat", "\u2581a \u2581dog \u2581ran"],
    "characters": ["\u2581t h e \u2581c a t \u2581s a t", "\u2581a \u2581d o g \u2581r a n"],
    "wordpiece": ["_the _c at _sat", "_a _dog _ran"], "letter": ["t h e | c a t | s a t", "a | d o g | r a n"],
    "_EOW": ["the_EOW c at_EOW sat_EOW", "a_EOW dog_EOW ran_EOW"], "silence": ["<SIL> the cat sat", "a dog <SIL> ran"],
}


def test_forms_cover_fairseq_rules():
    assert set(FORMS) | {"none"} == set(pieces.POST_PROCESS)
    for symbol, lines in FORMS.items():
        if symbol != "characters":  # the plugin's name; fairseq's Characters.decode is sentencepiece's rule
            assert [fairseq_post_process(l, symbol) for l in lines] == WORDS, symbol


def words_only(sys_lines, ref_lines, symbol):
    return inputs.words_only([("sys.txt", sys_lines, None)], None, None, [ref_lines], ["ref.txt"], symbol)


@pytest.mark.parametrize("symbol", sorted(FORMS))
def test_rule_on_its_form_gives_words(symbol):
    assert words_only(FORMS[symbol], FORMS[symbol], symbol) == ([WORDS], None, [WORDS])


@pytest.mark.parametrize("symbol", sorted(FORMS))
def test_rule_on_plain_words_is_refused(symbol):
    with pytest.raises(FairseqWeanError) as e:
        words_only(WORDS, WORDS, symbol)
    assert str(e.value).startswith("--post-process {} ".format(symbol)), str(e.value)
    if symbol in pieces.GLUING:  # one input in the form, the other in words: still glued
        with pytest.raises(FairseqWeanError, match=r"^--post-process .* and --refs ref.txt has no"):
            words_only(FORMS[symbol], WORDS, symbol)


@pytest.mark.parametrize("symbol", ["subword_nmt", "sentencepiece", "letter", "_EOW"])
def test_unprocessed_form_is_refused(symbol):
    with pytest.raises(FairseqWeanError, match=r"^sys.txt holds \S+ pieces"):
        words_only(FORMS[symbol], WORDS, None)
