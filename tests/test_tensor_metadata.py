"""Every tensor a checkpoint declares must fit its storage, in both of torch.save's containers, before torch reads it;
and every pickle protocol torch.save writes loads.

``checkpoint_container`` scans the checkpoint's pickle with an unpickler that builds nothing and records each call of
torch's tensor-building functions (``_rebuild_tensor_v2`` ...): the storage offset, the size and the stride must be
non-negative ints of one length, a ``_v3`` dtype one torch knows, the tensor's last element inside the storage its
pickle declares (whose record size the zip check compares; torch compares the legacy one). A crafted field was a
``RuntimeError: numel: integer multiplication overflow`` traceback in the zip container (the legacy one was the
damaged line only through torch's error): now the damaged line from both, torch never reached. A checkpoint written
with ``torch.save(..., pickle_protocol=4 or 5)`` (FRAME, opcode 149, which torch's weights-only unpickler lacks) was
refused as calling "a non-allow-listed object": it loads, through the same allow-list.
"""
import io
import pickletools
import re
import struct

import pytest
from conftest import planted_checkpoint_refusal
import torch

from fairseq_wean import checkpoint_safety
from fairseq_wean.errors import FairseqWeanError
from test_checkpoint_records import DAMAGED, ROUTES, torch_never_reads  # noqa: F401  (a fixture)
from test_crafted_checkpoints import Exploit, plain_state

OFFSET, SIZE, STRIDE, NUMEL = 1000, 300, 301, 123457  # distinct 2-byte ints (BININT2) in the pickle; NUMEL: 4 bytes
WHERE = "its pickle declares a tensor "


def strided_state(dtype=torch.float32):
    """One tensor of ``SIZE`` elements ``STRIDE`` apart from ``OFFSET`` over a storage of ``NUMEL`` elements."""
    base = torch.zeros(NUMEL, dtype=dtype)
    return {"model": {"w": base.as_strided((SIZE,), (STRIDE,), OFFSET)}, "args": None, "extra_state": {"ema": {}}}


def replaced(body, value, new, follow=None):
    """The pickle ``body`` (protocol 2: no frames) with the one BININT2 ``value`` replaced by the bytes ``new``
    (``follow``: and the opcode after it by that byte)."""
    ops = [(op, arg, pos) for op, arg, pos in pickletools.genops(body)]
    found = [i for i, (op, arg, _pos) in enumerate(ops) if op.name == "BININT2" and arg == value]
    assert len(found) == 1, found
    position = ops[found[0]][2]
    end = position + 3 + (1 if follow is not None else 0)
    return body[:position] + new + (follow or b"") + body[end:]


def _int(value):
    return b"J" + struct.pack("<i", value)


# field -> (value the size/stride/offset gets as pickle bytes, the detail of the damaged line)
FIELDS = {
    "size-negative": (SIZE, _int(-5), None, WHERE + "of size (-5,)"),
    "size-past-the-storage": (SIZE, _int(500), None, WHERE + "of size (500,), stride (301,), offset 1000, reaching "
                              "element 151199 of a storage of 493828 bytes"),
    "size-2^31-1": (SIZE, _int(2 ** 31 - 1), None, WHERE + "of size (2147483647,), stride (301,)"),
    "size-a-float": (SIZE, b"G" + struct.pack(">d", 300.0), None, WHERE + "of size (300.0,)"),
    "size-two-dimensions-stride-one": (SIZE, b"M" + struct.pack("<H", SIZE) + b"K\x01", b"\x86",
                                       WHERE + "of size (300, 1) and stride (301,) (another number of dimensions)"),
    "stride-negative": (STRIDE, _int(-1), None, WHERE + "of stride (-1,)"),
    "offset-negative": (OFFSET, _int(-1), None, WHERE + "at storage offset -1"),
    "offset-past-the-storage": (OFFSET, _int(NUMEL), None, WHERE + "of size (300,), stride (301,), offset 123457"),
}


def crafted(zip_format, field):
    """torch.save's bytes of :func:`strided_state` in ``zip_format`` with ``field`` of the tensor crafted (the storage
    and its record intact)."""
    import zipfile

    from test_checkpoint_records import rewritten

    value, new, follow, _detail = FIELDS[field]
    buffer = io.BytesIO()
    torch.save(strided_state(), buffer, _use_new_zipfile_serialization=zip_format)
    data = buffer.getvalue()
    if zip_format:
        return rewritten(data, lambda n, b: replaced(b, value, new, follow) if n.endswith("/data.pkl") else b)
    # legacy: magic number, protocol, system info, then the checkpoint's pickle (then the storages)
    stream = io.BytesIO(data)
    for _ in range(3):
        torch.serialization.pickle.load(stream)
    start = stream.tell()
    assert zipfile.is_zipfile(io.BytesIO(data)) is False
    return data[:start] + replaced(data[start:], value, new, follow)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.__name__.strip("_"))
