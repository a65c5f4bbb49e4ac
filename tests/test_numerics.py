"""No NaN or inf in loss or gradients for adversarial batches, for every architecture.

fp16 training is not possible on this CPU set-up, so the extremes come from the data instead:
targets that never occur in the source (nothing to copy: CoRe's copy distribution is all
zeros), targets that are all copied, one-word and empty sources (the source is only
``</s>``), all-``<unk>`` sentences, sources and targets of the maximum length the model
accepts, and (as an fp16-like extreme) every weight scaled up so that softmaxes saturate.
Each batch mixes lengths, so padding is exercised too. Models are built as fairseq builds
them (``build_model``) and trained with their criteria: ``core_copy`` (``--core-psi`` tanh and
affine) with ``core_mode_loss`` (with and without label smoothing), the others with
``cross_entropy`` and ``label_smoothed_cross_entropy``.
"""
import argparse

import pytest
import torch
from fairseq.criterions.cross_entropy import CrossEntropyCriterion
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.data import data_utils

import fairseq_wean  # noqa: F401  (registers the models and criteria)
from fairseq_wean.criterions.core_mode_loss import CoreModeLossCriterion
from fairseq_wean.models import core_copy, wean_lstm, word_attn_gated
from conftest import FakeTask, make_dictionary

MAX_POSITIONS = 40


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models: torch's thread pool only spins on the 2 shared cores (50x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

N_WORDS = 30


def build(arch, dictionary, tmp_path):
    common = dict(dropout=0.3, max_source_positions=MAX_POSITIONS, max_target_positions=MAX_POSITIONS)
    if arch == "wean_lstm":
        args = argparse.Namespace(arch=arch, embed_dim=16, encoder_hidden_size=12, decoder_hidden_size=14,
                                  encoder_layers=2, decoder_layers=2, **common)
        wean_lstm.base_architecture(args)
        cls = wean_lstm.WeanLSTMModel
    elif arch in ("core_copy", "core_copy_affine"):  # affine: --core-psi affine, psi unbounded
        table = tmp_path / "align.table"
        words = ["w{}".format(i) for i in range(N_WORDS)]
        with open(table, "w") as f:  # w_i -> w_(3i mod 30), w_(i+1): some targets reachable, most not
            for i, w in enumerate(words):
                f.write("{}\t{}\t2\n{}\t{}\t1\n".format(w, words[(3 * i) % N_WORDS], w, words[(i + 1) % N_WORDS]))
        args = argparse.Namespace(arch=arch, embed_dim=16, encoder_hidden_size=12, decoder_hidden_size=14,
                                  decoder_out_embed_dim=10, core_align_table=str(table), core_topk=2,
                                  core_num_frequent=3, core_psi="tanh" if arch == "core_copy" else "affine",
                                  **common)
        args.arch = "core_copy"
        core_copy.base_architecture(args)
        cls = core_copy.CoreCopyModel
    else:
        mode = {"word_attn_gated": "gated", "word_attn_ungated": "ungated", "word_attn_rnnsearch": "none"}[arch]
        args = argparse.Namespace(arch="word_attn_gated", word_attention=mode, encoder_embed_dim=10,
                                  encoder_hidden_size=6, decoder_embed_dim=8, decoder_hidden_size=9,
                                  decoder_out_embed_dim=7, encoder_layers=2, decoder_layers=2, **common)
        word_attn_gated.base_architecture(args)
        cls = word_attn_gated.WordAttnGatedModel
    torch.manual_seed(0)
    return cls.build_model(args, FakeTask(dictionary))


def criteria(arch, task):
    if arch.startswith("core_copy"):
        return {"core_mode_loss": CoreModeLossCriterion(task),
                "core_mode_loss+ls": CoreModeLossCriterion(task, label_smoothing=0.1)}
    return {"cross_entropy": CrossEntropyCriterion(task, sentence_avg=False),
            "label_smoothed": LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)}


