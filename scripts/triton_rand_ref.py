#!/usr/bin/env python3
"""Reference numbers of Triton's random functions, for `kernel_std::random`.

    python3 scripts/triton_rand_ref.py OUT.csv

Needs a CUDA GPU, torch and triton (written against Triton 3.6). For each seed of SEEDS it
runs one small kernel per offset range of RANGES and writes one CSV row per offset:

    kind,seed,offset,v0,...,v14      kind int32 or int64 (the offsets' dtype)
        v0 = randint, v1..v4 = randint4x, v5 = rand, v6..v9 = rand4x,
        v10 = randn, v11..v14 = randn4x (floats as their bits), each 8 hex digits
    kind philox4x64,seed,offset,v0..v7   tl.philox(seed, offset, 0, 0, 0) on 64-bit words:
        v0..v3 the four words (16 hex digits), v4..v7 their uniform floats' bits

The ignored test `random::tests::matches_triton_reference_file` in kernel-std compares such a
file with our functions:

    KERNEL_TRITON_RAND_REF=OUT.csv cargo test -p kernel-std --lib -- --ignored triton
"""
import sys

import torch
import triton
import triton.language as tl
from triton.language.random import uint_to_uniform_float

SEEDS = [0, 1, 42, 2**31 + 5, 2**40 + 3]
# (kind, first offset, count): kind is the dtype the offsets have inside the kernel.
RANGES = [("int32", 0, 4096), ("int32", -64, 64),
          ("int64", 0, 64), ("int64", -64, 64), ("int64", 2**32 - 32, 64), ("int64", 2**33, 64),
          ("philox4x64", 0, 64), ("philox4x64", 2**33, 64), ("philox4x64", -64, 64)]
N_WORDS = 15


@triton.jit(do_not_specialize=["seed", "base"])
def rand_kernel(out, seed, base, N: tl.constexpr, WIDE: tl.constexpr):
    i = tl.arange(0, N)
    if WIDE:
        off = base.to(tl.int64) + i.to(tl.int64)
    else:
        off = base + i
    row = out + i * 15
    r0, r1, r2, r3 = tl.randint4x(seed, off)
    f0, f1, f2, f3 = tl.rand4x(seed, off)
    n0, n1, n2, n3 = tl.randn4x(seed, off)
    tl.store(row + 0, tl.randint(seed, off).to(tl.int32, bitcast=True))
    tl.store(row + 1, r0.to(tl.int32, bitcast=True))
    tl.store(row + 2, r1.to(tl.int32, bitcast=True))
    tl.store(row + 3, r2.to(tl.int32, bitcast=True))
    tl.store(row + 4, r3.to(tl.int32, bitcast=True))
    tl.store(row + 5, tl.rand(seed, off).to(tl.int32, bitcast=True))
    tl.store(row + 6, f0.to(tl.int32, bitcast=True))
    tl.store(row + 7, f1.to(tl.int32, bitcast=True))
    tl.store(row + 8, f2.to(tl.int32, bitcast=True))
    tl.store(row + 9, f3.to(tl.int32, bitcast=True))
    tl.store(row + 10, tl.randn(seed, off).to(tl.int32, bitcast=True))
    tl.store(row + 11, n0.to(tl.int32, bitcast=True))
    tl.store(row + 12, n1.to(tl.int32, bitcast=True))
    tl.store(row + 13, n2.to(tl.int32, bitcast=True))
    tl.store(row + 14, n3.to(tl.int32, bitcast=True))


@triton.jit(do_not_specialize=["seed", "base"])
def philox64_kernel(out, seed, base, N: tl.constexpr):
    i = tl.arange(0, N)
    c0 = base.to(tl.int64) + i.to(tl.int64)
    z = c0 * 0
    w0, w1, w2, w3 = tl.philox(seed, c0, z, z, z)
    row = out + i * 8
    tl.store(row + 0, w0.to(tl.int64, bitcast=True))
    tl.store(row + 1, w1.to(tl.int64, bitcast=True))
    tl.store(row + 2, w2.to(tl.int64, bitcast=True))
    tl.store(row + 3, w3.to(tl.int64, bitcast=True))
    tl.store(row + 4, uint_to_uniform_float(w0).to(tl.int32, bitcast=True).to(tl.int64))
    tl.store(row + 5, uint_to_uniform_float(w1).to(tl.int32, bitcast=True).to(tl.int64))
    tl.store(row + 6, uint_to_uniform_float(w2).to(tl.int32, bitcast=True).to(tl.int64))
    tl.store(row + 7, uint_to_uniform_float(w3).to(tl.int32, bitcast=True).to(tl.int64))


def main():
    path = sys.argv[1]
    lines = []
    for seed in SEEDS:
        for kind, base, n in RANGES:
            if kind == "philox4x64":
                out = torch.zeros(n * 8, dtype=torch.int64, device="cuda")
                philox64_kernel[(1, )](out, seed, base, N=n)
                for k, row in enumerate(out.view(n, 8).tolist()):
                    words = [f"{v & (2**64 - 1):016x}" for v in row[:4]] + [f"{v & (2**32 - 1):08x}" for v in row[4:]]
                    lines.append(",".join([kind, str(seed), str(base + k)] + words))
            else:
                out = torch.zeros(n * N_WORDS, dtype=torch.int32, device="cuda")
                rand_kernel[(1, )](out, seed, base, N=n, WIDE=kind == "int64")
                for k, row in enumerate(out.view(n, N_WORDS).tolist()):
                    lines.append(",".join([kind, str(seed), str(base + k)] + [f"{v & (2**32 - 1):08x}" for v in row]))
    with open(path, "w") as f:
        f.write(f"# triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}\n")
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} rows to {path} (triton {triton.__version__})")


if __name__ == "__main__":
    main()
