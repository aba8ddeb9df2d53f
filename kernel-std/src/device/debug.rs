//! The debugging builtins on the GPU: `device_assert` records its first failure of a launch in
//! the fault record ([`report_assert`]), `device_print` is the GPU's `printf` (`vprintf`).

use super::{bar_sync, smem_addr, thread_idx, Elem, BF16, F16, F8E4M3, F8E5M2};
use core::arch::asm;

unsafe extern "C" {
    /// The GPU's `printf` (a PTX system call): `format` a NUL-terminated string, `args` the
    /// arguments, each at its natural alignment.
    fn vprintf(format: *const u8, args: *const u8) -> i32;
}

/// The parameter word of a fault record that holds a failed assertion (see [`report_assert`]);
/// an out-of-bounds access has a parameter index there, or `u32::MAX`.
pub const ASSERT_PARAM: u32 = u32::MAX - 1;

/// Bit of the operand word of a fault record set for an assertion on a scalar (no element index).
pub const ASSERT_SCALAR: u32 = 1 << 31;

/// Records a failed `device_assert` in the launch's fault record if nothing was recorded
/// before (as [`super::record_fault`]): the words are `[set, tag, ASSERT_PARAM, line, index lo,
/// index hi, column, operands, pid x, pid y, pid z, value 0 lo, value 0 hi, value 1 lo,
/// value 1 hi]`. `operands` is the number of operand values, their dtype codes in bits 8..16
/// and 16..24 (the order of the IR's dtypes: f16, bf16, f32, f64, i32, u32, i64, bool) and
/// [`ASSERT_SCALAR`]; `values` are their bits ([`AssertBits`]).
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub fn report_assert(record: *mut u32, tag: u32, line: u32, column: u32, index: u64, operands: u32, pid: [u32; 3], values: [u64; 2]) {
    let old: u32;
    unsafe {
        asm!("atom.global.cas.b32 {o}, [{r}], 0, 1;", o = out(reg32) old, r = in(reg64) record as u64, options(nostack));
        if old == 0 {
            let [v0, v1] = values;
            let words = [
                tag, ASSERT_PARAM, line, index as u32, (index >> 32) as u32, column, operands, pid[0], pid[1], pid[2],
                v0 as u32, (v0 >> 32) as u32, v1 as u32, (v1 >> 32) as u32,
            ];
            for (i, w) in words.into_iter().enumerate() {
                core::ptr::write_volatile(record.add(1 + i), w);
            }
        }
    }
}

/// The smallest `v` of the block's threads, through the shared-memory word at byte offset
/// `slot` of the dynamic shared memory (three block barriers). Every thread of the block calls
/// it; `u32::MAX` stands for "none".
#[inline(always)]
pub fn block_min_u32(v: u32, slot: usize) -> u32 {
    let addr = smem_addr() + slot as u32;
    unsafe {
        if thread_idx() == 0 {
            asm!("st.shared.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) u32::MAX, options(nostack));
        }
        bar_sync();
        if v != u32::MAX {
            asm!("red.shared.min.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) v, options(nostack));
        }
        bar_sync();
        let m: u32;
        asm!("ld.shared.u32 {m}, [{a}];", m = out(reg32) m, a = in(reg32) addr, options(nostack));
        bar_sync();
        m
    }
}

/// A value's bits as a fault record holds them (the runtime decodes them by dtype).
pub trait AssertBits: Copy {
    fn assert_bits(self) -> u64;
}

macro_rules! assert_bits {
    ($($t:ty => |$x:ident| $e:expr),* $(,)?) => {$(
        impl AssertBits for $t {
            #[inline(always)]
            fn assert_bits(self) -> u64 {
                let $x = self;
                $e
            }
        }
    )*};
}
assert_bits!(
    F16 => |x| x.0 as u64,
    BF16 => |x| x.0 as u64,
    F8E4M3 => |x| x.0 as u64,
    F8E5M2 => |x| x.0 as u64,
    f32 => |x| x.to_bits() as u64,
    f64 => |x| x.to_bits(),
    i32 => |x| x as u32 as u64,
    u32 => |x| x as u64,
    i64 => |x| x as u64,
    bool => |x| x as u64,
    i8 => |x| x as u8 as u64,
    i16 => |x| x as u16 as u64,
    u8 => |x| x as u64,
    u16 => |x| x as u64,
);

/// A value as an argument of [`print`]: 8 bytes, for the conversion the macro writes in the
/// format (`kernel-macros`' `print_spec`): floats as doubles (`%.9g` for f32, `%.17g` for f64,
/// `%.5g` for f16, `%.4g` for bf16: enough digits to tell values apart), integers as 64-bit
/// ones (`%lld`, `%llu`), bools as the address of `true` or `false` (`%s`).
pub trait PrintArg: Copy {
    fn print_arg(self) -> u64;
}

macro_rules! print_arg {
    ($($t:ty => |$x:ident| $e:expr),* $(,)?) => {$(
        impl PrintArg for $t {
            #[inline(always)]
            fn print_arg(self) -> u64 {
                let $x = self;
                $e
            }
        }
    )*};
}
print_arg!(
    F16 => |x| (super::f16_to_f32(x) as f64).to_bits(),
    BF16 => |x| (super::bf16_to_f32(x) as f64).to_bits(),
    F8E4M3 => |x| x.to_f64().to_bits(),
    F8E5M2 => |x| x.to_f64().to_bits(),
    f32 => |x| (x as f64).to_bits(),
    f64 => |x| x.to_bits(),
    i32 => |x| x as i64 as u64,
    u32 => |x| x as u64,
    i64 => |x| x as u64,
    bool => |x| (if x { b"true\0".as_ptr() } else { b"false\0".as_ptr() }) as u64,
    i8 => |x| x as i64 as u64,
    i16 => |x| x as i64 as u64,
    u8 => |x| x as u64,
    u16 => |x| x as u64,
);

/// `printf(format, args...)` with every argument 8 bytes (`%lld`, `%llu`, `%g` of a double, `%s`);
/// `format` ends with a NUL byte.
#[inline(always)]
pub fn print<const N: usize>(format: &[u8], args: [u64; N]) {
    unsafe { vprintf(format.as_ptr(), args.as_ptr() as *const u8) };
}
