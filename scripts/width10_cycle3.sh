#!/usr/bin/env bash
# A third cycle for width-10 stages that had a second
# (reports/training/width10/cycle3.md). From the seed-1 width-4 student,
# OC-SFT's tau-PSI fell from 0.240 after one 144-step cycle to 0.202 after
# two (288 updates, scripts/width10_cycle2.sh) while single-order's stayed
# at ~0.49. Does OC-SFT keep gaining with steps (the GPU protocol has 300;
# the paper reports 0.083), and does single-order stay a window grader, or
# become order-stable too given steps? This trains each listed second cycle
# STEPS more steps from its kept adapter (a warm restart, a new cosine cycle
# and lambda warm-up, stage seed SEED3: the same windows for every recipe
# with one SEED3), two side by side on one thread each (THREADS per lane),
# audits them like every width-10 stage (DL19, 43 queries, two windows of
# 10, M = PERMS, the same orders), and compares each third cycle with its
# second, OC-SFT with single-order at equal steps, and both with the base
# model (issue 5's table at 432 updates).
#
#   scripts/width10_cycle3.sh    # CYCLES="oc-sft-aug-spread:1:0:2:3 single-order:1:0:2:3"
#
# CYCLES lists OBJECTIVE:START:STAGE:SEED2:SEED3 (OBJECTIVE oc-sft-aug-spread,
# single-order or perm-aug; the second cycle of width10_cycle2.sh with seed
# SEED2, kept in width10/adapters). Names: report-lib's cycle3_name, e.g.
# oc-sft-aug-spread-s144-from-w4seed1-s144-s144-seed2-seed3-lambda0.05-floor1e-5-m5.
# Resumable (kept adapters are not retrained, audits score only missing
# windows); a rerun over finished cycles rewrites the tables only.
# FROM_PERMS=K starts each audit from the same cycle's audit with K orders
# (report-lib's seed_audit), so that only the new orders are scored:
#   AUDIT_ARGS="--bsc 5" PERMS=10 FROM_PERMS=5 scripts/width10_cycle3.sh   # M = 10
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-144}
PERMS=${PERMS:-5}
CYCLES=${CYCLES:-oc-sft-aug-spread:1:0:2:3 single-order:1:0:2:3}
width10_setup reports/training/width10/adapters
for c in $CYCLES; do
    parse_spec "$c" OBJECTIVE:START:STAGE:SEED2:SEED3 oc-sft-aug-spread single-order perm-aug
    IFS=: read -r obj start stage seed2 seed3 <<< "$c"
    from=$(cycle2_name "$obj" "$STEPS" "$start" "$stage" "$seed2")
    [ -f "$OUT/adapters/$from/adapter_model.safetensors" ] \
        || { echo "$c: no second cycle $OUT/adapters/$from (scripts/width10_cycle2.sh)" >&2; exit 2; }
done
for c in $CYCLES; do
    IFS=: read -r obj start stage seed2 seed3 <<< "$c"
    recipe_env "$obj"
    from=$(cycle2_name "$obj" "$STEPS" "$start" "$stage" "$seed2")
    seed_from_fewer cycle3_audit "$obj" "$STEPS" "$start" "$stage" "$seed2" "$seed3"
    run_in_lane "$RUNS/cycle3-s$STEPS-$obj-start$start-stage$stage-seeds$seed2-$seed3.log" \
        "${common[@]}" "${recipe[@]}" INIT_SFX="${from#"$obj"}" \
        INIT_TAG="$(cycle3_tag "$STEPS" "$start" "$stage" "$seed2")" SEED="$seed3" scripts/width_report.sh
done
lanes_wait "a third cycle failed: see $RUNS/cycle3-*.log"

# Each third cycle against its second; per start and seeds, OC-SFT against
# single-order at equal steps, issue 5's table (off the shelf as baseline,
# base_audit) and the decision sets (scripts/retention.py); the
# score-variance table of all.
base=$(base_audit)
all=("$base")
for c in $CYCLES; do
    IFS=: read -r obj start stage seed2 seed3 <<< "$c"
    third=$(cycle3_audit "$obj" "$STEPS" "$start" "$stage" "$seed2" "$seed3")
    compare_audits "$OUT/compare-$(basename "$third")-vs-second-cycle.md" \
        "$(cycle2_audit "$obj" "$STEPS" "$start" "$stage" "$seed2")" "$third"
    all+=("$third")
    [ "$obj" = oc-sft-aug-spread ] || continue
    single=$(cycle3_audit single-order "$STEPS" "$start" "$stage" "$seed2" "$seed3")
    [ -f "$single/results.json" ] || continue
    compare_audits "$OUT/compare-$(basename "$third")-vs-single-order-cycle3.md" "$single" "$third"
    # Named by the whole cycle (start, stage, both seeds), so that two third
    # cycles of one start keep tables of their own.
    id=$(cycle3_tag "$STEPS" "$start" "$stage" "$seed2")$(seed_sfx "$seed3")
    compare_audits "$OUT/compare-table-cycle3-$id-m$PERMS.md" "$base" "$single" "$third"
    # Decisions of fixed size (top 5/10/15) and the frozen-threshold set.
    python3 scripts/retention.py --pair "$third" "$single" \
        --out "$OUT/retention-cycle3-$id-m$PERMS-oc-sft-spread-vs-single-order.md"
done
python3 scripts/score_variance.py "${all[@]}" --out "$OUT/variance-cycle3-m$PERMS.md"
