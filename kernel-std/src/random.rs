//! Counter-based random numbers: the Philox generator of Triton's `tl.randint`,
//! `tl.randint4x`, `tl.rand`, `tl.rand4x`, `tl.randn`, `tl.randn4x` and `tl.philox`, number for
//! number (Triton 3.6).
//!
//! Every function here is a pure function of a `seed` and an `offset` (the counter): no state,
//! no allocation, `#[inline(always)]` integer and `f32` arithmetic that compiles the same for
//! the host (the CPU backend) and for `nvptx64` (device code). The same `(seed, offset)` gives
//! the same numbers on both backends and in Triton. The integer and uniform functions use no
//! table at all; the normals call `libm`'s `logf`, `cosf` and `sinf` (whose argument
//! reduction has a table of 2/π for huge arguments, never reached here: `θ < 2π`).
//!
//! # The generator
//!
//! Philox-4×32 (Salmon et al., *Parallel random numbers: as easy as 1, 2, 3*, SC'11): a
//! 128-bit counter `(c0, c1, c2, c3)` and a 64-bit key `(k0, k1)` go through `rounds` rounds
//! (10 by default, [`PHILOX_ROUNDS`]). One round, with `A` = [`PHILOX_ROUND_A`], `B` =
//! [`PHILOX_ROUND_B`] and `hi`/`lo` the upper and lower halves of the 64-bit product:
//!
//! ```text
//! (c0, c1, c2, c3) <- (hi(B*c2) ^ c1 ^ k0,  lo(B*c2),  hi(A*c0) ^ c3 ^ k1,  lo(A*c0))
//! (k0, k1)         <- (k0 + KEY_A, k1 + KEY_B)          (wrapping)
//! ```
//!
//! This is Random123's `philox4x32` exactly (its known-answer vectors are among the tests).
//!
//! # How Triton feeds it
//!
//! * **Key**: the seed (any integer scalar) is converted to a `u64` (a signed 32-bit seed is
//!   sign-extended, as `seed as u64` does in Rust); `k0` is its low 32 bits, `k1` its high 32
//!   bits. Hence `seed: u64` here: pass `seed as u64` whatever its type.
//! * **Counter**: `c0` is the offset's low 32 bits; `c1` is its high 32 bits when the offset is
//!   64 bits wide (`int64`/`uint64`), and 0 when it is 32 bits wide (so the int32 offset `-1`
//!   and the int64 offset `-1` differ: `(0xffffffff, 0)` against `(0xffffffff, 0xffffffff)`);
//!   `c2 = c3 = 0`. The offset type picks the layout here too, through [`Offset`]: write
//!   `randint(seed, off)` with `off: i32`, `u32`, `i64` or `u64`, as in Triton. A 64-bit
//!   offset below 2^32 gives the same numbers as the 32-bit one.
//! * **Outputs**: [`randint4x`] is the four output words; [`randint`] the first.
//! * **Uniform floats** ([`rand`], [`rand4x`]): the word is reinterpreted as `i32`, a
//!   negative `x` replaced by `-x - 1` (that is `!x`), converted to `f32` (round to nearest) and
//!   multiplied by the `f32` nearest to `4.6566127342e-10` (= 2^-31·(1 - 2^-24), bits
//!   `0x2fffffff`). The result lies in `[0, 1)`; 0 comes from the words 0 and `0xffffffff`.
//! * **Normals** ([`randn`], [`randn4x`]): Box–Muller on two uniforms `u1`, `u2` (the first two
//!   words): `u1 = max(1e-7, u1)`, `th = 2π·u2`, `r = sqrt(-2·ln u1)`, giving `r·cos th` and
//!   `r·sin th` ([`pair_uniform_to_normal`]). [`randn`] is the cosine one of words 0 and 1;
//!   [`randn4x`] is both of words (0, 1) and both of words (2, 3).
//!
//! # Exactness
//!
//! [`philox`], [`randint`], [`randint4x`], [`rand`] and [`rand4x`] (and the 64-bit
//! [`philox4x64`]) agree with Triton bit for bit. [`randn`] and [`randn4x`] compute `ln`,
//! `cos` and `sin` with `libm`'s `f32` functions and the correctly rounded square root (the
//! same code and so the same bits on the host and on the GPU); Triton's own `randn` uses
//! CUDA's libdevice (`__nv_logf`, `__nv_cosf`, `__nv_sinf`) and the approximate
//! `sqrt.approx.f32`, so the two agree to a few `f32` ulps (about 1e-6 relative; 3.2e-7 at
//! most over 110,400 normals of Triton 3.6, 70% of them bit for bit), not bit for bit.

