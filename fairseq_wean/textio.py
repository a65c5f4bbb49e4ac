"""Reading inputs and writing outputs of the project's command-line tools, in one place.

Every tool that reads a user's text file or writes a result goes through here, so that all of
them agree on what a usable input is and none of them can lose data:

* an input may be a regular file, a named pipe, ``/dev/stdin`` or ``-`` (standard input);
  a missing path, a directory or an unreadable file is a one-line ``FairseqWeanError``;
* text is UTF-8; a leading byte-order mark is dropped, one anywhere else (what ``cat`` of two files
  that begin with one makes) is an error naming the file and the line; a line that is not UTF-8 is
  an error that names the file and the line;
* an output is written to a temporary file beside it and renamed over the target only when
  the whole output was written (``atomic_output``), so a failure leaves the previous file,
  or none, never a partial one; an output path equal to one of the inputs, a directory, a
  device, named pipe or socket (or a link to one), or a path in a directory that does not exist
  is refused before anything is read or written; a symbolic link is replaced, never written
  through;
* a file the tools find in a folder (a published results folder, a --save-dir, a comparison's
  --out) rather than one the user named is opened with :func:`open_in_folder`: never through a
  symbolic link, only a regular file with no other name (a hard link), only inside that folder (git
  stores symlinks, so a contributed results folder can hold one that points at a secret; a tar archive
  or a copy can carry a hard link to one).
"""
import contextlib
import os
import sys
import tempfile

from fairseq_wean.errors import FairseqWeanError

STDIN_NAMES = ("-", "/dev/stdin")


def check_input(path, what="input"):
    """Raise ``FairseqWeanError`` unless ``path`` can be opened for reading.

    Regular files, named pipes and character devices (``/dev/stdin``) are accepted; ``-``
    means standard input.
    """
    if path == "-":
        return
    if not os.path.exists(path):
        raise FairseqWeanError("{} {}: no such file".format(what, path))
    if os.path.isdir(path):
        raise FairseqWeanError("{} {} is a directory: give a text file".format(what, path))
    if not os.access(path, os.R_OK):
        raise FairseqWeanError("{} {}: permission denied".format(what, path))


def open_in_folder(path, mode="r", folder=None, what="file", named=False):
    """Open ``path``, a file found in ``folder`` (default: its own directory), refusing with one
    line (``FairseqWeanError``) a symbolic link (``O_NOFOLLOW``: no check-then-open race), a path
    through a linked directory that leaves ``folder``, anything but a regular file (a named
    pipe is refused before it could block) and a file with other names (a hard link: its content may be
    a file from anywhere, :func:`in_place_problem`). ``mode``: ``"r"``, ``"rb"``, ``"w"``, ``"a"``, ``"a+"``;
    text is UTF-8. Opened for writing, a folder at ``path`` is refused in one line too. ``named``: the user
    named the file (a page a tool updates), so a hard link is read as that file."""
    import stat

    folder = os.path.realpath(folder or os.path.dirname(os.path.abspath(path)))
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if os.path.commonpath([parent, folder]) != folder:
        raise FairseqWeanError("{} {} is outside {} (through a symbolic link): refused".format(what, path, folder))
    flags = {"r": os.O_RDONLY, "rb": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT,
             "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND, "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND}[mode]
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        if os.path.islink(path):
            raise FairseqWeanError("{} {} is a symbolic link: refused (a file in this folder is read and "
                                   "written only as itself)".format(what, path)) from None
        if os.path.isdir(path) and mode not in ("r", "rb"):
            raise FairseqWeanError("{} {} is a folder: refused (a tool writes its own file there)".format(
                what, path)) from None
        if not os.path.exists(path) or os.path.isdir(path):
            raise
        if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe opened for writing with no reader: ENXIO
            raise FairseqWeanError("{} {} is not a regular file: refused".format(what, path)) from None
        raise FairseqWeanError("{} {}: {}".format(what, path, exc.strerror)) from None
    info = os.fstat(fd)  # checked on the descriptor, before truncating
    problem = in_place_problem(path, info=info, write=mode not in ("r", "rb"), found=not named)
    if problem is not None:
        os.close(fd)
        raise FairseqWeanError("{} {} {}: refused".format(what, path, problem))
    if mode == "w":
        os.ftruncate(fd, 0)
    os.set_blocking(fd, True)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8", newline=None if mode == "r" else "\n")


