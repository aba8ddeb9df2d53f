//! Floating-point contraction, block IR → block IR: `a * b + c`, `c + a * b`, `a * b - c` and
//! `c - a * b` on f32 or f64 values become `fma(a, b, ±c)` (`fma(-a, b, c)`), one rounding
//! instead of two, as Triton's compiler contracts them by default (`enable_fp_fusion`) and as
//! the GPU's `FFMA` computes them in one instruction. It runs on the lowered kernel that both
//! backends expand, so the CPU backend (`mul_add`) and the GPU (`fma.rn`) compute the same
//! bits. `#[kernel(fp_fusion = false)]` keeps every product rounded on its own.
//!
//! The product must be the sum's operand itself, of the sum's type (a product stored in a local
//! first, or converted, is rounded where it is written). f16 and bf16 arithmetic is left as
//! written.

use crate::ir::{BinOp, DType, Elem, Expr, ExprId, ExprKind, Kernel, MathFn, UnOp};

/// Contracts every product-then-sum of `k` in place.
pub fn contract(k: &mut Kernel) {
    for id in 0..k.exprs.len() {
        let ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), x, y) = k.exprs[id].kind else { continue };
        let ty = &k.exprs[id].ty;
        if ty.weak || !matches!(ty.elem, Elem::Val(DType::F32 | DType::F64)) {
            continue;
        }
        let product = |e: ExprId| match k.exprs[e].kind {
            ExprKind::Binary(BinOp::Mul, a, b) if k.exprs[e].ty.elem == k.exprs[id].ty.elem => Some((a, b)),
            _ => None,
        };
        let args = match (op, product(x), product(y)) {
            (BinOp::Add, Some((a, b)), _) => [a, b, y],
            (BinOp::Add, None, Some((a, b))) => [a, b, x],
            (BinOp::Sub, Some((a, b)), _) => [a, b, neg(k, y)],
            (BinOp::Sub, None, Some((a, b))) => [neg(k, a), b, x],
            _ => continue,
        };
        k.exprs[id].kind = ExprKind::Math(MathFn::Fma, args.to_vec());
    }
}

/// `-e`, a new expression of `e`'s type (negation is exact).
fn neg(k: &mut Kernel, e: ExprId) -> ExprId {
    let Expr { ty, span, .. } = k.exprs[e].clone();
    k.exprs.push(Expr { kind: ExprKind::Unary(UnOp::Neg, e), ty, span });
    k.exprs.len() - 1
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    /// The block IR of `src`'s first instance under `#[kernel(attr)]`.
    fn lowered(attr: &str, src: &str) -> String {
        let f: syn::ItemFn = syn::parse_str(src).expect("test kernel parses");
        let out = crate::kernel::expand(attr.parse().unwrap(), f, &HashMap::new()).to_string();
        assert!(!out.contains("compile_error"), "the test kernel has errors: {out}");
        crate::kernel::LOWERED.with(|l| l.take()).remove(0).0.to_string()
    }

    const SRC: &str = r#"
        fn k<const B: i32>(x: Ptr<f32>, h: Ptr<f16>, d: Ptr<f64>, s: f32) {
            let i = arange(0, B);
            let a = load(x + i);
            let c = load(x + B + i);
            store(x + i, a * s + c);
            store(x + B + i, c - a * a);
            store(x + 2 * B + i, a * c - 1.0);
            let p = a * c;
            store(x + 3 * B + i, p + c);
            let g = load(h + i);
            store(h + i, g * g + g);
            let e = load(d + i);
            store(d + i, 2.0 * e + e);
        }"#;

    #[test]
    fn products_followed_by_a_sum_become_one_fma() {
        let ir = lowered("B = 64", SRC);
        // Either operand order, a difference either way (the subtrahend or a factor negated).
        assert!(ir.contains("fma(%a.1, s, %c.2)"), "{ir}");
        assert!(ir.contains("fma(-%a.1, %a.1, %c.2)"), "{ir}");
        assert!(ir.contains("fma(%a.1, %c.2, -1.0)"), "{ir}");
        // f64 too; a product stored in a local first is rounded there; f16 as written.
        assert!(ir.contains("fma(2.0, %e.5, %e.5)"), "{ir}");
        assert!(ir.contains("(%p.3 + %c.2)"), "{ir}");
        assert!(ir.contains("((%g.4 * %g.4) + %g.4)"), "{ir}");
        assert_eq!(ir.matches("fma(").count(), 4, "{ir}");
    }

    #[test]
    fn fp_fusion_false_rounds_every_product() {
        let ir = lowered("B = 64, fp_fusion = false", SRC);
        assert!(!ir.contains("fma("), "{ir}");
        assert!(ir.contains("((%a.1 * s) + %c.2)"), "{ir}");
    }
}
