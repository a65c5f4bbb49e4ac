"""Every file or folder a fairseq command's options name, that fairseq would write, remove or read as a
folder, is checked when the command is parsed, before any work (fairseq_wean/train_files_check.py):
one argparse line (exit 2) naming the file, and the file untouched. In-process: parsing only."""
import hashlib
import os
import sys

import pytest

import fairseq_wean  # noqa: F401  (applies the plugin's patches)
from fairseq import options
from fairseq_wean.train_files_check import CHECKPOINT_PATTERN

# every checkpoint name fairseq-train writes or its --keep-* cleanup removes ({s}: --checkpoint-suffix)
CHECKPOINT_NAMES = ["checkpoint1{s}.pt", "checkpoint0{s}.pt", "checkpoint_1_100{s}.pt", "checkpoint_best{s}.pt",
                    "checkpoint_last{s}.pt", "checkpoint.best_loss_0.1000{s}.pt", "checkpoint.best_bleu_-1.50{s}.pt",
                    "checkpoint1{s}-shard0.pt", "checkpoint_last{s}-shard1.pt"]
# the same, left there by another run (no checkpoint_last.pt); best alone: the older check's message
FOREIGN = [n for n in CHECKPOINT_NAMES if "last" not in n and "_best" not in n]


def parse(capsys, parser, argv):
    with pytest.raises(SystemExit) as exit_info:
        options.parse_args_and_arch(parser, argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    return lines[-1]


def train(capsys, data, save_dir, *extra):
    return parse(capsys, options.get_training_parser(), [str(data), "--arch", "lstm", "--save-dir", str(save_dir),
                                                         "--cpu", *extra])


def md5(path):
    return hashlib.md5(open(path, "rb").read()).hexdigest()


def test_the_pattern_matches_every_name():
    import re
    for suffix in ("", "_a"):
        for name in CHECKPOINT_NAMES:
            assert re.match(CHECKPOINT_PATTERN.format(suffix=re.escape(suffix)) + r"\Z", name.format(s=suffix)), name


@pytest.mark.parametrize("suffix", ["", "_a"])
@pytest.mark.parametrize("name", CHECKPOINT_NAMES)
@pytest.mark.parametrize("plant", ["folder", "fifo", "link"])
def test_a_checkpoint_name_that_is_not_a_regular_file_is_refused(tmp_path, capsys, name, suffix, plant):
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    (save_dir / "checkpoint_last{}.pt".format(suffix)).write_bytes(b"last") if "last" not in name else None
    planted = save_dir / name.format(s=suffix)
    {"folder": planted.mkdir, "fifo": lambda: os.mkfifo(planted),
     "link": lambda: planted.symlink_to(tmp_path / "elsewhere")}[plant]()
    from fairseq_wean.errors import FairseqWeanError

    with pytest.raises(FairseqWeanError) as error:
        options.parse_args_and_arch(options.get_training_parser(), [
            str(tmp_path), "--arch", "lstm", "--save-dir", str(save_dir), *(["--checkpoint-suffix", suffix] if suffix
                                                                               else [])])
    assert str(error.value).startswith("--save-dir {}: {} is {}".format(
        save_dir, planted, {"folder": "a directory, not a checkpoint file; nothing was trained",
                            "fifo": "not a regular file", "link": "a symbolic link: refused"}[plant])), error.value


@pytest.mark.parametrize("name", FOREIGN)
def test_another_runs_checkpoints_without_last_are_refused(tmp_path, capsys, name):
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    foreign = save_dir / name.format(s="")
    foreign.write_bytes(b"another run")
    before = md5(foreign)
    for extra in ([], ["--keep-last-epochs", "1"], ["--keep-interval-updates", "1"], ["--keep-best-checkpoints", "1"]):
        line = train(capsys, tmp_path, save_dir, *extra)
        assert ": error: --save-dir {} holds {} but no checkpoint_last.pt".format(save_dir, foreign.name) in line
    assert md5(foreign) == before


@pytest.mark.parametrize("suffix", ["_a/../../escaped", "/x", "..", "_a/b"])
def test_a_checkpoint_suffix_with_a_path_is_refused(tmp_path, capsys, suffix):
    line = train(capsys, tmp_path, tmp_path / "save", "--checkpoint-suffix", suffix)
    assert ": error: --checkpoint-suffix {!r}: a path separator".format(suffix) in line


@pytest.mark.parametrize("plant", ["link", "folder", "fifo", "hardlink"])
def test_a_log_file_that_is_not_a_plain_new_file_is_refused(tmp_path, capsys, plant):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    log = tmp_path / "train.log"
    {"link": lambda: log.symlink_to(victim), "folder": log.mkdir, "fifo": lambda: os.mkfifo(log),
     "hardlink": lambda: os.link(victim, log)}[plant]()
    line = train(capsys, tmp_path, tmp_path / "save", "--log-file", str(log))
    expected = {"link": "is a symbolic link", "folder": "is a folder", "fifo": "is not a regular file",
                "hardlink": "has 2 hard links"}[plant]
    assert ": error: --log-file {} {}".format(log, expected) in line, line
    assert victim.read_bytes() == b"precious"


@pytest.mark.parametrize("command", ["train", "generate", "interactive", "validate"])
@pytest.mark.parametrize("bad", ["missing", "file", "second-missing"])
def test_a_data_path_that_is_not_a_folder_is_refused(tmp_path, capsys, monkeypatch, command, bad):
    """In the command's process; a script that parses options without real data is not refused."""
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(sys, "argv", ["fairseq-" + command])
    data = {"missing": str(tmp_path / "nope"), "file": str(tmp_path / "file"),
            "second-missing": "{}:{}".format(tmp_path, tmp_path / "nope")}[bad]
    parser = {"train": options.get_training_parser, "generate": options.get_generation_parser,
              "interactive": lambda: options.get_interactive_generation_parser(),
              "validate": options.get_validation_parser}[command]()
    extra = {"train": ["--arch", "lstm"], "generate": ["--path", "x.pt"], "interactive": ["--path", "x.pt"],
             "validate": ["--path", "x.pt", "--task", "translation"]}[command]
    line = parse(capsys, parser, [data, *extra])
    assert ": error: data {}: ".format(data.split(":")[-1]) in line, line


@pytest.mark.parametrize("option,parser", [("--results-path", "generate"), ("--tensorboard-logdir", "train")])
def test_an_output_folder_that_is_a_file_is_refused(tmp_path, capsys, option, parser):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    argv = [str(tmp_path), option, str(victim)] + (["--path", "x.pt"] if parser == "generate" else ["--arch", "lstm"])
    line = parse(capsys, {"generate": options.get_generation_parser, "train": options.get_training_parser}[parser](),
                 argv)
    assert ": error: {} {} is a regular file, not a folder".format(option, victim) in line, line
    assert victim.read_bytes() == b"precious"


@pytest.mark.parametrize("form", ["--save-dir {}", "--save-dir={}"])
def test_the_launcher_refuses_a_locked_save_dir_before_any_rank(tmp_path, monkeypatch, form):
    import subprocess

    from fairseq_wean.cli import train_cpu_dist
    from fairseq_wean.textio import lock_folder

    save_dir = tmp_path / "save"
    save_dir.mkdir()
    lock_folder(str(save_dir), "--save-dir", "fairseq-train")  # held by this process: another open file conflicts

    def no_rank(*args, **kwargs):
        raise AssertionError("a rank was started")

    monkeypatch.setattr(subprocess, "Popen", no_rank)
    with pytest.raises(SystemExit) as exit_info:
        train_cpu_dist.launch([str(tmp_path), *form.format(save_dir).split(" ")], nproc_per_node=2)
    assert str(exit_info.value).startswith(
        "{}: error: --save-dir {} is in use by fairseq-train".format(train_cpu_dist.PROG, save_dir)), exit_info.value


def test_finetune_from_model_ignored_on_resume_is_said(tmp_path, caplog):
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    (save_dir / "checkpoint_last.pt").write_bytes(b"last")
    with caplog.at_level("WARNING"):
        options.parse_args_and_arch(options.get_training_parser(), [
            str(tmp_path), "--arch", "lstm", "--save-dir", str(save_dir), "--finetune-from-model", "x.pt"])
    assert "--finetune-from-model x.pt is NOT loaded: --save-dir holds {}".format(
        save_dir / "checkpoint_last.pt") in caplog.text


def _resume_cfg(save_dir, *extra):
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(save_dir), "--arch", "lstm", "--save-dir", str(save_dir), *extra])
    return convert_namespace_to_omegaconf(args)


