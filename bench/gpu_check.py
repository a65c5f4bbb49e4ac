"""scripts/gpu_check.sh: the GPU checks of fairseq-wean in one run of at most ~8 minutes, everything
written to one folder ($OUT), stopping by itself at its time budget.

    bash scripts/gpu_check.sh                          # on a GPU machine: OUT=DIR, budget 480 s
    bash scripts/gpu_check.sh --dry-run                # the plan and the time budget, nothing run
    bash scripts/gpu_check.sh --device cpu --out DIR   # the CPU stand-in (tiny sizes): what CI runs

In this order, so that the most valuable parts run first (each starts only if the time left is
at least its minimum, and is stopped at its cap or at the budget, whichever comes first):

  0. setup: the packages the GPU image lacks, from the wheels in .whl/ (scripts/gpu_wheels.sh fills
     it on a CPU machine with network), and the plugin's console scripts (an editable install of
     this tree); then the machine: GPU, driver, torch, CUDA, cuDNN, CPU, the git commit
  1. tests: tests/test_cpu_bf16.py, tests/test_recurrent_precision.py (the native-bfloat16 case on
     this host's CPU) and tests/test_devices.py (every cuda case, the fp32/--fp16/--amp CLI runs)
  2. precision: wean_lstm, core_copy, word_attn_gated and fairseq lstm trained for a fixed number
     of updates in float32 and in --amp and --fp16 on the same batches; the curves compared
  3. distributed: 2 gloo ranks on one GPU against one process with --update-freq 2
  4. bench: python -m bench.run --device cuda at 8k and 50k words, fp32, --amp and --fp16, every
     model against fairseq lstm and transformer: tokens/s, sentences/s, latency, peak GPU memory,
     FLOP/s as a share of the GPU's peak

Files under OUT (at most 8, no folders; OUT_FILES): summary.md (rewritten after every part; the page
docs/results/gpu/DATE-GPU.md, which --page-dir DIR also writes), run.json (machine, commit, every
part's status, what was not reached), tests.json, precision.json, distributed.json, bench.json
(each written as its part goes, complete: true at its end), log.txt (every command's output).
Every file in OUT, --workdir and --page-dir is written as itself, never through a symbolic link and never
into a named pipe (whole files: a temporary file renamed over the target; logs: opened O_NOFOLLOW, regular
files only); a symbolic link or anything but a regular file or folder where the run writes (OUT's files,
anything under --workdir) is refused in one line before any work (exit 2).

Exit status: 0 every part ran and passed; 1 set-up failed (no CUDA with --device cuda, missing
packages and no .whl/); 2 bad options, or a link or a pipe in OUT or --workdir (one line, before any
work); 3 a check failed or a part broke (or a link or a pipe appeared there during the run: one line);
4 the budget left a part unreached or stopped it (nothing failed).

With --device cpu (default --size tiny) the same code runs on the CPU, as the GPU run's stand-in:
CI runs it (tests/test_gpu_check.py), so the script is known to work before a GPU is lent. Its
numbers are CPU numbers and its pages say so. How to run it on a lent GPU: docs/testing.md, "GPU".

The driver imports only the standard library until the setup has installed what it needs.
"""
import argparse
import datetime
import errno
import hashlib
import importlib.util
import json
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
PROG = "gpu_check.sh"
WHEELS = os.path.join(REPO, ".whl")
STAMP = os.path.join(WHEELS, "SOURCE.json")

# What the plugin imports that a bare GPU image lacks (import names; scripts/gpu_wheels.sh lists the
# wheels that provide them and their own needs)
NEEDED_MODULES = ("fairseq", "hydra", "omegaconf", "bitarray", "sacremoses", "rouge_score", "textstat",
                  "eflomal", "subword_nmt", "tensorboardX", "nltk")
PLUGIN_SCRIPTS = ("fairseq-wean-align-table", "fairseq-wean-score")

PARTS = ("tests", "precision", "distributed", "bench")
# every file the run writes in OUT (no folders)
OUT_FILES = ("summary.md", "run.json", "log.txt") + tuple(part + ".json" for part in PARTS)
# what the run writes directly in --workdir: the device checks' settings, the machine, the tests' JSON
# lines (bench/pytest_progress.py); pytest's --basetemp; bench.run's and the parts' data and models
WORKDIR_CONFIG, WORKDIR_ENV, WORKDIR_TESTS_LOG = "config.json", "env.json", "tests.jsonl"
WORKDIR_PYTEST, WORKDIR_BENCH, WORKDIR_DISTRIBUTED = "pytest-tmp", "bench", "distributed"
WORKDIR_NAMES = (WORKDIR_CONFIG, WORKDIR_ENV, WORKDIR_TESTS_LOG, WORKDIR_PYTEST, WORKDIR_BENCH, WORKDIR_DISTRIBUTED)
DESCRIPTION = {
    "tests": "pytest {tests}",
    "precision": "wean_lstm, core_copy, word_attn_gated, lstm: {precision_updates} updates in {precisions} "
                 "on the same batches; curves against fp32",
    "distributed": "{dist_models}: 2 gloo ranks on one {device} device vs 1 process --update-freq 2, "
                   "{dist_updates} updates; parameters and losses compared",
    "bench": "python -m bench.run --device {device} at {bench_vocabs} words, {bench_precisions}: every model "
             "vs lstm and transformer (tok/s, sent/s, latency, peak memory, FLOP/s share)",
}
# part: {device: (seconds it needs to start, the most it may take)}
TIMES = {
    "tests": {"cuda": (60, 200), "cpu": (5, 120)},
    "precision": {"cuda": (30, 90), "cpu": (10, 120)},
    "distributed": {"cuda": (30, 90), "cpu": (10, 120)},
    "bench": {"cuda": (45, 10 ** 6), "cpu": (10, 10 ** 6)},
}
SETUP_LIMIT = 150  # seconds: the installation and the machine's description
RESERVE = 5  # seconds kept at the end of the budget for the last summary
EXIT_SETUP, EXIT_USAGE, EXIT_FAILED, EXIT_BUDGET = 1, 2, 3, 4

