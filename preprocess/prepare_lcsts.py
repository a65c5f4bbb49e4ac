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

from preprocess import common, vocab_sizes
from preprocess.common import log, read_lines, write_lines

URL = "http://icrc.hitsz.edu.cn/Article/show/139.html (LCSTS, research agreement)"
SRC, TGT = "short_text", "summary"
VARIANTS = ("word",)  # what --variants may name: characters, the only vocabulary this recipe builds
DOC = re.compile(r"<doc id=(\d+)>(.*?)</doc>", re.S)
FIELD = {name: re.compile(r"<{0}>(.*?)</{0}>".format(name), re.S) for name in ("human_label", "summary", "short_text")}


def _unclosed(path, text, pos):
    return common.RecipeError("{} line {}: text outside a whole <doc> ... </doc> record (a record not closed: the "
                              "file looks cut or malformed)".format(path, text.count("\n", 0, pos) + 1))


def parse_part(text, path, labelled):
    """[(id, label or None, summary, short_text)] of the text of an LCSTS PART file. Every record must be
    whole (``<doc id=N>`` ... ``</doc>``, nothing else between records: a file cut inside a record is refused,
    not shortened) with its ``<summary>`` and ``<short_text>``; ``labelled`` (PART II, III): with its
    ``<human_label>``, a score from 1 to 5."""
    docs, end = [], 0
    for m in DOC.finditer(text):
        body, gap = m.group(2), text[end:m.start()]
        if gap.strip() or "<doc" in body:
            raise _unclosed(path, text, end + len(gap) - len(gap.lstrip()) if gap.strip()
                            else m.start(2) + body.index("<doc"))
        end = m.end()
        fields = {k: (r.search(body).group(1).strip() if r.search(body) else None) for k, r in FIELD.items()}
        if fields["summary"] is None or fields["short_text"] is None:
            raise common.RecipeError("{}: doc {} lacks <summary> or <short_text>".format(path, m.group(1)))
        label = fields["human_label"]
        if labelled and label not in ("1", "2", "3", "4", "5"):
            raise common.RecipeError("{}: doc {} has {} (PART II and III records are scored 1 to 5)".format(
                path, m.group(1), "no <human_label>" if label is None else "<human_label> {!r}".format(label)))
        docs.append((int(m.group(1)), int(label) if label else None, fields["summary"], fields["short_text"]))
    if text[end:].strip():
        raise _unclosed(path, text, end + len(text[end:]) - len(text[end:].lstrip()))
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
    p.add_argument("--vocab", type=vocab_sizes.size_type(), default=4000, help="characters in the dictionary (WEAN: 4000)")
    p.add_argument("--valid-decode", type=at_least(1), default=500, help="validation pairs decoded after every epoch")
    p.add_argument("--variants", type=common.variant_list(VARIANTS),
                   default="word", help="'word' (= characters here; the only variant)")
    return common.apply_tiny(common.parse(p, argv), max_sentences=300, max_eval=12)


# options that act only on the training data (PART I): refused when given without PART_I.txt. Every other
# option acts on the test set too, but --seed and --variants, named by drivers such as the comparison runner
# for every dataset: --seed is then said to choose nothing (common.note_sample), --variants names the one variant.
NEEDS_TRAIN = ("--vocab", "--valid-decode", "--max-sentences", "--workers")
WITHOUT_TRAIN = ("--data-dir", "--out", "--force", "--tiny", "--max-eval", "--min-score", "--seed", "--variants")


def data_files(args):
    """(folder, {path: where to get it}, parallel groups): every raw file this recipe reads."""
    d = os.path.join(args.data_dir, "summarization", "lcsts")
    names = ["PART_III.txt"] + (["PART_I.txt", "PART_II.txt"] if os.path.lexists(os.path.join(d, "PART_I.txt")) else [])
    return args.data_dir, {os.path.join(d, name): URL for name in names}, ()


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
    recipe = common.prepared(out, args, "LCSTS")
    if recipe is not None:
        return recipe
    folder, files, _ = data_files(args)
    has_train = len(files) > 1
    unused = [o for o in NEEDS_TRAIN if o in args.given_options]
    if unused and not has_train:
        raise common.RecipeError("{} act(s) on the training data (PART I), and {} has no PART_I.txt: drop {}".format(
            "/".join(unused), os.path.dirname(next(iter(files))), " ".join(unused)))
    raw = common.RawData(folder, files)
    part = {os.path.basename(path)[:-4]: (path, raw.lines(path, strip=False)) for path in files}
    parsed = {name: parse_part("\n".join(lines), path, name != "PART_I") for name, (path, lines) in part.items()}
    test = [x for x in parsed["PART_III"] if x[1] >= args.min_score]
    test = test[: args.max_eval] if args.max_eval else test
    splits = {"test": test}
    if has_train:
        train = parsed["PART_I"]
        common.note_sample(args, len(train))
        splits["train"] = [train[i] for i in common.sample_indices(len(train), args.max_sentences, args.seed)]
        valid = [x for x in parsed["PART_II"] if x[1] >= args.min_score]
        splits["valid"] = valid[: args.max_eval] if args.max_eval else valid
        splits["validdec"] = splits["valid"][: args.valid_decode]
    elif "--seed" in args.given_options:
        log("--seed {} chose nothing: no training data (PART I), no sample is drawn".format(args.seed))
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
    vocab_sizes.record_built(out, variants, args, SRC)
    lead_n = sorted({int(round(stats["test_summary_mean_chars"])), 20})
    rows = lead_table(out, text_dir, lead_n)
    for n, s in rows:
        log("LEAD-{} characters: character ROUGE-1/2/L F1 {:.2f} / {:.2f} / {:.2f}".format(
            n, s["rouge1"], s["rouge2"], s["rougeL"]))
    rouge = {"metrics": "rouge1,rouge2,rougeL", "score_args": ["--rouge-chars"]}
    recipe = {
        "task": "summarization", "dataset": "lcsts", "src": SRC, "tgt": TGT, "trainable": has_train,
        "data_dir": os.path.abspath(args.data_dir), "options": common.recorded_options(args), "variants": variants, "stats": stats,
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
