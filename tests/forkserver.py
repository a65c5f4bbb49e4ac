"""Run the project's command-line tools as forked children of one process that has imported torch
and fairseq already, so that a test that runs many tools (one per planted file, one per option) pays
the ~4 s of those imports once instead of once per run.

Each run is still its own process: forked from a parent that has only imported (no model built, no
thread pool started: ``OMP_NUM_THREADS=1``), in a new session, with its own working directory,
environment, standard input (empty, or the text given), output and error streams, exit status, ``atexit`` handlers and
exception hook (the plugin's one-line errors print as they do in a fresh process), and root logger
(:func:`fresh_root_logger`). What differs from ``subprocess.run([tool, ...])``: the modules named in
``PRELOADED`` are already imported (as they would be after the tool's own import), a warning the
parent's imports gave is not given again, variables a fresh interpreter reads at its start
(PYTHONPATH, PYTHONHASHSEED) keep the parent's values, and a tool of the project's own that imports
fairseq keeps an unconfigured root logger (only fairseq's commands get fairseq's).

Used through :class:`Tools` (``tests/conftest.py``: ``cli`` and the ``tools`` fixture). The protocol, one JSON
line each way: ``{"argv", "cwd", "env", "timeout", "input"}`` -> ``{"rc", "out", "err", "timed_out"}``; argv
is what ``subprocess`` would get: a console script of this environment's bin, or ``python -m
MODULE ...`` or ``python SCRIPT.py ...``.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

PRELOADED = ("torch", "fairseq", "fairseq.options", "fairseq.checkpoint_utils", "fairseq.sequence_generator")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def console_scripts():
    """{console script name: (module, function)} from setup.py and fairseq's own."""
    scripts = {}
    with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
        for name, module, func in re.findall(r'"([\w-]+) = ([\w.]+):(\w+)"', f.read()):
            scripts[name] = (module, func)
    for name in ("train", "generate", "interactive", "validate", "preprocess", "eval_lm", "score"):
        scripts["fairseq-" + name.replace("_", "-")] = ("fairseq_cli." + name, "cli_main")
    return scripts


def target(argv, scripts):
    """(kind, what, sys.argv) for argv: ("function", (module, func)), ("module", name) or ("path", file)."""
    exe, args = argv[0], list(argv[1:])
    name = os.path.basename(exe)
    if name in scripts:
        return "function", scripts[name], [exe] + args
    if args[:1] == ["-m"]:
        return "module", args[1], [args[1]] + args[2:]
    return "path", args[0], args


AFTER_FAIRSEQ = []  # the root logger's (handlers, level) once fairseq is imported: importing it configures them


def fresh_root_logger(module):
    """The root logger as the tool's fresh interpreter would have it when its code runs: unconfigured,
    then configured by ``module``'s own import (fairseq_cli.train configures it before it imports
    fairseq), else, for fairseq's commands, by the import of fairseq (fairseq-generate's own
    basicConfig then does nothing, and its log goes to standard error)."""
    import importlib
    import logging

    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    if module is not None and module.startswith("fairseq_cli."):
        importlib.import_module(module)
        if not root.handlers:
            handlers, level = AFTER_FAIRSEQ[0]
            for handler in handlers:
                root.addHandler(handler)
            root.setLevel(level)


def child(request, scripts, out_path, err_path):
    """In the forked child: become the tool's process, run it, exit with its status (never returns)."""
    code = 1
    try:
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        stdin = os.devnull if request.get("input") is None else out_path + ".in"
        for fd, path, flags in ((0, stdin, os.O_RDONLY), (1, out_path, os.O_WRONLY | os.O_TRUNC),
                                (2, err_path, os.O_WRONLY | os.O_TRUNC)):
            new = os.open(path, flags)
            os.dup2(new, fd)
            os.close(new)
        kind, what, sys.argv = target(request["argv"], scripts)
        fresh_root_logger(what[0] if kind == "function" else None)
        import runpy

        try:
            if kind == "function":
                import importlib

                sys.path[0] = os.path.dirname(os.path.abspath(request["argv"][0]))  # a console script's
                code = getattr(importlib.import_module(what[0]), what[1])()
            elif kind == "module":
                sys.path[0] = os.getcwd()
                runpy.run_module(what, run_name="__main__", alter_sys=True)
                code = 0
            else:
                sys.path[0] = os.path.dirname(os.path.abspath(what))
                runpy.run_path(what, run_name="__main__")
                code = 0
        except SystemExit as exc:
            code = exc.code
        except BaseException:  # what the interpreter does with an uncaught exception
            sys.excepthook(*sys.exc_info())
            code = 1
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        import atexit

        atexit._run_exitfuncs()
    except BaseException:  # the set-up itself failed
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def serve():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for module in PRELOADED:
        __import__(module)
    import logging

    AFTER_FAIRSEQ.append((list(logging.getLogger().handlers), logging.getLogger().level))
    scripts = console_scripts()
    sys.path[0] = REPO  # not tests/: each child sets the first entry its kind of start would have
    print(json.dumps({"ready": True}), flush=True)
    tmp = tempfile.mkdtemp(prefix="forkserver-")  # no TemporaryDirectory: its atexit finalizer would run in a child
    try:
        for line in sys.stdin:
            answer(json.loads(line), scripts, os.path.join(tmp, "out"), os.path.join(tmp, "err"))
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def answer(request, scripts, out_path, err_path):
    """Fork a child for ``request``, wait for it (its session killed at the time-out), print the reply."""
    open(out_path, "w").close()
    open(err_path, "w").close()
    if request.get("input") is not None:  # the child's standard input
        with open(out_path + ".in", "w", encoding="utf-8") as f:
            f.write(request["input"])
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        child(request, scripts, out_path, err_path)
    deadline = time.monotonic() + request["timeout"]
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            os.killpg(pid, signal.SIGKILL)
            _done, status = os.waitpid(pid, 0)
            break
        time.sleep(0.02)
    try:  # whatever is left of the child's session (a rank it started)
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    rc = os.waitstatus_to_exitcode(status)
    with open(out_path, encoding="utf-8", errors="replace") as f:
        out = f.read()
    with open(err_path, encoding="utf-8", errors="replace") as f:
        err = f.read()
    print(json.dumps({"rc": rc, "out": out, "err": err, "timed_out": timed_out}), flush=True)


class Tools:
    """A forkserver for a test module: ``run(argv, cwd, env, timeout)`` -> (rc, out, err, timed_out)."""

    def __init__(self, env=None):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=REPO,
                                     env=dict(env or os.environ, OMP_NUM_THREADS="1"))
        ready = self.proc.stdout.readline()
        assert json.loads(ready) == {"ready": True}, ready

    def run(self, argv, cwd, env, timeout, input=None):
        request = {"argv": [str(a) for a in argv], "cwd": str(cwd), "env": dict(env), "timeout": timeout,
                   "input": input}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return reply["rc"], reply["out"], reply["err"], reply["timed_out"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


if __name__ == "__main__":
    serve()
