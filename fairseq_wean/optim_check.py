"""fairseq-train's optimizer and learning-rate schedule, checked when the command is parsed, before any data or model.

The numeric options that the chosen ``--optimizer`` and ``--lr-scheduler`` add have their ranges in
``option_ranges.FAIRSEQ_RANGES`` (one option at a time; --label-smoothing, under every criterion, here:
:func:`label_smoothing_problem`). What a range cannot say is here, run after fairseq's parse of
fairseq-train (``patching.add_option_check``):

* :data:`SCHEDULE_NEEDS`: the options a scheduler needs together (cosine: --max-update or --lr-period-updates;
  polynomial_decay: --total-num-update; tri_stage: --phase-ratio or its steps; triangular: a period of 2 updates
  or more). fairseq found them by a bare ``assert`` after the batches were built, or a hydra traceback;
* :func:`zero_lr_problem`: ``--lr 0`` (or a 0 in an --lr list) under a schedule that scales every update by it:
  the run "trains" and changes nothing. Allowed where the schedule moves away from it on its own (triangular
  cycles up to --max-lr, polynomial_decay towards a positive --end-learning-rate, manual's own table,
  pass_through's optimizer schedule);
* :func:`relation_problem`: relations no one-option range says (a literal's count, betas below 1, --warmup-init-lr,
  --end-learning-rate and --min-lr against --lr);
* :func:`trial_problem`: everything else the two components refuse. Both are built as fairseq-train builds them
  (its configuration, from these options), on one dummy parameter; the optimizer is stepped once after the backward
  of a trivial loss, and the schedule is simulated over the run's updates (:func:`schedule_updates`: every update
  up to --max-update, or a stated sample of them). Whatever fails there (torch's ``Invalid momentum value``, a
  ZeroDivisionError, an --adam-betas unpacked at the first step, a missing library for a fused or accelerator-only
  optimizer, cosine's math domain error at a late update) is one line naming the component and its options,
  instead of a traceback after the data and the model were loaded; so is a rate that is negative or not finite, a
  rate of 0 to the end of the run, a run --stop-min-lr stops before its first update (:func:`schedule_problem`), an
  --lr list the scheduler reads one value of, and a weight decay that multiplies the weights by
  1 - lr x decay <= 0 at the schedule's highest rate (:func:`decay_problem`);
* :func:`insertion_problem`: denoising's --insert against the model's positions.
"""
import argparse
import logging
import math

from fairseq_wean.patching import add_option_check, running_command


def _number(args, name, default=None):
    value = getattr(args, name, default)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _lrs(args):
    lr = getattr(args, "lr", None)
    values = lr if isinstance(lr, (list, tuple)) else [lr]
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _cosine(args):
    if _number(args, "lr_period_updates", -1) > 0:
        return None
    warmup, most = _number(args, "warmup_updates", 0), _number(args, "max_update", 0)
    if most <= warmup:
        return ("--lr-scheduler cosine needs --lr-period-updates N or --max-update N above --warmup-updates {} "
                "(its period is --max-update minus the warmup; --max-update is {})".format(warmup, most))
    return None


def _polynomial_decay(args):
    if getattr(args, "total_num_update", None) is None:
        return ("--lr-scheduler polynomial_decay needs --total-num-update N: the update at which the rate reaches "
                "--end-learning-rate (usually --max-update's value)")
    return None


def _tri_stage(args):
    ratio = getattr(args, "phase_ratio", None)
    if ratio is None:
        if _number(args, "decay_steps", 0) < 1:
            return ("--lr-scheduler tri_stage needs --phase-ratio A,B,C (the warmup, hold and decay fractions of "
                    "--max-update, adding up to 1) or --warmup-steps, --hold-steps and --decay-steps (at least 1)")
        return None
    most = _number(args, "max_update", 0)
    if len(ratio) != 3 or sum(ratio) != 1:
        return "--phase-ratio {} must be three fractions adding up to 1 (warmup, hold, decay)".format(
            ",".join(map(str, ratio)))
    if int(most * ratio[2]) < 1:
        return ("--lr-scheduler tri_stage --phase-ratio needs --max-update N with at least one decay update: "
                "--max-update {} x {} is none".format(most, ratio[2]))
    return None


def _triangular(args):
    period = _number(args, "lr_period_updates", 0)
    if period < 2:
        return ("--lr-scheduler triangular needs --lr-period-updates of at least 2 (a cycle goes up for half of "
                "it and down for the other half), got {}".format(period))
    return None


