"""fairseq-generate ``--results-path DIR`` (fix 17 of compat, docs/fairseq-patches.md): the results file
``DIR/generate-SUBSET.txt`` is written through a temporary file renamed on success, so a failed run
leaves the earlier results intact (fairseq opened it with "w" before loading anything: 0 bytes), and a
symbolic link or other non-regular file planted there is refused in one line, never written through."""
import os

import pytest

from conftest import USER_DIR, cli, train_args

SMALL = ["--encoder-layers", 1, "--decoder-layers", 1, "--encoder-embed-dim", 8, "--decoder-embed-dim", 8,
         "--encoder-hidden-size", 8, "--decoder-hidden-size", 8, "--decoder-out-embed-dim", 8]


@pytest.fixture(scope="module")
def checkpoint(data_bin, tmp_path_factory):
    save = tmp_path_factory.mktemp("results_file") / "ck"
    cli("fairseq-train", *train_args(data_bin, save, "lstm", *SMALL, "--max-update", 2, epochs=1))
    return save / "checkpoint_best.pt"


def generate(data_bin, path, results, check=False):
    return cli("fairseq-generate", data_bin, "--user-dir", USER_DIR, "--path", path, "--cpu", "--gen-subset", "test",
               "--beam", 2, "--results-path", results, check=check)


def one_line_error(proc):
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return proc.stderr.strip().splitlines()[-1]


def test_a_failed_run_leaves_the_earlier_results_intact(data_bin, checkpoint, tmp_path):
    results = tmp_path / "rp"
    results.mkdir()
    old = results / "generate-test.txt"
    old.write_text("S-0\tearlier results\n")
    crafted = tmp_path / "crafted.pt"
    crafted.write_bytes(b"not a checkpoint")
    for path in (tmp_path / "typo.pt", crafted):
        one_line_error(generate(data_bin, path, results))
        assert old.read_text() == "S-0\tearlier results\n"
        assert sorted(os.listdir(results)) == ["generate-test.txt"]  # no temporary file left
    generate(data_bin, checkpoint, results, check=True)
    assert not old.is_symlink() and "H-0\t" in old.read_text()


@pytest.mark.parametrize("plant", ["link", "dangling_link", "fifo", "directory"])
def test_a_planted_link_or_special_file_is_refused_and_not_written_through(data_bin, checkpoint, tmp_path, plant):
    results = tmp_path / "rp"
    results.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = results / "generate-test.txt"
    if plant == "link":
        target.symlink_to(victim)
    elif plant == "dangling_link":
        target.symlink_to(tmp_path / "nowhere")
    elif plant == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    line = one_line_error(generate(data_bin, checkpoint, results))
    assert line.startswith("fairseq-wean: error: --results-path") and "refused" in line, line
    assert victim.read_text() == "precious\n" and not (tmp_path / "nowhere").exists()
    assert os.path.lexists(target)  # what was there is left as it was


@pytest.mark.parametrize("extra,message", [
    (["--min-len", 50, "--max-len-a", 1, "--max-len-b", 0], "is above the longest output --max-len-a 1.0 x source"),
    (["--min-len", 50, "--max-len-a", 1, "--max-len-b", 0, "--model-overrides", "{'max_target_positions': 10}"],
     "--min-len 50 is above the longest output this model can decode (9 tokens"),
])
def test_min_len_above_the_longest_output_is_one_line_and_keeps_the_results(data_bin, checkpoint, tmp_path, extra,
                                                                             message):
    """fairseq asserted min_len <= max_len after the model was loaded (an AssertionError traceback);
    what the options alone decide (--max-len-a 0) is refused when they are parsed (test_option_ranges)."""
    results = tmp_path / "rp"
    results.mkdir()
    (results / "generate-test.txt").write_text("old\n")
    proc = cli("fairseq-generate", data_bin, "--user-dir", USER_DIR, "--path", checkpoint, "--cpu", "--gen-subset",
               "test", "--results-path", results, *extra, check=False)
    assert message in one_line_error(proc)
    assert (results / "generate-test.txt").read_text() == "old\n"
