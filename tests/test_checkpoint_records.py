"""A checkpoint's storage records must be the sizes its pickle declares, checked before torch reads the file.

torch 1.13 builds a tensor over a zip record shorter than the ``numel x element size`` its pickle
declares without comparing them: the weights then read process memory past the record (wrong
translations and scores, NaN training, SIGSEGV); torch 2.x raises a ``record size`` traceback.
``checkpoint_container`` reads the pickle's storage declarations with an unpickler that builds
nothing and compares every record with them, on every loading route (``safe_load``), before torch
sees the file: one "truncated or corrupted" line. torch's legacy (non-zip) format checks each
storage's size itself, torch 1.13 and 2.x refuse a tensor larger than its storage
(``test_what_torch_checks_itself_is_the_damaged_line``).
"""
import io
import pickle
import pickletools
import re
import shutil
import struct
import zipfile

import pytest
import torch

from conftest import USER_DIR
from fairseq_wean import checkpoint_safety
from fairseq_wean.errors import FairseqWeanError
from test_crafted_checkpoints import rezipped, saved, train_tiny

DAMAGED = r"^checkpoint {} is truncated or corrupted \({}.*\); use an earlier checkpoint, e\.g\. checkpoint_best\.pt .*$"
# every storage type the plugin's models and their training state save (fp16/bf16 weights, int64
# buffers and counters, bool and uint8 masks, int32 indices, fp64 meters)
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64,
          "int32": torch.int32, "bool": torch.bool, "uint8": torch.uint8, "float64": torch.float64}


def dtype_state():
    """One tensor of each DTYPES, in its own storage ``archive/data/<index>`` (torch.save numbers them in order)."""
    model = {name: torch.arange(5).to(dtype) for name, dtype in DTYPES.items()}
    return {"model": model, "args": None, "cfg": None, "last_optimizer_state": None,
            "extra_state": {"epoch": 1, "ema": {"w": torch.arange(3.0)}},
            "optimizer_history": [{"num_updates": 7, "best_loss": 2.5, "lr_scheduler_state": {"best": 2.5}}]}


def record_of(data, dtype_name):
    """The zip member holding the storage of tensor ``dtype_name`` of :func:`dtype_state`."""
    return "archive/data/{}".format(list(DTYPES).index(dtype_name))


