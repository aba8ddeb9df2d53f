//! Lowering: the kernel body's Rust syntax (`syn`) to the typed block IR, one variant at a
//! time. Types and shapes are inferred as the IR is built; each typing rule is a `check_*`
//! function of `check.rs`, and every violation is reported at the span of the expression that
//! caused it. Helper calls are inlined here, with the function meta-parameters substituted.

use crate::check::*;
use crate::diag::{Diagnostics, Sp, SpanRange};
use crate::hints;
use crate::ir::*;
use crate::shape::{shape_to_string, Dim, Shape};
use crate::signature::{dtype_of_type, path_last, single_type_arg, Signature};
use std::collections::HashMap;

mod debug;
mod hint;

/// Everything a variant's lowering reads besides the body.
pub struct LowerCtx<'a> {
    pub sig: &'a Signature,
    pub helpers: &'a HashMap<String, &'a syn::ItemFn>,
    /// Concrete meta values of every declared instance, for the power-of-two rule.
    pub concrete: &'a [(HashMap<String, i64>, String)],
}

#[derive(Clone, Debug)]
enum Binding {
    Local(LocalId),
    Param(usize),
    Meta(usize),
    Func(Option<String>),
    Helper(String),
}

const BUILTINS: &str = "program_id, num_programs, arange, zeros, full, load, store, dot, where_, cdiv, min, max, \
minimum, maximum, exp, exp2, expm1, log, log2, log10, log1p, sqrt, sqrt_rn, rsqrt, abs, sin, cos, tanh, erf, sigmoid, \
floor, ceil, rint, trunc, round, isnan, isinf, pow, fma, clamp, umulhi, div_rn, multiple_of, max_contiguous, max_constancy, sum, trans, expand_dims, reshape, broadcast_to, \
argmax, argmin, cumsum, cumprod, xor_sum, associative_scan, reduce, atomic_add, atomic_max, atomic_min, atomic_and, atomic_or, atomic_xor, atomic_xchg, atomic_cas, \
randint, randint4x, rand, rand4x, randn, randn4x, device_assert, device_print, static_assert, static_print";
const METHODS: &str = "to::<T>(), as_col(), as_row(), expand_dims(axis), trans(), reshape([..]), broadcast_to([..]), \
sum(axis), max(axis), min(axis), xor_sum(axis), argmax(axis), argmin(axis), cumsum(axis), cumprod(axis), and the math functions as methods: exp(), log(), sqrt(), abs(), tanh(), pow(y), ...";
const METHOD_NAMES: [&str; 15] =
    ["to", "as_col", "as_row", "expand_dims", "trans", "reshape", "broadcast_to", "sum", "max", "min", "xor_sum", "argmax", "argmin", "cumsum", "cumprod"];
const MAX_INLINE_DEPTH: usize = 16;
/// The most expressions a kernel variant may have once its helpers are inlined (the largest
/// kernel of the repository has under 200): each inlined call copies the helper's body, so a
/// helper calling another twice at every level doubles the kernel's size per level.
pub const MAX_INLINED_EXPRS: usize = 20_000;

struct Lowerer<'a, 'd> {
    cx: &'a LowerCtx<'a>,
    k: Kernel,
    scopes: Vec<HashMap<String, Binding>>,
    stmts: Vec<Vec<Stmt>>,
    diag: &'d mut Diagnostics,
    helper_stack: Vec<String>,
    /// The nesting depth of each expression of `k.exprs` (1 for a leaf).
    depths: Vec<usize>,
    /// How many `lower_expr` calls are active.
    nesting: usize,
    /// Whether the current statement's expression was reported as nested too deeply.
    depth_reported: bool,
    /// The span of the outermost helper call being inlined.
    inline_root: Option<Sp>,
    /// Set once the kernel passed `MAX_INLINED_EXPRS`: helper calls are no longer inlined.
    too_large: bool,
    /// The conditions on meta-parameters of the enclosing `if`s, with the branch taken: the
    /// instances `static_assert` and `static_print` are evaluated in (`debug.rs`).
    static_guards: Vec<(syn::Expr, bool)>,
}

/// Lowers the kernel body for one assignment of the function meta-parameters.
pub fn lower_variant(
    cx: &LowerCtx<'_>,
    body: &syn::Block,
    fn_values: &[(String, Option<String>)],
    diag: &mut Diagnostics,
) -> Kernel {
    let sig = cx.sig;
    let k = Kernel {
        name: sig.name.to_string(),
        params: sig.params.clone(),
        metas: sig.metas.clone(),
        fn_values: fn_values.to_vec(),
        exprs: Vec::new(),
        locals: Vec::new(),
        body: Vec::new(),
    };
    let mut l = Lowerer { cx, k, scopes: vec![], stmts: vec![vec![]], diag, helper_stack: vec![], depths: vec![], nesting: 0, depth_reported: false, inline_root: None, too_large: false, static_guards: vec![] };
    let mut top = l.helper_scope();
    for (i, p) in sig.params.iter().enumerate() {
        top.insert(p.name.clone(), Binding::Param(i));
    }
    for (i, m) in sig.metas.iter().enumerate() {
        let b = match &m.kind {
            MetaKind::Func { .. } => {
                Binding::Func(fn_values.iter().find(|(n, _)| *n == m.name).and_then(|(_, v)| v.clone()))
            }
            _ => Binding::Meta(i),
        };
        top.insert(m.name.clone(), b);
    }
    l.scopes.push(top);
    l.lower_stmts(&body.stmts, false);
    l.k.body = l.stmts.pop().unwrap_or_default();
    l.k
}

/// Syntax-only pass over a helper's body for kernels that never call it: reports the
/// constructs that are not supported even when no call site type-checks the helper.
pub fn check_helper_syntax(f: &syn::ItemFn, diag: &mut Diagnostics) {
    for s in &f.block.stmts {
        if let syn::Stmt::Macro(m) = s {
            diag.error(m.mac.path.sp(), "macros are not supported in kernels");
        }
    }
}

impl<'a, 'd> Lowerer<'a, 'd> {
    fn helper_scope(&self) -> HashMap<String, Binding> {
        self.cx.helpers.keys().map(|h| (h.clone(), Binding::Helper(h.clone()))).collect()
    }

    // ---------------------------------------------------------------- hints

    /// Whether `e` is the plain name `name` and nothing in scope is called that.
    fn is_unbound_ident(&self, e: &syn::Expr, name: &str) -> bool {
        matches!(strip_parens(e), syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident(name)) && self.lookup(name).is_none()
    }

    /// `tl::name` (Triton's module prefix as a path): the name after the prefix.
    fn tl_path(&self, func: &syn::Expr) -> Option<String> {
        let syn::Expr::Path(p) = func else { return None };
        let segs = &p.path.segments;
        let first = segs.first()?;
        (segs.len() == 2 && first.ident == "tl" && self.lookup("tl").is_none()).then(|| segs[1].ident.to_string())
    }

    /// Whether `name(...)` names a builtin, a helper or a function meta-parameter.
    fn is_callable(&self, name: &str) -> bool {
        builtin_names().any(|b| b == name) || matches!(self.lookup(name), Some(Binding::Helper(_) | Binding::Func(_)))
    }

    /// Reports `keyword = value` arguments of `name(...)` (or of the method `x.name(...)`);
    /// true when there was one.
    fn keyword_args(&mut self, name: &str, args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>, method: bool) -> bool {
        let mut found = false;
        for a in args {
            let syn::Expr::Assign(kw) = a else { continue };
            let syn::Expr::Path(p) = &*kw.left else { continue };
            let Some(keyword) = p.path.get_ident().map(|i| i.to_string()) else { continue };
            let helper = self.helper_signature(name);
            let helper_params: Vec<&str> = helper.iter().flat_map(|(_, p)| p.iter().map(|x| x.as_str())).collect();
            let sig = match &helper {
                Some((sig, _)) => Some((sig.as_str(), helper_params.as_slice())),
                None if method => hints::method_signature(name),
                None => hints::builtin_signature(name),
            };
            let msg = hints::keyword_arg_message(&keyword, name, sig);
            self.diag.error(a.sp(), msg);
            found = true;
        }
        found
    }

    /// `helper(a, b)` with its parameter names, when `name` calls a helper.
    fn helper_signature(&self, name: &str) -> Option<(String, Vec<String>)> {
        let h = match self.lookup(name)? {
            Binding::Helper(h) | Binding::Func(Some(h)) => h,
            _ => return None,
        };
        let f = self.cx.helpers.get(h.as_str())?;
        let params: Vec<String> = f
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                syn::FnArg::Typed(t) => match &*t.pat {
                    syn::Pat::Ident(pi) => Some(pi.ident.to_string()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        Some((format!("{name}({})", params.join(", ")), params))
    }

    /// `: did you mean `x`?` for a misspelled local, parameter or meta-parameter.
    fn suggest_value(&self, name: &str) -> String {
        let names: Vec<&String> = self
            .scopes
            .iter()
            .flat_map(|s| s.iter())
            .filter(|(_, b)| matches!(b, Binding::Local(_) | Binding::Param(_) | Binding::Meta(_)))
            .map(|(n, _)| n)
            .collect();
        match hints::did_you_mean(name, names.iter().map(|n| n.as_str())) {
            Some(s) => format!(": did you mean `{s}`?"),
            None => String::new(),
        }
    }

    /// The error for a call to an unknown function: a plain function of the module, or a
    /// misspelling, and what can be called.
    fn unknown_function_message(&self, name: &str) -> String {
        if crate::module::is_plain_fn(name) {
            return format!("`{name}` is a plain function: mark it `#[helper]` to call it from a kernel");
        }
        let mut helpers: Vec<String> = self.cx.helpers.keys().cloned().collect();
        helpers.sort();
        let funcs: Vec<String> = self.scopes.iter().flat_map(|s| s.iter()).filter(|(_, b)| matches!(b, Binding::Func(_))).map(|(n, _)| n.clone()).collect();
        let names = builtin_names().chain(helpers.iter().map(|h| h.as_str())).chain(funcs.iter().map(|f| f.as_str()));
        let hint = match hints::did_you_mean(name, names) {
            Some(s) => format!(" (did you mean `{s}`?)"),
            None => String::new(),
        };
        let helpers = if helpers.is_empty() {
            "helpers are declared with #[helper] in the same #[kernel_module]".to_string()
        } else {
            format!("this module's helpers are {}", helpers.join(", "))
        };
        format!("unknown function `{name}` in kernel{hint}: the block language provides {BUILTINS}; {helpers}")
    }

    // ---------------------------------------------------------------- building blocks

    fn err(&mut self, span: Sp, msg: impl Into<String>) -> ExprId {
        self.diag.error(span, msg);
        self.poison(span)
    }

    fn poison(&mut self, span: Sp) -> ExprId {
        self.push(ExprKind::Lit(Lit::Int(0)), Ty::error(), span)
    }

    /// Adds an expression; one nesting deeper than `depth::MAX_DEPTH` is an error.
    fn push(&mut self, kind: ExprKind, ty: Ty, span: Sp) -> ExprId {
        let depth = 1 + kind.operands().iter().map(|&o| self.depths[o]).max().unwrap_or(0);
        if depth > crate::depth::MAX_DEPTH {
            self.too_deep(span);
            return self.poison(span);
        }
        self.k.exprs.push(Expr { kind, ty, span });
        self.depths.push(depth);
        self.k.exprs.len() - 1
    }

    fn ty(&self, id: ExprId) -> Ty {
        self.k.exprs[id].ty.clone()
    }

    fn span(&self, id: ExprId) -> Sp {
        self.k.exprs[id].span
    }

    fn emit(&mut self, s: Stmt) {
        if let Some(top) = self.stmts.last_mut() {
            top.push(s);
        }
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name).cloned())
    }

