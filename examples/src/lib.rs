//! Example kernels written in the block language, with the wrappers that check shapes,
//! allocate outputs and launch them. The runnable examples in `examples/`
//! (`cargo run --release --example matmul`, `vector_add`, `bench_cpu`, `bench_matmul`) run them.
//!
//! The crate builds for the host (wrappers, CPU backend, launchers) and for `nvptx64`
//! (`cargo xtask build-ptx`: one device entry point per kernel instance).
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

pub mod activation;
pub mod attention;
pub mod batched_matmul;
pub mod dropout;
pub mod layer_norm;
pub mod linear;
#[cfg(not(target_arch = "nvptx64"))]
pub mod logging;
pub mod matmul;
pub mod matmul_8bit;
pub mod matmul_persistent;
pub mod matmul_split_k;
pub mod softmax;
pub mod vector_add;
