"""fairseq-preprocess (with the plugin) writes its outputs in --destdir only as themselves
(fairseq_wean/preprocess_outputs.py, called by compat's fairseq-preprocess wrapper before any work):

* ``output_paths`` is what a real run writes, for every form of run (splits, several valid/test prefixes,
  alignments, --alignfile, --workers chunks, --dataset-impl raw, --only-source, --dict-only);
* every one of those names planted as a symbolic link (to a file, dangling), a hard link, a named pipe or a
  folder is one line before any work: the victim intact, nothing written (no preprocess.log either);
* a rerun into a folder holding an earlier run's dictionaries is one line (fairseq's FileExistsError traceback
  was), and with --srcdict/--tgtdict it rewrites the outputs, each as itself, nothing else in the folder touched.

In-process runs of fairseq_cli.preprocess.main (as fairseq-preprocess calls it), tiny data."""
import hashlib
import logging
import os

import pytest
from conftest import no_hang

import fairseq_wean  # noqa: F401  (applies the plugin's patches)
from fairseq import options
from fairseq_cli import preprocess

from fairseq_wean import compat, preprocess_outputs
from fairseq_wean.errors import FairseqWeanError

compat.install_preprocess_input_check()  # as in fairseq-preprocess's own process (once: wrap_once)

LINES = ["ein mann geht .", "zwei hunde laufen schnell .", "eine frau liest", "kinder spielen im park ."]

# every form of fairseq-preprocess run, by the outputs it writes ({raw}: the folder of the raw files)
RUNS = {
    "splits": ["-s", "de", "-t", "en", "--trainpref", "{raw}/tr", "--validpref", "{raw}/va,{raw}/va2",
               "--testpref", "{raw}/te,{raw}/te2", "--align-suffix", "align", "--alignfile", "{raw}/tr.align"],
    "workers": ["-s", "de", "-t", "en", "--trainpref", "{raw}/tr", "--validpref", "{raw}/va", "--workers", "2",
                "--dataset-impl", "lazy"],
    "raw": ["-s", "de", "-t", "en", "--trainpref", "{raw}/tr", "--testpref", "{raw}/te", "--dataset-impl", "raw"],
    "only-source": ["-s", "de", "--only-source", "--trainpref", "{raw}/tr", "--validpref", "{raw}/va"],
    "dict-only": ["-s", "de", "-t", "en", "--trainpref", "{raw}/tr", "--dict-only", "--joined-dictionary"],
}
PLANTS = {"link": "is a symbolic link", "dangling link": "is a symbolic link", "hard link": "has 2 hard links",
          "fifo": "is not a regular file", "folder": "is a folder, not a regular file"}


@pytest.fixture(autouse=True)
def _no_leftover_log_handlers():
    """fairseq_cli.preprocess.main adds a FileHandler to its logger per run: removed after each test."""
    logger = logging.getLogger("fairseq_cli.preprocess")
    before = list(logger.handlers)
    yield
    for handler in logger.handlers[len(before):]:
        handler.close()
        logger.removeHandler(handler)


def raw_files(folder):
    folder.mkdir(exist_ok=True)
    for prefix in ("tr", "va", "va2", "te", "te2"):
        for lang in ("de", "en"):
            (folder / "{}.{}".format(prefix, lang)).write_text("".join(line + "\n" for line in LINES))
    for prefix in ("tr", "te"):  # --align-suffix align: train's and test's (valid's is the whole --validpref's)
        (folder / "{}.align".format(prefix)).write_text("0-0 1-1\n" * len(LINES))
    return folder


def parse(run, raw, destdir, *extra):
    argv = [a.format(raw=raw) for a in RUNS[run]] + ["--destdir", str(destdir), *extra]
    if "--workers" not in argv:
        argv += ["--workers", "1"]
    return options.get_preprocessing_parser().parse_args(argv)


def md5s(folder):
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_the_outputs_are_what_fairseq_preprocess_writes(tmp_path, monkeypatch, run):
    raw = raw_files(tmp_path / "raw")
    destdir = tmp_path / "bin"
    args = parse(run, raw, destdir)
    removed = []
    real_remove = os.remove
    monkeypatch.setattr(os, "remove", lambda path, *a, **k: (removed.append(str(path)), real_remove(path, *a, **k)))
    expected = preprocess_outputs.output_paths(args)
    preprocess.main(args)
    written = sorted(os.listdir(destdir)) + sorted(os.path.basename(p) for p in removed)
    assert sorted(written) == sorted(os.path.basename(p) for p in expected)
    assert all(os.path.dirname(p) == str(destdir) for p in expected)
    if run == "workers":
        assert removed, "no chunk of a second worker was written"


