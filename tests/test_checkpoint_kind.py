"""An option that names a checkpoint whose kind matters gets a checkpoint of that kind, or one line at parse
(:mod:`fairseq_wean.checkpoint_kind`, read from the stored configuration without running anything or reading
the weights).

Every member of ``checkpoint_kind.CHECKED`` (option x command) is tried with a checkpoint of the wrong kind
(refused: argparse's one line, exit 2, before any work) and of the right kind (accepted), for every form a stored
configuration takes (fairseq >= 0.10's ``cfg`` dict with a dict or an ``argparse.Namespace`` model section, older
``args`` only, torch's legacy container). The checkpoints are written here with the stored configuration alone:
what the check reads. fairseq-train's start checkpoint of another --arch is refused at its start
(tests/test_restore_file.py); the same model built with other sizes (fairseq's "Cannot load model parameters"
traceback there) is one line too (``fixes_training``), tried last here.
"""
import argparse
import os
import shutil
import sys

import pytest
import torch
from conftest import USER_DIR

LM = ("transformer_lm", "language_modeling")
PAIR = ("transformer", "translation")
FORMS = ("cfg-dict", "cfg-namespace", "args", "legacy")


def write_checkpoint(path, arch, task, form):
    """A checkpoint whose stored configuration names ``arch`` and ``task`` in ``form``; a tensor beside it."""
    if form == "cfg-dict":
        state = {"cfg": {"model": {"_name": arch}, "task": {"_name": task}}}
    elif form == "cfg-namespace":
        state = {"cfg": {"model": argparse.Namespace(arch=arch, _name=arch), "task": {"_name": task}}}
    else:
        state = {"args": argparse.Namespace(arch=arch, task=task)}
    state["model"] = {"weight": torch.zeros(3)}
    torch.save(state, str(path), _use_new_zipfile_serialization=form != "legacy")
    return str(path)


@pytest.fixture(scope="module")
def folders(data_bin, tmp_path_factory):
    """(translation data folder, with the target dictionary as dict.txt, which an --lm-path language model is built
    over; language modeling data folder: the source side of the same data)."""
    data = tmp_path_factory.mktemp("data") / "data-bin"
    shutil.copytree(str(data_bin), str(data))
    shutil.copy(str(data / "dict.tgt.txt"), str(data / "dict.txt"))
    lm = tmp_path_factory.mktemp("lm-bin")
    shutil.copy(os.path.join(data_bin, "dict.src.txt"), lm / "dict.txt")
    for split in ("train", "valid", "test"):
        for ext in ("bin", "idx"):
            shutil.copy(os.path.join(data_bin, "{}.src-tgt.src.{}".format(split, ext)), lm / "{}.{}".format(split, ext))
    return str(data), str(lm)


# (case, command, parser, option, wrong kind, right kind, argv: {ck} the checkpoint, {data}/{lm} the folders)
CASES = [
    ("generate --lm-path", "fairseq-generate", "get_generation_parser", "lm_path", PAIR, LM,
     ["{data}", "--path", "{pair}", "--lm-path", "{ck}", "--lm-weight", "0.1"]),
    ("generate --path (translation)", "fairseq-generate", "get_generation_parser", "path", LM, PAIR,
     ["{data}", "--path", "{ck}"]),
    ("generate --path (ensemble)", "fairseq-generate", "get_generation_parser", "path", LM, PAIR,
     ["{data}", "--path", "{pair}:{ck}"]),
    ("generate --path (language_modeling)", "fairseq-generate", "get_generation_parser", "path", PAIR, LM,
     ["{lm}", "--task", "language_modeling", "--path", "{ck}"]),
    ("interactive --path", "fairseq-interactive", "get_interactive_generation_parser", "path", LM, PAIR,
     ["{data}", "--path", "{ck}"]),
    ("validate --path", "fairseq-validate", "get_validation_parser", "path", LM, PAIR,
     ["{data}", "--task", "translation", "--max-tokens", "100", "--path", "{ck}"]),
    ("eval-lm --path", "fairseq-eval-lm", "get_eval_lm_parser", "path", PAIR, LM,
     ["{lm}", "--path", "{ck}", "--max-tokens", "100"]),
]
MESSAGES = {  # the start of each refusal (after "fairseq-X: error: ")
    "lm_path": "--lm-path {ck}: its model is --arch transformer (not a language model, --task translation), and "
               "fairseq-generate's --lm-path needs a language model",
    "path": "--path {ck}: its model is --arch {arch} (",
}


def test_every_checked_option_and_command_is_tried():
    from fairseq_wean.checkpoint_kind import CHECKED

    tried = {(option, command.replace("fairseq-", "").replace("-", "_")) for _, command, _, option, *_ in CASES}
    for dest, commands in CHECKED:
        for command in commands:
            assert (dest, command) in tried, (dest, command)


