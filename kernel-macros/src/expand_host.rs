//! Host expansion: the module a `#[kernel] fn name` becomes. It holds the typed `Meta`
//! struct (what a grid closure sees), the declared `CONFIGS`, the signature `INFO` the runtime
//! validates against, `launch`/`launch_config`, and the CPU implementation of each variant.

use crate::expand_cpu::{dtype_tokens, param_ident, CpuGen};
use crate::expand_device::DeviceEntry;
use crate::instances::{InstanceKey, Instances, MetaVal};
use crate::ir::{DType, Kernel, MetaKind, ParamKind, Stmt};
use crate::signature::Signature;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};

fn rt() -> TokenStream {
    quote!(::kernel_runtime::__private)
}

/// The `embedded` field of a kernel's `ModuleInfo`: the crate root's `__KERNEL_EMBEDDED_PTX`
/// (defined by `kernel_std::embed_ptx!()`) when the crate's build script built and embedded its
/// device code, which it says by setting `KERNEL_EMBEDDED_PTX` to the library's name for its
/// compilation (`cargo:rustc-env`, which reaches this macro's process); else nothing. The
/// variable reaches every target of the package, so binaries, tests and examples (other crate
/// names, or `CARGO_BIN_NAME` set) do not take it.
fn embedded_modules() -> TokenStream {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("KERNEL_EMBEDDED_PTX"), var("CARGO_CRATE_NAME")) {
        (Some(lib), Some(krate)) if lib == krate && var("CARGO_BIN_NAME").is_none() => quote!(crate::__KERNEL_EMBEDDED_PTX),
        _ => quote!(&[]),
    }
}

