#!/usr/bin/env bash
# Per-SASS-instruction stall samples of one matmul instance (Nsight Compute source page, CSV).
#   scripts/ncu_matmul_source.sh [SIZE] [OUR_INSTANCE]   (writes $OUT/ncu-source-*.csv)
set -uo pipefail
source "$(dirname "$0")/ncu_env.sh"
KERNEL_CACHE_DIR=$(mktemp -d) "$ncu" -k "regex:^${inst}\$" -c 1 --section SourceCounters --section WarpStateStats \
    --section InstructionStats -o "$out/ncu-$inst" -f target/gpu-bundle/bin/matmul --size "$size" "$size" "$size" >"$out/ncu-source-run.txt" 2>&1
"$ncu" -i "$out/ncu-$inst.ncu-rep" --page source --csv --print-source sass >"$out/ncu-source-$inst.csv" 2>&1
"$ncu" -i "$out/ncu-$inst.ncu-rep" --page details >"$out/ncu-details-$inst.txt" 2>&1
gzip -f "$out/ncu-source-$inst.csv"
ls -la "$out"
