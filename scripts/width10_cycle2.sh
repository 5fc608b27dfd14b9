#!/usr/bin/env bash
# A second cycle for the 144-step width-10 stages
# (reports/training/width10/cycle2.md). At 144 steps the seed-1 width-4
# start became a candidate grader under OC-SFT (consistency value falling
# through steps 49-96, tau-PSI 0.240) and the seed-0 start did not
# (consistency flat at ~2.2 for all 144 steps, tau-PSI 0.494). Is the seed-0
# start short of steps (the issue's GPU protocol has 300) or stuck? This
# trains listed stages STEPS more steps from their finished adapters (a warm
# restart: a new cosine cycle with its own lr and lambda warm-up, as
# width_report.sh sets them, and a new stage seed, so new data order, view-B
# permutations and dropout) with the same objective, two side by side on one
# thread each (LANES; THREADS=2 gives a cycle run alone both cores), then
# audits them like every width-10 stage (DL19, 43 queries, two windows of
# 10, M = PERMS, the same orders) and compares each with its first cycle,
# OC-SFT with single-order and perm-aug, and perm-aug with single-order at
# the same steps, pooling OC-SFT's differences over the starts.
#
#   scripts/width10_cycle2.sh        # CYCLES="oc-sft-aug-spread:0:0:2 oc-sft-aug-spread:1:0:2"
#   CYCLES="single-order:1:0:2 single-order:0:0:2" scripts/width10_cycle2.sh   # their controls
#   CYCLES="perm-aug:1:0:2 perm-aug:0:0:2" scripts/width10_cycle2.sh
#
# CYCLES lists OBJECTIVE:START:STAGE:SEED. OBJECTIVE: oc-sft-aug-spread (the
# spread-scaled term, lambda 0.05, floor 1e-5), single-order or perm-aug;
# the first cycle is that objective's STEPS-step stage from the width-4
# student START with stage seed STAGE, kept in width10/adapters; SEED is the
# second cycle's --seed, so cycles with one SEED see the same windows in the
# same order. Names: OBJECTIVE-sSTEPS-from-w4seedSTART[-seedSTAGE]-sSTEPS
# [-seedSEED][-lambda0.05-floor1e-5]-mPERMS. Resumable (kept adapters are not
# retrained, audits score only missing windows); rerun with the full CYCLES
# list to rewrite the tables from every finished cycle. PERMS other than 5
# adds -mPERMS to the names of the pooled, variance and window-spread files;
# FROM_PERMS=K starts each second cycle's audit from its audit with K orders
# (report-lib's seed_audit), so that only orders K..PERMS-1 are scored
# (scripts/width10_m10.sh). A first cycle without an audit at PERMS orders
# is left out of the comparisons.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-144}
PERMS=${PERMS:-5}
MS=$(perms_sfx)
CYCLES=${CYCLES:-oc-sft-aug-spread:0:0:2 oc-sft-aug-spread:1:0:2}
width10_setup reports/training/width10/adapters
# first_cycle OBJ START STAGE / second_cycle OBJ START STAGE SEED: the audits.
first_cycle() { stage_audit "$1" "$STEPS" "$2" "$3"; }
second_cycle() { cycle2_audit "$1" "$STEPS" "$2" "$3" "$4"; }
# Every quadruple is checked before any run starts.
for c in $CYCLES; do
    parse_spec "$c" OBJECTIVE:START:STAGE:SEED oc-sft-aug-spread single-order perm-aug
done
for c in $CYCLES; do
    IFS=: read -r obj start stage seed <<< "$c"
    recipe_env "$obj"
    seed_from_fewer second_cycle "$obj" "$start" "$stage" "$seed"   # FROM_PERMS
    run_in_lane "$RUNS/cycle2-s$STEPS-$obj-start$start-stage$stage-seed$seed.log" \
        "${common[@]}" "${recipe[@]}" \
        INIT_SFX="-$(stage_name "$STEPS" "$start" "$stage")$(objective_tag "$obj")" \
        INIT_TAG="$(cycle2_tag "$STEPS" "$start" "$stage")" SEED="$seed" scripts/width_report.sh
done
lanes_wait "a second cycle failed: see $RUNS/cycle2-*.log"

# Every finished second cycle of this length (also from earlier
# invocations): against its first cycle; OC-SFT against single-order after
# the first cycles (unequal steps: 288 against 144); OC-SFT and perm-aug
# against single-order, and OC-SFT against perm-aug, after their second
# cycles with the same seeds (equal steps and data). OC-SFT's pairs with
# each control's second cycle are kept in `pooled` (CONTROL -> "--pair OC
# CONTROL ..."; audit paths have no spaces) for seed_pooled.py below.
all=()
declare -A pooled=()
for obj in oc-sft-aug-spread single-order perm-aug; do
    while read -r start stage <&3; do
        for seed in 0 1 2 3 4 5 6 7 8 9; do
            second=$(second_cycle "$obj" "$start" "$stage" "$seed")
            [ -f "$second/results.json" ] || continue
            first=$(first_cycle "$obj" "$start" "$stage")
            if [ -f "$first/results.json" ]; then
                [[ " ${all[*]} " == *" $first "* ]] || all+=("$first")
                compare_audits "$OUT/compare-$(basename "$second")-vs-first-cycle.md" "$first" "$second"
            fi
            all+=("$second")
            # Controls at equal steps: single-order for perm-aug and OC-SFT,
            # perm-aug (its views without the consistency term) for OC-SFT.
            controls=()
            [ "$obj" = single-order ] || controls+=(single-order)
            [ "$obj" != oc-sft-aug-spread ] || controls+=(perm-aug)
            if [ "$obj" = oc-sft-aug-spread ]; then
                single=$(first_cycle single-order "$start" "$stage")
                [ ! -f "$single/results.json" ] \
                    || compare_audits "$OUT/compare-$(basename "$second")-vs-single-order-s$STEPS.md" "$single" "$second"
            fi
            for control in "${controls[@]}"; do
                control2=$(second_cycle "$control" "$start" "$stage" "$seed")
                [ -f "$control2/results.json" ] || continue
                compare_audits "$OUT/compare-$(basename "$second")-vs-$control-cycle2.md" "$control2" "$second"
                [ "$obj" != oc-sft-aug-spread ] || pooled[$control]+=" --pair $second $control2"
            done
        done
    done 3< <(stage_seeds)
done
# With two or more such pairs for a control, OC-SFT's difference pooled over
# them (scripts/seed_pooled.py, as width10_controls.sh does at 144 steps),
# and their decision sets (frozen threshold, top-5/10/15;
# scripts/retention.py).
for control in "${!pooled[@]}"; do
    read -ra pairs <<< "${pooled[$control]}"
    [ "${#pairs[@]}" -ge 6 ] || continue
    pool_pairs "$OUT/seed-pooled-cycle2$MS-oc-sft-spread-vs-$control.md" \
        "$OUT/retention-cycle2$MS-oc-sft-spread-vs-$control.md" "${pairs[@]}"
done
python3 scripts/score_variance.py "${all[@]}" --out "$OUT/variance-cycle2$MS.md"
python3 scripts/window_spread.py "${all[@]}" --out "$OUT/window-spread-cycle2$MS.md"
