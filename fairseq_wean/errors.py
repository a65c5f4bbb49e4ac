"""User-facing errors: one line that names the problem and the fix, and a non-zero exit.

fairseq's command-line entry points are not ours, so we cannot catch exceptions around
them. Instead ``install_excepthook`` (called when the plugin is imported) makes an uncaught
``FairseqWeanError`` print as ``fairseq-wean: error: <message>`` on stderr, without a
traceback, and exit with status 1. Every other exception keeps Python's normal report.

Our own console scripts and ``python -m`` tools do catch it, with :func:`run_cli`: the same
one line, named after the program (``fairseq-wean-score: error: ...``), and exit status 1.
"""
import sys

PROG = "fairseq-wean"  # how the one-line error names fairseq's own commands run with the plugin


class FairseqWeanError(Exception):
    """A problem with the user's input or set-up; the message says what to do."""


def error_line(prog, exc):
    """``PROG: error: MESSAGE``, the message on one line."""
    return "{}: error: {}".format(prog, str(exc).replace("\n", " "))


def disk_full(exc):
    """A FairseqWeanError for an ``OSError`` of a full disk (or quota) in ``exc``'s chain, else None.
    Every writer of the plugin and fairseq's checkpoint writes go through a temporary file renamed
    over the target, so the message can say that nothing was lost."""
    import errno

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            where = " writing {}".format(exc.filename) if exc.filename else ""
            return FairseqWeanError("no space left on the device{}: the file being written was not finished and "
                                    "replaced nothing (earlier outputs and checkpoints are intact); free space and "
                                    "run the command again".format(where))
        exc = exc.__cause__ or exc.__context__
    return None


def run_cli(main, prog, argv=None):
    """Run a console script's ``main(argv)``; a ``FairseqWeanError`` becomes one line on stderr
    (:func:`error_line`, after what ``main`` printed to stdout) and exit status 1.

    Returns None, not what ``main`` returns: a console script's wrapper exits with the value.
    """
    try:
        main(argv)
    except FairseqWeanError as exc:
        sys.stdout.flush()
        sys.exit(error_line(prog, exc))
    except OSError as exc:
        full = disk_full(exc)
        if full is None:
            raise
        sys.exit(error_line(prog, full))


def _excepthook(exc_type, exc, tb, _previous=sys.excepthook):
    cause, seen = exc, set()
    # fairseq wraps some exceptions (e.g. while loading a checkpoint); look for ours inside.
    # A chain can loop (an exception raised from itself): stop at the first repeat.
    while cause is not None and not isinstance(cause, FairseqWeanError) and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    if cause is not None and not isinstance(cause, FairseqWeanError):
        cause = None
    if cause is None:
        cause = disk_full(exc)
    if cause is not None:
        sys.stderr.write(error_line(PROG, cause) + "\n")
        sys.stderr.flush()
        return
    _previous(exc_type, exc, tb)


def install_excepthook():
    if sys.excepthook is not _excepthook:
        sys.excepthook = _excepthook


def parse_number(text, kind=int):
    """``kind(text)`` for an argparse ``type``; not a number is argparse's usage error."""
    import argparse

    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected {} number, got {!r}".format(
            "a whole" if kind is int else "a", text)) from None


def in_range(value, low, high=None, above=False):
    """Whether the finite number ``value`` is >= ``low`` (> with ``above``) and <= ``high`` if given:
    the range rule of :func:`at_least` and of every table that feeds it."""
    return not (value < low or above and value == low or high is not None and value > high)


def describe_range(low, high=None, above=False):
    """A range row in words, as every range message gives it: ">= 1", "> 0 and <= 1"."""
    return "{} {}".format(">" if above else ">=", low) + ("" if high is None else " and <= {}".format(high))


def value_range_problem(value, low, kind=int, high=None, above=False):
    """Why the Python value ``value`` (a JSON value, a keyword argument) does not fit a range row
    (``low, kind, high, above`` of :func:`at_least` and the tables that feed it), or None: a bool is
    no number, an int row takes only whole numbers, nan and inf are no setting."""
    import math

    number = isinstance(value, (int, float)) and not isinstance(value, bool) and (kind is float or isinstance(value, int))
    if not number or not math.isfinite(value):
        return "must be a finite {}number".format("whole " if kind is int else "")
    if not in_range(value, low, high, above):
        return "must be " + describe_range(low, high, above)
    return None


def at_least(low, kind=int, high=None, above=False):
    """An argparse ``type`` for a number >= ``low`` (> ``low`` with ``above``; <= ``high`` if given;
    ``kind``: int or float): a value out of range is argparse's one-line usage error naming the
    option, before any work."""
    import argparse
    import math

    def parse(text):
        value = parse_number(text, kind)
        if not math.isfinite(value):  # nan passes every comparison; inf ("1e400") is no setting either
            raise argparse.ArgumentTypeError("must be a finite number, got {}".format(text))
        if not in_range(value, low, high, above):
            raise argparse.ArgumentTypeError("must be {}, got {}".format(describe(), text))
        return value

    def describe():
        return describe_range(low, high, above)

    parse.__name__ = "{} {}".format(kind.__name__, describe())
    parse.range = (low, kind, high, above)
    return parse


def ranged_type(original, low, kind=int, high=None, above=False, literal=False):
    """An argparse ``type`` that parses as ``original`` does (fairseq's list parsers: ``--lr 0.25,0.1``,
    ``--update-freq 2``; ``literal``: a Python literal such as ``--adam-betas '(0.9, 0.98)'``, kept as
    the text fairseq reads) and requires every number of the result to be of ``kind``, finite and in
    :func:`at_least`'s range: anything else is argparse's one-line usage error naming the option."""
    import argparse
    import ast
    import math

    def parse(text):
        try:
            value = ast.literal_eval(text) if literal else original(text)
        except (ValueError, TypeError, SyntaxError, NameError, MemoryError, RecursionError):
            raise argparse.ArgumentTypeError("expected {} number(s), got {!r}".format(
                "whole" if kind is int else "", text).replace("  ", " ")) from None
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int,) if kind is int else (int, float)):
                raise argparse.ArgumentTypeError("expected {} number(s), got {!r}".format(
                    "whole" if kind is int else "", text).replace("  ", " "))
            if not math.isfinite(v):
                raise argparse.ArgumentTypeError("must be finite numbers, got {}".format(text))
            if not in_range(v, low, high, above):
                raise argparse.ArgumentTypeError("must be {} {}{}, got {}".format(
                    ">" if above else ">=", low, "" if high is None else " and <= {}".format(high), text))
        if not values:
            raise argparse.ArgumentTypeError("expected a number, got {!r}".format(text))
        return text if literal else value

    parse.__name__ = "{} {} {}".format(kind.__name__, ">" if above else ">=", low)
    parse.range = (low, kind, high, above)
    return parse
