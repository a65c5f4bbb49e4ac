"""A crafted checkpoint runs no code, on every torch the plugin supports, through every entry point.

The allow-list is enforced by the unpickler torch itself uses (``checkpoint_safety.safe_load``:
``weights_only=True`` on torch >= 2.4, torch's unpickler over an allow-list ``pickle_module`` on
older torch), so no second parser can read a file another way than torch does. Here: every
container variant (legacy, zip, polyglot, renamed members, every zip compression, objects nested
in allowed ones, Python 2 module names) under both mechanisms (the older one forced on this
torch; ``.venv-fairseq0122``'s torch 1.13 runs it for real), and every fairseq option that names a
checkpoint, derived from fairseq's configs so that a new one fails the coverage test.
"""
import argparse
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
import torch

from conftest import REPO, USER_DIR, no_hang
from fairseq_wean import checkpoint_safety
from fairseq_wean.errors import FairseqWeanError

REFUSED = r"refusing to load checkpoint .*: its pickle calls |truncated or corrupted"
# the container refusals (fairseq_wean.checkpoint_container), before torch sees the file
TAR_REFUSED = r"^refusing to load checkpoint .*: it is a tar archive \(torch's oldest format, .*; nothing was read$"
COMPRESSED_REFUSED = (r"^refusing to load checkpoint .*: its member archive/data\.pkl is (DEFLATE|bzip2|LZMA)-compressed, "
                      r"and torch\.save stores every member uncompressed .*; nothing was read$")


class Exploit:
    """Unpickled freely, it creates MARKER (``os.system('touch MARKER')``)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch {}".format(self.marker),))


def saved(state, zip_format=True):
    buffer = io.BytesIO()
    torch.save(state, buffer, _use_new_zipfile_serialization=zip_format)
    return buffer.getvalue()


def plain_state():
    return {"model": {"w": torch.arange(4.0)}, "args": argparse.Namespace(arch="wean_lstm", lr=[0.1]),
            "cfg": None, "extra_state": {"epoch": 3, "ema": {"w": torch.arange(4.0)}}, "last_optimizer_state": None,
            "optimizer_history": [{"num_updates": 7, "best_loss": 2.5, "lr_scheduler_state": {"best": 2.5}}]}


def evil_state(marker):
    return dict(plain_state(), args=Exploit(marker))


def rezipped(data, rename=None, compression=zipfile.ZIP_STORED, replace=None, add=None):
    """The zip archive DATA rewritten: members renamed, recompressed, replaced or added."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", compression) as target:
        for info in source.infolist():
            body = source.read(info.filename)
            name = info.filename
            if replace and name.endswith("/data.pkl"):
                body = replace
            if rename:
                name = rename(name)
            target.writestr(name, body)
        for name, body in (add or {}).items():
            target.writestr(source.namelist()[0].split("/")[0] + "/" + name, body)
    return out.getvalue()


def python2_eval_pickle(marker):
    """A protocol-0 pickle naming ``__builtin__.eval`` (pickle maps it to ``builtins.eval``)."""
    code = "__import__('os').system('touch {}')".format(marker)
    return "c__builtin__\neval\n(V{}\ntR.".format(code).encode()


def legacy_tar(member, secret=None):
    """torch's oldest checkpoint format (a tar of sys_info, pickle, storages, tensors) whose ``storages``
    member is a named pipe (``member="fifo"``: torch 1.13 extracts it and its open blocks forever) or a
    symbolic link to ``secret`` (torch 1.13 extracts the link and reads the file it names)."""
    import pickle
    import tarfile

    out = io.BytesIO()

    def add(tar, name, body):
        info = tarfile.TarInfo(name)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))

    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "sys_info", pickle.dumps({"protocol_version": 1001, "little_endian": True,
                                           "type_sizes": {"short": 2, "int": 4, "long": 4}}))
        add(tar, "pickle", pickle.dumps({"model": {}}))
        info = tarfile.TarInfo("storages")
        if member == "fifo":
            info.type = tarfile.FIFOTYPE
        else:
            info.type, info.linkname = tarfile.SYMTYPE, os.path.abspath(str(secret))
        tar.addfile(info)
        add(tar, "tensors", pickle.dumps(0))
    return out.getvalue()


