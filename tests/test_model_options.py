"""One set of option names across the models (issue 38): the shared-embedding models (wean_lstm,
core_copy) take fairseq lstm's --encoder-embed-dim / --decoder-embed-dim as aliases of --embed-dim,
and word_attn_gated takes --embed-dim for both of its sizes, so one command line sizes every model."""
import os
import re

import pytest
from fairseq import options

import fairseq_wean  # noqa: F401  (registers the models)
from conftest import USER_DIR
from fairseq_wean.errors import FairseqWeanError


def parse(*args):
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, input_args=["data-bin", "--user-dir", USER_DIR, *args])


@pytest.mark.parametrize("arch,default", [("wean_lstm", 256), ("wean_lstm_lcsts", 512), ("core_copy", 256),
                                          ("core_copy_small", 128)])
def test_shared_embedding_models_take_lstm_size_names(arch, default):
    assert parse("--arch", arch).embed_dim == default  # the preset's size
    assert parse("--arch", arch, "--encoder-embed-dim", "64", "--decoder-embed-dim", "64").embed_dim == 64
    assert parse("--arch", arch, "--decoder-embed-dim", "32").embed_dim == 32
    assert parse("--arch", arch, "--embed-dim", "48", "--encoder-embed-dim", "48").embed_dim == 48


@pytest.mark.parametrize("arch", ["wean_lstm", "core_copy"])
def test_shared_embedding_sizes_that_disagree_are_refused(arch):
    with pytest.raises(FairseqWeanError, match=r"--encoder-embed-dim 64, --decoder-embed-dim 32: this model has one "
                                               r"embedding table .* e\.g\. --embed-dim 64"):
        parse("--arch", arch, "--encoder-embed-dim", "64", "--decoder-embed-dim", "32")


def test_word_attention_takes_embed_dim_for_both_sides():
    a = parse("--arch", "word_attn_gated", "--embed-dim", "48")
    assert (a.encoder_embed_dim, a.decoder_embed_dim) == (48, 48)
    a = parse("--arch", "word_attn_gated", "--embed-dim", "48", "--decoder-embed-dim", "24")  # a side given wins
    assert (a.encoder_embed_dim, a.decoder_embed_dim) == (48, 24)
    a = parse("--arch", "word_attn_gated_wmt", "--embed-dim", "48")  # over the preset's 620
    assert (a.encoder_embed_dim, a.decoder_embed_dim) == (48, 48)
    a = parse("--arch", "word_attn_gated_wmt")
    assert (a.encoder_embed_dim, a.decoder_embed_dim) == (620, 620)


def option_flags(add_args):
    """The --flags an ``add_args`` function adds to a fresh parser."""
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    add_args(parser)
    return [flag for action in parser._actions for flag in action.option_strings if flag.startswith("--")]


@pytest.mark.parametrize("arch", ["wean_lstm", "core_copy", "word_attn_gated", "lstm"])
def test_help_with_an_arch_lists_the_models_options(arch):
    """fairseq printed the generic help before adding --arch's options, for its own lstm too
    (compat fix 14): the model's, the task's and the criterion's options are listed now."""
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    from conftest import cli

    proc = cli("fairseq-train", "--user-dir", USER_DIR, "--arch", arch, "--task", "translation_with_metrics",
               "--criterion", "label_smoothed_cross_entropy", "--help")
    assert proc.stdout.startswith("usage: fairseq-train") and proc.stderr.count("error") == 0
    listed = set(re.findall(r"^ +(--[a-z0-9-]+)", proc.stdout, re.M))
    model_flags = option_flags(ARCH_MODEL_REGISTRY[arch].add_args)
    assert len(model_flags) >= 8 and set(model_flags) <= listed
    assert {"--eval-sari", "--eval-refs", "--known-words"} <= listed  # the task's
    assert set(option_flags(TASK_REGISTRY["translation_with_metrics"].add_args)) <= listed
    assert "--label-smoothing" in listed  # the criterion's


def test_help_without_an_arch_and_parsing_without_help_are_unchanged():
    """Only --help is affected: a command line without it parses as before, and the patched
    parser is left as it was after a --help."""
    args = parse("--arch", "wean_lstm", "--embed-dim", "32")
    assert args.embed_dim == 32 and args.arch == "wean_lstm"
    parser = options.get_training_parser()
    with pytest.raises(SystemExit) as exc:
        options.parse_args_and_arch(parser, input_args=["--user-dir", USER_DIR, "--arch", "wean_lstm", "-h"])
    assert exc.value.code == 0 and "parse_known_args" not in vars(parser)


def test_options_tables_of_the_model_pages_are_the_codes(tmp_path):
    """docs/models/MODEL.md's options table is generated from add_args and the presets; a page
    that differs from the code fails here (run python scripts/options_table.py)."""
    import subprocess
    import sys

    from conftest import REPO

    script = [sys.executable, os.path.join(REPO, "scripts", "options_table.py"), "--check"]
    proc = subprocess.run(script, cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # a drifted table is caught: the page's preset value of --dropout changed by hand
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    import options_table

    page = open(os.path.join(REPO, "docs", "models", "wean_lstm.md"), encoding="utf-8").read()
    table = options_table.table("wean_lstm")
    assert "| `--dropout` |" in table and "| `--wean-score` |" in table and "`wean_lstm_lcsts`" in table
    row = next(line for line in table.splitlines() if line.startswith("| `--dropout` |"))
    assert row.endswith("| `0.4` | `0.0` |")  # wean_lstm: the paper's 0.4; wean_lstm_lcsts: none
    drifted = page.replace(row, row.replace("`0.4`", "`0.3`"))
    assert drifted != page and options_table.with_table(drifted, "wean_lstm") == page
