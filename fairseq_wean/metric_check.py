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


def _entry(section, key):
    """``section[key]`` of a DictConfig, a dict or a Namespace, None if absent: by ``in``, not ``.get``,
    which omegaconf 2.0 (fairseq 0.12.2's) refuses for a key a struct config does not hold."""
    if section is None:
        return None
    if hasattr(section, "keys"):
        return section[key] if key in section else None
    return getattr(section, key, None)


def _stored(state, section, name):
    """``state``'s stored cfg value (a DictConfig or dict), or its old ``args``'s; None if absent."""
    stored = _entry(state.get("cfg"), section)
    if stored is not None and name in stored:
        return stored[name]
    return getattr(state.get("args"), name, None)


def _arch(model):
    """The --arch of a stored or parsed model section (a DictConfig, a dict or a Namespace)."""
    if model is None:
        return None
    for key in ("_name", "arch"):
        value = _entry(model, key)
        if value:
            return value
    return None


def start_checkpoint(cfg):
    """The checkpoint fairseq-train starts from and how, decided as fairseq's
    ``checkpoint_utils.load_checkpoint`` decides it: ``(path, how, resets)`` with ``resets`` the set of
    ``optimizer``/``meters``/``dataloader`` it resets, or None for a start from scratch. Every route:
    --save-dir's checkpoint_last.pt, --restore-file FILE, --continue-once FILE (no checkpoint_last.pt),
    --finetune-from-model FILE (no checkpoint_last.pt; everything reset)."""
    import os

    checkpoint = cfg.checkpoint
    save_dir, suffix = getattr(checkpoint, "save_dir", None), checkpoint.checkpoint_suffix or ""
    resets = {name for name in ("optimizer", "meters", "dataloader") if getattr(checkpoint, "reset_" + name, False)}
    restore = checkpoint.restore_file
    if restore != "checkpoint_last.pt":
        path, how = restore.replace(".pt", suffix + ".pt"), "--restore-file"
    elif not isinstance(save_dir, str):
        return None
    else:
        path, how = os.path.join(save_dir, "checkpoint_last{}.pt".format(suffix)), "resuming"
        if not os.path.exists(path):
            continue_once, finetune = getattr(checkpoint, "continue_once", None), checkpoint.finetune_from_model
            if continue_once:
                path, how = continue_once, "--continue-once"
            elif finetune:
                path, how, resets = finetune, "--finetune-from-model", {"optimizer", "meters", "dataloader"}
            else:
                return None
    if "://" in path or not os.path.isfile(path):
        return None  # fairseq's own error, or checkpoint_safety's earlier one
    return path, how, resets


def _position(state):
    """(epoch, iterations in that epoch, updates) at which a run restored from ``state`` goes on."""
    extra = state.get("extra_state") or {}
    iterator = extra.get("train_iterator") or {}
    history = state.get("optimizer_history") or [{}]
    return (int(iterator.get("epoch", 1)), int(iterator.get("iterations_in_epoch", 0)),
            int(history[-1].get("num_updates", 0) or 0))


def later_checkpoints(cfg, start, state):
    """The names in --save-dir that this run would write (fairseq's save_checkpoint conditions:
    checkpointEPOCH.pt unless --no-epoch-checkpoints, every --save-interval epochs;
    checkpoint_EPOCH_UPDATES.pt with --save-interval-updates; checkpoint_last.pt unless
    --no-last-checkpoints) and that hold a later point of training than the one it starts at
    (``state``, the start checkpoint's, with --reset-dataloader at epoch 1, --reset-optimizer at
    update 0): ``(names, (epoch, updates))``."""
    import os
    import re

    from fairseq_wean.checkpoint_safety import _explained, safe_load
    from fairseq_wean.train_files_check import checkpoint_names

    checkpoint, optimization = cfg.checkpoint, cfg.optimization
    save_dir, suffix = checkpoint.save_dir, checkpoint.checkpoint_suffix or ""
    if checkpoint.no_save or not isinstance(save_dir, str) or "://" in save_dir or not os.path.isdir(save_dir):
        return [], None
    path, _how, resets = start
    epoch, iterations, updates = _position(state)
    if "dataloader" in resets:
        epoch, iterations = 1, 0
    if "optimizer" in resets:
        updates = 0
    max_epoch, max_update = optimization.max_epoch or 0, optimization.max_update or 0
    if max_epoch and epoch > max_epoch:
        return [], (epoch, updates)  # nothing is trained, nothing written
    interval, interval_updates = max(checkpoint.save_interval, 1), checkpoint.save_interval_updates
    ending = re.escape(suffix) + r"\.pt\Z"
    later = []
    for name in checkpoint_names(save_dir, suffix):
        match = re.match(r"checkpoint(\d+)" + ending, name)
        if match:
            e = int(match.group(1))
            if not checkpoint.no_epoch_checkpoints and e >= epoch and e % interval == 0 \
                    and not (max_epoch and e > max_epoch):
                later.append(name)
            continue
        match = re.match(r"checkpoint_(\d+)_(\d+)" + ending, name)
        if match:
            e, u = int(match.group(1)), int(match.group(2))
            if interval_updates > 0 and e >= epoch and u > updates and u % interval_updates == 0 \
                    and not (max_epoch and e > max_epoch) and not (max_update and u > max_update):
                later.append(name)
    last = os.path.join(save_dir, "checkpoint_last{}.pt".format(suffix))
    if not checkpoint.no_last_checkpoints and os.path.isfile(last):
        stored = state if os.path.samefile(path, last) else _explained(last, safe_load, last, map_location="cpu")
        if _position(stored)[:2] > (epoch, iterations):
            later.append(os.path.basename(last))
    return later, (epoch, updates)


