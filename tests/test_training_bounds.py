"""fairseq-train's inputs that failed only after work had started, refused in one line before any:

* every numeric option of the plugin's models (their ``add_args``) and criterion (its dataclass) has an upper
  bound (``model_options.MODEL_OPTION_MAXIMA``, ``core_mode_loss.MAX_MODE_LOSS_WEIGHT``, dropout's [0, 1)):
  a huge value was an allocator traceback (--encoder-hidden-size 1000000, --core-topk 1e9) or inf gradients and a
  crash.pt (--mode-loss-weight 1e300); now argparse's line at parse, and --core-topk above the dictionary at build;
* every file and folder fairseq-train writes under --save-dir (the checkpoints, ``crash.pt``, the ``NAME.tmp`` it
  renames, the ``dummy`` probe) and --tensorboard-logdir (a folder per logged tag and validation subset) is, where it
  exists, what fairseq writes there: a link, a folder for a file, a file for a folder or a pipe is one line at parse
  (train_files_check), the names read from fairseq's own code;
* --overwrite-best-checkpoint where --save-dir has no best checkpoint without a last one: it does nothing there.

In-process parses (``options.parse_args_and_arch``), no training.
"""
import argparse
import dataclasses
import inspect
import os
import re
import sys

import pytest

import fairseq_wean  # noqa: F401  (registers the models, applies the patches)
from fairseq import options
from fairseq_wean import train_files_check
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.modules import model_options

BASE = ["--optimizer", "adam", "--max-tokens", "100"]


def plugin_numeric_options():
    """(dest, flag, arch or criterion, kind) of every numeric option of the plugin's models and criteria."""
    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY

    found = {}
    for name, cls in sorted(MODEL_REGISTRY.items()):
        if cls.__module__.startswith("fairseq_wean"):
            parser = argparse.ArgumentParser()
            cls.add_args(parser)
            arch = next(a for a, c in ARCH_MODEL_REGISTRY.items() if c is cls and a == name)
            for action in parser._actions:
                if action.type in (int, float):
                    found.setdefault(action.dest, (action.option_strings[0], ("--arch", arch), action.type))
    for name, config in sorted(CRITERION_DATACLASS_REGISTRY.items()):
        if config.__module__.startswith("fairseq_wean"):
            for f in dataclasses.fields(config):
                if f.type in (int, float):
                    found.setdefault(f.name, ("--" + f.name.replace("_", "-"),
                                              ("--arch", "core_copy", "--criterion", name), f.type))
    return found


OPTIONS = plugin_numeric_options()


def named_flag(dest):
    """The flag a refusal names: the shared-table models read fairseq lstm's --encoder/--decoder-embed-dim as
    --embed-dim (named so)."""
    flag, context, _ = OPTIONS[dest]
    return "--embed-dim" if dest in model_options.EMBED_DIM_ALIASES and "core_copy" in context else flag


