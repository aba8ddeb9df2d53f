#!/usr/bin/env python3
"""Joins `bench_attention`'s `attention.csv` with `triton_attention_bench.py`'s
`triton-attention.csv` into a Markdown table: TFLOPS of each provider and ours over each, with
geometric means per head dimension and causality.

    python3 scripts/attention_compare.py OURS_DIR TRITON_DIR [--out FILE]
"""

import argparse
import csv
import math
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("triton")
    ap.add_argument("--out")
    args = ap.parse_args()
    ours = {}
    with open(os.path.join(args.ours, "attention.csv")) as f:
        for r in csv.DictReader(f):
            ours[(r["head_dim"], r["causal"], r["n_ctx"])] = float(r["ours_tflops"])
    theirs = {}
    with open(os.path.join(args.triton, "triton-attention.csv")) as f:
        for r in csv.DictReader(f):
            theirs.setdefault((r["head_dim"], r["causal"], r["n_ctx"]), {})[r["provider"]] = float(r["tflops"])
    lines = ["| head_dim | causal | n_ctx | ours TFLOPS | Triton | torch SDPA | ours/Triton | ours/torch |", "|---|---|---|---|---|---|---|---|"]
    groups = {}
    for key in sorted(ours, key=lambda k: (int(k[0]), k[1], int(k[2]))):
        t = theirs.get(key, {})
        tr, to = t.get("triton"), t.get("torch")
        rt = ours[key] / tr if tr else None
        ro = ours[key] / to if to else None
        fmt = lambda x, p=1: f"{x:.{p}f}" if x is not None else "—"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {ours[key]:.1f} | {fmt(tr)} | {fmt(to)} | {fmt(rt, 2)} | {fmt(ro, 2)} |")
        g = groups.setdefault((key[0], key[1]), ([], []))
        if rt:
            g[0].append(rt)
        if ro:
            g[1].append(ro)
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
    lines.append("")
    lines.append("| head_dim | causal | geomean ours/Triton | geomean ours/torch |")
    lines.append("|---|---|---|---|")
    allt, allo = [], []
    for (d, c), (rt, ro) in sorted(groups.items(), key=lambda kv: (int(kv[0][0]), kv[0][1])):
        lines.append(f"| {d} | {c} | {geo(rt):.2f} | {geo(ro):.2f} |")
        allt += rt
        allo += ro
    lines.append(f"| all | all | {geo(allt):.2f} | {geo(allo):.2f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
