//! Device building blocks (nvptx64 only): small `#[inline(always)]` functions over PTX
//! instructions that the generated device code calls. Each wraps one instruction or a short
//! fixed sequence, so the generated Rust stays readable and the PTX predictable.
//!
//! Half-precision values are carried as bit patterns ([`F16`], [`BF16`]) and converted with
//! `cvt` instructions: arithmetic on them is done in f32 and rounded once, exactly like the CPU
//! backend.

use core::arch::asm;

/// An IEEE half-precision value, as its bits.
#[derive(Clone, Copy, Default, PartialEq)]
#[repr(transparent)]
pub struct F16(pub u16);

/// A bfloat16 value, as its bits.
#[derive(Clone, Copy, Default, PartialEq)]
#[repr(transparent)]
pub struct BF16(pub u16);

/// An `f8e4m3` value (4 exponent bits, 3 mantissa bits, no infinities), as its bits.
#[derive(Clone, Copy, Default, PartialEq)]
#[repr(transparent)]
pub struct F8E4M3(pub u8);

/// An `f8e5m2` value (5 exponent bits, 2 mantissa bits), as its bits.
#[derive(Clone, Copy, Default, PartialEq)]
#[repr(transparent)]
pub struct F8E5M2(pub u8);

mod atomic;
mod debug;
mod fp8;
mod split;
mod tma;
mod unroll;
mod wgmma;
pub use atomic::*;
pub use debug::*;
pub use fp8::*;
pub use split::*;
pub use tma::*;
pub use unroll::*;
pub use wgmma::*;

// The module's dynamic shared memory; its size is given at launch. Aligned to 1024 bytes: a
// `wgmma` operand tile with 128-byte swizzling starts on a whole 1024-byte swizzle pattern.
core::arch::global_asm!(".extern .shared .align 1024 .b8 __kernel_smem[];");

/// Generic address of the dynamic shared memory.
#[inline(always)]
pub fn smem() -> *mut u8 {
    let p: u64;
    unsafe { asm!("cvta.shared.u64 {p}, __kernel_smem;", p = out(reg64) p, options(pure, nomem, nostack)) };
    p as *mut u8
}

/// One thread's register slots of a block, kept in the dynamic shared memory and indexed like
/// the register array they stand for. Slot-major: slot `j` of thread `tid` is element
/// `j * threads + tid`, so one slot of a warp's 32 threads is 32 consecutive elements (no bank
/// conflicts). The emitter uses it for loops over slots, which cannot index registers.
#[derive(Clone, Copy)]
pub struct SmemSlots<T> {
    at: *mut T,
    threads: usize,
}

impl<T> SmemSlots<T> {
    /// The slots of thread `tid` of `threads` in the array at byte offset `off` of the dynamic
    /// shared memory.
    ///
    /// # Safety
    /// `off` is aligned for `T` and the array (`threads` elements per slot) lies inside the
    /// dynamic shared memory; no other code uses it while the view is used.
    #[inline(always)]
    pub unsafe fn new(off: usize, threads: usize, tid: usize) -> Self {
        SmemSlots { at: unsafe { (smem().add(off) as *mut T).add(tid) }, threads }
    }
}

impl<T> core::ops::Index<usize> for SmemSlots<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, j: usize) -> &T {
        unsafe { &*self.at.add(j * self.threads) }
    }
}

impl<T> core::ops::IndexMut<usize> for SmemSlots<T> {
    #[inline(always)]
    fn index_mut(&mut self, j: usize) -> &mut T {
        unsafe { &mut *self.at.add(j * self.threads) }
    }
}

/// `bar.sync 0`: every thread of the block waits here.
///
/// This must be LLVM's convergent barrier intrinsic, not an `asm!` block: LLVM may duplicate
/// an ordinary call into divergent branches (jump threading), and threads of one warp reaching
/// different `bar.sync` instructions deadlock.
#[inline(always)]
pub fn bar_sync() {
    unsafe { core::arch::nvptx::_syncthreads() };
}

unsafe extern "C" {
    #[link_name = "llvm.nvvm.barrier0.and"]
    fn barrier0_and(p: i32) -> i32;
}

/// `bar.red.and.pred`: a block barrier (as [`bar_sync`]) that also returns whether `p` holds in
/// every thread of the block: a vote in one barrier. LLVM's convergent intrinsic, for the reason
/// given at [`bar_sync`].
#[inline(always)]
pub fn bar_and(p: bool) -> bool {
    let v = unsafe { barrier0_and(p as i32) } as u32;
    // Through a register that LLVM cannot see into: a branch on the barrier's own predicate is
    // emitted as a branch to the next block plus a jump, which ptxas lays out with the jump's
    // target first (a cold `else` before the hot `then`).
    let r: u32;
    unsafe { asm!("mov.b32 {r}, {v};", r = out(reg32) r, v = in(reg32) v, options(pure, nomem, nostack)) };
    r != 0
}

#[inline(always)]
pub fn thread_idx() -> u32 {
    let v: u32;
    unsafe { asm!("mov.u32 {v}, %tid.x;", v = out(reg32) v, options(pure, nomem, nostack)) };
    v
}

/// The program id along `axis` (`%ctaid`).
#[inline(always)]
pub fn program_id(axis: u32) -> i32 {
    let v: u32;
    unsafe {
        match axis {
            0 => asm!("mov.u32 {v}, %ctaid.x;", v = out(reg32) v, options(pure, nomem, nostack)),
            1 => asm!("mov.u32 {v}, %ctaid.y;", v = out(reg32) v, options(pure, nomem, nostack)),
            _ => asm!("mov.u32 {v}, %ctaid.z;", v = out(reg32) v, options(pure, nomem, nostack)),
        }
    }
    v as i32
}

/// The grid size along `axis` (`%nctaid`).
#[inline(always)]
pub fn num_programs(axis: u32) -> i32 {
    let v: u32;
    unsafe {
        match axis {
            0 => asm!("mov.u32 {v}, %nctaid.x;", v = out(reg32) v, options(pure, nomem, nostack)),
            1 => asm!("mov.u32 {v}, %nctaid.y;", v = out(reg32) v, options(pure, nomem, nostack)),
            _ => asm!("mov.u32 {v}, %nctaid.z;", v = out(reg32) v, options(pure, nomem, nostack)),
        }
    }
    v as i32
}

/// Ends the program with a trap (used by the panic handler of kernel crates).
#[inline(always)]
pub fn trap() -> ! {
    unsafe { asm!("trap;", options(noreturn, nostack)) }
}

#[inline(always)]
pub fn f16_to_f32(x: F16) -> f32 {
    let v: f32;
    unsafe { asm!("cvt.f32.f16 {v}, {x};", v = out(reg32) v, x = in(reg16) x.0, options(pure, nomem, nostack)) };
    v
}

#[inline(always)]
pub fn f32_to_f16(x: f32) -> F16 {
    let v: u16;
    unsafe { asm!("cvt.rn.f16.f32 {v}, {x};", v = out(reg16) v, x = in(reg32) x, options(pure, nomem, nostack)) };
    F16(v)
}

#[inline(always)]
pub fn bf16_to_f32(x: BF16) -> f32 {
    f32::from_bits((x.0 as u32) << 16)
}

#[inline(always)]
pub fn f32_to_bf16(x: f32) -> BF16 {
    // Round to nearest even; NaN stays NaN.
    let b = x.to_bits();
    if x.is_nan() {
        return BF16(((b >> 16) as u16) | 0x40);
    }
    let r = b.wrapping_add(0x7fff + ((b >> 16) & 1));
    BF16((r >> 16) as u16)
}

/// `x` as an `f8e4m3` or `f8e5m2` (`E5M2`), rounded to nearest even and saturated
/// (`fp8.rs`): one `cvt.rn.satfinite` on sm_90a, the software conversion elsewhere.
#[inline(always)]
pub fn f32_to_fp8<const E5M2: bool>(x: f32) -> u8 {
    #[cfg(target_feature = "sm_90a")]
    {
        let v: u16;
        let zero = 0.0f32;
        unsafe {
            if E5M2 {
                asm!("cvt.rn.satfinite.e5m2x2.f32 {v}, {z}, {x};", v = out(reg16) v, z = in(reg32) zero, x = in(reg32) x, options(pure, nomem, nostack));
            } else {
                asm!("cvt.rn.satfinite.e4m3x2.f32 {v}, {z}, {x};", v = out(reg16) v, z = in(reg32) zero, x = in(reg32) x, options(pure, nomem, nostack));
            }
        }
        v as u8
    }
    #[cfg(not(target_feature = "sm_90a"))]
    {
        f32_to_fp8_soft(x, if E5M2 { Fp8::E5M2 } else { Fp8::E4M3 })
    }
}

/// `cvt.rn.f16x2.e4m3x2` (`e5m2x2` with `E5M2`, sm_90a): two 8-bit floats, `lo | hi << 8`, as
/// two f16 values, `lo | hi << 16` (exact).
#[cfg(target_feature = "sm_90a")]
#[inline(always)]
fn fp8x2_to_f16x2<const E5M2: bool>(bits: u16) -> u32 {
    let h: u32;
    unsafe {
        if E5M2 {
            asm!("cvt.rn.f16x2.e5m2x2 {h}, {b};", h = out(reg32) h, b = in(reg16) bits, options(pure, nomem, nostack));
        } else {
            asm!("cvt.rn.f16x2.e4m3x2 {h}, {b};", h = out(reg32) h, b = in(reg16) bits, options(pure, nomem, nostack));
        }
    }
    h
}

/// The value of 8-bit float bits (exact): `cvt.rn.f16x2` then `cvt.f32.f16` on sm_90a, the
/// software conversion elsewhere.
#[inline(always)]
pub fn fp8_to_f32<const E5M2: bool>(x: u8) -> f32 {
    #[cfg(target_feature = "sm_90a")]
    {
        f16_to_f32(F16(fp8x2_to_f16x2::<E5M2>(x as u16) as u16))
    }
    #[cfg(not(target_feature = "sm_90a"))]
    {
        fp8_to_f32_soft(x, if E5M2 { Fp8::E5M2 } else { Fp8::E4M3 })
    }
}

