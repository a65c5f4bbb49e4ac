"""fastBPE-format codes work through fairseq's subword_nmt BPE after conversion."""
import argparse
import io
import subprocess
import sys

import pytest

from conftest import REPO


def fairseq_subword_nmt(codes_path):
    from fairseq.data.encoders.subword_nmt_bpe import SubwordNMTBPE

    return SubwordNMTBPE(argparse.Namespace(bpe_codes=str(codes_path), bpe_separator="@@"))


def test_handwritten_fastbpe_codes_segment_as_fastbpe_does(tmp_path):
    fastbpe = tmp_path / "codes.fastbpe"
    fastbpe.write_text("l o 10\nlo w</w> 8\ne r</w> 5\n")
    out = tmp_path / "codes"
    subprocess.run([sys.executable, "-m", "preprocess.fastbpe_codes", "--fastbpe", fastbpe, "--out", out],
                   cwd=REPO, check=True)
    assert out.read_text().splitlines() == ["#version: 0.2", "l o", "lo w</w>", "e r</w>"]
    bpe = fairseq_subword_nmt(out)
    assert bpe.encode("low lower") == "low lo@@ w@@ er"
    assert bpe.decode("low lo@@ w@@ er") == "low lower"


def test_learned_codes_round_trip(tmp_path):
    """Codes learned by subword-nmt, written in fastBPE's format, converted back: same output."""
    from subword_nmt.learn_bpe import learn_bpe

    text = "the lower lowest newer newest wider widest slower slowest\n" * 20
    learned = io.StringIO()
    learn_bpe(io.StringIO(text), learned, num_symbols=30)
    merges = learned.getvalue().splitlines()[1:]
    (tmp_path / "orig").write_text(learned.getvalue())
    (tmp_path / "fast").write_text("".join("{} {}\n".format(m, 100 - i) for i, m in enumerate(merges)))
    subprocess.run([sys.executable, "-m", "preprocess.fastbpe_codes", "--fastbpe", tmp_path / "fast",
                    "--out", tmp_path / "conv"], cwd=REPO, check=True)
    sentence = "the slowest newer widest lowers"
    assert fairseq_subword_nmt(tmp_path / "conv").encode(sentence) == fairseq_subword_nmt(tmp_path / "orig").encode(sentence)


def test_malformed_codes_line_is_refused(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("l o 10\nnot a merge line\n")
    proc = subprocess.run([sys.executable, "-m", "preprocess.fastbpe_codes", "--fastbpe", bad, "--out", tmp_path / "o"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "line 2" in proc.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, line", [
    ("a b 10\nc d 9\ne f\n", "line 3 is 'e f' and line 1 has a count"),  # the last line's count cut off
    ("a b\nc d 9\n", "line 2 is 'c d 9' and line 1 has no count"),
])
def test_codes_of_mixed_forms_are_refused(tmp_path, text, line):
    """Every line has the first line's form: a merge without its count in a file of counts was cut."""
    from preprocess.fastbpe_codes import convert

    with pytest.raises(ValueError, match="^" + line):
        convert(text.splitlines(keepends=True))
    assert convert(["a b 10\n", "c d 9\n"]) == ["#version: 0.2", "a b", "c d"]
    assert convert(["a b\n", "c d\n"]) == ["#version: 0.2", "a b", "c d"]
