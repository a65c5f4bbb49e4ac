"""CoRe (Cao et al. 2017): the paper's equations against reference computations, and the CLIs."""
import argparse
import math
import re

import pytest
import torch
from fairseq.data import data_utils
from fairseq.sequence_generator import SequenceGenerator

import fairseq_wean  # noqa: F401  (registers the models and criteria)
from fairseq_wean.criterions.core_mode_loss import CoreModeLossCriterion, gold_copy_labels
from fairseq_wean.data.markers import marker
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.models.core_copy import CoreCopyModel, base_architecture
from fairseq_wean.modules.copy_mixture import (
    copy_log_probs,
    copy_mixture,
    log_mixture,
    masked_log,
    source_word_groups,
)
from model_checks import (
    assert_batched_beam_equals_single,
    assert_beam_scores_equal_teacher_forced_scores,
    assert_incremental_equals_full,
    scale_parameters,
)
from conftest import (
    USER_DIR, DataTask, FakeTask, cli, cli_concurrently, generated_hypotheses, make_dictionary, random_batch,
    train_args,
)


# ------------------------------------------------------------------------ helpers
def write_table(path, dictionary, pairs_per_word=3):
    """A deterministic table over w0..w19: w_i -> w_(7i mod 20), w_(3i+1 mod 20), ..."""
    words = [w for w in dictionary.symbols[dictionary.nspecial:] if w.startswith("w")]
    n = len(words)
    with open(path, "w") as f:
        for i, w in enumerate(words):
            for k, mult in enumerate((7, 3, 11)[:pairs_per_word]):
                f.write("{}\t{}\t{}\n".format(w, words[(mult * i + k) % n], pairs_per_word - k))
    return path


def build(dictionary, table, **overrides):
    args = argparse.Namespace(arch="core_copy", embed_dim=16, encoder_hidden_size=12,
                              decoder_hidden_size=14, decoder_out_embed_dim=10, dropout=0.0,
                              core_align_table=str(table), core_topk=2, core_num_frequent=3)
    for key, value in overrides.items():
        setattr(args, key, value)
    base_architecture(args)
    torch.manual_seed(0)
    return CoreCopyModel.build_model(args, FakeTask(dictionary))


@pytest.fixture
def dictionary():
    return make_dictionary(20)


@pytest.fixture
def table(tmp_path, dictionary):
    return write_table(tmp_path / "table.txt", dictionary)


def reference_vg(model, src_row):
    """V_G = A(X) u U for one sentence, by explicit loops over the table (eq. 8)."""
    d = model.decoder.dictionary
    vg = {d.unk(), d.eos()} | set(range(d.nspecial, d.nspecial + 3))
    for tok in src_row.tolist():
        for t in model.decoder.align_table[tok].tolist():
            if t != d.pad():
                vg.add(t)
    return vg


# ------------------------------------------------------------------------ model equations
@pytest.mark.parametrize("score", ["concat", "general"])
@pytest.mark.parametrize("share", [False, True])
def test_incremental_decoding_equals_full_forward(dictionary, table, score, share):
    model = build(dictionary, table, attention_score=score, share_decoder_input_output_embed=share,
                  decoder_out_embed_dim=16)
    assert_incremental_equals_full(model, random_batch(dictionary), atol=1e-5)


def test_batched_beam_search_equals_single_sentence(dictionary, table):
    model = build(dictionary, table)
    src, lengths, _, _ = random_batch(dictionary, bsz=4, src_len=6)
    hyps = assert_batched_beam_equals_single(model, dictionary, src, lengths, beam=3)
    assert all(len(h) == 3 for h in hyps)


def test_beam_scores_equal_a_teacher_forced_pass_while_the_batch_shrinks(dictionary, table):
    """s_t and the per-sentence cache (W_k h_j, the V_G masks and copy index, the sentence ids)
    follow their hypotheses through every reorder, also when finished sentences leave the batch."""
    model = scale_parameters(build(dictionary, table), 8.0)
    src, lengths, _, _ = random_batch(dictionary, bsz=6, src_len=7, seed=0)
    assert_beam_scores_equal_teacher_forced_scores(model, dictionary, src, lengths, beam=3, max_len_b=12)


def test_reused_full_vocabulary_buffer_gives_the_same_beam_search(dictionary, table):
    """The speed path (one cached -inf buffer per batch, E columns rewritten each step) finds the
    same hypotheses with the same scores as a fresh full-vocabulary tensor per step, also after
    finished sentences leave the batch (fewer rows than the buffer has)."""
    model = build(dictionary, table)
    model.eval()
    src, lengths, _, _ = random_batch(dictionary, bsz=6, src_len=6, seed=3)
    rows_seen = []
    reorder = model.decoder.reorder_incremental_state

    def recording_reorder(incremental_state, new_order):
        rows_seen.append(new_order.numel())
        return reorder(incremental_state, new_order)

    model.decoder.reorder_incremental_state = recording_reorder
    results = {}
    for reuse in (True, False):
        model.decoder.reuse_full_vocab_buffer = reuse
        generator = SequenceGenerator([model], dictionary, beam_size=3, max_len_b=12, min_len=1)
        with torch.no_grad():
            results[reuse] = generator.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
    assert len(set(rows_seen)) > 1, "no sentence finished early: the shrinking path was not exercised"
    for fast, slow in zip(results[True], results[False]):
        assert [h["tokens"].tolist() for h in fast] == [h["tokens"].tolist() for h in slow]
        torch.testing.assert_close(torch.stack([h["score"] for h in fast]),
                                   torch.stack([h["score"] for h in slow]), atol=0, rtol=0)


def test_incremental_step_fills_the_cached_buffer_with_minus_inf_outside_e(dictionary, table):
    model = build(dictionary, table)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary)
    state = {}
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=lengths)
        out = model.decoder(prev[:, :1], encoder_out=encoder_out, incremental_state=state)
        lprobs = model.get_normalized_probs(out, log_probs=True)
        buffer = out[1]["full_vocab_buffer"][0]
        assert lprobs.data_ptr() == buffer.data_ptr()  # written in place, no new B x |V| tensor
        outside = torch.ones(len(dictionary), dtype=torch.bool)
        outside[out[1]["vocab"][0]] = False
        assert torch.isneginf(lprobs[:, 0, outside]).all()
        torch.testing.assert_close(lprobs.exp().sum(-1), torch.ones(lprobs.shape[:2]))
        # the next step of the same batch reuses it
        out2 = model.decoder(prev[:, :2], encoder_out=encoder_out, incremental_state=state)
        assert out2[1]["full_vocab_buffer"][0] is buffer


