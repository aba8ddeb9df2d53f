#!/usr/bin/env bash
# A/B of two builds of the kernels on the matmul benchmark, on a GPU machine from the repository
# root: each bundle (a tarball of target/gpu-bundle, e.g. `tar czf b.tgz -C target gpu-bundle`,
# or a directory holding an unpacked `gpu-bundle`) is unpacked into its own directory and its
# bench_matmul runs once per round, bundles alternating, each with its own autotuning cache; then ours / cuBLAS and, with Triton's exported
# kernels, ours / Triton per size and run (each run's ratios from its own cuBLAS and Triton).
#   scripts/bench_ab_bundles.sh A.tgz B.tgz SIZES [ROUNDS] [extra bench_matmul arguments...]
#   e.g. scripts/bench_ab_bundles.sh base.tgz new.tgz 256,512,1024,4096 2 --triton-kernels /tmp/tk
# Logs and each run's CSV go to $OUT/abb (or ./gpu-logs/abb).
set -uo pipefail
a=$1 b=$2 sizes=$3 rounds=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
out=${OUT:-gpu-logs}/abb
work=$(mktemp -d)
mkdir -p "$out"
for v in A B; do
    tgz=$a
    [ "$v" = B ] && tgz=$b
    if [ -d "$tgz/gpu-bundle" ]; then
        # A directory holding an unpacked gpu-bundle: used in place.
        ln -s "$(cd "$tgz" && pwd)" "$work/$v" || exit 1
    else
        mkdir -p "$work/$v" && tar xzf "$tgz" -C "$work/$v" || { echo "cannot unpack $tgz"; exit 1; }
    fi
done
for r in $(seq 1 "$rounds"); do
    for v in A B; do
        echo "=== bundle $v round $r ($(date -u +%H:%M:%S))"
        KERNEL_PTX_DIR="$work/$v/gpu-bundle/ptx" KERNEL_CACHE_DIR="$out/cache-$v" KERNEL_PRINT_AUTOTUNING=1 \
            "$work/$v/gpu-bundle/bench/bench_matmul" --sizes "$sizes" --out "$out/$v-$r" "$@" >"$out/$v-$r.log" 2>&1 \
            || { echo "failed:"; tail -n 20 "$out/$v-$r.log"; }
    done
done
python3 - "$out" "$rounds" <<'PY'
import csv, math, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(v, r):
    rows = {}
    try:
        for row in csv.DictReader(open(f"{out}/{v}-{r}/matmul-points.csv")):
            rows[(row["set"], int(row["M"]), int(row["N"]), int(row["K"]), row["provider"])] = float(row["median_ms"])
    except FileNotFoundError:
        pass
    return rows
runs = {(v, r): load(v, r) for v in "AB" for r in range(1, rounds + 1)}
shapes = sorted({k[:4] for rows in runs.values() for k in rows})
print("ours / cuBLAS [ours / Triton] per run (time ratios inverted: > 1 is faster than the baseline)")
print(f"{'shape':>22} " + " ".join(f"{v}#{r}".rjust(18) for (v, r) in runs))
logs = {key: {"cublas": [], "triton": []} for key in runs}
for s in shapes:
    cells = []
    for key, rows in runs.items():
        o, c, t = (rows.get(s + (p,)) for p in ("ours", "cublas", "triton"))
        cell = "-"
        if o and c:
            logs[key]["cublas"].append((s, math.log(c / o)))
            cell = f"{c / o:.3f}"
            if t:
                logs[key]["triton"].append((s, math.log(t / o)))
                cell += f" [{t / o:.3f}]"
        cells.append(cell.rjust(18))
    print(f"{'x'.join(map(str, s[1:])):>22} " + " ".join(cells))
def geo(l, lo, hi):
    x = [v for (s, v) in l if s[0] == "square" and lo <= s[1] <= hi]
    return f"{math.exp(sum(x) / len(x)):.3f}" if x else "-"
for lo, hi in ((256, 1024), (2048, 8192)):
    print(f"{f'geo {lo}-{hi}':>22} " + " ".join(f"{geo(l['cublas'], lo, hi)} [{geo(l['triton'], lo, hi)}]".rjust(18) for l in logs.values()))
PY
rm -rf "$work"
