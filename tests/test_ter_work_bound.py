"""TER's time is bounded whatever the input: its estimate (:func:`fairseq_wean.scoring.ter.line_work`) reads the
first shift search only, so TER also counts the work it really does (:class:`fairseq_wean.scoring.ter.WorkBound`:
every search, matching pair and candidate row) and stops past ``MAX_WORK["ter"]``
(:func:`fairseq_wean.scoring.bounds.ter_work_bound`) with one line naming the limit: exit 1, nothing written.
Every entry point that computes TER is enumerated; a crafted block swap (blocks of one repeated word swapped with
blocks of another: its later searches look at ~3 times the pairs the estimate counts) whose estimate is under the
bound (lowered here, for speed) is stopped in each; the results stay sacrebleu's (tests/test_ter_exact.py)."""
import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import scores, ter

# blocks of 10 'x' swapped with blocks of 10 'a' / 'b': x x ... a a ... against a a ... x x ...
SWAP_HYP = " ".join(" ".join([c] * 10 + ["x"] * 10) for c in "abababab")
SWAP_REF = " ".join(" ".join(["x"] * 10 + [c] * 10) for c in "abababab")
LINES = 3
# entry point -> systems whose TER it computes (each system's output: its own bound)
ENTRIES = {"fairseq-wean-score": 1, "fairseq-wean-score --compare-to": 2, "fairseq-wean-report": 2, "score": 1,
           "score compare_to": 2, "report.build_report": 2, "fairseq-wean-compare (compare.report.score)": 2}


def counted(hyps, refs):
    work = ter.WorkBound()
    for i, hyp in enumerate(hyps):
        for stream in refs:
            ter.translation_edit_rate(hyp.split(), stream[i].split(), work)
    return work.done


def run(entry, d, hyps, refs, capsys):
    """(exit status or error, the one line) of ``entry`` scoring TER of ``hyps`` (a second system: the same lines)
    against ``refs``: nothing may be written."""
    files = {"sys": hyps, "sys2": list(hyps), "orig": hyps, "ref": refs[0]}
    for name, lines in files.items():
        (d / (name + ".txt")).write_text("".join(line + "\n" for line in lines))
    path = {name: str(d / (name + ".txt")) for name in files}
    out = d / "page.html"
    try:
        if entry.startswith("fairseq-wean-score"):
            from fairseq_wean.cli.score import cli_main
            cli_main(["--sys", path["sys"], "--refs", path["ref"], "--metrics", "ter"] +
                     (["--compare-to", path["sys2"]] if "compare" in entry else []))
        elif entry == "fairseq-wean-report":
            from fairseq_wean.cli.report import cli_main
            cli_main(["--sys", path["sys"], path["sys2"], "--orig", path["orig"], "--refs", path["ref"], "--metrics",
                      "ter", "--out", str(out)])
        elif entry.startswith("score"):
            scores.score(hyps, references=refs, metrics=["ter"], compare_to=list(hyps) if "compare" in entry else None)
        elif entry == "report.build_report":
            from fairseq_wean.report import build
            build.build_report([build.SystemOutput(n, n, list(hyps)) for n in ("a", "b")], hyps, refs, metrics=["ter"])
        else:
            from fairseq_wean.compare import report as compare_report
            compare_report.score(path["sys"], {"orig": "orig.txt", "refs": ["ref.txt"], "metrics": "ter"}, str(d),
                                 compare_to=path["sys2"])
    except SystemExit as e:
        assert capsys.readouterr().out == "" and not out.exists()
        return 1, str(e.code).split(": error: ", 1)[-1]
    except FairseqWeanError as e:
        return "error", str(e)
    return 0, capsys.readouterr().out


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_work_past_the_bound_is_stopped_in_every_entry_point(tmp_path, monkeypatch, capsys, entry):
    hyps, refs = [SWAP_HYP] * LINES, [[SWAP_REF] * LINES]
    systems = ENTRIES[entry]
    estimate = M.input_work("ter", hyps, refs)
    limit = systems * estimate * 6 // 5  # the estimate of every system is under it
    assert counted(hyps, refs) > limit, "not a crafted input any more: its work is within its estimate"
    monkeypatch.setitem(M.MAX_WORK, "ter", limit)
    M.check_line_lengths("ter", hyps, refs, systems=systems)  # the estimate passes
    code, line = run(entry, tmp_path, hyps, refs, capsys)
    expected = ("ter: these {} sentences took more than the {:,} units of work (edit-distance cells of TER's shift "
                "search) this metric takes on one input, counted as it ran".format(LINES, limit))
    assert code in (1, "error") and line.startswith(expected) and "\n" not in line, (code, line)
    assert "stopped at sentence " in line and "score without ter" in line, line


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_work_under_the_bound_is_scored_as_sacrebleu(tmp_path, monkeypatch, capsys, entry):
    """The same input with the bound over its counted work: scored, sacrebleu's TER (the count stops nothing)."""
    from sacrebleu.metrics import TER

    hyps, refs = [SWAP_HYP] * LINES, [[SWAP_REF] * LINES]
    monkeypatch.setitem(M.MAX_WORK, "ter", ENTRIES[entry] * counted(hyps, refs) + 1)
    code, text = run(entry, tmp_path, hyps, refs, capsys)
    assert code == 0, text
    if entry.startswith("score"):
        assert scores.score(hyps, references=refs, metrics=["ter"])["ter"] == TER().corpus_score(hyps, refs).score


def test_no_validation_metric_is_ter():
    """fairseq-train's validation metrics compute no TER (a TER one would need its case above)."""
    from fairseq_wean.tasks.translation_with_metrics import METRIC_FLAGS

    assert "ter" not in METRIC_FLAGS and set(METRIC_FLAGS) == {"bleu", "sari", "rouge1", "rouge2", "rougeL"}


def test_the_count_is_the_work_done():
    """Counted units, by hand: a pair without candidates is one traced search (8 x its cells, x RUN_WORK) and its
    matching pairs; an empty reference one unit; the count of a pair does not depend on the bound's limit."""
    work = ter.WorkBound()
    ter.translation_edit_rate(["a", "b"], ["c", "d"], work)  # no equal word: no pair, no candidate
    # 2 rows of the beam's 3 cells, each row's allocation (3 / 16), x RUN_WORK 3; + the first row (3 cells) x 3
    assert work.done == ter.BeamEditDistance(["c", "d"], 2).traced_work == 8 * (int(3 * (3 + 3 + 2 * 3 / 16)) + 3 * 3)
    empty = ter.WorkBound()
    ter.translation_edit_rate(["a"], [], empty)
    assert empty.done == 1
    big = ter.WorkBound(10 ** 12)
    ter.translation_edit_rate(SWAP_HYP.split(), SWAP_REF.split(), big)
    assert big.done == counted([SWAP_HYP], [[SWAP_REF]]) > ter.line_work(SWAP_HYP.split(), SWAP_REF.split())
