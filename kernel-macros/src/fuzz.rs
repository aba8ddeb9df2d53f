//! Fuzzing of the front end: no input makes `#[kernel]` or `#[kernel_module]` panic.
//!
//! The macros' own entry points (`kernel::expand`, `module::expand`) run as a library, on
//! kernel sources that are
//! - seed kernels (valid ones and a few invalid ones, `SEEDS`) mutated at the token level:
//!   tokens deleted, duplicated, swapped, identifiers replaced by builtin, parameter, meta and
//!   dtype names or random words, literals replaced by extreme values, attribute values and
//!   config lists changed, groups re-delimited;
//! - seeds mutated at the syntax level: expressions wrapped (`.as_col()`, `.to::<f16>()`,
//!   `dot(x, x)`, ...) or replaced by generated ones, statements deleted, duplicated, swapped
//!   and inserted;
//! - whole kernels generated from a small grammar (signature, attributes, helpers, body).
//!
//! Each input is lexed (proc_macro2) and parsed (syn) as rustc and the macro shims would;
//! inputs that do not parse are counted as rejected by syn and dropped. Every expansion runs
//! under `catch_unwind`: a panic is a bug. The expansion must be valid Rust (a `syn::File`)
//! or contain `compile_error!` (clean expansions over `MAX_CHECKED_TOKENS` are counted but not
//! re-parsed). Mutants that expand without errors join a pool that later inputs are mutated
//! from, so the backends see many valid kernels. `KERNEL_DUMP` is unset first.
//!
//! - `fuzz_quick` runs `REGRESSIONS`, checks the seeds and fuzzes a fixed budget on every
//!   `cargo test`;
//! - `fuzz_long` (ignored) runs `KERNEL_FUZZ_ITERS` inputs (default 200 000) on
//!   `KERNEL_FUZZ_THREADS` threads from `KERNEL_FUZZ_SEED`, optionally stopping after
//!   `KERNEL_FUZZ_SECS`; it also seeds from `tests/tests/{pass,ui}` and `examples/src` when
//!   they exist, and prints every distinct panic with an automatically reduced input:
//!
//! ```text
//! CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
//!     cargo test -p kernel-macros --release -- --ignored fuzz_long --nocapture
//! ```
//!
//! (release builds have no overflow checks by default, but proc macros are usually built in
//! the dev profile where an overflow panics: keep them on while fuzzing.)
//!
//! - `fuzz_one` (ignored) runs the file `KERNEL_FUZZ_INPUT` and prints the outcome and the
//!   error messages, for minimizing a crash by hand.
//!
//! Every crash found is minimized by hand, fixed, and added to `REGRESSIONS` below and to
//! `tests/tests/ui/fuzz/` (a trybuild case with its diagnostic).

use crate::{kernel, module};
use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use quote::quote;
use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::str::FromStr;
use std::time::{Duration, Instant};
use syn::visit_mut::VisitMut;

// ==================================================================== corpus

/// Seed kernels: `(name, valid, source)`. Valid seeds must expand without errors (checked by
/// `fuzz_quick`), invalid ones must report errors.
const SEEDS: &[(&str, bool, &str)] = &[
    (
        "vector_add",
        true,
        r#"
#[kernel(BLOCK_SIZE = [256, 1024])]
pub fn add_kernel<const BLOCK_SIZE: i32>(x_ptr: Ptr<f32>, y_ptr: Ptr<f32>, output_ptr: Ptr<f32>, n_elements: i32) {
    let pid = program_id(0);
    let offsets = pid * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    let x = load(x_ptr + offsets, mask);
    let y = load(y_ptr + offsets, mask);
    store(output_ptr + offsets, x + y, mask);
}
"#,
    ),
    (
        "matmul_module",
        true,
        r#"
#[kernel_module]
pub mod kernels {
    /// LeakyReLU.
    #[helper]
    pub fn leaky_relu(x: Block) -> Block {
        where_(x >= 0.0, x, 0.01 * x)
    }

    #[helper]
    pub fn sigmoid(x: Block) -> Block {
        let ret_true = 1.0 / (1.0 + exp(-x));
        let ret_false = exp(x) / (1.0 + exp(x));
        where_(x >= 0.0, ret_true, ret_false)
    }

    #[helper]
    pub fn swish(x: Block) -> Block {
        x * sigmoid(x)
    }

    /// C = ACTIVATION(A @ B).
    #[kernel(ACTIVATION = [None, Some(leaky_relu), Some(swish)])]
    #[autotune(
        configs = [
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 8),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 32, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 5, num_warps = 2),
        ],
        key = [M, N, K],
    )]
    pub fn matmul_kernel<
        const BLOCK_SIZE_M: i32,
        const BLOCK_SIZE_N: i32,
        const BLOCK_SIZE_K: i32,
        const GROUP_SIZE_M: i32,
        const ACTIVATION: Option<Func>,
    >(
        a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>,
        M: i32, N: i32, K: i32,
        stride_am: i32, stride_ak: i32,
        stride_bk: i32, stride_bn: i32,
        stride_cm: i32, stride_cn: i32,
    ) {
        let pid = program_id(0);
        let num_pid_m = cdiv(M, BLOCK_SIZE_M);
        let num_pid_n = cdiv(N, BLOCK_SIZE_N);
        let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
        let group_id = pid / num_pid_in_group;
        let first_pid_m = group_id * GROUP_SIZE_M;
        let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
        let pid_m = first_pid_m + pid % group_size_m;
        let pid_n = pid % num_pid_in_group / group_size_m;
        let offs_am = (pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M)) % M;
        let offs_bn = (pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N)) % N;
        let offs_k = arange(0, BLOCK_SIZE_K);
        let mut a_ptrs = a_ptr + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
        let mut b_ptrs = b_ptr + (offs_k.as_col() * stride_bk + offs_bn.as_row() * stride_bn);
        let mut accumulator = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
        for k in 0..cdiv(K, BLOCK_SIZE_K) {
            let a = load(a_ptrs, offs_k.as_row() < K - k * BLOCK_SIZE_K, 0.0);
            let b = load(b_ptrs, offs_k.as_col() < K - k * BLOCK_SIZE_K, 0.0);
            accumulator = dot(a, b, accumulator);
            a_ptrs += BLOCK_SIZE_K * stride_ak;
            b_ptrs += BLOCK_SIZE_K * stride_bk;
        }
        if let Some(activation) = ACTIVATION {
            accumulator = activation(accumulator);
        }
        let c = accumulator.to::<f16>();
        let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
        let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
        let c_ptrs = c_ptr + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
        let c_mask = (offs_cm.as_col() < M) & (offs_cn.as_row() < N);
        store(c_ptrs, c, c_mask);
    }
}
"#,
    ),
    (
        "softmax",
        true,
        r#"
#[kernel(BLOCK_SIZE = [128, 1024])]
pub fn softmax_kernel<const BLOCK_SIZE: i32>(
    output_ptr: Ptr<f32>, input_ptr: Ptr<f32>,
    input_row_stride: i32, output_row_stride: i32, n_cols: i32,
) {
    let row = program_id(0);
    let col_offsets = arange(0, BLOCK_SIZE);
    let mask = col_offsets < n_cols;
    let row_ptr = input_ptr + row * input_row_stride;
    let x = load(row_ptr + col_offsets, mask, f32::NEG_INFINITY);
    let shifted = x - x.max(0);
    let numerator = exp(shifted);
    let denominator = numerator.sum(0);
    let out_ptr = output_ptr + row * output_row_stride;
    store(out_ptr + col_offsets, numerator / denominator, mask);
}
"#,
    ),
    (
        "control",
        true,
        r#"
#[kernel(EVEN = [true, false], BLOCK = [16])]
fn scale<const EVEN: bool, const BLOCK: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32, last_block: i32, factor: f32) {
    let pid = program_id(0);
    if pid > last_block {
        return;
    }
    let offs = pid * BLOCK + arange(0, BLOCK);
    let mut v = zeros::<f32>([BLOCK]);
    if EVEN {
        v = load(x + offs);
    } else {
        v = load(x + offs, offs < n, 0.0);
    }
    if factor > 1.0 {
        v = v * factor;
    } else if factor < 0.0 {
        v = -v;
    }
    if EVEN {
        store(out + offs, v);
    } else {
        store(out + offs, v, offs < n);
    }
}
"#,
    ),
    (
        "loops",
        true,
        r#"
#[kernel(BLOCK = [8])]
fn sums<const BLOCK: i32>(x: Ptr<i32>, out: Ptr<i32>, K: i32) {
    let offs = arange(0, BLOCK);
    let mut a = zeros::<i32>([BLOCK]);
    for i in 0..K / BLOCK {
        a += load(x + i * BLOCK + offs);
    }
    store(out, a.sum(0));
    let mut b = zeros::<i32>([BLOCK]);
    for k in (0..K).step_by(BLOCK) {
        b = b + load(x + k + offs);
    }
    store(out + 1, b.sum(0));
    let mut c = zeros::<i32>([BLOCK]);
    for k in range(K, 0, -BLOCK) {
        c += load(x + (k - BLOCK) + offs);
    }
    store(out + 2, c.sum(0));
    let mut total = 0;
    for i in range(0, K) {
        total += load(x + i);
    }
    store(out + 3, total);
}
"#,
    ),
    (
        "module_helpers",
        true,
        r#"
#[kernel_module]
pub mod acts {
    #[helper]
    pub fn leaky_relu(x: Block) -> Block {
        where_(x >= 0.0, x, 0.01 * x)
    }

    #[helper]
    pub fn scaled(x: Block<f32>, s: f32) -> Block {
        let y = x * s;
        y + 1.0
    }

    #[helper]
    pub fn leaky_twice(x: Block) -> Block {
        scaled(leaky_relu(x), 2.0)
    }

    #[kernel(ACT = [None, Some(leaky_relu), Some(leaky_twice)])]
    pub fn apply<const ACT: Option<Func>>(x_ptr: Ptr<f32>, out_ptr: Ptr<f32>, n: i32) {
        let offs = program_id(0) * 32 + arange(0, 32);
        let mask = offs < n;
        let mut v = load(x_ptr + offs, mask);
        if let Some(f) = ACT {
            v = f(v);
        } else {
            v = -v;
        }
        store(out_ptr + offs, v, mask);
    }
}
"#,
    ),
    (
        "reductions",
        true,
        r#"
#[kernel]
fn stats(x_ptr: Ptr<f16>, col_sum: Ptr<f32>, row_max: Ptr<f16>, positives: Ptr<i32>, row_min: Ptr<f32>) {
    let r = arange(0, 8);
    let c = arange(0, 16);
    let x = load(x_ptr + r.as_col() * 16 + c.as_row());
    let clamped = where_(x > 0.0, x, 0.0);
    store(col_sum + c, clamped.to::<f32>().sum(0));
    store(row_max + r, x.max(1));
    store(row_min + r, x.min(1) as f32);
    let count = (x > 0.0).to::<i32>().sum(1).sum(0);
    store(positives, count);
}
"#,
    ),
    (
        "weak_literals",
        true,
        r#"
#[kernel(STRIDE = [4])]
fn gather<const STRIDE: i32>(x: Ptr<f16>, out: Ptr<f16>, n: i64, base: i64) {
    let offs = base + arange(0, 32).to::<i64>();
    let src = x + offs * 4;
    let v = load(src, offs < n, 0.0);
    let y = v * 0.5 + 1;
    store(out + offs, y, offs < n);
    let same = x + offs * STRIDE;
    store(out + offs + 32, load(same, offs < n, 0.0) - 2, offs < n);
}
"#,
    ),
    (
        "matmul_f16_trans",
        true,
        r#"
#[kernel(BLOCK = [16])]
fn matmul_f16<const BLOCK: i32>(a_ptr: Ptr<f16>, bt_ptr: Ptr<f16>, c_ptr: Ptr<f16>, M: i32, N: i32, K: i32) {
    let offs_m = program_id(0) * BLOCK + arange(0, BLOCK);
    let offs_n = program_id(1) * BLOCK + arange(0, BLOCK);
    let offs_k = arange(0, BLOCK);
    let mut acc = zeros([BLOCK, BLOCK]);
    for k0 in (0..K).step_by(BLOCK) {
        let ks = k0 + offs_k;
        let a = load(a_ptr + offs_m.as_col() * K + ks.as_row(), (offs_m.as_col() < M) & (ks.as_row() < K), 0.0);
        let bt = load(bt_ptr + offs_n.as_col() * K + ks.as_row(), (offs_n.as_col() < N) & (ks.as_row() < K), 0.0);
        acc += dot(a, bt.trans());
    }
    let c_ptrs = c_ptr + offs_m.expand_dims(1) * N + offs_n.expand_dims(0);
    store(c_ptrs, acc.to::<f16>(), (offs_m.as_col() < M) & (offs_n.as_row() < N));
}
"#,
    ),
    (
        "elementwise_shapes",
        true,
        r#"
#[kernel(B = [8])]
pub fn elementwise<const B: i32>(x: Ptr<f32>, h: Ptr<f16>, ints: Ptr<i32>, wide: Ptr<i64>, u: Ptr<u32>, f: Ptr<f32>) {
    let i = arange(0, B);
    let v = load(x + i);
    store(h + i, v.to::<f16>());
    store(ints + i, (v * 1e10).to::<i32>() / 7 % 5);
    store(wide + i, (i.to::<i64>() << 40) - i.to::<i64>());
    store(u + i, (i.to::<u32>() ^ 3) | 16);
    let safe = where_(v > 0.0, sqrt(v), minimum(v, -1.0));
    store(f + i, exp(safe) + abs(v) - v.floor());
}

#[kernel(B = [4])]
pub fn shapes<const B: i32>(scalar: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let s = load(scalar);
    let grid = full::<f32>([B, B], 0.5).broadcast_to([B, B]) + arange(0, B).expand_dims(0).to::<f32>();
    let flat = grid.reshape([B * B]);
    store(out + arange(0, B * B), flat * s);
    store(scalar, max(cdiv(n, B), 1).to::<f32>());
}
"#,
    ),
    (
        "countdown_bf16",
        true,
        r#"
#[kernel(B = [64], DOUBLE = [false, true], num_warps = 2)]
pub fn countdown<const B: i32, const DOUBLE: bool>(out: Ptr<i32>, n: i32, bonus: i32) {
    let i = arange(0, B);
    let mut acc = zeros::<i32>([B]);
    for k in range(n, 0, -3) {
        acc += i * k;
    }
    if DOUBLE {
        acc = acc * 2;
    }
    if bonus > 0 {
        acc = acc + bonus;
    } else {
        acc = acc - 1;
    }
    store(out + i, acc);
}

#[kernel(BM = [16], BN = [32], BK = [16])]
pub fn bf16_dot_trans<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<bf16>, bt: Ptr<bf16>, c: Ptr<f32>, k: i32, lda: i64) {
    let rm = arange(0, BM);
    let rn = arange(0, BN);
    let rk = arange(0, BK);
    let mut acc = zeros::<f32>([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let ka = k0 + rk;
        let x = load(a + rm.as_col() * lda + ka.as_row(), ka.as_row() < k, 0.0);
        let yt = load(bt + rn.as_col() * k + ka.as_row(), ka.as_row() < k, 0.0);
        acc += dot(x, yt.trans());
    }
    store(c + rm.as_col() * BN + rn.as_row(), acc);
}
"#,
    ),
    (
        "all_at_once",
        false,
        r#"
#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let big = arange(0, 48);
    let v = load(x + offs.to::<f32>());
    while n > 0 {
        return;
    }
}
"#,
    ),
    (
        "mutual_recursion",
        false,
        r#"
#[kernel_module]
mod m {
    #[helper]
    fn ping(x: Block) -> Block {
        pong(x)
    }

    #[helper]
    fn pong(x: Block) -> Block {
        ping(x)
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, ping(load(x + offs)));
    }
}
"#,
    ),
    (
        "autotune_errors",
        false,
        r#"
#[kernel(num_warps = 3)]
#[autotune(configs = [config(BLOCK_M = 16, BLOCK_N = 16, num_stages = 9), config(BLOCK_M = 32)], key = [x, m])]
fn k<const BLOCK_M: i32, const BLOCK_N: i32, const F: Option<Func>>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK_M) + arange(0, BLOCK_N);
    let z = zeros::<f32>([BLOCK_M - 1, 48]);
}
"#,
    ),
    (
        "type_errors",
        false,
        r#"
#[kernel(BLOCK = [16, 48])]
fn k<const BLOCK: i32>(x: Ptr<f16>, y: Ptr<bf16>, n: i32, u: u32) {
    let offs = arange(0, BLOCK);
    let a = load(x + offs) + load(y + offs);
    let b = offs + u;
    let c = offs.reshape([4, 8]).broadcast_to([32]).trans();
    store(x + offs, load(x + offs).to::<f32>(), offs);
    let d = dot(load(x + offs), load(x + offs));
}
"#,
    ),
];

