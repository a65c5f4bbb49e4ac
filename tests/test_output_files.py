"""No tool writes or reads through a planted file (the project's rule on output and data folders).

Every tool that writes an output file, or reads a file it finds in a results/data folder, is run
here once per plant at that file: a symbolic link to a victim outside the folder, a named pipe, a
device node and a directory. For each: nothing hangs (a time-out), the victim (or the node, or the
directory's content) is unchanged, and the tool either refuses with ONE error line and a non-zero
exit (a Traceback fails), or, for a symbolic link at an output, replaces the link by its new file
(``textio.atomic_output``) without writing through it. A file a tool reads from a folder it did not
name (results.json, a train.log) is refused in every case (``textio.open_in_folder``). At a file a tool writes,
two more plants: a hard link to a victim (refused, or the name replaced by a new file: the victim keeps its bytes)
and the output option given as FOLDER/nodir/../NAME through a missing folder (refused in one line, no folder made,
FOLDER/NAME untouched).

``test_every_tool_with_an_output_is_enumerated`` finds the tools (setup.py's console scripts, the
``python -m preprocess.*`` / ``bench.*`` modules and ``examples/*.py`` with an output option) and
fails on one that has no case here and no stated reason; ``test_no_bare_write_outside_textio`` fails
on a new bare ``open(..., "w")`` / ``shutil.copy`` / ``Path.write_text`` in the tools' code: a writer
goes through ``fairseq_wean.textio`` (``atomic_output``, ``open_in_folder``, ``open_log``, ``update_section``).
"""
import ast
import collections
import json
import os
import re
import stat
import sys

import pytest

from conftest import BIN, REPO

TIMEOUT = 120
VICTIM = b"precious\n"
PLANTS = ["symlink", "fifo", "device", "directory"]
# only at a file a tool writes: a hard link to a victim (the victim keeps its bytes: refused, or the name replaced
# by a new file, never written in place) and the output option given as FOLDER/nodir/../NAME through a missing
# folder (the OS refuses that path; a tool that normalizes it first would write FOLDER/NAME, planted here)
WRITE_PLANTS = ["hardlink", "nodir"]


def lines(path, n=24, seed=0, shorter=False):
    import random

    rng = random.Random(seed)
    words = ["w%d" % i for i in range(20)]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(n):
            sent = [rng.choice(words) for _ in range(rng.randint(3, 7))]
            f.write(" ".join(sent[:-1] if shorter else sent) + "\n")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Tiny inputs shared by every case (the cases never plant anything here)."""
    root = tmp_path_factory.mktemp("inputs")
    raw = root / "raw"
    raw.mkdir()
    for split, n in (("train", 40), ("test", 8)):
        lines(raw / (split + ".src"), n, seed=len(split))
        lines(raw / (split + ".tgt"), n, seed=len(split), shorter=True)
    (raw / "codes.fastbpe").write_text("w 1 10\nw1 0 5\n")
    (raw / "table").write_text("w1\tw1\t1.0\nw2\tw2\t1.0\n")
    (raw / "hyp").write_text("".join("<unk-1> w1\n" for _ in range(8)))
    tok = root / "data" / "translation" / "multi30k_deen" / "tok"
    tok.mkdir(parents=True)
    for stem in ("train", "val", "test_2016_flickr"):
        lines(tok / "{}.lc.norm.tok.de".format(stem), 30, seed=1)
        lines(tok / "{}.lc.norm.tok.en".format(stem), 30, seed=1, shorter=True)
    return root


def comparison_folder(folder):
    """A finished comparison's folder (what bench.convergence and publish_results read)."""
    run = {"valid_metric": "bleu", "curve": [{"epoch": 1, "bleu": 10.0}, {"epoch": 2, "bleu": 20.0}],
           "valid_loss": {"1": 4.0, "2": 3.0}}
    (folder / "runs" / "lstm-word").mkdir(parents=True)
    (folder / "runs" / "lstm-word" / "train.log").write_text("")
    (folder / "results.json").write_text(json.dumps({
        "meta": {}, "recipe": {"task": "translation", "valid": {"metric": "bleu"}}, "runs": {"lstm:word": run}}))
    (folder / "results.md").write_text("# translation comparison\n\n| a |\n|---|\n")
    (folder / "valid_curve.png").write_bytes(b"\x89PNG not really")
    return folder