/// The 8-bit operands of tensor-core `dot`s, which are staged in shared memory as f16 (exactly):
/// two values at once, given as their bits `lo | hi << 8`, as `lo | hi << 16` in f16 bits.
pub trait WidenPair: Copy {
    fn f16_pair(bits: u16) -> u32;
}

macro_rules! widen_fp8 {
    ($($t:ident: $e5m2:literal);*) => {$(
        impl WidenPair for $t {
            #[inline(always)]
            fn f16_pair(bits: u16) -> u32 {
                #[cfg(target_feature = "sm_90a")]
                {
                    fp8x2_to_f16x2::<$e5m2>(bits)
                }
                #[cfg(not(target_feature = "sm_90a"))]
                {
                    let half = |x: u8| f32_to_f16(fp8_to_f32::<$e5m2>(x)).0 as u32;
                    half(bits as u8) | (half((bits >> 8) as u8) << 16)
                }
            }
        }
    )*};
}
widen_fp8!(F8E4M3: false; F8E5M2: true);

macro_rules! widen_int {
    ($($t:ty),*) => {$(
        impl WidenPair for $t {
            #[inline(always)]
            fn f16_pair(bits: u16) -> u32 {
                let half = |x: u8| f32_to_f16(x as $t as f32).0 as u32;
                half(bits as u8) | (half((bits >> 8) as u8) << 16)
            }
        }
    )*};
}
widen_int!(i8, u8);

/// Eight 8-bit values of type `T`, as loaded in two words, as eight f16 values in four words
/// (for one 16-byte store).
#[inline(always)]
pub fn widen_words<T: WidenPair>([lo, hi]: [u32; 2]) -> [u32; 4] {
    [T::f16_pair(lo as u16), T::f16_pair((lo >> 16) as u16), T::f16_pair(hi as u16), T::f16_pair((hi >> 16) as u16)]
}

/// Every element type of device blocks: conversion through f64/i64 for casts.
pub trait Elem: Copy {
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn to_i64(self) -> i64;
    fn from_i64(v: i64) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn from_f32(v: f32) -> Self { v as $t }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
        }
    )*};
}
int_elem!(i8, i16, i32, i64, u8, u16, u32);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn from_f32(v: f32) -> Self { v as $t }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
        }
    )*};
}
float_elem!(f32, f64);

impl Elem for bool {
    #[inline(always)] fn to_f32(self) -> f32 { self as u8 as f32 }
    #[inline(always)] fn from_f32(v: f32) -> Self { v != 0.0 }
    #[inline(always)] fn to_f64(self) -> f64 { self as u8 as f64 }
    #[inline(always)] fn from_f64(v: f64) -> Self { v != 0.0 }
    #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
    #[inline(always)] fn from_i64(v: i64) -> Self { v != 0 }
}

impl Elem for F16 {
    #[inline(always)] fn to_f32(self) -> f32 { f16_to_f32(self) }
    #[inline(always)] fn from_f32(v: f32) -> Self { f32_to_f16(v) }
    #[inline(always)] fn to_f64(self) -> f64 { f16_to_f32(self) as f64 }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        // f64 -> f16 directly (one rounding).
        let r: u16;
        unsafe { asm!("cvt.rn.f16.f64 {r}, {v};", r = out(reg16) r, v = in(reg64) v, options(pure, nomem, nostack)) };
        F16(r)
    }
    #[inline(always)] fn to_i64(self) -> i64 { f16_to_f32(self) as i64 }
    #[inline(always)] fn from_i64(v: i64) -> Self { Self::from_f64(v as f64) }
}

impl Elem for BF16 {
    #[inline(always)] fn to_f32(self) -> f32 { bf16_to_f32(self) }
    #[inline(always)] fn from_f32(v: f32) -> Self { f32_to_bf16(v) }
    #[inline(always)] fn to_f64(self) -> f64 { bf16_to_f32(self) as f64 }
    #[inline(always)] fn from_f64(v: f64) -> Self { f32_to_bf16(v as f32) }
    #[inline(always)] fn to_i64(self) -> i64 { bf16_to_f32(self) as i64 }
    #[inline(always)] fn from_i64(v: i64) -> Self { f32_to_bf16(v as f32) }
}

macro_rules! fp8_elem {
    ($($t:ident: $e5m2:literal, $fmt:expr);*) => {$(
        impl Elem for $t {
            #[inline(always)] fn to_f32(self) -> f32 { fp8_to_f32::<$e5m2>(self.0) }
            #[inline(always)] fn from_f32(v: f32) -> Self { $t(f32_to_fp8::<$e5m2>(v)) }
            #[inline(always)] fn to_f64(self) -> f64 { fp8_to_f32::<$e5m2>(self.0) as f64 }
            // One rounding from f64 (through f32 it could round twice).
            #[inline(always)] fn from_f64(v: f64) -> Self { $t(f64_to_fp8(v, $fmt)) }
            #[inline(always)] fn to_i64(self) -> i64 { fp8_to_f32::<$e5m2>(self.0) as i64 }
            #[inline(always)] fn from_i64(v: i64) -> Self { $t(f64_to_fp8(v as f64, $fmt)) }
        }
    )*};
}
fp8_elem!(F8E4M3: false, Fp8::E4M3; F8E5M2: true, Fp8::E5M2);

/// Conversion between element types, with the CPU backend's semantics.
pub trait CastTo<B> {
    fn cast(self) -> B;
}

