"""A recurrent encoder (LSTM or GRU, optionally bidirectional) shared by the three models.

Modelled on ``fairseq.models.lstm.LSTMEncoder``, with two differences that the decoders
here need:

* everything it returns is **batch-first** (``B x ...``), so ``reorder_encoder_out`` reorders
  every entry along dim 0, and the copy distribution (CoRe) and the word attention (Wu et al.)
  can index source positions without transposes;
* it also returns the right-padded ``src_tokens`` and the source word embeddings, because
  ``SequenceGenerator`` calls the decoder with ``encoder_out`` only: whatever the decoder
  needs about the source must travel inside it.
"""
import torch
import torch.nn as nn
from fairseq import utils
from fairseq.models import FairseqEncoder

from fairseq_wean.modules.decoder_state import reorder_per_sentence
from fairseq_wean.modules.layers import RNN, Dropout

DEFAULT_MAX_POSITIONS = 1024


def add_rnn_seq2seq_args(parser, cell_name, bidirectional_option=False):
    """Declare the options the three models share (dropout, recurrent sizes and depths, length
    limits), so that a flag means the same in every model. Each model's ``add_args`` adds its
    own options (embedding sizes, scores, paper-specific ones) with help naming its paper's symbols.

    ``cell_name`` (e.g. ``"LSTM"``) is only used in the help texts; ``bidirectional_option``
    adds ``--encoder-bidirectional`` for models whose paper leaves the direction open.
    """
    parser.add_argument("--dropout", type=float, metavar="D",
                        help="dropout probability (embeddings, between recurrent layers, outputs)")
    parser.add_argument("--encoder-hidden-size", type=int, metavar="N",
                        help="encoder {} hidden size per direction (a bidirectional encoder's states "
                             "have twice this size)".format(cell_name))
    parser.add_argument("--encoder-layers", type=int, metavar="N", help="number of encoder layers")
    if bidirectional_option:
        parser.add_argument("--encoder-bidirectional", action="store_true",
                            help="make the encoder bidirectional")
    parser.add_argument("--decoder-hidden-size", type=int, metavar="N",
                        help="decoder {} hidden size".format(cell_name))
    parser.add_argument("--decoder-layers", type=int, metavar="N", help="number of decoder layers")
    parser.add_argument("--max-source-positions", type=int, metavar="N",
                        help="longest source sentence the model accepts")
    parser.add_argument("--max-target-positions", type=int, metavar="N",
                        help="longest target sentence the model generates")


class RNNEncoder(FairseqEncoder):
    """Embeds ``src_tokens`` (B x S, left- or right-padded) and runs a (bi)RNN over them.

    ``forward`` returns a dict whose tensors are all batch-first:

    * ``encoder_states``: B x S x C, C = hidden_size * num_directions; zeros at padding
    * ``encoder_padding_mask``: B x S, True at padding
    * ``final_state``: B x C, the top layer's last state (both directions concatenated)
    * ``src_tokens``: B x S, right-padded, aligned with ``encoder_states``
    * ``src_embeddings``: B x S x E, the (dropped-out) word embeddings x_j
    * ``sentence_ids``: B, the sentence each row belongs to (see :func:`reorder_per_sentence`)
    """

    def __init__(
        self,
        dictionary,
        embed_tokens,
        hidden_size=256,
        num_layers=1,
        dropout_in=0.1,
        dropout_out=0.1,
        bidirectional=False,
        cell_type="lstm",
        left_pad=True,
        max_source_positions=DEFAULT_MAX_POSITIONS,
    ):
        super().__init__(dictionary)
        self.embed_tokens = embed_tokens
        self.padding_idx = embed_tokens.padding_idx
        self.dropout_in = Dropout(dropout_in, self)
        self.dropout_out = Dropout(dropout_out, self)
        self.left_pad = left_pad
        self.max_source_positions = max_source_positions
        self.num_directions = 2 if bidirectional else 1
        self.cell_type = cell_type
        self.rnn = RNN(
            cell_type,
            embed_tokens.embedding_dim,
            hidden_size,
            num_layers=num_layers,
            dropout=dropout_out if num_layers > 1 else 0.0,
            bidirectional=bidirectional,
            batch_first=True,
        )
        self.output_units = hidden_size * self.num_directions

    @classmethod
    def from_args(cls, args, dictionary, embed_tokens, cell_type, bidirectional):
        """The encoder the options of :func:`add_rnn_seq2seq_args` describe."""
        return cls(
            dictionary,
            embed_tokens,
            hidden_size=args.encoder_hidden_size,
            num_layers=args.encoder_layers,
            dropout_in=args.dropout,
            dropout_out=args.dropout,
            bidirectional=bidirectional,
            cell_type=cell_type,
            left_pad=getattr(args, "left_pad_source", True),
            max_source_positions=args.max_source_positions,
        )

    def forward(self, src_tokens, src_lengths=None, **unused):
        if self.left_pad:
            # pack_padded_sequence wants right padding; every consumer of the encoder's
            # outputs uses this same order (see module docstring).
            src_tokens = utils.convert_padding_direction(
                src_tokens, self.padding_idx, left_to_right=True
            )
        padding_mask = src_tokens.eq(self.padding_idx)
        lengths = (~padding_mask).long().sum(dim=1)
        bsz, src_len = src_tokens.size()

        embeddings = self.dropout_in(self.embed_tokens(src_tokens))
        if self.cell_type == "gru" and embeddings.device.type == "cpu":
            # the packed sequence's result without packing (layers.GRU.forward with lengths: faster
            # on the CPU; on a GPU cuDNN takes the packed sequence as it is)
            states, final = self.rnn(embeddings, lengths=lengths)
        else:
            packed = nn.utils.rnn.pack_padded_sequence(
                embeddings, lengths.cpu(), batch_first=True, enforce_sorted=False
            )
            packed_out, final = self.rnn(packed)
            states, _ = nn.utils.rnn.pad_packed_sequence(
                packed_out, batch_first=True, padding_value=0.0, total_length=src_len
            )
        states = self.dropout_out(states)
        final_hidden = final[0] if self.cell_type == "lstm" else final
        # (layers * directions) x B x H -> the top layer's directions, concatenated: B x C
        top = final_hidden[-self.num_directions :].transpose(0, 1).reshape(bsz, -1)
        return {
            "encoder_states": states,
            "encoder_padding_mask": padding_mask,
            "final_state": top,
            "src_tokens": src_tokens,
            "src_embeddings": embeddings,
            "sentence_ids": torch.arange(bsz, device=src_tokens.device),
        }

    def reorder_encoder_out(self, encoder_out, new_order):
        """Every entry is batch-first, so all reorder along dim 0.

        Beam search reorders at every step, mostly among the hypotheses of one sentence, whose
        encoder rows are identical: then nothing moves and the copies are skipped.
        """
        return reorder_per_sentence(encoder_out, new_order)

    def max_positions(self):
        return self.max_source_positions
