//! Layer norm (Triton's tutorial 05) against float64 references: the forward pass (rows
//! shorter than, equal to and longer than a block, so that it loops), the backward pass (its
//! lock-protected partial sums with several rows per group, M not a multiple of the group
//! count), row-strided views, the f16 forward pass at each of its block sizes, and the
//! wrappers' typed errors.

use examples::layer_norm::{
    f16_block_config, group_size_m, layer_norm, layer_norm_backward, layer_norm_f16, layer_norm_f16_into, layer_norm_fwd_fused_f16,
    MAX_BACKWARD_COLUMNS,
};
use kernel_runtime::{f16, Device, LaunchError, MetaValue, Tensor};
use tests::worst_ratio;

/// A `[rows, cols]` f32 tensor of `scale * normal + shift` values.
fn randn(dev: &Device, shape: &[usize], seed: u64, scale: f32, shift: f32) -> Tensor<f32> {
    let v = Tensor::<f32>::randn(dev, shape, seed).unwrap().to_vec();
    Tensor::from_vec(dev, shape, v.into_iter().map(|x| scale * x + shift).collect()).unwrap()
}

/// Row means, `1 / sqrt(var + eps)` (biased variance) and `y`, in float64 from the f32 inputs.
fn forward_ref(x: &[f64], w: &[f64], b: &[f64], m: usize, n: usize, eps: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut y, mut mean, mut rstd) = (Vec::with_capacity(m * n), Vec::with_capacity(m), Vec::with_capacity(m));
    for row in x.chunks(n).take(m) {
        let mu = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n as f64;
        let rs = 1.0 / (var + eps).sqrt();
        y.extend(row.iter().zip(w).zip(b).map(|((v, w), b)| (v - mu) * rs * w + b));
        mean.push(mu);
        rstd.push(rs);
    }
    (y, mean, rstd)
}

/// `(dx, dw, db)` in float64.
fn backward_ref(dy: &[f64], x: &[f64], w: &[f64], mean: &[f64], rstd: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut dx, mut dw, mut db) = (Vec::with_capacity(m * n), vec![0.0; n], vec![0.0; n]);
    for r in 0..m {
        let (xr, dyr) = (&x[r * n..(r + 1) * n], &dy[r * n..(r + 1) * n]);
        let xhat: Vec<f64> = xr.iter().map(|v| (v - mean[r]) * rstd[r]).collect();
        let wdy: Vec<f64> = dyr.iter().zip(w).map(|(d, w)| d * w).collect();
        let c1 = xhat.iter().zip(&wdy).map(|(a, b)| a * b).sum::<f64>() / n as f64;
        let c2 = wdy.iter().sum::<f64>() / n as f64;
        dx.extend(xhat.iter().zip(&wdy).map(|(xh, wd)| (wd - (xh * c1 + c2)) * rstd[r]));
        for c in 0..n {
            dw[c] += dyr[c] * xhat[c];
            db[c] += dyr[c];
        }
    }
    (dx, dw, db)
}

fn assert_close(got: &Tensor<f32>, want: &[f64], atol: f64, rtol: f64, what: &str) {
    let r = worst_ratio(&got.to_f64_vec(), want, atol, rtol);
    assert!(r <= 1.0, "{what}: worst error ratio {r}");
}

/// Runs the forward and (for rows the backward takes) the backward pass on `x` (a `[m, n]`
/// view) and checks both. f32 tolerances: the row sums round at about 2^-24 per addition,
/// relative to the row's magnitude; `dw` and `db` add `m` rows of terms.
fn check(x: &Tensor<f32>, seed: u64, what: &str) {
    let dev = x.device().clone();
    let (m, n) = (x.shape()[0], x.shape()[1]);
    let eps = 1e-5f32;
    let w = randn(&dev, &[n], seed + 1, 1.0, 1.0);
    let b = randn(&dev, &[n], seed + 2, 1.0, 0.0);
    let (y, mean, rstd) = layer_norm(x, &w, &b, eps).unwrap();
    assert_eq!((y.shape(), mean.shape(), rstd.shape()), (&[m, n][..], &[m][..], &[m][..]), "{what}");
    assert!(y.is_contiguous(), "{what}");
    let (xv, wv, bv) = (x.to_f64_vec(), w.to_f64_vec(), b.to_f64_vec());
    let (want_y, want_mean, want_rstd) = forward_ref(&xv, &wv, &bv, m, n, eps as f64);
    assert_close(&mean, &want_mean, 1e-5, 1e-5, &format!("{what}: mean"));
    assert_close(&rstd, &want_rstd, 0.0, 1e-5, &format!("{what}: rstd"));
    assert_close(&y, &want_y, 1e-4, 1e-4, &format!("{what}: y"));
    if n > MAX_BACKWARD_COLUMNS {
        return;
    }
    // dy as a view too: the rows of a wider tensor.
    let dy_full = randn(&dev, &[m, n + 3], seed + 3, 1.0, 0.0);
    let dy = dy_full.narrow(1, 2, n).unwrap();
    let (dx, dw, db) = layer_norm_backward(&dy, x, &w, &mean, &rstd).unwrap();
    assert_eq!((dx.shape(), dw.shape(), db.shape()), (&[m, n][..], &[n][..], &[n][..]), "{what}");
    let (want_dx, want_dw, want_db) = backward_ref(&dy.to_f64_vec(), &xv, &wv, &want_mean, &want_rstd, m, n);
    assert_close(&dx, &want_dx, 1e-4, 1e-4, &format!("{what}: dx"));
    // Each column sums m terms of magnitude about 1.
    let atol = 2e-5 * (m as f64).sqrt().max(1.0);
    assert_close(&dw, &want_dw, atol, 1e-4, &format!("{what}: dw"));
    assert_close(&db, &want_db, atol, 1e-4, &format!("{what}: db"));
}