/// Minimized inputs of every crash found by fuzzing: `(name, reports errors, source)`. Each
/// must expand without panicking, to compile errors or to valid Rust as stated; each is also a
/// trybuild case `tests/tests/ui/fuzz/<name>.rs`.
const REGRESSIONS: &[(&str, bool, &str)] = &[
    (
        // `1e39f32` is infinite as an f32, and `quote!` panics on an infinite f32 literal
        // (`assertion failed: f.is_finite()`) in the CPU code.
        "f32_literal_out_of_range",
        true,
        r#"
#[kernel]
fn k(x: Ptr<f32>) {
    store(x, 1e39f32);
}
"#,
    ),
    (
        // The same value as a weak literal that adopts f32: infinity at run time, like f16.
        "f32_weak_literal_infinite",
        false,
        r#"
#[kernel]
fn k(x: Ptr<f32>) {
    store(x, 1e39);
}
"#,
    ),
    (
        // A [2^40, 2^40] block passes the per-dimension rules; the device backend multiplied
        // its dimensions out (`attempt to multiply with overflow`).
        "block_elements_overflow",
        true,
        r#"
#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let s = n.broadcast_to([1099511627776, 1099511627776]).sum(0);
}
"#,
    ),
    (
        // The same through broadcasting and an i64 meta-parameter.
        "block_elements_overflow_meta",
        true,
        r#"
#[kernel(B = [1099511627776])]
fn k<const B: i64>(x: Ptr<f32>) {
    let a = arange(0, B).as_col() + arange(0, B).as_row();
    store(x, a.sum(0).sum(0).to::<f32>());
}
"#,
    ),
    (
        // 32^6 = 2^30 declared instances: the limit check enumerated them all (a hang, then
        // out of memory) before comparing with the limit.
        "too_many_instances",
        true,
        r#"
#[kernel(
    A = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32],
    B = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32],
    C = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32],
    D = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32],
    E = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32],
    F = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]
)]
fn k<const A: i32, const B: i32, const C: i32, const D: i32, const E: i32, const F: i32>(x: Ptr<f32>) {
    store(x, 1.0);
}
"#,
    ),
    (
        // A meta-parameter named by a raw identifier made the device entry name
        // `k__r#type_16`, which `format_ident!` rejects (`is not a valid Ident`).
        "raw_meta_name",
        false,
        r#"
#[kernel(r#type = [16])]
fn k<const r#type: i32>(x: Ptr<f32>) {
    store(x + arange(0, r#type), 1.0);
}
"#,
    ),
    (
        // A pointer parameter named by a raw identifier: its autotuning scratch copy was
        // named `__s_r#type` (`is not a valid Ident`).
        "raw_ptr_param",
        false,
        r#"
#[kernel]
fn k(r#type: Ptr<f32>) {
    store(r#type + arange(0, 16), 1.0);
}
"#,
    ),
    (
        // A kernel named by a raw identifier: its exported instance description was named
        // `__KERNEL_META_r#type` (`is not a valid Ident`).
        "raw_kernel_name",
        false,
        r#"
#[kernel]
fn r#type(x: Ptr<f32>) {
    store(x + arange(0, 16), 1.0);
}
"#,
    ),
];

