"""Data-parallel training on CPU: N gloo ranks, each one ``fairseq-train`` process.

Why a launcher of our own
-------------------------
fairseq (0.12) starts distributed training in three ways, and on a machine without CUDA
two of them die before training:

- ``fairseq-train --cpu --distributed-world-size 2`` spawns one worker per CUDA device and
  asserts "world size is 2 but have 0 available devices";
- under ``torchrun`` it sets ``device_id = rank % torch.cuda.device_count()``: a modulo by zero;
- one process per rank, each told its rank and a rendezvous address
  (``--distributed-init-method tcp://HOST:PORT --distributed-rank R --distributed-no-spawn``),
  works: this is what :func:`launch` does, locally, for N ranks.

And then the default ``--ddp-backend pytorch_ddp`` fails too, because fairseq builds
``DistributedDataParallel(module, device_ids=[args.device_id], output_device=...)``, and
torch only accepts ``device_ids`` for GPU modules ("device_ids and output_device arguments
only work with single-device/multiple-device GPU modules or CPU modules, but got device_ids
[0] ... module parameters {device(type='cpu')}"). For a CPU module torch wants
``device_ids=None``; nothing else differs.

Decision: we patch that one call rather than force ``--ddp-backend legacy_ddp`` on CPU.
``pytorch_ddp`` is the backend GPU users run, and it is the strict one: with
``find_unused_parameters=False`` it fails on the step after any parameter gets no gradient.
Testing our models on CPU under ``pytorch_ddp`` therefore proves, without a GPU, what the
README claims for GPUs (``--find-unused-parameters`` is not needed). ``legacy_ddp`` keeps
working unchanged.

The fairseq patches (:func:`install`, called from :func:`fairseq_wean.compat.apply`, i.e.
whenever the plugin is imported with ``--user-dir``):

1. ``fairseq.models.distributed_fairseq_model.DistributedDataParallel`` becomes
   :class:`CPUDistributedDataParallel`, which drops ``device_ids``/``output_device`` when
   the module's parameters are all on the CPU and is torch's class otherwise (GPU runs are
   untouched).
2. Under ``torchrun`` without CUDA, ``device_id`` becomes 0 instead of ``rank % 0`` (so
   ``torchrun --nproc-per-node 2 $(which fairseq-train) --cpu --distributed-backend gloo
   --distributed-world-size 2 ...`` works too; without ``--distributed-world-size``, which
   defaults to the number of GPUs, fairseq ignores torchrun and each rank trains alone).
3. Only when the environment variable ``FAIRSEQ_WEAN_DUMP_RANK_PARAMS=DIR`` is set (the
   launcher's ``--dump-rank-params DIR``): every time fairseq saves a checkpoint, *every*
   rank (fairseq only saves on rank 0) also writes its parameters to ``DIR/rank{R}.pt``, so
   a test can check that the ranks hold bit-identical weights.

The launcher (``fairseq-wean-train-cpu-dist`` / ``python -m fairseq_wean.distributed``)::

    fairseq-wean-train-cpu-dist --nproc-per-node 2 -- \\
        data-bin --user-dir fairseq_wean --arch wean_lstm --max-tokens 4000 ...

starts one ``fairseq-train`` per rank (:func:`rank_main`: fairseq's own ``cli_main`` after
:func:`install`) with ``--cpu --distributed-backend gloo
--distributed-init-method tcp://ADDR:PORT --distributed-world-size W --distributed-rank R
--distributed-no-spawn --device-id 0`` added (and ``--user-dir`` pointing to this plugin if
none is given, so that checkpoints record it), streams every rank's output prefixed with
``[rank R]`` and, if any rank exits with an error or is killed, stops the others (SIGTERM,
then SIGKILL after ``--kill-grace`` seconds) and exits non-zero. A rank that is left running
``--finish-timeout`` seconds after another finished cleanly, or a job longer than
``--timeout``, is stopped the same way: the job never hangs on a lost peer (gloo itself
would wait up to 30 minutes in a rendezvous or a collective).

Each rank processes its own batches (``--max-tokens``/``--batch-size`` are per rank), so an
update sees W times the data of a one-process run; ``--update-freq K`` on one process is the
same optimisation as K ranks (tests/test_distributed.py checks this). Multi-node on CPU: run
the same command on every machine with ``--nnodes N --node-rank I --master-addr HOST0
--master-port PORT``.

``--log-dir DIR`` also writes each rank's output, without the prefix, to ``DIR/rank{R}.log``.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import torch
from torch.nn.parallel import DistributedDataParallel

_DUMP_ENV = "FAIRSEQ_WEAN_DUMP_RANK_PARAMS"
PROG = "fairseq-wean-train-cpu-dist"


# --------------------------------------------------------------------------------------
# fairseq patches
# --------------------------------------------------------------------------------------


class CPUDistributedDataParallel(DistributedDataParallel):
    """torch's ``DistributedDataParallel``, minus the GPU-only arguments for a CPU module.

    fairseq passes ``device_ids=[device_id]`` and ``output_device=device_id`` whatever the
    device; torch requires ``None`` for both when the module lives on the CPU. For any other
    module the arguments are passed on unchanged.
    """

    def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
        devices = {p.device.type for p in module.parameters()}
        if devices == {"cpu"}:
            device_ids, output_device = None, None
        super().__init__(module, device_ids, output_device, *args, **kwargs)


def _infer_torch_distributed_launch_init_cpu(cfg, _original):
    """fairseq's torchrun set-up; without a GPU, device id 0 instead of ``rank % 0``."""
    if torch.cuda.device_count() > 0:
        return _original(cfg)
    cfg.distributed_init_method = "env://"
    cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
    cfg.distributed_rank = int(os.environ["RANK"])
    cfg.device_id = 0  # no GPU to pick; fairseq would call torch.cuda.set_device for > 0
    cfg.distributed_no_spawn = True


