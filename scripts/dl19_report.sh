#!/usr/bin/env bash
# The committed DL19 comparison (reports/dl19/): SmolLM2-135M-Instruct at
# B = 20 on the first 8 DL19 queries, BM25 depth 40 (two windows per
# permutation, so round-robin differs from contiguous), M = 4 permutations,
# one template (compact) for every mode. BSC@2 comes from the batched audit's
# two disjoint groups of 2 permutations. Each audit is resumable: rerun this
# script after an interruption and only missing windows are scored.
#
#   scripts/dl19_report.sh            # all audits, then the comparison
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${OCRANK:-target/release/ocrank}
DATA=${DATA:-../shared/data/msmarco/dl19}
OUT=reports/dl19
COMMON=(--pools "$DATA/bm25-top100.json" --qrels "$DATA/qrels.txt"
        --queries 8 --depth 40 --width 20 --permutations 4 --bsc 2
        --template compact)
run() { name=$1; shift; echo "== $name"; "$BIN" audit "${COMMON[@]}" "$@" --out "$OUT/$name"; }
run batched --mode batched
run invariant --mode invariant
run capcal --mode batched --capcal
run round-robin --mode batched --partition round-robin
"$BIN" compare "$OUT/batched" "$OUT/invariant" "$OUT/capcal" "$OUT/round-robin" \
    --bsc 2 --out "$OUT/compare.md"
