"""One text spelt in two ways must not score as different words, and a tokenizer that loses a script's
letters must not score it:

* Unicode normalization forms: text in NFD (a letter and its combining marks) scored against the same
  text in NFC (one precomposed character) got BLEU 75.5. Inputs in two forms (or one input mixing them)
  are refused by one rule (``scoring.inputs.check_normalization``), at every entry point that scores
  and for every metric; inputs each in one form score as sacrebleu scores them.
* ROUGE by words (rouge-score's tokenizer keeps a-z and 0-9 only): Vietnamese whose every word's
  diacritics differ got ROUGE-1 83; more than ``metrics.ROUGE_DAMAGED_WORDS`` of the words losing
  letters is refused everywhere ROUGE is computed, German and French at their ordinary rates score.
* Character units keep a character with its combining marks (a grapheme cluster), in the scorer and in
  ``preprocess.split_characters``.
"""
import os
import unicodedata

import pytest

from conftest import USER_DIR, shared_data_dir
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import inputs
from fairseq_wean.scoring import metrics as M

NFC = ["the café serves crème brûlée today", "a naïve señor reads über alles", "the cat sat on the mat"]
NFD = [unicodedata.normalize("NFD", line) for line in NFC]
SOURCES = ["the café has crème brûlée today", "a naïve señor reads it all", "a cat sat on a mat"]


def _sources(refs):
    """The sources in the references' form (a test of two forms has them in the system output only)."""
    form = "NFC" if all(unicodedata.is_normalized("NFC", line) for line in refs) else "NFD"
    return [unicodedata.normalize(form, line) for line in SOURCES]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def score_cli(tmp_path, hyps, refs, metric):
    from fairseq_wean.cli import score

    from fairseq_wean.scoring.scores import NEEDS_SOURCES

    orig = ["--orig", _write(tmp_path / "orig", _sources(refs))] if metric in NEEDS_SOURCES else []
    if metric == "fkgl":  # reads the output alone: the two forms in it
        return score.main(["--sys", _write(tmp_path / "sys", hyps[:1] + refs[1:]), "--metrics", metric, "--json"])[
            metric] if hyps[1:] != refs[1:] else score.main(["--sys", _write(tmp_path / "sys", hyps), "--metrics",
                                                             metric, "--json"])[metric]
    return score.main(["--sys", _write(tmp_path / "sys", hyps), "--refs", _write(tmp_path / "ref", refs),
                       "--metrics", metric, "--json"] + orig)[metric]


def report_cli(tmp_path, hyps, refs, metric):
    from fairseq_wean.cli import report

    page = tmp_path / "r.html"
    if page.exists():
        page.unlink()
    try:
        report.main(["--sys", _write(tmp_path / "sys", hyps), "--refs", _write(tmp_path / "ref", refs),
                     "--orig", _write(tmp_path / "orig", _sources(refs)), "--metrics", metric, "--out", str(page)])
    except FairseqWeanError:
        assert not page.exists()
        raise
    assert page.exists()


def compare_score(tmp_path, hyps, refs, metric):
    """fairseq-wean-compare's scoring of a system's output on a recipe's test (the library, from files)."""
    from fairseq_wean.compare.report import score

    _write(tmp_path / "orig", _sources(refs))
    _write(tmp_path / "ref", refs)
    spec = {"orig": "orig", "refs": ["ref"], "metrics": metric}
    return score(_write(tmp_path / "sys", hyps), spec, str(tmp_path))[metric]


def library_score(tmp_path, hyps, refs, metric):
    from fairseq_wean.scoring import score

    return score(hyps, sources=_sources(refs), references=[refs], metrics=metric)[metric]


ENTRY_POINTS = [score_cli, report_cli, compare_score, library_score]
NORMALIZATION_CASES = {"system NFD, references NFC": (NFD, NFC, "is in Unicode NFD"),
                       "system NFC, references NFD": (NFC, NFD, "is in Unicode NFD"),
                       "references mixing the forms": (NFC, NFC[:2] + NFD[2:], None)}


