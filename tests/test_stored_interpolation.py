"""No OmegaConf interpolation stored in a checkpoint is resolved by loading it (fairseq_wean/stored_paths.py).

A string holding ``${`` in a checkpoint's configuration (``${oc.env:VAR}``, ``${..key}``, ``${oc.decode:...}``,
``${oc.create:...}``, any registered resolver) is resolved by omegaconf when fairseq reads the option: a
stored ``sentencepiece_model: ${oc.env:EVILPATH}`` named a file that no stored path showed, an environment
variable's value could land in a message. Every form, in every shape (a value, inside a list, inside a
nested dict, a dict's key, an option's name), planted in every section fairseq stores (each ``cfg`` section,
the Namespace ``model``, the old-style ``args``) is forgotten by :func:`forget_stored_interpolations`, after
which fairseq's own reading of the state (``load_checkpoint_to_cpu``: ``OmegaConf.create``,
``overwrite_args_by_name``, the old-style args' conversion; ``to_container(resolve=True)``) calls no resolver.
End to end, every entry point that loads a checkpoint (ENTRY_POINTS of test_crafted_checkpoints) loads one
whose options name a named pipe only through ``${oc.env:...}``: nothing blocks, each ends or says one line.
"""
import argparse
import copy
import json
import os

import pytest
import torch

from test_crafted_checkpoints import entry_point_jobs, good_checkpoint, run_driver  # noqa: F401  (a fixture)

SECRET = "fx4-secret-value"
FORMS = ["${oc.env:FX4_SECRET}", "${oc.env:HOME}/x", "${..other}", "${common.seed}", "${oc.decode:'[1, 2]'}",
         "${oc.create:{a: 1}}", "${fx4rec:x}", "pre ${fx4rec:mid} post", "${fx4rec:${oc.env:FX4_SECRET}}"]
SHAPES = {
    "a value": lambda form: form,
    "inside a list": lambda form: ["plain", form],
    "inside a nested dict": lambda form: {"a": {"b": [form]}},
    "a dict's key": lambda form: {form: 1},
}
CALLS = []


@pytest.fixture(autouse=True)
def recording_resolver(monkeypatch, request):
    """``fx4rec``: a resolver that records each call (a planted one that resolves is seen here). The
    planted forms use omegaconf >= 2.1's resolvers (oc.env, oc.decode, oc.create); with omegaconf 2.0
    (fairseq 0.12.2's) only the hand-made case runs (its check is the same ``${`` rule)."""
    from omegaconf import OmegaConf

    monkeypatch.setenv("FX4_SECRET", SECRET)
    CALLS.clear()
    if not hasattr(OmegaConf, "register_new_resolver"):
        if not request.node.name.startswith("test_a_hand_made"):
            pytest.skip("omegaconf 2.0 has none of the oc.* resolvers these cases plant")
        yield
        return
    OmegaConf.register_new_resolver("fx4rec", lambda *args: CALLS.append(args) or "resolved", replace=True)
    yield
    OmegaConf.clear_resolver("fx4rec")


@pytest.fixture(scope="module")
def stored_cfg(good_checkpoint):  # noqa: F811
    """The configuration a plugin run stores (a dict per section, the model a Namespace), weights dropped."""
    state = torch.load(good_checkpoint, weights_only=False)
    return dict(state, model={}, last_optimizer_state=None)


def sections(cfg):
    return ["args"] + [name for name in cfg if name != "_name"]


def cfg_of(stored):
    return copy.deepcopy(stored["cfg"])


def plant(stored, where, shape):
    """A state whose section ``where`` holds every FORM in ``shape`` (``"args"``: the old-style Namespace);
    the names of the options planted."""
    import fairseq_wean  # noqa: F401
    from test_stored_config import old_style

    cfg = cfg_of(stored)
    cfg["bpe"] = cfg["bpe"] or {"_name": "sentencepiece", "sentencepiece_model": "spm.model"}
    cfg["tokenizer"] = cfg["tokenizer"] or {"_name": "moses"}
    state = old_style(dict(stored, cfg=cfg)) if where == "args" else dict(stored, cfg=cfg, args=None)
    section = state["args"] if where == "args" else cfg[where]
    values = vars(section) if isinstance(section, argparse.Namespace) else section
    if shape == "an option's name":
        planted = list(FORMS)
        values.update((form, 1) for form in FORMS)
    else:
        planted = ["fx4_planted_{}".format(i) for i in range(len(FORMS))]
        values.update((name, SHAPES[shape](form)) for name, form in zip(planted, FORMS))
    return state, section, planted


