"""fairseq-train's --optimizer and --lr-scheduler (and --criterion and --task), every registered one: their options
are range-checked at parse and the optimizer and scheduler are tried (built on one dummy parameter, as fairseq-train
builds them) before any data or model work.

* the enumeration: for every optimizer, lr scheduler, criterion and task of fairseq's registries, the training parser
  is built as fairseq builds it with that choice; every numeric option it adds must have a range row
  (``option_ranges.FAIRSEQ_RANGES``) or a reason (:data:`ALLOWED`), and every float option refuses nan and inf: a new
  optimizer's, scheduler's, criterion's or task's option fails here;
* every registered component with its default options on the CPU either builds or is one line naming it (those
  that need a library or an accelerator, or options they cannot do without);
* the probe's cases (sgd --momentum nan / -2, cosine without --max-update, polynomial_decay without
  --total-num-update or with 0, tri_stage without its phases, --lr 0 under a fixed schedule): one line, exit 2,
  nothing written.

In-process parses (``options.parse_args_and_arch``), no training.
"""
import argparse
import sys

import pytest

import fairseq_wean  # noqa: F401  (what --user-dir does)
from fairseq import options
from fairseq.criterions import CRITERION_REGISTRY
from fairseq.optim import OPTIMIZER_REGISTRY
from fairseq.optim.lr_scheduler import LR_SCHEDULER_REGISTRY

from fairseq_wean import optim_check, option_ranges, patching
from test_option_ranges import model_actions, option_name, ranged, takes_numbers

BASE = ["--arch", "lstm", "--max-tokens", "100"]
# what a component cannot build without (the rest of its options at their defaults)
NEEDED = {"triangular": ["--max-lr", "0.01"], "cosine": ["--max-update", "100"],
          "polynomial_decay": ["--total-num-update", "100"], "tri_stage": ["--decay-steps", "10"]}
# flag -> why a number there has no range row
ALLOWED = {
    "--mode-loss-weight": "the plugin's core_mode_loss checks it itself (core_mode_loss.option_problem, its own line)",
    "--label-smoothing": "[0, 1), an open bound no range row says: one rule for every criterion that has it "
                         "(optim_check.label_smoothing_problem, core_mode_loss's line; the test below)",
    # the tasks' options that are no number: fairseq parses the text itself
    **dict.fromkeys(("--lambda-bt", "--lambda-dae", "--lambda-parallel-config", "--lambda-denoising-config",
                     "--lambda-otf-bt-config"), "a weight or a schedule 'UPDATE:WEIGHT,UPDATE:WEIGHT' (the "
                    "back-translation tasks' PiecewiseLinearFn), text, not one number"),
    "--stream-shifts": "speech_unit_modeling's comma list of shifts per stream, text the task splits",
    **dict.fromkeys(("--extra-data", "--extra-lang-pairs", "--langtoks", "--sampling-weights"),
                    "translation_multi_simple_epoch's dictionary (a Python literal of names), not a number"),
}
# a default that means "not set" and that the component refuses when it is used (sentence_prediction asserts
# --num-classes > 0; --upsample-primary -1 is read as 1, compat's fix): given on the command line, refused at parse
UNSET_DEFAULTS = {"num_classes", "upsample_primary"}
TABLES = (option_ranges.FAIRSEQ_RANGES, option_ranges.FAIRSEQ_ANY_VALUE, option_ranges.GENERATION_RANGES,
          option_ranges.SHARDING_RANGES, option_ranges.GENERATION_ANY_VALUE)


def components():
    """What the trial build tries: every registered optimizer and lr scheduler."""
    return [("--optimizer", name) for name in sorted(OPTIMIZER_REGISTRY)] + \
           [("--lr-scheduler", name) for name in sorted(LR_SCHEDULER_REGISTRY)]


def enumerated():
    """What adds numeric options to fairseq-train when chosen: the components, every registered criterion and every
    registered task (the parser is built as fairseq builds it with --task T, whatever the parse then refuses)."""
    from fairseq.tasks import TASK_REGISTRY

    return components() + [("--criterion", name) for name in sorted(CRITERION_REGISTRY)] + \
        [("--task", name) for name in sorted(TASK_REGISTRY)]


