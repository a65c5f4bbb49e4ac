#!/usr/bin/env bash
# A four-system translation report with the models' gates on the page (issue 38): fairseq `lstm`,
# `wean_lstm`, `core_copy` and `word_attn_gated`, small (1 layer, 128 units) and briefly trained on
# Multi30k De-En, decoded with --print-gates, compared by fairseq-wean-report (cross-lingual view,
# BLEU with --bleu-tokenize none) and photographed by headless Chromium.
#
#   bash examples/translation_report_demo.sh DATA OUT
#
# DATA: the data/ folder a translation comparison prepared (fairseq-wean-compare translation
# ... --out X writes X/data: word/ binarized with a joined dictionary, text/ the tokenized text).
# OUT: a new folder. EPOCHS (default 4) in the environment changes the training budget. Writes
# OUT/report.html and OUT/report.png (and report-table.png, the sentence table); the numbers are
# those of a few epochs, a demonstration of the page, not results.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -eq 2 ] || { echo "usage: bash examples/translation_report_demo.sh DATA OUT" >&2; exit 2; }
[ -d "$1" ] || { echo "fairseq-wean: error: DATA $1 is not a folder: give the data/ of a translation comparison" >&2; exit 1; }
# The absolute path of an existing folder ("./" first: a name like -h or - is a folder, and CDPATH is not searched).
absolute() { case "$1" in /*) (cd -- "$1" && pwd) ;; *) (cd -- "./$1" && pwd) ;; esac; }
DATA="$(absolute "$1")"; OUT="$2"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # the path the commands below get (the guard checks it)
[ -f "$DATA/word/dict.de.txt" ] || { echo "fairseq-wean: error: $DATA/word/dict.de.txt not found: give the data/ of a translation comparison" >&2; exit 1; }
PY="${PYTHON:-$( [ -x "$REPO/.venv/bin/python" ] && echo "$REPO/.venv/bin/python" || command -v python3)}"
# DATA and OUT reach fairseq as the data folder and --path (split on ':'; OmegaConf reads '${'): refused
# there. OUT must be new (nothing planted in it can be written through; examples/job_guard.py also refuses
# a dangling link there and a path through a missing folder followed by ..), and every file the
# script writes there is a new one (noclobber: the shell creates it, O_EXCL).
"$PY" "$REPO/examples/job_guard.py" --what DATA --used-as fairseq-path -- "$DATA"
"$PY" "$REPO/examples/job_guard.py" --new --used-as fairseq-path -- "$OUT"
mkdir -p -- "$OUT"; OUT="$(absolute "$OUT")"
set -o noclobber
export PATH="$(dirname "$PY"):$PATH" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
EPOCHS="${EPOCHS:-4}"
cd "$REPO"

OMP_NUM_THREADS=2 fairseq-wean-align-table --src "$DATA/text/train.de" --tgt "$DATA/text/train.en" \
  --dict "$DATA/word/dict.de.txt" --topk 10 --out "$OUT/align.table" > "$OUT/align.log" 2>&1
# Command lines are bash arrays: a space in DATA or OUT stays inside its argument.
SIZE=(--encoder-embed-dim 128 --decoder-embed-dim 128 --encoder-hidden-size 128 --decoder-hidden-size 128
      --encoder-layers 1 --decoder-layers 1)
COMMON=("$DATA/word" --user-dir fairseq_wean -s de -t en --cpu --optimizer adam --lr 0.002 --clip-norm 5 --dropout 0.2
        --max-tokens 4000 --max-epoch "$EPOCHS" --seed 1 --num-workers 0 --no-epoch-checkpoints --log-format simple
        --log-interval 100 --ignore-unused-valid-subsets)
system_args() {  # the options of system $1
  case "$1" in
    lstm) ARGS=(--arch lstm "${SIZE[@]}" --decoder-out-embed-dim 128) ;;
    wean_lstm) ARGS=(--arch wean_lstm "${SIZE[@]}") ;;
    core_copy) ARGS=(--arch core_copy "${SIZE[@]}" --decoder-out-embed-dim 128 --criterion core_mode_loss
                     --core-align-table "$OUT/align.table" --core-num-frequent 2000) ;;
    word_attn_gated) ARGS=(--arch word_attn_gated "${SIZE[@]}" --decoder-out-embed-dim 128) ;;
  esac
}
train() {
  local ARGS; system_args "$1"
  fairseq-train "${COMMON[@]}" "${ARGS[@]}" --save-dir "$OUT/ck-$1" > "$OUT/train.$1.log" 2>&1 \
    || { tail -5 "$OUT/train.$1.log" >&2; return 1; }
}
decode() {
  fairseq-generate "$DATA/word" --user-dir fairseq_wean -s de -t en --cpu --path "$OUT/ck-$1/checkpoint_best.pt" \
    --gen-subset test --beam 5 --max-len-a 1.2 --max-len-b 10 --batch-size 64 --print-gates > "$OUT/gen.$1.log" 2> "$OUT/gen.$1.err"
}
echo "training 4 systems, $EPOCHS epochs each, two at a time"
train lstm & a=$!; train wean_lstm & b=$!; wait $a; wait $b   # set -e: a failed training stops here
train core_copy & a=$!; train word_attn_gated & b=$!; wait $a; wait $b
for m in lstm wean_lstm core_copy word_attn_gated; do decode "$m"; done
fairseq-wean-report --sys "$OUT"/gen.{lstm,wean_lstm,core_copy,word_attn_gated}.log \
  --names lstm wean_lstm core_copy word_attn_gated --orig "$DATA/text/test.de" --refs "$DATA/text/test.en" \
  --metrics bleu,chrf,stats --bleu-tokenize none --out "$OUT/report.html"
if command -v chromium > /dev/null; then
  # the page's URL with OUT percent-encoded: a '#', '?' or '%' in a folder name is not read as a URL's own
  URL="$("$PY" -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).as_uri())' "$OUT/report.html")"
  shot() { chromium --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --window-size="$2" \
             --screenshot="$OUT/$1" "$URL$3" > /dev/null 2>&1; }
  shot report.png 1400,1600 ""
  shot report-table.png 1400,3200 "#sort=s2-bleu&order=desc"
  echo "screenshots: $OUT/report.png $OUT/report-table.png"
fi
