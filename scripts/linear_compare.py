#!/usr/bin/env python3
"""Joins `bench_linear`'s `linear.csv` with `triton_linear_bench.py`'s `triton-linear.csv` into
a Markdown table: TFLOPS of each provider and ours over each, with geometric means per
activation. The issue's target is ours / `torch_separate` (cuBLAS followed by separate bias and
activation kernels) >= 1.05 with GELU.

    python3 scripts/linear_compare.py OURS_DIR TRITON_DIR [--out FILE]
"""

import argparse
import csv
import math
import os
import sys

PROVIDERS = ["torch_mm", "torch_separate", "torch_addmm", "triton"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("triton")
    ap.add_argument("--out")
    args = ap.parse_args()
    key = lambda r: (int(r["m"]), int(r["n"]), int(r["k"]), r["layout"], r["activation"])
    ours = {}
    with open(os.path.join(args.ours, "linear.csv")) as f:
        for r in csv.DictReader(f):
            ours[key(r)] = float(r["tflops"])
    theirs = {}
    with open(os.path.join(args.triton, "triton-linear.csv")) as f:
        for r in csv.DictReader(f):
            theirs.setdefault(key(r), {})[r["provider"]] = float(r["tflops"])
    # cuBLAS alone is timed once per shape and layout (activation none).
    mm = {k[:4]: v["torch_mm"] for k, v in theirs.items() if "torch_mm" in v}
    head = "| M | N | K | layout | activation | ours | " + " | ".join(PROVIDERS) + " | " + " | ".join(f"ours/{p}" for p in PROVIDERS) + " |"
    lines = [head, "|" + "---|" * (6 + 2 * len(PROVIDERS))]
    ratios = {}
    fmt = lambda v, p=1: f"{v:.{p}f}" if v is not None else "—"
    for k in sorted(ours, key=lambda k: (k[4], k[3], k[0], k[1], k[2])):
        t = dict(theirs.get(k, {}))
        t["torch_mm"] = mm.get(k[:4])
        rs = [ours[k] / t[p] if t.get(p) else None for p in PROVIDERS]
        for p, r in zip(PROVIDERS, rs):
            if r:
                ratios.setdefault((k[4], p), []).append(r)
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {ours[k]:.1f} | " + " | ".join(fmt(t.get(p)) for p in PROVIDERS) + " | " + " | ".join(fmt(r, 2) for r in rs) + " |")
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
    lines += ["", "| activation | " + " | ".join(f"geomean ours/{p}" for p in PROVIDERS) + " |", "|---|" + "---|" * len(PROVIDERS)]
    for act in sorted({k[4] for k in ours}):
        lines.append(f"| {act} | " + " | ".join(f"{geo(ratios.get((act, p), [])):.3f}" for p in PROVIDERS) + " |")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
