"""The rules every documentation page keeps, checked by class over README.md and every markdown page
under docs/ (the results pages included, the published run folders under docs/results/TASK/ not):

* docs/RESULTS.md, the answer page, is at most 200 lines;
* no page cites the project's tracker ("issue 42", "issues 5 and 42", "issue #7"): readers cannot
  see it;
* no two headings of a page have the same anchor;
* every relative link names a file or folder that exists, and every ``#anchor`` (on the same page or
  after a path to a markdown page) is the anchor of a heading there, by GitHub's rule (lowercased,
  characters other than letters, digits, spaces, ``-`` and ``_`` dropped, spaces as ``-``, ``-1``,
  ``-2`` ... for a repeated heading);
* line length: outside fenced code blocks and the blocks the tools write between
  ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``, no line of prose is over 400 characters on any
  page, and on the results pages (docs/RESULTS.md, docs/results/*.md) no table row either (other
  pages keep generated tables, e.g. every option of a model, whose rows may be longer);
* on the results pages, every table with a number in it (a data cell that starts with a number:
  a score, a count, a ratio, a time) sits in a section that names where it came from: a date
  (YYYY-MM-DD), a command (inline code that starts with a command, or a fenced block) and a
  machine (Intel, Xeon, AMD, EPYC, NVIDIA, H100, H200). The section is the text from the table's
  heading to the next heading, and, for a table inside a tool-written block, the whole block (the
  tool writes its command, date and machine once, at its top). A table whose first header cell is
  ``paper`` quotes published papers, not runs, and needs none.

The checks are also run on small bad pages (a broken anchor, a repeated heading, ...) to show that
each can fail.
"""
import glob
import os
import re

import pytest

from conftest import REPO

RESULTS_PAGE = os.path.join(REPO, "docs", "RESULTS.md")
RESULTS_DIR = os.path.join(REPO, "docs", "results")
MAX_RESULTS_LINES = 200
MAX_LINE = 400

FENCE_OPEN = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
MARK_BEGIN = re.compile(r"^<!-- ([\w.-]+):begin -->\s*$")
MARK_END = re.compile(r"^<!-- ([\w.-]+):end -->\s*$")
TRACKER = re.compile(r"\bissues?\s+#?\d+", re.I)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
COMMAND = re.compile(r"`(?:python3?|bash|fairseq-[\w-]+|\.venv/\S+|PYTHONPATH=\S+|T=\S+|cd|git|/usr/bin/time)\b[^`]*`")
MACHINE = re.compile(r"\b(Intel|Xeon|AMD|EPYC|NVIDIA|H100|H200)\b")
NUMBER_CELL = re.compile(r"^[<>~+-]?\s*\d")


def pages():
    found = [os.path.join(REPO, "README.md")]
    found += glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    # the published run folders (docs/results/TASK/...) are outputs, not pages
    return sorted(p for p in found if not p.startswith(RESULTS_DIR + os.sep) or os.path.dirname(p) == RESULTS_DIR)


def results_pages():
    return [p for p in pages() if p == RESULTS_PAGE or os.path.dirname(p) == RESULTS_DIR]


def name(page):
    return os.path.relpath(page, REPO)


def read(page):
    with open(page, encoding="utf-8") as f:
        return f.read()


def classify(text):
    """[(line, kind, marked)] for every line: kind 'code' inside a fenced block (its fences too),
    'heading', 'table' (a row starting with ``|``) or 'text'; ``marked``: the name of the
    tool-written block the line is in (its marker lines included), else None."""
    out, fence, marked = [], None, None
    for line in text.split("\n"):
        begin, end = MARK_BEGIN.match(line), MARK_END.match(line)
        if begin and fence is None:
            marked = begin.group(1)
        if fence is not None:
            kind = "code"
            if line.strip().startswith(fence):
                fence = None
        elif FENCE_OPEN.match(line):
            kind, fence = "code", FENCE_OPEN.match(line).group(1)
        elif HEADING.match(line):
            kind = "heading"
        elif line.lstrip().startswith("|"):
            kind = "table"
        else:
            kind = "text"
        out.append((line, kind, marked))
        if end and fence is None and marked == end.group(1):
            marked = None
    return out


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(text):
    return [HEADING.match(line).group(2) for line, kind, _ in classify(text) if kind == "heading"]


def anchors(text):
    """Every anchor of the page's headings, with GitHub's -1, -2 ... for repeats."""
    seen, out = {}, set()
    for h in headings(text):
        s = slug(h)
        out.add(s if s not in seen else "{}-{}".format(s, seen[s]))
        seen[s] = seen.get(s, 0) + 1
    return out


