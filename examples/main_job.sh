#!/usr/bin/env bash
# The main job: a small real run of CoRe (core_copy) on CPU, about 10 minutes on 2 cores.
#
#   bash examples/main_job.sh [--tiny] [--force] [--] [DATA_DIR]
#
# Why core_copy on the word-pg vocabulary: in the 2-epoch simplification comparison
# (docs/results/simplification.md, "Short budget (2 epochs)", TurkCorpus test, 2026-11-26) it is the
# short-budget system that is good on both SARI and faithfulness: SARI 33.62 (legacy 34.26) against
# 26.34 for copying the source, 0.00% <unk> (rare words are source-position markers <unk-N>, put
# back after decoding) and 0.25% invented words (output words in neither the source nor any
# reference). wean_lstm on sentencepiece has the best SARI (35.81) but 11% of its output words are
# invented, and wean_lstm on words writes 8.15% <unk>.
#
# 1. prepares the simplification data (TurkCorpus + ASSET + OneStopEnglish; word-pg vocabulary:
#    words seen twice, rarer ones as <unk-N>) and CoRe's alignment table A (eflomal, top 10),
# 2. trains core_copy (2 layers, 256; --criterion core_mode_loss; Adam 2e-3, batches of at most
#    2000 tokens; 300 updates, about half an epoch: a budget in updates, so that a loaded machine
#    gives the same model as an idle one, only later). Every 50 updates it validates: decodes the 200 validation
#    sources (beam 5, --task translation_with_metrics), scores SARI against their 8 references
#    and keeps the checkpoint with the best SARI so far (several candidates, not one),
# 3. simplifies the TurkCorpus test set (359 sentences, beam 5, copy gates printed) and puts the
#    source words back for the markers,
# 4. prints SARI / BLEU / FKGL and stats (incl. invented words) against the 8 references next to
#    copying the source, writes the HTML inspection report and prints a few source -> output
#    examples (the first test sentences that had a rare word copied through a marker).
# DATA_DIR defaults to ../shared/data next to the repository (a folder whose name begins with a dash:
# after --). --tiny: a few hundred sentences and
# one epoch (what CI runs). Outputs go to work_dirs/main_job (MAIN_JOB_OUT overrides); a folder that
# holds a trained run (checkpoints/checkpoint_best.pt) is replaced only with --force, and one main
# job at a time writes a folder (a lock, taken before any work).
# Environment overrides: EPOCHS, LR, MAX_TOKENS, MAX_UPDATES, VALID_EVERY (updates), ALIGN_THREADS.
# It exits non-zero, saying why, when the kept checkpoint simplifies worse (SARI) than copying the
# source: such a run is not a result (with --tiny, a smoke run, it only warns; REQUIRE_ABOVE_COPY=1
# or 0 decides).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA_DIR="$REPO/../shared/data"
TINY=""
TINY_ARGS=()
FORCE=""
OPTIONS_DONE=""
for arg in "$@"; do
  if [ -n "$OPTIONS_DONE" ]; then DATA_DIR="$arg"; continue; fi
  case "$arg" in
    --) OPTIONS_DONE=1 ;;
    --tiny) TINY="--tiny"; TINY_ARGS=(--tiny) ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "fairseq-wean: error: unknown option $arg (known: --tiny, --force); a DATA_DIR whose name begins with a dash goes after --" >&2; exit 2 ;;
    *) DATA_DIR="$arg" ;;
  esac
done
if [ ! -d "$DATA_DIR" ]; then
  echo "fairseq-wean: error: data directory $DATA_DIR not found: give the data directory (see docs/data.md, 'Data and recipes')" >&2
  exit 1
