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
        # concat: B x Tq x 1 x H + (B x) 1 x S x H, then tanh and v. Memory is O(B*Tq*S*H);
        # with a vocabulary as keys that is the price the paper's 'concat' variant pays.
        q = projected_query.unsqueeze(2)
        k = keys.unsqueeze(0).unsqueeze(0) if shared else keys.unsqueeze(1)
        # tanh in place: the sum is a temporary, and tanh's backward needs only its output
        return (q + k).tanh_().matmul(self.v)


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