def in_place_problem(path, folder=None, info=None, write=True, found=False):
    """Why the existing file ``path`` may not be written in place (opened with "w"/"a", appended to,
    truncated), or None: it is a symbolic link, not a regular file, a file with other names (a hard link,
    ``st_nlink > 1``: writing it changes the other names' file too) or, with ``folder``, outside that
    folder through a linked directory. None when nothing is at ``path``. ``info``: the ``os.fstat`` of a
    descriptor already opened (``O_NOFOLLOW``) on ``path``, checked instead of the name (no race);
    ``write=False``: a file only read (a hard link is then harmless), but with ``found``: a file the tool
    found in a folder rather than one the user named, whose other names may lie anywhere (``dict.tgt.txt``
    hard-linked to someone's secret would be read, and quoted, as the folder's), so a hard link is refused
    too. The one rule of every in-place writer and of every reader of a file found in a folder
    (:func:`open_in_folder`, :func:`check_in_place`, ``data.folder_files.folder_file_problem``)."""
    import stat

    if folder is not None:
        real = os.path.realpath(folder)
        parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        if os.path.commonpath([parent, real]) != real:
            return "is outside {} (through a symbolic link)".format(folder)
    if info is None:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link (a file is written in place only as itself)"
    if stat.S_ISDIR(info.st_mode):
        return "is a folder, not a regular file"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if write and info.st_nlink > 1:
        return ("has {} hard links (a file with other names: writing it in place would change the other names' "
                "file too)".format(info.st_nlink))
    if found and info.st_nlink > 1:
        return ("has {} hard links (a file with other names, which may lie outside the folder: a file found in a "
                "folder is read only when it has no other name; copy it there, not with ln or cp -l)".format(
                    info.st_nlink))
    return None


def check_in_place(path, what, folder=None):
    """One-line ``FairseqWeanError`` naming ``what`` and ``path`` for an :func:`in_place_problem`: the check,
    before any work, of a file a tool will later write in place (a log appended to, a results file)."""
    problem = in_place_problem(path, folder)
    if problem is not None:
        raise FairseqWeanError("{} {} {}: refused; remove it or give another path".format(what, path, problem))


def open_log(path, append=False, folder=None, what="log"):
    """Open the log ``path`` for writing (appending with ``append``: a log kept across runs), as
    :func:`open_in_folder` does: never through a symbolic link (``O_NOFOLLOW``), only a regular
    file (a pipe, device or folder there is refused in one line, nothing written), only inside
    ``folder`` (default: its own directory). Text is UTF-8 and line-buffered, so ``tail -f``
    follows it; its handle can be given to a child process as its stdout or stderr."""
    handle = open_in_folder(path, "a" if append else "w", folder, what)
    handle.reconfigure(line_buffering=True)
    return handle


class CutFileError(FairseqWeanError):
    """A text file whose last line has no final newline: it was cut (read with ``complete=True``)."""


# what ends a line for some reader of a text file besides its "\n": "\r" for Python's text mode (universal
# newlines: fairseq-preprocess, fairseq-interactive), the rest for str.splitlines; all whitespace to fairseq's
# tokenize_line, Moses and str.split
OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_TO_SPACE = {ord(c): " " for c in OTHER_BREAKS}