def _save_checkpoint_and_dump_params(cfg, trainer, epoch_itr, val_loss, _original):
    """fairseq's ``save_checkpoint``; then this rank's parameters go to ``$DUMP/rank{R}.pt``."""
    result = _original(cfg, trainer, epoch_itr, val_loss)
    dump_dir = os.environ.get(_DUMP_ENV)
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
        state = {k: v.detach().cpu().clone() for k, v in trainer.get_model().state_dict().items()}
        path = os.path.join(dump_dir, "rank{}.pt".format(trainer.data_parallel_rank))
        torch.save({"num_updates": trainer.get_num_updates(), "model": state}, path + ".tmp")
        os.replace(path + ".tmp", path)
    return result


def install():
    """Apply the patches described in the module docstring (idempotent, no device work)."""
    from fairseq import checkpoint_utils
    from fairseq.distributed import utils as distributed_utils
    from fairseq.models import distributed_fairseq_model

    distributed_fairseq_model.DistributedDataParallel = CPUDistributedDataParallel

    current = distributed_utils._infer_torch_distributed_launch_init
    if not getattr(current, "_fairseq_wean", False):
        def patched(cfg, _original=current):
            return _infer_torch_distributed_launch_init_cpu(cfg, _original)

        patched._fairseq_wean = True
        distributed_utils._infer_torch_distributed_launch_init = patched

    current = checkpoint_utils.save_checkpoint
    if os.environ.get(_DUMP_ENV) and not getattr(current, "_fairseq_wean", False):
        # fairseq stores the best validation loss as an attribute of the function it finds
        # under this name (``save_checkpoint.best``); the wrapper takes that role.
        def save_checkpoint(cfg, trainer, epoch_itr, val_loss, _original=current):
            return _save_checkpoint_and_dump_params(cfg, trainer, epoch_itr, val_loss, _original)

        save_checkpoint._fairseq_wean = True
        checkpoint_utils.save_checkpoint = save_checkpoint


# --------------------------------------------------------------------------------------
# launcher
# --------------------------------------------------------------------------------------

# fairseq-train flags the launcher sets itself for every rank.
_OWNED_FLAGS = (
    "--distributed-world-size", "--distributed-rank", "--distributed-init-method",
    "--distributed-no-spawn", "--device-id", "--distributed-port", "--distributed-backend",
    "--local_rank", "--local-rank",
)


