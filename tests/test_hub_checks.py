"""The hub's checks before fairseq opens or decodes anything (fairseq_wean/hub.py).

* Every file fairseq's ``hub_utils.from_pretrained`` takes from the checkpoint's folder
  (``hub.hub_folder_files``: read from fairseq's own source, with the plugin's) or from the data folder
  (``data.folder_files.data_folder_files``) that is a link out of its folder, a named pipe or a folder is
  refused in one line before it is opened (a named pipe blocked the load), on every route to the hub.
* Every decoding keyword argument of the hub (``translate``, ``sample``, ``generate``,
  ``from_pretrained``) is checked against the command line's table (``patching.GENERATION_RANGES``,
  ``GENERATION_ANY_VALUE``, ``SHARDING_RANGES``) and ``decoding_option_problem``; a ``beam`` given to
  ``from_pretrained`` is the one ``translate`` uses.
"""
import math
import os
import signal

import pytest

from conftest import USER_DIR
from fairseq_wean.errors import FairseqWeanError
from test_crafted_checkpoints import train_tiny


@pytest.fixture
def no_hang():
    """A named pipe opened for reading would block: fail instead after 60 s."""
    def alarm(*_):
        raise TimeoutError("blocked: a named pipe was opened")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def folder_files():
    import fairseq_wean  # noqa: F401
    from fairseq_wean.hub import hub_folder_files

    return sorted(hub_folder_files())


def test_the_folder_files_are_fairseqs_own():
    assert {"code", "bpecodes", "sentencepiece.bpe.model", "merges.txt", "vocab.json"} <= set(folder_files())


def plugin_from_pretrained(folder, data):
    from fairseq_wean.hub import from_pretrained

    return from_pretrained(folder, data_name_or_path=data)


def model_class_from_pretrained(folder, data):  # fairseq's BaseFairseqModel.from_pretrained
    from fairseq_wean.models.wean_lstm import WeanLSTMModel

    return WeanLSTMModel.from_pretrained(folder, checkpoint_file="checkpoint_best.pt", data_name_or_path=data)


def model_and_data(tmp_path):
    """A model folder whose checkpoint is never read (the refusal comes first) and a data folder."""
    folder, data = tmp_path / "model", tmp_path / "data"
    folder.mkdir()
    data.mkdir()
    (folder / "checkpoint_best.pt").write_bytes(b"never read: the refusal comes first")
    for lang in ("src", "tgt"):
        (data / "dict.{}.txt".format(lang)).write_text("w1 3\n")
    return folder, data


@pytest.mark.parametrize("route", [plugin_from_pretrained, model_class_from_pretrained])
@pytest.mark.parametrize("kind", ["a link to a regular file", "a named pipe", "a folder", "a link to a named pipe"])
@pytest.mark.parametrize("name", folder_files())
def test_a_file_the_hub_finds_in_the_folder_is_refused_unless_a_regular_file(tmp_path, name, kind, route, no_hang):

    folder, data = model_and_data(tmp_path)
    planted = folder / name
    elsewhere = tmp_path / "elsewhere"
    if kind == "a link to a regular file":
        elsewhere.write_text("secret\n")
        planted.symlink_to(elsewhere)
    elif kind == "a link to a named pipe":
        os.mkfifo(elsewhere)
        planted.symlink_to(elsewhere)
    elif kind == "a named pipe":
        os.mkfifo(planted)
    else:
        planted.mkdir()
    with pytest.raises(FairseqWeanError) as info:
        route(str(folder), str(data))
    message = str(info.value)
    assert message.startswith("from_pretrained: {} ".format(planted)) and "refused" in message and "\n" not in message