# scheduler -> rule(args) -> one line or None, for the options it needs together
SCHEDULE_NEEDS = {"cosine": _cosine, "polynomial_decay": _polynomial_decay, "tri_stage": _tri_stage,
                  "triangular": _triangular}

# schedules under which --lr 0 is a starting point, not the rate of every update: scheduler -> condition(args)
ZERO_LR_MOVES = {
    "triangular": lambda args: True,  # cycles between --lr and --max-lr
    "polynomial_decay": lambda args: _number(args, "end_learning_rate", 0) > 0,  # from --lr to the end rate
    "manual": lambda args: True,  # --epoch2lr / --update2lr set the rates
    "pass_through": lambda args: True,  # the optimizer's own schedule
}


def zero_lr_problem(args):
    """``--lr 0`` (a 0 anywhere in the list) under a schedule that scales every update by it: one line."""
    lrs, scheduler = _lrs(args), getattr(args, "lr_scheduler", None)
    if 0 not in lrs or ZERO_LR_MOVES.get(scheduler, lambda a: False)(args):
        return None
    return ("--lr {}: a learning rate of 0 trains nothing under --lr-scheduler {} (every update is scaled by it; "
            "--warmup-init-lr sets where a warmup starts): give a rate above 0, e.g. --lr 0.001".format(
                ",".join("{:g}".format(v) for v in lrs), scheduler))


def _component_config(section, args, registry, dataclasses):
    """The configuration fairseq-train builds the component ``section`` (optimizer, lr_scheduler) from: its
    dataclass with these options merged in, as ``convert_namespace_to_omegaconf`` does (without hydra's compose,
    which takes most of a second), or the legacy components' namespace."""
    from fairseq.dataclass.configs import OptimizationConfig
    from fairseq.dataclass.utils import _override_attr, _set_legacy_defaults
    from omegaconf import OmegaConf

    name = getattr(args, section)
    if name not in dataclasses:
        config = argparse.Namespace(**vars(args))
        _set_legacy_defaults(config, registry[name])
        config._name = name
        return config
    overrides = _override_attr("optimization", OptimizationConfig, args) + _override_attr(
        section, dataclasses[name], args) + ["{}._name={}".format(section, name)]
    root = OmegaConf.create({"optimization": OmegaConf.structured(OptimizationConfig),
                             section: OmegaConf.structured(dataclasses[name])})
    return OmegaConf.merge(root, OmegaConf.from_dotlist(overrides))[section]


def _given_options(section, args):
    """``--name value`` of the component's own options, for the one line."""
    from fairseq_wean.option_rules import component_actions

    names = [a.dest for a in component_actions(section, getattr(args, section))]
    shown = ["--{} {}".format(n.replace("_", "-"), getattr(args, n)) for n in names if hasattr(args, n)]
    return ", ".join(shown) or "none"


def _short(exc):
    text = " ".join(str(exc).split())
    return "{}{}".format(type(exc).__name__, ": " + text[:200] if text else "")


def trial_problem(args):
    """Build ``--optimizer`` and ``--lr-scheduler`` as fairseq-train does, on one dummy parameter: the optimizer is
    stepped once (after the backward of a trivial loss: what it unpacks at its first step, --adam-betas of one or
    three values, adafactor's eps pair, fails there) and the schedule is simulated over the run's updates
    (:func:`schedule_updates`, :func:`schedule_problem`): what fails, in one line naming the component and its
    options, or None."""
    import torch
    from fairseq import optim
    from fairseq.optim import lr_scheduler

    sections = (("optimizer", optim.OPTIMIZER_REGISTRY, optim.OPTIMIZER_DATACLASS_REGISTRY),
                ("lr_scheduler", lr_scheduler.LR_SCHEDULER_REGISTRY, lr_scheduler.LR_SCHEDULER_DATACLASS_REGISTRY))
    # three magnitudes: a decay that flips the sign of every one is multiplicative (lr x weight decay >= 1)
    built = [torch.nn.Parameter(torch.tensor([1e-3, 1.0, 1e3]))]
    previous = logging.root.manager.disable
    logging.disable(max(previous, logging.WARNING))  # its warnings (manual's "epoch=1 does not exist") are the run's
    try:
        return _trial(args, sections, built)
    finally:
        logging.disable(previous)


def _step(optimizer, param, lr=None):
    """One update of ``optimizer`` after the backward of a loss with a zero gradient; the weights after it."""
    import torch

    if "Fused" in type(getattr(optimizer, "optimizer", optimizer)).__name__:
        return None  # an accelerator-only kernel: the CPU trial cannot step it (its build was tried)
    with torch.no_grad():
        param.copy_(torch.tensor([1e-3, 1.0, 1e3]))
    param.grad = None
    (param * 0).sum().backward()
    if lr is not None:
        optimizer.set_lr(lr)
    optimizer.step()
    return param.detach().clone()


