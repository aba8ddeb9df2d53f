//! # kernel-std: the block language
//!
//! Kernels are ordinary Rust functions under [`#[kernel]`](macro@kernel). Their bodies are
//! written in a small *block language* with Rust syntax and Triton's semantics: every value is
//! either a scalar or a *block* (an n-dimensional tile whose shape is fixed when the kernel is
//! compiled), and one *program instance* runs the body for each point of the launch grid.
//!
//! The macro parses the body, checks shapes and dtypes at `cargo build` time, and generates
//! the CPU implementation and the launcher (see `docs/ARCHITECTURE.md`). This crate holds the
//! attribute macros, the parameter types, and the [language reference](lang).
//!
//! ```ignore
//! use kernel_std::prelude::*;
//!
//! #[kernel(BLOCK_SIZE = [1024])]
//! pub fn add_kernel<const BLOCK_SIZE: i32>(x: Ptr<f32>, y: Ptr<f32>, out: Ptr<f32>, n: i32) {
//!     let offsets = program_id(0) * BLOCK_SIZE + arange(0, BLOCK_SIZE);
//!     let mask = offsets < n;
//!     let sum = load(x + offsets, mask) + load(y + offsets, mask);
//!     store(out + offsets, sum, mask);
//! }
//! ```
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch, stdarch_nvptx, core_intrinsics, link_llvm_intrinsics))]
// `core_intrinsics` is used (`is_val_statically_known`); the nightly's `unused_features` lint says otherwise.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features, unused_features))]

pub mod lang;
pub mod random;

#[cfg(target_arch = "nvptx64")]
pub mod device;

// `device::unroll` is plain Rust: its tests run on the host.
#[cfg(all(test, not(target_arch = "nvptx64")))]
#[path = "device/unroll.rs"]
mod unroll_on_host;
// So are the 8-bit float conversions (tested against the `float8` crate).
#[cfg(all(test, not(target_arch = "nvptx64")))]
#[path = "device/fp8.rs"]
mod fp8_on_host;

/// What generated code reaches; not a public API.
#[doc(hidden)]
pub mod __private {
    #[cfg(target_arch = "nvptx64")]
    pub use crate::device;
}

use core::marker::PhantomData;

pub use half::{bf16, f16};
/// The 8-bit float types of `Ptr<f8e4m3>` and `Ptr<f8e5m2>` on the host (the `float8` crate's).
#[cfg(not(target_arch = "nvptx64"))]
pub use float8::{F8E4M3 as f8e4m3, F8E5M2 as f8e5m2};
pub use kernel_macros::{autotune, helper, kernel, kernel_module};

/// Embeds the device code that the crate's build script built with `kernel_build::Builder`
/// (PTX, cubin and manifest per architecture, from `OUT_DIR`) in the binary, so that the
/// crate's kernels run on a GPU with nothing to find on disk. Invoke it once, at the crate
/// root (`src/lib.rs`), after the crate attributes:
///
/// ```ignore
/// #![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]
/// kernel_std::embed_ptx!();
/// ```
///
/// It defines the static the crate's `#[kernel]`s point at (the build script tells them to,
/// through the `KERNEL_EMBEDDED_PTX` variable it sets for the crate's compilation); on the
/// device it expands to nothing. The runtime prefers it to the search path, and
/// `KERNEL_PTX_DIR` to it (see `kernel_runtime`'s `cuda::ptx`).
#[macro_export]
macro_rules! embed_ptx {
    () => {
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(dead_code)]
        pub(crate) static __KERNEL_EMBEDDED_PTX: &[::kernel_runtime::__private::EmbeddedModule] = include!(concat!(
            env!(
                "OUT_DIR",
                "kernel_std::embed_ptx!() includes what the crate's build script built: add a build.rs calling kernel_build::Builder::new().build() (see the README)"
            ),
            "/kernel-embedded.rs"
        ));
    };
}

/// A pointer to elements of type `T` in device (or host) memory: the type of a kernel's
/// buffer parameters, like `a_ptr: Ptr<f16>`.
///
/// Inside a kernel, `ptr + offsets` with an integer block of offsets makes a block of
/// pointers of the same shape, which [`load`](lang#memory) and [`store`](lang#memory) take.
/// At launch, a `Ptr<T>` parameter is given a `&Tensor<T>` of the runtime.
///
/// ```ignore
/// #[kernel]
/// fn copy(src: Ptr<f32>, dst: Ptr<f32>) {
///     let i = arange(0, 128);
///     store(dst + i, load(src + i));
/// }
/// ```
pub struct Ptr<T>(PhantomData<*mut T>);

/// The value of a *function meta-parameter* (`const ACTIVATION: Option<Func>`): names a
/// `#[helper]` function of the same [`kernel_module`](macro@kernel_module).
pub struct Func;

/// What `use kernel_std::prelude::*;` brings into scope: the attributes and parameter types.
pub mod prelude {
    pub use crate::{autotune, bf16, f16, helper, kernel, kernel_module, Func, Ptr};
    #[cfg(not(target_arch = "nvptx64"))]
    pub use crate::{f8e4m3, f8e5m2};
}

/// Device code traps on panic (a kernel crate built for nvptx64 has no unwinding).
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    device::trap()
}
