//! Hopper (`sm_90a`) warpgroup matrix multiply: `wgmma.mma_async` with both operands read from
//! shared memory through matrix descriptors (or A from registers: the f16 `_rs` forms), and the
//! fences and waits around it.
//!
//! A warpgroup is 4 consecutive warps starting at a warp index divisible by 4; every thread of
//! it executes each of these instructions. The f32 accumulator of an `m64nNk16` instruction is
//! `N / 2` registers per thread: for each 8-column slice `s`, registers `4s, 4s + 1` hold row
//! `16 * (warp % 4) + lane / 4`, columns `8s + 2 * (lane % 4) + {0, 1}`, and `4s + 2, 4s + 3`
//! the same columns 8 rows below (the `mma.sync` C layout, once per slice).
//!
//! The accumulator registers are `d[OFF..OFF + N / 2]` of the caller's register array (const
//! indices, so the array stays in registers). The `mma_async` writes them asynchronously: read
//! them only after [`wgmma_wait`] and the matching `wgmma_tie_n*`, which ties every register to a
//! point after the wait so that no copy or use of a register is scheduled before it.

use core::arch::asm;

/// Shared-memory matrix descriptor of a `wgmma` operand: start address, leading and stride
/// byte offsets (each a multiple of 16 below 256 KiB), and the swizzle mode (`0` none,
/// `1` 128-byte, `2` 64-byte, `3` 32-byte); the matrix base offset is 0 (tiles start on a whole
/// swizzle pattern).
#[inline(always)]
pub const fn wgmma_desc(addr: u32, lbo: u32, sbo: u32, swizzle: u64) -> u64 {
    (((addr as u64) & 0x3ffff) >> 4) | ((((lbo as u64) & 0x3ffff) >> 4) << 16) | ((((sbo as u64) & 0x3ffff) >> 4) << 32) | (swizzle << 62)
}

/// The swizzle mode of [`wgmma_desc`] for rows of `bytes` bytes (32, 64 or 128).
#[inline(always)]
pub const fn wgmma_swizzle_mode(bytes: usize) -> u64 {
    match bytes {
        128 => 1,
        64 => 2,
        32 => 3,
        _ => 0,
    }
}

/// `wgmma.fence.sync.aligned`: orders this thread's earlier register and shared-memory
/// accesses before the next `wgmma.mma_async`.
#[inline(always)]
pub fn wgmma_fence() {
    unsafe { asm!("wgmma.fence.sync.aligned;", options(nostack)) };
}

/// `wgmma.commit_group.sync.aligned`: closes the group of `wgmma.mma_async` issued since the
/// last commit.
#[inline(always)]
pub fn wgmma_commit() {
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` committed groups are pending.
#[inline(always)]
pub fn wgmma_wait<const N: u32>() {
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) };
}

/// `fence.proxy.async.shared::cta`: makes this thread's earlier writes to shared memory
/// (ordinary stores and `cp.async`) visible to the async proxy that `wgmma` reads through.
/// Issue it before the barrier that precedes the `wgmma`.
#[inline(always)]
pub fn fence_proxy_async() {
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

macro_rules! wgmma_m64 {
    ($name:ident, $n:literal, $ty:literal, [$first:literal $($i:literal)*]) => {
        #[doc = concat!("`wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty, "`: `D += A * B` for the warpgroup, ")]
        #[doc = "A (64x16) and B (16xN) described by `a` and `b`, each K-major (`TA`, `TB` = 0) or"]
        #[doc = "M/N-major (1: the instruction's transpose bits); `D` is"]
        #[doc = "`d[OFF..OFF + N / 2]`. Asynchronous: see the module documentation."]
        #[inline(always)]
        pub unsafe fn $name<const S: usize, const OFF: usize, const TA: u32, const TB: u32>(d: &mut [f32; S], a: u64, b: u64) {
            unsafe {
                asm!(
                    concat!(
                        "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", $first, "}" $(, ", {", $i, "}")*, "}}, {a}, {b}, p, 1, 1, {ta}, {tb}; }}"
                    ),
                    inout(reg32) d[OFF + $first], $(inout(reg32) d[OFF + $i],)*
                    a = in(reg64) a, b = in(reg64) b, one = in(reg32) 1u32, ta = const TA, tb = const TB,
                    options(nostack),
                )
            }
        }
    };
}

