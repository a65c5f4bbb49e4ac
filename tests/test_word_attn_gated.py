"""Word attention with contextual gates (Wu et al.): the poster's equations, checked on values."""
import argparse
import os
import re

import pytest
import torch
import torch.nn.functional as F

import fairseq_wean  # noqa: F401  (registers the models)
from fairseq_wean.errors import FairseqWeanError
from fairseq.models import ARCH_CONFIG_REGISTRY
from fairseq_wean.models.word_attn_gated import (
    WordAttnGatedModel,
    attention_step,
    base_architecture,
    word_attn_gated_iwslt,
    word_attn_gated_wmt,
    word_attn_rnnsearch_iwslt,
)
from fairseq_wean.modules.attention import SourceAttention
from fairseq_wean.modules.layers import gru_cell_step, lstm_cell_step
from model_checks import (
    assert_batched_beam_equals_single,
    assert_beam_scores_equal_teacher_forced_scores,
    assert_incremental_equals_full,
    scale_parameters,
)
from conftest import (
    REPO,
    USER_DIR,
    FakeTask,
    cli_concurrently,
    generated_hypotheses,
    make_dictionary,
    random_batch,
    train_args,
)

ABLATIONS = ["none", "ungated", "gated"]
SMALL = dict(encoder_embed_dim=10, encoder_hidden_size=6, decoder_embed_dim=8, decoder_hidden_size=9,
             decoder_out_embed_dim=7, dropout=0.0)


def build(dictionary, word_attention="gated", seed=0, **overrides):
    args = argparse.Namespace(arch="word_attn_gated", word_attention=word_attention, **dict(SMALL, **overrides))
    base_architecture(args)
    torch.manual_seed(seed)
    model = WordAttnGatedModel.build_model(args, FakeTask(dictionary))
    return model.eval()


def log_probs_and_extra(model, src, lengths, prev):
    with torch.no_grad():
        out = model(src, lengths, prev)
        return model.get_normalized_probs(out, log_probs=True), out[1]


@pytest.mark.parametrize("word_attention", ABLATIONS)
def test_incremental_decoding_equals_full_forward(word_attention):
    d = make_dictionary()
    assert_incremental_equals_full(build(d, word_attention), random_batch(d))


def test_incremental_equals_full_with_stacked_lstm_cells():
    d = make_dictionary()
    model = build(d, "gated", rnn_cell="lstm", encoder_layers=2, decoder_layers=2)
    assert_incremental_equals_full(model, random_batch(d))


@pytest.mark.parametrize("word_attention", ABLATIONS)
def test_batched_beam_search_equals_single_sentence(word_attention):
    d = make_dictionary()
    src, lengths, _, _ = random_batch(d, bsz=4, src_len=6)
    hyps = assert_batched_beam_equals_single(build(d, word_attention), d, src, lengths)
    assert all(len(h) == 3 for h in hyps)


def test_beam_scores_equal_a_teacher_forced_pass_while_the_batch_shrinks():
    """Every cached tensor (h and c of both LSTM layers, U_a h_j, U_b x_j, the sentence ids)
    follows its hypothesis through every reorder, also when finished sentences leave the batch."""
    d = make_dictionary()
    model = scale_parameters(build(d, "gated", rnn_cell="lstm", encoder_layers=2, decoder_layers=2), 8.0)
    src, lengths, _, _ = random_batch(d, bsz=6, src_len=7, seed=0)
    assert_beam_scores_equal_teacher_forced_scores(model, d, src, lengths, beam=3, max_len_b=12)


