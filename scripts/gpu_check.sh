#!/usr/bin/env bash
# The GPU checks in one run of at most ~8 minutes, every result in one folder ($OUT or --out), stopping
# by itself at its time budget (--budget SECONDS, default 480, the installation included):
#   0. setup: what the GPU image lacks, installed from the wheels in .whl/ (bash scripts/gpu_wheels.sh
#      fills it on a CPU machine first), and the machine named (GPU, driver, torch, CUDA, CPU, commit)
#   1. tests: tests/test_cpu_bf16.py, tests/test_recurrent_precision.py, tests/test_devices.py
#   2. precision: the models trained in float32, --amp and --fp16 on the same batches, curves compared
#   3. distributed: 2 gloo ranks on one GPU against one process with --update-freq 2
#   4. bench: python -m bench.run --device cuda (8k and 50k words; fp32, --amp, --fp16)
#
#   OUT=/tmp/gc bash scripts/gpu_check.sh              # on a GPU machine
#   bash scripts/gpu_check.sh --dry-run                # the plan and the time budget
#   bash scripts/gpu_check.sh --device cpu --out DIR   # the CPU stand-in, tiny sizes (what CI runs)
#   bash scripts/gpu_check.sh --help                   # every option, the files, the exit statuses
#
# Exit status: 0 all passed; 1 set-up failed; 2 bad options; 3 a check failed; 4 the budget stopped a part.
# Which Python: $PYTHON, else this checkout's .venv/bin/python, else python3 (a GPU image's own).
# The program is bench/gpu_check.py; how to run it on a lent GPU: docs/testing.md, "GPU".
set -u
export GPU_CHECK_T0="${GPU_CHECK_T0:-$(date +%s.%N)}"  # the budget counts from here
repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${PYTHON:-}" ]; then
    python="$PYTHON"
elif [ -x "$repo/.venv/bin/python" ]; then
    python="$repo/.venv/bin/python"
else
    python=python3
fi
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -m bench.gpu_check "$@"
