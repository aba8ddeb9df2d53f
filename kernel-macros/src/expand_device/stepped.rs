//! Before planning: the operand pointers of a K loop's `dot` that the loop recomputes from its
//! variable each iteration (Triton's persistent matmul: `offs_k = ki * BLOCK_K + arange(0,
//! BLOCK_K)`, `a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak`)
//! become pointers stepped once per iteration, as the seeds' kernel writes them (`a_ptrs +=
//! BLOCK_K * stride_ak`): a mutable local set before the loop to the pointers of its first
//! iteration and advanced at the end of each by the amount they move per iteration. The plan
//! then sees the loop the software pipeliner takes (`DevicePlan::pipeline_plan`). The body's
//! scalar `let`s of integer arithmetic on the variable (`k_remaining = K - k * BLOCK_K`, which
//! the masks read) are inlined into their reads first: the pipeliner evaluates the masks of
//! iterations ahead of the one the body runs. Before that, an operand `trans(b)` of a `b`
//! loaded in the body (`dot(a, b.trans())` of a weight stored `[N, K]`) becomes a load of the
//! transposed pointers, which the pipeliner stages from memory contiguous down its columns.
//!
//! A pointer block is stepped when it moves as a whole with the loop variable: it is a sum of
//! terms each independent of the variable or the variable times loop-invariant scalars (through
//! the loop body's `let`s), so that every element moves by the same scalar, its derivative
//! times the loop's step. Only loops with one `dot`, `acc = dot(a, b, acc)`, are rewritten, and
//! only when every operand whose pointers depend on the variable can be stepped (otherwise the
//! loop would not be pipelined anyway and keeps its code); the caller keeps the change only in
//! the loops the plan then pipelines (`entry.rs`): a loop still run as written keeps the copies
//! ahead that pointers recomputed from its variable allow. The offsets are then computed once
//! in the kernel's integer type and advanced by pointer steps: the same addresses as the
//! kernel's, except where its offsets would overflow their type (where the kernel's addresses
//! wrap).

use super::*;
use crate::diag::Sp;
use std::collections::HashSet;

/// `k` with the pointers of its K loops stepped (see the module documentation), only in the
/// loops over the variables in `only` when given; and the variables of the loops changed.
pub(super) fn step_operand_pointers(k: &Kernel, only: Option<&HashSet<LocalId>>) -> (Kernel, Vec<LocalId>) {
    let mut out = k.clone();
    let values = assigned_values(k);
    let body = std::mem::take(&mut out.body);
    let mut changed = Vec::new();
    out.body = rewrite(&mut out, body, (only, &values), &mut changed);
    (out, changed)
}

/// `only` as in [`step_operand_pointers`]; `values`: every value each local of the kernel is
/// given (`assigned_values`, the body being rewritten is out of the kernel meanwhile).
type Scope<'a> = (Option<&'a HashSet<LocalId>>, &'a HashMap<LocalId, Vec<ExprId>>);

fn rewrite(k: &mut Kernel, stmts: Vec<Stmt>, scope: Scope<'_>, changed: &mut Vec<LocalId>) -> Vec<Stmt> {
    let (only, values) = scope;
    let mut out = Vec::with_capacity(stmts.len());
    for s in stmts {
        match s {
            Stmt::For { var, start, end, step, body, span } => {
                let mut body = rewrite(k, body, scope, changed);
                if only.is_none_or(|o| o.contains(&var)) {
                    let lets_before: HashSet<LocalId> = out.iter().filter_map(|s| if let Stmt::Let { local, .. } = s { Some(*local) } else { None }).collect();
                    if let Some(before) = step_loop(k, var, (start, step), &mut body, (values, &lets_before)) {
                        changed.push(var);
                        out.extend(before);
                    }
                }
                out.push(Stmt::For { var, start, end, step, body, span });
            }
            Stmt::If { cond, then, els } => out.push(Stmt::If { cond, then: rewrite(k, then, scope, changed), els: rewrite(k, els, scope, changed) }),
            Stmt::While { pre, test, body } => out.push(Stmt::While { pre: rewrite(k, pre, scope, changed), test, body: rewrite(k, body, scope, changed) }),
            other => out.push(other),
        }
    }
    out
}

