//! Kernels for the narrow integer element types (`i8`, `i16`, `u8`, `u16`: pointers, scalar
//! parameters, blocks) and f64 scalar parameters: loads and stores under masks, arithmetic
//! (computed in the type, wrapping like Rust), comparisons, `where_`, weak literals, shifts,
//! conversions both ways (int to int wraps, float to int truncates and saturates) and
//! reductions (`sum` and `cumsum` accumulate in i32 for i8/i16 and u32 for u8/u16, as in
//! Triton; `max`, `min` and `xor_sum` keep the type).

use kernel_std::prelude::*;

/// i8 blocks of `N` elements (the first `n` valid): with `x = a[i]`, `y = b[i]` and the
/// scalar `s`, `out` gets 12 rows of `N`: `x + y`, `x * y - s`, `x / y'` and `x % y'` (`y'` is
/// `y` with 0 replaced by 1), `(x & y) | (x ^ 3)`, `x << 1`, `x >> 2`, `maximum(x, y)`,
/// `where_(x < y, x, s)`, `-x`, `b[x & 7]` and `(x >= y)` as i8; `wide` gets `x` as i32 and
/// `x + i` (i32 promotion), `fl` gets `x` as f32, `back` gets `f[i]` as i8 (truncated and
/// saturated) and `(x * 3) as i32 as i8` (wrapped); `red` gets `[sum(x), max(x), min(x),
/// xor_sum(x)]` (the sum as i32, the others as i8 widened to i32) and `cs` the running
/// sum of `x`.
#[kernel(N = [256])]
pub fn ops_i8<const N: i32>(a: Ptr<i8>, b: Ptr<i8>, s: i8, n: i32, f: Ptr<f32>, out: Ptr<i8>, wide: Ptr<i32>, fl: Ptr<f32>, back: Ptr<i8>, red: Ptr<i32>, cs: Ptr<i32>) {
    let i = arange(0, N);
    let mask = i < n;
    let x = load(a + i, mask, 0);
    let y = load(b + i, mask);
    let y1 = where_(y == 0, 1, y);
    store(out + i, x + y, mask);
    store(out + N + i, x * y - s, mask);
    store(out + 2 * N + i, x / y1, mask);
    store(out + 3 * N + i, x % y1, mask);
    store(out + 4 * N + i, (x & y) | (x ^ 3), mask);
    store(out + 5 * N + i, x << 1, mask);
    store(out + 6 * N + i, x >> 2, mask);
    store(out + 7 * N + i, maximum(x, y), mask);
    store(out + 8 * N + i, where_(x < y, x, s), mask);
    store(out + 9 * N + i, -x, mask);
    store(out + 10 * N + i, load(b + (x & 7)), mask);
    store(out + 11 * N + i, (x >= y).to::<i8>(), mask);
    store(wide + i, x.to::<i32>(), mask);
    store(wide + N + i, x + i, mask);
    store(fl + i, x.to::<f32>(), mask);
    store(back + i, load(f + i, mask).to::<i8>(), mask);
    store(back + N + i, (x.to::<i32>() * 3).to::<i8>(), mask);
    store(red, x.sum(0));
    store(red + 1, load(a + i, mask, i8::MIN).max(0).to::<i32>());
    store(red + 2, load(a + i, mask, i8::MAX).min(0).to::<i32>());
    store(red + 3, x.xor_sum(0).to::<i32>());
    store(cs + i, cumsum(x, 0));
}

