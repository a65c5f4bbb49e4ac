"""The files and Python packages of the chosen ``--bpe`` and ``--tokenizer``, checked before any work.

fairseq builds the BPE and the tokenizer a command names (``--bpe sentencepiece --sentencepiece-model
F``, ``--bpe fastbpe --bpe-codes F``, ``--tokenizer moses``...) only after the model is loaded (and, in
fairseq-generate, the batches are built): a missing file, a folder, a named pipe or a package that is
not installed was a traceback (``OSError: file nosuch.model not found``, ``RuntimeError:
FAILED_PRECONDITION: ... Is a directory``, ``ImportError: Please install fastBPE``) after that work,
and the hub's keywords (``sentencepiece_model='nosuch.model'``, ``bpe='fastbpe'``) the same.

:func:`path_fields` derives, from the registered component's dataclass (fairseq's ``BPE`` and
``TOKENIZER`` registries, the plugin's included), which of its options name a file: a string field whose
name ends in :data:`PATH_SUFFIXES` or whose help speaks of a path or file (or that declares
``metadata={"path": True}``). :func:`required_packages` derives the packages the component imports
lazily (imports inside the functions of its module and of the modules it imports relatively: fastBPE,
sentencepiece, sacremoses, subword_nmt, transformers, tokenizers, regex, nltk), looked up without importing
them. :func:`tokenizer_files_problem` checks the chosen components of a parsed command (registered with
``patching.add_option_check`` by ``compat.apply()``: every fairseq command, at parse); the hub
(``fairseq_wean.hub``) calls it for its keywords before loading and for the merged configuration before
building the BPE. A URL is left to fairseq, which downloads it into its cache (``--bpe gpt2``'s defaults). Refusals are one line
(``FairseqWeanError``) naming the option, its value and what is wrong.
"""
import argparse
import re

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError

SECTIONS = ("bpe", "tokenizer")
PATH_SUFFIXES = ("_model", "_codes", "_vocab", "_json", "_dict", "_path", "_file")
PATH_HELP = re.compile(r"\bpath\b|\bfile\b", re.I)
UNSET = (None, "???", "")
DEPENDENCIES = ("fairseq", "fairseq_wean", "omegaconf", "torch", "numpy")  # what the plugin runs on  # "???": fairseq's value of a required field that was not given


def registered(section):
    """{name: dataclass or None} of every registered component of ``section`` ("bpe", "tokenizer")."""
    from fairseq.data import encoders  # noqa: F401  (registers fairseq's own)
    from fairseq.registry import REGISTRIES

    registry = REGISTRIES[section]
    return {name: registry["dataclass_registry"].get(name) for name in registry["registry"]}


def path_fields(config):
    """The fields of a component's dataclass ``config`` that name a file (see the module docstring)."""
    import dataclasses

    if config is None or not dataclasses.is_dataclass(config):
        return []
    found = []
    for field in dataclasses.fields(config):
        metadata = field.metadata or {}
        if field.name == "_name" or "str" not in str(field.type):
            continue
        if metadata.get("path") or field.name.endswith(PATH_SUFFIXES) or PATH_HELP.search(metadata.get("help") or ""):
            found.append(field)
    return found


def _relative_modules(module):
    """``module`` and the modules it imports relatively at its top level (fairseq's gpt2_bpe: gpt2_bpe_utils)."""
    import ast
    import importlib

    found, tree = [module], _tree(module)
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and node.level:
            name = importlib.util.resolve_name("." * node.level + (node.module or ""), module.__package__)
            try:
                found.append(importlib.import_module(name))
            except ImportError:
                continue
    return found


def _tree(module):
    import ast
    import inspect

    try:
        return ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return None


def required_packages(cls):
    """The top-level packages the component class ``cls`` imports inside functions of its module (and of the
    modules that imports relatively): what building it needs beyond fairseq, sorted."""
    import ast
    import sys

    packages = set()
    for module in _relative_modules(sys.modules[cls.__module__]):
        tree = _tree(module)
        for function in ast.walk(tree) if tree is not None else ():
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    packages.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    packages.add(node.module.split(".")[0])
    return sorted(packages - set(sys.stdlib_module_names) - set(DEPENDENCIES))


def missing_packages(cls):
    """The :func:`required_packages` of ``cls`` that are not installed (looked up, not imported)."""
    import importlib.util

    missing = []
    for name in required_packages(cls):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def file_problem(path):
    """Why ``path`` (links followed: the user named it) is no file a BPE or tokenizer can read, or None."""
    if "://" in path:
        return None  # fairseq downloads it into its cache (--bpe gpt2's defaults): its own business, kept
    return textio.named_file_problem(path)


