"""Every public method of fairseq's ``GeneratorHubInterface`` (listed by introspection) x every kind of input:
taken, or one line before any work (``fairseq_wean.hub_inputs``); the decoding keywords the hub does nothing with
(``prefix_size``, ``print_alignment`` outside generate, ``nbest``) and ``score()`` on a translation model are one
line; an empty input line of fairseq-interactive is one line naming it, after the lines before it were translated.
"""
import pytest
import torch

from conftest import USER_DIR, cli
from fairseq_wean.errors import FairseqWeanError
from test_crafted_checkpoints import train_tiny


@pytest.fixture(scope="module")
def hub_model(data_bin, tmp_path_factory):
    return train_tiny(data_bin, tmp_path_factory.mktemp("hub-inputs")), data_bin


@pytest.fixture(scope="module")
def hub(hub_model):
    from fairseq_wean.hub import from_pretrained

    folder, data = hub_model
    return from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data),
                           max_len_b=5)


def fairseq_methods():
    import fairseq_wean  # noqa: F401
    from fairseq.hub_utils import GeneratorHubInterface

    from fairseq_wean.hub_inputs import public_methods

    return public_methods(GeneratorHubInterface)


# every kind of input, built for the hub at hand
INPUTS = {
    "str": lambda h: "w11 w12",
    "list of str": lambda h: ["w11 w12", "w13"],
    "tuple of str": lambda h: ("w11 w12",),
    "empty list": lambda h: [],
    "bytes": lambda h: b"w11 w12",
    "int": lambda h: 5,
    "None": lambda h: None,
    "empty str": lambda h: "",
    "whitespace": lambda h: " \t ",
    "list with an empty str": lambda h: ["w11", ""],
    "list with bytes": lambda h: ["w11", b"w12"],
    "list of ints": lambda h: [4, 5, 2],
    "tensor": lambda h: h.encode("w11 w12"),
    "2-D tensor": lambda h: torch.stack([h.encode("w11 w12"), h.encode("w13 w14")]),
    "float tensor": lambda h: torch.tensor([4.0, 2.0]),
    "tensor with an id out of the dictionary": lambda h: torch.tensor([4, 100000, 2]),
    "list of tensors": lambda h: [h.encode("w11 w12"), h.encode("w13")],
    "list with an end-of-sentence-only tensor": lambda h: [h.encode("w11"), torch.tensor([h.src_dict.eos()])],
    "list with a float tensor": lambda h: [torch.tensor([4.0, 2.0])],
}
# the inputs each method takes (any other is one line); score: none (a translation model)
TAKEN = {"translate": {"str", "list of str", "tuple of str", "empty list"},
         "sample": {"str", "list of str", "tuple of str", "empty list"},
         "score": set(),
         "generate": {"list of tensors", "empty list"},
         "encode": {"str"}, "binarize": {"str"},
         "tokenize": {"str", "empty str", "whitespace"}, "detokenize": {"str", "empty str", "whitespace"},
         "apply_bpe": {"str", "empty str", "whitespace"}, "remove_bpe": {"str", "empty str", "whitespace"},
         "decode": {"tensor", "2-D tensor", "list of ints", "empty list"},
         "string": {"tensor", "2-D tensor", "list of ints", "empty list"}}

# the refusals of an input of the type the method takes: a sentence with no word; an id out of the dictionary
EMPTY = {(m, k) for m in ("translate", "sample", "encode", "binarize") for k in ("empty str", "whitespace")} | {
    ("translate", "list with an empty str"), ("sample", "list with an empty str"),
    ("generate", "list with an end-of-sentence-only tensor")}
OUT_OF_DICTIONARY = {("decode", "tensor with an id out of the dictionary"),
                     ("string", "tensor with an id out of the dictionary")}


def test_every_public_hub_method_is_known_and_wrapped():
    """A method fairseq adds to its hub interface fails here until the table names its input."""
    from fairseq.hub_utils import GeneratorHubInterface

    from fairseq_wean.hub_inputs import METHODS
    from fairseq_wean.patching import MARK

    assert fairseq_methods() == sorted(METHODS) == sorted(TAKEN)
    for name in fairseq_methods():
        assert "fairseq_wean.hub_inputs." + name in getattr(getattr(GeneratorHubInterface, name), MARK, ()), name


@pytest.mark.parametrize("kind", sorted(INPUTS))
@pytest.mark.parametrize("method", fairseq_methods())
def test_every_hub_method_takes_its_input_or_refuses_it_in_one_line(hub, method, kind):
    value = INPUTS[kind](hub)
    call = getattr(hub, method)
    if kind in TAKEN[method]:
        out = call(value, 1) if method == "generate" else call(value)
        assert out is not None
        if method in ("translate", "sample") and kind != "str":
            assert isinstance(out, list) and len(out) == len(value)
        return
    with pytest.raises(FairseqWeanError) as info:
        call(value)
    line = str(info.value)
    assert "\n" not in line and line.startswith("hub {}(): ".format(method)), line
    if method == "score":
        assert "scores a sentence with a language model" in line
    elif (method, kind) in EMPTY:
        assert " is empty (no word, only whitespace)" in line, line
    elif (method, kind) in OUT_OF_DICTIONARY:
        assert "holds id 100000, and the dictionary's ids are 0 to" in line, line
    else:  # not the type the method takes
        assert " is " in line and ": give " in line, line


@pytest.mark.parametrize("method", ["translate", "sample", "generate", "from_pretrained"])
@pytest.mark.parametrize("keyword, says", [({"prefix_size": 3}, "keyword prefix_size=3 does nothing in the hub"),
                                           ({"print_alignment": True}, "keyword print_alignment=True "),
                                           ({"nbest": 2}, "keyword nbest=2 does nothing")])
def test_a_decoding_keyword_the_hub_does_nothing_with_is_one_line(hub, hub_model, method, keyword, says):
    from fairseq_wean.hub import from_pretrained

    if method == "from_pretrained":
        if "prefix_size" not in keyword:  # nbest: checked against its beam (test_hub_checks); print_alignment:
            pytest.skip("stored as 'hard', which generate() uses")  # fairseq stores True as 'hard', generate's
        folder, data = hub_model
        with pytest.raises(FairseqWeanError, match="^from_pretrained: " + says):
            from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data), **keyword)
        return
    with pytest.raises(FairseqWeanError, match="^hub generation: " + says):
        if method == "generate":
            hub.generate([hub.encode("w11 w12")], 3, **keyword)
        else:
            getattr(hub, method)("w11 w12", **keyword)


def test_print_alignment_hard_or_soft_in_generate_gives_the_alignment(hub):
    for value in ("hard", "soft"):
        hypo = hub.generate([hub.encode("w11 w12")], 2, print_alignment=value)[0][0]
        assert hypo["alignment"] is not None


def test_an_empty_interactive_line_is_one_line_after_the_lines_before(hub_model):
    folder, data = hub_model
    out = cli("fairseq-interactive", str(data), "--user-dir", USER_DIR, "--cpu", "--path",
              str(folder / "checkpoint_last.pt"), "--max-len-b", "5", check=False, input="w11 w12\n  \nw13\n")
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "fairseq-interactive input line 2 is empty (no word, only whitespace)" in lines[-1], lines[-1]
    assert "S-0\tw11 w12" in out.stdout and "S-1" not in out.stdout, out.stdout
