# Source this file to build ocrank with `--features cuda` on a machine without
# a GPU or a system CUDA toolkit:
#
#   source scripts/cuda-env.sh
#   cargo build --release --features cuda -p ocrank
#
# It creates (once) a Python venv holding NVIDIA's CUDA 13.0 compiler from
# PyPI and points candle's build at it. What the build needs, and the traps:
# - nvcc, ptxas and the CUDA headers: nvidia-cuda-nvcc, nvidia-cuda-crt,
#   nvidia-cuda-runtime (also libcudart, which candle-kernels links to);
# - nvidia-nvvm pinned to 13.0: a newer NVVM (13.5) writes PTX ISA 9.5, which
#   ptxas 13.0 rejects, and the device's driver (580, CUDA 13.0) could not
#   load it either;
# - nvidia-cuda-cccl: candle's kernels include <nv/target>;
# - CUDA_COMPUTE_CAP=90: there is no GPU to detect here; the device is an
#   H200 (sm_90).
# The build goes to target-cuda/ so that the CPU build in target/ is kept.
# Environment: OCRANK_CUDA_VENV (default .cache/cuda-venv), PYTHON.

_ocrank_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OCRANK_CUDA_VENV="${OCRANK_CUDA_VENV:-$_ocrank_root/.cache/cuda-venv}"
if [ ! -x "$OCRANK_CUDA_VENV/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$OCRANK_CUDA_VENV" || return 1
    "$OCRANK_CUDA_VENV/bin/pip" install --quiet \
        "nvidia-cuda-nvcc==13.0.88" "nvidia-cuda-crt==13.0.88" "nvidia-nvvm==13.0.88" \
        "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-cccl==13.0.85" || return 1
fi
_ocrank_cu="$("$OCRANK_CUDA_VENV/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')" || return 1
# Link-time libraries in target-cuda/cudalib: libcudart.so (the wheel has
# only libcudart.so.13), and stubs of libcuda, libcublas(Lt), libcurand and
# libnvrtc with their real SONAMEs (see scripts/cuda-stubs.py): the GPU
# machine's driver and PyTorch environment provide the real ones.
_ocrank_lib="$_ocrank_root/target-cuda/cudalib"
mkdir -p "$_ocrank_lib"
ln -sf "$_ocrank_cu/lib/libcudart.so.13" "$_ocrank_lib/libcudart.so"
if [ ! -e "$_ocrank_lib/libcuda.so" ]; then
    _ocrank_cudarc="$(awk '/^name = "cudarc"/ { getline; gsub(/[" ]/, ""); sub("version=", ""); print }' "$_ocrank_root/Cargo.lock")"
    (cd "$_ocrank_root" && cargo fetch --quiet) || return 1
    _ocrank_src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"cudarc-$_ocrank_cudarc" | head -n 1)"
    python3 "$_ocrank_root/scripts/cuda-stubs.py" "$_ocrank_src" "$_ocrank_lib" || return 1
fi
export CUDA_ROOT="$_ocrank_cu" CUDA_PATH="$_ocrank_cu" CUDA_COMPUTE_CAP=90
export PATH="$_ocrank_cu/bin:$PATH"
export LIBRARY_PATH="$_ocrank_root/target-cuda/cudalib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export CARGO_TARGET_DIR="$_ocrank_root/target-cuda"
unset _ocrank_root _ocrank_cu _ocrank_lib _ocrank_cudarc _ocrank_src
