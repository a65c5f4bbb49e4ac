"""How the plugin changes fairseq's functions: each change once, however often it is applied.

fairseq gives a plugin one hook, the import of ``--user-dir``, and the modules that patch fairseq
(:mod:`fairseq_wean.compat`, :mod:`fairseq_wean.checkpoint_safety`,
:mod:`fairseq_wean.distributed`, :mod:`fairseq_wean.hub`, :mod:`fairseq_wean.unk_replacement`,
:mod:`fairseq_wean.report.gate_lines`) may be asked to install their patches more than once in a
process (``compat.apply()`` again, a test that imports the plugin and then runs fairseq's CLIs).
Every patch therefore goes through :func:`wrap_once` (or :func:`replace_once`, or
:func:`replace_method_once` for code that fairseq compiles with TorchScript): the new function
carries, in ``_fairseq_wean_fixed``, the names of the patches applied to it, including those of the
function it wraps. A patch already there is not applied again, and two modules may wrap the same
function (``FairseqTask.inference_step`` is wrapped by ``unk_replacement`` and by ``gate_lines``).

:func:`add_generation_argument` is the one place that adds the plugin's options to fairseq's
generation options (``--print-gates``, ``--replace-unk-source``).

Each patch first checks that the fairseq it runs on has the bug (its version's code, or its
behaviour on a small input), and says what it found with :func:`note`: applied, or not applied
and why, in one line. ``python -m fairseq_wean.cli.patches`` prints those lines, one per patch
(docs/fairseq-patches.md lists the patches with their bugs, versions and tests).

Imports nothing from the project but ``errors`` and ``option_ranges`` (the range tables, which import
nothing), so that every patching module may import it.
"""
import argparse
import os
import sys
import types

from fairseq_wean.errors import FairseqWeanError
# the range of every numeric option, applied to each parser by _ranged_actions (kept importable from here)
from fairseq_wean.option_ranges import (FAIRSEQ_ANY_VALUE, FAIRSEQ_LITERAL, FAIRSEQ_RANGES,  # noqa: F401
                                        GENERATION_ANY_VALUE, GENERATION_RANGES, MAX_BEAM, MAX_LEN_A, MAX_LENPEN,
                                        MAX_NO_REPEAT_NGRAM, MIN_TEMPERATURE, SHARDING_RANGES)

MARK = "_fairseq_wean_fixed"
ROOT = "_fairseq_wean_root"  # on a wrapper: the fairseq function it (and any wrapper inside it) wraps

# What each patch found in this process: its name -> (applied, one line saying why).
_STATUS = {}


def note(name, applied, why):
    """Record whether the patch ``name`` was applied in this process, and why, in one line."""
    _STATUS[name] = (bool(applied), " ".join(str(why).split()))


def found(name, check):
    """Whether the fairseq of this process has the bug that patch ``name`` fixes.

    ``check()`` returns ``(has_the_bug, one line saying what was found)``; it runs once per
    process, on fairseq's own code, before the patch is applied (a second import or ``compat.apply()`` reuses
    the answer), and :func:`note` records it.
    """
    known = status()
    if name not in known:
        has_bug, why = check()
        note(name, has_bug, why)
        return has_bug
    return known[name][0]


def same_code(name, why):
    """Record a patch whose bug is in the code of every fairseq the plugin installs with
    (0.12.2 and fairseq-fixed 0.12.3.1, docs/fairseq-patches.md): it is always applied."""
    return found(name, lambda: (True, why))


def status():
    """``{patch name: (applied, why)}`` for every patch the plugin's import considered."""
    return dict(_STATUS)


def status_lines():
    """One line per patch: its name, ``applied`` or ``not applied``, and why."""
    width = max((len(name) for name in _STATUS), default=0)
    return ["{:<{}}  {:<11}  {}".format(name, width, "applied" if applied else "not applied", why)
            for name, (applied, why) in _STATUS.items()]


