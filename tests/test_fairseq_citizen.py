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


# Each patch is applied only where the bug is (issue 40): it checks fairseq's behaviour or code first.
PATCHES = ["compat 1 (last batch kept)", "compat 2 / checkpoint_safety", "compat 3 (over-long sentences)",
           "compat 4 / distributed (CPU, gloo)", "compat 5 (checks before training)",
           "compat 6 (unusable binarized data)", "compat 7 (\\r inside a raw line)",
           "compat 8 (interactive non-UTF-8 input)", "compat 9 (--diverse-beam-groups)",
           "compat 10 (--no-repeat-ngram-size on CPU)", "compat 11 (never <s>)",
           "compat 12 (--patience across a restart)", "compat 13 (resumed run, same batches)",
           "compat 14 (--help with --arch)", "compat 15 (transformer fast path)",
           "compat 16 (dictionary files)", "compat 17 (--results-path file)",
           "compat 18 (--min-len above the maximum length)", "option ranges (fairseq's parsers)",
           "compat 19 (eval-lm --post-process subword_nmt)", "compat 20 (--upsample-primary's default -1)",
                                                             "compat 21 (numpy removals)",
           "report/gate_lines (--print-gates)",
           "unk_replacement (--replace-unk)", "hub (the Python API)"]


def test_every_patch_says_in_one_line_whether_it_applies():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "fairseq_wean.cli.patches"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("fairseq ") and ", torch " in lines[0]
    listed = {}
    for line in lines[1:]:
        name, state, why = [part.strip() for part in line.split("  ") if part.strip()][:3]
        listed[name] = (state, why)
    assert sorted(listed) == sorted(PATCHES)
    assert all(state in ("applied", "not applied") and why for state, why in listed.values())
    # outside fairseq-preprocess/-interactive, and without --print-gates, those three are not on
    for name in PATCHES[6:8] + ["report/gate_lines (--print-gates)"]:
        assert listed[name][0] == "not applied"


def test_the_last_batch_fix_is_applied_where_fairseq_drops_the_batch():
    import numpy as np
    from fairseq.data import data_utils

    from fairseq_wean import compat, patching

    original = compat._original_batch_by_size
    drops = sum(map(len, original(np.arange(9, dtype=np.int64), lambda i: 1, max_tokens=None, max_sentences=8,
                                  required_batch_size_multiple=8))) < 9
    applied, _ = patching.status()["compat 1 (last batch kept)"]
    assert applied == drops
    assert (data_utils.batch_by_size is compat.batch_by_size_keeping_last) == drops
    # a fairseq that keeps the batch (0.12.2's behaviour) is left alone, and said so
    keeping = lambda indices, *a, **k: [indices[:8], indices[8:]]  # noqa: E731
    with mock.patch.object(compat, "_original_batch_by_size", keeping):
        has_bug, why = compat._drops_the_last_batch()
    assert not has_bug and "keeps the last" in why


def test_a_check_runs_once_and_its_answer_is_kept():
    from fairseq_wean import patching

    calls = []

    def check():
        calls.append(1)
        return False, "not   this\nfairseq"

    name = "test patch (a check that runs once)"
    try:
        assert patching.found(name, check) is False and patching.found(name, check) is False
        assert calls == [1] and patching.status()[name] == (False, "not this fairseq")
    finally:
        patching._STATUS.pop(name, None)


def test_diverse_beam_search_and_ngram_fixes_follow_their_checks():
    import torch
    from fairseq.data import Dictionary
    from fairseq.ngram_repeat_block import NGramRepeatBlock
    from fairseq.search import DiverseBeamSearch

    from fairseq_wean import patching

    status = patching.status()
    search = DiverseBeamSearch(Dictionary(), num_groups=2, diversity_strength=0.5)
    if status["compat 9 (--diverse-beam-groups)"][0]:  # fairseq-fixed: both bugs, both fixes on
        assert search.candidate_multiple == 2 and "_fairseq_step" in vars(DiverseBeamSearch)
    else:  # 0.12.2: its own search, untouched
        assert not hasattr(search, "_fairseq_wean_batch_ids") and "_fairseq_step" not in vars(DiverseBeamSearch)
    block, pad = NGramRepeatBlock(2, use_extension=False), 1
    buffer = torch.tensor([[2, 5, 6, 5, pad, pad, pad]])
    assert block._no_repeat_ngram(buffer, torch.zeros(1, 8), 1, 1, 3)[0, 6] == float("-inf")  # fixed either way


def test_transformer_encoder_layers_take_the_standard_path_where_the_fast_path_is_broken():
    """fairseq 0.12.2's encoder layer calls torch._transformer_encoder_layer_fwd without mask_type
    (torch >= 1.13: "Mask Type should be defined" in every fairseq-generate of a transformer); the
    plugin turns that path off there, and leaves fairseq-fixed's layer (no such path) alone."""
    import inspect

    from fairseq.models.transformer import TransformerConfig
    from fairseq.modules import transformer_layer

    from fairseq_wean import patching

    code = inspect.getsource(transformer_layer.TransformerEncoderLayerBase.forward)
    broken = "_transformer_encoder_layer_fwd(" in code and "mask_type" not in code
    assert patching.status()["compat 15 (transformer fast path)"][0] == broken
    layer = transformer_layer.TransformerEncoderLayerBase(TransformerConfig())
    assert getattr(layer, "can_use_fastpath", False) is False  # read by the layer and the encoder
