"""One command per task: prepare the data, train fairseq's baselines and our models under one budget,
select each on validation, decode the test sets with beam 5, score, and write the comparison.

    python examples/compare.py {simplification,summarization,translation} [DATA_DIR] [--tiny]
    bash examples/compare.sh simplification ../shared/data          # the same

Systems (equal sizes where the architectures allow: 2 layers, 256 units, 256-d embeddings; one
epoch budget per task, the same for every system): fairseq ``lstm``, fairseq ``transformer``
(small: 2+2 layers, 256, FFN 512, 4 heads), ``wean_lstm``, ``core_copy`` and
``word_attn_gated`` of this plugin, and for simplification the character-level ``transformer`` of
Yu et al. (2018). Every fairseq command loads the plugin (``--user-dir fairseq_wean``), the
baselines too, so all runs share its data fixes (no dropped last batch).

Selection: after every epoch the validation sources are decoded (beam 5) and scored (SARI for
simplification, ROUGE-L for summarization, BLEU for translation); the epoch with the best score
is the system (never the test set). Its test outputs are scored with ``fairseq-wean-score``,
with paired-bootstrap p-values against fairseq ``lstm`` on the same vocabulary.

Time on a 2-core CPU machine (two systems at a time, one thread each; see docs/RESULTS.md):
simplification ~2 h (11 systems x 2 epochs; 2 h 02 min on an idle machine, training 10-32 min
per word or sentencepiece system, 37 min for the character transformer), summarization
~25-35 min (5 x 3 epochs of the 10k Gigaword sample), translation ~1 h (5 x 2 epochs of Multi30k).
``--runs`` runs a part; finished systems are reused. ``--tiny`` (CI): 1-3 min.

Writes to ``--out`` (default ``work_dirs/compare-TASK``): ``results.md`` and ``results.csv``
(the table), ``valid_curve.png`` (validation score per epoch for every system, WEAN's Figure 2),
``results.json`` (everything, with the exact commands) and ``runs/SYSTEM-VOCAB/`` (training log,
outputs). A finished system is not redone when the command is run again (``--force`` redoes).
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from preprocess import common  # noqa: E402

USER_DIR = os.path.join(REPO, "fairseq_wean")

# ---------------------------------------------------------------------------------------------
# Systems. Sizes: 2 layers, 256 units, 256-d embeddings everywhere.
# Adam 2e-3 and batches of 32 sentences: WEAN used 1e-3 and 64, but for budgets of a few epochs on
# CPU this learns much faster (wean_lstm on simplification: validation loss 4.0 instead of 6.8 after
# about one epoch). Dropout 0.4 as WEAN.
RNN_OPTIM = ["--optimizer", "adam", "--lr", "0.002", "--clip-norm", "5", "--dropout", "0.4"]
TRANSFORMER_OPTIM = ["--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.001",
                     "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "500", "--warmup-init-lr", "1e-07",
                     "--clip-norm", "5", "--dropout", "0.3"]
TRANSFORMER_SMALL = ["--arch", "transformer", "--encoder-layers", "2", "--decoder-layers", "2",
                     "--encoder-embed-dim", "256", "--decoder-embed-dim", "256",
                     "--encoder-ffn-embed-dim", "512", "--decoder-ffn-embed-dim", "512",
                     "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
SYSTEMS = {
    "lstm": ["--arch", "lstm", "--encoder-embed-dim", "256", "--encoder-hidden-size", "256",
             "--encoder-layers", "2", "--decoder-embed-dim", "256", "--decoder-hidden-size", "256",
             "--decoder-layers", "2", "--decoder-out-embed-dim", "256"] + RNN_OPTIM,
    "transformer": TRANSFORMER_SMALL + ["--share-decoder-input-output-embed"] + TRANSFORMER_OPTIM,
    "wean_lstm": ["--arch", "wean_lstm", "--embed-dim", "256", "--encoder-hidden-size", "256",
                  "--encoder-layers", "2", "--decoder-hidden-size", "256", "--decoder-layers", "2"] + RNN_OPTIM,
    "core_copy": ["--arch", "core_copy", "--embed-dim", "256", "--encoder-hidden-size", "256",
                  "--encoder-layers", "2", "--decoder-hidden-size", "256", "--decoder-layers", "2",
                  "--criterion", "core_mode_loss"] + RNN_OPTIM,
    "word_attn_gated": ["--arch", "word_attn_gated", "--encoder-embed-dim", "256", "--encoder-hidden-size", "256",
                        "--encoder-layers", "2", "--decoder-embed-dim", "256", "--decoder-hidden-size", "256",
                        "--decoder-layers", "2"] + RNN_OPTIM,
    # Yu et al. 2018: 2+2 layers, 256, inner 512, dropout 0.1, label smoothing 0.1, Adam
    # (0.9, 0.98, 1e-9), no embedding sharing; warm-up shortened to our short budget.
    "char_transformer": TRANSFORMER_SMALL + [
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--adam-eps", "1e-09", "--lr", "0.001",
        "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "500", "--warmup-init-lr", "1e-07",
        "--clip-norm", "5", "--dropout", "0.1",
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"],
}
BASELINE = "lstm"  # p-values are against fairseq lstm on the same vocabulary
METRIC_NAMES = {"sari": "SARI", "sari_legacy": "SARI (legacy)", "bleu": "BLEU", "fkgl": "FKGL", "rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L"}

# ---------------------------------------------------------------------------------------------
# Tasks. runs: (system, vocabulary variant). Epoch budgets are sized for 2 CPU cores (the times in
# the module docstring and the README); --epochs changes them. Summarization and translation had 10
# and 6 epochs (about 2 h and 2 h 30 min here); 3 and 2 keep each under an hour, and the tables in
# docs/RESULTS.md are these defaults' output.
WORD_SYSTEMS = ["lstm", "transformer", "wean_lstm", "core_copy", "word_attn_gated"]
TASKS = {
    "simplification": {
        "datasets": {"turkcorpus": "preprocess.prepare_simplification"},
        "epochs": 2,
        "runs": [(s, "word-pg" if s == "core_copy" else "word") for s in WORD_SYSTEMS]
        + [(s, "spm") for s in WORD_SYSTEMS] + [("char_transformer", "char")],
        # CI: every vocabulary variant and every recipe path once (the argument lists of the other
        # systems are checked by tests/test_recipes.py without training)
        "tiny_runs": [("lstm", "word"), ("wean_lstm", "word"), ("core_copy", "word-pg"), ("wean_lstm", "spm"),
                      ("char_transformer", "char")],
        "baselines": ["copy"],
    },
    "summarization": {
        "datasets": {"gigaword": "preprocess.prepare_gigaword", "lcsts": "preprocess.prepare_lcsts"},
        "epochs": 3,
        "runs": [(s, "word-pg" if s == "core_copy" else "word") for s in WORD_SYSTEMS],
        "tiny_runs": [("wean_lstm", "word")],
        "baselines": ["lead"],
    },
    "translation": {
        "datasets": {"multi30k": "preprocess.prepare_multi30k", "iwslt14": "preprocess.prepare_iwslt14"},
        "epochs": 2,
        "runs": [(s, "word-pg" if s == "core_copy" else "word") for s in WORD_SYSTEMS],
        "tiny_runs": [("lstm", "word")],
        "baselines": [],
    },
}
# Datasets whose runs all use one vocabulary (BPE'd IWSLT'14; LCSTS is characters, prepared as "word").
DATASET_VOCAB = {"iwslt14": "bpe", "lcsts": "word"}
BATCH = {"word": ["--batch-size", "32", "--max-tokens", "4000"],
         "char": ["--batch-size", "64", "--max-tokens", "12000"]}
# Output length cap 1.2 x source + 10 tokens (fairseq's default, 200 tokens, is too short for
# characters and lets an untrained model babble for 200 steps).
GEN_ARGS = ["--beam", "5", "--batch-size", "64", "--max-len-a", "1.2", "--max-len-b", "10"]


TRAIN_INNER = re.compile(r"\| train_inner \| epoch (\d+):\s+(\d+ / \d+) loss=([0-9.]+)")
TRAIN_EPOCH = re.compile(r"\| train \| epoch (\d+) \|()\s*loss ([0-9.]+)")


_OUTPUT_LOCK = threading.Lock()


def say(line):
    """One whole line to stdout: the --jobs runs report from threads, and print() writes the text
    and its newline separately, so their lines interleaved."""
    with _OUTPUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(msg):
    say("[{}] {}".format(time.strftime("%H:%M:%S"), msg))


def fmt_secs(s):
    s = int(round(s))
    return "{}h{:02d}m".format(s // 3600, s % 3600 // 60) if s >= 3600 else "{}m{:02d}s".format(s // 60, s % 60)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("task", choices=sorted(TASKS))
    p.add_argument("data_dir", nargs="?", default=common.DEFAULT_DATA_DIR,
                   help="raw benchmark data (default ../shared/data next to the repository)")
    p.add_argument("--dataset", help="summarization: gigaword (default) or lcsts (needs LCSTS PART I); "
                                     "translation: multi30k (default) or iwslt14 (needs its training data)")
    p.add_argument("--out", help="output directory (default work_dirs/compare-TASK[-DATASET][-tiny])")
    p.add_argument("--tiny", action="store_true",
                   help="CI size: a few hundred training pairs, 12 evaluation sentences, 1 epoch, fewer runs")
    p.add_argument("--epochs", type=int, help="epoch budget of every system (default: per task)")
    p.add_argument("--runs", help="comma list of SYSTEM:VOCAB to run, e.g. lstm:word,wean_lstm:spm "
                                  "(default: the task's list; systems: {})".format(", ".join(SYSTEMS)))
    p.add_argument("--jobs", type=int, default=2,
                   help="systems trained/decoded at the same time (default 2: one per core of a 2-core machine)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads per job (OMP_NUM_THREADS; default 1: on a shared 2-core machine two "
                        "threads per process made fairseq's LSTM 14x slower than one)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep-checkpoints", action="store_true", help="keep every epoch checkpoint (default: the best)")
    p.add_argument("--force", action="store_true", help="redo finished systems")
    args = p.parse_args(argv)
    task = TASKS[args.task]
    datasets = list(task["datasets"])
    if args.dataset is None:
        args.dataset = datasets[0]
    elif args.dataset not in datasets:
        p.error("--dataset for {}: one of {}".format(args.task, ", ".join(datasets)))
    if args.runs:
        runs = []
        for item in args.runs.split(","):
            system, _, variant = item.partition(":")
            if system not in SYSTEMS or not variant:
                p.error("--runs: {!r} is not SYSTEM:VOCAB with SYSTEM in {}".format(item, ", ".join(SYSTEMS)))
            runs.append((system, variant))
        args.run_list = runs
    else:
        args.run_list = task["tiny_runs" if args.tiny else "runs"]
        vocab = DATASET_VOCAB.get(args.dataset)
        if vocab:  # e.g. IWSLT'14: every system on the 10k joint BPE
            args.run_list = list(dict.fromkeys((s, vocab) for s, _ in args.run_list))
    if args.epochs is None:
        args.epochs = 1 if args.tiny else task["epochs"]
    if args.out is None:
        name = args.task if args.dataset == datasets[0] else "{}-{}".format(args.task, args.dataset)
        args.out = os.path.join(REPO, "work_dirs", "compare-{}{}".format(name, "-tiny" if args.tiny else ""))
    args.out = os.path.abspath(args.out)
    args.data_dir = os.path.abspath(args.data_dir)  # subprocesses run in the repository
    if not os.path.isdir(args.data_dir):
        p.error("data directory {} not found (see README.md, 'Data')".format(args.data_dir))
    return args


# ---------------------------------------------------------------------------------------------
def prepare(args):
    """Run the task's preprocess module (skipped when its recipe.json exists)."""
    task = TASKS[args.task]
    data_out = os.path.join(args.out, "data")
    variants = sorted({v for _, v in args.run_list})
    cmd = [sys.executable, "-m", task["datasets"][args.dataset], "--data-dir", args.data_dir, "--out", data_out,
           "--variants", ",".join(variants), "--seed", str(args.seed)]
    if args.tiny:
        cmd.append("--tiny")
    if common.done(data_out):
        recipe = common.load_recipe(data_out)
        if set(variants) <= set(recipe["variants"]) and bool(recipe.get("tiny")) == bool(args.tiny):
            log("data ready in {}".format(data_out))
            return recipe, cmd
        cmd.append("--force")
    log("preparing data: " + " ".join(cmd))
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit("data preparation failed ({})".format(proc.returncode))
    log("data prepared in {}".format(fmt_secs(time.time() - t0)))
    return common.load_recipe(data_out), cmd


