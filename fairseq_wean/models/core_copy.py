"""CoRe: joint Copying and Restricted generation (Cao et al., AAAI 2017).

Paper: ``shared/papers/core_cao2017_copying_restricted_generation.txt``. Two decoders share
one GRU decoder state s_t and one attention; a gate mixes them:

    h_tau   = biGRU(x_tau, h_tau-1)                      (eq. 1)  -> RNNEncoder(cell_type="gru")
    alpha_t = softmax_tau eta(s_t, h_tau)                (eq. 5)  -> SourceAttention ("concat" score)
    c_t     = sum_tau alpha_t,tau h_tau                  (eq. 6)
    p_C(y)  = sum_{tau: x_tau = y} alpha_t,tau           (eq. 7)  -> CoreDecoder.copy_log_probs
    V_G     = A(X) u U                                   (eq. 8)  -> CoreDecoder.restricted_vocabulary
    p_G(y)  = softmax over V_G of w_y psi(y_t-1,s_t,c_t) (eq. 9)  -> CoreDecoder.generative_log_probs
    lambda_t = sigma(w_C s_t)                            (eq. 10) -> CoreDecoder.copy_gate
    p(y)    = lambda_t p_C + (1 - lambda_t) p_G          (eq. 11) -> log_mixture
    loss    = CE (eq. 14) + BCE(lambda_t, lambda*_t) (eq. 12, 15) -> criterion ``core_mode_loss``

Design choices, and why:

* **Attention on s_t, not s_t-1.** The paper follows Bahdanau (eq. 5 scores s_t-1). We score the
  current state s_t (Luong's order) so that teacher-forced training runs the GRU over the whole
  target in one call and attends for all steps in one batched product, as ``wean_lstm`` does; the
  attention still predicts y_t, which is what eq. 7 needs. There is no input feeding.
* **The restricted softmax is computed over gathered rows only.** For a batch we form
  E = U u A(X_1..X_B) u X_1..X_B (sorted ids, a few thousand instead of |V|), gather those rows
  of the output projection and mask, per sentence, the ids of E outside that sentence's V_G. A
  softmax over E with those -inf is exactly the per-sentence softmax over V_G (eq. 9). In
  incremental decoding E and the gathered rows are computed once and cached.
* **The decoder returns mixture log-probs over E** (``B x T x |E|``, with the ids of E in
  ``extra["vocab"]``); ``get_normalized_probs`` re-normalises (so ``--temperature`` keeps its
  meaning) and scatters them onto the full vocabulary, -inf elsewhere. Every fairseq consumer
  (SequenceGenerator, fairseq's criteria, the scorer) goes through ``get_normalized_probs``;
  ``core_mode_loss`` reads the compact form and never builds a ``B x T x |V|`` tensor.
* **One full-vocabulary buffer per decoded batch.** fairseq's beam search wants a ``B x |V|`` row
  per step. A fresh -inf-filled tensor every step cost 11% of core_copy's generation time at
  |V| = 50k (``fill_`` in ``python -m bench.profile``; 64 MB per step, above glibc's mmap
  threshold, so every step page-faults it in anew).
  E is fixed for a batch, so in incremental decoding the -inf buffer is made once and kept in the
  incremental state, and each step writes only the E columns. The price: the returned tensor is
  valid until the next decoding step (SequenceGenerator uses each step's row before the next; a
  caller that keeps rows must clone them). SequenceGenerator writes into it only -inf (pad, NGram
  blocking, max length) or into columns of E (unk penalty, eos), which the next step overwrites.
* **Log space.** eq. 11 is ``logsumexp(logsigmoid(z) + log p_C, logsigmoid(-z) + log p_G)``; its
  backward and that of log p_C are written by hand (``_LogMixture``, ``_MaskedLog``) so that a
  probability of 0 gives a zero gradient, not NaN, and few B x T x N tensors are kept; every row
  keeps unk and eos (always in U), so no row is all -inf.
* **The alignment table A ships in the model** as a persistent buffer (``align_table``,
  ``|V| x topk`` ids, pad = no entry). It is read from ``--core-align-table`` once, when the model
  is first built for training; ``args.core_align_table_in_checkpoint`` then records that the
  checkpoint carries it, so fairseq-generate and fairseq-interactive never read the file.
* **U** is the ``--core-num-frequent`` most frequent words: dictionary ids
  ``nspecial .. nspecial+N`` (fairseq-preprocess sorts its dictionary by count), plus unk and eos.
* **Rare and unseen words** are copied through source-position markers ``<unk-N>``
  (:mod:`preprocess.unk_markers`, fairseq's pointer-generator recipe). Markers are copy-only (never
  in V_G) and share the ``<unk>`` input embedding, so a marker for a position never seen in
  training behaves like the trained ones.
"""
import contextlib
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import (
    FairseqIncrementalDecoder,
    register_model,
    register_model_architecture,
)
from omegaconf import OmegaConf, open_dict