def py(*args):
    return [sys.executable] + [str(a) for a in args]


def tool(name, *args):
    return [os.path.join(BIN, name)] + [str(a) for a in args]


# name -> (what: "write" (an output) or "read" (a file found in a folder), build(inputs, work) -> (argv, plant)).
# ``tools``: the (module, flag) pairs of test_every_tool_with_an_output_is_enumerated that the case covers.
Case = collections.namedtuple("Case", "what build tools")


def _report(i, w):
    return tool("fairseq-wean-report", "--sys", i / "raw/test.src", "--refs", i / "raw/test.tgt", "--orig",
                i / "raw/test.src", "--metrics", "bleu", "--out", w / "page.html"), w / "page.html"


def _align(i, w):
    return tool("fairseq-wean-align-table", "--src", i / "raw/train.src", "--tgt", i / "raw/train.tgt",
                "--out", w / "align.table"), w / "align.table"


def _compare(i, w):  # --reuse-only: data preparation, then one line (the published scores.json is empty); cheap
    (w / "published/lstm-word").mkdir(parents=True)
    (w / "published/lstm-word/scores.json").write_text("{}")
    return tool("fairseq-wean-compare", "translation", i / "data", "--out", w / "cmp", "--results-dir",
                w / "published", "--tiny", "--runs", "lstm:word", "--reuse-only"), w / "cmp/data/text/train.de"


def _cpu_dist(i, w):
    return tool("fairseq-wean-train-cpu-dist", "--nproc-per-node", "1", "--log-dir", w / "logs", "--",
                w / "no-data", "--arch", "lstm"), w / "logs/rank0.log"


def _split(i, w):
    return py("-m", "preprocess.split_characters", "--input", i / "raw/train.src", "--output", w / "chars"), w / "chars"


def _vocab(i, w):
    return py("-m", "preprocess.unk_markers", "vocab", "--src", i / "raw/train.src", "--tgt", i / "raw/train.tgt",
              "--min-count", "1", "--out", w / "dict.txt"), w / "dict.txt"


def _encode(i, w):
    return py("-m", "preprocess.unk_markers", "encode", "--vocab", i / "raw/table", "--src", i / "raw/test.src",
              "--tgt", i / "raw/test.tgt", "--src-out", w / "m.src", "--tgt-out", w / "m.tgt"), w / "m.tgt"


def _decode(i, w):
    return py("-m", "preprocess.unk_markers", "decode", "--src", i / "raw/test.src", "--hyp", i / "raw/hyp",
              "--out", w / "decoded"), w / "decoded"


def _fastbpe(i, w):
    return py("-m", "preprocess.fastbpe_codes", "--fastbpe", i / "raw/codes.fastbpe", "--out", w / "codes"), w / "codes"


def _check_parallel(i, w):
    return py("-m", "preprocess.check_parallel", "--src", i / "raw/train.src", "--tgt", i / "raw/train.tgt",
              "--out-prefix", w / "clean"), w / "clean.tgt"


def _coverage(i, w):
    return py("-m", "preprocess.coverage_report", "--train-src", i / "raw/train.src", "--train-tgt",
              i / "raw/train.tgt", "--src", i / "raw/test.src", "--tgt", i / "raw/test.tgt", "--table",
              i / "raw/table", "--json", w / "coverage.json"), w / "coverage.json"


def _recipe(i, w):
    return py("-m", "preprocess.prepare_multi30k", "--data-dir", i / "data", "--out", w / "m30", "--variants",
              "word", "--tiny"), w / "m30/text/train.de"


PROFILE = ("--vocab", "50", "--n-train", "20", "--models", "lstm", "--steps", "1", "--max-tokens", "64",
           "--gen-len", "2", "--top", "1")


def _profile_workdir(i, w):
    return py("-m", "bench.profile", *PROFILE, "--workdir", w / "bw", "--out", w / "perf.md"), w / "bw/v50/raw/dict.txt"


def _profile_out(i, w):
    return py("-m", "bench.profile", *PROFILE, "--workdir", w / "bw", "--out", w / "perf.md"), w / "perf.md"


def _convergence(plant):
    def build(i, w):
        cmp = comparison_folder(w / "compare-translation")
        return py("-m", "bench.convergence", cmp, "--out", w / "perf.md"), w / plant
    return build


