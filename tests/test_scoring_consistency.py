"""Scored inputs that are not what they claim are refused in one line, before any work, by every entry
point (fairseq-wean-score, fairseq-wean-report, the library; the comparison runner's evaluation calls
the same functions), each through one mechanism:

* text forms: every side a word-counting metric reads (output, sources, references) in one form
  (``metrics.check_sides``: unsegmented Chinese, or characters against words, on any side);
* a control character (NUL, ...) in any scored input (``generate_log.check_text``);
* a log made with ``fairseq-generate --score-reference`` (``GenerateLog``);
* a log whose last line has no newline: cut (``generate_log.check_complete_file``; fairseq-interactive
  logs have no end line);
* BLEU-4 where no reference has 4 tokens: 0 for every output (``bleu_checks.check_bleu_ngrams``);
* a sacrebleu tokenizer that needs a download or a missing package (``sacrebleu_tokenizer_problem``),
  enumerated over sacrebleu's whole list.
"""
import pytest

from fairseq_wean.cli import report as report_cli
from fairseq_wean.cli import score as score_cli
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import scores
from fairseq_wean.scoring.bleu_checks import known_tokenizers

SRC = ["the fat cat sat on the mat .", "dogs bark loudly at night .", "it rained all day long ."]
REF = ["the cat sat on the mat .", "dogs bark at night .", "it rained all day ."]
HYP = ["the cat sat on a mat .", "dogs bark .", "it rained ."]
ZH = ["我们今天去公园玩了很久", "他非常喜欢读书和写字"]
ZH_CHARS = [" ".join(line) for line in ZH]
ZH_WORDS = ["我们 今天 去 公园 玩了 很久", "他 非常 喜欢 读书 和 写字"]


def write(path, lines, end="\n"):
    path.write_text("".join(line + "\n" for line in lines[:-1]) + lines[-1] + end, encoding="utf-8")
    return str(path)


def log_lines(src, tgt, hyp, summary=True):
    lines = []
    for i in range(len(src)):
        lines += ["S-{}\t{}".format(i, src[i]), "T-{}\t{}".format(i, tgt[i]), "H-{}\t-0.5\t{}".format(i, hyp[i]),
                  "D-{}\t-0.5\t{}".format(i, hyp[i]), "P-{}\t{}".format(i, " ".join(["-0.5"] * (len(hyp[i].split()) + 1)))]
    return lines + (["Generate test with beam=2: BLEU4 = 10.00"] if summary else [])


def interactive_lines(src, hyp):
    out = []
    for i in range(len(src)):
        out += ["S-{}\t{}".format(i, src[i]), "W-{}\t0.4\tseconds".format(i), "H-{}\t-0.5\t{}".format(i, hyp[i]),
                "D-{}\t-0.5\t{}".format(i, hyp[i]), "P-{}\t{}".format(i, " ".join(["-0.5"] * (len(hyp[i].split()) + 1)))]
    return out


def run(tool, argv, tmp_path):
    """(exit code, the one error line); nothing may be written where the page would go."""
    out = tmp_path / "page.html"
    argv = [str(a) for a in argv] + (["--out", str(out)] if tool == "report" else [])
    try:
        (report_cli if tool == "report" else score_cli).cli_main(argv)
    except SystemExit as exc:
        assert not out.exists()
        return (1, exc.code) if isinstance(exc.code, str) else (exc.code, "")
    return 0, ""