def links(text):
    """The targets of the page's links outside code (fenced blocks, inline code)."""
    prose = "\n".join(INLINE_CODE.sub("", line) for line, kind, _ in classify(text) if kind != "code")
    return [angled or plain for angled, plain in LINK.findall(prose)]


# ------------------------------------------------------------------ the checks, each on one page's text
def tracker_citations(text):
    return TRACKER.findall(text)


def repeated_headings(text):
    slugs = [slug(h) for h in headings(text)]
    return sorted({h for h in slugs if slugs.count(h) > 1})


def broken_links(page, text):
    broken = []
    for target in links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            broken.append(target)
        elif anchor and dest.endswith(".md") and anchor not in anchors(text if dest == page else read(dest)):
            broken.append(target)
    return broken


def long_lines(text, tables_too):
    return [line[:60] + "..." for line, kind, marked in classify(text)
            if marked is None and len(line) > MAX_LINE and (kind in ("text", "heading") or kind == "table" and tables_too)]


def tables(text):
    """[(table lines, section text)]: each markdown table and the text that may name its source."""
    rows = classify(text)
    blocks = {}  # marked block name -> its text
    for line, _, marked in rows:
        if marked:
            blocks.setdefault(marked, []).append(line)
    sections, current = [], []
    for line, kind, marked in rows:
        if kind == "heading" and current:
            sections.append(current)
            current = []
        current.append((line, kind, marked))
    sections.append(current)
    out = []
    for section in sections:
        context = "\n".join(line for line, _, _ in section)
        has_fence = any(kind == "code" for _, kind, _ in section)
        table, marked_in = [], set()
        for line, kind, marked in section + [("", "text", None)]:
            if kind == "table":
                table.append(line)
                if marked:
                    marked_in.add(marked)
            elif table:
                extra = "\n".join("\n".join(blocks[m]) for m in sorted(marked_in))
                out.append((table, context + "\n" + extra, has_fence))
                table, marked_in = [], set()
    return out


def cells(row):
    return [c.strip().replace("**", "").strip() for c in row.strip().strip("|").split("|")]


def unsourced_tables(text):
    problems = []
    for table, context, has_fence in tables(text):
        if len(table) < 3 or not re.match(r"^\|?\s*:?-{3,}", table[1].strip()):
            continue  # not a table: a line that starts with |
        if cells(table[0])[0].lower() == "paper":
            continue  # published papers' numbers
        if not any(NUMBER_CELL.match(c) for row in table[2:] for c in cells(row)):
            continue
        missing = [what for what, ok in (("date", DATE.search(context)),
                                         ("command", COMMAND.search(context) or has_fence),
                                         ("machine", MACHINE.search(context))) if not ok]
        if missing:
            problems.append("table '{}' lacks its {}".format(table[0][:70], " and ".join(missing)))
    return problems


# ------------------------------------------------------------------ the pages
def test_the_pages_are_found():
    names = {name(p) for p in pages()}
    assert {"README.md", os.path.join("docs", "RESULTS.md"), os.path.join("docs", "results", "translation.md"),
            os.path.join("docs", "results", "history.md"), os.path.join("docs", "models", "core_copy.md")} <= names
    assert set(map(name, results_pages())) >= {os.path.join("docs", "results", t + ".md") for t in (
        "simplification", "summarization", "translation", "performance", "history")}


def test_the_results_page_is_short():
    lines = read(RESULTS_PAGE).count("\n")
    assert lines <= MAX_RESULTS_LINES, "docs/RESULTS.md has {} lines (at most {})".format(lines, MAX_RESULTS_LINES)


@pytest.mark.parametrize("page", pages(), ids=name)
def test_page_cites_no_tracker_issue(page):
    found = tracker_citations(read(page))
    assert not found, "{} cites the tracker: {}".format(name(page), found)


@pytest.mark.parametrize("page", pages(), ids=name)
def test_page_has_no_repeated_heading(page):
    repeated = repeated_headings(read(page))
    assert not repeated, "{}: headings with the same anchor: {}".format(name(page), repeated)


@pytest.mark.parametrize("page", pages(), ids=name)
def test_every_link_and_anchor_resolves(page):
    broken = broken_links(page, read(page))
    assert not broken, "{}: links to no file or no heading: {}".format(name(page), broken)


@pytest.mark.parametrize("page", pages(), ids=name)
def test_no_line_over_400_characters(page):
    found = long_lines(read(page), tables_too=page in results_pages())
    assert not found, "{}: lines over {} characters: {}".format(name(page), MAX_LINE, found)


@pytest.mark.parametrize("page", results_pages(), ids=name)
def test_every_number_table_names_its_command_date_and_machine(page):
    problems = unsourced_tables(read(page))
    assert not problems, "{}:\n{}".format(name(page), "\n".join(problems))


