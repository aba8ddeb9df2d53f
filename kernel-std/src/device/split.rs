//! Split K loops: the last, partly filled wave of a launch can share each program's K loop
//! among several blocks, so that every SM has work until the end.
//!
//! The launch passes `dp` (the programs run whole, one block each, the first `dp` blocks) and
//! `parts` (the blocks that share each remaining program). Block `dp + j` runs part `j % parts`
//! of program `dp + j / parts`: a contiguous run of its K iterations ([`split_range`]). Each part
//! writes its partial accumulator to a workspace in global memory and counts itself on its
//! program's counter; the part that arrives last adds the partials in part order (so the sum
//! does not depend on which part finished last), resets the counter and runs the rest of the
//! program (the epilogue and its stores). The other parts end there.

use core::arch::asm;

use super::{divrem, num_programs, program_id};

/// What one block of a split launch runs.
#[derive(Clone, Copy)]
pub struct SplitBlock {
    /// The program id (`program_id(0)` of the kernel).
    pub pid: u32,
    /// Which part of the program's K loop this block runs, of `parts`.
    pub part: u32,
    /// Blocks that share the program (1: the block runs it whole).
    pub parts: u32,
    /// The program's index among the split ones (its counter and workspace slot).
    pub slot: u32,
}

/// The program and part of this block in a launch with `dp` whole programs and `parts` blocks
/// per split program.
#[inline(always)]
pub fn split_block(dp: u32, parts: u32) -> SplitBlock {
    let bid = program_id(0) as u32;
    if parts <= 1 || bid < dp {
        return SplitBlock { pid: bid, part: 0, parts: 1, slot: 0 };
    }
    let (q, r) = divrem(i64::from(bid - dp), i64::from(parts));
    SplitBlock { pid: dp + q as u32, part: r as u32, parts, slot: q as u32 }
}

/// The programs of the launch along x (`num_programs(0)` of the kernel): the whole ones plus
/// one per `parts` blocks after them.
#[inline(always)]
pub fn split_programs(dp: u32, parts: u32) -> i32 {
    let n = num_programs(0) as u32;
    if parts <= 1 || n <= dp {
        return n as i32;
    }
    (dp + (n - dp) / parts) as i32
}

/// The iterations `[first, first + count)` of a loop of `n` iterations that part `part` of
/// `parts` runs: contiguous runs that differ in length by at most one (some are empty when
/// `n < parts`).
#[inline(always)]
pub fn split_range(n: i64, part: u32, parts: u32) -> (i64, i64) {
    if parts <= 1 || n <= 0 {
        return (0, n);
    }
    let lo = divrem(n * i64::from(part), i64::from(parts)).0;
    let hi = divrem(n * i64::from(part + 1), i64::from(parts)).0;
    (lo, hi - lo)
}

/// `st.global.cg.v4.f32`: writes four floats to L2 (not L1), 16-byte aligned.
#[inline(always)]
pub unsafe fn st_cg_v4(p: *mut f32, v: [f32; 4]) {
    unsafe {
        asm!(
            "st.global.cg.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg64) p, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
            options(nostack),
        )
    };
}

/// `ld.global.cg.v4.f32`: reads four floats from L2 (never a stale L1 line), 16-byte aligned.
#[inline(always)]
pub unsafe fn ld_cg_v4(p: *const f32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    unsafe {
        asm!(
            "ld.global.cg.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            p = in(reg64) p, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            options(nostack, readonly),
        )
    };
    [a, b, c, d]
}

/// `st.global.cg.f32`.
#[inline(always)]
pub unsafe fn st_cg(p: *mut f32, v: f32) {
    unsafe { asm!("st.global.cg.f32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack)) };
}

/// `ld.global.cg.f32`.
#[inline(always)]
pub unsafe fn ld_cg(p: *const f32) -> f32 {
    let v: f32;
    unsafe { asm!("ld.global.cg.f32 {v}, [{p}];", p = in(reg64) p, v = out(reg32) v, options(nostack, readonly)) };
    v
}

/// `fence.acq_rel.gpu`: this thread's earlier memory accesses are ordered before its later ones
/// for every thread of the GPU (a release before signalling, an acquire after observing).
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
}

/// `atom.acq_rel.gpu.global.add.u32`: adds `v` to the word at `p` and returns its old value.
#[inline(always)]
pub unsafe fn atom_add_acq_rel_gpu(p: *mut u32, v: u32) -> u32 {
    let old: u32;
    unsafe { asm!("atom.acq_rel.gpu.global.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) p, v = in(reg32) v, options(nostack)) };
    old
}

/// Thread 0's part of the hand-over after every thread of the block has written its partial
/// accumulator (and run [`fence_acq_rel_gpu`] and a block barrier): counts the part on the
/// program's counter and returns whether it was the last of `parts`, in which case the
/// counter is reset for the next launch.
#[inline(always)]
pub unsafe fn split_arrive(counter: *mut u32, parts: u32) -> bool {
    unsafe {
        let last = atom_add_acq_rel_gpu(counter, 1) + 1 == parts;
        if last {
            core::ptr::write_volatile(counter, 0);
        }
        last
    }
}

/// Iterations of `for i in (s..e).step_by(t)` (counting down for a negative `t`).
#[inline(always)]
pub fn trip_count(s: i64, e: i64, t: i64) -> i64 {
    if t > 0 && e > s {
        (e - s + t - 1) / t
    } else if t < 0 && e < s {
        (s - e - t - 1) / (-t)
    } else {
        0
    }
}
