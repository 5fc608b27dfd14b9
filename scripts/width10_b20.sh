#!/usr/bin/env bash
# The 288-step width-10 scorers at the issue's evaluation width B = 20
# (reports/training/width10/b20.md): trained on windows of 10, scored here
# with all 20 BM25 candidates of a DL19 pool in one window (one window per
# query and order; 300 characters, compact template), M = PERMS orders.
# SCORERS lists OBJECTIVE:START pairs (second cycles, stage seed 0, cycle
# seed 2: scripts/width10_cycle2.sh) and optionally `off-the-shelf` (the base
# model, no adapter), audited two side by side on one thread each; then
# each OC-SFT audit at M = PERMS is compared with each control audit at M =
# PERMS of the same start and with the base model's (ocrank compare;
# scripts/retention.py for the top-5/10/15 decision sets), and with all
# four at M = PERMS, the table with off the shelf as baseline
# (compare-table-w4seedSTART-mPERMS.md); with both starts, OC-SFT minus
# each control pooled over them (seed-pooled-mPERMS-*.md, retention-pooled-*).
# At M >= 10 each audit also holds its BSC@K curve (K = 1 to PERMS/2:
# `ocrank audit --bsc`, nothing new scored) and OC-SFT scored once is set
# against each control averaged over K orders, and both at equal K, over the
# starts with both audits (scripts/bsc_match.py -> bsc[-same-k]-mPERMS-*.md).
#
#   scripts/width10_b20.sh     # SCORERS="oc-sft-aug-spread:1 single-order:1", PERMS=5
#   SCORERS="perm-aug:1 off-the-shelf" PERMS=10 scripts/width10_b20.sh
#
# Resumable (audits score only missing windows); PERMS=10 FROM_PERMS=5
# extends finished audits by orders 5-9 (report-lib's seed_perms).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
PERMS=${PERMS:-5}
FROM_PERMS=${FROM_PERMS:-}
STEPS=144
SCORERS=${SCORERS:-oc-sft-aug-spread:1 single-order:1}
W10=reports/training/width10
OUT=$W10/b20
SCORER=(--width 20 --max-chars 300 --template compact)
MODEL=()
BSC=()
[ "$PERMS" -lt 10 ] || BSC=(--bsc $(( PERMS / 2 )))
mkdir -p "$OUT" runs/width10
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
for s in $SCORERS; do
    if [ "$s" = off-the-shelf ]; then
        name=off-the-shelf adapter=()
    else
        IFS=: read -r obj start <<< "$s"
        name=$(cycle2_name "$obj" "$STEPS" "$start" 0 2)
        adapter=(--adapter "$W10/adapters/$name")
    fi
    seed_perms "$OUT/$name"
    run_in_lane "runs/width10/b20-$name-m$PERMS.log" batched_audit "$name-m$PERMS" "${adapter[@]}" "${BSC[@]}"
done
lanes_wait "a B = 20 audit failed: see runs/width10/b20-*.log"
for start in 0 1; do
    oc=$(cycle2_audit oc-sft-aug-spread "$STEPS" "$start" 0 2)
    [ -f "$oc/results.json" ] || continue
    for control in single-order perm-aug off-the-shelf; do
        if [ "$control" = off-the-shelf ]; then ctl=$OUT/off-the-shelf-m$PERMS
        else ctl=$(cycle2_audit "$control" "$STEPS" "$start" 0 2); fi
        [ -f "$ctl/results.json" ] || continue
        compare_audits "$OUT/compare-$(basename "$oc")-vs-$control.md" "$ctl" "$oc"
        python3 scripts/retention.py --pair "$oc" "$ctl" --out "$OUT/retention-$(basename "$oc")-vs-$control.md"
    done
done
# The issue's table for each start whose four audits at M = PERMS all exist
# (issue_table returns 3, naming the missing audit, for the others):
# off the shelf as baseline, single-order, perm-aug, OC-SFT.
for start in 0 1; do issue_table "$OUT/compare-table-w4seed$start-m$PERMS.md" "$start" || [ $? = 3 ]; done
# OC-SFT minus each control pooled over the starts whose two audits at M =
# PERMS both exist, when there are two (scripts/seed_pooled.py; the decision
# sets with scripts/retention.py).
for control in single-order perm-aug; do
    pairs=()
    for start in 0 1; do
        oc=$(cycle2_audit oc-sft-aug-spread "$STEPS" "$start" 0 2)
        ctl=$(cycle2_audit "$control" "$STEPS" "$start" 0 2)
        if [ -f "$oc/results.json" ] && [ -f "$ctl/results.json" ]; then pairs+=(--pair "$oc" "$ctl"); fi
    done
    if [ "${#BSC[@]}" -gt 0 ] && [ "${#pairs[@]}" -ge 3 ]; then
        bsc_tables "m$PERMS-oc-sft-spread-vs-$control" "${pairs[@]}"
    fi
    [ "${#pairs[@]}" = 6 ] || continue
    pool_pairs "$OUT/seed-pooled-m$PERMS-oc-sft-spread-vs-$control.md" \
        "$OUT/retention-pooled-m$PERMS-oc-sft-spread-vs-$control.md" "${pairs[@]}"
done
