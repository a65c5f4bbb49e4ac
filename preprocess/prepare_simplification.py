"""Sentence simplification data: TurkCorpus + ASSET + OneStopEnglish, the fixed setting of issue 7.

    python -m preprocess.prepare_simplification --data-dir ../shared/data --out work_dirs/simplification

Everything is lowercased and tokenized like TurkCorpus (PTB-style, ``-lrb-``/``-rrb-``); ASSET
and OneStopEnglish are tokenized with sacremoses (Moses) to match.

* train: every (source, reference) pair of TurkCorpus tune (8 refs) and ASSET valid (10 refs,
  same sources as TurkCorpus tune) for the tune sources not held out for validation, plus all
  OneStopEnglish aligned pairs (adv->ele, adv->int, int->ele). Pairs whose source is a
  validation or test source are dropped (TurkCorpus is drawn from the same Wikipedia as PWKP).
* valid: 200 TurkCorpus tune sources (a fixed random sample) with all 8 references: fairseq
  subset ``valid`` holds every (source, reference) pair (validation loss), ``valid1`` each source
  once (decoded every epoch and scored with SARI against the 8 references).
* test: TurkCorpus test (359 x 8 refs; fairseq subset ``test``) and PWKP test (100 x 1 ref,
  the non-anonymised ``.ori`` files, lowercased; subset ``test1``).

Vocabulary variants (``--variants``, see ``preprocess.common.build_variants``): ``word``
(fairseq-preprocess --joined-dictionary --thresholdsrc/--thresholdtgt 2), ``word-pg`` (the same
words, rarer ones as source-position markers ``<unk-N>`` for core_copy), ``spm`` (sentencepiece
unigram, 8000 pieces, on the train text), ``char`` (characters, ``▁`` between words; the
character-level transformer of Yu, Rauniyar, Angelova and Schoneville, "Sentence Simplification
with Character-Level Transformer", project report, Master's Program in Cognitive Systems,
University of Potsdam, September 2018; code github.com/srewai/explicharr). All evaluation
references are the word-level tokenized text in ``OUT/text``.

Official sources, for users with internet (the files under ``--data-dir`` have the same names):
TurkCorpus https://github.com/cocoxu/simplification/tree/master/data/turkcorpus ;
ASSET https://github.com/facebookresearch/asset/tree/main/dataset ;
OneStopEnglish https://github.com/nishkalavallabhi/OneStopEnglishCorpus/tree/master/Sentence-Aligned ;
PWKP/WikiSmall and WikiLarge (Zhang and Lapata, "Sentence Simplification with Deep Reinforcement
Learning", EMNLP 2017, ACL Anthology D17-1062) https://github.com/XingxingZhang/dress
(mirror: https://github.com/louismartin/dress-data). With the WikiLarge training files
(``wiki.full.aner.ori.train.{src,dst}``) in ``DATA/simplification/wikilarge/``, ``--add-wikilarge``
adds them to the training data (not part of the fixed setting).
"""
import argparse
import os

from preprocess import common, vocab_sizes
from preprocess.common import RecipeError, log, write_lines

URLS = {
    "turkcorpus": "https://github.com/cocoxu/simplification/tree/master/data/turkcorpus",
    "asset": "https://github.com/facebookresearch/asset/tree/main/dataset",
    "onestopenglish": "https://github.com/nishkalavallabhi/OneStopEnglishCorpus/tree/master/Sentence-Aligned",
    "pwkp": "https://github.com/XingxingZhang/dress (mirror https://github.com/louismartin/dress-data)",
    "wikilarge": "https://github.com/XingxingZhang/dress (mirror https://github.com/louismartin/dress-data)",
}
SRC, TGT = "complex", "simple"
TURK_REFS = 8
ASSET_REFS = 10
ONESTOP_PAIRS = [("adv-ele", "adv", "ele"), ("adv-int", "adv", "int"), ("int-ele", "int", "ele")]
VARIANTS = common.VARIANTS


