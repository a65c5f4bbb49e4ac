"""Safe checkpoint loading on every torch the plugin accepts (>= 1.13).

Before fairseq's ``load_checkpoint_to_cpu`` calls ``torch.load``, the checkpoint's pickle is
read by :func:`scan_checkpoint`, an unpickler that builds nothing: every global it names must be
on the allow-list (torch's own weights-only list plus :func:`safe_globals`), else loading stops
with a one-line error before torch reads the file. That is what makes a crafted checkpoint inert
on torch < 2.6, whose ``torch.load`` defaults to ``weights_only=False`` and would run the pickle's
``os.system``. torch >= 2.6 also loads with ``weights_only=True``: an unpickler that only builds
tensors, containers and classes on an allow-list, and refuses any other global. fairseq's checkpoints also hold a few plain-data
classes (``argparse.Namespace`` for the training arguments; omegaconf containers and numpy
scalars in checkpoints written by other fairseq versions), so ``fairseq-generate`` fails on
them until those exact classes are allowed. We add them to torch's allow-list
(``torch.serialization.add_safe_globals``) instead of switching weights-only loading off,
and turn torch's refusal into a one-line error that names the refused global.

``safe_globals()`` below is the whole allow-list; docs/troubleshooting.md ("Safe checkpoints") lists it.

Also here, because they are about checkpoint files:

* a truncated or corrupted checkpoint gives a one-line error naming the file (``checkpoint_error``);
* fairseq's copies of a new checkpoint to ``checkpoint_best.pt`` / ``checkpoint_last.pt`` are
  made atomic, so a job killed while saving never leaves a truncated checkpoint behind
  (``_atomic_checkpoint_copies``; the first file was already written atomically);
* fairseq-train's start (``_wrap_training_start``, before the first update): ``--restore-file
  PATH`` with a missing PATH is an error instead of a silent start from scratch; with
  ``--task translation_with_metrics``, a ``--save-dir`` holding ``checkpoint_best.pt`` but no
  ``checkpoint_last.pt`` is refused unless ``--overwrite-best-checkpoint`` (a fresh run would
  replace the best checkpoint with its first, worse epochs), the task checks its training
  options (``check_training_options``: the metric's name and direction, options that change a metric
  that is off; the generation options are checked earlier, where the model is built),
  and rank 0 locks ``--save-dir`` for the run (``textio.lock_folder``: one run per folder).
"""
import argparse
import collections
import re
import typing

import torch

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import same_code, wrap_once
from fairseq_wean.textio import lock_folder


def safe_globals():
    """The classes a fairseq checkpoint may contain besides tensors and plain containers."""
    import numpy as np
    from omegaconf import DictConfig, ListConfig
    from omegaconf.base import ContainerMetadata, Metadata
    from omegaconf.nodes import AnyNode

    try:
        from numpy._core.multiarray import _reconstruct as numpy_reconstruct, scalar as numpy_scalar
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct as numpy_reconstruct, scalar as numpy_scalar
    numpy_dtypes = [type(np.dtype(t)) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_)]
    return [
        argparse.Namespace,
        collections.OrderedDict,
        collections.defaultdict,
        typing.Any,
        dict,
        list,
        int,
        float,
        str,
        bool,
        DictConfig,
        ListConfig,
        ContainerMetadata,
        Metadata,
        AnyNode,
        np.dtype,
        numpy_scalar,
        # numpy arrays: fairseq's own --eval-bleu keeps its n-gram counts as arrays in the
        # checkpoint's meters (plain `--task translation --eval-bleu` checkpoints).
        np.ndarray,
        numpy_reconstruct,
        *numpy_dtypes,
    ]


def allowed_global_names():
    """``module.name`` of every global a checkpoint's pickle may name: torch's weights-only
    allow-list and :func:`safe_globals`, under each spelling numpy 1 and 2 pickle them with."""
    from torch import _weights_only_unpickler

    names = set(_weights_only_unpickler._get_allowed_globals())
    # the bytes of a numpy array pickled with protocol 2 (numpy 1: a latin-1 str made bytes);
    # torch >= 2 allows it itself, torch 1.13 does not list it
    names.add("_codecs.encode")
    for obj in safe_globals():
        names.add("{}.{}".format(obj.__module__, obj.__qualname__))
    for function in ("_reconstruct", "scalar"):  # numpy 2 pickles numpy._core, numpy 1 numpy.core
        names.update("numpy.{}.multiarray.{}".format(core, function) for core in ("core", "_core"))
    return names


