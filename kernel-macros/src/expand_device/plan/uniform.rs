//! Conditions that hold on whole blocks: in a loop that runs as written, a `where_` whose
//! condition compares affine integer blocks with bounds (flash attention's `cols < n_ctx`)
//! usually holds on every element of the block, in every iteration but the last. Such a
//! condition is tested once per iteration at the block's corners (an affine function takes its
//! extremes on a box at its corners), and the body runs in a version where the `where_` is its
//! first value, with no comparison or select per element; the body as written runs in the other
//! iterations (`expand_device/uniform.rs`). Diagonal bands (the causal `offs_m >= cols`) are not
//! tested: the iterations that test them are the ones they cut.

use super::*;

impl DevicePlan<'_> {
    /// The `where_` conditions of the body of the loop over `var` that the loop tests once per
    /// iteration (see the module): in a body with a tensor-core `dot` (where the per-element
    /// work competes with the tensor cores) and no loop inside (one more version of the body
    /// would copy that loop too), each condition of a `where_` that a statement's value reads
    /// (through the locals evaluated at their uses) which is a block, changes with `var`, reads
    /// nothing the body computes nor memory (`inside`: so it can be tested at the top of the
    /// iteration) and is [`Self::block_testable`].
    pub(crate) fn uniform_conditions(&self, var: LocalId, body: &[Stmt], inside: &HashMap<LocalId, Vec<ExprId>>) -> Vec<ExprId> {
        let nested = super::split::count_loops(body) > 0;
        let has_dot = self.body_dots(body).iter().any(|&d| self.mma_tiling(d).is_some());
        if nested || !has_dot {
            return Vec::new();
        }
        let mut wheres = Vec::new();
        let mut seen = HashSet::new();
        for s in body {
            for r in DevGen::stmt_roots(s) {
                self.collect_wheres(r, &mut wheres, &mut seen);
            }
        }
        wheres.retain(|&c| !self.shapes[c].is_empty() && self.depends_on(c, var) && self.loop_steady(c, var, inside) && self.block_testable(c));
        wheres
    }

    /// The conditions of the `where_`s that `e` reads, through locals evaluated at their uses.
    fn collect_wheres(&self, e: ExprId, out: &mut Vec<ExprId>, seen: &mut HashSet<ExprId>) {
        if !seen.insert(e) {
            return;
        }
        match &self.k.exprs[e].kind {
            ExprKind::Local(l) => {
                if let LocalKind::Pure(v) | LocalKind::Inline(v) = self.kinds[*l] {
                    self.collect_wheres(v, out, seen);
                }
            }
            kind => {
                if let ExprKind::Where(c, _, _) = kind {
                    out.push(*c);
                }
                for c in kind.operands() {
                    self.collect_wheres(c, out, seen);
                }
            }
        }
    }

    /// Whether boolean `c` can be tested to hold on its whole block ([`DevGen::all_true`] tests
    /// it): a uniform scalar; a comparison (`<`, `<=`, `>`, `>=`) of integer blocks that are
    /// affine in their indices, tested at the block's corners (wrap-around of the kernel's
    /// integer arithmetic between the corners is not considered, as for loop masks: indices
    /// compared with sizes far from `i32::MAX`), unless its sides vary along different axes (a
    /// diagonal band, such as the causal `rows >= cols`: the iterations that test it are those
    /// it cuts); a broadcast of one; `&` of two; `|` with one such side, tested as "that side
    /// holds on the whole block" (`!CAUSAL | (rows >= cols)` holds where `CAUSAL` is false).
    pub(crate) fn block_testable(&self, c: ExprId) -> bool {
        let k = self.k;
        if self.shapes[c].is_empty() {
            return true;
        }
        if k.exprs[c].ty.dtype() != Some(DType::Bool) {
            return false;
        }
        let int = |x: ExprId| matches!(k.exprs[x].ty.dtype(), Some(DType::I32 | DType::I64));
        match &k.exprs[c].kind {
            ExprKind::Binary(BinOp::And, a, b) => self.block_testable(*a) && self.block_testable(*b),
            ExprKind::Binary(BinOp::Or, a, b) => self.block_testable(*a) || self.block_testable(*b),
            ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) => int(*a) && int(*b) && self.bounded_comparison(c, *a, *b),
            ExprKind::ExpandDims(x, _) | ExprKind::BroadcastTo(x) => self.block_testable(*x),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) => self.block_testable(v),
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether comparison `c` of `a` and `b` is affine on both sides, at most one of which varies
    /// or both along the same axes of `c`'s block.
    fn bounded_comparison(&self, c: ExprId, a: ExprId, b: ExprId) -> bool {
        let axes = |x: ExprId| -> Option<Vec<bool>> {
            let strides = self.strides(x)?;
            // Right-aligned on `c`'s axes, as broadcasting aligns them.
            let pad = self.shapes[c].len().checked_sub(strides.len())?;
            Some((0..self.shapes[c].len()).map(|i| i >= pad && strides[i - pad] != super::affine::Stride::Const(0)).collect())
        };
        match (axes(a), axes(b)) {
            (Some(sa), Some(sb)) => !sa.contains(&true) || !sb.contains(&true) || sa == sb,
            _ => false,
        }
    }
}
