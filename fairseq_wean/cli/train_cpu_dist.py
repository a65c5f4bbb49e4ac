"""``fairseq-wean-train-cpu-dist``: data-parallel training on CPU, N gloo ranks, each one ``fairseq-train``.

Why a launcher of our own: see :mod:`fairseq_wean.distributed` (fairseq's own ways of
starting distributed training die without CUDA; one process per rank works, with the
plugin's patches).

Usage (``python -m fairseq_wean.cli.train_cpu_dist`` works too)::

    fairseq-wean-train-cpu-dist --nproc-per-node 2 -- \\
        data-bin --user-dir fairseq_wean --arch wean_lstm --max-tokens 4000 ...

starts one ``fairseq-train`` per rank (:func:`rank_main`: fairseq's own ``cli_main``, in a
process that imported the plugin, so :func:`fairseq_wean.compat.apply` has patched fairseq)
with ``--cpu --distributed-backend gloo --distributed-init-method tcp://ADDR:PORT
--distributed-world-size W --distributed-rank R --distributed-no-spawn --device-id 0`` added
(and ``--user-dir`` pointing to this plugin if none is given, so that checkpoints record it),
streams every rank's output prefixed with ``[rank R]`` and, if any rank exits with an error or
is killed, stops the others (SIGTERM, then SIGKILL after ``--kill-grace`` seconds) and exits
non-zero. A rank that is left running ``--finish-timeout`` seconds after another finished
cleanly, or a job longer than ``--timeout``, is stopped the same way: the job never hangs on a
lost peer (gloo itself would wait up to 30 minutes in a rendezvous or a collective).

The ranks never outlive the launcher: SIGINT (Ctrl-C), SIGTERM and SIGHUP (a closed terminal
or ssh session) stop them as above, and on Linux each rank asks the kernel
(``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to kill it when the launcher dies in a way it cannot
handle (``kill -9``, a crash, the OOM killer). A killed rank loses nothing already saved:
checkpoints are written to a temporary file and renamed.

Bad launcher options (``--nproc-per-node`` or ``--nnodes`` below 1, ``--nproc-per-node`` above
:data:`NPROC_PER_CPU` per usable CPU, a launcher option given twice, a fairseq distributed option the
launcher sets or whose process count it decides (:data:`DISTRIBUTED_FIELDS`), ``--node-rank`` outside
0..nnodes-1, a ``--master-port`` that is already in use on node 0, a negative or nan time
limit, an empty ``--log-dir``, ``--dump-rank-params`` or ``--master-addr``, a ``--master-addr`` that
does not resolve, a ``--log-dir`` that is a file or holds a symbolic link, named pipe or device as a
``rank{R}.log``) are refused with one line and a non-zero exit before any rank starts.

Each rank processes its own batches (``--max-tokens``/``--batch-size`` are per rank), so an
update sees W times the data of a one-process run; ``--update-freq K`` on one process is the
same optimisation as K ranks (tests/test_distributed.py checks this). Multi-node on CPU: run
the same command on every machine with ``--nnodes N --node-rank I --master-addr HOST0
--master-port PORT``.

``--log-dir DIR`` also writes each rank's output, without the prefix, to ``DIR/rank{R}.log``.
"""
import argparse
import ctypes
import errno
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from fairseq_wean.errors import parse_number