// ==================================================================== harness

/// What one input did.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// proc_macro2 or syn rejected the source (so would rustc or the macro shim).
    Rejected,
    /// Parsed, but there is no `#[kernel]` function or `#[kernel_module]` module to expand.
    NoEntry,
    /// Every entry point expanded; `errors`: one of them reported compile errors.
    Expanded { errors: bool },
    /// The lexer or syn itself panicked (not a bug of this crate, but reported).
    ParserPanic(String),
    /// The macro panicked.
    Panicked(String),
    /// The expansion is neither valid Rust nor an error report.
    InvalidOutput(String),
}

impl Outcome {
    fn is_bug(&self) -> bool {
        matches!(self, Outcome::Panicked(_) | Outcome::InvalidOutput(_))
    }
}

thread_local! {
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// A panic hook that records (instead of printing) panics raised under `guarded` on this
/// thread; panics elsewhere go to the previous hook.
fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(|c| c.get()) {
                let p = info.payload();
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "<non-string panic payload>".to_string());
                let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
                LAST_PANIC.with(|l| *l.borrow_mut() = Some(format!("{msg} (at {at})")));
            } else {
                prev(info);
            }
        }));
    });
}

fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    CATCHING.with(|c| c.set(true));
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(false));
    r.map_err(|_| LAST_PANIC.with(|l| l.borrow_mut().take()).unwrap_or_else(|| "panic".to_string()))
}

enum Entry {
    Kernel(TokenStream, syn::ItemFn),
    Module(TokenStream, syn::ItemMod),
}

/// The arguments of an attribute macro; `None` for `#[name = value]`, which rustc rejects.
fn attr_args(a: syn::Attribute) -> Option<TokenStream> {
    match a.meta {
        syn::Meta::Path(_) => Some(TokenStream::new()),
        syn::Meta::List(l) => Some(l.tokens),
        syn::Meta::NameValue(_) => None,
    }
}

/// Takes the first attribute named `name` off `attrs`.
fn take_attr(attrs: &mut Vec<syn::Attribute>, name: &str) -> Option<Option<TokenStream>> {
    let pos = attrs.iter().position(|a| kernel::is_attr(a, name))?;
    Some(attr_args(attrs.remove(pos)))
}

fn contains_ident(ts: &TokenStream, name: &str) -> bool {
    ts.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => contains_ident(&g.stream(), name),
        _ => false,
    })
}

/// Expansions larger than this (in tokens) are not re-parsed: syn parses the device code of
/// a many-instance kernel (megabytes) in seconds. Small kernels exercise the same generators.
const MAX_CHECKED_TOKENS: usize = 40_000;

thread_local! {
    /// Clean expansions too large to re-parse (see `MAX_CHECKED_TOKENS`).
    static UNCHECKED: Cell<u64> = const { Cell::new(0) };
}

fn count_tokens(ts: &TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => 1 + count_tokens(&g.stream()),
            _ => 1,
        })
        .sum()
}

/// Runs the macro entry points on every top-level `#[kernel]` fn and `#[kernel_module]` mod
/// of `src`, the way the proc-macro shims in `lib.rs` call them.
fn run_source(src: &str) -> Outcome {
    let parsed = guarded(|| TokenStream::from_str(src).ok().and_then(|ts| syn::parse2::<syn::File>(ts).ok()));
    let file = match parsed {
        Err(p) => return Outcome::ParserPanic(p),
        Ok(None) => return Outcome::Rejected,
        Ok(Some(f)) => f,
    };
    let mut entries = Vec::new();
    for item in file.items {
        match item {
            syn::Item::Fn(mut f) => {
                if let Some(Some(a)) = take_attr(&mut f.attrs, "kernel") {
                    entries.push(Entry::Kernel(a, f));
                }
            }
            syn::Item::Mod(mut m) => {
                if let Some(Some(a)) = take_attr(&mut m.attrs, "kernel_module") {
                    entries.push(Entry::Module(a, m));
                }
            }
            _ => {}
        }
    }
    if entries.is_empty() {
        return Outcome::NoEntry;
    }
    let mut errors = false;
    for e in entries {
        let out = guarded(move || match e {
            Entry::Kernel(a, f) => crate::expand_kernel_fn(a, f),
            Entry::Module(a, m) => module::expand(a, m),
        });
        let out = match out {
            Ok(o) => o,
            Err(p) => return Outcome::Panicked(p),
        };
        if contains_ident(&out, "compile_error") {
            errors = true;
        } else if count_tokens(&out) > MAX_CHECKED_TOKENS {
            UNCHECKED.with(|u| u.set(u.get() + 1));
        } else if let Err(e) = syn::parse2::<syn::File>(out) {
            return Outcome::InvalidOutput(format!("the expansion is not valid Rust and reports no error: {e}"));
        }
    }
    Outcome::Expanded { errors }
}

// ==================================================================== random numbers

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

// ==================================================================== dictionaries

const BUILTINS: &[&str] = &[
    "program_id", "num_programs", "arange", "zeros", "full", "load", "store", "dot", "where_", "cdiv", "min", "max",
    "minimum", "maximum", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "floor", "ceil", "sum",
    "trans", "expand_dims", "reshape", "broadcast_to", "as_col", "as_row", "to", "step_by", "range", "Some", "None",
    "Block", "Ptr", "Func", "Option", "config", "configs", "key", "num_warps", "num_stages", "kernel", "autotune",
    "helper", "kernel_module", "INFINITY", "NEG_INFINITY", "NAN", "MAX", "MIN",
];
const DTYPES: &[&str] = &["f16", "bf16", "f32", "f64", "i32", "u32", "i64", "bool", "u64", "usize", "isize", "u8", "i8", "i128", "f128", "char", "str"];
const KEYWORDS: &[&str] = &[
    "let", "mut", "for", "in", "if", "else", "return", "fn", "const", "pub", "mod", "while", "loop", "break",
    "continue", "match", "as", "self", "Self", "crate", "super", "unsafe", "async", "move", "ref", "where", "impl",
    "struct", "true", "false", "_", "r#type", "r#fn", "r#match", "r#loop", "r#as", "r#in",
];
const WORDS: &[&str] = &[
    "x", "y", "k", "n", "foo", "tmp", "tmp_0", "x_1", "acc", "mask", "offs", "BLOCK", "BLOCK_M", "BLOCK_SIZE",
    "ACT", "ACTIVATION", "leaky_relu", "__p_x", "__meta", "__ctx", "__tid", "__smem", "__f", "__j", "__grid",
    "__config", "__x", "Meta", "CONFIGS", "INFO", "AUTOTUNED", "launch", "launch_config", "grid", "core", "std",
    "kernel_runtime", "kernel_std", "main", "vec", "println", "String", "Vec", "Tensor", "e", "E", "π", "ÿ",
    "a_very_long_identifier_name_that_goes_on_and_on_and_on_and_on_and_on_and_on",
];
const LITERALS: &[&str] = &[
    "0", "1", "2", "3", "7", "16", "31", "32", "33", "48", "64", "128", "1024", "65536", "2147483647", "2147483648",
    "4294967295", "4294967296", "9223372036854775807", "9223372036854775808", "18446744073709551615",
    "99999999999999999999999999999999999999", "1099511627776", "2199023255552", "4611686018427387904",
    "0x7fffffff", "0xffffffffffffffff", "0b1", "0o777", "1_000", "0i64", "1u32", "1i32", "7i64", "1u8", "1usize",
    "1i128", "3f32", "0.0", "1.0", "0.5", "1.5", "1e10", "1e38", "3.5e38", "65504.0", "65520.0", "1e308", "1e309",
    "1.7976931348623157e308", "1e-320", "1e-45", "5e-324", "0.0f32", "1e39f32", "1e308f32", "1e308f64", "2.5f64", "1e5f16",
    "0.1f16", "'a'", "\"s\"", "b'a'", "b\"bytes\"", "true", "false", "1.", "0e0",
];
const EXTREME_INTS: &[&str] = &[
    "0", "-1", "1", "2147483647", "2147483648", "-2147483648", "4294967295", "4294967296", "9223372036854775807",
    "-9223372036854775807", "9223372036854775808", "1099511627776", "1099511627777", "4611686018427387904",
    "2305843009213693952", "1048576", "65536", "8388608", "48", "3", "-16", "64",
];
const EXTREME_FLOATS: &[&str] = &[
    "0.0", "-0.0", "1e308", "-1e308", "1e309", "1.7976931348623157e308", "3.4028235e38", "3.5e38", "65504.0",
    "65520.0", "1e-320", "5e-324", "1e308f32", "1e39f32", "-1e39f32", "1e308f64", "f32::NAN", "f32::INFINITY",
    "f64::NEG_INFINITY", "f16::MAX", "bf16::MIN", "f64::MAX", "i64::MIN", "i64::MAX", "u32::MAX", "i32::MIN",
    "(0.0 / 0.0)",
];
const PUNCTS: &[&str] = &[
    "+", "-", "*", "/", "%", "&", "|", "^", "!", "<", ">", "=", ",", ";", ".", ":", "#", "?", "@", "~", "$", "<=",
    ">=", "==", "!=", "&&", "||", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "..",
    "..=", "::", "->", "=>",
];
/// Expression wrappers: `{x}` is the wrapped expression.
const WRAPPERS: &[&str] = &[
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
const ATTR_VALUES: &[&str] = &[
    "0", "1", "2", "-1", "3", "16", "48", "64", "128", "1024", "2147483647", "2147483648", "4294967296",
    "9223372036854775807", "-9223372036854775807", "9223372036854775808", "1099511627776", "4611686018427387904",
    "true", "false", "None", "Some(leaky_relu)", "Some(swish)", "Some(nothing)", "Some()", "Some(1)", "leaky_relu",
    "[]", "[16]", "[16, 32]", "[true, false]", "[None]", "[None, None]", "[Some(leaky_relu), None]",
    "[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]", "1.5", "\"s\"", "x", "r#type",
    "config()", "config(num_warps = 4)", "config(BLOCK = 16)", "config(BLOCK_SIZE_M = 16, num_warps = 64)",
    "configs = []", "key = []", "key = [M, M]", "num_warps = 0", "num_warps = 1024", "num_stages = 0",
    "num_stages = 9223372036854775807", "BLOCK = [16]", "ACT = [None]",
];

// ==================================================================== token-level mutation

#[derive(Clone)]
enum Tok {
    Leaf(TokenTree),
    Group(Delimiter, Vec<Tok>),
}

fn toks(ts: TokenStream) -> Vec<Tok> {
    ts.into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => Tok::Group(g.delimiter(), toks(g.stream())),
            other => Tok::Leaf(other),
        })
        .collect()
}