def rewritten(data, change):
    """The zip DATA with each member's bytes passed through ``change(name, body)`` (None: left out)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            body = change(info.filename, source.read(info.filename))
            if body is not None:
                target.writestr(info.filename, body)
    return out.getvalue()


def declared_huge(data, storage=True):
    """The probe's crash: the first storage (4 floats, a 16-byte record) declared as 2^22 floats, and its
    tensor as 2^22 elements (read past the record by torch 1.13: SIGSEGV); ``storage=False``: the tensor only."""
    def change(name, body):
        if not name.endswith("/data.pkl"):
            return body
        ops = list(pickletools.genops(body))
        after_cpu = next(i for i, (op, arg, _p) in enumerate(ops) if arg == "cpu")
        numel = next(i for i in range(after_cpu, len(ops)) if ops[i][0].name == "BININT1" and ops[i][1] == 4)
        size = next(i for i in range(numel + 1, len(ops)) if ops[i][0].name == "BININT1" and ops[i][1] == 4)
        for index in (size, numel) if storage else (size,):  # from the end: earlier positions stay valid
            position = ops[index][2]
            body = body[:position] + b"J" + struct.pack("<i", 2 ** 22) + body[position + 2:]  # BININT1 4 -> BININT
        return body

    return rewritten(data, change)


def synthetic_variants():
    """{name: (file bytes, the damaged detail it must name)} over :func:`dtype_state`."""
    data = saved(dtype_state())
    found = {}
    for dtype_name, dtype in DTYPES.items():
        name, nbytes = record_of(data, dtype_name), 5 * torch.empty((), dtype=dtype).element_size()
        found["cut-short-" + dtype_name] = (
            rewritten(data, lambda n, b, name=name: b[:-1] if n == name else b),
            "record {} holds {} bytes, its pickle declares {} ".format(name, nbytes - 1, nbytes))
        found["one-byte-longer-" + dtype_name] = (
            rewritten(data, lambda n, b, name=name: b + b"\0" if n == name else b),
            "record {} holds {} bytes, its pickle declares {} ".format(name, nbytes + 1, nbytes))
    found["missing-record"] = (rewritten(data, lambda n, b: None if n == "archive/data/2" else b),
                               "no record archive/data/2 for the storage of 10 bytes its pickle declares")
    found["extra-unused-record"] = (rezipped(data, add={"data/99": b"\0" * 8}),
                                    "record archive/data/99 is used by no storage of its pickle")
    small = saved({"model": {"w": torch.arange(4.0)}, "args": None, "extra_state": {"ema": {}}})
    found["declared-2^22-over-16-bytes"] = (
        declared_huge(small), "record archive/data/0 holds 16 bytes, its pickle declares 16777216 ")
    return found


VARIANTS = synthetic_variants()


@pytest.fixture(scope="module")
def trained(data_bin, tmp_path_factory):
    """A real checkpoint (a tiny wean_lstm) and the probe's damage of it: its largest record cut to 16 bytes."""
    folder = train_tiny(data_bin, tmp_path_factory.mktemp("records"))
    data = (folder / "checkpoint_last.pt").read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        largest = max((i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    cut = rewritten(data, lambda n, b: b[:16] if n == largest.filename else b)
    return data, cut, largest, data_bin


def _safe_load(path, data_bin):
    return checkpoint_safety.safe_load(path)


def _load_checkpoint_to_cpu(path, data_bin):  # fairseq-generate/-validate/-interactive --path, --restore-file,
    from fairseq import checkpoint_utils  # --finetune-from-model, --continue-once, resuming (checkpoint_last.pt)

    return checkpoint_utils.load_checkpoint_to_cpu(str(path))


def _load_ema(path, data_bin):  # --store-ema --ema-seed-model
    from fairseq import checkpoint_utils

    return checkpoint_utils.load_ema_from_checkpoint(str(path))


def _plugin_hub(path, data_bin):
    from fairseq_wean.hub import from_pretrained

    return from_pretrained(str(path.parent), checkpoint_file=path.name, data_name_or_path=str(data_bin),
                           user_dir=USER_DIR)


def _model_class_hub(path, data_bin):  # fairseq's BaseFairseqModel.from_pretrained -> hub_utils.from_pretrained
    from fairseq_wean.models.wean_lstm import WeanLSTMModel

    return WeanLSTMModel.from_pretrained(str(path.parent), checkpoint_file=path.name, data_name_or_path=str(data_bin))


ROUTES = [_safe_load, _load_checkpoint_to_cpu, _load_ema, _plugin_hub, _model_class_hub]


@pytest.fixture
def torch_never_reads(monkeypatch):
    """Every way torch reads a checkpoint fails the test (safe_load: torch.load under weights_only, or
    torch.serialization's _load/_legacy_load under the allow-list pickle_module)."""
    from torch import serialization

    def reached(*args, **kwargs):
        pytest.fail("torch read the damaged checkpoint")

    for name in ("_load", "_legacy_load", "_open_zipfile_reader"):
        monkeypatch.setattr(serialization, name, reached)
    monkeypatch.setattr(torch, "load", reached)
    monkeypatch.setattr(serialization, "load", reached)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.__name__.strip("_"))
@pytest.mark.parametrize("variant", sorted(VARIANTS) + ["trained-model-largest-record-cut-to-16-bytes"])
def test_a_record_of_another_size_than_declared_is_refused_before_torch_reads_it(trained, tmp_path, variant, route,
                                                                                 torch_never_reads):
    """C89-C92, C100, C102, C103: every record variant through every loading route: the one damaged line
    naming the file and the record, torch never reached (no out-of-bounds read, no crash)."""
    import fairseq_wean  # noqa: F401  (installs the checkpoint checks)

    if variant.startswith("trained"):
        _data, data, largest, _bin = trained
        detail = "record {} holds 16 bytes, its pickle declares {} ".format(largest.filename, largest.file_size)
    else:
        data, detail = VARIANTS[variant]
    path = tmp_path / "model" / "checkpoint_best.pt"
    path.parent.mkdir()
    path.write_bytes(data)
    with pytest.raises(FairseqWeanError) as info:
        route(path, trained[3])
    message = str(info.value)
    assert "\n" not in message
    assert re.match(DAMAGED.format(re.escape(str(path)), re.escape(detail)), message), message
    assert path.read_bytes() == data


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_synthetic_record_variant_is_refused_by_safe_load(tmp_path, variant, torch_never_reads):
    """The variants alone through safe_load, the one function every route calls: no trained model needed (the
    mutation check runs this test without the data fairseq's CLIs build)."""
    import fairseq_wean  # noqa: F401

    data, detail = VARIANTS[variant]
    path = tmp_path / "checkpoint_best.pt"
    path.write_bytes(data)
    with pytest.raises(FairseqWeanError) as info:
        checkpoint_safety.safe_load(str(path))
    assert re.match(DAMAGED.format(re.escape(str(path)), re.escape(detail)), str(info.value)), str(info.value)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.__name__.strip("_"))
