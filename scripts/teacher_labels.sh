#!/usr/bin/env bash
# LLM-teacher labels for issue 5's order-averaged comparison: a trained
# width-2 student (it has content signal, the base model has none) scores the
# DL21 + DL22 training pools (top 20) under T seeded orders, and `ocrank label
# --teacher llm` turns that into two label files from the same scores:
# single-order (permutation 0, the canonical BM25 order) and order-averaged
# (the mean expected grade over permutations 0..T-1).
#
#   scripts/teacher_labels.sh        # T = 10, the width-2 single-order student, 2 lanes
#
# Environment: TEACHER (reports/training/width2/adapters/single-order-s240-w5),
# WIDTH (2), T (10), LANES (2: DL21 and DL22 side by side, one thread each),
# RUNS (runs/teacher). The scoring runs are audits (`ocrank audit`, with DL21's
# qrels, so the teacher's own nDCG@10 and tau-PSI on the training
# pools come with them): they resume after an interruption, rerun to go on.
# Writes RUNS/labels-T1.jsonl and RUNS/labels-T$T.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
TEACHER=${TEACHER:-reports/training/width2/adapters/single-order-s240-w5}
WIDTH=${WIDTH:-2}
T=${T:-10}
LANES=${LANES:-2}
RUNS=${RUNS:-runs/teacher}
[ -f "$TEACHER/adapter_model.safetensors" ] || { echo "no teacher adapter in $TEACHER" >&2; exit 1; }
mkdir -p "$RUNS"
[ "$LANES" -le 1 ] || export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}

for c in dl21 dl22; do
    qrels=()  # DL22 ships without qrels: its audit reports the label-free measures
    [ ! -f "$D/$c/qrels.txt" ] || qrels=(--qrels "$D/$c/qrels.txt")
    echo "== teacher scores $c: log in $RUNS/$c.log"
    run_in_lane "$RUNS/$c.log" "$BIN" audit --pools "$D/$c/bm25-top100.json" "${qrels[@]}" --depth 20 \
        --width "$WIDTH" --max-chars 300 --template compact --mode batched \
        --adapter "$TEACHER" --permutations "$T" --out "$RUNS/$c"
done
lanes_wait "a teacher audit failed: see $RUNS/*.log"

# `label --scores` reads the audits' window logs directly (checksums verified).
for orders in 1 "$T"; do
    "$BIN" label --teacher llm --scores "$RUNS/dl21" "$RUNS/dl22" --orders "$orders" \
        --pools "$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json" --depth 20 \
        --out "$RUNS/labels-T$orders.jsonl"
done