def test_copy_distribution_sums_repeated_source_words(dictionary, table):
    """eq. 7 against explicit loops: p_C(w) = sum of alpha over the positions holding w."""
    model = build(dictionary, table)
    model.eval()
    w = dictionary.index
    src = torch.tensor([[w("w5"), w("w7"), w("w5"), w("w5"), dictionary.eos()],
                        [dictionary.pad(), dictionary.pad(), w("w9"), w("w9"), dictionary.eos()]])
    lengths = torch.tensor([5, 3])
    prev = torch.tensor([[dictionary.eos(), w("w5"), w("w7")], [dictionary.eos(), w("w9"), w("w1")]])
    enc = model.encoder(src, src_lengths=lengths)
    right_padded = enc["src_tokens"]
    _, _, attn = model.decoder.extract_features(prev, enc)
    vocab, _, copy_index = model.decoder.restricted_vocabulary(right_padded)
    log_pc = copy_log_probs(attn, copy_index, vocab.numel())

    expected = torch.zeros(2, 3, len(dictionary))
    for b in range(2):
        for t in range(3):
            for tau in range(src.size(1)):
                tok = right_padded[b, tau].item()
                if tok != dictionary.pad():
                    expected[b, t, tok] += attn[b, t, tau]
    got = torch.zeros(2, 3, len(dictionary))
    got[:, :, vocab] = log_pc.exp()
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    # w5 occurs three times in sentence 0: its copy probability is the sum of three weights
    assert got[0, :, w("w5")].gt(attn[0, :, :3].max(dim=-1).values).all()
    torch.testing.assert_close(got.sum(-1), torch.ones(2, 3), atol=1e-6, rtol=0)
    # padding gets nothing, the attention has no weight there either
    assert attn[1, :, 3:].eq(0).all()  # right-padded: sentence 1 is 3 tokens long


def test_restricted_softmax_equals_full_softmax_renormalised_over_vg(dictionary, table):
    """eq. 9 computed on gathered rows == full-vocabulary log-softmax renormalised over V_G."""
    model = build(dictionary, table)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary)
    dec = model.decoder
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        psi, _, _ = dec.extract_features(prev, enc)
        vocab, generative, _ = dec.restricted_vocabulary(enc["src_tokens"])
        weight, bias = dec.output_rows(vocab)
        log_pg = dec.generative_log_probs(psi, weight, bias, generative)
        full_logits = torch.nn.functional.linear(psi, dec.output_weight, dec.output_bias)
    assert vocab.numel() < len(dictionary)  # the batch's candidates, not the whole vocabulary
    for b in range(src.size(0)):
        vg = sorted(reference_vg(model, enc["src_tokens"][b]))
        assert sorted(vocab[generative[b]].tolist()) == vg
        full = torch.log_softmax(full_logits[b], dim=-1)
        renormalised = full[:, vg] - torch.logsumexp(full[:, vg], dim=-1, keepdim=True)
        got = torch.full((prev.size(1), len(dictionary)), float("-inf"))
        got[:, vocab] = log_pg[b]
        torch.testing.assert_close(got[:, vg], renormalised, atol=1e-5, rtol=0)
        outside = [i for i in range(len(dictionary)) if i not in vg]
        assert torch.isinf(got[:, outside]).all()


def test_mixture_equals_probability_space_reference():
    """eq. 11 in log space == log(lambda p_C + (1 - lambda) p_G) computed naively in float64."""
    g = torch.Generator().manual_seed(3)
    gate = torch.randn(2, 3, generator=g) * 2
    p_c = torch.softmax(torch.randn(2, 3, 6, generator=g), -1)
    p_g = torch.softmax(torch.randn(2, 3, 6, generator=g), -1)
    p_c[..., 4:] = 0  # not in the source
    p_c = p_c / p_c.sum(-1, keepdim=True)
    p_g[..., :1] = 0  # outside V_G
    p_g[..., 4] = 0   # word 4: in neither part
    p_g = p_g / p_g.sum(-1, keepdim=True)
    lam = torch.sigmoid(gate.double()).unsqueeze(-1)
    reference = torch.log(lam * p_c.double() + (1 - lam) * p_g.double())
    finite = torch.isfinite(reference)
    # with and without autograd recording (training and decoding)
    for requires_grad in (True, False):
        got = log_mixture(gate.clone().requires_grad_(requires_grad), p_c.log(), p_g.log())
        assert torch.equal(torch.isfinite(got), finite)
        torch.testing.assert_close(got[finite].double(), reference[finite], atol=1e-6, rtol=1e-6)
        assert torch.isfinite(got).any(-1).all()


def test_mixture_gradients_are_finite_where_both_parts_are_zero():
    gate = torch.tensor([[0.3]], requires_grad=True)
    log_pc = torch.tensor([[[0.0, float("-inf"), float("-inf")]]], requires_grad=True)
    log_pg = torch.tensor([[[float("-inf"), 0.0, float("-inf")]]], requires_grad=True)
    out = log_mixture(gate, log_pc, log_pg)
    assert torch.isinf(out[0, 0, 2])
    out[..., :2].sum().backward()
    for t in (gate, log_pc, log_pg):
        assert torch.isfinite(t.grad).all()


def test_mixture_backward_equals_autograd_of_the_probability_space_formula():
    """The hand-written backward of eq. 11 == autograd of log(lambda e^lc + (1 - lambda) e^lg) in
    float64, with words only in the source, only in V_G, and in neither (gradient 0 there)."""
    g = torch.Generator().manual_seed(5)
    gate = torch.randn(2, 3, generator=g, dtype=torch.float64) * 2
    lc = torch.log_softmax(torch.randn(2, 3, 6, generator=g, dtype=torch.float64), -1)
    lg = torch.log_softmax(torch.randn(2, 3, 6, generator=g, dtype=torch.float64), -1)
    lc[..., 3:] = float("-inf")  # words 3-5 not in the source
    lg[..., :1] = float("-inf")  # word 0 outside V_G
    lg[..., 5] = float("-inf")   # word 5 in neither part
    upstream = torch.randn(2, 3, 6, generator=g, dtype=torch.float64)
    ours = [t.clone().requires_grad_() for t in (gate, lc, lg)]
    log_mixture(*ours).backward(upstream)
    ref = [t.clone().requires_grad_() for t in (gate, lc, lg)]
    lam = torch.sigmoid(ref[0]).unsqueeze(-1)
    naive = torch.log(lam * ref[1][..., :5].exp() + (1 - lam) * ref[2][..., :5].exp())
    naive.backward(upstream[..., :5])
    torch.testing.assert_close(ours[0].grad, ref[0].grad)
    for mine, theirs in zip(ours[1:], ref[1:]):
        torch.testing.assert_close(mine.grad[..., :5], theirs.grad[..., :5])
        assert torch.equal(mine.grad[..., 5], torch.zeros_like(mine.grad[..., 5]))
    finite = [t.detach().clone().clamp_min(-30).requires_grad_() for t in (gate, lc, lg)]
    assert torch.autograd.gradcheck(log_mixture, finite)


def test_masked_log_gradient_is_zero_at_zero():
    p = torch.tensor([0.0, 0.25, 1.0], dtype=torch.float64, requires_grad=True)
    out = masked_log(p)
    assert torch.isneginf(out[0]) and out[1].item() == math.log(0.25)
    out[1:].sum().backward()
    torch.testing.assert_close(p.grad, torch.tensor([0.0, 4.0, 1.0], dtype=torch.float64))


