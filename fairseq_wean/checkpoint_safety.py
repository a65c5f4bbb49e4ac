"""Safe checkpoint loading on torch >= 2.6.

torch >= 2.6 loads with ``weights_only=True``: an unpickler that only builds tensors,
containers and classes on an allow-list, and refuses any other global, so a crafted
checkpoint cannot call ``os.system``. fairseq's checkpoints also hold a few plain-data
classes (``argparse.Namespace`` for the training arguments; omegaconf containers and numpy
scalars in checkpoints written by other fairseq versions), so ``fairseq-generate`` fails on
them until those exact classes are allowed. We add them to torch's allow-list
(``torch.serialization.add_safe_globals``) instead of switching weights-only loading off,
and turn torch's refusal into a one-line error that names the refused global.

``SAFE_GLOBALS`` below is the whole allow-list; README.md ("Errors and recovery") lists it.
"""
import argparse
import collections
import re
import typing

import torch

from fairseq_wean.errors import FairseqWeanError


def safe_globals():
    """The classes a fairseq checkpoint may contain besides tensors and plain containers."""
    import numpy as np
    from omegaconf import DictConfig, ListConfig
    from omegaconf.base import ContainerMetadata, Metadata
    from omegaconf.nodes import AnyNode

    try:
        from numpy._core.multiarray import scalar as numpy_scalar
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import scalar as numpy_scalar
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
        *numpy_dtypes,
    ]


def install():
    """Allow-list fairseq's checkpoint classes and make refusals readable."""
    if not hasattr(torch.serialization, "add_safe_globals"):
        return  # torch < 2.4: no weights-only default to satisfy
    torch.serialization.add_safe_globals(safe_globals())
    _wrap_fairseq_loader()


def _wrap_fairseq_loader():
    """Name the refused global in one line instead of torch's multi-paragraph advice."""
    from fairseq import checkpoint_utils

    original = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(original, "_fairseq_wean_wrapped", False):
        return

    def load_checkpoint_to_cpu(path, *args, **kwargs):
        try:
            return original(path, *args, **kwargs)
        except Exception as exc:  # torch raises pickle.UnpicklingError; fairseq may wrap it
            raise checkpoint_error(path, exc) from exc

    load_checkpoint_to_cpu._fairseq_wean_wrapped = True
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu


def checkpoint_error(path, exc):
    """Turn a failure to read a checkpoint into a FairseqWeanError, or return exc unchanged."""
    message = str(exc)
    refused = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", message)
    if refused or "Weights only load failed" in message:
        what = refused.group(1) if refused else "a non-allow-listed object"
        return FairseqWeanError(
            "refusing to load checkpoint {}: its pickle calls {}, which is not on fairseq-wean's "
            "allow-list of checkpoint classes (see README, 'Errors and recovery'); only load it "
            "with weights_only=False if you trust its source".format(path, what)
        )
    if isinstance(exc, (EOFError, RuntimeError)) and (
        "PytorchStreamReader" in message or "Ran out of input" in message or "zip archive" in message
        or "unexpected EOF" in message or "invalid load key" in message
    ):
        return FairseqWeanError(
            "checkpoint {} is truncated or corrupted ({}); use an earlier checkpoint, e.g. "
            "checkpoint_best.pt or an epoch checkpoint".format(path, message.splitlines()[0][:200])
        )
    return exc
