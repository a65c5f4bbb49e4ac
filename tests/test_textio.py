"""fairseq_wean.textio: what counts as an input, and outputs that never lose data."""
import os
import subprocess
import sys

import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.textio import atomic_output, check_output, read_lines


def test_read_lines_strips_bom_and_line_ends(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"\xef\xbb\xbfone\r\ntwo\n\nthree")
    assert read_lines(str(p)) == ["one", "two", "", "three"]


def test_read_lines_names_the_bad_line(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"ok\nfine\nbad \xff byte\n")
    with pytest.raises(FairseqWeanError, match=r"a.txt line 3 is not UTF-8"):
        read_lines(str(p))


def test_missing_file_and_directory_are_errors(tmp_path):
    with pytest.raises(FairseqWeanError, match="no such file"):
        read_lines(str(tmp_path / "missing"))
    with pytest.raises(FairseqWeanError, match="is a directory"):
        read_lines(str(tmp_path))


def test_named_pipe_and_stdin_are_inputs(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    code = "from fairseq_wean.textio import read_lines; import sys; print(read_lines(sys.argv[1]))"
    writer = subprocess.Popen(["sh", "-c", "printf 'x\\ny\\n' > " + fifo])
    out = subprocess.run([sys.executable, "-c", code, fifo], capture_output=True, text=True, timeout=60)
    writer.wait(timeout=60)
    assert out.stdout.strip() == "['x', 'y']", out.stderr
    for name in ("-", "/dev/stdin"):
        out = subprocess.run([sys.executable, "-c", code, name], input="p\nq\n", capture_output=True,
                             text=True, timeout=60)
        assert out.stdout.strip() == "['p', 'q']", out.stderr


def test_atomic_output_keeps_old_file_on_failure(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_output(str(out)) as f:
            f.write("partial\n")
            raise RuntimeError("boom")
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]  # no temporary file left behind
    with atomic_output(str(out)) as f:
        f.write("new\n")
    assert out.read_text() == "new\n"
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(str(out)).st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0600


def test_output_equal_to_an_input_is_refused(tmp_path):
    src = tmp_path / "train.src"
    src.write_text("keep me\n")
    link = tmp_path / "link.src"
    os.symlink(str(src), str(link))
    for out in (str(src), str(link), str(tmp_path / "." / "train.src")):
        with pytest.raises(FairseqWeanError, match="also an input"):
            check_output(out, inputs=[str(src)])
    assert src.read_text() == "keep me\n"
    with pytest.raises(FairseqWeanError, match="does not exist"):
        check_output(str(tmp_path / "nodir" / "x.txt"))
    with pytest.raises(FairseqWeanError, match="is a directory"):
        check_output(str(tmp_path))


def test_a_file_found_in_a_folder_is_read_only_when_it_has_no_other_name(tmp_path):
    """textio.open_in_folder (every reader of a file found in a folder: published outputs and scores.json,
    a comparison's eval files, recipe.json) refuses a hard link to a file elsewhere in one line, before
    anything is read; a page the user named (update_section) is read and replaced as itself."""
    from fairseq_wean.textio import in_place_problem, open_in_folder, update_section

    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-PASSWORD-LINE\n")
    folder = tmp_path / "published"
    folder.mkdir()
    os.link(secret, folder / "test.hyp")
    (folder / "own.hyp").write_text("a line\n")
    for mode in ("r", "rb"):
        with pytest.raises(FairseqWeanError) as exc:
            open_in_folder(str(folder / "test.hyp"), mode, str(folder), "published output")
        assert str(exc.value) == (
            "published output {} has 2 hard links (a file with other names, which may lie outside the folder: a "
            "file found in a folder is read only when it has no other name; copy it there, not with ln or cp -l): "
            "refused".format(folder / "test.hyp"))
        with pytest.raises(FairseqWeanError, match="hard links"):
            read_lines(str(folder / "test.hyp"), "published output", folder=str(folder))
    with open_in_folder(str(folder / "own.hyp"), "r", str(folder)) as f:  # the control: one name
        assert f.read() == "a line\n"
    assert in_place_problem(str(folder / "test.hyp"), write=False) is None  # a file the user named: its own
    assert read_lines(str(folder / "test.hyp")) == ["SECRET-PASSWORD-LINE"]
    page = tmp_path / "page.md"
    os.link(secret, page)
    update_section(str(page), "<!-- b -->new<!-- e -->", "<!-- b -->", "<!-- e -->")
    assert page.read_text() == "SECRET-PASSWORD-LINE\n\n<!-- b -->new<!-- e -->\n"
    assert secret.read_text() == "SECRET-PASSWORD-LINE\n"  # replaced by a rename, not written through


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_makedirs_in_folder_keeps_a_folder_made_meanwhile(tmp_path, monkeypatch, depth):
    """The comparison runner's parallel runs make their run folders under one runs/ folder at once: a
    folder another thread or process makes between this maker's look and its mkdir, at any depth, is
    kept, not an error (CI once failed on ``FileExistsError: .../runs``)."""
    import fairseq_wean.textio as textio

    real_mkdir = os.mkdir

    def racing_mkdir(path, *args, **kwargs):
        real_mkdir(path)  # the other maker wins the race
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(textio.os, "mkdir", racing_mkdir)
    target = tmp_path.joinpath(*["d{}".format(i) for i in range(depth)])
    assert textio.makedirs_in_folder(str(target), str(tmp_path)) == str(target)
    assert target.is_dir()


def test_makedirs_in_folder_from_many_threads_at_once(tmp_path):
    """Eight threads making sibling run folders under one missing runs/ folder at the same moment."""
    import threading

    from fairseq_wean.textio import makedirs_in_folder

    barrier, errors = threading.Barrier(8), []

    def make(i):
        barrier.wait()
        try:
            makedirs_in_folder(str(tmp_path / "runs" / "run{}".format(i) / "ckpt"), str(tmp_path), "run folder")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=make, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["run{}".format(i) for i in range(8)]


@pytest.mark.parametrize("planted", ["link", "file"])
def test_makedirs_in_folder_still_refuses_what_was_planted(tmp_path, planted):
    """Keeping a folder made meanwhile does not keep a link or file planted on the way."""
    from fairseq_wean.textio import makedirs_in_folder

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    if planted == "link":
        (out / "runs").symlink_to(elsewhere)
    else:
        (out / "runs").write_text("x")
    with pytest.raises(FairseqWeanError, match="symbolic link or not a folder: refused"):
        makedirs_in_folder(str(out / "runs" / "a"), str(out), "run folder")
    assert list(elsewhere.iterdir()) == []