/// What the pointers of one loop may read: the loop variable, the body's immutable `let`s (by
/// value), and locals the loop does not change.
struct LoopScope {
    var: LocalId,
    lets: HashMap<LocalId, ExprId>,
    changed: HashMap<LocalId, Vec<ExprId>>,
}

impl LoopScope {
    /// Whether `e` reads only what [`LoopScope`] allows, and nothing but integer and pointer
    /// arithmetic on it.
    fn allows(&self, k: &Kernel, e: ExprId) -> bool {
        match &k.exprs[e].kind {
            ExprKind::Local(l) if *l == self.var => true,
            ExprKind::Local(l) => match self.lets.get(l) {
                Some(v) => self.allows(k, *v),
                None => !self.changed.contains_key(l),
            },
            kind => copyable(kind) && kind.operands().into_iter().all(|c| self.allows(k, c)),
        }
    }

    /// Whether `e` reads the loop variable (through the body's `let`s).
    fn depends(&self, k: &Kernel, e: ExprId) -> bool {
        match &k.exprs[e].kind {
            ExprKind::Local(l) if *l == self.var => true,
            ExprKind::Local(l) => self.lets.get(l).is_some_and(|v| self.depends(k, *v)),
            kind => kind.operands().into_iter().any(|c| self.depends(k, c)),
        }
    }
}

/// The expressions [`copy`] reproduces: leaves (parameters, literals, locals, program ids,
/// `arange`) and the integer and pointer arithmetic of offsets.
fn copyable(kind: &ExprKind) -> bool {
    kind.operands().is_empty()
        || matches!(kind, ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::PtrAdd(..) | ExprKind::Cast(_) | ExprKind::ExpandDims(..) | ExprKind::Reshape(_) | ExprKind::BroadcastTo(_) | ExprKind::Where(..))
}

/// Rewrites the K loop over `var` (see the module documentation): the body's scalar `let`s
/// inlined, then the operand pointers that recompute from `var` stepped. The statements to put
/// before the loop (the stepped pointers' first values) when the loop changed, else `None`.
/// `outer`: every value each local of the kernel is given, and the locals bound before the loop
/// in its statement list.
fn step_loop(k: &mut Kernel, var: LocalId, (start, step): (ExprId, ExprId), body: &mut Vec<Stmt>, outer: (&HashMap<LocalId, Vec<ExprId>>, &HashSet<LocalId>)) -> Option<Vec<Stmt>> {
    let transposed = load_transposed_operands(k, body, outer);
    let Some(loads) = dot_operand_loads(k, body) else { return transposed };
    let inlined = inline_scalar_lets(k, var, body) || transposed.is_some();
    let mut before = transposed.unwrap_or_default();
    match step_pointers(k, var, (start, step), body, loads) {
        Some(firsts) => before.extend(firsts),
        None if inlined => {}
        None => return None,
    }
    Some(before)
}

/// What the pointers and scalars of the loop over `var` may read (see [`LoopScope`]).
fn loop_scope(k: &Kernel, var: LocalId, body: &[Stmt]) -> LoopScope {
    let changed = loop_values(body);
    let lets = body
        .iter()
        .filter_map(|s| match s {
            Stmt::Let { local, value } if !k.locals[*local].mutable && changed.get(local).is_some_and(|v| v.len() == 1) => Some((*local, *value)),
            _ => None,
        })
        .collect();
    LoopScope { var, lets, changed }
}

