"""No input exhausts memory or time: every metric of fairseq-wean-score, and the report, on
adversarial sizes (one line of 40,000 tokens, a word of 1,000,000 characters, thousands of
sentences) either finishes within a memory and CPU-time limit or refuses in one line naming the
limit (the metrics whose cost grows with the product of a sentence's and its reference's lengths,
``scoring.metrics.QUADRATIC_METRICS``). The limits are the process's own (RLIMIT_AS, RLIMIT_CPU):
nothing here depends on the machine's load."""
import os
import random
import resource
import subprocess

import pytest

from conftest import BIN, REPO
from fairseq_wean.scoring import metrics as M

MEMORY = 3 << 30  # bytes of address space per run
CPU_SECONDS = 120


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


@pytest.fixture(scope="module")
def adversarial(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adversarial")
    rng = random.Random(1)
    words = ["w{}".format(i) for i in range(300)]
    lines = [" ".join(rng.choice(words) for _ in range(40000)),  # 40,000 tokens: 1.6e9 LCS cells
             "a" * 1000000]  # one word of a million characters
    lines += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    paths = {}
    for name, shuffle in (("sys", 0), ("ref", 1), ("orig", 2)):
        rows = list(lines)
        random.Random(shuffle).shuffle(rows[2:])
        paths[name] = folder / (name + ".txt")
        paths[name].write_text("\n".join(rows) + "\n", encoding="utf-8")
    return paths


def run(command):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=REPO, preexec_fn=limited,
                          env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=10 * CPU_SECONDS)


@pytest.mark.parametrize("metric", M.METRICS)
def test_every_metric_is_bounded_or_refuses_in_one_line(adversarial, metric):
    from fairseq_wean.cli.options import READS_REFERENCES, READS_SOURCES  # an input no metric reads is refused

    proc = run([os.path.join(BIN, "fairseq-wean-score"), "--sys", adversarial["sys"]]
               + (["--refs", adversarial["ref"]] if metric in READS_REFERENCES else [])
               + (["--orig", adversarial["orig"]] if metric in READS_SOURCES else []) + ["--metrics", metric])
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-1500:]
    if metric in M.QUADRATIC_METRICS:
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 1 and "line 1 of the output has 40,000 tokens, more than the 4,000" in last, last
    elif metric == "fkgl":  # the million-character 'word' (tests/test_scoring_bounds.py: every bound, before work)
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 1 and "line 2 of the output has a 'word' of 1,000,000 characters" in last, last
    else:
        assert proc.returncode == 0, proc.stderr[-1500:]


@pytest.mark.parametrize("metrics", [None, "rougeL"], ids=["default-metrics", "rougeL"])
def test_the_report_is_bounded_or_refuses_in_one_line(adversarial, tmp_path, metrics):
    page = tmp_path / "page.html"
    proc = run([os.path.join(BIN, "fairseq-wean-report"), "--sys", adversarial["sys"], "--refs", adversarial["ref"],
                "--orig", adversarial["orig"], "--out", page] + (["--metrics", metrics] if metrics else []))
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-1500:]
    if metrics in M.QUADRATIC_METRICS:
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 1 and "more than the 4,000 this metric takes" in last, last
        assert not page.exists()
    else:
        assert proc.returncode == 0 and page.stat().st_size > 0, proc.stderr[-1500:]
