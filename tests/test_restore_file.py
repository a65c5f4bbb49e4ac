"""No fairseq-train run replaces a better or later checkpoint by accident, whatever checkpoint it starts
from: every start route (--save-dir's checkpoint_last.pt, --restore-file relative or absolute,
--continue-once, --finetune-from-model, with --reset-dataloader or --reset-meters) goes through one
check at the start (fairseq_wean/metric_check.py: ``start_checkpoint``, ``keep_the_stored_best``,
``later_checkpoints``), which refuses another --arch, another --best-checkpoint-metric or direction,
and a run that would overwrite checkpoints of a later point of training, in one line, before any
training, every file of --save-dir byte-identical. One tiny run is trained for the module (5 epochs,
epoch and update checkpoints); each case gets a copy, and all cases run in one driver process."""
import hashlib
import os
import shutil

import pytest

from conftest import REPO, USER_DIR
from test_crafted_checkpoints import run_driver

WEAN = ["--arch", "wean_lstm", "--embed-dim", "16", "--encoder-hidden-size", "16", "--decoder-hidden-size", "16"]
LSTM = ["--arch", "lstm", "--encoder-embed-dim", "16", "--encoder-hidden-size", "16", "--decoder-embed-dim", "16",
        "--decoder-hidden-size", "16", "--decoder-out-embed-dim", "16"]


def argv(data, save_dir, arch, *extra):
    # 400 sentences in batches of 100: 4 updates an epoch; checkpoint_E_U every 3 updates
    return ["train", str(data), "--user-dir", USER_DIR, *arch, "--encoder-layers", "1", "--decoder-layers", "1",
            "--cpu", "--optimizer", "adam", "--lr", "0.005", "--batch-size", "100", "--required-batch-size-multiple", "1", "--seed", "1",
            "--num-workers", "0", "--save-interval-updates", "3", "--save-dir", str(save_dir), *extra]


# the start routes: (name, the save dir's contents, options; {start}: the start checkpoint of the case)
ROUTES = {
    "resume checkpoint_last": ("trained", []),
    "--restore-file relative": ("trained", ["--restore-file", "{relative}"]),
    "--restore-file absolute, another run's": ("trained", ["--restore-file", "{other}"]),
    "--continue-once": ("empty", ["--continue-once", "{other}"]),
    "--finetune-from-model": ("empty", ["--finetune-from-model", "{other}"]),
    "--reset-dataloader": ("trained", ["--reset-dataloader"]),
    "--reset-meters": ("trained", ["--reset-meters"]),
}
# the mistakes: options, and the expected start of the refusal
MISTAKES = {
    "other metric": (["--best-checkpoint-metric", "ppl"], "FairseqWeanError: --best-checkpoint-metric ppl (minimized) "
                                                          "differs from the run that wrote "),
    "other direction": (["--maximize-best-checkpoint-metric"], "FairseqWeanError: --best-checkpoint-metric loss "
                                                               "(maximized) differs from the run that wrote "),
    "other arch": (LSTM, "FairseqWeanError: --arch lstm: "),
    "older epoch, later files present": ([], "FairseqWeanError: --save-dir "),
}
# (route, mistake) -> how the older start is reached, or None where the route has no such case
OLDER = {
    "resume checkpoint_last": None,  # checkpoint_last.pt is the latest point
    "--restore-file relative": ["--restore-file", "{relative2}"],
    "--restore-file absolute, another run's": ["--restore-file", "{other2}"],
    # another run's checkpoints without checkpoint_last.pt: refused when the options are parsed
    "--continue-once": ["--continue-once", "{other2}"],
    "--finetune-from-model": None,  # fairseq starts it at epoch 1 in a folder with no checkpoint_last.pt
    "--reset-dataloader": ["--reset-dataloader"],  # epoch 1 again over checkpoint1.pt ... checkpoint_last.pt
    "--reset-meters": ["--restore-file", "{save}/checkpoint2.pt", "--reset-meters"],
}
CASES = [(route, mistake) for route in ROUTES for mistake in MISTAKES
         if (mistake != "older epoch, later files present" or OLDER[route] is not None)
         and not (route == "--finetune-from-model" and mistake in ("other metric", "other direction"))]
# --finetune-from-model resets the meters and the best score: the pretrained run's metric is no mistake
CONTROLS = {
    "resume": ("trained", []),
    "--restore-file the latest epoch checkpoint": ("trained", ["--restore-file", "{relative}"]),
    "--reset-meters resume": ("trained", ["--reset-meters"]),
    "--finetune-from-model another metric": ("empty", ["--finetune-from-model", "{other}", "--best-checkpoint-metric",
                                                       "ppl"]),
}


def md5s(folder):
    return {name: hashlib.md5((folder / name).read_bytes()).hexdigest() for name in sorted(os.listdir(folder))}