from fairseq_wean.data.align_table import read_align_table
from fairseq_wean.data.markers import marker_ids
from fairseq_wean.errors import (
    FairseqWeanError,
    require_joined_dictionary,
)
from fairseq_wean.modules.checked_model import CheckedEncoderDecoderModel
from fairseq_wean.modules.attention import SCORE_CHOICES, SourceAttention
from fairseq_wean.modules.layers import RNN, Linear
from fairseq_wean.modules.rnn_encoder import (
    DEFAULT_MAX_POSITIONS,
    RNNEncoder,
    add_rnn_seq2seq_args,
    attention_in_input_order,
    initial_decoder_state,
    reorder_per_sentence,
)

logger = logging.getLogger(__name__)

def frequent_word_mask(dictionary, num_frequent):
    """U as a ``|V|`` bool mask: ids ``nspecial .. nspecial+N`` plus unk and eos, no markers."""
    mask = torch.zeros(len(dictionary), dtype=torch.bool)
    mask[dictionary.nspecial : dictionary.nspecial + num_frequent] = True
    mask[dictionary.unk()] = True
    mask[dictionary.eos()] = True
    for i in marker_ids(dictionary):
        mask[i] = False
    return mask


# --------------------------------------------------------------------------- numerics
class _MaskedLog(torch.autograd.Function):
    """log p with -inf where p == 0; the gradient there is 0 (not NaN). Saves only p."""

    @staticmethod
    def forward(ctx, p):
        ctx.save_for_backward(p)
        return p.log()  # log(0) = -inf

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        return (grad / p).masked_fill_(p == 0, 0.0)  # one B x T x N tensor, not four


def masked_log(p):
    """log p with -inf where p == 0, and a zero (not NaN) gradient there."""
    return _MaskedLog.apply(p)


