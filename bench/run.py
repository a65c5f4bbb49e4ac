"""Benchmark: fairseq ``lstm`` (the anchor), ``wean_lstm``, ``core_copy``, ``word_attn_gated``
and fairseq ``transformer``, at equal sizes (2 encoder + 2 decoder layers, 256 units), on
synthetic Zipf data with two vocabularies (8k and 50k words by default).

    python -m bench.run                 # the full run (about 25 minutes on 2 CPU cores)
    python -m bench.run --quick         # a smoke run (2-3 minutes: few updates, 8k only)
    bench/run.sh [options]              # the same, from anywhere
    python -m bench.run --device cuda --precisions fp32,amp,fp16 --json R.json   # on a GPU, in one process

``--device cuda`` (or ``cpu``, its stand-in) measures in this one process instead, with fairseq's
own Trainer and SequenceGenerator, adds peak GPU memory (``torch.cuda.max_memory_allocated``) and
precisions (``--amp``, ``--fp16``), and writes ``--out`` only when it is given:
:mod:`bench.device_bench` says what it measures and why. What follows is the default, the command
lines on the CPU.

For every model and vocabulary, each measured by the real command lines:

- training throughput: target tokens/s of ``fairseq-train`` (its ``wps``, which counts target
  tokens), per log interval; the median over the intervals after ``--warmup`` intervals;
- generation throughput: ``fairseq-generate --beam 5 --batch-size 64`` sentences/s, and
  per-token latency at ``--batch-size 1`` (beam 5), both from fairseq's own generation timer.
  Every hypothesis is exactly ``--gen-len`` tokens (``--min-len = --max-len-b``): the models are
  barely trained, and a fixed length makes the figure the cost of a decoding step, not of how
  long a model's (random) outputs happen to be;
- peak resident memory (``ru_maxrss`` of the process, so including Python, torch and fairseq)
  of the training and of the batch-64 generation;
- utilisation (``--flop-batches``, :mod:`bench.flops`): the model's matrix-product FLOPs per target
  token of a training step times its measured tok/s, against one thread's peak matrix-product
  FLOP/s measured at the run's start and end (float32; bfloat16 with a ``--cpu-bf16`` training run
  where the CPU has native bfloat16).

Every figure is also given as a ratio to fairseq ``lstm`` measured in the same run. The table
goes to stdout and, between markers, into ``--out`` (default docs/results/performance.md; text
outside the markers is kept), with the date, the machine and the command line.

``--convergence ARCH=TRAIN_LOG [ARCH=TRAIN_LOG ...]`` (each model once) adds the epochs and wall time each model took to
reach its best validation loss, read from fairseq-train logs of the comparison runs on real
data; without it that table says that no logs were given.

Clock and threads: by default (``--clock cpu``) fairseq's meters in the measured processes
(``time.perf_counter``, behind train_inner's ``wps`` and fairseq-generate's timer) read the
process's CPU time instead of the wall clock, and ``--threads`` (default 1) sets
OMP_NUM_THREADS/MKL_NUM_THREADS. With one thread, CPU time is what the wall clock would show on
an idle machine, and it is not inflated when other users' processes take turns on the same
cores (a shared 2-core machine ran the same lstm generation at 49 and at 25 sentences/s by
the wall clock, minutes apart). ``--clock wall`` measures wall time, for a dedicated machine or
several threads. The load average is recorded with every measurement.
"""
import argparse
import datetime
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

from bench import device_bench, synthetic
from fairseq_wean.compare.train_log import read_train_log_line
from fairseq_wean import textio
from fairseq_wean.cli import options
from fairseq_wean.errors import FairseqWeanError, at_least

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
USER_DIR = os.path.join(REPO, "fairseq_wean")
ANCHOR = "lstm"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"

# Equal sizes: 2 encoder and 2 decoder layers, 256-dimensional embeddings and states ({dim}: --dim,
# default 256; {ffn}: the transformer's feed-forward size, 4 x dim).
MODELS = {
    "lstm": ["--arch", "lstm", "--encoder-embed-dim", "{dim}", "--encoder-hidden-size", "{dim}",
             "--encoder-layers", 2, "--decoder-embed-dim", "{dim}", "--decoder-hidden-size", "{dim}",
             "--decoder-layers", 2, "--decoder-out-embed-dim", "{dim}"],
    "wean_lstm": ["--arch", "wean_lstm", "--embed-dim", "{dim}", "--encoder-hidden-size", "{dim}",
                  "--encoder-layers", 2, "--decoder-hidden-size", "{dim}", "--decoder-layers", 2],
    "core_copy": ["--arch", "core_copy", "--embed-dim", "{dim}", "--encoder-hidden-size", "{dim}",
                  "--encoder-layers", 2, "--decoder-hidden-size", "{dim}", "--decoder-layers", 2,
                  "--decoder-out-embed-dim", "{dim}", "--core-topk", 10, "--criterion", "core_mode_loss",
                  "--core-align-table", "{table}"],
    "word_attn_gated": ["--arch", "word_attn_gated", "--encoder-embed-dim", "{dim}", "--encoder-hidden-size", "{dim}",
                        "--encoder-layers", 2, "--decoder-embed-dim", "{dim}", "--decoder-hidden-size", "{dim}",
                        "--decoder-layers", 2, "--decoder-out-embed-dim", "{dim}"],
    "transformer": ["--arch", "transformer", "--encoder-embed-dim", "{dim}", "--encoder-ffn-embed-dim", "{ffn}",
                    "--encoder-layers", 2, "--encoder-attention-heads", 4, "--decoder-embed-dim", "{dim}",
                    "--decoder-ffn-embed-dim", "{ffn}", "--decoder-layers", 2, "--decoder-attention-heads", 4],
}

