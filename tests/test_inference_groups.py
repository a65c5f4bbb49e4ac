"""fairseq's option groups that the inference commands parse and only fairseq-train reads, refused in one line at parse
(``option_rules.INFERENCE_INERT``, ``inference_group_problem``):

* fairseq-generate and -interactive parse the whole checkpoint group (CheckpointConfig): --save-dir, --patience,
  --restore-file (a checkpoint named and never loaded), --reset-optimizer, ... were accepted and ignored;
* every inference command parses the distributed group (DistributedTrainingConfig) and the dataset's training fields
  (DatasetConfig): the DDP/FSDP/SlowMo options, --max-valid-steps, --num-shards/--shard-id (fairseq-generate and
  -validate shard by the distributed rank, never by them), --disable-validation, ...;
* the generation options read by nothing: --sacrebleu (only silences a warning), --eos-token (speech tasks' data);
* fairseq-validate builds the checkpoint's stored criterion (``validate_criterion_problem``).

Every field of those groups has a decision per command: refused (INERT), read (``READ``, with where), a row of
``patching.OPTION_NEEDS`` naming that command, or not parsed by it; a new field with none fails
``test_every_field_has_a_decision_per_command``.
"""
import dataclasses

import pytest
from conftest import parse_outcome

COMMANDS = {"generate": ("get_generation_parser", ["--task", "translation"]),
            "interactive": ("get_interactive_generation_parser", ["--task", "translation"]),
            "validate": ("get_validation_parser", ["--task", "translation", "--max-tokens", "9"]),
            "eval_lm": ("get_eval_lm_parser", ["--task", "language_modeling"])}

# the fields an inference command reads, with where (fairseq_cli/<command>.py and what it calls)
_LAUNCH = "distributed_utils.call_main starts and places the processes"
READ = {
    "checkpoint_suffix": "load_model_ensemble(suffix=cfg.checkpoint.checkpoint_suffix) in each command",
    "checkpoint_shard_count": "load_model_ensemble(num_shards=..., strict=...) in generate, interactive, eval_lm",
    "model_parallel_size": "CommonConfig's --model-parallel-size (the checkpoint field interpolates it)",
    "distributed_world_size": "generate.py/eval_lm.py shard the batches by it (num_shards=); " + _LAUNCH,
    "distributed_rank": "generate.py/eval_lm.py: the shard of this process (shard_id=); " + _LAUNCH,
    "distributed_num_procs": _LAUNCH, "distributed_backend": _LAUNCH, "distributed_init_method": _LAUNCH,
    "distributed_port": _LAUNCH, "distributed_no_spawn": _LAUNCH,
    "device_id": "validate.py/eval_lm.py torch.cuda.set_device(device_id); " + _LAUNCH,
    "ddp_backend": "interpolated into the criterion's and model's configurations (adaptive_loss, wav2vec2_asr), "
                   "which fairseq-validate's overrides set by name",
    "pipeline_model_parallel": "generate.py/interactive.py/eval_lm.py: model.cuda() unless it is on",
    **{name: "distributed_utils (call_main's pipeline set-up) and the pipeline model" for name in (
        "pipeline_balance", "pipeline_devices", "pipeline_chunks", "pipeline_encoder_balance",
        "pipeline_encoder_devices", "pipeline_decoder_balance", "pipeline_decoder_devices", "pipeline_checkpoint")},
    "tpu": "CommonConfig's --tpu (interpolated); tasks and distributed_utils read it",
    "fp16": "CommonConfig's --fp16 (interpolated): model.half()", "memory_efficient_fp16": "CommonConfig's (sets fp16)",
    "num_workers": "the batch iterator", "skip_invalid_size_inputs_valid_test": "the batch iterator",
    "max_tokens": "the batch iterator", "batch_size": "the batch iterator",
    "required_batch_size_multiple": "the batch iterator", "required_seq_len_multiple": "the task's datasets",
    "dataset_impl": "the task's load_dataset", "data_buffer_size": "the batch iterator",
    "gen_subset": "generate.py/eval_lm.py load it (fairseq-interactive and -validate: a row of OPTION_NEEDS)",
    "num_shards": "eval_lm.py shards by max(--num-shards, world size)", "shard_id": "eval_lm.py (shard_id=)",
    # option_rules.SUBSET_OPTIONS decides these by the task's code (tests/test_inference_subsets.py)
    "train_subset": "SUBSET_OPTIONS", "valid_subset": "validate.py validates it; elsewhere SUBSET_OPTIONS",
    "combine_valid_subsets": "SUBSET_OPTIONS", "ignore_unused_valid_subsets": "SUBSET_OPTIONS",
}