# ------------------------------------------------------------------ each check can fail
def test_the_slugs_are_githubs():
    assert slug("10. `--no-repeat-ngram-size` on CPU") == "10---no-repeat-ngram-size-on-cpu"
    assert slug("Why `wean_lstm` on sentencepiece invents words") == "why-wean_lstm-on-sentencepiece-invents-words"
    assert slug("The papers' claims on [Multi30k](x.md)") == "the-papers-claims-on-multi30k"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n### b c") == {"a", "a-1", "b-c"}


def test_bad_pages_fail_each_check(tmp_path):
    other = tmp_path / "other.md"
    other.write_text("# Other\n\n## Part two\n")
    page = tmp_path / "page.md"
    text = ("# Page\n\n## Same\n\nSee issue 42 and [two](other.md#part-two), [gone](other.md#part-three),\n"
            "[here](#same), [nowhere](#elsewhere), [missing](missing.md).\n\n## Same\n\n" + "x" * 401 + "\n\n"
            "| system | BLEU |\n|---|---|\n| lstm | 39.73 |\n\n"
            "## Sourced\n\n`python -m bench.run`, 2026-11-27, AMD EPYC:\n\n| system | BLEU |\n|---|---|\n| lstm | 1.0 |\n\n"
            "## Papers\n\n| paper | BLEU |\n|---|---|\n| Wu et al. | 31.90 |\n\n"
            "<!-- bench:begin -->\n" + "y" * 500 + "\n<!-- bench:end -->\n```\n" + "z" * 500 + "\n```\n")
    page.write_text(text)
    assert tracker_citations(text) == ["issue 42"]
    assert repeated_headings(text) == ["same"]
    assert broken_links(str(page), text) == ["other.md#part-three", "#elsewhere", "missing.md"]
    assert long_lines(text, tables_too=False) == ["x" * 60 + "..."]
    assert unsourced_tables(text) == ["table '| system | BLEU |' lacks its date and command and machine"]
    assert len(tables(text)) == 3


# ------------------------------------------------------------------ the tools write where the blocks live
def test_the_benchmark_tools_write_into_the_performance_page_by_default():
    """bench.convergence and bench.profile rewrite their marked blocks in docs/results/performance.md,
    where those blocks are (bench.cpu_bf16 and bench.run write into the same page)."""
    from bench import convergence, profile

    page = read(os.path.join(RESULTS_DIR, "performance.md"))
    assert convergence.get_parser().get_default("out") == os.path.join(RESULTS_DIR, "performance.md")
    assert convergence.BEGIN in page and convergence.END in page
    assert profile.get_parser().get_default("out") == os.path.join(RESULTS_DIR, "performance.md")
    for vocab in (50000, 8000):
        assert all(marker.format(vocab) in page for marker in profile.MARKERS)


@pytest.fixture
def publish_results():
    """examples/publish_results.py as a module (examples/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "publish_results", os.path.join(REPO, "examples", "publish_results.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_publish_results_writes_the_tasks_page_with_a_heading_of_its_own(tmp_path, publish_results):
    """A comparison goes to docs/results/TASK.md; its heading names the budget (and BLEU's
    tokenization when it is not 13a), and the figure goes to docs/figures/, linked from the page."""
    compare = tmp_path / "work" / "compare-translation-converged"
    compare.mkdir(parents=True)
    (compare / "results.md").write_text(
        "# translation comparison\n\n| System | test2016 BLEU (tok none) |\n|---|---|\n| lstm | 39.73 |\n\n"
        "Converged budget: --max-tokens batches.\n\n![validation score per epoch](valid_curve.png)\n")
    (compare / "valid_curve.png").write_bytes(b"\x89PNG fake")
    page = tmp_path / "docs" / "results" / "translation.md"
    page.parent.mkdir(parents=True)
    page.write_text("# Translation\n\nnotes\n")
    publish_results.main([str(compare), "--results", str(page)])
    text = page.read_text()
    assert text.startswith("# Translation\n\nnotes\n")
    assert "\n### translation comparison, converged budget, BLEU `tokenize none`\n" in text
    assert "](../figures/translation-converged_valid_curve.png)" in text
    assert (tmp_path / "docs" / "figures" / "translation-converged_valid_curve.png").read_bytes() == b"\x89PNG fake"
    assert not broken_links(str(page), text)  # the figure's link resolves from the page
    assert publish_results.heading("simplification comparison", "| a |\n\nEpoch budget 2 for every system;") == \
        "simplification comparison, short budget, 2 epochs"
    assert publish_results.default_results_page(str(compare)) == os.path.join(RESULTS_DIR, "translation.md")
    with pytest.raises(SystemExit):
        publish_results.default_results_page(str(tmp_path / "compare-elsewhere"))