macro_rules! cast_via {
    // Float targets go through f64 (exact for every source); integer targets through i64
    // from integers and through the float's own truncating, saturating `as` from floats.
    (float: $($src:ty),* => $dst:ty) => {$(
        impl CastTo<$dst> for $src { #[inline(always)] fn cast(self) -> $dst { <$dst as Elem>::from_f64(self.to_f64()) } }
    )*};
}
cast_via!(float: F16, BF16, F8E4M3, F8E5M2, f32, f64, i8, i16, i32, i64, u8, u16, u32, bool => f64);
cast_via!(float: F16, BF16, F8E4M3, F8E5M2, f64, i8, i16, i32, i64, u8, u16, u32, bool => f32);
cast_via!(float: BF16, F8E4M3, F8E5M2, f64, i8, i16, i32, i64, u8, u16, u32, bool => F16);
cast_via!(float: F16, F8E4M3, F8E5M2, f64, i8, i16, i32, i64, u8, u16, u32, bool => BF16);
cast_via!(float: F8E5M2, f64, i8, i16, i32, i64, u8, u16, u32, bool => F8E4M3);
cast_via!(float: F8E4M3, f64, i8, i16, i32, i64, u8, u16, u32, bool => F8E5M2);
impl CastTo<F8E4M3> for F8E4M3 { #[inline(always)] fn cast(self) -> F8E4M3 { self } }
impl CastTo<F8E5M2> for F8E5M2 { #[inline(always)] fn cast(self) -> F8E5M2 { self } }
// f32, f16 and bf16 hold their values exactly in f32: one rounding, the f32 conversion.
macro_rules! cast_fp8_via_f32 {
    ($($src:ty),* => $dst:ident) => {$(
        impl CastTo<$dst> for $src { #[inline(always)] fn cast(self) -> $dst { <$dst as Elem>::from_f32(self.to_f32()) } }
    )*};
}
cast_fp8_via_f32!(f32, F16, BF16 => F8E4M3);
cast_fp8_via_f32!(f32, F16, BF16 => F8E5M2);
impl CastTo<f32> for f32 { #[inline(always)] fn cast(self) -> f32 { self } }
impl CastTo<F16> for F16 { #[inline(always)] fn cast(self) -> F16 { self } }
impl CastTo<BF16> for BF16 { #[inline(always)] fn cast(self) -> BF16 { self } }
impl CastTo<F16> for f32 { #[inline(always)] fn cast(self) -> F16 { f32_to_f16(self) } }
impl CastTo<BF16> for f32 { #[inline(always)] fn cast(self) -> BF16 { f32_to_bf16(self) } }

macro_rules! cast_int {
    ($($src:ty),* => $dst:ty) => {$(
        impl CastTo<$dst> for $src { #[inline(always)] fn cast(self) -> $dst { self as $dst } }
    )*};
}
// Rust `as`: integers wrap (truncate or extend by the source's sign), floats truncate toward
// zero and saturate (NaN gives 0).
cast_int!(i8, i16, i32, i64, u8, u16, u32, f32, f64 => i8);
cast_int!(i8, i16, i32, i64, u8, u16, u32, f32, f64 => i16);
cast_int!(i8, i16, i32, i64, u8, u16, u32, f32, f64 => i32);
cast_int!(i8, i16, i32, i64, u8, u16, u32, f32, f64 => i64);
cast_int!(i8, i16, i32, i64, u8, u16, u32, f32, f64 => u8);
cast_int!(i8, i16, i32, i64, u8, u16, u32, f32, f64 => u16);
cast_int!(i8, i16, i32, i64, u8, u16, u32, f32, f64 => u32);
macro_rules! cast_half_int {
    ($($src:ty),* => $dst:ty) => {$(
        impl CastTo<$dst> for $src { #[inline(always)] fn cast(self) -> $dst { self.to_f32() as $dst } }
    )*};
}
cast_half_int!(F16, BF16, F8E4M3, F8E5M2 => i8);
cast_half_int!(F16, BF16, F8E4M3, F8E5M2 => i16);
cast_half_int!(F16, BF16, F8E4M3, F8E5M2 => i32);
cast_half_int!(F16, BF16, F8E4M3, F8E5M2 => i64);
cast_half_int!(F16, BF16, F8E4M3, F8E5M2 => u8);
cast_half_int!(F16, BF16, F8E4M3, F8E5M2 => u16);
cast_half_int!(F16, BF16, F8E4M3, F8E5M2 => u32);
macro_rules! cast_bool {
    ($($src:ty),* => bool) => {$(
        impl CastTo<bool> for $src { #[inline(always)] fn cast(self) -> bool { self.to_f64() != 0.0 } }
    )*};
}
cast_bool!(F16, BF16, F8E4M3, F8E5M2, f32, f64, i8, i16, i32, i64, u8, u16, u32 => bool);
impl CastTo<bool> for bool { #[inline(always)] fn cast(self) -> bool { self } }
macro_rules! cast_from_bool {
    ($($t:ty),*) => {$(
        impl CastTo<$t> for bool { #[inline(always)] fn cast(self) -> $t { self as $t } }
    )*};
}
cast_from_bool!(i8, i16, i32, i64, u8, u16, u32);

#[inline(always)]
pub fn cast<A: CastTo<B>, B>(a: A) -> B {
    a.cast()
}

/// Arithmetic and comparisons with the CPU backend's semantics: integers wrap, half
/// precision computes in f32 and rounds once. Integer division by zero gives 0 on the GPU
/// (the CPU backend reports it as an error).
pub trait Num: Copy {
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn div(a: Self, b: Self) -> Self;
    fn rem(a: Self, b: Self) -> Self;
    fn neg(a: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn lt(a: Self, b: Self) -> bool;
    fn le(a: Self, b: Self) -> bool;
    fn gt(a: Self, b: Self) -> bool;
    fn ge(a: Self, b: Self) -> bool;
    fn eq(a: Self, b: Self) -> bool;
    fn ne(a: Self, b: Self) -> bool;
}

/// Whether an integer division by `b` should first test for a dividend already in `0..b`: on
/// sm_90a (the build timed on the H100), where `b` is not a constant known to the optimizer.
/// The sm_80 build of the biggest matmul instances sits at the register limit, and the test's
/// extra live values make it spill; other builds have no use for it.
#[inline(always)]
fn quick_division<T: Copy>(b: T) -> bool {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    {
        !core::intrinsics::is_val_statically_known(b)
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
    {
        let _ = b;
        false
    }
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)] fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            #[inline(always)] fn sub(a: Self, b: Self) -> Self { a.wrapping_sub(b) }
            #[inline(always)] fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            // A division by a run-time divisor costs about twenty dependent instructions; the
            // common case of a dividend already in `0..b` (a row index `% M`, a block index
            // below a group size) skips it (see `quick_division`).
            #[inline(always)] #[allow(unused_comparisons)] fn div(a: Self, b: Self) -> Self {
                if quick_division(b) && a >= 0 && a < b { 0 } else if b == 0 { 0 } else { a.wrapping_div(b) }
            }
            #[inline(always)] #[allow(unused_comparisons)] fn rem(a: Self, b: Self) -> Self {
                if quick_division(b) && a >= 0 && a < b { a } else if b == 0 { 0 } else { a.wrapping_rem(b) }
            }
            #[inline(always)] fn neg(a: Self) -> Self { (0 as $t).wrapping_sub(a) }
            #[inline(always)] fn min(a: Self, b: Self) -> Self { if a < b { a } else { b } }
            #[inline(always)] fn max(a: Self, b: Self) -> Self { if a > b { a } else { b } }
            #[inline(always)] fn lt(a: Self, b: Self) -> bool { a < b }
            #[inline(always)] fn le(a: Self, b: Self) -> bool { a <= b }
            #[inline(always)] fn gt(a: Self, b: Self) -> bool { a > b }
            #[inline(always)] fn ge(a: Self, b: Self) -> bool { a >= b }
            #[inline(always)] fn eq(a: Self, b: Self) -> bool { a == b }
            #[inline(always)] fn ne(a: Self, b: Self) -> bool { a != b }
        }
    )*};
}
int_num!(i8, i16, i32, i64, u8, u16, u32);

macro_rules! float_num {
    ($($t:ty: $div:path),*) => {$(
        impl Num for $t {
            #[inline(always)] fn add(a: Self, b: Self) -> Self { a + b }
            #[inline(always)] fn sub(a: Self, b: Self) -> Self { a - b }
            #[inline(always)] fn mul(a: Self, b: Self) -> Self { a * b }
            #[inline(always)] fn div(a: Self, b: Self) -> Self { $div(a, b) }
            #[inline(always)] fn rem(a: Self, b: Self) -> Self { a % b }
            #[inline(always)] fn neg(a: Self) -> Self { -a }
            // A NaN operand is ignored (`min.f32`/`max.f32`, Triton's default), as on the CPU.
            #[inline(always)] fn min(a: Self, b: Self) -> Self { a.min(b) }
            #[inline(always)] fn max(a: Self, b: Self) -> Self { a.max(b) }
            #[inline(always)] fn lt(a: Self, b: Self) -> bool { a < b }
            #[inline(always)] fn le(a: Self, b: Self) -> bool { a <= b }
            #[inline(always)] fn gt(a: Self, b: Self) -> bool { a > b }
            #[inline(always)] fn ge(a: Self, b: Self) -> bool { a >= b }
            #[inline(always)] fn eq(a: Self, b: Self) -> bool { a == b }
            #[inline(always)] fn ne(a: Self, b: Self) -> bool { a != b }
        }
    )*};
}
float_num!(f32: div_rn_f32, f64: div_rn_f64);

/// `a / b` in f64, correctly rounded (`div.rn.f64`).
#[inline(always)]
fn div_rn_f64(a: f64, b: f64) -> f64 {
    a / b
}

/// `a / b` in f32, correctly rounded (the IEEE 754 division of Rust's `/` and of PTX's
/// `div.rn.f32`). Where `|b|` is in [2^-30, 2^30] and `|a|` in [2^-90, 2^90] it is computed by
/// the instructions of ptxas's fast path for `div.rn.f32`: the reciprocal `y` from
/// `rcp.approx`, refined by one Newton step, `q = a * y`, then one correction by the remainder
/// `r = a - b * q`, exact in an `fma`: `q + r * y`. In that range no intermediate overflows or
/// loses bits to underflow, so each step gives what it gives for operands scaled into [1, 2),
/// where `div.rn.f32` itself runs this sequence. A zero `a` gives `a * y`, the zero of the
/// quotient's sign. Elsewhere (infinities, NaNs, subnormals, extreme ratios) it is
/// `div.rn.f32`. The reciprocal depends on `b` alone: a block divided by one value computes it
/// once (ptxas expands each `div.rn.f32` with its own reciprocal, range check and branch).
#[inline(always)]
pub fn div_rn_f32(a: f32, b: f32) -> f32 {
    let y0 = rcp_approx(b);
    let y = fma_rn(y0, fma_rn(-b, y0, 1.0), y0);
    let q0 = mul_rn(a, y);
    let q = fma_rn(y, fma_rn(-b, q0, a), q0);
    let (a_abs, b_abs) = (a.abs(), b.abs());
    let b_in = b_abs >= f32::from_bits(0x3080_0000) && b_abs <= f32::from_bits(0x4e80_0000);
    if a_abs == 0.0 && b_in {
        // `a * y`: a zero with the quotient's sign (the correction would turn -0 into +0).
        q0
    } else if a_abs >= f32::from_bits(0x1280_0000) && a_abs <= f32::from_bits(0x6c80_0000) && b_in {
        q
    } else {
        div_rn_slow(a, b)
    }
}

/// `a / b` in f32, correctly rounded, for `|a|` in [2^-90, 2^90] and `|b|` in [2^-30, 2^30]:
/// [`div_rn_f32`]'s sequence without its tests (wrong outside that range).
#[inline(always)]
fn div_rn_f32_in_range(a: f32, b: f32) -> f32 {
    let y0 = rcp_approx(b);
    let y = fma_rn(y0, fma_rn(-b, y0, 1.0), y0);
    let q0 = mul_rn(a, y);
    fma_rn(y, fma_rn(-b, q0, a), q0)
}

/// `div.rn.f32`, kept out of the optimizer's reach (it would otherwise compute it ahead of
/// the test in [`div_rn_f32`], for every element).
#[inline(always)]
fn div_rn_slow(a: f32, b: f32) -> f32 {
    let v: f32;
    unsafe { asm!("div.rn.f32 {v}, {a}, {b};", v = out(reg32) v, a = in(reg32) a, b = in(reg32) b, options(nomem, nostack)) };
    v
}

macro_rules! half_num {
    ($($t:ident: $sign:literal),*) => {$(
        impl Num for $t {
            #[inline(always)] fn add(a: Self, b: Self) -> Self { Self::from_f32(a.to_f32() + b.to_f32()) }
            #[inline(always)] fn sub(a: Self, b: Self) -> Self { Self::from_f32(a.to_f32() - b.to_f32()) }
            #[inline(always)] fn mul(a: Self, b: Self) -> Self { Self::from_f32(a.to_f32() * b.to_f32()) }
            #[inline(always)] fn div(a: Self, b: Self) -> Self { Self::from_f32(div_rn_f32(a.to_f32(), b.to_f32())) }
            #[inline(always)] fn rem(a: Self, b: Self) -> Self { Self::from_f32(a.to_f32() % b.to_f32()) }
            #[inline(always)] fn neg(a: Self) -> Self { Self(a.0 ^ $sign) }
            #[inline(always)] fn min(a: Self, b: Self) -> Self { Self::from_f32(<f32 as Num>::min(a.to_f32(), b.to_f32())) }
            #[inline(always)] fn max(a: Self, b: Self) -> Self { Self::from_f32(<f32 as Num>::max(a.to_f32(), b.to_f32())) }
            #[inline(always)] fn lt(a: Self, b: Self) -> bool { a.to_f32() < b.to_f32() }
            #[inline(always)] fn le(a: Self, b: Self) -> bool { a.to_f32() <= b.to_f32() }
            #[inline(always)] fn gt(a: Self, b: Self) -> bool { a.to_f32() > b.to_f32() }
            #[inline(always)] fn ge(a: Self, b: Self) -> bool { a.to_f32() >= b.to_f32() }
            #[inline(always)] fn eq(a: Self, b: Self) -> bool { a.to_f32() == b.to_f32() }
            #[inline(always)] fn ne(a: Self, b: Self) -> bool { a.to_f32() != b.to_f32() }
        }
    )*};
}
half_num!(F16: 0x8000, BF16: 0x8000, F8E4M3: 0x80, F8E5M2: 0x80);

/// Bitwise operations on integers and masks.
pub trait Int: Copy {
    fn and(a: Self, b: Self) -> Self;
    fn or(a: Self, b: Self) -> Self;
    fn xor(a: Self, b: Self) -> Self;
    fn not(a: Self) -> Self;
    fn shl(a: Self, b: Self) -> Self;
    fn shr(a: Self, b: Self) -> Self;
    /// `|a|` (wrapping: the most negative value stays itself; unsigned values are unchanged).
    fn abs(a: Self) -> Self;
    /// The high half of the double-width product, the operands read as unsigned.
    fn umulhi(a: Self, b: Self) -> Self;
}

macro_rules! int_bits {
    ($($t:ty),*) => {$(
        impl Int for $t {
            #[inline(always)] fn and(a: Self, b: Self) -> Self { a & b }
            #[inline(always)] fn or(a: Self, b: Self) -> Self { a | b }
            #[inline(always)] fn xor(a: Self, b: Self) -> Self { a ^ b }
            #[inline(always)] fn not(a: Self) -> Self { !a }
            // PTX semantics, as on the CPU: an amount at or above the width (or negative)
            // shifts everything out (0, or the sign bits for `shr` of a negative value).
            #[inline(always)] fn shl(a: Self, b: Self) -> Self {
                if (b as u64) < <$t>::BITS as u64 { a << (b as u32) } else { 0 }
            }
            #[inline(always)] fn shr(a: Self, b: Self) -> Self {
                if (b as u64) < <$t>::BITS as u64 { a >> (b as u32) } else { a >> (<$t>::BITS - 1) >> 1 }
            }
            #[inline(always)] fn abs(a: Self) -> Self { <$t as IntExtra>::abs_(a) }
            #[inline(always)] fn umulhi(a: Self, b: Self) -> Self { <$t as IntExtra>::umulhi_(a, b) }
        }
    )*};
}
int_bits!(i8, i16, i32, i64, u8, u16, u32);

impl IntExtra for i32 {
    #[inline(always)] fn abs_(a: Self) -> Self { a.wrapping_abs() }
    #[inline(always)] fn umulhi_(a: Self, b: Self) -> Self { ((a as u32 as u64 * b as u32 as u64) >> 32) as i32 }
}
impl IntExtra for u32 {
    #[inline(always)] fn abs_(a: Self) -> Self { a }
    #[inline(always)] fn umulhi_(a: Self, b: Self) -> Self { ((a as u64 * b as u64) >> 32) as u32 }
}
impl IntExtra for i64 {
    #[inline(always)] fn abs_(a: Self) -> Self { a.wrapping_abs() }
    #[inline(always)] fn umulhi_(a: Self, b: Self) -> Self { ((a as u64 as u128 * b as u64 as u128) >> 64) as i64 }
}
macro_rules! small_int_extra {
    ($($t:ty => $u:ty, $abs:expr);*) => {$(
        impl IntExtra for $t {
            #[inline(always)] fn abs_(a: Self) -> Self { $abs(a) }
            #[inline(always)] fn umulhi_(a: Self, b: Self) -> Self { ((a as $u as u32 * b as $u as u32) >> <$t>::BITS) as $t }
        }
    )*};
}
small_int_extra!(i8 => u8, i8::wrapping_abs; i16 => u16, i16::wrapping_abs; u8 => u8, |a| a; u16 => u16, |a| a);

/// The per-type parts of [`Int::abs`] and [`Int::umulhi`].
trait IntExtra: Sized {
    fn abs_(a: Self) -> Self;
    fn umulhi_(a: Self, b: Self) -> Self;
}

impl Int for bool {
    #[inline(always)] fn and(a: Self, b: Self) -> Self { a & b }
    #[inline(always)] fn or(a: Self, b: Self) -> Self { a | b }
    #[inline(always)] fn xor(a: Self, b: Self) -> Self { a ^ b }
    #[inline(always)] fn not(a: Self) -> Self { !a }
    // A 1-bit value: shifting by 1 (`true`) clears it, as on the CPU.
    #[inline(always)] fn shl(a: Self, b: Self) -> Self { a & !b }
    #[inline(always)] fn shr(a: Self, b: Self) -> Self { a & !b }
    #[inline(always)] fn abs(a: Self) -> Self { a }
    #[inline(always)] fn umulhi(_: Self, _: Self) -> Self { false }
}

#[inline(always)]
fn ex2(x: f32) -> f32 {
    let v: f32;
    // Not `pure`: LLVM would hoist and interleave every exponential of an unrolled epilogue,
    // raising register pressure past the accumulator's budget. `.ftz`, as Triton emits it: one
    // `MUFU.EX2` (without it, ptxas wraps each in a subnormal range test and two multiplies);
    // results below 2^-126 are flushed to zero.
    unsafe { asm!("ex2.approx.ftz.f32 {v}, {x};", v = out(reg32) v, x = in(reg32) x, options(nomem, nostack)) };
    v
}

#[inline(always)]
fn lg2(x: f32) -> f32 {
    let v: f32;
    unsafe { asm!("lg2.approx.f32 {v}, {x};", v = out(reg32) v, x = in(reg32) x, options(nomem, nostack)) };
    v
}

macro_rules! unary_asm {
    ($name:ident, $ins:literal) => {
        #[inline(always)]
        fn $name(x: f32) -> f32 {
            let v: f32;
            unsafe { asm!(concat!($ins, " {v}, {x};"), v = out(reg32) v, x = in(reg32) x, options(pure, nomem, nostack)) };
            v
        }
    };
}
unary_asm!(sqrt_rn, "sqrt.rn.f32");
unary_asm!(rcp_approx, "rcp.approx.ftz.f32");
unary_asm!(rsqrt_approx, "rsqrt.approx.f32");
unary_asm!(sin_approx, "sin.approx.f32");
unary_asm!(cos_approx, "cos.approx.f32");
unary_asm!(floor_f32, "cvt.rmi.f32.f32");
unary_asm!(ceil_f32, "cvt.rpi.f32.f32");
unary_asm!(rint_f32, "cvt.rni.f32.f32");
unary_asm!(trunc_f32, "cvt.rzi.f32.f32");

/// `mul.rn.f32`: rounded once, never contracted into an `fma` by ptxas.
#[inline(always)]
fn mul_rn(a: f32, b: f32) -> f32 {
    let v: f32;
    unsafe { asm!("mul.rn.f32 {v}, {a}, {b};", v = out(reg32) v, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack)) };
    v
}

/// Rounds half away from zero: the integer part, one more step away from zero when the dropped
/// fraction (`x - trunc(x)`, exact) is a half or more. NaN and infinities stay as they are.
macro_rules! round_half_away {
    ($name:ident, $t:ty, $trunc:ident, $sign:literal) => {
        #[inline(always)]
        fn $name(x: $t) -> $t {
            let t = $trunc(x);
            let frac = <$t>::from_bits((x - t).to_bits() & !$sign);
            // 1 with the sign of `x`.
            if frac >= 0.5 { t + <$t>::from_bits((1.0 as $t).to_bits() | (x.to_bits() & $sign)) } else { t }
        }
    };
}
round_half_away!(round_f32, f32, trunc_f32, 0x8000_0000u32);

/// Float math: f32 instructions (the `.approx` ones as Triton uses them) for f32 and half
/// precision (computed in f32, rounded once); f64 is computed in f64 (see `impl Float for f64`).
/// `expm1`, `log10`, `log1p` and `pow` are `libm`'s and `tanh` and `erf` are `kernel-math`'s,
/// the same code the CPU backend runs, so both backends give the same bits; `fma` rounds once
/// (twice for f16/bf16: the f32 result is rounded to the dtype).
pub trait Float: Elem + Num {
    #[inline(always)] fn exp(x: Self) -> Self { Self::from_f32(ex2(x.to_f32() * core::f32::consts::LOG2_E)) }
    #[inline(always)] fn exp2(x: Self) -> Self { Self::from_f32(ex2(x.to_f32())) }
    #[inline(always)] fn log(x: Self) -> Self { Self::from_f32(lg2(x.to_f32()) * core::f32::consts::LN_2) }
    #[inline(always)] fn log2(x: Self) -> Self { Self::from_f32(lg2(x.to_f32())) }
    #[inline(always)] fn sqrt(x: Self) -> Self { Self::from_f32(sqrt_rn(x.to_f32())) }
    #[inline(always)] fn rsqrt(x: Self) -> Self { Self::from_f32(rsqrt_approx(x.to_f32())) }
    #[inline(always)] fn abs(x: Self) -> Self { Self::from_f32(f32::from_bits(x.to_f32().to_bits() & 0x7fff_ffff)) }
    #[inline(always)] fn sin(x: Self) -> Self { Self::from_f32(sin_approx(x.to_f32())) }
    #[inline(always)] fn cos(x: Self) -> Self { Self::from_f32(cos_approx(x.to_f32())) }
    #[inline(always)] fn floor(x: Self) -> Self { Self::from_f32(floor_f32(x.to_f32())) }
    #[inline(always)] fn ceil(x: Self) -> Self { Self::from_f32(ceil_f32(x.to_f32())) }
    /// Rounds to the nearest integer, halves to even.
    #[inline(always)] fn rint(x: Self) -> Self { Self::from_f32(rint_f32(x.to_f32())) }
    /// Rounds towards zero.
    #[inline(always)] fn trunc(x: Self) -> Self { Self::from_f32(trunc_f32(x.to_f32())) }
    /// Rounds to the nearest integer, halves away from zero.
    #[inline(always)] fn round(x: Self) -> Self { Self::from_f32(round_f32(x.to_f32())) }
    #[inline(always)] fn expm1(x: Self) -> Self { Self::from_f32(libm::expm1f(x.to_f32())) }
    #[inline(always)] fn log10(x: Self) -> Self { Self::from_f32(libm::log10f(x.to_f32())) }
    #[inline(always)] fn log1p(x: Self) -> Self { Self::from_f32(libm::log1pf(x.to_f32())) }
    #[inline(always)] fn tanh(x: Self) -> Self { Self::from_f32(kernel_math::tanh::<Ptx>(x.to_f32())) }
    #[inline(always)] fn erf(x: Self) -> Self { Self::from_f32(kernel_math::erf::<Ptx>(x.to_f32())) }
    #[inline(always)] fn sigmoid(x: Self) -> Self { Self::from_f32(div_rn_f32(1.0, 1.0 + <f32 as Float>::exp(-x.to_f32()))) }
    #[inline(always)] fn pow(x: Self, y: Self) -> Self { Self::from_f32(libm::powf(x.to_f32(), y.to_f32())) }
    #[inline(always)] fn fma(a: Self, b: Self, c: Self) -> Self { Self::from_f32(fma_rn(a.to_f32(), b.to_f32(), c.to_f32())) }
    #[inline(always)] fn isnan(x: Self) -> bool { x.to_f32().is_nan() }
    #[inline(always)] fn isinf(x: Self) -> bool { x.to_f32().is_infinite() }
    /// `min(max(x, lo), hi)` with `minimum`/`maximum`'s NaN rule (a NaN `x` gives `lo`).
    #[inline(always)] fn clamp(x: Self, lo: Self, hi: Self) -> Self { <Self as Num>::min(<Self as Num>::max(x, lo), hi) }
}
impl Float for f32 {}

/// `kernel-math`'s operations as the device computes them (rounded once, as on the host; its
/// divisions' operands are in [0.5, 2], where the division needs no tests).
struct Ptx;
impl kernel_math::Arith for Ptx {
    #[inline(always)]
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        fma_rn(a, b, c)
    }
    #[inline(always)]
    fn div(a: f32, b: f32) -> f32 {
        div_rn_f32_in_range(a, b)
    }
}

#[inline(always)]
fn fma_rn(a: f32, b: f32, c: f32) -> f32 {
    let v: f32;
    unsafe { asm!("fma.rn.f32 {v}, {a}, {b}, {c};", v = out(reg32) v, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack)) };
    v
}

#[inline(always)]
fn fma_rn_f64(a: f64, b: f64, c: f64) -> f64 {
    let v: f64;
    unsafe { asm!("fma.rn.f64 {v}, {a}, {b}, {c};", v = out(reg64) v, a = in(reg64) a, b = in(reg64) b, c = in(reg64) c, options(pure, nomem, nostack)) };
    v
}

macro_rules! unary_asm_f64 {
    ($name:ident, $ins:literal) => {
        #[inline(always)]
        fn $name(x: f64) -> f64 {
            let v: f64;
            unsafe { asm!(concat!($ins, " {v}, {x};"), v = out(reg64) v, x = in(reg64) x, options(pure, nomem, nostack)) };
            v
        }
    };
}
unary_asm_f64!(sqrt_rn_f64, "sqrt.rn.f64");
unary_asm_f64!(floor_f64, "cvt.rmi.f64.f64");
unary_asm_f64!(ceil_f64, "cvt.rpi.f64.f64");
unary_asm_f64!(rint_f64, "cvt.rni.f64.f64");
unary_asm_f64!(trunc_f64, "cvt.rzi.f64.f64");
round_half_away!(round_f64, f64, trunc_f64, 0x8000_0000_0000_0000u64);

/// f64 in f64: the hardware's correctly rounded square root and roundings, and `libm`'s
/// functions (within 1 ulp) for the rest, so results agree with the CPU backend's `f64`.
impl Float for f64 {
    #[inline(always)] fn exp(x: Self) -> Self { libm::exp(x) }
    #[inline(always)] fn exp2(x: Self) -> Self { libm::exp2(x) }
    #[inline(always)] fn log(x: Self) -> Self { libm::log(x) }
    #[inline(always)] fn log2(x: Self) -> Self { libm::log2(x) }
    #[inline(always)] fn sqrt(x: Self) -> Self { sqrt_rn_f64(x) }
    #[inline(always)] fn rsqrt(x: Self) -> Self { 1.0 / sqrt_rn_f64(x) }
    #[inline(always)] fn abs(x: Self) -> Self { f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff) }
    #[inline(always)] fn sin(x: Self) -> Self { libm::sin(x) }
    #[inline(always)] fn cos(x: Self) -> Self { libm::cos(x) }
    #[inline(always)] fn floor(x: Self) -> Self { floor_f64(x) }
    #[inline(always)] fn ceil(x: Self) -> Self { ceil_f64(x) }
    #[inline(always)] fn rint(x: Self) -> Self { rint_f64(x) }
    #[inline(always)] fn trunc(x: Self) -> Self { trunc_f64(x) }
    #[inline(always)] fn round(x: Self) -> Self { round_f64(x) }
    #[inline(always)] fn expm1(x: Self) -> Self { libm::expm1(x) }
    #[inline(always)] fn log10(x: Self) -> Self { libm::log10(x) }
    #[inline(always)] fn log1p(x: Self) -> Self { libm::log1p(x) }
    #[inline(always)] fn tanh(x: Self) -> Self { libm::tanh(x) }
    #[inline(always)] fn erf(x: Self) -> Self { libm::erf(x) }
    #[inline(always)] fn sigmoid(x: Self) -> Self { 1.0 / (1.0 + libm::exp(-x)) }
    #[inline(always)] fn pow(x: Self, y: Self) -> Self { libm::pow(x, y) }
    #[inline(always)] fn fma(a: Self, b: Self, c: Self) -> Self { fma_rn_f64(a, b, c) }
    #[inline(always)] fn isnan(x: Self) -> bool { x.is_nan() }
    #[inline(always)] fn isinf(x: Self) -> bool { x.is_infinite() }
}
impl Float for F16 {}
impl Float for BF16 {}
impl Float for F8E4M3 {}
impl Float for F8E5M2 {}

/// `p + off` elements (wrapping, never dereferenced here).
#[inline(always)]
pub fn ptr_add<T, I: Elem>(p: *mut T, off: I) -> *mut T {
    p.wrapping_offset(off.to_i64() as isize)
}

/// Whether the `n` elements from `p` lie inside the buffer of `len` elements that starts at
/// `base` (a pointer parameter and the length the launcher passed for it).
#[inline(always)]
pub fn fits<T>(p: *mut T, base: *mut T, len: u64, n: usize) -> bool {
    let size = core::mem::size_of::<T>() as u64;
    let off = (p as u64).wrapping_sub(base as u64);
    let bytes = len.saturating_mul(size);
    off <= bytes && bytes - off >= n as u64 * size
}

/// [`fits`] for one element; when it does not, the access is recorded in the launch's fault
/// record (only the first one of a launch is kept) and the caller skips it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn in_bounds<T>(p: *mut T, base: *mut T, len: u64, record: *mut u32, tag: u32, param: u32, line: u32) -> bool {
    let ok = fits(p, base, len, 1);
    if !ok {
        core::hint::cold_path();
        record_fault_at(p, base, len, record, tag, param, line);
    }
    ok
}

/// Whether the `n` elements from `p` lie inside one of the buffers `(address, bytes)`: the
/// check of a pointer block computed from several pointer parameters (say, a `where_` between
/// two of them), which cannot be attributed to one buffer.
#[inline(always)]
pub fn fits_any<T>(p: *mut T, n: usize, bufs: &[(u64, u64)]) -> bool {
    let (a, need) = (p as u64, (n * core::mem::size_of::<T>()) as u64);
    bufs.iter().any(|&(base, bytes)| {
        let off = a.wrapping_sub(base);
        off <= bytes && bytes - off >= need
    })
}

/// [`fits_any`] for one element; when it does not fit, the access is recorded with parameter
/// `u32::MAX` and its address as the index, and the caller skips it.
#[inline(always)]
pub fn in_bounds_any<T>(p: *mut T, bufs: &[(u64, u64)], record: *mut u32, tag: u32, line: u32) -> bool {
    let ok = fits_any(p, 1, bufs);
    if !ok {
        core::hint::cold_path();
        record_fault(record, tag, u32::MAX, line, p as i64, 0);
    }
    ok
}

/// Records an access at `p` outside the buffer at `base` (see [`in_bounds`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn record_fault_at<T>(p: *mut T, base: *mut T, len: u64, record: *mut u32, tag: u32, param: u32, line: u32) {
    let index = ((p as i64).wrapping_sub(base as i64)) / core::mem::size_of::<T>() as i64;
    record_fault(record, tag, param, line, index, len);
}

/// Writes the fault record `[set, tag, param, line, index lo, index hi, len lo, len hi]` if no
/// access of this launch was recorded before (`atom.cas` on the first word). The runtime reads
/// and clears it when it next synchronizes. Inline where the access is checked: a call there made
/// ptxas keep every value live across it in registers that the whole entry then held.
#[inline(always)]
pub fn record_fault(record: *mut u32, tag: u32, param: u32, line: u32, index: i64, len: u64) {
    let old: u32;
    unsafe {
        asm!("atom.global.cas.b32 {o}, [{r}], 0, 1;", o = out(reg32) old, r = in(reg64) record as u64, options(nostack));
        if old == 0 {
            // One store each (a loop over an array of the words went through local memory).
            core::ptr::write_volatile(record.add(1), tag);
            core::ptr::write_volatile(record.add(2), param);
            core::ptr::write_volatile(record.add(3), line);
            core::ptr::write_volatile(record.add(4), index as u32);
            core::ptr::write_volatile(record.add(5), (index >> 32) as u32);
            core::ptr::write_volatile(record.add(6), len as u32);
            core::ptr::write_volatile(record.add(7), (len >> 32) as u32);
        }
    }
}

#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Align16<T, const N: usize>([T; N]);
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Align8<T, const N: usize>([T; N]);
#[repr(C, align(4))]
#[derive(Clone, Copy)]
struct Align4<T, const N: usize>([T; N]);

/// Reads `N` consecutive elements with one vector access (`ld.global.v4.b32` and the like)
/// when they span 4, 8 or 16 bytes, two 16-byte accesses when they span 32, else one by one.
/// The caller has checked that `p` is aligned to `N * size_of::<T>()` bytes (16 for 32) and that
/// all `N` elements are unmasked.
#[inline(always)]
pub unsafe fn load_vec<T: Copy, const N: usize>(p: *mut T) -> [T; N] {
    unsafe {
        match N * core::mem::size_of::<T>() {
            // 32 bytes: two 16-byte accesses.
            16 | 32 => core::ptr::read(p as *const Align16<T, N>).0,
            8 => core::ptr::read(p as *const Align8<T, N>).0,
            4 => core::ptr::read(p as *const Align4<T, N>).0,
            _ => core::array::from_fn(|i| core::ptr::read(p.add(i))),
        }
    }
}

/// Writes `N` consecutive elements with one vector access when they span 4, 8 or 16 bytes, two
/// when they span 32 (same contract as [`load_vec`]).
#[inline(always)]
pub unsafe fn store_vec<T: Copy, const N: usize>(p: *mut T, v: [T; N]) {
    unsafe {
        match N * core::mem::size_of::<T>() {
            16 | 32 => core::ptr::write(p as *mut Align16<T, N>, Align16(v)),
            8 => core::ptr::write(p as *mut Align8<T, N>, Align8(v)),
            4 => core::ptr::write(p as *mut Align4<T, N>, Align4(v)),
            _ => {
                for (i, x) in v.into_iter().enumerate() {
                    core::ptr::write(p.add(i), x);
                }
            }
        }
    }
}

/// The predicates of an access at `g` (4-byte aligned) whose size is `$mask + 1` bytes: `a` when
/// `g` is aligned to the whole access, `b` otherwise; each only where the register `c` is
/// nonzero. PTX text, for the asm blocks below.
macro_rules! any_preds {
    ($mask:literal) => {
        concat!(".reg .pred p, a, b; .reg .b64 m;
         setp.ne.b32 p, {c}, 0;
         and.b64 m, {g}, ", $mask, "; setp.eq.and.b64 a, m, 0, p; setp.ne.and.b64 b, m, 0, p;")
    };
}

/// 16 bytes at `g` (4-byte aligned) into the words `w` when `c` is nonzero: one access where
/// `g` is 16-byte aligned, else four 4-byte ones, each form predicated, neither branched.
#[inline(always)]
unsafe fn ld16_any(g: u64, c: u32, w: &mut [u32; 4]) {
    unsafe {
        asm!(
            concat!("{{ ", any_preds!("15"), "
             @a ld.global.v4.b32 {{{x}, {y}, {z}, {t}}}, [{g}];
             @b ld.global.b32 {x}, [{g}]; @b ld.global.b32 {y}, [{g}+4];
             @b ld.global.b32 {z}, [{g}+8]; @b ld.global.b32 {t}, [{g}+12]; }}"),
            c = in(reg32) c, g = in(reg64) g,
            x = inout(reg32) w[0], y = inout(reg32) w[1], z = inout(reg32) w[2], t = inout(reg32) w[3],
            options(nostack, readonly, preserves_flags),
        );
    }
}

/// [`ld16_any`] for 8 bytes: one access where `g` is 8-byte aligned, else two 4-byte ones.
#[inline(always)]
unsafe fn ld8_any(g: u64, c: u32, w: &mut [u32; 2]) {
    unsafe {
        asm!(
            concat!("{{ ", any_preds!("7"), "
             @a ld.global.v2.b32 {{{x}, {y}}}, [{g}];
             @b ld.global.b32 {x}, [{g}]; @b ld.global.b32 {y}, [{g}+4]; }}"),
            c = in(reg32) c, g = in(reg64) g, x = inout(reg32) w[0], y = inout(reg32) w[1],
            options(nostack, readonly, preserves_flags),
        );
    }
}

/// The store counterpart of [`ld16_any`].
#[inline(always)]
unsafe fn st16_any(g: u64, c: u32, w: [u32; 4]) {
    unsafe {
        asm!(
            concat!("{{ ", any_preds!("15"), "
             @a st.global.v4.b32 [{g}], {{{x}, {y}, {z}, {t}}};
             @b st.global.b32 [{g}], {x}; @b st.global.b32 [{g}+4], {y};
             @b st.global.b32 [{g}+8], {z}; @b st.global.b32 [{g}+12], {t}; }}"),
            c = in(reg32) c, g = in(reg64) g,
            x = in(reg32) w[0], y = in(reg32) w[1], z = in(reg32) w[2], t = in(reg32) w[3],
            options(nostack, preserves_flags),
        );
    }
}

