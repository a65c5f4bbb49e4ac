"""fairseq-wean-compare: the command line of the comparison (see :mod:`fairseq_wean.compare`)."""
import argparse
import importlib
import json
import os
import sys
import time

import fairseq_wean.compare as package
from fairseq_wean import textio
from fairseq_wean.cli import options
from fairseq_wean.compare import report, runner
from fairseq_wean.compare.runner import REPO, fmt_secs, log
from fairseq_wean.errors import FairseqWeanError, at_least, run_cli
from fairseq_wean.compare.systems import BASELINE, CONVERGED, DATASET_VOCAB, SYSTEMS, TASKS, system_arch
from preprocess import common


def whole_number(p, flag, name):
    """The argparse ``type`` of a whole number of the quantity ``name`` (:func:`fairseq_wean.cli.options.quantity`:
    a seed, threads, the bound every tool shares; a number: a count >= it, with no quantity's bound): below its low end, ``FLAG must be at least LOW, got VALUE`` in
    one line (``p.error``, exit status 2), before any work (--jobs 0 and --threads 0 were taken as they came, a
    negative seed failed in fairseq-train after the data was prepared); above its high end (--seed 1e20,
    --threads 100000), the quantity's line naming the option."""
    check = at_least(name) if isinstance(name, int) else options.quantity(name)
    low = check.range[0]

    def parse(text):
        try:
            return check(text)
        except argparse.ArgumentTypeError as exc:
            try:
                below = int(text) < low
            except ValueError:  # not a whole number: argparse's own line, naming the option
                below = False
            if not below:
                raise exc from None
            p.error("{} must be at least {}, got {}".format(flag, low, text.strip()))

    parse.__name__, parse.range = check.__name__, check.range
    parse.quantity = getattr(check, "quantity", None)
    return parse


def seed_list(p):
    """The argparse ``type`` of ``--seeds``: a comma list of seeds in the seed range (``options.quantity("seed")``),
    refused in one line otherwise (``''``, ``nan``, ``1,-2`` and a seed above numpy's range included), under either
    budget. A seed named twice is run once."""
    check = options.quantity("seed")

    def parse(text):
        try:
            seeds = [int(seed) for seed in text.split(",")]
        except ValueError:
            p.error("--seeds: {!r} is not a comma list of integers".format(text))
        if any(seed < 0 for seed in seeds):
            p.error("--seeds {}: seeds must be at least 0".format(text))
        for seed in seeds:
            try:
                check(str(seed))
            except argparse.ArgumentTypeError as exc:
                p.error("--seeds {}: a seed {}".format(text, exc))
        return seeds

    parse.__name__, parse.range, parse.quantity = "comma list of " + check.__name__, check.range, "seed"
    return parse


def dataset_variants(task, dataset):
    """The vocabulary variants the data set's recipe builds (its module's ``VARIANTS``)."""
    return getattr(importlib.import_module(TASKS[task]["datasets"][dataset]), "VARIANTS", common.VARIANTS)


