//! One operand of a software-pipelined K loop: where each of this thread's 8-element chunks
//! comes from (its base pointer and contiguity, computed once before the loop), the copy of a
//! chunk per iteration (`cp.async` when it is contiguous, unmasked and in bounds: one copy of
//! 16 bytes, or pieces of 8 or 4 where the row is only that aligned; else element by element),
//! the unchecked version for loops whose accesses are proven in bounds
//! before the loop, the widening of 8-bit chunks, and the operand's tensor-map copy (sm_90a).
//! A transposable operand's chunks run along its rows or down its columns (into the transposed
//! tile), as chosen once before the loop from the addresses of the block's first elements; its
//! copies are written for each staging and branch on that choice.

use super::*;

/// The code of one operand of a pipelined loop (see `DevGen::pipe_operand`).
pub(super) struct OperandCode {
    /// Before the loop: the chunks' base pointers, bounds and, where there is one, the proof.
    pub(super) pre: Vec<TokenStream>,
    /// The copies of iteration `__it` into buffer `__buf`: checked, and proven in bounds.
    pub(super) issue: TokenStream,
    pub(super) fast: TokenStream,
    /// A transposable operand's copies (checked, and proven) of its staging as written.
    pub(super) as_written: Option<(TokenStream, TokenStream)>,
    /// A widened operand's widening of this thread's chunks of buffer `__cb` into f16 tile `__pr`.
    pub(super) widen: Option<TokenStream>,
    /// The flag of the proof before the loop that every chunk stays in its buffer in every
    /// iteration (`None`: no proof, so the loop always checks).
    pub(super) proof: Option<Ident>,
    /// Its tensor-map copy and the maps it takes, in slot order.
    pub(super) tma: Option<TmaOperand>,
    pub(super) maps: Vec<TmaDesc>,
}

/// The most accumulator slots plus registers for values read ahead of their stores (all of a
/// thread's chunks of 2-byte-aligned rows, 5 registers a chunk, see [`DevGen::chunk_copies`]);
/// beyond it each chunk is read and stored in turn.
const READ_AHEAD_REGS: usize = 128;

/// What the parts of one operand's code share (see `DevGen::pipe_operand`).
struct OpCx<'o> {
    oi: usize,
    op: &'o PipeOp,
    /// The element type, and its size in bytes.
    e: TokenStream,
    size: usize,
    /// The block's threads, the operand's 8-element chunks, and how many of them a thread copies.
    threads: usize,
    chunks: usize,
    per_thread: usize,
    /// The operand's rows, and the elements of a row.
    rows: usize,
    inner: usize,
    /// A transposable operand's staging, chosen before the loop (`__cols<oi>`): its chunks run
    /// along the rows or, transposed, down the columns.
    cols: Option<Ident>,
    /// The offset of iteration `__it` from the chunks' bases: its name (`__off<oi>`) and code.
    off: Ident,
    off_expr: TokenStream,
    /// Where the operand's tile starts in buffer 0, and the bytes of a buffer.
    tile_off: usize,
    stage_bytes: usize,
    /// Whether the operand is widened (copied raw, 8 bytes a chunk).
    widen: bool,
    layout: Layout,
}