def refused_at_parse(capsys, monkeypatch, argv):
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    with pytest.raises(SystemExit) as info:
        options.parse_args_and_arch(options.get_training_parser(), argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def test_the_enumeration_finds_the_options():
    assert {"encoder_hidden_size", "decoder_layers", "embed_dim", "core_topk", "core_num_frequent", "dropout",
            "mode_loss_weight", "label_smoothing", "max_target_positions"} <= set(OPTIONS), sorted(OPTIONS)
    # a new size option needs a maximum (or dropout's probability range, or the criterion's own bound)
    assert set(OPTIONS) - set(model_options.MODEL_OPTION_MAXIMA) == {"dropout", "mode_loss_weight", "label_smoothing"}


@pytest.mark.parametrize("dest", sorted(OPTIONS))
def test_a_huge_value_of_every_numeric_option_is_one_line_at_parse(dest, tmp_path, capsys, monkeypatch):
    flag, context, kind = OPTIONS[dest]
    huge = "1e300" if kind is float else str(10 ** 12)
    save = tmp_path / "save"
    line = refused_at_parse(capsys, monkeypatch, [str(tmp_path), *context, *BASE, "--save-dir", str(save),
                                                  flag, huge])
    named = named_flag(dest)
    assert line.startswith("fairseq-train: error: {} {}".format(named, float(huge) if kind is float else huge)) \
        or line.startswith("fairseq-train: error: {} must be".format(named)), line
    assert not save.exists()


@pytest.mark.parametrize("dest", sorted(model_options.MODEL_OPTION_MAXIMA))
def test_the_maximum_itself_parses_and_one_above_is_refused(dest, tmp_path, capsys, monkeypatch):
    flag, context, _ = OPTIONS[dest]
    high = model_options.MODEL_OPTION_MAXIMA[dest][0]
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    args = options.parse_args_and_arch(options.get_training_parser(), [str(tmp_path), *context, *BASE, flag, str(high)])
    assert getattr(args, dest) == high
    line = refused_at_parse(capsys, monkeypatch, [str(tmp_path), *context, *BASE, flag, str(high + 1)])
    assert line == "fairseq-train: error: {} {} is above {}, the most this model takes ({}): give a smaller " \
                   "value".format(named_flag(dest), high + 1, high, model_options.MODEL_OPTION_MAXIMA[dest][1]), line


def test_the_bounds_hold_where_a_model_is_built_from_saved_arguments():
    """A checkpoint's (or a Python caller's) arguments reach build_model without a parse: the same line."""
    args = argparse.Namespace(encoder_hidden_size=1000000, encoder_layers=1, decoder_hidden_size=16,
                              decoder_layers=1, max_source_positions=10, max_target_positions=10, embed_dim=16,
                              dropout=0.1)
    with pytest.raises(FairseqWeanError, match=r"^--encoder-hidden-size 1000000 is above 16384"):
        model_options.check_model_options(args, ("embed_dim",))


@pytest.mark.parametrize("weight,message", [("1e300", "--mode-loss-weight 1e+300 is above 10000"),
                                            ("10001", "--mode-loss-weight 10001.0 is above 10000"),
                                            ("-1", "--mode-loss-weight must be >= 0, got -1.0")])
def test_the_mode_loss_weight_is_bounded_at_parse_and_build(weight, message, tmp_path, capsys, monkeypatch):
    from fairseq_wean.criterions.core_mode_loss import CoreModeLossCriterion

    line = refused_at_parse(capsys, monkeypatch, [str(tmp_path), "--arch", "core_copy", "--criterion",
                                                  "core_mode_loss", *BASE, "--mode-loss-weight", weight])
    assert line.startswith("fairseq-train: error: " + message), line
    with pytest.raises(FairseqWeanError, match="^" + re.escape(message)):
        CoreModeLossCriterion(None, mode_loss_weight=float(weight))
    # the bound itself is accepted
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    options.parse_args_and_arch(options.get_training_parser(), [str(tmp_path), "--arch", "core_copy", "--criterion",
                                                                "core_mode_loss", *BASE, "--mode-loss-weight", "1e4"])


def test_core_topk_above_the_dictionary_is_refused_at_build(tmp_path):
    from fairseq.data import Dictionary

    from fairseq_wean.models.core_copy import CoreCopyModel

    dictionary = Dictionary()
    for word in "a b c".split():
        dictionary.add_symbol(word)
    task = argparse.Namespace(source_dictionary=dictionary, target_dictionary=dictionary)
    args = argparse.Namespace(arch="core_copy", core_topk=len(dictionary) + 1, embed_dim=8, encoder_hidden_size=8,
                              decoder_hidden_size=8)
    with pytest.raises(FairseqWeanError, match=r"^--core-topk {} is above the dictionary's {} words".format(
            len(dictionary) + 1, len(dictionary))):
        CoreCopyModel.build_model(args, task)


# ---- the files and folders fairseq-train writes -----------------------------------------------------------------

def fairseq_source(module):
    return inspect.getsource(module)


def test_the_written_names_are_fairseqs_own():
    """The names the check covers are read off fairseq's code: a name fairseq-train writes that the check
    does not know fails here."""
    import fairseq_cli.train
    from fairseq import checkpoint_utils, trainer

    literal = r"os\.path\.join\([\w.]*save_dir,\s*\"([^\"]+)\""
    in_save_dir = set(re.findall(literal, fairseq_source(trainer)) + re.findall(literal, fairseq_source(checkpoint_utils)))
    pattern = re.compile(train_files_check.CHECKPOINT_PATTERN.format(suffix="") + r"\Z")
    assert {n for n in in_save_dir if not pattern.match(n)} == set(train_files_check.SAVE_DIR_FILES), in_save_dir
    assert "\"dummy\"" in inspect.getsource(checkpoint_utils.verify_checkpoint_directory)
    assert "filename + \"{}\"".format(train_files_check.TMP_SUFFIX) in fairseq_source(checkpoint_utils)
    train = fairseq_source(fairseq_cli.train)
    tags = set(re.findall(r"tag=\"(\w+)\"", train))
    assert tags and tags == set(train_files_check.TENSORBOARD_TAGS), tags
    assert "tag=subset" in train  # validation: one folder per --valid-subset (tensorboard_folders adds them)
    from fairseq.logging import progress_bar
    assert "SummaryWriter(os.path.join(self.tensorboard_logdir, key))" in fairseq_source(progress_bar)


SAVE_DIR_NAMES = ["crash.pt", "dummy", "crash.pt.tmp", "checkpoint_last.pt.tmp", "checkpoint_best.pt.tmp",
                  "checkpoint1.pt.tmp", "checkpoint_3_200.pt.tmp", "checkpoint.best_loss_1.2500.pt.tmp",
                  "checkpoint_last-shard0.pt.tmp"]


def plant(path, how, victim):
    {"link": lambda: os.symlink(victim, path), "folder": lambda: os.mkdir(path), "fifo": lambda: os.mkfifo(path)}[how]()


@pytest.mark.parametrize("how", ["link", "folder", "fifo"])
@pytest.mark.parametrize("name", SAVE_DIR_NAMES)
def test_every_name_fairseq_train_writes_in_save_dir_is_checked(name, how, tmp_path, monkeypatch):
    save = tmp_path / "save"
    save.mkdir()
    (save / "checkpoint_last.pt").write_bytes(b"last")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    plant(str(save / name), how, str(victim))
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    with pytest.raises(FairseqWeanError) as error:
        options.parse_args_and_arch(options.get_training_parser(), [str(tmp_path), "--arch", "lstm", *BASE,
                                                                    "--save-dir", str(save)])
    assert str(error.value).startswith("--save-dir {}: {} is {}".format(save, save / name, {
        "link": "a symbolic link: refused", "folder": "a directory, not a checkpoint file; nothing was trained",
        "fifo": "not a regular file"}[how])), error.value
    assert victim.read_bytes() == b"precious" and sorted(os.listdir(save)) == sorted(["checkpoint_last.pt", name])


def test_a_dummy_file_with_content_is_refused_and_an_empty_one_kept(tmp_path, monkeypatch):
    save = tmp_path / "save"
    save.mkdir()
    (save / "dummy").write_bytes(b"my notes")
    argv = [str(tmp_path), "--arch", "lstm", *BASE, "--save-dir", str(save)]
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    with pytest.raises(FairseqWeanError, match=r"^--save-dir .*dummy is a file of 8 bytes: fairseq-train truncates"):
        options.parse_args_and_arch(options.get_training_parser(), argv)
    assert (save / "dummy").read_bytes() == b"my notes"
    (save / "dummy").write_bytes(b"")
    options.parse_args_and_arch(options.get_training_parser(), argv)


@pytest.mark.parametrize("how", ["link", "file", "fifo"])
@pytest.mark.parametrize("name", ["train", "train_inner", "valid", "valid1"])
def test_every_folder_fairseq_train_writes_under_tensorboard_logdir_is_checked(name, how, tmp_path, capsys,
                                                                               monkeypatch):
    tb = tmp_path / "tb"
    tb.mkdir()
    victim = tmp_path / "victimdir"
    victim.mkdir()
    sub = tb / name
    {"link": lambda: sub.symlink_to(victim), "file": lambda: sub.write_bytes(b"x"),
     "fifo": lambda: os.mkfifo(sub)}[how]()
    argv = [str(tmp_path), "--arch", "lstm", *BASE, "--save-dir", str(tmp_path / "save"), "--tensorboard-logdir",
            str(tb), "--valid-subset", "valid,valid1"]
    line = refused_at_parse(capsys, monkeypatch, argv)
    kind = {"link": "a symbolic link", "file": "a regular file", "fifo": "a pipe, socket or device"}[how]
    assert line == ("fairseq-train: error: --tensorboard-logdir {}: {} is {}: refused (fairseq-train writes its event "
                    "files into a folder of that name, only as itself); move it away".format(tb, sub, kind)), line
    assert os.listdir(victim) == [] and not (tmp_path / "save").exists()


def test_real_tensorboard_folders_and_unlogged_names_pass(tmp_path, monkeypatch):
    tb = tmp_path / "tb"
    for name in ("train", "train_inner", "valid"):
        (tb / name).mkdir(parents=True)
    (tb / "test").symlink_to(tmp_path)  # not a subset fairseq-train logs: left alone
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    options.parse_args_and_arch(options.get_training_parser(), [str(tmp_path), "--arch", "lstm", *BASE,
                                                                "--tensorboard-logdir", str(tb)])
    # with --disable-validation no validation folder is written
    (tb / "valid").rmdir()
    (tb / "valid").write_bytes(b"x")
    options.parse_args_and_arch(options.get_training_parser(), [str(tmp_path), "--arch", "lstm", *BASE,
                                                                "--tensorboard-logdir", str(tb), "--disable-validation"])


# ---- --overwrite-best-checkpoint --------------------------------------------------------------------------------

@pytest.mark.parametrize("held", [[], ["checkpoint_last.pt"], ["checkpoint_best.pt", "checkpoint_last.pt"]])
def test_overwrite_best_checkpoint_without_a_lone_best_does_nothing_and_is_refused(held, tmp_path, capsys,
                                                                                   monkeypatch):
    save = tmp_path / "save"
    save.mkdir()
    for name in held:
        (save / name).write_bytes(b"x")
    argv = [str(tmp_path), "--arch", "lstm", "--task", "translation_with_metrics", *BASE, "--save-dir", str(save)]
    line = refused_at_parse(capsys, monkeypatch, argv + ["--overwrite-best-checkpoint"])
    assert line.startswith("fairseq-train: error: --overwrite-best-checkpoint does nothing here: it lets a run start "
                           "in a --save-dir that holds checkpoint_best.pt but no checkpoint_last.pt"), line
    assert sorted(os.listdir(save)) == sorted(held)


def test_overwrite_best_checkpoint_where_it_acts_parses(tmp_path, monkeypatch):
    save = tmp_path / "save"
    save.mkdir()
    (save / "checkpoint_best.pt").write_bytes(b"x")
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(tmp_path), "--arch", "lstm", "--task", "translation_with_metrics", *BASE, "--save-dir", str(save),
        "--overwrite-best-checkpoint"])
    assert args.overwrite_best_checkpoint
