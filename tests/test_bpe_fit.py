"""The chosen --bpe must give its text back and must fit the model's dictionary, checked at parse (before any work).

Two classes of the trial build (``tokenizer_files.build_problem``), which checked only that building the component and
encoding a sentence raised nothing:

* decode(encode(x)) must be x (word for word) for every registered BPE and tokenizer but those lossy by design
  (``tokenizer_files.LOSSY``, each with its reason): ``--bpe subword_nmt --bpe-separator ''`` made fairseq's decode
  remove every space of every output line, exit 0;
* the output form of the chosen --bpe vs the form of the model's target dictionary
  (``input_form.bpe_dictionary_problem`` over ``input_form.dictionary_form``): ``--bpe gpt2`` on a model of words
  decoded the whole test set, then a ``ValueError: invalid literal for int()`` traceback (fairseq-generate and the
  hub); sentencepiece/characters/bytes/byte_bpe on words or subword-nmt pieces joined every output line's words.
  Every registered BPE x every dictionary form, through the parse of fairseq-generate, -interactive, -validate
  and -train and the hub's check of its loaded configuration, against a table written here.
"""
import json

import pytest

import fairseq_wean  # noqa: F401  (registers the plugin's components and the option check)
from conftest import USER_DIR
from fairseq_wean import input_form
from fairseq_wean import tokenizer_files as T
from fairseq_wean.errors import FairseqWeanError

IDS = input_form.IDS
FORMS = {  # one dictionary per form (the sentence "the cat sat on the mat" in it), as fairseq writes dict.*.txt
    "words": "the cat sat on mat a dog ran".split(),
    "subword_nmt": "the c@@ at s@@ on m@@ a d@@ og r@@ an".split(),
    "sentencepiece": "\u2581the \u2581c at \u2581sat \u2581on \u2581m \u2581a \u2581d og \u2581r an".split(),
    "characters": list("thecasonmdgr") + ["\u2581"],
    IDS: [str(n) for n in (262, 3797, 3332, 319, 2603, 257, 3290, 4966)],
}
# the reference: the dictionary forms each registered BPE's decode reads (fairseq's decode functions read by hand);
# None: no claim (bert: transformers is not installed here; unk_markers restores words from the source, any form)
FITS = {"gpt2": {IDS}, "hf_byte_bpe": {IDS},
        "sentencepiece": {"sentencepiece", "characters"}, "byte_bpe": {"sentencepiece", "characters"},
        "characters": {"sentencepiece", "characters"}, "bytes": {"sentencepiece", "characters"},
        "subword_nmt": {"subword_nmt", "words"}, "fastbpe": {"subword_nmt", "words"},
        "bert": None, "unk_markers": None}
# the reasons stated for the components that do not give their text back by design
LOSSY = {("tokenizer", "moses"), ("tokenizer", "nltk"), ("bpe", "bert"), ("bpe", "unk_markers")}


@pytest.fixture(autouse=True)
def fresh_builds():
    T._BUILT.clear()
    yield
    T._BUILT.clear()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Real files of every BPE whose package is installed: subword-nmt codes, sentencepiece models (bpe and a byte
    one for byte_bpe), gpt2's encoder.json and vocab.bpe."""
    import sentencepiece as spm
    from fairseq.data.encoders.byte_utils import byte_encode
    from fairseq.data.encoders.gpt2_bpe_utils import bytes_to_unicode
    from subword_nmt.learn_bpe import learn_bpe

    folder = tmp_path_factory.mktemp("bpe-files")
    text = ["Hello world , 12 . the cat sat on the mat", "a dog runs in the park and the big red ball",
            "Zebra quick brown fox jumps over 123 lazy dogs"] * 30
    (folder / "train.txt").write_text("\n".join(text) + "\n")
    (folder / "btrain.txt").write_text("\n".join(byte_encode(line) for line in text) + "\n")
    with open(folder / "train.txt") as source, open(folder / "codes", "w") as codes:
        learn_bpe(source, codes, 50)
    for name, source in (("spm", "train.txt"), ("bbpe", "btrain.txt")):
        spm.SentencePieceTrainer.train(input=str(folder / source), model_prefix=str(folder / name), vocab_size=60,
                                       model_type="bpe", hard_vocab_limit=False, minloglevel=2)
    encoder = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    encoder.update({"\u0120t": len(encoder), "he": len(encoder) + 1})  # the merges' results (vocab.bpe below)
    (folder / "encoder.json").write_text(json.dumps(encoder))
    (folder / "vocab.bpe").write_text("#version: 0.2\n\u0120 t\nh e\n")
    return {"subword_nmt": {"bpe_codes": str(folder / "codes")},
            "sentencepiece": {"sentencepiece_model": str(folder / "spm.model")},
            "byte_bpe": {"sentencepiece_model_path": str(folder / "bbpe.model")},
            "gpt2": {"gpt2_encoder_json": str(folder / "encoder.json"), "gpt2_vocab_bpe": str(folder / "vocab.bpe")},
            "characters": {}, "bytes": {}}


