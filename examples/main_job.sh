#!/usr/bin/env bash
# The main job: a small real run of WEAN on CPU, about 10 minutes on 2 cores.
#
#   bash examples/main_job.sh [DATA_DIR] [--tiny]
#
# 1. prepares the simplification data (TurkCorpus + ASSET + OneStopEnglish, word vocabulary),
# 2. trains wean_lstm briefly (2 layers, 256; Adam 2e-3, batches of 32; at most 3 epochs or 9 minutes
#    of training, about one epoch on one core; the checkpoint with the best validation loss is kept),
# 3. simplifies the TurkCorpus test set (359 sentences, beam 5),
# 4. prints SARI / BLEU / FKGL against the 8 references (next to copying the source), and a
#    few source -> output examples.
# DATA_DIR defaults to ../shared/data next to the repository. --tiny: a few hundred sentences and
# one epoch (what CI runs). Outputs go to work_dirs/main_job (MAIN_JOB_OUT overrides).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA_DIR="$REPO/../shared/data"
TINY=""
for arg in "$@"; do
  case "$arg" in
    --tiny) TINY="--tiny" ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d'; exit 0 ;;
    *) DATA_DIR="$arg" ;;
  esac
done
if [ ! -d "$DATA_DIR" ]; then
  echo "error: data directory $DATA_DIR not found (see README.md, 'Data')" >&2; exit 1
fi
DATA_DIR="$(cd "$DATA_DIR" && pwd)"
OUT="${MAIN_JOB_OUT:-$REPO/work_dirs/main_job${TINY:+-tiny}}"
EPOCHS="${EPOCHS:-3}"
# WEAN trained with Adam 1e-3 and batches of 64; for a 9-minute budget twice the rate and half the
# batch learn much faster (valid loss 4.0 instead of 6.8 after about one epoch, measured here).
LR="${LR:-0.002}"
BATCH="${BATCH:-32}"
MAX_HOURS="${MAX_HOURS:-0.15}"  # cap on training time (9 minutes), whatever the machine
[ -n "$TINY" ] && EPOCHS=1
# Use the console scripts of the Python that runs this (a virtualenv need not be activated).
# The environment scripts/setup_env.sh made, if present; else the python3 on PATH.
PY="${PYTHON:-$( [ -x "$REPO/.venv/bin/python" ] && echo "$REPO/.venv/bin/python" || command -v python3)}"
BIN="$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")"
export PATH="$BIN:$PATH" PYTHONUNBUFFERED=1
# One torch thread: on a 2-core machine shared with anything else, two threads per process made
# training several times slower (threads spin waiting for each other). OMP_NUM_THREADS=2 to change.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-${OMP_NUM_THREADS:-1}}"
cd "$REPO"

start=$(date +%s)
stamp() { echo "[$(date +%H:%M:%S)] +$(( $(date +%s) - start ))s $*"; }

stamp "1/4 preparing the simplification data from $DATA_DIR"
"$PY" -m preprocess.prepare_simplification --data-dir "$DATA_DIR" --out "$OUT/data" --variants word $TINY
DATA="$OUT/data/word"
TEXT="$OUT/data/text"

stamp "2/4 training wean_lstm (2 layers, 256; at most $EPOCHS epochs / $MAX_HOURS h); log $OUT/train.log"
rm -rf "$OUT/checkpoints"
fairseq-train "$DATA" --user-dir fairseq_wean --task translation -s complex -t simple \
  --arch wean_lstm --optimizer adam --lr "$LR" --clip-norm 5 --dropout 0.4 \
  --batch-size "$BATCH" --max-tokens 4000 --max-epoch "$EPOCHS" --stop-time-hours "$MAX_HOURS" \
  --save-dir "$OUT/checkpoints" --no-epoch-checkpoints --no-save-optimizer-state \
  --ignore-unused-valid-subsets --seed 1 --num-workers 0 \
  --log-format simple --log-interval 50 2>&1 | tee "$OUT/train.log" \
  | grep --line-buffered -E "train_inner|\| train \||valid on|done training" \
  | sed -u -E 's/^.*\| (train_inner|train|valid) \| /    /; s/, ppl=.*//; s/ \| ppl .*//'

stamp "3/4 simplifying the TurkCorpus test set (359 sentences, beam 5)"
fairseq-generate "$DATA" --user-dir fairseq_wean --path "$OUT/checkpoints/checkpoint_best.pt" \
  --gen-subset test --beam 5 --batch-size 64 --max-len-a 1.2 --max-len-b 10 \
  > "$OUT/generate-test.log" 2> "$OUT/generate-test.err" || { tail -20 "$OUT/generate-test.err" >&2; exit 1; }
# hypotheses in sentence order (fairseq-generate prints them in length-bucket order)
grep -P '^H-\d+\t' "$OUT/generate-test.log" | sed 's/^H-//' | sort -n -k1,1 | cut -f3 > "$OUT/test.hyp"
n_hyp=$(wc -l < "$OUT/test.hyp"); n_src=$(wc -l < "$TEXT/test.complex")
if [ "$n_hyp" != "$n_src" ]; then
  echo "error: $n_hyp hypotheses for $n_src test sentences" >&2; exit 1
fi

stamp "4/4 scoring against the 8 TurkCorpus references"
REFS=()
for k in 0 1 2 3 4 5 6 7; do REFS+=("$TEXT/test.ref.$k"); done
# "other" = copying the source unchanged: BLEU ~99 but SARI ~26, the baseline every simplification
# system must beat on SARI (p: paired bootstrap)
fairseq-wean-score --sys "$OUT/test.hyp" --orig "$TEXT/test.complex" --refs "${REFS[@]}" \
  --metrics sari,bleu,fkgl,stats --compare-to "$TEXT/test.complex" 2> "$OUT/score.err" \
  | sed 's/| other /| copy-the-source /; s/^other = .*; p:/p:/' | tee "$OUT/scores.txt" \
  || { cat "$OUT/score.err" >&2; exit 1; }
echo
echo "examples (source -> wean_lstm output; <unk> = word outside the threshold-2 vocabulary):"
paste "$TEXT/test.complex" "$OUT/test.hyp" | awk -F'\t' 'NR==1||NR==3||NR==18||NR==29||NR==51 {
  printf "  SRC: %s\n  OUT: %s\n\n", $1, $2 }'
stamp "done in $(( $(date +%s) - start )) s; outputs in $OUT"
