//! Divisibility known when the kernel is compiled: for an integer or pointer expression, a
//! power of two its value is a multiple of (a pointer: its address in bytes), from literals,
//! meta-parameters, `arange` starts, arithmetic, loop variables and `multiple_of` hints. The
//! code generator folds run-time alignment tests that it settles (`whole.rs`), and leaves out
//! the checks of hints it proves ([`drop_proven_hints`]).
//!
//! Every rule holds under the wrap-around of 32- and 64-bit arithmetic: a multiple of `2^j`,
//! `j <= 32`, stays one modulo `2^32` and `2^64`, so values are capped at `2^32`.

use crate::ir::*;
use std::collections::HashMap;

/// The largest divisor the analysis states (a zero is a multiple of it).
const CAP: u64 = 1 << 32;

/// The largest power of two dividing `v` (`CAP` for 0), at most `CAP`.
fn pow2_of(v: i64) -> u64 {
    if v == 0 {
        CAP
    } else {
        (1u64 << v.trailing_zeros().min(32)).min(CAP)
    }
}

/// What is known of each local of one kernel variant for one instance's meta-parameter values:
/// a power of two that every value it takes is a multiple of (for a block, every value its
/// element 0 takes; see [`Multiples::at0`]).
pub(crate) struct Multiples<'a> {
    k: &'a Kernel,
    vals: &'a HashMap<String, i64>,
    locals: Vec<u64>,
    /// `multiple_of` hints by local: the divisor expression.
    hints: HashMap<LocalId, ExprId>,
}

impl<'a> Multiples<'a> {
    /// The analysis of `k` with meta-parameter values `vals`: the greatest assignment of powers
    /// of two to locals that every `let`, assignment and loop keeps (each local starts at `CAP`
    /// and is lowered to what its values allow until nothing changes; a hinted local is also a
    /// multiple of its hint, which its check guarantees).
    pub(crate) fn of(k: &'a Kernel, vals: &'a HashMap<String, i64>) -> Self {
        let mut m = Multiples { k, vals, locals: vec![CAP; k.locals.len()], hints: HashMap::new() };
        m.collect_hints(&k.body);
        loop {
            let before = m.locals.clone();
            m.lower_by(&k.body);
            if m.locals == before {
                return m;
            }
        }
    }

    /// What is known of local `l` (see [`Multiples::of`]).
    #[cfg(test)]
    pub(crate) fn local(&self, l: LocalId) -> u64 {
        self.locals[l]
    }

