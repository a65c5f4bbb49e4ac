"""No path stored in a checkpoint is opened by loading it (used by ``checkpoint_safety``).

A checkpoint stores its whole configuration: ``args`` (older fairseq) and every section of ``cfg``
(``model``, ``task``, ``bpe``, ``common``, ...; a section may be an ``argparse.Namespace``). Building
its task, model or BPE from that configuration would open any file an option there names:
fairseq's own ``encoder_embed_path`` (lstm, transformer, fconv), ``load_pretrained_decoder_from``
(xm_transformer: a raw ``torch.load``, which runs a pickle's code on torch < 2.6), ``w2v_path``,
``bpe_codes`` and the plugin's ``--known-words``, ``--core-align-table``... The file may be gone,
another machine's, or planted (a named pipe that never answers, /dev/zero, a pickle).

:func:`forget_stored_paths` sets to None, by construction, every stored string (at any depth) that
may name a file: any value of the plugin's path options (:func:`stored_path_options`); a value that
could be opened (a path, a URL, a file name with an extension, or an existing entry) of an option
that any registered component (fairseq's or the plugin's) declares a path by its metavar, help or
name (:func:`path_option_names`), or whose name says so (:func:`is_path_name`: ``path``, ``file``,
``dir``, ``from``, ``pretrained``, ``codes``, ``vocab``, ``json``, ``yaml``, ``url``; ``*_model``,
``*_dict``); and, in any other option, a value that looks like a path (:func:`looks_like_path`: a
path separator, a URL, a file name with an extension, or an existing entry that is not a plain
word: ``relu`` stays). Kept: ``_name``, the task's ``data`` (every loader
gives it again: fairseq-generate's DATA, the hub's ``data_name_or_path``) and what the caller gives
again in ``arg_overrides``. A model's pretrained embeddings or encoder are only read when it is first
built for training; a checkpoint holds their trained weights, so dropping the path loses nothing.

:func:`forget_stored_interpolations` forgets every OmegaConf interpolation stored anywhere (a string
holding ``${``: ``${oc.env:VAR}``, ``${..key}``, ``${oc.decode:...}``, any resolver), before anything
resolves it: the option takes the default its component declares, or the load is refused in one line
where what names the component built is one.
"""
import argparse
import os
import re

# fairseq's own option the hub opens when it is a string (an alignment dictionary)
FAIRSEQ_STORED_PATHS = {"generation": ("replace_unk",)}
PATH_METAVARS = ("PATH", "FILE")
# Sections built by the hub whose components read files named by their options: every stored string
# there that looks like a path is forgotten (hub.forgotten_files names what to give again).
PATH_SECTIONS = ("bpe", "tokenizer")
# words of an option's name that say its value is a file or folder
PATH_WORDS = {"path", "paths", "file", "files", "dir", "folder", "from", "pretrained", "codes", "vocab", "json",
              "yaml", "url", "checkpoint_file"}
PATH_SUFFIXES = ("_model", "_dict")
# keys kept whatever their value: the component's name; the data folder, which every loader gives again
KEPT = {"_name"}
KEPT_DATA_SECTIONS = (None, "task")  # None: the old-style args Namespace
FILE_NAME = re.compile(r"^[^\s{}()\[\]'\",]+\.[A-Za-z][A-Za-z0-9]{0,7}$")
WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def is_path_name(key):
    words = set(str(key).lower().split("_"))
    return bool(words & PATH_WORDS) or str(key).lower().endswith(PATH_SUFFIXES)


def looks_like_path(value):
    """Whether a stored string may name a file: it holds a path separator or ``://`` (fairseq's
    cached_path fetches URLs), is a file name with an extension (``emb.txt``, ``evil.pt``), or names
    an existing entry and is not a plain word (``relu``, ``lstm``: option values, not files)."""
    return isinstance(value, str) and value != "" and (
        os.sep in value or "://" in value or FILE_NAME.match(value) is not None
        or (os.path.lexists(value) and WORD.match(value) is None))


