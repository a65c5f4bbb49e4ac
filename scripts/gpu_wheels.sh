#!/usr/bin/env bash
# Fills .whl/ (git-ignored) with the wheels that a GPU machine without network needs for the plugin,
# for scripts/gpu_check.sh, which installs them there in its first seconds. Run it on this CPU machine
# (it needs PyPI) before a GPU session; the device tool's run then carries ".whl" with the tree.
#
# The GPU image (this workplace's 'cuda': Python 3.12.3, torch 2.11.0+cu130, numpy 2.x, sacrebleu,
# scikit-learn, cython, regex, tqdm, pyyaml, matplotlib, sentencepiece, pytest, pytest-xdist, ...)
# lacks fairseq and these needs of it and of the plugin (setup.py), pinned to the versions the
# suite is run with in .venv:
#   fairseq-fixed 0.12.3.1 (cp312 from PyPI; built here with pyenv's Python 3.12 if PyPI has none),
#   hydra-core, omegaconf, antlr4-python3-runtime, bitarray, cffi, pycparser (fairseq's),
#   sacremoses, rouge-score, nltk, defusedxml, textstat, pyphen, eflomal, subword-nmt, mock,
#   tensorboardX (the plugin's and theirs).
# antlr4-python3-runtime and rouge-score have no wheel on PyPI: pure-Python wheels are built. eflomal
# has no cp312 wheel: it is built here with pyenv's Python 3.12, its aligner binary for x86-64-v2
# (its Makefile says -march=native, which would tie it to this machine's CPU).
#
# Also writes .whl/SOURCE.json: the commit, how many tracked files differ from it, and the tree's
# fingerprint (the GPU's copy of the tree has no .git; scripts/gpu_check.sh names the commit from
# it and says whether the tree it runs is the one stamped). Then it checks that what travels
# (tracked and untracked-not-ignored files plus .whl) stays under the device tool's 64 MiB.
#
# Re-running is cheap: wheels already in .whl/ are kept, only the stamp is rewritten.
#   --python-version 3.11   wheels for another Python (3.12 for the GPU image; 3.11 to try the
#                           installation in a scratch virtual environment here)
#   --dest DIR              another folder (default .whl)
set -euo pipefail
cd "$(dirname "$0")/.."
pyver=3.12
dest=.whl
while [ $# -gt 0 ]; do
    case "$1" in
        --python-version) pyver="${2:?--python-version needs a value, e.g. 3.12}"; shift 2 ;;
        --dest) dest="${2:?--dest needs a folder}"; shift 2 ;;
        *) echo "gpu_wheels.sh: error: unknown option $1 (known: --python-version X.Y, --dest DIR)" >&2; exit 2 ;;
    esac
done
case "$pyver" in 3.1[0-9]) ;; *) echo "gpu_wheels.sh: error: --python-version must be 3.1x, got $pyver" >&2; exit 2 ;; esac
tag="cp${pyver/./}"
python=.venv/bin/python
[ -x "$python" ] || python=python3
# a Python of that version to build the compiled wheels PyPI lacks (eflomal; fairseq-fixed if needed)
builder=""
for candidate in "python$pyver" "$HOME/.pyenv/versions/$pyver"*/bin/python; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$pyver'.split('.'))))" 2>/dev/null; then
        builder="$candidate"; break
    fi
done
mkdir -p "$dest"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

have() { ls "$dest"/"$1"-*.whl >/dev/null 2>&1; }
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64)
download() {  # NAME (as the wheel file spells it) SPEC
    have "$1" && return 0
    "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version "$pyver" \
        --implementation cp "${platforms[@]}" -d "$dest" "$2" 2>&1 | grep -v "^WARNING: Location" || true
    have "$1"
}
build() {  # NAME SPEC-OR-FOLDER [PYTHON]: a wheel built from the source distribution
    have "$1" && return 0
    "${3:-$python}" -m pip wheel -q --disable-pip-version-check --no-deps -w "$dest" "$2" 2>&1 \
        | grep -v "^WARNING: Location" || true
    have "$1" || { echo "gpu_wheels.sh: error: could not build a wheel of $2" >&2; exit 1; }
}
need_builder() {
    [ -n "$builder" ] && return 0
    echo "gpu_wheels.sh: error: $1 needs a $tag wheel and PyPI has none: a Python $pyver is needed to build it" \
         "(pyenv install $pyver, or put python$pyver on PATH)" >&2
    exit 1
}

