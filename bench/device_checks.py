"""The checks of ``scripts/gpu_check.sh`` that are not the test suite or the benchmark, one process
each: ``python -m bench.device_checks {env,precision,distributed} --config CONFIG.json``.

``env``: the machine (GPU, driver, torch, CUDA, cuDNN, CPU) into ``--result``.

``precision``: each model (``wean_lstm``, ``core_copy``, ``word_attn_gated`` and fairseq ``lstm``,
``bench.run``'s sizes) trained for a fixed number of updates by fairseq's ``Trainer`` in float32
and in each low precision (``--amp``, ``--fp16`` on CUDA; ``--cpu-bf16`` on the CPU stand-in),
from the same initial weights (the seed set before the model is built, as fairseq-train does),
on the same real batches (the first batches of the synthetic training set, seed 1), dropout 0;
then the validation loss. Tolerances (:data:`PRECISION_TOLERANCE`), in fairseq's loss unit (bits
per target token):

- first update, the same weights, so the difference is one forward pass's rounding: fp16 rounds
  every layer's output to 2^-11 = 4.9e-4 relative, bf16 to 2^-8; tests/test_devices.py bounds the
  log-probs of one forward pass by about 10 unit roundoffs (fp16 5e-3, bf16 4e-2 nats), whose mean,
  the loss, is then within 7.2e-3 / 5.8e-2 bits: 0.01 (fp16, amp) and 0.06 (bf16);
- every update: relative difference at most 2% (fp16, amp) / 5% (bf16). Later updates start from
  weights the rounding has moved, so the curves drift apart; Adam's steps are of size ~lr whatever
  the gradient's scale, so a rounding flips only the steps of near-zero gradient components and
  the curves stay within ~1% of each other over tens of updates (bf16 on the CPU, 8x the unit
  roundoff of fp16: see docs/testing.md, GPU). A broken low-precision path gives far more: an
  overflow that skips updates (counted and failed on its own), a cast that loses a mask, a loss
  scale left in the gradients, non-finite losses.

``distributed``: data-parallel training of each model with 2 ranks on one device (two
``fairseq-train`` processes with ``--distributed-backend gloo``, both ``--device-id 0``: what
fairseq 0.12 allows on one GPU, see :func:`rank_command`) against one process with
``--update-freq 2`` (the same batches summed per update, tests/test_distributed.py), at the same
time: both ranks must hold bit-identical parameters after N updates (DDP all-reduces the
gradients) and equal the single process's within :data:`DISTRIBUTED_TOLERANCE`.

Each writes its JSON (``--result``) after every model, so a run stopped at its time budget keeps
what it reached; ``complete`` is true only at the end.
"""
import argparse
import copy
import json
import math
import os
import re
import socket
import subprocess
import sys
import time

from bench import device_bench
from bench.device_bench import write_json
from bench.gpu_check import WORKDIR_BENCH, WORKDIR_DISTRIBUTED, Refused, make_dirs, open_file, remove_tree
from fairseq_wean.cli.options import once  # each option given once (argparse keeps the last)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
USER_DIR = os.path.join(REPO, "fairseq_wean")

# precision: (|first-update loss difference| in bits, largest relative difference over the curve)
PRECISION_TOLERANCE = {"amp": (0.01, 0.02), "fp16": (0.01, 0.02), "cpu-bf16": (0.06, 0.05)}

# device: (parameters atol, rtol; per-update logged loss atol). CPU: gloo sums a + b exactly and
# the CPU kernels are deterministic, observed bit-equal (tests/test_distributed.py); CUDA: atomic
# adds (embedding backward) and cuDNN's RNN backward are not bit-reproducible from run to run, so
# the two runs' gradients differ by rounding, which Adam can turn into steps of up to lr for
# near-zero components: 1e-3 after ~10 updates of lr 5e-4, as the NCCL test of tests/test_devices.py
DISTRIBUTED_TOLERANCE = {"cpu": (1e-6, 1e-5, 1e-3), "cuda": (1e-3, 1e-3, 1e-2)}