fn stream(v: &[Tok]) -> TokenStream {
    v.iter()
        .map(|t| match t {
            Tok::Leaf(l) => l.clone(),
            Tok::Group(d, inner) => TokenTree::Group(Group::new(*d, stream(inner))),
        })
        .collect()
}

fn parse_toks(s: &str) -> Vec<Tok> {
    TokenStream::from_str(s).map(toks).unwrap_or_default()
}

/// Paths (indices of nested groups) of every token list: the root and each group's contents.
/// `in_attr` restricts to the contents of `#[...]` attributes.
fn lists(v: &[Tok], path: &mut Vec<usize>, in_attr: bool, only_attrs: bool, out: &mut Vec<Vec<usize>>) {
    if in_attr || !only_attrs {
        out.push(path.clone());
    }
    for (i, t) in v.iter().enumerate() {
        if let Tok::Group(d, inner) = t {
            let is_attr = *d == Delimiter::Bracket
                && i > 0
                && matches!(&v[i - 1], Tok::Leaf(TokenTree::Punct(p)) if p.as_char() == '#');
            path.push(i);
            lists(inner, path, in_attr || is_attr, only_attrs, out);
            path.pop();
        }
    }
}

fn list_at<'a>(v: &'a mut Vec<Tok>, path: &[usize]) -> &'a mut Vec<Tok> {
    match path.split_first() {
        None => v,
        Some((i, rest)) => match &mut v[*i] {
            Tok::Group(_, inner) => list_at(inner, rest),
            Tok::Leaf(_) => unreachable!("paths only lead through groups"),
        },
    }
}

/// Every leaf of one kind (`'i'` idents, `'l'` literals, `'p'` puncts), as (list path, index).
fn leaves(v: &[Tok], path: &mut Vec<usize>, kind: char, out: &mut Vec<(Vec<usize>, usize)>) {
    for (i, t) in v.iter().enumerate() {
        match t {
            Tok::Group(_, inner) => {
                path.push(i);
                leaves(inner, path, kind, out);
                path.pop();
            }
            Tok::Leaf(l) => {
                let k = match l {
                    TokenTree::Ident(_) => 'i',
                    TokenTree::Literal(_) => 'l',
                    _ => 'p',
                };
                if k == kind {
                    out.push((path.clone(), i));
                }
            }
        }
    }
}

fn idents_of(v: &[Tok], out: &mut Vec<String>) {
    for t in v {
        match t {
            Tok::Group(_, inner) => idents_of(inner, out),
            Tok::Leaf(TokenTree::Ident(i)) => {
                let s = i.to_string();
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            _ => {}
        }
    }
}

fn random_ident(rng: &mut Rng, names: &[String]) -> String {
    match rng.below(10) {
        0..=3 if !names.is_empty() => rng.pick(names).clone(),
        0..=4 => rng.pick(BUILTINS).to_string(),
        5 | 6 => rng.pick(DTYPES).to_string(),
        7 => rng.pick(KEYWORDS).to_string(),
        _ => rng.pick(WORDS).to_string(),
    }
}

fn random_token_text(rng: &mut Rng, names: &[String]) -> String {
    match rng.below(6) {
        0..=2 => random_ident(rng, names),
        3 => rng.pick(LITERALS).to_string(),
        4 => rng.pick(PUNCTS).to_string(),
        _ => rng.pick(EXTREME_INTS).to_string(),
    }
}

/// One token-level mutation of `root`. `attrs_only` confines it to attribute contents.
fn mutate_tokens(rng: &mut Rng, root: &mut Vec<Tok>, names: &[String], donors: &[&str], attrs_only: bool) {
    // Targeted leaf replacements pick among all leaves of a kind.
    if !attrs_only && rng.chance(35) {
        let kind = *rng.pick(&['i', 'i', 'l', 'l', 'p']);
        let mut found = Vec::new();
        leaves(root, &mut vec![], kind, &mut found);
        if !found.is_empty() {
            let (path, i) = rng.pick(&found).clone();
            let text = match kind {
                'i' => random_ident(rng, names),
                'l' => match rng.below(3) {
                    0 => rng.pick(EXTREME_INTS).to_string(),
                    1 => rng.pick(EXTREME_FLOATS).to_string(),
                    _ => rng.pick(LITERALS).to_string(),
                },
                _ => rng.pick(PUNCTS).to_string(),
            };
            let list = list_at(root, &path);
            list.splice(i..i + 1, parse_toks(&text));
            return;
        }
    }
    let mut all = Vec::new();
    lists(root, &mut vec![], false, attrs_only, &mut all);
    if all.is_empty() {
        return;
    }
    let path = rng.pick(&all).clone();
    let op = rng.below(if attrs_only { 9 } else { 12 });
    // Text of a random donor run (from another seed), computed before borrowing the list.
    let donor = if op == 9 && !donors.is_empty() {
        let d = parse_toks(donors[rng.below(donors.len())]);
        let mut dl = Vec::new();
        lists(&d, &mut vec![], false, false, &mut dl);
        let mut d = d;
        let p = rng.pick(&dl).clone();
        let src = list_at(&mut d, &p);
        let start = rng.below(src.len());
        let end = (start + 1 + rng.below(8)).min(src.len());
        src.get(start..end).map(|s| s.to_vec()).unwrap_or_default()
    } else {
        vec![]
    };
    let generated = if op == 11 { Gen::new(rng, Scope::from_names(names)).any(2) } else { String::new() };
    let list = list_at(root, &path);
    let n = list.len();
    let i = rng.below(n.max(1));
    match op {
        // Delete a run of tokens.
        0 if n > 0 => {
            let len = 1 + rng.below(3);
            list.drain(i..(i + len).min(n));
        }
        // Duplicate a run of tokens.
        1 if n > 0 => {
            let len = 1 + rng.below(4);
            let run: Vec<Tok> = list[i..(i + len).min(n)].to_vec();
            let at = (i + len).min(n);
            list.splice(at..at, run);
        }
        // Swap two tokens.
        2 if n > 1 => {
            let j = rng.below(n);
            list.swap(i, j);
        }
        // Replace a token.
        3 | 4 if n > 0 => {
            let text = if attrs_only { rng.pick(ATTR_VALUES).to_string() } else { random_token_text(rng, names) };
            list.splice(i..i + 1, parse_toks(&text));
        }
        // Insert a token.
        5 => {
            let text = if attrs_only { rng.pick(ATTR_VALUES).to_string() } else { random_token_text(rng, names) };
            list.splice(i..i, parse_toks(&text));
        }
        // Wrap a token (often a whole parenthesized expression or a name).
        6 if n > 0 => {
            let x = stream(&list[i..i + 1]).to_string();
            let w = rng.pick(WRAPPERS).replace("{x}", &x);
            list.splice(i..i + 1, parse_toks(&w));
        }
        // Change a group's delimiter, or empty it.
        7 if n > 0 => {
            if let Tok::Group(d, inner) = &mut list[i] {
                if rng.chance(30) {
                    inner.clear();
                } else {
                    *d = *rng.pick(&[Delimiter::Parenthesis, Delimiter::Bracket, Delimiter::Brace]);
                }
            }
        }
        // Truncate the list.
        8 if n > 0 => list.truncate(i),
        // Splice in a run of tokens from another seed.
        9 => {
            list.splice(i..i, donor);
        }
        // Move a token to another position.
        10 if n > 1 => {
            let t = list.remove(i);
            let j = rng.below(list.len() + 1);
            list.insert(j, t);
        }
        // Replace a token by a generated expression.
        11 if n > 0 => {
            list.splice(i..i + 1, parse_toks(&generated));
        }
        _ => {}
    }
}

// ==================================================================== syntax-level mutation

/// Counts expressions (pre-order), or replaces the `target`-th one.
struct ExprAt<'f> {
    target: usize,
    seen: usize,
    replace: Option<Box<dyn FnOnce(&syn::Expr) -> Option<syn::Expr> + 'f>>,
}

impl VisitMut for ExprAt<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if self.replace.is_none() {
            return;
        }
        if self.seen == self.target {
            if let Some(f) = self.replace.take() {
                if let Some(new) = f(e) {
                    *e = new;
                }
            }
            return;
        }
        self.seen += 1;
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

struct CountExprs(usize, Vec<String>);

impl VisitMut for CountExprs {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        self.0 += 1;
        if self.1.len() < 64 {
            self.1.push(quote!(#e).to_string());
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Edits the statements of the `target`-th block.
struct BlockAt<'f> {
    target: usize,
    seen: usize,
    edit: Option<Box<dyn FnOnce(&mut Vec<syn::Stmt>) + 'f>>,
}

impl VisitMut for BlockAt<'_> {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        if self.edit.is_none() {
            return;
        }
        if self.seen == self.target {
            if let Some(f) = self.edit.take() {
                f(&mut b.stmts);
            }
            return;
        }
        self.seen += 1;
        syn::visit_mut::visit_block_mut(self, b);
    }
}

struct CountBlocks(usize);

impl VisitMut for CountBlocks {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.0 += 1;
        syn::visit_mut::visit_block_mut(self, b);
    }
}

fn parse_stmts(s: &str) -> Vec<syn::Stmt> {
    syn::parse_str::<syn::Block>(&format!("{{ {s} }}")).map(|b| b.stmts).unwrap_or_default()
}

