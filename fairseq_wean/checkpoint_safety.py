"""Safe checkpoint loading on torch >= 2.6.

torch >= 2.6 loads with ``weights_only=True``: an unpickler that only builds tensors,
containers and classes on an allow-list, and refuses any other global, so a crafted
checkpoint cannot call ``os.system``. fairseq's checkpoints also hold a few plain-data
classes (``argparse.Namespace`` for the training arguments; omegaconf containers and numpy
scalars in checkpoints written by other fairseq versions), so ``fairseq-generate`` fails on
them until those exact classes are allowed. We add them to torch's allow-list
(``torch.serialization.add_safe_globals``) instead of switching weights-only loading off,
and turn torch's refusal into a one-line error that names the refused global.

``safe_globals()`` below is the whole allow-list; README.md ("Errors and recovery") lists it.

Also here, because they are about checkpoint files:

* a truncated or corrupted checkpoint gives a one-line error naming the file (``checkpoint_error``);
* fairseq's copies of a new checkpoint to ``checkpoint_best.pt`` / ``checkpoint_last.pt`` are
  made atomic, so a job killed while saving never leaves a truncated checkpoint behind
  (``_atomic_checkpoint_copies``; the first file was already written atomically);
* ``fairseq-train --restore-file PATH`` with a missing PATH is an error instead of a silent
  start from scratch (``_wrap_restore_file_check``).
"""
import argparse
import collections
import re
import typing

import torch

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import wrap_once


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


def install():
    """Allow-list fairseq's checkpoint classes and make refusals readable."""
    if hasattr(torch.serialization, "add_safe_globals"):  # torch < 2.4: no weights-only default
        torch.serialization.add_safe_globals(safe_globals())
    _wrap_fairseq_loader()
    _atomic_checkpoint_copies()
    _wrap_restore_file_check()


def _wrap_fairseq_loader():
    """One line for a refused global (instead of torch's multi-paragraph advice) or a damaged file."""
    from fairseq import checkpoint_utils

    def wrap_load_checkpoint_to_cpu(original):
        def load_checkpoint_to_cpu(path, *args, **kwargs):
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
            return state

        return load_checkpoint_to_cpu

    wrap_once(checkpoint_utils, "load_checkpoint_to_cpu", wrap_load_checkpoint_to_cpu)


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
        "allow-list of checkpoint classes (see README, 'Errors and recovery'); only load it "
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


def _wrap_restore_file_check():
    """``--restore-file PATH`` that does not exist is an error, not a silent fresh start.

    fairseq-train logs "No existing checkpoint found" and trains from scratch when the file
    named by --restore-file is missing (a typo). The default, ``checkpoint_last.pt`` in
    --save-dir, may be missing: that is how a first run starts.
    """
    import os

    from fairseq import checkpoint_utils

    def wrap_load_checkpoint(original):
        def load_checkpoint(cfg, trainer, **passthrough_args):
            restore = getattr(cfg, "restore_file", "checkpoint_last.pt")
            if restore and restore != "checkpoint_last.pt" and not getattr(cfg, "continue_once", None):
                suffix = getattr(trainer, "checkpoint_suffix", "") or ""
                path = restore.replace(".pt", suffix + ".pt")
                if "://" not in path and not os.path.exists(path):
                    raise FairseqWeanError(
                        "--restore-file {}: no such file (fairseq would silently train from scratch); "
                        "fix the path, or leave --restore-file out to resume from --save-dir's "
                        "checkpoint_last.pt".format(path)
                    )
            return original(cfg, trainer, **passthrough_args)

        return load_checkpoint

    wrap_once(checkpoint_utils, "load_checkpoint", wrap_load_checkpoint)
