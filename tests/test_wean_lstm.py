"""WEAN (Ma et al. 2018): model-level checks against reference computations."""
import argparse

import pytest
import torch

import fairseq_wean  # noqa: F401  (registers the models)
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.models.wean_lstm import WeanLSTMModel, base_architecture
from model_checks import (
    assert_batched_beam_equals_single,
    assert_beam_scores_equal_teacher_forced_scores,
    assert_incremental_equals_full,
    scale_parameters,
)
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


def test_beam_scores_equal_a_teacher_forced_pass_while_the_batch_shrinks():
    """The cached (h, c) of both decoder layers follow their hypotheses through every reorder.

    Weights x32: with x16 and less </s> hardly ever wins, the batch never shrinks. In float64: at
    x32, float32 rounding alone puts 30 incremental steps 1.5e-4 from the full pass.
    """
    d = make_dictionary()
    model = scale_parameters(build(d, encoder_layers=2, decoder_layers=2), 32.0).double()
    src, lengths, _, _ = random_batch(d, bsz=6, src_len=7, seed=1)
    assert_beam_scores_equal_teacher_forced_scores(model, d, src, lengths, beam=3, max_len_b=30)


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


def test_query_is_eq4_of_state_and_attention_context():
    """q_t = tanh(W_c [s_t; c_t]) (eq. 4), c_t = sum_i alpha_ti h_i with alpha = softmax_i s_t^T W_a h_i
    (eq. 1-2, 'general'), recomputed from the model's weights; s_t from the model's LSTM."""
    d = make_dictionary()
    model = build(d, attention_score="general").eval()
    src, lengths, prev, _ = random_batch(d)
    dec = model.decoder
    with torch.no_grad():
        for param in model.parameters():  # uniform(-0.1, 0.1) gives near-uniform attention: sharpen it
            param.mul_(8)
        enc = model.encoder(src, src_lengths=lengths)
        q, _ = dec.extract_features(prev, enc)
        h, pad = enc["encoder_states"], enc["encoder_padding_mask"]
        s0 = torch.tanh(dec.init_state_proj(enc["final_state"])).expand(dec.num_layers, -1, -1).contiguous()
        s, _ = dec.rnn(dec.embed_tokens(prev), (s0, torch.zeros_like(s0)))  # s_t: B x T x H
        scores = torch.einsum("bth,kh,bsk->bts", s, dec.attention.score.query_to_key.weight, h)
        alpha = torch.softmax(scores.masked_fill(pad[:, None], float("-inf")), dim=-1)
        c = torch.einsum("bts,bsk->btk", alpha, h)
        expected = torch.tanh(torch.einsum("btj,kj->btk", torch.cat([s, c], dim=-1), dec.query_proj.weight))
    torch.testing.assert_close(q, expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_word_probabilities_are_eq5_eq6_over_the_shared_embeddings(score):
    """p(y_t = i) = softmax_i f(q_t, e_i) over every row e_i of the one embedding matrix, with
    f = q^T e (dot), q^T W_a e (general) or v^T tanh(W_q q + W_k e) (concat), by hand."""
    d = make_dictionary()
    model = build(d, wean_score=score).eval()
    src, lengths, prev, _ = random_batch(d)
    f = model.decoder.output_score
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        q, _ = model.decoder.extract_features(prev, enc)
        e = model.encoder.embed_tokens.weight  # the encoder's input embeddings: shared
        if score == "dot":
            logits = torch.einsum("btk,vk->btv", q, e)
        elif score == "general":
            logits = torch.einsum("btk,jk,vj->btv", q, f.query_to_key.weight, e)
        else:
            hidden = torch.tanh(f.query_proj(q)[:, :, None] + (e @ f.key_proj.weight.t())[None, None])
            logits = torch.einsum("btva,a->btv", hidden, f.v)
        expected = torch.log_softmax(logits, dim=-1)
        lprobs = model.get_normalized_probs(model(src, lengths, prev), log_probs=True)
    torch.testing.assert_close(lprobs, expected, atol=1e-5, rtol=0)


def test_output_layer_gradient_reaches_the_shared_embedding_rows():
    """WEAN trains the embeddings through the word generator too (they are its keys e_i).

    The loss's gradient on the embedding matrix, minus the gradient when the output layer sees
    a detached copy of it, is the output layer's term; by hand (general score, summed NLL):
    dL/de_v = sum_{b,t} (p_btv - [y_bt = v]) W_a^T q_bt.
    """
    d = make_dictionary()
    src, lengths, prev, target = random_batch(d)

    def embedding_grad(detach_output_keys):
        model = build(d, wean_score="general").eval()
        if detach_output_keys:
            keys = lambda features: model.decoder.output_score(  # noqa: E731
                features, model.decoder.embed_tokens.weight.detach())
            model.decoder.output_layer = keys
        logits, _ = model(src, lengths, prev)
        lprobs = torch.log_softmax(logits, dim=-1)
        torch.nn.functional.nll_loss(lprobs.view(-1, lprobs.size(-1)), target.view(-1), reduction="sum").backward()
        enc = model.encoder(src, src_lengths=lengths)
        q, _ = model.decoder.extract_features(prev, enc)
        return model.encoder.embed_tokens.weight.grad, lprobs.detach(), model.decoder.output_score.query_to_key(q).detach()

    full, lprobs, query_keys = embedding_grad(False)
    without_output_term, _, _ = embedding_grad(True)
    residual = lprobs.exp() - torch.nn.functional.one_hot(target, len(d)).float()  # B x T x V
    expected = torch.einsum("btv,btk->vk", residual, query_keys)
    torch.testing.assert_close(full - without_output_term, expected, atol=1e-5, rtol=1e-4)
    assert expected.abs().max() > 1e-2


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


def test_model_option_errors_are_one_line_via_fairseq_train(data_bin, tmp_path):
    """Sizes, depths and dropout that cannot build a model: one line at parse, status 2 (the sizes' least value
    and dropout: model_options.plugin_model_option_problem), or from build_model, status 1 (the sizes against each
    other), for all three models (the checks are written once, in fairseq_wean.modules.model_options)."""
    from conftest import cli_concurrently, train_args

    cases = [
        ("wean_lstm", ["--encoder-layers", "0"], "--encoder-layers must be a positive whole number, got 0"),
        ("wean_lstm", ["--decoder-layers", "0"], "--decoder-layers must be a positive whole number, got 0"),
        ("wean_lstm", ["--embed-dim", "0"], "--embed-dim must be a positive whole number, got 0"),
        ("wean_lstm", ["--dropout", "1.5"], "--dropout must be a probability in [0, 1), got 1.5"),
        ("wean_lstm", ["--attention-score", "dot", "--decoder-hidden-size", "12", "--encoder-hidden-size", "8"],
         "--attention-score dot needs the decoder state and the encoder states to have one size"),
        ("word_attn_gated", ["--decoder-out-embed-dim", "0"], "--decoder-out-embed-dim must be a positive whole"),
        ("word_attn_gated", ["--encoder-hidden-size", "-3"], "--encoder-hidden-size must be a positive whole"),
        ("core_copy", ["--decoder-hidden-size", "0", "--criterion", "core_mode_loss"],
         "--decoder-hidden-size must be a positive whole number, got 0"),
    ]
    procs = cli_concurrently([
        ("fairseq-train", train_args(data_bin, tmp_path / str(i), arch, *extra, epochs=1), {"check": False})
        for i, (arch, extra, _) in enumerate(cases)
    ])
    for i, ((arch, extra, message), proc) in enumerate(zip(cases, procs)):
        # sizes below 1 and --dropout are refused when the options are parsed (status 2), --attention-score at build
        parsed = "--attention-score" not in extra
        assert proc.returncode == (2 if parsed else 1), (arch, extra, proc.stderr[-2000:])
        assert ("fairseq-train: error: " if parsed else "fairseq-wean: error: ") + message in proc.stderr, (
            arch, extra, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
        assert not list((tmp_path / str(i)).glob("*.pt"))  # refused before training started


# ------------------------------------------------------------------ candidate words (section 2.4)
def candidate_model(data, side, **overrides):
    from fairseq.data import Dictionary

    from conftest import DataTask

    d = Dictionary.load(str(data / "dict.src.txt"))
    args = argparse.Namespace(arch="wean_lstm", embed_dim=16, encoder_hidden_size=12, decoder_hidden_size=14,
                              dropout=0.0, wean_candidates=side, **overrides)
    base_architecture(args)
    torch.manual_seed(0)
    return WeanLSTMModel.build_model(args, DataTask(d, data)), d, args


@pytest.mark.parametrize("side", ["source", "target"])
def test_candidates_are_the_words_of_one_training_side_plus_eos_and_unk(skewed_data_bin, side):
    """--wean-candidates source (section 2.4: the training source side's words) or target: the set,
    by hand from the training sentences; pad, bos and fairseq's madeupword fillers are out."""
    data, targets, sources = skewed_data_bin
    model, d, args = candidate_model(data, side)
    words = {w for sentence in (sources if side == "source" else targets) for w in sentence}
    expected = {d.index(w) for w in words} | {d.eos(), d.unk()}
    assert set(model.decoder.candidate_mask.nonzero().squeeze(1).tolist()) == expected
    assert {w[0] for w in words} == ({"s", "w"} if side == "source" else {"t", "w"})  # the two sets differ
    assert any(sym.startswith("madeupword") for sym in d.symbols)  # the fillers exist, and are out
    assert args.wean_candidates_in_checkpoint


def test_candidates_mask_the_scores_and_leave_the_others_as_they_were(skewed_data_bin):
    """Outside the set the score is -inf (probability 0); inside, the scores and the softmax over
    the candidates alone equal the unrestricted model's (eq. 5-6 over the candidate words)."""
    data, _, _ = skewed_data_bin
    model, d, _ = candidate_model(data, "source")
    full, _, _ = candidate_model(data, "all")
    full.load_state_dict({k: v for k, v in model.state_dict().items() if k != "decoder.candidate_mask"})
    mask = model.decoder.candidate_mask
    src, lengths, prev, _ = random_batch(d)
    model.eval(), full.eval()
    with torch.no_grad():
        out, expected = model(src, lengths, prev), full(src, lengths, prev)
        lprobs = model.get_normalized_probs(out, log_probs=True)
    assert torch.isneginf(out[0][..., ~mask]).all() and torch.isfinite(out[0][..., mask]).all()
    torch.testing.assert_close(out[0][..., mask], expected[0][..., mask], atol=0, rtol=0)
    torch.testing.assert_close(lprobs[..., mask], torch.log_softmax(expected[0][..., mask], dim=-1), atol=1e-6, rtol=0)
    assert torch.isneginf(lprobs[..., ~mask]).all()


def test_target_words_outside_the_candidates_are_scored_as_unk(skewed_data_bin):
    """fairseq's cross_entropy reads the targets from the model (get_targets): a word outside the
    candidate set is <unk>, as in the paper's data; the loss is finite and equals -sum log p of the
    mapped targets, by hand. Padding stays padding; without a set the targets are untouched."""
    from fairseq.criterions.cross_entropy import CrossEntropyCriterion

    data, _, _ = skewed_data_bin
    model, d, _ = candidate_model(data, "source")
    src, lengths, prev, _ = random_batch(d)
    target = torch.tensor([[d.index("t0"), d.index("w1"), d.index("t3"), d.eos()],
                           [d.index("s2"), d.index("w0"), d.eos(), d.pad()]])
    target = target.repeat(2, 1)
    prev = torch.cat([torch.full((4, 1), d.eos()), target[:, :-1].masked_fill(target[:, :-1].eq(d.pad()), d.eos())], 1)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": target, "ntokens": int(target.ne(d.pad()).sum())}
    mapped = model.get_targets(sample, None)
    unk, pad = d.unk(), d.pad()
    assert mapped[0].tolist() == [unk, d.index("w1"), unk, d.eos()]
    assert mapped[1].tolist() == [d.index("s2"), d.index("w0"), d.eos(), pad]
    model.eval()
    crit = CrossEntropyCriterion(type("T", (), {"target_dictionary": d})(), sentence_avg=False)
    loss, _, _ = crit(model, sample, reduce=True)
    with torch.no_grad():
        lprobs = model.get_normalized_probs(model(**sample["net_input"]), log_probs=True)
    keep = mapped.ne(pad)
    expected = -lprobs.gather(-1, mapped.unsqueeze(-1)).squeeze(-1)[keep].sum()
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss, expected, atol=1e-4, rtol=1e-6)
    full, _, _ = candidate_model(data, "all")
    assert full.get_targets(sample, None) is target


def test_candidates_are_kept_in_the_checkpoint_and_not_counted_again(skewed_data_bin, tmp_path):
    """The set is a buffer of the checkpoint; fairseq-generate rebuilds from the saved arguments
    with no training data at hand (a placeholder until the state loads); a checkpoint's arguments
    are marked as holding it (checkpoint_safety), so loading never reads the training data."""
    from conftest import DataTask
    from fairseq_wean.checkpoint_safety import forget_stored_paths

    data, _, _ = skewed_data_bin
    model, d, args = candidate_model(data, "target")
    assert "decoder.candidate_mask" in model.state_dict()
    reloaded = WeanLSTMModel.build_model(args, DataTask(d, tmp_path / "no-data"))
    assert reloaded.decoder.candidate_mask.all()
    reloaded.load_state_dict(model.state_dict())
    assert torch.equal(reloaded.decoder.candidate_mask, model.decoder.candidate_mask)
    stored = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "wean_candidates_in_checkpoint"})
    forget_stored_paths({"args": stored}, {})
    assert stored.wean_candidates_in_checkpoint is True
    # the default set is not saved: checkpoints of earlier versions still load
    assert "decoder.candidate_mask" not in build(make_dictionary()).state_dict()
    with pytest.raises(FairseqWeanError, match=r"--wean-candidates source: no binarized training source side "
                                               r"missing.src-tgt.src.*--wean-candidates all"):
        candidate_model(data, "source", train_subset="missing")
    with pytest.raises(FairseqWeanError, match="--wean-candidates 'both'"):
        candidate_model(data, "both")