/// Inlines the body's immutable scalar `let`s whose values are integer arithmetic on the loop
/// variable and values the loop does not change (`k_remaining = K - k * BLOCK_K`): each read
/// becomes a copy of the value and the `let` goes, so that the pipeliner, which evaluates the
/// masks of any iteration ahead of the body, sees what they read. Whether one was inlined.
fn inline_scalar_lets(k: &mut Kernel, var: LocalId, body: &mut Vec<Stmt>) -> bool {
    let mut inlined = false;
    let mut i = 0;
    while i < body.len() {
        let Stmt::Let { local, value } = body[i] else {
            i += 1;
            continue;
        };
        if !k.locals[local].ty.is_scalar() {
            i += 1;
            continue;
        }
        let scope = loop_scope(k, var, body);
        if !scope.lets.contains_key(&local) || !scope.allows(k, value) {
            i += 1;
            continue;
        }
        for e in 0..k.exprs.len() {
            if matches!(k.exprs[e].kind, ExprKind::Local(l) if l == local) {
                let c = copy(k, &scope, value, None);
                k.exprs[e].kind = k.exprs[c].kind.clone();
            }
        }
        body.remove(i);
        inlined = true;
    }
    inlined
}

/// Replaces each operand `trans(x)` of the body's one `dot`, `x` a 2-D load bound at the body's
/// top level and read only there (`dot(a, b.trans())` of a weight stored `[N, K]`), by a load
/// of the transposed pointers, mask and fill (each as the block it broadcasts to; the transpose
/// pushed down to the `expand_dims` of the offsets, see [`transposed`]): the loop then stages
/// the operand from memory contiguous down its columns, which the tensor maps and
/// `ldmatrix.trans` copy. The statements to put before the loop (transposed copies of stepped
/// pointers) when one was replaced.
fn load_transposed_operands(k: &mut Kernel, body: &mut Vec<Stmt>, (values, lets_before): (&HashMap<LocalId, Vec<ExprId>>, &HashSet<LocalId>)) -> Option<Vec<Stmt>> {
    let dot = only_dot(k, body)?;
    let ExprKind::Dot { a, b, acc } = k.exprs[dot].kind else { return None };
    let mut changed = false;
    let mut before = Vec::new();
    let mut operands = [a, b];
    for x in operands.iter_mut() {
        let ExprKind::Trans(inner) = k.exprs[*x].kind else { continue };
        let ExprKind::Local(l) = k.exprs[inner].kind else { continue };
        let reads = k.exprs.iter().filter(|e| matches!(e.kind, ExprKind::Local(r) if r == l)).count();
        let Some(at) = body.iter().position(|s| matches!(s, Stmt::Let { local, .. } if *local == l)) else { continue };
        let Stmt::Let { value: ld, .. } = body[at] else { continue };
        let ExprKind::Load { ptr, mask, other } = k.exprs[ld].kind else { continue };
        if reads != 1 || k.locals[l].mutable || k.exprs[ld].ty.shape.len() != 2 {
            continue;
        }
        let ptr_t = match k.exprs[ptr].kind {
            ExprKind::Local(p) if k.locals[p].mutable && lets_before.contains(&p) => match transposed_stepped(k, p, body, values) {
                Some((read, first)) => {
                    before.push(first);
                    read
                }
                None => continue,
            },
            _ => transposed(k, ptr, values),
        };
        let mask_t = mask.map(|m| transposed(k, m, values));
        let other = other.map(|o| transposed(k, o, values));
        let ty = k.exprs[*x].ty.clone();
        let span = k.exprs[ld].span;
        let load_t = push(k, ExprKind::Load { ptr: ptr_t, mask: mask_t, other }, ty.clone(), span);
        let local = k.locals.len();
        k.locals.push(Local { name: format!("{}_t", k.locals[l].name), ty: ty.clone(), mutable: false });
        // (The steps of a transposed pointer local may have been inserted before it.)
        let at = body.iter().position(|s| matches!(s, Stmt::Let { local, .. } if *local == l)).expect("the operand's let");
        body[at] = Stmt::Let { local, value: load_t };
        *x = push(k, ExprKind::Local(local), ty, span);
        changed = true;
    }
    if !changed {
        return None;
    }
    let [a, b] = operands;
    k.exprs[dot].kind = ExprKind::Dot { a, b, acc };
    Some(before)
}

