"""A byte-order mark (U+FEFF) is dropped where it starts a file, and refused anywhere else, by every reader of raw text.

``cat a.txt b.txt`` of two files that begin with a mark puts one at the start of a later line: fairseq's tokenizer
keeps it as a character of the word after it ('\\ufeffone' beside 'one' in dict.src.txt), and the preprocess tools'
cleaned copies kept it. One rule (``textio.byte_order_mark_problem``, in ``textio``'s line reader, and
``textio.first_stray_byte_order_mark`` for a reader that does not go through it: fairseq-preprocess's input check): a
mark at the start of line 1 is dropped, one elsewhere (a later line's start, inside a line) is one line naming the
file and the line, before anything is written. Every reader: textio.read_lines (plain and strict), the recipes'
raw-file reader (preprocess.common.read_complete_lines), the preprocess tools' reader (check_parallel.complete_lines:
split_characters, unk_markers, coverage_report, fastbpe_codes) and the tools check_parallel and split_characters.
"""
import pytest

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError

BOM = "\ufeff"
LINES = ["the cat", "a dog", "big red", "one two", "blue"]
# where the mark is: (line, position in the line) -> refused (the line named) or dropped
PLACES = {"file start": (1, 0), "a later line's start": (4, 0), "inside a word": (2, 3), "line end": (5, 4)}


def marked(tmp_path, place):
    number, position = PLACES[place]
    lines = list(LINES)
    lines[number - 1] = lines[number - 1][:position] + BOM + lines[number - 1][position:]
    path = tmp_path / "text.en"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _read(path, strict=False):
    return textio.read_lines(str(path), "input", strict=strict)


def _recipe(path):
    from preprocess import common

    return common.read_complete_lines(str(path), what="data file")


def _tools(path):
    from preprocess.check_parallel import complete_lines

    return list(complete_lines(str(path), "--input"))


def _check_parallel(path):
    from preprocess import check_parallel

    target = path.parent / "text.de"
    target.write_text("".join("x{}\n".format(n) for n in range(len(LINES))))
    out = path.parent / "out"
    code = check_parallel.main(["--src", str(path), "--tgt", str(target), "--out-prefix", str(out)])
    if code != 0:
        raise FairseqWeanError("exit {}".format(code))
    return (path.parent / "out.en").read_text(encoding="utf-8").splitlines()


def _split_characters(path):
    from preprocess import split_characters

    out = path.parent / "chars.txt"
    split_characters.main(["--input", str(path), "--output", str(out)])
    return [line.replace(" ", "") for line in out.read_text(encoding="utf-8").splitlines()]  # its output: no spaces


def _first_stray(path):  # what fairseq-preprocess's input check calls (no lines: the mark's place)
    found = textio.first_stray_byte_order_mark(str(path))
    if found is not None:
        raise FairseqWeanError(textio.byte_order_mark_problem("input", str(path), *found))
    return list(LINES)


def _fairseq_preprocess(path):  # fairseq's own reader, through the plugin's input check (compat)
    from fairseq import options
    from fairseq_cli import preprocess

    from fairseq_wean import compat

    compat.install_preprocess_input_check()  # as in fairseq-preprocess's own process (once: wrap_once)

    args = options.get_preprocessing_parser().parse_args(
        ["--only-source", "--source-lang", path.suffix[1:], "--trainpref", str(path.with_suffix("")),
         "--destdir", str(path.parent / "bin"), "--workers", "1"])
    preprocess.main(args)
    return list(LINES)


READERS = {"fairseq-preprocess": _fairseq_preprocess, "textio.read_lines": _read, "textio.read_lines strict": lambda p: _read(p, True),
           "preprocess.common.read_complete_lines": _recipe, "check_parallel.complete_lines": _tools,
           "check_parallel main": _check_parallel, "split_characters main": _split_characters,
           "textio.first_stray_byte_order_mark": _first_stray}


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_drops_a_starting_mark_and_refuses_any_other(tmp_path, capsys, reader, place):
    path = marked(tmp_path, place)
    before = sorted(p.name for p in tmp_path.iterdir())
    number, position = PLACES[place]
    if place == "file start":
        spaced = reader != "split_characters main"
        assert READERS[reader](path) == [line if spaced else line.replace(" ", "") for line in LINES]
        return
    if reader == "check_parallel main":  # its own error path: exit 1, the line on stderr
        from preprocess import check_parallel

        (tmp_path / "text.de").write_text("".join("x{}\n".format(n) for n in range(len(LINES))))
        before = sorted(p.name for p in tmp_path.iterdir())
        code = check_parallel.main(["--src", str(path), "--tgt", str(tmp_path / "text.de"), "--out-prefix",
                                    str(tmp_path / "out")])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 1 and len(err) == 1, err
        message = err[0]
    else:
        with pytest.raises(FairseqWeanError) as info:
            READERS[reader](path)
        message = str(info.value)
    assert "\n" not in message
    assert "{} line {} holds a byte-order mark (U+FEFF, byte {} of the line)".format(path, number, position) in message, \
        message
    assert "iconv" not in message  # no UTF-8 advice: the file is UTF-8
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written

