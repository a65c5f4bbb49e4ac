"""Every recipe, tiny: few sentences, one epoch, real data. A broken recipe turns CI red.

Skipped (cleanly) only where the shared raw data directory is absent (../shared/data next to the
repository, or $FAIRSEQ_WEAN_DATA).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

from conftest import REPO, read_text_lines, shared_data_dir

DATA = shared_data_dir()
needs_data = pytest.mark.skipif(DATA is None, reason="shared raw data directory (../shared/data) not found")


def run_module(module, *args, timeout=600, check=True):
    """python -m MODULE ARGS in the repository; fails the test with the output tail (unless not ``check``)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", module] + [str(a) for a in args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0 or not check, "{} failed ({}):\n{}\n{}".format(module, proc.returncode, proc.stdout[-3000:],
                                                                 proc.stderr[-5000:])
    return proc


def run_script(path, *args, timeout=600, env=None, check=True):
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", PYTHON=sys.executable)
    full_env.update(env or {})
    cmd = (["bash"] if path.endswith(".sh") else [sys.executable]) + [os.path.join(REPO, path)] + [str(a) for a in args]
    proc = subprocess.run(cmd, cwd=REPO, env=full_env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0 or not check, "{} failed ({}):\n{}\n{}".format(
        path, proc.returncode, proc.stdout[-4000:], proc.stderr[-5000:])
    return proc


def recipe(out):
    with open(os.path.join(out, "recipe.json"), encoding="utf-8") as f:
        return json.load(f)


# ------------------------------------------------------------------------------------------------
# Pure functions of the recipes (no data needed)

def test_moses_lowercaser_matches_turkcorpus_tokenization():
    from preprocess.common import MosesLowercaser

    tok = MosesLowercaser()
    assert tok("Adjacent counties are Marin (to the south), Mendocino.") == \
        "adjacent counties are marin -lrb- to the south -rrb- , mendocino ."
    assert tok('He said "no", it\'s Islam\'s.') == 'he said " no " , it \'s islam \'s .'


def test_characters_round_trip_through_fairseq_post_process():
    from fairseq.data import encoders  # noqa: F401  (fairseq's own post-processing)
    from fairseq.data.data_utils import post_process

    from preprocess.common import from_chars, to_chars

    line = "the cat -lrb- 2 -rrb- sat ."
    chars = to_chars(line)
    assert chars.split()[:4] == ["t", "h", "e", "\u2581"]
    assert from_chars(chars) == line
    assert post_process(chars, "sentencepiece") == line


def test_replace_unk_takes_the_most_attended_source_word():
    from fairseq_wean.compare.evaluate import replace_unk

    # alignment pairs are (source word, target word), as fairseq --print-alignment prints them
    assert replace_unk("the <unk> sat on <unk>", "a zorbly cat sat on mats", [(0, 0), (1, 1), (3, 2), (5, 4)]) == \
        "the zorbly sat on mats"
    assert replace_unk("<unk> x", "a b", []) == "<unk> x"  # no alignment: left alone


@pytest.mark.parametrize("tied", [True, False])
def test_output_layer_of_fairseq_lstm_is_counted_tied_or_as_fc_out(tied):
    """fairseq's LSTMDecoder tied by --share-decoder-input-output-embed has no fc_out: the table must
    say "tied", not show an output layer of 0 parameters as if it had none."""
    from fairseq.models.lstm import LSTMDecoder

    from conftest import make_dictionary
    from fairseq_wean.compare.evaluate import output_layer_parameters

    d = make_dictionary(20)
    decoder = LSTMDecoder(d, embed_dim=8, hidden_size=8, out_embed_dim=8, num_layers=1,
                          encoder_output_units=8, share_input_output_embed=tied)
    model = torch.nn.Module()
    model.decoder = decoder
    assert output_layer_parameters(model) == ((0, True) if tied else (len(d) * 8 + len(d), False))


def test_split_keeps_validation_and_test_sources_out_of_training():
    from preprocess.prepare_simplification import split

    refs = lambda tag: [["{} r{} {}".format(tag, k, i) for i in range(6)] for k in range(8)]  # noqa: E731
    raw = {
        "tune_src": ["s{}".format(i) for i in range(6)], "tune_refs": refs("t"),
        "asset_refs": [["a{} {}".format(k, i) for i in range(6)] for k in range(10)],
        "test_src": ["s5", "x"], "test_refs": [["tr"] * 2] * 8,
        "onestop": [("o1", "o1s"), ("s1", "leak")], "pwkp_src": ["p"], "pwkp_ref": ["pr"], "extra": [],
    }
    splits, stats = split(raw, valid_size=2, seed=1)
    held = {s for s, _ in splits["validsrc"]}
    assert len(held) == 2 and len(splits["valid"]) == 2 * 8
    train_src = {s for s, _ in splits["train"]}
    assert not train_src & held
    assert "s5" not in train_src  # a TurkCorpus test source
    # 6 tune sources - 2 held - s5 (test) = 3 sources x 18 references, + 1 OneStopEnglish pair (+1 if s1 not held)
    assert stats["train_pairs_turkcorpus_asset"] == 3 * 18
    assert ("o1", "o1s") in splits["train"]


# ------------------------------------------------------------------------------------------------
# Data preparation recipes on the real data, subsampled

@needs_data
def test_prepare_simplification_full_split_counts(tmp_path):
    """The fixed setting of issue 7, without binarizing: counts and disjointness on all the data."""
    from preprocess.prepare_simplification import load, split

    raw = load(DATA)
    splits, stats = split(raw, valid_size=200, seed=1)
    assert stats["valid_sources"] == 200 and stats["valid_pairs"] == 1600
    assert stats["test_turkcorpus"] == 359 and stats["test_pwkp"] == 100
    assert stats["train_pairs_onestopenglish"] == 2166 + 2154 + 1674
    # 1800 tune sources x (8 TurkCorpus + 10 ASSET refs), minus empty refs and overlaps with test
    assert 30000 < stats["train_pairs_turkcorpus_asset"] <= 1800 * 18
    held = {s for s, _ in splits["validsrc"]}
    train_src = {s for s, _ in splits["train"]}
    assert not held & train_src
    assert not set(raw["test_src"]) & train_src and not set(raw["pwkp_src"]) & train_src


# ------------------------------------------------------------------------------------------------
# The comparison runner and the main job, tiny

@pytest.fixture(scope="module", autouse=True)
def simplification_tiny_started(tmp_path_factory):
    """The tiny simplification comparison (the longest recipe) starts when the module does and runs
    beside the other tests, which use the second core; the tests that read it wait for it."""
    if DATA is None:
        yield None
        return
    out = tmp_path_factory.mktemp("cmp-simplification")
    log = open(out.parent / "cmp-simplification.log", "w+", encoding="utf-8")
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "fairseq_wean.compare", "simplification", DATA,
                             "--tiny", "--keep-checkpoints", "--out", str(out)], cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT,
                            text=True)
    yield out, proc, log
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    log.close()


@pytest.fixture(scope="module")
def simplification_tiny(simplification_tiny_started):
    out, proc, log = simplification_tiny_started
    proc.wait(timeout=900)
    log.seek(0)
    output = log.read()
    assert proc.returncode == 0, "fairseq-wean-compare simplification --tiny failed ({}):\n{}".format(
        proc.returncode, output[-6000:])
    return out, subprocess.CompletedProcess(proc.args, proc.returncode, output, "")


def read_rows(out):
    import csv

    with open(os.path.join(out, "results.csv"), encoding="utf-8") as f:
        return list(csv.DictReader(f))


@needs_data
@pytest.mark.parametrize("task,test,metric,row,budget", [("summarization", "gigaword", "rougeL", "LEAD-10", "short"),
                                                         ("translation", "test2016", "bleu", None, "converged")])
