"""Loading a checkpoint opens no file its stored configuration names (fairseq_wean/stored_paths.py).

The options are derived from fairseq's registries (every registered task, model, architecture, BPE,
tokenizer, criterion... with the plugin's), by the words of their help, metavar or name, so that a
new path option of fairseq or of the plugin is tried here: planted as an absolute path and as a bare
name of an existing file, it must be forgotten. End to end, fairseq's ``lstm`` (which opens
``encoder_embed_path``) is loaded by every entry point with a named pipe planted in every path option
(opening one would hang), and, on torch 1.13, an ``xm_transformer`` checkpoint whose
``load_pretrained_decoder_from`` names a pickle (fairseq's raw ``torch.load``) runs no code.
"""
import argparse
import dataclasses
import os
import re

import pytest
import torch

from conftest import REPO, USER_DIR
from test_crafted_checkpoints import Exploit, run_driver, train_argv

HELP = re.compile(r"\bpaths?\b|\bfiles?\b|director|folder|\bload|pretrained|checkpoint|\burl\b", re.I)
NAME = re.compile(r"(^|_)(path|file|dir|from|pretrained|codes|vocab|json|yaml)(_|$)|_(model|dict)$")
# kept: the task's data folder (every loader gives it again)
KEPT = {"data"}


def registered_path_options():
    """{(component, dest)} of every registered string option that names a file or folder."""
    import fairseq_wean  # noqa: F401  (registers the plugin's components)
    from fairseq import models, tasks
    from fairseq.registry import REGISTRIES

    found = set()
    configs = [("task " + n, c) for n, c in tasks.TASK_DATACLASS_REGISTRY.items()]
    configs += [("model " + n, c) for n, c in models.MODEL_DATACLASS_REGISTRY.items()]
    for kind, registry in REGISTRIES.items():
        configs += [("{} {}".format(kind, n), c) for n, c in registry["dataclass_registry"].items()]
    for component, config in configs:
        for field in dataclasses.fields(config) if config is not None else ():
            text = str((field.metadata or {}).get("help") or "")
            if str(field.type) in ("<class 'str'>", "typing.Optional[str]") and (
                    HELP.search(text) or NAME.search(field.name) or (field.metadata or {}).get("path")):
                found.add((component, field.name))
    classes = [("model " + n, c) for n, c in models.ARCH_MODEL_REGISTRY.items()]
    classes += [("task " + n, c) for n, c in tasks.TASK_REGISTRY.items()]
    for component, cls in classes:
        parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
        try:
            cls.add_args(parser)
        except Exception:
            continue
        for action in parser._actions:
            if action.nargs != 0 and not action.choices and action.type in (None, str) and (
                    HELP.search(action.help or "") or NAME.search(action.dest)
                    or str(action.metavar or "").upper() in ("PATH", "FILE", "DIR")):
                found.add((component.split(" ")[0] + " " + cls.__name__, action.dest))
    return sorted((c, d) for c, d in found if d not in KEPT)


PATH_OPTIONS = registered_path_options()


def test_the_derivation_finds_the_known_ones():
    dests = {d for _c, d in PATH_OPTIONS}
    assert {"encoder_embed_path", "load_pretrained_decoder_from", "w2v_path", "bpe_codes", "sentencepiece_model",
            "known_words", "core_align_table", "unk_markers_dict", "load_pretrained_encoder_from"} <= dests


