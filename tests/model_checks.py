"""Reference checks every architecture must pass (used by each model's tests)."""
import torch
from fairseq.sequence_generator import SequenceGenerator


def full_forward_log_probs(model, src_tokens, src_lengths, prev_output_tokens):
    out = model(src_tokens, src_lengths, prev_output_tokens)
    return model.get_normalized_probs(out, log_probs=True)


def incremental_log_probs(model, src_tokens, src_lengths, prev_output_tokens):
    """Teacher-forced, but one step at a time through the incremental-state path."""
    encoder_out = model.encoder(src_tokens, src_lengths=src_lengths)
    incremental_state = {}
    steps = []
    for t in range(prev_output_tokens.size(1)):
        out = model.decoder(prev_output_tokens[:, : t + 1], encoder_out=encoder_out,
                            incremental_state=incremental_state)
        # clone: a model may return a per-batch buffer that the next step overwrites (core_copy)
        steps.append(model.get_normalized_probs(out, log_probs=True).clone())
    return torch.cat(steps, dim=1)


def assert_incremental_equals_full(model, batch, atol=1e-5):
    src_tokens, src_lengths, prev, _ = batch
    model.eval()
    with torch.no_grad():
        full = full_forward_log_probs(model, src_tokens, src_lengths, prev)
        inc = incremental_log_probs(model, src_tokens, src_lengths, prev)
    assert full.shape == inc.shape
    assert torch.isfinite(full).any(dim=-1).all()
    torch.testing.assert_close(inc, full, atol=atol, rtol=0)


def beam_search(model, dictionary, src_tokens, src_lengths, beam=3, max_len_b=12):
    generator = SequenceGenerator([model], dictionary, beam_size=beam, max_len_b=max_len_b)
    sample = {"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}}
    with torch.no_grad():
        return generator.forward(sample)


def strip_padding(src_tokens, pad):
    return src_tokens[src_tokens.ne(pad)].unsqueeze(0)


def assert_batched_beam_equals_single(model, dictionary, src_tokens, src_lengths, beam=3):
    """Beam search over a padded batch == beam search over each sentence alone."""
    model.eval()
    batched = beam_search(model, dictionary, src_tokens, src_lengths, beam)
    for i in range(src_tokens.size(0)):
        single_src = strip_padding(src_tokens[i], dictionary.pad())
        single = beam_search(model, dictionary, single_src, torch.tensor([single_src.size(1)]), beam)[0]
        assert len(single) == len(batched[i])
        for hyp_b, hyp_s in zip(batched[i], single):
            assert hyp_b["tokens"].tolist() == hyp_s["tokens"].tolist()
            torch.testing.assert_close(hyp_b["score"], hyp_s["score"], atol=1e-4, rtol=0)
    return batched


def beam_search_recording_reorders(model, dictionary, src_tokens, src_lengths, beam, max_len_b=12):
    """Beam search over the batch, and the number of rows of every reorder of the decoder's cache."""
    rows = []
    reorder = model.decoder.reorder_incremental_state

    def recording_reorder(incremental_state, new_order):
        rows.append(new_order.numel())
        return reorder(incremental_state, new_order)

    model.decoder.reorder_incremental_state = recording_reorder  # fairseq calls it by attribute
    try:
        return beam_search(model, dictionary, src_tokens, src_lengths, beam, max_len_b), rows
    finally:
        del model.decoder.reorder_incremental_state


def teacher_forced_scores(model, dictionary, src_row, hypotheses):
    """log p(y_t | y_<t, x) of every token of each hypothesis (its final </s> included), from one
    full forward pass over the hypotheses of one sentence (``src_row``: 1 x S, padded as in the
    batch): no incremental state, so nothing of beam search's reordering."""
    from fairseq.data import data_utils

    tokens = [h["tokens"] for h in hypotheses]
    prev = data_utils.collate_tokens(tokens, dictionary.pad(), dictionary.eos(), move_eos_to_beginning=True)
    target = data_utils.collate_tokens(tokens, dictionary.pad(), dictionary.eos())
    n = len(tokens)
    src_lengths = src_row.ne(dictionary.pad()).sum(dim=1).expand(n)
    with torch.no_grad():
        lprobs = full_forward_log_probs(model, src_row.expand(n, -1), src_lengths, prev)
    scores = lprobs.gather(2, target.unsqueeze(-1)).squeeze(-1)
    return [scores[i, : len(t)] for i, t in enumerate(tokens)]


def assert_beam_scores_equal_teacher_forced_scores(model, dictionary, src_tokens, src_lengths, beam=3,
                                                   max_len_b=12, atol=1e-4):
    """Every hypothesis of a batched beam search has the positional scores that a teacher-forced
    forward pass of its words gives, while the batch shrinks.

    Beam search reorders the decoder's cached state at every step: rows move among the
    hypotheses of a sentence, and the batch shrinks when sentences finish (rows of other sentences
    move up). A cached tensor left out of ``reorder_incremental_state`` gives a hypothesis another
    hypothesis's past, silently: comparing batched with single-sentence search does not see it
    (both reorder the same wrong way), a teacher-forced pass does. The caller's weights must make
    sentences finish at different steps (checked here: the reorders' row counts change),
    otherwise per-sentence caches are never really reordered. Returns the hypotheses.
    """
    model.eval()
    hypos, rows = beam_search_recording_reorders(model, dictionary, src_tokens, src_lengths, beam, max_len_b)
    assert len(set(rows)) > 1, "no sentence finished before the others: the batch never shrank ({})".format(rows)
    assert any(len({h["tokens"].numel() for h in sentence}) > 1 for sentence in hypos), "all of one length"
    for i, sentence in enumerate(hypos):
        expected = teacher_forced_scores(model, dictionary, src_tokens[i: i + 1], sentence)
        for h, reference in zip(sentence, expected):
            assert torch.isfinite(reference).all(), (i, h["tokens"])
            torch.testing.assert_close(h["positional_scores"], reference, atol=atol, rtol=0)
    return hypos


def scale_parameters(model, factor):
    """Every parameter times ``factor``: peaked softmaxes, so that </s> wins at some steps and not
    at others and sentences finish at different steps (tiny random models otherwise keep every
    hypothesis to the maximum length)."""
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(factor)
    return model
