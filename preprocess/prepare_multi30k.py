"""Multi30k task 1, German -> English, tokenized and lowercased (train 29,000 / val 1,014 / test 2016 1,000).

    python -m preprocess.prepare_multi30k --data-dir ../shared/data --out work_dirs/multi30k

Uses the official tokenized files ``tok/*.lc.norm.tok.{de,en}`` (lowercased, punctuation-normalized,
Moses-tokenized by the dataset's ``scripts/task1-tokenize.sh``). fairseq subsets: ``valid`` (all
1,014 val pairs: validation loss), ``valid1`` (the first ``--valid-decode`` = 500 val pairs,
decoded after every epoch and scored with BLEU for checkpoint selection), ``test``
(test_2016_flickr). Score: tokenized, lowercased BLEU (sacrebleu with ``--tokenize none``-style
input, as fairseq-wean-score computes it on these files).

Vocabulary variants as for the other tasks (``word``: joined German+English dictionary of words
seen at least twice, needed by wean_lstm and core_copy which share one embedding matrix;
``bpe``: joint subword-nmt BPE, ``--bpe-merges`` 10,000).

Official source: https://github.com/multi30k/dataset (``data/task1/tok/``).
"""
import os

from preprocess import common, vocab_sizes
from preprocess.common import log, write_lines

URL = "https://github.com/multi30k/dataset/tree/master/data/task1/tok"
SRC, TGT = "de", "en"
PREFIXES = dict(train="train", valid=["valid", "validdec"], test=["test"])
VARIANTS = common.VARIANTS  # what --variants may name
FILES = {"train": "train", "valid": "val", "test": "test_2016_flickr"}


def parse_args(argv=None):
    from fairseq_wean.errors import at_least

    p = common.base_parser(__doc__.split("\n")[0], default_out=os.path.join(common.REPO, "work_dirs", "multi30k"))
    p.add_argument("--valid-decode", type=at_least(1), default=500, help="validation pairs decoded after every epoch")
    p.add_argument("--variants", type=common.variant_list(VARIANTS),
                   default="word,word-pg", help="comma list of " + ",".join(common.VARIANTS))
    p.add_argument("--threshold", type=at_least(0), help="word vocabulary: words seen at least this often (default 2)")
    p.add_argument("--bpe-merges", type=vocab_sizes.size_type(), help="joint BPE merges of the bpe variant (default 10000)")
    p.add_argument("--spm-vocab", type=vocab_sizes.size_type(), help="sentencepiece vocabulary size (default 8000)")
    return common.apply_tiny(common.check_variant_options(p, common.parse(p, argv)), max_sentences=300, max_eval=12)


def data_files(args):
    """(folder, {path: where to get it}, parallel groups): every raw file this recipe reads."""
    tok = os.path.join(args.data_dir, "translation", "multi30k_deen", "tok")
    groups = [tuple(os.path.join(tok, "{}.lc.norm.tok.{}".format(stem, lang)) for lang in (SRC, TGT))
              for stem in FILES.values()]
    return args.data_dir, {path: URL for group in groups for path in group}, groups


def main(argv=None):
    args = parse_args(argv)
    out = common.out_folder(args.out)
    recipe = common.prepared(out, args, "Multi30k")
    if recipe is not None:
        return recipe
    folder, files, groups = data_files(args)
    raw = common.RawData(folder, files, groups)
    splits = {}
    for (split, stem), (de, en) in zip(FILES.items(), groups):
        splits[split] = list(zip(raw.lines(de), raw.lines(en)))
    common.note_sample(args, len(splits["train"]))
    splits["train"] = [splits["train"][i] for i in common.sample_indices(len(splits["train"]), args.max_sentences,
                                                                         args.seed)]
    if args.max_eval:
        splits["valid"], splits["test"] = splits["valid"][: args.max_eval], splits["test"][: args.max_eval]
    splits["validdec"] = splits["valid"][: args.valid_decode]
    text_dir = os.path.join(out, "text")
    for name, pairs in splits.items():
        write_lines(os.path.join(text_dir, "{}.{}".format(name, SRC)), (a for a, _ in pairs))
        write_lines(os.path.join(text_dir, "{}.{}".format(name, TGT)), (b for _, b in pairs))
    stats = {k + "_pairs": len(v) for k, v in splits.items()}
    log("train {train_pairs}, valid {valid_pairs} ({validdec_pairs} decoded per epoch), test {test_pairs} pairs"
        .format(**stats))
    variants = common.build_variants(out, text_dir, SRC, TGT, PREFIXES, args.variants.split(","),
                                     threshold=args.threshold, spm_vocab=args.spm_vocab, bpe_merges=args.bpe_merges,
                                     workers=args.workers, small=bool(args.max_sentences))
    vocab_sizes.record_built(out, variants, args, SRC)
    recipe = {
        "task": "translation", "dataset": "multi30k", "src": SRC, "tgt": TGT,
        "data_dir": os.path.abspath(args.data_dir), "options": common.recorded_options(args), "variants": variants, "stats": stats,
        "tiny": bool(args.max_sentences or args.max_eval),
        "valid": {"subset": "valid1", "orig": "text/validdec." + SRC, "refs": ["text/validdec." + TGT],
                  "metric": "bleu", "metrics": "bleu"},
        "tests": {"test2016": {"subset": "test", "orig": "text/test." + SRC, "refs": ["text/test." + TGT],
                               "metrics": "bleu,stats", "table": ["bleu"],
                               # tokenized, lowercased text: multi-bleu's convention, as the literature
                               # reports it (13a would also split every <unk> into "< unk >")
                               "score_args": ["--bleu-tokenize", "none"]}},
        "main_test": "test2016",
    }
    return common.write_recipe(out, recipe)


def cli_main():
    common.main_wrapper(main)


if __name__ == "__main__":
    cli_main()
