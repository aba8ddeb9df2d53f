//! Elementwise kernels in the cyclic layout: vectorized loads and stores
//! (`expand_device/vector.rs`), materialized and recomputed values, scalars and control flow
//! (`expand_device/mod.rs`).

use kernel_std::prelude::*;

/// Vector widths (`DevGen::vec_width`). Config 0: 512 f32 over 128 threads, one chunk of 4 per
/// thread, moved with `load_vec::<f32, 4>`/`store_vec::<f32, 4>` when a run-time check finds it
/// contiguous, aligned and unmasked (element by element otherwise); config 1: 256 over 128
/// threads, chunks of 2; config 2: 32 over 64 threads, one element per access, no vector access.
#[kernel]
#[autotune(
    configs = [
        config(BLOCK = 512, num_warps = 4, num_stages = 1),
        config(BLOCK = 256, num_warps = 4, num_stages = 1),
        config(BLOCK = 32, num_warps = 2, num_stages = 1),
    ],
    key = [n],
)]
pub fn vector_widths<const BLOCK: i32>(x: Ptr<f32>, y: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let x = load(x + offs, mask);
    let y = load(y + offs, mask);
    store(out + offs, x + y, mask);
}

/// A 2-D tile with a run-time row stride: a loaded block read twice is materialized (a register
/// array per thread), values computed from it are recomputed at each use; the mask is constant
/// along a row chunk in one operand and increasing in the other (`expand_device/chunks.rs`).
#[kernel(BR = [8], BC = [64])]
pub fn tile_2d<const BR: i32, const BC: i32>(x: Ptr<f32>, out: Ptr<f32>, stride: i32, n_rows: i32, n_cols: i32) {
    let rows = program_id(0) * BR + arange(0, BR);
    let cols = arange(0, BC);
    let mask = (rows.as_col() < n_rows) & (cols.as_row() < n_cols);
    let v = load(x + rows.as_col() * stride + cols.as_row(), mask, 0.0);
    let y = v * v + 1.0;
    store(out + rows.as_col() * BC + cols.as_row(), y - v, mask);
}

/// Scalars and control flow: a scalar load and a scalar store (one thread writes), `if` on a
/// run-time scalar, an early `return`, a loop lowered as written (not a K loop), program ids on
/// two axes, `num_programs`, integer and float arithmetic, casts and math.
#[kernel(BLOCK = [128])]
pub fn control_flow<const BLOCK: i32>(x: Ptr<f32>, out: Ptr<f16>, total: Ptr<f32>, n: i32, reps: i32) {
    let pid = program_id(0) + program_id(1) * num_programs(0);
    if pid * BLOCK >= n {
        return;
    }
    let offs = pid * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let mut acc = zeros::<f32>([BLOCK]);
    for i in 0..reps {
        acc = acc + load(x + offs, mask, 0.0) * i.to::<f32>();
    }
    let scale = load(total);
    if scale > 0.0 {
        acc = exp(acc * scale);
    } else {
        acc = where_(offs % 2 == 0, acc, -acc);
    }
    store(out + offs, acc.to::<f16>(), mask);
    store(total, scale + 1.0);
}
