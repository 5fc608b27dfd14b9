#!/usr/bin/env bash
# A second cycle for the from-base width-10 runs
# (reports/training/width10/from-base/, "Second cycle"). After 144 steps
# from the base model no recipe fitted its windows better than a constant
# score (scripts/width10_base.sh). Is that a matter of steps (the issue's
# GPU protocol has 300 from the base model) or stuck? This trains the listed
# recipes STEPS more steps from their from-base adapters, a warm restart as
# scripts/width10_cycle2.sh does for the stages (a new cosine cycle with its
# own lr and lambda warm-up, stage seed 2: new data order, views and
# dropout), then audits them like every width-10 stage (DL19, 43 queries,
# two windows of 10, M = PERMS, the same orders) and compares each with its
# first cycle; also the score-variance table.
#
#   scripts/width10_base_cycle2.sh                     # RECIPES="single-order", THREADS=2
#   RECIPES="single-order oc-sft-aug-spread" THREADS=1 scripts/width10_base_cycle2.sh
#
# RECIPES: single-order, perm-aug, oc-sft-aug-spread (the spread-scaled term
# at lambda 0.05, floor 1e-5), trained one after another on THREADS threads
# (default 2). Resumable: kept adapters are not retrained, audits score only
# the windows they lack. Names: RECIPE-sSTEPS-from-base-sSTEPS-seed2[-TAG]-mPERMS.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-144}
PERMS=${PERMS:-5}
THREADS=${THREADS:-2}
RECIPES=${RECIPES:-single-order}
for obj in $RECIPES; do parse_spec "$obj" RECIPE single-order perm-aug oc-sft-aug-spread; done
W10=reports/training/width10
width10_setup "" "$W10/from-base" runs/width10-base
M=m$PERMS
first=(); second=()
for obj in $RECIPES; do
    recipe_env "$obj"
    first+=("$(from_base_audit "$obj")")
    second+=("$(from_base_audit "$obj" 2)")
    [ -f "${first[-1]}/results.json" ] \
        || { echo "no first-cycle audit ${first[-1]}: run scripts/width10_base.sh first" >&2; exit 1; }
    "${common[@]}" "${recipe[@]}" INIT="$OUT/adapters" INIT_SFX="-s$STEPS$(objective_tag "$obj")" \
        INIT_TAG="base-s$STEPS" SEED=2 scripts/width_report.sh
done
# Each second cycle against its first (the baseline), then the variance.
read -r -a recipes <<< "$RECIPES"
for i in "${!recipes[@]}"; do
    compare_audits "$OUT/compare-${recipes[$i]}-cycle2-$M.md" "${first[$i]}" "${second[$i]}"
done
scripts/score_variance.py "${first[@]}" "${second[@]}" --out "$OUT/variance-cycle2-$M.md"
