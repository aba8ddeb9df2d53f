//! Kernels for the scans and index reductions: `cumsum`/`cumprod` along either axis (forward
//! and reverse, f32, f16 and i32), `argmax`/`argmin` and `xor_sum`.

use kernel_std::prelude::*;

/// On an `[R, C]` block `a` (f32), `h` (f16) and `b` (i32), row-major at offset 0: writes
/// `out = [cumsum(a, 1), a.cumsum(0, reverse), cumprod(a, 1, reverse)]`, `hout = h.cumsum(1)`,
/// `iout = [b.cumsum(1), cumprod(b, 0)]` and
/// `idx = [a.argmax(1) (R), argmin(a, 1) (R), a.argmax(0) (C), b.xor_sum(1) (R)]`.
#[kernel(R = [4], C = [64])]
pub fn scans<const R: i32, const C: i32>(x: Ptr<f32>, h: Ptr<f16>, v: Ptr<i32>, out: Ptr<f32>, hout: Ptr<f16>, iout: Ptr<i32>, idx: Ptr<i32>) {
    let r = arange(0, R);
    let c = arange(0, C);
    // Triton's hints are accepted (and change nothing).
    let offs = multiple_of(r.as_col() * C, [64, 1]) + max_contiguous(c, 64).as_row();
    let n = R * C;
    let a = load(x + offs);
    store(out + offs, cumsum(a, 1));
    store(out + n + offs, a.cumsum(0, true));
    store(out + 2 * n + offs, cumprod(a, 1, true));
    store(hout + offs, load(h + offs).cumsum(1));
    let b = load(v + offs);
    store(iout + offs, b.cumsum(1));
    store(iout + n + offs, cumprod(b, 0));
    store(idx + r, a.argmax(1));
    store(idx + R + r, argmin(a, 1));
    store(idx + 2 * R + c, a.argmax(0));
    store(idx + 2 * R + C + r, b.xor_sum(1));
}
