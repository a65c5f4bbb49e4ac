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
