#!/usr/bin/env bash
# The GPU checks: the device-parametrized model tests (tests/test_devices.py: incremental decoding,
# batched beam search, core_copy's hand-written backward passes, fp16/bf16 forward, fairseq-train
# and fairseq-generate on one GPU, and a 2-GPU NCCL run where two GPUs are visible) plus the
# distributed tests (tests/test_distributed.py, gloo ranks on the CPU). One GPU is enough for
# everything but the NCCL run, which is skipped there (NCCL cannot put two ranks on one GPU).
#
# Sets up ./.venv first if needed (scripts/setup_env.sh returns at once when it is ready), then
# prints the GPUs and the torch / CUDA / cuDNN versions, so that a log says what it ran on.
# Without a visible CUDA device it stops with an error (the cuda cases would only be skipped).
#   GPU_TESTS_ALLOW_CPU=1   run anyway: the cpu cases run, the cuda cases are skipped
#   CUDA_VISIBLE_DEVICES    which GPUs the tests see (the NCCL test needs two; the others use the first)
#   arguments               passed on to pytest, e.g. -x or -k core_copy
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
python=.venv/bin/python

"$python" - <<'EOF'
import torch

cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
print("torch {} | built for CUDA {} | cuDNN {}".format(torch.__version__, torch.version.cuda, cudnn))
if torch.cuda.is_available():
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        print("GPU {}: {} | {:.1f} GiB | compute capability {}.{}".format(
            i, p.name, p.total_memory / 2 ** 30, p.major, p.minor))
    if torch.cuda.device_count() < 2:
        print("one GPU visible: the two-rank NCCL test is skipped (it needs 2 GPUs); every other "
              "case runs on GPU 0")
else:
    print("no CUDA device visible to torch")
EOF

if ! "$python" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    if [ "${GPU_TESTS_ALLOW_CPU:-0}" != 1 ]; then
        echo "fairseq-wean: error: no CUDA device visible to torch (a CPU-only torch build, no GPU, or" \
             "CUDA_VISIBLE_DEVICES hides them): run on a GPU machine whose .venv has a CUDA build of" \
             "torch (docs/testing.md, GPU), or set GPU_TESTS_ALLOW_CPU=1 to run only the CPU cases" >&2
        exit 1
    fi
    echo "GPU_TESTS_ALLOW_CPU=1: running the CPU cases only" >&2
fi

exec "$python" -m pytest -q -rs -n 0 tests/test_devices.py tests/test_distributed.py "$@"
