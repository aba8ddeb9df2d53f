//! Which rows and columns of a pipelined loop's accumulator the program can observe.
//!
//! Triton's matmul wraps the tile's rows around the tensor's edge (`offs_am = (pid_m * BLOCK_M +
//! arange(0, BLOCK_M)) % M`) so that every load stays in bounds, and masks the store instead
//! (`offs_cm[:, None] < M`): the rows that wrapped are computed and never written. When every
//! use of the accumulator keeps its rows apart (elementwise arithmetic, conversions, `dot`s that
//! read it as their A operand or their accumulator) and ends in stores whose masks are false
//! on a row wherever a factor of shape `[rows, 1]` is (the row factor), a row where that factor
//! is false is *dead*: nothing the program does depends on its values. The same holds for
//! columns with a factor of shape `[1, columns]` and `dot`s that read the value as B.
//!
//! The tensor-map copies use this (`pipeline/tma.rs`): an operand's element check tests only
//! the live rows of A and the live columns of B, so the edge tiles whose rows or columns wrap
//! take the tensor maps too (the copy engine fills what lies outside the tensor with zeros,
//! which only dead lines see) instead of the `cp.async` fallback.

use super::*;

/// The live lines of a pipelined operand: where `pred` (a `bool` block of shape `[rows, 1]` for
/// `axis` 0, `[1, columns]` for `axis` 1, evaluated at the line's index) is false, the line of
/// the operand's block along `axis` is dead. Its value can be computed before the loop: it
/// reads parameters, meta-parameters, program ids, `arange`s, pure locals, scalars bound once
/// before the loop (in its statement list or the lists around it) and the variables of the loops
/// around it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LiveLines {
    pub(crate) axis: usize,
    pub(crate) pred: ExprId,
}

/// How an expression reads the tracked values (those whose lines along the axis are the
/// accumulator's): not at all, line for line, or otherwise (`None` from `flow`).
type Flow = Option<bool>;

struct Tracker<'p, 'a> {
    p: &'p DevicePlan<'a>,
    axis: usize,
    /// The accumulator's length along `axis`.
    lines: usize,
    tracked: HashSet<LocalId>,
    /// The row (column) factors of the stores of tracked values.
    factors: Vec<ExprId>,
    /// Scalars fixed from the loop's start to the end of the statement list holding it (see
    /// `DevicePlan::scalars_before`).
    before: HashSet<LocalId>,
    /// Every value each local is given (`assigned_values`).
    values: HashMap<LocalId, Vec<ExprId>>,
}

impl DevicePlan<'_> {
    /// The live lines along `axis` (0: rows, 1: columns) of the accumulator `acc` of the
    /// loop over `var` (at the top level, or inside other loops: a persistent kernel's loop
    /// over tiles), if the accumulator's other lines are dead (see the module
    /// documentation).
    pub(crate) fn live_lines(&self, acc: LocalId, var: LocalId, axis: usize) -> Option<LiveLines> {
        let k = self.k;
        let shape = self.shapes_of_local(acc);
        if shape.len() != 2 {
            return None;
        }
        let values = assigned_values(k);
        let mut before = HashSet::new();
        if !self.scalars_before(&k.body, var, &values, &mut before) {
            return None;
        }
        let mut t = Tracker { p: self, axis, lines: shape[axis], tracked: HashSet::from([acc]), factors: Vec::new(), before, values };
        // Values derived from the accumulator may be bound before they are read in program
        // order only inside loops: walk until no new value is tracked.
        loop {
            let n = t.tracked.len();
            t.factors.clear();
            t.walk(&k.body)?;
            if t.tracked.len() == n {
                break;
            }
        }
        // One factor suffices (every store's mask is false off it); the first is kept, and the
        // stores of other factors must agree with it.
        let pred = *t.factors.first()?;
        let same = |f: &ExprId| k.expr_text(*f) == k.expr_text(pred);
        t.factors.iter().all(same).then_some(LiveLines { axis, pred })
    }
}

impl DevicePlan<'_> {
    /// Adds to `out` the scalars whose value is fixed where the loop over `var` (in `stmts`)
    /// starts and until the statement list holding it ends: those bound once (never assigned)
    /// before it in that list or in the lists around it, and the variables of the loops around
    /// it (one iteration of theirs holds the whole loop). Whether `stmts` holds the loop.
    fn scalars_before(&self, stmts: &[Stmt], var: LocalId, values: &HashMap<LocalId, Vec<ExprId>>, out: &mut HashSet<LocalId>) -> bool {
        for s in stmts {
            if matches!(s, Stmt::For { var: v, .. } if *v == var) {
                return true;
            }
            for b in s.bodies() {
                let mut inner = out.clone();
                if let Stmt::For { var: outer, .. } = s {
                    inner.insert(*outer);
                }
                if self.scalars_before(b, var, values, &mut inner) {
                    *out = inner;
                    return true;
                }
            }
            if let Stmt::Let { local, .. } = s {
                if matches!(self.kinds[*local], LocalKind::Scalar) && values.get(local).is_some_and(|v| v.len() == 1) {
                    out.insert(*local);
                }
            }
        }
        false
    }
}