# name: (issue's goal text, [(model, vocab or None, metric, minimum ratio)])
GOALS = [
    ("wean_lstm: training and generation >= 1.0x",
     [("wean_lstm", None, "train_tok_s", 1.0), ("wean_lstm", None, "gen_sent_s", 1.0)]),
    ("core_copy at ~50k: generation >= 1.5x, training >= 1.3x",
     [("core_copy", "max", "gen_sent_s", 1.5), ("core_copy", "max", "train_tok_s", 1.3)]),
    ("core_copy at ~8k: training and generation >= 1.0x",
     [("core_copy", "min", "train_tok_s", 1.0), ("core_copy", "min", "gen_sent_s", 1.0)]),
    ("word_attn_gated: >= 0.85x",
     [("word_attn_gated", None, "train_tok_s", 0.85), ("word_attn_gated", None, "gen_sent_s", 0.85)]),
]
MEMORY_GOAL = 1.2

PROFILES = {
    # updates, log interval, warm-up intervals, train sentences, test sentences, latency sentences
    "full": dict(updates=30, interval=3, warmup=2, n_train=6000, n_test=128, n_latency=8, vocabs="8000,50000"),
    "quick": dict(updates=8, interval=2, warmup=1, n_train=2000, n_test=64, n_latency=4, vocabs="8000"),
    # --device: timed training steps after warm-up steps (no log intervals)
    "device": dict(updates=10, interval=1, warmup=3, n_train=6000, n_test=128, n_latency=8, vocabs="8000,50000"),
    "device-quick": dict(updates=3, interval=1, warmup=1, n_train=2000, n_test=64, n_latency=4, vocabs="8000"),
}


# The measured commands run as fairseq's own entry points, in a process whose clock for fairseq's
# meters (``time.perf_counter``: train_inner's wps, fairseq-generate's timer) may be swapped for
# the process's CPU time (--clock cpu).
_ENTRY = ("import sys, time\n"
          "if {cpu}: time.perf_counter = time.process_time\n"
          "from fairseq_cli.{module} import cli_main\n"
          "sys.argv[0] = 'fairseq-{module}'\n"
          "cli_main()\n")


def fairseq_command(module, cfg):
    return [sys.executable, "-c", _ENTRY.format(cpu=cfg.clock == "cpu", module=module)]


def planted_entry(workdir):
    """The first symbolic link, named pipe, device or hard link (a file with other names, which the
    benchmark would rewrite or delete) under ``workdir`` (which the benchmark fills with its own files
    and folders only), or None."""
    from fairseq_wean import textio

    for folder, dirs, files in os.walk(workdir):
        for name in dirs + files:
            path = os.path.join(folder, name)
            kind = textio.node_kind(path)
            if kind in (textio.LINK, textio.NODE) or kind == textio.REGULAR and os.lstat(path).st_nlink > 1:
                return path
    return None


def run_process(cmd, log_path, env):
    """Run cmd, output to log_path; return (exit status, output, peak RSS in MiB, wall seconds)."""
    from fairseq_wean.textio import open_in_folder

    start = time.monotonic()
    with open_in_folder(log_path, "w") as log:
        log.write("$ " + " ".join(shlex.quote(str(c)) for c in cmd) + "\n")
        log.flush()
        proc = subprocess.Popen([str(c) for c in cmd], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open_in_folder(log_path, "r") as log:
        out = log.read()
    return proc.returncode, out, usage.ru_maxrss / 1024.0, time.monotonic() - start


def model_args(name, table, dim=256):
    """``name``'s size arguments at ``dim`` units (the transformer's feed-forward layers 4 x dim)."""
    return [str(a).format(table=table, dim=dim, ffn=4 * dim) for a in MODELS[name]]


def train_inner_wps(output):
    """fairseq-train's ``wps`` (target tokens/s) of every ``train_inner`` record of its
    ``--log-format json`` output, in order."""
    records = filter(None, map(read_train_log_line, output.splitlines()))
    return [float(record["wps"]) for tag, record in records if tag == "train_inner" and "wps" in record]


def measure_train(name, data_bin, table, work, cfg, env, bf16=False):
    """fairseq-train's target tokens/s; ``bf16``: with ``--cpu-bf16`` (translation_with_metrics's
    CPU bfloat16 autocast; only measured on a CPU with native bfloat16)."""
    save_dir = os.path.join(work, "ck-" + name + ("-bf16" if bf16 else ""))
    if os.path.islink(save_dir):  # rmtree would refuse it silently (ignore_errors) and fairseq write through it
        os.unlink(save_dir)
    shutil.rmtree(save_dir, ignore_errors=True)  # fairseq would resume from an earlier run's checkpoint
    cmd = [*fairseq_command("train", cfg), data_bin, "--user-dir", USER_DIR, *model_args(name, table),
           "--dropout", 0.1, "--optimizer", "adam", "--lr", 0.0005, "--max-tokens", cfg.max_tokens,
           "--max-update", cfg.updates, "--log-interval", cfg.interval, "--log-format", "json",
           "--disable-validation", "--no-epoch-checkpoints", "--save-dir", save_dir,
           "--num-workers", 0, "--seed", 1, "--cpu"]
    if bf16:
        cmd += ["--task", "translation_with_metrics", "--cpu-bf16"]
    load = os.getloadavg()[0]
    rc, out, rss, wall = run_process(cmd, os.path.join(work, "train-%s%s.log" % (name, "-bf16" if bf16 else "")), env)
    if rc != 0:
        raise RuntimeError("training {} failed ({}):\n{}".format(name, rc, out[-3000:]))
    measured = train_inner_wps(out)[cfg.warmup:]
    if not measured:
        raise RuntimeError("no train_inner lines after warm-up for {}:\n{}".format(name, out[-2000:]))
    return {"train_tok_s": statistics.median(measured), "train_tok_s_all": measured,
            "train_rss_mb": rss, "train_wall_s": wall, "train_load": load,
            "checkpoint": os.path.join(save_dir, "checkpoint_last.pt")}


def measure_generate(name, data_bin, checkpoint, work, cfg, env, subset, batch_size, tag):
    cmd = [*fairseq_command("generate", cfg), data_bin, "--user-dir", USER_DIR, "--path", checkpoint,
           "--gen-subset", subset, "--beam", 5, "--batch-size", batch_size, "--max-len-a", 0,
           "--max-len-b", cfg.gen_len, "--min-len", cfg.gen_len, "--required-batch-size-multiple", 1,
           "--num-workers", 0, "--cpu", "--quiet"]
    load = os.getloadavg()[0]
    rc, out, rss, wall = run_process(cmd, os.path.join(work, "%s-%s.log" % (tag, name)), env)
    if rc != 0:
        raise RuntimeError("generating with {} failed ({}):\n{}".format(name, rc, out[-3000:]))
    m = re.search(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s \(([\d.]+) sentences/s, "
                  r"([\d.]+) tokens/s\)", out)
    if not m:
        raise RuntimeError("no 'Translated' line from fairseq-generate for {}:\n{}".format(name, out[-2000:]))
    sentences, tokens = int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))
    return {"sentences": sentences, "tokens": tokens, "sent_s": float(m.group(4)),
            "tok_s": float(m.group(5)), "rss_mb": rss, "wall_s": wall, "load": load}


