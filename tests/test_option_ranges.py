"""Every numeric option of every command-line tool of the repository, and of fairseq's own commands as
the plugin leaves them (the tests at the end; also tests/test_cut_and_range.py), is range-checked when it
is parsed: one line, before any work.

The tools are found, not listed: every module of preprocess/, bench/, examples/, fairseq_wean/cli/
and fairseq_wean/compare/ that builds an argparse parser. Each parser is captured without running
the tool (``get_parser()``, else its ``parse_args``/``main`` called with ``argparse.ArgumentParser.
parse_args`` replaced by a capture), sub-commands included. An option whose values are numbers
(type int or float, a type that parses numbers, a comma list of numbers) must have a range: a
``.range`` on its type (:func:`fairseq_wean.errors.at_least`, or a list parser built on it), numeric
``choices``, or an entry of :data:`ALLOWED` with its reason. A new numeric option without one fails
here, named ``TOOL OPTION``.

The options that do nothing in a combination (fairseq-wean-compare's budgets, --reuse-only) and
the launcher's empty folders are refused in one line before any work: the cases below.
"""
import argparse
import glob
import importlib
import importlib.util
import inspect
import os
import re
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("preprocess/*.py", "bench/*.py", "examples/*.py", "fairseq_wean/cli/*.py", "fairseq_wean/compare/*.py")
BUILDS_A_PARSER = re.compile(r"\bArgumentParser\b|\bbase_parser\(")

# modules that build a parser but are no tool: the tools that use it are checked instead
HELPERS = {"preprocess/common.py": "base_parser: the options every preprocess.prepare_* recipe has"}

# (tool, option): why a number there needs no range
ALLOWED = {}

# the tools a user runs (setup.py, docs): each must be found and captured, whatever the discovery does
EXPECTED_TOOLS = {
    "fairseq-wean-score", "fairseq-wean-report", "fairseq-wean-align-table", "fairseq-wean-train-cpu-dist",
    "fairseq-wean-compare", "python -m preprocess.prepare_simplification", "python -m preprocess.prepare_gigaword",
    "python -m preprocess.prepare_lcsts", "python -m preprocess.prepare_multi30k",
    "python -m preprocess.prepare_iwslt14", "python -m preprocess.check_parallel",
    "python -m preprocess.coverage_report", "python -m preprocess.unk_markers", "python -m bench.run",
    "python -m bench.flops", "python -m bench.profile", "python -m bench.cpu_bf16", "python -m bench.gpu_check",
    "python examples/word_attention_figure3.py",
}

# a comma list of numbers with no type of its own shows in its help
NUMBER_LIST = re.compile(r"\s*-?\d+(\.\d*)?(\s*,\s*-?\d+(\.\d*)?)*\s*")
NUMBER_LIST_HELP = re.compile(r"comma[- ](separated|list)\b.*\b(sizes?|seeds?|numbers?|counts?|lengths?)\b", re.S)


class _Captured(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def console_scripts():
    """{module: script name} of setup.py's console_scripts."""
    with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
        return {module: name for name, module in re.findall(r'"([\w-]+) = ([\w.]+):\w+"', f.read())}


def tool_files():
    for pattern in SOURCES:
        for path in sorted(glob.glob(os.path.join(REPO, pattern))):
            rel = os.path.relpath(path, REPO)
            if os.path.basename(path) == "__main__.py":
                continue
            with open(path, encoding="utf-8") as f:
                if BUILDS_A_PARSER.search(f.read()):
                    yield rel


def load(rel):
    if rel.startswith("examples/"):
        spec = importlib.util.spec_from_file_location("_option_ranges_" + os.path.basename(rel)[:-3],
                                                      os.path.join(REPO, rel))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(rel[:-3].replace("/", "."))


def tool_name(rel):
    module = rel[:-3].replace("/", ".")
    scripts = console_scripts()
    if module in scripts:
        return scripts[module]
    return "python " + rel if rel.startswith("examples/") else "python -m " + module


def capture(module, monkeypatch):
    """The tool's parser, built by its own code and parsed by nothing (no work runs)."""
    if callable(getattr(module, "get_parser", None)):
        return module.get_parser()

    def captured(self, *args, **kwargs):
        raise _Captured(self)

    for name in ("parse_args", "main", "cli_main"):
        entry = getattr(module, name, None)
        if not callable(entry) or getattr(entry, "__module__", None) != module.__name__:
            continue
        with monkeypatch.context() as m:
            m.setattr(argparse.ArgumentParser, "parse_args", captured)
            m.setattr(argparse.ArgumentParser, "parse_known_args", captured)
            m.setattr(sys, "argv", [module.__name__])
            takes_argv = bool(inspect.signature(entry).parameters)
            try:
                entry([]) if takes_argv else entry()
            except _Captured as found:
                return found.parser
    return None


def parsers(tool, parser):
    """(name, parser) of the tool and of each of its sub-commands."""
    yield tool, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers("{} {}".format(tool, name), sub)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) or \
        isinstance(value, (list, tuple)) and bool(value) and all(map(is_number, value))


