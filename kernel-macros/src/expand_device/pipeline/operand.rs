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

impl DevGen<'_> {
    /// The code of operand `oi` of the pipelined loop `cx`, with the tensor maps `tma` it may
    /// copy with (its first in slot `first_map`; `rows_before`: the rows of the operands before
    /// it, which the tensor-map checks spread over the threads).
    pub(super) fn pipe_operand(&self, cx: &PipeCx<'_>, oi: usize, op: &PipeOp, tma: Vec<(Staging, TmaDesc)>, first_map: usize, rows_before: &mut usize) -> OperandCode {
        let (k, d, threads) = (self.k, &self.d, self.threads);
        let (plan, var, var_id, var_t, wg) = (cx.plan, cx.var, &cx.var_id, &cx.var_t, cx.wg);
        let PipeSmem { tiles: PipeTiles { widen, tile_a, stage_bytes, f16_a, f16_pair }, base_off, f16_off, .. } = cx.smem;
        let mut pre = Vec::new();
        let mut widen_op = None;
        let (mut tma_oper, mut tma_descs) = (None, Vec::new());
        let e = self.elem(&k.exprs[op.x].ty);
        let chunks = op.numel / 8;
        let per_thread = chunks.div_ceil(threads);
        let (rows, inner) = (op.numel / op.inner, op.inner);
        // A transposable operand's staging, chosen before the loop (`__cols<oi>`): its chunks
        // run along the rows or, transposed, down the columns. `flat(i)`: the row-major flat
        // index of element `i` of the chunk that starts at `__f0` in the staging's order.
        let cols = op.transposable.then(|| format_ident!("__cols{}", oi));
        let flat_in = |o: Staging, i: TokenStream| match o {
            Staging::Rows => quote!((__f0 + #i)),
            Staging::Cols => quote!(((__f0 % #rows + #i) * #inner + __f0 / #rows)),
        };
        let flat = |i: TokenStream| match &cols {
            None => flat_in(Staging::Rows, i),
            Some(c) => {
                let (r, cl) = (flat_in(Staging::Rows, i.clone()), flat_in(Staging::Cols, i));
                quote!((if #c { #cl } else { #r }))
            }
        };
        let at_tok = |i: TokenStream| At::Flat(flat(i));
        let at_in = |o: Staging, i: usize| At::Flat(flat_in(o, quote!(#i)));
        if let Some(c) = &cols {
            let bytes = elem_size(&k.exprs[op.x].ty.elem);
            let (p0, p1, pr) = (self.ev(op.base, &At::Flat(quote!(0usize))), self.ev(op.base, &At::Flat(quote!(1usize))), self.ev(op.base, &At::Flat(quote!(#inner))));
            pre.push(quote! {
                // Transposed when the elements of a column are consecutive and those of a row are
                // not (the same in every thread: the first row and column of the block).
                let #c: bool = {
                    let (__q0, __q1, __qr) = (#p0, #p1, #pr);
                    (__q1 as usize) != (__q0 as usize) + #bytes && (__qr as usize) == (__q0 as usize) + #bytes
                };
            });
        }
        // A base `scalar_ptr + offsets` keeps one integer offset per chunk (one register for
        // i32) instead of a 64-bit pointer. A chunk that is not contiguous is marked (offset
        // `MIN`, and its pointer made odd, which for bytes also lies outside the buffer) so
        // that its address fails every alignment test (16, 8 or 4 bytes) or the bounds test,
        // and it takes the element-wise path.
        let split = match &k.exprs[op.base].kind {
            ExprKind::PtrAdd(p, o) if self.shapes[*p].is_empty() && matches!(k.exprs[*o].ty.dtype(), Some(DType::I32 | DType::I64)) => Some((*p, *o)),
            _ => None,
        };
        let masks_in = |o: Staging| -> Vec<TokenStream> {
            match op.mask {
                Some(mk) => (0..8).map(|i| self.operand(op.load, mk, &at_in(o, i))).collect(),
                None => vec![quote!(true); 8],
            }
        };
        let masks = masks_in(Staging::Rows);
        let off = format_ident!("__off{}", oi);
        let (lo, hi, inb) = (format_ident!("__lo{}", oi), format_ident!("__hi{}", oi), format_ident!("__inb{}", oi));
        let size = elem_size(&k.exprs[op.x].ty.elem);
        // A chunk's bytes: 16 (one `cp.async` of 16 bytes), or 8 for a widened operand.
        let chunk_bytes = proc_macro2::Literal::usize_unsuffixed(8 * size);
        let guard = |jc: usize, body: TokenStream| chunk_guard(threads, chunks, jc, body);
        let (pre_bases, chunk_ptr, proven_ptr) = self.chunk_bases(op, oi, split, &at_tok, &e, (per_thread, chunks));
        pre.push(pre_bases);
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
        let tile_off = base_off + if oi == 0 { 0 } else { tile_a };
        // Where the chunk that starts at `__f0` goes in its tile.
        let s0_in = |o: Staging| match o {
            Staging::Rows => Tile::of(plan.layout, rows, inner).index(quote!(__f0)),
            Staging::Cols => Tile::of(plan.layout, inner, rows).index(quote!(__f0)),
        };
        let s0 = s0_in(Staging::Rows);
        // The widening of this thread's chunks of buffer `__cb` into f16 tile `__pr`.
        if widen {
            let f16_tile = f16_off + if oi == 0 { 0 } else { f16_a };
            let chunks_w = (0..per_thread).map(|jc| {
                guard(
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
            widen_op = Some(quote!(#(#chunks_w)*));
        }
        let span = k.exprs[op.load].span.start;
        let ptr_block = match k.exprs[op.load].kind {
            ExprKind::Load { ptr, .. } => ptr,
            _ => op.load,
        };
        let chunk_fits = self.fits_code_opaque(ptr_block, &quote!(__g), 8);
        // With offsets from the pointer parameter itself, one test before the loop covers all
        // of this thread's chunks in every iteration (`__inb`, below); the per-chunk test
        // only runs when that one fails.
        let based = split.and_then(|(p, _)| self.scalar_base(p, ptr_block));
        let range = based.as_ref().map(|b| b.len.clone());
        let fits = if range.is_some() { quote!((#inb || #chunk_fits)) } else { chunk_fits };
        let (open, close) = (self.chunk_check_open(ptr_block, &e), self.chunk_check_close(ptr_block, span));
        // The element path of a chunk is a loop (not unrolled: its trip count is opaque), so
        // that the rarely taken code stays small and the K loop fits the instruction cache.
        let elem_in = |o: Staging| {
            let at_i = At::Flat(flat_in(o, quote!(__i)));
            (
                self.ev(op.base, &at_i),
                op.mask.map(|mk| self.operand(op.load, mk, &at_i)).unwrap_or(quote!(true)),
                op.other.map(|o| self.operand(op.load, o, &at_i)).unwrap_or(quote!(<#e as ::core::default::Default>::default())),
            )
        };
        let (_, m_i, o_i) = elem_in(Staging::Rows);
        let elem_loop = |o: Staging, body: &dyn Fn(&TokenStream) -> TokenStream| {
            let (b_i, m_i, o_i) = elem_in(o);
            let body = body(&o_i);
            quote! {
                let __ne: usize = #d::opaque_usize(8);
                let mut __i: usize = 0;
                while __i < __ne {
                    let __m: bool = #m_i;
                    let __a: *mut #e = #d::ptr_add(#b_i, #off);
                    #body
                    __i += 1;
                }
            }
        };
        let check = self.chunk_check_elem(ptr_block, &format_ident!("__a"), &quote!(__m), &format_ident!("__k"), span);
        let scalar_in = |o: Staging| {
            let checked_loop = elem_loop(o, &|o_i| quote! {
                #check
                #d::store(__sp.add(__i), if __k { #d::load(__a) } else { #o_i });
            });
            quote! {
                #open
                #checked_loop
                #close
            }
        };
        // Whether all of the chunk's elements are unmasked: one test at its ends along a row,
        // one element's down a column when the mask does not vary along it.
        let all_in = |o: Staging| match (op.mask, o) {
            (Some(mk), Staging::Rows) => self.load_chunk_all(op.load, mk, &quote!(__f0), 8).unwrap_or_else(|| quote!((true #(&& #masks)*))),
            (Some(mk), Staging::Cols) => {
                let down = masks_in(Staging::Cols);
                if self.mask_varies(op.load, mk, 0) { quote!((true #(&& #down)*)) } else { down[0].clone() }
            }
            (None, _) => quote!(true),
        };
        let all = all_in(Staging::Rows);
        // The unchecked element path, for the loop version whose accesses are all proven in
        // bounds before the loop.
        let fast_scalar_in = |o: Staging| elem_loop(o, &|o_i| quote!(#d::store(__sp.add(__i), if __m { #d::load(__a) } else { #o_i });));
        // A proven chunk's copy: 16 bytes (8 for a widened operand) with `cp.async`. `__f0` and
        // the shared offset are recomputed per iteration (a few integer operations) rather than
        // hoisted out of the loop into registers, except where `so` says otherwise.
        let copy = if widen {
            quote!(#d::cp_async_8(#d::smem_addr() + __so as u32, __g as *const u8);)
        } else {
            quote!(#d::cp_async_16(#d::smem_addr() + __so as u32, __g as *const u8);)
        };
        // One chunk's copy, when `test` holds: with `pieces` (the checked copies, whose `test`
        // leaves out the alignment), `cp.async` in the widest pieces the address allows (16, 8
        // or 4 bytes: rows whose length in bytes is not a multiple of 16 still bypass the
        // registers; a chunk that is not contiguous has an address no piece accepts), else
        // `copy`.
        // The chunks that fail are marked in `__slow` and copied element by element after the
        // others, by one loop over the marks: the element path is written once per operand
        // instead of once per chunk. (A thread with one chunk keeps it in place.) `so`: the
        // chunk's offset in its stage, computed from `__f0`, or read from the registers
        // `so_regs` that hold it per chunk.
        let chunk_code = |ptr: &ChunkPtr<'_>, so: &TokenStream, so_regs: Option<&Ident>, test: &TokenStream, pieces: bool, scalar: &TokenStream| -> TokenStream {
            let deferred = (2..=64).contains(&per_thread);
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
                let attempt = if pieces {
                    quote! {
                        if !(#test && #d::cp_async_pieces::<#chunk_bytes>(#d::smem_addr() + __so as u32, __g as *const u8)) {
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
                guard(
                    jc,
                    quote! {
                        let __f0: usize = #d::opaque_usize(__c * 8);
                        let __g: *mut #e = #d::ptr_add(#cp, #off);
                        let __so: usize = __dst + #so_jc;
                        #attempt
                    },
                )
            });
            if !deferred {
                return quote!(#(#chunks)*);
            }
            quote! {
                let mut __slow: #mark_t = 0;
                #(#chunks)*
                while __slow != 0 {
                    let __c: usize = (__slow.trailing_zeros() as usize) * #threads + __tid;
                    __slow &= __slow - 1;
                    let __f0: usize = #d::opaque_usize(__c * 8);
                    let __sp = __smem.add(__dst + #so) as *mut #e;
                    #scalar
                }
            }
        };
        // Where a chunk goes in its stage: its place in the swizzled f16 tile, or a widened
        // operand's raw chunk `__c`.
        let so_in = |o: Staging| {
            let s0 = s0_in(o);
            if widen { quote!((__c * 8)) } else { quote!((#s0) * 2) }
        };
        let issue_in = |o: Staging| {
            let all = all_in(o);
            chunk_code(&chunk_ptr, &so_in(o), None, &quote!(#all && #fits), true, &scalar_in(o))
        };
        // The proven version: every chunk is contiguous, 16-byte aligned and inside its
        // buffer in every iteration, so only the mask is tested. `wgmma` bodies compute each
        // chunk's shared-memory offset once before the loop (one register per chunk);
        // `mma.sync` bodies need those registers for their fragments and recompute it.
        let so = format_ident!("__so{}", oi);
        let fast_chunks = if wg && !widen {
            let so_init = (0..per_thread).map(|jc| {
                guard(
                    jc,
                    quote! {
                        let __f0: usize = __c * 8;
                        #so[#jc] = ((#s0) * 2) as u32;
                    },
                )
            });
            pre.push(quote! {
                let mut #so: [u32; #per_thread] = [0u32; #per_thread];
                #(#so_init)*
            });
            chunk_code(&proven_ptr, &so_in(Staging::Rows), Some(&so), &all, false, &fast_scalar_in(Staging::Rows))
        } else {
            chunk_code(&proven_ptr, &so_in(Staging::Rows), None, &all, false, &fast_scalar_in(Staging::Rows))
        };
        let fast_in = |o: Staging| chunk_code(&proven_ptr, &so_in(o), None, &all_in(o), false, &fast_scalar_in(o));
        if let Some(b) = &based {
            pre.extend(bounds_proof(oi, b, &off_expr, (&lo, &hi, &inb)));
        }
        // The tensor-map version needs, before the loop, the bounds proof and, per staging,
        // a valid map whose boxes are the operand's elements (`tma.rs`).
        if let (false, Some(ScalarBase { len, offset: sc, .. }), Some((_, o))) = (tma.is_empty(), &based, split) {
            let rows_n = op.numel / op.inner;
            // Rows go to the threads after warp 0 (which issues the first copies) and after
            // the previous operands' rows, so that each thread checks few rows.
            let rot = if threads > 32 { (threads - (32 + *rows_before) % threads) % threads } else { 0 };
            *rows_before += rows_n;
            let ctx = TmaCtx {
                oi,
                op,
                o,
                ot: self.elem(&k.exprs[o].ty),
                e: e.clone(),
                off_expr: off_expr.clone(),
                len: len.clone(),
                base_off: sc.clone(),
                tile_off,
                stage_bytes,
                per_thread,
                chunks,
                rot,
                layout: plan.layout,
                var: (var_id.clone(), var_t.clone()),
                m_i: m_i.clone(),
                o_i: o_i.clone(),
                all: all.clone(),
                s0: s0.clone(),
            };
            (tma_oper, tma_descs) = self.tma_operand(&ctx, &tma, first_map, var);
        }
        // A transposable operand's copies branch on its staging (uniform); the staging as
        // written keeps the code it has without the choice.
        let op_code = |rows: &TokenStream, cols_chunks: Option<TokenStream>| {
            let chunks = match (&cols, cols_chunks) {
                (Some(c), Some(cc)) => quote!(if #c { #cc } else { #rows }),
                _ => quote!(#rows),
            };
            quote! {{
                let #off: i64 = #off_expr;
                let __dst: usize = #tile_off + __buf * #stage_bytes;
                #chunks
            }}
        };
        let with_cols = |f: &dyn Fn(Staging) -> TokenStream| cols.is_some().then(|| f(Staging::Cols));

        OperandCode {
            pre,
            issue: op_code(&issue_in(Staging::Rows), with_cols(&issue_in)),
            fast: op_code(&fast_chunks, with_cols(&fast_in)),
            as_written: cols.is_some().then(|| (op_code(&issue_in(Staging::Rows), None), op_code(&fast_chunks, None))),
            widen: widen_op,
            proof: range.is_some().then(|| inb.clone()),
            tma: tma_oper,
            maps: tma_descs,
        }
    }

    /// Where each of this thread's chunks of operand `oi` starts, worked out before the loop:
    /// the code that fills `__pb<oi>` (a base pointer, or an integer offset from the scalar
    /// pointer of a `split` base `p + offsets`, per chunk; `at(i)`: element `i` of the chunk
    /// at `__f0`) and the range of the offsets (`__lo<oi>`, `__hi<oi>`); and a chunk's base pointer
    /// in the loop, checked (misaligned when the chunk is not contiguous) and proven.
    fn chunk_bases(&self, op: &PipeOp, oi: usize, split: Option<(ExprId, ExprId)>, at: &dyn Fn(TokenStream) -> At, e: &TokenStream, (per_thread, chunks): (usize, usize)) -> (TokenStream, ChunkPtr<'_>, ChunkPtr<'_>) {
        let (k, d, threads) = (self.k, &self.d, self.threads);
        let (pb, lo, hi) = (format_ident!("__pb{}", oi), format_ident!("__lo{}", oi), format_ident!("__hi{}", oi));
        let size = elem_size(&k.exprs[op.x].ty.elem);
        // Whether the chunk's elements 1..8 follow its first (`first`, bound to `__q0`) in
        // memory, `next(i)` being element `i`'s test. Unrolled, so that the tests share the
        // row arithmetic of the chunk's elements: this runs in every block's prologue.
        let contiguous = |first: TokenStream, next: &dyn Fn(TokenStream) -> TokenStream| {
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
        let (pb_t, pb_init, chunk_ptr, proven_ptr, pre_chunks): (TokenStream, TokenStream, ChunkPtr<'_>, ChunkPtr<'_>, Vec<TokenStream>) = match split {
            Some((p, o)) => {
                let ot = self.elem(&k.exprs[o].ty);
                let first = self.operand(op.base, o, &at(quote!(0usize)));
                let offs = contiguous(first, &|i| {
                    let oi = self.operand(op.base, o, &at(i.clone()));
                    quote!(#oi == <#ot as #d::Num>::add(__q0, <#ot as #d::Elem>::from_i64(#i as i64)))
                });
                let pv = self.ev(p, &At::Own);
                let pv2 = pv.clone();
                let chunks_code = (0..per_thread)
                    .map(|jc| {
                        guard(
                            jc,
                            quote! {
                                let __f0: usize = __c * 8;
                                let (__o0, __ct): (#ot, bool) = #offs;
                                #pb[#jc] = if __ct { __o0 } else { <#ot as #d::Bounds>::lowest() };
                                if #pb[#jc] != <#ot as #d::Bounds>::lowest() {
                                    __al = __al && (#d::ptr_add(#pv, __o0) as usize) % #chunk_bytes == 0;
                                    let __o: i64 = #d::cast::<#ot, i64>(__o0);
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
                let ptrs = contiguous(first, &|i| {
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
