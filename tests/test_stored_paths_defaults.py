"""The default a forgotten stored path takes where its field cannot be None (fairseq_wean/stored_paths.py).

:func:`forget_stored_paths` sets a stored path to None; where fairseq types the option by a dataclass whose field
does not admit None, the option takes the field's default instead, from one helper
(``stored_paths._not_none_defaults``), in two forms that differ on purpose:

* the old-style ``args`` (a Namespace, ``_required_defaults``): fairseq converts them into a config through
  hydra's overrides, so an ``II("common.x")`` default stays the interpolation (hydra resolves it in the whole
  config) and omegaconf's MISSING (``'???'``) stays MISSING (None would be refused there);
* a section of ``cfg`` (a DictConfig or a Namespace, ``_section_required_defaults``): fairseq merges it into its
  dataclass (``merge_with_parent``), which resolves nothing, so an ``II`` default is the default of the field
  it names (``plasma_path``: common's ``/tmp/plasma``), and a MISSING one is no default (the field stays
  None: the hub then names the file to give). The section's dataclass is looked up by its ``_name`` as
  fairseq's builders look it up (an architecture's name builds no dataclass), the lookup
  ``declared_defaults`` shares, where a model's architecture names its model.

Each case pins the value both forms give on this fairseq; the cases run on fairseq 0.12.2 (omegaconf 2.0) too.
"""
import argparse

import pytest
from omegaconf import OmegaConf

import fairseq_wean  # noqa: F401  (registers the plugin's components)
from fairseq_wean import stored_paths



class _Absent:
    def __repr__(self):  # a stable test id on every worker
        return "ABSENT"


ABSENT = _Absent()
# (args given, option, the default the old-style args take; ABSENT: none, the option stays None)
ARGS_CASES = [
    ({"task": "language_modeling"}, "plasma_path", "${common.plasma_path}"),  # II: kept for hydra to resolve
    ({"task": "language_modeling"}, "seed", 1),  # common's own field first
    ({"task": "language_modeling"}, "tokens_per_sample", 1024),
    ({"task": "language_modeling"}, "data", ABSENT),  # Optional[str]
    ({"arch": "wav2vec_ctc"}, "w2v_path", "???"),  # MISSING: kept MISSING (None is refused by the conversion)
    ({"arch": "wav2vec_ctc"}, "ddp_backend", "pytorch_ddp"),  # distributed_training's field first
    ({"arch": "transformer_lm_gpt"}, "add_bos_token", "${task.add_bos_token}"),  # the model's __dataclass: II kept
    ({"arch": "transformer_lm_gpt", "task": "language_modeling"}, "tpu", False),  # common's first, then model, task
    ({}, "save_dir", "checkpoints"),
    ({}, "bpe_codes", ABSENT),  # no BPE dataclass is among the old-style args' classes
    ({}, "max_tokens", ABSENT),
]
# (section name, its _name, option, the default; ABSENT: none)
SECTION_CASES = [
    ("task", "language_modeling", "plasma_path", "/tmp/plasma"),  # II("common.plasma_path"): common's default
    ("task", "language_modeling", "seed", 1),  # II("common.seed")
    ("task", "language_modeling", "batch_size", ABSENT),  # Optional
    ("task", "translation", "train_subset", "train"),  # II("dataset.train_subset")
    ("task", "translation", "source_lang", ABSENT),
    ("model", "wav2vec_ctc", "w2v_path", ABSENT),  # MISSING: no default
    ("model", "wav2vec_ctc", "normalize", ABSENT),  # II("task.normalize"): task is no dataclass section
    ("model", "wav2vec_ctc", "ddp_backend", "pytorch_ddp"),
    ("model", "transformer_lm", "tpu", False),
    ("model", "transformer_lm_gpt", "tpu", ABSENT),  # an architecture's name: fairseq builds no dataclass
    ("model", "lstm", "encoder_embed_path", ABSENT),
    ("bpe", "subword_nmt", "bpe_codes", ABSENT),  # MISSING
    ("bpe", "subword_nmt", "bpe_separator", "@@"),
    ("optimizer", "adam", "lr", ABSENT),  # II("optimization.lr"): a default_factory, no plain default
    ("optimizer", "adam", "tpu", False),
    ("lr_scheduler", "triangular", "max_lr", ABSENT),  # MISSING float
    ("common", None, "seed", 1),  # FairseqConfig's own section, whatever its _name
    ("common", "language_modeling", "plasma_path", ABSENT),  # Optional there
    ("checkpoint", None, "save_dir", "checkpoints"),
    ("checkpoint", None, "model_parallel_size", 1),  # II("common.model_parallel_size")
    ("nosuch", "adam", "tpu", ABSENT),
]
# (section name, its content, option, what declared_defaults gives: the raw declaration, II and MISSING kept)
DECLARED_CASES = [
    ("task", {"_name": "language_modeling"}, "plasma_path", "${common.plasma_path}"),
    ("model", {"_name": "transformer_lm_gpt"}, "add_bos_token", "${task.add_bos_token}"),  # arch -> its model
    ("bpe", {"_name": "subword_nmt"}, "bpe_codes", "???"),
    ("common", {}, "seed", 1),
    (None, {"arch": "wav2vec_ctc", "task": "language_modeling"}, "w2v_path", "???"),
]


