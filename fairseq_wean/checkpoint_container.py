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
* a zip archive whose storage records do not match its pickle (:func:`_records_problem`): torch 1.13
  builds a tensor over a record shorter than the size the pickle declares without checking it (its
  weights then read process memory past the record: wrong results, or a crash), torch 2.x raises a
  traceback. The pickle's storage declarations are read by an unpickler that builds nothing
  (:class:`_ScanUnpickler`: every global an inert stand-in, nothing imported or called); each
  declared ``numel x element size`` must be the record's size, every record must be declared;
* a member torch.save does not write as it is (:func:`_saved_members_problem`, :data:`SAVED_MEMBERS`): one outside
  the archive's folder, a name it never writes, a ``byteorder`` but ``little`` (torch 2.x byte-swaps every weight of
  a ``big`` one, torch 1.13 ignores the member: two models from one file), a ``version`` it never writes;
* a member ``constants.pkl``, which makes torch read the file as a TorchScript archive
  (``torch.jit.load``): a real one (it has ``code/``) or a checkpoint with that member added;
* any other bytes (not a checkpoint torch can read: the damaged-file line).

* a tensor that does not fit its storage, in both containers (:func:`_tensor_problem`): the storage offset, size and
  stride of every call of torch's tensor-building functions the scan records (``_rebuild_tensor_v2`` ...) must be
  non-negative ints of one length, a ``_v3`` dtype one torch knows, its last element inside the declared storage
  (a negative size was torch's ``numel: integer multiplication overflow`` traceback in a zip).

The storage records of torch's legacy (non-zip) format are left to torch: it reads each storage's size from the file
and checks it against the declared one, and stops at the file's end ("unexpected EOF"); its pickle's tensors are
checked as the zip's (:func:`_legacy_problem`).

Also the zip checks after a load (:func:`archive_problem`: every member's CRC; torch checks none), and the one reader
of a checkpoint's stored configuration before fairseq loads it (:func:`stored_configuration`: nothing run, no weight
read).
"""
import io
import pickle
import re
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
    compressed (by its central directory entry or its local header) or runs past the end of the file, or
    whose storage records do not match its pickle (:func:`_records_problem`)."""
    try:
        with zipfile.ZipFile(f) as archive:
            members = archive.infolist()
            problem = _members_problem(f, size, members) or _records_problem(archive, members)
            return problem or _saved_members_problem(archive, members)
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, NotImplementedError) as exc:
        return "damaged", "not a complete zip archive: {}".format(exc)


def _members_problem(f, size, members):
    """The container problems of the zip's ``members`` (see :func:`_zip_problem`), or None."""
    import struct

    if not members:
        return "damaged", "an empty zip archive"
    prefix = members[0].filename.split("/")[0] + "/"  # torch's reader: the first member's folder
    names = [info.filename for info in members]
    if prefix + "constants.pkl" in names:  # torch.load's own test (_is_torchscript_zip)
        # torch.jit.save writes code/ (compressed: checked first); without it, a member added to a checkpoint
        return "torchscript", None if any(n.startswith(prefix + "code/") for n in names) else prefix + "constants.pkl"
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


# What torch.save writes into its zip's one folder besides ``data.pkl`` and the storage records ``data/KEY``
# (torch 1.13: ``version`` alone; torch >= 2.1 the others too), each torch reads: name -> (the bytes it may hold,
# what torch.save writes). torch 2.x raises a traceback for an unknown ``byteorder`` (torch 1.13 ignores the member:
# a parser differential) and byte-swaps every weight for ``big`` (torch 1.13 does not: one file, two models), a
# traceback for a ``version`` outside 1..its maximum or a ``.storage_alignment`` that is no integer. Any other member
# is one torch.save never writes (a ``.data/version`` would replace ``version``, a ``constants.pkl`` makes it a
# TorchScript archive).
SAVED_MEMBERS = {"version": (rb"[1-3]\n?", "'3'"), "byteorder": (rb"little", "'little'"),
                 ".format_version": (rb"1", "'1'"), ".storage_alignment": (rb"[1-9][0-9]{0,5}", "a whole number (64)"),
                 ".data/serialization_id": (rb"[0-9]{1,64}", "decimal digits")}
