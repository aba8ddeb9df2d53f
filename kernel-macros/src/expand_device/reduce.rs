//! Reductions along one axis (`sum`, `max`, `min`, `xor_sum`).
//!
//! When the block's dimensions are powers of two and its layout is one of the distributed ones
//! ([`Layout::Cyclic`], or an `mma` accumulator layout with power-of-two tiles), every bit of an
//! element's flat index comes from one bit of a register slot, lane or warp index
//! ([`BitLayout`]). The reduced axis is a range of flat-index bits, so a reduction is: combine
//! the register slots that differ only in reduced bits (in registers), then the lanes that
//! differ only in reduced bits (`shfl.sync.bfly`), then the warps (one partial per warp in
//! shared memory, combined when the result is read). Other blocks go through shared memory
//! (each warp reduces lines of the staged block).

use super::*;

/// Where the bits of a thread's register slot, lane and warp indices put its elements: bit `b`
/// of the slot index is bit `slot[b]` of the element's flat index, and likewise for the lane and
/// warp. A bit at or past `bits` means an element past the block (a thread that owns nothing).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct BitLayout {
    pub(super) slot: Vec<u32>,
    pub(super) lane: Vec<u32>,
    pub(super) warp: Vec<u32>,
    /// `log2` of the block's element count.
    pub(super) bits: u32,
}

/// How a reduction combines the values of a [`BitLayout`].
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RegReduce {
    /// The partial result register slot `j` joins (slots that differ only in reduced bits).
    pub(super) local: Vec<usize>,
    /// A slot of each partial result.
    pub(super) rep: Vec<usize>,
    /// The lane bits (as `shfl.sync.bfly` masks) whose lanes hold the same outputs.
    pub(super) lane_masks: Vec<u32>,
    /// The warp-index bits whose warps hold the same outputs (their partials meet in shared
    /// memory, `2^len` per output).
    pub(super) warp_bits: Vec<u32>,
    /// The reduced axis is flat-index bits `lo..hi`.
    pub(super) lo: u32,
    pub(super) hi: u32,
}

fn log2_exact(n: usize) -> Option<u32> {
    n.is_power_of_two().then(|| n.trailing_zeros())
}

impl BitLayout {
    /// The cyclic layout of `numel` elements over `threads` threads in chunks of `v` (see the
    /// module documentation of `expand_device`): slot `j` of thread `t` is element
    /// `((j / v) * threads + t) * v + j % v`.
    pub(super) fn cyclic(numel: usize, threads: usize, v: usize, slots: usize) -> Option<BitLayout> {
        let (n, lt, lv, ls) = (log2_exact(numel)?, log2_exact(threads)?, log2_exact(v)?, log2_exact(slots)?);
        let slot = (0..ls).map(|b| if b < lv { b } else { b + lt }).collect();
        let thread: Vec<u32> = (0..lt).map(|b| lv + b).collect();
        let lanes = lt.min(5) as usize;
        Some(BitLayout { slot, lane: thread[..lanes].to_vec(), warp: thread[lanes..].to_vec(), bits: n })
    }

    /// An `mma` accumulator layout (see [`Layout::Mma`]) whose warp grid and tile counts are
    /// powers of two.
    pub(super) fn mma(layout: Layout) -> Option<BitLayout> {
        let Layout::Mma { wm, wn, tm, tn, n, wg } = layout else { return None };
        let (lwm, lwn, ltm, ltn, ln) = (log2_exact(wm)?, log2_exact(wn)?, log2_exact(tm)?, log2_exact(tn)?, log2_exact(n)?);
        // Row bit `b` is flat bit `ln + b`; column bit `b` is flat bit `b`.
        let row = |b: u32| ln + b;
        // Slot `j = t_m * 4 tn + t_n * 4 + r`: r's bit 0 is column bit 0, its bit 1 row bit 3;
        // t_n's bits are column bits 3..; t_m's bits rows of 16 (64 with warpgroups).
        let tile_row = if wg { 6 } else { 4 };
        let mut slot = vec![0, row(3)];
        slot.extend((0..ltn).map(|b| 3 + b));
        slot.extend((0..ltm).map(|b| row(tile_row + b)));
        // Lane `l`: column bits 1, 2 are `l % 4`, row bits 0..3 are `l / 4`.
        let lane = vec![1, 2, row(0), row(1), row(2)];
        // Warp index: with warpgroups, bits 0 and 1 are row bits 4 and 5 and the group index
        // follows; the (group) index is `row-block * wn + column-block`.
        let (col_base, row_base) = (3 + ltn, tile_row + ltm);
        let mut warp = if wg { vec![row(4), row(5)] } else { vec![] };
        warp.extend((0..lwn).map(|b| col_base + b));
        warp.extend((0..lwm).map(|b| row(row_base + b)));
        Some(BitLayout { slot, lane, warp, bits: ln + log2_exact(wm * tm * if wg { 64 } else { 16 })? })
    }

