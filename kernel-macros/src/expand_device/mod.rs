//! Device backend: one `extern "ptx-kernel"` entry per declared instance (concrete meta
//! values), compiled for `nvptx64-nvidia-cuda` by `cargo xtask build-ptx`. Each body of an
//! entry is planned (`plan/`: value kinds, layouts, `dot` tilings, loop schedules, the split
//! loop, hidden parameters) and then emitted by [`DevGen`], which translates the plan.
//!
//! Layout: a block of N elements is spread over the T threads of the program cyclically, in
//! chunks of V consecutive elements (`vec_width`: 8 in kernels that access blocks of 16- or
//! 8-bit elements, else 4, or 2, when every thread gets whole chunks; else 1): thread `t` owns
//! chunks `t, t + T, ...` and keeps their elements in a register array.
//! Consecutive threads own consecutive chunks, so loads and stores of row-major blocks are
//! coalesced, and a chunk moves with one vector access when it is contiguous and aligned
//! (`vector.rs`). Scalars are computed by every thread (they are uniform).
//!
//! Values are produced in three ways:
//! - *pure* immutable blocks (index arithmetic: `arange`, parameters, broadcasts, no loads)
//!   are never stored: each use re-evaluates them at the coordinate it needs;
//! - *affine* mutable blocks (`ptrs += uniform scalar`) are a pure initial value plus one
//!   scalar offset, so pointer blocks advanced in a K loop cost no registers;
//! - everything else is *materialized* in the owning threads' registers. A use at a coordinate
//!   the thread does not own (broadcasting, `trans`) reads a copy staged in shared memory.
//!
//! `dot` of f16/bf16 blocks runs on tensor cores (`mma.sync`, operands staged in swizzled shared
//! memory, the result in the `mma` accumulator layout); the seeds' K loop is software-pipelined
//! over `num_stages` buffers (`pipeline.rs`). Other `dot`s stage their operands in shared
//! memory (f32 FMAs). Reductions combine registers, lanes and warps (`reduce.rs`).

use crate::expand_cpu::param_ident;
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use std::collections::{HashMap, HashSet};

mod accumulate;
mod alias;
mod bits;
mod bounds;
mod chunks;
mod operands;
mod debug;
mod dot;
mod entry;
mod expr;
mod fold;
mod multiples;
mod phase;
mod scan;
mod smem_alloc;
mod stmt;
mod pipeline;
mod reduce;
mod rolled;
mod plan;

pub use entry::entry;
mod split;
mod stepped;
mod uniform;
mod vector;
mod whole;
mod whole_loop;

use smem_alloc::SmemAlloc;
use plan::{DevicePlan, Layout, LocalKind, Schedule, SplitLoop, PipeOp, PipePlan};

/// Where an expression is evaluated: at the iteration's own flat index (`__f`, register
/// slot `__j`), at an arbitrary flat index, or at a flat index whose bits are known bits of the
/// iteration's own (`Mapped(f, bits)`: bit `c` of `f` is bit `bits[c]` of `__f`), as broadcasts
/// and transposes of power-of-two blocks give; a materialized value read there may be in the
/// thread's own registers (`DevGen::read_local`).
#[derive(Clone)]
enum At {
    Own,
    Flat(TokenStream),
    Mapped(TokenStream, std::rc::Rc<[u32]>),
}

/// A value held in per-thread register arrays.
#[derive(Clone)]
struct MatVar {
    ident: Ident,
    elem: TokenStream,
    numel: usize,
    layout: Layout,
}

/// Where a 16-bit `dot` operand of `rows x inner` elements is staged in shared memory: row-major
/// in column blocks of `block` elements (`block == inner`: plain row-major), each block's rows
/// swizzled (see `DevGen::swizzle`). `wgmma` reads A and B (A K-major; B row-major `[K, N]`, N-major for the
/// instruction) in blocks one swizzle pattern (64 elements) wide.
#[derive(Clone, Copy, Debug)]
struct Tile {
    rows: usize,
    inner: usize,
    block: usize,
}

impl Tile {
    /// The staging of a `dot` operand of `rows x inner` elements in `layout`: `wgmma` operands in
    /// column blocks of up to 64 elements (one 128-byte swizzle pattern), others whole rows.
    fn of(layout: Layout, rows: usize, inner: usize) -> Tile {
        let wg = matches!(layout, Layout::Mma { wg: true, .. });
        let block = if wg { inner.min(64) } else { inner };
        Tile { rows, inner, block }
    }

