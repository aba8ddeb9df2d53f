//! Values a thread reads at another thread's coordinates go through shared memory
//! (`DevGen::staging`, `gen_reduce`, `gen_dot`).

use kernel_std::prelude::*;

/// Broadcasts and transposes of materialized blocks: a loaded vector broadcast along rows and
/// columns of a tile, a loaded tile transposed, and a row maximum broadcast back (each staged
/// in shared memory between barriers).
#[kernel(B = [32])]
pub fn broadcast_smem<const B: i32>(x: Ptr<f32>, v: Ptr<f32>, out: Ptr<f32>, out_t: Ptr<f32>, n: i32) {
    let r = arange(0, B);
    let tile = load(x + r.as_col() * B + r.as_row());
    let scale = load(v + r, r < n, 1.0);
    let scaled = tile * scale.as_row() + scale.as_col();
    store(out + r.as_col() * B + r.as_row(), scaled - scaled.max(1).as_col());
    store(out_t + r.as_col() * B + r.as_row(), tile.trans());
}

/// Reductions (staged, one warp per output, `shfl.bfly` butterflies): f32 sums to a scalar and
/// along each axis of a tile, an integer minimum in its own type, an f16 maximum accumulated in
/// f32.
#[kernel(R = [16], C = [64])]
pub fn reductions<const R: i32, const C: i32>(x: Ptr<f32>, h: Ptr<f16>, i: Ptr<i32>, out: Ptr<f32>, out_i: Ptr<i32>, out_h: Ptr<f16>) {
    let r = arange(0, R);
    let c = arange(0, C);
    let v = load(x + r.as_col() * C + c.as_row());
    store(out, v.sum(0).sum(0));
    store(out + 1 + r, v.sum(1));
    store(out + 1 + R + c, v.max(0));
    let w = load(i + r.as_col() * C + c.as_row());
    store(out_i + r, w.min(1));
    let hv = load(h + r.as_col() * C + c.as_row());
    store(out_h + c, hv.max(0));
}

/// `dot`s the tensor cores do not take run as f32 FMAs over operands staged in shared memory
/// (`DevGen::gen_dot`): f32 operands, and f16 ones whose K (8) is not a multiple of 16.
#[kernel(B = [16])]
pub fn dot_fma<const B: i32>(a: Ptr<f32>, b: Ptr<f32>, h: Ptr<f16>, c: Ptr<f32>, d: Ptr<f32>) {
    let r = arange(0, B);
    let k8 = arange(0, 8);
    let x = load(a + r.as_col() * B + r.as_row());
    let y = load(b + r.as_col() * B + r.as_row());
    store(c + r.as_col() * B + r.as_row(), dot(x, y));
    let hx = load(h + r.as_col() * 8 + k8.as_row());
    let hy = load(h + k8.as_col() * B + r.as_row());
    store(d + r.as_col() * B + r.as_row(), dot(hx, hy));
}
