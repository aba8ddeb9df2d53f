//! The typing rules of the block language, one function per rule. Each returns the result
//! type, or the message of the error that the lowering reports at the offending expression.

use crate::ir::{BinOp, DType, Elem, Ty};
use crate::shape::{broadcast, shape_to_string, Dim, Shape};

/// Rule: operand shapes broadcast (NumPy rules; symbolic dims must be equal or 1).
pub fn check_broadcast(a: &Ty, b: &Ty, what: &str) -> Result<Shape, String> {
    broadcast(&a.shape, &b.shape).ok_or_else(|| {
        format!(
            "shape mismatch in {what}: cannot broadcast {} with {}",
            shape_to_string(&a.shape),
            shape_to_string(&b.shape)
        )
    })
}

/// Rule: a value broadcasts *to* a target shape without changing it (masks, `other`, stored values).
pub fn check_broadcast_to(v: &Ty, target: &[Dim], what: &str) -> Result<(), String> {
    match broadcast(&v.shape, target) {
        Some(s) if s == target => Ok(()),
        _ => Err(format!(
            "shape mismatch: {what} has shape {} but the pointer block has shape {}",
            shape_to_string(&v.shape),
            shape_to_string(target)
        )),
    }
}

/// Rule: dtype promotion of two operands. Weak values (literals, meta-parameters) adopt the
/// other operand's dtype; f16 with bf16 and signed with unsigned integers do not mix silently.
pub fn check_promote(a: &Ty, b: &Ty) -> Result<(DType, bool), String> {
    let (Some(da), Some(db)) = (a.dtype(), b.dtype()) else {
        return Err("pointers only support `+`/`-` with integer offsets".to_string());
    };
    let weak = a.weak && b.weak;
    let adopt = |weak_d: DType, strong_d: DType| -> Result<DType, String> {
        if weak_d == strong_d {
            Ok(strong_d)
        } else if weak_d == DType::Bool || strong_d == DType::Bool {
            Err(format!("cannot combine {weak_d} with {strong_d}: masks only combine with masks"))
        } else if !weak_d.is_float() || strong_d.is_float() {
            Ok(strong_d)
        } else {
            Ok(DType::F32)
        }
    };
    let d = match (a.weak, b.weak) {
        (true, false) => adopt(da, db)?,
        (false, true) => adopt(db, da)?,
        _ => strong_promote(da, db)?,
    };
    Ok((d, weak))
}

fn strong_promote(a: DType, b: DType) -> Result<DType, String> {
    use DType::*;
    if a == b {
        return Ok(a);
    }
    if a == Bool || b == Bool {
        return Err(format!("cannot combine {a} with {b}: masks only combine with masks"));
    }
    Ok(match (a.is_float(), b.is_float()) {
        (true, true) => match (a, b) {
            (F64, _) | (_, F64) => F64,
            (F16, BF16) | (BF16, F16) => {
                return Err("cannot mix f16 and bf16: convert one with `.to::<f32>()` or `.to::<f16>()`".to_string())
            }
            _ => F32,
        },
        (true, false) => a,
        (false, true) => b,
        (false, false) => {
            if a.is_signed_int() != b.is_signed_int() && a.bits() == b.bits() {
                return Err(format!("cannot mix {a} and {b} (signed and unsigned): convert one with `.to::<T>()`"));
            }
            if a.bits() >= b.bits() {
                a
            } else {
                b
            }
        }
    })
}

/// Rule: each operator accepts the dtypes it is defined for.
pub fn check_operator(op: BinOp, d: DType) -> Result<(), String> {
    let s = op.symbol();
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Min | BinOp::Max if d == DType::Bool => {
            Err(format!("`{s}` is not defined on masks (bool); combine masks with `&`, `|` and `!`"))
        }
        BinOp::And | BinOp::Or | BinOp::Xor if d.is_float() => {
            Err(format!("`{s}` needs integers or masks, found {d}"))
        }
        BinOp::Shl | BinOp::Shr if !d.is_int() => Err(format!("`{s}` needs integers, found {d}")),
        _ => Ok(()),
    }
}

