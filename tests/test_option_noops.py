"""Options that do nothing are refused, and every option fairseq evaluates as Python text is checked at parse.

* ``patching.OPTION_NEEDS``: option -> the condition under which it acts (per command; the hub's keywords are
  command "hub"). Given (not at its default) where the condition is false, one line at parse, before any work.
  Every option of the plugin's models and criterion and of fairseq's generation options is either a row or
  listed here as always acting (with why): a new option must choose. Each row is tried both ways.
* ``patching.LITERAL_OPTIONS``: every option whose text fairseq (or the plugin) evaluates with
  ``ast.literal_eval`` / ``eval`` / ``json.loads``, found by reading the code, is checked at parse.
* fairseq's search options against each other (``--diverse-beam-groups`` dividing ``--beam``, the signs of
  ``--diversity-rate`` and ``--diverse-beam-strength``), on the command line and as hub keywords.
"""
import argparse
import dataclasses
import glob
import os
import re
import sys

import pytest
from conftest import undecided

# options that act whenever given, with why (the rest have a row in patching.OPTION_NEEDS: the search's options
# have --score-reference's, option_rules.SCORE_REFERENCE_INERT, tried in tests/test_inert_options.py; the models' and
# the criterion's act in fairseq-train, and inference commands refuse them: option_rules.training_option_problem)
ALWAYS = {
    # fairseq's generation options
    "eos_token": "refused where only a speech task's data read it (option_rules.INFERENCE_INERT)", "model_overrides": "the model's options", "no_seed_provided": "the seed",
    "path": "the checkpoint", "print_alignment": "prints alignments", "quiet": "the output",
    "replace_unk": "the output's unknown words", "retain_dropout": "dropout at inference",
    "sacrebleu": "refused in every command (option_rules.INFERENCE_INERT: fairseq reads it to silence a warning)",
    # the plugin's generation options
    "print_gates": "the condition is the checkpoint's model (a gate): refused before the first batch is decoded "
                   "(report/gate_lines.check_model_has_gate, tests/test_report.py)",
    "replace_unk_source": "the output's unknown words",
    # the plugin's models: sizes and choices every model of that name reads (modules/model_options.py checks them)
    "attention_score": "every model", "core_align_table": "core_copy", "core_attend_previous_state": "core_copy",
    "core_input_feeding": "core_copy (refused at build without --core-attend-previous-state)",
    "core_num_frequent": "core_copy", "core_psi": "core_copy", "core_topk": "core_copy",
    "decoder_embed_dim": "sizes", "decoder_hidden_size": "sizes", "decoder_layers": "sizes",
    "decoder_out_embed_dim": "sizes", "dropout": "training", "embed_dim": "sizes", "encoder_bidirectional": "sizes",
    "encoder_embed_dim": "sizes", "encoder_hidden_size": "sizes", "encoder_layers": "sizes",
    "max_source_positions": "lengths", "max_target_positions": "lengths",
    "share_decoder_input_output_embed": "the output projection", "wean_candidates": "wean_lstm",
    "wean_score": "wean_lstm", "rnn_cell": "word_attn_gated", "word_attention": "word_attn_gated",
    "word_attn_initial_state": "word_attn_gated", "word_attn_readout": "word_attn_gated",
    # the plugin's criterion
    "mode_loss_weight": "core_mode_loss", "label_smoothing": "the loss", "sentence_avg": "the loss",
}


def plugin_and_generation_options():
    import fairseq_wean  # noqa: F401
    from fairseq import options
    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
    from fairseq.models import MODEL_REGISTRY

    from fairseq_wean import patching

    parser = options.get_generation_parser()
    names = {a.dest for g in parser._action_groups if g.title == "Generation" for a in g._group_actions}
    names |= {flags[0].lstrip("-").replace("-", "_") for flags, _ in patching.generation_arguments()}
    for cls in MODEL_REGISTRY.values():
        if cls.__module__.startswith("fairseq_wean"):
            models = argparse.ArgumentParser()
            cls.add_args(models)
            names |= {a.dest for a in models._actions if a.dest != "help"}
    for config in CRITERION_DATACLASS_REGISTRY.values():
        if config.__module__.startswith("fairseq_wean"):
            names |= {f.name for f in dataclasses.fields(config) if f.name != "_name"}
    return names


