#!/usr/bin/env python3
"""Summarize an Nsight Compute source page (CSV from scripts/ncu_matmul_source.sh) by region.

A region is a run of consecutive executed SASS instructions with one execution count (the
prologue, a loop body, warp 0's copy issue, the epilogue). For each region with at least
--min-pct of the warp-stall samples it prints the instruction range, the warp-level execution
count, the instruction count, the samples and the top stall reasons, and the region's first
instruction.

    python3 scripts/ncu_regions.py ncu-source-INSTANCE.csv[.gz] [--min-pct 0.5]
"""
import argparse
import csv
import gzip
import sys


def rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        lines = f.read().splitlines()
    # The first line names the kernel; the header follows.
    start = next(i for i, l in enumerate(lines) if l.startswith('"Address"'))
    return list(csv.DictReader(lines[start:]))


def num(s):
    try:
        return float(s.replace(",", ""))
    except (ValueError, AttributeError):
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--min-pct", type=float, default=0.5)
    a = ap.parse_args()
    rs = rows(a.csv)
    stall_cols = [c for c in rs[0].keys() if c.startswith("stall_") and "Not Issued" not in c]
    total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rs) or 1.0
    insts = sum(num(r["Instructions Executed"]) for r in rs)
    print(f"total samples {int(total)}, warp-level instructions executed {int(insts)}")
    regions = []
    cur = None
    for i, r in enumerate(rs):
        ex = num(r["Instructions Executed"])
        if ex == 0:
            cur = None
            continue
        if cur is None or cur["exec"] != ex:
            cur = {"first": i, "last": i, "exec": ex, "samples": 0.0, "src": r["Source"].strip(), "stalls": {}}
            regions.append(cur)
        cur["last"] = i
        cur["samples"] += num(r["Warp Stall Sampling (All Samples)"])
        for c in stall_cols:
            v = num(r[c])
            if v:
                cur["stalls"][c] = cur["stalls"].get(c, 0.0) + v
    for g in regions:
        pct = 100.0 * g["samples"] / total
        if pct < a.min_pct:
            continue
        top = sorted(g["stalls"].items(), key=lambda kv: -kv[1])[:3]
        tops = ", ".join(f"{k[6:]} {100.0 * v / total:.1f}%" for k, v in top)
        n = g["last"] - g["first"] + 1
        print(f"{g['first']:6}-{g['last']:6} exec={int(g['exec']):8} n={n:4} samples={int(g['samples']):6} ({pct:5.1f}%)  [{tops}]  {g['src'][:60]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