@pytest.mark.parametrize("word_attention", ["ungated", "gated"])
def test_word_attention_ignores_padding(word_attention):
    """One sentence alone, left-padded in a batch, and with 3 extra pad columns: same outputs."""
    d = make_dictionary()
    model = build(d, word_attention)
    src, lengths, prev, _ = random_batch(d, bsz=3, src_len=7)
    batched, extra_b = log_probs_and_extra(model, src, lengths, prev)
    sentence = src[2][src[2].ne(d.pad())].unsqueeze(0)
    alone, extra_a = log_probs_and_extra(model, sentence, lengths[2:], prev[2:])
    more_pads = torch.cat([torch.full((1, 3), d.pad()), sentence], dim=1)
    padded, extra_p = log_probs_and_extra(model, more_pads, lengths[2:], prev[2:])
    torch.testing.assert_close(batched[2:], alone, atol=1e-5, rtol=0)
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=0)
    n = sentence.size(1)
    for key in ("word_attn",):
        # maps come back in the caller's (left-padded) order: real tokens last, zero on padding
        torch.testing.assert_close(extra_p[key][:, :, -n:], extra_a[key], atol=1e-6, rtol=0)
        assert extra_p[key][:, :, :3].abs().max() == 0
        torch.testing.assert_close(extra_b[key][2:, :, -n:], extra_a[key], atol=1e-6, rtol=0)
    if word_attention == "gated":
        torch.testing.assert_close(extra_b["gate"][2:], extra_a["gate"], atol=1e-6, rtol=0)


def test_right_padded_sources_also_ignore_padding():
    d = make_dictionary()
    model = build(d, "gated", left_pad_source=False)
    src, lengths, prev, _ = random_batch(d, bsz=3, src_len=7, left_pad=False)
    batched, extra_b = log_probs_and_extra(model, src, lengths, prev)
    sentence = src[2][src[2].ne(d.pad())].unsqueeze(0)
    alone, extra_a = log_probs_and_extra(model, sentence, lengths[2:], prev[2:])
    torch.testing.assert_close(batched[2:], alone, atol=1e-5, rtol=0)
    n = sentence.size(1)
    torch.testing.assert_close(extra_b["attn"][0][2:, :, :n], extra_a["attn"][0], atol=1e-6, rtol=0)


def test_alignment_attention_is_in_the_callers_source_order():
    """--print-alignment reads extra["attn"][0] against the left-padded src_tokens it passed."""
    d = make_dictionary()
    model = build(d, "gated")
    src, lengths, prev, _ = random_batch(d, bsz=3, src_len=7)
    _, extra = log_probs_and_extra(model, src, lengths, prev)
    attn = extra["attn"][0]
    assert attn.shape == (3, prev.size(1), src.size(1))
    pad = src.eq(d.pad()).unsqueeze(1).expand_as(attn)
    assert attn[pad].abs().max() == 0
    torch.testing.assert_close(attn.sum(-1), torch.ones(3, prev.size(1)), atol=1e-5, rtol=0)


def test_gate_values_lie_in_open_interval_with_documented_shape():
    d = make_dictionary()
    model = build(d, "gated")
    src, lengths, prev, _ = random_batch(d, bsz=4)
    _, extra = log_probs_and_extra(model, src, lengths, prev)
    bsz, tgt_len, src_len = src.size(0), prev.size(1), src.size(1)
    C = 2 * SMALL["encoder_hidden_size"]  # bidirectional encoder: size of c^alpha_i
    assert extra["gate"].shape == (bsz, tgt_len, C)
    torch.testing.assert_close(extra["gate"][:, 0], first_step_by_hand(model, src, lengths, prev)["o"],
                               atol=1e-6, rtol=0)
    assert extra["gate"].std() > 0  # a function of the step, not a constant
    assert extra["word_attn"].shape == (bsz, tgt_len, src_len)
    assert extra["attn"][0].shape == (bsz, tgt_len, src_len)
    _, baseline_extra = log_probs_and_extra(build(d, "none"), src, lengths, prev)
    assert baseline_extra["gate"] is None and baseline_extra["word_attn"] is None


