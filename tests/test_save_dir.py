"""fairseq-train never replaces a better checkpoint by accident, whatever the task: every
checkpoint file it may read or replace at its start is a regular file (a directory named
checkpoint_last.pt made fairseq train from scratch and replace checkpoint_best.pt), and one run
at a time writes a --save-dir (any task, once the plugin is loaded)."""
import os

import pytest

from conftest import folder_locked_elsewhere
from test_crafted_checkpoints import run_driver, train_argv

# (option, how a non-file is planted): each file fairseq-train may read or replace at its start
PLANTED = [
    ("checkpoint_last.pt", []),
    ("checkpoint_best.pt", []),
    ("restore.pt", ["--restore-file", "{path}"]),
    ("finetune.pt", ["--finetune-from-model", "{path}"]),
    ("continue.pt", ["--continue-once", "{path}"]),
]


@pytest.mark.parametrize("task", ["translation", "translation_with_metrics"])
def test_a_checkpoint_path_that_is_not_a_file_is_refused_before_training(data_bin, tmp_path, task):
    jobs, saved = [], {}
    for i, (name, extra) in enumerate(PLANTED):
        save_dir = tmp_path / "save{}".format(i)
        save_dir.mkdir()
        planted = save_dir / name
        planted.mkdir()  # a directory where a checkpoint file is expected
        (planted / "keep").write_text("x")
        best = save_dir / "checkpoint_best.pt"
        if name != "checkpoint_best.pt":
            best.write_bytes(b"the best weights")
            saved[i] = best
        jobs.append({"name": name, "argv": train_argv(data_bin, save_dir, "--task", task,
                                                      *[a.format(path=planted) for a in extra])})
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker")
    for i, ((name, _extra), result) in enumerate(zip(PLANTED, results)):
        assert result["outcome"].startswith("FairseqWeanError: "), result
        assert "{}: ".format(name) in result["outcome"] or name in result["outcome"], result
        assert "is a directory, not a checkpoint file; nothing was trained" in result["outcome"], result
        if i in saved:
            assert saved[i].read_bytes() == b"the best weights"
        assert not any(f.endswith(".pt") and f not in (name, "checkpoint_best.pt")
                       for f in os.listdir(tmp_path / "save{}".format(i))), "a checkpoint was written"


@pytest.mark.parametrize("task", ["translation", "translation_with_metrics"])
def test_one_run_per_save_dir_for_any_task(data_bin, tmp_path, task):
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    with folder_locked_elsewhere(save_dir):
        results = run_driver([{"name": task, "argv": train_argv(data_bin, save_dir, "--task", task)}], tmp_path,
                             tmp_path / "no-marker")
    outcome = results[0]["outcome"]
    assert outcome.startswith("FairseqWeanError: --save-dir ") and "is in use by a running job" in outcome, outcome
    assert not list(save_dir.glob("*.pt"))


# ------------------------------------------------------------------ --best-checkpoint-metric
TINY_CORE = ["--arch", "core_copy", "--criterion", "core_mode_loss", "--core-num-frequent", "10", "--core-topk", "5"]
# (criterion options, task options, metric): the criterion's and task's own code decides what is
# logged; expected from reading them: cross_entropy logs nll_loss only with --sentence-avg,
# label_smoothed_cross_entropy always, core_mode_loss adds mode_loss, bleu needs --eval-bleu
METRIC_CASES = [
    (["--criterion", "cross_entropy"], "translation", "nll_loss", False),
    (["--criterion", "cross_entropy", "--sentence-avg"], "translation", "nll_loss", True),
    (["--criterion", "label_smoothed_cross_entropy"], "translation", "nll_loss", True),
    (["--criterion", "label_smoothed_cross_entropy"], "translation_with_metrics", "mode_loss", False),
    (TINY_CORE, "translation_with_metrics", "mode_loss", True),
    (["--criterion", "cross_entropy"], "translation", "ppl", True),
    (["--criterion", "cross_entropy", "--maximize-best-checkpoint-metric"], "translation", "bleu", False),
    (["--criterion", "cross_entropy", "--maximize-best-checkpoint-metric", "--eval-bleu"], "translation", "bleu",
     True),
]


def test_a_best_checkpoint_metric_that_validation_never_logs_is_refused_before_training(data_bin, tmp_path):
    table = tmp_path / "align.table"
    table.write_text("".join("w{0}\tw{0}\t3\n".format(i) for i in range(40)))
    jobs = []
    for i, (criterion, task, metric, logged) in enumerate(METRIC_CASES):
        argv = train_argv(data_bin, tmp_path / "save{}".format(i), "--task", task, *criterion,
                          "--best-checkpoint-metric", metric, "--validate-interval-updates", "1")
        if "core_copy" in criterion:
            argv[argv.index("wean_lstm") - 1:argv.index("wean_lstm") + 1] = []  # TINY_CORE names the arch
            argv += ["--core-align-table", str(table)]
        jobs.append({"name": "{} {} {}".format(" ".join(criterion), task, metric), "argv": argv})
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker")
    for (criterion, task, metric, logged), result in zip(METRIC_CASES, results):
        if logged:
            assert result["outcome"] == "ran to the end", result
            save_dir = tmp_path / "save{}".format(METRIC_CASES.index((criterion, task, metric, logged)))
            assert (save_dir / "checkpoint_best.pt").is_file(), result
        else:
            assert result["outcome"].startswith("FairseqWeanError: --best-checkpoint-metric {}: validation with "
                                                "--criterion ".format(metric)), result
            assert "does not log it" in result["outcome"] and "it logs: " in result["outcome"], result


