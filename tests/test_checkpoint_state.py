"""The shape of the state a checkpoint holds is what fairseq's loaders read, or one line naming what is wrong, before
fairseq reads it (``checkpoint_kind.state_problem``, where fairseq's torch.load returns: every loader).

fairseq's load_checkpoint_to_cpu and load_model_ensemble_and_task read the unpickled state without looking at its
shape: a pickle of an int, ``{}``, ``{'model': 'x'}``, a ``cfg`` that is a list or has no model section, no ``cfg``
nor ``args``, an ``--arch`` or ``--task`` that is no name, a stored model option of another type or out of range
(attention heads 0: a ZeroDivisionError) were KeyError/TypeError/ConfigAttributeError/ZeroDivisionError tracebacks
after the dictionaries were loaded. A transformer checkpoint of fairseq 0.12.2 holds copies of each encoder layer's
weights that later fairseq lacks ("Unexpected key(s) encoder.layers.0.in_proj_weight"): one line naming that.
Each case goes through every loader (fairseq's load_checkpoint_to_cpu: --path, --lm-path, --restore-file,
--finetune-from-model; the EMA loader; both hubs, which build the model).
"""
import argparse
import re

import pytest
import torch

from fairseq_wean.errors import FairseqWeanError
from test_checkpoint_records import ROUTES
from test_crafted_checkpoints import saved

LINE = r"^checkpoint {}: {}; nothing was loaded$"
TINY = dict(encoder_embed_dim=8, decoder_embed_dim=8, encoder_ffn_embed_dim=8, decoder_ffn_embed_dim=8,
            encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, dropout=0.1,
            max_source_positions=64, max_target_positions=64)


def legit_state(**model_options):
    """What fairseq-train writes (its shape; the weights one tensor): a cfg with a Namespace model section."""
    model = argparse.Namespace(**dict(TINY, _name="transformer", arch="transformer", **model_options))
    return {"model": {"encoder.version": torch.tensor([3.0])}, "args": None,
            "cfg": {"model": model, "task": {"_name": "translation"}, "common": {"seed": 1}},
            "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam",
                                   "lr_scheduler_state": {"best": 2.5}, "num_updates": 7}],
            "extra_state": {"epoch": 1, "ema": {"w": torch.arange(3.0)}}, "last_optimizer_state": None}


def changed(change):
    state = legit_state()
    change(state)
    return state


def with_cfg(**entries):
    return changed(lambda s: s["cfg"].update(entries))


def options(**entries):
    return legit_state(**entries)


FAST_PATH = "its model holds fairseq 0.12.2's copies of each transformer encoder layer's weights for torch's fast " \
            "path (encoder.layers.0.in_proj_weight ...), which fairseq 0.12.2 rebuilds"