ARCHS = ["wean_lstm", "core_copy", "word_attn_gated", "lstm"]
SIZES = {
    "full": dict(vocab=8000, bench_vocabs="8000,50000", n_train=6000, n_test=128, n_latency=8, gen_len=16, dim=256,
                 max_tokens=2048, precision_updates=40, precision_lr=1e-3, dist_models=ARCHS, dist_updates=10,
                 dist_batch=32, dist_lr=5e-4, bench_updates=10, bench_warmup=3, flop_batches=2,
                 bench_models="lstm,transformer,wean_lstm,core_copy,word_attn_gated"),
    "tiny": dict(vocab=300, bench_vocabs="300", n_train=400, n_test=8, n_latency=2, gen_len=4, dim=16,
                 max_tokens=256, precision_updates=4, precision_lr=1e-3, dist_models=["wean_lstm"], dist_updates=3,
                 dist_batch=8, dist_lr=5e-4, bench_updates=2, bench_warmup=1, flop_batches=1,
                 bench_models="lstm,transformer,wean_lstm,core_copy,word_attn_gated"),
}
PRECISIONS = {"cuda": ["fp32", "amp", "fp16"], "cpu": ["fp32", "cpu-bf16"]}
# the native-bfloat16 CPU cases first (never run on the GPU machine's CPU so far), then the device cases
DEFAULT_TESTS = "tests/test_cpu_bf16.py tests/test_recurrent_precision.py tests/test_devices.py"


class UsageError(Exception):
    pass


class Refused(Exception):
    """A path where the run reads or writes that is a symbolic link, a named pipe or anything but a
    regular file (or folder), or that leads out of its folder: one line, nothing written through it."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def positive_seconds(text):
    """An argparse type: a finite number of seconds > 0 (nan and inf refused). Its ``range`` is
    ``fairseq_wean.errors.at_least``'s (low, kind, high, above): this module imports only the
    standard library until the setup has installed what the plugin needs."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of seconds, got {!r}".format(text)) from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a number of seconds > 0, got {!r}".format(text))
    return value


positive_seconds.range = (0, float, None, True)


def part_list(text):
    parts = [p for p in text.split(",") if p]
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise argparse.ArgumentTypeError("unknown part(s) {!r} (known: {})".format(",".join(bad) or text, ",".join(PARTS)))
    twice = sorted({p for p in parts if parts.count(p) > 1}, key=PARTS.index)
    if twice:
        raise argparse.ArgumentTypeError("part(s) given twice: {!r} (each runs once; known: {})".format(
            ",".join(twice), ",".join(PARTS)))
    return [p for p in PARTS if p in parts]


def get_parser():
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0], epilog="\n\n".join(__doc__.split("\n\n")[1:-1]),
               formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--out", default=None, help="the folder of the results (default: $OUT)")
    p.add_argument("--budget", type=positive_seconds, default=480.0,
                   help="seconds from the script's start, the installation included (default 480)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda (default) or cpu, the stand-in that CI runs")
    p.add_argument("--size", choices=sorted(SIZES), default=None,
                   help="full (GPU: 256 units, 8k/50k words) or tiny (16 units, 300 words); default full on "
                        "cuda, tiny on cpu")
    p.add_argument("--parts", type=part_list, default=list(PARTS),
                   help="comma-separated, from {} (default all; for a rerun of what a run did not reach)".format(",".join(PARTS)))
    p.add_argument("--tests", default=None, metavar="PYTEST_ARGS",
                   help="what the tests part gives pytest (default: " + DEFAULT_TESTS + ")")
    p.add_argument("--workdir", default=None, help="data, checkpoints, logs (default work_dirs/gpu-check, git-ignored)")
    p.add_argument("--page-dir", default=None,
                   help="also write the summary as DIR/DATE-GPU.md (DIR: docs/results/gpu in a checkout)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the time budget; run nothing")
    return p


