"""The recipes' vocabulary sizes (preprocess.vocab_sizes): one range when parsed, and recipe.json records the
sizes really built (prepare_multi30k --spm-vocab 999999999 built 500 pieces and recorded 999999999 only).

* every option of every recipe (found: preprocess/prepare_*.py) that sizes or thresholds a vocabulary is a size
  option of :data:`~preprocess.vocab_sizes.SIZE_OPTIONS` (typed ``size_type``: above ``MAX_VOCAB`` one usage
  line, exit 2) or says why it is no size (``NOT_A_SIZE``); every recipe with one calls ``record_built``
  before ``write_recipe`` (a scan of its source);
* ``record_built`` counts what was built (dictionary symbols without fairseq's padding, sentencepiece pieces,
  BPE merges) and logs each size option that got less, tiny cap or data;
* the reproducer end to end on the real Multi30k files (tiny).
"""
import ast
import glob
import importlib
import json
import os
import sys

import pytest

from conftest import REPO, shared_data_dir
from test_recipe_variant_options import parser_actions

if REPO not in sys.path:
    sys.path.insert(0, REPO)

from preprocess import vocab_sizes  # noqa: E402

RECIPES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, "preprocess", "prepare_*.py")))
SIZE_WORDS = ("vocab", "merges", "threshold", "nwords", "spm", "pieces", "symbols")


def size_like(dest):
    return any(word in dest for word in SIZE_WORDS)


def test_every_vocabulary_option_of_every_recipe_is_a_size_or_says_why_not():
    assert len(RECIPES) == 5, RECIPES
    seen, bad = set(), []
    for name in RECIPES:
        for action in parser_actions(importlib.import_module("preprocess." + name)):
            if not size_like(action.dest) or action.dest == "variants":
                continue
            seen.add(action.dest)
            if action.dest in vocab_sizes.NOT_A_SIZE:
                continue
            if action.dest not in vocab_sizes.SIZE_OPTIONS or not getattr(action.type, "vocabulary_size", False):
                bad.append("{} --{}".format(name, action.dest.replace("_", "-")))
    assert not bad, "vocabulary options outside preprocess.vocab_sizes (type=vocab_sizes.size_type()): {}".format(bad)
    assert set(vocab_sizes.SIZE_OPTIONS) <= seen, seen  # the table names no option that is gone


