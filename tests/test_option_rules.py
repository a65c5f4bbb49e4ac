"""The option rules of fairseq-wean-score, fairseq-wean-report and fairseq-wean-align-table
(:mod:`fairseq_wean.cli.options`), and the input rules they share, each enumerated over every tool
and option it covers, so that a new option or tool that skips the mechanism fails here:

* an option given twice is argparse's one-line usage error (every option of the three tools);
* an option that changes nothing in the combination given is refused (every option of score and
  report is in ``options.NEEDS`` or declared always effective by its tool; every entry of the
  table is refused without what it needs, and accepted with it);
* a file named twice, two systems of one name, a system compared with itself, a metric named twice;
* a fairseq-generate log scored against --orig/--refs its own S-/T- lines contradict.

Everything runs in-process (``cli_main``: the one error line is the ``SystemExit`` code, which
Python prints and exits 1 with; argparse's usage error exits 2); one subprocess checks the status.
"""
import subprocess
import sys

import pytest

from fairseq_wean.cli import align_table, options, report, score
from fairseq_wean.scoring import metrics as M

TOOLS = {"fairseq-wean-score": score, "fairseq-wean-report": report, "fairseq-wean-align-table": align_table}
SCORING_TOOLS = ("fairseq-wean-score", "fairseq-wean-report")

SRC = ["the fat cat sat on the mat .", "dogs bark loudly at night .", "it rained all day long ."]
REF = ["the cat sat on the mat .", "dogs bark at night .", "it rained all day ."]
HYP = ["the cat sat on a mat .", "dogs bark .", "it rained ."]
ZH_SRC = ["今天的天气非常好我们一起去公园", "他非常喜欢读书和写字"]
ZH_REF = ["今天天气不错我们去公园玩", "他喜欢读书"]
ZH_HYP = ["今天天气很好我们去公园", "他喜欢读书和写字"]
OTHER_SRC = ["a man rides a horse .", "the sun is hot today .", "we ate bread and cheese ."]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def generate_log(src, tgt, hyp):
    """A fairseq-generate log: S-, T-, H-, D-, P- lines per sentence (ids in batch order) and the summary."""
    lines = []
    for i in reversed(range(len(src))):
        n = len(hyp[i].split()) + 1
        lines += ["S-{}\t{}".format(i, src[i]), "T-{}\t{}".format(i, tgt[i]), "H-{}\t-0.5\t{}".format(i, hyp[i]),
                  "D-{}\t-0.5\t{}".format(i, hyp[i]), "P-{}\t{}".format(i, " ".join(["-0.5"] * n))]
    lines.append("Generate test with beam=2: BLEU4 = 10.00, 40.0/20.0/10.0/5.0 (BP=1.000, ratio=1.000)")
    return lines


@pytest.fixture
def files(tmp_path):
    f = {name: write(tmp_path / name, lines) for name, lines in
         (("src", SRC), ("ref", REF), ("hyp", HYP), ("hyp2", ["the cat .", "dogs .", "rain ."]),
          ("other_src", OTHER_SRC))}
    f["log"] = write(tmp_path / "gen.log", generate_log(SRC, REF, HYP))
    f.update(zh_src=write(tmp_path / "zh.src", ZH_SRC), zh_ref=write(tmp_path / "zh.ref", ZH_REF),
             zh_hyp=write(tmp_path / "zh.hyp", ZH_HYP))
    f["out"] = str(tmp_path / "page.html")
    f["dir"] = tmp_path
    return f


def run(tool, argv, capsys):
    """(exit code, the last stderr line or the error line): 0 when the tool finished."""
    try:
        TOOLS[tool].cli_main([str(a) for a in argv])
    except SystemExit as exc:
        if isinstance(exc.code, str):  # run_cli: Python prints it and exits 1
            return 1, exc.code
        err = capsys.readouterr().err.strip().splitlines()
        return exc.code, err[-1] if err else ""
    return 0, ""


