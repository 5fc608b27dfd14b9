#!/usr/bin/env bash
# A width-10 stage on the CPU (reports/training/width10/): the width-4
# students (single-order, perm-aug, and OC-SFT with the spread-scaled term at
# lambda 0.05) each trained STEPS more steps with their own objective at the
# issue's width 10 (curriculum width 2 -> 4 -> 10, --init-adapter), then
# audited at width 10 on DL19 exactly as reports/training/width4/width10/
# audited them unchanged (43 queries, top 20 as two windows of 10, 300
# characters, compact template, M = PERMS), so that each stage is compared
# paired with its own zero-shot start and with the other recipes. The
# off-the-shelf row is width4/width10's audit (same settings).
#
# Two scripts/width_report.sh invocations run side by side, one thread each
# (2 cores): OC-SFT-spread (about twice a single-order step) in one,
# single-order then perm-aug in the other. Resumable: rerun after an
# interruption (kept adapters are not retrained, audits score only missing
# windows).
#
#   scripts/width10_stage.sh                  # STEPS=48, PERMS=5, SEED=0
#   SEED=1 scripts/width10_stage.sh           # from the width-4 students of seed 1
#
# SEED picks the width-4 students of that training seed and the seed of this
# stage (data order, views, dropout); other seeds than 0 have no zero-shot
# width-10 audit but OC-SFT's (scripts/width_transfer.sh), so their stages
# are compared between recipes, and OC-SFT with its start.
# OUT and RUNS (default reports/training/width10 and runs/width10) and
# BASELINE (the off-the-shelf audit of the first table, default
# reports/training/width4/width10/off-the-shelf, M = 5) let the GPU machine
# run a stage outside the committed reports (scripts/device-train.sh stage);
# there BASE_AUDIT=1 also audits the base model, beside the stages, as
# $OUT/off-the-shelf-mPERMS, and makes it the baseline. SELECT=1 (passed
# to width_report.sh) audits and compares each recipe's checkpoint chosen
# on the held-out DL21 queries (NAME-sel-mPERMS) instead of its last step.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-48}
PERMS=${PERMS:-5}
SEED=${SEED:-0}
SS=""; [ "$SEED" = 0 ] || SS="-seed$SEED"
W4=reports/training/width4
Z=$W4/width10
# The labels both width_report.sh runs read are made once (width10_setup),
# so that on a fresh checkout the two do not race to write them.
width10_setup "$W4/adapters" "${OUT:-}" "${RUNS:-}"
common+=(INIT_TAG=w4 SEED="$SEED")
if [ "${BASE_AUDIT:-0}" = 1 ]; then
    BASELINE=$OUT/off-the-shelf-m$PERMS LANES=3
    SCORER=(--width 10 --max-chars 300 --template compact)
    read -r -a MODEL <<< "${MODEL_ARGS:-}"
    run_in_lane "$RUNS/off-the-shelf-m$PERMS.log" batched_audit "off-the-shelf-m$PERMS"
fi
# Each recipe starts from its own width-4 student (report-lib's w4_start).
oc_start=$(w4_start "$SEED" oc-sft-aug-spread); so_start=$(w4_start "$SEED" single-order)
run_in_lane "$RUNS/oc-sft-aug-spread$SS.log" "${common[@]}" "${oc_sft_stage[@]}" \
    INIT_SFX="${oc_start#oc-sft-aug-spread}" scripts/width_report.sh
run_in_lane "$RUNS/single-order-perm-aug$SS.log" "${common[@]}" OBJECTIVES="single-order perm-aug" \
    INIT_SFX="${so_start#single-order}" scripts/width_report.sh
lanes_wait "a stage failed: see the logs in $RUNS"

SEL=""; [ "${SELECT:-0}" != 1 ] || SEL=-sel
so=$(stage_audit single-order "$STEPS" "$SEED" "$SEED" "$SEL")
pa=$(stage_audit perm-aug "$STEPS" "$SEED" "$SEED" "$SEL")
oc=$(oc_sft_stage_audit "$STEPS" "$SEED" "$SEED" "$SEL")
compare_audits "$OUT/compare$SS.md" "${BASELINE:-$Z/off-the-shelf}" "$so" "$pa" "$oc"
compare_audits "$OUT/compare-vs-single-order$SS.md" "$so" "$pa" "$oc"
compare_audits "$OUT/compare-oc-sft-spread-vs-perm-aug$SS.md" "$pa" "$oc"
if [ "$SEED" != 0 ]; then
    # Only OC-SFT's start has a zero-shot audit at other seeds (scripts/width_transfer.sh).
    if [ -f "$Z/oc-sft-spread$SS/results.json" ]; then
        compare_audits "$OUT/compare-oc-sft-spread-vs-zero-shot$SS.md" "$Z/oc-sft-spread$SS" "$oc"
    fi
    exit 0
fi
# Each stage against its own start, the width-4 student scored unchanged.
compare_audits "$OUT/compare-single-order-vs-zero-shot.md" "$Z/single-order" "$so"
compare_audits "$OUT/compare-perm-aug-vs-zero-shot.md" "$Z/perm-aug" "$pa"
compare_audits "$OUT/compare-oc-sft-spread-vs-zero-shot.md" "$Z/oc-sft-spread" "$oc"