def align_table(recipe, data_out, variant):
    """CoRe's alignment table A for a vocabulary variant (built once, cached).

    Built from the training text fairseq-preprocess saw, with every word outside the binarized
    dictionary written as ``<unk>`` (which the table reader skips): the table must only name
    dictionary words, and rare target-only words stay words in the ``word-pg`` text.
    """
    info = recipe["variants"][variant]
    bin_dir = os.path.join(data_out, info["bin"])
    table = os.path.join(bin_dir, "core_align_table.tsv")
    if os.path.exists(table):
        return table
    with open(os.path.join(bin_dir, "dict.{}.txt".format(recipe["src"])), encoding="utf-8") as f:
        vocab = {line.rsplit(" ", 1)[0] for line in f}
    text = os.path.join(data_out, info.get("text", "text"))
    inputs = []
    for lang in (recipe["src"], recipe["tgt"]):
        path = os.path.join(bin_dir, "align-input." + lang)
        common.write_lines(path, (" ".join(w if w in vocab else "<unk>" for w in line.split())
                                  for line in common.read_lines(os.path.join(text, "train." + lang))))
        inputs.append(path)
    cmd = [common.bin_path("fairseq-wean-align-table"), "--src", inputs[0], "--tgt", inputs[1],
           "--topk", "10", "--out", table + ".tmp"]
    log("building CoRe's alignment table: " + " ".join(cmd))
    common.run(cmd, log_path=table + ".log")
    os.replace(table + ".tmp", table)
    return table


