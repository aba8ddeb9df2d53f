#!/usr/bin/env python3
"""PyTorch and Triton on the shapes of `bench_linear`: a bf16 linear layer with bias and GELU.

The reference points for `examples::linear` (`examples/examples/bench_linear.rs`), on the same
shapes and layouts (`nn`: the weight row-major `(K, N)`; `nt`: stored `(N, K)` as `nn.Linear`
stores it, passed transposed), for each activation (`none`, `gelu`: erf, `gelu_tanh`):

- `torch_mm`: `x @ w` alone (cuBLAS, no bias, no activation): the matmul's own ceiling;
- `torch_separate`: `gelu(x @ w + bias)` as three kernels (cuBLAS, then bias, then GELU);
- `torch_addmm`: `gelu(torch.addmm(bias, x, w))` (cuBLAS with the bias in its epilogue where
  cuBLASLt takes it, then GELU);
- `triton`: Triton's matmul tutorial kernel (its CUDA autotuning configs) with the bias and
  the activation on the f32 accumulator before the bf16 store.

Every output is checked against a float32 torch reference before it is timed with
`triton.testing.do_bench` (25 ms warm-up, 100 ms of repetitions, L2 flushed before each call,
the median).

    python3 scripts/triton_linear_bench.py [--sizes 2048,4096,8192] [--shapes MxNxK,...]
                                           [--layouts nn,nt] [--out DIR]

Writes `DIR/triton-linear.csv` (default DIR target/bench-triton) with columns
m,n,k,layout,activation,provider,ms,tflops, and prints it.
"""

import argparse
import csv
import math
import os
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra import libdevice

DEVICE = torch.device("cuda", 0)


def configs():
    c = lambda m, n, k, s, w: triton.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8}, num_stages=s, num_warps=w)
    return [c(128, 256, 64, 3, 8), c(64, 256, 32, 4, 4), c(128, 128, 32, 4, 4), c(128, 64, 32, 4, 4),
            c(64, 128, 32, 4, 4), c(128, 32, 32, 4, 4), c(64, 32, 32, 5, 2), c(32, 64, 32, 5, 2)]


@triton.autotune(configs=configs(), key=["M", "N", "K", "ACTIVATION"])
@triton.jit
def linear_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    acc = acc + tl.load(bias_ptr + offs_cn, mask=offs_cn < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "gelu":
        acc = 0.5 * acc * (1.0 + libdevice.erf(acc * 0.7071067811865476))
    elif ACTIVATION == "gelu_tanh":
        acc = 0.5 * acc * (1.0 + libdevice.tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)))
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def triton_linear(x, w, bias, out, activation):
    M, K = x.shape
    N = w.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)
    linear_kernel[grid](x, w, bias, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1), ACTIVATION=activation)
    return out


def act_fn(activation):
    return {"none": lambda t: t, "gelu": lambda t: F.gelu(t), "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}[activation]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--shapes", default="8192x16384x4096,8192x4096x16384")
    ap.add_argument("--layouts", default="nn,nt")
    ap.add_argument("--out", default="target/bench-triton")
    args = ap.parse_args()
    shapes = [(s, s, s) for s in map(int, args.sizes.split(",")) if args.sizes] + \
             [tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if args.shapes]
    os.makedirs(args.out, exist_ok=True)
    out = open(os.path.join(args.out, "triton-linear.csv"), "w", newline="")
    wr = csv.writer(out)
    wr.writerow(["m", "n", "k", "layout", "activation", "provider", "ms", "tflops"])
    print("m,n,k,layout,activation,provider,ms,tflops")
    for (m, n, k) in shapes:
        for layout in args.layouts.split(","):
            torch.manual_seed(0)
            x = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16)
            w = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16).t() if layout == "nt" else torch.randn(k, n, device=DEVICE, dtype=torch.bfloat16)
            bias = torch.randn(n, device=DEVICE, dtype=torch.bfloat16)
            y = torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16)
            for activation in ["none", "gelu", "gelu_tanh"]:
                f = act_fn(activation)
                want = f(x.float() @ w.float() + bias.float())
                providers = {
                    "torch_separate": lambda: f(x @ w + bias),
                    "torch_addmm": lambda: f(torch.addmm(bias, x, w)),
                    "triton": lambda: triton_linear(x, w, bias, y, activation),
                }
                if activation == "none":
                    providers["torch_mm"] = lambda: x @ w
                for name, fn in providers.items():
                    if name != "torch_mm":
                        y.fill_(float("nan"))
                        got = fn().float()
                        err = ((got - want).abs() / (2e-2 + 1e-2 * want.abs())).max().item()
                        if not err <= 1.0:
                            sys.exit(f"{name} {m}x{n}x{k} {layout} {activation}: worst error ratio {err}")
                    ms = triton.testing.do_bench(fn, return_mode="median")
                    tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12
                    row = [m, n, k, layout, activation, name, f"{ms:.6f}", f"{tflops:.2f}"]
                    wr.writerow(row)
                    out.flush()
                    print(",".join(map(str, row)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
