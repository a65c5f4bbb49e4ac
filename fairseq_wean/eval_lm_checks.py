"""fairseq-eval-lm's options against the checkpoint it evaluates: refused in one line before any block is scored.

* ``--tokens-per-sample`` above the model's positions (``--sample-break-mode none``, ``complete``,
  ``complete_doc``: blocks of that many tokens): fairseq skips every block longer than the model takes (a
  WARNING) and prints the perplexity of what is left - "Evaluated 0 tokens ... Perplexity: 1.00", exit 0, when
  nothing is (fairseq's default 1024 on a model trained with ``--tokens-per-sample 64``), or of the last, shorter
  block only. Checked where fairseq-eval-lm asks the task for its batches (``eval_lm_dataloader``: the model's
  positions are known, nothing is scored yet). With ``--sample-break-mode eos`` a block is a sentence: a sentence
  longer than the model takes is skipped with fairseq's WARNING (a documented choice: the other sentences'
  perplexity); none left is one line (``compat.nothing_left_problem``, in every command).
* ``--output-dictionary-size`` other than the checkpoint's (fairseq-eval-lm, fairseq-validate): the task builds an output layer of that size and
  loading the checkpoint's weights into it fails (``size mismatch for decoder.output_projection.weight``, a
  traceback). Refused when the options are parsed, from the checkpoint's stored configuration
  (``checkpoint_container.stored_configuration``: nothing run, no weights read).
"""
import os
import sys

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import add_option_check, running_command, wrap_once

BLOCK_MODES = ("none", "complete", "complete_doc")  # blocks of --tokens-per-sample tokens (eos: one sentence)


def block_length_problem(tokens_per_sample, context_window, break_mode, max_positions):
    """--tokens-per-sample (fairseq-eval-lm took the window out of it; the window dataset adds it back) above the
    model's positions, where blocks have that length: the one line, or None."""
    if isinstance(max_positions, (tuple, list)):
        max_positions = min((p for p in max_positions if isinstance(p, int)), default=None)
    if not isinstance(max_positions, int) or not isinstance(tokens_per_sample, int) or break_mode not in BLOCK_MODES:
        return None
    given = tokens_per_sample + (context_window or 0)
    if given <= max_positions:
        return None
    return ("--tokens-per-sample {} is above the model's {} positions: every block of {} tokens would be skipped and "
            "the perplexity printed over what is left (nothing, or a last shorter block); give --tokens-per-sample "
            "{} or less (the model's; --context-window counts in it)".format(given, max_positions, given,
                                                                              max_positions))


def output_dictionary_size_problem(args):
    """fairseq-eval-lm (or fairseq-validate, which sets the checkpoint's task options from its command line)
    --output-dictionary-size other than the stored one of --path's checkpoint: the one line."""
    command = running_command()
    if command not in ("eval_lm", "validate") or getattr(args, "output_dictionary_size", None) is None:
        return None
    written = {w.split("=", 1)[0] for w in sys.argv[1:] if isinstance(w, str) and w.startswith("--")}
    if "--output-dictionary-size" not in written:
        return None
    from fairseq_wean.checkpoint_container import INERT, stored_configuration
    from fairseq_wean.metric_check import _stored

    for path in str(getattr(args, "path", "") or "").split(os.pathsep):
        state = stored_configuration(path) if os.path.isfile(path) else None
        stored = None if state is None else _stored(state, "task", "output_dictionary_size")
        if stored is None or isinstance(stored, INERT):
            stored = -1 if state is not None and _stored(state, "task", "_name") == "language_modeling" else None
        if isinstance(stored, int) and stored != args.output_dictionary_size:
            return ("--output-dictionary-size {} does not fit the checkpoint {}: its output layer was trained with "
                    "--output-dictionary-size {}{} (fairseq-{} would build another shape and fail to load it); "
                    "drop the option".format(args.output_dictionary_size, path, stored,
                                             " (the whole dictionary)" if stored < 0 else "",
                                             command.replace("_", "-")))
    return None


add_option_check(output_dictionary_size_problem)


def install():
    """Wrap the language-modeling task's ``eval_lm_dataloader`` with :func:`block_length_problem` (part of compat
    fix 3, over-long sentences: reported under its name by ``python -m fairseq_wean.cli.patches``)."""
    from fairseq.tasks.language_modeling import LanguageModelingTask

    def wrap_eval_lm_dataloader(original):
        def eval_lm_dataloader(self, dataset, *args, **kwargs):
            names = ("max_tokens", "batch_size", "max_positions")
            given = dict(zip(names, args))
            given.update(kwargs)
            cfg = getattr(self, "args", None) or getattr(self, "cfg", None)
            problem = block_length_problem(getattr(cfg, "tokens_per_sample", None), given.get("context_window", 0),
                                           getattr(cfg, "sample_break_mode", None), given.get("max_positions"))
            if problem is not None:
                raise FairseqWeanError(problem)
            return original(self, dataset, *args, **kwargs)

        return eval_lm_dataloader

    wrap_once(LanguageModelingTask, "eval_lm_dataloader", wrap_eval_lm_dataloader)
