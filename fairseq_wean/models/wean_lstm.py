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

**The candidate words (section 2.4): ``--wean-candidates``.** The paper scores the n most
frequent words of the training *source* side, inputs and outputs sharing that vocabulary; every
other target word is UNK. The default, ``all``, scores every entry of the joined dictionary,
special symbols included, as fairseq's softmax models do (a departure, kept so that the published
numbers stay valid). ``source`` is section 2.4 on a joined dictionary: the words of the training
source side plus ``</s>`` and ``<unk>`` (n is the dictionary's own cut, fairseq-preprocess
``--thresholdsrc``/``--nwordssrc``); a training or validation target word outside that set is
scored as ``<unk>`` (:meth:`WeanLSTMModel.get_targets`), as it is in the paper's data. ``target``
takes the words of the training target side instead: translation, where the source side is another
language. The set is counted from the binarized training data when the model is first built for
training and kept in the checkpoint (buffer ``decoder.candidate_mask``; see
:mod:`fairseq_wean.modules.restricted_vocab`); the other words score -inf before the float32
softmax (never a whole row: ``</s>`` and ``<unk>`` always stay).

The decoder has no input feeding (the paper's s_t depends on y_{t-1} and s_{t-1} only), so
teacher-forced training runs the LSTM over the whole target at once and attends for all
steps in one batched product; incremental decoding runs the same LSTM one step at a time.
"""
import logging

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
                                                require_joined_dictionary, set_saved_arg, shared_embed_dim)
from fairseq_wean.modules.restricted_vocab import count_training_words, frequent_mask_from_counts
from fairseq_wean.modules.rnn_encoder import (
    DEFAULT_MAX_POSITIONS,
    RNNEncoder,
    add_rnn_seq2seq_args,
)


logger = logging.getLogger(__name__)
CANDIDATE_CHOICES = ("all", "source", "target")


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
        parser.add_argument("--wean-candidates", choices=CANDIDATE_CHOICES,
                            help="the candidate words the generator scores: all (every dictionary entry, "
                                 "special symbols included), source (section 2.4: the words of the training "
                                 "source side, plus end-of-sentence and unknown-word; other target words are "
                                 "scored as unknown) or target (the training target side's words: translation); "
                                 "counted from the binarized training data and kept in the checkpoint")

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        check_choice(args, "attention_score", SCORE_CHOICES)
        check_choice(args, "wean_score", SCORE_CHOICES)
        check_model_options(args, ("embed_dim",), encoder_directions=2 if args.encoder_bidirectional else 1)
        require_joined_dictionary(task, args.arch)
        check_choice(args, "wean_candidates", CANDIDATE_CHOICES)
        dictionary = task.source_dictionary
        candidate_mask = None
        if args.wean_candidates != "all":
            if getattr(args, "wean_candidates_in_checkpoint", False):
                # built to load a checkpoint (generate, interactive, hub): the set is in its state
                candidate_mask = torch.ones(len(dictionary), dtype=torch.bool)
            else:
                counts = count_training_words(
                    args, task, dictionary, args.wean_candidates, "--wean-candidates " + args.wean_candidates,
                    "--wean-candidates all")
                candidate_mask = frequent_mask_from_counts(dictionary, counts, len(dictionary))
                logger.info("wean_lstm: %d candidate words of the %d dictionary entries (--wean-candidates %s)",
                            int(candidate_mask.sum()), len(dictionary), args.wean_candidates)
                # saved with the model's arguments: later builds take the set from the checkpoint
                set_saved_arg(args, "wean_candidates_in_checkpoint", True)
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
            candidate_mask=candidate_mask,
        )
        return cls(encoder, decoder, dictionary)

    def get_targets(self, sample, net_output):
        """The targets the loss reads (fairseq's criteria call this): with a candidate set
        (``--wean-candidates source``/``target``), a word outside it is ``<unk>``, as in the paper's
        data, whose vocabulary is the candidate set (its probability is 0 here: the loss would be
        infinite). Padding stays padding."""
        target = sample["target"]
        mask = self.decoder.candidate_mask
        if mask is None:
            return target
        pad = self.decoder.dictionary.pad()
        return torch.where(mask[target] | target.eq(pad), target, torch.full_like(target, self.decoder.dictionary.unk()))


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
        candidate_mask=None,
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
        # section 2.4's candidate words (|V| bool, saved in the checkpoint); None: every entry
        if candidate_mask is None:
            self.candidate_mask = None
        else:
            self.register_buffer("candidate_mask", candidate_mask)

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
        """eq. 5: score every candidate word's embedding e_i against q_t -> B x T x V (-inf for
        the words outside ``--wean-candidates``'s set; never a whole row: eos and unk are in it)."""
        scores = self.output_score(features, self.embed_tokens.weight)
        if self.candidate_mask is None:
            return scores
        return scores.masked_fill(~self.candidate_mask, float("-inf"))

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
    args.wean_candidates = getattr(args, "wean_candidates", "all")
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
