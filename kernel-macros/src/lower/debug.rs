//! Lowering of the debugging builtins. `device_assert`, `device_print` and `debug_barrier`
//! become statements (`Stmt::Assert`, `Stmt::Print`, `Stmt::Barrier`) that both backends run. `static_assert` and `static_print`
//! leave nothing in the IR: they are evaluated here, on the meta-parameters of every declared
//! instance (those that reach the call: `if` statements on meta-parameters are followed), a
//! failing `static_assert` becoming a compile error at the call that names the instances, a
//! `static_print` a compile-time warning (a proc macro cannot emit notes on stable Rust).

use super::*;
use quote::ToTokens;

/// The debugging builtins, all statements.
pub(super) const DEBUG_BUILTINS: [&str; 5] = ["device_assert", "device_print", "debug_barrier", "static_assert", "static_print"];

/// The most values one `device_print` takes (the GPU's `printf` takes at most 32 arguments;
/// the program id and a 3-D index take 6).
const MAX_PRINT_VALUES: usize = 16;

/// The most instances one `static_print` warning lists (when they print different values).
const MAX_PRINTED_INSTANCES: usize = 16;

/// Whether `name` is one of [`DEBUG_BUILTINS`].
pub(super) fn is_debug_builtin(name: &str) -> bool {
    DEBUG_BUILTINS.contains(&name)
}

/// A value computed at compile time by `static_assert` and `static_print`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum ConstVal {
    Int(i64),
    Bool(bool),
}

impl ConstVal {
    /// `an integer` or `a bool`, for messages.
    fn kind(self) -> &'static str {
        match self {
            ConstVal::Int(_) => "an integer",
            ConstVal::Bool(_) => "a bool",
        }
    }
}

impl std::fmt::Display for ConstVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConstVal::Int(v) => write!(f, "{v}"),
            ConstVal::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Why an expression has no compile-time value in an instance.
pub(super) enum ConstErr {
    /// It is not a compile-time expression (whatever the instance): the error, at the span of
    /// the offending part.
    NotConst(Sp, String),
    /// A meta-parameter it reads has no value in this instance (after an attribute error).
    Unknown,
    /// The arithmetic fails with this instance's values (overflow, division by zero).
    Failed(Sp, String),
}

/// What a compile-time expression may contain, for the error on anything else.
const CONST_FORMS: &str = "integer and bool literals, meta-parameters, arithmetic (`+ - * / % << >> & | ^`), comparisons, `!`, `&&`, `||`, `min`, `max` and `cdiv`";

impl Lowerer<'_, '_> {
    /// Lowers the statement `name(args)` of a debugging builtin.
    pub(super) fn lower_debug_call(&mut self, name: &str, c: &syn::ExprCall) {
        if self.keyword_args(name, &c.args, false) {
            return;
        }
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let span = c.sp();
        match name {
            "device_assert" => self.lower_device_assert(&args, span),
            "device_print" => self.lower_device_print(&args, span),
            "debug_barrier" if args.is_empty() => self.emit(Stmt::Barrier),
            "debug_barrier" => self.diag.error(span, "wrong number of arguments: expected `debug_barrier()`"),
            "static_assert" => self.lower_static_assert(&args, span),
            _ => self.lower_static_print(&args, span),
        }
    }

    // ------------------------------------------------------------ device_assert, device_print

    /// `device_assert(cond)` or `device_assert(cond, "message")`: `cond` a mask, scalar or block.
    fn lower_device_assert(&mut self, args: &[&syn::Expr], span: Sp) {
        if !(1..=2).contains(&args.len()) {
            self.diag.error(span, "wrong number of arguments: expected `device_assert(condition, \"message\")`");
            return;
        }
        let message = match args.get(1) {
            Some(a) => match string_literal(a) {
                Some(s) => s,
                None => {
                    self.diag.error(a.sp(), "the message of `device_assert` is a string literal: `device_assert(x < n, \"x is in range\")`");
                    return;
                }
            },
            None => String::new(),
        };
        let cond = self.lower_expr(args[0]);
        let t = self.ty(cond);
        if t.is_error() {
            return;
        }
        if t.elem != Elem::Val(DType::Bool) {
            let msg = format!("the condition of `device_assert` must be a mask (a bool scalar or block), found {t}: compare, as in `device_assert(x < n, \"...\")`");
            self.diag.error(args[0].sp(), msg);
            return;
        }
        let operands = self.assert_operands(cond, args[0]);
        self.emit(Stmt::Assert { cond, message, text: expr_text(args[0]), operands, span, hint: None });
    }

