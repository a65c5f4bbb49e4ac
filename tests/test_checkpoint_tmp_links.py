"""Every file fairseq-train writes in place in --save-dir (each ``NAME.tmp`` it writes a checkpoint to before the
rename, the ``dummy`` probe; with --write-checkpoints-asynchronously the checkpoints and crash.pt themselves) is
refused at parse, before any work, as a hard link or a symbolic link of any kind (train_files_check.save_dir_problem
with textio.in_place_problem): a ``checkpoint1.pt.tmp`` hard-linked to a file outside the folder got the checkpoint
written into that file, exit 0. A leftover regular ``NAME.tmp`` (a killed run's) is kept, as fairseq keeps it.
In-process parses (``options.parse_args_and_arch``), no training."""
import os
import sys

import pytest

import fairseq_wean  # noqa: F401  (applies the plugin's patches)
from fairseq import options
from fairseq_wean import train_files_check
from fairseq_wean.errors import FairseqWeanError

# every checkpoint name fairseq-train writes ({s}: --checkpoint-suffix): epoch, update, best, last, the
# --keep-best-checkpoints names, the shards; and crash.pt (trainer.py, on a failed step)
CHECKPOINTS = ["checkpoint1{s}.pt", "checkpoint_1_100{s}.pt", "checkpoint_best{s}.pt", "checkpoint_last{s}.pt",
               "checkpoint.best_loss_0.1000{s}.pt", "checkpoint.best_bleu_-1.50{s}.pt", "checkpoint1{s}-shard0.pt",
               "checkpoint_last{s}-shard1.pt", train_files_check.SAVE_DIR_FILES[0]]
IN_PLACE = [name + train_files_check.TMP_SUFFIX for name in CHECKPOINTS] + [train_files_check.SAVE_DIR_FILES[1]]
LINKS = {"hard link": "has 2 hard links (a file with other names", "link": "is a symbolic link: refused",
         "dangling link": "is a symbolic link: refused", "link to a folder": "is a symbolic link: refused"}


def parse(tmp_path, save, suffix, *extra):
    return options.parse_args_and_arch(options.get_training_parser(), [
        str(tmp_path), "--arch", "lstm", "--optimizer", "adam", "--max-tokens", "100", "--save-dir", str(save),
        *(["--checkpoint-suffix", suffix] if suffix else []), *extra])


def planted_save_dir(tmp_path, name, link, suffix):
    save = tmp_path / "save"
    save.mkdir()
    if not name.startswith("checkpoint_last"):
        (save / "checkpoint_last{}.pt".format(suffix)).write_bytes(b"last")
    victim, folder = tmp_path / "victim", tmp_path / "victimdir"
    victim.write_bytes(b"")  # empty: the dummy probe's rule for a file with content is not what is tried here
    folder.mkdir()
    planted = save / name.format(s=suffix)
    {"hard link": lambda: os.link(victim, planted), "link": lambda: planted.symlink_to(victim),
     "dangling link": lambda: planted.symlink_to(tmp_path / "none"),
     "link to a folder": lambda: planted.symlink_to(folder)}[link]()
    return save, planted, victim


def refused(tmp_path, save, planted, victim, link, suffix, *extra):
    before = sorted(os.listdir(save))
    with pytest.raises(FairseqWeanError) as error:
        parse(tmp_path, save, suffix, *extra)
    message = str(error.value)
    assert message.startswith("--save-dir {}: {} {}".format(save, planted, LINKS[link])), message
    assert "\n" not in message and "nothing was trained" in message
    assert victim.read_bytes() == b"" and sorted(os.listdir(save)) == before and not (tmp_path / "none").exists()
    assert os.listdir(tmp_path / "victimdir") == []


@pytest.mark.parametrize("link,suffix", [(link, "") for link in sorted(LINKS)] + [("hard link", "_a")])
@pytest.mark.parametrize("name", IN_PLACE)
def test_every_name_written_in_place_is_refused_as_a_link(tmp_path, monkeypatch, name, link, suffix):
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    save, planted, victim = planted_save_dir(tmp_path, name, link, suffix)
    refused(tmp_path, save, planted, victim, link, suffix)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_asynchronous_writes_refuse_a_hard_linked_checkpoint(tmp_path, monkeypatch, name):
    """--write-checkpoints-asynchronously writes each checkpoint in place (no NAME.tmp, no rename)."""
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    save, planted, victim = planted_save_dir(tmp_path, name, "hard link", "")
    parse(tmp_path, save, "")  # renamed over, not written into: the other name's file is kept
    refused(tmp_path, save, planted, victim, "hard link", "", "--write-checkpoints-asynchronously")


@pytest.mark.parametrize("name", [n for n in IN_PLACE if n != "dummy"])
def test_a_leftover_regular_tmp_file_is_kept(tmp_path, monkeypatch, name):
    monkeypatch.setattr(sys, "argv", ["fairseq-train"])
    save = tmp_path / "save"
    save.mkdir()
    (save / "checkpoint_last.pt").write_bytes(b"last")
    (save / name.format(s="")).write_bytes(b"a killed run's partial write")
    parse(tmp_path, save, "")
