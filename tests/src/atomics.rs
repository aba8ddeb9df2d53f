//! Kernels for the atomics: histograms and sums from many programs, `max`/`min`, bitwise
//! operations, exchange and compare-and-swap, and the old values they return.

use kernel_std::prelude::*;

/// Every program adds its block of `x` into `sums[i % 4]` (f32, f64, f16 and bf16 copies of
/// the same small integers, so every order gives the exact sum) and counts elements per bin
/// of `bins` in `hist` (i32), u32 and i64 counters.
#[kernel(B = [64])]
pub fn atomic_sums<const B: i32>(x: Ptr<f32>, bins: Ptr<i32>, s32: Ptr<f32>, s64: Ptr<f64>, s16: Ptr<f16>, sb16: Ptr<bf16>, hist: Ptr<i32>, cu: Ptr<u32>, cl: Ptr<i64>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 0.0);
    let slot = i % 4;
    atomic_add(s32 + slot, v, m);
    atomic_add(s64 + slot, v.to::<f64>(), m);
    atomic_add(s16 + slot, v.to::<f16>(), m);
    atomic_add(sb16 + slot, v.to::<bf16>(), m, "relaxed", "gpu");
    atomic_add(hist + load(bins + i, m, 0), 1, m);
    atomic_add(cu + slot, 1, m, "release", "sys");
    atomic_add(cl + slot, 3, m);
}

/// `max`/`min` into one slot per dtype (f32 with negatives, f16, i32, u32, i64), and the
/// bitwise `or`/`and`/`xor` of `bits` (i32, u32 and i64).
#[kernel(B = [32])]
pub fn atomic_extrema_bits<const B: i32>(x: Ptr<f32>, bits: Ptr<i32>, fmax: Ptr<f32>, hmin: Ptr<f16>, imax: Ptr<i32>, umin: Ptr<u32>, lmax: Ptr<i64>, ors: Ptr<i32>, ands: Ptr<u32>, xors: Ptr<i64>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 0.0);
    let b = load(bits + i, m, 0);
    atomic_max(fmax, v, m);
    atomic_min(hmin + 0, v.to::<f16>(), m, "acquire", "cta");
    atomic_max(imax, b, m);
    atomic_min(umin, b.to::<u32>(), m);
    atomic_max(lmax, b.to::<i64>() * -3, m);
    atomic_or(ors, b, m);
    atomic_and(ands, b.to::<u32>() | 1, m);
    atomic_xor(xors, b.to::<i64>(), m);
}

/// Old values: each program takes a ticket from a scalar counter (once per program) and each
/// lane one from a per-slot counter; `atomic_cas` claims `claims[pid % 4]` for the first
/// program to get there and `atomic_xchg` swaps the program id into `last`.
#[kernel(B = [16])]
pub fn atomic_tickets<const B: i32>(counter: Ptr<i32>, lane_counter: Ptr<i32>, tickets: Ptr<i32>, lane_tickets: Ptr<i32>, claims: Ptr<i32>, seen: Ptr<i32>, last: Ptr<i32>, swapped: Ptr<i32>) {
    let pid = program_id(0);
    let t = atomic_add(counter, 1);
    store(tickets + pid, t);
    let lanes = arange(0, B);
    let lt = atomic_add(lane_counter + lanes % 2, 1);
    store(lane_tickets + pid * B + lanes, lt);
    store(seen + pid, atomic_cas(claims + pid % 4, 0, pid + 1));
    store(swapped + pid, atomic_xchg(last, pid + 1));
}
