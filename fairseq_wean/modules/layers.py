"""Parameter-initialising constructors, in one place (as in ``fairseq/models/lstm.py``), and the
recurrent layers that stay usable under CPU bfloat16 autocast on every CPU."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import PackedSequence

from fairseq_wean import cpu


def Embedding(num_embeddings, embedding_dim, padding_idx):
    """Word embeddings, uniform(-0.1, 0.1) as fairseq's LSTM; the padding row is zero."""
    m = nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx)
    nn.init.uniform_(m.weight, -0.1, 0.1)
    nn.init.constant_(m.weight[padding_idx], 0)
    return m


def Linear(in_features, out_features, bias=True):
    """Linear layer, uniform(-0.1, 0.1) weights and zero bias as fairseq's LSTM."""
    m = nn.Linear(in_features, out_features, bias=bias)
    m.weight.data.uniform_(-0.1, 0.1)
    if bias:
        m.bias.data.zero_()
    return m


def cpu_autocast_without_native_bf16(inputs):
    """Whether a recurrent layer called on ``inputs`` must leave CPU autocast: autocast is on for
    the CPU, the inputs are on the CPU, and the CPU has no native bfloat16 (:func:`cpu.native_bf16`).

    There CPU autocast would run ``nn.LSTM`` through oneDNN's bfloat16 LSTM, which has no kernel
    for an AVX2-only CPU (RuntimeError "could not create a primitive descriptor for the LSTM
    forward propagation primitive"), and which is emulated, slower than float32, on an AVX-512
    CPU without avx512_bf16. As torch's autocast notes advise for an op without a low-precision
    kernel, the layer then runs in float32 inside the autocast region; every other layer keeps
    autocast's choice.
    """
    data = inputs.data if isinstance(inputs, PackedSequence) else inputs
    return data.device.type == "cpu" and cpu_autocast_enabled() and not cpu.native_bf16()


def cpu_autocast_enabled():
    try:
        return torch.is_autocast_enabled("cpu")  # torch >= 2.4
    except TypeError:
        return torch.is_autocast_cpu_enabled()  # torch 1.13 - 2.3


class Float32RecurrentUnderEmulatedBF16:
    """Mixin for ``nn.LSTM`` / ``nn.GRU``: float32 under CPU autocast where bfloat16 is not native
    (see :func:`cpu_autocast_without_native_bf16`). Same parameters and state-dict keys as the
    torch class, so checkpoints are unchanged."""

    def forward(self, input, hx=None):  # noqa: A002 (torch's name)
        if not cpu_autocast_without_native_bf16(input):
            return super().forward(input, hx)
        with torch.autocast("cpu", enabled=False):
            input = input.float()  # a tensor or a PackedSequence
            if hx is not None:
                hx = tuple(h.float() for h in hx) if isinstance(hx, tuple) else hx.float()
            return super().forward(input, hx)


class LSTM(Float32RecurrentUnderEmulatedBF16, nn.LSTM):
    pass