@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_a_tensor_that_does_not_fit_its_storage_is_refused_before_torch_reads_it(data_bin, tmp_path, container, field,
                                                                                 route, torch_never_reads):
    """(container) x (crafted field) x (every loading route: safe_load, fairseq's load_checkpoint_to_cpu behind
    fairseq-generate --path, the EMA loader, both hubs): the one damaged line naming the file and the field, torch
    never reached, the file unchanged."""
    import fairseq_wean  # noqa: F401  (installs the checkpoint checks)

    path, message = planted_checkpoint_refusal(route, crafted(container == "zip", field), data_bin, tmp_path)
    assert re.match(DAMAGED.format(re.escape(str(path)), re.escape(FIELDS[field][3])), message), message


@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_the_uncrafted_strided_tensor_loads(tmp_path, container):
    """The reference of the crafted files: the same tensor untouched loads, with its values."""
    import fairseq_wean  # noqa: F401

    buffer = io.BytesIO()
    torch.save(strided_state(), buffer, _use_new_zipfile_serialization=container == "zip")
    path = tmp_path / "strided.pt"
    path.write_bytes(buffer.getvalue())
    loaded = checkpoint_safety.safe_load(str(path))["model"]["w"]
    assert loaded.shape == (SIZE,) and loaded.stride() == (STRIDE,) and loaded.storage_offset() == OFFSET


def legit_tensors(zip_format):
    """What torch.save writes for the tensors a checkpoint may hold: views, shared storages, transposes, every dtype,
    empty and expanded tensors, a Parameter, quantized and sparse ones."""
    base = torch.arange(12.0)
    found = {"view": base[2:8], "shared": base, "transposed": base.view(3, 4).t(), "tail": base[7:],
             "non-contiguous": torch.arange(20.0).view(4, 5)[:, ::2], "scalar": torch.tensor(3.0),
             "expanded": torch.ones(1).expand(10 ** 6, 10 ** 6), "empty": torch.empty(0),
             "empty-wide": torch.empty(0, 10 ** 9), "parameter": torch.nn.Parameter(torch.ones(3))}
    allowed = checkpoint_safety.allowed_global_names()  # torch 1.13's weights-only list has neither
    if "torch._utils._rebuild_qtensor" in allowed:
        found["quantized"] = torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.qint8)
    if "torch._utils._rebuild_sparse_tensor" in allowed:
        found["sparse"] = torch.eye(3).to_sparse()
    for dtype in (torch.float16, torch.bfloat16, torch.complex64, torch.bool, torch.int8, torch.int64):
        found[str(dtype)] = torch.ones(3, dtype=dtype)
    if zip_format and hasattr(torch, "uint16"):  # _rebuild_tensor_v3 (a dtype of its own); legacy: torch can't read
        found["uint16"] = torch.zeros(3, dtype=torch.uint16)
    return found


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_every_pickle_protocol_of_torch_save_loads(tmp_path, container, protocol):
    """A legit checkpoint of every tensor kind, written with each pickle protocol torch.save takes: loads with its
    values (protocols 4 and 5 frame the pickle: opcode 149, which torch's weights-only unpickler lacks)."""
    import fairseq_wean  # noqa: F401

    state = dict(plain_state(), tensors=legit_tensors(container == "zip"))
    buffer = io.BytesIO()
    torch.save(state, buffer, pickle_protocol=protocol, _use_new_zipfile_serialization=container == "zip")
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(buffer.getvalue())
    loaded = checkpoint_safety.safe_load(str(path))
    assert loaded["args"] == state["args"] and loaded["optimizer_history"] == state["optimizer_history"]
    for name, tensor in state["tensors"].items():
        got = loaded["tensors"][name]
        assert got.dtype == tensor.dtype and got.shape == tensor.shape and got.stride() == tensor.stride(), name
        if not tensor.is_sparse and not tensor.is_quantized and tensor.numel() < 100:
            assert torch.equal(got, tensor), name


@pytest.mark.parametrize("protocol", [4, 5])
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_a_crafted_checkpoint_of_protocol_4_or_5_is_still_refused(tmp_path, container, protocol):
    """Protocols 4 and 5 load through the allow-list too: a global off it is refused by name, nothing runs."""
    import fairseq_wean  # noqa: F401

    marker = tmp_path / "MARKER"
    buffer = io.BytesIO()
    torch.save(dict(plain_state(), args=Exploit(marker)), buffer, pickle_protocol=protocol,
               _use_new_zipfile_serialization=container == "zip")
    path = tmp_path / "evil.pt"
    path.write_bytes(buffer.getvalue())
    from fairseq import checkpoint_utils

    with pytest.raises(FairseqWeanError, match=r"^refusing to load checkpoint .*: its pickle calls (posix|os)\.system, "):
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert not marker.exists()


def test_an_opcode_torchs_unpickler_lacks_is_named():
    """Where torch's weights-only unpickler refuses an opcode, the line names the opcode, not a global."""
    error = checkpoint_safety.checkpoint_error(
        "x.pt", __import__("pickle").UnpicklingError("Weights only load failed. ... Unsupported operand 149"))
    assert str(error) == ("checkpoint x.pt: its pickle uses opcode 149 (FRAME), which torch's weights-only unpickler "
                          "does not read; nothing was loaded")
