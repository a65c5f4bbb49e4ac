"""Interrupted training goes on where it stopped.

* fairseq-train: ``--patience`` counts the epochs without a better score across a restart from
  ``checkpoint_last.pt`` (compat fix 12; fairseq alone starts counting anew).
* fairseq-wean-compare: an interrupted run resumes from its checkpoint, its validation curve and
  wall time carry over, and a run that had finished training is decoded without training more.
"""
import json
import os
import re
import types

import pytest
import torch

from conftest import USER_DIR, cli

SMALL_LSTM = ["--arch", "lstm", "--encoder-embed-dim", 16, "--encoder-hidden-size", 16, "--encoder-layers", 1,
              "--decoder-embed-dim", 16, "--decoder-hidden-size", 16, "--decoder-out-embed-dim", 16,
              "--decoder-layers", 1]


def patience_run(data_bin, save_dir, max_epoch):
    """fairseq-train whose checkpoint metric never improves after epoch 1: the validation loss,
    "maximized", falls every epoch at this small learning rate. With --patience 2 fairseq stops
    after epoch 3. Returns the epochs trained by this invocation."""
    proc = cli("fairseq-train", data_bin, "--user-dir", USER_DIR, *SMALL_LSTM, "--cpu", "--dropout", 0,
               "--optimizer", "adam", "--lr", "0.001", "--max-tokens", 2000, "--seed", 1,
               "--max-epoch", max_epoch, "--patience", 2, "--best-checkpoint-metric", "loss",
               "--maximize-best-checkpoint-metric", "--no-epoch-checkpoints", "--save-dir", save_dir,
               "--log-format", "simple", "--num-workers", 0)
    log = proc.stdout + proc.stderr
    return [int(e) for e in re.findall(r"end of epoch (\d+) \(average epoch stats below\)", log)], log


def test_patience_counts_across_a_restart(data_bin, tmp_path):
    whole, log = patience_run(data_bin, tmp_path / "whole", 10)
    assert whole == [1, 2, 3] and "early stop since valid performance hasn't improved for last 2 runs" in log
    first, _ = patience_run(data_bin, tmp_path / "split", 2)
    assert first == [1, 2]
    state = torch.load(str(tmp_path / "split" / "checkpoint_last.pt"), weights_only=False)["extra_state"]
    assert state["patience"]["num_runs"] == 1 and state["patience"]["best"] == state["best"]
    # fairseq alone would take epoch 3 as the new best and stop after epoch 5
    second, log = patience_run(data_bin, tmp_path / "split", 10)
    assert second == [3] and "early stop" in log


# --- the comparison runner ----------------------------------------------------------------------

def fake_fairseq_train(tmp_path, epochs, finish=True):
    """A stand-in for fairseq-train (a Python script) that logs one json validation record per
    epoch in ``epochs`` and writes checkpoint_last.pt / checkpoint_best.pt; with ``finish=False``
    it exits non-zero after its epochs, like a run killed mid-way."""
    script = tmp_path / "fake_train.py"
    script.write_text(
        "import json, os, sys, time\n"
        "time.sleep(0.3)  # some wall time to count\n"
        "save = sys.argv[sys.argv.index('--save-dir') + 1]\n"
        "os.makedirs(save, exist_ok=True)\n"
        "for e in {epochs!r}:\n"
        "    rec = {{'epoch': e, 'valid1_loss': str(10 - e), 'valid1_bleu': str(float(e)), 'valid1_best_bleu': str(float(e))}}\n"
        "    print('2026-11-23 19:00:00 | INFO | valid1 | ' + json.dumps(rec))\n"
        "    for name in ('checkpoint_last.pt', 'checkpoint_best.pt'):\n"
        "        open(os.path.join(save, name), 'w').write(str(e))\n"
        "sys.exit({code})\n".format(epochs=list(epochs), code=0 if finish else 1))
    return script


