"""Metrics that count words are refused on text written without spaces between words (Chinese,
Japanese, Thai, ...) left unsegmented, and FKGL on text that is not English: one check per metric
family where every tool computes it (:mod:`fairseq_wean.scoring.metrics`, :mod:`~fairseq_wean.
scoring.sari`), enumerated here over every entry point x every such metric. ROUGE's unit check
is tests/test_rouge_unit.py. chrF (characters), BLEU with --bleu-tokenize zh, and segmented text
are scored, with the values sacrebleu gives.
"""
import json

import pytest
import sacrebleu

from fairseq_wean.cli import report, score
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import sari as sari_lib
from fairseq_wean.scoring import score as score_library

ZH_SRC = ["今天的天气非常好我们一起去公园", "他非常喜欢读书和写字"]
ZH_REF = ["今天天气不错我们去公园玩", "他喜欢读书"]
ZH_HYP = ["今天天气很好我们去公园", "他喜欢读书和写字"]
EXAMPLE = ZH_REF[0]
PER_TOKEN = (len(ZH_REF[0]) + len(ZH_REF[1])) / 2
SEGMENT = "segment the text into words (or characters: python -m preprocess.split_characters) on every side first"


def words_message(metric):
    return ("{} counts words, and the references are in a script without spaces between words (100% of the letters, "
            "{:.0f} characters per space-separated token, e.g. {!r}): each sentence would be one or a few 'words' "
            "and the score meaningless; ".format(metric, PER_TOKEN, EXAMPLE))


def expected(metric, option="--bleu-tokenize"):
    """The one-line message of each refused metric (name in --metrics, and options)."""
    if metric.startswith("bleu"):
        tok = metric.split(":")[1]
        return words_message("BLEU with tokenization " + tok) + \
            "use {} zh (Chinese; ja-mecab for Japanese, char for other scripts), or {}".format(option, SEGMENT)
    if metric in ("sari", "ter"):
        return words_message(metric.upper()) + SEGMENT
    assert metric == "fkgl"
    return ("FKGL is defined for English text (English syllables and words), and 100% of the output's letters are "
            "not a-z (e.g. {!r}): the grade would be meaningless; score with another metric".format(ZH_HYP[0]))


# every metric that counts words (BLEU with each word tokenizer), and FKGL
REFUSED = ["bleu:" + tok for tok in M.WORD_BLEU_TOKENIZERS] + ["sari", "ter", "fkgl"]


def test_the_refused_metrics_are_every_word_metric():
    word_metrics = set(M.METRICS) - {"chrf", "stats"} - set(M.ROUGE_TYPES)  # chrF: characters; ROUGE: its own test
    assert {m.split(":")[0] for m in REFUSED} == word_metrics
    assert set(M.WORD_BLEU_TOKENIZERS) == {"13a", "intl", "none"}


def cli_args(metric, paths, report=False):
    """(fairseq-wean-score refuses --orig where no metric reads it; the report always shows the sources)"""
    name, _, tok = metric.partition(":")
    orig = ["--orig", paths["src"]] if report or name in ("sari", "stats") else []
    refs = ["--refs", paths["ref"]] if report or name != "fkgl" else []  # FKGL reads neither
    return ["--sys", paths["hyp"]] + orig + refs + ["--metrics", name] + (["--bleu-tokenize", tok] if tok else [])


@pytest.fixture
def paths(tmp_path):
    out = {}
    for name, lines in (("src", ZH_SRC), ("ref", ZH_REF), ("hyp", ZH_HYP)):
        (tmp_path / name).write_text("".join(l + "\n" for l in lines), encoding="utf-8")
        out[name] = str(tmp_path / name)
    out["out"] = str(tmp_path / "page.html")
    return out


def run_cli(module, argv):
    with pytest.raises(SystemExit) as exc:
        module.cli_main(argv)
    return exc.value.code


ENTRY_POINTS = ("fairseq-wean-score", "fairseq-wean-report", "scoring.score")


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("metric", REFUSED)
def test_word_metrics_on_unsegmented_chinese_are_refused(entry, metric, paths):
    if entry == "fairseq-wean-score":
        assert run_cli(score, cli_args(metric, paths)) == "fairseq-wean-score: error: " + expected(metric)
    elif entry == "fairseq-wean-report":
        code = run_cli(report, cli_args(metric, paths, report=True) + ["--out", paths["out"]])
        assert code == "fairseq-wean-report: error: " + expected(metric)
    else:
        name, _, tok = metric.partition(":")
        with pytest.raises(FairseqWeanError) as exc:
            score_library(ZH_HYP, sources=ZH_SRC, references=[ZH_REF], metrics=name,
                          **({"bleu_tokenize": tok} if tok else {}))
        assert str(exc.value) == expected(metric)


