//! Affine analysis of integer and pointer blocks: an expression that is a uniform base plus,
//! along each axis, the axis index times a stride (index arithmetic built from `arange`,
//! broadcasts, sums, and products with uniform scalars) has per-axis strides, each a constant
//! known when the kernel is compiled or a run-time value. The plan uses them to pick, before run
//! time, the axis along which a pointer block is contiguous, or to leave the choice to run time.

use super::*;

/// The stride of an affine block along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stride {
    /// Known when the kernel is compiled (in elements for pointers).
    Const(i64),
    /// A uniform value known at run time.
    Runtime,
}

impl Stride {
    fn add(self, o: Stride) -> Stride {
        match (self, o) {
            (Stride::Const(a), Stride::Const(b)) => Stride::Const(a.wrapping_add(b)),
            _ => Stride::Runtime,
        }
    }

    fn scale(self, by: Stride) -> Stride {
        match (self, by) {
            (Stride::Const(0), _) | (_, Stride::Const(0)) => Stride::Const(0),
            (Stride::Const(a), Stride::Const(b)) => Stride::Const(a.wrapping_mul(b)),
            _ => Stride::Runtime,
        }
    }
}

impl DevicePlan<'_> {
    /// The per-axis strides of `e` (one per axis of its shape) when it is affine in its
    /// indices; `None` otherwise (loads, remainders, comparisons, ...). Integer wrap-around is
    /// not modelled: callers check addresses at run time before relying on contiguity.
    pub(crate) fn strides(&self, e: ExprId) -> Option<Vec<Stride>> {
        let k = self.k;
        let shape = &self.shapes[e];
        let int = |x: ExprId| matches!(k.exprs[x].ty.dtype(), Some(DType::I32 | DType::I64 | DType::U32)) || matches!(k.exprs[x].ty.elem, Elem::Ptr(_));
        if shape.is_empty() {
            // A uniform scalar: no axes.
            return Some(Vec::new());
        }
        // An operand broadcast to `shape` (right-aligned; new and unit axes do not move).
        let aligned = |x: ExprId| -> Option<Vec<Stride>> {
            let sx = &self.shapes[x];
            let inner = self.strides(x)?;
            let pad = shape.len().checked_sub(sx.len())?;
            Some((0..shape.len()).map(|i| if i < pad || sx[i - pad] == 1 { Stride::Const(0) } else { inner[i - pad] }).collect())
        };
        match &k.exprs[e].kind {
            ExprKind::Arange { .. } => Some(vec![Stride::Const(1)]),
            ExprKind::Full(_) => Some(vec![Stride::Const(0); shape.len()]),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.strides(init),
                _ => None,
            },
            ExprKind::ExpandDims(x, ax) => {
                let mut s = self.strides(*x)?;
                s.insert((*ax).min(s.len()), Stride::Const(0));
                Some(s)
            }
            ExprKind::Reshape(x) if self.shapes[*x] == *shape => self.strides(*x),
            ExprKind::BroadcastTo(x) => aligned(*x),
            ExprKind::Cast(x) if int(e) && int(*x) => aligned(*x),
            ExprKind::Unary(UnOp::Neg, x) if int(e) => Some(aligned(*x)?.into_iter().map(|s| s.scale(Stride::Const(-1))).collect()),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) if int(e) => {
                let (sa, sb) = (aligned(*a)?, aligned(*b)?);
                let neg = if *op == BinOp::Sub { Stride::Const(-1) } else { Stride::Const(1) };
                Some(sa.into_iter().zip(sb).map(|(x, y)| x.add(y.scale(neg))).collect())
            }
            ExprKind::PtrAdd(p, o) => {
                let (sp, so) = (aligned(*p)?, aligned(*o)?);
                Some(sp.into_iter().zip(so).map(|(x, y)| x.add(y)).collect())
            }
            ExprKind::Binary(BinOp::Mul, a, b) if int(e) => {
                let (sa, sb) = (aligned(*a)?, aligned(*b)?);
                let uniform = |s: &[Stride]| s.iter().all(|x| *x == Stride::Const(0));
                let (x, c) = if uniform(&sb) { (sa, *b) } else if uniform(&sa) { (sb, *a) } else { return None };
                let by = self.constant(c).map_or(Stride::Runtime, Stride::Const);
                Some(x.into_iter().map(|s| s.scale(by)).collect())
            }
            _ => None,
        }
    }

    /// The value of an integer expression that is the same constant everywhere (a literal, a
    /// meta-parameter, or a block full of one), if known when the kernel is compiled.
    fn constant(&self, e: ExprId) -> Option<i64> {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Lit(Lit::Int(v)) => Some(*v),
            ExprKind::Meta(i) => self.vals.get(&k.metas[*i].name).copied(),
            ExprKind::Full(v) | ExprKind::BroadcastTo(v) | ExprKind::ExpandDims(v, _) => self.constant(*v),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.constant(init),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the value of `e` may change along axis `axis` of its shape: a block reaches it
    /// only through broadcasts, unit axes and elementwise operations from values that vary
    /// there (an `arange` along it, a load or a materialized value that is not one element wide
    /// there). A mask that does not vary along a chunk is evaluated once per chunk.
    pub(crate) fn varies_along(&self, e: ExprId, axis: usize) -> bool {
        let k = self.k;
        let shape = &self.shapes[e];
        if axis >= shape.len() || shape[axis] == 1 {
            return false;
        }
        // The same axis of an operand, right-aligned; `None` when the operand lacks it.
        let child = |c: ExprId| (axis + self.shapes[c].len()).checked_sub(shape.len());
        let sub = |c: ExprId| child(c).is_some_and(|a| self.varies_along(c, a));
        match &k.exprs[e].kind {
            ExprKind::Full(_) | ExprKind::Param(_) | ExprKind::Meta(_) | ExprKind::Lit(_) | ExprKind::ProgramId(_) | ExprKind::NumPrograms(_) => false,
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.varies_along(init, axis),
                LocalKind::Scalar => false,
                _ => true,
            },
            ExprKind::ExpandDims(x, ax) if *ax == axis => false,
            ExprKind::ExpandDims(x, ax) => self.varies_along(*x, if axis > *ax { axis - 1 } else { axis }),
            ExprKind::Reshape(x) => self.shapes[*x] != *shape || self.varies_along(*x, axis),
            ExprKind::BroadcastTo(x) => sub(*x),
            ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(_) | ExprKind::Math(..) | ExprKind::Where(..) | ExprKind::PtrAdd(..) => {
                k.exprs[e].kind.operands().into_iter().any(sub)
            }
            _ => true,
        }
    }

    /// The stride of `e` along axis `axis` alone: like [`Self::strides`], but the parts of `e`
    /// that do not vary along `axis` count as constant there whatever they are (the rows
    /// `(pid * BM + arange(0, BM)) % M` of `a + rows[:, None] * s + cols[None, :]` have no stride,
    /// yet the block steps by one along its columns).
    pub(crate) fn stride_along(&self, e: ExprId, axis: usize) -> Option<Stride> {
        let k = self.k;
        let shape = &self.shapes[e];
        if !self.varies_along(e, axis) {
            return Some(Stride::Const(0));
        }
        let int = |x: ExprId| matches!(k.exprs[x].ty.dtype(), Some(DType::I32 | DType::I64 | DType::U32)) || matches!(k.exprs[x].ty.elem, Elem::Ptr(_));
        // The same axis of an operand broadcast to `shape` (right-aligned).
        let sub = |x: ExprId| -> Option<Stride> {
            let a = (axis + self.shapes[x].len()).checked_sub(shape.len());
            match a {
                Some(a) if self.shapes[x][a] != 1 => self.stride_along(x, a),
                _ => Some(Stride::Const(0)),
            }
        };
        let uniform = |x: ExprId| (0..self.shapes[x].len()).all(|a| !self.varies_along(x, a));
        match &k.exprs[e].kind {
            ExprKind::Arange { .. } => Some(Stride::Const(1)),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.stride_along(init, axis),
                _ => None,
            },
            ExprKind::ExpandDims(x, ax) => match axis.cmp(ax) {
                std::cmp::Ordering::Equal => Some(Stride::Const(0)),
                std::cmp::Ordering::Less => self.stride_along(*x, axis),
                std::cmp::Ordering::Greater => self.stride_along(*x, axis - 1),
            },
            ExprKind::Reshape(x) if self.shapes[*x] == *shape => self.stride_along(*x, axis),
            ExprKind::BroadcastTo(x) => sub(*x),
            ExprKind::Cast(x) if int(e) && int(*x) => sub(*x),
            ExprKind::Unary(UnOp::Neg, x) if int(e) => Some(sub(*x)?.scale(Stride::Const(-1))),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) if int(e) => {
                let neg = if *op == BinOp::Sub { Stride::Const(-1) } else { Stride::Const(1) };
                Some(sub(*a)?.add(sub(*b)?.scale(neg)))
            }
            ExprKind::PtrAdd(p, o) => Some(sub(*p)?.add(sub(*o)?)),
            ExprKind::Binary(BinOp::Mul, a, b) if int(e) => {
                let (x, c) = if uniform(*b) { (*a, *b) } else if uniform(*a) { (*b, *a) } else { return None };
                Some(sub(x)?.scale(self.constant(c).map_or(Stride::Runtime, Stride::Const)))
            }
            _ => None,
        }
    }

    /// Whether a 2-D pointer block steps by one element along its first axis and not along its
    /// second (as the transposed view `k_ptr + cols[None, :] * stride + offs_d[:, None]` does):
    /// its tile is then copied in chunks along the columns.
    pub(crate) fn contiguous_down(&self, ptr: ExprId) -> bool {
        matches!(self.strides(ptr).as_deref(), Some([Stride::Const(1), s]) if *s != Stride::Const(1))
    }
}

#[cfg(test)]
mod tests {
    use super::Stride;

    #[test]
    fn strides_combine() {
        assert_eq!(Stride::Const(2).add(Stride::Const(3)), Stride::Const(5));
        assert_eq!(Stride::Const(2).add(Stride::Runtime), Stride::Runtime);
        assert_eq!(Stride::Runtime.scale(Stride::Const(0)), Stride::Const(0));
        assert_eq!(Stride::Const(0).scale(Stride::Runtime), Stride::Const(0));
        assert_eq!(Stride::Const(1).scale(Stride::Runtime), Stride::Runtime);
        assert_eq!(Stride::Const(4).scale(Stride::Const(-1)), Stride::Const(-4));
    }
}
