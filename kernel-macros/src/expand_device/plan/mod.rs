//! The device plan of one body of an entry: what the device code generator decides about it
//! before it emits any code, as data. [`plan`] computes it from the block IR, the instance and
//! the [`Target`], validates it once and the emitter (`DevGen`, which reads it through `Deref`)
//! translates it:
//!
//! - how each local is produced (`values.rs`: [`LocalKind`]) and which pointer parameter each
//!   pointer local comes from;
//! - each materialized local's register layout and each `dot`'s tensor-core tiling
//!   (`layout.rs`: [`Layout`]), the cyclic layout's chunk width, whether slot loops unroll;
//! - each `for` loop's schedule (`kloop.rs`: a software-pipelined K loop with its operands and
//!   pointer steps, or the loop as written with the `dot` operands staged once before it or
//!   copied iterations ahead) and the loop a launch may split (`split.rs`);
//! - which rows and columns of a pipelined loop's accumulator the program observes
//!   (`live.rs`: the others are computed and never stored, e.g. rows wrapped with `% M`);
//! - each pipelined loop's shared memory (`smem.rs`: where its buffers start, above the tiles
//!   the loops around it keep; how many fit; the tensor maps its operands can be copied with on
//!   sm_90a, hence the body's tensor maps);
//! - the entry's hidden parameters (`abi.rs`), the kernel ABI the runtime builds its argument
//!   list from.
//!
//! - the barriers around each store (`barriers.rs`);
//! - whether cold paths run out of line, and which loop's cold fallback runs the rest of the
//!   body itself.
//!
//! Still decided while emitting: the other shared-memory offsets and the barriers inside the
//! code of one statement (between the phases it stages values for). The emitter has no interior
//! mutability; its shared memory is a bump allocator (`smem_alloc.rs`, changed through
//! `&mut self`): the tiles the loop schedules keep for a loop's body (resident and copied-ahead
//! operands) below its floor, statement temporaries, staged values and reductions above it. It
//! checks that a pipelined loop's buffers land where the plan put them.
//!
//! `KERNEL_DUMP=dir` writes each entry's plans (`<entry>.<target>.plan`), and the codegen
//! snapshots (`kernel-macros/tests/codegen`) keep one per instance.

use super::*;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

pub(crate) mod abi;
pub(crate) mod affine;
pub(crate) mod barriers;
mod kloop;
mod layout;
mod live;
pub(crate) mod smem;
pub(crate) mod split;
mod uniform;
mod values;

pub(crate) use kloop::{PipeOp, PipePlan};
pub(crate) use layout::Layout;
pub(crate) use live::LiveLines;
pub(crate) use split::SplitLoop;
pub(crate) use values::LocalKind;

/// The most f32 accumulator registers per thread of an `mma.sync` body on a target without
/// `wgmma` whose cold paths go out of line and whose checked stores loop over their column
/// pairs: with 128 (128×256 tiles on 8 warps) ptxas spills, out of line or not.
pub(crate) const MAX_OUTLINED_ACC_REGS: usize = 96;

/// The most elements of a block per thread for which cyclic slot loops are unrolled (see
/// `DevGen::slot_loop`): 64 values of 32 bits leave room for a second such block and the
/// kernel's other values in 255 registers.
pub(crate) const MAX_UNROLLED_SLOTS: usize = 64;

/// The fewest chunk accesses (chunks per thread times the loads and stores read in chunks) of
/// an elementwise phase that is split (`DevGen::split_phase`) when some access is tested chunk
/// by chunk ahead of the code (a block-wide test of every access splits any vectorized phase:
/// it costs a few instructions however many chunks there are). With fewer, the per-chunk code
/// is small already and the test ahead of it costs more than it saves.
pub(crate) const MIN_SPLIT_ACCESSES: usize = 2;

/// What a plan is computed for besides the kernel: one declared instance (its concrete
/// meta-parameter values, warps and stages) and which of its entries (`split`: the entry of
/// split launches, `<entry>__split`).
pub(crate) struct Instance<'a> {
    pub(crate) vals: &'a HashMap<String, i64>,
    pub(crate) num_warps: usize,
    pub(crate) num_stages: usize,
    pub(crate) split: bool,
    /// The config's register limit per thread (`maxnreg`), which the device build gives ptxas.
    pub(crate) maxnreg: Option<u32>,
}