impl Tracker<'_, '_> {
    fn walk(&mut self, stmts: &[Stmt]) -> Option<()> {
        for s in stmts {
            match s {
                Stmt::Let { local, value } | Stmt::Assign { local, value } => {
                    if self.flow(*value)? {
                        self.tracked.insert(*local);
                    }
                }
                Stmt::Store { ptr, value, mask, .. } => {
                    let mask_flows = match mask {
                        Some(m) => self.flow(*m)?,
                        None => false,
                    };
                    if self.flow(*ptr)? || mask_flows {
                        return None;
                    }
                    if self.flow(*value)? {
                        let f = self.factor((*mask)?)?;
                        self.factors.push(f);
                    }
                }
                _ => {
                    for r in DevGen::stmt_roots(s) {
                        if self.flow(r)? {
                            return None;
                        }
                    }
                    for b in s.bodies() {
                        self.walk(b)?;
                    }
                }
            }
        }
        Some(())
    }

    /// Whether `e` reads a tracked value line for line (its lines along the axis being the
    /// accumulator's), not at all (`false`), or otherwise (`None`).
    fn flow(&self, e: ExprId) -> Flow {
        let (k, shapes) = (self.p.k, &self.p.shapes);
        let kids = |xs: &[ExprId]| -> Option<bool> {
            let mut any = false;
            for &c in xs {
                if self.flow(c)? {
                    // A tracked operand broadcast or reshaped would mix lines.
                    if shapes[c] != shapes[e] {
                        return None;
                    }
                    any = true;
                }
            }
            Some(any)
        };
        match &k.exprs[e].kind {
            ExprKind::Local(l) => Some(self.tracked.contains(l)),
            ExprKind::Unary(_, x) | ExprKind::Cast(x) => kids(&[*x]),
            ExprKind::Binary(_, a, b) => kids(&[*a, *b]),
            ExprKind::Math(_, xs) => kids(xs),
            ExprKind::Where(c, a, b) => kids(&[*c, *a, *b]),
            ExprKind::Dot { a, b, acc } => {
                // Rows follow A's, columns B's; the other operand must not read tracked values.
                let (keep, other) = if self.axis == 0 { (*a, *b) } else { (*b, *a) };
                if self.flow(other)? {
                    return None;
                }
                let lines = |x: ExprId| shapes[x].get(self.axis) == Some(&self.lines);
                let mut any = false;
                for x in [Some(keep), *acc].into_iter().flatten() {
                    if self.flow(x)? {
                        if !lines(x) || !lines(e) {
                            return None;
                        }
                        any = true;
                    }
                }
                Some(any)
            }
            other => {
                for c in other.operands() {
                    if self.flow(c)? {
                        return None;
                    }
                }
                Some(false)
            }
        }
    }

    /// A factor of the store mask `mask` (an `&` of conditions, through immutable locals) of
    /// shape `[lines, 1]` (rows) or `[1, lines]` (columns) that can be evaluated before the loop.
    fn factor(&self, mask: ExprId) -> Option<ExprId> {
        let k = self.p.k;
        let want: Vec<usize> = if self.axis == 0 { vec![self.lines, 1] } else { vec![1, self.lines] };
        match &k.exprs[mask].kind {
            ExprKind::Local(l) if !k.locals[*l].mutable => match self.values.get(l).map(Vec::as_slice) {
                Some([value]) => self.factor(*value),
                _ => None,
            },
            ExprKind::Binary(BinOp::And, a, b) => self.factor(*a).or_else(|| self.factor(*b)),
            _ if self.p.shapes[mask] == want && self.evaluable(mask) => Some(mask),
            _ => None,
        }
    }

    /// Whether `e` can be evaluated before the loop, at any line.
    fn evaluable(&self, e: ExprId) -> bool {
        let k = self.p.k;
        match &k.exprs[e].kind {
            ExprKind::Local(l) => match self.p.kinds[*l] {
                LocalKind::Pure(init) => self.evaluable(init),
                LocalKind::Scalar => self.before.contains(l),
                _ => false,
            },
            ExprKind::Load { .. } | ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } | ExprKind::Atomic { .. } | ExprKind::Random { .. } => false,
            other => other.operands().into_iter().all(|c| self.evaluable(c)),
        }
    }
}
