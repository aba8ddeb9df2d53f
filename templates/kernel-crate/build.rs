//! Builds the crate's kernels for the GPU (PTX, cubin, manifest per architecture, in OUT_DIR);
//! `kernel_std::embed_ptx!()` in src/lib.rs puts them in the binary.
fn main() -> kernel_build::Result<()> {
    kernel_build::Builder::new().arch("sm_90a").arch("sm_80").build()
}