/// A `dot` operand staged in shared memory by a loop that is not software-pipelined, with its
/// `dot`'s layout and its `[rows, inner]` shape.
#[derive(Clone, Debug)]
pub(crate) struct StagedOperand {
    pub(crate) x: ExprId,
    pub(crate) layout: Layout,
    pub(crate) rows: usize,
    pub(crate) inner: usize,
}

impl StagedOperand {
    /// The alignment of its f16 tile and the tile's bytes, padded to it.
    pub(crate) fn tile_bytes(&self) -> (usize, usize) {
        let align = smem::staging_align(self.layout);
        (align, (self.rows * self.inner * 2).next_multiple_of(align))
    }
}

/// How a `for` loop runs.
pub(crate) enum Schedule {
    /// A software-pipelined K loop (`pipeline.rs`).
    Pipelined(PipePlan),
    /// The body as written, each iteration after the other. `resident`: tensor-core `dot`
    /// operands the loop does not change, staged in shared memory once before it; `ahead`:
    /// operands loaded from addresses that depend only on the loop variable, copied `depth`
    /// iterations ahead (`num_stages - 1`, at least one, fewer where shared memory is short),
    /// each into one of `depth + 1` buffers (never in a body that stores, nor in a split loop).
    /// On sm_90a, `tma` gives the operands copied ahead tensor maps (`pipeline/ahead.rs`).
    /// `uniform`: the `where_` conditions tested once per iteration, the body running without
    /// them where they hold on the whole block (`uniform.rs`).
    AsWritten { resident: Vec<StagedOperand>, ahead: Vec<StagedOperand>, depth: usize, tma: Option<AheadMaps>, uniform: Vec<ExprId> },
}

/// The tensor maps of a loop's operands copied ahead (sm_90a): one per operand, in slots from
/// `first_map` of the entry's list; the loop then keeps one `mbarrier` per buffer after its
/// tiles (`reserved`).
#[derive(Clone, Debug)]
pub(crate) struct AheadMaps {
    pub(crate) first_map: usize,
    pub(crate) maps: Vec<TmaDesc>,
}

/// Why a plan is invalid: a broken invariant of the planner (a bug), reported as a compile error
/// at the kernel.
#[derive(Debug)]
pub(crate) struct PlanError(pub(crate) String);

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// See the module documentation.
pub(crate) struct DevicePlan<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) vals: &'a HashMap<String, i64>,
    pub(crate) target: Target,
    pub(crate) threads: usize,
    /// The instance's `num_stages`: shared-memory buffers of a software-pipelined K loop.
    pub(crate) num_stages: usize,
    /// The path of the device support module in generated code.
    pub(crate) d: TokenStream,
    /// Each expression's concrete shape.
    pub(crate) shapes: Vec<Vec<usize>>,
    pub(crate) kinds: Vec<LocalKind>,
    /// The register layout of each local (cyclic unless materialized in an `mma` layout).
    pub(crate) layouts: Vec<Layout>,
    /// The pointer parameter behind each pointer local (`bounds.rs`).
    pub(crate) ptr_roots: Vec<Option<usize>>,
    /// Whether the kernel reads global memory anywhere (stores then keep program order).
    pub(crate) has_loads: bool,
    /// Whether cyclic slot loops are unrolled (`slot_loop`).
    pub(crate) unroll_slots: bool,
    /// The longest chunk of the cyclic layout (`vec_width`): 8 when the kernel accesses blocks of
    /// 16- or 8-bit elements in memory (16-byte accesses), else 4.
    pub(crate) max_vec: usize,
    /// Whether `mma.sync` tilings keep whole rows in one warp: the kernel has a `dot` and reduces
    /// a 2-D block along its rows (flash attention's row maxima and sums).
    pub(crate) rows_per_warp: bool,
    /// Each `dot` with its tensor-core tiling (`None`: f32 FMAs over operands in shared memory).
    pub(crate) dots: Vec<(ExprId, Option<Layout>)>,
    /// Each `for` loop's schedule, by loop variable.
    pub(crate) loops: BTreeMap<LocalId, Schedule>,
    /// `dot`s of loops with operands copied ahead that another `dot` follows in the same
    /// iteration: one whose operands are all resident, ahead or in registers needs no barrier
    /// after it (the next `dot`'s barrier comes before the next iteration's copies overwrite
    /// what it read).
    pub(crate) followed: HashSet<ExprId>,
    /// Resident `dot` operands staged from the `load` that defines them rather than from
    /// registers (`kloop.rs`, `reloadable`), by operand expression.
    pub(crate) reloads: HashMap<ExprId, ExprId>,
    /// The barriers around each store statement (`barriers.rs`), by `barriers::stmt_key`.
    pub(crate) store_barriers: HashMap<usize, barriers::StoreBarriers>,
    /// The tensor maps the body copies with (sm_90a pipelined loops), in slot order.
    pub(crate) tensor_maps: Vec<TmaDesc>,
    /// Whether cold paths run out of line (`kernel_std::device::outline`): the bodies of plain
    /// entries, but the `mma.sync` bodies of non-`wgmma` targets with more than
    /// `MAX_OUTLINED_ACC_REGS` accumulator registers. Split entries keep them inline (out of
    /// line, their results were wrong on the GPU).
    pub(crate) outline_cold: bool,
    /// Whether the checked stores of `mma`-layout blocks are a loop over column pairs through a
    /// `move` closure's copy of the values (`vector.rs`): the bodies of `wgmma` targets and those
    /// with at most `MAX_OUTLINED_ACC_REGS` accumulator registers (beyond, ptxas spills).
    pub(crate) roll_cold_stores: bool,
    /// The top-level loop after which no loop follows, in a body with cold paths out of line:
    /// the cold fallback of its tensor-map version runs the rest of the body itself and
    /// returns, so the hot path does not join it (`pipeline.rs`).
    pub(crate) tail_loop: Option<LocalId>,
    /// The loop launches may split over several blocks per program (`split.rs`), if any.
    pub(crate) split_loop: Option<SplitLoop>,
    /// That loop, in the entry of split launches (whose body splits it); `None` in plain entries.
    pub(crate) split: Option<SplitLoop>,
    /// The divisibility known of integer and pointer values (`multiple_of` hints among it).
    pub(crate) multiples: super::multiples::Multiples<'a>,
}