def _parse(command, build, argv, monkeypatch):
    import fairseq_wean  # noqa: F401  (the plugin, as --user-dir loads it)
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command])
    return options.parse_args_and_arch(getattr(options, build)(), argv + ["--user-dir", USER_DIR, "--cpu"])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_a_checkpoint_of_the_wrong_kind_is_one_line_at_parse(case, form, folders, tmp_path, monkeypatch, capsys):
    _, command, build, option, wrong, right, argv = next(c for c in CASES if c[0] == case)
    data, lm = folders
    pair = write_checkpoint(tmp_path / "pair.pt", *PAIR, "cfg-dict")
    for kind, refused in ((wrong, True), (right, False)):
        ck = write_checkpoint(tmp_path / "ck.pt", *kind, form)
        words = [w.format(ck=ck, pair=pair, data=data, lm=lm) for w in argv]
        before = sorted(os.listdir(tmp_path))
        capsys.readouterr()
        try:
            _parse(command, build, words, monkeypatch)
            outcome = None
        except SystemExit as exc:
            lines = capsys.readouterr().err.strip().splitlines()
            outcome = exc.code, lines[-1] if lines else ""
        assert sorted(os.listdir(tmp_path)) == before  # nothing written
        if not refused:
            assert outcome is None, outcome
            continue
        assert outcome is not None, "{} ({}): accepted".format(case, kind)
        code, line = outcome
        start = "{}: error: {}".format(command, MESSAGES[option].format(ck=ck, arch=kind[0]))
        assert code == 2 and line.startswith(start), (line, start)


def test_real_checkpoints_are_read_by_their_stored_configuration(tmp_path):
    """The reader returns what torch's full load holds (every form above), and nothing for a file that is no
    checkpoint (left to the loaders' own lines)."""
    from fairseq.models.transformer import TransformerModel
    from fairseq.models.transformer_lm import TransformerLanguageModel

    from fairseq_wean.checkpoint_kind import stored_model

    for form in FORMS:
        assert stored_model(write_checkpoint(tmp_path / (form + ".pt"), *LM, form)) == (
            TransformerLanguageModel, "transformer_lm", "language_modeling")
        assert stored_model(write_checkpoint(tmp_path / (form + "2.pt"), *PAIR, form))[0] is TransformerModel
    (tmp_path / "text.pt").write_text("not a checkpoint")
    assert stored_model(str(tmp_path / "text.pt")) is None
    assert stored_model(str(tmp_path / "missing.pt")) is None


def test_parameters_of_other_sizes_at_the_training_start_are_one_line():
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.fixes_training import _wrap_parameters_that_do_not_fit

    def fairseqs_load(self, filename, *args, **kwargs):  # what fairseq's Trainer.load_checkpoint raises
        try:
            raise RuntimeError("Error(s) in loading state_dict for TransformerModel:\n\tsize mismatch for "
                               "encoder.embed_tokens.weight: copying a param with shape torch.Size([9, 16]) from "
                               "checkpoint, the shape in current model is torch.Size([9, 32]).")
        except Exception:
            raise Exception("Cannot load model parameters from checkpoint {}; please ensure that the "
                            "architectures match.".format(filename))

    with pytest.raises(FairseqWeanError) as info:
        _wrap_parameters_that_do_not_fit(fairseqs_load)(None, "ck.pt")
    assert str(info.value) == (
        "checkpoint ck.pt: its parameters do not fit the model this run builds (size mismatch for "
        "encoder.embed_tokens.weight: copying a param with shape torch.Size([9, 16]) from checkpoint, the shape in "
        "current model is torch.Size([9, 32]).); nothing was trained: give the model options the checkpoint was "
        "trained with, or start without it")

    def other(self, filename):
        raise ValueError("another failure")

    with pytest.raises(ValueError):  # not fairseq's load failure: raised as it is
        _wrap_parameters_that_do_not_fit(other)(None, "ck.pt")


def registered_tasks():
    import fairseq_wean  # noqa: F401  (the plugin's tasks registered too)
    from fairseq.tasks import TASK_REGISTRY

    return sorted(TASK_REGISTRY)


# the language modeling tasks of fairseq 0.12 (speech_dlm_task: 0.12.3): those with an eval_lm_dataloader
EVAL_LM_TASKS = {"language_modeling", "multilingual_language_modeling", "speech_dlm_task"}


@pytest.mark.parametrize("task", registered_tasks())
def test_eval_lm_with_a_task_that_is_no_language_modeling_task_is_one_line(task):
    """fairseq-eval-lm calls its task's eval_lm_dataloader after loading the model and the data: every registered
    task without one (translation_with_metrics, translation, ...) was an AttributeError traceback there."""
    from fairseq_wean.checkpoint_kind import checkpoint_kind_problem, eval_lm_tasks

    assert {"language_modeling", "multilingual_language_modeling"} <= set(eval_lm_tasks()) <= EVAL_LM_TASKS
    args = argparse.Namespace(task=task, path=None)
    problem = checkpoint_kind_problem(args, "eval_lm")
    if task in EVAL_LM_TASKS:
        assert problem is None, problem
    else:
        assert problem is not None and "\n" not in problem, task
        assert problem.startswith("--task {}: fairseq-eval-lm evaluates a language model through".format(task))
        assert "language_modeling" in problem
    assert checkpoint_kind_problem(args, "validate") is None  # the other commands run any task


