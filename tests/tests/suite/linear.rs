//! The fused linear layer in bf16 (`activation(x @ w + bias)`: bias and GELU applied to the
//! f32 accumulator) against a float64 reference: every config with each activation, the four
//! layouts of `x` and `w` (an `nn.Linear` weight is `w`'s transposed view), ragged and aligned
//! shapes, a strided bias, outputs poisoned with NaN first; and the wrapper's typed errors.

use examples::linear::{gelu, gelu_tanh, kernels::linear_kernel, linear, linear_into};
use examples::matmul::MatmulError;
use kernel_runtime::{bf16, cdiv, Func, Tensor};
use tests::{matmul_ref, worst_ratio};

// bf16 keeps 8 significant bits: half a unit in the last place is 2^-9 of the value.
const ATOL: f64 = 2e-2;
const RTOL: f64 = 1e-2;

fn gelu_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

fn gelu_tanh_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

/// The activations of `linear_kernel`, with their float64 references.
fn activations() -> [(Option<Func>, fn(f64) -> f64, &'static str); 3] {
    [(None, tests::identity, "none"), (Some(gelu), gelu_ref, "gelu"), (Some(gelu_tanh), gelu_tanh_ref, "gelu_tanh")]
}

/// A `(rows, cols)` bf16 operand, contiguous or (`transposed`) the transposed view of a
/// contiguous `(cols, rows)` tensor; with its values in `(rows, cols)` order.
fn operand(dev: &kernel_runtime::Device, rows: usize, cols: usize, transposed: bool, seed: u64) -> (Tensor<bf16>, Vec<f64>) {
    if !transposed {
        let t = Tensor::<bf16>::randn(dev, &[rows, cols], seed).unwrap();
        let v = t.to_f64_vec();
        return (t, v);
    }
    let t = Tensor::<bf16>::randn(dev, &[cols, rows], seed).unwrap();
    let v = t.to_f64_vec();
    let vals = (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| v[j * rows + i]).collect();
    (t.t(), vals)
}

/// `act(x @ w + bias)` in float64.
fn reference(xv: &[f64], wv: &[f64], bias: &[f64], m: usize, n: usize, k: usize, act: fn(f64) -> f64) -> Vec<f64> {
    let prod = matmul_ref(xv, wv, m, n, k, tests::identity);
    prod.iter().enumerate().map(|(i, v)| act(v + bias[i % n])).collect()
}

/// Every config with each activation, on ragged shapes (masked edges, a K tail) and on shapes
/// the tensor maps take, with `x`, `w` or both as transposed views; the bias read with a
/// stride of 2 (every other element of a longer buffer).
#[test]
fn every_config_every_activation_every_layout() {
    let dev = tests::test_device();
    for (m, n, k, seed) in [(70, 90, 150, 1), (128, 256, 192, 3)] {
        let buf = Tensor::<bf16>::randn(&dev, &[2 * n], seed + 7).unwrap();
        let bias: Vec<f64> = buf.to_f64_vec().iter().step_by(2).copied().collect();
        for (tx, tw) in [(false, false), (false, true), (true, false), (true, true)] {
            let (x, xv) = operand(&dev, m, k, tx, seed);
            let (w, wv) = operand(&dev, k, n, tw, seed + 1);
            for (act, act_ref, name) in activations() {
                let want = reference(&xv, &wv, &bias, m, n, k, act_ref);
                for cfg in 0..linear_kernel::CONFIGS.len() {
                    let y = Tensor::<bf16>::full(&dev, &[m, n], bf16::NAN).unwrap();
                    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
                    let s = |t: &Tensor<bf16>, d: usize| t.stride(d) as i32;
                    linear_kernel::launch_config(
                        cfg,
                        |meta: &linear_kernel::Meta| (cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N),),
                        &x, &w, &buf, &y, mi, ni, ki,
                        s(&x, 0), s(&x, 1), s(&w, 0), s(&w, 1), 2, s(&y, 0), s(&y, 1),
                        act,
                    )
                    .unwrap();
                    let r = worst_ratio(&y.to_f64_vec(), &want, ATOL, RTOL);
                    assert!(r <= 1.0, "{m}x{n}x{k} (x transposed {tx}, w transposed {tw}), {name}, config {cfg}: worst error ratio {r}");
                }
            }
        }
    }
}