@pytest.mark.parametrize("case", NORMALIZATION_CASES)
@pytest.mark.parametrize("metric", M.METRICS)
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_two_normalization_forms_are_refused_by_every_metric_at_every_entry(entry, metric, case, tmp_path):
    hyps, refs, _ = NORMALIZATION_CASES[case]
    if case == "references mixing the forms":  # 'über' is in line 2 (NFC) and the NFD line 3 has no accent
        refs = NFC[:1] + NFD[1:2] + NFC[2:]
    with pytest.raises(FairseqWeanError) as e:
        entry(tmp_path, hyps, refs, metric)
    message = str(e.value)
    assert "NFD (decomposed letters, e.g. " in message and "NFC (composed, e.g. " in message, message
    assert "normalize every input to NFC" in message and "\n" not in message, message


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_one_form_scores_as_sacrebleu_does(entry, tmp_path):
    """Each form alone is scored, unchanged (no normalization: sacrebleu's numbers on the files as given)."""
    import sacrebleu

    for hyps in (NFC, NFD):
        refs = list(reversed(hyps))
        value = entry(tmp_path, hyps, refs, "chrf")
        if value is not None:
            assert value == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
        assert entry(tmp_path, hyps, hyps, "bleu") in (None, pytest.approx(100.0))


def test_the_message_names_the_files_and_the_code_points(tmp_path):
    with pytest.raises(FairseqWeanError) as e:
        score_cli(tmp_path, NFD, NFC, "bleu")
    assert str(e.value) == (
        "{} is in Unicode NFD (decomposed letters, e.g. 'café' with U+0301) and --refs {} in NFC (composed, e.g. "
        "'café' with U+00E9): the same text spelt in two forms scores as different words and characters (sacrebleu "
        "does not normalize); {}".format(tmp_path / "sys", tmp_path / "ref", inputs.NFC_FIX)).replace(
        "'café' with U+0301", "{!r} with U+0301".format(NFD[0].split()[1]))


@pytest.mark.parametrize("lines,forms", [
    (NFC, (None, "café")), (NFD, (NFD[0].split()[1], None)), (["plain ascii"], (None, None)),
    (["ohm \u2126 and \uf900"], (None, None)),  # singletons: both forms replace them, neither spells them longer
    (["\u1100\u1161"], ("\u1100\u1161", None)), (["\uac00"], (None, "\uac00")),  # Hangul jamo / syllable
])
def test_normalization_forms(lines, forms):
    assert inputs.normalization_forms(lines) == forms


def test_rouge_scorer_of_fairseq_generate_refuses_two_forms(tmp_path):
    with pytest.raises(FairseqWeanError, match="Unicode NFD"):
        generate_scorer(tmp_path, NFD, NFC, "rouge1")


# --------------------------------------------------------------------------------------------- ROUGE's lost letters
VI_REF = ["tôi thích mưa và bàn này", "anh ấy đến đây hôm qua", "chúng tôi đi học mỗi ngày"]
VI_SYS = ["tôi thích mua và bán nay", "anh ây đen đay hom qua", "chung toi đi hoc môi ngay"]