/// The plan of the body of `inst`'s entry that runs on `target`.
pub(crate) fn plan<'a>(k: &'a Kernel, inst: &Instance<'a>, target: Target) -> Result<DevicePlan<'a>, PlanError> {
    let vals = inst.vals;
    let shapes = k
        .exprs
        .iter()
        .map(|e| concrete_shape(&e.ty.shape, vals))
        .collect();
    let has_dot = k.exprs.iter().any(|e| matches!(e.kind, ExprKind::Dot { .. }));
    let mut p = DevicePlan {
        k,
        vals,
        target,
        threads: 32 * inst.num_warps,
        num_stages: inst.num_stages.max(1),
        d: quote!(::kernel_std::__private::device),
        shapes,
        kinds: vec![],
        layouts: vec![],
        ptr_roots: vec![],
        has_loads: k.exprs.iter().any(|e| matches!(e.kind, ExprKind::Load { .. } | ExprKind::Atomic { .. })),
        unroll_slots: false,
        max_vec: 4,
        rows_per_warp: false,
        dots: vec![],
        loops: BTreeMap::new(),
        followed: HashSet::new(),
        reloads: HashMap::new(),
        tensor_maps: Vec::new(),
        store_barriers: HashMap::new(),
        outline_cold: false,
        roll_cold_stores: false,
        tail_loop: None,
        split_loop: None,
        split: None,
        multiples: super::multiples::Multiples::of(k, vals),
    };
    p.rows_per_warp = has_dot && k.exprs.iter().any(|e| matches!(e.kind, ExprKind::Reduce { x, axis: 1, .. } if p.shapes[x].len() == 2));
    p.max_vec = if k.exprs.iter().any(|e| !e.ty.shape.is_empty() && matches!(e.ty.elem, Elem::Ptr(d) if elem_size(&Elem::Val(d)) <= 2)) { 8 } else { 4 };
    p.unroll_slots = p.shapes.iter().all(|s| p.per_thread(s.iter().product()) <= MAX_UNROLLED_SLOTS);
    p.kinds = p.classify_locals();
    p.layouts = p.assign_layouts();
    p.ptr_roots = p.pointer_roots();
    p.dots = (0..k.exprs.len()).filter(|&e| matches!(k.exprs[e].kind, ExprKind::Dot { .. })).map(|e| (e, p.mma_tiling(e))).collect();
    p.split_loop = p.split_loop();
    p.split = p.split_loop.clone().filter(|_| inst.split);
    // `mma.sync` bodies whose accumulators take more registers than `MAX_OUTLINED_ACC_REGS`
    // keep their cold paths inline: around the call ptxas spills.
    let acc_regs = p.dots.iter().filter_map(|(_, l)| match l {
        Some(Layout::Mma { tm, tn, wg: false, .. }) => Some(tm * tn * 4),
        _ => None,
    });
    let few_regs = acc_regs.max().unwrap_or(0) <= MAX_OUTLINED_ACC_REGS;
    p.outline_cold = p.split.is_none() && (target.has_wgmma() || few_regs);
    // Checked stores loop over their pairs through a copy of the values, in or out of line, by
    // the same register rule (split entries included).
    p.roll_cold_stores = target.has_wgmma() || few_regs;
    p.tail_loop = k
        .body
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Stmt::For { var, .. } if split::count_loops(&k.body[i + 1..]) == 0 => Some(*var),
            _ => None,
        })
        .next()
        .filter(|_| p.outline_cold);
    p.plan_loops(&k.body, Some(0), false);
    let mut barriers = HashMap::new();
    p.plan_barriers(&k.body, true, &mut barriers);
    p.store_barriers = barriers;
    p.validate()?;
    Ok(p)
}

