"""One file named twice in a list of inputs (a reference counted twice, a system compared with itself) is
refused by one rule, :func:`fairseq_wean.scoring.inputs.check_distinct`, in every list that takes files:
fairseq-wean-score --refs, fairseq-wean-report --sys and --refs, fairseq-train's --eval-refs; in every form of
one file (the same path, another spelling of it, a symbolic link, a hard link, a link to its folder), in one
stat a path (600 references are checked in milliseconds, where comparing every pair took 12 s). Among references
(inputs.CONTENT_DISTINCT) two byte-identical copies are refused too (inputs.check_distinct_content: files of one size
hashed, streamed), in every entry point that takes references; copies of one output as two systems, or a system
that is its sources, are scored."""
import os
import time

import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import inputs

LINES = ["the cat sat on the mat", "a dog ran after it", "the bird sang"]


@pytest.fixture
def texts(tmp_path):
    """sys.txt, ref.txt, other.txt (ref.txt's content, another file) and every other name of ref.txt."""
    d = tmp_path / "data"
    d.mkdir()
    for name in ("sys.txt", "ref.txt", "other.txt", "gold.txt"):
        (d / name).write_text("".join(line + "\n" for line in LINES))
    os.symlink(d / "ref.txt", d / "link.txt")
    os.link(d / "ref.txt", d / "hard.txt")
    os.symlink(d, tmp_path / "folder-link")
    return d


# form -> the second name of data/ref.txt
FORMS = {"the same path": lambda d: str(d / "ref.txt"), "another spelling": lambda d: str(d / "." / "ref.txt"),
         "a symbolic link": lambda d: str(d / "link.txt"), "a hard link": lambda d: str(d / "hard.txt"),
         "a link to its folder": lambda d: str(d.parent / "folder-link" / "ref.txt")}
ENTRIES = ("score --refs", "report --refs", "report --sys", "fairseq-train --eval-refs")
# every entry point that takes references (compare: fairseq-wean-compare's scoring of a recipe's test files)
REFERENCE_ENTRIES = ("score --refs", "report --refs", "fairseq-train --eval-refs", "compare --refs")


def run_entry(entry, d, first, second, tmp_path, capsys):
    """(exit status or None, the one line) of ``entry`` given ``first`` and ``second`` in its list."""
    out = tmp_path / "page.html"
    if entry in ("fairseq-train --eval-refs", "compare --refs"):
        try:
            if entry == "compare --refs":
                from fairseq_wean.compare import report as compare_report
                compare_report.score(str(d / "sys.txt"), {"orig": "sys.txt", "refs": [first, second],
                                                          "metrics": "bleu"}, str(d))
            else:
                from fairseq_wean.tasks.validation_files import check_eval_files
                check_eval_files("{},{}".format(first, second), None)
        except FairseqWeanError as e:
            return 1, str(e)
        return None, ""
    if entry == "score --refs":
        from fairseq_wean.cli.score import cli_main
        argv = ["--sys", str(d / "sys.txt"), "--refs", first, second, "--metrics", "bleu"]
    elif entry == "report --refs":
        from fairseq_wean.cli.report import cli_main
        argv = ["--sys", str(d / "sys.txt"), "--orig", str(d / "sys.txt"), "--refs", first, second, "--out", str(out)]
    else:
        from fairseq_wean.cli.report import cli_main
        argv = ["--sys", first, second, "--names", "a", "b", "--orig", str(d / "sys.txt"), "--refs",
                str(d / "gold.txt"), "--out", str(out)]
    return _refused(cli_main, argv, out, capsys)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_one_file_named_twice_is_refused_in_every_list(texts, tmp_path, capsys, entry, form):
    first, second = str(texts / "ref.txt"), FORMS[form](texts)
    code, line = run_entry(entry, texts, first, second, tmp_path, capsys)
    option = entry.split()[-1]
    twice = "{} twice".format(first) if first == second else "one file twice ({} and {})".format(first, second)
    assert (code, line) == (1, "{} names {}: give each file once".format(option, twice))