def _loadable(state):
    """``state`` with what fairseq's load_checkpoint_to_cpu needs of a checkpoint (the start checks read it so)."""
    return dict(state, optimizer_history=[{"criterion_name": "x", "num_updates": 3, "best_loss": 1.5}],
                extra_state=dict(state.get("extra_state", {}), train_iterator={"epoch": 2, "iterations_in_epoch": 0}))


def _stored_run(save_dir, metric="loss", maximize=False, best=1.5):
    import torch

    torch.save(_loadable({"cfg": {"checkpoint": {"best_checkpoint_metric": metric,
                                                 "maximize_best_checkpoint_metric": maximize}},
                          "extra_state": {"best": best}}), str(save_dir / "checkpoint_last.pt"))
    (save_dir / "checkpoint_best.pt").write_bytes(b"the best weights")  # what the kept best score protects


@pytest.mark.parametrize("extra", [["--best-checkpoint-metric", "nll_loss"], ["--maximize-best-checkpoint-metric"],
                                   ["--best-checkpoint-metric", "bleu", "--maximize-best-checkpoint-metric"]])
def test_resuming_with_another_best_metric_is_refused(tmp_path, extra):
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.metric_check import keep_the_stored_best

    _stored_run(tmp_path)
    with pytest.raises(FairseqWeanError, match=r"^--best-checkpoint-metric \S+ \(\w+\) differs from the run that "
                                               r"wrote .*checkpoint_last.pt \(loss, minimized\)"):
        keep_the_stored_best(_resume_cfg(tmp_path, *extra))


