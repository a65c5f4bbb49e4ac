"""fairseq-generate ``--results-path DIR`` (fix 17 of compat, docs/fairseq-patches.md): the results file
``DIR/generate-SUBSET.txt`` is written through a temporary file renamed on success, so a failed run
leaves the earlier results intact (fairseq opened it with "w" before loading anything: 0 bytes), and a
symbolic link, a hard link or other non-regular file planted there is refused in one line before decoding,
never written through (textio.in_place_problem)."""
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


@pytest.mark.parametrize("plant", ["link", "dangling_link", "fifo", "directory", "hard_link"])
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
    elif plant == "hard_link":  # the rename would leave the victim, but fairseq's in-place "w" would not
        os.link(victim, target)
    else:
        target.mkdir()
    line = one_line_error(generate(data_bin, checkpoint, results))
    assert line.startswith("fairseq-wean: error: --results-path") and "refused" in line, line
    assert ("hard links" in line) == (plant == "hard_link"), line
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


# A data folder's dictionary linked to a file outside it (compat fix 16: data.dictionary.check_folder_dictionary,
# called before fairseq opens the file). The secret is a valid dictionary, so fairseq itself would read it
# without a complaint: only the check before the open refuses it. Every route that loads a data folder's
# dictionaries: fairseq-train, fairseq-generate, the hub.
SECRET = "secretword 5\n"


@pytest.fixture
def linked_dict_data(data_bin, tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(data_bin, data)
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    (data / "dict.tgt.txt").unlink()
    (data / "dict.tgt.txt").symlink_to(secret)
    return data


def _train(data, tmp_path, checkpoint):
    return cli("fairseq-train", *train_args(data, tmp_path / "save", "lstm", *SMALL, "--max-update", 1, epochs=1),
               check=False)


def _generate(data, tmp_path, checkpoint):
    return cli("fairseq-generate", data, "--user-dir", USER_DIR, "--path", checkpoint, "--cpu", "--gen-subset", "test",
               "--beam", 2, check=False)


@pytest.mark.parametrize("run", [_train, _generate], ids=["fairseq-train", "fairseq-generate"])
def test_a_dictionary_linked_out_of_its_folder_is_refused_before_it_is_read(run, linked_dict_data, checkpoint,
                                                                            tmp_path):
    line = one_line_error(run(linked_dict_data, tmp_path, checkpoint))
    assert "dict.tgt.txt is a symbolic link to a file outside its folder" in line and "refused" in line, line
    assert "secretword" not in line
    assert not (tmp_path / "save" / "checkpoint_last.pt").exists()


def test_the_hub_refuses_a_dictionary_linked_out_of_its_folder(linked_dict_data, checkpoint):
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.hub import from_pretrained

    with pytest.raises(FairseqWeanError) as info:
        from_pretrained(str(checkpoint.parent), checkpoint_file=checkpoint.name,
                        data_name_or_path=str(linked_dict_data))
    message = str(info.value)
    assert "\n" not in message and "dict.tgt.txt" in message and "outside" in message and "secretword" not in message
