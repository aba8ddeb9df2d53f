//! Before planning: `acc += dot(a, b)` (an assignment to `acc` of `acc + dot(a, b)` or
//! `dot(a, b) + acc`, all of one type) becomes `acc = dot(a, b, acc)`, as Triton's compiler
//! combines them: the tensor cores add the product into the accumulator they hold, and a K loop
//! written either way takes the same pipelined code. The sums are the same up to the order of
//! the f32 additions (the product's partial sums go into the accumulator instead of into zero
//! first), as between any two `dot` implementations.

use super::*;

/// Combines every `acc += dot(a, b)` of `k` into `acc = dot(a, b, acc)`.
pub(super) fn fuse_accumulation(k: &mut Kernel) {
    let body = std::mem::take(&mut k.body);
    walk(k, &body);
    k.body = body;
}

fn walk(k: &mut Kernel, stmts: &[Stmt]) {
    for s in stmts {
        if let Stmt::Assign { local, value } = s {
            fuse(k, *local, *value);
        }
        for b in s.bodies() {
            walk(k, b);
        }
    }
}

/// `local = value`: where `value` is `local + dot(a, b)` (either order) of the `dot`'s type, it
/// becomes `dot(a, b, local)` in place.
fn fuse(k: &mut Kernel, local: LocalId, value: ExprId) {
    let ExprKind::Binary(BinOp::Add, x, y) = k.exprs[value].kind else { return };
    let is_acc = |e: ExprId| matches!(k.exprs[e].kind, ExprKind::Local(l) if l == local);
    let (acc, dot) = if is_acc(x) { (x, y) } else if is_acc(y) { (y, x) } else { return };
    let ExprKind::Dot { a, b, acc: None } = k.exprs[dot].kind else { return };
    let same = |e: ExprId| k.exprs[e].ty.elem == k.exprs[value].ty.elem && k.exprs[e].ty.shape == k.exprs[value].ty.shape;
    if same(dot) && same(acc) && k.locals[local].ty.elem == k.exprs[value].ty.elem {
        k.exprs[value].kind = ExprKind::Dot { a, b, acc: Some(acc) };
    }
}
