#!/usr/bin/env bash
# Start or stage? (reports/training/width10/crossed.md) At width 10 the
# OC-SFT stage (spread-scaled term, lambda 0.05, 48 steps) made the seed-1
# width-4 student stable (tau-PSI 0.274) and left the seed-0 one as it was
# (0.500). The two runs differ in their start (the width-4 student of that
# seed) and in the stage's own randomness (data order, view B's
# permutations, dropout: --seed). This trains more OC-SFT stages with start
# and stage seed chosen apart, two side by side on one thread each, and
# audits them like every width-10 stage (DL19, 43 queries, two windows of 10,
# M = PERMS, the same orders), so that all OC-SFT stages are paired with each
# other and with their zero-shot starts.
#
#   scripts/width10_crossed.sh                        # the crossing: STAGES="0:1 1:0"
#   STAGES="1:2 1:3" scripts/width10_crossed.sh       # two more stage seeds from start 1
#   STEPS=144 STAGES="0:0 1:0" scripts/width10_crossed.sh   # longer stages (crossed.md, "Longer stages")
#
# STAGES lists START:STAGE pairs (START: the width-4 student of that training
# seed; STAGE: this stage's --seed), run two at a time; STEPS (48) and PERMS
# (5) as in width10_stage.sh. Resumable. Names: ...-from-w4seedS-... is the
# start, a trailing -seedN (absent for 0) the stage seed; width10_stage.sh's
# own stages (start = stage seed) are ...-from-w4[-seedN]-.... At 48 steps
# start = stage seed is width10_stage.sh's run and is refused here; at other
# STEPS it is trained here, under width10_stage.sh's names.
#
# Writes compare-crossed.md (every OC-SFT stage of this kind that has an
# audit, both width10_stage.sh seeds included, against the base model), each
# crossed stage against its start's zero-shot width-10 audit
# (scripts/width_transfer.sh), and the variance and window-spread tables of
# all of them. At STEPS other than 48 the tables are named ...-sSTEPS.md and
# cover the stages of that length, and each is also compared with its
# 48-step twin (same start, same stage seed) where that has an audit, and
# the tables of the controls of that length (report-lib's controls_report,
# as scripts/width10_controls.sh writes them), so that a control that
# finished before its OC-SFT twin gets its compare now. START is a training
# seed whose width-4 students are kept (report-lib's stage_seeds).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
STEPS=${STEPS:-48}
PERMS=${PERMS:-5}
STAGES=${STAGES:-0:1 1:0}
W4=reports/training/width4
Z=$W4/width10
TS=""; [ "$STEPS" = 48 ] || TS="-s$STEPS"
width10_setup "$W4/adapters"
common+=("${oc_sft_stage[@]}")
# The baseline is the base model's audit at PERMS (base_audit); the
# zero-shot starts exist at M = 5 only.
MS=$(perms_sfx)
for pair in $STAGES; do
    start=${pair%%:*}; stage=${pair##*:}
    if [ "$start" = "$stage" ] && [ "$STEPS" = 48 ]; then
        echo "$pair: at 48 steps start = stage seed is width10_stage.sh's run" >&2; exit 2
    fi
    seed_from_fewer oc_sft_stage_audit "$STEPS" "$start" "$stage"   # FROM_PERMS
    from=$(w4_start "$start" oc-sft-aug-spread)
    run_in_lane "$RUNS/crossed$TS-start$start-stage$stage.log" \
        "${common[@]}" INIT_SFX="${from#oc-sft-aug-spread}" \
        INIT_TAG="$(stage_tag "$start" "$stage")" SEED="$stage" scripts/width_report.sh
done
lanes_wait "a stage failed: see $RUNS/crossed*.log"

all=()
while read -r start stage <&3; do
    d=$(oc_sft_stage_audit "$STEPS" "$start" "$stage")
    [ -f "$d/results.json" ] || continue
    all+=("$d")
    # width10_stage.sh's own 48-step stages have their zero-shot comparison there.
    if { [ "$start" != "$stage" ] || [ -n "$TS" ]; } && [ -z "$MS" ]; then
        zero=$Z/oc-sft-spread$(seed_sfx "$start")
        if [ -f "$zero/results.json" ]; then
            compare_audits "$OUT/compare-$(basename "$d")-vs-zero-shot.md" "$zero" "$d"
        else
            echo "no zero-shot audit $zero of start $start: scripts/width_transfer.sh makes it" >&2
        fi
    fi
    [ -z "$TS" ] || vs_shorter oc-sft-aug-spread 48 "$start" "$stage"
done 3< <(stage_seeds)
compare_audits "$OUT/compare-crossed$TS$MS.md" "$(base_audit)" "${all[@]}"
python3 scripts/score_variance.py "${all[@]}" --out "$OUT/variance-crossed$TS$MS.md"
python3 scripts/window_spread.py "${all[@]}" --out "$OUT/window-spread-crossed$TS$MS.md"
# The controls of these longer stages: their compares with the stages
# audited here, pooled and variance tables (report-lib's controls_report).
[ -z "$TS" ] || controls_report
