"""fairseq-wean: a fairseq plugin (``--user-dir fairseq_wean``) for paraphrase-oriented generation.

Importing the package registers the architectures, the criterion and the scorers, and
applies the fixes in :mod:`fairseq_wean.compat`. Nothing here touches a device.
"""
from fairseq_wean import compat, errors

errors.install_excepthook()
compat.apply()

from fairseq_wean.report import gate_lines  # noqa: E402

gate_lines.install()  # fairseq-generate --print-gates (G- lines for fairseq-wean-report)

from fairseq_wean import hub, unk_replacement  # noqa: E402

unk_replacement.install()  # --replace-unk on binarized data, with the models' attention
hub.install()  # --bpe unk_markers in the hub interface and fairseq-interactive

from fairseq_wean import criterions, models, scoring, tasks  # noqa: E402,F401  (registration)
