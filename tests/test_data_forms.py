"""Every data form researchers use, end to end: no silently wrong score.

For each form (words; subword-nmt BPE; sentencepiece; Chinese characters split by
``preprocess.split_characters``) a tiny model is trained and the test set is decoded with
``--score-reference`` (the hypotheses are the references): every tool must then give the top
score, scoring words (or characters), not pieces:

* ``fairseq-generate``'s own score line (``--scoring sacrebleu`` / ``--scoring rouge --rouge-chars``);
* ``fairseq-wean-score`` and ``fairseq-wean-report`` on the log (its D- lines when it was decoded
  with ``--bpe``, its H- lines after ``--post-process``), against the raw references (BLEU 100,
  ROUGE 100, SARI the references' own SARI);
* validation in ``fairseq-train --task translation_with_metrics`` (``--eval-bleu-args
  '{"score_reference": true}'``, ``--eval-bleu-remove-bpe``): BLEU (or ROUGE) 100;

and pieces on one side only (or on both) are refused in one line: H- lines that keep the pieces
against raw references, BPE'd references against words, validation on BPE'd data without
``--eval-bleu-remove-bpe``, and word ROUGE on Chinese without ``--eval-rouge-chars``.
"""
import json
import os
import random
import re

import pytest

from conftest import USER_DIR, cli, override, write_parallel
from fairseq_wean.scoring import score as library_score

TINY_LSTM = ["--arch", "lstm", "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
             "--decoder-embed-dim", "16", "--encoder-hidden-size", "16", "--decoder-hidden-size", "16",
             "--decoder-out-embed-dim", "16"]
CJK = [chr(0x4E00 + 37 * i) for i in range(40)]  # one Chinese character per word of conftest's data


def to_chinese(line, rng):
    """conftest's words as Chinese text without spaces, with a number now and then (a Latin/digit
    run the scorer counts as one token)."""
    out = []
    for word in line.split():
        out.append(CJK[int(word[1:])])
        if rng.random() < 0.1:
            out.append(rng.choice(["2014", "10", "365"]))  # seen in training: no <unk>
    return "".join(out)


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    d = tmp_path_factory.mktemp("forms-raw")
    write_parallel(str(d / "train"), 300, seed=1)
    write_parallel(str(d / "valid"), 21, seed=2)
    write_parallel(str(d / "test"), 13, seed=3)
    return d


def make_form(form, raw, d):
    """(text folder fairseq-preprocess reads, raw test references, generate options per way of
    decoding, the validation's post-processing)."""
    splits = ("train", "valid", "test")
    text = d / "text"
    text.mkdir()
    if form == "words":
        for s in splits:
            for side in ("src", "tgt"):
                write_lines(text / "{}.{}".format(s, side), read(raw / "{}.{}".format(s, side)))
        return text, read(raw / "test.tgt"), {"plain": []}, None
    if form == "subword_nmt":
        from subword_nmt.apply_bpe import BPE
        from subword_nmt.learn_bpe import learn_bpe

        codes = d / "codes"
        with open(codes, "w") as out:
            learn_bpe(read(raw / "train.src") + read(raw / "train.tgt"), out, 25, min_frequency=2)
        with open(codes) as f:
            bpe = BPE(f)
        for s in splits:
            for side in ("src", "tgt"):
                write_lines(text / "{}.{}".format(s, side),
                            [bpe.process_line(line) for line in read(raw / "{}.{}".format(s, side))])
        assert any("@@" in line for line in read(text / "test.tgt"))
        return text, read(raw / "test.tgt"), {
            "post-process": ["--post-process", "subword_nmt"],
            "bpe": ["--bpe", "subword_nmt", "--bpe-codes", codes],
        }, "subword_nmt"
    if form == "sentencepiece":
        import sentencepiece as spm

        spm.SentencePieceTrainer.train(input=str(raw / "train.tgt") + "," + str(raw / "train.src"),
                                       model_prefix=str(d / "spm"), vocab_size=40, model_type="bpe",
                                       character_coverage=1.0, minloglevel=2)
        sp = spm.SentencePieceProcessor(model_file=str(d / "spm.model"))
        for s in splits:
            for side in ("src", "tgt"):
                write_lines(text / "{}.{}".format(s, side),
                            [" ".join(sp.encode(line, out_type=str)) for line in read(raw / "{}.{}".format(s, side))])
        assert any("\u2581" in line for line in read(text / "test.tgt"))
        return text, read(raw / "test.tgt"), {
            "post-process": ["--post-process", "sentencepiece"],
            "bpe": ["--bpe", "sentencepiece", "--sentencepiece-model", d / "spm.model"],
        }, "sentencepiece"
    assert form == "characters"
    rng = random.Random(0)
    chinese = d / "chinese"
    chinese.mkdir()
    for s in splits:
        for side in ("src", "tgt"):
            write_lines(chinese / "{}.{}".format(s, side), [to_chinese(line, rng) for line in read(raw / "{}.{}".format(s, side))])
            cli("python", "-m", "preprocess.split_characters", "--input", chinese / "{}.{}".format(s, side),
                "--output", text / "{}.{}".format(s, side))
    return text, read(chinese / "test.tgt"), {"plain": []}, None


