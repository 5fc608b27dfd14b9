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
# [-seedN]-mPERMS (from-w4[-seedN] when start = stage seed). Writes
# compare-sSTEPS-from-TAG[-seedN]-vs-OBJECTIVE.md for each control whose
# OC-SFT twin has an audit, and, where an objective has two or more such
# pairs (any start and stage seed, also from earlier invocations),
# seed-pooled-sSTEPS-oc-sft-spread-vs-OBJECTIVE.md and the decision sets
# beside each other (frozen threshold, top-5/10/15; scripts/retention.py),
# retention-sSTEPS-oc-sft-spread-vs-OBJECTIVE.md, the pooled difference of
# each start apart when both starts have pairs,
# seed-pooled-sSTEPS-from-w4seedS-oc-sft-spread-vs-OBJECTIVE.md, and the
# variance shares of all those controls, variance-controls-sSTEPS.md
# (-mPERMS after sSTEPS at M other than 5).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-144}
PERMS=${PERMS:-5}
CONTROLS=${CONTROLS:-single-order:1:2 perm-aug:1:0}
width10_setup reports/training/width4/adapters
MS=$(perms_sfx)
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

for c in $CONTROLS; do
    IFS=: read -r obj start stage <<< "$c"
    name=$(stage_name "$STEPS" "$start" "$stage")
    oc=$(oc_sft_stage_audit "$STEPS" "$start" "$stage")
    if [ -f "$oc/results.json" ]; then
        compare_audits "$OUT/compare-$name$MS-vs-$obj.md" "$(stage_audit "$obj" "$STEPS" "$start" "$stage")" "$oc"
    else
        echo "no OC-SFT audit $oc to compare $obj with"
    fi
done

# Every control of this length with an OC-SFT twin, also those of earlier
# invocations: with two or more of one objective, the OC-SFT-minus-control
# difference pooled over them (scripts/seed_pooled.py; each pair is one
# start and stage seed). Invocations running side by side take turns here
# (flock), so the last to finish writes the pooled files from every
# finished audit and no two write them at once.
exec 9> "$RUNS/controls-s$STEPS.lock"
flock 9
# finished_pairs OBJECTIVE [START]: `--pair OC CONTROL`, one word a line,
# for every stage (of START only, when given) whose control and OC-SFT twin
# both have results.
finished_pairs() { local start stage ctl oc
    while read -r start stage; do
        [ -z "${2:-}" ] || [ "$start" = "$2" ] || continue
        ctl=$(stage_audit "$1" "$STEPS" "$start" "$stage")
        oc=$(oc_sft_stage_audit "$STEPS" "$start" "$stage")
        [ -f "$ctl/results.json" ] && [ -f "$oc/results.json" ] || continue
        printf '%s\n' --pair "$oc" "$ctl"
    done < <(stage_seeds); }
controls=()
for obj in single-order perm-aug; do
    mapfile -t pairs < <(finished_pairs "$obj")
    for ((i = 2; i < ${#pairs[@]}; i += 3)); do controls+=("${pairs[$i]}"); done
    if [ "${#pairs[@]}" -ge 6 ]; then
        pool_pairs "$OUT/seed-pooled-s$STEPS$MS-oc-sft-spread-vs-$obj.md" \
            "$OUT/retention-s$STEPS$MS-oc-sft-spread-vs-$obj.md" "${pairs[@]}"
    fi
    # Each width-4 start's pairs pooled apart as well, where the start has
    # two or more and the other start some
    # (seed-pooled-sSTEPS-from-w4seedS-oc-sft-spread-vs-OBJECTIVE.md): the
    # start decides the OC-SFT effect (crossed.md, "The start decides"),
    # which the pooled table averages away.
    for s in $(stage_seeds | cut -d' ' -f1 | sort -u); do
        mapfile -t own < <(finished_pairs "$obj" "$s")
        if [ "${#own[@]}" -ge 6 ] && [ "${#own[@]}" -lt "${#pairs[@]}" ]; then
            python3 scripts/seed_pooled.py "${own[@]}" \
                --out "$OUT/seed-pooled-s$STEPS$MS-from-w4seed$s-oc-sft-spread-vs-$obj.md"
        fi
    done
done
# Where each control's score variance lies (slot, candidate, query), as
# variance-crossed-sSTEPS.md gives it for the OC-SFT stages.
# (None yet when every control finished before its OC-SFT twin's audit,
# e.g. an M = 10 pass run beside width10_crossed.sh: rerun this script then.)
if [ "${#controls[@]}" = 0 ]; then
    echo "no control of $STEPS steps at M = $PERMS has its OC-SFT twin's audit yet: rerun when it has"
else
    python3 scripts/score_variance.py "${controls[@]}" --out "$OUT/variance-controls-s$STEPS$MS.md"
fi