/// For the mutable pointer block `p`, bound before the loop and advanced only by the body's
/// top-level steps `p += st` (scalar): a mutable `p_t` bound before the loop to the transpose of
/// `p`'s first value and advanced by the same steps (added to `body`); a read of it and its
/// `let`. `None` where `p` is given other values or its first value cannot be transposed.
fn transposed_stepped(k: &mut Kernel, p: LocalId, body: &mut Vec<Stmt>, values: &HashMap<LocalId, Vec<ExprId>>) -> Option<(ExprId, Stmt)> {
    let steps: Vec<(usize, ExprId)> = body.iter().enumerate().filter_map(|(i, s)| match s {
        Stmt::Assign { local, value } if *local == p => Some((i, *value)),
        _ => None,
    }).collect();
    let vals = values.get(&p)?;
    let init = *vals.iter().find(|v| !steps.iter().any(|(_, s)| s == *v))?;
    if steps.len() + 1 != vals.len() || reads_mutable(k, init) {
        return None;
    }
    let mut incs = Vec::new();
    for &(i, v) in &steps {
        let (x, st, sub) = match k.exprs[v].kind {
            ExprKind::PtrAdd(x, st) | ExprKind::Binary(BinOp::Add, x, st) => (x, st, false),
            ExprKind::Binary(BinOp::Sub, x, st) => (x, st, true),
            _ => return None,
        };
        if !matches!(k.exprs[x].kind, ExprKind::Local(l) if l == p) || !k.exprs[st].ty.shape.is_empty() || reads_mutable(k, st) {
            return None;
        }
        incs.push((i, st, sub));
    }
    let first = transposed(k, init, values);
    if has_trans(k, first) {
        return None;
    }
    let (ty, span) = (k.exprs[first].ty.clone(), k.exprs[first].span);
    let pt = k.locals.len();
    k.locals.push(Local { name: format!("{}_t", k.locals[p].name), ty: ty.clone(), mutable: true });
    let plain = LoopScope { var: usize::MAX, lets: HashMap::new(), changed: HashMap::new() };
    for &(i, st, sub) in incs.iter().rev() {
        let (cur, st) = (push(k, ExprKind::Local(pt), ty.clone(), span), copy(k, &plain, st, None));
        let next = if sub { ExprKind::Binary(BinOp::Sub, cur, st) } else { ExprKind::PtrAdd(cur, st) };
        let next = push(k, next, ty.clone(), span);
        body.insert(i + 1, Stmt::Assign { local: pt, value: next });
    }
    Some((push(k, ExprKind::Local(pt), ty, span), Stmt::Let { local: pt, value: first }))
}

/// Whether `e` has an explicit transpose.
fn has_trans(k: &Kernel, e: ExprId) -> bool {
    matches!(k.exprs[e].kind, ExprKind::Trans(_)) || k.exprs[e].kind.operands().into_iter().any(|c| has_trans(k, c))
}

