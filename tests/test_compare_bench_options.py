"""Every option of fairseq-wean-compare and bench.run that does nothing in some setting is refused there.

``COMPARE`` and ``BENCH`` hold one row per option of the tool's parser: either the reason it acts in every
run, or (settings where it does nothing, a setting where it acts). A setting where it does nothing must be
refused in one line (exit status 2) before any work; the setting where it acts must be accepted (so a row
cannot pass by refusing everything). An option added to a parser without a row here fails
``test_every_option_has_a_row``. Also: the checks of the comparison's published folder run before its data
preparation (a planted file there was found after it), and the output folders given through a missing
folder (OUT/nodir/../NAME) of the recipes, the comparison, the benchmarks and the CPU launcher are refused
before anything is made.
"""
import importlib
import os

import pytest

ALWAYS = "acts in every run"

# dest -> ALWAYS-reason or ([argv where it does nothing], argv where it acts); argv after "TASK DATA"
COMPARE = {
    "task": "which comparison", "data_dir": "the raw data", "dataset": "which recipe", "out": "where the run goes",
    "tiny": "the CI size", "budget": "the training rule", "results_dir": "where runs are published and reused",
    "runs": "which runs", "seed": "the data preparation's and first run's seed",
    "help": "prints the options",
    "reuse_only": "trains nothing; reads the published runs",
    "force": ([["--reuse-only", "--force"]], []),
    "epochs": ([["--budget", "converged", "--epochs", "3"]], ["--epochs", "3"]),
    "patience": ([["--patience", "3"]], ["--budget", "converged", "--patience", "3"]),
    "max_epoch": ([["--max-epoch", "3"]], ["--budget", "converged", "--max-epoch", "3"]),
    "seeds": ([["--seeds", "1"], ["--budget", "converged", "--tiny", "--seeds", "1"],
               ["simplification", "--budget", "converged", "--seeds", "1,2"],
               ["--budget", "converged", "--runs", "lstm:word", "--seeds", "1,2"]],
              ["--budget", "converged", "--runs", "lstm:word,word_attn_gated:word", "--seeds", "1,2"]),
    "keep_checkpoints": ([["--reuse-only", "--keep-checkpoints"]], ["--keep-checkpoints"]),
    "cpu_bf16": ([["--reuse-only", "--cpu-bf16"]], ["--cpu-bf16"]),
    "jobs": ([["--reuse-only", "--jobs", "2"]], ["--jobs", "2"]),
    "threads": ([["--reuse-only", "--threads", "1"]], ["--threads", "1"]),
}

BENCH = {
    "quick": "the smoke profile", "models": "which models", "vocabs": "which vocabularies",
    "updates": "updates (timed steps with --device)", "warmup": "intervals (steps with --device) left out",
    "max_tokens": "the batch", "gen_len": "the hypotheses", "flop_batches": "the utilisation columns",
    "threads": "threads of the measured processes", "workdir": "where the data goes", "out": "the page",
    "device": "in-process measurement", "n_train": "the data", "n_test": "the batch decoding",
    "n_latency": "the latency decoding", "json": "the results file", "help": "prints the options",
    "interval": ([["--device", "cpu", "--interval", "1"]], ["--updates", "8", "--interval", "2"]),
    "clock": ([["--device", "cpu", "--clock", "wall"]], ["--clock", "wall"]),
    "convergence": ([["--device", "cpu", "--convergence", "lstm=x.log"]], ["--convergence", "lstm=x.log"]),
    "convergence_metric": ([["--convergence-metric", "bleu"]],
                           ["--convergence", "lstm=x.log", "--convergence-metric", "bleu"]),
    "maximize": ([["--maximize"]], ["--convergence", "lstm=x.log", "--maximize"]),
    "precisions": ([["--precisions", "fp32"]], ["--device", "cpu", "--precisions", "fp32"]),
    "dim": ([["--dim", "8"]], ["--device", "cpu", "--dim", "8"]),
}


def parser_dests(parser):
    return {action.dest for action in parser._actions}