/// 16 bytes at `g` (16-byte aligned) into the words `w` when `c` is nonzero (one predicated
/// access).
#[inline(always)]
unsafe fn ld16_pred(g: u64, c: u32, w: &mut [u32; 4]) {
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.b32 p, {c}, 0; @p ld.global.v4.b32 {{{x}, {y}, {z}, {t}}}, [{g}]; }}",
            c = in(reg32) c, g = in(reg64) g,
            x = inout(reg32) w[0], y = inout(reg32) w[1], z = inout(reg32) w[2], t = inout(reg32) w[3],
            options(nostack, readonly, preserves_flags),
        );
    }
}

/// [`ld16_pred`] for 8 bytes (8-byte aligned).
#[inline(always)]
unsafe fn ld8_pred(g: u64, c: u32, w: &mut [u32; 2]) {
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.b32 p, {c}, 0; @p ld.global.v2.b32 {{{x}, {y}}}, [{g}]; }}",
            c = in(reg32) c, g = in(reg64) g, x = inout(reg32) w[0], y = inout(reg32) w[1],
            options(nostack, readonly, preserves_flags),
        );
    }
}

/// The store counterpart of [`ld16_pred`].
#[inline(always)]
unsafe fn st16_pred(g: u64, c: u32, w: [u32; 4]) {
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.b32 p, {c}, 0; @p st.global.v4.b32 [{g}], {{{x}, {y}, {z}, {t}}}; }}",
            c = in(reg32) c, g = in(reg64) g,
            x = in(reg32) w[0], y = in(reg32) w[1], z = in(reg32) w[2], t = in(reg32) w[3],
            options(nostack, preserves_flags),
        );
    }
}

