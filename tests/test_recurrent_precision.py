"""One precision rule for every recurrent path under CPU autocast (``layers.recurrent_dtype``).

Under ``torch.autocast("cpu", torch.bfloat16)`` the plugin's recurrences compute in bfloat16 where
the CPU has it natively and in float32 where it does not, on every path: ``nn.LSTM`` / ``nn.GRU``
unpacked, packed, on a right-padded batch (``GRU.forward(x, lengths=...)``), one step with a state
(incremental decoding), and the stepped decoders' cell updates. torch's own policy is not one rule
(an unpacked LSTM goes bfloat16 through oneDNN, a packed LSTM, every GRU and the cells stay float32):
tests/test_cpu_bf16.py's model tests caught the padded GRU skipping it on a CPU with avx512_bf16.

Both CPU kinds run on every machine: ``cpu.native_bf16`` is patched to each answer (on an AVX2-only
CPU the bfloat16 kernels then are torch's reference ones, which exist there; oneDNN's bfloat16 LSTM,
which does not, is only reached under autocast, which the rule leaves). The real case of this CPU is
in tests/test_cpu_bf16.py.
"""
import copy

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from fairseq_wean import cpu
from fairseq_wean.modules import layers
from conftest import make_dictionary, random_batch
from test_numerics import N_WORDS, one_thread  # noqa: F401  (one_thread: autouse fixture)
from test_decoder_state import STATE_VARIANTS, build_variant

KINDS = {"native-bf16": (True, torch.bfloat16), "no-native-bf16": (False, torch.float32)}
LENGTHS = torch.tensor([5, 2, 4, 1])


@pytest.fixture(params=list(KINDS))
def cpu_kind(request, monkeypatch):
    """(CPU kind's name, the dtype the rule gives under autocast there), with native_bf16 patched."""
    native, dtype = KINDS[request.param]
    monkeypatch.setattr(cpu, "native_bf16", lambda: native)
    return request.param, dtype


def run_path(module, path, x, hx=None):
    """(outputs B x S x D with zeros at padding, final states: a tensor or (h, c)) of one path."""
    if path == "packed":
        packed = pack_padded_sequence(x, LENGTHS, batch_first=True, enforce_sorted=False)
        out, final = module(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0], final
    if path == "padded":
        return module(x, lengths=LENGTHS)
    return module(x, hx)  # unpacked; "step": one position from a given state


PATHS = [("lstm", "unpacked"), ("lstm", "packed"), ("lstm", "step"),
         ("gru", "unpacked"), ("gru", "packed"), ("gru", "padded"), ("gru", "step")]


def flat(final):
    return list(final) if isinstance(final, tuple) else [final]


@pytest.mark.parametrize("input_dtype", [torch.float32, torch.bfloat16], ids=["float32-in", "bfloat16-in"])
@pytest.mark.parametrize("cell,path", PATHS, ids=["-".join(p) for p in PATHS])
def test_every_recurrent_path_computes_in_the_rules_dtype(cell, path, input_dtype, cpu_kind):
    """Outputs and final states in the rule's dtype, equal to the same layer run outside autocast
    in that dtype; float32 gradients for the parameters; torch's own float32 call unchanged after."""
    _, dtype = cpu_kind
    torch.manual_seed(0)
    module = layers.RNN(cell, 6, 5, num_layers=2, bidirectional=path != "step", batch_first=True)
    x = torch.randn(4, 1 if path == "step" else 5, 6)
    hx = None
    if path == "step":
        h = torch.randn(2, 4, 5)
        hx = (h, torch.randn(2, 4, 5)) if cell == "lstm" else h
    before = run_path(module, path, x, hx)

    given = layers._cast(hx, input_dtype)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, final = run_path(module, path, x.to(input_dtype).requires_grad_(), given)
    assert {t.dtype for t in [out] + flat(final)} == {dtype}

    reference = copy.deepcopy(module).to(dtype)  # outside autocast, in the rule's dtype
    want_out, want_final = run_path(reference, path, x.to(input_dtype).to(dtype), layers._cast(given, dtype))
    torch.testing.assert_close(out, want_out)
    for got, want in zip(flat(final), flat(want_final)):
        torch.testing.assert_close(got, want)

    (out.float().sum() + sum(f.float().sum() for f in flat(final))).backward()
    grads = [p.grad for p in module.parameters()]
    assert all(g is not None and g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)

    after = run_path(module, path, x, hx)  # the float32 weights again, not the cast copies
    for got, want in zip([after[0]] + flat(after[1]), [before[0]] + flat(before[1])):
        assert got.dtype == torch.float32 and torch.equal(got, want)


