"""Data-parallel training on CPU: two gloo ranks through ``fairseq-wean-train-cpu-dist``.

What is exactly comparable: fairseq gives rank r the batches r, r+W, r+2W, ... of the epoch's
batch list (``ShardedIterator``), and one process with ``--update-freq W`` groups batches
(0..W-1), (W..2W-1), ... (``GroupedIterator``) from the same list. Both sum the gradients of
the same W batches and divide by their total number of target tokens, so with dropout 0 every
update is the same computation, up to the order of floating-point sums. The last update of the
epoch (25 batches, 2 ranks) has one real batch: rank 1 runs fairseq's dummy batch (loss x 0),
which under ``--ddp-backend pytorch_ddp`` also checks that a batch without loss still reaches
every parameter.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from conftest import BIN, REPO, USER_DIR, cli, override

ARCH_SIZES = {
    "wean_lstm": ["--embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16],
    "core_copy": ["--embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16,
                  "--decoder-out-embed-dim", 16, "--core-num-frequent", 10, "--core-topk", 5,
                  "--criterion", "core_mode_loss"],
    "word_attn_gated": ["--encoder-embed-dim", 16, "--decoder-embed-dim", 16, "--encoder-hidden-size", 16,
                        "--decoder-hidden-size", 16, "--decoder-out-embed-dim", 16],
}
BATCH = 16  # sentences per rank; 400 training pairs -> 25 batches -> 13 updates on 2 ranks
UPDATES = 13
# the console script, as users run it (python -m fairseq_wean.cli.train_cpu_dist works too)
LAUNCHER = [os.path.join(BIN, "fairseq-wean-train-cpu-dist")]
ENV = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")


def train_args(data, save_dir, arch, table, *extra):
    args = override([data, "--user-dir", USER_DIR, "--arch", arch, *ARCH_SIZES[arch], "--dropout", 0,
                     "--optimizer", "adam", "--lr", 0.005, "--batch-size", BATCH, "--max-epoch", 1, "--seed", 1,
                     "--log-format", "simple", "--log-interval", 1, "--num-workers", 0,
                     "--disable-validation", "--no-epoch-checkpoints", "--save-dir", save_dir], extra)
    if arch == "core_copy":
        args += ["--core-align-table", table]
    return [str(a) for a in args]


def update_losses(log):
    """{update number: loss} from fairseq's train_inner lines (rank 0 logs them)."""
    return {int(n): float(loss)
            for n, loss in re.findall(r"train_inner \| epoch 001: +(\d+) / \d+ loss=([\d.]+)", log)}


@pytest.fixture(scope="module")
def align_table(raw_dir, tmp_path_factory):
    table = tmp_path_factory.mktemp("dist-table") / "align.table"
    cli("fairseq-wean-align-table", "--src", raw_dir / "train.src", "--tgt", raw_dir / "train.tgt",
        "--topk", 5, "--out", table)
    return table


@pytest.fixture(scope="module", params=["wean_lstm", "core_copy", "word_attn_gated"])
def runs(request, data_bin, align_table, tmp_path_factory):
    """The same training twice, at once: 2 ranks x BATCH, and 1 process x BATCH x --update-freq 2."""
    arch = request.param
    work = tmp_path_factory.mktemp("dist-" + arch)
    with open(work / "two.log", "w+") as out:
        two = subprocess.Popen(
            LAUNCHER + ["--dump-rank-params", str(work / "dump"), "--timeout", "150", "--"]
            + train_args(data_bin, work / "two", arch, align_table),
            cwd=REPO, env=ENV, stdout=out, stderr=subprocess.STDOUT)
        try:
            one = cli("fairseq-train", *train_args(data_bin, work / "one", arch, align_table,
                                                   "--cpu", "--update-freq", 2), timeout=150)
            two.wait(timeout=170)
        finally:
            if two.poll() is None:
                two.kill()
        out.seek(0)
        log = out.read()
    assert two.returncode == 0, log[-5000:]
    return {"arch": arch, "work": work, "log": log, "one_log": one.stdout + one.stderr}


def test_two_gloo_ranks_train_together(runs):
    log = runs["log"]
    assert "training on 2 devices" in log  # fairseq's own report of the world size
    assert re.search(r"\[rank 1\] .*distributed init \(rank 1\): tcp://127\.0\.0\.1:\d+", log)
    assert re.search(r"\[rank 0\] .*'ddp_backend': 'pytorch_ddp'", log)
    # each update sees both ranks' batches: bsz = 2 x BATCH (the last: one batch and a dummy)
    sizes = [int(b) for b in re.findall(r"train_inner \| .* bsz=(\d+), num_updates=", log)]
    assert sizes[:-1] == [2 * BATCH] * (UPDATES - 1) and sizes[-1] == BATCH, sizes


