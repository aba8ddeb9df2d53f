//! The narrow integer element types (i8, i16, u8, u16) and f64 scalar parameters on both
//! backends, against plain-Rust references (exact): arithmetic wraps like Rust's `wrapping_*`,
//! int -> int conversions wrap like `as`, float -> int truncates and saturates like `as`,
//! `sum`/`cumsum` accumulate in i32 (signed) or u32 (unsigned).

use kernel_runtime::Tensor;
use tests::{spread, test_device};
use tests::types::{axpb_f64, mixed_widths, ops_i16, ops_i8, ops_u16, ops_u8};

const N: usize = 256;
/// The valid prefix: lanes from `n` on are masked off.
const VALID: usize = 200;

/// Float inputs of the `to::<T>()` conversions: in range, fractional, out of range, NaN, infinities.
fn floats(i: usize) -> f32 {
    match i % 8 {
        0 => f32::NAN,
        1 => 1e9,
        2 => -1e9,
        3 => f32::INFINITY,
        4 => -2.75,
        5 => 2.75,
        6 => 65535.9,
        _ => (spread(i, 7) % 70000) as f32 - 35000.5,
    }
}

macro_rules! ops_test {
    ($name:ident, $kernel:ident, $t:ty, $acc:ty) => {
        #[test]
        fn $name() {
            let dev = test_device();
            let mut a: Vec<$t> = (0..N).map(|i| spread(i, 1) as $t).collect();
            let mut b: Vec<$t> = (0..N).map(|i| spread(i, 2) as $t).collect();
            a[..6].copy_from_slice(&[<$t>::MIN, <$t>::MAX, 0, 1, <$t>::MAX, <$t>::MIN]);
            b[..6].copy_from_slice(&[(0 as $t).wrapping_sub(1), 0, <$t>::MAX, <$t>::MIN, 1, <$t>::MIN]);
            b[10] = 0;
            let s: $t = (<$t>::MAX / 3) as $t;
            let f: Vec<f32> = (0..N).map(floats).collect();
            const SENT: $t = 0x5a;
            let out = Tensor::<$t>::full(&dev, &[12 * N], SENT).unwrap();
            let wide = Tensor::<i32>::full(&dev, &[2 * N], -7).unwrap();
            let fl = Tensor::<f32>::full(&dev, &[N], -7.0).unwrap();
            let back = Tensor::<$t>::full(&dev, &[2 * N], SENT).unwrap();
            let red = Tensor::<$acc>::full(&dev, &[4], 7).unwrap();
            let cs = Tensor::<$acc>::full(&dev, &[N], 7).unwrap();
            let ta = Tensor::from_vec(&dev, &[N], a.clone()).unwrap();
            let tb = Tensor::from_vec(&dev, &[N], b.clone()).unwrap();
            let tf = Tensor::from_vec(&dev, &[N], f.clone()).unwrap();
            $kernel::launch((1,), &ta, &tb, s, VALID as i32, &tf, &out, &wide, &fl, &back, &red, &cs, N as i32).unwrap();

            let mut want_out = vec![SENT; 12 * N];
            let mut want_wide = vec![-7i32; 2 * N];
            let mut want_fl = vec![-7.0f32; N];
            let mut want_back = vec![SENT; 2 * N];
            for i in 0..VALID {
                let (x, y) = (a[i], b[i]);
                let y1 = if y == 0 { 1 } else { y };
                let rows: [$t; 12] = [
                    x.wrapping_add(y),
                    x.wrapping_mul(y).wrapping_sub(s),
                    x.wrapping_div(y1),
                    x.wrapping_rem(y1),
                    (x & y) | (x ^ 3),
                    x.wrapping_shl(1),
                    x >> 2,
                    x.max(y),
                    if x < y { x } else { s },
                    x.wrapping_neg(),
                    b[(x & 7) as usize],
                    (x >= y) as $t,
                ];
                for (r, v) in rows.iter().enumerate() {
                    want_out[r * N + i] = *v;
                }
                want_wide[i] = x as i32;
                want_wide[N + i] = (x as i32).wrapping_add(i as i32);
                want_fl[i] = x as f32;
                want_back[i] = f[i] as $t;
                want_back[N + i] = (x as i32).wrapping_mul(3) as $t;
            }
            let got = out.to_vec();
            for r in 0..12 {
                assert_eq!(got[r * N..(r + 1) * N], want_out[r * N..(r + 1) * N], "{} row {r}", stringify!($t));
            }
            assert_eq!(wide.to_vec(), want_wide, "widening");
            assert_eq!(fl.to_vec(), want_fl, "to f32");
            assert_eq!(back.to_vec(), want_back, "to {}", stringify!($t));
            let valid = &a[..VALID];
            let sum = valid.iter().fold(0 as $acc, |s, &x| s.wrapping_add(x as $acc));
            let max = *valid.iter().max().unwrap() as $acc;
            let min = *valid.iter().min().unwrap() as $acc;
            let xor = valid.iter().fold(0 as $t, |s, &x| s ^ x) as $acc;
            assert_eq!(red.to_vec(), vec![sum, max, min, xor], "sum, max, min, xor_sum");
            let mut run = 0 as $acc;
            let want_cs: Vec<$acc> = (0..N)
                .map(|i| {
                    if i < VALID {
                        run = run.wrapping_add(a[i] as $acc);
                    }
                    run
                })
                .collect();
            assert_eq!(cs.to_vec(), want_cs, "cumsum");
        }
    };
}

