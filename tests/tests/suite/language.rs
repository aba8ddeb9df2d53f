//! Every construct of the block language, run on the CPU backend and compared with a
//! reference computed in plain Rust (float64 where numbers are involved).

use kernel_runtime::{bf16, cdiv, f16, Tensor};
use tests::test_device;
use tests::kernels::*;
use tests::worst_ratio;

#[test]
fn bf16_dot_with_transpose_and_i64_strides() {
    let dev = tests::test_device();
    let (m, n, k) = (16usize, 32usize, 40usize);
    let a = Tensor::<bf16>::randn(&dev, &[m, k], 1).unwrap();
    let bt = Tensor::<bf16>::randn(&dev, &[n, k], 2).unwrap();
    let c = Tensor::<f32>::full(&dev, &[m, n], f32::NAN).unwrap();
    bf16_dot_trans::launch((1,), &a, &bt, &c, k as i32, k as i64, 16, 32, 16).unwrap();
    let (av, bv) = (a.to_f64_vec(), bt.to_f64_vec());
    let want: Vec<f64> = (0..m * n).map(|i| (0..k).map(|kk| av[(i / n) * k + kk] * bv[(i % n) * k + kk]).sum()).collect();
    assert!(worst_ratio(&c.to_f64_vec(), &want, 1e-4, 1e-5) <= 1.0);
}

/// `accumulator += dot(a, b)` with pointers recomputed from the loop variable (combined into
/// `dot(a, b, acc)` and stepped on the GPU), on ragged and tile-sized shapes.
#[test]
fn plus_equals_dot_with_recomputed_pointers() {
    let dev = tests::test_device();
    for (m, n, k) in [(70usize, 90usize, 150usize), (128, 128, 256), (64, 200, 40)] {
        let a = Tensor::<f16>::randn(&dev, &[m, k], 5).unwrap();
        let b = Tensor::<f16>::randn(&dev, &[k, n], 6).unwrap();
        let c = Tensor::<f32>::full(&dev, &[m, n], f32::NAN).unwrap();
        let grid = (cdiv(m as i32, 64), cdiv(n as i32, 64));
        matmul_plus_equals::launch(grid, &a, &b, &c, m as i32, n as i32, k as i32, 64, 64, 32).unwrap();
        let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
        let want: Vec<f64> = (0..m * n).map(|i| (0..k).map(|kk| av[(i / n) * k + kk] * bv[kk * n + i % n]).sum()).collect();
        let r = worst_ratio(&c.to_f64_vec(), &want, 1e-3, 1e-3);
        assert!(r <= 1.0, "{m}x{n}x{k}: worst error ratio {r}");
    }
}

/// `dot(a, w.trans(), acc)` of a weight stored `[N, K]` (the transpose pushed into the load's
/// pointers on the GPU), on ragged and tile-sized shapes.
#[test]
fn dot_with_a_transposed_weight() {
    let dev = tests::test_device();
    for (m, n, k) in [(70usize, 90usize, 150usize), (128, 128, 256), (64, 200, 40)] {
        let a = Tensor::<f16>::randn(&dev, &[m, k], 7).unwrap();
        let w = Tensor::<f16>::randn(&dev, &[n, k], 8).unwrap();
        let c = Tensor::<f32>::full(&dev, &[m, n], f32::NAN).unwrap();
        let grid = (cdiv(m as i32, 64), cdiv(n as i32, 64));
        matmul_weight_t::launch(grid, &a, &w, &c, m as i32, n as i32, k as i32, 64, 64, 32).unwrap();
        let (av, wv) = (a.to_f64_vec(), w.to_f64_vec());
        let want: Vec<f64> = (0..m * n).map(|i| (0..k).map(|kk| av[(i / n) * k + kk] * wv[(i % n) * k + kk]).sum()).collect();
        let r = worst_ratio(&c.to_f64_vec(), &want, 1e-3, 1e-3);
        assert!(r <= 1.0, "{m}x{n}x{k}: worst error ratio {r}");
    }
}

/// A K tail loaded with `other` 1.0 adds one per padded element (the GPU's copy engine fills
/// zeros there, which the fix-up must replace), and with K a multiple of the tile nothing.
#[test]
fn k_tail_with_a_nonzero_other() {
    let dev = tests::test_device();
    for (m, n, k) in [(128usize, 64usize, 150usize), (64, 128, 40), (64, 64, 96)] {
        let a = Tensor::<f16>::randn(&dev, &[m, k], 11).unwrap();
        let b = Tensor::<f16>::randn(&dev, &[k, n], 12).unwrap();
        let c = Tensor::<f32>::full(&dev, &[m, n], f32::NAN).unwrap();
        let grid = (cdiv(m as i32, 64), cdiv(n as i32, 64));
        matmul_ones_past_k::launch(grid, &a, &b, &c, n as i32, k as i32, 64, 64, 32).unwrap();
        let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
        let pad = (k.div_ceil(32) * 32 - k) as f64;
        let want: Vec<f64> = (0..m * n).map(|i| (0..k).map(|kk| av[(i / n) * k + kk] * bv[kk * n + i % n]).sum::<f64>() + pad).collect();
        let r = worst_ratio(&c.to_f64_vec(), &want, 1e-3, 1e-3);
        assert!(r <= 1.0, "{m}x{n}x{k}: worst error ratio {r}");
    }
}

