"""Score functions and masked attention, shared by all three models.

One ``ScoreFunction`` implements the three forms of Luong et al. (2015) that WEAN
(Ma et al. 2018) uses twice: for the attention g(s_t, h_i) (WEAN eq. 2) and for the
word generator f(q_t, e_i) (WEAN eq. 5)::

    dot:     q^T k
    general: q^T W_a k
    concat:  v^T tanh(W_q q + W_k k)     (Bahdanau's additive score)

The additive form is also the attention of RNNsearch, of CoRe (Cao et al. 2017, eq. 5-6)
and of the word attention of Wu et al. (e^beta_ij = v_b^T tanh(W_b s_{i-1} + U_b x_j)).

Papers: Luong, Pham and Manning, "Effective Approaches to Attention-based Neural Machine
Translation" (EMNLP 2015, ACL Anthology D15-1166, arXiv:1508.04025); Bahdanau, Cho
and Bengio, "Neural Machine Translation by Jointly Learning to Align and Translate" (ICLR 2015,
arXiv:1409.0473), RNNsearch. WEAN, CoRe and Word Attention are cited in full in their model files
(:mod:`fairseq_wean.models.wean_lstm`, :mod:`~fairseq_wean.models.core_copy`,
:mod:`~fairseq_wean.models.word_attn_gated`).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from fairseq_wean.modules.layers import Linear
from fairseq_wean.modules.model_options import check_value

SCORE_CHOICES = ("dot", "general", "concat")


class ScoreFunction(nn.Module):
    """f(q, k) for every query against every key.

    Keys are either per sentence (``B x S x Dk``: attention over source positions) or
    shared by the batch (``N x Dk``: WEAN's candidate word embeddings). Queries are
    ``B x Tq x Dq``. The result is ``B x Tq x S`` (or ``B x Tq x N``).

    Parameter count (WEAN Table 5 accounting, with Dq = Dk = k): dot 0, general k*k,
    concat 2*k*k + k (``hidden_dim`` defaults to k). No biases, as in eq. 5.
    """

    def __init__(self, query_dim, key_dim, kind="general", hidden_dim=None):
        super().__init__()
        check_value(kind, SCORE_CHOICES, "score function")
        self.kind = kind
        if kind == "dot":
            if query_dim != key_dim:
                raise ValueError(
                    "the 'dot' score needs query and key of the same size, got {} and {}".format(
                        query_dim, key_dim
                    )
                )
        elif kind == "general":
            # q^T W_a k == (W_a^T q)^T k: transform the query side, which is the cheap side
            # when the keys are a whole vocabulary.
            self.query_to_key = Linear(query_dim, key_dim, bias=False)
        else:
            hidden_dim = hidden_dim or key_dim
            self.query_proj = Linear(query_dim, hidden_dim, bias=False)  # W_q
            self.key_proj = Linear(key_dim, hidden_dim, bias=False)  # W_k
            self.v = nn.Parameter(torch.empty(hidden_dim).uniform_(-0.1, 0.1))

    def project_keys(self, keys):
        """The key side of the score that does not depend on the query: W_k k for 'concat'.

        A decoder computes it once per sentence and passes it to every step as
        ``projected_keys`` (for dot / general the keys are used as they are).
        """
        return self.key_proj(keys) if self.kind == "concat" else keys

    def query_weight(self):
        """The matrix that projects the query (W_q of 'concat', W_a^T of 'general'; None for 'dot'):
        a decoder that multiplies its state by several matrices stacks it with the others and
        passes the product as ``projected_query``."""
        if self.kind == "dot":
            return None
        return self.query_layer().weight

    def query_layer(self):
        return self.query_to_key if self.kind == "general" else self.query_proj

    def forward(self, query, keys, projected_keys=None, projected_query=None):
        """query: B x Tq x Dq; keys: B x S x Dk or N x Dk. Returns B x Tq x S (or N).

        ``projected_keys``: ``project_keys(keys)`` computed beforehand (then ``keys`` may be None).
        ``projected_query``: ``query`` times :meth:`query_weight`, computed beforehand (then
        ``query`` may be None).
        """
        if projected_keys is not None:
            keys = projected_keys
        elif self.kind == "concat":
            keys = self.key_proj(keys)
        shared = keys.dim() == 2
        if projected_query is None and self.kind != "dot":
            projected_query = self.query_layer()(query)
        if self.kind in ("dot", "general"):
            q = query if self.kind == "dot" else projected_query
            if shared:
                return F.linear(q, keys)
            return torch.bmm(q, keys.transpose(1, 2))
        # concat: v^T tanh(q_t + k_s) for every pair, in blocks (additive_score)
        return additive_score(projected_query, keys, self.v)


# Elements of one block of tanh(q_t + k_s) (B' x T' x S x H): 4 MiB in float32. Small enough to be
# reused from the allocator's heap and to stay in the cache; large enough that the Python loop
# over the blocks costs nothing measurable.
ADDITIVE_BLOCK_ELEMENTS = 1 << 20


def additive_score(query, keys, v):
    """v^T tanh(q_t + k_s) for every query t and key s: the 'concat' score, keys already projected.

    query: B x Tq x H; keys: B x S x H (per sentence) or S x H (shared by the batch); v: H.
    Returns B x Tq x S: ``(query.unsqueeze(2) + keys.unsqueeze(1)).tanh().matmul(v)`` (with
    :func:`tanh_`'s rounding), computed in blocks of at most ``ADDITIVE_BLOCK_ELEMENTS`` elements
    of the B x Tq x S x H tensor, which is never built whole (:class:`AdditiveScore`).
    """
    return AdditiveScore.apply(query, keys, v)


def _blocks(query, keys):
    """The (batch slice, query slice) pairs covering B x Tq, each block at most
    ``ADDITIVE_BLOCK_ELEMENTS`` elements of the B x Tq x S x H tensor (at least one query), and a
    buffer for the largest block (uninitialised, the dtype of q + k)."""
    bsz, tq, hidden = query.shape
    per_query = max(1, keys.size(-2) * hidden)
    queries = max(1, ADDITIVE_BLOCK_ELEMENTS // per_query)
    if queries >= tq:  # whole sentences per block
        step = max(1, queries // max(tq, 1))
        blocks = [(slice(b, b + step), slice(0, tq)) for b in range(0, bsz, step)]
        largest = min(step, bsz) * tq * per_query
    else:
        blocks = [(slice(b, b + 1), slice(t, t + queries)) for b in range(bsz) for t in range(0, tq, queries)]
        largest = queries * per_query
    buffer = query.new_empty(max(1, largest), dtype=torch.result_type(query, keys))
    return blocks, buffer


def _tanh_block(query, keys, rows, cols, buffer):
    """tanh(q_t + k_s) of one block, B' x T' x 1 x H + B' x 1 x S x H, written into ``buffer``."""
    q = query[rows, cols].unsqueeze(2)
    k = keys.unsqueeze(0).unsqueeze(0) if keys.dim() == 2 else keys[rows].unsqueeze(1)
    shape = (q.size(0), q.size(1), k.size(2), q.size(3))
    n = shape[0] * shape[1] * shape[2] * shape[3]
    return tanh_(torch.add(q, k, out=buffer[:n].view(shape)))


def tanh_(x):
    """tanh in place. In float32 and float64 as 2 sigmoid(2x) - 1, the same function, faster than
    ``torch.tanh`` on the CPU (``python -m bench.additive_parts``; docs/results/performance.md); within 1.8e-7 of
    ``torch.tanh`` in float32 (an absolute error, 1.5 ulp of 1; tests/test_attention.py). Other
    dtypes (bfloat16 under --cpu-bf16, float16), where 2 sigmoid(2x) - 1 would lose the small
    values: ``tanh_``."""
    if x.dtype in (torch.float32, torch.float64):
        return torch.sigmoid(x.mul_(2), out=x).mul_(2).sub_(1)
    return x.tanh_()


class AdditiveScore(torch.autograd.Function):
    """The 'concat' score in blocks, without keeping the B x Tq x S x H tensor for backward.

    Built whole (``(q + k).tanh().matmul(v)`` under autograd), the tensor and the gradients of it
    are three fresh B x Tq x S x H tensors per training step, each paged in by the kernel anew.
    Here each block lives in one reused buffer: the forward keeps only q, k and v, and the backward
    recomputes tanh per block (``python -m bench.additive_parts`` measures both ways; numbers in
    docs/results/performance.md). Sums over blocks are float32 at least (bfloat16 / float16 inputs), cast once
    at the end; a second derivative (``create_graph=True``) goes through the whole-tensor formula.
    Gradients, with t = tanh(q_t + k_s) and g the incoming gradient (B x Tq x S):

        d/dq_t = v * sum_s g_ts (1 - t^2),  d/dk_s = v * sum_t g_ts (1 - t^2),  d/dv = sum g_ts t
    """

    @staticmethod
    def forward(ctx, query, keys, v):
        ctx.save_for_backward(query, keys, v)
        blocks, buffer = _blocks(query, keys)
        scores = None
        for rows, cols in blocks:
            block = _tanh_block(query, keys, rows, cols, buffer).matmul(v)
            if scores is None:
                scores = block.new_empty(query.size(0), query.size(1), keys.size(-2))
            scores[rows, cols] = block
        if scores is None:  # an empty batch
            scores = query.new_empty(query.size(0), query.size(1), keys.size(-2))
        return scores

    @staticmethod
    def backward(ctx, grad):
        query, keys, v = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a second derivative is asked for
            return _additive_score_backward_differentiable(ctx, query, keys, v, grad)
        need_query, need_keys, need_v = ctx.needs_input_grad[:3]
        blocks, buffer = _blocks(query, keys)
        dtype = buffer.dtype
        # sums over blocks in float32 at least (bfloat16 / float16 under autocast), cast once at the end
        acc = torch.promote_types(dtype, torch.float32)
        grad_query = torch.zeros_like(query, dtype=acc) if need_query else None
        grad_keys = torch.zeros_like(keys, dtype=acc) if need_keys else None
        grad_v = torch.zeros(v.size(0), dtype=acc, device=v.device) if need_v else None
        for rows, cols in blocks:
            t = _tanh_block(query, keys, rows, cols, buffer)  # B' x T' x S x H
            g = grad[rows, cols].to(dtype)  # B' x T' x S
            if need_v:
                grad_v += g.reshape(1, -1).matmul(t.reshape(-1, t.size(-1))).squeeze(0).to(acc)
            d = t.mul_(t).sub_(1).mul_(g.unsqueeze(-1))  # -(1 - t^2) g, in t's place
            if need_query:
                grad_query[rows, cols] = d.sum(2, dtype=acc)
            if need_keys:
                if keys.dim() == 2:
                    grad_keys += d.sum((0, 1), dtype=acc)
                else:
                    grad_keys[rows] += d.sum(1, dtype=acc)
        v_neg = -v.to(acc)
        return (
            grad_query.mul_(v_neg).to(query.dtype) if need_query else None,
            grad_keys.mul_(v_neg).to(keys.dtype) if need_keys else None,
            grad_v.to(v.dtype) if need_v else None,
        )


def _additive_score_backward_differentiable(ctx, query, keys, v, grad):
    """The backward pass as a differentiable function of the inputs, for a second derivative
    (``create_graph=True``: gradient penalties, ``gradgradcheck``): the whole-tensor formula under
    autograd, so B x Tq x S x H is built (only in this rare case)."""
    wanted = [x for x, need in zip((query, keys, v), ctx.needs_input_grad[:3]) if need]
    k = keys.unsqueeze(0).unsqueeze(0) if keys.dim() == 2 else keys.unsqueeze(1)
    scores = torch.tanh(query.unsqueeze(2) + k).matmul(v)
    grads = iter(torch.autograd.grad(scores, wanted, grad, create_graph=True))
    return tuple(next(grads) if need else None for need in ctx.needs_input_grad[:3])


class SourceAttention(nn.Module):
    """Attention over source positions with a padding mask (WEAN eq. 1-2).

    query: B x Tq x Dq, keys: B x S x Dk, values: B x S x Dv, padding_mask: B x S (True = pad).
    ``projected_keys`` (optional): ``project_keys(keys)`` computed once per sentence;
    ``projected_query`` (optional): the query times ``query_weight()``, computed by the caller.
    Returns the context ``B x Tq x Dv`` and the weights ``B x Tq x S``. The softmax runs in
    float32 whatever the input dtype. Every sentence has at least one real token (EOS), so
    no row is entirely masked.
    """

    def __init__(self, query_dim, key_dim, kind="general"):
        super().__init__()
        self.score = ScoreFunction(query_dim, key_dim, kind)

    def project_keys(self, keys):
        """See ``ScoreFunction.project_keys``: cache it per sentence for step-wise decoding."""
        return self.score.project_keys(keys)

    def query_weight(self):
        """See ``ScoreFunction.query_weight``."""
        return self.score.query_weight()

    def forward(self, query, keys, values, padding_mask=None, projected_keys=None, projected_query=None):
        scores = self.score(query, keys, projected_keys, projected_query).float()
        if padding_mask is not None:
            scores = scores.masked_fill(padding_mask.unsqueeze(1), float("-inf"))
        weights = F.softmax(scores, dim=-1).type_as(values)
        return torch.bmm(weights, values), weights