#[test]
fn small_and_ragged_rows() {
    let dev = tests::test_device();
    for (i, &(m, n)) in [(1usize, 1usize), (1, 2), (3, 7), (5, 256), (37, 300), (8, 1023), (4, 1025)].iter().enumerate() {
        let x = randn(&dev, &[m, n], 10 + i as u64, 2.0, 0.5);
        check(&x, 100 + 10 * i as u64, &format!("{m}x{n}"));
    }
}

/// More rows than the backward pass has groups of partial sums (256 for N <= 1024, 128 up to
/// 4096), and not a multiple of it: several programs take each group's lock in turn.
#[test]
fn more_rows_than_groups() {
    let dev = tests::test_device();
    for (i, &(m, n)) in [(600usize, 200usize), (300, 1500), (257, 4096)].iter().enumerate() {
        let group = group_size_m(m, n);
        assert!(m > group && m % group != 0, "{m}x{n}: group {group}");
        let x = randn(&dev, &[m, n], 20 + i as u64, 1.5, -3.0);
        check(&x, 200 + 10 * i as u64, &format!("{m}x{n}"));
    }
}

/// Rows longer than the largest block (4096): the forward pass loops over each row in chunks,
/// the last one masked.
#[test]
fn forward_loops_over_long_rows() {
    let dev = tests::test_device();
    for (i, &(m, n)) in [(3usize, 4097usize), (2, 9000), (5, 8192)].iter().enumerate() {
        let x = randn(&dev, &[m, n], 30 + i as u64, 1.0, 4.0);
        check(&x, 300 + 10 * i as u64, &format!("{m}x{n}"));
    }
}

/// Views with strided rows and storage offsets: x narrowed on columns (rows wider than n) and
/// on rows.
#[test]
fn row_strided_views() {
    let dev = tests::test_device();
    let (m, n) = (70usize, 300usize);
    let wide = randn(&dev, &[m, n + 9], 40, 1.0, 0.25);
    let x = wide.narrow(1, 5, n).unwrap();
    assert_eq!((x.strides(), x.storage_offset()), (&[n + 9, 1][..], 5));
    check(&x, 400, "column-narrowed");
    let long = randn(&dev, &[m + 4, n], 41, 1.0, 0.25);
    check(&long.narrow(0, 3, m).unwrap(), 410, "row-narrowed");
}

/// No rows: empty outputs, and zero gradients for the weight and bias.
#[test]
fn no_rows() {
    let dev = tests::test_device();
    let x = Tensor::<f32>::zeros(&dev, &[0, 5]).unwrap();
    let w = Tensor::<f32>::full(&dev, &[5], 1.0).unwrap();
    let (y, mean, rstd) = layer_norm(&x, &w, &w, 1e-5).unwrap();
    assert_eq!((y.shape(), mean.shape(), rstd.shape()), (&[0, 5][..], &[0][..], &[0][..]));
    let (dx, dw, db) = layer_norm_backward(&x, &x, &w, &mean, &rstd).unwrap();
    assert_eq!(dx.shape(), &[0, 5]);
    assert_eq!((dw.to_vec(), db.to_vec()), (vec![0.0; 5], vec![0.0; 5]));
}

fn invalid(r: Result<(Tensor<f32>, Tensor<f32>, Tensor<f32>), LaunchError>) -> (&'static str, String) {
    match r {
        Err(LaunchError::InvalidArgument { arg, expected, found }) => (arg, format!("expected {expected}, found {found}")),
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("expected InvalidArgument, got a result"),
    }
}

