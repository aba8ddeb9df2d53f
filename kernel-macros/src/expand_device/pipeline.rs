//! Software pipelining of K loops: while the tensor cores work on iteration `i`, the
//! `cp.async` copies of iterations `i + 1 .. i + S - 1` are in flight into the other shared
//! memory buffers (`S = num_stages`).

use super::*;

mod ahead;
mod operand;
mod tma;
pub(super) use ahead::{AheadOperand, AheadTma};
use plan::smem::{PipeTiles, PtrSum};
use tma::{TmaCtx, TmaOperand};

/// The buffer behind a scalar base pointer `p` of an operand (`p + offsets`): `p` is a pointer
/// parameter itself or that parameter advanced by scalar offsets (a batch's matrix,
/// `a_ptr + pid_b * stride_ab`); `offset` is the code of `p`'s distance from the parameter, in
/// elements, and `len` the parameter's length.
struct ScalarBase {
    len: Ident,
    offset: TokenStream,
}

/// The shared memory of a pipelined loop (see `DevGen::pipe_smem`): `stages` buffers laid out
/// as `tiles` says at `base_off`, and, for widened operands, the two f16 tile pairs the tensor
/// cores read at `f16_off`.
struct PipeSmem {
    /// What makes the copies visible to `wgmma`'s reads (nothing for `mma.sync`).
    fence: TokenStream,
    tiles: PipeTiles,
    f16_off: usize,
    stages: usize,
    base_off: usize,
}

/// The code of a pipelined loop that its versions share (see `DevGen::gen_pipelined`).
#[derive(Clone)]
struct LoopCode {
    stages: usize,
    wg: bool,
    /// What makes the copies visible to `wgmma` (see `PipeSmem`).
    fence: TokenStream,
    /// One iteration's product, and (`wgmma`) the wait for it.
    compute: TokenStream,
    finish: TokenStream,
    /// Widened operands: each thread's widening of its chunks, per operand.
    widen: Option<Vec<TokenStream>>,
    var_id: Ident,
    var_t: TokenStream,
    /// Per operand, the copies of iteration `__it` into buffer `__buf`: checked, and proven in
    /// bounds; and the flags of the operands' bounds proofs.
    issue_ops: Vec<TokenStream>,
    fast_ops: Vec<TokenStream>,
    proofs: Vec<TokenStream>,
}

/// What the parts of one pipelined loop's code share.
struct PipeCx<'p> {
    plan: &'p PipePlan,
    var: LocalId,
    var_id: Ident,
    var_t: TokenStream,
    wg: bool,
    smem: PipeSmem,
}

/// The code of chunk `jc`'s base pointer in the K loop.
type ChunkPtr<'a> = Box<dyn Fn(usize) -> TokenStream + 'a>;

/// The code of a pipelined loop's operands (see `DevGen::pipe_operands`).
#[derive(Default)]
struct PipeOperands {
    /// Before the loop: each operand's chunk set-up and, where it has one, its bounds proof.
    pre: Vec<TokenStream>,
    /// Per operand, the copies of iteration `__it` into buffer `__buf`: checked, and proven in
    /// bounds; and the same for the staging as written (every operand along its rows).
    issue_ops: Vec<TokenStream>,
    fast_ops: Vec<TokenStream>,
    issue_rows: Vec<TokenStream>,
    fast_rows: Vec<TokenStream>,
    /// Widened operands: each thread's widening of its chunks, per operand.
    widen_ops: Vec<TokenStream>,
    /// The flags of the operands' bounds proofs, and whether every operand has one.
    proofs: Vec<TokenStream>,
    all_proven: bool,
    /// The operands copied by the tensor memory accelerator in a third version of the loop
    /// (`tma.rs`): each operand's stagings, and their maps in the entry's order.
    tma_opers: Vec<TmaOperand>,
    tma_descs: Vec<TmaDesc>,
}

/// The tensor cores' product of one iteration of a pipelined loop (see `DevGen::pipe_product`).
struct PipeProduct {
    /// Before the loop: `wgmma`'s operand descriptors, built once for buffer 0.
    desc_setup: TokenStream,
    /// One iteration's product, and (`wgmma`) the wait for it.
    compute: TokenStream,
    finish: TokenStream,
    /// The shared addresses of the A and B tiles the tensor cores read: `wgmma`'s (buffer 0,
    /// see `desc_setup`) and `mma.sync`'s (buffer `__cb`).
    wg_tiles: (TokenStream, TokenStream),
    sync_tiles: (TokenStream, TokenStream),
}

/// The tensor-map copy of one operand (sm_90a) in one staging: per iteration, the code of its
/// copies (thread 0) and of the fix-up of masked elements (every thread).
struct TmaOp {
    copies: TokenStream,
    fixup: TokenStream,
}

