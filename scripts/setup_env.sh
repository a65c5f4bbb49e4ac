#!/usr/bin/env bash
# Creates ./.venv with everything fairseq-wean needs, on a machine where only Python 3 exists.
#
# torch is installed first, pinned to 2.13.0, because fairseq's build imports torch and an
# unpinned `torch` would pull a multi-GB CUDA build. fairseq (fairseq-fixed on Python >= 3.11,
# see setup.py) is then built against that torch with --no-build-isolation: with build
# isolation pip would build it against a freshly downloaded torch.
# Re-running is cheap: nothing is reinstalled while setup.py is unchanged.
#   PYTHON=python3.11   which interpreter creates the venv (default python3)
#   TORCH_SPEC=...      what to install for torch (default torch==2.13.0)
#   PIP_EXTRA=...       extra pip options, e.g. "--extra-index-url https://download.pytorch.org/whl/cpu"
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
stamp=$venv/.fairseq-wean-setup
if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
if [ -f "$stamp" ] && cmp -s "$stamp" setup.py; then
    exit 0
fi
pip=("$venv/bin/python" -m pip install --disable-pip-version-check ${PIP_EXTRA:-})
echo "fairseq-wean: installing into $venv (first time: about 5 minutes)" >&2
"${pip[@]}" -q --upgrade pip setuptools wheel
"${pip[@]}" -q "${TORCH_SPEC:-torch==2.13.0}"
"${pip[@]}" -q cython numpy
"${pip[@]}" -q --no-build-isolation -e ".[dev]"
cp setup.py "$stamp"
echo "fairseq-wean: environment ready in $venv" >&2
