"""fairseq-wean-score: BLEU, SARI, FKGL, ROUGE and output statistics of a system output.

    fairseq-wean-score --sys FILE --orig FILE --refs FILE [FILE ...] --metrics LIST
                       [--sari-mode {default,legacy,paper}] [--json] [--compare-to FILE]

``--sys`` (and ``--compare-to``) is a plain output file (one sentence per line) or a
fairseq-generate log, recognised by its ``H-<id>`` lines: hypotheses are put back in sentence-id
order (the first ``H-`` line per id, i.e. the best of an n-best list). If ``--orig`` or ``--refs``
is left out for a log, the log's ``S-`` / ``T-`` lines are used (these are fairseq's view of the
data, e.g. with ``<unk>``; pass the raw files for official numbers).

Problems with the input (missing file, different line counts, missing sentence ids in a log)
end with one line ``fairseq-wean-score: error: ...`` on stderr and exit status 1.

This interface is called by other tools (recipes, comparison runner): keep it stable.
"""
import argparse
import json
import os
import re
import sys

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import sari as sari_lib

PROG = "fairseq-wean-score"
_LOG_LINE = re.compile(r"^([HSTD])-(\d+)\t(.*)$")
_NAMES = {"bleu": "BLEU", "sari": "SARI", "fkgl": "FKGL", "rouge1": "ROUGE-1 F1", "rouge2": "ROUGE-2 F1",
          "rougeL": "ROUGE-L F1"}


def read_lines(path, what):
    if not os.path.isfile(path):
        raise FairseqWeanError("{} file not found: {}".format(what, path))
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\r\n") for line in f]
    except UnicodeDecodeError as e:
        raise FairseqWeanError(
            "{} file {} is not valid UTF-8 (byte offset {}): re-encode it as UTF-8".format(what, path, e.start)
        )


class GenerateLog:
    """The S-, T- and H- lines of a fairseq-generate log, by sentence id."""

    def __init__(self, path, lines):
        self.path = path
        self.src, self.tgt, self.hyp = {}, {}, {}
        for line in lines:
            m = _LOG_LINE.match(line)
            if not m:
                continue
            kind, sid, rest = m.group(1), int(m.group(2)), m.group(3)
            if kind == "H":
                text = rest.split("\t", 1)[1] if "\t" in rest else ""  # H-id <score> <text>
                self.hyp.setdefault(sid, text)  # n-best: keep the best (first) one
            elif kind == "S":
                self.src.setdefault(sid, rest)
            elif kind == "T":
                self.tgt.setdefault(sid, rest)

    @staticmethod
    def looks_like_log(lines):
        return any(line.startswith("H-") and _LOG_LINE.match(line) for line in lines)

    def ordered(self, table, n, what):
        missing = [i for i in range(n) if i not in table]
        extra = sorted(i for i in table if i >= n)
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + (", ..." if len(missing) > 10 else "")
            raise FairseqWeanError(
                "fairseq-generate log {} has no {} for sentence id(s) {} ({} of {} missing): generate the "
                "whole test set (no --max-sentences-style truncation, no "
                "--skip-invalid-size-inputs-valid-test) and score again".format(
                    self.path, what, shown, len(missing), n)
            )
        if extra:
            raise FairseqWeanError(
                "fairseq-generate log {} has sentence id(s) up to {} but the data has only {} lines: "
                "check that --orig/--refs are the files the log was generated from".format(
                    self.path, extra[-1], n)
            )
        return [table[i] for i in range(n)]


def read_system(path, what, n=None):
    """(sentences, GenerateLog or None). ``n`` = expected number of sentences, if known."""
    lines = read_lines(path, what)
    if not GenerateLog.looks_like_log(lines):
        return lines, None
    log = GenerateLog(path, lines)
    if n is None:
        n = max(log.hyp) + 1
    return log.ordered(log.hyp, n, "hypothesis (H- line)"), log


def parse_metrics(text):
    names = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in names if m not in M.METRICS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            "unknown metric(s) {}: choose from {}".format(", ".join(bad) or "(none)", ",".join(M.METRICS)))
    return list(dict.fromkeys(names))


def get_parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Score a system output (plain file or fairseq-generate log): BLEU, SARI, FKGL, ROUGE, "
                    "output statistics, paired-bootstrap p-values.")
    p.add_argument("--sys", required=True, metavar="FILE", help="system output, or a fairseq-generate log")
    p.add_argument("--orig", metavar="FILE", help="source sentences (needed by sari and stats)")
    p.add_argument("--refs", nargs="+", metavar="FILE", help="reference file(s), line-aligned with --orig")
    p.add_argument("--metrics", required=True, type=parse_metrics,
                   help="comma list of " + ",".join(M.METRICS))
    p.add_argument("--sari-mode", choices=sari_lib.MODES, default="default",
                   help="default: EASSE corpus_sari (lowercase + 13a everywhere); legacy: EASSE legacy=True "
                        "(reproduces published TurkCorpus numbers); paper: the paper's micro-averaged equations")
    p.add_argument("--rouge-chars", action="store_true", help="ROUGE on characters (Chinese)")
    p.add_argument("--rouge-no-stemmer", action="store_true", help="no Porter stemming for ROUGE")
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by metric name")
    p.add_argument("--compare-to", metavar="FILE",
                   help="another system's output (or log): adds its scores and paired-bootstrap p-values")
    p.add_argument("--bootstrap-samples", type=int, default=M.BOOTSTRAP_SAMPLES, help=argparse.SUPPRESS)
    return p


