#!/usr/bin/env bash
# Builds this example with candle's CUDA backend on a machine without a CUDA toolkit or GPU
# (the binary then runs on a GPU machine with CUDA 13, see README.md):
#
# - nvcc, the CUDA headers and libcudart come from NVIDIA's PyPI wheels (CUDA 13.0, whose
#   PTX the 580 drivers load), installed into a scratch virtual environment;
# - candle-core's `cuda` feature makes cudarc link libcuda, cuBLAS(Lt), cuRAND and NVRTC at
#   build time: stub libraries with the right sonames stand in for them (generated from
#   cudarc's own declarations); at run time the real ones are loaded (the driver's libcuda,
#   and for the others PyTorch's copies, or a CUDA 13 toolkit's).
#
#   bash examples/interop-candle/build-cuda.sh [SCRATCH_DIR]   # default /tmp/candle-cuda
#
# Prints the path of the binary. Needs python3 with venv, pip access to PyPI, gcc, cargo.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="${1:-/tmp/candle-cuda}"
mkdir -p "$scratch"
venv="$scratch/venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-nvvm==13.0.88
fi
cuda="$(echo "$venv"/lib/python3*/site-packages/nvidia/cu13)"
stubs="$scratch/stubs"
mkdir -p "$stubs"
cudarc_src="$(cargo metadata --format-version 1 --manifest-path "$here/Cargo.toml" --features cuda \
  | python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "cudarc").rsplit("/", 1)[0])')/src"
for spec in driver:cuda:libcuda.so.1 cublas:cublas:libcublas.so.13 cublaslt:cublasLt:libcublasLt.so.13 \
            curand:curand:libcurand.so.10 nvrtc:nvrtc:libnvrtc.so.13; do
  IFS=: read -r module lib soname <<< "$spec"
  grep -oE '^pub unsafe fn [A-Za-z0-9_]+\(' "$cudarc_src/$module/sys/mod.rs" \
    | sed -E 's/pub unsafe fn ([A-Za-z0-9_]+)\(/void \1(void) {}/' | sort -u > "$stubs/$lib.c"
  gcc -shared -fPIC -o "$stubs/lib$lib.so" -Wl,-soname,"$soname" "$stubs/$lib.c"
done
ln -sf "$cuda/lib/libcudart.so.13" "$stubs/libcudart.so"
cd "$here"
NVCC="$cuda/bin/nvcc" PATH="$cuda/bin:$PATH" CUDA_HOME="$cuda" CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}" \
  RUSTFLAGS="-L native=$stubs" CARGO_TARGET_DIR="$scratch/target" \
  cargo build --release --features cuda >&2
echo "$scratch/target/release/kernel-interop-candle"