def _publish(plant, *extra):
    def build(i, w):
        cmp = comparison_folder(w / "compare-translation")
        return py(os.path.join(REPO, "examples", "publish_results.py"), cmp, "--results", w / "page.md",
                  *extra), w / plant
    return build


def _compare_run(name):  # a file of --out/runs/SYSTEM-VOCAB: refused before any work (train_log.check_run_folder)
    def build(i, w):
        return tool("fairseq-wean-compare", "translation", i / "data", "--out", w / "cmp", "--results-dir",
                    w / "published", "--tiny", "--runs", "lstm:word"), w / "cmp/runs/lstm-word" / name
    return build


BENCH = ("--quick", "--models", "lstm", "--vocabs", "50", "--n-train", "40", "--n-test", "2", "--n-latency", "1",
         "--max-tokens", "256", "--gen-len", "2", "--flop-batches", "0")


def _bench_out(i, w):  # the page is checked before any work (--device cpu: the same check and writer, in seconds)
    return py("-m", "bench.run", *BENCH, "--device", "cpu", "--dim", "8", "--updates", "1", "--warmup", "0",
              "--workdir", w / "bw", "--out", w / "perf.md"), w / "perf.md"


def _bench_json(i, w):  # checked before any work; --device cpu then writes it first (a link replaced), in seconds
    return py("-m", "bench.run", *BENCH, "--device", "cpu", "--dim", "8", "--updates", "1", "--warmup", "0",
              "--workdir", w / "bw", "--json", w / "r.json"), w / "r.json"


def _cpu_bf16(i, w):  # the page is checked before the comparison is read
    return py("-m", "bench.cpu_bf16", w / "no-comparison", "--out", w / "perf.md"), w / "perf.md"


def _dump(i, w):  # the ranks' files are checked by the launcher before any rank starts
    return tool("fairseq-wean-train-cpu-dist", "--nproc-per-node", "1", "--dump-rank-params", w / "dump", "--",
                w / "no-data", "--arch", "lstm"), w / "dump/rank0.pt"


def _invented(i, w):
    """A comparison's --out with one sentencepiece run (a plan, a checkpoint file); the given outputs are scored
    right after OUT/invented/known-words.txt is written, against a missing reference: one line, no decoding."""
    out, data = w / "cmp", w / "cmp/data"
    (data / "text").mkdir(parents=True)
    (data / "text/train.src").write_text("w1 w2\n")
    (data / "test.orig").write_text("w1 w2\n")
    (w / "given.txt").write_text("w1\n")
    (out / "runs/lstm-spm").mkdir(parents=True)
    (out / "runs/lstm-spm/checkpoint_best.pt").write_bytes(b"not a checkpoint")
    (out / "runs/lstm-spm/eval_plan.json").write_text(json.dumps({
        "data_root": str(data), "data": str(data / "spm"), "post_process": "sentencepiece", "gen_args": [],
        "tests": {"t": {"subset": "test", "orig": "test.orig", "refs": ["missing.ref"]}},
        "selected": {"epoch": 1, "checkpoint": str(out / "runs/lstm-spm/checkpoint_best.pt")}}))
    return py(os.path.join(REPO, "examples", "invented_words.py"), out, "--runs", "lstm:spm", "--decodings",
              "beam5-known", "--test", "t", "--outputs", "given=" + str(w / "given.txt")), \
        out / "invented/known-words.txt"


def _figure3(i, w):  # --output is checked before the checkpoint is loaded (a missing one here)
    return py(os.path.join(REPO, "examples", "word_attention_figure3.py"), "--path", w / "missing.pt", "--source",
              "w1 w2", "--data", w / "no-data", "--output", w / "figure.png"), w / "figure.png"


