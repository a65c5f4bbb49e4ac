"""What a checkpoint file may be before torch reads it (used by ``checkpoint_safety.safe_load``).

torch.save writes one of two containers: a zip archive whose members are stored uncompressed
(torch >= 1.6) or its legacy pickle stream, which begins with the pickled magic number. Anything
else is refused before torch sees the file (:func:`container_problem`), on every torch and through
every loader (``safe_load`` is the ``torch.load`` of fairseq's checkpoint reading):

* a tar archive (torch's oldest format): torch 1.13 tries it first and extracts its ``storages`` and
  ``tensors`` members into a temporary folder before any pickle is read, so a member that is a named
  pipe blocked the loader forever and a symbolic link member made it open and read any file it named;
* a zip member compressed with DEFLATE, bzip2 or LZMA: torch's reader inflates it in memory, so a
  file of 530 KB asked for 700 MB (a decompression bomb); torch.save never compresses a member. Only
  the central directory and each member's local header are read (nothing is decompressed), and a
  stored member must fit in the file;
* any other bytes (not a checkpoint torch can read: the damaged-file line).

Also the zip checks after a load (:func:`archive_problem`: every member's CRC; torch checks none).
"""
import pickle
import tarfile
import zipfile

from fairseq_wean.errors import FairseqWeanError

ZIP_START = b"PK\x03\x04"  # what torch looks at to choose its zip reader
LEGACY_MAGIC_NUMBER = 0x1950a86a20f9469cfc6c  # torch.serialization.MAGIC_NUMBER
# the first pickle of torch's legacy format, as torch.save writes it with any pickle protocol
LEGACY_STARTS = tuple(pickle.dumps(LEGACY_MAGIC_NUMBER, protocol=p) for p in range(pickle.HIGHEST_PROTOCOL + 1))
COMPRESSION_NAMES = {zipfile.ZIP_DEFLATED: "DEFLATE", zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA"}


def _is_tar(f):
    """Whether torch 1.13's legacy reader would take ``f`` for a tar archive (``tarfile.open(mode="r:")``
    reads its first header only; nothing is extracted)."""
    f.seek(0)
    try:
        tarfile.open(fileobj=f, mode="r:").close()
        return True
    except (tarfile.TarError, EOFError, ValueError, OSError):
        return False
    finally:
        f.seek(0)


def _zip_problem(f, size):
    """Why the zip archive ``f`` (``size`` bytes) is not one torch.save writes, or None: a member that is
    compressed (by its central directory entry or its local header) or runs past the end of the file."""
    import struct

    try:
        with zipfile.ZipFile(f) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, NotImplementedError) as exc:
        return "damaged", "not a complete zip archive: {}".format(exc)
    if any(info.filename.split("/")[-1] == "constants.pkl" for info in members):
        return "torchscript", None  # torch.load's own test (_is_torchscript_zip): torch.jit.save compresses code
    for info in members:
        if info.compress_type != zipfile.ZIP_STORED:
            return "compressed", (info.filename, COMPRESSION_NAMES.get(info.compress_type, "method {}".format(
                info.compress_type)))
        f.seek(info.header_offset)
        header = f.read(30)
        if len(header) < 30 or header[:4] != ZIP_START:
            return "damaged", "no local header for member {}".format(info.filename)
        method = struct.unpack("<H", header[8:10])[0]
        if method != zipfile.ZIP_STORED:
            return "compressed", (info.filename, COMPRESSION_NAMES.get(method, "method {}".format(method)))
        if info.file_size != info.compress_size or info.header_offset + info.compress_size > size:
            return "damaged", "member {} claims {} bytes, more than the file holds".format(info.filename, info.file_size)
    return None


def container_problem(f):
    """``(kind, detail)`` when the open binary file ``f`` is no container torch.save writes (see the
    module docstring), else None; ``kind``: ``"tar"``, ``"compressed"`` (detail: member, method) or
    ``"damaged"`` or ``"torchscript"`` (a torch.jit.save archive). Reads headers only; ``f`` is back at its start."""
    f.seek(0, 2)
    size = f.tell()
    f.seek(0)
    start = f.read(64)
    f.seek(0)
    try:
        if _is_tar(f):  # torch 1.13 tries the tar reader first, whatever the file begins with
            return "tar", None
        if start.startswith(ZIP_START):
            return _zip_problem(f, size)
        if start.startswith(LEGACY_STARTS):
            return None
        return "damaged", "not a checkpoint torch can read: neither a zip archive nor torch's legacy pickle stream"
    finally:
        f.seek(0)


def check_container(f, path, damaged_error, torchscript_error):
    """One line (``FairseqWeanError``) naming ``path`` for a :func:`container_problem` of ``f``, before torch
    reads it; ``damaged_error(path, problem)``: the line of a file that is no checkpoint;
    ``torchscript_error(path)``: that of a TorchScript archive."""
    found = container_problem(f)
    if found is None:
        return
    kind, detail = found
    if kind == "torchscript":
        raise torchscript_error(path)
    if kind == "tar":
        raise FairseqWeanError(
            "refusing to load checkpoint {}: it is a tar archive (torch's oldest format, whose members torch "
            "unpacks to disk before reading anything; fairseq never writes one); nothing was read".format(path))
    if kind == "compressed":
        raise FairseqWeanError(
            "refusing to load checkpoint {}: its member {} is {}-compressed, and torch.save stores every member "
            "uncompressed (a compressed member can expand without bound in memory); nothing was read".format(
                path, *detail))
    raise damaged_error(path, detail)


def starts_as_zip(path):
    """What torch asks to choose its reader: does the file begin with a zip entry?"""
    try:
        with open(path, "rb") as f:
            return f.read(4) == ZIP_START
    except OSError:
        return False


def archive_problem(path, require_zip=True):
    """None if PATH is a zip archive (torch's format since 1.6) whose members pass their CRC checks."""
    if not require_zip and not starts_as_zip(path):
        return None  # torch read it as its legacy format
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except FileNotFoundError:
        return None
    except zipfile.BadZipFile as exc:
        return "not a complete zip archive: {}".format(exc)
    except (OSError, EOFError, ValueError, RuntimeError) as exc:
        return "unreadable zip archive: {}: {}".format(type(exc).__name__, exc)
    return None if bad is None else "CRC check failed for {}".format(bad)
