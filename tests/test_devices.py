"""The model-level checks on every device: CPU here and in CI, CUDA where a GPU is visible.

Each check takes a ``device`` parameter; the ``cuda`` cases are skipped (with the reason) when
``torch.cuda.is_available()`` is false, and the two-process NCCL run is skipped unless two GPUs
are visible (NCCL cannot put two ranks on one GPU); on one GPU everything else runs.
``scripts/gpu_tests.sh`` runs this file on a GPU machine. The CPU cases are one tiny model per
architecture (a few seconds in all); the thorough CPU variants stay in each model's own tests.

What a GPU adds over the CPU runs: cuDNN's RNN kernels (the whole sequence in one call for the
full forward pass, one step at a time in decoding), tensors that forward creates (masks,
``sentence_ids``, ``arange``, core_copy's full-vocabulary buffer) having to be on the input's
device, fp16 (``--fp16``: ``model.half()``; ``--amp``: autocast) and bf16 (``--bf16``:
``model.bfloat16()``), and NCCL.
"""
import copy
import os
import re

import pytest
import torch

import fairseq_wean  # noqa: F401  (registers the models and criteria)
from conftest import USER_DIR, cli, generated_hypotheses, make_dictionary, random_batch
from model_checks import (
    assert_batched_beam_equals_single,
    assert_incremental_equals_full,
    full_forward_log_probs,
)
from test_core_copy import build as build_core_copy, write_table
from test_distributed import align_table  # noqa: F401  (a fixture: the table built by the real CLI)
from test_distributed import train_args as distributed_train_args, update_losses
from test_wean_lstm import build as build_wean_lstm
from test_word_attn_gated import build as build_word_attn_gated

try:  # the public names; the autograd Functions behind them may move to fairseq_wean/modules/
    from fairseq_wean.models.core_copy import log_mixture, masked_log
except ImportError:  # pragma: no cover (only if core_copy stops re-exporting them)
    from fairseq_wean.modules.copy_mixture import log_mixture, masked_log

NO_CUDA = "no CUDA device: torch.cuda.is_available() is False (run scripts/gpu_tests.sh on a GPU machine)"
CUDA = pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA))
DEVICES = ["cpu", CUDA]
ARCHS = ["wean_lstm", "core_copy", "word_attn_gated"]
# NCCL cannot put two ranks on one GPU (it refuses a duplicate GPU in a communicator), so the
# two-rank NCCL test needs two visible GPUs. On a one-GPU machine it is the only test skipped:
# every other cuda case runs on GPU 0.
TWO_GPUS = pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason="needs 2 GPUs: NCCL runs one rank per GPU and cannot put two ranks on one GPU "
           "(torch.cuda.device_count() is {})".format(torch.cuda.device_count()),
)

# Incremental (one decoder step per call) vs full forward (the whole target in one call), in
# float32. On the CPU both take the same kernels: 1e-5, the model tests' tolerance. On a GPU
# cuDNN runs a different RNN kernel for a sequence than for one step and sums in another order;
# its float32 rounding differences are ~1e-6 per step (TF32 is switched off below), so 1e-4
# bounds them over 7 steps and still fails on any real mismatch (a wrong cache, a wrong mask:
# differences of 1e-2 and more).
INCREMENTAL_ATOL = {"cpu": 1e-5, "cuda": 1e-4}


