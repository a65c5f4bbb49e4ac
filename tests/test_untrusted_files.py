"""Untrusted files stay data (issue 43): a published ``scores.json`` under ``--results-dir`` names
no path the comparison runner follows, and a damaged one is one error line naming the file.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, folder_locked_elsewhere, shared_data_dir
from fairseq_wean.compare import runner
from fairseq_wean.errors import FairseqWeanError

PUBLISHED = os.path.join(REPO, "docs", "results", "translation", "lstm-word")  # a real published run
RECIPE = {"tests": {"test2016": {}}}
KEY = ("lstm", "word")


@pytest.fixture
def results(tmp_path):
    """A results directory holding a copy of one real published run, and a secret beside it."""
    folder = tmp_path / "results" / "lstm-word"
    shutil.copytree(PUBLISHED, folder)
    secret = tmp_path / "secret" / "creds.txt"
    secret.parent.mkdir()
    n = sum(1 for _ in open(folder / "test2016.hyp", encoding="utf-8"))
    secret.write_text("password\n" * n)  # the test set's line count: nothing else would notice
    return argparse.Namespace(results_dir=str(tmp_path / "results")), folder


def edit(folder, change):
    path = folder / "scores.json"
    published = json.loads(path.read_text())
    change(published)
    path.write_text(json.dumps(published))


def test_a_real_published_run_is_reused_from_its_own_folder(results):
    args, folder = results
    ev = runner.published_run(args, RECIPE, KEY)
    assert ev["outputs"] == {"test2016": {"plain": str(folder / "test2016.hyp"),
                                          "replace_unk": str(folder / "test2016.replace-unk.hyp")}}
    assert ev["best_epoch"] == json.loads((folder / "scores.json").read_text())["run"]["best_epoch"]


@pytest.mark.parametrize("name", ["../../secret/creds.txt", os.path.abspath("/etc/passwd"), "test2016.replace-unk.hyp"])
def test_scores_json_cannot_point_outside_the_runs_folder(results, name):
    args, folder = results
    edit(folder, lambda p: p["files"]["test2016"].__setitem__("plain", name))
    with pytest.raises(FairseqWeanError) as info:
        runner.published_run(args, RECIPE, KEY)
    message = str(info.value)
    assert str(folder / "scores.json") in message and "files.test2016.plain" in message
    assert "'test2016.hyp' in its own folder" in message


@pytest.mark.parametrize("change,field", [
    (lambda p: p.pop("run"), "no field run"),
    (lambda p: p["run"].__setitem__("params", "many"), "field run.params is str, not int"),
    (lambda p: p["run"].__setitem__("best_epoch", True), "field run.best_epoch is bool, not int"),
    (lambda p: p["run"]["curve"][0].pop("epoch"), "no field run.curve[0].epoch"),
    (lambda p: p["run"]["valid_loss"].__setitem__("1", None), "field run.valid_loss.1 is NoneType"),
    (lambda p: p["files"].__setitem__("test2017", {}), "test set 'test2017', which this task does not have"),
    (lambda p: p["files"]["test2016"].__setitem__("nbest", "test2016.nbest.hyp"), "names output 'nbest'"),
    (lambda p: p.__setitem__("files", ["test2016.hyp"]), "field files is list, not dict"),
])
def test_a_hand_edited_scores_json_is_one_error_naming_file_and_field(results, change, field):
    args, folder = results
    edit(folder, change)
    with pytest.raises(FairseqWeanError) as info:
        runner.published_run(args, RECIPE, KEY)
    assert str(info.value).startswith(str(folder / "scores.json") + ": ") and field in str(info.value)


def test_a_truncated_scores_json_is_one_error_naming_the_file(results):
    args, folder = results
    text = (folder / "scores.json").read_text()
    (folder / "scores.json").write_text(text[: len(text) // 2])
    with pytest.raises(FairseqWeanError, match="scores.json: not valid JSON"):
        runner.published_run(args, RECIPE, KEY)


@pytest.mark.skipif(shared_data_dir("translation") is None, reason="needs ../shared/data (Multi30k)")
def test_the_runner_exits_with_one_line_on_a_hostile_scores_json(results, tmp_path):
    """As a user runs it: ``fairseq-wean-compare ... --reuse-only`` on a contributed results folder."""
    args, folder = results
    edit(folder, lambda p: p["files"]["test2016"].__setitem__("plain", "../../secret/creds.txt"))
    proc = subprocess.run([sys.executable, "-m", "fairseq_wean.compare", "translation", shared_data_dir(), "--tiny",
                           "--runs", "lstm:word", "--reuse-only", "--results-dir", args.results_dir, "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "password" not in proc.stdout + proc.stderr
    assert not list((tmp_path / "out").rglob("*.html")), "a report was written"
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairseq-wean-compare: error: ") and "files.test2016.plain" in last, proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------ checkpoints
# Crafted checkpoints (code in the pickle): tests/test_crafted_checkpoints.py.
LOAD_WITH_AUDIT = r"""
import json, os, sys
planted = set(json.loads(sys.argv[2]))
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and str(args[0]) in planted else None)
import fairseq_wean  # noqa: F401
from fairseq import checkpoint_utils, tasks, utils
from fairseq.data import encoders
overrides = json.loads(sys.argv[3])
state = checkpoint_utils.load_checkpoint_to_cpu(sys.argv[1], arg_overrides=overrides)
cfg = state["cfg"]
# what the hub does with a checkpoint's configuration (fairseq.hub_utils.GeneratorHubInterface)
task = tasks.setup_task(cfg.task)
bpe = encoders.build_bpe(cfg.bpe)
utils.load_align_dict(cfg.generation.replace_unk)
print(json.dumps({"opened": opened, "known_words": cfg.task.known_words, "eval_refs": cfg.task.eval_refs,
                  "model_table": cfg.model.core_align_table, "bpe_dict": cfg.bpe.unk_markers_dict,
                  "in_checkpoint": cfg.model.core_align_table_in_checkpoint}))
