"""The documentation's relative links resolve (issue 39): every ``[text](path)`` (and image
``![alt](path)``) in README.md and docs/**/*.md (the results pages docs/results/*.md included, the
published run folders under docs/results/TASK/ not) names a file or folder that exists, relative to the page that holds it. Links to the web
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
    results = os.path.join(REPO, "docs", "results")
    # the results pages docs/results/*.md are pages; the published run folders under them are not
    return sorted(p for p in found if not p.startswith(results + os.sep) or os.path.dirname(p) == results)


def is_results_page(page):
    """docs/RESULTS.md and docs/results/*.md: records of runs, whose commands are kept as they ran."""
    return page == os.path.join(REPO, "docs", "RESULTS.md") or \
        os.path.dirname(page) == os.path.join(REPO, "docs", "results")


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
    assert {"README.md", os.path.join("docs", "RESULTS.md"), os.path.join("docs", "models", "core_copy.md"),
            os.path.join("docs", "results", "translation.md")} <= names
    # no published run folder (docs/results/TASK/...)
    assert not any(n.count(os.sep) > 2 and n.startswith(os.path.join("docs", "results") + os.sep) for n in names)


@pytest.mark.parametrize("page", pages(), ids=lambda p: os.path.relpath(p, REPO))
def test_every_relative_link_resolves(page):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    broken = [target for target in relative_links(text)
              if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), target)))]
    assert not broken, "{} links to files that do not exist: {}".format(os.path.relpath(page, REPO), broken)


# ------------------------------------------------------------------ commands shown in the docs
# The tools whose commands the docs show; a fairseq CLI's options depend on --arch, --task, ... (its
# --help lists them all: compat fix 14), so those selectors are passed along with --help.
TOOLS = ("fairseq-train", "fairseq-generate", "fairseq-interactive", "fairseq-preprocess", "fairseq-wean-score",
         "fairseq-wean-report", "fairseq-wean-align-table", "fairseq-wean-compare", "fairseq-wean-train-cpu-dist")
SELECTORS = ("--user-dir", "--arch", "-a", "--task", "--criterion", "--optimizer", "--lr-scheduler", "--bpe",
             "--tokenizer", "--scoring")


def shown_commands(text):
    """[(tool, [arguments])] of every line of a ```bash block that runs one of TOOLS (continued
    lines joined; pipes, ``&&`` and ``;`` split; redirections and comments dropped)."""
    import shlex

    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("#"):
                continue
            for part in re.split(r"\|\||&&|\||;", line):
                try:
                    words = shlex.split(part)
                except ValueError:
                    continue
                words = [w for w in words if not re.match(r"^\d*[<>]", w)]
                for i, w in enumerate(words):
                    if w in TOOLS or re.match(r".*/bin/({})$".format("|".join(TOOLS)), w):
                        out.append((os.path.basename(w), words[i + 1:]))
                        break
    return out


def test_the_command_finder_sees_the_tools():
    text = ("```bash\nfairseq-train data --arch lstm \\\n    --lr 0.1 # a comment\n"
            "fairseq-generate d --beam 5 | grep ^H > out 2> err\n# fairseq-train --nothing\n```\n")
    assert shown_commands(text) == [("fairseq-train", ["data", "--arch", "lstm", "--lr", "0.1"]),
                                    ("fairseq-generate", ["d", "--beam", "5"])]


def flags_of(args):
    return sorted({a.split("=", 1)[0] for a in args if re.match(r"^--[a-z0-9][a-z0-9-]*(=|$)", a)})


def tool_help(tool, selectors):
    """What ``tool SELECTORS --help`` prints, computed in this process (one import of fairseq for
    every command): fairseq's parsers through ``options.parse_args_and_arch`` (which adds the options
    of --arch, --task, ...), the plugin's tools through their ``get_parser``."""
    import contextlib
    import io

    from fairseq import options

    fairseq_parsers = {"fairseq-train": options.get_training_parser, "fairseq-generate": options.get_generation_parser,
                       "fairseq-interactive": options.get_interactive_generation_parser}
    if tool == "fairseq-preprocess":
        return options.get_preprocessing_parser().format_help()
    if tool in fairseq_parsers:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            options.parse_args_and_arch(fairseq_parsers[tool](), input_args=list(selectors) + ["--help"])
        return out.getvalue()
    from fairseq_wean.cli import align_table, report, score, train_cpu_dist
    from fairseq_wean.compare import cli as compare_cli

    return {"fairseq-wean-score": score, "fairseq-wean-report": report, "fairseq-wean-align-table": align_table,
            "fairseq-wean-compare": compare_cli, "fairseq-wean-train-cpu-dist": train_cpu_dist}[tool].get_parser() \
        .format_help()


def test_every_flag_of_every_command_shown_is_an_option_of_its_tool():
    """Each --flag of a command in README.md or docs/ (not the results pages' records) is listed by its
    tool's --help, given the command's own --arch, --task, ... (a renamed or removed option, or a
    typo, fails here). The launcher passes the options it does not know to fairseq-train."""
    helps, problems = {}, []
    for page in pages():
        if is_results_page(page):
            continue
        with open(page, encoding="utf-8") as f:
            commands = shown_commands(f.read())
        for tool, args in commands:
            selectors = []
            for i, a in enumerate(args[:-1]):
                if a in SELECTORS and not args[i + 1].startswith("-"):
                    value = args[i + 1]
                    if a == "--user-dir":
                        value = os.path.join(REPO, "fairseq_wean")  # $WEAN, fairseq_wean, ...
                    selectors += [a, value]
            launcher = tool == "fairseq-wean-train-cpu-dist"
            if (launcher or tool in ("fairseq-train", "fairseq-generate", "fairseq-interactive")) and \
                    "--user-dir" not in selectors:
                selectors += ["--user-dir", os.path.join(REPO, "fairseq_wean")]  # a line that elides it
            key = (tool, tuple(selectors))
            if key not in helps:
                text = tool_help(tool, selectors) + (tool_help("fairseq-train", selectors) if launcher else "")
                helps[key] = set(re.findall(r"(--[a-z0-9][a-z0-9-]*)", text))
            unknown = [f for f in flags_of(args) if f not in helps[key] and f != "--help"]
            if unknown:
                problems.append("{}: {} {}: {}".format(os.path.relpath(page, REPO), tool, " ".join(selectors),
                                                       ", ".join(unknown)))
    assert len(helps) >= 10
    assert not problems, "\n".join(problems)