def train_command(args, recipe, system, variant, run_dir):
    data_out = os.path.join(args.out, "data")
    info = recipe["variants"][variant]
    cmd = [common.bin_path("fairseq-train"), os.path.join(data_out, info["bin"]), "--user-dir", USER_DIR,
           "--task", "translation", "--source-lang", recipe["src"], "--target-lang", recipe["tgt"]]
    cmd += SYSTEMS[system]
    if system == "core_copy":
        cmd += ["--core-align-table", align_table(recipe, data_out, variant)]
    cmd += BATCH["char" if variant == "char" else "word"]
    cmd += ["--max-epoch", str(args.epochs), "--save-dir", os.path.join(run_dir, "checkpoints"),
            "--no-save-optimizer-state", "--no-last-checkpoints", "--seed", str(args.seed),
            "--ignore-unused-valid-subsets",  # valid1: the validation sources, decoded per epoch
            "--log-format", "simple", "--log-interval", "10" if args.tiny else "100", "--num-workers", "0"]
    return cmd


# glibc malloc settings for the training and decoding processes. By default glibc serves every
# allocation above 32 MiB with a fresh mmap and unmaps it on free, so each training step
# page-faults its largest tensors anew (the B*T x V logits and their gradient, a V x 256 Adam
# temporary for every embedding and output matrix). Keeping freed memory in the heap changes no
# number (the same operations run on the same values) and made every system's training 3-23%
# faster in the simplification comparison (docs/RESULTS.md: fairseq lstm on words 21m23s ->
# 18m07s, same losses and scores). Values already set in the environment win.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(4 << 30), "MALLOC_TRIM_THRESHOLD_": str(64 << 30)}


