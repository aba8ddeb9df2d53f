//! The math functions beyond `exp`/`log`/`sqrt` on both backends: `libm`'s and `kernel-math`'s
//! functions give the same bits on the CPU and the GPU (both run the same code), `fma` rounds once, `sigmoid` is within
//! the f32 `exp`'s error, and every value is checked against a float64 reference.

use kernel_runtime::cpu::Float;
use kernel_runtime::{f16, Tensor};
use tests::math::{divide_by_scalar, divide_f32, int_math, math_f16, math_f32, math_f64_more, mul_add_contracted, mul_add_rounded, roundings};
use tests::test_device;

/// Inputs across signs and magnitudes, with the special values.
fn inputs() -> Vec<f64> {
    let mut xs: Vec<f64> = (0..90).map(|i| (i as f64 - 45.0) * 0.0731 + if i % 7 == 0 { 0.5 } else { 0.0 }).collect();
    xs.extend([0.0, -0.0, 1.0, -1.0, 20.0, -20.0, 1e-8, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
    xs
}

fn same_f32(g: f32, w: f32) -> bool {
    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
}

fn close(g: f64, w: f64, rel: f64) -> bool {
    (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rel * w.abs().max(1e-30)
}

#[test]
fn f32_math_gives_the_cpu_backends_bits_and_is_close_to_float64() {
    let dev = test_device();
    let xs: Vec<f32> = inputs().iter().map(|&v| v as f32).collect();
    let n = xs.len();
    let ys: Vec<f32> = (0..n).map(|i| 0.25 + (i % 9) as f32 * 0.5).collect();
    let zs: Vec<f32> = (0..n).map(|i| (i as f32 - 40.0) * 0.01).collect();
    let t = |v: &Vec<f32>| Tensor::<f32>::from_vec(&dev, &[n], v.clone()).unwrap();
    let out = Tensor::<f32>::full(&dev, &[11 * n], -7.0).unwrap();
    let flags = Tensor::<i32>::full(&dev, &[2 * n], -7).unwrap();
    math_f32::launch((n.div_ceil(64),), &t(&xs), &t(&ys), &t(&zs), &out, &flags, n as i32, 64).unwrap();
    let (got, flags) = (out.to_vec(), flags.to_vec());
    let exact: [(&str, fn(f32, f32, f32) -> f32); 10] = [
        ("expm1", |x, _, _| libm::expm1f(x)),
        ("log10", |x, _, _| libm::log10f(x)),
        ("log1p", |x, _, _| libm::log1pf(x)),
        ("tanh", |x, _, _| Float::tanh(x)),
        ("erf", |x, _, _| Float::erf(x)),
        ("pow", |x, y, _| libm::powf(x, y)),
        ("fma", |x, y, z| x.mul_add(y, z)),
        ("clamp", |x, _, _| x.max(-0.5).min(0.75)),
        ("sqrt_rn", |x, _, _| x.sqrt()),
        ("div_rn", |x, y, _| x / y),
    ];
    let slots = [0, 1, 2, 3, 4, 6, 7, 8, 9, 10];
    for ((name, f), slot) in exact.iter().zip(slots) {
        for i in 0..n {
            let (g, w) = (got[slot * n + i], f(xs[i], ys[i], zs[i]));
            assert!(same_f32(g, w), "{name}({}, {}, {}) = {g:e}, want {w:e} (same bits as the CPU backend)", xs[i], ys[i], zs[i]);
        }
    }
    // Against float64 references: within a few f32 ulp.
    let refs: [(&str, usize, fn(f64, f64) -> f64); 7] = [
        ("expm1", 0, |x, _| x.exp_m1()),
        ("log1p", 2, |x, _| x.ln_1p()),
        ("tanh", 3, |x, _| x.tanh()),
        ("erf", 4, |x, _| libm::erf(x)),
        ("sigmoid", 5, |x, _| 1.0 / (1.0 + (-x).exp())),
        ("pow", 6, |x, y| x.powf(y)),
        ("log10", 1, |x, _| x.log10()),
    ];
    for (name, slot, f) in refs {
        for i in 0..n {
            let (g, w) = (got[slot * n + i] as f64, f(xs[i] as f64, ys[i] as f64));
            assert!(close(g, w, 1e-6), "{name}({}) = {g:e}, want {w:e}", xs[i]);
        }
    }
    for i in 0..n {
        assert_eq!(flags[i], xs[i].is_nan() as i32, "isnan({})", xs[i]);
        assert_eq!(flags[n + i], xs[i].is_infinite() as i32, "isinf({})", xs[i]);
    }
    // erf against its series near 0 and its limits.
    let erf_at = |x: f32| got[4 * n + xs.iter().position(|&v| v == x).unwrap()];
    assert_eq!((erf_at(20.0), erf_at(-20.0), erf_at(0.0)), (1.0, -1.0, 0.0));
    assert!((erf_at(1.0) as f64 - 0.8427007929497149).abs() < 1e-7);
}

#[test]
fn f64_math_is_computed_in_f64() {
    let dev = test_device();
    let xs = inputs();
    let n = xs.len();
    let ys: Vec<f64> = (0..n).map(|i| 0.25 + (i % 9) as f64 * 0.5).collect();
    let zs: Vec<f64> = (0..n).map(|i| (i as f64 - 40.0) * 0.01).collect();
    let t = |v: &Vec<f64>| Tensor::<f64>::from_vec(&dev, &[n], v.clone()).unwrap();
    let out = Tensor::<f64>::full(&dev, &[11 * n], -7.0).unwrap();
    let flags = Tensor::<i32>::full(&dev, &[2 * n], -7).unwrap();
    math_f64_more::launch((n.div_ceil(64),), &t(&xs), &t(&ys), &t(&zs), &out, &flags, n as i32, 64).unwrap();
    let (got, flags) = (out.to_vec(), flags.to_vec());
    let fns: [(&str, fn(f64, f64, f64) -> f64); 11] = [
        ("expm1", |x, _, _| libm::expm1(x)),
        ("log10", |x, _, _| libm::log10(x)),
        ("log1p", |x, _, _| libm::log1p(x)),
        ("tanh", |x, _, _| libm::tanh(x)),
        ("erf", |x, _, _| libm::erf(x)),
        ("sigmoid", |x, _, _| 1.0 / (1.0 + (-x).exp())),
        ("pow", |x, y, _| libm::pow(x, y)),
        ("fma", |x, y, z| x.mul_add(y, z)),
        ("clamp", |x, _, _| x.max(-0.5).min(0.75)),
        ("sqrt_rn", |x, _, _| x.sqrt()),
        ("div_rn", |x, y, _| x / y),
    ];
    for (slot, (name, f)) in fns.iter().enumerate() {
        for i in 0..n {
            let (g, w) = (got[slot * n + i], f(xs[i], ys[i], zs[i]));
            // sigmoid uses each backend's f64 exp (within 1 ulp); the rest are the same code.
            let tol = if *name == "sigmoid" { 1e-15 } else { 0.0 };
            assert!(close(g, w, tol), "{name}({}, {}, {}) = {g:e}, want {w:e}", xs[i], ys[i], zs[i]);
        }
    }
    for i in 0..n {
        assert_eq!((flags[i], flags[n + i]), (xs[i].is_nan() as i32, xs[i].is_infinite() as i32), "isnan/isinf({})", xs[i]);
    }
}

#[test]
fn f16_math_is_computed_in_f32_and_rounded_once() {
    let dev = test_device();
    let xs: Vec<f16> = inputs().iter().map(|&v| f16::from_f64(v)).collect();
    let n = xs.len();
    let out = Tensor::<f16>::full(&dev, &[5 * n], f16::from_f32(-7.0)).unwrap();
    math_f16::launch((n.div_ceil(64),), &Tensor::from_vec(&dev, &[n], xs.clone()).unwrap(), &out, n as i32, 64).unwrap();
    let got = out.to_vec();
    let r = f16::from_f32;
    for (i, x) in xs.iter().map(|x| x.to_f32()).enumerate() {
        let want = [
            r(Float::tanh(x)),
            r(Float::erf(x)),
            r(1.0 / (1.0 + (-x).exp())),
            r(libm::powf(x.abs(), 2.5)),
            r(x.mul_add(x, 1.0)),
        ];
        for (f, w) in want.iter().enumerate() {
            let g = got[f * n + i];
            // sigmoid: the f32 exp may differ in its last bits, which rounding to f16 hides
            // except at a tie; allow one f16 ulp there.
            let ok = g == *w || (g.is_nan() && w.is_nan()) || (f == 2 && (g.to_f32() - w.to_f32()).abs() <= 2f32.powi(-11));
            assert!(ok, "function {f} of {x}: got {g}, want {w}");
        }
    }
}

#[test]
fn integer_abs_and_umulhi() {
    let dev = test_device();
    let a: Vec<i32> = vec![0, 1, -1, 7, -7, i32::MAX, i32::MIN, 123_456_789, -987_654_321, 65_536];
    let b: Vec<i32> = vec![5, -1, -1, 3, 65_536, 2, i32::MIN, -3, 77, 65_536];
    let c: Vec<i64> = a.iter().map(|&v| v as i64 * 40_000_003).chain([i64::MIN]).take(10).collect();
    let d: Vec<i64> = b.iter().map(|&v| v as i64 * -1_234_567_891).collect();
    let e: Vec<u32> = a.iter().map(|&v| v as u32).collect();
    let f: Vec<u32> = b.iter().map(|&v| v as u32).collect();
    let n = a.len();
    let out32 = Tensor::<i32>::full(&dev, &[2 * n], -7).unwrap();
    let out64 = Tensor::<i64>::full(&dev, &[2 * n], -7).unwrap();
    let outu = Tensor::<u32>::full(&dev, &[n], 7).unwrap();
    let ti = |v: &Vec<i32>| Tensor::from_vec(&dev, &[n], v.clone()).unwrap();
    let tl = |v: &Vec<i64>| Tensor::from_vec(&dev, &[n], v.clone()).unwrap();
    let tu = |v: &Vec<u32>| Tensor::from_vec(&dev, &[n], v.clone()).unwrap();
    int_math::launch((1,), &ti(&a), &ti(&b), &tl(&c), &tl(&d), &tu(&e), &tu(&f), &out32, &out64, &outu, n as i32, 32).unwrap();
    let (o32, o64, ou) = (out32.to_vec(), out64.to_vec(), outu.to_vec());
    for i in 0..n {
        assert_eq!(o32[i], a[i].wrapping_abs(), "abs({})", a[i]);
        assert_eq!(o32[n + i], ((a[i] as u32 as u64 * b[i] as u32 as u64) >> 32) as i32, "umulhi({}, {})", a[i], b[i]);
        assert_eq!(o64[i], c[i].wrapping_abs(), "abs({})", c[i]);
        assert_eq!(o64[n + i], ((c[i] as u64 as u128 * d[i] as u64 as u128) >> 64) as i64, "umulhi({}, {})", c[i], d[i]);
        assert_eq!(ou[i], ((e[i] as u64 * f[i] as u64) >> 32) as u32, "umulhi({}, {})", e[i], f[i]);
    }
}

#[test]
fn infinity_constants_take_the_blocks_dtype() {
    use tests::math::masked_extrema_f16;
    let dev = test_device();
    let xs: Vec<f16> = (0..64).map(|i| f16::from_f32(if i < 10 { i as f32 - 20.0 } else { 1000.0 })).collect();
    let out = Tensor::<f16>::full(&dev, &[2], f16::from_f32(7.0)).unwrap();
    masked_extrema_f16::launch((1,), &Tensor::from_vec(&dev, &[64], xs).unwrap(), &out, 10, 64).unwrap();
    assert_eq!(out.to_vec(), vec![f16::from_f32(-11.0), f16::from_f32(-20.0)]);
}

/// Halves, values just below and above them, large integers (2^23, 2^52 and past), signed zeros
/// and the special values.
fn rounding_inputs() -> Vec<f64> {
    let mut xs = Vec::new();
    for k in -6..=6 {
        let h = k as f64 + 0.5;
        xs.extend([h, h - 1e-6, h + 1e-6, k as f64]);
    }
    xs.extend([0.49999997, -0.49999997, 8388607.5, 8388609.0, -8388609.0, 4503599627370495.5, 1e300, -1e300]);
    xs.extend([0.0, -0.0, -0.3, 1e-40, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
    xs
}

#[test]
fn rint_trunc_round_are_exact_on_both_backends() {
    let dev = test_device();
    let xd = rounding_inputs();
    let n = xd.len();
    let xs: Vec<f32> = xd.iter().map(|&v| v as f32).collect();
    let xh: Vec<f16> = xd.iter().map(|&v| f16::from_f64(v)).collect();
    let out = Tensor::<f32>::full(&dev, &[3 * n], -7.0).unwrap();
    let outd = Tensor::<f64>::full(&dev, &[3 * n], -7.0).unwrap();
    let outh = Tensor::<f16>::full(&dev, &[3 * n], f16::from_f32(-7.0)).unwrap();
    let t32 = Tensor::from_vec(&dev, &[n], xs.clone()).unwrap();
    let t64 = Tensor::from_vec(&dev, &[n], xd.clone()).unwrap();
    let t16 = Tensor::from_vec(&dev, &[n], xh.clone()).unwrap();
    roundings::launch((n.div_ceil(64),), &t32, &t64, &t16, &out, &outd, &outh, n as i32, 64).unwrap();
    let (got, gotd, goth) = (out.to_vec(), outd.to_vec(), outh.to_vec());
    let same64 = |g: f64, w: f64| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
    for i in 0..n {
        let (x, d, h) = (xs[i], xd[i], xh[i].to_f32());
        let want32 = [x.round_ties_even(), x.trunc(), x.round()];
        let want64 = [d.round_ties_even(), d.trunc(), d.round()];
        let want16 = [h.round_ties_even(), h.trunc(), h.round()].map(f16::from_f32);
        for (f, name) in ["rint", "trunc", "round"].iter().enumerate() {
            assert!(same_f32(got[f * n + i], want32[f]), "{name}({x:e}) = {:e}, want {:e} (f32)", got[f * n + i], want32[f]);
            assert!(same64(gotd[f * n + i], want64[f]), "{name}({d:e}) = {:e}, want {:e} (f64)", gotd[f * n + i], want64[f]);
            let g = goth[f * n + i];
            assert!(g.to_bits() == want16[f].to_bits() || (g.is_nan() && h.is_nan()), "{name}({h:e}) = {g}, want {} (f16)", want16[f]);
        }
    }
    // The rules themselves, on values where they differ.
    let at = |v: f64| xd.iter().position(|&x| x == v).unwrap();
    let (i25, im25) = (at(2.5), at(-2.5));
    assert_eq!([got[i25], got[n + i25], got[2 * n + i25]], [2.0, 2.0, 3.0]);
    assert_eq!([got[im25], got[n + im25], got[2 * n + im25]], [-2.0, -2.0, -3.0]);
    let neg = at(-0.3);
    assert!([got[neg], got[n + neg], got[2 * n + neg]].iter().all(|z| *z == 0.0 && z.is_sign_negative()), "-0.3 rounds to -0.0");
}

/// A small deterministic generator (xorshift64*) for the division tests.
struct Bits(u64);

impl Bits {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A float with a random sign and 24-bit significand and an exponent in `lo..=hi`.
    fn float(&mut self, lo: i32, hi: i32) -> f32 {
        let r = self.next();
        let e = lo + (r % (hi - lo + 1) as u64) as i32;
        let bits = ((r >> 32) as u32 & 0x807f_ffff) | (((e + 127) as u32) << 23);
        f32::from_bits(bits)
    }
}

/// Dividends and divisors around every edge of the GPU's fast division (|a| in [2^-90, 2^90],
/// |b| in [2^-30, 2^30]): each edge and its neighbours, significands of all ones and of one,
/// and the special values.
fn division_edges() -> Vec<f32> {
    let mut v = Vec::new();
    for e in [-150i32, -149, -127, -126, -125, -91, -90, -89, -31, -30, -29, -1, 0, 1, 29, 30, 31, 89, 90, 91, 127] {
        let p = 2f64.powi(e) as f32;
        for x in [p, f32::from_bits(p.to_bits().wrapping_add(1)), f32::from_bits(p.to_bits().wrapping_sub(1)), p * 1.5] {
            v.extend([x, -x]);
        }
    }
    v.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN_POSITIVE, 1.0 - f32::EPSILON / 2.0, 3.0, 0.1]);
    v
}

#[test]
fn f32_division_is_correctly_rounded() {
    let dev = test_device();
    let mut g = Bits(0x9e37_79b9_7f4a_7c15);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    // Inside the fast range and across its edges.
    for _ in 0..(1 << 18) {
        xs.push(g.float(-100, 100));
        ys.push(g.float(-40, 40));
    }
    // Any bits: subnormals, infinities, NaNs, extreme ratios.
    for _ in 0..(1 << 14) {
        let r = g.next();
        xs.push(f32::from_bits(r as u32));
        ys.push(f32::from_bits((r >> 32) as u32));
    }
    // Quotients next to a representable value: a = b * q rounded, for q with a full significand.
    for _ in 0..(1 << 16) {
        let (b, q) = (g.float(-20, 20), g.float(-20, 20));
        xs.push(b * q);
        ys.push(b);
    }
    let edges = division_edges();
    for &a in &edges {
        for &b in &edges {
            xs.push(a);
            ys.push(b);
        }
    }
    let n = xs.len();
    let out = Tensor::<f32>::full(&dev, &[n], -7.0).unwrap();
    let t = |v: &Vec<f32>| Tensor::<f32>::from_vec(&dev, &[n], v.clone()).unwrap();
    divide_f32::launch((n.div_ceil(256),), &t(&xs), &t(&ys), &out, n as i32, 256).unwrap();
    let got = out.to_vec();
    for i in 0..n {
        let want = xs[i] / ys[i];
        assert!(same_f32(got[i], want), "{:e} / {:e} = {:e} ({:#x}), want {want:e} ({:#x})", xs[i], ys[i], got[i], got[i].to_bits(), want.to_bits());
    }
}

#[test]
fn f32_division_by_one_value_is_correctly_rounded() {
    let dev = test_device();
    let mut g = Bits(0x2545_f491_4f6c_dd1d);
    let mut xs: Vec<f32> = (0..(1 << 14)).map(|_| g.float(-100, 100)).collect();
    xs.extend(division_edges());
    let n = xs.len();
    let x = Tensor::<f32>::from_vec(&dev, &[n], xs.clone()).unwrap();
    for s in division_edges().into_iter().chain([7.0, -12345.678, 1e-3]) {
        let out = Tensor::<f32>::full(&dev, &[2 * n], -7.0).unwrap();
        divide_by_scalar::launch((n.div_ceil(256),), &x, s, &out, n as i32, 256).unwrap();
        let got = out.to_vec();
        for i in 0..n {
            let (a, b) = (xs[i] / s, s / xs[i]);
            assert!(same_f32(got[i], a), "{:e} / {s:e} = {:e}, want {a:e}", xs[i], got[i]);
            assert!(same_f32(got[n + i], b), "{s:e} / {:e} = {:e}, want {b:e}", xs[i], got[n + i]);
        }
    }
}

/// Every divisor significand in [1, 2) against dividends in [1, 2): the fast division's results
/// depend only on the significands inside its range, so this covers each divisor there. About
/// 2 * 10^8 divisions: run it on the GPU (`--ignored`).
#[test]
#[ignore]
fn f32_division_every_divisor_significand() {
    let dev = test_device();
    let n = 1usize << 23;
    let ys: Vec<f32> = (0..n as u32).map(|m| f32::from_bits(0x3f80_0000 | m)).collect();
    let y = Tensor::<f32>::from_vec(&dev, &[n], ys.clone()).unwrap();
    let out = Tensor::<f32>::full(&dev, &[n], -7.0).unwrap();
    let mut g = Bits(0x1234_5678_9abc_def1);
    let mut dividends: Vec<f32> = vec![1.0, 1.0 + f32::EPSILON, 2.0 - f32::EPSILON, 1.5];
    dividends.extend((0..20).map(|_| g.float(0, 0).abs()));
    for a in dividends {
        let x = Tensor::<f32>::full(&dev, &[n], a).unwrap();
        divide_f32::launch((n.div_ceil(256),), &x, &y, &out, n as i32, 256).unwrap();
        let got = out.to_vec();
        for i in 0..n {
            let want = a / ys[i];
            assert!(same_f32(got[i], want), "{a:e} / {:e} = {:e}, want {want:e}", ys[i], got[i]);
        }
    }
}

/// `a * b + c` and `c - a * b`, `a * b - c` round once (one `fma`) unless the kernel says
/// `fp_fusion = false`, on both backends: inputs where the two differ (`(1 + 2^-12)^2 - (1 +
/// 2^-11)` is 2^-24 exactly, and 0 with the product rounded first), and random ones.
#[test]
fn products_followed_by_a_sum_are_contracted_unless_the_kernel_says_not() {
    let dev = test_device();
    let e = 1.0 + 2f32.powi(-12);
    let mut g = Bits(0x9e37_79b9_7f4a_7c15);
    let (mut xs, mut ys, mut zs) = (vec![e, -e, e], vec![e, e, 3.0], vec![1.0 + 2f32.powi(-11), 1.0 + 2f32.powi(-11), 0.1]);
    for _ in 0..200 {
        xs.push(g.float(-20, 20));
        ys.push(g.float(-20, 20));
        zs.push(g.float(-20, 20));
    }
    let n = xs.len();
    let t = |v: &Vec<f32>| Tensor::<f32>::from_vec(&dev, &[n], v.clone()).unwrap();
    let (fused, rounded) = (Tensor::<f32>::full(&dev, &[3 * n], -7.0).unwrap(), Tensor::<f32>::full(&dev, &[3 * n], -7.0).unwrap());
    mul_add_contracted::launch((n.div_ceil(64),), &t(&xs), &t(&ys), &t(&zs), &fused, n as i32, 64).unwrap();
    mul_add_rounded::launch((n.div_ceil(64),), &t(&xs), &t(&ys), &t(&zs), &rounded, n as i32, 64).unwrap();
    let (fused, rounded) = (fused.to_vec(), rounded.to_vec());
    for i in 0..n {
        let (a, b, c) = (xs[i], ys[i], zs[i]);
        let want_fused = [a.mul_add(b, c), (-a).mul_add(b, c), a.mul_add(b, -c)];
        let want_rounded = [a * b + c, c - a * b, a * b - c];
        for f in 0..3 {
            let (gf, gr) = (fused[f * n + i], rounded[f * n + i]);
            assert!(same_f32(gf, want_fused[f]), "form {f} of {a:e}, {b:e}, {c:e}: fused {gf:e}, want {:e}", want_fused[f]);
            assert!(same_f32(gr, want_rounded[f]), "form {f} of {a:e}, {b:e}, {c:e}: rounded {gr:e}, want {:e}", want_rounded[f]);
        }
    }
    // The inputs chosen to tell them apart do: a * b - c and c - a * b at 0, a * b + c at 1.
    let tiny = 2f32.powi(-24);
    assert_eq!([fused[2 * n], fused[n], fused[1]], [tiny, -tiny, -tiny]);
    assert_eq!([rounded[2 * n], rounded[n], rounded[1]], [0.0; 3]);
}