def test_eval_lm_with_a_translation_task_is_refused_at_parse(folders, tmp_path, monkeypatch, capsys):
    data, _ = folders
    ck = write_checkpoint(tmp_path / "ck.pt", *PAIR, "cfg-dict")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(SystemExit) as info:
        _parse("fairseq-eval-lm", "get_eval_lm_parser", [data, "--task", "translation_with_metrics", "--path", ck,
                                                          "--max-tokens", "100"], monkeypatch)
    lines = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and lines[-1].startswith(
        "fairseq-eval-lm: error: --task translation_with_metrics: fairseq-eval-lm evaluates a language model"), lines
    assert sorted(os.listdir(tmp_path)) == before


def lm_with_rows(path, rows):
    """A language model checkpoint (its stored configuration) whose embedding table has ``rows`` rows."""
    state = {"cfg": {"model": {"_name": LM[0]}, "task": {"_name": LM[1]}},
             "model": {"decoder.embed_tokens.weight": torch.zeros(rows, 4)}}
    torch.save(state, str(path))
    return str(path)


def _target_size(data):
    with open(os.path.join(data, "dict.tgt.txt"), encoding="utf-8") as f:
        return sum(1 for _ in f) + 4  # fairseq's 4 special words


# case -> (what DATA/dict.txt is: None (absent) or the dictionary copied there, LM rows - target size, the line's start
# after "--lm-path LM: "; None: accepted)
LM_DICTIONARY_CASES = {
    "the-target-dictionary": ("dict.tgt.txt", 0, None),
    "no-dict-txt": (None, 0, "fairseq builds the language model over {data}/dict.txt (its task reads the translation "
                             "data folder), which is missing: give a language model trained on the target dictionary"),
    "another-dictionary": (lambda lines: lines + ["zzz-other-word 1\n"], 0, "fairseq builds the language model over "
                           "{data}/dict.txt ({n} words) and fuses its scores, id by id, with the translation model's "
                           "over the target dictionary {data}/dict.tgt.txt ({t} words), and they differ from "
                           "line {n} "),
    "same-size-other-order": (lambda lines: [lines[1], lines[0]] + lines[2:], 0, "fairseq builds the language model "
                              "over {data}/dict.txt ({t} words) and fuses its scores, id by id, with the translation "
                              "model's over the target dictionary {data}/dict.tgt.txt ({t} words), and they differ "
                              "from line 1 on: "),
    "target-dictionary-other-model-size": ("dict.tgt.txt", 3, "its model embeds {rows} words, and the target "
                                                              "dictionary {data}/dict.tgt.txt holds {size}"),
}


@pytest.mark.parametrize("case", sorted(LM_DICTIONARY_CASES))
def test_lm_path_needs_the_target_dictionary(case, data_bin, tmp_path, monkeypatch, capsys):
    """fairseq-generate --lm-path: the language model is built over DATA/dict.txt and fused id by id with the
    translation model over DATA/dict.TGT.txt: the same words in the same order, and the language model's embedding
    table of that size, or one line at parse (a size-mismatch traceback after loading both models, or scores fused on
    other words' ids at equal sizes)."""
    dict_txt, extra, start = LM_DICTIONARY_CASES[case]
    data = tmp_path / "data"
    shutil.copytree(str(data_bin), str(data))
    if dict_txt is not None:
        with open(str(data / "dict.tgt.txt"), encoding="utf-8") as f:
            lines = f.readlines()
        with open(str(data / "dict.txt"), "w", encoding="utf-8") as f:
            f.writelines(lines if dict_txt == "dict.tgt.txt" else dict_txt(lines))
    size = _target_size(str(data))
    lm = lm_with_rows(tmp_path / "lm.pt", size + extra)
    pair = write_checkpoint(tmp_path / "pair.pt", *PAIR, "cfg-dict")
    before = sorted(os.listdir(str(data)))
    try:
        _parse("fairseq-generate", "get_generation_parser", [str(data), "--path", pair, "--lm-path", lm,
                                                             "--lm-weight", "0.1"], monkeypatch)
        outcome = None
    except SystemExit as exc:
        outcome = exc.code, capsys.readouterr().err.strip().splitlines()[-1]
    assert sorted(os.listdir(str(data))) == before
    if start is None:
        assert outcome is None, outcome
        return
    expected = "fairseq-generate: error: --lm-path {}: {}".format(lm, start.format(
        data=data, rows=size + extra, size=size, t=size - 4, n=size - 3))
    assert outcome is not None and outcome[0] == 2 and outcome[1].startswith(expected), (outcome, expected)