def parse(argv):
    cfg = get_parser().parse_args(argv)
    cfg.tests = DEFAULT_TESTS if cfg.tests is None else cfg.tests
    try:
        words = shlex.split(cfg.tests)
    except ValueError as exc:
        raise UsageError("--tests: {}".format(exc)) from None
    if not words:
        raise UsageError("argument --tests: empty: give pytest's arguments, or leave the option out for the "
                         "default ({})".format(DEFAULT_TESTS))
    cfg.out = cfg.out or os.environ.get("OUT") or None
    if cfg.out is None and not cfg.dry_run:
        raise UsageError("no output folder: set OUT or give --out DIR")
    cfg.out = os.path.abspath(cfg.out) if cfg.out else None
    cfg.page_dir = os.path.abspath(cfg.page_dir) if cfg.page_dir else None
    cfg.size = cfg.size or ("full" if cfg.device == "cuda" else "tiny")
    cfg.workdir = os.path.abspath(cfg.workdir or os.path.join(REPO, "work_dirs", "gpu-check"))
    cfg.sizes = dict(SIZES[cfg.size], precisions=PRECISIONS[cfg.device])
    return cfg


def describe(cfg, part):
    s = cfg.sizes
    return DESCRIPTION[part].format(device=cfg.device, precisions=", ".join(s["precisions"]), tests=cfg.tests,
                                    bench_precisions=", ".join(s["precisions"]), dist_models=", ".join(s["dist_models"]),
                                    **{k: v for k, v in s.items() if k not in ("precisions", "dist_models")})


def plan(cfg):
    lines = ["{} plan: device {}, sizes {}, budget {:.0f} s from the start, installation included (the setup "
             "may take up to {} s; {} s are kept for the last summary)".format(
                 PROG, cfg.device, cfg.size, cfg.budget, SETUP_LIMIT, RESERVE),
             "  0. setup: install missing packages from .whl/ (if any are missing), describe the machine"]
    for i, part in enumerate(PARTS, 1):
        need, cap = TIMES[part][cfg.device]
        when = ("starts if >= {} s are left, runs at most {}".format(need, "{} s".format(cap) if cap < 10 ** 6 else "to the budget")
                if part in cfg.parts else "not selected (--parts)")
        lines.append("  {}. {}: {} [{}]".format(i, part, describe(cfg, part), when))
    lines.append("output: {} (summary.md, run.json, {}, log.txt)".format(
        cfg.out or "(none: set OUT or give --out DIR)", ", ".join(p + ".json" for p in PARTS)))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ files
# Every file the GPU check (this driver, bench.device_checks, bench.device_bench, bench.pytest_progress)
# reads or writes in OUT, --workdir and --page-dir goes through these: never through a symbolic link
# (a planted OUT/log.txt -> ~/.bashrc is not written through), never into a named pipe (which would block
# the run forever), never out of the folder. The same rules as fairseq_wean.textio's open_in_folder and
# atomic_output, in the standard library only (this driver runs before the setup installs the plugin).
def _check_inside(path, folder, what):
    folder = os.path.realpath(folder or os.path.dirname(os.path.abspath(path)))
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if os.path.commonpath([parent, folder]) != folder:
        raise Refused("{} {} is outside {} (through a symbolic link): refused".format(what, path, folder))


_MODES = {"r": os.O_RDONLY, "rb": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
          "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}


def open_file(path, mode="r", folder=None, what="file", errors=None):
    """Open ``path``, a file of ``folder`` (default: its own directory), as itself: ``O_NOFOLLOW`` (no
    check-then-open race), ``O_NONBLOCK`` until it is known to be a regular file (a named pipe is
    refused before it could block), written only if it has no other hard link; :class:`Refused`
    (one line) otherwise. ``mode``: r, rb, w, wb, a (text is UTF-8)."""
    _check_inside(path, folder, what)
    try:
        fd = os.open(path, _MODES[mode] | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise Refused("{} {} is a symbolic link: refused (the GPU check reads and writes its files only as "
                          "themselves); remove it".format(what, path)) from None
        if exc.errno == errno.ENXIO:  # a named pipe opened for writing, no reader
            raise Refused("{} {} is not a regular file (a named pipe?): refused; remove it".format(what, path)) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (mode != "r" and mode != "rb" and info.st_nlink > 1):
        os.close(fd)
        raise Refused("{} {} is {}: refused; remove it".format(
            what, path, "not a regular file (a named pipe?)" if not stat.S_ISREG(info.st_mode)
            else "a hard link of another file"))
    os.set_blocking(fd, True)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8", errors=errors)


def write_file(path, data, folder=None, what="file"):
    """Write ``data`` (str or bytes) as the whole of ``path``, a file of ``folder``: a temporary file
    beside it renamed over it, so that a planted symbolic link or named pipe is replaced, never written
    through, and a run stopped while writing leaves the previous file."""
    _check_inside(path, folder, what)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 -> what open() would have given
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(path, data, folder=None, what="file"):
    write_file(path, json.dumps(data, indent=1, default=str), folder, what)


def read_json(path, folder=None, what="file"):
    """The JSON of ``path`` (:func:`open_file`); None if it is missing or not JSON."""
    try:
        with open_file(path, "r", folder, what) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


def make_dirs(root, path, what="--workdir"):
    """Create the folder ``path`` inside ``root`` (and ``root``, a folder the user named), refusing
    (:class:`Refused`) a component inside ``root`` that is a symbolic link or not a folder: what is
    made or removed there never lands under a link's target. Returns ``path``."""
    root, path = os.path.abspath(root), os.path.abspath(path)
    os.makedirs(root, exist_ok=True)
    rel = os.path.relpath(path, root)
    if rel == os.curdir:
        return path
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise Refused("{} {}: {} is outside it: refused".format(what, root, path))
    current = root
    for part in rel.split(os.sep):
        current = os.path.join(current, part)
        try:
            os.mkdir(current)
        except FileExistsError:
            pass
        info = os.lstat(current)
        if not stat.S_ISDIR(info.st_mode):
            raise Refused("{} {}: {} is {}: refused; remove it".format(
                what, root, os.path.relpath(current, root),
                "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"))
    return path


def remove_tree(root, path, what="--workdir"):
    """Remove the folder ``path`` inside ``root`` (if it is there), refusing (:class:`Refused`) a
    component of it inside ``root`` that is a symbolic link: never deletes under a link's target
    (shutil.rmtree itself follows no link below the folder it is given)."""
    import shutil

    root, path = os.path.abspath(root), os.path.abspath(path)
    rel = os.path.relpath(path, root)
    if rel in (os.curdir, os.pardir) or rel.startswith(os.pardir + os.sep):
        raise Refused("{} {}: {} is not a folder inside it: not removed".format(what, root, path))
    current = root
    for part in rel.split(os.sep):
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            raise Refused("{} {}: {} is {}: refused (not removed); remove it".format(
                what, root, os.path.relpath(current, root),
                "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"))
    shutil.rmtree(path)


def check_folder(folder, what, names=None, skip=()):
    """Refuse (:class:`Refused`, one line) a symbolic link, a named pipe or anything but a regular
    file or folder where the run writes: ``names`` (files directly in ``folder``), or else anything
    under it, except inside the folders of ``skip`` (which are themselves checked)."""
    def check(path):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode):
            problem = "a symbolic link"
        elif stat.S_ISREG(info.st_mode) or (stat.S_ISDIR(info.st_mode) and names is None):
            return info
        else:
            problem = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a named pipe?)"
        raise Refused("{} {}: {} is {}: refused (the run writes there only regular files of its own); remove "
                      "it".format(what, folder, os.path.relpath(path, folder), problem))

    if not os.path.isdir(folder):
        return
    if names is not None:
        for name in names:
            check(os.path.join(folder, name))
        return
    skip = {os.path.abspath(s) for s in skip}
    for top, dirs, files in os.walk(folder):  # no link is followed: a linked folder is listed, not entered
        for name in dirs + files:
            check(os.path.join(top, name))
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]


