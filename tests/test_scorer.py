"""fairseq-wean-score and the scoring modules: SARI against EASSE, BLEU against sacrebleu, ROUGE
against rouge-score (also through fairseq's scorer registry), FKGL, output statistics, generate-log
parsing, bad input, paired bootstrap.

Most checks call ``fairseq_wean.cli.score.main`` in-process (one fairseq import for the whole
module); the bad-input cases and one happy path go through the real console script.
"""
import json
import re
import os
import threading

import pytest

from conftest import USER_DIR, cli_concurrently, read_text_lines, shared_data_dir
from fairseq_wean.cli import score
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import sari
from fairseq_wean.scoring.generate_log import GenerateLog, parse_hard_alignment

TURK = shared_data_dir("simplification", "turkcorpus")
DRESS = shared_data_dir("simplification", "system_outputs", "Dress-Ls.tok.low")
needs_data = pytest.mark.skipif(
    TURK is None or DRESS is None,
    reason="shared data not found (REPO/../shared/data or $FAIRSEQ_WEAN_DATA)",
)

# EASSE's own test suite (tests/test_sari.py), DRESS-LS on TurkCorpus test, 8 references:
EASSE_DRESS_LS_LEGACY = 37.266058818588216  # corpus_sari(..., legacy=True) (13a on sys/refs); PROVENANCE.md
EASSE_DRESS_LS_PLAIN = 36.73586275692667  # earlier EASSE release, tokenizer='plain' (= legacy, no tokenizer)


