"""ROUGE in a unit that does not fit the text is refused by every tool that computes ROUGE.

By words, rouge-score keeps only a-z and 0-9 (Chinese or Cyrillic references are scored on their
digits); by characters, spaces are not read and an a-z/0-9 run is one token (a Latin line is one
token). ``metrics.rouge_sentence_scores`` is where every ROUGE is computed and where the unit is
checked; this file tries both mistakes on every entry point, and fails when a new caller
computes ROUGE elsewhere or skips the check.
"""
import ast
import json
import os

import pytest

from conftest import USER_DIR, cli, train_args
from fairseq_wean.errors import FairseqWeanError

LATIN = (["the cat sat on the mat", "police arrest two men"], ["the cat sat on a mat", "police arrest 2 men"])
CYRILLIC = (["кошка сидела 2014", "полиция 10"], ["собака лежала 2014", "армия 10"])  # the same numbers
CASES = {"chars on latin": (LATIN, True, "drop --rouge-chars"),
         "words on cyrillic": (CYRILLIC, False, "add --rouge-chars")}


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def score_cli(tmp_path, refs, hyps, chars):
    from fairseq_wean.cli import score

    score.main(["--sys", _write(tmp_path / "sys", hyps), "--refs", _write(tmp_path / "ref", refs),
                "--metrics", "rouge1,rougeL", "--json"] + (["--rouge-chars"] if chars else []))


def report_cli(tmp_path, refs, hyps, chars):
    from fairseq_wean.cli import report

    report.main(["--sys", _write(tmp_path / "sys", hyps), "--refs", _write(tmp_path / "ref", refs),
                 "--orig", _write(tmp_path / "orig", refs), "--metrics", "rouge1,rougeL", "--out", str(tmp_path / "r.html")] + (["--rouge-chars"] if chars else []))


def library_score(tmp_path, refs, hyps, chars):
    from fairseq_wean.scoring import score

    score(hyps, references=[refs], metrics=["rouge1", "rougeL"], rouge_chars=chars)


def library_sentence_scores(tmp_path, refs, hyps, chars):
    from fairseq_wean.scoring import sentence_scores

    sentence_scores(hyps, references=[refs], metric="rougeL", rouge_chars=chars)


def generate_scorer(tmp_path, refs, hyps, chars):
    """fairseq-generate --scoring rouge [--rouge-chars]: the scorer fairseq builds from the CLI."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.scoring import build_scorer

    args = options.parse_args_and_arch(options.get_generation_parser(), [
        str(tmp_path), "--user-dir", USER_DIR, "--path", "x.pt", "--scoring", "rouge"] + (["--rouge-chars"] if chars else []))
    scorer = build_scorer(convert_namespace_to_omegaconf(args).scoring, None)
    for ref, hyp in zip(refs, hyps):
        scorer.add_string(ref, hyp)
    scorer.result_string()


ENTRY_POINTS = [score_cli, report_cli, library_score, library_sentence_scores, generate_scorer]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_every_rouge_tool_refuses_the_wrong_unit(entry, case, tmp_path):
    (refs, hyps), chars, fix = CASES[case]
    with pytest.raises(FairseqWeanError, match=fix):
        entry(tmp_path, refs, hyps, chars)
    entry(tmp_path, refs, hyps, not chars)  # the other unit is the right one: scored


def test_validation_refuses_character_rouge_on_latin_text_before_training(data_bin, tmp_path):
    """fairseq-train --eval-rouge --eval-rouge-chars on conftest's Latin data (word ROUGE on Chinese:
    tests/test_data_forms.py)."""
    proc = cli("fairseq-train", *train_args(data_bin, tmp_path / "ck", "lstm", "--task", "translation_with_metrics",
                                            "--eval-rouge", "--eval-rouge-chars", epochs=1), check=False)
    assert proc.returncode != 0 and "drop --eval-rouge-chars" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not os.path.exists(tmp_path / "ck" / "checkpoint_last.pt")


def _calls(name):
    """(file, enclosing function, call node) of every call of ``name`` in the package."""
    root = os.path.dirname(USER_DIR)
    out = []
    for folder, _, files in os.walk(os.path.join(root, "fairseq_wean")):
        for fname in files:
            if fname.endswith(".py"):
                path = os.path.join(folder, fname)
                tree = ast.parse(open(path, encoding="utf-8").read())
                for func in ast.walk(tree):
                    if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        for node in ast.walk(func):
                            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == name:
                                out.append((os.path.relpath(path, root), func.name, node))
    return out


def test_rouge_is_computed_in_one_place_and_checked_there():
    """rouge-score's scorer is built only by rouge_sentence_scores' helper, and only validation
    (which checked all its references in load_dataset) passes unit_option=None."""
    builders = {(f, fn) for f, fn, _ in _calls("rouge_scorer")}
    assert builders == {("fairseq_wean/scoring/metrics.py", "rouge_sentence_scores")}, builders
    unchecked = {(f, fn) for f, fn, node in _calls("rouge_sentence_scores")
                 if any(k.arg == "unit_option" and isinstance(k.value, ast.Constant) and k.value.value is None
                        for k in node.keywords)}
    assert unchecked == {("fairseq_wean/tasks/translation_with_metrics.py", "metric_statistics")}, unchecked
