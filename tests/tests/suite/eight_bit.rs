//! The 8-bit floats and the 8-bit `dot`s on both backends, against exact references: the
//! `float8` crate's conversions (round to nearest even, saturating), arithmetic in f32 rounded
//! once, and `dot` sums that are exact (f32 sums of small multiples of powers of two; i32 sums).

use kernel_runtime::{cdiv, f8e4m3, f8e5m2, Tensor};
use tests::eight_bit::{checked_fp8, fp8_dot, fp8_ops, i8_dot};
use tests::{assertion_failure, spread, test_device};

const N: usize = 128;
const VALID: usize = 100;

/// Inputs of the conversions: every kind of value, midpoints between 8-bit neighbours
/// included (ties go to the even one), beyond the largest finite values, NaN and infinities.
fn conversion_input(i: usize) -> f32 {
    let mid = |b: u8| (f8e4m3::from_bits(b).to_f32() + f8e4m3::from_bits(b + 1).to_f32()) / 2.0;
    match i % 10 {
        0 => f32::NAN,
        1 => [f32::INFINITY, f32::NEG_INFINITY, 1e9, -500.0, 460.0, 70000.0][i / 10 % 6],
        2 => mid((spread(i, 3) % 0x7e) as u8),
        3 => -mid((spread(i, 4) % 0x7e) as u8),
        4 => f32::from_bits(0x3000_0000 + (spread(i, 5) % 0x1000_0000) as u32), // tiny to subnormal
        _ => f32::from_bits(spread(i, 6) as u32 & 0x8fff_ffff | 0x3800_0000),
    }
}

/// Bits of an f8e4m3 value that is neither NaN nor below 2^-3 (so that sums are exact in f32).
fn e4m3_input(i: usize) -> u8 {
    let b = (spread(i, 8) % 256) as u8;
    let exp = (b >> 3) & 0xf;
    let b = if exp < 4 { b | 0x20 } else { b };
    if b & 0x7f == 0x7f { b & 0xfe } else { b }
}

fn same(got: f32, want: f32) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

#[test]
fn conversions_arithmetic_and_reductions() {
    let dev = test_device();
    let x: Vec<f32> = (0..N).map(conversion_input).collect();
    let e: Vec<f8e4m3> = (0..N).map(|i| f8e4m3::from_bits(e4m3_input(i))).collect();
    let g: Vec<f8e5m2> = (0..N).map(|i| f8e5m2::from_bits((spread(i, 9) % 256) as u8)).collect();
    let sent4 = f8e4m3::from_bits(0x55);
    let sent5 = f8e5m2::from_bits(0x55);
    let q4 = Tensor::<f8e4m3>::full(&dev, &[2 * N], sent4).unwrap();
    let q5 = Tensor::<f8e5m2>::full(&dev, &[2 * N], sent5).unwrap();
    let f = Tensor::<f32>::full(&dev, &[9 * N], -7.0).unwrap();
    let red = Tensor::<f32>::full(&dev, &[3], -7.0).unwrap();
    let (tx, te, tg) = (Tensor::from_vec(&dev, &[N], x.clone()).unwrap(), Tensor::from_vec(&dev, &[N], e.clone()).unwrap(), Tensor::from_vec(&dev, &[N], g.clone()).unwrap());
    fp8_ops::launch((1,), &tx, &te, &tg, VALID as i32, &q4, &q5, &f, &red, N as i32).unwrap();

    let (q4, q5, f, red) = (q4.to_vec(), q5.to_vec(), f.to_vec(), red.to_vec());
    let r4 = |v: f32| f8e4m3::from_f32(v).to_f32();
    for i in 0..N {
        let valid = i < VALID;
        let want4 = if valid { f8e4m3::from_f32(x[i]) } else { sent4 };
        let want5 = if valid { f8e5m2::from_f32(x[i]) } else { sent5 };
        for (row, (got, want)) in [(q4[i], want4), (q4[N + i], want4)].into_iter().enumerate() {
            assert!(same(got.to_f32(), want.to_f32()), "f8e4m3 row {row}, x[{i}] = {:e}: {:#04x}, want {:#04x}", x[i], got.to_bits(), want.to_bits());
        }
        for (row, (got, want)) in [(q5[i], want5), (q5[N + i], want5)].into_iter().enumerate() {
            assert!(same(got.to_f32(), want.to_f32()), "f8e5m2 row {row}, x[{i}] = {:e}: {:#04x}, want {:#04x}", x[i], got.to_bits(), want.to_bits());
        }
        let (ev, gv) = (e[i].to_f32(), g[i].to_f32());
        let rows = [ev, gv, ev, r4(ev + r4(gv)), r4(ev * ev), -ev, r4(ev.abs()), r4(ev.max(0.5)), ev as i32 as f32];
        for (row, want) in rows.into_iter().enumerate() {
            let want = if valid { want } else { -7.0 };
            let got = f[row * N + i];
            assert!(same(got, want), "row {row}, e = {ev}, g = {gv}: {got}, want {want}");
        }
    }
    let valid: Vec<f32> = e[..VALID].iter().map(|v| v.to_f32()).collect();
    let sum = r4(valid.iter().sum());
    let max = valid.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let min = valid.iter().copied().fold(f32::INFINITY, f32::min);
    assert_eq!(red, vec![sum, max, min], "sum, max, min");
}

