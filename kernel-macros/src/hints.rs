//! Messages for the habits that Triton code brings to kernels: keyword arguments, the `tl.`
//! prefix, negative axes and misspelled names. Each function returns the text of the error that
//! names the fix; `lower.rs` reports it at the offending expression.

/// The positional form of a builtin and its parameter names, for keyword-argument errors.
pub fn builtin_signature(name: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match name {
        "load" => ("load(pointers, mask, other)", &["pointers", "ptr", "mask", "other"]),
        "store" => ("store(pointers, value, mask)", &["pointers", "ptr", "value", "mask"]),
        "dot" => ("dot(a, b, acc)", &["a", "b", "acc", "input", "other"]),
        "arange" => ("arange(start, end)", &["start", "end"]),
        "zeros" => ("zeros::<T>([d0, d1, ...])", &["shape"]),
        "full" => ("full::<T>([d0, ...], value)", &["shape", "value"]),
        "where_" => ("where_(condition, a, b)", &["condition", "a", "b", "x", "y"]),
        "program_id" => ("program_id(axis)", &["axis"]),
        "num_programs" => ("num_programs(axis)", &["axis"]),
        "cdiv" => ("cdiv(a, b)", &["a", "b", "x", "div"]),
        "min" => ("min(a, b)", &["a", "b"]),
        "max" => ("max(a, b)", &["a", "b"]),
        "minimum" => ("minimum(a, b)", &["a", "b", "x", "y"]),
        "maximum" => ("maximum(a, b)", &["a", "b", "x", "y"]),
        "sum" => ("sum(x, axis)", &["x", "input", "axis"]),
        "trans" => ("trans(x)", &["x", "input"]),
        "expand_dims" => ("expand_dims(x, axis)", &["x", "input", "axis"]),
        "reshape" => ("reshape(x, [d0, d1, ...])", &["x", "input", "shape"]),
        "broadcast_to" => ("broadcast_to(x, [d0, d1, ...])", &["x", "input", "shape"]),
        "atomic_add" => ("atomic_add(pointers, val, mask, sem, scope)", ATOMIC_PARAMS),
        "atomic_max" => ("atomic_max(pointers, val, mask, sem, scope)", ATOMIC_PARAMS),
        "atomic_min" => ("atomic_min(pointers, val, mask, sem, scope)", ATOMIC_PARAMS),
        "atomic_and" => ("atomic_and(pointers, val, mask, sem, scope)", ATOMIC_PARAMS),
        "atomic_or" => ("atomic_or(pointers, val, mask, sem, scope)", ATOMIC_PARAMS),
        "atomic_xor" => ("atomic_xor(pointers, val, mask, sem, scope)", ATOMIC_PARAMS),
        "atomic_xchg" => ("atomic_xchg(pointers, val, mask, sem, scope)", ATOMIC_PARAMS),
        "atomic_cas" => ("atomic_cas(pointers, cmp, val, sem, scope)", &["pointer", "ptr", "cmp", "val", "sem", "scope"]),
        "device_assert" => ("device_assert(condition, \"message\")", &["cond", "msg"]),
        "device_print" => ("device_print(\"prefix\", values...)", &["prefix", "args"]),
        "static_assert" => ("static_assert(condition, \"message\")", &["cond", "msg"]),
        "static_print" => ("static_print(values...)", &["values"]),
        _ => return None,
    })
}

const ATOMIC_PARAMS: &[&str] = &["pointer", "ptr", "val", "mask", "sem", "scope"];

/// The positional form of a block method and its parameter names.
pub fn method_signature(name: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match name {
        "sum" => ("x.sum(axis)", &["axis"]),
        "max" => ("x.max(axis)", &["axis"]),
        "min" => ("x.min(axis)", &["axis"]),
        "expand_dims" => ("x.expand_dims(axis)", &["axis"]),
        "reshape" => ("x.reshape([d0, d1, ...])", &["shape"]),
        "broadcast_to" => ("x.broadcast_to([d0, d1, ...])", &["shape"]),
        "to" => ("x.to::<T>()", &[]),
        _ => return None,
    })
}

/// Triton keywords that have no parameter here, with how to get their behaviour.
fn keyword_equivalent(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "allow_tf32" | "input_precision" | "max_num_imprecise_acc" => {
            "`dot` multiplies f32 blocks in f32; convert the operands with `.to::<f16>()` or `.to::<bf16>()` to use tensor cores"
        }
        "out_dtype" => "convert the result with `.to::<T>()`",
        "dtype" => "give the dtype as a type argument, like `zeros::<f32>([BLOCK])`, or convert with `.to::<T>()`",
        "cache_modifier" | "eviction_policy" | "volatile" => "cache hints are chosen by the compiler: remove it",
        "boundary_check" | "padding_option" => "mask the access instead: `load(pointers, mask, other)`",
        "keep_dims" => "the reduced axis is removed; put it back with `.expand_dims(axis)`",
        "return_indices" | "return_indices_tie_break_left" => "reductions return values only",
        "sanitize_overflow" | "fp_downcast_rounding" => "it has no equivalent: remove it",
        _ => return None,
    })
}