def job_env(args):
    """Environment of every fairseq process: ``--threads`` torch threads, MALLOC_ENV, unbuffered output."""
    n = str(args.threads)
    env = dict(MALLOC_ENV)
    env.update(os.environ)
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS=n, MKL_NUM_THREADS=n)
    return env


def train(args, recipe, system, variant, run_dir, label):
    """fairseq-train, streaming progress; returns (wall seconds, {epoch: valid loss}, command)."""
    cmd = train_command(args, recipe, system, variant, run_dir)
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    if os.path.isdir(ckpt_dir):
        shutil.rmtree(ckpt_dir)
    os.makedirs(run_dir, exist_ok=True)
    log_path = os.path.join(run_dir, "train.log")
    log("{}: training {} epoch(s); log {}".format(label, args.epochs, log_path))
    t0 = time.time()
    valid_loss = {}
    # Line-buffered, so `tail -f train.log` follows fairseq-train as it runs.
    with open(log_path, "w", encoding="utf-8", buffering=1) as logf:
        logf.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=job_env(args))
        tail = []
        for line in proc.stdout:
            logf.write(line)
            tail = (tail + [line])[-40:]
            m = TRAIN_INNER.search(line) or TRAIN_EPOCH.search(line)
            if m:
                what = "{} updates".format(m.group(2)) if m.re is TRAIN_INNER else "done"
                say("    {} epoch {} {}, train loss {} ({})".format(
                    label, int(m.group(1)), what, m.group(3), fmt_secs(time.time() - t0)))
            elif "valid on 'valid' subset" in line:
                body = line.split("|", 3)[-1]
                try:
                    epoch = int(body.split("epoch")[1].split("|")[0].strip())
                    loss = float(body.split("| loss ")[1].split(" ")[0])
                    valid_loss[epoch] = loss
                    say("    {} epoch {}: valid loss {:.3f}".format(label, epoch, loss))
                except (IndexError, ValueError):
                    pass
        proc.wait()
    secs = time.time() - t0
    if proc.returncode != 0:
        raise RuntimeError("{}: fairseq-train failed ({}); last lines of {}:\n{}".format(
            label, proc.returncode, log_path, "".join(l[:400] + ("...\n" if len(l) > 400 else "") for l in tail[-15:])))
    log("{}: trained in {}".format(label, fmt_secs(secs)))
    return secs, valid_loss, cmd


