"""The shared encoder: its outputs and final state against a plain RNN (CoRe eq. 1), and beam-search
reordering that skips copies when rows stay in their sentences."""
import pytest
import torch

from fairseq_wean.modules.decoder_state import reorder_per_sentence, rows_stay_in_their_sentences
from fairseq_wean.modules.rnn_encoder import RNNEncoder
from conftest import make_dictionary, random_batch


def encoder_and_output(bsz=3, beam=2):
    dictionary = make_dictionary(20)
    embed = torch.nn.Embedding(len(dictionary), 8, padding_idx=dictionary.pad())
    torch.manual_seed(0)
    encoder = RNNEncoder(dictionary, embed, hidden_size=6, num_layers=2, bidirectional=True,
                         cell_type="gru").eval()
    src, lengths, _, _ = random_batch(dictionary, bsz=bsz, src_len=5)
    with torch.no_grad():
        out = encoder(src, src_lengths=lengths)
    # as SequenceGenerator does first: every sentence's row copied once per hypothesis
    expand = torch.arange(bsz).repeat_interleave(beam)
    return encoder, encoder.reorder_encoder_out(out, expand), out


def assert_reordered(result, before, new_order):
    assert set(result) == set(before)
    for key in before:
        assert torch.equal(result[key], before[key].index_select(0, new_order)), key


def test_beam_expansion_is_a_real_reorder():
    encoder, beams, out = encoder_and_output()
    assert_reordered(beams, out, torch.arange(3).repeat_interleave(2))
    assert beams["sentence_ids"].tolist() == [0, 0, 1, 1, 2, 2]


def test_reorder_within_sentences_is_skipped_and_equals_a_full_reorder():
    encoder, beams, _ = encoder_and_output()
    within = torch.tensor([1, 1, 2, 3, 5, 4])  # each hypothesis continues one of its own sentence
    result = encoder.reorder_encoder_out(beams, within)
    assert result is beams  # nothing copied
    assert_reordered(result, beams, within)


def test_reorder_across_sentences_or_shrinking_copies():
    encoder, beams, _ = encoder_and_output()
    for new_order in (torch.tensor([2, 3, 0, 1, 4, 5]),  # rows of two sentences swapped
                      torch.tensor([0, 1, 4, 5])):  # sentence 1 finished: the batch shrinks
        result = encoder.reorder_encoder_out(beams, new_order)
        assert result is not beams
        assert_reordered(result, beams, new_order)


def test_rows_stay_in_their_sentences_cases():
    ids = torch.tensor([0, 0, 1, 1])
    assert rows_stay_in_their_sentences(ids, torch.tensor([1, 0, 3, 3]))
    assert not rows_stay_in_their_sentences(ids, torch.tensor([2, 0, 3, 3]))
    assert not rows_stay_in_their_sentences(ids, torch.tensor([0, 1]))
    assert not rows_stay_in_their_sentences(None, torch.tensor([0, 1, 2, 3]))


def test_reorder_per_sentence_handles_tuples_and_none():
    """The decoders' per-sentence caches hold tuples (core_copy's masks) and may hold None."""
    cache = {"sentence_ids": torch.tensor([0, 0, 1, 1]), "keys": torch.arange(8.0).view(4, 2),
             "masks": (torch.tensor([[True], [True], [False], [False]]), torch.tensor([[5], [5], [7], [7]])),
             "absent": None}
    assert reorder_per_sentence(cache, torch.tensor([1, 1, 2, 3])) is cache
    shrunk = reorder_per_sentence(cache, torch.tensor([2, 3]))
    assert shrunk["sentence_ids"].tolist() == [1, 1]
    assert shrunk["keys"].tolist() == [[4.0, 5.0], [6.0, 7.0]]
    assert shrunk["masks"][0].tolist() == [[False], [False]] and shrunk["masks"][1].tolist() == [[7], [7]]
    assert shrunk["absent"] is None
    # without sentence ids nothing can be skipped
    no_ids = {"keys": cache["keys"]}
    assert reorder_per_sentence(no_ids, torch.tensor([1, 0, 2, 3]))["keys"].tolist() == [[2.0, 3.0], [0.0, 1.0], [4.0, 5.0], [6.0, 7.0]]


