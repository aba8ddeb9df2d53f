//! Smoke-test fixture for `cargo xtask build-ptx`.
//!
//! Two hand-written kernels that exercise what the generated kernel crates rely on:
//! thread/block indices from `core::arch::nvptx`, a call into `core` (slice bounds
//! check → panic path), static shared memory declared with `global_asm!`, and
//! `bar.sync` through `asm!`. Built only for `nvptx64-nvidia-cuda`; on any other
//! target the crate is empty.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch, stdarch_nvptx))]

#[cfg(target_arch = "nvptx64")]
mod device {
    use core::arch::nvptx::{_block_dim_x, _block_idx_x, _thread_idx_x};
    use core::arch::{asm, global_asm};

    /// Threads per block that `smoke_block_sum` is written for.
    pub const SUM_THREADS: usize = 256;

    // Static shared memory: one f32 per thread of the block.
    global_asm!(".shared .align 16 .b8 SMOKE_SUM_SMEM[1024];");

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        // SAFETY: `trap` aborts the kernel; it has no operands.
        unsafe { asm!("trap;", options(noreturn)) }
    }

    #[inline(always)]
    fn global_index() -> usize {
        // SAFETY: reading special registers has no preconditions.
        unsafe { (_block_idx_x() * _block_dim_x() + _thread_idx_x()) as usize }
    }

    /// `out[i] = x[i] + y[i]` for `i < n`, one element per thread.
    ///
    /// # Safety
    /// `x`, `y` and `out` point to at least `n` elements.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn smoke_vector_add(x: *const f32, y: *const f32, out: *mut f32, n: i32) {
        let i = global_index();
        if i < n as usize {
            *out.add(i) = *x.add(i) + *y.add(i);
        }
    }

    #[inline(always)]
    fn smem_base() -> u32 {
        let addr: u32;
        // SAFETY: takes the shared-window address of a symbol declared above.
        unsafe { asm!("mov.u32 {a}, SMOKE_SUM_SMEM;", a = out(reg32) addr, options(pure, nomem, nostack)) };
        addr
    }

    #[inline(always)]
    fn st_shared(addr: u32, v: f32) {
        // SAFETY: callers pass addresses inside SMOKE_SUM_SMEM.
        unsafe { asm!("st.shared.f32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) v.to_bits(), options(nostack)) };
    }

    #[inline(always)]
    fn ld_shared(addr: u32) -> f32 {
        let bits: u32;
        // SAFETY: callers pass addresses inside SMOKE_SUM_SMEM.
        unsafe {
            asm!("ld.shared.f32 {v}, [{a}];", v = out(reg32) bits, a = in(reg32) addr, options(nostack, readonly))
        };
        f32::from_bits(bits)
    }

    #[inline(always)]
    fn barrier() {
        // SAFETY: every thread of the block reaches each call (uniform control flow).
        unsafe { asm!("bar.sync 0;", options(nostack)) };
    }

    /// Block-wide sum: `out[block] = sum(x[block * 256 .. block * 256 + 256])`, masked by `n`.
    /// Launch with exactly [`SUM_THREADS`] threads per block. `out` is indexed with a bounds
    /// check against `out_len`, so the kernel links `core`'s panic path (which traps).
    ///
    /// # Safety
    /// `x` points to `n` elements and `out` to `out_len` elements.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn smoke_block_sum(x: *const f32, n: i32, out: *mut f32, out_len: i32) {
        let tid = _thread_idx_x() as usize;
        let i = global_index();
        let v = if i < n as usize { *x.add(i) } else { 0.0 };
        let base = smem_base();
        st_shared(base + 4 * tid as u32, v);
        barrier();
        let mut s = SUM_THREADS / 2;
        while s > 0 {
            if tid < s {
                let a = ld_shared(base + 4 * tid as u32);
                let b = ld_shared(base + 4 * (tid + s) as u32);
                st_shared(base + 4 * tid as u32, a + b);
            }
            barrier();
            s /= 2;
        }
        if tid == 0 {
            let out = core::slice::from_raw_parts_mut(out, out_len.max(0) as usize);
            out[_block_idx_x() as usize] = ld_shared(base);
        }
    }
}
