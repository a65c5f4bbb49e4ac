"""Published results others can rerun (issue 39): no ``scores.json`` under docs/results and no
page of the documentation names a path of the machine it was written on, and no published
command gives a flag twice. Paths in published commands are placeholders (``$OUT``, ``$DATA``,
``$WEAN``) or relative to the run's folder.
"""
import glob
import json
import os
import re
import shlex
from collections import Counter

import pytest

from conftest import REPO

# an absolute path under one of the folders a machine keeps checkouts, data or scratch in
MACHINE_PATH = re.compile(r"(?:^|[\s=:,'\"(`])/(?:work|root|tmp|home|opt|mnt|data|scratch|Users|var)/")


def published_scores():
    return sorted(glob.glob(os.path.join(REPO, "docs", "results", "**", "scores.json"), recursive=True))


def strings(value, where=""):
    """Every string in a JSON value, with where it sits (``.train_command``, ``.run.curve[0]``...)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, "{}.{}".format(where, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from strings(item, "{}[{}]".format(where, i))
    elif isinstance(value, str):
        yield where, value


def repeated_flags(command):
    counts = Counter(token.split("=", 1)[0] for token in shlex.split(command) if token.startswith("--"))
    return sorted(flag for flag, n in counts.items() if n > 1)


def problems(scores):
    found = []
    for where, text in strings(scores):
        if MACHINE_PATH.search(text):
            found.append("{}: machine path in {!r}".format(where, text[:80]))
        if where.endswith("_command") and repeated_flags(text):
            found.append("{}: flag given twice: {}".format(where, ", ".join(repeated_flags(text))))
    return found


def test_the_checks_see_a_machine_path_and_a_repeated_flag():
    bad = {
        "train_command": "fairseq-train /work/cmp/data --batch-size 64 --lr 1e-3 --batch-size 1",
        "run": {"log": "/root/runs/x/train.log"},
    }
    found = problems(bad)
    assert any(".train_command: machine path" in p for p in found)
    assert any("flag given twice: --batch-size" in p for p in found)
    assert any(".run.log: machine path" in p for p in found)
    good = {"train_command": "fairseq-train $OUT/data/word --save-dir $OUT/runs/lstm-word/checkpoints --lr 1e-3",
            "files": {"test": "test.hyp"}, "date": "2026-11-23 20:59 UTC"}
    assert problems(good) == []


def test_published_runs_are_found():
    assert len(published_scores()) >= 40  # every converged and short-budget system of the three tasks


@pytest.mark.parametrize("path", published_scores(), ids=lambda p: os.path.relpath(p, os.path.join(REPO, "docs", "results")))
def test_a_published_run_names_no_machine_path_and_no_flag_twice(path):
    with open(path, encoding="utf-8") as f:
        scores = json.load(f)
    assert problems(scores) == []
    assert scores.get("train_command", "").startswith("fairseq-train ")


def test_no_page_names_a_machine_path():
    pages = [os.path.join(REPO, "README.md")] + glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    pages += glob.glob(os.path.join(REPO, "examples", "**", "*.md"), recursive=True)
    found = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if MACHINE_PATH.search(line):
                    found.append("{}:{}: {}".format(os.path.relpath(page, REPO), number, line.strip()[:100]))
    assert found == []
