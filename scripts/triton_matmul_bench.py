#!/usr/bin/env python3
"""Triton's matmul tutorial on the shapes of `bench_matmul`, with torch.matmul (cuBLAS).

The reference point for our Rust kernel: the tutorial's kernel (grouped program order,
masked K, f32 accumulation, LeakyReLU fused while the accumulator is f32) with the 8
autotune configs of the current tutorial (the same configs as `examples/src/matmul.rs`),
timed with `triton.testing.do_bench`'s method (warm-up 25 ms, repetitions 100 ms, L2 flushed),
against `torch.matmul` (cuBLAS) with and without a separate LeakyReLU, in one run. As in
`bench_matmul`, the providers of a point are timed with their calls interleaved, so that all
see the same GPU clock (`--sequential`: one after the other with `triton.testing.do_bench`).

    python3 scripts/triton_matmul_bench.py [--quick] [--out DIR] [--square-only | --nonsquare-only]
                                           [--sizes 512,1024,...] [--flush torch|memset] [--sequential]
                                           [--ours DIR]

Also times `cublasGemmEx` through ctypes with the exact call of `bench_matmul`'s cuBLAS (provider
`gemmex`), so both runs have the same baseline; `--ours DIR` (a `bench_matmul --out DIR` run on
this GPU) adds ours / Triton to the summary.

`--export-kernels DIR` also writes, for every shape and activation, the cubin Triton's autotuner
chose (`DIR/<M>x<N>x<K>-<activation>.cubin`) and `DIR/index.json` (entry name, threads, shared
memory, grid, the entry's parameters by name and type, the scalar values it was specialized for),
so that `bench_matmul --triton-kernels DIR` times Triton's own kernels in its process, interleaved
with ours and against the same cuBLAS.

Needs a CUDA GPU, torch and triton (written against Triton 3.6). Writes
`triton-matmul-performance.csv`, `triton-matmul-nonsquare.csv`, `triton-matmul-points.csv`
and `triton-matmul-summary.txt` to --out (default target/bench-triton), and prints tables.
Every point is checked against torch.matmul (atol 1e-2, rtol 1e-2) before it is timed;
autotuning happens during that check, so it is not timed.
"""

import argparse
import csv
import json
import math
import os
import re
import sys

import torch
import triton
import triton.language as tl

# Same shapes as examples/examples/bench_matmul/main.rs.
QUICK_SQUARES = [256, 512, 1024, 2048, 4096]
ALL_SQUARES = [256 * i for i in range(1, 33)]
NONSQUARE = [
    (8192, 8192, 512, "short K (outer-product-like)"),
    (4096, 4096, 4000, "K not a multiple of the block size"),
    (16384, 1024, 1024, "tall A"),
    (1024, 16384, 1024, "wide B"),
    (8192, 1024, 8192, "long K, narrow N"),
    (4000, 4000, 4000, "no dimension a multiple of 64"),
    (3000, 5000, 1000, "ragged M and N"),
]
PROVIDERS = [
    ("cublas", "cuBLAS"),
    ("gemmex", "cuBLAS (cublasGemmEx)"),
    ("cublas+relu", "cuBLAS (+ separate LeakyReLU)"),
    ("triton", "Triton"),
    ("triton+relu", "Triton (+ fused LeakyReLU)"),
]


