"""Safe checkpoint loading on every torch the plugin accepts (>= 1.13).

Every ``torch.load`` of ``fairseq.checkpoint_utils`` (``load_checkpoint_to_cpu``: ``--path``,
``--restore-file``, ``--finetune-from-model``, resuming, the hub; ``load_ema_from_checkpoint``:
``--ema-seed-model``) is :func:`safe_load`: the allow-list (torch's own weights-only list plus
:func:`safe_globals`) is enforced by the unpickler torch itself uses, so there is no second
parser that could read the file another way than torch does. On torch >= 2.4 that is
``weights_only=True``, with :func:`safe_globals` added to torch's allow-list
(``torch.serialization.add_safe_globals``); on older torch (1.13, whose ``torch.load`` defaults
to ``weights_only=False`` and whose weights-only list cannot be extended) it is torch's unpickler
over a ``pickle_module`` whose ``find_class`` refuses any other global before importing it.
fairseq's checkpoints hold a few plain-data classes besides tensors (``argparse.Namespace`` for
the training arguments; omegaconf containers and numpy scalars in checkpoints written by other
fairseq versions); a refused global is a one-line error naming it.

``safe_globals()`` below is the whole allow-list; docs/troubleshooting.md ("Safe checkpoints") lists it.

Also here, because they are about checkpoint files:

* before torch sees a file, ``safe_load`` refuses any container torch.save does not write
  (``checkpoint_container``: a tar archive, which torch 1.13 unpacks to disk first; a compressed zip
  member, a decompression bomb; anything but a zip or torch's legacy pickle stream);
* the state fairseq's torch.load returns has the shape fairseq's loaders read, and a model section that builds where a
  model is built from it (``checkpoint_kind.state_problem``): one line naming what is wrong, before fairseq reads it;
* a truncated or corrupted checkpoint is a one-line error naming the file (``checkpoint_error``); every
  loader checks its file first (``check_checkpoint_file``): missing, a folder or a pipe is one line;
* no path or ``${...}`` interpolation stored in a checkpoint's configuration is opened or resolved
  (``stored_paths``: interpolations forgotten in ``load``, before fairseq resolves any);
* fairseq's copies of a new checkpoint to ``checkpoint_best.pt`` / ``checkpoint_last.pt`` are
  made atomic, so a job killed while saving never leaves a truncated checkpoint behind
  (``_atomic_checkpoint_copies``; the first file was already written atomically);
* fairseq-train's start (``_wrap_training_start``, before the first update): a checkpoint named by
  ``--restore-file``, ``--finetune-from-model`` or ``--continue-once`` that is missing, a folder or a
  pipe is an error instead of a silent start from scratch, and --save-dir's ``checkpoint_last.pt`` /
  ``checkpoint_best.pt`` must be regular files, not links (``_check_checkpoint_files``); a
  ``--save-dir`` holding ``checkpoint_best.pt`` but no ``checkpoint_last.pt`` is refused for every way
  of starting a run (from scratch, fine-tuning, --continue-once, --restore-file with a reset), except
  resuming from that best checkpoint itself with its meters, or ``--overwrite-best-checkpoint`` of the
  plugin's task (``_check_best_without_last``: the run would replace the best checkpoint with its
  first, worse epochs); the task checks its training options (``check_training_options``: the
  metric's name and direction, options that change a metric that is off; the generation options are
  checked earlier, where the model is built), and rank 0 locks ``--save-dir`` for the run (``textio.lock_folder``: one run per folder).
"""
import argparse
import collections
import io
import pickle
import re
import types
import typing

import torch

from fairseq_wean.checkpoint_container import (  # noqa: F401  (the two lines' home: checkpoint_container)
    archive_problem, check_container, damaged_error, opcode_problem, refused_error, starts_as_zip)
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


TORCHSCRIPT = "torch.jit.load (a TorchScript archive, not a checkpoint)"


class CheckpointRefused(Exception):
    """Raised by the allow-list unpickler for a global outside :func:`allowed_global_names`."""

    def __init__(self, name):
        super().__init__("unsupported GLOBAL {}".format(name))
        self.name = name


