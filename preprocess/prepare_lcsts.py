"""LCSTS (Hu et al. 2015): character-level preprocessing and character ROUGE on PART III.

Paper: Hu, Chen and Zhu, "LCSTS: A Large Scale Chinese Short Text Summarization Dataset"
(EMNLP 2015, ACL Anthology D15-1229, arXiv:1506.05865).

    python -m preprocess.prepare_lcsts --data-dir ../shared/data --out work_dirs/lcsts

Reads ``DATA/summarization/lcsts/PART_{I,II,III}.txt`` (the original release: ``<doc id=N>``
records with ``<summary>``, ``<short_text>`` and, in PART II/III, ``<human_label>``). As in Hu et
al. and WEAN, PART II and PART III keep the pairs with a human score >= 3 (PART III: 725 pairs,
the standard test set) and the text is modelled by character: every non-space character is a
token (``text/*.{short_text,summary}``, characters separated by spaces).

Without PART I (the 2.4M training pairs; not available here) the recipe writes the test set and
scores LEAD-N baselines (first N characters of the text) with character ROUGE-1/2/L F1
(``fairseq-wean-score --rouge-chars``): ``OUT/lead.md``. With PART I and PART II it also binarizes
them (``OUT/word``: joined character dictionary of the ``--vocab`` = 4,000 most frequent
characters, WEAN's LCSTS setting), so the comparison runs unchanged:
``python examples/compare.py summarization --dataset lcsts`` (or train ``--arch wean_lstm_lcsts``).

Official source (research agreement): http://icrc.hitsz.edu.cn/Article/show/139.html
"""
import os
import re

from preprocess import common
from preprocess.common import log, read_lines, write_lines

URL = "http://icrc.hitsz.edu.cn/Article/show/139.html (LCSTS, research agreement)"
SRC, TGT = "short_text", "summary"
VARIANTS = ("word",)  # what --variants may name: characters, the only vocabulary this recipe builds
DOC = re.compile(r"<doc id=(\d+)>(.*?)</doc>", re.S)
FIELD = {name: re.compile(r"<{0}>(.*?)</{0}>".format(name), re.S) for name in ("human_label", "summary", "short_text")}