def _load_inputs(args):
    orig = read_lines(args.orig, "--orig") if args.orig else None
    refs = [read_lines(r, "--refs") for r in args.refs] if args.refs else None
    n = len(orig) if orig is not None else (len(refs[0]) if refs else None)
    sys_sents, log = read_system(args.sys, "--sys", n)
    if n is None:
        n = len(sys_sents)
    if orig is None and log is not None and log.src:
        orig = log.ordered(log.src, n, "source (S- line)")
    if refs is None and log is not None and log.tgt:
        refs = [log.ordered(log.tgt, n, "reference (T- line)")]

    need_orig = [m for m in args.metrics if m in ("sari", "stats")]
    need_refs = [m for m in args.metrics if m in ("bleu", "sari") or m.startswith("rouge")]
    if need_orig and orig is None:
        raise FairseqWeanError("--orig FILE (the source sentences) is required for {}".format(", ".join(need_orig)))
    if need_refs and refs is None:
        raise FairseqWeanError("--refs FILE [FILE ...] is required for {}".format(", ".join(need_refs)))

    counts = [("--sys " + args.sys, len(sys_sents))]
    if orig is not None:
        counts.append(("--orig " + (args.orig or "(S- lines)"), len(orig)))
    for i, r in enumerate(refs or []):
        counts.append(("--refs " + (args.refs[i] if args.refs else "(T- lines)"), len(r)))
    if len(set(c for _, c in counts)) > 1:
        raise FairseqWeanError(
            "inputs have different numbers of lines: {}; every file must have one line per test "
            "sentence".format(", ".join("{} has {}".format(name, c) for name, c in counts)))

    other = None
    if args.compare_to:
        other, _ = read_system(args.compare_to, "--compare-to", n)
        if len(other) != n:
            raise FairseqWeanError(
                "--compare-to {} has {} lines but --sys has {}: compare outputs of the same test set".format(
                    args.compare_to, len(other), n))
    return sys_sents, orig, refs, other


def score_system(args, sys_sents, orig, refs):
    """({metric: CorpusMetric}, {metric: value}) for the requested metrics."""
    corpus = M.build_metrics(args.metrics, sys_sents, orig, refs, sari_mode=args.sari_mode,
                             rouge_chars=args.rouge_chars, rouge_stemmer=not args.rouge_no_stemmer)
    values = {}
    for m in args.metrics:
        if m == "stats":
            rows = M.output_stats_rows(sys_sents, orig)
            values[m] = M.output_stats_from_stats(rows.sum(axis=0), len(sys_sents))
        else:
            values[m] = float(corpus[m].score())
    return corpus, values


def _format_stats(s):
    return "avg_len {:.2f}, unk {:.2f}%, copy {:.2f}%, exact copy {:.2f}%".format(
        s["avg_len"], s["unk_pct"], s["copy_pct"], s["exact_copy_pct"])


def main(argv=None):
    args = get_parser().parse_args(argv)
    sys_sents, orig, refs, other = _load_inputs(args)
    corpus, values = score_system(args, sys_sents, orig, refs)
    result = dict(values)
    if other is not None:
        other_corpus, other_values = score_system(args, other, orig, refs)
        p_values = M.paired_bootstrap(corpus, other_corpus, n_samples=args.bootstrap_samples)
        result["compare_to"] = dict(other_values, file=args.compare_to)
        result["p_values"] = p_values

    if args.json:
        print(json.dumps(result, sort_keys=False))
        return result
    extra = {}
    if "sari" in args.metrics:
        add, keep, dele = sari_lib.operation_scores_from_stats(
            list(corpus["sari"].rows.sum(axis=0)), mode=args.sari_mode)
        extra["sari"] = " (add {:.2f} keep {:.2f} del {:.2f}; {} mode)".format(add, keep, dele, args.sari_mode)
    print("{} sentences, {} reference(s): {}".format(len(sys_sents), len(refs) if refs else 0, args.sys))
    for m in args.metrics:
        if m == "stats":
            line = "stats: " + _format_stats(values[m])
            if other is not None:
                line += "  | other: " + _format_stats(result["compare_to"][m])
        else:
            line = "{:<11} {:7.2f}{}".format(_NAMES[m], values[m], extra.get(m, ""))
            if other is not None:
                line += "  | other {:7.2f}, paired bootstrap p = {:.4f}".format(
                    result["compare_to"][m], result["p_values"][m])
        print(line)
    if other is not None:
        print("other = {}; p: two-sided paired bootstrap, {} resamples, seed {}".format(
            args.compare_to, args.bootstrap_samples, M.BOOTSTRAP_SEED))
    return result


def cli_main(argv=None):
    try:
        main(argv)
    except FairseqWeanError as e:
        sys.stdout.flush()
        sys.stderr.write("{}: error: {}\n".format(PROG, str(e).replace("\n", " ")))
        sys.stderr.flush()
        sys.exit(1)


if __name__ == "__main__":
    cli_main()
