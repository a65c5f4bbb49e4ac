"""The documentation's relative links resolve (issue 39): every ``[text](path)`` (and image
``![alt](path)``) in README.md and docs/**/*.md, except the published runs under docs/results/,
names a file or folder that exists, relative to the page that holds it. Links to the web
(``http://``, ``https://``, ``mailto:``) and to a section of the same page (``#...``) are not
files; an ``#anchor`` after a path is dropped. Links inside code (fenced blocks, inline
``code``) are not links.
"""
import glob
import os
import re

import pytest

from conftest import REPO

LINK = re.compile(r"!?\[[^\]]*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def pages():
    found = [os.path.join(REPO, "README.md")]
    found += glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    results = os.path.join(REPO, "docs", "results") + os.sep
    return sorted(p for p in found if not p.startswith(results))


def relative_links(text):
    """The link targets of a markdown text that name a file, without their ``#anchor``."""
    text = INLINE_CODE.sub("", FENCE.sub("", text))
    targets = []
    for angled, plain in LINK.findall(text):
        target = angled or plain
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue  # http:, https:, mailto: ...; a section of the same page
        targets.append(target.split("#", 1)[0])
    return targets


def test_the_link_finder_sees_what_a_reader_sees():
    text = ("See [a](docs/a.md#part), ![fig](figures/x.png \"title\"), [web](https://x.org/y.md),\n"
            "[here](#anchor), `[not](code.md)` and\n```bash\necho [no](block.md)\n```\n[b](<b c.md>)")
    assert relative_links(text) == ["docs/a.md", "figures/x.png", "b c.md"]


def test_the_pages_are_found():
    names = {os.path.relpath(p, REPO) for p in pages()}
    assert {"README.md", os.path.join("docs", "RESULTS.md"), os.path.join("docs", "models", "core_copy.md")} <= names
    assert not any(n.startswith(os.path.join("docs", "results") + os.sep) for n in names)


@pytest.mark.parametrize("page", pages(), ids=lambda p: os.path.relpath(p, REPO))
def test_every_relative_link_resolves(page):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    broken = [target for target in relative_links(text)
              if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), target)))]
    assert not broken, "{} links to files that do not exist: {}".format(os.path.relpath(page, REPO), broken)