def test_compare_other_tasks_tiny(tmp_path, task, test, metric, row, budget):
    out = tmp_path / task
    results_dir = tmp_path / "results"  # as docs/results/TASK: kept when the work directory is not
    extra = ["--budget", budget, "--results-dir", results_dir] + (["--max-epoch", "2"] if budget == "converged" else [])
    run_script("examples/compare.sh", task, DATA, "--tiny", "--out", out, *extra)
    rows = read_rows(out)
    assert rows and all(r["{}/{}".format(test, metric)] != "" for r in rows)
    if row:
        assert any(r["system"] == row for r in rows)
    assert (out / "valid_curve.png").exists() and (out / "results.md").exists() and (out / "report.html").exists()
    assert "reused" not in (out / "results.md").read_text(encoding="utf-8")
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    r = recipe(out / "data")
    for key, run in results["runs"].items():
        # the checkpoint is chosen inside fairseq-train by the validation score it logs (--log-format
        # json records of the decoded subset, valid1): the curve, the loss and the best epoch are those
        log = read_text_lines(out / "runs" / key.replace(":", "-") / "train.log")
        command = log[0]
        assert "--task translation_with_metrics" in command and "--best-checkpoint-metric " + metric in command
        assert ("--patience 3" in command and "--batch-size" not in command) == (budget == "converged")
        records = [json.loads(line.split(" | ", 3)[3]) for line in log if " | valid1 | {" in line]
        assert records and run["valid_loss"] == {str(x["epoch"]): float(x["valid1_loss"]) for x in records}
        assert run["curve"] == [{"epoch": x["epoch"], metric: float(x["valid1_" + metric])} for x in records]
        best = max(run["curve"], key=lambda c: (c[metric], -c["epoch"]))
        assert run["best_epoch"] == best["epoch"] and run["best_valid"] == best[metric]
        # published: every test sentence's output in test order, exactly as scored, and its scores
        folder = results_dir / key.replace(":", "-")
        published = json.loads((folder / "scores.json").read_text(encoding="utf-8"))
        assert published["budget"] == budget and published["best_epoch"] == best["epoch"]
        hyp = folder / "{}.hyp".format(test)
        assert len(read_text_lines(hyp)) == len(read_text_lines(out / "data" / r["tests"][test]["orig"]))
        from fairseq_wean.compare.report import score

        assert published["scores"][test]["plain"][metric] == pytest.approx(
            score(str(hyp), r["tests"][test], str(out / "data"))[metric])
        table = next(x for x in rows if "{}-{}".format(x["system"], x["vocab"]) == key.replace(":", "-")
                     and x["decoding"] == "plain")
        assert float(table["{}/{}".format(test, metric)]) == pytest.approx(published["scores"][test]["plain"][metric])
    if task == "translation":
        # a fresh work directory (a fresh clone) trains nothing that the results directory holds,
        # and gives the same table
        fresh = tmp_path / "fresh"
        proc = run_module("fairseq_wean.compare", task, DATA, "--tiny", "--out", fresh, *extra)
        assert ": training " not in proc.stdout and "reusing it" in proc.stdout
        assert not (fresh / "runs" / "lstm-word").exists()
        assert [{k: v for k, v in x.items() if k != "train_seconds"} for x in read_rows(fresh)] == \
            [{k: v for k, v in x.items() if k != "train_seconds"} for x in rows]
        assert "1 of 1 systems were reused" in (fresh / "results.md").read_text(encoding="utf-8")
        # --reuse-only trains nothing: a run not published is left out and named, the table is the rest
        reuse = tmp_path / "reuse-only"
        proc = run_module("fairseq_wean.compare", task, DATA, "--tiny", "--out", reuse, "--reuse-only",
                          "--runs", "lstm:word,wean_lstm:word", *extra)
        assert ": training " not in proc.stdout and not (reuse / "runs" / "wean_lstm-word").exists()
        assert "--reuse-only: left out, not published in {}: wean_lstm-word".format(results_dir) in proc.stdout
        assert [x["system"] for x in read_rows(reuse)] == [x["system"] for x in rows]
        proc = run_module("fairseq_wean.compare", task, DATA, "--tiny", "--out", reuse, "--reuse-only",
                          "--runs", "wean_lstm:word", *extra, check=False)
        assert proc.returncode != 0 and "--reuse-only: none of the 1 runs is published" in proc.stderr
        assert not (reuse / "runs" / "wean_lstm-word").exists()


@needs_data
def test_prepare_lcsts_part3_and_character_rouge(tmp_path):
    out = tmp_path / "lcsts"
    run_module("preprocess.prepare_lcsts", "--data-dir", DATA, "--out", out)
    src = read_text_lines(out / "text" / "test.short_text")
    assert len(src) == 725  # PART III pairs with human score >= 3
    # same texts as the staged derivation, one character per token
    staged = read_text_lines(os.path.join(DATA, "summarization", "lcsts", "test.score3.src"))
    assert [l.replace(" ", "") for l in src] == ["".join(l.split()) for l in staged]
    assert all(len(tok) == 1 for tok in src[0].split())
    assert "LEAD-20" in (out / "lead.md").read_text(encoding="utf-8")
    r = recipe(out)
    assert r["trainable"] is False and r["tests"]["lcsts"]["score_args"] == ["--rouge-chars"]


@needs_data
def test_prepare_iwslt14_staged_bpe_is_fairseqs(tmp_path):
    """The recipe's BPE step reproduces fairseq's prepare-iwslt14.sh output byte for byte."""
    from preprocess.prepare_iwslt14 import clean_corpus, clean_train_line

    assert clean_train_line("<url>http://x</url>") is None
    assert clean_train_line("<title>Hello</title>") == "Hello"
    assert clean_corpus([("a b", "c"), ("a b c d", "e"), ("x", "y")]) == [("x", "y")]
    out = tmp_path / "iwslt"
    run_module("preprocess.prepare_iwslt14", "--data-dir", DATA, "--out", out, "--tiny")
    r = recipe(out)
    assert r["smoke_test_only"] is True
    assert set(r["staged_bpe_check"]) == {"valid.de", "valid.en", "test.de", "test.en"}
    for name, (same, n) in r["staged_bpe_check"].items():
        assert same == n == 12, name
    assert (out / "bpe" / "train.de-en.de.bin").exists() and (out / "bpe" / "test.de-en.en.bin").exists()
    assert r["tests"]["iwslt14"]["score_args"] == ["--bleu-tokenize", "none"]  # multi-bleu's convention


def test_translation_tables_score_bleu_as_the_literature_and_say_so(tmp_path):
    """Multi30k and IWSLT'14 text is tokenized and lowercased: BLEU with sacreBLEU --tokenize none
    (multi-bleu), as their literature reports it, and every table names the tokenization (issue 38:
    13a split each <unk> into three tokens, and core_copy, which writes more <unk>, lost 3.4 BLEU)."""
    import argparse

    from fairseq_wean.compare import report as compare_report
    from preprocess import prepare_multi30k

    hyp, ref, src = tmp_path / "hyp", tmp_path / "ref", tmp_path / "src"
    hyp.write_text("a man &apos;s <unk> dog .\nthe cat sat on the mat .\n")
    ref.write_text("a man &apos;s big dog .\nthe cat sat on a mat .\n")
    src.write_text("x\ny\n")
    spec = {"orig": "src", "refs": ["ref"], "metrics": "bleu", "table": ["bleu"]}
    tok_none = dict(spec, score_args=["--bleu-tokenize", "none"])
    from sacrebleu import corpus_bleu

    lines = lambda p: p.read_text().splitlines()  # noqa: E731
    for s, tokenize in ((spec, "13a"), (tok_none, "none")):
        expected = corpus_bleu(lines(hyp), [lines(ref)], tokenize=tokenize).score
        assert compare_report.score(str(hyp), s, str(tmp_path))["bleu"] == pytest.approx(expected)
    assert compare_report.score(str(hyp), spec, str(tmp_path))["bleu"] != \
        compare_report.score(str(hyp), tok_none, str(tmp_path))["bleu"]
    args = argparse.Namespace(task="translation", budget="converged")
    headers = lambda s: [h for _, h in compare_report.columns(args, {"tests": {"test2016": s}})]  # noqa: E731
    assert "test2016 BLEU (tok none)" in headers(tok_none) and "test2016 BLEU (13a)" in headers(spec)
    source = open(prepare_multi30k.__file__, encoding="utf-8").read()
    assert '"score_args": ["--bleu-tokenize", "none"]' in source


