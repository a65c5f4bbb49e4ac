"""Use fastBPE-format BPE codes without fastBPE.

fastBPE 0.1.0 does not build on Python 3.11 (its generated C++ is stale), so fairseq-wean
does not depend on it. Its codes files are still usable: fastBPE and subword-nmt (>= 0.2)
learn the same kind of merges (``</w>`` marks the end of a word, ``@@`` joins pieces), and
a fastBPE codes line is a subword-nmt merge plus a count: ``a b 1234``. This converts such a
file into subword-nmt's format (``#version: 0.2`` header, counts dropped, order kept), which
fairseq reads with ``--bpe subword_nmt --bpe-codes CODES``:

    python -m preprocess.fastbpe_codes --fastbpe codes.fastbpe --out codes.subword_nmt

A file already in subword-nmt's form (a first line ``#version: ...``) is refused (its header would
become a merge), and so is a cut one (a last line without its final newline).
"""
import argparse
import sys


def convert(lines, path="codes", what="--fastbpe"):
    """fastBPE codes lines -> subword-nmt codes lines (including the version header).

    Every line has the form of the first ('a b COUNT', or 'a b'): a line of the other form (a last
    line whose count was cut off) is a ``ValueError`` naming both lines. Every merge goes through
    :func:`fairseq_wean.data.align_table.check_entries`: a merge listed twice, or a file with no
    merge, is a one-line ``FairseqWeanError`` naming the file and line."""
    from fairseq_wean.data.align_table import check_entries

    def merges():
        first = None  # (line number, whether it has a count): every line must be of that form
        for number, line in enumerate(lines, start=1):
            fields = line.split()
            if not fields:
                continue
            if first is None and fields[0].startswith("#version"):
                raise ValueError(
                    "line {} is {!r}: the file is already in subword-nmt's form (converted, or learned by "
                    "subword-nmt); give it to fairseq as it is (--bpe subword_nmt --bpe-codes FILE)".format(
                        number, line.rstrip("\n")))
            count = None
            if len(fields) == 3 and fields[2].isdigit():
                fields, count = fields[:2], int(fields[2])
            if len(fields) != 2:
                raise ValueError(
                    "line {} is not a fastBPE merge 'a b COUNT' (nor 'a b'): {!r}".format(number, line.rstrip("\n"))
                )
            first = first or (number, count is not None)
            if first[1] != (count is not None):
                raise ValueError(
                    "line {} is {!r} and line {} {}: one file has one form ('a b COUNT' on every line, as "
                    "fastBPE writes, or 'a b'); a line without one in a file of counts was cut".format(
                        number, line.rstrip("\n"), first[0], "has a count" if first[1] else "has no count"))
            yield number, tuple(fields), count

    return ["#version: 0.2"] + [" ".join(merge) for _n, merge, _c in check_entries(merges(), path, what, "merge")]


# every option has an effect in every combination (the shape of fairseq_wean.cli.options.NEEDS; none needs another)
NEEDS = {}
ALWAYS = ("--fastbpe", "--out")


def get_parser():
    from fairseq_wean.cli.options import once

    parser = argparse.ArgumentParser(prog="python -m preprocess.fastbpe_codes", description=__doc__.splitlines()[0])
    parser.add_argument("--fastbpe", required=True, help="fastBPE codes file (a b COUNT per line)")
    parser.add_argument("--out", required=True, help="subword-nmt codes file to write (not the input: "
                        "written to a new file renamed over it on success)")
    return once(parser)


def main(argv=None):
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.textio import atomic_output, check_input, check_output
    from preprocess.check_parallel import complete_lines

    args = get_parser().parse_args(argv)
    try:
        check_input(args.fastbpe, "--fastbpe")
        check_output(args.out, (args.fastbpe,), "--out")  # never over the input, a pipe or a device
        converted = convert(list(complete_lines(args.fastbpe, "--fastbpe")), args.fastbpe)
        with atomic_output(args.out, (args.fastbpe,), "--out") as f:
            f.write("\n".join(converted) + "\n")
    except FairseqWeanError as exc:
        sys.exit("fastbpe_codes: error: {}".format(exc))
    except (OSError, ValueError) as exc:
        sys.exit("fastbpe_codes: error: {}: {}".format(args.fastbpe, exc))

if __name__ == "__main__":
    main()
