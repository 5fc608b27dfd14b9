#!/usr/bin/env bash
# Issue 5's comparison at a narrow width (reports/training/width2/): at
# width 10 no batched student of SmolLM2-135M learns to find candidate [i]
# from the line `[i] Grade:` on this CPU (reports/training/warmstart/). With
# two candidates per window that binding is as easy as it gets, and the
# width-2 prompt still has a slot order to depend on. Same settings as the
# batched twin of the invariant run (MiniLM labels, DL21 + DL22 top 20 with 13
# DL21 queries held out, 300 characters, compact template, LoRA r16, AdamW
# lr 1e-3 with cosine decay, cross-entropy, seed 0), trained and evaluated
# at WIDTH. Every step is resumable: rerun after an interruption.
#
#   scripts/width_report.sh                       # WIDTH=2, 240 steps, M = 3
#   LANES=2 WINDOWS=5 OBJECTIVES="single-order oc-sft perm-aug" scripts/width_report.sh
#   LANES=2 WINDOWS=5 PERMS=10 OBJECTIVES="single-order oc-sft perm-aug" scripts/width_report.sh
#   WIDTH=4 STEPS=80 LANES=2 WINDOWS=5 INIT=reports/training/width2/adapters \
#       INIT_SFX=-s240-w5 INIT_TAG=w2 OBJECTIVES="oc-sft single-order perm-aug" scripts/width_report.sh
#
# Environment: WIDTH (2), STEPS (240), LR (1e-3), LAMBDA (5, warm-up over the
# first 20% of steps), PERMS (3), OBJECTIVES ("single-order oc-sft"; also
# perm-aug, order-averaged, oc-sft-pool: OC-SFT with --view-b pool, and
# oc-sft-aug: OC-SFT with --view-a permuted, perm-aug plus the consistency term;
# oc-sft-aug-spread: the same with --consistency-scale spread, and
# --spread-floor SPREAD_FLOOR where that is set),
# WINDOWS (windows per step, 1), BASE (1: audit the base model too, first;
# last: after the objectives, so that a long training starts first), LANES
# (1), INIT (a directory of kept adapters: each objective starts from
# INIT/OBJECTIVE$INIT_SFX with --init-adapter, a curriculum over widths; its
# names end in -from-$INIT_TAG; INIT_OBJ=NAME starts every objective from
# INIT/NAME$INIT_SFX instead), SEED (0: data order, views, dropout; other
# seeds add -seedN to the names), TAG (names end in -TAG: e.g. the label set,
# when two runs differ only in LABELS), AUDIT_ARGS (further `ocrank audit`
# flags for the trained objectives' audits, e.g. "--bsc 5"). LANES=N runs up to N objectives at once, each as its own process on
# one thread (RAYON_NUM_THREADS=1): on the 2-core machine a width-2 step
# runs 1.11x faster on 2 threads than on 1 (bench/threads.md), so two
# one-thread runs side by side finish nearly twice the work.
#
# A trained adapter is kept in $OUT/adapters/NAME (runs/ does not outlive a
# session); an objective whose adapter is kept there is not trained again,
# its audits use the kept adapter. Audits with PERMS other than 3 are named
# NAME-mPERMS.
#
# SELECT=1 chooses the checkpoint as SPEC.md section 5 does, on the
# held-out DL21 queries by ranking quality only: `ocrank select` over the
# run's checkpoints (every STEPS/4 steps, the last included) with
# SELECT_PERMS orders (3), its table in $OUT/train-NAME/selection.{json,md}
# and how far the selected checkpoint stands from the others on those
# queries in selection-margin.{json,md} (scripts/selection_margin.py);
# the selected adapter is kept as $OUT/adapters/NAME-sel and audited as
# NAME-sel[-mPERMS] instead of the last step (the last step's adapter is
# still kept as NAME, for a later stage to start from). Needs the run's
# checkpoints in $RUNS: an objective kept from an earlier invocation whose
# run is gone stops the script, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
WIDTH=${WIDTH:-2}
OUT=${OUT:-reports/training/width$WIDTH}
RUNS=${RUNS:-runs/width$WIDTH}
STEPS=${STEPS:-240}
LR=${LR:-1e-3}
LAMBDA=${LAMBDA:-5}
PERMS=${PERMS:-3}
WINDOWS=${WINDOWS:-1}
LANES=${LANES:-1}
OBJECTIVES=${OBJECTIVES:-single-order oc-sft}
LABELS=${LABELS:-runs/train/labels-minilm.jsonl}
WARMUP=$(( STEPS / 20 ))
LAMBDA_WARMUP=$(( STEPS / 5 ))
EVERY=$(( STEPS / 4 ))
SCORER=(--width "$WIDTH" --max-chars 300 --template compact)
read -r -a MODEL <<< "${MODEL_ARGS:-}"
mkdir -p "$RUNS" "$OUT" "$(dirname "$LABELS")"
# Names carry the settings that differ from the defaults.
SFX="-s$STEPS"; [ "$WINDOWS" = 1 ] || SFX="$SFX-w$WINDOWS"
MSFX=""; [ "$PERMS" = 3 ] || MSFX="-m$PERMS"
INIT=${INIT:-}; INIT_SFX=${INIT_SFX:-}; INIT_TAG=${INIT_TAG:-init}
INIT_OBJ=${INIT_OBJ:-}
[ -z "$INIT" ] || SFX="$SFX-from-$INIT_TAG"
SEED=${SEED:-0}
[ "$SEED" = 0 ] || SFX="$SFX-seed$SEED"
TAG=${TAG:-}
[ -z "$TAG" ] || SFX="$SFX-$TAG"
if [ "$LANES" -gt 1 ]; then export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}; fi

