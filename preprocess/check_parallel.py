"""Check and clean a pair of line-parallel text files before ``fairseq-preprocess``.

    python -m preprocess.check_parallel --src train.src --tgt train.tgt --out-prefix clean/train \\
        [--max-len N] [--truncate] [--src-lang src --tgt-lang tgt]

writes ``clean/train.src`` and ``clean/train.tgt`` (the suffixes are the input files' last
suffixes unless ``--src-lang`` / ``--tgt-lang`` say otherwise), ready for
``fairseq-preprocess --trainpref clean/train``.

What it does with each problem (the summary on stderr counts every case):

* **different line counts**: an error naming both counts; nothing is written. The files are
  not parallel, and no automatic fix can say which line belongs to which.
* **a byte sequence that is not UTF-8**: an error naming the file, the line and the column;
  nothing is written (re-encode the file, e.g. ``iconv -f latin1 -t utf-8``).
* **a cut file** (its last line has no final newline: an interrupted copy or download) or **empty
  files**: an error; nothing is written.
* **an empty line** (on either side, or only whitespace): the pair is skipped and counted.
  fairseq would binarize it as a lone ``</s>``, a useless or harmful training pair.
* **a line longer than --max-len tokens** (on either side): the pair is skipped and counted,
  or, with ``--truncate``, both sides are cut to their first ``--max-len`` tokens. fairseq
  appends ``</s>`` to every sentence, so for ``--max-source-positions M`` pass ``--max-len M-1``.
  Without this, ``fairseq-train`` skips such training pairs itself (and logs how many), but
  validation, ``fairseq-generate`` and ``fairseq-interactive`` stop with an error unless
  ``--skip-invalid-size-inputs-valid-test`` is given (docs/troubleshooting.md, "Errors and recovery").
* **whitespace**: tokens are split as fairseq splits them (any run of whitespace, including
  a stray ``\\r`` that fairseq-preprocess's universal-newline reading would take as a line
  break and so shift every later line) and written back separated by single spaces.

``--src`` and ``--tgt`` may be regular files, named pipes, ``/dev/stdin`` or ``-`` (one of
them at most standard input): each is read once, from start to end, as the scorer reads its
inputs (``fairseq_wean.textio``).

Outputs are written to temporary files next to them and renamed into place only when both
are complete, so an error or a killed job never leaves a half-written file and never
replaces an earlier output; the inputs are never written (an ``--out-prefix`` that would
overwrite an input is refused). A missing folder of ``--out-prefix`` is made only after every
check of the names (a ``--src-lang ''``, a path through a missing folder and ``..``), and removed
again when the files are then refused.

Use it on training data. Validation and test sources must keep one line per reference, so
do not drop their lines; run it without writing (``check(...)``) if you only want the errors.

Python: ``clean(src, tgt, out_prefix, max_len=None, truncate=False)`` returns the counts and
raises ``ParallelDataError``; ``clean_prefix(prefix, src_lang, tgt_lang, ...)`` cleans
``PREFIX.SRC`` / ``PREFIX.TGT`` into ``PREFIX.checked.*`` and returns the new prefix.
"""
import argparse
import contextlib
import os
import sys

from fairseq_wean import textio
from fairseq_wean.cli.options import once, quantity
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.textio import STDIN_NAMES, atomic_output, check_input, check_output, check_resolvable, same_file

PROG = "check_parallel"


class ParallelDataError(FairseqWeanError):
    """The files cannot be cleaned automatically; the message names the problem and the fix."""


CutFileError = textio.CutFileError


def complete_lines(path, what="input"):
    """The lines of a UTF-8 text file (``textio.iter_lines`` with ``complete=True``: a regular file, a named
    pipe, ``/dev/stdin`` or ``-``; a line that is not UTF-8, or a last line with no final newline, the mark
    of a cut file, is a one-line error when it is reached): the one reading of line-based text of the
    preprocess tools that check or convert it (check_parallel, split_characters, unk_markers,
    coverage_report, fastbpe_codes)."""
    return textio.iter_lines(path, what, complete=True)


def _lines(path, flag):
    """(line number, decoded line without its end) for each line, read once through
    :func:`complete_lines` (a regular file, a named pipe, ``/dev/stdin`` or ``-``); lines end at
    b'\\n' only, a byte-order mark that starts the file is dropped (one elsewhere is an error:
    ``textio.byte_order_mark_problem``), a cut last line is an error."""
    try:
        yield from enumerate(complete_lines(path, flag), 1)
    except FairseqWeanError as exc:
        if isinstance(exc, (ParallelDataError, CutFileError)):
            raise
        hint = " (e.g. iconv -f latin1 -t utf-8) or fix that line" if "is not UTF-8" in str(exc) else ""
        raise ParallelDataError("{}{}; nothing was written".format(exc, hint)) from None


def _count_rest(iterator):
    return sum(1 for _ in iterator)


