"""Running the comparison: data preparation, fairseq-train and decoding jobs, launch order, progress.

fairseq-train runs with ``--task translation_with_metrics`` and ``--log-format json``; its
``train_inner``, ``train`` and ``valid1`` records (:func:`read_train_log`) give the console
progress and, per epoch, the validation loss and score by which fairseq-train keeps
``checkpoint_best.pt``. Test decoding and parameter counts run in one process per system
(:mod:`fairseq_wean.compare.evaluate`); each finished system is published to the results
directory (:func:`publish_run`) and reused from there (:func:`published_run`).
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time

from fairseq_wean import cpu
from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.compare.train_log import (ValidationRecords, check_run_folder, raised_cap, read_train_log,
                                            read_train_log_line, resumable)
from fairseq_wean.compare.systems import (BATCH, CONVERGED_BATCH, GEN_ARGS, SYSTEMS, TASKS, VALID_FLAGS,
                                          converged_system_args, keeps_short_settings, system_arch)
from preprocess import common

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER_DIR = os.path.join(REPO, "fairseq_wean")


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


# ---------------------------------------------------------------------------------------------
def prepare(args):
    """Run the task's preprocess module (skipped when its recipe.json exists)."""
    task = TASKS[args.task]
    data_out = os.path.join(args.out, "data")
    variants = sorted({key[1] for key in args.run_list})
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
        # the recipe printed its own one-line error above; this is the comparison's
        raise FairseqWeanError("data preparation failed (exit status {}): see the line above".format(proc.returncode))
    log("data prepared in {}".format(fmt_secs(time.time() - t0)))
    return common.load_recipe(data_out), cmd


def align_table(recipe, data_out, variant):
    """CoRe's alignment table A for a vocabulary variant (built once, cached), from the training text
    fairseq-preprocess saw and its (joined) dictionary: ``--dict`` aligns every word outside it as
    ``<unk>``, so the table names only dictionary words, and rare target-only words stay words in the
    ``word-pg`` text."""
    info = recipe["variants"][variant]
    bin_dir = os.path.join(data_out, info["bin"])
    table = os.path.join(bin_dir, "core_align_table.tsv")
    if os.path.exists(table):
        return table
    text = os.path.join(data_out, info.get("text", "text"))
    cmd = [common.bin_path("fairseq-wean-align-table"), "--src", os.path.join(text, "train." + recipe["src"]),
           "--tgt", os.path.join(text, "train." + recipe["tgt"]),
           "--dict", os.path.join(bin_dir, "dict.{}.txt".format(recipe["src"])), "--topk", "10", "--out", table + ".tmp"]
    log("building CoRe's alignment table: " + " ".join(cmd))
    common.run(cmd, log_path=table + ".log")
    os.replace(table + ".tmp", table)
    return table


def published_name(test, kind):
    """The file of a published test output: ``TESTSET.hyp`` (``plain``), ``TESTSET.replace-unk.hyp``."""
    return test + (".hyp" if kind == "plain" else ".{}.hyp".format(kind.replace("_", "-")))


def run_seed(args, key):
    """The seed of a run: its third element (extra seeds of CONVERGED["seeds"]), else --seed."""
    return key[2] if len(key) > 2 else args.seed


def run_name(key):
    """``SYSTEM-VOCAB`` (the run's folder under runs/ and under the results directory), with
    ``-seedN`` for the extra seeds of a run."""
    return "-".join(key[:2]) + ("-seed{}".format(key[2]) if len(key) > 2 else "")