def count_flops(name, data_bin, table, work, cfg, env):
    """Matrix-product FLOPs per target token of one training step of ``name`` (:mod:`bench.flops`),
    over ``cfg.flop_batches`` training batches of ``--max-tokens`` spread over the epoch.

    In a process of its own (``python -m bench.flops --count``): a model built in this process
    would stay in its memory, and every later measured process, forked from it, would count
    that memory in its peak RSS."""
    cmd = [sys.executable, "-m", "bench.flops", "--count", name, "--data-bin", data_bin,
           "--table", table or "", "--max-tokens", cfg.max_tokens, "--batches", cfg.flop_batches,
           "--threads", cfg.threads]
    rc, out, _rss, _wall = run_process(cmd, os.path.join(work, "flops-%s.log" % name), env)
    m = re.search(r"^flops per target token: ([0-9.e+]+)$", out, re.M)
    if rc != 0 or not m:
        raise RuntimeError("counting the FLOPs of {} failed ({}):\n{}".format(name, rc, out[-3000:]))
    return float(m.group(1))


def measure_peaks(cfg, env):
    """{"float32": FLOP/s, "bfloat16": FLOP/s or None} of ``python -m bench.flops`` (a process of its
    own, so that this one never holds torch's memory when it starts the measured ones)."""
    cmd = [sys.executable, "-m", "bench.flops", "--threads", cfg.threads]
    os.makedirs(cfg.workdir, exist_ok=True)
    rc, out, _rss, _wall = run_process(cmd, os.path.join(cfg.workdir, "peaks.log"), env)
    found = dict(re.findall(r"^peak (\w+): ([0-9.e+]+) FLOP/s", out, re.M))
    if rc != 0 or "float32" not in found:
        raise RuntimeError("measuring the peak matrix-product FLOP/s failed ({}):\n{}".format(rc, out[-3000:]))
    return {dtype: float(found[dtype]) if dtype in found else None for dtype in ("float32", "bfloat16")}


def bench_vocab(vocab, models, cfg, env, log):
    from fairseq_wean.textio import makedirs_in_folder, open_log

    work = makedirs_in_folder(os.path.join(cfg.workdir, "v%d" % vocab), cfg.workdir, "--workdir folder")
    # appended to across runs (the data is made once): only a regular file of its own, never a link
    with open_log(os.path.join(work, "data.log"), append=True, folder=cfg.workdir) as data_log:
        data_bin = synthetic.make(work, vocab, cfg.n_train, cfg.n_test, cfg.n_latency, BIN, log=data_log)
        table = synthetic.align_table(work, BIN, log=data_log) if "core_copy" in models else None
    results = {}
    for name in models:
        log("[v{}] {}: training".format(vocab, name))
        r = measure_train(name, data_bin, table, work, cfg, env)
        if cfg.flop_batches:
            r["train_flops_per_token"] = count_flops(name, data_bin, table, work, cfg, env)
            r["train_gflop_s"] = r["train_flops_per_token"] * r["train_tok_s"] / 1e9
        if cfg.peaks.get("bfloat16"):
            log("[v{}] {}: training with --cpu-bf16".format(vocab, name))
            bf16 = measure_train(name, data_bin, table, work, cfg, env, bf16=True)
            r["train_tok_s_bf16"] = bf16["train_tok_s"]
            r["train_gflop_s_bf16"] = r["train_flops_per_token"] * bf16["train_tok_s"] / 1e9
        log("[v{}] {}: generation (beam 5, batch 64)".format(vocab, name))
        g = measure_generate(name, data_bin, r["checkpoint"], work, cfg, env, "test", 64, "gen")
        log("[v{}] {}: latency (beam 5, batch 1)".format(vocab, name))
        lat = measure_generate(name, data_bin, r["checkpoint"], work, cfg, env, "test1", 1, "latency")
        r.update(gen_sent_s=g["sent_s"], gen_tok_s=g["tok_s"], gen_rss_mb=g["rss_mb"], gen_load=g["load"],
                 latency_ms=1000.0 / lat["tok_s"], latency_load=lat["load"])
        results[name] = r
        log("[v{}] {}: {:.0f} tok/s train, {:.2f} sent/s generate, {:.1f} ms/token, RSS {:.0f}/{:.0f} MiB".format(
            vocab, name, r["train_tok_s"], r["gen_sent_s"], r["latency_ms"], r["train_rss_mb"], r["gen_rss_mb"]))
    return results