@pytest.mark.parametrize("cell_type", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [True, False], ids=["bidirectional", "unidirectional"])
@pytest.mark.parametrize("left_pad", [True, False], ids=["left_padded", "right_padded"])
def test_outputs_and_final_state_match_a_plain_rnn_per_sentence(cell_type, bidirectional, left_pad):
    """CoRe eq. 1 (and the other two models' encoders): h_j = [h_j(forward); h_j(backward)] of the
    top layer, and the final state [forward state after the last word; backward state after the
    first word] of the top layer, recomputed one sentence at a time, without padding or packing,
    by a plain ``torch.nn.LSTM``/``GRU`` holding the same weights."""
    dictionary = make_dictionary(20)
    torch.manual_seed(1)
    embed = torch.nn.Embedding(len(dictionary), 5, padding_idx=dictionary.pad())
    hidden, layers = 4, 3
    encoder = RNNEncoder(dictionary, embed, hidden_size=hidden, num_layers=layers, bidirectional=bidirectional,
                         cell_type=cell_type, left_pad=left_pad).eval()
    reference = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell_type](
        5, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=True)
    reference.load_state_dict(encoder.rnn.state_dict())
    src, lengths, _, _ = random_batch(dictionary, bsz=4, src_len=6, left_pad=left_pad)
    assert len(set(lengths.tolist())) == 4  # every row has padding but the longest
    with torch.no_grad():
        out = encoder(src, src_lengths=lengths)
    directions = 2 if bidirectional else 1
    bsz, src_len = src.shape
    assert out["encoder_states"].shape == (bsz, src_len, hidden * directions)
    assert out["final_state"].shape == (bsz, hidden * directions)
    for b in range(bsz):
        n = int(lengths[b])
        words = src[b][src[b].ne(dictionary.pad())]  # the sentence without its padding
        assert out["src_tokens"][b, :n].tolist() == words.tolist()  # right-padded
        assert out["encoder_padding_mask"][b].tolist() == [False] * n + [True] * (src_len - n)
        with torch.no_grad():
            states, final = reference(embed(words).unsqueeze(0))
        states = states[0]
        final_hidden = (final[0] if cell_type == "lstm" else final)[:, 0]  # (layers x directions) x H
        torch.testing.assert_close(out["encoder_states"][b, :n], states, rtol=1e-5, atol=1e-6)
        assert torch.equal(out["encoder_states"][b, n:], torch.zeros(src_len - n, hidden * directions))
        forward_last = states[n - 1, :hidden]  # after reading the last word left to right
        # the top layer (the last `directions` rows of h_n), forward half first
        top = final_hidden[(layers - 1) * directions:].reshape(-1)
        torch.testing.assert_close(out["final_state"][b, :hidden], forward_last, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out["final_state"][b], top, rtol=1e-5, atol=1e-6)
        if bidirectional:
            backward_last = states[0, hidden:]  # after reading the first word right to left
            torch.testing.assert_close(out["final_state"][b, hidden:], backward_last, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bidirectional", [True, False], ids=["bidirectional", "unidirectional"])
@pytest.mark.parametrize("layers", [1, 3])
def test_gru_on_a_right_padded_batch_equals_gru_on_the_packed_batch(bidirectional, layers):
    """GRU.forward with lengths (the encoder's path on the CPU) against torch's GRU on the packed
    sequence: outputs (zeros at padding), every layer's and direction's final state, and the
    gradients of both for the inputs and every weight, in float64, in training mode."""
    from fairseq_wean.modules.layers import RNN

    torch.manual_seed(2)
    gru = RNN("gru", 5, 4, num_layers=layers, bidirectional=bidirectional, batch_first=True).double().train()
    lengths = torch.tensor([6, 2, 5, 1, 6, 3])
    x = torch.randn(6, 6, 5, dtype=torch.float64, requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out_packed, final_packed = gru(packed)
    out_packed, _ = torch.nn.utils.rnn.pad_packed_sequence(out_packed, batch_first=True, total_length=6)
    out, final = gru(x, lengths=lengths)
    torch.testing.assert_close(out, out_packed, rtol=0, atol=1e-12)
    torch.testing.assert_close(final, final_packed, rtol=0, atol=1e-12)
    assert final.shape == (layers * (2 if bidirectional else 1), 6, 4)
    gen = torch.Generator().manual_seed(3)
    g_out = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    g_final = torch.randn(final.shape, generator=gen, dtype=torch.float64)
    inputs = [x, *gru.parameters()]
    got = torch.autograd.grad((out * g_out).sum() + (final * g_final).sum(), inputs)
    want = torch.autograd.grad((out_packed * g_out).sum() + (final_packed * g_final).sum(), inputs)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("lengths,message", [
    ([6, 0, 5], "every length must be in 1 .. 6"),  # packing would raise; a junk state otherwise
    ([6, 7, 5], "every length must be in 1 .. 6"),  # an IndexError otherwise
    ([6, 5], "one length per sentence (3)"),
])
def test_gru_on_a_right_padded_batch_refuses_impossible_lengths(lengths, message):
    from fairseq_wean.modules.layers import RNN

    gru = RNN("gru", 5, 4, bidirectional=True, batch_first=True)
    with pytest.raises(ValueError) as error:
        gru(torch.randn(3, 6, 5), lengths=torch.tensor(lengths))
    assert message in str(error.value)


@pytest.mark.parametrize("path", ["padded", "packed"])
def test_gru_dropout_acts_between_layers_only(path):
    """nn.GRU's dropout: on the outputs of every layer but the top one, in training only. So the top
    layer's outputs have no dropped (exactly zero) element, training differs from eval, and with
    one layer dropout changes nothing: on the padded path (the encoder's on the CPU) as on torch's."""
    from fairseq_wean.modules.layers import RNN

    lengths = torch.tensor([6, 2, 5, 1, 6, 3])
    x = torch.randn(6, 6, 5)
    real = torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)

    def outputs(gru):
        if path == "padded":
            return gru(x, lengths=lengths)[0]
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        return torch.nn.utils.rnn.pad_packed_sequence(gru(packed)[0], batch_first=True, total_length=6)[0]

    torch.manual_seed(0)
    gru = RNN("gru", 5, 8, num_layers=3, bidirectional=True, batch_first=True, dropout=0.5)
    with torch.no_grad():
        trained = outputs(gru.train())
        evaluated = outputs(gru.eval())
    assert (trained[real] == 0).sum() == 0  # the top layer: nothing dropped
    assert not torch.allclose(trained, evaluated)  # the layers below: dropout acts
    torch.manual_seed(0)
    single = RNN("gru", 5, 8, num_layers=1, bidirectional=True, batch_first=True)
    single.dropout = 0.5  # nn.GRU warns for one layer, and drops nothing
    with torch.no_grad():
        assert torch.equal(outputs(single.train()), outputs(single.eval()))