@pytest.mark.parametrize("route", [plugin_from_pretrained, model_class_from_pretrained])
@pytest.mark.parametrize("kind", ["a link out of the folder", "a named pipe", "a folder"])
@pytest.mark.parametrize("name", ["dict.tgt.txt", "train.src-tgt.src.bin"])
def test_a_file_the_hub_finds_in_the_data_folder_is_refused_unless_a_file_of_the_folder(tmp_path, name, kind, route,
                                                                                           no_hang):
    folder, data = model_and_data(tmp_path)
    planted = data / name
    if planted.exists():
        planted.unlink()
    if kind == "a link out of the folder":
        (tmp_path / "elsewhere").write_text("w1 3\n")
        planted.symlink_to(tmp_path / "elsewhere")
    elif kind == "a named pipe":
        os.mkfifo(planted)
    else:
        planted.mkdir()
    with pytest.raises(FairseqWeanError) as info:
        route(str(folder), str(data))
    message = str(info.value)
    assert message.startswith("{} {} ".format("dictionary" if name.startswith("dict") else "binarized data file",
                                              planted)) and "refused" in message and "\n" not in message, message


def bad_value(key):
    from fairseq_wean.patching import GENERATION_ANY_VALUE, GENERATION_RANGES, SHARDING_RANGES

    if key in GENERATION_ANY_VALUE:
        return float("nan")
    low, kind, _high, above = dict(GENERATION_RANGES, **SHARDING_RANGES)[key]
    return low if above else (low - 1 if kind is int else low - 0.5)


def ranged_keys():
    from fairseq_wean.patching import GENERATION_ANY_VALUE, GENERATION_RANGES, SHARDING_RANGES

    return sorted(set(GENERATION_RANGES) | set(GENERATION_ANY_VALUE) | set(SHARDING_RANGES))


@pytest.mark.parametrize("key", ranged_keys())
def test_every_ranged_decoding_option_is_checked_as_a_hub_keyword(key):
    from fairseq_wean.hub import generation_kwargs_problem

    bad = bad_value(key)
    problem = generation_kwargs_problem({key: bad})
    assert problem is not None and problem.startswith("{}=".format(key)), (key, bad, problem)
    assert generation_kwargs_problem({key: float("inf")}) is not None
    assert generation_kwargs_problem({key: "3"}) is not None  # not a number


@pytest.fixture(scope="module")
def hub_model(data_bin, tmp_path_factory):
    return train_tiny(data_bin, tmp_path_factory.mktemp("hub-checks")), data_bin


@pytest.mark.parametrize("method", ["translate", "sample", "generate"])
@pytest.mark.parametrize("kwargs", [{"beam": 0}, {"lenpen": float("nan")}, {"max_len_a": -3}, {"beam": 2, "nbest": 3},
                                    {"temperature": 0}, {"sampling_topp": 1.5}])
def test_hub_decoding_keywords_are_range_checked(hub_model, method, kwargs):
    from fairseq_wean.hub import from_pretrained

    folder, data = hub_model
    hub = from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data),
                          user_dir=USER_DIR)
    sentence = "w1 w2 w3"
    kwargs = dict(kwargs)
    with pytest.raises(FairseqWeanError, match=r"^hub generation: \w+") as info:
        if method == "generate":
            beam = kwargs.pop("beam", 5)
            hub.generate([hub.encode(sentence)], beam, **kwargs)
        else:
            getattr(hub, method)(sentence, **kwargs)
    assert "\n" not in str(info.value)


def test_a_beam_given_to_from_pretrained_is_checked_and_used(hub_model, monkeypatch):
    from fairseq_wean.hub import from_pretrained

    folder, data = hub_model
    for bad in ({"beam": 0}, {"lenpen": math.nan}, {"beam": 2, "nbest": 3}):
        with pytest.raises(FairseqWeanError, match=r"^from_pretrained: (beam|lenpen|nbest)"):
            from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data), **bad)
    hub = from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data), beam=1)
    beams = []
    original = type(hub.task).build_generator

    def spy(self, models, args, *a, **k):
        beams.append(args.beam)
        return original(self, models, args, *a, **k)

    monkeypatch.setattr(type(hub.task), "build_generator", spy)
    hub.translate("w1 w2")
    hub.translate("w1 w2", beam=3)
    assert beams == [1, 3]


