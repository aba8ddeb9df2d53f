//! The fuzzer's random numbers and its dictionaries: names, literals, punctuation, expression
//! wrappers and attribute values that mutations and the grammar draw from.

/// xorshift64*: small, deterministic, good enough to pick mutations.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(super) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub(super) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

// dictionaries

pub(super) const BUILTINS: &[&str] = &[
    "program_id", "num_programs", "arange", "zeros", "full", "load", "store", "dot", "where_", "cdiv", "min", "max",
    "minimum", "maximum", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "floor", "ceil", "sum",
    "trans", "expand_dims", "reshape", "broadcast_to", "as_col", "as_row", "to", "step_by", "range", "Some", "None",
    "Block", "Ptr", "Func", "Option", "config", "configs", "key", "num_warps", "num_stages", "kernel", "autotune",
    "helper", "kernel_module", "INFINITY", "NEG_INFINITY", "NAN", "MAX", "MIN",
];
pub(super) const DTYPES: &[&str] = &["f16", "bf16", "f32", "f64", "i32", "u32", "i64", "bool", "u64", "usize", "isize", "u8", "i8", "i128", "f128", "char", "str"];
pub(super) const KEYWORDS: &[&str] = &[
    "let", "mut", "for", "in", "if", "else", "return", "fn", "const", "pub", "mod", "while", "loop", "break",
    "continue", "match", "as", "self", "Self", "crate", "super", "unsafe", "async", "move", "ref", "where", "impl",
    "struct", "true", "false", "_", "r#type", "r#fn", "r#match", "r#loop", "r#as", "r#in",
];
pub(super) const WORDS: &[&str] = &[
    "x", "y", "k", "n", "foo", "tmp", "tmp_0", "x_1", "acc", "mask", "offs", "BLOCK", "BLOCK_M", "BLOCK_SIZE",
    "ACT", "ACTIVATION", "leaky_relu", "__p_x", "__meta", "__ctx", "__tid", "__smem", "__f", "__j", "__grid",
    "__config", "__x", "Meta", "CONFIGS", "INFO", "AUTOTUNED", "launch", "launch_config", "grid", "core", "std",
    "kernel_runtime", "kernel_std", "main", "vec", "println", "String", "Vec", "Tensor", "e", "E", "π", "ÿ",
    "a_very_long_identifier_name_that_goes_on_and_on_and_on_and_on_and_on_and_on",
];
pub(super) const LITERALS: &[&str] = &[
    "0", "1", "2", "3", "7", "16", "31", "32", "33", "48", "64", "128", "1024", "65536", "2147483647", "2147483648",
    "4294967295", "4294967296", "9223372036854775807", "9223372036854775808", "18446744073709551615",
    "99999999999999999999999999999999999999", "1099511627776", "2199023255552", "4611686018427387904",
    "0x7fffffff", "0xffffffffffffffff", "0b1", "0o777", "1_000", "0i64", "1u32", "1i32", "7i64", "1u8", "1usize",
    "1i128", "3f32", "0.0", "1.0", "0.5", "1.5", "1e10", "1e38", "3.5e38", "65504.0", "65520.0", "1e308", "1e309",
    "1.7976931348623157e308", "1e-320", "1e-45", "5e-324", "0.0f32", "1e39f32", "1e308f32", "1e308f64", "2.5f64", "1e5f16",
    "0.1f16", "'a'", "\"s\"", "b'a'", "b\"bytes\"", "true", "false", "1.", "0e0",
];
pub(super) const EXTREME_INTS: &[&str] = &[
    "0", "-1", "1", "2147483647", "2147483648", "-2147483648", "4294967295", "4294967296", "9223372036854775807",
    "-9223372036854775807", "9223372036854775808", "1099511627776", "1099511627777", "4611686018427387904",
    "2305843009213693952", "1048576", "65536", "8388608", "48", "3", "-16", "64",
];
pub(super) const EXTREME_FLOATS: &[&str] = &[
    "0.0", "-0.0", "1e308", "-1e308", "1e309", "1.7976931348623157e308", "3.4028235e38", "3.5e38", "65504.0",
    "65520.0", "1e-320", "5e-324", "1e308f32", "1e39f32", "-1e39f32", "1e308f64", "f32::NAN", "f32::INFINITY",
    "f64::NEG_INFINITY", "f16::MAX", "bf16::MIN", "f64::MAX", "i64::MIN", "i64::MAX", "u32::MAX", "i32::MIN",
    "(0.0 / 0.0)",
];
pub(super) const PUNCTS: &[&str] = &[
    "+", "-", "*", "/", "%", "&", "|", "^", "!", "<", ">", "=", ",", ";", ".", ":", "#", "?", "@", "~", "$", "<=",
    ">=", "==", "!=", "&&", "||", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "..",
    "..=", "::", "->", "=>",
];
/// Expression wrappers: `{x}` is the wrapped expression.
pub(super) const WRAPPERS: &[&str] = &[
    "({x}).as_col()", "({x}).as_row()", "({x}).to::<f16>()", "({x}).to::<bf16>()", "({x}).to::<f64>()",
    "({x}).to::<i64>()", "({x}).to::<u32>()", "({x}).to::<bool>()", "({x}).to::<u8>()", "({x}).to()",
    "dot({x}, {x})", "dot({x}, ({x}).trans(), {x})", "dot(({x}).as_col(), ({x}).as_row())", "({x}).trans()",
    "({x}).sum(0)", "({x}).max(1)", "({x}).min(2)", "({x}).sum(99999999999)", "({x}).expand_dims(0)",
    "({x}).expand_dims(3)", "({x}).reshape([16])", "({x}).reshape([4, 4])", "({x}).broadcast_to([16, 16])",
    "({x}).broadcast_to([1099511627776, 1099511627776])", "where_({x}, {x}, {x})", "where_(({x}) > 0, {x}, 0.0)",
    "-({x})", "!({x})", "({x}) as f64", "({x}) as i32", "({x}) as Ptr<f32>", "load({x})", "load({x}, {x})",
    "load({x}, {x}, {x})", "exp({x})", "sqrt({x})", "log2({x})", "({x}).exp2()", "({x}).rsqrt()", "({x}).abs()",
    "({x}) + ({x})", "({x}) * 2", "({x}) * 1e308", "({x}) / 0", "({x}) % 0", "({x}) << 65", "({x}) >> 4294967296",
    "({x}) - 9223372036854775807", "cdiv({x}, 0)", "cdiv({x}, {x})", "min({x}, {x})", "maximum({x}, 1e308)",
    "minimum({x}, f32::NAN)", "full::<f16>([16], {x})", "full([16, 16], {x})", "zeros::<u32>([{x}])",
    "zeros::<f32>([{x}, {x}])", "arange({x}, {x})", "arange(0, {x})", "program_id({x})", "num_programs({x})",
    "({x}) < ({x})", "({x}) == f32::NAN", "(({x}) < 0) & (({x}) > 0)", "({x}).to::<f32>() * f32::INFINITY",
    "sum({x}, 0)", "expand_dims({x}, 1)", "trans({x})", "reshape({x}, [2, 8])", "broadcast_to({x}, [1, 16])",
    "({x}, {x})", "[{x}]", "[{x}; 4]", "({x})[0]", "&({x})", "*({x})", "({x}).field", "({x})?", "|| {x}",
    "{ {x} }", "({x}).step_by(2)", "({x})..({x})", "({x}) && ({x})", "({x}) += 1", "({x}) = ({x})",
];
/// Attribute-value replacements.
pub(super) const ATTR_VALUES: &[&str] = &[
    "0", "1", "2", "-1", "3", "16", "48", "64", "128", "1024", "2147483647", "2147483648", "4294967296",
    "9223372036854775807", "-9223372036854775807", "9223372036854775808", "1099511627776", "4611686018427387904",
    "true", "false", "None", "Some(leaky_relu)", "Some(swish)", "Some(nothing)", "Some()", "Some(1)", "leaky_relu",
    "[]", "[16]", "[16, 32]", "[true, false]", "[None]", "[None, None]", "[Some(leaky_relu), None]",
    "[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]", "1.5", "\"s\"", "x", "r#type",
    "config()", "config(num_warps = 4)", "config(BLOCK = 16)", "config(BLOCK_SIZE_M = 16, num_warps = 64)",
    "configs = []", "key = []", "key = [M, M]", "num_warps = 0", "num_warps = 1024", "num_stages = 0",
    "num_stages = 9223372036854775807", "BLOCK = [16]", "ACT = [None]",
];
