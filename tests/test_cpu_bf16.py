"""``--cpu-bf16`` (task translation_with_metrics): training forward passes in bfloat16 autocast on CPU.

For each of the plugin's models and fairseq's ``lstm``, one training step of
``TranslationWithMetricsTask.train_step`` in float32 and under ``--cpu-bf16`` (dropout off):
the bfloat16 step really runs its linear layers in bfloat16 and its loss differs from float32's
by bfloat16 rounding only; gradients stay float32, finite and point the same way. Where the CPU
has no native bfloat16 the flag falls back to float32: the very same loss.

A user's own ``torch.autocast("cpu", torch.bfloat16)`` must work on every CPU: where bfloat16 is
not native (an AVX2-only CPU: no avx512_bf16, no AMX) the plugin's recurrent layers run in
float32 inside the region, since oneDNN has no bfloat16 LSTM kernel there; where it is native they
run in bfloat16 (``layers.recurrent_dtype``). The first case runs on every CPU (simulated where
bfloat16 is native); the second, real, needs a CPU with avx512_bf16 or AMX and is skipped elsewhere,
naming what this CPU has: tests/test_recurrent_precision.py simulates it on every CPU, path by path.
"""
import argparse
import logging

import pytest
import torch
from fairseq.criterions.cross_entropy import CrossEntropyCriterion
from fairseq.models.lstm import LSTMModel
from fairseq.modules import FairseqDropout
from fairseq.models.lstm import base_architecture as lstm_architecture

import fairseq_wean  # noqa: F401  (registers the models and the task)
from fairseq_wean import cpu
from fairseq_wean.criterions.core_mode_loss import CoreModeLossCriterion
from fairseq_wean.modules import layers
from fairseq_wean.tasks.translation_with_metrics import TranslationWithMetricsConfig, TranslationWithMetricsTask
from conftest import make_dictionary, random_batch
from test_numerics import MAX_POSITIONS, N_WORDS, build, one_thread  # noqa: F401  (one_thread: autouse fixture)


class PlainBackward:
    """The one method of fairseq's optimizer wrapper that train_step calls."""

    def backward(self, loss):
        loss.backward()


def build_model(arch, dictionary, tmp_path):
    if arch != "lstm":
        model = build(arch, dictionary, tmp_path)
    else:
        args = argparse.Namespace(arch="lstm", encoder_embed_dim=16, encoder_hidden_size=12, decoder_embed_dim=16,
                                  decoder_hidden_size=14, decoder_out_embed_dim=10, encoder_bidirectional=True,
                                  criterion="cross_entropy", max_source_positions=MAX_POSITIONS,
                                  max_target_positions=MAX_POSITIONS)
        lstm_architecture(args)
        torch.manual_seed(0)
        model = LSTMModel.build_model(args, type("Task", (), {"source_dictionary": dictionary,
                                                                 "target_dictionary": dictionary})())
    for module in model.modules():  # the two steps must see the same network
        if isinstance(module, (torch.nn.Dropout, FairseqDropout)):
            module.p = 0.0
        if isinstance(module, torch.nn.RNNBase):
            module.dropout = 0.0
    return model


def make_task(dictionary, cpu_bf16):
    return TranslationWithMetricsTask(TranslationWithMetricsConfig(cpu_bf16=cpu_bf16), dictionary, dictionary)


def train_step(task, model, criterion, sample):
    """(loss, {name: grad}, dtypes of the nn.Linear outputs) of one training step."""
    model.zero_grad()
    dtypes = set()
    hooks = [m.register_forward_hook(lambda _m, _i, out: dtypes.add(out.dtype))
             for m in model.modules() if isinstance(m, torch.nn.Linear)]
    try:
        loss, _, _ = task.train_step(sample, model, criterion, PlainBackward(), update_num=0)
    finally:
        for hook in hooks:
            hook.remove()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads, dtypes