FORMS = ["words", "subword_nmt", "sentencepiece", "characters"]


@pytest.fixture(scope="module", params=FORMS)
def trained(request, raw, tmp_path_factory):
    """(form, raw test sources, raw references, decodings, post-processing, data-bin, checkpoint, train log)."""
    form = request.param
    d = tmp_path_factory.mktemp("form-" + form)
    text, refs, decodings, post_process = make_form(form, raw, d)
    data = d / "data-bin"
    cli("fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--trainpref", text / "train",
        "--validpref", text / "valid", "--testpref", text / "test", "--destdir", data, "--joined-dictionary",
        "--workers", "1")
    metric = ["--eval-rouge", "--eval-rouge-chars"] if form == "characters" else ["--eval-bleu"]
    post = ["--eval-bleu-remove-bpe", post_process] if post_process else []
    train = cli("fairseq-train", data, "--user-dir", USER_DIR, "--task", "translation_with_metrics", *TINY_LSTM,
                "--cpu", "--optimizer", "adam", "--lr", "0.005", "--max-tokens", "2000", "--max-epoch", "1",
                "--save-dir", d / "ck", "--seed", "1", "--log-format", "simple", "--num-workers", "0",
                "--no-epoch-checkpoints", *metric, *post, "--eval-bleu-args", json.dumps({"score_reference": True}))
    sources = d / "test.raw.src"  # the raw sources (SARI reads them): words for every form but characters
    write_lines(sources, read(raw / "test.src"))
    return form, sources, refs, decodings, post_process, data, d / "ck" / "checkpoint_last.pt", train.stdout + train.stderr


def generate(trained, decoding, *extra):
    form, _, _, decodings, _, data, checkpoint, _ = trained
    scoring = ["--scoring", "rouge", "--rouge-chars"] if form == "characters" else ["--scoring", "sacrebleu"]
    return cli("fairseq-generate", *override([data, "--user-dir", USER_DIR, "--path", checkpoint, "--gen-subset", "test",
                                              "--score-reference", "--batch-size", "4", "--required-batch-size-multiple",
                                              "1", *scoring], decodings[decoding], extra)).stdout


def test_validation_in_fairseq_train_scores_the_references_at_the_top(trained):
    form, *_, log = trained
    metric = "rougeL" if form == "characters" else "bleu"
    values = [float(v) for v in re.findall(r"\| valid on .*?\| {} ([0-9.]+)".format(metric), log)]
    assert values == [100.0], log[-2000:]


def decodings_of(form):
    return ["plain"] if form in ("words", "characters") else ["post-process", "bpe"]


def test_every_tool_gives_the_references_the_top_score(trained, tmp_path):
    form, _, refs, decodings, _, _, _, _ = trained
    ref_file = tmp_path / "test.ref"
    write_lines(ref_file, refs)
    metrics = "rouge1,rouge2,rougeL" if form == "characters" else "bleu,sari"
    options = ["--rouge-chars"] if form == "characters" else []
    expected = library_score(refs, sources=read(trained[1]),
                             references=[refs], metrics=["sari"]) if form != "characters" else None
    for decoding in decodings:
        log_text = generate(trained, decoding)
        summary = log_text.strip().splitlines()[-1]
        if form == "characters":
            assert "ROUGE-1/2/L F1 = 100.00/100.00/100.00" in summary, summary
        else:
            assert "BLEU = 100.00" in summary, summary
        log = tmp_path / "gen.{}.log".format(decoding)
        # the log as a system that decoded every reference exactly: without --score-reference's configuration
        # line (fairseq-wean-score refuses a log made with it: its H- lines are the references, no system's)
        log.write_text("".join(line for line in log_text.splitlines(True) if "score_reference': True" not in line),
                       encoding="utf-8")
        for refs_args in (["--refs", ref_file], []):  # the raw references; the log's own T- lines
            out = cli("fairseq-wean-score", "--sys", log, *refs_args, "--metrics", metrics, "--json", *options,
                      *(["--orig", trained[1]] if "sari" in metrics and refs_args else []))
            result = json.loads(out.stdout)
            for m in metrics.split(","):
                if m == "sari":
                    if refs_args:  # the raw sources given: the references' own SARI
                        assert result["sari"] == pytest.approx(expected["sari"], abs=1e-9)
                    continue
                assert result[m] == pytest.approx(100.0), (decoding, refs_args, m, result)
            page = tmp_path / "report.{}.html".format(decoding)
            report_metrics = "rouge1,rougeL" if form == "characters" else "bleu"
            cli("fairseq-wean-report", "--sys", log, *refs_args, "--metrics", report_metrics, "--out", page,
                *options, *(["--orig", trained[1]] if refs_args and form != "characters" else []))
            assert page.exists()