def test_every_option_has_a_row():
    from bench import run as bench_run
    from fairseq_wean.compare import cli as compare_cli

    for name, table, parser in (("compare", COMPARE, compare_cli.get_parser()), ("bench", BENCH,
                                                                                 bench_run.get_parser())):
        dests = parser_dests(parser)
        assert dests == set(table), "{}: options without a row {}, rows without an option {}".format(
            name, sorted(dests - set(table)), sorted(set(table) - dests))


def flag(dest):
    return "--" + dest.replace("_", "-")


def rows(table):
    return [(dest, row) for dest, row in sorted(table.items()) if not isinstance(row, str)]


def compare_argv(args, data):
    task = args[0] if args and args[0] in ("simplification", "summarization", "translation") else None
    return [task or "translation", str(data)] + (args[1:] if task else args)


@pytest.mark.parametrize("dest,row", rows(COMPARE), ids=[d for d, _ in rows(COMPARE)])
def test_compare_refuses_an_option_where_it_does_nothing(dest, row, tmp_path, capsys):
    from fairseq_wean.compare import cli as compare_cli

    ignored, acts = row
    for args in ignored:
        with pytest.raises(SystemExit) as info:
            compare_cli.parse_args(compare_argv(args, tmp_path) + ["--out", str(tmp_path / "out")])
        err = capsys.readouterr().err.strip().splitlines()
        assert info.value.code == 2 and err[-1].startswith("fairseq-wean-compare: error: ") and \
            flag(dest) in err[-1], (args, err)
    assert not (tmp_path / "out").exists()
    if acts:
        args = compare_cli.parse_args(compare_argv(acts, tmp_path) + ["--out", str(tmp_path / "out")])
        assert getattr(args, dest) not in (None, False)


class Reached(Exception):
    """The benchmark's work started."""


@pytest.fixture
def bench_run(monkeypatch):
    from bench import device_bench
    from bench import run as bench_run

    def reached(*a, **k):
        raise Reached

    for module, name in ((bench_run, "measure_peaks"), (bench_run, "bench_vocab"), (device_bench, "run")):
        monkeypatch.setattr(module, name, reached)
    return bench_run


# x.log of the rows: a fairseq-train log with validation loss and BLEU (bench.run reads it before any work)
CONVERGENCE_LOG = ('2026-11-22 06:36:04 | INFO | valid | {"epoch": 1, "valid_loss": "5.0", "valid_bleu": "9.5"}\n'
                   '2026-11-22 06:36:04 | INFO | train | {"epoch": 1, "train_loss": "9.0", "train_wall": "100"}\n')


@pytest.mark.parametrize("dest,row", rows(BENCH), ids=[d for d, _ in rows(BENCH)])
def test_bench_run_refuses_an_option_where_it_does_nothing(dest, row, bench_run, tmp_path, capsys, monkeypatch):
    (tmp_path / "x.log").write_text(CONVERGENCE_LOG)
    monkeypatch.chdir(tmp_path)
    base = ["--quick", "--workdir", str(tmp_path / "bw"), "--out", str(tmp_path / "perf.md")]
    ignored, acts = row
    for args in ignored:
        with pytest.raises(SystemExit) as info:
            bench_run.main(base + args)
        err = capsys.readouterr().err.strip().splitlines()
        assert info.value.code == 2 and "error: " in err[-1] and flag(dest) in err[-1], (args, err)
    with pytest.raises(Reached):  # the setting where it acts: accepted, the work starts
        bench_run.main(base + acts)


def test_bench_run_refuses_a_model_named_twice(bench_run, tmp_path, capsys):
    base = ["--quick", "--workdir", str(tmp_path / "bw"), "--out", str(tmp_path / "perf.md")]
    with pytest.raises(SystemExit) as info:
        bench_run.main(base + ["--models", "lstm,wean_lstm,wean_lstm"])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and "--models names wean_lstm twice" in err[-1], err
    with pytest.raises(Reached):
        bench_run.main(base + ["--models", "lstm,wean_lstm"])


