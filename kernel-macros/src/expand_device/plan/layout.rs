//! Register layouts: which thread holds which element of each materialized value (cyclic, the
//! `mma`/`wgmma` accumulator layouts, their rows), the tensor-core tiling of each `dot`, and the
//! cyclic layout's chunk width and slots.

use super::*;
use crate::expand_device::bits::BitLayout;

/// Which thread holds which element of a materialized block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Layout {
    /// Thread `t` owns flat indices `t, t + T, ...`.
    Cyclic,
    /// The accumulator layout of `mma.sync.m16n8k16` over a `wm x wn` grid of warps, each
    /// warp owning `tm x tn` tiles of 16x8 of an `[M, n]` block.
    ///
    /// With `wg` (Hopper's `wgmma`), `wm x wn` is a grid of warpgroups (4 warps), each owning
    /// `tm` tiles of 64 rows by `8 tn` columns; warp `w % 4` of a warpgroup holds rows
    /// `16 (w % 4) ..` of each 64-row tile in the same per-16x8 register order.
    Mma { wm: usize, wn: usize, tm: usize, tn: usize, n: usize, wg: bool },
    /// The rows of a block in the `Mma` layout with these fields: element `r` of an `[M]` block
    /// (the result of reducing the `[M, n]` block along its columns, and elementwise values of
    /// such results) is held by every thread that holds row `r` of the parent, in register
    /// slot `2 t + h` for the parent's row tile `t` and half `h` (see `reduce.rs`). The lanes
    /// of a quad, and the warps of a row of the warp grid, hold the same values.
    MmaRows { wm: usize, wn: usize, tm: usize, tn: usize, n: usize, wg: bool },
}

impl Layout {
    /// The `[M]` row layout of an `[M, n]` block in the `mma` layout `self`.
    pub(crate) fn rows(self) -> Option<Layout> {
        match self {
            Layout::Mma { wm, wn, tm, tn, n, wg } => Some(Layout::MmaRows { wm, wn, tm, tn, n, wg }),
            _ => None,
        }
    }

    /// The `[M, n]` layout whose rows `self` holds.
    pub(crate) fn parent(self) -> Option<Layout> {
        match self {
            Layout::MmaRows { wm, wn, tm, tn, n, wg } => Some(Layout::Mma { wm, wn, tm, tn, n, wg }),
            _ => None,
        }
    }
}

impl Layout {
    /// Whether the layout covers a block of `shape` over `threads` threads exactly: an `mma`
    /// layout's warp (or warpgroup) grid uses every warp and its tiles cover the `[M, n]` block;
    /// the rows of one cover `[M]`.
    pub(crate) fn check_tiles(&self, shape: &[usize], threads: usize) -> Result<(), String> {
        let (Layout::Mma { wm, wn, tm, tn, n, wg } | Layout::MmaRows { wm, wn, tm, tn, n, wg }) = *self else { return Ok(()) };
        let (rows, warps) = if wg { (64, 4) } else { (16, 1) };
        let m = wm * tm * rows;
        if wm * wn * warps * 32 != threads || wn * tn * 8 != n {
            return Err(format!("{self} does not use {threads} threads on {n} columns"));
        }
        let want: &[usize] = if matches!(self, Layout::Mma { .. }) { &[m, n] } else { &[m] };
        if shape != want {
            return Err(format!("{self} covers {want:?}, not {shape:?}"));
        }
        Ok(())
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Layout::Cyclic => write!(f, "cyclic"),
            Layout::Mma { wm, wn, tm, tn, n, wg: false } => write!(f, "mma.sync m16n8k16 layout: {wm}x{wn} warps, tiles of 16x8: {tm}x{tn} per warp, {n} columns"),
            Layout::Mma { wm, wn, tm, tn, n, wg: true } => write!(f, "wgmma layout: {wm}x{wn} warpgroups, tiles of 64x{}: {tm} per warpgroup, {n} columns", 8 * tn),
            Layout::MmaRows { .. } => write!(f, "the rows of the {}", self.parent().expect("rows have a parent")),
        }
    }
}