def read_as_fairseq_does(state, path):
    """What fairseq does with a loaded state: load_checkpoint_to_cpu (OmegaConf.create, arg_overrides through
    overwrite_args_by_name, the old-style args' conversion), then every value read (to_container, resolved)."""
    from fairseq import checkpoint_utils
    from omegaconf import OmegaConf

    torch.save(state, path)
    loaded = checkpoint_utils.load_checkpoint_to_cpu(str(path), {"beam": 2})
    return OmegaConf.to_container(loaded["cfg"], resolve=True)


CASES = [(where, shape) for where in ["args", "common", "common_eval", "distributed_training", "dataset",
                                       "optimization", "checkpoint", "bmuf", "generation", "eval_lm", "interactive",
                                       "model", "task", "criterion", "optimizer", "lr_scheduler", "scoring", "bpe",
                                       "tokenizer", "ema"]
         for shape in list(SHAPES) + ["an option's name"]]


def test_cases_cover_every_stored_section(stored_cfg):
    assert {where for where, _shape in CASES} == set(sections(stored_cfg["cfg"]))


@pytest.mark.parametrize("where,shape", CASES, ids=["{}-{}".format(w, s.replace(" ", "_")) for w, s in CASES])
def test_every_stored_interpolation_is_forgotten_before_it_is_resolved(stored_cfg, where, shape, tmp_path):
    from fairseq_wean.stored_paths import declared_defaults, forget_stored_interpolations, holds_interpolation

    state, section, planted = plant(stored_cfg, where, shape)
    forgotten = forget_stored_interpolations(state)
    prefix = "args" if where == "args" else "cfg." + where
    assert sorted(forgotten) == sorted("{}.{}".format(prefix, name) for name in planted), forgotten
    assert not holds_interpolation(state), (where, shape)
    values = vars(section) if isinstance(section, argparse.Namespace) else section
    # an option's name, or an option no component declares: dropped
    assert not set(planted) & set(values) and not declared_defaults(
        None if where == "args" else where, section).keys() & set(planted)
    resolved = read_as_fairseq_does(state, tmp_path / "forgotten.pt")
    assert CALLS == [] and SECRET not in json.dumps(resolved, default=str), CALLS


def test_an_interpolated_declared_option_takes_its_declared_default(stored_cfg):
    """A declared option holding an interpolation takes the default its component declares (fairseq's own
    ``II("common.seed")`` default: the stored value it names); a path option none."""
    from fairseq_wean.stored_paths import forget_stored_interpolations

    cfg = cfg_of(stored_cfg)
    cfg["common"]["seed"] = "${oc.env:FX4_SECRET}"
    cfg["optimization"]["max_update"] = "${fx4rec:x}"
    cfg["dataset"]["batch_size_valid"] = ["${fx4rec:y}"]
    cfg["model"].dropout = "${fx4rec:z}"
    cfg["bpe"] = {"_name": "sentencepiece", "sentencepiece_model": "${oc.env:EVILPATH}"}
    cfg["generation"]["replace_unk"] = "${..x}"
    forget_stored_interpolations({"cfg": cfg, "args": None})
    assert (cfg["common"]["seed"], cfg["optimization"]["max_update"], cfg["bpe"]["sentencepiece_model"],
            cfg["generation"]["replace_unk"]) == (1, 0, None, None)
    assert cfg["dataset"]["batch_size_valid"] == \
        cfg["dataset"]["batch_size"]
    assert cfg["model"].dropout == 0.4  # wean_lstm's base_architecture: getattr(args, "dropout", 0.4)


@pytest.mark.parametrize("where,key", [("model", "_name"), ("model", "arch"), ("task", "_name"), ("bpe", "_name"),
                                       ("args", "arch"), ("args", "task"), ("cfg", "common")])
