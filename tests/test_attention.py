"""The additive ('concat') score in blocks: values and gradients against the whole-tensor formula,
the blocks' cover, what the forward keeps for backward, and the sigmoid form of tanh."""
import itertools

import pytest
import torch

from fairseq_wean.modules import attention
from fairseq_wean.modules.attention import AdditiveScore, ScoreFunction, additive_score, tanh_


def whole_tensor_score(query, keys, v):
    """The reference: the B x Tq x S x H tensor built whole, torch's tanh, autograd's gradients."""
    k = keys.unsqueeze(0).unsqueeze(0) if keys.dim() == 2 else keys.unsqueeze(1)
    return (query.unsqueeze(2) + k).tanh().matmul(v)


def inputs(shared, dtype=torch.float64, bsz=3, tq=5, src=6, hidden=4):
    gen = torch.Generator().manual_seed(1)
    query = torch.randn(bsz, tq, hidden, generator=gen, dtype=dtype).requires_grad_()
    keys = torch.randn(*((src, hidden) if shared else (bsz, src, hidden)), generator=gen, dtype=dtype).requires_grad_()
    v = torch.randn(hidden, generator=gen, dtype=dtype).requires_grad_()
    grad = torch.randn(bsz, tq, src, generator=gen, dtype=dtype)
    return query, keys, v, grad


# 1: one query's single row at a time (S*H > block); 7: parts of a sentence's queries; 40: a
# whole sentence and part of the next; the default: the whole batch in one block
@pytest.mark.parametrize("block", [1, 7, 40, 24, attention.ADDITIVE_BLOCK_ELEMENTS])
@pytest.mark.parametrize("shared", [False, True], ids=["per-sentence-keys", "shared-keys"])
def test_the_blocked_score_equals_the_whole_tensor_formula_in_values_and_gradients(monkeypatch, block, shared):
    monkeypatch.setattr(attention, "ADDITIVE_BLOCK_ELEMENTS", block)
    query, keys, v, grad = inputs(shared)
    scores = additive_score(query, keys, v)
    expected = whole_tensor_score(query, keys, v)
    torch.testing.assert_close(scores, expected, rtol=0, atol=1e-12)
    got = torch.autograd.grad(scores, (query, keys, v), grad)
    want = torch.autograd.grad(expected, (query, keys, v), grad)
    for name, a, b in zip(("query", "keys", "v"), got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12, msg=lambda m, name=name: name + ": " + m)
    assert torch.autograd.gradcheck(additive_score, (query, keys, v))


NAMES = ("query", "keys", "v")


@pytest.mark.parametrize("shared", [False, True], ids=["per-sentence-keys", "shared-keys"])
@pytest.mark.parametrize("needs", [n for n in itertools.product([False, True], repeat=3) if any(n)],
                         ids=lambda n: "+".join(name for name, need in zip(NAMES, n) if need))
def test_every_gradient_route_gets_its_gradient_and_only_it(monkeypatch, needs, shared):
    """Each subset of (query, keys, v) requiring grad: exactly those get a gradient, each the
    whole-tensor formula's (a backward that computed one gradient under another's flag fails)."""
    monkeypatch.setattr(attention, "ADDITIVE_BLOCK_ELEMENTS", 7)
    tensors = [t.detach().requires_grad_(need) for t, need in zip(inputs(shared)[:3], needs)]
    grad = inputs(shared)[3]
    wanted = [t for t in tensors if t.requires_grad]
    got = torch.autograd.grad(additive_score(*tensors), wanted, grad)
    want = torch.autograd.grad(whole_tensor_score(*tensors), wanted, grad)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    out = additive_score(*tensors)
    out.backward(grad)
    for t, need in zip(tensors, needs):
        assert (t.grad is not None) == need


def relative_error(got, reference):
    return float((got.double() - reference).norm() / reference.norm())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("blocks", ["one-query-per-block", "16-blocks", "96-blocks"])
@pytest.mark.parametrize("shared", [True, False], ids=["shared-keys", "per-sentence-keys"])
def test_low_precision_gradients_are_within_the_whole_tensor_formulas_error(monkeypatch, dtype, blocks, shared):
    """bfloat16 / float16 inputs (CPU autocast, --fp16 / --amp on a GPU): the blocked gradients'
    error against float64 is at most the whole-tensor formula's own in that dtype (x1.5), however
    many blocks are summed (they accumulate in float32, cast once)."""
    try:
        torch.zeros(1, dtype=dtype).tanh()
    except RuntimeError:  # torch 1.13 has no float16 tanh on the CPU
        pytest.skip("this torch ({}) computes no {} tanh on the CPU".format(torch.__version__, dtype))
    bsz, tq, src, hidden = 4, 24, 200, 32
    per_query = src * hidden
    block = {"one-query-per-block": per_query, "16-blocks": bsz * tq * per_query // 16,
             "96-blocks": per_query}[blocks]
    if blocks == "96-blocks":
        assert bsz * tq == 96
    monkeypatch.setattr(attention, "ADDITIVE_BLOCK_ELEMENTS", block)
    query, keys, v, grad = inputs(shared, dtype=torch.float64, bsz=bsz, tq=tq, src=src, hidden=hidden)
    low = [t.detach().to(dtype).requires_grad_() for t in (query, keys, v)]
    exact = [t.detach().double().requires_grad_() for t in low]  # the same values, in float64
    g_low = grad.to(dtype)
    reference = torch.autograd.grad(whole_tensor_score(*exact), exact, g_low.double())
    blocked = torch.autograd.grad(additive_score(*low), low, g_low)
    whole = torch.autograd.grad(whole_tensor_score(*low), low, g_low)
    for name, b, w, r in zip(NAMES, blocked, whole, reference):
        assert b.dtype == dtype
        err_blocked, err_whole = relative_error(b, r), relative_error(w, r)
        assert err_blocked <= 1.5 * err_whole + 1e-3, (name, err_blocked, err_whole)


