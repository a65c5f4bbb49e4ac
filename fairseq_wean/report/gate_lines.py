"""``fairseq-generate --print-gates``: a ``G-<id>`` line per sentence with each output token's gate.

fairseq-generate prints per hypothesis ``H-`` (text), ``D-`` (detokenized), ``P-`` (positional
log2-probabilities) and, with ``--print-alignment``, ``A-`` lines; the decoder's other outputs are
dropped by SequenceGenerator. With ``--print-gates`` (added here to fairseq's generation options)
it also prints, for the best hypothesis of each sentence,

    G-<id>\\t<g_1> <g_2> ... <g_T>

one value per target token including ``</s>``, aligned with the ``P-`` line:

* ``core_copy``: the copy gate lambda_t (Cao et al., AAAI 2017, eq. 10), ``extra["copy_gate"]``;
* ``word_attn_gated`` with ``--word-attention gated``: the contextual gate o_t averaged over its
  units (Wu et al.), ``extra["gate"]``;
* other models (no gate; fairseq's own ``lstm`` and ``transformer`` included): ``--print-gates`` is
  refused in one line before the first batch is decoded (it would print nothing).

The gates are read from one teacher-forced pass of the (first) model over the source and the
finished hypothesis, in the batch fairseq-generate just decoded. The models' incremental decoding
equals their full forward pass (tested per model), so these are the values beam search used.
``fairseq-wean-report`` shows them when hovering a token.

How: the option is added to fairseq's generation options when the plugin is imported
(:func:`fairseq_wean.patching.add_generation_argument`; fairseq imports ``--user-dir`` before it
builds its parser). Only when the option is given are ``fairseq_cli.generate._main`` (to learn
the output stream) and ``FairseqTask.inference_step`` (to compute and print the gates) wrapped;
without it nothing of fairseq's behaviour changes.
"""
import argparse

from fairseq_wean.patching import add_generation_argument, note, status, wrap_once

NAME = "report/gate_lines (--print-gates)"

_STATE = {"output_file": None, "quiet": False}


def gate_values(extra):
    """``B x T`` gate values from a decoder's ``extra`` output, or None for a model without one
    (also where ``extra`` is no dict: fairseq's ``lstm`` returns its attention tensor, or None)."""
    if not isinstance(extra, dict):
        return None
    if extra.get("copy_gate") is not None:  # core_copy: [B x T]
        return extra["copy_gate"][0].float()
    if extra.get("gate") is not None:  # word_attn_gated: B x T x C
        return extra["gate"].float().mean(dim=-1)
    return None


def hypothesis_gates(model, net_input, hypo_tokens, pad, eos):
    """Gates of each sentence's hypothesis: a list of 1-D tensors (len = that hypothesis' tokens,
    ``</s>`` included), or None when the model has no gate.

    ``hypo_tokens``: one 1-D tensor per sentence of the batch, ending with ``</s>`` (as
    SequenceGenerator returns them); the decoder input is ``</s>`` followed by all but the last.
    """
    import torch

    src_tokens = net_input["src_tokens"]
    bsz, max_len = len(hypo_tokens), max(len(t) for t in hypo_tokens)
    prev_output_tokens = src_tokens.new_full((bsz, max_len), pad)
    for i, tokens in enumerate(hypo_tokens):
        prev_output_tokens[i, 0] = eos
        prev_output_tokens[i, 1:len(tokens)] = tokens[:-1].to(src_tokens.device)
    with torch.no_grad():
        _, extra = model(src_tokens, net_input["src_lengths"], prev_output_tokens)
    gates = gate_values(extra)
    if gates is None:
        return None
    return [gates[i, :len(tokens)].cpu() for i, tokens in enumerate(hypo_tokens)]


def check_model_has_gate(model, net_input, pad, eos):
    """--print-gates on a model without a gate (fairseq's lstm and transformer, wean_lstm,
    word_attn_gated without gates) would print nothing: one line, before the first batch is decoded
    (a teacher-forced step of ``</s>`` over the batch's sources asks the model)."""
    import torch

    from fairseq_wean.errors import FairseqWeanError

    probe = [torch.tensor([eos]) for _ in range(len(net_input["src_tokens"]))]
    if hypothesis_gates(model, net_input, probe, pad, eos) is None:
        raise FairseqWeanError(
            "--print-gates does nothing here: the model ({}) has no gate to print (G- lines come from core_copy's "
            "copy gate and word_attn_gated's contextual gates); drop --print-gates".format(type(model).__name__))


def _wrapped_inference_step(original):
    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        out, dictionary = _STATE["output_file"], self.target_dictionary
        if out is not None and not _STATE["quiet"] and "src_tokens" in sample["net_input"] \
                and not _STATE.get("model_checked"):
            check_model_has_gate(models[0], sample["net_input"], dictionary.pad(), dictionary.eos())
            _STATE["model_checked"] = True
        hypos = original(self, generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)
        if out is None or _STATE["quiet"] or "src_tokens" not in sample["net_input"]:
            return hypos
        gates = hypothesis_gates(models[0], sample["net_input"], [h[0]["tokens"] for h in hypos],
                                 dictionary.pad(), dictionary.eos())
        if gates is not None:
            for sample_id, values in zip(sample["id"].tolist(), gates):
                print("G-{}\t{}".format(sample_id, " ".join("{:.4f}".format(v) for v in values.tolist())),
                      file=out)
        return hypos

    return inference_step


def _wrapped_main(original):
    def _main(cfg, output_file):
        _STATE["output_file"], _STATE["model_checked"] = output_file, False
        _STATE["quiet"] = bool(cfg.common_eval.quiet)
        return original(cfg, output_file)

    return _main


def enable():
    """Make fairseq-generate print ``G-`` lines (the ``--print-gates`` option calls this)."""
    import fairseq_cli.generate
    from fairseq.tasks import FairseqTask

    note(NAME, True, "a feature, no bug: fairseq-generate prints the models' gates as G- lines")
    wrap_once(fairseq_cli.generate, "_main", _wrapped_main)
    wrap_once(FairseqTask, "inference_step", _wrapped_inference_step)


class _PrintGates(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True)
        enable()


def install():
    """Add ``--print-gates`` to fairseq's generation options (called when the plugin is imported)."""
    if NAME not in status():
        note(NAME, False, "switched on by fairseq-generate --print-gates")
    add_generation_argument(
        "--print-gates", action=_PrintGates,
        # fairseq-interactive numbers its sentences per input chunk: G- lines would not match its H- lines
        not_interactive="fairseq-interactive prints no G- lines; binarize the text (fairseq-preprocess) and "
                        "decode it with fairseq-generate --print-gates to see the gates",
        help="fairseq-generate (fairseq-wean plugin): print a G-<id> line per sentence with every "
             "token's gate in the best hypothesis (core_copy: copy gate lambda_t; word_attn_gated: "
             "mean contextual gate), for fairseq-wean-report")
