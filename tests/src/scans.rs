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

/// `associative_scan` and `reduce` with `#[helper]` combine functions, associative but not
/// commutative ones included (the order of the operands matters).
#[kernel_module]
pub mod combine {
    /// The operand of larger magnitude, the first one on a tie.
    #[helper]
    pub fn larger_magnitude(a: f32, b: f32) -> f32 {
        where_(abs(b) > abs(a), b, a)
    }

    #[helper]
    pub fn add(a: f32, b: f32) -> f32 {
        a + b
    }

    /// The first operand unless it is 0.
    #[helper]
    pub fn first_nonzero(a: i32, b: i32) -> i32 {
        where_(a != 0, a, b)
    }

    /// On `[R, C]` blocks `a` (f32) and `b` (i32): `out = [scan(a, 1, larger_magnitude),
    /// scan(a, 0, add, reverse)]`, `iout = scan(b, 1, first_nonzero, reverse)`, `red =
    /// [reduce(a, 1, larger_magnitude) (R), reduce(a, 0, add) (C)]`, `ired = reduce(b, 1,
    /// first_nonzero)`.
    #[kernel(R = [4], C = [64])]
    pub fn combines<const R: i32, const C: i32>(x: Ptr<f32>, v: Ptr<i32>, out: Ptr<f32>, iout: Ptr<i32>, red: Ptr<f32>, ired: Ptr<i32>) {
        let r = arange(0, R);
        let c = arange(0, C);
        let offs = r.as_col() * C + c.as_row();
        let a = load(x + offs);
        let b = load(v + offs);
        store(out + offs, associative_scan(a, 1, larger_magnitude));
        store(out + R * C + offs, associative_scan(a, 0, add, true));
        store(iout + offs, associative_scan(b, 1, first_nonzero, true));
        store(red + r, reduce(a, 1, larger_magnitude));
        store(red + R + c, reduce(a, 0, add));
        store(ired + r, reduce(b, 1, first_nonzero));
    }
}
