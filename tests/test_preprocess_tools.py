"""The preprocess tools that check or convert a user's files (check_parallel, split_characters,
unk_markers, coverage_report, fastbpe_codes), each class of bad input enumerated over every tool,
command and option where it applies, in-process (no interpreter start):

* every option of every parser refuses a second occurrence (``cli.options.once``);
* every option is in its module's ``ALWAYS`` or ``NEEDS`` table, and each ``NEEDS`` row is refused
  where it does not hold;
* every tool refuses an empty input and a cut one (a last line without its final newline), in one
  line, before anything is written or made;
* marked and unmarked text are not mixed up (unk_markers), a table of another vocabulary is refused
  as core_copy refuses it (coverage_report), a converted codes file is not converted again
  (fastbpe_codes), check_parallel checks everything before it makes a folder, and split_characters
  reads line by line in bounded memory.
"""
import argparse
import os
import sys

import pytest

from conftest import REPO

if REPO not in sys.path:  # preprocess/ is run as `python -m preprocess.X` from the repository
    sys.path.insert(0, REPO)

from preprocess import check_parallel, coverage_report, fastbpe_codes, split_characters, unk_markers  # noqa: E402

MODULES = {"check_parallel": check_parallel, "split_characters": split_characters, "unk_markers": unk_markers,
           "coverage_report": coverage_report, "fastbpe_codes": fastbpe_codes}
FILES = {
    "words.src": "the cat sat\nthe dog ran\n",
    "words.tgt": "cat sat\ndog ran\n",
    "hyp.txt": "the <unk-1>\ncat\n",
    "dict.txt": "the 5\ncat 4\nsat 3\ndog 2\nran 2\n<unk-0> 0\n<unk-1> 0\n<unk-2> 0\n",
    "table.tsv": "cat\tcat\t3\ndog\tdog\t2\n",
    "zh.txt": "苹果发布iPhone 6，售价5288元\n雅虎 2014年\n",
    "codes.fb": "t h 100\nth e</w> 90\n",
}
# command -> (module, subcommand, {input option: file}, output options, other options); every command of every
# module of MODULES (test_every_command_is_listed)
TOOLS = {
    "check_parallel": ("check_parallel", [], {"--src": "words.src", "--tgt": "words.tgt"},
                       ["--out-prefix", "new/clean"], []),
    "split_characters": ("split_characters", [], {"--input": "zh.txt"}, ["--output", "o.txt"], []),
    "unk_markers vocab": ("unk_markers", ["vocab"], {"--src": "words.src", "--tgt": "words.tgt"},
                          ["--out", "o.txt"], ["--min-count", "1"]),
    "unk_markers encode": ("unk_markers", ["encode"], {"--vocab": "dict.txt", "--src": "words.src",
                                                        "--tgt": "words.tgt"}, ["--src-out", "o.src", "--tgt-out", "o.tgt"], []),
    "unk_markers decode": ("unk_markers", ["decode"], {"--src": "words.src", "--hyp": "hyp.txt"}, ["--out", "o.txt"], []),
    "coverage_report --dict": ("coverage_report", [], {"--dict": "dict.txt", "--src": "words.src", "--tgt": "words.tgt",
                                                       "--table": "table.tsv"}, ["--json", "o.json"], []),
    "coverage_report --train-src": ("coverage_report", [], {"--train-src": "words.src", "--train-tgt": "words.tgt",
                                                            "--src": "words.src", "--tgt": "words.tgt",
                                                            "--table": "table.tsv"}, ["--json", "o.json"], []),
    "fastbpe_codes": ("fastbpe_codes", [], {"--fastbpe": "codes.fb"}, ["--out", "o.txt"], []),
}
NOT_TEXT = ("--vocab", "--dict", "--table")  # a dictionary and a table: their own readers' checks
TEXT_INPUTS = [(command, flag) for command, (_m, _s, inputs, _o, _e) in TOOLS.items() for flag in inputs
               if flag not in NOT_TEXT]


def run(module, argv, capsys):
    """The tool's command line, in-process: (exit status, the last line of its error or '')."""
    capsys.readouterr()
    try:
        if module == "check_parallel":
            rc = check_parallel.main(argv)
        elif module == "split_characters":
            rc = split_characters.run_cli(split_characters.main, split_characters.PROG, argv)
        elif module == "fastbpe_codes":
            rc = fastbpe_codes.main(argv)
        else:
            rc = MODULES[module].cli_main(argv)
    except SystemExit as exc:
        rc, message = (1, exc.code) if isinstance(exc.code, str) else (exc.code, None)
        err = capsys.readouterr().err
        return rc, message if message is not None else (err.strip().splitlines() or [""])[-1]
    err = capsys.readouterr().err.strip().splitlines()
    return rc or 0, (err[-1] if rc else "")