#[test]
fn fp8_dot_sums_exactly_in_f32() {
    let dev = test_device();
    let (m, n, k) = (50usize, 40usize, 70usize);
    // Multiples of 1/8 up to 2 (f8e4m3) and of 1/4 up to 2 (f8e5m2): exact in both formats,
    // and every partial sum is exact in f32.
    let a: Vec<f8e4m3> = (0..m * k).map(|i| f8e4m3::from_f32((spread(i, 1) % 33) as f32 / 8.0 - 2.0)).collect();
    let b: Vec<f8e5m2> = (0..k * n).map(|i| f8e5m2::from_f32((spread(i, 2) % 17) as f32 / 4.0 - 2.0)).collect();
    let bias: Vec<f32> = (0..n).map(|i| (spread(i, 3) % 9) as f32 / 4.0).collect();
    let (ta, tb, tbias) = (Tensor::from_vec(&dev, &[m * k], a.clone()).unwrap(), Tensor::from_vec(&dev, &[k * n], b.clone()).unwrap(), Tensor::from_vec(&dev, &[n], bias.clone()).unwrap());
    for bm in [32, 64] {
        let c = Tensor::<f32>::full(&dev, &[m * n], f32::NAN).unwrap();
        let grid = (cdiv(m as i32, bm), cdiv(n as i32, 32));
        fp8_dot::launch(grid, &ta, &tb, &tbias, &c, m as i32, n as i32, k as i32, bm, 32, 32).unwrap();
        let c = c.to_vec();
        for i in 0..m {
            for j in 0..n {
                let want = bias[j] as f64 + (0..k).map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64()).sum::<f64>();
                assert_eq!(c[i * n + j] as f64, want, "BM {bm}: c[{i}, {j}]");
            }
        }
    }
}

#[test]
fn i8_dot_sums_exactly_in_i32() {
    let dev = test_device();
    let (m, n, k) = (50usize, 40usize, 70usize);
    let a: Vec<i8> = (0..m * k).map(|i| spread(i, 4) as i8).collect();
    let b: Vec<u8> = (0..k * n).map(|i| spread(i, 5) as u8).collect();
    let c0: Vec<i32> = (0..m * n).map(|i| (spread(i, 6) % 2001) as i32 - 1000).collect();
    let (ta, tb, tc0) = (Tensor::from_vec(&dev, &[m * k], a.clone()).unwrap(), Tensor::from_vec(&dev, &[k * n], b.clone()).unwrap(), Tensor::from_vec(&dev, &[m * n], c0.clone()).unwrap());
    for bm in [32, 64] {
        let c = Tensor::<i32>::full(&dev, &[m * n], i32::MIN).unwrap();
        let grid = (cdiv(m as i32, bm), cdiv(n as i32, 32));
        i8_dot::launch(grid, &ta, &tb, &tc0, &c, m as i32, n as i32, k as i32, bm, 32, 32).unwrap();
        let c = c.to_vec();
        for i in 0..m {
            for j in 0..n {
                let want = c0[i * n + j] as i64 + (0..k).map(|p| a[i * k + p] as i64 * b[p * n + j] as i64).sum::<i64>();
                assert_eq!(c[i * n + j] as i64, want, "BM {bm}: c[{i}, {j}]");
            }
        }
    }
}

/// A failing `device_assert` on f8e4m3 values reports them as the CPU backend prints them (their
/// value), on both backends.
#[test]
fn assertions_report_8_bit_values() {
    let dev = test_device();
    let mut x = vec![f8e4m3::from_f32(0.5); 64];
    x[37] = f8e4m3::from_f32(3.0);
    let (tx, out) = (Tensor::from_vec(&dev, &[64], x).unwrap(), Tensor::<f32>::zeros(&dev, &[64]).unwrap());
    let f = assertion_failure(&dev, checked_fp8::launch((1,), &tx, 2.0, &out, 64));
    assert_eq!(f.index, Some(37));
    assert_eq!(f.operands, vec![("v".to_string(), "3".to_string()), ("lim".to_string(), "2".to_string())]);
}
