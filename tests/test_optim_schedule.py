"""fairseq-train's optimizer stepped and its schedule simulated over the run at parse (optim_check), the relations
between the optimizer's and the schedule's options, the ranges that say what the run cannot train with, and a
diverging run's one line.

* every registered optimizer that builds on the CPU is stepped once in the trial (after the backward of a trivial
  loss): what it unpacks at its first step (--adam-betas of one or three values, adafactor's eps) is one line;
* every registered lr scheduler is stepped at every update of the run (or the stated sample of them): a negative or
  non-finite rate, a math error at a late update, a rate of 0 to the end of the run, a run that stops before its
  first update (--stop-min-lr) are one line at parse, exit 2, nothing written;
* relations: betas below 1, the literal's count, weight decay x the schedule's highest rate below 1 (every
  optimizer), --warmup-init-lr / --end-learning-rate / --min-lr above --lr, an --lr list a scheduler reads one value
  of;
* a diverging run (FloatingPointError) ends in one line naming crash.pt, exit 1, the checkpoints kept.
"""
import hashlib
import sys

import pytest

import fairseq_wean  # noqa: F401  (what --user-dir does)
from fairseq.optim import OPTIMIZER_REGISTRY
from fairseq.optim.lr_scheduler import LR_SCHEDULER_REGISTRY

from fairseq_wean import optim_check, option_ranges
from test_optim_options import BASE, NEEDED, argv_for, parse

# registered components that cannot build on a CPU with their defaults (test_optim_options says why)
UNBUILDABLE = {"cpu_adam", "lamb", "composite", "pass_through"}


def _refusal(extra, tmp_path, monkeypatch, capsys):
    save = tmp_path / "save"
    argv = [str(tmp_path)] + BASE + ([] if "--optimizer" in extra else ["--optimizer", "adam"]) + \
        ([] if "--lr" in extra else ["--lr", "0.005"]) + ["--save-dir", str(save)] + extra
    _, args, refused = parse(argv, monkeypatch)
    err = capsys.readouterr().err
    assert not save.exists()
    assert "Traceback" not in err, err[-2000:]
    return args, refused, (err.strip().splitlines() or [""])[-1]


# ------------------------------------------------------------------------------------------- item 1: the trial
@pytest.mark.parametrize("name", sorted(OPTIMIZER_REGISTRY))
def test_every_registered_optimizer_is_stepped_in_the_trial(name, tmp_path, monkeypatch):
    from fairseq.optim import FairseqOptimizer

    calls = []
    step = FairseqOptimizer.step
    monkeypatch.setattr(FairseqOptimizer, "step", lambda self, *a, **k: calls.append(name) or step(self, *a, **k))
    _, args, refused = parse(argv_for("--optimizer", name, tmp_path), monkeypatch)
    if name in UNBUILDABLE:
        assert refused is not None and refused.code == 2
        return
    assert refused is None and calls, "the trial of --optimizer {} never called its step()".format(name)


def literal_cases():
    """(optimizer, flag, a value of the wrong count) for every registered optimizer with a literal of numbers."""
    from fairseq_wean.option_rules import component_actions

    cases = []
    for name in sorted(OPTIMIZER_REGISTRY):
        if name in UNBUILDABLE:
            continue
        for action in component_actions("optimizer", name):
            if action.dest in optim_check.LITERAL_SHAPES:
                cases += [(name, action.option_strings[0], value) for value in ("(0.5,)", "(0.5, 0.5, 0.5)")]
    return cases


def test_the_literal_cases_are_found():
    assert {(n, f) for n, f, _ in literal_cases()} >= {("adam", "--adam-betas"), ("adamax", "--adamax-betas"),
                                                       ("adafactor", "--adafactor-eps")}


