//! Flash-attention forward (`examples::attention`) against a float64 reference: every config,
//! both head dimensions, causal and not, ragged sequence lengths (masked key blocks and query
//! rows), operands in PyTorch's `(batch, n_ctx, heads, head_dim)` layout viewed heads-first,
//! and the wrapper's typed errors.

use examples::attention::{attention, attn_fwd};
use kernel_runtime::{cdiv, f16, LaunchError, Tensor};
use tests::worst_ratio;

const ATOL: f64 = 2e-3;
const RTOL: f64 = 1e-2;

/// An f16 operand of shape `(batch, heads, n, d)`: contiguous, or (`seq_major`) a view of a
/// contiguous `(batch, n, heads, d)` tensor; with its values in `(batch, heads, n, d)` order.
fn operand(dev: &kernel_runtime::Device, shape: [usize; 4], seq_major: bool, seed: u64) -> (Tensor<f16>, Vec<f64>) {
    let [b, h, n, d] = shape;
    if !seq_major {
        let t = Tensor::<f16>::randn(dev, &shape, seed).unwrap();
        let v = t.to_f64_vec();
        return (t, v);
    }
    let t = Tensor::<f16>::randn(dev, &[b, n, h, d], seed).unwrap();
    let raw = t.to_f64_vec();
    let vals = (0..b * h * n * d)
        .map(|i| {
            let (bi, hi, ni, di) = (i / (h * n * d), (i / (n * d)) % h, (i / d) % n, i % d);
            raw[((bi * n + ni) * h + hi) * d + di]
        })
        .collect();
    (t.transpose(1, 2).unwrap(), vals)
}

/// `softmax(q k^T * scale) v` per batch entry and head, in float64.
fn reference(q: &[f64], k: &[f64], v: &[f64], shape: [usize; 4], causal: bool, scale: f64) -> Vec<f64> {
    let [b, h, n, d] = shape;
    let mut out = vec![0.0; b * h * n * d];
    for bh in 0..b * h {
        let base = bh * n * d;
        for i in 0..n {
            let keys = if causal { i + 1 } else { n };
            let s: Vec<f64> = (0..keys).map(|j| (0..d).map(|x| q[base + i * d + x] * k[base + j * d + x]).sum::<f64>() * scale).collect();
            let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
            let sum: f64 = e.iter().sum();
            for x in 0..d {
                out[base + i * d + x] = (0..keys).map(|j| e[j] * v[base + j * d + x]).sum::<f64>() / sum;
            }
        }
    }
    out
}

/// Launches config `cfg`; `false` when it is built for other architectures than the device's
/// (`archs = [...]`: its entry is not in the device's module).
fn launch_config(cfg: usize, q: &Tensor<f16>, k: &Tensor<f16>, v: &Tensor<f16>, o: &Tensor<f16>, causal: bool, scale: f32) -> bool {
    let s = q.shape();
    let (heads, n, d) = (s[1] as i32, s[2] as i32, s[3] as i32);
    let st = |t: &Tensor<f16>, i: usize| t.stride(i) as i32;
    let r = attn_fwd::launch_config(
        cfg,
        |meta: &attn_fwd::Meta| (cdiv(n, meta.BLOCK_M), (s[0] * s[1]) as i32),
        q, k, v, o, scale,
        st(q, 0), st(q, 1), st(q, 2),
        st(k, 0), st(k, 1), st(k, 2),
        st(v, 0), st(v, 1), st(v, 2),
        st(o, 0), st(o, 1), st(o, 2),
        heads, n, d, causal,
    );
    match r {
        Ok(()) => true,
        Err(LaunchError::MissingEntry { .. }) if !attn_fwd::CONFIGS[cfg].archs.is_empty() => false,
        Err(e) => panic!("config {cfg}: {e}"),
    }
}

/// Every config, both head dimensions, causal and not, on sequence lengths that end inside a
/// key block and inside a query block, and on one whole block.
#[test]
fn every_config_matches_the_reference() {
    let dev = tests::test_device();
    for (shape, seed) in [([1, 2, 150, 64], 1), ([2, 1, 128, 128], 3), ([1, 1, 70, 128], 5), ([1, 2, 200, 64], 7)] {
        let (q, qv) = operand(&dev, shape, false, seed);
        let (k, kv) = operand(&dev, shape, false, seed + 1);
        let (v, vv) = operand(&dev, shape, false, seed + 2);
        let scale = 1.0 / (shape[3] as f32).sqrt();
        for causal in [false, true] {
            let want = reference(&qv, &kv, &vv, shape, causal, scale as f64);
            for cfg in 0..attn_fwd::CONFIGS.len() {
                let o = Tensor::<f16>::full(&dev, &shape, f16::NAN).unwrap();
                if !launch_config(cfg, &q, &k, &v, &o, causal, scale) {
                    continue;
                }
                let r = worst_ratio(&o.to_f64_vec(), &want, ATOL, RTOL);
                assert!(r <= 1.0, "{shape:?} causal {causal}, config {cfg}: worst error ratio {r}");
            }
        }
    }
}