def _config_with_objects(sections):
    """A config that may hold objects, as fairseq stores one: omegaconf 2.1 takes the allow_objects flag,
    omegaconf 2.0 (fairseq 0.12.2's) has no flags= and takes objects under omegaconf_no_object_check."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.create(sections, flags={"allow_objects": True})
    except TypeError:
        return OmegaConf.create(sections)


@pytest.mark.parametrize("component,dest", PATH_OPTIONS, ids=["{}:{}".format(c, d) for c, d in PATH_OPTIONS])
def test_every_registered_path_option_stored_in_a_checkpoint_is_forgotten(component, dest, tmp_path, monkeypatch):
    """In every section a checkpoint stores (old-style args, a Namespace model, dict sections, nested
    ones): an absolute path, a bare file name of the working folder and a list of paths are dropped."""
    from fairseq.dataclass.utils import omegaconf_no_object_check
    from omegaconf import open_dict

    from fairseq_wean.stored_paths import forget_stored_paths

    monkeypatch.chdir(tmp_path)
    os.mkfifo("plantedpipe")
    planted = [str(tmp_path / "plantedpipe"), "plantedpipe", [str(tmp_path / "plantedpipe")]]
    for value in planted:
        args = argparse.Namespace(**{dest: value, "data": "bin", "arch": "lstm"})
        cfg = _config_with_objects({"task": {"_name": "translation", dest: value, "data": "bin"},
                                    "bpe": {"_name": "x", dest: value},
                                    "common": {"nested": {dest: value}}})
        with open_dict(cfg), omegaconf_no_object_check():
            cfg.model = argparse.Namespace(**{dest: value, "_name": "lstm"})
        state = {"args": args, "cfg": cfg}
        forget_stored_paths(state, {})
        assert getattr(args, dest) is None and args.data == "bin", (component, dest, value)
        assert cfg.task[dest] is None and cfg.task.data == "bin" and cfg.bpe[dest] is None
        assert cfg.common.nested[dest] is None and getattr(cfg.model, dest) is None, (component, dest, value)


def test_what_the_caller_gives_again_is_kept():
    from fairseq_wean.stored_paths import forget_stored_paths

    args = argparse.Namespace(encoder_embed_path="/x/emb.txt", activation_fn="relu", lr=[0.1], data="/d")
    forget_stored_paths({"args": args, "cfg": None}, {"encoder_embed_path": "/mine.txt"})
    assert vars(args) == {"encoder_embed_path": "/x/emb.txt", "activation_fn": "relu", "lr": [0.1], "data": "/d"}


@pytest.fixture(scope="module")
def lstm_checkpoint(data_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("stored-config")
    argv = train_argv(data_bin, work / "lstm", "--encoder-embed-dim", "8", "--decoder-embed-dim", "8",
                      "--encoder-hidden-size", "8", "--decoder-hidden-size", "8", "--decoder-out-embed-dim", "8")
    argv[argv.index("wean_lstm")] = "lstm"
    result = run_driver([{"name": "train lstm", "argv": argv}], work, work / "no-marker")
    assert result[0]["outcome"] == "ran to the end", result
    return work / "lstm" / "checkpoint_last.pt"


def old_style(state):
    """STATE as fairseq < 0.10 stored it (A31): one argparse Namespace in ``args``, no ``cfg``."""
    flat = {}
    for name in ["model"] + [name for name in state["cfg"] if name != "model"]:
        section = state["cfg"][name]
        section = vars(section) if isinstance(section, argparse.Namespace) else section
        if hasattr(section, "items"):
            flat.update((key, value) for key, value in section.items() if key != "_name" and key not in flat)
    flat.update(task="translation", criterion="cross_entropy", optimizer="adam", lr_scheduler="fixed")
    return dict(state, args=argparse.Namespace(**flat), cfg=None)


@pytest.mark.parametrize("form", ["cfg", "args"])
def test_no_entry_point_opens_a_path_stored_in_a_checkpoint(lstm_checkpoint, data_bin, tmp_path, form):
    """fairseq's lstm opens encoder_embed_path when it is set: every path option of the model, the task
    and the generation section names a named pipe; loading through every entry point must not block.
    Both forms of a checkpoint (``cfg``, and the old-style ``args`` Namespace) load as plain fairseq loads them."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    state = torch.load(lstm_checkpoint, weights_only=False)
    model = state["cfg"]["model"]
    for _component, dest in PATH_OPTIONS:
        if isinstance(model, argparse.Namespace):
            setattr(model, dest, str(fifo))
        else:
            model[dest] = str(fifo)
    state["cfg"]["generation"]["replace_unk"] = str(fifo)
    folder = tmp_path / "hub"
    folder.mkdir()
    planted = folder / "planted.pt"
    torch.save(old_style(state) if form == "args" else state, planted)
    common = ["--user-dir", USER_DIR, "--cpu", "--path", str(planted)]
    source = tmp_path / "input.txt"
    source.write_text("w11 w12\n")
    jobs = [
        {"name": "generate", "argv": ["generate", str(data_bin), *common, "--beam", "2"]},
        {"name": "interactive", "argv": ["interactive", str(data_bin), *common, "--source-lang", "src",
                                         "--target-lang", "tgt", "--input", str(source)]},
        {"name": "validate", "argv": ["validate", str(data_bin), *common, "--task", "translation", "--max-tokens",
                                      "2000"]},
        {"name": "hub", "argv": ["hub"], "folder": str(folder), "crafted": str(planted), "data": str(data_bin)},
    ]
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker", timeout=300)  # a pipe opened: a hang
    assert [r["outcome"] for r in results] == ["ran to the end"] * len(jobs), results


