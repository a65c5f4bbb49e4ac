"""``--task translation_with_metrics``: SARI and ROUGE in fairseq-train's validation, and TensorBoard.

Three trainings on the tiny data of conftest.py, run at once:

* ``single``: wean_lstm, one process, ``--eval-sari --eval-rouge --eval-bleu
  --best-checkpoint-metric sari --maximize-best-checkpoint-metric --patience 1``, epoch checkpoints;
* ``dist``: the same model on two gloo ranks (``fairseq-wean-train-cpu-dist``), one epoch, with two
  references per sentence from text files (``--eval-refs``) and the original from text (``--eval-orig``);
* ``core``: core_copy + core_mode_loss with ``--tensorboard-logdir``.

The logged scores are then compared with ``fairseq-wean-score`` on ``fairseq-generate``'s decoding of
the validation set by the checkpoint that was validated (a single process, the whole set at once).
A checkpoint's ``extra_state["val_loss"]`` is the full-precision value of ``--best-checkpoint-metric``
at that validation, so SARI is compared exactly (it is a function of summed integer counts); the log
prints 6 significant digits, which is what the ROUGE and BLEU comparisons get.
"""
import glob
import json
import math
import os
import re
import struct

import pytest
import torch

from conftest import (USER_DIR, WORDS, cli_concurrently, folder_locked_elsewhere, generated_hypotheses, override,
                      read_text_lines)

SMALL_WEAN = ["--arch", "wean_lstm", "--embed-dim", 32, "--encoder-hidden-size", 32, "--decoder-hidden-size", 32]
SMALL_CORE = ["--arch", "core_copy", "--criterion", "core_mode_loss", "--embed-dim", 16,
              "--encoder-hidden-size", 16, "--decoder-hidden-size", 16, "--decoder-out-embed-dim", 16,
              "--core-num-frequent", 10, "--core-topk", 5]
MAX_EPOCH = 6
BEAM = 3


def train_args(data, save_dir, model, *extra):
    defaults = (("--dropout", 0), ("--optimizer", "adam"), ("--lr", 0.02), ("--batch-size", 16),
                ("--batch-size-valid", 4), ("--seed", 1), ("--log-format", "simple"), ("--log-interval", 1),
                ("--num-workers", 0), ("--eval-bleu-args", json.dumps({"beam": BEAM})))
    return override([data, "--user-dir", USER_DIR, "--task", "translation_with_metrics", "--save-dir", save_dir],
                    [w for option in defaults for w in option], model, extra)


# a run without a metric that decodes takes no decoding options (train_args gives --eval-bleu-args)
NO_DECODING = ["--eval-bleu-args", "{}"]


def valid_stats(log):
    """[{stat: value}] of fairseq's 'valid on 'valid' subset' lines, in order."""
    out = []
    for line in log.splitlines():
        m = re.search(r"\| valid on 'valid' subset \| (.*)$", line)
        if m:
            out.append({k: float(v) for k, v in (item.rsplit(" ", 1) for item in m.group(1).split(" | "))})
    return out


def val_loss(path):
    """(epoch, the --best-checkpoint-metric value) of an end-of-epoch checkpoint, at full precision."""
    state = torch.load(str(path), weights_only=False)["extra_state"]
    # an iterator saved at the end of epoch E says "epoch E + 1, nothing read yet"
    assert state["train_iterator"]["iterations_in_epoch"] == 0
    return state["train_iterator"]["epoch"] - 1, state["val_loss"]


def read_event_scalars(path):
    """{tag: [(step, value)]} of a TensorBoard event file, read by hand (TFRecord framing + the Event
    protobuf shipped with tensorboardX), checking each record's masked CRC-32C."""
    from tensorboardX.crc32c import crc32c
    from tensorboardX.proto import event_pb2

    def masked(data):
        crc = crc32c(data)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    scalars = {}
    with open(path, "rb") as f:
        while True:
            header = f.read(8)
            if not header:
                break
            (length,) = struct.unpack("<Q", header)
            (header_crc,) = struct.unpack("<I", f.read(4))
            data = f.read(length)
            (data_crc,) = struct.unpack("<I", f.read(4))
            assert header_crc == masked(header) and data_crc == masked(data), path
            event = event_pb2.Event.FromString(data)
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def write_align_table(path):
    with open(path, "w") as f:
        for w in WORDS:
            f.write("{}\t{}\t1.0\n".format(w, w))