    /// The two sides of a comparison `cond` (written `e`), with their source text, for the
    /// report of a failing assertion: `cond` then reads each side from a hidden local (or a copy
    /// of a leaf), and the report reads the same. None for other conditions and pointers.
    fn assert_operands(&mut self, cond: ExprId, e: &syn::Expr) -> Vec<(String, ExprId)> {
        let syn::Expr::Binary(b) = strip_parens(e) else { return vec![] };
        let ExprKind::Binary(op, l, r) = self.k.exprs[cond].kind else { return vec![] };
        if !op.is_comparison() || [l, r].iter().any(|x| matches!(self.ty(*x).elem, Elem::Ptr(_))) {
            return vec![];
        }
        let (l, rl) = self.read_twice(l);
        let (r, rr) = self.read_twice(r);
        self.k.exprs[cond].kind = ExprKind::Binary(op, l, r);
        vec![(expr_text(&b.left), rl), (expr_text(&b.right), rr)]
    }

    /// Two expressions with `x`'s value, for two owners: a leaf is copied, anything else is
    /// bound to a hidden local, which both read.
    fn read_twice(&mut self, x: ExprId) -> (ExprId, ExprId) {
        let e = self.k.exprs[x].clone();
        match e.kind {
            ExprKind::Local(_) | ExprKind::Param(_) | ExprKind::Meta(_) | ExprKind::Lit(_) | ExprKind::ProgramId(_) | ExprKind::NumPrograms(_) => {
                let copy = self.push(e.kind, e.ty, e.span);
                (x, copy)
            }
            _ => {
                let first = self.bind_hidden("assert_operand", x);
                let second = self.reread(first, e.span);
                (first, second)
            }
        }
    }

    /// `device_print("prefix", values...)`: the values (not pointers) are broadcast to one shape.
    fn lower_device_print(&mut self, args: &[&syn::Expr], span: Sp) {
        let Some(prefix) = args.first().and_then(|a| string_literal(a)) else {
            let at = args.first().map_or(span, |a| a.sp());
            self.diag.error(at, "`device_print` starts with a prefix, a string literal: `device_print(\"x =\", x)`");
            return;
        };
        if args.len() - 1 > MAX_PRINT_VALUES {
            self.diag.error(span, format!("`device_print` prints at most {MAX_PRINT_VALUES} values: split it"));
            return;
        }
        let mut values = Vec::new();
        let mut shape: Shape = vec![];
        for a in &args[1..] {
            let v = self.lower_expr(a);
            let t = self.ty(v);
            if t.is_error() {
                return;
            }
            if matches!(t.elem, Elem::Ptr(_)) {
                self.diag.error(a.sp(), format!("`device_print` prints values, found {t}: load them first"));
                return;
            }
            shape = match check_broadcast(&t.with_shape(shape), &t, "`device_print`") {
                Ok(s) => s,
                Err(m) => {
                    self.diag.error(a.sp(), m);
                    return;
                }
            };
            values.push(v);
        }
        let values = values.into_iter().map(|v| self.print_value(v, &shape)).collect();
        self.emit(Stmt::Print { prefix, values });
    }

    /// A printed value: a weak one in its default dtype, broadcast to `shape`.
    fn print_value(&mut self, v: ExprId, shape: &Shape) -> ExprId {
        let t = self.ty(v);
        let v = match t.dtype() {
            Some(d) if t.weak => self.coerce(v, d),
            _ => v,
        };
        if &t.shape == shape {
            return v;
        }
        let (ty, span) = (self.ty(v).with_shape(shape.clone()), self.span(v));
        self.push(ExprKind::BroadcastTo(v), ty, span)
    }

    // ------------------------------------------------------------ static_assert, static_print

