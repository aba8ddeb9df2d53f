//! The shared memory of software-pipelined loops: where each one's buffers start (the floor the
//! loops around it leave: their resident and copied-ahead operand tiles), how many stages fit,
//! and, on sm_90a, the tensor maps its operands can be copied with.

use super::*;

/// The shared memory of a pipelined loop, as the emitter allocates it at `floor` (see
/// `DevicePlan::pipe_mem`).
#[derive(Clone, Debug, Default)]
pub(crate) struct PipeMem {
    /// Where its buffers start.
    pub(crate) floor: usize,
    /// Its buffers: `num_stages` (one more in a `wgmma` body unless it costs a resident block),
    /// fewer when they do not fit.
    pub(crate) stages: usize,
    /// Per operand, the tensor maps it may be copied with (sm_90a; both operands have some, or
    /// neither): a `Rows` and/or a `Cols` staging, in slot order from `first_map`.
    pub(crate) maps: Vec<Vec<(Staging, TmaDesc)>>,
    pub(crate) first_map: usize,
}

/// A pointer block as a scalar pointer plus the integer offsets blocks added to it one after
/// the other, `((base + o1) + o2) + ...`, innermost first: Triton's `K + off + rows[None, :] *
/// s + cols[:, None]` has two, `base + (rows * s + cols)` one. Each block is computed in its
/// own type and widened as it is added, so the pointer at an element is `base` plus the `i64`
/// sum of the blocks' values there (the generated checks sum them so, `DevGen::offsets_at`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PtrSum {
    pub(crate) base: ExprId,
    pub(crate) offs: Vec<ExprId>,
}

/// A term of a pointer block's offsets that varies along one axis of the block (see
/// `DevicePlan::tma_terms`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AxisTerm {
    /// The scalar integer parameter it is multiplied by, if any.
    pub(crate) stride: Option<usize>,
    /// The factor that varies: `rows[:, None]` (shape `[R, 1]`) or `cols[None, :]` (`[1, C]`).
    pub(crate) x: ExprId,
    /// The offsets block it is a term of (an index into `PtrSum::offs`).
    pub(crate) of: usize,
}

/// Shared memory a block may use on the targets (sm_90's 227 KiB).
pub(crate) const SMEM_LIMIT: usize = 232_448;

