"""Parameter-initialising constructors, in one place (as in ``fairseq/models/lstm.py``), the models'
dropout (:func:`Dropout`), and the recurrent layers, which compute in one precision under CPU
autocast on every path and every CPU."""
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.modules import FairseqDropout
from torch.nn.utils.rnn import PackedSequence

from fairseq_wean import cpu


def Dropout(p, owner):
    """Every dropout of the plugin's models: fairseq's ``FairseqDropout`` named after the class that
    owns it (``owner``: the encoder or decoder), as ``fairseq/models/lstm.py`` names its own. In
    training the same as ``nn.Dropout(p)`` (the same ``F.dropout`` call, the same random numbers);
    fairseq's ``--retain-dropout`` (and ``--retain-dropout-modules`` with the class names) keeps it
    on at inference, which it does for ``FairseqDropout`` modules only. torch's recurrent layers'
    own between-layer dropout (``nn.LSTM`` / ``nn.GRU``'s ``dropout=``, and :class:`GRU`'s
    unpacked twin of it) stays off at inference, as in fairseq's ``lstm``."""
    return FairseqDropout(p, module_name=type(owner).__name__)


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


def uniform_init(module):
    """Every weight and bias of ``module`` uniform(-0.1, 0.1), as fairseq's LSTM; returns it."""
    for name, param in module.named_parameters():
        if "weight" in name or "bias" in name:
            param.data.uniform_(-0.1, 0.1)
    return module


# ------------------------------------------------------------------ precision under CPU autocast
def cpu_autocast_enabled():
    try:
        return torch.is_autocast_enabled("cpu")  # torch >= 2.4
    except TypeError:
        return torch.is_autocast_cpu_enabled()  # torch 1.13 - 2.3


def cpu_autocast_dtype():
    try:
        return torch.get_autocast_dtype("cpu")  # torch >= 2.4
    except AttributeError:
        return torch.get_autocast_cpu_dtype()  # torch 1.13 - 2.3


def recurrent_dtype(inputs):
    """The dtype the plugin's recurrent computations run in on ``inputs``: None (as called) outside
    CPU autocast; under it, bfloat16 where the CPU computes it natively (:func:`cpu.native_bf16`),
    float32 elsewhere. One rule for every recurrent path of the three models: ``nn.LSTM`` /
    ``nn.GRU`` packed, padded (:meth:`GRU.forward` with lengths) or one step at a time
    (incremental decoding), and the cell updates of stepped decoders (:func:`gru_cell_step`,
    :func:`lstm_cell_step`). Why (docs/training.md, "bfloat16 on CPU"):

    * torch's own CPU autocast policy is not one rule: it runs an unpacked ``nn.LSTM`` in bfloat16
      (oneDNN's ``mkldnn_rnn_layer``) but a packed ``nn.LSTM``, every ``nn.GRU`` and the cells in
      float32; the plugin casts, so that where bfloat16 is native the recurrences run in it like
      every other matrix product (``--cpu-bf16``'s speed-up);
    * where it is not native, oneDNN has no bfloat16 LSTM kernel at all (an AVX2-only CPU:
      "could not create a primitive descriptor for the LSTM forward propagation primitive") and
      emulates it elsewhere, slower than float32: the recurrences leave autocast and run in float32,
      as torch's autocast notes advise for an op without a low-precision kernel.

    Autocast with another dtype (float16 on the CPU): float32.
    """
    data = inputs.data if isinstance(inputs, PackedSequence) else inputs
    if data.device.type != "cpu" or not cpu_autocast_enabled():
        return None
    return torch.bfloat16 if cpu_autocast_dtype() == torch.bfloat16 and cpu.native_bf16() else torch.float32


def _cast(x, dtype):
    """A tensor, PackedSequence, tuple of them or None, in ``dtype``."""
    if x is None:
        return None
    if isinstance(x, tuple) and not isinstance(x, PackedSequence):
        return tuple(_cast(part, dtype) for part in x)
    return x.to(dtype)


