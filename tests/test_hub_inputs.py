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
        assert " is empty (no word, only whitespace or invisible characters)" in line, line
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


# the raw line is checked before --bpe encodes it (a BPE may turn an invisible line into pieces or ids)
@pytest.mark.parametrize("line, says", [("  ", "is empty (no word, only whitespace or invisible characters)"),
                                        ("\u200b\u2060", "is empty (no word, only whitespace or invisible characters)"),
                                        ("w11\x00w12", "holds a NUL character (position 3)")])
def test_an_empty_interactive_line_is_one_line_after_the_lines_before(hub_model, line, says):
    folder, data = hub_model
    out = cli("fairseq-interactive", str(data), "--user-dir", USER_DIR, "--cpu", "--path",
              str(folder / "checkpoint_last.pt"), "--max-len-b", "5", check=False,
              input="w11 w12\n{}\nw13\n".format(line))
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "fairseq-interactive input line 2 " + says in lines[-1], lines[-1]
    assert "S-0\tw11 w12" in out.stdout and "S-1" not in out.stdout, out.stdout


# a sentence with no visible character, or holding NUL: one line in every method that takes sentences
@pytest.mark.parametrize("text, says", [("\u200b", " is empty (no word"), ("\ufeff\u200f", " is empty (no word"),
                                        ("\x00", " is empty (no word"), ("\u202e \u2060", " is empty (no word"),
                                        ("w11\x00w12", " holds a NUL character (position 3)")])
@pytest.mark.parametrize("method", ["translate", "sample", "encode", "binarize"])
def test_an_invisible_or_nul_sentence_is_one_line(hub, method, text, says):
    for value in ((text, ["w11", text]) if method in ("translate", "sample") else (text,)):
        with pytest.raises(FairseqWeanError) as info:
            getattr(hub, method)(value)
        assert says in str(info.value) and str(info.value).startswith("hub {}(): ".format(method)), str(info.value)


# generate's ids: the integer dtypes fairseq's embedding takes (torch.long, torch.int32); the others one line
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_generate_takes_the_ids_an_embedding_takes(hub, dtype):
    tokens = hub.encode("w11 w12").to(getattr(torch, dtype))
    if dtype in ("int64", "int32"):
        assert hub.generate([tokens], 1)[0][0]["tokens"].tolist() == hub.generate([tokens.long()], 1)[0][0][
            "tokens"].tolist()
        return
    with pytest.raises(FairseqWeanError, match=r"^hub generate\(\): tokenized_sentences\[0\] is a 1-D torch.{} "
                                               r"tensor: give .* \(dtype torch.long\)$".format(dtype)):
        hub.generate([tokens], 1)


# inference_step_args (what the prefix_size refusal recommends): checked before fairseq's beam search
PREFIX = {
    "an id out of the dictionary": (lambda h: {"prefix_tokens": torch.tensor([[99999]])}, 1, "holds id 99999"),
    "<pad>": (lambda h: {"prefix_tokens": torch.tensor([[h.tgt_dict.pad()]])}, 1, "(not <pad>"),
    "a float tensor": (lambda h: {"prefix_tokens": torch.tensor([[4.0]])}, 1, "a 2-D torch.float32 tensor"),
    "a 1-D tensor": (lambda h: {"prefix_tokens": torch.tensor([4])}, 1, "a 1-D torch.int64 tensor"),
    "a list": (lambda h: {"prefix_tokens": [[4]]}, 1, "give a 2-D torch.long tensor"),
    "3 rows for 1 sentence": (lambda h: {"prefix_tokens": torch.tensor([[4], [4], [4]])}, 1, "has 3 rows for 1 "),
    "1 row for 2 sentences": (lambda h: {"prefix_tokens": torch.tensor([[4]])}, 2, "has 1 rows for 2 sentences"),
    "not a dict": (lambda h: [("prefix_tokens", None)], 1, "inference_step_args is list: give a dict"),
    "an unknown key": (lambda h: {"prefix": torch.tensor([[4]])}, 1, "'prefix' is no keyword of fairseq's"),
}


@pytest.mark.parametrize("method", ["generate", "translate"])
@pytest.mark.parametrize("case", sorted(PREFIX))
def test_inference_step_args_are_checked(hub, method, case):
    args, count, says = PREFIX[case]
    value = ["w11 w12", "w13"][:count]
    with pytest.raises(FairseqWeanError) as info:
        if method == "generate":
            hub.generate([hub.encode(s) for s in value], 2, inference_step_args=args(hub))
        else:
            hub.translate(value, inference_step_args=args(hub))
    line = str(info.value)
    assert line.startswith("hub {}(): inference_step_args".format(method)) and says in line, line


def test_a_prefix_of_one_row_for_one_sentence_starts_its_hypotheses(hub):
    prefix = hub.tgt_dict.index("w13")
    hypos = hub.generate([hub.encode("w11 w12")], 2, inference_step_args={"prefix_tokens": torch.tensor([[prefix]])})
    assert all(h["tokens"][0].item() == prefix for h in hypos[0])


@pytest.mark.parametrize("method", ["translate", "sample", "generate"])
def test_skip_invalid_size_inputs_is_one_line(hub, method):
    value = [hub.encode("w11 w12")] if method == "generate" else ["w11 w12"]
    with pytest.raises(FairseqWeanError, match="^hub generation: keyword skip_invalid_size_inputs=True: fairseq "
                                               "would return fewer outputs than inputs"):
        getattr(hub, method)(value, 2, skip_invalid_size_inputs=True)
    assert len(getattr(hub, method)(value, 2, skip_invalid_size_inputs=False)) == 1


# remove_bpe's text in the form the hub's --bpe's decode reads (input_form.DECODED_FORMS)
REMOVE_BPE = [("gpt2", "Ein Mann", False), ("gpt2", "31414 232", True), ("gpt2", "31414", True),
              ("gpt2", "<unk> 232", True), ("sentencepiece", "hello world", False),
              ("sentencepiece", "\u2581hello \u2581world", True), ("subword_nmt", "the c@@ at", True),
              ("subword_nmt", "the cat", True), ("subword_nmt", "\u2581the \u2581cat \u2581sat", False),
              (None, "anything", True), ("gpt2", "", True)]


@pytest.mark.parametrize("bpe, text, taken", REMOVE_BPE)
def test_remove_bpe_takes_the_form_its_bpe_decodes(bpe, text, taken):
    from types import SimpleNamespace

    from fairseq_wean.hub_inputs import input_problem

    hub = SimpleNamespace(cfg=SimpleNamespace(bpe={"_name": bpe} if bpe else None))
    problem = input_problem(hub, "remove_bpe", text)
    assert (problem is None) == taken, problem
    if not taken:
        assert problem.startswith("hub remove_bpe(): its input ") and "--bpe {}'s decode reads".format(bpe) in problem