impl DevicePlan<'_> {
    /// The shared memory of pipelined loop `p` whose buffers start at `floor`, the entry having
    /// `maps_before` tensor maps from earlier loops; `in_loop`: whether `p` is inside another
    /// loop.
    pub(crate) fn pipe_mem(&self, p: &PipePlan, floor: usize, maps_before: usize, in_loop: bool) -> PipeMem {
        let Layout::Mma { n, wg, .. } = p.layout else { unreachable!("a pipelined loop has an mma layout") };
        let (m, kk) = (p.m, p.kk);
        let (align, widen) = (staging_align(p.layout), self.is_widened(p.a));
        let tiles = PipeTiles::new(m, kk, n, align, widen);
        let (stage_bytes, f16_bytes) = (tiles.stage_bytes, tiles.f16_bytes());
        // `num_stages` is, as in Triton, the number of iterations whose operands are in flight or
        // ready: copies run `num_stages - 1` iterations ahead of the tensor cores. A `wgmma` body
        // keeps one `wgmma` group in flight across iterations, whose buffer the copies must not
        // overwrite yet: it takes one buffer more (when shared memory allows).
        // The buffers, then one 16-byte word for the bounds proof of loop versioning and, on
        // sm_90a, two 8-byte `mbarrier`s per buffer (copies landed, readers done).
        let bytes = |stages: usize| floor.next_multiple_of(align) + f16_bytes + stages * stage_bytes + 16 + 16 * stages + 8;
        let mut stages = if wg { self.num_stages + 1 } else { self.num_stages };
        // The extra buffer is dropped where it alone keeps a block from sharing an SM whose
        // registers have room for it (copies then run `num_stages - 2` ahead): a second block
        // hides more latency than one more copy in flight. Not for a loop inside another loop
        // (a persistent kernel's K loop inside its loop over tiles): such a kernel launches
        // as many programs as it chooses, typically one per SM, and a second resident block
        // would have nothing to run.
        if wg && !in_loop && self.num_stages >= 3 && blocks_per_sm(bytes(stages - 1), self.threads) > blocks_per_sm(bytes(stages), self.threads) {
            stages -= 1;
        }
        while stages > 1 && bytes(stages) > SMEM_LIMIT {
            stages -= 1;
        }
        let mut maps: Vec<Vec<(Staging, TmaDesc)>> = p.ops.iter().enumerate().map(|(oi, op)| self.tma_candidates(p.layout, oi, op, stages, maps_before)).collect();
        if widen || maps.iter().any(Vec::is_empty) {
            maps.clear();
        }
        PipeMem { floor, stages, maps, first_map: maps_before }
    }

    /// Whether operand `x` of a tensor-core `dot` is widened while it is staged: 8-bit floats
    /// and integers are stored in shared memory as f16 (exactly: every f8e4m3, f8e5m2, i8 and
    /// u8 value is an f16), which the f16 instructions read; their copies go through registers
    /// (8 bytes loaded, converted in pairs, 16 bytes stored), not `cp.async`.
    pub(crate) fn is_widened(&self, x: ExprId) -> bool {
        self.k.exprs[x].ty.dtype().is_some_and(|d| d.is_fp8() || matches!(d, DType::I8 | DType::U8))
    }

    /// The pointer parameter behind the scalar pointer `p` that the pointer block `ptr_block` is
    /// computed from, when both come from the same one.
    pub(crate) fn scalar_param(&self, p: ExprId, ptr_block: ExprId) -> Option<usize> {
        let param = self.ptr_root(p)?;
        (self.shapes[p].is_empty() && self.ptr_root(ptr_block) == Some(param) && matches!(self.k.params[param].kind, ParamKind::Ptr(_))).then_some(param)
    }

    /// The scalar integer parameter `e` is, if it is one.
    pub(crate) fn int_param(&self, e: ExprId) -> Option<usize> {
        match self.k.exprs[e].kind {
            ExprKind::Param(i) if matches!(self.k.params[i].kind, ParamKind::Scalar(DType::I32 | DType::I64 | DType::U32)) => Some(i),
            _ => None,
        }
    }

    /// The pointer block `ptr` as a scalar pointer plus offsets blocks (see [`PtrSum`]): a
    /// chain of `PtrAdd`s of 32- or 64-bit integer offsets, through locals evaluated at their
    /// uses, down to a pointer of no shape.
    pub(crate) fn ptr_sum(&self, ptr: ExprId) -> Option<PtrSum> {
        let k = self.k;
        let mut offs = Vec::new();
        let mut e = ptr;
        while !self.shapes[e].is_empty() {
            match k.exprs[e].kind {
                ExprKind::PtrAdd(p, o) if matches!(k.exprs[o].ty.dtype(), Some(DType::I32 | DType::I64)) => {
                    offs.push(o);
                    e = p;
                }
                ExprKind::Local(l) => match self.kinds[l] {
                    LocalKind::Pure(init) => e = init,
                    _ => return None,
                },
                _ => return None,
            }
        }
        offs.reverse();
        (!offs.is_empty()).then_some(PtrSum { base: e, offs })
    }

    /// The strided terms of a pointer block's offsets, summed `rows[:, None] * row_stride +
    /// cols[None, :] * col_stride` (terms in any order and spread over the offsets blocks in any
    /// way, blocks of one element aside; a stride may be left out when it is 1): the rows' term
    /// and the columns' term (see [`AxisTerm`]). Only a guess of the shape: the generated code
    /// checks at run time that the elements are where a map puts them before it copies with the
    /// map.
    pub(crate) fn tma_terms(&self, sum: &PtrSum) -> Option<(AxisTerm, AxisTerm)> {
        let k = self.k;
        let strip = |mut e: ExprId| loop {
            match &k.exprs[e].kind {
                ExprKind::BroadcastTo(x) => e = *x,
                ExprKind::Local(l) => match self.kinds[*l] {
                    LocalKind::Pure(init) => e = init,
                    _ => return e,
                },
                _ => return e,
            }
        };
        // (varies along rows, the term).
        let term = |t: ExprId, of: usize| -> Option<(bool, AxisTerm)> {
            let (x, stride) = match k.exprs[t].kind {
                ExprKind::Binary(BinOp::Mul, a, b) if self.int_param(b).is_some() => (strip(a), self.int_param(b)),
                ExprKind::Binary(BinOp::Mul, a, b) if self.int_param(a).is_some() => (strip(b), self.int_param(a)),
                _ => (t, None),
            };
            let at = AxisTerm { stride, x, of };
            match self.shapes[x].as_slice() {
                [r, 1] if *r > 1 => Some((true, at)),
                [1, c] if *c > 1 => Some((false, at)),
                _ => None,
            }
        };
        let (mut rows, mut cols) = (None, None);
        for (of, &o) in sum.offs.iter().enumerate() {
            if self.shapes[o].iter().product::<usize>() == 1 {
                continue;
            }
            // The block's terms: its sums taken apart.
            let mut parts = vec![o];
            while let Some(t) = parts.pop() {
                let t = strip(t);
                if let ExprKind::Binary(BinOp::Add, a, b) = k.exprs[t].kind {
                    parts.extend([b, a]);
                    continue;
                }
                let (along_rows, at) = term(t, of)?;
                let slot = if along_rows { &mut rows } else { &mut cols };
                if slot.replace(at).is_some() {
                    return None;
                }
            }
        }
        Some((rows?, cols?))
    }

    /// The tensor maps of pipelined operand `oi` (sm_90a, a pipeline of two buffers or more; see
    /// `tma_maps`), while the entry has room in its 32-bit validity mask.
    pub(crate) fn tma_candidates(&self, layout: Layout, oi: usize, op: &PipeOp, stages: usize, tma_base: usize) -> Vec<(Staging, TmaDesc)> {
        if stages < 2 || tma_base + 2 * oi + 1 >= 32 {
            return Vec::new();
        }
        self.tma_maps(layout, op.base, op.load, op.numel / op.inner, op.inner)
    }

    /// The tensor maps of a `dot` operand (`rows x inner`, in `layout`) loaded from pointers
    /// `base` = `param + offsets` (`load`; see `ptr_sum`): a `Rows` map when the offsets' row
    /// stride is a parameter, a `Cols` map when the column stride is (see `tma_terms`), each
    /// with a box the copy engine takes (at most 256 rows and columns, a swizzle of 128 bytes or
    /// less).
    pub(crate) fn tma_maps(&self, layout: Layout, base: ExprId, load: ExprId, rows: usize, inner: usize) -> Vec<(Staging, TmaDesc)> {
        let k = self.k;
        let Layout::Mma { wg: true, .. } = layout else { return Vec::new() };
        let Some(sum) = self.ptr_sum(base) else { return Vec::new() };
        let ExprKind::Load { ptr: ptr_block, .. } = k.exprs[load].kind else { return Vec::new() };
        let Some(pi) = self.scalar_param(sum.base, ptr_block) else { return Vec::new() };
        let Some((AxisTerm { stride: rs, .. }, AxisTerm { stride: cs, .. })) = self.tma_terms(&sum) else { return Vec::new() };
        let desc = |pitch: usize, unit: Option<usize>, tile: Tile| -> Option<TmaDesc> {
            let swizzle = DevGen::swizzle(tile.block).map_or(0, |_| tile.block * 2);
            (tile.rows <= 256 && tile.block <= 256 && swizzle <= 128).then_some(TmaDesc { ptr: pi, row_stride: pitch, col_stride: unit, box_inner: tile.block, box_rows: tile.rows, swizzle })
        };
        let by_rows = rs.and_then(|r| desc(r, cs, Tile::of(layout, rows, inner))).map(|t| (Staging::Rows, t));
        let by_cols = cs.and_then(|c| desc(c, rs, Tile::of(layout, inner, rows))).map(|t| (Staging::Cols, t));
        by_rows.into_iter().chain(by_cols).collect()
    }
}

