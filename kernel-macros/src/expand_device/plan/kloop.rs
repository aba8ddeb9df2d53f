//! Loop schedules: which `for` loops are software-pipelined K loops (`PipePlan`, emitted by
//! `pipeline.rs`), and, for the others, which tensor-core `dot` operands are staged once before
//! the loop (resident) or copied `num_stages - 1` iterations ahead.

use super::*;

/// One operand of a pipelined K loop (see `DevicePlan::pipeline_plan`).
pub(crate) struct PipeOp {
    /// The `dot` operand and the `load` it comes from.
    pub(crate) x: ExprId,
    pub(crate) load: ExprId,
    /// The loop-invariant part of the pointer block: the initial value of an affine pointer
    /// local (whose scalar offset is added per iteration), or an invariant pointer block.
    pub(crate) base: ExprId,
    pub(crate) affine: Option<LocalId>,
    /// The scalar step of `affine` in this loop and whether it is subtracted.
    pub(crate) step: Option<(ExprId, bool)>,
    pub(crate) mask: Option<ExprId>,
    pub(crate) other: Option<ExprId>,
    pub(crate) numel: usize,
    /// Elements per row.
    pub(crate) inner: usize,
    /// Whether the operand may be staged transposed (`Staging::Cols`), chosen at run time per
    /// block: an `mma.sync` operand (not widened) that may be contiguous down its columns for
    /// some launches (a transposed view: not known to be contiguous along its rows), in a tiling
    /// with registers to spare. Its chunks then run down the columns and the product reads it
    /// with `ldmatrix.trans` (A) or plain `ldmatrix` (B).
    pub(crate) transposable: bool,
    /// Where only some lines of the block matter (A's rows, B's columns: see `live.rs`).
    pub(crate) live: Option<LiveLines>,
}

/// A software-pipelined K loop: a body of two single-use `load`s feeding one tensor-core
/// `acc = dot(a, b, acc)` and affine pointer steps (see `DevicePlan::pipeline_plan`).
pub(crate) struct PipePlan {
    pub(crate) acc: LocalId,
    pub(crate) layout: Layout,
    /// The A operand (its dtype picks the `mma` instruction) and the `[m, kk]` shape of A.
    pub(crate) a: ExprId,
    pub(crate) m: usize,
    pub(crate) kk: usize,
    pub(crate) ops: Vec<PipeOp>,
    /// Affine pointer locals stepped by the loop: (local, scalar step, subtracted).
    pub(crate) steps: Vec<(LocalId, ExprId, bool)>,
    /// Its shared memory: where its buffers start, how many, and its tensor maps.
    pub(crate) mem: super::smem::PipeMem,
}

impl PipePlan {
    /// One line for the plan's `Display`.
    pub(crate) fn describe(&self, k: &Kernel, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let acc = &k.locals[self.acc].name;
        write!(f, "software-pipelined K loop into %{acc}.{} ({}x{} A tiles, {})", self.acc, self.m, self.kk, self.layout)?;
        write!(f, "; {} buffers from shared byte {}", self.mem.stages, self.mem.floor)?;
        let maps: Vec<String> = self.mem.maps.iter().flatten().map(|(s, t)| format!("{s:?} {}x{} (swizzle {})", t.box_rows, t.box_inner, t.swizzle)).collect();
        if !maps.is_empty() {
            write!(f, "; tensor maps from slot {}: {}", self.mem.first_map, maps.join(", "))?;
        }
        for (op, name) in self.ops.iter().zip(["A", "B"]) {
            write!(f, "; {name} {} ({} elements, rows of {}{})", k.expr_text(op.load), op.numel, op.inner, if op.transposable { ", transposable" } else { "" })?;
            if let Some(l) = op.live {
                write!(f, ", {} live where {}", ["rows", "columns"][l.axis], k.expr_text(l.pred))?;
            }
        }
        for (l, step, sub) in &self.steps {
            write!(f, "; %{}.{l} {} {}", k.locals[*l].name, if *sub { "-=" } else { "+=" }, k.expr_text(*step))?;
        }
        writeln!(f)
    }
}