/// One syntax-level mutation: wraps or replaces an expression, or edits a block's statements.
fn mutate_syntax(rng: &mut Rng, src: &str) -> Option<String> {
    let mut file: syn::File = syn::parse_str(src).ok()?;
    let scope = Scope::from_file(&mut file);
    if rng.chance(55) {
        let mut c = CountExprs(0, vec![]);
        c.visit_file_mut(&mut file);
        if c.0 == 0 {
            return None;
        }
        let target = rng.below(c.0);
        let choice = rng.below(10);
        let wrapper = rng.pick(WRAPPERS).to_string();
        let other = rng.pick(&c.1).clone();
        let generated = Gen::new(rng, scope).any(3);
        let replace: Box<dyn FnOnce(&syn::Expr) -> Option<syn::Expr>> = Box::new(move |e: &syn::Expr| {
            let text = match choice {
                0..=4 => wrapper.replace("{x}", &quote!(#e).to_string()),
                5 | 6 => other,
                _ => generated,
            };
            syn::parse_str::<syn::Expr>(&text).ok()
        });
        let mut v = ExprAt { target, seen: 0, replace: Some(replace) };
        v.visit_file_mut(&mut file);
    } else {
        let mut c = CountBlocks(0);
        c.visit_file_mut(&mut file);
        if c.0 == 0 {
            return None;
        }
        let target = rng.below(c.0);
        let op = rng.below(6);
        let (a, b) = (rng.next() as usize, rng.next() as usize);
        let mut g = Gen::new(rng, scope);
        let n = 1 + g.rng.below(3);
        let new_stmts = parse_stmts(&g.stmts(n, 2));
        let edit: Box<dyn FnOnce(&mut Vec<syn::Stmt>)> = Box::new(move |stmts: &mut Vec<syn::Stmt>| {
            let len = stmts.len();
            match op {
                0 if len > 0 => {
                    stmts.remove(a % len);
                }
                1 if len > 0 => {
                    let s = stmts[a % len].clone();
                    stmts.insert(b % (len + 1), s);
                }
                2 if len > 1 => stmts.swap(a % len, b % len),
                3 if len > 0 => {
                    // Reverse a run: moves uses before definitions.
                    let (x, y) = (a % len, b % len);
                    let (x, y) = (x.min(y), x.max(y));
                    stmts[x..=y].reverse();
                }
                _ => {
                    let at = a % (len + 1);
                    for (k, s) in new_stmts.into_iter().enumerate() {
                        stmts.insert(at + k, s);
                    }
                }
            }
        });
        let mut v = BlockAt { target, seen: 0, edit: Some(edit) };
        v.visit_file_mut(&mut file);
    }
    Some(quote!(#file).to_string())
}

// ==================================================================== grammar

/// Names a generator can use, by kind.
#[derive(Default, Clone)]
struct Scope {
    ptrs: Vec<(String, String)>,
    ints: Vec<String>,
    floats: Vec<String>,
    bools: Vec<String>,
    metas: Vec<String>,
    fn_metas: Vec<String>,
    helpers: Vec<String>,
    locals: Vec<String>,
}

impl Scope {
    /// Guesses kinds from the names seen in an input (for token-level insertion).
    fn from_names(names: &[String]) -> Scope {
        let mut s = Scope::default();
        for n in names {
            if BUILTINS.contains(&n.as_str()) || DTYPES.contains(&n.as_str()) || KEYWORDS.contains(&n.as_str()) {
                continue;
            }
            if n.ends_with("ptr") || n.ends_with("_ptrs") {
                s.ptrs.push((n.clone(), "f32".into()));
            } else if n.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()) {
                s.metas.push(n.clone());
            } else {
                s.locals.push(n.clone());
            }
        }
        s
    }

    /// Reads the kernels and helpers of a parsed input.
    fn from_file(file: &mut syn::File) -> Scope {
        struct V<'s>(&'s mut Scope);
        impl VisitMut for V<'_> {
            fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
                if f.attrs.iter().any(|a| kernel::is_attr(a, "helper")) {
                    self.0.helpers.push(f.sig.ident.to_string());
                }
                for g in &f.sig.generics.params {
                    if let syn::GenericParam::Const(c) = g {
                        let name = c.ident.to_string();
                        let ty = &c.ty;
                        let t = quote!(#ty).to_string();
                        if t.contains("Func") {
                            self.0.fn_metas.push(name);
                        } else if t == "bool" {
                            self.0.bools.push(name);
                        } else {
                            self.0.metas.push(name);
                        }
                    }
                }
                for input in &f.sig.inputs {
                    if let syn::FnArg::Typed(pt) = input {
                        let name = match &*pt.pat {
                            syn::Pat::Ident(pi) => pi.ident.to_string(),
                            _ => continue,
                        };
                        let ty = &pt.ty;
                        let t = quote!(#ty).to_string().replace(' ', "");
                        if let Some(d) = t.strip_prefix("Ptr<").and_then(|r| r.strip_suffix('>')) {
                            self.0.ptrs.push((name, d.to_string()));
                        } else if t.contains("f32") || t.contains("f16") {
                            self.0.floats.push(name);
                        } else if t == "bool" {
                            self.0.bools.push(name);
                        } else {
                            self.0.ints.push(name);
                        }
                    }
                }
                syn::visit_mut::visit_item_fn_mut(self, f);
            }
            fn visit_local_mut(&mut self, l: &mut syn::Local) {
                if let syn::Pat::Ident(pi) = &l.pat {
                    self.0.locals.push(pi.ident.to_string());
                }
                syn::visit_mut::visit_local_mut(self, l);
            }
        }
        let mut s = Scope::default();
        V(&mut s).visit_file_mut(file);
        s
    }
}

/// Generates kernel source text from a small grammar. Each production mostly yields the kind
/// asked for (index blocks, pointer blocks, masks, values, scalars), sometimes another kind,
/// so both valid kernels and type errors come out.
struct Gen<'r> {
    rng: &'r mut Rng,
    s: Scope,
    /// The dimension of the 1-D blocks this kernel builds.
    dim: String,
    fresh: usize,
}

impl<'r> Gen<'r> {
    fn new(rng: &'r mut Rng, s: Scope) -> Gen<'r> {
        let dim = if !s.metas.is_empty() && rng.chance(80) { rng.pick(&s.metas).clone() } else { "16".to_string() };
        Gen { rng, s, dim, fresh: 0 }
    }

    fn name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    fn confuse(&mut self, d: usize) -> Option<String> {
        // Sometimes another kind than the one asked for.
        if d > 0 && self.rng.chance(4) {
            Some(self.any(d - 1))
        } else {
            None
        }
    }

    fn lit_int(&mut self) -> String {
        if self.rng.chance(12) {
            self.rng.pick(EXTREME_INTS).to_string()
        } else {
            self.rng.pick(&["0", "1", "2", "3", "4", "8", "16", "32"]).to_string()
        }
    }

    fn lit_float(&mut self) -> String {
        if self.rng.chance(15) {
            self.rng.pick(EXTREME_FLOATS).to_string()
        } else {
            self.rng.pick(&["0.0", "1.0", "0.5", "2.0", "-1.0", "0.01"]).to_string()
        }
    }

    fn dim(&mut self) -> String {
        match self.rng.below(20) {
            0 => self.rng.pick(&["0", "3", "48", "1099511627776", "2 * 1099511627776", "-16", "1048576"]).to_string(),
            3 => self.rng.pick(&["1099511627776", "1073741824", "4294967296"]).to_string(),
            1 if !self.s.metas.is_empty() => format!("2 * {}", self.rng.pick(&self.s.metas)),
            2 if !self.s.metas.is_empty() => format!("{} * {}", self.rng.pick(&self.s.metas), self.rng.pick(&self.s.metas)),
            _ => self.dim.clone(),
        }
    }

    fn dtype(&mut self) -> String {
        if self.rng.chance(8) {
            self.rng.pick(DTYPES).to_string()
        } else {
            self.rng.pick(&["f32", "f16", "bf16", "i32", "i64", "u32", "f64"]).to_string()
        }
    }

    fn scalar_int(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 4 } else { 11 };
        match self.rng.below(top) {
            0 => self.lit_int(),
            1 if !self.s.ints.is_empty() => self.rng.pick(&self.s.ints).clone(),
            2 if !self.s.metas.is_empty() => self.rng.pick(&self.s.metas).clone(),
            0..=3 => format!("program_id({})", self.rng.pick(&["0", "1", "2", "3", "0"])),
            4 => format!("num_programs({})", self.rng.below(3)),
            5 => format!("cdiv({}, {})", self.scalar_int(d - 1), self.scalar_int(d - 1)),
            6 => format!("min({}, {})", self.scalar_int(d - 1), self.scalar_int(d - 1)),
            7 => format!("({}).sum(0)", self.idx(d - 1)),
            8 => format!("({}) as i64", self.scalar_int(d - 1)),
            _ => {
                let op = *self.rng.pick(&["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]);
                format!("({} {op} {})", self.scalar_int(d - 1), self.scalar_int(d - 1))
            }
        }
    }

    fn scalar_float(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 2 } else { 7 };
        match self.rng.below(top) {
            0 if !self.s.floats.is_empty() => self.rng.pick(&self.s.floats).clone(),
            0 | 1 => self.lit_float(),
            2 => format!("exp({})", self.scalar_float(d - 1)),
            3 => format!("({}).sum(0)", self.val(d - 1)),
            4 => format!("({}).max(0)", self.val(d - 1)),
            5 => format!("({}).to::<f32>()", self.scalar_int(d - 1)),
            _ => {
                let op = *self.rng.pick(&["+", "-", "*", "/"]);
                format!("({} {op} {})", self.scalar_float(d - 1), self.scalar_float(d - 1))
            }
        }
    }

    fn cond(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        match self.rng.below(4) {
            0 if !self.s.bools.is_empty() => self.rng.pick(&self.s.bools).clone(),
            1 => format!("{} < {}", self.scalar_int(d.saturating_sub(1)), self.scalar_int(d.saturating_sub(1))),
            2 => format!("{} > {}", self.scalar_float(d.saturating_sub(1)), self.lit_float()),
            _ => format!("{} == {}", self.scalar_int(d.saturating_sub(1)), self.lit_int()),
        }
    }

    fn idx(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 2 } else { 8 };
        match self.rng.below(top) {
            0 => format!("arange(0, {})", self.dim()),
            1 if !self.s.locals.is_empty() && self.rng.chance(50) => self.rng.pick(&self.s.locals).clone(),
            1 => format!("program_id(0) * {} + arange(0, {})", self.dim, self.dim),
            2 => format!("({} + {})", self.scalar_int(d - 1), self.idx(d - 1)),
            3 => format!("({} * {})", self.idx(d - 1), self.scalar_int(d - 1)),
            4 => format!("({} % {})", self.idx(d - 1), self.scalar_int(d - 1)),
            5 => format!("({}).to::<i64>()", self.idx(d - 1)),
            6 => format!("arange({}, {} + {})", self.lit_int(), self.lit_int(), self.dim()),
            _ => format!("where_({}, {}, {})", self.mask(d - 1), self.idx(d - 1), self.lit_int()),
        }
    }

    fn ptr(&mut self) -> (String, String) {
        if self.s.ptrs.is_empty() {
            return ("x".to_string(), "f32".to_string());
        }
        self.rng.pick(&self.s.ptrs).clone()
    }

    fn ptrs(&mut self, d: usize) -> (String, String) {
        let (p, t) = self.ptr();
        let e = match self.rng.below(6) {
            0 => p.clone(),
            1 => format!("{p} + {}", self.scalar_int(d.saturating_sub(1))),
            2 => format!("{p} - {}", self.idx(d.saturating_sub(1))),
            3 => {
                let (a, b) = (self.idx(d.saturating_sub(1)), self.idx(d.saturating_sub(1)));
                format!("{p} + ({a}).as_col() * {} + ({b}).as_row()", self.dim)
            }
            _ => format!("{p} + {}", self.idx(d.saturating_sub(1))),
        };
        (e, t)
    }

    fn mask(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 1 } else { 5 };
        match self.rng.below(top) {
            0 => {
                let n = self.scalar_int(d.saturating_sub(1));
                format!("arange(0, {}) < {n}", self.dim)
            }
            1 => format!("({} < {})", self.idx(d - 1), self.scalar_int(d - 1)),
            2 => format!("({}) & ({})", self.mask(d - 1), self.mask(d - 1)),
            3 => format!("!({})", self.mask(d - 1)),
            _ => format!("({} >= {})", self.val(d - 1), self.lit_float()),
        }
    }

    fn load(&mut self, d: usize) -> String {
        let (p, t) = self.ptrs(d);
        let is_float = t.starts_with('f') || t.starts_with("bf");
        let v = match self.rng.below(3) {
            0 => format!("load({p})"),
            1 => format!("load({p}, {})", self.mask(d.saturating_sub(1))),
            _ => {
                let o = if is_float { self.lit_float() } else { self.lit_int() };
                format!("load({p}, {}, {o})", self.mask(d.saturating_sub(1)))
            }
        };
        if self.rng.chance(60) {
            format!("{v}.to::<f32>()")
        } else {
            v
        }
    }

    fn val(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        if d == 0 {
            return match self.rng.below(3) {
                0 => format!("zeros::<f32>([{}])", self.dim),
                1 if !self.s.locals.is_empty() => self.rng.pick(&self.s.locals).clone(),
                _ => format!("arange(0, {}).to::<f32>()", self.dim),
            };
        }
        match self.rng.below(16) {
            0 | 1 => self.load(d - 1),
            2 => {
                let op = *self.rng.pick(&["+", "-", "*", "/", "%"]);
                format!("({} {op} {})", self.val(d - 1), self.val(d - 1))
            }
            3 => format!("({} * {})", self.val(d - 1), self.lit_float()),
            4 => format!("{}({})", self.rng.pick(&["exp", "log", "sqrt", "abs", "sin", "cos", "exp2", "rsqrt", "floor"]), self.val(d - 1)),
            5 => format!("({}).to::<{}>().to::<f32>()", self.val(d - 1), self.dtype()),
            6 => format!("where_({}, {}, {})", self.mask(d - 1), self.val(d - 1), self.val(d - 1)),
            7 => format!("full::<{}>([{}], {})", self.dtype(), self.dim(), self.scalar_float(d - 1)),
            8 => format!("{}({}, {})", self.rng.pick(&["maximum", "minimum", "max", "min"]), self.val(d - 1), self.lit_float()),
            9 => format!("-{}", self.val(d - 1)),
            10 => format!("({}).sum(1)", self.val2(d - 1)),
            11 => format!("({}).max(0)", self.val2(d - 1)),
            12 => format!("({}).reshape([{}])", self.val(d - 1), self.dim),
            13 if !self.s.helpers.is_empty() => {
                let h = self.rng.pick(&self.s.helpers).clone();
                format!("{h}({})", self.val(d - 1))
            }
            13 => format!("({}).expand_dims(0).sum(0)", self.val(d - 1)),
            14 => format!("({} + {})", self.val(d - 1), self.scalar_float(d - 1)),
            _ => format!("({}).broadcast_to([{}])", self.scalar_float(d - 1), self.dim),
        }
    }

    fn val2(&mut self, d: usize) -> String {
        if d == 0 {
            return format!("zeros::<f32>([{}, {}])", self.dim, self.dim);
        }
        match self.rng.below(7) {
            0 => format!("({}).as_col() * ({}).as_row()", self.val(d - 1), self.val(d - 1)),
            1 => format!("dot({}, {})", self.val2(d - 1), self.val2(d - 1)),
            2 => format!("dot({}, {}, {})", self.val2(d - 1), self.val2(d - 1), self.val2(d - 1)),
            3 => format!("({}).trans()", self.val2(d - 1)),
            4 => {
                let (p, _) = self.ptr();
                let i = format!("arange(0, {})", self.dim);
                format!("load({p} + ({i}).as_col() * {} + ({i}).as_row()).to::<f32>()", self.dim)
            }
            5 => {
                let (a, b) = (self.dim(), self.dim());
                format!("zeros::<f32>([{a}, {b}])")
            }
            _ => {
                let v = self.lit_float();
                format!("full::<f32>([{}, {}], {v})", self.dim, self.dim)
            }
        }
    }

    fn any(&mut self, d: usize) -> String {
        match self.rng.below(8) {
            0 => self.scalar_int(d),
            1 => self.scalar_float(d),
            2 => self.idx(d),
            3 => self.ptrs(d).0,
            4 => self.mask(d),
            5 => self.val2(d),
            6 => self.load(d),
            _ => self.val(d),
        }
    }

    fn stmt(&mut self, d: usize) -> String {
        let top = if d == 0 { 5 } else { 12 };
        match self.rng.below(top) {
            0 => {
                let n = self.name("v");
                let e = self.val(2);
                self.s.locals.push(n.clone());
                format!("let {n} = {e};")
            }
            1 => {
                let n = self.name("i");
                let e = self.idx(2);
                format!("let {n} = {e};")
            }
            2 => {
                let n = self.name("acc");
                let init = self.val(1);
                let upd = self.val(2);
                let op = *self.rng.pick(&["=", "+=", "*=", "-="]);
                let upd = if op == "=" { format!("{n} + {upd}") } else { upd };
                format!("let mut {n} = {init}; {n} {op} {upd};")
            }
            3 | 4 => {
                let (p, t) = self.ptrs(1);
                let v = self.val(2);
                match self.rng.below(3) {
                    0 => format!("store({p}, ({v}).to::<{t}>());"),
                    1 => format!("store({p}, ({v}).to::<{t}>(), {});", self.mask(1)),
                    _ => format!("store({p}, {v}, {});", self.mask(1)),
                }
            }
            5 => {
                let var = self.name("k");
                let range = match self.rng.below(4) {
                    0 => format!("0..{}", self.scalar_int(1)),
                    1 => format!("({}..{}).step_by({})", self.scalar_int(1), self.scalar_int(1), self.scalar_int(0)),
                    2 => format!("range({}, {}, {})", self.scalar_int(1), self.lit_int(), self.rng.pick(&["-1", "1", "0", "-3", "2"])),
                    _ => format!("range(0, {})", self.scalar_int(1)),
                };
                let n = 1 + self.rng.below(3);
                format!("for {var} in {range} {{ {} }}", self.stmts(n, d - 1))
            }
            6 => {
                let n = 1 + self.rng.below(3);
                let m = self.rng.below(3);
                let c = self.cond(2);
                let then = self.stmts(n, d - 1);
                if m == 0 {
                    format!("if {c} {{ {then} }}")
                } else {
                    format!("if {c} {{ {then} }} else {{ {} }}", self.stmts(m, d - 1))
                }
            }
            7 if !self.s.fn_metas.is_empty() => {
                let meta = self.rng.pick(&self.s.fn_metas).clone();
                let v = self.name("t");
                let init = self.val(1);
                format!("let mut {v} = {init}; if let Some(f) = {meta} {{ {v} = f({v}); }} else {{ {v} = -{v}; }}")
            }
            8 => format!("if {} {{ return; }}", self.cond(1)),
            9 => {
                let n = self.name("s");
                let e = self.scalar_int(2);
                format!("let mut {n} = {e}; {n} += {};", self.scalar_int(1))
            }
            10 => format!("let {} = {};", self.name("w"), self.val2(2)),
            _ => {
                let n = 1 + self.rng.below(2);
                format!("{{ {} }}", self.stmts(n, d - 1))
            }
        }
    }

    fn stmts(&mut self, n: usize, d: usize) -> String {
        (0..n).map(|_| self.stmt(d)).collect::<Vec<_>>().join(" ")
    }
}

