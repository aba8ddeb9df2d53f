//! Before planning: `if`s whose condition the instance's meta-parameter values decide (Triton's
//! `if STAGE == 2` on a `constexpr`) keep only the branch taken, so that the plan neither
//! schedules loops nor reserves shared memory for code that never runs.

use super::*;

/// `k` with every `if` whose condition is known from `vals` replaced by the statements of the
/// branch it takes.
pub(super) fn fold_static_ifs(k: &Kernel, vals: &HashMap<String, i64>) -> Kernel {
    let mut out = k.clone();
    out.body = fold(k, vals, &k.body);
    out
}

fn fold(k: &Kernel, vals: &HashMap<String, i64>, stmts: &[Stmt]) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(stmts.len());
    for s in stmts {
        match s {
            Stmt::If { cond, then, els } => match static_bool(k, vals, *cond) {
                Some(true) => out.extend(fold(k, vals, then)),
                Some(false) => out.extend(fold(k, vals, els)),
                None => out.push(Stmt::If { cond: *cond, then: fold(k, vals, then), els: fold(k, vals, els) }),
            },
            Stmt::For { var, start, end, step, body, span } => {
                out.push(Stmt::For { var: *var, start: *start, end: *end, step: *step, body: fold(k, vals, body), span: *span });
            }
            Stmt::While { pre, test, body } => out.push(Stmt::While { pre: fold(k, vals, pre), test: *test, body: fold(k, vals, body) }),
            other => out.push(other.clone()),
        }
    }
    out
}

/// The value of a scalar condition built from meta-parameters and literals, when `vals` decide
/// it.
fn static_bool(k: &Kernel, vals: &HashMap<String, i64>, e: ExprId) -> Option<bool> {
    let int = |x: ExprId| static_int(k, vals, x);
    match &k.exprs[e].kind {
        ExprKind::Lit(Lit::Bool(b)) => Some(*b),
        ExprKind::Meta(_) => int(e).map(|v| v != 0),
        ExprKind::Unary(UnOp::Not, x) => static_bool(k, vals, *x).map(|b| !b),
        ExprKind::Binary(op @ (BinOp::And | BinOp::Or | BinOp::Xor), a, b) if k.exprs[*a].ty.dtype() == Some(DType::Bool) => {
            let (a, b) = (static_bool(k, vals, *a)?, static_bool(k, vals, *b)?);
            Some(match op {
                BinOp::And => a && b,
                BinOp::Or => a || b,
                _ => a != b,
            })
        }
        ExprKind::Binary(op, a, b) if op.is_comparison() => {
            let (a, b) = (int(*a)?, int(*b)?);
            Some(match op {
                BinOp::Lt => a < b,
                BinOp::Le => a <= b,
                BinOp::Gt => a > b,
                BinOp::Ge => a >= b,
                BinOp::Eq => a == b,
                _ => a != b,
            })
        }
        _ => None,
    }
}

/// The value of an integer (or boolean, as 0 or 1) meta-parameter or literal.
fn static_int(k: &Kernel, vals: &HashMap<String, i64>, e: ExprId) -> Option<i64> {
    match &k.exprs[e].kind {
        ExprKind::Lit(Lit::Int(v)) => Some(*v),
        ExprKind::Lit(Lit::Bool(b)) => Some(*b as i64),
        ExprKind::Meta(i) => vals.get(&k.metas[*i].name).copied(),
        _ => None,
    }
}
