#!/usr/bin/env bash
# The training comparison of issue 5 (scripts/train_report.sh, full protocol)
# on the GPU machine. The model (94 MB) is larger than one device call may
# carry (64 MiB), so it travels in two halves over two calls, kept there
# between calls as ignored files while the machine stays warm (30 s). The
# working tree travels too and must be small: scripts/device-lean.sh hide
# moves the committed reports and adapters (~680 MB) out of it first.
#
#   here:  scripts/device-bundle.sh --train && scripts/device-lean.sh hide
#   then, each call right after the previous one returns:
#     run(command="scripts/device-train.sh check", carry=[".cache/device-train"], timeout_s=200)
#     run(command="true", carry=[".cache/device-model-1"])
#     run(command="scripts/device-train.sh train", carry=[".cache/device-model-2"], timeout_s=590)
# (BUDGET=seconds before the command when less device time is left: the
# call needs about BUDGET + 60 s). No pause between the calls: an idle
# machine goes back after 30 s and takes the carried files with it; the
# train stage then stops at once, naming what is missing.
#   here:  scripts/device-lean.sh restore
#
# `check` runs the CUDA tests and a short `ocrank device-check` (f32 parity
# with the CPU on SmolLM2's shape, scoring and LoRA step timings at the
# training window: what sizes STEPS) into $OUT.
# `train` joins the halves (checking the SHA-256), then runs train_report.sh
# with --device cuda --dtype f32 (the CPU studies' precision) and PARALLEL=1
# (one process per objective): labels are carried (no MiniLM there), training
# on DL21+DL22 with queries held out of DL21 only, selection on them, DL19
# audits, and the comparison. Everything lands in $OUT/training.tar.gz (plus
# the log), to be unpacked into reports/ here. Environment:
# STEPS (auto, see below), WINDOWS (1), LOSS (squared), PERMS (10), QUERIES (43), OBJECTIVES
# ("single-order perm-aug oc-sft"), MAX_CHARS (600), BUDGET (seconds for
# train_report.sh, 480). A CPU rehearsal of the train stage (a CPU binary in
# the bundle, MODEL_ARGS="--device cpu", small settings) checks the flow here.
#
# `stage` instead runs the curriculum's last step (scripts/width10_stage.sh)
# from the width-4 students of one training seed: on the CPU, OC-SFT from
# base never fitted its windows (reports/training/width10/from-base/), and
# from the seed-1 students it ended order-stable after 288 updates
# (tau-PSI 0.202, reports/training/width10/cycle2.md). Settings as there
# (width 10, 300 characters, lr 1e-3, cross-entropy, the spread-scaled term
# at lambda 0.05), STEPS (auto; at most 300) in one cycle, each recipe's
# checkpoint selected on the held-out DL21 queries (SELECT=1, SELECT_PERMS
# 3 orders; width_report.sh), DL19 audits at M = PERMS (10) of the three
# selected checkpoints and of the base model. A fourth call
# carries the students (56 MiB):
#   here:  scripts/device-bundle.sh --train --init 1 && scripts/device-lean.sh hide
#     run(command="scripts/device-train.sh check", carry=[".cache/device-train"], timeout_s=200)
#     run(command="true", carry=[".cache/device-model-1"])
#     run(command="true", carry=[".cache/device-init"])
#     run(command="scripts/device-train.sh stage", carry=[".cache/device-model-2"], timeout_s=590)
# It returns $OUT/stage.tar.gz (audits, training logs, selections) and
# OC-SFT's adapters (the last step's and the selected one) in parts of 12 MiB
# ($OUT/oc-sft-adapter.tar.gz.part-*): the other adapters exceed what comes
# back. Here, after restore (FILES: the reply's files_at):
#   mkdir -p reports/training/width10/gpu && tar -xzf FILES/stage.tar.gz -C reports/training/width10/gpu
#   cat FILES/oc-sft-adapter.tar.gz.part-* | tar -xzf - -C reports/training/width10/gpu/ocrank-stage
# The audits are compared with the CPU's (`ocrank compare`) like any other:
# same pools, windows, orders and settings; the base model's audit there
# against reports/training/width10/off-the-shelf-m10 is a parity check.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
b=.cache/device-train
stage=${1:-train}
case "$stage" in
    check)
        # scripts/device-check.sh at the training window, with short limits;
        # it keeps its JSON and exit status on the machine for STEPS=auto.
        BUNDLE="$b" TESTS_TIMEOUT=60 CHECK_TIMEOUT=100 exec scripts/device-check.sh \
            --width 10 --max-chars 600 --template compact \
            --parity smollm2-135m --parity-dtypes f32,bf16 --parity-windows 1 \
            --bench smollm2-135m --bench-dtype f32 --windows 20 --repeats 2 --train-steps 3 ;;
    train|stage) ;;
    *) echo "device-train: unknown stage '$stage' (check, train or stage)"; exit 2 ;;
esac
# shellcheck source=scripts/device-env.sh
source scripts/device-env.sh "$b" device-train || exit 1
out="$OUT_DIR"
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p models
if [ ! -f "$model" ]; then
    for part in .cache/device-model-1/part .cache/device-model-2/part; do
        [ -f "$part" ] || { echo "device-train: $part is missing: carry both halves first (see the header)"; exit 1; }
    done
    cat .cache/device-model-1/part .cache/device-model-2/part > "$model"