@pytest.fixture(scope="module")
def runs(raw_dir, data_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("valmetrics")
    # a second reference per validation sentence: the first one without w10-w14
    refs = [str(raw_dir / "valid.tgt"), str(work / "valid.ref1")]
    with open(refs[1], "w") as f:
        for line in read_text_lines(refs[0]):
            f.write(" ".join(w for w in line.split() if not 10 <= int(w[1:]) < 15) + "\n")
    table = work / "align.table"
    write_align_table(table)
    single, dist, core = cli_concurrently([
        ("fairseq-train", train_args(data_bin, work / "single", SMALL_WEAN, "--cpu", "--eval-sari", "--eval-rouge",
                                     "--eval-bleu", "--best-checkpoint-metric", "sari",
                                     "--maximize-best-checkpoint-metric", "--patience", 1, "--max-epoch", MAX_EPOCH)),
        ("fairseq-wean-train-cpu-dist", ["--nproc-per-node", 2, "--timeout", 300, "--"]
         + train_args(data_bin, work / "dist", SMALL_WEAN, "--eval-sari", "--eval-rouge", "--max-epoch", 1,
                      "--eval-refs", ",".join(refs), "--eval-orig", raw_dir / "valid.src",
                      "--best-checkpoint-metric", "sari", "--maximize-best-checkpoint-metric",
                      "--no-epoch-checkpoints")),
        ("fairseq-train", train_args(data_bin, work / "core", SMALL_CORE, "--cpu", "--core-align-table", table,
                                     "--eval-sari", "--eval-rouge", "--max-epoch", 2, "--no-epoch-checkpoints",
                                     "--best-checkpoint-metric", "rougeL", "--maximize-best-checkpoint-metric",
                                     "--tensorboard-logdir", work / "tb")),
    ], timeout=400)
    single_log, dist_log = single.stdout + single.stderr, dist.stdout + dist.stderr
    best_epoch, _ = val_loss(work / "single" / "checkpoint_best.pt")
    gen = ["--user-dir", USER_DIR, "--gen-subset", "valid", "--beam", BEAM, "--batch-size", 7,
           "--num-workers", 0, "--cpu"]
    gen_single, gen_dist = cli_concurrently([
        ("fairseq-generate", [data_bin, "--path", work / "single" / "checkpoint_best.pt", *gen]),
        ("fairseq-generate", [data_bin, "--path", work / "dist" / "checkpoint_last.pt", *gen]),
    ])
    for name, proc in (("single", gen_single), ("dist", gen_dist)):
        with open(work / "gen-{}.log".format(name), "w") as f:
            f.write(proc.stdout)
    metrics = "sari,rouge1,rouge2,rougeL,bleu"
    score_single, score_dist = cli_concurrently([
        ("fairseq-wean-score", ["--sys", work / "gen-single.log", "--metrics", metrics, "--json"]),
        ("fairseq-wean-score", ["--sys", work / "gen-dist.log", "--orig", raw_dir / "valid.src", "--refs", *refs,
                                "--metrics", metrics, "--json"]),
    ])
    return {"work": work, "single_log": single_log, "dist_log": dist_log, "core_log": core.stdout + core.stderr,
            "best_epoch": best_epoch, "score_single": json.loads(score_single.stdout),
            "score_dist": json.loads(score_dist.stdout), "refs": refs}


def test_sari_and_rouge_are_logged_each_validation(runs):
    stats = valid_stats(runs["single_log"])
    assert stats
    for e, s in enumerate(stats, start=1):
        assert {"loss", "bleu", "sari", "rouge1", "rouge2", "rougeL"} <= s.keys(), s
        assert ("best_sari" in s) == (e > 1)  # fairseq's running best, from the second validation on
        assert 0 < s["sari"] < 100 and 0 <= s["rouge2"] <= s["rouge1"] <= 100
    # training steps log no validation metric
    assert not re.search(r"\| train(_inner)? \|.*\b(sari|rouge1)\b", runs["single_log"])


def test_patience_stops_on_sari_and_checkpoint_best_is_the_best_sari_epoch(runs):
    work = runs["work"] / "single"
    stats = valid_stats(runs["single_log"])
    epochs = len(stats)
    assert epochs < MAX_EPOCH, "patience did not stop training"
    assert "early stop since valid performance hasn't improved for last 1 runs" in runs["single_log"]
    sari = {}  # epoch -> full-precision SARI, from that epoch's checkpoint
    for e in range(1, epochs + 1):
        epoch, sari[e] = val_loss(work / "checkpoint{}.pt".format(e))
        assert epoch == e
        assert sari[e] == pytest.approx(stats[e - 1]["sari"], rel=1e-5)  # the log has 6 digits
    # --patience 1: every epoch but the last improved on all earlier ones; the last did not
    for e in range(2, epochs):
        assert sari[e] > max(sari[k] for k in range(1, e))
    assert sari[epochs] <= max(sari[k] for k in range(1, epochs))
    # checkpoint_best: fairseq replaces it on a tie (>=), so the last epoch with the highest SARI
    best = max(e for e in sari if sari[e] == max(sari.values()))
    assert runs["best_epoch"] == best
    best_model = torch.load(str(work / "checkpoint_best.pt"), weights_only=False)["model"]
    epoch_model = torch.load(str(work / "checkpoint{}.pt".format(best)), weights_only=False)["model"]
    assert all(torch.equal(best_model[k], epoch_model[k]) for k in epoch_model)
    assert stats[-1]["best_sari"] == pytest.approx(sari[best], rel=1e-5)


def test_logged_metrics_equal_fairseq_wean_score_on_the_same_decoding(runs):
    """The best epoch's validation scores == fairseq-wean-score on fairseq-generate of checkpoint_best."""
    score = runs["score_single"]
    _, sari = val_loss(runs["work"] / "single" / "checkpoint_best.pt")
    assert sari == pytest.approx(score["sari"], abs=1e-9)
    logged = valid_stats(runs["single_log"])[runs["best_epoch"] - 1]
    for t in ("rouge1", "rouge2", "rougeL"):
        assert logged[t] == pytest.approx(score[t], rel=1e-5, abs=1e-4), t
    assert logged["bleu"] == round(score["bleu"], 2)  # fairseq rounds BLEU to 2 decimals


def test_two_ranks_sum_their_statistics_into_the_single_process_score(runs):
    """Two ranks each decode half of the validation batches; SARI from the summed counts equals one
    process scoring the whole set (two references from --eval-refs, original from --eval-orig)."""
    log = runs["dist_log"]
    assert "training on 2 devices" in log
    stats = valid_stats(log)
    assert len(stats) == 1
    epoch, sari = val_loss(runs["work"] / "dist" / "checkpoint_last.pt")
    score = runs["score_dist"]
    assert epoch == 1
    assert sari == pytest.approx(score["sari"], abs=1e-9)
    assert stats[0]["sari"] == pytest.approx(score["sari"], rel=1e-5)
    for t in ("rouge1", "rouge2", "rougeL"):
        assert stats[0][t] == pytest.approx(score[t], rel=1e-5, abs=1e-4), t
    # the second reference counts: SARI against the first reference alone differs
    from fairseq_wean.scoring.sari import corpus_sari

    hyps = [h for _, h in sorted(_hypotheses(runs["work"] / "gen-dist.log").items())]
    orig = read_text_lines(os.path.join(os.path.dirname(runs["refs"][0]), "valid.src"))
    one_ref = corpus_sari(orig, hyps, [read_text_lines(runs["refs"][0])])
    assert abs(one_ref - sari) > 1e-6


def _hypotheses(log_path):
    with open(log_path) as f:
        return generated_hypotheses(f.read())


def test_tensorboard_has_the_criterion_and_validation_metrics(runs):
    tb = runs["work"] / "tb"
    train_files = glob.glob(str(tb / "train" / "events.out.tfevents.*"))
    valid_files = glob.glob(str(tb / "valid" / "events.out.tfevents.*"))
    assert len(train_files) == 1 and len(valid_files) == 1, os.listdir(tb)
    train, valid = read_event_scalars(train_files[0]), read_event_scalars(valid_files[0])
    for tag in ("loss", "mode_loss", "gold_copy_ratio", "pred_copy_ratio"):
        assert len(train.get(tag, [])) == 2, (tag, sorted(train))  # one per epoch
        assert all(math.isfinite(v) for _, v in train[tag])
    for tag in ("mode_loss", "gold_copy_ratio", "pred_copy_ratio", "sari", "rouge1", "rouge2", "rougeL"):
        assert len(valid.get(tag, [])) == 2, (tag, sorted(valid))
    assert all(0.5 < v <= 1 for _, v in train["gold_copy_ratio"])  # most target words are in the source
    # the values are the logged ones (event files hold float32)
    stats = valid_stats(runs["core_log"])
    assert len(stats) == 2
    steps = sorted(step for step, _ in valid["sari"])
    for tag in ("sari", "rouge1", "rougeL", "mode_loss"):
        for step, value in valid[tag]:
            assert value == pytest.approx(stats[steps.index(step)][tag], rel=1e-5, abs=1e-3), tag
    _, rouge_l = val_loss(runs["work"] / "core" / "checkpoint_last.pt")
    assert valid["rougeL"][-1][1] == pytest.approx(rouge_l, rel=1e-6)


# --------------------------------------------------------------------------------------------
# mistakes: one line, before training


def test_validation_and_criterion_mistakes_are_one_line_errors_before_training(data_bin, tmp_path):
    cases = [
        (["--best-checkpoint-metric", "sari", *NO_DECODING], "--best-checkpoint-metric sari is logged only with --eval-sari"),
        (["--eval-sari", "--eval-refs", tmp_path / "short.ref"], "short.ref has 2 lines but the validation subset "
                                                                "'valid' has 21 sentences"),
        (["--eval-sari", "--eval-orig", tmp_path / "short.ref", "--valid-subset", "valid,test"],
         "--valid-subset is valid,test"),
        # --eval-orig with metrics that never read it (BLEU, ROUGE)
        (["--eval-bleu", "--eval-orig", tmp_path / "short.ref"], "--eval-orig does nothing here: it is read only by --eval-sari"),
        (["--eval-rouge", "--eval-orig", tmp_path / "short.ref"], "--eval-orig does nothing here: it is read only"),
        # the direction of the metric (fairseq keeps the worst checkpoint) and its spelling (KeyError after epoch 1)
        (["--eval-sari", "--best-checkpoint-metric", "sari"],
         "--best-checkpoint-metric sari is better higher, so add --maximize-best-checkpoint-metric"),
        (["--maximize-best-checkpoint-metric", *NO_DECODING],
         "--best-checkpoint-metric loss is better lower, so drop --maximize-best-checkpoint-metric"),
        (["--eval-sari", "--best-checkpoint-metric", "sary", "--maximize-best-checkpoint-metric"],
         "--best-checkpoint-metric 'sary' is not a metric this task logs in validation"),
        (["--eval-sari", "--eval-bleu-args", '{"beam": 0}'], "beam must be >= 1 and <= 1024, got 0"),
        (["--eval-bleu", "--eval-bleu-args", '{"beem": 5}'], "unknown generation option(s) beem"),
        (["--eval-bleu", "--eval-bleu-args", "beam=5"], "--eval-bleu-args beam=5: not JSON"),  # a traceback before
        (["--eval-bleu", "--eval-bleu-detok-args", "{bad"], "--eval-bleu-detok-args {bad: not JSON"),  # the same
        # settings that change a metric that is off (accepted and ignored before)
        (["--eval-sari", "--eval-rouge-chars"], "--eval-rouge-chars does nothing here: it changes only --eval-rouge, which is off"),
        (["--eval-rouge", "--eval-sari-mode", "legacy"], "--eval-sari-mode does nothing here: it changes only --eval-sari"),
        (["--eval-sari", "--eval-tokenized-bleu"], "--eval-tokenized-bleu does nothing here: it changes only --eval-bleu"),
        # validation's decoding options without a metric that decodes
        (["--eval-bleu-args", '{"beam": 3}'], "--eval-bleu-args does nothing here: it sets how validation decodes, but no metric decodes"),
        (["--eval-bleu-args", "{}", "--eval-bleu-remove-bpe", "subword_nmt"],
         "--eval-bleu-remove-bpe does nothing here: it sets how validation decodes"),
        (["--eval-bleu-args", "{}", "--eval-bleu-print-samples"], "--eval-bleu-print-samples does nothing here"),
        (["--eval-bleu", "--eval-bleu-args", '{"max_len_a": NaN}'], "max_len_a must be a finite number (JSON), got NaN"),
        # checkpoints selected on the references scored against themselves
        (["--eval-bleu", "--eval-bleu-args", '{"score_reference": true}', "--best-checkpoint-metric", "bleu",
          "--maximize-best-checkpoint-metric"], "score_reference scores the references themselves"),
        # the plugin's criterion, range-checked before the first update
        ([*SMALL_CORE, "--core-align-table", tmp_path / "align.table", *NO_DECODING, "--mode-loss-weight", "-1"],
         "--mode-loss-weight must be >= 0, got -1.0"),
        ([*SMALL_CORE, "--core-align-table", tmp_path / "align.table", *NO_DECODING, "--label-smoothing", "1.5"],
         "--label-smoothing must be in [0, 1), got 1.5"),
        ([*SMALL_CORE, "--core-align-table", tmp_path / "align.table", *NO_DECODING, "--mode-loss-weight", "nan"],
         "--mode-loss-weight must be a number, got nan"),
    ]
    write_align_table(tmp_path / "align.table")
    (tmp_path / "short.ref").write_text("a\nb\n")
    # one --save-dir per run: fairseq's start-up check writes and removes SAVE_DIR/dummy, so runs
    # started together in one directory remove each other's file (a race, not the check under test)
    procs = cli_concurrently([
        ("fairseq-train", train_args(data_bin, tmp_path / "ck{}".format(i), SMALL_WEAN, "--cpu", "--max-epoch", 1,
                                     *extra),
         {"check": False}) for i, (extra, _) in enumerate(cases)
    ])
    for i, ((extra, message), proc) in enumerate(zip(cases, procs)):
        assert proc.returncode != 0, extra
        last = proc.stderr.strip().splitlines()[-1]
        # the task's checks say fairseq-wean, the parse-time ones (options that do nothing) argparse's prog
        assert re.match(r"fairseq-(wean|train): error: ", last) and message in last, (extra, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, extra
        assert not os.path.exists(tmp_path / "ck{}".format(i) / "checkpoint_last.pt")


def test_a_best_checkpoint_without_a_last_one_is_not_replaced_by_a_fresh_run(data_bin, tmp_path):
    """fairseq would log "No existing checkpoint found", train from scratch and write its first
    (worse) epoch over checkpoint_best.pt; the task refuses, unless --overwrite-best-checkpoint."""
    runs = {}
    for name in ("refused", "allowed"):
        runs[name] = tmp_path / name
        runs[name].mkdir()
        (runs[name] / "checkpoint_best.pt").write_bytes(b"the best model of an earlier run")
    refused, allowed = cli_concurrently([
        ("fairseq-train", train_args(data_bin, runs["refused"], SMALL_WEAN, "--cpu", "--max-epoch", 1, *NO_DECODING),
         {"check": False}),
        ("fairseq-train", train_args(data_bin, runs["allowed"], SMALL_WEAN, "--cpu", "--max-epoch", 1, *NO_DECODING,
                                     "--overwrite-best-checkpoint")),
    ])
    last = refused.stderr.strip().splitlines()[-1]
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert last.startswith("fairseq-wean: error: --save-dir ") and "holds checkpoint_best.pt but no checkpoint_last.pt" \
        in last and "--overwrite-best-checkpoint" in last, refused.stderr[-2000:]
    assert (runs["refused"] / "checkpoint_best.pt").read_bytes() == b"the best model of an earlier run"
    assert not (runs["refused"] / "checkpoint_last.pt").exists()
    assert (runs["allowed"] / "checkpoint_last.pt").exists()
    assert (runs["allowed"] / "checkpoint_best.pt").read_bytes() != b"the best model of an earlier run"


def test_a_save_dir_in_use_by_another_training_is_refused(data_bin, tmp_path):
    """Two runs of the task into one --save-dir (e.g. wean_lstm and core_copy) both exited 0, the
    second's checkpoints over the first's: the second is refused while the first lives."""
    busy = tmp_path / "busy"
    busy.mkdir()
    with folder_locked_elsewhere(busy, "fairseq-train", "--save-dir") as holder:
        proc = cli_concurrently([("fairseq-train", train_args(data_bin, busy, SMALL_WEAN, "--cpu", "--max-epoch", 1,
                                                              *NO_DECODING), {"check": False})])[0]
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and last.startswith("fairseq-wean: error: --save-dir ") and \
        "is in use by fairseq-train (pid {})".format(holder.pid) in last, proc.stderr[-2000:]
    assert not (busy / "checkpoint_last.pt").exists()


def test_checkpoints_of_the_task_decode_with_plain_translation(runs, data_bin):
    """Drop-in: fairseq-generate's default --task translation reads them (as the fixture did)."""
    ck = torch.load(str(runs["work"] / "single" / "checkpoint_best.pt"), weights_only=False)
    assert ck["cfg"]["task"]["_name"] == "translation_with_metrics"
    assert ck["cfg"]["task"]["eval_sari"] is True
    assert len(_hypotheses(runs["work"] / "gen-single.log")) == 21


# ------------------------------------------------------------------ --eval-bleu-args: types and keys
def _wrong_value(field):
    """A JSON value of the wrong type for a GenerationConfig field, or None for a field of any type."""
    import typing

    kind = field.type
    if typing.get_origin(kind) is typing.Union:
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    if kind is typing.Any:
        return None
    if kind is bool:
        return "yes"  # fairseq: ValueError (invalid literal for int()) at the first validation
    if kind in (int, float):
        return "5" if kind is float else 2.5
    return 3  # text or a choice: a number is neither


def test_every_eval_bleu_args_key_is_checked_against_its_type():
    """"sampling": "yes" and "constraints": "ordered" were tracebacks at start: every field of fairseq's
    GenerationConfig (a new one included) refuses a value of another type, in one line naming it."""
    from dataclasses import fields

    from fairseq.dataclass.configs import GenerationConfig

    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.tasks.translation_with_metrics import check_generation_args

    checked = 0
    for field in fields(GenerationConfig):
        value = _wrong_value(field)
        if field.name == "_name" or value is None:
            continue
        with pytest.raises(FairseqWeanError, match="{} must be".format(field.name)) as info:
            check_generation_args(json.dumps({field.name: value}))
        assert "\n" not in str(info.value)
        checked += 1
    assert checked >= 35
    with pytest.raises(FairseqWeanError, match='constraints must be one of "ordered", "unordered"|constraints is refused'):
        check_generation_args('{"constraints": "sorted"}')


@pytest.mark.parametrize("key,value", [("constraints", "ordered"), ("prefix_size", 1),
                                       ("print_alignment", "hard"), ("replace_unk", "dict.txt"),
                                       ("lm_path", "lm.pt"), ("sacrebleu", True)])
def test_eval_bleu_args_that_make_validation_meaningless_are_refused(key, value):
    """Keys that do nothing in validation or make its scores meaningless ("score_reference" with a decoding
    --best-checkpoint-metric: test_validation_and_criterion_mistakes_are_one_line_errors_before_training)."""
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.tasks.translation_with_metrics import check_generation_args

    with pytest.raises(FairseqWeanError, match="{} is refused in validation: ".format(key)):
        check_generation_args(json.dumps({key: value}))
    check_generation_args(json.dumps({key: None if key in ("constraints", "print_alignment", "replace_unk",
                                                           "lm_path") else type(value)()}))  # the default: kept


def test_eval_bleu_args_refused_keys_are_generation_options():
    from dataclasses import fields

    from fairseq.dataclass.configs import GenerationConfig

    from fairseq_wean.tasks.translation_with_metrics import VALIDATION_REFUSED_GENERATION_ARGS

    assert set(VALIDATION_REFUSED_GENERATION_ARGS) <= {f.name for f in fields(GenerationConfig)}


@pytest.mark.parametrize("args,message", [
    ({"min_len": 100000}, "min_len 100000 is above max_len_b 200"),
    ({"max_len_a": 0, "max_len_b": 0}, "min_len 1 is above max_len_b 0"),
])
def test_eval_bleu_args_min_len_above_the_maximum_is_refused(args, message):
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.tasks.translation_with_metrics import check_generation_args

    with pytest.raises(FairseqWeanError, match=message):
        check_generation_args(json.dumps(args))
    check_generation_args(json.dumps(dict(args, max_len_a=1.0)))  # then a longer source allows it
