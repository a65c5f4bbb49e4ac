"""fairseq-wean-score: BLEU, SARI, FKGL, ROUGE and output statistics of a system output.

    fairseq-wean-score --sys FILE --orig FILE --refs FILE [FILE ...] --metrics LIST
                       [--sari-mode {default,legacy,paper}] [--json] [--compare-to FILE]
                       [--hyp-lines {auto,H,D}] [--post-process NAME]

``--sys`` (and ``--compare-to``) is a plain output file (one sentence per line) or a
fairseq-generate log, recognised by its ``H-<id>`` lines: hypotheses are put back in sentence-id
order (the best of an n-best list; its ``D-`` line where the log was decoded with ``--bpe`` or
``--tokenizer``, ``--hyp-lines`` chooses). Text that still holds subword pieces is refused
(``--post-process`` removes them from every input: docs/tools.md, "What is scored"). If ``--orig`` or ``--refs``
is left out for a log, the log's ``S-`` / ``T-`` lines are used (these are fairseq's view of the
data, e.g. with ``<unk>``; pass the raw files for official numbers).

Every input may be a file, a named pipe, ``/dev/stdin`` or ``-`` (read once each); a leading
byte-order mark is dropped (:mod:`fairseq_wean.textio`). Problems with the input (missing file,
different line counts, empty inputs, missing sentence ids in a log, two logs concatenated into
one) end with one line ``fairseq-wean-score: error: ...`` on stderr and exit status 1.

The scores come from the library API (:func:`fairseq_wean.scoring.score`; ``--json`` prints
exactly its dict): programs should call that rather than this command's ``main``.
"""
import argparse
import json
import os

from fairseq_wean import textio
from fairseq_wean.cli import options
from fairseq_wean.errors import FairseqWeanError, at_least, run_cli
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import sari as sari_lib
from fairseq_wean.scoring import scores
from fairseq_wean.scoring.inputs import (
    add_text_options,
    check_distinct_roles,
    check_line_counts,
    check_log_matches_inputs,
    read_sources_and_references,
    read_system,
    sources_and_references_from_log,
    words_only,
)
from fairseq_wean.scoring.scores import parse_metrics

PROG = "fairseq-wean-score"
_NAMES = {"bleu": "BLEU", "chrf": "chrF", "ter": "TER", "sari": "SARI", "fkgl": "FKGL", "rouge1": "ROUGE-1 F1",
          "rouge2": "ROUGE-2 F1", "rougeL": "ROUGE-L F1"}


def get_parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Score a system output (plain file or fairseq-generate log): BLEU, chrF, TER, SARI, FKGL, "
                    "ROUGE, output statistics, paired-bootstrap p-values.",
        epilog="BLEU here is sacrebleu's corpus BLEU on the text as given. fairseq-generate's own 'BLEU4' line "
               "scores token ids of the binarized hypotheses against the binarized references (<unk> in both, "
               "no tokenization), so it differs from this on the same output.")
    p.add_argument("--sys", required=True, metavar="FILE", help="system output, or a fairseq-generate log")
    p.add_argument("--orig", metavar="FILE", help="source sentences (needed by sari and stats)")
    p.add_argument("--refs", nargs="+", metavar="FILE", help="reference file(s), line-aligned with --orig")
    p.add_argument("--metrics", required=True, type=parse_metrics,
                   help="comma list of " + ",".join(M.METRICS))
    p.add_argument("--sari-mode", choices=sari_lib.MODES, default="default",
                   help="default: EASSE corpus_sari (lowercase + 13a everywhere); legacy: EASSE legacy=True "
                        "(reproduces published TurkCorpus numbers); paper: the paper's micro-averaged equations")
    p.add_argument("--bleu-tokenize", default=M.BLEU_TOKENIZE, metavar="TOK", type=M.bleu_tokenize_option,
                   help="sacrebleu's BLEU tokenization: 13a (default) for detokenized text; none for text that is "
                        "already tokenized (multi-bleu.perl's convention, e.g. Multi30k's tokenized lowercased text: "
                        "13a would split every <unk> into '< unk >'); others: intl, char, zh, ja-mecab, ...")
    add_text_options(p)
    p.add_argument("--name", metavar="LABEL", help="--sys's label in the output (default: its file name)")
    p.add_argument("--compare-name", metavar="LABEL", help="--compare-to's label (default: its file name)")
    p.add_argument("--rouge-chars", action="store_true", help="ROUGE on characters (Chinese)")
    p.add_argument("--rouge-no-stemmer", action="store_true", help="no Porter stemming for ROUGE")
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by metric name")
    p.add_argument("--compare-to", metavar="FILE",
                   help="another system's output (or log): adds its scores and paired-bootstrap p-values")
    p.add_argument("--bootstrap-samples", type=at_least(1, high=M.MAX_BOOTSTRAP_SAMPLES), default=None,
                   help=argparse.SUPPRESS)
    return options.once(p)


# the options that change the result in every combination (every other option is in options.NEEDS;
# --orig and --refs there too: given to a metric that reads neither, e.g. fkgl, they change nothing)
ALWAYS = ("--sys", "--metrics", "--post-process", "--json", "--compare-to")


def check_options(parser, args):
    """Before reading anything: no option without effect (options.NEEDS), no file named twice."""
    options.check_effective(parser, args, always=ALWAYS)
    scores.check_rouge_options(args.rouge_chars, not args.rouge_no_stemmer, "--rouge-chars", "--rouge-no-stemmer")
    options.check_labels([("--name", args.name), ("--compare-name", args.compare_name)])  # every tool's label rule
    # a file named twice in --refs, or by two roles (--compare-to = --sys, --refs = --sys): the one rule
    check_distinct_roles({"--sys": args.sys, "--compare-to": args.compare_to, "--orig": args.orig,
                          "--refs": args.refs})