impl DevicePlan<'_> {
    /// The tensor-core tiling of `dot` (planned: see `mma_tiling`).
    pub(crate) fn tiling(&self, dot: ExprId) -> Option<Layout> {
        self.dots.iter().find(|(e, _)| *e == dot).and_then(|(_, l)| *l)
    }

    /// Whether some `dot` of the body runs on `wgmma`.
    pub(crate) fn uses_wgmma(&self) -> bool {
        self.dots.iter().any(|(_, l)| matches!(l, Some(Layout::Mma { wg: true, .. })))
    }

    /// The split loop, when `var` is its variable and this entry splits it.
    pub(crate) fn split_of(&self, var: LocalId) -> Option<&SplitLoop> {
        self.split.as_ref().filter(|s| s.var == var)
    }

    /// The schedule of the loop over `var`.
    pub(crate) fn schedule(&self, var: LocalId) -> &Schedule {
        &self.loops[&var]
    }

    /// Checks the plan's invariants once, so the emitter can rely on them: every `mma` layout
    /// tiles its block exactly, a pipelined loop's accumulator has its `dot`'s tiling, a staged
    /// operand has a tensor-core `dot`, the split loop is a loop of the body and its accumulator
    /// is a materialized f32 block.
    pub(crate) fn validate(&self) -> Result<(), PlanError> {
        let k = self.k;
        let err = |m: String| Err(PlanError(m));
        if self.threads == 0 || self.threads > 1024 {
            return err(format!("{} threads per program", self.threads));
        }
        for (l, layout) in self.layouts.iter().enumerate() {
            let shape = &self.shapes_of_local(l);
            if let Err(m) = layout.check_tiles(shape, self.threads) {
                return err(format!("local `{}`: {m}", k.locals[l].name));
            }
        }
        for (var, s) in &self.loops {
            let name = &k.locals[*var].name;
            match s {
                Schedule::Pipelined(p) if self.layouts[p.acc] != p.layout || !self.dots.iter().any(|(_, l)| *l == Some(p.layout)) => {
                    return err(format!("the pipelined loop over `{name}` accumulates in a layout its `dot` does not have"));
                }
                Schedule::AsWritten { resident, ahead, .. } => {
                    if let Some(o) = resident.iter().chain(ahead).find(|o| !matches!(o.layout, Layout::Mma { .. })) {
                        return err(format!("the loop over `{name}` stages operand {} for a `dot` without tensor cores", k.expr_text(o.x)));
                    }
                }
                _ => {}
            }
        }
        if let Some(sl) = &self.split_loop {
            if !self.loops.contains_key(&sl.var) || !matches!(self.kinds[sl.acc], LocalKind::Materialized) {
                return err(format!("the split loop over `{}` is no loop with a materialized accumulator", k.locals[sl.var].name));
            }
        }
        Ok(())
    }

    /// The concrete shape of local `l`.
    pub(crate) fn shapes_of_local(&self, l: LocalId) -> Vec<usize> {
        concrete_shape(&self.k.locals[l].ty.shape, self.vals)
    }

    /// Plans every `for` loop of `stmts`, nested ones included. `floor`: where the statements'
    /// shared memory starts (above the operand tiles that the loops around them keep), `None`
    /// when it is not known before emission (under a loop whose bounds are computed by a `dot`
    /// or a reduction, which take shared memory first): loops there are not pipelined.
    /// `in_loop`: whether the statements are inside a `for` loop.
    fn plan_loops(&mut self, stmts: &[Stmt], floor: Option<usize>, in_loop: bool) {
        for s in stmts {
            match s {
                Stmt::For { var, start, end, step, body, .. } => {
                    let at = floor.filter(|_| ![*start, *end, *step].iter().any(|e| self.takes_shared_memory(*e)));
                    let schedule = match (self.pipeline_plan(*var, body), at) {
                        (Some(mut p), Some(at)) => {
                            p.mem = self.pipe_mem(&p, at, self.tensor_maps.len(), in_loop);
                            self.tensor_maps.extend(p.mem.maps.iter().flatten().map(|(_, t)| t.clone()));
                            Schedule::Pipelined(p)
                        }
                        _ => self.as_written(*var, body, at.unwrap_or(0)),
                    };
                    let inner = match &schedule {
                        Schedule::AsWritten { resident, ahead, depth, tma, .. } => at.map(|at| reserved(at, resident, ahead, *depth, tma.is_some())),
                        Schedule::Pipelined(_) => at,
                    };
                    self.loops.insert(*var, schedule);
                    self.plan_loops(body, inner, true);
                }
                _ => s.bodies().into_iter().for_each(|b| self.plan_loops(b, floor, in_loop)),
            }
        }
    }

    /// Whether evaluating `e` (not through locals) takes shared memory: a `dot`, a reduction or
    /// a scan in it is computed before its statement, in shared memory.
    fn takes_shared_memory(&self, e: ExprId) -> bool {
        let kind = &self.k.exprs[e].kind;
        matches!(kind, ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. }) || kind.operands().into_iter().any(|c| self.takes_shared_memory(c))
    }
}

