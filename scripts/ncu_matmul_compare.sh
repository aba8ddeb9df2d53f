#!/usr/bin/env bash
# Nsight Compute side by side at one square size (default 4096): our autotuned matmul instance,
# Triton's tutorial kernel with the same config (128x256x64, 8 warps, 3 stages) and cuBLAS
# (torch.matmul). Runs on a GPU machine from the repository root with target/gpu-bundle present.
#   scripts/ncu_matmul_compare.sh [SIZE] [OUR_INSTANCE]      (logs to $OUT or ./gpu-logs)
set -uo pipefail
source "$(dirname "$0")/ncu_env.sh"
metrics=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic
sections="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis"
echo "=== ours: $inst"
KERNEL_CACHE_DIR=$(mktemp -d) "$ncu" -k "regex:^${inst}\$" -c 1 $sections --metrics "$metrics" \
    target/gpu-bundle/bin/matmul --size "$size" "$size" "$size" >"$out/ncu-ours.txt" 2>&1
grep -v '^autotuning' "$out/ncu-ours.txt" | tail -n 120
cat >"$out/triton_one.py" <<PY
import sys, torch, triton
sys.path.insert(0, "scripts")
import triton_matmul_bench as t
n = $size
a = torch.randn((n, n), device="cuda", dtype=torch.float16)
b = torch.randn((n, n), device="cuda", dtype=torch.float16)
c = torch.empty((n, n), device="cuda", dtype=torch.float16)
grid = (triton.cdiv(n, 128) * triton.cdiv(n, 256),)
for _ in range(3):
    t.matmul_kernel.fn[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8,
        ACTIVATION="", num_warps=8, num_stages=3)
torch.matmul(a, b, out=c)
torch.cuda.synchronize()
PY
echo "=== triton: 128x256x64, 8 warps, 3 stages"
"$ncu" -k "regex:^matmul_kernel\$" -s 2 -c 1 $sections --metrics "$metrics" python3 "$out/triton_one.py" >"$out/ncu-triton.txt" 2>&1
tail -n 120 "$out/ncu-triton.txt"
echo "=== cublas"
"$ncu" -k "regex:gemm|nvjet|xmma|cutlass" -c 1 $sections --metrics "$metrics" python3 "$out/triton_one.py" >"$out/ncu-cublas.txt" 2>&1
tail -n 120 "$out/ncu-cublas.txt"