@pytest.mark.parametrize("entry", REFERENCE_ENTRIES)
def test_two_copies_among_the_references_are_refused_in_every_entry_point(texts, tmp_path, capsys, entry):
    """A reference given twice as two copies (byte-identical files) counted as two references: refused, naming
    both, before anything is scored or written; a reference of other bytes (one line changed) is another.
    (gold.txt: no other name, which compare would refuse in a folder)"""
    first, second = str(texts / "gold.txt"), str(texts / "other.txt")
    code, line = run_entry(entry, texts, first, second, tmp_path, capsys)
    assert (code, line) == (1, "--{} names two copies of one file ({} and {} hold the same bytes): a reference given "
                               "twice is counted twice; give each reference once".format(
                                   entry.split("--")[-1], first, second))
    (texts / "other.txt").write_text("".join(line + "\n" for line in LINES[:-1] + ["the bird sang ."]))
    code, line = run_entry(entry, texts, first, second, tmp_path, capsys)
    assert code is None, line


def test_the_reference_entries_are_every_entry_that_takes_references():
    assert set(inputs.CONTENT_DISTINCT) == {entry.split()[-1] for entry in REFERENCE_ENTRIES}
    assert set(REFERENCE_ENTRIES) - set(ENTRIES) == {"compare --refs"}


def test_copies_as_systems_and_a_system_that_is_its_sources_are_scored(texts, tmp_path, capsys):
    """Two systems with the same output (report --sys, score --compare-to), and --sys a copy of --orig (the
    copy-source baseline): other files of one content, no references among them: scored."""
    assert run_entry("report --sys", texts, str(texts / "ref.txt"), str(texts / "other.txt"), tmp_path, capsys)[0] \
        is None
    code, line = run_roles("score", texts, {"--sys": "ref.txt", "--compare-to": "other.txt", "--orig": "sys.txt"},
                           tmp_path, capsys)
    assert code is None, line


def test_the_check_is_linear(tmp_path, monkeypatch):
    """600 references: one look at each (not every pair), in well under a second; the duplicate at the end found."""
    paths = []
    for i in range(600):
        paths.append(str(tmp_path / "ref{}.txt".format(i)))
        with open(paths[-1], "w") as f:
            f.write("x{:04d}\n".format(i))  # one size: every file is read for its content, once
    looked, read = [], []
    key, digest = inputs.file_key, inputs.content_digest
    monkeypatch.setattr(inputs, "file_key", lambda path: looked.append(path) or key(path))
    monkeypatch.setattr(inputs, "content_digest", lambda path: read.append(path) or digest(path))
    start = time.perf_counter()
    inputs.check_distinct(paths, "--refs")
    assert len(looked) == 600 and sorted(read) == sorted(paths) and time.perf_counter() - start < 1.0
    os.symlink(paths[3], str(tmp_path / "late.txt"))
    with pytest.raises(FairseqWeanError, match=r"^--refs names one file twice \(.*ref3.txt and .*late.txt\): give"):
        inputs.check_distinct(paths + [str(tmp_path / "late.txt")], "--refs")


def test_standard_input_and_missing_files(tmp_path):
    """Standard input is no file here (read twice is refused where inputs are read); a missing file named twice
    (by one path, or through a link to its folder) is one name, refused before the reading names it missing."""
    inputs.check_distinct(["-", "-", "/dev/stdin"], "--refs")
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(FairseqWeanError, match="^--refs names .*missing.txt twice: give each file once$"):
        inputs.check_distinct([missing, missing], "--refs")


# --------------------------------------------------------------------------- one file in two roles of one call
# (entry, the role named first, the later role): every pair of inputs.SAME_FILE_ROLES each entry point has;
# "--sys 2": report's second system
ROLE_CASES = [("score", "--sys", "--refs"), ("score", "--compare-to", "--refs"), ("score", "--orig", "--refs"),
              ("score", "--sys", "--compare-to"), ("report", "--sys", "--refs"), ("report", "--sys 2", "--refs"),
              ("report", "--orig", "--refs"), ("compare", "--sys", "--refs"), ("compare", "--compare-to", "--refs"),
              ("compare", "--orig", "--refs"), ("compare", "--sys", "--compare-to")]
