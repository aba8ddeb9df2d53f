//! Split K loops (`kernel_std::device::split`): when a launch's last wave of programs would
//! leave SMs idle, the runtime runs each of its programs on several blocks, each taking a
//! contiguous run of the K loop's iterations; the parts add up their partial accumulators in
//! global memory and the last one to finish runs the rest of the program.
//!
//! This module decides which loop of a kernel may be split (an analysis of the IR, the same
//! for every body of an entry) and generates the code around it: the block's program and part
//! at entry, the part's iteration range, and the hand-over of the accumulator after the loop.
//! Only the instance's second entry, `<entry>__split`, has this code; the runtime launches it
//! when it splits (`kernel_runtime::split_plan`), else the plain entry.

use super::*;

/// The K loop that an entry may split: the kernel's only loop, at the top level of its body,
/// whose body defines values, accumulates `acc = dot(a, b, acc)` into an f32 block that starts
/// at zero (and is not assigned before the loop), and steps affine pointer blocks by
/// loop-invariant scalars; nothing before the loop stores or runs an atomic. After the loop, anything goes: it
/// runs once, in the last part. Each run of iterations then gives a partial sum of `acc`, the
/// sum of the parts is the loop's result, and redoing the statements before the loop in every
/// part changes nothing.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SplitLoop {
    /// The loop variable.
    pub(super) var: LocalId,
    /// The accumulator.
    pub(super) acc: LocalId,
    /// The affine locals the loop steps: (local, scalar step, subtracted).
    pub(super) steps: Vec<(LocalId, ExprId, bool)>,
    /// Those of them that statements after the loop read (only they are moved on to where the
    /// whole loop leaves them: nothing else is kept live across the loop).
    pub(super) read_after: Vec<LocalId>,
}

/// Loops anywhere in `stmts`.
pub(super) fn count_loops(stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| match s {
            Stmt::For { body, .. } => 1 + count_loops(body),
            Stmt::While { pre, body, .. } => 1 + count_loops(pre) + count_loops(body),
            Stmt::If { then, els, .. } => count_loops(then) + count_loops(els),
            _ => 0,
        })
        .sum()
}

/// Whether `s` writes memory or has another effect that the parts of a split program would
/// repeat: a store, an atomic, a `device_print` or a `device_assert` (itself or a statement
/// inside it).
fn stores(k: &Kernel, s: &Stmt) -> bool {
    match s {
        Stmt::Store { .. } | Stmt::Print { .. } | Stmt::Assert { .. } => true,
        Stmt::Let { value, .. } => matches!(k.exprs[*value].kind, ExprKind::Atomic { .. }),
        Stmt::For { body, .. } => body.iter().any(|s| stores(k, s)),
        Stmt::While { pre, body, .. } => pre.iter().chain(body).any(|s| stores(k, s)),
        Stmt::If { then, els, .. } => then.iter().chain(els).any(|s| stores(k, s)),
        _ => false,
    }
}

/// Whether `s` assigns local `l` (itself or a statement inside it).
fn assigns(s: &Stmt, l: LocalId) -> bool {
    match s {
        Stmt::Assign { local, .. } => *local == l,
        Stmt::For { body, .. } => body.iter().any(|s| assigns(s, l)),
        Stmt::While { pre, body, .. } => pre.iter().chain(body).any(|s| assigns(s, l)),
        Stmt::If { then, els, .. } => then.iter().chain(els).any(|s| assigns(s, l)),
        _ => false,
    }
}

/// Whether `s` reads local `l` (itself or a statement inside it).
fn reads(k: &Kernel, s: &Stmt, l: LocalId) -> bool {
    let roots = DevGen::stmt_roots(s).into_iter().any(|e| uses_local(k, e, l));
    roots
        || match s {
            Stmt::For { body, .. } => body.iter().any(|s| reads(k, s, l)),
            Stmt::While { pre, body, .. } => pre.iter().chain(body).any(|s| reads(k, s, l)),
            Stmt::If { then, els, .. } => then.iter().chain(els).any(|s| reads(k, s, l)),
            _ => false,
        }
}

/// Whether `e` is a block of zeros (`zeros`, `full(.., 0)`, a cast or broadcast of one).
fn is_zero(k: &Kernel, e: ExprId) -> bool {
    match &k.exprs[e].kind {
        ExprKind::Full(x) | ExprKind::Cast(x) | ExprKind::BroadcastTo(x) => is_zero(k, *x),
        ExprKind::Lit(Lit::Int(0)) => true,
        ExprKind::Lit(Lit::Float(v)) => *v == 0.0,
        _ => false,
    }
}

