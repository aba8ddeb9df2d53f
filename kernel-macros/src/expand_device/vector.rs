//! Vectorized phases. In the cyclic layout a thread owns chunks of `V` consecutive elements
//! (`DevGen::vec_width`); a phase over such a block reads each of its loads for the whole
//! chunk ahead of the element code, and a store writes the chunk at the end, with one vector
//! access (`ld.global.v4`, `st.global.v2`, ...) when a run-time check finds the chunk's
//! addresses contiguous and aligned to the access size and its mask all true, and element by
//! element otherwise (edges, strided or unaligned tensors).

use super::*;

impl DevGen<'_> {
    /// Loads that the statement rooted at `e` evaluates at the phase's own element (same flat
    /// index), which may therefore be read for the whole chunk at once.
    fn own_loads(&self, e: ExprId, out: &mut Vec<ExprId>) {
        let k = self.k;
        if self.temps.borrow().contains_key(&e) {
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
            ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Trans(_) => {}
            // The flat order is unchanged: the operand is read at the same index.
            ExprKind::ExpandDims(x, _) | ExprKind::Reshape(x) if !self.shapes[*x].is_empty() => self.own_loads(*x, out),
            kind => {
                for c in children(kind) {
                    if self.shapes[c] == self.shapes[e] {
                        self.own_loads(c, out);
                    }
                }
            }
        }
    }

    /// Whether a vector access of `v` elements of type `e` is one instruction.
    fn vector_bytes(&self, e: &Elem, v: usize) -> Option<usize> {
        let bytes = elem_size(e) * v;
        [4, 8, 16].contains(&bytes).then_some(bytes)
    }

    /// A phase over a cyclic block of `numel` elements (`vec_width > 1`) whose element code
    /// `body` reads the loads below `roots` from chunk registers. `decls` open each chunk,
    /// `after` closes it (a vectorized store).
    pub(super) fn phase_chunks(&self, numel: usize, roots: &[ExprId], body: impl FnOnce(&Self) -> TokenStream, decls: TokenStream, after: TokenStream) -> TokenStream {
        self.phase_chunks_in(numel, Layout::Cyclic, roots, body, decls, after)
    }

    /// [`Self::phase_chunks`] in `layout`: in the `mma` layout a chunk is the pair of adjacent
    /// columns a thread holds in each 16x8 tile.
    fn phase_chunks_in(&self, numel: usize, layout: Layout, roots: &[ExprId], body: impl FnOnce(&Self) -> TokenStream, decls: TokenStream, after: TokenStream) -> TokenStream {
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
        let mut load_code = Vec::new();
        let mut names = HashMap::new();
        for l in &loads {
            let name = self.fresh("ld");
            load_code.push(self.chunk_load(*l, v, &name));
            names.insert(*l, name);
        }
        let saved_pre = self.prefetched.replace(names);
        let b = body(self);
        self.prefetched.replace(saved_pre);
        let staged = self.leave_iteration(scope);
        let (pre, post) = self.staging(&staged);
        let threads = self.threads;
        if let Layout::Mma { .. } = layout {
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
        let copies = (0..v).map(|i| quote!({ let __v: usize = #i; let __j: usize = __jc * #v + #i; let __f: usize = __f0 + #i; #b }));
        quote! {
            #pre
            for __jc in 0..#chunks {
                let __f0: usize = (__jc * #threads + __tid) * #v;
                #decls
                #(#load_code)*
                #(#copies)*
                #after
            }
            #post
        }
    }

    /// Elements per chunk of a block of `numel` elements in `layout`.
    pub(super) fn chunk_len(&self, numel: usize, layout: Layout) -> usize {
        match layout {
            Layout::Cyclic => self.vec_width(numel),
            Layout::Mma { .. } => 2,
        }
    }

    /// `let name: [E; v]` = the chunk of `load` starting at flat index `__f0`.
    fn chunk_load(&self, load: ExprId, v: usize, name: &Ident) -> TokenStream {
        let k = self.k;
        let d = &self.d;
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
        let scalar = (0..v).map(|i| {
            let (qi, m, o) = (&q[i], &masks[i], &others[i]);
            let ok = self.in_bounds_code(ptr, &quote!(#qi), span);
            quote!(if #m && #ok { #d::load(#qi) } else { #o })
        });
        let fits = self.fits_code(ptr, &quote!(__q0), v);
        let Some(bytes) = self.vector_bytes(&ty.elem, v) else {
            return quote! {
                let #name: [#e; #v] = { #(let #q: *mut #e = #ptrs;)* [#(#scalar),*] };
            };
        };
        // The mask holds on the whole chunk: tested at its ends when the analysis allows
        // (the chunk lies in one row), else element by element.
        let in_row = self.shapes[load].last().is_some_and(|n| n % v == 0);
        let all = match mask {
            None => quote!(true),
            Some(m) => in_row.then(|| self.load_chunk_all(load, m, &quote!(__f0), v)).flatten().unwrap_or_else(|| quote!((true #(&& #masks)*))),
        };
        let size = elem_size(&ty.elem);
        let contiguous = (1..v).map(|i| {
            let (qi, off) = (&q[i], i * size);
            quote!((#qi as usize) == (__q0 as usize) + #off)
        });
        quote! {
            let #name: [#e; #v] = {
                #(let #q: *mut #e = #ptrs;)*
                if #all && (__q0 as usize) % #bytes == 0 #(&& #contiguous)* && #fits {
                    #d::load_vec::<#e, #v>(__q0)
                } else {
                    [#(#scalar),*]
                }
            };
        }
    }

    /// A store of a block of `numel` elements in chunks (cyclic with `vec_width > 1`, or the
    /// column pairs of the `mma` layout): each chunk's pointers,
    /// values and mask bits are computed element by element, then written with one vector
    /// access when contiguous, aligned and unmasked.
    pub(super) fn store_chunks(&self, numel: usize, layout: Layout, ptr: ExprId, value: ExprId, mask: Option<ExprId>, span: proc_macro2::Span) -> TokenStream {
        let d = &self.d;
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
        let body = |g: &Self| {
            let p = g.ev(ptr, &At::Own);
            let val = g.operand(ptr, value, &At::Own);
            let m = match mask {
                Some(m) => g.operand(ptr, m, &At::Own),
                None => quote!(true),
            };
            quote! { __sp[__v] = #p; __sv[__v] = #val; __sm[__v] = #m; }
        };
        let idx: Vec<usize> = (0..v).collect();
        let oks = idx.iter().map(|i| self.in_bounds_code(ptr, &quote!(__sp[#i]), span));
        let scalar = quote!(#(if __sm[#idx] && #oks { #d::store(__sp[#idx], __sv[#idx]); })*);
        let fits = self.fits_code(ptr, &quote!(__sp[0]), v);
        let after = match self.vector_bytes(&ty.elem, v) {
            None => scalar,
            Some(bytes) => {
                let size = elem_size(&ty.elem);
                let contiguous = (1..v).map(|i| {
                    let off = i * size;
                    quote!((__sp[#i] as usize) == (__sp[0] as usize) + #off)
                });
                quote! {
                    if true #(&& __sm[#idx])* && (__sp[0] as usize) % #bytes == 0 #(&& #contiguous)* && #fits {
                        #d::store_vec::<#e, #v>(__sp[0], __sv);
                    } else {
                        #scalar
                    }
                }
            }
        };
        self.phase_chunks_in(numel, layout, &roots, body, decls, after)
    }
}
