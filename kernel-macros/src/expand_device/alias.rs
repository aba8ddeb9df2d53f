//! Before planning: an immutable scalar `let` that only names another immutable local (`let
//! start_n = start_n;`, and the hidden local of a `multiple_of` hint whose check is proven) is
//! removed and its reads read that local. Within the alias's scope the two hold the same value,
//! and the plan's loop analyses then see the loop variable itself (a scalar local defined in a
//! loop is opaque to them: flash attention's `start_n = multiple_of(start_n, BLOCK_N)` would
//! otherwise cost the loop its copies ahead).

use super::*;

/// Removes the aliases of `k` (see the module documentation).
pub(super) fn inline_scalar_aliases(k: &mut Kernel) {
    let mut alias: HashMap<LocalId, LocalId> = HashMap::new();
    collect(k, &k.body, &mut alias);
    if alias.is_empty() {
        return;
    }
    let root = |mut l: LocalId| {
        while let Some(&src) = alias.get(&l) {
            l = src;
        }
        l
    };
    for e in &mut k.exprs {
        if let ExprKind::Local(l) = e.kind {
            e.kind = ExprKind::Local(root(l));
        }
    }
    retain_stmts(&mut k.body, &|s| !matches!(s, Stmt::Let { local, .. } if alias.contains_key(local)));
}

fn collect(k: &Kernel, stmts: &[Stmt], alias: &mut HashMap<LocalId, LocalId>) {
    for s in stmts {
        if let Stmt::Let { local, value } = s {
            if let ExprKind::Local(src) = k.exprs[*value].kind {
                let (l, from) = (&k.locals[*local], &k.locals[src]);
                if l.ty.is_scalar() && !l.mutable && !from.mutable && src != *local {
                    alias.insert(*local, src);
                }
            }
        }
        s.bodies().into_iter().for_each(|b| collect(k, b, alias));
    }
}