def plugin_options():
    """``[(component, dest, declaration)]`` of every option a plugin component declares: the
    dataclass fields of its tasks, criteria, BPEs, tokenizers and scorers (``declaration``: the
    ``dataclasses.Field``) and the ``add_args`` arguments of its models (an argparse action)."""
    import dataclasses

    from fairseq import models, tasks
    from fairseq.registry import REGISTRIES

    found = []
    configs = [("task " + name, config) for name, config in tasks.TASK_DATACLASS_REGISTRY.items()]
    for kind, registry in REGISTRIES.items():
        configs += [("{} {}".format(kind, name), config) for name, config in registry["dataclass_registry"].items()]
    for component, config in configs:
        if config is not None and config.__module__.startswith("fairseq_wean"):
            found += [(component, field.name, field) for field in dataclasses.fields(config)]
    for name, model in models.MODEL_REGISTRY.items():
        if model.__module__.startswith("fairseq_wean"):
            parser = argparse.ArgumentParser(add_help=False)
            model.add_args(parser)
            found += [("model " + name, action.dest, action) for action in parser._actions]
    return found


def is_path_option(declaration):
    if isinstance(declaration, argparse.Action):
        return declaration.metavar in PATH_METAVARS
    return bool((declaration.metadata or {}).get("path"))


def stored_path_options():
    """The names of the plugin's options whose value is a file (see :data:`PATH_METAVARS`)."""
    return sorted({dest for _component, dest, declaration in plugin_options() if is_path_option(declaration)})


PATH_HELP = re.compile(r"\bpaths?\b|\bfiles?\b|director|folder|\bload|pretrained|checkpoint|\burl\b", re.I)


def registered_options():
    """``[(component, dest, declaration)]`` of every option of every registered task, model, BPE,
    tokenizer, criterion... (fairseq's and the plugin's): dataclass fields and the ``add_args``
    arguments of the models and tasks that declare none."""
    import dataclasses

    from fairseq import models, tasks
    from fairseq.registry import REGISTRIES

    found = []
    configs = [("task " + name, config) for name, config in tasks.TASK_DATACLASS_REGISTRY.items()]
    configs += [("model " + name, config) for name, config in models.MODEL_DATACLASS_REGISTRY.items()]
    for kind, registry in REGISTRIES.items():
        configs += [("{} {}".format(kind, name), config) for name, config in registry["dataclass_registry"].items()]
    for component, config in configs:
        if config is not None and dataclasses.is_dataclass(config):
            found += [(component, field.name, field) for field in dataclasses.fields(config)]
    classes = [("model " + name, cls) for name, cls in models.MODEL_REGISTRY.items()]
    classes += [("task " + name, cls) for name, cls in tasks.TASK_REGISTRY.items()]
    for component, cls in classes:
        parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
        try:
            cls.add_args(parser)
        except Exception:  # an add_args that needs more than a parser: its dataclass is listed above
            continue
        found += [(component, action.dest, action) for action in parser._actions]
    return found


def declares_a_path(dest, declaration):
    """Whether an option's declaration says its value is a file or folder: a string option (no
    choices) whose metavar, help or name says so."""
    if isinstance(declaration, argparse.Action):
        if declaration.choices or declaration.nargs == 0 or declaration.type not in (None, str):
            return False
        text, metavar = declaration.help or "", str(declaration.metavar or "")
    else:
        if str(declaration.type) not in ("<class 'str'>", "typing.Optional[str]"):
            return False
        text, metavar = str((declaration.metadata or {}).get("help") or ""), ""
    return (is_path_option(declaration) or metavar.upper() in ("PATH", "FILE", "DIR", "FOLDER")
            or is_path_name(dest) or PATH_HELP.search(text) is not None)


_PATH_NAMES = None


def path_option_names():
    """(names declared a path by some component, names every component declares no path): see
    :func:`declares_a_path`; computed once per process."""
    global _PATH_NAMES
    if _PATH_NAMES is None:
        paths, others = set(), set()
        for _component, dest, declaration in registered_options():
            (paths if declares_a_path(dest, declaration) else others).add(dest)
        _PATH_NAMES = (paths, others - paths)
    return _PATH_NAMES


# Model options whose data a model reads once, when first built for training, and keeps in its
# checkpoint; the second name is the argument that says the checkpoint holds it (then the build
# reads nothing): option -> flag.
BUILT_FROM_CHECKPOINT = {
    "core_align_table": "core_align_table_in_checkpoint",  # models/core_copy.py: A, and a target-side U
    "wean_candidates": "wean_candidates_in_checkpoint",  # models/wean_lstm.py: the candidate words
}