/// The error for `keyword = value` among the arguments of `call` (positional form `sig`, known
/// parameter names `params`).
pub fn keyword_arg_message(keyword: &str, call: &str, sig: Option<(&str, &[&str])>) -> String {
    let prefix = "keyword arguments are not supported";
    match sig {
        Some((sig, params)) if params.contains(&keyword) => format!("{prefix}: pass `{keyword}` positionally: `{sig}`"),
        _ => match (keyword_equivalent(keyword), sig) {
            (Some(how), _) => format!("{prefix}, and `{keyword}` has no equivalent here: {how}"),
            (None, Some((sig, _))) => format!("{prefix}, and `{call}` has no parameter `{keyword}`: `{sig}`"),
            (None, None) => format!("{prefix}: pass the arguments of `{call}` positionally"),
        },
    }
}

/// `tl.float16` and friends: the Rust name of a Triton dtype.
pub fn triton_dtype(name: &str) -> Option<&'static str> {
    Some(match name {
        "float16" => "f16",
        "bfloat16" => "bf16",
        "float32" => "f32",
        "float64" => "f64",
        "int32" => "i32",
        "uint32" => "u32",
        "int64" => "i64",
        "int1" => "bool",
        _ => return None,
    })
}

/// The error for `tl.name(...)` / `tl::name(...)`; `known` says whether `name` is a builtin.
pub fn tl_prefix_message(name: &str, known: bool, builtins: &str) -> String {
    if known {
        format!("drop the `tl.` prefix: the block language's functions are in scope as `{name}(...)`")
    } else {
        format!("drop the `tl.` prefix: the block language's functions are in scope without it, but `{name}` is not one of them; it provides {builtins}")
    }
}

/// The error for a negative axis literal `-k` where axes run from 0 to `max`; `write(axis)`
/// spells the call with a given axis.
pub fn negative_axis_message(k: u64, max: usize, write: &dyn Fn(usize) -> String) -> String {
    let count = max as u64 + 1;
    if (1..=count).contains(&k) {
        let axis = (count - k) as usize;
        format!("negative axes are not supported: write the axis as a non-negative integer, here `{}`", write(axis))
    } else {
        format!("negative axes are not supported: write the axis as a non-negative integer from 0 to {max}")
    }
}

/// Levenshtein distance between two names (by characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb { prev } else { 1 + prev.min(cur).min(row[j]) };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a likely misspelling (at most
/// one edit per three characters, and never the name itself).
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let limit = (name.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name || c == "_" {
            continue;
        }
        let d = edit_distance(&name.to_lowercase(), &c.to_lowercase());
        if d <= limit && best.is_none_or(|(bd, bc)| d < bd || d == bd && c < bc) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("offsets", "offsets"), 0);
        assert_eq!(edit_distance("ofsets", "offsets"), 1);
        assert_eq!(edit_distance("lod", "load"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        let names = ["offsets", "mask", "x_ptr", "leaky_relu"];
        assert_eq!(did_you_mean("ofsets", names).as_deref(), Some("offsets"));
        assert_eq!(did_you_mean("leaky_rlu", names).as_deref(), Some("leaky_relu"));
        assert_eq!(did_you_mean("stride", names), None);
        assert_eq!(did_you_mean("mask", names), None);
        assert_eq!(did_you_mean("Mask", names).as_deref(), Some("mask"));
    }

    #[test]
    fn keyword_messages() {
        let m = keyword_arg_message("mask", "load", builtin_signature("load"));
        assert_eq!(m, "keyword arguments are not supported: pass `mask` positionally: `load(pointers, mask, other)`");
        let m = keyword_arg_message("allow_tf32", "dot", builtin_signature("dot"));
        assert!(m.contains("`allow_tf32` has no equivalent"), "{m}");
        let m = keyword_arg_message("foo", "load", builtin_signature("load"));
        assert!(m.contains("`load` has no parameter `foo`"), "{m}");
    }

    #[test]
    fn negative_axes() {
        let m = negative_axis_message(1, 1, &|a| format!("x.sum({a})"));
        assert!(m.ends_with("here `x.sum(1)`"), "{m}");
        let m = negative_axis_message(3, 1, &|a| format!("x.sum({a})"));
        assert!(m.ends_with("from 0 to 1"), "{m}");
    }
}