def listing(root):
    return sorted((os.path.relpath(os.path.join(d, n), root), open(os.path.join(d, n), "rb").read() if n in f else None)
                  for d, ds, f in os.walk(root) for n in ds + f)


def setup_files(tmp_path, changes=None):
    for name, text in dict(FILES, **(changes or {})).items():
        (tmp_path / name).write_bytes(text.encode("utf-8") if isinstance(text, str) else text)


def argv_of(tmp_path, command, replace=None, extra=()):
    module, sub, inputs, outputs, other = TOOLS[command]
    argv = list(sub)
    for flag, name in inputs.items():
        argv += [flag, str(tmp_path / (replace or {}).get(flag, name))]
    argv += [a if a.startswith("--") else str(tmp_path / a) for a in outputs] + list(other) + list(extra)
    return module, argv


def refused(tmp_path, capsys, command, replace=None, extra=(), changes=None):
    """The tool's one-line refusal; nothing written, made or changed in tmp_path."""
    setup_files(tmp_path, changes)
    before = listing(tmp_path)
    module, argv = argv_of(tmp_path, command, replace, extra)
    rc, line = run(module, argv, capsys)
    assert rc not in (0, None), (command, argv)
    assert line and "\n" not in line and "Traceback" not in line, line
    assert listing(tmp_path) == before, command
    return line


# ------------------------------------------------------------------ the reference: every tool works on good input
@pytest.mark.parametrize("command", TOOLS)
def test_every_tool_runs_on_good_input(tmp_path, capsys, command):
    setup_files(tmp_path)
    module, argv = argv_of(tmp_path, command)
    assert run(module, argv, capsys) == (0, "")
    expected = {"check_parallel": {"new/clean.src": "the cat sat\nthe dog ran\n", "new/clean.tgt": FILES["words.tgt"]},
                "split_characters": {"o.txt": "苹 果 发 布 iPhone6 ， 售 价 5288 元\n雅 虎 2014 年\n"},
                "unk_markers encode": {"o.src": "the cat sat\nthe dog ran\n", "o.tgt": "cat sat\ndog ran\n"},
                "unk_markers decode": {"o.txt": "the cat\ncat\n"},
                "fastbpe_codes": {"o.txt": "#version: 0.2\nt h\nth e</w>\n"}}.get(command, {})
    for name, text in expected.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text


def parsers():
    """(command, parser, subcommand argv) for every parser of MODULES, subcommands included."""
    for name, module in MODULES.items():
        parser = module.get_parser()
        subs = [(a, n) for a in parser._actions if isinstance(a, argparse._SubParsersAction) for n in a.choices]
        if not subs:
            yield name, parser, []
        for action, sub in subs:
            yield name + " " + sub, action.choices[sub], [sub]


def value_of(action):
    if action.nargs == 0:
        return []
    return [str(action.choices[0] if action.choices else "1")]


def test_every_command_is_listed():
    assert {command for command, _parser, _sub in parsers()} == {c.split(" --")[0] for c in TOOLS}


# ------------------------------------------------------------------ an option given twice
OPTIONS = [(command, parser, sub, action) for command, parser, sub in parsers() for action in parser._actions
           if action.option_strings and not isinstance(action, argparse._HelpAction)]


@pytest.mark.parametrize("command, parser, sub, action", OPTIONS,
                         ids=["{} {}".format(c, a.option_strings[-1]) for c, _p, _s, a in OPTIONS])
def test_every_option_given_twice_is_refused(capsys, command, parser, sub, action):
    top = MODULES[command.split()[0]].get_parser()
    required = [a for a in parser._actions if a.required and a.option_strings and a is not action]
    argv = sub + [x for a in required for x in [a.option_strings[-1]] + value_of(a)]
    option = action.option_strings[-1]
    argv += [option] + value_of(action) + [option] + value_of(action)
    with pytest.raises(SystemExit) as info:
        top.parse_args(argv)
    assert info.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument {}".format("/".join(action.option_strings)) in line and "given more than once" in line, line


# ------------------------------------------------------------------ options that do nothing
def test_every_option_is_always_effective_or_has_a_rule():
    for name, module in MODULES.items():
        options = {a.option_strings[-1] for _c, p, _s in parsers() if _c.split()[0] == name for a in p._actions
                   if a.option_strings and not isinstance(a, argparse._HelpAction)}
        assert options == set(module.ALWAYS) | set(module.NEEDS), name
        assert not set(module.ALWAYS) & set(module.NEEDS), name