def test_ranks_hold_bit_identical_parameters(runs):
    rank0 = torch.load(str(runs["work"] / "dump" / "rank0.pt"))
    rank1 = torch.load(str(runs["work"] / "dump" / "rank1.pt"))
    assert rank0["num_updates"] == rank1["num_updates"] == UPDATES
    assert rank0["model"].keys() == rank1["model"].keys()
    different = [k for k in rank0["model"] if not torch.equal(rank0["model"][k], rank1["model"][k])]
    assert not different


def test_loss_and_weights_equal_one_process_with_the_same_total_batch(runs):
    two, one = update_losses(runs["log"]), update_losses(runs["one_log"])
    assert len(two) == UPDATES and two.keys() == one.keys()
    for n in two:  # fairseq logs 3 decimals
        assert abs(two[n] - one[n]) <= 1e-3, (n, two[n], one[n])
    assert two[UPDATES] < two[1]  # it trains
    distributed = torch.load(str(runs["work"] / "dump" / "rank0.pt"))["model"]
    single = torch.load(str(runs["work"] / "one" / "checkpoint_last.pt"), weights_only=False)["model"]
    assert distributed.keys() == single.keys()
    for k in single:  # observed: exactly equal (x/2*2 and a+b are exact); allow for sum order
        torch.testing.assert_close(distributed[k], single[k], rtol=1e-5, atol=1e-6, msg=k)