class _Stub:
    """What the scanning unpickler builds for every allowed global: it accepts any call, item,
    state and list append, so the whole pickle is walked without building anything."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Stub()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


class _Refused(Exception):
    pass


def _scan_unpickler(file, allowed):
    import pickle

    class ScanUnpickler(pickle.Unpickler):
        def find_class(self, module, name):  # the one way a pickle reaches code; nothing is imported
            full = "{}.{}".format(module, name)
            if full not in allowed:
                raise _Refused(full)
            return _Stub

        def persistent_load(self, pid):  # torch's tensor storages
            return _Stub()

    return ScanUnpickler(file)


def scan_checkpoint(path):
    """Refuse (FairseqWeanError, before anything is built) a checkpoint whose pickle names a global
    outside :func:`allowed_global_names`. Reads the pickle(s) of torch's zip format (``*/data.pkl``)
    or of its legacy format (five pickles in a row). A file whose pickle cannot be walked (truncated,
    another format) is refused as damaged: torch never gets a pickle that was not checked."""
    import pickle
    import zipfile

    allowed = allowed_global_names()
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for member in archive.namelist():
                    if member == "data.pkl" or member.endswith("/data.pkl"):
                        with archive.open(member) as f:
                            _scan_unpickler(f, allowed).load()
        else:
            # legacy format: magic number, protocol, system info, the object, the storage keys
            with open(path, "rb") as f:
                for _ in range(5):
                    _scan_unpickler(f, allowed).load()
    except _Refused as refused:
        raise refused_error(path, str(refused)) from None
    except OSError:
        return  # missing, unreadable, a directory: fairseq's own message names the path
    except (EOFError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError, TypeError, AttributeError,
            IndexError, KeyError, RecursionError, MemoryError) as exc:
        # never hand torch a pickle that could not be checked
        raise damaged_error(path, "its pickle cannot be read: {}: {}".format(
            type(exc).__name__, (str(exc).splitlines() or [""])[0][:200])) from None


def install():
    """Allow-list fairseq's checkpoint classes and make refusals readable."""
    version = torch.__version__.split("+")[0]
    weights_only_default = tuple(int(part) for part in version.split(".")[:2]) >= (2, 6)  # torch's default flipped in 2.6
    same_code("compat 2 / checkpoint_safety", "fairseq's load_checkpoint_to_cpu calls torch.load on any "
              "file (torch {} loads with weights_only={} by default): every checkpoint is scanned before it "
              "is unpickled".format(version, weights_only_default))
    if hasattr(torch.serialization, "add_safe_globals"):  # torch >= 2.4: an allow-list for weights-only loading
        torch.serialization.add_safe_globals(safe_globals())
    _wrap_fairseq_loader()
    _atomic_checkpoint_copies()
    _wrap_training_start()


def _wrap_fairseq_loader():
    """Scan before loading; one line for a refused global (instead of torch's multi-paragraph
    advice) or a damaged file."""
    from fairseq import checkpoint_utils

    def wrap_load_checkpoint_to_cpu(original):
        def load_checkpoint_to_cpu(path, *args, **kwargs):
            scan_checkpoint(path)  # before torch.load: an unsafe pickle never runs, whatever torch's default
            try:
                state = original(path, *args, **kwargs)
            except Exception as exc:  # torch raises pickle.UnpicklingError; fairseq may wrap it
                error = checkpoint_error(path, exc)
                if error is exc:
                    raise  # not ours to explain (``raise exc from exc`` would make a cycle)
                raise error from exc
            # torch reads the zip archive without checking its CRCs: damaged tensor data would
            # load as wrong weights. One pass over the file (about 1 s per GB) catches it.
            problem = archive_problem(path, require_zip=False)  # legacy (non-zip) checkpoints: no CRCs
            if problem is not None:
                raise damaged_error(path, problem)
            arg_overrides = kwargs.get("arg_overrides", args[0] if args else None)
            forget_stored_paths(state, arg_overrides or {})
            return state

        return load_checkpoint_to_cpu

    wrap_once(checkpoint_utils, "load_checkpoint_to_cpu", wrap_load_checkpoint_to_cpu)


