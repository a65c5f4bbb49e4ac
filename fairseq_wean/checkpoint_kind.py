"""The kind of model a checkpoint holds, read from its stored configuration when fairseq parses a command, before
any work: an option that names a checkpoint whose kind matters gets a checkpoint of that kind, or one line.

fairseq reads these checkpoints only after it has loaded the data and the other models, and then fails with a
traceback: ``fairseq-generate --lm-path`` naming a translation model (a TypeError in the first decoding step:
``forward() missing 'src_lengths'``); ``--path`` naming a language model for a translation task (a RuntimeError
size mismatch, or the stored task's FileNotFoundError in fairseq-validate), or a translation model for a language
modeling task (fairseq-eval-lm: an AttributeError). (fairseq-train's start checkpoint is checked at its start,
before the first update: ``metric_check.keep_the_stored_best``, and ``fixes_training`` for other sizes.)

The stored configuration is read without running anything and without reading the weights (:func:`stored_model`, through
``checkpoint_container.stored_configuration``). A file that is missing
or no checkpoint is left to the loaders' own one-line errors.
"""
import os

from fairseq_wean.checkpoint_container import INERT, stored_configuration


def stored_model(path):
    """``(model class or None, arch, task name)`` stored in the checkpoint ``path``, or None when the file is no
    checkpoint whose configuration names a model (a missing file, a URL: left to the loaders)."""
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY

    from fairseq_wean.metric_check import _arch, _entry

    if not isinstance(path, str) or "://" in path or not os.path.isfile(path):
        return None
    state = stored_configuration(path)
    if state is None:
        return None
    cfg, args = state.get("cfg"), state.get("args")
    if isinstance(cfg, INERT) or isinstance(args, INERT):
        return None
    try:
        arch = _arch(_entry(cfg, "model")) or _arch(args)
        task = _entry(cfg, "task")
        task = (_entry(task, "_name") if task is not None else None) or getattr(args, "task", None)
    except Exception:
        return None
    if not isinstance(arch, str):
        return None
    return ARCH_MODEL_REGISTRY.get(arch) or MODEL_REGISTRY.get(arch), arch, task


def is_language_model(cls):
    """A decoder-only model: what fairseq's SequenceGenerator can call as ``--lm-path`` (``model(tokens)``) and
    what fairseq's language modeling tasks build."""
    from fairseq.models import FairseqLanguageModel

    return isinstance(cls, type) and issubclass(cls, FairseqLanguageModel)


def task_kind(name):
    """``"lm"`` for a language modeling task, ``"pair"`` for a translation task (source and target), else None."""
    from fairseq.tasks import TASK_REGISTRY
    from fairseq.tasks.language_modeling import LanguageModelingTask
    from fairseq.tasks.translation import TranslationTask

    cls = TASK_REGISTRY.get(name)
    if not isinstance(cls, type):
        return None
    if issubclass(cls, LanguageModelingTask) or cls.__name__ == "MultilingualLanguageModelingTask":
        return "lm"
    return "pair" if issubclass(cls, TranslationTask) else None


def _described(found):
    cls, arch, task = found
    kind = "a language model" if is_language_model(cls) else "not a language model"
    return "--arch {} ({}{})".format(arch, kind, ", --task {}".format(task) if task else "")


def _paths(value):
    """The checkpoints of ``--path A:B`` (fairseq's utils.split_paths)."""
    return value.split(os.pathsep) if isinstance(value, str) and "://" not in value else [value]


# (dest, commands): the options naming a checkpoint whose kind this module checks
# (fairseq-train's start checkpoint of another --arch is refused at its start, before the first update:
# metric_check.keep_the_stored_best, and fixes_training for the same model built with other sizes)
CHECKED = (("lm_path", ("generate",)), ("path", ("generate", "interactive", "validate", "eval_lm")))


def eval_lm_tasks():
    """The registered tasks fairseq-eval-lm can run: those whose class has ``eval_lm_dataloader`` (what its main
    calls after loading the model and the data)."""
    from fairseq.tasks import TASK_REGISTRY

    return sorted(name for name, cls in TASK_REGISTRY.items() if hasattr(cls, "eval_lm_dataloader"))


