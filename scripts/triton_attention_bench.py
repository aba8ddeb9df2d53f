#!/usr/bin/env python3
"""Triton and PyTorch flash-attention forward on the shapes of `bench_attention`.

The reference points for `examples::attention` (`examples/examples/bench_attention.rs`), on the
same shapes (batch 4, 32 heads, head dimensions 64 and 128, causal and not, sequence lengths
1024 to 16384), counting FLOPs the same way (4 * batch * heads * n^2 * head_dim, half when
causal):

- `triton`: a forward kernel written after Triton's tutorial 06 (pointer loads, the online
  softmax in exp2, the causal case split into the blocks left of the diagonal, unmasked, and
  the diagonal block, masked), autotuned over the tutorial's configuration space on Hopper
  (BLOCK_M 128, BLOCK_N 64 or 128, 2 to 4 stages, 4 or 8 warps, and a 64 x 64 tile);
- `torch`: `torch.nn.functional.scaled_dot_product_attention` (PyTorch's flash backend).

Every output is checked against a float32 torch reference before it is timed with
`triton.testing.do_bench` (25 ms warm-up, 100 ms of repetitions, L2 flushed before each call,
the median).

    python3 scripts/triton_attention_bench.py [--max-ctx N] [--out DIR]

Needs a CUDA GPU, torch and triton (written against Triton 3.x). Writes
`DIR/triton-attention.csv` (default DIR target/bench-triton) with columns
head_dim,causal,n_ctx,provider,ms,tflops, and prints it.
"""

import argparse
import csv
import os
import sys

import torch
import triton
import triton.language as tl

BATCH, HEADS = 4, 32
CONTEXTS = [1024, 2048, 4096, 8192, 16384]
DEVICE = torch.device("cuda", 0)


@triton.jit
def _inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, qk_scale,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
           DIAGONAL: tl.constexpr, offs_m, offs_n, offs_d, n_ctx, lo, hi):
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None], mask=cols[None, :] < n_ctx, other=0.0)
        qk = tl.dot(q, k)
        keep = cols[None, :] < n_ctx
        if DIAGONAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :], mask=cols[:, None] < n_ctx, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


# The tutorial's space on Hopper, less its small tiles (which it prunes there): BLOCK_M 128,
# BLOCK_N 64 or 128, 2 to 4 stages, 4 or 8 warps, and one 64 x 64 tile.
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": bn}, num_stages=s, num_warps=w)
    for bn in [64, 128]
    for s in [2, 3, 4]
    for w in [4, 8]
] + [triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_stages=3, num_warps=4)]


@triton.autotune(configs=CONFIGS, key=["n_ctx", "HEAD_DIM", "CAUSAL"])
@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale,
             stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
             stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om,
             heads, n_ctx, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // heads
    off_h = off_hz % heads
    q_base = q_ptr + off_z * stride_qz + off_h * stride_qh
    k_base = k_ptr + off_z * stride_kz + off_h * stride_kh
    v_base = v_ptr + off_z * stride_vz + off_h * stride_vh
    o_base = o_ptr + off_z * stride_oz + off_h * stride_oh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :], mask=offs_m[:, None] < n_ctx, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.full([BLOCK_M], 1.0, dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        # Whole key blocks left of this query block's diagonal, then the diagonal blocks.
        band = start_m * BLOCK_M
        acc, l_i, m_i = _inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, qk_scale,
                               BLOCK_M, BLOCK_N, HEAD_DIM, False, offs_m, offs_n, offs_d, n_ctx, 0, band)
        acc, l_i, m_i = _inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, qk_scale,
                               BLOCK_M, BLOCK_N, HEAD_DIM, True, offs_m, offs_n, offs_d, n_ctx, band,
                               tl.minimum(band + BLOCK_M, n_ctx))
    else:
        acc, l_i, m_i = _inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, qk_scale,
                               BLOCK_M, BLOCK_N, HEAD_DIM, False, offs_m, offs_n, offs_d, n_ctx, 0, n_ctx)
    o = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :], o.to(tl.float16), mask=offs_m[:, None] < n_ctx)


def triton_attention(q, k, v, causal, scale, o):
    b, h, n, d = q.shape
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)
    attn_fwd[grid](q, k, v, o, scale, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                   h, n, HEAD_DIM=d, CAUSAL=causal)
    return o


def reference(q, k, v, causal, scale):
    # Float32 on a few heads (the first and the last), enough to catch a wrong kernel.
    idx = [0, q.shape[0] * q.shape[1] - 1]
    qs, ks, vs = (t.reshape(-1, *t.shape[2:])[idx].float() for t in (q, k, v))
    s = qs @ ks.transpose(-1, -2) * scale
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=s.device), 1), float("-inf"))
    return torch.softmax(s, dim=-1) @ vs, idx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-ctx", type=int, default=16384)
    ap.add_argument("--out", default="target/bench-triton")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("triton_attention_bench needs a CUDA GPU")
        return 0
    os.makedirs(args.out, exist_ok=True)
    # Rows are written as they are measured (a run cut short keeps what it measured).
    out = open(os.path.join(args.out, "triton-attention.csv"), "w", newline="")
    w = csv.writer(out)
    w.writerow(["head_dim", "causal", "n_ctx", "provider", "ms", "tflops"])
    for d in (64, 128):
        for causal in (False, True):
            for n in (c for c in CONTEXTS if c <= args.max_ctx):
                g = torch.Generator(device=DEVICE).manual_seed(n + d)
                q, k, v = (torch.rand(BATCH, HEADS, n, d, device=DEVICE, dtype=torch.float16, generator=g) * 2 - 1 for _ in range(3))
                scale = 1.0 / d ** 0.5
                want, idx = reference(q, k, v, causal, scale)
                flops = 4 * BATCH * HEADS * n * n * d * (0.5 if causal else 1.0)
                providers = {
                    "triton": lambda o: triton_attention(q, k, v, causal, scale, o),
                    "torch": lambda o: o.copy_(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)),
                }
                for name, fn in providers.items():
                    o = torch.full_like(q, float("nan"))
                    fn(o)
                    got = o.reshape(-1, n, d)[idx].float()
                    err = ((got - want).abs() / (2e-3 + 1e-2 * want.abs())).max().item()
                    if not err <= 1.0:
                        print(f"{name} d {d} causal {causal} n {n}: worst error ratio {err}", file=sys.stderr)
                        return 1
                    if name == "torch":
                        ms = triton.testing.do_bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale), return_mode="median")
                    else:
                        ms = triton.testing.do_bench(lambda: fn(o), return_mode="median")
                    tf = flops / (ms * 1e-3) / 1e12
                    print(f"{name:6} d {d:3} causal {causal!s:5} n {n:5}: {ms:8.3f} ms {tf:7.1f} TFLOPS", flush=True)
                    w.writerow([d, str(causal).lower(), n, name, f"{ms:.5f}", f"{tf:.2f}"])
                    out.flush()
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
