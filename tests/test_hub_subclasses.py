"""Importing the plugin leaves fairseq's own hub classes working: every hub class fairseq defines
(``GeneratorHubInterface``, what ``TransformerLanguageModel.from_pretrained`` returns; ``BARTHubInterface``; the
``RobertaHubInterface``, no GeneratorHubInterface) gives, with the plugin imported, byte for byte what it gives
without it, for each public method with its legitimate inputs (tiny models built in a subprocess, once with and once
without ``import fairseq_wean``). ``fairseq_wean.hub_inputs`` checks only the user's call (the outermost hub
method): BART's generate hands a 2-D batch to the base class' generate, which was refused. BART's own methods'
inputs are one line each.

Run as a script (``python tests/test_hub_subclasses.py plugin|plain DATA OUT``) it writes the methods' results.
"""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--encoder-embed-dim", "16", "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32",
        "--decoder-ffn-embed-dim", "32", "--encoder-layers", "1", "--decoder-layers", "1",
        "--encoder-attention-heads", "2", "--decoder-attention-heads", "2"]
LM_TINY = ["--decoder-embed-dim", "16", "--decoder-ffn-embed-dim", "32", "--decoder-layers", "1",
           "--decoder-attention-heads", "2", "--tokens-per-sample", "64"]


class IdentityBPE:
    """A BPE that leaves the text as it is (the test data are words of the dictionary)."""

    def encode(self, x):
        return x

    def decode(self, x):
        return x


