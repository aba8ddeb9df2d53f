//! Example kernels written in the block language, with the wrappers that check shapes,
//! allocate outputs and launch them. The binaries in `src/bin` run them.

pub mod matmul;
pub mod softmax;
pub mod vector_add;
