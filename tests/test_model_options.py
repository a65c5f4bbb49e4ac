"""One set of option names across the models (issue 38): the shared-embedding models (wean_lstm,
core_copy) take fairseq lstm's --encoder-embed-dim / --decoder-embed-dim as aliases of --embed-dim,
and word_attn_gated takes --embed-dim for both of its sizes, so one command line sizes every model."""
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