@pytest.mark.parametrize("name,flag,value", literal_cases())
def test_a_literal_of_the_wrong_count_is_one_line_for_every_optimizer(name, flag, value, tmp_path, monkeypatch,
                                                                      capsys):
    """H01/H03/H15/H16: the relation names the count; without it (monkeypatched away) the trial's build or step
    still refuses a shorter literal in one line (the longer one fairseq ignored silently: the relation's only)."""
    extra = ["--optimizer", name, flag, value] + (["--scale-parameter"] if name == "adafactor" else [])
    _, refused, last = _refusal(extra, tmp_path, monkeypatch, capsys)
    assert refused is not None and refused.code == 2
    count = len(eval(value))
    assert last.endswith("{} {}: --optimizer {} reads exactly 2 numbers, got {}".format(flag, value, name, count))
    if count == 1:
        monkeypatch.setattr(optim_check, "relation_problem", lambda args: None)
        _, refused, last = _refusal(extra, tmp_path, monkeypatch, capsys)
        assert refused is not None and refused.code == 2
        assert "--optimizer {} cannot run with these options (".format(name) in last, last


@pytest.mark.parametrize("name", sorted(LR_SCHEDULER_REGISTRY))
def test_every_registered_scheduler_is_simulated_over_every_update_of_a_short_run(name, tmp_path, monkeypatch):
    from fairseq.optim.lr_scheduler import FairseqLRScheduler

    seen = []
    monkeypatch.setattr(optim_check, "schedule_problem", lambda args, updates, rates: seen.append(
        (list(updates), len(rates))) or None)
    extra = ["--max-update", "37"] + (["--lr-period-updates", "4"] if name in ("cosine", "triangular") else [])
    needed = [] if name == "cosine" else NEEDED.get(name, [])
    _, args, refused = parse([str(tmp_path)] + BASE + ["--optimizer", "adam", "--lr", "0.005", "--lr-scheduler", name]
                             + needed + extra, monkeypatch)
    if name in UNBUILDABLE:
        assert refused is not None
        return
    assert refused is None, name
    assert seen and seen[0] == (list(range(37)), 37), (name, seen[:1])
    assert issubclass(LR_SCHEDULER_REGISTRY[name], FairseqLRScheduler)


def test_a_long_or_unbounded_run_is_sampled_as_documented():
    import argparse

    short = optim_check.schedule_updates(argparse.Namespace(max_update=120))
    assert short == (list(range(120)), 120)
    points, most = optim_check.schedule_updates(argparse.Namespace(max_update=300000, update2lr='{"123457": 1}'))
    assert most == 300000 and points[:optim_check.EXHAUSTIVE] == list(range(optim_check.EXHAUSTIVE))
    assert points[-optim_check.TAIL:] == list(range(300000 - optim_check.TAIL, 300000)) and 123457 in points
    points, most = optim_check.schedule_updates(argparse.Namespace(max_update=0))
    assert most is None and points[-1] == optim_check.HORIZON - 1


