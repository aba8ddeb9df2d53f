//! Scans (`cumsum`, `cumprod`, `associative_scan`) and reductions with a combine function,
//! through shared memory: each warp takes whole lines.

use super::*;

impl DevGen<'_> {
    /// The value `id` computed into shared memory by `code` (which ends past a barrier), read
    /// into a cyclic temporary: element `f` is `value_at(f)`; a scalar result is uniform, and
    /// every thread reads element 0.
    pub(super) fn smem_result(&mut self, id: ExprId, prefix: &str, code: TokenStream, value_at: impl Fn(TokenStream) -> TokenStream) -> TokenStream {
        let d = &self.p.d;
        let t = self.elem(&self.k.exprs[id].ty);
        let out = self.fresh(prefix);
        if self.shapes[id].is_empty() {
            self.temps.insert(id, MatVar { ident: out.clone(), elem: t.clone(), numel: 0, layout: Layout::Cyclic });
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
        self.temps.insert(id, MatVar { ident: out.clone(), elem: t.clone(), numel: nout, layout: Layout::Cyclic });
        quote! {
            let mut #out: [#t; #pt] = unsafe { ::core::mem::zeroed() };
            #code
            #gather
            #d::bar_sync();
        }
    }

    /// An inclusive scan along `axis`, gathered into a cyclic temporary (see [`Self::scan_code`]).
    pub(super) fn gen_scan(&mut self, id: ExprId, op: ScanOp, x: ExprId, axis: usize, reverse: bool) -> TokenStream {
        let d = &self.p.d;
        let (code, off, acc_t, from_acc) = self.scan_code(op, x, axis, reverse);
        self.smem_result(id, "scan", code, |f| quote!(#from_acc(#d::load((__smem.add(#off) as *mut #acc_t).add(#f)))))
    }

    /// `reduce(x, axis, combine)`: the forward scan with the combine function, whose last
    /// element of each line is the line's result.
    pub(super) fn gen_reduce_with(&mut self, id: ExprId, x: ExprId, axis: usize, c: Combine) -> TokenStream {
        let d = &self.p.d;
        let sx = &self.p.shapes[x];
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
    pub(super) fn scan_code(&mut self, op: ScanOp, x: ExprId, axis: usize, reverse: bool) -> (TokenStream, usize, TokenStream, TokenStream) {
        let d = &self.p.d;
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
}
