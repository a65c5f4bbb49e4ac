"""WEAN: Word Embedding Attention Network (Ma et al., NAACL 2018).

Paper: "Query and Output: Generating Words by Querying Distributed Word Representations for
Paraphrase Generation" (NAACL-HLT 2018, ACL Anthology N18-1018, arXiv:1803.01465), section 2;
equation numbers are the paper's. The decoder does not
end in a vocabulary-sized softmax layer W s_t (eq. 3). It forms a query from the decoder
state and the attention context and *retrieves* a word by scoring the query against every
word embedding of the shared embedding matrix:

    c_t   = sum_i alpha_ti h_i                        (eq. 1)
    alpha = softmax_i g(s_t, h_i)                     (eq. 2)  -> SourceAttention
    q_t   = tanh(W_c [s_t; c_t])                      (eq. 4)  -> WeanDecoder.query_proj
    f(q_t, e_i) = dot | general | concat              (eq. 5)  -> WeanDecoder.output_score
    p(y_t) = softmax_i f(q_t, e_i)                    (eq. 6)  -> get_normalized_probs
    L = -sum log p(y_t)                               (eq. 7)  -> fairseq's cross_entropy

Encoder input, decoder input and output keys are one embedding matrix, so the source and
target dictionaries must be the same (``fairseq-preprocess --joined-dictionary``). At test
time the chosen word's embedding is the next decoder input, which is what fairseq's
incremental decoding does with ``prev_output_tokens``.

The decoder has no input feeding (the paper's s_t depends on y_{t-1} and s_{t-1} only), so
teacher-forced training runs the LSTM over the whole target at once and attends for all
steps in one batched product; incremental decoding runs the same LSTM one step at a time.
"""
import torch
from fairseq.models import (
    register_model,
    register_model_architecture,
)

from fairseq_wean.modules.checked_model import CheckedEncoderDecoderModel
from fairseq_wean.modules.attention import SCORE_CHOICES, ScoreFunction, SourceAttention
from fairseq_wean.modules.decoder_state import RecurrentDecoder, current_step
from fairseq_wean.modules.layers import RNN, Embedding, Linear
from fairseq_wean.modules.model_options import (add_shared_embed_dim_args, check_choice, check_model_options,
                                                require_joined_dictionary, shared_embed_dim)
from fairseq_wean.modules.rnn_encoder import (
    DEFAULT_MAX_POSITIONS,
    RNNEncoder,
    add_rnn_seq2seq_args,
)


@register_model("wean_lstm")
class WeanLSTMModel(CheckedEncoderDecoderModel):
    """LSTM encoder-decoder whose word generator queries the shared word embeddings."""

    @staticmethod
    def add_args(parser):
        add_rnn_seq2seq_args(parser, "LSTM", bidirectional_option=True)
        add_shared_embed_dim_args(parser, "word embedding size k, shared by encoder input, decoder input "
                                          "and the output keys e_i")
        parser.add_argument("--attention-score", choices=SCORE_CHOICES,
                            help="score g(s_t, h_i) of the source attention (eq. 2)")
        parser.add_argument("--wean-score", choices=SCORE_CHOICES,
                            help="score f(q_t, e_i) of the word generator (eq. 5); the paper "
                                 "chose 'general'")

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        check_choice(args, "attention_score", SCORE_CHOICES)
        check_choice(args, "wean_score", SCORE_CHOICES)
        check_model_options(args, ("embed_dim",), encoder_directions=2 if args.encoder_bidirectional else 1)
        require_joined_dictionary(task, args.arch)
        dictionary = task.source_dictionary
        embed_tokens = Embedding(len(dictionary), args.embed_dim, dictionary.pad())
        encoder = RNNEncoder.from_args(
            args, dictionary, embed_tokens, cell_type="lstm", bidirectional=args.encoder_bidirectional
        )
        decoder = WeanDecoder(
            dictionary,
            embed_tokens,
            encoder_output_units=encoder.output_units,
            hidden_size=args.decoder_hidden_size,
            num_layers=args.decoder_layers,
            dropout=args.dropout,
            attention_score=args.attention_score,
            wean_score=args.wean_score,
            max_target_positions=args.max_target_positions,
            left_pad_source=encoder.left_pad,
        )
        return cls(encoder, decoder, dictionary)


