"""pytest plugin of ``scripts/gpu_check.sh`` (``-p bench.pytest_progress``): one JSON line per test
outcome into the file named by ``$GPU_CHECK_PYTEST_LOG``, written as each test finishes, so that
a run stopped at its time budget still says which tests it reached.

Written by the controlling process only (under pytest-xdist the workers' reports reach it too).
"""
import json
import os

_CONFIG = {}


def pytest_configure(config):
    _CONFIG["worker"] = hasattr(config, "workerinput")


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
    path = os.environ.get("GPU_CHECK_PYTEST_LOG")
    if not path or _CONFIG.get("worker"):
        return
    # the call's outcome; a setup's when it skipped or failed (the test never ran); a failed teardown
    if report.when == "call" or (report.when == "setup" and not report.passed) or (report.when == "teardown" and report.failed):
        with open(path, "a") as f:
            f.write(json.dumps(_record(report)) + "\n")