def argv_for(flag, name, tmp_path, extra=()):
    chosen = [flag, name] + NEEDED.get(name, [])
    others = (["--optimizer", "adam"] if flag != "--optimizer" else []) + ["--lr", "0.005"]
    return [str(tmp_path)] + BASE + others + chosen + list(extra)


def parse(argv, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    parser = options.get_training_parser()
    try:
        return parser, options.parse_args_and_arch(parser, argv), None
    except SystemExit as exc:
        return parser, None, exc


def literal_numbers(action):
    """A Python-literal option of numbers (--adamax-betas '(0.9, 0.999)'): its default says so."""
    import ast

    try:
        value = ast.literal_eval(action.default) if isinstance(action.default, str) else None
    except (ValueError, SyntaxError):
        return False
    return isinstance(value, (tuple, list)) and bool(value) and all(isinstance(v, (int, float)) for v in value)


def component_options(tmp_path, monkeypatch):
    """{dest: (flag, component, action)} of the numeric options of the training parser built with each registered
    optimizer, lr scheduler and criterion (fairseq adds a component's options when it is chosen)."""
    found = {}
    for flag, name in enumerated():
        parser, _, _ = parse(argv_for(flag, name, tmp_path), monkeypatch)  # a refusal still built the parser
        model = model_actions(parser)
        for action in parser._actions:
            if id(action) in model or not (takes_numbers(action) or literal_numbers(action)):
                continue
            found.setdefault(action.dest, (flag, name, action))
    return found


def component_dests(tmp_path, monkeypatch):
    return set(component_options(tmp_path, monkeypatch))


def test_every_numeric_option_of_every_component_and_task_has_a_range(tmp_path, monkeypatch):
    found, offenders, finite, kept = component_options(tmp_path, monkeypatch), [], [], []
    for dest, (flag, name, action) in sorted(found.items()):
        where = "{} {}: {}".format(flag, name, option_name(action))
        if option_name(action) in ALLOWED:
            continue
        if not ranged(action) or not any(dest in table for table in TABLES):
            offenders.append(where)
            continue
        default = action.default
        if isinstance(default, (int, float)) and not isinstance(default, bool) and dest not in UNSET_DEFAULTS:
            try:  # fairseq's own default, given on the command line, is kept
                action.type(str(default) if dest not in patching.FAIRSEQ_LITERAL else str(tuple([default])))
            except argparse.ArgumentTypeError as exc:
                kept.append("{} {}: {}".format(where, default, exc))
        low, kind = action.type.range[:2]
        for value in (["nan", "inf", "-inf"] if kind is float and low != float("-inf") else []):
            try:
                action.type(value if dest not in patching.FAIRSEQ_LITERAL else "({}, 0.5)".format(value))
            except argparse.ArgumentTypeError:
                continue
            finite.append("{} {}".format(where, value))
    # the enumeration reached the options each component adds
    assert {"momentum", "adadelta_rho", "clip_threshold", "t_mult", "lr_period_updates", "total_num_update",
            "phase_ratio", "final_lr_scale", "max_lr", "lr_deacy_period", "adamax_betas", "ignore_prefix_size",
            "label_smoothing", "mask_prob", "rotate", "bt_beam_size", "replace_length", "num_classes",
            "virtual_epoch_size"} <= set(found), sorted(found)
    assert not set(ALLOWED) - {option_name(a) for _, _, a in found.values()}, "ALLOWED names options that are gone"
    assert not offenders, "numeric options of an optimizer, lr scheduler, criterion or task with no range (add a " \
        "row to option_ranges.FAIRSEQ_RANGES, or a reason to ALLOWED):\n  " + "\n  ".join(offenders)
    assert not finite, "float options that take nan/inf:\n  " + "\n  ".join(finite)
    assert not kept, "fairseq's own defaults refused:\n  " + "\n  ".join(kept)


@pytest.mark.parametrize("flag,name", components())
def test_every_component_with_its_defaults_builds_or_is_one_line(flag, name, tmp_path, monkeypatch, capsys):
    """The trial build on the CPU: a component that builds parses (and its trial says so); one that cannot
    (a library it needs is missing, e.g. cpu_adam's DeepSpeed or lamb's apex; composite's parameter groups;
    pass_through without an optimizer of its own) is one line naming it, exit 2."""
    _, args, refused = parse(argv_for(flag, name, tmp_path), monkeypatch)
    err = capsys.readouterr().err
    if refused is None:
        assert optim_check.trial_problem(args) is None
        return
    last = err.strip().splitlines()[-1]
    assert refused.code == 2 and "Traceback" not in err, err[-2000:]
    assert last.startswith("fairseq-train: error: {} {} cannot run with these options (".format(flag, name)), last
    assert name in ("cpu_adam", "lamb", "composite", "pass_through"), last  # the others build on a CPU


def test_a_whole_number_option_stays_whole_under_a_float_row(tmp_path, monkeypatch, capsys):
    """denoising's --permute-sentences (a share of sentences): 0.12.2 types it float, 0.12.3 int. Its row is a float
    row; where fairseq's own type is int the row keeps it (0.5 would be truncated to 0 in the task's config)."""
    import fairseq

    _, args, refused = parse(argv_for("--task", "denoising", tmp_path, ["--permute-sentences", "0.5"]), monkeypatch)
    err = capsys.readouterr().err
    if tuple(map(int, fairseq.__version__.split(".")[:3])) >= (0, 12, 3):
        assert refused is not None and refused.code == 2, err[-2000:]
        assert "argument --permute-sentences: expected a whole number, got '0.5'" in err.strip().splitlines()[-1]
    else:
        assert "--permute-sentences" not in err.strip().splitlines()[-1] if refused else args.permute_sentences == 0.5


def smoothing_criteria():
    """Every registered criterion with a --label-smoothing (its dataclass's field, or its add_args)."""
    import dataclasses

    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY

    found = []
    for name, cls in sorted(CRITERION_REGISTRY.items()):
        config = CRITERION_DATACLASS_REGISTRY.get(name)
        if config is not None:
            dests = {f.name for f in dataclasses.fields(config)}
        else:
            legacy = argparse.ArgumentParser()
            try:
                cls.add_args(legacy)
            except Exception:  # a criterion whose options need a package this environment lacks
                continue
            dests = {a.dest for a in legacy._actions}
        if "label_smoothing" in dests:
            found.append(name)
    return found


def test_the_label_smoothing_criteria_are_found():
    assert {"core_mode_loss", "label_smoothed_cross_entropy", "nat_loss"} <= set(smoothing_criteria())


@pytest.mark.parametrize("name", smoothing_criteria())
@pytest.mark.parametrize("value", ["nan", "inf", "1.5", "1", "-0.1"])
def test_label_smoothing_out_of_0_1_is_one_line_under_every_criterion(name, value, tmp_path, monkeypatch, capsys):
    """fairseq's label_smoothed_cross_entropy and nat_loss took nan (a nan loss) and 1.5 (the reference word
    weighted below 0); every criterion with the option now gives core_mode_loss's line at parse, exit 2."""
    save = tmp_path / "save"
    _, _, refused = parse(argv_for("--criterion", name, tmp_path, ["--label-smoothing", value, "--save-dir",
                                                                   str(save)]), monkeypatch)
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1] if err.strip() else ""
    assert refused is not None and refused.code == 2 and "Traceback" not in err, err[-2000:]
    expected = "must be a number, got {}".format(float(value)) if value in ("nan", "inf") else \
        "must be in [0, 1), got {}: it is the probability mass spread".format(float(value))
    assert last.startswith("fairseq-train: error: --label-smoothing " + expected), last
    assert not save.exists()