fi
# The absolute path of an existing folder ("./" first: a name like -h or - is a folder, and CDPATH is not searched).
absolute() { case "$1" in /*) (cd -- "$1" && pwd) ;; *) (cd -- "./$1" && pwd) ;; esac; }
DATA_DIR="$(absolute "$DATA_DIR")"
OUT="${MAIN_JOB_OUT:-$REPO/work_dirs/main_job${TINY:+-tiny}}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # the path the commands below get (the guard checks it)
EPOCHS="${EPOCHS:-2}"
# Adam 2e-3 (CoRe/WEAN used 1e-3): for a short budget it learns much faster (examples/compare.py,
# RNN_OPTIM). Batches of up to 2000 tokens (about 75 sentences) go through about 1.7 times as many
# tokens a second on 2 cores as batches of 32 sentences did.
LR="${LR:-0.002}"
MAX_TOKENS="${MAX_TOKENS:-2000}"
VALID_EVERY="${VALID_EVERY:-50}"  # updates between validations (each about 10 s on 2 cores)
MAX_UPDATES="${MAX_UPDATES:-300}"  # the training budget, in updates (never wall-clock time)
[ -n "$TINY" ] && EPOCHS=1
REQUIRE_ABOVE_COPY="${REQUIRE_ABOVE_COPY:-$( [ -n "$TINY" ] && echo 0 || echo 1 )}"

# Use the console scripts of the Python that runs this (a virtualenv need not be activated).
# The environment scripts/setup_env.sh made, if present; else the python3 on PATH.
PY="${PYTHON:-$( [ -x "$REPO/.venv/bin/python" ] && echo "$REPO/.venv/bin/python" || command -v python3)}"
# The files this script writes itself in OUT (its lock and its logs; the tools write the rest through
# fairseq_wean.textio). Before any work, examples/job_guard.py refuses a link, pipe, folder or hard link
# planted at any of them (the shell's redirections would write through it) and a linked folder.
OWN_FILES=(.main_job.lock align_table.log train.log generate-test.marked.log generate-test.err score.err scores.txt
           report.err)
# OUT's paths reach fairseq as the data folder and --path (split on ':'), as options (OmegaConf: '${') and in
# comma lists (--eval-refs, fairseq-preprocess's --validpref): the guard refuses what would split them.
"$PY" "$REPO/examples/job_guard.py" --what MAIN_JOB_OUT --used-as fairseq-path comma-list \
  --files "${OWN_FILES[@]}" --folders data data/valid-refs checkpoints -- "$OUT"
# Before any work: one main job per output folder, and a trained run is not replaced unasked (a
# rerun deleted the previous run's checkpoints first thing). The lock is opened for appending (never
# truncated) after the guard refused anything but a regular file of OUT's own there.
mkdir -p -- "$OUT"
OUT="$(absolute "$OUT")"  # absolute: the script works from the repository below
if command -v flock > /dev/null; then
  exec 9>> "$OUT/.main_job.lock"
  if ! flock -n 9; then
    echo "fairseq-wean: error: another main job is writing $OUT: wait for it, or set MAIN_JOB_OUT to another folder" >&2
    exit 1
  fi
fi
if [ -f "$OUT/checkpoints/checkpoint_best.pt" ] && [ -z "$FORCE" ]; then
  echo "fairseq-wean: error: $OUT holds a trained run (checkpoints/checkpoint_best.pt): add --force to replace it, or set MAIN_JOB_OUT to another folder" >&2
  exit 1
fi
# Every log is a new file: the previous run's are removed (checked above: regular files of OUT's own),
# and with noclobber each redirection creates its file (O_EXCL): a link planted meanwhile is refused.
for name in "${OWN_FILES[@]}"; do [ "$name" = .main_job.lock ] || rm -f -- "$OUT/$name"; done
set -o noclobber
BIN="$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")"
export PATH="$BIN:$PATH" PYTHONUNBUFFERED=1
# One torch thread: on a 2-core machine shared with anything else, two threads per process made
# training several times slower (threads spin waiting for each other). OMP_NUM_THREADS=2 to change.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-${OMP_NUM_THREADS:-1}}"
cd "$REPO"

start=$(date +%s)
stamp() { echo "[$(date +%H:%M:%S)] +$(( $(date +%s) - start ))s $*"; }

stamp "1/4 preparing the simplification data from $DATA_DIR (word-pg vocabulary, alignment table)"
"$PY" -m preprocess.prepare_simplification --data-dir "$DATA_DIR" --out "$OUT/data" --variants word-pg ${TINY_ARGS[@]+"${TINY_ARGS[@]}"}
DATA="$OUT/data/word-pg"      # binarized, markers <unk-N>
PGTEXT="$OUT/data/word-pg-text"  # the same text with markers
TEXT="$OUT/data/text"         # plain words (sources, 8 references)
# CoRe's alignment table A (as the comparison runner builds it): from the training text with the
# binarized dictionary, so every word outside it is aligned as <unk> and A names only dictionary
# words; markers are dictionary words.
# eflomal runs its forward and reverse samplers on OpenMP threads: both cores for this step.
OMP_NUM_THREADS="${ALIGN_THREADS:-2}" fairseq-wean-align-table --src "$PGTEXT/train.complex" --tgt "$PGTEXT/train.simple" \
  --dict "$DATA/dict.complex.txt" --topk 10 \
  --out "$DATA/core_align_table.tsv" > "$OUT/align_table.log" 2>&1 || { tail -5 "$OUT/align_table.log" >&2; exit 1; }
# Validation SARI is computed on the model's own tokens, so the 8 validation references are
# written with the markers of their source (a reference word that is a rare source word becomes
# that word's <unk-N>, as in the training targets).
VREFS=()
"$PY" - "$PGTEXT" "$TEXT" "$OUT/data/valid-refs" "$OUT" <<'PYEOF'
import os, sys
from fairseq_wean.data.markers import encode_references
from fairseq_wean.textio import atomic_output, makedirs_in_folder, read_lines
pgtext, text, out, job_out = sys.argv[1:]
words = [line.rsplit(" ", 1)[0] for line in read_lines(os.path.join(pgtext, "dict.txt"))]
sources = read_lines(os.path.join(text, "validsrc.complex"))
refs = [read_lines(os.path.join(text, "valid.ref.{}".format(k))) for k in range(8)]
# the sources with their own markers are the prepared text: else the data came from another run
if encode_references(words, sources, [sources])[0] != read_lines(os.path.join(pgtext, "validsrc.complex")):
    sys.exit("fairseq-wean: error: validation sources re-encoded differently from the prepared word-pg text: "
             "prepare the data again")
makedirs_in_folder(out, job_out, "MAIN_JOB_OUT folder")  # the job's own files: a planted link replaced, never
for k, stream in enumerate(encode_references(words, sources, refs)):  # written through
    with atomic_output(os.path.join(out, "valid.ref.{}".format(k)), (), "MAIN_JOB_OUT file", folder=job_out) as f:
        f.writelines(line + "\n" for line in stream)
PYEOF
for k in 0 1 2 3 4 5 6 7; do VREFS+=("$OUT/data/valid-refs/valid.ref.$k"); done
EVAL_REFS="$(IFS=,; echo "${VREFS[*]}")"

stamp "2/4 training core_copy (2 layers, 256; at most $EPOCHS epochs / $MAX_UPDATES updates; validation SARI every $VALID_EVERY updates picks the checkpoint); log $OUT/train.log"
rm -rf -- "$OUT/checkpoints"
exec 8> "$OUT/train.log"  # a new file (noclobber); tee appends to it through this descriptor
fairseq-train "$DATA" --user-dir fairseq_wean --task translation_with_metrics -s complex -t simple \
  --arch core_copy --embed-dim 256 --encoder-hidden-size 256 --encoder-layers 2 \
  --decoder-hidden-size 256 --decoder-layers 2 --criterion core_mode_loss \
  --core-align-table "$DATA/core_align_table.tsv" \
  --optimizer adam --lr "$LR" --clip-norm 5 --dropout 0.4 \
  --max-tokens "$MAX_TOKENS" --max-epoch "$EPOCHS" --max-update "$MAX_UPDATES" \
  --validate-interval-updates "$VALID_EVERY" --save-interval-updates "$VALID_EVERY" --keep-interval-updates 1 \
  --valid-subset valid1 --eval-refs "$EVAL_REFS" --eval-orig "$PGTEXT/validsrc.complex" \
  --eval-sari --eval-bleu-args '{"beam": 5, "max_len_a": 1.2, "max_len_b": 10}' \
  --best-checkpoint-metric sari --maximize-best-checkpoint-metric \
  --save-dir "$OUT/checkpoints" --no-epoch-checkpoints --no-save-optimizer-state \
  --ignore-unused-valid-subsets --seed 1 --num-workers 0 \
  --log-format simple --log-interval 50 2>&1 | tee -a /dev/fd/8 \
  | grep --line-buffered -E "train_inner|\| train \||valid on|done training|[Ee]rror" \
  | sed -u -E 's/^.*\| (train_inner|train|valid1?) \| /    /; s/, ppl=.*//; s/ \| ppl [0-9.]+//; s/ \| (wps|ups|wpb|bsz|num_updates|lr|gnorm|clip|train_wall|gb_free|wall).*//'
exec 8>&-
if [ ! -f "$OUT/checkpoints/checkpoint_best.pt" ]; then
  echo "fairseq-wean: error: training wrote no checkpoint: see $OUT/train.log" >&2; exit 1
fi
rm -f "$OUT"/checkpoints/checkpoint_[0-9]*_[0-9]*.pt  # the mid-epoch checkpoint (best and last stay)
# The candidates: validation SARI at each validation; checkpoint_best.pt is the best of them
# (the later one on a tie, as fairseq keeps it).
grep "valid on 'valid1'" "$OUT/train.log" | sed -E 's/.*\| sari ([0-9.]+).*\| num_updates ([0-9]+).*/\2 \1/' | awk '
  { n++; s = s sprintf("%s%.2f (update %d)", n > 1 ? ", " : "", $2, $1); if (n == 1 || $2 >= best) { best = $2; at = $1 } }
  END { printf "    validation SARI: %s\n    checkpoint_best.pt: update %d, SARI %.2f (best of %d)\n", s, at, best, n }'


stamp "3/4 simplifying the TurkCorpus test set (beam 5, copy gates printed)"
fairseq-generate "$DATA" --user-dir fairseq_wean --path "$OUT/checkpoints/checkpoint_best.pt" \
  --gen-subset test --beam 5 --batch-size 64 --max-len-a 1.2 --max-len-b 10 --print-gates \
  > "$OUT/generate-test.marked.log" 2> "$OUT/generate-test.err" || { tail -20 "$OUT/generate-test.err" >&2; exit 1; }
# Put the source word back for every <unk-N> (in H-, S- and T- lines: one token for one token, so
# the P- and G- values still line up), and write the hypotheses in sentence order (fairseq-generate
# prints them in length-bucket order). Every test sentence must have its hypothesis.
"$PY" - "$OUT/generate-test.marked.log" "$TEXT/test.complex" "$TEXT/test.simple" \
  "$OUT/generate-test.log" "$OUT/test.hyp" "$OUT" <<'PYEOF'
import sys
from fairseq_wean.data.markers import decode_hypothesis
from fairseq_wean.textio import atomic_output, read_lines
log_in, src_path, tgt_path, log_out, hyp_out, job_out = sys.argv[1:]
sources = read_lines(src_path)
targets = read_lines(tgt_path)
hyps = {}
groups, rest = {}, []  # sentence id -> its lines; lines of no sentence
for line in read_lines(log_in):
    fields = line.split("\t")
    kind, _, sid = fields[0].partition("-")
    if len(kind) != 1 or not sid.isdigit():
        rest.append(line)
        continue
    i = int(sid)
    if kind == "S":
        fields[-1] = sources[i]
    elif kind == "T":
        fields[-1] = targets[i]
    elif kind in ("H", "D"):
        fields[-1] = " ".join(decode_hypothesis(sources[i].split(), fields[-1].split(), past_end="unk"))
        if kind == "H":
            hyps.setdefault(i, fields[-1])
    groups.setdefault(i, []).append("\t".join(fields))
# One block per sentence, in sentence order: --print-gates writes a batch's G- lines before its
# S- lines, which fairseq-wean-report would read as a second run of the same ids.
with atomic_output(log_out, (), "MAIN_JOB_OUT file", folder=job_out) as out:  # a planted link replaced
    for i in sorted(groups):
        block = groups[i]
        out.writelines(l + "\n" for l in [l for l in block if not l.startswith("G-")] +
                       [l for l in block if l.startswith("G-")])
    out.writelines(l + "\n" for l in rest)
missing = [i for i in range(len(sources)) if i not in hyps]
if missing:
    sys.exit("fairseq-wean: error: {} hypotheses for {} test sentences (first missing: {}): see {}".format(
        len(hyps), len(sources), missing[0], log_in))
with atomic_output(hyp_out, (), "MAIN_JOB_OUT file", folder=job_out) as f:
    f.writelines(hyps[i] + "\n" for i in range(len(sources)))
PYEOF
echo "    $(wc -l < "$OUT/test.hyp") of $(wc -l < "$TEXT/test.complex") test sentences simplified"

stamp "4/4 scoring against the 8 TurkCorpus references"
REFS=()
for k in 0 1 2 3 4 5 6 7; do REFS+=("$TEXT/test.ref.$k"); done
# copy-the-source = copying the source unchanged: BLEU ~99 but SARI ~26, the baseline every simplification
# system must beat on SARI (p: paired bootstrap). stats: invented_pct = % output words in neither
# the source nor any reference, invented_sent_pct = % sentences with one.
fairseq-wean-score --sys "$OUT/test.hyp" --orig "$TEXT/test.complex" --refs "${REFS[@]}" \
  --metrics sari,bleu,fkgl,stats --compare-to "$TEXT/test.complex" --name core_copy --compare-name copy-the-source \
  2> "$OUT/score.err" > "$OUT/scores.txt" \
  || { cat "$OUT/score.err" >&2; exit 1; }
cat "$OUT/scores.txt"
# A kept checkpoint below copying the source is no simplifier: say so and fail (after the report,
# which shows why).
BELOW_COPY=$(awk '/^SARI / { sys = $2; for (i = 1; i <= NF; i++) if ($i == "copy-the-source") { copy = $(i + 1); gsub(/,/, "", copy) } }
                  END { if (sys != "" && copy != "" && sys + 0 < copy + 0) printf "%s %s", sys, copy }' "$OUT/scores.txt")
fairseq-wean-report --sys "$OUT/generate-test.log" "$TEXT/test.complex" --names core_copy copy-the-source \
  --orig "$TEXT/test.complex" --refs "${REFS[@]}" --metrics sari,bleu,fkgl,stats \
  --out "$OUT/report.html" 2> "$OUT/report.err" || { cat "$OUT/report.err" >&2; exit 1; }
echo "inspection report (every sentence, copy gates on hover): $OUT/report.html"
echo
echo "examples (source -> core_copy output; [w] = rare word copied through its marker <unk-N>):"
"$PY" - "$TEXT/test.complex" "$OUT/test.hyp" "$OUT/generate-test.marked.log" <<'PYEOF'
import sys
from fairseq_wean.data.markers import is_position_marker
from fairseq_wean.textio import read_lines
sources, hyps = read_lines(sys.argv[1]), read_lines(sys.argv[2])
marked = {}
for line in read_lines(sys.argv[3]):
    if line.startswith("H-"):
        sid, _, text = line[2:].split("\t", 2)
        marked.setdefault(int(sid), text.split())
# The first 3 test sentences, then the first 2 whose output copied a rare word via a marker.
with_marker = [i for i in sorted(marked) if any(is_position_marker(t) for t in marked[i])]
picked = [0, 1, 2] + [i for i in with_marker if i > 2][:2]
for i in picked[:len(sources)]:
    out = " ".join("[{}]".format(w) if is_position_marker(m) else w
                   for w, m in zip(hyps[i].split(), marked[i]))
    print("  #{} SRC: {}\n      OUT: {}\n".format(i, sources[i], out))
PYEOF
stamp "done in $(( $(date +%s) - start )) s; outputs in $OUT"
if [ -n "$BELOW_COPY" ]; then
  set -- $BELOW_COPY
  why="the kept checkpoint scores SARI $1, below copying the source ($2): training was too short for this model to learn the task (see the validation SARI above and $OUT/train.log); raise MAX_UPDATES"
  if [ "$REQUIRE_ABOVE_COPY" = 1 ]; then echo "fairseq-wean: error: $why" >&2; exit 1; fi
  echo "fairseq-wean: warning (--tiny smoke run): $why" >&2
fi