def generate_scorer(tmp_path, hyps, refs, metric):
    """fairseq-generate --scoring rouge: the scorer fairseq builds from the command line."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.scoring import build_scorer

    args = options.parse_args_and_arch(options.get_generation_parser(), [
        str(tmp_path), "--user-dir", USER_DIR, "--path", "x.pt", "--scoring", "rouge"])
    scorer = build_scorer(convert_namespace_to_omegaconf(args).scoring, None)
    for ref, hyp in zip(refs, hyps):
        scorer.add_string(ref, hyp)
    return scorer.scores()[metric]


def library_sentence_scores(tmp_path, hyps, refs, metric):
    from fairseq_wean.scoring import sentence_scores

    if metric == "rougeL":
        return sentence_scores(hyps, references=[refs], metric="rougeL")[0]["rougeL"]
    return M.rouge_sentence_scores(hyps, [refs], (metric,))[metric][0]


def _validation_task(tmp_path, targets, refs, **metrics):
    """translation_with_metrics with ``targets`` as its validation subset's targets (their words its target
    dictionary) and ``refs`` as --eval-refs; ``metrics``: the cfg's eval_* switches."""
    from types import SimpleNamespace

    from fairseq.data import Dictionary

    from fairseq_wean.tasks.translation_with_metrics import TranslationWithMetricsTask

    task = object.__new__(TranslationWithMetricsTask)
    task.tgt_dict = Dictionary()
    encoded = [task.tgt_dict.encode_line(line, add_if_not_exist=True) for line in targets]
    task.datasets = {"valid": type("Valid", (), {"tgt": encoded, "__len__": lambda self: len(encoded)})()}
    task.eval_refs, task.eval_orig = [refs], None
    task.cfg = SimpleNamespace(eval_bleu_remove_bpe=None, eval_refs=_write(tmp_path / "ref", refs), eval_orig=None,
                               eval_rouge_chars=False, **{"eval_rouge": False, "eval_bleu": False, "eval_sari": False,
                                                          **metrics})
    return task


def validation(tmp_path, hyps, refs, metric):
    """translation_with_metrics --eval-rouge before training, --eval-refs as the references."""
    _validation_task(tmp_path, hyps, refs, eval_rouge=True)._check_validation_text("valid")


ROUGE_ENTRY_POINTS = ENTRY_POINTS + [generate_scorer, library_sentence_scores, validation]


@pytest.mark.parametrize("metric", M.ROUGE_TYPES)
@pytest.mark.parametrize("entry", ROUGE_ENTRY_POINTS, ids=lambda f: f.__name__)
def test_rouge_by_words_refuses_text_whose_letters_it_loses(entry, metric, tmp_path):
    with pytest.raises(FairseqWeanError, match=r"ROUGE by words loses letters of \d+\.\d% of the (reference|output)s' "
                                               r"words .*over 40% is refused.*score with chrF or BLEU"):
        entry(tmp_path, VI_SYS, VI_REF, metric)


def test_rouge_counts_the_lost_letters_of_each_side():
    assert M.ROUGE_DAMAGED_WORDS == 0.4 and M.ROUGE_DROPPED_WORDS == 0.05
    with pytest.raises(FairseqWeanError, match=r"^ROUGE by words loses letters of 100\.0% of the outputs' words "
                                               r"\(3 of 3, e.g. 'mưa'"):
        M.rouge_sentence_scores(["mưa bàn đi"], [["the cat sat"]], ("rouge1",))
    # a combining mark is lost too (text in NFD): 2 of 4 words
    M.check_rouge_words(["Männer über a b c d"], "reference")
    with pytest.raises(FairseqWeanError, match=r"loses letters of 50\.0%"):
        M.check_rouge_words([unicodedata.normalize("NFD", "Männer über a b")], "reference")


FRENCH = ["Le gouvernement a annoncé une série de mesures destinées à soutenir les entreprises.",
          "Il a été très difficile de trouver un hôtel près de la gare pendant les fêtes."]


def test_german_and_french_at_their_ordinary_rates_score():
    path = shared_data_dir("translation", "multi30k_deen", "raw", "test_2016_flickr.de")
    german = open(path, encoding="utf-8").read().splitlines() if os.path.exists(path) else NFC
    for refs in (german, FRENCH):
        hyps = refs[1:] + refs[:1]
        got = M.rouge_sentence_scores(hyps, [refs], ("rouge1",))["rouge1"]
        assert len(got) == len(refs) and 0 < got.mean() < 100