#[test]
fn wrong_shapes_and_layouts_are_typed_errors() {
    let dev = tests::test_device();
    let t = |shape: &[usize]| Tensor::<f32>::zeros(&dev, shape).unwrap();
    let (x, w, mean) = (t(&[4, 6]), t(&[6]), t(&[4]));
    // Forward.
    assert_eq!(invalid(layer_norm(&t(&[2, 3, 6]), &w, &w, 1e-5)).0, "x");
    assert_eq!(invalid(layer_norm(&t(&[4, 0]), &t(&[0]), &t(&[0]), 1e-5)).0, "x");
    let (arg, msg) = invalid(layer_norm(&t(&[6, 4]).t(), &w, &w, 1e-5));
    assert!(arg == "x" && msg.contains("column stride 1"), "{arg}: {msg}");
    assert_eq!(invalid(layer_norm(&x, &t(&[5]), &w, 1e-5)).0, "weight");
    assert_eq!(invalid(layer_norm(&x, &w, &t(&[6, 1]), 1e-5)).0, "bias");
    let (arg, msg) = invalid(layer_norm(&x, &w, &w, f32::NAN));
    assert!(arg == "eps" && msg.contains("finite"), "{arg}: {msg}");
    assert_eq!(invalid(layer_norm(&x, &w, &w, -1.0)).0, "eps");
    // Backward.
    assert_eq!(invalid(layer_norm_backward(&t(&[4, 5]), &x, &w, &mean, &mean)).0, "dy");
    assert_eq!(invalid(layer_norm_backward(&t(&[6, 4]).t(), &x, &w, &mean, &mean)).0, "dy");
    assert_eq!(invalid(layer_norm_backward(&x, &x, &t(&[7]), &mean, &mean)).0, "weight");
    assert_eq!(invalid(layer_norm_backward(&x, &x, &w, &t(&[3]), &mean)).0, "mean");
    assert_eq!(invalid(layer_norm_backward(&x, &x, &w, &mean, &t(&[4, 1]))).0, "rstd");
    let n = MAX_BACKWARD_COLUMNS + 1;
    let (wide, wn, one) = (t(&[1, n]), t(&[n]), t(&[1]));
    let (arg, msg) = invalid(layer_norm_backward(&wide, &wide, &wn, &one, &one));
    assert!(arg == "x" && msg.contains("4096 columns"), "{arg}: {msg}");
}

/// A `[rows, cols]` f16 tensor of `scale * normal + shift` values.
fn randn_f16(dev: &Device, shape: &[usize], seed: u64, scale: f32, shift: f32) -> Tensor<f16> {
    let v = Tensor::<f32>::randn(dev, shape, seed).unwrap().to_vec();
    Tensor::from_vec(dev, shape, v.into_iter().map(|x| f16::from_f32(scale * x + shift)).collect()).unwrap()
}

/// The f16 forward pass on `x` (a `[m, n]` view) against float64 from the f16 inputs: `mean`
/// and `rstd` in f32 as in the f32 pass, `y` within its f16 rounding (2^-11 relative, and
/// absolute for values near 0, whose error comes from the f32 terms of magnitude about 1).
fn check_f16(x: &Tensor<f16>, seed: u64, what: &str) {
    let dev = x.device().clone();
    let (m, n) = (x.shape()[0], x.shape()[1]);
    let eps = 1e-5f32;
    let w = randn_f16(&dev, &[n], seed + 1, 1.0, 1.0);
    let b = randn_f16(&dev, &[n], seed + 2, 1.0, 0.0);
    let (y, mean, rstd) = layer_norm_f16(x, &w, &b, eps).unwrap();
    assert_eq!((y.shape(), mean.shape(), rstd.shape()), (&[m, n][..], &[m][..], &[m][..]), "{what}");
    let (want_y, want_mean, want_rstd) = forward_ref(&x.to_f64_vec(), &w.to_f64_vec(), &b.to_f64_vec(), m, n, eps as f64);
    assert_close(&mean, &want_mean, 1e-5, 1e-5, &format!("{what}: mean"));
    assert_close(&rstd, &want_rstd, 0.0, 1e-5, &format!("{what}: rstd"));
    let r = worst_ratio(&y.to_f64_vec(), &want_y, 2e-3, 1e-3);
    assert!(r <= 1.0, "{what}: y: worst error ratio {r}");
}