/// The store counterpart of [`ld8_pred`].
#[inline(always)]
unsafe fn st8_pred(g: u64, c: u32, w: [u32; 2]) {
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.b32 p, {c}, 0; @p st.global.v2.b32 [{g}], {{{x}, {y}}}; }}",
            c = in(reg32) c, g = in(reg64) g, x = in(reg32) w[0], y = in(reg32) w[1],
            options(nostack, preserves_flags),
        );
    }
}

/// The store counterpart of [`ld8_any`].
#[inline(always)]
unsafe fn st8_any(g: u64, c: u32, w: [u32; 2]) {
    unsafe {
        asm!(
            concat!("{{ ", any_preds!("7"), "
             @a st.global.v2.b32 [{g}], {{{x}, {y}}};
             @b st.global.b32 [{g}], {x}; @b st.global.b32 [{g}+4], {y}; }}"),
            c = in(reg32) c, g = in(reg64) g, x = in(reg32) w[0], y = in(reg32) w[1],
            options(nostack, preserves_flags),
        );
    }
}

/// [`load_vec`] when `pred` holds, else `other`, for a chunk (8, 16 or 32 bytes) whose address
/// need only be 4-byte aligned: each 16 or 8 bytes are read by one access where the address
/// allows, else in 4-byte pieces, both forms predicated (global addresses are their generic
/// ones, as for `cp.async`) and neither branched, so the chunk takes the registers of the
/// aligned access (2-byte pieces would need temporaries: a 2-byte aligned chunk is the
/// caller's to send elsewhere). `aligned` (a constant of the calling code: it knows that the
/// chunk is aligned to its size) leaves the 4-byte pieces out, whose instructions issue even
/// where their predicate is false. Other sizes: element by element under a branch. The
/// elements are contiguous and, when `pred` holds, inside their buffer; else `p` is not read.
#[inline(always)]
pub unsafe fn load_vec_any<T: Copy, const N: usize>(p: *mut T, pred: bool, other: [T; N], aligned: bool) -> [T; N] {
    let bytes = N * core::mem::size_of::<T>();
    let (g, c) = (p as u64, pred as u32);
    unsafe {
        match bytes {
            16 => {
                let mut w: [u32; 4] = core::mem::transmute_copy(&other);
                if aligned { ld16_pred(g, c, &mut w) } else { ld16_any(g, c, &mut w) }
                core::mem::transmute_copy(&w)
            }
            32 => {
                let mut w: [[u32; 4]; 2] = core::mem::transmute_copy(&other);
                if aligned {
                    ld16_pred(g, c, &mut w[0]);
                    ld16_pred(g + 16, c, &mut w[1]);
                } else {
                    ld16_any(g, c, &mut w[0]);
                    ld16_any(g + 16, c, &mut w[1]);
                }
                core::mem::transmute_copy(&w)
            }
            8 => {
                let mut w: [u32; 2] = core::mem::transmute_copy(&other);
                if aligned { ld8_pred(g, c, &mut w) } else { ld8_any(g, c, &mut w) }
                core::mem::transmute_copy(&w)
            }
            _ => {
                if pred {
                    core::array::from_fn(|i| core::ptr::read(p.add(i)))
                } else {
                    other
                }
            }
        }
    }
}