CASES = {
    "fairseq-wean-report --out": Case("write", _report, [("fairseq_wean.cli.report", "--out")]),
    "fairseq-wean-align-table --out": Case("write", _align, [("fairseq_wean.cli.align_table", "--out")]),
    "fairseq-wean-compare --out (prepared data)": Case("write", _compare, [("fairseq_wean.compare.cli", "--out")]),
    "fairseq-wean-train-cpu-dist --log-dir": Case("write", _cpu_dist,
                                                  [("fairseq_wean.cli.train_cpu_dist", "--log-dir")]),
    "preprocess.split_characters --output": Case("write", _split, [("preprocess.split_characters", "--output")]),
    "preprocess.unk_markers vocab --out": Case("write", _vocab, [("preprocess.unk_markers", "--out")]),
    "preprocess.unk_markers encode --tgt-out": Case("write", _encode, [("preprocess.unk_markers", "--src-out"),
                                                                     ("preprocess.unk_markers", "--tgt-out")]),
    "preprocess.unk_markers decode --out": Case("write", _decode, [("preprocess.unk_markers", "--out")]),
    "preprocess.fastbpe_codes --out": Case("write", _fastbpe, [("preprocess.fastbpe_codes", "--out")]),
    "preprocess.check_parallel --out-prefix": Case("write", _check_parallel,
                                                   [("preprocess.check_parallel", "--out-prefix")]),
    "preprocess.coverage_report --json": Case("write", _coverage, [("preprocess.coverage_report", "--json")]),
    "preprocess.prepare_multi30k --out": Case("write", _recipe, [("preprocess.common", "--out")]),
    "bench.profile --workdir": Case("write", _profile_workdir, [("bench.profile", "--workdir")]),
    "bench.profile --out": Case("write", _profile_out, [("bench.profile", "--out")]),
    "bench.convergence --out": Case("write", _convergence("perf.md"), [("bench.convergence", "--out")]),
    "bench.convergence reads results.json": Case("read", _convergence("compare-translation/results.json"), []),
    "bench.convergence reads train.log": Case("read", _convergence("compare-translation/runs/lstm-word/train.log"), []),
    "publish_results --results": Case("write", _publish("page.md"), [("examples.publish_results", "--results")]),
    "publish_results writes the figure": Case("write", _publish("figures/translation_valid_curve.png"), []),
    "publish_results reads results.md": Case("read", _publish("compare-translation/results.md"), []),
    "publish_results reads valid_curve.png": Case("read", _publish("compare-translation/valid_curve.png"), []),
    "publish_results --redraw reads results.json": Case("read", _publish("compare-translation/results.json",
                                                                         "--redraw"), []),
    "word_attention_figure3 --output": Case("write", _figure3, [("examples.word_attention_figure3", "--output")]),
    "fairseq-wean-compare --out (runs/SYSTEM-VOCAB/train_state.json)": Case("write", _compare_run("train_state.json"),
                                                                          []),
    "fairseq-wean-compare --out (runs/SYSTEM-VOCAB/train.log)": Case("write", _compare_run("train.log"), []),
    "fairseq-wean-compare --out (runs/SYSTEM-VOCAB/eval.log)": Case("write", _compare_run("eval.log"), []),
    "fairseq-wean-compare --out (runs/SYSTEM-VOCAB/result.json)": Case("write", _compare_run("result.json"), []),
    "bench.run --out": Case("write", _bench_out, [("bench.run", "--out")]),
    "bench.run --json": Case("write", _bench_json, [("bench.run", "--json")]),
    "bench.cpu_bf16 --out": Case("write", _cpu_bf16, [("bench.cpu_bf16", "--out")]),
    "fairseq-wean-train-cpu-dist --dump-rank-params": Case("write", _dump,
                                                           [("fairseq_wean.cli.train_cpu_dist", "--dump-rank-params")]),
    "invented_words OUT/invented/known-words.txt": Case("write", _invented, [("examples.invented_words", "out")]),
}

# (module, flag) found by the enumeration with no case above, and why
NOT_HERE = {
    ("fairseq_wean.compare.cli", "--results-dir"): "published run folders: tests/test_untrusted_files.py "
                                                   "(test_no_published_file_is_read_through_a_link_or_a_pipe)",
    ("bench.gpu_check", "--out"): "the GPU check's driver, standard library only, with its own copy of these rules "
                                  "(tests/test_gpu_check.py)",
    ("bench.gpu_check", "--workdir"): "as --out",
    ("examples.job_guard", "out"): "the shell examples' output folder, which it checks and writes nothing into "
                                   "(tests/test_example_scripts.py)",
    ("bench.run", "--workdir"): "bench.run.planted_entry refuses a planted entry (tests/test_bench.py)",
}

