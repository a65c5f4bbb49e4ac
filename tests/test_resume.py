"""Interrupted training goes on where it stopped.

* fairseq-train: ``--patience`` counts the epochs without a better score across a restart from
  ``checkpoint_last.pt`` (compat fix 12; fairseq alone starts counting anew), and a run resumed at
  an epoch boundary trains exactly as the uninterrupted one (compat fix 13).
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


def resume_run(data_bin, save_dir, max_epoch):
    """wean_lstm with dropout on (the issue's case: batches of 32 sentences, dropout 0.3)."""
    cli("fairseq-train", data_bin, "--user-dir", USER_DIR, "--arch", "wean_lstm", "--embed-dim", 16,
        "--encoder-hidden-size", 16, "--decoder-hidden-size", 16, "--cpu", "--dropout", 0.3, "--optimizer", "adam",
        "--lr", "0.005", "--batch-size", 8, "--seed", 1, "--max-epoch", max_epoch, "--no-epoch-checkpoints",
        "--save-dir", save_dir, "--log-format", "simple", "--num-workers", 0)
    return torch.load(str(save_dir / "checkpoint_last.pt"), weights_only=False)


def test_a_run_resumed_at_an_epoch_boundary_equals_the_uninterrupted_run(data_bin, tmp_path):
    """3 epochs in one go, or 2 and then the same command again with --max-epoch 3: the same
    weights to the last bit (compat fix 13: fairseq-fixed built the resumed run's batches under
    another seed; epoch 3 then differed, with dropout and without)."""
    whole = resume_run(data_bin, tmp_path / "whole", 3)
    resume_run(data_bin, tmp_path / "split", 2)
    split = resume_run(data_bin, tmp_path / "split", 3)
    assert split["extra_state"]["train_iterator"] == whole["extra_state"]["train_iterator"]
    assert whole["model"].keys() == split["model"].keys()
    assert all(torch.equal(whole["model"][k], split["model"][k]) for k in whole["model"])


def test_batches_do_not_depend_on_the_epoch_the_iterator_starts_at(data_bin):
    """The iterator fairseq-train builds at epoch 1 and reuses, and the one a resumed run builds at
    epoch 3, give epoch 3 the same batches."""
    from fairseq import options, tasks

    import fairseq_wean  # noqa: F401  (compat fix 13)

    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data_bin), "--user-dir", USER_DIR, "--arch", "lstm", "--batch-size", "8", "--seed", "1", "--cpu"])

    def iterator(epoch):
        task = tasks.setup_task(args)
        task.load_dataset("train")
        return task.get_batch_iterator(dataset=task.dataset("train"), max_sentences=8, seed=1, epoch=epoch,
                                       required_batch_size_multiple=8)

    whole = iterator(1)
    for _ in range(2):
        for _ in whole.next_epoch_itr(shuffle=True):
            pass
    third = [batch["id"].tolist() for batch in whole.next_epoch_itr(shuffle=True)]
    resumed = iterator(3)
    resumed.load_state_dict({"version": 2, "epoch": 3, "iterations_in_epoch": 0, "shuffle": True})
    assert [batch["id"].tolist() for batch in resumed.next_epoch_itr(shuffle=True)] == third


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
