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
* :func:`trial_problem`: everything else the two components refuse. Both are built as fairseq-train builds them
  (its configuration, from these options), on one dummy parameter, and the schedule is stepped once: whatever
  fails there (torch's ``Invalid momentum value``, a ZeroDivisionError, a missing library for a fused or
  accelerator-only optimizer) is one line naming the component and its options, instead of a traceback after the
  data and the model were loaded.
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
    """Build ``--optimizer`` and ``--lr-scheduler`` as fairseq-train does, on one dummy parameter, and step the
    schedule once: what fails, in one line naming the component and its options, or None."""
    import torch
    from fairseq import optim
    from fairseq.optim import lr_scheduler

    sections = (("optimizer", optim.OPTIMIZER_REGISTRY, optim.OPTIMIZER_DATACLASS_REGISTRY),
                ("lr_scheduler", lr_scheduler.LR_SCHEDULER_REGISTRY, lr_scheduler.LR_SCHEDULER_DATACLASS_REGISTRY))
    built = [torch.nn.Parameter(torch.zeros(2))]
    previous = logging.root.manager.disable
    logging.disable(max(previous, logging.WARNING))  # its warnings (manual's "epoch=1 does not exist") are the run's
    try:
        return _trial(args, sections, built)
    finally:
        logging.disable(previous)


def _trial(args, sections, built):
    from fairseq import optim
    from fairseq.optim import lr_scheduler

    for section, registry, dataclasses in sections:
        if getattr(args, section, None) not in registry:
            return None  # fairseq's parser refuses an unknown name itself
        try:
            config = _component_config(section, args, registry, dataclasses)
            if section == "optimizer":
                built = optim.build_optimizer(config, built)
            else:
                scheduler = lr_scheduler.build_lr_scheduler(config, built)
                scheduler.step_begin_epoch(1)
                rates = [scheduler.step_update(0), scheduler.step_update(1)]
                if not all(isinstance(r, (int, float)) and math.isfinite(r) and r >= 0 for r in rates):
                    raise ValueError("the first rates are {}".format(rates))
        except Exception as exc:  # any failure of fairseq's or torch's own building code: one line, not a traceback
            return "--{} {} cannot run with these options ({}); its options: {}".format(
                section.replace("_", "-"), getattr(args, section), _short(exc),
                _given_options(section, args))
    return None


def optim_option_problem(args):
    """The rules of this module, in fairseq-train (``patching.add_option_check``); other commands and scripts that
    parse training options only to build a model build no optimizer."""
    if running_command() != "train" or not hasattr(args, "lr_scheduler") or not hasattr(args, "optimizer"):
        return None
    rule = SCHEDULE_NEEDS.get(getattr(args, "lr_scheduler", None))
    return (rule(args) if rule else None) or zero_lr_problem(args) or trial_problem(args)


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


add_option_check(optim_option_problem)
add_option_check(label_smoothing_problem)
