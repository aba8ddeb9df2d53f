//! Tensor-map copies of the operands a loop copies ahead (sm_90a, `Schedule::AsWritten` with
//! `tma`): flash attention's key and value tiles. Instead of every thread copying its 16-byte
//! chunks with `cp.async` (each chunk's address, mask, bounds and alignment tested in the loop),
//! thread 0 issues one `cp.async.bulk.tensor.2d` per box into the same swizzled tile, completing
//! on the buffer's `mbarrier`, and every thread waits for the barrier's phase before the `dot`
//! that reads the tile.
//!
//! Before the loop the block checks, once, that the maps hold the tiles in every iteration: each
//! map is valid, the first box's elements are exactly the operand's (`tma.rs`, the checks of the
//! pipelined loop's tensor-map version, here with the loop variable at its first value), and
//! the offsets move as a whole with the loop variable (`DevicePlan::shifts_uniformly`, at
//! compile time) and linearly between the first, second and last iterations (at run time), so
//! that the box of iteration `i` is the first one moved `i` times by one step. Masked elements
//! get their `other` value in shared memory after the copy lands (rows past the end of a key
//! sequence), in the iterations where the masks' first and last values say some element may be
//! masked. The loop exists twice (`stmt.rs`): this version, and the `cp.async` one, which runs
//! when any check fails (the choice is a flag uniform over the block).

use super::*;
use crate::expand_device::operands::in_loop_range;
use tma::TmaCtx;

/// The tensor-map code of a loop's copies ahead (see [`DevGen::ahead_tma`]).
pub(in crate::expand_device) struct AheadTma {
    /// Before the loop: the checks, the barriers' set-up and the vote that sets the loop's flag.
    pub(in crate::expand_device) pre: TokenStream,
    /// The flag: `true` when the loop copies with the tensor maps (the same in every thread).
    pub(in crate::expand_device) flag: Ident,
    /// Thread 0's copies of the first `depth` iterations, before the loop.
    pub(in crate::expand_device) first: TokenStream,
    /// At the top of iteration `__ic`: its buffer and barrier phase, then thread 0's copies
    /// `depth` iterations ahead.
    pub(in crate::expand_device) next: TokenStream,
    /// Per operand, the wait for its tile and the fix-up of its masked elements.
    pub(in crate::expand_device) waits: Vec<TokenStream>,
    /// The end of an iteration (its counter), and after the loop.
    pub(in crate::expand_device) advance: TokenStream,
    pub(in crate::expand_device) after: TokenStream,
}

/// One operand copied ahead: the operand, its staging, its first buffer and the distance to
/// the next.
pub(in crate::expand_device) struct AheadOperand {
    pub(in crate::expand_device) x: ExprId,
    pub(in crate::expand_device) layout: Layout,
    pub(in crate::expand_device) staging: Staging,
    pub(in crate::expand_device) first: usize,
    pub(in crate::expand_device) delta: usize,
}