@pytest.fixture(scope="module")
def turk():
    orig = os.path.join(TURK, "test.8turkers.tok.norm")
    refs = [os.path.join(TURK, "test.8turkers.tok.turk.{}".format(i)) for i in range(8)]
    return orig, refs


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def run_json(capsys, *argv):
    score.main([str(a) for a in argv] + ["--json"])
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def assert_one_line_error(proc, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairseq-wean-score: error: "), proc.stderr[-2000:]
    for needle in needles:
        assert needle in last, last
    return last


# --------------------------------------------------------------------------------------------- SARI
# Hand-computed (see the comments): orig "a b c d", output "a x c", references "a x" and "a c d".
# Per n-gram order n=1..4 (ADD binary; KEEP/DEL counts weighted by the 2 references):
#   ADD  P/R: 1/1, 1/2 (ax right, xc wrong; refs add ax, ac), 0/0, 0/0        -> F1 1, .5, 0, 0
#   KEEP P/R: 3/4 (a:2 c:1 of a:2 c:2), 0 (nothing kept; refs keep cd), 0, 0  -> F1 .75, 0, 0, 0
#   DEL  P/R: 3/4 & 3/4, 5/6 & 5/5, 4/4 & 4/4, 2/2 & 2/2                      -> F1 .75, 10/11, 1, 1
HAND = (["a b c d"], ["a x c"], [["a x"], ["a c d"]])
HAND_DEFAULT = 100 * (3 / 8 + 3 / 16 + 161 / 176) / 3  # macro: F1 per order, averaged = 49.2424...
HAND_PAPER = 100 * (3 / 8 + 3 / 16 + 3870 / 4224) / 3  # micro: DEL F1 of P=43/48, R=45/48 = 49.2898...
HAND_DEL_PRECISION = 100 * (3 / 8 + 3 / 16 + 43 / 48) / 3  # DELETE precision only (sentence-level SARI)


def test_sari_hand_computed_example():
    assert sari.corpus_sari(*HAND) == pytest.approx(HAND_DEFAULT, abs=1e-9)
    assert sari.corpus_sari(*HAND, mode="legacy") == pytest.approx(HAND_DEFAULT, abs=1e-9)
    assert sari.corpus_sari(*HAND, mode="paper") == pytest.approx(HAND_PAPER, abs=1e-9)
    assert sari.corpus_sari(*HAND, use_f1_for_deletion=False) == pytest.approx(HAND_DEL_PRECISION, abs=1e-9)
    add, keep, dele = sari.corpus_sari_operation_scores(*HAND)
    assert (add, keep, dele) == pytest.approx((37.5, 18.75, 100 * 161 / 176))


def test_sari_single_reference_deletion_example():
    # orig "a b c" -> "a b" = reference. ADD: nothing to add (F1 0); KEEP F1 1, 1, 0, 0; DEL F1 1, 1, 1, 0.
    assert sari.corpus_sari(["a b c"], ["a b"], [["a b"]]) == pytest.approx(100 * (0 + 0.5 + 0.75) / 3)


def test_sari_modes_normalise_like_easse():
    orig, out, refs = HAND
    upper = ["A X C"]
    # default lowercases everything
    assert sari.corpus_sari(orig, upper, refs) == pytest.approx(HAND_DEFAULT)
    # legacy does not lowercase: "A", "X", "C" match nothing
    assert sari.corpus_sari(orig, upper, refs, mode="legacy") < HAND_DEFAULT - 10
    # default 13a-tokenizes the original too; legacy leaves it as is ("d." stays one token)
    assert sari.corpus_sari(["a b c d."], ["a x c"], [["a x ."], ["a c d ."]]) != pytest.approx(
        sari.corpus_sari(["a b c d."], ["a x c"], [["a x ."], ["a c d ."]], mode="legacy"))
    with pytest.raises(ValueError):
        sari.corpus_sari(*HAND, mode="nope")


@needs_data
def test_sari_matches_easse_on_turkcorpus_dress_ls(turk, capsys):
    orig, refs = turk
    orig_l, sys_l, refs_l = read_text_lines(orig), read_text_lines(DRESS), [read_text_lines(r) for r in refs]
    assert len(sys_l) == 359
    assert sari.corpus_sari(orig_l, sys_l, refs_l, mode="legacy") == pytest.approx(EASSE_DRESS_LS_LEGACY, abs=0.01)
    assert sari.corpus_sari(orig_l, sys_l, refs_l, mode="legacy", tokenizer="none") == pytest.approx(
        EASSE_DRESS_LS_PLAIN, abs=0.01)
    # the same number through the command
    out = run_json(capsys, "--sys", DRESS, "--orig", orig, "--refs", *refs, "--metrics", "sari", "--sari-mode", "legacy")
    assert out["sari"] == pytest.approx(EASSE_DRESS_LS_LEGACY, abs=0.01)


@needs_data
def test_copying_the_source_on_turkcorpus(turk, capsys):
    """Issue 7: copying the source scores multi-reference BLEU 99.4 but SARI 27.9 (legacy mode)."""
    orig, refs = turk
    out = run_json(capsys, "--sys", orig, "--orig", orig, "--refs", *refs, "--metrics", "bleu,sari,stats",
                   "--sari-mode", "legacy")
    assert out["bleu"] == pytest.approx(99.4, abs=0.05)
    assert out["sari"] == pytest.approx(27.9, abs=0.05)
    assert out["stats"]["exact_copy_pct"] == 100.0 and out["stats"]["copy_pct"] == 100.0
    # EASSE's default normalisation (lowercase + 13a on the original as well) gives 26.34
    out = run_json(capsys, "--sys", orig, "--orig", orig, "--refs", *refs, "--metrics", "sari")
    assert out["sari"] == pytest.approx(26.34, abs=0.01)


# --------------------------------------------------------------------------------------------- BLEU
def test_bleu_equals_sacrebleu_multi_reference(tmp_path, capsys):
    import sacrebleu

    hyps = ["the cat sat on the mat .", "a dog barked loudly", "", "it rained all day in the city ."]
    ref0 = ["the cat sat on a mat .", "the dog barked", "nothing here", "it rained all day ."]
    ref1 = ["a cat is on the mat .", "a dog barked loudly at night", "empty", "all day it rained in the city ."]
    src = ["the fat cat sat on the mat .", "a big dog barked loudly", "x", "it was raining all day in the city ."]
    files = [write(tmp_path / n, lines) for n, lines in
             (("hyp", hyps), ("r0", ref0), ("r1", ref1), ("src", src))]
    out = run_json(capsys, "--sys", files[0], "--refs", files[1], files[2], "--metrics", "bleu")
    assert out["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [ref0, ref1]).score, abs=1e-9)
    out = run_json(capsys, "--sys", files[0], "--refs", files[1], "--metrics", "bleu")
    assert out["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [ref0]).score, abs=1e-9)


# --------------------------------------------------------------------------------------------- ROUGE
def test_rouge_equals_rouge_score(tmp_path, capsys):
    from rouge_score import rouge_scorer

    hyps = ["police arrest man in shooting", "stocks fall sharply", ""]
    r0 = ["police arrested a man after the shooting", "stocks fell on monday", "markets close"]
    r1 = ["man arrested over shooting", "shares drop sharply", "closing"]
    f = [write(tmp_path / n, lines) for n, lines in (("h", hyps), ("r0", r0), ("r1", r1))]
    out = run_json(capsys, "--sys", f[0], "--refs", f[1], f[2], "--metrics", "rouge1,rouge2,rougeL")
    rs = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for t in ("rouge1", "rouge2", "rougeL"):
        expected = 100 * sum(rs.score_multi([a, b], h)[t].fmeasure for h, a, b in zip(hyps, r0, r1)) / 3
        assert out[t] == pytest.approx(expected, abs=1e-9)
    assert out["rouge1"] > 0


def test_rouge_characters_for_chinese(tmp_path, capsys):
    # 7 characters each, all shared; 4 of 6 bigrams; longest common subsequence 5
    f = [write(tmp_path / "h", ["今天我们去北京"]), write(tmp_path / "r", ["我们今天去北京"])]
    out = run_json(capsys, "--sys", f[0], "--refs", f[1], "--metrics", "rouge1,rouge2,rougeL", "--rouge-chars")
    assert (out["rouge1"], out["rouge2"], out["rougeL"]) == pytest.approx((100.0, 400 / 6, 100 * 5 / 7))
    assert M.CharTokenizer().tokenize("51信用卡 App，2015年") == ["51", "信", "用", "卡", "app", "，", "2015", "年"]
    # rouge-score's own tokenizer drops Chinese entirely: every score would be 0.00, so without
    # --rouge-chars it is an error that names the fix (it printed 0.00 silently)
    with pytest.raises(FairseqWeanError, match=r"100% of the references' letters and digits are outside them .*add --rouge-chars"):
        run_json(capsys, "--sys", f[0], "--refs", f[1], "--metrics", "rouge1")
    # English with a stray Chinese reference word: rouge-score would drop it (it never counts), so it
    # is refused whatever its share (probe B, G8), naming the share and the word
    g = [write(tmp_path / "h2", ["a b", "c d", "e"]), write(tmp_path / "r2", ["a b", "c x", "今天"])]
    with pytest.raises(FairseqWeanError, match=r"^ROUGE drops 20.0% of the references' words \(non a-z: 1 of 5, "
                                               r"e.g. '今天'\)"):
        run_json(capsys, "--sys", g[0], "--refs", g[1], "--metrics", "rouge1")


def test_rouge_is_a_fairseq_scorer(tmp_path):
    """`fairseq-generate --user-dir fairseq_wean --scoring rouge [--rouge-chars]`: the arguments parse,
    fairseq builds our scorer from them, and it reports rouge-score's numbers."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.scoring import build_scorer
    from rouge_score import rouge_scorer

    from fairseq_wean.scoring.rouge import RougeScorer

    def scorer_from_cli(*extra):
        parser = options.get_generation_parser()
        args = options.parse_args_and_arch(
            parser, [str(tmp_path), "--user-dir", USER_DIR, "--path", "x.pt", "--scoring", "rouge", *extra])
        return build_scorer(convert_namespace_to_omegaconf(args).scoring, None)

    pairs = [("police arrested a man after the shooting", "police arrest man in shooting"),
             ("stocks fell on monday", "stocks fall sharply on monday")]
    scorer = scorer_from_cli()
    assert isinstance(scorer, RougeScorer)
    for ref, hyp in pairs:
        scorer.add_string(ref, hyp)
    rs = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    expected = {t: 100 * sum(rs.score(r, h)[t].fmeasure for r, h in pairs) / 2 for t in ("rouge1", "rouge2", "rougeL")}
    assert scorer.scores() == pytest.approx(expected, abs=1e-9)
    assert scorer.score() == pytest.approx(expected["rougeL"]) and scorer.score(1) == pytest.approx(expected["rouge1"])
    assert scorer.result_string().startswith("ROUGE-1/2/L F1 = {:.2f}/{:.2f}/{:.2f} (n=2".format(
        expected["rouge1"], expected["rouge2"], expected["rougeL"]))

    chars = scorer_from_cli("--rouge-chars")
    chars.add_string("我们今天去北京", "今天我们去北京")
    assert chars.scores() == pytest.approx({"rouge1": 100.0, "rouge2": 400 / 6, "rougeL": 500 / 7})
    assert "characters" in chars.result_string()
    assert build_scorer("rouge", None).result_string().startswith("ROUGE-1/2/L F1 = 0.00/0.00/0.00 (n=0")


# --------------------------------------------------------------------------------------------- FKGL, stats
def test_fkgl_hand_counted(tmp_path, capsys):
    # words 6, syllables 6, 1 sentence: 0.39 * 6 + 11.8 * 1 - 15.59
    f = write(tmp_path / "a", ["the cat sat on the mat ."])
    assert run_json(capsys, "--sys", f, "--metrics", "fkgl")["fkgl"] == pytest.approx(-1.45)
    # 12 words (punctuation is not a word), 18 syllables by pyphen (extraordinarily 6, didn't 2)
    long = "the quick brown fox jumped over the extraordinarily lazy dog , didn't it ?"
    f = write(tmp_path / "b", [long])
    assert run_json(capsys, "--sys", f, "--metrics", "fkgl")["fkgl"] == pytest.approx(0.39 * 12 + 11.8 * 1.5 - 15.59)
    assert M._textstat().flesch_kincaid_grade(long) == pytest.approx(0.39 * 12 + 11.8 * 1.5 - 15.59)
    # corpus level: counts summed over lines (18 words, 24 syllables, 2 sentences); empty lines count nothing
    f = write(tmp_path / "c", ["the cat sat on the mat .", "", long])
    assert run_json(capsys, "--sys", f, "--metrics", "fkgl")["fkgl"] == pytest.approx(
        0.39 * 9 + 11.8 * 24 / 18 - 15.59)


def test_output_stats(tmp_path, capsys):
    f = [write(tmp_path / "h", ["a b <unk>", "x  y", "UNK q"]), write(tmp_path / "s", ["a b c", "x y", "p q"])]
    st = run_json(capsys, "--sys", f[0], "--orig", f[1], "--metrics", "stats")["stats"]
    # 7 tokens: 2 unknown (<unk>, UNK); a b x y q found in the source; "x  y" == "x y" after splitting
    assert st == pytest.approx({"avg_len": 7 / 3, "unk_pct": 100 * 2 / 7, "copy_pct": 100 * 5 / 7,
                                "exact_copy_pct": 100 / 3})


# --------------------------------------------------------------------------------------------- generate logs
GEN_LOG = """2026-01-01 | INFO | fairseq_cli.generate | loading model
S-2\tthe dog runs fast
T-2\tdog runs
H-2\t-0.31\tdog runs
D-2\t-0.31\tdog runs
P-2\t-0.1 -0.2 -0.3
S-0\tthe cat sat on the mat
T-0\tcat sat on mat
H-0\t-0.50\tcat sat on mat
H-0\t-0.90\tcat sat on the mat
S-3\ta b c
T-3\ta b
H-3\t-0.70
S-1\tbirds fly south in winter
T-1\tbirds fly south
H-1\t-0.40\tbirds fly
Generate test with beam=5: BLEU4 = 12.00
"""
GEN_ORDERED = ["cat sat on mat", "birds fly", "dog runs", ""]


def test_generate_log_is_reordered_by_sentence_id(tmp_path, capsys):
    log = tmp_path / "gen.out"
    log.write_text(GEN_LOG, encoding="utf-8")
    plain = write(tmp_path / "plain", GEN_ORDERED)
    src = write(tmp_path / "src", ["the cat sat on the mat", "birds fly south in winter", "the dog runs fast", "a b c"])
    ref = write(tmp_path / "ref", ["cat sat on mat", "birds fly south", "dog runs", "a b"])
    lines, parsed = score.read_system(str(log), "--sys", 4)
    assert lines == GEN_ORDERED and parsed is not None  # best (first) of the n-best, empty hypothesis kept
    args = ["--orig", src, "--refs", ref, "--metrics", "bleu,sari,stats"]
    from_log = run_json(capsys, "--sys", log, *args)
    assert from_log == run_json(capsys, "--sys", plain, *args)
    # without --orig/--refs the log's S- and T- lines are used
    assert run_json(capsys, "--sys", log, "--metrics", "bleu,sari,stats") == from_log


@pytest.fixture(scope="module")
def command_runs(tmp_path_factory):
    """The real console script, three runs started together (start-up dominates; it overlaps)."""
    d = tmp_path_factory.mktemp("score-cli")
    # 1. a fairseq-generate log without H- lines for sentences 1 and 3
    log = d / "gen.out"
    log.write_text("".join(l + "\n" for l in GEN_LOG.splitlines() if not l.startswith(("H-1\t", "H-3\t"))),
                   encoding="utf-8")
    src4 = write(d / "src4", ["s0", "s1", "s2", "s3"])
    ref4 = write(d / "ref4", ["s0", "s1", "s2", "s3"])  # a file in two roles is refused
    # 2. a reference file one line short
    hyp3 = write(d / "hyp3", ["a b", "c d", "e f"])
    ref2 = write(d / "ref2", ["a b", "c d"])
    # 3. every metric, with an empty output line
    hyp = write(d / "hyp", ["the cat sat .", "", "dogs bark ."])
    src = write(d / "src", ["the fat cat sat on the mat .", "a b c", "the dogs bark loudly ."])
    r0 = write(d / "r0", ["the cat sat on the mat .", "a b", "dogs bark ."])
    r1 = write(d / "r1", ["a cat sat .", "a c", "the dogs bark ."])
    # 4.-5. two generate logs in one file: with their summary lines, and as bare sentence lines
    two_logs = d / "two.out"
    two_logs.write_text(GEN_LOG + GEN_LOG, encoding="utf-8")
    bare = "".join(l + "\n" for l in GEN_LOG.splitlines() if l[:2] in ("S-", "T-", "H-"))
    two_bare = d / "two_bare.out"
    two_bare.write_text(bare + bare, encoding="utf-8")
    # 6. byte-order marks on --sys and --orig (Windows editors write them)
    ref_bom = write(d / "ref_bom", ["the cat sat on the mat .", "dogs bark ."])
    (d / "hyp_bom").write_bytes(b"\xef\xbb\xbfthe cat sat on the mat .\ndogs bark .\n")
    (d / "src_bom").write_bytes(b"\xef\xbb\xbfthe cat sat on the mat .\ndogs bark .\n")
    # 7. --sys from /dev/stdin; 8. --sys a named pipe
    fifo = d / "fifo"
    os.mkfifo(str(fifo))

    def feed_fifo():
        with open(str(fifo), "w", encoding="utf-8") as f:
            f.write("the cat sat on the mat .\ndogs bark .\n")

    threading.Thread(target=feed_fifo, daemon=True).start()
    # 9. empty --sys, --orig, --refs
    empty = write(d / "empty", [])
    empty2 = write(d / "empty2", [])  # two reference streams: one file twice is refused
    empty3 = write(d / "empty3", [])  # the system (and its sources): a file as its own reference is refused
    names = ["missing_ids", "line_counts", "all_metrics", "two_logs", "two_bare", "bom", "stdin", "fifo",
             "empty_bleu", "empty_sari"]
    runs = cli_concurrently([
        ("fairseq-wean-score", ["--sys", log, "--orig", src4, "--refs", ref4, "--metrics", "bleu,stats"],
         {"check": False}),
        ("fairseq-wean-score", ["--sys", hyp3, "--orig", hyp3, "--refs", ref2, "--metrics", "bleu,sari"],
         {"check": False}),
        ("fairseq-wean-score", ["--sys", hyp, "--orig", src, "--refs", r0, r1, "--metrics", ",".join(M.METRICS),
                                "--json"], {"check": False}),
        ("fairseq-wean-score", ["--sys", two_logs, "--metrics", "bleu"], {"check": False}),
        ("fairseq-wean-score", ["--sys", two_bare, "--metrics", "bleu"], {"check": False}),
        ("fairseq-wean-score", ["--sys", d / "hyp_bom", "--orig", d / "src_bom", "--refs", ref_bom,
                                "--metrics", "bleu,stats", "--json"], {"check": False}),
        ("fairseq-wean-score", ["--sys", "/dev/stdin", "--refs", ref_bom, "--metrics", "bleu", "--json"],
         {"check": False, "input": "the cat sat on the mat .\ndogs bark .\n"}),
        ("fairseq-wean-score", ["--sys", fifo, "--refs", ref_bom, "--metrics", "bleu", "--json"], {"check": False}),
        ("fairseq-wean-score", ["--sys", empty3, "--refs", empty, "--metrics", "bleu"],
         {"check": False}),
        ("fairseq-wean-score", ["--sys", empty3, "--orig", empty3, "--refs", empty, empty2, "--metrics", "sari"],
         {"check": False}),
    ])
    out = dict(zip(names, runs))
    out["log"], out["ref2"], out["two_logs_path"] = str(log), ref2, str(two_logs)
    return out


def test_missing_sentence_ids_in_a_log_is_a_one_line_error(command_runs):
    assert_one_line_error(command_runs["missing_ids"], "sentence id(s) 1, 3", "2 of 4 missing", command_runs["log"])


def test_different_line_counts_is_a_one_line_error(command_runs):
    assert_one_line_error(command_runs["line_counts"], "different numbers of lines", "has 3",
                          "{} has 2".format(command_runs["ref2"]))


def test_other_bad_input_raises_fairseq_wean_error(tmp_path):
    hyp = write(tmp_path / "hyp", ["a b", "c d"])
    ref = write(tmp_path / "ref", ["a b", "c d"])
    with pytest.raises(FairseqWeanError, match="--orig FILE"):
        score.main(["--sys", hyp, "--refs", ref, "--metrics", "sari"])
    with pytest.raises(FairseqWeanError, match="no such file"):
        score.main(["--sys", str(tmp_path / "nope"), "--refs", hyp, "--metrics", "bleu"])
    with pytest.raises(FairseqWeanError, match="--compare-to"):
        score.main(["--sys", hyp, "--refs", ref, "--metrics", "bleu", "--compare-to", write(tmp_path / "o", ["a"])])
    (tmp_path / "latin1").write_bytes(b"caf\xe9\n")
    with pytest.raises(FairseqWeanError, match="UTF-8"):
        score.main(["--sys", str(tmp_path / "latin1"), "--metrics", "fkgl"])
    with pytest.raises(SystemExit):  # argparse: unknown metric
        score.main(["--sys", hyp, "--refs", hyp, "--metrics", "bleu,meteor"])


def test_concatenated_generate_logs_are_a_one_line_error(command_runs):
    """Issue 16: `cat gen1.out gen2.out` was scored as the first log, the second ignored."""
    assert_one_line_error(command_runs["two_logs"], command_runs["two_logs_path"], "more than one run",
                          "sentence lines after the summary line 17 (line 19: S-2)")
    assert_one_line_error(command_runs["two_bare"], "more than one run",
                          "sentence id 2 appears again at line 14 (first at line 1)")


def test_byte_order_mark_is_dropped(command_runs):
    proc = command_runs["bom"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["bleu"] == pytest.approx(100.0)  # "\ufeffthe" would not match "the"
    assert out["stats"]["exact_copy_pct"] == 100.0 and out["stats"]["invented_pct"] == 0.0


@pytest.mark.parametrize("name", ["stdin", "fifo"])
def test_standard_input_and_named_pipes_are_read(command_runs, name):
    proc = command_runs[name]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["bleu"] == pytest.approx(100.0)


@pytest.mark.parametrize("name", ["empty_bleu", "empty_sari"])
def test_empty_inputs_are_a_one_line_error(command_runs, name):
    """Issue 16: empty files gave a TypeError traceback from metrics.py."""
    assert_one_line_error(command_runs[name], "nothing to score", "are empty")


def test_command_json_keys_and_empty_hypothesis(command_runs):
    """The real command: every metric, an empty output line is scored (not a crash)."""
    proc = command_runs["all_metrics"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list(out) == list(M.METRICS)
    assert all(isinstance(out[m], float) for m in M.METRICS if m != "stats")
    assert set(out["stats"]) == set(M.STATS_KEYS) | set(M.INVENTED_KEYS)  # --refs given: invented words too
    assert 0 < out["sari"] < 100 and 0 < out["bleu"] < 100 and 0 < out["rougeL"] < 100
    assert out["stats"]["avg_len"] == pytest.approx(7 / 3)


# --------------------------------------------------------------------------------------------- bootstrap
def test_compare_to_gives_paired_bootstrap_p_values(tmp_path, capsys):
    hyp_a = ["the cat sat on the mat .", "dogs bark .", "it rained .", "birds fly south ."] * 5
    hyp_b = ["a cat .", "dogs are barking loudly now .", "rain .", "birds ."] * 5
    ref = ["the cat sat on the mat .", "dogs bark .", "it rained all day .", "birds fly south ."] * 5
    src = ["the fat cat sat on the mat .", "the dogs bark loudly .", "it rained all day long .",
           "the birds fly south in winter ."] * 5
    a, b, r, s = (write(tmp_path / n, lines) for n, lines in (("a", hyp_a), ("b", hyp_b), ("r", ref), ("s", src)))
    metrics = "bleu,sari,fkgl,rouge1,rouge2,rougeL,stats"
    out = run_json(capsys, "--sys", a, "--orig", s, "--refs", r, "--metrics", metrics, "--compare-to", b)
    assert set(out) == set(metrics.split(",")) | {"compare_to", "p_values"}
    assert set(out["p_values"]) == set(metrics.split(",")) - {"stats"}  # stats are descriptive, no test
    assert all(0.0 < p <= 1.0 for p in out["p_values"].values())
    assert out["p_values"]["bleu"] < 0.05 and out["p_values"]["sari"] < 0.05  # A is clearly better
    alone = run_json(capsys, "--sys", b, "--orig", s, "--refs", r, "--metrics", metrics)
    assert {k: out["compare_to"][k] for k in alone} == alone
    # identical systems (two files: one file compared with itself is refused, test_option_rules.py):
    # every bootstrap difference is 0, p = 1 exactly
    a2 = write(tmp_path / "a2", hyp_a)
    same = run_json(capsys, "--sys", a, "--orig", s, "--refs", r, "--metrics", metrics, "--compare-to", a2)
    assert same["p_values"] == {m: 1.0 for m in out["p_values"]}
    # fixed seed: the same p-values every run; the text report shows them too
    assert run_json(capsys, "--sys", a, "--orig", s, "--refs", r, "--metrics", metrics, "--compare-to", b) == out
    score.main(["--sys", a, "--orig", s, "--refs", r, "--metrics", "bleu,sari", "--compare-to", b])
    text = capsys.readouterr().out
    assert "paired bootstrap p = " in text and "1000 resamples" in text


@needs_data
def test_compare_dress_ls_with_copying_on_turkcorpus(turk, capsys):
    orig, refs = turk
    out = run_json(capsys, "--sys", DRESS, "--orig", orig, "--refs", *refs, "--metrics", "bleu,sari",
                   "--sari-mode", "legacy", "--compare-to", orig)
    assert out["sari"] == pytest.approx(EASSE_DRESS_LS_LEGACY, abs=0.01)
    assert out["compare_to"]["sari"] == pytest.approx(27.9, abs=0.05)
    assert out["p_values"]["sari"] < 0.01 and out["p_values"]["bleu"] < 0.01


# --------------------------------------------------------------------------------------------- generate-log parser
def test_generate_log_parser_refuses_two_runs():
    GenerateLog("ok", GEN_LOG.splitlines())  # one run, n-best H- lines of sentence 0 together: fine
    header = "2026-01-01 12:00:00 | INFO | fairseq_cli.generate | loading model(s) from ck.pt"
    first = [header, "S-0\ta b", "H-0\t-1.0\ta", "S-1\tc d", "H-1\t-1.0\tc"]
    GenerateLog("one", first)
    with pytest.raises(FairseqWeanError, match=r"a second header .* at line 6 \(the first is at line 1\)"):
        GenerateLog("log", first + [header])  # the second run died before its first sentence: still refused
    with pytest.raises(FairseqWeanError, match="sentence id 0 appears again at line 6"):
        GenerateLog("log", first + ["S-0\ta b"])
    with pytest.raises(FairseqWeanError, match=r"after the summary line 6 \(line 7: H-3\)"):
        GenerateLog("log", first + ["Generate test with beam=5: BLEU4 = 1.00", "H-3\t-1.0\tx"])
    log = GenerateLog("log", first + ["A-1\t0-0 1-1", "D-1\t-1.0\tC"])
    assert log.hypotheses() == ["a", "c"] and log.detok == {1: "C"} and log.src == {0: "a b", 1: "c d"}
    assert parse_hard_alignment(log.align[1]) == [(0, 0), (1, 1)]


# --------------------------------------------------------------------------------------------- invented words
def test_invented_words_hand_computed():
    # lowercased on every side; punctuation tokens are words ("!" is invented); "mat." != "mat";
    # <unk>/UNK are never invented; each occurrence counts
    assert M.invented_words("The Cat sat on a RUG !", "the cat sat on the mat .", ["a cat sat ."]) == ["rug", "!"]
    assert M.invented_words("zz zz <unk> UNK mat.", "mat", []) == ["zz", "zz", "mat."]
    assert M.invented_words("", "a", ["b"]) == []
    # a word found only in the second reference is not invented
    assert M.invented_words("x y", "a", ["x", "q y"]) == []


def test_invented_words_in_stats(tmp_path, capsys):
    hyps = ["The Cat sat on a RUG", "zz zz <unk>", "x y"]
    srcs = ["the cat sat on the mat .", "mat", "a"]
    r0 = ["a cat sat .", "p", "x"]
    r1 = ["the end", "q", "q y"]
    h, s, a, b = (write(tmp_path / n, lines) for n, lines in (("h", hyps), ("s", srcs), ("a", r0), ("b", r1)))
    st = run_json(capsys, "--sys", h, "--orig", s, "--refs", a, b, "--metrics", "stats")["stats"]
    # 11 tokens; invented: rug (sentence 0) and zz zz (sentence 1): 2 of 3 sentences
    assert st["invented_pct"] == pytest.approx(100 * 3 / 11)
    assert st["invented_sent_pct"] == pytest.approx(100 * 2 / 3)
    assert st["avg_len"] == pytest.approx(11 / 3)
    # without references: the four statistics of before, no invented-word keys
    assert set(run_json(capsys, "--sys", h, "--orig", s, "--metrics", "stats")["stats"]) == set(M.STATS_KEYS)
    score.main(["--sys", h, "--orig", s, "--refs", a, b, "--metrics", "stats"])
    assert "invented 27.27% of words (66.67% of sentences)" in capsys.readouterr().out


@needs_data
def test_invented_words_of_dress_ls_on_turkcorpus(turk, capsys):
    """Issue 15: DRESS-LS writes 2.3% words found in neither the source nor any of the 8 references,
    in 23% of the sentences (135 of 5885 tokens, 83 of 359 sentences)."""
    orig, refs = turk
    st = run_json(capsys, "--sys", DRESS, "--orig", orig, "--refs", *refs, "--metrics", "stats")["stats"]
    assert st["invented_pct"] == pytest.approx(100 * 135 / 5885)
    assert st["invented_sent_pct"] == pytest.approx(100 * 83 / 359)


# --------------------------------------------------------------------------------------------- library API
def test_score_api_returns_what_the_command_prints(tmp_path, capsys):
    from fairseq_wean.scoring import score as score_api

    hyps = ["the cat sat .", "", "dogs bark ."]
    srcs = ["the fat cat sat on the mat .", "a b c", "the dogs bark loudly ."]
    r0 = ["the cat sat on the mat .", "a b", "dogs bark ."]
    r1 = ["a cat sat .", "a c", "the dogs bark ."]
    other = ["the fat cat sat .", "a b", "the dogs bark ."]
    files = [write(tmp_path / n, lines) for n, lines in (("h", hyps), ("s", srcs), ("a", r0), ("b", r1), ("o", other))]
    printed = run_json(capsys, "--sys", files[0], "--orig", files[1], "--refs", files[2], files[3],
                       "--metrics", "sari,bleu,rougeL,stats", "--sari-mode", "legacy", "--compare-to", files[4],
                       "--bootstrap-samples", "50")
    got = score_api(hyps, sources=srcs, references=[r0, r1], metrics=("sari", "bleu", "rougeL", "stats"),
                    sari_mode="legacy", compare_to=other, bootstrap_samples=50)
    printed_other = printed.pop("compare_to")
    assert printed_other.pop("file") == files[4]
    assert got.pop("compare_to") == printed_other == score_api(
        other, sources=srcs, references=[r0, r1], metrics=("sari", "bleu", "rougeL", "stats"), sari_mode="legacy")
    assert got == printed
    assert list(got) == ["sari", "bleu", "rougeL", "stats", "p_values"]
    assert got["sari"] == pytest.approx(sari.corpus_sari(srcs, hyps, [r0, r1], mode="legacy"))
    assert score_api(hyps, references=[r0], metrics="bleu") == {"bleu": pytest.approx(M.corpus_bleu(hyps, [r0]))}
    for bad, message in (
            (dict(hyps=[], references=[[]], metrics="bleu"), "nothing to score"),
            (dict(hyps=hyps, references=[r0], metrics="sari"), "sources .* required for sari"),
            (dict(hyps=hyps, sources=srcs, metrics="bleu"), "references .* required for bleu"),
            (dict(hyps=hyps, references=[r0[:2]], metrics="bleu"), "references\\[0\\] has 2"),
            (dict(hyps=hyps, references=[r0], metrics="bleu,meteor"), "unknown metric"),
            (dict(hyps=hyps, references=[r0], metrics="bleu", compare_to=other[:2]), "compare_to has 2")):
        with pytest.raises(FairseqWeanError, match=message):
            score_api(bad.pop("hyps"), **bad)


def test_sentence_scores(capsys):
    import sacrebleu

    from fairseq_wean.scoring import sentence_scores

    orig, out, refs = HAND
    rows = sentence_scores(out + ["a b c d"], sources=orig + ["a b c d"],
                           references=[refs[0] + ["a b"], refs[1] + ["a b c"]])
    assert rows[0] == {"sari": pytest.approx(HAND_DEFAULT), "bleu": pytest.approx(
        sacrebleu.sentence_bleu("a x c", ["a x", "a c d"]).score), "length_ratio": 3 / 4, "invented_words": []}
    assert rows[1]["sari"] == pytest.approx(sari.corpus_sari(["a b c d"], ["a b c d"], [["a b"], ["a b c"]]))
    assert rows[1]["length_ratio"] == 1.0 and rows[1]["bleu"] == pytest.approx(
        sacrebleu.sentence_bleu("a b c d", ["a b", "a b c"]).score)
    from rouge_score import rouge_scorer

    rouge = sentence_scores(["police arrest man", "zz"], references=[["police arrested a man", "stocks fall"]],
                            metric="rougeL")
    rs = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    assert rouge[0]["rougeL"] == pytest.approx(100 * rs.score("police arrested a man", "police arrest man")["rougeL"]
                                               .fmeasure)
    assert rouge[1] == {"rougeL": 0.0, "bleu": 0.0, "length_ratio": None, "invented_words": None}
    with pytest.raises(FairseqWeanError, match="not available per sentence"):
        sentence_scores(out, sources=orig, references=refs, metric="bleu")


def test_sentence_scores_from_corpus_statistics_are_the_same():
    """The report reuses a system's corpus statistics for its sentence scores (a 50,000-sentence
    report computed SARI twice per system): the same values as computing them afresh."""
    import random

    from fairseq_wean.scoring import sentence_scores
    from fairseq_wean.scoring.scores import score_with_statistics

    rng = random.Random(3)
    words = "the a cat dog sat on mat big small ran".split()
    sent = lambda: " ".join(rng.choice(words) for _ in range(rng.randint(1, 9)))  # noqa: E731
    src, hyps = [sent() for _ in range(40)], [sent() for _ in range(40)]
    refs = [[sent() for _ in range(40)] for _ in range(2)]
    opts = dict(sources=src, references=refs)
    _, statistics = score_with_statistics(hyps, metrics="sari,rougeL,bleu", **opts)
    for metric in ("sari", "rougeL", None):
        reused = sentence_scores(hyps, metric=metric, statistics=statistics, **opts)
        assert reused == sentence_scores(hyps, metric=metric, **opts)
    assert set(reused[0]) == {"bleu", "length_ratio", "invented_words"}  # metric None: BLEU and length only


def test_paired_bootstrap_in_blocks_equals_all_resamples_at_once(monkeypatch):
    """The resample weights are drawn in blocks (all at once: 400 MB for 1,000 resamples of 50,000
    sentences), with the same draws: the p-values of the one-matrix computation."""
    import numpy as np

    rng = np.random.RandomState(0)
    n, samples = 500, 100
    ratio = lambda t: t[0] / max(t[1], 1)  # noqa: E731
    a = {"x": M.CorpusMetric(rng.randint(0, 5, size=(n, 2)), ratio)}
    b = {"x": M.CorpusMetric(rng.randint(0, 6, size=(n, 2)), ratio)}
    r = np.random.RandomState(M.BOOTSTRAP_SEED)
    weights = np.array([np.bincount(r.randint(0, n, size=n), minlength=n) for _ in range(samples)], dtype=float)
    ta, tb = weights @ a["x"].rows, weights @ b["x"].rows
    deltas = np.array([ratio(ta[i]) - ratio(tb[i]) for i in range(samples)])
    count = int(np.sum(np.abs(deltas - deltas.mean()) >= abs(a["x"].score() - b["x"].score()) - 1e-9))
    expected = (count + 1) / (samples + 1)
    assert 0.001 < expected < 1
    assert M.paired_bootstrap(a, b, n_samples=samples)["x"] == expected  # one block
    monkeypatch.setattr(M, "BOOTSTRAP_BLOCK", 7 * n)  # blocks of 7 resamples, the last one of 2
    assert M.paired_bootstrap(a, b, n_samples=samples)["x"] == expected


def test_options_from_score_args():
    from fairseq_wean.scoring.scores import options_from_score_args

    assert options_from_score_args(["--rouge-chars", "--sari-mode", "legacy", "--rouge-no-stemmer"]) == {
        "rouge_chars": True, "sari_mode": "legacy", "rouge_stemmer": False}
    assert options_from_score_args(["--sari-mode=paper"]) == {"sari_mode": "paper"}
    assert options_from_score_args(["--bleu-tokenize", "none"]) == {"bleu_tokenize": "none"}
    with pytest.raises(FairseqWeanError, match="--bleu-tokenize needs one of .*13a.* \\(got 'nune'\\)"):
        options_from_score_args(["--bleu-tokenize=nune"])
    with pytest.raises(FairseqWeanError, match="--sari-mode needs"):
        options_from_score_args(["--sari-mode"])
    with pytest.raises(FairseqWeanError, match="unknown score option '--json'"):
        options_from_score_args(["--json"])


# --------------------------------------------------------------------------------------------- translation
def test_chrf_ter_and_bleu_tokenization_equal_sacrebleu(tmp_path, capsys):
    """chrF and TER are sacrebleu's, with paired bootstrap like BLEU; --bleu-tokenize none scores
    tokenized text as multi-bleu does: 13a splits '<unk>' into '< unk >' (issue 38)."""
    import sacrebleu

    hyps = ["a man rides a <unk> .", "two dogs play in the snow .", "the girl is <unk> <unk> ."]
    refs = ["a man rides a bicycle .", "two dogs are playing in the snow .", "the girl is running ."]
    other = ["a man is riding .", "dogs play .", "a girl runs ."]
    f = [write(tmp_path / n, lines) for n, lines in (("h", hyps), ("r", refs), ("o", other))]
    out = run_json(capsys, "--sys", f[0], "--refs", f[1], "--metrics", "bleu,chrf,ter", "--compare-to", f[2],
                   "--bootstrap-samples", "50")
    assert out["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score, abs=1e-9)
    assert out["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score, abs=1e-9)
    assert out["ter"] == pytest.approx(sacrebleu.corpus_ter(hyps, [refs]).score, abs=1e-9)
    assert out["compare_to"]["chrf"] == pytest.approx(sacrebleu.corpus_chrf(other, [refs]).score, abs=1e-9)
    assert set(out["p_values"]) == {"bleu", "chrf", "ter"}
    none = run_json(capsys, "--sys", f[0], "--refs", f[1], "--metrics", "bleu", "--bleu-tokenize", "none")
    assert none["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="none").score, abs=1e-9)
    assert none["bleu"] != out["bleu"]


def test_the_printed_table_names_systems_and_the_bleu_tokenization(tmp_path, capsys):
    f = [write(tmp_path / n, lines) for n, lines in (("h.txt", ["a b c d"]), ("r", ["a b c d"]), ("o.txt", ["a b"]))]
    score.main(["--sys", f[0], "--refs", f[1], "--metrics", "bleu,chrf", "--compare-to", f[2], "--name", "wean_lstm",
                "--compare-name", "lstm", "--bleu-tokenize", "none", "--bootstrap-samples", "20"])
    text = capsys.readouterr().out
    assert "wean_lstm: 1 sentences (" in text and "1 reference(s) (" in text
    assert re.search(r"^BLEU +100\.00 \(sacrebleu, tokenize none\)  \| lstm +[0-9.]+, paired bootstrap p", text, re.M)
    assert re.search(r"^chrF +100\.00  \| lstm ", text, re.M) and re.search(r"^lstm = .*o\.txt; p: two-sided", text, re.M)
    score.main(["--sys", f[0], "--refs", f[1], "--metrics", "bleu", "--compare-to", f[2], "--bootstrap-samples", "20"])
    assert "| o.txt " in capsys.readouterr().out  # default labels: the file names


def test_the_standalone_commands_start_without_fairseq_or_torch(tmp_path):
    """fairseq-wean-score, -report, -align-table and -train-cpu-dist (its ranks run fairseq-train)
    import neither fairseq nor torch (importing fairseq imports every task it has, scikit-learn
    included: about 4 s of CPU per process), and still do their work and give one-line errors; a
    program that imports the package otherwise gets the plugin registered (the control: without it
    this test could not fail)."""
    import sys

    def write(path, lines):
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return path

    src = write(tmp_path / "train.src", ["a b c d", "b c d e", "a c e", "d e a b"] * 3)
    tgt = write(tmp_path / "train.tgt", ["a b d", "b d e", "a e", "d a b"] * 3)
    ref = write(tmp_path / "ref.tgt", ["a b d", "b d e", "a e", "d a b"] * 3)  # one file in two roles is refused
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    runs = {
        "score": ("fairseq-wean-score", ["--sys", tgt, "--orig", src, "--refs", ref, "--metrics", "sari,chrf"], {}),
        "score_error": ("fairseq-wean-score", ["--sys", tmp_path / "missing", "--refs", tgt, "--metrics", "bleu"],
                        {"check": False}),
        "report": ("fairseq-wean-report", ["--sys", tgt, "--orig", src, "--refs", ref, "--metrics", "sari,stats",
                                           "--out", tmp_path / "r.html"],
                   {}),
        "align": ("fairseq-wean-align-table", ["--src", src, "--tgt", tgt, "--topk", 2, "--out", tmp_path / "a.tsv"],
                  {}),
        "launcher_error": ("fairseq-wean-train-cpu-dist", ["--nproc-per-node", 0, "--", tmp_path, "--arch", "lstm"],
                           {"check": False}),
        "control": (os.path.basename(sys.executable), ["-c", "import fairseq_wean"], {}),
    }
    procs = dict(zip(runs, cli_concurrently([(exe, args, dict(kw, env=env)) for exe, args, kw in runs.values()])))

    def imported(proc):
        return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}

    assert {"fairseq", "torch", "fairseq_wean.compat"} <= imported(procs["control"])
    for name in ("score", "score_error", "report", "align", "launcher_error"):
        assert not {"fairseq", "torch", "sklearn"} & imported(procs[name]), name
    from fairseq_wean.scoring import score as score_corpus

    expected = score_corpus(read_text_lines(tgt), sources=read_text_lines(src), references=[read_text_lines(tgt)],
                            metrics="sari")["sari"]
    assert float(re.search(r"^SARI +([0-9.]+)", procs["score"].stdout, re.M).group(1)) == pytest.approx(expected, abs=0.006)
    assert (tmp_path / "r.html").exists()
    assert (tmp_path / "a.tsv").read_text(encoding="utf-8").count("\t") > 0
    errors = [l for l in procs["score_error"].stderr.splitlines() if not l.startswith("import time:")]
    assert procs["score_error"].returncode == 1 and errors[-1].startswith("fairseq-wean-score: error: ") \
        and "missing" in errors[-1] and "Traceback" not in procs["score_error"].stderr
    assert procs["launcher_error"].returncode == 1 and procs["launcher_error"].stderr.strip().splitlines()[-1] \
        .startswith("fairseq-wean-train-cpu-dist: error: --nproc-per-node must be at least 1 (got 0)")
