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
    train) ;;
    *) echo "device-train: unknown stage '$stage' (check or train)"; exit 2 ;;
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
# window times fit in BUDGET with the four chains side by side (a slowdown
# SLOWDOWN, default 1.5, assumed for sharing the GPU); needs the check stage
# to have run on this machine.
budget=${BUDGET:-480}
if [ "${STEPS:-auto}" = auto ]; then
    [ "$(cat /tmp/ocrank-device-check.rc 2>/dev/null)" = 0 ] ||
        { echo "device-train: STEPS=auto needs a passed check stage on this machine"; exit 1; }
    STEPS=$(python3 scripts/device_steps.py /tmp/ocrank-device-check.json "$budget" "${SLOWDOWN:-1.5}") || exit 1
fi
echo "device-train: STEPS=$STEPS, budget ${budget}s"
OCRANK="$BIN/ocrank" DATA="$b/msmarco" OUT=/tmp/ocrank-training RUNS=/tmp/ocrank-runs \
    LABELS="$b/labels-minilm.jsonl" MODEL_ARGS="${MODEL_ARGS:---device cuda --dtype f32}" SPLIT_DL21_ONLY=1 SELECT=1 PARALLEL=1 \
    STEPS="$STEPS" WINDOWS="${WINDOWS:-1}" LOSS="${LOSS:-squared}" LR=2e-4 MAX_CHARS="${MAX_CHARS:-600}" QUERIES="${QUERIES:-43}" PERMS="${PERMS:-10}" \
    OBJECTIVES="${OBJECTIVES:-single-order perm-aug oc-sft}" \
    timeout "$budget" scripts/train_report.sh
rc=$?
echo "train_report.sh exit status: $rc"
# $OUT takes at most 8 files: one archive of the report and the runs' logs.
mkdir -p /tmp/ocrank-training
cp "$b/labels-minilm.jsonl" /tmp/ocrank-training/ 2>/dev/null
tar -czf "$out/training.tar.gz" -C /tmp ocrank-training \
    $(cd /tmp && ls -d ocrank-runs/*/train.json ocrank-runs/*/log.jsonl ocrank-runs/*/selection.* ocrank-runs/*.log 2>/dev/null)
ls -la "$out"
exit $rc