minilm_labels "$LABELS"

# Train one objective (unless its adapter is kept) and audit it.
train_and_audit() { local obj=$1 run="$RUNS/$1$SFX" kept="$OUT/adapters/$1$SFX"
    local objective=$obj view=()
    if [ "$obj" = oc-sft-pool ]; then objective=oc-sft; view=(--view-b pool); fi
    if [ "$obj" = oc-sft-aug ]; then objective=oc-sft; view=(--view-a permuted); fi
    if [ "$obj" = oc-sft-aug-spread ]; then
        objective=oc-sft; view=(--view-a permuted --consistency-scale spread)
        [ -z "${SPREAD_FLOOR:-}" ] || view+=(--spread-floor "$SPREAD_FLOOR"); fi
    if [ -f "$kept/adapter_model.safetensors" ]; then
        echo "== train $obj: kept adapter $kept"
    else
        local init=()
        if [ -n "$INIT" ]; then
            local from="$INIT/${INIT_OBJ:-$obj}$INIT_SFX"
            init=(--init-adapter "$from")
            [ -f "$from/adapter_model.safetensors" ] \
                || { echo "no adapter to start $obj from: $from" >&2; return 1; }
        fi
        echo "== train $obj${INIT:+ from ${init[1]}}"
        "$BIN" train --pools "$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json" \
            --heldout-pools "$D/dl21/bm25-top100.json" --labels "$LABELS" --depth 20 \
            "${SCORER[@]}" "${MODEL[@]}" --mode batched --objective "$objective" "${view[@]}" \
            --steps "$STEPS" --windows-per-step "$WINDOWS" --lr "$LR" --lr-warmup "$WARMUP" \
            --supervised-loss cross-entropy --lambda "$LAMBDA" --lambda-warmup "$LAMBDA_WARMUP" \
            --checkpoint-every "$EVERY" --seed "$SEED" "${init[@]}" --out "$run"
        mkdir -p "$OUT/train-$obj$SFX" "$kept"
        cp "$run/train.json" "$run/log.jsonl" "$OUT/train-$obj$SFX/"
        cp "$run"/adapter/* "$kept/"
    fi
    read -r -a audit_args <<< "${AUDIT_ARGS:-}"
    if [ "${SELECT:-0}" = 1 ]; then
        if [ ! -f "$kept-sel/adapter_model.safetensors" ]; then
            [ -d "$run/checkpoints" ] \
                || { echo "SELECT=1: $obj has no checkpoints in $run to select from" >&2; return 1; }
            echo "== select $obj"
            heldout_select "$run/selection.json" "${SELECT_PERMS:-3}" --runs "$run" --every "$EVERY"
            local chosen
            chosen=$(selected adapter "$run/selection.json")
            mkdir -p "$OUT/train-$obj$SFX"
            cp "$run"/selection.json "$run"/selection.md "$run"/selection-margin.* "$OUT/train-$obj$SFX/"
            # The kept adapter last, whole or not at all: it marks the
            # selection done for a rerun.
            rm -rf "$kept-sel.part" "$kept-sel"; mkdir -p "$kept-sel.part"
            cp "$chosen"/adapter_config.json "$chosen"/adapter_model.safetensors "$kept-sel.part/"
            mv "$kept-sel.part" "$kept-sel"
        fi
        batched_audit "$obj$SFX-sel$MSFX" --adapter "$kept-sel" "${audit_args[@]}"
        return
    fi
    batched_audit "$obj$SFX$MSFX" --adapter "$kept" "${audit_args[@]}"
}

# Runs "$@" as lane NAME: with LANES > 1 in the background once a lane is
# free (report-lib's run_in_lane), logged to $RUNS/NAME.log; otherwise in
# the foreground.
lane() { local name=$1; shift
    if [ "$LANES" -gt 1 ]; then
        echo "== $name: log in $RUNS/$name.log"
        run_in_lane "$RUNS/$name.log" "$@"
    else
        "$@"
    fi; }
BASE=${BASE:-1}
if [ "$BASE" = 1 ]; then lane "off-the-shelf$MSFX" batched_audit "off-the-shelf$MSFX"; fi
for obj in $OBJECTIVES; do lane "$obj$SFX$MSFX" train_and_audit "$obj"; done
if [ "$BASE" = last ]; then lane "off-the-shelf$MSFX" batched_audit "off-the-shelf$MSFX"; fi
lanes_wait "a lane failed: see the logs in $RUNS"
# Compare every finished audit of these settings, also those of objectives
# trained by an earlier invocation (e.g. single-order, then oc-sft alone).
dirs=()
A=$SFX; [ "${SELECT:-0}" != 1 ] || A=$SFX-sel
for a in off-the-shelf single-order$A order-averaged$A perm-aug$A oc-sft$A oc-sft-pool$A oc-sft-aug$A; do
    if [ -f "$OUT/$a$MSFX/results.json" ]; then dirs+=("$OUT/$a$MSFX"); fi
done
[ "${#dirs[@]}" -lt 2 ] || compare_audits "$OUT/compare$A$MSFX.md" "${dirs[@]}"