def test_every_option_acts_always_or_has_a_condition():
    from fairseq_wean.patching import OPTION_NEEDS

    names = plugin_and_generation_options()
    assert {"beam", "print_gates", "core_frequent_from", "sampling_topk", "mode_loss_weight"} <= names
    missing = undecided(names, ALWAYS, OPTION_NEEDS)
    assert not missing, "options with neither a row in patching.OPTION_NEEDS nor a reason in ALWAYS: {}".format(missing)
    # no stale reason; fairseq-fixed's translation_multi_simple_epoch fields (*_mt) are not in fairseq 0.12.2
    stale = {n for n in set(ALWAYS) - names if not n.endswith("_mt")}
    assert not stale, stale


# each row of OPTION_NEEDS: (command, argv where it does nothing, message, argv where it acts)
ROWS = {
    "diverse_beam_strength": ("fairseq-generate", ["--diverse-beam-strength", "0.2"], "--diverse-beam-strength does "
                              "nothing here", ["--diverse-beam-strength", "0.2", "--diverse-beam-groups", "5"]),
    "sampling_topk": ("fairseq-generate", ["--sampling-topk", "3"], "--sampling-topk does nothing here",
                      ["--sampling-topk", "3", "--sampling", "--nbest", "5"]),
    "sampling_topp": ("fairseq-interactive", ["--sampling-topp", "0.5"], "--sampling-topp does nothing here",
                      ["--sampling-topp", "0.5", "--sampling", "--nbest", "5"]),
    "lm_weight": ("fairseq-generate", ["--lm-weight", "0.5"], "--lm-weight does nothing here",
                  ["--lm-weight", "0.5", "--lm-path", "lm.pt"]),
    "retain_dropout_modules": ("fairseq-generate", ["--retain-dropout-modules", "A"],
                               "--retain-dropout-modules does nothing here",
                               ["--retain-dropout-modules", "A", "--retain-dropout"]),
    "gen_subset": ("fairseq-interactive", ["--gen-subset", "valid"], "--gen-subset does nothing here",
                   None),
    # act in fairseq-generate and -interactive (the output's text, where it goes); fairseq-eval-lm's: test_eval_lm.py
    "results_path": ("fairseq-validate", ["--results-path", "r"], "--results-path does nothing here", None),
    "post_process": ("fairseq-validate", ["--post-process", "letter"], "--post-process does nothing here",
                     ["--post-process", "letter", "--criterion", "ctc"]),
    # the length options under --match-source-len, the length penalty of unnormalized scores, the search's
    # options under --score-reference (fairseq's SequenceScorer decodes nothing)
    "max_len_a": ("fairseq-generate", ["--match-source-len", "--max-len-a", "2"], "--max-len-a does nothing here",
                  ["--max-len-a", "2"]),
    "max_len_b": ("fairseq-interactive", ["--match-source-len", "--max-len-b", "3"], "--max-len-b does nothing here",
                  ["--max-len-b", "3"]),
    "lenpen": ("fairseq-generate", ["--unnormalized", "--lenpen", "2"], "--lenpen does nothing here", ["--lenpen", "2"]),
    "match_source_len": ("fairseq-generate", ["--score-reference", "--match-source-len"],
                         "--match-source-len does nothing here", ["--match-source-len"]),
    "unnormalized": ("fairseq-generate", ["--score-reference", "--unnormalized"], "--unnormalized does nothing here",
                     ["--unnormalized"]),
    # iterative refinement's options on a task that decodes without it (--print-step: KeyError 'steps')
    **{dest: ("fairseq-generate", argv, "--{} does nothing here".format(dest.replace("_", "-")),
              ["--task", "translation_lev"] + argv) for dest, argv in (
        ("iter_decode_eos_penalty", ["--iter-decode-eos-penalty", "0.5"]),
        ("iter_decode_max_iter", ["--iter-decode-max-iter", "5"]),
        ("iter_decode_force_max_iter", ["--iter-decode-force-max-iter"]),
        ("iter_decode_with_beam", ["--iter-decode-with-beam", "2"]),
        ("iter_decode_with_external_reranker", ["--iter-decode-with-external-reranker"]),
        ("print_step", ["--print-step"]), ("retain_iter_history", ["--retain-iter-history"]))},
    # fairseq-generate's data has no constraints (a TypeError after loading); fairseq-interactive reads them
    "constraints": ("fairseq-generate", ["--constraints"], "--constraints does nothing here", None),
    "core_frequent_from": ("fairseq-train", ["--arch", "core_copy", "--core-num-frequent", "0",
                                             "--core-frequent-from", "target"], "--core-frequent-from does nothing",
                           ["--arch", "core_copy", "--core-num-frequent", "5", "--core-frequent-from", "target"]),
    # precision: fairseq-train's --amp on the CPU (float32), the inference commands' bfloat16/AMP (they read --fp16)
    "amp": ("fairseq-train", ["--amp"], "--amp does nothing here", ["--amp"]),
    "bf16": ("fairseq-generate", ["--bf16"], "--bf16 does nothing here", None),
    "memory_efficient_bf16": ("fairseq-validate", ["--memory-efficient-bf16"],
                              "--memory-efficient-bf16 does nothing here", None),
    **{dest: ("fairseq-train", argv, "--{} does nothing here".format(dest.replace("_", "-")), ["--fp16"] + argv)
       for dest, argv in (("fp16_no_flatten_grads", ["--fp16-no-flatten-grads"]),
                          ("fp16_init_scale", ["--fp16-init-scale", "64"]),
                          ("fp16_scale_window", ["--fp16-scale-window", "100"]),
                          ("fp16_scale_tolerance", ["--fp16-scale-tolerance", "0.1"]),
                          ("min_loss_scale", ["--min-loss-scale", "0.001"]),
                          ("threshold_loss_scale", ["--threshold-loss-scale", "4"]))},
    **{dest: ("fairseq-train", argv, "--{} does nothing here".format(dest.replace("_", "-")), ["--amp"] + argv)
       for dest, argv in (("amp_batch_retries", ["--amp-batch-retries", "3"]),
                          ("amp_init_scale", ["--amp-init-scale", "64"]),
                          ("amp_scale_window", ["--amp-scale-window", "100"]))},
    # checkpoints: the keep-* options without the files they keep, and what --no-save turns off
    "keep_interval_updates": ("fairseq-train", ["--keep-interval-updates", "2"],
                              "--keep-interval-updates does nothing here",
                              ["--keep-interval-updates", "2", "--save-interval-updates", "10"]),
    "keep_interval_updates_pattern": ("fairseq-train", ["--keep-interval-updates-pattern", "5"],
                                      "--keep-interval-updates-pattern does nothing here",
                                      ["--keep-interval-updates-pattern", "5", "--keep-interval-updates", "2",
                                       "--save-interval-updates", "10"]),
    "keep_last_epochs": ("fairseq-train", ["--no-epoch-checkpoints", "--keep-last-epochs", "2"],
                         "--keep-last-epochs does nothing here", ["--keep-last-epochs", "2"]),
    **{dest: ("fairseq-train", ["--no-save"] + argv, "--{} does nothing here".format(dest.replace("_", "-")), argv)
       for dest, argv in (("keep_best_checkpoints", ["--keep-best-checkpoints", "2"]),
                          ("save_interval", ["--save-interval", "2"]),
                          ("no_epoch_checkpoints", ["--no-epoch-checkpoints"]),
                          ("no_last_checkpoints", ["--no-last-checkpoints"]))},
    # what a restored checkpoint holds, where nothing is restored (acting: --restore-file of a checkpoint, planted)
    **{dest: ("fairseq-train", [flag], flag + " does nothing here", [flag, "--restore-file", "{tmp}/ck.pt"])
       for dest, flag in (("reset_optimizer", "--reset-optimizer"), ("reset_lr_scheduler", "--reset-lr-scheduler"),
                          ("reset_meters", "--reset-meters"), ("reset_dataloader", "--reset-dataloader"))},
    "nprocs_per_node": ("fairseq-train", ["--cpu", "--nprocs-per-node", "2"], "--nprocs-per-node does nothing here",
                        None),
    "score_reference": ("fairseq-interactive", ["--score-reference"], "--score-reference does nothing here", None),
    # --combine-valid-subsets / --ignore-unused-valid-subsets in the inference commands: option_rules.SUBSET_OPTIONS,
    # not a row here (tried over every task and command in tests/test_inference_subsets.py)
    # acts only in a --save-dir with checkpoint_best.pt and no checkpoint_last.pt: tests/test_training_bounds.py
    # a share of the tokens --mask masks (denoising tasks); the primary shard's weight against SPLIT1, SPLIT2, ...
    "mask_random": ("fairseq-train", ["--task", "denoising", "--mask-random", "0.5"],
                    "--mask-random does nothing here",
                    ["--task", "denoising", "--mask", "0.3", "--mask-random", "0.5"]),
    "upsample_primary": ("fairseq-train", ["--upsample-primary", "5"], "--upsample-primary does nothing here",
                         ["--upsample-primary", "5", "--dataset-impl", "raw", "-s", "en", "-t", "de"]),
    # BMUF on one process (acting: a rank of a launcher that sets WORLD_SIZE, as torchrun's)
    "use_bmuf": ("fairseq-train", ["--use-bmuf"], "--use-bmuf does nothing here", ["--use-bmuf"]),
    "overwrite_best_checkpoint": ("fairseq-train", ["--task", "translation_with_metrics", "--overwrite-best-checkpoint"],
                                  "--overwrite-best-checkpoint does nothing here", None),
}

