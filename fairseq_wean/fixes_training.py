"""fairseq fixes for training runs (fairseq-train's restarts and --help): fixes 12-14 of
:mod:`fairseq_wean.compat`, which applies them (docs/fairseq-patches.md)."""
import sys

from fairseq.data import data_utils

from fairseq_wean.patching import found, same_code, wrap_every_binding, wrap_once


def install_patience_survives_restart():
    """``--patience`` counts the epochs without a better validation score across a restart.

    fairseq's bug: ``fairseq_cli.train.should_stop_early`` keeps the best score and the count
    of epochs since it as attributes of the function, which no checkpoint holds. A run resumed
    from ``checkpoint_last.pt`` starts counting anew, and the first validation after the restart
    becomes the "best" whatever its score: with ``--patience 3``, a run interrupted two epochs
    after its best epoch trained four more epochs instead of one. Fix: ``Trainer.save_checkpoint``
    also writes the counter into the checkpoint's ``extra_state`` (key ``patience``; fairseq
    calls ``should_stop_early`` before it saves, so the counter includes the epoch being saved),
    and ``Trainer.load_checkpoint`` puts it back. Checkpoints without the key load as before.
    """
    from fairseq.trainer import Trainer

    def counter():
        # fairseq-train's module; None outside fairseq-train (nothing counts epochs there)
        train = sys.modules.get("fairseq_cli.train")
        return getattr(train, "should_stop_early", None)

    def wrap_save(original_save):
        def save_checkpoint(self, filename, extra_state):
            stop = counter()
            if stop is not None and getattr(stop, "best", None) is not None:
                extra_state = dict(extra_state, patience={"best": stop.best, "num_runs": stop.num_runs})
            return original_save(self, filename, extra_state)

        save_checkpoint.__doc__ = original_save.__doc__
        return save_checkpoint

    def wrap_load(original_load):
        def load_checkpoint(self, *args, **kwargs):
            extra_state = original_load(self, *args, **kwargs)
            stop = counter()
            saved = (extra_state or {}).get("patience")
            if stop is not None and saved:
                stop.best, stop.num_runs = saved["best"], saved["num_runs"]
            return extra_state

        load_checkpoint.__doc__ = original_load.__doc__
        return load_checkpoint

    same_code("compat 12 (--patience across a restart)", "should_stop_early keeps its counter in "
              "function attributes no checkpoint holds")
    wrap_once(Trainer, "save_checkpoint", wrap_save)
    wrap_once(Trainer, "load_checkpoint", wrap_load)


