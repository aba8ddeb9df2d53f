//! The batched matmul (`program_id(1)` picks the batch entry, whose base pointers the kernel
//! advances) against a float64 reference: every config, ragged and aligned shapes, batch
//! entries as transposed views and as a narrowed view with an offset, and the wrapper's
//! typed errors.

use examples::batched_matmul::{batched_matmul, batched_matmul_kernel};
use kernel_runtime::{cdiv, f16, LaunchError, Tensor};
use tests::{matmul_ref, worst_ratio};

const ATOL: f64 = 1e-2;
const RTOL: f64 = 1e-2;

/// A `(batch, rows, cols)` f16 operand, contiguous or (`transposed`) the transpose of the last
/// two dimensions of a contiguous `(batch, cols, rows)` tensor; with its values in
/// `(batch, rows, cols)` order.
fn operand(dev: &kernel_runtime::Device, batch: usize, rows: usize, cols: usize, transposed: bool, seed: u64) -> (Tensor<f16>, Vec<f64>) {
    let (r, c) = if transposed { (cols, rows) } else { (rows, cols) };
    let t = Tensor::<f16>::randn(dev, &[batch, r, c], seed).unwrap();
    let v = t.to_f64_vec();
    if !transposed {
        return (t, v);
    }
    let vals = (0..batch).flat_map(|b| (0..rows).flat_map(move |i| (0..cols).map(move |j| (b, i, j)))).map(|(b, i, j)| v[(b * cols + j) * rows + i]).collect();
    (t.t(), vals)
}

/// `a @ b` per batch entry in float64.
fn reference(av: &[f64], bv: &[f64], batch: usize, m: usize, n: usize, k: usize) -> Vec<f64> {
    (0..batch).flat_map(|i| matmul_ref(&av[i * m * k..(i + 1) * m * k], &bv[i * k * n..(i + 1) * k * n], m, n, k, tests::identity)).collect()
}

fn launch_config(cfg: usize, a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) {
    let (batch, m, k, n) = (a.shape()[0], a.shape()[1] as i32, a.shape()[2] as i32, b.shape()[2] as i32);
    let s = |t: &Tensor<f16>, d: usize| t.stride(d) as i32;
    batched_matmul_kernel::launch_config(
        cfg,
        |meta: &batched_matmul_kernel::Meta| (cdiv(m, meta.BLOCK_SIZE_M) * cdiv(n, meta.BLOCK_SIZE_N), batch as i32),
        a, b, c, m, n, k,
        s(a, 0), s(a, 1), s(a, 2), s(b, 0), s(b, 1), s(b, 2), s(c, 0), s(c, 1), s(c, 2),
    )
    .unwrap();
}

/// Every config on ragged shapes (masked edges, a K tail), on shapes the tensor maps take
/// (16-byte aligned rows), and with A, B or both as transposed views of each batch entry.
#[test]
fn every_config_every_layout() {
    let dev = tests::test_device();
    for (batch, m, n, k, seed) in [(3, 70, 90, 150, 1), (4, 128, 192, 256, 3), (2, 200, 136, 72, 5)] {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let (a, av) = operand(&dev, batch, m, k, ta, seed);
            let (b, bv) = operand(&dev, batch, k, n, tb, seed + 1);
            let want = reference(&av, &bv, batch, m, n, k);
            for cfg in 0..batched_matmul_kernel::CONFIGS.len() {
                let c = Tensor::<f16>::full(&dev, &[batch, m, n], f16::NAN).unwrap();
                launch_config(cfg, &a, &b, &c);
                let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
                assert!(r <= 1.0, "{batch}x{m}x{n}x{k} (A transposed {ta}, B transposed {tb}), config {cfg}: worst error ratio {r}");
            }
        }
    }
}

/// The autotuned wrapper, on a batch that is a narrowed view (a storage offset: the batch
/// entries start inside the buffer) of a larger tensor.
#[test]
fn wrapper_on_a_narrowed_batch() {
    let dev = tests::test_device();
    let (batch, m, n, k) = (3, 64, 64, 96);
    let full = Tensor::<f16>::randn(&dev, &[batch + 2, m, k], 7).unwrap();
    let a = full.narrow(0, 2, batch).unwrap();
    let av: Vec<f64> = full.to_f64_vec()[2 * m * k..].to_vec();
    let (b, bv) = operand(&dev, batch, k, n, false, 8);
    let c = batched_matmul(&a, &b).unwrap();
    assert_eq!(c.shape(), &[batch, m, n]);
    let r = worst_ratio(&c.to_f64_vec(), &reference(&av, &bv, batch, m, n, k), ATOL, RTOL);
    assert!(r <= 1.0, "worst error ratio {r}");
}

#[test]
fn bad_shapes_are_typed_errors() {
    let dev = tests::test_device();
    let a = Tensor::<f16>::zeros(&dev, &[2, 4, 8]).unwrap();
    let b = Tensor::<f16>::zeros(&dev, &[2, 8, 3]).unwrap();
    let flat = Tensor::<f16>::zeros(&dev, &[4, 8]).unwrap();
    let other_batch = Tensor::<f16>::zeros(&dev, &[3, 8, 3]).unwrap();
    let other_k = Tensor::<f16>::zeros(&dev, &[2, 7, 3]).unwrap();
    for (x, y, arg) in [(&flat, &b, "a"), (&a, &flat, "b"), (&a, &other_batch, "b"), (&a, &other_k, "b")] {
        match batched_matmul(x, y) {
            Err(LaunchError::InvalidArgument { arg: got, .. }) => assert_eq!(got, arg),
            other => panic!("expected an invalid-argument error for {arg}, got {other:?}"),
        }
    }
    assert_eq!(batched_matmul(&a, &b).unwrap().shape(), &[2, 4, 3]);
}