def parser_dests(command):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    return {a.dest for a in getattr(options, COMMANDS[command][0])()._actions}


def group_fields():
    from fairseq.dataclass.configs import CheckpointConfig, DatasetConfig, DistributedTrainingConfig

    return sorted({f.name for c in (CheckpointConfig, DistributedTrainingConfig, DatasetConfig)
                   for f in dataclasses.fields(c) if f.name != "_name"})


def decision(command, field, dests):
    from fairseq_wean.option_rules import INFERENCE_INERT
    from fairseq_wean.patching import OPTION_NEEDS

    inert = command in INFERENCE_INERT.get(field, ((), None))[0]
    found = [d for d, holds in (("not parsed", field not in dests), ("refused", inert), ("read", field in READ and
             not inert), ("row", field in OPTION_NEEDS and command in (OPTION_NEEDS[field][2] or ())))
             if holds]
    return found


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_field_has_a_decision_per_command(command):
    from fairseq.dataclass.configs import OptimizationConfig

    dests = parser_dests(command)
    fields = group_fields()
    assert {"save_dir", "restore_file", "patience", "use_sharded_state", "max_valid_steps"} <= set(fields)
    undecided = [f for f in fields if not decision(command, f, dests)]
    assert not undecided, "{}: fields with no decision: {}".format(command, undecided)
    twice = [(f, decision(command, f, dests)) for f in fields if len(set(decision(command, f, dests)) - {"row", "not parsed"}) > 1]
    assert not twice, twice
    # fairseq's optimization group is fairseq-train's parser's alone: argparse refuses it ("unrecognized arguments")
    assert not {f.name for f in dataclasses.fields(OptimizationConfig)} & dests


# values fairseq's own types take (they are not int/float), away from the default
VALUES = {"max_tokens_valid": "100", "max_valid_steps": "2", "slowmo_momentum": "0.5", "fixed_validation_seed": "3",
          "batch_size_valid": "3", "optimizer_overrides": "{'lr': 1}"}


def value_for(action):
    """A value away from ``action``'s default, as written on the command line (None: a flag already on)."""
    if action.dest in VALUES:
        return [VALUES[action.dest]]
    if action.nargs == 0:
        return None if action.default else []
    if action.choices:
        return [str(next(c for c in action.choices if c != action.default))]
    if action.type in (int, float) or isinstance(action.default, (int, float)) and not isinstance(action.default, bool):
        return [str((action.default or 0) + 2)]
    return ["x{}".format(action.dest)]


def outcome(command, argv, tmp_path, monkeypatch, capsys):
    """The last line of ``command``'s parse (exit status 2, no traceback), or None if taken."""
    build, base = COMMANDS[command]
    base = ([] if "--path" in argv else ["--path", "x.pt"]) + (base[2:] if "--task" in argv else base)
    return parse_outcome("fairseq-" + command.replace("_", "-"), build, [str(tmp_path)] + base + argv, monkeypatch,
                         capsys)


def inert_cases():
    from fairseq_wean.option_rules import INFERENCE_INERT

    return [(c, f) for f, (commands, _) in sorted(INFERENCE_INERT.items()) for c in commands]


@pytest.mark.parametrize("command,field", inert_cases())
def test_a_field_no_code_of_the_command_reads_is_refused(command, field, tmp_path, monkeypatch, capsys):
    """fairseq-generate --restore-file other.pt (and every field of INFERENCE_INERT, in every command it lists):
    accepted and ignored; now one line at parse naming it, nothing written."""
    from fairseq import options

    from fairseq_wean.option_rules import subset_reads

    action = next(a for a in getattr(options, COMMANDS[command][0])()._actions if a.dest == field)
    value = value_for(action)
    assert value is not None, field
    flag = next(s for s in action.option_strings if s.startswith("--"))
    line = outcome(command, [flag] + value, tmp_path, monkeypatch, capsys)
    if subset_reads(command, COMMANDS[command][1][1], field):  # the task's code reads it: taken (eval-lm's language_modeling)
        assert line is None, line
        return
    prefix = "fairseq-{}: error: {} does nothing here: ".format(command.replace("_", "-"), flag)
    assert line is not None and line.startswith(prefix), line
    assert "add --eval" not in line and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command,argv,named", [
    ("generate", ["--nval", "2"], "--max-valid-steps"), ("validate", ["--max-sentences-valid", "3"], "--batch-size-valid")])
