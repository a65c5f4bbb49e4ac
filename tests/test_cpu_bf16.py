"""``--cpu-bf16`` (task translation_with_metrics): training forward passes in bfloat16 autocast on CPU.

For each of the plugin's models and fairseq's ``lstm``, one training step of
``TranslationWithMetricsTask.train_step`` in float32 and under ``--cpu-bf16`` (dropout off):
the bfloat16 step really runs its linear layers in bfloat16 and its loss differs from float32's
by bfloat16 rounding only; gradients stay float32, finite and point the same way. Where the CPU
has no native bfloat16 the flag falls back to float32: the very same loss.
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
from fairseq_wean.criterions.core_mode_loss import CoreModeLossCriterion
from fairseq_wean.tasks import translation_with_metrics
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
    bf16_task.autocast_bf16 = True  # whatever this CPU has: torch emulates bfloat16 where it is missing
    criterion = (CoreModeLossCriterion(fp32_task) if arch == "core_copy"
                 else CrossEntropyCriterion(fp32_task, sentence_avg=False))

    loss32, grads32, dtypes32 = train_step(fp32_task, model, criterion, sample)
    assert train_step(fp32_task, model, criterion, sample)[0] == loss32  # no dropout left
    loss16, grads16, dtypes16 = train_step(bf16_task, model, criterion, sample)

    assert dtypes32 == {torch.float32} and torch.bfloat16 in dtypes16
    assert loss16.dtype == torch.float32 and torch.isfinite(loss16)
    assert loss16 != loss32  # bfloat16 rounding is there ...
    assert abs(loss16 - loss32) <= 0.02 * abs(loss32)  # ... and only that
    assert grads16.keys() == grads32.keys()
    flat32 = torch.cat([g.flatten() for g in grads32.values()])
    flat16 = torch.cat([grads16[n].flatten() for n in grads32])
    assert all(g.dtype == torch.float32 for g in grads16.values()) and torch.isfinite(flat16).all()
    assert torch.nn.functional.cosine_similarity(flat32, flat16, dim=0) > 0.99


def test_without_native_bf16_the_flag_trains_in_float32(monkeypatch, caplog, tmp_path):
    monkeypatch.setattr(translation_with_metrics, "cpu_has_native_bf16", lambda: False)
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