def evaluate(args, recipe, system, variant, run_dir, label):
    """Decode + select + count parameters in one process (examples/evaluate_system.py)."""
    data_out = os.path.join(args.out, "data")
    info = recipe["variants"][variant]
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    epochs = sorted(int(f[len("checkpoint"):-3]) for f in os.listdir(ckpt_dir)
                    if f.startswith("checkpoint") and f[len("checkpoint"):-3].isdigit())
    if not epochs:
        raise RuntimeError("{}: no epoch checkpoints in {}".format(label, ckpt_dir))
    gen_args = list(GEN_ARGS)
    plan = {
        "data": os.path.join(data_out, info["bin"]), "data_root": data_out, "user_dir": USER_DIR,
        "post_process": info.get("post_process"), "markers": bool(info.get("markers")),
        "replace_unk": bool(info.get("unk_replaceable")),
        "epochs": [[e, os.path.join(ckpt_dir, "checkpoint{}.pt".format(e))] for e in epochs],
        "valid": recipe["valid"], "tests": recipe["tests"], "gen_args": gen_args,
        "gen_dir": os.path.join(run_dir, "gen"), "out": os.path.join(run_dir, "eval.json"),
    }
    plan_path = os.path.join(run_dir, "eval_plan.json")
    with open(plan_path, "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=2)
    log("{}: decoding validation ({} epoch(s)) and test sets".format(label, len(epochs)))
    t0 = time.time()
    cmd = [sys.executable, os.path.join(HERE, "evaluate_system.py"), plan_path]
    with open(os.path.join(run_dir, "eval.log"), "w", encoding="utf-8") as logf:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=logf, text=True, env=job_env(args))
        for line in proc.stdout:
            if line.startswith("EVAL "):
                say("    {} {}".format(label, line[5:].rstrip()))
        proc.wait()
    if proc.returncode != 0:
        with open(os.path.join(run_dir, "eval.log"), encoding="utf-8") as f:
            tail = "".join(l[:400] + "\n" for l in f.read().splitlines()[-20:])
        raise RuntimeError("{}: evaluation failed ({}):\n{}".format(label, proc.returncode, tail))
    with open(plan["out"], encoding="utf-8") as f:
        result = json.load(f)
    if not args.keep_checkpoints:
        for e in epochs:
            if e != result["best_epoch"]:
                os.remove(os.path.join(ckpt_dir, "checkpoint{}.pt".format(e)))
        best = os.path.join(ckpt_dir, "checkpoint_best.pt")  # fairseq's loss-selected copy
        if os.path.exists(best):
            os.remove(best)
    log("{}: best validation {} {:.2f} at epoch {} ({} decoding)".format(
        label, result["valid_metric"], result["best_valid"], result["best_epoch"], fmt_secs(time.time() - t0)))
    return result


def baseline_outputs(args, recipe):
    """Copy-the-source and LEAD-N outputs: {row name: {test name: {"plain": path}}}."""
    data_out = os.path.join(args.out, "data")
    rows = {}
    out_dir = os.path.join(args.out, "runs", "baselines")
    os.makedirs(out_dir, exist_ok=True)
    for kind in TASKS[args.task]["baselines"]:
        if kind == "copy":
            rows["copy source"] = {t: {"plain": os.path.join(data_out, s["orig"])} for t, s in recipe["tests"].items()}
        elif kind == "lead":
            for n in recipe.get("lead_n", [10]):
                name = "LEAD-{}".format(n)
                rows[name] = {}
                for t, s in recipe["tests"].items():
                    path = os.path.join(out_dir, "{}.{}.txt".format(name, t))
                    src = common.read_lines(os.path.join(data_out, s["orig"]))
                    common.write_lines(path, (" ".join(l.split()[:n]) for l in src))
                    rows[name][t] = {"plain": path}
    return rows


def score(sys_path, spec, data_out, compare_to=None, metrics=None):
    from fairseq_wean.cli import score as scorer  # fairseq-wean-score, in-process
    import contextlib
    import io

    argv = ["--sys", sys_path, "--orig", os.path.join(data_out, spec["orig"]), "--refs"]
    argv += [os.path.join(data_out, r) for r in spec["refs"]] + ["--metrics", metrics or spec["metrics"], "--json"]
    argv += spec.get("score_args", [])
    if compare_to:
        argv += ["--compare-to", compare_to]
    with contextlib.redirect_stdout(io.StringIO()):
        return scorer.main(argv)


