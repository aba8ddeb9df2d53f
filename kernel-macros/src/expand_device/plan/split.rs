//! The loop a launch may split over several blocks per program (`SplitLoop`); the code around
//! it is `expand_device/split.rs`.

use super::*;

/// The K loop that an entry may split: the kernel's only loop, at the top level of its body,
/// whose body defines values, accumulates `acc = dot(a, b, acc)` into an f32 block that starts
/// at zero (and is not assigned before the loop), and steps affine pointer blocks by
/// loop-invariant scalars; nothing before the loop stores or runs an atomic. After the loop, anything goes: it
/// runs once, in the last part. Each run of iterations then gives a partial sum of `acc`, the
/// sum of the parts is the loop's result, and redoing the statements before the loop in every
/// part changes nothing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SplitLoop {
    /// The loop variable.
    pub(crate) var: LocalId,
    /// The accumulator.
    pub(crate) acc: LocalId,
    /// The affine locals the loop steps: (local, scalar step, subtracted).
    pub(crate) steps: Vec<(LocalId, ExprId, bool)>,
    /// Those of them that statements after the loop read (only they are moved on to where the
    /// whole loop leaves them: nothing else is kept live across the loop).
    pub(crate) read_after: Vec<LocalId>,
}

/// Loops anywhere in `stmts`.
pub(crate) fn count_loops(stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| usize::from(matches!(s, Stmt::For { .. } | Stmt::While { .. })) + s.bodies().into_iter().map(count_loops).sum::<usize>())
        .sum()
}

/// Whether `s` writes memory or has another effect that the parts of a split program would
/// repeat: a store, an atomic, a `device_print` or a `device_assert` (itself or a statement
/// inside it).
pub(crate) fn stores(k: &Kernel, s: &Stmt) -> bool {
    match s {
        Stmt::Store { .. } | Stmt::Print { .. } | Stmt::Assert { .. } => true,
        Stmt::Let { value, .. } => matches!(k.exprs[*value].kind, ExprKind::Atomic { .. }),
        _ => s.bodies().into_iter().flatten().any(|s| stores(k, s)),
    }
}

/// Whether `s` assigns local `l` (itself or a statement inside it).
pub(crate) fn assigns(s: &Stmt, l: LocalId) -> bool {
    match s {
        Stmt::Assign { local, .. } => *local == l,
        _ => s.bodies().into_iter().flatten().any(|s| assigns(s, l)),
    }
}

/// Whether `s` reads local `l` (itself or a statement inside it).
pub(crate) fn reads(k: &Kernel, s: &Stmt, l: LocalId) -> bool {
    DevGen::stmt_roots(s).into_iter().any(|e| uses_local(k, e, l)) || s.bodies().into_iter().flatten().any(|s| reads(k, s, l))
}

/// Whether `e` is a block of zeros (`zeros`, `full(.., 0)`, a cast or broadcast of one; `-0.0`
/// included).
pub(crate) fn is_zero(k: &Kernel, e: ExprId) -> bool {
    zero_block(k, e, |v| v == 0.0)
}

/// Whether `e` is a block of zero bits: [`is_zero`] without `-0.0` (what the copy engine writes
/// for elements outside a tensor map).
pub(crate) fn is_zero_bits(k: &Kernel, e: ExprId) -> bool {
    zero_block(k, e, |v| v.to_bits() == 0)
}

/// Whether `e` is a block of an integer 0 or of a float literal that `float_zero` accepts, through
/// `full`, casts and broadcasts.
fn zero_block(k: &Kernel, e: ExprId, float_zero: fn(f64) -> bool) -> bool {
    match &k.exprs[e].kind {
        ExprKind::Full(x) | ExprKind::Cast(x) | ExprKind::BroadcastTo(x) => zero_block(k, *x, float_zero),
        ExprKind::Lit(Lit::Int(0)) => true,
        ExprKind::Lit(Lit::Float(v)) => float_zero(*v),
        _ => false,
    }
}

impl DevicePlan<'_> {
    /// The loop of the kernel that launches may split, if it has one (see [`SplitLoop`]).
    pub(crate) fn split_loop(&self) -> Option<SplitLoop> {
        let k = self.k;
        // Only loop of the kernel, at the top level, with nothing storing before it.
        if count_loops(&k.body) != 1 {
            return None;
        }
        let at = k.body.iter().position(|s| matches!(s, Stmt::For { .. }))?;
        let Stmt::For { var, body, .. } = &k.body[at] else { return None };
        if k.body[..at].iter().any(|s| stores(k, s)) {
            return None;
        }
        // Its body: definitions, one accumulation and affine steps.
        let (mut acc, mut steps, mut defined) = (None, Vec::new(), vec![*var]);
        for s in body {
            match s {
                Stmt::Let { local, .. } => defined.push(*local),
                Stmt::Assign { local, value } => match (&self.kinds[*local], &k.exprs[*value].kind) {
                    (LocalKind::Materialized, ExprKind::Dot { acc: Some(c), .. }) if acc.is_none() && matches!(k.exprs[*c].kind, ExprKind::Local(l) if l == *local) => acc = Some(*local),
                    (LocalKind::Affine(_), ExprKind::PtrAdd(_, st)) => steps.push((*local, *st, false)),
                    (LocalKind::Affine(_), ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), _, st)) => steps.push((*local, *st, *op == BinOp::Sub)),
                    _ => return None,
                },
                _ => return None,
            }
        }
        let acc = acc?;
        // Steps that do not change in the loop (they are applied in bulk before and after a part).
        let varying: Vec<LocalId> = defined.iter().copied().chain([acc]).chain(steps.iter().map(|s| s.0)).collect();
        if steps.iter().any(|(_, st, _)| varying.iter().any(|l| uses_local(k, *st, *l))) {
            return None;
        }
        // An f32 accumulator that starts at zero and is only assigned by the loop's `dot`.
        if k.locals[acc].ty.dtype() != Some(DType::F32) {
            return None;
        }
        let init = k.body[..at].iter().find_map(|s| match s {
            Stmt::Let { local, value } if *local == acc => Some(*value),
            _ => None,
        })?;
        if !is_zero(k, init) || k.body[..at].iter().any(|s| assigns(s, acc)) {
            return None;
        }
        let read_after = steps.iter().map(|s| s.0).filter(|l| k.body[at + 1..].iter().any(|s| reads(k, s, *l))).collect();
        Some(SplitLoop { var: *var, acc, steps, read_after })
    }

    /// Floats of one part's partial accumulator in the workspace: every thread's register
    /// slots of `acc`.
    pub(crate) fn split_floats(&self, sl: &SplitLoop) -> usize {
        let numel: usize = self.shapes_of_local(sl.acc).iter().product();
        self.slots(numel, self.layouts[sl.acc]) * self.threads
    }
}