impl DevGen<'_> {
    /// The buffer behind the scalar pointer `p` that the pointer block `ptr_block` is computed
    /// from (see [`ScalarBase`]), when both come from the same pointer parameter.
    fn scalar_base(&mut self, p: ExprId, ptr_block: ExprId) -> Option<ScalarBase> {
        let k = self.k;
        let param = self.scalar_param(p, ptr_block)?;
        let ParamKind::Ptr(dt) = k.params[param].kind else { return None };
        let len = super::bounds::len_ident(&k.params[param].name);
        if self.is_root_param(p) {
            return Some(ScalarBase { len, offset: quote!(0i64) });
        }
        // `p` is the parameter plus whole elements: the distance in bytes divides exactly.
        let (pv, root, e) = (self.ev(p, &At::Own), param_ident(&k.params[param].name), dev_dtype(dt));
        let offset = quote!((((#pv as usize).wrapping_sub(#root as usize)) as i64) / (::core::mem::size_of::<#e>() as i64));
        Some(ScalarBase { len, offset })
    }

    /// The offsets of the pointer block `ptr` from its scalar pointer (`sum`, see
    /// [`PtrSum`]) at position `at` of `ptr`, as an `i64`: each offsets block
    /// evaluated in its own type, as the kernel computes it, widened, and the blocks summed
    /// (wrapping, as addresses do), which is exactly where the kernel's pointer arithmetic puts
    /// the element. For one block, its value widened.
    fn offsets_at(&mut self, ptr: ExprId, sum: &PtrSum, at: &At) -> TokenStream {
        let d = &self.p.d;
        let parts = sum.offs.iter().map(|&o| {
            let (t, v) = (self.elem(&self.k.exprs[o].ty), self.operand(ptr, o, at));
            quote!(#d::cast::<#t, i64>(#v))
        });
        parts.reduce(|acc, p| quote!((#acc).wrapping_add(#p))).expect("a pointer sum has an offsets block")
    }

    /// The pipelined code of a `for` loop, or `None` when the plan runs the loop as written.
    /// `rest`: the code after the loop, for the cold fallback to run itself (the body's last
    /// top-level loop, see `DevicePlan::tail_loop`).
    pub(super) fn try_pipelined(&mut self, var: LocalId, (start, end, step): (ExprId, ExprId, ExprId), rest: Option<&TokenStream>) -> Option<TokenStream> {
        match self.p.schedule(var) {
            Schedule::Pipelined(plan) => Some(self.gen_pipelined(var, (start, end, step), plan, rest)),
            Schedule::AsWritten { .. } => None,
        }
    }

    /// The software-pipelined K loop: `S = num_stages` shared-memory buffers (fewer when they
    /// would not fit); the copies of iteration `i + S - 1` are in flight (`cp.async` groups)
    /// while the tensor cores work on iteration `i`. Each chunk's base address and contiguity
    /// are computed once before the loop; per iteration only the pointer offset, the masks and
    /// the 16-byte alignment are checked. Widened (8-bit float) operands are copied raw, 8 bytes
    /// a chunk, and each thread widens its own chunks of the iteration's buffer into an f16 tile
    /// before the iteration's barrier (two f16 tiles, by the iteration's parity); no tensor
    /// maps for them.
    fn gen_pipelined(&mut self, var: LocalId, (start, end, step): (ExprId, ExprId, ExprId), plan: &PipePlan, rest: Option<&TokenStream>) -> TokenStream {
        let k = self.k;
        let d = &self.p.d;
        let Layout::Mma { wg, .. } = plan.layout else { unreachable!("a pipelined loop has an mma layout") };
        let smem = self.pipe_smem(plan);
        let (stages, widen, fence) = (smem.stages, smem.tiles.widen, smem.fence.clone());
        let scope = self.enter_iteration(0, Layout::Cyclic);
        let var_id = crate::expand_cpu::local_ident(k, var);
        let var_t = self.elem(&k.locals[var].ty);
        let cx = PipeCx { plan, var, var_id: var_id.clone(), var_t: var_t.clone(), wg, smem };
        let ops = self.pipe_operands(&cx);
        // The plan pipelines no operand that reads values held in registers.
        assert!(self.leave_iteration(scope).is_empty(), "internal error: a pipelined loop's operand reads values through shared memory");
        let step_final = self.steps_after(plan);
        let acc = crate::expand_cpu::local_ident(k, plan.acc);
        let product = self.pipe_product(&cx, &acc);
        let (s, e, st) = (self.ev(start, &At::Own), self.ev(end, &At::Own), self.ev(step, &At::Own));
        let PipeOperands { mut pre, issue_ops, fast_ops, issue_rows, fast_rows, widen_ops, proofs, all_proven, tma_opers, tma_descs } = ops;
        let lc = LoopCode { stages, wg, fence, compute: product.compute, finish: product.finish, widen: widen.then_some(widen_ops), var_id, var_t, issue_ops, fast_ops, proofs };
        // With transposable operands, a second loop for the staging as written: the code it has
        // without the choice, run when no operand is transposed.
        let cols: Vec<Ident> = plan.ops.iter().enumerate().filter(|(_, o)| o.transposable).map(|(oi, _)| format_ident!("__cols{}", oi)).collect();
        let as_written = (!cols.is_empty()).then(|| {
            let compute = self.mma_compute(plan.a, plan.layout, plan.kk, &acc, product.sync_tiles.clone(), [Staging::Rows; 2]);
            LoopCode { compute, issue_ops: issue_rows, fast_ops: fast_rows, ..lc.clone() }
        });
        // Loop versioning: when every thread proved before the loop that all its chunks stay in
        // their buffers in every iteration (a block-wide AND through shared memory, so that the
        // choice is uniform and the barriers inside stay aligned), the loop runs without bounds
        // checks; otherwise every access is checked.
        let proven = all_proven && !lc.proofs.is_empty();
        let use_tma = proven && tma_opers.len() == plan.ops.len();
        let pre_out = if use_tma { Vec::new() } else { std::mem::take(&mut pre) };
        // A part of a split loop runs its own run of iterations (`split.rs`).
        let (split_range, split_after) = self.p.split_of(var).map(|sl| self.split_range_code(sl, &lc.var_t)).unzip();
        let (body, inval) = if use_tma {
            let after = (step_final.as_slice(), split_after.as_ref(), rest);
            let (sa_wg, sb_wg) = &product.wg_tiles;
            self.tma_body(&cx, &lc, (tma_opers, tma_descs, pre), (&acc, sa_wg, sb_wg), after)
        } else {
            (self.cp_async_body(&lc, as_written.as_ref(), &cols, proven), quote!())
        };
        let (bounds, step_defs, desc_setup) = (trip_count(&lc.var_t, (&s, &e, &st)), self.step_defs(plan), &product.desc_setup);
        // Inside another loop (a persistent kernel's loop over tiles), the thread index passes
        // through an opaque move first: what the loop's set-up computes from it (chunk offsets,
        // fragment addresses) is computed per tile instead of hoisted out of the outer loop into
        // registers that the accumulators need.
        let fresh_tid = (self.loop_depth > 0).then(|| {
            quote! {
                let __tid: usize = #d::opaque_usize(__tid);
                let __lane: usize = __tid % 32;
                let __warp: usize = __tid / 32;
            }
        });
        quote! {{
            #fresh_tid
            #bounds
            #split_range
            #(#step_defs)*
            #(#pre_out)*
            #desc_setup
            #body
            #d::cp_async_wait_all();
            #d::bar_sync();
            #inval
            #(#step_final)*
            #split_after
        }}
    }

    /// The code of the operands of the pipelined loop `cx`, operand by operand (see
    /// [`PipeOperands`]).
    fn pipe_operands(&mut self, cx: &PipeCx<'_>) -> PipeOperands {
        let plan = cx.plan;
        let mut ops = PipeOperands { all_proven: true, ..PipeOperands::default() };
        let mut rows_before = 0usize;
        for (oi, op) in plan.ops.iter().enumerate() {
            let tma = plan.mem.maps.get(oi).cloned().unwrap_or_default();
            let c = self.pipe_operand(cx, oi, op, tma, plan.mem.first_map + ops.tma_descs.len(), &mut rows_before);
            ops.pre.extend(c.pre);
            ops.widen_ops.extend(c.widen);
            match c.proof {
                Some(inb) => ops.proofs.push(quote!(#inb)),
                None => ops.all_proven = false,
            }
            ops.tma_opers.extend(c.tma);
            ops.tma_descs.extend(c.maps);
            let (ir, fr) = c.as_written.unwrap_or_else(|| (c.issue.clone(), c.fast.clone()));
            ops.issue_rows.push(ir);
            ops.fast_rows.push(fr);
            ops.issue_ops.push(c.issue);
            ops.fast_ops.push(c.fast);
        }
        ops
    }

    /// The product of an iteration of the pipelined loop `cx` into the accumulator `acc`, from
    /// the tiles the tensor cores read: the stages', or (widened operands) the two f16 tiles.
    /// `wgmma` runs asynchronously: it is issued before the next stage's copies and waited for
    /// after them, so the tensor cores work while the threads issue the copies. Its operand
    /// descriptors are built once, for buffer 0 (`desc_setup`, before the loop).
    fn pipe_product(&self, cx: &PipeCx<'_>, acc: &Ident) -> PipeProduct {
        let d = &self.p.d;
        let plan = cx.plan;
        let PipeSmem { tiles: PipeTiles { widen, f16_a, f16_pair, tile_a, stage_bytes }, f16_off, base_off, .. } = cx.smem;
        let (c_base, c_stride, c_a) = if widen { (f16_off, f16_pair, f16_a) } else { (base_off, stage_bytes, tile_a) };
        let wg_tiles = (quote!(#d::smem_addr() + #c_base as u32), quote!(#d::smem_addr() + (#c_base + #c_a) as u32));
        // `mma.sync`: the tiles of buffer `__cb`.
        let sync_tiles = (
            quote!(#d::smem_addr() + (#c_base + __cb * #c_stride) as u32),
            quote!(#d::smem_addr() + (#c_base + __cb * #c_stride + #c_a) as u32),
        );
        let (desc_setup, compute, finish) = if cx.wg {
            self.wgmma_compute(plan.a, plan.layout, plan.kk, acc, wg_tiles.clone(), Some(c_stride), [Staging::Rows; 2])
        } else {
            (quote!(), self.mma_versions(plan, acc, sync_tiles.clone()), quote!())
        };
        PipeProduct { desc_setup, compute, finish, wg_tiles, sync_tiles }
    }

    /// The `cp.async` versions of the loop: where every operand has a bounds proof (`proven`),
    /// the proven and the checked versions, chosen by the bounds vote (`cp_async_versions`),
    /// else the checked loop alone; with transposable operands (flags `cols`), the same again
    /// for the staging as written (`as_written`), run when no operand is transposed.
    fn cp_async_body(&mut self, lc: &LoopCode, as_written: Option<&LoopCode>, cols: &[Ident], proven: bool) -> TokenStream {
        let d = &self.p.d;
        let flag = proven.then(|| self.alloc(16));
        let versions = |lc: &LoopCode| match flag {
            Some(flag) => {
                let cp_async = self.cp_async_versions(lc, flag);
                quote! {
                    let __w: u32 = #d::smem_addr() + #flag as u32;
                    if __tid == 0 {
                        #d::store(__smem.add(#flag) as *mut u32, 1u32);
                    }
                    #d::bar_sync();
                    #cp_async
                }
            }
            None => self.cp_async_loop(lc, &lc.issue_ops),
        };
        match as_written {
            Some(rows) => {
                let (general, rows) = (versions(lc), versions(rows));
                quote!(if false #(|| #cols)* { #general } else { #rows })
            }
            None => versions(lc),
        }
    }

    /// Before the loop: the step per iteration of each affine pointer local that the loop
    /// `plan` steps (`__st<l>`, in elements, negated where it is subtracted).
    fn step_defs(&mut self, plan: &PipePlan) -> Vec<TokenStream> {
        let (k, d) = (self.k, &self.p.d);
        plan.steps
            .iter()
            .map(|(l, st, sub)| {
                let name = format_ident!("__st{}", l);
                let v = self.ev(*st, &At::Own);
                let t = self.elem(&k.exprs[*st].ty);
                let neg = if *sub { quote!(-) } else { quote!() };
                quote!(let #name: i64 = #neg #d::cast::<#t, i64>(#v);)
            })
            .collect()
    }

    /// After the loop: each affine pointer local that the loop `plan` steps advanced by its
    /// `__n` steps.
    fn steps_after(&self, plan: &PipePlan) -> Vec<TokenStream> {
        let k = self.k;
        plan.steps
            .iter()
            .map(|(l, _, _)| {
                let name = format_ident!("__st{}", l);
                let lo = format_ident!("{}_off", crate::expand_cpu::local_ident(k, *l));
                quote!(#lo += __n * #name;)
            })
            .collect()
    }

    /// The `mma.sync` product of an iteration of `plan`'s loop, from shared addresses `sa` and
    /// `sb`: with transposable operands, one version per combination of stagings, chosen by
    /// their uniform flags (`__cols<oi>`). The versions that read a transposed staging work out
    /// their fragment addresses in the iteration from an opaque lane index, so that the loop
    /// keeps only the hoisted addresses of the stagings as written in registers.
    fn mma_versions(&self, plan: &PipePlan, acc: &Ident, (sa, sb): (TokenStream, TokenStream)) -> TokenStream {
        let d = &self.p.d;
        let version = |st: [Staging; 2]| {
            let body = self.mma_compute(plan.a, plan.layout, plan.kk, acc, (sa.clone(), sb.clone()), st);
            if st == [Staging::Rows; 2] {
                body
            } else {
                quote!({ let __lane: usize = #d::opaque_usize(__lane); #body })
            }
        };
        let choose = |oi: usize, then: TokenStream, els: TokenStream| {
            let c = format_ident!("__cols{}", oi);
            quote!(if #c { #then } else { #els })
        };
        let (ta, tb) = (plan.ops[0].transposable, plan.ops[1].transposable);
        let for_a = |b: Staging| if ta { choose(0, version([Staging::Cols, b]), version([Staging::Rows, b])) } else { version([Staging::Rows, b]) };
        if tb {
            choose(1, for_a(Staging::Cols), for_a(Staging::Rows))
        } else {
            for_a(Staging::Rows)
        }
    }

    /// The `cp.async` loop over the operands' copies `ops` (checked, or proven in bounds):
    /// with one buffer, copy, wait and compute in turn; with `S` buffers, the copies of the
    /// first `S - 1` iterations (`S - 2` when a `wgmma` group stays in flight) before the loop,
    /// then per iteration: wait for its copies, a barrier, the product, the next copies.
    fn cp_async_loop(&self, lc: &LoopCode, ops: &[TokenStream]) -> TokenStream {
        let d = &self.p.d;
        let (stages, wg, fence, compute, finish) = (lc.stages, lc.wg, &lc.fence, &lc.compute, &lc.finish);
        let (var_id, var_t) = (&lc.var_id, &lc.var_t);
        let s_i = stages as i64;
        // The copies of iteration `it` into buffer `buf`.
        let issue = |it: TokenStream, buf: TokenStream, ops: &[TokenStream]| {
            quote! {{
                let __it: i64 = #it;
                let #var_id: #var_t = ((__start as i64) + __it * (__step as i64)) as #var_t;
                let __buf: usize = #buf;
                #(#ops)*
            }}
        };
        // Widened operands: after its copies landed, each thread widens its chunks of the
        // iteration's buffer into the f16 tile of the iteration's parity (the other one may still
        // be read by the previous iteration's `wgmma`), before the barrier; the product reads
        // that tile (`__cb` then names it).
        let widen_at = |cb: TokenStream| -> (TokenStream, TokenStream) {
            match &lc.widen {
                Some(widen_ops) => (
                    quote!(let __cb: usize = #cb; { let __pr: usize = (__ci & 1) as usize; #(#widen_ops)* }),
                    quote!(let __cb: usize = (__ci & 1) as usize;),
                ),
                None => (quote!(), quote!(let __cb: usize = #cb;)),
            }
        };
        if stages == 1 {
            let (before, after) = widen_at(quote!(0));
            let iss = issue(quote!(__ci), quote!(0usize), ops);
            quote! {
                let mut __ci: i64 = 0;
                while __ci < __n {
                    #d::bar_sync();
                    #iss
                    #d::cp_async_commit();
                    #d::cp_async_wait_group::<0>();
                    #before
                    #fence
                    #d::bar_sync();
                    #after
                    #compute
                    #finish
                    __ci += 1;
                }
            }
        } else {
            let (pro, steady) = (issue(quote!(__pi), quote!(__pi as usize), ops), issue(quote!(__nx), quote!(__nbu as usize), ops));
            // `mma.sync` computes after issuing the copies; `wgmma` is issued before them. With
            // three or more buffers, one `wgmma` group stays in flight across iterations: the
            // copies run `S - 2` iterations ahead, so they never overwrite the buffer that the
            // previous iteration's `wgmma` may still read (every thread waited for the one before
            // it, `wgmma_wait::<1>`, before the barrier), and the accumulators are read only
            // after the loop's last wait.
            let overlap = wg && stages >= 3;
            let (compute_first, compute_after, after_loop) = match (wg, overlap) {
                (true, true) => (compute.clone(), quote!(#d::wgmma_wait::<1>();), finish.clone()),
                (true, false) => (compute.clone(), finish.clone(), quote!()),
                _ => (quote!(), compute.clone(), quote!()),
            };
            let (ahead, wait) = if overlap { (s_i - 2, (stages - 3) as u32) } else { (s_i - 1, (stages - 2) as u32) };
            let (ahead_u, s_u) = (ahead as u32, stages as u32);
            let (before, after) = widen_at(quote!(__cbu as usize));
            let pipelined = quote! {
                let mut __pi: i64 = 0;
                while __pi < #ahead {
                    if __pi < __n { #pro }
                    #d::cp_async_commit();
                    __pi += 1;
                }
                // Buffers of iterations `__ci` and `__ci + ahead`, counted round (no division).
                let mut __ci: i64 = 0;
                let mut __cbu: u32 = 0;
                let mut __nbu: u32 = #ahead_u;
                while __ci < __n {
                    // Iteration `__ci`'s copies are done; after the barrier every thread sees
                    // them and has finished computing on the buffer the next copies overwrite.
                    #d::cp_async_wait_group::<#wait>();
                    #before
                    #fence
                    #d::bar_sync();
                    #after
                    #compute_first
                    let __nx: i64 = __ci + #ahead;
                    if __nx < __n { #steady }
                    #d::cp_async_commit();
                    #compute_after
                    __ci += 1;
                    __cbu = if __cbu + 1 == #s_u { 0 } else { __cbu + 1 };
                    __nbu = if __nbu + 1 == #s_u { 0 } else { __nbu + 1 };
                }
                #after_loop
            };
            // With a `wgmma` group in flight across iterations, the wait after the loop is only
            // reached from the loop: on a path that skips the loop, the accumulators' initial
            // values would be copied right before that wait, and `ptxas` then serializes every
            // `wgmma` of the function (C7515).
            if overlap {
                quote!(if __n > 0 { #pipelined })
            } else {
                pipelined
            }
        }
    }

    /// The proven and the checked `cp.async` versions of the loop, chosen by the bounds vote
    /// (word 0 of `flag`, set to 1 and past a barrier; `__w` its address).
    fn cp_async_versions(&self, lc: &LoopCode, flag: usize) -> TokenStream {
        let d = &self.p.d;
        let proofs = &lc.proofs;
        let (fast, checked) = (self.cp_async_loop(lc, &lc.fast_ops), self.cp_async_loop(lc, &lc.issue_ops));
        quote! {
            let __proved: bool = {
                #d::smem_and(__w, (true #(&& #proofs)*) as u32);
                #d::bar_sync();
                #d::load(__smem.add(#flag) as *mut u32) != 0
            };
            if __proved {
                #fast
            } else {
                ::core::hint::cold_path();
                #checked
            }
        }
    }

    /// The loop with tensor-map copies (sm_90a, every operand has a map; `tma_version`), with
    /// the `cp.async` versions as its cold fallback: the loop's code, and the invalidation of
    /// its `mbarrier`s that follows it. `pre`: the `cp.async` versions' set-up; `after`: the
    /// code after the loop, which the fallback runs itself when it takes the rest of the body.
    #[allow(clippy::type_complexity)]
    fn tma_body(
        &mut self,
        cx: &PipeCx<'_>,
        lc: &LoopCode,
        (tma_opers, tma_descs, pre): (Vec<TmaOperand>, Vec<TmaDesc>, Vec<TokenStream>),
        (acc, sa_wg, sb_wg): (&Ident, &TokenStream, &TokenStream),
        (step_final, split_after, rest): (&[TokenStream], Option<&TokenStream>, Option<&TokenStream>),
    ) -> (TokenStream, TokenStream) {
        let d = &self.p.d;
        let threads = self.threads;
        let (plan, stages, kk, stage_bytes) = (cx.plan, lc.stages, cx.plan.kk, cx.smem.tiles.stage_bytes);
        let (compute, finish, var_id, var_t) = (&lc.compute, &lc.finish, &lc.var_id, &lc.var_t);
        // Reader barriers (see `tma_loop`) where they measured faster than a block barrier per
        // iteration (BENCHMARKS.md): blocks of two or more warpgroups, or K tiles of 128 and
        // more; with one warpgroup and shallower tiles the extra arrive and wait per iteration
        // cost more than the barrier they replace.
        let readers = stages >= 3 && (threads >= 256 || kk >= 128);
        // `stages` barriers that the copies complete, then, with reader barriers, `stages`
        // that the warps arrive on when they are done reading a buffer.
        let nbars = if readers { 2 * stages } else { stages };
        let (bars, flag) = (self.alloc(8 * nbars), self.alloc(16));
        let tx: usize = plan.ops.iter().map(|op| op.numel * 2).sum();
        // One loop per combination of stagings; the one with every operand as written
        // uses the descriptors built before the loop.
        let staged_compute = |st: &[Staging]| {
            if st.iter().all(|s| *s == Staging::Rows) {
                (quote!(), compute.clone(), finish.clone())
            } else {
                self.wgmma_compute(plan.a, plan.layout, kk, acc, (sa_wg.clone(), sb_wg.clone()), Some(stage_bytes), [st[0], st[1]])
            }
        };
        let tv = self.tma_version(&tma_opers, (stages, readers), bars, tx as u32, &staged_compute, (var_id, var_t));
        let (tma_pre, tma_maps, tma_fill, tma_post, tma_oks, tma_main, filled) = (tv.pre, tv.maps, tv.fill, tv.post, tv.oks, tv.main, tv.filled);
        let invals = (0..nbars).map(|b| {
            let at = bars + 8 * b;
            quote!(#d::mbarrier_inval(#d::smem_addr() + #at as u32);)
        });
        let inval = quote!(if __tid == 0 { #(#invals)* });
        let cp_async = self.cp_async_versions(lc, flag);
        let fallback = quote! {
            if __spec {
                let mut __pi: i64 = 0;
                while __pi < #filled && __pi < __n {
                    #d::mbarrier_wait(#d::smem_addr() + (#bars + (__pi as usize) * 8) as u32, 0);
                    __pi += 1;
                }
            }
            #(#pre)*
            #cp_async
        };
        // The `cp.async` versions are cold, but ptxas lays out the join of two branches after
        // both, so the epilogue would follow some 15k instructions of them whatever the
        // hints. When this loop is the body's last, the fallback does not join: it runs the
        // rest of the kernel itself, out of line (`outline`: no `wgmma` there), and returns;
        // the hot path, prologue, tensor-map loop and epilogue, is one piece of code.
        let fallback = match rest {
            Some(rest) => quote! {
                #fallback
                #d::cp_async_wait_all();
                #d::bar_sync();
                #inval
                #(#step_final)*
                #split_after
                #d::outline(move || { #rest });
                return;
            },
            None => fallback,
        };
        let checks: Vec<&TokenStream> = tma_opers.iter().map(|t| &t.check).collect();
        let warps = (threads / 32) as u32;
        let inits = (0..nbars).map(|b| {
            let at = bars + 8 * b;
            let count = if b < stages { 1 } else { warps };
            quote!(#d::mbarrier_init(#d::smem_addr() + #at as u32, #count);)
        });
        let first = plan.mem.first_map;
        assert!(self.tensor_maps.get(first..first + tma_descs.len()) == Some(&tma_descs[..]), "internal error: the pipelined loop's tensor maps are not in the slots the device plan gave them");
        let body = quote! {
            if __tid == 0 {
                #(#inits)*
                #d::fence_mbarrier_init();
            }
            // Warp 0's lanes meet: the barriers are initialized before thread 0 uses them for
            // the first copies, whichever lane the initialization ran on.
            #d::warp_sync();
            #(#tma_pre)*
            // Thread 0 issues the first stages' copies as soon as the box coordinates are
            // known, before any row is checked, so that they overlap the checks and the vote:
            // the copy engine reads only inside a map (a box partly or wholly outside it is
            // filled, and still delivers all its bytes), and a map lies inside its operand's
            // buffer, so a copy that is not used reads nothing else; if the vote fails every
            // thread waits for those copies before the `cp.async` version reuses the buffers
            // (`__spec`: the same in every thread, as the maps' validity and `__n` are).
            let __spec: bool = __n > 0 #(&& #tma_maps)*;
            if __tid == 0 && __spec {
                #tma_fill
            }
            // Whether the copy engine fills every masked element of the last boxes with its
            // `other` (cleared by the element checks, `tma_inside_unmasked`).
            let mut __mz: bool = true;
            #(#tma_post)*
            // Whether this thread's elements are unmasked in every iteration, and in every
            // iteration but the last.
            let mut __mall: bool = __n > 0;
            let mut __mmid: bool = true;
            if __n > 0 {
                #(#checks)*
            }
            let __mmid: bool = __mall || __mmid;
            // Whether every operand can be copied with its tensor map; whether no element
            // is masked in any iteration, or in none before the last one and there only
            // outside the view, filled with `other` by the copy engine (no fix-up); or in none
            // before the last one (fix-up in the last one only). Word 0 of `flag` (voted only
            // when the tensor maps are not used, after the chunk set-up): every access proven
            // in bounds.
            let __w: u32 = #d::smem_addr() + #flag as u32;
            if __tid == 0 {
                #d::store(__smem.add(#flag) as *mut u32, 1u32);
            }
            // Three votes (`bar.red.and`): only the first waits for the slowest warp.
            let __tma_go: bool = #d::bar_and(true #(&& #tma_oks)*);
            let __nofix: bool = #d::bar_and(__mall || (__mmid && __mz));
            let __fixlast: bool = #d::bar_and(__mmid);
            if __tma_go {
                #tma_main
            } else {
                ::core::hint::cold_path();
                #fallback
            }
        };
        (body, inval)
    }


    /// The shared memory of the pipelined loop `plan`, allocated at the cursor, which is where the
    /// plan put the loop's buffers (`PipeMem::floor`), with the plan's stage count.
    fn pipe_smem(&mut self, plan: &PipePlan) -> PipeSmem {
        let Layout::Mma { n, .. } = plan.layout else { unreachable!("a pipelined loop has an mma layout") };
        let mem = &plan.mem;
        assert_eq!(self.smem.cursor(), mem.floor, "internal error: the pipelined loop's shared memory is not where the device plan put it");
        // `wgmma` tiles start on whole 1024-byte swizzle patterns; its reads go through the async
        // proxy, which must see the copies (and element stores) first.
        let (align, fence) = self.operand_staging(plan.layout);
        // Widened (8-bit) operands: each stage holds their raw chunks (8 bytes each, in chunk
        // order), which every thread widens into one of two f16 tiles before the `dot` (its own
        // chunks, after its copies landed).
        let tiles = PipeTiles::new(plan.m, plan.kk, n, align, self.is_widened(plan.a));
        let f16_off = if tiles.widen { self.alloc_aligned(tiles.f16_bytes(), align) } else { 0 };
        let base_off = self.alloc_aligned(mem.stages * tiles.stage_bytes, align);
        PipeSmem { fence, tiles, f16_off, stages: mem.stages, base_off }
    }

    /// The K loop of the tensor-map version (`stages >= 2` buffers; at `bars`, one barrier per
    /// buffer that its copies complete, then, with `readers`, one per buffer that the warps
    /// arrive on when they are done reading it): thread 0 announces each stage's `tx` bytes on
    /// its buffer's barrier and issues the operands' copies; every thread waits for the
    /// barrier's phase, gives masked elements their `other` value, and the warpgroups issue
    /// `wgmma` (`compute`).
    ///
    /// With 3+ buffers one `wgmma` group stays in flight across iterations (as in the
    /// `cp.async` version). Without `readers`, every iteration has a block barrier before its
    /// `wgmma`, after which thread 0 copies the iteration `S - 2` ahead (into the buffer whose
    /// group every warp waited for in the previous iteration); with 2 buffers, each iteration
    /// ends with `finish` and copies run one ahead. With `readers`, the loop has no block
    /// barrier (only after a fix-up, so that every fix-up precedes every `wgmma`): after
    /// `wgmma_wait::<1>` in iteration `i`, each warp's lane 0 arrives on the reader barrier of
    /// iteration `i - 1`'s buffer, and thread 0 waits for all warps' arrivals there before it
    /// copies iteration `i - 1 + S` into that buffer (all `S` buffers are filled before the
    /// loop).
    /// Returns the copies of the first stages (thread 0 issues them, before the vote: see the
    /// caller), the loop, and how many stages the first copies fill.
    fn tma_loop(&self, ops: &[TmaOp], (stages, readers): (usize, bool), bars: usize, tx: u32, (compute, finish): (&TokenStream, &TokenStream), (var_id, var_t): (&Ident, &TokenStream)) -> (TokenStream, TokenStream, i64) {
        let d = &self.p.d;
        let s_i = stages as i64;
        let overlap = stages >= 3;
        let ahead = if readers { s_i } else if overlap { s_i - 2 } else { s_i - 1 };
        let issue = |it: TokenStream, buf: TokenStream| {
            let copies = ops.iter().map(|t| &t.copies);
            quote! {{
                let __it: i64 = #it;
                let __buf: usize = #buf;
                let __bar: u32 = #d::smem_addr() + (#bars + __buf * 8) as u32;
                #d::mbarrier_arrive_expect_tx(__bar, #tx);
                #(#copies)*
            }}
        };
        let (pro, steady) = (issue(quote!(__pi), quote!(__pi as usize)), issue(quote!(__nx), quote!(__nbu as usize)));
        let (ahead_u, s_u) = (ahead as u32, stages as u32);
        let fixups = ops.iter().map(|t| &t.fixup);
        // The first `ahead` stages' copies (thread 0, before the loop).
        let fill = quote! {
            let mut __pi: i64 = 0;
            while __pi < #ahead {
                if __pi < __n { #pro }
                __pi += 1;
            }
        };
        // Masked elements get their `other` value (stores through the generic proxy, fenced for
        // the async proxy that `wgmma` reads through); the condition is uniform over the block.
        let fixup = quote! {
            let __fix: bool = !__nofix && (!__fixlast || __ci + 1 == __n);
            if __fix {
                let mut __fx: bool = false;
                {
                    let __it: i64 = __ci;
                    let #var_id: #var_t = ((__start as i64) + __it * (__step as i64)) as #var_t;
                    #(#fixups)*
                }
                if __fx {
                    #d::fence_proxy_async();
                }
            }
        };
        let advance = quote! {
            __ci += 1;
            if __cbu + 1 == #s_u {
                __cbu = 0;
                __par ^= 1;
            } else {
                __cbu += 1;
            }
        };
        // Entered only when the loop runs (see the `cp.async` version). Buffers and barrier
        // parities are counted round (no division in the loop).
        let main = if readers {
            let ebars = bars + 8 * stages;
            quote! { if __n > 0 {
                let __bars: u32 = #d::smem_addr() + #bars as u32;
                let __ebars: u32 = #d::smem_addr() + #ebars as u32;
                let mut __ci: i64 = 0;
                let mut __cbu: u32 = 0;
                let mut __par: u32 = 0;
                // Buffer and phase parity of iteration `__ci - 1`.
                let mut __nbu: u32 = 0;
                let mut __ppar: u32 = 0;
                while __ci < __n {
                    let __cb: usize = __cbu as usize;
                    #d::mbarrier_wait(__bars + __cbu * 8, __par);
                    #fixup
                    if __fix {
                        #d::bar_sync();
                    }
                    #compute
                    #d::wgmma_wait::<1>();
                    if __ci > 0 {
                        // Iteration `__ci - 1`'s `wgmma` group is done: its buffer may be refilled
                        // once every warp has said so.
                        if __tid % 32 == 0 {
                            #d::mbarrier_arrive(__ebars + __nbu * 8);
                        }
                        let __nx: i64 = __ci - 1 + #s_i;
                        if __tid == 0 && __nx < __n {
                            #d::mbarrier_wait(__ebars + __nbu * 8, __ppar);
                            #steady
                        }
                    }
                    __nbu = __cbu;
                    __ppar = __par;
                    #advance
                }
                #finish
            }}
        } else {
            let (compute_after, after_loop) = if overlap { (quote!(#d::wgmma_wait::<1>();), finish.clone()) } else { (finish.clone(), quote!()) };
            quote! { if __n > 0 {
                let __bars: u32 = #d::smem_addr() + #bars as u32;
                let mut __ci: i64 = 0;
                let mut __cbu: u32 = 0;
                let mut __par: u32 = 0;
                let mut __nbu: u32 = #ahead_u;
                while __ci < __n {
                    let __cb: usize = __cbu as usize;
                    #d::mbarrier_wait(__bars + __cbu * 8, __par);
                    #fixup
                    #d::bar_sync();
                    #compute
                    let __nx: i64 = __ci + #ahead;
                    if __tid == 0 && __nx < __n { #steady }
                    #compute_after
                    #advance
                    __nbu = if __nbu + 1 == #s_u { 0 } else { __nbu + 1 };
                }
                #after_loop
            }}
        };
        (fill, main, ahead)
    }
}

/// The loop's bounds (`s`, `e` and `st`, of the loop variable's type `var_t`: `__start`,
/// `__end`, `__step`) and its trip count `__n`.
fn trip_count(var_t: &TokenStream, (s, e, st): (&TokenStream, &TokenStream, &TokenStream)) -> TokenStream {
    quote! {
        let __start: #var_t = #s;
        let __end: #var_t = #e;
        let __step: #var_t = #st;
        let (__s64, __e64, __t64) = (__start as i64, __end as i64, __step as i64);
        let __n: i64 = if __t64 > 0 && __e64 > __s64 {
            (__e64 - __s64 + __t64 - 1) / __t64
        } else if __t64 < 0 && __e64 < __s64 {
            (__s64 - __e64 - __t64 - 1) / (-__t64)
        } else {
            0
        };
    }
}