# ---------------------------------------------------------------------------------------------
def ref_variant(evals, variant):
    """The vocabulary of the fairseq lstm a row is compared with: its own, else the word-level one."""
    for v in (variant, "word"):
        if (BASELINE, v) in evals:
            return v
    return None


def reference_run(evals, variant):
    v = ref_variant(evals, variant)
    return evals[(BASELINE, v)] if v else None


def build_rows(args, recipe, evals, baselines):
    """One row per (system, vocabulary, decoding): metrics, p-values vs lstm, sizes, times."""
    data_out = os.path.join(args.out, "data")
    rows = []
    entries = [(name, None, "-", outs, None) for name, outs in baselines.items()]
    for (system, variant), ev in evals.items():
        for decoding in ("plain", "replace_unk"):
            if all(decoding in ev["outputs"][t] for t in recipe["tests"]):
                entries.append((system, variant, decoding, {t: ev["outputs"][t] for t in recipe["tests"]}, ev))
    for name, variant, decoding, outs, ev in entries:
        row = {"system": name, "vocab": variant or "-", "decoding": decoding if ev else "-"}
        ref = reference_run(evals, variant) if variant else None
        for test, spec in recipe["tests"].items():
            other = None
            if ref is not None and not (name == BASELINE and variant == ref_variant(evals, variant)):
                other = ref["outputs"][test].get(decoding, ref["outputs"][test]["plain"])
            hyp = outs[test][decoding if ev else "plain"]
            s = score(hyp, spec, data_out, compare_to=other)
            if "sari_legacy" in spec["table"]:  # EASSE legacy=True: the mode published TurkCorpus SARI used
                legacy = score(hyp, dict(spec, score_args=spec.get("score_args", []) + ["--sari-mode", "legacy"]),
                               data_out, compare_to=other, metrics="sari")
                s["sari_legacy"] = legacy["sari"]
                if other:
                    s["p_values"]["sari_legacy"] = legacy["p_values"]["sari"]
            for m in spec["metrics"].split(",") + (["sari_legacy"] if "sari_legacy" in spec["table"] else []):
                if m == "stats":
                    if test == recipe["main_test"]:
                        row["avg_len"] = s["stats"]["avg_len"]
                        row["unk_pct"] = s["stats"]["unk_pct"]
                        row["copy_pct"] = s["stats"]["copy_pct"]
                        row["exact_copy_pct"] = s["stats"]["exact_copy_pct"]
                    continue
                row["{}/{}".format(test, m)] = s[m]
                if other:
                    row["{}/{}/p".format(test, m)] = s["p_values"].get(m)
        if ev:
            row.update(params=ev["params"], output_params=ev["output_params"], output_tied=ev.get("output_tied", False),
                       train_seconds=round(ev["train_seconds"], 1), best_epoch=ev["best_epoch"],
                       best_valid=round(ev["best_valid"], 2))
        rows.append(row)
    return rows


def columns(args, recipe):
    cols = [("system", "System"), ("vocab", "Vocab"), ("decoding", "UNK")]
    for test, spec in recipe["tests"].items():
        for m in spec["table"]:
            cols.append(("{}/{}".format(test, m), "{} {}".format(test, METRIC_NAMES[m])))
            cols.append(("{}/{}/p".format(test, m), "p"))
    cols += [("avg_len", "len"), ("unk_pct", "UNK %"), ("copy_pct", "copy %"), ("exact_copy_pct", "= src %"),
             ("params", "params"), ("output_params", "output-layer params"), ("output_tied", ""), ("train_seconds", "train time"),
             ("best_epoch", "best epoch")]
    return cols


def cell(key, value):
    if value is None or value == "":
        return ""
    if key.endswith("/p"):
        return "<0.001" if value < 0.001 else "{:.3f}".format(value)
    if key in ("params", "output_params"):
        return "{:,}".format(value)
    if key == "output_tied":
        return "tied" if value else ""
    if key == "train_seconds":
        return fmt_secs(value)
    if isinstance(value, float):
        return "{:.2f}".format(value)
    return str(value).replace("replace_unk", "replace-unk")


