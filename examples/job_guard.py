"""The check, before any work, of the output folder of a shell example (examples/*.sh).

    python examples/job_guard.py [--what NAME] [--new] [--used-as USE ...] [--files NAME ...]
                                 [--folders NAME ...] -- OUT

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

A path the script hands to a later command must reach it as one path: ``--used-as`` names how the
commands read it (``fairseq_wean.textio.PATH_RULES``: a fairseq data folder or ``--path``, split on ':', and read
through OmegaConf, where '${' is an interpolation; a comma list), and a path holding what such a
command would split on or misread is refused before any work (checked as the script will hand it on:
absolute). OUT comes after ``--``, so a folder named like an option (``-h``, ``--new``) is a folder;
a call without ``--`` is refused, and there is no ``--help``: the guard exits 0 only after checking.
"""
import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = "python examples/job_guard.py"

def get_parser():
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from fairseq_wean import textio
    from fairseq_wean.cli import options

    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], add_help=False, allow_abbrev=False)
    p.add_argument("out", help="the script's output folder (after --)")
    p.add_argument("--what", default="OUT", help="how the messages name the folder (default: OUT)")
    p.add_argument("--new", action="store_true", help="the folder must not exist yet")
    p.add_argument("--used-as", nargs="*", default=[], choices=sorted(textio.PATH_RULES),
                   help="how later commands read the folder's paths (the characters they would split on are refused)")
    p.add_argument("--files", nargs="*", default=[], help="the files the script writes itself in OUT")
    p.add_argument("--folders", nargs="*", default=[], help="the folders it makes in OUT, parents first")
    return options.once(p)


def check(out, files=(), folders=(), new=False, what="OUT", used_as=()):
    """Refuse (FairseqWeanError, one line) an output folder ``out`` that the script may not write: see
    the module's docstring. Nothing is made or written."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    problem = textio.path_problem(out, used_as, what)
    if problem:
        raise FairseqWeanError(problem)
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
    argv = sys.argv[1:] if argv is None else list(argv)
    args = get_parser().parse_args(argv)
    if "--" not in argv:
        raise SystemExit("{}: error: give the folder after --: ... -- OUT (a folder named like an option stays a "
                         "folder)".format(PROG))
    for name in args.files + args.folders:
        if os.path.isabs(name) or os.pardir in name.split(os.sep):
            raise SystemExit("{}: error: {} is not a name inside OUT".format(PROG, name))
    check(args.out, args.files, args.folders, args.new, args.what, args.used_as)


if __name__ == "__main__":
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from fairseq_wean import errors

    errors.run_cli(main, errors.PROG)
