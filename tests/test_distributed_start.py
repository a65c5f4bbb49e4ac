"""fairseq-train --distributed-world-size N where fairseq would spawn one worker per CUDA device and the machine
has fewer: fairseq asserted "world size is N but have 0 available devices" (a traceback); one line at parse
naming the CPU launcher (distributed.spawn_problem). Every way fairseq starts ranks is tried: spawn (refused
without the devices), an explicit --distributed-init-method (the launcher's ranks), torchrun's and Slurm's
environments (taken)."""
import pytest

from test_option_noops import parse, refused


@pytest.mark.parametrize("argv", [["--cpu", "--distributed-world-size", "2"], ["--distributed-world-size", "3"]])
def test_spawning_more_workers_than_cuda_devices_is_one_line(argv, tmp_path, monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for key in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"):
        monkeypatch.delenv(key, raising=False)
    line = refused("fairseq-train", argv, tmp_path, monkeypatch, capsys)
    assert line.startswith("fairseq-train: error: --distributed-world-size {} makes fairseq-train start one worker "
                           "per CUDA device".format(argv[-1])) and "fairseq-wean-train-cpu-dist" in line, line


@pytest.mark.parametrize("how", ["init-method", "torchrun", "slurm", "enough-devices"])
def test_the_other_ways_of_starting_ranks_are_taken(how, tmp_path, monkeypatch):
    import torch

    argv = ["--distributed-world-size", "2"]
    for key in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: how == "enough-devices")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2 if how == "enough-devices" else 0)
    if how == "init-method":
        argv += ["--cpu", "--distributed-init-method", "tcp://127.0.0.1:1", "--distributed-rank", "0"]
    elif how == "torchrun":
        for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "1"), ("WORLD_SIZE", "2"), ("RANK", "0")):
            monkeypatch.setenv(key, value)
    elif how == "slurm":
        monkeypatch.setenv("SLURM_JOB_NODELIST", "node1")
    parse("fairseq-train", argv, tmp_path, monkeypatch)
