"""Scoring: the fairseq scorer `rouge` (--scoring rouge), SARI and the metrics of fairseq-wean-score."""
import importlib
import os

for _file in sorted(os.listdir(os.path.dirname(__file__))):
    if _file.endswith(".py") and not _file.startswith("_"):
        importlib.import_module("fairseq_wean.scoring." + _file[: -len(".py")])
