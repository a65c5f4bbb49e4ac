#!/usr/bin/env python
"""Parameter counts of the three word-attention ablations, next to Table 3 of Wu et al.

    python examples/word_attention_parameter_counts.py [--arch word_attn_gated_iwslt]
        [--src-vocab 32010] [--tgt-vocab 22823]

Table 3 (IWSLT'14 De-En, word level) reports 24.3M (2-2 RNNsearch), 24.9M (+Word Attention)
and 25.6M (+Contextual Gates): +0.6M and +0.7M. The poster states neither its layer sizes nor
its vocabularies, so the totals depend on guesses; the differences depend only on the
layer sizes of the preset (see ``ablation_parameter_counts``).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fairseq_wean  # noqa: E402,F401  (registers the architectures)
from fairseq_wean.errors import at_least  # noqa: E402
from fairseq_wean.models.word_attn_gated import WORD_ATTENTION_CHOICES, WordAttnGatedModel  # noqa: E402

# the largest dictionary counted: a model of it is built (embeddings of --src-vocab and --tgt-vocab
# rows, an output layer of --tgt-vocab); 1e11 rows asked for terabytes
MAX_VOCAB = 1000000

# Table 3's parameter counts (word-level column) and their differences.
PAPER_TABLE3_WORD = {"none": 24.3e6, "ungated": 24.9e6, "gated": 25.6e6}


def ablation_parameter_counts(arch="word_attn_gated_iwslt", src_vocab=32010, tgt_vocab=22823, **overrides):
    """{word_attention: parameter count} of the three ablations of ``arch``'s preset.

    The default vocabularies are the word-level IWSLT'14 De-En ones of Ranzato et al. (2016),
    used by the NPMT baseline of Table 3; the poster does not state its own, so only the
    differences (which do not depend on the vocabularies) compare with Table 3's
    +0.6M (word attention) and +0.7M (gates).
    """
    from fairseq.data import Dictionary
    from fairseq.models import ARCH_CONFIG_REGISTRY

    def dictionary(size):
        d = Dictionary()
        for i in range(size - len(d)):
            d.add_symbol("w{}".format(i))
        return d

    class _Task:
        source_dictionary = dictionary(src_vocab)
        target_dictionary = dictionary(tgt_vocab)

    counts = {}
    for mode in WORD_ATTENTION_CHOICES:
        args = argparse.Namespace(arch=arch, word_attention=mode, **overrides)
        ARCH_CONFIG_REGISTRY[arch](args)
        model = WordAttnGatedModel.build_model(args, _Task)
        counts[mode] = sum(p.numel() for p in model.parameters())
    return counts


def word_attention_presets():
    """The architectures of the word_attn_gated model (fairseq's registry), sorted."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    return sorted(name for name, cls in ARCH_MODEL_REGISTRY.items() if cls is WordAttnGatedModel)


ROWS = [("none", "RNNsearch"), ("ungated", "+Word Attention"), ("gated", "+Contextual Gates")]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python examples/word_attention_parameter_counts.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="word_attn_gated_iwslt", choices=word_attention_presets(),
                        help="preset whose sizes are counted")
    parser.add_argument("--src-vocab", type=at_least(4, high=MAX_VOCAB), default=32010,
                        help="source dictionary size, fairseq's 4 special symbols included")
    parser.add_argument("--tgt-vocab", type=at_least(4, high=MAX_VOCAB), default=22823,
                        help="target dictionary size, fairseq's 4 special symbols included")
    from fairseq_wean.cli import options

    args = options.once(parser).parse_args(argv)
    counts = ablation_parameter_counts(args.arch, args.src_vocab, args.tgt_vocab)
    with_paper = args.arch.endswith("_iwslt")  # Table 3 is the 2-layer IWSLT setting
    print("| {} | parameters | difference |{}".format(
        args.arch, " Table 3 (word) | difference |" if with_paper else ""))
    print("|---|---:|---:|" + ("---:|---:|" if with_paper else ""))
    previous = None
    for mode, name in ROWS:
        ours = counts[mode]
        row = "| {} | {:,} ({:.1f}M) | {} |".format(
            name, ours, ours / 1e6, "" if previous is None else "+{:.2f}M".format((ours - counts[previous]) / 1e6))
        if with_paper:
            paper = PAPER_TABLE3_WORD[mode]
            paper_diff = "" if previous is None else "+{:.1f}M".format((paper - PAPER_TABLE3_WORD[previous]) / 1e6)
            row += " {:.1f}M | {} |".format(paper / 1e6, paper_diff)
        print(row)
        previous = mode

if __name__ == "__main__":
    main()
