"""``--scoring rouge``: ROUGE-1/2/L F1 inside fairseq-generate, the way ``--scoring sacrebleu`` works.

    fairseq-generate DATA --user-dir fairseq_wean --path ckpt.pt --scoring rouge [--rouge-chars]

fairseq-generate hands the scorer the (post-processed, detokenized) target and hypothesis strings;
the log's last line reads e.g. ``Generate test with beam=5: ROUGE-1/2/L F1 = 30.12/12.34/28.90
(n=1951, rouge-score, stemmed)``. Scores are rouge-score F1 x 100 averaged over sentences, the
same numbers as ``fairseq-wean-score --metrics rouge1,rouge2,rougeL`` on the same strings.
``--rouge-chars`` scores by character (Chinese, e.g. LCSTS). ``score()`` returns ROUGE-L F1 by
default (``score(order=1|2)`` for ROUGE-1/2), e.g. for checkpoint selection.
"""
from dataclasses import dataclass, field

from fairseq.dataclass import FairseqDataclass
from fairseq.scoring import BaseScorer, register_scorer

from fairseq_wean.scoring.metrics import ROUGE_TYPES, rouge_sentence_scores
from fairseq_wean.scoring.scores import check_rouge_options


@dataclass
class RougeScorerConfig(FairseqDataclass):
    rouge_chars: bool = field(
        default=False,
        metadata={"help": "ROUGE on characters (Chinese, e.g. LCSTS); runs of ASCII letters/digits stay one token"},
    )
    rouge_no_stemmer: bool = field(
        default=False, metadata={"help": "do not apply the Porter stemmer (word mode)"}
    )


@register_scorer("rouge", dataclass=RougeScorerConfig)
class RougeScorer(BaseScorer):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.chars = bool(getattr(cfg, "rouge_chars", False))
        self.stemmer = not bool(getattr(cfg, "rouge_no_stemmer", False))
        check_rouge_options(self.chars, self.stemmer, "--rouge-chars", "--rouge-no-stemmer")  # before decoding

    def add_string(self, ref, pred):
        self.ref.append(ref)
        self.pred.append(pred)

    def scores(self):
        """{'rouge1': F1 x 100, 'rouge2': ..., 'rougeL': ...} averaged over sentences."""
        if not self.pred:
            return {t: 0.0 for t in ROUGE_TYPES}
        per_sent = rouge_sentence_scores(self.pred, [self.ref], ROUGE_TYPES, self.chars, self.stemmer)
        return {t: float(v.mean()) for t, v in per_sent.items()}

    def score(self, order="L"):
        return self.scores()["rouge{}".format(order)]

    def result_string(self):
        s = self.scores()
        mode = "characters" if self.chars else ("stemmed" if self.stemmer else "not stemmed")
        return "ROUGE-1/2/L F1 = {:.2f}/{:.2f}/{:.2f} (n={}, rouge-score, {})".format(
            s["rouge1"], s["rouge2"], s["rougeL"], len(self.pred), mode
        )