BIG_ENDIAN = ("torch >= 2.1 byte-swaps every weight of such a file and torch 1.13 ignores the member, so it is two "
              "different models on the torches fairseq-wean supports; torch.save writes 'little' on every machine "
              "they run on: re-save the weights with torch.save there")


def _saved_members_problem(archive, members):
    """``("member", why)`` for a member of the zip that torch.save does not write as it is (:data:`SAVED_MEMBERS`):
    outside the folder of the first member (torch refuses the file), a name torch.save never writes, a value it
    never writes, or no ``version`` (torch refuses the file); else None."""
    first = members[0].filename
    if "/" not in first:
        return "member", "its first member {} is in no folder (torch.save writes every member into one)".format(first)
    prefix = first.split("/")[0] + "/"
    for info in members:
        name, rest = info.filename, info.filename[len(prefix):]
        if not name.startswith(prefix):
            return "member", "its member {} lies outside the archive's folder {} (torch.save writes every member " \
                             "into one; torch refuses the file)".format(name, prefix)
        if rest == "data.pkl" or re.fullmatch(r"data/[^/]+", rest):
            continue  # the pickle and the storage records: _records_problem
        if rest not in SAVED_MEMBERS:
            return "member", "it holds a member {}, which torch.save never writes (it writes data.pkl, data/KEY, " \
                             "{})".format(name, ", ".join(SAVED_MEMBERS))
        pattern, written = SAVED_MEMBERS[rest]
        value = archive.read(info) if info.file_size <= 64 else b"(%d bytes)" % info.file_size
        if rest == "byteorder" and value == b"big":
            return "member", "its member {} is 'big': {}".format(name, BIG_ENDIAN)
        if not re.fullmatch(pattern, value):
            return "member", "its member {} is {!r}, where torch.save writes {}".format(
                name, value.decode("utf-8", "replace").rstrip("\n")[:40], written)
    if prefix + "version" not in {info.filename for info in members}:
        return "member", "it has no member {}version, which torch.save always writes (torch refuses the file " \
                         "without it)".format(prefix)
    return None


