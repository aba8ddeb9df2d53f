//! Shared support for the integration tests: the kernels they run (built for the host and
//! for nvptx64), random inputs, float64 references, and the device the tests run on.
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

pub mod atomics;
pub mod debug;
pub mod eight_bit;
pub mod hints;
// The guide's chapters, compiled and run as doctests (`cargo test -p tests --doc`).
#[cfg(doctest)]
mod guide;
pub mod kernels;
pub mod math;
pub mod nested;
pub mod random;
pub mod reductions;
pub mod scans;
pub mod types;

#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;
