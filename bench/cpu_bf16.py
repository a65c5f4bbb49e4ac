"""CPU bfloat16 autocast (``--cpu-bf16``) against float32: training speed of the compared systems.

    python -m bench.cpu_bf16 work_dirs/compare-translation-converged [--systems lstm,wean_lstm]
        [--updates 60] [--warmup 2] [--rounds 2] [--threads 1] [--out docs/results/performance.md]

The argument is the ``--out`` of a comparison (``fairseq-wean-compare TASK --budget converged``):
its prepared data (``data/``, with ``recipe.json``) is trained on, with each system's exact
fairseq-train command of that comparison (:func:`fairseq_wean.compare.runner.train_command`),
ending after ``--updates`` updates without validation; once in float32 and once with
``--cpu-bf16``, alternately, ``--rounds`` times. A figure is fairseq-train's ``wps`` (target
tokens per second) per log interval of 10 updates, the median over the intervals after
``--warmup``; the speed-up is bf16 / float32 within each round, so both sides of a ratio ran
minutes apart, on the same machine, under the same load. As in :mod:`bench.run`, fairseq's meters
read the process's CPU time (one thread: what an idle machine's wall clock would show, and not
inflated by other processes on shared cores).

The table goes to stdout and, between markers, into ``--out`` (default docs/results/performance.md)
with the date, the machine and the command. On a CPU without native bfloat16, ``--cpu-bf16`` trains in float32 (the ratio is then
about 1, and the table says so).
"""
import argparse
import datetime
import os
import shutil
import statistics
import sys
import tempfile

from bench.run import (check_section_output, fairseq_command, machine_description, run_process, train_inner_wps,
                       write_section)
from fairseq_wean.compare import cli as compare_cli
from fairseq_wean.compare import runner
from fairseq_wean import cpu
from preprocess import common
from fairseq_wean.errors import FairseqWeanError, at_least
from bench import run_checks
from fairseq_wean.cli.options import once, quantity  # each option given once (argparse keeps the last)

BEGIN, END = "<!-- cpu-bf16:begin -->", "<!-- cpu-bf16:end -->"
LOG_INTERVAL = 10


def without_validation(argv):
    """``argv`` without the options that act only through validation (with --disable-validation they
    would do nothing, and fairseq-train refuses them: fairseq_wean.tasks.validation_options), with
    their values."""
    from fairseq_wean.tasks.validation_options import FAIRSEQ_VALIDATION_OPTIONS, OPTION_CONDITIONS

    names = {"--" + n.replace("_", "-") for n, row in OPTION_CONDITIONS.items() if row is not None}
    names |= {"--" + n.replace("_", "-") for n in FAIRSEQ_VALIDATION_OPTIONS}
    kept, i = [], 0
    while i < len(argv):
        if str(argv[i]) in names:
            i += 1
            if i < len(argv) and not str(argv[i]).startswith("--"):
                i += 1  # its value
            continue
        kept.append(argv[i])
        i += 1
    return kept


def comparison_args(compare_out):
    """The comparison's parsed options and its recipe, from ``COMPARE_OUT/data/recipe.json``."""
    recipe_path = os.path.join(compare_out, "data", "recipe.json")
    if not os.path.lexists(recipe_path):  # one line (run_cli), as every refusal of this tool
        raise FairseqWeanError("{}: no data/recipe.json: give the --out of a comparison (fairseq-wean-compare TASK "
                               "--budget converged --out DIR) whose data is prepared".format(compare_out))
    recipe = common.load_recipe(os.path.join(compare_out, "data"))  # read only as itself
    args = compare_cli.parse_args([recipe["task"], recipe["data_dir"], "--budget", "converged",
                                   "--out", compare_out, "--dataset", recipe["dataset"]])
    return args, recipe