def installed(section, name):
    from fairseq.registry import REGISTRIES

    return not T.missing_packages(REGISTRIES[section]["registry"][name])


def test_every_registered_component_is_in_the_tables():
    """A component registered later must be placed: in FITS (a BPE), and lossy or not."""
    assert set(T.registered("bpe")) == set(FITS)
    assert {key for key in T.LOSSY} == LOSSY and all(T.LOSSY[key] for key in LOSSY)


@pytest.mark.parametrize("section,name", sorted((s, n) for s in T.SECTIONS for n in T.registered(s)))
def test_every_installed_component_built_with_real_files_gives_its_text_back(files, section, name):
    """Built with its real files, every installed component passes the trial (its round trip holds) and, unless
    lossy by design, decode(encode(x)) is x word for word."""
    import argparse

    from fairseq.data import encoders

    if not installed(section, name) or (section, name) == ("tokenizer", "nltk"):
        pytest.skip("its package (or nltk's punkt data) is not installed here")
    values = dict(files.get(name, {}), source_lang="en", target_lang="en")
    assert T.component_problem(section, name, values, keywords=True) is None
    if (section, name) in LOSSY:
        return
    config = T.registered(section)[name]
    built = getattr(encoders, "build_" + section)(argparse.Namespace(**{section: name}, **values) if config else name)
    assert built.decode(built.encode(T.PROBE_TEXT)).split() == T.PROBE_TEXT.split()


@pytest.mark.parametrize("command", ["generate", "interactive", "train"])
def test_a_separator_that_eats_the_spaces_is_one_line_at_parse(files, tmp_path, command):
    """F38: ``--bpe-separator ''``: fairseq's decode removes separator + ' ', every space."""
    separator = ""
    from fairseq import options

    parser = {"train": options.get_training_parser, "generate": options.get_generation_parser,
              "interactive": options.get_interactive_generation_parser}[command]()
    argv = [str(tmp_path), "--user-dir", USER_DIR, "--bpe", "subword_nmt", "--bpe-codes", files["subword_nmt"][
        "bpe_codes"], "--bpe-separator", separator] + (["--arch", "lstm"] if command == "train" else
                                                       ["--path", str(tmp_path / "never.pt")])
    with pytest.raises(FairseqWeanError) as info:
        options.parse_args_and_arch(parser, argv)
    decoded = "Helloworld,12."
    assert str(info.value) == (
        "--bpe subword_nmt with --bpe-codes {}: it does not give text back: decode(encode('Hello world , 12 .')) is "
        "{!r}, so every line it decodes would be changed so (with --bpe-separator {!r}); refused before any "
        "work".format(files["subword_nmt"]["bpe_codes"], decoded, separator))