def parse_args(argv=None):
    from fairseq_wean.errors import at_least

    p = common.base_parser(__doc__.split("\n")[0], default_out=os.path.join(common.REPO, "work_dirs", "simplification"))
    p.add_argument("--valid-size", type=at_least(1), default=None,
                   help="TurkCorpus tune sources held out for validation (default 200; with --tiny: --max-eval)")
    p.add_argument("--variants", type=common.variant_list(VARIANTS), default="word,word-pg,spm,char",
                   help="comma list of " + ",".join(VARIANTS))
    p.add_argument("--word-threshold", type=at_least(0),
                   help="fairseq-preprocess --thresholdsrc/--thresholdtgt (default 2)")
    p.add_argument("--spm-vocab", type=vocab_sizes.size_type(), help="sentencepiece vocabulary size (default 8000)")
    p.add_argument("--add-wikilarge", action="store_true",
                   help="also train on WikiLarge train (needs wiki.full.aner.ori.train.{src,dst})")
    args = common.apply_tiny(common.check_variant_options(p, common.parse(p, argv)), max_sentences=400, max_eval=12)
    if args.valid_size is None:
        args.valid_size = args.max_eval if args.tiny else 200
    return args


def data_files(args):
    """(folder, {path: where to get it}, parallel groups): every raw file this recipe reads."""
    simp = os.path.join(args.data_dir, "simplification")
    turk, asset, ose = (os.path.join(simp, d) for d in ("turkcorpus", "asset", "onestopenglish"))
    groups = [[(os.path.join(turk, "{}.8turkers.tok.norm".format(split)), "turkcorpus")]
              + [(os.path.join(turk, "{}.8turkers.tok.turk.{}".format(split, k)), "turkcorpus") for k in range(TURK_REFS)]
              for split in ("tune", "test")]
    groups.append([(os.path.join(asset, "asset.valid." + ("orig" if k < 0 else "simp.{}".format(k))), "asset")
                   for k in range(-1, ASSET_REFS)])
    groups += [[(os.path.join(ose, "{}.{}".format(stem, level)), "onestopenglish") for level in (hi, lo)]
               for stem, hi, lo in ONESTOP_PAIRS]
    pwkp = os.path.join(simp, "wikismall_pwkp", "PWKP_108016.tag.80.aner.ori.test.")
    groups.append([(pwkp + ext, "pwkp") for ext in ("src", "dst")])
    if args.add_wikilarge:
        groups.append([(os.path.join(simp, "wikilarge", "wiki.full.aner.ori.train." + ext), "wikilarge")
                       for ext in ("src", "dst")])
    files = {path: URLS[source] for group in groups for path, source in group}
    return args.data_dir, files, [tuple(path for path, _ in group) for group in groups]


def check_valid_size(valid_size, n_tune):
    """--valid-size must leave TurkCorpus tune sources for training (all held out: no TurkCorpus/ASSET training
    pair at all); checked against the data before any work."""
    if valid_size >= n_tune:
        raise RecipeError("--valid-size {} holds out every one of the {} TurkCorpus tune sources, and with them all "
                          "TurkCorpus/ASSET training pairs: give at most {}".format(valid_size, n_tune, n_tune - 1))


