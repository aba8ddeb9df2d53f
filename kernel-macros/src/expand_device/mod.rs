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
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

mod affine;
mod bits;
mod bounds;
mod chunks;
mod operands;
mod debug;
mod pipeline;
mod reduce;
mod plan;
mod split;
mod vector;

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
/// Rust, allocating shared memory and tracking barriers as it goes.
struct DevGen<'a> {
    p: &'a DevicePlan<'a>,
    /// Dot/reduce results of the statement being generated.
    temps: RefCell<HashMap<ExprId, MatVar>>,
    /// Materialized values the current phase reads at other threads' coordinates.
    staged: RefCell<Vec<(MatVar, usize)>>,
    cursor: Cell<usize>,
    /// Where each statement's shared memory starts: above the loop-invariant `dot` operands
    /// of the loops being generated (`resident`).
    floor: Cell<usize>,
    /// `dot` operands staged in shared memory once before the loop they are used in (the plan's
    /// `Schedule::AsWritten::resident`), by operand expression: their offset.
    resident: RefCell<HashMap<ExprId, usize>>,
    /// `dot` operands copied one iteration ahead in the loops being generated (`operands.rs`).
    ahead: RefCell<HashMap<ExprId, operands::Ahead>>,
    smem_max: Cell<usize>,
    iter_numel: Cell<usize>,
    iter_layout: Cell<Layout>,
    counter: Cell<usize>,
    /// Loads of the phase being generated that were read ahead for the whole chunk (one vector
    /// access): their element is `ident[__v]`.
    prefetched: RefCell<HashMap<ExprId, Ident>>,
    /// Tensor maps the generated code copies with, in the order of their hidden-parameter slots.
    tma: RefCell<Vec<TmaDesc>>,
    /// Whether every thread is past a block barrier with no global access since (a store
    /// then needs no barrier before it): true after a software-pipelined loop, which ends with
    /// one, until a statement that may access global memory.
    synced: Cell<bool>,
    /// Set by a `for` statement that was lowered as a software-pipelined loop.
    pipelined: Cell<bool>,
    /// Whether the statement being generated is the last one of the kernel's body (a store
    /// then needs no barrier after it: nothing follows).
    last: Cell<bool>,
    /// The code of the kernel's body after the loop being generated, when that loop is a
    /// top-level statement with no loop after it: the tensor-map version's `cp.async` fallback
    /// then runs it itself, out of line, and returns (`pipeline.rs`).
    /// (The loop's variable: no loop inside it takes the code.)
    tail: RefCell<Option<(LocalId, TokenStream)>>,
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
            temps: RefCell::new(HashMap::new()),
            staged: RefCell::new(vec![]),
            cursor: Cell::new(0),
            floor: Cell::new(0),
            resident: RefCell::new(HashMap::new()),
            ahead: RefCell::new(HashMap::new()),
            smem_max: Cell::new(0),
            iter_numel: Cell::new(0),
            iter_layout: Cell::new(Layout::Cyclic),
            counter: Cell::new(0),
            prefetched: RefCell::new(HashMap::new()),
            tma: RefCell::new(vec![]),
            synced: Cell::new(false),
            pipelined: Cell::new(false),
            last: Cell::new(false),
            tail: RefCell::new(None),
        }
    }

    // ---------------------------------------------------------------- helpers

    fn fresh(&self, base: &str) -> Ident {
        let n = self.counter.get();
        self.counter.set(n + 1);
        format_ident!("__{}{}", base, n)
    }

    fn elem(&self, t: &Ty) -> TokenStream {
        match t.elem {
            Elem::Val(d) => dev_dtype(d),
            Elem::Ptr(d) => {
                let e = dev_dtype(d);
                quote!(*mut #e)
            }
            Elem::Error => quote!(()),
        }
    }

    /// Flat index of register slot `j` (a `usize` expression) of this thread in an `mma`
    /// layout: [`Self::mma_flat`] computed in the device code, for code generated once for
    /// every slot (a closure over `j` that [`Self::unrolled`] calls with constants).
    fn mma_flat_at(layout: Layout, j: &TokenStream) -> TokenStream {
        let Layout::Mma { wn, tm, tn, n, wg, .. } = layout else { return quote!(0usize) };
        let (tn4, wtn) = (tn * 4, tn * 8);
        // Slot `j` is tile `(j / tn4, (j % tn4) / 4)`, element `j % 4` of the fragment.
        let col_off = quote!((((#j) % #tn4) / 4) * 8 + (#j) % 2);
        if wg {
            let wtm = tm * 64;
            let row_off = quote!(((#j) / #tn4) * 64 + (((#j) % 4) / 2) * 8);
            return quote!((((__warp / 4) / #wn) * #wtm + #row_off + (__warp % 4) * 16 + __lane / 4) * #n + ((__warp / 4) % #wn) * #wtn + #col_off + (__lane % 4) * 2);
        }
        let wtm = tm * 16;
        let row_off = quote!(((#j) / #tn4) * 16 + (((#j) % 4) / 2) * 8);
        quote!(((__warp / #wn) * #wtm + #row_off + __lane / 4) * #n + (__warp % #wn) * #wtn + #col_off + (__lane % 4) * 2)
    }

    /// `body` for `var` in `0..n`, written once: a closure over `var` that the device's
    /// `unroll` calls with each constant (straight-line code after inlining, so arrays indexed
    /// by `var` stay in registers).
    fn unrolled(&self, n: usize, var: TokenStream, body: TokenStream) -> TokenStream {
        let d = &self.d;
        quote!(#d::unroll::<#n, _>(#[inline(always)] |#var: usize| { #body });)
    }

    /// `body` for `var` in `0..n` over the register slots (or chunks) of a cyclic block: unrolled
    /// ([`Self::unrolled`]) when every block of the kernel holds at most [`plan::MAX_UNROLLED_SLOTS`]
    /// elements per thread, so that the slot indices are constants and the per-thread arrays
    /// stay in registers; a loop otherwise (a block too large for registers lives in local
    /// memory, and unrolling the code around it only adds register pressure).
    fn slot_loop(&self, n: usize, var: TokenStream, body: TokenStream) -> TokenStream {
        if self.unroll_slots {
            return self.unrolled(n, var, body);
        }
        quote!(for #var in 0..#n { #body })
    }

    /// Flat index of register slot `j` of this thread in an `mma` layout.
    fn mma_flat(layout: Layout, j: usize) -> TokenStream {
        let Layout::Mma { wn, tm, tn, n, wg, .. } = layout else { return quote!(0usize) };
        let (t_m, rest) = (j / (tn * 4), j % (tn * 4));
        let (t_n, r) = (rest / 4, rest % 4);
        let col_off = t_n * 8 + (r % 2);
        let wtn = tn * 8;
        if wg {
            let row_off = t_m * 64 + (r / 2) * 8;
            let wtm = tm * 64;
            return quote!((((__warp / 4) / #wn) * #wtm + #row_off + (__warp % 4) * 16 + __lane / 4) * #n + ((__warp / 4) % #wn) * #wtn + #col_off + (__lane % 4) * 2);
        }
        let row_off = t_m * 16 + (r / 2) * 8;
        let wtm = tm * 16;
        quote!(((__warp / #wn) * #wtm + #row_off + __lane / 4) * #n + (__warp % #wn) * #wtn + #col_off + (__lane % 4) * 2)
    }

    fn alloc(&self, bytes: usize) -> usize {
        self.alloc_aligned(bytes, 16)
    }

    /// Shared memory for `bytes` at an offset that is a multiple of `align`.
    fn alloc_aligned(&self, bytes: usize, align: usize) -> usize {
        let off = self.cursor.get().next_multiple_of(align);
        self.cursor.set(off + bytes);
        self.smem_max.set(self.smem_max.get().max(off + bytes));
        off
    }

    fn idx(&self, at: &At) -> TokenStream {
        match at {
            At::Own => quote!(__f),
            At::Flat(t) | At::Mapped(t, _) => t.clone(),
        }
    }

    /// For a value of `numel` elements evaluated at `at`: which bit of the iteration element's
    /// flat index each bit of the value's flat index is (see [`At::Mapped`]), if known.
    fn bit_map(&self, at: &At, numel: usize) -> Option<std::rc::Rc<[u32]>> {
        match at {
            At::Own if numel.is_power_of_two() && numel == self.iter_numel.get() => Some((0..numel.trailing_zeros()).collect()),
            At::Mapped(_, bits) => Some(bits.clone()),
            _ => None,
        }
    }

    /// The flat index in `to` (broadcast operand) of the element that `at` in `from` reads.
    fn map_broadcast(&self, at: &At, from: &[usize], to: &[usize]) -> At {
        if from == to {
            return at.clone();
        }
        let to_numel: usize = to.iter().product();
        if to_numel <= 1 {
            return At::Flat(quote!(0usize));
        }
        let pf = self.idx(at);
        let n = from.len();
        let mut terms = Vec::new();
        let mut to_stride = 1usize;
        for i in (0..to.len()).rev() {
            let fi = i + n - to.len();
            if to[i] != 1 {
                let from_stride: usize = from[fi + 1..].iter().product();
                let dim = from[fi];
                terms.push(quote!(((__pf / #from_stride) % #dim) * #to_stride));
            }
            to_stride *= to[i];
        }
        let flat = quote!({ let __pf: usize = #pf; 0usize #(+ #terms)* });
        match self.bit_map(at, from.iter().product()).and_then(|m| broadcast_bits(&m, from, to)) {
            Some(bits) => At::Mapped(flat, bits.into()),
            None => At::Flat(flat),
        }
    }

    fn operand(&self, parent: ExprId, child: ExprId, at: &At) -> TokenStream {
        let child_shape = &self.shapes[child];
        if child_shape.is_empty() {
            return self.ev(child, &At::Own);
        }
        let a = self.map_broadcast(at, &self.shapes[parent], child_shape);
        self.ev(child, &a)
    }

    fn read_mat(&self, m: &MatVar, at: &At) -> TokenStream {
        let id = &m.ident;
        if m.numel == 0 {
            // A uniform scalar (a reduction to rank 0).
            return quote!(#id);
        }
        if matches!(at, At::Own) && m.numel == self.iter_numel.get() && m.layout == self.iter_layout.get() {
            return quote!(#id[__j]);
        }
        if let Some(code) = self.read_local(m, at) {
            return code;
        }
        let idx = self.idx(at);
        let off = {
            let mut st = self.staged.borrow_mut();
            match st.iter().find(|(v, _)| v.ident == m.ident) {
                Some((_, off)) => *off,
                None => {
                    let size = m.numel * 8;
                    let off = self.alloc(size);
                    st.push((m.clone(), off));
                    off
                }
            }
        };
        let e = &m.elem;
        let d = &self.d;
        quote!(#d::load((__smem.add(#off) as *mut #e).add(#idx)))
    }

    /// `m` at `at` read from this thread's own registers, when the layouts allow: every bit of
    /// the element's flat index that `m`'s layout takes from the lane or warp index is the
    /// same lane or warp bit of the iteration's element, and every bit it takes from the slot
    /// index is some slot bit of the iteration's (`__j`); the slot read is then a function of
    /// `__j` (a constant where the iteration is unrolled). A row of an `mma` block broadcast
    /// along the block's columns, for instance, is in the registers of every thread that holds
    /// the row.
    fn read_local(&self, m: &MatVar, at: &At) -> Option<TokenStream> {
        let map = self.bit_map(at, m.numel)?;
        let iter = self.bit_layout(self.iter_numel.get(), self.iter_layout.get())?;
        let from = self.bit_layout(m.numel, m.layout)?.local_read(&iter, &map)?;
        let terms = from.iter().enumerate().map(|(p, q)| quote!((((__j >> #q) & 1) << #p)));
        let id = &m.ident;
        Some(quote!(#id[0usize #(| #terms)*]))
    }

    // ---------------------------------------------------------------- expressions

    fn ev(&self, id: ExprId, at: &At) -> TokenStream {
        if let Some(m) = self.temps.borrow().get(&id).cloned() {
            return self.read_mat(&m, at);
        }
        let k = self.k;
        let e = &k.exprs[id];
        let d = &self.d;
        let t = self.elem(&e.ty);
        match &e.kind {
            ExprKind::Param(i) => {
                let p = param_ident(&k.params[*i].name);
                quote!(#p)
            }
            ExprKind::Meta(i) => {
                let v = self.vals.get(&k.metas[*i].name).copied().unwrap_or(0);
                match e.ty.dtype() {
                    Some(DType::Bool) => {
                        let b = v != 0;
                        quote!(#b)
                    }
                    _ => quote!(<#t as #d::Elem>::from_i64(#v)),
                }
            }
            ExprKind::Lit(l) => match (l, e.ty.dtype()) {
                (Lit::Bool(b), _) => quote!(#b),
                (Lit::Int(v), Some(DType::I32)) => {
                    let v = *v as i32;
                    quote!((#v))
                }
                (Lit::Int(v), Some(DType::I64)) => quote!((#v)),
                (Lit::Int(v), _) => quote!(<#t as #d::Elem>::from_i64(#v)),
                (Lit::Float(v), _) if v.is_finite() => quote!(<#t as #d::Elem>::from_f64(#v)),
                (Lit::Float(v), _) => {
                    let f = if v.is_nan() {
                        quote!(f64::NAN)
                    } else if *v > 0.0 {
                        quote!(f64::INFINITY)
                    } else {
                        quote!(f64::NEG_INFINITY)
                    };
                    quote!(<#t as #d::Elem>::from_f64(#f))
                }
            },
            ExprKind::Local(l) => {
                let ident = crate::expand_cpu::local_ident(k, *l);
                match &self.kinds[*l] {
                    LocalKind::Scalar => quote!(#ident),
                    LocalKind::Pure(init) | LocalKind::Inline(init) => self.ev(*init, at),
                    LocalKind::Affine(init) => {
                        let base = self.ev(*init, at);
                        let off = format_ident!("{}_off", ident);
                        match e.ty.elem {
                            Elem::Ptr(_) => quote!(#d::ptr_add(#base, #off)),
                            _ => quote!(<#t as #d::Num>::add(#base, #off)),
                        }
                    }
                    LocalKind::Materialized => {
                        let m = MatVar { ident, elem: t, numel: self.numel(id), layout: self.layouts[*l] };
                        self.read_mat(&m, at)
                    }
                }
            }
            ExprKind::ProgramId(a) => self.program_id_code(*a),
            // In an entry that may split its K loop, the programs along x are the split's.
            ExprKind::NumPrograms(0) if self.split.is_some() => quote!(#d::split_programs(__sk_dp, __sk_parts)),
            ExprKind::NumPrograms(a) => {
                let a = *a as u32;
                quote!(#d::num_programs(#a))
            }
            ExprKind::Arange { start, .. } => {
                let s = start.eval(&|x| self.vals.get(x).copied()).unwrap_or(0) as i32;
                let i = self.idx(at);
                quote!((#s).wrapping_add((#i) as i32))
            }
            ExprKind::Full(v) => self.ev(*v, &At::Own),
            ExprKind::Unary(op, x) => {
                let xt = self.elem(&k.exprs[*x].ty);
                let v = self.operand(id, *x, at);
                match op {
                    UnOp::Neg => quote!(<#xt as #d::Num>::neg(#v)),
                    UnOp::Not => quote!(<#xt as #d::Int>::not(#v)),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let ot = self.elem(&k.exprs[*a].ty);
                let (va, vb) = (self.operand(id, *a, at), self.operand(id, *b, at));
                let f = match op {
                    BinOp::Add => quote!(<#ot as #d::Num>::add),
                    BinOp::Sub => quote!(<#ot as #d::Num>::sub),
                    BinOp::Mul => quote!(<#ot as #d::Num>::mul),
                    BinOp::Div => quote!(<#ot as #d::Num>::div),
                    BinOp::Rem => quote!(<#ot as #d::Num>::rem),
                    BinOp::Min => quote!(<#ot as #d::Num>::min),
                    BinOp::Max => quote!(<#ot as #d::Num>::max),
                    BinOp::Lt => quote!(<#ot as #d::Num>::lt),
                    BinOp::Le => quote!(<#ot as #d::Num>::le),
                    BinOp::Gt => quote!(<#ot as #d::Num>::gt),
                    BinOp::Ge => quote!(<#ot as #d::Num>::ge),
                    BinOp::Eq => quote!(<#ot as #d::Num>::eq),
                    BinOp::Ne => quote!(<#ot as #d::Num>::ne),
                    BinOp::And => quote!(<#ot as #d::Int>::and),
                    BinOp::Or => quote!(<#ot as #d::Int>::or),
                    BinOp::Xor => quote!(<#ot as #d::Int>::xor),
                    BinOp::Shl => quote!(<#ot as #d::Int>::shl),
                    BinOp::Shr => quote!(<#ot as #d::Int>::shr),
                };
                quote!(#f(#va, #vb))
            }
            ExprKind::PtrAdd(p, o) => {
                let (vp, vo) = (self.operand(id, *p, at), self.operand(id, *o, at));
                quote!(#d::ptr_add(#vp, #vo))
            }
            ExprKind::Cast(x) => {
                let from = self.elem(&k.exprs[*x].ty);
                let v = self.operand(id, *x, at);
                quote!(#d::cast::<#from, #t>(#v))
            }
            ExprKind::ExpandDims(x, _) | ExprKind::Reshape(x) => {
                // Row-major flat order is unchanged.
                if self.shapes[*x].is_empty() {
                    self.ev(*x, &At::Own)
                } else {
                    self.ev(*x, at)
                }
            }
            ExprKind::BroadcastTo(x) => self.operand(id, *x, at),
            ExprKind::Trans(x) => {
                let s = &self.shapes[id];
                let (r0, r1) = (s[0], s[1]);
                let f = self.idx(at);
                let flat = quote!({ let __tf: usize = #f; (__tf % #r1) * #r0 + __tf / #r1 });
                let child = match self.bit_map(at, r0 * r1).filter(|_| r0.is_power_of_two() && r1.is_power_of_two()) {
                    // The child's column bits are the row bits here, and its row bits the columns.
                    Some(m) => {
                        let (b0, b1) = (r0.trailing_zeros() as usize, r1.trailing_zeros() as usize);
                        At::Mapped(flat, m[b1..b1 + b0].iter().chain(&m[..b1]).copied().collect())
                    }
                    None => At::Flat(flat),
                };
                self.ev(*x, &child)
            }
            ExprKind::Math(m, xs) => {
                let xt = self.elem(&k.exprs[xs[0]].ty);
                let vs: Vec<TokenStream> = xs.iter().map(|x| self.operand(id, *x, at)).collect();
                let f = format_ident!("{}", m.name());
                let tr = if k.exprs[xs[0]].ty.dtype().is_some_and(|d| d.is_float()) { quote!(Float) } else { quote!(Int) };
                quote!(<#xt as #d::#tr>::#f(#(#vs),*))
            }
            ExprKind::Where(c, a, b) => {
                let (vc, va, vb) = (self.operand(id, *c, at), self.operand(id, *a, at), self.operand(id, *b, at));
                quote!(if #vc { #va } else { #vb })
            }
            ExprKind::Load { ptr, mask, other } => {
                if matches!(at, At::Own) {
                    if let Some(chunk) = self.prefetched.borrow().get(&id) {
                        return quote!(#chunk[__v]);
                    }
                }
                let p = self.operand(id, *ptr, at);
                let o = match other {
                    Some(o) => self.operand(id, *o, at),
                    None => quote!(<#t as ::core::default::Default>::default()),
                };
                let ok = self.in_bounds_code(*ptr, &quote!(__a), e.span.start);
                let vm = match mask {
                    Some(m) => self.operand(id, *m, at),
                    None => quote!(true),
                };
                quote!({ let __a = #p; if #vm && #ok { #d::load(__a) } else { #o } })
            }
            ExprKind::Random { kind, seed, offset, four, word, rounds } => {
                let (vs, vo) = (self.operand(id, *seed, at), self.operand(id, *offset, at));
                let (f, idx) = if *four {
                    let w = *word as usize;
                    (format_ident!("{}4x_rounds", kind.name()), quote!([#w]))
                } else {
                    (format_ident!("{}_rounds", kind.name()), quote!())
                };
                quote!(::kernel_std::random::#f((#vs) as u64, #vo, #rounds)#idx)
            }
            ExprKind::Atomic { op, ptr, val, cmp, mask, sem, scope } => {
                // Evaluated once per element: it is the whole value of its own `let`.
                let p = self.operand(id, *ptr, at);
                let v = self.operand(id, *val, at);
                let ok = self.in_bounds_code(*ptr, &quote!(__a), e.span.start);
                let vm = match mask {
                    Some(m) => self.operand(id, *m, at),
                    None => quote!(true),
                };
                let (sem, scope) = (*sem as u8, *scope as u8);
                let f = format_ident!("{}", op.name());
                let call = match cmp {
                    Some(c) => {
                        let vc = self.operand(id, *c, at);
                        quote!(<#t as #d::AtomicElem>::cas::<#sem, #scope>(__a, #vc, #v))
                    }
                    None if matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor) => quote!(<#t as #d::AtomicInt>::#f::<#sem, #scope>(__a, #v)),
                    None => quote!(<#t as #d::AtomicElem>::#f::<#sem, #scope>(__a, #v)),
                };
                quote!({ let __a = #p; if #vm && #ok { #call } else { <#t as ::core::default::Default>::default() } })
            }
            ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } => {
                // Hoisted before the statement; reaching here is an internal error.
                quote!(::core::unreachable!())
            }
        }
    }

    /// `program_id(axis)` (an `i32`). In an entry that may split its K loop, the program along
    /// x is the block's (`split.rs`), not the block index.
    fn program_id_code(&self, axis: u8) -> TokenStream {
        let d = &self.d;
        if axis == 0 && self.split.is_some() {
            return quote!((__sk.pid as i32));
        }
        let a = axis as u32;
        quote!(#d::program_id(#a))
    }

    // ---------------------------------------------------------------- phases

    /// A loop over the owned elements of a block of `numel` elements in the cyclic layout.
    fn phase(&self, numel: usize, body: impl FnOnce(&Self) -> TokenStream) -> TokenStream {
        self.phase_in(numel, Layout::Cyclic, body)
    }

    /// Code running `body` for each element this thread owns in `layout`; `body` is generated
    /// once with that iteration context (`__j` = register slot, `__f` = flat index). Values
    /// it reads at other threads' coordinates are staged in shared memory first.
    fn phase_in(&self, numel: usize, layout: Layout, body: impl FnOnce(&Self) -> TokenStream) -> TokenStream {
        let scope = self.enter_iteration(numel, layout);
        let b = body(self);
        let staged = self.leave_iteration(scope);
        let (pre, post) = self.staging(&staged);
        let main = self.for_each_slot(numel, layout, b);
        quote! {
            #pre
            #main
            #post
        }
    }

    /// Enters the iteration context element code is generated in (`numel` elements in `layout`;
    /// `numel = 0` for code at explicit flat indices), with no staged values yet.
    fn enter_iteration(&self, numel: usize, layout: Layout) -> IterScope {
        IterScope { numel: self.iter_numel.replace(numel), layout: self.iter_layout.replace(layout), staged: self.staged.replace(vec![]) }
    }

    /// Restores the outer iteration context; returns the values the code generated inside read
    /// at other threads' coordinates (to stage in shared memory).
    fn leave_iteration(&self, scope: IterScope) -> Vec<(MatVar, usize)> {
        self.iter_numel.set(scope.numel);
        self.iter_layout.set(scope.layout);
        self.staged.replace(scope.staged)
    }

    /// Code before and after a phase that reads `staged` values: each is copied to its shared
    /// memory slot by its owners, between barriers.
    fn staging(&self, staged: &[(MatVar, usize)]) -> (TokenStream, TokenStream) {
        if staged.is_empty() {
            return (quote!(), quote!());
        }
        let d = &self.d;
        let stage_code = staged.iter().map(|(m, off)| {
            let (id, e) = (&m.ident, &m.elem);
            let st = quote!(#d::store((__smem.add(#off) as *mut #e).add(__f), #id[__j]););
            self.for_each_slot(m.numel, m.layout, st)
        });
        (quote!(#(#stage_code)* #d::bar_sync();), quote!(#d::bar_sync();))
    }

    /// `body` for every register slot of this thread, unrolled in the `mma` layout (so accumulator
    /// arrays stay in registers) and in the cyclic layout as [`Self::slot_loop`] decides.
    fn for_each_slot(&self, numel: usize, layout: Layout, body: TokenStream) -> TokenStream {
        match layout {
            Layout::Cyclic if self.vec_width(numel) > 1 => {
                let (threads, v) = (self.threads, self.vec_width(numel));
                let chunks = self.per_thread(numel) / v;
                // Every chunk is whole and in range (see `vec_width`).
                let copies = self.unrolled(v, quote!(__v), quote!(let __j: usize = __jc * #v + __v; let __f: usize = __f0 + __v; #body));
                self.slot_loop(chunks, quote!(__jc), quote! {
                    let __f0: usize = (__jc * #threads + __tid) * #v;
                    #copies
                })
            }
            Layout::Cyclic => {
                let threads = self.threads;
                let pt = self.per_thread(numel);
                self.slot_loop(pt, quote!(__j), quote! {
                    let __f = __tid + __j * #threads;
                    if __f < #numel { #body }
                })
            }
            Layout::Mma { .. } => {
                let f = Self::mma_flat_at(layout, &quote!(__j));
                self.unrolled(self.slots(numel, layout), quote!(__j), quote!(let __f: usize = #f; #body))
            }
            Layout::MmaRows { .. } => {
                let bits = self.bit_layout(numel, layout).expect("row layouts have power-of-two tiles");
                let f = bits.flat_at(&quote!(__j));
                self.unrolled(self.slots(numel, layout), quote!(__j), quote!(let __f: usize = #f; #body))
            }
        }
    }

    /// Computes every `dot` and reduction inside `root` (innermost first) into temporaries.
    fn hoist(&self, root: ExprId, out: &mut TokenStream) {
        let k = self.k;
        for c in k.exprs[root].kind.operands() {
            self.hoist(c, out);
        }
        match &k.exprs[root].kind {
            ExprKind::Dot { a, b, acc } => out.extend(self.gen_dot(root, *a, *b, *acc)),
            ExprKind::Reduce { op, x, axis } => out.extend(self.gen_reduce(root, *op, *x, *axis)),
            ExprKind::Scan { op, x, axis, reverse } => out.extend(self.gen_scan(root, *op, *x, *axis, *reverse)),
            ExprKind::ReduceWith { x, axis, f } => out.extend(self.gen_reduce_with(root, *x, *axis, *f)),
            _ => {}
        }
    }

    fn gen_dot(&self, id: ExprId, a: ExprId, b: ExprId, acc: Option<ExprId>) -> TokenStream {
        if let Some(layout) = self.tiling(id) {
            return self.gen_dot_mma(id, a, b, acc, layout);
        }
        let d = &self.d;
        let (sa, sb) = (self.shapes[a].clone(), self.shapes[b].clone());
        let (m, kk, n) = (sa[0], sa[1], sb[1]);
        let (ea, eb) = (self.elem(&self.k.exprs[a].ty), self.elem(&self.k.exprs[b].ty));
        let off_a = self.alloc(m * kk * elem_size(&self.k.exprs[a].ty.elem));
        let off_b = self.alloc(kk * n * elem_size(&self.k.exprs[b].ty.elem));
        // f32 sums of f32 products, or i32 sums (wrapping) of the exact products of 8-bit integers.
        let int = self.k.exprs[id].ty.dtype() == Some(DType::I32);
        let (acc_t, zero) = if int { (quote!(i32), quote!(0i32)) } else { (quote!(f32), quote!(0.0f32)) };
        let mac = if int {
            quote! {
                let __x = <#ea as #d::Elem>::to_i64(#d::load(__pa.add(__k))) as i32;
                let __y = <#eb as #d::Elem>::to_i64(#d::load(__pb.add(__k * #n))) as i32;
                __s = __s.wrapping_add(__x.wrapping_mul(__y));
            }
        } else {
            quote! {
                let __x = <#ea as #d::Elem>::to_f32(#d::load(__pa.add(__k)));
                let __y = <#eb as #d::Elem>::to_f32(#d::load(__pb.add(__k * #n)));
                __s = #d::fma(__x, __y, __s);
            }
        };
        let stage_a = self.phase(m * kk, |g| {
            let v = g.ev(a, &At::Own);
            quote!(#d::store((__smem.add(#off_a) as *mut #ea).add(__f), #v);)
        });
        let stage_b = self.phase(kk * n, |g| {
            let v = g.ev(b, &At::Own);
            quote!(#d::store((__smem.add(#off_b) as *mut #eb).add(__f), #v);)
        });
        let out = self.fresh("dot");
        let pt = self.per_thread(m * n);
        let compute = self.phase(m * n, |g| {
            let init = match acc {
                Some(x) => g.ev(x, &At::Own),
                None => zero.clone(),
            };
            quote! {
                let __row = __f / #n;
                let __col = __f % #n;
                let __pa = (__smem.add(#off_a) as *mut #ea).add(__row * #kk);
                let __pb = (__smem.add(#off_b) as *mut #eb).add(__col);
                let mut __s: #acc_t = #init;
                for __k in 0..#kk {
                    #mac
                }
                #out[__j] = __s;
            }
        });
        self.temps.borrow_mut().insert(id, MatVar { ident: out.clone(), elem: acc_t.clone(), numel: m * n, layout: Layout::Cyclic });
        quote! {
            let mut #out: [#acc_t; #pt] = [#zero; #pt];
            #stage_a
            #stage_b
            #d::bar_sync();
            #compute
            #d::bar_sync();
        }
    }

    /// Tensor-core `dot`: both operands are staged in shared memory (row-major, swizzled); each
    /// warp loads its fragments with `ldmatrix` and accumulates `tm x tn` tiles with
    /// `mma.sync.m16n8k16` in f32 registers (the `mma` layout).
    fn gen_dot_mma(&self, id: ExprId, a: ExprId, b: ExprId, acc: Option<ExprId>, layout: Layout) -> TokenStream {
        let d = &self.d;
        let Layout::Mma { tm, tn, n, .. } = layout else { return quote!() };
        let (sa, sb) = (self.shapes[a].clone(), self.shapes[b].clone());
        let (m, kk) = (sa[0], sa[1]);
        debug_assert_eq!(sb[1], n);
        let (align, fence) = self.operand_staging(layout);
        let reg_a = self.register_a(a, layout, kk);
        let (off_a, stage_a, staging_a) = match reg_a {
            Some(_) => (quote!(0usize), quote!(), Staging::Rows),
            None => self.operand_source(a, layout, (m, kk), align),
        };
        let (off_b, stage_b, staging_b) = self.operand_source(b, layout, (kk, n), align);
        let out = self.fresh("mma");
        let slots = tm * tn * 4;
        // 8-bit integers: the instruction sums into `out` from zero (f32, exact), then the sums
        // are added to the i32 accumulator `sums`.
        let sums = (self.k.exprs[id].ty.dtype() == Some(DType::I32)).then(|| self.fresh("sums"));
        let init = self.phase_in(m * n, layout, |g| {
            let v = match acc {
                Some(x) => g.ev(x, &At::Own),
                None if sums.is_some() => quote!(0i32),
                None => quote!(0.0f32),
            };
            let to = sums.as_ref().unwrap_or(&out);
            quote!(#to[__j] = #v;)
        });
        let (sa, sb) = (quote!(#d::smem_addr() + #off_a as u32), quote!(#d::smem_addr() + #off_b as u32));
        let compute = if let Some((fill, ar)) = &reg_a {
            let (setup, issue, finish) = self.wgmma_compute_rs(layout, kk, &out, sb, staging_b, ar);
            quote!({ #fill #setup #issue #finish })
        } else if (staging_a, staging_b) == (Staging::Rows, Staging::Rows) {
            self.mma_compute(a, layout, kk, &out, sa, sb)
        } else {
            let (setup, issue, finish) = self.wgmma_compute(a, layout, kk, &out, (sa, sb), None, [staging_a, staging_b]);
            quote!({ #setup #issue #finish })
        };
        // With integer sums, their array is declared where the accumulator's value goes in.
        let (result, elem, init) = match &sums {
            Some(s) => (s.clone(), quote!(i32), quote! {
                let mut #s: [i32; #slots] = [0i32; #slots];
                #init
            }),
            None => (out.clone(), quote!(f32), init),
        };
        let add_sums = sums.as_ref().map(|s| quote! {
            for __j in 0..#slots {
                #s[__j] = #s[__j].wrapping_add(#out[__j] as i32);
            }
        });
        self.temps.borrow_mut().insert(id, MatVar { ident: result, elem, numel: m * n, layout });
        // Operands the statement staged may be overwritten by the next statement: a barrier
        // after the product, unless every operand lives across the loop's statements.
        let lasting = |x: ExprId| self.resident.borrow().contains_key(&x) || self.ahead.borrow().contains_key(&x);
        let free = self.followed.contains(&id) && (reg_a.is_some() || lasting(a)) && lasting(b);
        let after = (!free).then(|| quote!(#d::bar_sync();));
        quote! {
            let mut #out: [f32; #slots] = [0.0f32; #slots];
            #init
            #stage_a
            #stage_b
            #fence
            #d::bar_sync();
            #compute
            #add_sums
            #after
        }
    }

    /// The alignment of staged operand tiles of a tensor-core `dot` in `layout`, and the fence
    /// that makes the staging writes visible to the instruction before the barrier: `wgmma`
    /// tiles start on whole 1024-byte swizzle patterns and are read through the async proxy.
    fn operand_staging(&self, layout: Layout) -> (usize, TokenStream) {
        let d = &self.d;
        match layout {
            Layout::Mma { wg: true, .. } => (1024, quote!(#d::fence_proxy_async();)),
            _ => (16, quote!()),
        }
    }

    /// The swizzle of a staged 16-bit operand with rows of `inner` elements, as
    /// `(rows per 128-byte line, period)`: 16-byte chunk `c` of row `r` is stored at chunk
    /// `c ^ ((r / rows_per_line) % period)` of its row, so the 8 rows that one `ldmatrix`
    /// matrix reads at the same logical chunk hit 8 different groups of banks. `None` (no
    /// swizzle) when a row has one chunk or a chunk count that is not a power of two.
    fn swizzle(inner: usize) -> Option<(usize, usize)> {
        let chunks = inner / 8;
        if !inner.is_multiple_of(8) || chunks < 2 || !chunks.is_power_of_two() {
            return None;
        }
        Some(((8 / chunks).max(1), chunks.min(8)))
    }

    /// Element index in shared memory of 16-byte chunk `chunk` of row `row` of a staged operand.
    fn swz_chunk(inner: usize, row: TokenStream, chunk: TokenStream) -> TokenStream {
        match Self::swizzle(inner) {
            None => quote!(((#row) * #inner + (#chunk) * 8)),
            Some((per_line, period)) => {
                quote!(({ let __r: usize = #row; __r * #inner + (((#chunk) ^ ((__r / #per_line) % #period)) * 8) }))
            }
        }
    }

    /// Element index in shared memory of row-major flat index `f` of a staged operand.
    fn swz_flat(inner: usize, f: TokenStream) -> TokenStream {
        if Self::swizzle(inner).is_none() {
            return f;
        }
        let base = Self::swz_chunk(inner, quote!(__sf / #inner), quote!((__sf % #inner) / 8));
        quote!(({ let __sf: usize = #f; #base + __sf % 8 }))
    }

    /// The inner loop of a tensor-core `dot` over operands staged (swizzled) at shared addresses
    /// `sa` (`[M, kk]`) and `sb` (`[kk, N]`), accumulating into the `mma`-layout array `acc`.
    /// Unrolled over the `kk / 16` steps: A fragments with `ldmatrix.x4`, the B fragments of two
    /// adjacent 8-column tiles with one `ldmatrix.x4.trans` (`x2.trans` for an odd last tile).
    fn mma_compute(&self, a: ExprId, layout: Layout, kk: usize, acc: &Ident, sa: TokenStream, sb: TokenStream) -> TokenStream {
        let d = &self.d;
        let Layout::Mma { wn, tm, tn, n, wg, .. } = layout else { return quote!() };
        if wg {
            let (setup, issue, finish) = self.wgmma_compute(a, layout, kk, acc, (sa, sb), None, [Staging::Rows; 2]);
            return quote!({ #setup #issue #finish });
        }
        let mma = if self.k.exprs[a].ty.dtype() == Some(DType::BF16) { quote!(#d::mma_bf16) } else { quote!(#d::mma_f16) };
        let wtm = tm * 16;
        // The `tm` tiles of B fragment `frag` at column tile `j` (a `usize` expression).
        let mmas = |j: TokenStream, frag: TokenStream| -> TokenStream {
            self.unrolled(
                tm,
                quote!(__i),
                quote! {
                    let __b: usize = (__i * #tn + #j) * 4;
                    let __d = #mma(__af[__i], #frag, [#acc[__b], #acc[__b + 1], #acc[__b + 2], #acc[__b + 3]]);
                    #acc[__b] = __d[0]; #acc[__b + 1] = __d[1]; #acc[__b + 2] = __d[2]; #acc[__b + 3] = __d[3];
                },
            )
        };
        // One 16-wide step `__ks` of K: the A fragments of the `tm` row tiles, then the B
        // fragments of column tiles `2 __jp, 2 __jp + 1` (and of an odd last one).
        let a_idx = Self::swz_chunk(kk, quote!((__warp / #wn) * #wtm + __i * 16 + __lane % 16), quote!(__ks * 2 + __lane / 16));
        let a_frags = self.unrolled(tm, quote!(__i), quote!(__af[__i] = #d::ldmatrix_x4(__sa + (#a_idx * 2) as u32);));
        let pair_idx = Self::swz_chunk(n, quote!(__ks * 16 + __lane % 16), quote!((__warp % #wn) * #tn + 2 * __jp + __lane / 16));
        let (m0, m1) = (mmas(quote!(2 * __jp), quote!([__bq[0], __bq[1]])), mmas(quote!(2 * __jp + 1), quote!([__bq[2], __bq[3]])));
        let pairs = self.unrolled(
            tn / 2,
            quote!(__jp),
            quote! {
                let __bq = #d::ldmatrix_x4_trans(__sb + (#pair_idx * 2) as u32);
                #m0
                #m1
            },
        );
        let odd = (tn % 2 == 1).then(|| {
            let j = tn - 1;
            let idx = Self::swz_chunk(n, quote!(__ks * 16 + __lane % 16), quote!((__warp % #wn) * #tn + #j));
            let m = mmas(quote!(#j), quote!(__bq));
            quote! {
                let __bq = #d::ldmatrix_x2_trans(__sb + (#idx * 2) as u32);
                #m
            }
        });
        let step = quote! {
            let mut __af: [[u32; 4]; #tm] = [[0u32; 4]; #tm];
            #a_frags
            #pairs
            #odd
        };
        let steps = self.unrolled(kk / 16, quote!(__ks), step);
        quote! {{
            let __sa: u32 = #sa;
            let __sb: u32 = #sb;
            #steps
        }}
    }

    /// The `wgmma` version of [`Self::mma_compute`] (sm_90a): each warpgroup issues, for every
    /// 16-wide step of K and every 64-row tile it owns, one `wgmma.mma_async.m64n'k16` reading
    /// A and B straight from shared memory, staged as `staging` says (`Staging::Rows`: A
    /// K-major, B N-major; `Staging::Cols`: the transposes, see [`Staging`]), then waits for the
    /// group. The shared memory it reads must
    /// have been made visible to the async proxy (`fence_proxy_async` before the barrier).
    /// Returns the issue (the tensor cores then run while the threads go on) and the wait after
    /// which the accumulators may be read and the operand tiles overwritten.
    ///
    /// With `stage = Some(bytes)`, `sa` and `sb` are the addresses in buffer 0 of a pipeline whose
    /// buffers are `bytes` apart and the issue reads buffer `__cb`: the set-up (placed before the
    /// loop) builds the buffer-0 descriptors once, and the issue adds `__cb`'s offset to their
    /// address fields (one multiply-add each). Otherwise the set-up is empty and the issue builds
    /// the descriptors from `sa` and `sb`.
    #[allow(clippy::too_many_arguments)]
    fn wgmma_compute(&self, a: ExprId, layout: Layout, kk: usize, acc: &Ident, (sa, sb): (TokenStream, TokenStream), stage: Option<usize>, staging: [Staging; 2]) -> (TokenStream, TokenStream, TokenStream) {
        let d = &self.d;
        let Layout::Mma { wm, wn, tm, tn, n, .. } = layout else { return (quote!(), quote!(), quote!()) };
        let np = tn * 8;
        let bf16 = self.k.exprs[a].ty.dtype() == Some(DType::BF16);
        let f = format_ident!("wgmma_m64n{}k16_{}", np, if bf16 { "bf16" } else { "f16" });
        let slots = tm * tn * 4;
        let (ta, tb) = (u32::from(staging[0] == Staging::Cols), u32::from(staging[1] == Staging::Rows));
        let operand = |x, wg, per_wg, k_major| wgmma_operand(kk, x, wg, per_wg, k_major);
        let ((lbo_a, sbo_a, row_a), first_a, off_a) = operand(wm * tm * 64, quote!((__wg / #wn)), tm * 64, ta == 0);
        let ((lbo_b, sbo_b, row_b), first_b, off_b) = operand(n, quote!((__wg % #wn)), np, tb == 0);
        let f = &f;
        let calls = (0..kk / 16).flat_map(|ks| {
            let (off_a, off_b) = (&off_a, &off_b);
            (0..tm).map(move |t| {
                let off = t * tn * 4;
                let da = (off_a(ks, t) >> 4) as u64;
                let db = (off_b(ks, 0) >> 4) as u64;
                quote!(#d::#f::<#slots, #off, #ta, #tb>(&mut #acc, __da + #da, __db + #db);)
            })
        });
        let descs = quote! {
            let __wg: usize = __warp / 4;
            let __da: u64 = #d::wgmma_desc(#sa + #first_a, #lbo_a as u32, #sbo_a as u32, #d::wgmma_swizzle_mode(#row_a));
            let __db: u64 = #d::wgmma_desc(#sb + #first_b, #lbo_b as u32, #sbo_b as u32, #d::wgmma_swizzle_mode(#row_b));
        };
        let (setup, descs) = match stage {
            // A descriptor's address field is the shared address over 16 (14 bits: shared memory
            // is below 256 KiB, so adding a buffer's offset never carries out of the field).
            Some(bytes) => {
                let step = (bytes >> 4) as u32;
                (
                    quote!(let (__da0, __db0): (u64, u64) = { #descs (__da, __db) };),
                    quote! {
                        let __da: u64 = __da0 + ((__cb as u32) * #step) as u64;
                        let __db: u64 = __db0 + ((__cb as u32) * #step) as u64;
                    },
                )
            }
            None => (quote!(), descs),
        };
        let (issue, finish) = self.wgmma_group(layout, acc, descs, calls.collect());
        (setup, issue, finish)
    }

    /// The issue of one `wgmma` group (descriptors `descs`, then `calls` between the fence and
    /// the commit) and its finish (the wait, then the accumulator tiles of `layout` in `acc`
    /// tied after it).
    fn wgmma_group(&self, layout: Layout, acc: &Ident, descs: TokenStream, calls: Vec<TokenStream>) -> (TokenStream, TokenStream) {
        let d = &self.d;
        let Layout::Mma { tm, tn, .. } = layout else { return (quote!(), quote!()) };
        let tie = format_ident!("wgmma_tie_n{}", tn * 8);
        let slots = tm * tn * 4;
        let ties = (0..tm).map(|t| {
            let off = t * tn * 4;
            quote!(#d::#tie::<#slots, #off>(&mut #acc);)
        });
        let issue = quote! {{
            #descs
            #d::wgmma_fence();
            #(#calls)*
            #d::wgmma_commit();
        }};
        let finish = quote! {
            #d::wgmma_wait::<0>();
            #(#ties)*
        };
        (issue, finish)
    }

    /// The A operand of a `wgmma` `dot` in `layout` (depth `kk`) taken from the threads'
    /// registers instead of shared memory: an f16 cast of f32 values computed elementwise from
    /// a block in a `wgmma` accumulator layout with the same warpgroups and row tiles (one
    /// warpgroup per row block) and `kk` columns, such as flash attention's `p.to::<f16>()`. The
    /// accumulator of an `m64nK` tile holds, in each thread, the elements the A fragments of
    /// the 16-wide steps of K need (slots `4 t_n + {0, 1}` and `4 t_n + {2, 3}` of column tiles
    /// `t_n = 2 ks, 2 ks + 1`), so no value moves between threads. Returns the code filling the
    /// fragments (`[u32; 4 * tm * kk / 16]`, four per row tile and step) and their array.
    fn register_a(&self, a: ExprId, layout: Layout, kk: usize) -> Option<(TokenStream, Ident)> {
        let d = &self.d;
        let Layout::Mma { wm, wn: 1, tm, wg: true, .. } = layout else { return None };
        let src = self.elementwise_mma_source(a, &self.shapes[a], &self.layouts)?;
        let Layout::Mma { wm: wm_a, wn: 1, tm: tm_a, tn: tn_a, n: n_a, wg: true } = src else { return None };
        if (wm_a, tm_a, n_a, tn_a * 8) != (wm, tm, kk, kk) || self.k.exprs[a].ty.dtype() != Some(DType::F16) {
            return None;
        }
        let value_fn = self.cast_slot_fn(a, self.numel(a), src)?;
        let steps = kk / 16;
        let regs = (0..tm).flat_map(|t| {
            (0..steps).flat_map(move |ks| {
                (0..4).map(move |q| {
                    let j = t * 4 * tn_a + (2 * ks + q / 2) * 4 + (q % 2) * 2;
                    let j1 = j + 1;
                    quote!(#d::pack_f16x2(__val(#j), __val(#j1)))
                })
            })
        });
        let n = tm * steps * 4;
        let ar = self.fresh("ar");
        let fill = quote! {
            let #ar: [u32; #n] = {
                #value_fn
                [#(#regs),*]
            };
        };
        Some((fill, ar))
    }

    /// [`Self::wgmma_compute`] with A in registers (`ar`, from [`Self::register_a`]) and B staged
    /// at shared address `sb` as `staging_b` says.
    fn wgmma_compute_rs(&self, layout: Layout, kk: usize, acc: &Ident, sb: TokenStream, staging_b: Staging, ar: &Ident) -> (TokenStream, TokenStream, TokenStream) {
        let d = &self.d;
        let Layout::Mma { wn, tm, tn, n, .. } = layout else { return (quote!(), quote!(), quote!()) };
        let np = tn * 8;
        // f16 only: `register_a` packs the fragments with `cvt.rn.f16x2.f32`.
        let f = format_ident!("wgmma_m64n{}k16_f16_rs", np);
        let slots = tm * tn * 4;
        let tb = u32::from(staging_b == Staging::Rows);
        let ((lbo_b, sbo_b, row_b), first_b, off_b) = wgmma_operand(kk, n, quote!((__wg % #wn)), np, tb == 0);
        let steps = kk / 16;
        let calls = (0..steps).flat_map(|ks| {
            let (off_b, f) = (&off_b, &f);
            (0..tm).map(move |t| {
                let off = t * tn * 4;
                let db = (off_b(ks, 0) >> 4) as u64;
                let r = (t * steps + ks) * 4;
                let (r1, r2, r3) = (r + 1, r + 2, r + 3);
                quote!(#d::#f::<#slots, #off, #tb>(&mut #acc, [#ar[#r], #ar[#r1], #ar[#r2], #ar[#r3]], __db + #db);)
            })
        });
        let descs = quote! {
            let __wg: usize = __warp / 4;
            let __db: u64 = #d::wgmma_desc(#sb + #first_b, #lbo_b as u32, #sbo_b as u32, #d::wgmma_swizzle_mode(#row_b));
        };
        let (issue, finish) = self.wgmma_group(layout, acc, descs, calls.collect());
        (quote!(), issue, finish)
    }

    /// An f16 block in an `mma` layout cast from an f32 one (`acc.to::<f16>()`), assigned to
    /// array `id`: slots `2i, 2i + 1` (adjacent columns) are converted by one `cvt.rn.f16x2.f32`
    /// and split, so that a store packing them again gets the word back unchanged. `None`
    /// otherwise, or when the value reads other threads' elements.
    fn cast_pairs_f16(&self, id: &Ident, numel: usize, layout: Layout, ty: &Ty, value: ExprId) -> Option<TokenStream> {
        let d = &self.d;
        if !matches!(layout, Layout::Mma { .. }) || ty.elem != Elem::Val(DType::F16) {
            return None;
        }
        let value_fn = self.cast_slot_fn(value, numel, layout)?;
        let pairs = self.unrolled(
            self.slots(numel, layout) / 2,
            quote!(__p),
            quote! {
                let __w: u32 = #d::pack_f16x2(__val(2 * __p), __val(2 * __p + 1));
                #id[2 * __p] = #d::F16(__w as u16);
                #id[2 * __p + 1] = #d::F16((__w >> 16) as u16);
            },
        );
        Some(quote!({ #value_fn #pairs }))
    }

    /// For `value`, a cast of an f32 block of `numel` elements in the `mma` layout `layout`: the
    /// closure `__val(j)` (bound by the returned statement) giving the f32 value of this thread's
    /// slot `j`, to be converted in pairs. `None` when `value` is no such cast or its f32 values
    /// read other threads' elements.
    fn cast_slot_fn(&self, value: ExprId, numel: usize, layout: Layout) -> Option<TokenStream> {
        let d = &self.d;
        let x = self.cast_from_f32(value)?;
        let scope = self.enter_iteration(numel, layout);
        let xv = self.ev(x, &At::Own);
        if !self.leave_iteration(scope).is_empty() {
            return None;
        }
        let flat = Self::mma_flat_at(layout, &quote!(__j));
        Some(quote! {
            let __val = #d::inline_fn(#[inline(always)] |__j: usize| -> f32 { let __f: usize = #flat; #xv });
        })
    }

    /// `x` when `e` is a cast of the f32 block `x` (directly or through locals evaluated at
    /// their uses), so that its values can be converted in pairs.
    fn cast_from_f32(&self, e: ExprId) -> Option<ExprId> {
        match &self.k.exprs[e].kind {
            ExprKind::Cast(x) if self.k.exprs[*x].ty.elem == Elem::Val(DType::F32) => Some(*x),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) => self.cast_from_f32(v),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value `id` computed into shared memory by `code` (which ends past a barrier), read
    /// into a cyclic temporary: element `f` is `value_at(f)`; a scalar result is uniform, and
    /// every thread reads element 0.
    fn smem_result(&self, id: ExprId, prefix: &str, code: TokenStream, value_at: impl Fn(TokenStream) -> TokenStream) -> TokenStream {
        let d = &self.d;
        let t = self.elem(&self.k.exprs[id].ty);
        let out = self.fresh(prefix);
        if self.shapes[id].is_empty() {
            self.temps.borrow_mut().insert(id, MatVar { ident: out.clone(), elem: t.clone(), numel: 0, layout: Layout::Cyclic });
            let v = value_at(quote!(0usize));
            return quote! {
                #code
                let #out: #t = #v;
                #d::bar_sync();
            };
        }
        let nout: usize = self.shapes[id].iter().product();
        let pt = self.per_thread(nout);
        let v = value_at(quote!(__f));
        let gather = self.phase(nout, |_| quote!(#out[__j] = #v;));
        self.temps.borrow_mut().insert(id, MatVar { ident: out.clone(), elem: t.clone(), numel: nout, layout: Layout::Cyclic });
        quote! {
            let mut #out: [#t; #pt] = unsafe { ::core::mem::zeroed() };
            #code
            #gather
            #d::bar_sync();
        }
    }

    /// An inclusive scan along `axis`, gathered into a cyclic temporary (see [`Self::scan_code`]).
    fn gen_scan(&self, id: ExprId, op: ScanOp, x: ExprId, axis: usize, reverse: bool) -> TokenStream {
        let d = &self.d;
        let (code, off, acc_t, from_acc) = self.scan_code(op, x, axis, reverse);
        self.smem_result(id, "scan", code, |f| quote!(#from_acc(#d::load((__smem.add(#off) as *mut #acc_t).add(#f)))))
    }

    /// `reduce(x, axis, combine)`: the forward scan with the combine function, whose last
    /// element of each line is the line's result.
    fn gen_reduce_with(&self, id: ExprId, x: ExprId, axis: usize, c: Combine) -> TokenStream {
        let d = &self.d;
        let sx = &self.shapes[x];
        let (code, off, acc_t, _) = self.scan_code(ScanOp::Combine(c), x, axis, false);
        let (r, inner) = (sx[axis], sx[axis + 1..].iter().product::<usize>());
        self.smem_result(id, "red", code, |f| {
            quote!(#d::load((__smem.add(#off) as *mut #acc_t).add((#f / #inner) * (#r * #inner) + #f % #inner + (#r - 1) * #inner)))
        })
    }

    /// Code that scans `x` along `axis` in shared memory, in place, ending past a barrier; gives
    /// the code, the buffer's offset, its element type and the conversion back to `x`'s dtype.
    /// The block is staged in the accumulator type (f32 for f16/bf16 sums and products; the
    /// dtype itself for combine functions); each warp scans lines `warp, warp + W, ...`: every
    /// lane folds a contiguous run of the line, the runs' totals of the lanes before it give its
    /// prefix, and it rescans its run from there. No identity element is needed.
    fn scan_code(&self, op: ScanOp, x: ExprId, axis: usize, reverse: bool) -> (TokenStream, usize, TokenStream, TokenStream) {
        let d = &self.d;
        let sx = self.shapes[x].clone();
        let xt = &self.k.exprs[x].ty;
        let ex = self.elem(xt);
        let nx: usize = sx.iter().product();
        let wide = xt.dtype().is_some_and(DType::is_narrow_float) && !matches!(op, ScanOp::Combine(_));
        let (acc_t, acc_size, to_acc, from_acc) = if wide {
            (quote!(f32), 4usize, quote!(<#ex as #d::Elem>::to_f32), quote!(<#ex as #d::Elem>::from_f32))
        } else {
            (ex.clone(), elem_size(&xt.elem), quote!(), quote!())
        };
        let combine = match op {
            ScanOp::Sum => quote!(<#acc_t as #d::Num>::add),
            ScanOp::Prod => quote!(<#acc_t as #d::Num>::mul),
            ScanOp::Combine(c) => {
                let (a, b) = (crate::expand_cpu::local_ident(self.k, c.a), crate::expand_cpu::local_ident(self.k, c.b));
                let body = self.ev(c.comb, &At::Own);
                quote!((|#a: #acc_t, #b: #acc_t| -> #acc_t { #body }))
            }
        };
        let warps = self.threads / 32;
        let off = self.alloc(nx * acc_size);
        let off_tot = self.alloc(warps * 32 * acc_size);
        let stage = self.phase(nx, |g| {
            let v = g.ev(x, &At::Own);
            quote!(#d::store((__smem.add(#off) as *mut #acc_t).add(__f), #to_acc(#v));)
        });
        let (r, inner) = (sx[axis], sx[axis + 1..].iter().product::<usize>());
        let (lines, run) = (nx / r.max(1), r.div_ceil(32));
        let pos = if reverse { quote!((#r - 1 - __p)) } else { quote!(__p) };
        let code = quote! {
            #stage
            #d::bar_sync();
            {
                let __px = __smem.add(#off) as *mut #acc_t;
                let __pt = (__smem.add(#off_tot) as *mut #acc_t).add(__warp * 32);
                let mut __o: usize = __warp;
                while __o < #lines {
                    let __base = (__o / #inner) * (#r * #inner) + (__o % #inner);
                    let __lo = __lane * #run;
                    let __hi = if __lo + #run < #r { __lo + #run } else { #r };
                    if __lo < __hi {
                        let mut __p: usize = __lo;
                        let mut __a: #acc_t = #d::load(__px.add(__base + #pos * #inner));
                        __p += 1;
                        while __p < __hi {
                            __a = #combine(__a, #d::load(__px.add(__base + #pos * #inner)));
                            __p += 1;
                        }
                        #d::store(__pt.add(__lane), __a);
                    }
                    #d::warp_sync();
                    if __lo < __hi {
                        let mut __p: usize = __lo;
                        // Lane 0 starts from its run's first element, the others from the
                        // totals of the runs before theirs.
                        let mut __pre: #acc_t = if __lane == 0 {
                            let __first = #d::load(__px.add(__base + #pos * #inner));
                            __p += 1;
                            __first
                        } else {
                            #d::load(__pt)
                        };
                        let mut __l: usize = 1;
                        while __l < __lane {
                            __pre = #combine(__pre, #d::load(__pt.add(__l)));
                            __l += 1;
                        }
                        while __p < __hi {
                            let __e = __px.add(__base + #pos * #inner);
                            __pre = #combine(__pre, #d::load(__e));
                            #d::store(__e, __pre);
                            __p += 1;
                        }
                    }
                    #d::warp_sync();
                    __o += #warps;
                }
            }
            #d::bar_sync();
        };
        (code, off, acc_t, from_acc)
    }

    // ---------------------------------------------------------------- statements

    fn stmt_roots(s: &Stmt) -> Vec<ExprId> {
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } => vec![*value],
            Stmt::Store { ptr, value, mask, .. } => {
                let mut v = vec![*ptr, *value];
                v.extend(mask.iter().copied());
                v
            }
            Stmt::For { start, end, step, .. } => vec![*start, *end, *step],
            Stmt::If { cond, .. } => vec![*cond],
            // Its condition is computed by its `pre` statements, inside the loop.
            Stmt::While { .. } | Stmt::Return | Stmt::Barrier => vec![],
            Stmt::Assert { cond, operands, .. } => std::iter::once(*cond).chain(operands.iter().map(|(_, e)| *e)).collect(),
            Stmt::Print { values, .. } => values.clone(),
        }
    }

    fn stmts(&self, stmts: &[Stmt]) -> TokenStream {
        // A nested body (a loop's, a branch's) starts with no barrier known behind it.
        self.synced.set(false);
        self.last.set(false);
        let mut out = TokenStream::new();
        for s in stmts {
            self.gen_stmt(s, &mut out);
        }
        self.synced.set(false);
        out
    }

    /// The kernel's body: as `stmts`, knowing which statement is the last one.
    fn body(&self, stmts: &[Stmt]) -> TokenStream {
        self.synced.set(false);
        let mut out = TokenStream::new();
        for (i, s) in stmts.iter().enumerate() {
            // The last loop gets the code after it, for its fallback.
            if let Stmt::For { var, .. } = s {
                if self.outlines_cold_code() && plan::split::count_loops(&stmts[i + 1..]) == 0 {
                    let rest = self.after_loop(&stmts[i + 1..]);
                    self.tail.replace(Some((*var, rest)));
                }
            }
            let last = i + 1 == stmts.len();
            self.last.set(last);
            self.gen_stmt(s, &mut out);
            self.tail.replace(None);
        }
        self.last.set(false);
        out
    }

    /// Whether this body runs its cold paths out of line (`kernel_std::device::outline`): the
    /// `wgmma` bodies of plain entries (in split entries ptxas spilled with the calls: up to 12
    /// bytes in the 128x128x32 instance).
    fn outlines_cold_code(&self) -> bool {
        self.target.has_wgmma() && self.split.is_none()
    }

    /// The code of `stmts`, the rest of the kernel's body after a software-pipelined loop (which
    /// ends past a block barrier), generated as `body` generates it there; the generator's state
    /// is left as it was.
    fn after_loop(&self, stmts: &[Stmt]) -> TokenStream {
        let (synced, last) = (self.synced.get(), self.last.get());
        self.synced.set(true);
        let mut out = TokenStream::new();
        for (i, s) in stmts.iter().enumerate() {
            self.last.set(i + 1 == stmts.len());
            self.gen_stmt(s, &mut out);
        }
        self.synced.set(synced);
        self.last.set(last);
        out
    }

    /// One statement (its hoisted `dot`s and reductions first), keeping `synced` up to date.
    fn gen_stmt(&self, s: &Stmt, out: &mut TokenStream) {
        self.cursor.set(self.floor.get());
        self.temps.borrow_mut().clear();
        let touches = self.touches_global(s);
        let (synced, last) = (self.synced.get(), self.last.get());
        let mut pre = TokenStream::new();
        for r in Self::stmt_roots(s) {
            self.hoist(r, &mut pre);
        }
        out.extend(pre);
        self.synced.set(synced && !self.touches_before_write(s, touches));
        self.last.set(last);
        self.pipelined.set(false);
        out.extend(self.stmt(s));
        // A pipelined loop and a store (a barrier after its writes) both end past a barrier.
        let pipelined = matches!(s, Stmt::For { .. }) && self.pipelined.take();
        let fenced = matches!(s, Stmt::Store { .. });
        self.synced.set(pipelined || fenced || (synced && !touches));
        self.last.set(last);
    }

    /// Whether a statement may read or write global memory: stores, loops, branches and
    /// returns, and assignments whose value loads (through inline locals too).
    fn touches_global(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } => self.loads_in(*value),
            // The fault record they may write is no memory the kernel reads.
            Stmt::Assert { .. } | Stmt::Print { .. } => Self::stmt_roots(s).into_iter().any(|e| self.loads_in(e)),
            Stmt::Barrier => false,
            _ => true,
        }
    }

    /// Whether what a statement evaluates before its own write may touch global memory: for a
    /// store, loads in its pointer, value or mask (hoisted `dot` operands included); for any
    /// other statement, `touches`.
    fn touches_before_write(&self, s: &Stmt, touches: bool) -> bool {
        match s {
            Stmt::Store { ptr, value, mask, .. } => self.loads_in(*ptr) || self.loads_in(*value) || mask.is_some_and(|m| self.loads_in(m)),
            _ => touches,
        }
    }

    fn loads_in(&self, e: ExprId) -> bool {
        match &self.k.exprs[e].kind {
            ExprKind::Load { .. } | ExprKind::Atomic { .. } => true,
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(x) | LocalKind::Affine(x) | LocalKind::Inline(x) => self.loads_in(x),
                LocalKind::Scalar | LocalKind::Materialized => false,
            },
            kind => kind.operands().into_iter().any(|c| self.loads_in(c)),
        }
    }

    fn stmt(&self, s: &Stmt) -> TokenStream {
        let k = self.k;
        let d = &self.d;
        match s {
            Stmt::Let { local, value } | Stmt::Assign { local, value } => {
                let is_let = matches!(s, Stmt::Let { .. });
                let id = crate::expand_cpu::local_ident(k, *local);
                let lty = &k.locals[*local].ty;
                let t = self.elem(lty);
                match &self.kinds[*local] {
                    LocalKind::Scalar if matches!(k.exprs[*value].kind, ExprKind::Atomic { .. }) => {
                        // Once per program, like a scalar store: thread 0 updates memory and
                        // every thread reads the old value it got through shared memory.
                        let v = self.ev(*value, &At::Own);
                        let off = self.alloc(8);
                        quote! {
                            #d::bar_sync();
                            if __tid == 0 {
                                let __old: #t = #v;
                                #d::store(__smem.add(#off) as *mut #t, __old);
                            }
                            #d::bar_sync();
                            let mut #id: #t = #d::load(__smem.add(#off) as *mut #t);
                            #d::bar_sync();
                        }
                    }
                    LocalKind::Scalar => {
                        let v = self.ev(*value, &At::Own);
                        if is_let {
                            quote!(let mut #id: #t = #v;)
                        } else {
                            quote!(#id = #v;)
                        }
                    }
                    LocalKind::Pure(_) => quote!(),
                    LocalKind::Affine(_) => {
                        let off = format_ident!("{}_off", id);
                        let off_t = match lty.elem {
                            Elem::Ptr(_) => quote!(i64),
                            _ => t.clone(),
                        };
                        if is_let {
                            return quote!(let mut #off: #off_t = <#off_t as #d::Elem>::from_i64(0););
                        }
                        let (op, step) = match &k.exprs[*value].kind {
                            ExprKind::PtrAdd(_, st) => (BinOp::Add, *st),
                            ExprKind::Binary(op, _, st) => (*op, *st),
                            _ => (BinOp::Add, *value),
                        };
                        let sv = self.ev(step, &At::Own);
                        let st = self.elem(&k.exprs[step].ty);
                        let f = if op == BinOp::Sub { quote!(sub) } else { quote!(add) };
                        quote!(#off = <#off_t as #d::Num>::#f(#off, #d::cast::<#st, #off_t>(#sv));)
                    }
                    LocalKind::Inline(_) => quote!(),
                    LocalKind::Materialized => {
                        let numel: usize = lty.shape.iter().map(|x| x.eval(&|s| self.vals.get(s).copied()).unwrap_or(1) as usize).product();
                        let layout = self.layouts[*local];
                        let pt = self.slots(numel, layout);
                        let decl = if is_let {
                            quote!(let mut #id: [#t; #pt] = unsafe { ::core::mem::zeroed() };)
                        } else {
                            quote!()
                        };
                        let elem = |g: &Self| {
                            let v = g.ev(*value, &At::Own);
                            quote!(#id[__j] = #v;)
                        };
                        if let Some(pairs) = self.cast_pairs_f16(&id, numel, layout, lty, *value) {
                            return quote!(#decl #pairs);
                        }
                        let body = if layout == Layout::Cyclic && self.vec_width(numel) > 1 {
                            self.phase_chunks(numel, &[*value], elem, quote!(), quote!())
                        } else {
                            self.phase_in(numel, layout, elem)
                        };
                        quote!(#decl #body)
                    }
                }
            }
            Stmt::Store { ptr, value, mask, span } => {
                // A program's threads run independently, so a store could overtake another
                // thread's earlier load of the same address (or a later load could miss it).
                // Barriers around stores keep the program order whenever the kernel loads, except
                // where every thread is known to be past a barrier with no global access since
                // (after a software-pipelined loop) or where nothing follows (the kernel's last
                // statement).
                let fence = if self.has_loads { quote!(#d::bar_sync();) } else { quote!() };
                let (before, after) = (if self.synced.get() { quote!() } else { fence.clone() }, if self.last.get() { quote!() } else { fence.clone() });
                let numel = self.numel(*ptr);
                if self.shapes[*ptr].is_empty() {
                    let p = self.ev(*ptr, &At::Own);
                    let v = self.ev(*value, &At::Own);
                    let ok = self.in_bounds_code(*ptr, &quote!(__a), span.start);
                    let w = quote!({ let __a = #p; if #ok { #d::store(__a, #v); } });
                    let w = match mask {
                        Some(m) => {
                            let vm = self.ev(*m, &At::Own);
                            quote!(if #vm { #w })
                        }
                        None => w,
                    };
                    // Scalars are uniform: one thread writes.
                    return quote!(#before if __tid == 0 { #w } #after);
                }
                // Iterate in the stored value's layout when it is an `mma` accumulator.
                let layout = match &k.exprs[*value].kind {
                    ExprKind::Local(l) if matches!(self.kinds[*l], LocalKind::Materialized) && self.shapes[*value] == self.shapes[*ptr] => self.layouts[*l],
                    _ => Layout::Cyclic,
                };
                // Row layouts hold each element in several threads: a store writes it once.
                let layout = if matches!(layout, Layout::MmaRows { .. }) { Layout::Cyclic } else { layout };
                if self.chunk_len(numel, layout) > 1 {
                    let body = self.store_chunks(numel, layout, *ptr, *value, *mask, span.start);
                    return quote!(#before #body #after);
                }
                let body = self.phase_in(numel, layout, |g| {
                    let p = g.ev(*ptr, &At::Own);
                    let v = g.operand(*ptr, *value, &At::Own);
                    let ok = g.in_bounds_code(*ptr, &quote!(__a), span.start);
                    let w = quote!({ let __a = #p; if #ok { #d::store(__a, #v); } });
                    match mask {
                        Some(m) => {
                            let vm = g.operand(*ptr, *m, &At::Own);
                            quote!(if #vm { #w })
                        }
                        None => w,
                    }
                });
                quote!(#before #body #after)
            }
            Stmt::For { var, start, end, step, body, .. } => {
                let reduce = self.split_of(*var).map(|sl| self.split_reduce_code(sl));
                if let Some(code) = self.try_pipelined(*var, *start, *end, *step) {
                    self.pipelined.set(true);
                    return quote!(#code #reduce);
                }
                let id = crate::expand_cpu::local_ident(k, *var);
                let t = self.elem(&k.locals[*var].ty);
                let (s, e, st) = (self.ev(*start, &At::Own), self.ev(*end, &At::Own), self.ev(*step, &At::Own));
                let split = self.split_of(*var).map(|sl| self.split_range_code(sl, &t));
                let (floor, resident) = (self.floor.get(), self.stage_resident(*var));
                // Copies one iteration ahead, counting the iterations' parity (not in split loops,
                // whose parts start inside the loop).
                let ahead = self.copy_ahead(*var, &t);
                let body = self.stmts(body);
                self.floor.set(floor);
                let (resident, body) = match ahead {
                    Some((first, next, parity)) => (quote!(#resident #first let mut #parity: u32 = 0;), quote!(#next #body #parity = #parity.wrapping_add(1);)),
                    None => (resident, body),
                };
                if let Some((range, after)) = split {
                    // A part of the split loop runs its run of `__n` iterations.
                    return quote! {
                        {
                            let __start: #t = #s;
                            let __end: #t = #e;
                            let __step: #t = #st;
                            let (__s64, __e64, __t64) = (__start as i64, __end as i64, __step as i64);
                            let __n: i64 = #d::trip_count(__s64, __e64, __t64);
                            #range
                            #resident
                            let mut __i: #t = __start;
                            let mut __c: i64 = 0;
                            while __c < __n {
                                let #id: #t = __i;
                                #body
                                __i = __i.wrapping_add(__step);
                                __c += 1;
                            }
                            #after
                        }
                        #reduce
                    };
                }
                quote! {{
                    let __start: #t = #s;
                    let __end: #t = #e;
                    let __step: #t = #st;
                    #resident
                    let mut __i: #t = __start;
                    while __step != 0 && ((__step > 0 && __i < __end) || (__step < 0 && __i > __end)) {
                        let #id: #t = __i;
                        #body
                        __i = match __i.checked_add(__step) { Some(n) => n, None => break };
                    }
                }}
            }
            Stmt::If { cond, then, els } => {
                let c = self.ev(*cond, &At::Own);
                let (t, e) = (self.stmts(then), self.stmts(els));
                quote!(if #c { #t } else { #e })
            }
            Stmt::While { pre, test, body } => {
                let pre = self.stmts(pre);
                let c = self.ev(*test, &At::Own);
                let body = self.stmts(body);
                self.synced.set(false);
                quote!(loop { #pre if !#c { break; } #body })
            }
            Stmt::Return => quote!(return;),
            Stmt::Assert { cond, operands, span, .. } => self.gen_assert(*cond, operands, *span),
            Stmt::Print { prefix, values, .. } => self.gen_print(prefix, values),
            Stmt::Barrier => {
                let d = &self.d;
                quote!(#d::bar_sync();)
            }
        }
    }
}

/// The bits of the flat index of a block of shape `to` broadcast to `from` (NumPy's rules), given
/// which iteration bit each bit of `from`'s flat index is (`map`); `None` unless every
/// dimension is a power of two.
fn broadcast_bits(map: &[u32], from: &[usize], to: &[usize]) -> Option<Vec<u32>> {
    if !from.iter().chain(to).all(|d| d.is_power_of_two()) || map.len() != from.iter().product::<usize>().trailing_zeros() as usize {
        return None;
    }
    let mut bits = Vec::new();
    for i in (0..to.len()).rev() {
        let fi = i + from.len() - to.len();
        if to[i] != 1 {
            let lo = from[fi + 1..].iter().product::<usize>().trailing_zeros() as usize;
            bits.extend_from_slice(&map[lo..lo + to[i].trailing_zeros() as usize]);
        }
    }
    Some(bits)
}

/// The byte offset of K step `ks` and 64-row tile `t` of M (A only) in a staged `wgmma` operand.
type WgmmaOffset = Box<dyn Fn(usize, usize) -> usize>;

/// A staged `wgmma` operand of a `dot` with depth `kk`: its descriptor's (lbo, sbo, swizzled
/// row bytes), the byte offset of this warpgroup's first row (M or N) as code, and the byte
/// offset of K step `ks` and 64-row tile `t` of M (A only). K-major (A as written, B
/// transposed): rows of M or N of `kk` elements in column blocks of up to 64, `x * rb` apart.
/// M/N-major (B as written, A transposed): rows of K of `x` elements in column blocks of up to
/// 64, `kk * rb` apart. `wg`: this warpgroup's index along M or N, `per_wg` its rows there.
fn wgmma_operand(kk: usize, x: usize, wg: TokenStream, per_wg: usize, k_major: bool) -> ((usize, usize, usize), TokenStream, WgmmaOffset) {
    if k_major {
        let bk = kk.min(64);
        let rb = bk * 2;
        ((16, 8 * rb, rb), quote!((#wg * #per_wg * #rb) as u32), Box::new(move |ks, t| (ks * 16 / bk) * x * rb + t * 64 * rb + (ks * 16 % bk) * 2))
    } else {
        let bx = x.min(64);
        let rb = bx * 2;
        let lbo = kk * rb;
        ((lbo, 8 * rb, rb), quote!((#wg * (#per_wg / #bx) * #lbo) as u32), Box::new(move |ks, t| ks * 16 * rb + (t * 64 / bx) * lbo))
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
                Stmt::For { body, .. } => walk(body, values),
                Stmt::While { pre, body, .. } => {
                    walk(pre, values);
                    walk(body, values);
                }
                Stmt::If { then, els, .. } => {
                    walk(then, values);
                    walk(els, values);
                }
                _ => {}
            }
        }
    }
    let mut values = HashMap::new();
    walk(stmts, &mut values);
    values
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

/// Generates the `extern "ptx-kernel"` entry of one instance.
/// The instance's description for the PTX manifest, as JSON: `cargo xtask build-ptx` reads it
/// back from the exported global `__KERNEL_META_<entry>` and merges it into the manifest.
fn entry_metadata(k: &Kernel, entry_name: &str, vals: &HashMap<String, i64>, num_warps: usize, num_stages: usize, shared: usize) -> String {
    let mut metas: Vec<(&String, &i64)> = vals.iter().collect();
    metas.sort();
    let metas = metas.iter().map(|(n, v)| format!("\"{n}\": {v}")).collect::<Vec<_>>().join(", ");
    let fns = k
        .fn_values
        .iter()
        .map(|(n, v)| format!("\"{n}\": {}", v.as_ref().map(|h| format!("\"{h}\"")).unwrap_or_else(|| "null".into())))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{{\"entry\": \"{entry_name}\", \"kernel\": \"{}\", \"meta\": {{{metas}}}, \"functions\": {{{fns}}}, \"num_warps\": {num_warps}, \"num_stages\": {num_stages}, \"threads_per_block\": {}, \"dynamic_shared_bytes\": {shared}}}",
        k.name,
        32 * num_warps
    )
}

/// The `extern "ptx-kernel"` entries of one instance: `entry_name`, and, when its K loop can be
/// split over blocks (`split.rs`), `<entry_name>__split`, which split launches run instead. The
/// plain entry has no trace of splitting (split code in its K loop and prologue would slow the
/// launches that split nothing). When a tensor-core `dot` can use Hopper's
/// `wgmma`, each entry has two bodies: one for `sm_90a` (`wgmma`) and one for every other
/// architecture (`mma.sync`); the instance asks for the largest shared memory of them all.
pub fn entry(k: &Kernel, entry_name: &str, vals: &HashMap<String, i64>, num_warps: usize, num_stages: usize) -> Result<DeviceEntry, plan::PlanError> {
    let inst = |split: bool| plan::Instance { vals, num_warps, num_stages, split };
    let plain = entry_fn(k, entry_name, &inst(false))?;
    if plain.split_bytes == 0 {
        return Ok(plain);
    }
    let split = entry_fn(k, &format!("{entry_name}__split"), &inst(true))?;
    debug_assert_eq!(plain.tma, split.tma);
    let tokens = [plain.tokens, split.tokens].into_iter().collect();
    let plans = plain.plans.into_iter().chain(split.plans).collect();
    Ok(DeviceEntry { tokens, shared_bytes: plain.shared_bytes.max(split.shared_bytes), tma: plain.tma, split_bytes: split.split_bytes, hidden: plain.hidden, split_hidden: split.hidden, plans })
}

/// The bodies of one entry: its plan and the code emitted from it, for each target it has a
/// body for (Sm80 first).
type Bodies<'a> = Vec<(DevicePlan<'a>, TokenStream, usize, Vec<TmaDesc>)>;

/// Plans and emits the body of each target of one entry: the `mma.sync` body every architecture
/// but sm_90a runs, and, when a `dot` can use `wgmma`, the sm_90a body (alone for a split entry
/// with one: see [`entry_fn`]).
fn bodies<'a>(k: &'a Kernel, inst: &plan::Instance<'a>) -> Result<Bodies<'a>, plan::PlanError> {
    let mut out = Vec::new();
    for target in [Target::Sm80, Target::Sm90a] {
        let p = plan::plan(k, inst, target)?;
        if target == Target::Sm90a && !p.uses_wgmma() {
            break;
        }
        let g = DevGen::new(&p);
        let body = g.body(&k.body);
        let (smem, tma) = (g.smem_max.get(), g.tma.borrow().clone());
        drop(g);
        out.push((p, body, smem, tma));
    }
    Ok(out)
}

/// One entry of an instance (see [`entry`]); with `inst.split`, the version for split launches.
/// The plain version reports in `split_bytes` whether a split one exists.
fn entry_fn(k: &Kernel, entry_name: &str, inst: &plan::Instance<'_>) -> Result<DeviceEntry, plan::PlanError> {
    let bodies = bodies(k, inst)?;
    let d = &bodies[0].0.d;
    let params = k.params.iter().map(|p| {
        let id = param_ident(&p.name);
        match p.kind {
            ParamKind::Ptr(dt) => {
                let e = dev_dtype(dt);
                quote!(#id: *mut #e)
            }
            ParamKind::Scalar(dt) => {
                let e = dev_dtype(dt);
                quote!(#id: #e)
            }
        }
    });
    let name = format_ident!("{}", entry_name);
    let tma = bodies.get(1).map(|b| b.3.clone()).unwrap_or_default();
    let hidden = plan::abi::hidden_params(k, !tma.is_empty(), inst.split);
    let params: Vec<TokenStream> = params.chain(hidden.iter().map(|h| h.param(k))).collect();
    let split_bytes = bodies[0].0.split_loop.as_ref().map_or(0, |sl| 4 * bodies.iter().map(|b| b.0.split_floats(sl)).max().unwrap_or(0));
    let split_block = inst.split.then(|| quote!(let __sk: #d::SplitBlock = #d::split_block(__sk_dp, __sk_parts);));
    // Each tensor map's descriptor is fetched from global memory at the start (one lane per
    // valid map), while the block works out its tile: the first copies do not wait for it.
    let maps = tma.len();
    let prefetch = (maps > 0).then(|| quote!(if __tid < #maps && (__tmask >> __tid) & 1 != 0 { #d::prefetch_tensormap(__tma.add(__tid * 128)); }));
    let function = |cfg: TokenStream, body: &TokenStream, prefetch: Option<&TokenStream>| {
        quote! {
            #cfg
            #[no_mangle]
            #[allow(unused_mut, unused_variables, unused_assignments, unused_parens, unused_unsafe, non_snake_case, unreachable_code, clippy::all)]
            pub unsafe extern "ptx-kernel" fn #name(#(#params,)*) {
                unsafe {
                    #split_block
                    let __tid: usize = #d::thread_idx() as usize;
                    let __lane: usize = __tid % 32;
                    let __warp: usize = __tid / 32;
                    let __smem: *mut u8 = #d::smem();
                    #prefetch
                    #body
                }
            }
        }
    };
    // The split entry of an instance with a Hopper body exists for sm_90a only, where split
    // launches were measured (on sm_80 the 128x256 tile's `mma.sync` body has no register to
    // spare for the split loop's start: ptxas spilled 4 bytes); elsewhere launches run the
    // plain entry.
    let hopper_only = inst.split && bodies.len() > 1;
    let shared = bodies.iter().map(|b| b.2).max().unwrap_or(0);
    let tokens = match &bodies[..] {
        [(_, body, ..), (_, hb, ..)] => {
            let hopper_fn = function(Target::Sm90a.cfg(), hb, prefetch.as_ref());
            let other_fn = (!hopper_only).then(|| function(Target::Sm80.cfg(), body, None));
            quote!(#hopper_fn #other_fn)
        }
        _ => function(quote!(), &bodies[0].1, None),
    };
    let meta_cfg = hopper_only.then(|| Target::Sm90a.cfg());
    let meta = entry_metadata(k, entry_name, inst.vals, inst.num_warps, inst.num_stages, shared);
    // The entry of a kernel named `r#type` is `r#type`: `__KERNEL_META_r#type` is no identifier.
    let meta_name = format_ident!("__KERNEL_META_{}", entry_name.trim_start_matches("r#"));
    let bytes = proc_macro2::Literal::byte_string(meta.as_bytes());
    let len = meta.len();
    let tokens = quote! {
        #tokens
        #meta_cfg
        #[no_mangle]
        #[used]
        #[allow(non_upper_case_globals)]
        pub static #meta_name: [u8; #len] = *#bytes;
    };
    let plans = bodies.iter().map(|b| (format!("{entry_name}.{}", b.0.target.name()), b.0.to_string())).collect();
    Ok(DeviceEntry { tokens, shared_bytes: shared, tma, split_bytes, hidden, split_hidden: vec![], plans })
}

#[cfg(test)]
mod tests;