def first_step_by_hand(model, src, lengths, prev):
    """Decoder step 1 recomputed from the poster's equations with the model's own weights.

    Hidden and word attention, c^alpha, c^beta (section 3), o_1 and the gated state update
    s_1 = f(s_0, y_0, o*c^alpha, (1-o)*V_b c^beta) (section 4; f is the model's GRU cell), and
    the output layer W_out g(y_0; s_1; contexts). Attention maps are over the encoder's
    right-padded positions.
    """
    dec = model.decoder
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        s0 = torch.tanh(dec.init_state_proj(enc["final_state"]))  # top layer's s_0
        x, h, pad = enc["src_embeddings"], enc["encoder_states"], enc["encoder_padding_mask"]
        y0 = dec.embed_tokens(prev[:, 0])

        def attend(score, keys):
            hidden = torch.tanh(score.query_proj(s0)[:, None] + score.key_proj(keys))  # B x S x A
            e = torch.einsum("bsa,a->bs", hidden, score.v)
            return F.softmax(e.masked_fill(pad, float("-inf")), dim=-1)

        alpha = attend(dec.attention.score, h)
        c_alpha = torch.einsum("bs,bsc->bc", alpha, h)
        step = {"alpha": alpha, "contexts": [c_alpha]}
        if dec.word_attention is not None:
            beta = attend(dec.word_attention.score, x)
            c_beta = torch.einsum("bs,bse->be", beta, x)
            step.update(beta=beta, contexts=[c_alpha, c_beta])
        if dec.gate is not None:
            g = dec.gate
            o = torch.sigmoid(g.w_o(y0) + g.u_o(s0) + g.c_alpha_o(c_alpha) + g.c_beta_o(c_beta))
            word_context = c_beta if g.word_context_proj is None else g.word_context_proj(c_beta)  # V_b
            step.update(o=o, contexts=[o * c_alpha, (1 - o) * word_context])
        contexts = torch.cat(step["contexts"], dim=-1)
        s1 = dec.layers[0](torch.cat([y0, contexts], dim=-1), s0)  # f, one GRU layer
        if dec.readout_reads_raw:  # --word-attn-readout raw: the poster's g(y; s; c^a; c^b)
            contexts = torch.cat([c_alpha, c_beta], dim=-1)
        g_out = torch.tanh(dec.readout(torch.cat([y0, s1, contexts], dim=-1)))  # g
        step["logits"] = dec.fc_out(g_out)  # W_out
    return step


@pytest.mark.parametrize("word_attention,readout", [(w, "gated") for w in ABLATIONS] + [("gated", "raw")])
def test_first_step_matches_the_equations_by_hand(word_attention, readout):
    """Step 1 from the poster: beta, c^beta (section 3), o_1 and the gated update (section 4), g
    (reading the gated contexts, or with --word-attn-readout raw the attended ones)."""
    d = make_dictionary()
    # source positions as the encoder sees them
    model = build(d, word_attention, left_pad_source=False, word_attn_readout=readout)
    with torch.no_grad():
        # uniform(-0.1, 0.1) weights keep o_1 near 0.5, where o and 1 - o are alike: larger
        # weights and a gate bias of 1 move it away, so o <-> 1 - o mix-ups show.
        for param in model.parameters():
            param.mul_(8)
        if model.decoder.gate is not None:
            model.decoder.gate.w_o.bias.fill_(1.0)
    src, lengths, prev, _ = random_batch(d, bsz=2, left_pad=False)
    with torch.no_grad():
        logits, extra = model(src, lengths, prev)
    step = first_step_by_hand(model, src, lengths, prev)
    torch.testing.assert_close(extra["attn"][0][:, 0], step["alpha"], atol=1e-6, rtol=0)
    torch.testing.assert_close(logits[:, 0], step["logits"], atol=1e-5, rtol=0)
    if word_attention != "none":
        torch.testing.assert_close(extra["word_attn"][:, 0], step["beta"], atol=1e-6, rtol=0)
    if word_attention == "gated":
        torch.testing.assert_close(extra["gate"][:, 0], step["o"], atol=1e-6, rtol=0)
        # the reference checks the gated update only if o is neither 1 (nor 0) nor 0.5 everywhere
        assert (step["o"] - 0.5).abs().mean() > 0.1 and ((step["o"] - 1).abs() > 0.01).all()


