"""The example and helper scripts (examples/*.sh, examples/*.py, scripts/report_scale.py,
scripts/options_table.py, scripts/fairseq_tests_with_plugin.py) follow the tools' rules.

* Every argparse parser refuses an option given twice (``fairseq_wean.cli.options.once``).
* Every file a shell example writes itself in its output folder (a redirection, its lock) is named in
  its ``examples/job_guard.py`` call, or the folder must be new; the guard refuses a planted link, pipe,
  folder or hard link there (and a linked folder) before any work, and the script writes with noclobber.
  The probe's case is run end to end: a symbolic link planted at main_job.sh's lock keeps its target.
* Every shell example runs with a space in its paths up to its work (a stub Python and stub tools record
  the command lines they get; nothing is trained): every path stays one argument.
* The Python examples refuse in one line, before any work: a --subset with no files, an empty
  --source, --beam with --target, duplicate --runs/--decodings items, a plan (eval_plan.json) that is a
  link or names paths out of its comparison folder or generation options it does not know; report_scale
  refuses --sentences out of range and a planted file in --work.
"""
import argparse
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from conftest import REPO

from fairseq_wean.cli import options
from fairseq_wean.errors import FairseqWeanError

EXAMPLES = os.path.join(REPO, "examples")
SHELL_SCRIPTS = sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".sh"))
VICTIM = b"IMPORTANT victim\n"


def textio_rules():
    from fairseq_wean.textio import PATH_RULES

    return PATH_RULES


def load(rel):
    spec = importlib.util.spec_from_file_location("_example_scripts_" + os.path.basename(rel)[:-3],
                                                  os.path.join(REPO, rel))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------ options given twice
PY_TOOLS = sorted(["examples/" + n for n in os.listdir(EXAMPLES) if n.endswith(".py")] +
                  ["scripts/report_scale.py", "scripts/options_table.py", "scripts/fairseq_tests_with_plugin.py"])


