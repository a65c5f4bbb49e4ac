"""Run fairseq's CLIs (and the plugin's hub) several times in one process (for the tests).

    python tests/fairseq_runs.py JOBS.json [MARKER]

JOBS.json: a list of jobs, each ``{"cli": "generate" | "interactive" | "train" | "validate",
"args": [...]}`` (what the console script ``fairseq-<cli>`` does: ``fairseq_cli.<cli>.cli_main``
with ``sys.argv`` set) or ``{"cli": "hub", "folder": F, "checkpoint_file": NAME, "data": D}``
(``fairseq_wean.hub.from_pretrained``), with optional keys ``name``, ``stdin`` (the text
fairseq-interactive reads) and ``out`` (a file for the job's stdout; a job that fails also writes
its traceback to ``out + ".error"``). The jobs run in order whatever each one's outcome; the last
line printed is a JSON list with, per job, its ``name``, its ``outcome`` ("ran to the end" or
``"ExceptionType: message"``, ``SystemExit`` included) and ``code_ran``: whether the file MARKER
exists after it (a crafted checkpoint's payload creates it; it is removed after each job).

Each job starts as a console script does: without ``save_checkpoint.best`` (fairseq keeps the
best validation score on that function). One process for many runs saves importing torch and
fairseq again for each (about 4 s of CPU each on the test machine), which is most of what a run
on tiny data costs.
"""
import contextlib
import io
import json
import logging
import os
import sys
import traceback


def _cli_main(job):
    if job["cli"] == "hub":
        from fairseq_wean.hub import from_pretrained

        return lambda: from_pretrained(job["folder"], checkpoint_file=job["checkpoint_file"],
                                       data_name_or_path=job["data"])
    # Imported here, after logging is set up: fairseq_cli.interactive configures logging to
    # stdout when it is imported, which would mix log lines into the hypotheses.
    from fairseq_cli import generate, interactive, train, validate

    sys.argv = ["fairseq-" + job["cli"]] + [str(a) for a in job["args"]]
    return {"generate": generate, "interactive": interactive, "train": train, "validate": validate}[job["cli"]].cli_main


def run(job, marker=None):
    """Run one job; its result (see the module's docstring)."""
    from fairseq import checkpoint_utils

    if hasattr(checkpoint_utils.save_checkpoint, "best"):  # a console script starts without it
        del checkpoint_utils.save_checkpoint.best
    out = io.StringIO()
    error = None
    if "stdin" in job:
        sys.stdin = io.StringIO(job["stdin"])
    try:
        main = _cli_main(job)
        with contextlib.redirect_stdout(out):
            main()
        outcome = "ran to the end"
    except BaseException as exc:  # SystemExit, KeyboardInterrupt from a payload: recorded, the next job runs
        outcome = "{}: {}".format(type(exc).__name__, exc)
        if not (isinstance(exc, SystemExit) and exc.code in (None, 0)):
            error = traceback.format_exc()
        else:
            outcome = "ran to the end"
    if job.get("out"):
        with open(job["out"], "w", encoding="utf-8") as f:
            f.write(out.getvalue())
        if error is not None:
            with open(job["out"] + ".error", "w", encoding="utf-8") as f:
                f.write(error)
    code_ran = bool(marker) and os.path.exists(marker)
    if code_ran:
        os.remove(marker)
    return {"name": job.get("name", job["cli"]), "outcome": outcome, "code_ran": code_ran}


def main(argv):
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with open(argv[0], encoding="utf-8") as f:
        jobs = json.load(f)
    marker = argv[1] if len(argv) > 1 else None
    results = [run(job, marker) for job in jobs]
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