def adversarial_pairs(case, d):
    """[(source word ids, target word ids)] without </s>; every batch mixes lengths."""
    w = lambda i: d.index("w{}".format(i))  # noqa: E731
    low, high = [w(i) for i in range(10)], [w(i) for i in range(10, N_WORDS)]
    if case == "targets_never_in_source":
        return [(low[:5], high[:4]), (low[3:], high[5:12]), (low[:1], high[-1:])]
    if case == "targets_all_copied":
        return [(low[:5], low[:5]), (high[:9], high[:9]), (low[2:4], low[2:4][::-1])]
    if case == "length_1_sources":
        return [([], high[:3]), (low[:1], low[:1]), (high[:1], high[:6]), ([], [])]
    if case == "all_unk":
        return [([d.unk()] * 6, [d.unk()] * 4), ([d.unk()], [d.unk()] * 7), (low[:3], [d.unk()])]
    if case == "max_length":
        longest = MAX_POSITIONS - 1  # + </s> = MAX_POSITIONS tokens, the most the model accepts
        src = [(low + high)[i % N_WORDS] for i in range(longest)]
        return [(src, src[::-1]), (src[:3], src[:longest]), (high[:2], low[:1])]
    raise ValueError(case)


CASES = ["targets_never_in_source", "targets_all_copied", "length_1_sources", "all_unk", "max_length"]
ARCHS = ["wean_lstm", "core_copy", "core_copy_affine", "word_attn_gated", "word_attn_ungated",
         "word_attn_rnnsearch"]


def make_sample(pairs, d):
    eos = torch.tensor([d.eos()])
    srcs = [torch.cat([torch.tensor(s, dtype=torch.long), eos]) for s, _ in pairs]
    tgts = [torch.cat([torch.tensor(t, dtype=torch.long), eos]) for _, t in pairs]
    target = data_utils.collate_tokens(tgts, d.pad(), d.eos(), left_pad=False)
    return {
        "id": torch.arange(len(pairs)),
        "nsentences": len(pairs),
        "ntokens": int(target.ne(d.pad()).sum()),
        "net_input": {
            "src_tokens": data_utils.collate_tokens(srcs, d.pad(), d.eos(), left_pad=True),
            "src_lengths": torch.tensor([len(s) for s in srcs]),
            "prev_output_tokens": data_utils.collate_tokens(tgts, d.pad(), d.eos(), left_pad=False,
                                                            move_eos_to_beginning=True),
        },
        "target": target,
    }


def assert_finite_step(model, criterion, sample):
    model.train()
    model.zero_grad()
    loss, sample_size, logging_output = criterion(model, sample)
    assert torch.isfinite(loss), loss
    assert sample_size > 0
    for key in ("loss", "nll_loss", "mode_loss"):
        if key in logging_output:
            assert torch.isfinite(torch.as_tensor(logging_output[key])), (key, logging_output[key])
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert grads, "no gradient at all"
    bad = [name for name, g in grads.items() if not torch.isfinite(g).all()]
    assert not bad, bad
    model.eval()
    with torch.no_grad():
        lprobs = model.get_normalized_probs(model(**sample["net_input"]), log_probs=True)
    assert not torch.isnan(lprobs).any()
    assert torch.isfinite(lprobs).any(dim=-1).all()  # every position can produce something
    return loss


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("arch", ARCHS)
def test_no_nan_or_inf_in_loss_or_gradients(arch, case, tmp_path):
    d = make_dictionary(N_WORDS)
    model = build(arch, d, tmp_path)
    sample = make_sample(adversarial_pairs(case, d), d)
    if case == "max_length":
        assert sample["net_input"]["src_tokens"].size(1) == MAX_POSITIONS == model.max_positions()[0]
    for name, criterion in criteria(arch, FakeTask(d)).items():
        assert_finite_step(model, criterion, sample)


@pytest.mark.parametrize("arch", ARCHS)
def test_saturated_weights_keep_loss_and_gradients_finite(arch, tmp_path):
    """An fp16-like extreme: every weight x30, so attention and output softmaxes saturate."""
    d = make_dictionary(N_WORDS)
    model = build(arch, d, tmp_path)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(30.0)
    pairs = adversarial_pairs("targets_never_in_source", d) + adversarial_pairs("max_length", d)
    for name, criterion in criteria(arch, FakeTask(d)).items():
        assert_finite_step(model, criterion, make_sample(pairs, d))