def test_model_output_is_the_mixture_of_its_two_decoders(dictionary, table):
    model = build(dictionary, table)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary)
    dec = model.decoder
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        out = model.decoder(prev, enc)
        psi, gate, attn = dec.extract_features(prev, enc)
        vocab, generative, copy_index = dec.restricted_vocabulary(enc["src_tokens"])
        p_g = dec.generative_log_probs(psi, *dec.output_rows(vocab), generative).double().exp()
        p_c = copy_log_probs(attn, copy_index, vocab.numel()).double().exp()
        lam = torch.sigmoid(gate.double()).unsqueeze(-1)
        reference = (lam * p_c + (1 - lam) * p_g).log()
        full = model.get_normalized_probs(out, log_probs=True)
    torch.testing.assert_close(out[0].double(), reference, atol=1e-5, rtol=0)
    torch.testing.assert_close(full[:, :, vocab].double(), reference, atol=1e-5, rtol=0)
    assert full.exp().sum(-1).sub(1).abs().max() < 1e-5
    assert torch.isfinite(full).any(-1).all() and not torch.isnan(full).any()
    assert out[1]["attn"][0].shape == (src.size(0), prev.size(1), src.size(1))
    torch.testing.assert_close(out[1]["copy_gate"][0], torch.sigmoid(out[1]["copy_gate_logit"][0]))


def test_returned_attention_follows_the_input_padding(dictionary, table):
    """--print-alignment indexes "attn" with the left-padded src_tokens of the collater."""
    model = build(dictionary, table)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary, bsz=3, src_len=7)
    with torch.no_grad():
        attn = model(src, lengths, prev)[1]["attn"][0]
        last = src[2][src[2].ne(dictionary.pad())].unsqueeze(0)
        alone = model(last, lengths[2:], prev[2:])[1]["attn"][0]
    pads = int(src[2].eq(dictionary.pad()).sum())
    assert pads > 0 and attn[2, :, :pads].eq(0).all()
    torch.testing.assert_close(attn[2:, :, pads:], alone, atol=1e-6, rtol=0)
    torch.testing.assert_close(attn.sum(-1), torch.ones(attn.shape[:2]), atol=1e-6, rtol=0)


def test_temperature_keeps_a_distribution(dictionary, table):
    """SequenceGenerator divides the decoder output by T; get_normalized_probs renormalises."""
    model = build(dictionary, table)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary)
    with torch.no_grad():
        out = model(src, lengths, prev)
        hot = model.get_normalized_probs((out[0] / 2.0, out[1]), log_probs=True)
        cold = model.get_normalized_probs((out[0] / 0.5, out[1]), log_probs=True)
    for lp in (hot, cold):
        torch.testing.assert_close(lp.exp().sum(-1), torch.ones(lp.shape[:2]), atol=1e-5, rtol=0)
    assert hot.exp().max() < cold.exp().max()


def test_position_markers_are_copy_only_and_read_the_unk_embedding(tmp_path):
    d = make_dictionary(20)
    for i in range(3):
        d.add_symbol(marker(i))
    table = write_table(tmp_path / "t.txt", d)
    with open(table, "a") as f:
        f.write("w1\t<unk-0>\t9\n<unk-1>\tw2\t9\n")  # ignored: markers are copy-only
    model = build(d, table, core_num_frequent=100)
    m0, m1 = d.index("<unk-0>"), d.index("<unk-1>")
    emb = model.encoder.embed_tokens
    assert torch.equal(emb(torch.tensor([m0, m1])), emb(torch.tensor([d.unk(), d.unk()])))
    assert not model.decoder.frequent_mask[m0] and m0 not in model.decoder.align_table
    src = torch.tensor([[d.index("w1"), m1, d.eos()]])
    vocab, generative, _ = model.decoder.restricted_vocabulary(src)
    assert m1 in vocab.tolist() and not generative[0, vocab.tolist().index(m1)]
    lp = model.get_normalized_probs(model(src, torch.tensor([3]), torch.tensor([[d.eos()]])), True)
    assert torch.isfinite(lp[0, 0, m1]) and torch.isinf(lp[0, 0, m0])


def decoder_internals(model, prev, enc):
    """extract_features' outputs and the s_t and c_t it computed (caught by forward hooks)."""
    caught = {}

    def catch(name):
        def hook(module, inputs, output):
            caught[name] = output[0]  # returns None: the output is left as it is
        return hook

    hooks = [model.decoder.rnn.register_forward_hook(catch("states")),
             model.decoder.attention.register_forward_hook(catch("context"))]
    try:
        features, gate_logit, attn = model.decoder.extract_features(prev, enc)
    finally:
        for h in hooks:
            h.remove()
    return features, gate_logit, attn, caught["states"], caught["context"]


@pytest.mark.parametrize("score", ["concat", "general"])
def test_attention_and_context_by_hand(dictionary, table, score):
    """eq. 5-6 one sentence, one step and one source word at a time: eta(s_t, h_tau) =
    v^T tanh(W_q s_t + W_k h_tau) (the paper's additive score; ``general``: s_t^T W_a h_tau),
    alpha_t = softmax over the sentence's words only, c_t = sum_tau alpha_t,tau h_tau. Compared
    with the attention the model returns (right-padded, and in the input's left-padded order)
    and with the context that psi and the output read (caught by a hook)."""
    model = build(dictionary, table, attention_score=score)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary, bsz=4, src_len=7)
    dec, score_fn = model.decoder, model.decoder.attention.score
    with torch.no_grad():
        # far from the uniform(-0.1, 0.1) init (states and scores near 0, alpha near uniform), so
        # that a wrong nonlinearity (sigmoid for tanh, a tanh too many) is not lost in the tolerance
        g = torch.Generator().manual_seed(3)
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
        enc = model.encoder(src, src_lengths=lengths)
        _, _, attn, states, context = decoder_internals(model, prev, enc)
        returned = model.decoder(prev, enc)[1]["attn"][0]
    h = enc["encoder_states"]  # right-padded
    assert h.size(-1) == 24 and states.size(-1) == 14  # biGRU 2 x 12 against a 14-unit decoder
    spread = []
    for b in range(src.size(0)):
        n = int(lengths[b])
        pads = src.size(1) - n
        for t in range(prev.size(1)):
            s_t = states[b, t]
            if score == "concat":
                eta = torch.stack([
                    (score_fn.v * torch.tanh(score_fn.query_proj.weight @ s_t + score_fn.key_proj.weight @ h[b, tau])).sum()
                    for tau in range(n)])
            else:
                eta = torch.stack([(score_fn.query_to_key.weight @ s_t * h[b, tau]).sum() for tau in range(n)])
            alpha = torch.exp(eta - eta.max())
            alpha = alpha / alpha.sum()
            c_t = sum(alpha[tau] * h[b, tau] for tau in range(n))
            torch.testing.assert_close(attn[b, t, :n], alpha, atol=1e-5, rtol=1e-5)
            assert attn[b, t, n:].eq(0).all()  # no weight on padding
            torch.testing.assert_close(returned[b, t, pads:], alpha, atol=1e-5, rtol=1e-5)
            assert returned[b, t, :pads].eq(0).all()
            torch.testing.assert_close(context[b, t], c_t, atol=1e-5, rtol=1e-5)
            spread.append(float(alpha.max() - alpha.min()))
    assert max(spread) > 0.2  # alpha is not close to uniform: the test sees the score function


@pytest.mark.parametrize("psi", ["tanh", "affine"])
def test_psi_reads_the_previous_word_the_state_and_the_context(dictionary, table, psi):
    """psi(y_t-1, s_t, c_t) of eq. 9 by explicit sums: tanh(W[e(y_t-1); s_t; c_t] + b), or the
    affine map alone with --core-psi affine."""
    model = build(dictionary, table, core_psi=psi)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary)
    dec = model.decoder
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        features, _, _, states, context = decoder_internals(model, prev, enc)
        parts = [dec.embed_tokens(prev), states, context]
        W, b = dec.readout.weight, dec.readout.bias
        reference = b.clone().expand(*prev.shape, -1).clone()
        start = 0
        for part in parts:  # W [e; s; c] = W_e e + W_s s + W_c c
            reference += part @ W[:, start:start + part.size(-1)].t()
            start += part.size(-1)
        if psi == "tanh":
            reference = torch.tanh(reference)
    assert start == W.size(1) and features.shape == (*prev.shape, 10)
    torch.testing.assert_close(features, reference, atol=1e-6, rtol=0)


