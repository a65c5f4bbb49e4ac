"""Fix 21 of :mod:`fairseq_wean.compat`: the numpy names fairseq 0.12 uses that newer numpy removed.

fairseq 0.12 was written against numpy 1.21. numpy 1.24 removed the aliases ``np.int`` and
``np.float`` (and ``np.bool``, ``np.object``, ``np.str``, ``np.complex``), numpy 2.0 the module
``np.compat`` (and the names in ``numpy._expired_attrs_2_0``), numpy 2.4 the ``interpolation=``
keyword of ``np.percentile``. Where fairseq still uses them, the plugin's environments failed with a
traceback, after the model and data were loaded:

* ``np.compat.long`` (``TokenBlockDataset`` with ``--sample-break-mode eos``: the language-model hub's
  ``score``/``sample``, fairseq-eval-lm and language-model training with that break mode, ``--context-window``
  with it; ``LanguagePairDataset`` with ``--num-batch-buckets``): numpy 2;
* ``np.percentile(..., interpolation=)`` (``data_utils.get_buckets``, ``--num-batch-buckets``): numpy 2.4;
* ``np.int`` (``data_utils.compute_mask_indices``/``compute_block_mask_2d``, wav2vec-style masking) and
  ``np.float`` (``DynamicCRF``, the ``nacrf_transformer``): numpy >= 1.24, so the 0.12.2 environment (numpy
  1.26) too.

The fix: each fairseq module listed in :data:`FAIRSEQ_USES` gets, as its ``np``, :data:`NUMPY` - numpy itself
for every name numpy has, plus the removed ones fairseq uses (:data:`REMOVED`, each the value numpy 1.21 gave
it) and a ``percentile`` that takes ``interpolation=`` as ``method=`` (the same numbers). numpy itself is not
changed: no other code in the process sees a removed name. ``tests/test_numpy_removed.py`` scans fairseq's
source for every numpy name or keyword this numpy lacks (and every name of :data:`REMOVED`) and fails on a
use that is not covered here.
"""
import functools
import inspect
import sys
import types

import numpy

# The removed names fairseq uses, with the value numpy 1.21 gave them (numpy.compat.py3k: ``long = int``; the
# 1.24 aliases were the builtins).
REMOVED = {
    "compat": types.SimpleNamespace(long=int, unicode=str, basestring=str, integer_types=(int,)),
    "int": int,
    "float": float,
    "bool": bool,
    "object": object,
    "str": str,
    "complex": complex,
}

# Removed keywords: (numpy function, keyword) -> the keyword that replaced it (numpy >= 1.22).
REMOVED_KEYWORDS = {(name, "interpolation"): "method"
                    for name in ("percentile", "quantile", "nanpercentile", "nanquantile")}

# Every fairseq module (library and fairseq_cli; fairseq's examples/ are not part of it) that uses a name of
# REMOVED or a keyword of REMOVED_KEYWORDS: module -> what it uses (the test checks this against the source).
FAIRSEQ_USES = {
    "fairseq.data.token_block_dataset": ("compat",),
    "fairseq.data.language_pair_dataset": ("compat",),
    "fairseq.data.data_utils": ("int", "percentile(interpolation=)"),
    "fairseq.modules.dynamic_crf_layer": ("float",),
}


def _takes(function, keyword):
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a C function without a signature: assume it takes it
        return True
    return keyword in parameters or any(p.kind == p.VAR_KEYWORD for p in parameters.values())


def _renaming_keyword(function, old, new):
    @functools.wraps(function)
    def call(*args, **kwargs):
        if old in kwargs:
            if new in kwargs:
                raise TypeError("{}() got both {}= and {}=".format(function.__name__, old, new))
            kwargs[new] = kwargs.pop(old)
        return function(*args, **kwargs)

    return call


def missing_here():
    """The names of :data:`REMOVED` and keywords of :data:`REMOVED_KEYWORDS` this numpy lacks."""
    names = [name for name in REMOVED if name not in numpy.__dict__]  # not getattr: numpy warns on some
    keywords = ["{}({}=)".format(f, k) for f, k in REMOVED_KEYWORDS if not _takes(getattr(numpy, f), k)]
    return names + keywords


class _NumpyForFairseq(types.ModuleType):
    """numpy, with the removed names fairseq 0.12 uses (only where this numpy lacks them)."""

    def __getattr__(self, name):  # only for what is not in this module's own __dict__
        if name in numpy.__dict__ or name not in REMOVED:
            return getattr(numpy, name)
        return REMOVED[name]

    def __dir__(self):
        return sorted(set(dir(numpy)) | set(REMOVED))


NUMPY = _NumpyForFairseq("numpy", numpy.__doc__)
# numpy's names read from the module's own __dict__, as fast as numpy's (its lazy ones through __getattr__)
NUMPY.__dict__.update((key, value) for key, value in numpy.__dict__.items() if not key.startswith("__"))
for (_function, _old), _new in REMOVED_KEYWORDS.items():
    if not _takes(getattr(numpy, _function), _old):
        setattr(NUMPY, _function, _renaming_keyword(getattr(numpy, _function), _old, _new))


def install():
    """Give every module of :data:`FAIRSEQ_USES` :data:`NUMPY` as its ``np`` where this numpy lacks something."""
    import importlib

    from fairseq_wean.patching import note

    used = {use for uses in FAIRSEQ_USES.values() for use in uses}
    missing = [item for item in missing_here() if item in used]
    name = "compat 21 (numpy removals)"
    if not missing:
        note(name, False, "this numpy {} has every numpy name fairseq uses".format(numpy.__version__))
        return
    for module_name in FAIRSEQ_USES:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        if getattr(module, "np", None) is numpy:
            module.np = NUMPY
    note(name, True, "numpy {} lacks {}, which fairseq uses: given to fairseq's modules only".format(
        numpy.__version__, ", ".join(missing)))
