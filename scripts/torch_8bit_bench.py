#!/usr/bin/env python3
"""cuBLASLt's 8-bit GEMMs through PyTorch, on the shapes of `bench_matmul_8bit`.

The reference points for `examples::matmul_8bit` (`examples/examples/bench_matmul_8bit.rs`):
squares M = N = K, A (M, K) row-major, B the transposed view of an (N, K) row-major matrix
(the layout cuBLASLt's fp8 GEMM takes):

- `torch_fp8`: `torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.float16)` on
  float8_e4m3fn operands, per-tensor scales (cuBLASLt);
- `torch_i8`: `torch._int_mm(a, b)` on int8 operands, int32 result (cuBLASLt);
- `torch_f16`: `torch.mm` on the same shapes in float16 (cuBLAS), for scale.

Each output is checked against a float64 reference on 8 rows first, then timed with
`triton.testing.do_bench` (25 ms warm-up, 100 ms of repetitions, L2 flushed, median).

    python3 scripts/torch_8bit_bench.py [--sizes 1024,2048,4096,8192] [--out DIR]

Writes `DIR/torch-8bit.csv` (size,provider,tflops) and prints it.
"""

import argparse
import os

import torch
import triton

DEVICE = torch.device("cuda", 0)


def check(c, a, b, scale, exact):
    s = a.shape[0]
    rows = [i * (s - 1) // 7 for i in range(8)]
    want = scale * (a[rows].double() @ b.double())
    got = c[rows].double()
    if exact:
        assert torch.equal(got, want), "int8 result differs"
    else:
        big = want.abs().max().clamp(min=1.0)
        assert (got - want).abs().max() <= 1e-2 * big, "fp8 result differs"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1024,2048,4096,8192")
    p.add_argument("--out", default="target/bench-torch")
    args = p.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    rows = []
    for s in sizes:
        torch.manual_seed(s)
        a8 = torch.randn(s, s, device=DEVICE).to(torch.float8_e4m3fn)
        b8 = torch.randn(s, s, device=DEVICE).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=DEVICE)
        half = torch.tensor(0.5, device=DEVICE)
        fp8 = lambda: torch._scaled_mm(a8, b8, scale_a=half, scale_b=one, out_dtype=torch.float16)
        check(fp8(), a8.float(), b8.float(), 0.5, False)
        ai = torch.randint(-128, 128, (s, s), device=DEVICE, dtype=torch.int8)
        bi = torch.randint(-128, 128, (s, s), device=DEVICE, dtype=torch.int8).t().contiguous().t()
        i8 = lambda: torch._int_mm(ai, bi)
        check(i8(), ai, bi, 1, True)
        a16, b16 = a8.to(torch.float16), b8.to(torch.float16)
        f16 = lambda: torch.mm(a16, b16)
        flops = 2.0 * s**3
        for name, fn in [("torch_f16", f16), ("torch_fp8", fp8), ("torch_i8", i8)]:
            ms = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
            rows.append((s, name, flops / (ms * 1e-3) / 1e12))
            print(f"{s:>6} {name:>10} {rows[-1][2]:8.1f}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "torch-8bit.csv"), "w") as f:
        f.write("size,provider,tflops\n")
        for s, name, t in rows:
            f.write(f"{s},{name},{t:.2f}\n")


if __name__ == "__main__":
    main()