def train_command(args, recipe, system, variant, run_dir, seed=None):
    """The fairseq-train command of one run. Both budgets select the checkpoint inside fairseq-train
    (--task translation_with_metrics, :func:`validation_metric_args`); they differ in the
    settings, the batches and the stopping rule (see :mod:`fairseq_wean.compare.systems`)."""
    data_out = os.path.join(args.out, "data")
    info = recipe["variants"][variant]
    converged = args.budget == "converged"
    cmd = [common.bin_path("fairseq-train"), os.path.join(data_out, info["bin"]), "--user-dir", USER_DIR,
           "--task", "translation_with_metrics", "--source-lang", recipe["src"], "--target-lang", recipe["tgt"]]
    cmd += converged_system_args(system, args.task, variant) if converged else SYSTEMS[system]
    if system_arch(system) == "core_copy":
        cmd += ["--core-align-table", align_table(recipe, data_out, variant)]
    short_batches = not converged or keeps_short_settings(system, args.task, variant)
    cmd += (BATCH if short_batches else CONVERGED_BATCH)["char" if variant == "char" else "word"]
    # checkpoint_last.pt keeps the optimizer state: an interrupted run resumes (see train())
    cmd += ["--save-dir", os.path.join(run_dir, "checkpoints"), "--no-epoch-checkpoints", "--seed", str(args.seed if seed is None else seed),
            "--log-format", "json", "--log-interval", "10" if args.tiny else "100", "--num-workers", "0",
            "--ignore-unused-valid-subsets",  # the validated subset is valid1; the loss-only valid is left out
            "--max-epoch", str(args.max_epoch if converged else args.epochs)]
    if converged:
        cmd += ["--patience", str(args.patience)]
    if getattr(args, "cpu_bf16", False):
        cmd.append("--cpu-bf16")
    return cmd + validation_metric_args(args, recipe, variant, run_dir)


def validation_metric_args(args, recipe, variant, run_dir):
    """Checkpoint selection inside fairseq-train (--task translation_with_metrics): each epoch
    decodes the recipe's validation subset (beam 5, as the test sets), scores it against all its
    references and keeps checkpoint_best.pt by that score (the converged budget also stops after
    --patience epochs without a better one).

    The references and SARI's original sentences are given as text (--eval-refs, --eval-orig),
    in the model's own words: after BPE/sentencepiece removal (--eval-bleu-remove-bpe), and
    with the source's ``<unk-N>`` markers for marker data (written once per run under RUN_DIR).
    """
    data_out = os.path.join(args.out, "data")
    valid, info = recipe["valid"], recipe["variants"][variant]
    metric = valid["metric"]
    orig = os.path.join(data_out, valid["orig"])
    refs = [os.path.join(data_out, r) for r in valid["refs"]]
    if info.get("markers"):
        from fairseq_wean.data.markers import encode_references

        marked_text = os.path.join(data_out, info["text"])
        words = [line.rsplit(" ", 1)[0] for line in common.read_lines(os.path.join(marked_text, "dict.txt"))]
        streams = encode_references(words, common.read_lines(orig), [common.read_lines(r) for r in refs])
        refs = [os.path.join(run_dir, "valid-refs", "ref.{}".format(k)) for k in range(len(streams))]
        for path, stream in zip(refs, streams):
            common.write_lines(path, stream)
        orig = os.path.join(marked_text, os.path.basename(valid["orig"]))
    gen = {"beam": 5, "max_len_a": float(GEN_ARGS[GEN_ARGS.index("--max-len-a") + 1]),
           "max_len_b": int(GEN_ARGS[GEN_ARGS.index("--max-len-b") + 1])}
    cmd = ["--valid-subset", valid["subset"], VALID_FLAGS[metric], "--eval-bleu-args", json.dumps(gen),
           "--eval-refs", ",".join(refs), "--best-checkpoint-metric", metric, "--maximize-best-checkpoint-metric"]
    if metric == "sari":
        cmd += ["--eval-orig", orig]
    if "--rouge-chars" in valid.get("score_args", []):
        cmd.append("--eval-rouge-chars")
    if info.get("post_process"):
        cmd += ["--eval-bleu-remove-bpe", info["post_process"]]
    return cmd


# glibc malloc settings for the training and decoding processes. By default glibc serves every
# allocation above 32 MiB with a fresh mmap and unmaps it on free, so each training step
# page-faults its largest tensors anew (the B*T x V logits and their gradient, a V x 256 Adam
# temporary for every embedding and output matrix). Keeping freed memory in the heap changes no
# number (the same operations run on the same values) and made every system's training 3-23%
# faster in the simplification comparison (docs/results/history.md: fairseq lstm on words 21m23s ->
# 18m07s, same losses and scores). Values already set in the environment win.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(4 << 30), "MALLOC_TRIM_THRESHOLD_": str(64 << 30)}


def job_env(args):
    """Environment of every fairseq process: ``--threads`` torch threads, MALLOC_ENV, unbuffered output."""
    n = str(args.threads)
    env = dict(MALLOC_ENV)
    env.update(os.environ)
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS=n, MKL_NUM_THREADS=n)
    return env


