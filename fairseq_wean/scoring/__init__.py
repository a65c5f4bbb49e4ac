"""Scoring: the fairseq scorer `rouge` (--scoring rouge), SARI and the metrics of fairseq-wean-score.

The library API (lists of strings in, dicts out): ``score`` (corpus scores, what
``fairseq-wean-score --json`` prints) and ``sentence_scores`` (per sentence), from
:mod:`fairseq_wean.scoring.scores`; fairseq-generate logs: :mod:`fairseq_wean.scoring.generate_log`;
the inputs of fairseq-wean-score and fairseq-wean-report (plain file or log, ``S-``/``T-`` lines
for missing sources and references, one line per test sentence): :mod:`fairseq_wean.scoring.inputs`.
"""
import importlib
import os

for _file in sorted(os.listdir(os.path.dirname(__file__))):
    if _file.endswith(".py") and not _file.startswith("_"):
        importlib.import_module("fairseq_wean.scoring." + _file[: -len(".py")])

from fairseq_wean.scoring.scores import score, sentence_scores  # noqa: E402
