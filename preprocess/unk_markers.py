"""Source-position markers ``<unk-N>`` for copying rare and unseen words (core_copy).

fairseq's pointer-generator recipe (``examples/pointer_generator``), adapted to CoRe. A word outside
the vocabulary at source position N becomes ``<unk-N>`` in the source, and in the target wherever
the same word occurs; the model copies the marker (eq. 7 of Cao et al. 2017 works on token ids),
and post-processing puts the word from source position N back. It goes through
fairseq-preprocess, fairseq-generate and fairseq-interactive unchanged, with no side input.

    # 1. vocabulary: training words seen >= 2 times, count-sorted, then <unk-0> .. <unk-M-1>
    python -m preprocess.unk_markers vocab --src train.src --tgt train.tgt --min-count 2 \\
        --markers 1000 --out dict.txt
    # 2. mark every split (and any input given to fairseq-interactive)
    python -m preprocess.unk_markers encode --vocab dict.txt --src train.src --tgt train.tgt \\
        --src-out train.pg.src --tgt-out train.pg.tgt
    # 3. fairseq-wean-align-table and fairseq-preprocess on the marked text
    #    (fairseq-preprocess --joined-dictionary --srcdict dict.txt ...)
    # 4. after fairseq-generate / fairseq-interactive, put the words back
    python -m preprocess.unk_markers decode --src test.src --hyp hyps.txt --out hyps.words.txt

Training singletons become markers too (``--min-count 2``), so the model learns to copy markers,
which is what it must do for words never seen in training. The dictionary keeps the count order
(fairseq-preprocess keeps a ``--srcdict`` file's order), so U = the most frequent ids is unchanged;
core_copy never generates a marker, it only copies one. The marker format and the encoding and
decoding of a sentence live in :mod:`fairseq_wean.data.markers` (the model uses the same module).

Every output is written to a temporary file and renamed when complete, so an error (e.g. a
hypothesis with a marker past the end of its source) leaves no partial file and an earlier
output as it was; ``encode``'s ``--src-out`` and ``--tgt-out`` are renamed only once both are
written, so the pair is replaced together or not at all. An output equal to an input is refused. ``--tgt`` and ``--tgt-out`` go together.
Every text is read as words, before anything is written: subword pieces (BPE ``@@``, sentencepiece
``▁``, WordPiece ``##``) and unsegmented Chinese/Japanese/Thai are refused in one line
(``fairseq_wean.scoring.pieces.check_words``): a marker stands for a word of the source.
"""
import argparse
import collections
import contextlib
import os

from fairseq_wean.cli.options import once
from fairseq_wean.data.markers import decode_hypothesis, encode_pair, is_position_marker, marker, marker_count
from fairseq_wean.errors import PROG, FairseqWeanError, run_cli
from fairseq_wean.data.dictionary import check_dictionary, dictionary_words
from fairseq_wean.errors import at_least
from fairseq_wean.scoring.pieces import check_words
from fairseq_wean.textio import atomic_output, check_input, check_output, iter_lines, same_file

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
TOOL = "python -m preprocess.unk_markers"


def count_words(paths):
    counts = collections.Counter()
    for path in paths:
        for line in iter_lines(path):
            counts.update(line.split())
    return counts


# one marker per source position: no model reads sources this long (1e8 markers filled GBs of memory)
MAX_MARKERS = 100000


def build_vocab(counts, min_count=2, markers=1000):
    """[(word, count)] in fairseq dictionary order: count-sorted words, then the markers."""
    words = [(w, c) for w, c in counts.items()
             if c >= min_count and w not in SPECIALS and not is_position_marker(w)]
    if not words:
        top = max((c for w, c in counts.items() if w not in SPECIALS and not is_position_marker(w)), default=0)
        raise FairseqWeanError(
            "--min-count {}: no word is seen that often (the most frequent is seen {} time(s)), so the dictionary "
            "would hold only markers and every word would be copied: lower --min-count".format(min_count, top))
    words.sort(key=lambda wc: (-wc[1], wc[0]))
    return words + [(marker(i), 0) for i in range(markers)]


