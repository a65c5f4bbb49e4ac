"""bench.run's inputs and outputs, checked before any work (bench/run_checks.py): an item given twice in any
list option, two outputs that are one file or an output that is an input, a --convergence log that cannot
be read, a --workdir entry of the wrong kind, a --device run with fewer training batches than it times; and
every parser of bench/ refusing an option given twice. In-process: the work (bench_vocab, measure_peaks,
device_bench.run) is replaced by a stop, so no case trains anything."""
import argparse
import os

import pytest

from bench import device_bench, run_checks
from bench import run as bench_run

TWO_EPOCHS = ('2026-11-22 06:36:04 | INFO | valid | {"epoch": 1, "valid_loss": "5.0", "valid_num_updates": "10"}\n'
              '2026-11-22 06:36:04 | INFO | train | {"epoch": 1, "train_loss": "9.0", "train_wall": "100"}\n'
              '2026-11-22 06:36:04 | INFO | valid | {"epoch": 2, "valid_loss": "4.0", "valid_num_updates": "20"}\n'
              '2026-11-22 06:36:04 | INFO | train | {"epoch": 2, "train_loss": "8.0", "train_wall": "200"}\n')


class Reached(Exception):
    """The benchmark's work started."""


@pytest.fixture
def bench(monkeypatch, tmp_path):
    def reached(*a, **k):
        raise Reached

    for module, name in ((bench_run, "measure_peaks"), (bench_run, "bench_vocab"), (device_bench, "run")):
        monkeypatch.setattr(module, name, reached)
    (tmp_path / "lstm.log").write_text(TWO_EPOCHS)
    (tmp_path / "wean.log").write_text(TWO_EPOCHS)
    return tmp_path


def refused(argv, message, capsys):
    """bench.run's main refuses argv: exit status 2, the last line of stderr names the problem."""
    with pytest.raises(SystemExit) as info:
        bench_run.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and err[-1].startswith("python -m bench.run: error: ") and message in err[-1], err
    return err[-1]


# every option of bench.run: a list (each item once) or a single value
SINGLE = {"help", "quick", "updates", "interval", "warmup", "max_tokens", "gen_len", "flop_batches", "threads",
          "clock", "workdir", "out", "device", "dim", "n_train", "n_test", "n_latency", "json",
          "convergence_metric", "maximize"}
# list option -> (argv naming an item twice, the message, argv with each item once)
LISTS = {
    "--models": (["--models", "lstm,wean_lstm,lstm"], "--models names lstm twice: each once", ["--models", "lstm"]),
    "--vocabs": (["--vocabs", "300,300"], "argument --vocabs: 300 given twice: each once", ["--vocabs", "300"]),
    "--precisions": (["--device", "cpu", "--precisions", "fp32,cpu-bf16,fp32"], "--precisions names fp32 twice",
                     ["--device", "cpu", "--precisions", "fp32,cpu-bf16"]),
    "--convergence": (["--convergence", "lstm={d}/lstm.log", "lstm={d}/wean.log"],
                      "--convergence names lstm twice: each once",
                      ["--convergence", "lstm={d}/lstm.log", "wean_lstm={d}/wean.log"]),
}


def test_every_option_is_a_list_or_a_single_value():
    dests = {a.dest for a in bench_run.get_parser()._actions}
    lists = {"--" + d.replace("_", "-") for d in dests - SINGLE}
    assert lists == set(LISTS) == set(run_checks.LIST_OPTIONS), (lists, set(LISTS))


@pytest.mark.parametrize("option", sorted(LISTS))
def test_an_item_given_twice_is_refused_before_any_work(option, bench, capsys):
    twice, message, once = LISTS[option]
    base = ["--quick", "--workdir", str(bench / "bw"), "--out", str(bench / "perf.md")]
    fill = [a.format(d=bench) for a in twice]
    refused(base + fill, message, capsys)
    assert not (bench / "bw").exists() and not (bench / "perf.md").exists()
    with pytest.raises(Reached):
        bench_run.main(base + ["--n-train", "2000"] + [a.format(d=bench) for a in once])