@pytest.mark.parametrize("plant", sorted(PLANTS))
@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_output_name_planted_is_refused_before_any_work(tmp_path, run, plant):
    raw = raw_files(tmp_path / "raw")
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    names = [os.path.basename(p) for p in preprocess_outputs.output_paths(parse(run, raw, tmp_path / "x"))]
    assert len(names) == {"splits": 26, "workers": 19, "raw": 7, "only-source": 6, "dict-only": 3}[run], names
    for number, name in enumerate(names):
        destdir = tmp_path / "bin{}".format(number)
        destdir.mkdir()
        planted = destdir / name
        {"link": lambda: planted.symlink_to(victim), "dangling link": lambda: planted.symlink_to(tmp_path / "none"),
         "hard link": lambda: os.link(victim, planted), "fifo": lambda: os.mkfifo(planted),
         "folder": planted.mkdir}[plant]()
        with no_hang(20), pytest.raises(FairseqWeanError) as error:
            preprocess.main(parse(run, raw, destdir))
        message = str(error.value)
        assert message.startswith("fairseq-preprocess --destdir {}: {} {}".format(destdir, planted, PLANTS[plant])), \
            message
        assert "\n" not in message and "nothing was written" in message
        assert sorted(os.listdir(destdir)) == [name], name  # no log, no dictionary
        assert victim.read_bytes() == b"precious" and not (tmp_path / "none").exists(), name
        if plant == "hard link":
            planted.unlink()  # the next name's victim has two names again


def test_a_rerun_is_one_line_or_rewrites_only_the_outputs(tmp_path):
    raw = raw_files(tmp_path / "raw")
    destdir = tmp_path / "bin"
    preprocess.main(parse("splits", raw, destdir))
    (destdir / "notes.txt").write_text("mine")
    before = md5s(destdir)
    for extra in ([], ["--srcdict", str(destdir / "dict.de.txt")], ["--tgtdict", str(destdir / "dict.en.txt")]):
        with pytest.raises(FairseqWeanError) as error:
            preprocess.main(parse("splits", raw, destdir, *extra))
        side = "en" if extra and extra[0] == "--srcdict" else "de"
        assert str(error.value).startswith("fairseq-preprocess --destdir {} already holds {} (an earlier run's "
                                           "dictionary)".format(destdir, destdir / "dict.{}.txt".format(side)))
        assert str(error.value).endswith("(--srcdict {} --tgtdict {})".format(destdir / "dict.de.txt",
                                                                               destdir / "dict.en.txt"))
        assert md5s(destdir) == before  # the log too: fairseq appended to it before its FileExistsError
    inodes = {p.name: p.stat().st_ino for p in destdir.iterdir()}
    preprocess.main(parse("splits", raw, destdir, "--srcdict", str(destdir / "dict.de.txt"), "--tgtdict",
                          str(destdir / "dict.en.txt")))
    after = md5s(destdir)
    assert sorted(after) == sorted(before) and after["notes.txt"] == before["notes.txt"]
    assert {k: v for k, v in after.items() if k != "preprocess.log"} == \
        {k: v for k, v in before.items() if k != "preprocess.log"}  # the same data binarized again
    assert {p.name: p.stat().st_ino for p in destdir.iterdir()} == inodes  # each written as itself


def test_an_output_that_is_an_input_or_a_destdir_that_is_a_file_is_refused(tmp_path):
    raw = raw_files(tmp_path / "raw")
    for lang in ("de", "en"):
        os.replace(raw / "tr.{}".format(lang), raw / "train.de-en.{}".format(lang))
    args = options.get_preprocessing_parser().parse_args(["-s", "de", "-t", "en", "--trainpref", str(
        raw / "train.de-en"), "--dataset-impl", "raw", "--destdir", str(raw), "--workers", "1"])
    before = md5s(raw)
    with pytest.raises(FairseqWeanError, match=r"^fairseq-preprocess output \S+/train.de-en.de is also an input"):
        preprocess.main(args)
    assert md5s(raw) == before
    args.destdir = str(raw / "te.de")
    with pytest.raises(FairseqWeanError, match=r"^fairseq-preprocess --destdir \S+ is a regular file, not a folder"):
        preprocess.main(args)
    assert md5s(raw) == before