ROLE_FORMS = {"the same path": "ref.txt", "a symbolic link": "link.txt", "a hard link": "hard.txt"}


def run_roles(entry, d, files, tmp_path, capsys):
    """(exit status or None, the one line) of ``entry`` with ``files`` {role: file name in d}; the rest distinct."""
    names = {"--sys": "sys.txt", "--sys 2": "other.txt", "--compare-to": "other.txt", "--orig": "sys.txt",
             "--refs": "gold.txt"}
    names.update(files)
    path = {role: str(d / name) for role, name in names.items()}
    out = tmp_path / "page.html"
    if entry == "compare":
        from fairseq_wean.compare import report as compare_report
        spec = {"orig": names["--orig"], "refs": [names["--refs"]], "metrics": "bleu,sari"}
        try:
            compare_report.score(path["--sys"], spec, str(d), compare_to=path["--compare-to"])
        except FairseqWeanError as e:
            return 1, str(e)
        return None, ""
    if entry == "score":
        from fairseq_wean.cli.score import cli_main
        argv = ["--sys", path["--sys"], "--compare-to", path["--compare-to"], "--orig", path["--orig"], "--refs",
                path["--refs"], "--metrics", "bleu,sari"]
    else:
        from fairseq_wean.cli.report import cli_main
        argv = ["--sys", path["--sys"], path["--sys 2"], "--names", "a", "b", "--orig", path["--orig"], "--refs",
                path["--refs"], "--out", str(out), "--metrics", "bleu,sari"]
    return _refused(cli_main, argv, out, capsys)


@pytest.mark.parametrize("entry,first,later", ROLE_CASES)
@pytest.mark.parametrize("form", sorted(ROLE_FORMS))
def test_one_file_in_two_roles_is_refused_in_every_entry_point(texts, tmp_path, capsys, entry, first, later, form):
    """--refs sys.txt (the system as its own reference) gave BLEU 100 and exit 0 in fairseq-wean-score and
    fairseq-wean-report; only --compare-to = --sys was refused. One rule now (inputs.check_distinct_roles),
    in every form of one file, before anything is read or written."""
    code, line = run_roles(entry, texts, {first: "ref.txt", later: ROLE_FORMS[form]}, tmp_path, capsys)
    shown = inputs.SAME_FILE_ROLES[(first.split()[0], later)]
    assert (code, line) == (1, "{} {} is {} itself: {}".format(later, texts / ROLE_FORMS[form], first.split()[0], shown))


@pytest.mark.parametrize("entry", ["score", "report", "compare"])
def test_the_sources_as_the_system_are_scored(texts, tmp_path, capsys, entry):
    """The identity ("copy source") baseline: the sources scored as a system's output (fairseq-wean-compare's
    "copy source" row) is one file in two roles that is no mistake."""
    # compare reads only files with no other name (its files are found in folders): one path there
    files = {} if entry == "compare" else {"--sys": "ref.txt", "--orig": "link.txt"}
    code, line = run_roles(entry, texts, files, tmp_path, capsys)
    assert code is None, line


def test_every_pair_of_roles_is_enumerated():
    assert {(first.split()[0], later) for _, first, later in ROLE_CASES} == set(inputs.SAME_FILE_ROLES)
    assert {entry for entry, _, _ in ROLE_CASES} == {"score", "report", "compare"}


# --------------------------------------------------------------------------------------- labels of systems
# every label option of every tool (found in the captured parsers by its name), run by its tool: the one rule
# is fairseq_wean.cli.options.check_labels (a label, no line break or control character, each system its own)
LABEL_OPTION = r"(^|-)(names?|labels?)$"
BAD_LABELS = {"empty": ("", "is empty"), "spaces": ("  ", "is empty"),
              "a line break": ("a\nb", "holds the control character '\\n'"),
              "a tab": ("a\tb", "holds the control character '\\t'"),
              "a line separator": ("a\u2028b", "holds the control character '\\u2028'"),
              "an escape": ("a\x1b[31mb", "holds the control character '\\x1b'")}


