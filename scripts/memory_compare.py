#!/usr/bin/env python3
"""Joins `bench_memory`'s `memory.csv` and `triton_memory_bench.py`'s `triton-memory.csv` (one
GPU) into a markdown table: GB/s of ours, of each baseline (Triton's tutorial kernels, PyTorch)
and of the copy, the ratios ours / baseline and ours / copy, and their geometric means per
kernel.

    python3 scripts/memory_compare.py OURS_DIR_OR_CSV TRITON_DIR_OR_CSV [--out FILE.md]

Rows are matched on (kernel, dtype, shape); our `softmax_online` rows are compared with the
baselines' `softmax` at the same shape. The copy row compares our `cuMemcpy` with
`torch.Tensor.copy_`. Only the standard library is needed.
"""

import argparse
import csv
import math
import os
import sys

# Baseline providers in column order, with their headers.
PROVIDERS = [("triton", "Triton"), ("triton-rowgrid", "Triton (row grid)"), ("torch", "PyTorch")]


def read(path, name):
    if os.path.isdir(path):
        path = os.path.join(path, name)
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("ours", help="memory.csv or the --out directory of bench_memory")
    p.add_argument("theirs", help="triton-memory.csv or the --out directory of triton_memory_bench.py")
    p.add_argument("--out", help="write the markdown here too")
    args = p.parse_args()
    ours = read(args.ours, "memory.csv")
    theirs = read(args.theirs, "triton-memory.csv")
    base = {(r["kernel"], r["dtype"], r["shape"], r["provider"]): float(r["gbps"]) for r in theirs}
    providers = [(k, h) for k, h in PROVIDERS if any(r["provider"] == k for r in theirs)]
    copy_torch = next((float(r["gbps"]) for r in theirs if r["kernel"] == "copy"), None)

    head = ["kernel", "dtype", "shape", "ours GB/s"] + [f"{h} GB/s" for _, h in providers] + ["copy GB/s"]
    head += [f"ours / {h}" for _, h in providers] + ["ours / copy"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios = {}  # kernel -> column -> [ratio]
    for r in ours:
        kernel, dtype, shape = r["kernel"], r["dtype"], r["shape"]
        g, copy = float(r["ours_gbps"]), float(r["copy_gbps"])
        lookup = "softmax" if kernel == "softmax_online" else kernel
        theirs_g = [base.get((lookup, dtype, shape, k)) for k, _ in providers]
        if kernel == "copy":
            # Ours is the copy: compare it with torch's copy_ only.
            theirs_g = [copy_torch if k == "torch" else None for k, _ in providers]
        row_ratios = [g / t if t else None for t in theirs_g] + [g / copy if copy else None]
        for (col, _), x in zip(providers + [("copy", "copy")], row_ratios):
            if x is not None:
                ratios.setdefault(kernel, {}).setdefault(col, []).append(x)
        cells = [kernel, dtype, shape, fmt(g)] + [fmt(t) for t in theirs_g] + [fmt(copy)]
        cells += [fmt(x, 3) for x in row_ratios]
        lines.append("| " + " | ".join(cells) + " |")

    lines += ["", "Geometric means of the ratios, per kernel:", ""]
    cols = providers + [("copy", "copy")]
    lines.append("| kernel | " + " | ".join(f"ours / {h}" for _, h in cols) + " |")
    lines.append("|---|" + "---|" * len(cols))
    for kernel, by_col in ratios.items():
        lines.append(f"| {kernel} | " + " | ".join(fmt(geomean(by_col.get(c, [])), 3) for c, _ in cols) + " |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