def train(args, recipe, system, variant, run_dir, label, seed=None):
    """fairseq-train, streaming progress; returns (wall seconds, {epoch: valid loss}, validation
    curve, command). The curve is ``[{"epoch": e, METRIC: score}, ...]`` from the validation
    records fairseq-train logs for the decoded subset.

    An interrupted run resumes: fairseq-train saves ``checkpoint_last.pt`` with the optimizer
    state each epoch and restarts from it by itself, and ``train_state.json`` holds the command
    and the wall time spent until the last validation. When both are there and the command is the
    same (but for ``--max-epoch``), the checkpoints are kept, ``train.log`` is appended to and read
    back for the epochs already done, and the wall seconds add up; ``--patience`` counts across
    the restart (:func:`fairseq_wean.fixes_training.install_patience_survives_restart`). The epochs
    trained after the last checkpoint of the interrupted invocation are trained again.
    """
    cmd = train_command(args, recipe, system, variant, run_dir, seed)
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    log_path = os.path.join(run_dir, "train.log")
    state_path = os.path.join(run_dir, "train_state.json")
    subset = recipe["valid"]["subset"]  # fairseq tags its records (and prefixes their keys) with its name
    records = ValidationRecords(subset, recipe["valid"]["metric"])
    out = os.path.dirname(os.path.dirname(os.path.abspath(run_dir)))  # --out (of --out/runs/SYSTEM-VOCAB)
    check_run_folder(run_dir)
    resumed = resumable(run_dir, cmd, out)
    if resumed:
        for tag, entries in read_train_log(log_path, out).items() if os.path.lexists(log_path) else ():
            for record in entries:
                records.add(tag, record)
        epochs_done = max(records.valid_loss, default=0)
        go_on = raised_cap(resumed["command"], cmd, epochs_done) \
            and os.path.exists(os.path.join(ckpt_dir, "checkpoint_last.pt"))
        if resumed.get("finished") and not go_on:
            # trained to its end already (interrupted while decoding): going on would train one
            # more epoch, which the uninterrupted run did not
            log("{}: trained earlier ({} epochs, {}); decoding".format(label, epochs_done, fmt_secs(resumed["seconds"])))
            return resumed["seconds"], records.valid_loss, records.curve, cmd
        log("{}: resuming after epoch {} from {} ({} trained before)".format(
            label, epochs_done, os.path.join(ckpt_dir, "checkpoint_last.pt"), fmt_secs(resumed["seconds"])))
    elif os.path.isdir(ckpt_dir):
        shutil.rmtree(ckpt_dir)
    textio.makedirs_in_folder(run_dir, out, "run folder")
    budget = "at most {} epochs, patience {}".format(args.max_epoch, args.patience) if args.budget == "converged" \
        else "{} epoch(s)".format(args.epochs)
    log("{}: training {}; log {}".format(label, budget, log_path))
    before = resumed["seconds"] if resumed else 0.0
    t0 = time.time()

    def save_state(finished=False):
        with textio.atomic_output(state_path, (), "train_state.json", folder=out) as f:
            json.dump({"command": cmd, "seconds": round(before + time.time() - t0, 1), "finished": finished}, f)

    save_state()
    # Line-buffered, so `tail -f train.log` follows fairseq-train as it runs; opened only as itself
    # (a link, pipe or device planted there is refused, never written through).
    with textio.open_log(log_path, append=bool(resumed), folder=out, what="train.log") as logf:
        logf.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=job_env(args))
        tail = []
        for line in proc.stdout:
            logf.write(line)
            tail = (tail + [line])[-40:]
            parsed = read_train_log_line(line)
            if parsed is None:
                continue
            tag, record = parsed
            if tag == "train_inner":
                # update = epoch - 1 + fraction of the epoch done
                say("    {} epoch {} {:.0%} ({} updates), train loss {} ({})".format(
                    label, record["epoch"], record["update"] - (record["epoch"] - 1), record["num_updates"],
                    record["loss"], fmt_secs(before + time.time() - t0)))
            elif tag == "train":
                say("    {} epoch {} done, train loss {} ({})".format(
                    label, record["epoch"], record["train_loss"], fmt_secs(before + time.time() - t0)))
            else:
                text = records.add(tag, record)
                if text:
                    # the checkpoint of this epoch is written right after its validation record:
                    # the time is saved here so that a resumed run counts up to its last epoch
                    save_state()
                    say("    {} epoch {}: {}".format(label, record["epoch"], text))
        proc.wait()
    secs = before + time.time() - t0
    if proc.returncode != 0:
        raise RuntimeError("{}: fairseq-train failed ({}); last lines of {}:\n{}".format(
            label, proc.returncode, log_path, "".join(l[:400] + ("...\n" if len(l) > 400 else "") for l in tail[-15:])))
    save_state(finished=True)
    log("{}: trained in {}".format(label, fmt_secs(secs)))
    return secs, records.valid_loss, records.curve, cmd