/// Every block size of the f16 forward pass (256 to 8192, one warp to eight), ragged and exact
/// rows, and rows longer than the largest block (it loops).
#[test]
fn f16_forward_at_every_block_size() {
    let dev = tests::test_device();
    for (i, &(m, n)) in [(3usize, 1usize), (5, 200), (7, 512), (4, 1000), (3, 2048), (3, 3000), (2, 8192), (2, 9000)].iter().enumerate() {
        let x = randn_f16(&dev, &[m, n], 50 + i as u64, 2.0, 0.5);
        check_f16(&x, 500 + 10 * i as u64, &format!("f16 {m}x{n}"));
    }
    // The configs are the tutorial's: next power of two (at most 8192), BLOCK_SIZE / 256 warps
    // between 1 and 8.
    for (n, block, warps) in [(1, 256, 1), (300, 512, 2), (1024, 1024, 4), (2000, 2048, 8), (8192, 8192, 8), (20000, 8192, 8)] {
        let c = &layer_norm_fwd_fused_f16::CONFIGS[f16_block_config(n)];
        assert_eq!((c.get("BLOCK_SIZE"), c.num_warps), (Some(MetaValue::Int(block)), warps), "{n} columns");
    }
}

/// f16 views with strided rows, and outputs given by the caller (`y` with strided rows).
#[test]
fn f16_row_strided_views_and_outputs() {
    let dev = tests::test_device();
    let (m, n) = (40usize, 1500usize);
    let wide = randn_f16(&dev, &[m, n + 9], 60, 1.0, 0.25);
    check_f16(&wide.narrow(1, 5, n).unwrap(), 600, "f16 column-narrowed");
    let x = randn_f16(&dev, &[m, n], 61, 1.0, -1.0);
    let w = randn_f16(&dev, &[n], 62, 1.0, 1.0);
    let b = randn_f16(&dev, &[n], 63, 1.0, 0.0);
    let y_wide = Tensor::<f16>::full(&dev, &[m, n + 4], f16::from_f32(-7.0)).unwrap();
    let y = y_wide.narrow(1, 4, n).unwrap();
    let (mean, rstd) = (Tensor::<f32>::zeros(&dev, &[m]).unwrap(), Tensor::<f32>::zeros(&dev, &[m]).unwrap());
    layer_norm_f16_into(&x, &w, &b, 1e-5, &y, &mean, &rstd).unwrap();
    let (want_y, _, _) = forward_ref(&x.to_f64_vec(), &w.to_f64_vec(), &b.to_f64_vec(), m, n, 1e-5);
    assert!(worst_ratio(&y.to_f64_vec(), &want_y, 2e-3, 1e-3) <= 1.0);
    assert!(y_wide.to_vec().chunks(n + 4).all(|r| r[..4] == [f16::from_f32(-7.0); 4]));
}

#[test]
fn f16_wrong_shapes_and_layouts_are_typed_errors() {
    let dev = tests::test_device();
    let h = |shape: &[usize]| Tensor::<f16>::zeros(&dev, shape).unwrap();
    let f = |shape: &[usize]| Tensor::<f32>::zeros(&dev, shape).unwrap();
    let arg = |r: Result<(), LaunchError>| match r {
        Err(LaunchError::InvalidArgument { arg, .. }) => arg,
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    let (x, w, y, mean) = (h(&[4, 6]), h(&[6]), h(&[4, 6]), f(&[4]));
    assert_eq!(arg(layer_norm_f16(&h(&[2, 3, 6]), &w, &w, 1e-5).map(drop)), "x");
    assert_eq!(arg(layer_norm_f16(&h(&[4, 0]), &h(&[0]), &h(&[0]), 1e-5).map(drop)), "x");
    assert_eq!(arg(layer_norm_f16(&h(&[6, 4]).t(), &w, &w, 1e-5).map(drop)), "x");
    assert_eq!(arg(layer_norm_f16(&x, &h(&[5]), &w, 1e-5).map(drop)), "weight");
    assert_eq!(arg(layer_norm_f16(&x, &w, &h(&[6, 1]), 1e-5).map(drop)), "bias");
    assert_eq!(arg(layer_norm_f16(&x, &w, &w, f32::INFINITY).map(drop)), "eps");
    assert_eq!(arg(layer_norm_f16_into(&x, &w, &w, 1e-5, &h(&[4, 5]), &mean, &mean)), "y");
    assert_eq!(arg(layer_norm_f16_into(&x, &w, &w, 1e-5, &h(&[6, 4]).t(), &mean, &mean)), "y");
    assert_eq!(arg(layer_norm_f16_into(&x, &w, &w, 1e-5, &y, &f(&[3]), &mean)), "mean");
    assert_eq!(arg(layer_norm_f16_into(&x, &w, &w, 1e-5, &y, &mean, &f(&[4, 1]))), "rstd");
    let (y, mean, rstd) = layer_norm_f16(&h(&[0, 5]), &h(&[5]), &h(&[5]), 1e-5).unwrap();
    assert_eq!((y.shape(), mean.shape(), rstd.shape()), (&[0, 5][..], &[0][..], &[0][..]));
}