def check_folders(cfg):
    """Before any work: OUT's files and everything under --workdir (the tests' own temporary folder
    aside, which pytest empties itself) must be regular files and folders."""
    if cfg.out:
        check_folder(cfg.out, "--out", names=OUT_FILES)
    check_folder(cfg.workdir, "--workdir", skip=[os.path.join(cfg.workdir, WORKDIR_PYTEST)])


# ------------------------------------------------------------------------------ the commit
FINGERPRINTED = ("fairseq_wean", "bench", "tests", "scripts", "preprocess", "examples", "setup.py")


def tree_fingerprint(root=REPO):
    """sha256 of the code that travels to a device machine (paths and contents, sorted), without
    git: the device's copy of the tree has no .git."""
    digest = hashlib.sha256()
    paths = []
    for top in FINGERPRINTED:
        full = os.path.join(root, top)
        if os.path.isfile(full):
            paths.append(top)
        for folder, dirs, files in os.walk(full):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.endswith(".egg-info"))
            paths += [os.path.relpath(os.path.join(folder, f), root) for f in files
                      if f.endswith((".py", ".sh", ".txt", ".md", ".json", ".ini", ".cfg"))]
    for rel in sorted(paths):
        digest.update(rel.encode() + b"\0")
        with open(os.path.join(root, rel), "rb") as f:
            digest.update(f.read() + b"\0")
    return digest.hexdigest()[:16]


def git(*args):
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def source():
    """The commit this tree is: from git where the tree has it, else from .whl/SOURCE.json, which
    scripts/gpu_wheels.sh writes on the CPU machine (with the tree's fingerprint then and now)."""
    fingerprint = tree_fingerprint()
    commit = git("rev-parse", "HEAD")
    if commit:
        status = git("status", "--porcelain", "--untracked-files=no") or ""
        return {"commit": commit, "modified_files": len(status.splitlines()), "from": "git",
                "tree_fingerprint": fingerprint}
    try:
        stamp = read_json(STAMP, WHEELS, ".whl")
    except (OSError, Refused):
        stamp = None
    if not isinstance(stamp, dict):
        return {"commit": None, "from": "unknown (no .git, no .whl/SOURCE.json)", "tree_fingerprint": fingerprint}
    return {"commit": stamp.get("commit"), "modified_files": stamp.get("modified_files"),
            "from": ".whl/SOURCE.json ({})".format(stamp.get("written")), "tree_fingerprint": fingerprint,
            "same_tree_as_stamp": stamp.get("tree_fingerprint") == fingerprint}


