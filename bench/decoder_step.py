"""A model's own compute, in one process: a training step and incremental decoding, at bench.run's sizes.

    python -m bench.decoder_step [--arch word_attn_gated] [--repeats 5]

Built in this process from random weights (2+2 layers, 256 units, 8,000 words, as ``bench.run``),
without fairseq-train, data loading or beam search: the best process CPU time (one thread) of
``--repeats`` calls of

* a training step: forward and backward of a batch of 100 sentences, source and target 20 tokens;
* incremental decoding: 16 decoder steps of 5 rows (beam 5, one sentence) and of 320 rows (beam 5,
  64 sentences), as fairseq's search calls the decoder.

For comparing two versions of a model's code, run this file with each checkout's package first on
the path, alternately: ``PYTHONPATH=CHECKOUT python bench/decoder_step.py``. Machine noise between
two processes is smaller here than between two ``bench.run`` runs, whose ratios move with the lstm
anchor.
"""
import argparse
import time

import torch

from fairseq_wean.errors import at_least
from fairseq_wean.cli.options import once  # each option given once (argparse keeps the last)


class _Task:
    def __init__(self, dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def build(arch, vocab):
    from fairseq.data import Dictionary
    from fairseq.models import ARCH_MODEL_REGISTRY

    import fairseq_wean  # noqa: F401  (registers the models)

    dictionary = Dictionary()
    for i in range(vocab - dictionary.nspecial):
        dictionary.add_symbol("w{}".format(i))
    dictionary.finalize(padding_factor=1)
    args = argparse.Namespace(arch=arch, encoder_embed_dim=256, decoder_embed_dim=256, embed_dim=256,
                              encoder_hidden_size=256, decoder_hidden_size=256, encoder_layers=2,
                              decoder_layers=2, decoder_out_embed_dim=256, dropout=0.1)
    cls = ARCH_MODEL_REGISTRY[arch]
    from fairseq.models import ARCH_CONFIG_REGISTRY

    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(0)
    return cls.build_model(args, _Task(dictionary)), dictionary


def best_time(fn, repeats):
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.decoder_step", description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", default="word_attn_gated", help="wean_lstm or word_attn_gated (core_copy needs "
                                                             "its alignment table: use bench.profile)")
    p.add_argument("--repeats", type=at_least(1), default=5)
    cfg = once(p).parse_args(argv)
    torch.set_num_threads(1)
    model, d = build(cfg.arch, 8000)
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(d.nspecial, len(d), (320, 20), generator=gen)
    src[:, -1] = d.eos()
    lengths = torch.full((320,), 20)
    prev = torch.randint(d.nspecial, len(d), (320, 20), generator=gen)

    def train():
        model.train()
        model.zero_grad(set_to_none=True)
        out = model(src[:100], lengths[:100], prev[:100])[0]
        out.float().logsumexp(-1).sum().backward()

    def decode(rows):
        model.eval()
        with torch.no_grad():
            enc = model.encoder(src[:rows], src_lengths=lengths[:rows])
            state = {}
            for t in range(16):
                model.decoder(prev[:rows, : t + 1], enc, incremental_state=state)

    print("{}: training step {:.3f} s; 16 decoder steps of 5 rows {:.4f} s, of 320 rows {:.3f} s "
          "(best of {}, process CPU time, one thread)".format(
              cfg.arch, best_time(train, cfg.repeats), best_time(lambda: decode(5), cfg.repeats * 2),
              best_time(lambda: decode(320), max(1, cfg.repeats // 2)), cfg.repeats))


if __name__ == "__main__":
    main()
