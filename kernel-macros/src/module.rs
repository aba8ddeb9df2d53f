//! `#[kernel_module] mod m { ... }`: the macro sees helpers and kernels together, so kernels
//! can call `#[helper]` functions and take them as function meta-parameters.

use crate::diag::Diagnostics;
use crate::kernel::{expand as expand_kernel, is_attr};
use crate::lower::check_helper_syntax;
use proc_macro2::TokenStream;
use quote::quote;
use std::cell::RefCell;
use std::collections::HashMap;
use crate::diag::SpanRange;

thread_local! {
    /// The functions without `#[helper]` of the `#[kernel_module]` whose kernels are being
    /// expanded, so that a kernel calling one is told to mark it.
    static PLAIN_FNS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Whether `name` is a function of the enclosing `#[kernel_module]` without `#[helper]`.
pub fn is_plain_fn(name: &str) -> bool {
    PLAIN_FNS.with(|p| p.borrow().iter().any(|f| f == name))
}

pub fn expand(attr: TokenStream, mut m: syn::ItemMod) -> TokenStream {
    let mut diag = Diagnostics::default();
    if !attr.is_empty() {
        diag.error(attr.sp(), "#[kernel_module] takes no arguments");
    }
    let Some((_, items)) = m.content.take() else {
        diag.error(m.ident.sp(), "#[kernel_module] needs an inline module: `mod name { ... }`");
        return diag.to_compile_errors();
    };
    let mut helpers: Vec<syn::ItemFn> = Vec::new();
    let mut kernels: Vec<(TokenStream, syn::ItemFn)> = Vec::new();
    let mut others = Vec::new();
    for item in items {
        match item {
            syn::Item::Fn(mut f) if f.attrs.iter().any(|a| is_attr(a, "helper")) => {
                f.attrs.retain(|a| !is_attr(a, "helper"));
                helpers.push(f);
            }
            syn::Item::Fn(mut f) if f.attrs.iter().any(|a| is_attr(a, "kernel")) => {
                let pos = f.attrs.iter().position(|a| is_attr(a, "kernel")).unwrap_or(0);
                let a = f.attrs.remove(pos);
                let tokens = match a.meta {
                    syn::Meta::List(l) => l.tokens,
                    _ => TokenStream::new(),
                };
                kernels.push((tokens, f));
            }
            other => others.push(other),
        }
    }
    for f in helpers.iter_mut().chain(kernels.iter_mut().map(|(_, f)| f)) {
        crate::depth::limit_block(&mut f.block);
    }
    for h in &helpers {
        check_helper_signature(h, &mut diag);
        check_helper_syntax(h, &mut diag);
    }
    let map: HashMap<String, &syn::ItemFn> = helpers.iter().map(|h| (h.sig.ident.to_string(), h)).collect();
    let plain = others.iter().filter_map(|i| match i {
        syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
        _ => None,
    });
    PLAIN_FNS.with(|p| *p.borrow_mut() = plain.collect());
    let expanded: Vec<TokenStream> = kernels.into_iter().map(|(a, f)| expand_kernel(a, f, &map)).collect();
    PLAIN_FNS.with(|p| p.borrow_mut().clear());
    let helper_consts = helpers.iter().map(|h| {
        let (vis, id) = (&h.vis, &h.sig.ident);
        let name = id.to_string();
        let docs = h.attrs.iter().filter(|a| is_attr(a, "doc"));
        quote! {
            #(#docs)*
            ///
            /// A `#[helper]`: inlined where kernels call it; this constant names it as the value
            /// of a function meta-parameter at launch.
            #[allow(non_upper_case_globals)]
            #[cfg(not(target_arch = "nvptx64"))]
            #vis const #id: ::kernel_runtime::Func = ::kernel_runtime::Func::new(#name);
        }
    });
    let errors = diag.to_compile_errors();
    let (attrs, vis, ident) = (&m.attrs, &m.vis, &m.ident);
    quote! {
        #errors
        #(#attrs)*
        #vis mod #ident {
            #(#others)*
            #(#helper_consts)*
            #(#expanded)*
        }
    }
}

/// Rule: helpers are plain functions of blocks and scalars, without generics.
fn check_helper_signature(h: &syn::ItemFn, diag: &mut Diagnostics) {
    let sig = &h.sig;
    if let Some(a) = &sig.asyncness {
        diag.error(a.sp(), "helpers cannot be `async`");
    }
    if let Some(u) = &sig.unsafety {
        diag.error(u.sp(), "helpers cannot be `unsafe`");
    }
    if !sig.generics.params.is_empty() {
        diag.error(
            sig.generics.sp(),
            "helpers cannot be generic: parameters typed `Block` accept blocks of any shape and dtype",
        );
    }
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => diag.error(r.sp(), "helpers cannot take `self`"),
            syn::FnArg::Typed(t) if !matches!(&*t.pat, syn::Pat::Ident(_)) => {
                diag.error(t.pat.sp(), "helper parameters must be plain names")
            }
            _ => {}
        }
    }
}
