//! Where stores need block barriers. A program's threads run independently, so a store could
//! overtake another thread's earlier load of the same address (or a later load could miss it):
//! in a kernel that loads, a store has a barrier before and after it, except before it where
//! every thread is known to be past a barrier with no global access since (after a
//! software-pipelined loop, which ends with one, or after another store) and after it where
//! nothing follows (the kernel's last statement).

use super::*;

/// The barriers around one store statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StoreBarriers {
    pub(crate) before: bool,
    pub(crate) after: bool,
}

/// The key of statement `s` of the kernel in `DevicePlan::store_barriers`: its address (the
/// plan and the emitter read the same `Kernel`).
pub(crate) fn stmt_key(s: &Stmt) -> usize {
    std::ptr::from_ref(s) as usize
}

impl DevicePlan<'_> {
    /// The barriers around every store of `stmts` and the bodies inside them; `top`: the
    /// kernel's body, whose last statement has nothing after it.
    pub(crate) fn plan_barriers(&self, stmts: &[Stmt], top: bool, out: &mut HashMap<usize, StoreBarriers>) {
        // A nested body (a loop's, a branch's) starts with no barrier known behind it.
        let mut synced = false;
        for (i, s) in stmts.iter().enumerate() {
            let touches = self.touches_global(s);
            if matches!(s, Stmt::Store { .. }) {
                let before = !(synced && !self.touches_before_write(s, touches));
                out.insert(stmt_key(s), StoreBarriers { before, after: !(top && i + 1 == stmts.len()) });
            }
            for b in s.bodies() {
                self.plan_barriers(b, false, out);
            }
            // A pipelined loop and a store (a barrier after its writes) both end past a barrier.
            let pipelined = matches!(s, Stmt::For { var, .. } if matches!(self.loops.get(var), Some(Schedule::Pipelined(_))));
            synced = pipelined || matches!(s, Stmt::Store { .. }) || (synced && !touches);
        }
    }

    /// Whether a statement may read or write global memory: stores, loops, branches and
    /// returns, and assignments whose value loads (through inline locals too).
    pub(crate) fn touches_global(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } => self.loads_in(*value),
            // The fault record they may write is no memory the kernel reads.
            Stmt::Assert { .. } | Stmt::Print { .. } => DevGen::stmt_roots(s).into_iter().any(|e| self.loads_in(e)),
            Stmt::Barrier => false,
            _ => true,
        }
    }

    /// Whether what a statement evaluates before its own write may touch global memory: for a
    /// store, loads in its pointer, value or mask (hoisted `dot` operands included); for any
    /// other statement, `touches`.
    pub(crate) fn touches_before_write(&self, s: &Stmt, touches: bool) -> bool {
        match s {
            Stmt::Store { ptr, value, mask, .. } => self.loads_in(*ptr) || self.loads_in(*value) || mask.is_some_and(|m| self.loads_in(m)),
            _ => touches,
        }
    }

    pub(crate) fn loads_in(&self, e: ExprId) -> bool {
        match &self.k.exprs[e].kind {
            ExprKind::Load { .. } | ExprKind::Atomic { .. } => true,
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(x) | LocalKind::Affine(x) | LocalKind::Inline(x) => self.loads_in(x),
                LocalKind::Scalar | LocalKind::Materialized => false,
            },
            kind => kind.operands().into_iter().any(|c| self.loads_in(c)),
        }
    }
}