# ------------------------------------------------------------------------------ running
class Run:
    """The results folder: run.json, the parts' JSON, log.txt and summary.md."""

    def __init__(self, cfg, t0):
        self.cfg, self.t0 = cfg, t0
        self.deadline = t0 + cfg.budget
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.state = {"script": PROG, "started_utc": self.started.strftime("%Y-%m-%d %H:%M:%S"),
                      "command": "bash scripts/gpu_check.sh " + " ".join(shlex.quote(a) for a in cfg.argv),
                      "device": cfg.device, "size": cfg.size, "budget_s": cfg.budget, "sizes": cfg.sizes,
                      "source": None, "machine": None, "setup": {}, "parts": {}, "not_reached": [],
                      "finished": False, "exit_code": None}
        for part in PARTS:
            self.state["parts"][part] = {"status": "pending" if part in cfg.parts else "not selected"}
        os.makedirs(cfg.out, exist_ok=True)
        os.makedirs(cfg.workdir, exist_ok=True)
        self.log_path = os.path.join(cfg.out, "log.txt")
        write_file(self.log_path, "", cfg.out, "--out")  # a fresh log: replaces whatever was there

    def left(self):
        return self.deadline - time.time()

    def path(self, name):
        return os.path.join(self.cfg.out, name)

    def say(self, msg):
        line = "{} [{:5.0f} s] {}".format(time.strftime("%H:%M:%S"), time.time() - self.t0, msg)
        print(line, flush=True)
        with open_file(self.log_path, "a", self.cfg.out, "--out") as f:
            f.write(line + "\n")

    def command(self, cmd, timeout, env=None):
        """Run ``cmd`` (its output appended to log.txt) in a process group of its own; at ``timeout``
        the whole group is stopped (SIGTERM, then SIGKILL). Returns (exit status or None if stopped, seconds)."""
        start = time.time()
        with open_file(self.log_path, "a", self.cfg.out, "--out") as log:
            log.write("$ " + " ".join(shlex.quote(str(c)) for c in cmd) + "\n")
            log.flush()
            proc = subprocess.Popen([str(c) for c in cmd], cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})), start_new_session=True)
            try:
                code = proc.wait(timeout=max(timeout, 0.1))
            except subprocess.TimeoutExpired:
                code = None
                stop_group(proc)
        return code, time.time() - start

    def save(self):
        write_json(self.path("run.json"), self.state, self.cfg.out, "--out")
        text = summary_markdown(self.state, self.part_results())
        write_file(self.path("summary.md"), text, self.cfg.out, "--out")
        if self.cfg.page_dir and self.state["finished"]:
            os.makedirs(self.cfg.page_dir, exist_ok=True)
            write_file(os.path.join(self.cfg.page_dir, page_name(self.state) + ".md"), text, self.cfg.page_dir,
                       "--page-dir")

    def part_results(self):
        found = {}
        for part in PARTS:
            data = read_json(self.path(part + ".json"), self.cfg.out, "--out")
            if data is not None:
                found[part] = data
        return found


def stop_group(proc, grace=5.0):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue


def missing_modules():
    return [m for m in NEEDED_MODULES if importlib.util.find_spec(m) is None]


def setup(run):
    """Install what is missing (wheels from .whl/, the plugin's console scripts); describe the
    machine. Returns an error message, or None. It runs whatever the budget (each step at most
    SETUP_LIMIT seconds): the parts need it, and what it took counts against theirs."""
    limit = SETUP_LIMIT
    missing = missing_modules()
    run.state["setup"]["missing_before"] = missing
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--disable-pip-version-check"]
    if missing:
        wheels = sorted(f for f in os.listdir(WHEELS) if f.endswith(".whl")) if os.path.isdir(WHEELS) else []
        if not wheels:
            return ("missing Python packages ({}) and no wheels in .whl/: run bash scripts/gpu_wheels.sh on a "
                    "machine with network and carry .whl with the tree (docs/testing.md, GPU)".format(", ".join(missing)))
        run.say("setup: installing {} wheels from .whl/ (missing: {})".format(len(wheels), ", ".join(missing)))
        code, secs = run.command(pip + [os.path.join(WHEELS, w) for w in wheels], limit)
        run.state["setup"].update(wheels=wheels, install_s=round(secs, 1), install_exit=code)
        importlib.invalidate_caches()
        if code != 0 or missing_modules():
            return "installing the wheels of .whl/ failed (exit {}; still missing: {}): see log.txt".format(
                code, ", ".join(missing_modules()) or "none")
    if not all(os.path.exists(os.path.join(BIN, s)) for s in PLUGIN_SCRIPTS):
        run.say("setup: the plugin's console scripts (pip install -e . into {})".format(BIN))
        code, secs = run.command(pip + ["--no-build-isolation", "--ignore-requires-python", "-e", REPO], limit)
        run.state["setup"].update(plugin_install_s=round(secs, 1), plugin_install_exit=code)
        if code != 0:
            return "installing the plugin (pip install -e .) failed (exit {}): see log.txt".format(code)
    run.state["source"] = source()
    result = os.path.join(run.cfg.workdir, WORKDIR_ENV)
    code, secs = run.command([sys.executable, "-m", "bench.device_checks", "env", "--config", config_file(run),
                              "--result", result], 60)
    run.state["machine"] = read_json(result, run.cfg.workdir, "--workdir")
    if code != 0 or run.state["machine"] is None:
        if run.state["machine"] and run.cfg.device == "cuda" and not run.state["machine"].get("cuda_available"):
            return ("--device cuda: torch {} sees no CUDA device (use --device cpu for the CPU stand-in)"
                    .format(run.state["machine"]["torch"]))
        return "describing the machine failed (exit {}): see log.txt".format(code)
    return None