def eval_lm_task_problem(args, command):
    """fairseq-eval-lm with a task whose class has no ``eval_lm_dataloader`` (any task but a language modeling
    one: fairseq loaded the model and the data, then an AttributeError): the one line, or None."""
    from fairseq.tasks import TASK_REGISTRY

    name = getattr(args, "task", None)
    cls = TASK_REGISTRY.get(name) if isinstance(name, str) else None
    if command != "eval_lm" or not isinstance(cls, type) or hasattr(cls, "eval_lm_dataloader"):
        return None
    return ("--task {}: fairseq-eval-lm evaluates a language model through its task's eval_lm_dataloader, which --task "
            "{} has not (it is no language modeling task): give one that has ({}) with a language model's checkpoint "
            "and data, or evaluate this model with fairseq-validate or fairseq-generate".format(
                name, name, ", ".join(eval_lm_tasks())))


def stored_rows(path, key):
    """The first dimension the checkpoint ``path`` declares for the tensor ``key`` of its ``model`` (read from its
    pickle: nothing run, no weight read), or None."""
    state = stored_configuration(path)
    model = state.get("model") if state is not None else None
    declared = getattr(model.get(key), "rebuild_args", None) if isinstance(model, dict) else None
    size = declared[2] if isinstance(declared, tuple) and len(declared) > 2 else None
    return size[0] if isinstance(size, tuple) and size and type(size[0]) is int else None


def lm_dictionary_problem(args):
    """fairseq-generate --lm-path: fairseq builds the language model over ``DATA/dict.txt`` (its language modeling
    task reads the translation data folder) and fuses its scores with the translation model's, id by id, over the
    target dictionary ``DATA/dict.TGT.txt``: the two files must hold the same words in the same order, and the
    language model's stored embedding table as many rows as that dictionary (else: a size mismatch traceback after
    both models and the data were loaded, or, at equal sizes, scores fused on other words' ids). The one line, or
    None (a task without a target dictionary, a folder whose files fairseq reports itself)."""
    from fairseq.data.data_utils import infer_language_pair

    from fairseq_wean.data.dictionary import SPECIALS, dictionary_words

    data = getattr(args, "data", None)
    lm_path = getattr(args, "lm_path", None)
    if not os.path.isfile(lm_path or "") or stored_configuration(lm_path) is None:
        return None  # missing, a folder, a pipe, no checkpoint torch.save writes: the loaders' own line
    if task_kind(getattr(args, "task", None)) != "pair" or not isinstance(data, str) or "://" in data:
        folder = None
    else:
        folder = data.split(os.pathsep)[0]
    target = getattr(args, "target_lang", None) or (infer_language_pair(folder)[1] if folder and os.path.isdir(
        folder) else None)
    if folder is None or target is None or not os.path.isfile(os.path.join(folder, "dict.{}.txt".format(target))):
        return None
    tgt_dict, lm_dict = (os.path.join(folder, name) for name in ("dict.{}.txt".format(target), "dict.txt"))
    fix = ("give a language model trained on the target dictionary {} (fairseq-preprocess --only-source "
           "--srcdict {}), with that file as {}".format(tgt_dict, tgt_dict, lm_dict))
    if not os.path.isfile(lm_dict):
        return ("--lm-path {}: fairseq builds the language model over {} (its task reads the translation data "
                "folder), which is missing: {}".format(args.lm_path, lm_dict, fix))
    words, lm_words = dictionary_words(tgt_dict, "dictionary"), dictionary_words(lm_dict, "dictionary")
    if words != lm_words:
        first = next((i for i, (a, b) in enumerate(zip(words, lm_words)) if a != b), min(len(words), len(lm_words)))
        return ("--lm-path {}: fairseq builds the language model over {} ({} words) and fuses its scores, id by id, "
                "with the translation model's over the target dictionary {} ({} words), and they differ from line {} "
                "on: {}".format(args.lm_path, lm_dict, len(lm_words), tgt_dict, len(words), first + 1, fix))
    rows = stored_rows(args.lm_path, "decoder.embed_tokens.weight")
    if rows is not None and rows != len(words) + len(SPECIALS):
        return ("--lm-path {}: its model embeds {} words, and the target dictionary {} holds {} (with fairseq's 4 "
                "special words): it was trained on another dictionary; {}".format(
                    args.lm_path, rows, tgt_dict, len(words) + len(SPECIALS), fix))
    return None


