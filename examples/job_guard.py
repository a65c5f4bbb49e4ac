"""The check, before any work, of the output folder of a shell example (examples/*.sh).

    python examples/job_guard.py OUT [--new] [--files NAME ...] [--folders NAME ...]

A shell script writes its logs with redirections (``> "$OUT/train.log"``) and takes its lock with
one (``exec 9>> "$OUT/.main_job.lock"``); the shell opens such a path through whatever is there: a
symbolic link planted at ``OUT/train.log`` would have its target truncated and overwritten. So each
script names here, before any work, every file it writes itself in OUT (``--files``) and every folder
it makes there (``--folders``, parents first), and this refuses, in one line and exit 1, with
:mod:`fairseq_wean.textio`'s rule for a file written in place (``textio.check_in_place``: a symbolic
link, a pipe, a device, a folder, a file with other names, or a path out of OUT through a linked
folder) and a folder that is a link or not a folder; ``--new``: OUT must not exist yet (nor be a
dangling link). OUT itself is a path the user named: through a missing folder followed by ``..`` it
is refused (``textio.check_resolvable``), as every tool's output is. The scripts then write with
``set -o noclobber`` after removing their own previous files, so a link planted during the run is
refused by the shell (``O_EXCL``), never written through. ``tests/test_example_scripts.py`` checks that
every redirection of every examples/*.sh names a file of its guard's list.
"""
import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def get_parser():
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from fairseq_wean.cli import options

    p = argparse.ArgumentParser(prog="python examples/job_guard.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the script's output folder")
    p.add_argument("--what", default="OUT", help="how the messages name the folder (default: OUT)")
    p.add_argument("--new", action="store_true", help="the folder must not exist yet")
    p.add_argument("--files", nargs="*", default=[], help="the files the script writes itself in OUT")
    p.add_argument("--folders", nargs="*", default=[], help="the folders it makes in OUT, parents first")
    return options.once(p)


def check(out, files=(), folders=(), new=False, what="OUT"):
    """Refuse (FairseqWeanError, one line) an output folder ``out`` that the script may not write: see
    the module's docstring. Nothing is made or written."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    textio.check_resolvable(out, what)
    kind = textio.node_kind(out, follow=True)
    if new and (kind is not None or os.path.islink(out)):
        raise FairseqWeanError("{} {} exists: give a new folder".format(what, out))
    if kind not in (None, textio.FOLDER):
        raise FairseqWeanError("{} {} is {}, not a folder: give a folder".format(what, out, kind))
    for name in folders:
        path = os.path.join(out, name)
        kind = textio.node_kind(path)
        if kind not in (None, textio.FOLDER):
            raise FairseqWeanError("{} {} is {}, not a folder: refused (the script makes its own folders there); "
                                   "remove it".format(what, path, kind))
    for name in files:
        textio.check_in_place(os.path.join(out, name), what, folder=out)


def main(argv=None):
    args = get_parser().parse_args(argv)
    for name in args.files + args.folders:
        if os.path.isabs(name) or os.pardir in name.split(os.sep):
            raise SystemExit("python examples/job_guard.py: error: {} is not a name inside OUT".format(name))
    check(args.out, args.files, args.folders, args.new, args.what)


if __name__ == "__main__":
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from fairseq_wean import errors

    errors.run_cli(main, errors.PROG)