    fn bind(&mut self, name: String, b: Binding) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name, b);
        }
    }

    fn new_local(&mut self, name: &str, ty: Ty, mutable: bool) -> LocalId {
        self.k.locals.push(Local { name: name.to_string(), ty, mutable });
        self.k.locals.len() - 1
    }

    /// Gives expression `id` dtype `d`: weak literals and meta-parameters are retyped in
    /// place; anything else gets an explicit conversion node.
    fn coerce(&mut self, id: ExprId, d: DType) -> ExprId {
        let ty = self.ty(id);
        if ty.is_error() || ty.dtype() == Some(d) && !ty.weak {
            return id;
        }
        if let ExprKind::Lit(Lit::Int(v)) = self.k.exprs[id].kind {
            if !int_fits(v, d) {
                let sp = self.span(id);
                self.diag.error(sp, format!("literal {v} does not fit {d}"));
            }
        }
        if let ExprKind::Full(v) = self.k.exprs[id].kind {
            if ty.weak {
                // `full([B], -1e30)`: the fill value takes the dtype (rounded once).
                let v = self.coerce(v, d);
                self.k.exprs[id].kind = ExprKind::Full(v);
                self.k.exprs[id].ty = Ty { elem: Elem::Val(d), shape: ty.shape, weak: false };
                return id;
            }
        }
        let e = &mut self.k.exprs[id];
        if matches!(e.kind, ExprKind::Lit(_) | ExprKind::Meta(_)) {
            e.ty = Ty { elem: Elem::Val(d), shape: e.ty.shape.clone(), weak: false };
            return id;
        }
        if ty.dtype() == Some(d) {
            // A weak local already stored with this dtype.
            return id;
        }
        let span = self.span(id);
        self.push(ExprKind::Cast(id), Ty { elem: Elem::Val(d), shape: ty.shape, weak: false }, span)
    }

    /// The dtype a weak value takes when nothing else decides.
    fn default_dtype(ty: &Ty) -> Option<DType> {
        ty.dtype()
    }

    // ---------------------------------------------------------------- statements

    fn lower_stmts(&mut self, stmts: &[syn::Stmt], is_helper: bool) -> Option<ExprId> {
        let mut result = None;
        for (i, s) in stmts.iter().enumerate() {
            let last = i + 1 == stmts.len();
            match s {
                syn::Stmt::Local(l) => self.lower_let(l),
                syn::Stmt::Item(item) => {
                    self.diag.error(
                        item.sp(),
                        "items are not supported inside kernels: define helper functions with #[helper] in a #[kernel_module]",
                    );
                }
                syn::Stmt::Macro(m) => {
                    self.diag.error(m.mac.path.sp(), "macros are not supported in kernels");
                }
                syn::Stmt::Expr(e, semi) => {
                    if let (true, true, syn::Expr::Return(syn::ExprReturn { expr: Some(v), .. })) = (is_helper, last, e) {
                        // `return x;` as a helper's last statement is its result.
                        result = Some(self.lower_expr(v));
                    } else if is_helper && last && semi.is_none() && !is_statement_expr(e) {
                        result = Some(self.lower_expr(e));
                    } else {
                        self.lower_expr_stmt(e);
                    }
                }
            }
        }
        result
    }

    fn lower_let(&mut self, l: &syn::Local) {
        if let syn::Pat::Tuple(t) = &l.pat {
            return self.lower_tuple_let(t, l);
        }
        let (name, mutable, span) = match &l.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                (pi.ident.to_string(), pi.mutability.is_some(), pi.ident.sp())
            }
            syn::Pat::Type(pt) => {
                self.diag.error(
                    pt.ty.sp(),
                    "type annotations are not supported on kernel variables: types are inferred; convert with `.to::<T>()`",
                );
                return;
            }
            other => {
                self.diag.error(other.sp(), "only `let name = ...`, `let mut name = ...` and `let (a, b) = ...` are supported in kernels");
                return;
            }
        };
        let Some(init) = &l.init else {
            self.diag.error(span, format!("`{name}` must be initialized where it is declared"));
            return;
        };
        if let Some((_, diverge)) = &init.diverge {
            self.diag.error(diverge.sp(), "`let ... else` is not supported in kernels");
        }
        let value = self.lower_expr(&init.expr);
        let mut ty = self.ty(value);
        let value = if mutable && ty.weak {
            // A mutable variable holds one dtype: weak values take their default.
            let d = Self::default_dtype(&ty).unwrap_or(DType::I32);
            ty = ty.strong();
            self.coerce(value, d)
        } else {
            value
        };
        let local = self.new_local(&name, ty, mutable);
        self.emit(Stmt::Let { local, value });
        self.bind(name, Binding::Local(local));
    }

    /// `let (r0, r1, r2, r3) = randint4x(seed, offsets);` (also `rand4x`, `randn4x`) and
    /// `let (a, b) = (x, y);`: one immutable local per name (`_` skips one).
    fn lower_tuple_let(&mut self, t: &syn::PatTuple, l: &syn::Local) {
        let mut names: Vec<Option<(String, Sp)>> = Vec::new();
        for p in &t.elems {
            match p {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                    names.push(Some((pi.ident.to_string(), pi.ident.sp())))
                }
                syn::Pat::Wild(_) => names.push(None),
                other => {
                    self.diag.error(other.sp(), "tuple patterns in kernels bind plain names (or `_`), immutably");
                    return;
                }
            }
        }
        let Some(init) = &l.init else {
            self.diag.error(t.sp(), "tuple variables must be initialized where they are declared");
            return;
        };
        let values: Vec<ExprId> = match strip_parens(&init.expr) {
            syn::Expr::Tuple(tu) if tu.elems.len() == names.len() => tu.elems.iter().map(|e| self.lower_expr(e)).collect(),
            syn::Expr::Call(c) if call_name(c).and_then(|n| RandKind::from_builtin(&n)).is_some_and(|(_, four)| four) && names.len() == 4 => {
                let name = call_name(c).unwrap_or_default();
                let (kind, _) = RandKind::from_builtin(&name).unwrap_or((RandKind::Int, true));
                let args: Vec<&syn::Expr> = c.args.iter().collect();
                let span = c.sp();
                let Some((seed, offset, rounds)) = self.random_operands(&name, &args, span) else { return };
                // Seed and offsets once, in locals the four words read.
                let (seed, offset) = (self.bind_hidden("rand_seed", seed), self.bind_hidden("rand_offsets", offset));
                (0..4u8)
                    .map(|w| {
                        let (s, o) = (self.reread(seed, span), self.reread(offset, span));
                        self.random(kind, s, o, true, w, rounds, span)
                    })
                    .collect()
            }
            other => {
                let msg = format!(
                    "a tuple of {} names takes a tuple of {} values, or the four blocks of `randint4x`, `rand4x` or `randn4x`",
                    names.len(),
                    names.len()
                );
                self.diag.error(other.sp(), msg);
                return;
            }
        };
        for (name, value) in names.into_iter().zip(values) {
            let Some((name, _)) = name else { continue };
            let ty = self.ty(value);
            let local = self.new_local(&name, ty, false);
            self.emit(Stmt::Let { local, value });
            self.bind(name, Binding::Local(local));
        }
    }

    /// A hidden immutable local holding `value` (poison stays poison).
    fn bind_hidden(&mut self, name: &str, value: ExprId) -> ExprId {
        let ty = self.ty(value);
        if ty.is_error() {
            return value;
        }
        let local = self.new_local(name, ty.clone(), false);
        self.emit(Stmt::Let { local, value });
        let span = self.span(value);
        self.push(ExprKind::Local(local), ty, span)
    }

    /// A new node reading the same local as `id` (one owner per node).
    fn reread(&mut self, id: ExprId, span: Sp) -> ExprId {
        match self.k.exprs[id].kind {
            ExprKind::Local(l) => {
                let ty = self.ty(id);
                self.push(ExprKind::Local(l), ty, span)
            }
            _ => self.poison(span),
        }
    }

    fn lower_expr_stmt(&mut self, e: &syn::Expr) {
        match e {
            syn::Expr::Assign(a) => {
                let v = self.lower_expr(&a.right);
                self.assign(&a.left, v, a.sp());
            }
            syn::Expr::Binary(b) if compound_op(&b.op).is_some() => {
                let op = compound_op(&b.op).unwrap_or(BinOp::Add);
                let cur = self.lower_expr(&b.left);
                let rhs = self.lower_expr(&b.right);
                let v = self.binary(op, cur, rhs, b.op.sp());
                self.assign(&b.left, v, b.sp());
            }
            syn::Expr::ForLoop(f) => self.lower_for(f),
            syn::Expr::If(i) => self.lower_if(i),
            syn::Expr::Return(r) => {
                if !self.helper_stack.is_empty() {
                    self.diag.error(r.sp(), "early `return` is not supported in helpers: end the helper with its result expression");
                } else if let Some(v) = &r.expr {
                    self.diag.error(v.sp(), "kernels return nothing: `return;` ends the program instance");
                } else {
                    self.emit(Stmt::Return);
                }
            }
            syn::Expr::Call(c) if call_name(c).as_deref() == Some("store") => self.lower_store(c),
            syn::Expr::Call(c) if call_name(c).is_some_and(|n| debug::is_debug_builtin(&n) && self.lookup(&n).is_none()) => {
                self.lower_debug_call(&call_name(c).unwrap_or_default(), c)
            }
            syn::Expr::Block(b) if b.label.is_none() => {
                self.scopes.push(HashMap::new());
                self.lower_stmts(&b.block.stmts, false);
                self.scopes.pop();
            }
            syn::Expr::While(w) => self.lower_while(w),
            syn::Expr::Loop(l) => {
                self.diag.error(l.loop_token.span, "`loop` is not supported in kernels: use `for i in (start..end).step_by(step)`");
            }
            syn::Expr::Break(b) => {
                self.diag.error(b.sp(), "`break` is not supported in kernels: bound the loop instead, or use a mask");
            }
            syn::Expr::Continue(c) => {
                self.diag.error(c.sp(), "`continue` is not supported in kernels: use `if` or a mask");
            }
            other => {
                // A helper call may store and an atomic writes: their values may be dropped.
                // Any other value is an error.
                let v = self.lower_expr(other);
                let ty = self.ty(v);
                if is_atomic_call(other) {
                    return;
                }
                if !self.calls_helper(other) {
                    if !ty.is_error() {
                        self.diag.error(other.sp(), "this value is computed but never used: store the result with `store(ptrs, value, mask)` or remove it");
                    }
                    return;
                }
                let local = self.new_local("_", ty, false);
                self.emit(Stmt::Let { local, value: v });
            }
        }
    }

    /// Whether `e` is a call to a helper (directly or through a function meta-parameter).
    fn calls_helper(&self, e: &syn::Expr) -> bool {
        match strip_parens(e) {
            syn::Expr::Call(c) => call_name(c).is_some_and(|n| matches!(self.lookup(&n), Some(Binding::Helper(_) | Binding::Func(_)))),
            _ => false,
        }
    }

    fn assign(&mut self, target: &syn::Expr, value: ExprId, span: Sp) {
        let name = match target {
            syn::Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident().map(|i| i.to_string()).unwrap_or_default(),
            other => {
                self.diag.error(other.sp(), "only variables can be assigned in kernels; write memory with `store(ptrs, value, mask)`");
                return;
            }
        };
        let tspan = target.sp();
        match self.lookup(&name) {
            Some(Binding::Local(l)) => {
                let local = self.k.locals[l].clone();
                if !local.mutable {
                    self.diag.error(tspan, format!("cannot assign twice to immutable variable `{name}`: declare it with `let mut {name}`"));
                    return;
                }
                let vty = self.ty(value);
                if vty.is_error() || local.ty.is_error() {
                    return;
                }
                let value = match (vty.weak, local.ty.dtype()) {
                    (true, Some(d)) if vty.shape == local.ty.shape => self.coerce(value, d),
                    _ => value,
                };
                let vty = self.ty(value);
                if let Err(m) = check_assign(&local.ty, &vty, &name) {
                    self.diag.error(span, m);
                    return;
                }
                self.emit(Stmt::Assign { local: l, value });
            }
            Some(Binding::Param(_)) => {
                self.diag.error(tspan, format!("cannot assign to parameter `{name}`: shadow it with `let {name} = ...`"));
            }
            Some(Binding::Meta(_)) | Some(Binding::Func(_)) => {
                self.diag.error(tspan, format!("cannot assign to meta-parameter `{name}`: it is fixed at compile time"));
            }
            Some(Binding::Helper(_)) => {
                self.diag.error(tspan, format!("cannot assign to helper function `{name}`"));
            }
            None => {
                let hint = self.suggest_value(&name);
                self.diag.error(tspan, format!("cannot find variable `{name}` in this kernel{hint}"));
            }
        }
    }

    fn lower_for(&mut self, f: &syn::ExprForLoop) {
        let var_name = match &*f.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => pi.ident.to_string(),
            syn::Pat::Wild(_) => "_".to_string(),
            other => {
                self.diag.error(other.sp(), "the loop variable must be a plain name");
                return;
            }
        };
        let (start, end, step) = match self.lower_range(&f.expr) {
            Some(r) => r,
            None => return,
        };
        let types = [self.ty(start), self.ty(end), self.ty(step)];
        let mut d = DType::I32;
        let mut bad = false;
        for (t, id) in types.iter().zip([start, end, step]) {
            if t.is_error() {
                bad = true;
                continue;
            }
            if !t.is_scalar() || !t.dtype().is_some_and(|d| d.is_int()) {
                self.diag.error(self.span(id), format!("loop bounds and step must be integer scalars, found {t}"));
                bad = true;
            } else if !t.weak {
                let td = t.dtype().unwrap_or(DType::I32);
                d = if td.bits() > d.bits() { td } else { d };
            }
        }
        if let ExprKind::Lit(Lit::Int(0)) = self.k.exprs[step].kind {
            self.diag.error(self.span(step), "the loop step must not be zero");
            bad = true;
        }
        if bad {
            return;
        }
        let (start, end, step) = (self.coerce(start, d), self.coerce(end, d), self.coerce(step, d));
        let var = self.new_local(&var_name, Ty::scalar(d), false);
        self.scopes.push(HashMap::new());
        self.bind(var_name, Binding::Local(var));
        self.stmts.push(vec![]);
        self.lower_stmts(&f.body.stmts, false);
        let body = self.stmts.pop().unwrap_or_default();
        self.scopes.pop();
        self.emit(Stmt::For { var, start, end, step, body, span: f.for_token.span.into() });
    }

    /// `while cond { body }` with a scalar bool condition, evaluated (with what it computes,
    /// atomics included) before every iteration.
    fn lower_while(&mut self, w: &syn::ExprWhile) {
        if let Some(l) = &w.label {
            self.diag.error(l.sp(), "loop labels are not supported in kernels");
            return;
        }
        if let syn::Expr::Let(l) = strip_parens(&w.cond) {
            self.diag.error(l.sp(), "`while let` is not supported in kernels: use `while cond { ... }` with a scalar bool");
            return;
        }
        self.stmts.push(vec![]);
        let cond = self.lower_expr(&w.cond);
        let mut pre = self.stmts.pop().unwrap_or_default();
        let t = self.ty(cond);
        if t.is_error() {
            return;
        }
        if t != Ty::scalar(DType::Bool) && t != Ty::weak(DType::Bool) {
            let msg = format!(
                "the condition of `while` must be a scalar bool, found {t}: the program runs the loop as a whole; reduce a block condition first, e.g. `while x.max(0) > 0.5`"
            );
            self.diag.error(w.cond.sp(), msg);
            return;
        }
        let span = self.span(cond);
        let local = self.new_local("while_cond", Ty::scalar(DType::Bool), false);
        pre.push(Stmt::Let { local, value: cond });
        let test = self.push(ExprKind::Local(local), Ty::scalar(DType::Bool), span);
        self.scopes.push(HashMap::new());
        self.stmts.push(vec![]);
        self.lower_stmts(&w.body.stmts, false);
        let body = self.stmts.pop().unwrap_or_default();
        self.scopes.pop();
        self.emit(Stmt::While { pre, test, body });
    }

    /// `a..b`, `(a..b).step_by(s)`, `range(a, b)` or `range(a, b, s)`.
    fn lower_range(&mut self, e: &syn::Expr) -> Option<(ExprId, ExprId, ExprId)> {
        let e = strip_parens(e);
        match e {
            syn::Expr::Range(r) => {
                if let syn::RangeLimits::Closed(c) = r.limits {
                    self.diag.error(c.sp(), "inclusive ranges are not supported in kernel loops: use `start..end`");
                    return None;
                }
                let (Some(a), Some(b)) = (&r.start, &r.end) else {
                    self.diag.error(r.sp(), "loop ranges need a start and an end: `start..end`");
                    return None;
                };
                let a = self.lower_expr(a);
                let b = self.lower_expr(b);
                let one = self.push(ExprKind::Lit(Lit::Int(1)), Ty::weak(DType::I32), r.sp());
                Some((a, b, one))
            }
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                let (a, b, _) = self.lower_range(&m.receiver)?;
                let s = self.lower_expr(&m.args[0]);
                Some((a, b, s))
            }
            syn::Expr::Call(c) if call_name(c).as_deref() == Some("range") && (2..=3).contains(&c.args.len()) => {
                let a = self.lower_expr(&c.args[0]);
                let b = self.lower_expr(&c.args[1]);
                let s = match c.args.get(2) {
                    Some(s) => self.lower_expr(s),
                    None => self.push(ExprKind::Lit(Lit::Int(1)), Ty::weak(DType::I32), c.sp()),
                };
                Some((a, b, s))
            }
            other => {
                self.diag.error(
                    other.sp(),
                    "kernel loops iterate over `start..end`, `(start..end).step_by(step)` or `range(start, end, step)`",
                );
                None
            }
        }
    }

    fn lower_if(&mut self, i: &syn::ExprIf) {
        // `if let Some(f) = FUNC_META { ... }`: resolved per variant at compile time.
        if let syn::Expr::Let(l) = &*i.cond {
            self.lower_if_let(i, l);
            return;
        }
        let cond = self.lower_expr(&i.cond);
        let cty = self.ty(cond);
        if !cty.is_error() {
            if !cty.is_scalar() {
                self.diag.error(
                    i.cond.sp(),
                    format!("`if` needs a scalar bool condition, found a block {cty}: select elementwise with `where_(mask, a, b)`"),
                );
            } else if cty.dtype() != Some(DType::Bool) {
                self.diag.error(i.cond.sp(), format!("`if` needs a bool condition, found {cty}"));
            }
        }
        // A condition on meta-parameters decides, per instance, which branch the static
        // assertions and prints inside are evaluated for.
        let guard = self.is_static_condition(&i.cond).then(|| (*i.cond).clone());
        let guarded = |l: &mut Self, taken: bool, f: &mut dyn FnMut(&mut Self) -> Vec<Stmt>| {
            if let Some(g) = &guard {
                l.static_guards.push((g.clone(), taken));
            }
            let out = f(l);
            if guard.is_some() {
                l.static_guards.pop();
            }
            out
        };
        let then = guarded(self, true, &mut |l| l.lower_branch(&i.then_branch.stmts));
        let els = match &i.else_branch {
            None => vec![],
            Some((_, e)) => guarded(self, false, &mut |l| match &**e {
                syn::Expr::Block(b) => l.lower_branch(&b.block.stmts),
                syn::Expr::If(nested) => {
                    l.stmts.push(vec![]);
                    l.scopes.push(HashMap::new());
                    l.lower_if(nested);
                    l.scopes.pop();
                    l.stmts.pop().unwrap_or_default()
                }
                other => {
                    l.diag.error(other.sp(), "unsupported else branch");
                    vec![]
                }
            }),
        };
        self.emit(Stmt::If { cond, then, els });
    }

    fn lower_branch(&mut self, stmts: &[syn::Stmt]) -> Vec<Stmt> {
        self.stmts.push(vec![]);
        self.scopes.push(HashMap::new());
        self.lower_stmts(stmts, false);
        self.scopes.pop();
        self.stmts.pop().unwrap_or_default()
    }

    fn lower_if_let(&mut self, i: &syn::ExprIf, l: &syn::ExprLet) {
        let meta_name = match &*l.expr {
            syn::Expr::Path(p) => p.path.get_ident().map(|x| x.to_string()),
            _ => None,
        };
        let binding = meta_name.as_ref().and_then(|n| self.lookup(n));
        let Some(Binding::Func(value)) = binding else {
            self.diag.error(l.expr.sp(), "`if let` in kernels only tests an optional function meta-parameter: `if let Some(f) = ACTIVATION`");
            return;
        };
        let meta_name = meta_name.unwrap_or_default();
        let optional = self.k.metas.iter().any(|m| m.name == meta_name && m.kind == MetaKind::Func { optional: true });
        if !optional {
            self.diag.error(l.expr.sp(), format!("`{meta_name}` is `Func`, not `Option<Func>`: call it directly"));
            return;
        }
        let inner = match &*l.pat {
            syn::Pat::TupleStruct(ts) if ts.path.is_ident("Some") && ts.elems.len() == 1 => match &ts.elems[0] {
                syn::Pat::Ident(pi) => pi.ident.to_string(),
                syn::Pat::Wild(_) => "_".to_string(),
                other => {
                    self.diag.error(other.sp(), "expected `Some(name)`");
                    return;
                }
            },
            other => {
                self.diag.error(other.sp(), "expected `Some(name)`");
                return;
            }
        };
        match value {
            Some(h) => {
                self.stmts.push(vec![]);
                self.scopes.push(HashMap::new());
                self.bind(inner, Binding::Helper(h));
                self.lower_stmts(&i.then_branch.stmts, false);
                self.scopes.pop();
                let then = self.stmts.pop().unwrap_or_default();
                for s in then {
                    self.emit(s);
                }
            }
            None => {
                if let Some((_, e)) = &i.else_branch {
                    match &**e {
                        syn::Expr::Block(b) => {
                            let els = self.lower_branch(&b.block.stmts);
                            for s in els {
                                self.emit(s);
                            }
                        }
                        syn::Expr::If(nested) => self.lower_if(nested),
                        other => {
                            self.diag.error(other.sp(), "unsupported else branch");
                        }
                    }
                }
            }
        }
    }

    fn lower_store(&mut self, c: &syn::ExprCall) {
        if self.keyword_args("store", &c.args, false) {
            return;
        }
        if !(2..=3).contains(&c.args.len()) {
            self.diag.error(c.sp(), "store takes (pointers, value) or (pointers, value, mask)");
            return;
        }
        let ptr = self.lower_expr(&c.args[0]);
        let value = self.lower_expr(&c.args[1]);
        let mask = c.args.get(2).map(|m| self.lower_expr(m));
        let pty = self.ty(ptr);
        let vty = self.ty(value);
        if pty.is_error() || vty.is_error() {
            return;
        }
        let Elem::Ptr(d) = pty.elem else {
            self.diag.error(c.args[0].sp(), format!("store needs a pointer or a block of pointers, found {pty}"));
            return;
        };
        if let Err(m) = check_value_dtype(&vty, d, "the stored value") {
            self.diag.error(c.args[1].sp(), m);
            return;
        }
        if let Err(m) = check_broadcast_to(&vty, &pty.shape, "the stored value") {
            self.diag.error(c.args[1].sp(), m);
            return;
        }
        let value = self.coerce(value, d);
        if let Some(m) = mask {
            let mty = self.ty(m);
            if !mty.is_error() {
                if let Err(msg) = check_mask(&mty, &pty.shape) {
                    self.diag.error(c.args[2].sp(), msg);
                    return;
                }
            }
        }
        self.emit(Stmt::Store { ptr, value, mask, span: c.sp() });
    }

    // ---------------------------------------------------------------- expressions

    /// Lowers `e`; the recursion stops at `depth::MAX_DEPTH` nested calls (nesting across
    /// inlined helpers).
    fn lower_expr(&mut self, e: &syn::Expr) -> ExprId {
        if self.nesting >= crate::depth::MAX_DEPTH {
            let span = e.sp();
            self.too_deep(span);
            return self.poison(span);
        }
        self.nesting += 1;
        let id = self.lower_expr_kind(e);
        self.nesting -= 1;
        if self.nesting == 0 {
            self.depth_reported = false;
        }
        id
    }

    /// Reports, once per statement, an expression nested deeper than `depth::MAX_DEPTH`: at
    /// the outermost helper call being inlined, else at `span`.
    fn too_deep(&mut self, span: Sp) {
        if !self.depth_reported {
            self.depth_reported = true;
            let at = if self.helper_stack.is_empty() { span } else { self.inline_root.unwrap_or(span) };
            self.diag.error(at, crate::depth::inlined_depth_message(&self.helper_stack));
        }
    }

    fn lower_expr_kind(&mut self, e: &syn::Expr) -> ExprId {
        let span = e.sp();
        match e {
            syn::Expr::Lit(l) => self.lower_lit(&l.lit),
            syn::Expr::Paren(p) => self.lower_expr(&p.expr),
            syn::Expr::Group(g) => self.lower_expr(&g.expr),
            syn::Expr::Path(p) => self.lower_path(p),
            syn::Expr::Binary(b) => {
                if compound_op(&b.op).is_some() {
                    return self.err(span, "compound assignment is a statement in kernels, not a value");
                }
                let op = match b.op {
                    syn::BinOp::Add(_) => BinOp::Add,
                    syn::BinOp::Sub(_) => BinOp::Sub,
                    syn::BinOp::Mul(_) => BinOp::Mul,
                    syn::BinOp::Div(_) => BinOp::Div,
                    syn::BinOp::Rem(_) => BinOp::Rem,
                    syn::BinOp::BitAnd(_) => BinOp::And,
                    syn::BinOp::BitOr(_) => BinOp::Or,
                    syn::BinOp::BitXor(_) => BinOp::Xor,
                    syn::BinOp::Shl(_) => BinOp::Shl,
                    syn::BinOp::Shr(_) => BinOp::Shr,
                    syn::BinOp::Lt(_) => BinOp::Lt,
                    syn::BinOp::Le(_) => BinOp::Le,
                    syn::BinOp::Gt(_) => BinOp::Gt,
                    syn::BinOp::Ge(_) => BinOp::Ge,
                    syn::BinOp::Eq(_) => BinOp::Eq,
                    syn::BinOp::Ne(_) => BinOp::Ne,
                    syn::BinOp::And(_) | syn::BinOp::Or(_) => {
                        let sym = if matches!(b.op, syn::BinOp::And(_)) { "&" } else { "|" };
                        return self.err(
                            b.op.sp(),
                            format!("short-circuit operators are not supported in kernels: combine masks with `{sym}` (parenthesize comparisons)"),
                        );
                    }
                    _ => return self.err(b.op.sp(), "unsupported operator in kernels"),
                };
                if let (BinOp::Mul, syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), .. })) = (op, &*b.right) {
                    return self.err(b.op.sp().to(b.right.sp()), "there is no `**` operator: multiply (`x * x`), or raise to a power with `exp2(y * log2(x))`");
                }
                let l = self.lower_expr(&b.left);
                let r = self.lower_expr(&b.right);
                self.binary(op, l, r, span)
            }
            syn::Expr::Unary(u) => {
                let x = self.lower_expr(&u.expr);
                match u.op {
                    syn::UnOp::Neg(_) => self.unary(UnOp::Neg, x, span),
                    syn::UnOp::Not(_) => self.unary(UnOp::Not, x, span),
                    _ => self.err(u.op.sp(), "dereferencing is not supported in kernels: read memory with `load(ptrs)`"),
                }
            }
            syn::Expr::Cast(c) => {
                let x = self.lower_expr(&c.expr);
                match dtype_of_type(&c.ty) {
                    Some(d) => self.cast(x, d, span),
                    None => self.err(c.ty.sp(), format!("unknown dtype: expected {}", DType::list(&DType::ALL, "or"))),
                }
            }
            syn::Expr::Call(c) => self.lower_call(c),
            syn::Expr::MethodCall(m) => self.lower_method(m),
            syn::Expr::Index(i) => self.err(
                i.sp(),
                "indexing is not supported in kernels: build pointer blocks and `load` them; for `x[:, None]` / `x[None, :]` use `x.as_col()` / `x.as_row()`",
            ),
            syn::Expr::If(i) => self.err(
                i.if_token.span.into(),
                "`if` is a statement in kernels, not a value: select elementwise with `where_(cond, a, b)`",
            ),
            syn::Expr::Macro(m) => self.err(m.mac.path.sp(), "macros are not supported in kernels"),
            syn::Expr::Closure(c) => self.err(c.sp(), "closures are not supported in kernels: define a #[helper] function"),
            syn::Expr::Reference(r) => self.err(r.sp(), "references are not supported in kernels: blocks are values"),
            syn::Expr::Field(f) => self.lower_field(f),
            syn::Expr::Tuple(t) => self.err(t.sp(), "tuples are only supported as block shapes, like `zeros::<f32>([BLOCK_M, BLOCK_N])`"),
            syn::Expr::Array(a) => self.err(a.sp(), "arrays are only supported as block shapes, like `zeros::<f32>([BLOCK_M, BLOCK_N])`"),
            syn::Expr::Range(r) => self.err(r.sp(), "ranges are only supported in `for` loops; for a block of indices use `arange(start, end)`"),
            syn::Expr::Match(m) => self.err(m.match_token.span.into(), "`match` is not supported in kernels: use `if`/`else` or `where_`"),
            syn::Expr::Unsafe(u) => self.err(u.unsafe_token.span.into(), "`unsafe` is not supported in kernels: every access is checked"),
            syn::Expr::Struct(s) => self.err(s.sp(), "struct literals are not supported in kernels"),
            syn::Expr::Verbatim(v) => match crate::depth::marker_error(v) {
                Some((sp, msg)) => self.err(sp, msg),
                None => self.err(span, "this expression is not supported in kernels"),
            },
            _ => self.err(span, "this expression is not supported in kernels"),
        }
    }

    /// A dtype written as a value, `tl.float16` or `f16`: its Rust name.
    fn dtype_value(&self, e: &syn::Expr) -> Option<&'static str> {
        match strip_parens(e) {
            syn::Expr::Field(f) if self.is_unbound_ident(&f.base, "tl") => match &f.member {
                syn::Member::Named(n) => hints::triton_dtype(&n.to_string()),
                _ => None,
            },
            syn::Expr::Path(p) if p.qself.is_none() => {
                let name = p.path.get_ident()?.to_string();
                let d = DType::from_name(&name)?;
                self.lookup(&name).is_none().then_some(d.name())
            }
            _ => None,
        }
    }

    fn lower_field(&mut self, f: &syn::ExprField) -> ExprId {
        let dtype = match &f.member {
            syn::Member::Named(n) if self.is_unbound_ident(&f.base, "tl") => hints::triton_dtype(&n.to_string()),
            _ => None,
        };
        match dtype {
            Some(d) => self.err(f.sp(), format!("drop the `tl.` prefix: dtypes are Rust types here, `{d}`, as in `x.to::<{d}>()`")),
            None => self.err(f.sp(), "field access is not supported in kernels"),
        }
    }

    fn lower_lit(&mut self, l: &syn::Lit) -> ExprId {
        let span = l.sp();
        match l {
            syn::Lit::Int(i) => {
                let Ok(v) = i.base10_parse::<i64>() else {
                    return self.err(span, "integer literal out of range for i64");
                };
                match i.suffix() {
                    "" => self.push(ExprKind::Lit(Lit::Int(v)), Ty::weak(DType::I32), span),
                    s => match DType::from_name(s) {
                        Some(d) if d != DType::Bool && !int_fits(v, d) => self.err(span, format!("literal {v} does not fit {d}")),
                        Some(d) if d != DType::Bool => self.push(ExprKind::Lit(Lit::Int(v)), Ty::scalar(d), span),
                        _ => self.err(span, format!("unsupported literal suffix `{s}`")),
                    },
                }
            }
            syn::Lit::Float(f) => {
                let Ok(v) = f.base10_parse::<f64>() else {
                    return self.err(span, "invalid float literal");
                };
                match f.suffix() {
                    "" => self.push(ExprKind::Lit(Lit::Float(v)), Ty::weak(DType::F32), span),
                    "f32" if !(v as f32).is_finite() => self.err(span, "float literal out of range for f32"),
                    "f32" => self.push(ExprKind::Lit(Lit::Float(v)), Ty::scalar(DType::F32), span),
                    "f64" => self.push(ExprKind::Lit(Lit::Float(v)), Ty::scalar(DType::F64), span),
                    s => self.err(span, format!("unsupported literal suffix `{s}`")),
                }
            }
            syn::Lit::Bool(b) => self.push(ExprKind::Lit(Lit::Bool(b.value)), Ty::scalar(DType::Bool), span),
            _ => self.err(span, "only integer, float and bool literals are supported in kernels"),
        }
    }

    fn lower_path(&mut self, p: &syn::ExprPath) -> ExprId {
        let span = p.sp();
        let Some(id) = p.path.get_ident() else {
            return self.lower_const_path(p);
        };
        let name = id.to_string();
        match self.lookup(&name) {
            Some(Binding::Local(l)) => {
                let ty = self.k.locals[l].ty.clone();
                self.push(ExprKind::Local(l), ty, span)
            }
            Some(Binding::Param(i)) => {
                let ty = match self.k.params[i].kind {
                    ParamKind::Ptr(d) => Ty { elem: Elem::Ptr(d), shape: vec![], weak: false },
                    ParamKind::Scalar(d) => Ty::scalar(d),
                };
                self.push(ExprKind::Param(i), ty, span)
            }
            Some(Binding::Meta(i)) => {
                let ty = match self.k.metas[i].kind {
                    MetaKind::Bool => Ty::scalar(DType::Bool),
                    _ => Ty::weak(DType::I32),
                };
                self.push(ExprKind::Meta(i), ty, span)
            }
            Some(Binding::Func(_)) | Some(Binding::Helper(_)) => {
                self.err(span, format!("`{name}` is a function: call it, like `{name}(x)`"))
            }
            None => {
                if name == "None" || name == "Some" {
                    return self.err(span, "options are only supported as `if let Some(f) = FUNC_META`");
                }
                let hint = self.suggest_value(&name);
                self.err(span, format!("cannot find `{name}` in this kernel{hint}"))
            }
        }
    }

    /// `f32::INFINITY`, `f32::NEG_INFINITY`, `f32::NAN`, `i32::MAX`, ...: typed constants.
    fn lower_const_path(&mut self, p: &syn::ExprPath) -> ExprId {
        let span = p.sp();
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let (Some(d), true) = (segs.first().and_then(|s| DType::from_name(s)), segs.len() == 2 && p.qself.is_none()) else {
            return self.err(span, "paths are not supported in kernels: use a local name, a parameter, a meta-parameter or a constant like `f32::INFINITY`");
        };
        let lit = match (segs[1].as_str(), d) {
            ("INFINITY", d) if d.is_float() => Lit::Float(f64::INFINITY),
            ("NEG_INFINITY", d) if d.is_float() => Lit::Float(f64::NEG_INFINITY),
            ("NAN", d) if d.is_float() => Lit::Float(f64::NAN),
            ("MAX", DType::F16) => Lit::Float(65504.0),
            ("MIN", DType::F16) => Lit::Float(-65504.0),
            ("MAX", DType::BF16) => Lit::Float(3.3895313892515355e38),
            ("MIN", DType::BF16) => Lit::Float(-3.3895313892515355e38),
            ("MAX", DType::F8E4M3) => Lit::Float(448.0),
            ("MIN", DType::F8E4M3) => Lit::Float(-448.0),
            ("MAX", DType::F8E5M2) => Lit::Float(57344.0),
            ("MIN", DType::F8E5M2) => Lit::Float(-57344.0),
            ("MAX", DType::F32) => Lit::Float(f32::MAX as f64),
            ("MIN", DType::F32) => Lit::Float(f32::MIN as f64),
            ("MAX", DType::F64) => Lit::Float(f64::MAX),
            ("MIN", DType::F64) => Lit::Float(f64::MIN),
            ("MAX", DType::I8) => Lit::Int(i8::MAX as i64),
            ("MIN", DType::I8) => Lit::Int(i8::MIN as i64),
            ("MAX", DType::I16) => Lit::Int(i16::MAX as i64),
            ("MIN", DType::I16) => Lit::Int(i16::MIN as i64),
            ("MAX", DType::U8) => Lit::Int(u8::MAX as i64),
            ("MIN", DType::U8) => Lit::Int(0),
            ("MAX", DType::U16) => Lit::Int(u16::MAX as i64),
            ("MIN", DType::U16) => Lit::Int(0),
            ("MAX", DType::I32) => Lit::Int(i32::MAX as i64),
            ("MIN", DType::I32) => Lit::Int(i32::MIN as i64),
            ("MAX", DType::U32) => Lit::Int(u32::MAX as i64),
            ("MIN", DType::U32) => Lit::Int(0),
            ("MAX", DType::I64) => Lit::Int(i64::MAX),
            ("MIN", DType::I64) => Lit::Int(i64::MIN),
            _ => return self.err(span, format!("unknown constant `{}::{}`: supported are INFINITY, NEG_INFINITY, NAN (floats), MAX and MIN", segs[0], segs[1])),
        };
        // Infinities and NaN are the same value in every float dtype: weak, like `1.5`, so
        // `load(f16_ptrs, mask, f32::NEG_INFINITY)` needs no conversion. MAX and MIN differ
        // per dtype and stay typed.
        let weak = matches!(lit, Lit::Float(v) if !v.is_finite());
        self.push(ExprKind::Lit(lit), Ty { weak, ..Ty::scalar(d) }, span)
    }

    // ---------------------------------------------------------------- operators

    fn binary(&mut self, op: BinOp, a: ExprId, b: ExprId, span: Sp) -> ExprId {
        let (ta, tb) = (self.ty(a), self.ty(b));
        if ta.is_error() || tb.is_error() {
            return self.poison(span);
        }
        // Pointer arithmetic: `ptrs + offsets`, `offsets + ptrs`, `ptrs - offsets`.
        let is_ptr = |t: &Ty| matches!(t.elem, Elem::Ptr(_));
        if is_ptr(&ta) || is_ptr(&tb) {
            let (p, o, pt, ot) = if is_ptr(&ta) { (a, b, ta.clone(), tb.clone()) } else { (b, a, tb.clone(), ta.clone()) };
            let ok_op = op == BinOp::Add || (op == BinOp::Sub && is_ptr(&ta));
            if !ok_op || is_ptr(&ot) {
                return self.err(span, format!("`{}` is not defined between {ta} and {tb}: pointers support `ptr + offsets` and `ptr - offsets`", op.symbol()));
            }
            if !ot.dtype().is_some_and(|d| d.is_int()) {
                return self.err(self.span(o), format!("pointer offsets must be integers, found {ot}"));
            }
            let shape = match check_broadcast(&pt, &ot, &format!("`{}`", op.symbol())) {
                Ok(s) => s,
                Err(m) => return self.err(span, m),
            };
            let o = if ot.weak { self.coerce(o, DType::I32) } else { o };
            // `ptrs - offsets` negates the offsets as i64, so unsigned offsets subtract too.
            let o = if op == BinOp::Sub {
                let wide = self.coerce(o, DType::I64);
                self.unary(UnOp::Neg, wide, span)
            } else {
                o
            };
            return self.push(ExprKind::PtrAdd(p, o), Ty { elem: pt.elem, shape, weak: false }, span);
        }
        let shape = match check_broadcast(&ta, &tb, &format!("`{}`", op.symbol())) {
            Ok(s) => s,
            Err(m) => return self.err(span, m),
        };
        let (d, weak) = match check_promote(&ta, &tb) {
            Ok(x) => x,
            Err(m) => return self.err(span, m),
        };
        if let Err(m) = check_operator(op, d) {
            return self.err(span, m);
        }
        let (a, b) = if weak { (a, b) } else { (self.coerce(a, d), self.coerce(b, d)) };
        let ty = if op.is_comparison() {
            Ty::block(DType::Bool, shape)
        } else {
            Ty { elem: Elem::Val(d), shape, weak }
        };
        // Weak operands keep their own (default) dtypes; make them agree.
        let (a, b) = if weak && op_needs_same(self, a, b) {
            (self.coerce(a, d), self.coerce(b, d))
        } else {
            (a, b)
        };
        self.push(ExprKind::Binary(op, a, b), ty, span)
    }

    fn unary(&mut self, op: UnOp, x: ExprId, span: Sp) -> ExprId {
        let t = self.ty(x);
        if t.is_error() {
            return self.poison(span);
        }
        match (op, t.elem) {
            (_, Elem::Ptr(_)) => self.err(span, "pointers cannot be negated or inverted"),
            (UnOp::Neg, Elem::Val(DType::Bool)) => self.err(span, "`-` is not defined on masks: use `!` to invert"),
            (UnOp::Not, Elem::Val(d)) if d.is_float() => {
                self.err(span, format!("`!` needs a mask or an integer, found {t}"))
            }
            _ => self.push(ExprKind::Unary(op, x), t, span),
        }
    }

    fn cast(&mut self, x: ExprId, d: DType, span: Sp) -> ExprId {
        let t = self.ty(x);
        if t.is_error() {
            return self.poison(span);
        }
        if let Elem::Ptr(_) = t.elem {
            return self.err(span, "pointers cannot be converted: convert the loaded values instead");
        }
        self.push(ExprKind::Cast(x), Ty::block(d, t.shape), span)
    }

    /// `f(args...)`: the operands promoted to one dtype and broadcast to one shape.
    fn math(&mut self, f: MathFn, args: Vec<ExprId>, span: Sp) -> ExprId {
        let tys: Vec<Ty> = args.iter().map(|&x| self.ty(x)).collect();
        if tys.iter().any(|t| t.is_error()) {
            return self.poison(span);
        }
        let name = f.name();
        if let Some(t) = tys.iter().find(|t| matches!(t.elem, Elem::Ptr(_))) {
            return self.err(span, format!("`{name}` needs values, found {t}: load them first"));
        }
        let mut ty = tys[0].clone();
        for t in &tys[1..] {
            let shape = match check_broadcast(&ty, t, &format!("`{name}`")) {
                Ok(s) => s,
                Err(m) => return self.err(span, m),
            };
            let (d, weak) = match check_promote(&ty, t) {
                Ok(x) => x,
                Err(m) => return self.err(span, format!("{m} (in `{name}`)")),
            };
            ty = Ty { elem: Elem::Val(d), shape, weak };
        }
        let Some(d) = ty.dtype() else { return self.poison(span) };
        let d = match f.sig() {
            MathSig::Float(_) | MathSig::FloatTest if d.is_float() => d,
            MathSig::Float(_) | MathSig::FloatTest if ty.weak && d != DType::Bool => DType::F32,
            MathSig::Float(_) | MathSig::FloatTest => {
                return self.err(span, format!("`{name}` needs a float, found {ty}: convert with `.to::<f32>()`"))
            }
            MathSig::Number if d != DType::Bool => d,
            MathSig::Number => return self.err(span, format!("`{name}` needs a number, found {ty}")),
            MathSig::Int2 if d.is_int() => d,
            MathSig::Int2 => {
                return self.err(span, format!("`{name}` needs integers ({}), found {ty}: convert with `.to::<u32>()`", DType::list(&DType::INTS, "or")))
            }
        };
        let args = args.into_iter().map(|x| self.coerce(x, d)).collect();
        let rd = if f.sig() == MathSig::FloatTest { DType::Bool } else { d };
        self.push(ExprKind::Math(f, args), Ty::block(rd, ty.shape), span)
    }

    // ---------------------------------------------------------------- calls

    fn lower_call(&mut self, c: &syn::ExprCall) -> ExprId {
        let span = c.sp();
        if let Some(name) = self.tl_path(&c.func) {
            let msg = hints::tl_prefix_message(&name, self.is_callable(&name), BUILTINS);
            return self.err(c.func.sp(), msg);
        }
        let Some(name) = call_name(c) else {
            return self.err(c.func.sp(), "only named functions can be called in kernels");
        };
        if self.keyword_args(&name, &c.args, false) {
            return self.poison(span);
        }
        let turbofish = call_turbofish(c);
        // Helpers and function meta-parameters shadow nothing: builtins are resolved first
        // only when no helper of that name exists.
        let optional_meta = self.k.metas.iter().any(|m| m.name == name && m.kind == MetaKind::Func { optional: true });
        match self.lookup(&name) {
            Some(Binding::Helper(h)) => return self.call_helper(&h, &c.args, span),
            Some(Binding::Func(_)) if optional_meta => {
                return self.err(
                    c.func.sp(),
                    format!("`{name}` is an `Option<Func>`: unwrap it with `if let Some(f) = {name} {{ ... f(x) ... }}`"),
                )
            }
            Some(Binding::Func(Some(h))) => return self.call_helper(&h, &c.args, span),
            Some(Binding::Func(None)) => {
                return self.err(
                    c.func.sp(),
                    format!("`{name}` is `None` in this instance: guard the call with `if let Some(f) = {name} {{ ... }}`"),
                )
            }
            Some(Binding::Local(_)) | Some(Binding::Param(_)) | Some(Binding::Meta(_)) => {
                return self.err(c.func.sp(), format!("`{name}` is a value, not a function"))
            }
            None => {}
        }
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let n = args.len();
        let arity = |l: &mut Self, ok: bool, sig: &str| -> bool {
            if !ok {
                l.diag.error(span, format!("wrong number of arguments: expected `{sig}`"));
            }
            ok
        };
        match name.as_str() {
            "program_id" | "num_programs" => {
                if !arity(self, n == 1, &format!("{name}(axis)")) {
                    return self.poison(span);
                }
                let Some(axis) = self.literal_usize(args[0], 2, &|a| format!("{name}({a})")) else { return self.poison(span) };
                let kind = if name == "program_id" { ExprKind::ProgramId(axis as u8) } else { ExprKind::NumPrograms(axis as u8) };
                self.push(kind, Ty::scalar(DType::I32), span)
            }
            "arange" => {
                if !arity(self, n == 2, "arange(start, end)") {
                    return self.poison(span);
                }
                let (Some(s), Some(e)) = (self.lower_dim(args[0]), self.lower_dim(args[1])) else {
                    return self.poison(span);
                };
                let len = e.sub(&s);
                if !self.check_dims(std::slice::from_ref(&len), span, "arange") {
                    return self.poison(span);
                }
                self.push(ExprKind::Arange { start: s, end: e }, Ty::block(DType::I32, vec![len]), span)
            }
            "zeros" | "full" => {
                let want = if name == "zeros" { 1 } else { 2 };
                let sig = if name == "zeros" { "zeros::<T>([d0, d1, ...])" } else { "full::<T>([d0, ...], value)" };
                if !arity(self, n == want, sig) {
                    return self.poison(span);
                }
                let Some(shape) = self.lower_shape(args[0]) else { return self.poison(span) };
                if !self.check_dims(&shape, span, &name) {
                    return self.poison(span);
                }
                let value = if name == "zeros" {
                    self.push(ExprKind::Lit(Lit::Int(0)), Ty::weak(DType::I32), span)
                } else {
                    self.lower_expr(args[1])
                };
                let vt = self.ty(value);
                if vt.is_error() {
                    return self.poison(span);
                }
                if !vt.is_scalar() || vt.dtype().is_none() {
                    return self.err(args.get(1).map(|a| a.sp()).unwrap_or(span), format!("the fill value must be a scalar, found {vt}"));
                }
                let d = match turbofish {
                    Some(Ok(d)) => d,
                    Some(Err(s)) => return self.err(s, format!("unknown dtype: expected {}", DType::list(&DType::ALL, "or"))),
                    None if name == "zeros" => DType::F32,
                    None => vt.dtype().unwrap_or(DType::F32),
                };
                // Without a dtype, a literal fill value leaves the block weak: it takes the
                // dtype of what it is combined with, like the literal itself.
                let weak = turbofish.is_none() && name == "full" && vt.weak;
                let value = self.coerce(value, d);
                self.push(ExprKind::Full(value), Ty { weak, ..Ty::block(d, shape) }, span)
            }
            random if RandKind::from_builtin(random).is_some() => {
                let (kind, four) = RandKind::from_builtin(random).unwrap_or((RandKind::Int, false));
                if four {
                    return self.err(span, format!("`{random}` gives four blocks: bind them with `let (r0, r1, r2, r3) = {random}(seed, offsets);`"));
                }
                match self.random_operands(random, &args, span) {
                    Some((seed, offset, rounds)) => self.random(kind, seed, offset, false, 0, rounds, span),
                    None => self.poison(span),
                }
            }
            atomic if AtomicOp::from_builtin(atomic).is_some() => {
                let op = AtomicOp::from_builtin(atomic).unwrap_or(AtomicOp::Add);
                self.lower_atomic(op, &args, span)
            }
            "load" => {
                if !arity(self, (1..=3).contains(&n), "load(pointers), load(pointers, mask) or load(pointers, mask, other)") {
                    return self.poison(span);
                }
                let ptr = self.lower_expr(args[0]);
                let mask = args.get(1).map(|m| self.lower_expr(m));
                let other = args.get(2).map(|o| self.lower_expr(o));
                self.load(ptr, mask, other, &args, span)
            }
            "store" => self.err(span, "`store` is a statement: it returns nothing"),
            debug if debug::is_debug_builtin(debug) => self.err(span, format!("`{debug}` is a statement: it gives no value")),
            "dot" => {
                if !arity(self, n == 2 || n == 3, "dot(a, b) or dot(a, b, acc)") {
                    return self.poison(span);
                }
                let a = self.lower_expr(args[0]);
                let b = self.lower_expr(args[1]);
                let acc = args.get(2).map(|x| self.lower_expr(x));
                let (ta, tb) = (self.ty(a), self.ty(b));
                let tacc = acc.map(|x| self.ty(x));
                if ta.is_error() || tb.is_error() || tacc.as_ref().is_some_and(|t| t.is_error()) {
                    return self.poison(span);
                }
                match check_dot(&ta, &tb, tacc.as_ref()) {
                    Ok(ty) => self.push(ExprKind::Dot { a, b, acc }, ty, span),
                    Err(m) => self.err(span, m),
                }
            }
            "where_" => {
                if !arity(self, n == 3, "where_(condition, a, b)") {
                    return self.poison(span);
                }
                let c = self.lower_expr(args[0]);
                let a = self.lower_expr(args[1]);
                let b = self.lower_expr(args[2]);
                self.select(c, a, b, span)
            }
            "cdiv" => {
                if !arity(self, n == 2, "cdiv(a, b)") {
                    return self.poison(span);
                }
                let a = self.lower_expr(args[0]);
                let b = self.lower_expr(args[1]);
                let one = self.push(ExprKind::Lit(Lit::Int(1)), Ty::weak(DType::I32), span);
                let s = self.binary(BinOp::Add, a, b, span);
                let s = self.binary(BinOp::Sub, s, one, span);
                let (ts, tb) = (self.ty(s), self.ty(b));
                if !ts.is_error() && !ts.dtype().is_some_and(|d| d.is_int()) {
                    return self.err(span, format!("cdiv needs integers, found {ts}"));
                }
                let _ = tb;
                self.binary(BinOp::Div, s, b, span)
            }
            "min" | "max" | "minimum" | "maximum" => {
                if !arity(self, n == 2, &format!("{name}(a, b)")) {
                    return self.poison(span);
                }
                let a = self.lower_expr(args[0]);
                if name.len() == 3 && !self.ty(a).is_scalar() {
                    if let Some(axis) = int_literal_text(args[1]) {
                        // Triton's `tl.max(x, 0)` is a reduction; here it would be elementwise.
                        let recv = short_text(args[0]);
                        // Axes count from 0 here: Triton's -1 is the last axis.
                        let rank = self.ty(a).shape.len() as i64;
                        let red_axis = match axis.parse::<i64>() {
                            Ok(v) if v < 0 && v + rank >= 0 => (v + rank).to_string(),
                            _ => axis.clone(),
                        };
                        let msg = format!(
                            "`{name}(x, {axis})` would be an elementwise {name}imum with {axis}, not Triton's `tl.{name}(x, axis={axis})`: for the reduction write `{recv}.{name}({red_axis})`; for the elementwise {name}imum write `{name}imum({recv}, {axis})`"
                        );
                        return self.err(span, msg);
                    }
                }
                let b = self.lower_expr(args[1]);
                let op = if name.starts_with("min") { BinOp::Min } else { BinOp::Max };
                self.binary(op, a, b, span)
            }
            "multiple_of" | "max_contiguous" | "max_constancy" => self.lower_hint(&name, &args, span),
            "div_rn" => {
                if !arity(self, n == 2, "div_rn(x, y)") {
                    return self.poison(span);
                }
                let a = self.lower_expr(args[0]);
                let b = self.lower_expr(args[1]);
                let q = self.binary(BinOp::Div, a, b, span);
                let t = self.ty(q);
                if !t.is_error() && !t.dtype().is_some_and(|d| d.is_float()) {
                    return self.err(span, format!("`div_rn` divides floats (correctly rounded, as `/` does), found {t}: use `/` for integers"));
                }
                q
            }
            "sum" | "xor_sum" => {
                if !arity(self, n == 2, &format!("{name}(x, axis)")) {
                    return self.poison(span);
                }
                let x = self.lower_expr(args[0]);
                let recv = short_text(args[0]);
                let op = if name == "sum" { ReduceOp::Sum } else { ReduceOp::Xor };
                self.reduce(op, x, args[1], span, &|a| format!("{name}({recv}, {a})"))
            }
            "argmax" | "argmin" => {
                if !arity(self, n == 2, &format!("{name}(x, axis)")) {
                    return self.poison(span);
                }
                let x = self.lower_expr(args[0]);
                let recv = short_text(args[0]);
                self.argext(&name, x, args[1], span, &|a| format!("{name}({recv}, {a})"))
            }
            "associative_scan" | "reduce" => {
                let sig = if name == "reduce" { "reduce(x, axis, combine)" } else { "associative_scan(x, axis, combine) or associative_scan(x, axis, combine, reverse)" };
                if !arity(self, n == 3 || (n == 4 && name != "reduce"), sig) {
                    return self.poison(span);
                }
                let x = self.lower_expr(args[0]);
                let recv = short_text(args[0]);
                let Some((x, ax)) = self.axis_operand(&name, x, args[1], span, &|a| format!("{name}({recv}, {a}, ..)")) else { return self.poison(span) };
                let t = self.ty(x);
                let Some(c) = self.lower_combine(&name, args[2], t.dtype().unwrap_or(DType::F32)) else { return self.poison(span) };
                if name == "reduce" {
                    let mut shape = t.shape.clone();
                    shape.remove(ax);
                    return self.push(ExprKind::ReduceWith { x, axis: ax, f: c }, Ty::block(t.dtype().unwrap_or(DType::F32), shape), span);
                }
                let Some(reverse) = self.reverse_flag(&name, args.get(3).copied()) else { return self.poison(span) };
                self.scan_at(ScanOp::Combine(c), x, ax, reverse, span)
            }
            "cumsum" | "cumprod" => {
                if !arity(self, (1..=3).contains(&n), &format!("{name}(x), {name}(x, axis) or {name}(x, axis, reverse)")) {
                    return self.poison(span);
                }
                let x = self.lower_expr(args[0]);
                let recv = short_text(args[0]);
                let op = if name == "cumsum" { ScanOp::Sum } else { ScanOp::Prod };
                self.scan(op, x, args.get(1).copied(), args.get(2).copied(), span, &|a| format!("{name}({recv}, {a})"))
            }
            "trans" => {
                if !arity(self, n == 1, "trans(x)") {
                    return self.poison(span);
                }
                let x = self.lower_expr(args[0]);
                self.trans(x, span)
            }
            "expand_dims" => {
                if !arity(self, n == 2, "expand_dims(x, axis)") {
                    return self.poison(span);
                }
                let x = self.lower_expr(args[0]);
                let rank = self.ty(x).shape.len();
                let recv = short_text(args[0]);
                let Some(axis) = self.literal_usize(args[1], rank, &|a| format!("expand_dims({recv}, {a})")) else { return self.poison(span) };
                self.expand_dims(x, axis, span)
            }
            "reshape" | "broadcast_to" => {
                if !arity(self, n == 2, &format!("{name}(x, [d0, d1, ...])")) {
                    return self.poison(span);
                }
                let x = self.lower_expr(args[0]);
                self.reshape_like(&name, x, args[1], span)
            }
            other => {
                if let Some(f) = MathFn::from_name(other) {
                    if !arity(self, n == f.arity(), &math_signature(other, f)) {
                        return self.poison(span);
                    }
                    let xs = args.iter().map(|a| self.lower_expr(a)).collect();
                    return self.math(f, xs, span);
                }
                let msg = self.unknown_function_message(other);
                self.err(c.func.sp(), msg)
            }
        }
    }

    fn lower_method(&mut self, m: &syn::ExprMethodCall) -> ExprId {
        let span = m.sp();
        let name = m.method.to_string();
        if self.is_unbound_ident(&m.receiver, "tl") {
            let msg = hints::tl_prefix_message(&name, self.is_callable(&name), BUILTINS);
            return self.err(m.receiver.sp().to(m.method.sp()), msg);
        }
        if self.keyword_args(&name, &m.args, true) {
            return self.poison(span);
        }
        let n = m.args.len();
        let wrong = |l: &mut Self, sig: &str| l.err(m.method.sp(), format!("wrong number of arguments: expected `{sig}`"));
        match name.as_str() {
            "to" => {
                let target = m.turbofish.as_ref().and_then(|t| {
                    if t.args.len() != 1 {
                        return None;
                    }
                    match &t.args[0] {
                        syn::GenericArgument::Type(ty) => dtype_of_type(ty),
                        _ => None,
                    }
                });
                if let Some(d) = m.args.first().and_then(|a| self.dtype_value(a)) {
                    let recv = short_text(&m.receiver);
                    return self.err(m.args[0].sp(), format!("the dtype is a type argument: `{recv}.to::<{d}>()`"));
                }
                if n != 0 {
                    return wrong(self, "x.to::<T>()");
                }
                let x = self.lower_expr(&m.receiver);
                match target {
                    Some(d) => self.cast(x, d, span),
                    None => self.err(m.method.sp(), format!("`to` needs a dtype: `x.to::<f16>()` ({})", DType::list(&DType::ALL, "or"))),
                }
            }
            "as_col" | "as_row" => {
                if n != 0 {
                    return wrong(self, &format!("x.{name}()"));
                }
                let x = self.lower_expr(&m.receiver);
                let t = self.ty(x);
                if t.is_error() {
                    return self.poison(span);
                }
                if t.shape.len() != 1 {
                    return self.err(
                        span,
                        format!("`{name}()` turns a 1-D block into a {}; found {t}: use `expand_dims(axis)` for other ranks", if name == "as_col" { "column [N, 1]" } else { "row [1, N]" }),
                    );
                }
                self.expand_dims(x, if name == "as_col" { 1 } else { 0 }, span)
            }
            "expand_dims" => {
                if n != 1 {
                    return wrong(self, "x.expand_dims(axis)");
                }
                let x = self.lower_expr(&m.receiver);
                let rank = self.ty(x).shape.len();
                let recv = short_text(&m.receiver);
                let Some(axis) = self.literal_usize(&m.args[0], rank, &|a| format!("{recv}.expand_dims({a})")) else { return self.poison(span) };
                self.expand_dims(x, axis, span)
            }
            "trans" => {
                if n != 0 {
                    return wrong(self, "x.trans()");
                }
                let x = self.lower_expr(&m.receiver);
                self.trans(x, span)
            }
            "reshape" | "broadcast_to" => {
                if n != 1 {
                    return wrong(self, &format!("x.{name}([d0, d1, ...])"));
                }
                let x = self.lower_expr(&m.receiver);
                self.reshape_like(&name, x, &m.args[0], span)
            }
            "sum" | "max" | "min" | "xor_sum" => {
                if n != 1 {
                    return wrong(self, &format!("x.{name}(axis)"));
                }
                let x = self.lower_expr(&m.receiver);
                let op = match name.as_str() {
                    "sum" => ReduceOp::Sum,
                    "max" => ReduceOp::Max,
                    "xor_sum" => ReduceOp::Xor,
                    _ => ReduceOp::Min,
                };
                let recv = short_text(&m.receiver);
                self.reduce(op, x, &m.args[0], span, &|a| format!("{recv}.{name}({a})"))
            }
            "argmax" | "argmin" => {
                if n != 1 {
                    return wrong(self, &format!("x.{name}(axis)"));
                }
                let x = self.lower_expr(&m.receiver);
                let recv = short_text(&m.receiver);
                self.argext(&name, x, &m.args[0], span, &|a| format!("{recv}.{name}({a})"))
            }
            "cumsum" | "cumprod" => {
                if n > 2 {
                    return wrong(self, &format!("x.{name}(axis) or x.{name}(axis, reverse)"));
                }
                let x = self.lower_expr(&m.receiver);
                let recv = short_text(&m.receiver);
                let op = if name == "cumsum" { ScanOp::Sum } else { ScanOp::Prod };
                self.scan(op, x, m.args.first(), m.args.get(1), span, &|a| format!("{recv}.{name}({a})"))
            }
            "step_by" => self.err(span, "`step_by` is only supported on the range of a `for` loop"),
            other => {
                if let Some(f) = MathFn::from_name(other) {
                    if n + 1 != f.arity() {
                        return wrong(self, &math_method_signature(other, f));
                    }
                    let mut xs = vec![self.lower_expr(&m.receiver)];
                    xs.extend(m.args.iter().map(|a| self.lower_expr(a)));
                    return self.math(f, xs, span);
                }
                let names = METHOD_NAMES.iter().copied().chain(MathFn::ALL.iter().map(|f| f.name()));
                let hint = match hints::did_you_mean(other, names) {
                    Some(s) => format!(" (did you mean `{s}`?)"),
                    None => String::new(),
                };
                self.err(m.method.sp(), format!("unknown method `{other}` in kernel{hint}: blocks support {METHODS}"))
            }
        }
    }

    fn call_helper(&mut self, name: &str, args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>, span: Sp) -> ExprId {
        let Some(f) = self.cx.helpers.get(name).copied() else {
            return self.err(span, format!("unknown helper `{name}`"));
        };
        if self.too_large {
            return self.poison(span);
        }
        let id = self.inline_helper(f, name, args, span);
        if !self.too_large && self.k.exprs.len() > MAX_INLINED_EXPRS {
            self.too_large = true;
            let mut chain = self.helper_stack.clone();
            chain.push(name.to_string());
            let at = self.inline_root.filter(|_| !self.helper_stack.is_empty()).unwrap_or(span);
            let msg = format!(
                "inlining helpers here makes the kernel more than {MAX_INLINED_EXPRS} expressions large (at the call chain {}): each call copies the helper's body; compute a helper's result once with `let` and reuse it",
                chain.join(" -> ")
            );
            self.diag.error(at, msg);
            return self.poison(span);
        }
        id
    }

    /// Lowers the call `name(args)` of the helper `f` by lowering its body in place.
    fn inline_helper(&mut self, f: &syn::ItemFn, name: &str, args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>, span: Sp) -> ExprId {
        if let Some(pos) = self.helper_stack.iter().position(|h| h == name) {
            let mut cycle: Vec<&str> = self.helper_stack[pos..].iter().map(|s| s.as_str()).collect();
            cycle.push(name);
            let msg = if cycle.len() == 2 {
                format!("helper `{name}` calls itself: recursion is not supported in kernels")
            } else {
                format!("helpers call each other in a cycle ({}): recursion is not supported in kernels", cycle.join(" -> "))
            };
            return self.err(span, msg);
        }
        if self.helper_stack.len() >= MAX_INLINE_DEPTH {
            return self.err(span, format!("helpers are nested more than {MAX_INLINE_DEPTH} deep"));
        }
        let params: Vec<&syn::PatType> = f
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                syn::FnArg::Typed(t) => Some(t),
                _ => None,
            })
            .collect();
        if params.len() != args.len() {
            return self.err(span, format!("helper `{name}` takes {} argument(s), {} given", params.len(), args.len()));
        }
        let mut values = Vec::new();
        for (p, a) in params.iter().zip(args.iter()) {
            let v = self.lower_expr(a);
            let vt = self.ty(v);
            if !vt.is_error() {
                if let Err(m) = check_helper_arg(&p.ty, &vt) {
                    self.diag.error(a.sp(), format!("argument of helper `{name}`: {m}"));
                }
            }
            values.push(v);
        }
        let mut locals = Vec::new();
        for (p, v) in params.iter().zip(values) {
            let pname = pat_name(&p.pat);
            let ty = self.ty(v);
            let local = self.new_local(&pname, ty, false);
            self.emit(Stmt::Let { local, value: v });
            locals.push((pname, local));
        }
        if self.helper_stack.is_empty() {
            self.inline_root = Some(span);
        }
        let result = self.lower_helper_body(name, f, locals);
        match result {
            Some(r) => {
                // The result may reference helper locals; they stay valid (never reassigned).
                r
            }
            None => {
                // An early `return` was already reported; otherwise say what is missing.
                let returns = f.block.stmts.iter().any(|s| matches!(s, syn::Stmt::Expr(syn::Expr::Return(_), _)));
                if returns {
                    self.poison(span)
                } else {
                    self.err(span, format!("helper `{name}` returns no value: end it with the result expression"))
                }
            }
        }
    }

    /// The body of helper `name` lowered with its parameters bound to `params` (name, local):
    /// it sees only them and the other helpers. Its statements go where the caller emits; the
    /// result is its value, if it has one.
    fn lower_helper_body(&mut self, name: &str, f: &syn::ItemFn, params: Vec<(String, LocalId)>) -> Option<ExprId> {
        let saved_scopes = std::mem::take(&mut self.scopes);
        let mut scope = self.helper_scope();
        scope.extend(params.into_iter().map(|(n, l)| (n, Binding::Local(l))));
        self.scopes.push(scope);
        self.helper_stack.push(name.to_string());
        let result = self.lower_stmts(&f.block.stmts, true);
        self.helper_stack.pop();
        self.scopes = saved_scopes;
        result
    }

    // ---------------------------------------------------------------- block operations

    fn load(&mut self, ptr: ExprId, mask: Option<ExprId>, other: Option<ExprId>, args: &[&syn::Expr], span: Sp) -> ExprId {
        let pty = self.ty(ptr);
        if pty.is_error() || mask.is_some_and(|m| self.ty(m).is_error()) || other.is_some_and(|o| self.ty(o).is_error()) {
            return self.poison(span);
        }
        let Elem::Ptr(d) = pty.elem else {
            return self.err(args[0].sp(), format!("load needs a pointer or a block of pointers, found {pty}"));
        };
        if let Some(m) = mask {
            if let Err(msg) = check_mask(&self.ty(m), &pty.shape) {
                return self.err(args[1].sp(), msg);
            }
        }
        let other = match other {
            Some(o) => {
                let oty = self.ty(o);
                if let Err(msg) = check_value_dtype(&oty, d, "`other`") {
                    return self.err(args[2].sp(), msg);
                }
                if let Err(msg) = check_broadcast_to(&oty, &pty.shape, "`other`") {
                    return self.err(args[2].sp(), msg);
                }
                Some(self.coerce(o, d))
            }
            None => None,
        };
        self.push(ExprKind::Load { ptr, mask, other }, Ty::block(d, pty.shape), span)
    }

    /// The seed, offsets and rounds of `rand(seed, offsets)` / `rand(seed, offsets, n_rounds)`:
    /// the seed an integer scalar (taken as `u64`, sign-extended), the offsets an integer scalar
    /// or block (i32 and u32 are 32-bit counters, i64 a 64-bit one, as in Triton).
    fn random_operands(&mut self, name: &str, args: &[&syn::Expr], span: Sp) -> Option<(ExprId, ExprId, u32)> {
        if !(2..=3).contains(&args.len()) {
            self.diag.error(span, format!("wrong number of arguments: expected `{name}(seed, offsets)` or `{name}(seed, offsets, n_rounds)`"));
            return None;
        }
        let rounds = match args.get(2) {
            None => 10,
            Some(a) => match int_literal_text(a).and_then(|t| t.parse::<u32>().ok()).filter(|r| (1..=64).contains(r)) {
                Some(r) => r,
                None => {
                    self.diag.error(a.sp(), "`n_rounds` is an integer literal from 1 to 64 (Triton's default is 10)");
                    return None;
                }
            },
        };
        let seed = self.lower_expr(args[0]);
        let offset = self.lower_expr(args[1]);
        let (ts, to) = (self.ty(seed), self.ty(offset));
        if ts.is_error() || to.is_error() {
            return None;
        }
        let wide_int = |d: DType| matches!(d, DType::I32 | DType::U32 | DType::I64);
        if !ts.is_scalar() || !ts.dtype().is_some_and(wide_int) {
            self.diag.error(args[0].sp(), format!("the seed of `{name}` is an integer scalar (i32, u32 or i64), found {ts}"));
            return None;
        }
        if !to.dtype().is_some_and(wide_int) {
            self.diag.error(args[1].sp(), format!("the offsets of `{name}` are integers (i32, u32 or i64), found {to}: convert with `.to::<i32>()`"));
            return None;
        }
        let seed = if ts.weak { self.coerce(seed, DType::I64) } else { seed };
        let offset = if to.weak { self.coerce(offset, DType::I32) } else { offset };
        Some((seed, offset, rounds))
    }

    #[allow(clippy::too_many_arguments)]
    fn random(&mut self, kind: RandKind, seed: ExprId, offset: ExprId, four: bool, word: u8, rounds: u32, span: Sp) -> ExprId {
        let shape = self.ty(offset).shape;
        self.push(ExprKind::Random { kind, seed, offset, four, word, rounds }, Ty::block(kind.dtype(), shape), span)
    }

    /// `atomic_<op>(ptrs, val, mask, sem, scope)` / `atomic_cas(ptrs, cmp, val, sem, scope)`:
    /// emits `let %atomic = ...` and gives that local, so the read-modify-write runs exactly
    /// once, before the statement that uses its old values.
    fn lower_atomic(&mut self, op: AtomicOp, args: &[&syn::Expr], span: Sp) -> ExprId {
        let name = format!("atomic_{}", op.name());
        let (sig, fixed) = if op == AtomicOp::Cas {
            (format!("{name}(pointers, cmp, val)` or `{name}(pointers, cmp, val, sem, scope)"), 3)
        } else {
            (format!("{name}(pointers, val, mask)` or `{name}(pointers, val, mask, sem, scope)"), 3)
        };
        let n = args.len();
        let ok = if op == AtomicOp::Cas { (3..=5).contains(&n) } else { (2..=5).contains(&n) };
        if !ok {
            return self.err(span, format!("wrong number of arguments: expected `{sig}`"));
        }
        let ptr = self.lower_expr(args[0]);
        let (cmp, val) = if op == AtomicOp::Cas {
            (Some(self.lower_expr(args[1])), self.lower_expr(args[2]))
        } else {
            (None, self.lower_expr(args[1]))
        };
        let mask = if op == AtomicOp::Cas { None } else { args.get(2).map(|m| self.lower_expr(m)) };
        let sem = match args.get(fixed) {
            Some(a) => match string_literal(a).as_deref().and_then(Sem::from_name) {
                Some(x) => x,
                None => return self.err(a.sp(), format!("`sem` must be one of {}, as a string literal", quoted(&Sem::NAMES))),
            },
            None => Sem::AcqRel,
        };
        let scope = match args.get(fixed + 1) {
            Some(a) => match string_literal(a).as_deref().and_then(Scope::from_name) {
                Some(x) => x,
                None => return self.err(a.sp(), format!("`scope` must be one of {}, as a string literal", quoted(&Scope::NAMES))),
            },
            None => Scope::Gpu,
        };
        let pty = self.ty(ptr);
        let operands = [Some(val), cmp, mask];
        if pty.is_error() || operands.iter().flatten().any(|x| self.ty(*x).is_error()) {
            return self.poison(span);
        }
        let Elem::Ptr(d) = pty.elem else {
            return self.err(args[0].sp(), format!("`{name}` needs a pointer or a block of pointers, found {pty}"));
        };
        let allowed: &[DType] = match op {
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => &[DType::I32, DType::U32, DType::I64],
            _ => &[DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::U32, DType::I64],
        };
        if !allowed.contains(&d) {
            let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
            let why = if d.is_small_int() { " (8- and 16-bit integers have no atomics)" } else { "" };
            return self.err(args[0].sp(), format!("`{name}` works on {}, not on {pty}{why}", names.join(", ")));
        }
        // Pointers, values, `cmp` and the mask broadcast together (a scalar pointer with a
        // block of values updates one element once per lane).
        let val_at = if op == AtomicOp::Cas { 2 } else { 1 };
        let mut shape = pty.shape.clone();
        for (x, at, what) in [(Some(val), val_at, "the value"), (cmp, 1, "`cmp`"), (mask, 2, "the mask")] {
            let Some(x) = x else { continue };
            let t = self.ty(x);
            let checked = if what == "the mask" { check_mask(&t, &t.shape) } else { check_value_dtype(&t, d, what) };
            let joined = checked.and_then(|_| check_broadcast(&pty.with_shape(shape.clone()), &t, &format!("`{name}`")));
            match joined {
                Ok(s) => shape = s,
                Err(m) => return self.err(args[at].sp(), m),
            }
        }
        let val = self.coerce(val, d);
        let cmp = cmp.map(|c| self.coerce(c, d));
        let ty = Ty::block(d, shape);
        let value = self.push(ExprKind::Atomic { op, ptr, val, cmp, mask, sem, scope }, ty.clone(), span);
        let local = self.new_local("atomic", ty.clone(), false);
        self.emit(Stmt::Let { local, value });
        self.push(ExprKind::Local(local), ty, span)
    }

    fn select(&mut self, c: ExprId, a: ExprId, b: ExprId, span: Sp) -> ExprId {
        let (tc, ta, tb) = (self.ty(c), self.ty(a), self.ty(b));
        if tc.is_error() || ta.is_error() || tb.is_error() {
            return self.poison(span);
        }
        if tc.elem != Elem::Val(DType::Bool) {
            return self.err(self.span(c), format!("the condition of where_ must be a mask (bool), found {tc}"));
        }
        let shape = match check_broadcast(&ta, &tb, "where_").and_then(|s| check_broadcast(&tc, &ta.with_shape(s), "where_")) {
            Ok(s) => s,
            Err(m) => return self.err(span, m),
        };
        if matches!(ta.elem, Elem::Ptr(_)) != matches!(tb.elem, Elem::Ptr(_)) {
            return self.err(span, format!("where_ cannot mix pointers and values: the branches are {ta} and {tb}"));
        }
        if let (Elem::Ptr(x), Elem::Ptr(y)) = (ta.elem, tb.elem) {
            if x != y {
                return self.err(span, format!("where_ between Ptr<{x}> and Ptr<{y}>"));
            }
            return self.push(ExprKind::Where(c, a, b), Ty { elem: ta.elem, shape, weak: false }, span);
        }
        let (d, weak) = match check_promote(&ta, &tb) {
            Ok(x) => x,
            Err(m) => return self.err(span, m),
        };
        let (a, b) = (self.coerce(a, d), self.coerce(b, d));
        let _ = weak;
        self.push(ExprKind::Where(c, a, b), Ty { elem: Elem::Val(d), shape, weak: false }, span)
    }

    fn reduce(&mut self, op: ReduceOp, x: ExprId, axis: &syn::Expr, span: Sp, write: &dyn Fn(usize) -> String) -> ExprId {
        let Some((x, ax)) = self.axis_operand(op.name(), x, axis, span, write) else { return self.poison(span) };
        if op == ReduceOp::Xor && !self.ty(x).dtype().is_some_and(|d| d.is_int()) {
            let t = self.ty(x);
            return self.err(span, format!("`xor_sum` needs integers ({}), found {t}", DType::list(&DType::INTS, "or")));
        }
        self.reduce_at(op, x, ax, span)
    }

    /// A block of numbers and a literal axis in range, for a reduction or a scan named `what`.
    fn axis_operand(&mut self, what: &str, x: ExprId, axis: &syn::Expr, span: Sp, write: &dyn Fn(usize) -> String) -> Option<(ExprId, usize)> {
        let t = self.ty(x);
        if t.is_error() {
            return None;
        }
        if t.shape.is_empty() {
            self.diag.error(span, format!("`{what}` works along an axis of a block, found the scalar {t}"));
            return None;
        }
        let Some(d) = t.dtype().filter(|d| *d != DType::Bool) else {
            self.diag.error(span, format!("`{what}` needs numbers, found {t}"));
            return None;
        };
        let ax = self.literal_usize(axis, t.shape.len() - 1, write)?;
        let x = if t.weak { self.coerce(x, d) } else { x };
        Some((x, ax))
    }

    fn reduce_at(&mut self, op: ReduceOp, x: ExprId, ax: usize, span: Sp) -> ExprId {
        let x = self.widen_sum(op == ReduceOp::Sum, x);
        let t = self.ty(x);
        let mut shape = t.shape.clone();
        shape.remove(ax);
        self.push(ExprKind::Reduce { op, x, axis: ax }, Ty::block(t.dtype().unwrap_or(DType::F32), shape), span)
    }

    /// `argmax(x, axis)` / `argmin`: the lowest index along `axis` of an element equal to
    /// `x.max(axis)` (`min`), as i32; NaNs are ignored like `max` ignores them (0 when every
    /// element is NaN). Built from the reductions: the extremum, then the least index where the
    /// block equals it.
    fn argext(&mut self, name: &str, x: ExprId, axis: &syn::Expr, span: Sp, write: &dyn Fn(usize) -> String) -> ExprId {
        let Some((x, ax)) = self.axis_operand(name, x, axis, span, write) else { return self.poison(span) };
        let shape = self.ty(x).shape;
        let x = self.bind_hidden(&format!("{name}_x"), x);
        let op = if name == "argmax" { ReduceOp::Max } else { ReduceOp::Min };
        let x2 = self.reread(x, span);
        let ext = self.reduce_at(op, x2, ax, span);
        let ext = self.expand_dims(ext, ax, span);
        let x3 = self.reread(x, span);
        let hit = self.binary(BinOp::Eq, x3, ext, span);
        // The index along `ax`, as a block broadcasting along the other axes.
        let mut idx = self.push(ExprKind::Arange { start: Dim::constant(0), end: shape[ax].clone() }, Ty::block(DType::I32, vec![shape[ax].clone()]), span);
        for a in 0..shape.len() {
            if a != ax {
                idx = self.expand_dims(idx, a, span);
            }
        }
        let none = self.push(ExprKind::Lit(Lit::Int(i32::MAX as i64)), Ty::weak(DType::I32), span);
        let cand = self.select(hit, idx, none, span);
        let first = self.reduce_at(ReduceOp::Min, cand, ax, span);
        let first = self.bind_hidden(&format!("{name}_index"), first);
        let (f1, f2) = (self.reread(first, span), self.reread(first, span));
        let none = self.push(ExprKind::Lit(Lit::Int(i32::MAX as i64)), Ty::weak(DType::I32), span);
        let missing = self.binary(BinOp::Eq, f1, none, span);
        let zero = self.push(ExprKind::Lit(Lit::Int(0)), Ty::weak(DType::I32), span);
        self.select(missing, zero, f2, span)
    }

    /// The combine function of `associative_scan`/`reduce` (a `#[helper]` or a function
    /// meta-parameter naming one), inlined over two scalar parameters of dtype `d`. It must be
    /// one expression of them (no statements) giving a `d` scalar, without integer `/` or `%`.
    fn lower_combine(&mut self, what: &str, f: &syn::Expr, d: DType) -> Option<Combine> {
        let name = match strip_parens(f) {
            syn::Expr::Path(p) if p.path.get_ident().is_some() => p.path.segments[0].ident.to_string(),
            _ => String::new(),
        };
        let helper = match self.lookup(&name) {
            Some(Binding::Helper(h)) | Some(Binding::Func(Some(h))) => h,
            _ => {
                self.diag.error(f.sp(), format!("the combine function of `{what}` is the name of a #[helper] taking two scalars, like `fn add(a: f32, b: f32) -> f32 {{ a + b }}`"));
                return None;
            }
        };
        let item = *self.cx.helpers.get(&helper)?;
        let params: Vec<String> = item
            .sig
            .inputs
            .iter()
            .map(|a| match a {
                syn::FnArg::Typed(t) => pat_name(&t.pat),
                syn::FnArg::Receiver(_) => "self".to_string(),
            })
            .collect();
        if params.len() != 2 {
            self.diag.error(f.sp(), format!("the combine function `{helper}` takes two scalars, not {}", params.len()));
            return None;
        }
        let (a, b) = (self.new_local(&params[0], Ty::scalar(d), false), self.new_local(&params[1], Ty::scalar(d), false));
        self.stmts.push(vec![]);
        let result = self.lower_helper_body(&helper, item, vec![(params[0].clone(), a), (params[1].clone(), b)]);
        let emitted = self.stmts.pop().unwrap_or_default();
        let comb = result?;
        let t = self.ty(comb);
        if t.is_error() {
            return None;
        }
        if !emitted.is_empty() {
            self.diag.error(f.sp(), format!("the combine function `{helper}` must be one expression of its two parameters: no `let` and no helper calls inside"));
            return None;
        }
        if !t.is_scalar() || !(t.dtype() == Some(d) || t.weak) {
            self.diag.error(f.sp(), format!("the combine function `{helper}` must give a {d} scalar here, it gives {t}"));
            return None;
        }
        let comb = self.coerce(comb, d);
        if self.has_int_division(comb) {
            self.diag.error(f.sp(), format!("the combine function `{helper}` divides integers: `/` and `%` of integers are not supported in combine functions"));
            return None;
        }
        Some(Combine { a, b, comb })
    }

    fn has_int_division(&self, e: ExprId) -> bool {
        let ex = &self.k.exprs[e];
        let here = matches!(ex.kind, ExprKind::Binary(BinOp::Div | BinOp::Rem, _, _)) && ex.ty.dtype().is_some_and(|d| d.is_int());
        here || ex.kind.operands().into_iter().any(|c| self.has_int_division(c))
    }

    /// `cumsum(x, axis, reverse)` / `cumprod`: `axis` 0 and `reverse` false when left out (as
    /// in Triton); `reverse` is a bool literal.
    fn scan(&mut self, op: ScanOp, x: ExprId, axis: Option<&syn::Expr>, reverse: Option<&syn::Expr>, span: Sp, write: &dyn Fn(usize) -> String) -> ExprId {
        let zero: syn::Expr = syn::parse_quote!(0);
        let Some((x, ax)) = self.axis_operand(op.name(), x, axis.unwrap_or(&zero), span, write) else { return self.poison(span) };
        let Some(reverse) = self.reverse_flag(op.name(), reverse) else { return self.poison(span) };
        self.scan_at(op, x, ax, reverse, span)
    }

    /// The `reverse` argument of a scan (`what`): a bool literal, false when left out.
    fn reverse_flag(&mut self, what: &str, reverse: Option<&syn::Expr>) -> Option<bool> {
        match reverse {
            None => Some(false),
            Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. })) => Some(b.value),
            Some(other) => {
                self.diag.error(other.sp(), format!("`reverse` of `{what}` is `true` or `false`"));
                None
            }
        }
    }

    /// The scan of `x` (its operands checked) along `ax`.
    fn scan_at(&mut self, op: ScanOp, x: ExprId, ax: usize, reverse: bool, span: Sp) -> ExprId {
        let x = self.widen_sum(op == ScanOp::Sum, x);
        let ty = self.ty(x).strong();
        self.push(ExprKind::Scan { op, x, axis: ax, reverse }, ty, span)
    }

    /// Triton's rule for sums: i8 and i16 accumulate (and give) i32, u8 and u16 u32.
    fn widen_sum(&mut self, sum: bool, x: ExprId) -> ExprId {
        match self.ty(x).dtype() {
            Some(d) if sum && d.is_small_int() => self.coerce(x, if d.is_signed_int() { DType::I32 } else { DType::U32 }),
            _ => x,
        }
    }

    fn expand_dims(&mut self, x: ExprId, axis: usize, span: Sp) -> ExprId {
        let t = self.ty(x);
        if t.is_error() {
            return self.poison(span);
        }
        let mut shape = t.shape.clone();
        shape.insert(axis.min(shape.len()), Dim::constant(1));
        let ty = t.with_shape(shape);
        self.push(ExprKind::ExpandDims(x, axis), ty, span)
    }

    fn trans(&mut self, x: ExprId, span: Sp) -> ExprId {
        let t = self.ty(x);
        if t.is_error() {
            return self.poison(span);
        }
        if t.shape.len() != 2 {
            return self.err(span, format!("trans needs a 2-D block, found {t}"));
        }
        let ty = t.with_shape(vec![t.shape[1].clone(), t.shape[0].clone()]);
        self.push(ExprKind::Trans(x), ty, span)
    }

    fn reshape_like(&mut self, name: &str, x: ExprId, shape_expr: &syn::Expr, span: Sp) -> ExprId {
        let t = self.ty(x);
        let Some(shape) = self.lower_shape(shape_expr) else { return self.poison(span) };
        if t.is_error() || !self.check_dims(&shape, span, name) {
            return self.poison(span);
        }
        if name == "reshape" {
            let numel = |s: &[Dim]| s.iter().fold(Dim::constant(1), |acc, d| acc.mul(d));
            if numel(&t.shape) != numel(&shape) {
                return self.err(span, format!("reshape cannot change the number of elements: {} to {}", shape_to_string(&t.shape), shape_to_string(&shape)));
            }
            let ty = t.with_shape(shape);
            self.push(ExprKind::Reshape(x), ty, span)
        } else {
            if let Err(m) = check_broadcast_to(&t, &shape, "the value").map_err(|_| {
                format!("cannot broadcast {} to {}", shape_to_string(&t.shape), shape_to_string(&shape))
            }) {
                return self.err(span, m);
            }
            let ty = t.with_shape(shape);
            self.push(ExprKind::BroadcastTo(x), ty, span)
        }
    }

    // ---------------------------------------------------------------- compile-time values

    /// An integer literal in `0..=max` (axes); `write(axis)` spells the call with a valid
    /// axis, for the error on a negative one.
    fn literal_usize(&mut self, e: &syn::Expr, max: usize, write: &dyn Fn(usize) -> String) -> Option<usize> {
        match strip_parens(e) {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                if let Ok(v) = i.base10_parse::<usize>() {
                    if v <= max {
                        return Some(v);
                    }
                    self.diag.error(e.sp(), format!("axis {v} is out of range: expected 0 to {max}"));
                    return None;
                }
            }
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => {
                if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) = strip_parens(expr) {
                    if let Ok(k) = i.base10_parse::<u64>() {
                        self.diag.error(e.sp(), hints::negative_axis_message(k, max, write));
                        return None;
                    }
                }
            }
            _ => {}
        }
        self.diag.error(e.sp(), "expected an integer literal axis");
        None
    }

    /// A compile-time dimension: integer literals and integer meta-parameters with `+ - *`.
    fn lower_dim(&mut self, e: &syn::Expr) -> Option<Dim> {
        match strip_parens(e) {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<i64>() {
                Ok(v) if v.unsigned_abs() <= 1 << 40 => Some(Dim::constant(v)),
                _ => {
                    self.diag.error(e.sp(), "block size is out of range: block dimensions are at most 2^40");
                    None
                }
            },
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                match self.lookup(&name) {
                    Some(Binding::Meta(i)) if matches!(self.k.metas[i].kind, MetaKind::Int(_)) => Some(Dim::symbol(&name)),
                    _ => {
                        self.diag.error(
                            e.sp(),
                            format!("block sizes must be known at compile time: `{name}` is not an integer meta-parameter (declare it as `const {name}: i32`)"),
                        );
                        None
                    }
                }
            }
            syn::Expr::Binary(b) => {
                let l = self.lower_dim(&b.left)?;
                let r = self.lower_dim(&b.right)?;
                let d = match b.op {
                    syn::BinOp::Add(_) => l.add(&r),
                    syn::BinOp::Sub(_) => l.sub(&r),
                    syn::BinOp::Mul(_) => l.mul(&r),
                    _ => {
                        self.diag.error(b.op.sp(), "block sizes combine meta-parameters with `+`, `-` and `*` only");
                        return None;
                    }
                };
                if d.is_unreasonable() {
                    self.diag.error(b.sp(), "block size is out of range: block dimensions are at most 2^40");
                    return None;
                }
                Some(d)
            }
            other => {
                self.diag.error(other.sp(), "block sizes must be known at compile time: integer literals and meta-parameters");
                None
            }
        }
    }

    fn lower_shape(&mut self, e: &syn::Expr) -> Option<Shape> {
        let elems: Vec<&syn::Expr> = match strip_parens(e) {
            syn::Expr::Array(a) => a.elems.iter().collect(),
            syn::Expr::Tuple(t) => t.elems.iter().collect(),
            other => {
                self.diag.error(other.sp(), "a block shape is written `[d0, d1, ...]`");
                return None;
            }
        };
        let dims: Vec<Option<Dim>> = elems.into_iter().map(|x| self.lower_dim(x)).collect();
        dims.into_iter().collect()
    }

    /// Rule: block dimensions are positive powers of two or multiples of 16 in every declared
    /// instance.
    fn check_dims(&mut self, dims: &[Dim], span: Sp, what: &str) -> bool {
        for d in dims {
            if let Some(c) = d.as_const() {
                if !check_pow2(c) {
                    self.diag.error(span, format!("{what}: block dimension {c} is neither a power of two nor a multiple of 16"));
                    return false;
                }
                continue;
            }
            for (vals, desc) in self.cx.concrete {
                let v = d.eval(&|s| vals.get(s).copied());
                match v {
                    Some(v) if check_pow2(v) => {}
                    Some(v) => {
                        self.diag.error(span, format!("{what}: block dimension `{d}` = {v} is neither a power of two nor a multiple of 16 in the instance {desc}"));
                        return false;
                    }
                    None => {}
                }
            }
        }
        true
    }
}

