#!/usr/bin/env bash
# Runs on the GPU machine, in one device call, from the repository root, with
# the bundle of scripts/device-bundle.sh carried:
#
#   run(command="scripts/device-check.sh", carry=[".cache/device-bundle"], timeout_s=540)
#
# It finds the CUDA runtime libraries in the machine's PyTorch environment,
# runs the CUDA tests, then `ocrank device-check` (CPU-vs-GPU parity, scoring
# and training timings), and leaves under $OUT:
#   environment.txt     GPU, driver, libraries found, ldd of the binary
#   cuda-tests.txt      the CUDA test run
#   device-check.json   the measurements (rewritten after each one)
#   device-check.log    the whole output
# Nothing is built there. Each stage has its own time limit, so that a hang
# leaves time for the next stage and for the files to come back.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
b=.cache/device-bundle
out="${OUT:-/tmp/ocrank-device-out}"
mkdir -p "$out"
exec > >(tee -a "$out/device-check.log") 2>&1
[ -f "$b/ocrank.gz" ] || { echo "device-check: no bundle at $b (run scripts/device-bundle.sh here and carry it)"; exit 1; }
bin=/tmp/ocrank-device
mkdir -p "$bin"
for f in ocrank engine-cuda-tests; do
    gzip -dc "$b/$f.gz" > "$bin/$f" && chmod +x "$bin/$f" || exit 1
done

# The runtime libraries (cuBLAS, cuBLASLt, cuRAND, NVRTC, cudart) of the
# PyTorch environment, then the system's, then the bundle's cudart.
libdirs="$(python3 - <<'PY' 2>/dev/null
import glob, os, sys
dirs = []
for p in sys.path:
    for pat in ("nvidia/*/lib", "nvidia/cu*/lib", "torch/lib"):
        dirs += [d for d in glob.glob(os.path.join(p, pat)) if os.path.isdir(d)]
print(":".join(dict.fromkeys(dirs)))
PY
)"
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/local/cuda/lib64 \
    /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && libdirs="${libdirs:+$libdirs:}$d"
done
export LD_LIBRARY_PATH="${libdirs:+$libdirs:}${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(pwd)/$b/lib"
{
    echo "== date"; date -u
    echo "== MANIFEST"; cat "$b/MANIFEST"
    echo "== nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    echo "== python3"; python3 -c 'import sys, torch; print(sys.executable, torch.__version__, torch.version.cuda)' 2>&1
    echo "== LD_LIBRARY_PATH"; echo "$LD_LIBRARY_PATH" | tr ':' '\n'
    echo "== libraries"
    for lib in libcuda.so.1 libcudart.so.13 libcublas.so libcublasLt.so libcurand.so libnvrtc.so; do
        hit="$(for d in $(echo "$LD_LIBRARY_PATH" | tr ':' ' ') /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64; do
            ls "$d/$lib"* 2>/dev/null; done | head -n 3 | tr '\n' ' ')"
        echo "$lib: ${hit:-NOT FOUND}"
    done
    echo "== ldd ocrank"; ldd "$bin/ocrank" 2>&1
} > "$out/environment.txt" 2>&1
cat "$out/environment.txt"

echo "== CUDA tests"
timeout 150 "$bin/engine-cuda-tests" --test-threads 1 2>&1 | tee "$out/cuda-tests.txt"
tests_rc=${PIPESTATUS[0]}
echo "CUDA tests exit status: $tests_rc"

echo "== device-check"
timeout 330 "$bin/ocrank" device-check --device cuda \
    --tokenizer "$b/tokenizer" --pools "$b/dl19-bm25-top100.json" \
    --out "$out/device-check.json"
check_rc=$?
echo "device-check exit status: $check_rc"
[ "$tests_rc" -eq 0 ] && [ "$check_rc" -eq 0 ]
