"""pytest plugin of ``scripts/gpu_check.sh`` (``-p bench.pytest_progress``): one JSON line per test
outcome into the file named by ``$GPU_CHECK_PYTEST_LOG``, written as each test finishes, so that
a run stopped at its time budget still says which tests it reached.

Written by the controlling process only (under pytest-xdist the workers' reports reach it too),
never through a symbolic link and never into a named pipe (``bench.gpu_check.open_file``): such a
log is refused in one line when pytest starts.
"""
import json
import os
import sys

from bench.gpu_check import Refused, open_file

_CONFIG = {}


def _log_path():
    path = os.environ.get("GPU_CHECK_PYTEST_LOG")
    return os.path.abspath(path) if path else None


def pytest_configure(config):
    import pytest

    _CONFIG["worker"] = hasattr(config, "workerinput")
    path = _log_path()
    if path and not _CONFIG["worker"]:
        try:
            open_file(path, "a", what="$GPU_CHECK_PYTEST_LOG").close()
        except Refused as exc:
            raise pytest.UsageError(str(exc)) from None


def _record(report):
    line = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "duration": round(report.duration, 3)}
    if report.skipped and isinstance(report.longrepr, tuple):
        line["reason"] = str(report.longrepr[2]).replace("Skipped: ", "", 1)
    elif report.failed:
        text = str(report.longreprtext or "")
        errors = [l for l in text.splitlines() if l.startswith("E ")]
        line["message"] = "\n".join((errors or text.splitlines())[-6:])[-1500:]
    return line


def pytest_runtest_logreport(report):
    path = _log_path()
    if not path or _CONFIG.get("worker") or _CONFIG.get("refused"):
        return
    # the call's outcome; a setup's when it skipped or failed (the test never ran); a failed teardown
    if report.when == "call" or (report.when == "setup" and not report.passed) or (report.when == "teardown" and report.failed):
        try:
            with open_file(path, "a", what="$GPU_CHECK_PYTEST_LOG") as f:
                f.write(json.dumps(_record(report)) + "\n")
        except Refused as exc:  # replaced by a link or a pipe while the tests ran: no more lines
            _CONFIG["refused"] = True
            sys.stderr.write("bench.pytest_progress: error: {}\n".format(exc))