/// Whether weak operands of a binary op must be given the same dtype explicitly.
fn op_needs_same(l: &Lowerer<'_, '_>, a: ExprId, b: ExprId) -> bool {
    l.ty(a).dtype() != l.ty(b).dtype()
}

/// Rule: a helper's parameter annotation (`Block`, `Block<f32>`, a scalar dtype or `_`) accepts the argument.
fn check_helper_arg(ty: &syn::Type, v: &Ty) -> Result<(), String> {
    if matches!(ty, syn::Type::Infer(_)) {
        return Ok(());
    }
    let Some((id, args)) = path_last(ty) else {
        return Err("unsupported parameter type: use `Block`, `Block<dtype>` or a scalar dtype".to_string());
    };
    if id == "Block" {
        if let Some(inner) = single_type_arg(args) {
            let want = dtype_of_type(inner).ok_or("unknown dtype in `Block<...>`")?;
            if v.dtype() != Some(want) && !v.weak {
                return Err(format!("expected Block<{want}>, found {v}"));
            }
        }
        return Ok(());
    }
    if let Some(d) = dtype_of_type(ty) {
        if !v.is_scalar() {
            return Err(format!("expected a scalar {d}, found the block {v}"));
        }
        if v.dtype() != Some(d) && !v.weak {
            return Err(format!("expected {d}, found {v}"));
        }
        return Ok(());
    }
    Err("unsupported parameter type: use `Block`, `Block<dtype>` or a scalar dtype".to_string())
}

fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::AddAssign(_) => BinOp::Add,
        syn::BinOp::SubAssign(_) => BinOp::Sub,
        syn::BinOp::MulAssign(_) => BinOp::Mul,
        syn::BinOp::DivAssign(_) => BinOp::Div,
        syn::BinOp::RemAssign(_) => BinOp::Rem,
        syn::BinOp::BitAndAssign(_) => BinOp::And,
        syn::BinOp::BitOrAssign(_) => BinOp::Or,
        syn::BinOp::BitXorAssign(_) => BinOp::Xor,
        syn::BinOp::ShlAssign(_) => BinOp::Shl,
        syn::BinOp::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}

fn is_statement_expr(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Assign(_) | syn::Expr::ForLoop(_) | syn::Expr::If(_) | syn::Expr::Return(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => true,
        syn::Expr::Binary(b) => compound_op(&b.op).is_some(),
        syn::Expr::Call(c) => call_name(c).is_some_and(|n| n == "store" || debug::is_debug_builtin(&n)),
        _ => false,
    }
}

/// `pow(x, y)`: how a math function is called (`name` as written: `sqrt_rn` is `sqrt`).
fn math_signature(name: &str, f: MathFn) -> String {
    format!("{name}({})", f.params().join(", "))
}

/// `x.pow(y)`: the method form.
fn math_method_signature(name: &str, f: MathFn) -> String {
    let p = f.params();
    format!("{}.{name}({})", p[0], p[1..].join(", "))
}

