//! `multiple_of` hints on scalars, on both backends (`KERNEL_TEST_DEVICE=cuda` for the GPU):
//! kernels whose hints hold compute as without them (on the GPU with the alignment tests the
//! hints settle left out); a hint that does not hold is a typed error naming the hint and the
//! value, and the program stops there, before anything the hint's code relies on runs.

use kernel_runtime::{f16, Device, Tensor};
use tests::hints::{hinted_blocks, hinted_rows};
use tests::{assertion_failure, test_device};

const ROWS: usize = 5;
const B: i32 = 1024;

/// `ROWS` rows `stride` apart after `pad` elements, and `y` of the same length, all NaN.
fn rows(dev: &Device, stride: usize, pad: usize) -> (Tensor<f16>, Tensor<f16>, Vec<f64>) {
    let len = pad + ROWS * stride;
    let host: Vec<f64> = (0..len).map(|i| ((i * 37 + 11) % 101) as f64 / 16.0 - 3.0).collect();
    let x = Tensor::from_vec(dev, &[len], host.iter().map(|v| f16::from_f64(*v)).collect()).unwrap();
    let y = Tensor::from_vec(dev, &[len], vec![f16::NAN; len]).unwrap();
    (x, y, host)
}

/// `y = 2x + sum(x)` in float64 on the f16-rounded inputs of each row.
fn reference(host: &[f64], n: usize, stride: usize) -> Vec<Vec<f64>> {
    (0..ROWS)
        .map(|r| {
            let row: Vec<f64> = host[r * stride..r * stride + n].iter().map(|v| f16::from_f64(*v).to_f64()).collect();
            let s: f64 = row.iter().sum();
            row.iter().map(|v| 2.0 * v + s).collect()
        })
        .collect()
}

#[test]
fn rows_with_hints_that_hold() {
    let dev = test_device();
    for (n, stride) in [(1000usize, 1008usize), (1024, 1024), (8, 16), (0, 8)] {
        let (x, y, host) = rows(&dev, stride, 0);
        hinted_rows::launch((ROWS,), &x, &y, n as i32, stride as i32, B).unwrap();
        let got = y.to_vec();
        for (r, want) in reference(&host, n, stride).iter().enumerate() {
            for (c, w) in want.iter().enumerate() {
                let g = got[r * stride + c].to_f64();
                assert!((g - w).abs() <= 2e-3 * w.abs().max(1.0) + 0.1, "n {n}, row {r}, column {c}: {g} against {w}");
            }
            // Past the row's end nothing is written.
            assert!(got[r * stride + n..(r + 1) * stride].iter().all(|v| v.is_nan()), "n {n}, row {r}: written past the row");
        }
    }
}

/// A stride that is not a multiple of 8: the hint's report, and no row written.
#[test]
fn a_scalar_hint_that_does_not_hold_is_reported() {
    let dev = test_device();
    let (x, y, _) = rows(&dev, 1004, 0);
    let f = assertion_failure(&dev, hinted_rows::launch((ROWS,), &x, &y, 1000, 1004, B));
    assert_eq!((f.kernel, f.condition.as_str(), f.message.as_str(), f.index), ("hinted_rows", "stride % 8 == 0", "the hint `multiple_of(stride, 8)` does not hold", None));
    assert_eq!(f.operands, [("stride".to_string(), "1004".to_string())]);
    assert!(y.to_vec().iter().all(|v| v.is_nan()), "a program went on past the failed hint");
    // A launch whose hints hold then works.
    let (x, y, _) = rows(&dev, 1008, 0);
    hinted_rows::launch((ROWS,), &x, &y, 1000, 1008, B).unwrap();
    dev.synchronize().unwrap();
    assert!(!y.to_vec()[0].is_nan());
}

/// A view that starts 8 bytes into its storage: the pointer hint's report, with the address.
#[test]
fn a_pointer_hint_that_does_not_hold_is_reported() {
    let dev = test_device();
    let (x, y, _) = rows(&dev, 1008, 4);
    let (xv, yv) = (x.narrow(0, 4, ROWS * 1008).unwrap(), y.narrow(0, 0, ROWS * 1008).unwrap());
    let f = assertion_failure(&dev, hinted_rows::launch((ROWS,), &xv, &yv, 1000, 1008, B));
    assert_eq!((f.condition.as_str(), f.message.as_str()), ("address(x) % 16 == 0", "the hint `multiple_of(x, 16)` does not hold"));
    assert_eq!(f.operands.len(), 1);
    assert_eq!(f.operands[0].0, "the address of x");
    let address: i64 = f.operands[0].1.parse().unwrap();
    assert_eq!(address % 16, 8, "{f}");
    assert!(y.to_vec().iter().all(|v| v.is_nan()), "a program went on past the failed hint");
}

/// A hint the GPU code generator proves (the loop's block starts), with both block sizes and
/// lengths that end inside a block.
#[test]
fn proven_hints_in_a_loop() {
    let dev = test_device();
    for (n, b) in [(1000usize, 128), (1000, 256), (256, 256), (1, 128)] {
        let host: Vec<f32> = (0..n).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let x = Tensor::from_vec(&dev, &[n], host.clone()).unwrap();
        let out = Tensor::from_vec(&dev, &[1], vec![f32::NAN]).unwrap();
        hinted_blocks::launch((1,), &x, &out, n as i32, b).unwrap();
        let want: f64 = host.iter().map(|v| *v as f64).sum();
        assert_eq!(out.to_vec()[0] as f64, want, "n {n}, B {b}");
    }
}