def checkpoint_kind_problem(args, command=None):
    """The one line for a checkpoint of the wrong kind named by an option of :data:`CHECKED`, or for
    fairseq-eval-lm's task that is none it can run (:func:`eval_lm_task_problem`), or None."""
    from fairseq_wean.patching import running_command

    command = command or running_command()
    problem = eval_lm_task_problem(args, command)
    if problem is not None:
        return problem
    if getattr(args, "lm_path", None) and command == "generate":
        found = stored_model(args.lm_path)
        if found is not None and found[0] is not None and not is_language_model(found[0]):
            return ("--lm-path {}: its model is {}, and fairseq-generate's --lm-path needs a language model (a "
                    "decoder-only model such as transformer_lm, trained with --task language_modeling) whose "
                    "dictionary is the target's: name such a checkpoint, or leave --lm-path out".format(
                        args.lm_path, _described(found)))
    if getattr(args, "lm_path", None) and command == "generate":
        problem = lm_dictionary_problem(args)
        if problem is not None:
            return problem
    kind = task_kind(getattr(args, "task", None))
    if command in ("generate", "interactive", "validate", "eval_lm") and kind is not None:
        for path in _paths(getattr(args, "path", None)):
            found = stored_model(path)
            if found is None or found[0] is None or is_language_model(found[0]) == (kind == "lm"):
                continue
            needs = "a language model" if kind == "lm" else "a model with an encoder (a language model has none)"
            return ("--path {}: its model is {}, and --task {} needs {}: name a checkpoint trained for that task, or "
                    "give the task it was trained with".format(path, _described(found), args.task, needs))
    return None


# What fairseq's loaders read of a checkpoint's state before and while they build its model (load_checkpoint_to_cpu's
# _upgrade_state_dict, load_model_ensemble_and_task, the hubs): checked by :func:`state_problem` where fairseq's
# torch.load returns (checkpoint_safety), so a state of another shape is one line naming what is wrong instead of a
# KeyError, TypeError, ConfigAttributeError, ZeroDivisionError ... traceback after the dictionaries were loaded.
# fairseq 0.12.2's transformer encoder layer keeps copies of its weights for torch's fast path, which it recomputes from
# the layer's own weights when it loads them; later fairseq has neither (its load: "Unexpected key(s)").
FAST_PATH_COPIES = ("in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "fc1_weight", "fc1_bias",
                    "fc2_weight", "fc2_bias")


def _kind(value):
    """``a str``, ``an int``: what ``value`` is."""
    name = type(value).__name__
    if value is None:
        return "None"
    return ("an " if name[0] in "aeiouAEIOU" else "a ") + name


def _section(cfg, name):
    """``cfg[name]`` (a dict, a DictConfig or a Namespace section), or None."""
    from fairseq_wean.metric_check import _entry

    return _entry(cfg, name)


def _model_problem(model):
    """Why the state's ``model`` is no state dict of tensors, or fairseq 0.12.2's fast-path copies this fairseq does
    not have, or None."""
    import re

    import torch

    if not isinstance(model, dict):
        return "its 'model' is {}, not the state dict (parameter name -> tensor) fairseq writes".format(_kind(model))
    for key, value in model.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            return "its 'model' holds {!r}: {}, where fairseq writes a parameter name and its tensor".format(
                key, _kind(value))
    from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

    if "_load_from_state_dict" in vars(TransformerEncoderLayerBase):
        return None  # fairseq 0.12.2 itself: it rebuilds the copies
    for key in model:
        found = re.fullmatch(r"(.*layers\.\d+\.)({})".format("|".join(FAST_PATH_COPIES)), key)
        if found and found.group(1) + "self_attn.q_proj.weight" in model:
            import fairseq

            return ("its model holds fairseq 0.12.2's copies of each transformer encoder layer's weights for torch's "
                    "fast path ({} ...), which fairseq 0.12.2 rebuilds from the layer's own weights when it loads them "
                    "and fairseq {} does not have: load it with fairseq 0.12.2, or delete those keys ({}) from its "
                    "'model' (they are copies) and save it again".format(
                        key, fairseq.__version__, ", ".join("layers.N." + name for name in FAST_PATH_COPIES)))
    return None


def _option_problem(arch, section):
    """The first numeric option the model class of ``arch`` declares whose stored value in ``section`` is not a
    number of its type, not finite, or a size/head/position count below 1 (a layer count below 0), or None."""
    import math

    from fairseq_wean.metric_check import _entry
    from fairseq_wean.option_rules import component_actions

    try:
        actions = component_actions("arch", arch)  # the options the model class declares, as fairseq adds them
    except Exception:  # noqa: B902  (a model whose options cannot be listed: its own build says what it lacks)
        return None
    for action in actions:
        if action.type not in (int, float) or action.dest in ("help",):
            continue
        value = _entry(section, action.dest)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float) if action.type is float else int) \
                or not math.isfinite(value):
            return "{} is {!r} ({}), where --arch {} takes {}".format(
                action.dest, value, _kind(value), arch, "a finite number" if action.type is float else "a whole number")
        least = 0 if action.dest.endswith("_layers") else 1 if action.dest.endswith(
            ("_heads", "_dim", "_positions")) else None
        if least is not None and value < least:
            return "{} is {!r}, where --arch {} takes at least {}".format(action.dest, value, arch, least)
        if "dropout" in action.dest and not 0 <= value < 1:
            return "{} is {!r}, where --arch {} takes a probability in [0, 1)".format(action.dest, value, arch)
    return None


