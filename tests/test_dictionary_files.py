"""Every parse of a dictionary file is one line naming the file (and the line): a fairseq
dictionary (a data folder's dict.LANG.txt, --unk-markers-dict) that is missing, malformed, lists a
word twice, lists a word fairseq adds itself, or is not UTF-8; a --replace-unk alignment
dictionary that is missing, malformed or a fairseq dictionary given by mistake. Each tried on every
entry point that reads it (fairseq-train, -generate, -interactive, -validate, the hub)."""
import os
import shutil

import pytest

from conftest import USER_DIR
from test_crafted_checkpoints import run_driver, train_argv

BROKEN_DICTIONARIES = {  # every word a secret: a data folder's dictionary is never quoted
    "missing": None,
    "malformed": "SECRET1 3\nSECRET2\n",
    "duplicate": "SECRET1 3\nSECRET2 2\nSECRET1 1\n",
    "special symbol": "SECRET1 3\n<unk> 2\n",
    "not UTF-8": "SECRET1 3\n".encode() + b"SECRET\xe9 2\n",
    "named pipe": "FIFO",  # opened, it would block the command forever
}
DICTIONARY_MESSAGES = {"missing": "No such file", "malformed": "line 2: expected 'WORD COUNT'",
                       "duplicate": "line 3: {} is listed twice (lines 1 and 3)",
                       "special symbol": "line 2 lists '<unk>'",
                       "not UTF-8": "line 2 is not UTF-8",
                       "named pipe": "is a named pipe, socket or device, not a regular file"}


def dictionary_message(case, quoted):
    """The words of a file the user named (--unk-markers-dict) are quoted, a data folder's never."""
    return DICTIONARY_MESSAGES[case].format("word 'SECRET1'" if quoted else "a word")
BROKEN_ALIGN = {"missing": None, "malformed": "w1 w1\nw2\n", "a fairseq dictionary": "w1 3\nw2 2\n"}
ALIGN_MESSAGES = {"missing": "no such file", "malformed": "line 2: expected 'SOURCE TARGET'",
                  "a fairseq dictionary": "is a fairseq dictionary ('WORD COUNT' lines), not an alignment"}