def takes_numbers(action):
    if action.nargs == 0 or isinstance(action, (argparse._HelpAction, argparse._VersionAction,
                                                argparse._SubParsersAction)):
        return False
    if action.type in (int, float) or hasattr(action.type, "range"):
        return True
    if action.choices and all(is_number(c) for c in action.choices):
        return True
    if is_number(action.default) or isinstance(action.default, str) and NUMBER_LIST.fullmatch(action.default):
        return True
    if callable(action.type):
        for probe in ("1", "1,2"):
            try:
                if is_number(action.type(probe)):
                    return True
            except (Exception, SystemExit):  # a type of something else (or a parser's own error line)
                pass
    return bool(NUMBER_LIST_HELP.search(action.help or ""))


def ranged(action):
    return getattr(action.type, "range", None) is not None or \
        bool(action.choices) and all(is_number(c) for c in action.choices)


def option_name(action):
    longs = [o for o in action.option_strings if o.startswith("--")]
    return (longs or action.option_strings or [action.dest])[0]


def all_parsers(monkeypatch):
    """{tool: parser} of every tool found; the files whose parser could not be captured."""
    found, missed = {}, []
    for rel in tool_files():
        if rel in HELPERS:
            continue
        parser = capture(load(rel), monkeypatch)
        if parser is None:
            missed.append(rel)
            continue
        for name, sub in parsers(tool_name(rel), parser):
            found[name] = sub
    return found, missed


def test_every_numeric_option_of_every_tool_has_a_range(monkeypatch):
    found, missed = all_parsers(monkeypatch)
    assert not missed, "a parser built here but not captured (give the module get_parser()): {}".format(missed)
    assert EXPECTED_TOOLS <= set(found), "tools not found: {}".format(sorted(EXPECTED_TOOLS - set(found)))
    numeric, offenders = set(), []
    for tool, parser in sorted(found.items()):
        for action in parser._actions:
            if not takes_numbers(action):
                continue
            numeric.add((tool, option_name(action)))
            if not ranged(action) and (tool, option_name(action)) not in ALLOWED:
                offenders.append("{} {}".format(tool, option_name(action)))
    assert len(numeric) >= 60, sorted(numeric)  # the enumeration reached the tools' options
    assert not offenders, "numeric options with no range (give them fairseq_wean.errors.at_least, or a " \
        "reason in ALLOWED):\n  " + "\n  ".join(offenders)
    assert not set(ALLOWED) - numeric, "ALLOWED names options that are gone: {}".format(set(ALLOWED) - numeric)


def out_of_range(action):
    """A value just outside each end of the option's range, as text."""
    low, kind, high, above = action.type.range
    values = [low if above else low - (1 if kind is int else 0.5)]
    if high is not None:
        values.append(high + 1)
    return [str(v) for v in values]


def test_every_range_refuses_its_out_of_range_values_in_one_line(monkeypatch, capsys):
    """The ``.range`` of a type is what it refuses: each option, given a value outside, ends the parse
    with a line naming the option (argparse's usage error, or the tool's own one line)."""
    found, _ = all_parsers(monkeypatch)
    failures = []
    for tool, parser in sorted(found.items()):
        for action in parser._actions:
            if getattr(action.type, "range", None) is None or not action.option_strings:
                continue
            for value in out_of_range(action):
                flag = option_name(action)
                try:
                    parser.parse_args([flag, value])
                except SystemExit as exc:
                    err = capsys.readouterr().err + ("" if isinstance(exc.code, int) else str(exc.code))
                    last = (err.strip().splitlines() or [""])[-1]
                    if exc.code in (0, None) or flag not in last or "Traceback" in err:
                        failures.append("{} {} {}: exit {}, {!r}".format(tool, flag, value, exc.code, last))
                except Exception as exc:  # a parser with its own error (bench.gpu_check's UsageError)
                    if flag not in str(exc) and value not in str(exc):
                        failures.append("{} {} {}: {!r}".format(tool, flag, value, exc))
                else:
                    failures.append("{} {} {}: accepted".format(tool, flag, value))
    assert not failures, "\n".join(failures)


