//! Procedural macros of the block kernel language. See `kernel-std` for the language and
//! `docs/ARCHITECTURE.md` for the pipeline: `signature`/`attr` read the declaration,
//! `instances` collects what can run, `lower` (with the rules of `check`) builds the typed IR
//! of `ir`, and `expand_host`/`expand_cpu` generate code.

mod attr;
mod check;
mod contract;
mod depth;
mod diag;
mod expand_cpu;
mod expand_device;
mod expand_host;
mod hints;
mod instances;
mod ir;
mod kernel;
mod lower;
mod module;
mod recover;
mod shape;
mod signature;

/// Fuzzing of the macros' entry points (`cargo test -p kernel-macros fuzz`).
#[cfg(test)]
#[path = "../tests/fuzz/mod.rs"]
mod fuzz;

/// The code generator's snapshot suite (`KERNEL_BLESS=1 cargo test -p kernel-macros snapshots`
/// rewrites the snapshots).
#[cfg(test)]
#[path = "../tests/codegen/snapshots.rs"]
mod snapshots;

use proc_macro::TokenStream;
use std::collections::HashMap;

/// Declares a block kernel. See the `kernel-std` crate documentation.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    if let Some(e) = kernel::not_a_free_fn(&item) {
        return e.to_compile_error().into();
    }
    match syn::parse2::<syn::ItemFn>(item) {
        Ok(f) => expand_kernel_fn(attr.into(), f).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `#[kernel]` outside a module: the body's nesting is limited first (`depth.rs`).
fn expand_kernel_fn(attr: proc_macro2::TokenStream, mut f: syn::ItemFn) -> proc_macro2::TokenStream {
    depth::limit_block(&mut f.block);
    kernel::expand(attr, f, &HashMap::new())
}

/// A module of kernels and the `#[helper]` functions they call.
#[proc_macro_attribute]
pub fn kernel_module(attr: TokenStream, item: TokenStream) -> TokenStream {
    let m = syn::parse_macro_input!(item as syn::ItemMod);
    module::expand(attr.into(), m).into()
}

/// Autotuning configs of a kernel; read by `#[kernel]`, so it must come *below* it.
#[proc_macro_attribute]
pub fn autotune(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out: proc_macro2::TokenStream =
        syn::Error::new(proc_macro2::Span::call_site(), "#[autotune(...)] must be placed below #[kernel], which reads it")
            .to_compile_error();
    out.extend(proc_macro2::TokenStream::from(item));
    out.into()
}

/// Marks a helper function inside a `#[kernel_module]`; it is an error anywhere else.
#[proc_macro_attribute]
pub fn helper(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out: proc_macro2::TokenStream = syn::Error::new(
        proc_macro2::Span::call_site(),
        "#[helper] functions must be inside a #[kernel_module] together with the kernels that call them",
    )
    .to_compile_error();
    out.extend(proc_macro2::TokenStream::from(item));
    out.into()
}