@pytest.fixture(autouse=True)
def exact_float32_on_cuda():
    """TF32 (10-bit mantissa matmuls) would make float32 references ~1e-3 off on Ampere+."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def build(arch, tmp_path):
    """(tiny model in eval mode, dictionary), built by the model's own tests' builder."""
    if arch == "wean_lstm":
        dictionary = make_dictionary()
        model = build_wean_lstm(dictionary)
    elif arch == "core_copy":
        dictionary = make_dictionary(20)
        model = build_core_copy(dictionary, write_table(tmp_path / "align.table", dictionary))
    else:
        dictionary = make_dictionary()
        model = build_word_attn_gated(dictionary)
    return model.eval(), dictionary


def on(device, tensors):
    return tuple(t.to(device) for t in tensors)


def assert_on_device(device, tensors, what):
    wrong = [name for name, t in tensors if torch.is_tensor(t) and t.device.type != device]
    assert not wrong, "{} not on {}: {}".format(what, device, wrong)


def tensors_in(value, prefix=""):
    """(name, tensor) for every tensor in nested dicts / lists / tuples (incremental state, extra)."""
    if torch.is_tensor(value):
        yield prefix, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from tensors_in(item, "{}/{}".format(prefix, key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from tensors_in(item, "{}[{}]".format(prefix, i))


# ------------------------------------------------------------------------ placement, incremental decoding
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("device", DEVICES)
def test_model_moves_fully_to_the_device(arch, device, tmp_path):
    """Parameters, buffers, the encoder output, the decoder output and everything the decoder
    keeps in its incremental state (caches, masks, core_copy's full-vocabulary buffer) live on
    the input's device: a tensor created in forward without ``device=`` would show up here (or
    fail the forward) on CUDA."""
    model, dictionary = build(arch, tmp_path)
    model.to(device)
    assert_on_device(device, model.named_parameters(), "parameters")
    assert_on_device(device, model.named_buffers(), "buffers")
    src, lengths, prev, _ = on(device, random_batch(dictionary))
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=lengths)
        assert_on_device(device, tensors_in(encoder_out), "encoder output")
        state = {}
        for t in range(2):
            out = model.decoder(prev[:, : t + 1], encoder_out=encoder_out, incremental_state=state)
            lprobs = model.get_normalized_probs(out, log_probs=True)
        assert_on_device(device, tensors_in(out), "decoder output")
        assert_on_device(device, tensors_in(state), "incremental state")
        assert lprobs.device.type == device and lprobs.shape == (src.size(0), 1, len(dictionary))
        new_order = torch.arange(src.size(0), device=device).flip(0)
        model.decoder.reorder_incremental_state_scripting(state, new_order)
        assert_on_device(device, tensors_in(state), "reordered incremental state")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("device", DEVICES)
def test_incremental_decoding_equals_full_forward(arch, device, tmp_path):
    model, dictionary = build(arch, tmp_path)
    model.to(device)
    batch = on(device, random_batch(dictionary))
    assert_incremental_equals_full(model, batch, atol=INCREMENTAL_ATOL[device])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("device", DEVICES)
def test_batched_beam_search_equals_single_sentence(arch, device, tmp_path):
    """fairseq's SequenceGenerator on the device: a padded batch == each sentence alone."""
    model, dictionary = build(arch, tmp_path)
    model.to(device)
    src, lengths, _, _ = on(device, random_batch(dictionary, bsz=4, src_len=6))
    hyps = assert_batched_beam_equals_single(model, dictionary, src, lengths, beam=3)
    assert all(len(h) == 3 for h in hyps)
    assert all(h["tokens"].device.type == device for sentence in hyps for h in sentence)


# ------------------------------------------------------------------------ core_copy's hand-written backward passes
def mixture_inputs():
    """float64 CPU inputs of eq. 11 with words only in the source (0-2), only in V_G (3, 4) and
    in neither part (5), and an upstream gradient."""
    g = torch.Generator().manual_seed(5)
    gate = torch.randn(2, 3, generator=g, dtype=torch.float64) * 2
    log_p_copy = torch.log_softmax(torch.randn(2, 3, 6, generator=g, dtype=torch.float64), -1)
    log_p_gen = torch.log_softmax(torch.randn(2, 3, 6, generator=g, dtype=torch.float64), -1)
    log_p_copy[..., 3:] = float("-inf")
    log_p_gen[..., :1] = float("-inf")
    log_p_gen[..., 5] = float("-inf")
    upstream = torch.randn(2, 3, 6, generator=g, dtype=torch.float64)
    return (gate, log_p_copy, log_p_gen), upstream


