"""Sharded translation data (compat fix 20, docs/fairseq-patches.md): fairseq's TranslationConfig
defaults ``--upsample-primary`` to -1 and ``load_langpair_dataset`` tiles the primary shard that many
times whenever it combines shards, a ``ValueError: negative dimensions`` traceback after the model was
built. The class: every way shards are combined (training shards ``train``/``train1``, ``--combine-valid-subsets``), the default loading each
shard once and explicit values passed on (every task module that binds ``load_langpair_dataset`` gets the fix:
tests/test_patch_bindings.py)."""
import shutil
import sys

import pytest

from conftest import USER_DIR, cli, train_args

def sharded(data_bin, tmp_path, split="train"):
    """A copy of ``data_bin`` whose ``split`` has a second shard ``split1`` (the valid split's files)."""
    data = tmp_path / "sharded"
    shutil.copytree(data_bin, data)
    for lang in ("src", "tgt"):
        for ext in ("bin", "idx"):
            shutil.copy(data / "valid.src-tgt.{}.{}".format(lang, ext), data / "{}1.src-tgt.{}.{}".format(split, lang, ext))
    return data


def load(data, task, split, *extra):
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data), "--user-dir", USER_DIR, "--task", task, "--arch", "lstm", "--cpu", "--max-tokens", "2000",
        "--ignore-unused-valid-subsets", *extra])
    cfg = convert_namespace_to_omegaconf(args)
    loaded = tasks.setup_task(cfg.task)
    loaded.load_dataset(split, combine=True)
    return len(loaded.datasets[split])


@pytest.mark.parametrize("task", ["translation", "translation_with_metrics"])
@pytest.mark.parametrize("split", ["train", "valid"])
def test_sharded_splits_load_every_shard_once_and_explicit_upsampling_is_kept(data_bin, tmp_path, task, split):
    data = sharded(data_bin, tmp_path, split)
    n_valid = 21  # the valid split's sentences (conftest.raw_dir), copied as the second shard
    n_primary = {"train": 400, "valid": 21}[split]
    assert load(data, task, split) == n_primary + n_valid
    assert load(data, task, split, "--upsample-primary", "1") == n_primary + n_valid
    assert load(data, task, split, "--upsample-primary", "3") == 3 * n_primary + n_valid


def test_fairseq_train_on_sharded_data_with_combined_valid_subsets(data_bin, tmp_path):
    data = sharded(sharded(data_bin, tmp_path / "a", "train"), tmp_path / "b", "valid")
    out = cli("fairseq-train", *train_args(data, tmp_path / "ck", "lstm", "--encoder-embed-dim", "8",
                                           "--decoder-embed-dim", "8", "--encoder-hidden-size", "8",
                                           "--decoder-hidden-size", "8", "--decoder-out-embed-dim", "8",
                                           "--combine-valid-subsets",
                                           epochs=1))
    log = out.stdout + out.stderr
    for shard in ("train", "train1", "valid", "valid1"):
        assert "{} src-tgt {} examples".format(shard, 400 if shard == "train" else 21) in log, log[-2000:]
    assert (tmp_path / "ck" / "checkpoint_last.pt").is_file()


def test_upsample_primary_below_one_other_than_the_default_is_refused(data_bin, tmp_path):
    out = cli("fairseq-train", *train_args(data_bin, tmp_path / "ck", "lstm", "--upsample-primary", "0"),
              check=False)
    assert out.returncode != 0 and "--upsample-primary" in out.stderr.strip().splitlines()[-1], out.stderr[-800:]
    assert not (tmp_path / "ck").exists()
