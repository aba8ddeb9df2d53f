//! Every construct of the block language, run on the CPU backend and compared with a
//! reference computed in plain Rust (float64 where numbers are involved).

use kernel_runtime::{bf16, cdiv, f16, Device, Tensor};
use kernel_std::prelude::*;
use tests::worst_ratio;

/// bf16 `dot` with the accumulate form, a transposed operand and an i64 row stride.
#[kernel(BM = [16], BN = [32], BK = [16])]
fn bf16_dot_trans<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<bf16>, bt: Ptr<bf16>, c: Ptr<f32>, k: i32, lda: i64) {
    let rm = arange(0, BM);
    let rn = arange(0, BN);
    let rk = arange(0, BK);
    let mut acc = zeros::<f32>([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let ka = k0 + rk;
        let x = load(a + rm.as_col() * lda + ka.as_row(), ka.as_row() < k, 0.0);
        // bt is stored (N, K): load a [BN, BK] block and transpose it.
        let yt = load(bt + rn.as_col() * k + ka.as_row(), ka.as_row() < k, 0.0);
        acc += dot(x, yt.trans());
    }
    store(c + rm.as_col() * BN + rn.as_row(), acc);
}

#[test]
fn bf16_dot_with_transpose_and_i64_strides() {
    let dev = Device::cpu();
    let (m, n, k) = (16usize, 32usize, 40usize);
    let a = Tensor::<bf16>::randn(&dev, &[m, k], 1).unwrap();
    let bt = Tensor::<bf16>::randn(&dev, &[n, k], 2).unwrap();
    let c = Tensor::<f32>::full(&dev, &[m, n], f32::NAN).unwrap();
    bf16_dot_trans::launch((1,), &a, &bt, &c, k as i32, k as i64, 16, 32, 16).unwrap();
    let (av, bv) = (a.to_f64_vec(), bt.to_f64_vec());
    let want: Vec<f64> = (0..m * n).map(|i| (0..k).map(|kk| av[(i / n) * k + kk] * bv[(i % n) * k + kk]).sum()).collect();
    assert!(worst_ratio(&c.to_f64_vec(), &want, 1e-4, 1e-5) <= 1.0);
}

/// Row sums and column maxima of a 2-D block, a 2-D grid, `num_programs`, early `return`.
#[kernel(R = [8], C = [16])]
fn reduce_both_axes<const R: i32, const C: i32>(x: Ptr<f32>, row_sum: Ptr<f32>, col_max: Ptr<f32>, limit: i32) {
    let tile = program_id(0) + num_programs(0) * program_id(1);
    if tile >= limit {
        return;
    }
    let r = arange(0, R);
    let c = arange(0, C);
    let base = x + tile * R * C;
    let v = load(base + r.as_col() * C + c.as_row());
    store(row_sum + tile * R + r, v.sum(1));
    store(col_max + tile * C + c, v.max(0));
}

#[test]
fn reductions_on_both_axes_and_2d_grid() {
    let dev = Device::cpu();
    let tiles = 6usize;
    let x = Tensor::<f32>::randn(&dev, &[tiles, 8, 16], 3).unwrap();
    let rs = Tensor::<f32>::full(&dev, &[tiles * 8], -7.0).unwrap();
    let cm = Tensor::<f32>::full(&dev, &[tiles * 16], -7.0).unwrap();
    // A 2 x 4 grid has 8 programs; `limit` makes the last two return early.
    reduce_both_axes::launch((2, 4), &x, &rs, &cm, tiles as i32, 8, 16).unwrap();
    let xv = x.to_f64_vec();
    for t in 0..tiles {
        for r in 0..8 {
            let s: f64 = (0..16).map(|c| xv[t * 128 + r * 16 + c]).sum();
            assert!((rs.to_f64_vec()[t * 8 + r] - s).abs() < 1e-5);
        }
        for c in 0..16 {
            let mx = (0..8).map(|r| xv[t * 128 + r * 16 + c]).fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(cm.to_f64_vec()[t * 16 + c], mx);
        }
    }
}

/// Counts down with a negative step; `if` on a bool meta-parameter and on a runtime scalar.
#[kernel(B = [64], DOUBLE = [false, true])]
fn countdown<const B: i32, const DOUBLE: bool>(out: Ptr<i32>, n: i32, bonus: i32) {
    let i = arange(0, B);
    let mut acc = zeros::<i32>([B]);
    for k in range(n, 0, -3) {
        acc += i * k;
    }
    if DOUBLE {
        acc = acc * 2;
    }
    if bonus > 0 {
        acc = acc + bonus;
    } else {
        acc = acc - 1;
    }
    store(out + i, acc);
}

#[test]
fn negative_step_loops_and_both_kinds_of_if() {
    let dev = Device::cpu();
    let out = Tensor::<i32>::zeros(&dev, &[64]).unwrap();
    for (double, bonus) in [(false, 5), (true, 0)] {
        countdown::launch((1,), &out, 10, bonus, 64, double).unwrap();
        let ksum: i32 = [10, 7, 4, 1].iter().sum();
        let want: Vec<i32> = (0..64).map(|i| i * ksum * if double { 2 } else { 1 } + if bonus > 0 { bonus } else { -1 }).collect();
        assert_eq!(out.to_vec(), want, "double={double} bonus={bonus}");
    }
}

/// Casts with rounding and saturation, integer ops, shifts, `where_`, `minimum`, math.
#[kernel(B = [8])]
fn elementwise<const B: i32>(x: Ptr<f32>, h: Ptr<f16>, ints: Ptr<i32>, wide: Ptr<i64>, u: Ptr<u32>, f: Ptr<f32>) {
    let i = arange(0, B);
    let v = load(x + i);
    store(h + i, v.to::<f16>());
    store(ints + i, (v * 1e10).to::<i32>() / 7 % 5);
    store(wide + i, (i.to::<i64>() << 40) - i.to::<i64>());
    store(u + i, (i.to::<u32>() ^ 3) | 16);
    let safe = where_(v > 0.0, sqrt(v), minimum(v, -1.0));
    store(f + i, exp(safe) + abs(v) - v.floor());
}

#[test]
fn casts_integer_ops_and_math() {
    let dev = Device::cpu();
    let xs = [1.0f32, -2.5, 65520.0, -1e30, 0.333_333_34, f32::INFINITY, f32::NAN, 3.0];
    let x = Tensor::<f32>::from_vec(&dev, &[8], xs.to_vec()).unwrap();
    let h = Tensor::<f16>::zeros(&dev, &[8]).unwrap();
    let ints = Tensor::<i32>::zeros(&dev, &[8]).unwrap();
    let wide = Tensor::<i64>::zeros(&dev, &[8]).unwrap();
    let u = Tensor::<u32>::zeros(&dev, &[8]).unwrap();
    let f = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
    elementwise::launch((1,), &x, &h, &ints, &wide, &u, &f, 8).unwrap();
    let hv = h.to_vec();
    for (a, b) in xs.iter().zip(&hv) {
        let want = f16::from_f32(*a);
        assert!(want.to_bits() == b.to_bits() || (want.is_nan() && b.is_nan()), "{a} -> {b} (want {want})");
    }
    // 65520 rounds to +inf in f16 (round to nearest even past the largest finite value).
    assert!(hv[2].is_infinite());
    let want_ints: Vec<i32> = xs.iter().map(|v| ((v * 1e10) as i32) / 7 % 5).collect();
    assert_eq!(ints.to_vec(), want_ints);
    assert_eq!(wide.to_vec(), (0..8i64).map(|i| (i << 40) - i).collect::<Vec<_>>());
    assert_eq!(u.to_vec(), (0..8u32).map(|i| (i ^ 3) | 16).collect::<Vec<_>>());
    let fv = f.to_f64_vec();
    for (k, v) in xs.iter().enumerate() {
        let v = *v as f64;
        let safe = if v > 0.0 { v.sqrt() } else { v.min(-1.0) };
        // The kernel computes in f32: out-of-range results are infinite there.
        let want = (safe.exp() + v.abs() - v.floor()) as f32 as f64;
        let got = fv[k];
        if want.is_nan() {
            assert!(got.is_nan(), "lane {k}: {got}");
        } else if want.is_infinite() {
            assert_eq!(got, want as f32 as f64, "lane {k}");
        } else {
            assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "lane {k}: {got} vs {want}");
        }
    }
}

/// `full`, `broadcast_to`, `reshape`, `expand_dims`, scalar `load`/`store`, `cdiv` and `max`.
#[kernel(B = [4])]
fn shapes<const B: i32>(scalar: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let s = load(scalar);
    let grid = full::<f32>([B, B], 0.5).broadcast_to([B, B]) + arange(0, B).expand_dims(0).to::<f32>();
    let flat = grid.reshape([B * B]);
    store(out + arange(0, B * B), flat * s);
    store(scalar, max(cdiv(n, B), 1).to::<f32>());
}

#[test]
fn shape_manipulation_and_scalar_memory() {
    let dev = Device::cpu();
    let scalar = Tensor::<f32>::from_vec(&dev, &[1], vec![2.0]).unwrap();
    let out = Tensor::<f32>::zeros(&dev, &[16]).unwrap();
    shapes::launch((1,), &scalar, &out, 9, 4).unwrap();
    let want: Vec<f32> = (0..16).map(|i| (0.5 + (i % 4) as f32) * 2.0).collect();
    assert_eq!(out.to_vec(), want);
    assert_eq!(scalar.to_vec(), vec![cdiv(9, 4) as f32]);
}