# ------------------------------------------------------------------ options that would do nothing
@pytest.mark.parametrize("flags,message", [
    (["--patience", "3"], "--patience does nothing under --budget short"),
    (["--max-epoch", "3"], "--max-epoch does nothing under --budget short"),
    (["--seeds", "1,2"], "--seeds does nothing under --budget short"),
    (["--seeds", "2,3"], "--seeds does nothing under --budget short"),
    (["--budget", "converged", "--epochs", "3"], "--epochs does nothing under --budget converged"),
    (["--budget", "converged", "--tiny", "--seeds", "1"], "--seeds does nothing with --tiny"),
    (["--reuse-only", "--keep-checkpoints"], "--keep-checkpoints does nothing with --reuse-only"),
    (["--reuse-only", "--cpu-bf16"], "--cpu-bf16 does nothing with --reuse-only"),
    (["--runs", "lstm:bogus"], "--runs: 'lstm:bogus': multi30k has no vocabulary variant 'bogus'"),
    (["--dataset", "iwslt14", "--runs", "lstm:bpe,wean_lstm:chars"], "iwslt14 has no vocabulary variant 'chars'"),
    (["--budget", "converged", "--seeds", ""], "--seeds: '' is not a comma list of integers"),
    (["--budget", "converged", "--seeds", "nan"], "--seeds: 'nan' is not a comma list of integers"),
    (["--budget", "converged", "--seeds", "2,3"], "--seeds 2,3 must hold --seed 1"),
])
def test_compare_refuses_what_would_do_nothing_before_any_work(flags, message, tmp_path, capsys, monkeypatch):
    """fairseq-wean-compare took these and ignored them (or, for an unknown vocabulary, prepared the
    data first): one line, exit status 2, no output folder, no data prepared."""
    from fairseq_wean.compare import cli as compare_cli
    from fairseq_wean.compare import runner

    monkeypatch.setattr(runner, "prepare", lambda *a: pytest.fail("data prepared"))
    with pytest.raises(SystemExit) as info:
        compare_cli.cli_main(["translation", str(tmp_path), "--out", str(tmp_path / "out")] + flags)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("fairseq-wean-compare: error: ") and message in last, err
    assert not (tmp_path / "out").exists()


def test_lcsts_runs_take_its_one_vocabulary(tmp_path, capsys):
    from fairseq_wean.compare import cli as compare_cli

    args = compare_cli.parse_args(["summarization", str(tmp_path), "--dataset", "lcsts", "--runs", "lstm:word"])
    assert args.run_list == [("lstm", "word")]
    with pytest.raises(SystemExit):
        compare_cli.parse_args(["summarization", str(tmp_path), "--dataset", "lcsts", "--runs", "lstm:spm"])
    assert "lcsts has no vocabulary variant 'spm': choose from word" in capsys.readouterr().err


@pytest.mark.parametrize("launcher", [["--log-dir", ""], ["--dump-rank-params", ""], ["--master-addr", " "],
                                      ["--timeout", "inf"], ["--node-rank", "-1"]])
def test_launcher_refuses_empty_folders_and_bad_numbers_before_any_rank(launcher, monkeypatch):
    """An empty --log-dir or --dump-rank-params was taken as none (no logs, no parameters, no word).
    (--dump-rank-params with fairseq-train's --no-save is not refused: the parameters are still
    written at every checkpoint time, fairseq calling save_checkpoint whatever --no-save says.)"""
    from fairseq_wean.cli import train_cpu_dist

    monkeypatch.setattr(train_cpu_dist.subprocess, "Popen", lambda *a, **k: pytest.fail("a rank started"))
    with pytest.raises(SystemExit) as info:
        train_cpu_dist.cli_main(launcher + ["--", "data-bin", "--arch", "wean_lstm"])
    message = str(info.value.code)
    assert "\n" not in message and message.startswith("fairseq-wean-train-cpu-dist: error: "), message
    assert launcher[0] in message


