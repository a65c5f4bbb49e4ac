"""fairseq-wean-train-cpu-dist's options: every fairseq distributed option is classified (set by the launcher,
fairseq's own process count, or passed to fairseq-train), the ones the launcher decides are refused in one
line before any rank starts, its own options refuse a second occurrence, and --nproc-per-node has a highest
value. In-process: no rank ever starts."""
import argparse

import pytest

from fairseq_wean.cli import train_cpu_dist as L

TRAIN = ["data-bin", "--arch", "wean_lstm"]


def fairseq_distributed_options():
    """{field: option strings} of fairseq's DistributedTrainingConfig, as fairseq-train's parser has them."""
    from fairseq.dataclass.configs import DistributedTrainingConfig
    from fairseq.dataclass.utils import gen_parser_from_dataclass

    parser = argparse.ArgumentParser(allow_abbrev=False)
    gen_parser_from_dataclass(parser, DistributedTrainingConfig())
    return {a.dest: tuple(a.option_strings) for a in parser._actions if a.option_strings and a.dest != "help"}


def test_every_fairseq_distributed_option_is_classified_with_fairseqs_flags():
    found = fairseq_distributed_options()
    assert len(found) >= 30, found  # the enumeration reached fairseq's options
    unclassified = sorted(set(found) - set(L.DISTRIBUTED_FIELDS))
    assert not unclassified, "fairseq distributed options the launcher does not classify (SETS, COUNTS or " \
                             "PASSED in train_cpu_dist.DISTRIBUTED_FIELDS): {}".format(unclassified)
    for field, flags in found.items():
        assert set(L.distributed_flags(field)) == set(flags), (field, flags)


def test_the_launcher_refuses_every_flag_it_gives_the_ranks():
    """What rank_command adds is exactly the SETS fields' flags (and --user-dir/--cpu, only when absent)."""
    cmd = L.rank_command(TRAIN + ["--user-dir", "x", "--cpu"], 0, 2, "tcp://127.0.0.1:1")
    added = {a for a in cmd[cmd.index("--cpu") + 1:] if a.startswith("--")}
    sets = {L.distributed_flags(f)[0] for f, role in L.DISTRIBUTED_FIELDS.items() if role == L.SETS}
    assert added <= sets, added - sets
    assert {f for f, role in L.DISTRIBUTED_FIELDS.items() if role == L.COUNTS} == {"distributed_num_procs",
                                                                                  "nprocs_per_node"}


def owned_cases():
    for flag, (field, role) in sorted(L._OWNED_FLAGS.items()):
        takes_value = field != "distributed_no_spawn"
        message = "{} is set by the launcher; remove it".format(flag) if role == L.SETS else \
            "{} is fairseq's own process count, which the launcher sets from --nproc-per-node".format(flag)
        yield pytest.param([flag] + (["4"] if takes_value else []), message, id=flag)
        if takes_value:
            yield pytest.param([flag + "=4"], message, id=flag + "=")


@pytest.mark.parametrize("given,message", list(owned_cases()))
def test_an_option_the_launcher_decides_is_refused_before_any_rank(given, message, monkeypatch):
    monkeypatch.setattr(L.subprocess, "Popen", lambda *a, **k: pytest.fail("a rank started"))
    for argv in (["--nproc-per-node", "1", "--"] + TRAIN + given, ["--nproc-per-node", "1"] + TRAIN + given):
        with pytest.raises(SystemExit) as info:
            L.cli_main(argv)
        text = str(info.value.code)
        assert "\n" not in text and text.startswith(L.PROG + ": error: " + message), text


def test_a_passed_option_is_not_refused(monkeypatch):
    monkeypatch.setattr(L, "launch", lambda train_args, **kw: L.check_options(train_args, 1, 1, 0, "127.0.0.1", None)
                        or 0)
    with pytest.raises(SystemExit) as info:
        L.cli_main(["--nproc-per-node", "1", "--"] + TRAIN + ["--ddp-backend", "legacy_ddp", "--bucket-cap-mb", "5"])
    assert info.value.code == 0


def launcher_options():
    for action in L.get_parser()._actions:
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            value = {"--master-addr": "127.0.0.1", "--log-dir": "d", "--dump-rank-params": "d"}.get(
                action.option_strings[0], "1")
            yield pytest.param(action.option_strings[0], value, id=action.option_strings[0])


@pytest.mark.parametrize("flag,value", list(launcher_options()))
def test_a_launcher_option_given_twice_is_refused(flag, value, capsys, monkeypatch):
    monkeypatch.setattr(L, "launch", lambda *a, **k: pytest.fail("launched"))
    for tail in (["--"] + TRAIN, TRAIN):  # with --, and with parse_known_args handing the rest to fairseq
        with pytest.raises(SystemExit) as info:
            L.cli_main([flag, value, flag, value] + tail)
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert info.value.code == 2 and last == "{}: error: argument {}: given more than once: give each option " \
            "once (argparse would keep only the last value, silently)".format(L.PROG, flag), last


@pytest.mark.parametrize("cpus", [1, 2, 16])
def test_nproc_per_node_has_a_highest_value(cpus, monkeypatch):
    monkeypatch.setattr(L, "usable_cpus", lambda: cpus)
    top = L.NPROC_PER_CPU * cpus
    L.check_number("--nproc-per-node", top)  # accepted
    for value in (top + 1, 100000):
        with pytest.raises(SystemExit) as info:
            L.check_options(["data-bin"], value, 1, 0, "127.0.0.1", None)
        assert str(info.value.code) == (
            "{}: error: --nproc-per-node {} is more than {} per CPU this process may use ({} for its {}): each rank "
            "is a fairseq-train process of its own (hundreds of MiB, a share of the CPUs): give at most {}".format(
                L.PROG, value, L.NPROC_PER_CPU, top, cpus, top))
    assert L.launcher_number("--nproc-per-node").range == (1, int, top, False)
