"""An option of some vocabulary variants (--threshold, --word-threshold, --spm-vocab, --bpe-merges,
--bpe-codes) given to a recipe whose --variants builds none of them would do nothing: refused in one
usage line before any work, in every recipe (preprocess.common.check_variant_options); given with a
variant it acts on, it is taken; not given, it has its default."""
import argparse
import importlib
import os
import sys

import pytest

from conftest import REPO

if REPO not in sys.path:
    sys.path.insert(0, REPO)

from preprocess import common  # noqa: E402

RECIPES = ["prepare_gigaword", "prepare_iwslt14", "prepare_lcsts", "prepare_multi30k", "prepare_simplification"]
# options of that kind that act on every variant the recipe can build, with the reason
ALWAYS = {("prepare_lcsts", "vocab"): "the character dictionary of its only variant"}
VALUES = {"threshold": "3", "word_threshold": "3", "spm_vocab": "123", "bpe_merges": "77", "bpe_codes": "codes.txt"}


def parser_actions(module, with_help=False):
    """The option actions of the recipe's parser (its help only ``with_help``), captured when it parses (after
    options.once)."""
    seen = []
    original = argparse.ArgumentParser.parse_args

    def capture(parser, argv=None, namespace=None):
        seen.extend(a for a in parser._actions if a.option_strings and (with_help or a.dest != "help"))
        raise SystemExit(0)

    argparse.ArgumentParser.parse_args = capture
    try:
        with pytest.raises(SystemExit):
            module.parse_args([])
    finally:
        argparse.ArgumentParser.parse_args = original
    return seen


def parser_options(module):
    """(dest, flag) of every option of the recipe's parser, read from argparse itself."""
    return [(a.dest, a.option_strings[0]) for a in parser_actions(module, with_help=True)]


def base_argv(module):
    # --sumdata (Gigaword) replaces --data-dir: both together are refused (one would not be read)
    return (["--sumdata", "s"] if "--sumdata" in dict((f, d) for d, f in parser_options(module)) else
            ["--data-dir", "d"]) + ["--out", "o"]


CASES = [(name, dest) for name in RECIPES for dest in VALUES]


def test_every_variant_option_of_every_recipe_has_a_row():
    """An option naming a vocabulary size, merges, codes or a word threshold must be in the table."""
    for name in RECIPES:
        module = importlib.import_module("preprocess." + name)
        for dest, flag in parser_options(module):
            if any(k in dest for k in ("threshold", "spm", "bpe", "merges", "vocab")):
                assert dest in common.VARIANT_OPTIONS or (name, dest) in ALWAYS, (name, flag)


@pytest.mark.parametrize("name, dest", CASES)
def test_a_variant_option_without_its_variant_is_refused(name, dest, capsys):
    module = importlib.import_module("preprocess." + name)
    options = dict(parser_options(module))
    if dest not in options:
        pytest.skip("{} has no --{}".format(name, dest.replace("_", "-")))
    acting, default = common.VARIANT_OPTIONS[dest]
    others = [v for v in module.VARIANTS if v not in acting]
    argv = base_argv(module)
    if others:
        with pytest.raises(SystemExit) as info:
            module.parse_args(argv + ["--variants", others[0], options[dest], VALUES[dest]])
        assert info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert "error: {} acts on the {} variant(s), and --variants {} builds none".format(
            options[dest], "/".join(acting), others[0]) in err, err
    ok = [v for v in module.VARIANTS if v in acting][0]
    args = module.parse_args(argv + ["--variants", ok, options[dest], VALUES[dest]])
    assert str(getattr(args, dest)) == VALUES[dest]
    assert getattr(module.parse_args(argv + ["--variants", ok]), dest) == default


def test_bpe_merges_with_bpe_codes_is_refused(capsys):
    from preprocess import prepare_iwslt14

    with pytest.raises(SystemExit):
        prepare_iwslt14.parse_args(base_argv(prepare_iwslt14) + ["--bpe-codes", "c", "--bpe-merges", "5"])
    assert "error: --bpe-merges does nothing with --bpe-codes" in capsys.readouterr().err
    assert os.path.basename(prepare_iwslt14.parse_args(base_argv(prepare_iwslt14) + ["--bpe-codes", "c"]).bpe_codes) == "c"
