#!/usr/bin/env bash
# Nsight Compute on the first launch of every matmul instance at one square size (default
# 1024): duration, throughput and stall breakdown of each config side by side, to see which
# config suits a size and where each spends its time. Runs on a GPU machine from the
# repository root with target/gpu-bundle present.
#   scripts/ncu_matmul_configs.sh [SIZE] [ACTIVATION]     (ACTIVATION: none (default), leaky_relu)
# Writes $OUT/ncu-configs-SIZE.txt (or ./gpu-logs) and prints one line per instance.
set -uo pipefail
source "$(dirname "$0")/ncu_env.sh"
act=${2:-none}
log="$out/ncu-configs-$size.txt"
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second,smsp__inst_executed.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
# `--kernel-id ::regex:NAME:1`: the first invocation of each kernel whose name matches.
KERNEL_CACHE_DIR=$(mktemp -d) "$ncu" --kernel-id "::regex:^matmul_kernel__${act}__c[0-9]+\$:1" \
    --section WarpStateStats --metrics "$metrics" \
    target/gpu-bundle/bin/matmul --size "$size" "$size" "$size" >"$log" 2>&1
grep -E '^  matmul_kernel__|gpu__time_duration|sm__throughput|gmma_cycles|lts__t_bytes|dram__bytes|inst_executed.sum |grid_size|registers_per|warps_active|Stall|^    Warp Cycles' "$log" | head -n 400
