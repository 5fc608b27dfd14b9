#!/usr/bin/env bash
# Width transfer (reports/training/width4/width10/): the width-4 students
# (single-order, perm-aug, and OC-SFT with the spread-scaled term at the
# held-out-selected lambda 0.05), unchanged, audited as batched scorers at
# the issue's width 10 on DL19 (top 20: two windows of 10), next to the base
# model, then compared. Zero-shot in width: no step is trained at width 10.
# Resumable (`ocrank audit` scores only missing windows).
#
#   scripts/width_transfer.sh                 # M = 5 (PERMS), all 43 queries
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
W4=reports/training/width4
OUT=${OUT:-$W4/width10}
PERMS=${PERMS:-5}
SCORER=(--width 10 --max-chars 300 --template compact)
MODEL=()
S=s80-w5-from-w2
mkdir -p "$OUT"
batched_audit off-the-shelf
batched_audit single-order --adapter "$W4/adapters/single-order-$S"
batched_audit perm-aug --adapter "$W4/adapters/perm-aug-$S"
# The OC-SFT student of every training seed kept (report-lib's w4_starts;
# oc-sft-spread[-seedN]): the starts of reports/training/width10/'s stages
# (scripts/width10_stage.sh and width10_crossed.sh compare each stage with
# its start).
for seed in $(w4_starts); do
    batched_audit "oc-sft-spread$(seed_sfx "$seed")" --adapter "$W4/adapters/$(w4_start "$seed" oc-sft-aug-spread)"
done
compare_audits "$OUT/compare.md" "$OUT/off-the-shelf" "$OUT/single-order" "$OUT/perm-aug" "$OUT/oc-sft-spread"
compare_audits "$OUT/compare-vs-single-order.md" "$OUT/single-order" "$OUT/perm-aug" "$OUT/oc-sft-spread"
compare_audits "$OUT/compare-oc-sft-spread-vs-perm-aug.md" "$OUT/perm-aug" "$OUT/oc-sft-spread"