def config_file(run):
    s = run.cfg.sizes
    path = os.path.join(run.cfg.workdir, WORKDIR_CONFIG)
    write_json(path, folder=run.cfg.workdir, what="--workdir", data={
                      "device": run.cfg.device, "workdir": run.cfg.workdir, "vocab": s["vocab"], "n_train": s["n_train"],
                      "n_test": s["n_test"], "n_latency": s["n_latency"], "dim": s["dim"], "max_tokens": s["max_tokens"],
                      "precision": {"models": ARCHS, "precisions": s["precisions"], "updates": s["precision_updates"],
                                    "lr": s["precision_lr"]},
                      "distributed": {"models": s["dist_models"], "updates": s["dist_updates"], "batch": s["dist_batch"],
                                      "lr": s["dist_lr"], "concurrent": len(s["dist_models"]) if run.cfg.device == "cuda" else 1,
                                      "timeout": TIMES["distributed"][run.cfg.device][1]}})
    return path


def bench_flop_batches(run):
    """--flop-batches of the bench part: 0 where this torch counts no FLOPs (bench.flops.missing():
    torch < 2.1), said once in the log; the table's FLOP columns are then n/a, not errors."""
    from bench import flops

    missing = flops.missing()
    if missing:
        run.say("bench: {}: run without FLOPs per token (--flop-batches 0)".format(missing))
        return 0
    return run.cfg.sizes["flop_batches"]


def part_command(run, part):
    cfg, s = run.cfg, run.cfg.sizes
    result = run.path(part + ".json")
    if part == "tests":
        return [sys.executable, "-m", "pytest", "-p", "bench.pytest_progress", "-v", "-rs", "-n",
                "4" if cfg.device == "cuda" else "0", "--dist", "load", "--basetemp",
                os.path.join(cfg.workdir, WORKDIR_PYTEST), *shlex.split(cfg.tests)], {
                    "GPU_CHECK_PYTEST_LOG": os.path.join(cfg.workdir, WORKDIR_TESTS_LOG)}
    if part in ("precision", "distributed"):
        return [sys.executable, "-m", "bench.device_checks", part, "--config", config_file(run), "--result", result], {}
    return [sys.executable, "-m", "bench.run", "--device", cfg.device, "--vocabs", s["bench_vocabs"],
            "--precisions", ",".join(s["precisions"]), "--models", s["bench_models"], "--dim", s["dim"],
            "--max-tokens", s["max_tokens"], "--n-train", s["n_train"], "--n-test", s["n_test"],
            "--n-latency", s["n_latency"], "--gen-len", s["gen_len"], "--updates", s["bench_updates"],
            "--warmup", s["bench_warmup"], "--flop-batches", bench_flop_batches(run),
            "--workdir", os.path.join(cfg.workdir, WORKDIR_BENCH), "--json", result], {}


def tests_json(run, code, seconds, command):
    """tests.json from the pytest plugin's lines (bench/pytest_progress.py)."""
    records = []
    try:
        with open_file(os.path.join(run.cfg.workdir, WORKDIR_TESTS_LOG), "r", run.cfg.workdir, "--workdir") as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (FileNotFoundError, ValueError):
        pass
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for r in records:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    skips = {}
    for r in records:
        if r["outcome"] == "skipped":
            skips.setdefault(r.get("reason", "?"), []).append(r["nodeid"])
    notable = {r["nodeid"]: r["outcome"] for r in records
               if "with_native_bf16" in r["nodeid"] or ("on_one_gpu" in r["nodeid"] and "fp32" in r["nodeid"])}
    data = {"complete": code is not None, "exit_code": code, "seconds": round(seconds, 1), "command": command,
            "counts": counts, "failed": [{"nodeid": r["nodeid"], "message": r.get("message", "")}
                                         for r in records if r["outcome"] == "failed"],
            "skipped": [{"reason": k, "count": len(v), "example": v[0]} for k, v in skips.items()],
            "notable": notable, "by_file": {}}
    for r in records:
        by = data["by_file"].setdefault(r["nodeid"].split("::")[0], {})
        by[r["outcome"]] = by.get(r["outcome"], 0) + 1
    # pytest's exit 5 (nothing collected) or 4 (usage) is a failure of the part, not of a test
    data["passed"] = code == 0 and counts["failed"] == 0 and counts["passed"] > 0
    write_json(run.path("tests.json"), data, run.cfg.out, "--out")
    return data


