//! Host tests of the random functions: Random123's known-answer vectors, numbers that Triton
//! 3.6 produced, and statistical sanity checks.

extern crate std;

use super::*;
use std::vec::Vec;

// Random123 `tests/kat_vectors`: counter (4 words), key (2 words), expected output (4 words).
#[test]
fn philox4x32_known_answers() {
    #[rustfmt::skip]
    let cases: [(u32, [u32; 4], [u32; 2], [u32; 4]); 6] = [
        (7, [0; 4], [0; 2], [0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48]),
        (7, [u32::MAX; 4], [u32::MAX; 2], [0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662]),
        (7, [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
            [0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a]),
        (10, [0; 4], [0; 2], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
        (10, [u32::MAX; 4], [u32::MAX; 2], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
        (10, [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]),
    ];
    for (rounds, c, k, want) in cases {
        assert_eq!(philox4x32_rounds(c, k, rounds), want, "rounds {rounds} counter {c:x?} key {k:x?}");
        // The seed's low word is k0, its high word k1.
        let seed = (k[1] as u64) << 32 | k[0] as u64;
        assert_eq!(philox(seed, c[0], c[1], c[2], c[3], rounds), want);
    }
}

#[test]
fn philox4x64_known_answers() {
    #[rustfmt::skip]
    let cases: [(u32, [u64; 4], [u64; 2], [u64; 4]); 6] = [
        (7, [0; 4], [0; 2],
            [0x5dc8ee6268ec62cd, 0x139bc570b6c125a0, 0x84d6deb4fb65f49e, 0xaff7583376d378c2]),
        (7, [u64::MAX; 4], [u64::MAX; 2],
            [0x071dd84367903154, 0x48e2bbdc722b37d1, 0x6afa9890bb89f76c, 0x9194c8d8ada56ac7]),
        (7, [0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0, 0x082efa98ec4e6c89],
            [0x452821e638d01377, 0xbe5466cf34e90c6c],
            [0x513a366704edf755, 0xf05d9924c07044d3, 0xbef2cb9cbea74c6c, 0x8db948de4caa1f8a]),
        (10, [0; 4], [0; 2],
            [0x16554d9eca36314c, 0xdb20fe9d672d0fdc, 0xd7e772cee186176b, 0x7e68b68aec7ba23b]),
        (10, [u64::MAX; 4], [u64::MAX; 2],
            [0x87b092c3013fe90b, 0x438c3c67be8d0224, 0x9cc7d7c69cd777b6, 0xa09caebf594f0ba0]),
        (10, [0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0, 0x082efa98ec4e6c89],
            [0x452821e638d01377, 0xbe5466cf34e90c6c],
            [0xa528f45403e61d95, 0x38c72dbd566e9788, 0xa5a1610e72fd18b5, 0x57bd43b5e52b7fe6]),
    ];
    for (rounds, c, k, want) in cases {
        assert_eq!(philox4x64_rounds(c, k, rounds), want, "rounds {rounds} counter {c:x?} key {k:x?}");
    }
    // tl.philox on 64-bit words keys with (seed, 0).
    assert_eq!(philox4x64(0, 0, 0, 0, 0, 10), philox4x64_rounds([0; 4], [0; 2], 10));
}

#[test]
fn float_constants_are_the_f32_roundings() {
    assert_eq!(SCALE_32.to_bits(), 0x2fff_ffff); // 2^-31 (1 - 2^-24)
    assert_eq!(SCALE_64.to_bits(), 0x1fff_fffe); // 2^-63 (1 - 2^-23)
    assert_eq!(MIN_U1.to_bits(), 0x33d6_bf95);
    assert_eq!(TWO_PI, core::f32::consts::TAU);
}

#[test]
fn umulhi_halves() {
    assert_eq!(umulhi(u32::MAX, u32::MAX), 0xffff_fffe);
    assert_eq!(umulhi(PHILOX_ROUND_A, 2), 1);
    assert_eq!(umulhi64(u64::MAX, u64::MAX), 0xffff_ffff_ffff_fffe);
    assert_eq!(umulhi64(1 << 63, 4), 2);
}

#[test]
fn offset_layout() {
    for seed in [0u64, 42, (1 << 40) + 3, (-7i32) as u64] {
        // 32-bit offsets: (offset, 0, 0, 0), whatever the sign.
        assert_eq!(randint4x(seed, 5i32), philox(seed, 5, 0, 0, 0, 10));
        assert_eq!(randint4x(seed, 5u32), philox(seed, 5, 0, 0, 0, 10));
        assert_eq!(randint4x(seed, -1i32), philox(seed, u32::MAX, 0, 0, 0, 10));
        // 64-bit offsets: (low, high, 0, 0); below 2^32 the same numbers as 32-bit ones.
        assert_eq!(randint4x(seed, 5i64), randint4x(seed, 5i32));
        assert_eq!(randint4x(seed, 5u64), randint4x(seed, 5i32));
        assert_eq!(randint4x(seed, -1i64), philox(seed, u32::MAX, u32::MAX, 0, 0, 10));
        assert_eq!(randint4x(seed, (1i64 << 33) + 9), philox(seed, 9, 2, 0, 0, 10));
        assert_ne!(randint4x(seed, -1i64), randint4x(seed, -1i32));
        // The single-value functions are the first word(s).
        let w = randint4x(seed, 77i32);
        assert_eq!(randint(seed, 77i32), w[0]);
        assert_eq!(rand(seed, 77i32), uint_to_uniform_float(w[0]));
        assert_eq!(rand4x(seed, 77i32)[3], uint_to_uniform_float(w[3]));
        assert_eq!(randn(seed, 77i32).to_bits(), randn4x(seed, 77i32)[0].to_bits());
        let (n1, n2) = pair_uniform_to_normal(uint_to_uniform_float(w[0]), uint_to_uniform_float(w[1]));
        assert_eq!(randn4x(seed, 77i32)[..2], [n1, n2]);
    }
}

#[test]
fn uniform_float_edges() {
    assert_eq!(uint_to_uniform_float(0), 0.0);
    assert_eq!(uint_to_uniform_float(u32::MAX), 0.0); // -1 -> !(-1) = 0
    let top = uint_to_uniform_float(0x7fff_ffff);
    assert_eq!(top, 1.0 - f32::EPSILON / 2.0); // 2^31 * 2^-31 (1 - 2^-24)
    assert_eq!(uint_to_uniform_float(0x8000_0000), top);
    assert_eq!(uint_to_uniform_float(1), SCALE_32);
    assert_eq!(uint64_to_uniform_float(0), 0.0);
    assert_eq!(uint64_to_uniform_float(u64::MAX), 0.0);
    assert_eq!(uint64_to_uniform_float(i64::MAX as u64), 1.0 - f32::EPSILON);
    // u1 = 0 is floored at 1e-7, so the normal stays finite (|r| = sqrt(-2 ln 1e-7) ~ 5.68).
    let (a, b) = pair_uniform_to_normal(0.0, 0.0);
    assert!((a - 5.6776).abs() < 1e-3 && b == 0.0, "{a} {b}");
}

#[test]
fn statistics() {
    const N: i32 = 100_000;
    for seed in [0u64, 42, (1 << 31) + 5] {
        let (mut s1, mut s2, mut n1, mut n2) = (0f64, 0f64, 0f64, 0f64);
        let mut words: Vec<[u32; 4]> = Vec::with_capacity(N as usize);
        let mut firsts: Vec<u32> = Vec::with_capacity(N as usize);
        for off in 0..N {
            let u = rand(seed, off);
            assert!((0.0..1.0).contains(&u), "rand({seed}, {off}) = {u}");
            for u in rand4x(seed, off) {
                assert!((0.0..1.0).contains(&u));
            }
            s1 += u as f64;
            s2 += (u as f64) * (u as f64);
            let z = randn(seed, off);
            assert!(z.is_finite() && z.abs() < 5.7);
            n1 += z as f64;
            n2 += (z as f64) * (z as f64);
            words.push(randint4x(seed, off));
            firsts.push(randint(seed, off));
        }
        let n = N as f64;
        let (mean, var) = (s1 / n, s2 / n - (s1 / n) * (s1 / n));
        let ok = (mean - 0.5).abs() < 0.005 && (var - 1.0 / 12.0).abs() < 0.002;
        assert!(ok, "uniform mean {mean} var {var}");
        let (mean, var) = (n1 / n, n2 / n - (n1 / n) * (n1 / n));
        assert!(mean.abs() < 0.015 && (var - 1.0).abs() < 0.02, "normal mean {mean} var {var}");
        // Philox is a bijection of the counter: distinct offsets, distinct 128-bit outputs.
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), N as usize);
        // 32-bit words collide only by chance (about 1.2 pairs expected in 100k).
        firsts.sort_unstable();
        firsts.dedup();
        assert!(N as usize - firsts.len() < 10);
    }
}

/// Normals may differ from Triton's by this much, relative (absolute below 1): Triton computes
/// them with the GPU's math library and approximate square root (3.2e-7 at most was seen).
const NORMAL_TOLERANCE: f32 = 1e-6;

/// Checks one line of `scripts/triton_rand_ref.py`'s output against our functions; returns how
/// many normals it held, how many of them matched bit for bit, and the largest difference.
fn check_reference_line(line: &str) -> (usize, usize, f32) {
    let f: Vec<&str> = line.split(',').collect();
    let (kind, seed, offset) = (f[0], f[1].parse::<u64>().unwrap(), f[2].parse::<i64>().unwrap());
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    if kind == "philox4x64" {
        let w = philox4x64(seed, offset as u64, 0, 0, 0, PHILOX_ROUNDS);
        let want: Vec<u64> = f[3..7].iter().map(|s| hex(s)).collect();
        assert_eq!(w[..], want[..], "philox4x64: {line}");
        let unif: Vec<u64> = w.iter().map(|&x| uint64_to_uniform_float(x).to_bits() as u64).collect();
        let want: Vec<u64> = f[7..11].iter().map(|s| hex(s)).collect();
        assert_eq!(unif, want, "uint64_to_uniform_float: {line}");
        return (0, 0, 0.0);
    }
    fn all<O: Offset>(seed: u64, o: O) -> ([u32; 5], [f32; 5], [f32; 5]) {
        let (w, u, n) = (randint4x(seed, o), rand4x(seed, o), randn4x(seed, o));
        (
            [randint(seed, o), w[0], w[1], w[2], w[3]],
            [rand(seed, o), u[0], u[1], u[2], u[3]],
            [randn(seed, o), n[0], n[1], n[2], n[3]],
        )
    }
    let (ints, unif, norm) = match kind {
        "int32" => all(seed, offset as i32),
        "int64" => all(seed, offset),
        other => panic!("unknown kind {other}: {line}"),
    };
    let want: Vec<u32> = f[3..18].iter().map(|s| hex(s) as u32).collect();
    assert_eq!(ints[..], want[0..5], "randint/randint4x: {line}");
    let unif: Vec<u32> = unif.iter().map(|u| u.to_bits()).collect();
    assert_eq!(unif[..], want[5..10], "rand/rand4x: {line}");
    let (mut exact, mut worst) = (0, 0f32);
    for j in 0..5 {
        let theirs = f32::from_bits(want[10 + j]);
        let err = (norm[j] - theirs).abs() / theirs.abs().max(1.0);
        exact += (norm[j].to_bits() == want[10 + j]) as usize;
        worst = worst.max(err);
        assert!(err <= NORMAL_TOLERANCE, "randn/randn4x word {j}: ours {} Triton {theirs}: {line}", norm[j]);
    }
    (5, exact, worst)
}

/// Numbers that Triton 3.6 gave on an H200 (from `scripts/triton_rand_ref.py`): a few seeds,
/// 32- and 64-bit offsets, negative ones, and `tl.philox` on 64-bit words.
#[test]
fn matches_triton_3_6_values() {
    const LINES: &str = "\
int32,0,0,6627e8d5,6627e8d5,e169c58d,bc57ac4c,9b00dbd8,3f4c4fd1,3f4c4fd1,3e74b1d3,3f0750a6,3f49fe47,3d3eacd1,3d3eacd1,3f2b84ce,3e8c63a4,bf8c36ef
int32,42,0,9ceaf053,9ceaf053,77f5493b,12bf50ad,5742b3d7,3f462a1e,3f462a1e,3f6fea91,3e15fa84,3f2e8567,3f291df5,3f291df5,be8cea80,bf50b898,bfe42824
int32,42,1,fcdb2127,fcdb2127,53ba6cfd,838f5a6e,744e06fb,3cc937b5,3cc937b5,3f2774d9,3f78e14a,3f689c0d,bfc577a3,bfc577a3,c00f94c2,3e4c3966,be041505
int32,42,2,d36c0225,d36c0225,a8875dcb,9a4d6d99,c609a559,3eb24ff6,3eb24ff6,3f2ef143,3f4b6524,3ee7d96a,bf17289f,bf17289f,bfa9db21,bf26114d,3e4ad8c2
int32,42,3,bac70475,bac70475,abaf0dab,961e5543,610e67f7,3f0a71f6,3f0a71f6,3f28a1e4,3f53c354,3f421ccf,bf1a0420,bf1a0420,bf6e6e60,3d02c214,bf1d79fb
int32,2147483653,-1,c28fa62a,c28fa62a,083ef891,2698d090,05e7a6ba,3ef5c166,3ef5c166,3d83ef88,3e9a6341,3d3cf4d6,3f8e8d7d,3f8e8d7d,3ef44bd6,3fbdef32,3ee29887
int64,1099511627779,-1,ba48a96a,ba48a96a,7aaa2555,b81b6b3c,df16e821,3f0b6eac,3f0b6eac,3f75544a,3f0fc929,3e83a45e,3f884a59,3f884a59,be92224e,bd449241,3f895930
int64,1099511627779,4294967297,c6e90611,c6e90611,d6b6fc5b,2f48c973,ad78d9be,3ee45be7,3ee45be7,3ea5240e,3ebd2325,3f250e4c,bf0f3144,bf0f3144,3f920d32,bf5de26b,bf8e8fd6
int64,1099511627779,8589934593,03e9ba86,03e9ba86,c1fb3a7c,e9cad1fd,7cadc5dc,3cfa6ea1,3cfa6ea1,3ef81315,3e31a96f,3f795b8b,c0283b68,c0283b68,3e834feb,3fec65e9,be9b8a19
philox4x64,42,0,a7687e2d34c89dc6,4c5818ab9649d53f,ea0add4230dddab5,e2a142eecee5bb40,3f312f03,3f18b030,3e2fa915,3e6af5e7
philox4x64,42,8589934592,121e98e3f41583d3,bf5de56c0feeaae6,d3eeb151847d721d,b7dd48c70ddba49c,3e10f4c6,3f014434,3eb0453a,3f10456d";
    for line in LINES.lines() {
        check_reference_line(line);
    }
}

/// Compares a whole file of `scripts/triton_rand_ref.py` (path in `KERNEL_TRITON_RAND_REF`)
/// with our functions: integers and uniforms bit for bit, normals within [`NORMAL_TOLERANCE`].
///
/// `KERNEL_TRITON_RAND_REF=ref.csv cargo test -p kernel-std --lib -- --ignored triton`
#[test]
#[ignore = "needs KERNEL_TRITON_RAND_REF, a file written by scripts/triton_rand_ref.py on a GPU"]
fn matches_triton_reference_file() {
    let Ok(path) = std::env::var("KERNEL_TRITON_RAND_REF") else {
        std::println!("KERNEL_TRITON_RAND_REF is not set: skipped");
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (mut rows, mut normals, mut exact, mut worst) = (0usize, 0usize, 0usize, 0f32);
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (n, e, w) = check_reference_line(line);
        rows += 1;
        normals += n;
        exact += e;
        worst = worst.max(w);
    }
    assert!(rows > 0, "{path}: no rows");
    std::println!(
        "{path}: {rows} rows match; normals: {exact} of {normals} bit for bit, largest difference {worst:e}"
    );
}
