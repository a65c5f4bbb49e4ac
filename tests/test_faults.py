"""Faults: a killed training job resumes exactly; damaged checkpoints never replace good ones.

* ``kill -9`` in the middle of an epoch, then the same command again: fairseq resumes from
  ``checkpoint_last.pt`` (model, Adam moments, learning-rate schedule, the position in the
  epoch) and the final model equals the one of an uninterrupted run. It is bit-exact, not
  only close: fairseq re-seeds torch before every update with ``--seed`` + the update number
  (``Trainer._set_seed``), so dropout masks do not depend on where the job restarted, and the
  batch order of an epoch depends on ``--seed`` + the epoch only.
* A truncated ``checkpoint_last.pt`` stops the rerun with a one-line error before anything
  is written, so ``checkpoint_best.pt`` survives; every checkpoint file is written to
  ``NAME.tmp`` and renamed (fairseq's ``torch_persistent_save``, and the plugin's atomic
  copies to ``checkpoint_best.pt`` / ``checkpoint_last.pt``), so a kill while saving never
  leaves a half-written checkpoint.
"""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
import torch

import fairseq_wean  # noqa: F401  (safe globals for torch.load; the atomic copy)
from conftest import BIN, REPO, cli, train_args

UPDATES = 36  # 8 updates per epoch (400 pairs, --max-tokens 400): the run ends mid-epoch 5
RESUMABLE = [
    "--embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16,
    "--encoder-layers", 1, "--decoder-layers", 1, "--dropout", 0.3, "--max-tokens", 400,
    "--lr-scheduler", "inverse_sqrt", "--warmup-updates", 10, "--warmup-init-lr", 1e-4,
    "--max-update", UPDATES, "--save-interval-updates", 3, "--save-interval", 1000,
]


def training_command(data_bin, save_dir):
    return [os.path.join(BIN, "fairseq-train")] + [
        str(a) for a in train_args(data_bin, save_dir, "wean_lstm", *RESUMABLE, epochs=100)]


def load(path):
    return torch.load(path, map_location="cpu")  # weights-only, with the plugin's allow-list


def popen(cmd, log):
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def runs(data_bin, tmp_path_factory):
    """An uninterrupted run, and a run killed (SIGKILL) after its first mid-epoch checkpoint then rerun."""
    work = tmp_path_factory.mktemp("faults")
    reference, killed = work / "reference", work / "killed"
    with open(work / "reference.log", "w") as ref_log, open(work / "killed.log", "w") as kill_log:
        ref = popen(training_command(data_bin, reference), ref_log)
        victim = popen(training_command(data_bin, killed), kill_log)
        last = killed / "checkpoint_last.pt"
        deadline = time.time() + 300
        while not last.exists() and victim.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        still_running = victim.poll() is None
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        ref.wait(timeout=300)
    assert still_running and victim.returncode == -signal.SIGKILL, (work / "killed.log").read_text()[-3000:]
    assert ref.returncode == 0, (work / "reference.log").read_text()[-3000:]
    at_kill = load(last)
    resumed = subprocess.run(training_command(data_bin, killed), cwd=REPO, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1"), timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return {"reference": reference, "killed": killed, "at_kill": at_kill,
            "resume_log": resumed.stdout + resumed.stderr}


def test_killed_mid_epoch_resumes_where_it_stopped(runs):
    itr = runs["at_kill"]["extra_state"]["train_iterator"]
    updates = runs["at_kill"]["optimizer_history"][-1]["num_updates"]
    assert 0 < itr["iterations_in_epoch"] < 8, itr  # the checkpoint is in the middle of an epoch
    log = runs["resume_log"]
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch {} @ {} updates\)".format(
        itr["epoch"], updates), log), log[-3000:]
    # fairseq skips the batches of the epoch that were already trained on
    assert re.search(r"\| train \| epoch {:03d} \|".format(itr["epoch"]), log)
    assert "num_updates {}".format(UPDATES) in log