def planted_result(results, name, kind, victim):
    run = results / "lstm-word"
    run.mkdir(parents=True, exist_ok=True)
    (run / "scores.json").write_text("{}")
    path = run / name
    if kind == "symlink":
        os.symlink(victim, path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_compare_checks_the_published_folder_before_preparing_data(kind, tmp_path, capsys, monkeypatch):
    """A planted file in a published run folder was refused only after the data preparation (37 s): now
    in one line before it, nothing made in --out."""
    from fairseq_wean.compare import cli as compare_cli
    from fairseq_wean.compare import runner

    monkeypatch.setattr(runner, "prepare", lambda *a: pytest.fail("data prepared"))
    victim = tmp_path / "secret"
    victim.write_text("SECRET\n")
    planted_result(tmp_path / "published", "test2016.replace-unk.hyp", kind, victim)
    with pytest.raises(SystemExit) as info:
        compare_cli.cli_main(["translation", str(tmp_path), "--out", str(tmp_path / "out"), "--results-dir",
                              str(tmp_path / "published"), "--runs", "lstm:word", "--reuse-only"])
    line = info.value.code  # run_cli: the one error line, exit status 1
    assert isinstance(line, str) and "\n" not in line and line.startswith("fairseq-wean-compare: error: published "
                                                                           "file ") and \
        "test2016.replace-unk.hyp" in line and ": refused" in line and "SECRET" not in line, line
    assert not (tmp_path / "out").exists() and victim.read_text() == "SECRET\n"


def test_compare_reuse_only_with_nothing_published_stops_before_preparing_data(tmp_path, capsys, monkeypatch):
    from fairseq_wean.compare import cli as compare_cli
    from fairseq_wean.compare import runner

    monkeypatch.setattr(runner, "prepare", lambda *a: pytest.fail("data prepared"))
    with pytest.raises(SystemExit) as info:
        compare_cli.cli_main(["translation", str(tmp_path), "--out", str(tmp_path / "out"), "--results-dir",
                              str(tmp_path / "published"), "--runs", "lstm:word", "--reuse-only"])
    assert str(info.value.code).startswith("fairseq-wean-compare: error: --reuse-only: none of the 1 runs is published")
    assert not (tmp_path / "out").exists()


RECIPES = sorted(name[:-3] for name in os.listdir(os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "preprocess")) if name.startswith("prepare_") and name.endswith(".py"))


def folder_tools():
    """(name, call(bent path) -> exit status) of every tool that makes an output folder of a path it is given."""
    def recipe(module):
        def call(bent):
            tool = importlib.import_module("preprocess." + module)
            return _exit(lambda: tool.common.main_wrapper(lambda: tool.main(["--out", bent])))
        return call

    def compare(option):
        from fairseq_wean.compare import cli as compare_cli

        def call(bent):
            other = os.path.join(os.path.dirname(os.path.dirname(bent)), "other")
            argv = ["translation", os.path.dirname(os.path.dirname(bent)), "--runs", "lstm:word"]
            argv += ["--out", bent, "--results-dir", other] if option == "--out" else \
                ["--out", other, "--results-dir", bent]
            return _exit(lambda: compare_cli.cli_main(argv))
        return call

    def bench(module, option):
        def call(bent):
            tool = importlib.import_module(module)
            base = ["--quick"] if module == "bench.run" else []
            return _exit(lambda: tool.main(base + [option, bent, "--out", bent + ".md"]))
        return call

    def launcher(option):
        from fairseq_wean.cli import train_cpu_dist

        return lambda bent: _exit(lambda: train_cpu_dist.cli_main(["--nproc-per-node", "1", option, bent, "--",
                                                                    bent + "-data", "--arch", "lstm"]))

    tools = [("preprocess." + m, recipe(m)) for m in RECIPES]
    tools += [("compare " + o, compare(o)) for o in ("--out", "--results-dir")]
    tools += [("bench.run --workdir", bench("bench.run", "--workdir")),
              ("bench.profile --workdir", bench("bench.profile", "--workdir"))]
    tools += [("train-cpu-dist " + o, launcher(o)) for o in ("--log-dir", "--dump-rank-params")]
    return tools


