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
