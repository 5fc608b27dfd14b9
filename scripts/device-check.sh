#!/usr/bin/env bash
# Runs on the GPU machine, in one device call, from the repository root, with
# the bundle of scripts/device-bundle.sh carried:
#
#   run(command="scripts/device-check.sh", carry=[".cache/device-bundle"], timeout_s=540)
#
# after scripts/device-lean.sh hide (the tree must be under 64 MiB with the
# bundle; restore afterwards).
#
# It finds the CUDA runtime libraries in the machine's PyTorch environment
# (scripts/device-env.sh), runs the CUDA tests, then `ocrank device-check` (CPU-vs-GPU parity, scoring
# and training timings), and leaves under $OUT:
#   environment.txt     GPU, driver, libraries found, ldd of the binary
#   cuda-tests.txt      the CUDA test run
#   device-check.json   the measurements (rewritten after each one)
#   device-check.log    the whole output
# Nothing is built there. Each stage has its own time limit, so that a hang
# leaves time for the next stage and for the files to come back.
# Arguments after the script's name go to `ocrank device-check` (e.g. the
# shapes and window of scripts/device-train.sh's check stage); BUNDLE
# (default .cache/device-bundle), TESTS_TIMEOUT (150) and CHECK_TIMEOUT (330)
# change the bundle and the limits. The JSON and the exit status are also
# kept on the machine (/tmp/ocrank-device-check.{json,rc}) for a later call.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
b=${BUNDLE:-.cache/device-bundle}
# shellcheck source=scripts/device-env.sh
source scripts/device-env.sh "$b" device-check || exit 1
out="$OUT_DIR"

echo "== CUDA tests"
timeout "${TESTS_TIMEOUT:-150}" "$BIN/engine-cuda-tests" --test-threads 1 2>&1 | tee "$out/cuda-tests.txt"
tests_rc=${PIPESTATUS[0]}
echo "CUDA tests exit status: $tests_rc"

echo "== device-check"
timeout "${CHECK_TIMEOUT:-330}" "$BIN/ocrank" device-check --device cuda \
    --tokenizer "$b/tokenizer" --pools "$b/dl19-bm25-top100.json" "$@" \
    --out "$out/device-check.json"
check_rc=$?
echo "device-check exit status: $check_rc"
cp "$out/device-check.json" /tmp/ocrank-device-check.json 2>/dev/null
[ "$tests_rc" -eq 0 ] && [ "$check_rc" -eq 0 ]
rc=$?
echo "$rc" > /tmp/ocrank-device-check.rc
exit $rc