@contextlib.contextmanager
def _flat_weights_in(module, dtype):
    """Runs an ``nn.RNNBase``'s kernel on its weights cast to ``dtype``: torch's forward reads the
    list ``_flat_weights`` (every version this project supports), which is swapped for the cast
    copies and restored after. The parameters stay float32 and get their gradients through the
    cast, as under autocast."""
    saved = module._flat_weights
    module._flat_weights = [None if w is None else w.to(dtype) for w in saved]
    try:
        yield
    finally:
        module._flat_weights = saved


class RecurrentUnderAutocast:
    """Mixin for ``nn.LSTM`` / ``nn.GRU``: every call computes in :func:`recurrent_dtype` (input,
    initial state and weights cast, autocast left), outside autocast as torch's class. Same
    parameters and state-dict keys as the torch class, so checkpoints are unchanged."""

    def forward(self, input, hx=None):  # noqa: A002 (torch's name)
        return self._under_autocast_rule(input, hx, super().forward)

    def _under_autocast_rule(self, input, hx, run):  # noqa: A002
        dtype = recurrent_dtype(input)
        if dtype is None:
            return run(input, hx)
        with torch.autocast("cpu", enabled=False), _flat_weights_in(self, dtype):
            return run(_cast(input, dtype), _cast(hx, dtype))


class LSTM(RecurrentUnderAutocast, nn.LSTM):
    pass


def gru_layer(inputs, weights, *, has_biases, training):
    """One layer and one direction of torch's GRU kernel (``torch.gru``, as ``nn.GRU`` calls it) on
    a batch-first B x S x I input from a zero state: the outputs B x S x H. ``weights``: the
    layer's (weight_ih, weight_hh[, bias_ih, bias_hh])."""
    h0 = inputs.new_zeros(1, inputs.size(0), weights[1].size(1))
    out, _ = torch.gru(inputs, h0, list(weights), has_biases=has_biases, num_layers=1, dropout=0.0,
                       train=training, bidirectional=False, batch_first=True)
    return out


class GRU(RecurrentUnderAutocast, nn.GRU):
    def forward(self, input, hx=None, lengths=None):  # noqa: A002 (torch's name)
        """``nn.GRU.forward``; with ``lengths``, on a right-padded batch without packing it: the
        same outputs and final states as on ``pack_padded_sequence(input, lengths)``, unpacked.
        (Through ``forward``, so that the module's hooks see it as any other call; under CPU
        autocast in :func:`recurrent_dtype`, as every other path.)

        input: B x S x I, batch first, right-padded; lengths: B, each in 1 .. S (checked).
        Returns the top layer's outputs B x S x (directions * H), zeros at padding, and the final
        states (layers * directions) x B x H, each the state at the sentence's last real position
        (the backward direction's at its first), in ``nn.GRU``'s order.

        Why: torch's GRU on a packed sequence slices its precomputed input products step by
        step, and the backward pass of each slice fills a zero tensor the size of the whole
        batch (``fill_`` and ``add_`` of B*S x 3H at every step: quadratic in S). Unpacked, each
        layer and direction is one :func:`gru_layer` call on the padded batch, whose backward is
        linear; the backward direction reads each sentence reversed in place (padding stays at
        the end), so that padding comes after every real position in both directions and never
        reaches a real state. The padded positions cost their arithmetic (fairseq batches
        sentences of similar lengths).

        Dropout between layers (``dropout > 0``, training, several layers) is the same
        distribution as ``nn.GRU``'s but not the same random stream: with a seed, the masks
        differ from the packed path's. Without dropout the two paths agree (tests/test_rnn_encoder.py).
        """
        if lengths is None:
            return super().forward(input, hx)
        if hx is not None:
            raise ValueError("a right-padded batch starts from zero states (hx must be None)")
        if not self.batch_first:
            raise ValueError("a right-padded batch must be batch first")
        lengths = torch.as_tensor(lengths)
        if lengths.dim() != 1 or lengths.numel() != input.size(0):
            raise ValueError("lengths must hold one length per sentence ({}), got shape {}".format(
                input.size(0), tuple(lengths.shape)))
        if lengths.numel() and (int(lengths.min()) < 1 or int(lengths.max()) > input.size(1)):
            raise ValueError("every length must be in 1 .. {} (the padded length), got {} .. {}".format(
                input.size(1), int(lengths.min()), int(lengths.max())))
        return self._under_autocast_rule(input, None, lambda x, _hx: self._forward_right_padded(x, lengths))

    def _forward_right_padded(self, x, lengths):
        bsz, src_len, _ = x.shape
        lengths = lengths.to(x.device)
        positions = torch.arange(src_len, device=x.device).unsqueeze(0)  # 1 x S
        real = positions < lengths.unsqueeze(1)  # B x S
        # position t of the reversed sentence reads position L - 1 - t; padding keeps its place
        reverse = torch.where(real, lengths.unsqueeze(1) - 1 - positions, positions)  # B x S
        rows = torch.arange(bsz, device=x.device)
        last = lengths - 1
        directions = 2 if self.bidirectional else 1
        per_direction = 4 if self.bias else 2  # nn.GRU's _flat_weights: per layer and direction
        finals = []
        for layer in range(self.num_layers):
            index = reverse.unsqueeze(-1).expand(-1, -1, x.size(-1))
            outputs = []
            for direction in range(directions):
                start = (layer * directions + direction) * per_direction
                weights = self._flat_weights[start : start + per_direction]  # as cast by the rule
                out = gru_layer(x.gather(1, index) if direction else x, weights,
                                has_biases=self.bias, training=self.training)
                finals.append(out[rows, last])  # B x H
                if direction:  # back to the source order (the reversal is its own inverse)
                    out = out.gather(1, reverse.unsqueeze(-1).expand(-1, -1, out.size(-1)))
                outputs.append(out)
            x = torch.cat(outputs, dim=-1) if directions > 1 else outputs[0]
            if layer < self.num_layers - 1 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, training=True)  # between layers, as nn.GRU (not retained: see Dropout)
        return x.masked_fill(~real.unsqueeze(-1), 0.0), torch.stack(finals)


