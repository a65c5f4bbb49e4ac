"""bench.convergence: time to the best validation score, read from a comparison run's files."""
import json
import os

import pytest

from bench import convergence

VALID = "2026-11-22 06:36:04 | INFO | valid | epoch {:03d} | valid on 'valid' subset | loss {} | ppl 1 | num_updates {}"
TRAIN = "2026-11-22 06:36:04 | INFO | train | epoch {:03d} | loss 9.0 | ppl 1 | num_updates {} | train_wall 1 | wall {}"
# --log-format json, as fairseq-wean-compare runs fairseq-train (values are strings, as fairseq writes them)
JSON_INNER = ('2026-11-22 06:36:04 | INFO | train_inner | {{"epoch": {0}, "update": {0}.0, "loss": "9.1", '
              '"num_updates": "{1}", "train_wall": "1", "wall": "{2}"}}')
JSON_VALID = ('2026-11-22 06:36:04 | INFO | valid | {{"epoch": {}, "valid_loss": "{}", "valid_ppl": "1", '
              '"valid_num_updates": "{}"}}')
JSON_TRAIN = ('2026-11-22 06:36:04 | INFO | train | {{"epoch": {}, "train_loss": "9.0", "train_num_updates": "{}", '
              '"train_train_wall": "1", "train_wall": "{}"}}')


def write_run(root, system, vocab, losses, walls, log_format="json"):
    folder = os.path.join(root, "runs", "{}-{}".format(system, vocab))
    os.makedirs(folder)
    with open(os.path.join(folder, "train.log"), "w") as f:
        for epoch, (loss, wall) in enumerate(zip(losses, walls), 1):
            if log_format == "json":
                # an inner record whose wall is not the epoch's, and a valid1 subset's record
                f.write(JSON_INNER.format(epoch, epoch * 10 - 1, wall - 1) + "\n")
                f.write(JSON_VALID.format(epoch, loss, epoch * 10) + "\n")
                f.write(JSON_VALID.replace("| valid |", "| valid1 |").format(epoch, 0.1, epoch * 10) + "\n")
                f.write(JSON_TRAIN.format(epoch, epoch * 10, wall) + "\n")
            else:
                f.write(VALID.format(epoch, loss, epoch * 10) + "\n")
                f.write(TRAIN.format(epoch, epoch * 10, wall) + "\n")


def curve(scores):
    return [{"epoch": e, "sari": s, "decode_seconds": 1.0} for e, s in enumerate(scores, 1)]


def make_comparison(root, log_format="json"):
    write_run(root, "lstm", "word", [5.0, 4.0, 3.5], [100, 200, 300], log_format)
    write_run(root, "wean_lstm", "word", [4.0, 3.8, 3.9], [40, 80, 120], log_format)
    write_run(root, "core_copy", "word-pg", [4.5, 4.4, 4.3], [60, 120, 180], log_format)
    runs = {
        "lstm:word": {"valid_metric": "sari", "curve": curve([30.0, 33.0, 35.0])},
        # reaches lstm's best (35.0) at epoch 2, its own best at epoch 3
        "wean_lstm:word": {"valid_metric": "sari", "curve": curve([31.0, 35.5, 36.0])},
        # never reaches it; best epoch 1 (a tie is won by the earlier epoch)
        "core_copy:word-pg": {"valid_metric": "sari", "curve": curve([34.0, 34.0, 33.0])},
    }
    with open(os.path.join(root, "results.json"), "w") as f:
        json.dump({"meta": {"date": "2026-11-22", "command": "compare"}, "runs": runs}, f)


@pytest.mark.parametrize("log_format", ["json", "simple"])  # simple: runs made before the json logs
def test_summary_values(tmp_path, log_format):
    make_comparison(str(tmp_path), log_format)
    _, rows, by_key = convergence.summarize(str(tmp_path))
    assert [r["key"] for r in rows] == ["lstm:word", "wean_lstm:word", "core_copy:word-pg"]
    lstm, wean, core = rows
    assert (lstm["best_epoch"], lstm["best_wall"], lstm["reach_epoch"], lstm["best_loss_epoch"]) == (3, 300, 3, 3)
    assert (wean["best_epoch"], wean["best_wall"], wean["reach_epoch"], wean["reach_wall"]) == (3, 120, 2, 80)
    assert wean["best_loss_epoch"] == 2
    # word-pg has no lstm run of its own: compared with the word-level lstm
    assert core["anchor"] == "lstm:word"
    assert (core["best_epoch"], core["reach_epoch"], core["reach_wall"]) == (1, None, None)


def test_markdown_section_is_written_between_markers(tmp_path):
    make_comparison(str(tmp_path))
    out = tmp_path / "RESULTS.md"
    out.write_text("# Results\n\nkept before\n")
    convergence.main([str(tmp_path), "--out", str(out)])
    convergence.main([str(tmp_path), "--out", str(out)])  # rewritten in place, not appended twice
    text = out.read_text()
    assert text.startswith("# Results\n\nkept before\n")
    assert text.count(convergence.BEGIN) == 1 and text.count(convergence.END) == 1
    assert "| wean_lstm | word | 31.00 / 35.50 / 36.00 | 3 (1.00x) | 120 (0.40x) | 2 / 80 (0.27x) | 2 |" in text
    assert "| core_copy | word-pg | 34.00 / 34.00 / 33.00 | 1 (0.33x) | 60 (0.20x) | - | 3 |" in text