def run_part(run, part):
    need, cap = TIMES[part][run.cfg.device]
    left = run.left() - RESERVE
    if left < need:
        run.state["parts"][part] = {"status": "not reached", "note": "{:.0f} s left, it needs {} s".format(max(left, 0), need)}
        run.state["not_reached"].append(part)
        run.say("{}: not reached ({:.0f} s left, needs {} s)".format(part, max(left, 0), need))
        return
    timeout = min(cap, left)
    run.say("{}: {} (at most {:.0f} s)".format(part, describe(run.cfg, part), timeout))
    cmd, env = part_command(run, part)
    if part == "tests":
        write_file(os.path.join(run.cfg.workdir, WORKDIR_TESTS_LOG), "", run.cfg.workdir, "--workdir")
    run.state["parts"][part] = {"status": "running"}
    run.save()
    code, seconds = run.command(cmd, timeout, env)
    if part == "tests":
        result = tests_json(run, code, seconds, " ".join(shlex.quote(str(c)) for c in cmd))
    else:
        result = run.part_results().get(part, {})
    if code is None:
        status = "stopped"
        note = "stopped after {:.0f} s ({}); its JSON holds what it reached".format(
            seconds, "its cap" if timeout == cap else "the budget")
    elif not result.get("complete"):  # it broke before its end
        status, note = "error", "exit {}: see log.txt".format(code)
    else:  # its verdict (bench: no model failed); pytest's exit 1 is failed tests, a result like any other
        status = "passed" if result.get("passed", not result.get("errors")) else "failed"
        note = "exit {}".format(code) if code else ""
    run.state["parts"][part] = {"status": status, "seconds": round(seconds, 1), "exit_code": code, "note": note}
    run.say("{}: {}{} ({:.0f} s)".format(part, status, " - " + note if note else "", seconds))
    run.save()


def page_name(state):
    machine = state.get("machine") or {}
    gpus = machine.get("gpus") or []
    what = gpus[0]["name"] if gpus and state["device"] == "cuda" else "cpu-stand-in"
    slug = re.sub(r"[^a-z0-9]+", "-", what.lower()).strip("-")
    return "{}-{}".format(state["started_utc"][:10], slug)


def exit_code(state):
    statuses = [p["status"] for p in state["parts"].values()]
    if any(s in ("failed", "error") for s in statuses):
        return EXIT_FAILED
    if any(s in ("not reached", "stopped") for s in statuses):
        return EXIT_BUDGET
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        cfg = parse(argv)
    except UsageError as exc:
        sys.stderr.write("{}: error: {}\n".format(PROG, str(exc).replace("\n", " ")))
        return EXIT_USAGE
    cfg.argv = argv
    if cfg.dry_run:
        print(plan(cfg))
        return 0
    try:
        check_folders(cfg)
    except Refused as exc:
        sys.stderr.write("{}: error: {}\n".format(PROG, str(exc).replace("\n", " ")))
        return EXIT_USAGE
    try:
        return run_all(cfg)
    except Refused as exc:  # a link or a pipe planted while the run went on
        sys.stderr.write("{}: error: {}\n".format(PROG, str(exc).replace("\n", " ")))
        return EXIT_FAILED


def run_all(cfg):
    t0 = float(os.environ.get("GPU_CHECK_T0") or time.time())
    run = Run(cfg, t0)
    run.say(plan(cfg))
    error = setup(run)
    if error:
        run.state.update(finished=True, exit_code=EXIT_SETUP, error=error)
        run.save()
        sys.stderr.write("{}: error: {}\n".format(PROG, error))
        return EXIT_SETUP
    m = run.state["machine"]
    run.say("machine: {}; torch {}, CUDA {}, cuDNN {}; CPU {}; commit {}".format(
        ", ".join(g["name"] for g in m["gpus"]) or "no GPU", m["torch"], m["cuda"], m["cudnn"], m["cpu"],
        (run.state["source"] or {}).get("commit")))
    run.save()
    for part in cfg.parts:
        run_part(run, part)
    run.state.update(finished=True, exit_code=exit_code(run.state))
    run.save()
    if run.state["not_reached"]:
        run.say("not reached within the budget of {:.0f} s: {}".format(cfg.budget, ", ".join(run.state["not_reached"])))
    run.say("done: {} (exit {}); the page: docs/results/gpu/{}.md".format(cfg.out, run.state["exit_code"], page_name(run.state)))
    return run.state["exit_code"]


# ------------------------------------------------------------------------------ summary.md
def summary_markdown(state, parts):
    from bench import device_bench

    m = state.get("machine") or {}
    src = state.get("source") or {}
    cpu = state["device"] == "cpu"
    gpu_names = ", ".join(g["name"] for g in m.get("gpus", []))
    title = "GPU check, {} UTC: {}".format(state["started_utc"], "CPU stand-in" if cpu else gpu_names or "no GPU")
    lines = ["# " + title, ""]
    if cpu:
        lines += ["**No GPU was used**: `--device cpu` runs the GPU check's code on the CPU at tiny sizes, as "
                  "CI does; none of these numbers is a GPU result.", ""]
    gpus = "; ".join("{} ({} GiB, compute capability {}, {} multiprocessors)".format(
        g["name"], g["memory_gib"], g["capability"], g["multiprocessors"]) for g in m.get("gpus", [])) or "none"
    lines += ["- GPU: {}; driver {}".format(gpus, m.get("driver")),
              "- CPU: {}, {} GiB RAM".format(m.get("cpu"), m.get("ram_gib")),
              "- software: Python {}, torch {}, CUDA {}, cuDNN {}, fairseq {}, numpy {}".format(
                  m.get("python"), m.get("torch"), m.get("cuda"), m.get("cudnn"), m.get("fairseq"), m.get("numpy")),
              "- commit: {} ({}{}{})".format(src.get("commit"), src.get("from"),
                                           ", {} modified files".format(src["modified_files"]) if src.get("modified_files") else "",
                                           "" if src.get("same_tree_as_stamp", True) else
                                           "; **the tree differs from the stamp's**"),
              "- command: `{}` (budget {:.0f} s, sizes {})".format(state["command"], state["budget_s"], state["size"]),
              "", "| part | status | seconds | note |", "|---|---|---|---|"]
    for part, p in state["parts"].items():
        lines.append("| {} | {} | {} | {} |".format(part, p["status"], p.get("seconds", ""), p.get("note", "")))
    if state["not_reached"]:
        lines += ["", "**Not reached** within the budget: " + ", ".join(state["not_reached"])]
    if state.get("error"):
        lines += ["", "**Set-up failed**: " + state["error"]]
    if "tests" in parts:
        lines += [""] + tests_markdown(parts["tests"])
    if "precision" in parts:
        lines += [""] + precision_markdown(parts["precision"])
    if "distributed" in parts:
        lines += [""] + distributed_markdown(parts["distributed"])
    if "bench" in parts:
        lines += ["", "## bench{}".format("" if parts["bench"].get("complete") else " (not complete)"), "",
                  device_bench.tables_markdown(parts["bench"])]
    return "\n".join(lines) + "\n"