def _exit(call):
    from fairseq_wean.errors import FairseqWeanError, error_line

    try:
        call()
    except SystemExit as exc:
        if isinstance(exc.code, str):
            import sys

            sys.stderr.write(exc.code + "\n")
            return 1
        return exc.code
    except FairseqWeanError as exc:
        import sys

        sys.stderr.write(error_line("tool", exc) + "\n")
        return 1
    return 0


@pytest.mark.parametrize("name,call", folder_tools(), ids=[n for n, _ in folder_tools()])
def test_an_output_folder_through_a_missing_folder_is_refused_before_anything_is_made(name, call, tmp_path,
                                                                                        capsys, monkeypatch):
    """OUT/nodir/../NAME: the OS cannot follow it, but os.path.abspath drops 'nodir/..' and os.makedirs makes
    nodir first; every tool that makes a folder it is given refuses it in one line (textio.check_resolvable),
    making nothing."""
    from bench import run as bench_run
    from fairseq_wean.compare import runner

    monkeypatch.setattr(runner, "prepare", lambda *a: pytest.fail("data prepared"))
    monkeypatch.setattr(bench_run, "measure_peaks", lambda *a: pytest.fail("work started"))
    before = sorted(os.listdir(tmp_path))
    bent = os.path.join(str(tmp_path), "nodir", os.pardir, "made")
    rc = call(bent)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc not in (0, None) and err and "error" in err[-1] and "nodir does not exist" in err[-1], (rc, err)
    assert sorted(os.listdir(tmp_path)) == before


def test_the_bf16_benchmark_drops_every_option_that_acts_only_through_validation():
    """bench.cpu_bf16 times training with --disable-validation; the comparison's command carries
    validation options, which fairseq-train refuses then (they would do nothing): every one of them,
    from the task's table, is dropped with its value, and nothing else."""
    from bench.cpu_bf16 import without_validation
    from fairseq_wean.tasks.validation_options import FAIRSEQ_VALIDATION_OPTIONS, OPTION_CONDITIONS

    dropped = sorted({n for n, row in OPTION_CONDITIONS.items() if row is not None} | set(FAIRSEQ_VALIDATION_OPTIONS))
    assert {"eval_sari", "eval_refs", "patience", "best_checkpoint_metric"} <= set(dropped)
    argv = ["data-bin", "--arch", "wean_lstm", "--max-tokens", "100"]
    for i, name in enumerate(dropped):
        argv += ["--" + name.replace("_", "-")] + (["v{}".format(i)] if i % 2 else [])
    assert without_validation(argv + ["--seed", "3"]) == ["data-bin", "--arch", "wean_lstm", "--max-tokens", "100",
                                                          "--seed", "3"]


@pytest.mark.parametrize("name", ["a:b", "x${HOME}y"])
@pytest.mark.parametrize("tool", ["compare --out", "bench --workdir"])
def test_a_folder_fairseq_would_split_or_interpolate_is_refused_before_any_work(tool, name, tmp_path, capsys):
    """The tools whose folder becomes fairseq data folders and checkpoints (textio.PATH_RULES, as
    examples/job_guard.py): a ':' (fairseq splits data folders and --path on it) or '${' (OmegaConf) in it was
    refused by fairseq-train only after the data were prepared."""
    folder = tmp_path / name
    with pytest.raises(SystemExit) as info:
        if tool.startswith("compare"):
            from fairseq_wean.compare import cli as compare_cli

            compare_cli.parse_args(compare_argv([], tmp_path) + ["--out", str(folder)])
        else:
            importlib.import_module("bench.run").main(["--workdir", str(folder), "--quick"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert info.value.code == 2 and "holds '{}'".format(":" if ":" in name else "${") in err, err
    assert tool.split()[1] in err and not folder.exists()
