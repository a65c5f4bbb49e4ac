"""Bad input and unsafe or damaged checkpoints through the real commands: one line, non-zero exit.

Every case runs the real console script (fairseq-train, fairseq-generate, fairseq-interactive,
python -m preprocess.check_parallel, the examples) and checks that it exits non-zero, that the
last line of stderr is the plugin's one-line error naming the problem and the fix, and that
no Python traceback is shown.

Covered elsewhere (not repeated here):
* ``--arch wean_lstm`` on data binarized without ``--joined-dictionary``, a checkpoint of a
  dictionary of another size or order, and a crafted checkpoint refused by fairseq-generate and
  fairseq-interactive: tests/test_cli_wean.py;
* ``--arch core_copy`` without ``--joined-dictionary``: tests/test_core_copy.py
  (test_error_paths_through_fairseq_train);
* the scorer's bad input (hypothesis and reference files of different lengths, an empty
  hypothesis line, a fairseq-generate log with missing sentence ids): tests/test_scorer.py.

All the CLI runs of this file happen in two stages of concurrent processes (``cli_concurrently``):
start-up (importing torch and fairseq) dominates each run.
"""
import json
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import REPO, USER_DIR, cli, cli_concurrently, generated_hypotheses, train_args

TINY_WEAN = ["--embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16,
             "--encoder-layers", 1, "--decoder-layers", 1, "--dropout", 0.1, "--max-tokens", 400]
TINY_CORE = ["--embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16,
             "--decoder-out-embed-dim", 16, "--core-num-frequent", 10, "--core-topk", 5,
             "--criterion", "core_mode_loss", "--max-tokens", 400]
TINY_GATED = ["--encoder-embed-dim", 16, "--decoder-embed-dim", 16, "--encoder-hidden-size", 16,
              "--decoder-hidden-size", 16, "--decoder-out-embed-dim", 16, "--max-tokens", 400]
PREFIX = "fairseq-wean: error: "
SHORT = 8  # --max-source-positions for the over-long sentence cases: 7 words + </s>


def last_error_line(proc, prefix=PREFIX):
    """The one-line error: non-zero exit, no traceback, the message is the last line of stderr."""
    assert proc.returncode != 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-5000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(prefix), proc.stderr[-3000:]
    return line


def write_evil_checkpoint(path, marker):
    """A checkpoint whose pickle calls os.system("touch MARKER") when loaded without weights_only."""
    import torch

    class Exploit:
        def __reduce__(self):
            return (os.system, ("touch {}".format(marker),))

    torch.save({"model": {}, "args": Exploit(), "cfg": None}, path)
    return path


def unwritable_dir(work):
    """A directory that this process cannot create files in, or None (root writes through mode 0555)."""
    locked = work / "read-only"
    locked.mkdir()
    locked.chmod(0o555)
    candidates = [locked / "save"] if not os.access(locked, os.W_OK) else [Path("/sys/fairseq-wean-test-save")]
    for path in candidates:  # /sys (sysfs) refuses new directories even to root
        try:
            os.makedirs(path)
        except OSError:
            return path
        os.rmdir(path)
    return None


def write_table(path, words):
    with open(path, "w", encoding="utf-8") as f:
        for w in words:
            f.write("{}\t{}\t3\n".format(w, w))
    return path