# --------------------------------------------------------------------------------------------- grapheme clusters
@pytest.mark.parametrize("text,tokens", [
    ("Männer", ["m", "ä", "nner"]), ("Nähe 2014", ["n", "ä", "he2014"]),
    ("ét\u0301e", ["é", "t\u0301", "e"]), ("👍🏽ok", ["👍🏽", "ok"]), ("雅虎", ["雅", "虎"]),
])
def test_character_units_are_grapheme_clusters(text, tokens):
    assert M.character_tokens(text) == tokens
    decomposed = unicodedata.normalize("NFD", text)
    assert M.character_tokens(decomposed) == [unicodedata.normalize("NFD", t) for t in tokens]
    assert not any(unicodedata.combining(t[0]) for t in M.character_tokens(decomposed))


def test_split_characters_keeps_marks_with_their_letter(tmp_path, monkeypatch):
    from preprocess import split_characters as sc

    line = unicodedata.normalize("NFD", "雅虎Männer über Nähe 年")
    assert sc.split_characters(line) == unicodedata.normalize("NFD", "雅 虎 M ä nner ü berN ä he 年")
    # a line cut in parts (memory) is cut between clusters, never between a letter and its marks
    monkeypatch.setattr(sc, "LONG", 2)
    text = "雅" + "e" + "\u0301" * 5 + "虎" + "a\u0308" * 3
    whole = " ".join(M.character_tokens(text, lower=False))
    assert sc.split_characters(text) == whole == "雅 e{} 虎 a\u0308 a\u0308 a\u0308".format("\u0301" * 5)
    src = _write(tmp_path / "in.txt", [line])
    assert sc.main(["--input", src, "--output", str(tmp_path / "out.txt")]) == 0
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == sc.split_characters(line) + "\n"


def test_character_rouge_counts_a_letter_and_its_marks_once():
    """'e' + U+0301 is one unit, which 'e' does not match: 4 of 5 units on each side (it was 5 of 6 against 4 of 5,
    the mark a unit of its own)."""
    refs = ["我们喜欢e\u0301"]
    assert M.character_tokens(refs[0]) == ["我", "们", "喜", "欢", "e\u0301"]
    got = M.rouge_sentence_scores(["我们喜欢e"], [refs], ("rouge1",), chars=True)["rouge1"][0]
    assert got == pytest.approx(80.0)


def test_validation_refuses_eval_refs_in_another_form_than_the_dictionary(tmp_path):
    """fairseq-train --eval-refs in NFD, the data (what the model writes: the target dictionary) in NFC."""
    task = _validation_task(tmp_path, NFC, NFD, eval_bleu=True)
    with pytest.raises(FairseqWeanError, match=r"^--eval-refs \S+ is in Unicode NFD .* and the target dictionary"):
        task._check_validation_text("valid")


@pytest.mark.parametrize("case", ["one file mixing both", "train NFC, valid NFD"])
def test_fairseq_preprocess_refuses_a_language_in_two_forms(case, tmp_path):
    """fairseq-preprocess with the plugin: one language's raw files in two forms would make each such word two
    dictionary entries; refused in one line before anything is written (one form alone is binarized)."""
    import subprocess
    import sys

    if case == "one file mixing both":
        _write(tmp_path / "train.de", NFC[:1] + NFD[1:2] + NFC[2:]), _write(tmp_path / "valid.de", NFC)
    else:
        _write(tmp_path / "train.de", NFC), _write(tmp_path / "valid.de", NFD)
    for split in ("train", "valid"):
        _write(tmp_path / (split + ".en"), SOURCES)
    command = [os.path.join(os.path.dirname(sys.executable), "fairseq-preprocess"), "--user-dir", USER_DIR, "-s", "de",
               "-t", "en", "--trainpref", str(tmp_path / "train"), "--validpref", str(tmp_path / "valid"),
               "--destdir", str(tmp_path / "bin")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("fairseq-wean: error: ") and "NFD" in proc.stderr
    assert not (tmp_path / "bin").exists() or not any(n.endswith((".bin", ".idx", ".txt")) for n in os.listdir(
        tmp_path / "bin"))
    _write(tmp_path / "valid.de", NFC), _write(tmp_path / "train.de", NFC)
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