# container variants refused before torch reads them, whatever they hold (a plain checkpoint zipped with a
# compression: a decompression bomb's form); name -> the refusal
CONTAINER_REFUSALS = {"tar-fifo-member": TAR_REFUSED, "tar-symlink-member": TAR_REFUSED,
                      "deflated-plain": COMPRESSED_REFUSED, "bzip2-plain": COMPRESSED_REFUSED,
                      "lzma-plain": COMPRESSED_REFUSED, "deflated": COMPRESSED_REFUSED,
                      "bzip2": COMPRESSED_REFUSED, "lzma": COMPRESSED_REFUSED,
                      "extra-pickle-member": r"^refusing to load checkpoint .*: it holds a member archive/extra\.pkl, "
                                             r"which torch\.save never writes .*; nothing was read$"}


def variants(marker):
    """{name: (file bytes, loads)}: ``loads`` is True where the file holds no exploit torch reads and is a
    container torch.save writes (:data:`CONTAINER_REFUSALS`: refused before torch reads them)."""
    evil_zip, evil_legacy = saved(evil_state(marker)), saved(evil_state(marker), zip_format=False)
    plain_zip = saved(plain_state())
    nested = dict(plain_state(), extra_state={"epoch": 3, "ema": {}, "deep": [{"x": (1, [Exploit(marker)])}]})
    return {
        "zip": (evil_zip, False),
        "legacy": (evil_legacy, False),
        # a legacy pickle that is also a zip archive (Python's zipfile finds the appended archive)
        "polyglot-legacy-then-zip": (evil_legacy + plain_zip, False),
        "renamed-data-pkl": (rezipped(evil_zip, rename=lambda n: n.replace("data.pkl", "DATA.PKL")), False),
        "deflated": (rezipped(evil_zip, compression=zipfile.ZIP_DEFLATED), False),
        "bzip2": (rezipped(evil_zip, compression=zipfile.ZIP_BZIP2), False),
        "lzma": (rezipped(evil_zip, compression=zipfile.ZIP_LZMA), False),
        "deflated-plain": (rezipped(plain_zip, compression=zipfile.ZIP_DEFLATED), False),
        "bzip2-plain": (rezipped(plain_zip, compression=zipfile.ZIP_BZIP2), False),
        "lzma-plain": (rezipped(plain_zip, compression=zipfile.ZIP_LZMA), False),
        "tar-fifo-member": (legacy_tar("fifo"), False),
        "tar-symlink-member": (legacy_tar("symlink", os.path.join(os.path.dirname(str(marker)), "secret")), False),
        "nested-in-allowed-containers": (saved(nested), False),
        "python2-module-name": (rezipped(plain_zip, replace=python2_eval_pickle(marker)), False),
        "legacy-python2-module-name": (python2_eval_pickle(marker), False),
        # a second pickle beside data.pkl: a member torch.save never writes, refused
        "extra-pickle-member": (rezipped(plain_zip, add={"extra.pkl": python2_eval_pickle(marker)}), False),
    }


@pytest.fixture(params=["weights_only", "pickle_module"])
def mechanism(request, monkeypatch):
    """Both ways of enforcing the allow-list, whatever this torch would choose."""
    if request.param == "weights_only" and not hasattr(torch.serialization, "add_safe_globals"):
        pytest.skip("torch {} cannot extend its weights-only allow-list".format(torch.__version__))
    monkeypatch.setattr(checkpoint_safety, "loading_mechanism", lambda: request.param)
    return request.param


VARIANTS = sorted(variants("M"))


