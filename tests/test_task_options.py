"""``--task translation_with_metrics``: every option of the task's dataclass has a row in
``validation_options.OPTION_CONDITIONS`` (when it does something) and is refused, in one line when
fairseq parses the command, where its condition is false; and ``--eval-refs`` / ``--eval-orig`` /
``--eval-bleu-detok-args`` that contradict the validation subset are refused before training.

In-process and fast: fairseq's parser and the task's set-up and load_dataset on a module-scoped
tiny data-bin (no training).
"""
import json
import os
import sys
from dataclasses import fields

import pytest

from conftest import USER_DIR, preprocess

# per sentence its own words: a reference or source of another sentence shares none of them
VALID_SRC = ["the a{0} b{0} c{0} d{0} e{0} .".format(i) for i in range(8)]
VALID_TGT = ["a{0} c{0} e{0} .".format(i) for i in range(8)]
TEST_SRC = ["the f{0} g{0} h{0} j{0} .".format(i) for i in range(8)]
TEST_TGT = ["f{0} h{0} j{0} .".format(i) for i in range(8)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    raw = tmp_path_factory.mktemp("task-options-raw")
    texts = {"train": (VALID_SRC + TEST_SRC, VALID_TGT + TEST_TGT), "valid": (VALID_SRC, VALID_TGT),
             "test": (TEST_SRC, TEST_TGT)}
    for split, (src, tgt) in texts.items():
        (raw / (split + ".src")).write_text("\n".join(src) + "\n")
        (raw / (split + ".tgt")).write_text("\n".join(tgt) + "\n")
    (raw / "valid.ref1").write_text("".join(line.replace(" .", "") + "\n" for line in VALID_TGT))  # a 2nd reference
    (raw / "valid.rev.src").write_text("\n".join(reversed(VALID_SRC)) + "\n")
    (raw / "valid.rev.tgt").write_text("\n".join(reversed(VALID_TGT)) + "\n")
    (raw / "short.tgt").write_text("a\nb\n")
    os.symlink(raw / "valid.tgt", raw / "link.tgt")
    return raw, preprocess(raw, tmp_path_factory.mktemp("task-options-bin"))


def parse(data, argv, monkeypatch, command="fairseq-train"):
    import fairseq_wean  # noqa: F401  (the plugin, as --user-dir loads it)
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command])
    parser = options.get_training_parser() if command == "fairseq-train" else options.get_validation_parser()
    extra = ["--arch", "lstm", "--optimizer", "adam", "--lr", "0.1"] if command == "fairseq-train" else ["--path", "x.pt"]
    return options.parse_args_and_arch(parser, [str(data), "--user-dir", USER_DIR, "--task", "translation_with_metrics",
                                                "--max-tokens", "1000", *extra, *[str(a) for a in argv]])


def refusal(data, argv, monkeypatch, capsys, command="fairseq-train"):
    """fairseq's parser's one line for ``argv`` (argparse's error, exit status 2), or None if accepted."""
    try:
        parse(data, argv, monkeypatch, command)
    except SystemExit as exc:
        assert exc.code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        return lines[-1]
    return None


# per option with a condition: (a value other than its default, the options that make it act)
TRIES = {
    "eval_bleu": ([], []), "eval_sari": ([], []), "eval_rouge": ([], []),
    "valid_subset": (["test"], []), "best_checkpoint_metric": (["sari"], []),
    "eval_bleu_args": (['{"beam": 2}'], ["--eval-bleu"]), "eval_bleu_remove_bpe": (["subword_nmt"], ["--eval-sari"]),
    "eval_bleu_detok": (["moses"], ["--eval-rouge"]), "eval_bleu_detok_args": (['{"source_lang": "en"}'], ["--eval-bleu", "--eval-bleu-detok", "moses"]),
    "eval_bleu_print_samples": ([], ["--eval-bleu"]), "eval_refs": (["r.txt"], ["--eval-rouge"]),
    "eval_tokenized_bleu": ([], ["--eval-bleu"]), "eval_sari_mode": (["legacy"], ["--eval-sari"]),
    "eval_rouge_chars": ([], ["--eval-rouge"]), "eval_orig": (["o.txt"], ["--eval-sari"]),
}
FAIRSEQ_TRIES = {"patience": ["3"], "maximize_best_checkpoint_metric": [], "validate_interval": ["2"],
                 "validate_interval_updates": ["5"], "validate_after_updates": ["5"], "best_checkpoint_metric": ["sari"]}


def test_every_option_of_the_task_has_a_condition_and_is_refused_where_it_does_nothing(tiny, monkeypatch, capsys):
    from fairseq_wean.tasks.translation_with_metrics import TranslationWithMetricsConfig
    from fairseq_wean.tasks.validation_options import FAIRSEQ_VALIDATION_OPTIONS, OPTION_CONDITIONS

    names = {f.name for f in fields(TranslationWithMetricsConfig)} - {"_name"}
    assert names == set(OPTION_CONDITIONS), names ^ set(OPTION_CONDITIONS)  # a new option must get a row
    conditional = {n for n, row in OPTION_CONDITIONS.items() if row is not None}
    assert conditional == set(TRIES), conditional ^ set(TRIES)
    assert set(FAIRSEQ_TRIES) == set(FAIRSEQ_VALIDATION_OPTIONS)
    data = tiny[1]
    failures = []
    for name, (value, enable) in TRIES.items():
        flag = ["--" + name.replace("_", "-"), *value]
        cases = [(flag + enable, True), (flag + enable + ["--disable-validation"], False)]
        if enable:
            cases.append((flag, False))  # without the option that makes it act
        for argv, acts in cases:
            line = refusal(data, argv, monkeypatch, capsys)
            want = None if acts else "does nothing here"
            if (line is None) != acts or (not acts and want not in line):
                failures.append("{}: {}".format(" ".join(argv), line or "accepted"))
    for name, value in FAIRSEQ_TRIES.items():  # fairseq's, with --disable-validation (any task)
        argv = ["--" + name.replace("_", "-"), *value]
        if refusal(data, argv + ["--eval-sari"], monkeypatch, capsys) is not None:
            failures.append(" ".join(argv) + ": refused with validation")
        line = refusal(data, argv + ["--disable-validation"], monkeypatch, capsys)
        if line is None or "--disable-validation turns off" not in line:
            failures.append(" ".join(argv) + " --disable-validation: " + (line or "accepted"))
    # fairseq-validate always validates: --disable-validation does not turn its metrics off
    assert refusal(data, ["--eval-sari", "--eval-sari-mode", "legacy", "--disable-validation"], monkeypatch, capsys,
                   command="fairseq-validate") is None
    assert not failures, "\n".join(failures)