"""

# Every plugin option that takes free text is either a path (declared so where it is defined:
# metadata {"path": True} or metavar PATH) or one of these, with what it holds instead.
NOT_A_PATH = {
    "_name": "a registered name", "source_lang": "a language code", "target_lang": "a language code",
    "train_subset": "a split's name", "valid_subset": "a split's name", "best_checkpoint_metric": "a metric's name",
    "eval_bleu_args": "JSON", "eval_bleu_detok": "a tokenizer's name", "eval_bleu_detok_args": "JSON",
    "eval_bleu_remove_bpe": "a post-processing rule's name",
    "data": "a folder every loader gives again (fairseq-generate's DATA, the hub's data_name_or_path)",
}


def test_every_free_text_option_of_the_plugin_is_declared_a_path_or_not():
    """A new option that takes a file must be declared a path (then loading a checkpoint forgets
    its stored value); this fails until it is declared one way or the other."""
    import dataclasses
    import typing

    import fairseq_wean  # noqa: F401
    from fairseq_wean.checkpoint_safety import is_path_option, plugin_options

    undeclared = []
    for component, dest, declaration in plugin_options():
        if isinstance(declaration, argparse.Action):
            free_text = declaration.nargs != 0 and not declaration.choices and declaration.type in (None, str) \
                and not isinstance(declaration, argparse._HelpAction)
        else:
            assert isinstance(declaration, dataclasses.Field)
            free_text = declaration.type in (str, typing.Optional[str])
        if free_text and not is_path_option(declaration) and dest not in NOT_A_PATH:
            undeclared.append("{} {}".format(component, dest))
    assert not undeclared, "free-text options neither declared a path nor listed in NOT_A_PATH: {}".format(undeclared)


def test_loading_a_checkpoint_opens_no_path_stored_in_it(tmp_path):
    """Every path option of every plugin component (task, model, BPE: found by construction),
    and fairseq's generation.replace_unk, planted in a checkpoint: loading it and building what the
    hub builds opens none of them (a named pipe would hang, /dev/zero exhaust memory)."""
    import torch
    from omegaconf import OmegaConf

    import fairseq_wean  # noqa: F401
    from fairseq_wean.checkpoint_safety import is_path_option, plugin_options
    from fairseq_wean.tasks.translation_with_metrics import TranslationWithMetricsConfig

    data = tmp_path / "data"
    data.mkdir()
    for lang in ("src", "tgt"):
        (data / "dict.{}.txt".format(lang)).write_text("\u2581w1 3\n\u2581w2 2\n")  # sentencepiece, for --known-words
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    refs, known = tmp_path / "refs.txt", tmp_path / "known.txt"
    for planted_file in (refs, known):
        planted_file.write_text("w1\n")
    task = OmegaConf.structured(TranslationWithMetricsConfig(
        data=str(data), source_lang="src", target_lang="tgt", eval_sari=True, known_words=str(fifo),
        eval_refs=str(refs), eval_orig="/dev/zero"))
    task = OmegaConf.to_container(task, resolve=False, enum_to_str=True)
    task.update(_name="translation_with_metrics", train_subset="train", valid_subset="valid", dataset_impl=None,
                required_seq_len_multiple=1, best_checkpoint_metric="loss")  # as a saved checkpoint has them
    model = {"_name": "core_copy", "core_align_table": "/dev/zero", "core_align_table_in_checkpoint": False}
    bpe = {"_name": "unk_markers", "unk_markers_dict": str(fifo)}
    sections = {"task": task, "model": model, "bpe": bpe}
    for component, dest, declaration in plugin_options():  # any other path option: planted too
        kind = component.split(" ")[0]
        if is_path_option(declaration) and kind in sections and component.split(" ")[1] == sections[kind]["_name"]:
            sections[kind].setdefault(dest, str(refs))
    from fairseq.dataclass.configs import GenerationConfig

    sections["generation"] = OmegaConf.to_container(OmegaConf.structured(GenerationConfig(replace_unk=str(fifo))),
                                                    resolve=False, enum_to_str=True)
    path = tmp_path / "planted.pt"
    torch.save({"model": {}, "args": None, "cfg": sections, "extra_state": {},
                "optimizer_history": [{"num_updates": 0, "best_loss": 1.0, "lr_scheduler_state": {}}],
                "last_optimizer_state": None}, path)
    planted = [str(fifo), str(refs), str(known), "/dev/zero"]

    def load(overrides):
        proc = subprocess.run([sys.executable, "-c", LOAD_WITH_AUDIT, str(path), json.dumps(planted),
                               json.dumps(overrides)], capture_output=True, text=True, timeout=300, cwd=REPO)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    seen = load({"data": str(data)})
    assert seen == {"opened": [], "known_words": None, "eval_refs": None, "model_table": None, "bpe_dict": None,
                    "in_checkpoint": True}
    # what the caller gives again (the hub's keyword arguments) is the caller's, and is read
    seen = load({"data": str(data), "known_words": str(known)})
    assert seen["known_words"] == str(known) and seen["opened"] == [str(known)]


def test_an_old_style_checkpoint_namespace_forgets_its_paths_too():
    from fairseq_wean.checkpoint_safety import forget_stored_paths

    args = argparse.Namespace(arch="core_copy", core_align_table="/dev/zero", core_align_table_in_checkpoint=False,
                              known_words="/dev/zero", lr=[0.1])
    forget_stored_paths({"args": args, "cfg": None}, {"known_words": "mine.txt"})
    assert vars(args) == {"arch": "core_copy", "core_align_table": None, "core_align_table_in_checkpoint": True,
                          "known_words": "/dev/zero", "lr": [0.1]}  # overrides are applied by fairseq, not here


@pytest.mark.parametrize("flag", ["--out", "--results-dir"])
def test_an_unwritable_output_folder_is_refused_before_any_work(flag, tmp_path):
    """An unwritable --results-dir was found after training and decoding, the checkpoints already
    deleted (issue 43): now one line before anything runs."""
    from fairseq_wean.compare import cli as compare_cli

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    argv = ["translation", str(tmp_path), "--runs", "lstm:word", "--out", str(tmp_path / "out"),
            "--results-dir", str(tmp_path / "res")]
    argv[argv.index(flag) + 1] = str(blocker / "below")  # a path under a regular file
    with pytest.raises(FairseqWeanError, match=r"{} .*a-file/below: cannot write there .*nothing was trained".format(flag)):
        compare_cli.main(argv)
    assert not (tmp_path / "out" / "data").exists()


def test_checkpoints_are_deleted_only_after_the_run_is_published(tmp_path, monkeypatch):
    """A failed publish (a full disk, a bad folder) keeps the checkpoints, so that a rerun decodes
    again instead of training from scratch."""
    args = argparse.Namespace(out=str(tmp_path), results_dir=str(tmp_path / "res"), force=True,
                              keep_checkpoints=False, run_list=[KEY], seed=1)
    ckpt = tmp_path / "runs" / "lstm-word" / "checkpoints"

    def train(*_args):
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / "checkpoint_last.pt").write_bytes(b"weights")
        return 1.0, {}, [], ["fairseq-train"]

    monkeypatch.setattr(runner, "train", train)
    monkeypatch.setattr(runner, "evaluate", lambda *a: {"outputs": {}})

    def failing_publish(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "publish_run", failing_publish)
    with pytest.raises(OSError):
        runner.run_one(args, RECIPE, 0, "lstm", "word")
    assert (ckpt / "checkpoint_last.pt").read_bytes() == b"weights"
    monkeypatch.setattr(runner, "publish_run", lambda _a, _r, _k, ev: ev)
    runner.run_one(args, RECIPE, 0, "lstm", "word")
    assert not ckpt.exists()


def test_one_run_per_output_folder_and_no_stale_lock(tmp_path):
    """Two runs into one --save-dir (or --out) replaced each other's files and both exited 0. The lock
    is the OS's: a live holder keeps it, whatever flag the other run has, and it is free once the
    holder is gone, however it ended (issue 43)."""
    from fairseq_wean import textio

    folder = tmp_path / "ck"
    folder.mkdir()
    with folder_locked_elsewhere(folder) as holder:
        with pytest.raises(FairseqWeanError, match=r"--save-dir .*ck is in use by a running job \(pid {}\)".format(
                holder.pid)):
            textio.lock_folder(str(folder), "--save-dir", "fairseq-train")
    textio.lock_folder(str(folder), "--save-dir", "fairseq-train")  # SIGKILLed holder: free again
    assert "fairseq-train (pid {})".format(os.getpid()) in (folder / ".fairseq-wean.lock").read_text()


def test_published_commands_name_no_path_of_the_machine(tmp_path):
    """scores.json's commands: the comparison's --out is $OUT, the plugin's folder $WEAN, console
    scripts by name (issue 39: they named the checkout and work folders of the machine)."""
    out = str(tmp_path / "cv" / "tr")
    wean = os.path.join(REPO, "fairseq_wean")
    import shlex

    command = shlex.join(["/somewhere/.venv/bin/fairseq-train", out + "/data/word", "--user-dir", wean,
                          "--save-dir", out + "/runs/lstm-word/checkpoints", "--eval-bleu-args", '{"beam": 5}',
                          "--eval-refs", out + "/r.0," + out + "/r.1", "--lr", "0.001"])
    assert runner.portable_command(command, out) == (
        "fairseq-train $OUT/data/word --user-dir $WEAN --save-dir $OUT/runs/lstm-word/checkpoints "
        "--eval-bleu-args '{\"beam\": 5}' --eval-refs $OUT/r.0,$OUT/r.1 --lr 0.001")
    assert runner.portable_command(None, out) is None
    # what is published runs as fairseq-train's argv: the JSON stays one argument
    portable = shlex.split(runner.portable_command(command, out))
    assert portable[portable.index("--eval-bleu-args") + 1] == '{"beam": 5}'


# ------------------------------------------------------------------ planted symlinks and pipes
def published_files(folder):
    """Every file a reuse reads from a published run's folder: its scores.json and each output."""
    names = ["scores.json"] + sorted(json.loads((folder / "scores.json").read_text())["files"]["test2016"].values())
    assert sorted(names) == sorted(os.listdir(folder)), "a published file this test does not plant"
    return names


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_no_published_file_is_read_through_a_link_or_a_pipe(results, tmp_path, plant):
    """git stores symlinks: a contributed results folder can ship test2016.hyp -> a secret. Each
    file a reuse reads, in turn, planted: one line naming it, before any work."""
    args, folder = results
    secret = tmp_path / "secret" / "creds.txt"
    for name in published_files(folder):
        saved = (folder / name).read_bytes()
        (folder / name).unlink()
        if plant == "symlink":
            os.symlink(secret if name != "scores.json" else secret.parent / "scores.json", folder / name)
            (secret.parent / "scores.json").write_bytes(saved if name == "scores.json" else b"{}")
        else:
            os.mkfifo(folder / name)  # opened blocking, a pipe would hang the run
        with pytest.raises(FairseqWeanError) as info:
            runner.published_run(args, RECIPE, KEY)
        message = str(info.value)
        assert str(folder / name) in message and "\n" not in message and "password" not in message
        assert ("symbolic link" in message) if plant == "symlink" else ("not a regular file" in message)
        (folder / name).unlink()
        (folder / name).write_bytes(saved)
    runner.published_run(args, RECIPE, KEY)  # restored: reused again