@pytest.mark.parametrize("extra,message", [
    # H07: math domain error at update 4 (the trial stepped updates 0 and 1)
    (["--lr-scheduler", "cosine", "--max-update", "20", "--lr-period-updates", "2", "--t-mult", "0.5"],
     "--lr-scheduler cosine cannot run with these options (ValueError: math domain error)"),
    # H08/H09: manual's table read at its own update
    (["--lr-scheduler", "manual", "--update2lr", '{"3": -1.0}'],
     "--lr-scheduler manual gives update 4 the learning rate -1: a rate must be a finite number >= 0"),
    (["--lr-scheduler", "manual", "--update2lr", '{"3": 1e400}'],
     "--lr-scheduler manual gives update 4 the learning rate inf"),
    (["--lr-scheduler", "manual", "--max-update", "100000", "--update2lr", '{"77777": -0.5}'],
     "--lr-scheduler manual gives update 77778 the learning rate -0.5"),
    # H85/H86: 0 from some update to the end
    (["--lr-scheduler", "polynomial_decay", "--total-num-update", "2", "--max-update", "5"],
     "--lr-scheduler polynomial_decay: the learning rate is 0 from update 3 to the end of the run (--max-update 5)"),
    (["--lr-scheduler", "polynomial_decay", "--total-num-update", "100", "--power", "1e6"],
     "--lr-scheduler polynomial_decay: the learning rate is 0 from update 2 to the end of the run (every later"),
    # H22: stops before its first update
    (["--lr-scheduler", "reduce_lr_on_plateau", "--stop-min-lr", "1.0"],
     "--stop-min-lr 1: fairseq-train stops once the learning rate is at or below it, and the first rate of "
     "--lr-scheduler reduce_lr_on_plateau is 0.005: the run would stop before its first update"),
    (["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10", "--warmup-init-lr", "0", "--stop-min-lr", "0"],
     "--stop-min-lr 0: fairseq-train stops once the learning rate is at or below it"),
    (["--stop-min-lr", "0.005"], "the first rate of --lr-scheduler fixed is 0.005: the run would stop"),
    # H69: a list the scheduler reads one value of
    (["--lr", "0.005,0.0001", "--lr-scheduler", "step", "--lr-deacy-period", "100"],
     "--lr 0.005,0.0001: --lr-scheduler step reads only the first value (0.005); the others do nothing"),
    # H02 and item 2's relations
    (["--adam-betas", "(1, 0.98)"], "--adam-betas (1, 0.98): each beta must be below 1"),
    (["--adam-betas", "(0.9, 1.0)"], "--adam-betas (0.9, 1.0): each beta must be below 1"),
    (["--optimizer", "adamax", "--adamax-betas", "(1, 0.5)"], "--adamax-betas (1, 0.5): each beta must be below 1"),
    (["--optimizer", "adafactor", "--beta1", "1"], "--beta1 1: must be below 1"),
    (["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4", "--warmup-init-lr", "1.0"],
     "--warmup-init-lr 1 is above --lr 0.005: a warmup rises from --warmup-init-lr to --lr"),
    (["--lr-scheduler", "reduce_lr_on_plateau", "--warmup-updates", "3", "--warmup-init-lr", "0.5"],
     "--warmup-init-lr 0.5 is above --lr 0.005"),
    (["--lr-scheduler", "cosine", "--max-update", "10", "--warmup-updates", "2", "--warmup-init-lr", "0.5"],
     "--warmup-init-lr 0.5 is above --lr 0.005"),
    (["--lr-scheduler", "polynomial_decay", "--total-num-update", "5", "--end-learning-rate", "1.0"],
     "--end-learning-rate 1 is above --lr 0.005: --lr-scheduler polynomial_decay goes from --lr down to it"),
    (["--lr-scheduler", "cosine", "--max-update", "10", "--min-lr", "1.0"],
     "--min-lr 1 is above --lr 0.005: --lr-scheduler cosine goes from --lr down to it"),
])
def test_schedule_mistakes_are_one_line_before_any_work(extra, message, tmp_path, monkeypatch, capsys):
    _, refused, last = _refusal(extra, tmp_path, monkeypatch, capsys)
    assert refused is not None and refused.code == 2, last
    assert message in last, last


# the optimizers whose decay is an L2 term divided by the adaptive scale: a step of about lr whatever the decay,
# no multiplication of the weights (not refused: test_meaningful_schedules_are_kept)
ADAPTIVE_L2 = {"adagrad", "adadelta"}


def decay_cases():
    """Every registered optimizer that builds on the CPU and has a --weight-decay that multiplies the weights by
    1 - lr x decay (decoupled, or L2 under an SGD-like update)."""
    from fairseq_wean.option_rules import component_actions

    found = []
    for name in sorted(set(OPTIMIZER_REGISTRY) - UNBUILDABLE - ADAPTIVE_L2):
        if "weight_decay" in {a.dest for a in component_actions("optimizer", name)}:
            found.append(name)
    return found


def test_the_decay_optimizers_are_found():
    assert {"adam", "sgd", "nag", "adafactor", "adamax"} <= set(decay_cases())


@pytest.mark.parametrize("name", decay_cases())
def test_weight_decay_that_zeroes_the_weights_is_one_line_for_every_optimizer(name, tmp_path, monkeypatch, capsys):
    """H05/H57/H74: lr x weight decay >= 1 trained to loss 3e28 (adam, sgd) or 4.6e6 (nag), exit 0."""
    lr = "0.005"
    _, refused, last = _refusal(["--optimizer", name, "--lr", lr, "--weight-decay", "1000"], tmp_path, monkeypatch,
                                capsys)
    assert refused is not None and refused.code == 2, (name, last)
    assert "--optimizer {} with --weight-decay 1000 at the learning rate {:g} (the schedule's highest)".format(
        name, float(lr)) in last, last
    # a usual decay is kept
    _, args, refused = parse(argv_for("--optimizer", name, tmp_path, ["--weight-decay", "0.01"]), monkeypatch)
    assert refused is None, name