def _allow_list_pickle_module():
    """A ``pickle_module`` for ``torch.load`` whose ``Unpickler`` (which torch subclasses for its
    own reading of both formats) and ``load`` (its legacy format's headers) refuse every global
    outside the allow-list before importing it. torch's own unpickler enforces it: no second
    parser reads the file another way."""
    import pickle
    import types

    allowed = allowed_global_names()

    class AllowListUnpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if "{}.{}".format(module, name) not in allowed:
                raise CheckpointRefused("{}.{}".format(module, name))
            return super().find_class(module, name)

    module = types.ModuleType("fairseq_wean_allow_list_pickle")
    module.Unpickler = AllowListUnpickler
    module.UnpicklingError = pickle.UnpicklingError
    module.load = lambda file, **kwargs: AllowListUnpickler(file, **kwargs).load()
    module.loads = lambda data, **kwargs: AllowListUnpickler(io.BytesIO(data), **kwargs).load()
    return module


def loading_mechanism():
    """How :func:`safe_load` keeps a checkpoint's pickle from running code on this torch:
    ``"weights_only"`` (torch >= 2.4: torch's weights-only unpickler, extended by
    ``add_safe_globals`` with :func:`safe_globals`) or ``"pickle_module"`` (torch 1.13-2.3, whose
    weights-only list cannot be extended: torch's unpickler over :func:`_allow_list_pickle_module`)."""
    return "weights_only" if hasattr(torch.serialization, "add_safe_globals") else "pickle_module"


def safe_load(f, map_location=None, *args, **kwargs):
    """``torch.load`` for checkpoints: only a container torch.save writes (``checkpoint_container``, before
    torch sees the file), the allow-list enforced by the unpickler torch itself uses, whatever the caller or
    torch's default asks (``weights_only``/``pickle_module`` are replaced); a pickle of protocol 4 or 5 (FRAME, which
    torch's weights-only unpickler lacks) is read through the allow-list ``pickle_module``."""
    kwargs.pop("weights_only", None)
    kwargs.pop("pickle_module", None)
    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        with open(f, "rb") as opened:
            return safe_load(opened, map_location, **kwargs)
    # the container first (checkpoint_container): a tar (unpacked to disk by torch 1.13), a compressed zip member,
    # a storage record of another size than its pickle declares (torch 1.13 reads past it), a stray constants.pkl
    check_container(f, getattr(f, "name", f), damaged_error, lambda path: refused_error(path, TORCHSCRIPT))
    if loading_mechanism() == "weights_only":
        try:
            return torch.load(f, map_location, weights_only=True, **kwargs)
        except pickle.UnpicklingError as exc:  # an opcode torch's weights-only unpickler lacks (FRAME, 149: the
            if opcode_problem(str(exc)) is None:  # pickle_protocol=4/5 of torch.save): the same allow-list through
                raise  # torch's own unpickler over the pickle module's (below), which reads every protocol
            f.seek(0)
    return _load_with_pickle_module(f, map_location, _allow_list_pickle_module(), **kwargs)


def _load_with_pickle_module(f, map_location, pickle_module, **pickle_load_args):
    """What ``torch.load(f, map_location, pickle_module)`` does, through the same torch functions
    (``_load``: torch's zip format, ``_legacy_load``: its older one; both subclass
    ``pickle_module.Unpickler``): torch 1.13's ``torch.load`` replaces any ``pickle_module`` by
    ``pickle`` when ``weights_only`` is false, so it cannot be given one. A TorchScript archive,
    which ``torch.load`` hands to ``torch.jit.load``, is no checkpoint and is refused."""
    from torch import serialization

    pickle_load_args.setdefault("encoding", "utf-8")
    with serialization._open_file_like(f, "rb") as opened:
        if serialization._is_zipfile(opened):
            with serialization._open_zipfile_reader(opened) as archive:
                if serialization._is_torchscript_zip(archive):
                    raise CheckpointRefused(TORCHSCRIPT)
                return serialization._load(archive, map_location, pickle_module, **pickle_load_args)
        return serialization._legacy_load(opened, map_location, pickle_module, **pickle_load_args)


