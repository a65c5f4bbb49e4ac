"""IWSLT'14 German -> English, fairseq's standard split (``examples/translation/prepare-iwslt14.sh``) in Python.

    # full recipe, for users with the training data (de-en.tgz unpacked: train.tags.de-en.{de,en}, *.xml)
    python -m preprocess.prepare_iwslt14 --raw path/to/de-en --out work_dirs/iwslt14
    # what the staged data here allow: the recipe's BPE + binarization on the tokenized valid/test files
    python -m preprocess.prepare_iwslt14 --data-dir ../shared/data --out work_dirs/iwslt14-staged

Full recipe (``--raw DIR``), step by step as prepare-iwslt14.sh:
1. ``train.tags.de-en.{de,en}``: drop lines with ``<url>``, ``<talkid>``, ``<keywords>``; strip
   ``<title>``/``<description>`` tags; Moses-tokenize (sacremoses, ``-l de``/``-l en``).
2. clean-corpus-n: keep pairs of 1-175 tokens with length ratio <= 1.5; lowercase.
3. dev/test: the ``<seg>`` lines of ``IWSLT14.TED.dev2010``, ``IWSLT14.TEDX.dev2012``,
   ``IWSLT14.TED.tst2010/2011/2012`` (``*.de-en.{de,en}.xml``), ``’`` -> ``'``, tokenized, lowercased.
4. valid = every 23rd training pair, train = the rest; test = the five dev/test sets concatenated.
5. joint BPE with subword-nmt, 10,000 merges learned on train.de + train.en, applied everywhere
   (``--bpe-codes FILE`` applies given codes instead, e.g. the staged ``bpe10k/code``).
6. fairseq-preprocess --joined-dictionary (one dictionary: wean_lstm and core_copy share one
   embedding matrix; fairseq's own recipe keeps two).

Staged mode (no ``--raw``): ``DATA/translation/iwslt14_deen/tok/{valid,test}.{de,en}`` are the
output of steps 1-4 (train is missing) and ``bpe10k/code`` the codes of step 5; the recipe applies
step 5 and checks the result against the staged ``bpe10k/{valid,test}.*`` (byte-identical), then
binarizes with the *validation* set standing in for training data, which checks the pipeline
but is no experiment (``recipe.json``: ``"smoke_test_only": true``).

Official data: https://wit3.fbk.eu/2014-01 (IWSLT 2014 TED, de-en.tgz; fairseq's mirror
http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz).
"""
import os
import re

from preprocess import common, vocab_sizes
from preprocess.common import RecipeError, log, read_lines, write_lines

URL = "http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz (https://wit3.fbk.eu/2014-01)"
SRC, TGT = "de", "en"
TEST_SETS = ["IWSLT14.TED.dev2010", "IWSLT14.TEDX.dev2012", "IWSLT14.TED.tst2010", "IWSLT14.TED.tst2011",
             "IWSLT14.TED.tst2012"]
PREFIXES = dict(train="train", valid=["valid", "validdec"], test=["test"])
VARIANTS = common.VARIANTS  # what --variants may name
SEG = re.compile(r'<seg id="[0-9]*">\s*(.*?)\s*</seg>')


def parse_args(argv=None):
    from fairseq_wean.errors import at_least

    p = common.base_parser(__doc__.split("\n")[0], default_out=os.path.join(common.REPO, "work_dirs", "iwslt14"))
    p.add_argument("--raw", help="unpacked de-en.tgz (train.tags.de-en.*, IWSLT14.*.xml): the full recipe")
    p.add_argument("--bpe-codes", help="apply these subword-nmt codes instead of learning 10,000 merges")
    p.add_argument("--bpe-merges", type=vocab_sizes.size_type(),
                   help="joint BPE merges learned without --bpe-codes (default 10000)")
    p.add_argument("--valid-decode", type=at_least(1), default=1000, help="validation pairs decoded after every epoch")
    p.add_argument("--variants", type=common.variant_list(VARIANTS),
                   default="bpe", help="vocabulary variants (default bpe)")
    args = common.parse(p, argv)
    common.data_dir_or(p, args, "--raw")
    return common.apply_tiny(common.check_variant_options(p, args), max_sentences=300, max_eval=12)


