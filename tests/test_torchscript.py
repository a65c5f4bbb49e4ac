"""The plugin's patches keep fairseq's generator scriptable (``torch.jit.script``).

fairseq compiles ``SequenceGenerator`` with TorchScript (its own ``TestJitSequenceGenerator``
scripts one with ``no_repeat_ngram_size=2``), and with it everything the generator calls: the
search and ``NGramRepeatBlock``. Importing the plugin patches two of them (``compat``:
``NGramRepeatBlock._no_repeat_ngram``, ``DiverseBeamSearch.step``); a patch TorchScript cannot
compile makes scripting fail for every user of the process. The model here is fairseq's own
``transformer`` (scriptable), tiny and random, built in-process as fairseq's test builds it; the
scripted generator must give the eager generator's hypotheses, and the patched n-gram blocking
must ban exactly what a reference computed here bans, scripted or not.
"""
import argparse

import pytest
import torch
from fairseq import search
from fairseq.models.transformer import TransformerModel, base_architecture
from fairseq.ngram_repeat_block import NGramRepeatBlock
from fairseq.sequence_generator import SequenceGenerator

import fairseq_wean  # noqa: F401  (installs the patches)
import fairseq_wean.patching
from conftest import FakeTask, make_dictionary, random_batch

MAX_LEN_B = 10
DIVERSE_BEAM_FIX_APPLIED = fairseq_wean.patching.status()["compat 9 (--diverse-beam-groups)"][0]


@pytest.fixture(scope="module")
def dictionary():
    return make_dictionary(20)


@pytest.fixture(scope="module")
def transformer(dictionary):
    args = argparse.Namespace(encoder_layers=1, decoder_layers=1, encoder_embed_dim=16, decoder_embed_dim=16,
                              encoder_ffn_embed_dim=32, decoder_ffn_embed_dim=32, encoder_attention_heads=2,
                              decoder_attention_heads=2, dropout=0.0)
    base_architecture(args)
    torch.manual_seed(0)
    return TransformerModel.build_model(args, FakeTask(dictionary)).eval()