def test_the_intact_checkpoints_load(trained, tmp_path, route):
    """The same checkpoints undamaged: every route loads them (the synthetic one of every dtype gives its
    values back; the trained model translates through the hubs)."""
    import fairseq_wean  # noqa: F401

    data, _cut, _largest, data_bin = trained
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "checkpoint_best.pt").write_bytes(data)
    shutil.copy(folder / "checkpoint_best.pt", folder / "checkpoint_last.pt")
    if route in (_plugin_hub, _model_class_hub):
        hub = route(folder / "checkpoint_best.pt", data_bin)
        assert isinstance(hub.translate("w1 w2"), str)
        return
    path = folder / "dtypes.pt"
    path.write_bytes(saved(dtype_state()))
    state = route(path, data_bin)
    if route is _load_ema:  # the EMA weights become the model's
        assert list(state["model"]) == ["w"] and torch.equal(state["model"]["w"], torch.arange(3.0))
        return
    for name, dtype in DTYPES.items():
        assert state["model"][name].dtype == dtype and torch.equal(state["model"][name], torch.arange(5).to(dtype))
    loaded = route(folder / "checkpoint_best.pt", data_bin)
    reference = checkpoint_safety.safe_load(folder / "checkpoint_last.pt")
    assert loaded["model"].keys() == reference["model"].keys() and all(
        torch.equal(loaded["model"][k], reference["model"][k]) for k in reference["model"])


def test_a_benign_checkpoint_with_a_constants_member_is_named_as_such(tmp_path):
    """C49: a checkpoint with an added member ``constants.pkl`` (torch takes it for a TorchScript archive) is
    refused naming that member, not as a TorchScript archive its pickle "calls"; a real torch.jit.save
    archive keeps its line (test_crafted_checkpoints.test_a_torchscript_archive_is_refused_in_one_line)."""
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    path = tmp_path / "extra.pt"
    path.write_bytes(rezipped(saved(dtype_state()), add={"constants.pkl": pickle.dumps(())}))
    for load in (checkpoint_safety.safe_load, checkpoint_utils.load_checkpoint_to_cpu):
        with pytest.raises(FairseqWeanError) as info:
            load(str(path))
        assert str(info.value) == (
            "refusing to load checkpoint {}: it holds a member archive/constants.pkl, which torch.save never writes "
            "and which makes torch read the file as a TorchScript archive (torch.jit.load); nothing was read".format(
                path))


def torch_checked_variants():
    """What torch checks itself, before any tensor is read: in its legacy format (a pickle, then each storage
    as its element count and its bytes) the last storage cut short, its count header changed, its declared
    numel 2^22; in the zip format a tensor larger than its (intact) storage."""
    state = {"model": {"w": torch.arange(4.0)}, "args": None, "extra_state": {"ema": {}}}
    data = saved(state, zip_format=False)
    header = len(data) - 16 - 8
    after_cpu = data.index(b"cpu")
    numel = data.index(b"K\x04", after_cpu)
    return {"legacy-cut-short": data[:-1],
            "legacy-count-header-5": data[:header] + struct.pack("<q", 5) + data[header + 8:],
            "legacy-declared-2^22": data[:numel] + b"J" + struct.pack("<i", 2 ** 22) + data[numel + 2:],
            "zip-tensor-larger-than-its-storage": declared_huge(saved(state), storage=False)}


def _explained_safe_load(path, data_bin):  # what metric_check reads checkpoint_last.pt with
    return checkpoint_safety._explained(str(path), checkpoint_safety.safe_load, str(path))


@pytest.mark.parametrize("variant", sorted(torch_checked_variants()))
@pytest.mark.parametrize("route", [_explained_safe_load, _load_checkpoint_to_cpu, _load_ema],
                         ids=lambda r: r.__name__.strip("_"))
def test_what_torch_checks_itself_is_the_damaged_line(tmp_path, variant, route):
    """The legacy format needs no check of ours: torch compares each storage's size header with its declared
    size and stops at the file's end; torch refuses a tensor larger than its storage (both on torch 1.13 and
    2.x, before any tensor is read): the damaged line (torch's error explained by checkpoint_error)."""
    import fairseq_wean  # noqa: F401

    path = tmp_path / "checked.pt"
    path.write_bytes(torch_checked_variants()[variant])
    with pytest.raises(FairseqWeanError, match=r"^checkpoint .*checked\.pt is truncated or corrupted \(") as info:
        route(path, None)
    assert "\n" not in str(info.value)


@pytest.mark.skipif(torch.__version__.startswith("1."), reason="torch 1.13 reads past the record (the crash of C89)")
@pytest.mark.parametrize("variant", ["cut-short-float32", "one-byte-longer-int64", "declared-2^22-over-16-bytes"])
def test_torchs_own_record_size_error_is_the_damaged_line(tmp_path, monkeypatch, variant):
    """The second line of defence: with the container's record check out of the way, torch 2.x's own
    "record size ... does not match expected size" RuntimeError is the same damaged line (DAMAGED_MESSAGES)."""
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401
    from fairseq_wean import checkpoint_container

    monkeypatch.setattr(checkpoint_container, "_records_problem", lambda archive, members: None)
    path = tmp_path / "checkpoint_best.pt"
    path.write_bytes(VARIANTS[variant][0])
    with pytest.raises(FairseqWeanError, match=r"^checkpoint {} is truncated or corrupted \(RuntimeError: .*record size"
                       .format(re.escape(str(path)))) as info:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert "\n" not in str(info.value)
