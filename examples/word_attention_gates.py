#!/usr/bin/env python
"""How a trained gated model splits hidden and word context over a whole subset (Wu et al., section 4).

The contextual gate o_i (``fairseq_wean/modules/contextual_gate.py``) weighs the hidden context
c^alpha_i by o_i and the word context by 1 - o_i, unit by unit. Figure 3 of the poster
(``examples/word_attention_figure3.py``) shows 1 - o_i for one sentence; this script measures it
for every target position of a binarized subset, teacher-forced on the references (the
decoder reads the reference's previous word, as in training), padding left out:

    python examples/word_attention_gates.py --path checkpoints/checkpoint_best.pt \\
        --data data-bin [--subset valid] [--max-tokens 4000]

It prints one JSON object: ``positions`` (target positions, EOS included), ``sentences``,
``mean_word_share`` (1 - o_i averaged over units, then over positions), ``p10`` / ``p50`` /
``p90`` (percentiles of that per-position value), ``word_context_dominant_pct`` (positions where
it is above 0.5) and ``saturated_units_pct`` (gate units with o < 0.1 or o > 0.9, over all units of
all positions: how often the gate makes a hard choice).
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from fairseq_wean.cli import options
    from fairseq_wean.errors import at_least
    from fairseq_wean.option_ranges import GENERATION_RANGES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", required=True, help="checkpoint of a --word-attention gated model")
    parser.add_argument("--data", help="data-bin folder (required: the folder a checkpoint names is never read)")
    parser.add_argument("--subset", default="valid", help="binarized subset to measure (default: valid)")
    parser.add_argument("--max-tokens", type=at_least(*GENERATION_RANGES["max_tokens"]), default=4000, help="tokens per batch (default: 4000)")
    return options.once(parser).parse_args(argv)


def binarized_subsets(data):
    """The subsets of the data folder ``data`` (fairseq's ``SUBSET.SRC-TGT.LANG.{bin,idx}`` or raw
    ``SUBSET.SRC-TGT.LANG`` files), by name: what ``--subset`` may name."""
    import re

    names = os.listdir(data) if os.path.isdir(data) else []
    pattern = re.compile(r"^([^.]+)\.[^.]+-[^.]+\.[^.]+(\.(bin|idx))?$")
    return sorted({m.group(1) for m in map(pattern.match, names) if m})


def require_subset(data, subset):
    """Refuse (one line) a ``--subset`` with no files in ``data``, before the model is loaded (fairseq's
    loader would end in a ``Dataset not found`` traceback after it)."""
    from fairseq_wean.errors import FairseqWeanError

    if not os.path.isdir(data):
        raise FairseqWeanError("--data {} is not a folder: give the data-bin folder".format(data))
    found = binarized_subsets(data)
    if subset not in found:
        raise FairseqWeanError("--subset {}: {} has no such subset (it has: {})".format(
            subset, data, ", ".join(found) or "none"))


def gate_stats(model, batches, pad):
    """Statistics of 1 - o_i over the non-padding target positions of ``batches``.

    ``batches``: fairseq samples (``net_input`` with ``src_tokens``, ``src_lengths``,
    ``prev_output_tokens``; ``target`` B x T, padded with ``pad``). Returns the dict the script
    prints (see the module docstring); padded positions count nowhere.
    """
    import torch

    shares, saturated, units, sentences = [], 0, 0, 0
    model.eval()
    with torch.no_grad():
        for sample in batches:
            net_input = sample["net_input"]
            _, extra = model(net_input["src_tokens"], net_input["src_lengths"], net_input["prev_output_tokens"])
            gate = extra["gate"].float()  # B x T x C
            real = sample["target"].ne(pad)  # B x T
            o = gate[real]  # positions x C
            shares.append((1.0 - o).mean(dim=-1))
            saturated += int(((o < 0.1) | (o > 0.9)).sum())
            units += o.numel()
            sentences += sample["target"].size(0)
    share = torch.cat(shares) if shares else torch.zeros(0)
    if share.numel() == 0:
        from fairseq_wean.errors import FairseqWeanError

        raise FairseqWeanError("no target positions to measure: the subset is empty")
    p10, p50, p90 = torch.quantile(share.double(), torch.tensor([0.1, 0.5, 0.9], dtype=torch.double)).tolist()
    return {
        "sentences": sentences,
        "positions": int(share.numel()),
        "mean_word_share": round(float(share.double().mean()), 4),
        "p10": round(p10, 4),
        "p50": round(p50, 4),
        "p90": round(p90, 4),
        "word_context_dominant_pct": round(100.0 * float((share > 0.5).double().mean()), 2),
        "saturated_units_pct": round(100.0 * saturated / units, 2),
    }


def main(argv=None):
    args = parse_args(argv)
    sys.path.insert(0, REPO)
    sys.path.insert(0, os.path.join(REPO, "examples"))
    from word_attention_figure3 import import_plugin, load_model, require_data  # refuses a model without gates

    import_plugin()  # the one-line error of a FairseqWeanError
    require_data(args.data, args.path)  # before anything is loaded
    require_subset(args.data, args.subset)

    # measuring needs no decoding: without these, a translation_with_metrics checkpoint would want
    # its --eval-refs to be line-aligned with whichever subset is loaded (and, with no metric, a
    # best-checkpoint metric that is logged)
    no_metrics = dict(eval_bleu=False, eval_sari=False, eval_rouge=False, eval_refs=None, eval_orig=None,
                      best_checkpoint_metric="loss", maximize_best_checkpoint_metric=False)
    model, task = load_model(args.path, args.data, **no_metrics)
    try:
        task.load_dataset(args.subset)
    except FileNotFoundError as exc:  # its files are there, for another language pair than the model's
        from fairseq_wean.errors import FairseqWeanError

        raise FairseqWeanError("--subset {}: {}".format(args.subset, exc)) from None
    iterator = task.get_batch_iterator(
        dataset=task.dataset(args.subset), max_tokens=args.max_tokens, required_batch_size_multiple=1,
    ).next_epoch_itr(shuffle=False)  # every sentence: fairseq_wean.compat keeps the last batch fairseq drops
    stats = gate_stats(model, iterator, task.target_dictionary.pad())
    print(json.dumps(dict({"path": args.path, "subset": args.subset}, **stats)))


if __name__ == "__main__":
    main()
