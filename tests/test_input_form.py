"""Text given to a model for decoding is in its source dictionary's form (fairseq_wean.input_form).

Every dictionary form (words, subword-nmt pieces, sentencepiece pieces, characters; on real text with byte-level
BPE ids and unsegmented Chinese too: test_input_form_real.py) x every input form x
every entry point (fairseq-interactive's input reader, the hub's binarize, which translate / sample /
encode go through): a mismatch is one line naming the form found, the dictionary's and the fix; the same
form never is, nor are the legitimate inputs that look alike (unknown words, one '@@' or '▁' token among
words, text the model's own --bpe wrote). Then fairseq-interactive itself on a tiny word model: the lines
before a mismatching line are translated and printed, the run stops there with exit 1 in one line.
"""
import inspect

import pytest

from conftest import USER_DIR, cli
from fairseq_wean import input_form
from fairseq_wean.errors import FairseqWeanError
from test_crafted_checkpoints import train_tiny


def dictionary(words):
    from fairseq.data import Dictionary

    d = Dictionary()
    for word in words:
        d.add_symbol(word)
    return d


# one tiny dictionary per form, and the sentence "the cat sat on the mat" in each form
DICTIONARIES = {
    "words": "the cat sat on mat a dog ran".split(),
    "subword_nmt": "the c@@ at s@@ on m@@ a d@@ og r@@ an".split(),  # frequent words whole, the rest split
    "sentencepiece": "\u2581the \u2581c at \u2581sat \u2581on \u2581m \u2581a \u2581d og \u2581r an".split(),
    "characters": list("thecasonmdgr") + ["\u2581"],  # fairseq's --bpe characters
}
INPUTS = {
    "words": "the cat sat on the mat",
    "subword_nmt": "the c@@ at sat on the m@@ at",
    "sentencepiece": "\u2581the \u2581c at \u2581sat \u2581on \u2581the \u2581m at",
    "characters": "t h e \u2581 c a t \u2581 s a t",
}
ENTRIES = ("fairseq-interactive", "hub")


def expected_fix(dict_form, found, entry):
    """What the message must say to do: the dictionary's --bpe (spelled for the entry), or words."""
    bpe = input_form.BPE_OF_FORM.get(dict_form, (None,))[0]
    give = "--bpe {}".format(bpe) if entry != "hub" else "bpe='{}'".format(bpe)
    if dict_form == "words":
        return "give words (the text before --bpe {})".format(input_form.BPE_OF_FORM[found][0])
    if found == "words":
        return "pass " + give
    return "give the text as words with " + give


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("given", sorted(INPUTS))
@pytest.mark.parametrize("form", sorted(DICTIONARIES))
def test_every_input_form_against_every_dictionary_form(form, given, entry):
    d = dictionary(DICTIONARIES[form])
    assert input_form.dictionary_form(d)[0] == form
    line = INPUTS[given]
    assert input_form.line_form(line.split())[0] == given
    problem = input_form.form_problem(d, line, None, entry)
    if given == form:
        assert problem is None
        return
    assert problem is not None and "\n" not in problem
    assert problem.startswith("{} input {!r} is in {}, and the model's source dictionary is of {}".format(
        entry, line, input_form.name(given), input_form.name(form))), problem
    assert "would be <unk>" in problem and expected_fix(form, given, entry) in problem, problem
    with pytest.raises(FairseqWeanError) as raised:
        input_form.check_input_form(d, line, None, entry)
    assert str(raised.value) == problem


# legitimate inputs that look like another form: never refused
LEGITIMATE = [
    ("words", "the zebra sat on the sofa", None),  # unknown words in a model of words
    ("words", "the cat sat on the mat foo@@ bar", None),  # one '@@' token among words
    ("words", "the \u2581cat sat on the mat", None),  # one '▁' token among words
    ("words", "the ##-year-old cat sat", None),  # Gigaword's digits
    ("subword_nmt", "the c@@ at s@@ at on the m@@ at", "subword_nmt"),  # what --bpe subword_nmt wrote
    ("subword_nmt", "the cat on a", None),  # a line of words --bpe leaves whole (most in the dictionary)
    ("sentencepiece", "\u2581the \u2581c at \u2581sat", "sentencepiece"),
    ("characters", "t h e \u2581 c a t", "characters"),
    # a bidi mark inside a word: the model's own sentencepiece splits the word into letters
    ("sentencepiece", "\u2581the \u2581 \u202e c a t", "sentencepiece"),
    ("sentencepiece", "\u2581the \u2581 \u2066 c a t \u2069", "sentencepiece"),
    ("zh", "\u6211 \u7231 \u4f60", None),  # a Chinese model of characters given characters
    ("bpe20", "the c@@ at sat", None),  # a subword-nmt dictionary with 20% marked pieces (the scorer's rule: words)
]
EXTRA = {"zh": ["\u6211", "\u7231", "\u4f60", "\u4eec", "\u732b"],
         "bpe20": "the sat on mat a dog ran c@@ at m@@".split()}