def _trial(args, sections, built):
    from fairseq import optim
    from fairseq.optim import lr_scheduler

    param, optimizer = built[0], None
    for section, registry, dataclasses in sections:
        if getattr(args, section, None) not in registry:
            return None  # fairseq's parser refuses an unknown name itself
        try:
            config = _component_config(section, args, registry, dataclasses)
            if section == "optimizer":
                optimizer = optim.build_optimizer(config, built)
                _step(optimizer, param)
                continue
            scheduler = lr_scheduler.build_lr_scheduler(config, optimizer)
            updates, rates = _simulate(scheduler, args)
            problem = schedule_problem(args, updates, rates) or _lr_list_problem(
                args, registry, dataclasses, optimizer, rates)
            if problem is None and rates:
                problem = decay_problem(args, _step(optimizer, param, max(rates)), max(rates))
        except Exception as exc:  # any failure of fairseq's or torch's own building code: one line, not a traceback
            return "--{} {} cannot run with these options ({}); its options: {}".format(
                section.replace("_", "-"), getattr(args, section), _short(exc),
                _given_options(section, args))
        if problem:
            return problem
    return None


# the schedule is stepped at every update up to EXHAUSTIVE (and the last TAIL of the run, consecutively), and at
# SAMPLES updates spaced geometrically up to --max-update (or HORIZON updates when --max-update is not given: the
# run's length in updates is then unknown) and at every update manual's --update2lr names
EXHAUSTIVE, TAIL, SAMPLES, HORIZON = 4000, 1000, 400, 10 ** 8


def schedule_updates(args):
    """The update numbers the schedule is simulated at, sorted, and the number of updates of the run (None when
    --max-update is not given). ``step_update(n)`` sets the rate of update n + 1."""
    import json

    most = _number(args, "max_update", 0) or 0
    end = most if most > 0 else HORIZON
    if end <= EXHAUSTIVE + TAIL:
        return list(range(end)), (most or None)
    points = set(range(EXHAUSTIVE)) | set(range(end - TAIL, end)) | {
        min(end - 1, int(EXHAUSTIVE * (end / EXHAUSTIVE) ** (i / SAMPLES))) for i in range(SAMPLES + 1)}
    try:
        points |= {int(k) for k in json.loads(getattr(args, "update2lr", None) or "{}") if 0 <= int(k) < end}
    except (ValueError, TypeError):
        pass  # manual's own parse refuses it
    return sorted(points), (most or None)