fi
(cd models && sha256sum -c "../$b/model.sha256") || { rm -f "$model"; exit 1; }

# STEPS=auto: the protocol's 300 steps, or as many as the measured step and
# window times fit in BUDGET with the chains side by side (a slowdown
# SLOWDOWN, default 1.5, assumed for sharing the GPU); needs the check stage
# to have run on this machine.
budget=${BUDGET:-480}
# within_budget CMD...: runs CMD for at most $budget seconds in a process
# group of its own; past that, stops the whole group (the report scripts run
# their chains and lanes in the background, which timeout(1) would leave
# running), so that the archive below reads no file still being written.
# Returns CMD's status, or 124 when the budget ran out, as timeout(1) does.
within_budget() { local pid watch rc start=$SECONDS
    setsid "$@" & pid=$!
    setsid bash -c 'sleep "$1"; kill -TERM -- "-$2"' watch "$budget" "$pid" > /dev/null 2>&1 & watch=$!
    wait "$pid"; rc=$?
    kill -- "-$watch" 2>/dev/null
    [ $(( SECONDS - start )) -ge "$budget" ] || return "$rc"
    sleep 5; kill -KILL -- "-$pid" 2>/dev/null; return 124; }
if [ "${STEPS:-auto}" = auto ]; then
    [ "$(cat /tmp/ocrank-device-check.rc 2>/dev/null)" = 0 ] ||
        { echo "device-train: STEPS=auto needs a passed check stage on this machine"; exit 1; }
    mode=(); [ "$stage" = train ] || mode=(--stage)
    STEPS=$(python3 scripts/device_steps.py /tmp/ocrank-device-check.json "$budget" "${SLOWDOWN:-1.5}" "${mode[@]}") || exit 1
fi
echo "device-train: $stage, STEPS=$STEPS, budget ${budget}s"
if [ "$stage" = stage ]; then
    init=.cache/device-init
    [ -f "$init/seed" ] || { echo "device-train: $init is missing: carry it first (scripts/device-bundle.sh --init SEED, see the header)"; exit 1; }
    (cd "$init" && sha256sum --quiet -c SHA256SUMS) || exit 1
    # Where scripts/width10_stage.sh looks for the students and the labels
    # (reports/ itself stays behind: scripts/device-lean.sh).
    mkdir -p reports/training/width4/adapters runs/train
    cp -r "$init/adapters/." reports/training/width4/adapters/
    cp "$b/labels-minilm.jsonl" runs/train/labels-minilm.jsonl
    so=/tmp/ocrank-stage
    OCRANK="$BIN/ocrank" DATA="$b/msmarco" MODEL_ARGS="${MODEL_ARGS:---device cuda --dtype f32}" \
        OUT="$so" RUNS=/tmp/ocrank-stage-runs BASE_AUDIT=1 THREADS="${THREADS:-4}" \
        SELECT="${SELECT:-1}" SELECT_PERMS="${SELECT_PERMS:-3}" \
        STEPS="$STEPS" PERMS="${PERMS:-10}" SEED="$(cat "$init/seed")" \
        within_budget scripts/width10_stage.sh
    rc=$?
    echo "width10_stage.sh exit status: $rc"
    for log in /tmp/ocrank-stage-runs/*.log; do echo "== $log"; tail -n 3 "$log"; done
    # $OUT takes files of at most 16 MiB: the audits and logs in one
    # archive, OC-SFT's adapter (19 MB) in parts.
    mkdir -p "$so"
    tar -czf "$out/stage.tar.gz" -C /tmp --exclude=ocrank-stage/adapters ocrank-stage \
        $(cd /tmp && ls -d ocrank-stage-runs/*.log 2>/dev/null)
    if ls -d "$so"/adapters/oc-sft-* > /dev/null 2>&1; then
        tar -czf - -C "$so" $(cd "$so" && ls -d adapters/oc-sft-*) | split -b 12m - "$out/oc-sft-adapter.tar.gz.part-"
    fi
    ls -la "$out"
    exit $rc
fi
OCRANK="$BIN/ocrank" DATA="$b/msmarco" OUT=/tmp/ocrank-training RUNS=/tmp/ocrank-runs \
    LABELS="$b/labels-minilm.jsonl" MODEL_ARGS="${MODEL_ARGS:---device cuda --dtype f32}" SPLIT_DL21_ONLY=1 SELECT=1 PARALLEL=1 \
    STEPS="$STEPS" WINDOWS="${WINDOWS:-1}" LOSS="${LOSS:-squared}" LR=2e-4 MAX_CHARS="${MAX_CHARS:-600}" QUERIES="${QUERIES:-43}" PERMS="${PERMS:-10}" \
    OBJECTIVES="${OBJECTIVES:-single-order perm-aug oc-sft}" \
    within_budget scripts/train_report.sh
rc=$?
echo "train_report.sh exit status: $rc"
# $OUT takes at most 8 files: one archive of the report and the runs' logs.
mkdir -p /tmp/ocrank-training
cp "$b/labels-minilm.jsonl" /tmp/ocrank-training/ 2>/dev/null
tar -czf "$out/training.tar.gz" -C /tmp ocrank-training \
    $(cd /tmp && ls -d ocrank-runs/*/train.json ocrank-runs/*/log.jsonl ocrank-runs/*/selection* ocrank-runs/*.log 2>/dev/null)
ls -la "$out"
exit $rc