class _Section:
    """One stored section, a DictConfig, a dict or an argparse Namespace, read and written alike."""

    def __init__(self, section):
        from omegaconf import OmegaConf

        self.section = section
        self.is_config = OmegaConf.is_config(section)
        self.is_dict = self.is_config or isinstance(section, dict)

    def keys(self):
        return list(self.section.keys()) if self.is_dict else list(vars(self.section))

    def has(self, key):
        return key in self.section if self.is_dict else hasattr(self.section, key)

    def get(self, key):
        if self.is_config:
            from omegaconf import OmegaConf

            node = self.section._get_node(key)  # unresolved: an interpolation is no value to open
            return node if OmegaConf.is_config(node) else node._value()
        return self.section[key] if self.is_dict else getattr(self.section, key)

    def set(self, changes):
        if not changes:
            return
        if self.is_config:
            from omegaconf import open_dict

            with open_dict(self.section):
                for key, new in changes.items():
                    self.section[key] = new
        elif self.is_dict:
            self.section.update(changes)
        else:
            for key, new in changes.items():
                setattr(self.section, key, new)


def _is_section(value):
    from omegaconf import OmegaConf

    return OmegaConf.is_dict(value) or isinstance(value, (dict, argparse.Namespace))


def _names_a_file(key, value, paths):
    from omegaconf import OmegaConf

    if OmegaConf.is_list(value) or isinstance(value, (list, tuple)):
        return any(_names_a_file(key, item, paths) for item in value)
    if not isinstance(value, str) or value == "":
        return False
    if key in paths:  # the plugin's own path options: whatever the value
        return True
    declared, not_paths = path_option_names()
    if key in declared or (is_path_name(key) and key not in not_paths):
        # a path option: any value that could be opened (a bare name is one where it exists; a list of
        # words that name nothing, such as --langs en,de, is kept)
        return looks_like_path(value) or any(os.path.lexists(part) for part in [value] + value.split(","))
    return looks_like_path(value)


def _forget_in(section, name, paths, arg_overrides, top=True, forgotten=None, where=None):
    """Set every path-like string of ``section`` (and of the sections nested in it) to None; the
    dotted names of those that held one are appended to ``forgotten``."""
    forgotten = [] if forgotten is None else forgotten
    where = where if where is not None else (name or "args")
    part = _Section(section)
    changes = {}
    for key in part.keys():
        if key in KEPT or (top and key in arg_overrides) or (top and key == "data" and name in KEPT_DATA_SECTIONS):
            continue
        value = part.get(key)
        if _is_section(value):
            _forget_in(value, name, paths, arg_overrides, False, forgotten, "{}.{}".format(where, key))
        elif _names_a_file(key, value, paths):
            if value is not None:
                changes[key] = None
        elif key in FAIRSEQ_STORED_PATHS.get(name or "generation", ()) and isinstance(value, str):
            changes[key] = None
    forgotten.extend("{}.{}".format(where, key) for key in changes)
    if top and name is None and not part.is_dict:  # old-style args: fairseq converts them to a config again
        required = _required_defaults(section)
        changes.update((key, required[key]) for key in changes if key in required)
    elif top and name is not None:  # a section of cfg: fairseq builds its dataclass from it (omegaconf's types)
        required = _section_required_defaults(name, part)
        changes.update((key, required[key]) for key in changes if key in required)
    if top:
        for option, flag in BUILT_FROM_CHECKPOINT.items():
            if part.has(flag) or part.has(option):
                changes[flag] = True
    part.set(changes)


def _config_sections():
    """{section: type} of fairseq's ``FairseqConfig`` (``common``, ``checkpoint``...: dataclasses; ``model``,
    ``task``, ``bpe``...: the registered component its ``_name`` names, :func:`_component_dataclass`)."""
    import dataclasses

    from fairseq.dataclass.configs import FairseqConfig

    return {field.name: field.type for field in dataclasses.fields(FairseqConfig)}


def _component_dataclass(kind, choice):
    """The dataclass of the component ``choice`` of ``kind`` (a registry's: ``bpe``, ``criterion``...; a model by
    its model's name; a task), or None: the one fairseq's builders merge a stored section into."""
    from fairseq.registry import REGISTRIES

    cls = REGISTRIES[kind]["dataclass_registry"].get(choice) if kind in REGISTRIES else None
    if cls is None and kind == "model":
        from fairseq.models import MODEL_DATACLASS_REGISTRY

        cls = MODEL_DATACLASS_REGISTRY.get(choice)
    if cls is None and kind == "task":
        from fairseq.tasks import TASK_DATACLASS_REGISTRY

        cls = TASK_DATACLASS_REGISTRY.get(choice)
    return cls


