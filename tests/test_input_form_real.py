"""Every (given text form x model dictionary form) pair of fairseq_wean.input_form on REAL text.

The forms: words (multi30k, lowercased tokenized German), subword-nmt pieces (IWSLT'14 with its 10k codes),
sentencepiece pieces (a unigram model of 4000 pieces trained on multi30k's German: long compounds are mostly
unmarked continuation pieces), byte-level BPE ids (fairseq's ``--bpe gpt2`` with files made from multi30k's
words), characters (LCSTS split by ``preprocess.split_characters``) and unsegmented Chinese (LCSTS as it is; a
line form only). Each dictionary is built, as fairseq-preprocess would, from text of its form (a training or
another split); the lines given are a validation / test split of each form. A line of the dictionary's own form
is never refused (on every line of each split: ``python tests/test_input_form_real.py`` prints the counts); a
line of another form is refused in one line naming the form found and the dictionary's (all of a sample, but
lines a form cannot be told in: words that the wrong BPE leaves whole, :data:`TELLING`).
"""
import io
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import read_text_lines, shared_data_dir  # noqa: E402

from fairseq_wean import input_form  # noqa: E402
from fairseq_wean.scoring import pieces  # noqa: E402

IDS, UNSEGMENTED = input_form.IDS, input_form.UNSEGMENTED
DICTIONARY_FORMS = ("words", "subword_nmt", "sentencepiece", IDS, "characters")
GIVEN_FORMS = DICTIONARY_FORMS + (UNSEGMENTED,)
SAMPLE = 40  # lines of each form given to each dictionary in the test (the script: every line)
IDS_TRAIN = 6000  # the training lines the ids dictionary counts (gpt2's encoder in Python: about 0.3 ms a line)
M30 = ("translation", "multi30k_deen", "tok")
IWSLT = ("translation", "iwslt14_deen", "bpe10k")
LCSTS = ("summarization", "lcsts")


def dictionary(lines):
    from fairseq.data import Dictionary

    d = Dictionary()
    for line in lines:
        for token in line.split():
            d.add_symbol(token)
    d.finalize()
    return d


def gpt2_files(lines, folder, words=3000):
    """encoder.json and vocab.bpe in gpt2's format: its byte alphabet, and merges that build the ``words`` most
    frequent words (with gpt2's leading space) left to right: frequent words one id, rare ones several."""
    import collections

    from fairseq.data.encoders.gpt2_bpe_utils import bytes_to_unicode

    alphabet = bytes_to_unicode()
    counts = collections.Counter(" " + word for line in lines for word in line.split())
    merges, vocabulary = [], list(alphabet.values())
    known = set(vocabulary)
    for word, _ in counts.most_common(words):
        symbols = [alphabet[b] for b in word.encode("utf-8")]
        for i in range(1, len(symbols)):
            left, right = "".join(symbols[:i]), symbols[i]
            if left + right not in known:
                merges.append("{} {}".format(left, right))
                vocabulary.append(left + right)
                known.add(left + right)
    encoder, codes = os.path.join(folder, "encoder.json"), os.path.join(folder, "vocab.bpe")
    with open(encoder, "w", encoding="utf-8") as f:
        json.dump({token: i for i, token in enumerate(vocabulary)}, f)
    with open(codes, "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    return encoder, codes


def real_forms(folder, every=False):
    """{form: (the dictionary of that form or None, {split name: lines})} (see the module's docstring); None when
    the shared data is absent. ``every``: the lines of every split, else the first :data:`SAMPLE` of one."""
    import argparse

    import sentencepiece as spm

    from fairseq.data.encoders.gpt2_bpe import GPT2BPE
    from preprocess.split_characters import split_characters

    if not all(shared_data_dir(*p) for p in (M30, IWSLT, LCSTS)):
        return None

    def read(*parts):
        lines = read_text_lines(shared_data_dir(*parts))
        return lines if every else lines[:SAMPLE]

    train = read_text_lines(os.path.join(shared_data_dir(*M30), "train.lc.norm.tok.de"))
    words = {"val": read(*M30, "val.lc.norm.tok.de"), "test_2016": read(*M30, "test_2016_flickr.lc.norm.tok.de")}
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(train), model_writer=model, vocab_size=4000,
                                   model_type="unigram", minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())

    def sentencepiece(lines):
        return [" ".join(sp.encode(line, out_type=str)) for line in lines]

    encoder, codes = gpt2_files(train, folder)
    gpt2 = GPT2BPE(argparse.Namespace(gpt2_encoder_json=encoder, gpt2_vocab_bpe=codes))
    forms = {
        "words": (dictionary(train), words),
        "subword_nmt": (dictionary(read_text_lines(os.path.join(shared_data_dir(*IWSLT), "valid.de"))),
                        {"test": read(*IWSLT, "test.de")}),
        "sentencepiece": (dictionary(sentencepiece(train)), {k: sentencepiece(v) for k, v in words.items()}),
        IDS: (dictionary(gpt2.encode(line) for line in train[:IDS_TRAIN]), {k: [gpt2.encode(line) for line in v]
                                                                for k, v in words.items()}),
        "characters": (dictionary(split_characters(line) for line in read_text_lines(
            os.path.join(shared_data_dir(*LCSTS), "test.all.src"))),
            {"tgt": [split_characters(line) for line in read(*LCSTS, "test.all.tgt")]}),
        UNSEGMENTED: (None, {"tgt": read(*LCSTS, "test.all.tgt")}),
    }
    if every:  # also multi30k through IWSLT'14's codes (text encoded by the model's own codes)
        from subword_nmt.apply_bpe import BPE

        with open(os.path.join(shared_data_dir(*IWSLT), "code"), encoding="utf-8") as f:
            bpe = BPE(f)
        forms["subword_nmt"][1].update({"multi30k " + k: [bpe.process_line(line) for line in v]
                                        for k, v in words.items()})
    return forms


