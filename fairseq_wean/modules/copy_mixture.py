"""Copy-attention machinery: a copy distribution from attention, a softmax restricted to a
per-sentence vocabulary, and the gated mixture of the two, all in log space.

The equations are those of CoRe (Cao et al., "Joint Copying and Restricted Generation for
Paraphrase", AAAI 2017); the functions take plain tensors, so any decoder with an attention
over the source and an output layer can use them (as OpenNMT-py's ``copy_generator.py`` does for
the pointer-generator of See, Liu and Manning, "Get To The Point: Summarization with
Pointer-Generator Networks", ACL 2017). The candidate axis N holds the ids a batch can produce, sorted
(see ``CoreDecoder.restricted_vocabulary``); every function works on that compact axis, so no
``B x T x |V|`` tensor is built.

* :func:`copy_log_probs`: eq. 7, p_C(y) = sum over the source positions tau with x_tau = y of
  alpha_t,tau.
* :func:`restricted_log_softmax`: eq. 9, the softmax of the logits over V_G only.
* :func:`log_mixture`: eq. 11, log(lambda_t p_C + (1 - lambda_t) p_G), lambda_t = sigma(z_t) (eq. 10).
* :func:`masked_log`: log p with -inf (and a zero gradient) where p = 0.
* :func:`copy_mixture`: eq. 7 and 11 together, the mixture proper computed at the source positions
  only (what it needs of each sentence, :func:`source_word_groups`, computed once per sentence).

Probability 0 is -inf throughout; the backward passes of :func:`masked_log` and
:func:`log_mixture` are written by hand so that such entries get a zero gradient, not NaN.
"""
import torch
import torch.nn.functional as F


class _MaskedLog(torch.autograd.Function):
    """log p with -inf where p == 0; the gradient there is 0 (not NaN). Saves only p.

    d log p / d p = 1 / p where p > 0, and 0 where p = 0 (autograd would give inf there, and
    inf * 0 = NaN as soon as the upstream gradient of that entry is 0).
    """

    @staticmethod
    def forward(ctx, p):
        ctx.save_for_backward(p)
        return p.log()  # log(0) = -inf

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        return (grad / p).masked_fill_(p == 0, 0.0)  # one B x T x N tensor, not four


def masked_log(p):
    """log p with -inf where p == 0, and a zero (not NaN) gradient there. Any shape."""
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

    ``logaddexp(logsigmoid(z) + log p_C, logsigmoid(-z) + log p_G)``: log(1 - sigmoid(z)) is
    logsigmoid(-z), so neither weight underflows to log 0 for a saturated gate.

    gate_logit: B x T (z_t of eq. 10); log_p_copy, log_p_gen: B x T x N (-inf = probability 0).
    Returns B x T x N. Entries where both parts are -inf stay -inf, and their gradient is 0
    rather than NaN (autograd through torch.logaddexp would give NaN there): see
    :class:`_LogMixture`.
    """
    return _LogMixture.apply(gate_logit, log_p_copy, log_p_gen)


def copy_log_probs(attn, copy_index, num_candidates):
    """eq. 7: log p_C over the candidates; weights of repeated source words add up.

    p_C(y_t = y) = sum_{tau: x_tau = y} alpha_t,tau, and 0 for a word not in the source.

    attn: B x T x S (alpha, zero at padding); copy_index: B x S (the candidate column of each
    source token); num_candidates: N. Returns B x T x N, -inf for words not in the source.
    """
    bsz, tgt_len, src_len = attn.size()
    p_copy = attn.new_zeros(bsz, tgt_len, num_candidates)
    p_copy.scatter_add_(2, copy_index.unsqueeze(1).expand(bsz, tgt_len, src_len), attn)
    return masked_log(p_copy)


def restricted_log_softmax(features, weight, bias, generative_mask):
    """eq. 9: log p_G(y) = w_y psi + b_y - log sum_{y' in V_G} exp(w_y' psi + b_y'), for y in V_G.

    A softmax over the candidates with -inf outside the sentence's V_G is exactly the softmax
    over V_G; it is computed in float32 whatever the features' type.

    features: B x T x D (psi); weight: N x D and bias: N or None (the candidates' rows of the
    output layer); generative_mask: B x N (True where the candidate is in V_G; at least one per
    row, or the row is NaN: CoRe's U always holds unk and eos). Returns B x T x N, -inf outside V_G.
    """
    logits = F.linear(features, weight, bias).float()
    logits = logits.masked_fill(~generative_mask.unsqueeze(1), float("-inf"))
    return F.log_softmax(logits, dim=-1)


def source_word_groups(copy_index, source_padding):
    """What :func:`copy_mixture` needs of each sentence's source words, which is the same at every
    decoding step (a decoder computes it once per sentence): ``same_word`` (B x S x S, symmetric:
    whether two positions hold the same word) and ``first`` (B x S: the word's first real position).

    copy_index: B x S (the candidate column of each source token); source_padding: B x S (True at
    padding)."""
    src_len = copy_index.size(1)
    real = ~source_padding
    same_word = copy_index.unsqueeze(2).eq(copy_index.unsqueeze(1))  # B x S x S'
    earlier = torch.ones(src_len, src_len, dtype=torch.bool, device=copy_index.device).tril_(-1)  # [tau, tau']: tau' < tau
    first = real & ~(same_word & earlier & real.unsqueeze(1)).any(dim=2)
    return same_word, first


def copy_mixture(gate_logit, attn, copy_index, word_groups, log_p_gen):
    """eq. 7 and 11 together: ``log_mixture(gate_logit, copy_log_probs(attn, copy_index, N), log_p_gen)``,
    with B x T x N work only where the copy distribution is not 0.

    p_C is 0 outside the source's words, and there eq. 11 is log(1 - lambda) + log p_G, one sum over
    the candidates. The mixture proper is computed only at the source positions (B x T x S) and
    written into their columns: p_C(x_tau) = sum of alpha over the positions holding the same word,
    and :func:`log_mixture` (its zero-not-NaN gradients) on the gathered values. A word repeated in
    the source writes the same value from each of its positions; only its first position passes the
    gradient on, so that it is counted once.

    gate_logit: B x T; attn: B x T x S (zero at padding); copy_index: B x S; word_groups:
    ``source_word_groups(copy_index, source_padding)``; log_p_gen: B x T x N. Returns B x T x N,
    equal to the dense formula (bit for bit outside the source's columns, where log(0 + x) is x).
    """
    bsz, tgt_len, src_len = attn.size()
    same_word, first = word_groups
    # p_C of the word at each position: sum over the positions of the same word (alpha is 0 at padding)
    p_copy = torch.bmm(attn, same_word.to(attn.dtype))  # B x T x S
    cols = copy_index.unsqueeze(1).expand(bsz, tgt_len, src_len)
    gen_at_source = log_p_gen.gather(2, cols)
    mixed = log_mixture(gate_logit, masked_log(p_copy), gen_at_source)  # B x T x S
    mixed = torch.where(first.unsqueeze(1), mixed, mixed.detach())
    generative_only = F.logsigmoid(-gate_logit).unsqueeze(-1) + log_p_gen  # log(1 - lambda) + log p_G
    return generative_only.scatter(2, cols, mixed)