def get_parser():
    """fairseq-wean-compare's options (checked together in :func:`parse_args`)."""
    p = argparse.ArgumentParser(prog="fairseq-wean-compare", description=package.__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=package.__doc__)
    p.add_argument("task", choices=sorted(TASKS))
    p.add_argument("data_dir", nargs="?", default=common.DEFAULT_DATA_DIR,
                   help="raw benchmark data (default ../shared/data next to the repository)")
    p.add_argument("--dataset", help="summarization: gigaword (default) or lcsts (needs LCSTS PART I); "
                                     "translation: multi30k (default) or iwslt14 (needs its training data)")
    p.add_argument("--out", help="output directory (default work_dirs/compare-TASK[-DATASET][-tiny])")
    p.add_argument("--tiny", action="store_true",
                   help="CI size: a few hundred training pairs, 12 evaluation sentences, 1 epoch, fewer runs")
    p.add_argument("--budget", choices=["short", "converged"], default="short",
                   help="short (default): every system trains --epochs epochs with 32-sentence batches (WEAN's "
                        "convergence-speed setting); converged: "
                        "--max-tokens batches, each system trains until its validation score (computed inside "
                        "fairseq-train) has not improved for --patience epochs, at most --max-epoch. Both keep "
                        "the checkpoint with the best validation score")
    p.add_argument("--epochs", type=whole_number(p, "--epochs", 1),
                   help="short budget: epochs of every system (default: per task)")
    p.add_argument("--patience", type=whole_number(p, "--patience", 1),
                   help="converged budget: epochs without a better validation score before a system stops "
                        "(default: per task)")
    p.add_argument("--max-epoch", type=whole_number(p, "--max-epoch", 1),
                   help="converged budget: cap on epochs (default: per task)")
    p.add_argument("--results-dir",
                   help="where each finished system's test outputs (TESTSET.hyp) and scores.json are kept, one "
                        "folder per SYSTEM-VOCAB; a system found there is not trained again (default: "
                        "docs/results/TASK[-DATASET] for the converged budget, docs/results/TASK[-DATASET]-short "
                        "for the short one, OUT/results with --tiny)")
    p.add_argument("--runs", help="comma list of SYSTEM:VOCAB to run, e.g. lstm:word,wean_lstm:spm "
                                  "(default: the task's list; systems: {})".format(", ".join(SYSTEMS)))
    p.add_argument("--jobs", type=whole_number(p, "--jobs", "threads"),
                   help="systems trained/decoded at the same time (default 2: one per core of a 2-core machine)")
    p.add_argument("--threads", type=whole_number(p, "--threads", "threads"),
                   help="torch threads per job (OMP_NUM_THREADS; default 1: on a shared 2-core machine two "
                        "threads per process made fairseq's LSTM 14x slower than one)")
    p.add_argument("--cpu-bf16", action="store_true",
                   help="train every system with --cpu-bf16 (bfloat16 autocast forward passes; float32 where the "
                        "CPU has no native bfloat16); scores.json says which precision each run had")
    p.add_argument("--seed", type=whole_number(p, "--seed", "seed"), default=1,
                   help="each system's first run (its row in the main table)")
    p.add_argument("--seeds", type=seed_list(p), help="converged budget: comma list of the seeds of the systems the task runs with "
                                   "several seeds (translation: the word-attention ablation; default 1,2,3); it "
                                   "must hold --seed. --seeds 1 gives the table of seed 1 alone, training no other "
                                   "seed")
    p.add_argument("--keep-checkpoints", action="store_true", help="keep checkpoint_best.pt (the selected one) and checkpoint_last.pt "
                   "(default: deleted once the test sets are decoded)")
    p.add_argument("--force", action="store_true", help="redo finished systems")
    p.add_argument("--reuse-only", action="store_true",
                   help="train nothing: the tables of the runs published in the results directory; the runs not "
                        "published there are left out and named in one line (e.g. seeds still to train)")
    return options.once(p)