def build(argv, seed=1):
    """(cfg, task, model) of fairseq's training parser's ``argv``, the model's weights from ``seed``."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), argv + ["--cpu"])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(seed)
    model = task.build_model(cfg.model)
    model.eval()
    return cfg, task, model


def bart_hub(data):
    from fairseq.models.bart.hub_interface import BARTHubInterface

    hub = BARTHubInterface(*build([data, "--task", "translation", "--arch", "bart_base"] + TINY))
    hub.bpe = IdentityBPE()
    return hub


def lm_hub(data, work):
    import shutil

    from fairseq.hub_utils import GeneratorHubInterface

    os.makedirs(work, exist_ok=True)
    shutil.copy(os.path.join(data, "dict.src.txt"), os.path.join(work, "dict.txt"))
    cfg, task, model = build([work, "--task", "language_modeling", "--arch", "transformer_lm"] + LM_TINY)
    return GeneratorHubInterface(cfg, task, [model])


def _plain(value):
    import torch

    if torch.is_tensor(value):
        return [str(value.dtype), value.tolist()]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def calls(bart, lm):
    """{name: call} of each public method with a legitimate input, in this order (one beam size throughout:
    fairseq's BART keeps per-beam state between calls)."""
    enc = bart.encode("w11 w12 w13")
    lm_enc = lm.encode("w11 w12")
    return {  # (the features first: after a beam search, fairseq's BART model keeps its beam's state)
        "bart.extract_features": lambda: bart.extract_features(enc),
        "bart.extract_features 2-D": lambda: bart.extract_features(enc[None]),
        "bart.register_classification_head": lambda: bart.register_classification_head("head", num_classes=3),
        "bart.predict": lambda: bart.predict("head", enc),
        "bart.encode": lambda: bart.encode("w11 w12"),
        "bart.encode pair": lambda: bart.encode("w11", "w12", no_separator=False),
        "bart.decode": lambda: bart.decode(enc),
        "bart.generate": lambda: bart.generate([enc, bart.encode("w14")], beam=2),
        "bart.sample": lambda: bart.sample(["w11 w12", "w13"], beam=2),
        "bart.sample str": lambda: bart.sample("w11 w12", beam=2),
        "bart.translate": lambda: bart.translate(["w11 w12"], beam=2),
        "bart.fill_mask": lambda: bart.fill_mask(["w11 <mask> w13"], topk=2),
        "bart.string": lambda: bart.string(enc),
        "bart.tokenize": lambda: bart.tokenize("w11 w12"),
        "bart.apply_bpe": lambda: bart.apply_bpe("w11 w12"),
        "lm.encode": lambda: lm_enc,
        "lm.score": lambda: lm.score("w11 w12"),
        "lm.score list": lambda: lm.score(["w11 w12", "w13"]),
        "lm.sample": lambda: lm.sample("w11 w12", beam=1, max_len_b=4),
        "lm.generate": lambda: lm.generate([lm_enc], beam=2, max_len_b=3),
        "lm.decode": lambda: lm.decode(lm_enc),
        "lm.string": lambda: lm.string(lm_enc),
        "lm.binarize": lambda: lm.binarize("w11 w12"),
    }


def main(mode, data, out):
    import numpy
    import torch

    if not hasattr(numpy, "compat"):  # numpy 2 removed what fairseq's TokenBlockDataset reads (not the hub's)
        import types

        numpy.compat = types.SimpleNamespace(long=numpy.int64)
    if mode == "plugin":
        import fairseq_wean  # noqa: F401
    torch.set_num_threads(1)
    results = {}
    for name, call in calls(bart_hub(data), lm_hub(data, out + ".lm")).items():
        try:
            results[name] = _plain(call())
        except Exception as error:  # noqa: BLE001 - written for the test to compare
            results[name] = "{}: {}".format(type(error).__name__, error)
    with open(out, "w") as f:
        json.dump(results, f, sort_keys=True)


def run(mode, data, out):
    proc = subprocess.run([sys.executable, __file__, mode, str(data), str(out)], capture_output=True, text=True,
                          cwd=REPO, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=REPO))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def both(data_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("hub-subclasses")
    return run("plain", data_bin, work / "plain.json"), run("plugin", data_bin, work / "plugin.json")


def test_fairseqs_hub_classes_give_what_they_give_without_the_plugin(both):
    plain, plugin = both
    import fairseq_wean  # noqa: F401 - the names below, as the script has them

    assert sorted(plugin) == sorted(plain)
    failed = {name: value for name, value in plain.items() if isinstance(value, str) and ": " in value
              and name not in ("bart.string", "bart.tokenize", "bart.apply_bpe", "lm.encode")}
    assert not failed, failed  # every call works without the plugin
    for name in plain:
        if name in DECODING and plugin[name] != plain[name]:
            assert _shape(plugin[name]) == _shape(plain[name]), (name, plugin[name], plain[name])
            continue
        assert plugin[name] == plain[name], (name, plugin[name], plain[name])
    # the plugin's decoding differs where fairseq's beam search generated <s> (the plugin bans it: compat 11)
    bos = [t for hypos in plain["bart.generate"] for hypo in hypos for t in hypo["tokens"][1][1:]].count(0)
    assert plugin["bart.generate"] == plain["bart.generate"] or bos, plain["bart.generate"]


# the calls that decode with fairseq's beam search: the plugin's SequenceGenerator never generates <s> (fairseq's
# does, and a tiny random BART does): compared by their shape (how many outputs, hypotheses, of which types)
DECODING = ("bart.generate", "bart.sample", "bart.sample str", "bart.translate", "bart.fill_mask")


def _shape(value):
    if isinstance(value, list) and value and isinstance(value[0], str) and value[0].startswith("torch."):
        return value[0]  # a tensor: its dtype
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return type(value).__name__


def test_every_hub_class_of_fairseq_is_checked_or_left_alone():
    """A hub class fairseq adds fails here until hub_inputs names its inputs (or leaves it alone): every public
    method of a checked class (its own and its bases') is in its table and wrapped."""
    import fairseq.models  # noqa: F401 - imports every model's hub class
    import fairseq_wean  # noqa: F401
    from fairseq.hub_utils import GeneratorHubInterface
    from fairseq.models.roberta.hub_interface import RobertaHubInterface

    from fairseq_wean.hub_inputs import UNCHECKED, hub_classes, public_methods
    from fairseq_wean.patching import MARK

    def subclasses(cls):
        return [cls] + [c for sub in cls.__subclasses__() for c in subclasses(sub)]

    checked = hub_classes()
    fairseqs = [c for c in subclasses(GeneratorHubInterface) if c.__module__.startswith("fairseq.")]
    assert {c.__name__ for c in fairseqs} >= {"GeneratorHubInterface", "BARTHubInterface"}
    for cls in fairseqs:
        assert (cls in checked) != (cls.__name__ in UNCHECKED), cls
        if cls not in checked:
            continue
        names = {n for c in cls.__mro__ if issubclass(c, GeneratorHubInterface) for n in public_methods(c)}
        assert names == set(checked[cls]), (cls, names ^ set(checked[cls]))
        for name in names:
            assert "fairseq_wean.hub_inputs." + name in getattr(getattr(cls, name), MARK, ()), (cls, name)
    assert not issubclass(RobertaHubInterface, GeneratorHubInterface)
    for name in public_methods(RobertaHubInterface):
        assert not getattr(getattr(RobertaHubInterface, name), MARK, ()), name  # not touched


@pytest.fixture(scope="module")
def bart(data_bin):
    import fairseq_wean  # noqa: F401

    hub = bart_hub(str(data_bin))
    hub.register_classification_head("head", num_classes=3)
    return hub


def _float(bart):
    import torch

    return torch.tensor([0.5, 2.0])


BART_INPUTS = {  # BART's own methods and overrides: (method, args, what the line says)
    "encode None": ("encode", lambda b: (None,), "hub encode(): its input is NoneType"),
    "encode bytes": ("encode", lambda b: (b"w11",), "(bytes: decode them first"),
    "encode empty": ("encode", lambda b: ("",), "is empty (no word"),
    "encode second sentence not a str": ("encode", lambda b: ("w11", 5), "hub encode(): its input is int"),
    "decode float": ("decode", lambda b: (_float(b),), "hub decode(): its input is a 1-D torch.float32 tensor"),
    "decode empty": ("decode", lambda b: (b.encode("w11")[:0],), "hub decode(): its input is an empty tensor"),
    "decode 2-D": ("decode", lambda b: (b.encode("w11")[None],), "hub decode(): its input is a 2-D"),
    "generate list of str": ("generate", lambda b: (["w11 w12"],), "tokenized_sentences[0] is str"),
    "generate uint8": ("generate", lambda b: ([b.encode("w11").byte()],), "is a 1-D torch.uint8 tensor"),
    "fill_mask no mask": ("fill_mask", lambda b: (["w11 w12"],), "sentences[0] 'w11 w12' holds no '<mask>'"),
    "fill_mask str": ("fill_mask", lambda b: ("w11 <mask>",), "hub fill_mask(): its input is str"),
    "fill_mask invisible": ("fill_mask", lambda b: (["\u200b"],), "is empty (no word"),
    "extract_features float": ("extract_features", lambda b: (_float(b),), "is a 1-D torch.float32 tensor"),
    "extract_features id": ("extract_features", lambda b: (b.encode("w11") * 0 + 99999,), "holds id 99999"),
    "predict no head": ("predict", lambda b: ("nohead", b.encode("w11")), "no classification head 'nohead'"),
    "predict float": ("predict", lambda b: ("head", _float(b)), "is a 1-D torch.float32 tensor"),
    "register head 5": ("register_classification_head", lambda b: (5,), "its input is int"),
    "sample skip": ("sample", lambda b: (["w11"], 2), "keyword skip_invalid_size_inputs=True",
                    {"skip_invalid_size_inputs": True}),
}


@pytest.mark.parametrize("case", sorted(BART_INPUTS))
def test_barts_own_methods_refuse_what_they_cannot_take_in_one_line(bart, case):
    from fairseq_wean.errors import FairseqWeanError

    method, args, says, *kwargs = BART_INPUTS[case]
    with pytest.raises(FairseqWeanError) as info:
        getattr(bart, method)(*args(bart), **(kwargs[0] if kwargs else {}))
    assert "\n" not in str(info.value) and says in str(info.value), str(info.value)


def test_barts_decoding_methods_work_with_the_plugin(bart):
    """In this process (the plugin imported): BART's generate, sample and fill_mask (which hand fairseq's base class
    a 2-D batch inside) decode."""
    enc = bart.encode("w11 w12")
    assert len(bart.generate([enc, bart.encode("w13")], beam=2)) == 2
    assert len(bart.sample(["w11 w12", "w13"], beam=2)) == 2
    assert len(bart.fill_mask(["w11 <mask> w13"], topk=2)[0]) == 2


if __name__ == "__main__":
    main(*sys.argv[1:])
