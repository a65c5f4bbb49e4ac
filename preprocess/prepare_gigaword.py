"""Gigaword headline generation (Rush et al. 2015): the 10k / 1k sample and the standard 1951-pair test set.

Paper: Rush, Chopra and Weston, "A Neural Attention Model for Abstractive Sentence Summarization"
(EMNLP 2015, ACL Anthology D15-1044), whose data set and test set these are.

    python -m preprocess.prepare_gigaword --data-dir ../shared/data --out work_dirs/gigaword

The text is used as released (lowercased, PTB-tokenized, digits ``#``, rare words ``UNK``).

* train: ``sample_dongjunlee/train.{article,title}.txt`` (10,000 pairs; most likely the head of
  the harvardnlp training set, see PROVENANCE.md);
* valid: ``sample_dongjunlee/valid.{article,title}.filter.txt`` (1,000 pairs; fairseq subset
  ``valid``: validation loss); its first ``--valid-decode`` pairs (500) are also subset
  ``valid1``, decoded after every epoch and scored with ROUGE-L for checkpoint selection;
* test: ``test.{src,tgt}``, the 1951 pairs of the harvardnlp ``Giga/`` test set (subset
  ``test``), ROUGE-1/2/L F1. The 14 test sources that are just ``UNK`` are kept (some papers drop
  them and report on 1937).

LEAD-N baselines (first N source words, as CoRe reports) are written by the comparison runner for
N = the mean training headline length (CoRe's rule) and N = 10.

Full data, for users who have it: the harvardnlp release https://github.com/harvardnlp/sent-summary
(``summary.tar.gz``: ``sumdata/train/{train,valid}.{article,title}*.txt``,
``sumdata/Giga/{input.txt,task1_ref0.txt}``). ``--sumdata DIR`` (DIR = the unpacked
``sumdata``) trains on ``train/train.{article,title}.txt`` and validates on
``train/valid.{article,title}.filter.txt`` (first ``--max-valid`` pairs, default 10,000).
"""
import os

from preprocess import common, vocab_sizes
from preprocess.common import log, write_lines

URL = "https://github.com/harvardnlp/sent-summary (summary.tar.gz)"
SRC, TGT = "article", "title"
PREFIXES = dict(train="train", valid=["valid", "validdec"], test=["test"])
VARIANTS = common.VARIANTS  # what --variants may name


def parse_args(argv=None):
    from fairseq_wean.errors import at_least

    p = common.base_parser(__doc__.split("\n")[0], default_out=os.path.join(common.REPO, "work_dirs", "gigaword"))
    p.add_argument("--sumdata", help="the unpacked harvardnlp 'sumdata' directory (full Gigaword), if you have it")
    p.add_argument("--max-valid", type=at_least(1), default=10000, help="validation pairs kept from --sumdata")
    p.add_argument("--valid-decode", type=at_least(1), default=500, help="validation pairs decoded after every epoch")
    p.add_argument("--variants", type=common.variant_list(VARIANTS),
                   default="word,word-pg", help="comma list of " + ",".join(common.VARIANTS))
    p.add_argument("--threshold", type=at_least(0), help="word vocabulary: words seen at least this often (default 2)")
    p.add_argument("--spm-vocab", type=vocab_sizes.size_type(), help="sentencepiece vocabulary size (default 8000)")
    args = common.parse(p, argv)
    common.data_dir_or(p, args, "--sumdata")
    return common.apply_tiny(common.check_variant_options(p, args), max_sentences=300, max_eval=12)


def sources(args):
    if args.sumdata:
        tr = os.path.join(args.sumdata, "train")
        return {
            "train": (os.path.join(tr, "train.article.txt"), os.path.join(tr, "train.title.txt")),
            "valid": (os.path.join(tr, "valid.article.filter.txt"), os.path.join(tr, "valid.title.filter.txt")),
            "test": (os.path.join(args.sumdata, "Giga", "input.txt"), os.path.join(args.sumdata, "Giga", "task1_ref0.txt")),
        }
    giga = os.path.join(args.data_dir, "summarization", "gigaword")
    sample = os.path.join(giga, "sample_dongjunlee")
    return {
        "train": (os.path.join(sample, "train.article.txt"), os.path.join(sample, "train.title.txt")),
        "valid": (os.path.join(sample, "valid.article.filter.txt"), os.path.join(sample, "valid.title.filter.txt")),
        "test": (os.path.join(giga, "test.src"), os.path.join(giga, "test.tgt")),
    }