def data_files(args):
    """(folder, {path: where to get it}, parallel groups): every raw file this recipe reads (--bpe-codes, a
    file the user names, is read in main)."""
    if args.raw:
        names = ["train.tags.de-en." + lang for lang in (SRC, TGT)]
        names += ["{}.de-en.{}.xml".format(name, lang) for name in TEST_SETS for lang in (SRC, TGT)]
        return args.raw, {os.path.join(args.raw, n): URL for n in names}, ()
    d = os.path.join(args.data_dir, "translation", "iwslt14_deen")
    staged = "bpe" in args.variants.split(",") and os.path.isdir(os.path.join(d, "bpe10k"))  # check_against_staged
    groups = [tuple(os.path.join(d, sub, "{}.{}".format(name, lang)) for sub in ("tok", "bpe10k")[:1 + staged]
                    for lang in (SRC, TGT)) for name in ("valid", "test")]
    files = {path: URL for group in groups for path in group}
    if not args.bpe_codes:
        files[os.path.join(d, "bpe10k", "code")] = URL
    return args.data_dir, files, groups


class Tokenizer:
    """tokenizer.perl -l LANG | lowercase.perl, via sacremoses (no XML escaping)."""

    def __init__(self, lang):
        from sacremoses import MosesTokenizer

        self.tok = MosesTokenizer(lang=lang)

    def __call__(self, line):
        return self.tok.tokenize(line.strip(), escape=False, return_str=True)


def clean_train_line(line):
    """prepare-iwslt14.sh's filter on train.tags: None for metadata lines, else the text without tags."""
    if any(tag in line for tag in ("<url>", "<talkid>", "<keywords>")):
        return None
    for tag in ("<title>", "</title>", "<description>", "</description>"):
        line = line.replace(tag, "")
    return line


def clean_corpus(pairs, min_len=1, max_len=175, ratio=1.5):
    """clean-corpus-n.perl -ratio 1.5 ... 1 175 on tokenized pairs."""
    kept = []
    for a, b in pairs:
        la, lb = len(a.split()), len(b.split())
        if min_len <= la <= max_len and min_len <= lb <= max_len and la <= ratio * lb and lb <= ratio * la:
            kept.append((a, b))
    return kept


def xml_segments(lines):
    return [m.group(1).replace("\u2019", "'") for m in (SEG.search(l) for l in lines) if m]


def full_recipe(args, data):
    raw = args.raw
    tok = {lang: Tokenizer(lang) for lang in (SRC, TGT)}
    sides = {}
    for lang in (SRC, TGT):
        lines = data.lines(os.path.join(raw, "train.tags.de-en." + lang), strip=False)
        kept = [clean_train_line(l) for l in lines]
        sides[lang] = [k for k in kept if k is not None]
        log("tokenizing train.tags.de-en.{} ({} lines)".format(lang, len(sides[lang])))
        sides[lang] = [tok[lang](l) for l in sides[lang]]
    if len(sides[SRC]) != len(sides[TGT]):
        raise RecipeError("train.tags.de-en: {} German vs {} English lines after filtering".format(
            len(sides[SRC]), len(sides[TGT])))
    pairs = [(a.lower(), b.lower()) for a, b in clean_corpus(list(zip(sides[SRC], sides[TGT])))]
    valid = [p for i, p in enumerate(pairs, 1) if i % 23 == 0]
    train = [p for i, p in enumerate(pairs, 1) if i % 23 != 0]
    test = []
    for name in TEST_SETS:
        de = xml_segments(data.lines(os.path.join(raw, "{}.de-en.de.xml".format(name)), strip=False))
        en = xml_segments(data.lines(os.path.join(raw, "{}.de-en.en.xml".format(name)), strip=False))
        if len(de) != len(en):
            raise RecipeError("{}: {} German vs {} English segments".format(name, len(de), len(en)))
        test += [(tok[SRC](a).lower(), tok[TGT](b).lower()) for a, b in zip(de, en)]
    return train, valid, test, False


def staged_recipe(args, data):
    d = os.path.join(args.data_dir, "translation", "iwslt14_deen", "tok")
    split = {name: list(zip(data.lines(os.path.join(d, name + "." + SRC)), data.lines(os.path.join(d, name + "." + TGT))))
             for name in ("valid", "test")}
    log("staged IWSLT'14 (no training data): the validation set stands in for training data (smoke test only)")
    return split["valid"], split["valid"], split["test"], True