def evaluate(args, recipe, system, variant, run_dir, label, curve):
    """Decode the test sets with the checkpoint fairseq-train selected by its validation score
    (``curve``: that score per epoch) and count parameters, in one process
    (:mod:`fairseq_wean.compare.evaluate`)."""
    data_out = os.path.join(args.out, "data")
    info = recipe["variants"][variant]
    best = os.path.join(run_dir, "checkpoints", "checkpoint_best.pt")
    metric = recipe["valid"]["metric"]
    if not curve or not os.path.exists(best):
        raise RuntimeError("{}: fairseq-train logged no validation {} or wrote no {}".format(label, metric, best))
    top = max(curve, key=lambda r: (r[metric], -r["epoch"]))  # fairseq keeps the first best
    plan = {
        "data": os.path.join(data_out, info["bin"]), "data_root": data_out, "user_dir": USER_DIR,
        "post_process": info.get("post_process"), "markers": bool(info.get("markers")),
        "replace_unk": bool(info.get("unk_replaceable")),
        "valid": recipe["valid"], "tests": recipe["tests"], "gen_args": list(GEN_ARGS),
        "gen_dir": os.path.join(run_dir, "gen"), "out": os.path.join(run_dir, "eval.json"),
        "selected": {"epoch": top["epoch"], "checkpoint": best, "curve": curve},
    }
    plan_path = os.path.join(run_dir, "eval_plan.json")
    with textio.atomic_output(plan_path, (), "eval_plan.json", folder=args.out) as f:
        json.dump(plan, f, indent=2)
    log("{}: decoding the test sets with the epoch {} checkpoint".format(label, top["epoch"]))
    t0 = time.time()
    cmd = [sys.executable, "-m", "fairseq_wean.compare.evaluate", plan_path]
    with textio.open_log(os.path.join(run_dir, "eval.log"), folder=args.out, what="eval.log") as logf:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=logf, text=True, env=job_env(args))
        for line in proc.stdout:
            if line.startswith("EVAL "):
                say("    {} {}".format(label, line[5:].rstrip()))
        proc.wait()
    if proc.returncode != 0:
        with textio.open_in_folder(os.path.join(run_dir, "eval.log"), "r", args.out, "eval.log") as f:
            tail = "".join(l[:400] + "\n" for l in f.read().splitlines()[-20:])
        raise RuntimeError("{}: evaluation failed ({}):\n{}".format(label, proc.returncode, tail))
    with textio.open_in_folder(plan["out"], "r", args.out, "eval.json") as f:
        result = json.load(f)
    log("{}: best validation {} {:.2f} at epoch {} ({} decoding)".format(
        label, result["valid_metric"], result["best_valid"], result["best_epoch"], fmt_secs(time.time() - t0)))
    return result


def epochs_trained(ev):
    """How many epochs a run trained: the last epoch with a validation record (None if none)."""
    return max((int(e) for e in ev.get("valid_loss") or {}), default=None)


def results_dir(args, key):
    """Where a run's test outputs and scores.json are kept (``--results-dir``/SYSTEM-VOCAB[-seedN])."""
    return os.path.join(args.results_dir, run_name(key))


def published_run(args, recipe, key):
    """The evaluation of a run whose outputs are in the results directory (committed under
    docs/results by an earlier invocation, maybe on another machine), else None. Its outputs
    point at the published hypothesis files, so the tables score exactly those files.

    ``scores.json`` is data from wherever the results directory came from: it is checked field by
    field (:func:`read_published`), and no path is taken from it: each output is read from the file
    name :func:`publish_run` gives it (``TESTSET.hyp``) inside the run's own folder, which must lie inside
    --results-dir itself (a run folder that is a link to elsewhere is refused, not read through)."""
    folder = results_dir(args, key)
    path = os.path.join(folder, "scores.json")
    if not os.path.exists(path):
        return None
    published = read_published(path, recipe, args.results_dir)
    ev = published["run"]
    ev["outputs"] = {test: {kind: os.path.join(folder, published_name(test, kind)) for kind in files}
                     for test, files in published["files"].items()}
    missing = []
    for output in (p for files in ev["outputs"].values() for p in files.values()):
        if not os.path.lexists(output):
            missing.append(output)
        else:  # a symbolic link, a pipe: refused here, before any work (textio.open_in_folder)
            textio.open_in_folder(output, "rb", args.results_dir, "published output").close()
    if missing or set(ev["outputs"]) != set(recipe["tests"]):
        raise RuntimeError("{} is incomplete (missing {}): delete the folder to train the system again".format(
            folder, ", ".join(missing) or "test sets " + ", ".join(sorted(set(recipe["tests"]) - set(ev["outputs"])))))
    return ev


