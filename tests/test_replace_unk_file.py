"""A35: --replace-unk FILE that is no regular file (a folder, a named pipe) is refused in one line
before fairseq opens it (a pipe blocked fairseq-generate on binarized data and fairseq-interactive;
a folder was a traceback). Both commands get the file through fairseq's utils.load_align_dict."""
import os
import signal

import pytest

from fairseq_wean.errors import FairseqWeanError


@pytest.mark.parametrize("kind", ["a folder", "a named pipe"])
def test_a_replace_unk_file_that_is_no_regular_file_is_refused_before_it_is_opened(tmp_path, kind):
    import fairseq_wean  # noqa: F401
    from fairseq import utils

    path = tmp_path / "align"
    path.mkdir() if kind == "a folder" else os.mkfifo(path)

    def alarm(*_):
        raise TimeoutError("blocked: the named pipe was opened")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    try:
        with pytest.raises(FairseqWeanError) as info:
            utils.load_align_dict(str(path))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert str(info.value) == ("--replace-unk {} is not a regular file (a folder, named pipe, socket or device): give "
                               "the alignment dictionary's file, or a bare --replace-unk".format(path))
