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
fairseq-preprocess --joined-dictionary counts them (--train-src/--train-tgt with --dict is refused:
they would change nothing). With --dict the table must fit it as ``--arch core_copy`` requires
(``align_table.read_align_table``, the model's own reading: every word of the table in it), and
an empty or cut (no final newline) --src/--tgt is refused, before any counting.
"""
import argparse
import collections
import json
import logging

from fairseq_wean.cli.options import given, once, quantity
from fairseq_wean.data.align_table import read_align_table, read_table
from fairseq_wean.data.dictionary import SPECIALS, check_dictionary, dictionary_words
from fairseq_wean.data.markers import is_position_marker
from fairseq_wean.errors import PROG, FairseqWeanError, at_least, run_cli
from fairseq_wean.scoring.pieces import check_words
from fairseq_wean.textio import atomic_output, check_input, check_output

# option -> the rules it needs to have an effect, in the shape of fairseq_wean.cli.options.NEEDS ("without",
# other: that option not given); every other option is in ALWAYS (tests/test_preprocess_tools.py)
NEEDS = {"--train-src": (("without", "--dict"),), "--train-tgt": (("without", "--dict"),)}
ALWAYS = ("--dict", "--src", "--tgt", "--table", "--topk", "--num-frequent", "--vocab-size", "--json")


def check_effective(parser, args):
    """Refuse, in one line before any work, an option of :data:`NEEDS` given where it changes nothing."""
    named = given(parser, args)
    for option in sorted(named):
        for kind, need in NEEDS.get(option, ()):
            if kind == "without" and need in named:
                raise FairseqWeanError("{} has no effect with {}: the word counts are then {}'s; drop one of "
                                       "them".format(option, need, need))


def frequency_order(dict_path=None, train_files=()):
    from preprocess.check_parallel import complete_lines

    if dict_path:
        check_dictionary(dict_path, SPECIALS, "--dict")  # a file that is not a fairseq dictionary: one line
        return dictionary_words(dict_path, "--dict")
    counts = collections.Counter()
    for path, flag in train_files:
        for line in complete_lines(path, flag):
            counts.update(line.split())
    if not counts:
        raise FairseqWeanError("{} hold no word: nothing to count the frequent words in".format(
            " and ".join("{} {}".format(flag, path) for path, flag in train_files)))
    return [w for w, _ in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))]


def check_table_fits(path, vocabulary, topk):
    """The table read as ``--arch core_copy --core-align-table`` reads it (``read_align_table``), with the
    dictionary of ``vocabulary`` (name, ranked words): a table of another vocabulary (words not in it), or
    with no usable pair, is refused here as the model refuses it."""
    from fairseq.data import Dictionary

    name, words = vocabulary
    dictionary = Dictionary()
    for word in words:
        dictionary.add_symbol(word)
    quiet = logging.getLogger(read_align_table.__module__)
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # the model's "read N aligned pairs" line is not this report's
    try:
        read_align_table(path, dictionary, topk)
    except FairseqWeanError as exc:
        raise FairseqWeanError("--table {} does not fit {}, and core_copy refuses it the same way ({})".format(
            path, name, str(exc).rstrip("."))) from None
    finally:
        quiet.setLevel(level)


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
    from preprocess.check_parallel import complete_lines

    src, tgt = list(complete_lines(src_path, "--src")), list(complete_lines(tgt_path, "--tgt"))
    check_words([("--src " + src_path, src), ("--tgt " + tgt_path, tgt)], "python -m preprocess.coverage_report",
                vocabulary=vocabulary)
    if len(src) != len(tgt):
        raise FairseqWeanError("{} has {} lines, {} has {}".format(src_path, len(src), tgt_path, len(tgt)))
    pairs = [(s.split(), t.split()) for s, t in zip(src, tgt)]
    if not any(t for _s, t in pairs):  # no line, or none with a word: 0.0% of nothing is no measurement
        raise FairseqWeanError("--tgt {} holds no word ({} line(s)): nothing to measure; give the target of at "
                               "least one sentence".format(tgt_path, len(tgt)))
    return pairs


def get_parser():
    p = argparse.ArgumentParser(prog="python -m preprocess.coverage_report",
                                description="Target-word coverage of CoRe's vocabularies (Table 2).")
    p.add_argument("--train-src", help="training source (word counts, unless --dict)")
    p.add_argument("--train-tgt", help="training target (word counts, unless --dict)")
    p.add_argument("--dict", help="fairseq dictionary (dict.src.txt of a joined data-bin): defines U")
    p.add_argument("--src", required=True, help="evaluated source, e.g. test.src")
    p.add_argument("--tgt", required=True, help="evaluated target, e.g. test.tgt")
    p.add_argument("--table", required=True, help="alignment table of fairseq-wean-align-table")
    p.add_argument("--topk", type=quantity("topk"), default=10)
    p.add_argument("--num-frequent", type=at_least(0), default=2000)
    p.add_argument("--vocab-size", type=at_least(1), default=30000)
    p.add_argument("--json", help="also write the numbers here")
    return once(p)


def main(argv=None):
    p = get_parser()
    args = p.parse_args(argv)
    if not args.dict and not (args.train_src and args.train_tgt):
        p.error("give --dict, or --train-src and --train-tgt")
    check_effective(p, args)
    train_files = [(f, flag) for f, flag in ((args.train_src, "--train-src"), (args.train_tgt, "--train-tgt")) if f]
    inputs = [args.dict, args.src, args.tgt, args.table] + [f for f, _ in train_files]
    for path, flag in ((args.dict, "--dict"), (args.train_src, "--train-src"), (args.train_tgt, "--train-tgt"),
                       (args.src, "--src"), (args.tgt, "--tgt")):
        if path is not None:
            check_input(path, flag)
    if args.json:
        check_output(args.json, inputs, "--json")  # before the counting, not after
    ranked = frequency_order(args.dict, train_files)
    vocabulary = ("--dict " + args.dict if args.dict else "--train-src/--train-tgt", ranked)
    pairs = read_pairs(args.src, args.tgt, vocabulary)
    table = read_table(args.table, "--table")  # its format first, with --table's name
    if args.dict:  # the dictionary core_copy reads the table with (train counts only rank words: no such check)
        check_table_fits(args.table, vocabulary, args.topk)
    report = coverage(pairs, table, ranked, args.topk, args.num_frequent, args.vocab_size)
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
