//! Vectorized phases. In the cyclic layout a thread owns chunks of `V` consecutive elements
//! (`DevGen::vec_width`); a phase over such a block reads each of its loads for the whole
//! chunk ahead of the element code, and a store writes the chunk at the end, with one vector
//! access (`ld.global.v4`, `st.global.v2`, ...) when a run-time check finds the chunk's
//! addresses contiguous and aligned to the access size and its mask all true, and element by
//! element otherwise (edges, strided or unaligned tensors).

use super::whole::SplitTest;
use super::*;

/// The alignment in bytes a chunk's address needs for `load_vec_any` and `store_vec_any` (4-byte
/// pieces where it is not aligned to the whole chunk).
pub(super) const PIECES_ALIGN: usize = 4;

/// [`PIECES_ALIGN`] as a literal for generated code.
pub(super) fn pieces_align() -> proc_macro2::Literal {
    proc_macro2::Literal::usize_unsuffixed(PIECES_ALIGN)
}

/// A split phase's test of one access: of the whole block, or of the chunk at `__f0`.
pub(super) enum AccessTest {
    Whole(super::whole::WholeTest),
    Chunk(TokenStream),
}

/// What a chunked phase in the cyclic layout writes, for [`DevGen::split_phase`].
pub(super) struct PhaseOut<'a, 'k> {
    /// The per-thread array the phase assigns (a block `let` or assignment).
    dest: Option<Ident>,
    /// The test that the phase's store can write its chunks with one vector access each: of
    /// the whole block, or of the chunk at `__f0`.
    store_test: Option<AccessTest>,
    /// The store's chunk code in a split phase (`__vfast` selects the unchecked access).
    store_after: Option<TokenStream>,
    /// The same in the phase's clean copy (chunks aligned, kept or masked out whole).
    store_after_clean: Option<TokenStream>,
    /// A store's element code for the split phase's checked copy: it writes each element as it
    /// is computed (checked), instead of gathering the chunk in arrays that the copy's loop,
    /// indexing them with its counter, would keep in local memory.
    store_elem: Option<&'a dyn Fn(&mut DevGen<'k>) -> TokenStream>,
}

