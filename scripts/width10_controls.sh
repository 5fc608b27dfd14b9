#!/usr/bin/env bash
# The other recipes beside the longer OC-SFT stages
# (reports/training/width10/crossed.md, "Longer stages"): issue 5 compares
# OC-SFT with single-order and perm-aug at the same steps and on the same
# data. A control here is a width-4 student of the same training seed
# (START), trained STEPS more steps at width 10 with its own objective and
# the same stage seed (STAGE: data order, view permutations, dropout) as an
# OC-SFT stage of scripts/width10_crossed.sh, so it sees the same windows in
# the same order; audited like every width-10 stage (DL19, 43 queries, two
# windows of 10, M = PERMS) and compared, paired, with that OC-SFT stage.
#
#   scripts/width10_controls.sh                                   # CONTROLS="single-order:1:2 perm-aug:1:0"
#   CONTROLS="single-order:1:0" scripts/width10_controls.sh       # the first control (already kept)
#
# CONTROLS lists OBJECTIVE:START:STAGE triples, run two at a time (LANES), one
# thread each (2 cores). STEPS (144) and PERMS (5) as in width10_crossed.sh.
# Resumable: kept adapters are not retrained, audits score only missing
# windows. Names follow width10_crossed.sh: OBJECTIVE-sSTEPS-from-w4seedS
# [-seedN]-mPERMS (from-w4[-seedN] when start = stage seed). Then writes
# the tables of every control of STEPS steps at M = PERMS whose OC-SFT twin
# has an audit, also those of earlier invocations (report-lib's
# controls_report): each pair's compare-sSTEPS-from-TAG[-seedN]-vs-OBJECTIVE.md;
# where an objective has two or more pairs (any start and stage seed),
# seed-pooled-sSTEPS-oc-sft-spread-vs-OBJECTIVE.md and the decision sets
# beside each other (frozen threshold, top-5/10/15; scripts/retention.py),
# retention-sSTEPS-oc-sft-spread-vs-OBJECTIVE.md, and each start's pairs
# pooled apart, seed-pooled-sSTEPS-from-w4seedS-oc-sft-spread-vs-OBJECTIVE.md;
# the variance shares of all those controls, variance-controls-sSTEPS.md
# (-mPERMS after sSTEPS at M other than 5); and above 144 steps each stage,
# OC-SFT or control, against its 144-step twin,
# compare-<audit>-vs-s144.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-144}
PERMS=${PERMS:-5}
CONTROLS=${CONTROLS:-single-order:1:2 perm-aug:1:0}
width10_setup reports/training/width4/adapters
# Every triple is checked before any run starts.
for c in $CONTROLS; do
    parse_spec "$c" OBJECTIVE:START:STAGE single-order perm-aug
done
for c in $CONTROLS; do
    IFS=: read -r obj start stage <<< "$c"
    from=$(w4_start "$start" "$obj")
    seed_from_fewer stage_audit "$obj" "$STEPS" "$start" "$stage"   # FROM_PERMS
    run_in_lane "$RUNS/control-s$STEPS-$obj-start$start-stage$stage.log" \
        "${common[@]}" OBJECTIVES="$obj" INIT_SFX="${from#"$obj"}" \
        INIT_TAG="$(stage_tag "$start" "$stage")" SEED="$stage" scripts/width_report.sh
done
lanes_wait "a control failed: see $RUNS/control-*.log"

# Every table of these controls and of earlier ones (report-lib's
# controls_report; width10_crossed.sh ends with it too, so a control whose
# OC-SFT twin is still training gets its compare when the twin's audit ends).
for c in $CONTROLS; do
    IFS=: read -r obj start stage <<< "$c"
    oc=$(oc_sft_stage_audit "$STEPS" "$start" "$stage")
    [ -f "$oc/results.json" ] || echo "$c: no OC-SFT audit $oc yet; width10_crossed.sh compares them when it has one"
done
controls_report