@pytest.mark.parametrize("argv,message", [
    (["--vocabs", "5,5"], "argument --vocabs: 5 given twice"),
    (["--vocabs", "nan"], "argument --vocabs: expected a whole number, got 'nan'"),
    (["--vocabs", "0"], "argument --vocabs: must be >= 1, got 0"),
    (["--vocabs", ""], "argument --vocabs: expected a comma list of numbers"),
    (["--updates", "99999999999999999999"], "argument --updates: must be >= 1 and <= 1000000"),
    (["--gen-len", "0"], "argument --gen-len: must be >= 1"),
    (["--updates", "4", "--interval", "8"], "--interval 8 is more than --updates 4"),
    (["--updates", "6", "--interval", "3", "--warmup", "2"], "--warmup 2 drops every one of the 2 log intervals"),
])
def test_bench_run_refuses_bad_numbers_before_any_work(argv, message, capsys, monkeypatch):
    from bench import run as bench_run

    monkeypatch.setattr(bench_run, "measure_peaks", lambda *a: pytest.fail("work started"))
    monkeypatch.setattr(bench_run, "bench_vocab", lambda *a: pytest.fail("work started"))
    with pytest.raises(SystemExit) as info:
        bench_run.main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and message in err.strip().splitlines()[-1], err


@pytest.mark.parametrize("module,argv,message", [
    ("preprocess.prepare_simplification", ["--variants", "word,word"], "word named twice"),
    ("preprocess.prepare_gigaword", ["--variants", "word,bogus"], "unknown vocabulary variant(s) bogus"),
    ("preprocess.prepare_lcsts", ["--variants", "spm"], "unknown vocabulary variant(s) spm: choose from word"),
    ("preprocess.prepare_multi30k", ["--variants", ""], "expected a comma list of variants"),
    ("preprocess.prepare_lcsts", ["--min-score", "6"], "argument --min-score: must be >= 1 and <= 5, got 6"),
    ("preprocess.prepare_iwslt14", ["--workers", "0"], "argument --workers: must be >= 1"),  # and <= its upper bound
])
def test_recipes_refuse_bad_variants_and_numbers_before_any_work(module, argv, message, capsys):
    recipe = importlib.import_module(module)
    with pytest.raises(SystemExit) as info:
        recipe.parse_args(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and message in err.strip().splitlines()[-1], err


# ------------------------------------------------------------------ fairseq's own parsers, plugin loaded
# (command, argv): what the enumeration parses. The training parsers with this plugin's task and with
# fairseq's, adam and an lr scheduler with options, so that every option --task/--optimizer/
# --lr-scheduler add is in the parser; model options (the "Model-specific configuration" group) are the
# models' own (fairseq_wean/modules/model_options.py).
FAIRSEQ_COMMANDS = [
    ("fairseq-train", "get_training_parser", ["--arch", "lstm", "--task", "translation_with_metrics", "--optimizer",
                                              "adam", "--lr-scheduler", "inverse_sqrt", "--max-tokens", "1000"]),
    # --use-bmuf adds BMUF's options (--block-lr, --block-momentum, ...)
    ("fairseq-train", "get_training_parser", ["--arch", "lstm", "--task", "translation", "--optimizer", "adam",
                                              "--lr-scheduler", "reduce_lr_on_plateau", "--batch-size", "8",
                                              "--use-bmuf", "--distributed-world-size", "2",
                                              "--distributed-init-method", "tcp://localhost:12345"]),
    ("fairseq-generate", "get_generation_parser", ["--path", "x.pt", "--task", "translation_with_metrics"]),
    ("fairseq-interactive", "get_interactive_generation_parser", ["--path", "x.pt"]),
    ("fairseq-validate", "get_validation_parser", ["--path", "x.pt", "--task", "translation", "--max-tokens", "1000"]),
    ("fairseq-eval-lm", "get_eval_lm_parser", ["--path", "x.pt"]),
]


# rows for the options of criteria and tasks that fairseq 0.12.2 does not have (rdrop, speech_dlm, ctc's --wer-sil-weight)
ONLY_FAIRSEQ_0123 = {"rdrop_alpha", "wer_sil_weight", "main_and_cross_weights", "general_unit_loss_weight",
                     "edge_unit_loss_weight", "duration_loss_weight",
                     # the tasks span_masked_lm, speech_dlm_task, audio_classification and nlu_finetuning
                     "mean_noise_span_length", "noise_density", "subsample", "max_target_durations",
                     "shuffle_instance"}


def fairseq_parsers(tmp_path, monkeypatch):
    """[(command, parser after fairseq's own parse, with every option its flags add)]."""
    import fairseq_wean  # noqa: F401  (the plugin, as --user-dir loads it)
    from fairseq import options

    found = []
    for command, build, argv in FAIRSEQ_COMMANDS:
        monkeypatch.setattr(sys, "argv", [command])  # fairseq-interactive's parser knows itself by its name
        parser = getattr(options, build)()
        options.parse_args_and_arch(parser, [str(tmp_path)] + argv)
        found.append((command, parser))
    return found


def model_actions(parser):
    return {id(a) for g in parser._action_groups if g.title == "Model-specific configuration" for a in g._group_actions}


def test_every_numeric_option_of_fairseqs_parsers_has_a_range_or_a_reason(tmp_path, monkeypatch):
    """fairseq checks no range (--seed -5, --num-workers -1: ValueError tracebacks after the model was
    loaded; --validate-interval 0, --update-freq 0: ZeroDivisionError after an epoch). Every numeric
    option of fairseq-train, -generate, -interactive and -validate as the plugin leaves them is
    range-checked (patching.GENERATION_RANGES, SHARDING_RANGES, FAIRSEQ_RANGES; -eval-lm too) or listed with a
    reason (GENERATION_ANY_VALUE, FAIRSEQ_ANY_VALUE): a new fairseq option fails here."""
    from fairseq_wean import patching

    tables = [patching.GENERATION_RANGES, patching.SHARDING_RANGES, patching.FAIRSEQ_RANGES,
              patching.GENERATION_ANY_VALUE, patching.FAIRSEQ_ANY_VALUE]
    numeric, offenders = set(), []
    for command, parser in fairseq_parsers(tmp_path, monkeypatch):
        model = model_actions(parser)
        for action in parser._actions:
            if id(action) in model or not takes_numbers(action):
                continue
            numeric.add(action.dest)
            if not ranged(action) or not any(action.dest in table for table in tables):
                offenders.append("{} {}".format(command, option_name(action)))
    assert len(numeric) >= 80, sorted(numeric)
    assert {"seed", "num_workers", "update_freq", "lr", "validate_interval", "log_interval", "buffer_size",
            "max_source_positions", "data_buffer_size", "beam"} <= numeric
    assert not offenders, "numeric fairseq options with no range (add them to patching.FAIRSEQ_RANGES, or with " \
        "a reason to FAIRSEQ_ANY_VALUE):\n  " + "\n  ".join(offenders)
    from test_optim_options import component_dests

    import fairseq

    numeric |= component_dests(tmp_path, monkeypatch)  # every --optimizer, --lr-scheduler, --criterion, --task adds
    newer = set() if tuple(map(int, fairseq.__version__.split(".")[:3])) >= (0, 12, 3) else ONLY_FAIRSEQ_0123
    for table in tables[2:] + [patching.GENERATION_ANY_VALUE]:
        gone = set(table) - numeric - {"bos"} - newer
        assert not gone, "table names options that are gone: {}".format(gone)
    assert all(isinstance(why, str) and why for why in patching.FAIRSEQ_ANY_VALUE.values())


def test_fairseqs_ranges_refuse_out_of_range_values_and_keep_fairseqs_values(tmp_path, monkeypatch):
    import argparse

    failures = []
    for command, parser in fairseq_parsers(tmp_path, monkeypatch):
        for action in parser._actions:
            if getattr(action.type, "range", None) is None or not action.option_strings:
                continue
            low = action.type.range[0]
            if low == float("-inf"):
                continue
            for value in out_of_range(action) + ["nan"]:
                try:
                    action.type(value)
                except argparse.ArgumentTypeError:
                    continue
                failures.append("{} {} {}: accepted".format(command, option_name(action), value))
    assert not failures, "\n".join(failures)
    from fairseq import options

    # fairseq's list options keep fairseq's own values
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(tmp_path), "--arch", "lstm", "--optimizer", "adam", "--max-tokens", "1000", "--lr", "0.5,0.25", "--update-freq", "2",
        "--adam-betas", "(0.9, 0.98)", "--seed", "7"])
    assert (args.lr, args.update_freq, args.adam_betas, args.seed) == ([0.5, 0.25], [2], "(0.9, 0.98)", 7)