@pytest.mark.parametrize("arch", ["wean_lstm", "core_copy", "word_attn_gated", "lstm"])
def test_bf16_step_is_a_rounded_float32_step(arch, tmp_path):
    dictionary = make_dictionary(N_WORDS)
    model = build_model(arch, dictionary, tmp_path)
    src, lengths, prev, target = random_batch(dictionary, bsz=6, src_len=9, tgt_len=7)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": target, "ntokens": int(target.ne(dictionary.pad()).sum()), "nsentences": len(src)}
    fp32_task = make_task(dictionary, cpu_bf16=False)
    bf16_task = make_task(dictionary, cpu_bf16=True)
    # whatever this CPU has: torch emulates bfloat16 where it is missing (the plugin's recurrent
    # layers then run in float32, fairseq lstm's packed encoder LSTM has no oneDNN path)
    bf16_task.autocast_bf16 = True
    criterion = (CoreModeLossCriterion(fp32_task) if arch == "core_copy"
                 else CrossEntropyCriterion(fp32_task, sentence_avg=False))

    loss32, grads32, dtypes32 = train_step(fp32_task, model, criterion, sample)
    assert train_step(fp32_task, model, criterion, sample)[0] == loss32  # no dropout left
    loss16, grads16, dtypes16 = train_step(bf16_task, model, criterion, sample)

    assert dtypes32 == {torch.float32} and torch.bfloat16 in dtypes16
    assert loss16.dtype == torch.float32 and torch.isfinite(loss16)
    assert abs(loss16 - loss32) <= 0.02 * abs(loss32)
    assert grads16.keys() == grads32.keys()
    flat32 = torch.cat([g.flatten() for g in grads32.values()])
    flat16 = torch.cat([grads16[n].flatten() for n in grads32])
    # bfloat16 rounding is there (in the gradients: an untrained model's loss can round alike) ...
    assert not torch.equal(flat16, flat32)
    assert all(g.dtype == torch.float32 for g in grads16.values()) and torch.isfinite(flat16).all()
    assert torch.nn.functional.cosine_similarity(flat32, flat16, dim=0) > 0.99


def test_without_native_bf16_the_flag_trains_in_float32(monkeypatch, caplog, tmp_path):
    monkeypatch.setattr(cpu, "native_bf16", lambda: False)
    dictionary = make_dictionary(N_WORDS)
    with caplog.at_level(logging.WARNING):
        task = make_task(dictionary, cpu_bf16=True)
    assert not task.autocast_bf16 and "no native bfloat16" in caplog.text
    model = build_model("wean_lstm", dictionary, tmp_path)
    src, lengths, prev, target = random_batch(dictionary)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": target, "ntokens": int(target.ne(dictionary.pad()).sum()), "nsentences": len(src)}
    criterion = CrossEntropyCriterion(task, sentence_avg=False)
    loss, _, dtypes = train_step(task, model, criterion, sample)
    reference, _, _ = train_step(make_task(dictionary, cpu_bf16=False), model, criterion, sample)
    assert dtypes == {torch.float32} and loss == reference


# ------------------------------------------------------------------ a user's own CPU autocast
RECURRENT = (torch.nn.LSTM, torch.nn.GRU)
PLUGIN_ARCHS = ["wean_lstm", "core_copy", "word_attn_gated"]
THIS_CPU = cpu.describe()


def user_step(model, criterion, sample, autocast):
    """(loss, grads, dtypes of the multi-step recurrent layers' outputs, of the nn.Linear outputs)
    of a forward pass with the model's criterion, under the user's own
    ``torch.autocast("cpu", torch.bfloat16)`` if ``autocast``, and a backward pass after it, as
    torch documents."""
    model.zero_grad()
    recurrent, linear = set(), set()

    def record(seen):
        def hook(_module, _inputs, out):
            out = out[0] if isinstance(out, tuple) else out  # nn.LSTM / nn.GRU: (output, state)
            seen.add((out.data if isinstance(out, torch.nn.utils.rnn.PackedSequence) else out).dtype)
        return hook

    hooks = [m.register_forward_hook(record(seen))
             for seen, kind in ((recurrent, RECURRENT), (linear, torch.nn.Linear))
             for m in model.modules() if isinstance(m, kind)]
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss, _, _ = criterion(model, sample)
        loss.backward()
    finally:
        for hook in hooks:
            hook.remove()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return loss.detach(), grads, recurrent, linear


def model_and_criterion(arch, tmp_path):
    dictionary = make_dictionary(N_WORDS)
    model = build_model(arch, dictionary, tmp_path)
    task = make_task(dictionary, cpu_bf16=False)
    criterion = CoreModeLossCriterion(task) if arch == "core_copy" else CrossEntropyCriterion(task, sentence_avg=False)
    src, lengths, prev, target = random_batch(dictionary, bsz=6, src_len=9, tgt_len=7)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": target, "ntokens": int(target.ne(dictionary.pad()).sum()), "nsentences": len(src)}
    return model, criterion, sample