def _not_none_defaults(cls, merged=False):
    """{field: default} of the fields of the dataclass ``cls`` (none for anything else) that cannot be None and
    have a default (``checkpoint.save_dir``): what a forgotten option takes, as if never given. ``merged``: for a
    section fairseq merges into ``cls`` (``merge_with_parent``, which resolves nothing), an ``II("common.x")``
    default is the default of the field it names (None where that is no plain default of a ``FairseqConfig``
    section), and omegaconf's MISSING (``'???'``, a field the user must give) is no default (the option stays
    None: the hub then says which file to give). Otherwise (the old-style args, which fairseq converts through
    hydra's overrides: the interpolation is resolved in the whole config there, and MISSING stays MISSING) both
    are kept as they are."""
    import dataclasses
    import typing

    sections = _config_sections() if merged else {}
    unset = (None, dataclasses.MISSING, "???") if merged else (None, dataclasses.MISSING)
    types = {field.name: field.type for field in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    required = {}
    for key, default in _field_defaults(cls).items():
        match = II_PATH.match(default) if merged and isinstance(default, str) else None
        if match:  # II("common.plasma_path"): the default of the field it names
            owner, _, attr = match.group(1).partition(".")
            target = sections.get(owner)
            default = next((f.default for f in dataclasses.fields(target) if f.name == attr), None) \
                if dataclasses.is_dataclass(target) and "." not in attr else None
        if default not in unset and type(None) not in typing.get_args(types[key]):
            required[key] = default
    return required


def _required_defaults(args):
    """:func:`_not_none_defaults` of the dataclasses fairseq converts the old-style ``args`` to (FairseqConfig's
    sections, then the model's of ``arch``, then the task's), the first one's where two declare an option."""
    import dataclasses

    from fairseq.models import ARCH_MODEL_REGISTRY

    classes = [cls for cls in _config_sections().values() if dataclasses.is_dataclass(cls)]
    model = ARCH_MODEL_REGISTRY.get(getattr(args, "arch", None))
    classes += [getattr(model, "__dataclass", None), _component_dataclass("task", getattr(args, "task", None))]
    required = {}
    for cls in classes:
        for key, default in _not_none_defaults(cls).items():
            required.setdefault(key, default)
    return required


def _section_required_defaults(name, part):
    """:func:`_not_none_defaults` (``merged``) of the dataclass a ``cfg`` section ``name`` is built as:
    FairseqConfig's section of that name, or the component of its ``_name`` (an architecture's name builds no
    dataclass: fairseq runs its architecture function on the section). LanguageModelingConfig's ``plasma_path``
    (a str) set to None made fairseq-validate and the hub an omegaconf ValidationError."""
    import dataclasses

    cls = _config_sections().get(name)
    if not dataclasses.is_dataclass(cls):
        choice = part.get("_name") if part.has("_name") else None
        cls = _component_dataclass(name, choice) if choice else None
    return _not_none_defaults(cls, merged=True)


def forget_stored_paths(state, arg_overrides):
    """Forget every stored path of a loaded checkpoint's configuration (``args`` and every section of
    ``cfg``: see the module docstring), except those the caller gives again in ``arg_overrides`` (the
    hub's keyword arguments), and mark a ``core_copy`` checkpoint as holding its alignment table and a
    ``wean_lstm`` one as holding its candidate words (:data:`BUILT_FROM_CHECKPOINT`), so that building
    its model reads neither the table nor the training data. Nothing of a checkpoint's own becomes a
    path that loading it opens. Returns the dotted names of the options forgotten (``model.w2v_path``;
    ``args.X`` for the old-style args), for the message of a model that cannot be built without them."""
    # interpolations first (checkpoint_safety's loader forgets them before fairseq reads the state, too)
    forgotten = forget_stored_interpolations(state)
    paths = set(stored_path_options())
    cfg = state.get("cfg")
    sections = [(None, state.get("args"))]
    if cfg is not None and _is_section(cfg):
        sections += [(name, _Section(cfg).get(name)) for name in _Section(cfg).keys()]
    for name, section in sections:
        if section is not None and _is_section(section):
            _forget_in(section, name, paths, arg_overrides or {}, forgotten=forgotten)
    return forgotten


# --- OmegaConf interpolations -------------------------------------------------------------------
# A stored string holding ``${`` is an OmegaConf interpolation (``${oc.env:VAR}``, ``${..key}``,
# ``${oc.decode:...}``, any registered resolver): fairseq resolves it when it reads the option (its
# load_checkpoint_to_cpu already, through overwrite_args_by_name; old-style args through hydra's
# overrides, resolved), so a checkpoint could make loading it read an environment variable, call a
# resolver, or name a file that only the resolution spells. fairseq saves its configuration resolved
# (``OmegaConf.to_container(cfg, resolve=True)``): no checkpoint fairseq wrote holds one.
INTERPOLATION = "${"
# what names the component a section builds: nothing is built without it
COMPONENT_NAMES = {"_name", "arch", "task", "criterion", "optimizer", "lr_scheduler"}
# sections of ``cfg`` that may be None (fairseq's FairseqConfig: none given)
OPTIONAL_SECTIONS = ("bpe", "tokenizer", "scoring")
II_PATH = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}$")


