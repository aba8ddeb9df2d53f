//! How each local is produced (`LocalKind`: pure, affine, inline, materialized) and which
//! pointer parameter each pointer local comes from.

use super::*;

#[derive(Clone, Debug)]
pub(crate) enum LocalKind {
    Scalar,
    Pure(ExprId),
    Affine(ExprId),
    /// A load, or an elementwise value, used once, right after it is defined (see
    /// `single_use_values`): evaluated at its use (so a `dot` operand goes from
    /// global memory straight to shared memory, and a block of a memory-bound kernel takes no
    /// registers before it is needed).
    Inline(ExprId),
    Materialized,
}

impl DevicePlan<'_> {
    pub(crate) fn classify_locals(&self) -> Vec<LocalKind> {
        let k = self.k;
        let mut lets: HashMap<LocalId, ExprId> = HashMap::new();
        let mut assigns: HashMap<LocalId, Vec<ExprId>> = HashMap::new();
        fn walk(stmts: &[Stmt], lets: &mut HashMap<LocalId, ExprId>, assigns: &mut HashMap<LocalId, Vec<ExprId>>) {
            for s in stmts {
                match s {
                    Stmt::Let { local, value } => {
                        lets.insert(*local, *value);
                    }
                    Stmt::Assign { local, value } => assigns.entry(*local).or_default().push(*value),
                    _ => s.bodies().into_iter().for_each(|b| walk(b, lets, assigns)),
                }
            }
        }
        walk(&k.body, &mut lets, &mut assigns);
        let mut uses = vec![0usize; k.locals.len()];
        for e in &k.exprs {
            if let ExprKind::Local(l) = e.kind {
                uses[l] += 1;
            }
        }
        let inline = self.single_use_values(&lets, &assigns, &uses);
        let mut kinds: Vec<LocalKind> = Vec::with_capacity(k.locals.len());
        for (id, l) in k.locals.iter().enumerate() {
            let kind = if l.ty.is_scalar() {
                LocalKind::Scalar
            } else {
                // A value with transcendental functions read more than once is computed once.
                let costly = |v: ExprId| uses[id] > 1 && self.has_transcendental(v, &kinds);
                match (lets.get(&id), assigns.get(&id)) {
                    (Some(v), None) if self.is_pure(*v, &kinds) && !costly(*v) => LocalKind::Pure(*v),
                    (Some(v), None) if inline.contains(&id) => LocalKind::Inline(*v),
                    (Some(v), Some(asg)) if self.is_pure(*v, &kinds) && asg.iter().all(|a| self.is_affine_step(id, *a)) => {
                        LocalKind::Affine(*v)
                    }
                    _ => LocalKind::Materialized,
                }
            };
            kinds.push(kind);
        }
        kinds
    }

    /// Immutable block locals evaluated at their use rather than stored, referenced exactly
    /// once: those defined by a `load`; and, in blocks read in chunks (vectorized) of a kernel
    /// without `dot`, those defined by any elementwise expression (a conversion of a load, the arithmetic of layer norm's
    /// normalization...): where its phase is split, the value takes no registers until then (a
    /// stored block takes one per value). An elementwise value without transcendental
    /// functions may be read more than once when every read is in the one statement that uses
    /// it, in that statement's own phase (`x * x` of layer norm's variance): each read computes
    /// it again from the same chunk registers, and the code generator computes a `where_` of
    /// such values as a select, so the copies are one (see `DevGen::speculable`). Read by two
    /// statements, a value is stored: evaluated at both, its loads' chunks take more registers
    /// than the stored block (see BENCHMARKS.md, session 28).
    /// The use is a `let`, assignment or store that follows the definition with only `let`s in
    /// between, none of them an atomic. `uses`: how many expressions read each local.
    pub(crate) fn single_use_values(&self, lets: &HashMap<LocalId, ExprId>, assigns: &HashMap<LocalId, Vec<ExprId>>, uses: &[usize]) -> Vec<LocalId> {
        let k = self.k;
        let mut out = Vec::new();
        let has_dots = k.exprs.iter().any(|e| matches!(e.kind, ExprKind::Dot { .. }));
        let chunked = |v: ExprId| self.vec_width(self.shapes[v].iter().product()) >= 2;
        // Whether the value `v` of a local read once may be evaluated at its use.
        let inlinable = |v: ExprId| match &k.exprs[v].kind {
            ExprKind::Load { .. } => true,
            _ if has_dots || !chunked(v) => false,
            _ => self.is_elementwise(v),
        };
        #[allow(clippy::too_many_arguments)]
        // Through the locals it reads, by their defining values (not classified yet: one that
        // is evaluated at each use computes its functions again at each read of this value).
        let has_transcendental = |v: ExprId| calls_transcendental(k, v, lets);
        #[allow(clippy::too_many_arguments)]
        fn scan(k: &Kernel, stmts: &[Stmt], uses: &[usize], lets: &HashMap<LocalId, ExprId>, assigns: &HashMap<LocalId, Vec<ExprId>>, inlinable: &dyn Fn(ExprId) -> bool, has_transcendental: &dyn Fn(ExprId) -> bool, out: &mut Vec<LocalId>) {
            for (i, s) in stmts.iter().enumerate() {
                for b in s.bodies() {
                    scan(k, b, uses, lets, assigns, inlinable, has_transcendental, out);
                }
                match s {
                    Stmt::Let { local, value } => {
                        let l = *local;
                        // Read more than once: a load's chunks are read once for all its reads,
                        // but other values are computed again at each (see below).
                        let once = uses[l] == 1 || (!matches!(k.exprs[*value].kind, ExprKind::Load { .. }) && !has_transcendental(*value));
                        if !inlinable(*value) || !once || assigns.contains_key(&l) || k.locals[l].ty.is_scalar() || !lets.contains_key(&l) {
                            continue;
                        }
                        for later in &stmts[i + 1..] {
                            let roots: Vec<ExprId> = match later {
                                Stmt::Let { value, .. } | Stmt::Assign { value, .. } => vec![*value],
                                Stmt::Store { ptr, value, mask, .. } => {
                                    let mut v = vec![*ptr, *value];
                                    v.extend(mask.iter().copied());
                                    v
                                }
                                _ => break,
                            };
                            if roots.iter().any(|r| uses_local(k, *r, l)) {
                                // Every read in this statement: computed at each within one phase.
                                let mut reads = HashSet::new();
                                roots.iter().for_each(|r| local_reads(k, *r, l, &mut reads));
                                if uses[l] == 1 || reads.len() == uses[l] {
                                    out.push(l);
                                }
                                break;
                            }
                            // Not moved past another statement, nor past an atomic, which may
                            // change the memory it reads.
                            if !matches!(later, Stmt::Let { .. }) || super::kloop::body_writes(k, std::slice::from_ref(later)) {
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        scan(k, &k.body, uses, lets, assigns, &inlinable, &has_transcendental, &mut out);
        out
    }

    /// Whether `e` computes each element from the same element of its operands (loads
    /// included), without shared memory: no `dot`, reduction, scan or atomic, no reshaping.
    pub(crate) fn is_elementwise(&self, e: ExprId) -> bool {
        let kind = &self.k.exprs[e].kind;
        match kind {
            ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } | ExprKind::Atomic { .. } | ExprKind::Reshape(_) => false,
            _ => kind.operands().into_iter().all(|c| self.is_elementwise(c)),
        }
    }

    pub(crate) fn is_pure(&self, e: ExprId, kinds: &[LocalKind]) -> bool {
        let k = self.k;
        let ex = &k.exprs[e];
        match &ex.kind {
            ExprKind::Load { .. } | ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } | ExprKind::Atomic { .. } => false,
            // Immutable values never change, so an expression over them can be re-evaluated
            // at any later use instead of being stored.
            ExprKind::Local(l) => match kinds.get(*l) {
                Some(LocalKind::Scalar) | Some(LocalKind::Materialized) => !k.locals[*l].mutable,
                Some(LocalKind::Pure(_)) => true,
                _ => false,
            },
            _ => ex.kind.operands().into_iter().all(|c| self.is_pure(c, kinds)),
        }
    }

    /// Whether evaluating `e` (through the pure locals it reads) calls a transcendental function.
    pub(crate) fn has_transcendental(&self, e: ExprId, kinds: &[LocalKind]) -> bool {
        match &self.k.exprs[e].kind {
            ExprKind::Math(f, _) if f.is_transcendental() => true,
            ExprKind::Local(l) => matches!(kinds.get(*l), Some(LocalKind::Pure(v)) if self.has_transcendental(*v, kinds)),
            kind => kind.operands().into_iter().any(|c| self.has_transcendental(c, kinds)),
        }
    }

    /// `x = x + s`, `x = x - s` or `x = ptr_add(x, s)` with a uniform scalar `s`.
    pub(crate) fn is_affine_step(&self, l: LocalId, v: ExprId) -> bool {
        let k = self.k;
        let refers_to_self = |e: ExprId| -> bool { uses_local(k, e, l) };
        match &k.exprs[v].kind {
            ExprKind::PtrAdd(a, s) | ExprKind::Binary(BinOp::Add | BinOp::Sub, a, s) => {
                matches!(k.exprs[*a].kind, ExprKind::Local(x) if x == l) && k.exprs[*s].ty.is_scalar() && !refers_to_self(*s)
            }
            _ => false,
        }
    }

    /// The `load` a `dot` operand is staged from: its own, or, for a resident operand that
    /// may be, the one that defines it (`reloads`).
    pub(crate) fn staged_load(&self, e: ExprId) -> Option<ExprId> {
        self.load_of(e).or_else(|| self.reloads.get(&e).copied())
    }

    /// The `load` an operand comes from (directly or through a single-use local).
    pub(crate) fn load_of(&self, e: ExprId) -> Option<ExprId> {
        match &self.k.exprs[e].kind {
            ExprKind::Load { .. } => Some(e),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Inline(v) => self.load_of(v),
                _ => None,
            },
            _ => None,
        }
    }

    /// The pointer parameter each local's pointer values come from (`None` for other locals, or
    /// when the values come from different parameters).
    pub(crate) fn pointer_roots(&self) -> Vec<Option<usize>> {
        let k = self.k;
        let values = assigned_values(k);
        let mut roots: Vec<Option<usize>> = vec![None; k.locals.len()];
        // Pointer locals are defined from parameters and earlier locals: a few rounds settle.
        for _ in 0..4 {
            for (l, vs) in &values {
                if !matches!(k.locals[*l].ty.elem, Elem::Ptr(_)) {
                    continue;
                }
                let found: Vec<Option<usize>> = vs.iter().map(|v| self.root_with(*v, &roots, *l)).collect();
                roots[*l] = match found.iter().flatten().next() {
                    Some(r) if found.iter().all(|f| f.is_none_or(|x| x == *r)) && found.iter().any(|f| f.is_some()) => Some(*r),
                    _ => None,
                };
            }
        }
        roots
    }

    pub(crate) fn root_with(&self, e: ExprId, roots: &[Option<usize>], this: LocalId) -> Option<usize> {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Param(i) => matches!(k.params[*i].kind, ParamKind::Ptr(_)).then_some(*i),
            ExprKind::PtrAdd(p, _) => self.root_with(*p, roots, this),
            ExprKind::Local(l) if *l == this => None,
            ExprKind::Local(l) => roots[*l],
            ExprKind::ExpandDims(x, _) | ExprKind::Reshape(x) | ExprKind::BroadcastTo(x) | ExprKind::Trans(x) => self.root_with(*x, roots, this),
            ExprKind::Where(_, a, b) => {
                let (ra, rb) = (self.root_with(*a, roots, this), self.root_with(*b, roots, this));
                if ra == rb { ra } else { None }
            }
            _ => None,
        }
    }

    /// The pointer parameter the pointer block `ptr` is computed from.
    pub(crate) fn ptr_root(&self, ptr: ExprId) -> Option<usize> {
        self.root_with(ptr, &self.ptr_roots, usize::MAX)
    }
}

/// Whether evaluating `e` calls a transcendental function, also through the values that define
/// the locals it reads (`lets`).
fn calls_transcendental(k: &Kernel, e: ExprId, lets: &HashMap<LocalId, ExprId>) -> bool {
    match &k.exprs[e].kind {
        ExprKind::Math(f, _) if f.is_transcendental() => true,
        ExprKind::Local(l) => lets.get(l).is_some_and(|v| calls_transcendental(k, *v, lets)),
        kind => kind.operands().into_iter().any(|c| calls_transcendental(k, c, lets)),
    }
}

/// The expressions in `e` that read local `l` in the phase of `e`'s own elements: not through
/// other locals, and not inside a `dot`, reduction or scan (computed in phases of their own).
fn local_reads(k: &Kernel, e: ExprId, l: LocalId, out: &mut HashSet<ExprId>) {
    match &k.exprs[e].kind {
        ExprKind::Local(x) if *x == l => {
            out.insert(e);
        }
        ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } => {}
        other => other.operands().into_iter().for_each(|c| local_reads(k, c, l, out)),
    }
}