def _carriage_return(raw, path, what, number):
    """``strict``: a line (bytes, with its end) holding a ``\\r`` other than that of its ``\\r\\n`` end: a line break
    to Python's text mode (fairseq-preprocess), not to this reader; checked before the cut and UTF-8 checks (an
    old Mac file, ``\\r`` line ends only, is one long line with no newline)."""
    body = raw[:-1] if raw.endswith(b"\n") else raw
    body = body[:-1] if body.endswith(b"\r") else body
    if b"\r" in body:
        raise FairseqWeanError(
            "{} {} line {} holds a carriage return (\\r) inside the line (byte {} of the line): fairseq-preprocess and "
            "every text-mode reader take it for a line break, so they would count one sentence more than the lines "
            "here; remove it (tr -d '\\r'), or, if the file has old Mac line ends, convert them (tr '\\r' "
            "'\\n')".format(what, path, number, body.index(b"\r")))


BYTE_ORDER_MARK = b"\xef\xbb\xbf"  # U+FEFF in UTF-8


def byte_order_mark_problem(what, path, number, byte):
    """The one line for a byte-order mark (U+FEFF) anywhere but at the start of a file: the one rule of every reader of
    raw text (these readers drop a mark that starts a file; one elsewhere would become a character of a word)."""
    return ("{} {} line {} holds a byte-order mark (U+FEFF, byte {} of the line), which only a file's start may hold "
            "(what joining files that begin with one makes, e.g. cat a.txt b.txt): every reader would take it for a "
            "character of the word after it; remove it (sed 's/\\xef\\xbb\\xbf//g' FILE)".format(
                what, path, number, byte))


def first_stray_byte_order_mark(path):
    """(1-based line number, byte of the line) of the first byte-order mark of ``path`` that is not its first
    three bytes, or None: the rule of :func:`byte_order_mark_problem` for a reader that does not read through
    :func:`iter_lines` (fairseq-preprocess: compat's input check)."""
    import mmap

    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        found = data.find(BYTE_ORDER_MARK, 1)
        if found < 0:
            return None
        line_start = data.rfind(b"\n", 0, found) + 1
        chunk = 1 << 24  # count line ends a slice at a time: the file may be larger than memory
        number = 1 + sum(data[i:min(i + chunk, found)].count(b"\n") for i in range(0, found, chunk))
        return number, found - line_start


def _decoded_lines(binary, path, what, complete=False, strict=False):
    for number, raw in enumerate(binary, start=1):
        if strict:
            _carriage_return(raw, path, what, number)
        if complete and not raw.endswith(b"\n"):
            raise CutFileError(
                "{} {} ends inside a line (no newline after its last line, line {}): it looks cut (an interrupted "
                "download or copy, a full disk); copy it again, or, if that line is complete, add the newline "
                "(echo >> FILE)".format(what, path, number))
        if number == 1 and raw.startswith(BYTE_ORDER_MARK):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise FairseqWeanError(
                "{} {} line {} is not UTF-8 text (byte {} of the line): re-encode the file as "
                "UTF-8".format(what, path, number, exc.start)
            ) from None
        if "\ufeff" in text:
            raise FairseqWeanError(byte_order_mark_problem(what, path, number, raw.index(BYTE_ORDER_MARK)))
        yield text.translate(_TO_SPACE) if strict else text


def iter_lines(path, what="input", folder=None, complete=False, strict=False):
    """Yield the lines of a UTF-8 text file without their line ends (``\\n``, ``\\r\\n``).
    ``folder``: the file was found in that folder, not named by the user (:func:`open_in_folder`).
    ``complete``: a last line with no final newline, the mark of a cut file, is a one-line
    :class:`CutFileError` when it is reached (streamed: a pipe or standard input too). ``strict``: the lines
    every reader of the file sees, so that a count of them is fairseq-preprocess's count: a ``\\r`` other than
    that of a ``\\r\\n`` line end (a line break to Python's text mode) is a one-line error naming file and
    line; the other characters ``str.splitlines`` breaks at (:data:`OTHER_BREAKS`, whitespace to fairseq's
    tokenize_line) become a space."""
    if folder is not None:
        with open_in_folder(path, "rb", folder, what) as binary:
            yield from _decoded_lines(binary, path, what, complete, strict)
        return
    check_input(path, what)
    if path == "-":
        yield from _decoded_lines(sys.stdin.buffer, "standard input", what, complete, strict)
        return
    with open(path, "rb") as binary:
        yield from _decoded_lines(binary, path, what, complete, strict)