ops_test!(i8_ops, ops_i8, i8, i32);
ops_test!(i16_ops, ops_i16, i16, i32);
ops_test!(u8_ops, ops_u8, u8, u32);
ops_test!(u16_ops, ops_u16, u16, u32);

#[test]
fn f64_scalar_parameters() {
    let dev = test_device();
    let n = 300;
    let x: Vec<f64> = (0..n).map(|i| (i as f64) * 0.37 - 50.0 + 1e-9).collect();
    let (alpha, beta) = (1.0 + 1e-12, -0.1);
    let out = Tensor::<f64>::full(&dev, &[384], -7.0).unwrap();
    let low = Tensor::<f32>::full(&dev, &[384], -7.0).unwrap();
    let tx = Tensor::from_vec(&dev, &[n], x.clone()).unwrap();
    axpb_f64::launch((3,), &tx, alpha, beta, n as i32, &out, &low, 128).unwrap();
    let (out, low) = (out.to_vec(), low.to_vec());
    for i in 0..384 {
        if i < n {
            // One rounding each (no contraction into an fma on either backend)...
            let want = x[i] * alpha + beta;
            assert!((out[i] - want).abs() <= 1e-12 * want.abs().max(1.0), "{i}: {} vs {want}", out[i]);
            let wl = (x[i] as f32) * (alpha as f32) + (beta as f32);
            assert!((low[i] - wl).abs() <= 1e-5 * wl.abs().max(1.0), "{i}: {} vs {wl}", low[i]);
        } else {
            assert_eq!((out[i], low[i]), (-7.0, -7.0), "{i} is masked off");
        }
    }
}

#[test]
fn mixed_widths_promote() {
    let dev = test_device();
    const M: usize = 64;
    let p: Vec<u8> = (0..M).map(|i| spread(i, 3) as u8).collect();
    let q: Vec<i16> = (0..M).map(|i| spread(i, 4) as i16).collect();
    let r: Vec<i8> = (0..M).map(|i| spread(i, 5) as i8).collect();
    let w: Vec<u16> = (0..M).map(|i| spread(i, 6) as u16).collect();
    let t = |dev: &kernel_runtime::Device| {
        (
            Tensor::<i16>::zeros(dev, &[M]).unwrap(),
            Tensor::<i32>::zeros(dev, &[M]).unwrap(),
            Tensor::<u32>::zeros(dev, &[M]).unwrap(),
            Tensor::<u8>::zeros(dev, &[M]).unwrap(),
        )
    };
    let (o16, o32, ou32, o8) = t(&dev);
    mixed_widths::launch(
        (1,),
        &Tensor::from_vec(&dev, &[M], p.clone()).unwrap(),
        &Tensor::from_vec(&dev, &[M], q.clone()).unwrap(),
        &Tensor::from_vec(&dev, &[M], r.clone()).unwrap(),
        &Tensor::from_vec(&dev, &[M], w.clone()).unwrap(),
        &o16,
        &o32,
        &ou32,
        &o8,
        M as i32,
    )
    .unwrap();
    assert_eq!(o16.to_vec(), (0..M).map(|i| (p[i] as i16).wrapping_add(q[i])).collect::<Vec<_>>());
    assert_eq!(o32.to_vec(), (0..M).map(|i| (r[i] as i32) * i as i32).collect::<Vec<_>>());
    assert_eq!(ou32.to_vec(), (0..M).map(|i| w[i] as u32 + i as u32).collect::<Vec<_>>());
    assert_eq!(o8.to_vec(), (0..M).map(|i| p[i].wrapping_add(1)).collect::<Vec<_>>());
}
