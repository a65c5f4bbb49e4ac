"""fairseq-wean-report: an HTML page comparing one or more systems' outputs on a test set.

    fairseq-wean-report --sys OUT [OUT ...] --orig SRC --refs REF [REF ...] --out PAGE.html
                        [--names NAME ...] [--metrics LIST] [--sari-mode {default,legacy,paper}]
                        [--rouge-chars] [--rouge-no-stemmer]

Inputs as ``fairseq-wean-score``'s: each ``--sys`` is a plain output file or a fairseq-generate
log (``--orig``/``--refs`` default to the first log's ``S-``/``T-`` lines). The page shows the
corpus scores side by side (the same numbers as ``fairseq-wean-score``, with paired-bootstrap
p-values against the first system), length and compression histograms, and a sortable,
filterable table of every sentence with each output's tokens coloured (copied, generated,
``<unk>``, invented, deleted) and per-sentence scores. The page loads nothing from the network.

Bad input ends with one line ``fairseq-wean-report: error: ...`` and exit status 1; the page is
written to a temporary file and renamed, so an existing page is never left half-written.
"""
import argparse

from fairseq_wean import textio
from fairseq_wean.cli import options
from fairseq_wean.errors import at_least, run_cli
from fairseq_wean.report import build, render
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import inputs
from fairseq_wean.scoring import sari as sari_lib
from fairseq_wean.scoring import scores
from fairseq_wean.scoring.scores import parse_metrics

PROG = "fairseq-wean-report"


def get_parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Write one self-contained HTML page comparing systems' outputs: corpus scores with "
                    "p-values, per-sentence scores, coloured tokens, sorting, filtering, histograms.")
    p.add_argument("--sys", required=True, nargs="+", metavar="OUT",
                   help="system outputs (plain files or fairseq-generate logs); p-values are against the first")
    p.add_argument("--names", nargs="+", metavar="NAME", help="a name per --sys (default: file names)")
    p.add_argument("--orig", metavar="SRC", help="source sentences (default: the first log's S- lines)")
    p.add_argument("--refs", nargs="+", metavar="REF", help="reference file(s) (default: the first log's T- lines)")
    p.add_argument("--out", required=True, metavar="PAGE.html", help="the HTML page to write")
    p.add_argument("--metrics", type=parse_metrics, default=list(build.DEFAULT_METRICS),
                   help="corpus metrics, comma list of {} (default: {}); any rouge* shows per-sentence "
                        "ROUGE-L".format(",".join(M.METRICS), ",".join(build.DEFAULT_METRICS)))
    p.add_argument("--sari-mode", choices=sari_lib.MODES, default="default", help="as fairseq-wean-score")
    p.add_argument("--bleu-tokenize", default=M.BLEU_TOKENIZE, metavar="TOK", type=M.bleu_tokenize_option,
                   help="sacrebleu's BLEU tokenization, as fairseq-wean-score: 13a (default) for detokenized text, "
                        "none for tokenized text (multi-bleu's convention)")
    p.add_argument("--rouge-chars", action="store_true",
                   help="ROUGE, lengths and token colours on characters (Chinese)")
    p.add_argument("--rouge-no-stemmer", action="store_true", help="no Porter stemming for ROUGE")
    inputs.add_text_options(p)
    p.add_argument("--view", choices=build.VIEWS, default="auto",
                   help="token colours: monolingual (copied / generated / invented / deleted against the source), "
                        "cross-lingual (translation: in a reference or not); auto (default): cross-lingual when "
                        "under 20%% of the references' words occur in their sources")
    p.add_argument("--bootstrap-samples", type=at_least(1, high=M.MAX_BOOTSTRAP_SAMPLES), default=None,
                   help=argparse.SUPPRESS)
    return options.once(p)


# the options that change the page in every combination (every other option is in options.NEEDS);
# --rouge-chars also sets the page's units (lengths, token colours), with or without ROUGE
ALWAYS = ("--sys", "--names", "--orig", "--refs", "--out", "--metrics", "--post-process", "--view",
          "--rouge-chars")


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    options.check_effective(parser, args, always=ALWAYS)
    scores.check_rouge_options(args.rouge_chars, not args.rouge_no_stemmer, "--rouge-chars", "--rouge-no-stemmer")
    build.check_distinct_inputs(args.sys, args.names, args.refs, args.orig)
    inputs = list(args.sys) + ([args.orig] if args.orig else []) + list(args.refs or [])
    textio.check_output(args.out, inputs)  # refuse before the (slow) scoring
    systems, orig, refs = build.load_inputs(args.sys, args.names, args.orig, args.refs, args.hyp_lines,
                                            args.post_process,
                                            check_logs=lambda logs: options.check_effective(parser, args, logs=logs,
                                                                                            always=ALWAYS))
    report = build.build_report(systems, orig, refs, metrics=args.metrics, sari_mode=args.sari_mode,
                                rouge_chars=args.rouge_chars, rouge_stemmer=not args.rouge_no_stemmer,
                                bootstrap_samples=args.bootstrap_samples, view=args.view,
                                bleu_tokenize=args.bleu_tokenize)
    page = render.render_page(report)
    with textio.atomic_output(args.out, inputs) as f:
        f.write(page)
    print("{}: {} sentences, {} system(s) -> {}".format(PROG, len(orig), len(systems), args.out))
    return report


def cli_main(argv=None):
    run_cli(main, PROG, argv)


if __name__ == "__main__":
    cli_main()