/// A `where_` in a `dot` loop whose condition holds on whole blocks in some iterations, is cut in
/// others and fails in the rest (`masked_scores`): every (bound, switch) pair against float64,
/// with a ragged and a whole number of key blocks.
#[test]
fn where_conditions_on_whole_blocks_cut_blocks_and_none() {
    let dev = tests::test_device();
    let (m, d, bn) = (128usize, 32usize, 32usize);
    let q = Tensor::<f16>::randn(&dev, &[m, d], 13).unwrap();
    let qv = q.to_f64_vec();
    for n in [100usize, 96] {
        let k = Tensor::<f16>::randn(&dev, &[n, d + 8], 14).unwrap();
        let kv = k.to_f64_vec();
        for (lim, flag) in [(n, 1), (n, 0), (70, 1), (70, 0), (0, 1), (200, 1)] {
            let out = Tensor::<f32>::full(&dev, &[m, bn], f32::NAN).unwrap();
            masked_scores::launch((m as i32 / 64,), &q, &k, &out, n as i32, (d + 8) as i32, lim as i32, flag, 64, 32, 32).unwrap();
            let want: Vec<f64> = (0..m * bn)
                .map(|i| {
                    let (row, j) = (i / bn, i % bn);
                    (j..n).step_by(bn).filter(|&col| col < lim && (flag > 0 || row >= col)).map(|col| (0..d).map(|x| qv[row * d + x] * kv[col * (d + 8) + x]).sum::<f64>()).sum()
                })
                .collect();
            let r = worst_ratio(&out.to_f64_vec(), &want, 1e-3, 1e-3);
            assert!(r <= 1.0, "n {n}, lim {lim}, flag {flag}: worst error ratio {r}");
        }
    }
}

/// Pointers advanced before the loads (and in two steps) give the same product.
#[test]
fn pointers_advanced_before_the_loads() {
    let dev = tests::test_device();
    for (m, n, k) in [(70usize, 90usize, 150usize), (128, 128, 256)] {
        let a = Tensor::<f16>::randn(&dev, &[m, k], 9).unwrap();
        let b = Tensor::<f16>::randn(&dev, &[k, n], 10).unwrap();
        let c = Tensor::<f32>::full(&dev, &[m, n], f32::NAN).unwrap();
        let grid = (cdiv(m as i32, 64), cdiv(n as i32, 64));
        matmul_steps_first::launch(grid, &a, &b, &c, m as i32, n as i32, k as i32, 64, 64, 32).unwrap();
        let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
        let want: Vec<f64> = (0..m * n).map(|i| (0..k).map(|kk| av[(i / n) * k + kk] * bv[kk * n + i % n]).sum()).collect();
        let r = worst_ratio(&c.to_f64_vec(), &want, 1e-3, 1e-3);
        assert!(r <= 1.0, "{m}x{n}x{k}: worst error ratio {r}");
    }
}

