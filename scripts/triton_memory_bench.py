#!/usr/bin/env python3
"""Triton's tutorial kernels and PyTorch on the memory-bound shapes of `bench_memory`.

The reference points for our Rust kernels (`examples/examples/bench_memory.rs`), on the same
shapes and counting bytes the same way:

- vector add (tutorial 01, BLOCK_SIZE = 1024, f32) and `x + y`: 3 * n * 4 bytes;
- fused softmax (tutorial 02, f32 and f16) and `torch.softmax(x, dim=-1)`: 2 * numel * size
  bytes. Provider `triton` is the current tutorial (Triton 3.x: persistent programs, 8 warps,
  `num_stages` 4 on GPUs with more than 200 KB of shared memory, else 2, the grid sized from
  the kernel's occupancy); `triton-rowgrid` is the earlier tutorial (one program per row,
  4 warps, 8 from 2048 columns, 16 from 4096), the heuristic our fused kernel follows. Both
  hold a row in one block: rows longer than 16384 columns are skipped (torch only);
- layer norm forward (tutorial 05, f16 x/w/b/y, f32 mean and rstd) and
  `torch.nn.functional.layer_norm`: (2 * M * N + 2 * N) * 2 bytes;
- copy: `torch.Tensor.copy_` of 1 GiB on the device, 2 * 1 GiB bytes (the ceiling).

Every output is checked against torch (in float64 for the reductions) before it is timed
with `triton.testing.do_bench` (25 ms warm-up, 100 ms of repetitions, L2 flushed before each
call; the median is reported, as `bench_memory` does).

    python3 scripts/triton_memory_bench.py [--only vector_add,softmax,layer_norm] [--out DIR]

Needs a CUDA GPU, torch and triton (written against Triton 3.x). Writes
`DIR/triton-memory.csv` (default DIR target/bench-triton) with columns
kernel,dtype,shape,provider,ms,gbps, and prints it as a table. Join it with `bench_memory
--out DIR`'s `memory.csv` with `scripts/memory_compare.py`.
"""

import argparse
import csv
import os
import sys

import torch
import triton
import triton.language as tl

KERNELS = ["vector_add", "softmax", "layer_norm"]
# The shapes of bench_memory.
VECTOR_SIZES = [1 << k for k in (20, 22, 24, 26, 28)]
SOFTMAX_SHAPES = [(4096, c) for c in (128, 256, 512, 1024, 2048, 4096, 5000, 8192, 16384)] + [
    (1024, 32768),
    (1024, 65536),
]
SOFTMAX_MAX_TRITON_COLUMNS = 16384
LAYER_NORM_SHAPES = [(4096, n) for n in (1024, 2048, 4096, 8192)]
DTYPES = {"f32": torch.float32, "f16": torch.float16}
DEVICE = torch.device("cuda", 0)


# --- Tutorial 01: vector add -------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x, y, output):
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


# --- Tutorial 02: fused softmax ----------------------------------------------------------


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # Current tutorial: persistent programs, each striding over the rows.
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def softmax_kernel_rowgrid(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                           BLOCK_SIZE: tl.constexpr):
    # Earlier tutorial: one program per row.
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output, mask=col_offsets < n_cols)


_PROPS = None
_SOFTMAX_KERNELS = {}


def device_properties():
    global _PROPS
    if _PROPS is None:
        _PROPS = triton.runtime.driver.active.utils.get_device_properties(DEVICE.index)
    return _PROPS


def softmax(x, y):
    """Tutorial 02's host code (Triton 3.x), into a preallocated y."""
    props = device_properties()
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 8
    num_stages = 4 if props["max_shared_mem"] > 200000 else 2
    # The tutorial compiles (warmup) on every call; here once per shape, outside the timed
    # calls (the compiled kernel is specialized on the sizes and strides it saw).
    key = (x.dtype, n_rows, n_cols, x.stride(0), y.stride(0))
    kernel = _SOFTMAX_KERNELS.get(key)
    if kernel is None:
        kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE,
                                       num_stages=num_stages, num_warps=num_warps, grid=(1,))
        kernel._init_handles()
        _SOFTMAX_KERNELS[key] = kernel
    n_regs = max(kernel.n_regs, 1)
    size_smem = max(kernel.metadata.shared, 1)
    occupancy = props["max_num_regs"] // (n_regs * props["warpSize"] * num_warps)
    occupancy = min(occupancy, props["max_shared_mem"] // size_smem)
    num_programs = min(props["multiprocessor_count"] * max(occupancy, 1), n_rows)
    kernel[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE, num_stages)
    return y


def softmax_rowgrid(x, y):
    """The earlier tutorial's host code: one program per row, warps by block size."""
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 4
    if BLOCK_SIZE >= 2048:
        num_warps = 8
    if BLOCK_SIZE >= 4096:
        num_warps = 16
    softmax_kernel_rowgrid[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, num_warps=num_warps, BLOCK_SIZE=BLOCK_SIZE)
    return y


# --- Tutorial 05: layer norm forward -----------------------------------------------------


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def layer_norm(x, weight, bias, eps, y, mean, rstd):
    """Tutorial 05's forward host code, into preallocated outputs."""
    M, N = x.shape
    MAX_FUSED_SIZE = 65536 // x.element_size()
    BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(N))
    if N > BLOCK_SIZE:
        raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
    num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    _layer_norm_fwd_fused[(M,)](x, y, weight, bias, mean, rstd, x.stride(0), N, eps, BLOCK_SIZE=BLOCK_SIZE,
                                num_warps=num_warps, num_ctas=1)
    return y


# --- Measurement --------------------------------------------------------------------------


