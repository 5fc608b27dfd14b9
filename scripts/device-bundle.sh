#!/usr/bin/env bash
# Build here what the GPU machine runs, and gather it in .cache/device-bundle/
# (git-ignored; the device call carries it: carry [".cache/device-bundle"]).
#
#   scripts/device-bundle.sh           the device check (scripts/device-check.sh)
#   scripts/device-bundle.sh --train   also the training comparison
#                                      (scripts/device-train.sh): .cache/device-train/
#                                      and the model in two halves,
#                                      .cache/device-model-{1,2}/part
#   scripts/device-bundle.sh --init S  only the width-4 students of training
#                                      seed S that a width-10 stage starts
#                                      from (scripts/device-train.sh stage):
#                                      .cache/device-init/ (56 MiB, a call of
#                                      its own); with --train, both
#
# The bundle holds:
#   ocrank.gz           release build with --features cuda, stripped and
#                       gzipped (69 MB -> 21 MB: the PTX and sm_90 kernels)
#   engine-cuda-tests.gz  the CUDA test binary (crates/engine/tests/cuda.rs)
#   lib/libcudart.so.13 the CUDA runtime the binary links to (a fallback: the
#                       device's PyTorch environment has its own)
#   tokenizer/          SmolLM2's tokenizer and chat template (the 94 MB model
#                       cannot travel: the device check uses random weights)
#   dl19-bm25-top100.json  the DL19 pools (texts for real prompts)
#   MANIFEST            commit, build command, sizes and SHA-256 of each file
# Needs: the model (scripts/setup.sh --no-build), ../shared/data, PyPI access
# the first time (scripts/cuda-env.sh fetches nvcc). The first CUDA build
# took 9 min 20 s on 2 cores (2026-12-04, from a cold cache; candle's kernels).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"
train=0 init=""
while [ $# -gt 0 ]; do
    case "$1" in
        --train) train=1 ;;
        --init) init=${2:-}; shift
            case "$init" in 0|1) ;; *) echo "device-bundle: --init takes a training seed of the width-4 students, 0 or 1" >&2; exit 2 ;; esac ;;
        *) echo "device-bundle: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$init" ]; then
    # The three width-4 students of that seed (report-lib's w4_start), under
    # the names scripts/width10_stage.sh looks for, with their SHA-256.
    # shellcheck source=scripts/report-lib.sh
    source scripts/report-lib.sh
    i="$root/.cache/device-init"
    rm -rf "$i"
    mkdir -p "$i/adapters"
    for obj in oc-sft-aug-spread single-order perm-aug; do
        name=$(w4_start "$init" "$obj")
        from=reports/training/width4/adapters/$name
        [ -f "$from/adapter_model.safetensors" ] || { echo "device-bundle: no adapter $from" >&2; exit 1; }
        cp -r "$from" "$i/adapters/"
    done
    echo "$init" > "$i/seed"
    (cd "$i" && find adapters -type f | sort | xargs sha256sum > SHA256SUMS)
    size=$(du -sm "$i" | cut -f1)
    [ "$size" -lt 62 ] || { echo "device-bundle: the init bundle ($size MiB) is too large to carry" >&2; exit 1; }
    echo "device-bundle: width-4 students of seed $init ready in .cache/device-init ($size MiB; carry it in a call of its own)"
    [ "$train" = 1 ] || exit 0
fi
# shellcheck source=scripts/cuda-env.sh
source scripts/cuda-env.sh
# One cargo invocation builds the binary and the CUDA tests: two invocations
# with different dev-dependencies resolve features differently and would
# compile candle's CUDA kernels twice.
cargo test --release --no-run -p ocrank-engine -p ocrank \
    --features ocrank-engine/cuda,ocrank/cuda --message-format=json > target-cuda/bundle-build.json
# The executables of this build: the ocrank binary and the `cuda` test.
read -r bin tests < <(python3 - target-cuda/bundle-build.json <<'PY'
import json, sys
found = {}
for line in open(sys.argv[1]):
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        # (`cargo test` also builds the binary's own unit-test harness, a
        # "bin" target too: the binary is the one not built as a test.)
        if t.get("kind") == ["bin"] and t.get("name") == "ocrank" and not m["profile"]["test"]:
            found["bin"] = m["executable"]
        elif t.get("kind") == ["test"] and t.get("name") == "cuda":
            found["tests"] = m["executable"]
print(found.get("bin", "-"), found.get("tests", "-"))
PY
)
[ -x "$bin" ] && [ -x "$tests" ] || { echo "device-bundle: the binary or the CUDA tests were not built" >&2; exit 1; }
grep -q "Check and time the engine on a device" "$bin" ||
    { echo "device-bundle: $bin is not the ocrank command line" >&2; exit 1; }