def keep_the_stored_best(cfg, model=None):
    """No run replaces a better or later checkpoint by accident, whatever checkpoint it starts from
    (:func:`start_checkpoint`: --save-dir's checkpoint_last.pt, --restore-file, --continue-once,
    --finetune-from-model), checked before the first update on the start checkpoint, read once
    (:func:`fairseq_wean.fixes_training.read_start_checkpoint`: fairseq's own load of it gets the
    same state):

    * another --arch than the stored run's is refused (fairseq's "Cannot load model parameters"
      traceback); left to the load where ``model`` (the trainer's) is one of the plugin's, which
      names the parameters that do not fit;
    * a --best-checkpoint-metric or --maximize-best-checkpoint-metric other than the stored run's is
      refused where its best score counts: restored by fairseq (no --reset-meters/--reset-optimizer),
      or --save-dir holds a checkpoint_best.pt (chosen by the stored metric); not for
      --finetune-from-model, which resets everything;
    * with --reset-meters or --reset-optimizer fairseq does not restore the best score, and the next
      epoch's worse one replaced checkpoint_best.pt: it is restored here from the checkpoint's
      extra_state (where --save-dir holds checkpoint_best.pt);
    * a run that would write a checkpoint name --save-dir holds from a later point of training than
      the one it starts at (--restore-file of an older epoch, --reset-dataloader) is refused
      (:func:`later_checkpoints`)."""
    import os

    from fairseq import checkpoint_utils

    from fairseq_wean.fixes_training import read_start_checkpoint

    start = start_checkpoint(cfg)
    if start is None:
        return
    path, how, resets = start
    checkpoint = cfg.checkpoint
    state = read_start_checkpoint(path)  # a refused or damaged file: one line
    stored_arch, arch = _arch(_entry(state.get("cfg"), "model") or state.get("args")), _arch(cfg.model)
    from fairseq_wean.modules.checked_model import CheckedEncoderDecoderModel

    if stored_arch and arch and stored_arch != arch and not isinstance(model, CheckedEncoderDecoderModel):
        raise FairseqWeanError(
            "--arch {}: {} was written by --arch {} (its parameters cannot be loaded into another model); {} "
            "with --arch {}, or use another --save-dir".format(arch, path, stored_arch, how, stored_arch))
    save_dir, suffix = checkpoint.save_dir, checkpoint.checkpoint_suffix or ""
    has_best = isinstance(save_dir, str) and os.path.isfile(os.path.join(save_dir, "checkpoint_best{}.pt".format(suffix)))
    metric = _stored(state, "checkpoint", "best_checkpoint_metric")
    maximize = _stored(state, "checkpoint", "maximize_best_checkpoint_metric")
    restored = not resets & {"optimizer", "meters"}
    if metric is not None and how != "--finetune-from-model" and (restored or has_best) \
            and (metric, bool(maximize)) != (checkpoint.best_checkpoint_metric,
                                             bool(checkpoint.maximize_best_checkpoint_metric)):
        raise FairseqWeanError(
            "--best-checkpoint-metric {} ({}) differs from the run that wrote {} ({}, {}): its best score and "
            "checkpoint_best.pt were chosen by that; start with --best-checkpoint-metric {}{}, or use another "
            "--save-dir".format(
                checkpoint.best_checkpoint_metric,
                "maximized" if checkpoint.maximize_best_checkpoint_metric else "minimized", path, metric,
                "maximized" if maximize else "minimized", metric, " --maximize-best-checkpoint-metric" if maximize
                else " without --maximize-best-checkpoint-metric"))
    later, (epoch, updates) = later_checkpoints(cfg, start, state)
    if later:
        raise FairseqWeanError(
            "--save-dir {}: this run ({} {}{}) starts at epoch {}, update {}, and would overwrite {} (written later "
            "in training); nothing was trained: use another --save-dir, or move {} away".format(
                save_dir, how, path, "".join(" --reset-" + name for name in sorted(resets) if how != "--finetune-from-model"),
                epoch, updates, ", ".join(later), "them" if len(later) > 1 else "it"))
    best = (state.get("extra_state") or {}).get("best")
    if best is not None and not restored and has_best and how != "--finetune-from-model":
        checkpoint_utils.save_checkpoint.best = best
        logger.info("kept the best %s %s of %s (--reset-meters/--reset-optimizer do not reset it: "
                    "checkpoint_best.pt is replaced only by a better model)", metric or "score", best, path)


def check_best_checkpoint_metric(cfg, trainer):
    """Refuse (before the first update) a ``--best-checkpoint-metric`` that validation never logs; and
    :func:`keep_the_stored_best`."""
    keep_the_stored_best(cfg, getattr(trainer, "_model", None))
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
