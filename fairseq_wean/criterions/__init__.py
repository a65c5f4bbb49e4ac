"""Every module in this folder registers a criterion on import (fairseq's idiom)."""
import importlib
import os

for _file in sorted(os.listdir(os.path.dirname(__file__))):
    if _file.endswith(".py") and not _file.startswith("_"):
        importlib.import_module("fairseq_wean.criterions." + _file[: -len(".py")])
