#!/usr/bin/env bash
# OC-SFT from the base model at width 10 on the CPU
# (reports/training/width10/from-base/). Every OC-SFT scorer of
# reports/training/width10/ started from a width-4 student (curriculum
# width 2 -> 4 -> 10, scripts/width10_stage.sh); the issue's protocol trains
# from the base model (scripts/device-train.sh, never lent a machine). This
# is that protocol scaled to the CPU: the three recipes of the 144-step
# stages (single-order, perm-aug, and OC-SFT with the spread-scaled term at
# lambda 0.05, floor 1e-5), the same settings (width 10, 300 characters,
# compact template, MiniLM labels, lr 1e-3, cross-entropy, one window a
# step, seed 0: the same 144 windows in the same order as the stage-seed-0
# stages), but from the base model instead of a width-4 student. The audits
# match those of reports/training/width10/ (DL19, 43 queries, top 20 as two
# windows of 10, M = PERMS).
#
# Two scripts/width_report.sh invocations side by side, one thread each
# (2 cores): OC-SFT (about twice a single-order step) in one, single-order
# then perm-aug in the other. Resumable: rerun after an interruption (kept
# adapters are not retrained; audits score only the windows they lack).
#
#   scripts/width10_base.sh                       # train, audit at M = 5
#   PERMS=10 FROM_PERMS=5 scripts/width10_base.sh # the same audits extended to M = 10
#   CONTROLS=single-order scripts/width10_base.sh  # without perm-aug
#
# CONTROLS (default "single-order perm-aug"): the recipes of the second lane;
# THREADS (1): threads per lane.
# With FROM_PERMS each audit starts from the same scorer's M = FROM_PERMS
# window log (report-lib's seed_perms), so only the new orders are scored,
# and holds its BSC@(PERMS/2) curve. Writes, at M = PERMS: the issue's table
# (off the shelf as baseline: reports/training/width4/width10/off-the-shelf
# at M = 5, reports/training/width10/off-the-shelf-m10 at M = 10),
# OC-SFT and perm-aug against single-order, OC-SFT against perm-aug, and the
# score-variance table (window grader or candidate grader), and OC-SFT's
# training log beside those of the two stage-seed-0 stages (stage-logs.md:
# does the consistency value fall after lambda's warm-up?). At M = 5 also
# each from-base scorer against the 144-step stage of the same recipe, stage
# seed 0, from each width-4 start (same windows, same order: only the
# starting weights differ; these two at STEPS = 144 only).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-144}
PERMS=${PERMS:-5}
FROM_PERMS=${FROM_PERMS:-}
CONTROLS=${CONTROLS:-single-order perm-aug}
W10=reports/training/width10
width10_setup "" "$W10/from-base" runs/width10-base
M=m$PERMS
oc=$(from_base_audit oc-sft-aug-spread); so=$(from_base_audit single-order); pa=()
case " $CONTROLS " in *" perm-aug "*) pa=("$(from_base_audit perm-aug)") ;; esac
audit_args=""
if [ -n "$FROM_PERMS" ]; then
    for a in "$oc" "$so" "${pa[@]}"; do seed_perms "${a%-"$M"}"; done
    audit_args="--bsc $(( PERMS / 2 ))"
fi
common+=(AUDIT_ARGS="$audit_args")
run_in_lane "$RUNS/oc-sft-aug-spread-$M.log" "${common[@]}" "${oc_sft_stage[@]}" scripts/width_report.sh
run_in_lane "$RUNS/controls-$M.log" "${common[@]}" OBJECTIVES="$CONTROLS" scripts/width_report.sh
lanes_wait "a lane failed: see $RUNS/oc-sft-aug-spread-$M.log and $RUNS/controls-$M.log"

if [ "$PERMS" = 5 ]; then base=reports/training/width4/width10/off-the-shelf; else base=$W10/off-the-shelf-$M; fi
compare_audits "$OUT/compare-$M.md" "$base" "$so" "${pa[@]}" "$oc"
compare_audits "$OUT/compare-vs-single-order-$M.md" "$so" "${pa[@]}" "$oc"
[ "${#pa[@]}" = 0 ] || compare_audits "$OUT/compare-oc-sft-vs-perm-aug-$M.md" "${pa[@]}" "$oc"
scripts/score_variance.py "$base" "$so" "${pa[@]}" "$oc" --out "$OUT/variance-$M.md"
# The stages below exist at 144 steps and M = 5 only.
if [ "$PERMS" = 5 ] && [ "$STEPS" = 144 ]; then
    # The same recipe, the same 144 windows in the same order (stage seed
    # 0), started from the base model (the baseline) and from each width-4
    # student.
    for obj in $CONTROLS oc-sft-aug-spread; do
        compare_audits "$OUT/compare-$obj-vs-curriculum-$M.md" "$(from_base_audit "$obj")" \
            "$(OUT=$W10 stage_audit "$obj" "$STEPS" 0 0)" "$(OUT=$W10 stage_audit "$obj" "$STEPS" 1 0)"
    done
fi
# OC-SFT's consistency value from the base model and from the width-4
# students, the same windows (stage seed 0).
[ "$STEPS" = 144 ] || exit 0
logs=("$OUT/train-oc-sft-aug-spread-s$STEPS-$OC_SFT_TAG")
for start in 0 1; do logs+=("$W10/train-oc-sft-aug-spread-s$STEPS-from-$(stage_tag "$start" 0)-$OC_SFT_TAG"); done
{ echo "<!-- python3 scripts/stage_logs.py ${logs[*]} --warmup $(( STEPS / 5 )) > $OUT/stage-logs.md -->"
  python3 scripts/stage_logs.py "${logs[@]}" --warmup $(( STEPS / 5 )); } > "$OUT/stage-logs.md"
