"""A task option that fairseq leaves None and the task cannot run without is refused in one line at parse
(``option_rules.TASK_NEEDS``), not an AttributeError / assertion / ValueError traceback when fairseq sets the task
up (``fairseq-train --task translation_from_pretrained_bart`` without ``--langs``).

The candidates are found in the code of every registered task: an option whose default is None that the task's
module (or a base class's, or the multilingual data manager it uses) reads as text (``.NAME.split(`` ...). Each is
either a row of ``TASK_NEEDS`` (tried: refused without it, accepted with it, on every fairseq command that sets up
the task) or listed here as read only when given (with where fairseq checks it), so that a new task with such an
option fails here until it chooses.
"""
import argparse
import inspect
import re
import sys

import pytest
from conftest import USER_DIR, task_parsers

# (task, option): fairseq reads it only when given (its None is a branch of its own)
GUARDED = {
    **{(task, dest): "`if task_cfg.multi_corpus_keys is None` before the split"
       for task in ("audio_classification", "audio_finetuning", "audio_pretraining", "nlu_finetuning")
       for dest in ("multi_corpus_keys", "multi_corpus_sampling_weights")},
    ("multilingual_denoising", "langs"): "None: every folder of the data is a language",
    ("speech_dlm_task", "channel_weights"): "`if args.channel_weights is not None`",
    ("speech_dlm_task", "channels"): "`if args.channels is None`: the dictionaries name them",
    ("translation_with_metrics", "eval_refs"): "the plugin's: `if cfg.eval_refs`",
}
TEXT_USE = r"\.([a-z_]+)\.(?:split|strip|replace)\("


def _needed_none_options():
    """{(task, dest)} of every registered task: options defaulting to None that its code reads as text."""
    found, known = set(), set()
    for name, cls, parser in task_parsers():
        defaults = {a.dest: a.default for a in parser._actions if a.option_strings}  # a positional is required
        known.update((name, dest) for dest in defaults)
        sources = []
        for klass in inspect.getmro(cls):
            module = sys.modules.get(klass.__module__)
            if module is not None and klass.__module__.startswith(("fairseq.tasks", "fairseq_wean")):
                sources.append(inspect.getsource(module))
        if any("MultilingualDatasetManager" in s for s in sources):
            from fairseq.data.multilingual import multilingual_data_manager

            sources.append(inspect.getsource(multilingual_data_manager))
        for dest in re.findall(TEXT_USE, "\n".join(sources)):
            if dest in defaults and defaults[dest] is None:
                found.add((name, dest))
    return found, known


def test_every_task_option_read_as_text_with_a_none_default_has_a_rule():
    from fairseq_wean.option_rules import TASK_NEEDS

    ruled = {(task, dest) for task, rows in TASK_NEEDS.items() for dest, _ in rows}
    found, known = _needed_none_options()
    assert ("translation_from_pretrained_bart", "langs") in found  # the scan finds the reported one
    missing = sorted(found - ruled - set(GUARDED))
    assert not missing, "task options fairseq leaves None and reads as text, with no TASK_NEEDS row: {}".format(missing)
    stale = sorted(((ruled | set(GUARDED)) & known) - found)  # (fairseq 0.12.2's audio tasks lack multi_corpus_*)
    assert not stale, stale


EXAMPLE = {"langs": "de_DE,en_XX", "lang_pairs": "src-tgt", "mono_langs": "src,tgt", "valid_lang_pairs": "src-tgt"}
COMMANDS = (("fairseq-train", "get_training_parser", ["--arch", "lstm", "--optimizer", "adam", "--max-tokens", "9"]),
            ("fairseq-generate", "get_generation_parser", ["--path", "x.pt"]),
            ("fairseq-interactive", "get_interactive_generation_parser", ["--path", "x.pt"]),
            ("fairseq-validate", "get_validation_parser", ["--path", "x.pt", "--max-tokens", "9"]))


def _rows():
    from fairseq_wean.option_rules import TASK_NEEDS

    return [(task, dest) for task, rows in sorted(TASK_NEEDS.items()) for dest, _ in rows]


@pytest.mark.parametrize("task,dest", _rows())
def test_a_needed_task_option_left_out_is_one_line_at_parse(task, dest, tmp_path, monkeypatch, capsys):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    from fairseq_wean.option_rules import TASK_NEEDS, task_needs_problem

    what = dict(TASK_NEEDS[task])[dest]
    others = [w for d, _ in TASK_NEEDS[task] if d != dest for w in ("--" + d.replace("_", "-"), EXAMPLE[d])]
    for command, build, argv in COMMANDS:
        monkeypatch.setattr(sys, "argv", [command])
        words = [str(tmp_path), "--user-dir", USER_DIR, "--task", task, *argv, *others]
        capsys.readouterr()
        with pytest.raises(SystemExit) as info:
            options.parse_args_and_arch(getattr(options, build)(), words)
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert info.value.code == 2 and line == "{}: error: --task {} needs --{}: {}".format(
            command, task, dest.replace("_", "-"), what), (command, line)
        given = argparse.Namespace(task=task, **{d: EXAMPLE[d] for d, _ in TASK_NEEDS[task]})
        assert task_needs_problem(given) is None  # given: accepted
    assert list(tmp_path.iterdir()) == []  # nothing written
