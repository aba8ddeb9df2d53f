//! The pipeline for one `#[kernel]` function: attributes → signature → instances → one IR
//! variant per function-meta assignment (lowered and checked) → host + CPU expansion. On any
//! error: every diagnostic, plus a stub with the launch API as written so call sites do not
//! cascade; after an attribute or signature error the body is still lowered and checked.

use crate::attr::{attr_span, config_meta_names, AutotuneAttr, KernelAttr};
use crate::diag::Diagnostics;
use crate::{expand_device, expand_host};
use crate::instances::{collect_instances, Instances, MAX_INSTANCES};
use crate::ir::MetaKind;
use crate::lower::{lower_variant, LowerCtx};
use crate::recover::filter_body;
use crate::signature::{parse_signature, Signature};
use proc_macro2::TokenStream;
use std::collections::HashMap;
use crate::diag::SpanRange;

#[cfg(test)]
thread_local! {
    /// Tests of later stages: every instance of the last kernel expanded on this thread, as
    /// (IR variant, meta values, num_warps, num_stages).
    pub static LOWERED: std::cell::RefCell<Vec<(crate::ir::Kernel, HashMap<String, i64>, usize, usize)>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    /// While `Some` (inside [`record`]): what every kernel expanded on this thread lowered.
    static RECORDED: std::cell::RefCell<Option<Vec<Lowered>>> = const { std::cell::RefCell::new(None) };
}

/// What one `#[kernel]` lowered, for the code generator's snapshot suite
/// (`kernel-macros/tests/codegen/snapshots.rs`).
#[cfg(test)]
pub struct Lowered {
    pub name: String,
    /// One IR per function-meta variant, in declaration order.
    pub variants: Vec<crate::ir::Kernel>,
    /// Every instance, in the order of its device entries.
    pub instances: Vec<LoweredInstance>,
}

#[cfg(test)]
pub struct LoweredInstance {
    /// The name of its device entry (the entry of its split launches, if any: `<entry>__split`).
    pub entry: String,
    /// The index of its autotune config.
    pub config: usize,
    /// The index of its IR in [`Lowered::variants`].
    pub variant: usize,
    /// The device plan of each body of its entries, as text, named `<entry>.<target>`.
    pub plans: Vec<(String, String)>,
}

/// Runs `f` (an entry point: `expand_kernel_fn`, `module::expand`) and returns its result with
/// what each kernel it expanded without errors lowered, in expansion order.
#[cfg(test)]
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Vec<Lowered>) {
    let outer = RECORDED.with(|r| r.replace(Some(Vec::new())));
    let out = f();
    let recorded = RECORDED.with(|r| r.replace(outer)).unwrap_or_default();
    (out, recorded)
}

pub fn is_attr(a: &syn::Attribute, name: &str) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == name)
}

/// Rule: `#[kernel]` goes on free functions. An attribute cannot see where its item is, so
/// this recognizes what only a method can be: a function taking `self`, or one without a body
/// (a trait's). An associated function without `self` looks like a free function here.
pub fn not_a_free_fn(item: &TokenStream) -> Option<syn::Error> {
    let (sig, place) = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(f) => (f.sig, "the impl block"),
        Err(_) => match syn::parse2::<syn::TraitItemFn>(item.clone()) {
            Ok(f) if f.default.is_none() => (f.sig, "the trait"),
            _ => return None,
        },
    };
    let method = sig.inputs.iter().any(|a| matches!(a, syn::FnArg::Receiver(_)));
    (method || place == "the trait").then(|| {
        let name = &sig.ident;
        let msg = format!("#[kernel] goes on free functions only: move `{name}` out of {place}, with its inputs as parameters");
        syn::Error::new(proc_macro2::Span::call_site(), msg)
    })
}

/// What a kernel's attributes declare.
struct Attrs {
    kattr: KernelAttr,
    autotune: Option<AutotuneAttr>,
    docs: Vec<syn::Attribute>,
    /// Whether an attribute failed to parse (its declarations are then missing).
    failed: bool,
    /// The meta-parameters the autotune configs assign, read from the tokens even when the
    /// attribute has an error: they are not `launch` arguments, in the error stub either.
    tuned: Vec<String>,
}

