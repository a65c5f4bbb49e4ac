"""Every fairseq --post-process rule is checked against the data it is applied to, and every unprocessed
piece form it would undo is recognised (refused without --post-process), with WordPiece's '##' form, which
no rule undoes; at every entry point that post-processes: fairseq-wean-score, fairseq-wean-report and
validation's --eval-bleu-remove-bpe in translation_with_metrics (before training)."""
import pytest
from fairseq.data.data_utils import post_process as fairseq_post_process

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import inputs, pieces

WORDS = ["the cat sat", "a dog ran"]
# each rule of fairseq's post_process (and this plugin's characters) -> the two lines in its form
FORMS = {
    "subword_nmt": ["the c@@ at sat", "a d@@ og ran"], "@@ ": ["the c@@ at sat", "a d@@ og ran"],
    "@@": ["the c@@at sat", "a d@@og ran"], "sentencepiece": ["\u2581the \u2581c at \u2581sat", "\u2581a \u2581dog \u2581ran"],
    "characters": ["\u2581t h e \u2581c a t \u2581s a t", "\u2581a \u2581d o g \u2581r a n"],
    "wordpiece": ["_the _c at _sat", "_a _dog _ran"], "letter": ["t h e | c a t | s a t", "a | d o g | r a n"],
    "_EOW": ["the_EOW c at_EOW sat_EOW", "a_EOW dog_EOW ran_EOW"], "silence": ["<SIL> the cat sat", "a dog <SIL> ran"],
}


def test_forms_cover_fairseq_rules():
    assert set(FORMS) | {"none"} == set(pieces.POST_PROCESS)
    for symbol, lines in FORMS.items():
        if symbol != "characters":  # the plugin's name; fairseq's Characters.decode is sentencepiece's rule
            assert [fairseq_post_process(l, symbol) for l in lines] == WORDS, symbol


def words_only(sys_lines, ref_lines, symbol):
    return inputs.words_only([("sys.txt", sys_lines, None)], None, None, [ref_lines], ["ref.txt"], symbol)


@pytest.mark.parametrize("symbol", sorted(FORMS))
def test_rule_on_its_form_gives_words(symbol):
    assert words_only(FORMS[symbol], FORMS[symbol], symbol) == ([WORDS], None, [WORDS])


@pytest.mark.parametrize("symbol", sorted(FORMS))
def test_rule_on_plain_words_is_refused(symbol):
    with pytest.raises(FairseqWeanError) as e:
        words_only(WORDS, WORDS, symbol)
    assert str(e.value).startswith("--post-process {} ".format(symbol)), str(e.value)
    if symbol in pieces.GLUING:  # one input in the form, the other in words: still glued
        with pytest.raises(FairseqWeanError, match=r"^--post-process .* and --refs ref.txt has no"):
            words_only(FORMS[symbol], WORDS, symbol)


@pytest.mark.parametrize("symbol", ["subword_nmt", "sentencepiece", "letter", "_EOW"])
def test_unprocessed_form_is_refused(symbol):
    with pytest.raises(FairseqWeanError, match=r"^sys.txt holds \S+ pieces"):
        words_only(FORMS[symbol], WORDS, None)


# ------------------------------------------------------------------ every form x every entry point
# WordPiece's '##' continuations (BERT; fairseq's --bpe bert decodes them): no fairseq rule removes them
CONTINUATIONS = ["the c ##at sat", "a d ##og ran"]
# forms whose unprocessed text is ordinary text too: '@@' glued inside a token (an e-mail@@host)
UNRECOGNISABLE = {"@@"}
ENTRY_POINTS = ["fairseq-wean-score", "fairseq-wean-report", "--eval-bleu-remove-bpe"]


def validation_task(lines, symbol):
    """translation_with_metrics as it stands before training with ``lines`` as the valid targets and
    ``--eval-bleu-remove-bpe symbol``: its check of what validation scores (the refusal, or None)."""
    from types import SimpleNamespace

    from fairseq.data import Dictionary

    from fairseq_wean.tasks.translation_with_metrics import TranslationWithMetricsTask

    task = object.__new__(TranslationWithMetricsTask)
    task.tgt_dict = Dictionary()
    targets = [task.tgt_dict.encode_line(line, add_if_not_exist=True) for line in lines]
    task.datasets = {"valid": type("Valid", (), {"tgt": targets, "__len__": lambda self: len(targets)})()}
    task.eval_refs, task.eval_orig = None, None
    task.cfg = SimpleNamespace(eval_bleu_remove_bpe=symbol, eval_refs=None, eval_rouge=False, eval_rouge_chars=False,
                               eval_bleu=True, eval_sari=False)
    try:
        task._check_validation_text("valid")
    except FairseqWeanError as exc:
        return str(exc)
    return None


