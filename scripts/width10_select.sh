#!/usr/bin/env bash
# Checkpoint selection across the width-10 cycles of one start
# (reports/training/width10/select.md). SPEC.md section 5 and issue 5 choose
# the checkpoint on a held-out split by ranking quality only; the width-10
# cycles (scripts/width10_stage.sh, width10_cycle2.sh, width10_cycle3.sh)
# audited each cycle's last step instead. This runs `ocrank select` per
# recipe over the candidates those cycles left: the first and second
# cycles' kept adapters (144 and 288 updates; their checkpoints were not
# kept) and every checkpoint of the third cycle (every 36 steps: 324, 360,
# 396, 432 updates), scored on the held-out DL21 queries (the training
# split's 20 %, the same for every run) over SELECT_PERMS orders at the
# training width, two recipes side by side on one thread each. Then it
# audits each recipe's selected candidate on DL19 like every width-10 stage
# (43 queries, two windows of 10, M = PERMS, the same orders): a cycle's
# kept adapter already has that audit; a mid-cycle checkpoint gets its own
# (NAME-atSTEP-mPERMS, STEP counted from the start of the width-10 stage),
# and the selected scorers are compared (OC-SFT against single-order).
#
#   scripts/width10_select.sh     # START=1 SEED2=2 SEED3=3 SELECT_PERMS=5 PERMS=5
#   AUDIT_ARGS="--bsc 5" PERMS=10 FROM_PERMS=5 scripts/width10_select.sh   # M = 10
#
# FROM_PERMS=K starts a mid-cycle checkpoint's audit from its audit with K
# orders (report-lib's seed_perms), so that only the new orders are scored;
# AUDIT_ARGS are further `ocrank audit` flags for it (the M = 10 audits of
# the cycle ends ran with --bsc 5).
#
# The third cycle's checkpoints live in runs/width10 (not committed): this
# runs where scripts/width10_cycle3.sh ran. Rerunnable: a finished selection
# (its JSON in OUT) is kept, audits score only missing windows.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-144}
PERMS=${PERMS:-5}
SELECT_PERMS=${SELECT_PERMS:-5}
START=${START:-1}
SEED2=${SEED2:-2}
SEED3=${SEED3:-3}
RECIPES=${RECIPES:-oc-sft-aug-spread single-order}
FROM_PERMS=${FROM_PERMS:-}
OUT=reports/training/width10
RUNS=runs/width10
SCORER=(--width 10 --max-chars 300 --template compact)
MODEL=()
export RAYON_NUM_THREADS=${THREADS:-1}

# candidates OBJ: the run directories `ocrank select` takes for OBJ. A kept
# adapter becomes a run of its own under $RUNS/select (its train.json from
# $OUT/train-NAME and a link to the adapter), which select scores as NAME@final.
candidates() { local obj=$1 name dir
    for name in "$obj-$(stage_name "$STEPS" "$START" 0)$(objective_tag "$obj")" \
        "$(cycle2_name "$obj" "$STEPS" "$START" 0 "$SEED2")"; do
        dir=$RUNS/select/$name
        [ -f "$OUT/adapters/$name/adapter_model.safetensors" ] && [ -f "$OUT/train-$name/train.json" ] \
            || { echo "no kept adapter or train.json for $name in $OUT" >&2; exit 2; }
        mkdir -p "$dir"
        cp "$OUT/train-$name/train.json" "$dir/"
        ln -sfn "$(realpath "$OUT/adapters/$name")" "$dir/adapter"
        echo "$dir"
    done
    dir=$RUNS/$(cycle3_name "$obj" "$STEPS" "$START" 0 "$SEED2" "$SEED3")
    [ -d "$dir/checkpoints" ] || { echo "no third-cycle checkpoints in $dir (scripts/width10_cycle3.sh)" >&2; exit 2; }
    echo "$dir"; }

sel() { echo "$OUT/select-w4seed$START-$1.json"; }
for obj in $RECIPES; do
    runs=$(candidates "$obj")
    s=$(sel "$obj"); [ -f "${s%.json}-margin.json" ] && continue
    # shellcheck disable=SC2086
    run_in_lane "$RUNS/select-w4seed$START-$obj.log" heldout_select "$(sel "$obj")" "$SELECT_PERMS" --runs $runs
done
lanes_wait "a selection failed: see $RUNS/select-w4seed$START-*.log"

# audit_of OBJ: the DL19 audit directory of OBJ's selected candidate; audits
# a mid-cycle checkpoint that has none yet.
audit_of() { local obj=$1 cand adapter step dir
    cand=$(selected candidate "$(sel "$obj")")
    adapter=$(selected adapter "$(sel "$obj")")
    case "$cand" in
    "$RUNS/select/$obj-$(stage_name "$STEPS" "$START" 0)$(objective_tag "$obj")@final")
        echo "$(stage_audit "$obj" "$STEPS" "$START" 0)";;
    "$RUNS/select/$(cycle2_name "$obj" "$STEPS" "$START" 0 "$SEED2")@final")
        echo "$(cycle2_audit "$obj" "$STEPS" "$START" 0 "$SEED2")";;
    *@"$STEPS")
        echo "$(cycle3_audit "$obj" "$STEPS" "$START" 0 "$SEED2" "$SEED3")";;
    *@*)
        step=$(( ${cand##*@} + 2 * STEPS ))
        dir=$(cycle3_name "$obj" "$STEPS" "$START" 0 "$SEED2" "$SEED3")-at$step
        seed_perms "$OUT/$dir" >&2
        batched_audit "$dir-m$PERMS" --adapter "$adapter" ${AUDIT_ARGS:-} >&2
        echo "$OUT/$dir-m$PERMS";;
    esac; }

declare -A audit
for obj in $RECIPES; do
    a=$(audit_of "$obj")
    [ -f "$a/results.json" ] || { echo "$obj: selected audit $a has no results.json" >&2; exit 3; }
    echo "$obj: selected $(selected candidate "$(sel "$obj")") -> $a"
    audit[$obj]=$a
    # A mid-cycle checkpoint beside the cycle ends around it (the second
    # cycle's first, as the baseline).
    second=$(cycle2_audit "$obj" "$STEPS" "$START" 0 "$SEED2")
    third=$(cycle3_audit "$obj" "$STEPS" "$START" 0 "$SEED2" "$SEED3")
    if [ "$a" != "$second" ] && [ "$a" != "$third" ] && [ "$a" != "$(stage_audit "$obj" "$STEPS" "$START" 0)" ]; then
        compare_audits "$OUT/compare-select-w4seed$START-$obj-vs-cycle-ends-m$PERMS.md" "$second" "$a" "$third"
    fi
done
# What each selected scorer's scores vary with (query, slot, candidate).
sel_audits=()
for obj in $RECIPES; do sel_audits+=("${audit[$obj]}"); done
python3 scripts/score_variance.py "${sel_audits[@]}" --out "$OUT/variance-select-w4seed$START-m$PERMS.md" > /dev/null
# The selected OC-SFT scorer against the selected single-order one.
if [ -n "${audit[oc-sft-aug-spread]:-}" ] && [ -n "${audit[single-order]:-}" ]; then
    compare_audits "$OUT/compare-select-w4seed$START-m$PERMS.md" "${audit[single-order]}" "${audit[oc-sft-aug-spread]}"
fi
