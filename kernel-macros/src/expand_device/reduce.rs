//! Reductions along one axis (`sum`, `max`, `min`, `xor_sum`).
//!
//! When the block's dimensions are powers of two and its layout is one of the distributed ones
//! ([`Layout::Cyclic`], an `mma` accumulator layout with power-of-two tiles, or the rows of
//! one), every bit of an element's flat index comes from one bit of a register slot, lane or
//! warp index ([`BitLayout`]). The reduced axis is a range of flat-index bits, so a reduction
//! is: combine the register slots that differ only in reduced bits (in registers), then the
//! lanes that differ only in reduced bits (`shfl.sync.bfly`), then the warps (one partial per
//! warp in shared memory, combined when the result is read). The rows of a 2-D `mma` block
//! reduced along its columns stay in registers ([`Layout::MmaRows`]). Other blocks go through
//! shared memory (each warp reduces lines of the staged block).

use super::bits::RegReduce;
use super::*;

/// The fewest warps whose partials a reduction to one value combines across lanes (one
/// shared-memory read and a butterfly step per doubling) rather than read one after the other
/// (a vector read, but a register per partial): below it the shuffles' latency costs more than
/// the registers.
const MIN_LANE_COMBINED_WARPS: usize = 8;

impl DevGen<'_> {
    /// The layout a reduction iterates its operand in: the `mma` layout of a `dot` result (or of
    /// elementwise code over one), so that it is read in registers; the cyclic layout otherwise.
    pub(super) fn reduce_layout(&self, x: ExprId) -> Layout {
        if let Some(m) = self.temps.get(&x) {
            return m.layout;
        }
        self.elementwise_mma_source(x, &self.shapes[x], &self.layouts).unwrap_or(Layout::Cyclic)
    }

    /// Flat index (a `usize` expression) of this thread's register slot `j` in `layout`.
    fn slot_flat(&self, numel: usize, layout: Layout, j: usize) -> TokenStream {
        match layout {
            Layout::Cyclic => {
                let (t, v) = (self.threads, self.vec_width(numel));
                let (c, r) = (j / v, j % v);
                quote!(((#c * #t + __tid) * #v + #r))
            }
            Layout::Mma { .. } => Self::mma_flat(layout, j),
            Layout::MmaRows { .. } => self.bit_layout(numel, layout).map_or(quote!(0usize), |b| b.flat_at(&quote!(#j))),
        }
    }

    pub(super) fn gen_reduce(&mut self, id: ExprId, op: ReduceOp, x: ExprId, axis: usize) -> TokenStream {
        let d = &self.p.d;
        let sx = self.shapes[x].clone();
        let ex = self.elem(&self.k.exprs[x].ty);
        let t = self.elem(&self.k.exprs[id].ty);
        let float = self.k.exprs[x].ty.dtype().is_some_and(|d| d.is_float());
        // Accumulate floats in f32 (f64 stays f64), integers in their own type.
        let wide = float && self.k.exprs[x].ty.dtype() != Some(DType::F64);
        let (acc_t, acc_size, to_acc, from_acc) = if wide {
            (quote!(f32), 4usize, quote!(<#ex as #d::Elem>::to_f32), quote!(<#t as #d::Elem>::from_f32))
        } else {
            (ex.clone(), elem_size(&self.k.exprs[x].ty.elem), quote!(), quote!())
        };
        let identity = match op {
            ReduceOp::Sum | ReduceOp::Xor => quote!(<#acc_t as #d::Elem>::from_i64(0)),
            ReduceOp::Max => quote!(<#acc_t as #d::Bounds>::lowest()),
            ReduceOp::Min => quote!(<#acc_t as #d::Bounds>::highest()),
        };
        let (acc_ty, dd) = (acc_t.clone(), d.clone());
        let combine = move |a: TokenStream, v: TokenStream| match op {
            ReduceOp::Sum => quote!(<#acc_ty as #dd::Num>::add(#a, #v)),
            ReduceOp::Max => quote!(<#acc_ty as #dd::Num>::max(#a, #v)),
            ReduceOp::Min => quote!(<#acc_ty as #dd::Num>::min(#a, #v)),
            ReduceOp::Xor => quote!(<#acc_ty as #dd::Int>::xor(#a, #v)),
        };
        let acc = Accumulator { t: acc_t, size: acc_size, to: to_acc, from: from_acc, identity };
        let nx: usize = sx.iter().product();
        let layout = self.reduce_layout(x);
        if let Some(plan) = self.bit_layout(nx, layout).and_then(|b| b.reduce(&sx, axis)) {
            let rows = self.reduce_result_layout(layout, &sx, axis);
            return self.reduce_in_registers(id, x, (layout, rows), &plan, &acc, combine);
        }
        self.reduce_in_smem(id, x, axis, &acc, combine)
    }

    /// A reduction planned by [`BitLayout::reduce`]: each thread folds its register slots into
    /// its partial results, lanes combine theirs with butterflies, and each warp writes its
    /// partials to shared memory; a result element combines its warps' partials when read.
    /// With a result layout `rows` (see `reduce_result_layout`), the result stays in the
    /// threads' registers: the partials themselves when no warps combine, else each thread
    /// combines its rows' warp partials once.
    fn reduce_in_registers(&mut self, id: ExprId, x: ExprId, (layout, rows): (Layout, Option<Layout>), plan: &RegReduce, acc: &Accumulator, combine: impl Fn(TokenStream, TokenStream) -> TokenStream) -> TokenStream {
        let d = &self.p.d;
        let Accumulator { t: acc_t, size, to, from, identity } = acc;
        let nx = self.numel(x);
        let (np, nw) = (plan.partials(), plan.warps());
        let nout: usize = self.shapes[id].iter().product::<usize>().max(1);
        let off = self.alloc(nout * nw * size);
        // Partial `local[j]` of slot `j`: the local index is a constant once the slot loop is
        // unrolled.
        let local = {
            let table = plan.local.iter().map(|l| quote!(#l));
            let n = plan.local.len();
            quote!({ const __L: [usize; #n] = [#(#table),*]; __L[__j] })
        };
        let fold = combine(quote!(__p[__i]), quote!(#to(__x)));
        let partials = self.phase_in(nx, layout, |g| {
            let v = g.ev(x, &At::Own);
            quote! { let __x = #v; let __i: usize = #local; __p[__i] = #fold; }
        });
        let steps = plan.lane_masks.iter().map(|m| {
            let c = combine(quote!(__p[__i]), quote!(<#acc_t as #d::Shuffle>::shfl_xor(__p[__i], #m)));
            quote!(__p[__i] = #c;)
        });
        let butterfly = if plan.lane_masks.is_empty() { quote!() } else { self.unrolled(np, quote!(__i), quote!(#(#steps)*)) };
        let lane_mask: u32 = plan.lane_masks.iter().sum();
        let warp_index = plan.warp_bits.iter().enumerate().map(|(i, b)| quote!(((__warp >> #b) & 1) << #i));
        let (lo, hi) = (plan.lo, plan.hi);
        let writes = plan.rep.iter().enumerate().map(|(i, j)| {
            let f = self.slot_flat(nx, layout, *j);
            quote! {
                let __f: usize = #f;
                if __f < #nx {
                    let __o: usize = ((__f >> #hi) << #lo) | (__f & ((1usize << #lo) - 1));
                    #d::store(__po.add(__o * #nw + __w), __p[#i]);
                }
            }
        });
        let registers = quote! {
            let mut __p: [#acc_t; #np] = [#identity; #np];
            #partials
            #butterfly
        };
        if let (Some(rows), 1) = (rows, nw) {
            return self.rows_result(id, rows, registers, from, |i| quote!(__p[#i]));
        }
        let code = quote! {
            #registers
            if ((__lane as u32) & #lane_mask) == 0 {
                let __po = __smem.add(#off) as *mut #acc_t;
                let __w: usize = 0 #(| #warp_index)*;
                #(#writes)*
            }
            #d::bar_sync();
        };
        let fold_warps = (1..nw).map(|w| {
            let c = combine(quote!(__a), quote!(#d::load(__po.add(__o + #w))));
            quote!(__a = #c;)
        }).collect::<Vec<_>>();
        if let Some(rows) = rows {
            let bits = self.bit_layout(nout, rows).expect("a row layout");
            let result = self.rows_result(id, rows, code, from, |i| {
                let f = bits.flat_at(&quote!(#i));
                quote!({
                    let __po = __smem.add(#off) as *mut #acc_t;
                    let __o: usize = (#f) * #nw;
                    let mut __a: #acc_t = #d::load(__po.add(__o));
                    #(#fold_warps)*
                    __a
                })
            });
            return quote!(#result #d::bar_sync(););
        }
        if self.shapes[id].is_empty() && nw >= MIN_LANE_COMBINED_WARPS {
            // One value: each lane reads one warp's partial (`nw`, a power of two, is at most
            // 32) and the lanes combine them with butterflies (the same bits in every lane: the
            // combinations commute), so the partials never take a register each.
            let steps = (0..nw.trailing_zeros()).map(|b| {
                let m = 1u32 << b;
                let c = combine(quote!(__a), quote!(<#acc_t as #d::Shuffle>::shfl_xor(__a, #m)));
                quote!(__a = #c;)
            }).collect::<Vec<_>>();
            return self.smem_result(id, "red", code, |_| {
                quote!({
                    let __po = __smem.add(#off) as *mut #acc_t;
                    let mut __a: #acc_t = #d::load(__po.add(__lane & (#nw - 1)));
                    #(#steps)*
                    #from(__a)
                })
            });
        }
        self.smem_result(id, "red", code, |f| {
            quote!({
                let __po = __smem.add(#off) as *mut #acc_t;
                let __o: usize = (#f) * #nw;
                let mut __a: #acc_t = #d::load(__po.add(__o));
                #(#fold_warps)*
                #from(__a)
            })
        })
    }

    /// The result `id` of a reduction in row layout `rows`: after `code`, slot `i` of the result
    /// is `partial(i)` (an accumulator value, converted by `from`).
    fn rows_result(&mut self, id: ExprId, rows: Layout, code: TokenStream, from: &TokenStream, partial: impl Fn(usize) -> TokenStream) -> TokenStream {
        let t = self.elem(&self.k.exprs[id].ty);
        let nout: usize = self.shapes[id].iter().product();
        let np = self.slots(nout, rows);
        let out = self.fresh("red");
        let values = (0..np).map(|i| {
            let v = partial(i);
            quote!(#from(#v))
        });
        self.temps.insert(id, MatVar { ident: out.clone(), elem: t.clone(), numel: nout, layout: rows });
        quote! {
            let #out: [#t; #np] = {
                #code
                [#(#values),*]
            };
        }
    }

    /// A reduction through shared memory: the block is staged, then each warp reduces outputs
    /// `warp, warp + W, ...` (its lanes stride the reduced axis, then a butterfly of
    /// `shfl.sync.bfly` combines the 32 partial results).
    fn reduce_in_smem(&mut self, id: ExprId, x: ExprId, axis: usize, acc: &Accumulator, combine: impl Fn(TokenStream, TokenStream) -> TokenStream) -> TokenStream {
        let d = &self.p.d;
        let Accumulator { t: acc_t, size, to, from, identity } = acc;
        let sx = self.shapes[x].clone();
        let ex = self.elem(&self.k.exprs[x].ty);
        let nx: usize = sx.iter().product();
        let off = self.alloc(nx * elem_size(&self.k.exprs[x].ty.elem));
        let stage = self.phase(nx, |g| {
            let v = g.ev(x, &At::Own);
            quote!(#d::store((__smem.add(#off) as *mut #ex).add(__f), #v);)
        });
        let r = sx[axis];
        let inner: usize = sx[axis + 1..].iter().product();
        let nout: usize = self.shapes[id].iter().product::<usize>().max(1);
        let warps = self.threads / 32;
        let off_out = self.alloc(nout * size);
        let step = combine(quote!(__a), quote!(__v));
        let butterfly = [16u32, 8, 4, 2, 1].map(|m| {
            quote! {
                let __v = <#acc_t as #d::Shuffle>::shfl_xor(__a, #m);
                __a = #step;
            }
        });
        let code = quote! {
            #stage
            #d::bar_sync();
            {
                let __px = __smem.add(#off) as *mut #ex;
                let __po = __smem.add(#off_out) as *mut #acc_t;
                let mut __o: usize = __warp;
                while __o < #nout {
                    let __base = (__o / #inner) * (#r * #inner) + (__o % #inner);
                    let mut __a: #acc_t = #identity;
                    let mut __rr: usize = __lane;
                    while __rr < #r {
                        let __v = #to(#d::load(__px.add(__base + __rr * #inner)));
                        __a = #step;
                        __rr += 32;
                    }
                    #(#butterfly)*
                    if __lane == 0 {
                        #d::store(__po.add(__o), __a);
                    }
                    __o += #warps;
                }
            }
            #d::bar_sync();
        };
        self.smem_result(id, "red", code, |f| quote!(#from(#d::load((__smem.add(#off_out) as *mut #acc_t).add(#f)))))
    }
}

/// The type a reduction accumulates in, its size in bytes, the conversions to and from the
/// operand's and result's dtypes, and the operation's identity.
struct Accumulator {
    t: TokenStream,
    size: usize,
    to: TokenStream,
    from: TokenStream,
    identity: TokenStream,
}