    /// `static_assert(cond)` or `static_assert(cond, "message")`, evaluated in every instance
    /// that reaches it: an error at the call naming the instances where `cond` is false.
    fn lower_static_assert(&mut self, args: &[&syn::Expr], span: Sp) {
        if !(1..=2).contains(&args.len()) {
            self.diag.error(span, "wrong number of arguments: expected `static_assert(condition, \"message\")`");
            return;
        }
        let message = match args.get(1) {
            Some(a) => match string_literal(a) {
                Some(s) => s,
                None => {
                    self.diag.error(a.sp(), "the message of `static_assert` is a string literal: `static_assert(BLOCK >= 16, \"...\")`");
                    return;
                }
            },
            None => String::new(),
        };
        let mut failing = Vec::new();
        for (vals, desc) in self.static_instances() {
            match self.const_eval(args[0], &vals) {
                Ok(ConstVal::Bool(true)) | Err(ConstErr::Unknown) => {}
                Ok(ConstVal::Bool(false)) => failing.push(desc),
                Ok(ConstVal::Int(v)) => {
                    self.diag.error(args[0].sp(), format!("the condition of `static_assert` must be a bool, found the integer {v}: compare, as in `BLOCK >= 16`"));
                    return;
                }
                Err(e) => return self.const_error(e, &desc),
            }
        }
        if failing.is_empty() {
            return;
        }
        let text = expr_text(args[0]);
        let why = match message.as_str() {
            "" => String::new(),
            m => format!("{m}: "),
        };
        let instances = describe_instances(&failing);
        self.diag.error(span, format!("static_assert failed: {why}`{text}` is false{instances}"));
    }

    /// `static_print(args...)`: string literals and compile-time expressions, joined by spaces
    /// in every instance that reaches the call, as a warning at the call.
    fn lower_static_print(&mut self, args: &[&syn::Expr], span: Sp) {
        let mut lines: Vec<(String, String)> = Vec::new();
        for (vals, desc) in self.static_instances() {
            let mut parts = Vec::new();
            for a in args {
                match string_literal(a) {
                    Some(s) => parts.push(s),
                    None => match self.const_eval(a, &vals) {
                        Ok(v) => parts.push(v.to_string()),
                        Err(ConstErr::Unknown) => parts.push("?".to_string()),
                        Err(e) => return self.const_error(e, &desc),
                    },
                }
            }
            lines.push((parts.join(" "), desc));
        }
        if lines.is_empty() {
            return;
        }
        let same = lines.windows(2).all(|w| w[0].0 == w[1].0);
        let text = match lines.first() {
            Some((line, _)) if same => line.clone(),
            _ => {
                let shown: Vec<String> = lines.iter().take(MAX_PRINTED_INSTANCES).map(|(l, d)| if d.is_empty() { l.clone() } else { format!("{l} ({d})") }).collect();
                let more = match lines.len().saturating_sub(MAX_PRINTED_INSTANCES) {
                    0 => String::new(),
                    n => format!("; and {n} more instances"),
                };
                format!("{}{more}", shown.join("; "))
            }
        };
        self.diag.warning(span, "static_print", format!("static_print in kernel `{}`: {text}", self.k.name));
    }

    /// Reports an evaluation error of `static_assert`/`static_print` (in instance `desc`).
    fn const_error(&mut self, e: ConstErr, desc: &str) {
        match e {
            ConstErr::NotConst(sp, m) => self.diag.error(sp, m),
            ConstErr::Failed(sp, m) if desc.is_empty() => self.diag.error(sp, m),
            ConstErr::Failed(sp, m) => self.diag.error(sp, format!("{m} in the instance {desc}")),
            ConstErr::Unknown => {}
        }
    }

    /// The declared instances (meta values and description) that reach the statement being
    /// lowered: those where every enclosing `if` on meta-parameters takes this branch.
    pub(super) fn static_instances(&self) -> Vec<(HashMap<String, i64>, String)> {
        self.cx
            .concrete
            .iter()
            .filter(|(vals, _)| self.static_guards.iter().all(|(g, want)| !matches!(self.const_eval(g, vals), Ok(ConstVal::Bool(b)) if b != *want)))
            .cloned()
            .collect()
    }

    /// Whether `cond` (of an `if`) is a compile-time condition: a bool in every instance.
    pub(super) fn is_static_condition(&self, cond: &syn::Expr) -> bool {
        self.cx.concrete.iter().all(|(vals, _)| matches!(self.const_eval(cond, vals), Ok(ConstVal::Bool(_)) | Err(ConstErr::Unknown)))
    }