# (command, option of a NEEDS row) -> extra argv and inputs replaced where the row does not hold, and the message
NO_EFFECT = {
    ("check_parallel", "--truncate"): (["--truncate"], {}, "--truncate needs --max-len N"),
    ("unk_markers encode", "--tgt"): ([], {"--tgt-out": None}, "--tgt and --tgt-out go together (got only --tgt)"),
    ("unk_markers encode", "--tgt-out"): ([], {"--tgt": None}, "--tgt and --tgt-out go together (got only --tgt-out)"),
    ("coverage_report --train-src", "--train-src"): (["--dict", "dict.txt"], {"--train-tgt": None},
                                                     "--train-src has no effect with --dict"),
    ("coverage_report --train-src", "--train-tgt"): (["--dict", "dict.txt"], {"--train-src": None},
                                                     "--train-tgt has no effect with --dict"),
}


def test_every_rule_has_a_case():
    rows = {(name, option) for name, module in MODULES.items() for option in module.NEEDS}
    assert {(command.split()[0], option) for command, option in NO_EFFECT} == rows


@pytest.mark.parametrize("command, option", sorted(NO_EFFECT))
def test_an_option_that_does_nothing_is_refused(tmp_path, capsys, command, option):
    extra, dropped, message = NO_EFFECT[(command, option)]
    module, sub, inputs, outputs, other = TOOLS[command]
    kept = {k: v for k, v in inputs.items() if k not in dropped}
    outs = [x for i, x in enumerate(outputs) if not (x in dropped or (i and outputs[i - 1] in dropped))]
    setup_files(tmp_path)
    before = listing(tmp_path)
    argv = list(sub) + [x for f, n in kept.items() for x in (f, str(tmp_path / n))] + [
        a if a.startswith("--") else str(tmp_path / a) for a in outs] + other + [
        a if a.startswith("--") else str(tmp_path / a) for a in extra]
    rc, line = run(module, argv, capsys)
    assert rc == 1 and message in line, line
    assert listing(tmp_path) == before


# ------------------------------------------------------------------ empty and cut inputs
@pytest.mark.parametrize("command", TOOLS)
def test_every_tool_refuses_an_empty_input(tmp_path, capsys, command):
    empty = {TOOLS[command][2][flag]: "" for c, flag in TEXT_INPUTS if c == command}
    line = refused(tmp_path, capsys, command, changes=empty)
    assert any(says in line for says in ("empty (no line)", "empty (no word)", "hold no word", "holds no word",
                                         "no merge in the file (it is empty)")), line


@pytest.mark.parametrize("command, flag", TEXT_INPUTS, ids=["{} {}".format(c, f) for c, f in TEXT_INPUTS])
def test_every_text_input_refuses_a_cut_file(tmp_path, capsys, command, flag):
    name = TOOLS[command][2][flag]
    line = refused(tmp_path, capsys, command, replace={flag: "cut.txt"}, changes={"cut.txt": FILES[name][:-2]})
    assert "{} {}".format(flag, tmp_path / "cut.txt") in line and "ends inside a line" in line, line


def test_a_complete_last_line_read_from_a_pipe_and_a_cut_one(tmp_path):
    fifo = tmp_path / "fifo"
    for text, ok in ((b"a b\nc d\n", True), (b"a b\nc d", False)):
        os.mkfifo(fifo)
        import threading

        writer = threading.Thread(target=lambda: fifo.write_bytes(text))
        writer.start()
        try:
            if ok:
                assert list(check_parallel.complete_lines(str(fifo), "--src")) == ["a b", "c d"]
            else:
                with pytest.raises(check_parallel.FairseqWeanError, match="ends inside a line"):
                    list(check_parallel.complete_lines(str(fifo), "--src"))
        finally:
            writer.join()
            fifo.unlink()


# ------------------------------------------------------------------ check_parallel: every check before a folder is made
@pytest.mark.parametrize("case", ["dotdot", "line_count", "language", "not_utf8"])
def test_check_parallel_makes_no_folder_when_it_refuses(tmp_path, capsys, monkeypatch, case):
    if case in ("dotdot", "language"):  # refused by a check of the names: before any folder is made, not undone after
        monkeypatch.setattr(check_parallel.os, "mkdir", lambda *a: pytest.fail("a folder made before the checks"))
    out, extra, changes = {"dotdot": ("newd/sub/../cp", [], {}), "line_count": ("newd/sub/cp", [], {"words.tgt": "a\n"}),
                           "language": ("newd/cp", ["--src-lang", "x/y"], {}),
                           "not_utf8": ("newd/cp", [], {"words.tgt": b"a\nb caf\xe9\n"})}[case]
    setup_files(tmp_path, changes)
    before = listing(tmp_path)
    argv = ["--src", str(tmp_path / "words.src"), "--tgt", str(tmp_path / "words.tgt"), "--out-prefix",
            str(tmp_path / out)] + extra
    rc, line = run("check_parallel", argv, capsys)
    assert rc == 1 and line.startswith("check_parallel: error: "), line
    assert listing(tmp_path) == before  # no newd/