impl DevGen<'_> {
    /// The tensor-map copies of the operands `ops` that the loop over `var` (of device type
    /// `t`) copies `depth` iterations ahead with the plan's `maps`, the buffers' `mbarrier`s at
    /// `bars`, followed by each operand's first box and step (four `i32`, which only thread 0
    /// reads: they take no registers in the loop), the buffer the current iteration reads in
    /// `buf`. `None` when an operand's code cannot be built (the loop then keeps its `cp.async`
    /// copies only).
    pub(in crate::expand_device) fn ahead_tma(&mut self, var: LocalId, t: &TokenStream, ops: &[&AheadOperand], maps: &plan::AheadMaps, (depth, bars, buf): (usize, usize, &Ident)) -> Option<AheadTma> {
        let (k, d) = (self.k, &self.p.d);
        let var_id = crate::expand_cpu::local_ident(k, var);
        let pipe_ops = ops.iter().map(|o| self.ahead_pipe_op(o.x)).collect::<Option<Vec<PipeOp>>>()?;
        let (mut pre, mut oks, mut lin, mut checks, mut copies, mut waits) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut rows_before = 0;
        let (ic, ph, flag) = (format_ident!("__ic{}", var), format_ident!("__aph{}", var), format_ident!("__ta{}", var));
        let coords_at = |oi: usize| bars + 8 * (depth + 1) + 16 * oi;
        let (mut keep, mut load) = (Vec::new(), Vec::new());
        for (oi, (o, op)) in ops.iter().zip(&pipe_ops).enumerate() {
            let sum = self.ptr_sum(op.base)?;
            let b = self.scalar_base(sum.base, op.base)?;
            let rot = (self.threads - rows_before % self.threads) % self.threads;
            rows_before += op.numel / op.inner;
            let ctx = self.ahead_ctx(oi, op, o, (sum, b), rot, (&var_id, t));
            let desc = (o.staging, maps.maps[oi].clone());
            let (oper, used) = self.tma_operand(&ctx, &[desc], maps.first_map + oi, var);
            let oper = oper?;
            let side = oper.sides.first()?;
            debug_assert_eq!(used.len(), 1);
            let names = ["__tmo", "__tin", "__tc", "__tr", "__tdc", "__tdr", "__tW", "__tO"].map(|n| format_ident!("{}{}", n, oi));
            let (coords, post, tok) = (&side.coords, &side.post, format_ident!("__tok{}", oi));
            let (tmo, to, off_expr) = (&names[0], &names[7], &ctx.off_expr);
            pre.push(quote! {
                let (#(#names),*): (bool, bool, i64, i64, i64, i64, i64, i64) = { let #var_id: #t = __start; #coords };
            });
            // The offsets are linear in the iteration between its ends (no wrap-around).
            lin.push(quote! {
                let #tok: bool = #tmo && {
                    let __tO: i64 = #to;
                    let __first: i64 = { let __it: i64 = 0; #off_expr };
                    let __second: i64 = { let __it: i64 = 1; #off_expr };
                    let __last: i64 = { let __it: i64 = __n - 1; #off_expr };
                    __n < 3 || (__second - __first).checked_mul(__n - 1) == Some(__last - __first)
                };
                let #tok: bool = #tok && { let #var_id: #t = __start; #post };
            });
            oks.push(quote!(#tok));
            let (tc, tr, tdc, tdr) = (&names[2], &names[3], &names[4], &names[5]);
            let at = coords_at(oi);
            keep.push(quote! {
                let __cw = __smem.add(#at) as *mut i32;
                #d::store(__cw, #tc as i32);
                #d::store(__cw.add(1), #tr as i32);
                #d::store(__cw.add(2), #tdc as i32);
                #d::store(__cw.add(3), #tdr as i32);
            });
            load.push(quote! {
                let __cw = __smem.add(#at) as *mut i32;
                let (#tc, #tr, #tdc, #tdr): (i32, i32, i32, i32) = (#d::load(__cw), #d::load(__cw.add(1)), #d::load(__cw.add(2)), #d::load(__cw.add(3)));
            });
            checks.push(oper.check.clone());
            copies.push(side.copies.clone());
            let fix = self.ahead_fixup(op, o, buf);
            waits.push(quote! {
                #d::mbarrier_wait(#d::smem_addr() + (#bars + (#buf as usize) * 8) as u32, #ph);
                #fix
            });
        }
        let tx = ops.iter().zip(&pipe_ops).map(|(_, op)| op.numel * 2).sum::<usize>() as u32;
        let inits = (0..=depth).map(|b| {
            let at = bars + 8 * b;
            quote!(#d::mbarrier_init(#d::smem_addr() + #at as u32, 1);)
        });
        let invals = (0..=depth).map(|b| {
            let at = bars + 8 * b;
            quote!(#d::mbarrier_inval(#d::smem_addr() + #at as u32);)
        });
        let maps_ok = pre.iter().enumerate().map(|(oi, _)| format_ident!("__tmo{}", oi));
        // The checks; thread 0 keeps each operand's first box and step in shared memory.
        let checks_code = quote! {
            #(#pre)*
            let __tgo: bool = __n > 0 #(&& #maps_ok)*;
            let mut __mz: bool = true;
            let (#(#oks),*) = if __tgo {
                #(#lin)*
                (#(#oks),*)
            } else {
                Default::default()
            };
            // Whether this thread's elements are unmasked in every iteration, and in every
            // iteration but the last; whether those of the last iteration are unmasked or
            // outside the view, filled with `other` by the copy engine (`tma_inside_unmasked`:
            // then no fix-up at all).
            let mut __mall: bool = __n > 0;
            let mut __mmid: bool = true;
            if __tgo {
                #(#checks)*
            }
            let __mall: bool = __mall || (__mmid && __mz);
            if __tid == 0 && __tgo {
                #({ #keep })*
            }
            (__tgo, __tgo #(&& #oks)*, __mall, __mall || __mmid)
        };
        let pre = quote! {
            let __n: i64 = #d::trip_count(__start as i64, __end as i64, __step as i64);
            // Earlier statements are done with this shared memory before the barriers and the
            // boxes' coordinates take it.
            #d::bar_sync();
            let (__tgo, __tok, __mall, __mmid): (bool, bool, bool, bool) = { #checks_code };
            if __tid == 0 && __tgo {
                #(#inits)*
                #d::fence_mbarrier_init();
            }
            let #flag: bool = #d::bar_and(__tok);
            let __nofix: bool = #d::bar_and(__mall);
            let __fixlast: bool = #d::bar_and(__mmid);
            let mut #ic: i32 = 0;
        };
        let issue = |it: TokenStream, b: TokenStream| {
            let copies = copies.iter().zip(&load).map(|(c, l)| quote!({ #l #c }));
            quote! {{
                let __it: i32 = #it;
                let __buf: usize = #b;
                let __bar: u32 = #d::smem_addr() + (#bars + __buf * 8) as u32;
                #d::mbarrier_arrive_expect_tx(__bar, #tx);
                #(#copies)*
            }}
        };
        let (depth_i, depth_u) = (depth as i32, depth as u32);
        let first_issue = issue(quote!(__pi), quote!(__pi as usize));
        let first = quote! {
            if __tid == 0 {
                let mut __pi: i32 = 0;
                while __pi < #depth_i && (__pi as i64) < __n {
                    #first_issue
                    __pi += 1;
                }
            }
        };
        // Iteration `__ic + depth` exists when the loop variable gets there.
        let next_issue = issue(quote!(#ic + #depth_i), quote!((if #buf == 0 { #depth_u } else { #buf - 1 }) as usize));
        // The buffer and barrier phase of iteration `__ic`, worked out at its top (fewer values
        // carried round the loop), and whether its copies need the fix-up (`__fixnow`, the same
        // in every thread; without it, the `dot`s that read only tiles that last through the
        // iteration need no block barrier before them, `dot.rs`).
        let bufs = depth_u + 1;
        let next_in = in_loop_range(&quote!(__nx));
        let next = quote! {
            let #buf: u32 = (#ic as u32) % #bufs;
            let #ph: u32 = ((#ic as u32) / #bufs) & 1;
            let __lastit: bool = match __i.checked_add(__step) {
                Some(__nx) => !#next_in,
                None => true,
            };
            let __fixnow: bool = !__nofix && (!__fixlast || __lastit);
            if __tid == 0 {
                if let Some(__nx) = (#depth_i as #t).checked_mul(__step).and_then(|__s| __i.checked_add(__s)) {
                    if #next_in {
                        #next_issue
                    }
                }
            }
        };
        let advance = quote!(#ic += 1;);
        // Every copy issued was waited for (one per iteration); the barriers' words go back to
        // plain shared memory.
        let after = quote! {
            if #flag {
                #d::bar_sync();
                if __tid == 0 {
                    #(#invals)*
                }
                #d::bar_sync();
            }
        };
        Some(AheadTma { pre, flag, first, next, waits, advance, after })
    }

    /// The fix-up of operand `op`'s masked elements in the buffer `buf` names, after its copy
    /// landed: each gets `other` in shared memory (each thread its elements `tid, tid + threads,
    /// ...`, a rolled loop that keeps few registers: it runs where the loop's accumulators are
    /// live), in the iterations where some element may be masked (`__nofix`, `__fixlast`).
    fn ahead_fixup(&mut self, op: &PipeOp, o: &AheadOperand, buf: &Ident) -> Option<TokenStream> {
        let d = &self.p.d;
        let mk = op.mask?;
        let e = self.elem(&self.k.exprs[op.x].ty);
        let at = At::Flat(quote!(__e));
        let m = self.operand(op.load, mk, &at);
        let other = op.other.map(|v| self.operand(op.load, v, &at)).unwrap_or(quote!(<#e as ::core::default::Default>::default()));
        let (rows, inner, numel, threads) = (op.numel / op.inner, op.inner, op.numel, self.threads);
        let idx = match o.staging {
            Staging::Rows => Tile::of(o.layout, rows, inner).index(quote!(__e)),
            Staging::Cols => Tile::of(o.layout, inner, rows).index(quote!(((__e % #inner) * #rows + __e / #inner))),
        };
        let (tile_off, delta) = (o.first, o.delta);
        Some(quote! {
            if __fixnow {
                let __fb = __smem.add(#tile_off + (#buf as usize) * #delta) as *mut #e;
                let __ne: usize = #d::opaque_usize(#numel);
                let mut __e: usize = __tid;
                while __e < __ne {
                    if !(#m) {
                        #d::store(__fb.add(#idx), #other);
                    }
                    __e += #threads;
                }
            }
        })
    }

    /// Operand `x` copied ahead as the pipelined loop's operands are described: its `load`'s
    /// pointer block is the base (no pointer steps: the loop variable moves it).
    fn ahead_pipe_op(&self, x: ExprId) -> Option<PipeOp> {
        let load = self.staged_load(x)?;
        let ExprKind::Load { ptr, mask, other } = self.k.exprs[load].kind else { return None };
        let (rows, inner) = (self.shapes[x][0], self.shapes[x][1]);
        Some(PipeOp { x, load, base: ptr, affine: None, step: None, mask, other, numel: rows * inner, inner, transposable: false, live: None })
    }

    /// What the tensor-map code of operand `oi` (`op`, staged as `o` says, at `param +
    /// offsets`, `sum`, with buffer `b`) needs: the offset of iteration `__it` is that of
    /// element 0 with the loop variable at the iteration's value, less the first one's (`__tO`).
    fn ahead_ctx<'o>(&mut self, oi: usize, op: &'o PipeOp, o: &AheadOperand, (sum, b): (PtrSum, ScalarBase), rot: usize, (var_id, t): (&Ident, &TokenStream)) -> TmaCtx<'o> {
        let k = self.k;
        let e = self.elem(&k.exprs[op.x].ty);
        let first0 = self.offsets_at(op.base, &sum, &At::Flat(quote!(0usize)));
        let off_expr = quote!(({ let #var_id: #t = ((__start as i64) + __it * (__step as i64)) as #t; #first0 } - __tO));
        let at_i = At::Flat(quote!((__f0 + __i)));
        let m_i = op.mask.map(|mk| self.operand(op.load, mk, &at_i)).unwrap_or(quote!(true));
        let o_i = op.other.map(|v| self.operand(op.load, v, &at_i)).unwrap_or(quote!(<#e as ::core::default::Default>::default()));
        let all = match op.mask {
            Some(mk) => self.load_chunk_all(op.load, mk, &quote!(__f0), 8).unwrap_or_else(|| {
                let ms = (0..8usize).map(|i| self.operand(op.load, mk, &At::Flat(quote!((__f0 + #i)))));
                quote!((true #(&& #ms)*))
            }),
            None => quote!(true),
        };
        let (rows, inner) = (op.numel / op.inner, op.inner);
        let chunks = op.numel / 8;
        TmaCtx {
            oi,
            op,
            sum,
            e,
            off_expr,
            len: b.len,
            base_off: b.offset,
            tile_off: o.first,
            stage_bytes: o.delta,
            per_thread: chunks.div_ceil(self.threads),
            chunks,
            rot,
            layout: o.layout,
            var: (var_id.clone(), t.clone()),
            m_i,
            o_i,
            all,
            s0: Tile::of(o.layout, rows, inner).index(quote!(__f0)),
        }
    }
}