def base_args(tool, files, metrics="stats"):
    """--orig given where a metric reads the sources (fairseq-wean-score refuses it elsewhere; the report
    shows the sources whatever the metrics)."""
    reads = tool == "fairseq-wean-report" or any(m in options.READS_SOURCES for m in metrics.split(","))
    argv = ["--sys", files["hyp"]] + (["--orig", files["src"]] if reads else []) + ["--refs", files["ref"],
                                                                                   "--metrics", metrics]
    return argv + (["--out", files["out"]] if tool == "fairseq-wean-report" else [])


# --------------------------------------------------------------------------------------------- the tables
def parser_options(tool):
    parser = TOOLS[tool].get_parser()
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


def test_every_option_of_score_and_report_is_in_the_table_or_always_effective():
    for tool in SCORING_TOOLS:
        names = {options.option_name(a) for a in parser_options(tool)}
        always = set(TOOLS[tool].ALWAYS)
        assert not always - names, "{} ALWAYS names options it lacks: {}".format(tool, always - names)
        unknown = names - always - set(options.NEEDS)
        assert not unknown, "{}: options in neither options.NEEDS nor ALWAYS: {}".format(tool, sorted(unknown))
    assert len(names) >= 14  # the enumeration reached the parsers' options


# a value for each option of options.NEEDS (a new entry needs one here, and so is tested)
NEEDS_VALUES = {"--sari-mode": ["legacy"], "--bleu-tokenize": ["none"], "--rouge-chars": [],
                "--rouge-no-stemmer": [], "--name": ["X"], "--compare-name": ["X"], "--hyp-lines": ["D"],
                "--bootstrap-samples": ["50"], "--orig": ["src"], "--refs": ["ref"]}  # src, ref: files[...]
# --orig and --refs (fairseq-wean-score): where rule "metrics" is broken, the metric read by neither
NEITHER_METRIC = "fkgl"


def noop_cases():
    """(tool, option, rule index): every rule of every option of options.NEEDS in every tool that has it."""
    cases = []
    for tool in SCORING_TOOLS:
        names = {options.option_name(a) for a in parser_options(tool)}
        cases += [(tool, option, i) for option in sorted(options.NEEDS)
                  if option in names and option not in TOOLS[tool].ALWAYS for i in range(len(options.NEEDS[option]))]
    return cases


def test_the_no_op_cases_cover_the_table():
    assert set(NEEDS_VALUES) == set(options.NEEDS)
    assert {option for _, option, _ in noop_cases()} == set(options.NEEDS)
    assert {options.NEEDS[o][i][0] for _, o, i in noop_cases()} == {"metrics", "metrics_or_log", "option", "without",
                                                                         "log", "compared"}
    # fairseq-wean-report's --rouge-chars also sets the page's units: always effective there
    assert not [c for c in noop_cases() if c[:2] == ("fairseq-wean-report", "--rouge-chars")]


def noop_message(option, kind, need, metrics="stats"):
    if kind == "metrics_or_log":
        return ("{} is read only by {} or to check a fairseq-generate log's lines, and --metrics {} has none and no "
                "system output given is a log: drop it, or add {} to --metrics".format(
                    option, "/".join(need), metrics, need[0]))
    if kind == "metrics":
        return "{} changes only {}, and --metrics {} has none: drop it, or add {} to --metrics".format(
            option, "/".join(need), metrics, need[0])
    if kind == "option":
        return "{} has no effect without {}: drop it, or give {} FILE".format(option, need, need)
    if kind == "without":
        return "{} labels the text output, and {} prints none: drop one of them".format(option, need)
    if kind == "compared":
        return ("{} sets the paired bootstrap, which runs only when two systems are compared (--compare-to FILE, "
                "or a second --sys): drop it".format(option))
    return ("{} chooses the lines of a fairseq-generate log, and no system output given is a log (plain files "
            "are read line by line): drop it".format(option))