def state_problem(state, build=False):
    """Why ``state`` (what fairseq's torch.load of a checkpoint returned) is not what fairseq's loaders read, or None:
    a dict with a state dict of tensors as ``model``, ``optimizer_history`` a non-empty list of dicts, ``extra_state``
    a dict, ``cfg`` a dict (or None) with ``args`` a Namespace (or None), every stored model section's numeric
    options of their type and range; ``build`` (the model is built from it: --path, --lm-path, the hubs): ``cfg`` or
    ``args`` with a model section naming a registered --arch and a task section naming a registered --task."""
    import argparse

    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY
    from omegaconf import DictConfig

    if not isinstance(state, dict):
        return "its pickle holds {}, not the dict of a fairseq checkpoint (model, cfg, optimizer_history, " \
               "extra_state)".format(_kind(state))
    for key in ("model", "optimizer_history", "extra_state") if build else ("optimizer_history", "extra_state"):
        if key not in state and not (key == "optimizer_history" and {"best_loss", "optimizer"} <= set(state)) \
                and not (key == "extra_state" and "epoch" in state):
            return "it holds no {!r} (it holds: {}), which every fairseq checkpoint has".format(
                key, ", ".join(sorted(map(str, state))[:8]) or "nothing")
    history = state.get("optimizer_history", [{}])
    if not isinstance(history, list) or not history or not all(isinstance(h, dict) for h in history):
        return "its 'optimizer_history' is {}, not the list of dicts fairseq writes".format(
            "empty" if history == [] else _kind(history))
    if "extra_state" in state and not isinstance(state["extra_state"], dict):
        return "its 'extra_state' is {}, not the dict fairseq writes".format(_kind(state["extra_state"]))
    cfg, args = state.get("cfg"), state.get("args")
    if cfg is not None and not isinstance(cfg, (dict, DictConfig)):
        return "its stored configuration 'cfg' is {}, not the dict fairseq writes".format(_kind(cfg))
    for key in ("model", "task", "generation"):  # the sections fairseq's _upgrade_state_dict reads inside
        if cfg is not None and key in cfg and not isinstance(cfg[key], (dict, DictConfig, argparse.Namespace)):
            return "its stored configuration's 'cfg.{}' is {}, not the section fairseq writes".format(key, _kind(
                cfg[key]))
    if args is not None and not isinstance(args, argparse.Namespace):
        return "its stored arguments 'args' are {}, not the Namespace fairseq writes".format(_kind(args))
    problem = _model_problem(state["model"]) if "model" in state else None  # fairseq-train's start reads it later
    if problem is not None:
        return problem
    model = _section(cfg, "model") if cfg is not None else args
    if cfg is not None:
        task = _section(cfg, "task")
        names = [("task", _section(task, "_name"))] if task is not None else [("task", None)] if build else []
    else:
        names = [("task", args.task)] if args is not None and hasattr(args, "task") else []
    if model is None and not build:
        return None
    if model is None or isinstance(model, (str, int, float, list)):
        return "its stored configuration has {}, from which fairseq builds its model".format(
            "neither 'cfg' nor 'args'" if cfg is None and args is None else "no model section ('cfg.model' is {})"
            .format("missing" if model is None else _kind(model)))
    arches = [("arch", value) for value in (_section(model, "_name"), _section(model, "arch")) if value is not None]
    for what, name in (arches or [("arch", None)]) + names:
        registry = (ARCH_MODEL_REGISTRY, MODEL_REGISTRY) if what == "arch" else (TASK_REGISTRY,)
        if not isinstance(name, str) or not any(name in r for r in registry):
            return "its stored --{} is {!r}, which is no registered {}".format(
                what, name, "model architecture" if what == "arch" else "task")
    problem = _option_problem(arches[0][1], model)
    return None if problem is None else "its stored model option " + problem