class GRU(Float32RecurrentUnderEmulatedBF16, nn.GRU):
    def forward(self, input, hx=None, lengths=None):  # noqa: A002 (torch's name)
        """``nn.GRU.forward``; with ``lengths``, on a right-padded batch without packing it: the
        same outputs and final states as on ``pack_padded_sequence(input, lengths)``, unpacked.
        (Through ``forward``, so that the module's hooks see it as any other call.)

        input: B x S x I, batch first, right-padded; lengths: B (each >= 1). Returns the top
        layer's outputs B x S x (directions * H), zeros at padding, and the final states
        (layers * directions) x B x H, each the state at the sentence's last real position
        (the backward direction's at its first), in ``nn.GRU``'s order.

        Why: torch's GRU on a packed sequence slices its precomputed input products step by
        step, and the backward pass of each slice fills a zero tensor the size of the whole
        batch (``fill_`` and ``add_`` of B*S x 3H at every step: quadratic in S). Unpacked, each
        layer and direction is one ``gru`` call on the padded batch, whose backward is linear;
        the backward direction reads each sentence reversed in place (padding stays at the end),
        so that padding comes after every real position in both directions and never reaches
        a real state. The padded positions cost their arithmetic (fairseq batches sentences of
        similar lengths).
        """
        if lengths is None:
            return super().forward(input, hx)
        if hx is not None:
            raise ValueError("a right-padded batch starts from zero states (hx must be None)")
        if cpu_autocast_without_native_bf16(input):
            with torch.autocast("cpu", enabled=False):
                return self._forward_right_padded(input.float(), lengths)
        return self._forward_right_padded(input, lengths)

    def _forward_right_padded(self, x, lengths):
        if not self.batch_first:
            raise ValueError("a right-padded batch must be batch first")
        bsz, src_len, _ = x.shape
        lengths = lengths.to(x.device)
        positions = torch.arange(src_len, device=x.device).unsqueeze(0)  # 1 x S
        real = positions < lengths.unsqueeze(1)  # B x S
        # position t of the reversed sentence reads position L - 1 - t; padding keeps its place
        reverse = torch.where(real, lengths.unsqueeze(1) - 1 - positions, positions)  # B x S
        rows = torch.arange(bsz, device=x.device)
        last = (lengths - 1).clamp(min=0)
        directions = 2 if self.bidirectional else 1
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if self.bias else ("weight_ih", "weight_hh")
        finals = []
        for layer in range(self.num_layers):
            index = reverse.unsqueeze(-1).expand(-1, -1, x.size(-1))
            outputs = []
            for direction in range(directions):
                suffix = "_reverse" if direction else ""
                weights = [getattr(self, "{}_l{}{}".format(name, layer, suffix)) for name in names]
                inputs = x.gather(1, index) if direction else x
                h0 = x.new_zeros(1, bsz, self.hidden_size)
                out, _ = torch._VF.gru(inputs, h0, weights, self.bias, 1, 0.0, self.training, False, True)
                finals.append(out[rows, last])  # B x H
                if direction:  # back to the source order (the reversal is its own inverse)
                    out = out.gather(1, reverse.unsqueeze(-1).expand(-1, -1, out.size(-1)))
                outputs.append(out)
            x = torch.cat(outputs, dim=-1) if directions > 1 else outputs[0]
            if layer < self.num_layers - 1 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, training=True)  # between layers, as nn.GRU
        return x.masked_fill(~real.unsqueeze(-1), 0.0), torch.stack(finals)


def RNN(cell_type, input_size, hidden_size, **kwargs):
    """A multi-layer LSTM or GRU (:class:`LSTM`, :class:`GRU`: torch's, float32 under CPU autocast
    where bfloat16 is not native) with every weight and bias uniform(-0.1, 0.1)."""
    cls = {"lstm": LSTM, "gru": GRU}[cell_type]
    m = cls(input_size, hidden_size, **kwargs)
    for name, param in m.named_parameters():
        if "weight" in name or "bias" in name:
            param.data.uniform_(-0.1, 0.1)
    return m


def RNNCell(cell_type, input_size, hidden_size):
    """A single ``nn.LSTMCell`` or ``nn.GRUCell`` with uniform(-0.1, 0.1) parameters."""
    cls = {"lstm": nn.LSTMCell, "gru": nn.GRUCell}[cell_type]
    m = cls(input_size, hidden_size)
    for name, param in m.named_parameters():
        if "weight" in name or "bias" in name:
            param.data.uniform_(-0.1, 0.1)
    return m


def gru_cell_step(gi, gh, h):
    """``nn.GRUCell``'s update from its two products, computed by the caller (so that they can be
    fused with other products): gi = W_ih x + b_ih and gh = W_hh h + b_hh, rows (r, z, n)::

        r = sigma(gi_r + gh_r),  z = sigma(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
        h' = (1 - z) * n + z * h  =  n + z * (h - n)      (torch's order of operations)
    """
    size = h.size(-1)
    r, z = torch.sigmoid(gi[..., : 2 * size] + gh[..., : 2 * size]).chunk(2, dim=-1)
    n = torch.tanh(gi[..., 2 * size :] + r * gh[..., 2 * size :])
    return n + z * (h - n)


def lstm_cell_step(gi, gh, c):
    """``nn.LSTMCell``'s update from gi = W_ih x + b_ih and gh = W_hh h + b_hh, rows (i, f, g, o)::

        c' = sigma(f) * c + sigma(i) * tanh(g),  h' = sigma(o) * tanh(c')

    Returns (h', c')."""
    i, f, g, o = (gi + gh).chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c