PROG = "fairseq-wean-train-cpu-dist"
# The launcher's pid, for a rank to check that it did not die before PR_SET_PDEATHSIG was set.
LAUNCHER_PID_ENV = "FAIRSEQ_WEAN_LAUNCHER_PID"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# Signals that stop the job cleanly (stop the ranks, then exit 128+N): Ctrl-C, kill, a hang-up.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# What the launcher does with each field of fairseq's DistributedTrainingConfig (fairseq-train's
# distributed options): SETS, the launcher gives it to every rank itself (rank_command); COUNTS, fairseq's
# own process count, which the launcher's --nproc-per-node and --nnodes decide (a rank given it trained
# as one of the launcher's world, the option silently ignored); PASSED, fairseq-train acts on it (or
# refuses it itself). Both the first are refused. tests/test_cpu_launcher_options.py requires every field
# of the installed fairseq to be here, with the flags fairseq's parser gives it (a new distributed
# option of fairseq fails there until it is classified). The launcher does not import fairseq (about 4 s).
SETS, COUNTS, PASSED = "sets", "counts", "passed"
DISTRIBUTED_FIELDS = {
    "distributed_world_size": SETS, "distributed_rank": SETS, "distributed_backend": SETS,
    "distributed_init_method": SETS, "distributed_port": SETS, "device_id": SETS, "distributed_no_spawn": SETS,
    "distributed_num_procs": COUNTS, "nprocs_per_node": COUNTS,
    **{name: PASSED for name in (
        "ddp_backend", "ddp_comm_hook", "bucket_cap_mb", "fix_batches_to_gpus", "find_unused_parameters",
        "gradient_as_bucket_view", "fast_stat_sync", "heartbeat_timeout", "broadcast_buffers", "slowmo_momentum",
        "slowmo_base_algorithm", "localsgd_frequency", "pipeline_model_parallel", "pipeline_balance",
        "pipeline_devices", "pipeline_chunks", "pipeline_encoder_balance", "pipeline_encoder_devices",
        "pipeline_decoder_balance", "pipeline_decoder_devices", "pipeline_checkpoint", "zero_sharding",
        "no_reshard_after_forward", "fp32_reduce_scatter", "cpu_offload", "use_sharded_state",
        "not_fsdp_flatten_parameters")},
}
# a field's flags besides fairseq's "--" + name with "-" (the field's metadata "argparse_alias")
DISTRIBUTED_ALIASES = {"device_id": ("--local_rank",)}


def distributed_flags(field):
    """fairseq-train's flags of the DistributedTrainingConfig field ``field``."""
    return ("--" + field.replace("_", "-"),) + DISTRIBUTED_ALIASES.get(field, ())


# fairseq-train flag -> (field, role) of every field the launcher refuses (SETS and COUNTS)
_OWNED_FLAGS = {flag: (field, role) for field, role in DISTRIBUTED_FIELDS.items() if role != PASSED
                for flag in distributed_flags(field)}


def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _has_flag(args, flag):
    return any(a == flag or a.startswith(flag + "=") for a in args)


def die_with_launcher():
    """Linux: have the kernel SIGKILL this rank when the launcher exits, however it exits.

    A ``kill -9`` of the launcher runs none of its clean-up, and the ranks run in their own
    sessions (so that stopping one stops its children), so nothing else would reach them:
    they would train on, orphaned, until ``--max-epoch``.
    """
    launcher = os.environ.get(LAUNCHER_PID_ENV)
    if not launcher or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != int(launcher):  # it died between starting us and the prctl
        os._exit(128 + int(signal.SIGKILL))


def rank_main():
    """One rank: ``fairseq-train`` (``fairseq_cli.train.cli_main``) in a process with the plugin imported.

    Importing this module imported ``fairseq_wean``, which applied every fairseq patch
    (:func:`fairseq_wean.compat.apply`), whatever ``--user-dir`` names.
    """
    die_with_launcher()
    from fairseq_cli.train import cli_main as fairseq_train_main

    sys.argv[0] = "fairseq-train"
    fairseq_train_main()


# fairseq_cli.train first: it configures logging (fairseq's format, on stdout) at import.
_RANK_MAIN = "import fairseq_cli.train; from fairseq_wean.cli.train_cpu_dist import rank_main; rank_main()"