class WeanDecoder(RecurrentDecoder):
    """LSTM decoder with Luong attention and the WEAN word generator.

    Shapes: ``prev_output_tokens`` B x T; returns scores ``B x T x V`` (unnormalised
    f(q_t, e_i), eq. 5) and ``{"attn": [B x T x S]}``, the attention over the source
    positions of the ``src_tokens`` given to the encoder (as ``--print-alignment`` reads it).

    Incremental state key ``"cached_state"``: ``(hidden, cell)``, each L x B x H.
    """

    def __init__(
        self,
        dictionary,
        embed_tokens,
        encoder_output_units,
        hidden_size=256,
        num_layers=2,
        dropout=0.4,
        attention_score="general",
        wean_score="general",
        max_target_positions=DEFAULT_MAX_POSITIONS,
        left_pad_source=True,
    ):
        super().__init__(dictionary, embed_tokens, encoder_output_units, hidden_size, num_layers,
                         dropout, left_pad_source, max_target_positions)
        embed_dim = embed_tokens.embedding_dim
        self.rnn = RNN(
            "lstm", embed_dim, hidden_size, num_layers=num_layers,
            dropout=dropout if num_layers > 1 else 0.0, batch_first=True,
        )
        self.attention = SourceAttention(hidden_size, encoder_output_units, attention_score)
        # eq. 4: W_c maps [s_t; c_t] into the embedding space, where the keys e_i live.
        self.query_proj = Linear(hidden_size + encoder_output_units, embed_dim, bias=False)
        # eq. 5: the whole output layer; its parameters are what WEAN's Table 5 counts.
        self.output_score = ScoreFunction(embed_dim, embed_dim, wean_score)

    def output_layer_num_parameters(self):
        """Parameters of the word generator (eq. 5), WEAN Table 5's accounting."""
        return sum(p.numel() for p in self.output_score.parameters())

    def forward(self, prev_output_tokens, encoder_out, incremental_state=None, **unused):
        features, attn = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        attn = self.attention_in_input_order(attn, encoder_out)
        return self.output_layer(features), {"attn": [attn]}

    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None, **unused):
        """Returns the queries q_t (B x T x k, eq. 4) and the attention (B x T x S, over the
        encoder's right-padded positions)."""
        x = self.dropout(self.embed_tokens(current_step(prev_output_tokens, incremental_state)))  # B x T x k

        cached = self.get_incremental_state(incremental_state, "cached_state")
        if cached is None:
            hidden = self.initial_hidden(encoder_out)
            state = (hidden, torch.zeros_like(hidden))
        else:
            state = cached
        states, (hidden, cell) = self.rnn(x, state)  # s_t: B x T x H
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "cached_state", (hidden, cell))

        enc = encoder_out["encoder_states"]
        context, attn = self.attention(states, enc, enc, encoder_out["encoder_padding_mask"])  # eq. 1-2
        query = torch.tanh(self.query_proj(torch.cat([states, context], dim=-1)))  # eq. 4
        return self.dropout(query), attn

    def output_layer(self, features, **unused):
        """eq. 5: score every candidate word's embedding e_i against q_t -> B x T x V."""
        return self.output_score(features, self.embed_tokens.weight)

    def reorder_incremental_state(self, incremental_state, new_order):
        cached = self.get_incremental_state(incremental_state, "cached_state")
        if cached is None:
            return
        reordered = tuple(t.index_select(1, new_order) for t in cached)  # L x B x H: batch is dim 1
        self.set_incremental_state(incremental_state, "cached_state", reordered)


@register_model_architecture("wean_lstm", "wean_lstm")
def base_architecture(args):
    """The paper's simplification setting (PWKP, EW-SEW): 2 layers, 256, dropout 0.4."""
    args.dropout = getattr(args, "dropout", 0.4)
    args.embed_dim = shared_embed_dim(args, 256)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 256)
    args.encoder_layers = getattr(args, "encoder_layers", 2)
    args.encoder_bidirectional = getattr(args, "encoder_bidirectional", False)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 256)
    args.decoder_layers = getattr(args, "decoder_layers", 2)
    args.attention_score = getattr(args, "attention_score", "general")
    args.wean_score = getattr(args, "wean_score", "general")
    args.max_source_positions = getattr(args, "max_source_positions", DEFAULT_MAX_POSITIONS)
    args.max_target_positions = getattr(args, "max_target_positions", DEFAULT_MAX_POSITIONS)


@register_model_architecture("wean_lstm", "wean_lstm_lcsts")
def wean_lstm_lcsts(args):
    """The paper's LCSTS setting: 512 units, 2-layer encoder, 1-layer decoder, no dropout."""
    args.dropout = getattr(args, "dropout", 0.0)
    args.embed_dim = shared_embed_dim(args, 512)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 512)
    args.encoder_layers = getattr(args, "encoder_layers", 2)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 512)
    args.decoder_layers = getattr(args, "decoder_layers", 1)
    base_architecture(args)
