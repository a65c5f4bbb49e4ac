#!/usr/bin/env bash
# Side-by-side comparison of fairseq's baselines and this plugin's models on one task:
#
#   bash examples/compare.sh {simplification,summarization,translation} [DATA_DIR] [--tiny] [options]
#
# A thin wrapper of fairseq-wean-compare (`python -m fairseq_wean.compare`, see its --help); it uses the
# Python in $PYTHON, else the first python3 on PATH.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The environment scripts/setup_env.sh made, if present; else the python3 on PATH.
PY="${PYTHON:-$( [ -x "$REPO/.venv/bin/python" ] && echo "$REPO/.venv/bin/python" || command -v python3)}"
# The repository first on the path: this checkout's package even where another one is installed.
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m fairseq_wean.compare "$@"