def _suffix(path, given, flag):
    if given is not None:
        if not given.strip() or given != given.strip():
            raise ParallelDataError("{} {!r}: a language code is a non-empty name without spaces around it (the "
                                    "output is OUT_PREFIX.LANG); give one, or drop {} to use the input's "
                                    "suffix".format(flag, given, flag))
        if "/" in given or os.sep in given or given in (".", ".."):
            raise ParallelDataError("{} {}: a language code, not a path (no '/'): the output is "
                                    "OUT_PREFIX.LANG".format(flag, given))
        return given
    base = os.path.basename(path)
    if "." not in base.strip("."):
        raise ParallelDataError(
            "{} has no suffix to name the output by: pass {} LANG (the output is OUT_PREFIX.LANG)".format(path, flag))
    return base.rsplit(".", 1)[1]


def clean(src, tgt, out_prefix=None, max_len=None, truncate=False, src_lang=None, tgt_lang=None):
    """Check SRC and TGT; unless ``out_prefix`` is None write the cleaned pair. Returns the counts.

    Counts: ``pairs`` read, ``written``, ``empty`` and ``too_long`` (skipped), ``truncated``,
    ``first_empty`` / ``first_too_long`` (line numbers, up to 5 each), ``outputs`` (paths).
    """
    for path, flag in ((src, "--src"), (tgt, "--tgt")):
        try:
            check_input(path, flag)  # a named pipe, /dev/stdin and - are inputs too
        except FairseqWeanError as exc:
            raise ParallelDataError(str(exc)) from None
    if src in STDIN_NAMES and tgt in STDIN_NAMES:
        raise ParallelDataError("--src and --tgt cannot both be standard input: give at least one as a "
                                "file or a named pipe")
    if max_len is not None and max_len < 1:
        raise ParallelDataError("--max-len must be >= 1 (got {})".format(max_len))
    if truncate and max_len is None:
        raise ParallelDataError("--truncate needs --max-len N")
    outputs, made = [], []
    if out_prefix is not None:
        src_lang, tgt_lang = _suffix(src, src_lang, "--src-lang"), _suffix(tgt, tgt_lang, "--tgt-lang")
        if src_lang == tgt_lang:
            raise ParallelDataError(
                "both outputs would be {}.{}: pass --src-lang and --tgt-lang with two different "
                "names".format(out_prefix, src_lang))
        outputs = [out_prefix + "." + src_lang, out_prefix + "." + tgt_lang]
        for out in outputs:
            for given in (src, tgt):
                if same_file(out, given):
                    raise ParallelDataError(
                        "--out-prefix {} would overwrite the input {}: choose another prefix (the inputs "
                        "are never modified)".format(out_prefix, given))
        made = _make_output_folder(outputs, (src, tgt))

    try:
        return _clean(src, tgt, outputs, max_len, truncate)
    except BaseException:
        for folder in reversed(made):  # a refusal while reading leaves no folder it made
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise


def _make_output_folder(outputs, inputs):
    """Check both outputs, then make their missing folder: every check first (a path through a missing
    folder and '..', a folder that cannot be made), nothing made before; returns the folders made."""
    missing = []
    for out in outputs:
        try:
            check_resolvable(out, "--out-prefix")
        except FairseqWeanError as exc:
            raise ParallelDataError(str(exc)) from None
    folder = os.path.dirname(os.path.abspath(outputs[0]))
    while not os.path.isdir(folder):
        if os.path.lexists(folder):
            raise ParallelDataError("--out-prefix {}: {} is not a folder: give another prefix".format(
                outputs[0].rsplit(".", 1)[0], folder))
        missing.append(folder)
        folder = os.path.dirname(folder)
    if missing and not os.access(folder, os.W_OK):
        raise ParallelDataError("--out-prefix {}: the folder {} is not writable".format(
            outputs[0].rsplit(".", 1)[0], folder))
    made = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:  # made meanwhile by another process: kept, not removed on a refusal
            continue
        made.append(path)
    try:
        for out in outputs:  # every output checked before the first is written
            check_output(out, inputs, "--out-prefix")
    except FairseqWeanError as exc:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(path)
        raise ParallelDataError(str(exc)) from None
    return made