/// Every config on operands whose rows are padded (a row stride of `head_dim + 8`) and, in a
/// second round, also start one element into their rows (no 16-byte alignment): on sm_90a the
/// key and value tiles come through tensor maps in the first round and through `cp.async` in
/// the second, whose maps the launch cannot build.
#[test]
fn every_config_on_padded_and_misaligned_rows() {
    let dev = tests::test_device();
    for (shape, seed) in [([1, 2, 150, 64], 31), ([2, 1, 70, 128], 33)] {
        let [b, h, n, d] = shape;
        for first in [0, 1] {
            let view = |seed: u64| {
                let t = Tensor::<f16>::randn(&dev, &[b, h, n, d + 8], seed).unwrap().narrow(3, first, d).unwrap();
                let v = t.to_f64_vec();
                (t, v)
            };
            let ((q, qv), (k, kv), (v, vv)) = (view(seed), view(seed + 1), view(seed + 2));
            let scale = 1.0 / (d as f32).sqrt();
            for causal in [false, true] {
                let want = reference(&qv, &kv, &vv, shape, causal, scale as f64);
                for cfg in 0..attn_fwd::CONFIGS.len() {
                    let o = Tensor::<f16>::full(&dev, &shape, f16::NAN).unwrap();
                    if !launch_config(cfg, &q, &k, &v, &o, causal, scale) {
                        continue;
                    }
                    let r = worst_ratio(&o.to_f64_vec(), &want, ATOL, RTOL);
                    assert!(r <= 1.0, "{shape:?} from element {first}, causal {causal}, config {cfg}: worst error ratio {r}");
                }
            }
        }
    }
}

/// A negative scale (the kernel's unmasked loop takes the row maxima of the raw scores, so such
/// scales go through its masked loop), every config, both head dimensions.
#[test]
fn negative_scale_matches_the_reference() {
    let dev = tests::test_device();
    for (shape, seed) in [([1, 2, 150, 64], 21), ([1, 1, 130, 128], 23)] {
        let (q, qv) = operand(&dev, shape, false, seed);
        let (k, kv) = operand(&dev, shape, false, seed + 1);
        let (v, vv) = operand(&dev, shape, false, seed + 2);
        for causal in [false, true] {
            let want = reference(&qv, &kv, &vv, shape, causal, -0.3);
            for cfg in 0..attn_fwd::CONFIGS.len() {
                let o = Tensor::<f16>::full(&dev, &shape, f16::NAN).unwrap();
                if !launch_config(cfg, &q, &k, &v, &o, causal, -0.3) {
                    continue;
                }
                let r = worst_ratio(&o.to_f64_vec(), &want, ATOL, RTOL);
                assert!(r <= 1.0, "{shape:?} causal {causal}, config {cfg}: worst error ratio {r}");
            }
        }
    }
}

/// The autotuned wrapper on operands in PyTorch's `(batch, n_ctx, heads, head_dim)` layout,
/// viewed heads-first (row stride `heads * head_dim`, head stride `head_dim`).
#[test]
fn wrapper_on_sequence_major_views() {
    let dev = tests::test_device();
    let shape = [2, 3, 96, 64];
    let (q, qv) = operand(&dev, shape, true, 11);
    let (k, kv) = operand(&dev, shape, true, 12);
    let (v, vv) = operand(&dev, shape, true, 13);
    for causal in [false, true] {
        let o = attention(&q, &k, &v, causal, 0.125).unwrap();
        assert_eq!(o.shape(), &shape);
        let r = worst_ratio(&o.to_f64_vec(), &reference(&qv, &kv, &vv, shape, causal, 0.125), ATOL, RTOL);
        assert!(r <= 1.0, "causal {causal}: worst error ratio {r}");
    }
}

#[test]
fn wrapper_errors() {
    let dev = tests::test_device();
    let t = |shape: &[usize]| Tensor::<f16>::zeros(&dev, shape).unwrap();
    let q = t(&[1, 2, 64, 64]);
    // The argument named, and the message a user sees.
    let bad_arg = |r: Result<Tensor<f16>, LaunchError>| match r {
        Err(e @ LaunchError::InvalidArgument { arg, .. }) => (arg, e.to_string()),
        other => panic!("expected an invalid argument, got {other:?}"),
    };
    let (arg, msg) = bad_arg(attention(&t(&[2, 64, 64]), &q, &q, false, 1.0));
    assert!(arg == "q" && msg.contains("a 4-D tensor (batch, heads, n_ctx, head_dim)") && msg.contains("[2, 64, 64]"), "{msg}");
    let (arg, msg) = bad_arg(attention(&t(&[1, 2, 64, 32]), &t(&[1, 2, 64, 32]), &t(&[1, 2, 64, 32]), false, 1.0));
    assert!(arg == "q" && msg.contains("a head dimension of 64 or 128") && msg.contains("32"), "{msg}");
    let (arg, msg) = bad_arg(attention(&q, &t(&[1, 2, 32, 64]), &q, false, 1.0));
    assert!(arg == "k" && msg.contains("shape [1, 2, 64, 64]") && msg.contains("[1, 2, 32, 64]"), "{msg}");
    let (arg, msg) = bad_arg(attention(&q, &q, &t(&[1, 2, 64, 64]).transpose(2, 3).unwrap(), false, 1.0));
    assert!(arg == "v" && msg.contains("a contiguous last dimension"), "{msg}");
    let (arg, msg) = bad_arg(attention(&t(&[1, 70_000, 1, 64]), &t(&[1, 70_000, 1, 64]), &t(&[1, 70_000, 1, 64]), false, 1.0));
    assert!(arg == "q" && msg.contains("at most 65535 batch entries times heads") && msg.contains("70000"), "{msg}");
}
