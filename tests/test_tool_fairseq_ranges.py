"""A tool's option that becomes one of fairseq's options is checked with fairseq's range, when the tool parses
it: one line, before any work (bench.run took --max-tokens 99999999999, made its synthetic data and measured
the machine's peaks, then fairseq-train refused the value with its usage text inside a RuntimeError traceback).

The class, found, not listed:

* every numeric option of every tool (tests/test_option_ranges.py's capture of every parser of preprocess/,
  bench/, examples/, fairseq_wean/cli/, fairseq_wean/compare/) named as one of fairseq's ranged options
  (:mod:`fairseq_wean.option_ranges`) has a range inside fairseq's row;
* every ``"--fairseq-flag", cfg.option`` pair of the command lines bench/ builds (a scan of its source) hands
  on a bench option whose range is inside the flag's row (--updates becomes --max-update, --gen-len
  --max-len-b and --min-len, ...).

``bench.run.fairseq_ranged`` is the type that reads the row; the reproducer runs end to end below.
"""
import ast
import glob
import os

import pytest

from fairseq_wean.option_ranges import FAIRSEQ_RANGES, GENERATION_RANGES, SHARDING_RANGES
from test_option_ranges import REPO, all_parsers, option_name, takes_numbers

ROWS = {**FAIRSEQ_RANGES, **SHARDING_RANGES, **GENERATION_RANGES}  # as patching._ranged_actions: generation first
# (tool, option): the change that routes it (each must still offend; once routed, the entry goes)
PENDING = {}
# what the enumerations must reach (a capture or scan that found nothing would pass every check)
EXPECTED_NAMED = {("python -m bench.run", "--max-tokens"), ("python -m bench.flops", "--max-tokens"),
                  ("python -m bench.profile", "--max-tokens")}
EXPECTED_HANDED = {("bench/run.py", "--max-tokens", "max_tokens"), ("bench/run.py", "--max-update", "updates"),
                   ("bench/run.py", "--log-interval", "interval"), ("bench/run.py", "--max-len-b", "gen_len"),
                   ("bench/run.py", "--min-len", "gen_len")}


def within(rng, row):
    """True when every value of ``rng`` (an at_least range) is inside ``row``."""
    if rng is None:
        return False
    low, _, high, above = rng
    row_low, _, row_high, row_above = row
    low_ok = low > row_low or low == row_low and (above or not row_above)
    return low_ok and (row_high is None or high is not None and high <= row_high)


_CAPTURED = []


def parsers(monkeypatch):
    if not _CAPTURED:
        found, missed = all_parsers(monkeypatch)
        assert not missed, missed
        _CAPTURED.append(found)
    return _CAPTURED[0]


def offenders(found):
    named, bad = set(), {}
    for tool, parser in sorted(found.items()):
        for action in parser._actions:
            if action.option_strings and takes_numbers(action) and action.dest in ROWS:
                named.add((tool, option_name(action)))
                rng = getattr(action.type, "range", None)
                if not within(rng, ROWS[action.dest]):
                    bad[(tool, option_name(action))] = "{} outside fairseq's {}".format(rng, ROWS[action.dest])
    return named, bad


def test_every_tool_option_named_as_a_fairseq_option_has_fairseqs_range(monkeypatch):
    named, bad = offenders(parsers(monkeypatch))
    assert EXPECTED_NAMED <= named, sorted(named)
    assert set(PENDING) <= set(bad), "routed now, drop from PENDING: {}".format(set(PENDING) - set(bad))
    new = {k: v for k, v in bad.items() if k not in PENDING}
    assert not new, "options with fairseq's name outside fairseq's range (bench.run.fairseq_ranged(DEST)): " \
        "{}".format(new)


def handed_on(path):
    """[(flag, cfg attribute)] of every ``"--flag", cfg.NAME`` pair in a list or tuple of ``path``'s source."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    pairs = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            for first, second in zip(node.elts, node.elts[1:]):
                if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("--") \
                        and isinstance(second, ast.Attribute) and isinstance(second.value, ast.Name) \
                        and second.value.id == "cfg":
                    pairs.append((first.value, second.attr))
    return pairs


def test_every_bench_option_handed_to_fairseq_has_fairseqs_range(monkeypatch):
    from bench import run as bench_run

    actions = {a.dest: a for a in bench_run.get_parser()._actions}
    seen, bad = set(), []
    for path in sorted(glob.glob(os.path.join(REPO, "bench", "*.py"))):
        rel = os.path.relpath(path, REPO)
        for flag, attr in handed_on(path):
            dest = flag[2:].replace("-", "_")
            if dest not in ROWS or attr not in actions:
                continue  # not a ranged fairseq option (bench.flops' own --batches: its parser checks it)
            seen.add((rel, flag, attr))
            rng = getattr(actions[attr].type, "range", None)
            if not within(rng, ROWS[dest]):
                bad.append("{}: {} {} <- --{} {}".format(rel, flag, ROWS[dest], attr.replace("_", "-"), rng))
    assert EXPECTED_HANDED <= seen, sorted(seen)
    assert not bad, bad


def test_fairseq_ranged_narrows_fairseqs_row():
    from bench.run import fairseq_ranged

    assert fairseq_ranged("max_tokens").range == GENERATION_RANGES["max_tokens"]
    assert fairseq_ranged("max_update", 1, 10).range == (1, int, 10, False)
    assert fairseq_ranged("max_tokens", high=2 ** 40).range[2] == 2 ** 31 - 1  # never looser than fairseq's


def test_planted_option_outside_the_row_is_found():
    import argparse

    from fairseq_wean.errors import at_least

    p = argparse.ArgumentParser()
    p.add_argument("--max-tokens", type=at_least(1))
    p.add_argument("--beam", type=at_least(1, high=5))
    p.add_argument("--seed", type=at_least(-1, high=5))
    _, bad = offenders({"planted": p})
    assert sorted(bad) == [("planted", "--max-tokens"), ("planted", "--seed")]


@pytest.mark.parametrize("tool,flag,value", [("run", "--max-tokens", "99999999999"),
                                             ("run", "--updates", "1000001"), ("run", "--interval", "0"),
                                             ("flops", "--max-tokens", "2147483648"),
                                             ("profile", "--max-tokens", "2147483648")])
def test_the_reproducer_is_one_line_before_any_work(tool, flag, value, tmp_path, monkeypatch, capsys):
    from bench import flops, profile, synthetic
    from bench import run as bench_run

    fail = lambda *a, **k: pytest.fail("work started")  # noqa: E731
    for module, name in ((synthetic, "make"), (bench_run, "bench_vocab"), (bench_run, "measure_peaks"),
                         (bench_run, "run_process"), (flops, "count_model"), (profile, "build")):
        monkeypatch.setattr(module, name, fail)
    out = tmp_path / "out"
    out.mkdir()
    main = {"run": bench_run.main, "flops": flops.main, "profile": profile.main}[tool]
    argv = {"run": ["--quick", "--workdir", str(out / "bw"), "--out", str(out / "bw.md")],
            "flops": ["--count", "lstm", "--data-bin", str(out)],
            "profile": ["--workdir", str(out / "bw"), "--out", str(out / "p.md")]}[tool] + [flag, value]
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("error: argument {}: must be >= {}, got {}".format(
        flag, {"--interval": "1"}.get(flag, "1 and <= {}".format(
            {"--updates": 1000000}.get(flag, 2 ** 31 - 1))), value)), err
    assert list(out.iterdir()) == []