# name -> (argv given the tmp folder d, message); each: nothing made, no file changed
COLLISIONS = {
    "out-is-json": (["--out", "{d}/page.md", "--json", "{d}/page.md"], "--out {d}/page.md and --json {d}/page.md are one file"),
    "out-is-default-json": (["--out", "{d}/bw/results.json"], "--out {d}/bw/results.json and --json {d}/bw/results.json are one file"),
    "out-is-json-by-a-link": (["--out", "{d}/page.md", "--json", "{d}/link.md"], "are one file"),
    "device-out-is-json": (["--device", "cpu", "--out", "{d}/page.md", "--json", "{d}/page.md"], "are one file"),
    "out-is-a-log": (["--out", "{d}/lstm.log", "--convergence", "lstm={d}/lstm.log"],
                     "--out {d}/lstm.log is also an input (--convergence {d}/lstm.log)"),
    "json-is-a-log": (["--json", "{d}/lstm.log", "--convergence", "lstm={d}/lstm.log"], "--json {d}/lstm.log is also an input"),
    "json-is-a-workdir-file": (["--json", "{d}/bw/v8000/train-lstm.log"], "is a file the benchmark writes in its --workdir"),
    "device-out-is-a-workdir-file": (["--device", "cpu", "--out", "{d}/bw/v8000/data.log"],
                                     "is a file the benchmark writes in its --workdir"),
    "log-is-a-workdir-file": (["--convergence", "lstm={d}/bw/v8000/train-lstm.log"],
                              "--convergence {d}/bw/v8000/train-lstm.log is a file the benchmark rewrites"),
}


@pytest.mark.parametrize("name", sorted(COLLISIONS))
def test_outputs_that_are_one_file_or_an_input_are_refused_before_any_work(name, bench, capsys):
    argv, message = COLLISIONS[name]
    (bench / "page.md").write_text("# My page\nKEEP THIS TEXT\n")
    os.symlink(bench / "page.md", bench / "link.md")
    (bench / "bw" / "v8000").mkdir(parents=True)
    (bench / "bw" / "v8000" / "train-lstm.log").write_text(TWO_EPOCHS)
    (bench / "bw" / "v8000" / "data.log").write_text("made\n")
    before = {p: p.read_bytes() for p in bench.rglob("*") if p.is_file() and not p.is_symlink()}
    base = ["--quick", "--workdir", str(bench / "bw")] + ([] if "--out" in argv else ["--out", str(bench / "perf.md")])
    refused(base + [a.format(d=bench) for a in argv], message.format(d=bench), capsys)
    after = {p: p.read_bytes() for p in bench.rglob("*") if p.is_file() and not p.is_symlink()}
    assert after == before


@pytest.mark.parametrize("spec,message", [
    ("lstm", "--convergence 'lstm': expected ARCH=LOG"),
    ("=x.log", "--convergence '=x.log': expected ARCH=LOG"),
    ("lstm=", "--convergence 'lstm=': expected ARCH=LOG"),
    ("lstm={d}/missing.log", "--convergence log {d}/missing.log: no such file"),
    ("lstm={d}", "--convergence log {d} is a directory"),
    ("lstm={d}/empty.log", "--convergence lstm={d}/empty.log: the log has no validation loss of any epoch"),
    ("lstm={d}/latin1.log", "--convergence log {d}/latin1.log line 2 is not UTF-8 text"),
])
def test_a_convergence_log_is_read_and_checked_before_any_work(spec, message, bench, capsys):
    (bench / "empty.log").write_text("nothing here\n")
    (bench / "latin1.log").write_bytes(TWO_EPOCHS.splitlines()[0].encode() + b"\n\xe9t\xe9\n")
    base = ["--quick", "--workdir", str(bench / "bw"), "--out", str(bench / "perf.md")]
    refused(base + ["--convergence", spec.format(d=bench)], message.format(d=bench), capsys)
    assert not (bench / "bw").exists() and not (bench / "perf.md").exists()


def test_the_convergence_table_is_the_logs_read_before_the_work(bench):
    rows = bench_run.read_convergence(["lstm={}/lstm.log".format(bench)], "loss", False)
    assert rows == {"lstm": (2, 4.0, 200.0, 2, "{}/lstm.log".format(bench))}
    (bench / "lstm.log").write_text("gone\n")  # the table is of what was read before the work
    table = bench_run.convergence_markdown(["lstm=x"], "loss", False, rows)
    assert "| lstm | 4.000 | 2 (1.00x) | 200 (1.00x) | 2 |" in table


