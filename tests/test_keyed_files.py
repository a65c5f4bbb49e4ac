"""Every file of word/score lines the project reads (alignment tables, fastBPE codes, dictionaries,
known-words lists), through every reader and option that reads one, is refused in one line naming the
file and line for the same defects: not that kind of file (a dictionary given as a table, a table as a
dictionary), a key listed twice, a number that is not finite, no entry at all -- before any output is
written. One checker behind them all (``fairseq_wean.data.dictionary.check_entries``)."""
import re

import pytest

from conftest import USER_DIR
from fairseq_wean.errors import FairseqWeanError

VICTIM = b"earlier output\n"

MALFORMED_TABLE = "is malformed (expected SOURCE<TAB>TARGET<TAB>SCORE"
MALFORMED_DICT = "expected 'WORD COUNT'"
MALFORMED_CODES = "is not a fastBPE merge"
# file kind -> defect -> (the file's text, what the one line says); a defect a format cannot hold is left out
TEXT = {
    "table": {"not this kind": ("the 5\ncat 4\n", MALFORMED_TABLE),
              "dup": ("the\tcat\t1\nthe\tcat\t2\n", "twice"),
              "nan": ("the\tcat\tnan\n", "not a finite"), "inf": ("the\tcat\tinf\n", "not a finite"),
              "empty": ("", "empty"), "blank": ("\n\n", "empty")},
    "codes": {"not this kind": ("the cat sat 1\n", MALFORMED_CODES),  # a table or a dictionary reads as merges
              "dup": ("a b 5\na b 7\n", "twice"),
              "nan": ("a b nan\n", MALFORMED_CODES), "empty": ("", "empty"), "blank": ("\n\n", "empty")},
    "dict": {"not this kind": ("the\tcat\t1\n", MALFORMED_DICT), "dup": ("the 5\ncat 4\nthe 3\n", "twice"),
             "nan": ("the nan\n", MALFORMED_DICT), "inf": ("the inf\n", MALFORMED_DICT), "empty": ("", "empty"),
             "special": ("the 5\n<unk> 3\n", "adds to every dictionary")},
    "align dict": {"not this kind": ("the\ncat\n", "expected 'SOURCE TARGET'"),
                   "dup": ("the a\ncat b\nthe c\n", "twice"), "empty": ("", "empty"), "blank": ("\n\n", "empty")},
}


def _run_table_read(tmp_path, path):
    from fairseq_wean.data.align_table import read_table
    read_table(str(path), "--table")


def _dictionary():
    from fairseq.data import Dictionary
    d = Dictionary()
    for w in ("the", "cat"):
        d.add_symbol(w)
    return d


def _run_core_align_table(tmp_path, path):
    from fairseq_wean.data.align_table import read_align_table
    read_align_table(str(path), _dictionary(), 2)


def _run_core_align_table_at_parse(tmp_path, path):
    """fairseq-train's own parse (the option checks of patching.add_option_check), before the task or the
    model is built: nothing but the parser runs."""
    import fairseq_wean  # noqa: F401  (the patches and the option checks)
    from fairseq import options

    (tmp_path / "data").mkdir(exist_ok=True)
    parser = options.get_training_parser()
    options.parse_args_and_arch(parser, [str(tmp_path / "data"), "--user-dir", USER_DIR, "--arch", "core_copy",
                                         "--criterion", "core_mode_loss", "--max-tokens", "100", "--save-dir",
                                         str(tmp_path / "save"), "--core-align-table", str(path)])


def _run_fastbpe(tmp_path, path):
    from preprocess.fastbpe_codes import main
    with pytest.raises(SystemExit) as exc:
        main(["--fastbpe", str(path), "--out", str(tmp_path / "out.txt")])
    raise FairseqWeanError(str(exc.value.code))


def _corpus(tmp_path):
    (tmp_path / "s.txt").write_text("the cat sat\nthe dog\n")
    (tmp_path / "t.txt").write_text("a cat sat\nthe dog\n")
    return str(tmp_path / "s.txt"), str(tmp_path / "t.txt")


