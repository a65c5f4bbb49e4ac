"""fairseq's ``--retain-dropout`` (and ``--retain-dropout-modules``) act on the plugin's models as on
fairseq's own ``lstm``.

fairseq's ``prepare_for_inference_`` turns dropout on at inference for ``FairseqDropout`` modules
only (``make_generation_fast_``); a model built on ``nn.Dropout`` or ``F.dropout(..., self.training)``
ignores the option and decodes exactly as without it. Every dropout of the plugin's models is made
by ``layers.Dropout`` (a ``FairseqDropout`` named after the encoder or decoder class that owns it):

* a scan of the source of ``fairseq_wean/models`` and ``fairseq_wean/modules`` finds every other
  dropout (torch's modules and functions, a ``FairseqDropout`` built without the helper): a new one
  fails here; the one exception is :class:`layers.GRU`'s unpacked twin of ``nn.GRU``'s own
  between-layer dropout, which fairseq's ``lstm`` leaves to torch too (off at inference);
* in every model variant every dropout module is such a ``FairseqDropout``;
* for each model, a beam search after ``prepare_for_inference_`` with ``retain_dropout`` differs
  from the one without, equals itself under a seed, and ``retain_dropout_modules`` keeps exactly the
  named classes' dropout (a name nothing has: the plain decode).

Training is unchanged by the switch (the same ``F.dropout`` call and random numbers as
``nn.Dropout``): tests/test_dropout.py checks every site acts in training only.
"""
import ast
import copy
import pathlib
import types

import pytest
import torch
from fairseq.models import FairseqDecoder, FairseqEncoder
from fairseq.modules import FairseqDropout
from fairseq.sequence_generator import SequenceGenerator

from conftest import make_dictionary, random_batch
from test_decoder_state import MODELS, STATE_VARIANTS, build_variant
from test_numerics import N_WORDS, one_thread  # noqa: F401  (one_thread: autouse fixture)

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "fairseq_wean"
SCANNED = sorted((PACKAGE / "models").glob("*.py")) + sorted((PACKAGE / "modules").glob("*.py"))
# (file, enclosing function): dropout that is allowed not to go through layers.Dropout, and why
ALLOWED = {
    ("modules/layers.py", "Dropout"): "the helper itself",
    ("modules/layers.py", "GRU._forward_right_padded"): "nn.GRU's between-layer dropout, unpacked: off at "
                                                         "inference as torch's (fairseq's lstm: the same)",
}
TORCH_NAMES = {"nn", "F", "torch", "functional"}


def dropout_references(path):
    """[(enclosing function, source text)] of every reference to a dropout other than the helper's
    name ``Dropout`` imported from layers: ``nn.Dropout``, ``F.dropout``, ``torch.dropout``,
    ``FairseqDropout``, a dropout class or function imported from torch, ..."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    imported_from_torch = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("torch", "fairseq"):
            imported_from_torch.update(a.asname or a.name for a in node.names if "dropout" in a.name.lower())

    def visit(node, scope):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = scope + [node.name]
        if isinstance(node, ast.Attribute) and "dropout" in node.attr.lower():
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in TORCH_NAMES | {"fairseq"}:
                found.append((".".join(scope), ast.unparse(node)))
        if isinstance(node, ast.Name) and node.id in imported_from_torch:
            found.append((".".join(scope), node.id))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, [])
    return found


def unrouted_dropouts():
    """Every dropout reference in the models' source outside ALLOWED, as 'file:function: text'."""
    bad = []
    for path in SCANNED:
        rel = path.relative_to(PACKAGE).as_posix()
        for scope, text in dropout_references(path):
            if (rel, scope) not in ALLOWED:
                bad.append("{}:{}: {}".format(rel, scope or "<module>", text))
    return bad


