"""fairseq-eval-lm and fairseq-validate with the plugin: the word-level scores of subword-nmt pieces
(compat fix 19), and the options these commands read from a data folder or do not read at all.

A tiny ``transformer_lm`` is trained once on text of subword-nmt pieces (``@@`` continuations); the
reference is the token-level result: the same log-probabilities summed over fewer words, so
word loss = token loss x tokens / words, where words = tokens - the continuation pieces fairseq joins (all
but a block's last token; blocks of --tokens-per-sample tokens of the stream of lines).
"""
import os
import random
import re

import pytest

from conftest import cli, override

PIECES = ["th@@", "e", "ca@@", "t", "s@@", "at", "on", "ma@@", "t", "dog", "ru@@", "n@@", "s"]


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval_lm")
    rng = random.Random(3)
    for split, n in (("train", 200), ("valid", 30), ("test", 30)):
        with open(root / "{}.txt".format(split), "w", encoding="utf-8") as f:
            for _ in range(n):
                f.write(" ".join(rng.choice(PIECES) for _ in range(rng.randint(3, 9))) + "\n")
    data = root / "bin"
    cli("fairseq-preprocess", "--only-source", "--trainpref", root / "train.txt", "--validpref", root / "valid.txt",
        "--testpref", root / "test.txt", "--destdir", data, "--workers", "1")
    save = root / "ck"
    cli("fairseq-train", data, "--user-dir", "fairseq_wean", "--task", "language_modeling", "--arch", "transformer_lm",
        "--decoder-layers", "1", "--decoder-embed-dim", "16", "--decoder-ffn-embed-dim", "16",
        "--decoder-attention-heads", "2", "--tokens-per-sample", "16",
        "--optimizer", "adam", "--lr", "0.001", "--max-tokens", "256", "--max-epoch", "1", "--seed", "1",
        "--save-dir", save, "--no-epoch-checkpoints", "--num-workers", "0")
    # fairseq's blocks (--sample-break-mode none): the stream of tokens, each line then </s>, cut every 16
    stream = [tok for line in open(root / "test.txt", encoding="utf-8") for tok in line.split() + ["</s>"]]
    blocks = [stream[i:i + 16] for i in range(0, len(stream), 16)]
    joined = sum(tok.endswith("@@") for block in blocks for tok in block[:-1])  # a block's last token stays
    return data, save / "checkpoint_best.pt", len(stream), joined


def eval_lm(lm, *extra, check=True):
    data, path = lm[0], lm[1]
    return cli("fairseq-eval-lm", *override([data, "--user-dir", "fairseq_wean", "--path", path, "--gen-subset", "test",
                                             "--tokens-per-sample", "16", "--max-tokens", "256", "--cpu",
                                             "--num-workers", "0"], extra), check=check)


def loss_and_count(proc):
    text = proc.stdout + proc.stderr
    loss = float(re.search(r"Loss \(base 2\): ([0-9.]+)", text).group(1))
    count = int(re.search(r"Evaluated (\d+) tokens", text).group(1))
    return loss, count


@pytest.mark.parametrize("form", ["subword_nmt", "@@ ", "bare"])
def test_every_subword_nmt_form_gives_the_word_level_score(lm, form):
    """--post-process subword_nmt, '@@ ' and a bare --post-process (fairseq's const: subword_nmt) all join the
    pieces: the word loss is the token loss over the words (fairseq took 'subword_nmt' for the marker itself,
    joined nothing and printed the token loss as the word loss)."""
    token_loss, tokens = loss_and_count(eval_lm(lm))
    assert tokens == lm[2]
    args = ["--post-process"] if form == "bare" else ["--post-process", form]
    word_loss, _ = loss_and_count(eval_lm(lm, *args))
    words = lm[2] - lm[3]
    assert word_loss == pytest.approx(token_loss * tokens / words, rel=2e-3)
    assert word_loss > token_loss * 1.1


@pytest.mark.parametrize("args, message", [
    (["--post-process", "sentencepiece"], "--post-process sentencepiece is not implemented by fairseq-eval-lm"),
    (["--context-window", "16"], "--context-window 16 must be below --tokens-per-sample 16"),
    (["--results-path", "{tmp}/r"], "--results-path does nothing here"),
    (["--gen-subset", "nosuch"], "holds no subset 'nosuch' (it holds: test, train, valid)"),
])
def test_eval_lm_options_it_cannot_use_are_one_line_before_any_work(lm, tmp_path, args, message):
    proc = eval_lm(lm, *[a.format(tmp=tmp_path) for a in args], check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert message in proc.stderr.strip().splitlines()[-1]
    assert "Loss" not in proc.stdout + proc.stderr
    assert not os.path.exists(tmp_path / "r")


def test_a_language_model_checkpoint_validates_and_loads_in_the_hub(lm):
    """The stored-path rule forgot LanguageModelingConfig's plasma_path (a str field) as None: fairseq-validate
    and the hub then failed with an omegaconf ValidationError when fairseq built the task from the checkpoint.
    A forgotten field that cannot be None takes fairseq's default (stored_paths._section_required_defaults)."""
    from fairseq.models.transformer_lm import TransformerLanguageModel

    data, path = lm[0], lm[1]
    proc = cli("fairseq-validate", data, "--user-dir", "fairseq_wean", "--task", "language_modeling", "--path", path,
               "--valid-subset", "valid", "--max-tokens", "256", "--cpu", "--num-workers", "0")
    assert "| valid on 'valid' subset | loss " in proc.stdout + proc.stderr, proc.stderr[-1500:]
    hub = TransformerLanguageModel.from_pretrained(str(path.parent), checkpoint_file=path.name,
                                                   data_name_or_path=str(data))
    assert hub.cfg.task.plasma_path == "/tmp/plasma"  # fairseq's default, not the stored value
    line = open(data.parent / "test.txt", encoding="utf-8").readline().split()  # the model's own pieces
    assert len(hub.encode(" ".join(line))) == len(line) + 1
