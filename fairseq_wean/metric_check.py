"""``--best-checkpoint-metric`` names a value the validation logs, checked before the first update.

fairseq reads ``stats[--best-checkpoint-metric]`` after the first validation: a name the criterion
and the task do not log (``nll_loss`` with ``cross_entropy`` without ``--sentence-avg``,
``mode_loss`` with any criterion but ``core_mode_loss``, ``bleu`` without ``--eval-bleu``) was a
``KeyError`` after a whole epoch, nothing saved. What is logged depends on the criterion's and the
task's code and options, so it is not listed here: it is found by running what fairseq's
validation runs (``task.valid_step`` and ``task.reduce_metrics``) on the first two sentences of the
validation set, before training, with no gradients, in eval mode, the random state kept and the
metrics in a separate root (nothing of it reaches the training's logs or numbers).
"""
import logging

from fairseq_wean.errors import FairseqWeanError

logger = logging.getLogger(__name__)
ALWAYS_LOGGED = ("loss",)  # every fairseq criterion logs it


def logged_validation_metrics(trainer, task, subset):
    """The names fairseq's validation of ``subset`` logs with this trainer's model and criterion."""
    import torch
    from fairseq.logging import metrics

    dataset = task.dataset(subset)
    sample = dataset.collater([dataset[i] for i in range(min(2, len(dataset)))])
    sample, _ = trainer._prepare_sample(sample)
    model, criterion = trainer._model, trainer._criterion  # not the data-parallel wrapper
    modes = (model.training, criterion.training)
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() and next(model.parameters()).is_cuda else []
    try:
        with torch.random.fork_rng(devices=devices), torch.no_grad(), metrics.aggregate(new_root=True) as agg:
            model.eval()
            criterion.eval()
            _loss, _size, logging_output = task.valid_step(sample, model, criterion)
            task.reduce_metrics([logging_output], criterion)
    finally:
        model.train(modes[0])
        criterion.train(modes[1])
    return set(agg.get_smoothed_values())


def _stored(state, section, name):
    """``state``'s stored cfg value (a DictConfig or dict), or its old ``args``'s; None if absent."""
    cfg = state.get("cfg")
    if cfg is not None and cfg.get(section) is not None and name in cfg[section]:
        return cfg[section][name]
    return getattr(state.get("args"), name, None)


def _arch(model):
    """The --arch of a stored or parsed model section (a DictConfig, a dict or a Namespace)."""
    if model is None:
        return None
    for key in ("_name", "arch"):
        value = model.get(key) if hasattr(model, "get") else getattr(model, key, None)
        if value:
            return value
    return None


def keep_the_stored_best(cfg):
    """No resume replaces a better checkpoint_best.pt. Resuming --save-dir's checkpoint_last.pt: a
    --best-checkpoint-metric or --maximize-best-checkpoint-metric other than the stored run's is
    refused (its checkpoint_best.pt was chosen by the stored one); with --reset-meters or
    --reset-optimizer fairseq does not restore the best score, and the next epoch's worse one replaced
    checkpoint_best.pt: it is restored here from the checkpoint's extra_state. Another --arch than the
    stored run's is refused too (fairseq's "Cannot load model parameters" traceback). Before the first
    update."""
    import os

    from fairseq import checkpoint_utils

    from fairseq_wean.checkpoint_safety import _explained, safe_load

    checkpoint = cfg.checkpoint
    save_dir = getattr(checkpoint, "save_dir", None)
    if checkpoint.restore_file != "checkpoint_last.pt" or not isinstance(save_dir, str) or "://" in save_dir:
        return
    last = os.path.join(save_dir, "checkpoint_last{}.pt".format(checkpoint.checkpoint_suffix or ""))
    if not os.path.isfile(last):
        return
    state = _explained(last, safe_load, last, map_location="cpu")  # a refused or damaged file: one line
    stored_arch, arch = _arch(state.get("cfg", {}).get("model") or state.get("args")), _arch(cfg.model)
    if stored_arch and arch and stored_arch != arch:
        raise FairseqWeanError(
            "--arch {}: {} was written by --arch {} (its parameters cannot be loaded into another model); resume "
            "with --arch {}, or use another --save-dir".format(arch, last, stored_arch, stored_arch))
    metric = _stored(state, "checkpoint", "best_checkpoint_metric")
    maximize = _stored(state, "checkpoint", "maximize_best_checkpoint_metric")
    if metric is not None and (metric, bool(maximize)) != (checkpoint.best_checkpoint_metric,
                                                           bool(checkpoint.maximize_best_checkpoint_metric)):
        raise FairseqWeanError(
            "--best-checkpoint-metric {} ({}) differs from the run that wrote {} ({}, {}): its checkpoint_best.pt "
            "was chosen by that; resume with --best-checkpoint-metric {}{}, or use another --save-dir".format(
                checkpoint.best_checkpoint_metric,
                "maximized" if checkpoint.maximize_best_checkpoint_metric else "minimized", last, metric,
                "maximized" if maximize else "minimized", metric, " --maximize-best-checkpoint-metric" if maximize
                else " without --maximize-best-checkpoint-metric"))
    best = (state.get("extra_state") or {}).get("best")
    if best is not None and (checkpoint.reset_meters or checkpoint.reset_optimizer):
        checkpoint_utils.save_checkpoint.best = best
        logger.info("kept the best %s %s of %s (--reset-meters/--reset-optimizer do not reset it: "
                    "checkpoint_best.pt is replaced only by a better model)", metric or "score", best, last)


def check_best_checkpoint_metric(cfg, trainer):
    """Refuse (before the first update) a ``--best-checkpoint-metric`` that validation never logs; and
    :func:`keep_the_stored_best`."""
    keep_the_stored_best(cfg)
    checkpoint = cfg.checkpoint
    metric = checkpoint.best_checkpoint_metric
    if metric in ALWAYS_LOGGED or getattr(cfg.dataset, "disable_validation", False) or checkpoint.no_save:
        return
    task = trainer.task
    subset = cfg.dataset.valid_subset.split(",")[0]
    try:
        task.dataset(subset)
    except KeyError:
        return  # not loaded: fairseq reports its own error
    logged = logged_validation_metrics(trainer, task, subset)
    if metric not in logged:
        raise FairseqWeanError(
            "--best-checkpoint-metric {}: validation with --criterion {} and --task {} does not log it (fairseq "
            "would fail with a KeyError after the first epoch, saving nothing); it logs: {}".format(
                metric, cfg.criterion._name, cfg.task._name, ", ".join(sorted(logged))))