/// The transpose of the 2-D block `e` (as the block it broadcasts to: a 1-D row becomes a
/// column) as an expression added to the kernel: elementwise operations of transposed operands,
/// `expand_dims` on the other axis, immutable locals bound once by their values (not through
/// mutable locals, whose value at the read may differ); scalars as they are; anything else (a
/// load, a reduction, a mutable local) under an explicit `trans`.
fn transposed(k: &mut Kernel, e: ExprId, values: &HashMap<LocalId, Vec<ExprId>>) -> ExprId {
    let (kind, ty, span) = (k.exprs[e].kind.clone(), k.exprs[e].ty.clone(), k.exprs[e].span);
    match ty.shape.len() {
        0 => return e,
        // A row broadcast along the block's rows: the transpose is the column `[n, 1]`.
        1 => {
            let ty_c = Ty { shape: vec![ty.shape[0].clone(), crate::shape::Dim::constant(1)], ..ty };
            return push(k, ExprKind::ExpandDims(e, 1), ty_c, span);
        }
        _ => {}
    }
    let mut ty_t = ty.clone();
    ty_t.shape.swap(0, 1);
    let kind_t = match kind {
        ExprKind::Trans(x) => return x,
        ExprKind::ExpandDims(x, ax) if ax <= 1 && k.exprs[x].ty.shape.len() == 1 => ExprKind::ExpandDims(x, 1 - ax),
        ExprKind::Local(l) if !k.locals[l].mutable => match values.get(&l).and_then(|v| (v.len() == 1).then(|| v[0])).map(|v| (v, &k.exprs[v].kind)) {
            Some((v, kind)) if !matches!(kind, ExprKind::Load { .. } | ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } | ExprKind::Atomic { .. } | ExprKind::Random { .. }) && !reads_mutable(k, v) => {
                return transposed(k, v, values)
            }
            _ => ExprKind::Trans(e),
        },
        ExprKind::Unary(op, x) => ExprKind::Unary(op, transposed(k, x, values)),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (transposed(k, a, values), transposed(k, b, values));
            ExprKind::Binary(op, a, b)
        }
        ExprKind::PtrAdd(a, b) => {
            let (a, b) = (transposed(k, a, values), transposed(k, b, values));
            ExprKind::PtrAdd(a, b)
        }
        ExprKind::Cast(x) => ExprKind::Cast(transposed(k, x, values)),
        ExprKind::BroadcastTo(x) => ExprKind::BroadcastTo(transposed(k, x, values)),
        ExprKind::Full(x) => ExprKind::Full(x),
        ExprKind::Where(c, a, b) => {
            let (c, a, b) = (transposed(k, c, values), transposed(k, a, values), transposed(k, b, values));
            ExprKind::Where(c, a, b)
        }
        _ => ExprKind::Trans(e),
    };
    push(k, kind_t, ty_t, span)
}

/// Whether `e` reads a mutable local (directly).
fn reads_mutable(k: &Kernel, e: ExprId) -> bool {
    match &k.exprs[e].kind {
        ExprKind::Local(l) => k.locals[*l].mutable,
        kind => kind.operands().into_iter().any(|c| reads_mutable(k, c)),
    }
}

/// Steps the pointers of the operand loads `loads` that recompute from `var` (see the module
/// documentation), when every one can be: the statements to put before the loop.
fn step_pointers(k: &mut Kernel, var: LocalId, (start, step): (ExprId, ExprId), body: &mut Vec<Stmt>, loads: Vec<ExprId>) -> Option<Vec<Stmt>> {
    let scope = loop_scope(k, var, body);
    let moving: Vec<ExprId> = loads.into_iter().filter(|&ld| scope.depends(k, load_ptr(k, ld))).collect();
    if moving.is_empty() || !moving.iter().all(|&ld| scope.allows(k, load_ptr(k, ld))) {
        return None;
    }
    // Each pointer's change per unit of the variable; where one has none, the expressions the
    // others added are taken out of the kernel again.
    let added_from = k.exprs.len();
    let mut per_var = Vec::with_capacity(moving.len());
    for &ld in &moving {
        match derivative(k, &scope, load_ptr(k, ld)) {
            Some(Some(d)) => per_var.push(d),
            _ => {
                k.exprs.truncate(added_from);
                return None;
            }
        }
    }
    let mut before = Vec::new();
    for (ld, per_var) in moving.into_iter().zip(per_var) {
        let ptr = load_ptr(k, ld);
        let step_copy = copy(k, &scope, step, None);
        let per_iter = binary(k, BinOp::Mul, per_var, step_copy);
        let start_copy = copy(k, &scope, start, None);
        let first = copy(k, &scope, ptr, Some(start_copy));
        let ty = k.exprs[ptr].ty.clone();
        let span = k.exprs[ptr].span;
        let name = match k.exprs[ptr].kind {
            ExprKind::Local(l) => format!("{}_stepped", k.locals[l].name),
            _ => "ptrs_stepped".to_string(),
        };
        let p = k.locals.len();
        k.locals.push(Local { name, ty: ty.clone(), mutable: true });
        before.push(Stmt::Let { local: p, value: first });
        let read = push(k, ExprKind::Local(p), ty.clone(), span);
        if let ExprKind::Load { ptr, .. } = &mut k.exprs[ld].kind {
            *ptr = read;
        }
        let cur = push(k, ExprKind::Local(p), ty.clone(), span);
        let next = push(k, ExprKind::PtrAdd(cur, per_iter), ty, span);
        body.push(Stmt::Assign { local: p, value: next });
    }
    Some(before)
}