class _CheckpointTorch(types.ModuleType):
    """``fairseq.checkpoint_utils``'s name ``torch``: torch itself, except that ``load`` is
    :func:`safe_load`. Every checkpoint fairseq reads (``load_checkpoint_to_cpu``: --path,
    --restore-file, --finetune-from-model, resume, the hub; ``load_ema_from_checkpoint``:
    --ema-seed-model) goes through it; fairseq's other ``torch.load`` calls (rank-to-rank objects
    in distributed/utils.py) are untouched."""

    def __init__(self):
        super().__init__("torch")

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def load(f, map_location=None, *args, **kwargs):
        state = safe_load(f, map_location, **kwargs)  # a positional pickle_module is replaced too
        forget_stored_interpolations(state, getattr(f, "name", f))  # before fairseq resolves any
        from fairseq_wean.checkpoint_kind import state_problem  # the shape fairseq's loaders read, before they do

        problem = state_problem(state, build=bool(_BUILDING))
        if problem is not None:
            raise FairseqWeanError("checkpoint {}: {}; nothing was loaded".format(getattr(f, "name", f), problem))
        return state


def install():
    """Allow-list fairseq's checkpoint classes and make refusals readable."""
    version = torch.__version__.split("+")[0]
    weights_only_default = tuple(int(part) for part in version.split(".")[:2]) >= (2, 6)  # torch's default flipped in 2.6
    same_code("compat 2 / checkpoint_safety", "fairseq's load_checkpoint_to_cpu calls torch.load on any "
              "file (torch {} loads with weights_only={} by default): the allow-list is enforced by torch's "
              "own unpickler ({})".format(version, weights_only_default, loading_mechanism()))
    if hasattr(torch.serialization, "add_safe_globals"):  # torch >= 2.4: an allow-list for weights-only loading
        torch.serialization.add_safe_globals(safe_globals())
    _wrap_fairseq_loader()
    _atomic_checkpoint_copies()
    _wrap_training_start()


def _wrap_fairseq_loader():
    """Every ``torch.load`` of ``fairseq.checkpoint_utils`` is :func:`safe_load`; a refused global
    or a damaged file is one line naming the file (instead of torch's multi-paragraph advice)."""
    from fairseq import checkpoint_utils

    wrap_once(checkpoint_utils, "torch", lambda original: _CheckpointTorch(), key="checkpoint_safety.safe_load")

    def wrap_load_checkpoint_to_cpu(original):
        def load_checkpoint_to_cpu(path, *args, **kwargs):
            check_checkpoint_file(path)
            state = _explained(path, original, path, *args, **kwargs)
            # torch reads the zip archive without checking its CRCs: damaged tensor data would
            # load as wrong weights. One pass over the file (about 1 s per GB) catches it.
            problem = archive_problem(path, require_zip=False)  # legacy (non-zip) checkpoints: no CRCs
            if problem is not None:
                raise damaged_error(path, problem)
            arg_overrides = kwargs.get("arg_overrides", args[0] if args else None)
            _LAST_LOADED[:] = [str(path), _model_options_first(state, forget_stored_paths(state, arg_overrides or {}))]
            return state

        return load_checkpoint_to_cpu

    def wrap_load_ema_from_checkpoint(original):  # --store-ema --ema-seed-model PATH
        def load_ema_from_checkpoint(fpath):
            check_checkpoint_file(fpath, "--ema-seed-model")
            try:
                state = _explained(fpath, original, fpath)
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                if isinstance(exc, ValueError) and "ema" not in str(exc).lower():
                    raise
                raise FairseqWeanError(
                    "--ema-seed-model {}: not a checkpoint of a run with --store-ema (it has no EMA weights "
                    "in extra_state['ema']); name one such checkpoint, or leave --ema-seed-model out".format(fpath)
                ) from exc
            problem = archive_problem(fpath, require_zip=False)
            if problem is not None:
                raise damaged_error(fpath, problem)
            return state

        return load_ema_from_checkpoint

    def wrap_load_model_ensemble_and_task(original):  # --path, --lm-path, the hub, fairseq-validate
        def load_model_ensemble_and_task(filenames, *args, **kwargs):
            suffix, shards = kwargs.get("suffix", ""), kwargs.get("num_shards", 1)
            if len(args) >= 4:
                suffix = args[3]
            if len(args) >= 5:
                shards = args[4]
            for filename in filenames:
                for shard in range(shards if isinstance(shards, int) and shards > 0 else 1):
                    check_checkpoint_file(checkpoint_utils.get_maybe_sharded_checkpoint_filename(
                        filename, suffix, shard, shards))
            _LAST_LOADED[:] = [None, []]
            _BUILDING.append(filenames)  # the models are built from the checkpoints it reads
            try:
                return original(filenames, *args, **kwargs)
            except UNBUILDABLE as exc:
                error = unbuildable_error(exc)
                if error is None:
                    raise
                raise error from exc
            finally:
                _BUILDING.pop()

        return load_model_ensemble_and_task

    wrap_once(checkpoint_utils, "load_checkpoint_to_cpu", wrap_load_checkpoint_to_cpu)
    wrap_once(checkpoint_utils, "load_model_ensemble_and_task", wrap_load_model_ensemble_and_task)
    wrap_once(checkpoint_utils, "load_ema_from_checkpoint", wrap_load_ema_from_checkpoint)