impl fmt::Display for DevicePlan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.k;
        let target = match self.target {
            Target::Sm80 => "sm_80 (every target but sm_90a)",
            Target::Sm90a => "sm_90a",
        };
        writeln!(f, "device plan of `{}` for {target}", k.name)?;
        let mut metas: Vec<String> = self.vals.iter().map(|(n, v)| format!("{n} = {v}")).collect();
        metas.sort();
        if !metas.is_empty() {
            writeln!(f, "  {}", metas.join(", "))?;
        }
        writeln!(f, "  {} threads ({} warps), num_stages {}", self.threads, self.threads / 32, self.num_stages)?;
        let unrolled = if self.unroll_slots { "unrolled" } else { "rolled" };
        writeln!(f, "  cyclic chunks of up to {} elements, slot loops {unrolled}", self.max_vec)?;
        writeln!(f, "values:")?;
        for (l, local) in k.locals.iter().enumerate() {
            let kind = match self.kinds[l] {
                LocalKind::Scalar => "scalar".to_string(),
                LocalKind::Pure(_) => "pure (evaluated at each use)".into(),
                LocalKind::Affine(_) => "affine (initial value plus a scalar offset)".into(),
                LocalKind::Inline(v) if is_load_or_cast(k, v) => "inline load (evaluated at its use)".into(),
                LocalKind::Inline(_) => "inline value (evaluated at its use)".into(),
                LocalKind::Materialized => format!("materialized, {}", self.layouts[l]),
            };
            let root = self.ptr_roots[l].map(|p| format!(", from pointer parameter `{}`", k.params[p].name)).unwrap_or_default();
            writeln!(f, "  %{}.{l}: {kind}{root}", local.name)?;
        }
        if !self.dots.is_empty() {
            writeln!(f, "dots:")?;
        }
        for (e, tiling) in &self.dots {
            match tiling {
                Some(l) => writeln!(f, "  {}: {l}", k.expr_text(*e))?,
                None => writeln!(f, "  {}: f32 FMAs over operands in shared memory", k.expr_text(*e))?,
            }
        }
        if !self.loops.is_empty() {
            writeln!(f, "loops:")?;
        }
        for (var, s) in &self.loops {
            write!(f, "  for %{}.{var}: ", k.locals[*var].name)?;
            match s {
                Schedule::Pipelined(p) => p.describe(k, f)?,
                Schedule::AsWritten { resident, ahead, depth, tma, uniform } => {
                    let list = |ops: &[StagedOperand]| ops.iter().map(|o| k.expr_text(o.x)).collect::<Vec<_>>().join(", ");
                    write!(f, "as written")?;
                    if !resident.is_empty() {
                        write!(f, "; staged once before it: {}", list(resident))?;
                        if resident.iter().any(|o| self.reloads.contains_key(&o.x)) {
                            write!(f, " (from memory: {})", list(&resident.iter().filter(|o| self.reloads.contains_key(&o.x)).cloned().collect::<Vec<_>>()))?;
                        }
                    }
                    if !ahead.is_empty() {
                        let its = if *depth == 1 { "one iteration".to_string() } else { format!("{depth} iterations") };
                        write!(f, "; copied {its} ahead: {}", list(ahead))?;
                    }
                    if let Some(t) = tma {
                        write!(f, "; tensor maps from slot {}", t.first_map)?;
                    }
                    if !uniform.is_empty() {
                        let conds = uniform.iter().map(|c| k.expr_text(*c)).collect::<Vec<_>>().join(", ");
                        write!(f, "; where it holds on the whole block, without testing {conds}")?;
                    }
                    writeln!(f)?;
                }
            }
        }
        let mut stores = Vec::new();
        collect_stores(&k.body, &mut stores);
        if !stores.is_empty() {
            writeln!(f, "stores:")?;
        }
        for s in stores {
            let Stmt::Store { ptr, .. } = s else { continue };
            let b = self.store_barriers[&barriers::stmt_key(s)];
            let yes = |x: bool| if x && self.has_loads { "a barrier" } else { "no barrier" };
            writeln!(f, "  to {}: {} before, {} after", k.expr_text(*ptr), yes(b.before), yes(b.after))?;
        }
        if self.outline_cold {
            write!(f, "cold paths out of line")?;
            match self.tail_loop {
                Some(v) => writeln!(f, "; the fallback of the loop over %{}.{v} runs the rest of the body", k.locals[v].name)?,
                None => writeln!(f)?,
            }
        }
        if let Some(sl) = &self.split_loop {
            let how = if self.split.is_some() { "split in this entry" } else { "not split in this entry" };
            writeln!(f, "split loop: %{}.{} (accumulator %{}.{}), {how}", k.locals[sl.var].name, sl.var, k.locals[sl.acc].name, sl.acc)?;
        }
        Ok(())
    }
}