b="$root/.cache/device-bundle"
rm -rf "$b"
mkdir -p "$b/lib"
strip -o "$b/ocrank" "$bin"
strip -o "$b/engine-cuda-tests" "$tests"
gzip -9 "$b/ocrank" "$b/engine-cuda-tests"
cp "$CUDA_PATH/lib/libcudart.so.13" "$b/lib/"
# The CUDA binary cannot start here (no libcuda.so.1 without a driver): the
# tokenizer is exported by the CPU build.
unset CARGO_TARGET_DIR
cargo run --quiet --release -p ocrank -- export-tokenizer \
    --model models/SmolLM2-135M-Instruct.Q4_1.gguf --out "$b/tokenizer"
cp ../shared/data/msmarco/dl19/bm25-top100.json "$b/dl19-bm25-top100.json"
{
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%FT%TZ) by scripts/device-bundle.sh"
    echo "cargo test --release --no-run -p ocrank-engine -p ocrank --features ocrank-engine/cuda,ocrank/cuda (CUDA_COMPUTE_CAP=$CUDA_COMPUTE_CAP, nvcc $(nvcc --version | grep -o 'release [0-9.]*'))"
    (cd "$b" && find . -type f ! -name MANIFEST | sort | xargs sha256sum)
} > "$b/MANIFEST"
du -sh "$b"
size=$(du -sm "$b" | cut -f1)
[ "$size" -lt 60 ] || { echo "device-bundle: $size MiB is too large to carry (64 MiB with the tree)" >&2; exit 1; }
echo "device-bundle: ready in .cache/device-bundle ($size MiB)"

[ "$train" = 1 ] || exit 0
# The training comparison: binary, data, labels (made here: the GPU machine
# has no MiniLM), and the model in two halves of under 64 MiB each.
t="$root/.cache/device-train"
rm -rf "$t" "$root/.cache/device-model-1" "$root/.cache/device-model-2"
mkdir -p "$t/lib" "$root/.cache/device-model-1" "$root/.cache/device-model-2"
cp "$b/ocrank.gz" "$b/engine-cuda-tests.gz" "$b/MANIFEST" "$t/"
cp -r "$b/tokenizer" "$b/dl19-bm25-top100.json" "$t/"
cp "$b/lib/libcudart.so.13" "$t/lib/"
for set in dl19 dl21 dl22; do
    mkdir -p "$t/msmarco/$set"
    for f in bm25-top100.json qrels.txt; do
        [ -f "../shared/data/msmarco/$set/$f" ] && cp "../shared/data/msmarco/$set/$f" "$t/msmarco/$set/"
    done
done
D=../shared/data/msmarco
labels=runs/train/labels-minilm.jsonl
[ -f "$labels" ] || cargo run --quiet --release -p ocrank -- label --teacher embedding \
    --pools "$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json" --depth 20 \
    --calibration-pools "$D/dl21/bm25-top100.json" --calibration-qrels "$D/dl21/qrels.txt" \
    --out "$labels"
cp "$labels" "$t/labels-minilm.jsonl"
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
(cd models && sha256sum SmolLM2-135M-Instruct.Q4_1.gguf) > "$t/model.sha256"
half=$(( ($(stat -c %s "$model") + 1) / 2 ))
head -c "$half" "$model" > "$root/.cache/device-model-1/part"
tail -c +"$(( half + 1 ))" "$model" > "$root/.cache/device-model-2/part"
du -sh "$t" "$root/.cache/device-model-1" "$root/.cache/device-model-2"
size=$(du -sm "$t" | cut -f1)
[ "$size" -lt 50 ] || { echo "device-bundle: the training bundle ($size MiB) is too large to carry" >&2; exit 1; }
echo "device-bundle: training bundle ready (three calls: see scripts/device-train.sh)"