class _Inert:
    """What :class:`_ScanUnpickler` makes of every global, and of every call or build of one: nothing."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Inert()

    def __setstate__(self, state):
        pass

    def append(self, item):
        pass

    def extend(self, items):
        pass

    def add(self, item):
        pass

    def __setitem__(self, key, value):
        pass


# torch's functions that build a tensor over a storage: (storage, storage_offset, size, stride, ...); _v3's dtype is
# its 7th argument (torch._utils); _rebuild_from_type_v2(func, type, args, state) calls one of them with args
REBUILDS = {("torch._utils", "_rebuild_tensor"): None, ("torch._utils", "_rebuild_tensor_v2"): None,
            ("torch._utils", "_rebuild_tensor_v3"): 6, ("torch._utils", "_rebuild_qtensor"): None}
FROM_TYPE = ("torch._tensor", "_rebuild_from_type_v2")


class _Storage(_Inert):
    """A storage the pickle declares (its persistent id): type (module, name), record key, element count."""

    def __init__(self, type_name, key, numel):
        self.type_name, self.key, self.numel = type_name, key, numel


class _ScanUnpickler(pickle.Unpickler):
    """Reads a checkpoint's pickle for its storage and tensor declarations only: every global is an inert class
    (nothing imported, nothing called: REDUCE, NEWOBJ and BUILD make inert objects) and every persistent
    id is recorded (``storages``: (module, name) of its storage type, key, numel), never loaded; a call of a
    tensor-building global (:data:`REBUILDS`) is recorded with its arguments (``tensors``: (name, args))."""

    def __init__(self, data):
        super().__init__(io.BytesIO(data) if isinstance(data, bytes) else data, encoding="utf-8")  # torch's default
        self.storages, self.tensors, self._globals = [], [], {}

    def find_class(self, module, name):
        key = (module, name)
        if key not in self._globals:
            tensors = self.tensors

            def record(cls, *args, **kwargs):
                built = object.__new__(cls)
                if cls.pickled_name in REBUILDS:
                    tensors.append((cls.pickled_name, args))
                    built.rebuild_args = args  # (storage, offset, size, stride, ...): a tensor's declared shape
                elif cls.pickled_name == FROM_TYPE and len(args) > 2 and isinstance(args[2], tuple):
                    tensors.append((getattr(args[0], "pickled_name", None), args[2]))
                return built

            self._globals[key] = type("Global", (_Inert,), {"pickled_name": key, "__new__": record})
        return self._globals[key]

    def persistent_load(self, pid):
        # zip: ('storage', type, key, location, numel); legacy: the same and its view's metadata
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] in ("storage", b"storage")):
            raise pickle.UnpicklingError("a persistent id that is no storage (a {})".format(type(pid).__name__))
        self.storages.append((getattr(pid[1], "pickled_name", None), pid[2], pid[4]))
        return _Storage(getattr(pid[1], "pickled_name", None), pid[2], pid[4])


def _element_size(type_name):
    """Bytes per element of the storage type ``(module, name)`` as torch's reader resolves it (any name
    holding "Storage" is looked up by name; ``UntypedStorage``: bytes), or None when torch knows none."""
    import torch

    module, name = type_name if isinstance(type_name, tuple) else (None, None)
    if not isinstance(name, str) or "Storage" not in name:
        return None
    try:
        dtype = torch.serialization._get_dtype_from_pickle_storage_type(name)
    except KeyError:
        if name != "UntypedStorage" or module not in ("torch", "torch.storage"):
            return None  # torch's unpickler refuses it (a global off the allow-list)
        dtype = torch.uint8
    return torch._utils._element_size(dtype)


def _records_problem(archive, members):
    """``("damaged", why)`` unless every storage the pickle (``PREFIX/data.pkl``) declares has its record
    ``PREFIX/data/KEY`` of exactly ``numel x element size`` bytes and every record is declared, checked
    before torch builds a tensor over a record (torch 1.13 never compares the sizes). Member names are
    unique (readers differ in which of two they take)."""
    prefix = members[0].filename.split("/")[0] + "/"
    sizes = {}
    for info in members:
        if info.filename in sizes:
            return "damaged", "member {} appears twice".format(info.filename)
        sizes[info.filename] = info.file_size
    if prefix + "data.pkl" not in sizes:
        return "damaged", "no member {}data.pkl (the checkpoint's pickle)".format(prefix)
    scan = _ScanUnpickler(archive.read(prefix + "data.pkl"))
    try:
        scan.load()
    except Exception as exc:  # a pickle that no unpickler reads: torch's would fail on it too
        return "damaged", "{}data.pkl is no pickle torch can read: {}: {}".format(
            prefix, type(exc).__name__, (str(exc).splitlines() or [""])[0][:120])
    used = set()
    for type_name, key, numel in scan.storages:
        if type(key) is not str:  # torch.save's keys; torch's record name f"data/{key}" of another is none
            return "damaged", "its pickle names a storage by a {}, not by a record name".format(type(key).__name__)
        element = _element_size(type_name)
        name = "{}data/{}".format(prefix, key)  # torch's record name
        used.add(name)
        if type_name is None:  # torch would ask its .dtype
            return "damaged", "its pickle gives storage {} no storage type".format(key)[:200]
        if element is None:
            continue  # no storage type torch knows: its own unpickler refuses the global
        if type(numel) is not int or not 0 <= numel < 2 ** 63:
            return "damaged", "its pickle declares an impossible element count ({}) for storage {}".format(
                type(numel).__name__ if type(numel) is not int else "negative" if numel < 0 else "over 2^63", key)[:200]
        if name not in sizes:
            return "damaged", "no record {} for the storage of {} bytes its pickle declares".format(
                name, numel * element)
        if sizes[name] != numel * element:
            return "damaged", "record {} holds {} bytes, its pickle declares {} ({} elements of {} bytes)".format(
                name, sizes[name], numel * element, numel, element)
    unused = sorted(name for name in sizes if name.startswith(prefix + "data/") and name not in used)
    if unused:
        return "damaged", "record {} is used by no storage of its pickle".format(unused[0])
    return _tensors_problem(scan)


def _int(value):
    return type(value) is int


def _tensor_problem(name, args):
    """Why the tensor a rebuild function ``name`` (:data:`REBUILDS`) would build from ``args`` does not fit its
    storage, or None: the offset, size and stride must be non-negative ints (size and stride of one length, at
    most 2^63 elements), a ``_v3`` dtype one torch knows, and its last element inside the declared storage."""
    import torch

    storage = args[0] if args else None
    if not isinstance(storage, _Storage):
        return None  # no storage of this file (its own global refused by torch's unpickler)
    if len(args) < 4:
        return "its pickle builds a tensor from {} arguments".format(len(args))
    offset, size, stride = args[1:4]
    where = "a tensor"
    if not _int(offset) or offset < 0:
        return "its pickle declares {} at storage offset {!r}".format(where, offset)
    for what, values in (("size", size), ("stride", stride)):
        if not isinstance(values, tuple) or not all(_int(v) and 0 <= v < 2 ** 63 for v in values):
            return "its pickle declares {} of {} {!r}".format(where, what, values if isinstance(
                values, tuple) else type(values).__name__)
    if len(size) != len(stride):
        return "its pickle declares {} of size {} and stride {} (another number of dimensions)".format(
            where, size, stride)
    numel = 1
    for value in size:
        numel *= value
    if numel >= 2 ** 63:
        return "its pickle declares {} of size {} (over 2^63 elements)".format(where, size)
    element = _element_size(storage.type_name)
    index = REBUILDS.get(name)
    if index is not None and len(args) > index:
        dtype = getattr(args[index], "pickled_name", None)
        dtype = getattr(torch, dtype[1], None) if dtype and dtype[0] == "torch" else None
        if not isinstance(dtype, torch.dtype):
            return "its pickle declares {} of no torch dtype ({})".format(where, type(args[index]).__name__)
        tensor_element = torch._utils._element_size(dtype)
    else:
        tensor_element = element
    if element is None or not _int(storage.numel) or numel == 0:
        return None  # no storage type torch knows (its unpickler refuses it), or nothing read
    last = offset + sum((s - 1) * t for s, t in zip(size, stride))
    if (last + 1) * tensor_element > storage.numel * element:
        return "its pickle declares {} of size {}, stride {}, offset {}, reaching element {} of a storage of {} " \
               "bytes".format(where, size, stride, offset, last, storage.numel * element)
    return None


def _tensors_problem(scan):
    """``("damaged", why)`` for the first tensor the scanned pickle builds that does not fit its storage."""
    for name, args in scan.tensors:
        problem = _tensor_problem(name, args)
        if problem is not None:
            return "damaged", problem[:300]
    return None


def _legacy_problem(f):
    """``("damaged", why)`` when the tensors of torch's legacy format (its pickles: magic number, protocol,
    system info, then the checkpoint) do not fit their declared storages (:func:`_tensor_problem`; torch
    checks each storage's size against the file itself), else None; a stream the scan cannot read is left to
    torch (its own error, the damaged line)."""
    try:
        for _ in range(3):
            _ScanUnpickler(f).load()
        scan = _ScanUnpickler(f)
        scan.load()
    except Exception:  # noqa: B902  (not torch's format: torch's reader refuses it in its own words)
        return None
    return _tensors_problem(scan)


UNSUPPORTED_OPCODE = re.compile(r"Unsupported operand (\d+)")  # torch's weights-only unpickler's words


def opcode_problem(message):
    """For an error ``message`` of torch's weights-only unpickler refusing a pickle opcode (not a global): the opcode
    named (``its pickle uses opcode 149 (FRAME), ...``), else None."""
    import pickletools

    found = UNSUPPORTED_OPCODE.search(message)
    if found is None:
        return None
    code = int(found.group(1))
    name = next((o.name for o in pickletools.opcodes if 0 <= code < 256 and o.code == chr(code)), "unknown")
    return "its pickle uses opcode {} ({}), which torch's weights-only unpickler does not read".format(code, name)


def container_problem(f):
    """``(kind, detail)`` when the open binary file ``f`` is no container torch.save writes (see the
    module docstring), else None; ``kind``: ``"tar"``, ``"compressed"`` (detail: member, method),
    ``"damaged"``, ``"member"`` (detail: why, :func:`_saved_members_problem`) or ``"torchscript"`` (detail: None
    for a torch.jit.save archive, else the member ``constants.pkl`` that makes torch take it for one). Reads
    headers and the pickle (never run, see :class:`_ScanUnpickler`), no tensor data; ``f`` is back at its start."""
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
            return _legacy_problem(f)
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
    if kind == "torchscript" and detail is None:
        raise torchscript_error(path)
    if kind == "torchscript":
        raise FairseqWeanError(
            "refusing to load checkpoint {}: it holds a member {}, which torch.save never writes and which makes "
            "torch read the file as a TorchScript archive (torch.jit.load); nothing was read".format(path, detail))
    if kind == "member":
        raise FairseqWeanError("refusing to load checkpoint {}: {}; nothing was read".format(path, detail))
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


def refused_error(path, what):
    return FairseqWeanError(
        "refusing to load checkpoint {}: its pickle calls {}, which is not on fairseq-wean's "
        "allow-list of checkpoint classes (see docs/troubleshooting.md, 'Safe checkpoints'); only load it "
        "with weights_only=False if you trust its source".format(path, what)
    )


def damaged_error(path, problem):
    return FairseqWeanError(
        "checkpoint {} is truncated or corrupted ({}); use an earlier checkpoint, e.g. "
        "checkpoint_best.pt or checkpoint_EPOCH_UPDATES.pt in the same folder".format(path, problem)
    )


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


INERT = _Inert  # what an unbuilt global or tensor of :func:`stored_configuration` is


class _ConfigUnpickler(_ScanUnpickler):
    """``_ScanUnpickler`` (nothing of torch built, storages never loaded) that builds the allow-listed plain
    classes a stored configuration is made of (``argparse.Namespace``, omegaconf containers, ...)."""

    def __init__(self, data, allowed):
        super().__init__(data)
        self._allowed = allowed

    def find_class(self, module, name):
        if "{}.{}".format(module, name) in self._allowed and not module.startswith("torch"):
            return pickle.Unpickler.find_class(self, module, name)  # the allow-list's plain class itself
        return super().find_class(module, name)  # an inert stand-in


def stored_configuration(path):
    """The checkpoint ``path``'s top-level dict with its stored configuration, read without running anything and
    without reading the weights: the zip's pickle only, every global on ``checkpoint_safety``'s allow-list built,
    any other one and every tensor an inert stand-in (:data:`INERT`); torch's legacy format through
    ``checkpoint_safety.safe_load``. None when it cannot be read so (the loaders then give their own line). The one
    reader of a checkpoint's stored configuration before fairseq loads it."""
    from fairseq_wean.checkpoint_safety import allowed_global_names, safe_load

    try:
        with open(path, "rb") as f:
            if container_problem(f) is not None:
                return None
            if f.read(4) != b"PK\x03\x04":
                return safe_load(f, map_location="cpu")  # torch's legacy format: no pickle-only reading
            with zipfile.ZipFile(f) as archive:
                prefix = archive.infolist()[0].filename.split("/")[0] + "/"
                state = _ConfigUnpickler(archive.read(prefix + "data.pkl"), allowed_global_names()).load()
    except Exception:  # unreadable: the loader's own error names it
        return None
    return state if isinstance(state, dict) else None