# Options of the plugin whose value is a file that building the task or the model would open. A
# checkpoint stores them with the rest of its configuration; loading it must not open them: the
# file may be gone, another machine's, or planted (/dev/zero, a named pipe that never answers).
STORED_PATH_OPTIONS = (
    "eval_refs", "eval_orig", "known_words",  # tasks/translation_with_metrics.py (read at task set-up)
    "core_align_table",  # models/core_copy.py (read when built for training; the table is a buffer)
)


# Model options whose data a model reads once, when first built for training, and keeps in its
# checkpoint; the second name is the argument that says the checkpoint holds it (then the build
# reads nothing): option -> flag.
BUILT_FROM_CHECKPOINT = {
    "core_align_table": "core_align_table_in_checkpoint",  # models/core_copy.py: A, and a target-side U
    "wean_candidates": "wean_candidates_in_checkpoint",  # models/wean_lstm.py: the candidate words
}


def forget_stored_paths(state, arg_overrides):
    """Set the :data:`STORED_PATH_OPTIONS` of a loaded checkpoint's configuration (``args`` and
    ``cfg``'s sections) to None, except those the caller gives again in ``arg_overrides`` (the
    hub's keyword arguments), and mark a ``core_copy`` checkpoint as holding its alignment table
    and a ``wean_lstm`` one as holding its candidate words (:data:`BUILT_FROM_CHECKPOINT`), so that
    building its model reads neither the table nor the training data (``--core-frequent-from
    target``, ``--wean-candidates``). Nothing of a checkpoint's own becomes a path that loading it
    opens."""
    from omegaconf import OmegaConf, open_dict

    cfg = state.get("cfg")
    sections = [state.get("args")]
    if cfg is not None:
        sections += [cfg.get(name) for name in ("task", "model")]
    for section in sections:
        if section is None:
            continue
        is_config = OmegaConf.is_config(section)
        present = (lambda name: name in section) if is_config else (lambda name: hasattr(section, name))
        changes = {name: None for name in STORED_PATH_OPTIONS if present(name) and name not in arg_overrides}
        for option, flag in BUILT_FROM_CHECKPOINT.items():
            if present(flag) or present(option):
                changes[flag] = True
        if is_config:
            with open_dict(section):
                for name, value in changes.items():
                    section[name] = value
        else:
            for name, value in changes.items():
                setattr(section, name, value)


def checkpoint_error(path, exc):
    """Turn a failure to read a checkpoint into a FairseqWeanError, or return exc unchanged."""
    import errno

    message = str(exc)
    refused = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", message)
    if refused:
        return refused_error(path, refused.group(1))
    if isinstance(exc, FairseqWeanError):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR):
        return exc  # the path, not the file's contents: the message says so already
    problem = archive_problem(path)
    if problem is not None or any(text in message for text in DAMAGED_MESSAGES):
        first = (message.splitlines() or [""])[0][:200]
        return damaged_error(path, problem or "{}: {}".format(type(exc).__name__, first))
    if "Weights only load failed" in message:
        return refused_error(path, "a non-allow-listed object")
    return exc


def refused_error(path, what):
    return FairseqWeanError(
        "refusing to load checkpoint {}: its pickle calls {}, which is not on fairseq-wean's "
        "allow-list of checkpoint classes (see docs/troubleshooting.md, 'Safe checkpoints'); only load it "
        "with weights_only=False if you trust its source".format(path, what)
    )


def damaged_error(path, problem):
    return FairseqWeanError(
        "checkpoint {} is truncated or corrupted ({}); use an earlier checkpoint, e.g. "
        "checkpoint_best.pt or checkpoint_EPOCH_UPDATES.pt in the same folder".format(path, problem)
    )


DAMAGED_MESSAGES = ("PytorchStreamReader", "Ran out of input", "zip archive", "unexpected EOF",
                    "invalid load key", "central directory")


def archive_problem(path, require_zip=True):
    """None if PATH is a zip archive (torch's format since 1.6) whose members pass their CRC checks."""
    import zipfile

    if not require_zip and not zipfile.is_zipfile(path):
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except FileNotFoundError:
        return None
    except zipfile.BadZipFile as exc:
        return "not a complete zip archive: {}".format(exc)
    except (OSError, EOFError, ValueError, RuntimeError) as exc:
        return "unreadable zip archive: {}: {}".format(type(exc).__name__, exc)
    return None if bad is None else "CRC check failed for {}".format(bad)