/// The name a parameter pattern binds (`_` for anything but a plain name).
fn pat_name(p: &syn::Pat) -> String {
    match p {
        syn::Pat::Ident(pi) => pi.ident.to_string(),
        _ => "_".to_string(),
    }
}

/// Whether `e` is a call of `atomic_add`, `atomic_cas`, ...
fn is_atomic_call(e: &syn::Expr) -> bool {
    match strip_parens(e) {
        syn::Expr::Call(c) => call_name(c).is_some_and(|n| AtomicOp::from_builtin(&n).is_some()),
        _ => false,
    }
}

/// The value of a string literal argument (`"relaxed"`).
fn string_literal(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
        _ => None,
    }
}

/// `"a", "b" or "c"`.
fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => q.join(""),
    }
}

/// The text of an integer literal (`0`, `-1`), if `e` is one.
fn int_literal_text(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => Some(i.base10_digits().to_string()),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => int_literal_text(&u.expr).map(|t| format!("-{t}")),
        syn::Expr::Paren(p) => int_literal_text(&p.expr),
        _ => None,
    }
}

fn builtin_names<'x>() -> impl Iterator<Item = &'x str> {
    let all: &'x str = BUILTINS;
    all.split(", ")
}

fn call_name(c: &syn::ExprCall) -> Option<String> {
    match &*c.func {
        syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => Some(p.path.segments[0].ident.to_string()),
        _ => None,
    }
}

