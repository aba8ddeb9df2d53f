//! Where the operands of tensor-core `dot`s come from outside the software-pipelined K loop
//! (`pipeline.rs`): each is copied into a swizzled tile of shared memory, as the kernel's block
//! (`Staging::Rows`) or transposed (`Staging::Cols`, for operands loaded from memory that is
//! contiguous down their columns, read with `wgmma`'s transpose bit or `ldmatrix.trans`). In a loop,
//! an operand the loop does not change is copied once before it (*resident*), and an operand
//! loaded from addresses that depend only on the loop variable and values the loop does not
//! change is copied `depth` iterations *ahead* (`num_stages - 1`), into one of `depth + 1`
//! buffers used in turn, while the iterations before it compute (flash attention's key and
//! value tiles).

use super::*;

/// An operand copied `depth` iterations ahead: its first buffer and the distance to the next
/// (`depth + 1` in all), how it is staged, and the variable holding the index of the buffer the
/// current iteration reads (counted round, `0..=depth`).
#[derive(Clone)]
pub(super) struct Ahead {
    first: usize,
    delta: usize,
    depth: usize,
    staging: Staging,
    buf: Ident,
    /// With tensor maps (`pipeline/ahead.rs`), in the loop that copies with them: the wait for
    /// this operand's tile.
    tma: Option<TokenStream>,
}

impl Ahead {
    /// Whether the loop version being generated copies this operand with tensor maps.
    pub(super) fn by_tma(&self) -> bool {
        self.tma.is_some()
    }
}

/// The copies ahead of one loop, for the code around it (`stmt.rs`): the first `depth`
/// iterations' copies (before the loop), the copies `depth` iterations ahead at the top of each
/// iteration (from its variable `__i`), both ending with `cp.async` groups, the variable the
/// caller declares (`u32`, 0) and passes to [`AheadCode::advance`] at the end of each iteration.
pub(super) struct AheadCode {
    pub(super) first: TokenStream,
    pub(super) next: TokenStream,
    pub(super) buf: Ident,
    pub(super) depth: usize,
    /// With tensor maps, the code of the loop version that copies with them, taken when its
    /// `flag` is set (`first` sets it before the loop; the same in every thread): its `next`,
    /// `advance` and `after` (the last after either version).
    pub(super) tma: Option<pipeline::AheadTma>,
}

