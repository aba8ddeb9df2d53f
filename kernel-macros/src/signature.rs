//! The kernel's signature: parameters (`Ptr<T>` and scalars) and meta-parameters
//! (const generics, including function meta-parameters `const ACT: Option<Func>`).

use crate::diag::Diagnostics;
use crate::ir::{DType, MetaKind, MetaParam, Param, ParamKind};
use crate::diag::SpanRange;
use syn::{FnArg, GenericArgument, GenericParam, Pat, PathArguments, ReturnType, Type};

#[derive(Clone)]
pub struct Signature {
    pub name: syn::Ident,
    pub vis: syn::Visibility,
    pub params: Vec<Param>,
    pub metas: Vec<MetaParam>,
    /// Every const generic's name, including ones with unsupported types (to avoid cascades).
    pub all_const_generics: Vec<String>,
    /// Every parameter as written, in order, for the launch API of the error stub.
    pub api_params: Vec<ApiParam>,
    /// Every const generic as written, in order, for the launch API of the error stub.
    pub api_metas: Vec<ApiMeta>,
    /// Names the body may use whose binding is missing or ambiguous because of a signature
    /// error: statements using them are not lowered (their errors would be cascades).
    pub unbound: Vec<String>,
    /// Const generics of an integer type kernels do not support (`u8`, `i16`, ...): lowering
    /// after the error treats them as integer meta-parameters (it types those alike).
    pub placeholder_metas: Vec<MetaParam>,
}

impl Signature {
    /// The signature lowering uses after a signature error: with the placeholder metas.
    pub fn with_placeholders(&self) -> Signature {
        let mut s = self.clone();
        s.metas.extend(self.placeholder_metas.iter().cloned());
        s
    }
}

/// A parameter as written: its kind, or `None` for a type kernels do not support (the stub
/// accepts any argument there).
#[derive(Clone)]
pub struct ApiParam {
    pub name: String,
    pub kind: Option<ParamKind>,
}

/// A const generic as written: its kind, or the unsupported type it was declared with.
#[derive(Clone)]
pub struct ApiMeta {
    pub name: String,
    pub kind: Result<MetaKind, Type>,
}

/// The dtypes of scalar parameters.
pub const SCALAR_PARAM_DTYPES: [DType; 10] =
    [DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32, DType::Bool];
/// The element types of `Ptr<T>` parameters: every dtype but `bool` (the last of `DType::ALL`).
pub const PTR_DTYPES: &[DType] = DType::ALL.split_last().expect("DType::ALL is not empty").1;

/// The message for a parameter type kernels do not support.
fn unsupported_param_message(ty: &Type) -> String {
    let ptrs = DType::list(PTR_DTYPES, "or");
    let scalars = DType::list(&SCALAR_PARAM_DTYPES, "or");
    if let Some((id, args)) = path_last(ty) {
        if id == "Ptr" {
            let what = single_type_arg(args).map(|t| quote::ToTokens::to_token_stream(t).to_string()).unwrap_or_default();
            return format!("unsupported element type `{what}` in `Ptr<{what}>`: the element type of a pointer is {ptrs}");
        }
        let name = id.to_string();
        if args.is_empty() && matches!(name.as_str(), "f16" | "bf16" | "f8e4m3" | "f8e5m2") {
            return format!("unsupported scalar parameter type `{id}`: a scalar parameter is {scalars} (pass an {id} value as f32 and convert it with `.to::<{id}>()`)");
        }
        if args.is_empty() && matches!(name.as_str(), "u64" | "i128" | "u128" | "usize" | "isize") {
            return format!("unsupported scalar parameter type `{id}`: a scalar parameter is {scalars}");
        }
    }
    format!("unsupported kernel parameter type: use `Ptr<T>` for buffers (T: {ptrs}) or a scalar ({scalars})")
}

