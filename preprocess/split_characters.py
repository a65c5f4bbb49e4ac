"""Split text into characters as the scorer counts them (Chinese summarization, e.g. LCSTS).

    python -m preprocess.split_characters < raw.txt > chars.txt      # then fairseq-preprocess chars.*

Every character becomes a token with its combining marks (a grapheme cluster: 'a' and U+0308 are one
token, as 'ä' is), whitespace is dropped, and a run of ASCII letters and digits stays one token:
'苹果发布iPhone 6，售价5288元' -> '苹 果 发 布 iPhone6 ， 售 价 5288 元'. This is
``fairseq_wean.scoring.metrics.character_tokens`` (case kept), the tokenization of ROUGE with
``--rouge-chars`` / ``--eval-rouge-chars`` in every tool, so a model trained on this text is scored
on the units it writes. Score the decoded output against the raw references with
``fairseq-wean-score --rouge-chars`` (spaces never matter there). Lines are read and written as
UTF-8; ``--input``/``--output`` name files instead of stdin/stdout. Text with subword pieces (BPE
``@@``, sentencepiece ``▁``, WordPiece ``##``) is refused in one line before anything is written:
its marks would be split into characters; split the text before BPE / sentencepiece. So are an
empty input and a cut one (a last line without its final newline). The text is read and split line
by line (memory: the longest line, not the file); ``--output`` is replaced only when complete, and
standard output is written only once the whole input was read and checked.
"""
import argparse
import shutil
import sys
import tempfile

from fairseq_wean import textio
from fairseq_wean.cli.options import once
from fairseq_wean.errors import FairseqWeanError, run_cli
from fairseq_wean.scoring.metrics import ZERO_WIDTH, character_tokens, character_units
from fairseq_wean.scoring.pieces import check_words

PROG = "split_characters"


LONG = 1 << 16  # a line longer than this is split in parts, each of its own tokens (memory: ~40 bytes a character)


def split_characters(line):
    """One line, split: '雅虎 2014年' -> '雅 虎 2014 年'."""
    return " ".join(part for part in _parts(line) if part)


def _cluster_end(line, cut):
    """Where the grapheme cluster of ``line[cut - 1]`` ends (a character and its combining marks are one token:
    :func:`~fairseq_wean.scoring.metrics.character_tokens`), for a character that is not ASCII, a space or
    zero-width; ``cut`` where it ends there."""
    return max(cut, character_units().match(line, cut - 1).end())


def _parts(line):
    """``line``'s tokens, joined, in parts of about :data:`LONG` characters. A part ends after a character
    that is not ASCII, a space nor zero-width, at the end of its grapheme cluster: a token of its own (a run of
    ASCII letters and digits, and fairseq's ``<unk>`` forms, are ASCII), so the parts' tokens are the line's."""
    start = 0
    while len(line) - start > LONG:
        cut = start + LONG
        while cut < len(line):
            if line[cut - 1].isascii() or line[cut - 1].isspace() or line[cut - 1] in ZERO_WIDTH:
                cut += 1
                continue
            end = _cluster_end(line, cut)
            if end == cut:
                break
            cut = end
        yield " ".join(character_tokens(line[start:cut], lower=False))
        start = cut
    yield " ".join(character_tokens(line[start:], lower=False))


# every option has an effect in every combination (the shape of fairseq_wean.cli.options.NEEDS; none needs another)
NEEDS = {}
ALWAYS = ("--input", "--output")
CHUNK = 10000  # lines checked (pieces) at a time, before they are split and written
SPOOL = 8 << 20  # standard output's text is kept in memory up to this size, then in a temporary file


def get_parser():
    parser = argparse.ArgumentParser(prog="python -m preprocess.split_characters",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default="-", help="a file to read (default: standard input)")
    parser.add_argument("--output", help="a file to write (default: standard output)")
    return once(parser)


def split_stream(path, out):
    """Split the lines of ``path`` into ``out``, CHUNK lines at a time, each chunk checked first; an empty
    input, a cut one, subword pieces or non-UTF-8 text is a one-line ``FairseqWeanError``."""
    from preprocess.check_parallel import complete_lines

    chunk, total = [], 0
    lines = complete_lines(path, "--input")
    while True:
        line = next(lines, None)
        if line is not None:
            chunk.append(line)
        if chunk and (line is None or len(chunk) == CHUNK):
            # raw text (unsegmented Chinese is what it splits), never pieces: '@@' and '▁' would become characters
            check_words([("--input " + path, chunk)], "python -m preprocess.split_characters", expect="text")
            out.writelines(split_characters(text) + "\n" for text in chunk)
            total += len(chunk)
            chunk = []
        if line is None:
            break
    if total == 0:
        raise FairseqWeanError("--input {} is empty (no line): nothing to split; nothing was written".format(
            "standard input" if path == "-" else path))
    return total


def main(argv=None):
    args = get_parser().parse_args(argv)
    if args.output:
        textio.check_output(args.output, [args.input], what="--output")  # before reading anything
        with textio.atomic_output(args.output, [args.input], what="--output") as f:
            split_stream(args.input, f)
        return 0
    with tempfile.SpooledTemporaryFile(SPOOL, mode="w+", encoding="utf-8", newline="\n") as spool:
        split_stream(args.input, spool)
        spool.seek(0)
        shutil.copyfileobj(spool, sys.stdout)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