def load(data_dir, add_wikilarge=False, valid_size=None):
    """All raw material, tokenized and lowercased. Returns a dict of lists."""
    simp = os.path.join(data_dir, "simplification")
    if not os.path.isdir(simp):
        raise RecipeError("no simplification data under {} (use --data-dir)".format(data_dir))
    folder, files, groups = data_files(argparse.Namespace(data_dir=data_dir, add_wikilarge=add_wikilarge))
    raw = common.RawData(folder, files, groups)
    tune, test, asset, *onestop_groups, (pwkp_src_path, pwkp_ref_path) = groups[:len(ONESTOP_PAIRS) + 4]
    if valid_size is not None:
        check_valid_size(valid_size, len(raw.lines(tune[0])))
    tok = common.MosesLowercaser()
    tune_src, tune_refs = raw.lines(tune[0]), [raw.lines(p) for p in tune[1:]]
    test_src, test_refs = raw.lines(test[0]), [raw.lines(p) for p in test[1:]]
    asset_orig = raw.lines(asset[0])
    asset_refs = [[tok(l) for l in raw.lines(p)] for p in asset[1:]]
    if len(asset_orig) != len(tune_src):
        raise RecipeError("ASSET valid ({}) and TurkCorpus tune ({}) must have the same sources, line by line"
                          .format(len(asset_orig), len(tune_src)))
    # ASSET valid sources are the TurkCorpus tune sources, line by line (verified: the Moses
    # tokenization of 1923/2000 is identical to TurkCorpus's): the pairs use TurkCorpus's
    # tokenized source, so each tune source has one spelling in train.
    same = sum(tok(a).split() == t.split() for a, t in zip(asset_orig, tune_src))
    if same < 0.8 * len(tune_src):
        raise RecipeError("ASSET valid does not look line-aligned with TurkCorpus tune ({} of {} sources match)"
                          .format(same, len(tune_src)))

    onestop = []
    for a_path, b_path in onestop_groups:
        onestop += [(tok(x), tok(y)) for x, y in zip(raw.lines(a_path), raw.lines(b_path)) if x and y]
    pwkp_src = [l.lower() for l in raw.lines(pwkp_src_path)]
    pwkp_ref = [l.lower() for l in raw.lines(pwkp_ref_path)]
    extra = []
    if add_wikilarge:
        a_path, b_path = groups[-1]
        extra = [(x.lower(), y.lower()) for x, y in zip(raw.lines(a_path), raw.lines(b_path))]
    return dict(tune_src=tune_src, tune_refs=tune_refs, test_src=test_src, test_refs=test_refs,
                asset_refs=asset_refs, onestop=onestop, pwkp_src=pwkp_src, pwkp_ref=pwkp_ref, extra=extra)


def split(raw, valid_size, seed, max_sentences=None, max_eval=None):
    """The fixed train/valid/test split. Returns (splits, stats)."""
    n_tune = len(raw["tune_src"])
    valid_ids = common.sample_indices(n_tune, valid_size, seed)
    valid_set = set(valid_ids)
    held = {raw["tune_src"][i] for i in valid_ids}
    test_turk = list(range(len(raw["test_src"])))[:max_eval]
    test_pwkp = list(range(len(raw["pwkp_src"])))[:max_eval]
    blocked = held | set(raw["test_src"]) | set(raw["pwkp_src"])

    pairs, dropped = [], 0
    for i in range(n_tune):
        if i in valid_set:
            continue
        for refs in raw["tune_refs"] + raw["asset_refs"]:
            src, ref = raw["tune_src"][i], refs[i]
            if not ref:
                continue
            if src in blocked:
                dropped += 1
                continue
            pairs.append((src, ref))
    n_turk_asset = len(pairs)
    for src, ref in raw["onestop"] + raw["extra"]:
        if src in blocked:
            dropped += 1
            continue
        pairs.append((src, ref))
    if max_sentences:
        pairs = [pairs[i] for i in common.sample_indices(len(pairs), max_sentences, seed)]

    valid_ids = valid_ids[:max_eval] if max_eval else valid_ids
    valid_pairs = [(raw["tune_src"][i], refs[i]) for i in valid_ids for refs in raw["tune_refs"]]
    splits = {
        "train": pairs,
        "valid": valid_pairs,
        "validsrc": [(raw["tune_src"][i], raw["tune_refs"][0][i]) for i in valid_ids],
        "valid_refs": [[refs[i] for i in valid_ids] for refs in raw["tune_refs"]],
        "test": [(raw["test_src"][i], raw["test_refs"][0][i]) for i in test_turk],
        "test_refs": [[refs[i] for i in test_turk] for refs in raw["test_refs"]],
        "pwkp": [(raw["pwkp_src"][i], raw["pwkp_ref"][i]) for i in test_pwkp],
    }
    stats = {
        "train_pairs": len(pairs),
        "train_pairs_turkcorpus_asset": n_turk_asset,
        "train_pairs_onestopenglish": len(raw["onestop"]),
        "train_pairs_extra": len(raw["extra"]),
        "train_pairs_dropped_overlap": dropped,
        "valid_sources": len(valid_ids),
        "valid_pairs": len(valid_pairs),
        "valid_tune_line_ids": valid_ids,
        "test_turkcorpus": len(test_turk),
        "test_pwkp": len(test_pwkp),
    }
    return splits, stats