def calls(path):
    """The names of the functions ``main`` of ``path`` calls, in the order of the source."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    found = [(n.lineno, n.col_offset, n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", ""))
             for n in ast.walk(main) if isinstance(n, ast.Call)]
    return [name for _, _, name in sorted(found)]


@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_with_a_size_option_records_what_it_built(name):
    dests = {a.dest for a in parser_actions(importlib.import_module("preprocess." + name))}
    if not dests & set(vocab_sizes.SIZE_OPTIONS):
        pytest.skip("no vocabulary-size option")
    order = calls(os.path.join(REPO, "preprocess", name + ".py"))
    assert "record_built" in order and "write_recipe" in order, order
    assert order.index("record_built") < order.index("write_recipe")


@pytest.mark.parametrize("name", RECIPES)
def test_a_size_above_the_bound_is_one_usage_line(name, capsys):
    module = importlib.import_module("preprocess." + name)
    dests = [a for a in parser_actions(module) if a.dest in vocab_sizes.SIZE_OPTIONS]
    if not dests:
        pytest.skip("no vocabulary-size option")
    for action in dests:
        flag = action.option_strings[0]
        variant = vocab_sizes.SIZE_OPTIONS[action.dest][0]
        argv = [flag, str(vocab_sizes.MAX_VOCAB + 1)] + (["--variants", variant] if name != "prepare_lcsts" else [])
        with pytest.raises(SystemExit) as info:
            module.parse_args(argv)
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert info.value.code == 2
        assert last.endswith("argument {}: must be >= 1 and <= {}, got {}".format(
            flag, vocab_sizes.MAX_VOCAB, vocab_sizes.MAX_VOCAB + 1)), last
        assert action.type(str(vocab_sizes.MAX_VOCAB)) == vocab_sizes.MAX_VOCAB


def plant(out, pieces, merges, symbols):
    for variant in ("spm", "bpe", "word"):
        os.makedirs(os.path.join(out, variant))
        with open(os.path.join(out, variant, "dict.src.txt"), "w", encoding="utf-8") as f:
            f.write("".join("s{} 3\n".format(i) for i in range(symbols)) + "madeupword0000 0\nmadeupword0001 0\n")
    with open(os.path.join(out, "spm.vocab"), "w", encoding="utf-8") as f:
        f.write("".join("p{}\t-1.0\n".format(i) for i in range(pieces)))
    with open(os.path.join(out, "bpe.codes"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join("a{} b\n".format(i) for i in range(merges)))
    return {"spm": {"bin": "spm", "spm_model": "spm.model"}, "bpe": {"bin": "bpe", "bpe_codes": "bpe.codes"},
            "word": {"bin": "word"}}


@pytest.mark.parametrize("given,max_sentences,logged", [
    ({"spm_vocab": 8000, "bpe_merges": 10000}, None, ["--spm-vocab 8000", "--bpe-merges 10000"]),  # the data
    ({"spm_vocab": 8000, "bpe_merges": 10000}, 100, ["--spm-vocab 8000", "--bpe-merges 10000"]),  # data and cap
    ({"spm_vocab": 300, "bpe_merges": 200}, None, []),  # all given
    ({"vocab": 40}, None, ["--vocab 40"]), ({"vocab": 34}, None, []),  # 30 symbols + 4 specials
])
def test_record_built_counts_what_was_built_and_says_when_less(given, max_sentences, logged, tmp_path, capsys):
    import argparse

    out = str(tmp_path)
    variants = plant(out, pieces=300, merges=200, symbols=30)
    args = argparse.Namespace(max_sentences=max_sentences, bpe_codes=None, **given)
    vocab_sizes.record_built(out, variants, args, "src")
    assert variants["spm"]["built"] == {"dictionary": 30, "spm_vocab": 300}
    assert variants["bpe"]["built"] == {"dictionary": 30, "bpe_merges": 200}
    assert variants["word"]["built"] == {"dictionary": 30}
    lines = [l for l in capsys.readouterr().out.splitlines() if "recipe.json records both" in l]
    assert sorted(l.split(": the ")[0].split("] ")[-1] for l in lines) == sorted(logged), lines
    assert all("(all the training text gives)" in l for l in lines), lines  # below the tiny cap: the data


def test_record_built_names_the_tiny_cap_when_it_is_what_stopped_the_build(tmp_path, capsys):
    import argparse

    out = str(tmp_path)
    variants = plant(out, pieces=500, merges=500, symbols=30)
    vocab_sizes.record_built(out, variants, argparse.Namespace(max_sentences=100, bpe_codes=None, spm_vocab=1000000,
                                                               bpe_merges=20000), "src")
    lines = [l for l in capsys.readouterr().out.splitlines() if "recipe.json records both" in l]
    assert len(lines) == 2 and all("a tiny run (--max-sentences) caps it at 500" in l for l in lines), lines


DATA = shared_data_dir()


@pytest.mark.skipif(DATA is None, reason="shared raw data directory (../shared/data) not found")
def test_the_reproducer_records_the_sizes_built(tmp_path, capsys):
    from preprocess import prepare_multi30k

    out = tmp_path / "pm"
    prepare_multi30k.main(["--data-dir", DATA, "--out", str(out), "--variants", "spm,bpe", "--spm-vocab", "1000000",
                           "--bpe-merges", "1000000", "--max-sentences", "100", "--max-eval", "20"])
    recipe = json.loads((out / "recipe.json").read_text(encoding="utf-8"))
    assert recipe["options"]["spm_vocab"] == 1000000 == recipe["options"]["bpe_merges"]  # as given
    pieces = len((out / "spm.vocab").read_text(encoding="utf-8").splitlines())
    merges = len((out / "bpe.codes").read_text(encoding="utf-8").splitlines()) - 1
    assert recipe["variants"]["spm"]["built"]["spm_vocab"] == pieces == 500
    assert recipe["variants"]["bpe"]["built"]["bpe_merges"] == merges <= 500
    symbols = [l for l in (out / "spm" / "dict.de.txt").read_text(encoding="utf-8").splitlines()
               if not l.startswith("madeupword")]
    assert recipe["variants"]["spm"]["built"]["dictionary"] == len(symbols)
    logged = capsys.readouterr().out
    assert "--spm-vocab 1000000: the spm variant has 500 sentencepiece pieces" in logged