# [path, forgotten option names] of the checkpoint load_checkpoint_to_cpu read last (fairseq loads the
# files of an ensemble one by one and builds each model right after reading it)
_LAST_LOADED = [None, []]
_BUILDING = []  # the files of each load_model_ensemble_and_task running: their states must build a model
# what building a model whose stored configuration lost a path raises (an option left None, an
# attribute of the path's file never read): not torch's own errors, not the plugin's one-line ones
UNBUILDABLE = (AttributeError, TypeError, KeyError, ValueError, AssertionError, IndexError, OSError)


def _model_options_first(state, forgotten):
    """``forgotten`` with the options the stored model's class declares first (what building it may miss:
    xm_transformer's ``load_pretrained_decoder_from``), then the rest of its section, then the others."""
    import argparse

    declared = set()
    try:
        from fairseq.models import ARCH_MODEL_REGISTRY

        cfg, args = state.get("cfg"), state.get("args")
        model = cfg.get("model") if cfg is not None and hasattr(cfg, "get") else None
        if hasattr(model, "get"):  # a DictConfig or dict section
            arch = model.get("arch") or model.get("_name")
        else:  # an argparse Namespace, or none (old-style args)
            arch = getattr(model, "arch", None) or getattr(model, "_name", None)
        arch = arch or getattr(args, "arch", None)
        parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
        ARCH_MODEL_REGISTRY[arch].add_args(parser)
        declared = {action.dest for action in parser._actions}
    except Exception:  # only the order of a message: an unknown or odd model changes nothing
        pass
    return sorted(forgotten, key=lambda name: (name.split(".")[-1] not in declared,
                                               not name.startswith(("model.", "args."))))


def unbuildable_error(exc):
    """The one-line ``FairseqWeanError`` for ``exc``, raised while fairseq built the model of the
    checkpoint it read last (a ``build_model`` in the traceback) when loading that checkpoint forgot
    stored paths (:func:`fairseq_wean.stored_paths.forget_stored_paths`): its stored model cannot be
    built without the files they named (``xm_transformer`` reads its ``load_pretrained_decoder_from``
    and ``w2v_path`` when it is built). None otherwise: nothing forgotten, or raised elsewhere, is no
    configuration we changed (a bug of a model is reported as it is)."""
    path, forgotten = _LAST_LOADED
    if path is None or not forgotten or isinstance(exc, FairseqWeanError):
        return None
    tb, built = exc.__traceback__, False
    while tb is not None:
        built = built or tb.tb_frame.f_code.co_name == "build_model"
        tb = tb.tb_next
    if not built:
        return None
    first = (str(exc).splitlines() or [""])[0][:200]
    return FairseqWeanError(
        "checkpoint {}: its stored model configuration cannot be built ({}: {}) without the files its stored "
        "paths name, which loading a checkpoint never opens (forgotten: {}); nothing was loaded: use a "
        "checkpoint whose model is built from its own weights".format(
            path, type(exc).__name__, first, ", ".join(forgotten[:6]) + (", ..." if len(forgotten) > 6 else "")))