def write_text(splits, text_dir):
    for name in ("train", "valid", "validsrc", "test", "pwkp"):
        write_lines(os.path.join(text_dir, "{}.{}".format(name, SRC)), (s for s, _ in splits[name]))
        write_lines(os.path.join(text_dir, "{}.{}".format(name, TGT)), (t for _, t in splits[name]))
    for k, refs in enumerate(splits["valid_refs"]):
        write_lines(os.path.join(text_dir, "valid.ref.{}".format(k)), refs)
    for k, refs in enumerate(splits["test_refs"]):
        write_lines(os.path.join(text_dir, "test.ref.{}".format(k)), refs)
    write_lines(os.path.join(text_dir, "pwkp.ref.0"), (t for _, t in splits["pwkp"]))


PREFIXES = dict(train="train", valid=["valid", "validsrc"], test=["test", "pwkp"])


def main(argv=None):
    args = parse_args(argv)
    out = common.out_folder(args.out)
    recipe = common.prepared(out, args, "simplification")
    if recipe is not None:
        return recipe
    log("reading TurkCorpus, ASSET, OneStopEnglish, PWKP from {}".format(args.data_dir))
    raw = load(args.data_dir, args.add_wikilarge, args.valid_size)
    splits, stats = split(raw, args.valid_size, args.seed, args.max_sentences, args.max_eval)
    text_dir = os.path.join(out, "text")
    write_text(splits, text_dir)
    log("train {train_pairs} pairs (TurkCorpus+ASSET {train_pairs_turkcorpus_asset}, OneStopEnglish "
        "{train_pairs_onestopenglish}, dropped for overlap with valid/test {train_pairs_dropped_overlap}); "
        "valid {valid_sources} sources / {valid_pairs} pairs; test TurkCorpus {test_turkcorpus}, PWKP {test_pwkp}"
        .format(**stats))
    variants = common.build_variants(out, text_dir, SRC, TGT, PREFIXES, args.variants.split(","),
                                     threshold=args.word_threshold, spm_vocab=args.spm_vocab,
                                     workers=args.workers, small=bool(args.max_sentences))
    vocab_sizes.record_built(out, variants, args, SRC)
    if "word" in variants:
        d = os.path.join(out, "word", "dict.{}.txt".format(SRC))
        stats["word_vocab"] = sum(1 for _ in open(d, encoding="utf-8")) + 4
        stats["word_unk_rate_test_src"] = round(common.unk_rate(d, os.path.join(text_dir, "test." + SRC)), 4)
        log("word vocabulary {} types; {:.1%} of TurkCorpus test source tokens are unknown".format(
            stats["word_vocab"], stats["word_unk_rate_test_src"]))
    refs = lambda stem, n: ["text/{}.ref.{}".format(stem, k) for k in range(n)]  # noqa: E731
    recipe = {
        "task": "simplification", "src": SRC, "tgt": TGT, "data_dir": os.path.abspath(args.data_dir),
        "options": common.recorded_options(args),
        "variants": variants, "stats": stats, "tiny": bool(args.max_sentences or args.max_eval),
        "valid": {"subset": "valid1", "orig": "text/validsrc." + SRC, "refs": refs("valid", TURK_REFS),
                  "metric": "sari", "metrics": "sari,bleu"},
        "main_test": "turkcorpus",
        "tests": {
            "turkcorpus": {"subset": "test", "orig": "text/test." + SRC, "refs": refs("test", TURK_REFS),
                           "metrics": "sari,bleu,fkgl,stats", "table": ["sari", "sari_legacy", "bleu", "fkgl"]},
            "pwkp": {"subset": "test1", "orig": "text/pwkp." + SRC, "refs": ["text/pwkp.ref.0"],
                     "metrics": "bleu,sari,stats", "table": ["bleu"]},
        },
    }
    return common.write_recipe(out, recipe)


def cli_main():
    common.main_wrapper(main)


if __name__ == "__main__":
    cli_main()