def _run_align_dict(tmp_path, path):
    from fairseq_wean.cli.align_table import main
    src, tgt = _corpus(tmp_path)
    main(["--src", src, "--tgt", tgt, "--dict", str(path), "--out", str(tmp_path / "out.txt")])


def _run_markers_vocab(tmp_path, path):
    from preprocess.unk_markers import main
    src, _ = _corpus(tmp_path)
    main(["encode", "--vocab", str(path), "--src", src, "--src-out", str(tmp_path / "out.txt")])


def _run_coverage(tmp_path, dict_path=None, table=None):
    from preprocess.coverage_report import main
    src, tgt = _corpus(tmp_path)
    if table is None:
        table = tmp_path / "table.txt"
        table.write_text("the\tcat\t1\n")
    if dict_path is None:
        dict_path = tmp_path / "dict.txt"
        dict_path.write_text("the 5\ncat 4\n")
    main(["--dict", str(dict_path), "--src", src, "--tgt", tgt, "--table", str(table),
          "--json", str(tmp_path / "out.txt")])


def _run_fairseq_dictionary(tmp_path, path):
    """fairseq's Dictionary.load (the data folder's dict.SRC.txt in every command and the hub,
    --unk-markers-dict), with the plugin's patch."""
    import fairseq_wean  # noqa: F401
    from fairseq.data import Dictionary
    Dictionary.load(str(path))


def _run_replace_unk(tmp_path, path):
    """fairseq's utils.load_align_dict (fairseq-generate/-interactive --replace-unk FILE), with the plugin's patch."""
    import fairseq_wean  # noqa: F401
    from fairseq import utils
    utils.load_align_dict(str(path))


READERS = {  # reader -> (file kind, how it is read)
    "align_table.read_table": ("table", _run_table_read),
    "--core-align-table (model build)": ("table", _run_core_align_table),
    "--core-align-table (fairseq-train's parse)": ("table", _run_core_align_table_at_parse),
    "coverage_report --table": ("table", lambda tmp_path, path: _run_coverage(tmp_path, table=path)),
    "fastbpe_codes --fastbpe": ("codes", _run_fastbpe),
    "fairseq-wean-align-table --dict": ("dict", _run_align_dict),
    "unk_markers encode --vocab": ("dict", _run_markers_vocab),
    "coverage_report --dict": ("dict", lambda tmp_path, path: _run_coverage(tmp_path, dict_path=path)),
    "fairseq Dictionary.load": ("dict", _run_fairseq_dictionary),
    "--replace-unk (load_align_dict)": ("align dict", _run_replace_unk),
}
CASES = [(reader, defect) for reader, (kind, _) in READERS.items() for defect in TEXT[kind]]


@pytest.mark.parametrize("reader,defect", CASES)
def test_reader_refuses_defect_in_one_line_naming_file(tmp_path, reader, defect):
    kind, run = READERS[reader]
    text, expected = TEXT[kind][defect]
    path = tmp_path / "input.txt"
    path.write_text(text)
    (tmp_path / "out.txt").write_bytes(VICTIM)
    with pytest.raises(FairseqWeanError) as exc:
        run(tmp_path, path)
    message = str(exc.value)
    assert "\n" not in message and str(path) in message and expected in message, message
    if defect not in ("empty", "blank"):
        assert re.search(r"\blines? \d", message), message  # names the line
    assert (tmp_path / "out.txt").read_bytes() == VICTIM


SECRET = "SECRETWORD"


@pytest.mark.parametrize("reader,defect", [(reader, defect) for reader, (kind, _) in READERS.items() if kind == "dict"
                                           for defect in list(TEXT["dict"]) + ["not UTF-8"]])