@pytest.mark.parametrize("psi", ["tanh", "affine"])
def test_generative_logits_are_w_y_psi_plus_the_word_bias(dictionary, table, psi):
    """eq. 9 word by word: p_G(y) = exp(w_y . psi + b_y) / sum over V_G, with b_y trained (tanh,
    dl4mt's output layer) or absent (affine, eq. 9 as written)."""
    model = build(dictionary, table, core_psi=psi)
    model.eval()
    dec = model.decoder
    if psi == "tanh":
        with torch.no_grad():
            dec.output_bias.normal_(generator=torch.Generator().manual_seed(2))  # not its zero init
    else:
        assert "decoder.output_bias" not in dict(model.named_parameters())
        assert "decoder.output_bias" not in model.state_dict() and dec.output_bias.eq(0).all()
    src, lengths, prev, _ = random_batch(dictionary)
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        psi_t, _, _ = dec.extract_features(prev, enc)
        vocab, generative, _ = dec.restricted_vocabulary(enc["src_tokens"])
        log_pg = dec.generative_log_probs(psi_t, *dec.output_rows(vocab), generative)
    for b in range(src.size(0)):
        vg = vocab[generative[b]].tolist()
        for t in range(prev.size(1)):
            logits = torch.tensor([float((dec.output_weight[y] * psi_t[b, t]).sum())
                                   + (float(dec.output_bias[y]) if psi == "tanh" else 0.0) for y in vg])
            expected = logits - torch.logsumexp(logits, 0)
            got = log_pg[b, t, generative[b]]
            torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
            assert torch.isneginf(log_pg[b, t, ~generative[b]]).all()


def test_gate_is_the_sigmoid_of_w_c_times_the_decoder_state(dictionary, table):
    """eq. 10: lambda_t = sigma(w_C s_t), no bias; s_t is the GRU output that also attends."""
    model = build(dictionary, table)
    model.eval()
    src, lengths, prev, _ = random_batch(dictionary)
    dec = model.decoder
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        _, gate_logit, _, states, _ = decoder_internals(model, prev, enc)
        out = model.decoder(prev, enc)
    w_c = dec.copy_gate.weight.squeeze(0)
    assert dec.copy_gate.bias is None and w_c.shape == (states.size(-1),)
    reference = (states * w_c).sum(-1)
    torch.testing.assert_close(gate_logit, reference, atol=1e-6, rtol=0)
    torch.testing.assert_close(out[1]["copy_gate"][0], 1 / (1 + torch.exp(-reference)), atol=1e-6, rtol=0)


def test_affine_psi_is_affine_and_tanh_psi_is_not(dictionary, table):
    """--core-psi affine: psi(a u + (1 - a) v) = a psi(u) + (1 - a) psi(v) for any inputs u, v."""
    g = torch.Generator().manual_seed(4)
    u = [torch.randn(2, 3, n, generator=g) * 3 for n in (16, 14, 24)]  # e(y_t-1), s_t, c_t
    v = [torch.randn(2, 3, n, generator=g) * 3 for n in (16, 14, 24)]
    a = 0.3
    mixed = [a * x + (1 - a) * y for x, y in zip(u, v)]
    for psi in ("affine", "tanh"):
        dec = build(dictionary, table, core_psi=psi).decoder
        with torch.no_grad():
            lhs = dec.readout_features(*mixed)
            rhs = a * dec.readout_features(*u) + (1 - a) * dec.readout_features(*v)
        assert lhs.shape == (2, 3, 10)
        if psi == "affine":
            torch.testing.assert_close(lhs, rhs, atol=1e-5, rtol=0)
        else:
            assert (lhs - rhs).abs().max() > 1e-2


def test_affine_psi_model_shapes_gradients_and_incremental_decoding(dictionary, table):
    model = build(dictionary, table, core_psi="affine", dropout=0.1)
    dec = model.decoder
    assert dec.output_layer_num_parameters() == len(dictionary) * 10  # no per-word bias
    model.train()
    sample = make_sample(dictionary)
    loss, _, _ = criterion(dictionary, label_smoothing=0.1)(model, sample)
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0
               for p in model.parameters())
    out = model(**sample["net_input"])
    assert out[0].shape[:2] == sample["target"].shape and out[0].size(2) == out[1]["vocab"][0].numel()
    fresh = build(dictionary, table, core_psi="affine")
    assert_incremental_equals_full(fresh, random_batch(dictionary), atol=1e-5)


def test_unknown_option_values_are_refused(dictionary, table):
    with pytest.raises(FairseqWeanError, match="--core-psi 'relu': choose one of tanh, affine"):
        build(dictionary, table, core_psi="relu")
    with pytest.raises(FairseqWeanError, match="--core-frequent-from 'source': choose one of joined, target"):
        build(dictionary, table, core_frequent_from="source")


# ------------------------------------------------------------------------ U (eq. 8)
def target_side_model(data, tmp_path, num_frequent, **overrides):
    from fairseq.data import Dictionary

    d = Dictionary.load(str(data / "dict.src.txt"))
    args = argparse.Namespace(arch="core_copy", embed_dim=16, encoder_hidden_size=12,
                              decoder_hidden_size=14, decoder_out_embed_dim=10, dropout=0.0,
                              core_align_table=str(write_table(tmp_path / "table.txt", d)), core_topk=2,
                              core_num_frequent=num_frequent, core_frequent_from="target")
    for key, value in overrides.items():
        setattr(args, key, value)
    torch.manual_seed(0)
    return CoreCopyModel.build_model(args, DataTask(d, data)), d, args


def test_target_side_u_is_the_most_frequent_training_target_words(skewed_data_bin, tmp_path):
    """--core-frequent-from target: U = the N words most frequent in the training targets (the
    paper's U), plus unk and eos; the joined dictionary's order gives another set."""
    from collections import Counter

    from fairseq_wean.modules.restricted_vocab import frequent_word_mask

    data, targets, _ = skewed_data_bin
    n = 8
    model, d, _ = target_side_model(data, tmp_path, n)
    counts = Counter(w for t in targets for w in t)
    ranked = sorted(counts, key=lambda w: (-counts[w], d.index(w)))
    assert counts[ranked[n - 1]] > counts[ranked[n]]  # no tie at the cut: the set is unambiguous
    expected = {d.index(w) for w in ranked[:n]} | {d.unk(), d.eos()}
    got = set(model.decoder.frequent_mask.nonzero().squeeze(1).tolist())
    assert got == expected
    joined = set(frequent_word_mask(d, n).nonzero().squeeze(1).tolist())
    assert any(d[i].startswith("s") for i in joined) and len(joined - got) >= 2  # the default differs
    # V_G of a sentence holds that U
    vocab, generative, _ = model.decoder.restricted_vocabulary(torch.tensor([[d.index("w3"), d.eos()]]))
    assert expected <= set(vocab[generative[0]].tolist())