def test_candidates_through_fairseqs_own_task_setup(skewed_data_bin):
    """The option as fairseq-train parses it, the task as fairseq builds it (task.cfg): the set
    equals the words of the loaded training sources."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from conftest import USER_DIR

    data, _, _ = skewed_data_bin
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data), "--user-dir", USER_DIR, "--arch", "wean_lstm", "--wean-candidates", "source",
        "--embed-dim", "8", "--encoder-hidden-size", "8", "--decoder-hidden-size", "8", "--cpu"])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    task.load_dataset("train")
    train = task.datasets["train"]
    seen = torch.zeros(len(task.source_dictionary), dtype=torch.bool)
    for i in range(len(train)):
        seen[train[i]["source"]] = True
    seen[task.source_dictionary.unk()] = True
    assert torch.equal(model.decoder.candidate_mask, seen)  # eos ends every source: in both
    assert cfg.model.wean_candidates == "source" and cfg.model.wean_candidates_in_checkpoint


def test_score_reference_gives_a_word_outside_the_candidates_probability_zero(skewed_data_bin):
    """fairseq-generate --score-reference (SequenceScorer) reads the reference as it is: a word
    outside the set scores -inf at its position (its probability under the model), the others stay
    finite and equal the model's log-probabilities (docs/models/wean_lstm.md says so)."""
    from fairseq.sequence_scorer import SequenceScorer

    data, _, _ = skewed_data_bin
    model, d, _ = candidate_model(data, "source")
    model.eval()
    src, lengths, _, _ = random_batch(d, bsz=1)
    target = torch.tensor([[d.index("w1"), d.index("t0"), d.index("s2"), d.eos()]])
    prev = torch.cat([torch.tensor([[d.eos()]]), target[:, :-1]], 1)
    sample = {"id": torch.tensor([0]), "net_input": {"src_tokens": src, "src_lengths": lengths,
                                                      "prev_output_tokens": prev}, "target": target}
    hypo = SequenceScorer(d).generate([model], sample)[0][0]
    with torch.no_grad():
        lprobs = model.get_normalized_probs(model(**sample["net_input"]), log_probs=True)[0]
    expected = lprobs.gather(-1, target[0].unsqueeze(-1)).squeeze(-1)
    assert torch.isneginf(hypo["positional_scores"][1]) and torch.isneginf(hypo["score"])
    keep = torch.tensor([True, False, True, True])
    torch.testing.assert_close(hypo["positional_scores"][keep], expected[keep], atol=1e-5, rtol=0)
