"""Tasks: ``translation_with_metrics`` (fairseq's ``translation`` plus SARI and ROUGE in validation)."""
import importlib
import os

for _file in sorted(os.listdir(os.path.dirname(__file__))):
    if _file.endswith(".py") and not _file.startswith("_"):
        importlib.import_module("fairseq_wean.tasks." + _file[: -len(".py")])
