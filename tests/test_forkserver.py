"""tests/forkserver.py runs a tool as a forked child: the same exit status, output and error as a fresh
process (``subprocess``), for each way a tool is started (console script, ``python -m``, a script
path), for an error line, a traceback and a clean exit (a traceback's frames above the tool's are the
runner's); a hang is stopped at the time-out."""
import os
import subprocess
import sys

import pytest

from conftest import BIN, REPO


CASES = {
    "console script, error line": [os.path.join(BIN, "fairseq-wean-score"), "--sys", "missing.txt", "--refs", "x"],
    "console script, argparse": [os.path.join(BIN, "fairseq-wean-report"), "--no-such-option"],
    "console script, success": [os.path.join(BIN, "fairseq-wean-score"), "--help"],
    "fairseq's console script": [os.path.join(BIN, "fairseq-generate"), "no-such-data", "--path", "missing.pt",
                                 "--user-dir", os.path.join(REPO, "fairseq_wean")],
    "python -m": [sys.executable, "-m", "preprocess.split_characters", "--input", "missing.txt", "--output", "o"],
    "script path": [sys.executable, os.path.join(REPO, "examples", "publish_results.py"), "no-such-folder",
                    "--results", "page.md"],
    "a traceback": [sys.executable, "-c_is_not_supported_here"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_forked_run_is_what_a_fresh_process_gives(name, tools, tmp_path):
    argv = CASES[name]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=REPO)
    if name == "a traceback":
        script = tmp_path / "boom.py"
        script.write_text("import json\nprint('out line')\njson.loads('{bad')\n")
        argv = [sys.executable, str(script)]
    fresh = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                           stdin=subprocess.DEVNULL)
    rc, out, err, timed_out = tools.run(argv, tmp_path, env, 300)
    assert not timed_out
    assert (rc, out) == (fresh.returncode, fresh.stdout)
    if "Traceback" in fresh.stderr:  # the same exception; the frames above the tool's differ (the runner's)
        assert "Traceback" in err and err.strip().splitlines()[-1] == fresh.stderr.strip().splitlines()[-1]
    else:
        assert err == fresh.stderr


def test_a_hang_is_stopped_at_the_time_out(tools, tmp_path):
    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(600)\n")
    rc, _out, _err, timed_out = tools.run([sys.executable, str(script)], tmp_path, dict(os.environ), 2)
    assert timed_out and rc == -9