def test_another_spelling_of_a_refused_option_is_refused(command, argv, named, tmp_path, monkeypatch, capsys):
    line = outcome(command, argv, tmp_path, monkeypatch, capsys)
    assert line is not None and line.startswith("fairseq-{}: error: {} does nothing here".format(command, named)), line


@pytest.mark.parametrize("command,argv", [
    ("generate", ["--checkpoint-suffix", "_x"]), ("interactive", ["--checkpoint-shard-count", "2"]),
    ("generate", ["--save-dir", "checkpoints"]),  # fairseq's default, written: changes nothing, taken
    ("eval_lm", ["--num-shards", "4", "--shard-id", "3"]),  # eval_lm.py reads them
    ("eval_lm", ["--batch-size-valid", "3"]),  # language_modeling's code reads it (task_reads)
    ("validate", ["--valid-subset", "valid"]),
])
def test_what_the_command_reads_is_taken(command, argv, tmp_path, monkeypatch, capsys):
    assert outcome(command, argv, tmp_path, monkeypatch, capsys) is None


def test_best_checkpoint_metric_in_generate_gives_advice_that_works_there(tmp_path, monkeypatch, capsys):
    """fairseq-generate --best-checkpoint-metric bleu said 'add --eval-bleu', which fairseq-generate then refuses."""
    line = outcome("generate", ["--task", "translation_with_metrics", "--best-checkpoint-metric", "bleu",
                                "--maximize-best-checkpoint-metric"], tmp_path, monkeypatch, capsys)
    assert line.startswith("fairseq-generate: error: --best-checkpoint-metric does nothing here: fairseq-generate "
                           "restores, writes and keeps no checkpoint"), line


def test_gen_subset_in_validate_is_refused(tmp_path, monkeypatch, capsys):
    """fairseq-validate --gen-subset valid validated --valid-subset valid whatever it named (written at its default,
    test, the shared rule of patching.given_options takes it)."""
    line = outcome("validate", ["--gen-subset", "valid"], tmp_path, monkeypatch, capsys)
    assert line.startswith("fairseq-validate: error: --gen-subset does nothing here") and "--valid-subset" in line


# ---- fairseq-validate's criterion: the checkpoint's, its fields set by name from the options given
def _checkpoint(tmp_path, criterion):
    import torch

    path = tmp_path / "ck.pt"
    torch.save({"cfg": {"criterion": criterion}, "model": {}}, str(path))
    return str(path)


@pytest.mark.parametrize("stored,argv,refused", [
    ({"_name": "cross_entropy"}, ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.5"],
     "--criterion label_smoothed_cross_entropy"),
    ({"_name": "label_smoothed_cross_entropy", "label_smoothing": 0.1},
     ["--criterion", "label_smoothed_cross_entropy", "--report-accuracy"], "--report-accuracy"),
    ({"_name": "label_smoothed_cross_entropy", "label_smoothing": 0.1},
     ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.5"], None),  # overrides the stored one
    ({"_name": "cross_entropy"}, ["--criterion", "cross_entropy"], None),
])
def test_validate_builds_the_checkpoints_criterion(stored, argv, refused, tmp_path, monkeypatch, capsys):
    """fairseq-validate --criterion label_smoothed_cross_entropy --label-smoothing 0.5 on a cross_entropy checkpoint
    printed the loss of cross_entropy: the criterion is the stored one, and only its own fields are set."""
    path = _checkpoint(tmp_path, stored)
    line = outcome("validate", ["--path", path] + argv, tmp_path, monkeypatch, capsys)
    if refused is None:
        assert line is None, line
        return
    assert line == ("fairseq-validate: error: {} does nothing here: fairseq-validate builds the checkpoint's criterion, "
                    "{}, and sets only the fields it has".format(refused, stored["_name"])), line