@pytest.mark.parametrize("task", ["translation", "translation_with_metrics"])
def test_a_best_checkpoint_without_a_last_one_is_not_replaced_whatever_the_task(data_bin, tmp_path, task):
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    (save_dir / "checkpoint_best.pt").write_bytes(b"the best weights")
    results = run_driver([{"name": task, "argv": train_argv(data_bin, save_dir, "--task", task)}], tmp_path,
                         tmp_path / "no-marker")
    outcome = results[0]["outcome"]
    assert outcome.startswith("FairseqWeanError: --save-dir ") and "holds checkpoint_best.pt but no " \
        "checkpoint_last.pt" in outcome, outcome
    assert (save_dir / "checkpoint_best.pt").read_bytes() == b"the best weights"
    assert not list(save_dir.glob("checkpoint[0-9]*.pt"))


# every way of starting a run in a --save-dir that holds checkpoint_best.pt but no checkpoint_last.pt:
# (name, extra options, refused); {other}: another run's checkpoint, {best}: the folder's own best
STARTS = [
    ("from scratch", [], True),
    ("--finetune-from-model", ["--finetune-from-model", "{other}"], True),
    ("--continue-once", ["--continue-once", "{other}"], True),
    ("--restore-file of another run", ["--restore-file", "{other}"], True),
    ("--restore-file --reset-optimizer", ["--restore-file", "{other}", "--reset-optimizer"], True),
    ("--restore-file --reset-meters", ["--restore-file", "{other}", "--reset-meters"], True),
    ("--restore-file its own best --reset-meters", ["--restore-file", "{best}", "--reset-meters"], True),
    ("--restore-file its own best --reset-optimizer", ["--restore-file", "{best}", "--reset-optimizer"], True),
    ("--restore-file its own best (fairseq keeps its best score)", ["--restore-file", "{best}"], False),
]


def test_every_way_of_starting_a_run_keeps_a_best_checkpoint_without_a_last_one(data_bin, tmp_path):
    other_dir = tmp_path / "other"
    jobs = [{"name": "another run", "argv": train_argv(data_bin, other_dir)}]
    for i, (name, extra, _refused) in enumerate(STARTS):
        save_dir = tmp_path / "save{}".format(i)
        jobs.append({"name": name, "argv": train_argv(data_bin, save_dir, *[
            a.format(other=other_dir / "checkpoint_last.pt", best=save_dir / "checkpoint_best.pt") for a in extra])})
    # the other run trains first (the driver runs its jobs in order); each save dir gets a copy of its best
    first = run_driver(jobs[:1], tmp_path, tmp_path / "no-marker")
    assert first[0]["outcome"] == "ran to the end", first
    best_bytes = (other_dir / "checkpoint_best.pt").read_bytes()
    for i in range(len(STARTS)):
        (tmp_path / "save{}".format(i)).mkdir()
        (tmp_path / "save{}".format(i) / "checkpoint_best.pt").write_bytes(best_bytes)
    results = run_driver(jobs[1:], tmp_path, tmp_path / "no-marker")
    for i, ((name, _extra, refused), result) in enumerate(zip(STARTS, results)):
        best = tmp_path / "save{}".format(i) / "checkpoint_best.pt"
        if refused:
            assert result["outcome"].startswith("FairseqWeanError: --save-dir ") and "holds checkpoint_best.pt but " \
                "no checkpoint_last.pt" in result["outcome"], (name, result)
            assert best.read_bytes() == best_bytes, name
            assert not (tmp_path / "save{}".format(i) / "checkpoint_last.pt").exists(), name
        else:
            assert result["outcome"] == "ran to the end", (name, result)


@pytest.mark.parametrize("name", ["checkpoint_last.pt", "checkpoint_best.pt"])
def test_a_linked_checkpoint_in_the_save_dir_is_refused(data_bin, tmp_path, name):
    """fairseq-train reads --save-dir's checkpoints at its start: a symbolic link there is not followed."""
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    target = tmp_path / "elsewhere.pt"
    target.write_bytes(b"not to be read")
    (save_dir / name).symlink_to(target)
    results = run_driver([{"name": name, "argv": train_argv(data_bin, save_dir)}], tmp_path, tmp_path / "no-marker")
    outcome = results[0]["outcome"]
    assert outcome.startswith("FairseqWeanError: --save-dir ") and "{} is a symbolic link".format(
        save_dir / name) in outcome and "\n" not in outcome, outcome
    assert (save_dir / name).is_symlink() and target.read_bytes() == b"not to be read"
    assert sorted(os.listdir(save_dir)) == [name]
