#!/usr/bin/env python3
"""Triton's persistent matmul (tutorial 09, the version without tensor descriptors) against
torch.matmul (cuBLAS), for comparison with `bench_matmul --persistent` on the same GPU.

    python3 scripts/triton_persistent_bench.py [--sizes 2048,4096,...] [--shapes MxNxK,...]

One program per multiprocessor, each looping over output tiles in grouped order; the K loop
computes its pointers from the K tile's index and clamps edge rows and columns with
`tl.where`, as the tutorial writes it. Autotuned over the configs below (the tutorial's
Hopper space: 128-row tiles, 128 or 256 columns, K tiles of 64 or 128, 3 or 4 stages, 4 or
8 warps). Every point is checked against torch.matmul (atol 1e-2, rtol 1e-2), which also
runs the autotuner, then timed with `triton.testing.do_bench` (L2 flushed, median) for both
providers; prints TFLOPS and the ratio.
"""

import argparse

import torch
import triton
import triton.language as tl


def configs():
    out = []
    for bn in (128, 256):
        for bk in (64, 128):
            for stages in (3, 4):
                for warps in (4, 8):
                    out.append(triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8},
                                             num_stages=stages, num_warps=warps))
    return out


@triton.jit
def _tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    return first_pid_m + (tile_id % group_size_m), (tile_id % num_pid_in_group) // group_size_m


@triton.autotune(configs=configs(), key=["M", "N", "K"])
@triton.jit
def persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            acc = tl.dot(a, b, acc)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, acc.to(tl.float16), mask=c_mask)


def run(a, b, sms):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda meta: (min(sms, triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"])),)
    persistent_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), NUM_SMS=sms)
    return c


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="2048,4096,8192")
    p.add_argument("--shapes", default="")
    args = p.parse_args()
    shapes = [(s, s, s) for s in map(int, args.sizes.split(","))] if args.sizes else []
    shapes += [tuple(map(int, x.split("x"))) for x in args.shapes.split(",") if x]
    sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}, {sms} SMs")
    print(f"{'M':>6} {'N':>6} {'K':>6} {'cuBLAS':>8} {'Triton persistent':>18} {'ratio':>6}  config")
    for (M, N, K) in shapes:
        torch.manual_seed(M + N + K)
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16)
        want = torch.matmul(a, b)
        got = run(a, b, sms)
        torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2)
        tflops = lambda ms: 2 * M * N * K * 1e-12 / (ms * 1e-3)
        t_cublas = tflops(triton.testing.do_bench(lambda: torch.matmul(a, b)))
        t_triton = tflops(triton.testing.do_bench(lambda: run(a, b, sms)))
        print(f"{M:>6} {N:>6} {K:>6} {t_cublas:>8.1f} {t_triton:>18.1f} {t_triton / t_cublas:>6.3f}  {persistent_kernel.best_config}")


if __name__ == "__main__":
    main()
