//! The guide's chapters (`docs/guide/`) as doctests: `cargo test -p tests --doc` compiles and
//! runs every Rust block of them (on the CPU backend), checks that every `compile_fail` block
//! fails, and compiles the `no_run` ones.

#[doc = include_str!("../../docs/guide/README.md")]
pub struct Guide;

#[doc = include_str!("../../docs/guide/01-vector-add.md")]
pub struct VectorAdd;

#[doc = include_str!("../../docs/guide/02-softmax.md")]
pub struct Softmax;

#[doc = include_str!("../../docs/guide/03-matmul.md")]
pub struct Matmul;

/// Its blocks use the CUDA and DLPack APIs: the `cuda` and `dlpack` features (both default).
#[cfg(all(feature = "cuda", feature = "dlpack"))]
#[doc = include_str!("../../docs/guide/04-your-crate.md")]
pub struct YourCrate;

#[doc = include_str!("../../docs/guide/05-errors.md")]
pub struct Errors;
