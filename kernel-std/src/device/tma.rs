//! Hopper (`sm_90a`) tensor memory accelerator: whole tiles copied from global to shared memory
//! by `cp.async.bulk.tensor`, described by a tensor map (`CUtensorMap`, 128 bytes, built by the
//! runtime at launch and kept in global memory), completing on an `mbarrier` in shared memory.
//!
//! Protocol of one pipeline buffer: one thread announces the bytes it is about to copy
//! ([`mbarrier_arrive_expect_tx`], which is also the barrier's single expected arrival) and
//! issues the copies ([`tma_load_2d`]); every thread that reads the buffer waits for the phase
//! to complete ([`mbarrier_wait`]). The `k`-th use of a barrier completes phase `k`, whose
//! parity the waiters pass.

use core::arch::asm;

/// Bytes of one tensor map; maps are stored this far apart (and aligned to 64 bytes).
pub const TENSOR_MAP_BYTES: u64 = 128;

/// `mbarrier.init.shared::cta.b64`: initializes the barrier at shared address `bar` (8-byte
/// aligned) for `count` arrivals per phase.
#[inline(always)]
pub fn mbarrier_init(bar: u32, count: u32) {
    unsafe { asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar, c = in(reg32) count, options(nostack)) };
}

/// `fence.mbarrier_init.release.cluster`: makes this thread's `mbarrier.init`s visible to the
/// async proxy (the copy engine completes transactions on them). Follow it with a barrier.
#[inline(always)]
pub fn fence_mbarrier_init() {
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) };
}

/// `mbarrier.arrive.expect_tx`: arrives on `bar` and adds `bytes` to the transaction count its
/// current phase waits for.
#[inline(always)]
pub fn mbarrier_arrive_expect_tx(bar: u32, bytes: u32) {
    unsafe { asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};", b = in(reg32) bar, n = in(reg32) bytes, options(nostack)) };
}

/// `mbarrier.arrive` (release semantics): counts one arrival of the barrier's current phase, after
/// this thread's earlier memory accesses (and the `wgmma` reads it waited for).
#[inline(always)]
pub fn mbarrier_arrive(bar: u32) {
    unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar, options(nostack)) };
}

/// `mbarrier.try_wait.parity`: whether the phase of `bar` with parity `parity` has completed
/// (the instruction itself waits a while before answering no).
#[inline(always)]
pub fn mbarrier_try_wait(bar: u32, parity: u32) -> bool {
    let done: u32;
    unsafe {
        asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {k}; selp.u32 {d}, 1, 0, p; }}",
            d = out(reg32) done,
            b = in(reg32) bar,
            k = in(reg32) parity,
            options(nostack),
        )
    };
    done != 0
}

/// Waits until the phase of `bar` with parity `parity` has completed: the copies it tracked are
/// visible to this thread (and to the `wgmma`s it issues). One `asm!` block with its own retry
/// loop (the label is local to the braces): a loop in Rust would put a loop back-edge between a
/// `wgmma` and its wait, and `ptxas` then serializes the `wgmma`s of big accumulators.
#[inline(always)]
#[allow(named_asm_labels)]
pub fn mbarrier_wait(bar: u32, parity: u32) {
    unsafe {
        asm!(
            "{{ .reg .pred p; WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {k}; @!p bra WAIT; }}",
            b = in(reg32) bar,
            k = in(reg32) parity,
            options(nostack),
        )
    };
}

/// `cp.async.bulk.tensor.2d` (tile mode): copies the box of the tensor map at generic address
/// `map` whose first element has coordinates (`c0` innermost, `c1`) into shared memory at `dst`
/// (aligned to the map's swizzle pattern), completing `bytes` transactions on `bar`.
///
/// # Safety
/// `map` must point to a valid tensor map in global memory that stays unchanged while the copy
/// runs; the box must fit the shared memory at `dst`.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const u8, bar: u32, c0: i32, c1: i32) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst,
            m = in(reg64) map as u64,
            b = in(reg32) bar,
            x = in(reg32) c0,
            y = in(reg32) c1,
            options(nostack),
        )
    };
}

/// `prefetch.tensormap`: starts fetching the tensor map at generic address `map` (in global
/// memory) into the copy engine's descriptor cache, so that a first copy issued later does not
/// wait for it (the maps' buffer is usually out of the L2 cache when a kernel starts).
///
/// # Safety
/// `map` must point to a tensor map in global memory.
#[inline(always)]
pub unsafe fn prefetch_tensormap(map: *const u8) {
    unsafe { asm!("prefetch.tensormap [{m}];", m = in(reg64) map as u64, options(nostack)) };
}

/// `mbarrier.inval.shared::cta.b64`: ends the barrier at `bar` (before its memory is reused or
/// initialized again).
#[inline(always)]
pub fn mbarrier_inval(bar: u32) {
    unsafe { asm!("mbarrier.inval.shared::cta.b64 [{b}];", b = in(reg32) bar, options(nostack)) };
}