impl OpCx<'_> {
    /// Whether `regs` registers fit beside the accumulators' slots within [`READ_AHEAD_REGS`]
    /// (a chunk's values read ahead of their stores). Only in `wgmma` bodies: `mma.sync` bodies
    /// keep their fragments in registers too (with the read-ahead, sm_80's 64x128x128 tiles
    /// spilled).
    fn room_for(&self, regs: usize) -> bool {
        match self.layout {
            Layout::Mma { tm, tn, wg: true, .. } => tm * tn * 4 + regs <= READ_AHEAD_REGS,
            _ => false,
        }
    }

    /// The row-major flat index of element `i` of the chunk that starts at `__f0` in staging
    /// `o`'s order.
    fn flat_in(&self, o: Staging, i: TokenStream) -> TokenStream {
        let (rows, inner) = (self.rows, self.inner);
        match o {
            Staging::Rows => quote!((__f0 + #i)),
            Staging::Cols => quote!(((__f0 % #rows + #i) * #inner + __f0 / #rows)),
        }
    }

    /// [`Self::flat_in`] in the staging chosen before the loop (a branch on `__cols<oi>` for a
    /// transposable operand).
    fn flat(&self, i: TokenStream) -> TokenStream {
        match &self.cols {
            None => self.flat_in(Staging::Rows, i),
            Some(c) => {
                let (r, cl) = (self.flat_in(Staging::Rows, i.clone()), self.flat_in(Staging::Cols, i));
                quote!((if #c { #cl } else { #r }))
            }
        }
    }

    /// Where the chunk that starts at `__f0` goes in its tile (in elements), in staging `o`.
    fn s0_in(&self, o: Staging) -> TokenStream {
        match o {
            Staging::Rows => Tile::of(self.layout, self.rows, self.inner).index(quote!(__f0)),
            Staging::Cols => Tile::of(self.layout, self.inner, self.rows).index(quote!(__f0)),
        }
    }

    /// Where a chunk goes in its stage (in bytes): its place in the swizzled f16 tile, or a
    /// widened operand's raw chunk `__c`.
    fn so_in(&self, o: Staging) -> TokenStream {
        let s0 = self.s0_in(o);
        if self.widen { quote!((__c * 8)) } else { quote!((#s0) * 2) }
    }

    /// `body` for this thread's chunk `jc` (see [`chunk_guard`]).
    fn guard(&self, jc: usize, body: TokenStream) -> TokenStream {
        chunk_guard(self.threads, self.chunks, jc, body)
    }

    /// The operand's copies of iteration `__it` into buffer `__buf`, from this thread's chunk
    /// copies along the rows (`rows`) and, for a transposable operand, down the columns
    /// (`cols_chunks`), branching on the staging chosen before the loop (uniform).
    fn copies(&self, rows: &TokenStream, cols_chunks: Option<TokenStream>) -> TokenStream {
        let (off, off_expr, tile_off, stage_bytes) = (&self.off, &self.off_expr, self.tile_off, self.stage_bytes);
        let chunks = match (&self.cols, cols_chunks) {
            (Some(c), Some(cc)) => quote!(if #c { #cc } else { #rows }),
            _ => quote!(#rows),
        };
        quote! {{
            let #off: i64 = #off_expr;
            let __dst: usize = #tile_off + __buf * #stage_bytes;
            #chunks
        }}
    }
}

/// The bounds tests of an operand's checked copies (see `DevGen::chunk_checks`).
struct ChunkChecks {
    /// Whether the chunk at `__g` lies inside its buffer.
    fits: TokenStream,
    /// The element path's set-up, its test of element `__a` (mask bit `__m`; binds `__k`:
    /// access it) and its report of the first masked element outside the buffer.
    open: TokenStream,
    check: TokenStream,
    close: TokenStream,
}

impl<'a> DevGen<'a> {
    /// The code of operand `oi` of the pipelined loop `cx`, with the tensor maps `tma` it may
    /// copy with (its first in slot `first_map`; `rows_before`: the rows of the operands before
    /// it, which the tensor-map checks spread over the threads).
    pub(super) fn pipe_operand(&mut self, cx: &PipeCx<'_>, oi: usize, op: &PipeOp, tma: Vec<(Staging, TmaDesc)>, first_map: usize, rows_before: &mut usize) -> OperandCode {
        let k = self.k;
        let oc = self.operand_cx(cx, oi, op);
        let mut pre: Vec<TokenStream> = self.staging_choice(&oc).into_iter().collect();
        // A base `scalar_ptr + offsets` (`ptr_sum`) keeps one integer offset per chunk (one
        // register for i32) instead of a 64-bit pointer. A chunk that is not contiguous is
        // marked (offset `MIN`, and its pointer made odd, which for bytes also lies outside the
        // buffer) so that its address fails every alignment test (16, 8 or 4 bytes) or the
        // bounds test, and it takes the element-wise path.
        let split = self.ptr_sum(op.base);
        let masks = self.chunk_masks(&oc, Staging::Rows);
        let (pre_bases, chunk_ptr, proven_ptr) = self.chunk_bases(op, oi, split.as_ref(), &|i| At::Flat(oc.flat(i)), &oc.e, (oc.per_thread, oc.chunks));
        pre.push(pre_bases);
        let widen = oc.widen.then(|| self.widen_chunks(&oc, &cx.smem));
        let ptr_block = match k.exprs[op.load].kind {
            ExprKind::Load { ptr, .. } => ptr,
            _ => op.load,
        };
        // With offsets from the pointer parameter itself, one test before the loop covers all
        // of this thread's chunks in every iteration (`__inb<oi>`, `bounds_proof`); the
        // per-chunk test only runs when that one fails.
        let based = split.as_ref().and_then(|sum| self.scalar_base(sum.base, ptr_block));
        let inb = format_ident!("__inb{}", oi);
        let checks = self.chunk_checks(op, ptr_block, based.as_ref().map(|_| &inb), &oc.e);
        let (_, m_i, o_i) = self.chunk_elem(&oc, Staging::Rows);
        let all = self.chunk_unmasked(&oc, Staging::Rows, &masks);
        // The proven version: every chunk is contiguous, 16-byte aligned and inside its
        // buffer in every iteration, so only the mask is tested. `wgmma` bodies compute each
        // chunk's shared-memory offset once before the loop (one register per chunk);
        // `mma.sync` bodies need those registers for their fragments and recompute it.
        let so_regs = (cx.wg && !oc.widen).then(|| format_ident!("__so{}", oi));
        if let Some(so) = &so_regs {
            pre.push(self.so_registers(&oc, so));
        }
        let elems = self.proven_elems(&oc, Staging::Rows);
        let fast_chunks = self.chunk_copies(&oc, &proven_ptr, (&oc.so_in(Staging::Rows), so_regs.as_ref()), &all, false, &elems);
        let fast_in = |g: &mut Self, o: Staging| {
            let all = g.chunk_unmasked(&oc, o, &masks);
            let elems = g.proven_elems(&oc, o);
            g.chunk_copies(&oc, &proven_ptr, (&oc.so_in(o), None), &all, false, &elems)
        };
        if let Some(b) = &based {
            let (lo, hi) = (format_ident!("__lo{}", oi), format_ident!("__hi{}", oi));
            pre.extend(bounds_proof(oi, b, &oc.off_expr, (&lo, &hi, &inb)));
        }
        // The tensor-map version needs, before the loop, the bounds proof and, per staging,
        // a valid map whose boxes are the operand's elements (`tma.rs`).
        let (tma_oper, tma_descs) = match (tma.is_empty(), &based, split) {
            (false, Some(b), Some(sum)) => self.operand_tma(cx, &oc, (b, sum), (m_i, o_i, all), (&tma, first_map), rows_before),
            _ => (None, Vec::new()),
        };
        let issue_in = |g: &mut Self, o: Staging| g.checked_chunks(&oc, &checks, &chunk_ptr, &masks, o);
        // A transposable operand's copies branch on its staging; the staging as written keeps
        // the code it has without the choice.
        let with_cols = |g: &mut Self, f: &dyn Fn(&mut Self, Staging) -> TokenStream| oc.cols.is_some().then(|| f(g, Staging::Cols));
        OperandCode {
            pre,
            issue: oc.copies(&issue_in(self, Staging::Rows), with_cols(self, &issue_in)),
            fast: oc.copies(&fast_chunks, with_cols(self, &fast_in)),
            as_written: oc.cols.is_some().then(|| (oc.copies(&issue_in(self, Staging::Rows), None), oc.copies(&fast_chunks, None))),
            widen,
            proof: based.is_some().then(|| inb.clone()),
            tma: tma_oper,
            maps: tma_descs,
        }
    }

    /// What the parts of operand `oi` of the pipelined loop `cx` share (see [`OpCx`]).
    fn operand_cx<'o>(&self, cx: &PipeCx<'_>, oi: usize, op: &'o PipeOp) -> OpCx<'o> {
        let k = self.k;
        let PipeSmem { tiles: PipeTiles { widen, tile_a, stage_bytes, .. }, base_off, .. } = cx.smem;
        let chunks = op.numel / 8;
        let off_expr = match (op.affine, op.step) {
            (Some(l), Some(_)) => {
                let lo = format_ident!("{}_off", crate::expand_cpu::local_ident(k, l));
                let st = format_ident!("__st{}", l);
                quote!(#lo + __it * #st)
            }
            (Some(l), None) => {
                let lo = format_ident!("{}_off", crate::expand_cpu::local_ident(k, l));
                quote!(#lo)
            }
            (None, _) => quote!(0i64),
        };
        OpCx {
            oi,
            op,
            e: self.elem(&k.exprs[op.x].ty),
            size: elem_size(&k.exprs[op.x].ty.elem),
            threads: self.threads,
            chunks,
            per_thread: chunks.div_ceil(self.threads),
            rows: op.numel / op.inner,
            inner: op.inner,
            cols: op.transposable.then(|| format_ident!("__cols{}", oi)),
            off: format_ident!("__off{}", oi),
            off_expr,
            tile_off: base_off + if oi == 0 { 0 } else { tile_a },
            stage_bytes,
            widen,
            layout: cx.plan.layout,
        }
    }

    /// A transposable operand's choice of staging before the loop (`__cols<oi>`): transposed
    /// when the elements of a column are consecutive and those of a row are not.
    fn staging_choice(&mut self, oc: &OpCx<'_>) -> Option<TokenStream> {
        let c = oc.cols.as_ref()?;
        let (op, inner, bytes) = (oc.op, oc.inner, oc.size);
        let (p0, p1, pr) = (self.ev(op.base, &At::Flat(quote!(0usize))), self.ev(op.base, &At::Flat(quote!(1usize))), self.ev(op.base, &At::Flat(quote!(#inner))));
        Some(quote! {
            // Transposed when the elements of a column are consecutive and those of a row are
            // not (the same in every thread: the first row and column of the block).
            let #c: bool = {
                let (__q0, __q1, __qr) = (#p0, #p1, #pr);
                (__q1 as usize) != (__q0 as usize) + #bytes && (__qr as usize) == (__q0 as usize) + #bytes
            };
        })
    }

    /// The mask of each of the 8 elements of the chunk at `__f0` in staging `o` (`true` for an
    /// unmasked load).
    fn chunk_masks(&mut self, oc: &OpCx<'_>, o: Staging) -> Vec<TokenStream> {
        match oc.op.mask {
            Some(mk) => (0..8usize).map(|i| self.operand(oc.op.load, mk, &At::Flat(oc.flat_in(o, quote!(#i))))).collect(),
            None => vec![quote!(true); 8],
        }
    }

    /// Whether all of the chunk's elements are unmasked, in staging `o`: one test at its ends
    /// along a row (else each of `masks`, the masks along the row), one element's down a
    /// column when the mask does not vary along it.
    fn chunk_unmasked(&mut self, oc: &OpCx<'_>, o: Staging, masks: &[TokenStream]) -> TokenStream {
        let op = oc.op;
        match (op.mask, o) {
            (Some(mk), Staging::Rows) => self.load_chunk_all(op.load, mk, &quote!(__f0), 8).unwrap_or_else(|| quote!((true #(&& #masks)*))),
            (Some(mk), Staging::Cols) => {
                let down = self.chunk_masks(oc, Staging::Cols);
                if self.mask_varies(op.load, mk, 0) { quote!((true #(&& #down)*)) } else { down[0].clone() }
            }
            (None, _) => quote!(true),
        }
    }

    /// A widened operand's widening of this thread's chunks of buffer `__cb` into f16 tile
    /// `__pr` (of the two f16 tile pairs in `smem`).
    fn widen_chunks(&self, oc: &OpCx<'_>, smem: &PipeSmem) -> TokenStream {
        let d = &self.p.d;
        let (e, tile_off, stage_bytes, f16_pair) = (&oc.e, oc.tile_off, oc.stage_bytes, smem.tiles.f16_pair);
        let f16_tile = smem.f16_off + if oc.oi == 0 { 0 } else { smem.tiles.f16_a };
        let s0 = oc.s0_in(Staging::Rows);
        let chunks_w = (0..oc.per_thread).map(|jc| {
            oc.guard(
                jc,
                quote! {
                    let __f0: usize = #d::opaque_usize(__c * 8);
                    #d::widen_shared::<#e>(
                        #d::smem_addr() + (#tile_off + __cb * #stage_bytes + __c * 8) as u32,
                        #d::smem_addr() + (#f16_tile + __pr * #f16_pair + (#s0) * 2) as u32,
                    );
                },
            )
        });
        quote!(#(#chunks_w)*)
    }

    /// The bounds tests of the checked copies of operand `op` (pointer block `ptr_block`,
    /// elements `e`): the chunk's, which `inb` (the flag of the proof before the loop, where
    /// there is one) passes for every chunk, and the element path's.
    fn chunk_checks(&self, op: &PipeOp, ptr_block: ExprId, inb: Option<&Ident>, e: &TokenStream) -> ChunkChecks {
        let span = self.k.exprs[op.load].span.start;
        let chunk_fits = self.fits_code_opaque(ptr_block, &quote!(__g), 8);
        let fits = match inb {
            Some(inb) => quote!((#inb || #chunk_fits)),
            None => chunk_fits,
        };
        ChunkChecks {
            fits,
            open: self.chunk_check_open(ptr_block, e),
            check: self.chunk_check_elem(ptr_block, &format_ident!("__a"), &quote!(__m), &format_ident!("__k"), span),
            close: self.chunk_check_close(ptr_block, span),
        }
    }

    /// Element `__f0 + __i` of the chunk in staging `o` (see [`OpCx::flat_in`]): its pointer
    /// (before the iteration's offset), its mask and its `other` value.
    fn chunk_elem(&mut self, oc: &OpCx<'_>, o: Staging) -> (TokenStream, TokenStream, TokenStream) {
        let (op, e) = (oc.op, &oc.e);
        let at_i = At::Flat(oc.flat_in(o, quote!(__i)));
        (
            self.ev(op.base, &at_i),
            op.mask.map(|mk| self.operand(op.load, mk, &at_i)).unwrap_or(quote!(true)),
            op.other.map(|o| self.operand(op.load, o, &at_i)).unwrap_or(quote!(<#e as ::core::default::Default>::default())),
        )
    }

    /// The element path of a chunk in staging `o` into `__sp`: a loop over its elements (not
    /// unrolled: its trip count is opaque, so that the rarely taken code stays small and the K
    /// loop fits the instruction cache) that binds each one's mask bit `__m` and address `__a`
    /// and stores `value` (given the element's `other` value).
    fn elem_loop(&mut self, oc: &OpCx<'_>, o: Staging, value: &dyn Fn(&TokenStream) -> TokenStream) -> TokenStream {
        let (d, e, off) = (&self.p.d, &oc.e, &oc.off);
        let (b_i, m_i, o_i) = self.chunk_elem(oc, o);
        let value = value(&o_i);
        quote! {
            let __ne: usize = #d::opaque_usize(8);
            let mut __i: usize = 0;
            while __i < __ne {
                let __m: bool = #m_i;
                let __a: *mut #e = #d::ptr_add(#b_i, #off);
                #d::store(__sp.add(__i), #value);
                __i += 1;
            }
        }
    }

    /// The checked element path of a chunk in staging `o` into `__sp`: each element is read
    /// where it is unmasked and inside its buffer (a fault reported otherwise), else `other`.
    fn checked_elems(&mut self, oc: &OpCx<'_>, checks: &ChunkChecks, o: Staging) -> TokenStream {
        let d = &self.p.d;
        let ChunkChecks { open, check, close, .. } = checks;
        let checked_loop = self.elem_loop(oc, o, &|o_i| {
            quote!({
                #check
                if __k { #d::load(__a) } else { #o_i }
            })
        });
        quote! {
            #open
            #checked_loop
            #close
        }
    }

    /// The unchecked element path of a chunk in staging `o` into `__sp`, for the loop version
    /// whose accesses are all proven in bounds before the loop.
    fn proven_elems(&mut self, oc: &OpCx<'_>, o: Staging) -> TokenStream {
        let d = &self.p.d;
        self.elem_loop(oc, o, &|o_i| quote!(if __m { #d::load(__a) } else { #o_i }))
    }

    /// The checked copies of this thread's chunks in staging `o`: a chunk whose elements are
    /// unmasked and inside the buffer goes by `cp.async` in the widest pieces its address
    /// allows, any other element by element.
    fn checked_chunks(&mut self, oc: &OpCx<'_>, checks: &ChunkChecks, chunk_ptr: &ChunkPtr<'_>, masks: &[TokenStream], o: Staging) -> TokenStream {
        let (all, fits) = (self.chunk_unmasked(oc, o, masks), &checks.fits);
        let elems = self.checked_elems(oc, checks, o);
        self.chunk_copies(oc, chunk_ptr, (&oc.so_in(o), None), &quote!(#all && #fits), true, &elems)
    }

    /// Before the loop, the registers `so` that hold each of this thread's chunks' offset in
    /// its stage (along the rows).
    fn so_registers(&self, oc: &OpCx<'_>, so: &Ident) -> TokenStream {
        let (per_thread, s0) = (oc.per_thread, oc.s0_in(Staging::Rows));
        let so_init = (0..per_thread).map(|jc| {
            oc.guard(
                jc,
                quote! {
                    let __f0: usize = __c * 8;
                    #so[#jc] = ((#s0) * 2) as u32;
                },
            )
        });
        quote! {
            let mut #so: [u32; #per_thread] = [0u32; #per_thread];
            #(#so_init)*
        }
    }

    /// The copies of this thread's chunks (base pointers `ptr`), each when `test` holds: with
    /// `pieces` (the checked copies, whose `test` leaves out the alignment), `cp.async` in the
    /// widest pieces the address allows (16, 8 or 4 bytes: rows whose length in bytes is not a
    /// multiple of 16 still bypass the registers), or, at an address aligned only to its
    /// elements (rows of an odd number of 2-byte elements), through registers with all of the
    /// chunk's loads in flight together (`copy_chunk`; a chunk that is not contiguous has an
    /// address no copy accepts), else one `cp.async` of the whole chunk (16 bytes, 8 for a widened
    /// operand). `__f0` and the shared offset are recomputed per iteration (a few integer
    /// operations) rather than hoisted out of the loop into registers, except where `so` says
    /// otherwise: the chunk's offset in its stage, computed from `__f0`, or read from the
    /// registers `so_regs` that hold it per chunk.
    /// The chunks that fail are marked in `__slow` and copied element by element (`scalar`)
    /// after the others, by one loop over the marks: the element path is written once per
    /// operand instead of once per chunk. (A thread with one chunk keeps it in place.)
    fn chunk_copies(&self, oc: &OpCx<'_>, ptr: &ChunkPtr<'_>, (so, so_regs): (&TokenStream, Option<&Ident>), test: &TokenStream, pieces: bool, scalar: &TokenStream) -> TokenStream {
        let (d, e, off, threads, per_thread) = (&self.p.d, &oc.e, &oc.off, oc.threads, oc.per_thread);
        let (chunk_bytes, size) = (proc_macro2::Literal::usize_unsuffixed(8 * oc.size), proc_macro2::Literal::usize_unsuffixed(oc.size));
        let copy = if oc.widen {
            quote!(#d::cp_async_8(#d::smem_addr() + __so as u32, __g as *const u8);)
        } else {
            quote!(#d::cp_async_16(#d::smem_addr() + __so as u32, __g as *const u8);)
        };
        let deferred = (2..=64).contains(&per_thread);
        // Rows of 2-byte elements aligned only to 2 bytes: with registers to spare (5 a chunk
        // beside the accumulators), every chunk's loads are issued before any is stored.
        let halves = pieces && oc.size == 2 && !oc.widen && per_thread <= 32 && oc.room_for(5 * per_thread);
        let mark_t = if per_thread <= 32 { quote!(u32) } else { quote!(u64) };
        let chunks = (0..per_thread).map(|jc| {
            let (cp, so_jc) = (ptr(jc), so_regs.map_or_else(|| so.clone(), |r| quote!(#r[#jc] as usize)));
            let slow = if deferred {
                quote!(__slow |= (1 as #mark_t) << #jc;)
            } else {
                quote! {
                    let __sp = __smem.add(__so) as *mut #e;
                    #scalar
                }
            };
            let attempt = if halves {
                quote! {
                    if !(#test && (#d::cp_async_pieces::<16>(#d::smem_addr() + __so as u32, __g as *const u8) || {
                        let __h = (__g as usize) % 2 == 0;
                        if __h {
                            __half[#jc] = #d::load_chunk_halves(__g as *const u8);
                            __halves |= 1u32 << #jc;
                        }
                        __h
                    })) {
                        #slow
                    }
                }
            } else if pieces {
                quote! {
                    if !(#test && #d::copy_chunk::<#chunk_bytes, #size>(#d::smem_addr() + __so as u32, __g as *const u8)) {
                        #slow
                    }
                }
            } else {
                quote! {
                    if #test {
                        #copy
                    } else {
                        #slow
                    }
                }
            };
            oc.guard(
                jc,
                quote! {
                    let __f0: usize = #d::opaque_usize(__c * 8);
                    let __g: *mut #e = #d::ptr_add(#cp, #off);
                    let __so: usize = __dst + #so_jc;
                    #attempt
                },
            )
        });
        // Chunks read into registers, stored once every chunk's loads were issued.
        let (halves_decl, halves_store) = if halves {
            let stores = (0..per_thread).map(|jc| {
                let so_jc = so_regs.map_or_else(|| so.clone(), |r| quote!(#r[#jc] as usize));
                oc.guard(
                    jc,
                    quote! {
                        if __halves & (1u32 << #jc) != 0 {
                            let __f0: usize = #d::opaque_usize(__c * 8);
                            #d::store_chunk_halves(#d::smem_addr() + (__dst + #so_jc) as u32, __half[#jc]);
                        }
                    },
                )
            });
            (
                quote! {
                    let mut __half: [[u32; 5]; #per_thread] = [[0u32; 5]; #per_thread];
                    let mut __halves: u32 = 0;
                },
                quote!(#(#stores)*),
            )
        } else {
            (quote!(), quote!())
        };
        if !deferred {
            return quote!(#halves_decl #(#chunks)* #halves_store);
        }
        quote! {
            let mut __slow: #mark_t = 0;
            #halves_decl
            #(#chunks)*
            #halves_store
            while __slow != 0 {
                let __c: usize = (__slow.trailing_zeros() as usize) * #threads + __tid;
                __slow &= __slow - 1;
                let __f0: usize = #d::opaque_usize(__c * 8);
                let __sp = __smem.add(__dst + #so) as *mut #e;
                #scalar
            }
        }
    }

    /// The tensor-map copy of the operand `oc`, whose base is the buffer `b` plus the offsets
    /// blocks of `sum`, and the maps it takes (`tma`: its maps per staging, the first in slot
    /// `first_map`); `elems`: the mask and `other` of element `__f0 + __i` and whether the
    /// chunk at `__f0` is unmasked, along the rows. The operand's rows go to the threads after
    /// warp 0 (which issues the first copies) and after the previous operands' rows
    /// (`rows_before`, which this advances), so that each thread checks few rows.
    fn operand_tma(&mut self, cx: &PipeCx<'_>, oc: &OpCx<'_>, (b, sum): (&ScalarBase, PtrSum), elems: (TokenStream, TokenStream, TokenStream), (tma, first_map): (&[(Staging, TmaDesc)], usize), rows_before: &mut usize) -> (Option<TmaOperand>, Vec<TmaDesc>) {
        let threads = self.threads;
        let (m_i, o_i, all) = elems;
        let rot = if threads > 32 { (threads - (32 + *rows_before) % threads) % threads } else { 0 };
        *rows_before += oc.rows;
        let ctx = TmaCtx {
            oi: oc.oi,
            op: oc.op,
            sum,
            e: oc.e.clone(),
            off_expr: oc.off_expr.clone(),
            len: b.len.clone(),
            base_off: b.offset.clone(),
            tile_off: oc.tile_off,
            stage_bytes: oc.stage_bytes,
            per_thread: oc.per_thread,
            chunks: oc.chunks,
            rot,
            layout: oc.layout,
            var: (cx.var_id.clone(), cx.var_t.clone()),
            m_i,
            o_i,
            all,
            s0: oc.s0_in(Staging::Rows),
        };
        self.tma_operand(&ctx, tma, first_map, cx.var)
    }

    /// Where each of this thread's chunks of operand `oi` starts, worked out before the loop:
    /// the code that fills `__pb<oi>` (a base pointer, or an integer offset from the scalar
    /// pointer of a `split` base `p + offsets` (see [`PtrSum`]), per chunk; `at(i)`: element `i` of the chunk
    /// at `__f0`) and the range of the offsets (`__lo<oi>`, `__hi<oi>`); and a chunk's base pointer
    /// in the loop, checked (misaligned when the chunk is not contiguous) and proven.
    fn chunk_bases(&mut self, op: &PipeOp, oi: usize, split: Option<&PtrSum>, at: &dyn Fn(TokenStream) -> At, e: &TokenStream, (per_thread, chunks): (usize, usize)) -> (TokenStream, ChunkPtr<'a>, ChunkPtr<'a>) {
        let (k, d, threads) = (self.k, &self.p.d, self.threads);
        let (pb, lo, hi) = (format_ident!("__pb{}", oi), format_ident!("__lo{}", oi), format_ident!("__hi{}", oi));
        let size = elem_size(&k.exprs[op.x].ty.elem);
        // Whether the chunk's elements 1..8 follow its first (`first`, bound to `__q0`) in
        // memory, `next(i)` being element `i`'s test. Unrolled, so that the tests share the
        // row arithmetic of the chunk's elements: this runs in every block's prologue.
        let contiguous = |first: TokenStream, next: &mut dyn FnMut(TokenStream) -> TokenStream| {
            let tests = (1..8usize).map(|i| next(quote!(#i)));
            quote! {{
                let __q0 = #first;
                (__q0, true #(&& #tests)*)
            }}
        };
        let chunk_bytes = proc_macro2::Literal::usize_unsuffixed(8 * size);
        let guard = |jc: usize, body: TokenStream| chunk_guard(threads, chunks, jc, body);
        // `chunk_ptr`: the chunk's base pointer (misaligned when the chunk is not contiguous);
        // `proven_ptr`: the same for the loop version where every chunk is proven contiguous.
        let (pb_t, pb_init, chunk_ptr, proven_ptr, pre_chunks): (TokenStream, TokenStream, ChunkPtr<'a>, ChunkPtr<'a>, Vec<TokenStream>) = match split {
            Some(sum) => {
                // The chunk's first offset in type `wide` and whether the chunk is contiguous,
                // then the offset kept (`ot`) when it is: one block's in its type; the sum of
                // several in `i64` (what the kernel's pointer arithmetic computes), kept as an
                // `i32` when every block is one and the sum fits (else the chunk is marked).
                let (ot, wide, offs, keep, narrow) = match sum.offs[..] {
                    [o] => {
                        let ot = self.elem(&k.exprs[o].ty);
                        let first = self.operand(op.base, o, &at(quote!(0usize)));
                        let offs = contiguous(first, &mut |i| {
                            let oi = self.operand(op.base, o, &at(i.clone()));
                            quote!(#oi == <#ot as #d::Num>::add(__q0, <#ot as #d::Elem>::from_i64(#i as i64)))
                        });
                        (ot.clone(), ot, offs, quote!(__ct), None)
                    }
                    _ => {
                        let first = self.offsets_at(op.base, sum, &at(quote!(0usize)));
                        let offs = contiguous(first, &mut |i| {
                            let oi = self.offsets_at(op.base, sum, &at(i.clone()));
                            quote!(#oi == __q0.wrapping_add(#i as i64))
                        });
                        if sum.offs.iter().all(|&o| k.exprs[o].ty.dtype() == Some(DType::I32)) {
                            (quote!(i32), quote!(i64), offs, quote!(__ct && __o0 == (__o0 as i32) as i64), Some(quote!(as i32)))
                        } else {
                            (quote!(i64), quote!(i64), offs, quote!(__ct), None)
                        }
                    }
                };
                let pv = self.ev(sum.base, &At::Own);
                let pv2 = pv.clone();
                let chunks_code = (0..per_thread)
                    .map(|jc| {
                        guard(
                            jc,
                            quote! {
                                let __f0: usize = __c * 8;
                                let (__o0, __ct): (#wide, bool) = #offs;
                                #pb[#jc] = if #keep { __o0 #narrow } else { <#ot as #d::Bounds>::lowest() };
                                if #pb[#jc] != <#ot as #d::Bounds>::lowest() {
                                    __al = __al && (#d::ptr_add(#pv, __o0) as usize) % #chunk_bytes == 0;
                                    let __o: i64 = #d::cast::<#wide, i64>(__o0);
                                    #lo = if __o < #lo { __o } else { #lo };
                                    #hi = if __o > #hi { __o } else { #hi };
                                } else {
                                    __nc = true;
                                }
                            },
                        )
                    })
                    .collect();
                let (pb2, e2) = (pb.clone(), e.clone());
                let pb3 = pb.clone();
                (
                    ot.clone(),
                    quote!(<#ot as #d::Bounds>::lowest()),
                    Box::new(move |jc: usize| quote!({ let __b: *mut #e2 = #d::ptr_add(#pv, #pb2[#jc]); if #pb2[#jc] != <#ot as #d::Bounds>::lowest() { __b } else { __b.map_addr(|__a| __a | 1) } })),
                    Box::new(move |jc: usize| quote!(#d::ptr_add(#pv2, #pb3[#jc]))),
                    chunks_code,
                )
            }
            None => {
                let first = self.ev(op.base, &at(quote!(0usize)));
                let ptrs = contiguous(first, &mut |i| {
                    let pi = self.ev(op.base, &at(i.clone()));
                    quote!((#pi as usize) == (__q0 as usize) + #i * #size)
                });
                // A chunk that is not contiguous gets an address no copy test passes: odd for
                // elements of two bytes or more (the loop's offsets are whole elements, so it stays
                // odd); for bytes, whose offsets may be odd, outside every buffer (the top bit set:
                // the bounds test, which this base has no proof to skip, fails).
                let mark = if size == 1 { quote!(__a | (1usize << 63)) } else { quote!(__a | 1) };
                let chunks_code = (0..per_thread)
                    .map(|jc| {
                        guard(
                            jc,
                            quote! {
                                let __f0: usize = __c * 8;
                                let (__p0, __ct) = #ptrs;
                                #pb[#jc] = if __ct { __p0 } else { __p0.map_addr(|__a| #mark) };
                            },
                        )
                    })
                    .collect();
                let (pb2, pb3) = (pb.clone(), pb.clone());
                (quote!(*mut #e), quote!(::core::ptr::null_mut()), Box::new(move |jc: usize| quote!(#pb2[#jc])), Box::new(move |jc: usize| quote!(#pb3[#jc])), chunks_code)
            }
        };
        let pre = quote! {
            let mut #pb: [#pb_t; #per_thread] = [#pb_init; #per_thread];
            let mut #lo: i64 = i64::MAX;
            let mut #hi: i64 = i64::MIN;
            let mut __nc: bool = false;
            let mut __al: bool = true;
            #(#pre_chunks)*
            // A chunk that is not contiguous (element path) or not 16-byte aligned (`cp.async`
            // in pieces) leaves the loop to its checked version.
            if __nc || !__al {
                #lo = i64::MAX;
                #hi = i64::MIN;
            }
        };
        (pre, chunk_ptr, proven_ptr)
    }
}

/// Chunk `jc * threads + __tid` of `chunks` (`__c`): `body` runs for it when it exists (the
/// test is left out when every thread has chunk `jc`).
fn chunk_guard(threads: usize, chunks: usize, jc: usize, body: TokenStream) -> TokenStream {
    if (jc + 1) * threads <= chunks {
        quote!({ let __c: usize = #jc * #threads + __tid; #body })
    } else {
        quote!({ let __c: usize = #jc * #threads + __tid; if __c < #chunks { #body } })
    }
}

/// Before the loop, the proof that every contiguous chunk of this thread stays in operand
/// `oi`'s buffer (`b`) in every iteration (flag `inb`): the chunks' offsets lie in
/// [lo + min offset, hi + max offset + 8) (the offset `off_expr` of iteration `__it` is
/// monotone in the iteration) from the base pointer, `__sc<oi>` elements into the buffer, so
/// the loop tests one flag instead of each chunk.
fn bounds_proof(oi: usize, b: &ScalarBase, off_expr: &TokenStream, (lo, hi, inb): (&Ident, &Ident, &Ident)) -> [TokenStream; 2] {
    let sc = format_ident!("__sc{}", oi);
    let (sc_v, len) = (&b.offset, &b.len);
    [
        quote!(let #sc: i64 = #sc_v;),
        quote! {
            let #inb: bool = {
                let __first: i64 = { let __it: i64 = 0; #off_expr };
                let __second: i64 = { let __it: i64 = 1; #off_expr };
                let __last: i64 = { let __it: i64 = if __n > 0 { __n - 1 } else { 0 }; #off_expr };
                let (__mn, __mx) = if __first < __last { (__first, __last) } else { (__last, __first) };
                // Offsets of 16-bit elements keep 16-byte alignment in every iteration.
                let __aligned = __first % 8 == 0 && (__second - __first) % 8 == 0;
                __aligned && #lo <= #hi && #lo + __mn + #sc >= 0 && #hi + __mx + 8 + #sc <= #len as i64
            };
        },
    ]
}