/// The loads of the operands of the body's one `dot`, `acc = dot(a, b, acc)` with `a` and `b`
/// locals bound to loads at the body's top level; `None` when the body has no such `dot` or
/// more than one `dot`.
fn dot_operand_loads(k: &Kernel, body: &[Stmt]) -> Option<Vec<ExprId>> {
    let dot = only_dot(k, body)?;
    let ExprKind::Dot { a, b, acc: Some(c) } = k.exprs[dot].kind else { return None };
    let is_acc = body.iter().any(|s| matches!(s, Stmt::Assign { local, value } if *value == dot && matches!(k.exprs[c].kind, ExprKind::Local(l) if l == *local)));
    if !is_acc {
        return None;
    }
    let load_of = |x: ExprId| {
        let ExprKind::Local(l) = k.exprs[x].kind else { return None };
        body.iter().find_map(|s| match s {
            Stmt::Let { local, value } if *local == l && matches!(k.exprs[*value].kind, ExprKind::Load { .. }) => Some(*value),
            _ => None,
        })
    };
    Some(vec![load_of(a)?, load_of(b)?])
}

/// The one `dot` of `body` (its statements and those nested in them), if it has exactly one.
fn only_dot(k: &Kernel, body: &[Stmt]) -> Option<ExprId> {
    fn collect(k: &Kernel, stmts: &[Stmt], out: &mut Vec<ExprId>) {
        for s in stmts {
            let roots: Vec<ExprId> = match s {
                Stmt::Let { value, .. } | Stmt::Assign { value, .. } => vec![*value],
                Stmt::Store { ptr, value, mask, .. } => [Some(*ptr), Some(*value), *mask].into_iter().flatten().collect(),
                _ => Vec::new(),
            };
            roots.into_iter().for_each(|r| collect_dots(k, r, out));
            s.bodies().into_iter().for_each(|b| collect(k, b, out));
        }
    }
    let mut dots = Vec::new();
    collect(k, body, &mut dots);
    match dots[..] {
        [dot] => Some(dot),
        _ => None,
    }
}

fn load_ptr(k: &Kernel, ld: ExprId) -> ExprId {
    match k.exprs[ld].kind {
        ExprKind::Load { ptr, .. } => ptr,
        _ => unreachable!("a dot operand's load"),
    }
}

/// How much `e` changes when the loop variable grows by one, for every element alike: `None`
/// when `e` is not a sum of terms each independent of the variable or the variable times
/// loop-invariant scalars; `Some(None)` when it does not change; else the scalar integer
/// expression (added to the kernel) of the change.
fn derivative(k: &mut Kernel, scope: &LoopScope, e: ExprId) -> Option<Option<ExprId>> {
    if !scope.depends(k, e) {
        return Some(None);
    }
    let kind = k.exprs[e].kind.clone();
    match kind {
        ExprKind::Local(l) if l == scope.var => {
            let ty = k.exprs[e].ty.clone();
            Some(Some(push(k, ExprKind::Lit(Lit::Int(1)), Ty { weak: true, ..ty }, k.exprs[e].span)))
        }
        ExprKind::Local(l) => {
            let v = *scope.lets.get(&l)?;
            derivative(k, scope, v)
        }
        ExprKind::ExpandDims(x, _) | ExprKind::Reshape(x) | ExprKind::BroadcastTo(x) => derivative(k, scope, x),
        ExprKind::Binary(BinOp::Add, a, b) | ExprKind::PtrAdd(a, b) => sum(k, scope, (a, b), false),
        ExprKind::Binary(BinOp::Sub, a, b) => sum(k, scope, (a, b), true),
        ExprKind::Binary(BinOp::Mul, a, b) => {
            let scalar = |x: ExprId| k.exprs[x].ty.shape.is_empty() && !scope.depends(k, x);
            let (moving, factor) = if scalar(b) { (a, b) } else if scalar(a) { (b, a) } else { return None };
            let d = derivative(k, scope, moving)?;
            Some(match d {
                None => None,
                Some(d) => {
                    let f = copy(k, scope, factor, None);
                    Some(binary(k, BinOp::Mul, d, f))
                }
            })
        }
        _ => None,
    }
}

