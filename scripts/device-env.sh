# Sourced on the GPU machine by scripts/device-check.sh and
# scripts/device-train.sh, from the repository root:
#
#   source scripts/device-env.sh BUNDLE_DIR LOG_NAME
#
# Sets OUT_DIR ($OUT, the folder that comes back) and copies all further
# output to OUT_DIR/LOG_NAME.log; unpacks the carried binaries (*.gz) into
# BIN; points LD_LIBRARY_PATH at the machine's CUDA libraries and writes
# OUT_DIR/environment.txt (GPU, driver, which libraries were found, ldd).
# The libraries (cuBLAS, cuBLASLt, cuRAND, NVRTC, cudart) come from the
# PyTorch environment of the machine's python3, then the driver's and the
# system's folders, then the bundle's own cudart.
_bundle="$1"
OUT_DIR="${OUT:-/tmp/ocrank-device-out}"
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/$2.log") 2>&1
_out="$OUT_DIR"
if [ ! -f "$_bundle/ocrank.gz" ]; then
    echo "no bundle at $_bundle: run scripts/device-bundle.sh here (--train for training) and carry it"
    return 1
fi
BIN=/tmp/ocrank-device
mkdir -p "$BIN"
for _gz in "$_bundle"/*.gz; do
    _name="$(basename "$_gz" .gz)"
    gzip -dc "$_gz" > "$BIN/$_name" && chmod +x "$BIN/$_name" || return 1
done
_libdirs="$(python3 - <<'PY' 2>/dev/null
import glob, os, sys
dirs = []
for p in sys.path:
    for pat in ("nvidia/*/lib", "nvidia/cu*/lib", "torch/lib"):
        dirs += [d for d in glob.glob(os.path.join(p, pat)) if os.path.isdir(d)]
print(":".join(dict.fromkeys(dirs)))
PY
)"
for _d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/local/cuda/lib64 \
    /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$_d" ] && _libdirs="${_libdirs:+$_libdirs:}$_d"
done
export LD_LIBRARY_PATH="${_libdirs:+$_libdirs:}${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(cd "$_bundle" && pwd)/lib"
{
    echo "== date"; date -u
    echo "== MANIFEST"; cat "$_bundle/MANIFEST"
    echo "== nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    echo "== python3"; python3 -c 'import sys, torch; print(sys.executable, torch.__version__, torch.version.cuda)' 2>&1
    echo "== LD_LIBRARY_PATH"; echo "$LD_LIBRARY_PATH" | tr ':' '\n'
    echo "== libraries"
    for _lib in libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libnvrtc.so.13; do
        _hit="$(for _d in $(echo "$LD_LIBRARY_PATH" | tr ':' ' ') /usr/lib/x86_64-linux-gnu; do
            ls "$_d/$_lib" 2>/dev/null; done | head -n 2 | tr '\n' ' ')"
        echo "$_lib: ${_hit:-NOT FOUND}"
    done
    echo "== ldd ocrank"; ldd "$BIN/ocrank" 2>&1
} > "$_out/environment.txt" 2>&1
cat "$_out/environment.txt"
unset _bundle _out _gz _name _libdirs _d _lib _hit
