"""bench.flops and bench.run: FLOPs counted against hand computations, the tables and goals they write."""
import os
import re

import pytest
import torch
import torch.nn as nn

from bench import flops
from bench import run as bench_run

needs_flop_counter = pytest.mark.skipif(flops.missing() is not None, reason="{}".format(flops.missing()))


@needs_flop_counter
def test_an_lstm_forward_counts_its_matrix_products():
    """One LSTM layer, forward: 2 * B * T * 4H * (I + H) FLOPs, also where oneDNN's fused kernel
    (invisible to the counter) would run it."""
    B, T, I, H = 3, 5, 7, 11
    lstm = nn.LSTM(I, H, batch_first=True)
    with torch.no_grad():
        _, counted = flops.count_matmul_flops(lambda: lstm(torch.randn(B, T, I)))
    assert counted == 2 * B * T * 4 * H * (I + H)
    assert torch._C._get_mkldnn_enabled() == torch.backends.mkldnn.is_available()  # restored


class _Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.proj = nn.Linear(i, o)


@needs_flop_counter
def test_training_flops_per_token_is_forward_and_backward_per_target_token():
    """A linear layer on an input without gradient: forward 2*B*I*O, backward (weight gradient
    only) 2*B*I*O; per target token of the batch (``ntokens``)."""
    B, I, O, ntokens = 4, 6, 9, 10
    model = _Model(I, O)

    def criterion(m, sample):
        return m.proj(sample["x"]).pow(2).sum(), 1, {}

    sample = {"x": torch.randn(B, I), "ntokens": ntokens}
    per_token = flops.training_flops_per_token(model, criterion, [sample, sample])
    assert per_token == 2 * (4 * B * I * O) / (2 * ntokens)
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.skipif(flops.missing() is None, reason="this torch counts FLOPs")
def test_without_the_flop_counter_counting_is_one_line():
    """torch < 2.1 (no torch.utils.flop_counter): one line that names the torch it needs."""
    with pytest.raises(RuntimeError, match=r"^FLOP counting needs torch >= 2\.1 \(torch\.utils\.flop_counter\); "
                                           r"this is torch {}$".format(re.escape(torch.__version__))):
        flops.count_matmul_flops(lambda: None)


def test_peak_is_a_plausible_rate():
    peak = flops.peak_matmul_flops(torch.float32, size=128, repeats=2)
    assert 1e7 < peak < 1e13


def test_utilisation_columns():
    """GFLOPs per 1k tokens and GFLOP/s with its share of the peak: flops/token x tok/s."""
    row = {key: 1.0 for key, *_ in bench_run.COLUMNS}
    results = {
        "lstm": dict(row, train_tok_s=1000.0, train_flops_per_token=4e6, train_gflop_s=4.0),
        "wean_lstm": dict(row, train_tok_s=500.0, train_flops_per_token=1e7, train_gflop_s=5.0),
    }
    table = bench_run.table_markdown(8000, results, {"float32": 20e9, "bfloat16": None})
    lines = table.splitlines()
    assert "training GFLOP/s, float32 (share of the float32 peak)" in lines[2]
    assert "bf16" not in lines[2]
    assert lines[5].startswith("| wean_lstm | 500 (0.50x) |")
    assert lines[5].endswith("| 10.00 | 5.0 (25%) |")
    assert lines[4].endswith("| 4.00 | 4.0 (20%) |")
    assert lines[3].count("|") == lines[4].count("|")  # the separator has every column
    # without counts: the table of before
    plain = bench_run.table_markdown(8000, {k: dict(row) for k in results}, {"float32": 20e9})
    assert "GFLOP" not in plain


def test_peaks_line_says_when_bfloat16_is_not_native():
    line = bench_run.peaks_markdown({"float32": 29.04e9, "bfloat16": None})
    assert "float32 29.0 GFLOP/s" in line and "no native bfloat16" in line
    line = bench_run.peaks_markdown({"float32": 29e9, "bfloat16": 97.2e9})
    assert "bfloat16 97.2 GFLOP/s" in line


def test_goals_check_core_copy_at_the_smallest_vocabulary():
    """Issue 42's goal, core_copy >= 1.0x at 8k, is read at the smallest vocabulary only."""
    row = {key: 1.0 for key, *_ in bench_run.COLUMNS}

    def run(train, gen):
        return {"lstm": dict(row, train_tok_s=100.0, gen_sent_s=10.0),
                "core_copy": dict(row, train_tok_s=train, gen_sent_s=gen)}

    text = bench_run.goals_markdown({8000: run(105.0, 9.0), 50000: run(300.0, 20.0)})
    line = next(l for l in text.splitlines() if l.startswith("| core_copy at ~8k"))
    assert "core_copy train @8k: 1.05x; core_copy generate @8k: 0.90x (short by 10.0%)" in line
    assert "@50k" not in line and line.endswith("| **no** |")
    line = next(l for l in bench_run.goals_markdown({8000: run(105.0, 10.0)}).splitlines()
                if l.startswith("| core_copy at ~8k"))
    assert line.endswith("| yes |")


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_a_planted_link_or_pipe_in_the_workdir_is_refused_before_any_work(tmp_path, plant, capsys):
    """The benchmark writes logs and deletes checkpoint folders in --workdir: a link there would
    make it write or delete elsewhere, a pipe would block it."""
    from bench import run as bench_run

    work = tmp_path / "work" / "v8000"
    work.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    if plant == "symlink":
        os.symlink(victim, work / "ck-lstm")
    else:
        os.mkfifo(work / "train-lstm.log")
    with pytest.raises(SystemExit) as info:
        bench_run.main(["--quick", "--workdir", str(tmp_path / "work")])
    assert info.value.code == 2
    assert "is a symbolic link, named pipe or device" in capsys.readouterr().err.strip().splitlines()[-1]
    assert victim.is_dir()