/// The derivative of `a + b` (`sub`: `a - b`) from those of `a` and `b` (see [`derivative`]).
fn sum(k: &mut Kernel, scope: &LoopScope, (a, b): (ExprId, ExprId), sub: bool) -> Option<Option<ExprId>> {
    let (da, db) = (derivative(k, scope, a)?, derivative(k, scope, b)?);
    Some(match (da, db) {
        (x, None) => x,
        (None, Some(y)) if sub => {
            let zero = push(k, ExprKind::Lit(Lit::Int(0)), Ty { weak: true, ..k.exprs[y].ty.clone() }, k.exprs[y].span);
            Some(binary(k, BinOp::Sub, zero, y))
        }
        (None, y) => y,
        (Some(x), Some(y)) => Some(binary(k, if sub { BinOp::Sub } else { BinOp::Add }, x, y)),
    })
}

/// A copy of `e` added to the kernel, with the body's `let`s it reads replaced by copies of
/// their values and, where `var` is given, the loop variable by it (`e` passes
/// [`LoopScope::allows`]).
fn copy(k: &mut Kernel, scope: &LoopScope, e: ExprId, var: Option<ExprId>) -> ExprId {
    let (kind, ty, span) = (k.exprs[e].kind.clone(), k.exprs[e].ty.clone(), k.exprs[e].span);
    let kind = match kind {
        ExprKind::Local(l) if l == scope.var => match var {
            Some(v) => return v,
            None => kind,
        },
        ExprKind::Local(l) => match scope.lets.get(&l) {
            Some(&v) => return copy(k, scope, v, var),
            None => kind,
        },
        ExprKind::Unary(op, x) => ExprKind::Unary(op, copy(k, scope, x, var)),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (copy(k, scope, a, var), copy(k, scope, b, var));
            ExprKind::Binary(op, a, b)
        }
        ExprKind::PtrAdd(a, b) => {
            let (a, b) = (copy(k, scope, a, var), copy(k, scope, b, var));
            ExprKind::PtrAdd(a, b)
        }
        ExprKind::Cast(x) => ExprKind::Cast(copy(k, scope, x, var)),
        ExprKind::ExpandDims(x, ax) => ExprKind::ExpandDims(copy(k, scope, x, var), ax),
        ExprKind::Reshape(x) => ExprKind::Reshape(copy(k, scope, x, var)),
        ExprKind::BroadcastTo(x) => ExprKind::BroadcastTo(copy(k, scope, x, var)),
        ExprKind::Where(c, a, b) => {
            let (c, a, b) = (copy(k, scope, c, var), copy(k, scope, a, var), copy(k, scope, b, var));
            ExprKind::Where(c, a, b)
        }
        leaf => leaf,
    };
    push(k, kind, ty, span)
}

/// `a op b` for two scalar integers, typed as the kernel types such arithmetic: a weak operand
/// takes the other's type.
fn binary(k: &mut Kernel, op: BinOp, a: ExprId, b: ExprId) -> ExprId {
    let (ta, tb) = (&k.exprs[a].ty, &k.exprs[b].ty);
    let ty = if ta.weak { tb.clone() } else { ta.clone() };
    let span = k.exprs[a].span;
    push(k, ExprKind::Binary(op, a, b), ty, span)
}

fn push(k: &mut Kernel, kind: ExprKind, ty: Ty, span: Sp) -> ExprId {
    k.exprs.push(Expr { kind, ty, span });
    k.exprs.len() - 1
}