def autotune_configs():
    """The tutorial's CUDA configs (fp16): also the configs of our Rust kernel."""
    c = triton.Config
    return [
        c({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=8),
        c({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=5, num_warps=2),
        c({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=5, num_warps=2),
    ]


@triton.autotune(configs=autotune_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    """C = ACTIVATION(A @ B); A is (M, K), B is (K, N), C is (M, N)."""
    # Grouped ordering of the program ids, for L2 reuse.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Pointers to the first blocks of A and B (rows/columns wrapped, so loads need no M/N mask).
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # Accumulate in f32; mask the K edge.
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    # Fuse the activation while the accumulator is still f32.
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


def matmul(a, b, c=None, activation=""):
    """activation(a @ b) by the Triton kernel, into `c` when given."""
    assert a.shape[1] == b.shape[0], "incompatible dimensions"
    M, K = a.shape
    K, N = b.shape
    if c is None:
        c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)
    matmul_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        ACTIVATION=activation,
    )
    return c


def loaded_library(name):
    """`ctypes.CDLL` of the copy of `name` (e.g. `libcublas.so`) that torch already loaded, found in
    /proc/self/maps (the pip wheels' libraries are not on the loader's path); else by name."""
    import ctypes

    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith(name):
                return ctypes.CDLL(path)
    return ctypes.CDLL(name)


class GemmEx:
    """`c = a @ b` by `cublasGemmEx` through ctypes: the same call as `bench_matmul`'s cuBLAS
    (`kernel_runtime::baseline::cublas_matmul_f16`: f16 in and out, `CUBLAS_COMPUTE_32F`,
    `CUBLAS_GEMM_DEFAULT`, row-major through `c^T = b^T a^T`), on a cuBLAS handle of its own
    (`cublasCreate`, as cudarc does: cuBLAS's default workspace, not the one torch sets on its
    handle) and torch's current stream. This is the baseline that compares with the Rust run's."""

    CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT, CUBLAS_OP_N = 2, 68, -1, 0

    def __init__(self):
        import ctypes

        self.lib = loaded_library("libcublas.so")
        self.ctypes = ctypes
        self.alpha, self.beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        f = self.lib.cublasGemmEx
        vp, i = ctypes.c_void_p, ctypes.c_int
        f.argtypes = [vp, i, i, i, i, i, vp, vp, i, i, vp, i, i, vp, vp, i, i, i, i]
        f.restype = i
        self.lib.cublasSetStream_v2.argtypes = [vp, vp]
        self.lib.cublasSetStream_v2.restype = i
        self.lib.cublasCreate_v2.argtypes = [ctypes.POINTER(vp)]
        self.lib.cublasCreate_v2.restype = i
        self.handle = vp()
        st = self.lib.cublasCreate_v2(ctypes.byref(self.handle))
        if st != 0:
            raise RuntimeError(f"cublasCreate failed: status {st}")

    def __call__(self, a, b, c):
        assert a.dtype == b.dtype == c.dtype == torch.float16 and a.is_contiguous() and b.is_contiguous() and c.is_contiguous()
        (m, k), (_, n) = a.shape, b.shape
        ct = self.ctypes
        h = self.handle
        st = self.lib.cublasSetStream_v2(h, ct.c_void_p(torch.cuda.current_stream().cuda_stream))
        if st != 0:
            raise RuntimeError(f"cublasSetStream failed: status {st}")
        st = self.lib.cublasGemmEx(
            h, self.CUBLAS_OP_N, self.CUBLAS_OP_N, n, m, k, ct.byref(self.alpha),
            ct.c_void_p(b.data_ptr()), self.CUDA_R_16F, n, ct.c_void_p(a.data_ptr()), self.CUDA_R_16F, k,
            ct.byref(self.beta), ct.c_void_p(c.data_ptr()), self.CUDA_R_16F, n,
            self.CUBLAS_COMPUTE_32F, self.CUBLAS_GEMM_DEFAULT,
        )
        if st != 0:
            raise RuntimeError(f"cublasGemmEx failed: status {st}")
        return c


GEMM_EX = None


def run_provider(provider, a, b, c):
    """A closure that runs `provider` once, writing into c."""
    global GEMM_EX
    if provider == "cublas":
        return lambda: torch.matmul(a, b, out=c)
    if provider == "gemmex":
        GEMM_EX = GEMM_EX or GemmEx()
        return lambda: GEMM_EX(a, b, c)
    if provider == "cublas+relu":
        return lambda: torch.nn.functional.leaky_relu(torch.matmul(a, b, out=c), 0.01, inplace=True)
    if provider == "triton":
        return lambda: matmul(a, b, c)
    if provider == "triton+relu":
        return lambda: matmul(a, b, c, activation="leaky_relu")
    raise ValueError(provider)


def use_memset_flush():
    """Makes `triton.testing.do_bench` flush the L2 cache with `cudaMemsetAsync` (what
    `bench_matmul` does, through `cuMemsetD8Async`) instead of its default `cache.zero_()` kernel,
    so that both runs flush the same way (`--flush memset`)."""
    import ctypes

    lib = loaded_library("libcudart.so")
    lib.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
    lib.cudaMemsetAsync.restype = ctypes.c_int

    def clear_cache(cache):
        st = lib.cudaMemsetAsync(ctypes.c_void_p(cache.data_ptr()), 0, cache.numel() * cache.element_size(),
                                 ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if st != 0:
            raise RuntimeError(f"cudaMemsetAsync failed: {st}")

    triton.runtime.driver.active.clear_cache = clear_cache
    if triton.runtime.driver.active.clear_cache is not clear_cache:
        raise RuntimeError("could not replace triton's clear_cache")


def tflops(m, n, k, ms):
    return 2.0 * m * n * k * 1e-12 / (ms * 1e-3)


def do_bench_interleaved(fns, warmup=25, rep=100, quantiles=(0.5, 0.2, 0.8, 0.0, 1.0)):
    """`triton.testing.do_bench` for several functions with their calls interleaved (what
    `bench_matmul` does by default, `kernel_runtime::testing::do_bench_gpu_interleaved`): each
    function's counts come from its own estimate, then warm-up and timed calls run in rounds of
    one call per function (the order rotated each round), so all of them are timed over the same
    stretch of GPU clocks.
    Returns, per function, the `quantiles` of its times in ms (L2 flushed before each timed call
    with Triton's own cache buffer and `clear_cache`)."""
    driver = triton.runtime.driver.active
    cache = driver.get_empty_cache_for_benchmark()
    counts = []
    for fn in fns:
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            driver.clear_cache(cache)
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate = start.elapsed_time(end) / 5
        counts.append((max(1, int(warmup / estimate)), max(1, int(rep / estimate))))
    n = len(fns)
    # Round r runs the functions from r % n on, so each follows each other one equally often.
    rotation = lambda r: [(r + j) % n for j in range(n)]
    for r in range(max((w for w, _ in counts), default=0)):
        for i in rotation(r):
            if r < counts[i][0]:
                fns[i]()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)] for _, n in counts]
    for r in range(max((c for _, c in counts), default=0)):
        for i in rotation(r):
            if r < len(events[i]):
                driver.clear_cache(cache)
                events[i][r][0].record()
                fns[i]()
                events[i][r][1].record()
    torch.cuda.synchronize()
    out = []
    for ev in events:
        times = torch.tensor([s.elapsed_time(e) for s, e in ev], dtype=torch.float)
        out.append(torch.quantile(times, torch.tensor(quantiles, dtype=torch.float)).tolist())
    return out