def _simulate(scheduler, args):
    """The rates at :func:`schedule_updates`. The scheduler reads its options from a plain copy of its configuration
    (the same values: omegaconf's attribute access was most of the time of a simulated update)."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(getattr(scheduler, "cfg", None), DictConfig):
        scheduler.cfg = argparse.Namespace(**OmegaConf.to_container(scheduler.cfg, resolve=True))
    scheduler.step_begin_epoch(1)
    updates, _ = schedule_updates(args)
    return updates, [scheduler.step_update(n) for n in updates]


def _rate(value):
    return "{:g}".format(value) if isinstance(value, (int, float)) else repr(value)


def schedule_problem(args, updates, rates):
    """The simulated rates (``rates[i]``: of update ``updates[i] + 1``): a rate that is negative or not a finite
    number (manual's table, a schedule's arithmetic) is refused; so is a run that stops before its first update
    (the first rate at or below --stop-min-lr: fairseq-train's loop stops there) and a rate of 0 from some update
    to the end of the run (--max-update given; without it, from the second update on: the run cannot train)."""
    name = getattr(args, "lr_scheduler", None)
    for n, rate in zip(updates, rates):
        if not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate < 0:
            return ("--lr-scheduler {} gives update {} the learning rate {}: a rate must be a finite number >= 0 at "
                    "every update of the run (the schedule was simulated over the run's updates); its options: "
                    "{}".format(name, n + 1, _rate(rate), _given_options("lr_scheduler", args)))
    stop = _number(args, "stop_min_lr", -1)
    if rates and rates[0] <= stop:
        return ("--stop-min-lr {:g}: fairseq-train stops once the learning rate is at or below it, and the first "
                "rate of --lr-scheduler {} is {}: the run would stop before its first update; give a --stop-min-lr "
                "below the rates the run should train at".format(stop, name, _rate(rates[0])))
    zero = len(rates)
    while zero > 0 and rates[zero - 1] == 0:
        zero -= 1
    if zero == len(rates) or zero == 0:
        return None  # a rate of 0 at the start only: zero_lr_problem's
    _, most = schedule_updates(args)
    first = updates[zero] + 1
    if most is None and first > 2:
        return None  # the run may end (--max-epoch) before the rate reaches 0
    return ("--lr-scheduler {}: the learning rate is 0 from update {} to the end of the run ({}): those updates "
            "train nothing; its options: {} (e.g. --total-num-update at least --max-update, a smaller --power, or "
            "--end-learning-rate above 0)".format(
                name, first, "--max-update {}".format(most) if most else "every later update, whatever its length",
                _given_options("lr_scheduler", args)))


def _lr_list_problem(args, registry, dataclasses, optimizer, rates):
    """An --lr list (several values) under a scheduler whose rates are those of its first value alone: the other
    values do nothing (step, polynomial_decay read ``cfg.lr[0]``; fixed reads one value per epoch)."""
    from fairseq.optim import lr_scheduler

    lrs = _lrs(args)
    if len(lrs) < 2:
        return None
    single = argparse.Namespace(**dict(vars(args), lr=lrs[:1]))
    alone = lr_scheduler.build_lr_scheduler(_component_config("lr_scheduler", single, registry, dataclasses),
                                            optimizer)
    _, alone_rates = _simulate(alone, single)
    again = lr_scheduler.build_lr_scheduler(_component_config("lr_scheduler", args, registry, dataclasses),
                                            optimizer)
    if alone_rates != rates or _epoch_rates(alone, len(lrs)) != _epoch_rates(again, len(lrs)):
        return None
    return ("--lr {}: --lr-scheduler {} reads only the first value ({:g}); the others do nothing: give one --lr "
            "(--lr-scheduler fixed takes one value per epoch)".format(
                ",".join("{:g}".format(v) for v in lrs), args.lr_scheduler, lrs[0]))


def _epoch_rates(scheduler, count):
    """The rate of an update in each of the epochs 1 .. count + 1, as fairseq-train sets it: the epoch's start
    (``step_begin_epoch``), then ``step_update`` (``Trainer.lr_step``), which has the last word."""
    rates = []
    for epoch in range(1, count + 2):
        scheduler.step_begin_epoch(epoch)
        rates.append(scheduler.step_update(epoch * 10))
    return rates


def decay_problem(args, after, rate):
    """One update with a zero gradient at the schedule's highest rate: weights of three magnitudes that all end at
    or below 0 (or not finite) are a weight decay that multiplies every weight by 1 - lr x decay <= 0 (decoupled,
    or L2 under SGD-like updates) at every update: the model cannot train."""
    values = [] if after is None else after.tolist()
    if not values or all(math.isfinite(v) for v in values) and any(v > 0 for v in values):
        return None
    return ("--optimizer {} with --weight-decay {} at the learning rate {:g} (the schedule's highest): one update "
            "with a zero gradient takes the weights 0.001, 1, 1000 to {}: each update multiplies every weight by "
            "1 - lr x weight decay <= 0; keep the highest rate x --weight-decay below 1".format(
                args.optimizer, _rate(getattr(args, "weight_decay", None)), rate,
                ", ".join("{:g}".format(v) for v in after.tolist())))


# Python-literal options of the optimizers: how many numbers each unpacks (extra ones were ignored silently,
# fewer a traceback at the first step) and whether each is a moving-average rate (beta), which must stay below 1
LITERAL_SHAPES = {"adam_betas": (2, True), "adamax_betas": (2, True), "lamb_betas": (2, True),
                  "adafactor_eps": (2, False)}
# scheduler -> its floor option: the rate it decays or anneals towards (a floor above --lr inverts the schedule;
# cosine silently lowered it to --lr)
SCHEDULE_FLOORS = {"polynomial_decay": "end_learning_rate", "cosine": "min_lr"}
WARMUP_FROM_INIT = ("inverse_sqrt", "reduce_lr_on_plateau", "cosine", "fixed")


def relation_problem(args):
    """What no one-option range says: a literal of the wrong count, a beta of 1 (torch's Adam refuses it: the
    average never moves; Adam's bias correction 1 - beta^t divides by 0), a warmup whose --warmup-init-lr is above
    --lr (it runs downwards), a floor (--end-learning-rate, --min-lr) above --lr."""
    import ast

    optimizer = getattr(args, "optimizer", None)
    own = _own_options("optimizer", optimizer)
    for dest, (count, rates) in LITERAL_SHAPES.items():
        text = getattr(args, dest, None) if dest in own else None
        try:
            value = ast.literal_eval(text) if isinstance(text, str) else text
        except (ValueError, SyntaxError):
            continue  # the range row refuses it
        if not isinstance(value, (tuple, list)):
            continue
        flag = "--" + dest.replace("_", "-")
        if len(value) != count:
            return "{} {}: --optimizer {} reads exactly {} numbers, got {}".format(flag, text, optimizer, count,
                                                                                len(value))
        if rates and any(isinstance(v, (int, float)) and v >= 1 for v in value):
            return ("{} {}: each beta must be below 1 (a moving average with beta 1 never moves from its start, "
                    "and Adam's bias correction 1 - beta^t divides by 0)".format(flag, text))
    beta1 = _number(args, "beta1") if "beta1" in own else None
    if beta1 is not None and beta1 >= 1:
        return "--beta1 {:g}: must be below 1 (with 1 the first moment never moves from 0: no update)".format(beta1)
    lrs, scheduler = _lrs(args), getattr(args, "lr_scheduler", None)
    if not lrs:
        return None
    top, schedule_own = max(lrs), _own_options("lr_scheduler", scheduler)
    init = _number(args, "warmup_init_lr", -1)
    if scheduler in WARMUP_FROM_INIT and "warmup_init_lr" in schedule_own and _number(args, "warmup_updates", 0) > 0 \
            and init > top:
        return ("--warmup-init-lr {:g} is above --lr {:g}: a warmup rises from --warmup-init-lr to --lr (this one "
                "would run downwards); give a --warmup-init-lr below --lr, e.g. 0".format(init, top))
    floor = SCHEDULE_FLOORS.get(scheduler)
    value = _number(args, floor) if floor in schedule_own else None
    if value is not None and value > top > 0:  # from --lr 0: a ramp up by design (ZERO_LR_MOVES)
        return ("--{} {:g} is above --lr {:g}: --lr-scheduler {} goes from --lr down to it (above, the schedule is "
                "inverted or silently clamped); give a value below --lr".format(
                    floor.replace("_", "-"), value, top, scheduler))
    return None


def _own_options(section, name):
    from fairseq_wean.option_rules import component_actions

    try:
        return {a.dest for a in component_actions(section, name)}
    except Exception:  # an unknown name: fairseq's parser refuses it
        return set()


def optim_option_problem(args):
    """The rules of this module, in fairseq-train (``patching.add_option_check``); other commands and scripts that
    parse training options only to build a model build no optimizer."""
    if running_command() != "train" or not hasattr(args, "lr_scheduler") or not hasattr(args, "optimizer"):
        return None
    rule = SCHEDULE_NEEDS.get(getattr(args, "lr_scheduler", None))
    return (rule(args) if rule else None) or zero_lr_problem(args) or relation_problem(args) or \
        trial_problem(args)


def label_smoothing_problem(args):
    """``--label-smoothing`` under every criterion that has it (fairseq's label_smoothed_cross_entropy, nat_loss,
    ..., the plugin's core_mode_loss), in every command that parses it: the one rule of core_mode_loss
    (``core_mode_loss.option_problem``, [0, 1) and finite). fairseq took nan (a nan loss, crash.pt at the first
    update) and 1 or above (a negative weight on the reference word: training pushes it down). The bound 1 is
    left out, which no range row (``option_ranges``, bounds kept) can say; the one line is core_mode_loss's."""
    value = getattr(args, "label_smoothing", None)
    if value is None or getattr(args, "criterion", None) is None:
        return None
    from fairseq_wean.criterions.core_mode_loss import option_problem

    return option_problem(1.0, value)


def insertion_problem(args):
    """denoising's --insert P adds ceil(P x n) random tokens to each block of n <= --tokens-per-sample tokens: the
    grown block must fit the model's --max-source-positions (past it, an IndexError of the position embedding at the
    first batch, a crash.pt, an abort). Every task with --insert (denoising, multilingual_denoising)."""
    insert, tokens = _number(args, "insert", 0), _number(args, "tokens_per_sample")
    most = _number(args, "max_source_positions")
    if not insert or tokens is None or most is None:
        return None
    grown = tokens + math.ceil(tokens * insert)
    if grown <= most:
        return None
    return ("--insert {:g}: a block of --tokens-per-sample {} tokens grows to {} with the inserted ones, more than "
            "the model's --max-source-positions {}: lower --insert (a share of each block: at most {:g} here) or "
            "--tokens-per-sample".format(insert, tokens, grown, most, math.floor((most - tokens) / tokens * 1000)
                                        / 1000))


add_option_check(optim_option_problem)
add_option_check(insertion_problem)
add_option_check(label_smoothing_problem)
