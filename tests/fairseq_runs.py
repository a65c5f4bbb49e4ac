"""Run fairseq-generate and fairseq-interactive several times in one process (for the tests).

    python tests/fairseq_runs.py JOBS.json

JOBS.json: a list of ``{"cli": "generate" | "interactive", "args": [...], "out": PATH}``. Each job
is what the console script does (``fairseq_cli.<cli>.cli_main`` with ``sys.argv`` set), its stdout
written to ``out``; a job that fails (an exception or a non-zero exit) writes its traceback to
``out + ".error"`` and the next job runs. One process for many runs saves importing torch and
fairseq again for each (about 4 s of CPU each on the test machine), which is most of what a run
on tiny data costs.
"""
import contextlib
import io
import json
import logging
import sys
import traceback


def run(job):
    # Imported here, after logging is set up: fairseq_cli.interactive configures logging to
    # stdout when it is imported, which would mix log lines into the hypotheses.
    from fairseq_cli import generate, interactive

    main = {"generate": generate.cli_main, "interactive": interactive.cli_main}[job["cli"]]
    out = io.StringIO()
    error = None
    sys.argv = ["fairseq-" + job["cli"]] + [str(a) for a in job["args"]]
    try:
        with contextlib.redirect_stdout(out):
            main()
    except SystemExit as e:
        if e.code not in (None, 0):
            error = "SystemExit({!r})\n{}".format(e.code, traceback.format_exc())
    except Exception:
        error = traceback.format_exc()
    with open(job["out"], "w", encoding="utf-8") as f:
        f.write(out.getvalue())
    if error is not None:
        with open(job["out"] + ".error", "w", encoding="utf-8") as f:
            f.write(error)


def main(argv):
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with open(argv[0], encoding="utf-8") as f:
        jobs = json.load(f)
    for job in jobs:
        run(job)


if __name__ == "__main__":
    main(sys.argv[1:])