def data_files(args):
    """(folder, {path: where to get it}, parallel groups): every raw file this recipe reads."""
    groups = list(sources(args).values())
    return args.sumdata or args.data_dir, {path: URL for group in groups for path in group}, groups


def main(argv=None):
    args = parse_args(argv)
    out = common.out_folder(args.out)
    recipe = common.prepared(out, args, "Gigaword")
    if recipe is not None:
        return recipe
    files = sources(args)
    log("reading Gigaword from {}".format(os.path.dirname(files["test"][0])))
    raw = common.RawData(*data_files(args))
    read_pairs = lambda a, b: list(zip(raw.lines(a), raw.lines(b)))  # noqa: E731
    train = read_pairs(*files["train"])
    # an empty side cannot be trained on (harvardnlp's train has none; be safe with other copies)
    train = [(a, b) for a, b in train if a and b]
    common.note_sample(args, len(train))
    train = [train[i] for i in common.sample_indices(len(train), args.max_sentences, args.seed)]
    valid = read_pairs(*files["valid"])[: args.max_valid]
    valid = valid[: args.max_eval] if args.max_eval else valid
    test = read_pairs(*files["test"])
    test = test[: args.max_eval] if args.max_eval else test
    splits = {"train": train, "valid": valid, "validdec": valid[: args.valid_decode], "test": test}
    text_dir = os.path.join(out, "text")
    for name, pairs in splits.items():
        write_lines(os.path.join(text_dir, "{}.{}".format(name, SRC)), (a for a, _ in pairs))
        write_lines(os.path.join(text_dir, "{}.{}".format(name, TGT)), (b for _, b in pairs))
    mean_len = sum(len(b.split()) for _, b in train) / max(1, len(train))
    stats = {"train_pairs": len(train), "valid_pairs": len(valid), "valid_decoded": len(splits["validdec"]),
             "test_pairs": len(test), "train_title_mean_words": round(mean_len, 2),
             "test_sources_just_UNK": sum(a.strip() == "UNK" for a, _ in test)}
    log("train {train_pairs}, valid {valid_pairs} ({valid_decoded} decoded per epoch), test {test_pairs} pairs; "
        "mean training headline {train_title_mean_words} words".format(**stats))
    variants = common.build_variants(out, text_dir, SRC, TGT, PREFIXES, args.variants.split(","),
                                     threshold=args.threshold, spm_vocab=args.spm_vocab, workers=args.workers,
                                     small=bool(args.max_sentences))
    vocab_sizes.record_built(out, variants, args, SRC)
    recipe = {
        "task": "summarization", "dataset": "gigaword", "src": SRC, "tgt": TGT,
        "data_dir": os.path.abspath(args.sumdata or args.data_dir), "options": common.recorded_options(args),
        "variants": variants, "stats": stats,
        "tiny": bool(args.max_sentences or args.max_eval),
        "lead_n": sorted({int(round(mean_len)), 10}),
        "valid": {"subset": "valid1", "orig": "text/validdec." + SRC, "refs": ["text/validdec." + TGT],
                  "metric": "rougeL", "metrics": "rouge1,rouge2,rougeL"},
        "tests": {"gigaword": {"subset": "test", "orig": "text/test." + SRC, "refs": ["text/test." + TGT],
                               "metrics": "rouge1,rouge2,rougeL,stats", "table": ["rouge1", "rouge2", "rougeL"]}},
        "main_test": "gigaword",
    }
    return common.write_recipe(out, recipe)


def cli_main():
    common.main_wrapper(main)


if __name__ == "__main__":
    cli_main()
