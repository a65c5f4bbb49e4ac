"""How the plugin changes fairseq's functions: each change once, however often it is applied.

fairseq gives a plugin one hook, the import of ``--user-dir``, and the modules that patch fairseq
(:mod:`fairseq_wean.compat`, :mod:`fairseq_wean.checkpoint_safety`,
:mod:`fairseq_wean.distributed`, :mod:`fairseq_wean.hub`, :mod:`fairseq_wean.unk_replacement`,
:mod:`fairseq_wean.report.gate_lines`) may be asked to install their patches more than once in a
process (``compat.apply()`` again, a test that imports the plugin and then runs fairseq's CLIs).
Every patch therefore goes through :func:`wrap_once` (or :func:`replace_once`): the new function
carries, in ``_fairseq_wean_fixed``, the names of the patches applied to it, including those of the
function it wraps. A patch already there is not applied again, and two modules may wrap the same
function (``FairseqTask.inference_step`` is wrapped by ``unk_replacement`` and by ``gate_lines``).

:func:`add_generation_argument` is the one place that adds the plugin's options to fairseq's
generation options (``--print-gates``, ``--replace-unk-source``).

Imports nothing from the project, so that every patching module may import it.
"""
MARK = "_fairseq_wean_fixed"


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
    setattr(owner, name, wrapper)
    return wrapper


def replace_once(owner, name, replacement):
    """Replace ``owner.name`` by ``replacement`` (which does not call the original), once."""
    return wrap_once(owner, name, lambda original: replacement, key=_qualified_name(replacement))


# The plugin's own generation options, in the order they were added: (flags, add_argument kwargs).
_GENERATION_ARGUMENTS = []


def add_generation_argument(*flags, **kwargs):
    """Add an option to fairseq's generation options (``options.add_generation_args``: what
    fairseq-generate and fairseq-interactive accept), after fairseq's own.

    fairseq imports ``--user-dir`` before it builds its parser, so an option added when the plugin
    is imported is in every parser fairseq builds afterwards. Adding the same flags again does
    nothing.
    """
    from fairseq import options

    if all(known != flags for known, _ in _GENERATION_ARGUMENTS):
        _GENERATION_ARGUMENTS.append((flags, kwargs))
    wrap_once(options, "add_generation_args", _with_plugin_generation_arguments)


def _with_plugin_generation_arguments(original):
    def add_generation_args(parser):
        group = original(parser)
        for flags, kwargs in _GENERATION_ARGUMENTS:
            parser.add_argument(*flags, **kwargs)
        return group

    return add_generation_args