/// A whole random kernel: signature, attributes, optional autotune and helpers, body.
fn gen_kernel(rng: &mut Rng) -> String {
    let mut s = Scope::default();
    let mut generics = Vec::new();
    let mut kattr = Vec::new();
    let mut tuned = Vec::new();
    let int_vals = |rng: &mut Rng| -> String {
        let n = 1 + rng.below(3);
        let vals: Vec<String> = (0..n)
            .map(|_| {
                if rng.chance(15) {
                    rng.pick(EXTREME_INTS).to_string()
                } else {
                    rng.pick(&["1", "2", "4", "8", "16", "32", "64", "128", "256"]).to_string()
                }
            })
            .collect();
        vals.join(", ")
    };
    let autotune = rng.chance(25);
    for name in ["BLOCK", "BN", "r#type", "K_TILE"].iter().take(rng.below(4)) {
        let ty = if rng.chance(75) { "i32" } else { *rng.pick(&["i64", "i64", "i64", "u32", "usize", "u64", "isize", "f32", "bool", "Func"]) };
        generics.push(format!("const {name}: {ty}"));
        s.metas.push(name.to_string());
        if autotune && rng.chance(70) {
            tuned.push(name.to_string());
        } else if rng.chance(95) {
            kattr.push(format!("{name} = [{}]", int_vals(rng)));
        }
    }
    if rng.chance(30) {
        generics.push("const FLAG: bool".to_string());
        s.bools.push("FLAG".to_string());
        kattr.push(rng.pick(&["FLAG = [true, false]", "FLAG = [false]", "FLAG = [1]"]).to_string());
    }
    let helpers = rng.chance(30);
    if helpers {
        s.helpers = vec!["h0".to_string(), "h1".to_string()];
        if rng.chance(60) {
            generics.push(format!("const ACT: {}", rng.pick(&["Option<Func>", "Option<Func>", "Func"])));
            s.fn_metas.push("ACT".to_string());
            kattr.push(rng.pick(&["ACT = [None, Some(h0)]", "ACT = [Some(h1), Some(h0)]", "ACT = [h0]", "ACT = [None]"]).to_string());
        }
    }
    if rng.chance(25) {
        kattr.push(format!("num_warps = {}", rng.pick(&["1", "2", "4", "8", "32", "0", "3", "64"])));
    }
    let mut params = Vec::new();
    for i in 0..1 + rng.below(3) {
        let t = if rng.chance(90) { *rng.pick(&["f32", "f32", "f16", "bf16", "i32", "i64", "u32", "f64"]) } else { *rng.pick(&["bool", "u8", "usize"]) };
        let n = if rng.chance(4) { format!("r#type{}", "_".repeat(i)) } else { format!("p{i}") };
        params.push(format!("{n}: Ptr<{t}>"));
        s.ptrs.push((n, t.to_string()));
    }
    for i in 0..rng.below(3) {
        let t = *rng.pick(&["i32", "i32", "i64", "u32", "f32", "bool", "f16"]);
        let n = format!("n{i}");
        params.push(format!("{n}: {t}"));
        match t {
            "f32" | "f16" => s.floats.push(n),
            "bool" => s.bools.push(n),
            _ => s.ints.push(n),
        }
    }
    let mut attrs = String::new();
    let _ = write!(attrs, "#[kernel({})]", kattr.join(", "));
    if autotune {
        let nconf = 1 + rng.below(3);
        let confs: Vec<String> = (0..nconf)
            .map(|_| {
                let mut parts: Vec<String> = tuned
                    .iter()
                    .map(|t| format!("{t} = {}", if rng.chance(10) { rng.pick(EXTREME_INTS) } else { rng.pick(&["16", "32", "64"]) }))
                    .collect();
                if rng.chance(50) {
                    parts.push(format!("num_warps = {}", rng.pick(&["1", "2", "4", "8", "5"])));
                }
                if rng.chance(30) {
                    parts.push(format!("num_stages = {}", rng.pick(&["1", "3", "8", "0"])));
                }
                format!("config({})", parts.join(", "))
            })
            .collect();
        let key = if s.ints.is_empty() || rng.chance(20) { String::new() } else { format!(", key = [{}]", s.ints.join(", ")) };
        let _ = write!(attrs, "#[autotune(configs = [{}]{key})]", confs.join(", "));
    }
    let mut g = Gen::new(rng, s);
    let n = 2 + g.rng.below(5);
    let body = g.stmts(n, 2);
    let gens = if generics.is_empty() { String::new() } else { format!("<{}>", generics.join(", ")) };
    let kname = if g.rng.chance(5) { "r#loop" } else { "k" };
    let kernel = format!("{attrs} fn {kname}{gens}({}) {{ {body} }}", params.join(", "));
    if !helpers {
        return kernel;
    }
    let h0 = match g.rng.below(4) {
        0 => "where_(x >= 0.0, x, 0.01 * x)",
        1 => "let y = x * 2.0; y + 1.0",
        2 => "h1(x) * 0.5",
        _ => "exp(x)",
    };
    let h1 = match g.rng.below(4) {
        0 => "x - 1.0",
        1 => "h0(x)",
        2 => "return x * 3.0;",
        _ => "sqrt(abs(x))",
    };
    let h1_sig = if g.rng.chance(20) { "x: Block<f16>" } else { "x: Block" };
    format!(
        "#[kernel_module] mod m {{ #[helper] fn h0(x: Block) -> Block {{ {h0} }} #[helper] fn h1({h1_sig}) -> Block {{ {h1} }} {kernel} }}"
    )
}

