"""Word Attention with contextual gates (Wu, Tian, Zhao, Lai and Liu, AAAI 2018).

Paper: "Word Attention for Sequence to Sequence Text Understanding" (AAAI 2018,
doi:10.1609/aaai.v32i1.11971; no arXiv version), as summarised by its poster, whose equations
are unnumbered: they are cited by the poster's sections 3 and 4. An RNNsearch (Bahdanau et
al. 2015) whose decoder attends twice at every step i, both times with the previous state
s_{i-1} as the query:

    hidden attention  e^a_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j),  c^a_i = sum_j a_ij h_j
    word attention    e^b_ij = v_b^T tanh(W_b s_{i-1} + U_b x_j),  c^b_i = sum_j b_ij x_j
                                                          (section 3; a, b = softmax_j e)
    contextual gate   o_i = sigma(W_o y_{i-1} + U_o s_{i-1} + C^a_o c^a_i + C^b_o c^b_i)
    state update      s_i = f(s_{i-1}, y_{i-1}, o_i * c^a_i, (1 - o_i) * c^b_i)      (section 4)
    output            p(y_i | y_<i, x) = softmax(W_out g(y_{i-1}; s_i; c^a_i; c^b_i))   (section 3)

h_j are the bidirectional encoder's states, x_j the source word embeddings (keys *and*
values of the word attention: "clean and specific word-level representation").

Ablations (the rows of Tables 1 and 3) come from one code path, chosen by
``--word-attention``:

=========  ====================================  ==========================================
value      architecture                          the decoder's f and g receive
=========  ====================================  ==========================================
none       ``word_attn_rnnsearch``               y_{i-1}, c^a_i                (RNNsearch)
ungated    ``word_attn_ungated``                 y_{i-1}, c^a_i, c^b_i         (+Word Attention)
gated      ``word_attn_gated``                   y_{i-1}, o*c^a_i, (1-o)*V_b c^b_i (+Contextual Gates)
=========  ====================================  ==========================================

Design choices the poster leaves open (each documented where it is made):

* f is a stack of GRU cells (RNNsearch's choice; ``--rnn-cell lstm`` for LSTM cells). Layer 1
  reads ``[y_{i-1}; contexts]``, layer l > 1 reads layer l-1's new state; s_{i-1}, the query
  of both attentions and an input of the gate, is the top layer's state.
* g is one ``tanh`` layer over ``[y_{i-1}; s_i; contexts]`` (RNNsearch uses a maxout layer),
  followed by the vocabulary projection W_out, optionally tied with the decoder's input
  embeddings (``--share-decoder-input-output-embed``).
* **g reads the gated contexts** ``o*c^a_i, (1-o)*V_b c^b_i``, the same vector f reads, although
  the poster writes g(y_{i-1}; s_i; c^a_i; c^b_i) in section 3 and shows the gate only in f's
  equation (section 4). Why: the poster's section 3 is the ungated model, where f and g read the
  same (raw) contexts; section 4 replaces the contexts of f by their gated versions and says
  the gates "combine hidden and word context", i.e. select the context the decoder uses. Feeding
  g the same gated vector keeps (a) the "+Contextual Gates" row a pure addition to "+Word
  Attention" (the gate only rescales what both layers read; g's parameter count is that of
  the ungated model when E == C) and (b) the RNNsearch equivalence above (with o = 1 the
  gated model is exactly the baseline, which would not hold if g saw the raw c^b). The
  poster is silent on this point; the paper's full text is not among our sources.
  ``--word-attn-readout raw`` is the poster's g: it reads c^a_i and c^b_i as attended (c^b_i in
  the embedding space, size E), while f still reads the gated contexts.
* The gate is element-wise with the size C of c^a_i; see
  :mod:`fairseq_wean.modules.contextual_gate` for V_b when the embedding size E != C.
* Inputs are concatenated in the order ``[y; c^a; c^b]`` (f) and ``[y; s; c^a; c^b]`` (g), so
  the RNNsearch baseline's weights are the leading columns of the gated model's. With the
  gate forced to 1 (``decoder.forced_gate = 1.0``) the gated model computes exactly the
  baseline with those weights (``(1 - o) * c^b = 0``); the tests check this.

Because both attentions are queried with s_{i-1}, the decoder is recurrent through its
attention: training runs the same step function as decoding, one target position at a
time. The key projections U_a h_j and U_b x_j are computed once per sentence (and cached
in the incremental state), not once per step.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import (
    register_model,
    register_model_architecture,
)

from fairseq_wean.modules.checked_model import CheckedEncoderDecoderModel
from fairseq_wean.modules.attention import SourceAttention
from fairseq_wean.modules.contextual_gate import ContextualGate
from fairseq_wean.modules.decoder_state import RecurrentDecoder, current_step, reorder_per_sentence
from fairseq_wean.modules.layers import Embedding, Linear, RNNCell, gru_cell_step, lstm_cell_step
from fairseq_wean.modules.model_options import check_choice, check_model_options, check_shared_output_embed
from fairseq_wean.modules.rnn_encoder import (
    DEFAULT_MAX_POSITIONS,
    RNNEncoder,
    add_rnn_seq2seq_args,
)

WORD_ATTENTION_CHOICES = ("none", "ungated", "gated")
RNN_CELL_CHOICES = ("gru", "lstm")
READOUT_CHOICES = ("gated", "raw")
INITIAL_STATE_CHOICES = ("both", "backward")


@register_model("word_attn_gated")
class WordAttnGatedModel(CheckedEncoderDecoderModel):
    """RNNsearch with word attention over source embeddings and contextual gates."""

    @staticmethod
    def add_args(parser):
        add_rnn_seq2seq_args(parser, "GRU/LSTM (--rnn-cell; the encoder is bidirectional)")
        parser.add_argument("--word-attention", choices=WORD_ATTENTION_CHOICES,
                            help="ablation: 'none' = RNNsearch, 'ungated' = + word attention, "
                                 "'gated' = + contextual gates (Tables 1 and 3)")
        parser.add_argument("--word-attn-readout", choices=READOUT_CHOICES,
                            help="what g reads besides y_{i-1} and s_i: 'gated' (default) = the gated contexts "
                                 "f reads, o*c^a and (1-o)*V_b c^b; 'raw' = c^a and c^b as attended, the "
                                 "paper's g(y_{i-1}; s_i; c^a_i; c^b_i) (section 3). Same for the ungated "
                                 "ablations, which have no gate")
        parser.add_argument("--word-attn-initial-state", choices=INITIAL_STATE_CHOICES,
                            help="what s_0 = tanh(W_s h) reads: 'both' (default) = the encoder's final states "
                                 "of both directions; 'backward' = the backward direction's state at the "
                                 "first source position, RNNsearch's (Bahdanau et al. 2015, appendix A)")
        parser.add_argument("--rnn-cell", choices=RNN_CELL_CHOICES,
                            help="recurrent unit of encoder and decoder (RNNsearch: gru)")
        parser.add_argument("--embed-dim", type=int, metavar="N",
                            help="both word embedding sizes at once (--encoder-embed-dim and --decoder-embed-dim "
                                 "where they are not given), as wean_lstm and core_copy take it")
        parser.add_argument("--encoder-embed-dim", type=int, metavar="N",
                            help="source word embedding size E (the word attention's keys and values x_j)")
        parser.add_argument("--decoder-embed-dim", type=int, metavar="N",
                            help="target word embedding size (y_{i-1})")
        parser.add_argument("--decoder-out-embed-dim", type=int, metavar="N",
                            help="output size of g, the layer before the vocabulary projection")
        parser.add_argument("--share-decoder-input-output-embed", action="store_true",
                            help="tie the vocabulary projection to the decoder's input embeddings "
                                 "(needs --decoder-out-embed-dim == --decoder-embed-dim)")

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        check_choice(args, "word_attention", WORD_ATTENTION_CHOICES)
        check_choice(args, "rnn_cell", RNN_CELL_CHOICES)
        check_choice(args, "word_attn_readout", READOUT_CHOICES)
        check_choice(args, "word_attn_initial_state", INITIAL_STATE_CHOICES)
        check_model_options(args, ("encoder_embed_dim", "decoder_embed_dim", "decoder_out_embed_dim"),
                            encoder_directions=2)
        check_shared_output_embed(args, "decoder_embed_dim")
        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        # bidirectional: RNNsearch's annotations h_j = [h->_j; h<-_j]
        encoder = RNNEncoder.from_args(
            args, src_dict, Embedding(len(src_dict), args.encoder_embed_dim, src_dict.pad()),
            cell_type=args.rnn_cell, bidirectional=True,
        )
        decoder = WordAttnGatedDecoder(
            tgt_dict,
            embed_dim=args.decoder_embed_dim,
            hidden_size=args.decoder_hidden_size,
            num_layers=args.decoder_layers,
            hidden_context_dim=encoder.output_units,
            source_embed_dim=args.encoder_embed_dim,
            word_attention=args.word_attention,
            cell_type=args.rnn_cell,
            out_embed_dim=args.decoder_out_embed_dim,
            dropout=args.dropout,
            share_input_output_embed=args.share_decoder_input_output_embed,
            left_pad_source=encoder.left_pad,
            max_target_positions=args.max_target_positions,
            readout=args.word_attn_readout,
            initial_state_from=args.word_attn_initial_state,
        )
        return cls(encoder, decoder, src_dict, tgt_dict)


def attention_step(attention, projected_query, projected_keys, values, padding_mask):
    """One decoder step of a ``SourceAttention`` whose query and keys were projected beforehand.

    projected_query: B x A (the query times ``attention.query_weight()``), projected_keys:
    ``attention.project_keys(keys)``, values: B x S x Dv, padding_mask: B x S. Returns the
    context B x Dv and the weights B x S.
    """
    context, weights = attention(None, None, values, padding_mask, projected_keys=projected_keys,
                                 projected_query=projected_query.unsqueeze(1))
    return context.squeeze(1), weights.squeeze(1)


class WordAttnGatedDecoder(RecurrentDecoder):
    """Recurrent decoder with hidden attention, word attention and contextual gates.

    ``forward(prev_output_tokens B x T, encoder_out)`` returns logits ``B x T x V``
    (unnormalised) and ``extra`` with

    * ``"attn"``: ``[B x T x S]``, the hidden attention alpha_ij (as fairseq's other models);
    * ``"word_attn"``: ``B x T x S``, the word attention beta_ij (None for RNNsearch);
    * ``"gate"``: ``B x T x C``, o_i with C = the hidden context size (None unless gated).

    Attention maps use the source order of the ``src_tokens`` given to the encoder.

    Incremental state key ``"cached_state"``: a dict with ``"hidden"`` (L x B x H, every
    layer's state), ``"cell"`` (L x B x H, LSTM only), ``"attention_keys"`` (B x S x C, U_a h_j),
    ``"word_attention_keys"`` (B x S x E, U_b x_j; not for RNNsearch) and ``"sentence_ids"`` (B;
    the key projections are per sentence, so a reorder within sentences leaves them as they are);
    ``"step_products"``: the stacked weights of :meth:`step_products`, made at the first step of a
    batch (no batch dimension, not reordered).

    ``forced_gate`` (None or a float in [0, 1]) replaces o_i by a constant, for ablations.
    """

    def __init__(
        self,
        dictionary,
        embed_dim=256,
        hidden_size=256,
        num_layers=1,
        hidden_context_dim=512,
        source_embed_dim=256,
        word_attention="gated",
        cell_type="gru",
        out_embed_dim=256,
        dropout=0.2,
        share_input_output_embed=False,
        left_pad_source=True,
        max_target_positions=DEFAULT_MAX_POSITIONS,
        readout="gated",
        initial_state_from="both",
    ):
        embed_tokens = Embedding(len(dictionary), embed_dim, dictionary.pad())
        super().__init__(dictionary, embed_tokens, hidden_context_dim, hidden_size, num_layers,
                         dropout, left_pad_source, max_target_positions, initial_state_from)
        self.word_attention_mode = word_attention
        self.cell_type = cell_type
        self.forced_gate = None

        # e^a_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)
        self.attention = SourceAttention(hidden_size, hidden_context_dim, kind="concat")
        # e^b_ij = v_b^T tanh(W_b s_{i-1} + U_b x_j)
        self.word_attention = (
            SourceAttention(hidden_size, source_embed_dim, kind="concat") if word_attention != "none" else None
        )
        self.gate = (
            ContextualGate(embed_dim, hidden_size, hidden_context_dim, source_embed_dim)
            if word_attention == "gated" else None
        )
        # size of the word context that f and g receive
        word_context_dim = {"none": 0, "ungated": source_embed_dim, "gated": hidden_context_dim}[word_attention]
        contexts_dim = hidden_context_dim + word_context_dim
        self.context_sizes = [hidden_context_dim] + ([word_context_dim] if word_context_dim else [])

        # f: layer 1 reads [y_{i-1}; contexts], layer l > 1 reads layer l-1's s_i
        self.layers = nn.ModuleList(
            RNNCell(cell_type, embed_dim + contexts_dim if layer == 0 else hidden_size, hidden_size)
            for layer in range(num_layers)
        )
        # g: tanh(W_g [y_{i-1}; s_i; contexts]), then the vocabulary projection
        # (--word-attn-readout raw: the attended contexts, c^a_i (C) and c^b_i (E), whatever f reads)
        self.readout_reads_raw = readout == "raw" and word_attention == "gated"
        readout_contexts_dim = hidden_context_dim + source_embed_dim if self.readout_reads_raw else contexts_dim
        self.readout = Linear(embed_dim + hidden_size + readout_contexts_dim, out_embed_dim)
        self.share_input_output_embed = share_input_output_embed
        self.fc_out = None if share_input_output_embed else Linear(out_embed_dim, len(dictionary))

    def forward(self, prev_output_tokens, encoder_out, incremental_state=None, **unused):
        features, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        return self.output_layer(features), extra

    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None, **unused):
        """Returns g's output (B x T x out_embed_dim) and ``extra`` (see the class docstring).

        One step per target position (both attentions are queried with s_{i-1}), with as few
        matrix products per step as the equations allow (:meth:`step_products`): the products
        of y_{i-1} are computed for all steps before the loop, the products of s_{i-1} are one
        matrix product per step, and f's cells take their products ready-made
        (:func:`gru_cell_step`, :func:`lstm_cell_step`).
        """
        prev_output_tokens = current_step(prev_output_tokens, incremental_state)
        y = self.dropout(self.embed_tokens(prev_output_tokens))  # y_{i-1}: B x T x E_tgt
        annotations = encoder_out["encoder_states"]  # h_j: B x S x C
        words = encoder_out["src_embeddings"]  # x_j: B x S x E
        padding_mask = encoder_out["encoder_padding_mask"]  # B x S

        cache = self.get_incremental_state(incremental_state, "cached_state")
        if cache is None:
            cache = self.initial_state(encoder_out)
        hidden = list(cache["hidden"].unbind(0))  # L x (B x H)
        cell = list(cache["cell"].unbind(0)) if self.cell_type == "lstm" else None

        # Built once per forward call; in incremental decoding once per batch (the weights do not
        # change while a batch is decoded, and a step is one call): kept in the incremental state.
        products = self.get_incremental_state(incremental_state, "step_products")
        if products is None:
            products = self.step_products()
            if incremental_state is not None:
                self.set_incremental_state(incremental_state, "step_products", products)
        # of y_{i-1}, all steps at once: [W_o y + b_o ; W_ih^1[:, y] y + b_ih^1]
        of_word = F.linear(y, products["word_weight"], products["word_bias"]).split(products["word_sizes"], dim=-1)
        gate_of_word, layer1_of_word = of_word if self.gate is not None else (None,) + tuple(of_word)
        top = len(self.layers) - 1
        steps = {"s": [], "contexts": [], "raw_contexts": [], "alpha": [], "beta": [], "gate": []}
        for i in range(prev_output_tokens.size(1)):
            # of s_{i-1}, one product: W_a s, W_b s, U_o s, the top layer's W_hh s + b_hh
            of_state = dict(zip(products["state_names"], torch.addmm(
                products["state_bias"], hidden[-1], products["state_weight"].t()).split(products["state_sizes"], -1)))
            c_alpha, alpha = attention_step(self.attention, of_state["attention"], cache["attention_keys"],
                                            annotations, padding_mask)
            contexts = [c_alpha]
            if self.word_attention is not None:
                c_beta, beta = attention_step(self.word_attention, of_state["word_attention"],
                                              cache["word_attention_keys"], words, padding_mask)
                if self.gate is not None:  # section 4: o * c^a, (1 - o) * c^b
                    gated_alpha, gated_beta, o = self.gate.from_partial_sum(
                        gate_of_word[:, i] + of_state["gate"], c_alpha, c_beta, self.forced_gate)
                    contexts = [gated_alpha, gated_beta]
                    steps["gate"].append(o)
                    if self.readout_reads_raw:
                        steps["raw_contexts"].append([c_alpha, c_beta])
                else:  # section 3: both contexts as they are
                    contexts = [c_alpha, c_beta]
                steps["beta"].append(beta)

            # f: layer 1 reads [y_{i-1}; contexts] (its y columns were multiplied before the loop)
            gi = layer1_of_word[:, i]
            for context, weight in zip(contexts, products["context_weights"]):
                gi = torch.addmm(gi, context, weight.t())
            for layer, rnn_cell in enumerate(self.layers):
                if layer > 0:
                    gi = F.linear(self.dropout(hidden[layer - 1]), rnn_cell.weight_ih, rnn_cell.bias_ih)
                gh = of_state["recurrent"] if layer == top else torch.addmm(
                    rnn_cell.bias_hh, hidden[layer], rnn_cell.weight_hh.t())
                if self.cell_type == "lstm":
                    hidden[layer], cell[layer] = lstm_cell_step(gi, gh, cell[layer])
                else:
                    hidden[layer] = gru_cell_step(gi, gh, hidden[layer])
            steps["s"].append(hidden[-1])
            steps["contexts"].append(contexts)
            steps["alpha"].append(alpha)

        if incremental_state is not None:
            cache = dict(cache, hidden=torch.stack(hidden))
            if cell is not None:
                cache["cell"] = torch.stack(cell)
            self.set_incremental_state(incremental_state, "cached_state", cache)

        s = torch.stack(steps["s"], dim=1)  # s_i: B x T x H
        # what g reads: the contexts f read, or (--word-attn-readout raw) the attended ones
        read = steps["raw_contexts"] if self.readout_reads_raw else steps["contexts"]
        contexts = torch.cat([torch.stack(parts, dim=1) for parts in zip(*read)], dim=-1)  # B x T x ...
        features = torch.tanh(self.readout(torch.cat([y, s, contexts], dim=-1)))  # g
        extra = {
            "attn": [self.attention_in_input_order(torch.stack(steps["alpha"], dim=1), encoder_out)],
            "word_attn": (
                self.attention_in_input_order(torch.stack(steps["beta"], dim=1), encoder_out)
                if steps["beta"] else None
            ),
            "gate": torch.stack(steps["gate"], dim=1) if steps["gate"] else None,
        }
        return self.dropout(features), extra

    def step_products(self):
        """The step's weights, stacked from the layers' own parameters (so gradients, checkpoints
        and every other use of a layer are unchanged); built once per forward call.

        * ``state_weight``/``state_bias``: every product of s_{i-1} (the top layer's state): the
          queries of the hidden and the word attention (W_a, W_b), the gate's U_o and the top
          recurrent layer's W_hh (+ b_hh; the rest of the bias is 0), rows in the order
          ``state_names``, sizes ``state_sizes``;
        * ``word_weight``/``word_bias``: the products of y_{i-1}: the gate's W_o (+ its bias), then
          the first recurrent layer's columns for y (+ b_ih), sizes ``word_sizes``;
        * ``context_weights``: the first recurrent layer's columns for each context f reads.
        """
        first, top = self.layers[0], self.layers[-1]
        state = [("attention", self.attention.query_weight())]
        word, word_bias = [], []
        if self.word_attention is not None:
            state.append(("word_attention", self.word_attention.query_weight()))
        if self.gate is not None:
            state.append(("gate", self.gate.u_o.weight))
            word.append(self.gate.w_o.weight)
            word_bias.append(self.gate.w_o.bias)
        state.append(("recurrent", top.weight_hh))
        embed_dim = self.embed_tokens.embedding_dim
        word.append(first.weight_ih[:, :embed_dim])
        word_bias.append(first.bias_ih)
        sizes = [w.size(0) for _, w in state]
        state_bias = torch.cat([top.bias_hh.new_zeros(sum(sizes[:-1])), top.bias_hh])
        return {
            "state_names": [name for name, _ in state], "state_sizes": sizes,
            "state_weight": torch.cat([w for _, w in state]), "state_bias": state_bias,
            "word_weight": torch.cat(word), "word_bias": torch.cat(word_bias),
            "word_sizes": [w.size(0) for w in word],
            "context_weights": first.weight_ih[:, embed_dim:].split(self.context_sizes, dim=1),
        }

    def initial_state(self, encoder_out):
        """s_0 = tanh(W_s h_final) for every layer, and the key projections U_a h_j, U_b x_j."""
        hidden = self.initial_hidden(encoder_out)
        cache = {
            "hidden": hidden,  # L x B x H
            "attention_keys": self.attention.project_keys(encoder_out["encoder_states"]),  # B x S x C
        }
        if self.cell_type == "lstm":
            cache["cell"] = torch.zeros_like(hidden)
        if self.word_attention is not None:
            cache["word_attention_keys"] = self.word_attention.project_keys(encoder_out["src_embeddings"])
        if encoder_out.get("sentence_ids") is not None:
            cache["sentence_ids"] = encoder_out["sentence_ids"]  # B
        return cache

    def output_layer(self, features, **unused):
        """W_out: B x T x out_embed_dim -> unnormalised scores B x T x V."""
        if self.share_input_output_embed:
            return F.linear(features, self.embed_tokens.weight)
        return self.fc_out(features)

    def reorder_incremental_state(self, incremental_state, new_order):
        cache = self.get_incremental_state(incremental_state, "cached_state")
        if cache is None:
            return
        # Recurrent states are L x B x H (batch on dim 1); the rest (key projections B x S x D,
        # sentence ids) is per sentence, batch on dim 0.
        recurrent = {key: cache[key].index_select(1, new_order) for key in ("hidden", "cell") if key in cache}
        per_sentence = {key: value for key, value in cache.items() if key not in recurrent}
        reordered = dict(reorder_per_sentence(per_sentence, new_order), **recurrent)
        self.set_incremental_state(incremental_state, "cached_state", reordered)


@register_model_architecture("word_attn_gated", "word_attn_gated")
def base_architecture(args):
    """+ Contextual Gates, one layer each side (Bahdanau et al.'s RNNsearch shape, smaller units)."""
    args.dropout = getattr(args, "dropout", 0.2)
    args.word_attention = getattr(args, "word_attention", "gated")
    args.rnn_cell = getattr(args, "rnn_cell", "gru")
    embed_dim = getattr(args, "embed_dim", None) or 256  # --embed-dim: both sides, where not given
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", embed_dim)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 256)
    args.encoder_layers = getattr(args, "encoder_layers", 1)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", embed_dim)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 256)
    args.decoder_layers = getattr(args, "decoder_layers", 1)
    args.decoder_out_embed_dim = getattr(args, "decoder_out_embed_dim", args.decoder_embed_dim)
    args.share_decoder_input_output_embed = getattr(args, "share_decoder_input_output_embed", False)
    args.word_attn_readout = getattr(args, "word_attn_readout", "gated")
    args.word_attn_initial_state = getattr(args, "word_attn_initial_state", "both")
    args.max_source_positions = getattr(args, "max_source_positions", DEFAULT_MAX_POSITIONS)
    args.max_target_positions = getattr(args, "max_target_positions", DEFAULT_MAX_POSITIONS)


# The presets: one per (ablation row, sizes), each setting --word-attention's default and then
# its sizes' defaults (getattr: options given on the command line win), then the base's.
# base_architecture's sizes: one layer each side.
BASE_SIZES = {}
# Table 3 (IWSLT'14 De-En, "2-layer models"). The poster gives no sizes; 256 units and a 2-layer
# bidirectional encoder put a word-level RNNsearch near its 24.3M parameters
# (see examples/word_attention_parameter_counts.py).
IWSLT_SIZES = {"dropout": 0.3, "encoder_layers": 2, "decoder_layers": 2}
# Table 4 (WMT'14 En-Fr, "4-4 RNNsearch"). Sizes are RNNsearch's (620-dim embeddings, 1000 units);
# the poster does not state them. '+Word Attention' is not a row of Table 4.
WMT_SIZES = {
    "dropout": 0.2, "encoder_embed_dim": 620, "encoder_hidden_size": 1000, "encoder_layers": 4,
    "decoder_embed_dim": 620, "decoder_hidden_size": 1000, "decoder_layers": 4,
}


def preset_architecture(args, word_attention, sizes):
    """--word-attention ``word_attention`` and the ``sizes`` where not given, then the base's
    (--embed-dim, where given, sizes both embeddings instead of the preset's)."""
    args.word_attention = getattr(args, "word_attention", word_attention)
    for option, value in sizes.items():
        if option.endswith("_embed_dim") and getattr(args, "embed_dim", None) is not None:
            continue  # --embed-dim given: it sizes both sides (base_architecture)
        setattr(args, option, getattr(args, option, value))
    base_architecture(args)


@register_model_architecture("word_attn_gated", "word_attn_rnnsearch")
def word_attn_rnnsearch(args):
    """--word-attention none (RNNsearch), base_architecture's sizes."""
    preset_architecture(args, "none", BASE_SIZES)


@register_model_architecture("word_attn_gated", "word_attn_ungated")
def word_attn_ungated(args):
    """--word-attention ungated (+ word attention), base_architecture's sizes."""
    preset_architecture(args, "ungated", BASE_SIZES)


@register_model_architecture("word_attn_gated", "word_attn_rnnsearch_iwslt")
def word_attn_rnnsearch_iwslt(args):
    """--word-attention none with the IWSLT sizes (Table 3)."""
    preset_architecture(args, "none", IWSLT_SIZES)


@register_model_architecture("word_attn_gated", "word_attn_ungated_iwslt")
def word_attn_ungated_iwslt(args):
    """--word-attention ungated with the IWSLT sizes (Table 3)."""
    preset_architecture(args, "ungated", IWSLT_SIZES)


@register_model_architecture("word_attn_gated", "word_attn_gated_iwslt")
def word_attn_gated_iwslt(args):
    """--word-attention gated with the IWSLT sizes (Table 3)."""
    preset_architecture(args, "gated", IWSLT_SIZES)


@register_model_architecture("word_attn_gated", "word_attn_rnnsearch_wmt")
def word_attn_rnnsearch_wmt(args):
    """--word-attention none with the WMT sizes (Table 4)."""
    preset_architecture(args, "none", WMT_SIZES)


@register_model_architecture("word_attn_gated", "word_attn_ungated_wmt")
def word_attn_ungated_wmt(args):
    """--word-attention ungated with the WMT sizes (Table 4)."""
    preset_architecture(args, "ungated", WMT_SIZES)


@register_model_architecture("word_attn_gated", "word_attn_gated_wmt")
def word_attn_gated_wmt(args):
    """--word-attention gated with the WMT sizes (Table 4)."""
    preset_architecture(args, "gated", WMT_SIZES)