@pytest.mark.parametrize("extra", [
    ["--optimizer", "adam", "--weight-decay", "0.1", "--lr", "0.5"],
    ["--optimizer", "adagrad", "--weight-decay", "0.01", "--lr", "0.5"],
    ["--optimizer", "adagrad", "--weight-decay", "1000", "--lr", "0.005"],  # ADAPTIVE_L2: a step of about lr
    ["--optimizer", "adadelta", "--weight-decay", "1000", "--lr", "1"],
    ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4000", "--max-update", "300000"],
    ["--lr-scheduler", "cosine", "--max-update", "100000", "--warmup-updates", "1000"],
    ["--lr-scheduler", "polynomial_decay", "--total-num-update", "1000", "--max-update", "1000"],
    # the rate decays to --end-learning-rate 0 at update 1000, no --max-update: the run may end before (--max-epoch)
    ["--lr-scheduler", "polynomial_decay", "--total-num-update", "1000", "--warmup-updates", "100"],
    ["--lr-scheduler", "cosine", "--lr-period-updates", "10", "--max-update", "100"],
    ["--lr", "0.005,0.001", "--lr-scheduler", "fixed"],
    ["--lr", "0.005,0.001", "--lr-scheduler", "polynomial_decay", "--total-num-update", "100"],  # one per epoch
    # a ramp from --lr 0 up to the end rate (optim_check.ZERO_LR_MOVES' decision)
    ["--lr", "0", "--lr-scheduler", "polynomial_decay", "--total-num-update", "10", "--end-learning-rate", "0.001"],
    ["--lr-scheduler", "manual", "--update2lr", '{"3": 0.001}'],
    ["--lr-scheduler", "reduce_lr_on_plateau", "--stop-min-lr", "1e-9"],
    ["--lr", "0", "--lr-scheduler", "triangular", "--max-lr", "0.01", "--max-update", "100000"],
    ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4", "--warmup-init-lr", "0.001"],
    # H11: a warmup longer than the run trains at rates below --lr (a documented decision, not refused)
    ["--warmup-updates", "1000", "--max-update", "5"],
])
def test_meaningful_schedules_are_kept(extra, tmp_path, monkeypatch):
    argv = [str(tmp_path)] + BASE + ([] if "--optimizer" in extra else ["--optimizer", "adam"]) + \
        ([] if "--lr" in extra else ["--lr", "0.005"]) + extra
    _, args, refused = parse(argv, monkeypatch)
    assert refused is None and args is not None


# ------------------------------------------------------------------------------------ item 4: range rows
DN = ["--task", "denoising", "--arch", "bart_base", "--tokens-per-sample", "64"]


@pytest.mark.parametrize("extra,message", [
    # H21: --use-bmuf's numbers
    (["--use-bmuf", "--block-momentum", "nan"], "argument --block-momentum: must be a finite number, got nan"),
    (["--use-bmuf", "--block-momentum", "1.5"], "argument --block-momentum: must be >= 0 and <= 1, got 1.5"),
    (["--use-bmuf", "--block-lr", "-5"], "argument --block-lr: must be > 0, got -5"),
    (["--use-bmuf", "--global-sync-iter", "0"], "argument --global-sync-iter: must be >= 1, got 0"),
    (["--use-bmuf", "--warmup-iterations", "-1"], "argument --warmup-iterations: must be >= 0, got -1"),
    # H28, H29, H23
    (DN + ["--mask", "0.3", "--mask-length", "span-poisson", "--poisson-lambda", "0"],
     "argument --poisson-lambda: must be > 0, got 0"),
    (DN + ["--insert", "1000"], "--insert 1000: a block of --tokens-per-sample 64 tokens grows to 64064 with the "
                                "inserted ones, more than the model's --max-source-positions 1024"),
    (["--task", "language_modeling", "--arch", "transformer_lm", "--tokens-per-sample", "1000000000"],
     "argument --tokens-per-sample: must be >= 1 and <= 1048576, got 1000000000"),
])
def test_range_rows_of_bmuf_and_the_noising_tasks(extra, message, tmp_path, monkeypatch, capsys):
    extra = extra if "--arch" in extra else ["--arch", "lstm"] + extra
    save = tmp_path / "save"
    _, _, refused = parse([str(tmp_path), "--optimizer", "adam", "--lr", "0.005", "--max-tokens", "100",
                           "--save-dir", str(save)] + extra, monkeypatch)
    err = _skip_where_denoising_cannot_build(capsys) if "denoising" in extra else capsys.readouterr().err
    assert refused is not None and refused.code == 2 and "Traceback" not in err, err[-2000:]
    assert message in err.strip().splitlines()[-1], err[-2000:]
    assert not save.exists()


