//! Reductions along every axis of blocks in each layout the GPU code keeps them in, against
//! float64 (or exact) references: `tests::reductions`.

use kernel_runtime::{Tensor, f16};
use tests::reductions::{dot_reductions, reduce_3d, reduce_layouts};
use tests::worst_ratio;

#[test]
fn every_axis_every_warp_count() {
    let dev = tests::test_device();
    for (r, c) in [(1usize, 16usize), (1, 256), (8, 16), (8, 256)] {
        let x = Tensor::<f32>::randn(&dev, &[r * c], 40 + r as u64).unwrap();
        let bits_v: Vec<i32> = (0..r * c).map(|i| ((i as i64 * 2_654_435_761) >> 7) as i32).collect();
        let bits = Tensor::from_vec(&dev, &[r * c], bits_v.clone()).unwrap();
        let xv = x.to_f64_vec();
        let at = |i: usize, j: usize| xv[i * c + j];
        let mut want: Vec<f64> = (0..r).map(|i| (0..c).map(|j| at(i, j)).sum()).collect();
        want.extend((0..c).map(|j| (0..r).map(|i| at(i, j)).fold(f64::NEG_INFINITY, f64::max)));
        want.push(xv.iter().sum());
        want.extend((0..r).map(|i| (0..c).map(|j| at(i, j)).fold(f64::INFINITY, f64::min)));
        let want_xor: Vec<i32> = (0..c).map(|j| (0..r).fold(0, |a, i| a ^ bits_v[i * c + j])).collect();
        for config in 0..reduce_layouts::CONFIGS.len() {
            let out = Tensor::<f32>::full(&dev, &[want.len()], f32::NAN).unwrap();
            let xo = Tensor::<i32>::full(&dev, &[c], -7).unwrap();
            reduce_layouts::launch_config(config, (1,), &x, &bits, &out, &xo, r as i32, c as i32).unwrap();
            let got = out.to_f64_vec();
            // Sums of up to 2048 terms of magnitude about 1, in f32.
            assert!(worst_ratio(&got, &want, 1e-4, 1e-5) <= 1.0, "[{r}, {c}] config {config}: {got:?}");
            assert_eq!(xo.to_vec(), want_xor, "[{r}, {c}] config {config}: xor");
        }
    }
}

#[test]
fn three_axes_of_a_3d_block() {
    let dev = tests::test_device();
    for b in [2usize, 32] {
        let n = 4 * b * 8;
        let x = Tensor::<f16>::randn(&dev, &[n], 50 + b as u64).unwrap();
        let xv = x.to_f64_vec();
        let at = |i: usize, j: usize, k: usize| xv[(i * b + j) * 8 + k];
        let mut want: Vec<f64> = (0..4 * 8).map(|f| (0..b).map(|j| at(f / 8, j, f % 8)).sum()).collect();
        want.extend((0..b * 8).map(|f| (0..4).map(|i| at(i, f / 8, f % 8)).fold(f64::NEG_INFINITY, f64::max)));
        want.extend((0..4 * b).map(|f| (0..8).map(|k| at(f / b, f % b, k)).fold(f64::INFINITY, f64::min)));
        let out = Tensor::<f32>::full(&dev, &[want.len()], f32::NAN).unwrap();
        reduce_3d::launch((1,), &x, &out, b as i32).unwrap();
        assert!(worst_ratio(&out.to_f64_vec(), &want, 1e-5, 1e-5) <= 1.0, "B = {b}");
    }
}

#[test]
fn rows_and_columns_of_a_dot_result() {
    use kernel_runtime::MetaValue;
    let dev = tests::test_device();
    for (config, c) in dot_reductions::CONFIGS.iter().enumerate() {
        let meta = |name: &str| match c.meta.iter().find(|(n, _)| *n == name) {
            Some((_, MetaValue::Int(v))) => *v as usize,
            other => panic!("config {config}: {name} is {other:?}"),
        };
        let (m, n) = (meta("M"), meta("N"));
        let (a, av) = tests::randn_f16(&dev, m, 32, 60 + m as u64);
        let (b, bv) = tests::randn_f16(&dev, 32, n, 61 + n as u64);
        let s = tests::matmul_ref(&av, &bv, m, n, 32, tests::identity);
        let rmax_want: Vec<f64> = (0..m).map(|i| s[i * n..(i + 1) * n].iter().copied().fold(f64::NEG_INFINITY, f64::max)).collect();
        let rsum_want: Vec<f64> = (0..m).map(|i| s[i * n..(i + 1) * n].iter().map(|v| (v - rmax_want[i]).exp()).sum()).collect();
        let csum_want: Vec<f64> = (0..n).map(|j| (0..m).map(|i| s[i * n + j]).sum()).collect();
        let rmax = Tensor::<f32>::full(&dev, &[m], f32::NAN).unwrap();
        let rsum = Tensor::<f32>::full(&dev, &[m], f32::NAN).unwrap();
        let csum = Tensor::<f32>::full(&dev, &[n], f32::NAN).unwrap();
        dot_reductions::launch_config(config, (1,), &a, &b, &rmax, &rsum, &csum).unwrap();
        // f32 accumulation of 32 products of f16 values, then sums of up to 128 terms.
        let what = format!("[{m}, {n}], {} warps", c.num_warps);
        assert!(worst_ratio(&rmax.to_f64_vec(), &rmax_want, 1e-3, 1e-4) <= 1.0, "{what}: row maxima");
        assert!(worst_ratio(&rsum.to_f64_vec(), &rsum_want, 1e-3, 1e-4) <= 1.0, "{what}: row sums of exp");
        assert!(worst_ratio(&csum.to_f64_vec(), &csum_want, 1e-2, 1e-4) <= 1.0, "{what}: column sums");
    }
}