def parse_args(argv=None):
    p = get_parser()
    args = p.parse_args(argv)
    if args.reuse_only and args.force:
        p.error("--reuse-only and --force contradict each other (--force retrains published systems)")
    # an option that changes nothing is refused, not ignored: the user meant something else
    if args.reuse_only:
        for flag, given in (("--keep-checkpoints", args.keep_checkpoints), ("--cpu-bf16", args.cpu_bf16),
                            ("--jobs", args.jobs is not None), ("--threads", args.threads is not None)):
            if given:
                p.error("{} does nothing with --reuse-only (no system is trained or decoded)".format(flag))
    args.jobs = 2 if args.jobs is None else args.jobs
    args.threads = 1 if args.threads is None else args.threads
    if args.budget == "short":
        for flag in ("--patience", "--max-epoch", "--seeds"):
            if getattr(args, flag[2:].replace("-", "_")) is not None:
                p.error("{} does nothing under --budget short (each system trains --epochs epochs, once, with "
                        "--seed): it is --budget converged's".format(flag))
    elif args.epochs is not None:
        p.error("--epochs does nothing under --budget converged (each system trains until --patience epochs bring "
                "no better validation score): cap the epochs with --max-epoch")
    if args.seeds is not None and args.tiny:
        p.error("--seeds does nothing with --tiny (each system trains once, with --seed)")
    if args.seeds is not None and args.seed not in args.seeds:
        p.error("--seeds {} must hold --seed {} (each system's first run)".format(
            ",".join(map(str, args.seeds)), args.seed))
    task = TASKS[args.task]
    datasets = list(task["datasets"])
    if args.dataset is None:
        args.dataset = datasets[0]
    elif args.dataset not in datasets:
        p.error("--dataset for {}: one of {}".format(args.task, ", ".join(datasets)))
    if args.runs is not None and not args.runs.strip(", "):
        p.error("--runs is empty: name the runs (e.g. --runs lstm:word,wean_lstm:spm), or leave --runs out to "
                "run the task's default list")
    if args.runs:
        runs, variants = [], dataset_variants(args.task, args.dataset)
        for item in args.runs.split(","):
            system, _, variant = item.partition(":")
            if system not in SYSTEMS or not variant:
                p.error("--runs: {!r} is not SYSTEM:VOCAB with SYSTEM in {}".format(item, ", ".join(SYSTEMS)))
            if variant not in variants:  # was "not prepared", after the data preparation
                p.error("--runs: {!r}: {} has no vocabulary variant {!r}: choose from {}".format(
                    item, args.dataset, variant, ", ".join(variants)))
            if (system, variant) in runs:  # both would train into one folder and clobber each other's log
                p.error("--runs names {} twice: each run once (extra seeds: --seeds)".format(item))
            runs.append((system, variant))
        args.run_list = runs
    else:
        converged = CONVERGED[args.task] if args.budget == "converged" else {}
        args.run_list = task["tiny_runs"] if args.tiny else converged.get("runs", task["runs"])
        vocab = DATASET_VOCAB.get(args.dataset)
        if vocab:  # e.g. IWSLT'14: every system on the 10k joint BPE
            args.run_list = list(dict.fromkeys((s, vocab) for s, _ in args.run_list))
    multi_seed = sorted(CONVERGED[args.task].get("seeds", {}))
    if args.seeds is not None and not set(multi_seed) & {key[0] for key in args.run_list}:
        p.error("--seeds does nothing here: no run of {}{} is trained with several seeds ({})".format(
            args.task, " --runs " + args.runs if args.runs else "", "only " + ", ".join(multi_seed) + " are"
            if multi_seed else "the task has no such system"))
    if args.budget == "converged" and not args.tiny:
        # extra seeds (the word-attention ablation): runs (system, vocab, seed) after the main list
        seeds = CONVERGED[args.task].get("seeds", {})
        if args.seeds is not None:  # checked above
            seeds = {system: args.seeds for system in seeds}
        args.run_list = list(args.run_list) + [(s, v, seed) for s, v in args.run_list
                                               for seed in dict.fromkeys(seeds.get(s, [])) if seed != args.seed]
    if args.epochs is None:
        args.epochs = 1 if args.tiny else task["epochs"]
    if args.max_epoch is None:
        args.max_epoch = args.epochs if args.tiny else CONVERGED[args.task]["max_epoch"]
    if args.patience is None:
        args.patience = CONVERGED[args.task]["patience"]
    name = args.task if args.dataset == datasets[0] else "{}-{}".format(args.task, args.dataset)
    for flag, value in (("--out", args.out), ("--results-dir", args.results_dir)):
        try:  # as given, before it is normalized or made
            textio.check_resolvable(value or "", flag)
        except FairseqWeanError as exc:
            p.error(str(exc))
    if args.out is None:
        args.out = os.path.join(REPO, "work_dirs", "compare-{}{}{}".format(
            name, "-converged" if args.budget == "converged" else "", "-tiny" if args.tiny else ""))
    args.out = os.path.abspath(args.out)
    problem = textio.path_problem(args.out, ("fairseq-path",), "--out")  # its data/ and runs/ go to fairseq-train
    if problem:
        p.error(problem)
    if args.results_dir is None:
        args.results_dir = os.path.join(args.out, "results") if args.tiny else os.path.join(
            REPO, "docs", "results", name + ("" if args.budget == "converged" else "-short"))
    args.results_dir = os.path.abspath(args.results_dir)
    args.data_dir = os.path.abspath(args.data_dir)  # subprocesses run in the repository
    if not os.path.isdir(args.data_dir):
        p.error("data directory {} not found (see docs/data.md, 'Data and recipes')".format(args.data_dir))
    return args