def _name(dest, keywords):
    return dest if keywords else "--" + dest.replace("_", "-")


def _shown(dest, value, keywords):
    return "{}={!r}".format(dest, value) if keywords else "--{} {}".format(dest.replace("_", "-"), value)


def component_problem(section, name, values, keywords=False, unset_ok=False):
    """The one line for the component ``name`` of ``section`` with option values ``values`` (a mapping; a
    dest it lacks is unset), or None: a package it imports that is not installed, a required path option
    unset (``unset_ok``: the hub fills it from the model's folder), a path that is no regular file."""
    components = registered(section)
    if not isinstance(name, str) or name not in components:
        return None  # not chosen, or unknown (fairseq's own choices error)
    from fairseq.registry import REGISTRIES

    cls = REGISTRIES[section]["registry"][name]
    chosen = _shown(section, name, keywords)
    missing = missing_packages(cls)
    if missing:
        return "{} needs the Python package {}, which is not installed (pip install {}): refused before any " \
               "work".format(chosen, missing[0], missing[0])
    for field in path_fields(components[name]):
        value = values.get(field.name)
        if value in UNSET:
            if not unset_ok and field.default == "???":
                return "{} needs {} FILE ({}): refused before any work".format(
                    chosen, _name(field.name, keywords), (field.metadata or {}).get("help") or "its file")
            continue
        if not isinstance(value, str):
            continue
        problem = file_problem(value)
        if problem is not None:
            return "{} (read by {}): {}; refused before any work".format(
                _shown(field.name, value, keywords), chosen, problem)
    return None


def tokenizer_files_problem(args, keywords=False, unset_ok=False):
    """The option check of a parsed command (``patching.add_option_check``; also the hub's, ``keywords``:
    named as keywords): raises the one-line ``FairseqWeanError`` of :func:`component_problem` for the chosen
    ``--bpe`` and ``--tokenizer``; returns None."""
    values = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    for section in SECTIONS:
        problem = component_problem(section, values.get(section), values, keywords, unset_ok)
        if problem is not None:
            raise FairseqWeanError(("from_pretrained: " if keywords else "") + problem)
    tokenize = values.get("sacrebleu_tokenizer")
    if not keywords and values.get("scoring") == "sacrebleu" and isinstance(tokenize, str):
        # fairseq-generate --scoring sacrebleu: sacrebleu's tokenizer, built after the whole test set is decoded
        # (a download attempt or a missing package then ended the run in a traceback)
        from fairseq_wean.scoring.bleu_checks import sacrebleu_tokenizer_problem

        problem = sacrebleu_tokenizer_problem(tokenize, "--sacrebleu-tokenizer")
        if problem is not None:
            raise FairseqWeanError("{}; refused before any work".format(problem))
    return None


def path_keyword_problem(kwargs):
    """For the hub before loading: any keyword that is a path option of some registered BPE or tokenizer
    (the stored configuration may choose the component) naming no regular file: the one line, or None."""
    for section in SECTIONS:
        for name, config in sorted(registered(section).items()):
            for field in path_fields(config):
                value = kwargs.get(field.name)
                if isinstance(value, str) and value not in UNSET:
                    problem = file_problem(value)
                    if problem is not None:
                        return "from_pretrained: {} (a file the {} reads): {}; refused before any work".format(
                            _shown(field.name, value, True), section.replace("bpe", "BPE"), problem)
    return None


def cfg_values(cfg):
    """``{option: value}`` of the ``bpe`` and ``tokenizer`` sections of a loaded configuration (the hub's),
    with each section's component under its section's name."""
    values = {}
    for section in SECTIONS:
        part = cfg.get(section) if hasattr(cfg, "get") else None
        if part is None:
            continue
        keys = list(part.keys()) if hasattr(part, "keys") else list(vars(part))
        for key in keys:
            try:
                values[key] = part.get(key) if hasattr(part, "get") else getattr(part, key)
            except Exception:  # omegaconf's MissingMandatoryValue for "???": unset
                values[key] = None
        values[section] = values.pop("_name", None)
    return values



def install():
    """Check the chosen --bpe/--tokenizer at every fairseq parse (called by ``compat.apply()``)."""
    from fairseq_wean.patching import add_option_check

    add_option_check(tokenizer_files_problem)