fn read_attrs(attr: TokenStream, f: &syn::ItemFn, diag: &mut Diagnostics) -> Attrs {
    let mut failed = false;
    let kattr = KernelAttr::parse(attr).unwrap_or_else(|e| {
        diag.push(e);
        failed = true;
        KernelAttr::default()
    });
    let mut out = Attrs { kattr, autotune: None, docs: Vec::new(), failed, tuned: Vec::new() };
    for a in &f.attrs {
        if is_attr(a, "autotune") {
            let tokens = match &a.meta {
                syn::Meta::List(l) => l.tokens.clone(),
                _ => TokenStream::new(),
            };
            out.tuned = config_meta_names(&tokens);
            match AutotuneAttr::parse(tokens, attr_span(a)) {
                Ok(at) => out.autotune = Some(at),
                Err(e) => {
                    diag.push(e);
                    out.failed = true;
                }
            }
        } else if is_attr(a, "doc") {
            out.docs.push(a.clone());
        } else if is_attr(a, "kernel") {
            diag.error(attr_span(a), "`#[kernel]` appears twice on this function");
        } else {
            diag.error(attr_span(a), "unsupported attribute on a kernel: only doc comments and #[autotune(...)] are accepted");
        }
    }
    out
}

pub fn expand(attr: TokenStream, f: syn::ItemFn, helpers: &HashMap<String, &syn::ItemFn>) -> TokenStream {
    let mut diag = Diagnostics::default();
    let attrs = read_attrs(attr, &f, &mut diag);
    let sig = parse_signature(&f, "kernel", &mut diag);
    let mut helper_names: Vec<String> = helpers.keys().cloned().collect();
    helper_names.sort();
    let inst = collect_instances(&sig, &attrs.kattr, attrs.autotune.as_ref(), &helper_names, f.sig.ident.sp(), attrs.failed, &mut diag);
    if !diag.is_empty() {
        check_body_after_errors(&f.block, &sig, &inst, helpers, &mut diag);
        return error_output(&diag, &sig, &attrs);
    }
    let concrete = inst.concrete();
    let cx = LowerCtx { sig: &sig, helpers, concrete: &concrete };
    let mut variants: Vec<_> = inst.variants().iter().map(|v| lower_variant(&cx, &f.block, v, &mut diag)).collect();
    if attrs.kattr.asserts == Some(false) {
        variants.iter_mut().for_each(|v| without_asserts(&mut v.body));
    }
    if attrs.kattr.fp_fusion != Some(false) {
        variants.iter_mut().for_each(crate::contract::contract);
    }
    if diag.is_empty() {
        variants.iter().for_each(|v| check_block_sizes(v, &concrete, &mut diag));
    }
    if !diag.is_empty() {
        return error_output(&diag, &sig, &attrs);
    }
    let keys = inst.enumerate(&sig.name.to_string());
    if let Some(e) = repeated_entry(&keys) {
        let msg = format!("two instances of this kernel get the device entry name `{e}`: helper names containing `__` make entry names ambiguous; rename them");
        diag.error(f.sig.ident.sp(), msg);
        return error_output(&diag, &sig, &attrs);
    }
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
    let entries: Result<Vec<_>, String> = keys
        .iter()
        .map(|key| {
            let c = &inst.configs[key.config];
            expand_device::entry(&variants[key.variant], &key.entry, &key.vals, (c.num_warps as usize, c.num_stages as usize, c.maxnreg), &c.archs)
                .map_err(|e| format!("the device plan of entry `{}` is invalid: {e} (an internal error of the code generator: please report it)", key.entry))
        })
        .collect();
    let entries: Vec<_> = match entries {
        Ok(entries) => entries,
        Err(msg) => {
            diag.error(f.sig.ident.sp(), msg);
            return error_output(&diag, &sig, &attrs);
        }
    };
    #[cfg(test)]
    RECORDED.with(|r| {
        if let Some(r) = r.borrow_mut().as_mut() {
            let instances = keys
                .iter()
                .zip(&entries)
                .map(|(k, e)| LoweredInstance { entry: k.entry.clone(), config: k.config, variant: k.variant, plans: e.plans.clone() })
                .collect();
            r.push(Lowered { name: sig.name.to_string(), variants: variants.clone(), instances });
        }
    });
    let out = expand_host::module(&sig, &inst, &variants, &keys, &entries, &attrs.docs);
    let out = into_module(out, &sig.name, entry_claims(&sig.name, keys.iter().map(|k| k.entry.as_str())));
    let device_entries = entries.len() + entries.iter().filter(|e| e.split_bytes > 0).count();
    let warning = many_entries_warning(&f.sig.ident, entries.len(), device_entries);
    let notes = diag.to_warnings();
    let out = quote::quote!(#out #warning #notes);
    dump(&sig.name.to_string(), &variants, &entries, &out);
    let _ = f.sp();
    out
}

/// `stmts` without their `device_assert`s (`#[kernel(asserts = false)]`: checked, not run);
/// the checks of hints stay.
fn without_asserts(stmts: &mut Vec<crate::ir::Stmt>) {
    crate::ir::retain_stmts(stmts, &|s| !matches!(s, crate::ir::Stmt::Assert { hint: None, .. }));
}

/// A kernel with more instances than this gets a warning at `cargo build`: each instance is a
/// device entry (two with a split-K version) that the device build compiles and `ptxas`
/// assembles, tens to hundreds of kilobytes of PTX each.
pub const WARN_INSTANCES: usize = 64;

/// The warning for a kernel of more than [`WARN_INSTANCES`] instances, at its name: a proc macro
/// cannot emit warnings on stable Rust, so the output uses a deprecated item whose note is the
/// message (rustc reports "use of deprecated ...: <note>"; `#![allow(deprecated)]` in the module
/// silences it).
fn many_entries_warning(name: &syn::Ident, instances: usize, device_entries: usize) -> Option<proc_macro2::TokenStream> {
    if instances <= WARN_INSTANCES {
        return None;
    }
    let split = if device_entries > instances { format!(", {device_entries} device entries with the split-K ones") } else { String::new() };
    let note = format!(
        "kernel `{name}` declares {instances} instances{split}, more than {WARN_INSTANCES}: every one is compiled to PTX \
         and assembled by ptxas, so device builds are slow and the PTX large; declare fewer autotune configs or \
         meta-parameter values"
    );
    let marker = syn::Ident::new("many_device_entries", name.span());
    Some(quote::quote_spanned! {name.span()=>
        const _: () = {
            #[deprecated(note = #note)]
            #[allow(non_camel_case_types)]
            struct many_device_entries;
            #[allow(dead_code)]
            fn warn() {
                let _ = #marker;
            }
        };
    })
}

/// `items` appended inside each generated `mod <kernel> { ... }` of `out` (the host module and
/// the device one, one per target), so that a kernel misplaced in an `impl` gets one error, for
/// the module, and none for what it holds.
fn into_module(out: proc_macro2::TokenStream, name: &syn::Ident, items: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    use proc_macro2::{Delimiter, Group, TokenTree};
    let mut tokens: Vec<TokenTree> = out.into_iter().collect();
    for i in 2..tokens.len() {
        let is_module = matches!((&tokens[i - 2], &tokens[i - 1], &tokens[i]), (TokenTree::Ident(m), TokenTree::Ident(n), TokenTree::Group(g))
            if m == "mod" && n == name && g.delimiter() == Delimiter::Brace);
        if let (true, TokenTree::Group(g)) = (is_module, &tokens[i]) {
            let mut inner = g.stream();
            inner.extend(items.clone());
            let mut group = Group::new(Delimiter::Brace, inner);
            group.set_span(g.span());
            tokens[i] = TokenTree::Group(group);
        }
    }
    tokens.into_iter().collect()
}

/// Rule: device entry names are unique in a crate (they are `#[no_mangle]` symbols of one
/// PTX module). A proc macro sees one kernel at a time, so each entry claims its name as a
/// `#[macro_export]` macro, which lives in the crate root: two kernels of one crate with the same
/// entry (the same name in two modules, say) make `cargo build` (and `cargo check`) report
/// "the name `__device_entry_<entry>` is defined multiple times" at the second kernel's attribute.
fn entry_claims<'a>(kernel: &syn::Ident, entries: impl Iterator<Item = &'a str>) -> proc_macro2::TokenStream {
    entries
        .map(|e| {
            // A raw kernel name (`r#type`) is the symbol `type`.
            let claim = syn::Ident::new(&format!("__device_entry_{}", e.replace("r#", "")), kernel.span());
            quote::quote!(#[doc(hidden)] #[allow(non_local_definitions)] #[macro_export] macro_rules! #claim { () => {} })
        })
        .collect()
}

/// Rule: instances have distinct device entry names (entry names join the meta values with
/// `__`; repeated values are rejected before, a helper name with `__` in it can still collide).
fn repeated_entry(keys: &[crate::instances::InstanceKey]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    keys.iter().map(|k| k.entry.as_str()).find(|e| !seen.insert(*e))
}

/// Every error, plus a stub with the launch API the user wrote, so call sites do not cascade.
fn error_output(diag: &Diagnostics, sig: &Signature, attrs: &Attrs) -> TokenStream {
    let errors = diag.to_compile_errors();
    let warnings = diag.to_warnings();
    let stub = expand_host::stub(sig, &attrs.tuned, &attrs.docs);
    quote::quote!(#errors #warnings #stub)
}

/// After an error in the attributes or the signature, lowers and checks the body with what was
/// declared correctly, so the body's own errors are reported in the same build. Statements that
/// use a name the error left without a binding are left out (`recover.rs`): their errors would
/// be cascades. Nothing is lowered when the instance count was already too large.
fn check_body_after_errors(
    body: &syn::Block,
    sig: &Signature,
    inst: &Instances,
    helpers: &HashMap<String, &syn::ItemFn>,
    diag: &mut Diagnostics,
) {
    if inst.count() > MAX_INSTANCES as u128 {
        return;
    }
    let mut unusable = sig.unbound.clone();
    // A function meta-parameter without declared values has no binding in any variant.
    let undeclared = sig.metas.iter().filter(|m| matches!(m.kind, MetaKind::Func { .. }) && !inst.fn_metas.iter().any(|(n, _)| *n == m.name));
    unusable.extend(undeclared.map(|m| m.name.clone()));
    let body = filter_body(body, &unusable);
    let sig = sig.with_placeholders();
    let concrete = inst.concrete();
    let cx = LowerCtx { sig: &sig, helpers, concrete: &concrete };
    let before = diag.len();
    let variants: Vec<_> = inst.variants().iter().map(|v| lower_variant(&cx, &body, v, diag)).collect();
    if diag.len() == before {
        variants.iter().for_each(|v| check_block_sizes(v, &concrete, diag));
    }
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
            // After an attribute error a meta-parameter may have no value: nothing to check.
            let known = e.ty.shape.iter().all(|d| d.terms().all(|(syms, _)| syms.iter().all(|s| vals.contains_key(s))));
            if !known {
                continue;
            }
            if let Err(m) = crate::check::check_block_elements(&e.ty.shape, &|s| vals.get(s).copied(), desc) {
                diag.error(e.span, m);
                return;
            }
        }
    }
}