OUTPUT_KINDS = ("plain", "replace_unk")
NUMBER = (int, float)
# every field of a published run that the tables, the figure and the report read, with its types
# (tests/test_untrusted_files.py records what they read and fails on a field missing here)
RUN_FIELDS = {"params": (int,), "output_params": (int,), "train_seconds": NUMBER, "best_epoch": (int,),
              "best_valid": NUMBER, "valid_metric": (str,), "curve": (list,)}
OPTIONAL_RUN_FIELDS = {"output_tied": (bool,), "valid_loss": (dict,)}


def read_published(path, recipe, results_dir=None):
    """A published ``scores.json``, checked: every field the tables read has its type, and each
    output is named as :func:`publish_run` names it (``files.TEST.KIND == TEST.hyp``), so a hand-edited
    or hostile file can neither point the runner outside its folder nor fail deep inside a table.
    A file that is not so raises :class:`FairseqWeanError` naming the file and the field. ``results_dir``:
    the --results-dir it was found in, which it must not leave (a run folder linked elsewhere is refused)."""
    def bad(what):
        return FairseqWeanError("{}: {}; restore it from git or delete its folder to train the system "
                                "again".format(path, what))

    try:
        with textio.open_in_folder(path, "r", results_dir or os.path.dirname(path), "published scores") as f:
            published = json.load(f)
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad("not valid JSON ({})".format(exc)) from None

    def field(obj, name, types, where):
        if not isinstance(obj, dict) or name not in obj:
            raise bad("no field {}{}".format(where, name))
        value = obj[name]
        if not isinstance(value, types) or isinstance(value, bool) and bool not in types:
            raise bad("field {}{} is {}, not {}".format(where, name, type(value).__name__,
                                                       " or ".join(t.__name__ for t in types)))
        return value

    files = field(published, "files", (dict,), "")
    for test, outputs in files.items():
        if test not in recipe["tests"]:
            raise bad("files names test set {!r}, which this task does not have ({})".format(
                test, ", ".join(sorted(recipe["tests"]))))
        for kind in field(files, test, (dict,), "files."):
            if kind not in OUTPUT_KINDS:
                raise bad("files.{} names output {!r} (known: {})".format(test, kind, ", ".join(OUTPUT_KINDS)))
            if field(outputs, kind, (str,), "files.{}.".format(test)) != published_name(test, kind):
                raise bad("files.{}.{} is {!r}: a published output is always {!r} in its own folder".format(
                    test, kind, outputs[kind], published_name(test, kind)))
    run = field(published, "run", (dict,), "")
    for name, types in RUN_FIELDS.items():
        field(run, name, types, "run.")
    for name, types in OPTIONAL_RUN_FIELDS.items():
        if run.get(name) is not None:
            field(run, name, types, "run.")
    metric = recipe.get("valid", {}).get("metric")
    if metric is not None and run["valid_metric"] != metric:
        raise bad("run.valid_metric is {!r}, but this task's runs are validated on {!r}".format(run["valid_metric"], metric))
    for i, row in enumerate(run["curve"]):
        field(row, "epoch", (int,), "run.curve[{}].".format(i))
        field(row, run["valid_metric"], NUMBER, "run.curve[{}].".format(i))
    if run.get("valid_loss") is not None:
        for epoch in field(run, "valid_loss", (dict,), "run."):
            field(run["valid_loss"], epoch, NUMBER, "run.valid_loss.")
    return published


def published_runs_only(args, recipe):
    """--reuse-only: the runs of ``args.run_list`` published in the results directory, in order. The
    others are left out and named in one log line; none published is an error (SystemExit)."""
    kept = [key for key in args.run_list if published_run(args, recipe, key) is not None]
    left_out = [run_name(key) for key in args.run_list if key not in kept]
    if not kept:
        raise SystemExit("--reuse-only: none of the {} runs is published in {}".format(
            len(args.run_list), args.results_dir))
    if left_out:
        log("--reuse-only: left out, not published in {}: {}".format(args.results_dir, ", ".join(left_out)))
    return kept