/// [`store_vec`] when `pred` holds, else nothing, for a chunk whose address need only be 4-byte
/// aligned (the counterpart of [`load_vec_any`], `aligned` likewise).
#[inline(always)]
pub unsafe fn store_vec_any<T: Copy, const N: usize>(p: *mut T, pred: bool, v: [T; N], aligned: bool) {
    let bytes = N * core::mem::size_of::<T>();
    let (g, c) = (p as u64, pred as u32);
    unsafe {
        match bytes {
            16 if aligned => st16_pred(g, c, core::mem::transmute_copy(&v)),
            16 => st16_any(g, c, core::mem::transmute_copy(&v)),
            32 => {
                let w: [[u32; 4]; 2] = core::mem::transmute_copy(&v);
                if aligned {
                    st16_pred(g, c, w[0]);
                    st16_pred(g + 16, c, w[1]);
                } else {
                    st16_any(g, c, w[0]);
                    st16_any(g + 16, c, w[1]);
                }
            }
            8 if aligned => st8_pred(g, c, core::mem::transmute_copy(&v)),
            8 => st8_any(g, c, core::mem::transmute_copy(&v)),
            _ => {
                if pred {
                    for (i, x) in v.into_iter().enumerate() {
                        core::ptr::write(p.add(i), x);
                    }
                }
            }
        }
    }
}

/// Reads one element (the caller has checked the mask).
#[inline(always)]
pub unsafe fn load<T: Copy>(p: *mut T) -> T {
    unsafe { core::ptr::read(p) }
}

/// Writes one element (the caller has checked the mask).
#[inline(always)]
pub unsafe fn store<T: Copy>(p: *mut T, v: T) {
    unsafe { core::ptr::write(p, v) }
}