# The tutorial kernel's parameters, in order (then its constexprs).
KERNEL_ARGS = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K",
               "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"]


def entry_params(ptx, name):
    """The parameter types of entry `name` in PTX text, in order (e.g. ['u64', 'u32'])."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(([^)]*)\)", ptx)
    if not m:
        raise RuntimeError(f"entry {name} not found in the PTX")
    return re.findall(r"\.param\s+\.(\w+)", m.group(1))


def export_compiled(out_dir, a, b, c, activation, index):
    """Compiles (from Triton's cache) the kernel of the config the autotuner chose for this
    shape, writes its cubin and appends its description to `index`."""
    M, K = a.shape
    N = b.shape[1]
    cfg = matmul_kernel.best_config
    meta = cfg.all_kwargs()
    grid = (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)
    values = [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)]
    kern = matmul_kernel.fn[grid](*values, ACTIVATION=activation, **meta)
    md = kern.metadata
    name = md.name
    ptx_types = entry_params(kern.asm["ptx"], name)
    # The parameters Triton kept: those not turned into constants (constexprs, and integers
    # specialized because they equal 1); the entry may add scratch pointers after them.
    signature = kern.src.signature
    kept = [(arg, ty) for arg, ty in zip(KERNEL_ARGS, [signature[a] for a in KERNEL_ARGS]) if ty != "constexpr"]
    if len(ptx_types) < len(kept):
        raise RuntimeError(f"{name}: {len(ptx_types)} PTX parameters for {len(kept)} kept arguments")
    params = []
    for i, t in enumerate(ptx_types):
        if i < len(kept):
            arg, ty = kept[i]
            value = values[KERNEL_ARGS.index(arg)]
            params.append({"name": arg, "type": ty, "ptx": t, "value": None if ty.startswith("*") else int(value)})
        else:
            params.append({"name": "scratch", "type": "*i8", "ptx": t, "value": None})
    for field in ("global_scratch_size", "profile_scratch_size"):
        if getattr(md, field, 0):
            raise RuntimeError(f"{name}: {field} = {getattr(md, field)} (scratch memory is not exported)")
    cluster = tuple(getattr(md, "cluster_dims", (1, 1, 1)) or (1, 1, 1))
    if cluster != (1, 1, 1):
        raise RuntimeError(f"{name}: cluster dims {cluster} (not exported)")
    tag = f"{M}x{N}x{K}-{activation or 'none'}"
    with open(os.path.join(out_dir, f"{tag}.cubin"), "wb") as f:
        f.write(kern.asm["cubin"])
    index.append({
        "M": M, "N": N, "K": K, "activation": activation or "none",
        "cubin": f"{tag}.cubin", "name": name, "threads": 32 * md.num_warps, "shared": md.shared,
        "grid": list(grid), "params": params, "config": str(cfg),
    })


def operand(rows, cols, transposed):
    """A (rows, cols) f16 operand: contiguous, or the transposed view of a contiguous (cols, rows)
    tensor (how `nn.Linear` stores its weight)."""
    if transposed:
        return torch.randn((cols, rows), device="cuda", dtype=torch.float16).t()
    return torch.randn((rows, cols), device="cuda", dtype=torch.float16)


def bench_shapes(set_name, shapes, rows, seed0, sequential=False, export_dir=None, export_index=None, layout="nn"):
    """Checks every provider on each (M, N, K), then times those that passed (interleaved, or
    one after the other with `triton.testing.do_bench` when `sequential`); returns
    {provider: [tflops or nan]}. `layout`: A and B each `n` (contiguous) or `t` (a transposed
    view)."""
    series = {p: [] for p, _ in PROVIDERS}
    for i, (m, n, k) in enumerate(shapes):
        torch.manual_seed(seed0 + 7 * i)
        a = operand(m, k, layout[0] == "t")
        b = operand(k, n, layout[1] == "t")
        c = torch.empty((m, n), device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, b)
        ref_relu = torch.nn.functional.leaky_relu(ref, 0.01)
        print(f"{set_name} {m}x{n}x{k}: checking and timing", file=sys.stderr, flush=True)
        point = []  # (row, fn) of the providers that passed their check
        for provider, _ in PROVIDERS:
            expected = ref_relu if provider.endswith("+relu") else ref
            row = {"set": set_name, "M": m, "N": n, "K": k, "provider": provider}
            rows.append(row)
            try:
                fn = run_provider(provider, a, b, c)
                c.fill_(float("nan"))
                fn()  # autotunes on the first call for this key
                torch.cuda.synchronize()
                if not torch.allclose(c, expected, atol=1e-2, rtol=1e-2):
                    err = (c.float() - expected.float()).abs().max().item()
                    raise RuntimeError(f"wrong result: max abs error {err}")
                row["check"] = "ok"
                point.append((row, fn))
            except Exception as e:  # a failed point is reported and the sweep goes on
                row["error"] = f"{type(e).__name__}: {e}".replace("\n", " ")[:500]
                continue
            if export_dir and provider.startswith("triton"):
                try:
                    export_compiled(export_dir, a, b, c, "leaky_relu" if provider.endswith("+relu") else "", export_index)
                except Exception as e:
                    print(f"export of {m}x{n}x{k} {provider} failed: {type(e).__name__}: {e}", file=sys.stderr)
        try:
            if sequential:
                stats = [triton.testing.do_bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8, 0.0, 1.0]) for _, fn in point]
            else:
                stats = do_bench_interleaved([fn for _, fn in point])
            for (row, _), (med, p20, p80, lo, hi) in zip(point, stats):
                row.update(median_ms=med, p20_ms=p20, p80_ms=p80, min_ms=lo, max_ms=hi, tflops=tflops(m, n, k, med))
        except Exception as e:
            for row, _ in point:
                row["error"] = f"timing failed: {type(e).__name__}: {e}".replace("\n", " ")[:500]
        for provider, _ in PROVIDERS:
            row = next(r for r in rows[-len(PROVIDERS):] if r["provider"] == provider)
            series[provider].append(row.get("tflops", float("nan")))
        del a, b, c, ref, ref_relu
        torch.cuda.empty_cache()
    return series


def print_table(title, x_name, xs, series):
    print(f"\n{title}:")
    header = f"{'':>3} {x_name:>6}" + "".join(f" {name:>30}" for _, name in PROVIDERS)
    print(header)
    for i, x in enumerate(xs):
        print(f"{i:>3} {x:>6}" + "".join(f" {series[p][i]:>30.6f}" for p, _ in PROVIDERS))


def write_series_csv(path, x_name, xs, series):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([x_name] + [name for _, name in PROVIDERS])
        for i, x in enumerate(xs):
            w.writerow([x] + [series[p][i] for p, _ in PROVIDERS])


def geomean_ratio(series, num, den, indices):
    logs = []
    for i in indices:
        a, b = series[num][i], series[den][i]
        if not (a > 0 and b > 0):
            return "n/a (missing points)"
        logs.append(math.log(a / b))
    if not logs:
        return "n/a (no points)"
    return f"{math.exp(sum(logs) / len(logs)):.3f}x"


def read_ours(path):
    """{M: (cuBLAS TFLOPS, ours TFLOPS)} from bench_matmul's matmul-performance.csv."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {int(r["M"]): (float(r["cuBLAS"]), float(r["Ours"])) for r in rows}


def compare_with_ours(path, sizes, series):
    """Summary lines comparing a bench_matmul run (another process, same GPU) with this run."""
    try:
        ours = read_ours(path)
    except (OSError, KeyError, ValueError) as e:
        return [f"  (no comparison with {path}: {type(e).__name__}: {e})"]
    lines = [f"ours ({path}) against Triton (this run), geometric means over squares:"]
    for lo, hi in [(2048, 8192), (256, 1024)]:
        idx = [i for i, s in enumerate(sizes) if lo <= s <= hi and s in ours]
        both = {"ours": [], "ours_cublas": [], "triton": series["triton"], "gemmex": series["gemmex"]}
        for i, s in enumerate(sizes):
            both["ours"].append(ours[s][1] if s in ours else float("nan"))
            both["ours_cublas"].append(ours[s][0] if s in ours else float("nan"))
        lines.append(
            f"  {lo}-{hi}: ours / Triton (TFLOPS) = {geomean_ratio(both, 'ours', 'triton', idx)}, "
            f"ours / its run's cublasGemmEx = {geomean_ratio(both, 'ours', 'ours_cublas', idx)}, "
            f"Triton / this run's cublasGemmEx = {geomean_ratio(both, 'triton', 'gemmex', idx)}, "
            f"cublasGemmEx its run / this run = {geomean_ratio(both, 'ours_cublas', 'gemmex', idx)}"
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="squares 256, 512, 1024, 2048, 4096 and 3 non-square shapes")
    parser.add_argument("--out", default="target/bench-triton", help="output directory (default target/bench-triton)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--square-only", action="store_true")
    group.add_argument("--nonsquare-only", action="store_true")
    parser.add_argument("--sizes", help="comma-separated square sizes (overrides the default sweep)")
    parser.add_argument("--sequential", action="store_true",
                        help="time the providers one after the other with triton.testing.do_bench (default: interleaved, as bench_matmul)")
    parser.add_argument("--flush", choices=["torch", "memset"], default="torch",
                        help="how do_bench flushes the L2 cache: Triton's default cache.zero_() kernel, or cudaMemsetAsync as bench_matmul")
    parser.add_argument("--ours", help="the --out directory of a bench_matmul run on this GPU: adds ours / Triton to the summary")
    parser.add_argument("--layout", choices=["nn", "nt", "tn", "tt"], default="nn",
                        help="A and B each contiguous (n) or a transposed view (t), as bench_matmul --layout")
    parser.add_argument("--export-kernels", metavar="DIR",
                        help="write the cubin of each shape's chosen Triton kernel and DIR/index.json (for bench_matmul --triton-kernels)")
    args = parser.parse_args()
    export_index = []
    if args.export_kernels:
        os.makedirs(args.export_kernels, exist_ok=True)

    if not torch.cuda.is_available():
        print("triton_matmul_bench: no CUDA GPU visible to torch; nothing to do")
        return 0
    os.makedirs(args.out, exist_ok=True)
    if args.flush == "memset":
        use_memset_flush()
    print(f"device: {torch.cuda.get_device_name()} (cc {'.'.join(map(str, torch.cuda.get_device_capability()))}), "
          f"torch {torch.__version__}, triton {triton.__version__}")
    method = "triton.testing.do_bench, providers one after the other" if args.sequential else "do_bench_interleaved (triton.testing.do_bench's method), the providers of a point interleaved"
    print(f"timing: {method} (warm-up 25 ms, repetitions 100 ms, L2 flushed by {args.flush}), TFLOPS from the median")
    rows, summary = [], []

    if not args.nonsquare_only:
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (QUICK_SQUARES if args.quick else ALL_SQUARES)
        series = bench_shapes("square", [(s, s, s) for s in sizes], rows, 1000, args.sequential, args.export_kernels, export_index, args.layout)
        print_table("triton-matmul-performance", "M", sizes, series)
        write_series_csv(os.path.join(args.out, "triton-matmul-performance.csv"), "M", sizes, series)
        summary.append("square matmul, geometric-mean TFLOPS ratios:")
        for lo, hi in [(2048, 8192), (256, 1024), (256, 8192)]:
            idx = [i for i, s in enumerate(sizes) if lo <= s <= hi]
            summary.append(
                f"  {lo}-{hi}: triton / cuBLAS = {geomean_ratio(series, 'triton', 'cublas', idx)}, "
                f"triton+fused LeakyReLU / cuBLAS+separate LeakyReLU = {geomean_ratio(series, 'triton+relu', 'cublas+relu', idx)}, "
                f"triton+fused / cuBLAS (no activation) = {geomean_ratio(series, 'triton+relu', 'cublas', idx)}, "
                f"triton / cublasGemmEx = {geomean_ratio(series, 'triton', 'gemmex', idx)}, "
                f"torch.matmul / cublasGemmEx = {geomean_ratio(series, 'cublas', 'gemmex', idx)}"
            )
        if args.ours:
            summary += compare_with_ours(os.path.join(args.ours, "matmul-performance.csv"), sizes, series)

    if not args.square_only:
        cases = NONSQUARE[:3] if args.quick else NONSQUARE
        series = bench_shapes("nonsquare", [(m, n, k) for m, n, k, _ in cases], rows, 5000, args.sequential, args.export_kernels, export_index, args.layout)
        print("\nnon-square cases:")
        for i, (m, n, k, what) in enumerate(cases):
            print(f"  case {i + 1}: M={m} N={n} K={k} ({what})")
        xs = list(range(1, len(cases) + 1))
        print_table("triton-matmul-nonsquare", "case", xs, series)
        write_series_csv(os.path.join(args.out, "triton-matmul-nonsquare.csv"), "case", xs, series)
        idx = list(range(len(cases)))
        summary.append(
            f"non-square matmul ({len(cases)} cases), geometric-mean TFLOPS ratios: "
            f"triton / cuBLAS = {geomean_ratio(series, 'triton', 'cublas', idx)}, "
            f"triton+fused / cuBLAS+separate = {geomean_ratio(series, 'triton+relu', 'cublas+relu', idx)}"
        )

    fields = ["set", "M", "N", "K", "provider", "median_ms", "min_ms", "max_ms", "p20_ms", "p80_ms", "tflops", "check", "error"]
    points = os.path.join(args.out, "triton-matmul-points.csv")
    with open(points, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    summary_path = os.path.join(args.out, "triton-matmul-summary.txt")
    with open(summary_path, "w") as f:
        f.write("\n".join(summary) + "\n")
    print("\n" + "\n".join(summary))
    print(f"wrote {points}, {summary_path} and the tables' CSV in {args.out}")
    if args.export_kernels:
        path = os.path.join(args.export_kernels, "index.json")
        with open(path, "w") as f:
            json.dump({"triton": triton.__version__, "device": torch.cuda.get_device_name(), "kernels": export_index}, f, indent=1)
        print(f"exported {len(export_index)} kernels to {args.export_kernels}")
    failed = [r for r in rows if "error" in r]
    for r in failed:
        print(f"failed: {r['set']} {r['M']}x{r['N']}x{r['K']} {r['provider']}: {r['error']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
