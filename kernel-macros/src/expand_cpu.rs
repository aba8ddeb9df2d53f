//! CPU backend: one Rust function per IR variant, running one program instance over the
//! runtime's block operations (`kernel_runtime::__private::cpu`). Numeric meta-parameters are
//! read from the instance's `Meta`; every memory access and integer division reports its
//! source line through a `Site` spanned at the user's expression.

use crate::ir::*;
use crate::shape::Dim;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};

pub struct CpuGen<'a> {
    k: &'a Kernel,
    rt: TokenStream,
}

/// An emitted expression: its tokens and whether it names a place (a variable) that can be
/// borrowed without a temporary.
struct Val {
    ts: TokenStream,
    place: bool,
    scalar: bool,
}

pub fn local_ident(k: &Kernel, l: LocalId) -> Ident {
    let name = &k.locals[l].name;
    let base = if name == "_" { "tmp".to_string() } else { name.trim_start_matches("r#").to_string() };
    format_ident!("{}_{}", base, l)
}

/// An `f64` literal, including infinities and NaN.
fn float_literal(v: f64) -> TokenStream {
    if v.is_nan() {
        quote!(f64::NAN)
    } else if v == f64::INFINITY {
        quote!(f64::INFINITY)
    } else if v == f64::NEG_INFINITY {
        quote!(f64::NEG_INFINITY)
    } else {
        quote!(#v)
    }
}

pub fn param_ident(name: &str) -> Ident {
    format_ident!("__p_{}", name.trim_start_matches("r#"))
}

pub fn dtype_tokens(d: DType, rt: &TokenStream) -> TokenStream {
    match d {
        DType::F16 => quote!(#rt::f16),
        DType::BF16 => quote!(#rt::bf16),
        DType::F32 => quote!(f32),
        DType::F64 => quote!(f64),
        DType::I8 => quote!(i8),
        DType::I16 => quote!(i16),
        DType::I32 => quote!(i32),
        DType::I64 => quote!(i64),
        DType::U8 => quote!(u8),
        DType::U16 => quote!(u16),
        DType::U32 => quote!(u32),
        DType::Bool => quote!(bool),
        DType::F8E4M3 => quote!(#rt::f8e4m3),
        DType::F8E5M2 => quote!(#rt::f8e5m2),
    }
}

impl<'a> CpuGen<'a> {
    pub fn new(k: &'a Kernel) -> Self {
        CpuGen { k, rt: quote!(::kernel_runtime::__private) }
    }

    fn elem_ty(&self, t: &Ty) -> TokenStream {
        let rt = &self.rt;
        match t.elem {
            Elem::Val(d) => dtype_tokens(d, rt),
            Elem::Ptr(_) => quote!(#rt::cpu::P),
            Elem::Error => quote!(()),
        }
    }

    fn rust_ty(&self, t: &Ty) -> TokenStream {
        let e = self.elem_ty(t);
        let rt = &self.rt;
        if t.is_scalar() {
            e
        } else {
            quote!(#rt::cpu::Blk<#e>)
        }
    }

    fn site(&self, sp: crate::diag::Sp) -> TokenStream {
        let span = sp.start;
        let rt = &self.rt;
        let name = &self.k.name;
        quote_spanned!(span=> &#rt::cpu::Site { kernel: #name, line: line!(), column: column!() })
    }

    /// A compile-time dimension evaluated from the instance's meta values (as `i64`).
    fn dim(&self, d: &Dim) -> TokenStream {
        let terms: Vec<TokenStream> = d
            .terms()
            .map(|(syms, c)| {
                let factors = syms.iter().map(|s| {
                    let f = format_ident!("{}", s);
                    quote!((__meta.#f as i64))
                });
                quote!((#c as i64) #(* #factors)*)
            })
            .collect();
        if terms.is_empty() {
            quote!((0i64))
        } else {
            quote!((#(#terms)+*))
        }
    }

    fn as_blk(&self, v: Val) -> TokenStream {
        let rt = &self.rt;
        let ts = v.ts;
        if v.scalar {
            quote!(&#rt::cpu::Blk::scalar(#ts))
        } else if v.place {
            quote!(&#ts)
        } else {
            quote!(&(#ts))
        }
    }

    fn owned(&self, v: Val) -> TokenStream {
        let ts = v.ts;
        if v.place && !v.scalar {
            quote!(#ts.clone())
        } else {
            ts
        }
    }

    /// Wraps a block-producing call so that a rank-0 result becomes a plain scalar.
    fn result(&self, ts: TokenStream, ty: &Ty) -> Val {
        if ty.is_scalar() {
            Val { ts: quote!(#ts.into_scalar()), place: false, scalar: true }
        } else {
            Val { ts, place: false, scalar: false }
        }
    }

    fn expr(&self, id: ExprId) -> Val {
        let k = self.k;
        let e = &k.exprs[id];
        let rt = &self.rt;
        let ty = &e.ty;
        let span = e.span;
        match &e.kind {
            ExprKind::Param(i) => {
                let p = &k.params[*i];
                match p.kind {
                    ParamKind::Ptr(_) => {
                        let idx = k.params[..*i].iter().filter(|q| matches!(q.kind, ParamKind::Ptr(_))).count() as u32;
                        Val { ts: quote!(#rt::cpu::P::arg(#idx)), place: false, scalar: true }
                    }
                    ParamKind::Scalar(_) => {
                        let id = param_ident(&p.name);
                        Val { ts: quote!(#id), place: true, scalar: true }
                    }
                }
            }
            ExprKind::Meta(i) => {
                let m = format_ident!("{}", k.metas[*i].name);
                let t = self.elem_ty(ty);
                let ts = match ty.dtype() {
                    Some(DType::Bool) => quote!(__meta.#m),
                    Some(d) if d.is_float() => quote!(#rt::cpu::cast_scalar::<i64, #t>(__meta.#m as i64)),
                    _ => quote!((__meta.#m as #t)),
                };
                Val { ts, place: false, scalar: true }
            }
            ExprKind::Lit(l) => {
                let t = self.elem_ty(ty);
                let ts = match (l, ty.dtype()) {
                    (Lit::Bool(b), _) => quote!(#b),
                    (Lit::Int(v), Some(DType::I32)) => {
                        let v = *v as i32;
                        quote!((#v))
                    }
                    (Lit::Int(v), Some(DType::I64)) => quote!((#v)),
                    (Lit::Int(v), Some(DType::Bool)) => {
                        let b = *v != 0;
                        quote!(#b)
                    }
                    (Lit::Int(v), _) => quote!(#rt::cpu::cast_scalar::<i64, #t>(#v)),
                    // Finite in f32 too: `quote!` panics on an infinite f32.
                    (Lit::Float(v), Some(DType::F32)) if (*v as f32).is_finite() => {
                        let v = *v as f32;
                        quote!((#v))
                    }
                    (Lit::Float(v), _) => {
                        let f = float_literal(*v);
                        quote!(#rt::cpu::cast_scalar::<f64, #t>(#f))
                    }
                };
                Val { ts, place: false, scalar: true }
            }
            ExprKind::Local(l) => {
                let id = local_ident(k, *l);
                Val { ts: quote!(#id), place: true, scalar: ty.is_scalar() }
            }
            ExprKind::ProgramId(a) => {
                let a = *a as u32;
                Val { ts: quote!(__ctx.program_id(#a)), place: false, scalar: true }
            }
            ExprKind::NumPrograms(a) => {
                let a = *a as u32;
                Val { ts: quote!(__ctx.num_programs(#a)), place: false, scalar: true }
            }
            ExprKind::Arange { start, end } => {
                let s = self.dim(start);
                let e = self.dim(end);
                Val { ts: quote!(#rt::cpu::arange(#s as i32, #e as i32)), place: false, scalar: false }
            }
            ExprKind::Full(v) => {
                let v = self.expr(*v);
                let vts = self.owned(v);
                let dims = ty.shape.iter().map(|d| self.dim(d));
                Val { ts: quote!(#rt::cpu::full(&[#((#dims) as usize),*], #vts)), place: false, scalar: false }
            }
            ExprKind::Unary(op, x) => {
                let xt = self.elem_ty(&k.exprs[*x].ty);
                let f = match op {
                    UnOp::Neg => quote!(<#xt as #rt::cpu::Num>::neg),
                    UnOp::Not => quote!(<#xt as #rt::cpu::Int>::not),
                };
                self.map1(*x, f, ty)
            }
            ExprKind::Binary(op, a, b) => self.binary(*op, *a, *b, ty, span),
            ExprKind::PtrAdd(p, o) => {
                let (pv, ov) = (self.expr(*p), self.expr(*o));
                if pv.scalar && ov.scalar {
                    let (p, o) = (pv.ts, ov.ts);
                    Val { ts: quote!(#rt::cpu::ptr_add(#p, #o)), place: false, scalar: true }
                } else {
                    let (p, o) = (self.as_blk(pv), self.as_blk(ov));
                    Val { ts: quote!(#rt::cpu::map2(#p, #o, #rt::cpu::ptr_add)), place: false, scalar: false }
                }
            }
            // A pointer's address (the check of a `multiple_of` hint).
            ExprKind::Cast(x) if matches!(k.exprs[*x].ty.elem, Elem::Ptr(_)) => {
                let p = self.expr(*x).ts;
                Val { ts: quote!(__ctx.address(#p)), place: false, scalar: true }
            }
            ExprKind::Cast(x) => {
                let from = self.elem_ty(&k.exprs[*x].ty);
                let to = self.elem_ty(ty);
                let v = self.expr(*x);
                if v.scalar {
                    let ts = v.ts;
                    Val { ts: quote!(#rt::cpu::cast_scalar::<#from, #to>(#ts)), place: false, scalar: true }
                } else {
                    let b = self.as_blk(v);
                    Val { ts: quote!(#rt::cpu::cast::<#from, #to>(#b)), place: false, scalar: false }
                }
            }
            ExprKind::ExpandDims(x, axis) => {
                let b = self.as_blk(self.expr(*x));
                Val { ts: quote!(#rt::cpu::expand_dims(#b, #axis)), place: false, scalar: false }
            }
            ExprKind::Trans(x) => {
                let b = self.as_blk(self.expr(*x));
                Val { ts: quote!(#rt::cpu::trans(#b)), place: false, scalar: false }
            }
            ExprKind::Reshape(x) | ExprKind::BroadcastTo(x) => {
                let b = self.as_blk(self.expr(*x));
                let dims = ty.shape.iter().map(|d| self.dim(d));
                let f = if matches!(e.kind, ExprKind::Reshape(_)) { quote!(reshape) } else { quote!(broadcast_to) };
                Val { ts: quote!(#rt::cpu::#f(#b, &[#((#dims) as usize),*])), place: false, scalar: false }
            }
            ExprKind::Math(f, xs) => {
                let xt = self.elem_ty(&k.exprs[xs[0]].ty);
                let name = format_ident!("{}", f.name());
                let tr = if k.exprs[xs[0]].ty.dtype().is_some_and(|d| d.is_float()) { quote!(Float) } else { quote!(Int) };
                let func = quote!(<#xt as #rt::cpu::#tr>::#name);
                match xs.as_slice() {
                    [x] => self.map1(*x, func, ty),
                    [a, b] => self.mapn(&[*a, *b], quote!(map2), func, ty),
                    [a, b, c] => self.mapn(&[*a, *b, *c], quote!(map3), func, ty),
                    _ => unreachable!("math functions take one to three operands"),
                }
            }
            ExprKind::Random { kind, seed, offset, four, word, rounds } => {
                let (st, ot) = (self.elem_ty(&k.exprs[*seed].ty), self.elem_ty(&k.exprs[*offset].ty));
                let (f, idx) = if *four {
                    let w = *word as usize;
                    (format_ident!("{}4x_rounds", kind.name()), quote!([#w]))
                } else {
                    (format_ident!("{}_rounds", kind.name()), quote!())
                };
                let call = quote!((|__s: #st, __o: #ot| ::kernel_std::random::#f(__s as u64, __o, #rounds)#idx));
                self.mapn(&[*seed, *offset], quote!(map2), call, ty)
            }
            ExprKind::Atomic { op, ptr, val, cmp, mask, sem, .. } => {
                let t = self.elem_ty(ty);
                let p = self.as_blk(self.expr(*ptr));
                let v = self.as_blk(self.expr(*val));
                let order = match sem {
                    Sem::Relaxed => quote!(Relaxed),
                    Sem::Acquire => quote!(Acquire),
                    Sem::Release => quote!(Release),
                    Sem::AcqRel => quote!(AcqRel),
                };
                let order = quote!(#rt::cpu::Ordering::#order);
                let site = self.site(span);
                let call = if let Some(c) = cmp {
                    let c = self.as_blk(self.expr(*c));
                    quote!(#rt::cpu::atomic_cas::<#t>(__ctx, #p, #c, #v, #order, #site)?)
                } else {
                    let m = match mask {
                        Some(m) => {
                            let b = self.as_blk(self.expr(*m));
                            quote!(Some(#b))
                        }
                        None => quote!(None),
                    };
                    let (num, int) = (quote!(<#t as #rt::cpu::Num>), quote!(<#t as #rt::cpu::Int>));
                    let f = match op {
                        AtomicOp::Add => quote!(#num::add),
                        AtomicOp::Max => quote!(#num::max),
                        AtomicOp::Min => quote!(#num::min),
                        AtomicOp::And => quote!(#int::and),
                        AtomicOp::Or => quote!(#int::or),
                        AtomicOp::Xor => quote!(#int::xor),
                        AtomicOp::Xchg | AtomicOp::Cas => quote!(|_: #t, __v: #t| __v),
                    };
                    quote!(#rt::cpu::atomic_rmw::<#t>(__ctx, #p, #v, #m, #f, #order, #site)?)
                };
                self.result(call, ty)
            }
            ExprKind::Where(c, a, b) => {
                let (c, a, b) = (self.as_blk(self.expr(*c)), self.as_blk(self.expr(*a)), self.as_blk(self.expr(*b)));
                self.result(quote!(#rt::cpu::select(#c, #a, #b)), ty)
            }
            ExprKind::Load { ptr, mask, other } => {
                let t = self.elem_ty(ty);
                let p = self.as_blk(self.expr(*ptr));
                let m = match mask {
                    Some(m) => {
                        let b = self.as_blk(self.expr(*m));
                        quote!(Some(#b))
                    }
                    None => quote!(None),
                };
                let o = match other {
                    Some(o) => {
                        let b = self.as_blk(self.expr(*o));
                        quote!(Some(#b))
                    }
                    None => quote!(None),
                };
                let site = self.site(span);
                self.result(quote!(#rt::cpu::load::<#t>(__ctx, #p, #m, #o, #site)?), ty)
            }
            ExprKind::Dot { a, b, acc } => {
                let (at, bt) = (self.elem_ty(&k.exprs[*a].ty), self.elem_ty(&k.exprs[*b].ty));
                let f = if ty.dtype() == Some(DType::I32) { quote!(dot_i32) } else { quote!(dot) };
                let (a, b) = (self.as_blk(self.expr(*a)), self.as_blk(self.expr(*b)));
                let acc = match acc {
                    Some(x) => {
                        let v = self.as_blk(self.expr(*x));
                        quote!(Some(#v))
                    }
                    None => quote!(None),
                };
                Val { ts: quote!(#rt::cpu::#f::<#at, #bt>(#a, #b, #acc)), place: false, scalar: false }
            }
            ExprKind::Reduce { op, x, axis } => {
                let t = self.elem_ty(&k.exprs[*x].ty);
                let b = self.as_blk(self.expr(*x));
                let f = if *op == ReduceOp::Xor { format_ident!("reduce_xor") } else { format_ident!("reduce_{}", op.name()) };
                self.result(quote!(#rt::cpu::#f::<#t>(#b, #axis)), ty)
            }
            ExprKind::Scan { op: ScanOp::Combine(c), x, axis, reverse } => {
                let b = self.as_blk(self.expr(*x));
                let f = self.combine_closure(c, &self.elem_ty(&k.exprs[*x].ty));
                Val { ts: quote!(#rt::cpu::scan(#b, #axis, #reverse, #f)), place: false, scalar: false }
            }
            ExprKind::ReduceWith { x, axis, f: c } => {
                let b = self.as_blk(self.expr(*x));
                let f = self.combine_closure(c, &self.elem_ty(&k.exprs[*x].ty));
                self.result(quote!(#rt::cpu::reduce_with(#b, #axis, #f)), ty)
            }
            ExprKind::Scan { op, x, axis, reverse } => {
                // f16, bf16 and the 8-bit floats accumulate in f32 and round each output, as on the GPU.
                let xt = &k.exprs[*x].ty;
                let t = self.elem_ty(xt);
                let b = self.as_blk(self.expr(*x));
                let half = xt.dtype().is_some_and(DType::is_narrow_float);
                let acc = if half { quote!(f32) } else { t.clone() };
                let f = match op {
                    ScanOp::Sum => quote!(<#acc as #rt::cpu::Num>::add),
                    ScanOp::Prod => quote!(<#acc as #rt::cpu::Num>::mul),
                    ScanOp::Combine(_) => unreachable!("matched above"),
                };
                let ts = if half {
                    quote!(#rt::cpu::cast::<f32, #t>(&#rt::cpu::scan(&#rt::cpu::cast::<#t, f32>(#b), #axis, #reverse, #f)))
                } else {
                    quote!(#rt::cpu::scan(#b, #axis, #reverse, #f))
                };
                Val { ts, place: false, scalar: false }
            }
        }
    }

    /// `(|a: T, b: T| -> T { comb })`: a combine function as a closure over its parameters.
    fn combine_closure(&self, c: &Combine, t: &TokenStream) -> TokenStream {
        let (a, b) = (local_ident(self.k, c.a), local_ident(self.k, c.b));
        let body = self.owned(self.expr(c.comb));
        quote!((|#a: #t, #b: #t| -> #t { #body }))
    }

    fn map1(&self, x: ExprId, f: TokenStream, ty: &Ty) -> Val {
        let v = self.expr(x);
        let rt = &self.rt;
        if v.scalar {
            let ts = v.ts;
            Val { ts: quote!(#f(#ts)), place: false, scalar: true }
        } else {
            let b = self.as_blk(v);
            let _ = ty;
            Val { ts: quote!(#rt::cpu::map1(#b, #f)), place: false, scalar: false }
        }
    }

    /// `f` over two or three operands (`map2` or `map3`), broadcast to one shape.
    fn mapn(&self, xs: &[ExprId], map: TokenStream, f: TokenStream, ty: &Ty) -> Val {
        let rt = &self.rt;
        let vals: Vec<Val> = xs.iter().map(|&x| self.expr(x)).collect();
        if vals.iter().all(|v| v.scalar) {
            let ts = vals.into_iter().map(|v| v.ts);
            return Val { ts: quote!(#f(#(#ts),*)), place: false, scalar: true };
        }
        let blks = vals.into_iter().map(|v| self.as_blk(v));
        self.result(quote!(#rt::cpu::#map(#(#blks),*, #f)), ty)
    }

    fn binary(&self, op: BinOp, a: ExprId, b: ExprId, ty: &Ty, span: crate::diag::Sp) -> Val {
        let rt = &self.rt;
        let k = self.k;
        let ot = self.elem_ty(&k.exprs[a].ty);
        let (num, int) = (quote!(<#ot as #rt::cpu::Num>), quote!(<#ot as #rt::cpu::Int>));
        let f = match op {
            BinOp::Add => quote!(#num::add),
            BinOp::Sub => quote!(#num::sub),
            BinOp::Mul => quote!(#num::mul),
            BinOp::Div => quote!(#num::div),
            BinOp::Rem => quote!(#num::rem),
            BinOp::Lt => quote!(#num::lt),
            BinOp::Le => quote!(#num::le),
            BinOp::Gt => quote!(#num::gt),
            BinOp::Ge => quote!(#num::ge),
            BinOp::Eq => quote!(#num::eq),
            BinOp::Ne => quote!(#num::ne),
            BinOp::Min => quote!(#num::min),
            BinOp::Max => quote!(#num::max),
            BinOp::And => quote!(#int::and),
            BinOp::Or => quote!(#int::or),
            BinOp::Xor => quote!(#int::xor),
            BinOp::Shl => quote!(#int::shl),
            BinOp::Shr => quote!(#int::shr),
        };
        let fallible = matches!(op, BinOp::Div | BinOp::Rem);
        let (va, vb) = (self.expr(a), self.expr(b));
        if fallible {
            let site = self.site(span);
            let (x, y) = (self.as_blk(va), self.as_blk(vb));
            return self.result(quote!(#rt::cpu::try_map2(#x, #y, #f, #site)?), ty);
        }
        if va.scalar && vb.scalar {
            let (x, y) = (va.ts, vb.ts);
            return Val { ts: quote!(#f(#x, #y)), place: false, scalar: true };
        }
        let (x, y) = (self.as_blk(va), self.as_blk(vb));
        Val { ts: quote!(#rt::cpu::map2(#x, #y, #f)), place: false, scalar: false }
    }

    fn stmts(&self, stmts: &[Stmt]) -> TokenStream {
        let rt = &self.rt;
        let k = self.k;
        let mut out = TokenStream::new();
        for s in stmts {
            let ts = match s {
                Stmt::Let { local, value } => {
                    let id = local_ident(k, *local);
                    let t = self.rust_ty(&k.locals[*local].ty);
                    let v = self.owned(self.expr(*value));
                    quote!(let mut #id: #t = #v;)
                }
                Stmt::Assign { local, value } => {
                    let id = local_ident(k, *local);
                    let v = self.owned(self.expr(*value));
                    quote!(#id = #v;)
                }
                Stmt::Store { ptr, value, mask, span } => {
                    let t = match k.exprs[*ptr].ty.elem {
                        Elem::Ptr(d) => dtype_tokens(d, rt),
                        _ => quote!(()),
                    };
                    let p = self.as_blk(self.expr(*ptr));
                    let v = self.as_blk(self.expr(*value));
                    let m = match mask {
                        Some(m) => {
                            let b = self.as_blk(self.expr(*m));
                            quote!(Some(#b))
                        }
                        None => quote!(None),
                    };
                    let site = self.site(*span);
                    quote!(#rt::cpu::store::<#t>(__ctx, #p, #v, #m, #site)?;)
                }
                Stmt::For { var, start, end, step, body, span } => {
                    let id = local_ident(k, *var);
                    let t = self.rust_ty(&k.locals[*var].ty);
                    let (s, e, st) = (self.owned(self.expr(*start)), self.owned(self.expr(*end)), self.owned(self.expr(*step)));
                    let body = self.stmts(body);
                    let site = self.site(*span);
                    quote! {
                        {
                            let __start: #t = #s;
                            let __end: #t = #e;
                            let __step: #t = #st;
                            if __step == 0 {
                                let __s = #site;
                                return Err(#rt::cpu::KernelError::ZeroStep { kernel: __s.kernel, line: __s.line, column: __s.column });
                            }
                            let mut __i: #t = __start;
                            while (__step > 0 && __i < __end) || (__step < 0 && __i > __end) {
                                let #id: #t = __i;
                                #body
                                __i = match __i.checked_add(__step) { Some(n) => n, None => break };
                            }
                        }
                    }
                }
                Stmt::If { cond, then, els } => {
                    let c = self.owned(self.expr(*cond));
                    let (t, e) = (self.stmts(then), self.stmts(els));
                    quote!(if #c { #t } else { #e })
                }
                Stmt::While { pre, test, body } => {
                    let pre = self.stmts(pre);
                    let c = self.owned(self.expr(*test));
                    let body = self.stmts(body);
                    quote!(loop { #pre if !#c { break; } #body })
                }
                Stmt::Return => quote!(return Ok(());),
                Stmt::Assert { cond, message, text, operands, span, .. } => self.assert(*cond, message, text, operands, *span),
                Stmt::Print { prefix, values, .. } => {
                    let vals = values.iter().map(|v| {
                        let b = self.as_blk(self.expr(*v));
                        quote!(#b as &dyn #rt::cpu::BlkText)
                    });
                    quote!(#rt::cpu::device_print(__ctx, #prefix, &[#(#vals),*]);)
                }
                // A program runs on one thread: there is no other to wait for.
                Stmt::Barrier => quote!(),
            };
            out.extend(ts);
        }
        out
    }

    /// `device_assert`: when `cond` is false (for a block: at some element, the first one the
    /// runtime finds), the function returns the error, with the operands' values read there;
    /// the operands are evaluated on that path only.
    fn assert(&self, cond: ExprId, message: &str, text: &str, operands: &[(String, ExprId)], span: crate::diag::Sp) -> TokenStream {
        let rt = &self.rt;
        let ops: Vec<TokenStream> = operands
            .iter()
            .map(|(t, e)| {
                let v = self.as_blk(self.expr(*e));
                quote!((#t, #v as &dyn #rt::cpu::BlkText))
            })
            .collect();
        let site = self.site(span);
        let fail = |at: TokenStream| quote!(return Err(#rt::cpu::assertion_failed(__ctx, #text, #message, #at, &[#(#ops),*], #site)););
        let v = self.expr(cond);
        if v.scalar {
            let (c, f) = (v.ts, fail(quote!(None)));
            return quote!(if !(#c) { #f });
        }
        let (c, f) = (self.as_blk(v), fail(quote!(Some((__cond.shape(), __i)))));
        quote!({
            let __cond: &#rt::cpu::Blk<bool> = #c;
            if let Some(__i) = #rt::cpu::first_false(__cond) { #f }
        })
    }

    /// `fn <name>(__ctx, __meta, scalar params...) -> Result<(), KernelError>`.
    pub fn function(&self, fn_name: &Ident, meta_ty: &TokenStream) -> TokenStream {
        let rt = &self.rt;
        let k = self.k;
        let scalars = k.params.iter().filter_map(|p| match p.kind {
            ParamKind::Scalar(d) => {
                let id = param_ident(&p.name);
                let t = dtype_tokens(d, rt);
                Some(quote!(#id: #t))
            }
            ParamKind::Ptr(_) => None,
        });
        let body = self.stmts(&k.body);
        quote! {
            #[allow(unused_mut, unused_variables, unused_assignments, unused_parens, non_snake_case, clippy::all)]
            fn #fn_name(__ctx: &#rt::cpu::Ctx<'_>, __meta: &#meta_ty, #(#scalars),*) -> ::core::result::Result<(), #rt::cpu::KernelError> {
                #body
                Ok(())
            }
        }
    }
}