def test_pieces_on_one_side_are_refused_in_one_line(trained, tmp_path):
    form, _, refs, decodings, post_process, data, _, _ = trained
    if post_process is None:
        pytest.skip("no pieces in this form")
    text = data.parent / "text"
    ref_file = tmp_path / "test.ref"
    write_lines(ref_file, refs)
    log = tmp_path / "gen.log"
    log.write_text(generate(trained, "bpe"), encoding="utf-8")
    pieces_log = tmp_path / "gen.pieces.log"  # decoded with neither: H- and T- lines keep the pieces
    pieces_log.write_text(generate(trained, "post-process", "--post-process", "none"), encoding="utf-8")
    cases = [
        (["--sys", log, "--refs", ref_file, "--hyp-lines", "H"], "(H- lines) holds {} pieces".format(post_process)),
        (["--sys", pieces_log, "--refs", ref_file], "(H- lines) holds {} pieces".format(post_process)),
        (["--sys", log, "--refs", text / "test.tgt"], "--refs {} holds {} pieces".format(text / "test.tgt", post_process)),
        (["--sys", pieces_log], "holds {} pieces".format(post_process)),
    ]
    for args, message in cases:
        for tool, extra in (("fairseq-wean-score", ["--metrics", "bleu"]),
                            ("fairseq-wean-report", ["--metrics", "bleu", "--out", tmp_path / "r.html"])):
            proc = cli(tool, *args, *extra, check=False)
            assert proc.returncode == 1 and message in proc.stderr, (tool, args, proc.stderr)
            assert len(proc.stderr.strip().splitlines()) == 1 and "--post-process " + post_process in proc.stderr
        assert not (tmp_path / "r.html").exists()
    # the explicit option: fairseq's post-processing of every input, then the top score
    out = cli("fairseq-wean-score", "--sys", pieces_log, "--refs", text / "test.tgt", "--metrics", "bleu", "--json",
              "--post-process", post_process)
    assert json.loads(out.stdout)["bleu"] == pytest.approx(100.0)


def test_validation_refuses_pieces_and_word_rouge_on_chinese_before_training(trained, tmp_path):
    form, _, _, _, post_process, data, _, _ = trained
    if form in ("words",):
        pytest.skip("words: nothing to refuse")
    metric = ["--eval-rouge"] if form == "characters" else ["--eval-bleu"]
    proc = cli("fairseq-train", data, "--user-dir", USER_DIR, "--task", "translation_with_metrics", *TINY_LSTM,
               "--cpu", "--optimizer", "adam", "--lr", "0.005", "--max-tokens", "2000", "--max-epoch", "1",
               "--save-dir", tmp_path / "ck", "--num-workers", "0", *metric, check=False)
    expected = "--eval-rouge-chars" if form == "characters" else "--eval-bleu-remove-bpe " + post_process
    assert proc.returncode != 0 and expected in proc.stderr, proc.stderr[-3000:]
    assert "| epoch 001" not in proc.stdout + proc.stderr  # refused before any training
    assert not os.path.exists(tmp_path / "ck" / "checkpoint_last.pt")


def test_the_hub_reads_raw_text_of_a_subword_checkpoint(trained, tmp_path, caplog):
    """from_pretrained(...).translate(raw text): the dictionary is pieces and their model lies in the
    checkpoint's folder under the name fairseq's hub reads (bpecodes, sentencepiece.bpe.model), so
    raw text is encoded without <unk> and the output decoded to words; without the file, a warning
    names the arguments, and raw words are refused in one line."""
    import logging
    import shutil

    from fairseq_wean.hub import from_pretrained

    form, sources, _, decodings, post_process, data, checkpoint, _ = trained
    if post_process is None:
        pytest.skip("words and characters: no subword model")
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(checkpoint, folder / "checkpoint_last.pt")
    with caplog.at_level(logging.WARNING):
        bare = from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data))
    assert "pass bpe='{}'".format(post_process) in caplog.text
    from fairseq_wean.errors import FairseqWeanError

    with pytest.raises(FairseqWeanError, match=r"^hub input .* is in words, and the model's source dictionary is of "):
        bare.encode("w3700 w3400 w800 w2300")  # raw words to a model of pieces, without its BPE: input_form
    model_file = decodings["bpe"][-1]  # the codes / the sentencepiece model
    shutil.copy(model_file, folder / ("bpecodes" if form == "subword_nmt" else "sentencepiece.bpe.model"))
    hub = from_pretrained(str(folder), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(data))
    for line in read(sources):
        assert not hub.encode(line).eq(hub.src_dict.unk()).any(), line
        out = hub.translate(line, beam=2)
        assert "@@" not in out and "\u2581" not in out, out


