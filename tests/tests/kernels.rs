//! Vector add and softmax on the CPU backend against float64 references.

use examples::softmax::softmax;
use examples::vector_add::{add, add_kernel};
use kernel_runtime::{LaunchError, Tensor};
use tests::worst_ratio;

#[test]
fn vector_add_matches_reference_with_ragged_tail() {
    let dev = tests::test_device();
    for &n in &[1usize, 1000, 1024, 98_432 + 7] {
        let x = Tensor::<f32>::randn(&dev, &[n], 1).unwrap();
        let y = Tensor::<f32>::randn(&dev, &[n], 2).unwrap();
        let out = add(&x, &y).unwrap();
        let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect();
        // f32 addition is correctly rounded: the error is at most half an ulp.
        assert!(worst_ratio(&out.to_f64_vec(), &want, 0.0, 1.2e-7) <= 1.0, "n = {n}");
    }
}

#[test]
fn vector_add_every_declared_block_size() {
    let dev = tests::test_device();
    let n = 777;
    let x = Tensor::<f32>::randn(&dev, &[n], 3).unwrap();
    let y = Tensor::<f32>::randn(&dev, &[n], 4).unwrap();
    for block in [256, 1024] {
        let out = Tensor::<f32>::full(&dev, &[n], f32::NAN).unwrap();
        add_kernel::launch(|m: &add_kernel::Meta| (kernel_runtime::cdiv(n as i32, m.BLOCK_SIZE),), &x, &y, &out, n as i32, block).unwrap();
        let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect();
        assert!(worst_ratio(&out.to_f64_vec(), &want, 0.0, 1.2e-7) <= 1.0);
    }
}

/// Views at odd element offsets: the chunks of 4 elements a thread owns are not 16-byte
/// aligned, so the vector loads and stores fall back to single elements (on the GPU); the
/// elements just outside the output view stay untouched.
#[test]
fn vector_add_on_misaligned_views() {
    let dev = tests::test_device();
    let n = 4096 + 3;
    let base_x = Tensor::<f32>::randn(&dev, &[n + 8], 21).unwrap();
    let base_y = Tensor::<f32>::randn(&dev, &[n + 8], 22).unwrap();
    for (ox, oy, oo) in [(1, 3, 2), (0, 0, 1), (4, 4, 4)] {
        let x = base_x.narrow(0, ox, n).unwrap();
        let y = base_y.narrow(0, oy, n).unwrap();
        let out_full = Tensor::<f32>::full(&dev, &[n + 8], f32::NAN).unwrap();
        let out = out_full.narrow(0, oo, n).unwrap();
        for block in [256, 1024] {
            add_kernel::launch(|m: &add_kernel::Meta| (kernel_runtime::cdiv(n as i32, m.BLOCK_SIZE),), &x, &y, &out, n as i32, block).unwrap();
            let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect();
            assert!(worst_ratio(&out.to_f64_vec(), &want, 0.0, 1.2e-7) <= 1.0, "offsets {ox} {oy} {oo}, block {block}");
            let full = out_full.to_f64_vec();
            assert!(full[..oo].iter().chain(&full[oo + n..]).all(|v| v.is_nan()), "wrote outside the output view");
        }
    }
}

#[test]
fn undeclared_block_size_is_a_launch_error() {
    let dev = tests::test_device();
    let x = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
    let err = add_kernel::launch((1,), &x, &x, &x, 8, 512).unwrap_err();
    assert!(matches!(err, LaunchError::NoInstance { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("BLOCK_SIZE = 512") && msg.contains("256, 1024"), "{msg}");
}

#[test]
fn vector_add_shape_mismatch_is_an_error() {
    let dev = tests::test_device();
    let x = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
    let y = Tensor::<f32>::zeros(&dev, &[9]).unwrap();
    assert!(matches!(add(&x, &y), Err(LaunchError::InvalidArgument { arg: "y", .. })));
}

#[test]
fn softmax_rows_match_reference() {
    let dev = tests::test_device();
    for &(rows, cols) in &[(1usize, 1usize), (7, 100), (33, 781), (4, 1024)] {
        let x = Tensor::<f32>::randn(&dev, &[rows, cols], 5).unwrap();
        let xv = x.to_f64_vec();
        let out = softmax(&x).unwrap();
        let mut want = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            let row = &xv[r * cols..(r + 1) * cols];
            let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
            want.extend(row.iter().map(|v| (v - mx).exp() / s));
        }
        let r = worst_ratio(&out.to_f64_vec(), &want, 1e-7, 1e-5);
        assert!(r <= 1.0, "{rows}x{cols}: ratio {r}");
    }
}