@pytest.mark.parametrize("command,argv,message", [
    ("fairseq-train", ["--seed", "-5"], "argument --seed: must be >= 0"),
    ("fairseq-train", ["--update-freq", "1,0"], "argument --update-freq: must be >= 1"),
    ("fairseq-train", ["--validate-interval", "0"], "argument --validate-interval: must be >= 1"),
    ("fairseq-train", ["--log-interval", "0"], "argument --log-interval: must be >= 1"),
    ("fairseq-train", ["--adam-betas", "(0.9, 1.5)"], "argument --adam-betas: must be >= 0 and <= 1"),
    ("fairseq-generate", ["--num-workers", "-1"], "argument --num-workers: must be >= 0"),
    ("fairseq-generate", ["--max-source-positions", "-5"], "argument --max-source-positions: must be >= 1"),
    ("fairseq-generate", ["--data-buffer-size", "-1"], "argument --data-buffer-size: must be >= 0"),
    ("fairseq-generate", ["--min-len", "1000000"], "--min-len 1000000 is above --max-len-b 200"),
    ("fairseq-generate", ["--max-len-a", "0", "--max-len-b", "0"], "--min-len 1 is above --max-len-b 0"),
    ("fairseq-interactive", ["--min-len", "300"], "--min-len 300 is above --max-len-b 200"),
    ("fairseq-interactive", ["--buffer-size", "-3"], "argument --buffer-size: must be >= 1"),
    ("fairseq-interactive", ["--buffer-size", "0"], "argument --buffer-size: must be >= 1"),
    ("fairseq-interactive", ["--batch-size", "4", "--buffer-size", "2"], "--batch-size 4 is larger than --buffer-size 2"),
    ("fairseq-interactive", ["--batch-size", "2"], "--batch-size 2 is larger than --buffer-size 0"),
    ("fairseq-generate", ["--model-overrides", "{bad"], "--model-overrides '{bad' is not a Python dict literal"),
    ("fairseq-generate", ["--model-overrides", "[1]"], "--model-overrides '[1]' must be a dict of option names"),
    ("fairseq-interactive", ["--model-overrides", "{1: 2}"], "must be a dict of option names"),
    ("fairseq-validate", ["--model-overrides", "1"], "--model-overrides '1' must be a dict of option names"),
    ("fairseq-generate", ["--task", "translation_with_metrics", "--cpu-bf16"], "--cpu-bf16 is read only by fairseq-train"),
    ("fairseq-generate", ["--task", "translation_with_metrics", "--eval-sari"],
     "--eval-sari is read only by fairseq-train and fairseq-validate"),
    ("fairseq-interactive", ["--task", "translation_with_metrics", "--overwrite-best-checkpoint"],
     "--overwrite-best-checkpoint is read only by fairseq-train"),
    ("fairseq-validate", ["--task", "translation_with_metrics", "--cpu-bf16"], "--cpu-bf16 is read only by fairseq-train"),
    # neither --max-tokens nor --batch-size: fairseq asserts it after building the task and model
    ("fairseq-train", ["--no-batch-size"], "give --max-tokens N or --batch-size N (a batch's size in tokens or "
                                           "sentences): fairseq-train needs one"),
    ("fairseq-validate", ["--no-batch-size"], "give --max-tokens N or --batch-size N (a batch's size in tokens or "
                                              "sentences): fairseq-validate needs one"),
])
def test_fairseq_commands_refuse_bad_numbers_and_contradictions_in_one_line(command, argv, message, tmp_path,
                                                                           monkeypatch, capsys):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    build, base = {"fairseq-train": ("get_training_parser", ["--arch", "lstm", "--optimizer", "adam"]),
                   "fairseq-generate": ("get_generation_parser", ["--path", "x.pt"]),
                   "fairseq-interactive": ("get_interactive_generation_parser", ["--path", "x.pt"]),
                   "fairseq-validate": ("get_validation_parser", ["--path", "x.pt"])}[command]
    if command == "fairseq-validate" and "--task" not in argv:
        base = base + ["--task", "translation"]
    if command in ("fairseq-train", "fairseq-validate"):  # a batch size, as every real run gives
        base = base + ([] if "--no-batch-size" in argv else ["--max-tokens", "1000"])
        argv = [a for a in argv if a != "--no-batch-size"]
    monkeypatch.setattr(sys, "argv", [command])
    with pytest.raises(SystemExit) as info:
        options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + base + argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    assert message in err.strip().splitlines()[-1], err