def write_tables(args, recipe, rows, meta):
    cols = columns(args, recipe)
    with open(os.path.join(args.out, "results.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([k for k, _ in cols])
        for r in rows:
            w.writerow([r.get(k, "") for k, _ in cols])
    lines = ["# {} comparison{}".format(args.task, " (tiny CI run: numbers are meaningless)" if args.tiny else ""), "",
             "Command: `{}`  ".format(meta["command"]),
             "Date: {}; machine: {}; total wall time {}.".format(meta["date"], meta["machine"],
                                                                fmt_secs(meta["wall_seconds"]))
             + (" ({} of {} systems were reused from an earlier invocation: their train and decoding times are in "
                "results.json, the train time column has theirs)".format(meta["reused"], meta["runs"])
                if meta.get("reused") else ""), "",
             "| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(cell(k, r.get(k)) for k, _ in cols) + " |")
    lines += ["", "Epoch budget {} for every system; each system is its epoch with the best validation {} "
                  "(decoded with beam 5); test decoding beam 5.".format(args.epochs, recipe["valid"]["metric"]),
              "SARI: EASSE's corpus_sari (default: lowercase + 13a tokenization); SARI (legacy): EASSE legacy=True, the "
              "variant behind published TurkCorpus numbers. "
              "p: paired bootstrap (1000 resamples, fairseq-wean-score --compare-to) against fairseq `lstm` with the "
              "same vocabulary (else the word-level `lstm`) and the same UNK handling. UNK `replace-unk`: each `<unk>` replaced by the source word with "
              "the highest attention (fairseq's --replace-unk rule). output-layer params: parameters used only "
              "to score the vocabulary; \"tied\": the output layer is the input embedding matrix (counted once, "
              "in params).",
              "", "![validation score per epoch](valid_curve.png)", ""]
    with open(os.path.join(args.out, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def plot_curves(args, recipe, evals):
    import logging

    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import MaxNLocator

    metric = recipe["valid"]["metric"]
    # colour = system, line style = vocabulary: 11 simplification runs outrun any colour cycle
    colours = {system: "C{}".format(i) for i, system in enumerate(SYSTEMS)}
    styles = {"spm": "--", "char": ":", "bpe": "-."}
    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    for (system, variant), ev in evals.items():
        style = dict(marker="o", color=colours.get(system), linestyle=styles.get(variant, "-"),
                     label="{} ({})".format(system, variant))
        xs = [r["epoch"] for r in ev["curve"]]
        axes[0].plot(xs, [r[metric] for r in ev["curve"]], **style)
        loss = ev.get("valid_loss") or {}
        if loss:
            ks = sorted(int(k) for k in loss)
            axes[1].plot(ks, [loss[str(k)] if str(k) in loss else loss[k] for k in ks], **style)
    axes[0].set_title("validation {} per epoch (beam 5)".format(METRIC_NAMES.get(metric, metric)))
    axes[1].set_title("validation loss per epoch (base 2)")
    for ax in axes:
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("{}: training curves (cf. WEAN Figure 2)".format(args.task))
    fig.tight_layout()
    path = os.path.join(args.out, "valid_curve.png")
    fig.savefig(path, dpi=120)
    return path


def run_one(args, recipe, i, system, variant):
    label = "({}/{}) {}/{}".format(i + 1, len(args.run_list), system, variant)
    run_dir = os.path.join(args.out, "runs", "{}-{}".format(system, variant))
    done_path = os.path.join(run_dir, "result.json")
    if os.path.exists(done_path) and not args.force:
        log("{}: done before, reusing {} (--force to redo)".format(label, done_path))
        with open(done_path, encoding="utf-8") as f:
            return json.load(f), 0.0
    t0 = time.time()
    secs, valid_loss, cmd = train(args, recipe, system, variant, run_dir, label)
    ev = evaluate(args, recipe, system, variant, run_dir, label)
    ev.update(train_seconds=secs, valid_loss=valid_loss, train_command=" ".join(cmd))
    with open(done_path, "w", encoding="utf-8") as f:
        json.dump(ev, f, indent=2)
    return ev, time.time() - t0


# Launch order: the longest runs first (LPT scheduling), so that a comparison does not end with one
# long run on one core while the other idles. Expected cost of a run, relative to fairseq `lstm` on
# a word vocabulary: system factor x vocabulary factor, from the simplification comparison at
# commit 45b7574 (idle 2-core machine, train minutes: char_transformer 38, word_attn_gated 30 on
# words and 36 on sentencepiece, lstm 21 / 18, core_copy 19 / 26, transformer 18 / 15, wean_lstm
# 15 / 13). Only the order matters; the tables keep the task's order.
EXPECTED_SYSTEM_COST = {"char_transformer": 1.8, "word_attn_gated": 1.6, "lstm": 1.0, "core_copy": 0.95,
                        "transformer": 0.85, "wean_lstm": 0.7}
EXPECTED_VOCAB_COST = {"spm": 0.9, "bpe": 0.9}  # word, word-pg, char: 1.0


def expected_cost(system, variant):
    """Relative expected time of one run (see EXPECTED_SYSTEM_COST); unknown systems count as 1."""
    return EXPECTED_SYSTEM_COST.get(system, 1.0) * EXPECTED_VOCAB_COST.get(variant, 1.0)


def launch_order(run_list):
    """Indices of run_list, longest-expected runs first (ties keep the task's order)."""
    return sorted(range(len(run_list)), key=lambda i: (-expected_cost(*run_list[i]), i))


def remaining_seconds(finished, pending_costs, jobs):
    """Time left, from the pace of the finished runs: ``finished`` is [(seconds, expected cost)],
    ``pending_costs`` the expected costs of the runs not finished (running or waiting).

    Seconds per unit of expected cost, not per run: runs start longest first, so the first to
    finish are the slowest, and a per-run average would overstate what is left.
    """
    seconds_per_cost = sum(secs for secs, _ in finished) / sum(cost for _, cost in finished)
    return seconds_per_cost * sum(pending_costs) / max(1, jobs)


def run_all(args, recipe):
    """Train + evaluate every run, --jobs at a time, in :func:`launch_order`; the first failure
    stops the comparison.

    Returns ({(system, vocab): evaluation}, how many of them were reused from an earlier invocation).
    """
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    evals, durations, reused = {}, [], 0
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {}
        for i in launch_order(args.run_list):
            system, variant = args.run_list[i]
            futures[pool.submit(run_one, args, recipe, i, system, variant)] = (system, variant)
        pending = set(futures)
        while pending:
            # FIRST_COMPLETED, not FIRST_EXCEPTION: the latter returns only when every run has
            # finished unless one fails, so the progress line below would never be printed.
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            failed = [f for f in done if f.exception() is not None]
            if failed:
                for f in pending:
                    f.cancel()  # runs not started yet; a running one finishes first
                raise failed[0].exception()
            for f in done:
                ev, secs = f.result()
                evals[futures[f]] = ev
                if secs:
                    durations.append((secs, expected_cost(*futures[f])))
                else:
                    reused += 1
            if pending and durations:
                eta = remaining_seconds(durations, [expected_cost(*futures[f]) for f in pending], args.jobs)
                log("{} of {} runs finished ({} elapsed); about {} left at this pace".format(
                    len(evals), len(args.run_list), fmt_secs(time.time() - t0), fmt_secs(eta)))
    return {k: evals[k] for k in args.run_list}, reused


def machine():
    import platform

    return "{} CPU core(s), {} {}".format(os.cpu_count(), platform.system(), platform.machine())


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    command = "python examples/compare.py " + " ".join(argv if argv is not None else sys.argv[1:])
    log("{} comparison -> {} ({} runs, {} epoch(s) each)".format(args.task, args.out, len(args.run_list), args.epochs))
    recipe, prepare_cmd = prepare(args)
    if recipe.get("trainable") is False:
        raise SystemExit("{}: no training data (LCSTS PART I) under {}; the recipe wrote the test set and its "
                         "LEAD table to {}".format(args.dataset, args.data_dir, os.path.join(args.out, "data")))
    if recipe.get("smoke_test_only") and not args.tiny:
        raise SystemExit("{}: prepared from the staged valid/test files only (smoke test). Prepare the full data "
                         "first: python -m preprocess.prepare_{} --raw DIR --out {}".format(
                             args.dataset, args.dataset, os.path.join(args.out, "data")))
    missing = [v for _, v in args.run_list if v not in recipe["variants"]]
    if missing:
        raise SystemExit("vocabulary variant(s) {} not prepared for {}".format(", ".join(sorted(set(missing))), args.task))
    for system, variant in args.run_list:  # built once, before runs share it
        if system == "core_copy":
            align_table(recipe, os.path.join(args.out, "data"), variant)
    evals, reused = run_all(args, recipe)
    log("scoring test outputs (p-values against fairseq {})".format(BASELINE))
    rows = build_rows(args, recipe, evals, baseline_outputs(args, recipe))
    meta = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine(),
            "wall_seconds": time.time() - t_start, "prepare_command": " ".join(prepare_cmd), "epochs": args.epochs,
            "runs": len(evals), "reused": reused}
    write_tables(args, recipe, rows, meta)
    curve = plot_curves(args, recipe, evals)
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "rows": rows, "recipe": recipe,
                   "runs": {"{}:{}".format(s, v): ev for (s, v), ev in evals.items()}}, f, indent=2)
    with open(os.path.join(args.out, "results.md"), encoding="utf-8") as f:
        print(f.read())
    log("wrote {}, {}, {} in {}".format(os.path.join(args.out, "results.md"), os.path.join(args.out, "results.csv"),
                                        curve, fmt_secs(time.time() - t_start)))
    return rows


if __name__ == "__main__":
    main()
