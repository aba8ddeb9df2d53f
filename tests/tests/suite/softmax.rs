//! Softmax (Triton's tutorial 02) against float64 references: the fused kernels in f32 and f16
//! at every block size with ragged column counts, the online kernel on long rows (through the
//! wrapper) and on short ones (forced), views read through their strides, outputs with strided
//! rows, -inf and large inputs, and the wrappers' typed errors.

use examples::softmax::{block_config, softmax, softmax_f16_kernel, softmax_into, softmax_kernel, softmax_online_into, SoftmaxDtype, MAX_BLOCK_COLUMNS};
use kernel_runtime::{f16, DType, LaunchError, MetaValue, Tensor};
use tests::worst_ratio;

/// Row-wise softmax of the logical elements of `x` (a `[rows, cols]` view) in float64.
fn softmax_ref<T: DType>(x: &Tensor<T>) -> Vec<f64> {
    let (rows, cols) = (x.shape()[0], x.shape()[1]);
    let xv = x.to_f64_vec();
    let mut want = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        let row = &xv[r * cols..(r + 1) * cols];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        want.extend(row.iter().map(|v| (v - mx).exp() / s));
    }
    want
}

/// Tolerances by dtype: f32 sums and `exp` round at about 1e-7 relative (1e-5 leaves room for
/// a row's sum of 20000 terms); f16 outputs round once at 2^-11 relative, and below 2^-14 (f16
/// subnormals) at 2^-25 absolute.
fn tolerance<T: DType>() -> (f64, f64) {
    if T::KIND == f16::KIND {
        (1e-7, 1e-3)
    } else {
        (1e-9, 1e-5)
    }
}

/// `scale * normal` values of dtype `T`, `[rows, cols]`.
fn randn<T: DType>(rows: usize, cols: usize, seed: u64, scale: f64) -> Tensor<T> {
    let dev = tests::test_device();
    let v = Tensor::<f64>::randn(&dev, &[rows, cols], seed).unwrap().to_vec();
    Tensor::from_vec(&dev, &[rows, cols], v.into_iter().map(|x| T::from_f64(scale * x)).collect()).unwrap()
}

fn nan<T: DType>() -> T {
    T::from_f64(f64::NAN)
}

/// Runs `softmax_into` (or `softmax_online_into` when `online`) on `x` into an output poisoned
/// with NaN, and checks it.
fn check<T: SoftmaxDtype>(x: &Tensor<T>, online: bool, what: &str) {
    let out = Tensor::<T>::full(x.device(), x.shape(), nan::<T>()).unwrap();
    if online {
        softmax_online_into(x, &out).unwrap();
    } else {
        softmax_into(x, &out).unwrap();
    }
    let (atol, rtol) = tolerance::<T>();
    let r = worst_ratio(&out.to_f64_vec(), &softmax_ref(x), atol, rtol);
    assert!(r <= 1.0, "{what}: worst error ratio {r}");
}

/// Column counts that reach every block size of the fused kernels, ragged and exact.
const FUSED_COLUMNS: [usize; 10] = [1, 127, 200, 300, 1000, 1024, 1025, 4000, 5000, 16384];

fn fused_columns<T: SoftmaxDtype>() {
    for (i, &cols) in FUSED_COLUMNS.iter().enumerate() {
        let rows = if cols > 4096 { 3 } else { 9 };
        let x = randn::<T>(rows, cols, 10 + i as u64, 2.0);
        check(&x, false, &format!("{:?} {rows}x{cols}", T::KIND));
    }
}

#[test]
fn fused_f32_matches_reference_at_every_block_size() {
    fused_columns::<f32>();
}

#[test]
fn fused_f16_matches_reference_at_every_block_size() {
    fused_columns::<f16>();
}