@pytest.fixture(scope="module")
def outcomes(data_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("restore")
    trained = tmp / "trained"
    first = run_driver([{"name": "train", "argv": argv(data_bin, trained, WEAN, "--max-epoch", "5")}], tmp,
                       tmp / "no-marker")
    assert first[0]["outcome"] == "ran to the end", first
    assert {"checkpoint2.pt", "checkpoint5.pt", "checkpoint_3_9.pt", "checkpoint_last.pt"} <= set(os.listdir(trained))
    other = tmp / "other-run"
    shutil.copytree(trained, other)
    jobs, folders = [], {}
    cases = [("case", route, mistake) for route, mistake in CASES] + [("control", name, None) for name in CONTROLS]
    for i, (kind, route, mistake) in enumerate(cases):
        save = tmp / "case{}".format(i)
        contents, extra = (CONTROLS if kind == "control" else ROUTES)[route]
        if mistake == "older epoch, later files present":
            extra = OLDER[route]
            contents = "trained" if route != "--continue-once" else "no last"
        if contents == "empty":
            save.mkdir()
        else:
            shutil.copytree(trained, save)
            if contents == "no last":
                (save / "checkpoint_last.pt").unlink()
        names = {"relative": os.path.relpath(save / "checkpoint5.pt", REPO),  # the driver runs in REPO
                 "relative2": os.path.relpath(save / "checkpoint2.pt", REPO), "other": other / "checkpoint5.pt",
                 "other2": other / "checkpoint2.pt", "save": save}
        options = [a.format(**names) for a in extra]
        arch, mistake_options = WEAN, []
        if mistake == "other arch":
            arch = LSTM
        elif mistake is not None:
            mistake_options = MISTAKES[mistake][0]
        jobs.append({"name": "{} {} {}".format(kind, route, mistake),
                     "argv": argv(data_bin, save, arch, "--max-epoch", "6", *options, *mistake_options)})
        folders[(kind, route, mistake)] = (save, md5s(save))
    results = run_driver(jobs, tmp, tmp / "no-marker")
    return {key: (result, save, before) for (key, (save, before)), result in zip(folders.items(), results)}


@pytest.mark.parametrize("route,mistake", CASES)
def test_every_start_route_refuses_each_mistake_before_training(outcomes, route, mistake):
    result, save, before = outcomes[("case", route, mistake)]
    outcome = result["outcome"]
    if route == "--continue-once" and mistake.startswith("older"):
        assert outcome == "SystemExit: 2", result  # the parse-time check: checkpoints without checkpoint_last.pt
    else:
        assert outcome.startswith(MISTAKES[mistake][1]) and "\n" not in outcome, result
    if mistake.startswith("older") and outcome.startswith("FairseqWeanError"):
        assert "and would overwrite " in outcome and "checkpoint_last.pt" in outcome, outcome
        assert "use another --save-dir, or move them away" in outcome, outcome
        later = outcome.split("would overwrite ")[1].split(" (written later")[0].split(", ")
        # checkpoint2.pt holds the start of epoch 3 at update 8; --reset-dataloader: epoch 1 at update 20
        epoch, updates = (1, 20) if route == "--reset-dataloader" else (3, 8)
        epochs = {name for name in before if name[10:-3].isdigit() and int(name[10:-3]) >= epoch}
        at_updates = {name for name in before if name.startswith("checkpoint_") and name.split("_")[1].isdigit()
                      and int(name.split("_")[1]) >= epoch and int(name.split("_")[2][:-3]) > updates}
        assert set(later) == epochs | at_updates | {"checkpoint_last.pt"}, outcome
        assert epochs and (at_updates or route == "--reset-dataloader"), before
    assert md5s(save) == before, "a file of --save-dir changed"


@pytest.mark.parametrize("name", CONTROLS)
def test_a_legitimate_start_still_trains(outcomes, name):
    result, save, before = outcomes[("control", name, None)]
    assert result["outcome"] == "ran to the end", result
    after = md5s(save)
    assert "checkpoint6.pt" in after or CONTROLS[name][0] == "empty", sorted(after)
    # the earlier epochs are kept as they were
    assert all(after[n] == before[n] for n in before if n.startswith("checkpoint") and n[10:-3].isdigit()), name


def test_the_start_checkpoint_is_read_once(tmp_path):
    """The state the start checks read is what fairseq's own read of the same unchanged file gets, once."""
    import torch
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401  (the patches)
    from fairseq_wean.fixes_training import read_start_checkpoint

    path = tmp_path / "checkpoint_last.pt"
    state = {"cfg": {"model": {"_name": "lstm"}}, "extra_state": {"train_iterator": {"epoch": 2}},
             "optimizer_history": [{"criterion_name": "x", "num_updates": 3, "best_loss": 1.5}]}
    torch.save(state, str(path))
    checked = read_start_checkpoint(str(path))
    assert checkpoint_utils.load_checkpoint_to_cpu(os.path.relpath(path)) is checked  # handed over
    again = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert again is not checked and again["optimizer_history"] == checked["optimizer_history"]  # once only
    read_start_checkpoint(str(path))
    torch.save(dict(state, extra_state={"train_iterator": {"epoch": 3}}), str(path))  # changed since: read anew
    assert checkpoint_utils.load_checkpoint_to_cpu(str(path))["extra_state"]["train_iterator"]["epoch"] == 3
