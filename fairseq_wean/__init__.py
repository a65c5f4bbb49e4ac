"""fairseq-wean: a fairseq plugin (``--user-dir fairseq_wean``) for paraphrase-oriented generation.

Importing the package registers the architectures, the criterion and the scorers, and
applies the fixes in :mod:`fairseq_wean.compat`. Nothing here touches a device.

The commands that need no fairseq (:data:`STANDALONE_COMMANDS`: scoring, the report page, the
alignment table, the CPU-distributed launcher) skip that when they are the running program and
fairseq is not imported yet: importing fairseq imports every task it has (scikit-learn and scipy
included), about 4 s of CPU per process, against about 0.3 s for the command itself.
"""
import os
import sys

from fairseq_wean import errors

STANDALONE_COMMANDS = ("fairseq-wean-score", "fairseq-wean-report", "fairseq-wean-align-table",
                       "fairseq-wean-train-cpu-dist",  # the launcher: its ranks run fairseq-train
                       "job_guard.py")  # examples/job_guard.py, the example scripts' folder check

errors.install_excepthook()


def _runs_standalone():
    """True in the console scripts of :data:`STANDALONE_COMMANDS` (``python -m`` runs them with
    the plugin registered, as any other program that imports the package)."""
    argv = getattr(sys, "argv", None) or [""]
    return os.path.basename(argv[0]) in STANDALONE_COMMANDS and "fairseq" not in sys.modules


if not _runs_standalone():
    from fairseq_wean import compat

    compat.apply()

    from fairseq_wean.report import gate_lines

    gate_lines.install()  # fairseq-generate --print-gates (G- lines for fairseq-wean-report)

    from fairseq_wean import hub, unk_replacement

    unk_replacement.install()  # --replace-unk on binarized data, with the models' attention
    hub.install()  # --bpe unk_markers in the hub interface and fairseq-interactive

    from fairseq_wean import criterions, models, tasks  # noqa: F401  (registration)
    from fairseq_wean.scoring import rouge  # noqa: F401  (--scoring rouge)