def holds_interpolation(value):
    """Whether ``value`` holds, at any depth (a string, a key, a list, a dict, a Namespace, an
    OmegaConf node, unresolved), ``${``."""
    from omegaconf import OmegaConf

    if isinstance(value, str):
        return INTERPOLATION in value
    if OmegaConf.is_config(value):
        return holds_interpolation(OmegaConf.to_container(value, resolve=False))
    if isinstance(value, argparse.Namespace):
        value = vars(value)
    if isinstance(value, dict):
        return any(holds_interpolation(key) or holds_interpolation(item) for key, item in value.items())
    if isinstance(value, (list, tuple, set)):
        return any(holds_interpolation(item) for item in value)
    return False


def _field_defaults(config):
    import dataclasses

    found = {}
    for field in dataclasses.fields(config) if dataclasses.is_dataclass(config) else ():
        if field.default_factory is not dataclasses.MISSING:
            found[field.name] = field.default_factory()
        elif field.default is not dataclasses.MISSING:
            found[field.name] = field.default
    return found


def _parser_defaults(cls):
    parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
    try:
        cls.add_args(parser)
    except Exception:  # an add_args that needs more than a parser: its dataclass gives the defaults
        return {}
    return {action.dest: action.default for action in parser._actions if action.default is not argparse.SUPPRESS}


