#!/usr/bin/env bash
# Builds the configuration most fairseq users have: Python 3.10, upstream fairseq 0.12.2 and
# torch 1.13.1 from the package registry, numpy < 2 (torch 1.13 was built against numpy 1; with
# numpy 2 fairseq-preprocess crashes), then this plugin, editable.
#   VENV=...     where the venv goes (default .venv-fairseq0122)
#   PYTHON=...   a Python 3.10 interpreter (default: pyenv's 3.10, else python3.10)
# Run the test suite there with:  VENV/bin/python -m pytest -q tests
# docs/install.md, "Upstream fairseq 0.12.2", says what passed there.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv-fairseq0122}
py=${PYTHON:-}
if [ -z "$py" ]; then
    for cand in "$HOME"/.pyenv/versions/3.10*/bin/python3.10 "$(command -v python3.10 || true)"; do
        if [ -n "$cand" ] && [ -x "$cand" ]; then py=$cand; break; fi
    done
fi
if [ -z "$py" ]; then
    echo "setup_fairseq_0122.sh: no Python 3.10 found (set PYTHON=...)" >&2; exit 2
fi
case "$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" in
    3.10) ;;
    *) echo "setup_fairseq_0122.sh: $py is not Python 3.10" >&2; exit 2 ;;
esac
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
# Every install is constrained: fairseq 0.12.2 requires an unpinned torchaudio, whose newest release
# requires the newest torch, so without torchaudio pinned pip replaced torch 1.13.1 by torch 2.x
# (a CUDA build) while installing fairseq, and the venv silently tested another configuration.
constraints="$venv/constraints.txt"
printf '%s\n' "torch==1.13.1" "torchaudio==0.13.1" "numpy<2" > "$constraints"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check -q -c "$constraints")
# pip < 24.1: fairseq 0.12.2 needs omegaconf 2.0.x, whose metadata (PyYAML>=5.1.*) newer pips refuse
"${pip[@]}" --upgrade "pip<24.1" "setuptools<70" wheel
"${pip[@]}" "torch==1.13.1" "numpy<2"
"${pip[@]}" cython
"${pip[@]}" "fairseq==0.12.2"
"${pip[@]}" -e ".[dev]"
"$venv/bin/python" - <<'PY'
import sys, numpy, torch, fairseq, fairseq_wean  # noqa: F401
print("python", sys.version.split()[0], "torch", torch.__version__, "numpy", numpy.__version__,
      "fairseq", fairseq.__version__)
if not torch.__version__.startswith("1.13.1") or fairseq.__version__ != "0.12.2" or numpy.__version__ >= "2":
    sys.exit("setup_fairseq_0122.sh: error: the venv holds torch {}, fairseq {}, numpy {}, not torch 1.13.1, fairseq "
             "0.12.2, numpy < 2".format(torch.__version__, fairseq.__version__, numpy.__version__))
PY