fn dtype_kind(d: DType) -> TokenStream {
    let rt = rt();
    let v = format_ident!(
        "{}",
        match d {
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::F32 => "F32",
            DType::F64 => "F64",
            DType::I8 => "I8",
            DType::I16 => "I16",
            DType::I32 => "I32",
            DType::I64 => "I64",
            DType::U8 => "U8",
            DType::U16 => "U16",
            DType::U32 => "U32",
            DType::Bool => "Bool",
            DType::F8E4M3 => "F8E4M3",
            DType::F8E5M2 => "F8E5M2",
        }
    );
    quote!(#rt::DTypeKind::#v)
}

fn meta_rust_ty(k: &MetaKind) -> TokenStream {
    match k {
        MetaKind::Int(t) => {
            let t = format_ident!("{}", t);
            quote!(#t)
        }
        MetaKind::Bool => quote!(bool),
        MetaKind::Func { optional: true } => quote!(::core::option::Option<::kernel_runtime::Func>),
        MetaKind::Func { optional: false } => quote!(::kernel_runtime::Func),
    }
}

fn meta_value_tokens(v: &MetaVal, k: &MetaKind) -> TokenStream {
    match (v, k) {
        (MetaVal::Bool(b), _) => quote!(#b),
        (MetaVal::Int(i), MetaKind::Int(t)) => {
            let lit = proc_macro2::Literal::i64_unsuffixed(*i);
            let t = format_ident!("{}", t);
            quote!((#lit as #t))
        }
        (MetaVal::Int(i), _) => quote!(#i),
    }
}

/// The parts of the launch signature shared by the real expansion and the error stub.
struct LaunchSig {
    args: Vec<TokenStream>,
    meta_fields: Vec<TokenStream>,
}

/// The arguments of `launch` and the fields of `Meta`, from the signature as written: a
/// parameter or meta-parameter with an unsupported type keeps its place (it was reported), so
/// the error stub has the API the user wrote and correct call sites type-check.
fn launch_sig(sig: &Signature, tuned: &[String]) -> LaunchSig {
    let rt = rt();
    let mut args = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for p in &sig.api_params {
        // A duplicate name was already reported; the stub keeps the first.
        if seen.contains(&p.name.as_str()) {
            continue;
        }
        seen.push(&p.name);
        let id = param_ident(&p.name);
        let t = match p.kind {
            Some(ParamKind::Ptr(d)) => {
                let t = dtype_tokens(d, &rt);
                quote!(&::kernel_runtime::Tensor<#t>)
            }
            Some(ParamKind::Scalar(d)) => dtype_tokens(d, &rt),
            None => quote!(impl ::core::marker::Sized),
        };
        args.push(quote!(#id: #t));
    }
    let mut meta_fields = Vec::new();
    for m in &sig.api_metas {
        if seen.contains(&m.name.as_str()) {
            continue;
        }
        seen.push(&m.name);
        let id = format_ident!("{}", m.name);
        let (field, arg) = match &m.kind {
            Ok(MetaKind::Func { optional }) => (None, meta_rust_ty(&MetaKind::Func { optional: *optional })),
            Ok(k) => (Some(meta_rust_ty(k)), meta_rust_ty(k)),
            Err(ty) => unsupported_meta_ty(ty),
        };
        if let Some(t) = field {
            meta_fields.push(quote!(pub #id: #t));
        }
        if !tuned.contains(&m.name) {
            args.push(quote!(#id: #arg));
        }
    }
    LaunchSig { args, meta_fields }
}

/// How the error stub types a meta-parameter declared with an unsupported type: a primitive
/// type as written (a `Meta` field and an argument of that type), anything else as an argument
/// of any type and no field.
fn unsupported_meta_ty(ty: &syn::Type) -> (Option<TokenStream>, TokenStream) {
    const PRIMITIVES: &[&str] =
        &["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool", "char"];
    match crate::signature::path_last(ty) {
        Some((id, args)) if args.is_empty() && PRIMITIVES.contains(&id.to_string().as_str()) => {
            let t = format_ident!("{}", id.to_string());
            (Some(quote!(#t)), quote!(#t))
        }
        _ => (None, quote!(impl ::core::marker::Sized)),
    }
}

/// What a kernel with errors expands to: its module with the same API, so call sites type-check.
pub fn stub(sig: &Signature, tuned: &[String], docs: &[syn::Attribute]) -> TokenStream {
    let rt = rt();
    let LaunchSig { args, meta_fields } = launch_sig(sig, tuned);
    let (vis, name) = (&sig.vis, &sig.name);
    quote! {
        #(#docs)*
        #[allow(non_snake_case, non_camel_case_types, dead_code, unused_variables, clippy::all)]
        #vis mod #name {
            #[derive(Clone, Copy, Debug, PartialEq)]
            pub struct Meta { #(#meta_fields),* }
            pub fn launch<G: #rt::Grid<Meta>>(__grid: G, #(#args),*) -> ::core::result::Result<(), #rt::LaunchError> {
                ::core::unreachable!("this kernel did not compile")
            }
        }
    }
}

/// The `asserts` of a kernel's `KernelInfo`: every `device_assert` of every variant (an
/// assertion of a helper once per call), with its position, spanned like the device code's, so
/// that the position the GPU records finds it.
fn assert_infos(variants: &[Kernel]) -> Vec<TokenStream> {
    fn walk(stmts: &[Stmt], out: &mut Vec<TokenStream>) {
        for s in stmts {
            match s {
                Stmt::Assert { message, text, operands, span, .. } => {
                    let rt = rt();
                    let (line, column) = (quote_spanned!(span.start=> ::core::line!()), quote_spanned!(span.start=> ::core::column!()));
                    let ops = operands.iter().map(|(t, _)| t);
                    out.push(quote!(#rt::AssertInfo { line: #line, column: #column, condition: #text, message: #message, operands: &[#(#ops),*] }));
                }
                Stmt::For { body, .. } => walk(body, out),
                Stmt::While { pre, body, .. } => {
                    walk(pre, out);
                    walk(body, out);
                }
                Stmt::If { then, els, .. } => {
                    walk(then, out);
                    walk(els, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for v in variants {
        walk(&v.body, &mut out);
    }
    out
}

pub fn module(
    sig: &Signature,
    inst: &Instances,
    variants: &[Kernel],
    keys: &[InstanceKey],
    entries: &[DeviceEntry],
    docs: &[syn::Attribute],
) -> TokenStream {
    let rt = rt();
    let (vis, name) = (&sig.vis, &sig.name);
    let kname = name.to_string();
    let tuned: Vec<String> = inst.configs.first().map(|c| c.metas.iter().map(|(n, _)| n.clone()).collect()).unwrap_or_default();
    let LaunchSig { args, meta_fields } = launch_sig(sig, &tuned);
    let meta_kind = |n: &str| sig.metas.iter().find(|m| m.name == n).map(|m| m.kind.clone()).unwrap_or(MetaKind::Bool);

    // CONFIGS: the autotune configs (or the single default).
    let configs = inst.configs.iter().map(|c| {
        let metas = c.metas.iter().map(|(n, v)| {
            let val = match v {
                MetaVal::Int(i) => quote!(#rt::MetaValue::Int(#i)),
                MetaVal::Bool(b) => quote!(#rt::MetaValue::Bool(#b)),
            };
            quote!((#n, #val))
        });
        let (w, s, archs) = (c.num_warps as u32, c.num_stages as u32, &c.archs);
        quote!(#rt::Config { meta: &[#(#metas),*], num_warps: #w, num_stages: #s, archs: &[#(#archs),*] })
    });

    // INFO: the signature the runtime validates arguments against.
    let params = sig.params.iter().map(|p| {
        let n = &p.name;
        let kind = match p.kind {
            ParamKind::Ptr(d) => {
                let k = dtype_kind(d);
                quote!(#rt::ParamKind::Ptr(#k))
            }
            ParamKind::Scalar(d) => {
                let k = dtype_kind(d);
                quote!(#rt::ParamKind::Scalar(#k))
            }
        };
        quote!(#rt::ParamInfo { name: #n, kind: #kind })
    });
    let key_names = inst.key.iter();

    // Launch-time meta values must be declared instances.
    let launch_checks = inst.launch_metas.iter().map(|(n, vals)| {
        let id = format_ident!("{}", n);
        let kind = meta_kind(n);
        let vs: Vec<TokenStream> = vals.iter().map(|v| meta_value_tokens(v, &kind)).collect();
        let declared = vals.iter().map(|v| match v {
            MetaVal::Int(i) => i.to_string(),
            MetaVal::Bool(b) => b.to_string(),
        }).collect::<Vec<_>>().join(", ");
        quote! {
            if ![#(#vs),*].contains(&#id) {
                return Err(#rt::LaunchError::NoInstance {
                    kernel: #kname,
                    reason: format!("{} = {:?} is not a declared instance (declared: {})", #n, #id, #declared),
                });
            }
        }
    });

    // Function meta-parameters select the variant.
    let fn_names: Vec<&String> = inst.fn_metas.iter().map(|(n, _)| n).collect();
    let fn_keys: Vec<TokenStream> = fn_names
        .iter()
        .map(|n| {
            let id = format_ident!("{}", n);
            match meta_kind(n) {
                MetaKind::Func { optional: true } => quote!(#id.map(|f| f.name)),
                _ => quote!(Some(#id.name)),
            }
        })
        .collect();
    let variant_arms = variants.iter().enumerate().map(|(i, v)| {
        let pats = v.fn_values.iter().map(|(_, val)| match val {
            Some(h) => quote!(Some(#h)),
            None => quote!(None),
        });
        quote!((#(#pats,)*) => #i,)
    });
    let declared_fns = inst
        .fn_metas
        .iter()
        .map(|(n, vs)| format!("{n} in [{}]", vs.iter().map(|v| v.clone().unwrap_or("None".into())).collect::<Vec<_>>().join(", ")))
        .collect::<Vec<_>>()
        .join("; ");

    // Meta for a config index plus the launch-time values.
    let launch_metas: Vec<&crate::ir::MetaParam> = sig
        .metas
        .iter()
        .filter(|m| !matches!(m.kind, MetaKind::Func { .. }))
        .filter(|m| !inst.configs.first().is_some_and(|c| c.metas.iter().any(|(n, _)| *n == m.name)))
        .collect();
    let launch_meta_names: Vec<Ident> = launch_metas.iter().map(|m| format_ident!("{}", m.name)).collect();
    let launch_meta_params: Vec<TokenStream> = launch_metas
        .iter()
        .map(|m| {
            let id = format_ident!("{}", m.name);
            let t = meta_rust_ty(&m.kind);
            quote!(#id: #t)
        })
        .collect();
    let meta_arms = inst.configs.iter().enumerate().map(|(i, c)| {
        let tuned = c.metas.iter().map(|(n, v)| {
            let id = format_ident!("{}", n);
            let val = meta_value_tokens(v, &meta_kind(n));
            quote!(#id: #val)
        });
        let lm = &launch_meta_names;
        quote!(#i => Meta { #(#tuned,)* #(#lm,)* },)
    });

    // CPU implementations, one per variant.
    let meta_ty = quote!(Meta);
    let cpu_fns = variants.iter().enumerate().map(|(i, v)| {
        let f = format_ident!("__cpu_variant_{}", i);
        CpuGen::new(v).function(&f, &meta_ty)
    });
    let scalar_args: Vec<Ident> = sig
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Scalar(_)))
        .map(|p| param_ident(&p.name))
        .collect();
    let ptr_args = sig.params.iter().filter(|p| matches!(p.kind, ParamKind::Ptr(_))).map(|p| {
        let id = param_ident(&p.name);
        let n = &p.name;
        quote!(#rt::ptr_arg(#n, #id))
    });
    let run_arms = (0..variants.len()).map(|i| {
        let f = format_ident!("__cpu_variant_{}", i);
        let sa = &scalar_args;
        quote!(#i => #rt::launch(&self::INFO, __instance, &__ptrs, __dims, &__scalars, &|__ctx| #f(__ctx, &__meta, #(#sa),*)),)
    });
    let all_arg_names: Vec<TokenStream> = {
        let mut v: Vec<TokenStream> = sig.params.iter().map(|p| {
            let id = param_ident(&p.name);
            quote!(#id)
        }).collect();
        for m in &sig.metas {
            if !inst.configs.first().is_some_and(|c| c.metas.iter().any(|(n, _)| *n == m.name)) {
                let id = format_ident!("{}", m.name);
                v.push(quote!(#id));
            }
        }
        v
    };
    let instance_infos: Vec<TokenStream> = keys
        .iter()
        .zip(entries)
        .map(|(key, e)| {
            let entry = &key.entry;
            let (c, v) = (key.config, key.variant);
            let lm = key.launch.iter().map(|(n, val)| {
                let x = val.as_i64();
                quote!((#n, #x))
            });
            let threads = (inst.configs[key.config].num_warps * 32) as u32;
            let smem = e.shared_bytes as u32;
            let tma = e.tma.iter().map(|t| {
                let (ptr, row) = (t.ptr, t.row_stride);
                let col = match t.col_stride {
                    Some(c) => quote!(::core::option::Option::Some(#c)),
                    None => quote!(::core::option::Option::None),
                };
                let (bi, br, sw) = (t.box_inner as u32, t.box_rows as u32, t.swizzle as u32);
                quote!(#rt::TmaOperand { ptr: #ptr, row_stride: #row, col_stride: #col, box_inner: #bi, box_rows: #br, swizzle: #sw })
            });
            let split = e.split_bytes as u32;
            let hidden = e.hidden.iter().map(|h| h.runtime(&rt));
            let split_hidden = e.split_hidden.iter().map(|h| h.runtime(&rt));
            quote!(#rt::InstanceInfo {
                entry: #entry, config: #c, variant: #v, launch_metas: &[#(#lm),*], threads: #threads, shared_bytes: #smem,
                tma: &[#(#tma),*], split_bytes: #split, hidden: &[#(#hidden),*], split_hidden: &[#(#split_hidden),*],
            })
        })
        .collect();
    // Instance index from (config, variant, launch-time values).
    let launch_value_exprs: Vec<TokenStream> = launch_metas
        .iter()
        .map(|m| {
            let id = format_ident!("{}", m.name);
            quote!((#id as i64))
        })
        .collect();
    let scalar_values: Vec<TokenStream> = sig
        .params
        .iter()
        .filter_map(|p| match p.kind {
            ParamKind::Scalar(d) => {
                let id = param_ident(&p.name);
                let v = match d {
                    DType::I8 => quote!(I8),
                    DType::I16 => quote!(I16),
                    DType::I32 => quote!(I32),
                    DType::I64 => quote!(I64),
                    DType::U8 => quote!(U8),
                    DType::U16 => quote!(U16),
                    DType::U32 => quote!(U32),
                    DType::F32 => quote!(F32),
                    DType::F64 => quote!(F64),
                    _ => quote!(Bool),
                };
                Some(quote!(#rt::ScalarArg::#v(#id)))
            }
            ParamKind::Ptr(_) => None,
        })
        .collect();
    let device_entries = entries.iter().map(|e| &e.tokens);
    // Autotuning: key values, what distinguishes instances of one config, scratch copies.
    let key_values: Vec<TokenStream> = inst
        .key
        .iter()
        .map(|k| {
            let id = param_ident(k);
            quote!((#id as i64))
        })
        .collect();
    let n_key = key_values.len();
    // The integer scalar arguments, for the autotuning key's specialization (see
    // `kernel_runtime::__private::specialization`).
    let int_scalars: Vec<TokenStream> = sig
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Scalar(d) if d.is_int()))
        .map(|p| {
            let id = param_ident(&p.name);
            quote!((#id as i64))
        })
        .collect();
    let instance_key_parts: Vec<TokenStream> = sig
        .metas
        .iter()
        .filter(|m| !tuned.contains(&m.name))
        .map(|m| {
            let id = format_ident!("{}", m.name);
            match m.kind {
                MetaKind::Func { optional: true } => quote!(#id.map(|f| f.name)),
                MetaKind::Func { optional: false } => quote!(#id.name),
                _ => quote!(#id),
            }
        })
        .collect();
    let ptr_params: Vec<&crate::ir::Param> = sig.params.iter().filter(|p| matches!(p.kind, ParamKind::Ptr(_))).collect();
    let ptr_args_again: Vec<TokenStream> = ptr_params
        .iter()
        .map(|p| {
            let id = param_ident(&p.name);
            let n = &p.name;
            quote!(#rt::ptr_arg(#n, #id))
        })
        .collect();
    // `r#` dropped as in `param_ident`: `__s_r#type` is no identifier.
    let scratch_names: Vec<Ident> = ptr_params.iter().map(|p| format_ident!("__s_{}", p.name.trim_start_matches("r#"))).collect();
    let scratch_types: Vec<TokenStream> = ptr_params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Ptr(d) => {
                let t = dtype_tokens(d, &rt);
                quote!(::kernel_runtime::Tensor<#t>)
            }
            ParamKind::Scalar(_) => quote!(()),
        })
        .collect();
    let scratch_inits: Vec<TokenStream> = ptr_params
        .iter()
        .map(|p| {
            let id = param_ident(&p.name);
            quote!(#id.try_duplicate().map_err(#rt::LaunchError::from)?)
        })
        .collect();
    let scratch_call_args: Vec<TokenStream> = {
        let mut v: Vec<TokenStream> = sig
            .params
            .iter()
            .map(|p| match p.kind {
                ParamKind::Ptr(_) => {
                    let s = format_ident!("__s_{}", p.name.trim_start_matches("r#"));
                    quote!(#s)
                }
                ParamKind::Scalar(_) => {
                    let id = param_ident(&p.name);
                    quote!(#id)
                }
            })
            .collect();
        for m in &sig.metas {
            if !tuned.contains(&m.name) {
                let id = format_ident!("{}", m.name);
                v.push(quote!(#id));
            }
        }
        v
    };
    let asserts = assert_infos(variants);
    let n_configs = inst.configs.len();
    let n_ptrs = sig.params.iter().filter(|p| matches!(p.kind, ParamKind::Ptr(_))).count();
    let autotuned = inst.autotuned;
    let embedded = embedded_modules();

    quote! {
        #(#docs)*
        ///
        /// Generated by `#[kernel]`: `launch` runs the kernel over a grid; `Meta` holds the
        /// meta-parameters a grid closure sees; `CONFIGS` are the declared configurations.
        #[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, clippy::all)]
        #[cfg(not(target_arch = "nvptx64"))]
        #vis mod #name {
            /// The meta-parameters of one instance, as a grid closure sees them.
            #[derive(Clone, Copy, Debug, PartialEq)]
            pub struct Meta { #(#meta_fields),* }

            /// The declared configurations (autotune configs, or the single default).
            pub const CONFIGS: &[#rt::Config] = &[#(#configs),*];

            /// Whether `launch` chooses among several configs by autotuning.
            pub const AUTOTUNED: bool = #autotuned;

            /// The kernel's signature, for argument validation.
            pub static INFO: #rt::KernelInfo = #rt::KernelInfo {
                name: #kname,
                params: &[#(#params),*],
                configs: CONFIGS,
                key: &[#(#key_names),*],
                instances: &[#(#instance_infos),*],
                module: #rt::ModuleInfo { crate_name: env!("CARGO_CRATE_NAME"), manifest_dir: env!("CARGO_MANIFEST_DIR"), embedded: #embedded },
                asserts: &[#(#asserts),*],
            };

            fn __meta_for(__config: usize, #(#launch_meta_params),*) -> Meta {
                match __config {
                    #(#meta_arms)*
                    _ => ::core::unreachable!(),
                }
            }

            /// Launches the kernel over `grid` (a tuple, or a closure of `&Meta` giving one).
            ///
            /// With several configs, the first launch for a new autotuning key on a GPU
            /// benchmarks every config on scratch copies of the pointer arguments and keeps the
            /// fastest (cached on disk); the CPU backend runs the first config.
            pub fn launch<G: #rt::Grid<Meta>>(__grid: G, #(#args),*) -> ::core::result::Result<(), #rt::LaunchError> {
                let __tuning = if #n_configs > 1 {
                    let __ptrs: [#rt::PtrArg<'_>; #n_ptrs] = [#(#ptr_args_again),*];
                    let __key: [i64; #n_key] = [#(#key_values),*];
                    let __instance_key = format!("{:?} {}", (#(#instance_key_parts,)*), #rt::specialization(&__ptrs, &[#(#int_scalars),*]));
                    let mut __scratch: ::core::option::Option<(#(#scratch_types,)*)> = None;
                    #rt::autotune(&self::INFO, &__ptrs, &__key, &__instance_key, &mut |__c: usize| {
                        if __scratch.is_none() {
                            __scratch = Some((#(#scratch_inits,)*));
                        }
                        match &__scratch {
                            Some((#(#scratch_names,)*)) => self::__launch(__c, &__grid, #(#scratch_call_args),*),
                            None => ::core::unreachable!(),
                        }
                    })?
                } else {
                    #rt::Tuning::default()
                };
                #rt::with_split(__tuning.split, || self::__launch(__tuning.config, &__grid, #(#all_arg_names),*))
            }

            /// Launches with the config `CONFIGS[config]`, without autotuning.
            pub fn launch_config<G: #rt::Grid<Meta>>(__config: usize, __grid: G, #(#args),*) -> ::core::result::Result<(), #rt::LaunchError> {
                self::__launch(__config, &__grid, #(#all_arg_names),*)
            }

            fn __launch(__config: usize, __grid: &dyn #rt::Grid<Meta>, #(#args),*) -> ::core::result::Result<(), #rt::LaunchError> {
                if __config >= #n_configs {
                    return Err(#rt::LaunchError::NoInstance {
                        kernel: #kname,
                        reason: format!("config index {} is out of range ({} configs)", __config, #n_configs),
                    });
                }
                #(#launch_checks)*
                let __variant: usize = match (#(#fn_keys,)*) {
                    #(#variant_arms)*
                    #[allow(unreachable_patterns)]
                    _ => return Err(#rt::LaunchError::NoInstance {
                        kernel: #kname,
                        reason: format!("this function meta-parameter value is not a declared instance ({})", #declared_fns),
                    }),
                };
                let __ptrs: [#rt::PtrArg<'_>; #n_ptrs] = [#(#ptr_args),*];
                let __meta = self::__meta_for(__config, #(#launch_meta_names),*);
                let __dims = __grid.dims(&__meta)?;
                let __launch_values: &[i64] = &[#(#launch_value_exprs),*];
                let __instance = self::INFO
                    .instances
                    .iter()
                    .position(|i| i.config == __config && i.variant == __variant && i.launch_metas.iter().map(|(_, v)| *v).eq(__launch_values.iter().copied()))
                    .ok_or_else(|| #rt::LaunchError::NoInstance { kernel: #kname, reason: "no compiled instance matches these meta-parameters".to_string() })?;
                let __scalars = [#(#scalar_values),*];
                match __variant {
                    #(#run_arms)*
                    _ => ::core::unreachable!(),
                }
            }

            #(#cpu_fns)*
        }

        #[cfg(target_arch = "nvptx64")]
        #[allow(non_snake_case)]
        #vis mod #name {
            #(#device_entries)*
        }
    }
}