def check_against_staged(args, out, variants, data):
    """Staged mode: our BPE'd valid/test lines must equal the staged fairseq output byte for byte.

    Returns {file: [identical lines, lines compared]} (with --max-eval: the first lines only).
    """
    d = os.path.join(args.data_dir, "translation", "iwslt14_deen", "bpe10k")
    if "bpe" not in variants or os.path.join(d, "valid." + SRC) not in data.files:
        return None
    ours = os.path.join(out, variants["bpe"]["text"])
    report = {}
    for name in ("valid", "test"):
        for lang in (SRC, TGT):
            a = read_lines(os.path.join(ours, "{}.{}".format(name, lang)))
            b = data.lines(os.path.join(d, "{}.{}".format(name, lang)))[: len(a)]
            report["{}.{}".format(name, lang)] = [sum(x == y for x, y in zip(a, b)), len(a)]
    for k, (same, n) in sorted(report.items()):
        log("BPE check against the staged fairseq output {}: {} of {} lines identical".format(k, same, n))
    return report


def main(argv=None):
    args = parse_args(argv)
    out = common.out_folder(args.out)
    recipe = common.prepared(out, args, "IWSLT'14")
    if recipe is not None:
        return recipe
    if args.bpe_codes:  # a file the user named, checked before any work as the staged codes are
        codes = common.check_bpe_codes(common.read_complete_lines(args.bpe_codes, what="--bpe-codes"), args.bpe_codes)
    data = common.RawData(*data_files(args))
    staged_codes = os.path.join(args.data_dir or "", "translation", "iwslt14_deen", "bpe10k", "code")
    if not args.bpe_codes:  # learned in the full recipe (--raw), the staged codes here
        codes = common.check_bpe_codes(data.lines(staged_codes, False), staged_codes, "data file") \
            if staged_codes in data.files else None
    text_dir = os.path.join(out, "text")
    if args.raw:
        train, valid, test, smoke = full_recipe(args, data)
    else:
        train, valid, test, smoke = staged_recipe(args, data)
    common.note_sample(args, len(train))
    train = [train[i] for i in common.sample_indices(len(train), args.max_sentences, args.seed)]
    if args.max_eval:
        valid, test = valid[: args.max_eval], test[: args.max_eval]
    splits = {"train": train, "valid": valid, "validdec": valid[: args.valid_decode], "test": test}
    for name, pairs in splits.items():
        write_lines(os.path.join(text_dir, "{}.{}".format(name, SRC)), (a for a, _ in pairs))
        write_lines(os.path.join(text_dir, "{}.{}".format(name, TGT)), (b for _, b in pairs))
    stats = {k + "_pairs": len(v) for k, v in splits.items()}
    log("train {train_pairs}, valid {valid_pairs}, test {test_pairs} pairs".format(**stats))
    variants = common.build_variants(out, text_dir, SRC, TGT, PREFIXES, args.variants.split(","),
                                     bpe_codes=codes, bpe_merges=args.bpe_merges, workers=args.workers,
                                     small=bool(args.max_sentences))
    vocab_sizes.record_built(out, variants, args, SRC)
    recipe = {
        "task": "translation", "dataset": "iwslt14", "src": SRC, "tgt": TGT, "smoke_test_only": smoke,
        "data_dir": os.path.abspath(args.raw or args.data_dir), "options": common.recorded_options(args), "variants": variants, "stats": stats,
        "tiny": bool(args.max_sentences or args.max_eval),
        "valid": {"subset": "valid1", "orig": "text/validdec." + SRC, "refs": ["text/validdec." + TGT],
                  "metric": "bleu", "metrics": "bleu"},
        "tests": {"iwslt14": {"subset": "test", "orig": "text/test." + SRC, "refs": ["text/test." + TGT],
                              "metrics": "bleu,stats", "table": ["bleu"],
                               # tokenized, lowercased text: multi-bleu's convention, as the literature
                               # reports it (13a would also split every <unk> into "< unk >")
                               "score_args": ["--bleu-tokenize", "none"]}},
        "main_test": "iwslt14",
    }
    if smoke:
        recipe["staged_bpe_check"] = check_against_staged(args, out, variants, data)
    return common.write_recipe(out, recipe)


def cli_main():
    common.main_wrapper(main)


if __name__ == "__main__":
    cli_main()