/// Shared memory of one SM on the targets (sm_90's 228 KiB), and what the driver reserves of it
/// per resident block.
const SM_SMEM: usize = 233_472;
const BLOCK_RESERVED_SMEM: usize = 1024;

/// How many blocks of `threads` threads using `smem` bytes of shared memory an SM can hold
/// whatever registers ptxas gives them: shared memory is allocated in 128-byte units, and
/// registers (64 K per SM) in 256 per warp-sized unit of at most 255 per thread, so any block of
/// `w` warps leaves room for `8 / w` (the most an SM holds is 2048 threads).
pub(crate) fn blocks_per_sm(smem: usize, threads: usize) -> usize {
    let by_smem = SM_SMEM / (smem.next_multiple_of(128) + BLOCK_RESERVED_SMEM);
    let by_regs = (65_536 / (threads.next_multiple_of(32) * 256)).max(1);
    by_smem.min(by_regs)
}

/// The alignment of a staged operand tile in `layout`: `wgmma` tiles start on whole 1024-byte
/// swizzle patterns.
pub(crate) fn staging_align(layout: Layout) -> usize {
    if matches!(layout, Layout::Mma { wg: true, .. }) { 1024 } else { 16 }
}

/// A pipelined loop's stage layout for an `[m, kk] x [kk, n]` product (tiles aligned to
/// `align`): a stage holds A's tile then B's, as f16, or, for widened (8-bit) operands, their
/// raw chunks, which each thread widens into one of two f16 tile pairs the tensor cores read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PipeTiles {
    pub(crate) widen: bool,
    /// The offset of B's tile in a stage, and a stage's bytes.
    pub(crate) tile_a: usize,
    pub(crate) stage_bytes: usize,
    /// The offset of B's f16 tile in an f16 pair, and a pair's bytes (the f16 tiles the tensor
    /// cores read: the stages' own when not widened).
    pub(crate) f16_a: usize,
    pub(crate) f16_pair: usize,
}

impl PipeTiles {
    pub(crate) fn new(m: usize, kk: usize, n: usize, align: usize, widen: bool) -> PipeTiles {
        let f16_a = (m * kk * 2).next_multiple_of(align);
        let f16_pair = f16_a + (kk * n * 2).next_multiple_of(align);
        let (tile_a, stage_bytes) = if widen {
            let a = (m * kk).next_multiple_of(16);
            (a, a + (kk * n).next_multiple_of(16))
        } else {
            (f16_a, f16_pair)
        };
        PipeTiles { widen, tile_a, stage_bytes, f16_a, f16_pair }
    }

    /// The bytes of the two f16 tile pairs of widened operands (none otherwise).
    pub(crate) fn f16_bytes(&self) -> usize {
        if self.widen { 2 * self.f16_pair } else { 0 }
    }
}