# ------------------------------------------------------------------------------ reporting
COLUMNS = [  # key, header, format, higher is better
    ("train_tok_s", "train tok/s", "{:.0f}", True),
    ("gen_sent_s", "generate sent/s (beam 5, batch 64)", "{:.2f}", True),
    ("latency_ms", "latency ms/token (beam 5, batch 1)", "{:.1f}", False),
    ("train_rss_mb", "train peak RSS MiB", "{:.0f}", False),
    ("gen_rss_mb", "generate peak RSS MiB", "{:.0f}", False),
]


def ratio(results, name, key):
    anchor = results.get(ANCHOR)
    if not anchor or not anchor.get(key):
        return None
    return results[name][key] / anchor[key]


def table_markdown(vocab, results, peaks=None):
    """The vocabulary's table: every COLUMNS figure with its ratio to lstm, then (where measured)
    the utilisation: training GFLOP/s of the model's matrix products against ``peaks``."""
    peaks = peaks or {}
    util = [dtype for dtype in ("float32", "bfloat16") if peaks.get(dtype)
            and all(UTILISATION[dtype] in r for r in results.values())]
    head = "| model | " + " | ".join("{} (x lstm, {})".format(h, "higher is better" if up else "lower is better")
                                     for _, h, _, up in COLUMNS)
    if util:
        head += " | training GFLOPs per 1k target tokens"
        head += "".join(" | training GFLOP/s, {} (share of the {} peak)".format(
            "float32" if d == "float32" else "--cpu-bf16", d) for d in util)
    head += " |"
    ncols = len(COLUMNS) + (1 + len(util) if util else 0)
    lines = ["**Vocabulary {:,} words**".format(vocab), "", head, "|" + "---|" * (ncols + 1)]
    for name, r in results.items():
        cells = []
        for key, _, fmt, _ in COLUMNS:
            q = ratio(results, name, key)
            cells.append(fmt.format(r[key]) + (" ({:.2f}x)".format(q) if q is not None else ""))
        if util:
            cells.append("{:.2f}".format(r["train_flops_per_token"] * 1000 / 1e9))
            cells += ["{:.1f} ({:.0%})".format(r[UTILISATION[d]], r[UTILISATION[d]] * 1e9 / peaks[d]) for d in util]
        lines.append("| {} | {} |".format(name, " | ".join(cells)))
    return "\n".join(lines)


# the result key of the training GFLOP/s measured against each peak
UTILISATION = {"float32": "train_gflop_s", "bfloat16": "train_gflop_s_bf16"}


def peaks_markdown(peaks):
    """One line: the peak matrix-product FLOP/s of one thread, as measured at the run's start and end."""
    f32 = "float32 {:.1f} GFLOP/s".format(peaks["float32"] / 1e9)
    bf16 = ("bfloat16 {:.1f} GFLOP/s".format(peaks["bfloat16"] / 1e9) if peaks.get("bfloat16")
            else "bfloat16 not measured: this CPU has no native bfloat16 (avx512_bf16 or AMX), so "
                 "--cpu-bf16 trains in float32")
    return ("- peak matrix product (`python -m bench.flops`: the fastest square product of sides 256, "
            "512 and 1024, one thread, process CPU time; the higher of the run's start and end): {}; {}. "
            "Utilisation counts only the models' matrix products (FLOPs per target token of a "
            "training step, forward and backward, counted by torch's FlopCounterMode), not their "
            "element-wise work".format(f32, bf16))


