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
from fairseq_wean.models.word_attn_gated import PAPER_TABLE3_WORD, ablation_parameter_counts  # noqa: E402

ROWS = [("none", "RNNsearch"), ("ungated", "+Word Attention"), ("gated", "+Contextual Gates")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="word_attn_gated_iwslt", help="preset whose sizes are counted")
    parser.add_argument("--src-vocab", type=int, default=32010, help="source dictionary size")
    parser.add_argument("--tgt-vocab", type=int, default=22823, help="target dictionary size")
    args = parser.parse_args(argv)
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