/// `a * b + c` in f32 with one rounding (`fma.rn.f32`).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    let v: f32;
    unsafe { asm!("fma.rn.f32 {v}, {a}, {b}, {c};", v = out(reg32) v, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack)) };
    v
}

/// Shared-memory (32-bit, `.shared` state space) address of the dynamic shared memory.
#[inline(always)]
pub fn smem_addr() -> u32 {
    let p: u32;
    unsafe { asm!("mov.u32 {p}, __kernel_smem;", p = out(reg32) p, options(pure, nomem, nostack)) };
    p
}

macro_rules! ldmatrix_x4 {
    ($(#[$doc:meta])* $name:ident, $qual:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(addr: u32) -> [u32; 4] {
            let (a, b, c, d): (u32, u32, u32, u32);
            unsafe {
                asm!(
                    concat!("ldmatrix.sync.aligned.m8n8.x4", $qual, ".shared.b16 {{{a}, {b}, {c}, {d}}}, [{addr}];"),
                    a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                    addr = in(reg32) addr,
                    options(nostack, readonly),
                )
            };
            [a, b, c, d]
        }
    };
}

ldmatrix_x4!(
    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8x8 b16 matrices; lane `l` gives the
    /// shared address of row `l % 8` of matrix `l / 8`. The result is an `mma` A fragment when
    /// lane `l` addresses row `l % 16`, column `8 * (l / 16)` of a 16x16 row-major tile.
    ldmatrix_x4, ""
);
ldmatrix_x4!(
    /// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: the `mma` B fragments of two adjacent
    /// 16x8 tiles of a row-major `[K, N]` matrix (registers 0-1: first tile, 2-3: second), when
    /// lane `l` addresses row `l % 16`, column `8 * (l / 16)` of the 16x16 pair.
    ldmatrix_x4_trans, ".trans"
);

/// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: the `mma` B fragment of a 16x8 tile of a `[N, K]`
/// (K-contiguous) matrix, when lane `l` addresses row `l % 8`, column `8 * (l / 8 % 2)`.
#[inline(always)]
pub fn ldmatrix_x2(addr: u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{a}, {b}}}, [{addr}];",
            a = out(reg32) a, b = out(reg32) b,
            addr = in(reg32) addr,
            options(nostack, readonly),
        )
    };
    [a, b]
}

/// `ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16`: the `mma` B fragment of a 16x8 tile of a
/// row-major `[K, N]` matrix, when lane `l` addresses row `l % 16` (column 0 of the tile).
#[inline(always)]
pub fn ldmatrix_x2_trans(addr: u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {{{a}, {b}}}, [{addr}];",
            a = out(reg32) a, b = out(reg32) b,
            addr = in(reg32) addr,
            options(nostack, readonly),
        )
    };
    [a, b]
}

macro_rules! mma_m16n8k16 {
    ($(#[$doc:meta])* $name:ident, $ty:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
            let (d0, d1, d2, d3): (f32, f32, f32, f32);
            unsafe {
                asm!(
                    concat!("mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty, ".f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};"),
                    d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                    c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
                    options(pure, nomem, nostack),
                )
            };
            [d0, d1, d2, d3]
        }
    };
}

