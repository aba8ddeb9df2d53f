//! Statements: the kernel's body in program order (`let`, assignments, stores, loops, branches,
//! debugging statements), keeping track of the barriers between them.

use super::*;

impl DevGen<'_> {
    pub(super) fn stmt_roots(s: &Stmt) -> Vec<ExprId> {
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } => vec![*value],
            Stmt::Store { ptr, value, mask, .. } => {
                let mut v = vec![*ptr, *value];
                v.extend(mask.iter().copied());
                v
            }
            Stmt::For { start, end, step, .. } => vec![*start, *end, *step],
            Stmt::If { cond, .. } => vec![*cond],
            // Its condition is computed by its `pre` statements, inside the loop.
            Stmt::While { .. } | Stmt::Return | Stmt::Barrier => vec![],
            Stmt::Assert { cond, operands, .. } => std::iter::once(*cond).chain(operands.iter().map(|(_, e)| *e)).collect(),
            Stmt::Print { values, .. } => values.clone(),
        }
    }

    pub(super) fn stmts(&mut self, stmts: &[Stmt]) -> TokenStream {
        self.test_frames.push(Vec::new());
        let mut out = TokenStream::new();
        for s in stmts {
            self.gen_stmt(s, &mut out);
        }
        self.test_frames.pop();
        out
    }

    /// The kernel's body: as `stmts`, the last top-level loop also getting the code after it
    /// for its fallback.
    pub(super) fn body(&mut self, stmts: &[Stmt]) -> TokenStream {
        self.test_frames.push(Vec::new());
        let mut out = TokenStream::new();
        for (i, s) in stmts.iter().enumerate() {
            // The loop the plan names gets the code after it, for its fallback.
            let rest = match s {
                Stmt::For { var, .. } if self.tail_loop == Some(*var) => Some(self.after_loop(&stmts[i + 1..])),
                _ => None,
            };
            self.gen_stmt_then(s, &mut out, rest.as_ref());
        }
        self.test_frames.pop();
        out
    }

    /// The code of `stmts`, the rest of the kernel's body after a software-pipelined loop, as
    /// `body` generates it there (the plan's barriers around its stores are those of that place).
    pub(super) fn after_loop(&mut self, stmts: &[Stmt]) -> TokenStream {
        self.stmts(stmts)
    }

    /// One statement (its hoisted `dot`s and reductions first).
    pub(super) fn gen_stmt(&mut self, s: &Stmt, out: &mut TokenStream) {
        self.gen_stmt_then(s, out, None);
    }

    /// [`Self::gen_stmt`]; a software-pipelined loop's cold fallback runs `rest`, the code
    /// after it, itself (see `body`).
    fn gen_stmt_then(&mut self, s: &Stmt, out: &mut TokenStream, rest: Option<&TokenStream>) {
        self.smem.clear();
        self.temps.clear();
        for r in Self::stmt_roots(s) {
            self.hoist(r, out);
        }
        out.extend(match s {
            Stmt::For { var, start, end, step, body, .. } => self.for_stmt(*var, (*start, *end, *step), body, rest),
            _ => self.stmt(s),
        });
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> TokenStream {
        match s {
            Stmt::Let { local, value } | Stmt::Assign { local, value } => self.assign_stmt(*local, *value, matches!(s, Stmt::Let { .. })),
            Stmt::Store { ptr, value, mask, span } => self.store_stmt(s, (*ptr, *value, *mask), span.start),
            Stmt::For { var, start, end, step, body, .. } => self.for_stmt(*var, (*start, *end, *step), body, None),
            Stmt::If { cond, then, els } => {
                let c = self.ev(*cond, &At::Own);
                let (t, e) = (self.stmts(then), self.stmts(els));
                quote!(if #c { #t } else { #e })
            }
            Stmt::While { pre, test, body } => {
                self.loop_depth += 1;
                let pre = self.stmts(pre);
                let c = self.ev(*test, &At::Own);
                let body = self.stmts(body);
                self.loop_depth -= 1;
                quote!(loop { #pre if !#c { break; } #body })
            }
            Stmt::Return => quote!(return;),
            Stmt::Assert { cond, operands, span, hint, .. } => self.gen_assert(*cond, operands, *span, hint.is_some()),
            Stmt::Print { prefix, values, .. } => self.gen_print(prefix, values),
            Stmt::Barrier => {
                let d = &self.p.d;
                quote!(#d::bar_sync();)
            }
        }
    }

    /// A `let` (`is_let`) or an assignment of `value` to `local`, by the local's kind.
    fn assign_stmt(&mut self, local: LocalId, value: ExprId, is_let: bool) -> TokenStream {
        let k = self.k;
        let d = &self.p.d;
        let id = crate::expand_cpu::local_ident(k, local);
        let lty = &k.locals[local].ty;
        let t = self.elem(lty);
        match &self.kinds[local] {
            LocalKind::Scalar if matches!(k.exprs[value].kind, ExprKind::Atomic { .. }) => {
                // Once per program, like a scalar store: thread 0 updates memory and
                // every thread reads the old value it got through shared memory.
                let v = self.ev(value, &At::Own);
                let off = self.alloc(8);
                quote! {
                    #d::bar_sync();
                    if __tid == 0 {
                        let __old: #t = #v;
                        #d::store(__smem.add(#off) as *mut #t, __old);
                    }
                    #d::bar_sync();
                    let mut #id: #t = #d::load(__smem.add(#off) as *mut #t);
                    #d::bar_sync();
                }
            }
            LocalKind::Scalar => {
                let v = self.ev(value, &At::Own);
                if is_let {
                    quote!(let mut #id: #t = #v;)
                } else {
                    quote!(#id = #v;)
                }
            }
            LocalKind::Pure(_) => quote!(),
            LocalKind::Affine(_) => {
                let off = format_ident!("{}_off", id);
                let off_t = match lty.elem {
                    Elem::Ptr(_) => quote!(i64),
                    _ => t.clone(),
                };
                if is_let {
                    return quote!(let mut #off: #off_t = <#off_t as #d::Elem>::from_i64(0););
                }
                let (op, step) = match &k.exprs[value].kind {
                    ExprKind::PtrAdd(_, st) => (BinOp::Add, *st),
                    ExprKind::Binary(op, _, st) => (*op, *st),
                    _ => (BinOp::Add, value),
                };
                let sv = self.ev(step, &At::Own);
                let st = self.elem(&k.exprs[step].ty);
                let f = if op == BinOp::Sub { quote!(sub) } else { quote!(add) };
                quote!(#off = <#off_t as #d::Num>::#f(#off, #d::cast::<#st, #off_t>(#sv));)
            }
            LocalKind::Inline(_) => quote!(),
            LocalKind::Materialized => {
                let numel: usize = lty.shape.iter().map(|x| x.eval(&|s| self.vals.get(s).copied()).unwrap_or(1) as usize).product();
                let layout = self.layouts[local];
                let pt = self.slots(numel, layout);
                let decl = if is_let {
                    quote!(let mut #id: [#t; #pt] = unsafe { ::core::mem::zeroed() };)
                } else {
                    quote!()
                };
                let elem = |g: &mut Self| {
                    let v = g.ev(value, &At::Own);
                    quote!(#id[__j] = #v;)
                };
                if let Some(pairs) = self.cast_pairs_f16(&id, numel, layout, lty, value) {
                    return quote!(#decl #pairs);
                }
                let body = if layout == Layout::Cyclic && self.vec_width(numel) > 1 {
                    self.phase_chunks(numel, &[value], elem, quote!(), quote!(), Some(id.clone()))
                } else if self.rolls(value, numel, layout) {
                    self.materialize_rolled(&id, &t, numel, layout, elem)
                } else {
                    self.phase_in(numel, layout, elem)
                };
                quote!(#decl #body)
            }
        }
    }

    /// A store statement `s` of `value` through `ptr` where `mask` holds (`span`: where it is
    /// written, for fault reports).
    fn store_stmt(&mut self, s: &Stmt, (ptr, value, mask): (ExprId, ExprId, Option<ExprId>), span: proc_macro2::Span) -> TokenStream {
        let k = self.k;
        let d = &self.p.d;
        // A program's threads run independently, so a store could overtake another
        // thread's earlier load of the same address (or a later load could miss it).
        // Barriers around stores keep the program order whenever the kernel loads, except
        // where every thread is known to be past a barrier with no global access since
        // (after a software-pipelined loop) or where nothing follows (the kernel's last
        // statement).
        let fence = if self.has_loads { quote!(#d::bar_sync();) } else { quote!() };
        let b = self.store_barriers[&plan::barriers::stmt_key(s)];
        let (before, after) = (if b.before { fence.clone() } else { quote!() }, if b.after { fence.clone() } else { quote!() });
        let numel = self.numel(ptr);
        if self.shapes[ptr].is_empty() {
            let p = self.ev(ptr, &At::Own);
            let v = self.ev(value, &At::Own);
            let ok = self.in_bounds_code(ptr, &quote!(__a), span);
            let w = quote!({ let __a = #p; if #ok { #d::store(__a, #v); } });
            let w = match mask {
                Some(m) => {
                    let vm = self.ev(m, &At::Own);
                    quote!(if #vm { #w })
                }
                None => w,
            };
            // Scalars are uniform: one thread writes.
            return quote!(#before if __tid == 0 { #w } #after);
        }
        // Iterate in the stored value's layout when it is an `mma` accumulator.
        let layout = match &k.exprs[value].kind {
            ExprKind::Local(l) if matches!(self.kinds[*l], LocalKind::Materialized) && self.shapes[value] == self.shapes[ptr] => self.layouts[*l],
            _ => Layout::Cyclic,
        };
        // Row layouts hold each element in several threads: a store writes it once.
        let layout = if matches!(layout, Layout::MmaRows { .. }) { Layout::Cyclic } else { layout };
        if self.chunk_len(numel, layout) > 1 {
            let body = self.store_chunks(numel, layout, ptr, value, mask, span);
            return quote!(#before #body #after);
        }
        let body = self.phase_in(numel, layout, |g| {
            let p = g.ev(ptr, &At::Own);
            let v = g.operand(ptr, value, &At::Own);
            let ok = g.in_bounds_code(ptr, &quote!(__a), span);
            let w = quote!({ let __a = #p; if #ok { #d::store(__a, #v); } });
            match mask {
                Some(m) => {
                    let vm = g.operand(ptr, m, &At::Own);
                    quote!(if #vm { #w })
                }
                None => w,
            }
        });
        quote!(#before #body #after)
    }

    /// A `for` loop over `var` from `start` to `end` by `step`: software-pipelined, split, or as
    /// written with its resident operands and copies ahead.
    fn for_stmt(&mut self, var: LocalId, (start, end, step): (ExprId, ExprId, ExprId), body: &[Stmt], rest: Option<&TokenStream>) -> TokenStream {
        let k = self.k;
        let d = &self.p.d;
        let reduce = self.p.split_of(var).map(|sl| self.split_reduce_code(sl));
        if let Some(code) = self.try_pipelined(var, (start, end, step), rest) {
            return quote!(#code #reduce);
        }
        let id = crate::expand_cpu::local_ident(k, var);
        let t = self.elem(&k.locals[var].ty);
        let (s, e, st) = (self.ev(start, &At::Own), self.ev(end, &At::Own), self.ev(step, &At::Own));
        let split = self.p.split_of(var).map(|sl| self.split_range_code(sl, &t));
        self.loop_frames.insert(var, self.test_frames.len().saturating_sub(1));
        let (floor, resident) = (self.smem.floor(), self.stage_resident(var));
        // Copies ahead, counting round the buffer each iteration reads (not in split
        // loops, whose parts start inside the loop).
        let ahead = self.copy_ahead(var, &t);
        let inner_floor = self.smem.floor();
        // With tensor-map copies ahead, the body twice: the loop version with those copies, then
        // the `cp.async` one.
        self.loop_depth += 1;
        let tma_body = ahead.as_ref().and_then(|a| a.tma.as_ref()).map(|_| {
            let b = self.loop_body(var, body, inner_floor);
            self.ahead_without_tma();
            self.smem.restore_floor(inner_floor);
            self.smem.clear();
            b
        });
        let body = self.loop_body(var, body, inner_floor);
        self.loop_depth -= 1;
        let loop_tests = self.take_loop_tests(var, (&t, &s, &e, &st));
        self.smem.restore_floor(floor);
        let (resident, body, tma_loop) = match &ahead {
            Some(a) => {
                let (first, next, buf, advance) = (&a.first, &a.next, &a.buf, a.advance());
                let tma_loop = a.tma.as_ref().zip(tma_body).map(|(tl, tb)| {
                    let (tnext, tadvance) = (&tl.next, &tl.advance);
                    (tl.flag.clone(), quote!(#tnext #tb #tadvance), tl.after.clone())
                });
                (quote!(#resident #first let mut #buf: u32 = 0;), quote!(#next #body #advance), tma_loop)
            }
            None => (resident, body, None),
        };
        if let Some((range, after)) = split {
            // A part of the split loop runs its run of `__n` iterations.
            return quote! {
                #loop_tests
                {
                    let __start: #t = #s;
                    let __end: #t = #e;
                    let __step: #t = #st;
                    let (__s64, __e64, __t64) = (__start as i64, __end as i64, __step as i64);
                    let __n: i64 = #d::trip_count(__s64, __e64, __t64);
                    #range
                    #resident
                    let mut __i: #t = __start;
                    let mut __c: i64 = 0;
                    while __c < __n {
                        let #id: #t = __i;
                        #body
                        __i = __i.wrapping_add(__step);
                        __c += 1;
                    }
                    #after
                }
                #reduce
            };
        }
        let in_range = super::operands::in_loop_range(&quote!(__i));
        let looped = |body: &TokenStream| {
            quote! {
                let mut __i: #t = __start;
                while __step != 0 && #in_range {
                    let #id: #t = __i;
                    #body
                    __i = match __i.checked_add(__step) { Some(n) => n, None => break };
                }
            }
        };
        let run = match &tma_loop {
            Some((flag, tma_body, after)) => {
                let (tl, cl) = (looped(tma_body), looped(&body));
                quote!(if #flag { #tl } else { #cl } #after)
            }
            None => looped(&body),
        };
        quote! {
            #loop_tests
            {
                let __start: #t = #s;
                let __end: #t = #e;
                let __step: #t = #st;
                #resident
                #run
            }
        }
    }
}