macro_rules! wgmma_m64_rs {
    ($name:ident, $n:literal, $ty:literal, [$first:literal $($i:literal)*]) => {
        #[doc = concat!("`wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty, "` with A in registers: `D += A * B` for the warpgroup, ")]
        #[doc = "A (64x16) the four `.b32` registers `a` of each thread (the `mma.sync` A fragment of"]
        #[doc = "its warp's 16 rows: pairs of columns `2 (lane % 4)` and 8 past, rows `lane / 4` and 8"]
        #[doc = "below), B (16xN) described by `b`, K-major (`TB` = 0) or N-major (1); `D` is"]
        #[doc = "`d[OFF..OFF + N / 2]`. Asynchronous: see the module documentation."]
        #[inline(always)]
        pub unsafe fn $name<const S: usize, const OFF: usize, const TB: u32>(d: &mut [f32; S], a: [u32; 4], b: u64) {
            unsafe {
                asm!(
                    concat!(
                        "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", $first, "}" $(, ", {", $i, "}")*, "}}, {{{a0}, {a1}, {a2}, {a3}}}, {b}, p, 1, 1, {tb}; }}"
                    ),
                    inout(reg32) d[OFF + $first], $(inout(reg32) d[OFF + $i],)*
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    b = in(reg64) b, one = in(reg32) 1u32, tb = const TB,
                    options(nostack),
                )
            }
        }
    };
}

macro_rules! wgmma_tie {
    ($name:ident, [$($i:literal)*]) => {
        /// Ties the accumulator registers `d[OFF..]` of one `wgmma` to this point (an empty
        /// `asm!` that reads and writes each): call after [`wgmma_wait`].
        #[inline(always)]
        pub fn $name<const S: usize, const OFF: usize>(d: &mut [f32; S]) {
            unsafe { asm!(concat!("// tie" $(, " {", $i, "}")*), $(inout(reg32) d[OFF + $i],)* options(nostack)) }
        }
    };
}

wgmma_m64!(wgmma_m64n16k16_f16, "16", "f16", [0 1 2 3 4 5 6 7]);
wgmma_m64_rs!(wgmma_m64n16k16_f16_rs, "16", "f16", [0 1 2 3 4 5 6 7]);
wgmma_m64!(wgmma_m64n16k16_bf16, "16", "bf16", [0 1 2 3 4 5 6 7]);
wgmma_tie!(wgmma_tie_n16, [0 1 2 3 4 5 6 7]);
wgmma_m64!(wgmma_m64n32k16_f16, "32", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]);
wgmma_m64_rs!(wgmma_m64n32k16_f16_rs, "32", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]);
wgmma_m64!(wgmma_m64n32k16_bf16, "32", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]);
wgmma_tie!(wgmma_tie_n32, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]);
wgmma_m64!(wgmma_m64n64k16_f16, "64", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
wgmma_m64_rs!(wgmma_m64n64k16_f16_rs, "64", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
wgmma_m64!(wgmma_m64n64k16_bf16, "64", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
wgmma_tie!(wgmma_tie_n64, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
wgmma_m64!(wgmma_m64n128k16_f16, "128", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
wgmma_m64_rs!(wgmma_m64n128k16_f16_rs, "128", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
wgmma_m64!(wgmma_m64n128k16_bf16, "128", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
wgmma_tie!(wgmma_tie_n128, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
wgmma_m64!(wgmma_m64n192k16_f16, "192", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95]);
wgmma_m64_rs!(wgmma_m64n192k16_f16_rs, "192", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95]);
wgmma_m64!(wgmma_m64n192k16_bf16, "192", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95]);
wgmma_tie!(wgmma_tie_n192, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95]);
wgmma_m64!(wgmma_m64n256k16_f16, "256", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]);
wgmma_m64_rs!(wgmma_m64n256k16_f16_rs, "256", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]);
wgmma_m64!(wgmma_m64n256k16_bf16, "256", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]);
wgmma_tie!(wgmma_tie_n256, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]);
