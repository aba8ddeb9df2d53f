//! Scans and index reductions on both backends against plain-Rust references: sums and products
//! of exactly representable values (so every evaluation order gives the same bits), NaNs, ties.

use kernel_runtime::{f16, Tensor};
use tests::scans::scans;
use tests::test_device;

const R: usize = 4;
const C: usize = 64;

/// Inclusive scan of the `[R, C]` row-major `data` along `axis`, from the end when `reverse`.
fn scan_ref<T: Copy>(data: &[T], axis: usize, reverse: bool, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = data.to_vec();
    let (lines, len) = if axis == 1 { (R, C) } else { (C, R) };
    for l in 0..lines {
        let at = |p: usize| {
            let p = if reverse { len - 1 - p } else { p };
            if axis == 1 { l * C + p } else { p * C + l }
        };
        for p in 1..len {
            out[at(p)] = f(out[at(p - 1)], out[at(p)]);
        }
    }
    out
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The index of the first maximum (`max`: else minimum) of `vals`, NaNs ignored; 0 if all NaN.
fn arg_ref(vals: &[f32], max: bool) -> i32 {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in vals.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| if max { v > b } else { v < b }) {
            best = Some((i, v));
        }
    }
    best.map_or(0, |(i, _)| i as i32)
}

#[test]
fn cumsum_cumprod_argmax_argmin_xor_sum() {
    let dev = test_device();
    let n = R * C;
    let mut a: Vec<f32> = (0..n).map(|i| ((i * 29) % 23) as f32 * 0.25 - 2.0).collect();
    // Products stay exact: row 1 of powers of two and signs.
    for j in 0..C {
        a[C + j] = [2.0, 0.5, -1.0, 1.0][j % 4];
    }
    // Row 2: a NaN in the middle and a tie for the maximum; row 3: all NaN in its last quarter.
    a[2 * C + 10] = f32::NAN;
    a[2 * C + 20] = 100.0;
    a[2 * C + 40] = 100.0;
    for j in 48..C {
        a[3 * C + j] = f32::NAN;
    }
    let h: Vec<f16> = (0..n).map(|i| f16::from_f32(((i * 7) % 9) as f32 - 4.0)).collect();
    let b: Vec<i32> = (0..n).map(|i| ((i as i32 * 7919) % 1000) - 500).collect();
    let out = Tensor::<f32>::full(&dev, &[3 * n], -7.0).unwrap();
    let hout = Tensor::<f16>::full(&dev, &[n], f16::from_f32(-7.0)).unwrap();
    let iout = Tensor::<i32>::full(&dev, &[2 * n], -7).unwrap();
    let idx = Tensor::<i32>::full(&dev, &[3 * R + C], -7).unwrap();
    let t = |v: &Vec<f32>| Tensor::from_vec(&dev, &[n], v.clone()).unwrap();
    scans::launch((1,), &t(&a), &Tensor::from_vec(&dev, &[n], h.clone()).unwrap(), &Tensor::from_vec(&dev, &[n], b.clone()).unwrap(), &out, &hout, &iout, &idx, 4, 64).unwrap();
    let (out, hout, iout, idx) = (out.to_vec(), hout.to_vec(), iout.to_vec(), idx.to_vec());
    let wants = [scan_ref(&a, 1, false, |x, y| x + y), scan_ref(&a, 0, true, |x, y| x + y), scan_ref(&a, 1, true, |x, y| x * y)];
    for (s, want) in wants.iter().enumerate() {
        for i in 0..n {
            assert!(same(out[s * n + i], want[i]), "scan {s} at {i}: {} vs {}", out[s * n + i], want[i]);
        }
    }
    let hf: Vec<f32> = h.iter().map(|v| v.to_f32()).collect();
    let hwant = scan_ref(&hf, 1, false, |x, y| x + y);
    assert_eq!(hout, hwant.iter().map(|v| f16::from_f32(*v)).collect::<Vec<_>>());
    assert_eq!(iout[..n], scan_ref(&b, 1, false, |x: i32, y| x.wrapping_add(y))[..]);
    assert_eq!(iout[n..], scan_ref(&b, 0, false, |x: i32, y| x.wrapping_mul(y))[..]);
    for row in 0..R {
        let vals = &a[row * C..(row + 1) * C];
        assert_eq!(idx[row], arg_ref(vals, true), "argmax of row {row}");
        assert_eq!(idx[R + row], arg_ref(vals, false), "argmin of row {row}");
        assert_eq!(idx[2 * R + C + row], b[row * C..(row + 1) * C].iter().fold(0, |x, y| x ^ y), "xor_sum of row {row}");
    }
    assert_eq!(idx[2], 20, "the first of two tied maxima");
    for col in 0..C {
        let vals: Vec<f32> = (0..R).map(|r| a[r * C + col]).collect();
        assert_eq!(idx[2 * R + col], arg_ref(&vals, true), "argmax of column {col}");
    }
}

#[test]
fn associative_scan_and_reduce_with_helpers() {
    use tests::scans::combine::combines;
    let dev = test_device();
    let n = R * C;
    let a: Vec<f32> = (0..n).map(|i| ((i * 37) % 29) as f32 * 0.5 - 7.0).collect();
    let b: Vec<i32> = (0..n).map(|i| if (i * 13) % 5 < 3 { 0 } else { (i as i32 * 31) % 17 - 8 }).collect();
    let larger = |x: f32, y: f32| if y.abs() > x.abs() { y } else { x };
    let first_nonzero = |x: i32, y: i32| if x != 0 { x } else { y };
    let out = Tensor::<f32>::full(&dev, &[2 * n], f32::NAN).unwrap();
    let iout = Tensor::<i32>::full(&dev, &[n], -99).unwrap();
    let red = Tensor::<f32>::full(&dev, &[R + C], f32::NAN).unwrap();
    let ired = Tensor::<i32>::full(&dev, &[R], -99).unwrap();
    combines::launch((1,), &Tensor::from_vec(&dev, &[n], a.clone()).unwrap(), &Tensor::from_vec(&dev, &[n], b.clone()).unwrap(), &out, &iout, &red, &ired, 4, 64).unwrap();
    let (out, iout, red, ired) = (out.to_vec(), iout.to_vec(), red.to_vec(), ired.to_vec());
    assert_eq!(out[..n], scan_ref(&a, 1, false, larger)[..]);
    assert_eq!(out[n..], scan_ref(&a, 0, true, |x, y| x + y)[..]);
    assert_eq!(iout, scan_ref(&b, 1, true, first_nonzero));
    for row in 0..R {
        let line = &a[row * C..(row + 1) * C];
        assert_eq!(red[row], line[1..].iter().fold(line[0], |x, y| larger(x, *y)), "reduce row {row}");
        let iline = &b[row * C..(row + 1) * C];
        assert_eq!(ired[row], iline[1..].iter().fold(iline[0], |x, y| first_nonzero(x, *y)), "reduce row {row}");
    }
    for col in 0..C {
        assert_eq!(red[R + col], (0..R).map(|r| a[r * C + col]).sum::<f32>(), "reduce column {col}");
    }
}