def publish_run(args, recipe, key, ev):
    """Copy a finished run's test outputs into its results folder as ``TESTSET.hyp`` (and
    ``TESTSET.replace-unk.hyp``), one line per test sentence in test order, exactly the text that
    is scored, and write ``scores.json``: each output's scores, the settings, the epochs, the
    machine. Returns ``ev`` with its outputs pointing at those files."""
    from fairseq_wean.compare import report

    folder = results_dir(args, key)
    os.makedirs(folder, exist_ok=True)
    files, scores = {}, {}
    for test, outs in ev["outputs"].items():
        files[test], scores[test] = {}, {}
        for kind, path in outs.items():
            name = published_name(test, kind)
            # atomic_output: a fresh temporary file renamed over NAME (a planted link is replaced, not followed)
            with open(path, "rb") as source, textio.atomic_output(os.path.join(folder, name), (), name, "wb") as f:
                shutil.copyfileobj(source, f)
            files[test][kind] = name
            spec = recipe["tests"][test]
            scores[test][kind] = {k: v for k, v in report.score(os.path.join(folder, name), spec,
                                                                 os.path.join(args.out, "data")).items()
                                  if k != "p_values"}
    system, variant = key[:2]
    run = {k: portable_command(v, args.out) if k in ("train_command", "generate_command") else v
           for k, v in ev.items() if k not in ("outputs", "checkpoint")}
    published = {
        "system": system, "vocab": variant, "seed": run_seed(args, key), "task": args.task, "dataset": args.dataset,
        "budget": args.budget, "epochs_trained": epochs_trained(ev),
        "best_epoch": ev["best_epoch"], "valid_metric": ev["valid_metric"], "best_valid": ev["best_valid"],
        "train_seconds": round(ev["train_seconds"], 1), "train_precision": train_precision(ev["train_command"]),
        "train_command": portable_command(ev["train_command"], args.out),
        "generate_command": portable_command(ev.get("generate_command"), args.out), "scores": scores, "files": files,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine(), "run": run,
    }
    with textio.atomic_output(os.path.join(folder, "scores.json"), (), "scores.json") as f:
        json.dump(published, f, indent=2)
    ev = dict(ev)
    ev["outputs"] = {test: {kind: os.path.join(folder, name) for kind, name in fs.items()} for test, fs in files.items()}
    return ev


def portable_command(command, out):
    """A command (shell-quoted, ``shlex.join``) as published in ``scores.json``: no path of the
    machine it ran on. The comparison's ``--out`` folder becomes ``$OUT``, the plugin's folder
    ``$WEAN`` (README, set-up) and a console script its name, so that anyone can rerun it after
    ``export OUT=... WEAN=...``. (Files published before 2026-11-27 hold space-joined commands,
    not shell-quoted: their ``--eval-bleu-args`` JSON needs quotes to run.)"""
    if not command:
        return command
    words = shlex.split(command)
    if os.path.isabs(words[0]):
        words[0] = os.path.basename(words[0])
    out = os.path.abspath(out).rstrip(os.sep)
    wean = os.path.join(REPO, "fairseq_wean")
    def part(path):  # each path of a comma list too (--eval-refs R1,R2,...)
        if path == wean:
            return "$WEAN"
        if path == out or path.startswith(out + os.sep):
            return "$OUT" + path[len(out):]
        return path

    portable = []
    for word in words:
        word = ",".join(part(p) for p in word.split(","))
        portable.append(word if word.startswith(("$OUT", "$WEAN")) else shlex.quote(word))
    return " ".join(portable)


def train_precision(train_command):
    """``bfloat16 autocast`` for a run trained with ``--cpu-bf16`` on this CPU when it has native
    bfloat16 (else the flag fell back), ``float32`` otherwise."""
    return "bfloat16 autocast" if "--cpu-bf16" in train_command.split() and cpu.native_bf16() else "float32"


def machine():
    """This machine in words: CPU model and vector features, cores, OS (for timings and scores.json)."""
    import platform

    return "{}, {} {}".format(cpu.describe(), platform.system(), platform.machine())


