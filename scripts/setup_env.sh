#!/usr/bin/env bash
# Creates ./.venv with everything fairseq-wean needs, on a machine where only Python 3.10 or 3.11 exists.
#
# torch is installed first, pinned to 2.13.0 (the tested version), because fairseq's build imports
# torch. Which build the pin gets depends on pip's configuration: where pip has a local wheel
# directory with torch-2.13.0+cpu (the project's machines) that CPU build; from PyPI on Linux
# x86-64 the CUDA build with NVIDIA's libraries (several GB; PIP_EXTRA below with PyTorch's CPU
# index installs the CPU build instead). fairseq (fairseq-fixed on Python >= 3.11,
# see setup.py) is then built against that torch with --no-build-isolation: with build
# isolation pip would build it against a freshly downloaded torch.
# Re-running is cheap: nothing is reinstalled while setup.py is unchanged.
#   PYTHON=python3.11   which interpreter creates the venv (default python3; 3.10 or 3.11, checked first)
#   TORCH_SPEC=...      what to install for torch (default torch==2.13.0)
#   PIP_EXTRA=...       extra pip options, e.g. "--extra-index-url https://download.pytorch.org/whl/cpu"
# --with-browser (the test set-up command): also install Debian's chromium when no headless
# Chromium is on PATH, so that the report's browser tests run on a fresh machine instead of being
# skipped. Best effort: without root and apt-get, or when apt-get fails, it says so in one line and
# goes on (those tests then skip, saying why).
set -euo pipefail
cd "$(dirname "$0")/.."
with_browser=0
for arg in "$@"; do
    case "$arg" in
        --with-browser) with_browser=1 ;;
        *) echo "setup_env.sh: unknown option $arg (known: --with-browser)" >&2; exit 2 ;;
    esac
done
venv=.venv
stamp=$venv/.fairseq-wean-setup
python="${PYTHON:-python3}"
# The Pythons setup.py allows (python_requires), checked before any work: else pip fails after
# installing torch, with "requires a different Python".
if [ ! -x "$venv/bin/python" ]; then
    if ! version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); then
        echo "fairseq-wean: error: no Python '$python' on PATH: set PYTHON to a Python 3.10 or 3.11 (e.g. PYTHON=python3.11)" >&2
        exit 1
    fi
    case "$version" in
        3.10|3.11) ;;
        *) echo "fairseq-wean: error: '$python' is Python $version; fairseq-wean needs 3.10 or 3.11 (fairseq 0.12 does not run on newer ones): PYTHON=python3.11 bash scripts/setup_env.sh" >&2
           exit 1 ;;
    esac
fi
# the names tests/test_report.py looks for
browsers=(chromium chromium-browser google-chrome chrome-headless-shell)
have_browser() {
    local b
    for b in "${browsers[@]}"; do command -v "$b" >/dev/null 2>&1 && return 0; done
    return 1
}
if [ "$with_browser" = 1 ] && ! have_browser; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "fairseq-wean: installing chromium with apt-get (the report's browser tests)" >&2
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1; then
            echo "fairseq-wean: warning: apt-get could not install chromium; the browser tests will skip" >&2
        fi
    else
        echo "fairseq-wean: warning: no headless Chromium on PATH and no root apt-get to install it; the browser tests will skip" >&2
    fi
fi
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
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