def test_target_side_u_is_stored_in_the_checkpoint(skewed_data_bin, tmp_path):
    data, _, _ = skewed_data_bin
    model, d, args = target_side_model(data, tmp_path, 8)
    assert "decoder.frequent_mask" in model.state_dict()
    assert args.core_align_table_in_checkpoint
    # fairseq-generate rebuilds from the saved arguments, with no training data at hand
    torch.manual_seed(1)
    reloaded = CoreCopyModel.build_model(args, DataTask(d, tmp_path / "no-data"))
    assert not torch.equal(reloaded.decoder.frequent_mask, model.decoder.frequent_mask)  # a placeholder ...
    reloaded.load_state_dict(model.state_dict())
    assert torch.equal(reloaded.decoder.frequent_mask, model.decoder.frequent_mask)  # ... until loaded
    # the default (joined) U is not saved: checkpoints of earlier versions still load
    d20 = make_dictionary(20)
    assert "decoder.frequent_mask" not in build(d20, write_table(tmp_path / "t20", d20)).state_dict()


def test_target_side_u_without_training_data_names_the_fix(skewed_data_bin, tmp_path):
    data, _, _ = skewed_data_bin
    with pytest.raises(FairseqWeanError, match=r"no binarized training target side missing.src-tgt.tgt.*"
                                               r"fairseq-preprocess --trainpref.*--core-frequent-from joined"):
        target_side_model(data, tmp_path, 6, train_subset="missing")
    from fairseq.data import Dictionary

    d = Dictionary.load(str(data / "dict.src.txt"))
    args = argparse.Namespace(arch="core_copy", core_align_table=str(write_table(tmp_path / "t2", d)),
                              core_frequent_from="target")
    with pytest.raises(FairseqWeanError, match="needs the translation task's data directory"):
        CoreCopyModel.build_model(args, FakeTask(d))


