//! Philox random numbers in kernels, on both backends: the same numbers as
//! `kernel_std::random` (which matches Triton 3.6) and as Triton itself for a few known values.

use kernel_runtime::Tensor;
use kernel_std::random;
use tests::random::random_numbers;
use tests::test_device;

struct Outputs {
    ints: Vec<u32>,
    unif: Vec<f32>,
    norm: Vec<f32>,
    ints4: Vec<u32>,
    unif4: Vec<f32>,
    norm4: Vec<f32>,
    wide: Vec<u32>,
    seven: Vec<f32>,
}

fn run(seed: i64, n: usize) -> Outputs {
    let dev = test_device();
    let u = |len| Tensor::<u32>::full(&dev, &[len], 7).unwrap();
    let f = |len| Tensor::<f32>::full(&dev, &[len], f32::NAN).unwrap();
    let (ints, unif, norm, ints4, unif4, norm4, wide, seven) = (u(n), f(n), f(n), u(4 * n), f(4 * n), f(4 * n), u(n), f(n));
    random_numbers::launch((n.div_ceil(64),), seed, &ints, &unif, &norm, &ints4, &unif4, &norm4, &wide, &seven, n as i32, 64).unwrap();
    Outputs {
        ints: ints.to_vec(),
        unif: unif.to_vec(),
        norm: norm.to_vec(),
        ints4: ints4.to_vec(),
        unif4: unif4.to_vec(),
        norm4: norm4.to_vec(),
        wide: wide.to_vec(),
        seven: seven.to_vec(),
    }
}

#[test]
fn kernels_give_the_numbers_of_kernel_std_random() {
    for seed in [0i64, 42, -5, 1 << 40] {
        let n = 300;
        let o = run(seed, n);
        let s = seed as u64;
        for i in 0..n {
            let off = i as i32;
            assert_eq!(o.ints[i], random::randint(s, off), "randint seed {seed} offset {i}");
            assert_eq!(o.unif[i].to_bits(), random::rand(s, off).to_bits(), "rand seed {seed} offset {i}");
            assert_eq!(o.norm[i].to_bits(), random::randn(s, off).to_bits(), "randn seed {seed} offset {i}");
            assert_eq!(o.ints4[4 * i..4 * i + 4], random::randint4x(s, off), "randint4x seed {seed} offset {i}");
            assert_eq!(o.unif4[4 * i..4 * i + 4].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), random::rand4x(s, off).map(f32::to_bits));
            let n4 = random::randn4x(s, off);
            assert_eq!(o.norm4[4 * i..4 * i + 3].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), n4[..3].iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            assert!(o.norm4[4 * i + 3].is_nan(), "the fourth normal is not stored");
            assert_eq!(o.wide[i], random::randint(s, i as i64 + (1 << 32) + 1), "randint of an i64 offset");
            assert_eq!(o.seven[i].to_bits(), random::rand_rounds(s, off, 7).to_bits());
        }
    }
}

/// Values Triton 3.6's `tl.randint`, `tl.rand` and `tl.randn` gave for seed 42 and offsets 0..4
/// (`scripts/triton_rand_ref.py` on an H100-class GPU).
#[test]
fn kernels_match_triton() {
    let o = run(42, 4);
    assert_eq!(o.ints, vec![0x9ceaf053, 0xfcdb2127, 0xd36c0225, 0xbac70475]);
    assert_eq!(o.unif.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), vec![0x3f462a1e, 0x3cc937b5, 0x3eb24ff6, 0x3f0a71f6]);
    assert_eq!(o.ints4[1], 0x77f5493b);
    for (got, want) in o.norm.iter().zip([0x3f291df5u32, 0xbfc577a3, 0xbf17289f, 0xbf1a0420]) {
        let want = f32::from_bits(want);
        assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "randn {got} vs Triton's {want}");
    }
}

/// Tutorial 04's seeded dropout: the kept elements are exactly those where
/// `rand(seed, i) > p`, scaled by `1 / (1 - p)`; the same seed gives the same result.
#[test]
fn seeded_dropout_keeps_what_rand_says() {
    use examples::dropout::seeded_dropout;
    let dev = test_device();
    let n = 100_000usize;
    let xs: Vec<f32> = (0..n).map(|i| 1.0 + (i % 97) as f32 * 0.25).collect();
    let x = Tensor::from_vec(&dev, &[n], xs.clone()).unwrap();
    let (p, seed) = (0.3f32, 123i32);
    let a = seeded_dropout(&x, p, seed).unwrap().to_vec();
    let b = seeded_dropout(&x, p, seed).unwrap().to_vec();
    assert_eq!(a, b, "the same seed drops the same elements");
    let mut kept = 0usize;
    for i in 0..n {
        let keep = random::rand(seed as u64, i as i32) > p;
        let want = if keep { xs[i] / (1.0 - p) } else { 0.0 };
        assert_eq!(a[i], want, "element {i}");
        kept += keep as usize;
    }
    let frac = kept as f64 / n as f64;
    assert!((frac - 0.7).abs() < 0.01, "kept {frac}");
    let other = seeded_dropout(&x, p, seed + 1).unwrap().to_vec();
    assert_ne!(a, other, "another seed drops other elements");
    assert!(seeded_dropout(&x, 1.0, seed).is_err());
}