def read_lines(path, what="input", folder=None, complete=False, strict=False):
    """All lines of a UTF-8 text file (see ``iter_lines``), as a list."""
    return list(iter_lines(path, what, folder, complete, strict))


def same_file(a, b):
    """True if paths ``a`` and ``b`` name one file (the same path, a symlink or a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_replaceable(path, what):
    """Refuse an existing output that the rename of :func:`atomic_output` must not replace: a device
    node, a named pipe or a socket (``--out /dev/null`` run as root would replace the system's
    /dev/null), or a symbolic link to one of them (``/dev/stdout``). A regular file, a symbolic link to
    one and a dangling link are replaced by the rename (the link itself, never written through)."""
    import stat

    for follow, kind in ((False, ""), (True, " (through a symbolic link)")):
        try:
            mode = (os.stat if follow else os.lstat)(path).st_mode
        except OSError:  # absent (or a dangling link): nothing is lost by the rename
            return
        if stat.S_ISLNK(mode):
            target = os.path.join(os.path.dirname(os.path.abspath(path)), os.readlink(path))
            if os.path.abspath(target).startswith("/proc/"):  # /dev/stdout, /dev/fd/N: a descriptor
                raise FairseqWeanError("{} {} is a link to a file descriptor ({}): give a file "
                                       "path".format(what, path, target))
            continue
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            name = ("a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
            raise FairseqWeanError(
                "{} {} is {}{}: an output is written to a new regular file that replaces it; give a "
                "file path".format(what, path, name, kind))
        if stat.S_ISDIR(mode):
            raise FairseqWeanError("{} {} is a directory{}: give a file path".format(what, path, kind))
        return


def check_output(path, inputs=(), what="--out", folder=None):
    """Refuse, before any work is done, an output that would destroy an input or cannot be written:
    the same file as an input, a directory, a device, pipe or socket (or a link to one), a missing or
    read-only directory. ``folder``: the output is a file the tool writes in that folder (a --save-dir,
    --out/data/text), not a path the user named: it must lie inside that folder, not behind a
    linked directory."""
    if folder is not None:
        _check_inside(path, folder, what)
    for given in inputs:
        if given is not None and given not in STDIN_NAMES and same_file(path, given):
            raise FairseqWeanError(
                "{} {} is also an input ({}): writing it would destroy that input; choose another "
                "output path".format(what, path, given)
            )
    if os.path.isdir(path):
        raise FairseqWeanError("{} {} is a directory: give a file path".format(what, path))
    _check_replaceable(path, what)
    check_resolvable(path, what)  # FOLDER/nodir/../NAME: one message for files and folders a tool makes
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise FairseqWeanError(
            "{} {}: the directory {} does not exist; create it first".format(what, path, parent)
        )
    if not os.access(parent, os.W_OK):
        raise FairseqWeanError("{} {}: the directory {} is not writable".format(what, path, parent))


REGULAR, LINK, FOLDER, NODE = "a regular file", "a symbolic link", "a directory", "a pipe, socket or device"


def node_kind(path, follow=False):
    """What is at ``path``, seen without opening it (a named pipe would block the opener): None (nothing
    there), ``REGULAR``, ``LINK`` (only with ``follow=False``), ``FOLDER`` or ``NODE``. The one look
    every tool takes at a file before it opens, writes or removes it; ``follow=True`` for a path the
    user named (a link to a file is that file; a dangling link is nothing). Other ``OSError``s pass."""
    import stat

    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except FileNotFoundError:
        return None
    return REGULAR if stat.S_ISREG(mode) else LINK if stat.S_ISLNK(mode) else FOLDER if stat.S_ISDIR(mode) \
        else NODE


def named_file_problem(path, noun="regular file"):
    """Why ``path``, a file the user named (links followed), is no regular file a tool can read, or None; seen
    without opening it (a named pipe would block the reader). ``noun``: what the file should be."""
    try:
        kind = node_kind(path, follow=True)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if kind is None:
        return "no such file"
    if kind == FOLDER:
        return "a directory, not a {}".format(noun)
    if kind != REGULAR:
        return "not a regular file (a named pipe, a socket or a device)" + (
            "" if noun == "regular file" else ", not a {}".format(noun))
    return None


def planted_kind(path):
    """What ``path`` is when it exists and is not a regular file, seen without following or opening
    it: ``LINK``, ``FOLDER`` or ``NODE``; None when it is absent or a regular file. The check before
    any work of a file a tool will write or read in a folder of its own (its writes and reads refuse
    the same, later)."""
    kind = node_kind(path)
    return None if kind == REGULAR else kind


def _check_inside(path, folder, what):
    folder = os.path.realpath(folder)
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if os.path.commonpath([parent, folder]) != folder:
        raise FairseqWeanError("{} {} is outside {} (through a symbolic link): refused".format(what, path, folder))


def makedirs_in_folder(path, folder, what="folder"):
    """``os.makedirs(path, exist_ok=True)`` for a folder a tool makes inside ``folder`` (its --out,
    --workdir): a symbolic link (or anything but a folder) on the way below ``folder`` is refused in
    one line before anything is made through it."""
    folder = os.path.abspath(folder)
    rel = os.path.relpath(os.path.abspath(path), folder)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise FairseqWeanError("{} {} is outside {}: refused".format(what, path, folder))
    os.makedirs(folder, exist_ok=True)
    current = folder
    for part in ([] if rel == os.curdir else rel.split(os.sep)):
        current = os.path.join(current, part)
        try:
            os.mkdir(current)
        except FileExistsError:
            # there already, or made meanwhile by another thread or process of the same tool (the
            # comparison runner's parallel runs share their runs/ folder): kept when it is a folder
            pass
        if os.path.islink(current) or not os.path.isdir(current):
            raise FairseqWeanError("{} {} is a symbolic link or not a folder: refused (a tool makes its own "
                                   "folders there)".format(what, current))
    return path


@contextlib.contextmanager
def atomic_output(path, inputs=(), what="--out", mode="w", folder=None):
    """Open ``path`` for writing through a temporary file that replaces it only on success.

    ``inputs`` are the paths the command reads: an output equal to one of them is refused.
    On any exception inside the ``with`` block the temporary file is removed and ``path`` is
    left as it was. What ``path`` was is checked again just before the rename: a device or pipe
    put there meanwhile is refused, not replaced. ``folder``: see :func:`check_output`.
    """
    check_output(path, inputs, what, folder)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        if "b" in mode:
            handle = os.fdopen(fd, mode)
        else:
            handle = os.fdopen(fd, mode, encoding="utf-8", newline="\n")
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())  # the data is on disk before the rename makes it the output
        # mkstemp makes the file private (0600); give it the mode a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        _check_replaceable(path, what)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_HELD_LOCKS = {}  # folder -> open lock file, held until the process exits (the OS then frees it)


def lock_folder(folder, what, holder):
    """Take the folder's lock for the rest of this process, or refuse (FairseqWeanError) while a live
    process holds it. ``fcntl.flock`` on ``FOLDER/.fairseq-wean.lock``: the OS releases it when its
    holder exits, however it exits (a crash, SIGKILL), so no stale lock outlives a run and no flag can
    take the lock from a live one. ``holder`` (e.g. "fairseq-train") is written into the file for the
    message another process gets. A file system without locks: no lock, no error."""
    import fcntl

    folder = os.path.abspath(folder)
    if folder in _HELD_LOCKS:
        return
    path = os.path.join(folder, ".fairseq-wean.lock")
    f = open_in_folder(path, "a+", folder, "the lock file")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        owner = f.read().strip() or "another process"
        f.close()
        raise FairseqWeanError("{} {} is in use by {}: two runs writing into one folder overwrite each other's "
                               "files; wait for it, or use another folder".format(what, folder, owner)) from None
    except OSError:
        f.close()
        return
    try:  # the holder's name is only for the other process's message: the lock is the flock
        f.seek(0)
        f.truncate()
        f.write("{} (pid {})\n".format(holder, os.getpid()))
        f.flush()
    except OSError:
        pass
    _HELD_LOCKS[folder] = f


def update_section(path, section, begin, end, what="--out"):
    """Put ``section`` between the markers ``begin`` and ``end`` of the text file ``path`` (appended
    when they are absent; text outside them is kept), through :func:`atomic_output`. The old file
    is read only as itself: a symbolic link, pipe or device at ``path`` is refused in one line
    (merging it would copy the link's target into the page, or hang), never read or written through."""
    old = ""
    kind = node_kind(path)
    if kind == LINK:
        raise FairseqWeanError("{} {} is a symbolic link: the section is merged into the file itself; give the "
                               "file's own path".format(what, path))
    check_output(path, (), what)
    if kind is not None:
        with open_in_folder(path, "r", what=what, named=True) as f:  # the user's page: a hard link is that page
            old = f.read()
    if begin in old and end in old:
        new = old[: old.index(begin)] + section + old[old.index(end) + len(end):]
    else:
        new = (old.rstrip() + "\n\n" if old.strip() else "") + section + "\n"
    with atomic_output(path, (), what) as f:
        f.write(new)


def unresolvable_folder(path):
    """The folder of ``path`` that does not exist (or is not a folder) and is followed by ``..``, as in
    FOLDER/nodir/../NAME, or None. The OS refuses such a path (ENOENT), but ``os.path.abspath`` drops
    ``nodir/..`` and ``os.makedirs`` makes the missing folder first, so a tool that normalizes or makes
    a folder output would write where the path does not lead."""
    parts = str(path).split(os.sep)
    for i, part in enumerate(parts):
        if part == os.pardir and i > 0:
            head = os.sep.join(parts[:i]) or os.sep
            if not os.path.isdir(head):
                return head
    return None


def check_resolvable(path, what):
    """One-line ``FairseqWeanError`` for an output path (a file or a folder a tool makes) through a missing
    folder followed by ``..`` (:func:`unresolvable_folder`), checked before any work and before anything
    is made or the path is normalized."""
    missing = unresolvable_folder(path)
    if missing is not None:
        raise FairseqWeanError("{} {}: the folder {} does not exist, so the path cannot be followed through its "
                               "'..'; give the path without it or create the folder first".format(what, path, missing))


# How a later command reads a path a tool hands it -> what the path must not hold, and why (examples/job_guard.py,
# fairseq-wean-compare --out, bench --workdir: folders whose paths become fairseq data folders and checkpoints).
PATH_RULES = {
    "fairseq-path": ((":", "fairseq splits a data folder and --path on ':' (shards; an ensemble's checkpoints)"),
                     ("${", "fairseq reads its options through OmegaConf, which takes '${' for an interpolation")),
    "comma-list": ((",", "the script joins paths in it into a comma list (--eval-refs; fairseq-preprocess's "
                         "--validpref)"),),
}


def path_problem(path, used_as, what="OUT"):
    """The one line for a ``path`` that a command reading it as each of ``used_as`` (keys of :data:`PATH_RULES`)
    would split or misread, or None. ``path`` is checked absolute, as it is handed on (a parent folder's name
    counts too)."""
    handed_on = os.path.abspath(path)
    for use in used_as:
        for text, why in PATH_RULES[use]:
            if text in handed_on:
                return "{} {} holds '{}': {}: choose another folder".format(what, handed_on, text, why)
    return None
