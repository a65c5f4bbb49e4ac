"""Scoring: the fairseq scorer `rouge` (--scoring rouge), SARI and the metrics of fairseq-wean-score.

The library API (lists of strings in, dicts out): ``score`` (corpus scores, what
``fairseq-wean-score --json`` prints) and ``sentence_scores`` (per sentence), from
:mod:`fairseq_wean.scoring.scores`; fairseq-generate logs: :mod:`fairseq_wean.scoring.generate_log`;
the inputs of fairseq-wean-score and fairseq-wean-report (plain file or log, ``S-``/``T-`` lines
for missing sources and references, one line per test sentence): :mod:`fairseq_wean.scoring.inputs`.
"""
from fairseq_wean.scoring.scores import score, sentence_scores  # noqa: F401

# The fairseq scorer (:mod:`fairseq_wean.scoring.rouge`) is imported where fairseq is: by the
# package's registration (``fairseq_wean/__init__.py``); the rest of scoring needs no fairseq.
