#!/usr/bin/env python3
# matmul_ab.py OLD.log NEW.log: compares two sets of bench_matmul runs (each log: the stdout of one
# or more runs appended) point by point: per point the median TFLOPS of "Ours" over the runs of each
# log, cuBLAS and Triton (same process) from both; prints new/old, new/cuBLAS, new/Triton and their
# geometric means.
import sys, re, math, statistics as st
def tables(path):
    d = {}
    cur = None; cols = None
    for l in open(path):
        l = l.rstrip('\n')
        if l in ('matmul-performance:', 'matmul-nonsquare:'):
            cur = l[:-1]; cols = None; continue
        if cur and cols is None:
            cols = re.split(r'\s{2,}', l.strip()); continue
        if cur:
            if not l.strip(): cur = None; continue
            f = l.split()
            try: vals = [float(x) for x in f[1:]]
            except ValueError: cur = None; continue
            key = (cur, f[1])
            d.setdefault(key, []).append(dict(zip(cols, vals)))
    return d
old, new = tables(sys.argv[1]), tables(sys.argv[2])
def med(rows, c):
    v = [r.get(c) for r in rows if r.get(c) is not None and not math.isnan(r.get(c))]
    return st.median(v) if v else float('nan')
g = {'new/old': [], 'new/cuBLAS': [], 'new/Triton': [], 'old/Triton': []}
print(f"{'point':28} {'cuBLAS':>8} {'Triton':>8} {'old':>8} {'new':>8} {'new/old':>8} {'new/cuB':>8} {'new/Tri':>8}   runs")
for key in sorted(new, key=lambda k: (k[0], float(k[1]))):
    n = new[key]; o = old.get(key, [])
    cub = med(n + o, 'cuBLAS'); tri = med(n + o, 'Triton (same process)')
    on, nn = med(o, 'Ours'), med(n, 'Ours')
    print(f"{key[0][7:11]+' '+key[1]:28} {cub:8.1f} {tri:8.1f} {on:8.1f} {nn:8.1f} {nn/on:8.3f} {nn/cub:8.3f} {nn/tri:8.3f}   {[round(r['Ours'],1) for r in o]} {[round(r['Ours'],1) for r in n]}")
    for k, v in (('new/old', nn/on), ('new/cuBLAS', nn/cub), ('new/Triton', nn/tri), ('old/Triton', on/tri)):
        if v == v: g[k].append(v)
for k, v in g.items():
    if v: print(f"geomean {k}: {math.exp(sum(map(math.log, v))/len(v)):.3f} over {len(v)} points")
