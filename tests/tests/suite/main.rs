//! The integration tests, one module per subject, in one test binary, so that the examples and
//! test kernels are linked, and the CPU backend instantiated for them, once. Run one subject
//! with a filter: `cargo test -p tests --test suite matmul::`. With `KERNEL_TEST_DEVICE=cuda`
//! the kernels run on the GPU (`scripts/gpu-check.sh` runs the GPU subjects one by one).

mod atomics;
mod attention;
mod batched_matmul;
mod cpu_errors;
mod debug;
mod eight_bit;
mod hints;
mod guide;
mod kernels;
mod language;
mod launch_errors;
mod layer_norm;
mod linear;
mod math;
mod matmul;
mod matmul_8bit;
mod matmul_persistent;
mod matmul_split_k;
mod nested;
mod numerics;
mod random;
mod reductions;
mod scans;
mod softmax;
mod tensors;
mod types;