@needs_data
def test_main_job_tiny(tmp_path):
    """core_copy on word-pg: checkpoint by validation SARI, markers put back, invented words, report."""
    mj = tmp_path / "mj"
    proc = run_script("examples/main_job.sh", DATA, "--tiny", env={"MAIN_JOB_OUT": str(mj)})
    assert "SARI" in proc.stdout and "BLEU" in proc.stdout
    assert "SRC:" in proc.stdout and "OUT:" in proc.stdout
    assert proc.stdout.count("invented") == 2 and "copy-the-source" in proc.stdout
    # validation decoded and scored with SARI (the checkpoint metric)
    assert re.search(r"valid on .valid1. subset .*\| sari [0-9.]+", (mj / "train.log").read_text(encoding="utf-8"))
    hyps = read_text_lines(mj / "test.hyp")
    assert len(hyps) == 12 and not any("<unk" in h for h in hyps)
    # the restored log: plain source words, one block per sentence with its G- (copy gate) line
    # after its H- line, its hypotheses exactly test.hyp
    lines = read_text_lines(mj / "generate-test.log")
    sources = read_text_lines(mj / "data" / "text" / "test.complex")
    assert [l.split("\t")[-1] for l in lines if l.startswith("S-")] == sources
    assert [l.split("\t")[-1] for l in lines if l.startswith("H-")] == hyps
    kinds = [l.split("\t")[0] for l in lines if l[:2] in ("S-", "H-", "G-")]
    assert kinds == [k + "-" + str(i) for i in range(12) for k in ("S", "H", "G")]
    assert (mj / "report.html").exists() and str(mj / "report.html") in proc.stdout
    # the printed examples ("#i SRC: source" then "OUT: output", [w] = a word copied through its
    # marker) are test sentences and their outputs, with no <unk> and no invented word (a word in
    # neither the source nor any of the 8 references)
    from fairseq_wean.scoring.metrics import is_invented, known_words

    examples = re.findall(r"^  #(\d+) SRC: (.*)\n {6}OUT: (.*)$", proc.stdout, re.M)
    assert len(examples) >= 3 and [int(i) for i, _, _ in examples[:3]] == [0, 1, 2]
    refs = [read_text_lines(mj / "data" / "text" / "test.ref.{}".format(k)) for k in range(8)]
    for i, src, out in examples:
        i = int(i)
        words = [w[1:-1] if len(w) > 2 and w[0] == "[" and w[-1] == "]" else w for w in out.split()]
        assert src == sources[i] and " ".join(words) == hyps[i]
        known = known_words(src, [r[i] for r in refs])
        assert not [w for w in words if "<unk" in w or is_invented(w, known)], (i, out)