    /// Element index in shared memory of row-major flat index `f` of the operand.
    fn index(&self, f: TokenStream) -> TokenStream {
        if self.block == self.inner {
            return DevGen::swz_flat(self.inner, f);
        }
        let (inner, block, rows) = (self.inner, self.block, self.rows);
        let within = DevGen::swz_chunk(block, quote!(__tr), quote!((__tc % #block) / 8));
        quote!(({ let __tf: usize = #f; let __tr: usize = __tf / #inner; let __tc: usize = __tf % #inner; (__tc / #block) * #rows * #block + #within + __tc % 8 }))
    }
}

/// How a `dot` operand tile of `rows x inner` elements is staged in shared memory: as the
/// kernel's block (`Rows`: `Tile::of(layout, rows, inner)`) or transposed (`Cols`:
/// `Tile::of(layout, inner, rows)`, element `(r, c)` at row `c`, column `r`), the form a
/// tensor map copies when the operand's memory is contiguous along `rows` (a transposed view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Staging {
    Rows,
    Cols,
}

/// The `ldmatrix` (`x4` or `x2`) of `mma.sync` fragments from shared address `base`, at element
/// index `rows` of the operand's tile when it is staged as `Staging::Rows`, `cols` when staged as
/// `Staging::Cols`; `b`: a B operand, whose `Rows` staging is read transposed (A's `Cols` is).
fn ldmatrix(d: &TokenStream, staging: Staging, base: TokenStream, (rows, cols): (TokenStream, TokenStream), b: bool, x: usize) -> TokenStream {
    let (trans, idx) = match staging {
        Staging::Rows => (b, rows),
        Staging::Cols => (!b, cols),
    };
    let f = match (x, trans) {
        (4, false) => quote!(#d::ldmatrix_x4),
        (4, true) => quote!(#d::ldmatrix_x4_trans),
        (_, false) => quote!(#d::ldmatrix_x2),
        (_, true) => quote!(#d::ldmatrix_x2_trans),
    };
    quote!(#f(#base + (#idx * 2) as u32))
}

/// The outer iteration context saved by `DevGen::enter_iteration`.
struct IterScope {
    numel: usize,
    layout: Layout,
    staged: Vec<(MatVar, usize)>,
}

pub struct DeviceEntry {
    pub tokens: TokenStream,
    pub shared_bytes: usize,
    /// The tensor maps the `sm_90a` body copies operand tiles with (`pipeline.rs`); the entry
    /// then takes two more hidden parameters, the maps' address and a mask of the valid ones.
    pub tma: Vec<TmaDesc>,
    /// Bytes of one part's partial accumulator when launches may split the instance's K loop
    /// over several blocks per program (`split.rs`): the tokens then also hold the entry
    /// `<entry>__split`, whose four more hidden parameters are the workspace, the counters, the
    /// whole programs and the parts per split program. Else 0.
    pub split_bytes: usize,
    /// The plain entry's hidden parameters (`plan/abi.rs`).
    pub(crate) hidden: Vec<plan::abi::Hidden>,
    /// The split entry's, when it has one (else empty).
    pub(crate) split_hidden: Vec<plan::abi::Hidden>,
    /// Each body's plan as text, named `<entry>.<target>` (`KERNEL_DUMP`, snapshots).
    pub plans: Vec<(String, String)>,
}

/// A 2-D tensor map the runtime builds at launch for one `dot` operand of a pipelined K loop:
/// the buffer of pointer parameter `ptr` viewed as rows of `row_stride` elements (a scalar
/// parameter; the column stride, parameter `col_stride` or 1, must be 1), copied in boxes of
/// `box_rows x box_inner` elements with the shared-memory swizzle of `swizzle` bytes (0: none).
#[derive(Clone, Debug, PartialEq)]
pub struct TmaDesc {
    pub ptr: usize,
    pub row_stride: usize,
    pub col_stride: Option<usize>,
    pub box_inner: usize,
    pub box_rows: usize,
    pub swizzle: usize,
}

/// The architecture a body of an entry is generated for. An entry whose `dot` can use Hopper's
/// `wgmma` has one body per target, each under [`Target::cfg`]; other entries have one body,
/// generated for [`Target::Sm80`], which every architecture runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// `mma.sync`, `ldmatrix`, `cp.async`: sm_80 and every later architecture.
    Sm80,
    /// The `sm_90a` body: `wgmma`, tensor maps, `stmatrix` epilogues.
    Sm90a,
}

impl Target {
    /// Whether tensor-core `dot`s may use `wgmma`.
    fn has_wgmma(self) -> bool {
        self == Target::Sm90a
    }

    /// The architecture's name in file names and dumps.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90a => "sm_90a",
        }
    }

    /// The attribute that compiles a body of this target only where it runs (the device build
    /// passes `-C target-cpu=<arch>`, which sets the `sm_90a` target feature on Hopper).
    fn cfg(self) -> TokenStream {
        match self {
            Target::Sm90a => quote!(#[cfg(target_feature = "sm_90a")]),
            Target::Sm80 => quote!(#[cfg(not(target_feature = "sm_90a"))]),
        }
    }
}

/// The emitter of one body: translates a [`DevicePlan`] (read through `Deref`) into thread-level
/// Rust. It has no interior mutability: its state is the plain fields below, changed through
/// `&mut self` (methods that only read the plan or that state take `&self`):
/// - the shared-memory allocator (`smem`): the tiles the plan's loop schedules keep for the
///   loops being generated lie below its floor; statement temporaries, staged values and
///   reductions are bump-allocated above it; a pipelined loop's buffers are where the plan put
///   them (checked);
/// - per statement, its `dot` and reduction results (`temps`);
/// - per phase, its iteration (`iter_numel`, `iter_layout`), the values it stages (`staged`)
///   and the loads it reads ahead (`prefetched`);
/// - per loop being generated, its resident and copied-ahead operands (`resident`, `ahead`),
///   its loop-level tests (`loop_tests`) and, in the version of its body for iterations where
///   they hold on the whole block, its `where_` conditions (`assume`);
/// - the fresh-name counter.
struct DevGen<'a> {
    p: &'a DevicePlan<'a>,
    /// Dot/reduce results of the statement being generated.
    temps: HashMap<ExprId, MatVar>,
    /// Materialized values the current phase reads at other threads' coordinates, with their
    /// shared-memory offsets.
    staged: Vec<(MatVar, usize)>,
    /// The body's shared memory: each statement's allocations start at the floor, above the
    /// tiles the loops being generated keep (`resident`, `ahead`).
    smem: SmemAlloc,
    /// `dot` operands staged in shared memory once before the loop they are used in (the plan's
    /// `Schedule::AsWritten::resident`), by operand expression: their offset.
    resident: HashMap<ExprId, usize>,
    /// `dot` operands copied iterations ahead in the loops being generated (`operands.rs`).
    ahead: HashMap<ExprId, operands::Ahead>,
    /// The elements and layout of the phase being generated (`phase.rs`: `enter_iteration`);
    /// 0 elements for code at explicit flat indices.
    iter_numel: usize,
    iter_layout: Layout,
    /// The number of the next fresh name (`fresh`).
    counter: usize,
    /// How many loops enclose the statements being generated.
    loop_depth: usize,
    /// Loads of the phase being generated that were read ahead for the whole chunk (one vector
    /// access): their element is `ident[__v]`, or, where the flag is set (a split phase's
    /// chunks may be read whole across the mask's edge), that element where the mask holds.
    prefetched: HashMap<ExprId, (Ident, bool)>,
    /// Whole-block tests of accesses in loops stated once for the loop (`whole_loop.rs`): the
    /// statements computing their flags, which the loop places before itself.
    loop_tests: Vec<whole_loop::LoopTest>,
    /// Per statement sequence being generated, innermost last: the loop-level tests its loops
    /// computed so far, which later loops of the sequence (and code nested in it) may reuse.
    test_frames: Vec<Vec<whole_loop::SharedTest>>,
    /// The index in `test_frames` of the sequence each loop being generated is a statement of.
    loop_frames: HashMap<LocalId, usize>,
    /// Every value each local is given (`assigned_values`).
    assigned: HashMap<LocalId, Vec<ExprId>>,
    /// `where_` conditions known to hold on every element (`uniform.rs`): the `where_` is its
    /// first value.
    assume: HashSet<ExprId>,
    /// While an `mma`-layout phase that runs as a loop is generated (`rolled.rs`): the arrays
    /// its element code reads (indexed by the slot).
    slot_reads: Option<Vec<rolled::SlotRead>>,
}

impl<'a> std::ops::Deref for DevGen<'a> {
    type Target = DevicePlan<'a>;

    fn deref(&self) -> &DevicePlan<'a> {
        self.p
    }
}

fn elem_size(e: &Elem) -> usize {
    match e {
        Elem::Val(d) => match d {
            DType::Bool | DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 => 8,
        },
        Elem::Ptr(_) => 8,
        Elem::Error => 0,
    }
}

/// The device type of a dtype: the host's primitive types, and the device module's own
/// half-precision and 8-bit float types (`F16`, `BF16`, `F8E4M3`, `F8E5M2`: bits with their
/// conversions).
pub fn dev_dtype(d: DType) -> TokenStream {
    let dp = quote!(::kernel_std::__private::device);
    match d {
        DType::F16 => quote!(#dp::F16),
        DType::BF16 => quote!(#dp::BF16),
        DType::F8E4M3 => quote!(#dp::F8E4M3),
        DType::F8E5M2 => quote!(#dp::F8E5M2),
        _ => crate::expand_cpu::dtype_tokens(d, &dp),
    }
}

impl<'a> DevGen<'a> {
    fn new(p: &'a DevicePlan<'a>) -> Self {
        DevGen {
            p,
            temps: HashMap::new(),
            staged: vec![],
            smem: SmemAlloc::default(),
            resident: HashMap::new(),
            ahead: HashMap::new(),
            iter_numel: 0,
            iter_layout: Layout::Cyclic,
            counter: 0,
            loop_depth: 0,
            prefetched: HashMap::new(),
            loop_tests: Vec::new(),
            test_frames: Vec::new(),
            loop_frames: HashMap::new(),
            assigned: assigned_values(p.k),
            assume: HashSet::new(),
            slot_reads: None,
        }
    }

}

/// The `dot` expressions inside `e`.
fn collect_dots(k: &Kernel, e: ExprId, out: &mut Vec<ExprId>) {
    for c in k.exprs[e].kind.operands() {
        collect_dots(k, c, out);
    }
    if matches!(k.exprs[e].kind, ExprKind::Dot { .. }) {
        out.push(e);
    }
}

/// Every value each local is given (its `let` and its assignments) in `stmts`.
fn assigned_values_in(stmts: &[Stmt]) -> HashMap<LocalId, Vec<ExprId>> {
    fn walk(stmts: &[Stmt], values: &mut HashMap<LocalId, Vec<ExprId>>) {
        for s in stmts {
            match s {
                Stmt::Let { local, value } | Stmt::Assign { local, value } => values.entry(*local).or_default().push(*value),
                _ => s.bodies().into_iter().for_each(|b| walk(b, values)),
            }
        }
    }
    let mut values = HashMap::new();
    walk(stmts, &mut values);
    values
}

/// The values the locals of `stmts` are given (see [`assigned_values_in`]), with the variables
/// of the loops inside them: values that may change from one iteration to the next.
fn loop_values(stmts: &[Stmt]) -> HashMap<LocalId, Vec<ExprId>> {
    let mut out = assigned_values_in(stmts);
    fn loop_vars(stmts: &[Stmt], out: &mut HashMap<LocalId, Vec<ExprId>>) {
        for s in stmts {
            if let Stmt::For { var, .. } = s {
                out.entry(*var).or_default();
            }
            s.bodies().into_iter().for_each(|b| loop_vars(b, out));
        }
    }
    loop_vars(stmts, &mut out);
    out
}

/// Every value each local is given (its `let` and its assignments), anywhere in the kernel.
fn assigned_values(k: &Kernel) -> HashMap<LocalId, Vec<ExprId>> {
    assigned_values_in(&k.body)
}

fn uses_local(k: &Kernel, e: ExprId, l: LocalId) -> bool {
    match &k.exprs[e].kind {
        ExprKind::Local(x) => *x == l,
        other => other.operands().into_iter().any(|c| uses_local(k, c, l)),
    }
}

#[cfg(test)]
mod tests;