/// Whether `e` is a `load`, or a conversion (`.to::<T>()`) of one.
fn is_load_or_cast(k: &Kernel, e: ExprId) -> bool {
    match &k.exprs[e].kind {
        ExprKind::Load { .. } => true,
        ExprKind::Cast(x) => is_load_or_cast(k, *x),
        _ => false,
    }
}

/// A symbolic shape with the instance's meta-parameter values (a dimension that does not
/// evaluate counts as 1, a negative one as 0).
fn concrete_shape(shape: &crate::shape::Shape, vals: &HashMap<String, i64>) -> Vec<usize> {
    shape.iter().map(|d| d.eval(&|s| vals.get(s).copied()).unwrap_or(1).max(0) as usize).collect()
}

/// Where the statements of a loop's body start in shared memory when the loop starts at `floor`
/// and keeps the tiles of its `resident` operands and `depth + 1` of each operand copied `depth`
/// iterations `ahead`, and with `bars` (tensor maps) an 8-byte `mbarrier` per buffer and 16
/// bytes per operand copied ahead after them (the emitter allocates them in this order:
/// `DevGen::stage_resident`, `DevGen::copy_ahead`).
pub(crate) fn reserved(floor: usize, resident: &[StagedOperand], ahead: &[StagedOperand], depth: usize, bars: bool) -> usize {
    let tiles = resident.iter().map(|o| (o, 1)).chain(ahead.iter().map(|o| (o, depth + 1)));
    let end = tiles.fold(floor, |at, (o, copies)| {
        let (align, size) = o.tile_bytes();
        (0..copies).fold(at, |at, _| at.next_multiple_of(align) + size)
    });
    if bars { end.next_multiple_of(8) + 8 * (depth + 1) + 16 * ahead.len() } else { end }
}

/// The store statements of `stmts` and the bodies inside them, in program order.
fn collect_stores<'k>(stmts: &'k [Stmt], out: &mut Vec<&'k Stmt>) {
    for s in stmts {
        if matches!(s, Stmt::Store { .. }) {
            out.push(s);
        }
        s.bodies().into_iter().for_each(|b| collect_stores(b, out));
    }
}