def goals_markdown(all_results):
    lines = ["| goal | measured | met |", "|---|---|---|"]
    vocabs = sorted(all_results)
    for text, checks in GOALS:
        parts, met = [], True
        for name, which, key, minimum in checks:
            for vocab in ([max(vocabs)] if which == "max" else [min(vocabs)] if which == "min" else vocabs):
                results = all_results[vocab]
                if name not in results or ANCHOR not in results:
                    continue
                q = ratio(results, name, key)
                ok = q >= minimum
                met &= ok
                parts.append("{} {} @{}k: {:.2f}x{}".format(
                    name, "train" if key == "train_tok_s" else "generate", vocab // 1000, q,
                    "" if ok else " (short by {:.1%})".format(1 - q / minimum)))
        if parts:
            lines.append("| {} | {} | {} |".format(text, "; ".join(parts), "yes" if met else "**no**"))
    parts, met = [], True
    for vocab in vocabs:
        results = all_results[vocab]
        for name in results:
            for key in ("train_rss_mb", "gen_rss_mb"):
                q = ratio(results, name, key)
                if q is not None and name != ANCHOR:
                    met &= q <= MEMORY_GOAL
                    if q > MEMORY_GOAL:
                        parts.append("{} {} @{}k: {:.2f}x".format(name, key.split("_")[0], vocab // 1000, q))
    lines.append("| no architecture above {}x the lstm's peak memory | {} | {} |".format(
        MEMORY_GOAL, "; ".join(parts) or "all within", "yes" if met else "**no**"))
    return "\n".join(lines)


def read_epochs(path, metric="loss", what="--convergence log", folder=None):
    """``({epoch: validation METRIC}, {epoch: training wall seconds at the end of the epoch})``
    from a fairseq-train log.

    The log's ``--log-format json`` records (:func:`fairseq_wean.compare.train_log.read_train_log_line`,
    as fairseq-wean-compare and this benchmark write them); a log without any, written before the
    comparison runner switched to json, is read in fairseq's ``simple`` format.

    The wall seconds are fairseq's ``wall`` meter, which restarts with every fairseq-train process.
    A run resumed from ``checkpoint_last.pt`` (fairseq logs ``Loaded checkpoint``) appends a second
    process to the same log, so its epochs' walls are counted from the end of the last epoch
    finished before the resume: the time of the epochs the run kept, without the part of an epoch
    lost when the first process was stopped.
    """
    # {log format: {"valid" or "valid1": {epoch: METRIC}, "wall": {epoch: seconds}}}
    found = {"json": {}, "simple": {}}
    offset = last_wall = 0.0
    # not UTF-8: one line naming the log's line; ``folder``: a log found there (textio.open_in_folder)
    for line in textio.iter_lines(path, what, folder):
        if "| Loaded checkpoint " in line:
            offset = last_wall
            continue
        entry = epoch_entry(line, metric)
        if entry is None:
            continue
        log_format, name, epoch, value = entry
        if name == "wall":
            value = last_wall = offset + value
        found[log_format].setdefault(name, {})[epoch] = value
    entries = found["json"] or found["simple"]
    valid = next((entries[tag] for tag in VALID_TAGS if tag in entries), {})
    return valid, entries.get("wall", {})


# the validated subset: fairseq tags its records (and prefixes their keys) with its name, "valid"
# by default and "valid1" in fairseq-wean-compare (the decoded subset)
VALID_TAGS = ("valid", "valid1")


def epoch_entry(line, metric):
    """``(log format, "valid"/"valid1"/"wall", epoch, value)`` of one end-of-epoch line of a
    fairseq-train log (``json`` records, else fairseq's ``simple`` format), else None."""
    parsed = read_train_log_line(line)
    if parsed:
        tag, record = parsed
        if tag in VALID_TAGS and tag + "_" + metric in record:
            return "json", tag, int(record["epoch"]), float(record[tag + "_" + metric])
        if tag == "train" and "train_wall" in record:
            return "json", "wall", int(record["epoch"]), float(record["train_wall"])
        return None
    m = re.search(r"\| valid \| epoch (\d+) \|.*?\| {} ([\d.]+)".format(re.escape(metric)), line)
    if m:
        return "simple", "valid", int(m.group(1)), float(m.group(2))
    m = re.search(r"\| train \| epoch (\d+) \|.*?\| wall ([\d.]+)", line)
    if m:
        return "simple", "wall", int(m.group(1)), float(m.group(2))
    return None


def parse_convergence(path, metric="loss", maximize=False):
    """(best epoch, best value, wall seconds at that epoch, epochs run) from a fairseq-train log."""
    valid, walls = read_epochs(path, metric)
    if not valid:
        return None
    best = (max if maximize else min)(valid, key=lambda e: (valid[e], -e) if maximize else (valid[e], e))
    return best, valid[best], walls.get(best), max(valid)


def convergence_spec(spec):
    """``(ARCH, LOG)`` of one ``--convergence ARCH=LOG``; a one-line error for any other form."""
    name, sep, path = spec.partition("=")
    if not sep or not name.strip() or not path:
        raise FairseqWeanError("--convergence {!r}: expected ARCH=LOG (a model name and its fairseq-train "
                               "log)".format(spec))
    return name, path


def read_convergence(specs, metric, maximize):
    """{ARCH: (best epoch, best value, wall s, epochs run, LOG)} of the ``--convergence`` specs, each log
    read (as the user's file, :mod:`fairseq_wean.textio`) and checked before any work: a missing or
    unreadable log, one that is not UTF-8, or one with no validation METRIC is one line."""
    pairs = [convergence_spec(spec) for spec in specs]
    from bench import run_checks

    run_checks.check_items("--convergence", pairs, key=lambda pair: pair[0])
    rows = {}
    for name, path in pairs:
        found = parse_convergence(path, metric, maximize)
        if found is None:
            raise FairseqWeanError("--convergence {}={}: the log has no validation {} of any epoch (a fairseq-train "
                                   "log with validation, --log-format json or simple)".format(name, path, metric))
        rows[name] = found + (path,)
    return rows


def convergence_markdown(specs, metric, maximize, rows=None):
    """The table of ``rows`` (:func:`read_convergence`; read from ``specs`` when not given)."""
    if not specs:
        return ("No fairseq-train logs of the comparison runs were given (``--convergence ARCH=LOG``), "
                "so time to the best validation score is not measured in this run; "
                "``python -m bench.convergence COMPARE_DIR`` reads it from a comparison run.")
    rows = read_convergence(specs, metric, maximize) if rows is None else rows
    lines = ["| model | best valid {} | at epoch (x lstm) | wall s at that epoch (x lstm) | epochs run | log |".format(
        metric), "|---|---|---|---|---|---|"]
    anchor = rows.get(ANCHOR)
    for name, (epoch, value, wall, epochs, path) in rows.items():
        re_ = " ({:.2f}x)".format(epoch / anchor[0]) if anchor else ""
        rw = " ({:.2f}x)".format(wall / anchor[2]) if anchor and wall and anchor[2] else ""
        lines.append("| {} | {:.3f} | {}{} | {}{} | {} | `{}` |".format(
            name, value, epoch, re_, "{:.0f}".format(wall) if wall else "n/a", rw, epochs, path))
    return "\n".join(lines)


def machine_description(threads):
    import torch

    from fairseq_wean import cpu

    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = "{:.0f} GiB RAM".format(int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) / 2 ** 20)
    except (OSError, AttributeError):
        pass
    try:
        from importlib.metadata import version

        fairseq_version = version("fairseq-fixed")
    except Exception:  # noqa: BLE001
        import fairseq

        fairseq_version = fairseq.__version__
    return "{}, {}; Python {}, torch {}, fairseq {}; {} thread(s) per process; no GPU used".format(
        cpu.describe(), mem, platform.python_version(), torch.__version__, fairseq_version, threads)


def report(all_results, cfg, argv, started, finished, loads):
    out = [BEGIN, "## Performance benchmark", "",
           "- date: {} (run took {:.0f} min)".format(started.strftime("%Y-%m-%d %H:%M"),
                                                    (finished - started).total_seconds() / 60),
           "- machine: " + machine_description(cfg.threads),
           "- clock: " + ("process CPU time (`--clock cpu`: one thread per process, so this is the wall time "
                          "of an idle machine; not inflated by other users of this shared machine)"
                          if cfg.clock == "cpu" else "wall clock (`--clock wall`)"),
           "- load average (1 min) at start / end: {:.1f} / {:.1f} (the machine was shared; "
           "each measurement's own load is in the JSON)".format(*loads),
           "- command: `{}`".format(" ".join(shlex.quote(a) for a in ["python", "-m", "bench.run"] + argv)),
           "- setting: synthetic Zipf data (s=1), {} training pairs, sources 8-32 words; "
           "2+2 layers, 256 units, dropout 0.1, Adam, --max-tokens {}; training: median of {} "
           "log intervals of {} updates after {} warm-up interval(s); generation: {} test sentences, "
           "every hypothesis {} tokens; latency: {} sentences one at a time".format(
               cfg.n_train, cfg.max_tokens, cfg.updates // cfg.interval - cfg.warmup, cfg.interval,
               cfg.warmup, cfg.n_test, cfg.gen_len, cfg.n_latency),
           ""]
    if cfg.peaks:
        out.insert(len(out) - 1, peaks_markdown(cfg.peaks))  # after the setting, before the blank line
    for vocab in sorted(all_results):
        out += [table_markdown(vocab, all_results[vocab], cfg.peaks), ""]
    out += ["**Goals** (ratios to fairseq lstm, same run)", "", goals_markdown(all_results), "",
            "**Time to the best validation score** (comparison runs on real data)", "",
            convergence_markdown(cfg.convergence, cfg.convergence_metric, cfg.maximize,
                                 getattr(cfg, "convergence_rows", None)), "", END]
    return "\n".join(out)


def check_section_output(path, what="--out"):
    """Refuse before any work a page that :func:`write_section` would refuse after it: a symbolic
    link (the section is merged into the file itself), a folder, a pipe or a device (its folder is
    made, as the page always was)."""
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.textio import check_output

    if os.path.islink(path):
        raise FairseqWeanError("{} {} is a symbolic link: the section is merged into the file itself; give the "
                               "file's own path".format(what, path))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    check_output(path, (), what)


def write_section(path, section, begin=BEGIN, end=END, what="--out"):
    """Replace the text between ``begin`` and ``end`` in ``path`` (append if they are absent), through
    :func:`fairseq_wean.textio.update_section`: the old page is read only as itself and the new one
    replaces it atomically; a symbolic link, pipe, device or folder there is refused in one line."""
    from fairseq_wean.textio import update_section

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    update_section(path, section, begin, end, what)


MAX_UPDATES = 1000000  # a benchmark's training updates: more is a typo (fairseq's --max-update is an int64)


def fairseq_ranged(dest, low=None, high=None):
    """The argparse ``type`` of a bench option whose value becomes fairseq's option ``dest`` (``--max-tokens``,
    ``--max-update``, ...): fairseq's own range (the row of :mod:`fairseq_wean.option_ranges` that fairseq-train
    and fairseq-generate apply at parse), narrowed by the bench's ``low`` / ``high`` where given. A value
    fairseq refuses is argparse's one-line error here, before any data is made, not fairseq-train's usage
    text inside a traceback after it."""
    from fairseq_wean.option_ranges import FAIRSEQ_RANGES, GENERATION_RANGES, SHARDING_RANGES

    row_low, kind, row_high, above = {**FAIRSEQ_RANGES, **SHARDING_RANGES, **GENERATION_RANGES}[dest]
    low = row_low if low is None else max(low, row_low)
    high = row_high if high is None else high if row_high is None else min(high, row_high)
    return at_least(low, kind, high, above and low == row_low)


def number_list(low, kind=int, high=None):
    """An argparse ``type`` for a comma list of numbers, each in range (:func:`fairseq_wean.errors.at_least`)
    and each once (``--vocabs 5,5`` would measure one vocabulary twice): argparse's one-line usage error
    before any work. Returns the list as text, ``"8000,50000"`` (what ``cfg.vocabs`` holds by default)."""
    item = at_least(low, kind, high)

    def parse(text):
        items = [x.strip() for x in text.split(",")]
        if not text.strip() or not all(items):
            raise argparse.ArgumentTypeError("expected a comma list of numbers, got {!r}".format(text))
        values = [item(x) for x in items]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise argparse.ArgumentTypeError("{} given twice: each once".format(",".join(map(str, twice))))
        return ",".join(map(str, values))

    parse.__name__ = "comma list of " + item.__name__
    parse.range = item.range
    return parse


def get_parser():
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a smoke run: few updates, small data, 8k only")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated, from: " + ", ".join(MODELS))
    p.add_argument("--vocabs", type=number_list(1), default=None,
                   help="comma-separated vocabulary sizes, each once (default 8000,50000)")
    p.add_argument("--updates", type=fairseq_ranged("max_update", 1, MAX_UPDATES), help="training updates per model")
    p.add_argument("--interval", type=fairseq_ranged("log_interval"),
                   help="updates per measured log interval (at most --updates)")
    p.add_argument("--warmup", type=at_least(0), help="log intervals dropped before the median (fewer than "
                                                      "--updates / --interval)")
    p.add_argument("--max-tokens", type=fairseq_ranged("max_tokens"), default=2048,
                   help="tokens per training batch (default 2048)")
    p.add_argument("--gen-len", type=options.quantity("length"), default=16, help="length of every generated hypothesis (default 16)")
    p.add_argument("--flop-batches", type=at_least(0), default=6,
                   help="training batches whose matrix-product FLOPs are counted per model (for the "
                        "utilisation columns; 0: no utilisation columns)")
    p.add_argument("--threads", type=options.quantity("threads"), default=1, help="OMP/MKL threads per process (default 1)")
    p.add_argument("--clock", choices=("cpu", "wall"), default=None,
                   help="clock of fairseq's meters in the measured processes: cpu (process CPU time, "
                        "default: not inflated by other processes on a shared machine) or wall")
    p.add_argument("--workdir", default=None, help="data, checkpoints, logs (default: work_dirs/bench[-quick], git-ignored)")
    p.add_argument("--out", default=None,
                   help="markdown file whose benchmark section is (re)written (default docs/results/performance.md; "
                        "with --device: none, the tables are printed)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="measure in this process on this device (fairseq's Trainer and SequenceGenerator, "
                        "peak GPU memory; bench/device_bench.py) instead of the command lines on the CPU")
    p.add_argument("--precisions", default=None,
                   help="with --device: comma-separated, from " + ", ".join(device_bench.PRECISIONS)
                        + " (default fp32,amp,fp16 on cuda, fp32 on cpu)")
    p.add_argument("--dim", type=at_least(1), default=256, help="units of every layer (default 256)")
    p.add_argument("--n-train", type=at_least(1), help="synthetic training pairs (default 6000; --quick 2000)")
    p.add_argument("--n-test", type=at_least(1), help="sentences generated at batch 64 (default 128; --quick 64)")
    p.add_argument("--n-latency", type=at_least(1), help="sentences generated one at a time (default 8; --quick 4)")
    p.add_argument("--json", default=None,
                   help="results JSON (default WORKDIR/results.json); with --device rewritten after every model")
    p.add_argument("--convergence", nargs="+", default=[], metavar="ARCH=LOG",
                   help="fairseq-train logs of comparison runs on real data, one per model (each ARCH once)")
    p.add_argument("--convergence-metric", default=None, help="validation metric in those logs (default loss)")
    p.add_argument("--maximize", action="store_true", help="higher --convergence-metric is better")
    return options.once(p)


def refuse(message):
    """bench.run's usage error: one line, exit status 2."""
    get_parser().error(message)


def check_before_work(cfg, models):
    """bench.run's checks of its lists, inputs, outputs and --workdir before any work
    (:mod:`bench.run_checks`); ``cfg.convergence_rows``: the --convergence logs, read."""
    from bench import run_checks

    vocabs = [int(v) for v in str(cfg.vocabs).split(",")]
    run_checks.check_items("--models", models)
    run_checks.check_items("--vocabs", vocabs)
    run_checks.check_items("--precisions", cfg.precisions.split(",") if cfg.precisions else [])
    cfg.convergence_rows = read_convergence(cfg.convergence, cfg.convergence_metric, cfg.maximize)
    run_checks.check_workdir(cfg, models, vocabs)
    json_path = cfg.json or os.path.join(cfg.workdir, "results.json")
    page = cfg.out or (None if cfg.device else os.path.join(REPO, "docs", "results", "performance.md"))
    outputs = [(flag, path) for flag, path in (("--out", page), ("--json", json_path)) if path]
    own = [path for path, kind in run_checks.workdir_entries(cfg, models, vocabs) if kind == "file"
           and not (cfg.json is None and path == json_path)]  # WORKDIR/results.json: --json itself
    run_checks.check_outputs(outputs, [("--convergence", row[-1]) for row in cfg.convergence_rows.values()], own)
    if cfg.device:
        run_checks.check_device_batches(cfg, vocabs)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    cfg = get_parser().parse_args(argv)
    interval_given = cfg.interval is not None
    profile = PROFILES[{(False, False): "full", (False, True): "quick", (True, False): "device",
                        (True, True): "device-quick"}[(bool(cfg.device), cfg.quick)]]
    for key, value in profile.items():
        if getattr(cfg, key, None) is None:
            setattr(cfg, key, value)
    cfg.workdir = cfg.workdir or os.path.join(REPO, "work_dirs", "bench" + ("-" + cfg.device if cfg.device else "")
                                              + ("-quick" if cfg.quick else ""))
    try:  # as given: abspath drops WORK/nodir/.., os.makedirs would make nodir
        textio.check_resolvable(cfg.workdir, "--workdir")
    except FairseqWeanError as exc:
        get_parser().error(str(exc))
    cfg.workdir = os.path.abspath(cfg.workdir)  # handed to training children that run in another cwd
    problem = textio.path_problem(cfg.workdir, ("fairseq-path",), "--workdir")  # its data and checkpoints: fairseq's
    if problem:
        get_parser().error(problem)
    planted = planted_entry(cfg.workdir)
    if planted:
        get_parser().error("--workdir {}: {} is a symbolic link, named pipe or device, or a hard link: the "
                           "benchmark writes and deletes only its own files there; remove it or use another --workdir".format(cfg.workdir, planted))
    models = [m for m in cfg.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        get_parser().error("unknown model(s): " + ", ".join(unknown))
    # an option that changes nothing in this run is refused, not ignored (tests/test_compare_bench_options.py)
    for flag, given, needs in (("--convergence-metric", cfg.convergence_metric is not None, cfg.convergence),
                               ("--maximize", cfg.maximize, cfg.convergence)):
        if given and not needs:
            get_parser().error("{} does nothing without --convergence ARCH=LOG (it reads those logs)".format(flag))
    for flag, given in (("--interval", interval_given),
                        ("--clock", cfg.clock is not None), ("--convergence", bool(cfg.convergence))):
        if given and cfg.device:
            get_parser().error("{} does nothing with --device (measured in one process: timed steps, no command "
                               "lines, no log intervals)".format(flag))
    cfg.clock = cfg.clock or "cpu"
    cfg.convergence_metric = cfg.convergence_metric or "loss"
    if ANCHOR not in models:
        get_parser().error("the anchor model {} must be measured in the same run".format(ANCHOR))
    if cfg.device:
        cfg.precisions = cfg.precisions or ("fp32,amp,fp16" if cfg.device == "cuda" else "fp32")
        bad = [p for p in cfg.precisions.split(",") if p not in device_bench.PRECISIONS]
        if bad:
            get_parser().error("unknown precision(s): {} (known: {})".format(", ".join(bad), ", ".join(device_bench.PRECISIONS)))
    elif cfg.precisions:
        get_parser().error("--precisions needs --device (the command lines train in float32, and --cpu-bf16 "
                           "where the CPU has native bfloat16)")
    elif cfg.dim != 256:
        get_parser().error("--dim needs --device (bench.flops and bench.profile count the 256-unit models)")
    # the command lines measure log intervals: none left after the warm-up was a StatisticsError after training
    elif cfg.interval > cfg.updates:
        get_parser().error("--interval {} is more than --updates {}: no log interval would be measured".format(
            cfg.interval, cfg.updates))
    elif cfg.warmup >= cfg.updates // cfg.interval:
        get_parser().error("--warmup {} drops every one of the {} log intervals of --updates {} --interval {}: "
                           "give fewer warm-up intervals or more updates".format(
                               cfg.warmup, cfg.updates // cfg.interval, cfg.updates, cfg.interval))
    try:
        check_before_work(cfg, models)
    except FairseqWeanError as exc:
        refuse(str(exc))
    models = [ANCHOR] + [m for m in models if m != ANCHOR]
    if cfg.out:  # before any work: a page or JSON the run could not write was found after it
        check_section_output(cfg.out)
    if cfg.json:
        from fairseq_wean.textio import check_output

        check_output(cfg.json, (), "--json")
    if cfg.device:
        return device_bench.run(cfg, models, argv)
    if not cfg.out:
        cfg.out = os.path.join(REPO, "docs", "results", "performance.md")
        check_section_output(cfg.out)
    env = dict(os.environ, OMP_NUM_THREADS=str(cfg.threads), MKL_NUM_THREADS=str(cfg.threads),
               PYTHONUNBUFFERED="1")
    started = datetime.datetime.now()
    loads = [os.getloadavg()[0]]
    cfg.peaks = measure_peaks(cfg, env) if cfg.flop_batches else {}

    def log(msg):
        print("{} {}".format(datetime.datetime.now().strftime("%H:%M:%S"), msg), flush=True)

    all_results = {}
    for vocab in [int(v) for v in str(cfg.vocabs).split(",")]:
        all_results[vocab] = bench_vocab(vocab, models, cfg, env, log)
    loads.append(os.getloadavg()[0])
    if cfg.peaks:  # the higher of start and end: a peak is what the machine can do
        end = measure_peaks(cfg, env)
        cfg.peaks = {k: max(v, end[k]) if v else None for k, v in cfg.peaks.items()}
    section = report(all_results, cfg, argv, started, datetime.datetime.now(), loads)
    print(section)
    write_section(cfg.out, section)
    import json

    from fairseq_wean.textio import atomic_output

    json_path = cfg.json or os.path.join(cfg.workdir, "results.json")
    with atomic_output(json_path, (), "--json") as f:
        json.dump({str(v): r for v, r in all_results.items()}, f, indent=1)
    log("wrote {} and {}".format(cfg.out, json_path))
    return 0


if __name__ == "__main__":
    from fairseq_wean.errors import FairseqWeanError, error_line

    try:
        sys.exit(main())
    except FairseqWeanError as exc:  # a refused output or workdir: one line, no traceback
        sys.stdout.flush()
        sys.exit(error_line("python -m bench.run", exc))
