//! Kernels whose operand pointers are written nested, as Triton's tutorials write them
//! (`tests/src/nested.rs`), against float64 references on both backends
//! (`KERNEL_TEST_DEVICE=cuda` for the GPU, where sm_90a takes tensor maps for them): rows that
//! are 16-byte aligned and rows that are not, shapes that end inside a tile.

use kernel_runtime::{f16, Tensor};
use tests::nested::{nested_attention, nested_batched_matmul};
use tests::{test_device, worst_ratio};

#[test]
fn batched_matmul_with_nested_pointers() {
    let dev = test_device();
    // (M, N, K): 16-byte aligned rows (tensor maps on sm_90a), rows of A or B that are not,
    // and shapes that end inside a tile.
    for (m, n, k) in [(128usize, 128usize, 96usize), (100, 72, 64), (70, 40, 100), (64, 64, 30)] {
        let batch = 3;
        let a = Tensor::<f16>::randn(&dev, &[batch, m, k], 1).unwrap();
        let b = Tensor::<f16>::randn(&dev, &[batch, k, n], 2).unwrap();
        let c = Tensor::from_vec(&dev, &[batch, m, n], vec![f32::NAN; batch * m * n]).unwrap();
        let grid = (m.div_ceil(64), n.div_ceil(64), batch);
        nested_batched_matmul::launch(grid, &a, &b, &c, m as i32, n as i32, k as i32, 64, 64, 32).unwrap();
        let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
        let want: Vec<f64> = (0..batch * m * n)
            .map(|i| {
                let (z, r, col) = (i / (m * n), (i / n) % m, i % n);
                (0..k).map(|x| av[(z * m + r) * k + x] * bv[(z * k + x) * n + col]).sum()
            })
            .collect();
        let got: Vec<f64> = c.to_vec().iter().map(|v| *v as f64).collect();
        let worst = worst_ratio(&got, &want, 1e-3, 1e-3);
        assert!(worst <= 1.0, "M {m}, N {n}, K {k}: worst error ratio {worst}");
    }
}

#[test]
fn attention_with_nested_pointers() {
    let dev = test_device();
    const D: usize = 64;
    // Key rows padded to `stride` elements (16-byte aligned or not); lengths that end inside
    // a key block.
    for (n, stride) in [(256usize, 64usize), (200, 72), (130, 68), (70, 65)] {
        let q = Tensor::<f16>::randn(&dev, &[n, D], 3).unwrap();
        let k = Tensor::<f16>::randn(&dev, &[n, stride], 4).unwrap();
        let v = Tensor::<f16>::randn(&dev, &[n, stride], 5).unwrap();
        let o = Tensor::from_vec(&dev, &[n, D], vec![f16::NAN; n * D]).unwrap();
        nested_attention::launch((n.div_ceil(64),), &q, &k, &v, &o, n as i32, stride as i32, stride as i32, 64, 64, 64).unwrap();
        let (qv, kv, vv) = (q.to_f64_vec(), k.to_f64_vec(), v.to_f64_vec());
        let mut want = vec![0.0; n * D];
        for i in 0..n {
            // The kernel's scores are base-2 exponents: softmax over exp2(q k).
            let s: Vec<f64> = (0..n).map(|j| (0..D).map(|x| qv[i * D + x] * kv[j * stride + x]).sum::<f64>()).collect();
            let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - mx).exp2()).collect();
            let sum: f64 = e.iter().sum();
            for x in 0..D {
                want[i * D + x] = (0..n).map(|j| e[j] * vv[j * stride + x]).sum::<f64>() / sum;
            }
        }
        let got: Vec<f64> = o.to_vec().iter().map(|v| v.to_f64()).collect();
        let worst = worst_ratio(&got, &want, 2e-3, 1e-2);
        assert!(worst <= 1.0, "n {n}, stride {stride}: worst error ratio {worst}");
    }
}