def median_ms(fn):
    # Triton 3.6 returns a float for a single quantile, older versions a list.
    r = triton.testing.do_bench(fn, warmup=25, rep=100, quantiles=[0.5])
    return r[0] if isinstance(r, (list, tuple)) else r


def gbps(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9


class Results:
    def __init__(self):
        self.rows = []

    def add(self, kernel, dtype, shape, provider, fn, nbytes):
        ms = median_ms(fn)
        row = (kernel, dtype, shape, provider, ms, gbps(nbytes, ms))
        self.rows.append(row)
        print(f"{kernel:<16} {dtype:>5} {shape:>12} {provider:<15} {ms:>10.4f} {row[5]:>9.1f}", flush=True)


def poison(t):
    t.fill_(float("nan"))


def bench_copy(res):
    nbytes = 1 << 30
    src = torch.zeros(nbytes, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    src[::4097] = 7
    dst.copy_(src)
    assert torch.equal(dst, src), "copy_ differs"
    res.add("copy", "u8", str(nbytes), "torch", lambda: dst.copy_(src), 2 * nbytes)
    del src, dst


def bench_vector_add(res):
    for n in VECTOR_SIZES:
        x = torch.rand(n, device=DEVICE, dtype=torch.float32) * 8 - 4
        y = torch.rand(n, device=DEVICE, dtype=torch.float32) * 8 - 4
        out = torch.empty_like(x)
        want = x + y
        poison(out)
        add(x, y, out)
        assert torch.equal(out, want), f"vector_add n = {n}: triton differs from torch"
        poison(out)
        nbytes = 3 * n * 4
        res.add("vector_add", "f32", str(n), "triton", lambda: add(x, y, out), nbytes)
        assert torch.equal(out, want), f"vector_add n = {n}: triton's timed runs differ"
        res.add("vector_add", "f32", str(n), "torch", lambda: x + y, nbytes)
        del x, y, out, want


def check_close(got, want, atol, rtol, what):
    if not torch.allclose(got.double(), want, atol=atol, rtol=rtol, equal_nan=False):
        err = (got.double() - want).abs().max().item()
        sys.exit(f"{what}: differs from the float64 reference (max abs error {err:g})")


def bench_softmax(res):
    for dtype_name, dtype in DTYPES.items():
        atol, rtol = (1e-7, 2e-3) if dtype == torch.float16 else (1e-9, 2e-5)
        for rows, cols in SOFTMAX_SHAPES:
            shape = f"{rows}x{cols}"
            x = (torch.rand(rows, cols, device=DEVICE, dtype=torch.float32) * 8 - 4).to(dtype)
            want = torch.softmax(x.double(), dim=-1)
            y = torch.empty_like(x)
            nbytes = 2 * x.numel() * x.element_size()
            providers = [("torch", lambda: torch.softmax(x, dim=-1))]
            if cols <= SOFTMAX_MAX_TRITON_COLUMNS:
                providers = [("triton", lambda: softmax(x, y)), ("triton-rowgrid", lambda: softmax_rowgrid(x, y))] + providers
            for provider, fn in providers:
                what = f"softmax {dtype_name} {shape} {provider}"
                poison(y)
                got = fn()
                check_close(got, want, atol, rtol, what)
                poison(y)
                res.add("softmax", dtype_name, shape, provider, fn, nbytes)
                check_close(fn(), want, atol, rtol, what + " (after timing)")
            del x, y, want


def bench_layer_norm(res):
    eps = 1e-5
    for M, N in LAYER_NORM_SHAPES:
        shape = f"{M}x{N}"
        x = (torch.rand(M, N, device=DEVICE) * 6 - 3).half()
        w = (torch.rand(N, device=DEVICE) * 2 - 1).half()
        b = (torch.rand(N, device=DEVICE) * 2 - 1).half()
        want = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), eps)
        y = torch.empty_like(x)
        mean = torch.empty(M, device=DEVICE, dtype=torch.float32)
        rstd = torch.empty(M, device=DEVICE, dtype=torch.float32)
        nbytes = (2 * M * N + 2 * N) * 2
        providers = [
            ("triton", lambda: layer_norm(x, w, b, eps, y, mean, rstd)),
            ("torch", lambda: torch.nn.functional.layer_norm(x, (N,), w, b, eps)),
        ]
        for provider, fn in providers:
            what = f"layer_norm_fwd f16 {shape} {provider}"
            poison(y)
            check_close(fn(), want, 2e-3, 2e-3, what)
            poison(y)
            res.add("layer_norm_fwd", "f16", shape, provider, fn, nbytes)
            check_close(fn(), want, 2e-3, 2e-3, what + " (after timing)")
        del x, w, b, y, mean, rstd, want


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default=",".join(KERNELS), help="comma-separated: " + ",".join(KERNELS))
    p.add_argument("--out", default="target/bench-triton")
    args = p.parse_args()
    only = [k.strip() for k in args.only.split(",") if k.strip()]
    for k in only:
        if k not in KERNELS:
            sys.exit(f"--only {k}: expected some of {','.join(KERNELS)}")
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name(DEVICE)}, torch {torch.__version__}, triton {triton.__version__}")
    print(f"{'kernel':<16} {'dtype':>5} {'shape':>12} {'provider':<15} {'ms':>10} {'GB/s':>9}")
    res = Results()
    bench_copy(res)
    if "vector_add" in only:
        bench_vector_add(res)
    if "softmax" in only:
        bench_softmax(res)
    if "layer_norm" in only:
        bench_layer_norm(res)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "triton-memory.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "dtype", "shape", "provider", "ms", "gbps"])
        for kernel, dtype, shape, provider, ms, g in res.rows:
            w.writerow([kernel, dtype, shape, provider, f"{ms:.6f}", f"{g:.2f}"])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