/// Reads a function's signature, recording an error for each construct kernels do not support.
pub fn parse_signature(f: &syn::ItemFn, what: &str, diag: &mut Diagnostics) -> Signature {
    let sig = &f.sig;
    check_fn_qualifiers(sig, what, diag);
    let mut unbound = Vec::new();
    let mut placeholder_metas = Vec::new();
    let (metas, api_metas) = parse_generics(sig, &mut unbound, &mut placeholder_metas, diag);
    if let Some(w) = &sig.generics.where_clause {
        diag.error(w.sp(), "where clauses are not supported in kernels");
    }
    let mut params = Vec::new();
    let mut api_params = Vec::new();
    for (i, input) in sig.inputs.iter().enumerate() {
        match input {
            FnArg::Receiver(r) => {
                diag.error(r.sp(), "kernels cannot take `self`");
                unbound.push("self".to_string());
            }
            FnArg::Typed(pt) => {
                let name = match &*pt.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.ident.to_string(),
                    other => {
                        diag.error(other.sp(), "kernel parameters must be plain names");
                        unbound.extend(crate::recover::idents(other));
                        api_params.push(ApiParam { name: format!("__arg{i}"), kind: param_kind(&pt.ty) });
                        continue;
                    }
                };
                let kind = param_kind(&pt.ty);
                match &kind {
                    Some(kind) => params.push(Param { name: name.clone(), kind: kind.clone() }),
                    None => {
                        diag.error(pt.ty.sp(), unsupported_param_message(&pt.ty));
                        unbound.push(name.clone());
                    }
                }
                api_params.push(ApiParam { name, kind });
            }
        }
    }
    unbound.extend(check_unique_names(sig, diag));
    Signature {
        name: sig.ident.clone(),
        vis: f.vis.clone(),
        params,
        metas,
        all_const_generics: const_generic_names(sig),
        api_params,
        api_metas,
        unbound,
        placeholder_metas,
    }
}

/// The generic parameters: supported meta-parameters, and every const generic as written.
/// Names the body cannot use as written (unsupported types, type parameters) go to `unbound`.
fn parse_generics(
    sig: &syn::Signature,
    unbound: &mut Vec<String>,
    placeholders: &mut Vec<MetaParam>,
    diag: &mut Diagnostics,
) -> (Vec<MetaParam>, Vec<ApiMeta>) {
    let mut metas = Vec::new();
    let mut api = Vec::new();
    for g in &sig.generics.params {
        match g {
            GenericParam::Const(c) => {
                let name = c.ident.to_string();
                match meta_kind(&c.ty) {
                    Some(kind) => {
                        metas.push(MetaParam { name: name.clone(), kind: kind.clone(), span: c.ident.sp() });
                        api.push(ApiMeta { name, kind: Ok(kind) });
                    }
                    None => {
                        diag.error(
                            c.ty.sp(),
                            "unsupported meta-parameter type: use an integer type (i32, u32, i64, usize), bool, `Func` or `Option<Func>`",
                        );
                        if is_other_int(&c.ty) {
                            let kind = MetaKind::Int("i32".to_string());
                            placeholders.push(MetaParam { name: name.clone(), kind, span: c.ident.sp() });
                        } else {
                            unbound.push(name.clone());
                        }
                        api.push(ApiMeta { name, kind: Err(c.ty.clone()) });
                    }
                }
            }
            GenericParam::Type(t) => {
                diag.error(
                    t.sp(),
                    "type parameters are not supported in kernels: declare meta-parameters as `const NAME: i32` (or `Option<Func>` for functions)",
                );
                unbound.push(t.ident.to_string());
            }
            GenericParam::Lifetime(l) => diag.error(l.sp(), "lifetime parameters are not supported in kernels"),
        }
    }
    (metas, api)
}

