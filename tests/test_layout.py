"""The layout's limit: no module of the package or the recipes over 650 lines (split by idea, as
compat.py's fixes and the comparison runner's log reading were, rather than trimmed)."""
import os

from conftest import REPO

LIMIT = 650


def test_no_module_is_over_the_layouts_limit():
    over = []
    for top in ("fairseq_wean", "preprocess"):
        for folder, _, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as f:
                        n = sum(1 for _ in f)
                    if n > LIMIT:
                        over.append("{} ({} lines)".format(os.path.relpath(path, REPO), n))
    assert not over, "over {} lines: {}".format(LIMIT, ", ".join(over))