class _LogMixture(torch.autograd.Function):
    """eq. 11 in log space, with a hand-written backward that keeps only the inputs and the output.

    out = log(lambda e^lc + (1 - lambda) e^lg), lambda = sigmoid(z). With the posterior weights
    w_C = lambda e^lc / e^out and w_G = (1 - lambda) e^lg / e^out (they sum to 1):
    d out / d lc = w_C, d out / d lg = w_G, d out / d z = (1 - lambda) w_C - lambda w_G.
    Where both parts are -inf, out is -inf and every gradient is 0 (w_C = w_G = 0).
    Autograd through the same formula kept about eight B x T x N intermediates per batch
    (1.35x fairseq lstm's training memory at 8k words); this keeps three, which the loss
    needs anyway.
    """

    @staticmethod
    def forward(ctx, gate_logit, log_p_copy, log_p_gen):
        out = torch.logaddexp(F.logsigmoid(gate_logit).unsqueeze(-1) + log_p_copy,
                              F.logsigmoid(-gate_logit).unsqueeze(-1) + log_p_gen)
        ctx.save_for_backward(gate_logit, log_p_copy, log_p_gen, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # In place where possible: the two weight tensors become the two returned gradients.
        gate_logit, log_p_copy, log_p_gen, out = ctx.saved_tensors
        # w = exp(log part - out); where out = -inf the difference is NaN (-inf - -inf): w = 0
        grad_copy = (log_p_copy - out).add_(F.logsigmoid(gate_logit).unsqueeze(-1)).exp_().nan_to_num_(0.0)
        grad_gen = (log_p_gen - out).add_(F.logsigmoid(-gate_logit).unsqueeze(-1)).exp_().nan_to_num_(0.0)
        grad_copy.mul_(grad)  # d out / d lc = w_C
        grad_gen.mul_(grad)  # d out / d lg = w_G
        lam = torch.sigmoid(gate_logit)
        grad_gate = (1 - lam) * grad_copy.sum(-1) - lam * grad_gen.sum(-1)
        return grad_gate, grad_copy, grad_gen


def log_mixture(gate_logit, log_p_copy, log_p_gen):
    """eq. 11 in log space: log(lambda p_C + (1 - lambda) p_G), lambda = sigmoid(gate_logit).

    gate_logit: B x T; log_p_copy, log_p_gen: B x T x N (-inf = probability 0). Entries where both
    parts are -inf stay -inf, and their gradient is 0 rather than NaN (autograd through
    torch.logaddexp would give NaN there): see :class:`_LogMixture`.
    """
    return _LogMixture.apply(gate_logit, log_p_copy, log_p_gen)


class MarkerEmbedding(nn.Embedding):
    """Word embeddings in which every ``<unk-N>`` marker reads the ``<unk>`` row.

    As in fairseq's pointer-generator: a marker says "some rare word at source position N"; the
    copy distribution (eq. 7) distinguishes markers by their ids, the embedding does not need to.
    """

    def __init__(self, dictionary, embedding_dim):
        super().__init__(len(dictionary), embedding_dim, padding_idx=dictionary.pad())
        nn.init.uniform_(self.weight, -0.1, 0.1)
        nn.init.constant_(self.weight[dictionary.pad()], 0)
        lookup = torch.arange(len(dictionary))
        markers = marker_ids(dictionary)
        if markers:
            lookup[markers] = dictionary.unk()
        self.has_markers = bool(markers)
        self.register_buffer("lookup", lookup, persistent=False)

    def forward(self, tokens):
        if self.has_markers:
            tokens = self.lookup[tokens]
        return super().forward(tokens)


# --------------------------------------------------------------------------- model
@register_model("core_copy")
class CoreCopyModel(CheckedEncoderDecoderModel):
    """Bidirectional GRU encoder, GRU decoder with a copying and a restricted generative decoder."""

    @staticmethod
    def add_args(parser):
        add_rnn_seq2seq_args(parser, "GRU (the encoder is bidirectional)")
        parser.add_argument("--embed-dim", type=int, metavar="N",
                            help="word embedding size, shared by encoder and decoder input")
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

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        require_joined_dictionary(task, args.arch)
        if args.core_topk < 1 or args.core_num_frequent < 0:
            raise FairseqWeanError("--core-topk must be >= 1 and --core-num-frequent >= 0")
        if args.share_decoder_input_output_embed and args.decoder_out_embed_dim != args.embed_dim:
            raise FairseqWeanError(
                "--share-decoder-input-output-embed needs --decoder-out-embed-dim ({}) equal to "
                "--embed-dim ({})".format(args.decoder_out_embed_dim, args.embed_dim)
            )
        dictionary = task.source_dictionary
        if getattr(args, "core_align_table_in_checkpoint", False):
            # Built to load a checkpoint (generate, interactive): the table comes from its state.
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
            # Saved with the model's arguments: later builds take A from the checkpoint.
            with open_dict(args) if OmegaConf.is_config(args) else contextlib.nullcontext():
                args.core_align_table_in_checkpoint = True
        embed_tokens = MarkerEmbedding(dictionary, args.embed_dim)
        # CoRe's encoder: a bidirectional GRU (eq. 1)
        encoder = RNNEncoder.from_args(args, dictionary, embed_tokens, cell_type="gru", bidirectional=True)
        decoder = CoreDecoder(
            dictionary,
            embed_tokens,
            encoder_output_units=encoder.output_units,
            align_table=table,
            frequent_mask=frequent_word_mask(dictionary, args.core_num_frequent),
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


class CoreDecoder(FairseqIncrementalDecoder):
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
    ``"vocab_masks"`` (generative mask B x N, copy index B x S) and ``"sentence_ids"`` (B), so
    that a reorder within sentences leaves it as it is (``reorder_per_sentence``);
    ``"full_vocab_buffer"``: rows x |V| float32, -inf outside E, not reordered (its rows are
    interchangeable; see the module docstring).
    """

    def __init__(
        self,
        dictionary,
        embed_tokens,
        encoder_output_units,
        align_table,
        frequent_mask,
        hidden_size=512,
        num_layers=1,
        out_embed_dim=256,
        dropout=0.2,
        attention_score="concat",
        share_input_output_embed=False,
        max_target_positions=DEFAULT_MAX_POSITIONS,
        left_pad_source=True,
    ):
        super().__init__(dictionary)
        self.embed_tokens = embed_tokens
        embed_dim = embed_tokens.embedding_dim
        self.left_pad_source = left_pad_source
        self.padding_idx = dictionary.pad()
        self.num_layers = num_layers
        self.max_target_positions = max_target_positions
        self.dropout = nn.Dropout(dropout)
        self.init_state_proj = Linear(encoder_output_units, hidden_size)
        self.rnn = RNN("gru", embed_dim, hidden_size, num_layers=num_layers,
                       dropout=dropout if num_layers > 1 else 0.0, batch_first=True)
        self.attention = SourceAttention(hidden_size, encoder_output_units, attention_score)  # eq. 5
        # psi(y_t-1, s_t, c_t) of eq. 9: an affine map of the three, then tanh.
        self.readout = Linear(embed_dim + hidden_size + encoder_output_units, out_embed_dim)
        self.share_input_output_embed = share_input_output_embed
        if not share_input_output_embed:
            self.output_weight = nn.Parameter(torch.empty(len(dictionary), out_embed_dim).uniform_(-0.1, 0.1))
        self.output_bias = nn.Parameter(torch.zeros(len(dictionary)))
        self.copy_gate = Linear(hidden_size, 1, bias=False)  # w_C of eq. 10
        # A (eq. 8): persistent, so that a checkpoint is self-contained.
        self.register_buffer("align_table", align_table)
        # U (eq. 8): derived from the dictionary and --core-num-frequent, so not saved.
        self.register_buffer("frequent_mask", frequent_mask, persistent=False)
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
    @staticmethod
    def copy_log_probs(attn, copy_index, num_candidates):
        """eq. 7: log p_C over the candidates; weights of repeated source words add up.

        attn: B x T x S, copy_index: B x S -> B x T x N (-inf for words not in the source).
        """
        bsz, tgt_len, src_len = attn.size()
        p_copy = attn.new_zeros(bsz, tgt_len, num_candidates)
        p_copy.scatter_add_(2, copy_index.unsqueeze(1).expand(bsz, tgt_len, src_len), attn)
        return masked_log(p_copy)

    @staticmethod
    def generative_log_probs(features, weight, bias, generative_mask):
        """eq. 9: log-softmax of w_y psi over V_G only.

        features: B x T x D; weight: N x D and bias: N (the gathered rows); generative_mask:
        B x N. Returns B x T x N, -inf outside V_G.
        """
        logits = F.linear(features, weight, bias).float()
        logits = logits.masked_fill(~generative_mask.unsqueeze(1), float("-inf"))
        return F.log_softmax(logits, dim=-1)

    # ---------------------------------------------------------------- forward
    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None, **unused):
        """Returns psi (B x T x D), the gate logits z_t (B x T) and alpha (B x T x S)."""
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
        x = self.dropout(self.embed_tokens(prev_output_tokens))  # B x T x E

        enc = encoder_out["encoder_states"]
        hidden = self.get_incremental_state(incremental_state, "cached_state")
        if hidden is None:
            hidden = initial_decoder_state(self.init_state_proj, encoder_out["final_state"], self.num_layers)
        states, hidden = self.rnn(x, hidden)  # s_t: B x T x H
        # The key side of the additive score, W_k h_j, is the same at every step: computed once.
        per_sentence = self.get_incremental_state(incremental_state, "per_sentence") or {}
        keys = per_sentence.get("attention_keys")
        if keys is None:
            keys = self.attention.project_keys(enc)
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "cached_state", hidden)
            if "attention_keys" not in per_sentence:
                self._cache_per_sentence(incremental_state, encoder_out, attention_keys=keys)

        context, attn = self.attention(  # eq. 5-6
            states, enc, enc, encoder_out["encoder_padding_mask"], projected_keys=keys)
        features = torch.tanh(self.readout(torch.cat([x, states, context], dim=-1)))  # psi of eq. 9
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
        masks = (generative, copy_index)
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
        (vocab, weight, bias), (generative, copy_index) = self._candidates(encoder_out, incremental_state)
        log_p_gen = self.generative_log_probs(features, weight, bias, generative)
        log_p_copy = self.copy_log_probs(attn, copy_index, vocab.numel())
        lprobs = log_mixture(gate_logit.float(), log_p_copy, log_p_gen)  # eq. 11
        extra = {
            "attn": [attention_in_input_order(attn, encoder_out["encoder_padding_mask"], self.left_pad_source)],
            "copy_gate": [torch.sigmoid(gate_logit)],
            "copy_gate_logit": [gate_logit],
            "vocab": [vocab],
            "generative_mask": [generative],
        }
        if incremental_state is not None and self.reuse_full_vocab_buffer:
            extra["full_vocab_buffer"] = [self._full_vocab_buffer(incremental_state, lprobs.size(0))]
        return lprobs, extra

    def _full_vocab_buffer(self, incremental_state, bsz):
        """The -inf ``rows x |V|`` float32 tensor that get_normalized_probs scatters E into.

        Made at the first step of a batch. Later steps may have fewer rows (finished sentences
        leave the beam search); every row has -inf outside E and E is rewritten at every step,
        so the first ``bsz`` rows serve.
        """
        buffer = self.get_incremental_state(incremental_state, "full_vocab_buffer")
        if buffer is None or buffer.size(0) < bsz:
            buffer = torch.full((bsz, len(self.dictionary)), float("-inf"), dtype=torch.float32,
                                device=self.output_bias.device)
            self.set_incremental_state(incremental_state, "full_vocab_buffer", buffer)
        return buffer

    def output_layer_num_parameters(self):
        """Parameters of the generative output layer (the rows of eq. 9's softmax, gathered per batch).

        With a tied output layer only the bias counts: the weights are the input embeddings.
        """
        weight = 0 if self.share_input_output_embed else self.output_weight.numel()
        return weight + self.output_bias.numel()

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
            full = buffer[0][:bsz].unsqueeze(1)  # B x 1 x |V|, -inf outside E
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

    def max_positions(self):
        return self.max_target_positions


@register_model_architecture("core_copy", "core_copy")
def base_architecture(args):
    """The paper's sizes: embeddings 256, hidden states 512, top-10 alignments, |U| = 2000."""
    args.dropout = getattr(args, "dropout", 0.2)
    args.embed_dim = getattr(args, "embed_dim", 256)
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
    args.max_source_positions = getattr(args, "max_source_positions", DEFAULT_MAX_POSITIONS)
    args.max_target_positions = getattr(args, "max_target_positions", DEFAULT_MAX_POSITIONS)


@register_model_architecture("core_copy", "core_copy_small")
def core_copy_small(args):
    """Half the paper's sizes, for small corpora and CPU runs."""
    args.embed_dim = getattr(args, "embed_dim", 128)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 256)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 256)
    base_architecture(args)