@pytest.mark.parametrize("command,argv", [
    ("fairseq-generate", ["--min-len", "200", "--model-overrides", "{'max_source_positions': 5}"]),
    ("fairseq-generate", ["--min-len", "5", "--max-len-a", "1", "--max-len-b", "0"]),
    ("fairseq-interactive", ["--batch-size", "4", "--buffer-size", "4"]),
    ("fairseq-generate", ["--task", "translation_with_metrics", "--known-words", "words.txt"]),
    ("fairseq-validate", ["--task", "translation_with_metrics", "--eval-sari"]),
])
def test_fairseq_commands_keep_what_is_meaningful(command, argv, tmp_path, monkeypatch):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    build = {"fairseq-generate": "get_generation_parser", "fairseq-interactive": "get_interactive_generation_parser",
             "fairseq-validate": "get_validation_parser"}[command]
    monkeypatch.setattr(sys, "argv", [command])
    batch = ["--batch-size", "8"] if command == "fairseq-validate" else []
    options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path), "--path", "x.pt"] + batch + argv)


def test_every_option_of_the_task_says_which_commands_read_it():
    """fairseq-generate --task translation_with_metrics took the training-only options and ignored them:
    each field of the task's config is in TASK_OPTION_COMMANDS (a new option must choose)."""
    from dataclasses import fields

    from fairseq_wean.tasks.translation_with_metrics import TASK_OPTION_COMMANDS, TranslationWithMetricsConfig

    names = {f.name for f in fields(TranslationWithMetricsConfig)} - {"_name"}
    assert names == set(TASK_OPTION_COMMANDS), (names ^ set(TASK_OPTION_COMMANDS))
    assert set(TASK_OPTION_COMMANDS.values()) <= {"train", "validate", "all"}


