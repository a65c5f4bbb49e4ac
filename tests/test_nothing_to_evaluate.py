"""Nothing to evaluate is not a result: every command whose data are all skipped as too long is one line before any
batch (compat.nothing_left_problem: fairseq went on to an IndexError in batch_by_size, a ZeroDivisionError, or
fairseq-eval-lm's "Evaluated 0 tokens ... Perplexity: 1.00", exit 0); fairseq-eval-lm's --tokens-per-sample above
the model's positions and an --output-dictionary-size other than the checkpoint's are one line
(fairseq_wean/eval_lm_checks.py); fairseq-generate --score-reference's summary line says what its score is.
"""
import re
import sys

import pytest
import torch

from conftest import USER_DIR, cli, override, train_args

from fairseq_wean import eval_lm_checks
from fairseq_wean.errors import FairseqWeanError


@pytest.fixture(scope="module")
def translation(data_bin, tmp_path_factory):
    save = tmp_path_factory.mktemp("ck")
    cli("fairseq-train", *train_args(data_bin, save, "wean_lstm", "--embed-dim", "8", "--encoder-hidden-size", "8",
                                     "--decoder-hidden-size", "8", "--max-update", "2", epochs=1))
    return data_bin, save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm")
    for split, n in (("train", 60), ("valid", 8), ("test", 8)):
        (root / "{}.txt".format(split)).write_text("".join("w{} w{} w{}\n".format(i % 5, i % 7, i % 3)
                                                           for i in range(n)), encoding="utf-8")
    data = root / "bin"
    cli("fairseq-preprocess", "--only-source", "--trainpref", root / "train.txt", "--validpref", root / "valid.txt",
        "--testpref", root / "test.txt", "--destdir", data, "--workers", "1")
    cli("fairseq-train", data, "--user-dir", USER_DIR, "--task", "language_modeling", "--arch", "transformer_lm",
        "--decoder-layers", "1", "--decoder-embed-dim", "8", "--decoder-ffn-embed-dim", "8",
        "--decoder-attention-heads", "2", "--tokens-per-sample", "16", "--optimizer", "adam", "--lr", "0.001",
        "--max-tokens", "256", "--max-update", "1", "--save-dir", root / "ck", "--no-epoch-checkpoints",
        "--num-workers", "0", "--cpu")
    return data, root / "ck" / "checkpoint_last.pt"


def eval_lm(lm, *extra):
    return cli("fairseq-eval-lm", *override([lm[0], "--user-dir", USER_DIR, "--path", lm[1], "--gen-subset", "test",
                                             "--max-tokens", "256", "--cpu", "--num-workers", "0"], extra), check=False)


SKIP_ALL = ["--max-source-positions", "2", "--skip-invalid-size-inputs-valid-test"]