impl DevGen<'_> {
    /// The loop of the kernel that launches may split, if it has one (see [`SplitLoop`]).
    pub(super) fn split_loop(&self) -> Option<SplitLoop> {
        let k = self.k;
        // Only loop of the kernel, at the top level, with nothing storing before it.
        if count_loops(&k.body) != 1 {
            return None;
        }
        let at = k.body.iter().position(|s| matches!(s, Stmt::For { .. }))?;
        let Stmt::For { var, body, .. } = &k.body[at] else { return None };
        if k.body[..at].iter().any(|s| stores(k, s)) {
            return None;
        }
        // Its body: definitions, one accumulation and affine steps.
        let (mut acc, mut steps, mut defined) = (None, Vec::new(), vec![*var]);
        for s in body {
            match s {
                Stmt::Let { local, .. } => defined.push(*local),
                Stmt::Assign { local, value } => match (&self.kinds[*local], &k.exprs[*value].kind) {
                    (LocalKind::Materialized, ExprKind::Dot { acc: Some(c), .. }) if acc.is_none() && matches!(k.exprs[*c].kind, ExprKind::Local(l) if l == *local) => acc = Some(*local),
                    (LocalKind::Affine(_), ExprKind::PtrAdd(_, st)) => steps.push((*local, *st, false)),
                    (LocalKind::Affine(_), ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), _, st)) => steps.push((*local, *st, *op == BinOp::Sub)),
                    _ => return None,
                },
                _ => return None,
            }
        }
        let acc = acc?;
        // Steps that do not change in the loop (they are applied in bulk before and after a part).
        let varying: Vec<LocalId> = defined.iter().copied().chain([acc]).chain(steps.iter().map(|s| s.0)).collect();
        if steps.iter().any(|(_, st, _)| varying.iter().any(|l| uses_local(k, *st, *l))) {
            return None;
        }
        // An f32 accumulator that starts at zero and is only assigned by the loop's `dot`.
        if k.locals[acc].ty.dtype() != Some(DType::F32) {
            return None;
        }
        let init = k.body[..at].iter().find_map(|s| match s {
            Stmt::Let { local, value } if *local == acc => Some(*value),
            _ => None,
        })?;
        if !is_zero(k, init) || k.body[..at].iter().any(|s| assigns(s, acc)) {
            return None;
        }
        let read_after = steps.iter().map(|s| s.0).filter(|l| k.body[at + 1..].iter().any(|s| reads(k, s, *l))).collect();
        Some(SplitLoop { var: *var, acc, steps, read_after })
    }

    /// The split loop, when `var` is its variable.
    pub(super) fn split_of(&self, var: LocalId) -> Option<&SplitLoop> {
        self.split.as_ref().filter(|s| s.var == var)
    }

    /// Floats of one part's partial accumulator in the workspace: every thread's register
    /// slots of `acc`.
    pub(super) fn split_floats(&self, sl: &SplitLoop) -> usize {
        let numel: usize = self.k.locals[sl.acc].ty.shape.iter().map(|x| x.eval(&|s| self.vals.get(s).copied()).unwrap_or(1).max(0) as usize).product();
        self.slots(numel, self.layouts[sl.acc]) * self.threads
    }

    /// Steps the affine locals of the loop that `only` lists `times` iterations (an `i64`
    /// expression) at once.
    fn split_advance(&self, sl: &SplitLoop, only: &[LocalId], times: TokenStream) -> TokenStream {
        let (k, d) = (self.k, &self.d);
        let code = sl.steps.iter().filter(|s| only.contains(&s.0)).map(|(l, st, sub)| {
            let off = format_ident!("{}_off", crate::expand_cpu::local_ident(k, *l));
            let off_t = match k.locals[*l].ty.elem {
                Elem::Ptr(_) => quote!(i64),
                _ => self.elem(&k.locals[*l].ty),
            };
            let (sv, st_t) = (self.ev(*st, &At::Own), self.elem(&k.exprs[*st].ty));
            let f = if *sub { quote!(sub) } else { quote!(add) };
            quote!(#off = <#off_t as #d::Num>::#f(#off, #d::cast::<i64, #off_t>((#times) * #d::cast::<#st_t, i64>(#sv)));)
        });
        quote!(#(#code)*)
    }

    /// Inside the loop's code, right after its trip count `__n` (from `__start` and `__step`,
    /// of type `var_t`) is known: this part's iterations replace the loop's, and the stepped
    /// locals move to the part's first iteration. Returns that code and the code after the
    /// loop that moves them on to where the whole loop leaves them.
    pub(super) fn split_range_code(&self, sl: &SplitLoop, var_t: &TokenStream) -> (TokenStream, TokenStream) {
        let d = &self.d;
        let all: Vec<LocalId> = sl.steps.iter().map(|s| s.0).collect();
        let before = self.split_advance(sl, &all, quote!(__sk_it0));
        let after = self.split_advance(sl, &sl.read_after, quote!(__sk_n - __sk_it0 - __n));
        (
            quote! {
                // Recomputed from the parameters where needed rather than kept live in registers
                // from the entry.
                let __sk: #d::SplitBlock = #d::split_block(__sk_dp, __sk_parts);
                let __sk_n: i64 = __n;
                let (__sk_it0, __n): (i64, i64) = #d::split_range(__n, __sk.part, __sk.parts);
                let __start: #var_t = ((__start as i64) + __sk_it0 * (__step as i64)) as #var_t;
                #before
            },
            after,
        )
    }

    /// After the loop, in a block that runs part of it: writes the partial accumulator to the
    /// program's workspace slot, counts the part, and ends the block unless it is the last
    /// part, which sums every part's partial (in part order, from the workspace) into the
    /// accumulator and goes on with the program.
    pub(super) fn split_reduce_code(&self, sl: &SplitLoop) -> TokenStream {
        let (k, d) = (self.k, &self.d);
        let acc = crate::expand_cpu::local_ident(k, sl.acc);
        let floats = self.split_floats(sl);
        let threads = self.threads;
        let r = floats / threads;
        // The last-part flag lives at offset 0: after the loop (which ends with a block
        // barrier) no shared memory of the statement is live any more.
        let flag = 0usize;
        self.smem_max.set(self.smem_max.get().max(16));
        // Slot `j` of thread `t`: 16 bytes per thread and group of four slots (a warp writes 512
        // contiguous bytes), or one float per thread and slot. `read(op)` applies `op` (`=`, `+=`)
        // to each slot and the value read back from L2.
        let (write, read): (TokenStream, Box<dyn Fn(TokenStream) -> TokenStream>) = if r.is_multiple_of(4) {
            let at: Vec<TokenStream> = (0..r / 4).map(|g| quote!((#g * #threads + __tid) * 4)).collect();
            let quads: Vec<[usize; 4]> = (0..r / 4).map(|g| [4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3]).collect();
            let write = at.iter().zip(&quads).map(|(at, [j0, j1, j2, j3])| quote!(#d::st_cg_v4(__skp.add(#at), [#acc[#j0], #acc[#j1], #acc[#j2], #acc[#j3]]);));
            let write = quote!(#(#write)*);
            let read = move |op: TokenStream| {
                let reads = at.iter().zip(&quads).map(|(at, [j0, j1, j2, j3])| quote!({ let __v: [f32; 4] = #d::ld_cg_v4(__skp.add(#at)); #acc[#j0] #op __v[0]; #acc[#j1] #op __v[1]; #acc[#j2] #op __v[2]; #acc[#j3] #op __v[3]; }));
                quote!(#(#reads)*)
            };
            (write, Box::new(read))
        } else {
            let at: Vec<TokenStream> = (0..r).map(|j| quote!(#j * #threads + __tid)).collect();
            let write = at.iter().enumerate().map(|(j, at)| quote!(#d::st_cg(__skp.add(#at), #acc[#j]);));
            let write = quote!(#(#write)*);
            let read = move |op: TokenStream| {
                let reads = at.iter().enumerate().map(|(j, at)| quote!(#acc[#j] #op #d::ld_cg(__skp.add(#at));));
                quote!(#(#reads)*)
            };
            (write, Box::new(read))
        };
        let (first, add) = (read(quote!(=)), read(quote!(+=)));
        quote! {
            let __sk: #d::SplitBlock = #d::split_block(__sk_dp, __sk_parts);
            if __sk.parts > 1 {
                // Out of line: the epilogue follows the loop in the instruction stream.
                ::core::hint::cold_path();
                let __skw: *mut f32 = __sk_ws.add(__sk.slot as usize * __sk.parts as usize * #floats);
                let __skp: *mut f32 = __skw.add(__sk.part as usize * #floats);
                #write
                #d::fence_acq_rel_gpu();
                #d::bar_sync();
                if __tid == 0 {
                    let __last: bool = #d::split_arrive(__sk_cnt.add(__sk.slot as usize), __sk.parts);
                    #d::store(__smem.add(#flag) as *mut u32, __last as u32);
                }
                #d::bar_sync();
                let __sk_last: bool = #d::load(__smem.add(#flag) as *mut u32) != 0;
                #d::bar_sync();
                if !__sk_last {
                    return;
                }
                #d::fence_acq_rel_gpu();
                let __skp: *mut f32 = __skw;
                #first
                let mut __skq: usize = 1;
                while __skq < __sk.parts as usize {
                    let __skp: *mut f32 = __skw.add(__skq * #floats);
                    #add
                    __skq += 1;
                }
            }
        }
    }
}
