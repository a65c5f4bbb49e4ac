"""A full disk is one line, and loses nothing: every writer, on a file system with no space left
(a tmpfs filled to the last page), exits non-zero with one line, leaves the previous output as it
was and no temporary file behind. Needs root for the mount (skipped otherwise)."""
import os
import subprocess
import sys

import pytest

from conftest import BIN, REPO, USER_DIR
from test_crafted_checkpoints import train_argv


@pytest.fixture
def full_disk(tmp_path):
    folder = tmp_path / "full"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder):
    with open(folder / ".filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


def writers(raw_dir, data_bin, folder):
    """(name, command, the output it replaces): every tool that writes a file the user names."""
    refs = raw_dir / "test.tgt"
    return [
        ("fairseq-wean-report", [os.path.join(BIN, "fairseq-wean-report"), "--sys", raw_dir / "test.src",
                                 "--refs", refs, "--orig", raw_dir / "test.src", "--metrics", "bleu",
                                 "--out", folder / "page.html"], folder / "page.html"),
        ("fairseq-wean-align-table", [os.path.join(BIN, "fairseq-wean-align-table"), "--src", raw_dir / "train.src",
                                      "--tgt", raw_dir / "train.tgt", "--dict", data_bin / "dict.src.txt",
                                      "--out", folder / "align.table"], folder / "align.table"),
        ("preprocess.split_characters", [sys.executable, "-m", "preprocess.split_characters", "--input", raw_dir / "train.src",
                                         "--output", folder / "chars.txt"], folder / "chars.txt"),
        ("preprocess.unk_markers vocab", [sys.executable, "-m", "preprocess.unk_markers", "vocab", "--src",
                                          raw_dir / "train.src", "--tgt", raw_dir / "train.tgt", "--min-count", "1",
                                          "--out", folder / "dict.txt"], folder / "dict.txt"),
        ("fairseq-train", [os.path.join(BIN, "fairseq-train")] + train_argv(data_bin, folder)[1:],
         folder / "checkpoint1.pt"),  # a first run: what it writes first is the epoch's checkpoint
    ]


def test_every_writer_on_a_full_disk_is_one_line_and_loses_nothing(raw_dir, data_bin, full_disk):
    failures = []
    for name, command, output in writers(raw_dir, data_bin, full_disk):
        for leftover in full_disk.iterdir():
            if leftover.name != ".filler":
                leftover.unlink()
        if (full_disk / ".filler").exists():
            (full_disk / ".filler").unlink()
        previous = name != "fairseq-train"  # a checkpoint there without checkpoint_last.pt: another run's, refused
        if previous:
            output.write_bytes(b"the previous output\n")
        fill(full_disk)
        proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=REPO, timeout=300,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        left = sorted(p.name for p in full_disk.iterdir() if p.name.endswith(".tmp") or ".tmp" in p.name)
        problems = []
        if proc.returncode == 0:
            problems.append("exit 0")
        if "Traceback" in proc.stderr or "no space left on the device" not in last:
            problems.append("not one line: " + proc.stderr[-600:])
        if previous and output.read_bytes() != b"the previous output\n":
            problems.append("the previous output changed")
        if left:
            problems.append("left behind: {}".format(left))
        if problems:
            failures.append("{}: {}".format(name, "; ".join(problems)))
    assert not failures, "\n".join(failures)