    /// The value of the compile-time expression `e` with the meta values `vals`.
    pub(super) fn const_eval(&self, e: &syn::Expr, vals: &HashMap<String, i64>) -> Result<ConstVal, ConstErr> {
        let not_const = |sp: Sp, what: String| Err(ConstErr::NotConst(sp, format!("{what}: `static_assert` and `static_print` are evaluated at compile time, from {CONST_FORMS}")));
        match strip_parens(e) {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<i64>() {
                Ok(v) => Ok(ConstVal::Int(v)),
                Err(_) => not_const(e.sp(), "integer literal out of range for i64".to_string()),
            },
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) => Ok(ConstVal::Bool(b.value)),
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                match self.lookup(&name) {
                    Some(Binding::Meta(i)) => match (vals.get(&name), &self.k.metas[i].kind) {
                        (None, _) => Err(ConstErr::Unknown),
                        (Some(v), MetaKind::Bool) => Ok(ConstVal::Bool(*v != 0)),
                        (Some(v), _) => Ok(ConstVal::Int(*v)),
                    },
                    Some(_) => not_const(e.sp(), format!("`{name}` is not a meta-parameter")),
                    None => not_const(e.sp(), format!("cannot find `{name}` in this kernel{}", self.suggest_value(&name))),
                }
            }
            syn::Expr::Unary(u) => {
                let x = self.const_eval(&u.expr, vals)?;
                match (&u.op, x) {
                    (syn::UnOp::Neg(_), ConstVal::Int(v)) => v.checked_neg().map(ConstVal::Int).ok_or_else(|| ConstErr::Failed(e.sp(), "overflow in `-`".to_string())),
                    (syn::UnOp::Not(_), ConstVal::Bool(b)) => Ok(ConstVal::Bool(!b)),
                    (syn::UnOp::Not(_), ConstVal::Int(v)) => Ok(ConstVal::Int(!v)),
                    _ => not_const(e.sp(), "unsupported operator".to_string()),
                }
            }
            syn::Expr::Binary(b) => {
                let l = self.const_eval(&b.left, vals)?;
                // `&&` and `||` short-circuit, as in Rust.
                match (&b.op, l) {
                    (syn::BinOp::And(_), ConstVal::Bool(false)) => return Ok(ConstVal::Bool(false)),
                    (syn::BinOp::Or(_), ConstVal::Bool(true)) => return Ok(ConstVal::Bool(true)),
                    _ => {}
                }
                let r = self.const_eval(&b.right, vals)?;
                const_binary(&b.op, l, r).map_err(|m| match m {
                    Some(m) => ConstErr::Failed(b.sp(), m),
                    None => ConstErr::NotConst(b.op.sp(), format!("`{}` is not defined between {} and {}", b.op.to_token_stream(), l.kind(), r.kind())),
                })
            }
            syn::Expr::Call(c) if matches!(call_name(c).as_deref(), Some("min" | "max" | "cdiv")) && c.args.len() == 2 => {
                let name = call_name(c).unwrap_or_default();
                let (ConstVal::Int(a), ConstVal::Int(b)) = (self.const_eval(&c.args[0], vals)?, self.const_eval(&c.args[1], vals)?) else {
                    return not_const(e.sp(), format!("`{name}` takes integers"));
                };
                match name.as_str() {
                    "min" => Ok(ConstVal::Int(a.min(b))),
                    "max" => Ok(ConstVal::Int(a.max(b))),
                    _ if b == 0 => Err(ConstErr::Failed(e.sp(), "division by zero in `cdiv`".to_string())),
                    _ => a.checked_add(b - 1).map(|s| ConstVal::Int(s / b)).ok_or_else(|| ConstErr::Failed(e.sp(), "overflow in `cdiv`".to_string())),
                }
            }
            other => not_const(other.sp(), "this expression has no compile-time value".to_string()),
        }
    }
}