def test_stepwise_attention_equals_source_attention():
    torch.manual_seed(0)
    attention = SourceAttention(5, 7, kind="concat")
    query, keys = torch.randn(3, 5), torch.randn(3, 4, 7)
    mask = torch.tensor([[False] * 4, [False, False, True, True], [False, False, False, True]])
    expected_ctx, expected_w = attention(query.unsqueeze(1), keys, keys, mask)
    projected_query = query @ attention.query_weight().t()  # W_q s, as the decoder's stacked product gives it
    ctx, w = attention_step(attention, projected_query, attention.project_keys(keys), keys, mask)
    torch.testing.assert_close(ctx, expected_ctx.squeeze(1))
    torch.testing.assert_close(w, expected_w.squeeze(1))


def baseline_sharing_weights(gated, dictionary):
    """The RNNsearch ablation with the gated model's weights (leading columns where it is narrower)."""
    baseline = build(dictionary, "none")
    shared = {}
    for name, param in baseline.state_dict().items():
        source = gated.state_dict()[name]
        if source.shape != param.shape:  # f's and g's input weights: [y; c^alpha] vs [y; c^alpha; c^beta]
            assert source.shape[0] == param.shape[0]
            source = source[:, : param.shape[1]]
        shared[name] = source
    baseline.load_state_dict(shared)
    return baseline