PARSERS = {"fairseq-train": ("get_training_parser", ["--optimizer", "adam", "--max-tokens", "100"]),
           "fairseq-generate": ("get_generation_parser", ["--path", "x.pt"]),
           "fairseq-interactive": ("get_interactive_generation_parser", ["--path", "x.pt"]),
           "fairseq-validate": ("get_validation_parser", ["--path", "x.pt", "--task", "translation", "--max-tokens", "100"])}


def parse(command, argv, tmp_path, monkeypatch):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    build, base = PARSERS[command]
    if command == "fairseq-train" and "--arch" not in argv:
        base = base + ["--arch", "lstm"]
    monkeypatch.setattr(sys, "argv", [command] + argv)
    return options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + base + argv)


def refused(command, argv, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as info:
        parse(command, argv, tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def test_every_row_is_tried():
    from fairseq_wean.patching import OPTION_NEEDS

    # the task's rows (fairseq_wean/tasks) are tried by the task's tests
    from fairseq_wean.option_rules import SCORE_REFERENCE_INERT
    from fairseq_wean.tasks.validation_options import validation_only_task_options

    # --score-reference's rows and the tasks' validation options: tried by tests/test_inert_options.py
    elsewhere = set(SCORE_REFERENCE_INERT) | set(validation_only_task_options())
    ours = {dest for dest, (condition, _, _) in OPTION_NEEDS.items()
            if not condition.__module__.startswith("fairseq_wean.tasks")}
    assert set(ROWS) - elsewhere == ours - elsewhere, (set(ROWS) ^ ours) - elsewhere


# rows whose acting form needs a CUDA device (fairseq-train's half precision): tried with torch told it has one
ACT_WITH_CUDA = {"amp", "amp_batch_retries", "amp_init_scale", "amp_scale_window", "fp16_no_flatten_grads",
                 "fp16_init_scale", "fp16_scale_window", "fp16_scale_tolerance", "min_loss_scale",
                 "threshold_loss_scale"}


@pytest.mark.parametrize("dest", sorted(ROWS))
def test_an_option_that_does_nothing_is_refused_and_acts_where_it_does(dest, tmp_path, monkeypatch, capsys):
    import torch

    command, argv, message, acting = ROWS[dest]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    line = refused(command, argv, tmp_path, monkeypatch, capsys)
    assert line.startswith(command + ": error: " + message), line
    if acting is not None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: dest in ACT_WITH_CUDA)
        if "{tmp}/ck.pt" in acting:  # a checkpoint to restore
            torch.save({"model": {}, "args": None, "cfg": None}, str(tmp_path / "ck.pt"))
        if dest == "use_bmuf":
            monkeypatch.setenv("WORLD_SIZE", "2")
        if dest == "upsample_primary":  # a training subset with a second shard
            for name in ("train", "train1", "valid"):
                for side in ("en", "de"):
                    (tmp_path / "{}.en-de.{}".format(name, side)).write_text("a b\n")
        parse(command, [a.replace("{tmp}", str(tmp_path)) for a in acting], tmp_path, monkeypatch)


def common_and_checkpoint_fields():
    """fairseq-train's precision options (CommonConfig) and every checkpoint option (CheckpointConfig)."""
    from fairseq.dataclass.configs import CheckpointConfig, CommonConfig

    precision = {f.name for f in dataclasses.fields(CommonConfig)
                 if any(k in f.name for k in ("fp16", "bf16", "amp", "loss_scale", "precision"))}
    return precision | {f.name for f in dataclasses.fields(CheckpointConfig) if f.name != "_name"}


# precision and checkpoint options that act whenever given, with why
TRAIN_ALWAYS = {
    "fp16": "refused on the CPU (option_rules.precision_problem), half precision on CUDA and in inference",
    "memory_efficient_fp16": "sets --fp16", "on_cpu_convert_precision": "TPU/FSDP conversion (refused with --fp16 "
    "on the CPU before it could matter)",
    "save_dir": "where", "restore_file": "what is restored", "continue_once": "the plugin's resume rule",
    "finetune_from_model": "what is restored", "optimizer_overrides": "restore",
    "save_interval_updates": "also validates every N updates (fairseq's validate_and_save), with --no-save too",
    "no_save": "saves nothing", "no_save_optimizer_state": "what is saved", "checkpoint_suffix": "also the "
    "name restored", "checkpoint_shard_count": "loading", "load_checkpoint_on_all_dp_ranks": "loading",
    "write_checkpoints_asynchronously": "how", "model_parallel_size": "fairseq's", "use_ema_weights_to_init_param":
    "fairseq's EMA", "use_latest_weights_to_init_ema": "fairseq's EMA"
}


def test_every_precision_and_checkpoint_option_acts_always_or_has_a_condition():
    from fairseq_wean.patching import OPTION_NEEDS

    names = common_and_checkpoint_fields()
    assert {"amp", "bf16", "keep_last_epochs", "no_save"} <= names
    missing = undecided(names, TRAIN_ALWAYS, OPTION_NEEDS)
    assert not missing, "options with neither a row nor a reason in TRAIN_ALWAYS: {}".format(missing)


@pytest.mark.parametrize("argv,named,needs", [
    (["--fp16"], "--fp16", "needs a CUDA GPU"), (["--memory-efficient-fp16"], "--memory-efficient-fp16", "needs a CUDA"),
    (["--bf16"], "--bf16", "is fairseq's bfloat16 training on a TPU"),
    (["--memory-efficient-bf16"], "--memory-efficient-bf16", "is fairseq's bfloat16 training on a TPU")])
def test_half_precision_training_where_it_cannot_run_is_one_line_at_parse(argv, named, needs, tmp_path, monkeypatch,
                                                                           capsys):
    """fairseq-train --fp16 on the CPU asserted CUDA, --bf16 (which sets --tpu) asked for a TPU device, both after
    the model was built; --fp16 with CUDA and inference's --fp16 (model.half()) are taken."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    line = refused("fairseq-train", argv, tmp_path, monkeypatch, capsys)
    assert line.startswith("fairseq-train: error: {} {}".format(named, needs)) and "--cpu-bf16" in line, line
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    if "fp16" in named:
        parse("fairseq-train", argv, tmp_path, monkeypatch)
    else:  # fairseq's --bf16 is the TPU's, CUDA or not
        assert refused("fairseq-train", argv, tmp_path, monkeypatch, capsys).startswith("fairseq-train: error: " + named)
    parse("fairseq-generate", ["--fp16"], tmp_path, monkeypatch)


def test_reset_options_with_finetune_from_model_are_one_line_at_parse(tmp_path, monkeypatch, capsys):
    """fairseq resets everything itself for --finetune-from-model and raised a ValueError for the two together
    after the model was built; the restore a reset acts on exists here, so only finetune makes it do nothing."""
    import torch

    torch.save({"model": {}}, str(tmp_path / "pre.pt"))
    torch.save({"model": {}}, str(tmp_path / "ck.pt"))
    line = refused("fairseq-train", ["--finetune-from-model", str(tmp_path / "pre.pt"), "--restore-file",
                                     str(tmp_path / "ck.pt"), "--reset-meters"], tmp_path, monkeypatch, capsys)
    assert line.startswith("fairseq-train: error: --reset-meters does nothing here") and "--finetune-from-model" in line


@pytest.mark.parametrize("command,argv", [
    ("fairseq-train", ["--save-dir", "s_${x}"]), ("fairseq-train", ["--tensorboard-logdir", "tb_${oc.env:HOME}"]),
    ("fairseq-generate", ["--results-path", "r_${x}"]), ("fairseq-validate", ["--valid-subset", "valid_${x}"]),
])
def test_an_option_holding_an_interpolation_is_one_line_at_parse(command, argv, tmp_path, monkeypatch, capsys):
    """fairseq hands every option to OmegaConf: '${x}' in any of them was an InterpolationKeyError traceback (and
    '${oc.env:HOME}' a value read from the environment)."""
    line = refused(command, argv, tmp_path, monkeypatch, capsys)
    assert line.startswith("{}: error: --{} {!r} holds '${{'".format(command, argv[0][2:], argv[1])), line
