"""scripts/gpu_check.sh, the GPU run prepared on the CPU: its refusals, ``--dry-run``, the CPU stand-in
end to end (``--device cpu``, tiny sizes: the same code as on a GPU), its results' files and keys,
and its time budget (a part not reached is listed, a part past its time is stopped and keeps its JSON).

The stand-in takes about a minute on 2 cores; the other cases seconds.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import REPO
from bench import device_checks, gpu_check

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
    (["--parts", "tests,gpu"], "argument --parts: unknown part(s) 'gpu'"),
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
    return {"proc": proc, "seconds": time.monotonic() - start, "out": out, "pages": pages}


def test_the_stand_in_runs_every_part_within_its_budget(stand_in):
    proc, out = stand_in["proc"], stand_in["out"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert stand_in["seconds"] < BUDGET
    files = sorted(os.listdir(str(out)))
    assert files == sorted(["summary.md", "run.json", "log.txt"] + [p + ".json" for p in PARTS])
    assert len(files) <= 8 and all(FILE_NAME.match(f) and os.path.isfile(os.path.join(str(out), f)) for f in files)
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
    for (precision, name), r in rows.items():
        assert r["train_tok_s"] > 0 and r["train_flops_per_token"] > 0 and 0 < r["peak_share"] < 1
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
