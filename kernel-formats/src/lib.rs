//! # kernel-formats
//!
//! The files that more than one part of the `#[kernel]` project reads or writes, as serde
//! types: one definition for the writer and the reader.
//!
//! - [`manifest`]: `<crate>.manifest.json`, written by `cargo xtask build-ptx` beside the
//!   PTX and cubin it built (`target/ptx/<arch>/`), read by `kernel-runtime` to check that the
//!   PTX is the one that was validated and to load the matching cubin.
//! - [`autotune`]: the autotuning cache (`<cache dir>/autotune/<crate>.<kernel>.json`),
//!   written and read by `kernel-runtime`.
//! - [`ptx`]: the entry declarations of PTX text, which the device build and the runtime read.
//!
//! Both are JSON. Fields this version does not know are ignored when reading, so a newer
//! writer's additions do not make a file unreadable; a missing required field or a value of
//! the wrong type is an error.
//!
//! ```
//! use kernel_formats::{hash_text, fnv1a64};
//! assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
//! assert_eq!(hash_text(b"a"), "fnv1a64:af63dc4c8601ec8c");
//! ```

#![warn(missing_docs)]

pub mod autotune;
pub mod manifest;
pub mod ptx;

/// The `--cfg` name with which a device build keeps only the entries of the kernels it names:
/// `--cfg kernel_only` and `--cfg kernel_only="matmul_kernel"`, once per kernel (`cargo xtask
/// build-ptx --kernel`).
/// `#[kernel]` puts `#[cfg(any(not(kernel_only), kernel_only = "<kernel>"))]` on each device
/// item of a kernel.
pub const ONLY_CFG: &str = "kernel_only";

/// FNV-1a, 64 bits: the same in every process, Rust release and tool, and small enough to
/// recompute anywhere. The manifest records the PTX and cubin hashes with it, and the
/// autotuning cache keys decisions by the PTX's.
///
/// ```
/// assert_eq!(kernel_formats::fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
/// ```
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// A file's hash as the manifest records it: `fnv1a64:` and 16 lowercase hex digits.
///
/// ```
/// assert_eq!(kernel_formats::hash_text(b""), "fnv1a64:cbf29ce484222325");
/// ```
pub fn hash_text(bytes: &[u8]) -> String {
    format!("fnv1a64:{:016x}", fnv1a64(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }
}
