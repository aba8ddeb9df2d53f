//! Kernels for the Philox random numbers: every builtin on 32- and 64-bit offsets.

use kernel_std::prelude::*;

/// `randint`, `rand`, `randn` of `(seed, offsets)` for offsets `0..n`, the four words of
/// `randint4x`, `rand4x` and `randn4x` (at `4 * offset + word`), `randint` of the i64 offsets
/// `offsets + 2^32 + 1`, and `rand` with 7 rounds.
#[kernel(B = [64])]
pub fn random_numbers<const B: i32>(seed: i64, ints: Ptr<u32>, unif: Ptr<f32>, norm: Ptr<f32>, ints4: Ptr<u32>, unif4: Ptr<f32>, norm4: Ptr<f32>, wide: Ptr<u32>, seven: Ptr<f32>, n: i32) {
    let offs = program_id(0) * B + arange(0, B);
    let m = offs < n;
    store(ints + offs, randint(seed, offs), m);
    store(unif + offs, rand(seed, offs), m);
    store(norm + offs, randn(seed, offs), m);
    let (i0, i1, i2, i3) = randint4x(seed, offs);
    let (u0, u1, u2, u3) = rand4x(seed, offs);
    let (n0, n1, n2, _) = randn4x(seed, offs);
    let at = offs * 4;
    store(ints4 + at, i0, m);
    store(ints4 + at + 1, i1, m);
    store(ints4 + at + 2, i2, m);
    store(ints4 + at + 3, i3, m);
    store(unif4 + at, u0, m);
    store(unif4 + at + 1, u1, m);
    store(unif4 + at + 2, u2, m);
    store(unif4 + at + 3, u3, m);
    store(norm4 + at, n0, m);
    store(norm4 + at + 1, n1, m);
    store(norm4 + at + 2, n2, m);
    store(wide + offs, randint(seed, offs.to::<i64>() + 4294967297i64), m);
    store(seven + offs, rand(seed, offs, 7), m);
}