@pytest.fixture(scope="module")
def sample(dictionary):
    # No "id": a scripted generator takes Dict[str, Dict[str, Tensor]], so ids cannot be passed.
    src_tokens, src_lengths, _, _ = random_batch(dictionary, bsz=3, src_len=6)
    return {"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}}


def generate(generator, sample):
    with torch.no_grad():
        return generator.forward(sample)


def assert_same_hypotheses(scripted, eager):
    assert len(scripted) == len(eager)
    for hyps_s, hyps_e in zip(scripted, eager):
        assert [h["tokens"].tolist() for h in hyps_s] == [h["tokens"].tolist() for h in hyps_e]
        for h_s, h_e in zip(hyps_s, hyps_e):
            torch.testing.assert_close(h_s["positional_scores"], h_e["positional_scores"], atol=1e-5, rtol=0)
            torch.testing.assert_close(h_s["score"], h_e["score"], atol=1e-5, rtol=0)


def repeated_bigrams(tokens):
    bigrams = list(zip(tokens, tokens[1:]))
    return len(bigrams) - len(set(bigrams))


def test_scripted_generator_with_no_repeat_ngram_gives_the_eager_hypotheses(transformer, dictionary, sample, tmp_path):
    """fairseq's TestJitSequenceGenerator.test_ensemble_sequence_generator, with the plugin imported."""
    def make(**kw):
        return SequenceGenerator([transformer], dictionary, beam_size=2, max_len_b=MAX_LEN_B, **kw)

    unblocked = generate(make(), sample)
    # not vacuous: without blocking this model does repeat a bigram
    assert any(repeated_bigrams(h["tokens"].tolist()) for hyps in unblocked for h in hyps)

    scripted = torch.jit.script(make(no_repeat_ngram_size=2))
    scripted.save(str(tmp_path / "generator.pt"))
    loaded = torch.jit.load(str(tmp_path / "generator.pt"))
    eager = generate(make(no_repeat_ngram_size=2), sample)
    assert_same_hypotheses(generate(scripted, sample), eager)
    assert_same_hypotheses(generate(loaded, sample), eager)
    for hyps in eager:
        for h in hyps:
            assert repeated_bigrams(h["tokens"].tolist()) == 0, h["tokens"]


def banned_by_reference(row, step, n):
    """What n-gram blocking must ban after the tokens decoded so far, ``row[: step + 1]``: every
    word that followed an earlier occurrence of the last n - 1 words."""
    seq = row[: step + 1]
    last = seq[len(seq) - (n - 1):]
    return {seq[i + n - 1] for i in range(len(seq) - n + 1) if seq[i:i + n - 1] == last}


@pytest.mark.parametrize("n", [2, 3])
def test_cpu_ngram_blocking_bans_what_the_decoded_tokens_repeat(n):
    """The generator's buffer holds pads after ``step``: fairseq's CPU code read them as the last
    words and banned nothing; the patch (eager and scripted) bans exactly the reference's words."""
    bsz, beam, step, vocab, pad = 2, 2, 6, 12, 1
    decoded = torch.tensor([
        [2, 5, 6, 5, 6, 5, 6],  # ... 5 6: after "6" came 5 (n=2); after "5 6" came 5 (n=3)
        [2, 7, 7, 7, 8, 7, 7],
        [2, 4, 5, 6, 7, 8, 9],  # nothing repeats
        [2, 9, 4, 9, 5, 9, 4],
    ])
    tokens = torch.cat([decoded, torch.full((bsz * beam, 5), pad)], dim=1)  # max_len + 2 columns
    block = NGramRepeatBlock(n, use_extension=False)
    scripted = torch.jit.script(NGramRepeatBlock(n, use_extension=False))
    expected = [banned_by_reference(row, step, n) for row in decoded.tolist()]
    assert any(expected) and not all(expected)
    for blocker in (block, scripted):
        lprobs = blocker(tokens, torch.zeros(bsz * beam, vocab), bsz, beam, step)
        banned = [set(torch.isinf(row).nonzero().flatten().tolist()) for row in lprobs]
        assert banned == expected


def test_scripted_generator_with_diverse_beam_search_gives_the_eager_hypotheses(transformer, dictionary, sample):
    """``DiverseBeamSearch.step`` is patched too (compat): scripted, the fixed search runs."""
    def make():
        strategy = search.DiverseBeamSearch(dictionary, num_groups=2, diversity_strength=0.5)
        return SequenceGenerator([transformer], dictionary, beam_size=4, max_len_b=MAX_LEN_B,
                                 search_strategy=strategy)

    scripted = torch.jit.script(make())
    if DIVERSE_BEAM_FIX_APPLIED:  # fairseq-fixed; 0.12.2's search needs no fix and has no such attribute
        assert scripted.search.candidate_multiple == 2
    assert_same_hypotheses(generate(scripted, sample), generate(make(), sample))


@pytest.mark.skipif(not DIVERSE_BEAM_FIX_APPLIED, reason="this fairseq's DiverseBeamSearch is not patched "
                    "(0.12.2's search: no group overlap rows, no original_batch_idxs)")
def test_scripted_diverse_beam_search_keeps_its_exported_step(dictionary):
    """fairseq exports ``step`` (``@torch.jit.export``): a patch must not drop it from a scripted
    search, and the scripted step chooses what the eager one does (two steps, ids not 0..bsz-1)."""
    def make():
        return search.DiverseBeamSearch(dictionary, num_groups=2, diversity_strength=0.5)

    eager, scripted = make(), torch.jit.script(make())
    bsz, beam, vocab = 3, 4, len(dictionary)
    g = torch.Generator().manual_seed(0)
    lprobs = [torch.randn(bsz, beam, vocab, generator=g).log_softmax(-1) for _ in range(2)]
    ids = torch.tensor([16, 3, 9])
    first = [s.step(0, lprobs[0].clone(), torch.zeros(bsz, beam, 0), None, ids) for s in (eager, scripted)]
    for out_e, out_s in zip(*first):
        torch.testing.assert_close(out_s, out_e)
    scores = first[0][0][:, :beam].unsqueeze(-1)  # bsz x beam x 1
    keep = torch.tensor([2, 0])  # sentence 1 finished: rows of the others, ids as fairseq passes them
    second = [s.step(1, lprobs[1][keep].clone(), scores[keep], None, ids[keep]) for s in (eager, scripted)]
    for out_e, out_s in zip(*second):
        torch.testing.assert_close(out_s, out_e)