def check_published_folders(args):
    """Before any work (data preparation took 37 s before a planted file was found): each run's folder in
    --results-dir must be a folder inside it, and every file in it is opened only as itself
    (``textio.open_in_folder``: a symbolic link, a pipe, a device or a folder there is refused in one line).
    With --reuse-only, no run published at all is refused here too. :func:`published_run` checks the
    contents against the prepared recipe later."""
    root = os.path.realpath(args.results_dir)
    published = 0
    for key in args.run_list:
        folder = runner.results_dir(args, key)
        if not os.path.lexists(folder):
            continue
        if not os.path.isdir(folder) or os.path.commonpath([os.path.realpath(folder), root]) != root:
            raise FairseqWeanError("published run folder {} is not a folder inside --results-dir {} (a symbolic "
                                   "link or a file): refused; remove it".format(folder, args.results_dir))
        for name in sorted(os.listdir(folder)):
            textio.open_in_folder(os.path.join(folder, name), "rb", args.results_dir, "published file").close()
        published += os.path.lexists(os.path.join(folder, "scores.json"))
    if args.reuse_only and not published:
        raise FairseqWeanError("--reuse-only: none of the {} runs is published in {}".format(
            len(args.run_list), args.results_dir))


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    check_published_folders(args)
    runner.check_output_dirs(args)
    command = "fairseq-wean-compare " + " ".join(argv if argv is not None else sys.argv[1:])
    log("{} comparison -> {} ({} runs, {}; results in {})".format(
        args.task, args.out, len(args.run_list), "{} epoch(s) each".format(args.epochs) if args.budget == "short"
        else "until validation stops improving for {} epochs, at most {}".format(args.patience, args.max_epoch),
        args.results_dir))
    recipe, prepare_cmd = runner.prepare(args)
    if recipe.get("trainable") is False:
        raise SystemExit("{}: no training data (LCSTS PART I) under {}; the recipe wrote the test set and its "
                         "LEAD table to {}".format(args.dataset, args.data_dir, os.path.join(args.out, "data")))
    if recipe.get("smoke_test_only") and not args.tiny:
        raise SystemExit("{}: prepared from the staged valid/test files only (smoke test). Prepare the full data "
                         "first: python -m preprocess.prepare_{} --raw DIR --out {}".format(
                             args.dataset, args.dataset, os.path.join(args.out, "data")))
    missing = [key[1] for key in args.run_list if key[1] not in recipe["variants"]]
    if missing:
        raise SystemExit("vocabulary variant(s) {} not prepared for {}".format(", ".join(sorted(set(missing))), args.task))
    if args.reuse_only:
        args.run_list = runner.published_runs_only(args, recipe)
    for system, variant, *_seed in args.run_list:  # built once, before runs share it
        if system_arch(system) == "core_copy":
            runner.align_table(recipe, os.path.join(args.out, "data"), variant)
    evals, reused = runner.run_all(args, recipe)
    log("scoring test outputs (p-values against fairseq {})".format(BASELINE))
    baselines = report.baseline_outputs(args, recipe)
    rows = report.build_rows(args, recipe, evals, baselines)
    meta = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": runner.machine(),
            "wall_seconds": time.time() - t_start, "prepare_command": " ".join(prepare_cmd), "epochs": args.epochs,
            "budget": args.budget, "patience": args.patience, "max_epoch": args.max_epoch,
            "results_dir": os.path.relpath(args.results_dir, REPO), "runs": len(evals), "reused": reused}
    seeds = report.seed_rows(args, recipe, evals) or None  # the word-attention ablation, where it ran
    paper_exact = report.paper_exact_rows(args, recipe, evals) or None  # issue 41's variants, where they ran
    report.write_tables(args, recipe, rows, meta, seeds, paper_exact)
    curve = report.plot_curves(args, recipe, evals)
    page = report.write_html_report(args, recipe, evals, baselines)
    with textio.atomic_output(os.path.join(args.out, "results.json"), (), "results.json") as f:
        json.dump({"meta": meta, "rows": rows, "recipe": recipe, "seed_rows": seeds, "paper_exact_rows": paper_exact,
                   "runs": {":".join(map(str, key)): ev for key, ev in evals.items()}}, f, indent=2)
    with open(os.path.join(args.out, "results.md"), encoding="utf-8") as f:
        print(f.read())
    log("wrote {}, {}, {}, {} in {}".format(os.path.join(args.out, "results.md"), os.path.join(args.out, "results.csv"),
                                            curve, page, fmt_secs(time.time() - t_start)))
    return rows


if __name__ == "__main__":
    main()


def cli_main(argv=None):
    run_cli(main, "fairseq-wean-compare", argv)