def noop_args(tool, option, files, violate=None):
    """Arguments of ``tool`` with ``option`` where every rule of it holds but rule ``violate``."""
    rules = options.NEEDS[option]
    metrics = [need[0] for i, (kind, need) in enumerate(rules) if kind in ("metrics", "metrics_or_log") and i != violate]
    inputs = option in ("--orig", "--refs")  # the input options: given once, below; stats reads both
    argv = base_args(tool, files, metrics=("stats" if violate is None else NEITHER_METRIC) if inputs else
                     metrics[0] if metrics else "stats")
    for flag in ("--orig", "--refs") if inputs else ():  # the other input option would be refused first
        if flag in argv and (flag == option or violate is not None):
            del argv[argv.index(flag):argv.index(flag) + 2]
    for i, (kind, need) in enumerate(rules):
        if kind == "option" and i != violate:
            argv += [need, files["hyp2"]]
        if kind == "without" and i == violate:
            argv += [need]
        if kind == "log" and i != violate:
            argv[1] = files["log"]
        if kind == "compared" and i != violate:  # a second system: --compare-to (score), a second --sys (report)
            argv = (argv[:2] + [files["hyp2"]] + argv[2:] if tool == "fairseq-wean-report"
                    else argv + ["--compare-to", files["hyp2"]])
    if option == "--rouge-chars" and violate is None:  # ROUGE by character is for Chinese (Latin text is refused)
        for flag, name in (("--sys", "zh_hyp"), ("--orig", "zh_src"), ("--refs", "zh_ref")):
            if flag in argv:
                argv[argv.index(flag) + 1] = files[name]
    return argv + [option] + [files.get(value, value) for value in NEEDS_VALUES[option]]


@pytest.mark.parametrize("tool,option,rule", noop_cases())
def test_an_option_without_effect_is_refused_and_accepted_with_what_it_needs(tool, option, rule, files, capsys):
    kind, need = options.NEEDS[option][rule]
    code, line = run(tool, noop_args(tool, option, files, violate=rule), capsys)
    metrics = NEITHER_METRIC if option in ("--orig", "--refs") else "stats"
    assert (code, line) == (1, "{}: error: {}".format(tool, noop_message(option, kind, need, metrics)))
    # the same option where every rule holds: accepted
    code, line = run(tool, noop_args(tool, option, files), capsys)
    assert code == 0, line


# --------------------------------------------------------------------------------------------- repeats
def value_for(action, files):
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(sorted(action.choices, key=str)[0])]
    if getattr(action.type, "range", None):
        return [str(action.type.range[0] + (1 if action.type.range[3] else 0))]
    if action.dest == "metrics":
        return ["bleu"]
    if action.dest == "bleu_tokenize":
        return ["13a"]
    return [files["hyp"]]


def repeat_cases():
    return [(tool, options.option_name(a)) for tool in TOOLS for a in parser_options(tool)]


def test_the_repeat_cases_reach_every_tool():
    assert {tool for tool, _ in repeat_cases()} == set(TOOLS)
    assert len(repeat_cases()) >= 30


@pytest.mark.parametrize("tool,option", repeat_cases())
def test_an_option_given_twice_is_refused(tool, option, files, capsys):
    action = next(a for a in parser_options(tool) if options.option_name(a) == option)
    value = value_for(action, files)
    code, line = run(tool, [option] + value + [option] + value, capsys)
    assert (code, line) == (2, "{}: error: argument {}: given more than once: give each option once (argparse "
                               "would keep only the last {}, silently)".format(
                                   tool, "/".join(action.option_strings),
                                   "list" if action.nargs in ("+", "*") else "value"))


def test_options_given_once_each_still_parse():
    for tool in TOOLS:
        parser = TOOLS[tool].get_parser()
        args = parser.parse_args(["--sys", "a", "--out", "b"] if tool == "fairseq-wean-report" else
                                 ["--src", "a", "--tgt", "b", "--out", "c"] if tool == "fairseq-wean-align-table"
                                 else ["--sys", "a", "--metrics", "bleu"])
        assert options.given(parser, args) == ({"--sys", "--out"} if tool == "fairseq-wean-report" else
                                               {"--src", "--tgt", "--out"} if tool == "fairseq-wean-align-table"
                                               else {"--sys", "--metrics"})
        # a second parse with the same parser starts afresh
        parser.parse_args(["--sys", "a", "--out", "b"] if tool == "fairseq-wean-report" else
                          ["--src", "a", "--tgt", "b", "--out", "c"] if tool == "fairseq-wean-align-table"
                          else ["--sys", "a", "--metrics", "bleu"])


