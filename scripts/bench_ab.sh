#!/usr/bin/env bash
# A/B of an environment variable on the matmul benchmark, on a GPU machine from the repository
# root with target/gpu-bundle present: runs bench_matmul once per value and round, values
# alternating (each with its own autotuning cache, so that every value picks its own configs),
# then prints ours / cuBLAS per size and value (each run's ratios come from its own cuBLAS).
#   scripts/bench_ab.sh VAR "v1 v2 ..." SIZES [ROUNDS] [extra bench_matmul arguments...]
#   e.g. scripts/bench_ab.sh KERNEL_SPLIT "off auto" 2304,3072 2 --rep-ms 50
# Logs and each run's CSV go to $OUT/ab (or ./gpu-logs/ab).
set -uo pipefail
var=$1 values=$2 sizes=$3 rounds=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
out=${OUT:-gpu-logs}/ab
mkdir -p "$out"
export KERNEL_PTX_DIR=$PWD/target/gpu-bundle/ptx
for r in $(seq 1 "$rounds"); do
    for v in $values; do
        echo "=== $var=$v round $r ($(date -u +%H:%M:%S))"
        env "$var=$v" KERNEL_CACHE_DIR="$out/cache-$v" target/gpu-bundle/bench/bench_matmul --square-only \
            --sizes "$sizes" --out "$out/$v-$r" "$@" >"$out/$v-$r.log" 2>&1 || { echo "failed:"; tail -n 20 "$out/$v-$r.log"; }
    done
done
python3 - "$out" "$values" "$rounds" <<'PY'
import csv, math, sys
out, values, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
def load(v, r):
    rows = {}
    try:
        for row in csv.DictReader(open(f"{out}/{v}-{r}/matmul-points.csv")):
            rows[(int(row["M"]), row["provider"])] = float(row["tflops"])
    except FileNotFoundError:
        pass
    return rows
runs = {(v, r): load(v, r) for v in values for r in range(1, rounds + 1)}
sizes = sorted({m for rows in runs.values() for (m, _) in rows})
print("ours / cuBLAS (ours+fused / cuBLAS+separate) per run; TFLOPS of ours in brackets")
print("size " + " ".join(f"{v}#{r}".rjust(26) for v in values for r in range(1, rounds + 1)))
logs = {key: [] for key in runs}
for m in sizes:
    cells = []
    for key, rows in runs.items():
        c, o, cr, orl = (rows.get((m, p)) for p in ("cublas", "ours", "cublas+relu", "ours+relu"))
        if c and o and cr and orl:
            logs[key].append((math.log(o / c), math.log(orl / cr)))
            cells.append(f"{o / c:.3f} ({orl / cr:.3f}) [{o:6.1f}]".rjust(26))
        else:
            cells.append("-".rjust(26))
    print(f"{m:5d} " + " ".join(cells))
print("geo  " + " ".join((f"{math.exp(sum(a for a, _ in l) / len(l)):.3f} ({math.exp(sum(b for _, b in l) / len(l)):.3f})" if l else "-").rjust(26) for l in logs.values()))
PY