def test_a_dictionary_found_in_a_folder_is_never_quoted(tmp_path, reader, defect):
    """A dictionary under a name fairseq composes in a data or model folder (dict.tgt.txt) may be anyone's file
    (a tar archive or a copy can carry a hard link to a secret): every reader's error about its content
    names the file, the line and the expected shape, and quotes none of it -- whatever the defect. The
    same text under a name the user chose is quoted (the control)."""
    text = TEXT["dict"][defect][0] if defect != "not UTF-8" else "the 5\nthe\udce9 2\n"
    secret = text.replace("the", SECRET).replace("cat", SECRET + "2").encode("utf-8", "surrogateescape")
    folder = tmp_path / "data-bin"
    folder.mkdir()
    (tmp_path / "out.txt").write_bytes(VICTIM)
    messages = {}
    for name in ("dict.tgt.txt", "mine.txt"):  # found by fairseq's name / named by the user
        path = folder / name
        path.write_bytes(secret)
        with pytest.raises(FairseqWeanError) as exc:
            READERS[reader][1](tmp_path, path)
        messages[name] = str(exc.value)
        assert "\n" not in messages[name] and str(path) in messages[name], messages[name]
    message = messages["dict.tgt.txt"]
    assert SECRET not in message and (defect in ("empty",) or re.search(r"\blines? \d", message)), message
    assert messages["mine.txt"].replace("mine.txt", "dict.tgt.txt") == message or SECRET in messages["mine.txt"], \
        messages  # only what quotes the file differs
    assert (tmp_path / "out.txt").read_bytes() == VICTIM


def test_the_recipes_dictionary_words_never_quote_a_folder_dictionary(tmp_path):
    """data.dictionary.dictionary_words (the recipes' unk rate of OUT/data-bin/dict.tgt.txt): the format errors
    it raises quote nothing of a dictionary found in its folder."""
    from fairseq_wean.data.dictionary import dictionary_words

    for text in (SECRET + "\t" + SECRET + "\t1\n", SECRET + " 5\n" + SECRET + " nan\n", SECRET + "\n"):
        (tmp_path / "dict.tgt.txt").write_text(text)
        with pytest.raises(FairseqWeanError, match=r"dict.tgt.txt line \d: expected 'WORD COUNT'") as exc:
            dictionary_words(str(tmp_path / "dict.tgt.txt"), "dictionary")
        assert SECRET not in str(exc.value), str(exc.value)


def test_the_core_align_table_is_checked_at_parse_and_a_named_pipe_refused(tmp_path):
    """--core-align-table is read when fairseq-train parses its options (a good table passes), and a named
    pipe (read there and again by each process that builds the model) is refused without being opened."""
    import os

    good = tmp_path / "good.txt"
    good.write_text("the\tcat\t1\n")
    _run_core_align_table_at_parse(tmp_path, good)
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(FairseqWeanError, match=r"^--core-align-table \S+pipe is a named pipe, socket or device: "
                                               r"refused"):
        _run_core_align_table_at_parse(tmp_path, tmp_path / "pipe")


def test_known_words_empty_refused(tmp_path):
    from fairseq_wean.known_words import read_known_words
    (tmp_path / "k.txt").write_text("\n \n")
    with pytest.raises(FairseqWeanError, match="^--known-words: .* has no words$"):
        read_known_words(str(tmp_path / "k.txt"))


def test_vocab_min_count_above_every_count_writes_nothing(tmp_path):
    from preprocess.unk_markers import main
    src, tgt = _corpus(tmp_path)
    (tmp_path / "out.txt").write_bytes(VICTIM)
    with pytest.raises(FairseqWeanError, match=r"^--min-count 1000000: no word is seen that often \(the most "
                                               r"frequent is seen 3 time"):
        main(["vocab", "--src", src, "--tgt", tgt, "--min-count", "1000000", "--out", str(tmp_path / "out.txt")])
    assert (tmp_path / "out.txt").read_bytes() == VICTIM


def test_fastbpe_good_codes_still_convert(tmp_path):
    from preprocess.fastbpe_codes import main
    (tmp_path / "c.txt").write_text("a b 5\nab c 3\n")
    main(["--fastbpe", str(tmp_path / "c.txt"), "--out", str(tmp_path / "o.txt")])
    assert (tmp_path / "o.txt").read_text() == "#version: 0.2\na b\nab c\n"
