#!/usr/bin/env python
"""Draw Figure 3 of Wu et al. (word attention with contextual gates) for one sentence.

Figure 3 shows a target sentence with every word shaded by 1 - o_i, the share of the word
context c^beta_i in what the decoder reads at that step ("the deeper blue color refers to
larger value of 1 - o_i, which means the decoder concentrates more on word context").
o_i is a vector (one gate per unit of c^alpha_i); a word's value is the mean of 1 - o_i
over the units. Below the sentence the script draws the two attention maps of the same
steps, alpha (hidden attention) and beta (word attention).

    python examples/word_attention_figure3.py --path checkpoints/checkpoint_best.pt --data data-bin \\
        --source "ein kleines beispiel ." [--target "a small example ."] --output fig3.png

Without ``--target`` the target is the model's own beam-search output. Tokens are shown as
they are in the dictionary (BPE pieces stay split). The values are also printed, one
``word<TAB>1-o`` line per target position (EOS included).
"""
import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    import_plugin()
    from fairseq_wean.cli import options
    from fairseq_wean.errors import FairseqWeanError, at_least
    from fairseq_wean.option_ranges import GENERATION_RANGES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", required=True, help="checkpoint of a --word-attention gated model")
    parser.add_argument("--source", required=True, help="source sentence, tokenized as the training data")
    parser.add_argument("--target", help="target sentence to force-decode (default: beam search output)")
    parser.add_argument("--data", help="data-bin folder with the dictionaries (required: the folder a checkpoint "
                        "names is never read)")
    parser.add_argument("--beam", type=at_least(*GENERATION_RANGES["beam"]), default=5, help="beam size when no --target is given")
    parser.add_argument("--output", default="figure3.png", help="PNG file to write")
    parser = options.once(parser)
    args = parser.parse_args(argv)
    named = options.given(parser, args)
    for option, rule in NEEDS.items():  # an option that does nothing here is refused, before any work
        if option in named and not rule(named):
            raise FairseqWeanError(NO_EFFECT[option])
    for option in ("--source", "--target"):
        value = getattr(args, option[2:])
        if value is not None and not value.split():
            raise FairseqWeanError("{} is empty: give a sentence, tokenized as the training data".format(option))
    return args


# option -> when it acts (given the options named), and the line that refuses it where it does not; the
# options that act in every combination (tests/test_example_scripts.py: every option is in one of the two)
NEEDS = {"--beam": lambda named: "--target" not in named}
ALWAYS = {"--path", "--source", "--target", "--data", "--output"}
NO_EFFECT = {"--beam": "--beam sets the beam search that makes the target, and --target gives the target: "
                       "drop one of them"}


def import_plugin():
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    import fairseq_wean  # noqa: F401  (registers the models; safe checkpoint loading; one-line errors)


def require_data(data, path):
    """The data folder the dictionaries are read from: the one given, never the folder stored in the
    checkpoint (it may be another machine's, or a planted one)."""
    if not data:
        from fairseq_wean.errors import FairseqWeanError

        raise FairseqWeanError("--data is required: the data-bin folder with the dictionaries {} was trained with (the "
                               "folder a checkpoint names is never read)".format(path))
    return data


def load_model(path, data, **overrides):
    """The gated model of checkpoint ``path`` and its task, with the dictionaries of ``data`` (required);
    ``overrides``: more of its settings to replace (``arg_overrides`` of fairseq's loader)."""
    import_plugin()
    from fairseq import checkpoint_utils

    overrides["data"] = require_data(data, path)
    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
    model = models[0]
    model.eval()
    if getattr(model.decoder, "gate", None) is None:
        from fairseq_wean.errors import FairseqWeanError

        raise FairseqWeanError(
            "{} has no contextual gates (--word-attention {}); Figure 3 needs a gated model".format(
                path, getattr(model.decoder, "word_attention_mode", "?")))
    return model, task


def gates_for_sentence(model, task, source, target=None, beam=5):
    """Returns (target tokens incl. EOS, 1 - o_i averaged over units: T, alpha: T x S, beta: T x S)."""
    import torch
    from fairseq.sequence_generator import SequenceGenerator

    src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
    src = src_dict.encode_line(source, add_if_not_exist=False, append_eos=True).long().unsqueeze(0)
    lengths = torch.tensor([src.size(1)])
    with torch.no_grad():
        if target is None:
            generator = SequenceGenerator([model], tgt_dict, beam_size=beam, max_len_b=2 * src.size(1) + 10)
            hypo = generator.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})[0][0]
            tgt = hypo["tokens"].unsqueeze(0)
        else:
            tgt = tgt_dict.encode_line(target, add_if_not_exist=False, append_eos=True).long().unsqueeze(0)
        prev = torch.cat([tgt.new_full((1, 1), tgt_dict.eos()), tgt[:, :-1]], dim=1)  # y_{i-1}
        _, extra = model(src, lengths, prev)
    one_minus_gate = (1.0 - extra["gate"][0]).mean(dim=-1)  # T
    src_words = [src_dict[t] for t in src[0].tolist()]
    tgt_words = [tgt_dict[t] for t in tgt[0].tolist()]
    return src_words, tgt_words, one_minus_gate, extra["attn"][0][0], extra["word_attn"][0]


def draw(src_words, tgt_words, one_minus_gate, alpha, beta, output):
    import logging

    # before the import, which logs its own DEBUG lines (fairseq's logging set-up lets them through)
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("Blues")
    width = max(6.0, 0.7 * len(tgt_words))
    fig = plt.figure(figsize=(width, 2.0 + 0.35 * len(src_words) * 2))
    grid = fig.add_gridspec(3, 1, height_ratios=[1, 2 + len(src_words) / 4, 2 + len(src_words) / 4])

    strip = fig.add_subplot(grid[0])
    strip.imshow(one_minus_gate.unsqueeze(0).numpy(), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i, (word, value) in enumerate(zip(tgt_words, one_minus_gate.tolist())):
        strip.text(i, 0, "{}\n{:.2f}".format(word, value), ha="center", va="center",
                   color="white" if value > 0.6 else "black", fontsize=9)
    strip.set_xticks([])
    strip.set_yticks([])
    strip.set_title("1 - o_i per target word (darker: more word context)")

    for row, (weights, title) in enumerate([(alpha, "hidden attention alpha"), (beta, "word attention beta")], 1):
        ax = fig.add_subplot(grid[row])
        ax.imshow(weights.t().numpy(), cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(tgt_words)))
        ax.set_xticklabels(tgt_words, rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(src_words)))
        ax.set_yticklabels(src_words, fontsize=8)
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    from fairseq_wean.textio import atomic_output

    with atomic_output(output, what="--output", mode="wb") as png:  # no half-written PNG on failure
        fig.savefig(png, format="png", dpi=100)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    import_plugin()
    from fairseq_wean.textio import check_output

    check_output(args.output, (args.path,), "--output")  # before the model is loaded, not after
    require_data(args.data, args.path)
    model, task = load_model(args.path, args.data)
    src_words, tgt_words, one_minus_gate, alpha, beta = gates_for_sentence(
        model, task, args.source, args.target, args.beam)
    for word, value in zip(tgt_words, one_minus_gate.tolist()):
        print("{}\t{:.4f}".format(word, value))
    draw(src_words, tgt_words, one_minus_gate, alpha, beta, args.output)
    print("wrote {}".format(args.output), file=sys.stderr)


if __name__ == "__main__":
    main()
