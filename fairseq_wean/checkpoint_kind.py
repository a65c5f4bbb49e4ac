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