@pytest.mark.parametrize("loader", ["load_checkpoint_to_cpu", "load_ema_from_checkpoint"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_no_container_variant_runs_code(mechanism, tmp_path, variant, loader):
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401  (installs the checkpoint checks)

    marker = tmp_path / "PWNED"
    data, loads = variants(marker)[variant]
    path = tmp_path / "crafted.pt"
    path.write_bytes(data)
    load = getattr(checkpoint_utils, loader)
    if loads:
        state = load(str(path))
        assert torch.equal(state["model"]["w"], torch.arange(4.0))
    else:
        with pytest.raises(FairseqWeanError, match=CONTAINER_REFUSALS.get(variant, REFUSED)) as info:
            with no_hang():  # a tar's named pipe member, opened: a hang
                load(str(path))
        assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert not marker.exists(), "the checkpoint's code ran"


def test_a_decompression_bomb_is_refused_without_inflating_it(mechanism, tmp_path, monkeypatch):
    """A checkpoint whose 4 MB of zeros are DEFLATE-compressed to a few KB: refused from the central
    directory, before anything is decompressed (zipfile's decompressors are never called)."""
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    big = dict(plain_state(), extra_state={"epoch": 3, "pad": torch.zeros(1_000_000)})
    path = tmp_path / "bomb.pt"
    path.write_bytes(rezipped(saved(big), compression=zipfile.ZIP_DEFLATED))
    assert path.stat().st_size < 100_000
    monkeypatch.setattr(zipfile, "_get_decompressor", lambda *a: pytest.fail("a member was decompressed"))
    for loader in ("load_checkpoint_to_cpu", "load_ema_from_checkpoint"):
        with pytest.raises(FairseqWeanError, match=COMPRESSED_REFUSED):
            getattr(checkpoint_utils, loader)(str(path))


def test_only_the_containers_torch_save_writes_pass(tmp_path):
    """The container check itself: both formats torch.save writes (every pickle protocol of the legacy one)
    pass; a tar, a compressed member, a stored member past the end of the file, other bytes do not."""
    from fairseq_wean import checkpoint_container as C

    def problem(data):
        return C.container_problem(io.BytesIO(data))

    buffer = io.BytesIO()
    for protocol in range(2, __import__("pickle").HIGHEST_PROTOCOL + 1):
        buffer = io.BytesIO()
        torch.save(plain_state(), buffer, _use_new_zipfile_serialization=False, pickle_protocol=protocol)
        assert problem(buffer.getvalue()) is None, protocol
    assert problem(saved(plain_state())) is None
    assert problem(legacy_tar("fifo"))[0] == "tar"
    for compression in (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        assert problem(rezipped(saved(plain_state()), compression=compression))[0] == "compressed"
    stored = saved(plain_state())
    # one header of a member says DEFLATE, the other stored (readers differ in which they believe): each is checked
    local = stored.index(b"PK\x03\x04")
    central = stored.index(b"PK\x01\x02")
    for offset in (local + 8, central + 10):
        patched = stored[:offset] + b"\x08\x00" + stored[offset + 2:]
        assert problem(patched) == ("compressed", ("archive/data.pkl", "DEFLATE")), offset
    assert problem(stored[:len(stored) // 2])[0] == "damaged"
    assert problem(b"just text\n")[0] == "damaged"
    assert problem(b"\x80\x02K\x0a.")[0] == "damaged"  # a pickle, but not torch's magic number


def test_refusal_names_the_global(mechanism, tmp_path):
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    path = tmp_path / "evil.pt"
    for zip_format in (True, False):
        path.write_bytes(saved(evil_state(tmp_path / "PWNED"), zip_format=zip_format))
        with pytest.raises(FairseqWeanError, match=r"evil.pt: its pickle calls posix.system, which is not on"):
            checkpoint_utils.load_checkpoint_to_cpu(str(path))


def test_a_plain_checkpoint_loads_in_both_formats(mechanism, tmp_path):
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    for zip_format in (True, False):
        path = tmp_path / "plain-{}.pt".format(zip_format)
        path.write_bytes(saved(plain_state(), zip_format=zip_format))
        loaded = checkpoint_utils.load_checkpoint_to_cpu(str(path))
        assert torch.equal(loaded["model"]["w"], torch.arange(4.0)) and loaded["args"].lr == [0.1]


def test_the_enforcing_unpickler_is_torchs_own(mechanism, tmp_path, monkeypatch):
    """No scan beside torch: the only reading of the pickle is torch's, and it gets the allow-list."""
    from torch import serialization
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    calls = []

    def spy(name):
        real = getattr(serialization, name)
        monkeypatch.setattr(serialization, name, lambda *a, **k: calls.append((name, a, k)) or real(*a, **k))

    for name in ("load", "_load", "_legacy_load"):
        spy(name)
    monkeypatch.setattr(torch, "load", serialization.load)
    path = tmp_path / "plain.pt"
    path.write_bytes(saved(plain_state()))
    checkpoint_utils.load_checkpoint_to_cpu(str(path))
    if mechanism == "weights_only":
        assert [c[0] for c in calls] == ["load", "_load"] and calls[0][2]["weights_only"] is True
    else:
        assert [c[0] for c in calls] == ["_load"]
        unpickler = calls[0][1][2].Unpickler
        assert unpickler.find_class is not __import__("pickle").Unpickler.find_class


def test_a_damaged_pickle_is_one_line(mechanism, tmp_path):
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    path = tmp_path / "odd.pt"
    path.write_bytes(b"\x80\x02K\x0a.not a pickle at all")  # a legacy-looking first pickle, then garbage
    with pytest.raises(FairseqWeanError, match="odd.pt is truncated or corrupted"):
        checkpoint_utils.load_checkpoint_to_cpu(str(path))


# ------------------------------------------------------------------ every entry point
# fairseq options whose value is a checkpoint that fairseq loads, and the other string options
# whose help speaks of checkpoints or loading: together, what the coverage test derives.
LOADS_A_CHECKPOINT = {"path", "restore_file", "continue_once", "finetune_from_model", "lm_path", "ema_seed_model"}
NOT_A_CHECKPOINT = {"save_dir": "a folder: its checkpoint_last.pt is the resume entry point below",
                    "optimizer_overrides": "a dict literal", "best_checkpoint_metric": "a metric's name",
                    "checkpoint_suffix": "a file-name suffix"}


def fairseq_string_options():
    from fairseq.dataclass.configs import FairseqConfig

    def walk(config):
        for field in dataclasses.fields(config):
            if isinstance(field.type, type) and dataclasses.is_dataclass(field.type):
                yield from walk(field.type)
            else:
                yield field

    for field in walk(FairseqConfig):
        text = ((field.metadata or {}).get("help") or "").lower()
        if "str" in str(field.type) and re.search(r"\bload|checkpoint|model file|pretrained|seed to", text):
            yield field.name


def test_every_option_that_names_a_checkpoint_is_an_entry_point():
    found = set(fairseq_string_options())
    assert found == LOADS_A_CHECKPOINT | set(NOT_A_CHECKPOINT), (
        "a fairseq option that may name a checkpoint is not tried here: {}".format(
            sorted(found - LOADS_A_CHECKPOINT - set(NOT_A_CHECKPOINT))))
    assert {option for _name, option, _argv in ENTRY_POINTS} >= LOADS_A_CHECKPOINT


def test_every_torch_load_of_fairseq_is_safe_or_not_a_file():
    """The mechanism sits where fairseq calls torch.load: checkpoint_utils's torch is the safe one.
    Every other torch.load call in fairseq is listed with why a plugin run never reaches it with a
    file (a new one fails here)."""
    import fairseq
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    assert isinstance(checkpoint_utils.torch, checkpoint_safety._CheckpointTorch)
    elsewhere = {
        "checkpoint_utils.py": "the safe torch (asserted above)",
        "distributed/utils.py": "objects sent between ranks of one run, in memory",
        "data/codedataset.py": "speech-to-speech data statistics (no task of the plugin)",
        "models/text_to_speech/vocoder.py": "a TTS vocoder (no model of the plugin)",
        "models/speech_to_text/xm_transformer.py": "a speech model's pretrained decoder: the path stored in a "
                                                   "checkpoint is forgotten (tests/test_stored_config.py)",
        "modules/quantization/pq/em.py": "iterative PQ quantization's own dumps (not a checkpoint option)",
    }
    root = os.path.dirname(fairseq.__file__)
    calls = set()
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if "torch.load(" in f.read():
                        calls.add(os.path.relpath(path, root).replace(os.sep, "/"))
    calls = {c for c in calls if not c.startswith(("examples/", "model_parallel/"))}
    assert calls <= set(elsewhere), sorted(calls - set(elsewhere))


# (name, option, argv): each loads CRAFTED (a checkpoint whose pickle would touch a marker)
ENTRY_POINTS = [
    ("fairseq-generate --path", "path", ["generate", "{data}", "--path", "{crafted}", "--user-dir", "{user_dir}",
                                         "--cpu", "--beam", "2"]),
    ("fairseq-generate --path (ensemble)", "path", ["generate", "{data}", "--path", "{good}:{crafted}",
                                                    "--user-dir", "{user_dir}", "--cpu"]),
    ("fairseq-generate --lm-path", "lm_path", ["generate", "{data}", "--path", "{good}", "--lm-path", "{crafted}",
                                               "--user-dir", "{user_dir}", "--cpu"]),
    ("fairseq-interactive --path", "path", ["interactive", "{data}", "--path", "{crafted}", "--user-dir",
                                            "{user_dir}", "--cpu", "--source-lang", "src", "--target-lang", "tgt"]),
    ("fairseq-validate --path", "path", ["validate", "{data}", "--path", "{crafted}", "--user-dir", "{user_dir}",
                                         "--cpu", "--task", "translation", "--max-tokens", "2000"]),
    ("fairseq-train --restore-file", "restore_file", ["train", "--restore-file", "{crafted}"]),
    ("fairseq-train --finetune-from-model", "finetune_from_model", ["train", "--finetune-from-model", "{crafted}"]),
    ("fairseq-train --continue-once", "continue_once", ["train", "--continue-once", "{crafted}"]),
    ("fairseq-train resume (--save-dir's checkpoint_last.pt)", "save_dir", ["train", "--resume"]),
    ("fairseq-train --store-ema --ema-seed-model", "ema_seed_model", ["train", "--store-ema", "--ema-seed-model",
                                                                      "{crafted}"]),
    ("hub from_pretrained", "path", ["hub"]),
]

def train_argv(data, save_dir, *extra):
    return ["train", str(data), "--user-dir", USER_DIR, "--arch", "wean_lstm", "--cpu", "--optimizer", "adam",
            "--lr", "0.005", "--max-tokens", "2000", "--max-update", "1", "--save-dir", str(save_dir),
            "--num-workers", "0", "--encoder-layers", "1", "--decoder-layers", "1", *extra]


def train_tiny(data, work):
    """A tiny wean_lstm (sizes 8, one update) trained into ``work/ck`` through the driver; returns that folder."""
    argv = train_argv(data, work / "ck", "--encoder-hidden-size", "8", "--decoder-hidden-size", "8", "--embed-dim", "8")
    result = run_driver([{"name": "train", "argv": argv}], work, work / "no-marker")
    assert result[0]["outcome"] == "ran to the end", result
    return work / "ck"


def run_driver(jobs, tmp_path, marker, python=sys.executable, timeout=600):
    """Run ``jobs`` ({"name", "argv": [cli, *args]}; a hub job {"argv": ["hub"], "folder", "crafted",
    "data"}) in one process of tests/fairseq_runs.py; their results (outcome, code_ran: whether
    ``marker`` was created). ``timeout``: seconds for all of them (a job that opens a named pipe hangs)."""
    runs = []
    for job in jobs:
        cli_name, args = job["argv"][0], job["argv"][1:]
        run = {"name": job["name"], "cli": cli_name, "args": args, "stdin": "w11 w12\n"}
        if cli_name == "hub":
            run.update(folder=job["folder"], checkpoint_file=os.path.basename(job["crafted"]), data=job["data"])
        runs.append(run)
    spec = tmp_path / "jobs.json"
    spec.write_text(json.dumps(runs))
    proc = subprocess.run([python, os.path.join(REPO, "tests", "fairseq_runs.py"), str(spec), str(marker)],
                          capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def good_checkpoint(data_bin, tmp_path_factory):
    """A checkpoint that loads (the ensemble's and --lm-path's other member), trained once for the module."""
    tmp = tmp_path_factory.mktemp("good")
    first = run_driver([{"name": "train a good model", "argv": train_argv(data_bin, tmp / "save")}], tmp, tmp / "PWNED")
    assert first[0]["outcome"] == "ran to the end", first
    return tmp / "save" / "checkpoint_last.pt"


def _lm_data(data_bin, tmp_path):
    """A copy of ``data_bin`` with the ``dict.txt`` --lm-path's language model is built over (the target dictionary),
    so that the language model's own checkpoint is what is refused."""
    import shutil

    from fairseq.data.data_utils import infer_language_pair

    copy = tmp_path / "lm-data"
    if not copy.exists():
        shutil.copytree(data_bin, copy)
        shutil.copy(copy / "dict.{}.txt".format(infer_language_pair(str(data_bin))[1]), copy / "dict.txt")
    return copy


def entry_point_jobs(data_bin, good, tmp_path, plant, resume=True):
    """ENTRY_POINTS as run_driver jobs, each loading its own file made by ``plant(path)`` (resume: the
    --save-dir's checkpoint_last.pt; ``resume=False`` leaves that job out); returns (jobs, paths)."""
    folder = tmp_path / "hub"
    folder.mkdir()
    jobs, paths = [], []
    for name, _option, argv in ENTRY_POINTS:
        if "--resume" in argv and not resume:
            continue
        index = len(jobs)
        save_dir = tmp_path / "save" / str(index)
        path = save_dir / "checkpoint_last.pt" if "--resume" in argv else folder / "crafted{}.pt".format(index)
        if argv[0] == "train":
            save_dir.mkdir(parents=True)
            argv = train_argv(data_bin, save_dir, *[a.format(crafted=path) for a in argv[1:] if a != "--resume"])
        else:
            data = _lm_data(data_bin, tmp_path) if "--lm-path" in argv else data_bin
            argv = [a.format(data=data, crafted=path, good=good, user_dir=USER_DIR) for a in argv]
        plant(str(path))
        jobs.append({"name": name, "argv": argv, "folder": str(folder), "crafted": str(path), "data": str(data_bin)})
        paths.append(str(path))
    return jobs, paths


def test_every_entry_point_refuses_a_crafted_checkpoint(data_bin, good_checkpoint, tmp_path):
    marker = tmp_path / "PWNED"
    crafted = saved(evil_state(marker))
    jobs, _paths = entry_point_jobs(data_bin, good_checkpoint, tmp_path, lambda path: open(path, "wb").write(crafted))
    results = run_driver(jobs, tmp_path, marker)
    assert [r["name"] for r in results] == [name for name, _o, _a in ENTRY_POINTS]
    wrong = [r for r in results if r["code_ran"] or not (
        r["outcome"].startswith("FairseqWeanError: refusing to load checkpoint ")
        and re.search(r"(crafted\d+|checkpoint_last)\.pt: its pickle calls posix\.system", r["outcome"]))]
    assert not wrong, json.dumps(wrong, indent=1)


def test_every_entry_point_refuses_every_container_torch_save_does_not_write(data_bin, good_checkpoint, tmp_path):
    """Every entry point (ENTRY_POINTS) loads one of the container variants of CONTAINER_REFUSALS (in turn,
    so that each variant meets at least one entry point and each entry point one variant, in one run of the
    driver): the tar with a named pipe member (a hang on torch 1.13), the tar with a link member (a file
    outside read), every zip compression of a plain checkpoint (a decompression bomb's form). One line each,
    nothing run or trained; the link's target never opened (its access time is not checked: its content
    would have been a pickle torch read, here a marker-free text)."""
    marker = tmp_path / "PWNED"
    # in ENTRY_POINTS' order: the named pipe tar at --lm-path, --finetune-from-model and the hub (the probe's
    # hangs), every variant at least once
    names = ["extra-pickle-member", "tar-symlink-member", "tar-fifo-member", "deflated-plain", "bzip2-plain", "lzma-plain",
             "tar-fifo-member", "deflated", "bzip2", "lzma", "tar-fifo-member"]
    all_variants = variants(marker)
    assert len(ENTRY_POINTS) >= len(names) and set(names) == set(CONTAINER_REFUSALS)
    planted = {}

    def plant(path):
        name = names[len(planted) % len(names)]
        planted[path] = name
        with open(path, "wb") as f:
            f.write(all_variants[name][0])

    jobs, paths = entry_point_jobs(data_bin, good_checkpoint, tmp_path, plant)
    results = run_driver(jobs, tmp_path, marker, timeout=300)  # a named pipe member opened: a hang
    wrong = [dict(r, variant=planted[p]) for r, p in zip(results, paths) if r["code_ran"] or not (
        r["outcome"].startswith("FairseqWeanError: ") and p in r["outcome"] and "\n" not in r["outcome"]
        and re.search(CONTAINER_REFUSALS[planted[p]].lstrip("^"), r["outcome"]))]
    assert not wrong, json.dumps(wrong, indent=1)
    assert set(planted.values()) == set(names)
    assert [planted[p] for p, (_n, _o, argv) in zip(paths, ENTRY_POINTS) if argv[0] == "hub" or "--lm-path" in argv] \
        == ["tar-fifo-member"] * 2
    assert not [p for p in (tmp_path / "save").glob("*/checkpoint*.pt") if p.is_file() and str(p) not in planted]


# ------------------------------------------------------------------ a path that is no checkpoint file
def no_checkpoint_file(kind, path):
    """Make ``path`` a planted non-file of ``kind`` (missing: nothing)."""
    if kind == "a folder":
        os.mkdir(path)
    elif kind == "a named pipe":
        os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["missing", "a folder", "a named pipe"])
def test_every_entry_point_refuses_a_path_that_is_no_checkpoint_file_in_one_line(data_bin, good_checkpoint, tmp_path,
                                                                                  kind):
    """Every option that names a checkpoint (ENTRY_POINTS, derived above from fairseq's configs) naming a
    missing file, a folder or a named pipe: one line naming it, nothing trained or decoded (a missing
    --restore-file, --continue-once or --finetune-from-model trained from scratch; a missing --path or
    --ema-seed-model was a traceback; a named pipe would block the reader). A missing checkpoint_last.pt
    is how a first run starts: that job is left out for "missing"."""
    marker = tmp_path / "PWNED"
    jobs, bad_paths = entry_point_jobs(data_bin, good_checkpoint, tmp_path, lambda path: no_checkpoint_file(kind, path),
                                       resume=kind != "missing")
    folder = str(tmp_path / "hub")
    results = run_driver(jobs, tmp_path, marker, timeout=300)  # a named pipe opened: a hang
    wrong = [r for r, bad in zip(results, bad_paths) if not (
        r["outcome"].startswith("FairseqWeanError: ") and "\n" not in r["outcome"]
        and (bad in r["outcome"] or os.path.basename(bad) in r["outcome"] and folder in r["outcome"]))]
    assert not wrong, json.dumps(wrong, indent=1)
    assert not [p for p in (tmp_path / "save").glob("*/checkpoint*.pt") if p.is_file()], "something was trained"


@pytest.mark.parametrize("loader", ["load_checkpoint_to_cpu", "load_ema_from_checkpoint"])
def test_a_torchscript_archive_is_refused_in_one_line(mechanism, tmp_path, loader):
    # A44: torch >= 2.4 raises its own RuntimeError for a torch.jit.save archive under weights_only;
    # both mechanisms give the same one line naming the file
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401

    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))
    with pytest.raises(FairseqWeanError) as info:
        getattr(checkpoint_utils, loader)(str(path))
    assert str(info.value) == checkpoint_safety.refused_error(str(path), checkpoint_safety.TORCHSCRIPT).args[0]


# ------------------------------------------------------------------ the hub's checkpoint found in its folder
def _plugin_hub(folder, name):
    from fairseq_wean.hub import from_pretrained

    return from_pretrained(str(folder), checkpoint_file=name, data_name_or_path=str(folder))


def _model_class_hub(folder, name):  # fairseq's BaseFairseqModel.from_pretrained -> hub_utils.from_pretrained
    from fairseq_wean.models.wean_lstm import WeanLSTMModel

    return WeanLSTMModel.from_pretrained(str(folder), checkpoint_file=name, data_name_or_path=str(folder))


@pytest.mark.parametrize("route", [_plugin_hub, _model_class_hub])
@pytest.mark.parametrize("kind", ["a hard link", "a symbolic link out of the folder", "a link inside the folder",
                                  "named by its full path"])
def test_the_hubs_checkpoint_found_in_its_folder_follows_the_folder_file_rule(tmp_path, kind, route):
    """B74: the checkpoint the hub finds in a model folder (a bare file name) is a file of that folder
    (data.folder_files.folder_file_problem): a hard link or a link out of the folder is refused in one line
    before it is read; a link to a file of the folder is that file; a path the user names in full is theirs
    (links followed). The file is no checkpoint: a load that gets past the rule ends in the damaged line."""
    import fairseq_wean  # noqa: F401

    folder = tmp_path / "model"
    folder.mkdir()
    for lang in ("src", "tgt"):
        (folder / "dict.{}.txt".format(lang)).write_text("w1 3\n")
    outside = tmp_path / "outside.pt"
    outside.write_bytes(b"not a checkpoint\n")
    name = "checkpoint_best.pt"
    if kind == "a hard link":
        os.link(outside, folder / name)
    elif kind == "a symbolic link out of the folder":
        (folder / name).symlink_to(outside)
    elif kind == "a link inside the folder":
        (folder / "checkpoint_3_9.pt").write_bytes(b"not a checkpoint\n")
        (folder / name).symlink_to("checkpoint_3_9.pt")
    else:
        os.link(outside, folder / name)
        name = str(folder / name)
    with pytest.raises(FairseqWeanError) as info:
        route(folder, name)
    message = str(info.value)
    assert "\n" not in message
    if kind in ("a hard link", "a symbolic link out of the folder"):
        assert message.startswith("from_pretrained: checkpoint {} ".format(folder / name)) and (
            "refused (a checkpoint the hub finds in its folder is read only as a file of that folder)" in message), message
    else:
        assert "is truncated or corrupted (not a checkpoint torch can read" in message, message
