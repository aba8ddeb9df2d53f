//! Kernels for the debugging builtins: `device_assert` on scalars, 1-D and 2-D blocks (a
//! reduction's result and a tensor-core `dot`'s accumulator among them), `static_assert`, and
//! `device_print` of scalars and blocks of several dtypes.

use kernel_std::prelude::*;

/// `out = 2 x` for `x < limit`: asserts `n >= 0` (a scalar), that the blocks are large enough
/// (at compile time) and that every loaded value is below `limit` (masked-off lanes load 0).
#[kernel(B = [64])]
pub fn checked_double<const B: i32>(x: Ptr<i32>, out: Ptr<i32>, limit: i32, n: i32) {
    static_assert(B >= 16 && B % 16 == 0, "blocks are whole multiples of 16");
    device_assert(n >= 0, "n is not negative");
    let offs = program_id(0) * B + arange(0, B);
    let m = offs < n;
    let v = load(x + offs, m);
    device_assert(v < limit, "values stay below the limit");
    store(out + offs, v * 2, m);
}

/// Sums the rows of an `[R, C]` block: asserts that no element is NaN (a condition without
/// operands) and that every row sum is small (a reduction's result, f32).
#[kernel(R = [8], C = [16])]
pub fn checked_row_sums<const R: i32, const C: i32>(x: Ptr<f32>, out: Ptr<f32>) {
    let rows = arange(0, R);
    let v = load(x + rows.as_col() * C + arange(0, C).as_row());
    device_assert(!isnan(v), "no NaN in the input");
    let s = v.sum(1);
    device_assert(s.abs() <= 1000.0, "row sums are small");
    store(out + rows, s);
}

/// `c = a @ b` for 16x16 f16 tiles (tensor cores on the GPU): asserts every element of the
/// accumulator is below `limit`, read from another layout than the assertion's.
#[kernel(num_warps = 4)]
pub fn checked_dot(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, limit: f32) {
    let i = arange(0, 16);
    let offs = i.as_col() * 16 + i.as_row();
    let acc = dot(load(a + offs), load(b + offs));
    device_assert(acc < limit, "the product stays below the limit");
    store(c + offs, acc);
}

/// Prints each program's values (f32, i32 and the mask), `n` once per program and a bare
/// line, and stores `x + 1`.
#[kernel(B = [4])]
pub fn printed<const B: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = program_id(0) * B + arange(0, B);
    let m = offs < n;
    let v = load(x + offs, m);
    device_print("x, offs, m =", v, offs, m);
    device_print("n:", n);
    device_print("done");
    store(out + offs, v + 1.0, m);
}

/// `checked_double` with `asserts = false`: the same `device_assert`s, type-checked and not
/// run, so values at or above `limit` are doubled like the others.
#[kernel(B = [64], asserts = false)]
pub fn unchecked_double<const B: i32>(x: Ptr<i32>, out: Ptr<i32>, limit: i32, n: i32) {
    device_assert(n >= 0, "n is not negative");
    let offs = program_id(0) * B + arange(0, B);
    let m = offs < n;
    let v = load(x + offs, m);
    if n > 0 {
        device_assert(v < limit, "values stay below the limit");
    }
    store(out + offs, v * 2, m);
}

/// Each thread's stored value read back by another after `debug_barrier()`: `out[i] = x[i] + 1`
/// stored, then `out2[i] = out[(i + 1) % B]` (the next element, stored by another thread).
#[kernel(B = [128])]
pub fn barrier_exchange<const B: i32>(x: Ptr<i32>, out: Ptr<i32>, out2: Ptr<i32>) {
    let i = arange(0, B);
    store(out + i, load(x + i) + 1);
    debug_barrier();
    store(out2 + i, load(out + (i + 1) % B));
}