def entry_point(entry, lines, symbol, tmp_path):
    """(refusal line or None) of ``entry`` scoring ``lines`` against themselves with ``symbol``."""
    from conftest import cli

    if entry == "--eval-bleu-remove-bpe":
        return validation_task(lines, symbol)
    sys_file, ref_file = tmp_path / "sys.txt", tmp_path / "ref.txt"
    for path in (sys_file, ref_file):
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    page = tmp_path / "page.html"
    if page.exists():
        page.unlink()
    extra = ["--out", page, "--orig", sys_file] if entry == "fairseq-wean-report" else []
    proc = cli(entry, "--sys", sys_file, "--refs", ref_file, "--metrics", "bleu", *extra,
               *(["--post-process", symbol] if symbol else []), check=False)
    if proc.returncode == 0:
        return None
    assert len(proc.stderr.strip().splitlines()) == 1 and not page.exists(), proc.stderr
    return proc.stderr.strip()


ALL_FORMS = sorted(FORMS) + ["##"]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("form", ALL_FORMS)
def test_every_form_at_every_entry_point(entry, form, tmp_path):
    """The one rule (pieces.check_post_process, check_no_pieces) at every tool that post-processes: a form
    scored with its rule gives words, scored as it is is refused (but '@@' glued, which ordinary text holds too),
    words under its rule are refused; '##' is refused as it is and under fairseq's wordpiece rule."""
    if entry == "--eval-bleu-remove-bpe" and form == "characters":
        assert validation_task(FORMS["characters"], "characters").startswith(
            "unknown --eval-bleu-remove-bpe 'characters'")  # the plugin's name, not fairseq's: validation fails
        return
    lines = CONTINUATIONS if form == "##" else FORMS[form]
    if form == "##":
        unprocessed = entry_point(entry, lines, None, tmp_path)
        assert unprocessed is not None and "holds WordPiece '##' continuations ('the c ##at sat')" in unprocessed
        wordpiece = entry_point(entry, lines, "wordpiece", tmp_path)
        assert wordpiece is not None and "--post-process wordpiece".replace(
            "--post-process", "--eval-bleu-remove-bpe" if entry.startswith("--eval") else "--post-process") \
            in wordpiece, wordpiece
        return
    assert entry_point(entry, lines, form, tmp_path) is None
    unprocessed = entry_point(entry, lines, None, tmp_path)
    if form in UNRECOGNISABLE:
        assert unprocessed is None
    else:
        assert unprocessed is not None and " pieces (" in unprocessed, unprocessed
    on_words = entry_point(entry, WORDS, form, tmp_path)
    option = "--eval-bleu-remove-bpe" if entry.startswith("--eval") else "--post-process"
    assert on_words is not None and "{} {} ".format(option, form) in on_words, on_words


@pytest.mark.parametrize("symbol", ["##", "@", "bpe", "sentencepiece "])
def test_a_symbol_fairseq_has_no_rule_for_is_refused(symbol, tmp_path):
    """fairseq's post_process raises NotImplementedError on any other symbol (after training, in validation):
    refused before; the scorer's and the report's --post-process take only the rules' names."""
    message = validation_task(FORMS["subword_nmt"], symbol)
    assert message.startswith("unknown --eval-bleu-remove-bpe {!r}: fairseq's post-processing knows ".format(symbol))
    for entry in ENTRY_POINTS[:2]:
        from conftest import cli

        (tmp_path / "s.txt").write_text("a b\n")
        proc = cli(entry, "--sys", tmp_path / "s.txt", "--refs", tmp_path / "s.txt", "--metrics", "bleu",
                   "--post-process", symbol, *(["--out", tmp_path / "p.html", "--orig", tmp_path / "s.txt"]
                                               if "report" in entry else []),
                   check=False)
        assert proc.returncode == 2 and "invalid choice" in proc.stderr, proc.stderr


# sentencepiece's byte-fallback pieces: a model trained with byte_fallback writes characters outside its vocabulary as
# their UTF-8 bytes ('12' -> <0x31> <0x32>); fairseq's string-level --post-process sentencepiece leaves them, only
# sentencepiece's decoder (fairseq-generate --bpe sentencepiece: the D- lines) turns them back into text
BYTE_PIECES = ["\u2581A \u2581man \u2581with \u2581 <0x31> <0x32> \u2581dogs", "\u2581a \u2581dog \u2581ran"]
BYTES_LEFT = [pieces.post_process(line, "sentencepiece") for line in BYTE_PIECES]  # 'A man with <0x31><0x32> dogs'


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("lines,symbol", [(BYTE_PIECES, "sentencepiece"), (BYTE_PIECES, None), (BYTES_LEFT, None)],
                         ids=["pieces under sentencepiece", "pieces", "after fairseq's post-processing"])
def test_byte_fallback_pieces_are_refused_at_every_entry_point(entry, lines, symbol, tmp_path):
    assert BYTES_LEFT[0] == "A man with <0x31><0x32> dogs"
    message = entry_point(entry, lines, symbol, tmp_path)
    assert message is not None and "holds sentencepiece byte-fallback pieces" in message, message
    assert "decoded by sentencepiece" in message, message


@pytest.mark.parametrize("line", ["<0x31>", "x <0xE2><0x82><0xAC> y", "\u2581a <0x0A>"])
def test_byte_pieces_are_a_piece_kind(line):
    assert pieces.piece_kind([line])[0] == pieces.BYTE_KIND
    assert pieces.piece_entries(line.split()).get("sentencepiece")  # a model's entries: sentencepiece's
    assert pieces.piece_kind(["<0x1>", "<0xzz>", "0x31", "<0x31"])[0] is None  # not sentencepiece's form
