//! The split-K matmul (partial products of K slices summed into C with `atomic_add`) against
//! a float64 reference: ragged shapes, 1, 2, 4 and 7 slices (more slices than K has chunks:
//! some programs add zeros), views, and the wrapper's typed errors.

use examples::matmul_split_k::{matmul_split_k, MAX_SPLIT_K};
use kernel_runtime::{f16, LaunchError, Tensor};
use tests::{matmul_ref, randn_f16};

/// Checks `got` (`[m, n]`) against `a @ b` in float64 from the f16-exact inputs. Each element is
/// a sum of `k` f32-rounded products (exact: f16 x f16 fits f32) added in f32: its error is at
/// most about `k * 2^-24` times the sum of the products' magnitudes.
fn check(got: &Tensor<f32>, av: &[f64], bv: &[f64], m: usize, n: usize, k: usize, what: &str) {
    assert_eq!(got.shape(), &[m, n], "{what}");
    let want = matmul_ref(av, bv, m, n, k, tests::identity);
    let got = got.to_f64_vec();
    for i in 0..m {
        for j in 0..n {
            let mag: f64 = (0..k).map(|p| (av[i * k + p] * bv[p * n + j]).abs()).sum();
            let tol = 1e-6 + mag * (k.max(1) as f64) * 2f64.powi(-23);
            let (g, w) = (got[i * n + j], want[i * n + j]);
            assert!((g - w).abs() <= tol, "{what}: c[{i}, {j}] = {g}, expected {w} (tolerance {tol})");
        }
    }
}

fn run(m: usize, n: usize, k: usize, split_k: usize, seed: u64) {
    let dev = tests::test_device();
    let (a, av) = randn_f16(&dev, m, k, seed);
    let (b, bv) = randn_f16(&dev, k, n, seed + 1);
    let c = matmul_split_k(&a, &b, split_k).unwrap();
    check(&c, &av, &bv, m, n, k, &format!("{m}x{n}x{k}, split_k {split_k}"));
}

#[test]
fn ragged_shapes_every_split() {
    let shapes = [(1usize, 1usize, 1usize), (17, 33, 250), (64, 64, 1024), (100, 70, 999), (5, 130, 4097), (130, 3, 77)];
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        for split_k in [1, 2, 4, 7] {
            run(m, n, k, split_k, 10 * i as u64 + split_k as u64);
        }
    }
}

/// More slices than K has 32-wide chunks: the extra programs' loads are all masked off and
/// they add zeros.
#[test]
fn more_slices_than_chunks() {
    run(20, 20, 40, 7, 100);
    run(9, 65, 31, 4, 101);
    run(16, 16, 64, 300, 102);
}

/// K = 0 gives zeros; no rows or no columns an empty result.
#[test]
fn empty_dimensions() {
    let dev = tests::test_device();
    let z = |r: usize, c: usize| Tensor::<f16>::zeros(&dev, &[r, c]).unwrap();
    assert_eq!(matmul_split_k(&z(3, 0), &z(0, 5), 4).unwrap().to_vec(), vec![0.0; 15]);
    assert_eq!(matmul_split_k(&z(0, 8), &z(8, 5), 2).unwrap().shape(), &[0, 5]);
    assert_eq!(matmul_split_k(&z(3, 8), &z(8, 0), 2).unwrap().shape(), &[3, 0]);
}

/// Operands of any strides: a transposed `a`, and a `b` narrowed on columns (storage offset,
/// row stride wider than its row).
#[test]
fn views() {
    let dev = tests::test_device();
    let (m, n, k) = (50usize, 40usize, 300usize);
    let at = Tensor::<f16>::randn(&dev, &[k, m], 200).unwrap();
    let a = at.t();
    let wide = Tensor::<f16>::randn(&dev, &[k, n + 6], 201).unwrap();
    let b = wide.narrow(1, 4, n).unwrap();
    for split_k in [1, 4, 7] {
        let c = matmul_split_k(&a, &b, split_k).unwrap();
        check(&c, &a.to_f64_vec(), &b.to_f64_vec(), m, n, k, &format!("views, split_k {split_k}"));
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let dev = tests::test_device();
    let t = |shape: &[usize]| Tensor::<f16>::zeros(&dev, shape).unwrap();
    let arg = |r: Result<Tensor<f32>, LaunchError>| match r {
        Err(LaunchError::InvalidArgument { arg, .. }) => arg,
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("expected InvalidArgument, got a result"),
    };
    assert_eq!(arg(matmul_split_k(&t(&[4, 8]), &t(&[8, 4]), 0)), "split_k");
    assert_eq!(arg(matmul_split_k(&t(&[4, 8]), &t(&[8, 4]), MAX_SPLIT_K + 1)), "split_k");
    assert_eq!(arg(matmul_split_k(&t(&[2, 4, 8]), &t(&[8, 4]), 2)), "a");
    assert_eq!(arg(matmul_split_k(&t(&[4, 8]), &t(&[8]), 2)), "b");
    assert_eq!(arg(matmul_split_k(&t(&[4, 8]), &t(&[9, 4]), 2)), "b");
    // A K stride so wide that a step over `split_k` chunks of 32 leaves 32-bit offsets: b's
    // rows are 70000 elements apart, so at most 2^31 / (32 * 70000) = 958 slices.
    let (a, b) = (t(&[3, 2]), t(&[2, 70_000]).narrow(1, 0, 5).unwrap());
    let (arg_name, msg) = match matmul_split_k(&a, &b, 959) {
        Err(LaunchError::InvalidArgument { arg, expected, .. }) => (arg, expected),
        r => panic!("expected InvalidArgument, got {r:?}"),
    };
    assert!(arg_name == "split_k" && msg.contains("at most 958 slices"), "{arg_name}: {msg}");
    assert_eq!(matmul_split_k(&a, &b, 2).unwrap().to_vec(), vec![0.0; 15]);
}
