"""wean_lstm end to end through the real CLIs, and the fairseq fixes the plugin applies."""
import os
import re

import numpy as np
import pytest

from conftest import USER_DIR, cli, generated_hypotheses, preprocess, train_args


def epoch_losses(log):
    return [float(m) for m in re.findall(r"\| train \| epoch \d+ \| loss ([\d.]+)", log)]


@pytest.fixture(scope="session")
def wean_run(data_bin, tmp_path_factory):
    save_dir = tmp_path_factory.mktemp("ck-wean")
    proc = cli("fairseq-train", *train_args(data_bin, save_dir, "wean_lstm",
                                            "--embed-dim", 32, "--encoder-hidden-size", 32,
                                            "--decoder-hidden-size", 32, "--dropout", 0.1, "--max-tokens", 400,
                                            epochs=4))
    return save_dir, proc.stdout + proc.stderr


def test_training_loss_goes_down(wean_run):
    _, log = wean_run
    losses = epoch_losses(log)
    assert len(losses) == 4, log[-2000:]
    assert losses[-1] < losses[0] - 0.5


def test_generate_prints_every_test_sentence(wean_run, data_bin):
    """13 test sentences (not a multiple of --required-batch-size-multiple 8): 13 hypotheses."""
    save_dir, _ = wean_run
    proc = cli("fairseq-generate", data_bin, "--user-dir", USER_DIR, "--path", save_dir / "checkpoint_best.pt",
               "--gen-subset", "test", "--beam", 5, "--cpu", "--batch-size", 5,
               "--required-batch-size-multiple", 4, "--print-alignment")
    hyps = generated_hypotheses(proc.stdout)
    assert sorted(hyps) == list(range(13))
    alignments = [line for line in proc.stdout.splitlines() if line.startswith("A-")]
    assert len(alignments) == 13 and all(re.match(r"A-\d+\t(\d+-\d+ ?)+$", a) for a in alignments)


def test_interactive_decodes_from_the_checkpoint(wean_run, data_bin, raw_dir):
    save_dir, _ = wean_run
    lines = open(raw_dir / "test.src").read().splitlines()[:3]
    proc = cli("fairseq-interactive", data_bin, "--user-dir", USER_DIR, "--path", save_dir / "checkpoint_best.pt",
               "--source-lang", "src", "--target-lang", "tgt", "--beam", 5, "--cpu",
               input="\n".join(lines) + "\n")
    assert len([line for line in proc.stdout.splitlines() if line.startswith("H-")]) == 3


def test_checkpoint_reloads_and_training_resumes(wean_run, data_bin, tmp_path):
    save_dir, _ = wean_run
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    os.link(save_dir / "checkpoint_last.pt", resumed / "checkpoint_last.pt")
    proc = cli("fairseq-train", *train_args(data_bin, resumed, "wean_lstm",
                                            "--embed-dim", 32, "--encoder-hidden-size", 32,
                                            "--decoder-hidden-size", 32, "--dropout", 0.1, "--max-tokens", 400, epochs=5))
    log = proc.stdout + proc.stderr
    # fairseq names the epoch to run next: 4 epochs done, 8 updates each (400 pairs, 400 tokens)
    assert re.search(r"Loaded checkpoint .*\(epoch 5 @ 32 updates\)", log), log[-3000:]
    assert re.findall(r"\| train \| epoch (\d+)", log) == ["005"]


def test_plain_fairseq_checkpoint_loads_with_the_plugin(data_bin, tmp_path):
    """torch >= 2.6 weights-only loading: fairseq's own lstm checkpoints load too, no env vars.

    With fairseq's --eval-bleu, whose meters keep numpy arrays in the checkpoint.
    """
    cli("fairseq-train", *train_args(data_bin, tmp_path, "lstm", "--encoder-layers", 1, "--decoder-layers", 1,
                                     "--encoder-embed-dim", 16, "--decoder-embed-dim", 16,
                                     "--encoder-hidden-size", 16, "--decoder-hidden-size", 16,
                                     "--decoder-out-embed-dim", 16, "--eval-bleu", epochs=1))
    proc = cli("fairseq-generate", data_bin, "--user-dir", USER_DIR, "--path", tmp_path / "checkpoint_last.pt",
               "--gen-subset", "test", "--beam", 2, "--cpu")
    assert len(generated_hypotheses(proc.stdout)) == 13


def test_checkpoint_that_runs_code_is_refused(data_bin, tmp_path):
    import torch

    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, ("touch {}".format(marker),))

    evil = tmp_path / "evil.pt"
    torch.save({"model": {}, "args": Exploit()}, evil)
    for command in ("fairseq-generate", "fairseq-interactive"):
        proc = cli(command, data_bin, "--user-dir", USER_DIR, "--path", evil, "--cpu", "--gen-subset", "test",
                   check=False, input="w1 w2\n")
        assert proc.returncode != 0
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("fairseq-wean: error: refusing to load checkpoint"), proc.stderr[-2000:]
        assert "system" in last
        assert not marker.exists()


def test_non_joined_dictionary_error_through_fairseq_train(data_bin_unjoined, tmp_path):
    proc = cli("fairseq-train", *train_args(data_bin_unjoined, tmp_path, "wean_lstm", epochs=1), check=False)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairseq-wean: error:") and "--joined-dictionary" in last
    assert "Traceback" not in proc.stderr


def test_checkpoint_from_a_mismatched_dictionary(wean_run, tmp_path):
    """Data binarized with a dictionary of another size: one-line error naming the dictionary."""
    save_dir, _ = wean_run
    for name, words in (("smaller", 20), ("reordered", 40)):
        raw = tmp_path / name
        raw.mkdir()
        for split in ("train", "valid", "test"):
            with open(raw / (split + ".src"), "w") as fs, open(raw / (split + ".tgt"), "w") as ft:
                # every word once, most frequent first in reverse order: another dictionary
                for i in range(words):
                    line = " ".join("w{}".format(j) for j in range(words - 1, i - 1, -1))
                    fs.write(line + "\n")
                    ft.write(line + "\n")
        other = preprocess(raw, tmp_path / (name + "-bin"))
        proc = cli("fairseq-generate", other, "--user-dir", USER_DIR, "--path", save_dir / "checkpoint_best.pt",
                   "--gen-subset", "test", "--cpu", check=False)
        assert proc.returncode != 0
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("fairseq-wean: error:") and "dictionary" in last, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr


def test_last_batch_is_kept_where_fairseq_drops_it():
    import fairseq_wean.compat as compat
    from fairseq.data import data_utils

    indices = np.arange(13, dtype=np.int64)
    kwargs = dict(num_tokens_fn=lambda i: 5, max_sentences=8, required_batch_size_multiple=8)
    from fairseq_wean import patching

    dropped = compat._original_batch_by_size(indices, **kwargs)
    if patching.status()["compat 1 (last batch kept)"][0]:
        assert sum(len(b) for b in dropped) == 8  # fairseq-fixed's own function loses 5 of 13
    else:  # fairseq 0.12.2 keeps them: the fix is not applied
        assert sum(len(b) for b in dropped) == 13 and data_utils.batch_by_size is compat._original_batch_by_size
    kept = data_utils.batch_by_size(indices, **kwargs)
    assert [list(b) for b in kept] == [list(range(8)), list(range(8, 13))]
