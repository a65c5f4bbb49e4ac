"""One quantity, one range, in every tool: a seed, a thread (or process) count, a top-k, a length in tokens
(:data:`fairseq_wean.cli.options.QUANTITIES`). Before, each tool bounded its own options or none: fairseq-train
refused a seed above numpy's range, fairseq-wean-compare took it and prepared the data first; the CPU launcher
capped its ranks, bench and compare took --threads 100000 (libgomp ran out of memory); core_copy capped
--core-topk at 1024, coverage_report's --topk asked the allocator for 1.4 EB; the models cap their positions,
bench --gen-len 1e8 started work.

The tools are found, not listed (tests/test_option_ranges.py's capture of every parser of preprocess/, bench/,
examples/, fairseq_wean/cli/ and fairseq_wean/compare/): an option named like a quantity
(:data:`~fairseq_wean.cli.options.QUANTITY_OPTION_NAMES`: --seed, --threads, --jobs, --workers, --topk,
--gen-len, ...) must take :func:`fairseq_wean.cli.options.quantity`'s type, or have an upper bound no looser
than the quantity's; a new one without fails here, named ``TOOL OPTION``. Out of range, the parse ends in one
line naming the option, exit status 2, before any work (the work patched to fail)."""
import argparse
import re

import pytest

from fairseq_wean.cli import options
from test_option_ranges import all_parsers, option_name, takes_numbers

# (tool, option) -> the fix: options of a quantity not yet routed through options.quantity (each must still
# offend: once routed, the entry goes); none left
PENDING = {}

# the options the enumeration must reach (a capture that found nothing would pass every check)
EXPECTED = {
    ("fairseq-wean-compare", "--seed"): "seed", ("fairseq-wean-compare", "--seeds"): "seed",
    ("fairseq-wean-compare", "--threads"): "threads", ("fairseq-wean-compare", "--jobs"): "threads",
    ("python -m bench.run", "--threads"): "threads", ("python -m bench.run", "--gen-len"): "length",
    ("python -m bench.flops", "--threads"): "threads", ("python -m bench.cpu_bf16", "--threads"): "threads",
    ("python -m bench.profile", "--gen-len"): "length", ("python -m preprocess.coverage_report", "--topk"): "topk",
    ("fairseq-wean-align-table", "--topk"): "topk",
}


def quantity_of(flag):
    name = flag.lstrip("-")
    found = [q for q, pattern in options.QUANTITY_OPTION_NAMES.items() if re.search(pattern, name)]
    return found[0] if found else None


def high_of(name):
    return options.quantity(name).range[2]


_CAPTURED = []


def quantity_options(monkeypatch):
    """{(tool, option): (quantity, action, parser)} of every numeric option named like a quantity (every tool's
    parser captured once for the module)."""
    if not _CAPTURED:
        _CAPTURED.append(all_parsers(monkeypatch))
    found, missed = _CAPTURED[0]
    assert not missed, missed
    result = {}
    for tool, parser in sorted(found.items()):
        for action in parser._actions:
            if not action.option_strings or not takes_numbers(action):
                continue
            name = quantity_of(option_name(action))
            if name is not None:
                result[(tool, option_name(action))] = (name, action, parser)
    return result


def test_every_option_of_a_quantity_has_its_bound(monkeypatch):
    found = quantity_options(monkeypatch)
    assert {key: q for key, (q, _, _) in found.items() if key in EXPECTED} == EXPECTED, sorted(found)
    offenders = []
    for (tool, flag), (name, action, _) in sorted(found.items()):
        routed = getattr(action.type, "quantity", None) == name
        rng = getattr(action.type, "range", None)
        bounded = rng is not None and rng[2] is not None and rng[2] <= high_of(name)
        if not (routed or bounded) and (tool, flag) not in PENDING:
            offenders.append("{} {} ({}: {})".format(tool, flag, name, "no upper bound" if rng is None or rng[2] is None
                                                     else "<= {} is above {}".format(rng[2], high_of(name))))
        if (tool, flag) in PENDING:
            assert not (routed or bounded), "{} {} is routed now: drop it from PENDING".format(tool, flag)
    assert not offenders, "options of a quantity without its bound (type=fairseq_wean.cli.options.quantity(NAME)):" \
        "\n  " + "\n  ".join(offenders)
    assert set(PENDING) <= set(found), "PENDING names options that are gone: {}".format(set(PENDING) - set(found))