def _qualified_name(obj):
    return "{}.{}".format(obj.__module__, obj.__qualname__)


def wrap_once(owner, name, make_wrapper, key=None):
    """Replace ``owner.name`` by ``make_wrapper(original)``, unless that patch is on it already.

    ``key`` names the patch (default: ``make_wrapper``'s module and name). Returns what
    ``owner.name`` is afterwards.
    """
    key = key or _qualified_name(make_wrapper)
    original = getattr(owner, name)
    applied = getattr(original, MARK, ())
    if key in applied:
        return original
    wrapper = make_wrapper(original)
    setattr(wrapper, MARK, tuple(applied) + (key,))
    setattr(wrapper, ROOT, getattr(original, ROOT, original))  # fairseq's own function under every wrapper
    setattr(owner, name, wrapper)
    return wrapper


def wrap_every_binding(module, name, make_wrapper, key=None, prefixes=("fairseq.", "fairseq_cli.")):
    """:func:`wrap_once` on ``module.name`` and on every loaded module under ``prefixes`` that bound the
    same function by name (``from fairseq.tasks.translation import load_langpair_dataset``; wrapped or not, by
    the function under its wrappers, :data:`ROOT`): a fix of a
    function reaches every caller, not only those that look it up in its home module. Returns the names
    of the modules wrapped."""
    key = key or _qualified_name(make_wrapper)
    root = getattr(getattr(module, name), ROOT, getattr(module, name))
    wrapped = []
    for mod_name, mod in sorted(sys.modules.items()):
        bound = getattr(mod, name, None) if mod_name.startswith(prefixes) else None
        if mod is module or (bound is not None and getattr(bound, ROOT, bound) is root):
            wrap_once(mod, name, make_wrapper, key=key)
            wrapped.append(mod_name)
    return wrapped


def replace_once(owner, name, replacement):
    """Replace ``owner.name`` by ``replacement`` (which does not call the original), once."""
    return wrap_once(owner, name, lambda original: replacement, key=_qualified_name(replacement))


def replace_method_once(owner, name, method, original_as):
    """Replace the method ``owner.name`` of a class by ``method``, which reaches fairseq's own
    method as ``self.<original_as>(...)``; once.

    For the methods of ``nn.Module`` s that fairseq compiles with ``torch.jit.script``
    (``SequenceGenerator`` and everything it calls: its search, ``NGramRepeatBlock``,
    ``EnsembleModel``). :func:`wrap_once`'s wrapper is a closure around the original, and
    TorchScript compiles the original it finds in the closure as a free function, whose ``self``
    it takes for a tensor: scripting fails ("'Tensor (inferred)' object has no attribute ..."),
    for every user of the process. Here ``method`` is an ordinary method (annotate its arguments
    as TorchScript needs), and the original stays on the class under ``original_as``, where
    TorchScript compiles it as the method it is. fairseq's ``@torch.jit.export`` /
    ``@torch.jit.unused`` on the original carry over to ``method`` unless it has its own.
    Returns what ``owner.name`` is afterwards.
    """

    def keep_original(original):
        if original_as in vars(owner):
            raise ValueError("{}.{} exists already".format(owner.__name__, original_as))
        setattr(owner, original_as, _renamed(original, original_as))
        installed = _renamed(method, name)
        modifier = getattr(original, "_torchscript_modifier", None)
        if modifier is not None and not hasattr(installed, "_torchscript_modifier"):
            installed._torchscript_modifier = modifier
        return installed

    return wrap_once(owner, name, keep_original, key=_qualified_name(method))


