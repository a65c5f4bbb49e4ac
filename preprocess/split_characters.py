"""Split text into characters as the scorer counts them (Chinese summarization, e.g. LCSTS).

    python -m preprocess.split_characters < raw.txt > chars.txt      # then fairseq-preprocess chars.*

Every character becomes a token, whitespace is dropped, and a run of ASCII letters and digits
stays one token: '苹果发布iPhone 6，售价5288元' -> '苹 果 发 布 iPhone6 ， 售 价 5288 元'. This is
``fairseq_wean.scoring.metrics.character_tokens`` (case kept), the tokenization of ROUGE with
``--rouge-chars`` / ``--eval-rouge-chars`` in every tool, so a model trained on this text is scored
on the units it writes. Score the decoded output against the raw references with
``fairseq-wean-score --rouge-chars`` (spaces never matter there). Lines are read and written as
UTF-8; ``--input``/``--output`` name files instead of stdin/stdout. Text with subword pieces (BPE
``@@``, sentencepiece ``▁``, WordPiece ``##``) is refused in one line before anything is written:
its marks would be split into characters; split the text before BPE / sentencepiece.
"""
import argparse
import sys

from fairseq_wean import textio
from fairseq_wean.errors import run_cli
from fairseq_wean.scoring.metrics import character_tokens
from fairseq_wean.scoring.pieces import check_words

PROG = "split_characters"


def split_characters(line):
    """One line, split: '雅虎 2014年' -> '雅 虎 2014 年'."""
    return " ".join(character_tokens(line, lower=False))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default="-", help="a file to read (default: standard input)")
    parser.add_argument("--output", help="a file to write (default: standard output)")
    args = parser.parse_args(argv)
    if args.output:
        textio.check_output(args.output, [args.input], what="--output")  # before reading anything
    lines = textio.read_lines(args.input, "--input")
    # raw text (unsegmented Chinese is what it splits), never pieces: '@@' and '▁' would become characters
    check_words([("--input " + args.input, lines)], "python -m preprocess.split_characters", expect="text")
    lines = [split_characters(line) for line in lines]
    if args.output:
        with textio.atomic_output(args.output, [args.input], what="--output") as f:
            f.writelines(line + "\n" for line in lines)
    else:
        sys.stdout.writelines(line + "\n" for line in lines)
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