@pytest.mark.parametrize("reset", [[], ["--reset-meters"], ["--reset-optimizer"], ["--reset-meters", "--reset-optimizer"]])
def test_resuming_with_reset_flags_keeps_the_best_score(tmp_path, monkeypatch, reset):
    from fairseq import checkpoint_utils

    from fairseq_wean.metric_check import keep_the_stored_best

    _stored_run(tmp_path, best=1.25)
    monkeypatch.delattr(checkpoint_utils.save_checkpoint, "best", raising=False)
    keep_the_stored_best(_resume_cfg(tmp_path, *reset))
    # without reset flags fairseq restores it itself (the best is then left to fairseq)
    assert getattr(checkpoint_utils.save_checkpoint, "best", None) == (1.25 if reset else None)


@pytest.mark.parametrize("stored", [{"cfg": {"model": {"_name": "transformer"}}},
                                    {"cfg": {"model": {"arch": "wean_lstm"}}}])
@pytest.mark.parametrize("arch", ["lstm", "transformer_iwslt_de_en"])
def test_resuming_another_architecture_is_refused(tmp_path, stored, arch):
    import torch

    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.metric_check import keep_the_stored_best

    torch.save(_loadable(stored), str(tmp_path / "checkpoint_last.pt"))
    cfg = _resume_cfg(tmp_path)
    cfg.model._name = arch if hasattr(cfg.model, "_name") else None
    if hasattr(cfg.model, "arch"):
        cfg.model.arch = arch
    with pytest.raises(FairseqWeanError, match=r"^--arch {}: .*checkpoint_last.pt was written by --arch ".format(arch)):
        keep_the_stored_best(cfg)