def test_gate_forced_to_one_reduces_to_rnnsearch():
    d = make_dictionary()
    gated = build(d, "gated")
    baseline = baseline_sharing_weights(gated, d)
    src, lengths, prev, _ = random_batch(d)
    expected, expected_extra = log_probs_and_extra(baseline, src, lengths, prev)
    free, _ = log_probs_and_extra(gated, src, lengths, prev)
    gated.decoder.forced_gate = 1.0
    forced, extra = log_probs_and_extra(gated, src, lengths, prev)
    torch.testing.assert_close(forced, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(extra["attn"][0], expected_extra["attn"][0], atol=1e-6, rtol=0)
    assert (extra["gate"] == 1).all()
    assert (free - expected).abs().max() > 1e-4  # 100x the tolerance: unforced, word context gets in
    # the forced gate holds on the incremental path too
    assert_incremental_equals_full(gated, (src, lengths, prev, None))


def load_parameter_counts_example():
    import importlib.util

    path = os.path.join(REPO, "examples", "word_attention_parameter_counts.py")
    spec = importlib.util.spec_from_file_location("word_attention_parameter_counts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ablation_parameter_counts_follow_table3_pattern():
    """Differences at the IWSLT preset (they do not depend on the vocabularies)."""
    counts = load_parameter_counts_example().ablation_parameter_counts("word_attn_gated_iwslt", src_vocab=50, tgt_vocab=40)
    E, H, C = 256, 256, 512
    word_attention = 2 * H * E + E  # W_b, U_b, v_b
    widen_f_and_g = 3 * H * E + E * E  # GRU input and g's input grow by c^beta (E)
    assert counts["ungated"] - counts["none"] == word_attention + widen_f_and_g == 393472
    gate = C * (E + H + C + E) + C  # W_o (+bias), U_o, C^alpha_o, C^beta_o: Table 3's "+0.7M"
    v_b = E * C
    widen_to_c = 3 * H * (C - E) + E * (C - E)
    assert gate == 655872
    assert counts["gated"] - counts["ungated"] == gate + v_b + widen_to_c == 1049088
    assert counts["none"] < counts["ungated"] < counts["gated"]


def test_presets():
    # each registered preset is also a module attribute, as fairseq's own presets are
    for preset in (word_attn_rnnsearch_iwslt, word_attn_gated_iwslt, word_attn_gated_wmt):
        assert ARCH_CONFIG_REGISTRY[preset.__name__] is preset
    iwslt = argparse.Namespace()
    word_attn_rnnsearch_iwslt(iwslt)
    assert (iwslt.encoder_layers, iwslt.decoder_layers) == (2, 2)
    assert (iwslt.word_attention, iwslt.rnn_cell) == ("none", "gru")
    iwslt = argparse.Namespace(word_attention="ungated")  # the command line wins over the preset
    word_attn_gated_iwslt(iwslt)
    assert iwslt.word_attention == "ungated"
    wmt = argparse.Namespace()
    word_attn_gated_wmt(wmt)
    assert (wmt.encoder_layers, wmt.decoder_layers) == (4, 4)
    assert (wmt.encoder_embed_dim, wmt.decoder_hidden_size) == (620, 1000)
    assert wmt.word_attention == "gated"


def test_tied_output_embedding_and_refusals():
    d = make_dictionary()
    model = build(d, "gated", decoder_out_embed_dim=8, share_decoder_input_output_embed=True)
    assert model.decoder.fc_out is None
    src, lengths, prev, _ = random_batch(d)
    logits, _ = model(src, lengths, prev)
    assert logits.shape == (src.size(0), prev.size(1), len(d))
    with pytest.raises(FairseqWeanError, match="decoder-out-embed-dim"):
        build(d, "gated", share_decoder_input_output_embed=True)
    with pytest.raises(FairseqWeanError, match="word-attention"):
        build(d, "both")


# --- end to end through fairseq's command-line tools ------------------------------------

CLI_SIZES = ["--encoder-embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-embed-dim", 16,
             "--decoder-hidden-size", 16, "--dropout", 0.0]
FIGURE3 = os.path.join(REPO, "examples", "word_attention_figure3.py")
ARCHS = {"none": "word_attn_rnnsearch", "ungated": "word_attn_ungated", "gated": "word_attn_gated"}


@pytest.fixture(scope="module")
def trained(data_bin, tmp_path_factory):
    """The three ablations, trained for 2 epochs at once (each its own fairseq-train)."""
    dirs = {mode: tmp_path_factory.mktemp("ck-" + arch) for mode, arch in ARCHS.items()}
    procs = cli_concurrently([
        ("fairseq-train", train_args(data_bin, dirs[mode], arch, *CLI_SIZES, epochs=2))
        for mode, arch in ARCHS.items()
    ])
    logs = {mode: proc.stdout + proc.stderr for mode, proc in zip(ARCHS, procs)}
    return dirs, logs


def test_three_ablations_train_generate_and_align(trained, data_bin, raw_dir):
    dirs, logs = trained
    for mode in ARCHS:
        losses = [float(m) for m in re.findall(r"\| train \| epoch \d+ \| loss ([\d.]+)", logs[mode])]
        assert len(losses) == 2 and losses[1] < losses[0], logs[mode][-2000:]
    src_lines = open(raw_dir / "test.src").read().splitlines()[:2]
    commands = [
        ("fairseq-generate", [data_bin, "--user-dir", USER_DIR, "--path", dirs[mode] / "checkpoint_best.pt",
                              "--gen-subset", "test", "--beam", 3, "--cpu", "--batch-size", 5,
                              "--print-alignment"])
        for mode in ARCHS
    ] + [
        ("fairseq-interactive", [data_bin, "--user-dir", USER_DIR, "--path", dirs["gated"] / "checkpoint_best.pt",
                                 "--source-lang", "src", "--target-lang", "tgt", "--beam", 3, "--cpu",
                                 "--print-alignment"], {"input": "\n".join(src_lines) + "\n"}),
    ]
    procs = cli_concurrently(commands)
    test_src = open(raw_dir / "test.src").read().splitlines()
    for proc in procs[:3]:
        hyps = generated_hypotheses(proc.stdout)
        assert sorted(hyps) == list(range(len(test_src)))
        alignments = dict(line.split("\t", 1) for line in proc.stdout.splitlines() if line.startswith("A-"))
        assert len(alignments) == len(test_src)
        for key, alignment in alignments.items():
            sid = int(key[2:])
            pairs = [tuple(map(int, p.split("-"))) for p in alignment.split()]
            assert pairs and all(s < len(test_src[sid].split()) for s, _ in pairs)  # real source words only
            assert all(t < len(hyps[sid].split()) for _, t in pairs)
    interactive = procs[3].stdout.splitlines()
    assert len([line for line in interactive if line.startswith("H-")]) == 2
    assert len([line for line in interactive if line.startswith("A-")]) == 2


def load_figure3_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("word_attention_figure3", FIGURE3)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figure3_script_draws_a_png_from_the_trained_checkpoint(trained, data_bin, raw_dir, tmp_path, capsys):
    """Run in this process (its import of torch and fairseq is already paid for)."""
    dirs, _ = trained
    figure3 = load_figure3_script()
    source = open(raw_dir / "test.src").readline().strip()
    figure = tmp_path / "figure3.png"
    checkpoint = str(dirs["gated"] / "checkpoint_best.pt")
    figure3.main(["--path", checkpoint, "--data", str(data_bin), "--source", source, "--output", str(figure)])
    values = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert values and values[-1][0] == "</s>" and all(0 < float(v) < 1 for _, v in values)
    with open(figure, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(figure) > 1000
    # Figure 3 needs gates: the RNNsearch checkpoint is refused
    with pytest.raises(FairseqWeanError, match="gated"):
        figure3.main(["--path", str(dirs["none"] / "checkpoint_best.pt"), "--data", str(data_bin), "--source", source,
                      "--output", str(tmp_path / "none.png")])
    assert not os.path.exists(tmp_path / "none.png")


GATES = os.path.join(REPO, "examples", "word_attention_gates.py")


def load_gates_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("word_attention_gates", GATES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def padded_sample(d, target_lengths=(2, 5, 3), src_len=6, seed=1):
    """A fairseq-style sample whose targets have different lengths (so B x T has padding)."""
    from fairseq.data import data_utils

    g = torch.Generator().manual_seed(seed)
    srcs, tgts = [], []
    for b, n in enumerate(target_lengths):
        srcs.append(torch.cat([torch.randint(d.nspecial, len(d), (src_len - b,), generator=g), torch.tensor([d.eos()])]))
        tgts.append(torch.cat([torch.randint(d.nspecial, len(d), (n,), generator=g), torch.tensor([d.eos()])]))
    return {
        "net_input": {
            "src_tokens": data_utils.collate_tokens(srcs, d.pad(), d.eos(), left_pad=True),
            "src_lengths": torch.tensor([len(s) for s in srcs]),
            "prev_output_tokens": data_utils.collate_tokens(tgts, d.pad(), d.eos(), move_eos_to_beginning=True),
        },
        "target": data_utils.collate_tokens(tgts, d.pad(), d.eos()),
    }, srcs, tgts


def test_gate_stats_leave_padding_out_and_equal_the_per_sentence_values():
    d = make_dictionary()
    gated = build(d, "gated", seed=3)
    gates = load_gates_script()
    sample, srcs, tgts = padded_sample(d)
    stats = gates.gate_stats(gated, [sample], d.pad())
    # reference: each sentence alone (no padding anywhere), 1 - o_i averaged over the units
    shares = []
    for src, tgt in zip(srcs, tgts):
        prev = torch.cat([torch.tensor([d.eos()]), tgt[:-1]]).unsqueeze(0)
        _, extra = log_probs_and_extra(gated, src.unsqueeze(0), torch.tensor([len(src)]), prev)
        shares.append((1.0 - extra["gate"][0]).mean(dim=-1))
    share = torch.cat(shares).double()
    assert stats["sentences"] == 3 and stats["positions"] == 2 + 5 + 3 + 3 == share.numel()
    assert stats["mean_word_share"] == pytest.approx(float(share.mean()), abs=1e-4)
    assert stats["p50"] == pytest.approx(float(torch.quantile(share, 0.5)), abs=1e-4)
    assert stats["word_context_dominant_pct"] == pytest.approx(100.0 * float((share > 0.5).double().mean()), abs=0.01)
    assert 0 < stats["p10"] <= stats["p50"] <= stats["p90"] < 1
    # a forced gate: every unit at o = 0.25, none saturated, the word context outweighs everywhere
    gated.decoder.forced_gate = 0.25
    forced = gates.gate_stats(gated, [sample], d.pad())
    assert (forced["mean_word_share"], forced["p10"], forced["p90"]) == (0.75, 0.75, 0.75)
    assert (forced["word_context_dominant_pct"], forced["saturated_units_pct"]) == (100.0, 0.0)
    gated.decoder.forced_gate = 0.95
    assert gates.gate_stats(gated, [sample], d.pad())["saturated_units_pct"] == 100.0


def test_gates_script_measures_every_sentence_of_a_subset(trained, data_bin, raw_dir, capsys):
    """The trained gated checkpoint over the test subset: the last, partial batch counts too."""
    import json

    dirs, _ = trained
    gates = load_gates_script()
    gates.main(["--path", str(dirs["gated"] / "checkpoint_best.pt"), "--data", str(data_bin),
                "--subset", "test", "--max-tokens", "50"])
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    test_tgt = open(raw_dir / "test.tgt").read().splitlines()
    assert stats["sentences"] == len(test_tgt)
    assert stats["positions"] == sum(len(line.split()) + 1 for line in test_tgt)  # + EOS
    assert 0 < stats["mean_word_share"] < 1
    with pytest.raises(FairseqWeanError, match="gated"):
        gates.main(["--path", str(dirs["ungated"] / "checkpoint_best.pt"), "--data", str(data_bin)])


def unfused_features(dec, prev_output_tokens, encoder_out):
    """The decoder's teacher-forced features computed layer by layer, each module called as it is
    (the attentions with their own query projection, the gate's ``forward``, torch's GRU/LSTM
    cells): the decoder before its products were stacked (issue 42), kept as the reference."""
    y = dec.embed_tokens(prev_output_tokens)
    annotations, words = encoder_out["encoder_states"], encoder_out["src_embeddings"]
    padding_mask = encoder_out["encoder_padding_mask"]
    cache = dec.initial_state(encoder_out)
    hidden = list(cache["hidden"].unbind(0))
    cell = list(cache["cell"].unbind(0)) if dec.cell_type == "lstm" else None
    s_steps, context_steps, gates = [], [], []
    for i in range(prev_output_tokens.size(1)):
        y_prev, s_prev = y[:, i], hidden[-1]
        c_alpha, _ = dec.attention(s_prev.unsqueeze(1), annotations, annotations, padding_mask)
        contexts = [c_alpha.squeeze(1)]
        if dec.word_attention is not None:
            c_beta, _ = dec.word_attention(s_prev.unsqueeze(1), words, words, padding_mask)
            contexts.append(c_beta.squeeze(1))
            if dec.gate is not None:
                gated_alpha, gated_beta, o = dec.gate(y_prev, s_prev, *contexts, dec.forced_gate)
                contexts = [gated_alpha, gated_beta]
                gates.append(o)
        contexts = torch.cat(contexts, dim=-1)
        layer_input = torch.cat([y_prev, contexts], dim=-1)
        for layer, rnn_cell in enumerate(dec.layers):
            if dec.cell_type == "lstm":
                hidden[layer], cell[layer] = rnn_cell(layer_input, (hidden[layer], cell[layer]))
            else:
                hidden[layer] = rnn_cell(layer_input, hidden[layer])
            layer_input = hidden[layer]
        s_steps.append(hidden[-1])
        context_steps.append(contexts)
    s, contexts = torch.stack(s_steps, dim=1), torch.stack(context_steps, dim=1)
    features = torch.tanh(dec.readout(torch.cat([y, s, contexts], dim=-1)))
    return features, (torch.stack(gates, dim=1) if gates else None)


@pytest.mark.parametrize("cell,layers", [("gru", 1), ("gru", 3), ("lstm", 2)])
@pytest.mark.parametrize("word_attention", ABLATIONS)
def test_stacked_products_equal_the_unfused_decoder(word_attention, cell, layers):
    """Features, gates and every parameter's gradient equal those of the layer-by-layer decoder
    (within 1e-6), in training mode; with E != C, so that V_b is used."""
    d = make_dictionary()
    model = build(d, word_attention, rnn_cell=cell, decoder_layers=layers, encoder_layers=2)
    scale_parameters(model, 4.0)  # away from the linear regime of uniform(-0.1, 0.1)
    model.train()
    src, lengths, prev, _ = random_batch(d, bsz=3)
    encoder_out = model.encoder(src, src_lengths=lengths)
    features, extra = model.decoder.extract_features(prev, encoder_out)
    fused_grads = torch.autograd.grad(features.square().sum(), list(model.parameters()), allow_unused=True,
                                      retain_graph=True)  # the encoder graph serves both
    expected, gates = unfused_features(model.decoder, prev, encoder_out)
    expected_grads = torch.autograd.grad(expected.square().sum(), list(model.parameters()), allow_unused=True)
    torch.testing.assert_close(features, expected, atol=1e-6, rtol=0)
    if word_attention == "gated":
        torch.testing.assert_close(extra["gate"], gates, atol=1e-6, rtol=0)
    for (name, _), got, want in zip(model.named_parameters(), fused_grads, expected_grads):
        assert (got is None) == (want is None), name
        if got is not None:
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5, msg=name)
    assert features.std() > 0.1  # not saturated: the comparison sees the values


def test_cell_steps_equal_torch_cells():
    torch.manual_seed(0)
    x, h, c = torch.randn(4, 5), torch.randn(4, 6), torch.randn(4, 6)
    gru, lstm = torch.nn.GRUCell(5, 6), torch.nn.LSTMCell(5, 6)
    for m in (gru, lstm):
        for p in m.parameters():
            p.data.mul_(5)

    def products(m, h):
        return F.linear(x, m.weight_ih, m.bias_ih), F.linear(h, m.weight_hh, m.bias_hh)

    torch.testing.assert_close(gru_cell_step(*products(gru, h), h), gru(x, h), atol=1e-6, rtol=0)
    got_h, got_c = lstm_cell_step(*products(lstm, h), c)
    want_h, want_c = lstm(x, (h, c))
    torch.testing.assert_close(got_h, want_h, atol=1e-6, rtol=0)
    torch.testing.assert_close(got_c, want_c, atol=1e-6, rtol=0)


def test_initial_state_from_the_backward_direction():
    """--word-attn-initial-state backward: s_0 = tanh(W_s h<-_1), RNNsearch's, with h<-_1 the
    backward direction's state at the first source position (read here from the encoder's states,
    not from its final state); the default reads both directions' final states."""
    d = make_dictionary()
    model = build(d, "gated", left_pad_source=False, word_attn_initial_state="backward")
    src, lengths, prev, _ = random_batch(d, left_pad=False)
    C = 2 * SMALL["encoder_hidden_size"]
    dec = model.decoder
    assert dec.init_state_proj.in_features == C // 2
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=lengths)
        expected = torch.tanh(dec.init_state_proj(enc["encoder_states"][:, 0, C // 2 :]))
        torch.testing.assert_close(dec.initial_hidden(enc)[-1], expected, atol=1e-6, rtol=0)
    assert build(d, "gated").decoder.init_state_proj.in_features == C
    assert_incremental_equals_full(model, (src, lengths, prev, None))
