"""How far a model is from the machine's limit: matrix-product FLOPs per target token, and the peak
matrix-product FLOP/s of one thread, for ``bench.run``'s utilisation column.

    python -m bench.flops                    # the peak of this CPU (float32; bfloat16 where native)
    python -m bench.flops --count lstm --data-bin DIR [--table A]   # FLOPs per target token

* :func:`training_flops_per_token`: the model is built as ``bench.run`` trains it (same arguments,
  through fairseq's task), and one training step per batch (criterion forward, loss, backward) runs
  under ``torch.utils.flop_counter.FlopCounterMode``, which counts 2*M*N*K for every matrix product
  (``mm``, ``addmm``, ``bmm``, ``baddbmm``) that torch dispatches, in the forward and the backward.
  Element-wise work (tanh, softmax, the copy mixture) is not counted: the figure is the work a
  BLAS could do at its peak. oneDNN is switched off while counting: its fused ``nn.LSTM`` kernel is
  invisible to the counter, and without it torch runs the same products as ``mm``/``addmm`` (the
  count is of the model's arithmetic, not of the kernel that runs it when timed).
* :func:`peaks`: the best rate of ``repeats`` square products of sides 256, 512 and 1024 in one
  thread (process CPU time), float32 and, where the CPU has native bfloat16, bfloat16.

Utilisation = the model's training FLOP/s (FLOPs per target token x fairseq-train's measured
target tokens/s) / the peak, both measured in the same run.
"""
import argparse
import importlib
import time

import torch

from fairseq_wean.errors import at_least
from fairseq_wean.cli.options import once, quantity  # each option given once (argparse keeps the last)


def missing():
    """None where this torch counts FLOPs; else the one line that says why not (torch < 2.1 has no
    ``torch.utils.flop_counter``)."""
    try:
        importlib.import_module("torch.utils.flop_counter")
    except ImportError:
        return "FLOP counting needs torch >= 2.1 (torch.utils.flop_counter); this is torch {}".format(torch.__version__)
    return None


def count_matmul_flops(fn):
    """(result of fn(), FLOPs of the matrix products fn ran, forward and backward)."""
    if missing():
        raise RuntimeError(missing())
    from torch.utils.flop_counter import FlopCounterMode

    with torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as counter:
        result = fn()
    return result, counter.get_total_flops()


def training_flops_per_token(model, criterion, samples):
    """Matrix-product FLOPs of one training step (forward, loss, backward) per target token,
    over ``samples`` (fairseq batches), in training mode. The gradients are left in the model."""
    model.train()
    flops = tokens = 0
    for sample in samples:
        model.zero_grad(set_to_none=True)

        def step():
            loss, sample_size, _ = criterion(model, sample)
            (loss / sample_size).backward()

        _, n = count_matmul_flops(step)
        flops += n
        tokens += sample["ntokens"]
    model.zero_grad(set_to_none=True)
    return flops / tokens


def peak_matmul_flops(dtype=torch.float32, size=1024, repeats=8):
    """FLOP/s of the fastest of ``repeats`` ``size x size`` matrix products in this thread's CPU time
    (after one warm-up product). Budgeted in products, not in seconds."""
    a = torch.randn(size, size).to(dtype)
    b = torch.randn(size, size).to(dtype)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        torch.mm(a, b)
        best = min(best, time.process_time() - start)
    return 2.0 * size ** 3 / max(best, 1e-9)


def peaks(threads=1, sizes=(256, 512, 1024)):
    """{"float32": FLOP/s, "bfloat16": FLOP/s or None (no native bfloat16 on this CPU)}: the best of
    square products of each of ``sizes``, measured with ``threads`` threads (the benchmark's processes
    run with one)."""
    from fairseq_wean import cpu

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return {"float32": max(peak_matmul_flops(torch.float32, size) for size in sizes),
                "bfloat16": max(peak_matmul_flops(torch.bfloat16, size) for size in sizes)
                if cpu.native_bf16() else None}
    finally:
        torch.set_num_threads(previous)


def count_model(name, data_bin, table, max_tokens, batches):
    """FLOPs per target token of ``bench.run``'s model ``name`` on ``batches`` training batches of
    ``data_bin`` spread over the epoch (fairseq's batches go from the shortest sentences to the
    longest)."""
    from bench import profile

    task, model, criterion = profile.build(name, data_bin, table, max_tokens)
    every = profile.batches(task, "train", max_tokens=max_tokens)
    step = max(1, len(every) // batches)
    return training_flops_per_token(model, criterion, every[::step][:batches])


def size_list(text):
    """``--sizes``: a comma list of matrix sides >= 1, each once (argparse's one-line error otherwise)."""
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or not all(items):
        raise argparse.ArgumentTypeError("expected a comma list of sizes, got {!r}".format(text))
    sizes = tuple(_SIDE(x) for x in items)
    if len(set(sizes)) < len(sizes):
        raise argparse.ArgumentTypeError("a size given twice in {}: each once".format(text))
    return sizes


# the largest matrix side timed: three float32 matrices of 8192^2 are 800 MB (1e8 asked for 4e16 bytes)
MAX_SIDE = 8192
_SIDE = at_least(1, high=MAX_SIDE)
size_list.range = _SIDE.range


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.flops", description=__doc__.split("\n\n")[0])
    from bench import run as bench_run

    p.add_argument("--threads", type=quantity("threads"), default=1)
    p.add_argument("--count", metavar="MODEL", choices=sorted(bench_run.MODELS),
                   help="instead: print the FLOPs per target token of one of bench.run's models (with --data-bin, "
                        "--table)")
    p.add_argument("--data-bin")
    p.add_argument("--table", default="", help="core_copy's alignment table")
    p.add_argument("--max-tokens", type=bench_run.fairseq_ranged("max_tokens"), default=2048)
    p.add_argument("--batches", type=at_least(1), default=6)
    p.add_argument("--sizes", type=size_list, default=(256, 512, 1024),
                   help="sides of the square products whose best rate is the peak (default 256,512,1024)")
    cfg = once(p).parse_args(argv)
    torch.set_num_threads(cfg.threads)
    if cfg.count:
        flops = count_model(cfg.count, cfg.data_bin, cfg.table or None, cfg.max_tokens, cfg.batches)
        print("flops per target token: {:.6e}".format(flops))
        return
    from fairseq_wean import cpu

    print(cpu.describe())
    for dtype, value in peaks(cfg.threads, cfg.sizes).items():
        print("peak {}: {}".format(dtype, "{:.6e} FLOP/s ({:.1f} GFLOP/s)".format(value, value / 1e9) if value
                                   else "none (no native support on this CPU)"))


if __name__ == "__main__":
    main()