def test_each_routed_option_refuses_one_above_its_bound_and_takes_the_bound(monkeypatch, capsys):
    """Parsed by the tool's own parser: one past the high end is argparse's line naming the option and the reason;
    the high end itself and the option's default are taken."""
    failures = []
    for (tool, flag), (name, action, parser) in sorted(quantity_options(monkeypatch).items()):
        if getattr(action.type, "quantity", None) != name:
            continue
        high = high_of(name)
        text = str(high + 1) if flag != "--seeds" else "1,{}".format(high + 1)
        try:
            parser.parse_args([flag, text])
        except SystemExit as exc:
            last = (capsys.readouterr().err.strip().splitlines() or [""])[-1]
            if exc.code != 2 or flag not in last or "<= {}".format(high) not in last:
                failures.append("{} {} {}: exit {} {!r}".format(tool, flag, text, exc.code, last))
        else:
            failures.append("{} {} {}: accepted".format(tool, flag, text))
        assert action.type(str(high)) in (high, [high])
        if isinstance(action.default, int):
            assert action.default <= high, (tool, flag)
    assert not failures, "\n".join(failures)


def test_the_table_is_the_bounds_of_the_code_that_uses_each_quantity():
    """The seed range is fairseq-train's (numpy's), threads the launcher's ranks per CPU, top-k core_copy's,
    a length the models' positions: one number each, read from where it is enforced."""
    from fairseq_wean import patching
    from fairseq_wean.cli import train_cpu_dist
    from fairseq_wean.modules import model_options

    assert high_of("seed") == patching.FAIRSEQ_RANGES["seed"][2] == 2 ** 32 - 1
    assert high_of("threads") == train_cpu_dist.max_nproc_per_node() >= 4
    assert high_of("topk") == model_options.MODEL_OPTION_MAXIMA["core_topk"][0]
    assert high_of("length") == model_options.MODEL_OPTION_MAXIMA["max_target_positions"][0]
    for name in options.QUANTITIES:
        check = options.quantity(name)
        low = check.range[0]
        assert check(str(low)) == low
        for bad in (str(low - 1), "nan", "1e400", "x"):
            with pytest.raises(argparse.ArgumentTypeError):
                check(bad)


# ------------------------------------------------------------------ the probes' reproducers, run end to end
def _no_work(monkeypatch):
    from bench import run as bench_run
    from bench import synthetic
    from fairseq_wean.compare import runner

    fail = lambda *a, **k: pytest.fail("work started")  # noqa: E731
    monkeypatch.setattr(runner, "prepare", fail)
    monkeypatch.setattr(synthetic, "make", fail)
    monkeypatch.setattr(bench_run, "bench_vocab", fail)


@pytest.mark.parametrize("tool,argv,flag,high", [
    ("compare", ["translation", "DATA", "--tiny", "--runs", "lstm:word", "--seed", "99999999999999999999"], "--seed",
     "seed"),
    ("compare", ["translation", "DATA", "--tiny", "--runs", "lstm:word", "--threads", "100000"], "--threads", "threads"),
    ("compare", ["translation", "DATA", "--jobs", "100000"], "--jobs", "threads"),
    ("bench", ["--workdir", "OUT/bw", "--out", "OUT/bw.md", "--quick", "--gen-len", "100000000"], "--gen-len", "length"),
    ("bench", ["--workdir", "OUT/bw", "--out", "OUT/bw.md", "--quick", "--threads", "100000"], "--threads", "threads"),
    ("coverage", ["--dict", "OUT/d", "--src", "OUT/s", "--tgt", "OUT/t", "--table", "OUT/a", "--topk",
                  "99999999999999"], "--topk", "topk"),
    ("align-table", ["--src", "OUT/s", "--tgt", "OUT/t", "--dict", "OUT/d", "--topk", "5000", "--out", "OUT/x"], "--topk",
     "topk"),
])
def test_the_probes_values_are_one_line_before_any_work(tool, argv, flag, high, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    argv = [a.replace("OUT", str(out)).replace("DATA", str(tmp_path)) for a in argv]
    _no_work(monkeypatch)
    if tool == "compare":
        from fairseq_wean.compare.cli import cli_main
        argv = argv + ["--out", str(out / "cmp")]
    elif tool == "bench":
        from bench.run import main as cli_main
    elif tool == "coverage":
        from preprocess.coverage_report import cli_main
    else:
        from fairseq_wean.cli.align_table import cli_main
    with pytest.raises(SystemExit) as info:
        cli_main(argv)
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert info.value.code == 2 and "Traceback" not in err
    assert "argument {}: must be <= {}".format(flag, high_of(high)) in last, last
    assert list(out.iterdir()) == []  # nothing made
