"""Every file of word/score lines the project reads (alignment tables, fastBPE codes, dictionaries,
known-words lists) is refused in one line naming the file and line for the same defects: a key
listed twice, a number that is not finite, no entry at all -- before any output is written."""
import re

import pytest

from fairseq_wean.errors import FairseqWeanError

VICTIM = b"earlier output\n"

# defect -> the file text per reader kind (None: the defect cannot be written in that format)
TEXT = {
    "table": {"dup": "the\tcat\t1\nthe\tcat\t2\n", "nan": "the\tcat\tnan\n", "inf": "the\tcat\tinf\n", "empty": ""},
    "codes": {"dup": "a b 5\na b 7\n", "empty": "", "blank": "\n\n"},
    "dict": {"dup": "the 5\ncat 4\nthe 3\n", "empty": "", "special": "the 5\n<unk> 3\n"},
}
EXPECT = {"dup": "twice", "nan": "not a finite", "inf": "not a finite", "empty": "empty", "blank": "empty",
          "special": "adds to every dictionary"}


def _run_table_read(tmp_path, path):
    from fairseq_wean.data.align_table import read_table
    read_table(str(path), "--table")


def _run_core_align_table(tmp_path, path):
    from fairseq.data import Dictionary
    from fairseq_wean.data.align_table import read_align_table
    d = Dictionary()
    for w in ("the", "cat"):
        d.add_symbol(w)
    read_align_table(str(path), d, 2)


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


READERS = {  # reader -> (file kind, how it is read)
    "align_table.read_table": ("table", _run_table_read),
    "--core-align-table": ("table", _run_core_align_table),
    "fastbpe_codes --fastbpe": ("codes", _run_fastbpe),
    "fairseq-wean-align-table --dict": ("dict", _run_align_dict),
    "unk_markers encode --vocab": ("dict", _run_markers_vocab),
}
CASES = [(reader, defect) for reader, (kind, _) in READERS.items() for defect in TEXT[kind]]


@pytest.mark.parametrize("reader,defect", CASES)
def test_reader_refuses_defect_in_one_line_naming_file(tmp_path, reader, defect):
    kind, run = READERS[reader]
    path = tmp_path / "input.txt"
    path.write_text(TEXT[kind][defect])
    (tmp_path / "out.txt").write_bytes(VICTIM)
    with pytest.raises(FairseqWeanError) as exc:
        run(tmp_path, path)
    message = str(exc.value)
    assert "\n" not in message and str(path) in message and EXPECT[defect] in message, message
    if defect not in ("empty", "blank"):
        assert re.search(r"\blines? \d", message), message  # names the line
    assert (tmp_path / "out.txt").read_bytes() == VICTIM


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
