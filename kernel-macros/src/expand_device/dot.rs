//! `dot`: f32 FMAs over operands in shared memory, or the tensor cores (`mma.sync` with
//! `ldmatrix` fragments, or sm_90a's `wgmma` with shared-memory descriptors or A in registers)
//! over operands staged in swizzled shared memory (`operands.rs`), the result in the plan's
//! `mma` layout.

use super::*;

impl DevGen<'_> {
    pub(super) fn gen_dot(&mut self, id: ExprId, a: ExprId, b: ExprId, acc: Option<ExprId>) -> TokenStream {
        if let Some(layout) = self.tiling(id) {
            return self.gen_dot_mma(id, a, b, acc, layout);
        }
        let d = &self.p.d;
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
                // The trip count hidden from the optimizer: unrolled whole and interleaved
                // across the thread's slots, the loads of every slot's products were in flight
                // at once and took every register (a 48 x 48 x 48 `dot` spilled).
                for __k in 0..#d::opaque_usize(#kk) {
                    #mac
                }
                #out[__j] = __s;
            }
        });
        self.temps.insert(id, MatVar { ident: out.clone(), elem: acc_t.clone(), numel: m * n, layout: Layout::Cyclic });
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
    pub(super) fn gen_dot_mma(&mut self, id: ExprId, a: ExprId, b: ExprId, acc: Option<ExprId>, layout: Layout) -> TokenStream {
        let d = &self.p.d;
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
        } else if !matches!(layout, Layout::Mma { wg: true, .. }) {
            self.mma_compute(a, layout, kk, &out, (sa, sb), [staging_a, staging_b])
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
        self.temps.insert(id, MatVar { ident: result, elem, numel: m * n, layout });
        // Operands the statement staged may be overwritten by the next statement: a barrier
        // after the product, unless every operand lives across the loop's statements.
        let lasting = |x: ExprId| self.resident.contains_key(&x) || self.ahead.contains_key(&x);
        let all_lasting = (reg_a.is_some() || lasting(a)) && lasting(b);
        // Operands copied ahead with tensor maps, the others resident or in registers: every
        // thread waited for the copies itself (`pipeline/ahead.rs`), so only a fix-up of masked
        // elements in this iteration (`__fixnow`, uniform over the block) needs the barrier
        // before the product (the one after the last product still keeps a buffer from being
        // copied into while a warp reads it).
        let by_tma = |x: ExprId| self.ahead.get(&x).is_some_and(super::operands::Ahead::by_tma);
        let tma_only = all_lasting && (by_tma(a) || by_tma(b));
        let free = self.followed.contains(&id) && all_lasting;
        let after = (!free).then(|| quote!(#d::bar_sync();));
        let before = if tma_only {
            quote!(if __fixnow { #fence #d::bar_sync(); })
        } else {
            quote!(#fence #d::bar_sync();)
        };
        quote! {
            let mut #out: [f32; #slots] = [0.0f32; #slots];
            #init
            #stage_a
            #stage_b
            #before
            #compute
            #add_sums
            #after
        }
    }

    /// The alignment of staged operand tiles of a tensor-core `dot` in `layout`, and the fence
    /// that makes the staging writes visible to the instruction before the barrier: `wgmma`
    /// tiles start on whole 1024-byte swizzle patterns and are read through the async proxy.
    pub(super) fn operand_staging(&self, layout: Layout) -> (usize, TokenStream) {
        let d = &self.p.d;
        let fence = matches!(layout, Layout::Mma { wg: true, .. }).then(|| quote!(#d::fence_proxy_async();));
        (plan::smem::staging_align(layout), quote!(#fence))
    }

    /// The swizzle of a staged 16-bit operand with rows of `inner` elements, as
    /// `(rows per 128-byte line, period)`: 16-byte chunk `c` of row `r` is stored at chunk
    /// `c ^ ((r / rows_per_line) % period)` of its row, so the 8 rows that one `ldmatrix`
    /// matrix reads at the same logical chunk hit 8 different groups of banks. `None` (no
    /// swizzle) when a row has one chunk or a chunk count that is not a power of two.
    pub(super) fn swizzle(inner: usize) -> Option<(usize, usize)> {
        let chunks = inner / 8;
        if !inner.is_multiple_of(8) || chunks < 2 || !chunks.is_power_of_two() {
            return None;
        }
        Some(((8 / chunks).max(1), chunks.min(8)))
    }

    /// Element index in shared memory of 16-byte chunk `chunk` of row `row` of a staged operand.
    pub(super) fn swz_chunk(inner: usize, row: TokenStream, chunk: TokenStream) -> TokenStream {
        match Self::swizzle(inner) {
            None => quote!(((#row) * #inner + (#chunk) * 8)),
            Some((per_line, period)) => {
                quote!(({ let __r: usize = #row; __r * #inner + (((#chunk) ^ ((__r / #per_line) % #period)) * 8) }))
            }
        }
    }

    /// Element index in shared memory of row-major flat index `f` of a staged operand.
    pub(super) fn swz_flat(inner: usize, f: TokenStream) -> TokenStream {
        if Self::swizzle(inner).is_none() {
            return f;
        }
        let base = Self::swz_chunk(inner, quote!(__sf / #inner), quote!((__sf % #inner) / 8));
        quote!(({ let __sf: usize = #f; #base + __sf % 8 }))
    }

    /// The inner loop of a tensor-core `dot` over operands staged (swizzled) at shared addresses
    /// `sa` (A, `[M, kk]`) and `sb` (B, `[kk, N]`), each as `orient` says, accumulating into the
    /// `mma`-layout array `acc`. Unrolled over the `kk / 16` steps: A fragments with `ldmatrix.x4`
    /// (`.trans` from a transposed staging), the B fragments of two adjacent 8-column tiles with
    /// one `ldmatrix.x4.trans` (plain from a transposed staging; `x2` for an odd last tile).
    pub(super) fn mma_compute(&self, a: ExprId, layout: Layout, kk: usize, acc: &Ident, (sa, sb): (TokenStream, TokenStream), staging: [Staging; 2]) -> TokenStream {
        let d = &self.p.d;
        let Layout::Mma { wn, tm, tn, n, wg, .. } = layout else { return quote!() };
        if wg {
            let (setup, issue, finish) = self.wgmma_compute(a, layout, kk, acc, (sa, sb), None, [Staging::Rows; 2]);
            return quote!({ #setup #issue #finish });
        }
        let m = self.shapes[a][0];
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
        // fragments of column tiles `2 __jp, 2 __jp + 1` (and of an odd last one). Lane `l` gives
        // the address of row `l % 8` of matrix `l / 8`: in A's `[M, kk]` staging the matrices are
        // (rows 0-7, 8-15) x (K 0-7, 8-15) in that order; in its `[kk, M]` staging the same
        // matrices are read transposed from K rows; B's `[kk, N]` staging is read transposed, its
        // `[N, kk]` staging as it is.
        let a_rows = Self::swz_chunk(kk, quote!((__warp / #wn) * #wtm + __i * 16 + __lane % 16), quote!(__ks * 2 + __lane / 16));
        let a_cols = Self::swz_chunk(m, quote!(__ks * 16 + (__lane / 16) * 8 + __lane % 8), quote!(((__warp / #wn) * #wtm + __i * 16) / 8 + (__lane / 8) % 2));
        let a_load = ldmatrix(d, staging[0], quote!(__sa), (a_rows, a_cols), false, 4);
        let a_frags = self.unrolled(tm, quote!(__i), quote!(__af[__i] = #a_load;));
        let b_rows = |tile: TokenStream| Self::swz_chunk(n, quote!(__ks * 16 + __lane % 16), tile);
        let b_cols = |tile: TokenStream, first: TokenStream| Self::swz_chunk(kk, quote!((#tile) * 8 + __lane % 8), first);
        let pair_tile = quote!((__warp % #wn) * #tn + 2 * __jp);
        let pair_load = ldmatrix(d, staging[1], quote!(__sb), (b_rows(quote!(#pair_tile + __lane / 16)), b_cols(quote!(#pair_tile + __lane / 16), quote!(__ks * 2 + (__lane / 8) % 2))), true, 4);
        let (m0, m1) = (mmas(quote!(2 * __jp), quote!([__bq[0], __bq[1]])), mmas(quote!(2 * __jp + 1), quote!([__bq[2], __bq[3]])));
        let pairs = self.unrolled(
            tn / 2,
            quote!(__jp),
            quote! {
                let __bq = #pair_load;
                #m0
                #m1
            },
        );
        let odd = (tn % 2 == 1).then(|| {
            let j = tn - 1;
            let tile = quote!((__warp % #wn) * #tn + #j);
            let load = ldmatrix(d, staging[1], quote!(__sb), (b_rows(tile.clone()), b_cols(tile, quote!(__ks * 2 + (__lane / 8) % 2))), true, 2);
            let m = mmas(quote!(#j), quote!(__bq));
            quote! {
                let __bq = #load;
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
    pub(super) fn wgmma_compute(&self, a: ExprId, layout: Layout, kk: usize, acc: &Ident, (sa, sb): (TokenStream, TokenStream), stage: Option<usize>, staging: [Staging; 2]) -> (TokenStream, TokenStream, TokenStream) {
        let d = &self.p.d;
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
    pub(super) fn wgmma_group(&self, layout: Layout, acc: &Ident, descs: TokenStream, calls: Vec<TokenStream>) -> (TokenStream, TokenStream) {
        let d = &self.p.d;
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
    pub(super) fn register_a(&mut self, a: ExprId, layout: Layout, kk: usize) -> Option<(TokenStream, Ident)> {
        let d = &self.p.d;
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
    pub(super) fn wgmma_compute_rs(&self, layout: Layout, kk: usize, acc: &Ident, sb: TokenStream, staging_b: Staging, ar: &Ident) -> (TokenStream, TokenStream, TokenStream) {
        let d = &self.p.d;
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
    pub(super) fn cast_pairs_f16(&mut self, id: &Ident, numel: usize, layout: Layout, ty: &Ty, value: ExprId) -> Option<TokenStream> {
        let d = &self.p.d;
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
    pub(super) fn cast_slot_fn(&mut self, value: ExprId, numel: usize, layout: Layout) -> Option<TokenStream> {
        let d = &self.p.d;
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
    pub(super) fn cast_from_f32(&self, e: ExprId) -> Option<ExprId> {
        match &self.k.exprs[e].kind {
            ExprKind::Cast(x) if self.k.exprs[*x].ty.elem == Elem::Val(DType::F32) => Some(*x),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) => self.cast_from_f32(v),
                _ => None,
            },
            _ => None,
        }
    }
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
