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
core_copy never generates a marker, it only copies one.
"""
import argparse
import collections
import re
import sys

MARKER = re.compile(r"^<unk-([0-9]+)>$")
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")


def marker(position):
    return "<unk-{}>".format(position)


def count_words(paths):
    counts = collections.Counter()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                counts.update(line.split())
    return counts


def build_vocab(counts, min_count=2, markers=1000):
    """[(word, count)] in fairseq dictionary order: count-sorted words, then the markers."""
    words = [(w, c) for w, c in counts.items() if c >= min_count and w not in SPECIALS and not MARKER.match(w)]
    words.sort(key=lambda wc: (-wc[1], wc[0]))
    return words + [(marker(i), 0) for i in range(markers)]


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        return {line.split()[0] for line in f if line.strip()}


def encode_pair(source, target, vocabulary, max_markers=None):
    """Replace out-of-vocabulary words by ``<unk-N>`` (N: first source position of the word).

    source: list of tokens; target: list of tokens or None. Returns (source, target). A word at a
    position >= max_markers keeps its spelling (fairseq-preprocess makes it ``<unk>``).
    """
    first = {}
    out_src = []
    for pos, tok in enumerate(source):
        if tok in vocabulary or (max_markers is not None and first.get(tok, pos) >= max_markers):
            out_src.append(tok)
            continue
        first.setdefault(tok, pos)
        out_src.append(marker(first[tok]))
    out_tgt = None if target is None else [marker(first[t]) if t in first else t for t in target]
    return out_src, out_tgt


def decode_hypothesis(source, hypothesis):
    """Put the source word at position N back for every ``<unk-N>`` (source: unmarked tokens)."""
    out = []
    for tok in hypothesis:
        m = MARKER.match(tok)
        if m:
            pos = int(m.group(1))
            if pos >= len(source):
                raise ValueError(
                    "{} points past the end of its {}-word source: the hypotheses and --src are not "
                    "line-parallel (sort fairseq-generate output by sentence id)".format(tok, len(source))
                )
            tok = source[pos]
        out.append(tok)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m preprocess.unk_markers", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("vocab", help="write a fairseq dictionary: frequent words, then <unk-N> markers")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--min-count", type=int, default=2, help="words seen fewer times become markers")
    p.add_argument("--markers", type=int, default=1000, help="number of markers (longest source to cover)")
    p.add_argument("--out", required=True)
    p = sub.add_parser("encode", help="replace out-of-vocabulary words by <unk-N>")
    p.add_argument("--vocab", required=True, help="dictionary written by 'vocab' (or any dict.txt)")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", default=None)
    p.add_argument("--src-out", required=True)
    p.add_argument("--tgt-out", default=None)
    p = sub.add_parser("decode", help="replace <unk-N> in hypotheses by source word N")
    p.add_argument("--src", required=True, help="the original (unmarked) source, line-parallel to --hyp")
    p.add_argument("--hyp", required=True, help="hypotheses, one per line")
    p.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    if args.command == "vocab":
        entries = build_vocab(count_words([args.src, args.tgt]), args.min_count, args.markers)
        with open(args.out, "w", encoding="utf-8") as f:
            for word, count in entries:
                f.write("{} {}\n".format(word, count))
    elif args.command == "encode":
        vocabulary = read_vocab(args.vocab)
        max_markers = sum(1 for w in vocabulary if MARKER.match(w)) or None
        with open(args.src, encoding="utf-8") as fs:
            sources = [line.split() for line in fs]
        targets = [None] * len(sources)
        if args.tgt:
            with open(args.tgt, encoding="utf-8") as ft:
                targets = [line.split() for line in ft]
            if len(targets) != len(sources):
                sys.exit("error: --src and --tgt differ in length")
        with open(args.src_out, "w", encoding="utf-8") as fs, \
                open(args.tgt_out or "/dev/null", "w", encoding="utf-8") as ft:
            for s, t in zip(sources, targets):
                s, t = encode_pair(s, t, vocabulary, max_markers)
                fs.write(" ".join(s) + "\n")
                if t is not None:
                    ft.write(" ".join(t) + "\n")
    else:
        with open(args.src, encoding="utf-8") as fs, open(args.hyp, encoding="utf-8") as fh:
            sources, hyps = [l.split() for l in fs], [l.split() for l in fh]
        if len(sources) != len(hyps):
            sys.exit("error: --src has {} lines, --hyp {}".format(len(sources), len(hyps)))
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                for s, h in zip(sources, hyps):
                    f.write(" ".join(decode_hypothesis(s, h)) + "\n")
        except ValueError as exc:
            sys.exit("error: {}".format(exc))


if __name__ == "__main__":
    main()