def test_the_tokens_per_sample_cap_is_the_positions_cap():
    from fairseq_wean.modules.model_options import MAX_POSITIONS

    assert option_ranges.MAX_TOKENS_PER_SAMPLE == MAX_POSITIONS


@pytest.mark.parametrize("extra", [DN + ["--insert", "0.5"], DN + ["--insert", "15"],
                                   DN + ["--mask", "0.3", "--mask-length", "span-poisson", "--poisson-lambda", "3"]])
def test_meaningful_noising_options_are_kept(extra, tmp_path, monkeypatch, capsys):
    _, args, refused = parse([str(tmp_path), "--optimizer", "adam", "--lr", "0.005", "--max-tokens", "100"] + extra,
                             monkeypatch)
    _skip_where_denoising_cannot_build(capsys)
    assert refused is None and args is not None


def _skip_where_denoising_cannot_build(capsys):
    err = capsys.readouterr().err
    if "fairseq cannot build this command's options: argument --max-source-positions" in err:
        pytest.skip("this fairseq's denoising task and bart define --max-source-positions twice (refused in one line)")
    return err


def test_the_bmuf_rows_keep_fairseqs_defaults(tmp_path, monkeypatch):
    """(--use-bmuf on one process is refused as a no-op by another check: the rows are checked on the parser.)"""
    parser, _, _ = parse([str(tmp_path)] + BASE + ["--optimizer", "adam", "--lr", "0.005", "--use-bmuf"], monkeypatch)
    actions = {a.dest: a for a in parser._actions}
    for dest in ("block_lr", "block_momentum", "global_sync_iter", "warmup_iterations"):
        assert actions[dest].type(str(actions[dest].default)) == actions[dest].default, dest


# --------------------------------------------------------------------------------- item 3: a diverging run
def _md5(path):
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_a_diverging_run_is_one_line_naming_crash_pt_and_keeps_the_checkpoints(data_bin, tmp_path):
    """H06/H09/H76: fairseq's FloatingPointError traceback (crash.pt written) is one line, exit 1; the checkpoints
    of the run before are unchanged."""
    from conftest import cli, train_args

    save = tmp_path / "ck"
    small = ["--embed-dim", "16", "--encoder-hidden-size", "16", "--decoder-hidden-size", "16"]
    cli("fairseq-train", *train_args(data_bin, save, "wean_lstm", *small, epochs=1))
    before = {p.name: _md5(p) for p in save.glob("checkpoint*.pt")}
    assert "checkpoint_last.pt" in before
    proc = cli("fairseq-train", *train_args(data_bin, save, "wean_lstm", *small, "--lr", "1e30", epochs=2),
               check=False)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert last.startswith("fairseq-wean: error: training diverged at update "), last
    assert "(gradients are Nan/Inf): fairseq saved the model at that point to {}".format(save / "crash.pt") in last
    assert (save / "crash.pt").is_file()
    assert {p.name: _md5(p) for p in save.glob("checkpoint*.pt")} == before


def test_the_divergence_line_without_a_crash_pt(tmp_path):
    from fairseq_wean.fixes_training import divergence_error

    exc = divergence_error(FloatingPointError("Minimum loss scale reached (0.0001). Your loss is probably "
                                              "exploding."), str(tmp_path), 41)
    assert str(exc).startswith("training diverged at update 42 (Minimum loss scale reached (0.0001). Your loss is "
                               "probably exploding.): no crash.pt was written; the checkpoints written before are "
                               "kept"), str(exc)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