def test_a_published_run_folder_linked_elsewhere_is_not_read_through(results, tmp_path):
    """The run folder itself a link out of --results-dir (git stores it): refused in one line naming
    the first file read, nothing read through it; the same folder as a real folder is reused."""
    args, folder = results
    elsewhere = tmp_path / "elsewhere" / folder.name
    elsewhere.parent.mkdir()
    shutil.move(str(folder), str(elsewhere))
    os.symlink(elsewhere, folder)
    with pytest.raises(FairseqWeanError) as info:
        runner.published_run(args, RECIPE, KEY)
    message = str(info.value)
    assert "is outside {} (through a symbolic link)".format(os.path.realpath(args.results_dir)) in message
    assert "\n" not in message and str(folder) in message
    os.unlink(folder)
    shutil.move(str(elsewhere), str(folder))
    runner.published_run(args, RECIPE, KEY)


@pytest.mark.parametrize("mode", ["r", "rb", "w", "a+"])
def test_open_in_folder_never_follows_a_link(tmp_path, mode):
    from fairseq_wean import textio

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    os.symlink(victim, folder / "file")
    with pytest.raises(FairseqWeanError, match="is a symbolic link: refused"):
        textio.open_in_folder(str(folder / "file"), mode, str(folder))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file").write_text("x\n")
    os.symlink(outside, folder / "linked")  # a path through a linked directory
    with pytest.raises(FairseqWeanError, match="is outside .* \\(through a symbolic link\\)"):
        textio.open_in_folder(str(folder / "linked" / "file"), mode, str(folder))
    assert victim.read_text() == "precious\n"