def RNN(cell_type, input_size, hidden_size, **kwargs):
    """A multi-layer LSTM or GRU (:class:`LSTM`, :class:`GRU`: torch's, in :func:`recurrent_dtype`
    under CPU autocast) with every weight and bias uniform(-0.1, 0.1)."""
    return uniform_init({"lstm": LSTM, "gru": GRU}[cell_type](input_size, hidden_size, **kwargs))


def RNNCell(cell_type, input_size, hidden_size):
    """A single ``nn.LSTMCell`` or ``nn.GRUCell`` with uniform(-0.1, 0.1) parameters (its products
    are computed by the decoder; the update by :func:`gru_cell_step` / :func:`lstm_cell_step`)."""
    return uniform_init({"lstm": nn.LSTMCell, "gru": nn.GRUCell}[cell_type](input_size, hidden_size))


def _under_recurrent_dtype(gi, gh, state):
    """A cell update's products and state in :func:`recurrent_dtype` of the state (as given outside
    CPU autocast)."""
    dtype = recurrent_dtype(state)
    return (gi, gh, state) if dtype is None else _cast((gi, gh, state), dtype)


def gru_cell_step(gi, gh, h):
    """``nn.GRUCell``'s update from its two products, computed by the caller (so that they can be
    fused with other products): gi = W_ih x + b_ih and gh = W_hh h + b_hh, rows (r, z, n)::

        r = sigma(gi_r + gh_r),  z = sigma(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
        h' = (1 - z) * n + z * h  =  n + z * (h - n)      (torch's order of operations)

    Under CPU autocast the update and the new state are in :func:`recurrent_dtype`, as every
    other recurrent path."""
    gi, gh, h = _under_recurrent_dtype(gi, gh, h)
    size = h.size(-1)
    r, z = torch.sigmoid(gi[..., : 2 * size] + gh[..., : 2 * size]).chunk(2, dim=-1)
    n = torch.tanh(gi[..., 2 * size :] + r * gh[..., 2 * size :])
    return n + z * (h - n)


def lstm_cell_step(gi, gh, c):
    """``nn.LSTMCell``'s update from gi = W_ih x + b_ih and gh = W_hh h + b_hh, rows (i, f, g, o)::

        c' = sigma(f) * c + sigma(i) * tanh(g),  h' = sigma(o) * tanh(c')

    Returns (h', c'), under CPU autocast in :func:`recurrent_dtype`."""
    gi, gh, c = _under_recurrent_dtype(gi, gh, c)
    i, f, g, o = (gi + gh).chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c
