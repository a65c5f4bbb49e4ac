"""``fairseq-wean-align-table``: CoRe's source-target alignment table A (Cao et al. 2017, eq. 8).

    fairseq-wean-align-table --src train.src --tgt train.tgt --dict data-bin/dict.src.txt --topk 10 --out TABLE

Input: tokenized parallel text, one sentence per line, the same tokens fairseq-preprocess sees
(after :mod:`preprocess.unk_markers` if you use markers), and ``--dict``, the (joined) dictionary
fairseq-preprocess wrote: every word outside it is aligned as ``<unk>``, which is what fairseq
will see (``--thresholdsrc``/``--thresholdtgt``, ``--nwordssrc``), and the table never names it. The pairs are word-aligned with eflomal
(Östling and Tiedemann, "Efficient Word Alignment with Markov Chain Monte Carlo", The Prague
Bulletin of Mathematical Linguistics 106, 2016; the paper used fast_align, which is not packaged
here), in both directions; a link counts once per direction that proposes it. For each source word the ``--topk``
target words with the most links are kept. eflomal is a Gibbs sampler seeded from ``/dev/urandom`` (it
has no seed option), so two runs on the same text give slightly different tables, and a
``core_copy`` model trained on them slightly different scores (docs/results/simplification.md).

Table format (:mod:`fairseq_wean.data.align_table`), one aligned pair per line::

    SOURCE_WORD <TAB> TARGET_WORD <TAB> SCORE

Lines of one source word are consecutive and ordered best first; SCORE is the link count (a
float, so other tools may write probabilities); ``<unk>`` is never written. ``--arch core_copy --core-align-table TABLE``
keeps the first ``--core-topk`` targets of each source word, and refuses a table with a word that
is not in the model's dictionary (a table built without ``--dict`` on text with words below
fairseq-preprocess's thresholds). Source-position markers ``<unk-N>`` are never written (they are
copy-only), and neither are empty pairs. A sentence of more than 1,023 tokens (eflomal's limit: it
would leave the pair out silently) is refused before aligning, naming its line, and so is text a
word table cannot be built from (``fairseq_wean.scoring.pieces.check_words``): subword pieces
(BPE ``@@``, sentencepiece ``▁``, WordPiece ``##``) with a ``--dict`` of words, words with a
``--dict`` of pieces (text and dictionary must be of one form: a table of pieces, for a model on
pieces, is built from pieced text and its dictionary), and Chinese, Japanese or Thai left
unsegmented (each sentence would be one "word").

``--out`` is checked before eflomal runs (it must not be ``--src`` or ``--tgt``, nor a directory,
and its directory must exist) and written through a temporary file renamed at the end, so a
failed run leaves an earlier table as it was.

Keep this interface stable: other tools call it.
"""
import argparse
import collections
import logging
import os
import sys
import tempfile

from fairseq_wean.data.align_table import write_table
from fairseq_wean.data.dictionary import check_dictionary, dictionary_words
from fairseq_wean.data.markers import is_position_marker
from fairseq_wean.cli import options
from fairseq_wean.errors import FairseqWeanError, run_cli
from fairseq_wean.scoring.pieces import check_words
from fairseq_wean.textio import check_input, check_output, read_lines

PROG = "fairseq-wean-align-table"
logger = logging.getLogger("fairseq_wean.cli.align_table")


def eflomal_links(src_sents, tgt_sents, model=3):
    """Forward and reverse eflomal links, ``[[(i, j), ...], ...]`` per pair (i: source position)."""
    import eflomal

    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        eflomal.Aligner(model=model).align(
            [" ".join(s) + "\n" for s in src_sents],
            [" ".join(t) + "\n" for t in tgt_sents],
            links_filename_fwd=fwd,
            links_filename_rev=rev,
            quiet=True,
        )
        result = []
        for name in (fwd, rev):
            with open(name, encoding="utf-8") as f:
                result.append([[tuple(map(int, link.split("-"))) for link in line.split()] for line in f])
    return result


# eflomal aligns sentences of at most this many tokens: it writes a longer one as empty (no links)
# without a word, so a long pair would be missing from the table silently
MAX_TOKENS = 1023


def check_lengths(src_sents, tgt_sents, names=("source", "target")):
    """Refuse (ValueError) a sentence longer than :data:`MAX_TOKENS`, naming its side, line and length."""
    for name, sents in zip(names, (src_sents, tgt_sents)):
        for number, sentence in enumerate(sents, start=1):
            if len(sentence) > MAX_TOKENS:
                raise ValueError(
                    "{} line {} has {:,} tokens, more than the {:,} eflomal aligns (it would leave the pair out of "
                    "the table without a word): split or drop the long pairs".format(
                        name, number, len(sentence), MAX_TOKENS))


SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq adds them to every dictionary itself


def build_table(src_sents, tgt_sents, topk=10, model=3):
    """{source word: [(target word, count), ...] best first, at most ``topk``}."""
    if len(src_sents) != len(tgt_sents):
        raise ValueError("source and target differ in length: {} vs {} lines".format(
            len(src_sents), len(tgt_sents)))
    check_lengths(src_sents, tgt_sents)
    pairs = [(s, t) for s, t in zip(src_sents, tgt_sents) if s and t]
    if not pairs:
        raise ValueError("no non-empty sentence pair to align")
    src_sents, tgt_sents = [p[0] for p in pairs], [p[1] for p in pairs]
    counts = collections.defaultdict(collections.Counter)
    for links_per_sentence in eflomal_links(src_sents, tgt_sents, model):
        for src, tgt, links in zip(src_sents, tgt_sents, links_per_sentence):
            for i, j in links:
                if i >= len(src) or j >= len(tgt):
                    continue
                s, t = src[i], tgt[j]
                if is_position_marker(s) or is_position_marker(t) or UNK in (s, t):
                    continue
                counts[s][t] += 1
    return {
        s: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:topk] for s, c in counts.items()
    }


UNK = "<unk>"


def get_parser():
    parser = argparse.ArgumentParser(
        prog="fairseq-wean-align-table",
        description="Build CoRe's alignment table A (top-k aligned target words per source word) "
                    "with eflomal, for --arch core_copy --core-align-table.",
    )
    parser.add_argument("--src", required=True, help="tokenized training source, one sentence per line")
    parser.add_argument("--tgt", required=True, help="tokenized training target, line-parallel to --src")
    parser.add_argument("--dict", metavar="DICT",
                        help="the dictionary fairseq-preprocess wrote (data-bin/dict.SRC.txt; core_copy needs a "
                             "joined one): words outside it are aligned as <unk>, as fairseq will see them, and "
                             "never named in the table")
    parser.add_argument("--topk", type=options.quantity("topk"), default=10, help="target words kept per source word (paper: 10)")
    parser.add_argument("--out", required=True, help="table to write (SOURCE<TAB>TARGET<TAB>SCORE lines)")
    parser.add_argument("--model", type=int, default=3, choices=(1, 2, 3),
                        help="eflomal model: 1 IBM1, 2 +HMM, 3 +fertility (default)")
    return options.once(parser)


def main(argv=None):
    args = get_parser().parse_args(argv)
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stderr)
    # Everything that can be refused is refused before eflomal runs (minutes on real data).
    check_input(args.src, "--src")
    check_input(args.tgt, "--tgt")
    if args.dict is not None:
        check_input(args.dict, "--dict")
    check_output(args.out, (args.src, args.tgt) + ((args.dict,) if args.dict else ()), "--out")
    source_lines, target_lines = read_lines(args.src, "--src"), read_lines(args.tgt, "--tgt")
    vocabulary = None
    if args.dict is not None:
        check_dictionary(args.dict, SPECIALS, "--dict")  # what fairseq itself refuses: a word listed twice
        vocabulary = set(dictionary_words(args.dict)) - set(SPECIALS)
        if not vocabulary:
            raise FairseqWeanError("--dict {}: no word in the file (it is empty)".format(args.dict))
    # words (or pieces with a dictionary of the same pieces), not unsegmented Chinese/Japanese/Thai
    check_words([("--src " + args.src, source_lines), ("--tgt " + args.tgt, target_lines)], PROG,
                vocabulary=None if vocabulary is None else ("--dict " + args.dict, vocabulary))
    sources = [line.split() for line in source_lines]
    targets = [line.split() for line in target_lines]
    del source_lines, target_lines
    try:
        check_lengths(sources, targets, ("--src " + args.src, "--tgt " + args.tgt))
    except ValueError as exc:
        raise FairseqWeanError(str(exc)) from None
    if vocabulary is not None:
        sources, targets = ([[w if w in vocabulary else UNK for w in sentence] for sentence in side]
                            for side in (sources, targets))
    try:
        table = build_table(sources, targets, args.topk, args.model)
    except ValueError as exc:
        raise FairseqWeanError(str(exc)) from None
    write_table(table, args.out, (args.src, args.tgt), "--out")
    logger.info("wrote %d source words, %d pairs to %s",
                len(table), sum(len(v) for v in table.values()), args.out)


def cli_main(argv=None):
    """The console script: a ``FairseqWeanError`` becomes one line on stderr and exit status 1."""
    run_cli(main, PROG, argv)


if __name__ == "__main__":
    cli_main()