# a line of another form the check cannot tell, by (given, dictionary): none of its tokens is marked and most
# of them the dictionary has (a short words line that subword-nmt leaves whole is a subword-nmt line too)
def telling(given, expected, line, d):
    tokens = line.split()
    if given == "words" and expected == "subword_nmt":  # subword-nmt's dictionary keeps frequent words whole
        return 2 * len(input_form._unknown(d, tokens)) >= len(tokens)
    if given == UNSEGMENTED and expected == "words":  # mostly Latin letters ('iPhone6香港遭遇爆炒'): a word
        return input_form.line_form(tokens)[0] == UNSEGMENTED
    if given == "subword_nmt" and expected == "words":  # one split word ('foo@@ bar') among words may be words
        return sum(token.endswith("@@") for token in tokens) >= input_form.FOREIGN_PIECES or any(
            " ".join(word).replace("@@ ", "") in d.indices for word in input_form._split_words(tokens))
    return True


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    found = real_forms(str(tmp_path_factory.mktemp("real-forms")))
    if found is None:
        pytest.skip("the shared data (multi30k, IWSLT'14, LCSTS) is not here")
    return found


def test_each_real_dictionary_is_of_its_form(forms):
    for form in DICTIONARY_FORMS:
        assert input_form.dictionary_form(forms[form][0])[0] == form, form


@pytest.mark.parametrize("entry", ["fairseq-interactive", "hub"])
@pytest.mark.parametrize("expected", DICTIONARY_FORMS)
@pytest.mark.parametrize("given", GIVEN_FORMS)
def test_real_text_of_each_form_against_each_dictionary_form(forms, given, expected, entry):
    d = forms[expected][0]
    lines = [line for split in forms[given][1].values() for line in split if line.split()]
    problems = [(line, input_form.form_problem(d, line, None, entry)) for line in lines]
    refused = [(line, problem) for line, problem in problems if problem is not None]
    if given == expected:
        assert refused == []
        return
    missed = [line for line, problem in problems if problem is None and telling(given, expected, line, d)]
    assert missed == [], (given, expected, missed[:3])
    assert refused, (given, expected)
    for line, problem in refused:
        assert "\n" not in problem
        shown = line if len(line) <= 40 else line[:37] + "..."
        found = [given]  # a line with one piece among words ('6@@ 000'), a mostly Latin one ('iPhone6香港'): words
        if input_form.line_form(line.split())[0] == "words" and (given == UNSEGMENTED or len(pieces.piece_entries(
                line.split()).get(given, ())) < input_form.FOREIGN_PIECES):
            found.append("words")
        assert any(problem.startswith("{} input {!r} is in {}, and the model's source dictionary is of {}".format(
            entry, shown, input_form.name(form), input_form.name(expected))) for form in found), problem
        assert "would be <unk>" in problem, problem


def test_a_german_sentencepiece_line_of_long_compounds_is_refused_by_a_subword_nmt_model(forms):
    """Under half of its tokens carry '▁' (the compounds' continuations are unmarked and mostly known to a
    dictionary of short pieces): several '▁' pieces that a dictionary without any does not have tell it."""
    line = ("\u2581eine \u2581frau \u2581sitzt \u2581bei \u2581ihr em \u2581trocken blum en s ort i m en t \u2581auf "
            "\u2581ein em \u2581freiluft markt .")
    assert input_form.line_form(line.split())[0] == "words"
    problem = input_form.form_problem(forms["subword_nmt"][0], line)
    assert problem is not None and " is in sentencepiece pieces ('\u2581'), and the model's source dictionary is " \
                                   "of subword-nmt pieces ('@@')" in problem, problem
    assert problem.endswith("give the text as words with --bpe subword_nmt, --bpe-codes FILE (the model's own), "
                            "or in the model's subword-nmt pieces ('@@')"), problem


def test_words_given_to_a_gpt2_model_name_its_bpe_and_files(forms):
    line = forms["words"][1]["val"][0]
    problem = input_form.form_problem(forms[IDS][0], line, None, "hub")
    assert problem.endswith("pass bpe='gpt2', gpt2_encoder_json=FILE, gpt2_vocab_bpe=FILE (the model's own) to "
                            "from_pretrained so that words are encoded as its byte-level BPE ids (numbers), or give "
                            "the text in them"), problem
    problem = input_form.form_problem(forms["words"][0], forms[IDS][1]["val"][0], "gpt2")
    assert "drop --bpe gpt2 (it writes byte-level BPE ids (numbers); the model reads words)" in problem, problem


def main():
    """Every line of every split of each form against each dictionary: refused / lines."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="real-forms-") as folder:
        forms = real_forms(folder, every=True)
        for expected in DICTIONARY_FORMS:
            d = forms[expected][0]
            for given in GIVEN_FORMS:
                for split, lines in forms[given][1].items():
                    lines = [line for line in lines if line.split()]
                    refused = [line for line in lines if input_form.form_problem(d, line) is not None]
                    untold = sum(1 for line in lines if not telling(given, expected, line, d))
                    print("dictionary {:<13} given {:<13} {:<16} refused {:>5} of {:>5} (untellable {})".format(
                        expected[:13], given[:13], split, len(refused), len(lines), untold))


if __name__ == "__main__":
    main()