def _architecture_defaults(arch):
    """What the architecture function ``arch`` sets on a Namespace that holds nothing (fairseq's
    ``base_architecture`` fills every option the model reads with ``getattr(args, name, default)``)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = argparse.Namespace()
    try:
        ARCH_CONFIG_REGISTRY[arch](args)
    except Exception:  # no such architecture, or one that needs given options: no defaults from it
        return {}
    return vars(args)


def declared_defaults(name, section):
    """{option: default} that the components a stored section names declare: fairseq's
    ``FairseqConfig`` section of that name, the dataclass and ``add_args`` of the task, model
    (``arch``), BPE, criterion... named by its ``_name``; for the old-style ``args`` (``name`` None), all
    of them, each component named by its option (``arch``, ``task``, ``bpe``...)."""
    import dataclasses

    from fairseq import models, tasks
    from fairseq.registry import REGISTRIES

    part = _Section(section)
    get = (lambda key: part.get(key) if part.has(key) else None)
    sections = _config_sections()
    kinds = [name] if name is not None else ["model", "task"] + list(REGISTRIES) + list(sections)
    defaults = {}
    for kind in kinds:
        component = get("_name") if name is not None else get("arch" if kind == "model" else kind)
        if kind == "model":
            arch = get("arch") or component
            model = models.ARCH_MODEL_REGISTRY.get(arch) or models.MODEL_REGISTRY.get(arch)
            defaults.update(_parser_defaults(model) if model is not None else {})
            defaults.update(_architecture_defaults(arch))
            named = models.ARCH_MODEL_NAME_REGISTRY.get(arch, arch)  # an architecture: its model's name
            defaults.update(_field_defaults(_component_dataclass("model", named)))
        elif kind == "task":
            task = tasks.TASK_REGISTRY.get(component) if isinstance(component, str) else None
            defaults.update(_parser_defaults(task) if task is not None else {})
            defaults.update(_field_defaults(_component_dataclass("task", component)))
        elif kind in REGISTRIES and isinstance(component, str):
            defaults.update(_field_defaults(_component_dataclass(kind, component)))
        if dataclasses.is_dataclass(sections.get(kind)):
            for key, value in _field_defaults(sections[kind]).items():
                defaults.setdefault(key, value)
    return defaults


def _stored_at(state, dotted):
    """The stored value at ``dotted`` (``common.seed``: ``cfg.common.seed``; the old-style args: ``args.seed``),
    unresolved; None where there is none."""
    node = state.get("cfg")
    for key in dotted.split("."):
        part = _Section(node) if node is not None and _is_section(node) else None
        node = part.get(key) if part is not None and part.has(key) else None
    if node is None and state.get("args") is not None:
        args = _Section(state["args"])
        key = dotted.split(".")[-1]
        node = args.get(key) if args.has(key) else None
    return node


def _plain_default(state, default):
    """``default`` as a stored value: fairseq's own ``II("common.seed")`` is the stored value it names (None
    where that is an interpolation too or absent); an enum its name."""
    import enum

    if isinstance(default, enum.Enum):
        return default.name
    if isinstance(default, str) and default == "???":  # omegaconf's MISSING: no default
        return None
    if isinstance(default, str) and INTERPOLATION in default:
        match = II_PATH.match(default)
        value = _stored_at(state, match.group(1)) if match else None
        return None if holds_interpolation(value) else value
    return None if holds_interpolation(default) else default


def _refuse_interpolation(where, value, path):
    from fairseq_wean.errors import FairseqWeanError

    raise FairseqWeanError(
        "{}stores {} as an OmegaConf interpolation ({!r}), which would be resolved when it is loaded (an "
        "environment variable, another option, a resolver's call) and names what is built from it: refused, nothing "
        "was resolved; save the checkpoint again with plain values".format(
            "checkpoint {}: ".format(path) if path else "the checkpoint's configuration ", where,
            str(value)[:80]))


def _forget_interpolations_in(state, name, section, where, path, forgotten):
    part = _Section(section)
    changes, dropped = {}, []
    defaults = None
    for key in part.keys():
        if holds_interpolation(key):
            dropped.append(key)  # no component declares an option of that name: nothing reads it
            continue
        value = part.get(key)
        if not holds_interpolation(value):
            continue
        if key in COMPONENT_NAMES:
            _refuse_interpolation("{}.{}".format(where, key), value, path)
        if defaults is None:
            defaults = declared_defaults(name, section)
        if key in defaults:
            changes[key] = _plain_default(state, defaults[key])
        else:  # no component declares it (fairseq's dataclasses refuse such a key): dropped
            dropped.append(key)
    if dropped:
        if part.is_config:
            from omegaconf import open_dict

            with open_dict(section):
                for key in dropped:
                    del section[key]
        elif part.is_dict:
            for key in dropped:
                del section[key]
        else:
            for key in dropped:
                delattr(section, key)
    part.set(changes)
    forgotten.extend("{}.{}".format(where, key) for key in dropped + list(changes))


def forget_stored_interpolations(state, path=None):
    """Forget every OmegaConf interpolation a checkpoint's configuration stores (any string holding
    ``${``, at any depth, in ``args`` and every section of ``cfg``), before fairseq reads any of it: an
    option whose value holds one takes the default its component declares (fairseq's ``II`` default:
    the stored value it names); an option none declares, or whose name holds one, is dropped; a
    section that is one becomes None where fairseq allows none (``bpe``, ``tokenizer``, ``scoring``).
    What names the component a section builds (``_name``, ``arch``, ``task``...) or a section fairseq
    needs is refused in one line (:class:`FairseqWeanError`, naming ``path``). ``state`` is changed in
    place (anything but a dict is left alone); returns the dotted names forgotten."""
    forgotten = []
    if not isinstance(state, dict):
        return forgotten
    args, cfg = state.get("args"), state.get("cfg")
    if args is not None and _is_section(args):
        _forget_interpolations_in(state, None, args, "args", path, forgotten)
    elif holds_interpolation(args):
        _refuse_interpolation("args", args, path)
    if cfg is None:
        return forgotten
    if not _is_section(cfg):
        if holds_interpolation(cfg):
            _refuse_interpolation("cfg", cfg, path)
        return forgotten
    top = _Section(cfg)
    changes, dropped = {}, []
    for name in top.keys():
        section = top.get(name)
        if holds_interpolation(name):
            dropped.append(name)
        elif section is not None and _is_section(section):
            _forget_interpolations_in(state, name, section, "cfg." + str(name), path, forgotten)
        elif holds_interpolation(section):
            if name not in OPTIONAL_SECTIONS:
                _refuse_interpolation("cfg." + str(name), section, path)
            changes[name] = None
    for name in dropped:
        if top.is_config:
            from omegaconf import open_dict

            with open_dict(cfg):
                del cfg[name]
        else:
            del cfg[name]
    top.set(changes)
    forgotten.extend("cfg.{}".format(name) for name in dropped + list(changes))
    return forgotten