def test_the_save_dir_lock_does_not_write_through_a_planted_link(tmp_path):
    from fairseq_wean import textio

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "save"
    folder.mkdir()
    os.symlink(victim, folder / ".fairseq-wean.lock")
    with pytest.raises(FairseqWeanError, match=r"the lock file .*\.fairseq-wean\.lock is a symbolic link"):
        textio.lock_folder(str(folder), "--save-dir", "fairseq-train")
    assert victim.read_text() == "precious\n"


COMPARE_OUTPUTS = ["results.json", "results.md", "results.csv", "valid_curve.png", "report.html"]


@pytest.mark.skipif(shared_data_dir("translation") is None, reason="needs ../shared/data (Multi30k)")
def test_no_comparison_output_is_written_through_a_planted_link(results, tmp_path):
    """Every file fairseq-wean-compare writes into --out, planted as a link to a victim: the victim
    is untouched and the output is a file of its own."""
    args, _folder = results
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    for name in COMPARE_OUTPUTS:
        os.symlink(victim, out / name)
    proc = subprocess.run([sys.executable, "-m", "fairseq_wean.compare", "translation", shared_data_dir(),
                           "--runs", "lstm:word", "--reuse-only", "--results-dir", args.results_dir, "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert victim.read_text() == "precious\n"
    for name in COMPARE_OUTPUTS:
        assert (out / name).is_file() and not (out / name).is_symlink(), name


class RecordingDict(dict):
    """A dict that records which keys are read."""

    def __init__(self, data, seen):
        super().__init__(data)
        self.seen = seen

    def __getitem__(self, key):
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.seen.add(key)
        return super().get(key, default)


@pytest.mark.skipif(shared_data_dir("translation") is None, reason="needs ../shared/data (Multi30k)")
def test_every_field_the_tables_read_is_checked(results, tmp_path, monkeypatch):
    """The validator's promise, by construction: run the tables, the figure and the report on a
    published run, recording every field of its ``run`` they read; each must be in RUN_FIELDS
    (or OPTIONAL_RUN_FIELDS), the fields read_published checks."""
    from fairseq_wean.compare import cli as compare_cli

    args, _folder = results
    seen = set()
    read = runner.read_published

    def recording(path, recipe, *folder):
        published = read(path, recipe, *folder)
        published["run"] = RecordingDict(published["run"], seen)
        return published

    monkeypatch.setattr(runner, "read_published", recording)
    compare_cli.main(["translation", shared_data_dir(), "--runs", "lstm:word", "--reuse-only",
                      "--results-dir", args.results_dir, "--out", str(tmp_path / "out")])
    checked = set(runner.RUN_FIELDS) | set(runner.OPTIONAL_RUN_FIELDS)
    assert seen and seen <= checked | {"outputs"}, sorted(seen - checked)


def test_a_tampered_valid_metric_is_refused(results):
    args, folder = results
    edit(folder, lambda p: p["run"].__setitem__("valid_metric", "loss"))
    with pytest.raises(FairseqWeanError, match="run.valid_metric is 'loss', but this task's runs are validated on 'bleu'"):
        runner.published_run(args, dict(RECIPE, valid={"metric": "bleu"}), KEY)


def test_the_hub_opens_no_bpe_or_tokenizer_file_named_in_a_checkpoint(data_bin, tmp_path):
    """fairseq's own BPEs and tokenizers, every one registered, with every string option planted
    as a path (a named pipe would hang the hub, a secret would be read): the hub forgets them and
    says in one line which file to give."""
    import dataclasses

    import torch
    from fairseq.registry import REGISTRIES

    from test_crafted_checkpoints import run_driver, train_argv

    first = run_driver([{"name": "train", "argv": train_argv(data_bin, tmp_path / "ck")}], tmp_path,
                       tmp_path / "no-marker")
    assert first[0]["outcome"] == "ran to the end", first
    state = torch.load(str(tmp_path / "ck" / "checkpoint_last.pt"), weights_only=False)
    planted = "/nonexistent-planted"
    jobs = []
    for section in ("bpe", "tokenizer"):
        for name, config in sorted(REGISTRIES[section]["dataclass_registry"].items()):
            fields = [f.name for f in dataclasses.fields(config or object) if f.name != "_name"
                      and "str" in str(f.type)] if config is not None else []
            if not fields or name == "unk_markers":  # unk_markers: test_loading_a_checkpoint_opens_no_path_stored_in_it
                continue
            folder = tmp_path / "{}-{}".format(section, name)
            folder.mkdir()
            state["cfg"][section] = dict({"_name": name}, **{f: "{}/{}".format(planted, f) for f in fields})
            torch.save(state, str(folder / "checkpoint_best.pt"))
            jobs.append({"name": "{} {}".format(section, name), "argv": ["hub"], "folder": str(folder),
                         "crafted": str(folder / "checkpoint_best.pt"), "data": str(data_bin)})
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker")
    wrong = []
    for result in results:
        outcome = result["outcome"]
        if planted in outcome or not (outcome == "ran to the end" or outcome.startswith("ImportError")  # a package
                                      or (outcome.startswith("FairseqWeanError") and ("needs the Python package"
                                          in outcome or "with the Python package" in outcome))  # refused before
                                      # anything is read (tokenizer_files: a package, or the one a download needs)
                                      or (outcome.startswith("FairseqWeanError") and "is never opened" in outcome)
                                      # a BPE that cannot decode the model's dictionary form: refused by form,
                                      # before any of its files is read (tokenizer_files' fit check)
                                      or (outcome.startswith("FairseqWeanError") and "cannot decode the model's"
                                          in outcome)):
            wrong.append("{}: {}".format(result["name"], outcome[:300]))
    assert not wrong, "\n".join(wrong)


def comparison_results(folder, change=None, text=None):
    """A finished comparison's results.json (what bench.convergence and publish_results read)."""
    run = {"valid_metric": "bleu", "curve": [{"epoch": 1, "bleu": 10.0}, {"epoch": 2, "bleu": 20.0}],
           "valid_loss": {"1": 4.0, "2": 3.0}}
    results = {"meta": {}, "recipe": {"task": "translation", "valid": {"metric": "bleu"}}, "runs": {"lstm:word": run}}
    if change:
        change(results)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(results) if text is None else text)
    (folder / "results.md").write_text("# translation comparison\n")
    return folder


@pytest.mark.parametrize("change,field", [
    (lambda r: r.clear() or r.update(x=1), "no field runs"),
    (lambda r: r.__setitem__("runs", []), "field runs is list, not dict"),
    (lambda r: r["runs"]["lstm:word"].pop("valid_metric"), "no field runs.lstm:word.valid_metric"),
    (lambda r: r["runs"]["lstm:word"]["curve"][0].__setitem__("epoch", "1"),
     "field runs.lstm:word.curve[0].epoch is str, not int"),
    (lambda r: r["runs"]["lstm:word"]["curve"][1].__setitem__("bleu", None),
     "field runs.lstm:word.curve[1].bleu is NoneType"),
    (lambda r: r["runs"]["lstm:word"]["valid_loss"].__setitem__("x", 1.0), "valid_loss names epoch 'x'"),
    (lambda r: r["runs"].__setitem__("lstm", {}), "runs names 'lstm', not SYSTEM:VOCAB"),
    (lambda r: r.__setitem__("meta", "today"), "field meta is str, not dict"),
])
def test_a_tampered_comparison_results_json_is_one_error_naming_file_and_field(tmp_path, change, field):
    """bench.convergence and examples/publish_results.py read results.json: a KeyError traceback on
    a hand-edited one before; now every field they read is checked (as read_published checks scores.json)."""
    from bench.convergence import read_results

    folder = comparison_results(tmp_path / "compare-translation", change)
    with pytest.raises(FairseqWeanError) as info:
        read_results(str(folder))
    assert str(info.value).startswith(str(folder / "results.json") + ": ") and field in str(info.value)


def test_redrawing_needs_the_recipe_of_results_json(tmp_path):
    from bench.convergence import read_results

    folder = comparison_results(tmp_path / "compare-translation", lambda r: r.pop("recipe"))
    read_results(str(folder))  # bench.convergence does not read it
    with pytest.raises(FairseqWeanError, match="no field recipe"):
        read_results(str(folder), need_recipe=True)


@pytest.mark.parametrize("command", [
    ["-m", "bench.convergence", "{cmp}", "--out", "-"],
    [os.path.join(REPO, "examples", "publish_results.py"), "{cmp}", "--results", "{page}", "--redraw"],
])
@pytest.mark.parametrize("text", ['{"x": 1}', "{not json", "[1, 2]"])
def test_the_comparison_readers_exit_with_one_line_on_a_bad_results_json(tmp_path, command, text):
    folder = comparison_results(tmp_path / "compare-translation", text=text)
    page = tmp_path / "page.md"
    argv = [sys.executable] + [c.format(cmp=folder, page=page) for c in command]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and "results.json" in proc.stderr
    assert not page.exists()