def _read_inputs(args):
    given = [args.sys, args.orig, args.compare_to] + list(args.refs or [])
    stdin = [p for p in given if p in textio.STDIN_NAMES]
    if len(stdin) > 1:
        raise FairseqWeanError("standard input ({}) is given {} times: it can be read only once; give the other "
                               "inputs as files".format(" and ".join(stdin), len(stdin)))
    orig, refs, n = read_sources_and_references(args.orig, args.refs)
    sys_sents, log = read_system(args.sys, "--sys", n, args.hyp_lines)
    if n is None:
        n = len(sys_sents)
    orig, refs = sources_and_references_from_log(orig, refs, log, n)

    need_orig = [m for m in args.metrics if m in scores.NEEDS_SOURCES]
    need_refs = [m for m in args.metrics if m in scores.NEEDS_REFERENCES]
    if need_orig and orig is None:
        raise FairseqWeanError("--orig FILE (the source sentences) is required for {}".format(", ".join(need_orig)))
    if need_refs and refs is None:
        raise FairseqWeanError("--refs FILE [FILE ...] is required for {}".format(", ".join(need_refs)))

    counts = check_line_counts([(args.sys, sys_sents)], orig, args.orig, refs, args.refs)
    if n == 0:
        raise FairseqWeanError(
            "nothing to score: {} {}: give the files of a test set with at least one sentence".format(
                ", ".join(name for name, _ in counts), "is empty" if len(counts) == 1 else "are empty"))

    other, other_log = None, None
    if args.compare_to:
        other, other_log = read_system(args.compare_to, "--compare-to", n, args.hyp_lines)
        if len(other) != n:
            raise FairseqWeanError(
                "--compare-to {} has {} lines but --sys has {}: compare outputs of the same test set".format(
                    args.compare_to, len(other), n))
    systems = [(args.sys, sys_sents, log)] + ([(args.compare_to, other, other_log)] if other is not None else [])
    for _, _, system_log in systems:
        if system_log is not None:
            check_log_matches_inputs(system_log, n, orig, args.orig, refs, args.refs, first_log=log)
    return systems, orig, refs


def _load_inputs(args, parser=None):
    systems, orig, refs = _read_inputs(args)
    if parser is not None:
        options.check_effective(parser, args, logs=any(log is not None for _, _, log in systems), always=ALWAYS)
    texts, orig, refs = words_only(systems, orig, args.orig, refs, args.refs, args.post_process)
    return texts[0], orig, refs, (texts[1] if len(texts) > 1 else None)


def _format_stats(s):
    text = "avg_len {:.2f}, unk {:.2f}%, copy {:.2f}%, exact copy {:.2f}%".format(
        s["avg_len"], s["unk_pct"], s["copy_pct"], s["exact_copy_pct"])
    if "invented_pct" in s:
        text += ", invented {:.2f}% of words ({:.2f}% of sentences)".format(s["invented_pct"], s["invented_sent_pct"])
    return text


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    check_options(parser, args)
    sys_sents, orig, refs, other = _load_inputs(args, parser)
    result, corpus = scores.score_with_statistics(
        sys_sents, sources=orig, references=refs, metrics=args.metrics, sari_mode=args.sari_mode,
        rouge_chars=args.rouge_chars, rouge_stemmer=not args.rouge_no_stemmer, compare_to=other,
        bootstrap_samples=args.bootstrap_samples, bleu_tokenize=args.bleu_tokenize)
    if other is not None:
        result["compare_to"]["file"] = args.compare_to

    if args.json:
        print(json.dumps(result, sort_keys=False))
        return result
    extra = {}
    if "sari" in args.metrics:
        add, keep, dele = scores.sari_operation_scores(corpus, args.sari_mode)
        extra["sari"] = " (add {:.2f} keep {:.2f} del {:.2f}; {} mode)".format(add, keep, dele, args.sari_mode)
    if "bleu" in args.metrics:
        extra["bleu"] = " (sacrebleu, tokenize {})".format(args.bleu_tokenize)
    name = args.name or os.path.basename(args.sys)
    other_name = args.compare_name or (os.path.basename(args.compare_to) if args.compare_to else None)
    print("{}: {} sentences ({}), {} reference(s) ({})".format(
        name, len(sys_sents), args.sys, len(refs) if refs else 0,
        ", ".join(args.refs) if args.refs else ("the log's T- lines" if refs else "none")))
    for m in args.metrics:
        if m == "stats":
            line = "stats: " + _format_stats(result[m])
            if other is not None:
                line += "  | {}: ".format(other_name) + _format_stats(result["compare_to"][m])
        else:
            line = "{:<11} {:7.2f}{}".format(_NAMES[m], result[m], extra.get(m, ""))
            if other is not None:
                line += "  | {} {:7.2f}, paired bootstrap p = {:.4f}".format(
                    other_name, result["compare_to"][m], result["p_values"][m])
        print(line)
    if other is not None:
        print("{} = {}; p: two-sided paired bootstrap, {} resamples, seed {}".format(
            other_name, args.compare_to, args.bootstrap_samples or M.BOOTSTRAP_SAMPLES, M.BOOTSTRAP_SEED))
    return result


def cli_main(argv=None):
    run_cli(main, PROG, argv)


if __name__ == "__main__":
    cli_main()