@pytest.fixture(scope="module")
def runs(data_bin, raw_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("errors")
    marker = work / "pwned"
    evil = write_evil_checkpoint(work / "evil.pt", marker)
    words = ["w{}".format(i) for i in range(40)]
    good_table = write_table(work / "good.table", words)
    other_table = write_table(work / "other.table", words[:5] + ["zebra", "yak", "w99"])
    malformed = work / "malformed.table"
    malformed.write_text("w1\tw2\t3\nw1 w3 2\n")
    latin1 = work / "latin1.table"
    latin1.write_bytes("w1\tw2\t3\nw1\tcaf\u00e9\t2\n".encode("latin-1"))
    tiny = work / "tiny"
    # raw files with a stray \r (fairseq-preprocess would read two lines) and an empty line
    from conftest import write_parallel

    write_parallel(str(work / "cr"), 30, seed=5)
    with open(work / "cr.src", "a") as f:
        f.write("w1\rw2 w3\n\n")
    with open(work / "cr.tgt", "a") as f:
        f.write("w2 w3\nw4\n")
    checked = check_parallel("--src", work / "cr.src", "--tgt", work / "cr.tgt", "--out-prefix", work / "checked")
    (work / "empty.src").write_text("")
    (work / "empty.tgt").write_text("")
    save_unwritable = unwritable_dir(work)

    def binarize(destdir, trainpref, *extra):
        return ("fairseq-preprocess", ["--source-lang", "src", "--target-lang", "tgt", "--trainpref", trainpref,
                                       "--validpref", raw_dir / "valid", "--destdir", destdir, "--workers", 1,
                                       "--joined-dictionary", *extra], {"check": False})

    names0 = ["binarize_empty", "binarize_cr", "preprocess_cr_plugin"]
    stage0 = cli_concurrently([
        binarize(work / "empty-bin", work / "empty"),
        binarize(work / "cr-bin", work / "cr"),  # fairseq alone: 33 source sentences, 32 target
        binarize(work / "cr-plugin-bin", work / "cr", "--user-dir", USER_DIR),
    ])
    assert stage0[0].returncode == 0 and stage0[1].returncode == 0, (stage0[0].stderr[-2000:], stage0[1].stderr[-2000:])

    def core(save, *extra):
        return ("fairseq-train", train_args(data_bin, work / save, "core_copy", *TINY_CORE, *extra, epochs=1),
                {"check": False})

    def wean(save, *extra):
        return ("fairseq-train", train_args(data_bin, work / save, "wean_lstm", *TINY_WEAN, *extra, epochs=1),
                {"check": False})

    names = ["tiny", "no_table", "missing_table", "malformed_table", "latin1_table", "other_dict_table",
             "core_cross_entropy", "criterion_without_gate", "train_evil", "restore_missing",
             "train_too_long", "train_too_long_skipped", "preprocess_checked",
             "train_empty_set", "train_not_parallel", "train_unwritable_save_dir"]
    stage1 = cli_concurrently([
        ("fairseq-train", train_args(data_bin, tiny, "wean_lstm", *TINY_WEAN, epochs=1)),
        core("e1"),
        core("e2", "--core-align-table", work / "missing.table"),
        core("e3", "--core-align-table", malformed),
        core("e4", "--core-align-table", latin1),
        core("e5", "--core-align-table", other_table),
        core("e6", "--core-align-table", good_table, "--criterion", "cross_entropy"),
        wean("e7", "--criterion", "core_mode_loss"),
        wean("e8", "--restore-file", evil),
        wean("e9", "--restore-file", work / "chekpoint_typo.pt"),
        wean("e10", "--max-source-positions", SHORT, "--max-update", 2),
        wean("e11", "--max-source-positions", SHORT, "--max-update", 2, "--skip-invalid-size-inputs-valid-test"),
        ("fairseq-preprocess", ["--source-lang", "src", "--target-lang", "tgt", "--trainpref", work / "checked",
                                "--destdir", work / "checked-bin", "--workers", 1, "--joined-dictionary",
                                "--only-source"], {"check": False}),
        ("fairseq-train", train_args(work / "empty-bin", work / "e12", "wean_lstm", *TINY_WEAN, epochs=1),
         {"check": False}),
        ("fairseq-train", train_args(work / "cr-bin", work / "e13", "wean_lstm", *TINY_WEAN, epochs=1),
         {"check": False}),
        ("fairseq-train", train_args(data_bin, save_unwritable or work / "e14", "wean_lstm", *TINY_WEAN, epochs=1),
         {"check": False}),
    ])
    result = dict(zip(names, stage1), check_parallel_cr=checked, save_unwritable=save_unwritable)
    result.update(zip(names0, stage0))

    best = tiny / "checkpoint_best.pt"
    data = best.read_bytes()
    truncated, flipped = work / "truncated.pt", work / "flipped.pt"
    truncated.write_bytes(data[: len(data) // 2])
    damaged = bytearray(data)
    for i in range(len(damaged) // 2, len(damaged) // 2 + 64):
        damaged[i] ^= 0xFF
    flipped.write_bytes(bytes(damaged))
    plan = work / "plan.json"
    plan.write_text(json.dumps({
        "data": str(data_bin), "user_dir": USER_DIR, "data_root": str(raw_dir), "gen_dir": str(work / "gen"),
        "selected": {"epoch": 1, "checkpoint": str(evil), "curve": [{"epoch": 1, "bleu": 0.0}]},
        "valid": {"subset": "valid", "orig": "valid.src", "refs": ["valid.tgt"], "metrics": "bleu", "metric": "bleu"},
        "tests": {}, "gen_args": ["--cpu", "--beam", "1"], "out": str(work / "result.json"),
    }))
    long_line = " ".join("w{}".format(i % 40) for i in range(1100))  # > the default 1024 positions
    latin1_input = work / "latin1-input.txt"
    latin1_input.write_bytes(b"w1 w2 w3\nw4 w5\nw6 caf\xe9\nw7\n")

    def generate(path, *extra):
        return ("fairseq-generate", [data_bin, "--user-dir", USER_DIR, "--path", path, "--gen-subset", "test",
                                     "--beam", 2, "--cpu", *extra], {"check": False})

    names2 = ["to_word_attn_gated", "to_core_copy", "generate_truncated", "generate_flipped",
              "train_truncated", "generate_too_long", "generate_too_long_skipped", "interactive_too_long",
              "figure3_evil", "evaluate_system_evil", "interactive_latin1_input"]
    stage2 = cli_concurrently([
        ("fairseq-train", train_args(data_bin, work / "f1", "word_attn_gated", *TINY_GATED, "--restore-file", best,
                                     epochs=2), {"check": False}),
        ("fairseq-train", train_args(data_bin, work / "f2", "core_copy", *TINY_CORE, "--core-align-table",
                                     good_table, "--restore-file", best, epochs=2), {"check": False}),
        generate(truncated),
        generate(flipped),
        wean("f3", "--restore-file", truncated),
        generate(best, "--max-source-positions", SHORT),
        generate(best, "--max-source-positions", SHORT, "--skip-invalid-size-inputs-valid-test"),
        ("fairseq-interactive", [data_bin, "--user-dir", USER_DIR, "--path", best, "--source-lang", "src",
                                 "--target-lang", "tgt", "--beam", 2, "--cpu"],
         {"input": "w1 w2 w3\n" + long_line + "\n", "check": False}),
        ("python", [os.path.join(REPO, "examples", "word_attention_figure3.py"), "--path", evil, "--data", data_bin,
                    "--source", "w1 w2", "--output", work / "fig.png"], {"check": False}),
        ("python", ["-m", "fairseq_wean.compare.evaluate", plan], {"check": False}),
        ("fairseq-interactive", [data_bin, "--user-dir", USER_DIR, "--path", best, "--source-lang", "src",
                                 "--target-lang", "tgt", "--beam", 2, "--cpu", "--input", latin1_input, "--buffer-size", 4],
         {"check": False}),
    ])
    result.update(zip(names2, stage2))
    result.update(work=work, marker=marker, best=best, truncated=truncated, flipped=flipped)
    return result


# ------------------------------------------------------------------ core_copy and its criterion
def test_core_copy_without_align_table(runs):
    line = last_error_line(runs["no_table"])
    assert "needs --core-align-table" in line and "fairseq-wean-align-table" in line


def test_core_copy_with_missing_align_table(runs):
    line = last_error_line(runs["missing_table"])
    assert "missing.table: no such file" in line and "fairseq-wean-align-table" in line


def test_core_copy_with_malformed_align_table(runs):
    line = last_error_line(runs["malformed_table"])
    assert "line 2 is malformed" in line and "SOURCE<TAB>TARGET<TAB>SCORE" in line
    line = last_error_line(runs["latin1_table"])
    assert "line 2 is not UTF-8" in line and "rebuild" in line


def test_core_copy_with_table_of_another_dictionary_reports_the_words(runs):
    line = last_error_line(runs["other_dict_table"])
    assert "3 word(s) are not in the dictionary (e.g. w99 yak zebra)" in line
    assert "build the table with the dictionary fairseq-preprocess wrote" in line
    assert "fairseq-wean-align-table --src train.src --tgt train.tgt --dict data-bin/dict.src.txt" in line


def test_core_copy_refuses_a_criterion_with_infinite_loss(runs):
    line = last_error_line(runs["core_cross_entropy"])
    assert "--arch core_copy needs --criterion core_mode_loss" in line and "infinite" in line


def test_core_mode_loss_with_a_model_without_copy_gate(runs):
    line = last_error_line(runs["criterion_without_gate"])
    assert "--criterion core_mode_loss needs a model with a copy gate" in line and "--arch core_copy" in line
    # refused when the model is built, before a training step: fairseq writes crash.pt (the
    # whole model) when a step fails; --save-dir is created, and stays empty
    assert "num. shared model params" not in runs["criterion_without_gate"].stdout
    assert os.listdir(runs["work"] / "e7") == []


# ------------------------------------------------------------------ checkpoints
def test_checkpoint_into_another_architecture(runs):
    """A wean_lstm checkpoint restored with --arch word_attn_gated or core_copy."""
    for name, model in (("to_word_attn_gated", "WordAttnGatedModel"), ("to_core_copy", "CoreCopyModel")):
        line = last_error_line(runs[name])
        assert "the checkpoint does not fit {}".format(model) in line
        assert "--arch and model options it was trained with" in line


def test_restore_file_that_does_not_exist_is_not_a_fresh_start(runs):
    line = last_error_line(runs["restore_missing"])
    assert "chekpoint_typo.pt: no such file" in line and "from scratch" in line
    assert not os.path.exists(runs["work"] / "e9" / "checkpoint_last.pt")


@pytest.mark.parametrize("name", ["generate_truncated", "generate_flipped", "train_truncated"])
def test_damaged_checkpoint(runs, name):
    """Half a checkpoint (a killed copy), and 64 flipped bytes that torch itself would load."""
    path = runs["flipped" if name == "generate_flipped" else "truncated"]
    line = last_error_line(runs[name])
    assert line.startswith(PREFIX + "checkpoint {} is truncated or corrupted".format(path))
    assert "use an earlier checkpoint" in line
    if name == "generate_flipped":
        assert "CRC" in line


@pytest.mark.parametrize("name", ["train_evil", "figure3_evil", "evaluate_system_evil"])
def test_checkpoint_that_runs_code_is_refused(runs, name):
    """fairseq-generate and fairseq-interactive: tests/test_cli_wean.py; here the other loaders."""
    line = last_error_line(runs[name])
    assert line.startswith(PREFIX + "refusing to load checkpoint") and "system" in line
    assert not runs["marker"].exists()


# ------------------------------------------------------------------ sentences longer than the model accepts
def count_too_long(path, limit):
    with open(path) as f:
        return sum(1 for line in f if len(line.split()) + 1 > limit)


def test_too_long_training_pairs_are_skipped_with_a_count(runs, raw_dir):
    log = runs["train_too_long_skipped"].stdout + runs["train_too_long_skipped"].stderr
    assert runs["train_too_long_skipped"].returncode == 0, log[-3000:]
    n_train = count_too_long(raw_dir / "train.src", SHORT)
    assert n_train > 0
    # fairseq's own warning; the target limit is --max-tokens (400) for training
    assert re.search(r"{:,} samples have invalid sizes and will be skipped, max_positions=\({}, 400\)".format(
        n_train, SHORT), log), log[-3000:]


def test_too_long_validation_sentences_stop_training_with_the_fix(runs, raw_dir):
    line = last_error_line(runs["train_too_long"])
    n_valid = count_too_long(raw_dir / "valid.src", SHORT)
    assert "{} sentence(s) are longer than the model accepts".format(n_valid) in line
    assert "--skip-invalid-size-inputs-valid-test" in line and "preprocess.check_parallel" in line


def test_too_long_test_sentences_in_generate_and_interactive(runs, raw_dir):
    n_test = count_too_long(raw_dir / "test.src", SHORT)
    assert 0 < n_test < 13
    line = last_error_line(runs["generate_too_long"])
    assert "{} sentence(s) are longer than the model accepts".format(n_test) in line
    assert "--skip-invalid-size-inputs-valid-test" in line
    # with the flag: those sentences get no hypothesis, the others do
    skipped = runs["generate_too_long_skipped"]
    assert skipped.returncode == 0, skipped.stderr[-3000:]
    assert len(generated_hypotheses(skipped.stdout)) == 13 - n_test
    line = last_error_line(runs["interactive_too_long"])
    assert "1 sentence(s) are longer than the model accepts" in line and "1101" in line


# ------------------------------------------------------------------ raw parallel files: preprocess.check_parallel
def check_parallel(*args):
    return cli("python", "-m", "preprocess.check_parallel", *args, check=False)


def test_parallel_files_with_different_line_counts(tmp_path):
    (tmp_path / "a.src").write_text("w1 w2\nw3\nw4 w5\n")
    (tmp_path / "a.tgt").write_text("w1\nw3\n")
    out = tmp_path / "out"
    (tmp_path / "out.src").write_text("an earlier output\n")
    proc = check_parallel("--src", tmp_path / "a.src", "--tgt", tmp_path / "a.tgt", "--out-prefix", out)
    line = last_error_line(proc, prefix="check_parallel: error: ")
    assert "a.src has 3 lines but" in line and "a.tgt has 2" in line and "not line-parallel" in line
    assert (tmp_path / "out.src").read_text() == "an earlier output\n"  # nothing written, nothing lost
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.src", "a.tgt", "out.src"]


def test_parallel_file_with_a_non_utf8_byte(tmp_path):
    (tmp_path / "a.src").write_bytes(b"w1 w2\nw3 caf\xe9\n")
    (tmp_path / "a.tgt").write_text("w1\nw3\n")
    proc = check_parallel("--src", tmp_path / "a.src", "--tgt", tmp_path / "a.tgt", "--out-prefix", tmp_path / "o")
    line = last_error_line(proc, prefix="check_parallel: error: ")
    assert "a.src line 2 is not UTF-8" in line and "iconv" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.src", "a.tgt"]


def test_parallel_files_with_empty_and_too_long_lines(tmp_path):
    src = ["w1 w2", "", "w1 w2 w3 w4 w5 w6", "w7\r w8", "   ", "w9"]
    tgt = ["w1", "w3", "w1 w2", "w7 w8", "w4", ""]
    (tmp_path / "a.src").write_text("\n".join(src) + "\n")
    (tmp_path / "a.tgt").write_text("\n".join(tgt) + "\n")
    common = ["--src", tmp_path / "a.src", "--tgt", tmp_path / "a.tgt", "--max-len", 4]
    proc = check_parallel(*common, "--out-prefix", tmp_path / "skip" / "train")
    assert proc.returncode == 0, proc.stderr
    assert "6 pairs read, 2 written" in proc.stderr
    assert "skipped 3 with an empty line (lines 2, 5, 6)" in proc.stderr
    assert "skipped 1 longer than 4 tokens (lines 3)" in proc.stderr
    assert (tmp_path / "skip" / "train.src").read_text() == "w1 w2\nw7 w8\n"
    assert (tmp_path / "skip" / "train.tgt").read_text() == "w1\nw7 w8\n"
    proc = check_parallel(*common, "--truncate", "--out-prefix", tmp_path / "cut" / "train")
    assert proc.returncode == 0 and "truncated 1 to 4 tokens" in proc.stderr
    assert (tmp_path / "cut" / "train.src").read_text() == "w1 w2\nw1 w2 w3 w4\nw7 w8\n"
    # the inputs are never overwritten
    proc = check_parallel(*common, "--out-prefix", tmp_path / "a")
    assert "would overwrite the input" in last_error_line(proc, prefix="check_parallel: error: ")
    assert (tmp_path / "a.src").read_bytes() == ("\n".join(src) + "\n").encode()


def test_parallel_files_from_a_named_pipe_and_standard_input(tmp_path):
    """Before: ``os.path.isfile`` refused both as "no such file"; now read once, as the scorer reads them."""
    import threading

    (tmp_path / "a.tgt").write_text("w1\nw3\n")
    fifo = tmp_path / "p.src"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as f:  # blocks until check_parallel opens the pipe
            f.write("w1 w2\nw3  w4\n")

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    proc = check_parallel("--src", fifo, "--tgt", tmp_path / "a.tgt", "--out-prefix", tmp_path / "pipe" / "train")
    if writer.is_alive():  # the pipe was never opened: let the writer go
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(timeout=10)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 pairs read, 2 written" in proc.stderr
    assert (tmp_path / "pipe" / "train.src").read_text() == "w1 w2\nw3 w4\n"
    assert (tmp_path / "pipe" / "train.tgt").read_text() == "w1\nw3\n"

    proc = cli("python", "-m", "preprocess.check_parallel", "--src", "/dev/stdin", "--src-lang", "src",
               "--tgt", tmp_path / "a.tgt", "--out-prefix", tmp_path / "stdin" / "train", check=False,
               input="w5 w6\nw7\n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 pairs read, 2 written" in proc.stderr
    assert (tmp_path / "stdin" / "train.src").read_text() == "w5 w6\nw7\n"
    assert (tmp_path / "stdin" / "train.tgt").read_text() == "w1\nw3\n"


def test_check_parallel_output_feeds_fairseq_preprocess(runs):
    """The cleaned files binarize to one sentence per pair: a stray \\r no longer splits a line."""
    assert runs["check_parallel_cr"].returncode == 0
    assert "32 pairs read, 31 written" in runs["check_parallel_cr"].stderr
    assert runs["preprocess_checked"].returncode == 0, runs["preprocess_checked"].stderr[-3000:]
    log = (runs["work"] / "checked-bin" / "preprocess.log").read_text()
    assert "31 sents" in log, log


# ------------------------------------------------------------------ word_attn_gated keeps a dictionary fingerprint too
def test_word_attn_gated_refuses_a_checkpoint_of_other_dictionaries():
    """Source and target dictionaries both count; checkpoints written before the fingerprint still load."""
    import argparse

    import torch
    from fairseq.data import Dictionary

    import fairseq_wean  # noqa: F401
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.models.word_attn_gated import WordAttnGatedModel, base_architecture
    from conftest import FakeTask, make_dictionary

    def build(src, tgt):
        args = argparse.Namespace(arch="word_attn_gated", encoder_embed_dim=8, encoder_hidden_size=6,
                                  decoder_embed_dim=8, decoder_hidden_size=6, decoder_out_embed_dim=8)
        base_architecture(args)
        return WordAttnGatedModel.build_model(args, FakeTask(src, tgt))

    def reordered(n):
        d = Dictionary()
        for i in range(n):
            d.add_symbol("w{}".format(i), n=i + 1)  # most frequent first: w(n-1) ... w0
        d.finalize(padding_factor=1)
        return d

    src, tgt = make_dictionary(20), make_dictionary(15)
    assert reordered(20).symbols != src.symbols and len(reordered(20)) == len(src)
    state = build(src, tgt).state_dict()
    assert "dictionary_fingerprint" in state
    build(src, tgt).load_state_dict(state)  # same dictionaries: fine
    for other_src, other_tgt in ((reordered(20), tgt), (src, reordered(15))):
        with pytest.raises(FairseqWeanError, match="trained with another dictionary"):
            build(other_src, other_tgt).load_state_dict(state)
    with pytest.raises(FairseqWeanError, match="dictionary of another size than the 17 symbols"):
        build(src, make_dictionary(13)).load_state_dict(state)
    old = {k: v for k, v in state.items() if k != "dictionary_fingerprint"}
    build(src, tgt).load_state_dict(old)  # written before models kept the fingerprint
    assert torch.equal(old["dictionary_fingerprint"], state["dictionary_fingerprint"])


# ------------------------------------------------------------------ fairseq's own errors, on plugin runs
def test_empty_binarized_training_set(runs):
    """fairseq alone: "ValueError: cannot mmap an empty file" with a traceback."""
    line = last_error_line(runs["train_empty_set"])
    assert "empty-bin/train.src-tgt.src.bin is empty" in line and "no sentences" in line
    assert os.listdir(runs["work"] / "e12") in ([], [".fairseq-wean.lock"])  # the --save-dir lock: nothing else


def test_stray_carriage_return_in_raw_files(runs):
    """fairseq-preprocess reads a \\r inside a line as a line break; the plugin refuses such files."""
    line = last_error_line(runs["preprocess_cr_plugin"])
    assert "{} line 31 has a carriage return".format(runs["work"] / "cr.src") in line
    assert "preprocess.check_parallel" in line
    assert not (runs["work"] / "cr-plugin-bin").exists()
    # binarized without the plugin: 33 source sentences for 32 target ones; training says so in one line
    log = (runs["work"] / "cr-bin" / "preprocess.log").read_text()
    assert "cr.src: 33 sents" in log and "cr.tgt: 32 sents" in log, log
    line = last_error_line(runs["train_not_parallel"])
    assert "cr-bin/train.src-tgt.src and .tgt have different numbers of sentences" in line
    assert "preprocess.check_parallel" in line


def test_unwritable_save_dir_is_refused_at_start(runs):
    if runs["save_unwritable"] is None:
        pytest.skip("no directory here that this user cannot write to")
    proc = runs["train_unwritable_save_dir"]
    line = last_error_line(proc)
    assert "cannot write checkpoints to --save-dir {}".format(runs["save_unwritable"]) in line
    assert "num. shared model params" not in proc.stdout  # before the model is even built


def test_two_runs_starting_in_one_save_dir_are_not_told_it_is_unwritable(tmp_path, monkeypatch):
    """fairseq's start-up check writes and removes SAVE_DIR/dummy; a second run started at the same
    moment into the same folder removed it first, and the first run was told the folder cannot be
    written (seen in CI). The folder is writable, so the check passes (the --save-dir lock then
    refuses the second run); a folder that cannot hold files is still refused in one line."""
    import fairseq_wean  # noqa: F401  (installs the checks)
    from fairseq import checkpoint_utils

    from fairseq_wean.errors import FairseqWeanError

    real_remove = os.remove

    def removed_by_the_other_run_first(path):
        real_remove(path)
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(os, "remove", removed_by_the_other_run_first)
    checkpoint_utils.verify_checkpoint_directory(str(tmp_path / "shared"))
    assert sorted(os.listdir(tmp_path / "shared")) == []
    monkeypatch.setattr(os, "remove", real_remove)
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(FairseqWeanError, match=r"cannot write checkpoints to --save-dir .*a-file/sub"):
        checkpoint_utils.verify_checkpoint_directory(str(tmp_path / "a-file" / "sub"))


def test_interactive_input_with_a_non_utf8_line(runs):
    """The lines before the bad one get their hypotheses (also when they wait in a --buffer-size batch);
    then one line names the file and the line. Before, no line got a hypothesis."""
    proc = runs["interactive_latin1_input"]
    line = last_error_line(proc)
    assert "latin1-input.txt line 3 is not UTF-8" in line
    sources = re.findall(r"^S-(\d+)\t(.*)$", proc.stdout, flags=re.M)
    assert sources == [("0", "w1 w2 w3"), ("1", "w4 w5")], proc.stdout[-2000:]
    assert sorted(generated_hypotheses(proc.stdout)) == [0, 1]