@pytest.mark.parametrize("shared", [False, True], ids=["per-sentence-keys", "shared-keys"])
def test_second_derivatives_are_correct(monkeypatch, shared):
    """create_graph=True (gradient penalties): the gradient has a graph and its derivatives are
    right (gradgradcheck), through blocks too."""
    monkeypatch.setattr(attention, "ADDITIVE_BLOCK_ELEMENTS", 7)
    query, keys, v, grad = inputs(shared)
    first = torch.autograd.grad(additive_score(query, keys, v), (query, keys, v), grad, create_graph=True)
    assert all(g.requires_grad and g.grad_fn is not None for g in first)
    want = torch.autograd.grad(whole_tensor_score(query, keys, v), (query, keys, v), grad, create_graph=True)
    second = torch.autograd.grad(sum((g * g).sum() for g in first), (query, keys, v))
    second_want = torch.autograd.grad(sum((g * g).sum() for g in want), (query, keys, v))
    torch.testing.assert_close(second, second_want, rtol=0, atol=1e-10)
    small = [t.detach()[:2, :3].clone().requires_grad_() if t.dim() == 3 else t.detach().clone().requires_grad_()
             for t in (query, keys, v)]
    if not shared:
        small[1] = keys.detach()[:2].clone().requires_grad_()
    assert torch.autograd.gradgradcheck(additive_score, tuple(small))


@pytest.mark.parametrize("block", [1, 7, 24, 40, 1000])
@pytest.mark.parametrize("shape", [(3, 5, 6, 4), (1, 1, 1, 1), (4, 2, 9, 3)])
def test_the_blocks_cover_every_query_once_and_stay_within_the_limit(monkeypatch, block, shape):
    monkeypatch.setattr(attention, "ADDITIVE_BLOCK_ELEMENTS", block)
    bsz, tq, src, hidden = shape
    query, keys = torch.zeros(bsz, tq, hidden), torch.zeros(bsz, src, hidden)
    seen = torch.zeros(bsz, tq, dtype=torch.long)
    blocks, buffer = attention._blocks(query, keys)
    sizes = []
    for rows, cols in blocks:
        seen[rows, cols] += 1
        sizes.append(seen[rows, cols].numel() * src * hidden)
        assert sizes[-1] <= max(block, src * hidden)  # one query's S x H when that alone is larger
    assert seen.eq(1).all()
    assert buffer.numel() == max(sizes)  # the buffer holds the largest block, and no more


def test_the_forward_keeps_only_its_inputs_for_backward():
    """The point of the blocks: no B x Tq x S x H tensor is kept between forward and backward."""
    query, keys, v, _ = inputs(False, dtype=torch.float32, bsz=4, tq=6, src=7, hidden=8)
    saved = []

    def pack(tensor):
        saved.append(tensor.numel())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        additive_score(query, keys, v).sum().backward()
    assert sum(saved) <= query.numel() + keys.numel() + v.numel()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        whole_tensor_score(query, keys, v).sum()  # the control: the whole formula keeps B x Tq x S x H
    assert max(saved) >= 4 * 6 * 7 * 8


def test_score_function_concat_is_the_blocked_score():
    torch.manual_seed(0)
    score = ScoreFunction(5, 6, "concat", hidden_dim=4)
    query, keys = torch.randn(2, 3, 5), torch.randn(2, 7, 6)
    expected = whole_tensor_score(score.query_proj(query), score.key_proj(keys), score.v)
    torch.testing.assert_close(score(query, keys), expected, rtol=0, atol=1e-6)
    assert isinstance(score(query, keys).grad_fn, AdditiveScore._backward_cls)
    vocab = torch.randn(9, 6)  # keys shared by the batch (WEAN's candidate embeddings)
    expected = whole_tensor_score(score.query_proj(query), score.key_proj(vocab), score.v)
    torch.testing.assert_close(score(query, vocab), expected, rtol=0, atol=1e-6)


def test_tanh_in_float32_is_within_1_8e_7_of_torch_tanh():
    x = torch.cat([torch.linspace(-12, 12, 2_000_001), torch.logspace(-30, 1.5, 100_001),
                   -torch.logspace(-30, 1.5, 100_001), torch.tensor([0.0, 1e30, -1e30, 3e38, -3e38])])
    assert (tanh_(x.clone()) - torch.tanh(x)).abs().max() <= 1.8e-7
    special = torch.tensor([float("inf"), -float("inf"), float("nan")])
    assert torch.equal(tanh_(special.clone())[:2], torch.tensor([1.0, -1.0]))
    assert tanh_(special.clone())[2].isnan()
    x64 = torch.linspace(-12, 12, 100_001, dtype=torch.float64)
    assert (tanh_(x64.clone()) - torch.tanh(x64)).abs().max() <= 1e-15


def test_tanh_in_bfloat16_is_torch_tanh():
    x = torch.linspace(-4, 4, 1001).to(torch.bfloat16)
    assert torch.equal(tanh_(x.clone()), torch.tanh(x))
