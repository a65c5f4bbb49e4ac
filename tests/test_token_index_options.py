"""fairseq-train's token-index options of the sentence tasks (``train_files_check.TOKEN_INDEX_OPTIONS``:
--init-token, --separator-token, prepended or inserted into every input) past the input dictionary the task builds:
one line at parse (fairseq: an IndexError in the embedding at the first batch, crash.pt written); an id inside it
parses. Enumerated over every registered task that declares one of the options."""
import pytest
from conftest import USER_DIR, parse_outcome, task_parsers

from fairseq_wean.train_files_check import TOKEN_INDEX_OPTIONS


def _cases():
    return [(task, dest) for task, _cls, parser in task_parsers() for dest in TOKEN_INDEX_OPTIONS
            if dest in {a.dest for a in parser._actions}]


CASES = _cases()


def test_the_enumeration_reaches_the_sentence_tasks():
    assert {("sentence_prediction", "init_token"), ("sentence_prediction", "separator_token"),
            ("sentence_ranking", "init_token")} <= set(CASES), CASES


@pytest.mark.parametrize("task, dest", CASES)
def test_a_token_id_past_the_input_dictionary_is_one_line_at_parse(task, dest, tmp_path, monkeypatch, capsys):
    from fairseq.data import Dictionary

    (tmp_path / "data" / "input0").mkdir(parents=True)
    path = tmp_path / "data" / "input0" / "dict.txt"
    path.write_text("".join("w{} {}\n".format(i, 10 - i) for i in range(6)))
    size = len(Dictionary.load(str(path))) + 1  # the task's load_dictionary adds <mask>
    base = [str(tmp_path / "data"), "--user-dir", USER_DIR, "--task", task, "--arch", "roberta_base",
            "--max-tokens", "100", "--save-dir", str(tmp_path / "ck"), "--num-classes", "2"]
    flag = "--" + dest.replace("_", "-")
    line = parse_outcome("fairseq-train", "get_training_parser", base + [flag, str(size)], monkeypatch, capsys)
    assert line is not None and "{} {}: the input dictionary --task {} builds from {} has {} symbols".format(
        flag, size, task, path, size) in line, line
    line = parse_outcome("fairseq-train", "get_training_parser", base + [flag, str(size - 1)], monkeypatch, capsys)
    assert line is None or flag not in line, line
