"""Every dropout of every model acts in training and nowhere else (issue 54: a dropout applied to
the top GRU layer's outputs, where torch applies none, survived every test).

A *site* is one ``nn.Dropout`` / ``FairseqDropout`` module or one multi-layer ``nn.RNNBase`` (its
between-layer dropout). For each model (two layers each side, so that every site exists), with
every site at p = 0 training equals evaluation exactly; with one site at p = 0.5 and the others at
0, training differs from evaluation (the site acts). A site built but never applied fails here.
"""
import pytest
import torch
from fairseq.modules import FairseqDropout

from conftest import make_dictionary, random_batch
from test_decoder_state import STATE_VARIANTS, build_variant
from test_numerics import N_WORDS, one_thread  # noqa: F401  (one_thread: autouse fixture)

VARIANTS = ["wean_lstm-layers2", "core_copy-layers2", "core_copy-input-feeding-layers2",
            "word_attn-gated-gru-gated-both", "word_attn-gated-lstm-raw-backward", "word_attn-none-gru-gated-both"]


def dropout_sites(model):
    """{name: module} of every dropout site (see the module docstring)."""
    sites = {}
    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Dropout, FairseqDropout)):
            sites[name] = module
        elif isinstance(module, torch.nn.RNNBase) and module.num_layers > 1:
            sites[name] = module
    return sites


def set_p(module, p):
    if isinstance(module, torch.nn.RNNBase):
        module.dropout = p
    else:
        module.p = p


def outputs(model, batch, train):
    src, lengths, prev, _ = batch
    model.train(train)
    torch.manual_seed(1)
    with torch.no_grad():
        return model(src, lengths, prev)[0]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_dropout_site_acts_in_training_only(variant, tmp_path):
    assert variant in STATE_VARIANTS
    dictionary = make_dictionary(N_WORDS)
    model = build_variant(variant, dictionary, tmp_path)
    batch = random_batch(dictionary, bsz=4, src_len=7, tgt_len=5)
    sites = dropout_sites(model)
    assert any(isinstance(m, torch.nn.RNNBase) for m in sites.values()) or "word_attn" in variant
    for module in sites.values():
        set_p(module, 0.0)
    evaluated = outputs(model, batch, train=False)
    assert torch.equal(outputs(model, batch, train=True), evaluated)  # p = 0: nothing else random
    idle = []
    for name, module in sites.items():
        set_p(module, 0.5)
        trained = outputs(model, batch, train=True)
        if torch.equal(trained, evaluated):
            idle.append(name)
        assert torch.equal(outputs(model, batch, train=False), evaluated)  # evaluation: no dropout
        set_p(module, 0.0)
    assert not idle, "dropout sites with no effect in training: {}".format(idle)