def test_target_side_u_through_fairseqs_own_task_setup(skewed_data_bin, tmp_path):
    """The options as fairseq-train parses them, the task as fairseq builds it (task.cfg)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from fairseq_wean.modules.restricted_vocab import frequent_mask_from_counts

    data, _, _ = skewed_data_bin
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, input_args=[
        str(data), "--user-dir", USER_DIR, "--arch", "core_copy", "--criterion", "core_mode_loss",
        "--core-align-table", str(write_table(tmp_path / "t.txt", make_dictionary(20))),
        "--core-frequent-from", "target", "--core-psi", "affine", "--core-num-frequent", "8",
        "--embed-dim", "8", "--encoder-hidden-size", "8", "--decoder-hidden-size", "8",
        "--decoder-out-embed-dim", "8", "--cpu"])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    d = task.source_dictionary
    task.load_dataset("train")
    train = task.datasets["train"]
    counts = torch.zeros(len(d), dtype=torch.long)
    for i in range(len(train)):
        counts += torch.bincount(train[i]["target"], minlength=len(d))
    assert torch.equal(model.decoder.frequent_mask, frequent_mask_from_counts(d, counts, 8))
    assert model.decoder.psi_kind == "affine" and cfg.model.core_frequent_from == "target"


# ------------------------------------------------------------------------ alignment table
def test_table_is_a_persistent_buffer_and_the_checkpoint_is_self_contained(dictionary, table, tmp_path):
    model = build(dictionary, table)
    model.eval()
    assert "decoder.align_table" in model.state_dict()
    assert model.decoder.align_table.ne(dictionary.pad()).any()
    # Rebuilt from the saved arguments (as fairseq-generate does) with the table file gone.
    args = argparse.Namespace(arch="core_copy", embed_dim=16, encoder_hidden_size=12,
                              decoder_hidden_size=14, decoder_out_embed_dim=10, dropout=0.0,
                              core_align_table=str(tmp_path / "gone.txt"), core_topk=2,
                              core_num_frequent=3, core_align_table_in_checkpoint=True)
    torch.manual_seed(1)
    reloaded = CoreCopyModel.build_model(args, FakeTask(dictionary))
    reloaded.load_state_dict(model.state_dict())
    reloaded.eval()
    src, lengths, prev, _ = random_batch(dictionary)
    with torch.no_grad():
        a = model.get_normalized_probs(model(src, lengths, prev), True)
        b = reloaded.get_normalized_probs(reloaded(src, lengths, prev), True)
    torch.testing.assert_close(a, b)


def test_table_errors_name_the_fix(dictionary, tmp_path):
    with pytest.raises(FairseqWeanError, match="needs --core-align-table"):
        build(dictionary, "", core_align_table=None)
    with pytest.raises(FairseqWeanError, match="no such file.*fairseq-wean-align-table"):
        build(dictionary, tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("w1\tw2\t3\nw1 w3 2\n")
    with pytest.raises(FairseqWeanError, match="line 2 is malformed"):
        build(dictionary, bad)
    unknown = tmp_path / "unknown.txt"
    unknown.write_text("w1\tzebra\t3\nyak\tw2\t1\n")
    with pytest.raises(FairseqWeanError, match=r"2 word\(s\) are not in the dictionary \(e.g. yak zebra\)"):
        build(dictionary, unknown)


def test_topk_keeps_the_best_entries_in_file_order(dictionary, tmp_path):
    table = tmp_path / "t.txt"
    table.write_text("w3\tw1\t3\nw3\tw10\t2\nw3\tw13\t1\nw4\tw4\t5\n")
    model = build(dictionary, table, core_topk=2)
    w = dictionary.index
    assert model.decoder.align_table[w("w3")].tolist() == [w("w1"), w("w10")]
    assert model.decoder.align_table[w("w4")].tolist() == [w("w4"), dictionary.pad()]
    assert model.decoder.align_table[dictionary.pad()].eq(dictionary.pad()).all()


def test_non_joined_dictionary_is_refused(table):
    args = argparse.Namespace(arch="core_copy", core_align_table=str(table))
    with pytest.raises(FairseqWeanError, match="--joined-dictionary"):
        CoreCopyModel.build_model(args, FakeTask(make_dictionary(20), make_dictionary(25)))


# ------------------------------------------------------------------------ criterion
def make_sample(dictionary, bsz=4, seed=0):
    """A training batch whose targets have different lengths (sentence b: b words fewer), padded
    as fairseq's collater pads them, so that the criterion's masking of padding is exercised."""
    src, lengths, _, full_target = random_batch(dictionary, bsz=bsz, seed=seed)
    eos = torch.tensor([dictionary.eos()])
    rows = [torch.cat([full_target[b, : full_target.size(1) - 1 - b], eos]) for b in range(bsz)]
    target = data_utils.collate_tokens(rows, dictionary.pad(), dictionary.eos())
    prev = data_utils.collate_tokens(rows, dictionary.pad(), dictionary.eos(), move_eos_to_beginning=True)
    assert target.eq(dictionary.pad()).any()
    return {
        "net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
        "target": target,
        "ntokens": int(target.ne(dictionary.pad()).sum()),
    }


def criterion(dictionary, **kw):
    return CoreModeLossCriterion(FakeTask(dictionary), **kw)


def test_gold_copy_labels_follow_eq12(dictionary):
    w, d = dictionary.index, dictionary
    src = torch.tensor([[d.pad(), w("w1"), d.unk(), w("w2"), d.eos()]])
    tgt = torch.tensor([[w("w2"), w("w3"), d.unk(), w("w1"), d.eos(), d.pad()]])
    assert gold_copy_labels(tgt, src, d).tolist() == [[True, False, False, True, False, False]]


def test_loss_is_nll_plus_weighted_mode_bce(dictionary, table):
    model = build(dictionary, table)
    model.eval()
    sample = make_sample(dictionary)
    with torch.no_grad():
        loss1, size, log = criterion(dictionary, mode_loss_weight=1.0)(model, sample)
        loss3, _, log3 = criterion(dictionary, mode_loss_weight=3.0)(model, sample)
        # Reference: fairseq's NLL on the full-vocabulary log-probs, BCE by hand.
        out = model(**sample["net_input"])
        lp = model.get_normalized_probs(out, log_probs=True)
        target = sample["target"]
        mask = target.ne(dictionary.pad())
        picked = lp.gather(2, target.unsqueeze(2)).squeeze(2)
        unk_lp = lp[:, :, dictionary.unk()]
        picked = torch.where(torch.isfinite(picked), picked, unk_lp)
        nll = -(picked * mask).sum()
        lam = torch.sigmoid(out[1]["copy_gate_logit"][0])
        gold = gold_copy_labels(target, sample["net_input"]["src_tokens"], dictionary).float()
        bce = -((gold * lam.log() + (1 - gold) * (1 - lam).log()) * mask).sum()
    assert size == sample["ntokens"]
    torch.testing.assert_close(log["nll_loss"], nll, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(log["mode_loss"], bce, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(loss1, nll + bce, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(loss3, nll + 3 * bce, atol=1e-4, rtol=1e-5)
    assert set(log) == set(log3)
    assert log["gold_copy"] == gold.sum() and 0 <= log["pred_copy"] <= sample["ntokens"]


def test_target_in_neither_part_gives_finite_loss_and_gradients(dictionary, tmp_path):
    """A target word outside V_G and the source: scored as unk, no inf, no NaN anywhere."""
    table = tmp_path / "t.txt"
    table.write_text("w1\tw2\t1\n")
    model = build(dictionary, table, core_num_frequent=1)  # U = {w0, unk, eos}
    w, d = dictionary.index, dictionary
    src = torch.tensor([[w("w1"), w("w5"), d.eos()]])
    target = torch.tensor([[w("w2"), w("w17"), w("w5"), d.eos()]])  # w17: in neither part
    prev = torch.tensor([[d.eos(), w("w2"), w("w17"), w("w5")]])
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([3]), "prev_output_tokens": prev},
              "target": target, "ntokens": 4}
    out = model(**sample["net_input"])
    full = model.get_normalized_probs(out, log_probs=True)
    assert torch.isinf(full[0, 1, w("w17")])
    assert torch.isfinite(full).any(-1).all() and not torch.isnan(full).any()
    for eps in (0.0, 0.1):
        model.zero_grad()
        loss, _, log = criterion(dictionary, label_smoothing=eps)(model, sample)
        assert torch.isfinite(loss)
        loss.backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_every_parameter_gets_a_gradient_every_step(dictionary, table):
    """Default --ddp-backend (find_unused_parameters=False) needs this."""
    model = build(dictionary, table, dropout=0.1)
    model.train()
    loss, _, _ = criterion(dictionary, label_smoothing=0.1)(model, make_sample(dictionary))
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing


def test_label_smoothing_spreads_over_the_producible_words(dictionary, table):
    """eps over the n words of the row's support (fairseq's formula with n for |V|), finite."""
    model = build(dictionary, table)
    model.eval()
    sample = make_sample(dictionary)
    eps = 0.1
    with torch.no_grad():
        _, _, log0 = criterion(dictionary, mode_loss_weight=0.0)(model, sample)
        smooth, _, log1 = criterion(dictionary, mode_loss_weight=0.0, label_smoothing=eps)(model, sample)
        full = model.get_normalized_probs(model(**sample["net_input"]), log_probs=True)
    expected = 0.0
    for b, row in enumerate(sample["target"]):
        for t, y in enumerate(row.tolist()):
            if y == dictionary.pad():
                continue
            lp = full[b, t]
            support = torch.isfinite(lp)
            n = int(support.sum())
            nll = -lp[y] if torch.isfinite(lp[y]) else -lp[dictionary.unk()]
            eps_i = eps / (n - 1)
            expected += (1 - eps - eps_i) * nll + eps_i * -lp[support].sum()
    assert torch.isfinite(smooth)
    torch.testing.assert_close(smooth, torch.as_tensor(expected, dtype=smooth.dtype), atol=1e-3, rtol=1e-5)
    assert log0["nll_loss"] == log1["nll_loss"]


def test_reduce_metrics_logs_ratios(dictionary, table):
    from fairseq import metrics

    model = build(dictionary, table)
    crit = criterion(dictionary)
    logs = [crit(model, make_sample(dictionary, seed=s))[2] for s in (0, 1)]
    assert all(set(log) == set(logs[0]) for log in logs)
    with metrics.aggregate() as agg:
        CoreModeLossCriterion.reduce_metrics(logs)
        values = agg.get_smoothed_values()
    ntok = sum(log["ntokens"] for log in logs)
    assert values["gold_copy_ratio"] == pytest.approx(sum(float(l["gold_copy"]) for l in logs) / ntok, abs=1e-3)
    assert values["nll_loss"] == pytest.approx(sum(float(l["nll_loss"]) for l in logs) / ntok / math.log(2), abs=1e-3)
    assert {"loss", "nll_loss", "mode_loss", "ppl", "gold_copy_ratio", "pred_copy_ratio"} <= set(values)


def test_criterion_refuses_a_model_without_copy_gate(dictionary):
    from fairseq_wean.models.wean_lstm import WeanLSTMModel, base_architecture as wean_arch

    args = argparse.Namespace(arch="wean_lstm", embed_dim=8, encoder_hidden_size=8, decoder_hidden_size=8)
    wean_arch(args)
    model = WeanLSTMModel.build_model(args, FakeTask(dictionary))
    with pytest.raises(FairseqWeanError, match="--arch core_copy"):
        criterion(dictionary)(model, make_sample(dictionary))


# ------------------------------------------------------------------------ end to end (real CLIs)
CORE_SIZES = ["--embed-dim", 32, "--encoder-hidden-size", 32, "--decoder-hidden-size", 32,
              "--decoder-out-embed-dim", 32, "--dropout", 0.1, "--core-num-frequent", 10,
              "--core-topk", 5, "--criterion", "core_mode_loss", "--max-tokens", 400]


def write_named_pairs(prefix, n, seed):
    """Like conftest.write_parallel, plus a name seen once (never again) that the target copies."""
    import random

    rng = random.Random(seed)
    words = ["w{}".format(i) for i in range(40)]
    with open(prefix + ".src", "w") as fs, open(prefix + ".tgt", "w") as ft:
        for _ in range(n):
            sent = [rng.choice(words) for _ in range(rng.randint(3, 8))]
            sent.insert(rng.randint(0, len(sent)), "name{}".format(rng.randint(0, 10 ** 6)))
            fs.write(" ".join(sent) + "\n")
            ft.write(" ".join(w for w in sent if not (w[0] == "w" and int(w[1:]) < 10)) + "\n")


def prepare_marked_data(work):
    """The README's marker recipe up to fairseq-preprocess: marked text, dict.txt, align table."""
    import sys

    from conftest import REPO
    from fairseq_wean.cli import align_table

    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from preprocess import unk_markers

    raw, marked = work / "named", work / "named-marked"
    raw.mkdir()
    marked.mkdir()
    for split, n, seed in (("train", 400, 1), ("valid", 21, 2), ("test", 13, 3)):
        write_named_pairs(str(raw / split), n, seed)
    vocab = work / "named-dict.txt"
    unk_markers.main(["vocab", "--src", str(raw / "train.src"), "--tgt", str(raw / "train.tgt"),
                      "--min-count", "3", "--markers", "50", "--out", str(vocab)])
    for split in ("train", "valid", "test"):
        unk_markers.main(["encode", "--vocab", str(vocab), "--src", str(raw / (split + ".src")),
                          "--tgt", str(raw / (split + ".tgt")), "--src-out", str(marked / (split + ".src")),
                          "--tgt-out", str(marked / (split + ".tgt"))])
    align_table.cli_main(["--src", str(marked / "train.src"), "--tgt", str(marked / "train.tgt"),
                          "--topk", "10", "--out", str(work / "named.table")])
    sources = (raw / "test.src").read_text().splitlines()[:5]
    (work / "named-in.txt").write_text("\n".join(sources) + "\n")
    unk_markers.main(["encode", "--vocab", str(vocab), "--src", str(work / "named-in.txt"),
                      "--src-out", str(work / "named-in.pg.txt")])
    return raw, marked, vocab, unk_markers


