#!/usr/bin/env bash
# Warm-started batched training (reports/training/warmstart/): the invariant
# student of reports/training/invariant (which grades content when each
# candidate sits alone next to its `Grade:` line) is the starting point of
# batched training, single-order and OC-SFT, same steps, same data. Both are
# then audited as batched scorers on DL19 under shuffled orders, next to the
# starting adapter read the same way.
# Every step is resumable: rerun after an interruption.
#
#   scripts/warmstart_report.sh                 # 60 steps each, lr 1e-3, cross-entropy
#   STEPS=120 PERMS=10 scripts/warmstart_report.sh
# WARM=0, OCSFT=0 and START=0 leave out the warm-started single-order run, the
# warm-started OC-SFT run and the audit of the starting adapter. CONTROL=1 also
# trains single-order from fresh LoRA weights with the same settings and
# audits it: at STEPS=240 it is the invariant run's exact twin (lr, loss,
# steps, labels, data) but for the batched window, which isolates the layout.
#   WARM=0 OCSFT=0 START=0 CONTROL=1 STEPS=240 TAG=-control scripts/warmstart_report.sh
# Needs the invariant adapter: scripts/invariant_report.sh builds it.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
OUT=${OUT:-reports/training/warmstart}
RUNS=${RUNS:-runs/probe}
INIT=${INIT:-runs/probe/invariant-s240-lr1e-3-ce/adapter}
STEPS=${STEPS:-60}
LR=${LR:-1e-3}
PERMS=${PERMS:-3}
LABELS=${LABELS:-runs/train/labels-minilm.jsonl}
WARMUP=$(( STEPS / 20 ))
LAMBDA_WARMUP=$(( STEPS / 5 ))
EVERY=$(( STEPS / 4 ))
SCORER=(--width 10 --max-chars 300 --template compact)
read -r -a MODEL <<< "${MODEL_ARGS:-}"
[ -f "$INIT/adapter_config.json" ] || { echo "no adapter at $INIT: run scripts/invariant_report.sh first" >&2; exit 1; }
mkdir -p "$RUNS" "$OUT"
# Audit directories name their steps when they are not the default 60.
SFX=""; [ "$STEPS" = 60 ] || SFX="-s$STEPS"

train() { name=$1; shift; echo "== train $name"
    "$BIN" train --pools "$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json" \
        --heldout-pools "$D/dl21/bm25-top100.json" --labels "$LABELS" --depth 20 \
        "${SCORER[@]}" "${MODEL[@]}" --mode batched \
        --steps "$STEPS" --lr "$LR" --lr-warmup "$WARMUP" --supervised-loss cross-entropy \
        --lambda 5 --lambda-warmup "$LAMBDA_WARMUP" \
        --checkpoint-every "$EVERY" "$@" --out "$RUNS/$name-s$STEPS-lr$LR"
    mkdir -p "$OUT/train-$name"
    cp "$RUNS/$name-s$STEPS-lr$LR/train.json" "$RUNS/$name-s$STEPS-lr$LR/log.jsonl" "$OUT/train-$name/"; }

dirs=()
if [ "${WARM:-1}" = 1 ]; then
    train ws-single-order --objective single-order --init-adapter "$INIT"
    batched_audit ws-single-order$SFX --adapter "$RUNS/ws-single-order-s$STEPS-lr$LR/adapter"
    dirs+=("$OUT/ws-single-order$SFX")
fi
if [ "${OCSFT:-1}" = 1 ]; then
    train ws-oc-sft --objective oc-sft --init-adapter "$INIT"
    batched_audit ws-oc-sft$SFX --adapter "$RUNS/ws-oc-sft-s$STEPS-lr$LR/adapter"
    dirs+=("$OUT/ws-oc-sft$SFX")
fi
if [ "${START:-1}" = 1 ]; then
    batched_audit start --adapter "$INIT"
    dirs=("$OUT/start" "${dirs[@]}")
fi
if [ "${CONTROL:-0}" = 1 ]; then
    train single-order --objective single-order
    batched_audit single-order$SFX --adapter "$RUNS/single-order-s$STEPS-lr$LR/adapter"
    dirs+=("$OUT/single-order$SFX")
fi
[ "${#dirs[@]}" -lt 2 ] || compare_audits "$OUT/compare${TAG:-}.md" "${dirs[@]}"
