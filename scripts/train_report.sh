#!/usr/bin/env bash
# Training comparison (reports/training/): SmolLM2-135M-Instruct trained with
# LoRA on DL21 + DL22 BM25 top-20 windows (width 10) with all-MiniLM-L6-v2
# teacher labels (isotonic-calibrated on DL21 judgments), one run per
# objective, then audited on DL19 at the training width next to the
# off-the-shelf model. Every step is resumable: rerun after an interruption.
#
#   scripts/train_report.sh                      # the scaled CPU pilot
#   STEPS=300 LR=2e-4 MAX_CHARS=600 QUERIES=43 PERMS=10 SPLIT_DL21_ONLY=1 \
#     OBJECTIVES="single-order perm-aug oc-sft" scripts/train_report.sh   # the full protocol
# SPLIT_DL21_ONLY=1 holds queries out of DL21 only (DL22 has no qrels to
# select on, so all of it trains); the pilot split both files.
# SELECT=1 picks each run's checkpoint on the held-out DL21 queries
# (`ocrank select`, nDCG@10 over SELECT_PERMS orders) and audits that one;
# the pilot audits the final adapters.
# WINDOWS (default 1) is --windows-per-step: windows averaged per update.
# LOSS (default squared) is --supervised-loss: squared (SPEC.md) or
# cross-entropy (two-point targets; reports/training/saturation).
# PARALLEL=1 runs each objective's chain (train, select, audit) and the
# off-the-shelf audit as separate processes at once (for a GPU).
# MODEL_ARGS is passed to every command that loads the model (e.g.
# "--device cuda"); LABELS names a labels file made elsewhere (the GPU
# machine has no MiniLM).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
OUT=${OUT:-reports/training}
STEPS=${STEPS:-24}
LR=${LR:-1e-3}
MAX_CHARS=${MAX_CHARS:-300}
QUERIES=${QUERIES:-6}
PERMS=${PERMS:-3}
OBJECTIVES=${OBJECTIVES:-single-order oc-sft}
WINDOWS=${WINDOWS:-1}
LOSS=${LOSS:-squared}
WARMUP=$(( STEPS / 5 ))
EVERY=$(( STEPS / 4 ))
SCORER=(--width 10 --max-chars "$MAX_CHARS" --template compact)
RUNS=${RUNS:-runs/train}
# Run directories: one per objective and setting (the window count only
# when it is not 1, the loss when it is not squared, so that earlier runs
# keep their names).
TAG="s$STEPS-c$MAX_CHARS-lr$LR"
[ "$WINDOWS" = 1 ] || TAG="$TAG-w$WINDOWS"
[ "$LOSS" = squared ] || TAG="$TAG-$LOSS"
read -r -a MODEL <<< "${MODEL_ARGS:-}"
LABELS=${LABELS:-$RUNS/labels-minilm.jsonl}
SPLIT=()
[ "${SPLIT_DL21_ONLY:-0}" = 1 ] && SPLIT=(--heldout-pools "$D/dl21/bm25-top100.json")

mkdir -p "$RUNS" "$OUT"
minilm_labels "$LABELS"

train() { obj=$1
    echo "== train $obj"
    "$BIN" train --pools "$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json" \
        --labels "$LABELS" --depth 20 "${SCORER[@]}" "${MODEL[@]}" \
        --objective "$obj" --steps "$STEPS" --lr "$LR" --lambda 5 --lambda-warmup "$WARMUP" \
        --checkpoint-every "$EVERY" --windows-per-step "$WINDOWS" \
        --supervised-loss "$LOSS" "${SPLIT[@]}" --out "$RUNS/$obj-$TAG"
    mkdir -p "$OUT/train-$obj"
    cp "$RUNS/$obj-$TAG/train.json" "$RUNS/$obj-$TAG/log.jsonl" "$OUT/train-$obj/"; }

audit() { name=$1; shift; echo "== audit $name"; "$BIN" audit \
    --pools "$D/dl19/bm25-top100.json" --qrels "$D/dl19/qrels.txt" \
    --queries "$QUERIES" --depth 20 "${SCORER[@]}" "${MODEL[@]}" --permutations "$PERMS" \
    "$@" --out "$OUT/$name"; }

# Selection (SELECT=1) and the DL19 audit of one trained run.
evaluate() { obj=$1
    run="$RUNS/$obj-$TAG"
    adapter="$run/adapter"
    if [ "${SELECT:-0}" = 1 ]; then
        echo "== select $obj"
        heldout_select "$run/selection.json" "${SELECT_PERMS:-3}" --runs "$run" --every "$EVERY"
        adapter="$(selected adapter "$run/selection.json")"
        mkdir -p "$OUT/train-$obj"
        cp "$run"/selection.json "$run"/selection.md "$run"/selection-margin.* "$OUT/train-$obj/"
    fi
    audit "$obj" --adapter "$adapter"; }

dirs=("$OUT/off-the-shelf")
for obj in $OBJECTIVES; do dirs+=("$OUT/$obj"); done
if [ "${PARALLEL:-0}" = 1 ]; then
    # One process per objective (train, select, audit) and one for the
    # off-the-shelf audit, side by side: on a GPU a 135M model leaves the
    # device mostly idle between kernel launches, so separate processes
    # overlap. Each writes its own log, $RUNS/NAME.log.
    pids=()
    (audit off-the-shelf) > "$RUNS/off-the-shelf.log" 2>&1 &
    pids+=($!)
    for obj in $OBJECTIVES; do
        (train "$obj" && evaluate "$obj") > "$RUNS/$obj-$TAG.log" 2>&1 &
        pids+=($!)
    done
    # Every 30 s: each run's logged steps and each chain's last line, so
    # that a log cut short by a time limit still says where each chain was.
    (while sleep 30; do
        for obj in $OBJECTIVES; do
            steps=$( (wc -l < "$RUNS/$obj-$TAG/log.jsonl") 2>/dev/null || echo 0)
            echo "[$(date -u +%T)] $obj: $steps/$STEPS steps logged; $(tail -n 1 "$RUNS/$obj-$TAG.log" 2>/dev/null)"
        done
        echo "[$(date -u +%T)] off-the-shelf: $(tail -n 1 "$RUNS/off-the-shelf.log" 2>/dev/null)"
    done) &
    watcher=$!
    failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
    kill "$watcher" 2>/dev/null
    for log in "$RUNS/off-the-shelf.log" "$RUNS"/*-"$TAG".log; do echo "== $log"; tail -n 3 "$log"; done
    [ "$failed" = 0 ] || { echo "train_report: $failed of ${#pids[@]} chains failed (logs in $RUNS)" >&2; exit 1; }
else
    for obj in $OBJECTIVES; do train "$obj"; done
    audit off-the-shelf
    for obj in $OBJECTIVES; do evaluate "$obj"; done
fi
compare_audits "$OUT/compare.md" "${dirs[@]}"