@pytest.fixture(scope="module")
def core_run(raw_dir, data_bin, data_bin_unjoined, tmp_path_factory):
    """All CLI runs of this file, in three stages of concurrent processes (2 shared CPU cores).

    1. the align table by the real command; fairseq-train error paths; fairseq-preprocess of the
       marker data set (names seen once, copied by the target);
    2. fairseq-train core_copy on both data sets;
    3. with both table files moved away: fairseq-generate and fairseq-interactive from the
       checkpoints alone.
    """
    work = tmp_path_factory.mktemp("core")
    table = work / "align.table"
    named_raw, named_marked, named_vocab, unk_markers = prepare_marked_data(work)
    named_bin = work / "named-bin"
    stage1 = cli_concurrently([
        ("fairseq-wean-align-table", ["--src", raw_dir / "train.src", "--tgt", raw_dir / "train.tgt",
                                      "--topk", 5, "--out", table]),
        ("fairseq-train", train_args(data_bin_unjoined, work / "e1", "core_copy", *CORE_SIZES,
                                     "--core-align-table", table, epochs=1), {"check": False}),
        ("fairseq-train", train_args(data_bin, work / "e2", "core_copy", *CORE_SIZES,
                                     "--core-align-table", work / "missing.table", epochs=1), {"check": False}),
        ("fairseq-preprocess", ["--source-lang", "src", "--target-lang", "tgt", "--workers", 1,
                                "--trainpref", named_marked / "train", "--validpref", named_marked / "valid",
                                "--testpref", named_marked / "test", "--destdir", named_bin,
                                "--joined-dictionary", "--srcdict", named_vocab]),
    ])
    save_dir, named_ck = work / "ck", work / "named-ck"
    train, _ = cli_concurrently([
        ("fairseq-train", train_args(data_bin, save_dir, "core_copy", *CORE_SIZES,
                                     "--core-align-table", table, epochs=3)),
        ("fairseq-train", train_args(named_bin, named_ck, "core_copy", *CORE_SIZES,
                                     "--core-align-table", work / "named.table", epochs=8)),
    ])
    table_text = table.read_text()
    table.unlink()
    (work / "named.table").unlink()
    lines = open(raw_dir / "test.src").read().splitlines()[:3]
    gen, inter, named = cli_concurrently([
        ("fairseq-generate", [data_bin, "--user-dir", USER_DIR, "--path", save_dir / "checkpoint_best.pt",
                              "--gen-subset", "test", "--beam", 5, "--cpu", "--batch-size", 5,
                              "--print-alignment"]),
        ("fairseq-interactive", [data_bin, "--user-dir", USER_DIR, "--path", save_dir / "checkpoint_best.pt",
                                 "--source-lang", "src", "--target-lang", "tgt", "--beam", 3, "--cpu"],
         {"input": "\n".join(lines) + "\n"}),
        ("fairseq-interactive", [named_bin, "--user-dir", USER_DIR, "--path", named_ck / "checkpoint_best.pt",
                                 "--source-lang", "src", "--target-lang", "tgt", "--beam", 5, "--cpu"],
         {"input": (work / "named-in.pg.txt").read_text()}),
    ])
    return {"work": work, "table_text": table_text, "train_log": train.stdout + train.stderr,
            "unjoined": stage1[1], "missing": stage1[2], "generate": gen, "interactive": inter,
            "named": named, "named_raw": named_raw, "unk_markers": unk_markers}


def test_align_table_built_by_the_real_command(core_run):
    lines = core_run["table_text"].splitlines()
    assert lines and all(len(line.split("\t")) == 3 for line in lines)
    # the simplification data copies w10..w39: each aligns to itself among its top entries
    best = {}
    for line in lines:
        src, tgt, _ = line.split("\t")
        best.setdefault(src, []).append(tgt)
    copied = [w for w in best if int(w[1:]) >= 10]
    assert copied and sum(w in best[w] for w in copied) >= 0.8 * len(copied)


def test_training_logs_the_core_metrics_and_learns(core_run):
    log = core_run["train_log"]
    epochs = re.findall(r"\| train \| epoch (\d+) \| loss ([\d.]+) \| nll_loss ([\d.]+) \| mode_loss ([\d.]+)", log)
    assert len(epochs) == 3, log[-2000:]
    assert float(epochs[-1][1]) < float(epochs[0][1])
    assert "gold_copy_ratio" in log and "pred_copy_ratio" in log and "ppl" in log
    assert "nan" not in log.lower().split("| train |")[-1]


def test_generate_and_interactive_from_the_checkpoint_alone(core_run):
    """The table files were removed before decoding: the checkpoint carries A."""
    gen, inter = core_run["generate"], core_run["interactive"]
    hyps = generated_hypotheses(gen.stdout)
    assert sorted(hyps) == list(range(13))  # 13: not a multiple of 8
    alignments = [line for line in gen.stdout.splitlines() if line.startswith("A-")]
    assert len(alignments) == 13 and all(re.match(r"A-\d+\t(\d+-\d+ ?)+$", a) for a in alignments)
    assert len([line for line in inter.stdout.splitlines() if line.startswith("H-")]) == 3
    # The model copies: most hypothesis words occur in their source.
    sources = {int(l.split("\t")[0][2:]): l.split("\t")[1].split()
               for l in gen.stdout.splitlines() if l.startswith("S-")}
    words = [(w, i) for i, h in hyps.items() for w in h.split()]
    assert words and sum(w in sources[i] for w, i in words) >= 0.5 * len(words)


