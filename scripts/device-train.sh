#!/usr/bin/env bash
# The training comparison of issue 5 (scripts/train_report.sh, full protocol)
# on the GPU machine. The model (94 MB) is larger than one device call may
# carry (64 MiB), so it travels in two halves over two calls, kept there
# between calls as ignored files while the machine stays warm (30 s):
#
#   here:  scripts/device-bundle.sh --train
#   then, each call right after the previous one returns:
#     run(command="true", carry=[".cache/device-model-1"])
#     run(command="true", carry=[".cache/device-model-2"])
#     run(command="scripts/device-train.sh", carry=[".cache/device-train"], timeout_s=590)
#
# It joins the halves (checking the SHA-256), then runs train_report.sh with
# --device cuda: labels are carried (no MiniLM there), training on DL21+DL22
# with queries held out of DL21 only, selection on them, DL19 audits, and the
# comparison. Everything lands in $OUT/training.tar.gz (plus the log), to be
# unpacked into reports/training-gpu/ here. Environment: STEPS (300), WINDOWS (1),
# LOSS (squared), PERMS (10), QUERIES (43), OBJECTIVES ("single-order perm-aug oc-sft").
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
b=.cache/device-train
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

OCRANK="$BIN/ocrank" DATA="$b/msmarco" OUT=/tmp/ocrank-training RUNS=/tmp/ocrank-runs \
    LABELS="$b/labels-minilm.jsonl" MODEL_ARGS="${MODEL_ARGS:---device cuda}" SPLIT_DL21_ONLY=1 SELECT=1 \
    STEPS="${STEPS:-300}" WINDOWS="${WINDOWS:-1}" LOSS="${LOSS:-squared}" LR=2e-4 MAX_CHARS=600 QUERIES="${QUERIES:-43}" PERMS="${PERMS:-10}" \
    OBJECTIVES="${OBJECTIVES:-single-order perm-aug oc-sft}" \
    timeout 540 scripts/train_report.sh
rc=$?
echo "train_report.sh exit status: $rc"
# $OUT takes at most 8 files: one archive of the report and the runs' logs.
mkdir -p /tmp/ocrank-training
cp "$b/labels-minilm.jsonl" /tmp/ocrank-training/ 2>/dev/null
tar -czf "$out/training.tar.gz" -C /tmp ocrank-training \
    $(cd /tmp && ls -d ocrank-runs/*/train.json ocrank-runs/*/log.jsonl ocrank-runs/*/selection.* 2>/dev/null)
ls -la "$out"
exit $rc