@pytest.mark.parametrize("name", ["label_smoothed_cross_entropy", "nat_loss", "core_mode_loss"])
@pytest.mark.parametrize("value", ["0", "0.1", "0.999"])
def test_label_smoothing_in_0_1_is_kept(name, value, tmp_path, monkeypatch):
    _, args, refused = parse(argv_for("--criterion", name, tmp_path, ["--label-smoothing", value]), monkeypatch)
    assert refused is None or optim_check.label_smoothing_problem(argparse.Namespace(
        criterion=name, label_smoothing=float(value))) is None
    assert refused is not None or args.label_smoothing == float(value)


@pytest.mark.parametrize("extra,message", [
    # G04/G46, G05/G47: torch's ValueError (or nan training and a crash.pt) after the batches were built
    (["--optimizer", "sgd", "--momentum", "nan"], "argument --momentum: must be a finite number, got nan"),
    (["--optimizer", "sgd", "--momentum", "-2"], "argument --momentum: must be >= 0 and <= 1, got -2"),
    (["--optimizer", "nag", "--momentum", "inf"], "argument --momentum: must be a finite number, got inf"),
    (["--optimizer", "adamax", "--adamax-betas", "(0.9, 1.5)"], "argument --adamax-betas: must be >= 0 and <= 1"),
    # G06/G48, G07: an assert or a math domain error after the batches were built
    (["--lr-scheduler", "cosine"], "--lr-scheduler cosine needs --lr-period-updates N or --max-update N above "
                                   "--warmup-updates 0"),
    (["--lr-scheduler", "cosine", "--max-update", "10", "--warmup-updates", "10"],
     "--lr-scheduler cosine needs --lr-period-updates N or --max-update N above --warmup-updates 10"),
    (["--lr-scheduler", "cosine", "--max-update", "10", "--t-mult", "-1", "--lr-period-updates", "-4"],
     "argument --t-mult: must be > 0, got -1"),
    # G08: a hydra traceback; G09/G49: a bare AssertionError after the batches were built
    (["--lr-scheduler", "polynomial_decay"], "--lr-scheduler polynomial_decay needs --total-num-update N"),
    (["--lr-scheduler", "polynomial_decay", "--total-num-update", "0"],
     "argument --total-num-update: must be >= 1, got 0"),
    # G10
    (["--lr-scheduler", "tri_stage"], "--lr-scheduler tri_stage needs --phase-ratio A,B,C"),
    (["--lr-scheduler", "tri_stage", "--phase-ratio", "(0.1, 0.4, 0.6)", "--max-update", "10"],
     "--phase-ratio 0.1,0.4,0.6 must be three fractions adding up to 1"),
    (["--lr-scheduler", "tri_stage", "--phase-ratio", "(0.1, 0.4, 0.5)"],
     "--lr-scheduler tri_stage --phase-ratio needs --max-update N with at least one decay update"),
    (["--lr-scheduler", "tri_stage", "--decay-steps", "5", "--final-lr-scale", "0"],
     "argument --final-lr-scale: must be > 0 and <= 1, got 0"),
    (["--lr-scheduler", "triangular"], "the following arguments are required: --max-lr"),
    (["--lr-scheduler", "triangular", "--max-lr", "0.01", "--lr-period-updates", "1"],
     "--lr-scheduler triangular needs --lr-period-updates of at least 2"),
    # what only fairseq's own building code knows: the trial build
    (["--lr-scheduler", "triangular", "--max-lr", "0.001"], "--lr-scheduler triangular cannot run with these "
     "options (AssertionError: max_lr must be more than lr); its options: --max-lr 0.001"),
    (["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "0"], "--lr-scheduler inverse_sqrt cannot run with "
     "these options (ZeroDivisionError: float division by zero); its options: --warmup-updates 0"),
    (["--lr-scheduler", "step", "--min-lr", "0.1"], "--lr-scheduler step cannot run with these options "
     "(AssertionError); its options: --warmup-updates 0"),
    # the options of the registered tasks: a ValueError in the first batches (numpy's binomial, torch's multinomial),
    # or no noise / no output at all
    (["--task", "denoising", "--mask", "1.5"], "argument --mask: must be >= 0 and <= 1, got 1.5"),
    (["--task", "masked_lm", "--mask-prob", "nan"], "argument --mask-prob: must be a finite number, got nan"),
    (["--task", "denoising", "--rotate", "-0.1"], "argument --rotate: must be >= 0 and <= 1, got -0.1"),
    (["--task", "semisupervised_translation", "--bt-beam-size", "0"],
     "argument --bt-beam-size: must be >= 1 and <= 1024, got 0"),
    (["--task", "translation_multi_simple_epoch", "--sampling-temperature", "0"],
     "argument --sampling-temperature: must be > 0, got 0"),
    (["--task", "dummy_lm", "--dict-size", "0"], "argument --dict-size: must be >= 1, got 0"),
    (["--task", "denoising", "--replace-length", "2"], "argument --replace-length: must be >= -1 and <= 1, got 2"),
    # G03: --lr 0 "trained" an epoch and wrote checkpoints
    (["--lr", "0"], "--lr 0: a learning rate of 0 trains nothing under --lr-scheduler fixed"),
    (["--lr", "0.25,0"], "--lr 0.25,0: a learning rate of 0 trains nothing under --lr-scheduler fixed"),
    (["--lr", "0", "--lr-scheduler", "inverse_sqrt"], "a learning rate of 0 trains nothing under --lr-scheduler "
                                                      "inverse_sqrt"),
    (["--lr", "0", "--lr-scheduler", "polynomial_decay", "--total-num-update", "10"],
     "a learning rate of 0 trains nothing under --lr-scheduler polynomial_decay"),
])
def test_optimizer_and_schedule_mistakes_are_one_line_before_any_work(extra, message, tmp_path, monkeypatch, capsys):
    save = tmp_path / "save"
    argv = [str(tmp_path)] + BASE + ([] if "--optimizer" in extra else ["--optimizer", "adam"]) + \
        ([] if "--lr" in extra else ["--lr", "0.005"]) + ["--save-dir", str(save)] + extra
    _, _, refused = parse(argv, monkeypatch)
    err = capsys.readouterr().err
    assert refused is not None and refused.code == 2 and "Traceback" not in err, err[-2000:]
    assert message in err.strip().splitlines()[-1], err[-2000:]
    assert not save.exists()


@pytest.mark.parametrize("extra", [
    ["--optimizer", "sgd", "--momentum", "0.9"], ["--optimizer", "nag"], ["--optimizer", "adafactor"],
    ["--lr-scheduler", "cosine", "--max-update", "10"], ["--lr-scheduler", "cosine", "--lr-period-updates", "50"],
    ["--lr-scheduler", "polynomial_decay", "--total-num-update", "100", "--warmup-updates", "10"],
    ["--lr-scheduler", "tri_stage", "--phase-ratio", "(0.1, 0.4, 0.5)", "--max-update", "100"],
    ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4000", "--warmup-init-lr", "0"],
    ["--lr-scheduler", "reduce_lr_on_plateau", "--lr-shrink", "0.5"],
    # a rate of 0 that the schedule moves away from: kept
    ["--lr", "0", "--lr-scheduler", "triangular", "--max-lr", "0.01"],
    ["--lr", "0", "--lr-scheduler", "polynomial_decay", "--total-num-update", "10", "--end-learning-rate", "0.001"],
])
def test_meaningful_optimizers_and_schedules_are_kept(extra, tmp_path, monkeypatch):
    argv = [str(tmp_path)] + BASE + ([] if "--optimizer" in extra else ["--optimizer", "adam"]) + \
        ([] if "--lr" in extra else ["--lr", "0.005"]) + extra
    _, args, refused = parse(argv, monkeypatch)
    assert refused is None and args is not None


def test_the_trial_runs_in_fairseq_train_only(tmp_path, monkeypatch):
    """A script that parses training options only to build a model builds no optimizer: not refused there."""
    monkeypatch.setattr(sys, "argv", ["a-script.py"])
    args = options.parse_args_and_arch(options.get_training_parser(), [str(tmp_path)] + BASE + [
        "--optimizer", "adam", "--lr", "0", "--lr-scheduler", "cosine"])
    assert args.lr == [0.0] and optim_check.optim_option_problem(args) is None


# ------------------------------------------------------------------ upper bounds of the quantities (G15, G69, G12)
@pytest.mark.parametrize("argv,message", [
    (["--no-repeat-ngram-size", str(patching.MAX_NO_REPEAT_NGRAM + 1), "--max-len-a", "1"],
     "argument --no-repeat-ngram-size: must be >= 0 and <= {}".format(patching.MAX_NO_REPEAT_NGRAM)),
    (["--no-repeat-ngram-size", "201"], "--no-repeat-ngram-size 201 is above --max-len-b 200 (with --max-len-a 0 "
                                        "the length of every output): no output has an n-gram that long"),
    (["--no-repeat-ngram-size", "7", "--max-len-b", "6"], "--no-repeat-ngram-size 7 is above --max-len-b 6"),
    (["--beam", "100000"], "argument --beam: must be >= 1 and <= {}".format(patching.MAX_BEAM)),
])
@pytest.mark.parametrize("command", ["fairseq-generate", "fairseq-interactive"])
def test_decoding_quantities_have_upper_bounds(command, argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [command])
    build = options.get_generation_parser if command == "fairseq-generate" else \
        options.get_interactive_generation_parser
    with pytest.raises(SystemExit) as info:
        options.parse_args_and_arch(build(), [str(tmp_path), "--path", "x.pt"] + argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and message in err.strip().splitlines()[-1], err[-2000:]
    # the largest meaningful values are kept
    for kept in (["--no-repeat-ngram-size", "200"], ["--no-repeat-ngram-size", "6", "--max-len-b", "6"],
                 ["--no-repeat-ngram-size", str(patching.MAX_NO_REPEAT_NGRAM), "--max-len-a", "1.2"],
                 ["--beam", str(patching.MAX_BEAM), "--max-len-b", "10"]):
        options.parse_args_and_arch(build(), [str(tmp_path), "--path", "x.pt"] + kept)


@pytest.mark.parametrize("flag,value,message", [
    ("--core-topk", "-1", "--core-topk -1 is below 1, the least this model takes"),
    ("--core-topk", "0", "--core-topk 0 is below 1, the least this model takes"),
    ("--core-num-frequent", "-3", "--core-num-frequent -3 is below 0, the least this model takes"),
    # the sizes and depths: refused only in build_model before (exit 1, after both dictionaries were loaded)
    ("--encoder-layers", "0", "--encoder-layers must be a positive whole number, got 0: every layer needs"),
    ("--decoder-layers", "-2", "--decoder-layers must be a positive whole number, got -2"),
    ("--embed-dim", "0", "--embed-dim must be a positive whole number, got 0"),
    ("--encoder-hidden-size", "0", "--encoder-hidden-size must be a positive whole number, got 0"),
    ("--decoder-hidden-size", "-1", "--decoder-hidden-size must be a positive whole number, got -1"),
    ("--decoder-out-embed-dim", "0", "--decoder-out-embed-dim must be a positive whole number, got 0"),
])
def test_model_lower_bounds_are_checked_at_parse_with_the_upper_ones(flag, value, message, tmp_path,
                                                                        monkeypatch, capsys):
    """G12: refused only at build_model, after the task had loaded both dictionaries."""
    from fairseq_wean.modules import model_options

    assert set(model_options.MODEL_OPTION_MINIMA) == set(model_options.MODEL_OPTION_MAXIMA)  # each bounded below
    save = tmp_path / "save"
    _, _, refused = parse([str(tmp_path), "--arch", "core_copy", "--criterion", "core_mode_loss", "--optimizer",
                           "adam", "--max-tokens", "100", "--save-dir", str(save), flag, value], monkeypatch)
    err = capsys.readouterr().err
    assert refused is not None and refused.code == 2, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("fairseq-train: error: " + message), err[-2000:]
    assert not save.exists()
    _, args, refused = parse([str(tmp_path), "--arch", "core_copy", "--criterion", "core_mode_loss", "--optimizer",
                              "adam", "--max-tokens", "100", "--core-topk", "1", "--core-num-frequent", "0"],
                             monkeypatch)
    assert refused is None and (args.core_topk, args.core_num_frequent) == (1, 0)