class _Captured(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def captured_parser(rel, monkeypatch):
    """The tool's command-line parser as its own code builds it, parsed by nothing (no work runs)."""
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        if "ArgumentParser(" not in f.read():
            return None
    module = load(rel)

    def capture(self, *args, **kwargs):
        raise _Captured(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
    if callable(getattr(module, "get_parser", None)):
        return module.get_parser()
    for name in ("parse_args", "main"):
        if callable(getattr(module, name, None)):
            try:
                getattr(module, name)([])
            except _Captured as found:
                return found.parser
    raise AssertionError("{} builds a parser this test cannot capture".format(rel))


@pytest.mark.parametrize("rel", PY_TOOLS)
def test_every_option_of_every_example_parser_is_given_once(rel, monkeypatch):
    parser = captured_parser(rel, monkeypatch)
    if parser is None:
        assert rel == "examples/compare.py"  # fairseq_wean.compare.cli's parser, checked there
        return
    monkeypatch.undo()
    plain = [options.option_name(a) for a in parser._actions if a.option_strings and not isinstance(
        a, (argparse._HelpAction, argparse._VersionAction, options._Once))]
    assert not plain, "{}: options that keep the last of two values silently: {}".format(rel, plain)


# ------------------------------------------------------------------------------------------ shell redirections
REDIRECT = re.compile(r'(?:^|[^<>&0-9])(?:[0-9&]?>>?|>\|)\s*"?\$OUT"?/([^"\s;)|]+)')


def script_code(script):
    """The shell script's text without its comments."""
    text = open(os.path.join(EXAMPLES, script), encoding="utf-8").read()
    return "\n".join(re.sub(r"\s+#[^\"'\n]*$", "", line) for line in text.splitlines()
                     if not line.lstrip().startswith("#"))


def guard_calls(text):
    """The script's examples/job_guard.py calls, each a dict: files, folders, new, what, used_as (the options'
    values, arrays expanded) and paths (the words after ``--``; None without ``--``)."""
    arrays = dict(re.findall(r'^([A-Z_]+)=\(([^)]*)\)', text, re.M))
    calls = []
    for m in re.finditer(r'job_guard\.py"?\s+(.*?)(?<!\\)\n', text.replace("\\\n", " ")):
        words = []
        for word in shlex.split(m.group(1)):
            ref = re.fullmatch(r'\$\{([A-Z_]+)\[@\]\}', word)
            words += shlex.split(arrays[ref.group(1)]) if ref else [word]
        paths = words[words.index("--") + 1:] if "--" in words else None
        values, key = {"--files": [], "--folders": [], "--what": [], "--used-as": []}, None
        for word in words[:words.index("--")] if "--" in words else words:
            if word.startswith("--"):
                key = word
            elif key in values:
                values[key].append(word)
        calls.append({"files": values["--files"], "folders": values["--folders"], "new": "--new" in words,
                      "what": (values["--what"] or ["OUT"])[0], "used_as": values["--used-as"], "paths": paths,
                      "words": words})
    return calls


def guard_call(text):
    """(--files, --folders, --new) of the script's examples/job_guard.py call of "$OUT", or None."""
    for call in guard_calls(text):
        if call["words"][-1:] == ["$OUT"]:
            return call["files"], call["folders"], call["new"]
    return None


@pytest.mark.parametrize("script", SHELL_SCRIPTS)
def test_every_file_a_shell_example_writes_in_its_folder_is_guarded(script):
    """A redirection into $OUT (or a tee, which truncates through a link) names a file of the guard's list,
    or the guard makes OUT a new folder; the script writes with noclobber (O_EXCL) after the guard."""
    code = script_code(script)
    targets = REDIRECT.findall(code)
    first = min((m.start() for m in REDIRECT.finditer(code) if m.group(1) != ".main_job.lock"), default=len(code))
    tees = [m.group(1) for m in re.finditer(r'(?:^|[|;&(])\s*tee\b([^|\n]*)', code, re.M)]
    assert all("/dev/fd/" in args for args in tees), "{}: tee opens its file by name (through a link)".format(script)
    if not targets:
        return
    guard = guard_call(code)
    assert guard is not None, "{} writes {} in $OUT without examples/job_guard.py".format(script, targets)
    files, folders, new = guard
    assert "set -o noclobber" in code and code.index("job_guard.py") < code.index("set -o noclobber") < first
    if not new:
        unguarded = sorted({t for t in targets if t not in files})
        assert not unguarded, "{}: redirections to files the guard does not check: {}".format(script, unguarded)


def main_job_guard():
    return guard_call(script_code("main_job.sh"))


def plant(kind, path, victim):
    path.parent.mkdir(parents=True, exist_ok=True)
    victim.write_bytes(VICTIM)
    if kind == "symlink":
        os.symlink(victim, path)
    elif kind == "hardlink":
        os.link(victim, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:  # a regular file where a folder is made
        path.write_bytes(VICTIM)


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "folder"])
@pytest.mark.parametrize("name", main_job_guard()[0])
def test_main_job_guard_refuses_a_planted_file(name, kind, tmp_path):
    files, folders, _ = main_job_guard()
    guard = load("examples/job_guard.py")
    out = tmp_path / "mj"
    plant(kind, out / name, tmp_path / "victim")
    before = sorted(os.listdir(out))
    with pytest.raises(FairseqWeanError) as e:
        guard.main(["--what", "MAIN_JOB_OUT", "--files", *files, "--folders", *folders, "--", str(out)])
    assert str(e.value).startswith("MAIN_JOB_OUT {} ".format(out / name)) and "refused" in str(e.value)
    assert (tmp_path / "victim").read_bytes() == VICTIM and sorted(os.listdir(out)) == before


@pytest.mark.parametrize("kind", ["symlink", "file"])
@pytest.mark.parametrize("name", main_job_guard()[1])
def test_main_job_guard_refuses_a_planted_folder(name, kind, tmp_path):
    files, folders, _ = main_job_guard()
    guard = load("examples/job_guard.py")
    out = tmp_path / "mj"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        os.symlink(elsewhere, out / name)
    else:
        (out / name).write_bytes(VICTIM)
    with pytest.raises(FairseqWeanError) as e:
        guard.main(["--what", "MAIN_JOB_OUT", "--files", *files, "--folders", *folders, "--", str(out)])
    assert str(e.value).startswith("MAIN_JOB_OUT {} is ".format(out / name)) and "not a folder" in str(e.value)
    assert os.listdir(elsewhere) == []


def test_guard_of_a_new_folder(tmp_path):
    guard = load("examples/job_guard.py")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    for out, expected in ((tmp_path / "dangling", "exists: give a new folder"),
                          (tmp_path / "nodir" / ".." / "new", "cannot be followed through its '..'")):
        with pytest.raises(FairseqWeanError, match=re.escape(expected)):
            guard.main(["--new", "--", str(out)])
    assert not (tmp_path / "nodir").exists() and not (tmp_path / "nowhere").exists()
    guard.main(["--", str(tmp_path / "new")])  # nothing planted: accepted, nothing made
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------------------------------------ the scripts end to end
STUB_PYTHON = r"""#!/usr/bin/env bash
case "${1:-}" in
  *job_guard.py) exec "$REAL_PYTHON" "$@" ;;
  -c) if [ "${2:-}" = 'import sys; print(sys.executable)' ]; then echo "$0"; exit 0; fi
      case "${2:-}" in *as_uri*) exec "$REAL_PYTHON" "$@" ;; esac ;;
esac
{ printf '%s' python; for a in "$@"; do printf '\037%s' "$a"; done; printf '\n'; } >> "$STUB_LOG"
[ "${1:-}" = -m ] && [ "${2:-}" = preprocess.prepare_simplification ] && exit 97
exit 0
"""
STUB_TOOL = r"""#!/usr/bin/env bash
# one write of the whole line (O_APPEND): two stubs run at once (the demo trains two systems at a time) never mix lines
line=$(basename "$0"); for a in "$@"; do line+=$'\037'"$a"; done
printf '%s\n' "$line" >> "$STUB_LOG"
exit 0
"""


@pytest.fixture
def stubs(tmp_path):
    """A folder with a stub ``python`` (runs examples/job_guard.py with the real one) and stub tools, which
    record their command lines in STUB_LOG; the environment to run a script with them."""
    folder = tmp_path / "stub bin"
    folder.mkdir()
    (folder / "python").write_text(STUB_PYTHON)
    for name in ("fairseq-train", "fairseq-generate", "fairseq-wean-align-table", "fairseq-wean-score",
                 "fairseq-wean-report", "chromium"):
        (folder / name).write_text(STUB_TOOL)
    for path in folder.iterdir():
        path.chmod(0o755)
    log = tmp_path / "stub.log"
    env = dict(os.environ, PYTHON=str(folder / "python"), REAL_PYTHON=sys.executable, STUB_LOG=str(log),
               PYTHONPATH=REPO, OMP_NUM_THREADS="1")
    env["PATH"] = str(folder) + os.pathsep + env["PATH"]

    def calls():
        if not log.exists():
            return []
        return [line.split("\x1f") for line in log.read_text().splitlines()]
    return env, calls


def bash(script, *args, env, cwd):
    return subprocess.run(["bash", os.path.join(EXAMPLES, script), *map(str, args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_main_job_planted_lock_link_keeps_its_target(tmp_path, stubs):
    """The probe's case: MAIN_JOB_OUT/.main_job.lock a symbolic link to a victim: refused in one line before
    any work, the victim not truncated (the shell's redirection truncated it)."""
    env, calls = stubs
    out = tmp_path / "main job out"
    (out / "checkpoints").mkdir(parents=True)
    (tmp_path / "victim5.txt").write_bytes(VICTIM)
    os.symlink(tmp_path / "victim5.txt", out / ".main_job.lock")
    data = tmp_path / "data dir"
    data.mkdir()
    proc = bash("main_job.sh", data, env=dict(env, MAIN_JOB_OUT=str(out)), cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert proc.stderr.strip().splitlines() == ["fairseq-wean: error: MAIN_JOB_OUT {} is a symbolic link (a file is "
                                                "written in place only as itself): refused; remove it or give another "
                                                "path".format(out / ".main_job.lock")]
    assert (tmp_path / "victim5.txt").read_bytes() == VICTIM and calls() == []
    assert sorted(os.listdir(out)) == [".main_job.lock", "checkpoints"]


def test_main_job_with_spaces_reaches_its_work_with_each_path_one_argument(tmp_path, stubs):
    env, calls = stubs
    out, data = tmp_path / "main job out", tmp_path / "data dir"
    data.mkdir()
    proc = bash("main_job.sh", data, "--tiny", env=dict(env, MAIN_JOB_OUT=str(out)), cwd=tmp_path)
    assert proc.returncode == 97, proc.stderr  # the stub of the first work step
    assert calls() == [["python", "-m", "preprocess.prepare_simplification", "--data-dir", str(data), "--out",
                        str(out / "data"), "--variants", "word-pg", "--tiny"]]
    assert sorted(os.listdir(out)) == [".main_job.lock"]


def test_translation_report_demo_with_spaces_passes_each_path_as_one_argument(tmp_path, stubs):
    """The probe's case: a space in OUT broke --core-align-table after two trainings (a command line in a
    string); now every command gets DATA and OUT paths whole (the stubs record them; nothing is trained)."""
    env, calls = stubs
    data, out = tmp_path / "data dir", tmp_path / "demo out"
    (data / "word").mkdir(parents=True)
    (data / "word" / "dict.de.txt").write_text("w 1\n")
    proc = bash("translation_report_demo.sh", data, out, env=dict(env, EPOCHS="1"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    made = calls()
    trains = {c[c.index("--arch") + 1]: c for c in made if c[0] == "fairseq-train"}
    assert sorted(trains) == ["core_copy", "lstm", "wean_lstm", "word_attn_gated"]
    for arch, argv in trains.items():
        assert argv[1] == str(data / "word") and argv[argv.index("--save-dir") + 1] == str(out / ("ck-" + arch))
        assert argv[argv.index("--max-epoch") + 1] == "1"
    core = trains["core_copy"]
    assert core[core.index("--core-align-table") + 1] == str(out / "align.table")
    align = next(c for c in made if c[0] == "fairseq-wean-align-table")
    assert align[align.index("--out") + 1] == str(out / "align.table")
    assert align[align.index("--src") + 1] == str(data / "text" / "train.de")
    gens = [c for c in made if c[0] == "fairseq-generate"]
    assert [g[g.index("--path") + 1] for g in gens] == [str(out / "ck-{}".format(m) / "checkpoint_best.pt") for m in
                                                         ("lstm", "wean_lstm", "core_copy", "word_attn_gated")]
    report = next(c for c in made if c[0] == "fairseq-wean-report")
    assert report[report.index("--out") + 1] == str(out / "report.html")
    shots = [c[-1] for c in made if c[0] == "chromium"]  # the page's URL, OUT percent-encoded
    assert shots == [(out / "report.html").as_uri(), (out / "report.html").as_uri() + "#sort=s2-bleu&order=desc"]


def test_compare_sh_passes_its_arguments_whole(tmp_path, stubs):
    env, calls = stubs
    proc = bash("compare.sh", "translation", tmp_path / "data dir", "--out", tmp_path / "cmp out", env=env,
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls() == [["python", "-m", "fairseq_wean.compare", "translation", str(tmp_path / "data dir"), "--out",
                        str(tmp_path / "cmp out")]]


# ------------------------------------------------------------------------------------------ folder names
# Every folder a shell example names in its examples/job_guard.py calls (script, --what), and what a later
# command would split on or misread in it (the paths it hands on): main_job.sh's OUT reaches fairseq as the
# data folder and --path (':'), through OmegaConf ('${') and in comma lists (--eval-refs, fairseq-preprocess's
# --validpref); translation_report_demo.sh's DATA is fairseq's data folder, its OUT holds the --path.
FOLDER_RULES = {
    ("main_job.sh", "MAIN_JOB_OUT"): (":", ",", "${"),
    ("translation_report_demo.sh", "DATA"): (":", "${"),
    ("translation_report_demo.sh", "OUT"): (":", "${"),
}
# scripts with no guard of their own, and why
NO_GUARD = {"compare.sh": "exec's fairseq-wean-compare with its arguments, which checks its own --out"}
FOLDER_NAMES = ["-h", "--help", "-dashdir", "a:b", "a,b", "x${HOME}y", "with space"]


@pytest.mark.parametrize("script", SHELL_SCRIPTS)
def test_every_guard_call_puts_its_folder_after_a_double_dash(script):
    """A folder named like an option (-h, --new) is a folder: every call names it after ``--`` (the guard
    refuses a call without), and each folder the scripts guard has its row in FOLDER_RULES."""
    calls = guard_calls(script_code(script))
    if script in NO_GUARD:
        assert not calls and re.search(r'^exec "\$PY" -m \S+ "\$@"$', script_code(script), re.M)
        return
    assert calls, "{}: no examples/job_guard.py call".format(script)
    for call in calls:
        assert call["paths"] is not None and len(call["paths"]) == 1, "{}: {}".format(script, call)
    assert sorted((script, c["what"]) for c in calls) == sorted(k for k in FOLDER_RULES if k[0] == script)
    for call in calls:
        refused = {text for use in call["used_as"] for text, _ in textio_rules()[use]}
        assert refused == set(FOLDER_RULES[script, call["what"]]), (script, call["what"])


def refused_in(script, what, name):
    return [text for text in FOLDER_RULES[script, what] if text in name]


@pytest.mark.parametrize("name", FOLDER_NAMES)
@pytest.mark.parametrize("script,what", sorted(FOLDER_RULES))
def test_guard_refuses_a_folder_name_later_commands_would_split(script, what, name, tmp_path):
    """The guard called exactly as the script calls it (its words, the folder as the script hands it on:
    absolute): a name holding what fairseq would split or misread is refused in one line (C93: data were
    prepared first, then fairseq-train split the path on ':'); a name like an option (C50, C56: '-h' made
    the guard print its help and exit 0, unchecked) or with a space is checked and accepted. Nothing made."""
    guard = load("examples/job_guard.py")
    call = next(c for c in guard_calls(script_code(script)) if c["what"] == what)
    folder = tmp_path / name
    if not call["new"] and what == "DATA":
        folder.mkdir()
    argv = [str(folder) if word == call["paths"][0] else word for word in call["words"]]
    before = sorted(os.listdir(tmp_path))
    refused = refused_in(script, what, name)
    if refused:
        with pytest.raises(FairseqWeanError) as e:
            guard.main(argv)
        line = str(e.value)
        assert "\n" not in line and line.startswith("{} {} holds '{}': ".format(what, folder, refused[0])) and \
            line.endswith(": choose another folder"), line
    else:
        guard.main(argv)
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("argv", [["{out}"], ["{out}", "--new"], ["-h"], ["--help"], ["--", "-h", "--new"],
                                  ["--used-as", "nosuch", "--", "{out}"]])
def test_guard_never_exits_0_without_checking(argv, tmp_path, capsys):
    """A call without ``--`` before the folder, a help request or an unknown form fails (non-zero):
    never an exit 0 that checked nothing."""
    guard = load("examples/job_guard.py")
    with pytest.raises(SystemExit) as e:
        guard.main([a.format(out=tmp_path / "o") for a in argv])
    assert e.value.code not in (0, None)
    assert not (tmp_path / "o").exists()


# (script, --what) -> the folder name to run the script with end to end (the others: the folders' defaults)
END_TO_END = [("main_job.sh", "MAIN_JOB_OUT", "-h"), ("main_job.sh", "MAIN_JOB_OUT", "a:b"),
              ("translation_report_demo.sh", "DATA", "a:b"), ("translation_report_demo.sh", "OUT", "-h")]


@pytest.mark.parametrize("script,what,name", END_TO_END)
def test_shell_example_folder_names_end_to_end(script, what, name, tmp_path, stubs):
    """The scripts themselves, their work stubbed: a refused name stops them in one line, exit 1, before
    anything is made; a name like an option reaches the work whole (the folder made as itself)."""
    env, calls = stubs
    data = tmp_path / (name if what == "DATA" else "-dashdir")  # the demo's DATA: a dash too
    (data / "word").mkdir(parents=True)
    (data / "word" / "dict.de.txt").write_text("w 1\n")
    if script == "main_job.sh":
        out = tmp_path / name
        proc = bash(script, data, env=dict(env, MAIN_JOB_OUT=name), cwd=tmp_path)
    else:
        out = tmp_path / (name if what == "OUT" else "demo out")
        proc = bash(script, data.name, out.name, env=dict(env, EPOCHS="1"), cwd=tmp_path)
    refused = refused_in(script, what, name)
    if refused:
        assert proc.returncode == 1 and proc.stdout == "", proc.stderr
        assert proc.stderr.splitlines() == ["fairseq-wean: error: {} {} holds '{}': {}: choose another folder".format(
            what, tmp_path / name, refused[0], dict(textio_rules()["fairseq-path"])[":"])]
        assert calls() == [] and not out.exists() and sorted(os.listdir(tmp_path)) == sorted(["stub bin", data.name])
        return
    assert proc.returncode == (97 if script == "main_job.sh" else 0), proc.stderr
    first = calls()[0]
    if script == "main_job.sh":
        assert first[first.index("--out") + 1] == str(out / "data") and first[first.index("--data-dir") + 1] == str(
            data)
    else:
        assert first[first.index("--out") + 1] == str(out / "align.table")
        trains = [c for c in calls() if c[0] == "fairseq-train"]
        assert len(trains) == 4 and all(c[1] == str(data / "word") for c in trains)
    assert out.is_dir()


# ------------------------------------------------------------------------------------------ numbers have ranges
@pytest.mark.parametrize("rel", PY_TOOLS)
def test_every_numeric_option_of_every_example_parser_has_a_range(rel, monkeypatch):
    """scripts/ is not in tests/test_option_ranges.py's discovery: the same rule for the scripts here."""
    parser = captured_parser(rel, monkeypatch)
    monkeypatch.undo()
    if parser is None:
        return
    bare = [options.option_name(a) for a in parser._actions if a.type in (int, float)]
    assert not bare, "{}: numeric options without a range: {}".format(rel, bare)


@pytest.mark.parametrize("value", ["-5", "0", "100000001", "nan", "2.5", "1e9"])
def test_report_scale_refuses_sentences_out_of_range(value, tmp_path, capsys):
    report_scale = load("scripts/report_scale.py")
    with pytest.raises(SystemExit) as e:
        report_scale.main(["--sentences", value, "--work", str(tmp_path / "w")])
    assert e.value.code == 2 and "error: argument --sentences: " in capsys.readouterr().err.splitlines()[-1]
    assert not (tmp_path / "w").exists()


def report_scale_outputs():
    return load("scripts/report_scale.py").OUTPUTS


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "folder"])
@pytest.mark.parametrize("name", report_scale_outputs())
def test_report_scale_refuses_a_planted_file_in_work(name, kind, tmp_path):
    report_scale = load("scripts/report_scale.py")
    work = tmp_path / "w"
    plant(kind, work / name, tmp_path / "victim")
    before = sorted(os.listdir(work))
    with pytest.raises(FairseqWeanError) as e:
        report_scale.main(["--sentences", "3", "--work", str(work)])
    assert str(e.value).startswith("--work file {} ".format(work / name)) and "refused" in str(e.value)
    assert (tmp_path / "victim").read_bytes() == VICTIM and sorted(os.listdir(work)) == before


# ------------------------------------------------------------------------------------------ word_attention_*.py
def data_folder(path, subsets=("train", "valid")):
    path.mkdir()
    for subset in subsets:
        for lang in ("src", "tgt"):
            for ext in ("bin", "idx"):
                (path / "{}.src-tgt.{}.{}".format(subset, lang, ext)).write_bytes(b"")
    for lang in ("src", "tgt"):
        (path / "dict.{}.txt".format(lang)).write_text("w 1\n")
    return path


@pytest.mark.parametrize("argv,expected", [
    (["--data", "{data}", "--subset", "nosuch"], "--subset nosuch: {data} has no such subset (it has: train, valid)"),
    (["--data", "{data}", "--subset", "valid.src-tgt"],
     "--subset valid.src-tgt: {data} has no such subset (it has: train, valid)"),
    (["--subset", "test", "--data", "{tmp}/missing"], "--data {tmp}/missing is not a folder: give the data-bin folder"),
])
def test_word_attention_gates_refuses_a_subset_with_no_files_before_loading(argv, expected, tmp_path):
    gates = load("examples/word_attention_gates.py")
    data = data_folder(tmp_path / "data-bin")
    checkpoint = tmp_path / "checkpoint.pt"
    os.mkfifo(checkpoint)  # opening it would block: nothing is loaded before the refusal
    argv = [a.format(tmp=tmp_path, data=data) for a in argv]
    with pytest.raises(FairseqWeanError) as e:
        gates.main(["--path", str(checkpoint)] + argv)
    assert str(e.value) == expected.format(data=data, tmp=tmp_path)
    assert gates.binarized_subsets(str(data)) == ["train", "valid"]


FIGURE3_REFUSED = {
    "empty source": (["--source", ""], "--source is empty: give a sentence, tokenized as the training data"),
    "blank source": (["--source", "  \t"], "--source is empty: give a sentence, tokenized as the training data"),
    "empty target": (["--source", "w1", "--target", " "], "--target is empty: give a sentence"),
    "beam with target": (["--source", "w1", "--target", "w2", "--beam", "7"], "--beam sets the beam search that "
                         "makes the target, and --target gives the target: drop one of them"),
    "default beam with target": (["--source", "w1", "--target", "w2", "--beam", "5"], "--beam sets the beam"),
}


@pytest.mark.parametrize("case", sorted(FIGURE3_REFUSED))
def test_word_attention_figure3_refuses_before_any_work(case, tmp_path):
    figure3 = load("examples/word_attention_figure3.py")
    argv, expected = FIGURE3_REFUSED[case]
    checkpoint = tmp_path / "checkpoint.pt"
    os.mkfifo(checkpoint)
    with pytest.raises(FairseqWeanError) as e:
        figure3.main(["--path", str(checkpoint), "--data", str(tmp_path), "--output", str(tmp_path / "f.png")] + argv)
    assert str(e.value).startswith(expected), str(e.value)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.pt"]


def test_every_option_of_word_attention_figure3_has_a_no_effect_rule_or_always_acts(monkeypatch):
    figure3 = load("examples/word_attention_figure3.py")
    parser = captured_parser("examples/word_attention_figure3.py", monkeypatch)
    named = {options.option_name(a) for a in parser._actions if a.option_strings and a.dest != "help"}
    assert named == set(figure3.NEEDS) | figure3.ALWAYS and not set(figure3.NEEDS) & figure3.ALWAYS


# ------------------------------------------------------------------------------------------ invented_words.py
def comparison(out, plan_changes=(), stored=None):
    """A comparison folder with one run lstm:spm and its plan; ``stored``: the folder the plan's paths name
    (another than ``out``: a folder that moved since)."""
    stored = str(stored or out)
    (out / "data" / "text").mkdir(parents=True)
    (out / "data" / "text" / "train.src").write_text("w1 w2\n")
    (out / "data" / "test.orig").write_text("w1 w2\n")
    (out / "data" / "test.ref").write_text("w1\n")
    (out / "runs" / "lstm-spm" / "checkpoints").mkdir(parents=True)
    (out / "runs" / "lstm-spm" / "checkpoints" / "checkpoint_best.pt").write_bytes(b"not a checkpoint")
    plan = {"data_root": stored + "/data", "data": stored + "/data/spm", "post_process": "sentencepiece",
            "markers": False, "replace_unk": False, "gen_args": ["--beam", "5", "--batch-size", "64"],
            "tests": {"t": {"subset": "test", "orig": "test.orig", "refs": ["test.ref"]}},
            "selected": {"epoch": 1, "checkpoint": stored + "/runs/lstm-spm/checkpoints/checkpoint_best.pt"}}
    for change in plan_changes:
        change(plan)
    (out / "runs" / "lstm-spm" / "eval_plan.json").write_text(json.dumps(plan))
    return out / "runs" / "lstm-spm" / "eval_plan.json"


def test_invented_words_reads_a_plan_of_a_moved_comparison_inside_it(tmp_path):
    invented = load("examples/invented_words.py")
    out = tmp_path / "cmp"
    comparison(out, stored="/an/old/place/cmp")
    plan = invented.load_plan(str(out), "lstm", "spm", "t")
    assert (plan["data_root"], plan["data"], plan["selected"]["checkpoint"]) == (
        str(out / "data"), str(out / "data" / "spm"), str(out / "runs/lstm-spm/checkpoints/checkpoint_best.pt"))
    assert plan["tests"]["t"]["orig"] == str(out / "data" / "test.orig")
    assert plan["tests"]["t"]["refs"] == [str(out / "data" / "test.ref")]


def _set(*keys, value):
    def change(plan):
        d = plan
        for k in keys[:-1]:
            d = d[k]
        if value is KeyError:
            del d[keys[-1]]
        else:
            d[keys[-1]] = value
    return change


PLAN = "{out}/runs/lstm-spm/eval_plan.json"
INVENTED_REFUSED = {
    "plan a symbolic link": ("link", "eval_plan.json " + PLAN + " is a symbolic link: refused"),
    "plan a hard link": ("hardlink", "eval_plan.json " + PLAN + " has 2 hard links"),
    "checkpoint of another folder": (_set("selected", "checkpoint", value="/elsewhere/checkpoint_best.pt"),
                                     PLAN + " names selected.checkpoint /elsewhere/checkpoint_best.pt, outside {out}"),
    "test source out of the data": (_set("tests", "t", "orig", value="../../secret.txt"),
                                    PLAN + " names tests.t.orig ../../secret.txt, outside {out}/data"),
    "absolute reference": (_set("tests", "t", "refs", value=["/etc/hostname"]),
                           PLAN + " names tests.t.refs /etc/hostname, outside {out}/data"),
    "test source through a linked folder": ("linked text", PLAN + " names tests.t.orig {out}/data/text/test.orig, "
                                            "which leads out of {out} through a symbolic link"),
    "generation option not known": (_set("gen_args", value=["--beam", "5", "--nbest", "3"]),
                                    PLAN + " has generation options --beam 5 --nbest 3 (this script takes --beam, "
                                    "--batch-size, --max-len-a, --max-len-b, each once with a number)"),
    "generation option a path": (_set("gen_args", value=["--beam", "5", "--results-path", "/tmp/x"]),
                                 PLAN + " has generation options --beam 5 --results-path /tmp/x"),
    "generation value not a number": (_set("gen_args", value=["--beam", "five"]),
                                      PLAN + " has generation options --beam five (a value that is not a number"),
    "generation option twice": (_set("gen_args", value=["--beam", "5", "--beam", "6"]),
                                PLAN + " has generation options --beam 5 --beam 6"),
    "no epoch (was a KeyError)": (_set("selected", "epoch", value=KeyError),
                                  PLAN + " lacks or has a malformed selected.epoch"),
    "no data": (_set("data", value=KeyError), PLAN + " lacks or has a malformed data"),
    "post-process an option": (_set("post_process", value="--user-dir"), PLAN + " lacks or has a malformed "
                               "post_process"),
    "no such test set": (_set("tests", value={"other": {"subset": "test", "orig": "a", "refs": []}}),
                         PLAN + " has no test set 't' (it has other)"),
    "not JSON": ("not json", PLAN + " is not JSON"),
    "no checkpoint": ("no checkpoint", "{out}/runs/lstm-spm/checkpoints/checkpoint_best.pt not found: run the "
                      "comparison with --keep-checkpoints"),
}


@pytest.mark.parametrize("case", sorted(INVENTED_REFUSED))
def test_invented_words_refuses_a_plan_it_cannot_trust_before_any_work(case, tmp_path):
    invented = load("examples/invented_words.py")
    how, expected = INVENTED_REFUSED[case]
    out = tmp_path / "cmp"
    plan_path = comparison(out, [how] if callable(how) else [])
    if how in ("link", "hardlink"):
        (tmp_path / "plan.json").write_text(plan_path.read_text())
        plan_path.unlink()
        (os.symlink if how == "link" else os.link)(tmp_path / "plan.json", plan_path)
    elif how == "not json":
        plan_path.write_text("{")
    elif how == "no checkpoint":
        (out / "runs/lstm-spm/checkpoints/checkpoint_best.pt").unlink()
    elif how == "linked text":
        plan = json.loads(plan_path.read_text())
        plan["tests"]["t"]["orig"] = "text/test.orig"
        plan_path.write_text(json.dumps(plan))
        (tmp_path / "secret").mkdir()
        (tmp_path / "secret" / "test.orig").write_text("SECRET\n")
        (out / "data" / "text" / "train.src").rename(tmp_path / "secret" / "train.src")
        (out / "data" / "text").rmdir()
        os.symlink(tmp_path / "secret", out / "data" / "text")
    with pytest.raises(FairseqWeanError) as e:
        invented.main([str(out), "--runs", "lstm:spm", "--decodings", "greedy", "--test", "t"])
    assert str(e.value).startswith(expected.format(out=out)), str(e.value)
    assert not (out / "invented").exists()


@pytest.mark.parametrize("argv,expected", [
    (["--runs", "lstm:spm,lstm:spm"], "--runs: lstm:spm given twice: give each once"),
    (["--runs", "lstm:spm", "--decodings", "greedy,beam5,greedy"], "--decodings: greedy given twice: give each once"),
    (["--runs", "lstm:spm", "--decodings", ","], "--decodings: no decoding named"),
    (["--runs", "lstm:spm", "--outputs", "a={given},a={given}"], "--outputs: a given twice: give each once"),
    (["--runs", "lstm:spm", "--runs", "lstm:word"], "argument --runs: given more than once"),
])
def test_invented_words_refuses_repeated_items(argv, expected, tmp_path, capsys):
    invented = load("examples/invented_words.py")
    (tmp_path / "given.txt").write_text("w1\n")
    with pytest.raises(SystemExit) as e:
        invented.main([str(tmp_path / "cmp")] + [a.format(given=tmp_path / "given.txt") for a in argv])
    assert e.value.code == 2 and expected in capsys.readouterr().err.strip().splitlines()[-1]