/// Whether `v`, a value of the loop variable, lies in the range of the loop being generated
/// (`__start` to `__end` by `__step`, `stmt.rs`'s `for_stmt`).
pub(super) fn in_loop_range(v: &TokenStream) -> TokenStream {
    quote!(((__step > 0 && #v < __end) || (__step < 0 && #v > __end)))
}

impl AheadCode {
    /// The code at the end of an iteration: the next iteration reads the next buffer.
    pub(super) fn advance(&self) -> TokenStream {
        let (buf, last) = (&self.buf, self.depth as u32);
        quote!(#buf = if #buf == #last { 0 } else { #buf + 1 };)
    }
}

impl DevGen<'_> {
    /// The tile and staging of operand `x` (`[rows, inner]`) of a `dot` in `layout`.
    pub(super) fn operand_tile(&self, x: ExprId, layout: Layout, rows: usize, inner: usize) -> (Tile, Staging) {
        match self.staging_of(x, rows) {
            Staging::Cols => (Tile::of(layout, inner, rows), Staging::Cols),
            Staging::Rows => (Tile::of(layout, rows, inner), Staging::Rows),
        }
    }

    /// Operand `x` (`[rows, inner]`) of a `dot` in `layout`, for the statement being generated:
    /// the shared-memory offset of its tile (a `usize` expression), the code that makes it
    /// ready there (to be followed by the staging fence and a barrier), and its staging.
    pub(super) fn operand_source(&mut self, x: ExprId, layout: Layout, (rows, inner): (usize, usize), align: usize) -> (TokenStream, TokenStream, Staging) {
        let d = &self.p.d;
        if let Some(off) = self.resident.get(&x) {
            return (quote!(#off), quote!(), Staging::Rows);
        }
        if let Some(Ahead { first, delta, depth, staging, buf, tma }) = self.ahead.get(&x).cloned() {
            // This iteration's copy is the oldest of the (at most) `depth + 1` pending groups.
            let depth = proc_macro2::Literal::usize_unsuffixed(depth);
            let wait = tma.unwrap_or_else(|| quote!(#d::cp_async_wait_group::<#depth>();));
            return (quote!((#first + (#buf as usize) * #delta)), wait, staging);
        }
        let off = self.alloc_aligned((rows * inner * 2).next_multiple_of(align), align);
        let (tile, staging) = self.operand_tile(x, layout, rows, inner);
        let code = self.stage_operand(x, tile, staging, &quote!(#off));
        (quote!(#off), quote!(#code #d::cp_async_wait_all();), staging)
    }

    /// Code copying operand `x` into `tile` at shared offset `off` (a `usize` expression) as
    /// `staging` says; its `cp.async` copies are left in flight.
    pub(super) fn stage_operand(&mut self, x: ExprId, tile: Tile, staging: Staging, off: &TokenStream) -> TokenStream {
        self.stage_operand_in(x, tile, staging, off, false)
    }

    /// [`Self::stage_operand`]; with `cold`, each chunk's index is opaque, so that no per-chunk
    /// address arithmetic is hoisted out of a loop into registers (the `cp.async` version of a
    /// loop whose copies ahead have a tensor-map version: the registers it would keep count
    /// for the whole entry).
    fn stage_operand_in(&mut self, x: ExprId, tile: Tile, staging: Staging, off: &TokenStream, cold: bool) -> TokenStream {
        match staging {
            Staging::Rows => self.stage_rows(x, tile, off, cold),
            Staging::Cols => self.stage_cols(x, tile, off, cold),
        }
    }

    /// The chunk loop of a widened operand `x`: a chunk of 8 elements that are contiguous,
    /// unmasked, 8-byte aligned and inside the buffer (at `__p0`) is one 8-byte load, converted
    /// in pairs and stored as 16 bytes. In passes, so that the loads of all of a thread's chunks
    /// are in flight together: the first computes each chunk's pointers and test (`head`, `test`,
    /// from the chunk index `__c`) and loads the chunks that pass; the second converts and stores
    /// them at element `s0` of the tile (`at` gives what `s0` and `scalar` read); the third copies
    /// the others element by element (`scalar`). The first two passes run over groups of 8 chunks
    /// (registers). `None` for more than 32 chunks per thread (one bit each): the caller copies
    /// element by element.
    fn widened_chunks(&self, x: ExprId, off: &TokenStream, (per_thread, chunks): (usize, usize), (head, test): (TokenStream, TokenStream), (at, s0): (TokenStream, TokenStream), scalar: &[TokenStream]) -> Option<TokenStream> {
        if per_thread > 32 {
            return None;
        }
        let d = &self.p.d;
        let (threads, e) = (self.threads, self.elem(&self.k.exprs[x].ty));
        const GROUP: usize = 8;
        // The loads unrolled in groups of 8 chunks (the words stay in registers, the flags in
        // one mask); the rare element-by-element copies in a loop after them. The chunk index is
        // opaque, so that no chunk's address arithmetic is hoisted out of an enclosing loop into
        // registers the accumulators need.
        let groups = (0..per_thread.div_ceil(GROUP)).map(|g| {
            let n = (per_thread - GROUP * g).min(GROUP);
            let first = GROUP * g;
            let loads = self.unrolled(n, quote!(__jg), quote! {
                let __jc = #first + __jg;
                let __c = #d::opaque_usize(__jc * #threads + __tid);
                if __c < #chunks {
                    #head
                    if #test {
                        __words[__jg] = #d::load_vec::<u32, 2>(__p0 as *mut u32);
                        __loaded |= 1u32 << __jc;
                    }
                }
            });
            let stores = self.unrolled(n, quote!(__jg), quote! {
                let __jc = #first + __jg;
                if __loaded & (1u32 << __jc) != 0 {
                    let __c = #d::opaque_usize(__jc * #threads + __tid);
                    #at
                    let __s0: usize = #s0;
                    #d::store_vec::<u32, 4>(__smem.add(#off + __s0 * 2) as *mut u32, #d::widen_words::<#e>(__words[__jg]));
                }
            });
            quote!({ let mut __words: [[u32; 2]; #GROUP] = [[0u32; 2]; #GROUP]; #loads #stores })
        });
        Some(quote! {
            let mut __loaded: u32 = 0;
            #(#groups)*
            for __jc in 0..#per_thread {
                let __c = #d::opaque_usize(__jc * #threads + __tid);
                if __c < #chunks && __loaded & (1u32 << __jc) == 0 {
                    #at
                    let __s0: usize = #s0;
                    #(#scalar)*
                }
            }
        })
    }

    /// The element type operand `x` is staged as, and `v` (a value of `x`) converted to it.
    fn staged_value(&self, x: ExprId, v: TokenStream) -> (TokenStream, TokenStream) {
        let d = &self.p.d;
        let e = self.elem(&self.k.exprs[x].ty);
        if self.is_widened(x) {
            (quote!(#d::F16), quote!(<#d::F16 as #d::Elem>::from_f32(<#e as #d::Elem>::to_f32(#v))))
        } else {
            (e, v)
        }
    }

    /// Whether the mask `m` of a 2-D load may change along axis `axis` of the load (it may have
    /// fewer dimensions: it broadcasts, right-aligned).
    pub(super) fn mask_varies(&self, load: ExprId, m: ExprId, axis: usize) -> bool {
        let (nl, nm) = (self.shapes[load].len(), self.shapes[m].len());
        (axis + nm).checked_sub(nl).is_some_and(|a| self.varies_along(m, a))
    }

    /// Stages in shared memory, before the loop over `var`, the `dot` operands its plan keeps
    /// resident (`Schedule::AsWritten`), and reserves their tiles below `floor` for the loop's
    /// statements (the caller restores `floor` after the body). The code ends with a barrier.
    pub(super) fn stage_resident(&mut self, var: LocalId) -> TokenStream {
        let Schedule::AsWritten { resident, .. } = self.p.schedule(var) else { return quote!() };
        let mut plans = Vec::new();
        for op in resident {
            let (align, size) = op.tile_bytes();
            let fence = self.operand_staging(op.layout).1;
            let off = self.alloc_aligned(size, align);
            self.resident.insert(op.x, off);
            plans.push((op.x, self.operand_tile(op.x, op.layout, op.rows, op.inner), off, fence));
        }
        if plans.is_empty() {
            return quote!();
        }
        self.smem.keep();
        let d = &self.p.d;
        let code = plans.iter().map(|(x, (tile, staging), off, fence)| {
            let stage = self.stage_operand(*x, *tile, *staging, &quote!(#off));
            quote!(#stage #d::cp_async_wait_all(); #fence)
        });
        let code: Vec<TokenStream> = code.collect();
        self.smem.clear();
        quote!(#(#code)* #d::bar_sync();)
    }

    /// The copies ahead of the loop over `var` (of device type `t`) that its plan asks for
    /// (`Schedule::AsWritten`), their `depth + 1` buffers each reserved below `floor`. Iteration
    /// `j` reads buffer `j % (depth + 1)`; the copies at the top of iteration `j` fill buffer
    /// `(j + depth) % (depth + 1)`, the one iteration `j - 1` read (whose readers the barriers
    /// of that iteration's statements wait for).
    pub(super) fn copy_ahead(&mut self, var: LocalId, t: &TokenStream) -> Option<AheadCode> {
        let k = self.k;
        let Schedule::AsWritten { ahead, depth, tma, .. } = self.p.schedule(var) else { return None };
        if ahead.is_empty() {
            return None;
        }
        let (depth, buf) = (*depth, self.fresh("buf"));
        // Each operand with the tile its `cp.async` copies fill.
        let mut ops: Vec<(pipeline::AheadOperand, Tile)> = Vec::new();
        for op in ahead {
            let (align, size) = op.tile_bytes();
            let bufs: Vec<usize> = (0..=depth).map(|_| self.alloc_aligned(size, align)).collect();
            let (tile, staging) = self.operand_tile(op.x, op.layout, op.rows, op.inner);
            let (first, delta) = (bufs[0], bufs[1] - bufs[0]);
            debug_assert!(bufs.windows(2).all(|w| w[1] - w[0] == delta), "ahead buffers evenly spaced");
            ops.push((pipeline::AheadOperand { x: op.x, layout: op.layout, staging, first, delta }, tile));
        }
        // With tensor maps, one `mbarrier` per buffer and each operand's box coordinates after
        // the tiles (`plan::reserved`).
        let tma = tma.as_ref().and_then(|maps| {
            let bars = self.alloc_aligned(8 * (depth + 1) + 16 * ahead.len(), 8);
            let aops: Vec<&pipeline::AheadOperand> = ops.iter().map(|(o, _)| o).collect();
            self.ahead_tma(var, t, &aops, maps, (depth, bars, &buf))
        });
        for (i, (o, _)) in ops.iter().enumerate() {
            let wait = tma.as_ref().map(|a| a.waits[i].clone());
            self.ahead.insert(o.x, Ahead { first: o.first, delta: o.delta, depth, staging: o.staging, buf: buf.clone(), tma: wait });
        }
        self.smem.keep();
        let d = &self.p.d;
        let id = crate::expand_cpu::local_ident(k, var);
        let cold = tma.is_some();
        // The copies of the iteration whose variable is `value` into buffer `b` (a `u32`).
        let mut copies = |value: TokenStream, b: TokenStream| {
            let code = ops.iter().map(|(o, tile)| {
                let (first, delta) = (o.first, o.delta);
                self.stage_operand_in(o.x, *tile, o.staging, &quote!((#first + ((#b) as usize) * #delta)), cold)
            });
            let code: Vec<TokenStream> = code.collect();
            quote!({ let #id: #t = #value; #(#code)* })
        };
        // Before the loop: iterations `0..depth` into buffers `0..depth`, a group each.
        let first_copy = copies(quote!(__nx), quote!(__b));
        let next_in = in_loop_range(&quote!(__nx));
        let (depth_u, depth_t) = (depth as u32, proc_macro2::Literal::usize_unsuffixed(depth));
        let first = quote! {
            {
                let mut __nx: Option<#t> = if __step != 0 { Some(__start) } else { None };
                let mut __b: u32 = 0;
                while __b < #depth_u {
                    if let Some(__nx) = __nx {
                        if #next_in #first_copy
                    }
                    #d::cp_async_commit();
                    __nx = __nx.and_then(|v| v.checked_add(__step));
                    __b += 1;
                }
            }
        };
        // At the top of an iteration: the one `depth` ahead, into the buffer before this one's.
        let next_copy = copies(quote!(__nx), quote!(if #buf == 0 { #depth_u } else { #buf - 1 }));
        let next = quote! {
            if let Some(__nx) = (#depth_t as #t).checked_mul(__step).and_then(|s| __i.checked_add(s)) {
                if #next_in #next_copy
            }
            #d::cp_async_commit();
        };
        self.smem.clear();
        let first = match &tma {
            Some(a) => {
                let (pre, flag, tfirst) = (&a.pre, &a.flag, &a.first);
                quote!(#pre if #flag { #tfirst } else { #first })
            }
            None => first,
        };
        Some(AheadCode { first, next, buf, depth, tma })
    }

    /// After generating the body of the loop version with tensor-map copies ahead: the body is
    /// generated again for the `cp.async` version, whose operands wait for their copy groups.
    pub(super) fn ahead_without_tma(&mut self) {
        for a in self.ahead.values_mut() {
            a.tma = None;
        }
    }

    /// This thread's chunk `__jc` of a staged operand: `__jc * threads + tid`, opaque when `cold`
    /// (see [`Self::stage_operand_in`]).
    fn chunk_index(&self, threads: usize, cold: bool) -> TokenStream {
        let d = &self.p.d;
        if cold { quote!(#d::opaque_usize(__jc * #threads + __tid)) } else { quote!(__jc * #threads + __tid) }
    }

    /// Copies a `dot` operand of `numel` elements (rows of `inner`) into shared memory at `off`
    /// as 16-bit values (`Staging::Rows`), swizzled (see [`DevGen::swizzle`]). An operand loaded
    /// from global memory moves in chunks of 8 elements: when the chunk's 8 addresses are
    /// contiguous, unmasked and inside the buffer (checked at run time), `cp.async` in one
    /// 16-byte copy or in 8- or 4-byte pieces, as the address allows, or through registers at an
    /// address aligned only to the element (`copy_chunk`; for a widened operand, see
    /// [`DevGen::widened_chunks`]); otherwise element by element.
    pub(super) fn stage_rows(&mut self, x: ExprId, tile: Tile, off: &TokenStream, cold: bool) -> TokenStream {
        let d = &self.p.d;
        let (numel, inner) = (tile.rows * tile.inner, tile.inner);
        let e = self.staged_value(x, quote!()).0;
        // Iterated in the layout the operand's values are in (an `mma` result's own elements
        // go straight to their place in the tile).
        let general = |g: &mut Self| {
            g.phase_in(numel, g.reduce_layout(x), |g| {
                let v = g.ev(x, &At::Own);
                let v = g.staged_value(x, v).1;
                let idx = tile.index(quote!(__f));
                quote!(#d::store((__smem.add(#off) as *mut #e).add(#idx), #v);)
            })
        };
        let Some(load) = self.staged_load(x).filter(|_| inner % 8 == 0 && numel % 8 == 0) else {
            return general(self);
        };
        let ExprKind::Load { ptr, mask, .. } = self.k.exprs[load].kind else { return quote!() };
        let threads = self.threads;
        let chunks = numel / 8;
        let per_thread = chunks.div_ceil(threads);
        let chunk = self.chunk_index(threads, cold);
        let scope = self.enter_iteration(0, Layout::Cyclic);
        let at = |i: usize| At::Flat(quote!((__f0 + #i)));
        // A pointer block that steps by one element along the row needs only the chunk's ends.
        let unit = matches!(self.strides(ptr).as_deref(), Some([.., plan::affine::Stride::Const(1)]));
        let tested: Vec<usize> = if unit { vec![0, 7] } else { (0..8).collect() };
        let ptrs: Vec<TokenStream> = tested.iter().map(|i| self.operand(load, ptr, &at(*i))).collect();
        let masks: Vec<TokenStream> = match mask {
            Some(m) if !self.mask_varies(load, m, 1) => vec![self.operand(load, m, &at(0))],
            Some(m) => match self.load_chunk_all(load, m, &quote!(__f0), 8) {
                Some(all) => vec![all],
                None => (0..8).map(|i| self.operand(load, m, &at(i))).collect(),
            },
            None => vec![quote!(true)],
        };
        let scalar: Vec<TokenStream> = (0..8)
            .map(|i| {
                let v = self.ev(load, &at(i));
                let v = self.staged_value(x, v).1;
                quote!(#d::store((__smem.add(#off) as *mut #e).add(__s0 + #i), #v);)
            })
            .collect();
        let staged = self.leave_iteration(scope);
        if !staged.is_empty() {
            // Operands that need other threads' registers take the general path.
            return general(self);
        }
        let p_names: Vec<Ident> = tested.iter().map(|i| format_ident!("__p{}", i)).collect();
        let size = elem_size(&self.k.exprs[x].ty.elem);
        let contiguous = tested.iter().zip(&p_names).skip(1).map(|(i, p)| {
            let bytes = size * i;
            quote!((#p as usize) == (__p0 as usize) + #bytes)
        });
        let s0 = tile.index(quote!(__f0));
        let fits = self.fits_code(ptr, &quote!(__p0), 8);
        if self.is_widened(x) {
            let head = quote!(let __f0 = __c * 8; #(let #p_names = #ptrs;)* let __all = #(#masks)&*;);
            let test = quote!(__all && (__p0 as usize) % 8 == 0 #(&& #contiguous)* && #fits);
            return self.widened_chunks(x, off, (per_thread, chunks), (head, test), (quote!(let __f0 = __c * 8;), s0), &scalar).unwrap_or_else(|| general(self));
        }
        quote! {
            for __jc in 0..#per_thread {
                let __c = #chunk;
                if __c < #chunks {
                    let __f0 = __c * 8;
                    let __s0: usize = #s0;
                    #(let #p_names = #ptrs;)*
                    let __all = #(#masks)&*;
                    // 16 bytes in one `cp.async`, or in pieces of 8 or 4 bytes where the
                    // chunk is only that aligned.
                    if !(__all #(&& #contiguous)* && #fits && #d::copy_chunk::<16, 2>(#d::smem_addr() + (#off + __s0 * 2) as u32, __p0 as *const u8)) {
                        #(#scalar)*
                    }
                }
            }
        }
    }

    /// Stages a `dot` operand (as 16-bit values) loaded from memory that is contiguous down its columns,
    /// transposed (`Staging::Cols`: element `(r, c)` of the operand at row `c`, column `r` of
    /// `tile`, swizzled), at `off`. Each chunk is 8 consecutive rows of one column, and
    /// consecutive threads take consecutive chunks down a column (coalesced): when its 8
    /// addresses are contiguous (the last one 7 elements past the first), at least 4-byte
    /// aligned, unmasked and inside the buffer, `cp.async` (16 bytes, or pieces of 8 or 4);
    /// otherwise element by element.
    /// Other operands are copied element by element into the transposed tile.
    fn stage_cols(&mut self, x: ExprId, tile: Tile, off: &TokenStream, cold: bool) -> TokenStream {
        let d = &self.p.d;
        let (rows, inner) = (self.shapes[x][0], self.shapes[x][1]);
        let e = self.staged_value(x, quote!()).0;
        let general = |g: &mut Self| {
            g.phase(rows * inner, |g| {
                let v = g.ev(x, &At::Own);
                let v = g.staged_value(x, v).1;
                let idx = tile.index(quote!(((__f % #inner) * #rows + __f / #inner)));
                quote!(#d::store((__smem.add(#off) as *mut #e).add(#idx), #v);)
            })
        };
        let Some(load) = self.staged_load(x).filter(|_| rows % 8 == 0) else { return general(self) };
        let ExprKind::Load { ptr, mask, .. } = self.k.exprs[load].kind else { return general(self) };
        let threads = self.threads;
        let (down, chunks) = (rows / 8, rows / 8 * inner);
        let per_thread = chunks.div_ceil(threads);
        let chunk = self.chunk_index(threads, cold);
        let scope = self.enter_iteration(0, Layout::Cyclic);
        let at = |i: usize| At::Flat(quote!(((__r0 + #i) * #inner + __col)));
        let (p0, p7) = (self.operand(load, ptr, &at(0)), self.operand(load, ptr, &at(7)));
        let masks: Vec<TokenStream> = match mask {
            Some(m) if !self.mask_varies(load, m, 0) => vec![self.operand(load, m, &at(0))],
            Some(m) => (0..8).map(|i| self.operand(load, m, &at(i))).collect(),
            None => vec![quote!(true)],
        };
        let scalar: Vec<TokenStream> = (0..8)
            .map(|i| {
                let v = self.ev(load, &at(i));
                let v = self.staged_value(x, v).1;
                let idx = tile.index(quote!((__col * #rows + __r0 + #i)));
                quote!(#d::store((__smem.add(#off) as *mut #e).add(#idx), #v);)
            })
            .collect();
        if !self.leave_iteration(scope).is_empty() {
            return general(self);
        }
        let s0 = tile.index(quote!((__col * #rows + __r0)));
        let fits = self.fits_code(ptr, &quote!(__p0), 8);
        if self.is_widened(x) {
            let at = quote!(let __r0: usize = (__c % #down) * 8; let __col: usize = __c / #down;);
            let head = quote!(#at let __p0 = #p0; let __p7 = #p7;);
            let test = quote!(#(#masks)&* && (__p0 as usize) % 8 == 0 && (__p7 as usize) == (__p0 as usize) + 7 && #fits);
            return self.widened_chunks(x, off, (per_thread, chunks), (head, test), (at, s0), &scalar).unwrap_or_else(|| general(self));
        }
        quote! {
            for __jc in 0..#per_thread {
                let __c = #chunk;
                if __c < #chunks {
                    let __r0: usize = (__c % #down) * 8;
                    let __col: usize = __c / #down;
                    let __p0 = #p0;
                    let __p7 = #p7;
                    let __s0: usize = #s0;
                    if !(#(#masks)&* && (__p7 as usize) == (__p0 as usize) + 14 && #fits && #d::copy_chunk::<16, 2>(#d::smem_addr() + (#off + __s0 * 2) as u32, __p0 as *const u8)) {
                        #(#scalar)*
                    }
                }
            }
        }
    }

}