@pytest.mark.parametrize("arch", PLUGIN_ARCHS)
def test_user_cpu_autocast_without_native_bf16_runs_recurrent_layers_in_float32(arch, monkeypatch, tmp_path):
    """The AVX2-only case (issue: "could not create a primitive descriptor for the LSTM forward
    propagation primitive"); real on such a CPU, simulated on one with native bfloat16."""
    monkeypatch.setattr(cpu, "native_bf16", lambda: False)
    model, criterion, sample = model_and_criterion(arch, tmp_path)
    assert any(isinstance(m, (layers.LSTM, layers.GRU)) for m in model.modules())
    loss32, grads32, _, _ = user_step(model, criterion, sample, autocast=False)
    loss16, grads16, recurrent, linear = user_step(model, criterion, sample, autocast=True)
    assert recurrent == {torch.float32}  # the recurrent layers left autocast ...
    assert torch.bfloat16 in linear  # ... and nothing else did
    assert torch.isfinite(loss16) and abs(loss16 - loss32) <= 0.02 * abs(loss32)
    assert not torch.equal(grads16, grads32)  # bfloat16 rounding (an untrained loss can round alike)
    assert torch.isfinite(grads16).all() and grads16.dtype == torch.float32
    assert torch.nn.functional.cosine_similarity(grads32, grads16, dim=0) > 0.99


@pytest.mark.skipif(not cpu.native_bf16(), reason="needs a CPU with native bfloat16 (avx512_bf16 or AMX); "
                                                  "this one: " + THIS_CPU)
@pytest.mark.parametrize("arch", PLUGIN_ARCHS)
def test_user_cpu_autocast_with_native_bf16_runs_recurrent_layers_in_bf16(arch, tmp_path):
    model, criterion, sample = model_and_criterion(arch, tmp_path)
    loss32, grads32, _, _ = user_step(model, criterion, sample, autocast=False)
    loss16, grads16, recurrent, linear = user_step(model, criterion, sample, autocast=True)
    assert recurrent == {torch.bfloat16} and torch.bfloat16 in linear  # every recurrent layer, every path
    assert torch.isfinite(loss16) and abs(loss16 - loss32) <= 0.02 * abs(loss32)
    assert torch.isfinite(grads16).all()
    assert torch.nn.functional.cosine_similarity(grads32, grads16, dim=0) > 0.99


def test_recurrent_layers_keep_torch_state_dict_keys():
    """The float32 fallback is a subclass, not a wrapper: published checkpoints load unchanged."""
    for ours, theirs in ((layers.LSTM, torch.nn.LSTM), (layers.GRU, torch.nn.GRU)):
        torch.manual_seed(0)
        a = ours(4, 5, num_layers=2, bidirectional=True, batch_first=True)
        torch.manual_seed(0)
        b = theirs(4, 5, num_layers=2, bidirectional=True, batch_first=True)
        assert list(a.state_dict()) == list(b.state_dict())
        x = torch.randn(3, 6, 4)
        torch.testing.assert_close(a(x)[0], b(x)[0], rtol=0, atol=0)  # outside autocast: torch's forward


CPUINFO_AVX2 = "flags\t\t: fpu sse sse2 avx f16c avx2 fma bmi2\n"
CPUINFO_SPR = ("flags\t\t: fpu sse avx avx2 avx512f avx512bw avx512vl avx512_bf16 amx_bf16 amx_tile\n"
               "model name\t: Intel(R) Xeon(R) Platinum 8480+\n")


@pytest.mark.parametrize("text,model,features", [
    ("model name\t: AMD EPYC\n" + CPUINFO_AVX2 + "model name\t: other\n", "AMD EPYC",
     "AVX2; no AVX-512, avx512_bf16 or AMX"),
    (CPUINFO_SPR, "Intel(R) Xeon(R) Platinum 8480+", "AVX2, AVX-512, avx512_bf16, AMX"),
    ("model name\t: Some CPU\nflags\t\t: fpu avx2 avx512f\n", "Some CPU", "AVX2, AVX-512; no avx512_bf16 or AMX"),
    ("model name\t: Old\nflags\t\t: fpu sse2\n", "Old", "no AVX2, AVX-512, avx512_bf16 or AMX"),
])
def test_cpu_description_names_the_vector_features(text, model, features, tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(text)
    assert cpu.cpu_flags(str(info))[0] == model
    assert cpu.describe(str(info)).startswith("{} ({}), ".format(model, features))
    assert cpu.cpu_flags(str(tmp_path / "missing")) == (None, None)