def _value(found, option):
    return found[option] if option in found else ABSENT


@pytest.mark.parametrize("given,option,expected", ARGS_CASES, ids=lambda v: str(v))
def test_old_style_args_defaults(given, option, expected):
    assert _value(stored_paths._required_defaults(argparse.Namespace(**given)), option) == expected


@pytest.mark.parametrize("form", ["DictConfig", "Namespace"])
@pytest.mark.parametrize("name,choice,option,expected", SECTION_CASES, ids=lambda v: str(v))
def test_cfg_section_defaults(form, name, choice, option, expected):
    content = {} if choice is None else {"_name": choice}
    section = OmegaConf.create(content) if form == "DictConfig" else argparse.Namespace(**content)
    found = stored_paths._section_required_defaults(name, stored_paths._Section(section))
    assert _value(found, option) == expected


@pytest.mark.parametrize("name,content,option,expected", DECLARED_CASES, ids=lambda v: str(v))
def test_declared_defaults(name, content, option, expected):
    section = OmegaConf.create(content) if name is not None else argparse.Namespace(**content)
    assert _value(stored_paths.declared_defaults(name, section), option) == expected


def test_forgotten_paths_take_those_defaults_end_to_end():
    """Through forget_stored_paths: the old-style args and a cfg section of one checkpoint, each forgetting a
    str path that cannot be None (II default), a MISSING one, and an Optional one."""
    args = argparse.Namespace(arch="wav2vec_ctc", task="language_modeling", plasma_path="/x/plasma",
                              w2v_path="/x/w2v.pt", save_dir="/x/ckpt", data="/x/data")
    cfg = OmegaConf.create({"task": {"_name": "language_modeling", "plasma_path": "/x/plasma", "data": "/x/data"},
                            "model": {"_name": "wav2vec_ctc", "w2v_path": "/x/w2v.pt", "ddp_backend": "/x/ddp"},
                            "checkpoint": {"save_dir": "/x/ckpt", "restore_file": "/x/last.pt"}})
    state = {"args": args, "cfg": cfg}
    forgotten = stored_paths.forget_stored_paths(state, {})
    assert (args.plasma_path, args.w2v_path, args.save_dir, args.data) == (
        "${common.plasma_path}", "???", "checkpoints", "/x/data")
    assert (cfg.task.plasma_path, cfg.task.data) == ("/tmp/plasma", "/x/data")
    assert (cfg.model._get_node("w2v_path")._value(), cfg.model.ddp_backend) == (None, "pytorch_ddp")
    assert (cfg.checkpoint.save_dir, cfg.checkpoint.restore_file) == ("checkpoints", "checkpoint_last.pt")
    assert set(forgotten) == {"args.plasma_path", "args.w2v_path", "args.save_dir", "task.plasma_path",
                              "model.w2v_path", "model.ddp_backend", "checkpoint.save_dir", "checkpoint.restore_file"}
