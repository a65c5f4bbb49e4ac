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
    with pytest.raises(FairseqWeanError, match="hard links: refused"):
        WRITERS[writer](str(target), str(folder))
    assert victim.read_bytes() == b"precious\n"


def test_plain_write_truncates(tmp_path):
    p = str(tmp_path / "x")
    for text in ("long text", "b"):
        with textio.open_in_folder(p, "w") as f:
            f.write(text)
    assert open(p).read() == "b"