def read_vocab(path, what="--vocab"):
    """The words of a fairseq dictionary file (``WORD COUNT`` lines; anything else is a one-line error,
    not a vocabulary of first fields that would turn every word into a marker)."""
    check_dictionary(path, SPECIALS, what)
    words = set(dictionary_words(path, what))
    if not words:
        raise FairseqWeanError("{} {}: no word in the file (it is empty)".format(what, path))
    return words


# option -> the rules it needs to have an effect, in the shape of fairseq_wean.cli.options.NEEDS (refused in
# one line where they do not hold); every other option of every command is in ALWAYS
NEEDS = {"--tgt": (("option", "--tgt-out"),), "--tgt-out": (("option", "--tgt"),)}
ALWAYS = ("--src", "--min-count", "--markers", "--out", "--vocab", "--src-out", "--hyp", "--past-end")


def get_parser():
    parser = argparse.ArgumentParser(prog="python -m preprocess.unk_markers", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("vocab", help="write a fairseq dictionary: frequent words, then <unk-N> markers")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--min-count", type=at_least(1), default=2, help="words seen fewer times become markers")
    p.add_argument("--markers", type=at_least(1, high=MAX_MARKERS), default=1000,
                   help="number of markers (longest source to cover; at most {:,})".format(MAX_MARKERS))
    p.add_argument("--out", required=True)
    p = sub.add_parser("encode", help="replace out-of-vocabulary words by <unk-N>")
    p.add_argument("--vocab", required=True, help="dictionary written by 'vocab' (or any dict.txt)")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", default=None, help="target to mark as well (needs --tgt-out)")
    p.add_argument("--src-out", required=True)
    p.add_argument("--tgt-out", default=None, help="where the marked --tgt goes (needs --tgt)")
    p = sub.add_parser("decode", help="replace <unk-N> in hypotheses by source word N")
    p.add_argument("--src", required=True, help="the original (unmarked) source, line-parallel to --hyp")
    p.add_argument("--hyp", required=True, help="hypotheses, one per line")
    p.add_argument("--out", required=True)
    p.add_argument("--past-end", choices=("error", "unk"), default="error",
                   help="a marker past the end of its source: 'error' (default; the files are probably not "
                        "line-parallel) or 'unk' (write <unk>: the hypotheses are known to be in source order, "
                        "and the model wrote a marker pointing at no word, as sampling can)")
    for command in sub.choices.values():
        once(command)
    return once(parser)


def read_words(named_paths):
    """The lines of each (flag, path), read once, after :func:`check_words` (words: no subword pieces,
    no unsegmented Chinese/Japanese/Thai; markers are for words) accepted all of them; None stays None."""
    from preprocess.check_parallel import complete_lines

    sides = [(flag, path, None if path is None else list(complete_lines(path, flag))) for flag, path in named_paths]
    check_words([("{} {}".format(flag, path), lines) for flag, path, lines in sides], TOOL)
    for flag, path, lines in sides:  # a marker stands for a word of a text that has none yet
        if lines is not None and not any(line.strip() for line in lines):
            raise FairseqWeanError("{} {} is empty (no word): give the text of at least one sentence; nothing was "
                                   "written".format(flag, path))
    return [lines for _flag, _path, lines in sides]


def check_unmarked(flag, path, lines, fix):
    """Refuse text that already holds a marker ``<unk-N>`` where unmarked words are needed, naming the line."""
    for number, line in enumerate(lines, 1):
        found = next((word for word in line.split() if is_position_marker(word)), None)
        if found is not None:
            raise FairseqWeanError("{} {} line {} holds the marker {}: {} is the unmarked text ({}); nothing was "
                                   "written".format(flag, path, number, found, flag, fix))


def vocab(args):
    check_output(args.out, (args.src, args.tgt), "--out")
    counts = collections.Counter()
    for lines in read_words([("--src", args.src), ("--tgt", args.tgt)]):
        for line in lines:
            counts.update(line.split())
    entries = build_vocab(counts, args.min_count, args.markers)
    with atomic_output(args.out, (args.src, args.tgt), "--out") as f:
        for word, count in entries:
            f.write("{} {}\n".format(word, count))


def encode(args):
    if (args.tgt is None) != (args.tgt_out is None):
        raise FairseqWeanError(
            "--tgt and --tgt-out go together (got only {}): give both to mark the target, or "
            "neither".format("--tgt" if args.tgt else "--tgt-out"))
    inputs = (args.vocab, args.src, args.tgt)
    for path, flag in zip(inputs, ("--vocab", "--src", "--tgt")):
        if path is not None:
            check_input(path, flag)
    check_output(args.src_out, inputs, "--src-out")
    if args.tgt_out is not None:
        check_output(args.tgt_out, inputs, "--tgt-out")
        if same_file(args.src_out, args.tgt_out):
            raise FairseqWeanError(
                "--src-out and --tgt-out are both {}: give two different files".format(args.src_out))
    vocabulary = read_vocab(args.vocab)
    max_markers = marker_count(vocabulary)
    if max_markers is None:  # every out-of-vocabulary word would become a marker the dictionary does not hold
        raise FairseqWeanError("--vocab {} holds no marker <unk-N>: fairseq-preprocess would read every marker "
                               "written as <unk>; give the dictionary written by '{} vocab' (words, then "
                               "<unk-0> .. <unk-M-1>)".format(args.vocab, TOOL))
    source_lines, target_lines = read_words([("--src", args.src), ("--tgt", args.tgt)])
    for flag, path, lines in (("--src", args.src, source_lines), ("--tgt", args.tgt, target_lines)):
        if lines is not None:  # marked twice, a marker would point at the position of a marker
            check_unmarked(flag, path, lines, "encode the text before '{} encode', not its output".format(TOOL))
    sources = [line.split() for line in source_lines]
    targets = [None] * len(sources)
    if args.tgt:
        targets = [line.split() for line in target_lines]
        if len(targets) != len(sources):
            raise FairseqWeanError("--src and --tgt differ in length")
    marked = [encode_pair(s, t, vocabulary, max_markers) for s, t in zip(sources, targets)]
    sides = [(args.src_out, "--src-out", 0)] + ([(args.tgt_out, "--tgt-out", 1)] if args.tgt_out is not None else [])
    # The pair is one output: both are written to temporary files, and renamed into place (on
    # leaving the with block) only after both were completely written and synced; a failure in
    # either leaves both earlier outputs, or none, as they were.
    with contextlib.ExitStack() as outputs:
        handles = [(outputs.enter_context(atomic_output(path, inputs, flag)), side) for path, flag, side in sides]
        for f, side in handles:
            f.writelines(" ".join(pair[side]) + "\n" for pair in marked)
        for f, _ in handles:
            f.flush()
            os.fsync(f.fileno())


def decode(args):
    check_input(args.src, "--src")
    check_input(args.hyp, "--hyp")
    check_output(args.out, (args.src, args.hyp), "--out")
    sides = read_words([("--src", args.src), ("--hyp", args.hyp)])
    check_unmarked("--src", args.src, sides[0], "the source before '{} encode', whose words the markers "
                   "point at".format(TOOL))
    sources, hyps = ([line.split() for line in lines] for lines in sides)
    if len(sources) != len(hyps):
        raise FairseqWeanError("--src has {} lines, --hyp {}".format(len(sources), len(hyps)))
    with atomic_output(args.out, (args.src, args.hyp), "--out") as f:
        for number, (s, h) in enumerate(zip(sources, hyps), start=1):
            try:
                f.write(" ".join(decode_hypothesis(s, h, past_end=args.past_end)) + "\n")
            except ValueError as exc:
                raise FairseqWeanError("--hyp {} line {}: {}; nothing was written (--past-end unk writes <unk> "
                                       "for such a marker)".format(args.hyp, number, exc)) from None


def main(argv=None):
    args = get_parser().parse_args(argv)
    {"vocab": vocab, "encode": encode, "decode": decode}[args.command](args)


def cli_main(argv=None):
    """``python -m preprocess.unk_markers``: a ``FairseqWeanError`` is one line and exit status 1."""
    run_cli(main, PROG, argv)


if __name__ == "__main__":
    cli_main()