def data_folder(tmp_path, form, target_only=False):
    """A data folder whose target dictionary (dict.tgt.txt) is of ``form`` (the source: words)."""
    folder = tmp_path / "data-{}".format(form.replace(" ", "-"))
    folder.mkdir()
    (folder / "dict.tgt.txt").write_text("".join("{} {}\n".format(w, 10) for w in FORMS[form]))
    (folder / "dict.src.txt").write_text("".join("{} {}\n".format(w, 10) for w in FORMS[
        form if target_only else "words"]))
    return folder


def test_the_dictionaries_are_of_their_forms():
    from fairseq.data import Dictionary

    for form, words in FORMS.items():
        d = Dictionary()
        for word in words:
            d.add_symbol(word)
        assert input_form.dictionary_form(d)[0] == form


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("bpe", sorted(FITS))
@pytest.mark.parametrize("entry", ["generate", "interactive", "validate", "train", "hub"])
def test_every_bpe_against_every_dictionary_form(files, tmp_path, entry, bpe, form):
    """(registered BPE with real files) x (dictionary form) x (entry point): a BPE whose decode cannot read the target
    dictionary's form is one line naming both and the fix, at parse (nothing loaded: the checkpoint does not exist);
    one that can is accepted. BPEs whose package is missing are checked through the table's function alone."""
    from fairseq import options

    folder = data_folder(tmp_path, form)
    expected_refused = FITS[bpe] is not None and form not in FITS[bpe]
    if not installed("bpe", bpe) or (entry != "hub" and T.registered("bpe")[bpe] is None):
        # no build here (its package), or refused on fairseq's command line (no dataclass): the table's function
        from fairseq.data import Dictionary

        problem = input_form.bpe_dictionary_problem(bpe, Dictionary.load(str(folder / "dict.tgt.txt")), "D",
                                                    entry == "hub")
        assert (problem is not None) == expected_refused, problem
        return
    values = dict(files.get(bpe, {}), bpe=bpe, data=str(folder), target_lang="tgt", source_lang="src")
    if entry == "hub":
        check = lambda: T.tokenizer_files_problem(values, keywords=True, unset_ok=True)  # noqa: E731
    else:
        parser = {"train": options.get_training_parser, "generate": options.get_generation_parser,
                  "interactive": options.get_interactive_generation_parser,
                  "validate": options.get_validation_parser}[entry]()
        argv = [str(folder), "--user-dir", USER_DIR, "--bpe", bpe, "-s", "src", "-t", "tgt"]
        argv += ["--" + k.replace("_", "-") + "=" + v for k, v in files.get(bpe, {}).items()]
        argv += ["--arch", "lstm"] if entry == "train" else ["--path", str(tmp_path / "never.pt")]
        if entry == "validate":
            argv += ["--task", "translation"]
        check = lambda: options.parse_args_and_arch(parser, argv)  # noqa: E731
    if not expected_refused:
        check()
        return
    with pytest.raises(FairseqWeanError) as info:
        check()
    message = str(info.value)
    spelled = "bpe={!r}".format(bpe) if entry == "hub" else "--bpe {}".format(bpe)
    assert "\n" not in message and message.startswith("{}{} cannot decode the model's target dictionary {}, of {}".format(
        "from_pretrained: " if entry == "hub" else "", spelled, folder / "dict.tgt.txt", input_form.name(form))), message
    assert message.endswith("refused before any work"), message
    own = input_form.BPE_OF_FORM.get(form, ("",))[0]
    assert ("drop " + spelled) in message if form == "words" else (
        "bpe={!r}".format(own) if entry == "hub" else "--bpe {}".format(own)) in message, message


def test_without_a_target_language_a_folder_with_one_fitting_dictionary_passes(files, tmp_path):
    """No --target-lang: every dict.*.txt of the folder is a candidate; refused only when none fits."""
    folder = data_folder(tmp_path, IDS)  # dict.src.txt: words, dict.tgt.txt: ids
    values = dict(files["gpt2"], bpe="gpt2", data=str(folder))
    assert T.tokenizer_files_problem(values) is None
    (folder / "dict.tgt.txt").write_text((folder / "dict.src.txt").read_text())
    with pytest.raises(FairseqWeanError, match=r"^--bpe gpt2 cannot decode the model's dictionary .*dict\.src\.txt \(no "
                       r"target language given: none of the data folder's fits\), of words "):
        T.tokenizer_files_problem(values)