/// i16 blocks of `N` elements (the first `n` valid): with `x = a[i]`, `y = b[i]` and the
/// scalar `s`, `out` gets 12 rows of `N`: `x + y`, `x * y - s`, `x / y'` and `x % y'` (`y'` is
/// `y` with 0 replaced by 1), `(x & y) | (x ^ 3)`, `x << 1`, `x >> 2`, `maximum(x, y)`,
/// `where_(x < y, x, s)`, `-x`, `b[x & 7]` and `(x >= y)` as i16; `wide` gets `x` as i32 and
/// `x + i` (i32 promotion), `fl` gets `x` as f32, `back` gets `f[i]` as i16 (truncated and
/// saturated) and `(x * 3) as i32 as i16` (wrapped); `red` gets `[sum(x), max(x), min(x),
/// xor_sum(x)]` (the sum as i32, the others as i16 widened to i32) and `cs` the running
/// sum of `x`.
#[kernel(N = [256])]
pub fn ops_i16<const N: i32>(a: Ptr<i16>, b: Ptr<i16>, s: i16, n: i32, f: Ptr<f32>, out: Ptr<i16>, wide: Ptr<i32>, fl: Ptr<f32>, back: Ptr<i16>, red: Ptr<i32>, cs: Ptr<i32>) {
    let i = arange(0, N);
    let mask = i < n;
    let x = load(a + i, mask, 0);
    let y = load(b + i, mask);
    let y1 = where_(y == 0, 1, y);
    store(out + i, x + y, mask);
    store(out + N + i, x * y - s, mask);
    store(out + 2 * N + i, x / y1, mask);
    store(out + 3 * N + i, x % y1, mask);
    store(out + 4 * N + i, (x & y) | (x ^ 3), mask);
    store(out + 5 * N + i, x << 1, mask);
    store(out + 6 * N + i, x >> 2, mask);
    store(out + 7 * N + i, maximum(x, y), mask);
    store(out + 8 * N + i, where_(x < y, x, s), mask);
    store(out + 9 * N + i, -x, mask);
    store(out + 10 * N + i, load(b + (x & 7)), mask);
    store(out + 11 * N + i, (x >= y).to::<i16>(), mask);
    store(wide + i, x.to::<i32>(), mask);
    store(wide + N + i, x + i, mask);
    store(fl + i, x.to::<f32>(), mask);
    store(back + i, load(f + i, mask).to::<i16>(), mask);
    store(back + N + i, (x.to::<i32>() * 3).to::<i16>(), mask);
    store(red, x.sum(0));
    store(red + 1, load(a + i, mask, i16::MIN).max(0).to::<i32>());
    store(red + 2, load(a + i, mask, i16::MAX).min(0).to::<i32>());
    store(red + 3, x.xor_sum(0).to::<i32>());
    store(cs + i, cumsum(x, 0));
}

/// u8 blocks of `N` elements (the first `n` valid): with `x = a[i]`, `y = b[i]` and the
/// scalar `s`, `out` gets 12 rows of `N`: `x + y`, `x * y - s`, `x / y'` and `x % y'` (`y'` is
/// `y` with 0 replaced by 1), `(x & y) | (x ^ 3)`, `x << 1`, `x >> 2`, `maximum(x, y)`,
/// `where_(x < y, x, s)`, `-x`, `b[x & 7]` and `(x >= y)` as u8; `wide` gets `x` as i32 and
/// `x + i` (i32 promotion), `fl` gets `x` as f32, `back` gets `f[i]` as u8 (truncated and
/// saturated) and `(x * 3) as i32 as u8` (wrapped); `red` gets `[sum(x), max(x), min(x),
/// xor_sum(x)]` (the sum as u32, the others as u8 widened to u32) and `cs` the running
/// sum of `x`.
#[kernel(N = [256])]
pub fn ops_u8<const N: i32>(a: Ptr<u8>, b: Ptr<u8>, s: u8, n: i32, f: Ptr<f32>, out: Ptr<u8>, wide: Ptr<i32>, fl: Ptr<f32>, back: Ptr<u8>, red: Ptr<u32>, cs: Ptr<u32>) {
    let i = arange(0, N);
    let mask = i < n;
    let x = load(a + i, mask, 0);
    let y = load(b + i, mask);
    let y1 = where_(y == 0, 1, y);
    store(out + i, x + y, mask);
    store(out + N + i, x * y - s, mask);
    store(out + 2 * N + i, x / y1, mask);
    store(out + 3 * N + i, x % y1, mask);
    store(out + 4 * N + i, (x & y) | (x ^ 3), mask);
    store(out + 5 * N + i, x << 1, mask);
    store(out + 6 * N + i, x >> 2, mask);
    store(out + 7 * N + i, maximum(x, y), mask);
    store(out + 8 * N + i, where_(x < y, x, s), mask);
    store(out + 9 * N + i, -x, mask);
    store(out + 10 * N + i, load(b + (x & 7)), mask);
    store(out + 11 * N + i, (x >= y).to::<u8>(), mask);
    store(wide + i, x.to::<i32>(), mask);
    store(wide + N + i, x + i, mask);
    store(fl + i, x.to::<f32>(), mask);
    store(back + i, load(f + i, mask).to::<u8>(), mask);
    store(back + N + i, (x.to::<i32>() * 3).to::<u8>(), mask);
    store(red, x.sum(0));
    store(red + 1, load(a + i, mask, u8::MIN).max(0).to::<u32>());
    store(red + 2, load(a + i, mask, u8::MAX).min(0).to::<u32>());
    store(red + 3, x.xor_sum(0).to::<u32>());
    store(cs + i, cumsum(x, 0));
}

