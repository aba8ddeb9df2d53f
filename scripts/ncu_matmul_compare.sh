#!/usr/bin/env bash
# Nsight Compute side by side at one square size (default 4096): one of our matmul instances,
# Triton's tutorial kernel with one config and cuBLAS (torch.matmul). Runs on a GPU machine from
# the repository root with target/gpu-bundle present.
#   [TRITON_CONFIG=BM,BN,BK,WARPS,STAGES | auto] scripts/ncu_matmul_compare.sh [SIZE] [OUR_INSTANCE]
# TRITON_CONFIG defaults to 128,256,64,8,3 (our c0); `auto` profiles the config Triton's
# autotuner picks at SIZE (found first, outside the profiler). Logs to $OUT or ./gpu-logs.
set -uo pipefail
source "$(dirname "$0")/ncu_env.sh"
metrics=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic
sections="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis"
echo "=== ours: $inst"
KERNEL_CACHE_DIR=$(mktemp -d) "$ncu" -k "regex:^${inst}\$" -c 1 $sections --metrics "$metrics" \
    target/gpu-bundle/bin/matmul --size "$size" "$size" "$size" >"$out/ncu-ours.txt" 2>&1
grep -v '^autotuning' "$out/ncu-ours.txt" | tail -n 120
cfg=${TRITON_CONFIG:-128,256,64,8,3}
if [ "$cfg" = auto ]; then
    cfg=$(python3 - "$size" <<'PY'
import sys, torch
sys.path.insert(0, "scripts")
import triton_matmul_bench as t
n = int(sys.argv[1])
a = torch.randn((n, n), device="cuda", dtype=torch.float16)
b = torch.randn((n, n), device="cuda", dtype=torch.float16)
t.matmul(a, b)
c = t.matmul_kernel.best_config
k = c.kwargs
print(f"{k['BLOCK_SIZE_M']},{k['BLOCK_SIZE_N']},{k['BLOCK_SIZE_K']},{c.num_warps},{c.num_stages}")
PY
)
fi
IFS=, read -r bm bn bk nw ns <<<"$cfg"
cat >"$out/triton_one.py" <<PY
import sys, torch, triton
sys.path.insert(0, "scripts")
import triton_matmul_bench as t
n = $size
a = torch.randn((n, n), device="cuda", dtype=torch.float16)
b = torch.randn((n, n), device="cuda", dtype=torch.float16)
c = torch.empty((n, n), device="cuda", dtype=torch.float16)
grid = (triton.cdiv(n, $bm) * triton.cdiv(n, $bn),)
for _ in range(3):
    t.matmul_kernel.fn[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        c.stride(0), c.stride(1), BLOCK_SIZE_M=$bm, BLOCK_SIZE_N=$bn, BLOCK_SIZE_K=$bk, GROUP_SIZE_M=8,
        ACTIVATION="", num_warps=$nw, num_stages=$ns)
torch.matmul(a, b, out=c)
torch.cuda.synchronize()
PY
echo "=== triton: ${bm}x${bn}x${bk}, $nw warps, $ns stages"
"$ncu" -k "regex:^matmul_kernel\$" -s 2 -c 1 $sections --metrics "$metrics" python3 "$out/triton_one.py" >"$out/ncu-triton.txt" 2>&1
tail -n 120 "$out/ncu-triton.txt"
echo "=== cublas"
"$ncu" -k "regex:gemm|nvjet|xmma|cutlass" -c 1 $sections --metrics "$metrics" python3 "$out/triton_one.py" >"$out/ncu-cublas.txt" 2>&1
tail -n 120 "$out/ncu-cublas.txt"