def run_one(args, recipe, i, system, variant, seed=None):
    """Train, evaluate and publish one run (reused from the results directory when published there)."""
    key = (system, variant) if seed is None else (system, variant, seed)
    label = "({}/{}) {}".format(i + 1, len(args.run_list), run_name(key).replace("-", "/", 1))
    run_dir = os.path.join(args.out, "runs", run_name(key))
    if not args.force:
        ev = published_run(args, recipe, key)
        if ev is not None:
            log("{}: published in {}, reusing it (--force to redo)".format(label, results_dir(args, key)))
            return ev, 0.0
    t0 = time.time()
    secs, valid_loss, curve, cmd = train(args, recipe, system, variant, run_dir, label, run_seed(args, key))
    ev = evaluate(args, recipe, system, variant, run_dir, label, curve)
    ev.update(train_seconds=secs, valid_loss=valid_loss, train_command=shlex.join(cmd))  # runnable as printed
    ev = publish_run(args, recipe, key, ev)
    with textio.atomic_output(os.path.join(run_dir, "result.json"), (), "result.json", folder=args.out) as f:
        json.dump(ev, f, indent=2)
    if not args.keep_checkpoints:  # only once the run is published: a failed publish can be rerun
        shutil.rmtree(os.path.join(run_dir, "checkpoints"))  # the selected one and checkpoint_last.pt
    return ev, time.time() - t0


def check_output_dirs(args):
    """``--out`` and ``--results-dir`` must be folders this process can write, checked before any
    work (an unwritable --results-dir was found after hours of training). Creates them, and locks
    ``--out`` for this process (:func:`fairseq_wean.textio.lock_folder`)."""
    import tempfile

    for flag, path in (("--out", args.out), ("--results-dir", args.results_dir)):
        try:
            os.makedirs(path, exist_ok=True)
            # a new file of a fresh name (O_EXCL): nothing planted there is opened or removed
            fd, probe = tempfile.mkstemp(prefix=".fairseq-wean-write-check.", dir=path)
            os.close(fd)
            os.remove(probe)
        except OSError as exc:
            raise FairseqWeanError("{} {}: cannot write there ({}): give a folder you can write to; nothing was "
                                   "trained".format(flag, path, exc.strerror or exc)) from None
    # one comparison per --out (two --force runs truncated each other's logs and checkpoints)
    textio.lock_folder(args.out, "--out", "fairseq-wean-compare")
    for key in args.run_list:  # before any work: a planted file found after hours of training
        check_run_folder(os.path.join(args.out, "runs", run_name(key)))


# Launch order: the longest runs first (LPT scheduling), so that a comparison does not end with one
# long run on one core while the other idles. Expected cost of a run, relative to fairseq `lstm` on
# a word vocabulary: system factor x vocabulary factor, from the simplification comparison at
# commit 45b7574 (idle 2-core machine, train minutes: char_transformer 38, word_attn_gated 30 on
# words and 36 on sentencepiece, lstm 21 / 18, core_copy 19 / 26, transformer 18 / 15, wean_lstm
# 15 / 13). Only the order matters; the tables keep the task's order.
EXPECTED_SYSTEM_COST = {"char_transformer": 1.8, "word_attn_gated": 1.6, "word_attn_ungated": 1.6,
                        "word_attn_rnnsearch": 1.4, "lstm": 1.0, "core_copy": 0.95, "transformer": 0.85,
                        "transformer_untied": 0.85, "wean_lstm": 0.7}
EXPECTED_VOCAB_COST = {"spm": 0.9, "bpe": 0.9}  # word, word-pg, char: 1.0


def expected_cost(system, variant, seed=None):
    """Relative expected time of one run (see EXPECTED_SYSTEM_COST; a paper-exact variant,
    systems.PAPER_EXACT, as its model); unknown systems count as 1."""
    cost = EXPECTED_SYSTEM_COST.get(system, EXPECTED_SYSTEM_COST.get(system_arch(system), 1.0))
    return cost * EXPECTED_VOCAB_COST.get(variant, 1.0)


def launch_order(run_list):
    """Indices of run_list, longest-expected runs first (ties keep the task's order); extra seeds
    (runs (system, vocab, seed)) after every system's first run, so that a comparison cut short
    has every system once before it has any of them twice."""
    return sorted(range(len(run_list)), key=lambda i: (len(run_list[i]) > 2, -expected_cost(*run_list[i]), i))


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
            key = args.run_list[i]
            futures[pool.submit(run_one, args, recipe, i, *key)] = key
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