/// Rows longer than [`MAX_BLOCK_COLUMNS`] run the online kernel through the wrapper; the
/// online kernel forced on short rows (one partial block, exactly one block, a block and one
/// column, several blocks).
fn online_rows<T: SoftmaxDtype>() {
    let x = randn::<T>(2, 20000, 30, 2.0);
    assert!(block_config(20000).is_none());
    check(&x, false, &format!("{:?} 2x20000 (online through softmax_into)", T::KIND));
    let y = softmax(&x).unwrap();
    let (atol, rtol) = tolerance::<T>();
    assert!(worst_ratio(&y.to_f64_vec(), &softmax_ref(&x), atol, rtol) <= 1.0);
    for (i, &cols) in [1usize, 5, 127, 4096, 4097, 10000].iter().enumerate() {
        let x = randn::<T>(5, cols, 40 + i as u64, 2.0);
        check(&x, true, &format!("{:?} 5x{cols} (online forced)", T::KIND));
    }
}

#[test]
fn online_f32_matches_reference() {
    online_rows::<f32>();
}

#[test]
fn online_f16_matches_reference() {
    online_rows::<f16>();
}

/// Large magnitudes (the maximum is subtracted before `exp`) and -inf entries (which give 0,
/// also in lanes of the online kernel that have seen nothing else yet).
fn extremes<T: SoftmaxDtype>() {
    let dev = tests::test_device();
    let cols = 5000;
    let mut v: Vec<f64> = randn::<f64>(4, cols, 50, 3.0).to_vec();
    for (i, x) in v.iter_mut().enumerate() {
        let (r, c) = (i / cols, i % cols);
        match r {
            // A large offset: exp would overflow without the maximum subtracted.
            0 => *x += 10000.0,
            // -inf in the first columns (the first block of every lane) and scattered.
            1 if c < 300 || c % 7 == 0 => *x = f64::NEG_INFINITY,
            // One dominant entry late in the row: the running maximum moves.
            2 if c == cols - 3 => *x = 40.0,
            _ => {}
        }
    }
    if T::KIND == f16::KIND {
        // 10000 plus normals is coarse in f16 (spacing 8): scale the offset down.
        for x in &mut v[..cols] {
            *x -= 9000.0;
        }
    }
    let x = Tensor::from_vec(&dev, &[4, cols], v.into_iter().map(T::from_f64).collect()).unwrap();
    check(&x, false, &format!("{:?} extremes (fused)", T::KIND));
    check(&x, true, &format!("{:?} extremes (online)", T::KIND));
}

#[test]
fn extremes_f32() {
    extremes::<f32>();
}

#[test]
fn extremes_f16() {
    extremes::<f16>();
}

/// Views are read through their strides and storage offset: a transposed matrix (column
/// stride = rows), a column-narrowed one (offset, row stride wider than the row), a row-narrowed
/// one (contiguous, offset), and a transposed view narrowed on both dimensions; by the fused
/// and the online kernels.
fn views<T: SoftmaxDtype>() {
    let dev = tests::test_device();
    for &(rows, cols) in &[(33usize, 100usize), (9, 781), (3, 5000)] {
        for online in [false, true] {
            let what = |v: &str| format!("{:?} {v} {rows}x{cols}, online {online}", T::KIND);
            let tall = randn::<T>(cols, rows, 6, 1.0);
            check(&tall.t(), online, &what("transposed"));
            let wide = randn::<T>(rows, cols + 7, 7, 1.0);
            let x = wide.narrow(1, 3, cols).unwrap();
            assert_eq!(x.storage_offset(), 3);
            check(&x, online, &what("column-narrowed"));
            let long = randn::<T>(rows + 2, cols, 8, 1.0);
            check(&long.narrow(0, 2, rows).unwrap(), online, &what("row-narrowed"));
            let big = randn::<T>(cols + 2, rows + 3, 9, 1.0);
            let x = big.t().narrow(0, 1, rows).unwrap().narrow(1, 2, cols).unwrap();
            assert_eq!((x.strides(), x.storage_offset()), (&[1, rows + 3][..], 2 * (rows + 3) + 1));
            check(&x, online, &what("transposed and narrowed"));
        }
    }
    // A transposed 2x3 matrix gives the softmax of its columns.
    let x = Tensor::from_vec(&dev, &[2, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0].map(T::from_f64).to_vec()).unwrap();
    let got = softmax(&x.t()).unwrap().to_f64_vec();
    let (a, b) = (1.0 / (1.0 + 3f64.exp()), 1.0 / (1.0 + (-3f64).exp()));
    let (atol, rtol) = tolerance::<T>();
    assert!(worst_ratio(&got, &[a, b, a, b, a, b], atol, rtol) <= 1.0, "{got:?}");
}

