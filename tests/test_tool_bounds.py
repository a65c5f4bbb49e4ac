"""Repository tools: a bad name is argparse's one-line error (choices), an option whose value
sizes memory has an upper bound named in its message, python -m fairseq_wean.compare.evaluate has
a parser (--help) and refuses a malformed plan in one line, and fairseq-wean-align-table refuses
a sentence longer than eflomal aligns (eflomal would leave the pair out of the table silently).
"""
import importlib.util
import json
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def example(name):
    spec = importlib.util.spec_from_file_location("_tool_bounds_" + name, os.path.join(REPO, "examples", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flops_main(argv):
    from bench import flops

    flops.main(argv)


def counts_main(argv):
    example("word_attention_parameter_counts").main(argv)


def markers_main(argv):
    from preprocess import unk_markers

    unk_markers.cli_main(argv)


PROGS = {"flops": "python -m bench.flops", "counts": "python examples/word_attention_parameter_counts.py",
         "markers": "python -m preprocess.unk_markers vocab"}
MAINS = {"flops": flops_main, "counts": counts_main, "markers": markers_main}

# (tool, argv, the error after "PROG: error: ")
CASES = [
    ("counts", ["--arch", "bogus"], None),  # message: argparse's choices, checked below
    ("flops", ["--count", "bogus"], "argument --count: invalid choice: 'bogus' (choose from 'core_copy', 'lstm', "
                                    "'transformer', 'wean_lstm', 'word_attn_gated')"),
    ("counts", ["--src-vocab", "100000000000"], "argument --src-vocab: must be >= 4 and <= 1000000, got 100000000000"),
    ("counts", ["--tgt-vocab", "1000001"], "argument --tgt-vocab: must be >= 4 and <= 1000000, got 1000001"),
    ("flops", ["--sizes", "256,100000000"], "argument --sizes: must be >= 1 and <= 8192, got 100000000"),
    ("markers", ["vocab", "--src", "a", "--tgt", "b", "--out", "c", "--markers", "100000000"],
     "argument --markers: must be >= 1 and <= 100000, got 100000000"),
]


@pytest.mark.parametrize("tool,argv,message", CASES)
def test_bad_names_and_memory_sizes_are_one_line_errors(tool, argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        MAINS[tool](argv)
    assert exc.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    if message is None:
        from fairseq.models import ARCH_MODEL_REGISTRY
        from fairseq_wean.models.word_attn_gated import WordAttnGatedModel

        presets = sorted(n for n, c in ARCH_MODEL_REGISTRY.items() if c is WordAttnGatedModel)
        message = "argument --arch: invalid choice: 'bogus' (choose from {})".format(
            ", ".join(repr(p) for p in presets))
        assert "word_attn_gated_iwslt" in presets
    assert line == "{}: error: {}".format(PROGS[tool], message)


def test_the_memory_bounds_are_the_modules_limits():
    from bench import flops
    from preprocess import unk_markers

    assert flops.MAX_SIDE == 8192 and unk_markers.MAX_MARKERS == 100000
    assert example("word_attention_parameter_counts").MAX_VOCAB == 1000000
    assert flops.size_list("256,8192") == (256, 8192)


# --------------------------------------------------------------------------------------------- evaluate
def test_evaluate_has_a_parser(capsys):
    from fairseq_wean.compare import evaluate

    with pytest.raises(SystemExit) as exc:
        evaluate.cli_main(["--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m fairseq_wean.compare.evaluate [-h] PLAN.json")


GOOD_PLAN = {"data": "bin", "data_root": "root", "user_dir": "u", "gen_dir": "g", "out": "o.json", "gen_args": [],
             "valid": {"metric": "bleu"}, "tests": {"test": {"subset": "test", "orig": "test.src"}},
             "selected": {"epoch": 1, "checkpoint": "c.pt", "curve": [{"epoch": 1, "bleu": 1.0}]}}
BAD_PLANS = [
    ("{bad", "is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ("[]", "is not a JSON object"),
    (json.dumps({"data": "x"}), "lacks or has a malformed data_root, user_dir, gen_dir, out, gen_args, valid, "
                                "selected, tests, selected.epoch, selected.checkpoint, selected.curve"),
    (json.dumps(dict(GOOD_PLAN, selected=dict(GOOD_PLAN["selected"], epoch=2))),
     "lacks or has a malformed selected.curve (no bleu for epoch 2)"),
    (json.dumps(dict(GOOD_PLAN, tests={"test": {"subset": "test"}})), "lacks or has a malformed tests.test"),
]


@pytest.mark.parametrize("text,message", BAD_PLANS)
def test_a_malformed_plan_is_one_line(text, message, tmp_path):
    from fairseq_wean.compare import evaluate

    plan = tmp_path / "plan.json"
    plan.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        evaluate.cli_main([str(plan)])
    suffix = "give the plan file fairseq-wean-compare wrote"
    assert exc.value.code == "fairseq-wean: error: plan {} {}: {}".format(
        plan, message, suffix)


def test_a_good_plan_is_read(tmp_path):
    from fairseq_wean.compare import evaluate

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(GOOD_PLAN), encoding="utf-8")
    assert evaluate.read_plan(str(plan)) == GOOD_PLAN


# --------------------------------------------------------------------------------------------- align-table
@pytest.mark.parametrize("side", ["--src", "--tgt"])
def test_align_table_refuses_a_sentence_longer_than_eflomal_aligns(side, tmp_path):
    from fairseq_wean.cli import align_table

    long_line = " ".join("a{}".format(i) for i in range(align_table.MAX_TOKENS + 1))
    lines = {"--src": ["w1 w2", "w3 w4"], "--tgt": ["v1 v2", "v3 v4"]}
    lines[side][1] = long_line
    paths = {}
    for flag in lines:
        paths[flag] = tmp_path / flag[2:]
        paths[flag].write_text("\n".join(lines[flag]) + "\n", encoding="utf-8")
    out = tmp_path / "table"
    with pytest.raises(SystemExit) as exc:
        align_table.cli_main(["--src", str(paths["--src"]), "--tgt", str(paths["--tgt"]), "--out", str(out)])
    assert exc.value.code == (
        "fairseq-wean-align-table: error: {} {} line 2 has 1,024 tokens, more than the 1,023 eflomal aligns (it would "
        "leave the pair out of the table without a word): split or drop the long pairs".format(side, paths[side]))
    assert not out.exists()


def test_align_table_limit_is_eflomals():
    """eflomal aligns 1,023 tokens and leaves 1,024 without links (checked on eflomal 2.0); the
    library function refuses too."""
    from fairseq_wean.cli import align_table

    assert align_table.MAX_TOKENS == 1023
    align_table.check_lengths([["a"] * 1023], [["b"] * 1023])
    with pytest.raises(ValueError) as exc:
        align_table.build_table([["a"] * 1024], [["b"]])
    assert str(exc.value).startswith("source line 1 has 1,024 tokens, more than the 1,023 eflomal aligns")