def rank_command(train_args, rank, world_size, init_method):
    """The command line of one rank: fairseq-train's arguments plus the distributed flags."""
    args = list(train_args)
    if not _has_flag(args, "--user-dir"):
        args += ["--user-dir", os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
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
    def __init__(self, rank, cmd, env, log, out, lock):
        self.rank = rank
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


def _refuse(problem):
    """One line on stderr, exit status 1, before any rank starts."""
    raise SystemExit("{}: error: {}".format(PROG, problem))


def check_dump_dir(dump_dir, ranks):
    """Refuse before any rank starts a --dump-rank-params that is not a folder, or whose file of one of
    this node's ``ranks`` (``rankR.pt``) is a symbolic link, named pipe, device or folder: the ranks write
    their own regular files there (and would refuse such a file only after training)."""
    from fairseq_wean.textio import in_place_problem  # imports neither fairseq nor torch

    if os.path.lexists(dump_dir) and not os.path.isdir(dump_dir):
        _refuse("--dump-rank-params {} exists and is not a folder: give a folder path".format(dump_dir))
    for rank in ranks:  # as the rank logs of --log-dir (textio.open_in_folder): a hard link is refused too
        path = os.path.join(dump_dir, "rank{}.pt".format(rank))
        problem = in_place_problem(path, dump_dir if os.path.isdir(dump_dir) else None)
        if problem is not None:
            _refuse("--dump-rank-params file {} {}: the ranks write their own files there; remove it or give "
                    "another folder".format(path, problem))


def port_in_use(host, port):
    """Whether something listens on ``host:port`` (SO_REUSEADDR: a port in TIME_WAIT is free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


_SECONDS = {"--timeout": "0: no limit", "--finish-timeout": "seconds", "--kill-grace": "seconds"}


def check_number(flag, value):
    """Refuse a launcher number out of its range (one line, exit status 1): the check of
    :func:`launcher_number`'s argparse types, and of :func:`check_options`."""
    if flag in _SECONDS:
        # a negative limit stopped the job at once (--timeout -1 exited 124 after starting the ranks)
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            _refuse("{} must be a number of seconds >= 0 ({}), got {}".format(flag, _SECONDS[flag], value))
    elif flag == "--nproc-per-node" and value < 1:
        _refuse("--nproc-per-node must be at least 1 (got {}): give the number of ranks to run on "
                "this machine".format(value))
    elif flag == "--nproc-per-node" and value > max_nproc_per_node():
        _refuse("--nproc-per-node {} is more than {} per CPU this process may use ({} for its {}): each rank is a "
                "fairseq-train process of its own (hundreds of MiB, a share of the CPUs): give at most {}".format(
                    value, NPROC_PER_CPU, max_nproc_per_node(), usable_cpus(), max_nproc_per_node()))
    elif flag == "--nnodes" and value < 1:
        _refuse("--nnodes must be at least 1 (got {}): give the number of machines taking part".format(value))
    elif flag == "--node-rank" and value < 0:
        _refuse("--node-rank must be at least 0 (got {}): number the machines 0 to --nnodes minus 1".format(value))
    elif flag == "--master-port" and value is not None and not 0 <= value < 65536:
        _refuse("--master-port {} is not a TCP port: choose one in 1..65535 (or 0: a free one)".format(value))


# ranks per CPU at most: more only shares the CPUs out thinner (each rank also holds torch and fairseq
# in memory), and a typo (--nproc-per-node 100000) would start that many processes
NPROC_PER_CPU = 4


def usable_cpus():
    """The CPUs this process may run on (its affinity mask, else os.cpu_count())."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def max_nproc_per_node():
    return NPROC_PER_CPU * usable_cpus()


# the launcher's numbers: (type, lowest, highest) checked by check_number (None: a highest of its own there)
_NUMBERS = {"--nproc-per-node": (int, 1, None), "--nnodes": (int, 1, None), "--node-rank": (int, 0, None),
            "--master-port": (int, 0, 65535), "--timeout": (float, 0, None), "--finish-timeout": (float, 0, None),
            "--kill-grace": (float, 0, None)}


def launcher_number(flag):
    """The argparse ``type`` of a launcher number: not a number is argparse's usage error; out of
    range (nan and inf included) is :func:`check_number`'s one line, before any rank starts.
    ``.range`` as :func:`fairseq_wean.errors.at_least`'s."""
    kind, low, high = _NUMBERS[flag]
    high = max_nproc_per_node() if flag == "--nproc-per-node" else high

    def parse(text):
        value = parse_number(text, kind)
        check_number(flag, value)
        return value

    parse.__name__ = "{} >= {}".format(kind.__name__, low) + ("" if high is None else " and <= {}".format(high))
    parse.range = (low, kind, high, False)
    return parse


def check_options(train_args, nproc_per_node, nnodes, node_rank, master_addr, master_port, timeout=0.0,
                  finish_timeout=300.0, kill_grace=10.0, log_dir=None, dump_rank_params=None):
    """Refuse options that would train nothing, crash, do nothing, or wait for gloo's 30-minute time-out."""
    for flag, value in (("--timeout", timeout), ("--finish-timeout", finish_timeout), ("--kill-grace", kill_grace)):
        check_number(flag, value)
    for flag, (_field, role) in _OWNED_FLAGS.items():
        if _has_flag(train_args, flag):
            if role == SETS:
                _refuse("{} is set by the launcher; remove it".format(flag))
            _refuse("{} is fairseq's own process count, which the launcher sets from --nproc-per-node and --nnodes "
                    "(a rank would ignore it): remove it, and give the launcher --nproc-per-node N".format(flag))
    # an empty folder name was taken as no folder: no rank logs, no parameters written, and no word
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.textio import check_resolvable

    for flag, value in (("--log-dir", log_dir), ("--dump-rank-params", dump_rank_params)):
        if value is not None and not value.strip():
            _refuse("{} is empty: give a folder, or leave {} out".format(flag, flag))
        try:  # before os.makedirs makes DIR/nodir of DIR/nodir/..
            check_resolvable(value or "", flag)
        except FairseqWeanError as exc:
            _refuse(str(exc))
    if not master_addr.strip():
        _refuse("--master-addr is empty: give the address of node 0 (default 127.0.0.1)")
    try:
        socket.getaddrinfo(master_addr, None)
    except (OSError, UnicodeError) as exc:  # socket.gaierror: no such host
        _refuse("--master-addr {}: cannot resolve the address ({}): give the address of node 0".format(
            master_addr, getattr(exc, "strerror", None) or exc))
    if log_dir is not None and os.path.lexists(log_dir) and not os.path.isdir(log_dir):
        _refuse("--log-dir {} exists and is not a folder: give a folder path".format(log_dir))
    check_number("--nproc-per-node", nproc_per_node)
    check_number("--nnodes", nnodes)
    if dump_rank_params is not None:
        check_dump_dir(dump_rank_params, range(node_rank * nproc_per_node, (node_rank + 1) * nproc_per_node))
    if not 0 <= node_rank < nnodes:
        _refuse("--node-rank {} is outside 0..{} (--nnodes {}): number the machines 0 to --nnodes minus 1; "
                "the ranks would wait for machines that never join".format(node_rank, nnodes - 1, nnodes))
    if nnodes > 1 and not master_port:
        _refuse("--master-port is required with --nnodes > 1")
    check_number("--master-port", master_port)
    # Rank 0 listens on node 0; another node cannot tell whether the port is taken there.
    if master_port and node_rank == 0:
        try:
            in_use = port_in_use(master_addr, master_port)
        except OSError as exc:
            _refuse("cannot listen on --master-addr {} --master-port {} ({}): on node 0, give an "
                    "address of this machine".format(master_addr, master_port, exc.strerror or exc))
        if in_use:
            _refuse("--master-port {} is already in use on {}: choose another port, or leave "
                    "--master-port out to use a free one (one machine only)".format(master_port, master_addr))


def _option_value(args, flag, default=None):
    """The last value of ``flag`` in fairseq-train's ``args`` (``--flag V`` or ``--flag=V``)."""
    value = default
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1:]
    return value


