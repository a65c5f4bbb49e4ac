"""fairseq's own code paths keep working with the plugin imported (issue 40).

``scripts/fairseq_tests_with_plugin.py`` runs a subset of fairseq's own test suite with and without
the plugin; each test it found broken by the plugin has its regression test here.
"""
import contextlib
from unittest import mock

import fairseq_wean  # noqa: F401  (the patches)


def test_load_checkpoint_with_fairseqs_mock_trainer():
    """fairseq's tests/test_train.py::TestLoadCheckpoint (6 tests) call checkpoint_utils.load_checkpoint
    with a MagicMock trainer, a config whose save_dir is None, and os.path functions mocked: the
    plugin's start-of-training checks took the mock's task for the plugin's (a mock has every
    attribute), called its check_training_options and failed on save_dir None. They now apply to
    --task translation_with_metrics alone. The setting is that test's."""
    from fairseq import checkpoint_utils
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"save_dir": None, "optimizer_overrides": "{}", "reset_dataloader": False,
                            "reset_meters": False, "reset_optimizer": False, "reset_lr_scheduler": False,
                            "finetune_from_model": None, "model_parallel_size": 1,
                            "restore_file": "checkpoint_last.pt"})
    patches = {"os.makedirs": mock.MagicMock(), "os.path.join": mock.MagicMock(),
               "os.path.isfile": mock.MagicMock(return_value=True), "os.path.isabs": mock.MagicMock(return_value=False),
               "fairseq.file_io.PathManager.exists": mock.MagicMock(return_value=False)}
    trainer = mock.MagicMock()
    trainer.load_checkpoint.return_value = None  # no checkpoint: fairseq starts epoch 1
    with contextlib.ExitStack() as stack:
        for target, value in patches.items():
            stack.enter_context(mock.patch(target, value))
        checkpoint_utils.load_checkpoint(cfg, trainer)
    trainer.task.check_training_options.assert_not_called()
    trainer.load_checkpoint.assert_called_once()
    trainer.get_train_iterator.assert_called_once()