def _explained(path, load, *args, **kwargs):
    try:
        return load(*args, **kwargs)
    except Exception as exc:  # torch raises pickle.UnpicklingError; fairseq may wrap it
        error = checkpoint_error(path, exc)
        if error is exc:
            raise  # not ours to explain (``raise exc from exc`` would make a cycle)
        raise error from exc


# What loading a checkpoint must not open (a path stored in its configuration): fairseq_wean.stored_paths.
from fairseq_wean.stored_paths import (  # noqa: E402,F401  (their home before; tests and hub import them here)
    BUILT_FROM_CHECKPOINT, FAIRSEQ_STORED_PATHS, PATH_METAVARS, PATH_SECTIONS, forget_stored_paths, is_path_option,
    forget_stored_interpolations, looks_like_path, plugin_options, stored_path_options)


def checkpoint_error(path, exc):
    """Turn a failure to read a checkpoint into a FairseqWeanError, or return exc unchanged."""
    import errno

    message = str(exc)
    refused = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", message)
    if isinstance(exc, CheckpointRefused):
        return refused_error(path, exc.name)
    if refused:
        return refused_error(path, refused.group(1))
    if isinstance(exc, FairseqWeanError):
        return exc
    if "TorchScript" in message:  # torch >= 2.4 refuses a torch.jit.save archive under weights_only
        return refused_error(path, TORCHSCRIPT)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR):
        return FairseqWeanError("checkpoint {}: {}; nothing was loaded".format(path, exc.strerror))
    problem = archive_problem(path, require_zip=starts_as_zip(path))
    if problem is not None or any(text in message for text in DAMAGED_MESSAGES):
        first = (message.splitlines() or [""])[0][:200]
        return damaged_error(path, problem or "{}: {}".format(type(exc).__name__, first))
    if opcode_problem(message) is not None:  # no global: a pickle opcode torch's weights-only unpickler lacks
        return FairseqWeanError("checkpoint {}: {}; nothing was loaded".format(path, opcode_problem(message)))
    if "Weights only load failed" in message:
        return refused_error(path, "a non-allow-listed object")
    if not starts_as_zip(path) and isinstance(exc, (EOFError, IndexError, KeyError, ValueError, TypeError,
                                                    AttributeError, RuntimeError, __import__("pickle").UnpicklingError)):
        # torch's legacy reader on a file that is no pickle torch wrote (its unpickler's own errors)
        first = (message.splitlines() or [""])[0][:200]
        return damaged_error(path, "not a checkpoint torch can read: {}: {}".format(type(exc).__name__, first))
    return exc


DAMAGED_MESSAGES = ("PytorchStreamReader", "Ran out of input", "zip archive", "unexpected EOF",
                    "invalid load key", "central directory", "Invalid magic number", "could not find MARK",
                    "pickle data was truncated",
                    # a storage record whose size is not the one its pickle declares (torch >= 2: "record size
                    # (N bytes) does not match expected size"; checkpoint_container refuses it first), a tensor
                    # larger than its storage (torch checks it itself)
                    "record size", "Trying to resize storage that is not resizable")


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
                tmp = _fresh_tmp(dst_path)
                try:
                    PathManager.copy(src_path, tmp, overwrite=True)
                    os.replace(tmp, dst_path)
                except BaseException:
                    _remove(tmp)  # a full disk: the old DEST stays, no DEST.tmp is left behind
                    raise
                return True

        return AtomicCopyPathManager

    def wrap_persistent_save(original):
        def torch_persistent_save(obj, filename, async_write=False):
            if async_write or not checkpoint_utils.PathManager.supports_rename(filename):
                return original(obj, filename, async_write)
            tmp = _fresh_tmp(filename)
            try:
                if loading_mechanism() != "pickle_module":  # torch >= 2.4: a full disk is an OSError chain
                    return original(obj, filename, async_write)
                # torch < 2.4 (1.13): its C++ writer aborts the process on a full disk (std::terminate from the
                # writer's destructor: no Python handler runs, NAME.tmp stays); serialised in memory, the file
                # is written by Python, and a full disk is an OSError (ENOSPC): one line, nothing left behind
                buffer = io.BytesIO()
                checkpoint_utils.torch.save(obj, buffer)  # what fairseq's own save calls (its module's torch)
                with checkpoint_utils.PathManager.open(tmp, "wb") as f:
                    f.write(buffer.getbuffer())
                checkpoint_utils.PathManager.rename(tmp, filename)
            except BaseException:
                _remove(tmp)
                raise

        return torch_persistent_save

    wrap_once(checkpoint_utils, "PathManager", atomic_copies)
    wrap_once(checkpoint_utils, "torch_persistent_save", wrap_persistent_save)