# bare writes (file -> how many) not yet converted to textio (none left); a new one anywhere fails the test
BARE_WRITES_NOT_YET_CONVERTED = {}


def plant(kind, path, victim):
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        victim.write_bytes(VICTIM)
        os.symlink(victim, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a null device: harmless if written
        except PermissionError:
            pytest.skip("making a device node needs root")
    elif kind in ("hardlink", "nodir"):
        victim.write_bytes(VICTIM)
        (os.link if kind == "hardlink" else os.symlink)(victim, path)  # nodir: FOLDER/NAME exists (a link: its target
        # is the victim, so a tool's normalizing write is seen whether it renames or writes in place)
    else:
        path.mkdir()
        (path / "keep").write_bytes(VICTIM)


def unchanged(kind, path, victim):
    if kind == "symlink":
        return victim.read_bytes() == VICTIM
    if kind == "hardlink":
        return victim.read_bytes() == VICTIM and os.stat(victim).st_nlink == (2 if os.path.samefile(path, victim) else 1)
    if kind == "nodir":
        return victim.read_bytes() == VICTIM and os.path.islink(path) and os.readlink(path) == str(victim)
    mode = os.lstat(path).st_mode
    if kind == "fifo":
        return stat.S_ISFIFO(mode)
    if kind == "device":
        return stat.S_ISCHR(mode)
    return stat.S_ISDIR(mode) and (path / "keep").read_bytes() == VICTIM


def run(tools, argv, cwd):
    rc, out, err, timed_out = tools.run(argv, cwd, dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=REPO), TIMEOUT)
    if timed_out:
        pytest.fail("hangs: {}".format(" ".join(map(str, argv))))
    return rc, out, err


def through_missing_folder(argv, target, work):
    """``argv`` with the option value that names ``target`` (or a folder above it) given as
    WORK/nodir/../VALUE: a path through a missing folder, which the OS refuses."""
    values = [a for a in argv if isinstance(a, str) and a.startswith(str(work) + os.sep)
              and str(target).startswith(a.rstrip(os.sep))]  # --out-prefix P: P.tgt
    if not values:  # a file the tool puts beside its output (publish_results: --results' folder/figures/)
        values = [a for flag, a in zip(argv, argv[1:]) if flag in ("--results", "--out", "--output")
                  and str(target).startswith(os.path.dirname(a) + os.sep)]
    assert values, "no option names {}".format(target)
    value = max(values, key=len)
    bent = os.path.join(str(work), "nodir", os.pardir, os.path.relpath(value, str(work)))
    return [bent if a == value else a for a in argv]


