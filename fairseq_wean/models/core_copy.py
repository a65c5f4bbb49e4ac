"""CoRe: joint Copying and Restricted generation (Cao et al. 2017).

Paper: "Joint Copying and Restricted Generation for Paraphrase" (AAAI 2017, arXiv:1611.09235);
equation numbers are the paper's. Two decoders share one GRU decoder state s_t and one
attention; a gate mixes them:

    h_tau   = biGRU(x_tau, h_tau-1)                      (eq. 1)  -> RNNEncoder(cell_type="gru")
    alpha_t = softmax_tau eta(s_t, h_tau)                (eq. 5)  -> SourceAttention ("concat" score)
    c_t     = sum_tau alpha_t,tau h_tau                  (eq. 6)
    p_C(y)  = sum_{tau: x_tau = y} alpha_t,tau           (eq. 7)  -> copy_mixture.copy_log_probs
    V_G     = A(X) u U                                   (eq. 8)  -> CoreDecoder.restricted_vocabulary
    psi     = tanh(W [y_t-1; s_t; c_t] + b)  (eq. 9, --core-psi) -> CoreDecoder.readout_features
    p_G(y)  = softmax over V_G of w_y psi + b_y          (eq. 9)  -> copy_mixture.restricted_log_softmax
    lambda_t = sigma(w_C s_t)                            (eq. 10) -> CoreDecoder.copy_gate
    p(y)    = lambda_t p_C + (1 - lambda_t) p_G          (eq. 11) -> copy_mixture.copy_mixture
    loss    = CE (eq. 14) + BCE(lambda_t, lambda*_t) (eq. 12, 15) -> criterion ``core_mode_loss``

What departs from the paper, with the option that restores it, and why each implementation
choice was made (attention on s_t, the restricted softmax over gathered rows, mixture log-probs
over E, one full-vocabulary buffer per decoded batch, log space, the alignment table in the
checkpoint, psi and U, markers): docs/models/core_copy.md, "Departures from the paper" and
"Implementation notes". Measurements: docs/results/performance.md.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import (
    register_model,
    register_model_architecture,
)

from fairseq_wean.data.align_table import check_table, read_align_table
from fairseq_wean.data.markers import marker_ids
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.modules.checked_model import CheckedEncoderDecoderModel
from fairseq_wean.modules.attention import SCORE_CHOICES, SourceAttention
from fairseq_wean.modules.copy_mixture import (
    copy_mixture,
    restricted_log_softmax,
    source_word_groups,
)
from fairseq_wean.modules.marker_embedding import MarkerEmbedding
from fairseq_wean.modules.layers import RNN, Linear
from fairseq_wean.modules.model_options import (
    add_shared_embed_dim_args,
    check_choice,
    check_model_options,
    check_shared_output_embed,
    option_maximum_problem,
    require_joined_dictionary,
    set_saved_arg,
    shared_embed_dim,
)
from fairseq_wean.modules.decoder_state import RecurrentDecoder, current_step, reorder_per_sentence
from fairseq_wean.modules.restricted_vocab import (
    count_training_words,
    frequent_mask_from_counts,
    frequent_word_mask,
)
from fairseq_wean.modules.rnn_encoder import (
    DEFAULT_MAX_POSITIONS,
    RNNEncoder,
    add_rnn_seq2seq_args,
)

PSI_CHOICES = ("tanh", "affine")
FREQUENT_FROM_CHOICES = ("joined", "target")


@register_model("core_copy")
class CoreCopyModel(CheckedEncoderDecoderModel):
    """Bidirectional GRU encoder, GRU decoder with a copying and a restricted generative decoder."""

    @staticmethod
    def add_args(parser):
        add_rnn_seq2seq_args(parser, "GRU (the encoder is bidirectional)")
        add_shared_embed_dim_args(parser, "word embedding size, shared by encoder and decoder input")
        parser.add_argument("--decoder-out-embed-dim", type=int, metavar="N",
                            help="size of psi(y_t-1, s_t, c_t), the input of the generative softmax (eq. 9)")
        parser.add_argument("--share-decoder-input-output-embed", action="store_true",
                            help="use the word embeddings as the output projection of eq. 9 "
                                 "(needs --decoder-out-embed-dim == --embed-dim)")
        parser.add_argument("--attention-score", choices=SCORE_CHOICES,
                            help="score eta(s_t, h_tau) of the attention (eq. 5); the paper's is "
                                 "Bahdanau's 'concat'")
        parser.add_argument("--core-align-table", type=str, metavar="PATH",
                            help="alignment table A written by fairseq-wean-align-table; read when "
                                 "training starts and stored in the checkpoint")
        parser.add_argument("--core-topk", type=int, metavar="K",
                            help="aligned target words kept per source word in A(X) (paper: 10)")
        parser.add_argument("--core-num-frequent", type=int, metavar="N",
                            help="|U|: the N most frequent words always in V_G (paper: 2000)")
        parser.add_argument("--core-frequent-from", choices=FREQUENT_FROM_CHOICES,
                            help="which counts rank the words for U: 'joined' (default) = the "
                                 "joined dictionary's order (source and target counted together); "
                                 "'target' = word counts of the binarized training target side, "
                                 "the paper's frequent target words (stored in the checkpoint)")
        parser.add_argument("--core-attend-previous-state", action="store_true",
                            help="eq. 5 as written: the attention (and so the copy distribution) at step t "
                                 "is queried with s_t-1, Bahdanau's order; default: with s_t (Luong's), which "
                                 "lets training run the GRU over the whole target in one call")
        parser.add_argument("--core-input-feeding", action="store_true",
                            help="eq. 3 as written: s_t = f(y_t-1, s_t-1, c_t), the GRU also reads the context "
                                 "c_t (computed from s_t-1: needs --core-attend-previous-state); training then "
                                 "steps the GRU one target position at a time")
        parser.add_argument("--core-psi", choices=PSI_CHOICES,
                            help="psi(y_t-1, s_t, c_t) of eq. 9: 'tanh' (default) = tanh(W[y_t-1; "
                                 "s_t; c_t] + b) and a per-word output bias, dl4mt's readout; "
                                 "'affine' = W[y_t-1; s_t; c_t] + b and no per-word bias, eq. 9 as "
                                 "written")

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        check_model_options(args, ("embed_dim", "decoder_out_embed_dim"), encoder_directions=2)
        require_joined_dictionary(task, args.arch)
        if args.core_topk < 1 or args.core_num_frequent < 0:
            raise FairseqWeanError("--core-topk must be >= 1 and --core-num-frequent >= 0")
        problem = option_maximum_problem(args, ("core_topk", "core_num_frequent"))
        if problem is None and args.core_topk > len(task.source_dictionary):
            problem = ("--core-topk {} is above the dictionary's {} words: a word cannot align to more target "
                       "words than there are; give at most {} (the paper: 10)".format(
                           args.core_topk, len(task.source_dictionary), len(task.source_dictionary)))
        if problem is not None:
            raise FairseqWeanError(problem)
        check_choice(args, "core_psi", PSI_CHOICES)
        check_choice(args, "core_frequent_from", FREQUENT_FROM_CHOICES)
        check_shared_output_embed(args, "embed_dim")
        if args.core_input_feeding and not args.core_attend_previous_state:
            raise FairseqWeanError(
                "--core-input-feeding needs --core-attend-previous-state: the GRU reads c_t (eq. 3), which "
                "the attention computes from s_t-1 (eq. 5); from s_t it would need s_t to compute s_t")
        dictionary = task.source_dictionary
        frequent_mask = frequent_word_mask(dictionary, args.core_num_frequent)
        if getattr(args, "core_align_table_in_checkpoint", False):
            # Built to load a checkpoint (generate, interactive): the table comes from its state,
            # and so does a target-side U (frequent_mask above is then only a placeholder).
            table = torch.full((len(dictionary), args.core_topk), dictionary.pad(), dtype=torch.long)
        else:
            # Built for training. fairseq's cross_entropy and label_smoothed_cross_entropy score
            # a target word the model cannot produce (in neither the source nor V_G) as log 0:
            # an infinite loss. core_mode_loss scores it as <unk>, which is always in U.
            criterion = getattr(args, "criterion", None)
            if isinstance(criterion, str) and criterion != "core_mode_loss":
                raise FairseqWeanError(
                    "--arch core_copy needs --criterion core_mode_loss (got --criterion {}: words in "
                    "neither the source nor the restricted vocabulary have probability 0 there, so the "
                    "loss would be infinite)".format(criterion)
                )
            table = read_align_table(args.core_align_table, dictionary, args.core_topk)
            if args.core_frequent_from == "target":
                counts = count_training_words(args, task, dictionary, "target", "--core-frequent-from target",
                                              "--core-frequent-from joined")
                frequent_mask = frequent_mask_from_counts(dictionary, counts, args.core_num_frequent)
            # Saved with the model's arguments: later builds take A from the checkpoint.
            set_saved_arg(args, "core_align_table_in_checkpoint", True)
        embed_tokens = MarkerEmbedding(dictionary, args.embed_dim, marker_ids(dictionary))
        # CoRe's encoder: a bidirectional GRU (eq. 1)
        encoder = RNNEncoder.from_args(args, dictionary, embed_tokens, cell_type="gru", bidirectional=True)
        decoder = CoreDecoder(
            dictionary,
            embed_tokens,
            encoder_output_units=encoder.output_units,
            align_table=table,
            frequent_mask=frequent_mask,
            frequent_mask_in_checkpoint=args.core_frequent_from == "target",
            psi=args.core_psi,
            attend_previous_state=args.core_attend_previous_state,
            input_feeding=args.core_input_feeding,
            hidden_size=args.decoder_hidden_size,
            num_layers=args.decoder_layers,
            out_embed_dim=args.decoder_out_embed_dim,
            dropout=args.dropout,
            attention_score=args.attention_score,
            share_input_output_embed=args.share_decoder_input_output_embed,
            max_target_positions=args.max_target_positions,
            left_pad_source=encoder.left_pad,
        )
        return cls(encoder, decoder, dictionary)

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        return self.decoder.get_normalized_probs(net_output, log_probs, sample)


class CoreDecoder(RecurrentDecoder):
    """GRU decoder with attention, a copying decoder, a restricted generative decoder and a gate.

    ``forward(prev_output_tokens B x T, encoder_out)`` returns

    * mixture log-probs ``B x T x N`` over the batch's candidate ids E (eq. 11), and
    * ``extra``: ``"attn"``: [B x T x S] (alpha, eq. 5, over the source positions of the input
      ``src_tokens``, left-padded by default, as ``--print-alignment`` expects), ``"copy_gate"``: [B x T] lambda_t (eq. 10),
      ``"copy_gate_logit"``: [B x T] z_t = w_C s_t (lambda_t = sigmoid(z_t)), ``"vocab"``: [E] (N sorted ids), ``"generative_mask"``: [B x N]
      (True where the id is in that sentence's V_G).

    Use ``get_normalized_probs`` for ``B x T x |V|`` log-probs.

    Incremental state: ``"cached_state"``: s_t-1, L x B x H (batch on dim 1);
    ``"vocab_rows"``: (E, W[E], b[E]), no batch dimension; ``"per_sentence"``: a dict of what
    is computed once per sentence, batch on dim 0: ``"attention_keys"`` (W_k h_j, B x S x A),
    ``"vocab_masks"`` (generative mask B x N, copy index B x S, and ``source_word_groups``:
    same-word matrix B x S x S, first positions B x S) and ``"sentence_ids"`` (B), so
    that a reorder within sentences leaves it as it is (``reorder_per_sentence``);
    ``"full_vocab_buffer"``: rows x |V| float32, refilled at every step, not reordered (see
    the module docstring).
    """

    def __init__(
        self,
        dictionary,
        embed_tokens,
        encoder_output_units,
        align_table,
        frequent_mask,
        frequent_mask_in_checkpoint=False,
        psi="tanh",
        attend_previous_state=False,
        input_feeding=False,
        hidden_size=512,
        num_layers=1,
        out_embed_dim=256,
        dropout=0.2,
        attention_score="concat",
        share_input_output_embed=False,
        max_target_positions=DEFAULT_MAX_POSITIONS,
        left_pad_source=True,
    ):
        super().__init__(dictionary, embed_tokens, encoder_output_units, hidden_size, num_layers,
                         dropout, left_pad_source, max_target_positions)
        embed_dim = embed_tokens.embedding_dim
        self.padding_idx = dictionary.pad()
        # eq. 5's query: s_t (default) or s_t-1 (--core-attend-previous-state); eq. 3's input: y_t-1,
        # and with --core-input-feeding also c_t
        self.attend_previous_state = attend_previous_state
        self.input_feeding = input_feeding
        rnn_input = embed_dim + (encoder_output_units if input_feeding else 0)
        self.rnn = RNN("gru", rnn_input, hidden_size, num_layers=num_layers,
                       dropout=dropout if num_layers > 1 else 0.0, batch_first=True)
        self.attention = SourceAttention(hidden_size, encoder_output_units, attention_score)  # eq. 5
        # psi(y_t-1, s_t, c_t) of eq. 9: an affine map of the three, then tanh unless psi == "affine".
        self.psi_kind = psi
        self.readout = Linear(embed_dim + hidden_size + encoder_output_units, out_embed_dim)
        self.share_input_output_embed = share_input_output_embed
        if not share_input_output_embed:
            self.output_weight = nn.Parameter(torch.empty(len(dictionary), out_embed_dim).uniform_(-0.1, 0.1))
        if psi == "tanh":
            self.output_bias = nn.Parameter(torch.zeros(len(dictionary)))  # b_y, as dl4mt's ff_logit
        else:
            # eq. 9 as written has no per-word bias: b_y = 0, not trained, not saved
            self.register_buffer("output_bias", torch.zeros(len(dictionary)), persistent=False)
        self.copy_gate = Linear(hidden_size, 1, bias=False)  # w_C of eq. 10
        # A (eq. 8): persistent, so that a checkpoint is self-contained.
        self.register_buffer("align_table", align_table)
        # U (eq. 8): with --core-frequent-from joined derived from the dictionary and
        # --core-num-frequent, so not saved; from training target counts it is saved.
        self.register_buffer("frequent_mask", frequent_mask, persistent=frequent_mask_in_checkpoint)
        # see "One full-vocabulary buffer per decoded batch" in the module docstring
        self.reuse_full_vocab_buffer = True

    # ---------------------------------------------------------------- eq. 8
    def restricted_vocabulary(self, src_tokens):
        """Candidate ids of the batch and, per sentence, which of them are in V_G = A(X) u U.

        src_tokens: B x S, right-padded (``encoder_out["src_tokens"]``). Returns ``vocab`` (N,
        sorted ids: U, A(X_b) and X_b of every sentence b), ``generative_mask`` (B x N) and
        ``copy_index`` (B x S: the column of each source token in ``vocab``).
        """
        bsz = src_tokens.size(0)
        aligned = self.align_table[src_tokens].view(bsz, -1)  # B x (S*K); pad = no entry
        frequent = self.frequent_mask.nonzero().squeeze(1)
        vocab = torch.unique(torch.cat([frequent, aligned.reshape(-1), src_tokens.reshape(-1)]))
        vocab = vocab[vocab.ne(self.padding_idx)]
        n = vocab.numel()
        generative = self.frequent_mask[vocab].unsqueeze(0).repeat(bsz, 1)
        # Scatter A(X_b) into its row; entries without an alignment go to a spare last column.
        cols = torch.searchsorted(vocab, aligned).clamp_(max=n - 1)
        cols = torch.where(aligned.ne(self.padding_idx), cols, torch.full_like(cols, n))
        generative = torch.cat([generative, generative.new_zeros(bsz, 1)], dim=1)
        generative.scatter_(1, cols, True)
        generative = generative[:, :n]
        copy_index = torch.searchsorted(vocab, src_tokens).clamp_(max=n - 1)
        return vocab, generative, copy_index

    def output_rows(self, vocab):
        """The rows of the output projection for the candidate ids: N x D and N."""
        weight = self.embed_tokens.weight if self.share_input_output_embed else self.output_weight
        return weight.index_select(0, vocab), self.output_bias.index_select(0, vocab)

    # ---------------------------------------------------------------- eq. 7, 9
    def readout_features(self, prev_embedded, states, context):
        """psi(y_t-1, s_t, c_t) of eq. 9: ``W [y_t-1; s_t; c_t] + b``, then tanh unless ``psi="affine"``.

        prev_embedded: B x T x E, states: B x T x H, context: B x T x C -> B x T x D.
        """
        features = self.readout(torch.cat([prev_embedded, states, context], dim=-1))
        if self.psi_kind == "tanh":
            features = torch.tanh(features)  # dl4mt's readout (see --core-psi)
        return features

    # eq. 9: psi B x T x D, rows N x D and N, V_G mask B x N -> log p_G, B x T x N (-inf: not in V_G)
    generative_log_probs = staticmethod(restricted_log_softmax)

    # ---------------------------------------------------------------- forward
    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None, **unused):
        """Returns psi (B x T x D), the gate logits z_t (B x T) and alpha (B x T x S)."""
        x = self.dropout(self.embed_tokens(current_step(prev_output_tokens, incremental_state)))  # B x T x E

        enc = encoder_out["encoder_states"]
        hidden = self.get_incremental_state(incremental_state, "cached_state")
        if hidden is None:
            hidden = self.initial_hidden(encoder_out)
        # The key side of the additive score, W_k h_j, is the same at every step: computed once.
        per_sentence = self.get_incremental_state(incremental_state, "per_sentence") or {}
        keys = per_sentence.get("attention_keys")
        if keys is None:
            keys = self.attention.project_keys(enc)

        def attend(queries):  # eq. 5-6: B x T x H -> c_t (B x T x C), alpha (B x T x S)
            return self.attention(queries, enc, enc, encoder_out["encoder_padding_mask"], projected_keys=keys)

        if self.input_feeding:  # eq. 3 and 5 as written: c_t from s_t-1, then s_t from [y_t-1; c_t]
            steps = []
            for t in range(x.size(1)):
                context_t, attn_t = attend(hidden[-1].unsqueeze(1))
                state_t, hidden = self.rnn(torch.cat([x[:, t : t + 1], context_t], dim=-1), hidden)
                steps.append((state_t, context_t, attn_t))
            states, context, attn = (torch.cat(parts, dim=1) for parts in zip(*steps))
        else:
            previous_top = hidden[-1].unsqueeze(1)  # s_t-1 of the first step: B x 1 x H
            states, hidden = self.rnn(x, hidden)  # s_t: B x T x H
            if self.attend_previous_state:  # eq. 5 as written: s_0 .. s_T-1
                context, attn = attend(torch.cat([previous_top, states[:, :-1]], dim=1))
            else:  # s_1 .. s_T (see "Attention on s_t" in the module docstring)
                context, attn = attend(states)
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "cached_state", hidden)
            if "attention_keys" not in per_sentence:
                self._cache_per_sentence(incremental_state, encoder_out, attention_keys=keys)
        features = self.readout_features(x, states, context)  # psi of eq. 9
        gate_logit = self.copy_gate(states).squeeze(-1)  # eq. 10, before the sigmoid
        return self.dropout(features), gate_logit, attn.float()

    def _candidates(self, encoder_out, incremental_state):
        if incremental_state is not None:
            rows = self.get_incremental_state(incremental_state, "vocab_rows")
            masks = (self.get_incremental_state(incremental_state, "per_sentence") or {}).get("vocab_masks")
            if rows is not None and masks is not None:
                return rows, masks
        vocab, generative, copy_index = self.restricted_vocabulary(encoder_out["src_tokens"])
        rows = (vocab,) + self.output_rows(vocab)
        masks = (generative, copy_index) + source_word_groups(copy_index, encoder_out["encoder_padding_mask"])
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "vocab_rows", rows)
            self._cache_per_sentence(incremental_state, encoder_out, vocab_masks=masks)
        return rows, masks

    def _cache_per_sentence(self, incremental_state, encoder_out, **entries):
        """Add entries to the ``"per_sentence"`` cache (with the rows' sentence ids)."""
        per_sentence = self.get_incremental_state(incremental_state, "per_sentence") or {
            "sentence_ids": encoder_out.get("sentence_ids")}
        self.set_incremental_state(incremental_state, "per_sentence", dict(per_sentence, **entries))

    def forward(self, prev_output_tokens, encoder_out, incremental_state=None, **unused):
        features, gate_logit, attn = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        (vocab, weight, bias), (generative, copy_index, *word_groups) = self._candidates(encoder_out, incremental_state)
        log_p_gen = self.generative_log_probs(features, weight, bias, generative)
        # eq. 7 and 11; the mixture proper only at the source's words (copy_mixture's docstring)
        lprobs = copy_mixture(gate_logit.float(), attn, copy_index, word_groups, log_p_gen)
        extra = {
            "attn": [self.attention_in_input_order(attn, encoder_out)],
            "copy_gate": [torch.sigmoid(gate_logit)],
            "copy_gate_logit": [gate_logit],
            "vocab": [vocab],
            "generative_mask": [generative],
        }
        if incremental_state is not None and self.reuse_full_vocab_buffer:
            extra["full_vocab_buffer"] = [self._full_vocab_buffer(incremental_state, lprobs.size(0))]
        return lprobs, extra

    def _full_vocab_buffer(self, incremental_state, bsz):
        """The ``rows x |V|`` float32 tensor that get_normalized_probs writes each step into.

        Made at the first step of a batch. Later steps may have fewer rows (finished sentences
        leave the beam search); get_normalized_probs refills the first ``bsz`` rows at every
        step, so they serve.
        """
        buffer = self.get_incremental_state(incremental_state, "full_vocab_buffer")
        if buffer is None or buffer.size(0) < bsz:
            buffer = torch.empty((bsz, len(self.dictionary)), dtype=torch.float32,
                                 device=self.output_bias.device)
            self.set_incremental_state(incremental_state, "full_vocab_buffer", buffer)
        return buffer

    def output_layer_num_parameters(self):
        """Parameters of the generative output layer (the rows of eq. 9's softmax, gathered per batch).

        With a tied output layer only the bias counts: the weights are the input embeddings.
        """
        weight = 0 if self.share_input_output_embed else self.output_weight.numel()
        bias = self.output_bias.numel() if isinstance(self.output_bias, nn.Parameter) else 0
        return weight + bias

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        """B x T x |V| (log-)probs: the mixture re-normalised (for --temperature), -inf outside E.

        In incremental decoding (one step, ``extra["full_vocab_buffer"]`` present) the log-probs
        are written into the batch's cached buffer: valid until the next decoding step.
        """
        compact, extra = net_output[0], net_output[1]
        lprobs = F.log_softmax(compact.float(), dim=-1)
        vocab = extra["vocab"][0]
        bsz, tgt_len, n = lprobs.size()
        buffer = extra.get("full_vocab_buffer")
        if log_probs and buffer is not None and tgt_len == 1:
            # Refilled, not trusted: the caller may have changed any column in place since the
            # last step (Sampling.step exponentiates it; see the module docstring).
            full = buffer[0][:bsz].fill_(float("-inf")).unsqueeze(1)  # B x 1 x |V|
        else:
            full = lprobs.new_full((bsz, tgt_len, len(self.dictionary)), float("-inf"))
        full.index_copy_(2, vocab, lprobs)
        return full if log_probs else full.exp()

    def reorder_incremental_state(self, incremental_state, new_order):
        hidden = self.get_incremental_state(incremental_state, "cached_state")
        if hidden is not None:
            self.set_incremental_state(incremental_state, "cached_state", hidden.index_select(1, new_order))
        per_sentence = self.get_incremental_state(incremental_state, "per_sentence")
        if per_sentence is not None:
            self.set_incremental_state(incremental_state, "per_sentence", reorder_per_sentence(per_sentence, new_order))


def core_align_table_problem(args):
    """--core-align-table, checked when fairseq parses the command (``patching.add_option_check``), before
    any work: a regular file (read again by every process that builds the model: a named pipe would be
    empty there) whose content passes the one check of keyed files (``align_table.check_table``: the
    format, a pair listed twice, a non-finite score, no pair). Raised, not returned: the one line and
    exit status the build gave for the same table before."""
    from fairseq_wean import textio

    path = getattr(args, "core_align_table", None)
    if not isinstance(path, str) or not path:
        return None
    if textio.node_kind(path, follow=True) == textio.NODE:
        raise FairseqWeanError("--core-align-table {} is a named pipe, socket or device: refused (the table is read "
                               "for its checks when the command is parsed and again by every process that builds "
                               "the model); give a regular file".format(path))
    check_table(path, "--core-align-table")
    return None


def _register_option_checks():
    from fairseq_wean.patching import add_option_check, add_option_need

    add_option_check(core_align_table_problem)
    add_option_need("core_frequent_from", lambda args: getattr(args, "core_num_frequent", None) != 0,
                    "it ranks the words of U, and --core-num-frequent 0 keeps none")


_register_option_checks()


@register_model_architecture("core_copy", "core_copy")
def base_architecture(args):
    """The paper's sizes: embeddings 256, hidden states 512, top-10 alignments, |U| = 2000."""
    args.dropout = getattr(args, "dropout", 0.2)
    args.embed_dim = shared_embed_dim(args, 256)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 512)
    args.encoder_layers = getattr(args, "encoder_layers", 1)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 512)
    args.decoder_layers = getattr(args, "decoder_layers", 1)
    args.decoder_out_embed_dim = getattr(args, "decoder_out_embed_dim", args.embed_dim)
    args.share_decoder_input_output_embed = getattr(args, "share_decoder_input_output_embed", False)
    args.attention_score = getattr(args, "attention_score", "concat")
    args.core_align_table = getattr(args, "core_align_table", None)
    args.core_topk = getattr(args, "core_topk", 10)
    args.core_num_frequent = getattr(args, "core_num_frequent", 2000)
    args.core_frequent_from = getattr(args, "core_frequent_from", "joined")
    args.core_psi = getattr(args, "core_psi", "tanh")
    args.core_attend_previous_state = getattr(args, "core_attend_previous_state", False)
    args.core_input_feeding = getattr(args, "core_input_feeding", False)
    args.max_source_positions = getattr(args, "max_source_positions", DEFAULT_MAX_POSITIONS)
    args.max_target_positions = getattr(args, "max_target_positions", DEFAULT_MAX_POSITIONS)


@register_model_architecture("core_copy", "core_copy_small")
def core_copy_small(args):
    """Half the paper's sizes, for small corpora and CPU runs."""
    args.embed_dim = shared_embed_dim(args, 128)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 256)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 256)
    base_architecture(args)