/// Philox-4×32 key increment of `k0` (the golden ratio, 0x9E3779B9).
pub const PHILOX_KEY_A: u32 = 0x9E37_79B9;
/// Philox-4×32 key increment of `k1` (√3 - 1, 0xBB67AE85).
pub const PHILOX_KEY_B: u32 = 0xBB67_AE85;
/// Philox-4×32 multiplier of `c0`.
pub const PHILOX_ROUND_A: u32 = 0xD251_1F53;
/// Philox-4×32 multiplier of `c2`.
pub const PHILOX_ROUND_B: u32 = 0xCD9E_8D57;

/// Philox-4×64 key increment of `k0`.
pub const PHILOX_KEY_A_64: u64 = 0x9E37_79B9_7F4A_7C15;
/// Philox-4×64 key increment of `k1`.
pub const PHILOX_KEY_B_64: u64 = 0xBB67_AE85_84CA_A73B;
/// Philox-4×64 multiplier of `c0`.
pub const PHILOX_ROUND_A_64: u64 = 0xD2E7_470E_E14C_6C93;
/// Philox-4×64 multiplier of `c2`.
pub const PHILOX_ROUND_B_64: u64 = 0xCA5A_8263_9512_1157;

/// Triton's default number of rounds (`n_rounds`), used by the functions without `_rounds`.
pub const PHILOX_ROUNDS: u32 = 10;

// The float constants are the f32 roundings of Triton's decimal literals (Python parses them
// to f64, the compiler rounds that to f32): written the same way here.
/// Scale of a 31-bit magnitude to `[0, 1)`: 2^-31·(1 - 2^-24).
const SCALE_32: f32 = 4.6566127342e-10_f64 as f32;
/// Scale of a 63-bit magnitude to `[0, 1)`: 2^-63·(1 - 2^-23).
const SCALE_64: f32 = 1.0842020432385337e-19_f64 as f32;
/// Box–Muller's floor on `u1`, keeping `ln u1` finite.
const MIN_U1: f32 = 1.0e-7_f64 as f32;
/// 2π in f32.
const TWO_PI: f32 = 6.283185307179586_f64 as f32;

/// The high 32 bits of the 64-bit product `a·b` (PTX `mul.hi.u32`).
#[inline(always)]
pub fn umulhi(a: u32, b: u32) -> u32 {
    ((a as u64 * b as u64) >> 32) as u32
}

/// The high 64 bits of the 128-bit product `a·b` (PTX `mul.hi.u64`).
#[inline(always)]
pub fn umulhi64(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) >> 64) as u64
}

/// `rounds` rounds of Philox-4×32 on the counter `c` with the key `k` (Random123's
/// `philox4x32_R`, Triton's `philox_impl` on 32-bit words).
#[inline(always)]
pub fn philox4x32_rounds(c: [u32; 4], k: [u32; 2], rounds: u32) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = c;
    let [mut k0, mut k1] = k;
    let mut i = 0;
    while i < rounds {
        let (p0, p2) = (c0, c2);
        c0 = umulhi(PHILOX_ROUND_B, p2) ^ c1 ^ k0;
        c2 = umulhi(PHILOX_ROUND_A, p0) ^ c3 ^ k1;
        c1 = PHILOX_ROUND_B.wrapping_mul(p2);
        c3 = PHILOX_ROUND_A.wrapping_mul(p0);
        k0 = k0.wrapping_add(PHILOX_KEY_A);
        k1 = k1.wrapping_add(PHILOX_KEY_B);
        i += 1;
    }
    [c0, c1, c2, c3]
}

/// `rounds` rounds of Philox-4×64 on the counter `c` with the key `k` (Random123's
/// `philox4x64_R`, Triton's `philox_impl` on 64-bit words).
#[inline(always)]
pub fn philox4x64_rounds(c: [u64; 4], k: [u64; 2], rounds: u32) -> [u64; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = c;
    let [mut k0, mut k1] = k;
    let mut i = 0;
    while i < rounds {
        let (p0, p2) = (c0, c2);
        c0 = umulhi64(PHILOX_ROUND_B_64, p2) ^ c1 ^ k0;
        c2 = umulhi64(PHILOX_ROUND_A_64, p0) ^ c3 ^ k1;
        c1 = PHILOX_ROUND_B_64.wrapping_mul(p2);
        c3 = PHILOX_ROUND_A_64.wrapping_mul(p0);
        k0 = k0.wrapping_add(PHILOX_KEY_A_64);
        k1 = k1.wrapping_add(PHILOX_KEY_B_64);
        i += 1;
    }
    [c0, c1, c2, c3]
}

