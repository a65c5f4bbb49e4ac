"""What a recurrent decoder carries through fairseq's search, apart from the encoder itself.

The three decoders (``wean_lstm``, ``core_copy``, ``word_attn_gated``) share:

* :func:`initial_decoder_state`: s_0 from the encoder's final state;
* :func:`attention_in_input_order`: attention over the encoder's right-padded positions, turned
  back into the source order that ``--print-alignment`` reads;
* :func:`reorder_per_sentence`: beam search's reorder of what is computed once per sentence
  (the encoder output and the decoders' caches of key projections and masks), skipped when
  every row stays within its sentence;
* :func:`current_step`: the one target position an incremental call decodes;
* :class:`RecurrentDecoder`: the scaffolding around these (``init_state_proj``,
  ``left_pad_source``, ``max_positions``), as a base class.
"""
import torch
from fairseq.models import FairseqIncrementalDecoder

from fairseq_wean.modules.layers import Dropout, Linear


def rows_stay_in_their_sentences(sentence_ids, new_order):
    """True when ``index_select(0, new_order)`` sends every row to a row of its own sentence.

    sentence_ids: B (None when unknown), new_order: B'. Rows of one sentence only ever arise as
    copies of that sentence's row (beam expansion, reordering), so tensors that hold per-sentence
    data (encoder states, key projections, masks over the source) are unchanged by such a
    reorder, and need not be copied. fairseq's beam search reorders at every step, mostly within
    each sentence's beam; the batch shrinks (a real reorder) only when sentences finish.
    """
    if sentence_ids is None or new_order.numel() != sentence_ids.numel():
        return False
    return torch.equal(sentence_ids.index_select(0, new_order), sentence_ids)


def reorder_per_sentence(per_sentence, new_order):
    """``index_select(0, new_order)`` on every entry of a dict of per-sentence data, or the dict
    itself when every row stays within its sentence (nothing to copy).

    per_sentence: {name: batch-first tensor (B x ...), a tuple of them, or None}, with
    ``"sentence_ids"`` (B) among them; without it every reorder copies. Serves the encoder output
    and the decoders' caches of what is computed once per sentence (key projections, masks).
    """
    if rows_stay_in_their_sentences(per_sentence.get("sentence_ids"), new_order):
        return per_sentence
    return {key: _select_rows(value, new_order) for key, value in per_sentence.items()}


def _select_rows(value, new_order):
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(v.index_select(0, new_order) for v in value)
    return value.index_select(0, new_order)


def attention_in_input_order(weights, padding_mask, left_pad):
    """Attention over the encoder's right-padded positions -> the caller's source order.

    weights: B x T x S over right-padded positions; padding_mask: B x S (right-padded).
    fairseq's ``--print-alignment`` reads ``extra["attn"][0]`` against the ``src_tokens`` it
    passed in (left-padded by default), so each row is shifted back by its sentence's number
    of pads. Weight 0 lands on padding.
    """
    if not left_pad:
        return weights
    src_len = padding_mask.size(1)
    num_pads = padding_mask.long().sum(dim=1, keepdim=True)  # B x 1
    positions = torch.arange(src_len, device=weights.device).unsqueeze(0)  # 1 x S
    # left-padded position p holds right-padded position p - num_pads; padding positions wrap
    # onto right-padded padding, whose weight is 0.
    index = (positions - num_pads) % src_len  # B x S
    return weights.gather(2, index.unsqueeze(1).expand_as(weights))


def initial_decoder_state(init_proj, final_state, num_layers):
    """s_0 = tanh(W_s h_final) for every decoder layer: L x B x H.

    Using the top encoder layer's final state works for any encoder/decoder layer counts
    (the LCSTS setting of WEAN has a 2-layer encoder and a 1-layer decoder).
    """
    s0 = torch.tanh(init_proj(final_state))
    return s0.unsqueeze(0).expand(num_layers, -1, -1).contiguous()


def current_step(prev_output_tokens, incremental_state):
    """The target positions a decoder call computes: B x T when teacher-forced, B x 1 (the
    last token) in incremental decoding, where earlier steps live in the incremental state."""
    if incremental_state is not None:
        return prev_output_tokens[:, -1:]
    return prev_output_tokens


class RecurrentDecoder(FairseqIncrementalDecoder):
    """``FairseqIncrementalDecoder`` with what the recurrent decoders here have in common.

    * ``embed_tokens``: the decoder's input embeddings (an ``nn.Embedding``);
    * ``init_state_proj``: W_s of s_0 = tanh(W_s h_final) (:meth:`initial_hidden`; h_final: both
      directions' final states, or the backward one's, ``initial_state_from="backward"``);
    * ``left_pad_source``: how the caller padded ``src_tokens``, for
      :meth:`attention_in_input_order`;
    * ``max_positions()``: ``max_target_positions``.

    Subclasses build their own layers after calling ``__init__``; the order in which modules
    are created (and so the random initialisation for a seed) and the parameter names are the
    ones each decoder had before this class existed, so old checkpoints load unchanged.
    """

    def __init__(self, dictionary, embed_tokens, encoder_output_units, hidden_size, num_layers,
                 dropout, left_pad_source, max_target_positions, initial_state_from="both"):
        super().__init__(dictionary)
        self.embed_tokens = embed_tokens
        self.left_pad_source = left_pad_source
        self.num_layers = num_layers
        self.max_target_positions = max_target_positions
        self.dropout = Dropout(dropout, self)
        # W_s; s_0 reads the final state of both directions (default), or with
        # initial_state_from="backward" that of the backward one only (RNNsearch's s_0 = tanh(W_s h<-_1))
        self.initial_state_from = initial_state_from
        init_units = encoder_output_units // 2 if initial_state_from == "backward" else encoder_output_units
        self.init_state_proj = Linear(init_units, hidden_size)

    def initial_hidden(self, encoder_out):
        """s_0 for every layer: L x B x H (see :func:`initial_decoder_state`)."""
        final = encoder_out["final_state"]  # B x C: [forward's last state; backward's (position 1)]
        if self.initial_state_from == "backward":
            final = final[:, final.size(1) // 2 :]
        return initial_decoder_state(self.init_state_proj, final, self.num_layers)

    def attention_in_input_order(self, weights, encoder_out):
        """B x T x S weights over the encoder's right-padded positions -> the caller's order."""
        return attention_in_input_order(weights, encoder_out["encoder_padding_mask"], self.left_pad_source)

    def max_positions(self):
        return self.max_target_positions