@pytest.fixture
def runner_setup(tmp_path, monkeypatch):
    import sys

    from fairseq_wean.compare import runner

    def command(args, recipe, system, variant, run_dir, seed=None):
        return [sys.executable, str(args.script), "--save-dir", os.path.join(run_dir, "checkpoints"),
                "--max-epoch", str(args.max_epoch)]

    monkeypatch.setattr(runner, "train_command", command)
    monkeypatch.setattr(runner, "say", lambda *a, **k: None)
    monkeypatch.setattr(runner, "log", lambda *a, **k: None)
    args = types.SimpleNamespace(budget="converged", max_epoch=4, patience=3, epochs=2, threads=1, script=None)
    recipe = {"valid": {"subset": "valid1", "metric": "bleu"}}
    return runner, args, recipe, tmp_path / "run"


def test_compare_resumes_an_interrupted_run(runner_setup, tmp_path):
    runner, args, recipe, run_dir = runner_setup
    args.script = fake_fairseq_train(tmp_path, [1, 2], finish=False)
    with pytest.raises(RuntimeError, match="fairseq-train failed"):
        runner.train(args, recipe, "lstm", "word", str(run_dir), "lstm/word")
    state = json.loads((run_dir / "train_state.json").read_text())
    assert state["finished"] is False and state["seconds"] > 0
    # the same command again: the checkpoints stay, the log is appended to, epochs 1-2 come from it
    args.script = fake_fairseq_train(tmp_path, [3, 4])
    secs, valid_loss, curve, _ = runner.train(args, recipe, "lstm", "word", str(run_dir), "lstm/word")
    assert [r["epoch"] for r in curve] == [1, 2, 3, 4] and [r["bleu"] for r in curve] == [1.0, 2.0, 3.0, 4.0]
    assert valid_loss == {1: 9.0, 2: 8.0, 3: 7.0, 4: 6.0}
    assert secs >= state["seconds"]
    assert (run_dir / "train.log").read_text().count("$ ") == 2
    assert json.loads((run_dir / "train_state.json").read_text())["finished"] is True


def test_compare_restarts_a_run_whose_command_changed(runner_setup, tmp_path):
    runner, args, recipe, run_dir = runner_setup
    args.script = fake_fairseq_train(tmp_path, [1, 2], finish=False)
    with pytest.raises(RuntimeError):
        runner.train(args, recipe, "lstm", "word", str(run_dir), "lstm/word")
    other = tmp_path / "other.py"
    other.write_text(fake_fairseq_train(tmp_path, [1]).read_text())
    args.script = other  # another command: nothing of the earlier run is kept
    _, _, curve, _ = runner.train(args, recipe, "lstm", "word", str(run_dir), "lstm/word")
    assert [r["epoch"] for r in curve] == [1]
    assert (run_dir / "train.log").read_text().count("$ ") == 1


def test_compare_decodes_a_finished_run_without_training_it_again(runner_setup, tmp_path):
    runner, args, recipe, run_dir = runner_setup
    args.script = fake_fairseq_train(tmp_path, [1, 2, 3, 4])
    runner.train(args, recipe, "lstm", "word", str(run_dir), "lstm/word")
    log_before = (run_dir / "train.log").read_text()
    _, _, curve, _ = runner.train(args, recipe, "lstm", "word", str(run_dir), "lstm/word")
    assert [r["epoch"] for r in curve] == [1, 2, 3, 4]
    assert (run_dir / "train.log").read_text() == log_before  # fairseq-train did not run
    # a higher cap than the one it ended at: it trains on from checkpoint_last.pt
    args.max_epoch = 6
    args.script = fake_fairseq_train(tmp_path, [5, 6])
    _, _, curve, _ = runner.train(args, recipe, "lstm", "word", str(run_dir), "lstm/word")
    assert [r["epoch"] for r in curve] == [1, 2, 3, 4, 5, 6]