def measure(cmd, log_path, warmup, env):
    """Median ``wps`` of fairseq-train ``cmd`` over its log intervals after ``warmup`` of them."""
    rc, out, _rss, wall = run_process(cmd, log_path, env)
    if rc != 0:
        raise SystemExit("fairseq-train failed ({}), log {}:\n{}".format(rc, log_path, out[-3000:]))
    wps = train_inner_wps(out)
    if len(wps) <= warmup:
        raise SystemExit("{} log intervals in {}: raise --updates".format(len(wps), log_path))
    return statistics.median(wps[warmup:]), wall


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("compare_out", help="the --out of a converged comparison (its data/ is used)")
    p.add_argument("--systems", help="comma list of SYSTEM[:VOCAB] (default: the task's converged runs)")
    p.add_argument("--updates", type=at_least(1, high=1000000), default=60, help="updates per measurement (default 60)")
    p.add_argument("--warmup", type=at_least(0), default=2, help="log intervals of {} updates left out (default 2)".format(LOG_INTERVAL))
    p.add_argument("--rounds", type=at_least(1), default=2, help="float32/bf16 pairs per system (default 2)")
    p.add_argument("--threads", type=quantity("threads"), default=1)
    p.add_argument("--out", default=os.path.join(runner.REPO, "docs", "results", "performance.md"),
                   help="file whose marked section gets the table ('-': stdout only)")
    a = once(p).parse_args(argv)
    if a.warmup >= a.updates // LOG_INTERVAL:  # measure() found out after training every system
        p.error("--warmup {} drops every one of the {} log intervals of --updates {} ({} updates each): give "
                "fewer warm-up intervals or more updates".format(a.warmup, a.updates // LOG_INTERVAL, a.updates,
                                                                 LOG_INTERVAL))
    if a.out != "-":  # before any training: a folder, pipe, device or symbolic link there is refused
        check_section_output(a.out)
    args, recipe = comparison_args(os.path.abspath(a.compare_out))
    args.threads = a.threads
    runs = list(dict.fromkeys(tuple(key[:2]) for key in args.run_list))  # the comparison's systems, seeds once
    if a.systems:
        default_vocab = {s: v for s, v in runs}
        runs = [tuple(x.split(":", 1)) if ":" in x else (x, default_vocab.get(x, "word")) for x in a.systems.split(",")]
        try:  # one system measured twice
            run_checks.check_items("--systems", [":".join(r) for r in runs])
        except FairseqWeanError as exc:
            p.error(str(exc))
    env = runner.job_env(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    work = tempfile.mkdtemp(prefix="bench-bf16-")
    rows = []
    cfg = argparse.Namespace(clock="cpu")
    try:
        for system, variant in runs:
            ratios, speeds = [], {"float32": [], "bf16": []}
            for r in range(a.rounds):
                for precision in ("float32", "bf16"):
                    args.cpu_bf16 = precision == "bf16"
                    run_dir = os.path.join(work, "{}-{}-{}".format(system, precision, r))
                    cmd = runner.train_command(args, recipe, system, variant, run_dir)
                    # the comparison's command, ended early and without validation; later flags win
                    cmd = fairseq_command("train", cfg) + without_validation(cmd[1:]) + [
                        "--max-update", str(a.updates), "--disable-validation", "--log-interval", str(LOG_INTERVAL),
                        "--no-save"]
                    wps, wall = measure(cmd, run_dir + ".log", a.warmup, env)
                    speeds[precision].append(wps)
                    print("{} {} round {}: {:.0f} target tokens/s ({:.0f} s wall)".format(
                        system, precision, r + 1, wps, wall), flush=True)
                ratios.append(speeds["bf16"][-1] / speeds["float32"][-1])
            rows.append((system, variant, speeds, ratios))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [BEGIN, "### CPU bfloat16 autocast: training speed (`python -m bench.cpu_bf16`)", "",
             "- command: `python -m bench.cpu_bf16 {}`".format(" ".join(argv if argv is not None else sys.argv[1:])),
             "- date: {} UTC; machine: {}; native bfloat16: {}".format(
                 started.strftime("%Y-%m-%d %H:%M"), machine_description(a.threads),
                 "yes" if cpu.native_bf16() else "no (--cpu-bf16 falls back to float32)"),
             "- each system: its fairseq-train command of the {} comparison (`--max-tokens` batches), {} updates, "
             "float32 and `--cpu-bf16` alternately, {} round(s); tokens/s: median `wps` per {} updates after {} "
             "interval(s), process CPU time".format(recipe["task"], a.updates, a.rounds, LOG_INTERVAL, a.warmup),
             "",
             "| system | vocab | float32 tok/s | bf16 tok/s | speed-up per round | median speed-up |",
             "|---|---|---|---|---|---|"]
    for system, variant, speeds, ratios in rows:
        lines.append("| {} | {} | {} | {} | {} | **{:.2f}x** |".format(
            system, variant, " / ".join("{:.0f}".format(s) for s in speeds["float32"]),
            " / ".join("{:.0f}".format(s) for s in speeds["bf16"]),
            " / ".join("{:.2f}x".format(x) for x in ratios), statistics.median(ratios)))
    lines.append(END)
    section = "\n".join(lines)
    print(section)
    if a.out != "-":
        write_section(a.out, section, BEGIN, END)


if __name__ == "__main__":
    from fairseq_wean.errors import run_cli

    run_cli(main, "python -m bench.cpu_bf16")