/// The most registers per thread that an `mma.sync` K loop whose operands may be staged
/// transposed (`PipeOp::transposable`) holds for its accumulators (f32) and its chunks' bases
/// (one each).
const MAX_TRANSPOSABLE_REGS: usize = 80;

impl DevicePlan<'_> {
    /// The schedule of a loop over `var` that is not software-pipelined: which tensor-core `dot`
    /// operands of its body's top-level statements are staged once before it (immutable
    /// materialized locals defined before the loop, such as flash attention's query tile) and
    /// which are copied ahead (loads whose pointers, masks and fill values depend
    /// only on `var` and values the loop does not change, in a body that stores nothing: a copy
    /// moved ahead of a store could read memory the store was to change; not in a split loop,
    /// whose parts start inside it), and how many iterations ahead: `num_stages - 1`, fewer when
    /// their buffers would not fit in shared memory above `floor`. The body's `dot`s before its
    /// last one are then `followed`.
    pub(crate) fn as_written(&mut self, var: LocalId, body: &[Stmt], floor: usize) -> Schedule {
        let k = self.k;
        let inside = loop_values(body);
        let dots = self.body_dots(body);
        let operands = self.tensor_core_operands(&dots);
        let staged = |(x, layout, rows, inner): (ExprId, Layout, usize, usize)| StagedOperand { x, layout, rows, inner };
        let mut resident: Vec<StagedOperand> = Vec::new();
        for &op in &operands {
            let x = op.0;
            let invariant = matches!(k.exprs[x].kind, ExprKind::Local(l) if !k.locals[l].mutable && matches!(self.kinds[l], LocalKind::Materialized) && !inside.contains_key(&l));
            if invariant && !resident.iter().any(|o| o.x == x) {
                resident.push(staged(op));
                // Resident in earlier loops too, its registers would live across them: then every
                // use of the local in a loop is staged from memory.
                let local = |e: ExprId| match k.exprs[e].kind {
                    ExprKind::Local(l) => Some(l),
                    _ => None,
                };
                let same_local = |e: ExprId| local(e) == local(x);
                let earlier: Vec<ExprId> = self.loops.values().flat_map(|s| match s {
                    Schedule::AsWritten { resident, .. } => resident.iter().map(|o| o.x).filter(|e| same_local(*e)).collect(),
                    Schedule::Pipelined(_) => vec![],
                }).collect();
                if let Some(load) = self.reloadable(x).filter(|_| !earlier.is_empty()) {
                    for e in earlier.into_iter().chain([x]) {
                        self.reloads.insert(e, load);
                    }
                }
            }
        }
        let mut ahead: Vec<StagedOperand> = Vec::new();
        if !body_writes(k, body) && self.split_of(var).is_none() {
            for &op in &operands {
                let x = op.0;
                let Some(load) = self.load_of(x) else { continue };
                let ExprKind::Load { ptr, mask, other } = k.exprs[load].kind else { continue };
                let steady = [Some(ptr), mask, other].into_iter().flatten().all(|e| self.loop_steady(e, var, &inside));
                if steady && !ahead.iter().chain(&resident).any(|o| o.x == x) {
                    ahead.push(staged(op));
                }
            }
        }
        if !ahead.is_empty() {
            if let Some((_, before_last)) = dots.split_last() {
                self.followed.extend(before_last.iter().copied());
            }
        }
        let maps = self.ahead_maps(var, &ahead);
        let mut depth = self.num_stages.saturating_sub(1).max(1);
        while depth > 1 && super::reserved(floor, &resident, &ahead, depth, maps.is_some()) > super::smem::SMEM_LIMIT {
            depth -= 1;
        }
        let tma = maps.map(|maps| {
            let first_map = self.tensor_maps.len();
            self.tensor_maps.extend(maps.iter().cloned());
            AheadMaps { first_map, maps }
        });
        let uniform = self.uniform_conditions(var, body, &inside);
        Schedule::AsWritten { resident, ahead, depth, tma, uniform }
    }

    /// Whether the boolean block `e` is a conjunction of comparisons of integer expressions that
    /// are linear in local `var` (sums and differences of loop-invariant terms and invariant
    /// multiples of `var`, broadcast): on each element such a comparison holds on an interval of
    /// `var`, so if it holds at the first and the last iteration it holds in between. (Wrap-around
    /// of the kernel's integer arithmetic between the two ends is not considered: the masks of
    /// K loops compare indices with sizes far from `i32::MAX`.)
    pub(crate) fn linear_in(&self, e: ExprId, var: LocalId) -> bool {
        let k = self.k;
        let lin = |x: ExprId| self.linear_int(x, var);
        match &k.exprs[e].kind {
            _ if !self.depends_on(e, var) => true,
            ExprKind::Binary(BinOp::And, a, b) => self.linear_in(*a, var) && self.linear_in(*b, var),
            ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) => lin(*a) && lin(*b),
            ExprKind::ExpandDims(x, _) | ExprKind::BroadcastTo(x) => self.linear_in(*x, var),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.linear_in(init, var),
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether the integer expression `e` is linear in local `var` (see [`Self::linear_in`]).
    pub(crate) fn linear_int(&self, e: ExprId, var: LocalId) -> bool {
        let k = self.k;
        let uses = |x: ExprId| self.depends_on(x, var);
        if !matches!(k.exprs[e].ty.dtype(), Some(DType::I32 | DType::I64)) {
            return false;
        }
        match &k.exprs[e].kind {
            _ if !uses(e) => true,
            ExprKind::Local(l) if *l == var => true,
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.linear_int(init, var),
                _ => false,
            },
            ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => self.linear_int(*a, var) && self.linear_int(*b, var),
            ExprKind::Binary(BinOp::Mul, a, b) => (self.linear_int(*a, var) && !uses(*b)) || (!uses(*a) && self.linear_int(*b, var)),
            ExprKind::ExpandDims(x, _) | ExprKind::BroadcastTo(x) => self.linear_int(*x, var),
            _ => false,
        }
    }

    /// Whether `e` reads local `var`, directly or through locals evaluated at their uses.
    pub(crate) fn depends_on(&self, e: ExprId, var: LocalId) -> bool {
        match &self.k.exprs[e].kind {
            ExprKind::Local(l) if *l == var => true,
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) => self.depends_on(v, var),
                _ => false,
            },
            kind => kind.operands().into_iter().any(|c| self.depends_on(c, var)),
        }
    }

    /// Whether the integer offsets block `e` moves as a whole when the scalar `var` changes:
    /// every element changes by the same amount, linear in `var` (sums and differences, `var`
    /// multiplied only by scalars that do not depend on it, broadcasts). Then where its elements
    /// lie relative to each other, checked once, holds in every iteration of a loop over `var`.
    pub(crate) fn shifts_uniformly(&self, e: ExprId, var: LocalId) -> bool {
        let k = self.k;
        let scalar = |x: ExprId| self.shapes[x].iter().product::<usize>() == 1 && !self.depends_on(x, var);
        if !matches!(k.exprs[e].ty.dtype(), Some(DType::I32 | DType::I64)) {
            return false;
        }
        match &k.exprs[e].kind {
            _ if !self.depends_on(e, var) => true,
            ExprKind::Local(l) if *l == var => self.shapes[e].is_empty(),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) => self.shifts_uniformly(v, var),
                _ => false,
            },
            ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => self.shifts_uniformly(*a, var) && self.shifts_uniformly(*b, var),
            ExprKind::Binary(BinOp::Mul, a, b) => (self.shifts_uniformly(*a, var) && scalar(*b)) || (scalar(*a) && self.shifts_uniformly(*b, var)),
            ExprKind::ExpandDims(x, _) | ExprKind::BroadcastTo(x) | ExprKind::Reshape(x) => self.shifts_uniformly(*x, var),
            _ => false,
        }
    }

    /// The staging of an operand `x` with `rows` rows copied into shared memory from outside a
    /// pipelined loop: transposed (`Staging::Cols`) when its load's memory is contiguous down
    /// its columns.
    pub(crate) fn staging_of(&self, x: ExprId, rows: usize) -> Staging {
        let down = self.staged_load(x).is_some_and(|l| matches!(self.k.exprs[l].kind, ExprKind::Load { ptr, .. } if self.contiguous_down(ptr)));
        if down && rows.is_multiple_of(8) { Staging::Cols } else { Staging::Rows }
    }

    /// sm_90a: the tensor map of each operand a loop over `var` copies ahead, when every one has
    /// one in the staging its `cp.async` copies use (see `DevicePlan::tma_maps`): 16-bit
    /// elements at `param + offsets` (`ptr_sum`) whose scalar pointer does not depend on `var`
    /// and whose offsets blocks each move as a whole with it (`shifts_uniformly`), so that one
    /// box per iteration, at coordinates linear in the iteration, holds the tile (checked at run
    /// time before the loop, `pipeline/ahead.rs`).
    fn ahead_maps(&self, var: LocalId, ahead: &[StagedOperand]) -> Option<Vec<TmaDesc>> {
        let k = self.k;
        if self.target != Target::Sm90a || ahead.is_empty() || self.tensor_maps.len() + ahead.len() > 32 {
            return None;
        }
        ahead
            .iter()
            .map(|o| {
                if !matches!(o.layout, Layout::Mma { wg: true, .. }) || elem_size(&k.exprs[o.x].ty.elem) != 2 {
                    return None;
                }
                let load = self.load_of(o.x)?;
                let ExprKind::Load { ptr, .. } = k.exprs[load].kind else { return None };
                let sum = self.ptr_sum(ptr)?;
                if self.depends_on(sum.base, var) || !sum.offs.iter().all(|&off| self.shifts_uniformly(off, var)) {
                    return None;
                }
                let staging = self.staging_of(o.x, o.rows);
                self.tma_maps(o.layout, ptr, load, o.rows, o.inner).into_iter().find(|(s, _)| *s == staging).map(|(_, t)| t)
            })
            .collect()
    }

    /// Recognizes a K loop that the software pipeliner can take: a body made of exactly two
    /// single-use `load`s feeding one tensor-core `acc = dot(a, b, acc)`, affine pointer
    /// steps by loop-invariant scalars and values evaluated at their use (which may read the
    /// loop variable: masks). Pointers the loop recomputes from its variable were turned into
    /// stepped ones before planning (`stepped.rs`). Everything else takes the general path.
    pub(crate) fn pipeline_plan(&self, var: LocalId, body: &[Stmt]) -> Option<PipePlan> {
        let k = self.k;
        if !matches!(k.locals[var].ty.dtype(), Some(DType::I32 | DType::U32)) {
            return None;
        }
        let mut loads: Vec<LocalId> = Vec::new();
        let mut steps: Vec<(LocalId, ExprId, bool)> = Vec::new();
        let mut dot: Option<(LocalId, ExprId, ExprId, ExprId)> = None;
        // Values evaluated at their use (offsets, pointers of the iteration): each use is
        // evaluated with the loop variable of the iteration it belongs to.
        let mut pures: Vec<ExprId> = Vec::new();
        // Where the body binds each local (the loads among them) and advances each pointer: the
        // copies read the pointers of the iteration before its steps.
        let (mut let_at, mut step_at): (HashMap<LocalId, usize>, Vec<(LocalId, usize)>) = (HashMap::new(), Vec::new());
        for (at, s) in body.iter().enumerate() {
            if let Stmt::Let { local, .. } = s {
                let_at.insert(*local, at);
            }
            if let Stmt::Assign { local, .. } = s {
                step_at.push((*local, at));
            }
            match s {
                Stmt::Let { local, .. } if matches!(self.kinds[*local], LocalKind::Inline(_)) => loads.push(*local),
                Stmt::Let { local, .. } if matches!(self.kinds[*local], LocalKind::Pure(_)) => {
                    if let LocalKind::Pure(v) = self.kinds[*local] {
                        pures.push(v);
                    }
                }
                Stmt::Assign { local, value } => match (&self.kinds[*local], &k.exprs[*value].kind) {
                    (LocalKind::Affine(_), ExprKind::PtrAdd(_, st)) => steps.push((*local, *st, false)),
                    (LocalKind::Affine(_), ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), _, st)) => steps.push((*local, *st, *op == BinOp::Sub)),
                    (LocalKind::Materialized, ExprKind::Dot { a, b, acc: Some(c) }) if dot.is_none() => {
                        if !matches!(k.exprs[*c].kind, ExprKind::Local(l) if l == *local) {
                            return None;
                        }
                        dot = Some((*local, *value, *a, *b));
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
        let (acc, dot, a, b) = dot?;
        let layout = self.mma_tiling(dot)?;
        // 8-bit integer products are summed in f32 per `dot` and added to i32 sums (`gen_dot_mma`),
        // which the pipelined loop's accumulation in place does not do.
        if k.exprs[dot].ty.dtype() == Some(DType::I32) {
            return None;
        }
        if self.layouts[acc] != layout || loads.len() != 2 {
            return None;
        }
        // Locals whose value changes inside the loop: no invariant may read them.
        let mut varying: Vec<LocalId> = vec![var, acc];
        varying.extend(loads.iter().copied());
        varying.extend(steps.iter().map(|s| s.0));
        // Through the values evaluated at their use: a pointer computed from a `let` of the
        // body that reads the loop variable varies too.
        let invariant = |e: ExprId, except: &[LocalId]| varying.iter().all(|l| except.contains(l) || !self.depends_on(e, *l));
        if !steps.iter().all(|(_, st, _)| invariant(*st, &[])) || !pures.iter().all(|v| invariant(*v, &[var])) {
            return None;
        }
        let mut ops = Vec::new();
        for (x, inner) in [(a, self.shapes[a][1]), (b, self.shapes[b][1])] {
            let ExprKind::Local(xl) = k.exprs[x].kind else { return None };
            let load = self.load_of(x).filter(|_| loads.contains(&xl))?;
            let ExprKind::Load { ptr, mask, other } = k.exprs[load].kind else { return None };
            let (base, affine) = match (&k.exprs[ptr].kind, self.kinds.get(match k.exprs[ptr].kind {
                ExprKind::Local(l) => l,
                _ => usize::MAX,
            })) {
                (ExprKind::Local(l), Some(LocalKind::Affine(init))) => (*init, Some(*l)),
                _ if invariant(ptr, &[]) => (ptr, None),
                _ => return None,
            };
            // Masks and `other` may read the loop variable (bound per iteration), nothing else
            // that changes in the loop.
            if !mask.iter().chain(other.iter()).all(|e| invariant(*e, &[var])) || self.shapes[ptr] != self.shapes[load] {
                return None;
            }
            // The chunk copies evaluate the base, mask and fill at any element: values held in
            // registers (materialized blocks) would have to go through shared memory first.
            if [Some(base), mask, other].into_iter().flatten().any(|e| self.reads_materialized(e)) {
                return None;
            }
            // A pointer advanced twice, or before the load reads it, is not what the copies of
            // iteration `i` (at its first value plus `i` steps) read.
            if let Some(l) = affine {
                let (n, before) = (step_at.iter().filter(|s| s.0 == l).count(), step_at.iter().any(|s| s.0 == l && s.1 < let_at[&xl]));
                if n > 1 || before {
                    return None;
                }
            }
            let step = affine.and_then(|l| steps.iter().find(|s| s.0 == l).map(|s| (s.1, s.2)));
            let transposable = self.transposable(x, base, layout, inner);
            let live = self.live_lines(acc, var, ops.len());
            ops.push(PipeOp { x, load, base, affine, step, mask, other, numel: self.numel(x), inner, transposable, live });
        }
        // The transposed staging costs registers (its copies, its fragment addresses): not in
        // tilings that already hold many per thread (accumulators and chunk bases), which reach
        // the register limit on sm_80 and would spill. And it costs a second K loop: only in
        // bodies of fewer than four warps, which run `mma.sync` on every architecture (a `wgmma`
        // takes a whole warpgroup); larger tilings take tensor maps on sm_90a, and a second loop
        // in each of their sm_80 bodies would double the device code of the crate's small
        // tilings (BENCHMARKS.md).
        let chunks: usize = ops.iter().map(|o| (o.numel / 8).div_ceil(self.threads)).sum();
        if let Layout::Mma { tm, tn, .. } = layout {
            if tm * tn * 4 + chunks > MAX_TRANSPOSABLE_REGS || self.threads >= 128 {
                ops.iter_mut().for_each(|o| o.transposable = false);
            }
        }
        Some(PipePlan { acc, layout, a, kk: self.shapes[a][1], m: self.shapes[a][0], ops, steps, mem: Default::default() })
    }

    /// Whether pipelined operand `x` (rows of `inner` elements at pointers `base`) may be staged
    /// transposed (see [`PipeOp::transposable`]): `mma.sync` reads either staging, `wgmma`'s
    /// transposed operands come through tensor maps (`smem.rs`).
    fn transposable(&self, x: ExprId, base: ExprId, layout: Layout, inner: usize) -> bool {
        use super::affine::Stride;
        let rows = self.numel(x) / inner;
        // Not when the rows are known to be contiguous, nor when the columns are known not to be
        // (rows wrapped with `%` have no stride: the run-time test decides).
        let down = self.stride_along(base, 1) != Some(Stride::Const(1)) && !matches!(self.stride_along(base, 0), Some(Stride::Const(s)) if s != 1);
        matches!(layout, Layout::Mma { wg: false, .. }) && !self.is_widened(x) && rows.is_multiple_of(8) && rows >= 16 && inner >= 16 && down
    }

    /// The `dot`s of the top-level statements of a loop body.
    pub(crate) fn body_dots(&self, body: &[Stmt]) -> Vec<ExprId> {
        let mut dots = Vec::new();
        for s in body {
            for r in DevGen::stmt_roots(s) {
                collect_dots(self.k, r, &mut dots);
            }
        }
        dots
    }

    /// The operands of the tensor-core `dot`s among `dots`: each operand expression with its
    /// `dot`'s layout and its `[rows, inner]` shape.
    pub(crate) fn tensor_core_operands(&self, dots: &[ExprId]) -> Vec<(ExprId, Layout, usize, usize)> {
        let mut out = Vec::new();
        for &dot in dots {
            let ExprKind::Dot { a, b, .. } = self.k.exprs[dot].kind else { continue };
            let Some(layout) = self.mma_tiling(dot) else { continue };
            let (m, kk, n) = (self.shapes[a][0], self.shapes[a][1], self.shapes[b][1]);
            out.extend([(a, layout, m, kk), (b, layout, kk, n)]);
        }
        out
    }

    /// Whether `e` has the same value in every iteration of a loop over `var` once `var` is
    /// fixed: it reads no local the loop body gives values (`inside`, [`loop_values`]: its
    /// assignments and the variables of the loops in it) other than `var`, and locals evaluated
    /// at their uses whose values are themselves steady.
    pub(crate) fn loop_steady(&self, e: ExprId, var: LocalId, inside: &HashMap<LocalId, Vec<ExprId>>) -> bool {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Local(l) if *l == var || !inside.contains_key(l) => true,
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) => self.loop_steady(v, var, inside),
                _ => false,
            },
            ExprKind::Load { .. } | ExprKind::Atomic { .. } | ExprKind::Random { .. } => false,
            kind => kind.operands().into_iter().all(|c| self.loop_steady(c, var, inside)),
        }
    }
}