def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _has_flag(args, flag):
    return any(a == flag or a.startswith(flag + "=") for a in args)


def rank_main():
    """One rank: ``fairseq-train`` (``fairseq_cli.train.cli_main``) with the patches installed.

    The patches do not depend on ``compat.apply()`` or on ``--user-dir`` naming this plugin.
    """
    install()
    from fairseq_cli.train import cli_main as fairseq_train_main

    sys.argv[0] = "fairseq-train"
    fairseq_train_main()


# fairseq_cli.train first: it configures logging (fairseq's format, on stdout) at import.
_RANK_MAIN = "import fairseq_cli.train; from fairseq_wean.distributed import rank_main; rank_main()"


def rank_command(train_args, rank, world_size, init_method):
    """The command line of one rank: fairseq-train's arguments plus the distributed flags."""
    args = list(train_args)
    if not _has_flag(args, "--user-dir"):
        args += ["--user-dir", os.path.dirname(os.path.abspath(__file__))]
    if not _has_flag(args, "--cpu"):
        args.append("--cpu")
    args += [
        "--distributed-backend", "gloo",
        "--distributed-init-method", init_method,
        "--distributed-world-size", str(world_size),
        "--distributed-rank", str(rank),
        "--distributed-no-spawn",
        "--device-id", "0",
    ]
    return [sys.executable, "-c", _RANK_MAIN] + args


class _Rank:
    def __init__(self, rank, cmd, env, log_dir, out, lock):
        self.rank = rank
        log = open(os.path.join(log_dir, "rank{}.log".format(rank)), "w") if log_dir else None
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stopping it stops its children
        )
        self.thread = threading.Thread(target=self._pump, args=(log, out, lock), daemon=True)
        self.thread.start()

    def _pump(self, log, out, lock):
        prefix = "[rank {}] ".format(self.rank)
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", errors="replace")
            with lock:
                out.write(prefix + line)
                out.flush()
            if log:
                log.write(line)
                log.flush()
        if log:
            log.close()

    def signal(self, sig):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass


def _say(message):
    sys.stderr.write("{}: {}\n".format(PROG, message))
    sys.stderr.flush()


