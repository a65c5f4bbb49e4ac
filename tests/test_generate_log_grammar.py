"""The generate-log reader's one line grammar (probe B, G1): every defect is refused in one line."""
import pytest

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring.generate_log import GenerateLog

GOOD = [
    "S-0\ta b", "T-0\ta b", "H-0\t-0.5\ta b", "D-0\t-0.5\ta b", "H-0\t-0.9\ta c", "D-0\t-0.9\ta c",
    "S-1\tc d", "T-1\tc d", "H-1\t-0.25\t", "D-1\t-0.25\t",
    "2026-11-28 | INFO | fairseq_cli.generate | Translated 2 sentences (4 tokens) in 0.1s (20.00 sentences/s)",
    "Generate test with beam=5: BLEU4 = 100.00",
]


def test_good_log_reads():
    log = GenerateLog("g.log", GOOD)
    assert log.hypotheses(2, "H") == ["a b", ""] and log.detok[0] == "a b"


def _edit(old, new):
    return [new if line == old else line for line in GOOD]


CASES = {
    "noscore_H": (_edit("H-1\t-0.25\t", "H-1\tc d"), "line 9 (H-1): expected '<score><TAB><hypothesis>'"),
    "noscore_D": (_edit("D-0\t-0.5\ta b", "D-0\t"), "line 4 (D-0): expected '<score><TAB><hypothesis>'"),
    "count": ([l.replace("Translated 2", "Translated 3") for l in GOOD], "says 'Translated 3 sentences' (line 11)"),
    "nbest_worse_first": (_edit("H-0\t-0.9\ta c", "H-0\t-0.1\ta c"), "line 5 (H-0): its score -0.1 is higher"),
    "dup_H_better": (GOOD[:9] + ["H-1\t-0.1\tc d"] + GOOD[9:], "line 10 (H-1): its score -0.1 is higher"),
    "nul_H": (_edit("H-0\t-0.5\ta b", "H-0\t-0.5\ta\x00b"), "line 3 (H-0): the hypothesis holds a control character"),
    "nul_D": (_edit("D-1\t-0.25\t", "D-1\t-0.25\t\x00"), "line 10 (D-1): the hypothesis holds a control character"),
    # the lines of one sentence disagree (probe B02, B04)
    "empty_H_with_D": (_edit("D-1\t-0.25\t", "D-1\t-0.25\tc d"), "line 7 (H-1): the H- line is empty but its D- line"),
    "P_fewer_than_H": (GOOD[:4] + ["P-0\t-0.1 -0.2"] + GOOD[4:],
                       "line 1 (P-0): the P- line has 2 values for an H- line of 2"),
    "P_not_numeric": (GOOD[:4] + ["P-0\t-0.1 x -0.2"] + GOOD[4:], "line 1 (P-0): the P- line has no numeric values"),
}


def test_consistent_sentence_lines_read():
    """A P- line with one value per token and </s>, or more (--post-process joined pieces), is read."""
    for extra in ("-0.1 -0.2 -0.3", "-0.1 -0.2 -0.3 -0.4"):
        log = GenerateLog("g.log", GOOD[:4] + ["P-0\t" + extra] + GOOD[4:])
        assert log.positional[0] == extra


@pytest.mark.parametrize("case", sorted(CASES))
def test_defect_refused_in_one_line(case):
    lines, expected = CASES[case]
    with pytest.raises(FairseqWeanError) as e:
        GenerateLog("g.log", lines)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("fairseq-generate log g.log ") and expected in msg, msg