def test_every_sari_is_checked_where_it_is_computed():
    """sari.corpus_stats is what every SARI (scorer, report, fairseq-train --eval-sari) computes."""
    with pytest.raises(FairseqWeanError) as exc:
        sari_lib.corpus_stats(ZH_SRC, ZH_HYP, [ZH_REF])
    assert str(exc.value) == expected("sari")
    with pytest.raises(FairseqWeanError) as exc:
        M.bleu_sentence_stats(ZH_HYP, [ZH_REF], "bleu", "13a")
    assert str(exc.value) == expected("bleu:13a")
    with pytest.raises(FairseqWeanError) as exc:
        M.check_bleu_tokenize([ZH_REF], "13a", "--eval-bleu-tokenize")
    assert str(exc.value) == expected("bleu:13a", option="--eval-bleu-tokenize")


def split(lines):
    return [" ".join(M.character_tokens(l, lower=False)) for l in lines]


def test_what_fits_the_script_is_scored_with_sacrebleus_values(paths, capsys):
    # BLEU with sacrebleu's Chinese tokenization, chrF (characters): the raw text
    score.main(cli_args("bleu:zh", paths) + ["--json"])
    assert json.loads(capsys.readouterr().out)["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(ZH_HYP, [ZH_REF], tokenize="zh").score)
    assert score_library(ZH_HYP, references=[ZH_REF], metrics="chrf")["chrf"] == pytest.approx(
        sacrebleu.corpus_chrf(ZH_HYP, [ZH_REF]).score)
    # text segmented into characters (python -m preprocess.split_characters): every word metric runs
    out = score_library(split(ZH_HYP), sources=split(ZH_SRC), references=[split(ZH_REF)], metrics="bleu,sari,ter")
    assert out["bleu"] == pytest.approx(sacrebleu.corpus_bleu(split(ZH_HYP), [split(ZH_REF)]).score)
    assert out["ter"] == pytest.approx(sacrebleu.corpus_ter(split(ZH_HYP), [split(ZH_REF)]).score)
    assert out["sari"] == pytest.approx(sari_lib.corpus_sari(split(ZH_SRC), split(ZH_HYP), [split(ZH_REF)]))
    assert 0 < out["sari"] < 100
    # English text with a few Chinese words: scored
    mixed = ["the cat sat on the mat in 北京 .", "dogs bark ."]
    assert score_library(mixed, references=[mixed], metrics="bleu,fkgl")["bleu"] == pytest.approx(100.0)


def test_the_lcsts_recipe_options_still_score_chinese():
    """LCSTS is scored with ROUGE by character (and BLEU with --bleu-tokenize zh where asked)."""
    from fairseq_wean.scoring.scores import options_from_score_args

    opts = options_from_score_args(["--rouge-chars", "--bleu-tokenize", "zh"])
    out = score_library(ZH_HYP, references=[ZH_REF], metrics="rouge1,rougeL,bleu,chrf", **opts)
    assert 0 < out["rouge1"] < 100 and 0 < out["bleu"] < 100


@pytest.mark.parametrize("metric,flags", [("BLEU", ["--eval-bleu"]), ("SARI", ["--eval-sari"])])
def test_validation_refuses_word_metrics_on_unsegmented_text_before_training(tmp_path, metric, flags):
    """fairseq-train --task translation_with_metrics: validation's BLEU (sacrebleu 13a, or none with
    --eval-tokenized-bleu) and SARI count words too; refused before the first epoch."""
    import os

    from conftest import USER_DIR, cli, train_args

    chars = [chr(0x4E00 + 37 * i) for i in range(30)]
    for split, n in (("train", 40), ("valid", 6)):
        for side, shift in (("src", 0), ("tgt", 1)):
            lines = ["".join(chars[(i * 7 + k + shift) % 30] for k in range(8)) for i in range(n)]
            (tmp_path / "{}.{}".format(split, side)).write_text("\n".join(lines) + "\n", encoding="utf-8")
    cli("fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--trainpref", tmp_path / "train",
        "--validpref", tmp_path / "valid", "--destdir", tmp_path / "bin", "--joined-dictionary", "--workers", "1")
    proc = cli("fairseq-train", *train_args(tmp_path / "bin", tmp_path / "ck", "lstm", "--task",
                                            "translation_with_metrics", *flags, epochs=1), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "{} counts words".format(metric) in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]
    assert "| epoch 001" not in proc.stdout + proc.stderr  # before any training, not at the first validation
    assert not os.path.exists(tmp_path / "ck" / "checkpoint_last.pt")