VENV_1_13 = os.path.join(REPO, ".venv-fairseq0122", "bin", "python")


@pytest.mark.skipif(not os.path.exists(VENV_1_13), reason="no torch 1.13 environment")
def test_a_stored_pretrained_decoder_pickle_runs_no_code_on_torch_1_13(lstm_checkpoint, data_bin, tmp_path):
    """fairseq's xm_transformer calls a raw torch.load(load_pretrained_decoder_from) when it is built:
    on torch 1.13 that runs a pickle's code. The stored path is forgotten, so nothing opens it."""
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil.pt"
    torch.save({"cfg": Exploit(marker)}, evil, _use_new_zipfile_serialization=True)
    state = torch.load(lstm_checkpoint, weights_only=False)
    model = state["cfg"]["model"]
    model.arch = model._name = "xm_transformer"
    model.load_pretrained_decoder_from = str(evil)
    folder = tmp_path / "hub"
    folder.mkdir()
    crafted = folder / "xm.pt"
    torch.save(state, crafted)
    jobs = [{"name": "generate", "argv": ["generate", str(data_bin), "--user-dir", USER_DIR, "--cpu", "--path",
                                          str(crafted)]},
            {"name": "hub", "argv": ["hub"], "folder": str(folder), "crafted": str(crafted), "data": str(data_bin)}]
    results = run_driver(jobs, tmp_path, marker, python=VENV_1_13, timeout=300)
    assert not any(r["code_ran"] for r in results) and not marker.exists(), results
    # the checkpoint was read (torch 1.13 reads it) and its model built: an xm_transformer without its w2v_path
    assert all("w2v_path" in r["outcome"] for r in results), results


def test_a_stored_model_that_cannot_be_built_without_its_forgotten_paths_is_one_line(lstm_checkpoint, data_bin,
                                                                                    tmp_path):
    """An ``xm_transformer`` checkpoint whose ``load_pretrained_decoder_from`` (here a named pipe: opening it
    would hang) is forgotten cannot be built (fairseq reads a pretrained wav2vec encoder's options while
    building it): fairseq-generate ends in one line naming the checkpoint, no traceback, nothing opened."""
    import subprocess
    import sys

    fifo = tmp_path / "decoder.pt"
    os.mkfifo(fifo)
    state = torch.load(lstm_checkpoint, weights_only=False)
    model = state["cfg"]["model"]
    model.arch = model._name = "xm_transformer"
    model.load_pretrained_decoder_from = str(fifo)
    crafted = tmp_path / "xm.pt"
    torch.save(state, crafted)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "fairseq-generate"), str(data_bin),
                           "--user-dir", USER_DIR, "--cpu", "--path", str(crafted)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO)))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairseq-wean: error: checkpoint {}: its stored model configuration cannot be "
                           "built (".format(crafted)), proc.stderr[-3000:]
    assert "load_pretrained_decoder_from" in last and os.path.exists(fifo)


def test_a_model_that_fails_to_build_with_nothing_forgotten_keeps_its_traceback():
    """Only a checkpoint that lost stored paths is explained: an error while building a model whose
    checkpoint forgot nothing (a bug) is not hidden."""
    from fairseq_wean import checkpoint_safety

    def build_model():
        raise AttributeError("a bug")

    for last, expected in (([None, []], None), (["c.pt", []], None), (["c.pt", ["model.w2v_path"]], "c.pt")):
        checkpoint_safety._LAST_LOADED[:] = last
        try:
            build_model()
        except AttributeError as exc:
            error = checkpoint_safety.unbuildable_error(exc)
        assert (error is None) if expected is None else ("checkpoint c.pt: its stored model configuration cannot "
                                                         "be built (AttributeError: a bug)" in str(error))
    checkpoint_safety._LAST_LOADED[:] = [None, []]