/// The autotuned wrapper as `nn.Linear` is used: the weight stored `(out, in)` and passed as
/// its transposed view, GELU fused, into an output that is a column-narrowed view.
#[test]
fn wrapper_with_an_nn_linear_weight() {
    let dev = tests::test_device();
    let (m, n, k) = (96, 136, 200);
    let (x, xv) = operand(&dev, m, k, false, 11);
    let (w, wv) = operand(&dev, k, n, true, 12);
    let b = Tensor::<bf16>::randn(&dev, &[n], 13).unwrap();
    let bv = b.to_f64_vec();
    let y = linear(&x, &w, &b, Some(gelu)).unwrap();
    assert_eq!(y.shape(), &[m, n]);
    let r = worst_ratio(&y.to_f64_vec(), &reference(&xv, &wv, &bv, m, n, k, gelu_ref), ATOL, RTOL);
    assert!(r <= 1.0, "linear: worst error ratio {r}");

    let wide = Tensor::<bf16>::full(&dev, &[m, n + 8], bf16::NAN).unwrap();
    let out = wide.narrow(1, 8, n).unwrap();
    linear_into(&x, &w, &b, &out, Some(gelu_tanh)).unwrap();
    let got = wide.to_f64_vec();
    let inside: Vec<f64> = (0..m).flat_map(|i| got[i * (n + 8) + 8..(i + 1) * (n + 8)].to_vec()).collect();
    let r = worst_ratio(&inside, &reference(&xv, &wv, &bv, m, n, k, gelu_tanh_ref), ATOL, RTOL);
    assert!(r <= 1.0, "linear_into: worst error ratio {r}");
    assert!((0..m).all(|i| got[i * (n + 8)..i * (n + 8) + 8].iter().all(|v| v.is_nan())), "columns outside the view were written");
}

/// Shapes that do not fit are typed errors naming the operand, before any launch.
#[test]
fn wrong_shapes_are_typed_errors() {
    let dev = tests::test_device();
    let x = Tensor::<bf16>::zeros(&dev, &[4, 8]).unwrap();
    let w = Tensor::<bf16>::zeros(&dev, &[8, 6]).unwrap();
    let bias = |n: usize| Tensor::<bf16>::zeros(&dev, &[n]).unwrap();
    assert!(matches!(linear(&x, &w, &bias(5), None), Err(MatmulError::BiasShape { expected: 6, .. })));
    let b2 = Tensor::<bf16>::zeros(&dev, &[1, 6]).unwrap();
    assert!(matches!(linear(&x, &w, &b2, Some(gelu)), Err(MatmulError::BiasShape { .. })));
    let w_bad = Tensor::<bf16>::zeros(&dev, &[7, 6]).unwrap();
    assert!(matches!(linear(&x, &w_bad, &bias(6), None), Err(MatmulError::IncompatibleDimensions { a_cols: 8, b_rows: 7, .. })));
    let w3 = Tensor::<bf16>::zeros(&dev, &[8, 6, 1]).unwrap();
    assert!(matches!(linear(&x, &w3, &bias(6), None), Err(MatmulError::NotAMatrix { which: "w", .. })));
    let y = Tensor::<bf16>::zeros(&dev, &[4, 5]).unwrap();
    assert!(matches!(linear_into(&x, &w, &bias(6), &y, None), Err(MatmulError::OutputShape { .. })));
    let msg = linear(&x, &w, &bias(5), None).unwrap_err().to_string();
    assert!(msg.contains("bias") && msg.contains("[6]"), "{msg}");
}
