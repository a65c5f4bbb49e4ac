"""Output paths the OS resolves differently from os.path.abspath, and files written in place
through a hard link: refused in one line, nothing written (textio is the one mechanism)."""
import os

import pytest

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError


def test_missing_folder_then_dotdot_refused(tmp_path):
    target = os.path.join(str(tmp_path), "nodir", "..", "x")
    with pytest.raises(FairseqWeanError, match="does not exist"):
        textio.check_output(target)
    with pytest.raises(FairseqWeanError, match="does not exist"):
        with textio.atomic_output(target) as f:
            f.write("x")
    assert os.listdir(str(tmp_path)) == []


WRITERS = {
    "w": lambda p, d: textio.open_in_folder(p, "w"),
    "a": lambda p, d: textio.open_in_folder(p, "a"),
    "a+": lambda p, d: textio.open_in_folder(p, "a+"),
    "open_log": lambda p, d: textio.open_log(p),
    "open_log_append": lambda p, d: textio.open_log(p, append=True),
    "lock_folder": lambda p, d: textio.lock_folder(d, "--save-dir", "fairseq-train"),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_hard_link_refused_victim_unchanged(tmp_path, writer):
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    folder = tmp_path / "d"
    folder.mkdir()
    target = folder / ".fairseq-wean.lock"
    os.link(str(victim), str(target))
    with pytest.raises(FairseqWeanError, match=r"has 2 hard links \(a file with other names.*: refused$"):
        WRITERS[writer](str(target), str(folder))
    assert victim.read_bytes() == b"precious\n"


def test_plain_write_truncates(tmp_path):
    p = str(tmp_path / "x")
    for text in ("long text", "b"):
        with textio.open_in_folder(p, "w") as f:
            f.write(text)
    assert open(p).read() == "b"


@pytest.mark.parametrize("kind,problem", [
    ("absent", None), ("regular", None), ("hard link", "has 2 hard links"), ("symbolic link", "is a symbolic link"),
    ("named pipe", "is not a regular file"), ("folder", "is a folder"), ("outside", "is outside"),
])
def test_one_rule_for_a_file_written_in_place(kind, problem, tmp_path):
    """textio.in_place_problem: the one check of open_in_folder's writes, open_log, lock_folder,
    fairseq-generate's --results-path file and --log-file (check_in_place); every kind it must refuse."""
    folder, other = tmp_path / "d", tmp_path / "other"
    folder.mkdir()
    other.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    path = folder / "f"
    if kind == "regular":
        path.write_bytes(b"mine\n")
    elif kind == "hard link":
        os.link(str(victim), str(path))
    elif kind == "symbolic link":
        path.symlink_to(victim)
    elif kind == "named pipe":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "outside":
        (folder / "sub").symlink_to(other)
        path = folder / "sub" / "f"
    found = textio.in_place_problem(str(path), folder=str(folder))
    assert (found is None) if problem is None else found.startswith(problem), found
    if problem is None:
        textio.check_in_place(str(path), "--log-file", folder=str(folder))
        return
    with pytest.raises(FairseqWeanError) as info:
        textio.check_in_place(str(path), "--log-file", folder=str(folder))
    assert "\n" not in str(info.value) and str(info.value).startswith("--log-file {} {}".format(path, problem))
    assert victim.read_bytes() == b"precious\n"
    if kind == "hard link":  # only a write in place is refused: reading a hard-linked file is harmless
        assert textio.in_place_problem(str(path), write=False) is None