def test_resumed_model_equals_uninterrupted_model(runs):
    ref = load(runs["reference"] / "checkpoint_last.pt")
    res = load(runs["killed"] / "checkpoint_last.pt")
    assert ref["optimizer_history"][-1]["num_updates"] == res["optimizer_history"][-1]["num_updates"] == UPDATES
    assert ref["model"].keys() == res["model"].keys()
    for name in ref["model"]:
        torch.testing.assert_close(res["model"][name], ref["model"][name], rtol=0, atol=0, msg=name)
    # Adam's moments and step counts, and the learning rate, were restored too
    ref_opt, res_opt = ref["last_optimizer_state"], res["last_optimizer_state"]
    assert ref_opt["param_groups"][0]["lr"] == res_opt["param_groups"][0]["lr"]
    for key, state in ref_opt["state"].items():
        for field, value in state.items():
            if torch.is_tensor(value):
                torch.testing.assert_close(res_opt["state"][key][field], value, rtol=0, atol=0)
            else:
                assert res_opt["state"][key][field] == value
    assert ref["extra_state"]["train_iterator"] == res["extra_state"]["train_iterator"]


def test_corrupted_last_checkpoint_stops_training_and_keeps_the_others(runs, data_bin, tmp_path):
    """Rerunning on a truncated checkpoint_last.pt: one-line error, no checkpoint rewritten."""
    save_dir = tmp_path / "ck"
    shutil.copytree(runs["reference"], save_dir)
    last = save_dir / "checkpoint_last.pt"
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])
    def files():  # the --save-dir lock aside: it is rewritten by every run that starts
        return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in save_dir.iterdir() if p.name != ".fairseq-wean.lock"}

    kept = files()
    assert {"checkpoint_best.pt", "checkpoint_1_3.pt"} <= set(kept)
    proc = cli("fairseq-train", *train_args(data_bin, save_dir, "wean_lstm", *RESUMABLE, epochs=100), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("fairseq-wean: error: checkpoint {} is truncated or corrupted".format(last)), proc.stderr[-2000:]
    assert "use an earlier checkpoint" in line
    assert files() == kept


def test_checkpoint_copies_are_atomic(tmp_path, monkeypatch):
    """A crash while fairseq copies a new checkpoint to checkpoint_last.pt keeps the old file whole."""
    from fairseq import checkpoint_utils

    new, last = tmp_path / "checkpoint_2_6.pt", tmp_path / "checkpoint_last.pt"
    new.write_bytes(b"new checkpoint" * 1000)
    last.write_bytes(b"old checkpoint")

    def crashing_copy(src, dst, *args, **kwargs):
        with open(dst, "wb") as f:
            f.write(b"new chec")  # part of the file, then the job dies
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "copyfile", crashing_copy)
    with pytest.raises(KeyboardInterrupt):
        checkpoint_utils.PathManager.copy(str(new), str(last), overwrite=True)
    assert last.read_bytes() == b"old checkpoint"
    monkeypatch.undo()
    assert checkpoint_utils.PathManager.copy(str(new), str(last), overwrite=True)
    assert last.read_bytes() == new.read_bytes()


def test_checkpoint_writes_are_atomic(tmp_path, monkeypatch):
    """fairseq's torch_persistent_save writes NAME.tmp and renames it: a failed write keeps NAME."""
    from fairseq import checkpoint_utils

    path = tmp_path / "checkpoint_last.pt"
    torch.save({"model": {"w": torch.ones(3)}}, path)
    before = path.read_bytes()

    def crashing_save(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint_utils.torch, "save", crashing_save)
    monkeypatch.setattr(checkpoint_utils.time, "sleep", lambda s: None)  # fairseq retries 3 times
    with pytest.raises(OSError):
        checkpoint_utils.torch_persistent_save({"model": {}}, str(path))
    assert path.read_bytes() == before