@pytest.mark.parametrize("form,line,bpe", LEGITIMATE)
def test_legitimate_inputs_are_not_refused(form, line, bpe):
    d = dictionary(EXTRA.get(form) or DICTIONARIES[form])
    assert input_form.form_problem(d, line, bpe) is None
    assert input_form.form_problem(d, line, bpe, "hub") is None


def test_a_bpe_that_writes_the_wrong_form_is_named_to_drop():
    """--bpe sentencepiece given for a model of words: drop it (not 'give words')."""
    problem = input_form.form_problem(dictionary(DICTIONARIES["words"]), INPUTS["sentencepiece"], "sentencepiece")
    assert "drop --bpe sentencepiece (it writes sentencepiece pieces" in problem
    problem = input_form.form_problem(dictionary(DICTIONARIES["words"]), INPUTS["sentencepiece"], "sentencepiece",
                                      "hub")
    assert "drop bpe='sentencepiece' to from_pretrained" in problem


def test_subword_nmt_pieces_below_the_share_are_found_by_the_joined_word():
    """'c@@ at' among words: the dictionary has 'cat', not its pieces: the text was encoded for another."""
    problem = input_form.form_problem(dictionary(DICTIONARIES["words"]), "the c@@ at sat on the mat", None)
    assert problem is not None and " is in subword-nmt pieces ('@@')" in problem


@pytest.fixture(scope="module")
def tiny(data_bin, tmp_path_factory):
    """A tiny wean_lstm of words (w0 ... w39) and its data folder."""
    return train_tiny(data_bin, tmp_path_factory.mktemp("input-form")), data_bin


def interactive(tiny, text, *extra):
    folder, data = tiny
    return cli("fairseq-interactive", data, "--user-dir", USER_DIR, "--path", folder / "checkpoint_last.pt",
               "--source-lang", "src", "--target-lang", "tgt", "--cpu", "--beam", "1", *extra, input=text,
               check=False)


@pytest.mark.parametrize("text,extra,bad,kind", [
    ("w11 w12\n\u2581w1 \u2581w2\nw3\n", (), 2, "sentencepiece pieces"),  # its own buffer: refused first
    ("w11 w12\nw1@@ 3 w4\nw5\n", ("--buffer-size", "2"), 2, "subword-nmt pieces"),  # 2nd of a buffer
])
def test_fairseq_interactive_stops_at_the_first_line_in_another_form(tiny, text, extra, bad, kind):
    proc = interactive(tiny, text, *extra)
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairseq-wean: error: fairseq-interactive input line {} {!r} is in {}".format(
        bad, text.splitlines()[bad - 1], kind)), last
    assert "the model's source dictionary is of words" in last and "give words" in last
    assert "Traceback" not in proc.stderr
    printed = [line.split("\t")[0] for line in proc.stdout.splitlines() if line[:2] in ("S-", "H-")]
    assert printed == ["S-0", "H-0"]  # the line before is translated, none after


def test_fairseq_interactive_translates_words_with_unknown_ones(tiny):
    proc = interactive(tiny, "w11 w12\nw13 zebra w14\n")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [line.split("\t")[0] for line in proc.stdout.splitlines() if line[:2] == "S-"] == ["S-0", "S-1"]


