"""scripts/gpu_check.sh, the GPU run prepared on the CPU: its refusals, ``--dry-run``, the CPU stand-in
end to end (``--device cpu``, tiny sizes: the same code as on a GPU), its results' files and keys,
and its time budget (a part not reached is listed, a part past its time is stopped and keeps its JSON).
Its folders: every file it writes in OUT (``gpu_check.OUT_FILES``) and every name in --workdir
(``gpu_check.WORKDIR_NAMES``), planted as a symbolic link to a victim or as a named pipe, is refused in
one line or replaced, never written through, never blocks; nothing is removed under a linked folder;
checkpoints and rank dumps are unpickled with the allow-list.

The stand-in takes about a minute on 2 cores; the other cases seconds.
"""
import contextlib
import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
import types

import pytest

from conftest import REPO
from bench import device_checks, flops, gpu_check, pytest_progress

SCRIPT = os.path.join(REPO, "scripts", "gpu_check.sh")
# the tests part of the stand-in: two quick CPU cases of tests/test_devices.py (the default, three
# whole files, is for a GPU run)
TINY_TESTS = "tests/test_devices.py -k 'cpu and masked_log'"
BUDGET = 240
PARTS = ["tests", "precision", "distributed", "bench"]
FILE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def script(*args, out=None, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("OUT", "GPU_CHECK_T0")}
    env.update(PYTHON=sys.executable, OMP_NUM_THREADS="1")
    if out is not None:
        env["OUT"] = str(out)
    return subprocess.run(["bash", SCRIPT, *[str(a) for a in args]], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def load(folder, name):
    with open(os.path.join(str(folder), name)) as f:
        return json.load(f)


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    out = tmp_path / "out"
    proc = script("--dry-run", "--budget", 300, out=out)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "budget 300 s" in text and "device cuda, sizes full" in text
    steps = re.findall(r"^  (\d)\. (\w+):", text, re.M)
    assert steps == [("0", "setup"), ("1", "tests"), ("2", "precision"), ("3", "distributed"), ("4", "bench")]
    assert "8000,50000 words, fp32, amp, fp16" in text and "starts if >= 60 s are left" in text
    assert str(out) in text and not out.exists()  # nothing written, nothing installed
    cpu = script("--dry-run", "--device", "cpu", "--parts", "bench,tests", out=out)
    assert "device cpu, sizes tiny" in cpu.stdout and "fp32, cpu-bf16" in cpu.stdout
    assert "2. precision" in cpu.stdout and "not selected (--parts)" in cpu.stdout
    # without OUT the plan still prints, and says that a run would need one
    assert "none: set OUT or give --out DIR" in script("--dry-run").stdout


@pytest.mark.parametrize("args,message", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--budget", "abc"], "argument --budget: expected a number of seconds, got 'abc'"),
    (["--budget", "-5"], "argument --budget: must be a number of seconds > 0, got '-5'"),
    (["--budget", "nan"], "argument --budget: must be a number of seconds > 0, got 'nan'"),
    (["--budget", "inf"], "argument --budget: must be a number of seconds > 0, got 'inf'"),
    (["--parts", "tests,gpu"], "argument --parts: unknown part(s) 'gpu'"),
    (["--parts", "tests,bench,tests"], "argument --parts: part(s) given twice: 'tests'"),
    (["--tests", ""], "argument --tests: empty: give pytest's arguments"),
    (["--tests", "  "], "argument --tests: empty: give pytest's arguments"),
    (["--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
    ([], "no output folder: set OUT or give --out DIR"),
])
def test_bad_input_is_refused_in_one_line_before_any_work(args, message, tmp_path):
    start = time.monotonic()
    proc = script(*args, "--workdir", tmp_path / "work")
    assert proc.returncode == gpu_check.EXIT_USAGE, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("gpu_check.sh: error: " + message), proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert not (tmp_path / "work").exists()
    assert time.monotonic() - start < 20  # refused before anything is imported or installed


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    """The whole CPU stand-in, once: every part, tiny sizes."""
    base = tmp_path_factory.mktemp("gpu-check")
    out, pages = base / "out", base / "pages"
    start = time.monotonic()
    proc = script("--device", "cpu", "--budget", BUDGET, "--tests", TINY_TESTS, "--workdir", base / "work",
                  "--page-dir", pages, out=out, timeout=BUDGET + 60)
    return {"proc": proc, "seconds": time.monotonic() - start, "out": out, "pages": pages, "work": base / "work"}


def test_the_stand_in_runs_every_part_within_its_budget(stand_in):
    proc, out = stand_in["proc"], stand_in["out"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert stand_in["seconds"] < BUDGET
    files = sorted(os.listdir(str(out)))
    assert files == sorted(["summary.md", "run.json", "log.txt"] + [p + ".json" for p in PARTS]) == sorted(gpu_check.OUT_FILES)
    assert len(files) <= 8 and all(FILE_NAME.match(f) and os.path.isfile(os.path.join(str(out), f)) for f in files)
    # the names the folder tests below plant are all the run writes in --workdir
    assert set(os.listdir(str(stand_in["work"]))) <= set(gpu_check.WORKDIR_NAMES)
    run = load(out, "run.json")
    assert run["finished"] and run["exit_code"] == 0 and run["not_reached"] == []
    assert [run["parts"][p]["status"] for p in PARTS] == ["passed"] * 4, run["parts"]
    machine = run["machine"]
    assert machine["device"] == "cpu" and machine["torch"] and machine["cpu"] and machine["gpus"] == []
    assert run["source"]["commit"] and re.match(r"^[0-9a-f]{16}$", run["source"]["tree_fingerprint"])
    assert "machine: no GPU; torch " in proc.stdout and "done: " in proc.stdout


def test_the_stand_in_writes_each_parts_results(stand_in):
    out = stand_in["out"]
    tests = load(out, "tests.json")
    assert tests["complete"] and tests["passed"] and tests["counts"]["passed"] == 2 and tests["counts"]["failed"] == 0
    assert set(tests["by_file"]) == {"tests/test_devices.py"}

    precision = load(out, "precision.json")
    assert precision["complete"] and precision["passed"] and precision["precisions"] == ["fp32", "cpu-bf16"]
    assert set(precision["models"]) == {"wean_lstm", "core_copy", "word_attn_gated", "lstm"}
    for name, model in precision["models"].items():
        fp32, low = model["runs"]["fp32"], model["runs"]["cpu-bf16"]
        assert len(fp32["losses"]) == len(low["losses"]) == precision["updates"]
        assert all(0 < x < 20 for x in fp32["losses"] + low["losses"]), name  # bits per token, 300 words
        c = model["vs_fp32"]["cpu-bf16"]
        assert c["passed"] and c["same_initial_weights"] and c["problems"] == []
        assert 0 <= c["first_update_abs_diff"] <= c["tolerance"]["first_update_abs"]
        assert 0 <= c["max_rel_diff"] <= c["tolerance"]["max_rel"] and 1 <= c["at_update"] <= precision["updates"]
        assert fp32["valid_loss"] > 0 and low["valid_loss"] > 0

    distributed = load(out, "distributed.json")
    assert distributed["complete"] and distributed["passed"]
    job = distributed["models"]["wean_lstm"]
    assert job["exit_codes"] == {"rank0": 0, "rank1": 0, "single": 0}
    assert job["ranks_bit_identical"] and job["training_on_2_devices"] and job["backend_gloo"]
    assert job["updates"] == distributed["updates"] == len(job["losses_two_ranks"])
    assert job["max_abs_param_diff"] <= distributed["tolerance"]["param_atol"]
    assert job["max_logged_loss_diff"] <= distributed["tolerance"]["logged_loss_atol"]

    bench = load(out, "bench.json")
    assert bench["complete"] and bench["errors"] == [] and bench["device"] == "cpu"
    rows = {(r["precision"], r["model"]): r for r in bench["rows"]}
    models = ["lstm", "transformer", "wean_lstm", "core_copy", "word_attn_gated"]
    assert set(rows) == {(p, m) for p in ("fp32", "cpu-bf16") for m in models}
    assert [r["model"] for r in bench["rows"][:2]] == ["lstm", "transformer"]  # the anchors first
    counts_flops = flops.missing() is None  # torch < 2.1: the part runs with --flop-batches 0, says why
    assert ("bench: FLOP counting needs torch >= 2.1" in stand_in["proc"].stdout) == (not counts_flops)
    for (precision, name), r in rows.items():
        assert r["train_tok_s"] > 0
        if counts_flops:
            assert r["train_flops_per_token"] > 0 and 0 < r["peak_share"] < 1
        else:
            assert r["train_flops_per_token"] is None and "peak_share" not in r
        assert r["train_peak_mib"] is None  # the CPU has no per-piece peak
        if precision == "fp32":
            assert r["gen_sent_s"] > 0 and r["latency_ms"] > 0
        else:
            assert "gen_sent_s" not in r  # fairseq-generate decodes cpu-bf16 as fp32


def test_the_summary_is_the_results_page(stand_in):
    text = open(os.path.join(str(stand_in["out"]), "summary.md")).read()
    assert text.startswith("# GPU check, ") and ": CPU stand-in" in text.splitlines()[0]
    assert "**No GPU was used**" in text  # a CPU run never reads as a GPU result
    for heading in ("## tests", "## precision", "## distributed", "## bench"):
        assert heading in text
    assert "| wean_lstm | cpu-bf16 |" in text and "**Vocabulary 300 words, fp32**" in text
    assert "(x lstm / transformer, higher is better)" in text
    pages = os.listdir(str(stand_in["pages"]))
    assert len(pages) == 1 and re.match(r"^\d{4}-\d\d-\d\d-cpu-stand-in\.md$", pages[0])
    assert open(os.path.join(str(stand_in["pages"]), pages[0])).read() == text  # committing it is a copy


def test_a_tiny_budget_stops_before_the_parts_and_lists_them(tmp_path):
    out = tmp_path / "out"
    proc = script("--device", "cpu", "--budget", 1, "--workdir", tmp_path / "work", out=out)
    assert proc.returncode == gpu_check.EXIT_BUDGET, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "not reached within the budget of 1 s: tests, precision, distributed, bench" in proc.stdout
    run = load(out, "run.json")
    assert run["not_reached"] == PARTS and all(run["parts"][p]["status"] == "not reached" for p in PARTS)
    assert "**Not reached** within the budget: tests, precision, distributed, bench" in open(str(out / "summary.md")).read()
    assert sorted(os.listdir(str(out))) == ["log.txt", "run.json", "summary.md"]


def test_a_part_past_its_time_is_stopped_and_keeps_what_it_wrote(tmp_path, monkeypatch):
    """A part that outlives its cap is stopped with its whole process group; the JSON it wrote as
    it went stays, and the summary says it is not complete."""
    cfg = gpu_check.parse(["--device", "cpu", "--out", str(tmp_path / "out"), "--workdir", str(tmp_path / "work"),
                           "--parts", "precision"])
    cfg.argv = []
    run = gpu_check.Run(cfg, time.time())
    result = run.path("precision.json")
    child = ("import json, subprocess, sys, time\n"
             "json.dump({'complete': False, 'updates': 4, 'models': {}}, open(sys.argv[1], 'w'))\n"
             "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
             "time.sleep(120)\n")
    monkeypatch.setitem(gpu_check.TIMES, "precision", {"cpu": (0, 2)})
    monkeypatch.setattr(gpu_check, "part_command", lambda run, part: ([sys.executable, "-c", child, result], {}))
    start = time.monotonic()
    gpu_check.run_part(run, "precision")
    assert time.monotonic() - start < 15
    part = run.state["parts"]["precision"]
    assert part["status"] == "stopped" and "its cap" in part["note"] and part["exit_code"] is None
    assert load(run.cfg.out, "precision.json") == {"complete": False, "updates": 4, "models": {}}
    assert "## precision (not complete)" in open(run.path("summary.md")).read()
    assert gpu_check.exit_code(run.state) == gpu_check.EXIT_BUDGET


def test_failed_tests_are_a_failed_part_with_their_messages(tmp_path, monkeypatch):
    """tests.json from bench/pytest_progress.py's lines: counts, each failure's message, the skip
    reasons, the named cases (the native-bf16 case, the fp32 CLI cases); pytest's exit 1 fails the part."""
    cfg = gpu_check.parse(["--device", "cpu", "--out", str(tmp_path / "out"), "--workdir", str(tmp_path / "work")])
    cfg.argv = []
    run = gpu_check.Run(cfg, time.time())
    lines = [{"nodeid": "tests/test_cpu_bf16.py::test_user_cpu_autocast_with_native_bf16_runs_recurrent_layers_in_bf16[core_copy]",
              "when": "call", "outcome": "passed", "duration": 0.1},
             {"nodeid": "tests/test_devices.py::test_fairseq_train_and_generate_on_one_gpu[wean_lstm-fp32]",
              "when": "call", "outcome": "failed", "duration": 9.0, "message": "E   AssertionError: loss_scale"},
             {"nodeid": "tests/test_devices.py::test_two_nccl_ranks_equal_one_gpu_with_update_freq_2[lstm]",
              "when": "setup", "outcome": "skipped", "duration": 0.0, "reason": "needs 2 GPUs"}]
    child = ("import json, os, sys\n"
             "with open(os.environ['GPU_CHECK_PYTEST_LOG'], 'a') as f:\n"
             "    f.write(''.join(json.dumps(l) + '\\n' for l in json.loads(sys.argv[1])))\n"
             "sys.exit(1)\n")
    monkeypatch.setattr(gpu_check, "part_command", lambda run, part: (
        [sys.executable, "-c", child, json.dumps(lines)],
        {"GPU_CHECK_PYTEST_LOG": os.path.join(cfg.workdir, "tests.jsonl")}))
    gpu_check.run_part(run, "tests")
    assert run.state["parts"]["tests"]["status"] == "failed" and run.state["parts"]["tests"]["exit_code"] == 1
    tests = load(cfg.out, "tests.json")
    assert tests["complete"] and not tests["passed"]
    assert tests["counts"] == {"passed": 1, "failed": 1, "skipped": 1}
    assert tests["failed"] == [{"nodeid": lines[1]["nodeid"], "message": "E   AssertionError: loss_scale"}]
    assert tests["skipped"] == [{"reason": "needs 2 GPUs", "count": 1, "example": lines[2]["nodeid"]}]
    assert tests["notable"] == {lines[0]["nodeid"]: "passed", lines[1]["nodeid"]: "failed"}
    summary = open(run.path("summary.md")).read()
    assert "1 passed, 1 failed, 1 skipped" in summary and "**failed** tests/test_devices.py::" in summary
    assert gpu_check.exit_code(run.state) == gpu_check.EXIT_FAILED


def curve_run(losses, valid=5.0, skipped=()):
    return {"losses": list(losses), "valid_loss": valid, "skipped_updates": list(skipped), "initial_weights_abs_sum": 1.0}


def test_low_precision_curves_are_held_to_the_stated_tolerances():
    ref = curve_run([10.0, 9.0, 8.0, 7.0])
    ok = device_checks.compare_curves(curve_run([10.005, 9.05, 8.1, 7.1]), ref, "amp")
    assert ok["passed"], ok["problems"]
    assert ok["first_update_abs_diff"] == pytest.approx(0.005) and ok["at_update"] == 4
    assert ok["max_rel_diff"] == pytest.approx(0.1 / 7)
    drift = device_checks.compare_curves(curve_run([10.0, 9.0, 8.0, 7.2]), ref, "fp16")
    assert not drift["passed"] and drift["problems"] == ["update 4 2.86% off (tolerance 2%)"]
    first = device_checks.compare_curves(curve_run([10.02, 9.0, 8.0, 7.0]), ref, "amp")
    assert first["problems"] == ["first update 0.0200 bits off (tolerance 0.01)"]
    assert device_checks.compare_curves(curve_run([10.02, 9.0, 8.0, 7.0]), ref, "cpu-bf16")["passed"]  # bf16: 0.06
    skipped = device_checks.compare_curves(curve_run([10.0, 9.0, 8.0, 7.0], skipped=[2]), ref, "fp16")
    assert skipped["problems"] == ["updates skipped (gradient overflow): [2]"]
    nan = device_checks.compare_curves(curve_run([10.0, float("nan"), 8.0, 7.0]), ref, "amp")
    assert not nan["passed"] and "non-finite or missing losses" in nan["problems"]


def test_every_numeric_option_has_a_checked_range():
    """A repo-wide rule: a numeric option's type is fairseq_wean.errors.at_least or has its ``range``."""
    actions = [a for a in gpu_check.get_parser()._actions if a.type in (int, float)
               or (isinstance(a.default, (int, float)) and not isinstance(a.default, bool))]
    assert [a.dest for a in actions] == ["budget"]
    for a in actions:
        low, kind, high, above = a.type.range
        assert kind in (int, float) and a.type(str(low + 1)) == low + 1
        for bad in ("nan", "inf", "-inf", str(low)):
            with pytest.raises(Exception):
                a.type(bad)


# ------------------------------------------------------------------------------ links and pipes
VICTIM = "VICTIM: not the GPU check's\n"


def plant(path, kind, tmp_path):
    """``path`` as a symbolic link to a victim file (``link``), to a victim folder holding a file
    (``dirlink``), to a file that does not exist (``dangling``), or a named pipe (``fifo``). Returns
    a function giving the victim's state, to compare before and after."""
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    victim = tmp_path / "victim"
    if kind == "link":
        victim.write_text(VICTIM)
        os.symlink(str(victim), path)
    elif kind == "dirlink":
        (victim / "wean_lstm").mkdir(parents=True)
        (victim / "wean_lstm" / "keep.txt").write_text(VICTIM)
        os.symlink(str(victim), path)
    elif kind == "dangling":
        os.symlink(str(victim), path)
    else:
        os.mkfifo(path)

    def state():
        if not os.path.lexists(str(victim)):
            return None
        if victim.is_dir():
            return sorted((os.path.relpath(f, str(victim)), open(f).read())
                          for f in map(str, victim.rglob("*")) if os.path.isfile(f))
        return victim.read_text()
    return state


@contextlib.contextmanager
def never_blocks(*fifos, seconds=15):
    """Fails the test if anything is still blocked on one of the named pipes ``fifos`` after
    ``seconds`` (then opened read-write here, which frees a blocked open, and closed, which ends a read)."""
    done, freed = threading.Event(), []

    def watch():
        if done.wait(seconds):
            return
        for f in map(str, fifos):
            if os.path.lexists(f) and stat.S_ISFIFO(os.lstat(f).st_mode):
                fd = os.open(f, os.O_RDWR | os.O_NONBLOCK)
                freed.append(f)
                with contextlib.suppress(OSError):
                    os.read(fd, 1 << 20)
                os.close(fd)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    assert not freed, "blocked on the named pipe(s) {}".format(freed)


def assert_one_line_refusal(proc, *words):
    assert proc.stderr.startswith("gpu_check.sh: error: ") and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    for word in words:
        assert word in proc.stderr


def assert_written_as_itself(path):
    """Where the run wrote, a regular file of its own (the planted link or pipe replaced)."""
    if os.path.lexists(str(path)):
        info = os.lstat(str(path))
        assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1, path


@pytest.mark.parametrize("kind", ["link", "dangling", "fifo"])
@pytest.mark.parametrize("name", gpu_check.OUT_FILES)
def test_a_link_or_pipe_planted_in_out_is_refused_or_replaced(name, kind, tmp_path):
    """The probe's case: OUT/log.txt -> a victim was truncated and filled with the log, a named pipe at
    OUT/tests.json blocked the run forever. Now each file of OUT: refused in one line, or replaced."""
    out = tmp_path / "out"
    victim = plant(out / name, kind, tmp_path)
    before = victim()
    proc = script("--device", "cpu", "--budget", 1, "--workdir", tmp_path / "work", out=out, timeout=90)  # no hang
    assert victim() == before
    if proc.returncode in (gpu_check.EXIT_USAGE, gpu_check.EXIT_FAILED):
        assert_one_line_refusal(proc, name)
    else:
        assert proc.returncode == gpu_check.EXIT_BUDGET, proc.stderr[-3000:]
        for written in gpu_check.OUT_FILES:
            assert_written_as_itself(out / written)
    assert not os.path.lexists(str(tmp_path / "victim")) or kind != "dangling"  # no file made through the link


WORKDIR_CASES = [(name, "dirlink" if "." not in name else "link") for name in gpu_check.WORKDIR_NAMES] + [
    (name, "fifo") for name in gpu_check.WORKDIR_NAMES] + [
    # deeper: a model's folder of the distributed part (removed and made again), the data's log
    ("distributed/wean_lstm", "dirlink"), ("bench/v300/data.log", "link"), ("bench/v300/data.log", "fifo")]


@pytest.mark.parametrize("name,kind", WORKDIR_CASES)
def test_a_link_or_pipe_planted_in_the_workdir_is_refused_before_any_work(name, kind, tmp_path):
    """WORKDIR/distributed -> a victim folder made the distributed part delete under the link's target;
    a link or a pipe anywhere the run writes in --workdir is refused in one line, before any work."""
    work, out = tmp_path / "work", tmp_path / "out"
    victim = plant(work / name, kind, tmp_path)
    before = victim()
    proc = script("--device", "cpu", "--budget", 1, "--workdir", work, out=out, timeout=90)
    assert victim() == before
    assert proc.returncode == gpu_check.EXIT_USAGE, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert_one_line_refusal(proc, "--workdir", name, "symbolic link" if "link" in kind else "named pipe")
    assert proc.stdout == "" and not out.exists()


@pytest.mark.parametrize("kind", ["link", "fifo"])
@pytest.mark.parametrize("where,name", [("out", n) for n in gpu_check.OUT_FILES] + [
    ("workdir", n) for n in (gpu_check.WORKDIR_CONFIG, gpu_check.WORKDIR_ENV, gpu_check.WORKDIR_TESTS_LOG)])
def test_every_read_and_write_of_the_run_refuses_or_replaces_a_link_or_pipe(where, name, kind, tmp_path, monkeypatch):
    """Behind the check before the run: each place that reads or writes a file of OUT or the workdir
    (the log, the settings, the machine, the tests' lines and tests.json, run.json, the summary, the
    parts' JSON) with a link or a pipe planted after the run started: refused (one line) or replaced."""
    cfg = gpu_check.parse(["--device", "cpu", "--out", str(tmp_path / "out"), "--workdir", str(tmp_path / "work"),
                           "--parts", "tests"])
    cfg.argv = []
    run = gpu_check.Run(cfg, time.time())
    path = os.path.join(cfg.out if where == "out" else cfg.workdir, name)
    if os.path.lexists(path):
        os.unlink(path)
    victim = plant(path, kind, tmp_path)
    before = victim()
    monkeypatch.setattr(gpu_check, "part_command", lambda run, part: ([sys.executable, "-c", "pass"], {}))
    refused = None
    with never_blocks(path):
        try:
            run.say("planted {}".format(name))
            gpu_check.config_file(run)
            gpu_check.read_json(os.path.join(cfg.workdir, gpu_check.WORKDIR_ENV), cfg.workdir, "--workdir")
            gpu_check.run_part(run, "tests")
            run.save()
        except gpu_check.Refused as exc:
            refused = str(exc)
    assert victim() == before
    if refused is not None:
        assert "\n" not in refused and path in refused and ("symbolic link" in refused or "named pipe" in refused)
    else:
        assert_written_as_itself(path)


def test_the_distributed_part_never_removes_under_a_linked_folder(tmp_path):
    work = tmp_path / "work"
    victim = plant(work / gpu_check.WORKDIR_DISTRIBUTED, "dirlink", tmp_path)
    before = victim()
    cfg = {"workdir": str(work), "device": "cpu"}
    with pytest.raises(gpu_check.Refused, match=r"distributed is a symbolic link: refused \(not removed\)"):
        device_checks.start_job("wean_lstm", "unused-data-bin", None, cfg)
    os.unlink(str(work / gpu_check.WORKDIR_DISTRIBUTED))
    (work / gpu_check.WORKDIR_DISTRIBUTED).mkdir()
    os.symlink(str(tmp_path / "victim" / "wean_lstm"), str(work / gpu_check.WORKDIR_DISTRIBUTED / "wean_lstm"))
    with pytest.raises(gpu_check.Refused, match=r"wean_lstm is a symbolic link"):
        device_checks.start_job("wean_lstm", "unused-data-bin", None, cfg)
    assert victim() == before
    with pytest.raises(gpu_check.Refused, match="outside"):
        gpu_check.make_dirs(str(work), str(tmp_path / "elsewhere"))
    with pytest.raises(gpu_check.Refused, match="not a folder inside it"):
        gpu_check.remove_tree(str(work), str(tmp_path))
    assert victim() == before and (work / gpu_check.WORKDIR_DISTRIBUTED).is_dir()
    (work / "d" / "e").mkdir(parents=True)  # a real folder of its own is removed
    gpu_check.remove_tree(str(work), str(work / "d"))
    assert not (work / "d").exists()


class _Planted:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_checkpoints_and_rank_dumps_are_loaded_with_the_allow_list(tmp_path):
    import torch

    dump = tmp_path / "rank0.pt"
    torch.save({"num_updates": 3, "model": {"w": torch.arange(4.0)}}, str(dump))
    loaded = device_checks.load_checkpoint(str(dump), str(tmp_path))
    assert loaded["num_updates"] == 3 and torch.equal(loaded["model"]["w"], torch.arange(4.0))
    marker = tmp_path / "code-ran"
    torch.save({"model": {}, "x": _Planted(str(marker))}, str(tmp_path / "evil.pt"))
    with pytest.raises(Exception):
        device_checks.load_checkpoint(str(tmp_path / "evil.pt"), str(tmp_path))
    assert not marker.exists()
    os.symlink(str(dump), str(tmp_path / "link.pt"))
    with pytest.raises(gpu_check.Refused, match="symbolic link"):
        device_checks.load_checkpoint(str(tmp_path / "link.pt"), str(tmp_path))


def _report(nodeid="tests/test_x.py::test_a"):
    return types.SimpleNamespace(nodeid=nodeid, when="call", outcome="passed", duration=0.1, skipped=False,
                                 failed=False, passed=True, longrepr=None)


@pytest.mark.parametrize("kind", ["link", "dangling", "fifo"])
def test_the_tests_json_lines_never_follow_a_link_or_block(kind, tmp_path, monkeypatch, capsys):
    """bench/pytest_progress.py appends a line per test: a link or a pipe there is refused in one line
    when pytest starts, and one planted while the tests run gets no more lines."""
    path = tmp_path / "tests.jsonl"
    monkeypatch.setenv("GPU_CHECK_PYTEST_LOG", str(path))
    monkeypatch.setattr(pytest_progress, "_CONFIG", {})
    victim = plant(path, kind, tmp_path)
    before = victim()
    with never_blocks(path):
        with pytest.raises(pytest.UsageError, match="symbolic link|named pipe"):
            pytest_progress.pytest_configure(types.SimpleNamespace())
    os.unlink(str(path))
    pytest_progress.pytest_configure(types.SimpleNamespace())
    pytest_progress.pytest_runtest_logreport(_report())
    assert [json.loads(l)["nodeid"] for l in path.read_text().splitlines()] == ["tests/test_x.py::test_a"]
    os.unlink(str(path))
    plant(path, kind, tmp_path)
    with never_blocks(path):
        pytest_progress.pytest_runtest_logreport(_report("tests/test_x.py::test_b"))
        pytest_progress.pytest_runtest_logreport(_report("tests/test_x.py::test_c"))
    assert victim() == before
    err = capsys.readouterr().err
    assert err.count("bench.pytest_progress: error: ") == 1 and err.count("\n") == 1