impl DevicePlan<'_> {
    /// The register layout of each materialized local: the `mma` layout for accumulators of a
    /// tensor-core `dot` and for elementwise values computed from them, else cyclic.
    pub(crate) fn assign_layouts(&self) -> Vec<Layout> {
        let k = self.k;
        let values = assigned_values(k);
        let mut layouts = vec![Layout::Cyclic; k.locals.len()];
        for _ in 0..3 {
            for (l, vs) in &values {
                if !matches!(self.kinds[*l], LocalKind::Materialized) {
                    continue;
                }
                for v in vs {
                    let found = match &k.exprs[*v].kind {
                        ExprKind::Dot { .. } => self.mma_tiling(*v),
                        _ => self.elementwise_mma_source(*v, &self.shapes[*v], &layouts),
                    };
                    if let Some(lay) = found {
                        layouts[*l] = lay;
                    }
                }
            }
        }
        layouts
    }

    /// The `mma` layout of a same-shape materialized local that `e` reads elementwise.
    pub(crate) fn elementwise_mma_source(&self, e: ExprId, shape: &[usize], layouts: &[Layout]) -> Option<Layout> {
        let ex = &self.k.exprs[e];
        if self.shapes[e] != shape {
            return None;
        }
        match &ex.kind {
            ExprKind::Local(l) => match (&self.kinds[*l], layouts[*l]) {
                // A local evaluated at its uses is where its value is.
                (LocalKind::Pure(v) | LocalKind::Inline(v), _) => self.elementwise_mma_source(*v, shape, layouts),
                (_, Layout::Cyclic) => None,
                (_, m) => Some(m),
            },
            ExprKind::Reduce { x, axis, .. } => {
                let sx = &self.shapes[*x];
                self.elementwise_mma_source(*x, sx, layouts).and_then(|l| self.reduce_result_layout(l, sx, *axis))
            }
            ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(_) | ExprKind::Math(..) | ExprKind::Where(..) => {
                ex.kind.operands().into_iter().find_map(|c| self.elementwise_mma_source(c, shape, layouts))
            }
            _ => None,
        }
    }

    /// A tensor-core tiling for a `dot`: f16/bf16 operands, or 8-bit operands staged as f16
    /// (`operands.rs`: exact), M % 16, N % 8, K % 16, and a warp grid that divides the output
    /// with at most 128 accumulator registers per thread (64 for 8-bit integers, which also
    /// keep their i32 sums). 8-bit integer products are exact in the f32 sums of one `dot`
    /// while `K * max|a| * max|b| <= 2^24` (K up to 1024 for i8 x i8, 512 for i8 x u8, 256 for
    /// u8 x u8); each `dot` then adds its f32 result, converted, to the i32 sums.
    pub(crate) fn mma_tiling(&self, dot: ExprId) -> Option<Layout> {
        let ExprKind::Dot { a, b, .. } = &self.k.exprs[dot].kind else { return None };
        let (sa, sb) = (&self.shapes[*a], &self.shapes[*b]);
        let (m, kk, n) = (sa[0], sa[1], sb[1]);
        let (da, db) = (self.k.exprs[*a].ty.dtype(), self.k.exprs[*b].ty.dtype());
        let fp8 = da.is_some_and(DType::is_fp8) && db.is_some_and(DType::is_fp8);
        let magnitude = |d: Option<DType>| match d {
            Some(DType::I8) => Some(128usize),
            Some(DType::U8) => Some(255),
            _ => None,
        };
        let int8 = magnitude(da).zip(magnitude(db)).is_some_and(|(x, y)| kk * x * y <= 1 << 24);
        if !matches!(da, Some(DType::F16 | DType::BF16)) && !fp8 && !int8 {
            return None;
        }
        if m % 16 != 0 || n % 8 != 0 || kk % 16 != 0 {
            return None;
        }
        let budget = if int8 { self.accumulator_budget() / 2 } else { self.accumulator_budget() };
        if let Some(l) = self.wgmma_tiling(m, kk, n, budget) {
            return Some(l);
        }
        let warps = self.threads / 32;
        let mut best: Option<(usize, Layout)> = None;
        for wm in 1..=warps {
            if !warps.is_multiple_of(wm) {
                continue;
            }
            let wn = warps / wm;
            if m % (16 * wm) != 0 || n % (8 * wn) != 0 {
                continue;
            }
            let (tm, tn) = (m / (16 * wm), n / (8 * wn));
            if tm * tn * 4 > budget {
                continue;
            }
            // Square warp tiles read the fewest shared-memory bytes per multiply-add; in a
            // kernel that reduces `dot` results along their rows, whole rows per warp (the row
            // statistics stay in the warp's registers and line up between the kernel's `dot`s).
            let score = if self.rows_per_warp && wn == 1 { 0 } else { (tm * 16).abs_diff(tn * 8) + 1 };
            if best.as_ref().is_none_or(|(s, _)| score < *s) {
                best = Some((score, Layout::Mma { wm, wn, tm, tn, n, wg: false }));
            }
        }
        best.map(|(_, l)| l)
    }

    /// A `wgmma` tiling (sm_90a) of an `[m, kk] x [kk, n]` product: whole warpgroups, each owning
    /// `tm` tiles of `m64 x n'` with `n'` one of 16, 32, 64, 128, 192, 256; A's rows are 32, 64 or
    /// 128 bytes (one swizzle pattern wide) and B is stored in column blocks of `min(n, 64)`.
    /// Prefers the widest `n'` (fewest shared-memory bytes read per multiply-add), then the
    /// fewest tiles per warpgroup.
    pub(crate) fn wgmma_tiling(&self, m: usize, kk: usize, n: usize, budget: usize) -> Option<Layout> {
        let warps = self.threads / 32;
        // K-major A rows of up to 64 elements (one 128-byte swizzle pattern); deeper tiles are
        // staged in 64-column blocks like B.
        if !self.target.has_wgmma() || !warps.is_multiple_of(4) || !([16, 32].contains(&kk) || (kk.is_multiple_of(64) && kk <= 256)) {
            return None;
        }
        let groups = warps / 4;
        let block = n.min(64);
        let mut best: Option<((usize, usize), Layout)> = None;
        for gm in (1..=groups).filter(|g| groups.is_multiple_of(*g)) {
            let gn = groups / gm;
            if !m.is_multiple_of(64 * gm) || !n.is_multiple_of(gn) {
                continue;
            }
            let (tm, np) = (m / (64 * gm), n / gn);
            if ![16, 32, 64, 128, 192, 256].contains(&np) || !np.is_multiple_of(block) || tm * np / 2 > budget {
                continue;
            }
            let score = (usize::MAX - np, tm);
            if best.as_ref().is_none_or(|(s, _)| score < *s) {
                best = Some((score, Layout::Mma { wm: gm, wn: gn, tm, tn: np / 8, n, wg: true }));
            }
        }
        best.map(|(_, l)| l)
    }

    /// Registers per thread an `mma` accumulator may take (of 255): 128, or half when the
    /// transcendental functions and float divisions inside the kernel's loops weigh more than
    /// 2 (each 1, a function with long per-element code 4: `MathFn::is_long`), since their
    /// temporaries then need the rest. Outside loops (an epilogue) an `mma`-layout phase with
    /// transcendental functions over more than 64 slots runs as a loop over a few slots at a
    /// time on copies of its arrays (`rolled.rs`), whose temporaries do not add up.
    pub(crate) fn accumulator_budget(&self) -> usize {
        if self.loop_weight(&self.k.body, false) > 2 {
            64
        } else {
            128
        }
    }

    /// The weight (as [`Self::accumulator_budget`] counts it) of the expressions of `stmts`
    /// that run in a loop (`in_loop`: `stmts` are inside one).
    fn loop_weight(&self, stmts: &[Stmt], in_loop: bool) -> usize {
        let weigh = |e: ExprId| if in_loop { self.weight(e) } else { 0 };
        stmts
            .iter()
            .map(|s| match s {
                Stmt::For { body, .. } => self.loop_weight(body, true),
                Stmt::While { pre, body, .. } => self.loop_weight(pre, true) + self.loop_weight(body, true),
                Stmt::If { then, els, .. } => self.loop_weight(then, in_loop) + self.loop_weight(els, in_loop),
                Stmt::Let { value, .. } | Stmt::Assign { value, .. } | Stmt::Store { value, .. } => weigh(*value),
                _ => 0,
            })
            .sum()
    }

    /// The transcendental functions and float divisions of the expression tree `e`.
    fn weight(&self, e: ExprId) -> usize {
        let ex = &self.k.exprs[e];
        let own = match &ex.kind {
            ExprKind::Math(f, _) if f.is_long() => 4,
            ExprKind::Math(f, _) if f.is_transcendental() => 1,
            ExprKind::Binary(BinOp::Div, ..) if ex.ty.dtype().is_some_and(DType::is_float) => 1,
            _ => 0,
        };
        own + ex.kind.operands().into_iter().map(|c| self.weight(c)).sum::<usize>()
    }

    pub(crate) fn numel(&self, e: ExprId) -> usize {
        self.shapes[e].iter().product()
    }

    /// Register slots per thread of a cyclic block of `numel` elements.
    pub(crate) fn per_thread(&self, numel: usize) -> usize {
        let v = self.vec_width(numel);
        numel.div_ceil(self.threads * v).max(1) * v
    }

    /// Elements per chunk of the cyclic layout of a block of `numel` elements: thread `t` owns
    /// the chunks `t, t + T, ...` of `V` consecutive elements, so that loads and stores move
    /// `V` elements at a time. The longest of 8 (up to `max_vec`), 4 and 2 that splits the block
    /// into whole chunks for every thread, else 1.
    pub(crate) fn vec_width(&self, numel: usize) -> usize {
        [8, 4, 2].into_iter().filter(|v| *v <= self.max_vec).find(|v| numel >= self.threads * v && numel.is_multiple_of(self.threads * v)).unwrap_or(1)
    }

    pub(crate) fn slots(&self, numel: usize, layout: Layout) -> usize {
        match layout {
            Layout::Cyclic => self.per_thread(numel),
            Layout::Mma { tm, tn, .. } => tm * tn * 4,
            Layout::MmaRows { tm, .. } => tm * 2,
        }
    }

    /// The [`BitLayout`] of a block of `numel` elements in `layout`, if it has one.
    pub(crate) fn bit_layout(&self, numel: usize, layout: Layout) -> Option<BitLayout> {
        match layout {
            Layout::Cyclic => BitLayout::cyclic(numel, self.threads, self.vec_width(numel), self.per_thread(numel)),
            Layout::Mma { .. } => BitLayout::mma(layout),
            Layout::MmaRows { n, .. } => {
                let parent = BitLayout::mma(layout.parent()?)?;
                Some(parent.sliced(&parent.reduce(&[numel, n], 1)?))
            }
        }
    }

    /// The layout a reduction along `axis` of a block of shape `shape` in `layout` gives, when
    /// its result stays in registers: the rows of a 2-D `mma` block reduced along its columns.
    pub(crate) fn reduce_result_layout(&self, layout: Layout, shape: &[usize], axis: usize) -> Option<Layout> {
        if shape.len() != 2 || axis != 1 {
            return None;
        }
        let rows = layout.rows()?;
        self.bit_layout(shape[0], rows).map(|_| rows)
    }
}