/// `zeros::<f16>(...)`: the dtype of the turbofish, if any.
fn call_turbofish(c: &syn::ExprCall) -> Option<Result<DType, Sp>> {
    let syn::Expr::Path(p) = &*c.func else { return None };
    let seg = p.path.segments.last()?;
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(ab) if ab.args.len() == 1 => match &ab.args[0] {
            syn::GenericArgument::Type(t) => Some(dtype_of_type(t).ok_or(t.sp())),
            other => Some(Err(other.sp())),
        },
        syn::PathArguments::None => None,
        other => Some(Err(other.sp())),
    }
}

/// A short spelling of `e` for a suggested fix: its name when it is a plain name, else `x`.
fn short_text(e: &syn::Expr) -> String {
    match strip_parens(e) {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()).unwrap_or_else(|| "x".to_string()),
        _ => "x".to_string(),
    }
}

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}

/// Whether integer literal `v` fits dtype `d` (floats and bool take any literal).
fn int_fits(v: i64, d: DType) -> bool {
    match d {
        DType::I8 => i8::try_from(v).is_ok(),
        DType::I16 => i16::try_from(v).is_ok(),
        DType::I32 => i32::try_from(v).is_ok(),
        DType::U8 => u8::try_from(v).is_ok(),
        DType::U16 => u16::try_from(v).is_ok(),
        DType::U32 => u32::try_from(v).is_ok(),
        _ => true,
    }
}