def _fresh_tmp(path):
    """``PATH.tmp``, the name fairseq writes a checkpoint to before renaming it: a symbolic link
    planted there, or a hard link (another name of another file), is removed first (opening it would write
    through it)."""
    import os

    tmp = path + ".tmp"
    if os.path.islink(tmp) or (os.path.isfile(tmp) and os.stat(tmp).st_nlink > 1):
        os.unlink(tmp)
    return tmp


def _remove(path):
    import contextlib
    import os

    with contextlib.suppress(OSError):
        os.unlink(path)


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
            suffix = getattr(trainer, "checkpoint_suffix", "") or ""
            _check_checkpoint_files(cfg, suffix)
            from fairseq_wean.tasks.translation_with_metrics import TranslationWithMetricsTask

            task = getattr(trainer, "task", None)
            # the plugin's task only, by its class: fairseq's own tests call this with a MagicMock
            # trainer, whose task "has" every attribute (its checks failed there, issue 40)
            plugin_task = isinstance(task, TranslationWithMetricsTask)
            _check_best_without_last(cfg, suffix, plugin_task and task.cfg.overwrite_best_checkpoint, plugin_task)
            if plugin_task:
                task.check_training_options(cfg)
            from fairseq.trainer import Trainer

            if isinstance(trainer, Trainer):  # not fairseq's tests' MagicMock
                from fairseq_wean.metric_check import check_best_checkpoint_metric

                check_best_checkpoint_metric(trainer.cfg, trainer)
            save_dir = getattr(cfg, "save_dir", None)
            # any task: one training run per --save-dir (rank 0 writes the checkpoints): two runs into one
            # folder replaced each other's checkpoints and both exited 0. `is True`: a real trainer's
            # property, not fairseq's tests' MagicMock
            if getattr(trainer, "is_data_parallel_master", None) is True and isinstance(save_dir, str) \
                    and save_dir and "://" not in save_dir and not getattr(cfg, "no_save", False):
                os.makedirs(save_dir, exist_ok=True)
                lock_folder(save_dir, "--save-dir", "fairseq-train")
            return original(cfg, trainer, **passthrough_args)

        return load_checkpoint

    wrap_once(checkpoint_utils, "load_checkpoint", wrap_load_checkpoint)


def checkpoint_file_problem(path):
    """Why ``path`` (links followed) is no checkpoint file, or None; found without opening it (a
    named pipe would block the reader)."""
    from fairseq_wean import textio

    return textio.named_file_problem(path, "checkpoint file")


def check_checkpoint_file(path, what="checkpoint"):
    """One line (FairseqWeanError) unless ``path`` is a checkpoint file torch may open: every
    loader (--path, --lm-path, the hub, --restore-file, --finetune-from-model, --continue-once,
    --ema-seed-model, resuming) checks its file here before fairseq opens it."""
    if not isinstance(path, str) or "://" in path:
        return
    problem = checkpoint_file_problem(path)
    if problem is not None:
        raise FairseqWeanError("{} {}: {}; nothing was loaded".format(what, path, problem))


# the files fairseq-train reads at its start, named by an option (links followed: the user named them)
NAMED_CHECKPOINTS = ("restore_file", "finetune_from_model", "continue_once")