/// `KERNEL_DUMP=dir`: writes each variant's IR, the generated Rust and each entry's device plans
/// (`<entry>.<target>.plan`), for inspection.
fn dump(name: &str, variants: &[crate::ir::Kernel], entries: &[expand_device::DeviceEntry], out: &TokenStream) {
    if let Some(dir) = std::env::var_os("KERNEL_DUMP") {
        write_dump(std::path::Path::new(&dir), name, variants, entries, out);
    }
}

/// [`dump`]'s files, in `dir` (created if needed; failures to write are ignored: a dump is an aid).
fn write_dump(dir: &std::path::Path, name: &str, variants: &[crate::ir::Kernel], entries: &[expand_device::DeviceEntry], out: &TokenStream) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let ir: String = variants.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n");
    let _ = std::fs::write(dir.join(format!("{name}.ir")), ir);
    let _ = std::fs::write(dir.join(format!("{name}.host.rs")), out.to_string());
    for (plan_name, plan) in entries.iter().flat_map(|e| &e.plans) {
        let _ = std::fs::write(dir.join(format!("{plan_name}.plan")), plan);
    }
}

#[cfg(test)]
mod dump_tests {
    use super::*;

    /// `KERNEL_DUMP`'s files: the IR, the host module and every body's device plan.
    #[test]
    fn dumps_the_ir_the_expansion_and_each_bodys_plan() {
        let src = "fn add<const BLOCK: i32>(x: Ptr<f16>, y: Ptr<f16>, n: i32) { \
                   let i = program_id(0) * BLOCK + arange(0, BLOCK); store(y + i, load(x + i, i < n), i < n); }";
        let f: syn::ItemFn = syn::parse_str(src).expect("parses");
        let out = expand("BLOCK = [64]".parse().expect("tokens"), f, &HashMap::new());
        assert!(!out.to_string().contains("compile_error"), "{out}");
        let lowered = LOWERED.with(|l| l.take());
        let (k, vals, warps, stages) = &lowered[0];
        let entries = vec![expand_device::entry(k, "add__BLOCK_64", vals, (*warps, *stages, None), &[]).expect("a valid plan")];
        let dir = std::env::temp_dir().join(format!("kernel-dump-test-{}", std::process::id()));
        write_dump(&dir, "add", std::slice::from_ref(k), &entries, &out);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(read("add.ir").starts_with("kernel add"), "{}", read("add.ir"));
        assert!(read("add.host.rs").contains("InstanceInfo"));
        let plan = read("add__BLOCK_64.sm_80.plan");
        assert!(plan.contains("device plan of `add`") && plan.contains("%i.0: pure"), "{plan}");
        assert!(!dir.join("add__BLOCK_64.sm_90a.plan").exists(), "no dot: one body, for every target");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
