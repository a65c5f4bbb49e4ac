"""scripts/mutation_check.py in CI: every mutant still applies to today's code (a mutant whose text
moved away tests nothing), an invalid one fails the check loudly before any test runs, and every
mutant is killed (the whole check, about 3 minutes on one core)."""
import os
import re
import sys

import pytest

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "scripts"))
import mutation_check  # noqa: E402


def test_every_mutant_applies_to_todays_code():
    assert mutation_check.invalid_mutants(mutation_check.REPO) == []
    assert len({m[0] for m in mutation_check.MUTANTS}) == len(mutation_check.MUTANTS)  # ids unique


def test_an_invalid_mutant_fails_the_check_before_any_test(monkeypatch, capsys):
    bogus = ("X1", mutation_check.CORE, "text that is nowhere", "x", "a mutant of code that moved")
    monkeypatch.setattr(mutation_check, "MUTANTS", mutation_check.MUTANTS + [bogus])
    monkeypatch.setattr(mutation_check, "copy_tree", lambda dest: pytest.fail("tests ran"))
    assert mutation_check.main([]) == 1
    err = capsys.readouterr().err
    assert "invalid mutant X1: old text found 0 times in fairseq_wean/models/core_copy.py" in err
    assert "1 of {} mutant(s) no longer apply".format(len(mutation_check.MUTANTS)) in err


def test_every_mutant_is_killed(capsys):
    """``python scripts/mutation_check.py`` as it runs by hand: a copy of the tree, each mutant
    applied in turn, its tests with -x; every mutant must be killed, but for those whose code this
    installation never runs (``RUNS_ONLY_WITH``: U2, torch >= 2.4's branch), which the check itself
    reports as not run (asked of the condition, not exempted by this test)."""
    n = len(mutation_check.MUTANTS)
    assert n >= 33
    rc = mutation_check.main([])
    out = capsys.readouterr().out
    assert "baseline (no mutant): pass" in out, out
    verdicts = dict(re.findall(r"^(\w+) +(killed|survived|untested|not-run) ", out, re.M))
    assert set(verdicts) == {m[0] for m in mutation_check.MUTANTS}, out
    not_run = {mid for mid, (_needs, runs) in mutation_check.RUNS_ONLY_WITH.items() if not runs()}
    assert {mid for mid, verdict in verdicts.items() if verdict == "not-run"} == not_run, out
    assert {mid for mid, verdict in verdicts.items() if verdict not in ("killed", "not-run")} == set(), out
    assert "score: {} of {} killed".format(n - len(not_run), n - len(not_run)) in out and rc == 0, out


def test_a_mutant_of_code_this_installation_never_runs_is_reported_not_run(monkeypatch, tmp_path, capsys):
    """A mutant whose condition is false here is neither applied nor counted, and says what it needs;
    with the condition true it runs like any other (a survivor then fails the check)."""
    (tmp_path / "m.py").write_text("x = 1\n")
    mutant = ("Z2", "m.py", "x = 1", "x = 2", "a mutant of a branch of another torch", ["tests/t.py"])
    monkeypatch.setattr(mutation_check, "RUNS_ONLY_WITH", {"Z2": ("torch >= 99", lambda: False)})
    monkeypatch.setattr(mutation_check, "run_tests", lambda *a, **k: (0, "1 passed", 0.0))
    assert mutation_check.run_mutants(tmp_path, [mutant], None, None) == 0
    out = capsys.readouterr().out
    assert "Z2  not-run" in out and "its code runs only with torch >= 99" in out
    assert "score: 0 of 0 killed (1 not run here" in out
    monkeypatch.setattr(mutation_check, "RUNS_ONLY_WITH", {"Z2": ("torch >= 99", lambda: True)})
    assert mutation_check.run_mutants(tmp_path, [mutant], None, None) == 1
    assert "Z2  survived" in capsys.readouterr().out
    assert (tmp_path / "m.py").read_text() == "x = 1\n"


def test_every_conditional_mutant_is_on_the_list():
    assert set(mutation_check.RUNS_ONLY_WITH) <= {m[0] for m in mutation_check.MUTANTS}


def test_a_mutant_whose_tests_do_not_run_is_not_killed(monkeypatch, tmp_path, capsys):
    """pytest's exit 5 (every test deselected, e.g. one needing data the check leaves out) is no kill."""
    (tmp_path / "m.py").write_text("x = 1\n")
    mutant = ("Z1", "m.py", "x = 1", "x = 2", "a mutant nothing tests", ["tests/t.py::gone"])
    answers = iter([(0, "1 passed", 0.0), (5, "1 deselected", 0.0)])
    monkeypatch.setattr(mutation_check, "run_tests", lambda *a, **k: next(answers))
    assert mutation_check.run_mutants(tmp_path, [mutant], None, None) == 1
    out = capsys.readouterr().out
    assert "Z1  untested" in out and "score: 0 of 1 killed" in out
    assert (tmp_path / "m.py").read_text() == "x = 1\n"