# --------------------------------------------------------------------------------------------- duplicates
@pytest.mark.parametrize("tool", SCORING_TOOLS)
def test_duplicate_metrics_and_reference_files_are_refused(tool, files, capsys):
    argv = base_args(tool, files, metrics="bleu,sari,bleu")
    code, line = run(tool, argv, capsys)
    assert (code, line) == (2, "{}: error: argument --metrics: bleu given twice in bleu,sari,bleu: name each metric "
                               "once".format(tool))
    argv = base_args(tool, files, metrics="bleu")
    argv[argv.index("--refs") + 1:argv.index("--refs") + 2] = [files["ref"], files["ref"]]
    code, line = run(tool, argv, capsys)
    assert (code, line) == (1, "{}: error: --refs names {} twice: give each file once".format(tool, files["ref"]))


def test_a_system_compared_with_itself_is_refused(files, capsys):
    tool = "fairseq-wean-score"
    code, line = run(tool, base_args(tool, files, "bleu") + ["--compare-to", files["hyp"]], capsys)
    assert (code, line) == (1, "{}: error: --compare-to {} is --sys itself: a system compared with itself has p = 1 "
                               "by construction; give another system's output".format(tool, files["hyp"]))
    tool = "fairseq-wean-report"
    argv = base_args(tool, files, "bleu")
    argv[1:2] = [files["hyp"], files["hyp"]]
    code, line = run(tool, argv, capsys)
    assert (code, line) == (1, "{}: error: --sys names {} twice: give each file once".format(tool, files["hyp"]))


def test_two_systems_of_one_name_are_refused(files, capsys):
    tool = "fairseq-wean-report"
    argv = base_args(tool, files, "bleu")
    argv[1:2] = [files["hyp"], files["hyp2"]]
    code, line = run(tool, argv + ["--names", "a", "a"], capsys)
    assert (code, line) == (1, "{}: error: --names 'a' name two systems: give each system its own name".format(tool))
    (files["dir"] / "b").mkdir()
    same_base = write(files["dir"] / "b" / "hyp", HYP)
    argv[1:3] = [files["hyp"], same_base]
    code, line = run(tool, argv, capsys)
    assert (code, line) == (1, "{}: error: the file names 'hyp' name two systems: give each system its own name "
                               "with --names".format(tool))
    code, line = run(tool, argv + ["--names", "a", "b"], capsys)
    assert code == 0, line


# --------------------------------------------------------------------------------------------- log vs files
def mismatch_message(tool, log, what, kind, sid, log_line, number, file_line):
    return ("{}: error: fairseq-generate log {} does not match {}: its {}-{} line {!r} differs from line {} {!r}; the "
            "log was generated from other data (another --gen-subset or test set): give the files the log was "
            "generated from".format(tool, log, what, kind, sid, log_line, number, file_line))


@pytest.mark.parametrize("tool", SCORING_TOOLS)
def test_a_log_of_other_data_is_refused(tool, files, capsys):
    argv = base_args(tool, files, "bleu,sari")
    argv[1] = files["log"]
    argv[argv.index("--orig") + 1] = files["other_src"]  # same line count, another test set
    code, line = run(tool, argv, capsys)
    assert (code, line) == (1, mismatch_message(tool, files["log"], "--orig " + files["other_src"], "S", 0, SRC[0], 1,
                                                OTHER_SRC[0]))
    other_ref = write(files["dir"] / "other_ref", [REF[0], REF[1], "no rain ."])
    argv = base_args(tool, files, "bleu")
    argv[1] = files["log"]
    argv[argv.index("--refs") + 1] = other_ref
    code, line = run(tool, argv, capsys)
    assert (code, line) == (1, mismatch_message(tool, files["log"], "--refs " + other_ref, "T", 2, REF[2], 3,
                                                "no rain ."))