/// Triton's `tl.philox(seed, c0, c1, c2, c3, n_rounds)` with 32-bit counter words: the key is
/// the seed's low and high 32 bits. Pass a signed seed as `seed as u64` (sign-extended, as
/// Triton converts it).
#[inline(always)]
pub fn philox(seed: u64, c0: u32, c1: u32, c2: u32, c3: u32, rounds: u32) -> [u32; 4] {
    philox4x32_rounds([c0, c1, c2, c3], [seed as u32, (seed >> 32) as u32], rounds)
}

/// Triton's `tl.philox(seed, c0, c1, c2, c3, n_rounds)` with 64-bit counter words
/// (Philox-4×64): the key is `(seed, 0)`. `tl.randint*` never takes this path (their counters
/// are 32-bit words, also for 64-bit offsets); it is here for kernels calling `tl.philox`.
#[inline(always)]
pub fn philox4x64(seed: u64, c0: u64, c1: u64, c2: u64, c3: u64, rounds: u32) -> [u64; 4] {
    philox4x64_rounds([c0, c1, c2, c3], [seed, 0], rounds)
}

/// An offset (counter) type of the random functions, with Triton's layout: a 32-bit offset
/// fills `c0` and leaves `c1 = 0`; a 64-bit offset fills `c0` with its low and `c1` with its
/// high 32 bits.
pub trait Offset: Copy {
    /// The counter words `(c0, c1)`.
    fn counter(self) -> (u32, u32);
}

impl Offset for i32 {
    #[inline(always)]
    fn counter(self) -> (u32, u32) {
        (self as u32, 0)
    }
}

impl Offset for u32 {
    #[inline(always)]
    fn counter(self) -> (u32, u32) {
        (self, 0)
    }
}

impl Offset for i64 {
    #[inline(always)]
    fn counter(self) -> (u32, u32) {
        (self as u32, (self >> 32) as u32)
    }
}

impl Offset for u64 {
    #[inline(always)]
    fn counter(self) -> (u32, u32) {
        (self as u32, (self >> 32) as u32)
    }
}

/// [`randint4x`] with `rounds` rounds (Triton's `n_rounds`).
#[inline(always)]
pub fn randint4x_rounds<O: Offset>(seed: u64, offset: O, rounds: u32) -> [u32; 4] {
    let (c0, c1) = offset.counter();
    philox(seed, c0, c1, 0, 0, rounds)
}

/// `tl.randint4x(seed, offset)`: four independent random 32-bit words for `offset`.
#[inline(always)]
pub fn randint4x<O: Offset>(seed: u64, offset: O) -> [u32; 4] {
    randint4x_rounds(seed, offset, PHILOX_ROUNDS)
}

/// [`randint`] with `rounds` rounds.
#[inline(always)]
pub fn randint_rounds<O: Offset>(seed: u64, offset: O, rounds: u32) -> u32 {
    randint4x_rounds(seed, offset, rounds)[0]
}

/// `tl.randint(seed, offset)`: one random 32-bit word, the first of [`randint4x`]. (Triton
/// gives it as `uint32`; `as i32` for its bits as `int32`.)
#[inline(always)]
pub fn randint<O: Offset>(seed: u64, offset: O) -> u32 {
    randint_rounds(seed, offset, PHILOX_ROUNDS)
}

/// A random 32-bit word to a uniform `f32` in `[0, 1)`, as Triton does: its magnitude as an
/// `i32` (`!x` for a negative one) times 2^-31·(1 - 2^-24), in `f32`.
#[inline(always)]
pub fn uint_to_uniform_float(x: u32) -> f32 {
    let x = x as i32;
    let m = if x < 0 { !x } else { x };
    m as f32 * SCALE_32
}

/// A random 64-bit word to a uniform `f32` in `[0, 1)` (Triton's conversion of 64-bit words,
/// for [`philox4x64`]'s output): its magnitude as an `i64` times 2^-63·(1 - 2^-23), in `f32`.
#[inline(always)]
pub fn uint64_to_uniform_float(x: u64) -> f32 {
    let x = x as i64;
    let m = if x < 0 { !x } else { x };
    m as f32 * SCALE_64
}

