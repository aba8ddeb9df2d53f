//! The split of each multiprocessor's on-chip memory between shared memory and the L1 cache that
//! a kernel asks for (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`): enough shared memory
//! for as many blocks as its registers and threads let run at once, the rest left to L1. A
//! kernel with a few bytes of shared memory (a reduction's partials) that reads its data more
//! than once (layer norm's three passes over a row) keeps those data in L1; with the largest
//! shared-memory split L1 is a tenth of the memory.

/// What one multiprocessor of a device holds (`cuDeviceGetAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SmLimits {
    /// Shared memory (`MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`), bytes.
    pub(crate) shared: u32,
    /// 32-bit registers (`MAX_REGISTERS_PER_MULTIPROCESSOR`).
    pub(crate) registers: u32,
    /// Resident threads (`MAX_THREADS_PER_MULTIPROCESSOR`).
    pub(crate) threads: u32,
    /// Resident blocks (`MAX_BLOCKS_PER_MULTIPROCESSOR`).
    pub(crate) blocks: u32,
    /// Shared memory the system reserves per block (`RESERVED_SHARED_MEMORY_PER_BLOCK`), bytes.
    pub(crate) reserved_per_block: u32,
    /// Compute capability major version (the shared-memory sizes a multiprocessor supports).
    pub(crate) cc_major: u32,
}

/// The shared-memory capacities (KB) a multiprocessor of compute capability 8.x and 9.x can be
/// configured with (CUDA C++ Programming Guide, "Shared Memory" of those architectures); sizes
/// above the device's maximum are skipped.
const SHARED_SIZES_KB: [u32; 10] = [0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

/// The carveout, in per cent of `limits.shared`, for a kernel whose blocks take `shared` bytes
/// of shared memory, `threads` threads and `regs` registers per thread: the smallest supported
/// size that holds every block the registers, threads and block limit allow on one
/// multiprocessor (on other architectures than 8.x and 9.x, that many bytes rounded up).
pub(crate) fn carveout_percent(limits: &SmLimits, shared: u64, threads: u32, regs: u32) -> u32 {
    if limits.shared == 0 || threads == 0 {
        return 100;
    }
    let warps = threads.div_ceil(32);
    // Registers are allocated per warp, in units of 256 (8 per thread).
    let regs_per_block = warps * (regs.max(1) * 32).div_ceil(256) * 256;
    let blocks = (limits.threads / threads).min(limits.registers / regs_per_block.max(1)).min(limits.blocks).max(1);
    let need = u64::from(blocks) * (shared + u64::from(limits.reserved_per_block));
    let max = u64::from(limits.shared);
    let bytes = if matches!(limits.cc_major, 8 | 9) {
        SHARED_SIZES_KB.iter().map(|kb| u64::from(*kb) * 1024).filter(|b| *b <= max).find(|b| *b >= need).unwrap_or(max)
    } else {
        need.min(max)
    };
    u32::try_from((bytes * 100).div_ceil(max)).unwrap_or(100).min(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: SmLimits = SmLimits { shared: 228 * 1024, registers: 65536, threads: 2048, blocks: 32, reserved_per_block: 1024, cc_major: 9 };

    /// The percentage that names a supported size of `kb` KB (rounded up: at least that size).
    fn pct(kb: u64) -> u32 {
        (kb * 1024 * 100).div_ceil(u64::from(H100.shared)) as u32
    }

    #[test]
    fn small_shared_memory_leaves_the_rest_to_l1() {
        // A reduction's 32 bytes, 128 threads of 40 registers: 12 blocks (registers), 12 KB.
        assert_eq!(carveout_percent(&H100, 32, 128, 40), pct(16));
        // 256 threads of 80 registers: 3 blocks, 3 KB: the 8 KB size.
        assert_eq!(carveout_percent(&H100, 32, 256, 80), pct(8));
        // 32 threads of 16 registers: the block limit (32) binds: 32 * 1056 bytes = 33 KB.
        assert_eq!(carveout_percent(&H100, 32, 32, 16), pct(64));
    }

    #[test]
    fn large_tiles_take_what_their_blocks_need() {
        // Two 100 KB blocks (registers allow 2 of 256 threads at 128 registers): all of it.
        assert_eq!(carveout_percent(&H100, 100 * 1024, 256, 128), 100);
        // One 200 KB block: the largest size.
        assert_eq!(carveout_percent(&H100, 200 * 1024, 256, 240), 100);
        // 50 KB blocks of 128 threads at 168 registers: 3 blocks, 153 KB: the 164 KB size.
        assert_eq!(carveout_percent(&H100, 50 * 1024, 128, 168), pct(164));
    }

    #[test]
    fn other_architectures_take_the_bytes_needed() {
        let other = SmLimits { cc_major: 10, ..H100 };
        let p = carveout_percent(&other, 32, 128, 40);
        assert!((5..=6).contains(&p), "{p}");
        assert_eq!(carveout_percent(&SmLimits { shared: 0, ..H100 }, 32, 128, 40), 100);
    }
}