/// Rule: `dot(a, b)` multiplies `[M, K]` by `[K, N]` blocks of one float dtype and gives f32.
pub fn check_dot(a: &Ty, b: &Ty, acc: Option<&Ty>) -> Result<Ty, String> {
    if a.shape.len() != 2 || b.shape.len() != 2 {
        return Err(format!(
            "dot needs two 2-D blocks, found {} and {}",
            shape_to_string(&a.shape),
            shape_to_string(&b.shape)
        ));
    }
    if a.shape[1] != b.shape[0] {
        return Err(format!(
            "dot shape mismatch: [{}, {}] x [{}, {}]: the inner dimensions {} and {} differ",
            a.shape[0], a.shape[1], b.shape[0], b.shape[1], a.shape[1], b.shape[0]
        ));
    }
    let (Some(da), Some(db)) = (a.dtype(), b.dtype()) else {
        return Err("dot operands must be values, not pointers: load them first".to_string());
    };
    // The 8-bit floats may be mixed (as `wgmma` allows), and so may i8 and u8.
    let same_family = da == db || (da.is_fp8() && db.is_fp8()) || (matches!(da, DType::I8 | DType::U8) && matches!(db, DType::I8 | DType::U8));
    if !same_family {
        let eight_bit = [da, db].iter().any(|d| d.is_fp8() || matches!(d, DType::I8 | DType::U8));
        let how = if eight_bit { "8-bit operands go with 8-bit operands: f8e4m3 with f8e5m2, i8 with u8".to_string() } else { format!("convert one with `.to::<{da}>()` or `.to::<{db}>()`") };
        return Err(format!("dot operands must have the same dtype, found {da} and {db}: {how}"));
    }
    let out_dtype = match da {
        DType::F16 | DType::BF16 | DType::F32 | DType::F8E4M3 | DType::F8E5M2 => DType::F32,
        DType::I8 | DType::U8 => DType::I32,
        _ => return Err(format!("dot supports f16, bf16, f32, f8e4m3 and f8e5m2 operands (f32 results) and i8 and u8 operands (i32 results), found {da}")),
    };
    let out = Ty::block(out_dtype, vec![a.shape[0].clone(), b.shape[1].clone()]);
    if let Some(acc) = acc {
        if acc.elem != Elem::Val(out_dtype) || acc.shape != out.shape {
            return Err(format!("dot accumulator must be {out}, found {acc}"));
        }
    }
    Ok(out)
}

/// Rule: a mask is a bool block (or scalar) broadcastable to the pointer block.
pub fn check_mask(mask: &Ty, ptr_shape: &[Dim]) -> Result<(), String> {
    if mask.elem != Elem::Val(DType::Bool) {
        return Err(format!("mask must be a bool block (from a comparison), found {mask}"));
    }
    check_broadcast_to(mask, ptr_shape, "the mask")
}

/// Rule: a value stored through (or loaded as `other` from) `Ptr<T>` has dtype T.
pub fn check_value_dtype(v: &Ty, ptr_dtype: DType, what: &str) -> Result<(), String> {
    match v.dtype() {
        Some(d) if d == ptr_dtype => Ok(()),
        Some(d) if v.weak && (d.is_float() == ptr_dtype.is_float() || !d.is_float()) && ptr_dtype != DType::Bool => Ok(()),
        Some(d) => Err(format!(
            "{what} has dtype {d} but the pointer is Ptr<{ptr_dtype}>: convert it with `.to::<{ptr_dtype}>()`"
        )),
        None => Err(format!("{what} must be a value, not a pointer")),
    }
}

/// Rule: block dimensions are powers of two or multiples of 16 in every declared instance
/// (16, 32, 48, 64, ... and 1, 2, 4, 8: tensor-core tiles come in multiples of 16).
pub fn check_pow2(len: i64) -> bool {
    len > 0 && ((len & (len - 1)) == 0 || len % 16 == 0)
}

/// The most elements a block holds (the backends size registers and shared memory by it).
pub const MAX_BLOCK_ELEMENTS: i64 = 1 << 40;

/// Rule: a block holds at most 2^40 elements in the instance whose meta values `value_of` gives.
pub fn check_block_elements(shape: &[Dim], value_of: &dyn Fn(&str) -> Option<i64>, instance: &str) -> Result<(), String> {
    let n = shape.iter().try_fold(1i64, |n, d| d.eval(value_of).and_then(|v| n.checked_mul(v)));
    if n.is_some_and(|n| n <= MAX_BLOCK_ELEMENTS) {
        return Ok(());
    }
    let count = n.map_or("more than 2^63".to_string(), |n| n.to_string());
    let instance = if instance.is_empty() { String::new() } else { format!(" in the instance {instance}") };
    Err(format!("this block of shape {} has {count} elements{instance}: a block holds at most 2^40 elements", shape_to_string(shape)))
}

/// Rule: same type on both sides of an assignment (loop-carried values keep their type).
pub fn check_assign(local: &Ty, value: &Ty, name: &str) -> Result<(), String> {
    if local.elem == value.elem && local.shape == value.shape {
        return Ok(());
    }
    let local_s = Ty { weak: false, ..local.clone() };
    Err(format!(
        "mismatched types: `{name}` is {local_s} but the assigned value is {}{}",
        Ty { weak: false, ..value.clone() },
        if local.shape != value.shape { " (a variable keeps its shape in loops and branches)" } else { "" }
    ))
}