    fn collect_hints(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            if let Stmt::Assert { hint: Some((l, n)), .. } = s {
                self.hints.insert(*l, *n);
            }
            s.bodies().into_iter().for_each(|b| self.collect_hints(b));
        }
    }

    /// One pass over `stmts`: each local lowered to what the values given to it allow.
    fn lower_by(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            match s {
                Stmt::Let { local, value } | Stmt::Assign { local, value } => {
                    let mut v = self.at0(*value);
                    if let Some(n) = self.hints.get(local) {
                        v = v.max(self.constant(*n).map_or(1, pow2_of));
                    }
                    self.locals[*local] = self.locals[*local].min(v);
                }
                Stmt::For { var, start, step, .. } => {
                    let v = self.at0(*start).min(self.at0(*step));
                    self.locals[*var] = self.locals[*var].min(v);
                }
                _ => {}
            }
            s.bodies().into_iter().for_each(|b| self.lower_by(b));
        }
    }

    /// The value of a compile-time integer expression (literals, meta-parameters, arithmetic).
    pub(crate) fn constant(&self, e: ExprId) -> Option<i64> {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Lit(Lit::Int(v)) => Some(*v),
            ExprKind::Meta(i) => self.vals.get(&k.metas[*i].name).copied(),
            ExprKind::Cast(x) => self.constant(*x),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.constant(*a)?, self.constant(*b)?);
                match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    BinOp::Div => a.checked_div(b),
                    BinOp::Rem => a.checked_rem(b),
                    BinOp::Min => Some(a.min(b)),
                    BinOp::Max => Some(a.max(b)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A power of two that the value of `e` is a multiple of (for a block, its element 0, the
    /// one at index 0 on every axis; for a pointer, its address in bytes).
    pub(crate) fn at0(&self, e: ExprId) -> u64 {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Lit(Lit::Int(v)) => pow2_of(*v),
            ExprKind::Meta(i) => self.vals.get(&k.metas[*i].name).map_or(1, |v| pow2_of(*v)),
            ExprKind::Local(l) => self.locals[*l],
            ExprKind::Arange { start, .. } => start.eval(&|x| self.vals.get(x).copied()).map_or(1, pow2_of),
            ExprKind::Full(x) | ExprKind::BroadcastTo(x) | ExprKind::ExpandDims(x, _) | ExprKind::Reshape(x) | ExprKind::Trans(x) => self.at0(*x),
            ExprKind::Unary(UnOp::Neg, x) => self.at0(*x),
            ExprKind::Cast(x) if self.is_int_or_ptr(*x) => self.at0(*x),
            ExprKind::Where(_, a, b) => self.at0(*a).min(self.at0(*b)),
            ExprKind::PtrAdd(p, o) => {
                let size = match k.exprs[e].ty.elem {
                    Elem::Ptr(d) => super::elem_size(&Elem::Val(d)) as u64,
                    _ => 1,
                };
                self.at0(*p).min(self.at0(*o).saturating_mul(size).min(CAP))
            }
            ExprKind::Binary(op, a, b) if self.is_int_or_ptr(*a) => {
                let (x, y) = (self.at0(*a), self.at0(*b));
                match op {
                    BinOp::Add | BinOp::Sub | BinOp::Min | BinOp::Max => x.min(y),
                    BinOp::Mul => x.saturating_mul(y).min(CAP),
                    BinOp::And => x.max(y),
                    BinOp::Shl => match self.constant(*b) {
                        Some(s @ 0..=32) => x.saturating_mul(1 << s).min(CAP),
                        _ => 1,
                    },
                    _ => 1,
                }
            }
            _ => 1,
        }
    }

    fn is_int_or_ptr(&self, e: ExprId) -> bool {
        let ty = &self.k.exprs[e].ty;
        matches!(ty.elem, Elem::Ptr(_)) || ty.dtype().is_some_and(|d| d.is_int())
    }

    /// Whether the check of a hint that `value` is a multiple of `n` always passes: `n` is a
    /// power of two and `value` is known to be a multiple of it.
    fn proves(&self, n: ExprId, value: ExprId) -> bool {
        self.constant(n).is_some_and(|n| n > 0 && (n as u64).is_power_of_two() && self.at0(value) % n as u64 == 0)
    }
}

/// Removes from `k` the checks of the `multiple_of` hints that [`Multiples`] proves for
/// meta-parameter values `vals`: the device code need not test what always holds.
pub(crate) fn drop_proven_hints(k: &mut Kernel, vals: &HashMap<String, i64>) {
    let mut proven = Vec::new();
    proven_in(&Multiples::of(k, vals), &k.body, &mut proven);
    if !proven.is_empty() {
        retain_stmts(&mut k.body, &|s| !matches!(s, Stmt::Assert { hint: Some((l, _)), .. } if proven.contains(l)));
    }
}

/// The hinted locals of `stmts` whose checks `m` proves: a hint's check follows the `let` that
/// binds its local.
fn proven_in(m: &Multiples<'_>, stmts: &[Stmt], out: &mut Vec<LocalId>) {
    for pair in stmts.windows(2) {
        if let [Stmt::Let { local, value }, Stmt::Assert { hint: Some((l, n)), .. }] = pair {
            if local == l && m.proves(*n, *value) {
                out.push(*l);
            }
        }
    }
    for s in stmts {
        s.bodies().into_iter().for_each(|b| proven_in(m, b, out));
    }
}