// ==================================================================== driver

#[derive(Default, Debug)]
struct Stats {
    tried: u64,
    rejected: u64,
    no_entry: u64,
    expanded_ok: u64,
    expanded_errors: u64,
    parser_panics: u64,
    /// Clean expansions not re-parsed (larger than `MAX_CHECKED_TOKENS`).
    unchecked: u64,
    /// Distinct bugs: (panic location or message, first input, count).
    bugs: Vec<(String, String, u64)>,
    slowest: (Duration, String),
    elapsed: Duration,
}

impl Stats {
    fn reached(&self) -> u64 {
        self.expanded_ok + self.expanded_errors + self.bugs.iter().map(|b| b.2).sum::<u64>()
    }

    fn record(&mut self, src: &str, outcome: Outcome, took: Duration) {
        self.tried += 1;
        if took > self.slowest.0 {
            self.slowest = (took, src.to_string());
        }
        match outcome {
            Outcome::Rejected => self.rejected += 1,
            Outcome::NoEntry => self.no_entry += 1,
            Outcome::Expanded { errors: false } => self.expanded_ok += 1,
            Outcome::Expanded { errors: true } => self.expanded_errors += 1,
            Outcome::ParserPanic(_) => self.parser_panics += 1,
            Outcome::Panicked(m) | Outcome::InvalidOutput(m) => {
                let key = bug_key(&m);
                match self.bugs.iter_mut().find(|b| bug_key(&b.0) == key) {
                    Some(b) => b.2 += 1,
                    None => self.bugs.push((m, src.to_string(), 1)),
                }
            }
        }
    }

    fn merge(&mut self, o: Stats) {
        self.tried += o.tried;
        self.rejected += o.rejected;
        self.no_entry += o.no_entry;
        self.expanded_ok += o.expanded_ok;
        self.expanded_errors += o.expanded_errors;
        self.parser_panics += o.parser_panics;
        self.unchecked += o.unchecked;
        for b in o.bugs {
            match self.bugs.iter_mut().find(|x| bug_key(&x.0) == bug_key(&b.0)) {
                Some(x) => x.2 += b.2,
                None => self.bugs.push(b),
            }
        }
        if o.slowest.0 > self.slowest.0 {
            self.slowest = o.slowest;
        }
        self.elapsed = self.elapsed.max(o.elapsed);
    }

    fn summary(&self) -> String {
        let pct = |x: u64| if self.tried == 0 { 0.0 } else { 100.0 * x as f64 / self.tried as f64 };
        format!(
            "{} inputs in {:.1?} ({:.0}/s): {} rejected by syn ({:.1}%), {} parsed without a kernel entry point ({:.1}%), \
             {} reached the macro ({:.1}%: {} expanded cleanly, {} with compile errors), {} distinct bug(s), \
             {} lexer/syn panic(s); {} clean expansions too large to re-parse; slowest input {:.1?}",
            self.tried,
            self.elapsed,
            self.tried as f64 / self.elapsed.as_secs_f64().max(1e-9),
            self.rejected,
            pct(self.rejected),
            self.no_entry,
            pct(self.no_entry),
            self.reached(),
            pct(self.reached()),
            self.expanded_ok,
            self.expanded_errors,
            self.bugs.len(),
            self.parser_panics,
            self.unchecked,
            self.slowest.0,
        )
    }
}

/// Groups panics by location (`at file:line`), or by message for invalid outputs.
fn bug_key(msg: &str) -> String {
    match msg.rfind("(at ") {
        Some(i) => msg[i..].to_string(),
        None => msg.chars().take(60).collect(),
    }
}

