"""The parts behind issue 42's two speed-ups, each alone, in one process (one thread, process CPU time):

    python -m bench.additive_parts [--repeats 5]

* element-wise costs per float32 element (4M elements): ``torch.tanh``, :func:`attention.tanh_`
  (2 sigmoid(2x) - 1), ``torch.sigmoid``, ``tanh_backward``, a multiplication;
* ``q + k`` of a core_copy training batch's size (66 x 29 x 31 x 512) into a fresh tensor and
  into one already in use (a fresh tensor that size is paged in by the kernel);
* the additive score v^T tanh(q + k) of that size, forward and backward: built whole as before
  (``(q + k).tanh_().matmul(v)`` under autograd) and in blocks (:func:`attention.additive_score`);
* the bidirectional 2-layer GRU encoder (66 x 31 x 256, lengths 23-31), forward and backward: on
  the packed batch (torch) and on the right-padded one (``layers.GRU.forward`` with lengths).

The best of ``--repeats``, in milliseconds (ns per element for the first group).
"""
import argparse
import time

import torch

from fairseq_wean.errors import at_least
from fairseq_wean.cli.options import once  # each option given once (argparse keeps the last)


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=at_least(1), default=5)
    args = once(parser).parse_args(argv)
    torch.set_num_threads(1)
    from fairseq_wean.modules.attention import additive_score, tanh_
    from fairseq_wean.modules.layers import RNN

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1 << 22, generator=gen)
    y = torch.empty_like(x)
    per_element = {
        "torch.tanh": lambda: torch.tanh(x, out=y),
        "attention.tanh_": lambda: tanh_(y.copy_(x)),
        "copy (subtract from the line above)": lambda: y.copy_(x),
        "torch.sigmoid": lambda: torch.sigmoid(x, out=y),
        "tanh_backward": lambda: torch.ops.aten.tanh_backward(x, y),
        "multiplication": lambda: torch.mul(x, y, out=y),
    }
    for name, fn in per_element.items():
        print("{:40s} {:6.2f} ns per element".format(name, 1e9 * best(fn, args.repeats) / x.numel()))

    bsz, tgt, src, hidden = 66, 29, 31, 512
    q = torch.randn(bsz, tgt, hidden, generator=gen, requires_grad=True)
    k = torch.randn(bsz, src, hidden, generator=gen, requires_grad=True)
    v = torch.randn(hidden, generator=gen, requires_grad=True)
    grad = torch.randn(bsz, tgt, src, generator=gen)
    used = torch.empty(bsz, tgt, src, hidden)
    with torch.no_grad():
        print("{:40s} {:6.1f} ms".format("q + k into a fresh tensor", 1e3 * best(
            lambda: q.unsqueeze(2) + k.unsqueeze(1), args.repeats)))
        print("{:40s} {:6.1f} ms".format("q + k into a tensor in use", 1e3 * best(
            lambda: torch.add(q.unsqueeze(2), k.unsqueeze(1), out=used), args.repeats)))
    whole = lambda: (q.unsqueeze(2) + k.unsqueeze(1)).tanh_().matmul(v).backward(grad)  # noqa: E731
    blocked = lambda: additive_score(q, k, v).backward(grad)  # noqa: E731
    print("{:40s} {:6.1f} ms".format("score forward+backward, whole", 1e3 * best(whole, args.repeats)))
    print("{:40s} {:6.1f} ms".format("score forward+backward, in blocks", 1e3 * best(blocked, args.repeats)))

    torch.manual_seed(0)
    gru = RNN("gru", 256, 256, num_layers=2, bidirectional=True, batch_first=True)
    inputs = torch.randn(bsz, src, 256, generator=gen, requires_grad=True)
    lengths = torch.randint(src - 8, src + 1, (bsz,), generator=gen)
    lengths[0] = src

    def packed():
        seq = torch.nn.utils.rnn.pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
        out, final = gru(seq)
        out, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src)
        (out.sum() + final.sum()).backward()

    def padded():
        out, final = gru(inputs, lengths=lengths)
        (out.sum() + final.sum()).backward()

    print("{:40s} {:6.1f} ms".format("GRU encoder forward+backward, packed", 1e3 * best(packed, args.repeats)))
    print("{:40s} {:6.1f} ms".format("GRU encoder forward+backward, padded", 1e3 * best(padded, args.repeats)))


if __name__ == "__main__":
    main()