LOADED = ("2026-11-22 07:00:00 | INFO | fairseq.trainer | Loaded checkpoint /runs/x/checkpoints/checkpoint_last.pt "
          "(epoch {} @ {} updates)")


@pytest.mark.parametrize("log_format", ["json", "simple"])
def test_walls_of_a_resumed_run_add_up(tmp_path, log_format):
    """A run resumed from checkpoint_last.pt appends a second fairseq-train process to its log, whose
    ``wall`` restarts at 0: its epochs' walls count from the end of the last epoch the first process
    finished (epoch 2's partial work, lost when the first process stopped, is not counted)."""
    log = tmp_path / "train.log"
    if log_format == "json":
        first = [JSON_VALID.format(1, 5.0, 10), JSON_TRAIN.format(1, 10, 100),
                 JSON_INNER.format(2, 15, 160)]  # stopped inside epoch 2
        second = [LOADED.format(2, 10), JSON_VALID.format(2, 4.0, 20), JSON_TRAIN.format(2, 20, 90),
                  JSON_VALID.format(3, 3.5, 30), JSON_TRAIN.format(3, 30, 185)]
    else:
        first = [VALID.format(1, 5.0, 10), TRAIN.format(1, 10, 100)]
        second = [LOADED.format(2, 10), VALID.format(2, 4.0, 20), TRAIN.format(2, 20, 90),
                  VALID.format(3, 3.5, 30), TRAIN.format(3, 30, 185)]
    log.write_text("\n".join(["$ fairseq-train data"] + first + ["$ fairseq-train data"] + second) + "\n")
    valid, walls = convergence.read_epochs(str(log))
    assert valid == {1: 5.0, 2: 4.0, 3: 3.5}
    assert walls == {1: 100.0, 2: 190.0, 3: 285.0}
    assert convergence.epoch_walls(str(log)) == walls


@pytest.fixture
def publish_results():
    """examples/publish_results.py as a module (examples/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "publish_results", os.path.join(os.path.dirname(__file__), "..", "examples", "publish_results.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_publish_results_copies_table_and_figure(tmp_path, publish_results):
    """examples/publish_results.py: the comparison's results.md between markers, figure copied."""
    compare_dir = tmp_path / "work" / "compare-translation"
    compare_dir.mkdir(parents=True)
    (compare_dir / "results.md").write_text("# translation comparison\n\n| a |\n|---|\n| 1 |\n\n"
                                            "![validation score per epoch](valid_curve.png)\n")
    (compare_dir / "valid_curve.png").write_bytes(b"\x89PNG fake")
    results = tmp_path / "docs" / "RESULTS.md"
    results.parent.mkdir()
    results.write_text("# Results\n\n## Translation\n\nnotes before\n")
    publish_results.main([str(compare_dir), "--results", str(results)])
    (compare_dir / "results.md").write_text("# translation comparison\n\n| a |\n|---|\n| 2 |\n")
    publish_results.main([str(compare_dir), "--results", str(results)])  # replaced, not appended
    text = results.read_text()
    assert text == ("# Results\n\n## Translation\n\nnotes before\n\n<!-- compare-translation:begin -->\n"
                    "### translation comparison\n\n| a |\n|---|\n| 2 |\n<!-- compare-translation:end -->\n")
    assert (tmp_path / "docs" / "figures" / "translation_valid_curve.png").read_bytes() == b"\x89PNG fake"


def test_publish_results_redraws_the_figure_from_results_json(tmp_path, publish_results):
    """--redraw: valid_curve.png drawn anew from results.json (old figure replaced), then copied."""
    compare_dir = tmp_path / "work" / "compare-translation"
    compare_dir.mkdir(parents=True)
    (compare_dir / "results.md").write_text("# translation comparison\n")
    (compare_dir / "valid_curve.png").write_bytes(b"\x89PNG stale")
    run = {"curve": [{"epoch": 1, "bleu": 10.0}, {"epoch": 2, "bleu": 20.0}], "valid_loss": {"1": 4.0, "2": 3.0}}
    (compare_dir / "results.json").write_text(json.dumps({
        "recipe": {"task": "translation", "valid": {"metric": "bleu"}},
        "runs": {"lstm:word": run, "core_copy:word-pg": run}}))
    results = tmp_path / "RESULTS.md"
    results.write_text("# Results\n")
    publish_results.main([str(compare_dir), "--results", str(results), "--redraw"])
    figure = (tmp_path / "figures" / "translation_valid_curve.png").read_bytes()
    assert figure.startswith(b"\x89PNG\r\n") and len(figure) > 1000
    assert figure == (compare_dir / "valid_curve.png").read_bytes()