def tests_markdown(t):
    c = t.get("counts", {})
    lines = ["## tests{}".format("" if t.get("complete") else " (stopped)"), "",
             "`{}`: {} passed, {} failed, {} skipped ({} s)".format(
                 t.get("command", "").replace(sys.executable, "python"), c.get("passed", 0), c.get("failed", 0),
                 c.get("skipped", 0), t.get("seconds"))]
    for nodeid, outcome in sorted(t.get("notable", {}).items()):
        lines.append("- {}: {}".format(nodeid, outcome))
    for f in t.get("failed", []):
        lines.append("- **failed** {}: `{}`".format(f["nodeid"], f["message"].replace("\n", " ")[:300]))
    for s in t.get("skipped", []):
        lines.append("- skipped {} (e.g. {}): {}".format(s["count"], s["example"], s["reason"]))
    return lines


def precision_markdown(p):
    tol = p.get("tolerance", {})
    lines = ["## precision{}".format("" if p.get("complete") else " (not complete)"), "",
             "{} updates, Adam lr {}, dropout 0, the same batches and initial weights; loss in bits per target "
             "token. Tolerances (first update, any update): {}".format(
                 p.get("updates"), p.get("lr"), "; ".join("{} {} bits, {:.0%}".format(k, v[0], v[1]) for k, v in tol.items())),
             "", "| model | precision | first-update loss fp32 / low | max relative difference (update) | "
                 "last loss fp32 / low | valid loss fp32 / low | skipped updates | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for name, m in p.get("models", {}).items():
        ref = m["runs"].get("fp32", {})
        for precision, c in m["vs_fp32"].items():
            low = m["runs"].get(precision, {})
            if "losses" not in low or "losses" not in ref:
                lines.append("| {} | {} | | | | | | **failed**: {} |".format(
                    name, precision, low.get("error") or ref.get("error") or "; ".join(c.get("problems", []))))
                continue

            def pair(key, index):
                a, b = ref.get(key), low.get(key)
                if index is not None:
                    a, b = (a[index] if a else None), (b[index] if b else None)
                return "{} / {}".format(*("{:.4f}".format(x) if x is not None else "n/a" for x in (a, b)))

            lines.append("| {} | {} | {} | {} | {} | {} | {} | {} |".format(
                name, precision, pair("losses", 0),
                "{:.3%} ({})".format(c["max_rel_diff"], c["at_update"]) if c.get("max_rel_diff") is not None else "n/a",
                pair("losses", -1), pair("valid_loss", None), len(low.get("skipped_updates", [])),
                "passed" if c["passed"] else "**failed**: " + "; ".join(c["problems"])))
    return lines


def distributed_markdown(d):
    tol = d.get("tolerance", {})
    lines = ["## distributed{}".format("" if d.get("complete") else " (not complete)"), "",
             "{}; {} updates, batch {} per rank, Adam lr {}. Tolerance: parameters atol {} (rtol {}), logged "
             "losses {}".format(d.get("how"), d.get("updates"), d.get("batch_per_rank"), d.get("lr"),
                               tol.get("param_atol"), tol.get("param_rtol"), tol.get("logged_loss_atol")),
             "", "| model | ranks bit-identical | max parameter difference vs --update-freq 2 | max logged loss "
                 "difference | ranks on | verdict |", "|---|---|---|---|---|---|"]
    for name, r in d.get("models", {}).items():
        devices = ", ".join("rank {} {}".format(x["rank"], x["gpu"]) for x in r.get("rank_devices", [])) or d.get("device", "")
        lines.append("| {} | {} | {} | {} | {} | {} |".format(
            name, r.get("ranks_bit_identical", "n/a"),
            "{:.2e} ({})".format(r["max_abs_param_diff"], r["worst_param"]) if r.get("max_abs_param_diff") is not None else "n/a",
            r.get("max_logged_loss_diff", "n/a"), devices,
            "passed" if r.get("passed") else "**failed**: " + "; ".join(r.get("problems", []))))
    return lines


if __name__ == "__main__":
    sys.exit(main())