/// u16 blocks of `N` elements (the first `n` valid): with `x = a[i]`, `y = b[i]` and the
/// scalar `s`, `out` gets 12 rows of `N`: `x + y`, `x * y - s`, `x / y'` and `x % y'` (`y'` is
/// `y` with 0 replaced by 1), `(x & y) | (x ^ 3)`, `x << 1`, `x >> 2`, `maximum(x, y)`,
/// `where_(x < y, x, s)`, `-x`, `b[x & 7]` and `(x >= y)` as u16; `wide` gets `x` as i32 and
/// `x + i` (i32 promotion), `fl` gets `x` as f32, `back` gets `f[i]` as u16 (truncated and
/// saturated) and `(x * 3) as i32 as u16` (wrapped); `red` gets `[sum(x), max(x), min(x),
/// xor_sum(x)]` (the sum as u32, the others as u16 widened to u32) and `cs` the running
/// sum of `x`.
#[kernel(N = [256])]
pub fn ops_u16<const N: i32>(a: Ptr<u16>, b: Ptr<u16>, s: u16, n: i32, f: Ptr<f32>, out: Ptr<u16>, wide: Ptr<i32>, fl: Ptr<f32>, back: Ptr<u16>, red: Ptr<u32>, cs: Ptr<u32>) {
    let i = arange(0, N);
    let mask = i < n;
    let x = load(a + i, mask, 0);
    let y = load(b + i, mask);
    let y1 = where_(y == 0, 1, y);
    store(out + i, x + y, mask);
    store(out + N + i, x * y - s, mask);
    store(out + 2 * N + i, x / y1, mask);
    store(out + 3 * N + i, x % y1, mask);
    store(out + 4 * N + i, (x & y) | (x ^ 3), mask);
    store(out + 5 * N + i, x << 1, mask);
    store(out + 6 * N + i, x >> 2, mask);
    store(out + 7 * N + i, maximum(x, y), mask);
    store(out + 8 * N + i, where_(x < y, x, s), mask);
    store(out + 9 * N + i, -x, mask);
    store(out + 10 * N + i, load(b + (x & 7)), mask);
    store(out + 11 * N + i, (x >= y).to::<u16>(), mask);
    store(wide + i, x.to::<i32>(), mask);
    store(wide + N + i, x + i, mask);
    store(fl + i, x.to::<f32>(), mask);
    store(back + i, load(f + i, mask).to::<u16>(), mask);
    store(back + N + i, (x.to::<i32>() * 3).to::<u16>(), mask);
    store(red, x.sum(0));
    store(red + 1, load(a + i, mask, u16::MIN).max(0).to::<u32>());
    store(red + 2, load(a + i, mask, u16::MAX).min(0).to::<u32>());
    store(red + 3, x.xor_sum(0).to::<u32>());
    store(cs + i, cumsum(x, 0));
}

/// f64 scalar parameters: `out[i] = x[i] * alpha + beta` for `i < n` (f64), and `low[i]` the
/// same in f32 (`alpha` and `beta` converted with `.to::<f32>()`).
#[kernel(B = [128])]
pub fn axpb_f64<const B: i32>(x: Ptr<f64>, alpha: f64, beta: f64, n: i32, out: Ptr<f64>, low: Ptr<f32>) {
    let i = program_id(0) * B + arange(0, B);
    let mask = i < n;
    let v = load(x + i, mask);
    store(out + i, v * alpha + beta, mask);
    store(low + i, v.to::<f32>() * alpha.to::<f32>() + beta.to::<f32>(), mask);
}

/// Mixed widths promote to the wider type (`u8 + i16` is i16, `i8 * i32` is i32, `u16 + u32`
/// is u32) and weak literals take the narrow type (`p + 1` stays u8, wrapping at 255).
#[kernel(N = [64])]
pub fn mixed_widths<const N: i32>(p: Ptr<u8>, q: Ptr<i16>, r: Ptr<i8>, w: Ptr<u16>, o16: Ptr<i16>, o32: Ptr<i32>, ou32: Ptr<u32>, o8: Ptr<u8>) {
    let i = arange(0, N);
    let a = load(p + i);
    let b = load(q + i);
    let c = load(r + i);
    let d = load(w + i);
    store(o16 + i, a + b);
    store(o32 + i, c * i);
    store(ou32 + i, d + i.to::<u32>());
    store(o8 + i, a + 1);
}
