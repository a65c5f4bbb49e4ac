"""``core_mode_loss``: CoRe's training objective (Cao et al. 2017, eq. 12-15).

    loss = eps_1 + w * eps_2
    eps_1 = -sum_t log p(y*_t | y_<t, X)                                   (eq. 14)
    eps_2 = -sum_t lambda*_t log lambda_t + (1 - lambda*_t) log(1 - lambda_t)   (eq. 15)
    lambda*_t = 1 iff y*_t occurs in the source X                          (eq. 12)

w is ``--mode-loss-weight`` (1.0 gives the paper's sum, eq. 13). pad, eos and unk never count as
copied. The model must be ``core_copy`` (any model whose decoder output carries ``"vocab"`` and
``"copy_gate_logit"``); the loss is computed on its compact output over the batch's candidate ids,
so no ``B x T x |V|`` tensor is built.

A target word in neither part of the mixture (not in the source, not in V_G = A(X) u U) has
probability 0: as the paper puts unk into U, such a word is scored as ``<unk>``, which is always in
U. The loss therefore stays finite and every gradient is finite.

``--label-smoothing eps`` spreads eps over the words the model can produce for that sentence
(the finite entries of the row), not over the whole vocabulary. fairseq's own smoothing
(``label_smoothed_nll_loss``) sums -log p over every entry of the row; with the -inf
log-probabilities of words outside the restricted vocabulary that sum is inf, and the loss NaN
even at eps = 0 (0 * inf).
"""
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq import metrics, utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from omegaconf import II

from fairseq_wean.errors import FairseqWeanError


# The largest --mode-loss-weight w: the paper sums the two losses (w = 1, eq. 13); at w = 1e4 the word loss eps_1
# is already 1e-4 of the objective (training fits the gate alone), and larger weights only scale the gradients
# towards overflow (1e300: inf gradients, a FloatingPointError and crash.pt at the first update).
MAX_MODE_LOSS_WEIGHT = 1e4


