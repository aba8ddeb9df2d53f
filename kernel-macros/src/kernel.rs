//! The pipeline for one `#[kernel]` function: attributes → signature → instances → one IR
//! variant per function-meta assignment (lowered and checked) → host + CPU expansion. On any
//! error: every diagnostic, plus a stub with the kernel's API so call sites do not cascade.

use crate::attr::{attr_span, AutotuneAttr, KernelAttr};
use crate::diag::Diagnostics;
use crate::{expand_device, expand_host};
use crate::instances::collect_instances;
use crate::lower::{lower_variant, LowerCtx};
use crate::signature::parse_signature;
use proc_macro2::TokenStream;
use std::collections::HashMap;
use crate::diag::SpanRange;

#[cfg(test)]
thread_local! {
    /// Tests of later stages: every instance of the last kernel expanded on this thread, as
    /// (IR variant, meta values, num_warps, num_stages).
    pub static LOWERED: std::cell::RefCell<Vec<(crate::ir::Kernel, HashMap<String, i64>, usize, usize)>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub fn is_attr(a: &syn::Attribute, name: &str) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == name)
}

pub fn expand(attr: TokenStream, f: syn::ItemFn, helpers: &HashMap<String, &syn::ItemFn>) -> TokenStream {
    let mut diag = Diagnostics::default();
    let mut attrs_failed = false;
    let kattr = KernelAttr::parse(attr).unwrap_or_else(|e| {
        diag.push(e);
        attrs_failed = true;
        KernelAttr::default()
    });
    let mut autotune = None;
    let mut docs = Vec::new();
    for a in &f.attrs {
        if is_attr(a, "autotune") {
            let tokens = match &a.meta {
                syn::Meta::List(l) => l.tokens.clone(),
                _ => TokenStream::new(),
            };
            match AutotuneAttr::parse(tokens, attr_span(a)) {
                Ok(at) => autotune = Some(at),
                Err(e) => {
                    diag.push(e);
                    attrs_failed = true;
                }
            }
        } else if is_attr(a, "doc") {
            docs.push(a.clone());
        } else if is_attr(a, "kernel") {
            diag.error(attr_span(a), "`#[kernel]` appears twice on this function");
        } else {
            diag.error(attr_span(a), "unsupported attribute on a kernel: only doc comments and #[autotune(...)] are accepted");
        }
    }
    let sig = parse_signature(&f, "kernel", &mut diag);
    let mut helper_names: Vec<String> = helpers.keys().cloned().collect();
    helper_names.sort();
    let inst = collect_instances(&sig, &kattr, autotune.as_ref(), &helper_names, f.sig.ident.sp(), attrs_failed, &mut diag);
    // Meta-parameters chosen by autotuning are not `launch` arguments, in the stub either.
    let tuned: Vec<String> = autotune
        .as_ref()
        .and_then(|a| a.configs.first())
        .map(|c| c.metas.iter().map(|(n, _)| n.to_string()).collect())
        .unwrap_or_default();
    if !diag.is_empty() {
        let errors = diag.to_compile_errors();
        let stub = expand_host::stub(&sig, &tuned, &docs);
        return quote::quote!(#errors #stub);
    }
    let concrete = inst.concrete();
    let cx = LowerCtx { sig: &sig, helpers, concrete: &concrete };
    let variants: Vec<_> = inst.variants().iter().map(|v| lower_variant(&cx, &f.block, v, &mut diag)).collect();
    if diag.is_empty() {
        variants.iter().for_each(|v| check_block_sizes(v, &concrete, &mut diag));
    }
    if !diag.is_empty() {
        let errors = diag.to_compile_errors();
        let stub = expand_host::stub(&sig, &tuned, &docs);
        return quote::quote!(#errors #stub);
    }
    let keys = inst.enumerate(&sig.name.to_string());
    #[cfg(test)]
    LOWERED.with(|l| {
        *l.borrow_mut() = keys
            .iter()
            .map(|key| {
                let c = &inst.configs[key.config];
                (variants[key.variant].clone(), key.vals.clone(), c.num_warps as usize, c.num_stages as usize)
            })
            .collect()
    });
    let entries: Vec<_> = keys
        .iter()
        .map(|key| {
            let c = &inst.configs[key.config];
            expand_device::entry(&variants[key.variant], &key.entry, &key.vals, c.num_warps as usize, c.num_stages as usize)
        })
        .collect();
    let out = expand_host::module(&sig, &inst, &variants, &keys, &entries, &docs);
    dump(&sig.name.to_string(), &variants, &out);
    let _ = f.sp();
    out
}

/// Rule `check_block_elements` for every block shape of a variant in every instance (the
/// backends multiply the dimensions out); one error per variant, at the first such block.
fn check_block_sizes(v: &crate::ir::Kernel, concrete: &[(HashMap<String, i64>, String)], diag: &mut Diagnostics) {
    let mut seen: Vec<&crate::shape::Shape> = Vec::new();
    for e in v.exprs.iter().filter(|e| !e.ty.shape.is_empty()) {
        if seen.contains(&&e.ty.shape) {
            continue;
        }
        seen.push(&e.ty.shape);
        for (vals, desc) in concrete {
            if let Err(m) = crate::check::check_block_elements(&e.ty.shape, &|s| vals.get(s).copied(), desc) {
                diag.error(e.span, m);
                return;
            }
        }
    }
}

/// `KERNEL_DUMP=dir`: writes each variant's IR and the generated Rust, for inspection.
fn dump(name: &str, variants: &[crate::ir::Kernel], out: &TokenStream) {
    let Some(dir) = std::env::var_os("KERNEL_DUMP") else { return };
    let dir = std::path::PathBuf::from(dir);
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let ir: String = variants.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n");
    let _ = std::fs::write(dir.join(format!("{name}.ir")), ir);
    let _ = std::fs::write(dir.join(format!("{name}.host.rs")), out.to_string());
}
