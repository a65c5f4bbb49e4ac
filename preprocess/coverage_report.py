"""CoRe's Table 2 on any dataset: how much of the target the decoders' vocabularies cover.

    python -m preprocess.coverage_report --train-src train.src --train-tgt train.tgt \\
        --src test.src --tgt test.tgt --table TABLE [--dict data-bin/dict.src.txt] \\
        [--topk 10] [--num-frequent 2000] [--vocab-size 30000] [--json out.json]

For every target token of the evaluated pairs (``--src``/``--tgt``), the share (%) that lies in

* X: the words of its source sentence (the copying decoder's vocabulary, eq. 7);
* X u A(X): plus the top-``--topk`` aligned words of each source word (``--table``, written by
  ``fairseq-wean-align-table``);
* X u A(X) u U: plus the ``--num-frequent`` most frequent words (eq. 8; what core_copy covers);
* |V| = ``--vocab-size``: a plain vocabulary of the most frequent words (a canonical decoder's).

and the average |V_G| = |A(X) u U| per sentence (the generative softmax size of eq. 9, with unk
and eos, as in the model). Word frequencies are those of ``--dict`` (a fairseq dictionary, whose
order defines U in the model; checked as every dictionary is: ``WORD COUNT`` lines, each word once, none
of fairseq's own symbols, not empty) or, without it, counts over train.src + train.tgt, as
fairseq-preprocess --joined-dictionary counts them.
"""
import argparse
import collections
import json

from fairseq_wean.data.align_table import read_table
from fairseq_wean.data.dictionary import SPECIALS, check_dictionary, dictionary_words
from fairseq_wean.data.markers import is_position_marker
from fairseq_wean.errors import PROG, FairseqWeanError, at_least, run_cli
from fairseq_wean.scoring.pieces import check_words
from fairseq_wean.textio import atomic_output, check_input, check_output, iter_lines, read_lines


def frequency_order(dict_path=None, train_files=()):
    if dict_path:
        check_dictionary(dict_path, SPECIALS, "--dict")  # a file that is not a fairseq dictionary: one line
        return dictionary_words(dict_path, "--dict")
    counts = collections.Counter()
    for path in train_files:
        for line in iter_lines(path, "training file"):
            counts.update(line.split())
    return [w for w, _ in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))]


def coverage(pairs, table, ranked_words, topk=10, num_frequent=2000, vocab_size=30000):
    """Table 2 numbers. pairs: [(source tokens, target tokens)]; table: {src: [tgt, ...]}."""
    ranked = [w for w in ranked_words if not is_position_marker(w)]
    frequent = set(ranked[:num_frequent])
    plain_vocab = set(ranked[:vocab_size])
    vocab_size = len(plain_vocab)  # the row names the vocabulary there is (a 2,296-word dictionary: 2296)
    hits = collections.Counter()
    total = 0
    vg_sizes = []
    for src, tgt in pairs:
        x = set(src)
        aligned = {t for s in x for t in table.get(s, [])[:topk]}
        vg_sizes.append(len(aligned | frequent | {"<unk>", "</s>"}))
        for w in tgt:
            total += 1
            hits["X"] += w in x
            hits["X+A(X)"] += w in x or w in aligned
            hits["X+A(X)+U"] += w in x or w in aligned or w in frequent
            hits["|V|={}".format(vocab_size)] += w in plain_vocab
    report = collections.OrderedDict(
        (k, 100.0 * hits[k] / max(total, 1))
        for k in ("X", "X+A(X)", "X+A(X)+U", "|V|={}".format(vocab_size))
    )
    report["avg |V_G|"] = sum(vg_sizes) / max(len(vg_sizes), 1)
    report["target tokens"] = total
    report["sentences"] = len(pairs)
    return report


def read_pairs(src_path, tgt_path, vocabulary=None):
    """The (source, target) token lists; the text and ``vocabulary`` (name, ranked words) of one form
    (words, or pieces with a dictionary of those pieces: ``pieces.check_words``), before any counting."""
    src, tgt = read_lines(src_path, "--src"), read_lines(tgt_path, "--tgt")
    check_words([("--src " + src_path, src), ("--tgt " + tgt_path, tgt)], "python -m preprocess.coverage_report",
                vocabulary=vocabulary)
    if len(src) != len(tgt):
        raise FairseqWeanError("{} has {} lines, {} has {}".format(src_path, len(src), tgt_path, len(tgt)))
    return [(s.split(), t.split()) for s, t in zip(src, tgt)]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m preprocess.coverage_report",
                                description="Target-word coverage of CoRe's vocabularies (Table 2).")
    p.add_argument("--train-src", help="training source (word counts, unless --dict)")
    p.add_argument("--train-tgt", help="training target (word counts, unless --dict)")
    p.add_argument("--dict", help="fairseq dictionary (dict.src.txt of a joined data-bin): defines U")
    p.add_argument("--src", required=True, help="evaluated source, e.g. test.src")
    p.add_argument("--tgt", required=True, help="evaluated target, e.g. test.tgt")
    p.add_argument("--table", required=True, help="alignment table of fairseq-wean-align-table")
    p.add_argument("--topk", type=at_least(1), default=10)
    p.add_argument("--num-frequent", type=at_least(0), default=2000)
    p.add_argument("--vocab-size", type=at_least(1), default=30000)
    p.add_argument("--json", help="also write the numbers here")
    args = p.parse_args(argv)
    if not args.dict and not (args.train_src and args.train_tgt):
        p.error("give --dict, or --train-src and --train-tgt")
    train_files = [f for f in (args.train_src, args.train_tgt) if f]
    inputs = [args.dict, args.src, args.tgt, args.table] + train_files
    for path, flag in ((args.dict, "--dict"), (args.train_src, "--train-src"), (args.train_tgt, "--train-tgt"),
                       (args.src, "--src"), (args.tgt, "--tgt")):
        if path is not None:
            check_input(path, flag)
    if args.json:
        check_output(args.json, inputs, "--json")  # before the counting, not after
    ranked = frequency_order(args.dict, train_files)
    vocabulary = ("--dict " + args.dict if args.dict else "--train-src/--train-tgt", ranked)
    report = coverage(read_pairs(args.src, args.tgt, vocabulary), read_table(args.table, "--table"), ranked,
                      args.topk, args.num_frequent, args.vocab_size)
    print("Vocabulary\tCoverage (%)")
    for key, value in report.items():
        fmt = "{}\t{:.1f}" if isinstance(value, float) else "{}\t{}"
        print(fmt.format(key, value))
    if args.json:
        with atomic_output(args.json, inputs, "--json") as f:
            json.dump(report, f, indent=1)
    return report


def cli_main(argv=None):
    """``python -m preprocess.coverage_report``: a ``FairseqWeanError`` is one line and exit status 1."""
    run_cli(main, PROG, argv)


if __name__ == "__main__":
    cli_main()