@pytest.mark.parametrize("kind", PLANTS + WRITE_PLANTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_no_tool_writes_or_reads_through_a_planted_file(name, kind, inputs, tools, tmp_path):
    case = CASES[name]
    if kind in WRITE_PLANTS and case.what != "write":
        pytest.skip("a file the tool reads: a hard link or a bent path is the user's own")
    work = tmp_path / "work"
    work.mkdir()
    argv, target = case.build(inputs, work)
    if kind == "nodir":
        argv = through_missing_folder(argv, target, work)
    victim = tmp_path / "victim"
    if target.exists() or target.is_symlink():
        target.unlink()
    plant(kind, target, victim)
    rc, out, err = run(tools, argv, work)
    assert unchanged(kind, target, victim), "{} written through or replaced: rc={} {}".format(kind, rc, err[-800:])
    assert "Traceback" not in err, err[-1500:]
    if kind == "nodir":
        assert not (work / "nodir").exists(), "the missing folder was made: rc={} {}".format(rc, err[-800:])
    replaced = kind in ("symlink", "hardlink") and case.what == "write" and os.path.isfile(target) and \
        not os.path.islink(target) and not os.path.samefile(target, victim)
    if replaced:  # the link replaced by the tool's own file (whatever the tool did next)
        return
    assert rc != 0, "exit 0 with a planted {} at {}".format(kind, target)
    last = (err.strip().splitlines() or [""])[-1]
    assert "error" in last, "not one error line: {}".format(err[-1500:])


OUTPUT_FLAG = re.compile(r"""add_argument\(\s*"(--out|--output|--out-prefix|--src-out|--tgt-out|--workdir|--log-dir"""
                         r"""|--results|--results-dir|--json|--dump-rank-params|out)"(?P<rest>[^)]*)\)""")


def enumerated_tools():
    """{(module, flag)} of every tool with an option naming an output file or folder."""
    with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
        scripts = re.findall(r'"[\w-]+ = ([\w.]+):\w+"', f.read())
    modules = set(scripts)
    for folder in ("preprocess", "bench", "examples"):
        for name in os.listdir(os.path.join(REPO, folder)):
            if name.endswith(".py") and name != "__init__.py":
                modules.add("{}.{}".format(folder, name[:-3]))
    found = set()
    for module in sorted(modules):
        path = os.path.join(REPO, *module.split(".")) + ".py"
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for flag, rest in ((m.group(1), m.group("rest")) for m in OUTPUT_FLAG.finditer(source)):
            if "store_true" not in rest:
                found.add((module, flag))
    return found


def test_every_tool_with_an_output_is_enumerated():
    covered = {pair for case in CASES.values() for pair in case.tools}
    missing = sorted(enumerated_tools() - covered - set(NOT_HERE))
    assert not missing, ("tools with an output option and no case in CASES (or reason in NOT_HERE): {}".format(missing))
    stale = sorted(set(NOT_HERE) - enumerated_tools())
    assert not stale, "NOT_HERE names options that no longer exist: {}".format(stale)


def bare_writes(path):
    """Calls in ``path`` that write a file without fairseq_wean.textio: open() with a mode that writes,
    shutil.copy*/move, Path.write_text/write_bytes."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        qual = ast.unparse(node.func)
        if qual in ("open", "io.open", "builtins.open"):
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                                None)
            if mode is not None and (not isinstance(mode, ast.Constant) or set(str(mode.value)) & set("wax+")):
                found.append("{}:{} {}".format(path, node.lineno, ast.unparse(node)))
        elif qual in ("shutil.copyfile", "shutil.copy", "shutil.copy2", "shutil.move") or \
                qual.endswith((".write_text", ".write_bytes")):
            found.append("{}:{} {}".format(path, node.lineno, ast.unparse(node)))
    return found


def test_no_bare_write_outside_textio():
    problems = []
    for folder in ("fairseq_wean", "preprocess", "bench", "examples"):
        for root, _dirs, files in os.walk(os.path.join(REPO, folder)):
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, REPO)
                writes = bare_writes(path)
                if len(writes) > BARE_WRITES_NOT_YET_CONVERTED.get(rel, 0):
                    problems.extend(writes)
    assert not problems, "write through fairseq_wean.textio (atomic_output, open_in_folder): {}".format(problems)


def make_node(kind, path):
    """A node of ``kind`` at ``path``; returns a predicate that it is still that node."""
    import socket

    if kind == "fifo":
        os.mkfifo(path)
        return lambda: stat.S_ISFIFO(os.lstat(path).st_mode)
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
        return lambda: stat.S_ISSOCK(os.lstat(path).st_mode)
    if kind == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device node needs root")
        return lambda: stat.S_ISCHR(os.lstat(path).st_mode)
    if kind == "link to a device":
        make_node("device", path.parent / "real-device")
        os.symlink(path.parent / "real-device", path)
        return lambda: os.path.islink(path) and stat.S_ISCHR(os.stat(path).st_mode)
    os.symlink("/proc/self/fd/1", path)  # what /dev/stdout is
    return lambda: os.readlink(path) == "/proc/self/fd/1"


@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "link to a device", "link to a descriptor"])
def test_atomic_output_never_replaces_a_node(kind, tmp_path):
    """An --out that is a device, pipe or socket was renamed over (as root, --out /dev/null replaced
    the system's /dev/null): refused in one line before the block runs, and left as it was."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    path = tmp_path / "out"
    still = make_node(kind, path)
    ran = []
    with pytest.raises(FairseqWeanError) as info:
        with textio.atomic_output(str(path)) as f:
            ran.append(f.write("x"))
    assert not ran and still() and "\n" not in str(info.value)
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_atomic_output_replaces_a_symbolic_link_and_not_its_target(tmp_path):
    from fairseq_wean import textio

    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    os.symlink(victim, tmp_path / "out")
    with textio.atomic_output(str(tmp_path / "out")) as f:
        f.write("new\n")
    assert victim.read_bytes() == VICTIM and not os.path.islink(tmp_path / "out")
    assert (tmp_path / "out").read_text() == "new\n"


@pytest.mark.parametrize("how", ["same path", "symbolic link", "hard link"])
def test_fastbpe_codes_never_overwrites_its_input(how, tmp_path, tools):
    codes = tmp_path / "codes"
    codes.write_text("a b 10\nc d 5\n")
    out = codes
    if how != "same path":
        out = tmp_path / "out"
        (os.symlink if how == "symbolic link" else os.link)(codes, out)
    rc, _out, err = run(tools, py("-m", "preprocess.fastbpe_codes", "--fastbpe", codes, "--out", out), REPO)
    assert rc == 1 and codes.read_text() == "a b 10\nc d 5\n"
    assert err.strip().splitlines() == [err.strip()] and "is also an input" in err


@pytest.mark.parametrize("args,message", [
    (["--master-addr", "no.such.host.invalid"], "--master-addr no.such.host.invalid: cannot resolve"),
    (["--log-dir", "FILE"], "--log-dir {FILE} exists and is not a folder"),
])
def test_launcher_refuses_a_bad_address_or_log_dir_before_any_rank(args, message, tmp_path, tools):
    afile = tmp_path / "file"
    afile.write_text("x\n")
    args = [str(afile) if a == "FILE" else a for a in args]
    rc, _out, err = run(tools, tool("fairseq-wean-train-cpu-dist", "--nproc-per-node", "1", *args, "--",
                                    tmp_path / "no-data", "--arch", "lstm"), tmp_path)
    assert rc == 1 and "Traceback" not in err and "started rank" not in err
    assert err.strip().splitlines()[-1].startswith(
        "fairseq-wean-train-cpu-dist: error: " + message.format(FILE=afile)), err
    assert afile.read_text() == "x\n"


@pytest.mark.parametrize("append", [False, True])
@pytest.mark.parametrize("kind", PLANTS)
def test_a_log_is_opened_only_as_itself(kind, append, tmp_path):
    """textio.open_log (the comparison's train.log / eval.log, given to fairseq as its output; the
    benchmark's data.log, appended to across runs): a link, pipe, device or folder there is refused in one
    line, nothing written through it, nothing blocks; a regular file is written (or appended to)."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    path, victim = tmp_path / "run" / "train.log", tmp_path / "victim"
    plant(kind, path, victim)
    with pytest.raises(FairseqWeanError) as info:
        textio.open_log(str(path), append=append, folder=str(tmp_path))
    assert unchanged(kind, path, victim) and "\n" not in str(info.value)
    (tmp_path / "run" / "ok.log").write_text("old\n")
    with textio.open_log(str(tmp_path / "run" / "ok.log"), append=append, folder=str(tmp_path)) as f:
        f.write("new\n")
    assert (tmp_path / "run" / "ok.log").read_text() == ("old\nnew\n" if append else "new\n")


@pytest.mark.parametrize("kind", PLANTS)
def test_dump_rank_params_never_writes_through_a_planted_file(kind, tmp_path, monkeypatch):
    """fairseq_wean.distributed's rank dump (--dump-rank-params): a temporary file renamed over rankR.pt;
    a link there is replaced (its target unchanged), a pipe, device or folder refused in one line."""
    import torch

    from fairseq_wean import distributed
    from fairseq_wean.errors import FairseqWeanError

    class Trainer:
        data_parallel_rank = 0

        def get_model(self):
            return torch.nn.Linear(2, 2)

        def get_num_updates(self):
            return 7

    monkeypatch.setenv(distributed.DUMP_ENV, str(tmp_path / "dump"))
    path, victim = tmp_path / "dump" / "rank0.pt", tmp_path / "victim"
    plant(kind, path, victim)
    if kind == "symlink":
        distributed._save_checkpoint_and_dump_params(None, Trainer(), None, None, lambda *a: None)
        assert victim.read_bytes() == VICTIM and not os.path.islink(path)
        assert torch.load(str(path))["num_updates"] == 7
    else:
        with pytest.raises(FairseqWeanError) as info:
            distributed._save_checkpoint_and_dump_params(None, Trainer(), None, None, lambda *a: None)
        assert unchanged(kind, path, victim) and "\n" not in str(info.value)
    assert [p.name for p in (tmp_path / "dump").iterdir() if ".tmp" in p.name] == []