def _atomic_checkpoint_copies():
    """Make fairseq's checkpoint copies atomic, as its checkpoint writes already are.

    ``checkpoint_utils.save_checkpoint`` writes the first checkpoint file of an update
    atomically (``torch_persistent_save``: ``NAME.tmp``, then a rename) but then *copies* it to
    the others (``checkpoint_best.pt``, ``checkpoint_last.pt``) with ``shutil.copyfile``, which
    writes the destination in place: a job killed during that copy left a truncated
    ``checkpoint_last.pt`` and no way to resume. Here the copy goes to ``DEST.tmp`` and is
    renamed over ``DEST``, so every checkpoint file is either the old one or the new one.
    Only ``checkpoint_utils`` sees this class; other users of fairseq's PathManager do not.
    """
    import os

    from fairseq import checkpoint_utils

    def atomic_copies(PathManager):
        class AtomicCopyPathManager(PathManager):
            @staticmethod
            def copy(src_path, dst_path, overwrite=False):
                if not PathManager.supports_rename(dst_path):
                    return PathManager.copy(src_path, dst_path, overwrite=overwrite)
                tmp = dst_path + ".tmp"
                PathManager.copy(src_path, tmp, overwrite=True)
                os.replace(tmp, dst_path)
                return True

        return AtomicCopyPathManager

    wrap_once(checkpoint_utils, "PathManager", atomic_copies)


def _wrap_training_start():
    """Checks at fairseq-train's start, in ``checkpoint_utils.load_checkpoint`` (which fairseq-train
    alone calls, once, before the first update; decoding never does). See the module docstring.

    fairseq-train logs "No existing checkpoint found" and trains from scratch when the file
    named by --restore-file is missing (a typo). The default, ``checkpoint_last.pt`` in
    --save-dir, may be missing: that is how a first run starts.
    """
    import os

    from fairseq import checkpoint_utils

    def wrap_load_checkpoint(original):
        def load_checkpoint(cfg, trainer, **passthrough_args):
            restore = getattr(cfg, "restore_file", "checkpoint_last.pt")
            suffix = getattr(trainer, "checkpoint_suffix", "") or ""
            if restore and restore != "checkpoint_last.pt" and not getattr(cfg, "continue_once", None):
                path = restore.replace(".pt", suffix + ".pt")
                if "://" not in path and not os.path.exists(path):
                    raise FairseqWeanError(
                        "--restore-file {}: no such file (fairseq would silently train from scratch); "
                        "fix the path, or leave --restore-file out to resume from --save-dir's "
                        "checkpoint_last.pt".format(path)
                    )
            from fairseq_wean.tasks.translation_with_metrics import TranslationWithMetricsTask

            task = getattr(trainer, "task", None)
            # the plugin's task only, by its class: fairseq's own tests call this with a MagicMock
            # trainer, whose task "has" every attribute (its checks failed there, issue 40)
            if isinstance(task, TranslationWithMetricsTask):
                best, last = (os.path.join(cfg.save_dir, "checkpoint_{}{}.pt".format(name, suffix))
                              for name in ("best", "last"))
                if (restore == "checkpoint_last.pt" and not getattr(cfg, "finetune_from_model", None)
                        and os.path.exists(best) and not os.path.exists(last) and not task.cfg.overwrite_best_checkpoint):
                    raise FairseqWeanError(
                        "--save-dir {} holds {} but no {}: this run would start from scratch and replace the best "
                        "checkpoint with worse ones; resume with --restore-file {}, use another --save-dir, or add "
                        "--overwrite-best-checkpoint".format(cfg.save_dir, os.path.basename(best),
                                                             os.path.basename(last), best))
                task.check_training_options(cfg)
                if getattr(trainer, "is_data_parallel_master", True) and cfg.save_dir and "://" not in cfg.save_dir:
                    # one training run per --save-dir (rank 0 writes the checkpoints): two runs into one
                    # folder replaced each other's checkpoints and both exited 0
                    os.makedirs(cfg.save_dir, exist_ok=True)
                    lock_folder(cfg.save_dir, "--save-dir", "fairseq-train")
            return original(cfg, trainer, **passthrough_args)

        return load_checkpoint

    wrap_once(checkpoint_utils, "load_checkpoint", wrap_load_checkpoint)
