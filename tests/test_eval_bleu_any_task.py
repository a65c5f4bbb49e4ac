"""--eval-bleu-args and --eval-bleu-detok-args are checked when fairseq parses the command, for EVERY task
that has them, not only the plugin's translation_with_metrics.

fairseq's own ``--task translation`` (the default) read them only when the model was built or in the
first validation: ``--eval-bleu-detok-args '{bad'`` was a JSONDecodeError traceback after the model was
built, an unknown tokenizer key was ignored silently, ``--eval-bleu-args '{"beam": 0}'`` trained a whole
epoch and then failed in validation, leaving the run's lock in --save-dir. The check
(``validation_options.eval_bleu_option_problem``, registered with ``patching.add_option_check``) is
decided by the parsed options: the tasks are found here, every registered task whose options include
them (fairseq's translation and its subclasses, audio_finetuning, nlu_finetuning,
online_backtranslation, the plugin's task), each tried with every bad value, in-process (fairseq's
own parse); one real fairseq-train run proves the wiring and that nothing is written.
"""
import os
import re
import sys

import pytest
from conftest import cli, task_parsers, train_args

OPTIONS = ("eval_bleu_args", "eval_bleu_detok_args")


def _tasks():
    return [name for name, _, parser in task_parsers() if {a.dest for a in parser._actions} & set(OPTIONS)]


TASKS = _tasks()
TRAIN = ["--arch", "lstm", "--optimizer", "adam", "--max-tokens", "100"]
DETOK = '{"sentencepiece_model": "x"}'
# (the options, the one line after "fairseq-train: error: ")
BAD = {
    "detok args not JSON": (
        ["--eval-bleu-detok", "moses", "--eval-bleu-detok-args", "{bad"],
        "--eval-bleu-detok-args {bad: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)) (e.g. '{\"source_lang\": \"en\"}')"),
    "detok key unknown to the tokenizer": (
        ["--eval-bleu-detok", "space", "--eval-bleu-detok-args", DETOK],
        "--eval-bleu-detok-args {}: unknown option(s) sentencepiece_model (known: none) (e.g. '{{}}')".format(DETOK)),
    "beam out of range": (
        ["--eval-bleu-args", '{"beam": 0}'],
        "--eval-bleu-args {\"beam\": 0}: beam must be >= 1 and <= 1024, got 0 (e.g. '{\"beam\": 5, \"max_len_a\": 1.2, "
        "\"max_len_b\": 10}')"),
    "generation key unknown": (
        ["--eval-bleu-args", '{"beem": 5}'],
        "--eval-bleu-args {\"beem\": 5}: unknown generation option(s) beem (fairseq-generate's options, with _ for -) "
        "(e.g. '{\"beam\": 5, \"max_len_a\": 1.2, \"max_len_b\": 10}')"),
}
GOOD = ["--eval-bleu-detok", "moses", "--eval-bleu-detok-args", '{"source_lang": "de"}', "--eval-bleu-args",
        '{"beam": 2, "max_len_b": 20}']


def test_the_tasks_are_found_by_their_options():
    assert {"translation", "translation_lev", "translation_from_pretrained_xlm", "translation_from_pretrained_bart",
            "translation_with_metrics"} <= set(TASKS), TASKS


def _parse(command, build, argv, tmp_path, monkeypatch):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command])
    return options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + argv)


def _needed(task):
    """The options the task cannot be set up without (option_rules.TASK_NEEDS), as test_task_needs gives them."""
    from fairseq_wean.option_rules import TASK_NEEDS
    from test_task_needs import EXAMPLE

    return [word for dest, _ in TASK_NEEDS.get(task, ()) for word in ("--" + dest.replace("_", "-"), EXAMPLE[dest])]


@pytest.mark.parametrize("task", TASKS)
def test_bad_validation_decoding_options_of_every_task_are_one_line_at_parse(task, tmp_path, monkeypatch, capsys):
    failures = []
    train = TRAIN + _needed(task)
    for case, (argv, message) in BAD.items():
        capsys.readouterr()
        try:
            _parse("fairseq-train", "get_training_parser", train + ["--task", task, "--eval-bleu"] + argv, tmp_path,
                   monkeypatch)
            failures.append("{}: accepted".format(case))
        except SystemExit as exc:
            err = capsys.readouterr().err.strip().splitlines()
            if exc.code != 2 or err[-1] != "fairseq-train: error: " + message:
                failures.append("{}: exit {}, {!r}".format(case, exc.code, err[-1:]))
    assert not failures, "\n".join(failures)
    args = _parse("fairseq-train", "get_training_parser", train + ["--task", task, "--eval-bleu"] + GOOD, tmp_path,
                  monkeypatch)
    assert (args.eval_bleu_detok, args.eval_bleu_detok_args, args.eval_bleu_args) == tuple(GOOD[1::2])


@pytest.mark.parametrize("command,build,argv", [
    ("fairseq-validate", "get_validation_parser", ["--path", "x.pt", "--max-tokens", "9"]),
    ("fairseq-generate", "get_generation_parser", ["--path", "x.pt"]),
])
@pytest.mark.parametrize("case", sorted(BAD))
def test_fairseqs_other_commands_check_them_too(command, build, argv, case, tmp_path, monkeypatch, capsys):
    bad, message = BAD[case]
    with pytest.raises(SystemExit) as info:
        _parse(command, build, argv + ["--task", "translation", "--eval-bleu"] + bad, tmp_path, monkeypatch)
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    if command == "fairseq-generate":  # it never validates: the option is refused as doing nothing, whatever its value
        assert re.fullmatch(r"fairseq-generate: error: --eval-bleu[a-z-]* does nothing here: .*", last), last
    else:
        assert last == "{}: error: {}".format(command, message)


def test_fairseq_train_with_fairseqs_translation_refuses_before_any_work(data_bin, tmp_path):
    save_dir = tmp_path / "ck"
    proc = cli("fairseq-train", *train_args(data_bin, save_dir, "lstm", "--task", "translation", "--eval-bleu",
                                            "--eval-bleu-args", '{"beam": 0}', epochs=1), check=False)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert err[-1] == "fairseq-train: error: " + BAD["beam out of range"][1], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "epoch 001" not in proc.stdout + proc.stderr
    assert not os.path.exists(save_dir)  # no folder, no lock left