def option_problem(mode_loss_weight, label_smoothing):
    """The one line for criterion options out of range, or None (at parse and where the criterion is built)."""
    for flag, value in (("--mode-loss-weight", mode_loss_weight), ("--label-smoothing", label_smoothing)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return "{} must be a number, got {!r}".format(flag, value)
    if mode_loss_weight < 0:
        return ("--mode-loss-weight must be >= 0, got {}: a negative weight maximises the copy-gate loss "
                "(1.0 is the paper's sum, eq. 13; 0 turns the gate supervision off)".format(mode_loss_weight))
    if mode_loss_weight > MAX_MODE_LOSS_WEIGHT:
        return ("--mode-loss-weight {} is above {:g}: the word loss would weigh nothing beside the copy-gate loss "
                "and the gradients overflow (1.0 is the paper's sum, eq. 13)".format(mode_loss_weight,
                                                                                    MAX_MODE_LOSS_WEIGHT))
    if not 0 <= label_smoothing < 1:
        return ("--label-smoothing must be in [0, 1), got {}: it is the probability mass spread over the "
                "other words (e.g. 0.1; 0 turns it off)".format(label_smoothing))
    return None


def parsed_option_problem(args):
    """:func:`option_problem` when fairseq parses a command with ``--criterion core_mode_loss``
    (``patching.add_option_check``): one line before any work, not at the first update."""
    if getattr(args, "criterion", None) != "core_mode_loss":
        return None
    return option_problem(getattr(args, "mode_loss_weight", 1.0), getattr(args, "label_smoothing", 0.0))


@dataclass
class CoreModeLossConfig(FairseqDataclass):
    mode_loss_weight: float = field(
        default=1.0,
        metadata={"help": "weight w of the writing-mode loss eps_2 (eq. 15); 1.0 is the paper's sum (eq. 13)"},
    )
    label_smoothing: float = field(
        default=0.0,
        metadata={"help": "label smoothing over the words the model can produce for the sentence; 0 = off"},
    )
    sentence_avg: bool = II("optimization.sentence_avg")


def gold_copy_labels(target, src_tokens, dictionary):
    """eq. 12: lambda*_t = 1 iff y*_t occurs in the source; pad, eos, unk never count.

    target: B x T, src_tokens: B x S (any padding side). Returns a bool B x T.
    """
    in_source = (target.unsqueeze(2) == src_tokens.unsqueeze(1)).any(dim=2)
    special = target.eq(dictionary.pad()) | target.eq(dictionary.eos()) | target.eq(dictionary.unk())
    return in_source & ~special


def target_log_probs(lprobs, vocab, target, unk):
    """log p(y*_t) from compact log-probs; words with probability 0 are scored as unk.

    lprobs: B x T x N over the sorted ids ``vocab`` (N); target: B x T. Returns B x T.
    """
    n = vocab.numel()
    cols = torch.searchsorted(vocab, target).clamp_(max=n - 1)
    found = vocab[cols].eq(target)
    picked = lprobs.gather(2, cols.unsqueeze(2)).squeeze(2)
    unk_col = torch.searchsorted(vocab, vocab.new_tensor([unk])).clamp_(max=n - 1)
    unk_lp = lprobs.index_select(2, unk_col).squeeze(2)
    usable = found & torch.isfinite(picked)
    return torch.where(usable, picked, unk_lp)


@register_criterion("core_mode_loss", dataclass=CoreModeLossConfig)
class CoreModeLossCriterion(FairseqCriterion):
    def __init__(self, task, mode_loss_weight=1.0, label_smoothing=0.0, sentence_avg=False):
        super().__init__(task)
        problem = option_problem(mode_loss_weight, label_smoothing)
        if problem is not None:
            raise FairseqWeanError(problem)
        self.mode_loss_weight = mode_loss_weight
        self.eps = label_smoothing
        self.sentence_avg = sentence_avg

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        extra = net_output[1] if len(net_output) > 1 and isinstance(net_output[1], dict) else {}
        if "copy_gate_logit" not in extra or "vocab" not in extra:
            raise FairseqWeanError(
                "--criterion core_mode_loss needs a model with a copy gate and a restricted "
                "vocabulary: use --arch core_copy (or --criterion cross_entropy for other models)"
            )
        target = model.get_targets(sample, net_output)  # B x T
        dictionary = self.task.target_dictionary
        lprobs = net_output[0].float()  # B x T x N, the mixture of eq. 11 over the candidates
        vocab = extra["vocab"][0]
        gate_logit = extra["copy_gate_logit"][0].float()  # B x T
        non_pad = target.ne(self.padding_idx)

        lp = target_log_probs(lprobs, vocab, target, dictionary.unk())
        nll = -lp.masked_fill(~non_pad, 0.0)
        nll_loss = nll.sum()
        if self.eps > 0:
            finite = torch.isfinite(lprobs)
            support = finite.sum(dim=-1).clamp_min(2).float()  # >= 2: unk and eos are in U
            smooth = -lprobs.masked_fill(~finite, 0.0).sum(dim=-1)
            eps_i = self.eps / (support - 1)
            tok_loss = (1.0 - self.eps - eps_i) * nll + eps_i * smooth
            ce_loss = tok_loss.masked_fill(~non_pad, 0.0).sum()
        else:
            ce_loss = nll_loss

        gold = gold_copy_labels(target, sample["net_input"]["src_tokens"], dictionary)
        mode = F.binary_cross_entropy_with_logits(gate_logit, gold.float(), reduction="none")
        mode_loss = mode.masked_fill(~non_pad, 0.0).sum()  # eq. 15
        loss = ce_loss + self.mode_loss_weight * mode_loss

        ntokens = sample["ntokens"]
        sample_size = sample["target"].size(0) if self.sentence_avg else ntokens
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "mode_loss": mode_loss.data,
            "gold_copy": (gold & non_pad).sum().data,
            "pred_copy": (gate_logit.gt(0) & non_pad).sum().data,  # lambda_t > 0.5
            "ntokens": ntokens,
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        loss_sum, nll_sum, mode_sum = total("loss"), total("nll_loss"), total("mode_loss")
        ntokens, sample_size = total("ntokens"), total("sample_size")
        metrics.log_scalar("loss", loss_sum / sample_size / math.log(2), sample_size, round=3)
        metrics.log_scalar("nll_loss", nll_sum / ntokens / math.log(2), ntokens, round=3)
        metrics.log_scalar("mode_loss", mode_sum / ntokens / math.log(2), ntokens, round=3)
        metrics.log_scalar("gold_copy_ratio", total("gold_copy") / ntokens, ntokens, round=3)
        metrics.log_scalar("pred_copy_ratio", total("pred_copy") / ntokens, ntokens, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["nll_loss"].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def _register_option_checks():
    from fairseq_wean.patching import add_option_check

    add_option_check(parsed_option_problem)


_register_option_checks()