@needs_data
def test_main_job_keeps_a_trained_run_and_runs_one_at_a_time(tmp_path):
    """A rerun deleted the previous run's checkpoints first thing; two at once wrote one folder.
    Both are refused before any work, and the earlier run is left as it was."""
    import fcntl

    mj = tmp_path / "mj"
    (mj / "checkpoints").mkdir(parents=True)
    best = mj / "checkpoints" / "checkpoint_best.pt"
    best.write_bytes(b"a finished run")
    proc = run_script("examples/main_job.sh", DATA, "--tiny", env={"MAIN_JOB_OUT": str(mj)}, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == ("fairseq-wean: error: {} holds a trained run (checkpoints/checkpoint_best.pt): "
                                   "add --force to replace it, or set MAIN_JOB_OUT to another folder".format(mj))
    with open(mj / ".main_job.lock", "w") as held:  # a main job running there
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = run_script("examples/main_job.sh", DATA, "--tiny", "--force", env={"MAIN_JOB_OUT": str(mj)},
                          check=False)
    assert proc.returncode == 1 and "another main job is writing {}".format(mj) in proc.stderr
    assert best.read_bytes() == b"a finished run" and sorted(p.name for p in mj.iterdir()) == [
        ".main_job.lock", "checkpoints"]
    proc = run_script("examples/main_job.sh", DATA, "--tidy", env={"MAIN_JOB_OUT": str(mj)}, check=False)
    assert proc.returncode == 2 and "unknown option --tidy (known: --tiny, --force)" in proc.stderr


@needs_data
def test_main_job_below_copying_the_source_exits_non_zero(tmp_path):
    """Two updates cannot learn to simplify: the job says so in one line and fails, after writing
    its outputs (the report shows why)."""
    mj = tmp_path / "mj"
    (mj / "checkpoints").mkdir(parents=True)
    (mj / "checkpoints" / "checkpoint_best.pt").write_bytes(b"an earlier run")  # --force replaces it
    proc = run_script("examples/main_job.sh", DATA, "--tiny", "--force",
                      env={"MAIN_JOB_OUT": str(mj), "MAX_UPDATES": "2", "REQUIRE_ABOVE_COPY": "1"}, check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert (mj / "checkpoints" / "checkpoint_best.pt").read_bytes() != b"an earlier run"
    last = proc.stderr.strip().splitlines()[-1]
    assert re.match(r"fairseq-wean: error: the kept checkpoint scores SARI [0-9.]+, below copying the source "
                    r"\([0-9.]+\): training was too short", last), proc.stderr[-3000:]
    sys_sari, copy_sari = (float(x) for x in re.search(r"SARI ([0-9.]+), .*source \(([0-9.]+)\)", last).groups())
    assert sys_sari < copy_sari
    assert (mj / "report.html").exists()
    assert re.search(r"num_updates 2\b", (mj / "train.log").read_text(encoding="utf-8"))


@needs_data
def test_compare_simplification_tiny(simplification_tiny):
    out, proc = simplification_tiny
    assert "(5/5)" in proc.stdout and "epoch 1" in proc.stdout  # progress lines
    # the data: every vocabulary variant, subsets, lowercased TurkCorpus-style tokens
    r = recipe(out / "data")
    assert set(r["variants"]) == {"word", "word-pg", "spm", "char"}
    text = out / "data" / "text"
    assert len(read_text_lines(text / "train.complex")) == 400 == len(read_text_lines(text / "train.simple"))
    assert len(read_text_lines(text / "validsrc.complex")) == 12
    assert len(read_text_lines(text / "valid.complex")) == 12 * 8
    train = read_text_lines(text / "train.complex") + read_text_lines(text / "train.simple")
    assert all(l == l.lower() for l in train) and not any("(" in l.split() for l in train)
    assert not set(read_text_lines(text / "validsrc.complex")) & set(read_text_lines(text / "train.complex"))
    for v in r["variants"]:
        for subset in ("train", "valid", "valid1", "test", "test1"):
            assert (out / "data" / v / "{}.complex-simple.complex.bin".format(subset)).exists(), (v, subset)
    # the table
    rows = read_rows(out)
    systems = {(r["system"], r["vocab"], r["decoding"]) for r in rows}
    assert {("lstm", "word", "plain"), ("lstm", "word", "replace_unk"), ("wean_lstm", "word", "plain"),
            ("wean_lstm", "word", "replace_unk"), ("core_copy", "word-pg", "plain"), ("wean_lstm", "spm", "plain"),
            ("char_transformer", "char", "plain"), ("copy source", "-", "-")} <= systems
    copy = next(r for r in rows if r["system"] == "copy source")
    assert float(copy["turkcorpus/bleu"]) > 95 and float(copy["exact_copy_pct"]) == 100
    wean = next(r for r in rows if r["system"] == "wean_lstm" and r["vocab"] == "word" and r["decoding"] == "plain")
    assert wean["turkcorpus/sari/p"] != "" and wean["pwkp/bleu/p"] != ""  # p-values against fairseq lstm
    assert int(wean["output_params"]) == 256 * 256  # WEAN's 'general' f(q, e) = q^T W_a e
    assert int(wean["best_epoch"]) == 1 and float(wean["train_seconds"]) > 0
    lstm = next(r for r in rows if r["system"] == "lstm" and r["decoding"] == "plain")
    assert lstm["turkcorpus/sari/p"] == ""  # the reference itself
    for r in rows:
        if r["system"] != "copy source":
            assert int(r["params"]) > 0 and 0 <= float(r["turkcorpus/sari"]) <= 100
    assert (out / "valid_curve.png").stat().st_size > 1000
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "| copy source |" in md and "turkcorpus SARI" in md
    # every test sentence decoded, in order
    ev = json.loads((out / "runs" / "wean_lstm-word" / "result.json").read_text())
    assert len(read_text_lines(ev["outputs"]["turkcorpus"]["plain"])) == 12


def test_invented_words_study_decodes_the_selected_checkpoint_each_way(simplification_tiny):
    """examples/invented_words.py: its beam-5 outputs are the comparison's own, its greedy ones
    come from --beam 1, and its invented-word shares are metrics.invented_words' on those outputs."""
    from fairseq_wean.scoring.metrics import invented_words

    sys.path.insert(0, os.path.join(REPO, "examples"))
    try:
        import invented_words as study
    finally:
        sys.path.pop(0)
    assert study.with_decoding(["--beam", "5", "--batch-size", "64"], "greedy") == ["--beam", "1", "--batch-size", "64"]
    out, _ = simplification_tiny
    runs = ["wean_lstm-word", "char_transformer-char"]  # (the tiny sentencepiece model writes empty lines)
    train_words = set()
    for name in ("train.complex", "train.simple"):
        for line in read_text_lines(out / "data" / "text" / name):
            train_words.update(line.lower().split())
    proc = run_script("examples/invented_words.py", out, "--runs", "wean_lstm:word,char_transformer:char",
                      "--decodings", "beam5,greedy")
    rows = [l.split(" | ") for l in proc.stdout.splitlines() if l.startswith("| ") and "---" not in l][1:]
    plans = {run: json.loads((out / "runs" / run / "eval_plan.json").read_text()) for run in runs}
    assert plans["wean_lstm-word"]["replace_unk"] and not plans["char_transformer-char"]["replace_unk"]
    # (the word run's rows score its outputs with <unk> replaced, as the comparison publishes them)
    assert [(r[0][2:], r[1], r[2]) for r in rows] == [
        ("wean_lstm", "word", "beam5+replace-unk"), ("wean_lstm", "word", "greedy+replace-unk"),
        ("char_transformer", "char", "beam5"), ("char_transformer", "char", "greedy")]
    shares, non_word_shares = [], []
    for n, row in enumerate(rows):
        run, decoding = runs[n // 2], row[2].split("+")[0]
        ev = json.loads((out / "runs" / run / "result.json").read_text())
        kinds = ["plain", "replace_unk"] if plans[run]["replace_unk"] else ["plain"]
        outputs = {kind: read_text_lines(out / "invented" / run / decoding /
                                         ("hyp.txt" if kind == "plain" else "hyp.replace-unk.txt")) for kind in kinds}
        if decoding == "beam5":  # the checkpoint, batching and options the comparison decoded with
            assert outputs == {kind: read_text_lines(ev["outputs"]["turkcorpus"][kind]) for kind in kinds}
        hyps = outputs[kinds[-1]]
        spec = plans[run]["tests"]["turkcorpus"]
        src = read_text_lines(out / "data" / spec["orig"])
        refs = [read_text_lines(out / "data" / r) for r in spec["refs"]]
        assert len(hyps) == len(src) == 12
        invented = [invented_words(h, s, [r[i] for r in refs]) for i, (h, s) in enumerate(zip(hyps, src))]
        words = sum(len(h.split()) for h in hyps)
        shares.append(100.0 * sum(map(len, invented)) / max(words, 1))
        assert float(row[7]) == pytest.approx(shares[-1], abs=0.006)
        assert float(row[8]) == pytest.approx(100.0 * sum(1 for i in invented if i) / len(hyps), abs=0.006)
        non_words = [[w for w in i if w not in train_words] for i in invented]
        non_word_shares.append(100.0 * sum(map(len, non_words)) / max(words, 1))
        assert float(row[11]) == pytest.approx(non_word_shares[-1], abs=0.006)
        assert float(row[12].rstrip(" |")) == pytest.approx(100.0 * sum(1 for n in non_words if n) / len(hyps), abs=0.006)
    assert max(shares) > 0  # the tiny character model spells words no input has
    assert max(non_word_shares) > 0  # ... and some are no word of the training text either
    # a run without its checkpoint is refused in one line, before anything is decoded
    bad = subprocess.run([sys.executable, os.path.join(REPO, "examples", "invented_words.py"), str(out),
                          "--runs", "wean_lstm:word,lstm:nosuch"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode != 0 and "lstm:nosuch was not trained" in bad.stderr.strip().splitlines()[-1]
    # beam5-known: the sentencepiece model writes no word of neither its training text nor its source
    known = run_script("examples/invented_words.py", out, "--runs", "wean_lstm:spm", "--decodings", "beam5-known")
    known_rows = [l.split(" | ") for l in known.stdout.splitlines() if l.startswith("| ") and "---" not in l][1:]
    assert [r[:3] for r in known_rows] == [["| wean_lstm", "spm", "beam5-known"]]
    assert float(known_rows[0][11]) == 0.0
    assert read_text_lines(out / "invented" / "known-words.txt") == sorted(train_words)
    # (fairseq-generate logs its task options: the decoding ran with the constraint on that file)
    assert "'known_words': '{}'".format(out / "invented" / "known-words.txt") in known.stderr
    bad = subprocess.run([sys.executable, os.path.join(REPO, "examples", "invented_words.py"), str(out),
                          "--runs", "wean_lstm:word", "--decodings", "beam5-known"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode != 0 and "beam5-known decodes sentencepiece runs only" in bad.stderr.strip().splitlines()[-1]
    short = out / "short.hyp"
    short.write_text("one line\n")
    bad = subprocess.run([sys.executable, os.path.join(REPO, "examples", "invented_words.py"), str(out),
                          "--runs", "wean_lstm:word", "--outputs", "x={}".format(short)],
                         cwd=REPO, capture_output=True, text=True)
    assert bad.returncode != 0 and "has 1 lines, the test set turkcorpus has 12" in bad.stderr.strip().splitlines()[-1]
    # a comparison run from another checkout (its plan's --user-dir is that checkout's plugin) is
    # decoded with this checkout's plugin: fairseq refuses a second package named fairseq_wean
    plan_path = out / "runs" / "wean_lstm-word" / "eval_plan.json"
    plan_text = plan_path.read_text()
    other = out / "other-checkout" / "fairseq_wean"
    shutil.copytree(os.path.join(REPO, "fairseq_wean"), other, ignore=shutil.ignore_patterns("__pycache__"))
    try:
        plan_path.write_text(json.dumps(dict(json.loads(plan_text), user_dir=str(other))))
        # (--outputs: the character model's beam-5 outputs, given as a file, score as its beam-5 row)
        char_hyp = out / "invented" / "char_transformer-char" / "beam5" / "hyp.txt"
        moved = run_script("examples/invented_words.py", out, "--runs", "wean_lstm:word", "--decodings", "beam5",
                           "--outputs", "given={}".format(char_hyp))
        moved_rows = [l.split(" | ") for l in moved.stdout.splitlines() if l.startswith("| ") and "---" not in l][1:]
        assert moved_rows[1:] == rows[:1]  # the same beam-5 row as from the plan's own checkout
        assert moved_rows[0][:4] == ["| given", "-", "given", "-"] and moved_rows[0][4:] == rows[2][4:]
        assert read_text_lines(out / "invented" / "wean_lstm-word" / "beam5" / "hyp.txt") == read_text_lines(
            json.loads((out / "runs" / "wean_lstm-word" / "result.json").read_text())["outputs"]["turkcorpus"]["plain"])
    finally:
        plan_path.write_text(plan_text)
        shutil.rmtree(out / "other-checkout")


@pytest.fixture
def compare():
    """The comparison's modules under the names the tests use."""
    import types

    from fairseq_wean.compare import cli, runner, systems

    return types.SimpleNamespace(parse_args=cli.parse_args, train_command=runner.train_command,
                                 job_env=runner.job_env, TASKS=systems.TASKS, launch_order=runner.launch_order,
                                 expected_cost=runner.expected_cost, remaining_seconds=runner.remaining_seconds,
                                 run_all=runner.run_all, runner=runner)


@needs_data
@pytest.mark.parametrize("system", ["lstm", "transformer", "wean_lstm", "core_copy", "word_attn_rnnsearch",
                                    "word_attn_ungated", "word_attn_gated", "char_transformer",
                                    "transformer_untied", "core_copy_paper", "word_attn_gated_paper",
                                    "wean_lstm_paper", "wean_lstm_target"])
def test_every_system_of_the_comparison_builds(simplification_tiny, system, compare):
    """The fairseq-train arguments of every compared system parse and build a model and criterion
    (the systems CI does not train are checked here, in-process)."""
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    out, _ = simplification_tiny
    from fairseq_wean.compare.systems import system_arch

    variant = {"core_copy": "word-pg", "char_transformer": "char"}.get(system_arch(system), "word")
    args = compare.parse_args(["simplification", DATA, "--tiny", "--out", str(out)])
    cmd = compare.train_command(args, recipe(out / "data"), system, variant, str(out / "runs" / "check"))
    parsed = options.parse_args_and_arch(options.get_training_parser(), input_args=cmd[1:])
    cfg = convert_namespace_to_omegaconf(parsed)
    utils.import_user_module(cfg.common)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    task.build_criterion(cfg.criterion)
    # the system the comparison names was built, not a default architecture
    from fairseq.models import ARCH_MODEL_REGISTRY

    expected_arch = {"char_transformer": "transformer", "transformer_untied": "transformer",
                     "core_copy_paper": "core_copy", "word_attn_gated_paper": "word_attn_gated",
                     "wean_lstm_paper": "wean_lstm", "wean_lstm_target": "wean_lstm"}.get(system, system)
    assert type(model) is ARCH_MODEL_REGISTRY[expected_arch]
    # the paper-exact variants (issue 41) reach the model: eq. 3/5/9 for CoRe, the poster's readout
    # and s_0 for word attention; their base systems keep today's defaults
    if expected_arch == "core_copy":
        paper = system == "core_copy_paper"
        assert (model.decoder.attend_previous_state, model.decoder.input_feeding) == (paper, paper)
        assert isinstance(model.decoder.output_bias, torch.nn.Parameter) != paper  # affine psi: no b_y
    if expected_arch == "word_attn_gated":
        paper = system == "word_attn_gated_paper"
        assert (cfg.model.word_attn_readout, cfg.model.word_attn_initial_state) == \
            (("raw", "backward") if paper else ("gated", "both"))
    if expected_arch == "wean_lstm":
        candidates = {"wean_lstm_paper": "source", "wean_lstm_target": "target"}.get(system, "all")
        assert cfg.model.wean_candidates == candidates
        assert (model.decoder.candidate_mask is None) == (candidates == "all")
    if system.startswith("transformer"):  # the untied control differs from transformer in its output keys only
        tied = model.decoder.output_projection.weight is model.decoder.embed_tokens.weight
        assert tied == (system == "transformer")
    if system != "char_transformer":  # equal sizes: 256-d embeddings, 2 layers
        assert model.encoder.embed_tokens.embedding_dim == 256


@needs_data
def test_compare_cpu_bf16_reaches_every_fairseq_train(simplification_tiny, compare, monkeypatch):
    from fairseq import options

    out, _ = simplification_tiny
    commands = {}
    for flags in ([], ["--cpu-bf16"]):
        args = compare.parse_args(["simplification", DATA, "--tiny", "--out", str(out)] + flags)
        commands[bool(flags)] = compare.train_command(args, recipe(out / "data"), "wean_lstm", "word",
                                                      str(out / "runs" / "check"))
    parse = options.get_training_parser
    assert options.parse_args_and_arch(parse(), input_args=commands[True][1:]).cpu_bf16 is True
    assert options.parse_args_and_arch(parse(), input_args=commands[False][1:]).cpu_bf16 is False
    assert [a for a in commands[True] if a != "--cpu-bf16"] == commands[False] and "--cpu-bf16" in commands[True]
    # scores.json's precision: bfloat16 only where the flag was given and the CPU has it
    from fairseq_wean import cpu

    for native in (True, False):
        monkeypatch.setattr(cpu, "native_bf16", lambda: native)
        assert compare.runner.train_precision(" ".join(commands[True])) == ("bfloat16 autocast" if native else "float32")
        assert compare.runner.train_precision(" ".join(commands[False])) == "float32"


def test_fairseq_processes_get_threads_and_malloc_settings_but_user_values_win(compare, monkeypatch):
    args = compare.parse_args(["simplification", DATA, "--threads", "2"])
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    env = compare.job_env(args)
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(4 * 2 ** 30)  # freed big tensors stay in the heap
    assert env["MALLOC_TRIM_THRESHOLD_"] == "12345"
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "2"  # --threads decides
    assert env["PYTHONUNBUFFERED"] == "1" and env["PATH"] == os.environ["PATH"]


def test_longest_runs_are_launched_first_and_tables_keep_the_task_order(compare):
    runs = compare.TASKS["simplification"]["runs"]
    order = [runs[i] for i in compare.launch_order(runs)]
    assert sorted(compare.launch_order(runs)) == list(range(len(runs)))
    # the character transformer and both word_attn_gated runs (the three longest) go first, the
    # wean_lstm runs (the shortest) last
    assert order[0] == ("char_transformer", "char")
    assert set(order[1:3]) == {("word_attn_gated", "word"), ("word_attn_gated", "spm")}
    assert set(order[-2:]) == {("wean_lstm", "word"), ("wean_lstm", "spm")}
    costs = [compare.expected_cost(*r) for r in order]
    assert costs == sorted(costs, reverse=True)
    # equal costs keep the task's order; an unknown system counts as fairseq lstm
    assert compare.launch_order([("lstm", "word"), ("new_arch", "word")]) == [0, 1]
    assert compare.launch_order([("wean_lstm", "word"), ("new_arch", "word")]) == [1, 0]
    # LPT on two cores, with the minutes (training + decoding) of the simplification comparison at
    # commit 45b7574, beats the task's order
    minutes = {("char_transformer", "char"): 43.0, ("word_attn_gated", "word"): 31.4,
               ("word_attn_gated", "spm"): 36.9, ("lstm", "word"): 22.6, ("core_copy", "word-pg"): 19.7,
               ("lstm", "spm"): 19.3, ("core_copy", "spm"): 26.6, ("transformer", "word"): 19.6,
               ("transformer", "spm"): 15.9, ("wean_lstm", "word"): 16.6, ("wean_lstm", "spm"): 13.4}

    def makespan(sequence, cores=2):
        free = [0] * cores
        for run in sequence:
            free[free.index(min(free))] += minutes[run]
        return max(free)

    assert makespan(order) < makespan(runs)


def test_time_left_is_paced_per_unit_of_expected_cost(compare):
    # a run of cost 1.8 took 30 min: 1000 s per unit; 1.0 + 0.5 left on two cores
    assert compare.remaining_seconds([(1800.0, 1.8)], [1.0, 0.5], jobs=2) == pytest.approx(750.0)
    assert compare.remaining_seconds([(1800.0, 1.8), (600.0, 0.6)], [2.4], jobs=1) == pytest.approx(2400.0)


def test_train_log_records_are_read_from_fairseq_json_lines(tmp_path):
    """fairseq-train --log-format json: one record per tagged line; other lines (and a JSON-looking
    config dump, which is not a tagged record) are skipped."""
    from fairseq_wean.compare.train_log import read_train_log, read_train_log_line

    inner = ('2026-11-23 13:30:29 | INFO | train_inner | {"epoch": 1, "update": 0.091, "loss": "9.397", '
             '"num_updates": "1", "wall": "11"}')
    valid = '2026-11-23 13:30:32 | INFO | valid | {"epoch": 1, "valid_loss": "6.933", "valid_num_updates": "3"}'
    assert read_train_log_line(inner) == ("train_inner", {"epoch": 1, "update": 0.091, "loss": "9.397",
                                                          "num_updates": "1", "wall": "11"})
    assert read_train_log_line(valid + "\n")[1]["valid_loss"] == "6.933"
    config = "2026-11-23 13:30:17 | INFO | fairseq_cli.train | {'_name': None, 'common': {'seed': 1}}"
    assert read_train_log_line(config) is None
    assert read_train_log_line("2026-11-23 13:30:32 | INFO | valid | epoch 001 | valid on 'valid' subset") is None
    log = tmp_path / "train.log"
    log.write_text("$ fairseq-train ...\n" + inner + "\n" + config + "\n" + valid + "\n" + inner + "\n")
    records = read_train_log(str(log))
    assert sorted(records) == ["train_inner", "valid"] and len(records["train_inner"]) == 2


def test_validation_progress_shows_a_best_score_from_the_first_epoch_on():
    """fairseq's first validation record has no VALID_best_METRIC: the progress line shows that
    epoch's score as the best, not nan; later records show fairseq's best."""
    from fairseq_wean.compare.train_log import ValidationRecords

    records = ValidationRecords("valid1", "bleu")
    first = records.add("valid1", {"epoch": 1, "valid1_loss": "6.019", "valid1_bleu": "3.47"})
    assert first == "valid loss 6.019, bleu 3.47 (best 3.47)"
    second = records.add("valid1", {"epoch": 2, "valid1_loss": "5.5", "valid1_bleu": "2.5", "valid1_best_bleu": "3.47"})
    assert second == "valid loss 5.500, bleu 2.50 (best 3.47)"
    assert records.curve == [{"epoch": 1, "bleu": 3.47}, {"epoch": 2, "bleu": 2.5}]
    assert records.add("train", {"epoch": 2, "loss": "4"}) is None


def test_run_all_reports_progress_after_each_run_and_stops_at_the_first_failure(capsys, monkeypatch, compare):
    import argparse
    import threading
    import time

    started = []
    pause = {"seconds": 0.05}
    lock = threading.Lock()

    def fake_run_one(args, recipe, i, system, variant):
        with lock:
            started.append(system)
        if system == "broken":
            raise RuntimeError("broken: fairseq-train failed")
        time.sleep(pause["seconds"] * (i + 1))
        return {"system": system}, 10.0 * (i + 1)

    monkeypatch.setattr(compare.runner, "run_one", fake_run_one)
    args = argparse.Namespace(run_list=[("lstm", "word"), ("transformer", "word"), ("wean_lstm", "word")], jobs=1)
    evals, reused = compare.run_all(args, recipe={})
    assert list(evals) == args.run_list and reused == 0
    progress = [line for line in capsys.readouterr().out.splitlines() if "runs finished" in line]
    # one line after each run but the last (one job: the runs end one at a time)
    assert [line.split("] ")[1].split(" runs")[0] for line in progress] == ["1 of 3", "2 of 3"]
    # time left is paced by expected cost: lstm (cost 1.0) took 10 s and transformer (0.85) 20 s,
    # so wean_lstm (0.7) has 30 / 1.85 * 0.7 = 11.4 s left (a per-run average would say 15 s)
    assert progress[1].endswith("about 0m11s left at this pace")

    # a failure stops the comparison: the runs not started yet are cancelled (the one worker may
    # already have taken the next run when the failure is seen; that run lasts 2 s, long enough for
    # the main thread to cancel the third before the worker is free)
    started.clear()
    pause["seconds"] = 1.0
    args.run_list = [("broken", "word"), ("lstm", "word"), ("transformer", "word")]
    with pytest.raises(RuntimeError, match="broken"):
        compare.run_all(args, recipe={})
    assert started[0] == "broken" and "transformer" not in started


def test_seed_table_is_mean_sd_and_per_seed_bootstrap_against_the_row_above(tmp_path):
    """The word-attention ablation over seeds: each cell is that seed's test score, mean and sample
    sd over the seeds, and p the paired bootstrap against the previous ablation row of the same seed
    and UNK handling; the outputs with <unk> replaced get rows of their own."""
    import argparse
    import statistics

    from fairseq_wean.compare import report
    from fairseq_wean.scoring import score

    data = tmp_path / "data"
    data.mkdir()
    src = ["a b c d", "e f g h", "i j k l", "m n o p", "q r s t"]
    ref = ["a b x d", "e y g h", "i j k z", "m n o w", "q v s t"]
    (data / "test.src").write_text("\n".join(src) + "\n")
    (data / "test.ref").write_text("\n".join(ref) + "\n")
    recipe = {"main_test": "t", "valid": {"metric": "bleu"},
              "tests": {"t": {"orig": "test.src", "refs": ["test.ref"], "metrics": "bleu"}}}
    outputs = {  # (system, seed) -> output lines, each a little different
        ("word_attn_rnnsearch", 1): src, ("word_attn_rnnsearch", 2): [s.replace("a", "b") for s in src],
        ("word_attn_ungated", 1): ref[:2] + src[2:], ("word_attn_ungated", 2): ref[:3] + src[3:],
        ("word_attn_gated", 1): ref[:4] + src[4:], ("word_attn_gated", 2): ref,
    }
    evals = {}
    for (system, seed), lines in outputs.items():
        path = tmp_path / "{}-{}.hyp".format(system, seed)
        path.write_text("\n".join(lines) + "\n")
        key = (system, "word") if seed == 1 else (system, "word", seed)
        evals[key] = {"outputs": {"t": {"plain": str(path)}}}
    args = argparse.Namespace(out=str(tmp_path), seed=1)
    rows = report.seed_rows(args, recipe, evals)
    assert [r["system"] for r in rows] == ["word_attn_rnnsearch", "word_attn_ungated", "word_attn_gated"]
    for i, r in enumerate(rows):
        expected = [score(outputs[(r["system"], seed)], sources=src, references=[ref], metrics="bleu")["bleu"]
                    for seed in (1, 2)]
        assert [v for _, v in r["scores"]] == pytest.approx(expected)
        assert r["mean"] == pytest.approx(statistics.mean(expected))
        assert r["sd"] == pytest.approx(statistics.stdev(expected))
        if i == 0:
            assert r["against"] is None and r["p_values"] == []
        else:
            assert r["against"] == rows[i - 1]["system"]
            for seed, p in r["p_values"]:
                other = outputs[(rows[i - 1]["system"], seed)]
                assert p == score(outputs[(r["system"], seed)], sources=src, references=[ref], metrics="bleu",
                                  compare_to=other)["p_values"]["bleu"]
    assert [r["decoding"] for r in rows] == ["plain"] * 3  # no replace-unk outputs: no such rows
    table = "\n".join(report.seed_table(args, recipe, rows))
    assert "| word_attn_gated | plain | {:.2f} | {:.2f} |".format(*[v for _, v in rows[2]["scores"]]) in table

    # outputs with <unk> replaced (seed 2 of each): rows after the plain ones, scored from those files
    # and compared with the row above's file of the same handling
    replaced = {("word_attn_rnnsearch", 2): ref[:1] + src[1:], ("word_attn_ungated", 2): src[:4] + ref[4:],
                ("word_attn_gated", 2): ref[:2] + src[2:]}
    for (system, seed), lines in replaced.items():
        path = tmp_path / "{}-{}.replace-unk.hyp".format(system, seed)
        path.write_text("\n".join(lines) + "\n")
        evals[(system, "word", seed)]["outputs"]["t"]["replace_unk"] = str(path)
    rows = report.seed_rows(args, recipe, evals)
    assert [(r["system"], r["decoding"]) for r in rows] == [
        ("word_attn_rnnsearch", "plain"), ("word_attn_ungated", "plain"), ("word_attn_gated", "plain"),
        ("word_attn_rnnsearch", "replace_unk"), ("word_attn_ungated", "replace_unk"),
        ("word_attn_gated", "replace_unk")]
    rnn, gated = rows[3], rows[5]
    assert rnn["scores"] == [(2, pytest.approx(score(replaced[("word_attn_rnnsearch", 2)], sources=src,
                                                     references=[ref], metrics="bleu")["bleu"]))]
    assert rnn["p_values"] == [] and rnn["sd"] is None
    expected = score(replaced[("word_attn_gated", 2)], sources=src, references=[ref], metrics="bleu",
                     compare_to=replaced[("word_attn_ungated", 2)])
    assert gated["against"] == "word_attn_ungated"
    assert gated["scores"] == [(2, pytest.approx(expected["bleu"]))]
    assert gated["p_values"] == [(2, expected["p_values"]["bleu"])]
    line = [x for x in report.seed_table(args, recipe, rows) if x.startswith("| word_attn_rnnsearch | replace-unk ")][0]
    assert line == "| word_attn_rnnsearch | replace-unk | - | {:.2f} | {:.2f} | - |  |  |".format(
        rnn["scores"][0][1], rnn["scores"][0][1])
    for system, seed in replaced:
        del evals[(system, "word", seed)]["outputs"]["t"]["replace_unk"]

    # a seed not run yet by one variant: its cell is "-", its sd undefined, and the columns stay aligned
    del evals[("word_attn_gated", "word", 2)]
    rows = report.seed_rows(args, recipe, evals)
    gated = score(outputs[("word_attn_gated", 1)], sources=src, references=[ref], metrics="bleu",
                  compare_to=outputs[("word_attn_ungated", 1)])
    assert rows[2]["scores"] == [(1, pytest.approx(gated["bleu"]))] and rows[2]["sd"] is None
    assert rows[2]["p_values"] == [(1, gated["p_values"]["bleu"])]
    line = [x for x in report.seed_table(args, recipe, rows) if x.startswith("| word_attn_gated ")][0]
    assert line == "| word_attn_gated | plain | {0:.2f} | - | {0:.2f} | - | word_attn_ungated | 1: {1} |".format(
        gated["bleu"], "<0.001" if gated["p_values"]["bleu"] < 0.001 else "{:.3f}".format(gated["p_values"]["bleu"]))

    # seed 1 alone (--seeds 1): the variants still compared with each other, a missing one skipped
    seed1 = {key: ev for key, ev in evals.items() if len(key) == 2 and key[0] != "word_attn_ungated"}
    rows = report.seed_rows(args, recipe, seed1)
    assert [(r["system"], r["against"]) for r in rows] == [("word_attn_rnnsearch", None),
                                                          ("word_attn_gated", "word_attn_rnnsearch")]
    assert rows[1]["p_values"] == [(1, score(outputs[("word_attn_gated", 1)], sources=src, references=[ref],
                                              metrics="bleu", compare_to=src)["p_values"]["bleu"])]
    # one ablation run (word_attn_gated in the summarization comparison): nothing to compare, no table
    assert report.seed_rows(args, recipe, {("word_attn_gated", "word"): evals[("word_attn_gated", "word")]}) == []
    # word_attn_gated on words and on pieces (the simplification comparison): still one run per
    # vocabulary, no table; and runs on different vocabularies are never compared with each other
    gated = evals[("word_attn_gated", "word")]
    assert report.seed_rows(args, recipe, {("word_attn_gated", "word"): gated, ("word_attn_gated", "spm"): gated}) == []
    assert report.seed_rows(args, recipe, {("word_attn_rnnsearch", "spm"): evals[("word_attn_rnnsearch", "word")],
                                           ("word_attn_gated", "word"): gated}) == []


def test_paper_exact_table_bootstraps_each_variant_against_its_model_and_lstm(tmp_path):
    """issue 41's table: each paper-exact variant's score, its model's and fairseq lstm's, with the
    paired bootstrap against each, from the outputs by hand; per UNK handling both runs have; a
    variant whose model did not run on that vocabulary has no row, lstm missing leaves its cells empty."""
    import argparse

    from fairseq_wean.compare import report
    from fairseq_wean.scoring import score

    data = tmp_path / "data"
    data.mkdir()
    src = ["a b c d", "e f g h", "i j k l", "m n o p", "q r s t", "u v w x"]
    ref = ["a b x d", "e y g h", "i j k z", "m n o w", "q v s t", "u v w y"]
    (data / "test.src").write_text("\n".join(src) + "\n")
    (data / "test.ref").write_text("\n".join(ref) + "\n")
    recipe = {"main_test": "t", "valid": {"metric": "bleu"},
              "tests": {"t": {"orig": "test.src", "refs": ["test.ref"], "metrics": "bleu"}}}
    outputs = {"lstm": ref[:2] + src[2:], "core_copy": ref[:3] + src[3:], "core_copy_paper": ref[:5] + src[5:],
               "wean_lstm_paper": ref[:1] + src[1:]}
    evals = {}
    for system, lines in outputs.items():
        path = tmp_path / "{}.hyp".format(system)
        path.write_text("\n".join(lines) + "\n")
        evals[(system, "word")] = {"outputs": {"t": {"plain": str(path)}}}
    args = argparse.Namespace(out=str(tmp_path), seed=1)
    rows = report.paper_exact_rows(args, recipe, evals)
    assert len(rows) == 1  # wean_lstm did not run: no row for its variant
    row = rows[0]
    mine = score(outputs["core_copy_paper"], sources=src, references=[ref], metrics="bleu",
                 compare_to=outputs["core_copy"])
    vs_lstm = score(outputs["core_copy_paper"], sources=src, references=[ref], metrics="bleu",
                    compare_to=outputs["lstm"])
    assert (row["system"], row["base"], row["vocab"], row["decoding"]) == ("core_copy_paper", "core_copy", "word", "plain")
    assert row["score"] == pytest.approx(mine["bleu"]) and row["p_base"] == mine["p_values"]["bleu"]
    assert row["base_score"] == pytest.approx(score(outputs["core_copy"], sources=src, references=[ref],
                                                    metrics="bleu")["bleu"])
    assert row["lstm_score"] == pytest.approx(score(outputs["lstm"], sources=src, references=[ref],
                                                    metrics="bleu")["bleu"])
    assert row["p_lstm"] == vs_lstm["p_values"]["bleu"]
    assert row["score"] > row["base_score"] > row["lstm_score"]
    table = report.paper_exact_table(args, recipe, rows)
    line = [x for x in table if x.startswith("| core_copy_paper ")][0]
    assert line == "| core_copy_paper | core_copy | word | plain | BLEU | {:.2f} | {:.2f} | {} | {:.2f} | {} |".format(
        row["score"], row["base_score"], report.fmt_p(row["p_base"]), row["lstm_score"], report.fmt_p(row["p_lstm"]))
    assert "`core_copy_paper` = `core_copy` --core-attend-previous-state" in table[-1]
    # no lstm: the row stays, its lstm cells empty; an extra seed of a variant is not a row
    del evals[("lstm", "word")]
    evals[("core_copy_paper", "word", 2)] = evals[("core_copy_paper", "word")]
    rows = report.paper_exact_rows(args, recipe, evals)
    assert len(rows) == 1 and rows[0]["lstm_score"] is None and rows[0]["p_lstm"] is None
    assert [x for x in report.paper_exact_table(args, recipe, rows) if x.startswith("| core_copy_paper ")][0].endswith(
        "| - | - |")
    # TurkCorpus' convention: SARI and legacy SARI (EASSE legacy=True), each scored and bootstrapped so
    evals[("lstm", "word")] = {"outputs": {"t": {"plain": str(tmp_path / "lstm.hyp")}}}
    outputs["core_copy_paper"] = [x.upper() for x in ref[:5]] + src[5:]  # legacy SARI does not lowercase
    (tmp_path / "core_copy_paper.hyp").write_text("\n".join(outputs["core_copy_paper"]) + "\n")
    sari = {"main_test": "t", "valid": {"metric": "sari"},
            "tests": {"t": {"orig": "test.src", "refs": ["test.ref"], "metrics": "sari", "table": ["sari", "sari_legacy"]}}}
    rows = report.paper_exact_rows(args, sari, evals)
    assert [r["metric"] for r in rows] == ["sari", "sari_legacy"]
    for r, mode in zip(rows, ("default", "legacy")):
        mine = score(outputs["core_copy_paper"], sources=src, references=[ref], metrics="sari", sari_mode=mode,
                     compare_to=outputs["core_copy"])
        assert r["score"] == pytest.approx(mine["sari"]) and r["p_base"] == mine["p_values"]["sari"]
        assert r["p_lstm"] == score(outputs["core_copy_paper"], sources=src, references=[ref], metrics="sari",
                                    sari_mode=mode, compare_to=outputs["lstm"])["p_values"]["sari"]
    assert rows[0]["score"] != rows[1]["score"]  # the two modes differ on these outputs
    assert "| SARI (legacy) |" in [x for x in report.paper_exact_table(args, sari, rows) if "legacy" in x][0]


@needs_data
def test_converged_simplification_lstm_ties_its_embeddings_on_words_only(
        simplification_tiny, compare):
    """fairseq lstm on simplification words is trained with tied decoder embeddings (the anchor's
    recipe; CONVERGED run_overrides); lstm on pieces, lstm on translation and the short budget keep a
    separate output matrix."""
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from fairseq_wean.compare import systems

    out, _ = simplification_tiny
    tied = {}
    for budget, variant in [("converged", "word"), ("short", "word"), ("converged", "spm")]:
        args = compare.parse_args(["simplification", DATA, "--tiny", "--out", str(out), "--budget", budget])
        cmd = compare.train_command(args, recipe(out / "data"), "lstm", variant, str(out / "runs" / "check"))
        parsed = options.parse_args_and_arch(options.get_training_parser(), input_args=cmd[1:])
        cfg = convert_namespace_to_omegaconf(parsed)
        utils.import_user_module(cfg.common)
        model = tasks.setup_task(cfg.task).build_model(cfg.model)
        # fairseq's LSTMDecoder has no fc_out when it projects with its input embeddings
        tied[budget, variant] = not hasattr(model.decoder, "fc_out")
        assert tied[budget, variant] == ("--share-decoder-input-output-embed" in cmd)
    assert tied == {("converged", "word"): True, ("short", "word"): False, ("converged", "spm"): False}
    for task in ("translation", "summarization"):  # published untied, anchors met
        assert "--share-decoder-input-output-embed" not in systems.converged_system_args("lstm", task, "word")


def test_converged_simplification_runs_each_system_once_on_its_vocabulary_plus_the_piece_controls(compare, tmp_path):
    """--budget converged on simplification: every system of the short comparison plus the character
    transformer, each once on its chosen vocabulary, and the runs behind the invented-words question
    (wean_lstm on words; transformer tied and untied on the pieces wean_lstm uses)."""
    runs = compare.parse_args(["simplification", str(tmp_path), "--budget", "converged"]).run_list
    assert runs[:6] == [("lstm", "word"), ("transformer", "word"), ("wean_lstm", "spm"), ("core_copy", "word-pg"),
                        ("word_attn_gated", "word"), ("char_transformer", "char")]
    assert set(runs[6:]) == {("wean_lstm", "word"), ("transformer", "spm"), ("transformer_untied", "spm")}
    assert len(set(runs)) == len(runs) == 9
    short = compare.parse_args(["simplification", str(tmp_path)]).run_list
    assert len(short) == 11 and ("core_copy", "spm") in short  # the short budget keeps all eleven


def test_converged_translation_adds_the_ablation_seeds_and_seeds_narrows_them(compare, tmp_path):
    """--budget converged on translation: the seven systems once, then seeds 2 and 3 of the three
    word-attention variants; --seeds chooses those seeds (--seeds 1: the seed-1 table alone, nothing
    else trained), and a list without --seed is refused."""
    base = ["translation", str(tmp_path), "--budget", "converged"]
    main = [("lstm", "word"), ("transformer", "word"), ("wean_lstm", "word"), ("core_copy", "word-pg"),
            ("word_attn_rnnsearch", "word"), ("word_attn_ungated", "word"), ("word_attn_gated", "word")]
    ablation = ["word_attn_rnnsearch", "word_attn_ungated", "word_attn_gated"]
    assert compare.parse_args(base).run_list == main + [(s, "word", seed) for s in ablation for seed in (2, 3)]
    assert compare.parse_args(base + ["--seeds", "1"]).run_list == main
    assert compare.parse_args(base + ["--seeds", "1,3,3"]).run_list == main + [(s, "word", 3) for s in ablation]
    assert compare.parse_args(base + ["--seed", "2", "--seeds", "1,2"]).run_list == \
        main + [(s, "word", 1) for s in ablation]
    for bad in (["--seeds", "2,3"], ["--seeds", "1,x"]):
        with pytest.raises(SystemExit):
            compare.parse_args(base + bad)


@pytest.mark.parametrize("flags,message", [
    (["--jobs", "0"], "--jobs must be at least 1, got 0"), (["--threads", "0"], "--threads must be at least 1, got 0"),
    (["--seed", "-1"], "--seed must be at least 0, got -1"),
    (["--budget", "converged", "--seeds", "1,-2"], "--seeds 1,-2: seeds must be at least 0")])
def test_compare_refuses_counts_below_one_and_negative_seeds(compare, tmp_path, capsys, flags, message):
    """Before: --jobs 0 and --threads 0 were accepted, a negative seed failed inside fairseq-train."""
    with pytest.raises(SystemExit) as exc:
        compare.parse_args(["translation", str(tmp_path)] + flags)
    assert exc.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1].endswith(message)


@pytest.mark.parametrize("budget", ["short", "converged"])
def test_paper_exact_systems_are_their_model_plus_the_paper_options_only(compare, tmp_path, budget):
    """Each paper-exact system (issue 41) trains with its base system's command, data and optimizer,
    and its paper options added: nothing else differs (the comparison is the options' effect)."""
    from unittest import mock

    from fairseq_wean.compare import systems

    args = compare.parse_args(["translation", str(tmp_path), "--budget", budget])
    with mock.patch.object(compare.runner, "align_table", lambda *a: "table.tsv"), \
            mock.patch.object(compare.runner, "validation_metric_args", lambda *a: []):
        for name, (base, flags) in systems.PAPER_EXACT.items():
            rec = {"src": "s", "tgt": "t", "variants": {"word": {"bin": "word"}}}
            cmd = compare.train_command(args, rec, name, "word", str(tmp_path / "run"))
            base_cmd = compare.train_command(args, rec, base, "word", str(tmp_path / "run"))
            i = cmd.index(flags[0])
            assert cmd[i:i + len(flags)] == flags and cmd[:i] + cmd[i + len(flags):] == base_cmd, name
    assert {name: systems.system_arch(name) for name in systems.PAPER_EXACT} == {
        "core_copy_paper": "core_copy", "word_attn_gated_paper": "word_attn_gated",
        "wean_lstm_paper": "wean_lstm", "wean_lstm_target": "wean_lstm"}


def test_converged_gigaword_core_copy_keeps_the_short_budgets_settings_and_batches(compare, tmp_path):
    """Under --budget converged, core_copy on summarization trains with the short budget's optimizer,
    dropout and 32-sentence batches (chosen on validation; CONVERGED short_settings_runs) and the
    converged stopping rule; every other converged run, and core_copy on the other tasks, get
    fairseq's LSTM recipe and --max-tokens batches only."""
    from unittest import mock

    from fairseq_wean.compare import systems

    def train_cmd(task, system, variant):
        args = compare.parse_args([task, str(tmp_path), "--budget", "converged"])
        rec = {"src": "s", "tgt": "t", "variants": {variant: {"bin": variant}}}
        return compare.train_command(args, rec, system, variant, str(tmp_path / "run"))

    def value(cmd, flag):
        return [cmd[i + 1] for i, a in enumerate(cmd) if a == flag]

    with mock.patch.object(compare.runner, "align_table", lambda *a: "table.tsv"), \
            mock.patch.object(compare.runner, "validation_metric_args", lambda *a: []):
        kept = train_cmd("summarization", "core_copy", "word-pg")
        assert value(kept, "--lr") == ["0.002"] and value(kept, "--dropout") == ["0.4"]
        assert value(kept, "--batch-size") == ["32"] and value(kept, "--max-tokens") == ["4000"]
        assert value(kept, "--patience") == ["3"] and value(kept, "--max-epoch") == ["30"]
        for task, system, variant in [("translation", "core_copy", "word-pg"), ("summarization", "lstm", "word"),
                                      ("summarization", "wean_lstm", "word")]:
            cmd = train_cmd(task, system, variant)
            assert value(cmd, "--lr") == ["0.001"] and value(cmd, "--dropout") == ["0.3"], (task, system)
            assert value(cmd, "--batch-size") == [] and value(cmd, "--max-tokens") == ["4000"], (task, system)
    assert systems.keeps_short_settings("core_copy", "summarization", "word-pg")
    assert not systems.keeps_short_settings("core_copy", "simplification", "word-pg")


def test_validation_figure_prints_no_matplotlib_debug_lines(tmp_path):
    """The comparison's figure is drawn without matplotlib's import-time DEBUG lines on the console
    (fairseq's logging set-up lets DEBUG through; they were printed into every comparison log)."""
    script = (
        "import logging, sys, types\n"
        "logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)\n"
        "from fairseq_wean.compare import report\n"
        "args = types.SimpleNamespace(task='translation', out=sys.argv[1])\n"
        "ev = {'curve': [{'epoch': 1, 'bleu': 10.0}, {'epoch': 2, 'bleu': 20.0}], 'valid_loss': {'1': 4.0, '2': 3.0}}\n"
        "print(report.plot_curves(args, {'valid': {'metric': 'bleu'}}, {('lstm', 'word'): ev}))\n")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == str(tmp_path / "valid_curve.png")
    assert (tmp_path / "valid_curve.png").read_bytes().startswith(b"\x89PNG")
    assert "DEBUG:matplotlib" not in proc.stderr, proc.stderr[:500]


@pytest.mark.parametrize("value", ["", ",", " "])
def test_compare_refuses_empty_runs_instead_of_the_default_list(value, tmp_path, capsys):
    """--runs '' ran the task's whole default list (hours of training); it is an error before any work."""
    from fairseq_wean.compare import cli as compare_cli

    with pytest.raises(SystemExit) as info:
        compare_cli.main(["translation", str(tmp_path), "--runs", value, "--out", str(tmp_path / "out")])
    assert info.value.code == 2 and "--runs is empty" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