    /// The plan of a reduction of a block of shape `shape` in this layout along `axis`.
    pub(super) fn reduce(&self, shape: &[usize], axis: usize) -> Option<RegReduce> {
        let lo = log2_exact(shape[axis + 1..].iter().product())?;
        let hi = lo + log2_exact(shape[axis])?;
        let reduced = |b: &u32| (lo..hi).contains(b);
        let kept: Vec<usize> = (0..self.slot.len()).filter(|b| !reduced(&self.slot[*b])).collect();
        let compress = |j: usize| kept.iter().enumerate().map(|(i, b)| ((j >> b) & 1) << i).sum::<usize>();
        let local: Vec<usize> = (0..1usize << self.slot.len()).map(compress).collect();
        let rep = (0..1usize << kept.len()).map(|l| local.iter().position(|x| *x == l).unwrap_or(0)).collect();
        let lane_masks = (0..self.lane.len()).filter(|b| reduced(&self.lane[*b])).map(|b| 1u32 << b).collect();
        let warp_bits = (0..self.warp.len() as u32).filter(|b| reduced(&self.warp[*b as usize])).collect();
        Some(RegReduce { local, rep, lane_masks, warp_bits, lo, hi })
    }
}

impl RegReduce {
    fn partials(&self) -> usize {
        self.rep.len()
    }

    fn warps(&self) -> usize {
        1 << self.warp_bits.len()
    }
}