@pytest.mark.parametrize("step", ["gru", "lstm"])
def test_cell_updates_follow_the_rule(step, cpu_kind):
    """The stepped decoders' updates (word_attn_gated's f) from bfloat16 products (autocast's
    matrix products) and a float32 state: the new state in the rule's dtype."""
    _, dtype = cpu_kind
    torch.manual_seed(0)
    size = 5
    gates = 3 if step == "gru" else 4
    gi, gh = torch.randn(4, gates * size).bfloat16(), torch.randn(4, gates * size).bfloat16()
    state = torch.randn(4, size)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        new = layers.gru_cell_step(gi, gh, state) if step == "gru" else layers.lstm_cell_step(gi, gh, state)
    for t in flat(new):
        assert t.dtype == dtype
    want = (layers.gru_cell_step if step == "gru" else layers.lstm_cell_step)(gi.to(dtype), gh.to(dtype), state.to(dtype))
    for got, ref in zip(flat(new), flat(want)):
        assert torch.equal(got, ref)


def test_outside_cpu_autocast_nothing_is_cast():
    x = torch.randn(3, 4, 6, dtype=torch.float64)
    assert layers.recurrent_dtype(x) is None
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
        assert layers.recurrent_dtype(x) is None
    try:
        fp16 = torch.autocast("cpu", dtype=torch.float16)
        fp16.__enter__()
    except RuntimeError:  # torch 1.13: CPU autocast is bfloat16 only
        return
    try:  # autocast to another dtype: float32
        assert layers.recurrent_dtype(x) == torch.float32
    finally:
        fp16.__exit__(None, None, None)


def recurrent_states(model, incremental_state):
    """Every recurrent state a decoder keeps between steps (hidden, cell)."""
    cached = model.decoder.get_incremental_state(incremental_state, "cached_state")
    if isinstance(cached, dict):
        cached = [cached[k] for k in ("hidden", "cell") if k in cached]
    return flat(tuple(cached) if isinstance(cached, (tuple, list)) else cached)


@pytest.mark.parametrize("variant", list(STATE_VARIANTS))
def test_every_model_and_state_option_keeps_its_recurrences_in_the_rules_dtype(variant, cpu_kind, tmp_path):
    """Each model and decoder-state option (tests/test_decoder_state.py's list) under autocast:
    the encoder's states, every multi-step recurrent layer's outputs in the full pass and the
    decoder's recurrent state after incremental steps are in the rule's dtype."""
    _, dtype = cpu_kind
    dictionary = make_dictionary(N_WORDS)
    model = build_variant(variant, dictionary, tmp_path).eval()
    src, lengths, prev, _ = random_batch(dictionary, bsz=4, src_len=7, tgt_len=5)
    seen = []
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.append(
        (out[0].data if isinstance(out[0], torch.nn.utils.rnn.PackedSequence) else out[0]).dtype))
        for m in model.modules() if isinstance(m, torch.nn.RNNBase)]
    try:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            encoder_out = model.encoder(src, src_lengths=lengths)
            model.decoder(prev, encoder_out=encoder_out)
            incremental_state = {}
            for t in range(2):
                model.decoder(prev[:, : t + 1], encoder_out=encoder_out, incremental_state=incremental_state)
    finally:
        for hook in hooks:
            hook.remove()
    assert encoder_out["encoder_states"].dtype == dtype
    assert seen and set(seen) == {dtype}
    states = recurrent_states(model, incremental_state)
    assert states and {s.dtype for s in states} == {dtype}