def check_save_dir_free(train_args):
    """Refuse, before any rank starts, a --save-dir whose lock (textio.lock_folder) a live process
    holds: rank 0 found it only after every rank had built its model and data, and the other ranks
    then failed with a gloo traceback. Probed and released at once (rank 0 takes it for the run)."""
    import fcntl

    save_dir = _option_value(train_args, "--save-dir", "checkpoints")
    if _has_flag(train_args, "--no-save") or "://" in save_dir:
        return
    path = os.path.join(save_dir, ".fairseq-wean.lock")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return  # no lock file (or not one to open): rank 0's lock_folder decides
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        with open(fd, closefd=False) as f:
            owner = f.read().strip() or "another process"
        _refuse("--save-dir {} is in use by {}: two runs writing into one folder overwrite each other's files; "
                "wait for it, or use another folder".format(os.path.abspath(save_dir), owner))
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_rank_logs(log_dir, ranks):
    """``{rank: open DIR/rank{R}.log}``, all opened before any rank starts, each through
    ``textio.open_in_folder``: a planted symbolic link, named pipe or device there is refused with one
    line (exit 1), never written through; so is a folder that cannot be made."""
    if not log_dir:
        return {}
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.textio import open_in_folder  # imports neither fairseq nor torch

    logs = {}
    try:
        os.makedirs(log_dir, exist_ok=True)
        for rank in ranks:
            logs[rank] = open_in_folder(os.path.join(log_dir, "rank{}.log".format(rank)), "w", log_dir, "--log-dir file")
    except (FairseqWeanError, OSError) as exc:
        for log in logs.values():
            log.close()
        _refuse(str(exc) if isinstance(exc, FairseqWeanError) else "--log-dir {}: {}".format(
            log_dir, exc.strerror or exc))
    return logs


