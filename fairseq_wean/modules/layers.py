"""Parameter-initialising constructors, in one place (as in ``fairseq/models/lstm.py``), and the
recurrent layers that stay usable under CPU bfloat16 autocast on every CPU."""
import torch
import torch.nn as nn
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
    pass


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
