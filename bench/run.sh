#!/usr/bin/env bash
# The performance benchmark of issue 5: see bench/run.py (python -m bench.run --help).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
exec "$PYTHON" -m bench.run "$@"