def _exit_status(returncode):
    """A shell-style status: 128+N for a rank killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def launch(train_args, nproc_per_node=2, nnodes=1, node_rank=0, master_addr="127.0.0.1",
           master_port=None, timeout=0.0, finish_timeout=300.0, kill_grace=10.0,
           log_dir=None, dump_rank_params=None, out=None, poll=0.2):
    """Run the ranks of this node; return 0 if all succeed, else a non-zero exit status."""
    out = out or sys.stdout
    for flag in _OWNED_FLAGS:
        if _has_flag(train_args, flag):
            raise SystemExit("{}: error: {} is set by the launcher; remove it".format(PROG, flag))
    if nnodes > 1 and not master_port:
        raise SystemExit("{}: error: --master-port is required with --nnodes > 1".format(PROG))
    port = master_port or free_port(master_addr)
    world_size = nnodes * nproc_per_node
    init_method = "tcp://{}:{}".format(master_addr, port)

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc_per_node)))
    if dump_rank_params:
        env[_DUMP_ENV] = os.path.abspath(dump_rank_params)
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)

    lock = threading.Lock()
    ranks = []
    stop_signal = []

    def on_signal(signum, _frame):
        stop_signal.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    status = 0
    try:
        for local in range(nproc_per_node):
            rank = node_rank * nproc_per_node + local
            cmd = rank_command(train_args, rank, world_size, init_method)
            ranks.append(_Rank(rank, cmd, env, log_dir, out, lock))
            _say("started rank {} of {} (pid {}), rendezvous {}".format(
                rank, world_size, ranks[-1].proc.pid, init_method))

        start = time.monotonic()
        first_finish = None
        while True:
            codes = {r.rank: r.proc.poll() for r in ranks}
            failed = [(k, c) for k, c in codes.items() if c not in (None, 0)]
            running = [k for k, c in codes.items() if c is None]
            now = time.monotonic()
            reason = None
            if failed:
                rank, code = failed[0]
                how = "was killed by signal {}".format(-code) if code < 0 else "exited with status {}".format(code)
                reason, status = "rank {} {}".format(rank, how), _exit_status(code)
            elif not running:
                break
            elif stop_signal:
                reason, status = "received signal {}".format(stop_signal[0]), 128 + stop_signal[0]
            elif timeout and now - start > timeout:
                reason, status = "the job ran longer than --timeout {:g}s".format(timeout), 124
            elif len(running) < len(ranks):
                first_finish = first_finish or now
                if now - first_finish > finish_timeout:
                    reason = "rank(s) {} still running {:g}s after another rank finished".format(
                        running, finish_timeout)
                    status = 124
            if reason:
                _say("{}; stopping rank(s) {}".format(reason, running or "none"))
                break
            time.sleep(poll)
    finally:
        _stop(ranks, kill_grace)
        for s, handler in previous.items():
            signal.signal(s, handler)
    for r in ranks:
        r.thread.join(timeout=5)
    if status:
        _say("failed (exit status {})".format(status))
    return status


def _stop(ranks, kill_grace):
    alive = [r for r in ranks if r.proc.poll() is None]
    for r in alive:
        r.signal(signal.SIGTERM)
    deadline = time.monotonic() + kill_grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [r for r in alive if r.proc.poll() is None]
    for r in alive:
        r.signal(signal.SIGKILL)
    for r in ranks:
        try:
            r.proc.wait(timeout=kill_grace)
        except subprocess.TimeoutExpired:
            pass


def get_parser():
    parser = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False,
        usage="%(prog)s [launcher options] [--] FAIRSEQ-TRAIN ARGS",
        description="Train with N gloo ranks on CPU, one fairseq-train process per rank. "
                    "Options not listed here (or everything after --) go to fairseq-train; "
                    "--max-tokens/--batch-size are per rank.",
    )
    parser.add_argument("--nproc-per-node", type=int, default=2, help="ranks on this machine (default 2)")
    parser.add_argument("--nnodes", type=int, default=1, help="machines taking part (default 1)")
    parser.add_argument("--node-rank", type=int, default=0, help="this machine's index, 0..nnodes-1")
    parser.add_argument("--master-addr", default="127.0.0.1",
                        help="address of node 0, where rank 0 listens (default 127.0.0.1)")
    parser.add_argument("--master-port", type=int, default=None,
                        help="rendezvous port on node 0 (default: a free port; required if --nnodes > 1)")
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="stop the job and fail after this many seconds (default 0: no limit)")
    parser.add_argument("--finish-timeout", type=float, default=300.0,
                        help="fail if a rank is still running this long after another finished (default 300)")
    parser.add_argument("--kill-grace", type=float, default=10.0,
                        help="seconds between SIGTERM and SIGKILL when stopping ranks (default 10)")
    parser.add_argument("--log-dir", default=None, help="also write each rank's output to DIR/rank{R}.log")
    parser.add_argument("--dump-rank-params", metavar="DIR", default=None,
                        help="at every checkpoint, every rank writes its parameters to DIR/rank{R}.pt")
    return parser


def cli_main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        i = argv.index("--")
        opts, train_args = get_parser().parse_args(argv[:i]), argv[i + 1:]
    else:
        opts, train_args = get_parser().parse_known_args(argv)
    if not train_args:
        get_parser().error("no fairseq-train arguments given")
    status = launch(
        train_args, nproc_per_node=opts.nproc_per_node, nnodes=opts.nnodes, node_rank=opts.node_rank,
        master_addr=opts.master_addr, master_port=opts.master_port, timeout=opts.timeout,
        finish_timeout=opts.finish_timeout, kill_grace=opts.kill_grace, log_dir=opts.log_dir,
        dump_rank_params=opts.dump_rank_params,
    )
    sys.exit(status)


if __name__ == "__main__":
    cli_main()