@pytest.mark.parametrize("command, extra", [
    ("fairseq-generate", SKIP_ALL),
    ("fairseq-generate", SKIP_ALL + ["--required-batch-size-multiple", "1"]),  # was a ZeroDivisionError
    ("fairseq-validate", SKIP_ALL),
    ("fairseq-train", ["--max-source-positions", "2"]),  # the training subset: every pair skipped
])
def test_every_command_with_every_sentence_skipped_is_one_line(translation, tmp_path, command, extra):
    data, path = translation
    if command == "fairseq-train":
        args = train_args(data, tmp_path / "ck", "wean_lstm", "--embed-dim", "8", "--encoder-hidden-size", "8",
                          "--decoder-hidden-size", "8", *extra, epochs=1)
    else:
        subset = ["--gen-subset", "test"] if command == "fairseq-generate" else ["--valid-subset", "test"]
        args = [data, "--user-dir", USER_DIR, "--task", "translation", "--path", path, "--cpu", "--max-tokens", "2000",
                *subset, *extra]
    proc = cli(command, *args, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in text, text[-3000:]
    assert re.search(r"error: every one of the \d+ sentence\(s\) of subset (test|train) is longer than the model "
                     r"accepts \(max positions \(2, \d+\); the shortest has length", text), text[-2000:]
    assert "H-" not in proc.stdout and not list(tmp_path.glob("ck/*.pt"))


@pytest.mark.parametrize("extra, refused", [
    ([], "--tokens-per-sample 1024 is above the model's 16 positions"),  # fairseq's default: PPL 1.00 over 0 tokens
    (["--context-window", "8"], "--tokens-per-sample 1024 is above the model's 16 positions"),
    (["--tokens-per-sample", "17"], "--tokens-per-sample 17 is above the model's 16 positions"),
    (["--tokens-per-sample", "32", "--sample-break-mode", "complete"], "--tokens-per-sample 32 is above"),
    (["--output-dictionary-size", "5"], "--output-dictionary-size 5 does not fit the checkpoint"),
    (["--tokens-per-sample", "16"], None),
    (["--tokens-per-sample", "16", "--context-window", "4"], None),
    (["--sample-break-mode", "eos"], None),  # a block is a sentence: each shorter than 16
    (["--tokens-per-sample", "16", "--context-window", "4", "--sample-break-mode", "eos"], None),  # numpy 2: np.compat
    (["--tokens-per-sample", "16", "--output-dictionary-size", "-1"], None),
])
def test_eval_lm_options_against_the_checkpoint(lm, extra, refused):
    proc = eval_lm(lm, *extra)
    text = proc.stdout + proc.stderr
    if refused is None:
        assert proc.returncode == 0, text[-3000:]
        assert int(re.search(r"Evaluated ([\d,]+) tokens", text).group(1).replace(",", "")) > 0
        return
    assert proc.returncode != 0 and "Traceback" not in text and refused in text, text[-3000:]
    assert "Perplexity" not in text


def test_block_length_rule():
    problem = eval_lm_checks.block_length_problem
    assert problem(16, 0, "none", 16) is None and problem(12, 4, "none", 16) is None
    assert problem(13, 4, "none", 16).startswith("--tokens-per-sample 17 is above the model's 16 positions")
    assert problem(1024, 0, "eos", 16) is None  # eos: blocks are sentences
    assert problem(17, 0, "complete_doc", (16, 16)) is not None and problem(17, 0, "none", None) is None


def test_output_dictionary_size_read_from_the_stored_configuration(tmp_path, monkeypatch):
    import argparse

    path = tmp_path / "lm.pt"
    torch.save({"cfg": {"task": {"_name": "language_modeling", "output_dictionary_size": 7}}}, path)
    for command, given, refused in ((c, g, r) for c in ("fairseq-eval-lm", "fairseq-validate")
                                    for g, r in ((7, False), (-1, True), (5, True))):
        monkeypatch.setattr(sys, "argv", [command, "--output-dictionary-size", str(given)])
        problem = eval_lm_checks.output_dictionary_size_problem(argparse.Namespace(path=str(path),
                                                                                   output_dictionary_size=given))
        assert (problem is not None) == refused
        assert not refused or ("trained with --output-dictionary-size 7" in problem and command in problem)
    monkeypatch.setattr(sys, "argv", ["fairseq-eval-lm"])  # not written: fairseq's default, not checked
    unwritten = argparse.Namespace(path=str(path), output_dictionary_size=-1)
    assert eval_lm_checks.output_dictionary_size_problem(unwritten) is None


def test_nothing_left_is_one_line_in_process():
    """The mechanism itself, on fairseq's FairseqTask.filter_indices_by_size with a dataset of too-long items."""
    import numpy as np
    from fairseq.data import FairseqDataset
    from fairseq.tasks import FairseqTask

    class Sized(FairseqDataset):
        sizes = np.array([5, 6, 7])

        def __len__(self):
            return 3

        def size(self, i):
            return int(self.sizes[i])

        def num_tokens(self, i):
            return self.size(i)

    task = FairseqTask({})
    task.datasets = {"valid": Sized()}
    indices = np.arange(3)
    with pytest.raises(FairseqWeanError, match=r"every one of the 3 sentence\(s\) of subset valid .*max positions 4; "
                                               r"the shortest has length 5"):
        task.filter_indices_by_size(indices, task.datasets["valid"], 4, ignore_invalid_inputs=True)
    assert list(task.filter_indices_by_size(indices, task.datasets["valid"], 6, ignore_invalid_inputs=True)) == [0, 1]
    assert len(task.filter_indices_by_size(indices[:0], task.datasets["valid"], 4, ignore_invalid_inputs=True)) == 0


def test_score_reference_summary_line_says_what_it_scores(translation):
    data, path = translation
    base = [data, "--user-dir", USER_DIR, "--path", path, "--cpu", "--max-tokens", "2000", "--gen-subset", "test"]
    scored = cli("fairseq-generate", *base, "--score-reference").stdout.splitlines()[-1]
    assert scored.startswith("Generate test with beam=5: BLEU4 = ") and scored.endswith("not a model's score)")
    decoded = cli("fairseq-generate", *base, "--beam", "1", "--max-len-b", "5").stdout.splitlines()[-1]
    assert decoded.startswith("Generate test with beam=1: BLEU4 = ") and "--score-reference" not in decoded


def test_the_language_model_hub_scores_and_samples(lm):
    """fairseq's TransformerLanguageModel hub (its eos blocks used np.compat.long: numpy 2's AttributeError)."""
    from fairseq.models.transformer_lm import TransformerLanguageModel

    hub = TransformerLanguageModel.from_pretrained(str(lm[1].parent), lm[1].name, data_name_or_path=str(lm[0]))
    scores = hub.score("w1 w2 w0")["positional_scores"]
    assert scores.shape == (3,) and torch.isfinite(scores).all()  # w2, w0, </s>: each after its context
    assert hub.sample("w1 w2", beam=1, max_len_b=3).startswith("w1 w2")