def launch(train_args, nproc_per_node=2, nnodes=1, node_rank=0, master_addr="127.0.0.1",
           master_port=None, timeout=0.0, finish_timeout=300.0, kill_grace=10.0,
           log_dir=None, dump_rank_params=None, out=None, poll=0.2):
    """Run the ranks of this node; return 0 if all succeed, else a non-zero exit status."""
    out = out or sys.stdout
    check_options(train_args, nproc_per_node, nnodes, node_rank, master_addr, master_port, timeout=timeout,
                  finish_timeout=finish_timeout, kill_grace=kill_grace, log_dir=log_dir,
                  dump_rank_params=dump_rank_params)
    if node_rank == 0:
        check_save_dir_free(train_args)
    try:
        port = master_port or free_port(master_addr)
    except OSError as exc:
        _refuse("cannot listen on --master-addr {} ({}): give an address of this machine".format(
            master_addr, exc.strerror or exc))
    world_size = nnodes * nproc_per_node
    init_method = "tcp://{}:{}".format(master_addr, port)

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env[LAUNCHER_PID_ENV] = str(os.getpid())
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc_per_node)))
    if dump_rank_params:
        from fairseq_wean.distributed import DUMP_ENV  # here: the launcher itself needs no torch

        env[DUMP_ENV] = os.path.abspath(dump_rank_params)
    logs = _open_rank_logs(log_dir, [node_rank * nproc_per_node + local for local in range(nproc_per_node)])

    lock = threading.Lock()
    ranks = []
    stop_signal = []

    def on_signal(signum, _frame):
        stop_signal.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    status = 0
    try:
        for local in range(nproc_per_node):
            rank = node_rank * nproc_per_node + local
            cmd = rank_command(train_args, rank, world_size, init_method)
            ranks.append(_Rank(rank, cmd, env, logs.get(rank), out, lock))
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
                # Every rank that failed by now, the likely cause first: a rank that loses its peer
                # aborts (gloo: "Connection closed by peer", SIGABRT) after the peer died, and under
                # load both are seen dead at one poll.
                failed.sort(key=lambda kc: kc[1] == -signal.SIGABRT)
                reason = ", ".join("rank {} {}".format(rank, "was killed by signal {}".format(-code) if code < 0
                                                       else "exited with status {}".format(code))
                                   for rank, code in failed)
                status = _exit_status(failed[0][1])
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
    """The launcher's own options, each refusing a second occurrence (:func:`fairseq_wean.cli.options.once`;
    the rest of the command line is fairseq-train's, which fairseq parses)."""
    from fairseq_wean.cli.options import once

    parser = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False,
        usage="%(prog)s [launcher options] [--] FAIRSEQ-TRAIN ARGS",
        description="Train with N gloo ranks on CPU, one fairseq-train process per rank. "
                    "Options not listed here (or everything after --) go to fairseq-train; "
                    "--max-tokens/--batch-size are per rank.",
    )
    parser.add_argument("--nproc-per-node", type=launcher_number("--nproc-per-node"), default=2, help="ranks on this machine (default 2)")
    parser.add_argument("--nnodes", type=launcher_number("--nnodes"), default=1, help="machines taking part (default 1)")
    parser.add_argument("--node-rank", type=launcher_number("--node-rank"), default=0, help="this machine's index, 0..nnodes-1")
    parser.add_argument("--master-addr", default="127.0.0.1",
                        help="address of node 0, where rank 0 listens (default 127.0.0.1)")
    parser.add_argument("--master-port", type=launcher_number("--master-port"), default=None,
                        help="rendezvous port on node 0 (default: a free port; required if --nnodes > 1)")
    parser.add_argument("--timeout", type=launcher_number("--timeout"), default=0.0,
                        help="stop the job and fail after this many seconds (default 0: no limit)")
    parser.add_argument("--finish-timeout", type=launcher_number("--finish-timeout"), default=300.0,
                        help="fail if a rank is still running this long after another finished (default 300)")
    parser.add_argument("--kill-grace", type=launcher_number("--kill-grace"), default=10.0,
                        help="seconds between SIGTERM and SIGKILL when stopping ranks (default 10)")
    parser.add_argument("--log-dir", default=None, help="also write each rank's output to DIR/rank{R}.log")
    parser.add_argument("--dump-rank-params", metavar="DIR", default=None,
                        help="at every checkpoint (the time of one, also with --no-save), every rank writes its "
                             "parameters to DIR/rank{R}.pt")
    return once(parser)


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
