//! # The block language reference
//!
//! A kernel body is Rust syntax with block semantics. The `#[kernel]` macro reads it, infers
//! the dtype and the (symbolic) shape of every value, and reports violations as ordinary
//! compile errors at the offending expression. Everything below is what a body may use;
//! anything else is a compile error that says what to use instead.
//!
//! ## Values
//!
//! | kind | examples |
//! |---|---|
//! | scalar parameters | `M: i32`, `scale: f32` (also `f64`, `i8`, `i16`, `i64`, `u8`, `u16`, `u32`, `bool`; not `f16`, `bf16` or the 8-bit floats: pass an f32 and convert) |
//! | pointer parameters | `a_ptr: Ptr<f16>` (also `bf16`, `f32`, `f64`, `f8e4m3`, `f8e5m2`, `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`; not `bool`) |
//! | meta-parameters (compile time) | `const BLOCK_M: i32`, `const EVEN_K: bool`, `const ACTIVATION: Option<Func>` |
//! | literals | `0`, `1.5`, `true`, `2i64`, `7u8`, `0.5f32`, `f32::NEG_INFINITY`, `i32::MAX`, `i8::MIN` |
//! | blocks | results of `arange`, `zeros`, `full`, `load`, and operations on blocks |
//!
//! A pointer parameter receives the first element of the tensor passed to it (its storage
//! offset included) and nothing about its shape or strides: `x_ptr + i` is the `i`-th storage
//! element from there. Index a tensor that may be a transposed or narrowed view with strides
//! passed as scalar parameters (`x_ptr + rows * stride_r + cols * stride_c`), or have the
//! wrapper refuse other layouts (`Tensor::require_contiguous`).
//!
//! Literals, the constants `INFINITY`, `NEG_INFINITY` and `NAN`, `full` of a literal without a
//! dtype, and integer meta-parameters are *weak*: `offs * 4` keeps `offs`'s dtype and
//! `x * 0.5` keeps `x`'s float dtype. Strong dtypes promote like Triton's (`f16` with `f32`
//! gives `f32`; `i32` with `i64` gives `i64`; `u8` with `i16` gives `i16`; an integer with a
//! float gives the float), except that `f16` with `bf16`, and a signed with an unsigned
//! integer of the same width (`i32` with `u32`, `i8` with `u8`), are errors: convert one side
//! with `.to::<T>()`. A weak literal must fit the dtype it takes (`x_i8 * 200` is an error).
//!
//! The element types are `f16`, `bf16`, `f32`, `f64`, `i8`, `i16`, `i32`, `i64`, `u8`, `u16`,
//! `u32` and `bool` (masks). As in Triton, arithmetic on `i8`/`i16`/`u8`/`u16` stays in the
//! type and wraps like Rust's `wrapping_add` (`x_u8 + 1` gives 0 for 255); only `sum` and
//! `cumsum` widen: they accumulate and give `i32` for `i8`/`i16` and `u32` for `u8`/`u16`
//! (`max`, `min`, `xor_sum`, `cumprod` keep the type). Atomics do not take the 8- and 16-bit
//! integer types.
//!
//! The 8-bit floats `f8e4m3` (4 exponent bits, 3 mantissa bits, largest value 448, no
//! infinities: PyTorch's `float8_e4m3fn`, Triton's `float8e4nv`) and `f8e5m2` (largest finite
//! value 57344: PyTorch's `float8_e5m2`) are storage types with the float rules: on the host
//! `Tensor<f8e4m3>` and `Tensor<f8e5m2>` (the `float8` crate's `F8E4M3` and `F8E5M2`, exported
//! as `kernel_runtime::f8e4m3` and `kernel_std::prelude::f8e4m3`); in kernels loads, stores,
//! `.to::<f8e4m3>()` from and to every type, and arithmetic, comparisons, math and
//! reductions computed in f32 and rounded once, like `f16`. Conversions to them round to
//! nearest even and **saturate**: a value beyond the largest finite one, or an infinity,
//! gives the largest finite value with its sign (NaN stays NaN), as PTX's `cvt.rn.satfinite`
//! does; so an `f8e5m2` result of arithmetic is never infinite. Conversions from them are
//! exact. Both backends give the same bits (on sm_90a one `cvt` instruction each way, on other
//! GPUs and for conversions from f64 a software conversion; NaN payloads may differ). `f8e4m3`
//! with `f8e5m2` or with `f16`, `bf16` or `f32` promotes to `f32` (with `f64` to `f64`).
//!
//! ## Program instances
//!
//! | function | meaning |
//! |---|---|
//! | `program_id(axis)` | index of this program along grid axis 0, 1 or 2 (`i32`) |
//! | `num_programs(axis)` | grid size along that axis (`i32`) |
//!
//! ## Creating blocks
//!
//! | function | result |
//! |---|---|
//! | `arange(start, end)` | `i32[end - start]`: `start, start+1, ...`; `end - start` must be a power of two or a multiple of 16 in every instance |
//! | `zeros::<T>([d0, d1, ...])` | a block of zeros (dtype `f32` if no `T` is given) |
//! | `full::<T>([d0, ...], value)` | a block filled with a scalar |
//!
//! Block dimensions are integer literals and integer meta-parameters combined with `+ - *`.
//!
//! ## Shapes and broadcasting
//!
//! Operands broadcast with NumPy's rules. Triton's `x[:, None]` and `x[None, :]` are spelled
//! `x.as_col()` (shape `[N, 1]`) and `x.as_row()` (shape `[1, N]`); `x.expand_dims(axis)`
//! inserts a unit axis anywhere. `x.trans()` transposes a 2-D block; `x.reshape([..])` and
//! `x.broadcast_to([..])` change the shape.
//!
//! ```ignore
//! let a_ptrs = a_ptr + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
//! ```
//!
//! ## Operators
//!
//! `+ - * / %` (integer `/` and `%` truncate toward zero like Rust's; integer division by zero is
//! an error on the CPU backend), comparisons `< <= > >= == !=` giving masks (`bool` blocks),
//! `& | ^ !` on masks and integers, `<< >>` on integers (as in PTX, a shift by the bit width or
//! more, or by a negative amount, shifts every bit out: `0`, or `-1` for `>>` of a negative
//! value), unary `-`. Pointers support
//! `ptrs + offsets`, `ptrs - offsets` and `ptrs += offsets` with integer offsets. `&&` and `||`
//! are not supported: masks are combined elementwise with `&` and `|`.
//!
//! ## Functions
//!
//! | function | meaning |
//! |---|---|
//! | `load(ptrs)`, `load(ptrs, mask)`, `load(ptrs, mask, other)` | read a block; masked-off lanes are not read and take `other` (or 0) |
//! | `store(ptrs, value)`, `store(ptrs, value, mask)` | write a block; `value`'s dtype must be the pointer's (convert with `.to::<T>()`) |
//! | `dot(a, b)`, `dot(a, b, acc)` | `[M, K] x [K, N]` product of f16/bf16/f32 blocks, or of 8-bit float blocks (`f8e4m3` and `f8e5m2`, mixed or not), accumulated in f32; of `i8`/`u8` blocks (mixed or not), exact products summed in i32 (wrapping); `acc += dot(a, b)` also works. On the GPU f16/bf16 and 8-bit products run on the tensor cores (8-bit operands widened to f16 in shared memory, exactly; 8-bit float K loops software-pipelined like f16 ones, without tensor maps; `i8`/`u8` K loops not, and their `dot`s on the tensor cores only while `K * max|a| * max|b| <= 2^24`), the others (f32, and larger 8-bit integer products) on the CUDA cores |
//! | `where_(mask, a, b)` | elementwise select (`where` is a Rust keyword) |
//! | `exp exp2 log log2 sqrt rsqrt sin cos floor ceil` | float math, as `exp(x)` or `x.exp()`: f32, f16 and bf16 in f32 (on the GPU with the `.approx` instructions Triton uses for `exp`, `log`, `rsqrt`, `sin`, `cos`, `exp` and `exp2` giving 0 for results below 2^-126 on both backends, as Triton's `ex2.approx.ftz` does; `sqrt` is correctly rounded), f64 in f64 on both backends |
//! | `expm1 log10 log1p tanh erf`, `pow(x, y)` | float math computed by the same code on both backends (the same bits on the CPU and the GPU): f32, f16 and bf16 in f32 (rounded once), f64 in f64; `libm`'s functions, but for f32 `tanh` and `erf`, which are `kernel-math`'s (within 2 ulp, short: one per element of a GELU epilogue) |
//! | `sigmoid(x)` | `1 / (1 + exp(-x))` with the `exp` above |
//! | `rint(x)`, `trunc(x)`, `round(x)` | round floats to integer values: to nearest with halves to even (`rint`, what a quantizer applies before `.to::<i8>()`), towards zero, to nearest with halves away from zero (libdevice's `rint`, `trunc`, `round`); exact, the same bits on both backends (f16, bf16 and 8-bit floats through f32, f64 in f64) |
//! | `fma(a, b, c)`, `a.fma(b, c)` | `a * b + c` rounded once (f16/bf16: computed in f32, then rounded to the dtype) |
//! | `sqrt_rn(x)`, `div_rn(x, y)` | correctly rounded square root and division (what `sqrt` and `/` already are here) |
//! | `clamp(x, lo, hi)` | `minimum(maximum(x, lo), hi)`: a NaN `x` gives `lo` (Triton's default) |
//! | `isnan(x)`, `isinf(x)` | masks of the NaN and infinite elements of a float block |
//! | `abs(x)` | absolute value of floats and integers (integers wrap: `abs(i32::MIN)` is `i32::MIN`) |
//! | `umulhi(x, y)` | the high half (8, 16, 32 or 64 bits, by the dtype) of the product of two integers, read as unsigned |
//! | `minimum(a, b)`, `maximum(a, b)`, `min(a, b)`, `max(a, b)` | elementwise min/max (on scalars too); a NaN operand is ignored, as in Triton's default and PTX `min`/`max`. `max(block, 0)` with an integer literal is an error: Triton's `tl.max(x, 0)` is the reduction `x.max(0)`, the elementwise form is `maximum(x, 0)` |
//! | `cdiv(a, b)` | `(a + b - 1) / b` |
//! | `x.sum(axis)`, `x.max(axis)`, `x.min(axis)`, `sum(x, axis)` | reductions along an axis (f16/bf16 accumulate in f32; i8/i16 sums give i32 and u8/u16 sums u32, as in Triton; `max`/`min` ignore NaNs) |
//! | `x.xor_sum(axis)`, `xor_sum(x, axis)` | bitwise xor of integers along an axis |
//! | `x.argmax(axis)`, `x.argmin(axis)` (also `argmax(x, axis)`) | `i32` index of the first maximum (minimum) along an axis: ties give the lowest index, NaNs are ignored as by `max`, a line of NaNs gives 0 |
//! | `cumsum(x, axis, reverse)`, `x.cumprod(axis)`, ... | inclusive scans along an axis (`axis` 0 and `reverse` false when left out, as in Triton; `reverse` scans from the end); same shape and dtype, f16/bf16 accumulate in f32 (`cumsum` of i8/i16 gives i32, of u8/u16 u32) |
//! | `associative_scan(x, axis, combine)`, `associative_scan(x, axis, combine, reverse)` | inclusive scan with a combine function: a `#[helper]` (or a function meta-parameter naming one) of two scalars that is one expression of them, e.g. `fn add(a: f32, b: f32) -> f32 { a + b }`; it must be associative (the GPU combines runs of the line in parallel), it need not be commutative; computed in the block's dtype |
//! | `reduce(x, axis, combine)` | the line folded with a combine function, first element first; the axis is removed |
//! | `x.to::<T>()`, `x as T` | dtype conversion with Rust's `as` rules on both backends: integer to integer wraps (truncates, or extends by the source's sign), float to integer truncates toward zero and saturates (NaN gives 0), to a float rounds to nearest even, to `bool` is `!= 0` |
//!
//! ## Random numbers
//!
//! | function | result |
//! |---|---|
//! | `randint(seed, offsets)` | `u32` block (the shape of `offsets`) of Philox random words |
//! | `rand(seed, offsets)` | `f32` uniform in `[0, 1)` |
//! | `randn(seed, offsets)` | `f32` standard normal (Box–Muller) |
//! | `let (r0, r1, r2, r3) = randint4x(seed, offsets);` (also `rand4x`, `randn4x`) | the four values of one Philox call (`_` skips one) |
//!
//! Triton's generator number for number ([`crate::random`]): the same `(seed, offsets)` give
//! the same integers and uniforms as `tl.randint`/`tl.rand` in Triton 3.6, on both backends;
//! normals agree with Triton's to about 1e-6 (it uses the GPU's approximate square root) and
//! with each other bit for bit. `seed` is an i32, u32 or i64 scalar; `offsets` are i32, u32
//! or i64 integers, and as in
//! Triton, i32/u32 offsets are 32-bit counters while i64 offsets use the high word too. An
//! optional third argument sets the rounds (`rand(seed, offsets, 7)`; default 10).
//!
//! ## Atomics
//!
//! | function | meaning |
//! |---|---|
//! | `atomic_add(ptrs, val)`, `atomic_add(ptrs, val, mask)`, `atomic_add(ptrs, val, mask, sem, scope)` | adds `val` to every element `ptrs` point to (where `mask` holds), atomically; gives the old values (0 where masked off) |
//! | `atomic_max`, `atomic_min` | the same with `maximum`/`minimum` (a NaN operand is ignored) |
//! | `atomic_and`, `atomic_or`, `atomic_xor` | the same with the bitwise operations (integers) |
//! | `atomic_xchg` | writes `val`, giving the old values |
//! | `atomic_cas(ptrs, cmp, val)`, `atomic_cas(ptrs, cmp, val, sem, scope)` | writes `val` where the element holds `cmp` (compared bit for bit); gives the old values |
//!
//! `add`, `max`, `min`, `xchg` and `cas` work on f16, bf16, f32, f64, i32, u32 and i64; the
//! bitwise ones on i32, u32 and i64 (none on i8, i16, u8, u16). Pointers, values and the mask broadcast together: a scalar
//! pointer with a block of values is updated once per lane; a scalar atomic (scalar pointer and
//! value) runs once per program, and every thread of the program sees its old value. As in
//! Triton, `sem` is `"acq_rel"` unless given (`"relaxed"`, `"acquire"`, `"release"`) and `scope`
//! is `"gpu"` (`"cta"`, `"sys"`), both string literals. The result may be dropped
//! (`atomic_add(hist + bins, 1, mask);`). On the GPU these are `atom` instructions (float
//! `max`/`min`, bf16 add and 16-bit exchange are compare-and-swap loops); on the CPU backend,
//! whose program instances run on several threads, atomic operations on the same storage.
//!
//! ## Hints
//!
//! `multiple_of(offs, 16)`, `max_contiguous(offs, 64)` and `max_constancy(offs, 8)` (also with a
//! list, one value per axis: `multiple_of(x, [16, 1])`; each value a positive integer known at
//! compile time, such as `multiple_of(offs_am, BLOCK_SIZE_M)`) are accepted as in Triton and
//! give their first argument: ported code compiles unchanged.
//!
//! **`multiple_of` on a scalar** — an integer (`multiple_of(stride, 8)`, `multiple_of(start,
//! BLOCK)`) or a pointer (`multiple_of(x_ptr, 16)`: its address in bytes) — is a promise the
//! GPU code relies on. The divisor is a positive integer known at compile time (a literal, a
//! meta-parameter or arithmetic on them). The code generator knows, when the kernel is
//! compiled, a power of two that each integer and pointer value is a multiple of (from
//! literals, meta-parameters, `arange` starts, `+ - * <<`, loop variables and these hints), and
//! leaves out the run-time alignment tests that settles: with the row pointer, the stride and
//! the row length hinted, a row kernel's memory phases run their clean copy (one 16-byte access
//! per chunk, no mask in the element code) without testing the alignment of the row or the
//! length of the kept prefix, and the copy with 4-byte pieces is not generated
//! (`tests/src/hints.rs`). The promise is checked where it is made (one test per program, also
//! with `#[kernel(asserts = false)]`), except where the code generator proves it (Triton's
//! `start = multiple_of(start, BLOCK)` on a loop over `range(0, n, BLOCK)` costs nothing): where
//! it does not hold, the program stops there and the launch fails with the `device_assert`
//! report, whose message names the hint (`the hint `multiple_of(stride, 8)` does not hold`) and
//! whose operand is the value (for a pointer, its address). On the CPU backend a pointer's
//! address is its offset from the start of its tensor's storage, in bytes (the GPU's device
//! allocations start 256-byte aligned), and every hint is checked. A check in a loop keeps that
//! loop from being software-pipelined: state hints on values before the loop where you can.
//!
//! The hints on blocks change nothing: the code generator finds contiguity and constancy along
//! a block itself (affine analysis of the offsets) and tests at run time what depends on
//! run-time values.
//!
//! ## Debugging
//!
//! | function | meaning |
//! |---|---|
//! | `device_assert(cond)`, `device_assert(cond, "message")` | where the mask `cond` (a bool scalar or block) is false, the launch fails with a typed error |
//! | `device_print("prefix", values...)` | prints the prefix and the values, with the program id, one line per element |
//! | `static_assert(cond)`, `static_assert(cond, "message")` | checked at `cargo build` on the meta-parameters of every instance: a false one is a compile error |
//! | `static_print(values...)` | the values of every instance, computed at `cargo build`, as a compiler warning |
//! | `debug_barrier()` | every thread of the program's block waits for the others (`bar.sync`; Triton's `tl.debug_barrier`): stores before it are seen by loads after it anywhere in the block. Nothing on the CPU backend, which runs each program on one thread. A loop with it is not software-pipelined |
//! | `#[kernel(asserts = false)]` | the kernel's `device_assert`s are type-checked but run on neither backend (Triton's default without `debug=True`); they cost nothing |
//!
//! **`device_assert`** reports the program's first failing element (row-major) as a
//! `kernel_runtime::cpu::AssertionFailure`: the kernel,
//! line and column, the condition as written, the message, the program id, the element's flat
//! index (none for a scalar condition) and, when the condition is a comparison, the values of
//! its two sides there (`device_assert(v < limit, "...")` reports `v = 1000, limit = 100`).
//! On the CPU backend the program stops and the launch returns
//! `LaunchError::Kernel(KernelError::Assertion(..))`; on the GPU the program goes on (like the
//! others), the first failure of a launch is recorded in the fault record that out-of-bounds
//! accesses use, and the device reports `DeviceError::Assertion` when it next synchronizes (the
//! launch itself with `KERNEL_SYNC=1`); `LaunchError::assertion()` and
//! `DeviceError::assertion()` give the failure either way. Assertions are compiled in unless
//! the kernel says `#[kernel(asserts = false)]`, and cost a vote per block statement on the GPU
//! (a block-wide minimum only when one fails).
//! Masked-off lanes are checked too: combine the mask in (`device_assert(!m | (v < limit))`).
//!
//! **`device_print`** takes a string literal prefix and values (scalars or blocks, not
//! pointers), broadcast together; it writes `pid (x, y, z) idx (i, j) <prefix> v1, v2` for every
//! element, or `pid (x, y, z) <prefix> v1` once per program when the values are scalars. The
//! CPU backend prints to stdout (each program's lines at once; programs run in parallel); the
//! GPU uses `printf` (`vprintf`, flushed when the device synchronizes), floats with `%g` and
//! enough digits to tell values apart (`0.1f32` prints `0.100000001` there, `0.1` on the CPU).
//!
//! **`static_assert`** and **`static_print`** are evaluated by the macro, per instance, from
//! integer and bool literals, meta-parameters, arithmetic, comparisons, `!`, `&&`, `||`, `min`,
//! `max` and `cdiv`; in a branch of an `if` on meta-parameters, only for the instances that
//! take it. A failing `static_assert(BLOCK >= 16, "...")` is an error at the call naming the
//! instances (`BLOCK = 8`). `static_print("BLOCK =", BLOCK)` joins its string literals and
//! values with spaces and reports them as a warning at the call (`use of deprecated unit struct
//! `_::static_print`: static_print in kernel `k`: BLOCK = 16 (BLOCK = 16); BLOCK = 32 (BLOCK =
//! 32)`): a proc macro cannot print notes on stable Rust; `#[allow(deprecated)]` silences it.
//!
//! ```ignore
//! static_assert(BLOCK % 16 == 0, "BLOCK is a multiple of 16");
//! let x = load(x_ptr + offs, mask);
//! device_assert(!mask | (x >= 0.0), "x is not negative");
//! device_print("x =", x);
//! ```
//!
//! ## Control flow
//!
//! `let` and `let mut` (a variable keeps its dtype and shape when reassigned), `for k in
//! start..end`, `for k in (start..end).step_by(step)`, `for k in range(start, end, step)`
//! (negative steps count down), `if`/`else` on scalar bools (runtime scalars or meta-parameters),
//! `while cond { ... }` with a scalar bool condition (computed again, atomics included, before
//! every iteration: `while atomic_cas(lock, 0, 1) == 1 {}` spins on a lock; a block condition
//! is an error: reduce it, as in `while x.max(0) > limit`), `return;`, and
//! `if let Some(f) = ACTIVATION { ... }` for optional function meta-parameters.
//!
//! ## Helpers
//!
//! Inside a [`kernel_module`](crate::kernel_module), `#[helper] fn leaky_relu(x: Block) -> Block`
//! defines a function kernels can call or take as a function meta-parameter. Helpers are
//! inlined and checked at each call site; a parameter typed `Block` takes any block, `Block<f32>`
//! a block of that dtype, and a dtype (`f32`) a scalar.
//!
//! ## Instances
//!
//! Every meta-parameter value that can run is declared: `#[autotune(configs = [config(...)],
//! key = [...])]` for tuned ones, `#[kernel(NAME = [v1, v2])]` for ones chosen at launch
//! (including function meta-parameters), plus `num_warps`/`num_stages`: one value each
//! (`#[kernel(num_warps = 8)]`, or per `config(...)`), or, without `#[autotune]`, lists
//! (`#[kernel(num_warps = [4, 8], num_stages = [2, 3])]`) that make one config per combination:
//! `launch` tunes among them like autotune configs, `launch_config(i, ...)` runs `CONFIGS[i]`.
//! `num_stages` is, as in Triton, how many iterations of a loop have their `dot` operands in
//! flight or ready: copies run `num_stages - 1` iterations ahead of the tensor cores.
//!
//! A config may name the device architectures it is built for: `config(BLOCK_N = 64,
//! num_warps = 8, archs = [sm_90a])` (`sm_90a`: Hopper's body; `sm_80`: the body every other
//! architecture runs), for a tile that is fast on one architecture and does not fit another's
//! registers. Builds for other architectures leave its entries out; on such a GPU the autotuner
//! skips it, and `launch_config` of it is `LaunchError::MissingEntry`. The CPU backend runs
//! every config. `CONFIGS[i].archs` lists the architectures (empty: all).
//!
//! `maxnreg = N` (16 to 255, per `config(...)`, or in `#[kernel]` without `#[autotune]`) limits
//! the entries of a config to `N` registers per thread, as Triton's `maxnreg`: the device build
//! gives ptxas `.maxnreg N`, to keep an occupancy step (two blocks of 8 warps per SM need at
//! most 128) that ptxas's own choice would miss. ptxas spills when the code needs more, which
//! `build-ptx` reports as an error like any spill; a config whose bodies differ between
//! architectures can be given twice, once per `archs`, with and without the limit. The CPU
//! backend ignores it; the manifest records it (`Instance::maxnreg`).
//!
//! **Floating-point contraction.** As Triton does by default, a product that is the operand of a
//! sum or difference in the same expression, on f32 or f64 values, is computed with the sum as
//! one `fma` (`a * b + c`, `c + a * b`, `a * b - c`, `c - a * b`; rounded once): one instruction
//! on the GPU, and the same bits on the CPU backend, which contracts the same expressions. A
//! product bound to a local first (`let p = a * b; p + c`) or converted is rounded where it is
//! computed, and f16/bf16 arithmetic is left as written. `#[kernel(fp_fusion = false)]` rounds
//! every product on its own (Triton's `enable_fp_fusion=False`).
