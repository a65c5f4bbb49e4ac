"""WEAN (Ma et al. 2018): model-level checks against reference computations."""
import argparse

import pytest
import torch

import fairseq_wean  # noqa: F401  (registers the models)
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.models.wean_lstm import WeanLSTMModel, base_architecture
from model_checks import assert_batched_beam_equals_single, assert_incremental_equals_full
from conftest import FakeTask, make_dictionary, random_batch


def build(dictionary, **overrides):
    args = argparse.Namespace(arch="wean_lstm", embed_dim=16, encoder_hidden_size=12,
                              decoder_hidden_size=14, dropout=0.0, **overrides)
    base_architecture(args)
    torch.manual_seed(0)
    return WeanLSTMModel.build_model(args, FakeTask(dictionary))


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_incremental_decoding_equals_full_forward(score, bidirectional):
    d = make_dictionary()
    model = build(d, wean_score=score, encoder_bidirectional=bidirectional)
    assert_incremental_equals_full(model, random_batch(d))


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_batched_beam_search_equals_single_sentence(score):
    d = make_dictionary()
    model = build(d, wean_score=score)
    src, lengths, _, _ = random_batch(d, bsz=4, src_len=6)
    hyps = assert_batched_beam_equals_single(model, d, src, lengths)
    assert all(len(h) == 3 for h in hyps)


def test_output_scores_are_eq5_against_shared_embeddings():
    """f(q_t, e_i) = q_t^T W_a e_i computed by hand from the shared embedding matrix."""
    d = make_dictionary()
    model = build(d, wean_score="general")
    model.eval()
    src, lengths, prev, _ = random_batch(d)
    assert model.encoder.embed_tokens is model.decoder.embed_tokens
    enc = model.encoder(src, src_lengths=lengths)
    q, _ = model.decoder.extract_features(prev, enc)
    E = model.encoder.embed_tokens.weight
    W_a = model.decoder.output_score.query_to_key.weight.t()  # q^T W_a e
    expected = torch.einsum("btk,kj,vj->btv", q, W_a, E)
    logits, extra = model.decoder(prev, enc)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    assert logits.shape == (src.size(0), prev.size(1), len(d))
    assert extra["attn"][0].shape == (src.size(0), prev.size(1), src.size(1))
    # q_t = tanh(...) (eq. 4): bounded
    assert q.abs().max() <= 1.0


@pytest.mark.parametrize("score,expected", [("dot", 0), ("general", 16 * 16), ("concat", 2 * 16 * 16 + 16)])
def test_output_layer_parameters_follow_table5(score, expected):
    d = make_dictionary()
    model = build(d, wean_score=score)
    assert model.decoder.output_layer_num_parameters() == expected


def test_table5_numbers_at_paper_sizes():
    """k=256: general 65,536, concat 131,328 (Table 5); LCSTS k=512: concat 524,800."""
    from fairseq_wean.modules.attention import ScoreFunction

    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(ScoreFunction(256, 256, "concat")) == 131328
    assert count(ScoreFunction(512, 512, "concat")) == 524800
    assert count(ScoreFunction(256, 256, "general")) == 65536
    assert count(ScoreFunction(256, 256, "dot")) == 0


def test_attention_ignores_padding():
    """The same sentence, left-padded inside a longer batch, gets the same log-probs."""
    d = make_dictionary()
    model = build(d)
    model.eval()
    src, lengths, prev, _ = random_batch(d, bsz=3, src_len=7)
    with torch.no_grad():
        batched = model.get_normalized_probs(model(src, lengths, prev), log_probs=True)
        last = src[2][src[2].ne(d.pad())].unsqueeze(0)
        alone = model.get_normalized_probs(model(last, lengths[2:], prev[2:]), log_probs=True)
    torch.testing.assert_close(batched[2:], alone, atol=1e-5, rtol=0)


def test_non_joined_dictionary_is_refused():
    src_dict, tgt_dict = make_dictionary(20), make_dictionary(25)
    args = argparse.Namespace(arch="wean_lstm")
    with pytest.raises(FairseqWeanError, match="--joined-dictionary"):
        WeanLSTMModel.build_model(args, FakeTask(src_dict, tgt_dict))


def test_unknown_score_function_is_refused():
    with pytest.raises((FairseqWeanError, ValueError), match="unknown"):
        build(make_dictionary(), wean_score="cosine")


def test_lcsts_preset():
    args = argparse.Namespace(arch="wean_lstm_lcsts")
    from fairseq_wean.models.wean_lstm import wean_lstm_lcsts

    wean_lstm_lcsts(args)
    assert (args.embed_dim, args.encoder_layers, args.decoder_layers, args.dropout) == (512, 2, 1, 0.0)
    model = WeanLSTMModel.build_model(args, FakeTask(make_dictionary()))
    assert_incremental_equals_full(model, random_batch(make_dictionary()))


def test_attention_is_returned_in_the_input_source_order():
    """--print-alignment indexes attn with the left-padded src_tokens: padding gets weight 0."""
    d = make_dictionary()
    model = build(d)
    model.eval()
    src, lengths, prev, _ = random_batch(d, bsz=3, src_len=7)
    with torch.no_grad():
        attn = model(src, lengths, prev)[1]["attn"][0]
        alone = model(src[2:, src[2].ne(d.pad())], lengths[2:], prev[2:])[1]["attn"][0]
    pad = src.eq(d.pad()).unsqueeze(1).expand_as(attn)
    assert pad.any()
    assert attn.masked_select(pad).abs().max() == 0
    torch.testing.assert_close(attn.sum(-1), torch.ones_like(attn.sum(-1)))
    torch.testing.assert_close(attn[2][:, src[2].ne(d.pad())], alone[0], atol=1e-6, rtol=0)