@pytest.fixture(scope="module")
def tiny(data_bin, tmp_path_factory):
    from test_crafted_checkpoints import train_tiny

    return train_tiny(data_bin, tmp_path_factory.mktemp("bpe-fit")), data_bin


def test_the_hub_refuses_gpt2_on_a_word_model_before_translating(tiny, files):
    """F11: from_pretrained(bpe='gpt2', valid files) on a model of words: one line, no ValueError at translate."""
    from fairseq_wean.hub import from_pretrained

    folder, data = tiny
    with pytest.raises(FairseqWeanError) as info:
        from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data),
                        bpe="gpt2", **files["gpt2"])
    assert str(info.value).startswith("from_pretrained: bpe='gpt2' cannot decode the model's "), str(info.value)
    assert "of words (e.g. " in str(info.value) and "drop bpe='gpt2'" in str(info.value), str(info.value)
    hub = from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data),
                          bpe="subword_nmt", **files["subword_nmt"])  # a BPE that fits: loaded
    assert hub.cfg.bpe._name == "subword_nmt"


# every sentencepiece training choice a researcher may make: given back (in the model's own normalization; a piece
# outside its vocabulary, '\u2047' or a byte piece '<0xNN>', is the model's): accepted by the trial
SPM_CHOICES = {"plain": {}, "nfkc_cf (lower-cases)": {"normalization_rule_name": "nfkc_cf"},
               "identity normalization": {"normalization_rule_name": "identity"},
               "byte_fallback, split_digits": {"byte_fallback": True, "split_digits": True},
               "whitespace as suffix": {"treat_whitespace_as_suffix": True},
               "no dummy prefix": {"add_dummy_prefix": False}, "unigram": {"model_type": "unigram"}}


@pytest.mark.parametrize("choice", sorted(SPM_CHOICES))
def test_every_sentencepiece_training_choice_passes_the_trial(tmp_path, choice):
    import sentencepiece as spm

    text = ["Hello World , the Cat sat on the mat", "A dog runs in the park and the big red ball"] * 20
    (tmp_path / "train.txt").write_text("\n".join(text) + "\n")  # no digit: '12' is outside the vocabulary
    extra = dict(SPM_CHOICES[choice])
    spm.SentencePieceTrainer.train(input=str(tmp_path / "train.txt"), model_prefix=str(tmp_path / "m"),
                                   vocab_size=300 if extra.get("byte_fallback") else 60,
                                   model_type=extra.pop("model_type", "bpe"), hard_vocab_limit=False,
                                   minloglevel=2, **extra)
    assert T.component_problem("bpe", "sentencepiece", {"sentencepiece_model": str(tmp_path / "m.model")}) is None


# --bpe-separator: a separator that some word ends with eats text in fairseq's decode ((x + ' ').replace(sep + ' ', ''))
SEPARATORS = {"": "'Helloworld,12.'", ".": "'Hello world , 12'", "e": "'...d xd xf xf g xg...'",
              "a": "'...xb xb c xc d xd...'", "s": "'...r xr xt xt u xu...'", "\u00e9": "'xx\u00e9x .'",
              "@@": None, "++": None, "@@@": None}


@pytest.mark.parametrize("separator", sorted(SEPARATORS))
def test_a_separator_that_eats_text_fails_the_trial(files, separator):
    problem = T.component_problem("bpe", "subword_nmt", dict(files["subword_nmt"], bpe_separator=separator))
    if SEPARATORS[separator] is None:
        assert problem is None, problem
        return
    assert problem is not None and "it does not give text back: decode(encode(" in problem, problem
    assert ")) is {}, so every line".format(SEPARATORS[separator]) in problem, problem
    assert "(with --bpe-separator {!r})".format(separator) in problem, problem