def test_the_hub_checks_what_binarize_receives(tiny):
    """check_hub_input on a real hub; through translate() once hub.py's binarize calls it."""
    from fairseq_wean import hub as hub_module

    folder, data = tiny
    hub = hub_module.from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data))
    input_form.check_hub_input(hub, hub.apply_bpe(hub.tokenize("w11 w12 zebra")))
    with pytest.raises(FairseqWeanError, match=r"^hub input '\u2581w1 \u2581w2' is in sentencepiece pieces .* "
                                               r"source dictionary is of words"):
        input_form.check_hub_input(hub, hub.apply_bpe(hub.tokenize("\u2581w1 \u2581w2")))
    if "check_hub_input" not in inspect.getsource(hub_module):
        pytest.skip("hub.py's binarize does not call input_form.check_hub_input yet")
    for call in (hub.translate, hub.sample, hub.encode):
        with pytest.raises(FairseqWeanError, match=r"^hub input 'w1@@ 3 w4' is in subword-nmt pieces"):
            call("w1@@ 3 w4")
    assert isinstance(hub.translate("w11 w12 zebra"), str)


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    """{form: (source dictionary of its training text, its test sources)}: conftest's words as they are,
    through subword-nmt (25 merges) and sentencepiece (40 pieces), by tests/test_data_forms.make_form."""
    from conftest import write_parallel
    from test_data_forms import make_form, read

    root = tmp_path_factory.mktemp("encoded")
    raw = root / "raw"
    raw.mkdir()
    for name, seed, n in (("train", 1, 300), ("valid", 2, 21), ("test", 3, 13)):
        write_parallel(str(raw / name), n, seed=seed)
    out = {}
    for form in ("words", "subword_nmt", "sentencepiece"):
        (root / form).mkdir()
        text = make_form(form, raw, root / form)[0]
        d = dictionary(token for side in ("src", "tgt") for line in read(text / ("train." + side))
                       for token in line.split())
        out[form] = d, read(text / "test.src")
    return out


@pytest.mark.parametrize("form", ["words", "subword_nmt", "sentencepiece"])
def test_text_of_real_encoders_against_their_dictionaries(encoded, form):
    """What subword-nmt and sentencepiece wrote, against the dictionaries fairseq would build of it: each
    dictionary's own text is never refused; text of another form is, at a line of the test set (where
    fairseq-interactive stops)."""
    d = encoded[form][0]
    assert input_form.dictionary_form(d)[0] == form
    for given, (_, lines) in encoded.items():
        refused = [line for line in lines if input_form.form_problem(d, line) is not None]
        assert (refused == []) == (given == form), (given, refused)


# a sentence with no visible character (input_form.blank): empty, whatever strip() says; visible ones are not
INVISIBLE = {"zero-width space": "\u200b", "zero-width non-joiner": "\u200c", "zero-width joiner": "\u200d",
             "word joiner": "\u2060", "byte order mark": "\ufeff", "right-to-left mark": "\u200f",
             "left-to-right mark": "\u200e", "right-to-left override": "\u202e", "isolates": "\u2066\u2069",
             "NUL": "\x00", "C0 controls": "\x01\x02", "DEL": "\x7f", "Mongolian vowel separator": "\u180e",
             "soft hyphen": "\u00ad", "tag space": "\U000e0020", "combining grapheme joiner": "\u034f",
             "lone surrogate": "\ud800", "variation selector": "\ufe0f", "Hangul filler": "\u3164",
             "with whitespace": " \u200b \u200f\t\u3000", "empty": "", "whitespace": " \t"}
VISIBLE = {"word and zero-width space": "the\u200b", "bidi mark in a word": "the \u202ecat", "emoji": "\U0001f600",
           "combining acute alone": "\u0301", "Thai": "\u0e01\u0e32\u0e23", "no-break space and word": "\xa0the"}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name", sorted(INVISIBLE))
def test_a_sentence_of_invisible_characters_is_empty(name, entry):
    d = dictionary(DICTIONARIES["words"])
    text = INVISIBLE[name]
    assert input_form.blank(text) and not input_form.blank(text + "a")
    for line in (text, "\u2581 " + text):  # as given, and after sentencepiece (fairseq-interactive's check)
        problem = input_form.form_problem(d, line, None, entry, "X")
        assert problem is not None and problem.startswith("X is empty (no word, only whitespace or invisible "), problem


@pytest.mark.parametrize("name", sorted(VISIBLE))
def test_a_sentence_with_a_visible_character_is_not_empty(name):
    assert not input_form.blank(VISIBLE[name])
    assert input_form.text_problem(VISIBLE[name], "X") is None


def test_a_nul_inside_a_sentence_is_refused():
    d = dictionary(DICTIONARIES["words"])
    assert input_form.form_problem(d, "the\x00cat sat", None, "hub", "X") == (
        "X holds a NUL character (position 3): that is binary data, not text; remove it")