def test_a_second_log_of_other_data_is_refused(files, capsys):
    """Without --orig/--refs the first log's S-/T- lines are the data; a second log must agree with them."""
    other = write(files["dir"] / "other.log", generate_log(OTHER_SRC, REF, HYP))
    tool = "fairseq-wean-score"
    code, line = run(tool, ["--sys", files["log"], "--compare-to", other, "--metrics", "bleu"], capsys)
    assert (code, line) == (1, mismatch_message(tool, other, "the S- lines of " + files["log"], "S", 0, OTHER_SRC[0],
                                                1, SRC[0]))
    tool = "fairseq-wean-report"
    code, line = run(tool, ["--sys", files["log"], other, "--names", "a", "b", "--metrics", "bleu", "--out",
                            files["out"]], capsys)
    assert (code, line) == (1, mismatch_message(tool, other, "the S- lines of " + files["log"], "S", 0, OTHER_SRC[0],
                                                1, SRC[0]))


@pytest.mark.parametrize("tool", SCORING_TOOLS)
def test_a_log_of_the_same_data_in_fairseqs_forms_is_scored(tool, files, capsys):
    """<unk> (sources, hypotheses), <<unk>> (targets), Moses escapes and glue, BPE pieces, case and
    spacing are fairseq's view of the same sentences: accepted, and scored against the raw files."""
    raw_src = ["The fat cat sat on the mat's edge .", "Dogs bark loudly at night-time .", "It rained all day long ."]
    raw_ref = ["the cat sat on the mat's edge .", "dogs bark at night-time .", "it rained all day ."]
    log_src = ["the fat <unk> sat on the mat &apos;s edge .", "dogs b@@ ark loudly at night @-@ time .",
               "it rained all day long ."]
    log_ref = ["the cat sat on the <<unk>> &apos;s edge .", "dogs bark at <<unk>> .", "it rained all day ."]
    hyp = ["the cat sat on the mat .", "dogs bark .", "it rained all day ."]
    log = write(files["dir"] / "forms.log", generate_log(log_src, log_ref, hyp))
    src, ref = write(files["dir"] / "raw.src", raw_src), write(files["dir"] / "raw.ref", raw_ref)
    argv = ["--sys", log, "--orig", src, "--refs", ref, "--metrics", "bleu,stats"]
    if tool == "fairseq-wean-report":
        argv += ["--out", files["out"]]
    else:
        argv += ["--json"]
    code, line = run(tool, argv, capsys)
    assert code == 0, line
    if tool == "fairseq-wean-score":
        import json

        import sacrebleu

        out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert out["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyp, [raw_ref]).score)


def test_an_unk_matches_at_least_one_character_and_nothing_backtracks():
    from fairseq_wean.scoring.inputs import log_line_matches

    assert log_line_matches("a <unk> b", "a xyz b") and not log_line_matches("a <unk> b", "a b")
    assert log_line_matches("<unk> <unk>", "ab") and not log_line_matches("<unk> <unk>", "a")
    assert not log_line_matches("x", "y") and log_line_matches("<unk-3> y", "xx y")
    many = " ".join(["<unk> a"] * 2000)
    assert not log_line_matches(many, "b" * 5000)  # linear: returns at once


def test_the_exit_status_of_a_refusal_is_1(files):
    argv = ["--sys", files["log"], "--orig", files["other_src"], "--metrics", "stats"]
    proc = subprocess.run([sys.executable, "-m", "fairseq_wean.cli.score"] + argv, capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [mismatch_message(
        "fairseq-wean-score", files["log"], "--orig " + files["other_src"], "S", 0, SRC[0], 1, OTHER_SRC[0])]


def test_the_options_rules_keep_the_recipes_score_args():
    """The recipes' score_args (options_from_score_args) are not CLI options: unaffected."""
    from fairseq_wean.scoring.scores import options_from_score_args

    assert options_from_score_args(["--rouge-chars"]) == {"rouge_chars": True}
    assert options_from_score_args(["--bleu-tokenize", "none"]) == {"bleu_tokenize": "none"}
    assert M.BLEU_TOKENIZE == "13a"