def data(cfg):
    """(data-bin, alignment table) of the synthetic data at ``cfg["vocab"]``, shared with the
    benchmark part (the same folder and sizes as ``bench.run --workdir WORKDIR/bench``)."""
    from bench import synthetic

    work = make_dirs(cfg["workdir"], os.path.join(cfg["workdir"], WORKDIR_BENCH, "v%d" % cfg["vocab"]))
    with open_file(os.path.join(work, "data.log"), "a", work, "--workdir") as log:
        data_bin = synthetic.make(work, cfg["vocab"], cfg["n_train"], cfg["n_test"], cfg["n_latency"], BIN, log=log)
        table = synthetic.align_table(work, BIN, log=log)
    return data_bin, table


# ------------------------------------------------------------------------------ env
def nvidia_smi():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def machine(device):
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import torch

    from fairseq_wean import cpu

    def dist_version(*names):
        for name in names:
            try:
                return version(name)
            except PackageNotFoundError:
                pass
        return None

    info = {"device": device, "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "fairseq": dist_version("fairseq-fixed", "fairseq"), "numpy": dist_version("numpy"),
            "cpu": cpu.describe(), "cpu_cores": os.cpu_count(), "native_bf16": cpu.native_bf16(),
            "cuda_available": torch.cuda.is_available(), "gpus": [], "driver": None,
            "tf32": {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}}
    try:
        with open("/proc/meminfo") as f:
            info["ram_gib"] = round(int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) / 2 ** 20, 1)
    except (OSError, AttributeError):
        info["ram_gib"] = None
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            info["gpus"].append({"name": p.name, "memory_gib": round(p.total_memory / 2 ** 30, 1),
                                 "capability": "{}.{}".format(p.major, p.minor), "multiprocessors": p.multi_processor_count})
        smi = nvidia_smi()
        info["nvidia_smi"] = smi
        if smi:
            info["driver"] = smi.splitlines()[0].split(",")[1].strip()
    return info