def test_a_keyword_the_hub_does_not_act_on_is_refused_with_close_names(hub_model):
    """fairseq set any keyword on its generation configuration (``beem=5``, ``print_gates=True``: ignored) and
    any from_pretrained keyword where a section had it (a misspelling: ignored); ``bpe='unk_markers'`` on a
    model without markers did nothing."""
    from fairseq_wean.hub import from_pretrained

    folder, data = hub_model
    load = dict(checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data))
    hub = from_pretrained(str(folder), **load)
    with pytest.raises(FairseqWeanError, match=r"^hub generation: keyword beem=5 does nothing there .*did you mean beam"):
        hub.translate("w1 w2", beem=5)
    with pytest.raises(FairseqWeanError, match=r"^hub generation: keyword print_gates=True does nothing there"):
        hub.sample("w1 w2", print_gates=True)
    with pytest.raises(FairseqWeanError, match=r"^hub generation: diverse_beam_groups 2 must divide beam 5"):
        hub.translate("w1 w2", beam=5, diverse_beam_groups=2)
    with pytest.raises(FairseqWeanError, match=r"^from_pretrained: keyword beem=5 does nothing there"):
        from_pretrained(str(folder), beem=5, **load)
    with pytest.raises(FairseqWeanError, match=r"^from_pretrained: bpe='unk_markers' does nothing for this model"):
        from_pretrained(str(folder), bpe="unk_markers", **load)
    assert isinstance(hub.translate("w1 w2", beam=2, lenpen=1.0), str)


@pytest.mark.parametrize("method", ["translate", "sample", "generate"])
def test_nbest_in_the_hub_is_refused(hub_model, method):
    """translate()/sample() keep only the best hypothesis and generate() returns the whole beam: nbest=2 returned
    one string (or three hypotheses), silently."""
    from fairseq_wean.hub import from_pretrained

    folder, data = hub_model
    hub = from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data))
    call = (lambda **k: hub.generate([hub.encode("w1 w2")], 3, **k)) if method == "generate" else \
        (lambda **k: getattr(hub, method)("w1 w2", beam=3, **k))
    with pytest.raises(FairseqWeanError, match=r"^hub generation: keyword nbest=2 does nothing in translate\(\)"):
        call(nbest=2)
    out = call(nbest=1)
    assert isinstance(out, str) if method != "generate" else len(out[0]) == 3


@pytest.mark.parametrize("key", ["model_name_or_path", "checkpoint_file", "data_name_or_path", "bpe_codes"])
def test_a_hub_argument_holding_an_interpolation_is_one_line(tmp_path, key):
    """fairseq hands the hub's arguments to OmegaConf: 'd_${x}' was a TypeError traceback from its path splitting
    (fairseq's route, a model class's from_pretrained; the plugin's own checks its files first)."""
    import fairseq_wean  # noqa: F401
    from fairseq.models.transformer import TransformerModel

    odd = tmp_path / "d_${x}"
    odd.mkdir()
    args = dict(model_name_or_path=str(tmp_path), checkpoint_file="checkpoint_best.pt", data_name_or_path=str(tmp_path))
    args[key] = str(odd)
    with pytest.raises(FairseqWeanError, match=r"^from_pretrained: {}='.*d_\$\{{x\}}' holds '\$\{{'".format(key)):
        TransformerModel.from_pretrained(**args)


@pytest.mark.parametrize("form", ["words", "subword_nmt", "sentencepiece", "characters", "ids", "bpe20"])
def test_the_hubs_bpe_note_reads_the_dictionary_form_of_input_form(form):
    """The hub's "a BPE was needed" note (hub.dictionary_pieces) is input_form.dictionary_form, the rule of the
    hub's input check: no second detector (a characters dictionary's lone '▁' is no sentencepiece model)."""
    from test_input_form import DICTIONARIES, EXTRA, dictionary

    from fairseq_wean import hub, input_form

    words = {"ids": [str(i) for i in range(40)]}.get(form) or EXTRA.get(form) or DICTIONARIES[form]
    d = dictionary(words)
    expected = {"subword_nmt": "subword_nmt", "bpe20": "subword_nmt", "sentencepiece": "sentencepiece"}.get(form)
    assert hub.dictionary_pieces(d) == expected
    assert hub.dictionary_pieces(d) == (input_form.dictionary_form(d)[0] if input_form.dictionary_form(d)[0] in
                                        hub.SUBWORD_MODEL_FILES else None)