fn const_generic_names(sig: &syn::Signature) -> Vec<String> {
    sig.generics
        .params
        .iter()
        .filter_map(|g| match g {
            GenericParam::Const(c) => Some(c.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// Rule: parameter and meta-parameter names are distinct and do not start with `__`
/// (reserved for generated code). Returns the names declared twice.
fn check_unique_names(sig: &syn::Signature, diag: &mut Diagnostics) -> Vec<String> {
    let mut twice = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut names: Vec<&syn::Ident> = Vec::new();
    for g in &sig.generics.params {
        if let GenericParam::Const(c) = g {
            names.push(&c.ident);
        }
    }
    for input in &sig.inputs {
        if let FnArg::Typed(pt) = input {
            if let Pat::Ident(pi) = &*pt.pat {
                names.push(&pi.ident);
            }
        }
    }
    for id in names {
        let n = id.to_string();
        if n.starts_with("__") {
            diag.error(id.sp(), format!("`{n}`: names starting with `__` are reserved for generated code"));
        } else if seen.contains(&n) {
            diag.error(id.sp(), format!("`{n}` is declared twice: parameters and meta-parameters need distinct names"));
            twice.push(n.clone());
        }
        seen.push(n);
    }
    twice
}

/// Rule: kernels and helpers are plain functions: no async, unsafe, const, extern or variadics.
fn check_fn_qualifiers(sig: &syn::Signature, what: &str, diag: &mut Diagnostics) {
    if let Some(a) = &sig.asyncness {
        diag.error(a.sp(), format!("{what}s cannot be `async`"));
    }
    if let Some(u) = &sig.unsafety {
        diag.error(u.sp(), format!("{what}s cannot be `unsafe`: every access is checked"));
    }
    if let Some(c) = &sig.constness {
        diag.error(c.sp(), format!("{what}s cannot be `const fn`"));
    }
    if let Some(abi) = &sig.abi {
        diag.error(abi.sp(), format!("{what}s cannot declare an ABI"));
    }
    if let Some(v) = &sig.variadic {
        diag.error(v.sp(), format!("{what}s cannot be variadic"));
    }
    if what == "kernel" {
        if let ReturnType::Type(_, t) = &sig.output {
            diag.error(t.sp(), "kernels return nothing: write results with `store(ptrs, value, mask)`");
        }
    }
}

/// The last path segment's name and its generic arguments, for simple paths.
pub fn path_last(ty: &Type) -> Option<(&syn::Ident, &PathArguments)> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => tp.path.segments.last().map(|s| (&s.ident, &s.arguments)),
        Type::Group(g) => path_last(&g.elem),
        Type::Paren(p) => path_last(&p.elem),
        _ => None,
    }
}

pub fn single_type_arg(args: &PathArguments) -> Option<&Type> {
    match args {
        PathArguments::AngleBracketed(ab) if ab.args.len() == 1 => match &ab.args[0] {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// A dtype named by a type (`f16`, `half::f16`, `i32`, ...).
pub fn dtype_of_type(ty: &Type) -> Option<DType> {
    let (id, args) = path_last(ty)?;
    if !args.is_empty() {
        return None;
    }
    DType::from_name(&id.to_string())
}

fn param_kind(ty: &Type) -> Option<ParamKind> {
    let (id, args) = path_last(ty)?;
    if id == "Ptr" {
        let d = dtype_of_type(single_type_arg(args)?)?;
        return PTR_DTYPES.contains(&d).then_some(ParamKind::Ptr(d));
    }
    match dtype_of_type(ty)? {
        d if SCALAR_PARAM_DTYPES.contains(&d) => Some(ParamKind::Scalar(d)),
        _ => None,
    }
}

/// An integer type meta-parameters do not support.
fn is_other_int(ty: &Type) -> bool {
    path_last(ty).is_some_and(|(id, args)| args.is_empty() && ["u8", "u16", "u128", "i8", "i16", "i128"].iter().any(|t| id == t))
}

fn meta_kind(ty: &Type) -> Option<MetaKind> {
    let (id, args) = path_last(ty)?;
    let name = id.to_string();
    match name.as_str() {
        "i32" | "u32" | "i64" | "u64" | "usize" | "isize" if args.is_empty() => Some(MetaKind::Int(name)),
        "bool" if args.is_empty() => Some(MetaKind::Bool),
        "Func" if args.is_empty() => Some(MetaKind::Func { optional: false }),
        "Option" => {
            let (inner, inner_args) = path_last(single_type_arg(args)?)?;
            (inner == "Func" && inner_args.is_empty()).then_some(MetaKind::Func { optional: true })
        }
        _ => None,
    }
}
