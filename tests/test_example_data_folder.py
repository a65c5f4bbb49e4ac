"""The example scripts that load a checkpoint read their dictionaries from --data only, never from
the data folder the checkpoint names (it may be another machine's, or planted): without --data they
stop with one line before anything is opened (the checkpoint here is a named pipe: opening it would
block)."""
import os
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPTS = {
    "word_attention_figure3.py": ["--source", "w1 w2", "--output", "{tmp}/fig.png"],
    "word_attention_gates.py": [],
}


def test_every_example_that_loads_a_checkpoint_is_listed():
    """A new example that calls load_model (or fairseq's loaders) must be tried here."""
    examples = os.path.join(REPO, "examples")
    loaders = {name for name in os.listdir(examples) if name.endswith(".py")
               and any(call in open(os.path.join(examples, name), encoding="utf-8").read()
                       for call in ("load_model(", "load_model_ensemble", "from_pretrained("))}
    assert loaders == set(SCRIPTS)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_an_example_without_data_stops_in_one_line_before_opening_anything(script, tmp_path):
    checkpoint = tmp_path / "checkpoint.pt"
    os.mkfifo(checkpoint)
    argv = [sys.executable, os.path.join(REPO, "examples", script), "--path", str(checkpoint)]
    argv += [a.format(tmp=tmp_path) for a in SCRIPTS[script]]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=REPO))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and lines == [
        "fairseq-wean: error: --data is required: the data-bin folder with the dictionaries {} was trained with "
        "(the folder a checkpoint names is never read)".format(checkpoint)], proc.stderr[-2000:]
    assert not (tmp_path / "fig.png").exists()