def _clean(src, tgt, outputs, max_len, truncate):
    stats = {"pairs": 0, "written": 0, "empty": 0, "too_long": 0, "truncated": 0,
             "first_empty": [], "first_too_long": [], "outputs": outputs}
    with contextlib.ExitStack() as outputs_in_progress:
        # temporary files beside the outputs, renamed over them only if the with block completes
        handles = [outputs_in_progress.enter_context(atomic_output(out, (src, tgt), "--out-prefix"))
                   for out in outputs]
        src_lines, tgt_lines = _lines(src, "--src"), _lines(tgt, "--tgt")
        while True:
            a, b = next(src_lines, None), next(tgt_lines, None)
            if a is None or b is None:
                if a is not None or b is not None:
                    n_src = stats["pairs"] + (a is not None) + _count_rest(src_lines)
                    n_tgt = stats["pairs"] + (b is not None) + _count_rest(tgt_lines)
                    raise ParallelDataError(
                        "{} has {} lines but {} has {}: the files are not line-parallel; find where they "
                        "diverge (e.g. a sentence split in two, or a lost line) and fix it; nothing was "
                        "written".format(src, n_src, tgt, n_tgt))
                if stats["pairs"] == 0:
                    raise ParallelDataError("{} and {} are empty (no line): nothing to check or clean; nothing was "
                                            "written".format(src, tgt))
                break
            number = a[0]
            stats["pairs"] += 1
            sides = [a[1].split(), b[1].split()]
            if not sides[0] or not sides[1]:
                stats["empty"] += 1
                if len(stats["first_empty"]) < 5:
                    stats["first_empty"].append(number)
                continue
            if max_len is not None and max(len(s) for s in sides) > max_len:
                if not truncate:
                    stats["too_long"] += 1
                    if len(stats["first_too_long"]) < 5:
                        stats["first_too_long"].append(number)
                    continue
                stats["truncated"] += 1
                sides = [s[:max_len] for s in sides]
            stats["written"] += 1
            for handle, tokens in zip(handles, sides):
                handle.write(" ".join(tokens) + "\n")
        if outputs and stats["written"] == 0:
            raise ParallelDataError(
                "no pair left after skipping {} empty and {} over-long pair(s) of {}: check the "
                "files and --max-len; nothing was written".format(stats["empty"], stats["too_long"], stats["pairs"]))
    return stats


def check(src, tgt, max_len=None):
    """Only the checks and the counts; writes nothing."""
    return clean(src, tgt, None, max_len=max_len)


def clean_prefix(prefix, src_lang, tgt_lang, max_len=None, truncate=False, log=None):
    """Clean ``PREFIX.SRC_LANG`` / ``PREFIX.TGT_LANG`` into ``PREFIX.checked.*``; returns ``PREFIX.checked``.

    One call before fairseq-preprocess: pass the returned prefix as ``--trainpref``.
    """
    out_prefix = prefix + ".checked"
    stats = clean(prefix + "." + src_lang, prefix + "." + tgt_lang, out_prefix, max_len=max_len,
                  truncate=truncate, src_lang=src_lang, tgt_lang=tgt_lang)
    (log or _log)(summary(stats, max_len))
    return out_prefix


def summary(stats, max_len=None):
    parts = ["{} pairs read, {} written".format(stats["pairs"], stats["written"])]
    if stats["outputs"]:
        parts[0] += " to " + " and ".join(stats["outputs"])
    parts.append("skipped {} with an empty line{}".format(
        stats["empty"], " (lines {})".format(", ".join(map(str, stats["first_empty"]))) if stats["empty"] else ""))
    if max_len is not None:
        parts.append("skipped {} longer than {} tokens{}".format(
            stats["too_long"], max_len,
            " (lines {})".format(", ".join(map(str, stats["first_too_long"]))) if stats["too_long"] else ""))
        parts.append("truncated {} to {} tokens".format(stats["truncated"], max_len))
    return "; ".join(parts)


def _log(message):
    print("{}: {}".format(PROG, message), file=sys.stderr, flush=True)


# option -> the rules it needs to have an effect, in the shape of fairseq_wean.cli.options.NEEDS (refused in
# one line where they do not hold); every other option is in ALWAYS (tests/test_preprocess_tools.py)
NEEDS = {"--truncate": (("option", "--max-len"),)}
ALWAYS = ("--src", "--tgt", "--out-prefix", "--max-len", "--src-lang", "--tgt-lang")


def get_parser():
    parser = argparse.ArgumentParser(
        prog="python -m preprocess.check_parallel",
        description="Check line-parallel text files (line counts, UTF-8) and write cleaned copies "
                    "(no empty or over-long pairs) for fairseq-preprocess.")
    parser.add_argument("--src", required=True, help="source file, one sentence per line (tokenized)")
    parser.add_argument("--tgt", required=True, help="target file, line-parallel to --src")
    parser.add_argument("--out-prefix", required=True,
                        help="write OUT_PREFIX.SRC_LANG and OUT_PREFIX.TGT_LANG (never the inputs)")
    parser.add_argument("--max-len", type=quantity("length"), metavar="N",
                        help="longest line in tokens (fairseq adds </s>: --max-source-positions M -> N = M-1); "
                             "longer pairs are skipped")
    parser.add_argument("--truncate", action="store_true", help="cut over-long lines to --max-len tokens instead")
    parser.add_argument("--src-lang", help="suffix of the source output (default: --src's suffix)")
    parser.add_argument("--tgt-lang", help="suffix of the target output (default: --tgt's suffix)")
    return once(parser)


def main(argv=None):
    args = get_parser().parse_args(argv)
    try:
        stats = clean(args.src, args.tgt, args.out_prefix, args.max_len, args.truncate, args.src_lang, args.tgt_lang)
    except FairseqWeanError as exc:  # ParallelDataError, and textio's refusals of an output path
        print("{}: error: {}".format(PROG, exc), file=sys.stderr, flush=True)
        return 1
    except OSError as exc:
        print("{}: error: {}: {}".format(PROG, exc.filename or "", exc.strerror or exc), file=sys.stderr, flush=True)
        return 1
    _log(summary(stats, args.max_len))
    return 0


if __name__ == "__main__":
    sys.exit(main())