def install_resume_keeps_the_batches():
    """A run resumed from ``checkpoint_last.pt`` trains on the same batches as the uninterrupted run.

    fairseq's main branch (so ``fairseq-fixed``) builds the training batches in
    ``FairseqTask.get_batch_iterator`` under ``numpy_seed(seed + epoch)``, ``epoch`` being the
    epoch the iterator is created at (fairseq 0.12.2 used ``numpy_seed(seed)``). The seed breaks
    the ties of ``ordered_indices``' sort by length, so it decides which sentences share a batch.
    An uninterrupted run creates its iterator at epoch 1 and reuses it for every epoch; a run
    resumed at epoch 3 created it at epoch 3: other batches, another training (epoch 3 of a resumed
    ``wean_lstm`` ended at validation loss 9.424 against 8.889; with dropout 0 too). Where fairseq
    reuses the iterator (the default; not with ``--rebuild-batches``, nor where the task cannot
    reuse it, when every epoch builds its own batches anyway), the batches are now built under the
    seed of epoch 1 whatever the start epoch; ``dataset.set_epoch`` and the iterator's epoch are
    unchanged. Installed only where fairseq's code seeds with the epoch.
    """
    import inspect

    from fairseq.tasks import FairseqTask

    def seeds_with_the_epoch():
        if "numpy_seed(seed + epoch)" in inspect.getsource(FairseqTask.get_batch_iterator):
            return True, "get_batch_iterator orders the batches under numpy_seed(seed + epoch)"
        return False, "this fairseq's get_batch_iterator does not seed with the epoch (0.12.2: numpy_seed(seed))"

    if not found("compat 13 (resumed run, same batches)", seeds_with_the_epoch):
        return

    def wrap(original):
        def get_batch_iterator(self, dataset, *args, **kwargs):
            bound = inspect.signature(original).bind(self, dataset, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            epoch, seed = a["epoch"], a["seed"]
            reusable = (not a["disable_iterator_cache"] and not a.get("update_epoch_batch_itr", False)
                        and self.can_reuse_epoch_itr(dataset) and not getattr(self.cfg, "rebuild_batches", False))
            if not reusable or epoch == 1 or "ordered_indices" in vars(dataset):
                return original(self, dataset, *args, **kwargs)
            ordered_indices = dataset.ordered_indices

            def ordered_indices_of_epoch_1():
                with data_utils.numpy_seed(seed + 1):
                    return ordered_indices()

            dataset.ordered_indices = ordered_indices_of_epoch_1
            try:
                return original(self, dataset, *args, **kwargs)
            finally:
                del dataset.ordered_indices

        get_batch_iterator.__doc__ = original.__doc__
        return get_batch_iterator

    wrap_once(FairseqTask, "get_batch_iterator", wrap)


HELP_FLAGS = ("-h", "--help")


def install_help_lists_model_options():
    """``fairseq-train --arch X --help`` lists the model's options (and the task's, the criterion's, ...).

    fairseq's bug: ``options.parse_args_and_arch`` parses twice, the second time after adding the
    options of the chosen ``--arch``, ``--task``, ``--criterion``, optimizer, ... . ``--help`` is
    handled by the first parse, which prints the help of the generic parser and exits: no model's
    options are ever listed (fairseq's ``lstm`` no more than the plugin's models), and a user had
    to read the source to find them. Fix: when ``-h``/``--help`` is given, the first parse runs
    without it, and the second, which fairseq's code reaches with every option added, prints the
    help and exits. Nothing changes without ``--help``.
    """
    from fairseq import options

    def wrap(original):
        def parse_args_and_arch(parser, input_args=None, parse_known=False, suppress_defaults=False,
                                modify_parser=None):
            argv = sys.argv[1:] if input_args is None else list(input_args)
            if suppress_defaults or not any(a in HELP_FLAGS for a in argv):
                # (suppress_defaults: fairseq calls this again without it, which comes here)
                return original(parser, input_args, parse_known, suppress_defaults, modify_parser)
            without_help = [a for a in argv if a not in HELP_FLAGS]
            plain = parser.parse_known_args
            calls = []

            def parse_known_args(args=None, namespace=None):  # argparse's parse_args calls it too
                calls.append(args)
                if len(calls) == 1:  # fairseq's first parse: find --arch, --task, ...
                    return plain(without_help, namespace)
                parser.print_help()  # the second: every option is in the parser now
                parser.exit()

            parser.parse_known_args = parse_known_args
            try:
                return original(parser, input_args, parse_known, suppress_defaults, modify_parser)
            finally:
                del parser.parse_known_args

        return parse_args_and_arch

    same_code("compat 14 (--help with --arch)", "parse_args_and_arch answers --help in its first "
              "parse, before the model's options are added")
    wrap_once(options, "parse_args_and_arch", wrap)


def install_training_file_checks():
    """The files and folders fairseq's options name, checked when a command is parsed, before any
    work (:mod:`fairseq_wean.train_files_check`); and the start checkpoint read once by the checks
    at fairseq-train's start and fairseq (:func:`install_start_checkpoint_read_once`)."""
    from fairseq_wean.patching import add_option_check
    from fairseq_wean.train_files_check import training_files_problem

    add_option_check(training_files_problem)
    install_start_checkpoint_read_once()
    install_divergence_one_line()




def divergence_error(exc, save_dir, num_updates):
    """fairseq's FloatingPointError of a diverging run (``Minimum loss scale reached`` of the fp16/AMP scaler,
    ``gradients are Nan/Inf``, a non-finite loss) as a FairseqWeanError: one line naming the divergence and the
    crash.pt fairseq saved before re-raising; the checkpoints written before are not touched."""
    import os

    from fairseq_wean.errors import FairseqWeanError

    crash = os.path.join(save_dir or ".", "crash.pt")
    kept = "fairseq saved the model at that point to {}".format(crash) if os.path.isfile(crash) else \
        "no crash.pt was written"
    first = " ".join(str(exc).split())[:200] or type(exc).__name__
    return FairseqWeanError(
        "training diverged at update {} ({}): {}; the checkpoints written before are kept: lower --lr, add "
        "--clip-norm, or check the optimizer's options (--adam-eps, --weight-decay, ...)".format(
            num_updates + 1, first, kept))


def install_divergence_one_line():
    """A diverging run ends in one line (:func:`divergence_error`, exit 1 through the plugin's excepthook) instead
    of fairseq's FloatingPointError traceback. fairseq's ``Trainer.train_step`` saves ``crash.pt`` and re-raises;
    the wrapper only renames the error, after fairseq's own handling."""
    from fairseq.trainer import Trainer

    def wrap(original):
        def train_step(self, *args, **kwargs):
            try:
                return original(self, *args, **kwargs)
            except FloatingPointError as exc:
                raise divergence_error(exc, self.cfg.checkpoint.save_dir, self.get_num_updates()) from exc

        train_step.__doc__ = original.__doc__
        return train_step

    wrap_once(Trainer, "train_step", wrap)


# [(path, its stat), state]: the checkpoint fairseq-train's start checks read, kept for fairseq's own read
_START_STATE = []


def _identity(path):
    import os

    st = os.stat(path)
    return os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns


def read_start_checkpoint(path):
    """The checkpoint fairseq-train starts from, read once: ``checkpoint_utils.load_checkpoint_to_cpu``
    (checkpoint_safety's checks included), kept until fairseq's own ``Trainer.load_checkpoint`` reads
    the same unchanged file, which then gets this state instead of reading it again
    (:func:`install_start_checkpoint_read_once`)."""
    from fairseq import checkpoint_utils

    _START_STATE[:] = []
    state = checkpoint_utils.load_checkpoint_to_cpu(path)
    _START_STATE[:] = [_identity(path), state]
    return state


def install_start_checkpoint_read_once():
    """The start checks (:func:`fairseq_wean.metric_check.keep_the_stored_best`) and fairseq read the
    start checkpoint once between them: ``load_checkpoint_to_cpu`` of the file the checks read (same
    path, inode, size and time) returns their state, once; the kept state is dropped when
    ``checkpoint_utils.load_checkpoint`` (fairseq-train's start) returns or fails, so a rank that does
    not read the file (rank 0 reads and broadcasts) keeps no copy."""
    import os

    from fairseq import checkpoint_utils

    def wrap_read(original):
        def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False):
            if _START_STATE and arg_overrides is None and isinstance(path, str) and os.path.isfile(path) \
                    and _identity(path) == _START_STATE[0]:
                state = _START_STATE[1]
                _START_STATE[:] = []
                return state
            return original(path, arg_overrides, load_on_all_ranks)

        load_checkpoint_to_cpu.__doc__ = original.__doc__
        return load_checkpoint_to_cpu

    def wrap_start(original):
        def load_checkpoint(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            finally:
                _START_STATE[:] = []

        load_checkpoint.__doc__ = original.__doc__
        return load_checkpoint

    wrap_once(checkpoint_utils, "load_checkpoint_to_cpu", wrap_read)
    wrap_once(checkpoint_utils, "load_checkpoint", wrap_start)
    from fairseq.trainer import Trainer

    wrap_once(Trainer, "load_checkpoint", _wrap_parameters_that_do_not_fit)


LOAD_FAILED = "Cannot load model parameters from checkpoint"


def _wrap_parameters_that_do_not_fit(original):
    """fairseq's "Cannot load model parameters from checkpoint" (a traceback at fairseq-train's start: the start
    checkpoint's parameters do not fit the model --arch and its options build, e.g. another --encoder-embed-dim)
    becomes one line naming the first parameter that does not fit (another --arch is refused before, by
    metric_check.keep_the_stored_best; this is the same model built with other sizes)."""
    def load_checkpoint(self, filename, *args, **kwargs):
        from fairseq_wean.errors import FairseqWeanError

        try:
            return original(self, filename, *args, **kwargs)
        except Exception as exc:
            cause = exc.__cause__ or exc.__context__
            if not str(exc).startswith(LOAD_FAILED) or cause is None:
                raise
            if isinstance(cause, FairseqWeanError):
                raise cause from None
            lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
            fitting = ("size mismatch", "Missing key", "Unexpected key")
            first = next((line for line in lines if line.startswith(fitting)),
                         lines[0] if lines else type(cause).__name__)
            raise FairseqWeanError(
                "checkpoint {}: its parameters do not fit the model this run builds ({}); nothing was trained: give "
                "the model options the checkpoint was trained with, or start without it".format(
                    filename, first[:300])) from exc

    load_checkpoint.__doc__ = original.__doc__
    return load_checkpoint


def install_upsample_primary_default():
    """Sharded translation data (``train``, ``train1``, ...; ``--combine-valid-subsets``) can be used.

    fairseq's bug (facebookresearch/fairseq#3644): ``TranslationConfig.upsample_primary`` defaults to -1
    (its argparse predecessor's default was 1), and ``load_langpair_dataset`` uses it as the primary
    shard's sample ratio whenever it combines shards: ``ConcatDataset`` tiles the primary -1 times, a
    ``ValueError: negative dimensions are not allowed`` traceback after the model was built, whenever the
    data folder holds a second training shard or validation subsets are combined. Fix: the default -1
    means what the option's help and the old default say, no upsampling (1); any other value is passed
    on (values below 1 other than -1 are refused at parse: ``patching.FAIRSEQ_RANGES``). Every fairseq
    task module that imported the function by name gets the wrapper (translation, translation_lev,
    translation_from_pretrained_bart, ...).
    """
    from fairseq.tasks import translation

    def wrap(load):
        def load_langpair_dataset(*args, **kwargs):
            if kwargs.get("upsample_primary") == -1:
                kwargs["upsample_primary"] = 1
            elif len(args) > 8 and args[8] == -1:  # (data_path, split, src, src_dict, tgt, tgt_dict, combine,
                args = args[:8] + (1,) + args[9:]  # dataset_impl, upsample_primary, ...)
            return load(*args, **kwargs)

        load_langpair_dataset.__wrapped__ = load
        load_langpair_dataset.__doc__ = load.__doc__
        return load_langpair_dataset

    same_code("compat 20 (--upsample-primary's default -1)", "load_langpair_dataset tiles the primary shard "
              "upsample_primary = -1 times when shards are combined")
    wrap_every_binding(translation, "load_langpair_dataset", wrap, key="fairseq_wean.fixes_training.upsample_primary")
