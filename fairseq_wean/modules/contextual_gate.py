"""The contextual gate of Wu et al. (poster section 4, "Contextual Gates").

Paper: "Word Attention for Sequence to Sequence Text Understanding" (AAAI 2018,
doi:10.1609/aaai.v32i1.11971), cited by its poster's section 4 (unnumbered). At decoder step i the
gate mixes the hidden context c^alpha_i (attention over encoder states) and the word
context c^beta_i (attention over source word embeddings)::

    o_i = sigma(W_o y_{i-1} + U_o s_{i-1} + C^alpha_o c^alpha_i + C^beta_o c^beta_i)
    s_i = f(s_{i-1}, y_{i-1}, o_i * c^alpha_i, (1 - o_i) * c^beta_i)

The products are element-wise, so o_i, c^alpha_i and the gated word context must have the
same size C (the hidden context size). c^beta_i lives in the source embedding space (size
E); when E != C the gated word context is ``(1 - o_i) * V_b c^beta_i`` with a linear map V_b
(no bias) into the hidden-context space. The poster does not say how it reconciles the
sizes; with E == C there is no V_b and the equations above hold literally. The gate itself
(``o_i``) always sees the raw c^beta_i, as in the equation.
"""
import torch
import torch.nn as nn

from fairseq_wean.modules.layers import Linear


class ContextualGate(nn.Module):
    """o_i = sigma(W_o y + U_o s + C^alpha_o c^alpha + C^beta_o c^beta), one gate per unit of c^alpha.

    Args:
        input_embed_dim: size of y_{i-1}, the previous target word's embedding.
        state_dim: size of s_{i-1}, the decoder state that queried both attentions.
        hidden_context_dim: C, size of c^alpha_i; also the size of o_i.
        word_context_dim: E, size of c^beta_i.

    Parameter count: C * (input_embed_dim + state_dim + C + E) + C (one bias, on W_o),
    plus E * C for V_b when E != C.
    """

    def __init__(self, input_embed_dim, state_dim, hidden_context_dim, word_context_dim):
        super().__init__()
        C = hidden_context_dim
        self.w_o = Linear(input_embed_dim, C, bias=True)  # W_o (carries the gate's bias)
        self.u_o = Linear(state_dim, C, bias=False)  # U_o
        self.c_alpha_o = Linear(C, C, bias=False)  # C^alpha_o
        self.c_beta_o = Linear(word_context_dim, C, bias=False)  # C^beta_o
        # V_b: only when the word context is not already in the hidden-context space.
        self.word_context_proj = (
            Linear(word_context_dim, C, bias=False) if word_context_dim != C else None
        )

    def forward(self, y_prev, s_prev, c_alpha, c_beta, forced_value=None):
        """All inputs ``B x ... x D`` with the same leading dimensions.

        Returns ``(o * c_alpha, (1 - o) * V_b c_beta, o)``, each ``B x ... x C``; o in (0, 1).
        ``forced_value`` (a float) replaces o by that constant (ablation: 1.0 keeps only the
        hidden context, i.e. the RNNsearch path).
        """
        return self.from_partial_sum(self.w_o(y_prev) + self.u_o(s_prev), c_alpha, c_beta, forced_value)

    def from_partial_sum(self, partial, c_alpha, c_beta, forced_value=None):
        """``forward`` with ``partial = W_o y_{i-1} + b + U_o s_{i-1}`` computed by the caller (a
        decoder computes W_o y for every step at once and U_o s with its other products of s)."""
        if forced_value is None:
            o = torch.sigmoid(partial + self.c_alpha_o(c_alpha) + self.c_beta_o(c_beta))
        else:
            o = torch.full_like(c_alpha, float(forced_value))
        word_context = c_beta if self.word_context_proj is None else self.word_context_proj(c_beta)
        return o * c_alpha, (1.0 - o) * word_context, o