/// Whether `stmts` may write memory (a store, an atomic, a debugging statement) or leave the
/// loop early (`return`).
pub(super) fn body_writes(k: &Kernel, stmts: &[Stmt]) -> bool {
    let atomic = |e: ExprId| -> bool {
        fn walk(k: &Kernel, e: ExprId) -> bool {
            matches!(k.exprs[e].kind, ExprKind::Atomic { .. }) || k.exprs[e].kind.operands().into_iter().any(|c| walk(k, c))
        }
        walk(k, e)
    };
    stmts.iter().any(|s| match s {
        Stmt::Store { .. } | Stmt::Assert { .. } | Stmt::Print { .. } | Stmt::Return => true,
        Stmt::For { body, .. } => body_writes(k, body),
        Stmt::While { pre, body, test } => atomic(*test) || body_writes(k, pre) || body_writes(k, body),
        Stmt::If { cond, then, els } => atomic(*cond) || body_writes(k, then) || body_writes(k, els),
        _ => DevGen::stmt_roots(s).into_iter().any(atomic),
    })
}

impl DevicePlan<'_> {
    /// The load a resident operand `x` may be staged from again, instead of from the registers
    /// it was loaded into: `x` is an immutable local defined by a `load` (materialized: it is
    /// read in a loop) of immutable values, and no statement writes memory before the last
    /// statement that reads it (in program order), so memory still holds what the `load` read.
    /// The plan reloads operands resident in several loops (Triton's two-stage attention):
    /// staged from memory, the value need not stay in registers across the earlier loops; when
    /// nothing else reads it, the register copy goes.
    fn reloadable(&self, x: ExprId) -> Option<ExprId> {
        let k = self.k;
        let ExprKind::Local(l) = k.exprs[x].kind else { return None };
        // An immutable local (resident operands are) has one value: its `let`'s.
        let load = *assigned_values(k).get(&l)?.first().filter(|v| matches!(k.exprs[**v].kind, ExprKind::Load { .. }))?;
        // Evaluated again where the loop starts: only immutable locals may feed it.
        fn immutable(k: &Kernel, e: ExprId) -> bool {
            match &k.exprs[e].kind {
                ExprKind::Local(x) => !k.locals[*x].mutable,
                other => other.operands().into_iter().all(|c| immutable(k, c)),
            }
        }
        if !immutable(k, load) {
            return None;
        }
        // Pre-order over the statements: the first write must come after the last read of `l`.
        fn walk(p: &DevicePlan<'_>, stmts: &[Stmt], l: LocalId, wrote: &mut bool) -> bool {
            for s in stmts {
                let reads = DevGen::stmt_roots(s).into_iter().any(|e| uses_local(p.k, e, l));
                if reads && *wrote {
                    return false;
                }
                if !s.bodies().into_iter().all(|b| walk(p, b, l, wrote)) {
                    return false;
                }
                if s.bodies().is_empty() && body_writes(p.k, std::slice::from_ref(s)) {
                    *wrote = true;
                }
            }
            true
        }
        walk(self, &k.body, l, &mut false).then_some(load)
    }

    /// Whether evaluating `e` reads a block local held in registers (through the locals that are
    /// evaluated at their uses).
    pub(crate) fn reads_materialized(&self, e: ExprId) -> bool {
        match &self.k.exprs[e].kind {
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(x) | LocalKind::Affine(x) | LocalKind::Inline(x) => self.reads_materialized(x),
                LocalKind::Materialized => !self.shapes_of_local(*l).is_empty(),
                LocalKind::Scalar => false,
            },
            kind => kind.operands().into_iter().any(|c| self.reads_materialized(c)),
        }
    }
}