#[test]
fn reductions_on_both_axes_and_2d_grid() {
    let dev = tests::test_device();
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

#[test]
fn negative_step_loops_and_both_kinds_of_if() {
    let dev = tests::test_device();
    let out = Tensor::<i32>::zeros(&dev, &[64]).unwrap();
    for (double, bonus) in [(false, 5), (true, 0)] {
        countdown::launch((1,), &out, 10, bonus, 64, double).unwrap();
        let ksum: i32 = [10, 7, 4, 1].iter().sum();
        let want: Vec<i32> = (0..64).map(|i| i * ksum * if double { 2 } else { 1 } + if bonus > 0 { bonus } else { -1 }).collect();
        assert_eq!(out.to_vec(), want, "double={double} bonus={bonus}");
    }
}

#[test]
fn casts_integer_ops_and_math() {
    let dev = tests::test_device();
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

#[test]
fn shape_manipulation_and_scalar_memory() {
    let dev = tests::test_device();
    let scalar = Tensor::<f32>::from_vec(&dev, &[1], vec![2.0]).unwrap();
    let out = Tensor::<f32>::zeros(&dev, &[16]).unwrap();
    shapes::launch((1,), &scalar, &out, 9, 4).unwrap();
    let want: Vec<f32> = (0..16).map(|i| (0.5 + (i % 4) as f32) * 2.0).collect();
    assert_eq!(out.to_vec(), want);
    assert_eq!(scalar.to_vec(), vec![cdiv(9, 4) as f32]);
}

#[test]
fn integer_and_half_reductions_along_a_long_axis() {
    let dev = test_device();
    let (rows, cols) = (4usize, 512usize);
    let xs: Vec<i32> = (0..rows * cols).map(|i| ((i as i64 * 7919) % 2001 - 1000) as i32).collect();
    let x = Tensor::<i32>::from_vec(&dev, &[rows, cols], xs.clone()).unwrap();
    let h = Tensor::<f16>::randn(&dev, &[rows, cols], 9).unwrap();
    let out = Tensor::<i32>::full(&dev, &[3 * rows + 1], 12345).unwrap();
    let hout = Tensor::<f32>::full(&dev, &[rows], f32::NAN).unwrap();
    long_reductions::launch((1,), &x, &h, &out, &hout, 4, 512).unwrap();
    let o = out.to_vec();
    let row = |r: usize| &xs[r * cols..(r + 1) * cols];
    for r in 0..rows {
        assert_eq!(o[r], row(r).iter().sum::<i32>(), "sum row {r}");
        assert_eq!(o[rows + r], *row(r).iter().max().unwrap(), "max row {r}");
        assert_eq!(o[2 * rows + r], *row(r).iter().min().unwrap(), "min row {r}");
    }
    assert_eq!(o[3 * rows], (0..rows).map(|r| *row(r).iter().min().unwrap()).max().unwrap());
    let hv = h.to_f64_vec();
    for r in 0..rows {
        let want: f64 = hv[r * cols..(r + 1) * cols].iter().sum();
        // f16 inputs, f32 accumulation (in any order), f16 result rounded once, then f32.
        let got = hout.to_f64_vec()[r];
        assert!((got - want).abs() <= 1e-3 * want.abs().max(1.0) + 0.02, "row {r}: {got} vs {want}");
    }
}

#[test]
fn blocks_that_are_multiples_of_16_but_not_powers_of_two() {
    let dev = tests::test_device();
    let b = 48usize;
    let a = Tensor::<f16>::randn(&dev, &[b, b], 31).unwrap();
    let bm = Tensor::<f16>::randn(&dev, &[b, b], 32).unwrap();
    let c = Tensor::<f32>::full(&dev, &[b, b], f32::NAN).unwrap();
    let (rs, cm) = (Tensor::<f32>::full(&dev, &[b], f32::NAN).unwrap(), Tensor::<f32>::full(&dev, &[b], f32::NAN).unwrap());
    let vals: Vec<f32> = (0..b).map(|i| i as f32 - 20.0).collect();
    let v = Tensor::from_vec(&dev, &[b], vals.clone()).unwrap();
    let n = 37usize;
    blocks_of_48::launch((1,), &a, &bm, &c, &rs, &cm, &v, n as i32, 48).unwrap();
    let (av, bv) = (a.to_f64_vec(), bm.to_f64_vec());
    let want: Vec<f64> = (0..b * b).map(|i| (0..b).map(|k| av[(i / b) * b + k] * bv[k * b + i % b]).sum()).collect();
    assert!(worst_ratio(&c.to_f64_vec(), &want, 1e-3, 1e-3) <= 1.0);
    let row: Vec<f64> = (0..b).map(|r| want[r * b..(r + 1) * b].iter().sum()).collect();
    let col: Vec<f64> = (0..b).map(|cc| (0..b).map(|r| want[r * b + cc]).fold(f64::NEG_INFINITY, f64::max)).collect();
    assert!(worst_ratio(&rs.to_f64_vec(), &row, 1e-2, 1e-3) <= 1.0);
    assert!(worst_ratio(&cm.to_f64_vec(), &col, 1e-3, 1e-3) <= 1.0);
    let got = v.to_f64_vec();
    for i in 0..b {
        let want = if i < n { 2.0 * f64::from(vals[i]) } else { f64::from(vals[i]) };
        assert_eq!(got[i], want, "v[{i}]");
    }
}

/// `while` with a condition that reduces a block the body changes: re-evaluated every time.
#[test]
fn while_loop_reevaluates_its_condition() {
    let dev = test_device();
    let xs: Vec<f32> = (0..32).map(|i| i as f32 * 3.0 - 20.0).collect();
    let x = Tensor::from_vec(&dev, &[32], xs.clone()).unwrap();
    let out = Tensor::<f32>::full(&dev, &[32], f32::NAN).unwrap();
    let steps = Tensor::<i32>::full(&dev, &[1], -1).unwrap();
    halvings::launch((1,), &x, &out, &steps, 2.5, 32).unwrap();
    let mut want = xs.clone();
    let mut k = 0;
    while want.iter().cloned().fold(f32::NEG_INFINITY, f32::max) > 2.5 {
        want.iter_mut().for_each(|v| *v *= 0.5);
        k += 1;
    }
    assert_eq!((out.to_vec(), steps.to_vec()), (want, vec![k]));
}

/// `#[kernel(num_warps = [2, 4, 8], num_stages = [1, 3])]`: six configs, each launchable with
/// `launch_config`, all giving the same result; `launch` tunes among them.
#[test]
fn num_warps_and_num_stages_lists_make_configs() {
    let dev = test_device();
    assert_eq!(warps_list::CONFIGS.iter().map(|c| (c.num_warps, c.num_stages)).collect::<Vec<_>>(), vec![(2, 1), (2, 3), (4, 1), (4, 3), (8, 1), (8, 3)]);
    assert!(warps_list::AUTOTUNED);
    let xs: Vec<f32> = (0..256).map(|i| (i % 7) as f32 - 3.0).collect();
    let x = Tensor::from_vec(&dev, &[256], xs.clone()).unwrap();
    let mut want: Vec<f32> = xs.iter().scan(0.0, |s, v| { *s += v; Some(*s) }).collect();
    want.push(xs.iter().sum());
    for c in 0..warps_list::CONFIGS.len() {
        let out = Tensor::<f32>::full(&dev, &[257], f32::NAN).unwrap();
        warps_list::launch_config(c, (1,), &x, &out, 256).unwrap();
        assert_eq!(out.to_vec(), want, "config {c}");
    }
    let out = Tensor::<f32>::full(&dev, &[257], f32::NAN).unwrap();
    warps_list::launch((1,), &x, &out, 256).unwrap();
    assert_eq!(out.to_vec(), want);
}

/// Pointer blocks stepped in a loop (`xs += B`) over rows of any length and alignment: every
/// element of each row once (computed in f32, rounded once, as the reference), nothing past it.
#[test]
fn stepped_pointer_rows() {
    let dev = test_device();
    // (rows, n, stride): whole blocks; a tail; rows starting 2-byte aligned; a row shorter than
    // a block.
    for (rows, n, stride) in [(3usize, 4096usize, 4096usize), (3, 5000, 5000), (4, 4097, 4099), (2, 100, 104)] {
        let xs: Vec<f16> = (0..rows * stride).map(|i| f16::from_f32(((i * 37) % 1001) as f32 / 64.0 - 7.0)).collect();
        let x = Tensor::from_vec(&dev, &[rows * stride], xs.clone()).unwrap();
        let y = Tensor::<f16>::full(&dev, &[rows * stride], f16::NAN).unwrap();
        stepped_rows::launch((rows as i32,), &x, &y, n as i32, stride as i32, 2048).unwrap();
        let got = y.to_vec();
        for (i, (g, v)) in got.iter().zip(&xs).enumerate() {
            if i % stride < n {
                assert_eq!(g.to_bits(), f16::from_f32(v.to_f32() * 2.0 + 1.0).to_bits(), "rows {rows}, n {n}, stride {stride}: element {i}");
            } else {
                assert!(g.is_nan(), "rows {rows}, n {n}, stride {stride}: element {i} past its row was written");
            }
        }
    }
}

/// One `q` tile for two loops over the keys (Triton's two-stage attention), against float64.
#[test]
fn two_loops_over_one_resident_operand() {
    let dev = test_device();
    let (m, n) = (128usize, 160usize);
    let q = Tensor::<f16>::randn(&dev, &[m, 64], 31).unwrap();
    let k = Tensor::<f16>::randn(&dev, &[n, 64], 32).unwrap();
    let v = Tensor::<f16>::randn(&dev, &[n, 64], 33).unwrap();
    let (qv, kv, vv) = (q.to_f64_vec(), k.to_f64_vec(), v.to_f64_vec());
    let mut want = vec![0.0f64; m * 64];
    for i in 0..m {
        let s: Vec<f64> = (0..n).map(|j| (0..64).map(|d| qv[i * 64 + d] * kv[j * 64 + d]).sum()).collect();
        let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
        let sum: f64 = e.iter().sum();
        for d in 0..64 {
            want[i * 64 + d] = (0..n).map(|j| e[j] * vv[j * 64 + d]).sum::<f64>() / sum;
        }
    }
    for lo in [0, 64, 96, 160] {
        let o = Tensor::<f32>::full(&dev, &[m, 64], f32::NAN).unwrap();
        two_stage_attention::launch(((m / 64) as i32,), &q, &k, &v, &o, n as i32, lo, 64, 32).unwrap();
        let r = worst_ratio(&o.to_f64_vec(), &want, 2e-2, 2e-2);
        assert!(r <= 1.0, "lo {lo}: worst error ratio {r}");
    }
}