# every option a fairseq command cannot run without, left out (each was a traceback: RuntimeError,
# KeyError None, an AssertionError after the data was loaded)
REQUIRED = [
    ("fairseq-train", "get_training_parser", ["--max-tokens", "100"], "give --arch NAME"),
    ("fairseq-train", "get_training_parser", ["--arch", "lstm"], "give --max-tokens N or --batch-size N"),
    ("fairseq-validate", "get_validation_parser", ["--path", "x.pt", "--max-tokens", "100"], "give --task NAME"),
    ("fairseq-validate", "get_validation_parser", ["--path", "x.pt", "--task", "translation"],
     "give --max-tokens N or --batch-size N"),
    ("fairseq-validate", "get_validation_parser", ["--task", "translation", "--max-tokens", "100"], "give --path"),
    ("fairseq-generate", "get_generation_parser", [], "give --path CHECKPOINT"),
    ("fairseq-interactive", "get_interactive_generation_parser", [], "give --path CHECKPOINT"),
    ("fairseq-eval-lm", "get_eval_lm_parser", [], "give --path CHECKPOINT"),
]


@pytest.mark.parametrize("command,build,argv,message", REQUIRED)
def test_a_required_option_left_out_is_one_line(command, build, argv, message, tmp_path, monkeypatch, capsys):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command])
    with pytest.raises(SystemExit) as info:
        options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(command + ": error: " + message), err
    # given, the command parses (a script that parses only to build a model is never refused)
    complete = {"give --arch NAME": ["--arch", "lstm"], "give --task NAME": ["--task", "translation"],
                "give --path": ["--path", "x.pt"]}.get(message.split(" CHECKPOINT")[0], ["--batch-size", "8"])
    options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + argv + complete)
    monkeypatch.setattr(sys, "argv", ["a-script.py"])
    if message.startswith(("give --max-tokens", "give --path")):
        options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + argv)