/// `l op r` at compile time: `Err(Some(msg))` when the arithmetic fails, `Err(None)` when the
/// operator does not apply to these operands.
fn const_binary(op: &syn::BinOp, l: ConstVal, r: ConstVal) -> Result<ConstVal, Option<String>> {
    use syn::BinOp as B;
    use ConstVal::{Bool, Int};
    let checked = |v: Option<i64>, what: &str| v.map(Int).ok_or_else(|| Some(format!("overflow in `{what}`")));
    match (op, l, r) {
        (B::Add(_), Int(a), Int(b)) => checked(a.checked_add(b), "+"),
        (B::Sub(_), Int(a), Int(b)) => checked(a.checked_sub(b), "-"),
        (B::Mul(_), Int(a), Int(b)) => checked(a.checked_mul(b), "*"),
        (B::Div(_) | B::Rem(_), Int(_), Int(0)) => Err(Some("division by zero".to_string())),
        (B::Div(_), Int(a), Int(b)) => checked(a.checked_div(b), "/"),
        (B::Rem(_), Int(a), Int(b)) => checked(a.checked_rem(b), "%"),
        (B::Shl(_), Int(a), Int(b)) => checked(u32::try_from(b).ok().and_then(|s| a.checked_shl(s)), "<<"),
        (B::Shr(_), Int(a), Int(b)) => checked(u32::try_from(b).ok().and_then(|s| a.checked_shr(s)), ">>"),
        (B::BitAnd(_), Int(a), Int(b)) => Ok(Int(a & b)),
        (B::BitOr(_), Int(a), Int(b)) => Ok(Int(a | b)),
        (B::BitXor(_), Int(a), Int(b)) => Ok(Int(a ^ b)),
        (B::BitAnd(_) | B::And(_), Bool(a), Bool(b)) => Ok(Bool(a && b)),
        (B::BitOr(_) | B::Or(_), Bool(a), Bool(b)) => Ok(Bool(a || b)),
        (B::BitXor(_), Bool(a), Bool(b)) => Ok(Bool(a ^ b)),
        (B::Eq(_), a, b) if std::mem::discriminant(&a) == std::mem::discriminant(&b) => Ok(Bool(a == b)),
        (B::Ne(_), a, b) if std::mem::discriminant(&a) == std::mem::discriminant(&b) => Ok(Bool(a != b)),
        (B::Lt(_), Int(a), Int(b)) => Ok(Bool(a < b)),
        (B::Le(_), Int(a), Int(b)) => Ok(Bool(a <= b)),
        (B::Gt(_), Int(a), Int(b)) => Ok(Bool(a > b)),
        (B::Ge(_), Int(a), Int(b)) => Ok(Bool(a >= b)),
        _ => Err(None),
    }
}

/// ` in the instance BLOCK = 8` / ` in the instances ...; ...` (at most four, then a count);
/// nothing for a kernel without meta-parameters.
fn describe_instances(descs: &[String]) -> String {
    match descs {
        [] => String::new(),
        [d] if d.is_empty() => String::new(),
        [d] => format!(" in the instance {d}"),
        _ => {
            let shown: Vec<&str> = descs.iter().take(4).map(|d| d.as_str()).collect();
            let more = match descs.len().saturating_sub(4) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            format!(" in the instances {}{more}", shown.join("; "))
        }
    }
}

/// The source text of `e`, spaced as rustfmt would for the forms kernels use (`x.sum(0)`,
/// `offs < n - 1`, `load(p + i, m)`), for messages that quote the kernel.
pub(super) fn expr_text(e: &syn::Expr) -> String {
    let list = |args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>| args.iter().map(expr_text).collect::<Vec<_>>().join(", ");
    match e {
        syn::Expr::Paren(p) => format!("({})", expr_text(&p.expr)),
        syn::Expr::Group(g) => expr_text(&g.expr),
        syn::Expr::Binary(b) => format!("{} {} {}", expr_text(&b.left), b.op.to_token_stream(), expr_text(&b.right)),
        syn::Expr::Unary(u) => format!("{}{}", u.op.to_token_stream(), expr_text(&u.expr)),
        syn::Expr::Call(c) => format!("{}({})", expr_text(&c.func), list(&c.args)),
        syn::Expr::MethodCall(m) => {
            let turbofish = m.turbofish.as_ref().map(|t| t.to_token_stream().to_string().replace(' ', "")).unwrap_or_default();
            format!("{}.{}{turbofish}({})", expr_text(&m.receiver), m.method, list(&m.args))
        }
        syn::Expr::Cast(c) => format!("{} as {}", expr_text(&c.expr), c.ty.to_token_stream()),
        syn::Expr::Path(p) => p.to_token_stream().to_string().replace(' ', ""),
        syn::Expr::Array(a) => format!("[{}]", a.elems.iter().map(expr_text).collect::<Vec<_>>().join(", ")),
        other => other.to_token_stream().to_string(),
    }
}