def label_argv(tool, flag, label, d, out):
    """The tool's command line with ``label`` given to ``flag`` (every other input valid and distinct)."""
    if tool == "fairseq-wean-score":
        return ["--sys", str(d / "sys.txt"), "--refs", str(d / "gold.txt"), "--metrics", "bleu", "--compare-to",
                str(d / "other.txt"), flag, label]
    assert (tool, flag) == ("fairseq-wean-report", "--names"), "a label option with no case here: {} {}".format(
        tool, flag)
    return ["--sys", str(d / "sys.txt"), str(d / "other.txt"), "--names", "first", label, "--orig", str(d / "sys.txt"),
            "--refs", str(d / "gold.txt"), "--out", str(out), "--metrics", "bleu"]


_FOUND = []


def label_options(monkeypatch):
    import re

    from test_option_ranges import all_parsers, option_name

    if not _FOUND:  # every tool's parser, captured once
        _FOUND.append(all_parsers(monkeypatch)[0])
    found = _FOUND[0]
    return sorted((tool, option_name(a)) for tool, parser in found.items() for a in parser._actions
                  if a.option_strings and re.search(LABEL_OPTION, option_name(a)))


def run_tool(tool, argv, out, capsys):
    from fairseq_wean.cli import report, score

    try:
        (score if tool == "fairseq-wean-score" else report).cli_main(argv)
    except SystemExit as e:
        assert not out.exists() and "\n" not in capsys.readouterr().err.strip()
        return 1 if e.code not in (0, None) else 0, str(e.code)
    return 0, capsys.readouterr().out


@pytest.mark.parametrize("bad", sorted(BAD_LABELS))
def test_every_label_option_refuses_what_is_no_label(bad, texts, tmp_path, capsys, monkeypatch):
    """fairseq-wean-score --name $'a\\nb' split its header line; fairseq-wean-report took --names "" (score
    refused it): one rule for every label option, one line, exit 1, nothing written, before any scoring."""
    found = label_options(monkeypatch)
    assert {("fairseq-wean-score", "--name"), ("fairseq-wean-score", "--compare-name"),
            ("fairseq-wean-report", "--names")} <= set(found), found
    label, problem = BAD_LABELS[bad]
    out = tmp_path / "page.html"
    for tool, flag in found:
        code, line = run_tool(tool, label_argv(tool, flag, label, texts, out), out, capsys)
        assert (code, line) == (1, "{}: error: {} {!r} {}: give a label of visible characters, or leave the option out "
                                   "(the file name is the default)".format(tool, flag, label, problem)), (tool, flag)


def test_two_systems_of_one_label_and_good_labels(texts, tmp_path, capsys):
    out = tmp_path / "page.html"
    argv = label_argv("fairseq-wean-score", "--name", "sys A", texts, out) + ["--compare-name", "sys A"]
    assert run_tool("fairseq-wean-score", argv, out, capsys) == (
        1, "fairseq-wean-score: error: --name and --compare-name 'sys A' name two systems: give each system its own name")
    # any script, spaces and punctuation inside, a zero-width non-joiner (Persian): labels
    for label in ("système à base de règles", "WEAN (β=0.5)", "می\u200cخواهم"):
        code, text = run_tool("fairseq-wean-score", label_argv("fairseq-wean-score", "--name", label, texts, out), out,
                              capsys)
        assert code == 0 and text.splitlines()[0].startswith(label + ":"), text
        code, text = run_tool("fairseq-wean-report", label_argv("fairseq-wean-report", "--names", label, texts, out),
                              out, capsys)
        assert code == 0 and out.exists(), text
        out.unlink()


def _refused(cli_main, argv, out, capsys):
    """(1, the error line) when the tool refuses ``argv`` (nothing written to ``out``, one line), else (None, "")."""
    try:
        cli_main(argv)
    except SystemExit as e:
        assert not out.exists()
        return 1, str(e.code).split(": error: ", 1)[-1]
    finally:
        assert "\n" not in capsys.readouterr().err.strip()
    return None, ""