@pytest.mark.parametrize("option", ["--src-lang", "--tgt-lang"])
@pytest.mark.parametrize("value", ["", " ", " en"])
def test_check_parallel_refuses_an_empty_language(tmp_path, capsys, option, value):
    line = refused(tmp_path, capsys, "check_parallel", extra=[option, value])
    assert "{} {!r}: a language code is a non-empty name".format(option, value) in line, line


# ------------------------------------------------------------------ unk_markers: marked and unmarked text
MARKED = "the <unk-1> sat\nthe dog ran\n"


@pytest.mark.parametrize("command, flag", [("unk_markers encode", "--src"), ("unk_markers encode", "--tgt"),
                                           ("unk_markers decode", "--src")])
def test_unk_markers_refuses_marked_text_where_words_are_read(tmp_path, capsys, command, flag):
    line = refused(tmp_path, capsys, command, replace={flag: "marked"}, changes={"marked": MARKED})
    assert "{} {} line 1 holds the marker <unk-1>: {} is the unmarked text".format(flag, tmp_path / "marked", flag) \
        in line, line


def test_unk_markers_encode_refuses_a_dictionary_without_markers(tmp_path, capsys):
    line = refused(tmp_path, capsys, "unk_markers encode", changes={"dict.txt": "the 5\ncat 4\nsat 3\n"})
    assert "--vocab {} holds no marker <unk-N>".format(tmp_path / "dict.txt") in line, line


# ------------------------------------------------------------------ coverage_report: the table core_copy accepts
@pytest.mark.parametrize("command", ["coverage_report --dict"])
def test_coverage_report_refuses_a_table_core_copy_refuses(tmp_path, capsys, command):
    from fairseq.data import Dictionary

    from fairseq_wean.data.align_table import read_align_table
    from fairseq_wean.errors import FairseqWeanError

    line = refused(tmp_path, capsys, command, changes={"table.tsv": "cat\t猫\t3\ndog\tdog\t2\n"})
    with pytest.raises(FairseqWeanError) as model:  # the model's own refusal, with the same dictionary
        read_align_table(str(tmp_path / "table.tsv"), Dictionary.load(str(tmp_path / "dict.txt")), 10)
    assert line.startswith("fairseq-wean: error: --table {} does not fit".format(tmp_path / "table.tsv")), line
    assert str(model.value).rstrip(".") in line, line


# ------------------------------------------------------------------ fastbpe_codes: converted once
def test_fastbpe_codes_refuses_a_converted_file(tmp_path, capsys):
    setup_files(tmp_path)
    assert run("fastbpe_codes", ["--fastbpe", str(tmp_path / "codes.fb"), "--out", str(tmp_path / "c1")],
               capsys) == (0, "")
    line = refused(tmp_path, capsys, "fastbpe_codes", replace={"--fastbpe": "c1"})
    assert "line 1 is '#version: 0.2': the file is already in subword-nmt's form" in line, line


# ------------------------------------------------------------------ split_characters: line by line, bounded memory
def test_split_characters_streams_in_bounded_memory(tmp_path, monkeypatch):
    import tracemalloc

    from fairseq_wean.scoring.metrics import character_tokens

    monkeypatch.setattr(split_characters, "LONG", 1000)
    monkeypatch.setattr(split_characters, "CHUNK", 50)
    chars = [chr(c) for c in range(0x4E00, 0x4E00 + 500)] + list("ab1 <unk-3>é ")
    long_line = "".join(chars[(i * 7919) % len(chars)] for i in range(100000))
    lines = [long_line] + ["".join(chars[(i * j) % len(chars)] for i in range(60)) for j in range(500)]
    (tmp_path / "in.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tracemalloc.start()
    try:
        split_characters.main(["--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out.txt")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    got = (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")
    assert got == [" ".join(character_tokens(line, lower=False)) for line in lines] + [""]
    assert peak < 3 * 10 ** 6, peak  # the long line's tokens at once: ~8 MB; the whole file at once: more