def env_part(cfg, result):
    info = machine(cfg["device"])
    write_json(result, dict(info, complete=True))
    print(json.dumps(info, indent=1))
    if cfg["device"] == "cuda" and not info["cuda_available"]:
        print("--device cuda: torch {} sees no CUDA device".format(info["torch"]), file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------------------ precision
def loss_scale(trainer):
    """The loss scale of fairseq's fp16 or AMP optimizer; None in float32."""
    scaler = getattr(trainer.optimizer, "scaler", None)
    if scaler is None:
        return None
    value = scaler.get_scale() if hasattr(scaler, "get_scale") else getattr(scaler, "loss_scale", None)
    return float(value) if value is not None else None


def train_curve(name, precision, data_bin, table, cfg, train, valid):
    """One model in one precision: the loss of every update, the validation loss after them."""
    p = cfg["precision"]
    argv = device_bench.training_argv(name, data_bin, table, precision, cfg["device"], cfg["dim"], cfg["max_tokens"],
                                      0.0, p["lr"], os.path.join(cfg["workdir"], "unused-save-dir"))
    c, task, model, criterion = device_bench.build(argv)
    if train is None:
        train = device_bench.batches(task, "train", model, p["updates"], max_tokens=cfg["max_tokens"])
        valid = device_bench.batches(task, "valid", model, max_tokens=cfg["max_tokens"])
    initial = sum(float(q.detach().double().abs().sum()) for q in model.parameters())
    losses = device_bench.StepLosses(task)
    trainer = device_bench.make_trainer(c, task, model, criterion)
    curve, skipped, start = [], [], time.perf_counter()
    for i, sample in enumerate(train):
        before, seen = trainer.get_num_updates(), len(losses.train)
        trainer.train_step([copy.deepcopy(sample)])
        curve.append(losses.train[seen] if len(losses.train) > seen else None)
        if trainer.get_num_updates() == before:
            skipped.append(i + 1)  # fairseq skipped the update (gradient overflow)
    seconds = time.perf_counter() - start
    for sample in valid:
        trainer.valid_step(copy.deepcopy(sample))
    return {"losses": [round(x, 6) if x is not None else None for x in curve], "skipped_updates": skipped,
            "valid_loss": losses.valid_loss(), "loss_scale": loss_scale(trainer), "initial_weights_abs_sum": initial,
            "seconds": round(seconds, 2)}, train, valid


def compare_curves(low, ref, precision):
    first_tol, curve_tol = PRECISION_TOLERANCE[precision]
    pairs = [(a, b) for a, b in zip(low["losses"], ref["losses"]) if a is not None and b is not None]
    finite = len(pairs) == len(ref["losses"]) and all(math.isfinite(a) for a, _ in pairs)
    rel = [abs(a - b) / abs(b) for a, b in pairs if math.isfinite(a)]
    out = {"first_update_abs_diff": abs(pairs[0][0] - pairs[0][1]) if pairs else None,
           "max_rel_diff": max(rel) if rel else None, "mean_rel_diff": sum(rel) / len(rel) if rel else None,
           "at_update": rel.index(max(rel)) + 1 if rel else None,
           "valid_rel_diff": abs(low["valid_loss"] - ref["valid_loss"]) / ref["valid_loss"]
           if low["valid_loss"] is not None and ref["valid_loss"] else None,
           "same_initial_weights": low["initial_weights_abs_sum"] == ref["initial_weights_abs_sum"],
           "tolerance": {"first_update_abs": first_tol, "max_rel": curve_tol}}
    problems = []
    if not finite:
        problems.append("non-finite or missing losses")
    if low["skipped_updates"]:
        problems.append("updates skipped (gradient overflow): {}".format(low["skipped_updates"]))
    if out["first_update_abs_diff"] is not None and out["first_update_abs_diff"] > first_tol:
        problems.append("first update {:.4f} bits off (tolerance {})".format(out["first_update_abs_diff"], first_tol))
    if out["max_rel_diff"] is not None and out["max_rel_diff"] > curve_tol:
        problems.append("update {} {:.2%} off (tolerance {:.0%})".format(out["at_update"], out["max_rel_diff"], curve_tol))
    if not out["same_initial_weights"]:
        problems.append("different initial weights")
    out["passed"], out["problems"] = not problems, problems
    return out


def precision_part(cfg, result):
    p = cfg["precision"]
    out = {"complete": False, "device": cfg["device"], "updates": p["updates"], "lr": p["lr"], "dropout": 0.0,
           "precisions": p["precisions"], "tolerance": {k: PRECISION_TOLERANCE[k] for k in p["precisions"] if k != "fp32"},
           "models": {}, "passed": None}
    write_json(result, out)
    data_bin, table = data(cfg)
    for name in p["models"]:
        train = valid = None
        runs, comparisons = {}, {}
        for precision in p["precisions"]:
            print("[precision] {} {}".format(name, precision), flush=True)
            try:
                runs[precision], train, valid = train_curve(name, precision, data_bin, table, cfg, train, valid)
            except Exception as exc:  # noqa: BLE001  (recorded; the other precisions and models still run)
                import traceback

                traceback.print_exc()
                runs[precision] = {"error": "{}: {}".format(type(exc).__name__, exc)[:500]}
        ref = runs.get("fp32")
        for precision in p["precisions"]:
            if precision == "fp32":
                continue
            if ref is None or "error" in ref or "error" in runs[precision]:
                comparisons[precision] = {"passed": False, "problems": ["a run failed"]}
            else:
                comparisons[precision] = compare_curves(runs[precision], ref, precision)
        out["models"][name] = {"runs": runs, "vs_fp32": comparisons}
        write_json(result, out)
    out["passed"] = all(c["passed"] for m in out["models"].values() for c in m["vs_fp32"].values())
    out["complete"] = True
    write_json(result, out)
    return 0


# ------------------------------------------------------------------------------ distributed
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_command(name, data_bin, table, cfg, save_dir, *extra):
    d = cfg["distributed"]
    from bench import run as bench_run

    cmd = [os.path.join(BIN, "fairseq-train"), data_bin, "--user-dir", USER_DIR,
           *bench_run.model_args(name, table, cfg["dim"]), "--dropout", 0, "--optimizer", "adam", "--lr", d["lr"],
           "--batch-size", d["batch"], "--max-update", d["updates"], "--seed", 1, "--log-format", "simple",
           "--log-interval", 1, "--num-workers", 0, "--disable-validation", "--no-epoch-checkpoints",
           "--save-dir", save_dir, *extra]
    return [str(a) for a in cmd + (["--cpu"] if cfg["device"] == "cpu" else [])]


def rank_command(train_cmd, rank, port):
    """One of two ranks on one device. fairseq 0.12 refuses ``--distributed-world-size 2`` alone on
    one GPU (its single-node start asserts "world size is 2 but have 1 available devices"), and
    NCCL refuses two ranks on one GPU; one process per rank with its rank and a rendezvous address
    (as ``fairseq-wean-train-cpu-dist`` starts them on the CPU, or torchrun, whose
    ``rank % device_count()`` is 0 for both) and the gloo backend, which reduces CUDA tensors
    too, puts both on ``--device-id 0``."""
    return train_cmd + ["--distributed-world-size", "2", "--distributed-rank", str(rank),
                        "--distributed-init-method", "tcp://127.0.0.1:{}".format(port), "--distributed-no-spawn",
                        "--distributed-backend", "gloo", "--device-id", "0"]


def update_losses(log):
    """{update: loss} of fairseq's train_inner lines (rank 0 logs them), as tests/test_distributed.py."""
    return {int(n): float(loss) for n, loss in re.findall(r"train_inner \| epoch 001: +(\d+) / \d+ loss=([\d.]+)", log)}


def start_job(name, data_bin, table, cfg):
    work = os.path.join(cfg["workdir"], WORKDIR_DISTRIBUTED, name)
    remove_tree(cfg["workdir"], work)  # refuses a linked WORKDIR/distributed: never deletes under a link's target
    make_dirs(cfg["workdir"], work)
    single_env = {k: v for k, v in os.environ.items() if k != "FAIRSEQ_WEAN_DUMP_RANK_PARAMS"}
    single_env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env = dict(single_env, FAIRSEQ_WEAN_DUMP_RANK_PARAMS=os.path.join(work, "dump"))  # every rank's parameters
    port = free_port()
    procs = {}
    for label, cmd in [("rank0", rank_command(train_command(name, data_bin, table, cfg, os.path.join(work, "two")), 0, port)),
                       ("rank1", rank_command(train_command(name, data_bin, table, cfg, os.path.join(work, "two")), 1, port)),
                       ("single", train_command(name, data_bin, table, cfg, os.path.join(work, "one"), "--update-freq", 2))]:
        log = open_file(os.path.join(work, label + ".log"), "w", work, "--workdir")
        procs[label] = (subprocess.Popen(cmd, cwd=REPO, env=env if label != "single" else single_env,
                                         stdout=log, stderr=subprocess.STDOUT), log)
    return {"name": name, "work": work, "procs": procs, "command": " ".join(rank_command(
        train_command(name, data_bin, table, cfg, "two"), 0, port))}


def load_checkpoint(path, folder):
    """A checkpoint or a rank's parameter dump (``{"num_updates": int, "model": {name: tensor}}``) of
    the workdir: opened as itself (no link, no pipe, inside ``folder``), unpickled with the plugin's
    allow-list (``fairseq_wean.checkpoint_safety.safe_load``; torch 1.13's plain torch.load would
    run any pickle)."""
    from fairseq_wean.checkpoint_safety import safe_load

    with open_file(path, "rb", folder, "--workdir") as f:
        return safe_load(f, map_location="cpu")


def finish_job(job, cfg, deadline):
    import torch

    codes = {}
    for label, (proc, log) in job["procs"].items():
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        codes[label] = proc.returncode
    logs = {}
    for label in codes:
        with open_file(os.path.join(job["work"], label + ".log"), "r", job["work"], "--workdir", errors="replace") as f:
            logs[label] = f.read()
    out = {"exit_codes": codes, "command_rank0": job["command"]}
    if any(codes.values()):
        out.update(passed=False, problems=["a process failed: {}".format(codes)],
                   log_tails={k: v[-1500:] for k, v in logs.items() if codes[k]})
        return out
    atol, rtol, loss_tol = DISTRIBUTED_TOLERANCE[cfg["device"]]
    dump = os.path.join(job["work"], "dump")
    rank0, rank1 = (load_checkpoint(os.path.join(dump, "rank%d.pt" % r), job["work"]) for r in (0, 1))
    single = load_checkpoint(os.path.join(job["work"], "one", "checkpoint_last.pt"), job["work"])["model"]
    differ = [k for k in rank0["model"] if not torch.equal(rank0["model"][k], rank1["model"][k])]
    diffs = {k: float((rank0["model"][k].double() - single[k].double()).abs().max()) for k in single
             if k in rank0["model"] and single[k].is_floating_point()}
    worst = max(diffs, key=diffs.get) if diffs else None
    within = all(torch.allclose(rank0["model"][k].double(), single[k].double(), rtol=rtol, atol=atol) for k in diffs)
    two, one = update_losses(logs["rank0"]), update_losses(logs["single"])
    loss_diff = max((abs(two[n] - one[n]) for n in two if n in one), default=None)
    devices = re.findall(r"rank +(\d+): capabilities = .*name = (.*)", logs["rank0"])
    out.update({
        "updates": rank0["num_updates"], "ranks_bit_identical": not differ, "ranks_differ_in": differ[:10],
        "max_abs_param_diff": diffs[worst] if worst else None, "worst_param": worst,
        "max_logged_loss_diff": loss_diff, "losses_two_ranks": two, "losses_single": one,
        "training_on_2_devices": "training on 2 devices" in logs["rank0"],
        "backend_gloo": "'distributed_backend': 'gloo'" in logs["rank0"],
        "rank_devices": [{"rank": int(r), "gpu": n.strip()} for r, n in devices],
        "tolerance": {"param_atol": atol, "param_rtol": rtol, "logged_loss_atol": loss_tol}})
    problems = []
    if differ:
        problems.append("the ranks' parameters differ")
    if not within:
        problems.append("parameters differ from --update-freq 2 by {:.2e} ({})".format(diffs[worst], worst))
    if loss_diff is None or loss_diff > loss_tol or set(two) != set(one) or len(two) != cfg["distributed"]["updates"]:
        problems.append("logged losses differ or are missing ({} vs {} updates, max diff {})".format(len(two), len(one), loss_diff))
    if not out["training_on_2_devices"]:
        problems.append("fairseq did not train on 2 ranks")
    out["passed"], out["problems"] = not problems, problems
    return out


def distributed_part(cfg, result):
    d = cfg["distributed"]
    out = {"complete": False, "device": cfg["device"], "updates": d["updates"], "batch_per_rank": d["batch"], "lr": d["lr"],
           "tolerance": dict(zip(("param_atol", "param_rtol", "logged_loss_atol"), DISTRIBUTED_TOLERANCE[cfg["device"]])),
           "how": "2 fairseq-train ranks, --distributed-backend gloo, both --device-id 0, against 1 process with "
                  "--update-freq 2, dropout 0, the same seed", "models": {}, "passed": None}
    write_json(result, out)
    data_bin, table = data(cfg)
    models = list(d["models"])
    while models:  # d["concurrent"] models at once: 3 processes each
        group, models = models[: d["concurrent"]], models[d["concurrent"]:]
        jobs = [start_job(name, data_bin, table, cfg) for name in group]
        deadline = time.monotonic() + d["timeout"]
        for job in jobs:
            print("[distributed] {}".format(job["name"]), flush=True)
            out["models"][job["name"]] = finish_job(job, cfg, deadline)
            write_json(result, out)
    out["passed"] = all(m["passed"] for m in out["models"].values())
    out["complete"] = True
    write_json(result, out)
    return 0


PARTS = {"env": env_part, "precision": precision_part, "distributed": distributed_part}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.device_checks", description=__doc__.split("\n\n")[0])
    p.add_argument("part", choices=sorted(PARTS))
    p.add_argument("--config", required=True, help="the JSON settings scripts/gpu_check.sh writes")
    p.add_argument("--result", required=True, help="the part's JSON")
    a = once(p).parse_args(argv)
    try:
        with open_file(a.config, "r", what="--config") as f:
            cfg = json.load(f)
    except Refused as exc:
        p.exit(2, "{}: error: {}\n".format(p.prog, exc))
    import warnings

    warnings.filterwarnings("ignore")  # fairseq's and hydra's deprecation warnings, some once per step
    if cfg["device"] == "cpu" and a.part != "env":
        import torch

        torch.set_num_threads(1)  # as bench.run: on a shared machine torch's thread pool spins waiting
    try:
        return PARTS[a.part](cfg, a.result)
    except Refused as exc:  # a symbolic link or a named pipe in the workdir: one line
        p.exit(2, "{}: error: {}\n".format(p.prog, exc))


if __name__ == "__main__":
    sys.exit(main())