# fairseq-fixed: PyPI's cp312 manylinux wheel (its extensions are built against numpy 2)
if ! download fairseq_fixed fairseq-fixed==0.12.3.1; then
    need_builder fairseq-fixed
    "$builder" -m venv "$work/venv"
    "$work/venv/bin/python" -m pip install -q --disable-pip-version-check setuptools wheel cython numpy torch
    "$work/venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$dest" fairseq-fixed==0.12.3.1
    have fairseq_fixed || { echo "gpu_wheels.sh: error: could not build fairseq-fixed 0.12.3.1 for $tag" >&2; exit 1; }
fi
for spec in hydra-core==1.3.2 omegaconf==2.3.0 bitarray==3.12.3 cffi==2.1.1 pycparser==3.12 sacremoses==0.2.0 \
            nltk==3.10.4 defusedxml==0.7.1 textstat==0.7.13 pyphen==0.18.1 subword-nmt==0.3.8 mock==5.2.0 \
            tensorboardX==2.6.5; do
    name="${spec%%==*}"; name="${name//-/_}"
    [ "$name" = tensorboardX ] && name=tensorboardx
    download "$name" "$spec" || { echo "gpu_wheels.sh: error: no $tag wheel of $spec on PyPI" >&2; exit 1; }
done
build antlr4_python3_runtime antlr4-python3-runtime==4.9.3  # pure Python, no wheel on PyPI
build rouge_score rouge-score==0.1.2
if ! have eflomal; then
    need_builder eflomal
    "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary eflomal -d "$work" eflomal==2.0.0 \
        2>&1 | grep -v "^WARNING: Location" || true
    tar -xzf "$work"/eflomal-2.0.0.tar.gz -C "$work"
    sed -i 's/-march=native/-march=x86-64-v2/' "$work/eflomal-2.0.0/src/Makefile"
    build eflomal "$work/eflomal-2.0.0" "$builder"
fi

# one version of each: two would stop the whole installation there
dups=$(ls "$dest"/*.whl | xargs -n1 basename | cut -d- -f1 | tr 'A-Z' 'a-z' | sort | uniq -d)
[ -z "$dups" ] || { echo "gpu_wheels.sh: error: several versions in $dest of: $dups (remove the old ones)" >&2; exit 1; }
wrong=$(ls "$dest"/*.whl | xargs -n1 basename | grep -v -e '-py3-none-any' -e '-py2.py3-none-any' -e "-$tag-$tag-" || true)
[ -z "$wrong" ] || { echo "gpu_wheels.sh: error: wheels for another Python in $dest: $wrong" >&2; exit 1; }

"$python" - "$dest" <<'EOF'
import datetime, json, os, subprocess, sys
sys.path.insert(0, os.getcwd())
from bench.gpu_check import tree_fingerprint, write_json
dest = sys.argv[1]
git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True).stdout.strip()
stamp = {"commit": git("rev-parse", "HEAD"), "modified_files": len(git("status", "--porcelain", "--untracked-files=no").splitlines()),
         "tree_fingerprint": tree_fingerprint(), "written": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
         "wheels": sorted(f for f in os.listdir(dest) if f.endswith(".whl"))}
write_json(os.path.join(dest, "SOURCE.json"), stamp)  # renamed over it: never through a planted link
print("gpu_wheels.sh: {} wheels in {}; commit {} ({} modified tracked files), tree {}".format(
    len(stamp["wheels"]), dest, stamp["commit"][:12], stamp["modified_files"], stamp["tree_fingerprint"]))
EOF
wheels_kib=$(du -sk "$dest" | cut -f1)
tree_kib=$(git ls-files -z -co --exclude-standard | du -ck --files0-from=- 2>/dev/null | tail -1 | cut -f1)
total_mib=$(( (wheels_kib + tree_kib) / 1024 ))
echo "gpu_wheels.sh: $dest $((wheels_kib / 1024)) MiB + the tree $((tree_kib / 1024)) MiB = $total_mib MiB of the device tool's 64 MiB"
if [ "$total_mib" -ge 60 ]; then
    echo "gpu_wheels.sh: error: $total_mib MiB would travel: over the device tool's limit of 64 MiB with a margin" >&2
    exit 1
fi