def cases(tmp_path, tool):
    """name -> (argv without --out, the expected part of the one error line)."""
    f = {}
    f["src"], f["ref"], f["hyp"] = (write(tmp_path / n, lines) for n, lines in (("src", SRC), ("ref", REF), ("hyp", HYP)))
    nul = list(HYP)
    nul[1] = "dogs\x00bark ."
    f["nul"] = write(tmp_path / "nul", nul)
    f["ff_ref"] = write(tmp_path / "ff_ref", [REF[0], REF[1] + "\x0c", REF[2]])
    f["zh"], f["zh_chars"], f["zh_words"] = (write(tmp_path / n, lines) for n, lines in
                                              (("zh", ZH), ("zh_chars", ZH_CHARS), ("zh_words", ZH_WORDS)))
    f["sref"] = write(tmp_path / "sref.log", log_lines(SRC, REF, REF))
    f["sref_cfg"] = write(tmp_path / "sref_cfg.log", [
        "2026-11-29 | INFO | fairseq_cli.generate | {'generation': {'beam': 2, 'score_reference': True}}"]
        + log_lines(SRC, REF, HYP))
    f["int_cut"] = write(tmp_path / "int_cut.log", interactive_lines(SRC, HYP) + ["H-3\t-3.59381"], end="")
    short = ["a b c", "d e", "f"]
    f["short"] = write(tmp_path / "short", short)
    f["short2"] = write(tmp_path / "short2", ["a b", "d e", "g"])
    for name in ("short", "zh", "zh_words", "zh_chars"):  # a file is one role of a call: the references a copy
        f[name + "_ref"] = write(tmp_path / (name + "_ref"), open(f[name], encoding="utf-8").read().splitlines())
    return {
        "nul_sys": (["--sys", f["nul"], "--orig", f["src"], "--refs", f["ref"], "--metrics", "bleu,sari"],
                    "--sys {} line 2 holds the control character '\\x00' (column 5)".format(f["nul"])),
        "form_feed_refs": (["--sys", f["hyp"], "--orig", f["src"], "--refs", f["ff_ref"], "--metrics", "sari"],
                           "--refs {} line 2 holds the control character '\\x0c'".format(f["ff_ref"])),
        "nul_orig": (["--sys", f["hyp"], "--orig", f["nul"], "--refs", f["ref"], "--metrics", "sari"],
                     "--orig {} line 2 holds the control character".format(f["nul"])),
        "zh_chars_vs_unsegmented": (["--sys", f["zh_chars"], "--orig", f["zh"], "--refs", f["zh_ref"], "--metrics", "stats"],
                                    "stats counts words, and the sources are in a script without spaces"),
        "zh_chars_vs_words": (["--sys", f["zh_chars"], "--orig", f["zh_words"], "--refs", f["zh_words_ref"],
                               "--metrics", "stats"],
                              "stats counts words, and the output is segmented into characters (1.0 characters per "
                              "token) but the sources into words"),
        "zh_sari_output": (["--sys", f["zh"], "--orig", f["zh_chars"], "--refs", f["zh_chars_ref"], "--metrics", "sari"],
                           "SARI counts words, and the output are in a script without spaces"),
        "score_reference_config": (["--sys", f["sref_cfg"], "--metrics", "bleu"],
                                   "was made with --score-reference (its configuration (line 1)"),
        "interactive_cut": (["--sys", f["int_cut"], "--orig", f["src"], "--refs", f["ref"], "--metrics", "bleu,stats"],
                            "--sys log {} does not end with a newline: it is incomplete".format(f["int_cut"])),
        "bleu_short_references": (["--sys", f["short"], "--orig", f["short"], "--refs", f["short_ref"], "--metrics", "bleu,sari"]
                                  + (["--compare-to", f["short2"]] if tool == "score" else []),
                                  "BLEU counts n-grams up to 4, and no reference sentence has 4 tokens (tokenize 13a)"),
    }


@pytest.mark.parametrize("tool", ["score", "report"])
def test_every_inconsistent_input_is_one_line_before_any_work(tool, tmp_path):
    for name, (argv, expected) in sorted(cases(tmp_path, tool).items()):
        if tool == "report" and name == "bleu_short_references":  # two systems: p-values against the first
            argv = argv[:2] + [str(tmp_path / "short2")] + argv[2:]
        code, line = run(tool, argv, tmp_path)
        prog = "fairseq-wean-score" if tool == "score" else "fairseq-wean-report"
        assert code == 1 and line.startswith(prog + ": error: ") and expected in line and "\n" not in line, (name, line)


def test_the_library_refuses_the_same():
    with pytest.raises(FairseqWeanError, match="the output is segmented into characters"):
        scores.score(ZH_CHARS, sources=ZH_WORDS, references=[ZH_WORDS], metrics="stats")
    with pytest.raises(FairseqWeanError, match="no reference sentence has 4 tokens"):
        scores.score(["a b c"], references=[["a b c"]], metrics="bleu", compare_to=["a b d"])
    with pytest.raises(FairseqWeanError, match="^bleu_tokenize ja-mecab needs the Python package"):
        scores.score(HYP, references=[REF], metrics="bleu", bleu_tokenize="ja-mecab")
    with pytest.raises(FairseqWeanError, match="^bleu_tokenize ko-mecab needs"):
        scores.sentence_scores(HYP, references=[REF], metric=None, bleu_tokenize="ko-mecab")