# float32 against the float64 reference: the inputs are O(1) log-probs, the results O(1); a few
# float32 roundings (unit roundoff 6e-8) through logsumexp and sigmoid stay far below 1e-5.
BACKWARD_TOL = {torch.float64: dict(atol=1e-10, rtol=1e-10), torch.float32: dict(atol=1e-5, rtol=1e-5)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("device", DEVICES)
def test_log_mixture_backward_equals_autograd(device, dtype):
    """The hand-written backward of eq. 11, run on the device == autograd of the probability-space
    formula log(lambda e^lc + (1 - lambda) e^lg) in float64 on the CPU; 0 where both parts are 0."""
    inputs, upstream = mixture_inputs()
    ours = [t.to(device, dtype, copy=True).requires_grad_() for t in inputs]
    out = log_mixture(*ours)
    out.backward(upstream.to(device, dtype))
    assert out.device.type == device and all(t.grad.device.type == device for t in ours)

    reference = [t.clone().requires_grad_() for t in inputs]
    lam = torch.sigmoid(reference[0]).unsqueeze(-1)
    naive = torch.log(lam * reference[1][..., :5].exp() + (1 - lam) * reference[2][..., :5].exp())
    naive.backward(upstream[..., :5])  # word 5 left out: autograd gives NaN there

    tol = BACKWARD_TOL[dtype]
    torch.testing.assert_close(out[..., :5].detach().cpu().double(), naive.detach(), **tol)
    assert torch.isneginf(out[..., 5]).all()
    torch.testing.assert_close(ours[0].grad.cpu().double(), reference[0].grad, **tol)
    for mine, theirs in zip(ours[1:], reference[1:]):
        torch.testing.assert_close(mine.grad[..., :5].cpu().double(), theirs.grad[..., :5], **tol)
        assert mine.grad[..., 5].eq(0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_log_mixture_passes_gradcheck_on_the_device(device):
    inputs, _ = mixture_inputs()
    finite = [t.clamp_min(-30).to(device, copy=True).requires_grad_() for t in inputs]
    assert torch.autograd.gradcheck(log_mixture, finite)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("device", DEVICES)
def test_masked_log_backward_equals_autograd(device, dtype):
    """log p with gradient 1/p where p > 0 (autograd of log) and 0, not NaN or inf, where p == 0."""
    g = torch.Generator().manual_seed(7)
    p = torch.rand(3, 8, generator=g, dtype=torch.float64)
    p[p < 0.3] = 0.0
    assert p.eq(0).any() and p.gt(0).any()
    upstream = torch.randn(3, 8, generator=g, dtype=torch.float64)
    ours = p.to(device, dtype, copy=True).requires_grad_()
    out = masked_log(ours)
    out.backward(upstream.to(device, dtype))
    assert out.device.type == device and ours.grad.device.type == device

    positive = p.gt(0)
    reference = p[positive].clone().requires_grad_()
    reference.log().backward(upstream[positive])
    tol = BACKWARD_TOL[dtype]
    assert torch.isneginf(out[~positive.to(device)]).all()
    torch.testing.assert_close(out.detach().cpu().double()[positive], p[positive].log(), **tol)
    torch.testing.assert_close(ours.grad.cpu().double()[positive], reference.grad, **tol)
    assert ours.grad.cpu()[~positive].eq(0).all()


# ------------------------------------------------------------------------ fp16 and bf16
# How fairseq runs a model in low precision: --fp16 / --bf16 convert the model (model.half() /
# model.bfloat16()), --amp runs float32 weights under CUDA autocast (fp16). CPU autocast (bf16)
# is the one low-precision path CI can run, and model.bfloat16() runs on the CPU too.
#
# The tiny models' initial weights (+-0.1) give nearly uniform outputs (wean_lstm's log-probs
# spread over 0.00 nats), against which any precision looks exact; scaled x5 they spread over
# 1.3-4.8 nats per row, a distribution worth comparing.
# Tolerance on the log-probs: every layer rounds its output to the format's unit roundoff u
# (fp16 2^-11 = 4.9e-4, bf16 2^-8 = 3.9e-3), a handful of layers (embedding, RNN, attention,
# readout, output projection) of O(1) values add a few u to the logits, and the log-softmax runs
# in float32. Bounds of ~10u: fp16 5e-3, bf16 4e-2. Observed on the CPU (all three models):
# bf16 <= 8.6e-3, fp16 <= 9.7e-4; a wrong mask, cache or device gives O(1) (or -inf where
# float32 is finite).
WEIGHT_SCALE = 5.0
LOW_PRECISION_ATOL = {torch.float16: 5e-3, torch.bfloat16: 4e-2}
PRECISIONS = [  # (device, how, dtype)
    ("cpu", "model", torch.bfloat16),
    ("cpu", "autocast", torch.bfloat16),
    ("cuda", "model", torch.float16),
    ("cuda", "model", torch.bfloat16),
    ("cuda", "autocast", torch.float16),
    ("cuda", "autocast", torch.bfloat16),
]


def precision_params():
    for device, how, dtype in PRECISIONS:
        marks = [] if device == "cpu" else CUDA.marks
        yield pytest.param(device, how, dtype, marks=marks, id="{}-{}-{}".format(device, how, str(dtype)[6:]))


def floating_output_dtypes(model):
    """Record the dtypes of every module's floating-point tensor outputs during a forward pass."""
    seen, handles = set(), []

    def record(_module, _inputs, output):
        seen.update(t.dtype for _, t in tensors_in(output) if t.is_floating_point())

    for module in model.modules():
        handles.append(module.register_forward_hook(record))
    return seen, handles


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("device,how,dtype", precision_params())
def test_low_precision_forward_is_finite_and_close_to_float32(arch, device, how, dtype, tmp_path):
    model, dictionary = build(arch, tmp_path)
    model.to(device)
    src, lengths, prev, _ = on(device, random_batch(dictionary))
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(WEIGHT_SCALE)
        reference = full_forward_log_probs(model, src, lengths, prev)
        low = copy.deepcopy(model)
        seen, handles = floating_output_dtypes(low)
        if how == "model":
            low.to(dtype)
            lprobs = full_forward_log_probs(low, src, lengths, prev)
        else:
            with torch.autocast(device, dtype=dtype):
                lprobs = full_forward_log_probs(low, src, lengths, prev)
        for handle in handles:
            handle.remove()
    assert dtype in seen, "nothing ran in {}: {}".format(dtype, seen)  # it did run in low precision
    assert lprobs.shape == reference.shape and lprobs.device.type == device
    assert not torch.isnan(lprobs).any()
    assert torch.isfinite(lprobs).any(dim=-1).all()  # no row without a word
    finite = torch.isfinite(reference)
    spread = reference.masked_fill(~finite, 0).amax(-1) - reference.masked_fill(~finite, 1e9).amin(-1)
    assert spread.max() > 1.0  # not a near-uniform distribution, which any precision gets right
    assert torch.equal(torch.isfinite(lprobs), finite)  # the same support (core_copy: E, V_G)
    torch.testing.assert_close(lprobs.float()[finite], reference[finite], atol=LOW_PRECISION_ATOL[dtype], rtol=0)


# ------------------------------------------------------------------------ real CLIs on GPUs
def gpu_env(count):
    """CUDA_VISIBLE_DEVICES for a child process: the first ``count`` GPUs this process sees
    (the caller's CUDA_VISIBLE_DEVICES selection, if any, not physical GPUs 0..count-1)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [d.strip() for d in visible.split(",") if d.strip()] if visible else [str(i) for i in range(count)]
    assert len(ids) >= count, (visible, count)
    return {"CUDA_VISIBLE_DEVICES": ",".join(ids[:count])}


# fairseq 0.12's --bf16 implies --tpu (it needs torch_xla), so on GPUs fairseq trains in fp16
# (--fp16: model.half() with fp32 master weights) or mixed precision (--amp: autocast); the
# bfloat16 model itself is covered by test_low_precision_forward_is_finite_and_close_to_float32.
CLI_PRECISIONS = {"fp32": ([], []), "fp16": (["--fp16"], ["--fp16"]), "amp": (["--amp"], [])}


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
@pytest.mark.parametrize("precision", list(CLI_PRECISIONS))
@pytest.mark.parametrize("arch", ARCHS)
def test_fairseq_train_and_generate_on_one_gpu(arch, precision, data_bin, align_table, tmp_path):  # noqa: F811
    """fairseq-train (3 epochs) and fairseq-generate on GPU 0, in fp32, --fp16 and --amp."""
    train_flags, generate_flags = CLI_PRECISIONS[precision]
    save_dir = tmp_path / "ck"
    train = cli("fairseq-train", *distributed_train_args(data_bin, save_dir, arch, align_table,
                                                         "--max-epoch", 3, *train_flags), env=gpu_env(1))
    log = train.stdout + train.stderr
    assert re.search(r"rank +0: capabilities = .* name = ", log), log[-3000:]  # fairseq saw the GPU
    assert "training on 1 devices" in log
    losses = [float(x) for x in re.findall(r"\| train \| epoch \d+ \| loss ([\d.]+)", log)]
    assert len(losses) == 3 and losses[-1] < losses[0], losses
    # fairseq's fp16 / AMP optimizer logs its loss scale on the progress lines ("epoch 001: ...
    # loss_scale=128"); the config dump at the start names loss-scale options in every precision
    scaled = re.search(r"(?m)^.*\bepoch \d+:.*\bloss_scale=", log) is not None
    assert scaled == (precision != "fp32"), [l[-300:] for l in log.splitlines() if "loss_scale=" in l][:3]
    gen = cli("fairseq-generate", data_bin, "--user-dir", USER_DIR, "--path", save_dir / "checkpoint_last.pt",
              "--gen-subset", "test", "--beam", 3, "--batch-size", 5, *generate_flags, env=gpu_env(1))
    hyps = generated_hypotheses(gen.stdout)
    assert sorted(hyps) == list(range(13)) and any(hyps.values())


@TWO_GPUS
@pytest.mark.parametrize("arch", ARCHS)
def test_two_nccl_ranks_equal_one_gpu_with_update_freq_2(arch, data_bin, align_table, tmp_path):  # noqa: F811
    """fairseq-train --distributed-world-size 2 (one process per GPU, NCCL) == one GPU with
    --update-freq 2: the same batches summed per update (see tests/test_distributed.py)."""
    dump = tmp_path / "dump"  # fairseq_wean.distributed's hook: each rank's parameters at the end
    two = cli("fairseq-train", *distributed_train_args(data_bin, tmp_path / "two", arch, align_table,
                                                       "--distributed-world-size", 2),
              env=dict(gpu_env(2), FAIRSEQ_WEAN_DUMP_RANK_PARAMS=str(dump)))
    one = cli("fairseq-train", *distributed_train_args(data_bin, tmp_path / "one", arch, align_table,
                                                       "--update-freq", 2), env=gpu_env(1))
    log = two.stdout + two.stderr
    assert "training on 2 devices" in log and "CUDA enviroments for all 2 workers" in log, log[-3000:]
    assert re.search(r"distributed init \(rank 1\)", log)
    assert "'distributed_backend': 'nccl'" in log
    rank0, rank1 = (torch.load(str(dump / "rank{}.pt".format(r)), map_location="cpu") for r in (0, 1))
    assert rank0["num_updates"] == rank1["num_updates"] > 0
    different = [k for k in rank0["model"] if not torch.equal(rank0["model"][k], rank1["model"][k])]
    assert not different  # DDP all-reduces the gradients: both ranks apply the same update
    two_losses, one_losses = update_losses(log), update_losses(one.stdout + one.stderr)
    assert two_losses and two_losses.keys() == one_losses.keys()
    # GPU sums (atomics in the embedding backward, cuDNN) are not bit-reproducible: 1e-2 on the
    # 3-decimal logged losses, 1e-3 on the weights after 13 Adam updates of lr 0.005.
    for n in two_losses:
        assert abs(two_losses[n] - one_losses[n]) <= 1e-2, (n, two_losses[n], one_losses[n])
    distributed = torch.load(str(tmp_path / "two" / "checkpoint_last.pt"), map_location="cpu", weights_only=False)
    single = torch.load(str(tmp_path / "one" / "checkpoint_last.pt"), map_location="cpu", weights_only=False)
    assert distributed["model"].keys() == single["model"].keys()
    for k in single["model"]:
        torch.testing.assert_close(distributed["model"][k], single["model"][k], rtol=1e-3, atol=1e-3, msg=k)