impl DevGen<'_> {
    /// The layout a reduction iterates its operand in: the `mma` layout of a `dot` result (or of
    /// elementwise code over one), so that it is read in registers; the cyclic layout otherwise.
    fn reduce_layout(&self, x: ExprId) -> Layout {
        if let Some(m) = self.temps.borrow().get(&x) {
            return m.layout;
        }
        self.elementwise_mma_source(x, &self.shapes[x], &self.layouts).unwrap_or(Layout::Cyclic)
    }

    /// The [`BitLayout`] of a block of `numel` elements in `layout`, if it has one.
    fn bit_layout(&self, numel: usize, layout: Layout) -> Option<BitLayout> {
        match layout {
            Layout::Cyclic => BitLayout::cyclic(numel, self.threads, self.vec_width(numel), self.per_thread(numel)),
            Layout::Mma { .. } => BitLayout::mma(layout),
        }
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
        }
    }

    pub(super) fn gen_reduce(&self, id: ExprId, op: ReduceOp, x: ExprId, axis: usize) -> TokenStream {
        let d = &self.d;
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
            return self.reduce_in_registers(id, x, layout, &plan, &acc, combine);
        }
        self.reduce_in_smem(id, x, axis, &acc, combine)
    }

    /// A reduction planned by [`BitLayout::reduce`]: each thread folds its register slots into
    /// its partial results, lanes combine theirs with butterflies, and each warp writes its
    /// partials to shared memory; a result element combines its warps' partials when read.
    fn reduce_in_registers(&self, id: ExprId, x: ExprId, layout: Layout, plan: &RegReduce, acc: &Accumulator, combine: impl Fn(TokenStream, TokenStream) -> TokenStream) -> TokenStream {
        let d = &self.d;
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
        let code = quote! {
            let mut __p: [#acc_t; #np] = [#identity; #np];
            #partials
            #butterfly
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

    /// A reduction through shared memory: the block is staged, then each warp reduces outputs
    /// `warp, warp + W, ...` (its lanes stride the reduced axis, then a butterfly of
    /// `shfl.sync.bfly` combines the 32 partial results).
    fn reduce_in_smem(&self, id: ExprId, x: ExprId, axis: usize, acc: &Accumulator, combine: impl Fn(TokenStream, TokenStream) -> TokenStream) -> TokenStream {
        let d = &self.d;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The flat index of slot `j`, lane `l`, warp `w` by a layout's bits.
    fn flat(b: &BitLayout, j: usize, l: usize, w: usize) -> usize {
        let pick = |bits: &[u32], x: usize| bits.iter().enumerate().map(|(i, f)| ((x >> i) & 1) << f).sum::<usize>();
        pick(&b.slot, j) | pick(&b.lane, l) | pick(&b.warp, w)
    }

    #[test]
    fn cyclic_bits_match_the_cyclic_formula() {
        for (numel, threads, v) in [(1024, 128, 4), (256, 128, 2), (128, 128, 1), (32, 128, 1), (8192, 256, 4)] {
            let slots = if numel >= threads { numel / threads } else { 1 };
            let b = BitLayout::cyclic(numel, threads, v, slots).unwrap();
            for t in 0..threads {
                for j in 0..slots {
                    assert_eq!(flat(&b, j, t % 32, t / 32), ((j / v) * threads + t) * v + j % v, "{numel} {threads} {v} t{t} j{j}");
                }
            }
        }
        assert_eq!(BitLayout::cyclic(1000, 128, 4, 8), None);
    }

    /// Row and column of slot `j` of lane `l` in warp `w`, from the layout's definition.
    fn mma_rc(layout: Layout, j: usize, l: usize, w: usize) -> (usize, usize) {
        let Layout::Mma { wn, tm, tn, wg, .. } = layout else { unreachable!() };
        let (t_m, t_n, r) = (j / (tn * 4), (j % (tn * 4)) / 4, j % 4);
        let col = t_n * 8 + r % 2 + (l % 4) * 2;
        if wg {
            let g = w / 4;
            ((g / wn) * tm * 64 + t_m * 64 + (r / 2) * 8 + (w % 4) * 16 + l / 4, (g % wn) * tn * 8 + col)
        } else {
            ((w / wn) * tm * 16 + t_m * 16 + (r / 2) * 8 + l / 4, (w % wn) * tn * 8 + col)
        }
    }

    #[test]
    fn mma_bits_match_the_accumulator_layout() {
        let layouts = [
            Layout::Mma { wm: 2, wn: 2, tm: 2, tn: 4, n: 64, wg: false },
            Layout::Mma { wm: 4, wn: 1, tm: 1, tn: 8, n: 64, wg: false },
            Layout::Mma { wm: 1, wn: 1, tm: 2, tn: 16, n: 128, wg: true },
            Layout::Mma { wm: 1, wn: 2, tm: 1, tn: 8, n: 128, wg: true },
        ];
        for layout in layouts {
            let Layout::Mma { wm, wn, tm, tn, n, wg } = layout else { unreachable!() };
            let b = BitLayout::mma(layout).unwrap();
            let warps = wm * wn * if wg { 4 } else { 1 };
            let mut seen = vec![false; 1 << b.bits];
            for w in 0..warps {
                for l in 0..32 {
                    for j in 0..tm * tn * 4 {
                        let (r, c) = mma_rc(layout, j, l, w);
                        let f = flat(&b, j, l, w);
                        assert_eq!(f, r * n + c, "{layout:?} j{j} l{l} w{w}");
                        seen[f] = true;
                    }
                }
            }
            assert!(seen.iter().all(|s| *s), "{layout:?} covers its block");
        }
        assert_eq!(BitLayout::mma(Layout::Mma { wm: 1, wn: 1, tm: 1, tn: 24, n: 192, wg: true }), None);
    }

    #[test]
    fn reductions_split_into_slots_lanes_and_warps() {
        // A [4, 1024] block over 128 threads in chunks of 4, reduced along its rows: the four
        // rows are four partials of each thread, every lane and both warp bits combine.
        let b = BitLayout::cyclic(4096, 128, 4, 32).unwrap();
        let p = b.reduce(&[4, 1024], 1).unwrap();
        assert_eq!(p.partials(), 4);
        assert_eq!(p.lane_masks, vec![1, 2, 4, 8, 16]);
        assert_eq!(p.warps(), 4);
        assert_eq!((0..32).map(|j| p.local[j]).collect::<Vec<_>>(), (0..32).map(|j| j / 8).collect::<Vec<_>>());
        // Along the columns: a chunk's four slots and chunks 512 elements apart hold eight
        // columns, lanes and warps other columns, chunks 1024 apart other rows: only slots
        // combine.
        let p = b.reduce(&[4, 1024], 0).unwrap();
        assert_eq!((p.partials(), p.lane_masks.len(), p.warps()), (8, 0, 1));
        // An mma accumulator's rows: the two column slots, 2 lanes and the column warps.
        let b = BitLayout::mma(Layout::Mma { wm: 2, wn: 2, tm: 2, tn: 4, n: 64, wg: false }).unwrap();
        let p = b.reduce(&[64, 64], 1).unwrap();
        assert_eq!((p.partials(), p.lane_masks.clone(), p.warps()), (4, vec![1, 2], 2));
        // Slots holding the same row fold together: r bit 0 and the column tiles differ.
        for j in 0..32 {
            assert_eq!(p.local[j], ((j >> 1) & 1) | ((j >> 4) << 1), "slot {j}");
        }
    }
}