def test_an_interpolated_component_name_or_required_section_is_refused_in_one_line(stored_cfg, where, key):
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.stored_paths import forget_stored_interpolations

    state, _section, _planted = plant(stored_cfg, "args" if where == "args" else "bpe", "a value")
    if where == "cfg":
        state["cfg"][key] = "${oc.env:FX4_SECRET}"
    elif where == "args":
        setattr(state["args"], key, "${oc.env:FX4_SECRET}")
    elif isinstance(state["cfg"][where], argparse.Namespace):
        setattr(state["cfg"][where], key, "${oc.env:FX4_SECRET}")
    else:
        state["cfg"][where][key] = "${oc.env:FX4_SECRET}"
    with pytest.raises(FairseqWeanError) as error:
        forget_stored_interpolations(state, "c.pt")
    message = str(error.value)
    assert message.startswith("checkpoint c.pt: stores {} as an OmegaConf interpolation ('${{oc.env:FX4_SECRET}}')"
                              .format({"args": "args.", "cfg": "cfg."}.get(where, "cfg." + where + ".") + key)), message
    assert "\n" not in message and SECRET not in message and CALLS == []


def test_fairseq_loading_resolves_nothing_a_checkpoint_stores(stored_cfg, tmp_path):
    """Through fairseq's own loader (the plugin's wrapper around it): the raw state is cleaned before
    fairseq reads it."""
    import fairseq_wean  # noqa: F401

    state, _section, _planted = plant(stored_cfg, "common", "a value")
    read_as_fairseq_does(state, tmp_path / "planted.pt")
    assert CALLS == []


def test_no_entry_point_opens_what_a_stored_interpolation_names(good_checkpoint, data_bin, tmp_path,  # noqa: F811
                                                               monkeypatch):
    """A named pipe that only ``${oc.env:FX4_PIPE}`` names, in the options that open a file (the hub's BPE model,
    --replace-unk's dictionary) and in a planted option of every section: every entry point ends (a pipe opened
    would block it), in one line where it ends early, and never with the secret."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    monkeypatch.setenv("FX4_PIPE", str(fifo))
    state = torch.load(good_checkpoint, weights_only=False)
    cfg = state["cfg"]
    cfg["bpe"] = {"_name": "sentencepiece", "sentencepiece_model": "${oc.env:FX4_PIPE}"}
    cfg["generation"]["replace_unk"] = "${oc.env:FX4_PIPE}"
    cfg["tokenizer"] = {"_name": "moses"}
    for name in sections(cfg)[1:]:
        section = cfg[name] if cfg[name] is not None else cfg.__setitem__(name, {}) or cfg[name]
        (vars(section) if isinstance(section, argparse.Namespace) else section)["fx4_planted"] = \
            "${oc.env:FX4_SECRET}"
    jobs, _paths = entry_point_jobs(data_bin, good_checkpoint, tmp_path, lambda path: torch.save(state, path))
    jobs = [job for job in jobs if "--lm-path" not in job["argv"]]  # a translation model is no language model
    source = tmp_path / "input.txt"
    source.write_text("w11 w12\n")
    for job in jobs:
        job["argv"] += ["--input", str(source)] if job["argv"][0] == "interactive" else []
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker", timeout=400)  # a pipe opened: a hang
    wrong = [r for r in results if SECRET in r["outcome"] or not (
        r["outcome"] == "ran to the end" or r["outcome"].startswith("FairseqWeanError: ")
        and "\n" not in r["outcome"])]
    assert not wrong, json.dumps(results, indent=1)


def test_a_hand_made_state_keeps_no_interpolation():
    """Without a trained checkpoint (the mutation check's quick test): a ``${...}`` in a BPE section
    and in a nested list are forgotten, nothing resolved."""
    from fairseq_wean.stored_paths import forget_stored_interpolations

    state = {"cfg": {"common": {"seed": 1, "user_dir": None},
                     "bpe": {"_name": "sentencepiece", "sentencepiece_model": "${oc.env:FX4_SECRET}"},
                     "task": {"_name": "translation", "data": "d", "eval_bleu_args": "{}",
                              "source_lang": ["x", "${fx4rec:}"]}}}
    forgotten = forget_stored_interpolations(state, "c.pt")
    assert "${" not in repr(state) and CALLS == [] and SECRET not in repr(state)
    assert any("sentencepiece_model" in name for name in forgotten), forgotten