def test_consistent_inputs_are_scored(tmp_path):
    """The same forms everywhere: scored (control: the refusals above are not of everything)."""
    f = {n: write(tmp_path / n, lines) for n, lines in (("zc", ZH_CHARS), ("zw", ZH_WORDS), ("src", SRC),
                                                         ("ref", REF), ("tab", ["the\tcat sat on a mat ."] + HYP[1:]))}
    zc_ref, zw_ref = write(tmp_path / "zc_ref", ZH_CHARS), write(tmp_path / "zw_ref", ZH_WORDS)  # one role a file
    assert score_cli.main(["--sys", f["zc"], "--orig", f["zc"], "--refs", zc_ref, "--metrics", "stats"])["stats"][
        "copy_pct"] == 100.0
    assert score_cli.main(["--sys", f["zw"], "--orig", f["zw"], "--refs", zw_ref, "--metrics", "stats"])
    assert score_cli.main(["--sys", f["tab"], "--orig", f["src"], "--refs", f["ref"], "--metrics", "sari"])
    log = write(tmp_path / "int.log", interactive_lines(SRC, HYP))  # complete: scored like the plain file
    plain = score_cli.main(["--sys", write(tmp_path / "hyp", HYP), "--refs", f["ref"], "--metrics", "bleu"])
    assert score_cli.main(["--sys", log, "--refs", f["ref"], "--metrics", "bleu"]) == plain


def test_fkgl_takes_neither_sources_nor_references(tmp_path):
    from fairseq_wean.cli import options

    f = {n: write(tmp_path / n, lines) for n, lines in (("src", SRC), ("ref", REF), ("hyp", HYP))}
    for option, reads in (("--orig", options.READS_SOURCES), ("--refs", options.READS_REFERENCES)):
        code, line = run("score", ["--sys", f["hyp"], option, f["src"], "--metrics", "fkgl"], tmp_path)
        assert (code, line) == (1, "fairseq-wean-score: error: {} is read only by {} or to check a fairseq-generate "
                                   "log's lines, and --metrics fkgl has none and no system output given is a log: drop "
                                   "it, or add {} to --metrics".format(option, "/".join(reads), reads[0]))
    assert score_cli.main(["--sys", f["hyp"], "--metrics", "fkgl"])
    # a log's S-/T- lines are checked against --orig/--refs: there they act whatever the metrics
    log = write(tmp_path / "gen.log", log_lines(SRC, REF, HYP))
    assert score_cli.main(["--sys", log, "--orig", f["src"], "--refs", f["ref"], "--metrics", "fkgl"])
    # a log whose every hypothesis is its reference is a perfect system's, as far as the log tells: scored
    perfect = write(tmp_path / "perfect.log", log_lines(SRC, REF, REF))
    assert score_cli.main(["--sys", perfect, "--metrics", "bleu"])["bleu"] == pytest.approx(100.0)


@pytest.mark.parametrize("name", known_tokenizers())
def test_every_sacrebleu_tokenizer_works_offline_or_is_one_line(name, tmp_path, monkeypatch):
    """sacrebleu's whole list: each either scores here without the network, or is refused in one line at
    parse time (exit 2, before reading anything) naming what is missing."""
    import socket

    attempts = []

    def no_network(*args, **kwargs):
        attempts.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    problem = M.sacrebleu_tokenizer_problem(name)
    f = {n: write(tmp_path / n, lines) for n, lines in (("ref", REF), ("hyp", HYP))}
    argv = ["--sys", f["hyp"], "--refs", f["ref"], "--metrics", "bleu", "--bleu-tokenize", name]
    if problem is None:
        assert isinstance(score_cli.main(argv + ["--json"])["bleu"], float)
    else:
        assert "\n" not in problem and (" needs " in problem or "cannot be used" in problem), problem
        with pytest.raises(SystemExit) as exc:
            score_cli.main(argv)
        assert exc.value.code == 2
    assert not attempts, "{}: a network connection was attempted".format(name)
    assert len(known_tokenizers()) >= 11  # the enumeration reached sacrebleu's list