#[test]
fn views_f32() {
    views::<f32>();
}

#[test]
fn views_f16() {
    views::<f16>();
}

/// `out` may have strided rows (the columns of a wider tensor): the kernels write the row's
/// columns and nothing else.
#[test]
fn output_with_strided_rows() {
    let dev = tests::test_device();
    let (rows, cols) = (6, 700);
    let x = randn::<f32>(rows, cols, 60, 1.0);
    for online in [false, true] {
        let wide = Tensor::<f32>::full(&dev, &[rows, cols + 5], -7.0).unwrap();
        let out = wide.narrow(1, 2, cols).unwrap();
        if online {
            softmax_online_into(&x, &out).unwrap();
        } else {
            softmax_into(&x, &out).unwrap();
        }
        let r = worst_ratio(&out.to_f64_vec(), &softmax_ref(&x), 1e-9, 1e-5);
        assert!(r <= 1.0, "online {online}: ratio {r}");
        let w = wide.to_vec();
        for row in w.chunks(cols + 5) {
            assert_eq!((&row[..2], &row[cols + 2..]), (&[-7.0; 2][..], &[-7.0; 3][..]), "online {online}");
        }
    }
}

/// The configs are Triton's heuristic: the next power of two of the row (at least 128), 4
/// warps, 8 from 2048 columns, 16 from 4096; the same table for f16.
#[test]
fn block_config_follows_the_tutorial() {
    for (cols, block, warps) in [(1, 128, 4), (128, 128, 4), (129, 256, 4), (1000, 1024, 4), (1025, 2048, 8), (2048, 2048, 8), (4000, 4096, 16), (16384, 16384, 16)] {
        let c = block_config(cols).unwrap();
        for configs in [softmax_kernel::CONFIGS, softmax_f16_kernel::CONFIGS] {
            assert_eq!(configs[c].get("BLOCK_SIZE"), Some(MetaValue::Int(block)), "{cols} columns");
            assert_eq!(configs[c].num_warps, warps, "{cols} columns");
        }
    }
    assert_eq!(block_config(MAX_BLOCK_COLUMNS + 1), None);
}

#[test]
fn softmax_refuses_what_it_cannot_do() {
    let dev = tests::test_device();
    let x = Tensor::<f32>::zeros(&dev, &[2, 3, 4]).unwrap();
    let err = softmax(&x).unwrap_err();
    assert_eq!(err.to_string(), "invalid argument `x`: expected a 2-D tensor, found shape [2, 3, 4]");
    let x = Tensor::<f16>::zeros(&dev, &[5]).unwrap();
    assert!(matches!(softmax(&x), Err(LaunchError::InvalidArgument { arg: "x", .. })));
    // `out` of another shape, or with strided columns.
    let x = Tensor::<f32>::zeros(&dev, &[4, 6]).unwrap();
    let out = Tensor::<f32>::zeros(&dev, &[4, 5]).unwrap();
    let err = softmax_into(&x, &out).unwrap_err();
    assert!(matches!(err, LaunchError::InvalidArgument { arg: "out", .. }), "{err}");
    let out = Tensor::<f32>::zeros(&dev, &[6, 4]).unwrap().t();
    let err = softmax_online_into(&x, &out).unwrap_err();
    assert!(matches!(err, LaunchError::InvalidArgument { arg: "out", .. }), "{err}");
    assert!(err.to_string().contains("column stride 1"), "{err}");
    // Empty tensors launch nothing.
    assert_eq!(softmax(&Tensor::<f32>::zeros(&dev, &[0, 5]).unwrap()).unwrap().shape(), &[0, 5]);
    assert_eq!(softmax(&Tensor::<f16>::zeros(&dev, &[3, 0]).unwrap()).unwrap().shape(), &[3, 0]);
    // A fused config launched for a longer row than its block is the caller's error to avoid;
    // an out-of-range config is a typed one.
    let err = softmax_kernel::launch_config(99, (1u32,), &out, &x, 6, 1, 6, 6).unwrap_err();
    assert!(matches!(err, LaunchError::NoInstance { .. }), "{err}");
}