def workdir_cases():
    for mode, extra in (("cli", []), ("device", ["--device", "cpu"])):
        cfg = argparse.Namespace(workdir="W", json=None, device="cpu" if extra else None, flop_batches=1)
        for path, kind in run_checks.workdir_entries(cfg, ["lstm", "core_copy"], [300]):
            yield pytest.param(extra, os.path.relpath(path, "W"), kind, id="{}-{}".format(mode, os.path.relpath(path, "W")))


@pytest.mark.parametrize("extra,rel,kind", list(workdir_cases()))
def test_a_workdir_entry_of_the_wrong_kind_is_refused_before_any_work(extra, rel, kind, bench, capsys):
    """A folder where the benchmark writes a file (WORKDIR/results.json: an IsADirectoryError traceback
    after the whole run), a file where it makes a folder."""
    work = bench / "bw"
    path = work / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path.mkdir()
        message = "{} is a directory, where the benchmark writes or reads a file of its own".format(path)
    else:
        path.write_text("mine\n")
        message = "{} is a regular file, where the benchmark makes a folder of its own".format(path)
    before = sorted(str(p) for p in work.rglob("*"))
    argv = ["--quick", "--vocabs", "300", "--models", "lstm,core_copy", "--flop-batches", "1", "--workdir", str(work),
            "--out", str(bench / "perf.md")] + extra
    refused(argv, "--workdir {}: {}; remove it or use another --workdir".format(work, message), capsys)
    assert sorted(str(p) for p in work.rglob("*")) == before and not (bench / "perf.md").exists()


@pytest.mark.parametrize("argv,message", [
    (["--n-train", "10"], "--n-train 10 makes 1 training batches of --max-tokens 2048 at 300 words, fewer than "
                          "--warmup 1 + --updates 3 = 4 (each step is timed on a batch of its own)"),
    (["--n-train", "40", "--max-tokens", "256", "--warmup", "2", "--updates", "4"],
     "--n-train 40 makes 5 training batches of --max-tokens 256 at 300 words, fewer than --warmup 2 + --updates 4 = 6"),
])
def test_a_device_run_with_fewer_batches_than_it_times_is_refused_before_any_work(argv, message, bench, capsys):
    base = ["--quick", "--device", "cpu", "--vocabs", "300", "--workdir", str(bench / "bw"), "--out",
            str(bench / "perf.md")]
    refused(base + argv, message, capsys)
    assert not (bench / "bw").exists() and not (bench / "perf.md").exists()
    for enough in (["--n-train", "2000"], ["--n-train", "40", "--max-tokens", "256", "--warmup", "1", "--updates", "4"]):
        with pytest.raises(Reached):  # as many batches as timed steps, or more: accepted
            bench_run.main(base + enough)


def test_the_batch_count_is_fairseqs_on_the_data_made(tmp_path):
    """The count before the work is the count of device_bench.batches on the data synthetic.make writes
    (one tiny data set: fairseq-preprocess runs)."""
    from bench import synthetic

    data_bin = synthetic.make(str(tmp_path), 300, 57, 4, 2, bench_run.BIN)
    argv = device_bench.training_argv("lstm", data_bin, None, "fp32", "cpu", 8, 512, 0.1, 5e-4, str(tmp_path / "x"))
    _cfg, task, model, _criterion = device_bench.build(argv)
    made = len(device_bench.batches(task, "train", model, None, max_tokens=512))
    assert run_checks.device_train_batches(300, 57, 512) == made == 4


def bench_parsers():
    """(module, parser) of every module of bench/ that builds one (found, not listed)."""
    import test_option_ranges as R

    for rel in R.tool_files():
        if not rel.startswith("bench/"):
            continue
        yield pytest.param(rel, id=rel)


# a parser that cannot go through fairseq_wean.cli.options.once, and why
NOT_ONCE = {"bench/gpu_check.py": "the GPU check's driver imports only the standard library until its set-up has "
                                  "installed fairseq (importing the plugin imports fairseq)"}


@pytest.mark.parametrize("rel", list(bench_parsers()))
def test_every_bench_parser_refuses_an_option_given_twice(rel, monkeypatch):
    import test_option_ranges as R

    from fairseq_wean.cli import options

    if rel in NOT_ONCE:
        pytest.skip(NOT_ONCE[rel])
    parser = R.capture(R.load(rel), monkeypatch)
    assert parser is not None, rel
    plain = [options.option_name(a) for a in parser._actions if a.option_strings
             and not isinstance(a, argparse._HelpAction) and not isinstance(a, options._Once)]
    assert not plain, "{}: options that keep the last of two values: {}".format(rel, plain)