# case -> (state, the line's detail (start), whether loaders that do not build a model refuse it too)
CASES = {
    "an-int": (5, "its pickle holds an int, not the dict of a fairseq checkpoint", True),
    "a-list": ([1, 2], "its pickle holds a list, not the dict of a fairseq checkpoint", True),
    "empty-dict": ({}, "it holds no '", True),  # 'model' where a model is built, else 'optimizer_history'
    "no-model": (changed(lambda s: s.pop("model")), "it holds no 'model' (it holds: args, cfg, extra_state, "
                 "last_optimizer_state, optimizer_history), which every fairseq checkpoint has", False),
    "model-a-str": (changed(lambda s: s.update(model="x")), "its 'model' is a str, not the state dict", True),
    "model-holds-no-tensor": (changed(lambda s: s["model"].update(w=[1.0])), "its 'model' holds 'w': a list", True),
    "no-optimizer-history": (changed(lambda s: s.pop("optimizer_history")), "it holds no 'optimizer_history'", True),
    "empty-optimizer-history": (changed(lambda s: s.update(optimizer_history=[])),
                                "its 'optimizer_history' is empty, not the list of dicts fairseq writes", True),
    "no-extra-state": (changed(lambda s: s.pop("extra_state")), "it holds no 'extra_state'", True),
    "extra-state-a-list": (changed(lambda s: s.update(extra_state=[])), "its 'extra_state' is a list", True),
    "cfg-a-list": (changed(lambda s: s.update(cfg=[1])), "its stored configuration 'cfg' is a list", True),
    "args-a-dict": (changed(lambda s: s.update(args={"arch": "transformer"})),
                    "its stored arguments 'args' are a dict, not the Namespace fairseq writes", True),
    "neither-cfg-nor-args": (changed(lambda s: s.update(cfg=None)),
                             "its stored configuration has neither 'cfg' nor 'args'", False),
    "cfg-without-model": (changed(lambda s: s["cfg"].pop("model")), "its stored configuration has no model section "
                          "('cfg.model' is missing)", False),
    "cfg-model-none": (with_cfg(model=None), "its stored configuration's 'cfg.model' is None, not the section "
                       "fairseq writes", True),
    "cfg-task-none": (with_cfg(task=None), "its stored configuration's 'cfg.task' is None", True),
    "cfg-generation-a-str": (with_cfg(generation="beam"), "its stored configuration's 'cfg.generation' is a str", True),
    "cfg-model-a-list": (with_cfg(model=[1]), "its stored configuration's 'cfg.model' is a list", True),
    "cfg-without-task": (changed(lambda s: s["cfg"].pop("task")), "its stored --task is None", False),
    "task-an-int": (with_cfg(task={"_name": 5}), "its stored --task is 5, which is no registered task", True),
    "args-task-none": (changed(lambda s: s.update(cfg=None, args=argparse.Namespace(arch="transformer", task=None,
                                                                                     **TINY))),
                       "its stored --task is None, which is no registered task", True),
    "arch-an-int": (changed(lambda s: setattr(s["cfg"]["model"], "arch", 5)),
                    "its stored --arch is 5, which is no registered model architecture", True),
    "arch-unknown": (changed(lambda s: setattr(s["cfg"]["model"], "_name", "no_such_arch")),
                     "its stored --arch is 'no_such_arch'", True),
    "heads-zero": (options(encoder_attention_heads=0), "its stored model option encoder_attention_heads is 0, where "
                   "--arch transformer takes at least 1", True),
    "layers-negative": (options(decoder_layers=-1), "its stored model option decoder_layers is -1, where --arch "
                        "transformer takes at least 0", True),
    "dim-a-str": (options(encoder_embed_dim="8"), "its stored model option encoder_embed_dim is '8' (a str), where "
                  "--arch transformer takes a whole number", True),
    "dim-a-float": (options(decoder_embed_dim=8.0), "its stored model option decoder_embed_dim is 8.0 (a float)",
                    True),
    "positions-infinite": (options(max_source_positions=float("inf")), "its stored model option "
                           "max_source_positions is inf (a float)", True),
    "dropout-a-str": (options(dropout="0.1"), "its stored model option dropout is '0.1' (a str), where --arch "
                      "transformer takes a finite number", True),
    "dropout-above-1": (options(attention_dropout=1.5), "its stored model option attention_dropout is 1.5, where "
                        "--arch transformer takes a probability in [0, 1)", True),
    "fairseq-0.12.2-fast-path-copies": (changed(lambda s: s["model"].update({
        "encoder.layers.0.self_attn.q_proj.weight": torch.zeros(8, 8),
        "encoder.layers.0.in_proj_weight": torch.zeros(24, 8)})), FAST_PATH, True),
}


def fairseq_0122():
    from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

    return "_load_from_state_dict" in vars(TransformerEncoderLayerBase)


BUILDS = ("plugin_hub", "model_class_hub")


@pytest.mark.parametrize("route", [r for r in ROUTES if r.__name__ != "_safe_load"],  # fairseq's loaders
                         ids=lambda r: r.__name__.strip("_"))
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_state_of_another_shape_is_one_line_in_every_loader(data_bin, tmp_path, case, route):
    import fairseq_wean  # noqa: F401  (installs the checkpoint checks)

    state, detail, always = CASES[case]
    name = route.__name__.strip("_")
    if case.startswith("fairseq-0.12.2") and fairseq_0122():
        pytest.skip("fairseq 0.12.2 rebuilds its fast-path copies itself")
    data = saved(state)
    path = tmp_path / "model" / "checkpoint_best.pt"
    path.parent.mkdir()
    path.write_bytes(data)
    if not always and name not in BUILDS:  # a loader that builds no model from the stored configuration
        route(path, data_bin)
        return
    with pytest.raises(FairseqWeanError) as info:
        route(path, data_bin)
    message = str(info.value)
    assert re.match(LINE.format(re.escape(str(path)), re.escape(detail) + ".*"), message), message
    assert "\n" not in message and path.read_bytes() == data


def test_the_legit_state_passes_and_every_arch_default_is_in_range():
    """The reference: the legit state passes every rule (building included); the defaults of every registered
    --arch pass the stored-option rule (a rule that refused a model's own defaults would refuse its checkpoints)."""
    import fairseq_wean  # noqa: F401
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    from fairseq_wean.checkpoint_kind import _option_problem, state_problem

    assert state_problem(legit_state(), build=True) is None
    assert state_problem(changed(lambda s: s.update(cfg=None, args=argparse.Namespace(
        arch="transformer", task="translation", **TINY))), build=True) is None
    tried = 0
    for arch, cls in sorted(ARCH_MODEL_REGISTRY.items()):
        parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
        try:
            cls.add_args(parser)
            args = parser.parse_args([])
            ARCH_CONFIG_REGISTRY[arch](args)
        except Exception:  # noqa: B902  (defaults that need other options: not checkable here)
            continue
        tried += 1
        assert _option_problem(arch, args) is None, arch
    assert tried > 100