def write(path, content):
    if content is None:
        return path
    if content == "FIFO":
        os.mkfifo(path)
        return path
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.fixture(scope="module")
def model(data_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("dict-model")
    result = run_driver([{"name": "train", "argv": train_argv(data_bin, work / "ck")}], work, work / "no-marker")
    assert result[0]["outcome"] == "ran to the end", result
    return work / "ck" / "checkpoint_last.pt"


def entry_points(data, checkpoint, save_dir):
    common = [str(data), "--path", str(checkpoint), "--user-dir", USER_DIR, "--cpu"]
    return {
        "fairseq-train": train_argv(data, save_dir),
        "fairseq-generate": ["generate"] + common + ["--beam", "2"],
        "fairseq-interactive": ["interactive"] + common + ["--source-lang", "src", "--target-lang", "tgt"],
        "fairseq-validate": ["validate"] + common + ["--task", "translation", "--max-tokens", "2000"],
    }


def test_a_broken_dictionary_is_one_line_in_every_entry_point(raw_dir, data_bin, model, tmp_path):
    jobs, expected = [], []
    for case, content in BROKEN_DICTIONARIES.items():
        data = tmp_path / "data-{}".format(case.replace(" ", "-"))
        shutil.copytree(data_bin, data)
        (data / "dict.tgt.txt").unlink()
        write(data / "dict.tgt.txt", content)
        for name, argv in entry_points(data, model, tmp_path / "save" / case.replace(" ", "-")).items():
            jobs.append({"name": "{} / {}".format(name, case), "argv": argv})
            expected.append((str(data / "dict.tgt.txt"), dictionary_message(case, False)))
        jobs.append({"name": "hub / {}".format(case), "argv": ["hub"], "folder": str(model.parent),
                     "crafted": str(model), "data": str(data)})
        expected.append((str(data / "dict.tgt.txt"), dictionary_message(case, False)))
        markers = write(tmp_path / "markers-{}.txt".format(case.replace(" ", "-")), content)
        jobs.append({"name": "--bpe unk_markers --unk-markers-dict / {}".format(case),
                     "argv": entry_points(data_bin, model, None)["fairseq-interactive"]
                     + ["--bpe", "unk_markers", "--unk-markers-dict", str(markers)]})
        expected.append((str(markers), dictionary_message(case, True) if case not in ("missing", "named pipe")
                         else "no such file" if case == "missing" else "not a regular file"))
    for case, content in BROKEN_ALIGN.items():
        align = write(tmp_path / "align-{}.txt".format(case.replace(" ", "-")), content)
        for name in ("fairseq-generate", "fairseq-interactive"):
            source = ["--replace-unk-source", str(raw_dir / "test.src")] if name == "fairseq-generate" else []
            jobs.append({"name": "{} --replace-unk / {}".format(name, case),
                         "argv": entry_points(data_bin, model, None)[name] + ["--replace-unk", str(align)] + source})
            expected.append((str(align), ALIGN_MESSAGES[case]))
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker")
    wrong = []
    for job, result, (path, message) in zip(jobs, results, expected):
        outcome = result["outcome"]
        if not (outcome.startswith("FairseqWeanError: ") and path in outcome and message in outcome
                and "\n" not in outcome) or "dict.tgt.txt" in path and "SECRET" in outcome:
            wrong.append("{}: {}".format(job["name"], outcome[:300]))
    assert not wrong, "\n".join(wrong)


def test_a_binarized_file_that_is_a_pipe_is_refused_not_waited_on(data_bin, model, tmp_path):
    """Each file of a binarized split as a named pipe: fairseq would block on it forever."""
    jobs, names = [], []
    for split, tool in (("train", "fairseq-train"), ("test", "fairseq-generate")):
        for side in ("src", "tgt"):
            for ext in ("idx", "bin"):
                name = "{}.src-tgt.{}.{}".format(split, side, ext)
                data = tmp_path / name.replace(".", "-")
                shutil.copytree(data_bin, data)
                (data / name).unlink()
                os.mkfifo(data / name)
                jobs.append({"name": name, "argv": entry_points(data, model, tmp_path / "save" / name)[tool]})
                names.append(str(data / name))
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker")
    wrong = [r for r, path in zip(results, names) if not (r["outcome"].startswith("FairseqWeanError: binarized data "
                                                                                   "file " + path)
                                                          and "named pipe" in r["outcome"])]
    assert not wrong, wrong


def test_the_hub_on_a_folder_that_does_not_name_its_languages_is_one_line(data_bin, model, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(model, folder / "checkpoint_best.pt")
    for lang in ("src", "tgt"):
        shutil.copy(data_bin / "dict.{}.txt".format(lang), folder)
    results = run_driver([{"name": "hub", "argv": ["hub"], "folder": str(folder),
                           "crafted": str(folder / "checkpoint_best.pt"), "data": str(folder)}], tmp_path,
                         tmp_path / "no-marker")
    outcome = results[0]["outcome"]
    assert outcome.startswith("FairseqWeanError: ") and "give source_lang= and target_lang=" in outcome, outcome


LINKED_OUT = {"symbolic link": (os.symlink, "is a symbolic link to a file outside its folder"),
              "hard link": (os.link, "has 2 hard links (a file with other names, which may lie outside the folder")}


def test_a_dictionary_linked_out_of_its_folder_is_refused_and_never_quoted(data_bin, model, tmp_path):
    """A28, A31-A34: dict.tgt.txt a planted symbolic or hard link to a secret outside the data folder: every
    entry point refuses it in one line that quotes nothing of the secret (a link to another file of the
    folder is fine)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-PASSWORD-LINE\n")
    jobs, expected = [], []
    for how, (link, message) in LINKED_OUT.items():
        data = tmp_path / "data-linked-out-{}".format(how.split()[0])
        shutil.copytree(data_bin, data)
        (data / "dict.tgt.txt").unlink()
        link(secret, data / "dict.tgt.txt")
        jobs += [{"name": "{} / {}".format(name, how), "argv": argv}
                 for name, argv in entry_points(data, model, tmp_path / "save").items()]
        jobs.append({"name": "hub / " + how, "argv": ["hub"], "folder": str(model.parent), "crafted": str(model),
                     "data": str(data)})
        expected += ["FairseqWeanError: dictionary {} {}".format(data / "dict.tgt.txt", message)] * 5
    inside = tmp_path / "data-linked-in"
    shutil.copytree(data_bin, inside)
    os.rename(inside / "dict.tgt.txt", inside / "dict.txt")
    os.symlink("dict.txt", inside / "dict.tgt.txt")
    jobs.append({"name": "generate, a link inside the folder", "argv": entry_points(inside, model, None)
                 ["fairseq-generate"]})
    results = run_driver(jobs, tmp_path, tmp_path / "no-marker")
    wrong = [
        "{}: {}".format(job["name"], result["outcome"][:300]) for job, result, start in zip(jobs, results, expected)
        if not (result["outcome"].startswith(start) and "SECRET" not in result["outcome"]
                and "\n" not in result["outcome"])]
    assert not wrong, "\n".join(wrong)
    assert results[-1]["outcome"] == "ran to the end", results[-1]
    assert secret.read_text() == "SECRET-PASSWORD-LINE\n"
