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


def check_best_checkpoint_metric(cfg, trainer):
    """Refuse (before the first update) a ``--best-checkpoint-metric`` that validation never logs."""
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