def test_a_killed_rank_fails_the_job_without_a_hang(data_bin, tmp_path):
    """SIGKILL rank 1 mid-training: the launcher stops rank 0 and exits non-zero, quickly."""
    args = train_args(data_bin, tmp_path / "ck", "wean_lstm", None, "--no-save")
    args[args.index("--max-epoch") + 1] = "100000"  # would train for hours if nothing stopped it
    args[args.index("--log-interval") + 1] = "5"
    proc = subprocess.Popen(LAUNCHER + ["--kill-grace", "3", "--"] + args, cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    pids = {}
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            text = "".join(lines)
            pids = {int(r): int(p) for r, p in re.findall(r"started rank (\d) of 2 \(pid (\d+)\)", text)}
            if len(pids) == 2 and re.search(r"\[rank 0\] .*train_inner .*num_updates=10,", text):
                break
            time.sleep(0.2)
        else:
            pytest.fail("training did not start:\n" + "".join(lines)[-5000:])
        os.kill(pids[1], signal.SIGKILL)
        killed_at = time.monotonic()
        proc.wait(timeout=60)
        elapsed = time.monotonic() - killed_at
        reader.join(timeout=5)
        log = "".join(lines)
        assert proc.returncode != 0, log[-3000:]
        assert "rank 1 was killed by signal 9" in log, log[-3000:]
        assert elapsed < 20, elapsed
        for pid in pids.values():  # both ranks are gone (and reaped by the launcher)
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in pids.values():
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


# Variants of each architecture's options: under --ddp-backend pytorch_ddp (find_unused_parameters
# False) a parameter without a gradient fails the next step, so --find-unused-parameters is only
# unneeded if every parameter gets one on every batch.
VARIANTS = [
    ("wean_lstm", ["--wean-score", "dot"]),
    ("wean_lstm", ["--wean-score", "general", "--attention-score", "dot"]),
    ("wean_lstm", ["--wean-score", "concat", "--encoder-bidirectional"]),
    ("core_copy", []),
    ("core_copy", ["--share-decoder-input-output-embed"]),
    ("word_attn_gated", ["--word-attention", "gated"]),
    ("word_attn_gated", ["--word-attention", "ungated", "--rnn-cell", "lstm"]),
    ("word_attn_gated", ["--word-attention", "none"]),
    ("word_attn_gated", ["--share-decoder-input-output-embed"]),
]


@pytest.mark.parametrize("arch,options", VARIANTS, ids=[" ".join([a] + o) for a, o in VARIANTS])
def test_every_parameter_gets_a_gradient_on_every_batch(arch, options, data_bin, align_table):
    from fairseq import options as fairseq_options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    argv = train_args(data_bin, "unused", arch, align_table, "--cpu", *options)
    args = fairseq_options.parse_args_and_arch(fairseq_options.get_training_parser(), argv)
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("valid")
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    sample = next(iter(task.get_batch_iterator(task.dataset("valid"), max_sentences=8).next_epoch_itr()))
    for scale in (1.0, 0.0):  # 0.0: fairseq's dummy batch on a rank with no data left
        model.zero_grad(set_to_none=True)
        loss, _, _ = criterion(model, sample)
        (loss * scale).backward()
        missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
        assert not missing


def run_launcher(*launcher_args):
    """The launcher with fairseq-train arguments it never gets to use: it must refuse its own options first."""
    return subprocess.run(LAUNCHER + [str(a) for a in launcher_args] + ["--", "data-bin", "--arch", "wean_lstm"],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=120)


def test_bad_launcher_options_are_refused_before_any_rank_starts():
    """Before: -1 trained nothing and exited 0, 0 raised ZeroDivisionError, --node-rank 5 of 2
    waited for gloo's 30-minute time-out, a busy --master-port gave a traceback."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = {
            "--nproc-per-node must be at least 1 (got -1)": ["--nproc-per-node", -1],
            "--nproc-per-node must be at least 1 (got 0)": ["--nproc-per-node", 0],
            "--nnodes must be at least 1 (got 0)": ["--nnodes", 0],
            "--node-rank 5 is outside 0..1 (--nnodes 2)": ["--nnodes", 2, "--node-rank", 5, "--master-port", 29999],
            "--master-port {} is already in use on 127.0.0.1".format(port): ["--master-port", port],
            # a negative limit stopped the job right after starting its ranks
            "--timeout must be a number of seconds >= 0 (0: no limit), got -1.0": ["--timeout", -1],
            "--finish-timeout must be a number of seconds >= 0 (seconds), got nan": ["--finish-timeout", "nan"],
            "--kill-grace must be a number of seconds >= 0 (seconds), got -1.0": ["--kill-grace", -1],
        }
        for message, args in cases.items():
            proc = run_launcher(*args)
            assert proc.returncode == 1, (args, proc.stderr[-2000:])
            assert "Traceback" not in proc.stderr and "started rank" not in proc.stderr, proc.stderr[-2000:]
            lines = proc.stderr.strip().splitlines()
            assert lines[-1].startswith("fairseq-wean-train-cpu-dist: error: " + message), (args, lines[-3:])


def process_alive(pid):
    """Whether ``pid`` runs (a zombie left for a non-reaping init counts as dead)."""
    try:
        with open("/proc/{}/stat".format(pid)) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_ranks_die_with_the_launcher(data_bin, tmp_path):
    """kill -9 and kill -HUP of the launcher: before, both ranks trained on, orphaned, until --max-epoch."""
    launchers = {}
    for name in ("KILL", "HUP"):
        args = train_args(data_bin, tmp_path / name, "wean_lstm", None, "--no-save")
        args[args.index("--max-epoch") + 1] = "100000"
        args[args.index("--log-interval") + 1] = "5"
        proc = subprocess.Popen(LAUNCHER + ["--kill-grace", "3", "--"] + args, cwd=REPO, env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        threading.Thread(target=lambda p=proc, out=lines: out.extend(iter(p.stdout.readline, "")),
                         daemon=True).start()
        launchers[name] = (proc, lines)
    pids = {name: {} for name in launchers}
    try:
        deadline = time.monotonic() + 120
        for name, (proc, lines) in launchers.items():
            while True:
                text = "".join(lines)
                pids[name] = {int(r): int(p) for r, p in re.findall(r"started rank (\d) of 2 \(pid (\d+)\)", text)}
                if len(pids[name]) == 2 and re.search(r"\[rank 0\] .*train_inner ", text):
                    break
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("training did not start:\n" + text[-5000:])
                time.sleep(0.2)
        for name, (proc, _) in launchers.items():
            os.kill(proc.pid, getattr(signal, "SIG" + name))
        for name, (proc, lines) in launchers.items():
            proc.wait(timeout=30)
            gone_by = time.monotonic() + 10
            while any(process_alive(pid) for pid in pids[name].values()) and time.monotonic() < gone_by:
                time.sleep(0.1)
            assert not any(process_alive(pid) for pid in pids[name].values()), (name, pids[name])
        hup, hup_log = launchers["HUP"]
        # a hang-up is handled like Ctrl-C: ranks stopped, status 128 + SIGHUP
        assert hup.returncode == 128 + signal.SIGHUP, "".join(hup_log)[-3000:]
        assert "received signal {}".format(int(signal.SIGHUP)) in "".join(hup_log)
        assert launchers["KILL"][0].returncode == -signal.SIGKILL
    finally:
        for name, (proc, _) in launchers.items():
            if proc.poll() is None:
                proc.kill()
            for pid in pids[name].values():
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