def test_three_ways_of_scoring_characters_agree_to_the_digit(trained, tmp_path):
    """A real output (not the references): fairseq-generate --scoring rouge --rouge-chars, the
    scorer on the log's T- lines and on the raw unspaced references, and the report give the same
    ROUGE-1/2/L to the printed digit."""
    form, _, refs, _, _, data, checkpoint, _ = trained
    if form != "characters":
        pytest.skip("characters only")
    log_text = cli("fairseq-generate", data, "--user-dir", USER_DIR, "--path", checkpoint, "--gen-subset", "test",
                   "--beam", "2", "--max-len-a", "0", "--max-len-b", "12", "--batch-size", "4",
                   "--required-batch-size-multiple", "1", "--scoring", "rouge", "--rouge-chars").stdout
    generate_scores = [float(v) for v in re.search(r"ROUGE-1/2/L F1 = ([0-9.]+)/([0-9.]+)/([0-9.]+)",
                                                   log_text).groups()]
    assert generate_scores != [100.0, 100.0, 100.0]  # a real output
    log = tmp_path / "gen.log"
    log.write_text(log_text, encoding="utf-8")
    ref_file = tmp_path / "test.ref"
    write_lines(ref_file, refs)
    for refs_args in ([], ["--refs", ref_file]):
        result = json.loads(cli("fairseq-wean-score", "--sys", log, *refs_args, "--metrics", "rouge1,rouge2,rougeL",
                                "--rouge-chars", "--json").stdout)
        assert [round(result[m], 2) for m in ("rouge1", "rouge2", "rougeL")] == generate_scores, refs_args
    from fairseq_wean.cli import report as report_cli

    page = report_cli.main(["--sys", str(log), "--refs", str(ref_file), "--metrics", "rouge1,rouge2,rougeL",
                            "--rouge-chars", "--out", str(tmp_path / "r.html")])
    assert [round(page["corpus"][0]["values"][m], 2) for m in ("rouge1", "rouge2", "rougeL")] == generate_scores


def test_core_copys_alignment_table_on_pieces_and_characters(trained, tmp_path):
    """fairseq-wean-align-table on the BPE'd / sentencepiece / character training text, with the
    dictionary fairseq-preprocess wrote: a table of pieces (or characters) that core_copy reads."""
    form, _, _, _, _, data, _, _ = trained
    if form == "words":
        pytest.skip("words: tests/test_align_table.py")
    text = data.parent / "text"
    table = tmp_path / "align.table"
    cli("fairseq-wean-align-table", "--src", text / "train.src", "--tgt", text / "train.tgt",
        "--dict", data / "dict.src.txt", "--out", table)
    rows = [line.split("\t") for line in read(table)]
    assert rows and all(len(r) == 3 for r in rows)
    words = {r[0] for r in rows}
    if form == "subword_nmt":
        assert any(w.endswith("@@") for w in words)
    elif form == "sentencepiece":
        assert any(w.startswith("\u2581") for w in words)
    else:
        assert all(len(w) == 1 and not w.isascii() or w.isascii() and w.isalnum() for w in words)


def test_every_plugin_generation_option_works_in_fairseq_interactive_or_is_refused(trained):
    """The class of 'accepted and ignored' options: each generation option the plugin adds either
    declares why fairseq-interactive cannot use it (then it is refused there in one line before any
    work) or is used there. Today both are fairseq-generate's; a new option must decide."""
    from fairseq_wean import patching

    form, sources, _, _, _, data, checkpoint, _ = trained
    if form != "words":
        pytest.skip("one form is enough")
    options = patching.generation_arguments()
    assert {flags[0] for flags, _ in options} == {"--print-gates", "--replace-unk-source"}
    for flags, why in options:
        assert why, "{}: say why fairseq-interactive cannot use it, or test that it does".format(flags[0])
        value = [] if flags[0] == "--print-gates" else [sources]
        proc = cli("fairseq-interactive", data, "--user-dir", USER_DIR, "--path", checkpoint, flags[0], *value,
                   "--source-lang", "src", "--target-lang", "tgt", input=read(sources)[0] + "\n", check=False)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, (flags, proc.stderr[-1500:])
        last = proc.stderr.strip().splitlines()[-1]
        assert last == "fairseq-wean: error: {} is fairseq-generate's: {}".format(flags[0], why), last
        assert "H-" not in proc.stdout  # refused before any decoding