/// Fuzzes `iters` inputs (or until `deadline`) from `seed`.
fn fuzz(iters: u64, seed: u64, extra_seeds: &[String], deadline: Option<Instant>, progress: bool) -> Stats {
    let mut rng = Rng::new(seed);
    let mut seeds: Vec<&str> = SEEDS.iter().map(|s| s.2).collect();
    seeds.extend(extra_seeds.iter().map(|s| s.as_str()));
    let start = Instant::now();
    let unchecked_before = UNCHECKED.with(|u| u.get());
    let mut stats = Stats::default();
    // Mutants that expanded cleanly: valid kernels that reach every backend.
    let mut pool: Vec<String> = Vec::new();
    const POOL: usize = 256;
    const MAX_LEN: usize = 24_000;
    for it in 0..iters {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let mut src = match rng.below(20) {
            0..=8 => rng.pick(&seeds).to_string(),
            9..=15 if !pool.is_empty() => rng.pick(&pool).clone(),
            _ => gen_kernel(&mut rng),
        };
        let rounds = {
            let mut n = 1;
            while n < 8 && rng.chance(45) {
                n += 1;
            }
            n
        };
        for _ in 0..rounds {
            // A panic of proc_macro2 or syn while mutating only loses this mutation.
            let mutated = guarded(|| match rng.below(20) {
                k @ 0..=11 => {
                    let mut t = parse_toks(&src);
                    let mut names = Vec::new();
                    idents_of(&t, &mut names);
                    mutate_tokens(&mut rng, &mut t, &names, &seeds, k >= 9);
                    Some(stream(&t).to_string())
                }
                _ => mutate_syntax(&mut rng, &src),
            });
            if let Ok(Some(s)) = mutated {
                src = s;
            }
        }
        if src.len() > MAX_LEN {
            continue;
        }
        let t0 = Instant::now();
        let outcome = run_source(&src);
        let took = t0.elapsed();
        if outcome == (Outcome::Expanded { errors: false }) {
            if pool.len() < POOL {
                pool.push(src.clone());
            } else {
                let i = rng.below(POOL);
                pool[i] = src.clone();
            }
        }
        if outcome.is_bug() && progress {
            println!("fuzz: bug at input {it}: {outcome:?}\n{src}\n");
        }
        stats.record(&src, outcome, took);
        if progress && (it + 1) % 50_000 == 0 {
            println!(
                "fuzz[{seed}]: {} inputs ({} rejected by syn, {} reached the macro), {} bugs, {:.0?}",
                it + 1,
                stats.rejected,
                stats.reached(),
                stats.bugs.len(),
                start.elapsed()
            );
        }
    }
    stats.elapsed = start.elapsed();
    stats.unchecked = UNCHECKED.with(|u| u.get()) - unchecked_before;
    stats
}

/// Greedy token-level reduction of `src` while it still fails with the same bug.
fn reduce(src: &str, budget: usize) -> String {
    let key = match run_source(src) {
        o @ (Outcome::Panicked(_) | Outcome::InvalidOutput(_)) => bug_key(&format!("{o:?}")),
        _ => return src.to_string(),
    };
    let same = |t: &[Tok]| -> bool {
        match run_source(&stream(t).to_string()) {
            o @ (Outcome::Panicked(_) | Outcome::InvalidOutput(_)) => bug_key(&format!("{o:?}")) == key,
            _ => false,
        }
    };
    let mut best = parse_toks(src);
    let mut runs = 0;
    let mut progress = true;
    while progress && runs < budget {
        progress = false;
        let mut all = Vec::new();
        lists(&best, &mut vec![], false, false, &mut all);
        for path in all {
            let mut chunk = path_valid(&mut best.clone(), &path).map_or(0, |l| l.len());
            while chunk >= 1 && runs < budget {
                let mut i = 0;
                loop {
                    let mut cand = best.clone();
                    let Some(list) = path_valid(&mut cand, &path) else { break };
                    if i >= list.len() {
                        break;
                    }
                    let end = (i + chunk).min(list.len());
                    list.drain(i..end);
                    runs += 1;
                    if same(&cand) {
                        best = cand;
                        progress = true;
                    } else {
                        i += chunk;
                    }
                    if runs >= budget {
                        break;
                    }
                }
                chunk /= 2;
            }
        }
    }
    stream(&best).to_string()
}

/// `list_at` for a path that may no longer exist after reductions.
fn path_valid<'a>(v: &'a mut Vec<Tok>, path: &[usize]) -> Option<&'a mut Vec<Tok>> {
    match path.split_first() {
        None => Some(v),
        Some((i, rest)) => match v.get_mut(*i)? {
            Tok::Group(_, inner) => path_valid(inner, rest),
            Tok::Leaf(_) => None,
        },
    }
}

/// Extra seeds for long runs: the pass and compile-fail cases and the examples, if present.
fn workspace_seeds() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let mut dirs = vec![root.join("tests/tests/pass"), root.join("examples/src"), root.join("tests/src")];
    if let Ok(rd) = std::fs::read_dir(root.join("tests/tests/ui")) {
        dirs.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        let mut files: Vec<_> = rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "rs")).collect();
        files.sort();
        for f in files {
            if let Ok(s) = std::fs::read_to_string(&f) {
                if s.contains("#[kernel") {
                    out.push(s);
                }
            }
        }
    }
    out
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.replace('_', "").parse().ok()).unwrap_or(default)
}

/// Whether this build panics on integer overflow (as the dev profile does).
fn overflow_checks_on() -> bool {
    let x = std::hint::black_box(i32::MAX);
    guarded(|| std::hint::black_box(x + std::hint::black_box(1))).is_err()
}

/// Runs `f` on a thread with a large stack: syn and the lowering recurse on nesting depth.
fn on_big_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new().stack_size(256 << 20).spawn(f).expect("spawn a fuzz thread").join().expect("fuzz thread")
}

fn report_bugs(stats: &Stats, reduce_budget: usize) -> String {
    let mut out = String::new();
    for (msg, src, n) in &stats.bugs {
        let small = reduce(src, reduce_budget);
        let _ = writeln!(out, "BUG ({n} inputs): {msg}\n  input:   {src}\n  reduced: {small}\n");
    }
    out
}

fn check_regressions() {
    for (name, errors, src) in REGRESSIONS {
        let o = run_source(src);
        assert_eq!(o, Outcome::Expanded { errors: *errors }, "regression `{name}`:\n{src}");
    }
}

fn check_seeds() {
    for (name, valid, src) in SEEDS {
        let o = run_source(src);
        assert_eq!(o, Outcome::Expanded { errors: !valid }, "seed `{name}` (valid: {valid}) expanded unexpectedly");
    }
}

// ==================================================================== tests

#[test]
fn fuzz_quick() {
    std::env::remove_var("KERNEL_DUMP");
    check_regressions();
    check_seeds();
    let iters = 2_500;
    let stats = on_big_stack(move || fuzz(iters, 0x5eed, &[], None, false));
    println!("fuzz_quick: {}", stats.summary());
    assert!(stats.bugs.is_empty(), "the macro panicked or produced invalid output:\n{}", report_bugs(&stats, 300));
    assert!(stats.reached() > iters / 4, "too few inputs reached the macro: {}", stats.summary());
}

#[test]
#[ignore = "long fuzzing run: KERNEL_FUZZ_ITERS, KERNEL_FUZZ_THREADS, KERNEL_FUZZ_SEED, KERNEL_FUZZ_SECS"]
fn fuzz_long() {
    std::env::remove_var("KERNEL_DUMP");
    check_regressions();
    let iters = env_u64("KERNEL_FUZZ_ITERS", 200_000);
    let threads = env_u64("KERNEL_FUZZ_THREADS", std::thread::available_parallelism().map_or(1, |n| n.get() as u64)).max(1);
    let seed = env_u64("KERNEL_FUZZ_SEED", 1);
    let deadline = std::env::var("KERNEL_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).map(|s| Instant::now() + Duration::from_secs(s));
    if !overflow_checks_on() {
        println!("fuzz_long: WARNING: built without overflow checks, so arithmetic overflows go unnoticed; set CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true");
    }
    let extra = workspace_seeds();
    println!("fuzz_long: {iters} inputs on {threads} thread(s) from seed {seed}, {} seeds ({} from the workspace)", SEEDS.len() + extra.len(), extra.len());
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let extra = extra.clone();
            let n = iters / threads + u64::from(t < iters % threads);
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn(move || fuzz(n, seed.wrapping_add(t.wrapping_mul(0x1000_0001)), &extra, deadline, true))
                .expect("spawn a fuzz thread")
        })
        .collect();
    let mut stats = Stats::default();
    for h in handles {
        stats.merge(h.join().expect("fuzz thread"));
    }
    println!("fuzz_long: {}", stats.summary());
    if stats.slowest.0 > Duration::from_millis(500) {
        println!("fuzz_long: slowest input ({:.1?}):\n{}\n", stats.slowest.0, stats.slowest.1);
    }
    let bugs = on_big_stack({
        let stats_bugs = stats.bugs.clone();
        move || report_bugs(&Stats { bugs: stats_bugs, ..Stats::default() }, 4000)
    });
    println!("{bugs}");
    assert!(stats.bugs.is_empty(), "{} distinct bug(s) found", stats.bugs.len());
}

/// Runs the file `KERNEL_FUZZ_INPUT` through the harness and prints what happened (for
/// minimizing a crash by hand).
#[test]
#[ignore = "runs one input: KERNEL_FUZZ_INPUT=path"]
fn fuzz_one() {
    std::env::remove_var("KERNEL_DUMP");
    let path = std::env::var("KERNEL_FUZZ_INPUT").expect("set KERNEL_FUZZ_INPUT to a source file");
    let src = std::fs::read_to_string(&path).expect("read KERNEL_FUZZ_INPUT");
    let t0 = Instant::now();
    let (o, msgs) = on_big_stack(move || (run_source(&src), error_messages(&src)));
    println!("fuzz_one: {o:?} in {:.1?}", t0.elapsed());
    for m in msgs {
        println!("  error: {m}");
    }
}

/// The messages of the `compile_error!`s the macros expand `src` to.
fn error_messages(src: &str) -> Vec<String> {
    fn walk(ts: TokenStream, out: &mut Vec<String>) {
        let v: Vec<TokenTree> = ts.into_iter().collect();
        for (i, t) in v.iter().enumerate() {
            match t {
                TokenTree::Ident(id) if id == "compile_error" => {
                    if let Some(TokenTree::Group(g)) = v.get(i + 2) {
                        out.push(g.stream().to_string());
                    }
                }
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    let Ok(mut file) = syn::parse_str::<syn::File>(src) else { return out };
    for item in std::mem::take(&mut file.items) {
        let expanded = match item {
            syn::Item::Fn(mut f) => match take_attr(&mut f.attrs, "kernel") {
                Some(Some(a)) => guarded(move || crate::expand_kernel_fn(a, f)),
                _ => continue,
            },
            syn::Item::Mod(mut m) => match take_attr(&mut m.attrs, "kernel_module") {
                Some(Some(a)) => guarded(move || module::expand(a, m)),
                _ => continue,
            },
            _ => continue,
        };
        match expanded {
            Ok(ts) => walk(ts, &mut out),
            Err(p) => out.push(format!("PANIC: {p}")),
        }
    }
    out
}


