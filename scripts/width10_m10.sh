#!/usr/bin/env bash
# Issue 5's table at its M = 10 (reports/training/width10/m10.md). Every
# width-10 audit so far used M = 5 orders per query. This re-audits the
# four scorers of the table at 288 steps, off the shelf, single-order,
# perm-aug and OC-SFT (the second cycles of scripts/width10_cycle2.sh from
# both width-4 starts, stage seed 0, cycle seed 2), with PERMS orders. Each
# audit starts from the same scorer's M = 5 window log (report-lib's
# seed_audit: orders 0-4 are the same orders whatever M), so only orders
# 5..PERMS-1 are scored: at PERMS = 10, 430 of the 860 windows (two per
# query and order) per scorer, about 22 minutes two side by side here.
#
#   scripts/width10_m10.sh            # PERMS=10; two audits side by side, one thread each
#
# Steps: (1) the off-the-shelf audit at PERMS alone on two threads, started
# from reports/training/width4/width10/off-the-shelf (M = 5), first so that
# width_report.sh's own compare-s144-from-w4seedSTART-s144-seed2-mPERMS.md
# always has it as baseline; (2) width10_cycle2.sh with PERMS,
# FROM_PERMS=5 and AUDIT_ARGS="--bsc PERMS/2" (each audit also holds its
# BSC@K curve, SPEC.md section 4) on the six second cycles (kept adapters:
# no training; it
# writes every per-start comparison, the pooled ones and the variance and
# window-spread tables at PERMS, and OC-SFT's decision sets against each
# control's, pooled over the starts: the frozen-threshold overlap beside
# threshold-free top-5/10/15 set overlaps, scripts/retention.py ->
# retention-cycle2-mPERMS-oc-sft-spread-vs-CONTROL.md); (3) per start, the
# table: off the shelf as baseline, single-order, perm-aug and OC-SFT
# (compare-table-cycle2-w4seedSTART-mPERMS.md); (4) OC-SFT once against
# each control averaged over K orders, and both at equal K (scripts/bsc_match.py -> bsc[-same-k]-cycle2-mPERMS-oc-sft-spread-
# vs-CONTROL.md). Resumable: rerun after an interruption; finished audits
# rerun in a fraction of a second.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
PERMS=${PERMS:-10}
STEPS=144
OUT=reports/training/width10
SCORER=(--width 10 --max-chars 300 --template compact)
MODEL=()
seed_audit reports/training/width4/width10/off-the-shelf "$OUT/off-the-shelf-m$PERMS"
RAYON_NUM_THREADS=2 batched_audit "off-the-shelf-m$PERMS"

CYCLES=""
for obj in oc-sft-aug-spread single-order perm-aug; do
    for start in 0 1; do CYCLES+=" $obj:$start:0:2"; done
done
AUDIT_ARGS="--bsc $(( PERMS / 2 ))" PERMS=$PERMS FROM_PERMS=5 CYCLES="$CYCLES" scripts/width10_cycle2.sh

for start in 0 1; do issue_table "$OUT/compare-table-cycle2-w4seed$start-m$PERMS.md" "$start"; done

for control in single-order perm-aug; do
    pairs=()
    for start in 0 1; do
        pairs+=(--pair "$(cycle2_audit oc-sft-aug-spread "$STEPS" "$start" 0 2)" "$(cycle2_audit "$control" "$STEPS" "$start" 0 2)")
    done
    bsc_tables "cycle2-m$PERMS-oc-sft-spread-vs-$control" "${pairs[@]}"
done