mma_m16n8k16!(
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: `D = A * B + C` on one warp's fragments.
    mma_f16, "f16"
);
mma_m16n8k16!(
    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`.
    mma_bf16, "bf16"
);

/// `cp.async.cg.shared.global [saddr], [gptr], 16`: copies 16 bytes from global to shared
/// memory without going through registers. Both addresses must be 16-byte aligned.
#[inline(always)]
pub unsafe fn cp_async_16(saddr: u32, gptr: *const u8) {
    unsafe {
        asm!(
            "cp.async.cg.shared.global [{s}], [{g}], 16;",
            s = in(reg32) saddr,
            g = in(reg64) gptr as u64,
            options(nostack),
        )
    };
}

/// `cp.async.ca.shared.global [saddr], [gptr], 8`: copies 8 bytes from global to shared memory
/// without going through registers (a chunk of 8-bit `dot` operands). Both addresses must be
/// 8-byte aligned.
#[inline(always)]
pub unsafe fn cp_async_8(saddr: u32, gptr: *const u8) {
    unsafe {
        asm!(
            "cp.async.ca.shared.global [{s}], [{g}], 8;",
            s = in(reg32) saddr,
            g = in(reg64) gptr as u64,
            options(nostack),
        )
    };
}

/// `cp.async.ca.shared.global [saddr], [gptr], 4`: copies 4 bytes from global to shared memory
/// without going through registers. Both addresses must be 4-byte aligned.
#[inline(always)]
pub unsafe fn cp_async_4(saddr: u32, gptr: *const u8) {
    unsafe {
        asm!(
            "cp.async.ca.shared.global [{s}], [{g}], 4;",
            s = in(reg32) saddr,
            g = in(reg64) gptr as u64,
            options(nostack),
        )
    };
}

/// Copies `BYTES` (8 or 16) contiguous bytes from global to shared memory with `cp.async`, in
/// the widest pieces the global address's alignment allows (16, 8 or 4 bytes): a chunk of a
/// row whose length in bytes is a multiple of 4 or 8 but not of 16 still reaches shared memory
/// without going through registers. `saddr` is `BYTES`-aligned. Returns `false`, copying
/// nothing, when `gptr` is not 4-byte aligned.
#[inline(always)]
pub unsafe fn cp_async_pieces<const BYTES: usize>(saddr: u32, gptr: *const u8) -> bool {
    let a = gptr as usize;
    unsafe {
        if BYTES == 16 && a % 16 == 0 {
            cp_async_16(saddr, gptr);
        } else if a % 8 == 0 {
            let mut p = 0;
            while p < BYTES {
                cp_async_8(saddr + p as u32, gptr.add(p));
                p += 8;
            }
        } else if a % 4 == 0 {
            let mut p = 0;
            while p < BYTES {
                cp_async_4(saddr + p as u32, gptr.add(p));
                p += 4;
            }
        } else {
            return false;
        }
    }
    true
}

/// Copies `BYTES` (8 or 16; for 4-byte elements any multiple of 8) contiguous bytes of `ELEM`-byte
/// elements (1, 2 or 4) from global to shared memory: by `cp.async` in pieces where `gptr` is
/// 4-byte aligned ([`cp_async_pieces`]); else, where it is `ELEM`-aligned (a row whose length in
/// bytes is not a multiple of 4), through registers: 2-byte elements as [`load_chunk_halves`]
/// reads them, bytes one by one, all loads issued before the one `st.shared` of the chunk, so
/// that the chunk waits for global memory once. `saddr` is `BYTES`-aligned. Returns `false`,
/// copying nothing, when `gptr` is not `ELEM`-aligned.
#[inline(always)]
pub unsafe fn copy_chunk<const BYTES: usize, const ELEM: usize>(saddr: u32, gptr: *const u8) -> bool {
    const { assert!((ELEM == 4 || BYTES == 8 || BYTES == 16) && (ELEM == 1 || ELEM == 2 || ELEM == 4)) };
    unsafe {
        if cp_async_pieces::<BYTES>(saddr, gptr) {
            return true;
        }
        if ELEM == 4 || (gptr as usize) % ELEM != 0 {
            return false;
        }
        if ELEM == 2 && BYTES == 16 {
            store_chunk_halves(saddr, load_chunk_halves(gptr));
            return true;
        }
        let mut w = [0u32; 4];
        let mut i = 0;
        while i < BYTES {
            w[i / 4] |= (core::ptr::read(gptr.add(i)) as u32) << (8 * (i % 4));
            i += 1;
        }
        if BYTES == 16 {
            st_shared_v4(saddr, w);
        } else {
            asm!("st.shared.v2.u32 [{addr}], {{{a}, {b}}};", addr = in(reg32) saddr, a = in(reg32) w[0], b = in(reg32) w[1], options(nostack));
        }
    }
    true
}

/// The 16 bytes at `gptr` (2 bytes past a multiple of 4) as read for [`store_chunk_halves`]: the
/// first 2 bytes, three 4-byte words, the last 2 bytes (each zero-extended). Only loads: what
/// uses the values waits for them, so that several chunks' loads can be in flight at once.
///
/// # Safety
/// `gptr` must be 2 bytes past a multiple of 4, with 16 readable bytes.
#[inline(always)]
pub unsafe fn load_chunk_halves(gptr: *const u8) -> [u32; 5] {
    unsafe {
        [
            core::ptr::read(gptr as *const u16) as u32,
            core::ptr::read(gptr.add(2) as *const u32),
            core::ptr::read(gptr.add(6) as *const u32),
            core::ptr::read(gptr.add(10) as *const u32),
            core::ptr::read(gptr.add(14) as *const u16) as u32,
        ]
    }
}

/// Stores the 16 bytes read by [`load_chunk_halves`] at shared address `saddr` (16-byte
/// aligned) in one `st.shared.v4`. The halves are put together inside the same `asm` block, so
/// that the compiler cannot move that work (which waits for the loads) next to the loads.
#[inline(always)]
pub fn store_chunk_halves(saddr: u32, h: [u32; 5]) {
    unsafe {
        asm!(
            "{{",
            ".reg .b32 %w<4>;",
            "prmt.b32 %w0, {h0}, {h1}, 0x5410;",
            "prmt.b32 %w1, {h1}, {h2}, 0x5432;",
            "prmt.b32 %w2, {h2}, {h3}, 0x5432;",
            "prmt.b32 %w3, {h3}, {h4}, 0x5432;",
            "st.shared.v4.b32 [{addr}], {{%w0, %w1, %w2, %w3}};",
            "}}",
            addr = in(reg32) saddr, h0 = in(reg32) h[0], h1 = in(reg32) h[1], h2 = in(reg32) h[2], h3 = in(reg32) h[3], h4 = in(reg32) h[4],
            options(nostack),
        )
    };
}

/// `st.shared.v4.u32` of `w` at shared address `saddr` (16-byte aligned).
#[inline(always)]
fn st_shared_v4(saddr: u32, w: [u32; 4]) {
    unsafe {
        asm!(
            "st.shared.v4.u32 [{addr}], {{{a}, {b}, {c}, {d}}};",
            addr = in(reg32) saddr, a = in(reg32) w[0], b = in(reg32) w[1], c = in(reg32) w[2], d = in(reg32) w[3],
            options(nostack),
        )
    };
}

/// Widens, in shared memory, the 8-byte chunk of 8-bit values of type `T` at `from` into eight
/// f16 values at `to` (16-byte aligned): `ld.shared.v2`, the conversions, `st.shared.v4`.
#[inline(always)]
pub fn widen_shared<T: WidenPair>(from: u32, to: u32) {
    let (lo, hi): (u32, u32);
    unsafe { asm!("ld.shared.v2.u32 {{{a}, {b}}}, [{addr}];", a = out(reg32) lo, b = out(reg32) hi, addr = in(reg32) from, options(nostack, readonly)) };
    st_shared_v4(to, widen_words::<T>([lo, hi]));
}

/// Runs `f` in a function of its own, never inlined: the device lowering puts rarely taken code
/// there (the checked stores of a block whose fast path failed, the rest of a kernel after a K
/// loop's `cp.async` fallback), so that an entry's hot path, the tensor-map K loop, its prologue
/// and epilogue, is laid out in one piece (ptxas places the join of two branches after both, so
/// inline cold code sat between the K loop and the epilogue). The code it runs must not contain
/// `wgmma`: ptxas then serializes every `wgmma` of the calling entry.
#[inline(never)]
pub fn outline<R, F: FnOnce() -> R>(f: F) -> R {
    f()
}

/// Calls `f` in place (the device lowering runs a `move` closure so, on copies of the arrays
/// it captures).
#[inline(always)]
pub fn inline_call<R, F: FnOnce() -> R>(f: F) -> R {
    f()
}

/// `cp.async.wait_all`: this thread's outstanding `cp.async` copies are complete (a barrier
/// afterwards makes them visible to the whole block).
#[inline(always)]
pub fn cp_async_wait_all() {
    unsafe { asm!("cp.async.wait_all;", options(nostack)) };
}

/// Returns `x` unchanged through an `asm!` block the optimizer may not move, merge or hoist:
/// code computed from the result stays where it is written. The device lowering uses it so
/// that per-element address arithmetic of a rarely taken path is not hoisted out of a K loop
/// into registers the tensor-core accumulators need.
#[inline(always)]
pub fn opaque_usize(x: usize) -> usize {
    let r: u64;
    unsafe { asm!("mov.b64 {r}, {x};", r = out(reg64) r, x = in(reg64) x as u64, options(nomem, nostack)) };
    r as usize
}

/// `(a / b, a % b)` (truncating, as Rust's `/` and `%`) for `b != 0`, with one 32-bit unsigned
/// division when both fit in 32 bits unsigned (a few instructions; a 64-bit division is a long
/// subroutine on the GPU), else the 64-bit one.
#[inline(always)]
pub fn divrem(a: i64, b: i64) -> (i64, i64) {
    if (a as u64) <= u32::MAX as u64 && b > 0 && (b as u64) <= u32::MAX as u64 {
        let (x, y) = (a as u32, b as u32);
        let q = x / y;
        (q as i64, (x - q * y) as i64)
    } else {
        let q = a / b;
        (q, a - q * b)
    }
}

/// `red.shared.and.b32`: atomically ANDs `v` into the shared-memory word at `addr` (a shared
/// window address, see [`smem_addr`]).
#[inline(always)]
pub fn smem_and(addr: u32, v: u32) {
    unsafe { asm!("red.shared.and.b32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) v, options(nostack)) };
}

/// `cp.async.commit_group`: closes the group of this thread's `cp.async` copies issued since
/// the last commit (a software-pipeline stage).
#[inline(always)]
pub fn cp_async_commit() {
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// `cp.async.wait_group N`: waits until at most `N` of this thread's committed groups are still
/// in flight (the oldest ones complete first).
#[inline(always)]
pub fn cp_async_wait_group<const N: u32>() {
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack)) };
}

/// A value exchanged across a warp with `shfl.sync.bfly` (lane `l` gets the value of lane
/// `l ^ mask`; every lane of the warp must execute it). 8- and 16-bit values travel widened
/// to 32 bits, 64-bit ones as two halves.
pub trait Shuffle: Copy {
    fn shfl_xor(self, mask: u32) -> Self;
}

#[inline(always)]
fn shfl_xor_b32(v: u32, mask: u32) -> u32 {
    let r: u32;
    unsafe {
        asm!(
            "shfl.sync.bfly.b32 {r}, {v}, {m}, 0x1f, 0xffffffff;",
            r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask,
            options(nomem, nostack),
        )
    };
    r
}

impl Shuffle for u32 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        shfl_xor_b32(self, mask)
    }
}
impl Shuffle for i32 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        shfl_xor_b32(self as u32, mask) as i32
    }
}
macro_rules! small_shuffle {
    ($($t:ty => $w:ty),*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shfl_xor(self, mask: u32) -> Self {
                shfl_xor_b32(self as $w as u32, mask) as $t
            }
        }
    )*};
}
small_shuffle!(i8 => i32, i16 => i32, u8 => u32, u16 => u32);
impl Shuffle for f32 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        f32::from_bits(shfl_xor_b32(self.to_bits(), mask))
    }
}
impl Shuffle for u64 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        let lo = shfl_xor_b32(self as u32, mask) as u64;
        let hi = shfl_xor_b32((self >> 32) as u32, mask) as u64;
        (hi << 32) | lo
    }
}
impl Shuffle for i64 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        (self as u64).shfl_xor(mask) as i64
    }
}
impl Shuffle for f64 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        f64::from_bits(self.to_bits().shfl_xor(mask))
    }
}

/// `vote.sync.all`: whether `p` holds on every lane of the warp (every lane must execute it).
#[inline(always)]
pub fn warp_all(p: bool) -> bool {
    let r: u32;
    unsafe {
        asm!(
            "{{ .reg .pred p, q; setp.ne.u32 p, {x}, 0; vote.sync.all.pred q, p, 0xffffffff; selp.u32 {r}, 1, 0, q; }}",
            r = out(reg32) r, x = in(reg32) p as u32,
            options(nomem, nostack),
        )
    };
    r != 0
}

/// Two 16-bit values in one 32-bit word, `a` in the low half (little-endian memory order).
#[inline(always)]
pub fn pack2<T: Copy>(a: T, b: T) -> u32 {
    let (a, b): (u16, u16) = unsafe { (core::mem::transmute_copy(&a), core::mem::transmute_copy(&b)) };
    a as u32 | (b as u32) << 16
}

/// Two f32 values rounded to f16 (as [`f32_to_f16`]) in one 32-bit word, `lo` in the low half:
/// one `cvt.rn.f16x2.f32` instead of two conversions and a pack.
#[inline(always)]
pub fn pack_f16x2(lo: f32, hi: f32) -> u32 {
    let r: u32;
    unsafe { asm!("cvt.rn.f16x2.f32 {r}, {hi}, {lo};", r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack)) };
    r
}

/// `stmatrix.sync.aligned.m8n8.x4.shared.b16` (sm_90): stores four 8x8 b16 matrices; lane `l`
/// gives the shared address of row `l % 8` of matrix `l / 8`, and word `i` of every lane holds
/// its two elements of matrix `i` in the `mma` accumulator order (row `l / 4`, columns
/// `2 (l % 4)`, `2 (l % 4) + 1`).
#[inline(always)]
pub fn stmatrix_x4(addr: u32, v: [u32; 4]) {
    unsafe {
        asm!(
            "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{addr}], {{{a}, {b}, {c}, {d}}};",
            addr = in(reg32) addr, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
            options(nostack),
        )
    };
}

/// `ld.shared.v4.u32`: 16 bytes from a 16-byte aligned shared address.
#[inline(always)]
pub fn ld_shared_v4(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!(
            "ld.shared.v4.u32 {{{a}, {b}, {c}, {d}}}, [{addr}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            addr = in(reg32) addr,
            options(nostack, readonly),
        )
    };
    [a, b, c, d]
}

/// `bar.warp.sync`: the warp's lanes meet, and their shared-memory writes before it are seen by
/// their reads after it.
#[inline(always)]
pub fn warp_sync() {
    unsafe { asm!("bar.warp.sync 0xffffffff;", options(nostack)) };
}

/// Transposes the 4x4 words held by each quad of lanes (`4i .. 4i + 3`): lane `4i + q` gets
/// word `q` of lanes `4i, 4i + 1, 4i + 2, 4i + 3`, in that order (two butterfly exchanges; every
/// lane of the warp must execute it).
#[inline(always)]
pub fn quad_transpose(v: [u32; 4], lane: u32) -> [u32; 4] {
    let [mut a, mut b, mut c, mut d] = v;
    // Lane bit 0 against word bit 0.
    let odd = lane & 1 != 0;
    let (s0, s1) = if odd { (a, c) } else { (b, d) };
    let (r0, r1) = (shfl_xor_b32(s0, 1), shfl_xor_b32(s1, 1));
    if odd {
        a = r0;
        c = r1;
    } else {
        b = r0;
        d = r1;
    }
    // Lane bit 1 against word bit 1.
    let hi = lane & 2 != 0;
    let (s0, s1) = if hi { (a, b) } else { (c, d) };
    let (r0, r1) = (shfl_xor_b32(s0, 2), shfl_xor_b32(s1, 2));
    if hi {
        a = r0;
        b = r1;
    } else {
        c = r0;
        d = r1;
    }
    [a, b, c, d]
}

/// The identity of `max` / `min` reductions: the lowest and highest values of a type.
pub trait Bounds: Copy {
    fn lowest() -> Self;
    fn highest() -> Self;
}
macro_rules! bounds {
    ($($t:ty => $lo:expr, $hi:expr);*) => {$(
        impl Bounds for $t {
            #[inline(always)] fn lowest() -> Self { $lo }
            #[inline(always)] fn highest() -> Self { $hi }
        }
    )*};
}
bounds!(f32 => f32::NEG_INFINITY, f32::INFINITY; f64 => f64::NEG_INFINITY, f64::INFINITY;
        i32 => i32::MIN, i32::MAX; u32 => 0, u32::MAX; i64 => i64::MIN, i64::MAX;
        i8 => i8::MIN, i8::MAX; i16 => i16::MIN, i16::MAX; u8 => 0, u8::MAX; u16 => 0, u16::MAX);