def test_the_scan_sees_every_form_of_dropout(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        "from torch.nn import Dropout as D\nfrom fairseq.modules import FairseqDropout\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n        self.a = nn.Dropout(0.1)\n        self.b = D(0.1)\n"
        "        self.c = FairseqDropout(0.1)\n        self.d = torch.nn.AlphaDropout(0.1)\n"
        "    def forward(self, x):\n        x = F.dropout(x, 0.1, self.training)\n"
        "        return torch.dropout(x, 0.1, self.training) + nn.functional.dropout2d(x)\n")
    texts = sorted(text for _, text in dropout_references(planted))
    assert texts == sorted(["nn.Dropout", "D", "FairseqDropout", "torch.nn.AlphaDropout",
                            "F.dropout", "torch.dropout", "nn.functional.dropout2d"])


def test_every_dropout_of_the_models_goes_through_layers_dropout():
    assert len(SCANNED) >= 10
    assert unrouted_dropouts() == []
    for (rel, scope) in ALLOWED:  # an exception that no longer exists is removed from ALLOWED
        assert any(s == scope for s, _ in dropout_references(PACKAGE / rel)), (rel, scope)


def owner_class(model, name):
    """The class name of the nearest encoder or decoder holding the module ``name``."""
    owner, parts = None, name.split(".")
    for i in range(len(parts)):
        module = model.get_submodule(".".join(parts[:i])) if i else model
        if isinstance(module, (FairseqEncoder, FairseqDecoder)):
            owner = type(module).__name__
    return owner


@pytest.mark.parametrize("variant", sorted(STATE_VARIANTS))
def test_every_dropout_module_is_a_named_fairseq_dropout(variant, tmp_path):
    model = build_variant(variant, make_dictionary(N_WORDS), tmp_path)
    named = []
    for name, module in model.named_modules():
        if "dropout" in type(module).__name__.lower():
            assert type(module) is FairseqDropout, (name, type(module))
            assert module.module_name == owner_class(model, name) is not None, name
            named.append(name)
    assert named


DECODE_VARIANTS = ["{}-layers2".format(m) for m in MODELS]


def decode(model, src, lengths, dictionary, seed, **generation):
    """fairseq-generate's preparation (``prepare_for_inference_``) and a beam search of 2: each
    hypothesis's positional scores, concatenated."""
    model = copy.deepcopy(model)
    cfg = types.SimpleNamespace(generation=types.SimpleNamespace(
        beam=2, no_beamable_mm=False, print_alignment=False, retain_dropout=False, retain_dropout_modules=None))
    vars(cfg.generation).update(generation)
    model.prepare_for_inference_(cfg)
    model.eval()
    generator = SequenceGenerator([model], dictionary, beam_size=2, max_len_b=6)
    torch.manual_seed(seed)
    with torch.no_grad():
        hypos = generator.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
    return torch.cat([h["positional_scores"] for sentence in hypos for h in sentence])


def differs(a, b):
    return a.shape != b.shape or not torch.allclose(a, b)


@pytest.mark.parametrize("variant", DECODE_VARIANTS)
def test_retain_dropout_changes_the_decode_as_for_fairseqs_lstm(variant, tmp_path):
    dictionary = make_dictionary(N_WORDS)
    model = build_variant(variant, dictionary, tmp_path)
    for module in model.modules():
        if isinstance(module, FairseqDropout):
            module.p = 0.5
    src, lengths, _, _ = random_batch(dictionary, bsz=3, src_len=6, tgt_len=4)
    plain = decode(model, src, lengths, dictionary, seed=1)
    assert torch.equal(decode(model, src, lengths, dictionary, seed=2), plain)  # no randomness without it
    kept = decode(model, src, lengths, dictionary, seed=1, retain_dropout=True)
    assert differs(kept, plain)
    assert torch.equal(decode(model, src, lengths, dictionary, seed=1, retain_dropout=True), kept)
    encoder, decoder = type(model.encoder).__name__, type(model.decoder).__name__
    both = decode(model, src, lengths, dictionary, seed=1, retain_dropout=True, retain_dropout_modules=[encoder, decoder])
    assert torch.equal(both, kept)
    nothing = decode(model, src, lengths, dictionary, seed=1, retain_dropout=True, retain_dropout_modules=["NoSuchModule"])
    assert torch.equal(nothing, plain)
    for only in (encoder, decoder):
        one = decode(model, src, lengths, dictionary, seed=1, retain_dropout=True, retain_dropout_modules=[only])
        assert differs(one, plain) and differs(one, kept), only