impl<'k> DevGen<'k> {
    /// Loads that the statement rooted at `e` evaluates at the phase's own element (same flat
    /// index), which may therefore be read for the whole chunk at once.
    fn own_loads(&self, e: ExprId, out: &mut Vec<ExprId>) {
        let k = self.k;
        if self.temps.contains_key(&e) {
            return;
        }
        match &k.exprs[e].kind {
            ExprKind::Load { .. } => {
                if !out.contains(&e) {
                    out.push(e)
                }
            }
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Inline(v) | LocalKind::Pure(v) => self.own_loads(v, out),
                _ => {}
            },
            ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } | ExprKind::Trans(_) => {}
            // The flat order is unchanged: the operand is read at the same index.
            ExprKind::ExpandDims(x, _) | ExprKind::Reshape(x) if !self.shapes[*x].is_empty() => self.own_loads(*x, out),
            kind => {
                for c in kind.operands() {
                    if self.shapes[c] == self.shapes[e] {
                        self.own_loads(c, out);
                    }
                }
            }
        }
    }

    /// The alignment a vector access of `v` elements of type `e` needs, when it is one
    /// instruction (4, 8 or 16 bytes) or two of 16 bytes (32).
    fn vector_bytes(&self, e: &Elem, v: usize) -> Option<usize> {
        let bytes = elem_size(e) * v;
        [4, 8, 16, 32].contains(&bytes).then_some(bytes.min(16))
    }

    /// A phase over a cyclic block of `numel` elements (`vec_width > 1`) whose element code
    /// `body` reads the loads below `roots` from chunk registers and writes the per-thread array
    /// `dest` (if any). `decls` open each chunk, `after` closes it (a vectorized store).
    pub(super) fn phase_chunks(&mut self, numel: usize, roots: &[ExprId], body: impl Fn(&mut Self) -> TokenStream, decls: TokenStream, after: TokenStream, dest: Option<Ident>) -> TokenStream {
        self.phase_chunks_in(numel, Layout::Cyclic, roots, body, decls, after, false, Some(PhaseOut { dest, store_test: None, store_after: None, store_after_clean: None, store_elem: None }))
    }

    /// [`Self::phase_chunks`] in `layout`: in the `mma` layout a chunk is the pair of adjacent
    /// columns a thread holds in each 16x8 tile, and `rolled` runs them as a loop. `out`
    /// (cyclic layout only): what the phase writes, for [`Self::split_phase`]; `None` keeps
    /// every test in the chunk code.
    #[allow(clippy::too_many_arguments)]
    fn phase_chunks_in(&mut self, numel: usize, layout: Layout, roots: &[ExprId], body: impl Fn(&mut Self) -> TokenStream, decls: TokenStream, after: TokenStream, rolled: bool, out: Option<PhaseOut<'_, 'k>>) -> TokenStream {
        let v = self.chunk_len(numel, layout);
        let mut loads = Vec::new();
        for r in roots {
            if self.numel(*r) == numel && !self.shapes[*r].is_empty() {
                self.own_loads(*r, &mut loads);
            }
        }
        if layout != Layout::Cyclic {
            loads.clear();
        }
        let scope = self.enter_iteration(numel, layout);
        let split = out.as_ref().and_then(|o| self.split_test(numel, &loads, o));
        let (load_code, load_names, b) = self.chunk_reads(&loads, v, &body, split.is_some(), false);
        // The clean copy of a split phase whose chunks are all aligned and kept or masked out
        // whole: vector accesses without 4-byte pieces, element code without the mask.
        let clean = split.as_ref().and_then(|t| t.clean.clone()).map(|tests| (tests, self.chunk_reads(&loads, v, &body, true, true)));
        // Split, the phase's checked copy reads its loads element by element (and a store
        // writes each element as it is computed).
        let saved_pre = std::mem::take(&mut self.prefetched);
        let store_elem = out.as_ref().and_then(|o| o.store_elem);
        let split = split.map(|test| (test, if let Some(f) = store_elem { f(self) } else { body(self) }));
        self.prefetched = saved_pre;
        let staged = self.leave_iteration(scope);
        let (pre, post) = self.staging(&staged);
        let threads = self.threads;
        if let Layout::Mma { .. } = layout {
            let d = &self.p.d;
            if rolled {
                let pairs = self.slots(numel, layout) / 2;
                let f = Self::mma_flat_at(layout, &quote!(__j));
                let copies = (0..2usize).map(|i| quote!({ let __v: usize = #i; let __j: usize = 2 * __p + #i; let __f: usize = #f; #b }));
                return quote! {
                    #pre
                    let __np: usize = #d::opaque_usize(#pairs);
                    let mut __p: usize = 0;
                    while __p < __np {
                        #decls
                        #(#copies)*
                        #after
                        __p += 1;
                    }
                    #post
                };
            }
            let pairs = (0..self.slots(numel, layout) / 2).map(|p| {
                let copies = (0..2).map(|i| {
                    let j = 2 * p + i;
                    let f = Self::mma_flat(layout, j);
                    quote!({ let __v: usize = #i; let __j: usize = #j; let __f: usize = #f; #b })
                });
                quote!({ #decls #(#copies)* #after })
            });
            return quote! {
                #pre
                #(#pairs)*
                #post
            };
        }
        let chunks = self.per_thread(numel) / v;
        let start = quote!(let __f0: usize = (__jc * #threads + __tid) * #v;);
        let after = match (&split, out.as_ref().and_then(|o| o.store_after.clone())) {
            (Some(_), Some(split_after)) => split_after,
            _ => after,
        };
        let code = self.chunk_loop(chunks, v, &loads, (&load_code, &load_names, &b), &decls, &after);
        let clean = clean.map(|(tests, (lc, ln, cb))| {
            let after_clean = out.as_ref().and_then(|o| o.store_after_clean.clone()).unwrap_or_else(|| after.clone());
            (tests, self.chunk_loop(chunks, v, &loads, (&lc, &ln, &cb), &decls, &after_clean))
        });
        let code = match (split, out) {
            (Some((test, b_scalar)), Some(o)) => {
                let slow = match o.store_elem {
                    Some(_) => self.checked_copy(chunks, v, &start, &quote!(), &b_scalar, &quote!()),
                    None => self.checked_copy(chunks, v, &start, &decls, &b_scalar, &after),
                };
                self.split_phase(chunks, threads, v, &test, (code, clean), slow, o.dest.as_ref())
            }
            _ => code,
        };
        quote!(#pre #code #post)
    }

    /// The chunk reads of a phase's `loads` (`split`: in a split phase's fast copy; `clean`: in
    /// its clean copy) and its element code `body`, which reads them from the chunk registers.
    fn chunk_reads(&mut self, loads: &[ExprId], v: usize, body: &dyn Fn(&mut Self) -> TokenStream, split: bool, clean: bool) -> (Vec<TokenStream>, Vec<Ident>, TokenStream) {
        let mut load_code = Vec::new();
        let mut names = HashMap::new();
        let mut load_names = Vec::new();
        for l in loads {
            let name = self.fresh("ld");
            load_code.push(self.chunk_load(*l, v, &name, split, clean));
            // Read whole across the mask's edge, a chunk is masked per element (not when clean).
            names.insert(*l, (name.clone(), split && !clean));
            load_names.push(name);
        }
        let saved = std::mem::replace(&mut self.prefetched, names);
        let b = body(self);
        self.prefetched = saved;
        (load_code, load_names, b)
    }

    /// The loop over a thread's `chunks` chunks of a phase: each chunk's `decls`, its loads
    /// (`reads`: their code, names and the element code), the element code for each of its
    /// elements and `after`.
    fn chunk_loop(&self, chunks: usize, v: usize, loads: &[ExprId], reads: (&[TokenStream], &[Ident], &TokenStream), decls: &TokenStream, after: &TokenStream) -> TokenStream {
        let (load_code, load_names, b) = reads;
        let threads = self.threads;
        let start = quote!(let __f0: usize = (__jc * #threads + __tid) * #v;);
        let copies = self.unrolled(v, quote!(__v), quote!(let __j: usize = __jc * #v + __v; let __f: usize = __f0 + __v; #b));
        if !(self.unroll_slots && !loads.is_empty()) {
            return self.slot_loop(chunks, quote!(__jc), quote!(#start #decls #(#load_code)* #copies #after));
        }
        // Every chunk's loads first, then the element code: all of the thread's loads are in
        // flight at once (each chunk's test-and-load is a branch, so the code of one chunk
        // between them would wait for each load in turn).
        let k = self.k;
        let all: Vec<Ident> = load_names.iter().map(|n| format_ident!("{}_all", n)).collect();
        let tys: Vec<TokenStream> = loads.iter().map(|l| self.elem(&k.exprs[*l].ty)).collect();
        let issue = self.unrolled(chunks, quote!(__jc), quote!(#start #(#load_code)* #(#all[__jc] = #load_names;)*));
        let compute = self.unrolled(chunks, quote!(__jc), quote! {
            #start
            #decls
            #(let #load_names: [#tys; #v] = #all[__jc];)*
            #copies
            #after
        });
        quote! {
            #(let mut #all: [[#tys; #v]; #chunks] = unsafe { ::core::mem::zeroed() };)*
            #issue
            #compute
        }
    }

    /// A split phase's checked copy: loops over the chunks and their elements (unrolled, the
    /// element-by-element paths took several times the registers of the vector code), reading
    /// the loads element by element (`body`) and writing the chunk of the store (`after`).
    fn checked_copy(&self, chunks: usize, v: usize, start: &TokenStream, decls: &TokenStream, body: &TokenStream, after: &TokenStream) -> TokenStream {
        let d = &self.p.d;
        // The loop bounds are hidden from the optimizer, so the slot index is clamped to the
        // thread's last slot (which it never passes): the arrays' bounds checks, calls whose
        // registers the whole entry would pay for, fold away.
        let last = chunks * v - 1;
        quote! {
            let __nc: usize = #d::opaque_usize(#chunks);
            let mut __jc: usize = 0;
            while __jc < __nc {
                #start
                #decls
                for __v in 0..#d::opaque_usize(#v) {
                    let __j: usize = ::core::cmp::min(__jc * #v + __v, #last);
                    let __f: usize = __f0 + __v;
                    #body
                }
                #after
                __jc += 1;
            }
        }
    }

    /// The test that every access of a phase (its chunk-read `loads` and the store of `out`)
    /// can go by predicated whole-chunk accesses (`load_vec_any`, `store_vec_any`; the mask
    /// applied per element): each chunk is contiguous, 4-byte aligned and inside its buffer, or
    /// masked out entirely; tested for the whole block where [`Self::whole_block_test`] can,
    /// else for the chunk at `__f0`. `Some` when the phase may be split ([`Self::may_split`],
    /// [`Self::split_phase`]), each access has a test reading no per-thread array (evaluated
    /// ahead of the element code, such a read would go through shared memory), and the tests
    /// are of the whole block or the phase has at least [`plan::MIN_SPLIT_ACCESSES`] chunk
    /// accesses.
    fn split_test(&mut self, numel: usize, loads: &[ExprId], out: &PhaseOut<'_, 'k>) -> Option<SplitTest> {
        let k = self.k;
        let v = self.vec_width(numel);
        let accesses = loads.len() + out.store_test.is_some() as usize;
        if !self.may_split(numel) || accesses == 0 {
            return None;
        }
        let mut tests = SplitTest { whole: Vec::new(), per_chunk: Vec::new(), clean: Some(Vec::new()) };
        // The loop of each whole-block test stated once per loop (`None`: tested in place).
        let mut looped: Vec<Option<LocalId>> = Vec::new();
        for l in loads {
            let ExprKind::Load { ptr, mask, .. } = k.exprs[*l].kind else { return None };
            if self.reads_arrays(ptr) || mask.is_some_and(|m| self.reads_arrays(m)) {
                return None;
            }
            if let Some(w) = self.whole_block_test(*l, ptr, mask, numel, v, elem_size(&k.exprs[*l].ty.elem)) {
                looped.push(w.looped);
                tests.whole.push(w.test);
                if let Some(c) = tests.clean.as_mut() {
                    c.extend(w.clean);
                }
                continue;
            }
            let test = self.chunk_test(*l, v, false, false)?;
            let out = self.chunk_masked_out(*l, mask, v);
            let ptrs = (0..v).map(|i| {
                let qi = format_ident!("__q{}", i);
                let p = self.operand(*l, ptr, &At::Flat(quote!((__f0 + #i))));
                quote!(let #qi = #p;)
            });
            let align = pieces_align();
            tests.per_chunk.push(quote!(({ #(#ptrs)* (__q0 as usize) % #align == 0 && #test } | #out)));
        }
        match &out.store_test {
            Some(AccessTest::Whole(w)) => {
                looped.push(w.looped);
                tests.whole.push(w.test.clone());
                if let Some(c) = tests.clean.as_mut() {
                    c.extend(w.clean.clone());
                }
            }
            Some(AccessTest::Chunk(t)) => tests.per_chunk.push(t.clone()),
            None => {}
        }
        if !tests.per_chunk.is_empty() {
            tests.clean = None;
        }
        // Several accesses tested once for the same loop: one pair of flags for the phase.
        if let (Some(Some(var)), Some(cleans)) = (looped.first(), &tests.clean) {
            if looped.len() > 1 && looped.iter().all(|l| *l == Some(*var)) && cleans.len() == looped.len() {
                let (t, c) = self.combine_loop_tests(*var, &tests.whole, cleans);
                tests.whole = vec![t];
                tests.clean = Some(vec![c]);
            }
        }
        // Tests of the whole block cost a few instructions whatever the chunks; tests of each
        // chunk ahead of the code pay where there are enough chunk accesses.
        let few = (self.per_thread(numel) / v) * accesses < plan::MIN_SPLIT_ACCESSES;
        (tests.per_chunk.is_empty() || !few).then_some(tests)
    }

    /// Whether a phase over `numel` elements in the cyclic layout may be split, before looking
    /// at its accesses ([`Self::split_test`]): its slots are unrolled, the plan lets cold paths
    /// leave the hot code (`outline_cold`), the kernel has no `dot` (there the accumulators and
    /// the operand stagings hold the registers; a split prologue made `mma.sync` bodies spill),
    /// and its accesses go in chunks of at least two elements.
    fn may_split(&self, numel: usize) -> bool {
        self.unroll_slots && self.outline_cold && self.dots.is_empty() && self.vec_width(numel) >= 2
    }

    /// Whether evaluating `e` reads a per-thread array (a materialized block or a temporary).
    /// An affine local (a block stepped by a scalar in a loop, `ptrs += BLOCK`) is its first
    /// value plus a scalar offset: it reads what its first value reads.
    fn reads_arrays(&self, e: ExprId) -> bool {
        if self.temps.contains_key(&e) {
            return true;
        }
        match &self.k.exprs[e].kind {
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) | LocalKind::Affine(v) => self.reads_arrays(v),
                LocalKind::Scalar => false,
                _ => !self.shapes[e].is_empty(),
            },
            kind => kind.operands().into_iter().any(|c| self.reads_arrays(c)),
        }
    }

    /// A phase split in two: `__vfast` is true when `test` passes (see [`Self::split_test`]):
    /// its tests of the whole block, then, in a loop, its tests of each of the thread's chunks;
    /// then `code` runs with predicated accesses (one per chunk where the
    /// chunk is aligned to its size, else 4-byte pieces) and no test (the chunk code's
    /// `if __vfast` branches fold); else `slow`, loops over the chunks and their elements with
    /// the per-chunk tests and element-by-element accesses, runs on a copy of `dest` (indexed
    /// by the loop counters, the copy lives in local memory, `dest` itself stays in registers),
    /// which it returns. `codes`: the fast copy and, where every access is tested for the whole
    /// block, the clean copy and its tests (`SplitTest::clean`), which runs instead when they
    /// pass: one vector access per chunk and no mask in the element code (the instructions a
    /// row length that is a multiple of the chunk and an aligned row need; Triton gets them by
    /// specializing on divisibility by 16).
    #[allow(clippy::too_many_arguments)]
    fn split_phase(&self, chunks: usize, threads: usize, v: usize, test: &SplitTest, codes: (TokenStream, Option<(Vec<TokenStream>, TokenStream)>), slow: TokenStream, dest: Option<&Ident>) -> TokenStream {
        let code = match codes {
            // Every test of the clean copy proven (`multiple_of` hints, `whole.rs`).
            (_, Some((tests, clean))) if tests.is_empty() => clean,
            (code, Some((tests, clean))) => quote! {
                if true #(&& #tests)* {
                    #clean
                } else {
                    #code
                }
            },
            (code, None) => code,
        };
        let d = &self.p.d;
        let whole = &test.whole;
        let per_chunk = &test.per_chunk;
        // The chunks are tested in a loop (its trip count hidden from the optimizer): unrolled,
        // ptxas computes every chunk's addresses at once, and the entry takes more registers.
        let all = (!per_chunk.is_empty()).then(|| quote! {
            let __nc: usize = #d::opaque_usize(#chunks);
            let mut __jc: usize = 0;
            while __jc < __nc {
                let __f0: usize = (__jc * #threads + __tid) * #v;
                __ok = __ok & #(#per_chunk)&*;
                __jc += 1;
            }
        });
        let slow = match dest {
            Some(id) => quote!(#id = #d::inline_call(#[inline(always)] move || { let __vfast: bool = false; let mut #id = #id; #slow #id });),
            None => quote!(#d::inline_call(#[inline(always)] move || { let __vfast: bool = false; #slow });),
        };
        quote! {
            let __vfast: bool = { let mut __ok: bool = true #(&& #whole)*; #all __ok };
            if __vfast {
                #code
            } else {
                ::core::hint::cold_path();
                #slow
            }
        }
    }

    /// Whether the chunk of pointers `q` (each `size` bytes apart when contiguous) is contiguous:
    /// with the pointer block's increment along the row (`step`, see `col_step`), that it is one
    /// element and the last pointer is where the first one's run ends (the offsets did not wrap
    /// on the way); without it, every pointer against the first.
    /// The result is a run of `&& condition` terms.
    fn chunk_contiguous(step: Option<TokenStream>, q: &[TokenStream], size: usize) -> TokenStream {
        let (first, rest) = (&q[0], &q[1..]);
        if let (Some(step), Some(last)) = (step, rest.last()) {
            let off = rest.len() * size;
            return quote!(&& ((#step) == 1i64 && (#last as usize) == (#first as usize) + #off));
        }
        let each = rest.iter().enumerate().map(|(i, qi)| {
            let off = (i + 1) * size;
            quote!((#qi as usize) == (#first as usize) + #off)
        });
        quote!(#(&& #each)*)
    }

    /// Elements per chunk of a block of `numel` elements in `layout`.
    pub(super) fn chunk_len(&self, numel: usize, layout: Layout) -> usize {
        match layout {
            Layout::Cyclic => self.vec_width(numel),
            Layout::Mma { .. } => 2,
            Layout::MmaRows { .. } => 1,
        }
    }

    /// `let name: [E; v]` = the chunk of `load` starting at flat index `__f0`: one vector access
    /// when [`Self::chunk_test`] holds (or the phase's `__vfast` says every chunk passed it), else
    /// element by element.
    /// `clean`: in a split phase's clean copy, where the chunk is aligned to its size and kept
    /// or masked out whole.
    fn chunk_load(&mut self, load: ExprId, v: usize, name: &Ident, split: bool, clean: bool) -> TokenStream {
        let k = self.k;
        let d = &self.p.d;
        let ExprKind::Load { ptr, mask, other } = k.exprs[load].kind else { return quote!() };
        let ty = &k.exprs[load].ty;
        let e = self.elem(ty);
        let at = |i: usize| At::Flat(quote!((__f0 + #i)));
        let q: Vec<Ident> = (0..v).map(|i| format_ident!("__q{}", i)).collect();
        let ptrs: Vec<TokenStream> = (0..v).map(|i| self.operand(load, ptr, &at(i))).collect();
        let masks: Vec<TokenStream> = match mask {
            Some(m) => (0..v).map(|i| self.operand(load, m, &at(i))).collect(),
            None => vec![quote!(true); v],
        };
        let others: Vec<TokenStream> = match other {
            Some(o) => (0..v).map(|i| self.operand(load, o, &at(i))).collect(),
            None => vec![quote!(<#e as ::core::default::Default>::default()); v],
        };
        let span = k.exprs[load].span.start;
        let scalar: Vec<TokenStream> = (0..v)
            .map(|i| {
                let (qi, m, o) = (&q[i], &masks[i], &others[i]);
                let ok = self.in_bounds_code(ptr, &quote!(#qi), span);
                quote!(if #m && #ok { #d::load(#qi) } else { #o })
            })
            .collect();
        let Some(test) = self.chunk_test(load, v, true, true) else {
            return quote! {
                let #name: [#e; #v] = { #(let #q: *mut #e = #ptrs;)* [#(#scalar),*] };
            };
        };
        if !split {
            return quote! {
                let #name: [#e; #v] = {
                    #(let #q: *mut #e = #ptrs;)*
                    if #test {
                        #d::load_vec::<#e, #v>(__q0)
                    } else {
                        [#(#scalar),*]
                    }
                };
            };
        }
        // In a split phase's fast copy (`__vfast`) the chunk is known to be inside its buffer and
        // 4-byte aligned, or masked out entirely (then not read); the element code applies the
        // mask (a chunk across the mask's edge is read whole).
        let out = self.chunk_masked_out(load, mask, v);
        let fast = quote!(#d::load_vec_any::<#e, #v>(__q0, !#out, [#(#others),*], #clean));
        if clean {
            let p0 = &ptrs[0];
            return quote! {
                let #name: [#e; #v] = { let __q0: *mut #e = #p0; #fast };
            };
        }
        quote! {
            let #name: [#e; #v] = {
                #(let #q: *mut #e = #ptrs;)*
                if __vfast {
                    #fast
                } else if #test {
                    #d::load_vec::<#e, #v>(__q0)
                } else {
                    [#(#scalar),*]
                }
            };
        }
    }

    /// Whether the mask of `load` is false on the whole chunk from flat index `__f0` (`false`
    /// when it has none).
    fn chunk_masked_out(&mut self, load: ExprId, mask: Option<ExprId>, v: usize) -> TokenStream {
        match mask {
            Some(m) => self.mask_on_chunk(load, m, false, v),
            None => quote!(false),
        }
    }

    /// Whether the mask `m` of `load` (or of a store's pointer block) is `want` on the whole
    /// chunk from flat index `__f0`: tested at the chunk's ends when the analysis allows (the
    /// chunk lies in one row, the mask is monotone along it), else element by element.
    fn mask_on_chunk(&mut self, load: ExprId, m: ExprId, want: bool, v: usize) -> TokenStream {
        let in_row = self.shapes[load].last().is_some_and(|n| n % v == 0);
        in_row.then(|| self.load_chunk_is(load, m, want, &quote!(__f0), v)).flatten().unwrap_or_else(|| {
            let masks = (0..v).map(|i| self.operand(load, m, &At::Flat(quote!((__f0 + #i)))));
            if want {
                quote!((true #(&& #masks)*))
            } else {
                quote!((!(false #(|| #masks)*)))
            }
        })
    }

    /// Whether the chunk of `load` from flat index `__f0` (its pointers bound to `__q0` ..
    /// `__q{v-1}`) can be read with one vector access: contiguous, aligned to the access (where
    /// `aligned`), inside its buffer and unmasked (where `masked`). `None` when no vector access
    /// reads `v` such elements.
    fn chunk_test(&mut self, load: ExprId, v: usize, aligned: bool, masked: bool) -> Option<TokenStream> {
        let k = self.k;
        let ExprKind::Load { ptr, mask, .. } = k.exprs[load].kind else { return None };
        let ty = &k.exprs[load].ty;
        let bytes = self.vector_bytes(&ty.elem, v)?;
        let all = match mask.filter(|_| masked) {
            None => quote!(true),
            Some(m) => self.mask_on_chunk(load, m, true, v),
        };
        let in_row = self.shapes[load].last().is_some_and(|n| n % v == 0);
        let size = elem_size(&ty.elem);
        let at0 = self.sub_at(load, ptr, &At::Flat(quote!((__f0))));
        let step = in_row.then(|| self.col_step(ptr, self.child_moves(load, ptr, true), &at0)).flatten();
        let q: Vec<TokenStream> = (0..v).map(|i| { let qi = format_ident!("__q{}", i); quote!(#qi) }).collect();
        let contiguous = Self::chunk_contiguous(step, &q, size);
        let fits = self.fits_code(ptr, &quote!(__q0), v);
        let align = aligned.then(|| quote!(&& (__q0 as usize) % #bytes == 0));
        Some(quote!(#all #align #contiguous && #fits))
    }

    /// A store of a block of `numel` elements in chunks (cyclic with `vec_width > 1`, or the
    /// column pairs of the `mma` layout): each chunk's pointers,
    /// values and mask bits are computed element by element, then written with one vector
    /// access when contiguous, aligned and unmasked.
    pub(super) fn store_chunks(&mut self, numel: usize, layout: Layout, ptr: ExprId, value: ExprId, mask: Option<ExprId>, span: proc_macro2::Span) -> TokenStream {
        let d = &self.p.d;
        let k = self.k;
        let v = self.chunk_len(numel, layout);
        let ty = &k.exprs[value].ty;
        let e = self.elem(ty);
        let vt = self.elem(&k.exprs[ptr].ty);
        let decls = quote! {
            let mut __sp: [#vt; #v] = [::core::ptr::null_mut(); #v];
            let mut __sv: [#e; #v] = [<#e as ::core::default::Default>::default(); #v];
            let mut __sm: [bool; #v] = [false; #v];
        };
        let mut roots = vec![ptr];
        if self.shapes[value] == self.shapes[ptr] {
            roots.push(value);
        }
        if let Some(m) = mask.filter(|m| self.shapes[*m] == self.shapes[ptr]) {
            roots.push(m);
        }
        // The element's pointer, value and mask bit.
        let parts = |g: &mut Self| {
            let m = match mask {
                Some(m) => g.operand(ptr, m, &At::Own),
                None => quote!(true),
            };
            (g.ev(ptr, &At::Own), g.operand(ptr, value, &At::Own), m)
        };
        let body = |g: &mut Self| {
            let (p, val, m) = parts(g);
            quote! { __sp[__v] = #p; __sv[__v] = #val; __sm[__v] = #m; }
        };
        let elem = |g: &mut Self| {
            let (p, val, m) = parts(g);
            let ok = g.in_bounds_code(ptr, &quote!(__a), span);
            quote! { let __a = #p; if #m && #ok { #d::store(__a, #val); } }
        };
        let idx: Vec<usize> = (0..v).collect();
        let oks = idx.iter().map(|i| self.in_bounds_code(ptr, &quote!(__sp[#i]), span));
        let scalar = quote!(#(if __sm[#idx] && #oks { #d::store(__sp[#idx], __sv[#idx]); })*);
        let fits = self.fits_code(ptr, &quote!(__sp[0]), v);
        let (after, split_after) = match self.vector_bytes(&ty.elem, v) {
            None => (scalar, None),
            Some(bytes) => {
                let size = elem_size(&ty.elem);
                // In the cyclic layout a chunk starts at `__f0` and lies in one row.
                let in_row = layout == Layout::Cyclic && self.shapes[ptr].last().is_some_and(|n| n % v == 0);
                let step = in_row.then(|| self.col_step(ptr, true, &At::Flat(quote!((__f0))))).flatten();
                let q: Vec<TokenStream> = idx.iter().map(|i| if *i == 0 { quote!(__sp[0]) } else { quote!(__sp[#i]) }).collect();
                let contiguous = Self::chunk_contiguous(step, &q, size);
                let checked = quote! {
                    if true #(&& __sm[#idx])* && (__sp[0] as usize) % #bytes == 0 #contiguous && #fits {
                        #d::store_vec::<#e, #v>(__sp[0], __sv);
                    } else {
                        #scalar
                    }
                };
                // In a split phase's fast copy the chunk is whole and unmasked or all masked out.
                // In a split phase's fast copy the chunk is inside its buffer and 4-byte aligned,
                // or masked out entirely: written whole where the mask holds on all of it, else
                // element by element where it holds.
                let split = quote! {
                    if __vfast {
                        if true #(&& __sm[#idx])* {
                            #d::store_vec_any::<#e, #v>(__sp[0], true, __sv, false);
                        } else {
                            #(if __sm[#idx] { #d::store(__sp[0].add(#idx), __sv[#idx]); })*
                        }
                    } else {
                        #checked
                    }
                };
                // In its clean copy the chunk is aligned and kept or masked out whole.
                let clean = quote!(#d::store_vec_any::<#e, #v>(__sp[0], __sm[0], __sv, true););
                (checked, Some((split, clean)))
            }
        };
        // Only a store tested ahead of the phase takes the unchecked chunk code; an untested one
        // (its pointers read a per-thread array) keeps its checked code in a split phase too.
        let out = (layout == Layout::Cyclic).then(|| {
            let store_test = split_after.as_ref().filter(|_| self.may_split(numel)).and_then(|_| self.store_test(ptr, value, mask, numel, v));
            let (store_after, store_after_clean) = match split_after.filter(|_| store_test.is_some()) {
                Some((split, clean)) => (Some(split), Some(clean)),
                None => (None, None),
            };
            PhaseOut { dest: None, store_after, store_after_clean, store_test, store_elem: Some(&elem) }
        });
        let before = self.smem.mark();
        let slow = self.phase_chunks_in(numel, layout, &roots, &body, decls.clone(), after.clone(), false, out);
        // (Generated again rolled below only when the first generation staged nothing in shared memory.)
        let staged_nothing = !self.smem.allocated_since(before);
        match self.mma_store_fast(numel, layout, ptr, value, mask, span) {
            Some(MmaStore::Both { setup, code }) => {
                // A warp whose rows are not all whole and masked in (an edge block) stores them
                // through shared memory too, testing each 16-byte chunk (`mma_store_via_smem`),
                // out of line (inline, in the largest split entries, ptxas spills).
                quote! {{
                    #setup
                    #code
                }}
            }
            Some(MmaStore::Fast { setup, fast }) => {
                // Inline, ptxas lays the checked stores out between the K loop and the fast ones.
                // The stores are a loop over the column pairs in a `move` closure: it reads the
                // values from its copy of the captured arrays, so indexing them with the loop
                // counter leaves the caller's registers alone (the arrays themselves, indexed so,
                // would go to local memory). Out of line, the closure is a function of its own;
                // else it is called in place.
                let slow = if staged_nothing && self.roll_cold_stores {
                    let rolled = self.phase_chunks_in(numel, layout, &roots, &body, decls, after, true, None);
                    if self.outline_cold {
                        quote!(#d::outline(move || { #rolled });)
                    } else {
                        quote!((move || { #rolled })();)
                    }
                } else {
                    slow
                };
                quote! {{
                    #setup
                    if __sfast { #fast } else { ::core::hint::cold_path(); #slow }
                }}
            }
            None => slow,
        }
    }

    /// The split-phase test of a store: of the whole block ([`Self::whole_block_test`]) where
    /// the analysis can, else of the chunk at `__f0` ([`Self::store_chunk_test`]).
    fn store_test(&mut self, ptr: ExprId, value: ExprId, mask: Option<ExprId>, numel: usize, v: usize) -> Option<AccessTest> {
        let elem = &self.k.exprs[value].ty.elem;
        self.vector_bytes(elem, v)?;
        if self.reads_arrays(ptr) || mask.is_some_and(|m| self.reads_arrays(m)) {
            return None;
        }
        match self.whole_block_test(ptr, ptr, mask, numel, v, elem_size(elem)) {
            Some(t) => Some(AccessTest::Whole(t)),
            None => Some(AccessTest::Chunk(self.store_chunk_test(ptr, value, mask, v))),
        }
    }

    /// The test, in a split phase, that the chunk from flat index `__f0` of a store in the
    /// cyclic layout can be written by `store_vec_any` (or, across the mask's edge, element by
    /// element without further tests): contiguous, 4-byte aligned and inside the buffer, or
    /// masked out entirely (the caller, [`Self::store_test`], has checked that a vector access
    /// writes such a chunk and that the pointers and mask read no per-thread array).
    fn store_chunk_test(&mut self, ptr: ExprId, value: ExprId, mask: Option<ExprId>, v: usize) -> TokenStream {
        let ty = &self.k.exprs[value].ty;
        let at = |i: usize| At::Flat(quote!((__f0 + #i)));
        let q: Vec<Ident> = (0..v).map(|i| format_ident!("__s{}", i)).collect();
        let ptrs: Vec<TokenStream> = (0..v).map(|i| self.ev(ptr, &at(i))).collect();
        let in_row = self.shapes[ptr].last().is_some_and(|n| n % v == 0);
        let step = in_row.then(|| self.col_step(ptr, true, &At::Flat(quote!((__f0))))).flatten();
        let contiguous = Self::chunk_contiguous(step, &q.iter().map(|x| quote!(#x)).collect::<Vec<_>>(), elem_size(&ty.elem));
        let fits = self.fits_code(ptr, &quote!(__s0), v);
        let out = self.chunk_masked_out(ptr, mask, v);
        let align = pieces_align();
        quote!(({ #(let #q = #ptrs;)* ((__s0 as usize) % #align == 0 #contiguous && #fits) } | #out))
    }

    /// The fast path of a store in the `mma` layout, whose set-up binds `__sfast`, true when on
    /// each row of the block that this thread writes, the span from its first to its last column
    /// is contiguous (the pointer block is affine along the row with an increment of one
    /// element, and the span's end addresses agree), pair-aligned, inside the buffer and all
    /// masked in; the fast stores then write each column pair with one vector store at a
    /// constant offset from the row's first address, with no per-pair test. `None` when the
    /// analysis cannot tell (the store then tests every pair) or when the fast path would read
    /// another thread's values (it must not hold barriers: `__sfast` differs between threads).
    /// [`MmaStore::Both`] for the stores through shared memory where cold paths run out of line:
    /// the warps that fail the test test each 16-byte chunk instead (see
    /// [`Self::mma_store_via_smem`]); [`MmaStore::Fast`] otherwise, whose other warps test every
    /// pair.
    fn mma_store_fast(&mut self, numel: usize, layout: Layout, ptr: ExprId, value: ExprId, mask: Option<ExprId>, span: proc_macro2::Span) -> Option<MmaStore> {
        let Layout::Mma { tn, n, wg, .. } = layout else { return None };
        let d = &self.p.d;
        let k = self.k;
        let ty = &k.exprs[value].ty;
        let bytes = self.vector_bytes(&ty.elem, 2)?;
        if self.shapes[ptr].len() != 2 || self.shapes[ptr][1] != n || self.numel(ptr) != numel {
            return None;
        }
        let (e, vt, size) = (self.elem(ty), self.elem(&k.exprs[ptr].ty), elem_size(&ty.elem));
        // When giving up, shared memory that a staged read allocated is given back (`before`).
        let before = self.smem.mark();
        let scope = self.enter_iteration(numel, layout);
        // 16-bit values in groups of four 8-column tiles are stored 16 bytes at a time: the four
        // lanes of a quad (one row) exchange their column pairs (`quad_transpose`), so the test
        // covers the quad's whole row, `c - 2 * (lane % 4)` on, and is taken warp-wide (the
        // exchange needs every lane).
        let wide = size == 2 && tn % 4 == 0;
        let Some((firsts, tests)) = self.mma_store_rows(layout, ptr, mask, wide, size, bytes) else {
            self.leave_iteration(scope);
            self.smem.reset(before);
            return None;
        };
        let val = self.operand(ptr, value, &At::Own);
        // The value of slot `j`, written once as a closure `__val` (bound in front of the
        // stores below) and called with each constant slot (`store_slot`).
        let flat = Self::mma_flat_at(layout, &quote!(__j));
        let value_fn = quote! {
            let __val = #d::inline_fn(#[inline(always)] |__j: usize| -> #e { let __v: usize = __j % 2; let __f: usize = #flat; #val });
        };
        let via_smem = (wide && wg && self.target.has_wgmma()).then(|| {
            let base = self.alloc(self.threads / 32 * Self::via_smem_region(layout));
            let checked = self.outline_cold.then_some((mask, span));
            (self.mma_store_via_smem(layout, ptr, &e, &vt, base, checked), checked.is_some())
        });
        let groups = self.mma_store_groups(layout, &firsts, wide, &e, &vt);
        if !self.leave_iteration(scope).is_empty() {
            self.smem.reset(before);
            return None;
        }
        let all = quote!(true #(&& #tests)*);
        let setup = if wide { quote!(let __sfast: bool = #d::warp_all(#all);) } else { quote!(let __sfast: bool = #all;) };
        match via_smem {
            Some((code, true)) => Some(MmaStore::Both { setup, code: quote!(#value_fn #code) }),
            Some((code, false)) => Some(MmaStore::Fast { setup, fast: quote!(#value_fn #code) }),
            None => Some(MmaStore::Fast { setup, fast: quote!(#value_fn #(#groups)*) }),
        }
    }

    /// Per row that this thread writes of the store through `ptr` in the `mma` layout `layout`
    /// (two per `t_m`): the address of its first column, and the test that its span is
    /// contiguous, aligned to `bytes` (16 when `wide`: the quad's whole row), inside the buffer
    /// and all masked in (`size`: the element's bytes). `None` when the analysis cannot tell.
    fn mma_store_rows(&mut self, layout: Layout, ptr: ExprId, mask: Option<ExprId>, wide: bool, size: usize, bytes: usize) -> Option<(Vec<TokenStream>, Vec<TokenStream>)> {
        let Layout::Mma { tm, tn, .. } = layout else { return None };
        let d = &self.p.d;
        let vt = self.elem(&self.k.exprs[ptr].ty);
        // Row `ri` of this thread (rows `t_m * 2 + r / 2` in `mma_flat`'s terms) spans slots
        // `[t_m * tn * 4 + (ri % 2) * 2, ... + (tn - 1) * 4 + 1]`: columns `c .. c + span`
        // (wide: from the quad's first column, `c - 2 * (lane % 4)`).
        let (span, bytes, back) = if wide { (tn * 8 - 1, 16, quote!((__lane % 4) * 2)) } else { ((tn - 1) * 8 + 1, bytes, quote!(0usize)) };
        let rows = 2 * tm;
        let mut firsts = Vec::new();
        let mut tests = Vec::new();
        let opaque = |f: &TokenStream| At::Flat(quote!(#d::opaque_usize(#f)));
        for ri in 0..rows {
            let (t_m, rr) = (ri / 2, ri % 2);
            let (j0, j1) = (t_m * tn * 4 + rr * 2, t_m * tn * 4 + (tn - 1) * 4 + rr * 2 + 1);
            let (f0, f1) = (Self::mma_flat(layout, j0), Self::mma_flat(layout, j1));
            let (f0, f1) = if wide { (quote!((#f0 - #back)), quote!((#f0 - #back + #span))) } else { (f0, f1) };
            let (at0, at1) = (At::Flat(quote!((#f0))), At::Flat(quote!((#f1))));
            let step = self.col_step(ptr, true, &at0);
            let all = match mask {
                None => Some(quote!(true)),
                Some(m) => {
                    let mv = self.child_moves(ptr, m, true);
                    self.chunk_all(m, mv, &self.sub_at(ptr, m, &at0), &self.sub_at(ptr, m, &at1))
                }
            };
            let (Some(step), Some(all)) = (step, all) else { return None };
            let (p0, p1) = (self.ev(ptr, &at0), self.ev(ptr, &at1));
            let fits = self.fits_code(ptr, &quote!(__pa), span + 1);
            let diff = span * size;
            // Recomputed in the stores (an opaque index, so not kept in registers from the test).
            firsts.push(self.ev(ptr, &opaque(&f0)));
            tests.push(quote!({
                let __pa: #vt = #p0;
                let __pz: #vt = #p1;
                #step == 1i64 && (__pz as usize).wrapping_sub(__pa as usize) == #diff && (__pa as usize) % #bytes == 0 && #fits && #all
            }));
        }
        Some((firsts, tests))
    }

    /// The wide stores of 16-bit values (element `e`, pointers `vt`) on sm_90 (`wgmma` layouts),
    /// through shared memory instead of an exchange between lanes: each warp writes its 16 rows
    /// with `stmatrix` (four 8x8 matrices per instruction, straight from the accumulator order),
    /// then reads them back row by row, 16 bytes per lane, and stores whole rows: a warp's store
    /// covers up to 512 contiguous bytes of a row. Each warp has its own region (rows padded by
    /// 16 bytes so that the eight rows of a matrix fall in different banks, from shared byte
    /// `base`), so the path needs no block barrier; it runs where every row the warp writes passed
    /// the test. With `checked` (the store's mask and span) the rows are written so only where
    /// `__sfast` holds; the other warps, out of line, test each 16-byte chunk: written whole
    /// where it is contiguous, aligned, inside the buffer and masked in, else element by element
    /// where the mask holds (an element outside the buffer is reported as a fault).
    fn mma_store_via_smem(&mut self, layout: Layout, ptr: ExprId, e: &TokenStream, vt: &TokenStream, base: usize, checked: Option<(Option<ExprId>, proc_macro2::Span)>) -> TokenStream {
        let Layout::Mma { wn, tm, tn, n, .. } = layout else { unreachable!("an mma store has an mma layout") };
        let d = &self.p.d;
        let pitch = tn * 16 + 16;
        let region = Self::via_smem_region(layout);
        let (wtm, wtn) = (tm * 64, tn * 8);
        let total = 16 * tn;
        let passes = total.div_ceil(32);
        (0..tm)
            .map(|t_m| {
                let stm = (0..tn / 2).map(|g| {
                    let words = [(2 * g, 0), (2 * g, 1), (2 * g + 1, 0), (2 * g + 1, 1)].map(|(t_n, rr)| {
                        let j = t_m * tn * 4 + t_n * 4 + rr * 2;
                        let (lo, hi) = (store_slot(j), store_slot(j + 1));
                        quote!(#d::pack2::<#e>(#lo, #hi))
                    });
                    let col = 2 * g * 16;
                    quote!(#d::stmatrix_x4(__sw + ((((__lane / 8) % 2) * 8 + __lane % 8) * #pitch + #col + (__lane / 16) * 16) as u32, [#(#words),*]);)
                });
                let flat = quote!((((__warp / 4) / #wn) * #wtm + #t_m * 64 + (__warp % 4) * 16 + __row) * #n + ((__warp / 4) % #wn) * #wtn);
                // The warp's rows, read back 16 bytes per lane, each chunk written by `store`.
                let rows = |store: TokenStream| {
                    quote! {
                        for __q in 0..#passes {
                            let __qi: usize = __q * 32 + __lane;
                            if __qi < #total {
                                let (__row, __ch): (usize, usize) = (__qi / #tn, __qi % #tn);
                                let __v: [u32; 4] = #d::ld_shared_v4(__sw + (__row * #pitch + __ch * 16) as u32);
                                #store
                            }
                        }
                    }
                };
                let row_first = self.ev(ptr, &At::Flat(flat.clone()));
                let fast = rows(quote! {
                    let __p: #vt = #row_first;
                    #d::store_vec::<u32, 4>(__p.wrapping_add(__ch * 8) as *mut u32, __v);
                });
                // The other warps' stores test each chunk, out of line: they read the values
                // from shared memory, so the call takes no registers' values along.
                let stores = match checked {
                    None => fast,
                    Some((mask, span)) => {
                        let checked = rows(self.via_smem_chunk_checked(ptr, mask, span, &quote!((#flat + __ch * 8)), vt));
                        quote! {
                            if __sfast {
                                #fast
                            } else {
                                ::core::hint::cold_path();
                                #d::outline(move || { #checked });
                            }
                        }
                    }
                };
                quote! {
                    #(#stm)*
                    #d::warp_sync();
                    #stores
                    #d::warp_sync();
                }
            })
            .collect::<Vec<TokenStream>>()
            .into_iter()
            .fold(quote!(let __sw: u32 = #d::smem_addr() + (#base + __warp * #region) as u32;), |acc, t| quote!(#acc #t))
    }

    /// The shared memory of one warp in [`Self::mma_store_via_smem`]: 16 rows of the warp's
    /// columns, padded by 16 bytes.
    fn via_smem_region(layout: Layout) -> usize {
        let Layout::Mma { tn, .. } = layout else { return 0 };
        16 * (tn * 16 + 16)
    }

    /// The checked store of the 16-bit chunk `__v` (eight elements from flat index `f0`) of a
    /// store through `ptr` (mask `mask`): one 16-byte store where the chunk is contiguous
    /// ([`Self::chunk_contiguous`]), 16-byte aligned, inside its buffer and masked in
    /// ([`Self::mask_on_chunk`]); nothing where the mask holds on none of it; else each element
    /// where the mask holds, after its bounds check (which reports a fault outside the buffer).
    fn via_smem_chunk_checked(&mut self, ptr: ExprId, mask: Option<ExprId>, span: proc_macro2::Span, f0: &TokenStream, vt: &TokenStream) -> TokenStream {
        let d = &self.p.d;
        let at = |i: TokenStream| At::Flat(quote!((__f0 + #i)));
        let q: Vec<Ident> = (0..8usize).map(|i| format_ident!("__q{}", i)).collect();
        let step = self.col_step(ptr, true, &at(quote!(0usize)));
        // With the pointer block's increment, the contiguity test reads the chunk's ends only.
        let bound: Vec<usize> = if step.is_some() { vec![0, 7] } else { (0..8).collect() };
        let contiguous = Self::chunk_contiguous(step, &q.iter().map(|x| quote!(#x)).collect::<Vec<_>>(), 2);
        let all = mask.map(|m| self.mask_on_chunk(ptr, m, true, 8)).unwrap_or(quote!(true));
        // Masked out whole (an edge block's rows and columns past the mask): nothing to write.
        let none = mask.map(|m| self.mask_on_chunk(ptr, m, false, 8)).unwrap_or(quote!(false));
        let fits = self.fits_code(ptr, &quote!(__q0), 8);
        let m_i = mask.map(|m| self.operand(ptr, m, &at(quote!(__i)))).unwrap_or(quote!(true));
        let p_i = self.ev(ptr, &at(quote!(__i)));
        let ok = self.in_bounds_code(ptr, &quote!(__a), span);
        let binds = bound.iter().map(|&i| {
            let (qi, p) = (&q[i], self.ev(ptr, &at(quote!(#i))));
            quote!(let #qi: #vt = #p;)
        });
        quote! {
            let __f0: usize = #f0;
            #(#binds)*
            if #all #contiguous && (__q0 as usize) % 16 == 0 && #fits {
                #d::store_vec::<u32, 4>(__q0 as *mut u32, __v);
            } else if !#none {
                let mut __i: usize = 0;
                while __i < 8 {
                    if #m_i {
                        let __a: #vt = #p_i;
                        if #ok {
                            // (Selected, not indexed: indexed, `__v` would go to local memory.)
                            let __w: u32 = if __i < 2 { __v[0] } else if __i < 4 { __v[1] } else if __i < 6 { __v[2] } else { __v[3] };
                            #d::store(__a as *mut u16, (__w >> ((__i % 2) * 16)) as u16);
                        }
                    }
                    __i += 1;
                }
            }
        }
    }

    /// The stores of the fast path from registers (element `e`, pointers `vt`), per `t_m`: its
    /// two row pointers (`firsts`), then its stores. `wide`: per row and group of four tiles one
    /// exchange and one 16-byte store (lane `q` stores tile `4 g + q`); else one store per column
    /// pair, in slot order.
    fn mma_store_groups(&self, layout: Layout, firsts: &[TokenStream], wide: bool, e: &TokenStream, vt: &TokenStream) -> Vec<TokenStream> {
        let Layout::Mma { tm, tn, .. } = layout else { unreachable!("an mma store has an mma layout") };
        let d = &self.p.d;
        (0..tm)
            .map(|t_m| {
                let (a, b) = (&firsts[2 * t_m], &firsts[2 * t_m + 1]);
                let stores: Vec<TokenStream> = if wide {
                    (0..2)
                        .flat_map(|rr| (0..tn / 4).map(move |g| (rr, g)))
                        .map(|(rr, g)| {
                            let words = (0..4).map(|t| {
                                let j = t_m * tn * 4 + (4 * g + t) * 4 + rr * 2;
                                let (lo, hi) = (store_slot(j), store_slot(j + 1));
                                quote!(#d::pack2::<#e>(#lo, #hi))
                            });
                            let col = 32 * g;
                            quote! {{
                                let __w: [u32; 4] = #d::quad_transpose([#(#words),*], __lane as u32);
                                #d::store_vec::<u32, 4>(__pr[#rr].wrapping_add(#col + (__lane % 4) * 8) as *mut u32, __w);
                            }}
                        })
                        .collect()
                } else {
                    (0..tn)
                        .flat_map(|t_n| (0..2).map(move |rr| (t_n, rr)))
                        .map(|(t_n, rr)| {
                            let j = t_m * tn * 4 + t_n * 4 + rr * 2;
                            let col = t_n * 8;
                            let copies = (0..2).map(|i| {
                                let slot = store_slot(j + i);
                                quote!(__sv[#i] = #slot;)
                            });
                            quote!({
                                let mut __sv: [#e; 2] = [<#e as ::core::default::Default>::default(); 2];
                                #(#copies)*
                                #d::store_vec::<#e, 2>(__pr[#rr].wrapping_add(#col), __sv);
                            })
                        })
                        .collect()
                };
                quote!({ let __pr: [#vt; 2] = [#a, #b]; #(#stores)* })
            })
            .collect()
    }
}

/// The fast path of a store in the `mma` layout ([`DevGen::mma_store_fast`]); `setup` binds
/// `__sfast`.
enum MmaStore {
    /// The stores where `__sfast` holds; the caller writes the other path.
    Fast { setup: TokenStream, fast: TokenStream },
    /// The stores of both paths, branching on `__sfast`.
    Both { setup: TokenStream, code: TokenStream },
}

/// The value of slot `j` in the fast path of an `mma` store: a call of its closure `__val`.
fn store_slot(j: usize) -> TokenStream {
    quote!(__val(#j))
}
