//! Lowering of Triton's hints, `multiple_of(x, n)`, `max_contiguous(x, n)` and
//! `max_constancy(x, n)`. Each gives its first argument. `multiple_of` on a scalar (an integer,
//! or a pointer, whose address in bytes it describes) is also a promise the code generator
//! relies on: the value is bound to a hidden local, and a check of the promise follows
//! (`Stmt::Assert` with `hint`), which both backends run — where it fails, the launch fails
//! with the hint's report — unless the code generator proves it. The hints on blocks are
//! accepted as in Triton (their values positive integers known at compile time, such as
//! `multiple_of(offs, BLOCK_M)`) and change nothing: contiguity and constancy along a block are found
//! by the code generator's own analyses.

use super::debug::{ConstErr, ConstVal};
use super::*;

impl Lowerer<'_, '_> {
    /// `name(args)`, one of the three hints.
    pub(super) fn lower_hint(&mut self, name: &str, args: &[&syn::Expr], span: Sp) -> ExprId {
        if args.len() != 2 {
            return self.err(span, format!("wrong number of arguments: expected `{name}(x, n)` or `{name}(x, [n0, n1])`"));
        }
        let x = self.lower_expr(args[0]);
        let t = self.ty(x);
        if t.is_error() {
            return x;
        }
        let pointer = matches!(t.elem, Elem::Ptr(_));
        let scalar_promise = name == "multiple_of" && t.shape.is_empty();
        if pointer && name == "multiple_of" && !scalar_promise {
            return self.err(args[0].sp(), format!("`multiple_of` describes the address of a scalar pointer (a pointer argument, or one offset by a scalar), found {t}: state it on the scalar before adding the offsets"));
        }
        if !t.dtype().is_some_and(|d| d.is_int()) && !(pointer && scalar_promise) {
            let what = if name == "multiple_of" { "integer offsets or a scalar pointer" } else { "integer offsets" };
            return self.err(args[0].sp(), format!("`{name}` describes {what}, found {t}"));
        }
        let rank = t.shape.len().max(1);
        if !scalar_promise {
            let expected = format!("the hint of `{name}` is a positive integer known at compile time (a literal, a meta-parameter or arithmetic on them), or a list of {rank} of them (one per axis)");
            let values: Vec<&syn::Expr> = match strip_parens(args[1]) {
                syn::Expr::Array(a) if a.elems.len() == rank => a.elems.iter().collect(),
                syn::Expr::Array(_) => return self.err(args[1].sp(), expected),
                other => vec![other],
            };
            // Every value is checked, so that each wrong one is reported.
            let ok = values.iter().fold(true, |ok, v| self.hint_divisor_ok(v, &expected) && ok);
            return if ok { x } else { self.poison(span) };
        }
        let expected = format!("the hint of `{name}` on a scalar is a positive integer known at compile time (a literal, a meta-parameter or arithmetic on them)");
        if !self.hint_divisor_ok(args[1], &expected) {
            return self.poison(span);
        }
        let n = self.lower_expr(args[1]);
        self.check_hint(name, args, x, n, pointer, span)
    }

    /// Whether `n`, a hint's value, is a positive compile-time integer in every instance (a
    /// literal, a meta-parameter or arithmetic on them); if not, the error (`expected`, with the
    /// value found and the instance where it depends on one).
    fn hint_divisor_ok(&mut self, n: &syn::Expr, expected: &str) -> bool {
        let instances = self.static_instances();
        let mut failing: Vec<(String, String)> = Vec::new();
        for (vals, desc) in &instances {
            let bad = match self.const_eval(n, vals) {
                Ok(ConstVal::Int(v)) if v > 0 => continue,
                Err(ConstErr::Unknown) => continue,
                Ok(ConstVal::Int(v)) => format!("{expected}, found {v}"),
                Ok(ConstVal::Bool(_)) | Err(ConstErr::NotConst(..)) => expected.to_string(),
                Err(ConstErr::Failed(_, m)) => m,
            };
            failing.push((bad, desc.clone()));
        }
        let Some((bad, desc)) = failing.first() else { return true };
        // The instance is named where the divisor depends on it.
        let msg = if failing.len() == instances.len() || desc.is_empty() { bad.clone() } else { format!("{bad} in the instance {desc}") };
        self.diag.error(n.sp(), msg);
        false
    }

    /// `x` bound to a hidden local, the check that it is a multiple of `n` (a pointer: its
    /// address), and a read of the local.
    fn check_hint(&mut self, name: &str, args: &[&syn::Expr], x: ExprId, n: ExprId, pointer: bool, span: Sp) -> ExprId {
        let read = self.bind_hidden("hint", x);
        let ExprKind::Local(local) = self.k.exprs[read].kind else { return read };
        let x_text = debug::expr_text(args[0]);
        let n_text = debug::expr_text(args[1]);
        let value = |me: &mut Self| {
            let r = me.reread(read, span);
            if pointer { me.push(ExprKind::Cast(r), Ty::scalar(DType::I64), span) } else { r }
        };
        let checked = value(self);
        let rem = self.binary(BinOp::Rem, checked, n, span);
        let zero = self.push(ExprKind::Lit(Lit::Int(0)), Ty::weak(DType::I32), span);
        let cond = self.binary(BinOp::Eq, rem, zero, span);
        let shown = value(self);
        let (operand, text) = if pointer {
            (format!("the address of {x_text}"), format!("address({x_text}) % {n_text} == 0"))
        } else {
            (x_text.clone(), format!("{x_text} % {n_text} == 0"))
        };
        let message = format!("the hint `{name}({x_text}, {n_text})` does not hold");
        self.emit(Stmt::Assert { cond, message, text, operands: vec![(operand, shown)], span, hint: Some((local, n)) });
        self.reread(read, span)
    }
}
