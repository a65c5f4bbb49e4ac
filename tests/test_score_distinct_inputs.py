"""One file named twice in a list of inputs (a reference counted twice, a system compared with itself) is
refused by one rule, :func:`fairseq_wean.scoring.inputs.check_distinct`, in every list that takes files:
fairseq-wean-score --refs, fairseq-wean-report --sys and --refs, fairseq-train's --eval-refs; in every form of
one file (the same path, another spelling of it, a symbolic link, a hard link, a link to its folder), in one
stat a path (600 references are checked in milliseconds, where comparing every pair took 12 s)."""
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
    for name in ("sys.txt", "ref.txt", "other.txt"):
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


def run_entry(entry, d, first, second, tmp_path, capsys):
    """(exit status or None, the one line) of ``entry`` given ``first`` and ``second`` in its list."""
    out = tmp_path / "page.html"
    if entry == "fairseq-train --eval-refs":
        from fairseq_wean.tasks.validation_files import check_eval_files
        try:
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
                str(d / "sys.txt"), "--out", str(out)]
    try:
        cli_main(argv)
    except SystemExit as e:
        assert not out.exists()
        return 1, str(e.code).split(": error: ", 1)[-1]
    finally:
        assert "\n" not in capsys.readouterr().err.strip()
    return None, ""


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_one_file_named_twice_is_refused_in_every_list(texts, tmp_path, capsys, entry, form):
    first, second = str(texts / "ref.txt"), FORMS[form](texts)
    code, line = run_entry(entry, texts, first, second, tmp_path, capsys)
    option = entry.split()[-1]
    twice = "{} twice".format(first) if first == second else "one file twice ({} and {})".format(first, second)
    assert (code, line) == (1, "{} names {}: give each file once".format(option, twice))


@pytest.mark.parametrize("entry", ENTRIES)
def test_two_files_of_one_content_are_two_inputs(texts, tmp_path, capsys, entry):
    """The rule is about one file: a copy is another file (two systems may write the same output)."""
    code, line = run_entry(entry, texts, str(texts / "ref.txt"), str(texts / "other.txt"), tmp_path, capsys)
    assert code is None, line


def test_the_check_is_linear(tmp_path, monkeypatch):
    """600 references: one look at each (not every pair), in well under a second; the duplicate at the end found."""
    paths = []
    for i in range(600):
        paths.append(str(tmp_path / "ref{}.txt".format(i)))
        with open(paths[-1], "w") as f:
            f.write("x\n")
    looked = []
    key = inputs.file_key
    monkeypatch.setattr(inputs, "file_key", lambda path: looked.append(path) or key(path))
    start = time.perf_counter()
    inputs.check_distinct(paths, "--refs")
    assert len(looked) == 600 and time.perf_counter() - start < 1.0
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