def task_for(data, argv, monkeypatch):
    """The task fairseq-train sets up for ``argv``, its validation subset loaded (refusals raise)."""
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    cfg = convert_namespace_to_omegaconf(parse(data, argv, monkeypatch))
    task = tasks.setup_task(cfg.task)
    task.load_dataset("valid", combine=False, epoch=1)
    return task


@pytest.mark.parametrize("argv,message", [
    (["--eval-sari", "--eval-refs", "{raw}/valid.tgt,,{raw}/valid.ref1"], "item 2 is empty"),
    (["--eval-sari", "--eval-refs", "{raw}/valid.tgt,"], "item 2 is empty"),
    (["--eval-rouge", "--eval-refs", "{raw}/valid.tgt,{raw}/valid.tgt"], "valid.tgt twice: give each file once"),
    (["--eval-rouge", "--eval-refs", "{raw}/valid.tgt,{raw}/link.tgt"], "names one file twice"),
    (["--eval-rouge", "--eval-refs", "{raw}/short.tgt"], "short.tgt has 2 lines but the validation subset 'valid' has 8"),
    # sources of another order, of another set
    (["--eval-sari", "--eval-orig", "{raw}/valid.rev.src"], "valid.rev.src line 1 'the a7 b7 c7 d7 e7 .' is not "
                                                            "source sentence 1"),
    (["--eval-sari", "--eval-orig", "{raw}/test.src"], "test.src line 1 'the f0 g0 h0 j0 .' is not source sentence 1"),
    # references of another order, of another set (the same line count)
    (["--eval-rouge", "--eval-refs", "{raw}/valid.rev.tgt"], "valid.rev.tgt does not fit the validation subset 'valid': "
                                                             "8 of its 8 lines"),
    (["--eval-bleu", "--eval-refs", "{raw}/valid.tgt,{raw}/test.tgt"], "test.tgt does not fit the validation subset"),
    # the detokenizer's options are checked when the command is parsed: tests/test_eval_bleu_any_task.py
])
def test_eval_inputs_that_contradict_the_validation_subset_are_refused(tiny, monkeypatch, argv, message):
    from fairseq_wean.errors import FairseqWeanError

    raw, data = tiny
    with pytest.raises(FairseqWeanError) as info:
        task_for(data, [a.replace("{raw}", str(raw)) for a in argv], monkeypatch)
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_matching_eval_inputs_are_taken(tiny, monkeypatch):
    raw, data = tiny
    task = task_for(data, ["--eval-sari", "--eval-orig", raw / "valid.src", "--eval-refs",
                           "{0}/valid.tgt,{0}/valid.ref1".format(raw), "--eval-bleu-detok", "moses",
                           "--eval-bleu-detok-args", json.dumps({"source_lang": "en", "moses_no_escape": True})],
                    monkeypatch)
    assert task.eval_orig == VALID_SRC and task.eval_refs[0] == VALID_TGT


def test_words_the_dictionaries_do_not_know_are_not_compared():
    """A reference's words the data wrote as <unk> cannot be shared with the binarized line: only known
    words count (a tiny dictionary made TurkCorpus's free rewrites look like another set's lines)."""
    from fairseq.data import Dictionary

    from fairseq_wean.tasks.validation_files import known_units, reference_agrees

    d = Dictionary()
    for w in "his travels from large of and".split():
        d.add_symbol(w)
    ref = "his travel writings and his extensive diaries and correspondence"
    target = "his <unk> from his travels , large <unk> of <unk>"
    assert not reference_agrees(ref, target, target)  # every word counted: 2 of 7 shared
    assert reference_agrees(ref, target, target, known_units(d))  # known: his, and
    assert not reference_agrees("travels of large", "his <unk>", "his <unk>", known_units(d))


def test_a_rule_fits_binarized_data_through_its_dictionary():
    """Validation pieces a small dictionary wrote as <unk> hide the marks; the dictionary's own pieces
    show them (pieces.with_vocabulary), and a rule the dictionary has no mark for is still refused."""
    from fairseq.data import Dictionary

    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.scoring.pieces import FAIRSEQ_RULES, check_post_process, with_vocabulary

    bpe, words = Dictionary(), Dictionary()
    for w in "the c@@ at sat".split():
        bpe.add_symbol(w)
    for w in "the cat sat".split():
        words.add_symbol(w)
    unks = ["the <unk> <unk> sat"]
    check_post_process([("valid", with_vocabulary(unks, bpe), None)], "subword_nmt", "--eval-bleu-remove-bpe",
                       FAIRSEQ_RULES)
    with pytest.raises(FairseqWeanError, match="removes '@@', and no input holds it"):
        check_post_process([("valid", with_vocabulary(unks, words), None)], "subword_nmt", "--eval-bleu-remove-bpe",
                           FAIRSEQ_RULES)
