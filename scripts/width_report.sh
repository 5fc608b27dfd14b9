#!/usr/bin/env bash
# Issue 5's comparison at a narrow width (reports/training/width2/): at
# width 10 no batched student of SmolLM2-135M learns to find candidate [i]
# from the line `[i] Grade:` on this CPU (reports/training/warmstart/). With
# two candidates per window that binding is as easy as it gets, and the
# width-2 prompt still has a slot order to depend on. Same settings as the
# batched twin of the invariant run (MiniLM labels, DL21 + DL22 top 20 with 13
# DL21 queries held out, 300 characters, compact template, LoRA r16, AdamW
# lr 1e-3 with cosine decay, cross-entropy, seed 0), trained and evaluated
# at WIDTH. Every step is resumable: rerun after an interruption.
#
#   scripts/width_report.sh                       # WIDTH=2, 240 steps, M = 3
#   WIDTH=2 STEPS=240 PERMS=10 OBJECTIVES="single-order oc-sft perm-aug" scripts/width_report.sh
#
# Environment: WIDTH (2), STEPS (240), LR (1e-3), LAMBDA (5, warm-up over the
# first 20% of steps), PERMS (3), OBJECTIVES ("single-order oc-sft"),
# WINDOWS (windows per step, 1), BASE (1: audit the base model too).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
BIN=${OCRANK:-target/release/ocrank}
D=${DATA:-../shared/data/msmarco}
WIDTH=${WIDTH:-2}
OUT=${OUT:-reports/training/width$WIDTH}
RUNS=${RUNS:-runs/width$WIDTH}
STEPS=${STEPS:-240}
LR=${LR:-1e-3}
LAMBDA=${LAMBDA:-5}
PERMS=${PERMS:-3}
WINDOWS=${WINDOWS:-1}
OBJECTIVES=${OBJECTIVES:-single-order oc-sft}
LABELS=${LABELS:-runs/train/labels-minilm.jsonl}
WARMUP=$(( STEPS / 20 ))
LAMBDA_WARMUP=$(( STEPS / 5 ))
EVERY=$(( STEPS / 4 ))
SCORER=(--width "$WIDTH" --max-chars 300 --template compact)
read -r -a MODEL <<< "${MODEL_ARGS:-}"
mkdir -p "$RUNS" "$OUT" "$(dirname "$LABELS")"
# Names carry the settings that differ from the defaults.
SFX="-s$STEPS"; [ "$WINDOWS" = 1 ] || SFX="$SFX-w$WINDOWS"

minilm_labels "$LABELS"


if [ "${BASE:-1}" = 1 ]; then batched_audit off-the-shelf; fi
for obj in $OBJECTIVES; do
    run="$RUNS/$obj$SFX"
    echo "== train $obj"
    "$BIN" train --pools "$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json" \
        --heldout-pools "$D/dl21/bm25-top100.json" --labels "$LABELS" --depth 20 \
        "${SCORER[@]}" "${MODEL[@]}" --mode batched --objective "$obj" \
        --steps "$STEPS" --windows-per-step "$WINDOWS" --lr "$LR" --lr-warmup "$WARMUP" \
        --supervised-loss cross-entropy --lambda "$LAMBDA" --lambda-warmup "$LAMBDA_WARMUP" \
        --checkpoint-every "$EVERY" --out "$run"
    mkdir -p "$OUT/train-$obj$SFX"
    cp "$run/train.json" "$run/log.jsonl" "$OUT/train-$obj$SFX/"
    batched_audit "$obj$SFX" --adapter "$run/adapter"
done
# Compare every finished audit of these settings, also those of objectives
# trained by an earlier invocation (e.g. single-order, then oc-sft alone).
dirs=()
for a in off-the-shelf single-order$SFX order-averaged$SFX perm-aug$SFX oc-sft$SFX; do
    if [ -f "$OUT/$a/results.json" ]; then dirs+=("$OUT/$a"); fi
done
[ "${#dirs[@]}" -lt 2 ] || "$BIN" compare "${dirs[@]}" \
    --measures ndcg_at_10,ndcg_at_10_mean,ndcg_at_10_worst,tau_psi,retained_set_overlap \
    --out "$OUT/compare$SFX.md"