def _renamed(function, name):
    """A copy of ``function`` whose ``__name__`` is the attribute it is installed as.

    TorchScript compiles a method that another compiled method calls under its function's
    ``__name__``: fairseq's ``_no_repeat_ngram`` kept under another attribute would be compiled
    as a second ``_no_repeat_ngram`` ("Can't redefine method").
    """
    copy = types.FunctionType(function.__code__, function.__globals__, name, function.__defaults__,
                              function.__closure__)
    copy.__dict__.update(function.__dict__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__annotations__ = dict(function.__annotations__)
    copy.__doc__, copy.__module__, copy.__qualname__ = function.__doc__, function.__module__, function.__qualname__
    return copy


# The plugin's own generation options, in the order they were added:
# (flags, add_argument kwargs, why fairseq-interactive refuses it or None).
_GENERATION_ARGUMENTS = []


def add_generation_argument(*flags, not_interactive=None, **kwargs):
    """Add an option to fairseq's generation options (``options.add_generation_args``: what
    fairseq-generate and fairseq-interactive accept), after fairseq's own.

    fairseq imports ``--user-dir`` before it builds its parser, so an option added when the plugin
    is imported is in every parser fairseq builds afterwards. Adding the same flags again does
    nothing. ``not_interactive``: why the option does nothing in fairseq-interactive, which shares
    the generation options; there it is refused in one line before any work, not ignored.
    """
    from fairseq import options

    if all(known != flags for known, _, _ in _GENERATION_ARGUMENTS):
        _GENERATION_ARGUMENTS.append((flags, kwargs, not_interactive))
    wrap_once(options, "add_generation_args", _with_plugin_generation_arguments)
    wrap_once(options, "parse_args_and_arch", _with_decoding_cross_checks)


def generation_arguments():
    """The plugin's generation options: [(flags, why fairseq-interactive refuses it or None)]."""
    return [(flags, why) for flags, _, why in _GENERATION_ARGUMENTS]


def running_interactive():
    """Whether this process is fairseq-interactive (its console script or ``fairseq_cli.interactive``)."""
    import sys

    return "interactive" in os.path.basename(sys.argv[0] or "")


class _RefusedInInteractive(argparse.Action):
    """The action of a generation option fairseq-interactive cannot use: a one-line error."""

    def __init__(self, option_strings, dest, why, takes_value, **kwargs):
        kwargs.pop("nargs", None)
        super().__init__(option_strings, dest, nargs=None if takes_value else 0, **kwargs)
        self.why = why

    def __call__(self, parser, namespace, values, option_string=None):
        raise FairseqWeanError("{} is fairseq-generate's: {}".format(option_string, self.why))


# More rules on a parsed command's options, added by the plugin's modules (the task's options that
# only fairseq-train reads): functions of the parsed args returning a problem (one line) or None.
_OPTION_CHECKS = []


def add_option_check(check):
    """Run ``check(args)`` after fairseq parses any command (see :func:`decoding_option_problem`)."""
    if check not in _OPTION_CHECKS:
        _OPTION_CHECKS.append(check)


def min_len_problem(min_len, max_len_a, max_len_b, prefix="--"):
    """--min-len above the longest output --max-len-a/-b allow for every source (--max-len-a 0:
    --max-len-b itself): fairseq asserts it after the model is loaded."""
    if isinstance(min_len, (int, float)) and isinstance(max_len_b, (int, float)) and not max_len_a \
            and min_len > max_len_b:
        def name(option):
            return prefix + option if prefix == "--" else option.replace("-", "_")

        return ("{} {} is above {} {} (with {} 0 the length of every output): lower {} or raise {}".format(
            name("min-len"), min_len, name("max-len-b"), max_len_b, name("max-len-a"), name("min-len"),
            name("max-len-b")))
    return None


def no_repeat_problem(args):
    """--no-repeat-ngram-size N above the longest output --max-len-a 0 --max-len-b allows: no output has an
    n-gram of N words, so it blocks nothing (and its cost grows with N)."""
    size, max_len_a, max_len_b = (getattr(args, name, None) for name in ("no_repeat_ngram_size", "max_len_a",
                                                                         "max_len_b"))
    if isinstance(size, int) and isinstance(max_len_b, int) and not max_len_a and size > max(max_len_b, 1):
        return ("--no-repeat-ngram-size {} is above --max-len-b {} (with --max-len-a 0 the length of every output): "
                "no output has an n-gram that long, it blocks nothing; give at most {}".format(
                    size, max_len_b, max(max_len_b, 1)))
    return None


# Every option whose text fairseq evaluates (ast.literal_eval, eval, json.loads) where it reads it, after the
# parse: option -> (what it must evaluate to, an example). Bad text was a SyntaxError/ValueError traceback
# (--optimizer-overrides when the checkpoint is restored, --model-overrides after the data loaded); now one line
# at parse (tests/test_option_noops.py finds every such read in fairseq's and the plugin's code). The task's
# --eval-bleu-args / --eval-bleu-detok-args have their own check (the task module's).
LITERAL_OPTIONS = {
    "model_overrides": ("a dict of option names (strings) to values", "\"{'max_source_positions': 2048}\""),
    "optimizer_overrides": ("a dict of option names (strings) to values", "\"{'lr': 0.0005}\""),
}


def literal_option_problem(name, text):
    """The one line for ``--name TEXT`` that fairseq would fail to evaluate as :data:`LITERAL_OPTIONS` says."""
    import ast

    if not isinstance(text, str) or name not in LITERAL_OPTIONS:
        return None
    what, example = LITERAL_OPTIONS[name]
    option = "--" + name.replace("_", "-")
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "{} {!r} is not a Python dict literal: give e.g. {}".format(option, text[:80], example)
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        return "{} {!r} must be {}, e.g. {}".format(option, text[:80], what, example)
    return None


def model_overrides_problem(text):
    """--model-overrides (see :data:`LITERAL_OPTIONS`)."""
    return literal_option_problem("model_overrides", text)


# Options that act only under a condition, per command: option dest -> (condition(args) -> bool, why, commands
# or None for every command). Given on the command line (and not its default) where the condition is false,
# fairseq ignored it silently; now one line at parse (and in the hub's keywords, command "hub"). Other modules
# add their rows with add_option_need; tests/test_option_noops.py lists every option of the plugin's parsers and
# fairseq's decoding options and tries each row.
OPTION_NEEDS = {}


def add_option_need(dest, condition, why, commands=None):
    """Declare that option ``dest`` does something only where ``condition(args)`` holds (in ``commands``)."""
    OPTION_NEEDS[dest] = (condition, why, None if commands is None else tuple(commands))


def _decodes(args):
    return not getattr(args, "score_reference", False)


def _number(args, name, default=0):
    value = getattr(args, name, None)
    return value if isinstance(value, (int, float)) else default




def no_effect_problem(args, given, command=None):
    """The one line for an option of ``given`` (dests given, not at their default) whose :data:`OPTION_NEEDS`
    condition is false in ``command`` (default: this process's), or None."""
    command = command or running_command()
    for dest in sorted(given):
        if dest not in OPTION_NEEDS:
            continue
        condition, why, commands = OPTION_NEEDS[dest]
        if (commands is None or command in commands) and not condition(args):
            return "--{} does nothing here: {}".format(dest.replace("_", "-"), why)
    return None


def given_options(parser, args, input_args=None):
    """The dests of ``parser``'s options written in ``input_args`` (default: the command line) whose value
    in ``args`` is not the option's default."""
    import sys

    words = sys.argv[1:] if input_args is None else list(input_args)
    written = {w.split("=", 1)[0] for w in words if isinstance(w, str) and w.startswith("--")}
    return {a.dest for a in parser._actions if written.intersection(a.option_strings)
            and getattr(args, a.dest, a.default) != a.default}


def search_option_problem(args):
    """fairseq's search options against each other: --diverse-beam-groups must divide --beam
    (search.DiverseBeamSearch raised ValueError after the model loaded), --diversity-rate is -1 (off) or >= 0."""
    groups, beam = _number(args, "diverse_beam_groups", -1), getattr(args, "beam", None)
    if groups > 0 and isinstance(beam, int) and beam % groups:
        return ("--diverse-beam-groups {} must divide --beam {} (each group keeps --beam / groups hypotheses): "
                "give e.g. --beam {}".format(groups, beam, groups * max(1, -(-beam // groups))))
    rate = _number(args, "diversity_rate", -1)
    if -1 < rate < 0:
        return "--diversity-rate {} must be -1 (off) or at least 0 (a negative rate favours lower-ranked " \
               "siblings)".format(rate)
    for dest, least, low in (("sampling_topk", "at least 1", 1), ("sampling_topp", "above 0", 1e-300),
                             ("diverse_beam_groups", "at least 1", 1)):
        if -1 < _number(args, dest, -1) < low:  # fairseq reads these as "off"
            return "--{} {} means off to fairseq, as -1 does: give -1 (off) or a value {}".format(
                dest.replace("_", "-"), getattr(args, dest), least)
    searches = [name for name, on in (("--sampling", getattr(args, "sampling", False)), ("--diverse-beam-groups",
                groups > 0), ("--match-source-len", getattr(args, "match_source_len", False)), ("--diversity-rate",
                rate > 0), ("--constraints", getattr(args, "constraints", None))) if on]
    if len(searches) > 1 and _decodes(args):  # fairseq's build_generator: a ValueError after the model loaded
        return "{} and {} are two searches: fairseq decodes with one (give one of them)".format(*searches[:2])
    return ensemble_problem(getattr(args, "path", None))


def ensemble_problem(path):
    """--path A:A (one checkpoint twice: an ensemble of one model, twice the work): the one line, or None."""
    names = path.split(os.pathsep) if isinstance(path, str) and "://" not in path else []
    twice = [n for i, n in enumerate(names) if os.path.realpath(n) in map(os.path.realpath, names[:i])]
    return "--path names {} twice: an ensemble of one model; give each checkpoint once".format(
        os.path.realpath(twice[0])) if twice else None


def decoding_option_problem(args):
    """What makes a parsed command's options contradict each other, or None: rules
    fairseq checks only deep inside (an assertion traceback after the model is loaded) or never
    (--nbest past --beam printed --beam hypotheses; --shard-id past --num-shards decoded nothing
    of what was asked), and the rules of :func:`add_option_check`."""
    problem = None
    for name in LITERAL_OPTIONS:
        problem = problem or literal_option_problem(name, getattr(args, name, None))
    problem = problem or search_option_problem(args)
    if problem is None and hasattr(args, "beam"):
        problem = min_len_problem(getattr(args, "min_len", None), getattr(args, "max_len_a", None),
                                  getattr(args, "max_len_b", None)) or no_repeat_problem(args)
    buffer_size, batch_size = getattr(args, "buffer_size", None), getattr(args, "batch_size", None)
    if problem is None and isinstance(buffer_size, int) and isinstance(batch_size, int) \
            and batch_size > max(buffer_size, 1):  # fairseq-interactive (a buffer below 1 is 1)
        problem = ("--batch-size {} is larger than --buffer-size {}: fairseq-interactive batches the lines of "
                   "one buffer: raise --buffer-size to at least {}".format(batch_size, buffer_size, batch_size))
    for check in _OPTION_CHECKS:
        problem = problem or check(args)
    if problem is not None:
        return problem
    beam, nbest = getattr(args, "beam", None), getattr(args, "nbest", None)
    if isinstance(beam, int) and isinstance(nbest, int):
        if nbest > beam:
            return "--nbest {} cannot exceed --beam {}: a beam of {} keeps {} hypotheses".format(nbest, beam, beam, beam)
        if getattr(args, "sampling", False) and nbest != beam:
            return ("--sampling draws --beam {} samples and prints --nbest of them, which fairseq requires to be "
                    "all: give --nbest {} (or --beam {})".format(beam, beam, nbest))
    shards, shard = getattr(args, "num_shards", None), getattr(args, "shard_id", None)
    if isinstance(shards, int) and isinstance(shard, int) and shard >= shards:
        return "--shard-id {} must be below --num-shards {} (shards are numbered from 0)".format(shard, shards)
    return required_option_problem(args)


def required_option_problem(args):
    """An option a command cannot run without, left unset: --max-tokens or --batch-size in
    fairseq-train and fairseq-validate (fairseq asserts it after the task and model are built;
    fairseq-generate and -interactive choose a default), --path in the commands that load a model
    (an assertion or a TypeError after the data is loaded). Only in those commands' processes: a
    script that parses training options to build a model (no batches) may leave them unset."""
    command = running_command()
    if command in ("train", "validate") and hasattr(args, "max_tokens") and args.max_tokens is None \
            and getattr(args, "batch_size", None) is None:
        return ("give --max-tokens N or --batch-size N (a batch's size in tokens or sentences): fairseq-{} "
                "needs one".format(command))
    if command in ("generate", "interactive", "validate", "eval_lm") and getattr(args, "path", "") is None:
        return "give --path CHECKPOINT (the model to load): fairseq-{} needs it".format(command.replace("_", "-"))
    return None


def running_command():
    """The fairseq command this process runs ("train" for fairseq-train or fairseq_cli/train.py, ...),
    from its ``sys.argv[0]``, or None."""
    import sys

    name = os.path.basename(sys.argv[0] or "")
    if name.startswith("fairseq-"):
        return name[len("fairseq-"):].replace("-", "_")
    if name.endswith(".py") and os.path.basename(os.path.dirname(sys.argv[0])) == "fairseq_cli":
        return name[:-3]
    return None


def unset_registry_option(parser, input_args):
    """--arch or --task left unset where fairseq looks the value up in its registry (fairseq-train
    without --arch: a bare RuntimeError; fairseq-validate without --task: KeyError None): the one line
    to give instead, or None."""
    known, _ = parser.parse_known_args(input_args)
    for dest, what in (("arch", "the model to train, e.g. --arch lstm"),
                       ("task", "the task the model was trained with, e.g. --task translation")):
        if hasattr(known, dest) and getattr(known, dest) is None:
            return "give --{} NAME ({}): fairseq looks it up before anything else".format(dest, what)
    return None


def _with_decoding_cross_checks(original):
    def parse_args_and_arch(parser, input_args=None, parse_known=False, suppress_defaults=False, modify_parser=None):
        try:
            result = original(parser, input_args, parse_known, suppress_defaults, modify_parser)
        except (RuntimeError, KeyError):
            problem = unset_registry_option(parser, input_args)
            if problem is None:
                raise
            parser.error(problem)
        except argparse.ArgumentError as exc:  # two chosen components add one option (fairseq-generate's default
            # --arch wav2vec2 and --task multilingual_masked_lm both add --mask-prob): fairseq's own bug, a traceback
            parser.error("fairseq cannot build this command's options: {}: two of the components it adds options of "
                         "(--task, --arch: fairseq-generate's default is wav2vec2, --criterion, ...) define it; "
                         "this --task cannot be used here".format(exc))
        args = result[0] if parse_known else result
        if not suppress_defaults and args is not None:
            problem = decoding_option_problem(args) or no_effect_problem(args, given_options(parser, args, input_args))
            if problem is not None:
                parser.error(problem)  # argparse's one line and exit status 2, before any work
        return result

    return parse_args_and_arch


def _ranged_actions(parser):
    from fairseq_wean.errors import at_least, ranged_type

    for action in parser._actions:
        if action.default == "???" and action.option_strings and action.type in (int, float):  # omegaconf's MISSING
            action.required = True  # (triangular's --max-lr): argparse's "required" line, not "invalid float value:
            # '???'"; a text option left MISSING is named by the check of what reads it (--bpe sentencepiece needs ...)
        if getattr(action.type, "range", None):
            continue
        if action.dest in GENERATION_RANGES:
            action.type = at_least(*GENERATION_RANGES[action.dest])
        elif action.dest in GENERATION_ANY_VALUE:
            action.type = at_least(float("-inf"), float)  # any finite number (nan decoded, or failed late)
        elif action.dest in SHARDING_RANGES:
            action.type = at_least(*SHARDING_RANGES[action.dest])
        elif action.dest in FAIRSEQ_RANGES and action.nargs != 0:
            if action.type in (int, float, None) and action.dest not in FAIRSEQ_LITERAL:
                low, kind, high, above = FAIRSEQ_RANGES[action.dest]  # a whole-number option stays one
                action.type = at_least(low, int if action.type is int else kind, high, above)
            else:  # fairseq's list parser, or a literal fairseq evaluates
                action.type = ranged_type(action.type, *FAIRSEQ_RANGES[action.dest],
                                          literal=action.dest in FAIRSEQ_LITERAL)
        elif action.dest in FAIRSEQ_ANY_VALUE and action.nargs != 0:
            action.type = at_least(float("-inf"), float)


def _with_plugin_generation_arguments(original):
    def add_generation_args(parser):
        group = original(parser)
        _ranged_actions(parser)
        interactive = running_interactive()
        for flags, kwargs, why in _GENERATION_ARGUMENTS:
            if interactive and why:
                takes_value = "metavar" in kwargs or kwargs.get("nargs") not in (0, None)
                kwargs = {"action": _RefusedInInteractive, "why": why, "takes_value": takes_value,
                          "help": kwargs.get("help")}
            parser.add_argument(*flags, **kwargs)
        return group

    return add_generation_args


def install_option_ranges():
    """Every parse fairseq makes (``options.parse_args_and_arch``: fairseq-train, -generate,
    -interactive, -validate, -eval-lm) first gives the parser's numeric options their ranges
    (:data:`GENERATION_RANGES`, :data:`FAIRSEQ_RANGES`, ...) and every option ``cli.options.once``'s rule (given twice:
    a usage error; options that --task, --arch, --optimizer add included, since it runs before each of
    fairseq's parses), and the parsed options are checked against each other (:func:`decoding_option_problem`)."""
    from fairseq import options

    from fairseq_wean import optim_check, option_rules  # noqa: F401  (the rows of fairseq's own options, the trial
    # build of fairseq-train's optimizer and lr scheduler)

    same_code("option ranges (fairseq's parsers)", "fairseq checks no numeric option's range: --seed -5, "
              "--update-freq 0, --validate-interval 0 ended in tracebacks, some after an epoch")
    wrap_once(options, "parse_args_and_arch", _with_decoding_cross_checks)
    wrap_once(options, "parse_args_and_arch", _with_ranges_at_parse)


def _with_ranges_at_parse(original):
    def parse_args_and_arch(parser, input_args=None, parse_known=False, suppress_defaults=False, modify_parser=None):
        if "parse_known_args" in vars(parser):  # a nested call, or fix 14's --help parse: ranged already
            return original(parser, input_args, parse_known, suppress_defaults, modify_parser)
        plain = parser.parse_known_args

        def parse_known_args(args=None, namespace=None):  # argparse's parse_args calls it too
            from fairseq_wean.cli.options import once  # an option given twice: a usage error, not the last kept
            _ranged_actions(once(parser))
            return plain(args, namespace)

        parser.parse_known_args = parse_known_args
        try:
            return original(parser, input_args, parse_known, suppress_defaults, modify_parser)
        finally:
            if vars(parser).get("parse_known_args") is parse_known_args:
                del parser.parse_known_args

    return parse_args_and_arch