def _named_checkpoints(cfg, suffix):
    """(option, path) of each checkpoint a fairseq-train option names (fairseq adds the suffix of
    --checkpoint-suffix to --restore-file only)."""
    for option in NAMED_CHECKPOINTS:
        path = getattr(cfg, option, None)
        if option == "restore_file" and path == "checkpoint_last.pt":
            continue  # the default: --save-dir's checkpoint_last.pt, which a first run does not have
        if isinstance(path, str) and path:
            yield "--" + option.replace("_", "-"), path.replace(".pt", suffix + ".pt") if option == "restore_file" else path


def _check_checkpoint_files(cfg, suffix):
    """Every checkpoint file fairseq-train may read or replace at its start: those in --save-dir
    (checkpoint_last.pt, checkpoint_best.pt) are regular files and not links where they exist (a
    directory named checkpoint_last.pt made fairseq train from scratch and replace checkpoint_best.pt;
    a link was followed), and those named by an option exist and are regular files (a missing one
    made fairseq log "No existing checkpoint found" and train from scratch)."""
    import os

    save_dir = getattr(cfg, "save_dir", None)
    if not isinstance(save_dir, str):
        return  # fairseq's own tests: a MagicMock configuration
    for name in ("last", "best"):
        path = os.path.join(save_dir, "checkpoint_{}{}.pt".format(name, suffix))
        if "://" in path or not os.path.lexists(path):
            continue
        if os.path.islink(path):
            raise FairseqWeanError("--save-dir {}: {} is a symbolic link: refused (a checkpoint in --save-dir is read "
                                   "and replaced only as itself); nothing was trained; move it away, or give its "
                                   "target as --restore-file".format(save_dir, path))
        problem = checkpoint_file_problem(path)
        if problem is not None:
            raise FairseqWeanError("--save-dir {}: {} is {}; nothing was trained (fairseq would start from scratch "
                                   "and replace the checkpoints); move it away".format(save_dir, path, problem))
    for option, path in _named_checkpoints(cfg, suffix):
        if "://" in path:
            continue
        problem = checkpoint_file_problem(path)
        if problem == "no such file":
            raise FairseqWeanError(
                "{} {}: no such file (fairseq would silently train from scratch); fix the path{}".format(
                    option, path, ", or leave --restore-file out to resume from --save-dir's checkpoint_last.pt"
                    if option == "--restore-file" else ""))
        if problem is not None:
            raise FairseqWeanError("{} {}: {} is {}; nothing was trained (fairseq would start from scratch and "
                                   "replace the checkpoints); move it away".format(option, path, path, problem))


def _check_best_without_last(cfg, suffix, overwrite, plugin_task):
    """A --save-dir holding checkpoint_best.pt but no checkpoint_last.pt: any run started there (from
    scratch, --finetune-from-model, --continue-once, --restore-file with --reset-optimizer or
    --reset-meters, or another run's checkpoint) saves its first validated model as the best one and
    replaces it. Allowed: resuming from that checkpoint_best.pt itself with its meters (fairseq then
    keeps its best score), or the task's --overwrite-best-checkpoint."""
    import os

    save_dir = getattr(cfg, "save_dir", None)
    if not isinstance(save_dir, str) or overwrite:
        return
    best, last = (os.path.join(save_dir, "checkpoint_{}{}.pt".format(name, suffix)) for name in ("best", "last"))
    if not os.path.exists(best) or os.path.exists(last):
        return
    named = dict(_named_checkpoints(cfg, suffix))
    restore = named.get("--restore-file")
    if restore is not None and not getattr(cfg, "finetune_from_model", None) \
            and not getattr(cfg, "reset_optimizer", False) and not getattr(cfg, "reset_meters", False) \
            and os.path.exists(restore) and os.path.samefile(restore, best):
        return
    how = "with " + ", ".join(sorted(named)) if named else "from scratch"
    raise FairseqWeanError(
        "--save-dir {} holds {} but no {}: this run ({}) would replace the best checkpoint with worse ones; resume "
        "with --restore-file {} (without --reset-optimizer/--reset-meters), use another --save-dir, or {}".format(
            save_dir, os.path.basename(best), os.path.basename(last), how, best,
            "add --overwrite-best-checkpoint" if plugin_task else "move {} away".format(best)))
