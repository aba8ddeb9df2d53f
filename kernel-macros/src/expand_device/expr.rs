//! Evaluating expressions: an expression of the block IR at a flat index of its block (`ev`,
//! `At`), reading materialized values from registers or their copies in shared memory, and the
//! emitter's small helpers (fresh names, element types, slot loops, shared-memory allocation).

use super::*;

impl DevGen<'_> {
    pub(super) fn fresh(&mut self, base: &str) -> Ident {
        let n = self.counter;
        self.counter += 1;
        format_ident!("__{}{}", base, n)
    }

    pub(super) fn elem(&self, t: &Ty) -> TokenStream {
        match t.elem {
            Elem::Val(d) => dev_dtype(d),
            Elem::Ptr(d) => {
                let e = dev_dtype(d);
                quote!(*mut #e)
            }
            Elem::Error => quote!(()),
        }
    }

    /// Flat index of register slot `j` (a `usize` expression) of this thread in an `mma`
    /// layout: [`Self::mma_flat`] computed in the device code, for code generated once for
    /// every slot (a closure over `j` that [`Self::unrolled`] calls with constants).
    pub(super) fn mma_flat_at(layout: Layout, j: &TokenStream) -> TokenStream {
        let Layout::Mma { wn, tm, tn, n, wg, .. } = layout else { return quote!(0usize) };
        let (tn4, wtn) = (tn * 4, tn * 8);
        // Slot `j` is tile `(j / tn4, (j % tn4) / 4)`, element `j % 4` of the fragment.
        let col_off = quote!((((#j) % #tn4) / 4) * 8 + (#j) % 2);
        if wg {
            let wtm = tm * 64;
            let row_off = quote!(((#j) / #tn4) * 64 + (((#j) % 4) / 2) * 8);
            return quote!((((__warp / 4) / #wn) * #wtm + #row_off + (__warp % 4) * 16 + __lane / 4) * #n + ((__warp / 4) % #wn) * #wtn + #col_off + (__lane % 4) * 2);
        }
        let wtm = tm * 16;
        let row_off = quote!(((#j) / #tn4) * 16 + (((#j) % 4) / 2) * 8);
        quote!(((__warp / #wn) * #wtm + #row_off + __lane / 4) * #n + (__warp % #wn) * #wtn + #col_off + (__lane % 4) * 2)
    }

    /// `body` for `var` in `0..n`, written once: a closure over `var` that the device's
    /// `unroll` calls with each constant (straight-line code after inlining, so arrays indexed
    /// by `var` stay in registers).
    pub(super) fn unrolled(&self, n: usize, var: TokenStream, body: TokenStream) -> TokenStream {
        let d = &self.p.d;
        quote!(#d::unroll::<#n, _>(#[inline(always)] |#var: usize| { #body });)
    }

    /// `body` for `var` in `0..n` over the register slots (or chunks) of a cyclic block: unrolled
    /// ([`Self::unrolled`]) when every block of the kernel holds at most [`plan::MAX_UNROLLED_SLOTS`]
    /// elements per thread, so that the slot indices are constants and the per-thread arrays
    /// stay in registers; a loop otherwise (a block too large for registers lives in local
    /// memory, and unrolling the code around it only adds register pressure).
    pub(super) fn slot_loop(&self, n: usize, var: TokenStream, body: TokenStream) -> TokenStream {
        if self.unroll_slots {
            return self.unrolled(n, var, body);
        }
        quote!(for #var in 0..#n { #body })
    }

    /// Flat index of register slot `j` of this thread in an `mma` layout.
    pub(super) fn mma_flat(layout: Layout, j: usize) -> TokenStream {
        let Layout::Mma { wn, tm, tn, n, wg, .. } = layout else { return quote!(0usize) };
        let (t_m, rest) = (j / (tn * 4), j % (tn * 4));
        let (t_n, r) = (rest / 4, rest % 4);
        let col_off = t_n * 8 + (r % 2);
        let wtn = tn * 8;
        if wg {
            let row_off = t_m * 64 + (r / 2) * 8;
            let wtm = tm * 64;
            return quote!((((__warp / 4) / #wn) * #wtm + #row_off + (__warp % 4) * 16 + __lane / 4) * #n + ((__warp / 4) % #wn) * #wtn + #col_off + (__lane % 4) * 2);
        }
        let row_off = t_m * 16 + (r / 2) * 8;
        let wtm = tm * 16;
        quote!(((__warp / #wn) * #wtm + #row_off + __lane / 4) * #n + (__warp % #wn) * #wtn + #col_off + (__lane % 4) * 2)
    }

    pub(super) fn alloc(&mut self, bytes: usize) -> usize {
        self.alloc_aligned(bytes, 16)
    }

    /// Shared memory for `bytes` at an offset that is a multiple of `align`.
    pub(super) fn alloc_aligned(&mut self, bytes: usize, align: usize) -> usize {
        self.smem.alloc(bytes, align)
    }

    pub(super) fn idx(&self, at: &At) -> TokenStream {
        match at {
            At::Own => quote!(__f),
            At::Flat(t) | At::Mapped(t, _) => t.clone(),
        }
    }

    /// For a value of `numel` elements evaluated at `at`: which bit of the iteration element's
    /// flat index each bit of the value's flat index is (see [`At::Mapped`]), if known.
    pub(super) fn bit_map(&self, at: &At, numel: usize) -> Option<std::rc::Rc<[u32]>> {
        match at {
            At::Own if numel.is_power_of_two() && numel == self.iter_numel => Some((0..numel.trailing_zeros()).collect()),
            At::Mapped(_, bits) => Some(bits.clone()),
            _ => None,
        }
    }

    /// The flat index in `to` (broadcast operand) of the element that `at` in `from` reads.
    pub(super) fn map_broadcast(&self, at: &At, from: &[usize], to: &[usize]) -> At {
        if from == to {
            return at.clone();
        }
        let to_numel: usize = to.iter().product();
        if to_numel <= 1 {
            return At::Flat(quote!(0usize));
        }
        let pf = self.idx(at);
        let n = from.len();
        let mut terms = Vec::new();
        let mut to_stride = 1usize;
        for i in (0..to.len()).rev() {
            let fi = i + n - to.len();
            if to[i] != 1 {
                let from_stride: usize = from[fi + 1..].iter().product();
                let dim = from[fi];
                terms.push(quote!(((__pf / #from_stride) % #dim) * #to_stride));
            }
            to_stride *= to[i];
        }
        let flat = quote!({ let __pf: usize = #pf; 0usize #(+ #terms)* });
        match self.bit_map(at, from.iter().product()).and_then(|m| broadcast_bits(&m, from, to)) {
            Some(bits) => At::Mapped(flat, bits.into()),
            None => At::Flat(flat),
        }
    }

    pub(super) fn operand(&mut self, parent: ExprId, child: ExprId, at: &At) -> TokenStream {
        let child_shape = &self.shapes[child];
        if child_shape.is_empty() {
            return self.ev(child, &At::Own);
        }
        let a = self.map_broadcast(at, &self.shapes[parent], child_shape);
        self.ev(child, &a)
    }

    pub(super) fn read_mat(&mut self, m: &MatVar, at: &At) -> TokenStream {
        let id = &m.ident;
        if m.numel == 0 {
            // A uniform scalar (a reduction to rank 0).
            return quote!(#id);
        }
        if matches!(at, At::Own) && m.numel == self.iter_numel && m.layout == self.iter_layout {
            self.note_slot_read(m, true);
            return quote!(#id[__j]);
        }
        if let Some(code) = self.read_local(m, at) {
            self.note_slot_read(m, false);
            return code;
        }
        let idx = self.idx(at);
        let off = match self.staged.iter().find(|(v, _)| v.ident == m.ident) {
            Some((_, off)) => *off,
            None => {
                let size = m.numel * 8;
                let off = self.alloc(size);
                self.staged.push((m.clone(), off));
                off
            }
        };
        let e = &m.elem;
        let d = &self.p.d;
        quote!(#d::load((__smem.add(#off) as *mut #e).add(#idx)))
    }

    /// `m` at `at` read from this thread's own registers, when the layouts allow: every bit of
    /// the element's flat index that `m`'s layout takes from the lane or warp index is the
    /// same lane or warp bit of the iteration's element, and every bit it takes from the slot
    /// index is some slot bit of the iteration's (`__j`); the slot read is then a function of
    /// `__j` (a constant where the iteration is unrolled). A row of an `mma` block broadcast
    /// along the block's columns, for instance, is in the registers of every thread that holds
    /// the row.
    pub(super) fn read_local(&self, m: &MatVar, at: &At) -> Option<TokenStream> {
        let map = self.bit_map(at, m.numel)?;
        let iter = self.bit_layout(self.iter_numel, self.iter_layout)?;
        let from = self.bit_layout(m.numel, m.layout)?.local_read(&iter, &map)?;
        let terms = from.iter().enumerate().map(|(p, q)| quote!((((__j >> #q) & 1) << #p)));
        let id = &m.ident;
        Some(quote!(#id[0usize #(| #terms)*]))
    }


    pub(super) fn ev(&mut self, id: ExprId, at: &At) -> TokenStream {
        if let Some(m) = self.temps.get(&id).cloned() {
            return self.read_mat(&m, at);
        }
        let k = self.k;
        let e = &k.exprs[id];
        let d = &self.p.d;
        let t = self.elem(&e.ty);
        match &e.kind {
            ExprKind::Param(i) => {
                let p = param_ident(&k.params[*i].name);
                quote!(#p)
            }
            ExprKind::Meta(i) => {
                let v = self.vals.get(&k.metas[*i].name).copied().unwrap_or(0);
                match e.ty.dtype() {
                    Some(DType::Bool) => {
                        let b = v != 0;
                        quote!(#b)
                    }
                    _ => quote!(<#t as #d::Elem>::from_i64(#v)),
                }
            }
            ExprKind::Lit(l) => self.lit_code(l, &e.ty),
            ExprKind::Local(l) => self.local_code(id, *l, at),
            ExprKind::ProgramId(a) => self.program_id_code(*a),
            // In an entry that may split its K loop, the programs along x are the split's.
            ExprKind::NumPrograms(0) if self.split.is_some() => quote!(#d::split_programs(__sk_dp, __sk_parts)),
            ExprKind::NumPrograms(a) => {
                let a = *a as u32;
                quote!(#d::num_programs(#a))
            }
            ExprKind::Arange { start, .. } => {
                let s = start.eval(&|x| self.vals.get(x).copied()).unwrap_or(0) as i32;
                let i = self.idx(at);
                quote!((#s).wrapping_add((#i) as i32))
            }
            ExprKind::Full(v) => self.ev(*v, &At::Own),
            ExprKind::Unary(op, x) => {
                let xt = self.elem(&k.exprs[*x].ty);
                let v = self.operand(id, *x, at);
                match op {
                    UnOp::Neg => quote!(<#xt as #d::Num>::neg(#v)),
                    UnOp::Not => quote!(<#xt as #d::Int>::not(#v)),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let ot = self.elem(&k.exprs[*a].ty);
                let (va, vb) = (self.operand(id, *a, at), self.operand(id, *b, at));
                let f = match op {
                    BinOp::Add => quote!(<#ot as #d::Num>::add),
                    BinOp::Sub => quote!(<#ot as #d::Num>::sub),
                    BinOp::Mul => quote!(<#ot as #d::Num>::mul),
                    BinOp::Div => quote!(<#ot as #d::Num>::div),
                    BinOp::Rem => quote!(<#ot as #d::Num>::rem),
                    BinOp::Min => quote!(<#ot as #d::Num>::min),
                    BinOp::Max => quote!(<#ot as #d::Num>::max),
                    BinOp::Lt => quote!(<#ot as #d::Num>::lt),
                    BinOp::Le => quote!(<#ot as #d::Num>::le),
                    BinOp::Gt => quote!(<#ot as #d::Num>::gt),
                    BinOp::Ge => quote!(<#ot as #d::Num>::ge),
                    BinOp::Eq => quote!(<#ot as #d::Num>::eq),
                    BinOp::Ne => quote!(<#ot as #d::Num>::ne),
                    BinOp::And => quote!(<#ot as #d::Int>::and),
                    BinOp::Or => quote!(<#ot as #d::Int>::or),
                    BinOp::Xor => quote!(<#ot as #d::Int>::xor),
                    BinOp::Shl => quote!(<#ot as #d::Int>::shl),
                    BinOp::Shr => quote!(<#ot as #d::Int>::shr),
                };
                quote!(#f(#va, #vb))
            }
            ExprKind::PtrAdd(p, o) => {
                let (vp, vo) = (self.operand(id, *p, at), self.operand(id, *o, at));
                quote!(#d::ptr_add(#vp, #vo))
            }
            // A pointer's address (the check of a `multiple_of` hint).
            ExprKind::Cast(x) if matches!(k.exprs[*x].ty.elem, Elem::Ptr(_)) => {
                let v = self.operand(id, *x, at);
                quote!(((#v) as usize as i64))
            }
            ExprKind::Cast(x) => {
                let from = self.elem(&k.exprs[*x].ty);
                let v = self.operand(id, *x, at);
                quote!(#d::cast::<#from, #t>(#v))
            }
            ExprKind::ExpandDims(x, _) | ExprKind::Reshape(x) => {
                // Row-major flat order is unchanged.
                if self.shapes[*x].is_empty() {
                    self.ev(*x, &At::Own)
                } else {
                    self.ev(*x, at)
                }
            }
            ExprKind::BroadcastTo(x) => self.operand(id, *x, at),
            ExprKind::Trans(x) => {
                let s = &self.shapes[id];
                let (r0, r1) = (s[0], s[1]);
                let f = self.idx(at);
                let flat = quote!({ let __tf: usize = #f; (__tf % #r1) * #r0 + __tf / #r1 });
                let child = match self.bit_map(at, r0 * r1).filter(|_| r0.is_power_of_two() && r1.is_power_of_two()) {
                    // The child's column bits are the row bits here, and its row bits the columns.
                    Some(m) => {
                        let (b0, b1) = (r0.trailing_zeros() as usize, r1.trailing_zeros() as usize);
                        At::Mapped(flat, m[b1..b1 + b0].iter().chain(&m[..b1]).copied().collect())
                    }
                    None => At::Flat(flat),
                };
                self.ev(*x, &child)
            }
            ExprKind::Math(m, xs) => {
                let xt = self.elem(&k.exprs[xs[0]].ty);
                let vs: Vec<TokenStream> = xs.iter().map(|x| self.operand(id, *x, at)).collect();
                let f = format_ident!("{}", m.name());
                let tr = if k.exprs[xs[0]].ty.dtype().is_some_and(|d| d.is_float()) { quote!(Float) } else { quote!(Int) };
                quote!(<#xt as #d::#tr>::#f(#(#vs),*))
            }
            ExprKind::Where(c, a, _) if self.assume.contains(c) => self.operand(id, *a, at),
            ExprKind::Where(c, a, b) => {
                let (vc, va, vb) = (self.operand(id, *c, at), self.operand(id, *a, at), self.operand(id, *b, at));
                // Both sides computed ahead where that is cheap and safe: a select, and a value
                // read twice in one statement (computed at each read) is computed once.
                if self.speculable(*a, at) && self.speculable(*b, at) {
                    quote!({ let __wa = #va; let __wb = #vb; if #vc { __wa } else { __wb } })
                } else {
                    quote!(if #vc { #va } else { #vb })
                }
            }
            ExprKind::Load { ptr, mask, other } => self.load_code(id, (*ptr, *mask, *other), at),
            ExprKind::Random { kind, seed, offset, four, word, rounds } => {
                let (vs, vo) = (self.operand(id, *seed, at), self.operand(id, *offset, at));
                let (f, idx) = if *four {
                    let w = *word as usize;
                    (format_ident!("{}4x_rounds", kind.name()), quote!([#w]))
                } else {
                    (format_ident!("{}_rounds", kind.name()), quote!())
                };
                quote!(::kernel_std::random::#f((#vs) as u64, #vo, #rounds)#idx)
            }
            ExprKind::Atomic { op, ptr, val, cmp, mask, sem, scope } => self.atomic_code(id, *op, (*ptr, *val, *cmp, *mask), (*sem, *scope), at),
            ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } => {
                // Hoisted before the statement; reaching here is an internal error.
                quote!(::core::unreachable!())
            }
        }
    }

    /// A literal of type `ty`.
    fn lit_code(&self, l: &Lit, ty: &Ty) -> TokenStream {
        let d = &self.p.d;
        let t = self.elem(ty);
        match (l, ty.dtype()) {
            (Lit::Bool(b), _) => quote!(#b),
            (Lit::Int(v), Some(DType::I32)) => {
                let v = *v as i32;
                quote!((#v))
            }
            (Lit::Int(v), Some(DType::I64)) => quote!((#v)),
            (Lit::Int(v), _) => quote!(<#t as #d::Elem>::from_i64(#v)),
            (Lit::Float(v), _) if v.is_finite() => quote!(<#t as #d::Elem>::from_f64(#v)),
            (Lit::Float(v), _) => {
                let f = if v.is_nan() {
                    quote!(f64::NAN)
                } else if *v > 0.0 {
                    quote!(f64::INFINITY)
                } else {
                    quote!(f64::NEG_INFINITY)
                };
                quote!(<#t as #d::Elem>::from_f64(#f))
            }
        }
    }

    /// Whether `e` may be computed at `at` whether or not its value is used: it accesses no
    /// memory (a load read whole for the chunk ahead is read from its registers) and calls no
    /// function of more than a few instructions (transcendental, square root, division), and
    /// nothing in it is hoisted (a `dot` or reduction).
    fn speculable(&self, e: ExprId, at: &At) -> bool {
        if self.temps.contains_key(&e) {
            return true;
        }
        match &self.k.exprs[e].kind {
            ExprKind::Load { .. } => matches!(at, At::Own) && self.prefetched.contains_key(&e),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) => self.speculable(v, at),
                _ => true,
            },
            ExprKind::Math(f, _) if f.is_transcendental() || matches!(f, MathFn::Sqrt | MathFn::Rsqrt) => false,
            ExprKind::Binary(BinOp::Div | BinOp::Rem, ..) => false,
            ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } | ExprKind::Atomic { .. } | ExprKind::Random { .. } => false,
            kind => kind.operands().into_iter().all(|c| self.speculable(c, at)),
        }
    }

    /// Local `l` as expression `id` reads it at `at`.
    fn local_code(&mut self, id: ExprId, l: LocalId, at: &At) -> TokenStream {
        let k = self.k;
        let (e, d) = (&k.exprs[id], &self.p.d);
        let t = self.elem(&e.ty);
        let ident = crate::expand_cpu::local_ident(k, l);
        match &self.kinds[l] {
            LocalKind::Scalar => quote!(#ident),
            LocalKind::Pure(init) | LocalKind::Inline(init) => self.ev(*init, at),
            LocalKind::Affine(init) => {
                let base = self.ev(*init, at);
                let off = format_ident!("{}_off", ident);
                match e.ty.elem {
                    Elem::Ptr(_) => quote!(#d::ptr_add(#base, #off)),
                    _ => quote!(<#t as #d::Num>::add(#base, #off)),
                }
            }
            LocalKind::Materialized => {
                let m = MatVar { ident, elem: t, numel: self.numel(id), layout: self.layouts[l] };
                self.read_mat(&m, at)
            }
        }
    }

    /// Load `id` at `at`: its element where the mask holds and the address is in its buffer,
    /// else `other` (a chunk read ahead whole is indexed instead).
    fn load_code(&mut self, id: ExprId, (ptr, mask, other): (ExprId, Option<ExprId>, Option<ExprId>), at: &At) -> TokenStream {
        let k = self.k;
        let (e, d) = (&k.exprs[id], &self.p.d);
        let t = self.elem(&e.ty);
        let other = |g: &mut Self| match other {
            Some(o) => g.operand(id, o, at),
            None => quote!(<#t as ::core::default::Default>::default()),
        };
        let mask_at = |g: &mut Self| mask.map(|m| g.operand(id, m, at));
        if matches!(at, At::Own) {
            let pre = self.prefetched.get(&id).cloned();
            if let Some((chunk, masked)) = pre {
                // A chunk read whole across the mask's edge: masked elements are `other`.
                return match mask_at(self).filter(|_| masked) {
                    Some(vm) => {
                        let o = other(self);
                        quote!(if #vm { #chunk[__v] } else { #o })
                    }
                    None => quote!(#chunk[__v]),
                };
            }
        }
        let p = self.operand(id, ptr, at);
        let o = other(self);
        let ok = self.in_bounds_code(ptr, &quote!(__a), e.span.start);
        let vm = mask_at(self).unwrap_or_else(|| quote!(true));
        quote!({ let __a = #p; if #vm && #ok { #d::load(__a) } else { #o } })
    }

    /// Atomic `id` at `at` (the whole value of its own `let`: evaluated once per element).
    fn atomic_code(&mut self, id: ExprId, op: AtomicOp, (ptr, val, cmp, mask): (ExprId, ExprId, Option<ExprId>, Option<ExprId>), (sem, scope): (Sem, Scope), at: &At) -> TokenStream {
        let k = self.k;
        let (e, d) = (&k.exprs[id], &self.p.d);
        let t = self.elem(&e.ty);
        // Evaluated once per element: it is the whole value of its own `let`.
        let p = self.operand(id, ptr, at);
        let v = self.operand(id, val, at);
        let ok = self.in_bounds_code(ptr, &quote!(__a), e.span.start);
        let vm = match mask {
            Some(m) => self.operand(id, m, at),
            None => quote!(true),
        };
        let (sem, scope) = (sem as u8, scope as u8);
        let f = format_ident!("{}", op.name());
        let call = match cmp {
            Some(c) => {
                let vc = self.operand(id, c, at);
                quote!(<#t as #d::AtomicElem>::cas::<#sem, #scope>(__a, #vc, #v))
            }
            None if matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor) => quote!(<#t as #d::AtomicInt>::#f::<#sem, #scope>(__a, #v)),
            None => quote!(<#t as #d::AtomicElem>::#f::<#sem, #scope>(__a, #v)),
        };
        quote!({ let __a = #p; if #vm && #ok { #call } else { <#t as ::core::default::Default>::default() } })
    }

    /// `program_id(axis)` (an `i32`). In an entry that may split its K loop, the program along
    /// x is the block's (`split.rs`), not the block index.
    pub(super) fn program_id_code(&self, axis: u8) -> TokenStream {
        let d = &self.p.d;
        if axis == 0 && self.split.is_some() {
            return quote!((__sk.pid as i32));
        }
        let a = axis as u32;
        quote!(#d::program_id(#a))
    }
}

/// The bits of the flat index of a block of shape `to` broadcast to `from` (NumPy's rules), given
/// which iteration bit each bit of `from`'s flat index is (`map`); `None` unless every
/// dimension is a power of two.
fn broadcast_bits(map: &[u32], from: &[usize], to: &[usize]) -> Option<Vec<u32>> {
    if !from.iter().chain(to).all(|d| d.is_power_of_two()) || map.len() != from.iter().product::<usize>().trailing_zeros() as usize {
        return None;
    }
    let mut bits = Vec::new();
    for i in (0..to.len()).rev() {
        let fi = i + from.len() - to.len();
        if to[i] != 1 {
            let lo = from[fi + 1..].iter().product::<usize>().trailing_zeros() as usize;
            bits.extend_from_slice(&map[lo..lo + to[i].trailing_zeros() as usize]);
        }
    }
    Some(bits)
}