def parse_part(path):
    """[(id, label or None, summary, short_text)] of an LCSTS PART file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    docs = []
    for m in DOC.finditer(text):
        body = m.group(2)
        fields = {k: (r.search(body).group(1).strip() if r.search(body) else None) for k, r in FIELD.items()}
        if fields["summary"] is None or fields["short_text"] is None:
            raise common.RecipeError("{}: doc {} lacks <summary> or <short_text>".format(path, m.group(1)))
        label = int(fields["human_label"]) if fields["human_label"] else None
        docs.append((int(m.group(1)), label, fields["summary"], fields["short_text"]))
    if not docs:
        raise common.RecipeError("{}: no <doc> records found".format(path))
    return docs


def chars(text):
    """Character tokens: '雅虎 2014年' -> '雅 虎 2 0 1 4 年' (whitespace dropped)."""
    return " ".join(ch for ch in text if not ch.isspace())


def parse_args(argv=None):
    from fairseq_wean.errors import at_least

    p = common.base_parser(__doc__.split("\n")[0], default_out=os.path.join(common.REPO, "work_dirs", "lcsts"))
    p.add_argument("--min-score", type=at_least(1, high=5), default=3,
                   help="keep PART II/III pairs with human score >= this (scores are 1 to 5)")
    p.add_argument("--vocab", type=at_least(1), default=4000, help="characters in the dictionary (WEAN: 4000)")
    p.add_argument("--valid-decode", type=at_least(1), default=500, help="validation pairs decoded after every epoch")
    p.add_argument("--variants", type=common.variant_list(VARIANTS),
                   default="word", help="'word' (= characters here; the only variant)")
    return common.apply_tiny(p.parse_args(argv), max_sentences=300, max_eval=12)


def lead_table(out, text_dir, n_values):
    """Character ROUGE of LEAD-N on the test set (``fairseq_wean.scoring.score``, as fairseq-wean-score
    --rouge-chars computes it)."""
    from fairseq_wean.scoring import score

    rows = []
    src = read_lines(os.path.join(text_dir, "test." + SRC))
    ref = read_lines(os.path.join(text_dir, "test." + TGT))
    for n in n_values:
        path = os.path.join(out, "lead{}.test.txt".format(n))
        lead = [" ".join(l.split()[:n]) for l in src]
        write_lines(path, lead)
        s = score(lead, sources=src, references=[ref], metrics=("rouge1", "rouge2", "rougeL"), rouge_chars=True)
        rows.append((n, s))
    lines = ["| system | R-1 | R-2 | R-L |", "|---|---|---|---|"]
    lines += ["| LEAD-{} (characters) | {:.2f} | {:.2f} | {:.2f} |".format(n, s["rouge1"], s["rouge2"], s["rougeL"])
              for n, s in rows]
    from fairseq_wean.textio import atomic_output

    with atomic_output(os.path.join(out, "lead.md"), (), "lead.md") as f:
        f.write("LCSTS PART III (score >= 3), character ROUGE F1 (fairseq-wean-score --rouge-chars)\n\n")
        f.write("\n".join(lines) + "\n")
    return rows


def main(argv=None):
    args = parse_args(argv)
    out = common.out_folder(args.out)
    if common.done(out) and not args.force:
        log("LCSTS data already prepared in {} (--force to redo)".format(out))
        return common.load_recipe(out)
    d = os.path.join(args.data_dir, "summarization", "lcsts")
    test = [x for x in parse_part(common.require(os.path.join(d, "PART_III.txt"), URL)) if x[1] >= args.min_score]
    test = test[: args.max_eval] if args.max_eval else test
    splits = {"test": test}
    has_train = os.path.exists(os.path.join(d, "PART_I.txt"))
    if has_train:
        train = parse_part(os.path.join(d, "PART_I.txt"))
        splits["train"] = [train[i] for i in common.sample_indices(len(train), args.max_sentences, args.seed)]
        valid = [x for x in parse_part(common.require(os.path.join(d, "PART_II.txt"), URL))
                 if x[1] is None or x[1] >= args.min_score]
        splits["valid"] = valid[: args.max_eval] if args.max_eval else valid
        splits["validdec"] = splits["valid"][: args.valid_decode]
    text_dir = os.path.join(out, "text")
    for name, docs in splits.items():
        write_lines(os.path.join(text_dir, "{}.{}".format(name, SRC)), (chars(x[3]) for x in docs))
        write_lines(os.path.join(text_dir, "{}.{}".format(name, TGT)), (chars(x[2]) for x in docs))
    stats = {name + "_pairs": len(docs) for name, docs in splits.items()}
    stats["test_summary_mean_chars"] = round(sum(len(x[2].replace(" ", "")) for x in test) / max(1, len(test)), 2)
    log("LCSTS PART III: {} test pairs with human score >= {} (mean summary {} characters); training data: {}"
        .format(len(test), args.min_score, stats["test_summary_mean_chars"], "PART I" if has_train else "none"))
    variants = {}
    if has_train:
        variants["word"] = {"bin": "word", "post_process": None, "text": "text"}
        common.fairseq_preprocess(text_dir, os.path.join(out, "word"), SRC, TGT, train="train",
                                  valid=["valid", "validdec"], test=["test"], workers=args.workers,
                                  extra=["--nwordssrc", str(args.vocab), "--nwordstgt", str(args.vocab)])
    lead_n = sorted({int(round(stats["test_summary_mean_chars"])), 20})
    rows = lead_table(out, text_dir, lead_n)
    for n, s in rows:
        log("LEAD-{} characters: character ROUGE-1/2/L F1 {:.2f} / {:.2f} / {:.2f}".format(
            n, s["rouge1"], s["rouge2"], s["rougeL"]))
    rouge = {"metrics": "rouge1,rouge2,rougeL", "score_args": ["--rouge-chars"]}
    recipe = {
        "task": "summarization", "dataset": "lcsts", "src": SRC, "tgt": TGT, "trainable": has_train,
        "data_dir": os.path.abspath(args.data_dir), "variants": variants, "stats": stats,
        "tiny": bool(args.max_sentences or args.max_eval), "lead_n": lead_n,
        "valid": dict(rouge, subset="valid1", orig="text/validdec." + SRC, refs=["text/validdec." + TGT],
                      metric="rougeL"),
        "tests": {"lcsts": dict(rouge, subset="test", orig="text/test." + SRC, refs=["text/test." + TGT],
                                metrics="rouge1,rouge2,rougeL,stats", table=["rouge1", "rouge2", "rougeL"])},
        "main_test": "lcsts",
    }
    return common.write_recipe(out, recipe, note="LEAD table: " + os.path.join(out, "lead.md"))


def cli_main():
    common.main_wrapper(main)


if __name__ == "__main__":
    cli_main()