def test_unseen_words_are_copied_through_position_markers(core_run):
    """The README recipe: every test name is unseen in training, and comes back after decode."""
    work, raw, unk_markers = core_run["work"], core_run["named_raw"], core_run["unk_markers"]
    hyps = [line.split("\t")[2] for line in core_run["named"].stdout.splitlines() if line.startswith("H-")]
    assert len(hyps) == 5
    (work / "named-hyp.pg.txt").write_text("\n".join(hyps) + "\n")
    unk_markers.main(["decode", "--src", str(work / "named-in.txt"), "--hyp", str(work / "named-hyp.pg.txt"),
                      "--out", str(work / "named-hyp.txt")])
    decoded = (work / "named-hyp.txt").read_text().splitlines()
    sources = (work / "named-in.txt").read_text().splitlines()
    names = [next(w for w in s.split() if w.startswith("name")) for s in sources]
    training_words = set((raw / "train.src").read_text().split())
    assert not any(name in training_words for name in names)
    assert sum(name in hyp.split() for name, hyp in zip(names, decoded)) >= 4, decoded
    assert not any("<unk" in hyp for hyp in decoded)


def test_error_paths_through_fairseq_train(core_run):
    unjoined, missing = core_run["unjoined"], core_run["missing"]
    assert unjoined.returncode == 1 and "fairseq-wean: error:" in unjoined.stderr
    assert "--joined-dictionary" in unjoined.stderr and "Traceback" not in unjoined.stderr
    assert missing.returncode == 1 and "no such file" in missing.stderr
    assert "fairseq-wean-align-table" in missing.stderr


@pytest.mark.parametrize("share", [False, True])
def test_output_layer_parameters_are_the_vocabulary_rows(dictionary, table, share):
    model = build(dictionary, table, share_decoder_input_output_embed=share, decoder_out_embed_dim=16)
    dec = model.decoder
    expected = len(dictionary) * (0 if share else 16) + len(dictionary)  # weights (untied) + bias
    assert dec.output_layer_num_parameters() == expected


def test_copy_mixture_equals_the_dense_mixture_and_its_gradients():
    """copy_mixture (eq. 7 + 11 at the source positions only) against the dense formula
    log_mixture(z, copy_log_probs(...), log p_G): values bit for bit, -inf at the same places, and
    the same gradients (within 1e-6) for z, alpha and log p_G. The batch has a word repeated in a
    sentence (its probabilities add up, its gradient counts once), right padding mapped to column 0
    (as searchsorted maps <pad>), a source word outside V_G, and a real position whose alpha is 0
    exactly on a word outside V_G (both parts -inf: a zero gradient, not NaN)."""
    torch.manual_seed(0)
    B, T, S, N = 3, 4, 6, 9
    pad = torch.zeros(B, S, dtype=torch.bool)
    pad[1, 4:] = True
    copy_index = torch.tensor([[2, 5, 2, 7, 2, 0], [3, 8, 1, 0, 0, 0], [4, 6, 5, 1, 8, 0]])
    scores = torch.randn(B, T, S, dtype=torch.float64).masked_fill(pad.unsqueeze(1), float("-inf"))
    scores[2, :, 1] = float("-inf")  # alpha = 0 at a real position...
    gen_mask = torch.rand(B, 1, N) < 0.7
    gen_mask[..., 0] = True
    gen_mask[2, :, 6] = False  # ...whose word (column 6) is not in V_G either
    gen_mask[0, :, 7] = False  # a copy-only source word
    logits = torch.randn(B, T, N, dtype=torch.float64)
    z = torch.randn(B, T, dtype=torch.float64)

    def run(mixture):
        leaves = [z.clone().requires_grad_(), scores.clone().requires_grad_(), logits.clone().requires_grad_()]
        gate, attn = leaves[0], leaves[1].softmax(-1)
        log_p_gen = leaves[2].masked_fill(~gen_mask, float("-inf")).log_softmax(-1)
        out = mixture(gate, attn, log_p_gen)
        out.masked_fill(torch.isinf(out), 0.0).mul(torch.arange(1.0, N + 1, dtype=out.dtype)).sum().backward()
        return out.detach(), [leaf.grad for leaf in leaves]

    dense, dense_grads = run(lambda g, a, lg: log_mixture(g, copy_log_probs(a, copy_index, N), lg))
    groups = source_word_groups(copy_index, pad)
    sparse, sparse_grads = run(lambda g, a, lg: copy_mixture(g, a, copy_index, groups, lg))
    assert torch.equal(torch.isinf(sparse), torch.isinf(dense)) and torch.isinf(dense[2, :, 6]).all()
    assert torch.equal(sparse, dense)
    for got, want in zip(sparse_grads, dense_grads):
        assert not torch.isnan(got).any()
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


@pytest.mark.parametrize("input_feeding", [False, True])
def test_paper_order_attends_with_the_previous_state(dictionary, table, input_feeding):
    """--core-attend-previous-state: alpha_t = softmax eta(s_t-1, h) (eq. 5 as written); with
    --core-input-feeding also s_t = GRU([y_t-1; c_t], s_t-1) (eq. 3). Every step recomputed by
    hand from the model's weights (one GRU layer, torch's cell on the rnn's weights): alpha, psi
    (eq. 9) and the gate logit w_C s_t (eq. 10); and incremental decoding equals the full pass."""
    model = build(dictionary, table, core_attend_previous_state=True, core_input_feeding=input_feeding)
    scale_parameters(model, 4.0)
    model.eval()
    dec = model.decoder
    src, lengths, prev, _ = random_batch(dictionary, bsz=3, left_pad=False)
    cell = torch.nn.GRUCell(dec.rnn.input_size, dec.rnn.hidden_size)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(dec.rnn, name + "_l0"))
        enc = model.encoder(src, src_lengths=lengths)
        psi, gate_logit, attn = dec.extract_features(prev, enc)
        h, pad = enc["encoder_states"], enc["encoder_padding_mask"]
        score = dec.attention.score
        s = torch.tanh(dec.init_state_proj(enc["final_state"]))  # s_0
        y = dec.embed_tokens(prev)
        for t in range(prev.size(1)):
            e = torch.einsum("bsa,a->bs", torch.tanh(score.query_proj(s)[:, None] + score.key_proj(h)), score.v)
            alpha = torch.softmax(e.masked_fill(pad, float("-inf")), dim=-1)  # eq. 5, from s_t-1
            c = torch.einsum("bs,bsc->bc", alpha, h)  # eq. 6
            s = cell(torch.cat([y[:, t], c], dim=-1) if input_feeding else y[:, t], s)  # eq. 3
            psi_t = torch.tanh(dec.readout(torch.cat([y[:, t], s, c], dim=-1)))  # eq. 9
            torch.testing.assert_close(attn[:, t], alpha, atol=1e-6, rtol=0)
            torch.testing.assert_close(psi[:, t], psi_t, atol=1e-5, rtol=0)
            torch.testing.assert_close(gate_logit[:, t], dec.copy_gate(s).squeeze(-1), atol=1e-5, rtol=0)
    if not input_feeding:  # the same weights with s_t as the query (the default) attend otherwise
        default = build(dictionary, table).eval()
        default.load_state_dict(model.state_dict())
        with torch.no_grad():
            other = default.decoder.extract_features(prev, default.encoder(src, src_lengths=lengths))[2]
        assert (other - attn).abs().max() > 1e-3
    assert_incremental_equals_full(model, (src, lengths, prev, None))


def test_input_feeding_without_the_previous_state_is_refused(dictionary, table):
    with pytest.raises(FairseqWeanError, match="--core-input-feeding needs --core-attend-previous-state"):
        build(dictionary, table, core_input_feeding=True)