/// [`rand`] with `rounds` rounds.
#[inline(always)]
pub fn rand_rounds<O: Offset>(seed: u64, offset: O, rounds: u32) -> f32 {
    uint_to_uniform_float(randint_rounds(seed, offset, rounds))
}

/// `tl.rand(seed, offset)`: a uniform `f32` in `[0, 1)`, from [`randint`].
#[inline(always)]
pub fn rand<O: Offset>(seed: u64, offset: O) -> f32 {
    rand_rounds(seed, offset, PHILOX_ROUNDS)
}

/// [`rand4x`] with `rounds` rounds.
#[inline(always)]
pub fn rand4x_rounds<O: Offset>(seed: u64, offset: O, rounds: u32) -> [f32; 4] {
    let [a, b, c, d] = randint4x_rounds(seed, offset, rounds);
    [uint_to_uniform_float(a), uint_to_uniform_float(b), uint_to_uniform_float(c), uint_to_uniform_float(d)]
}

/// `tl.rand4x(seed, offset)`: four uniform `f32`s in `[0, 1)`, from [`randint4x`].
#[inline(always)]
pub fn rand4x<O: Offset>(seed: u64, offset: O) -> [f32; 4] {
    rand4x_rounds(seed, offset, PHILOX_ROUNDS)
}

/// Box–Muller: two uniforms in `[0, 1)` to two independent standard normals
/// `(r·cos θ, r·sin θ)`, with `r = sqrt(-2·ln max(u1, 1e-7))` and `θ = 2π·u2`, in `f32`.
/// The floor on `u1` bounds `|r|` by about 5.68.
#[inline(always)]
pub fn pair_uniform_to_normal(u1: f32, u2: f32) -> (f32, f32) {
    let (r, th) = polar(u1, u2);
    (r * libm::cosf(th), r * libm::sinf(th))
}

/// Box–Muller's radius and angle.
#[inline(always)]
fn polar(u1: f32, u2: f32) -> (f32, f32) {
    let u1 = if u1 > MIN_U1 { u1 } else { MIN_U1 };
    (sqrt(-2.0 * libm::logf(u1)), TWO_PI * u2)
}

/// The correctly rounded square root: the GPU's `sqrt.rn.f32` on the device (no call, no
/// table), `libm`'s on the host; the same bits.
#[inline(always)]
fn sqrt(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let v: f32;
        unsafe {
            core::arch::asm!("sqrt.rn.f32 {v}, {x};", v = out(reg32) v, x = in(reg32) x, options(pure, nomem, nostack))
        };
        v
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::sqrtf(x)
    }
}

/// [`randn`] with `rounds` rounds.
#[inline(always)]
pub fn randn_rounds<O: Offset>(seed: u64, offset: O, rounds: u32) -> f32 {
    let [a, b, _, _] = randint4x_rounds(seed, offset, rounds);
    // The cosine half of `pair_uniform_to_normal` alone (the sine would be a dead call).
    let (r, th) = polar(uint_to_uniform_float(a), uint_to_uniform_float(b));
    r * libm::cosf(th)
}

/// `tl.randn(seed, offset)`: a standard normal `f32`, the cosine output of Box–Muller on the
/// uniforms of words 0 and 1 of [`randint4x`]. Agrees with Triton to a few ulps (see the
/// [module documentation](self#exactness)).
#[inline(always)]
pub fn randn<O: Offset>(seed: u64, offset: O) -> f32 {
    randn_rounds(seed, offset, PHILOX_ROUNDS)
}

/// [`randn4x`] with `rounds` rounds.
#[inline(always)]
pub fn randn4x_rounds<O: Offset>(seed: u64, offset: O, rounds: u32) -> [f32; 4] {
    let [u1, u2, u3, u4] = rand4x_rounds(seed, offset, rounds);
    let (n1, n2) = pair_uniform_to_normal(u1, u2);
    let (n3, n4) = pair_uniform_to_normal(u3, u4);
    [n1, n2, n3, n4]
}

/// `tl.randn4x(seed, offset)`: four standard normals, Box–Muller on the uniforms of words
/// (0, 1) and (2, 3) of [`randint4x`]; the first equals [`randn`].
#[inline(always)]
pub fn randn4x<O: Offset>(seed: u64, offset: O) -> [f32; 4] {
    randn4x_rounds(seed, offset, PHILOX_ROUNDS)
}

#[cfg(test)]
mod tests;
