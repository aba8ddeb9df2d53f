//! The typed block IR: what the front end produces and every backend consumes.
//!
//! One `Kernel` is one *variant* of a `#[kernel]` function: the function meta-parameters
//! (`ACTIVATION`) are substituted and helper calls inlined, while numeric meta-parameters
//! stay symbolic. Expressions live in an arena (`Kernel::exprs`) and form trees owned by the
//! statement that evaluates them; locals are mutable slots. Every expression carries its type
//! (element type and symbolic shape) and the span of the source it came from.

use crate::shape::{shape_to_string, Dim, Shape};
use crate::diag::Sp;
use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum DType {
    F16,
    BF16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    Bool,
    /// 8-bit float, 4 exponent and 3 mantissa bits, no infinities (`float8_e4m3fn`).
    F8E4M3,
    /// 8-bit float, 5 exponent and 2 mantissa bits (`float8_e5m2`).
    F8E5M2,
}

impl DType {
    /// Every dtype; `Bool` last (`signature::PTR_DTYPES` is the others).
    pub const ALL: [DType; 14] = [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::Bool,
    ];
    /// The integer dtypes, for messages.
    pub const INTS: [DType; 7] = [DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32];

    /// `"a, b, c or d"` (or `"a, b, c and d"` with `conj` "and").
    pub fn list(ds: &[DType], conj: &str) -> String {
        let names: Vec<&str> = ds.iter().map(|d| d.name()).collect();
        match names.split_last() {
            None => String::new(),
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} {conj} {last}", rest.join(", ")),
        }
    }

    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == s)
    }
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::Bool => "bool",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::F8E4M3 | DType::F8E5M2)
    }
    /// The 8-bit floats (stored as bytes; arithmetic on them is done in f32 and rounded once).
    pub fn is_fp8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2)
    }
    /// Floats narrower than f32: f16, bf16 and the 8-bit floats (scans accumulate them in f32).
    pub fn is_narrow_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16) || self.is_fp8()
    }
    pub fn is_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::U8 | DType::U16 | DType::U32)
    }
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }
    /// i8, u8, i16 and u16: integers narrower than 32 bits (`sum` accumulates them in 32).
    pub fn is_small_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::U8 | DType::U16)
    }
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool => 1,
            DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 8,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 16,
            DType::F32 | DType::I32 | DType::U32 => 32,
            DType::F64 | DType::I64 => 64,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Element type of a value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Elem {
    Val(DType),
    Ptr(DType),
    /// Poison: the value of an expression that already produced an error. Every rule
    /// accepts it silently so one mistake gives one message.
    Error,
}

/// Type of a value: element type, symbolic shape (empty for scalars) and weakness.
///
/// Literals and integer meta-parameters are *weak*: they take the dtype of the other operand
/// (`offs * 4` stays `i64` when `offs` is `i64`; `x * 0.5` stays `f16` when `x` is `f16`).
#[derive(Clone, PartialEq, Debug)]
pub struct Ty {
    pub elem: Elem,
    pub shape: Shape,
    pub weak: bool,
}

impl Ty {
    pub fn scalar(d: DType) -> Ty {
        Ty { elem: Elem::Val(d), shape: vec![], weak: false }
    }
    pub fn weak(d: DType) -> Ty {
        Ty { elem: Elem::Val(d), shape: vec![], weak: true }
    }
    pub fn block(d: DType, shape: Shape) -> Ty {
        Ty { elem: Elem::Val(d), shape, weak: false }
    }
    pub fn error() -> Ty {
        Ty { elem: Elem::Error, shape: vec![], weak: false }
    }
    pub fn is_error(&self) -> bool {
        self.elem == Elem::Error
    }
    pub fn is_scalar(&self) -> bool {
        self.shape.is_empty()
    }
    pub fn dtype(&self) -> Option<DType> {
        match self.elem {
            Elem::Val(d) => Some(d),
            _ => None,
        }
    }
    pub fn with_shape(&self, shape: Shape) -> Ty {
        Ty { elem: self.elem, shape, weak: self.weak }
    }
    pub fn strong(&self) -> Ty {
        Ty { weak: false, ..self.clone() }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = match self.elem {
            Elem::Val(d) => d.name().to_string(),
            Elem::Ptr(d) => format!("Ptr<{d}>"),
            Elem::Error => "{error}".to_string(),
        };
        if self.shape.is_empty() {
            write!(f, "{e}")
        } else {
            write!(f, "{e}{}", shape_to_string(&self.shape))
        }
    }
}

pub type ExprId = usize;
pub type LocalId = usize;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Lit {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Min,
    Max,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)
    }
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum UnOp {
    Neg,
    Not,
}

/// Elementwise math functions (`exp(x)`, `pow(x, y)`, `fma(a, b, c)`, ...).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MathFn {
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sqrt,
    Rsqrt,
    Abs,
    Sin,
    Cos,
    Tanh,
    Erf,
    Sigmoid,
    Floor,
    Ceil,
    Rint,
    Trunc,
    Round,
    IsNan,
    IsInf,
    Pow,
    Fma,
    Clamp,
    UMulHi,
}

/// What a [`MathFn`] takes and gives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MathSig {
    /// Floats to the same float dtype (`n` operands, promoted together).
    Float(usize),
    /// A float to a mask (`isnan`, `isinf`).
    FloatTest,
    /// A float or an integer to the same dtype (`abs`).
    Number,
    /// Two integers to the same integer dtype (`umulhi`).
    Int2,
}

impl MathFn {
    pub const ALL: [MathFn; 26] = [
        MathFn::Exp,
        MathFn::Exp2,
        MathFn::Expm1,
        MathFn::Log,
        MathFn::Log2,
        MathFn::Log10,
        MathFn::Log1p,
        MathFn::Sqrt,
        MathFn::Rsqrt,
        MathFn::Abs,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tanh,
        MathFn::Erf,
        MathFn::Sigmoid,
        MathFn::Floor,
        MathFn::Ceil,
        MathFn::Rint,
        MathFn::Trunc,
        MathFn::Round,
        MathFn::IsNan,
        MathFn::IsInf,
        MathFn::Pow,
        MathFn::Fma,
        MathFn::Clamp,
        MathFn::UMulHi,
    ];
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::Expm1 => "expm1",
            MathFn::Log => "log",
            MathFn::Log2 => "log2",
            MathFn::Log10 => "log10",
            MathFn::Log1p => "log1p",
            MathFn::Sqrt => "sqrt",
            MathFn::Rsqrt => "rsqrt",
            MathFn::Abs => "abs",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tanh => "tanh",
            MathFn::Erf => "erf",
            MathFn::Sigmoid => "sigmoid",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Rint => "rint",
            MathFn::Trunc => "trunc",
            MathFn::Round => "round",
            MathFn::IsNan => "isnan",
            MathFn::IsInf => "isinf",
            MathFn::Pow => "pow",
            MathFn::Fma => "fma",
            MathFn::Clamp => "clamp",
            MathFn::UMulHi => "umulhi",
        }
    }
    /// The function called `s`; `sqrt_rn` is `sqrt` (correctly rounded on both backends).
    pub fn from_name(s: &str) -> Option<MathFn> {
        if s == "sqrt_rn" {
            return Some(MathFn::Sqrt);
        }
        MathFn::ALL.iter().copied().find(|m| m.name() == s)
    }
    pub fn sig(self) -> MathSig {
        match self {
            MathFn::IsNan | MathFn::IsInf => MathSig::FloatTest,
            MathFn::Abs => MathSig::Number,
            MathFn::UMulHi => MathSig::Int2,
            MathFn::Pow => MathSig::Float(2),
            MathFn::Fma | MathFn::Clamp => MathSig::Float(3),
            _ => MathSig::Float(1),
        }
    }
    pub fn arity(self) -> usize {
        self.params().len()
    }
    /// The names of its operands, as the language reference writes them.
    pub fn params(self) -> &'static [&'static str] {
        match self {
            MathFn::Pow | MathFn::UMulHi => &["x", "y"],
            MathFn::Fma => &["a", "b", "c"],
            MathFn::Clamp => &["x", "lo", "hi"],
            _ => &["x"],
        }
    }
    /// Whether it is evaluated by a sequence of dependent floating-point steps whose temporaries
    /// take registers (exponentials, logarithms, trigonometry, `pow`), not one instruction.
    pub fn is_transcendental(self) -> bool {
        !matches!(
            self,
            MathFn::Sqrt | MathFn::Rsqrt | MathFn::Abs | MathFn::Floor | MathFn::Ceil | MathFn::Rint | MathFn::Trunc | MathFn::Round | MathFn::IsNan | MathFn::IsInf | MathFn::Fma | MathFn::Clamp | MathFn::UMulHi
        )
    }
    /// Whether its per-element code is long enough that a block of it needs registers beside a
    /// full `mma` accumulator: `libm`'s `expm1`, `log1p`, `log10` and `pow` (range reductions and
    /// branches), and `erf` (two polynomials and an exponential). The others are an instruction
    /// or a short straight line (`ex2.approx`, `tanh`'s one polynomial and one exponential).
    pub fn is_long(self) -> bool {
        matches!(self, MathFn::Erf | MathFn::Expm1 | MathFn::Log1p | MathFn::Log10 | MathFn::Pow)
    }
}

/// Read-modify-write operations on memory (`atomic_add(ptrs, val, mask)`, ...).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AtomicOp {
    Add,
    Max,
    Min,
    And,
    Or,
    Xor,
    Xchg,
    Cas,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 8] =
        [AtomicOp::Add, AtomicOp::Max, AtomicOp::Min, AtomicOp::And, AtomicOp::Or, AtomicOp::Xor, AtomicOp::Xchg, AtomicOp::Cas];
    /// The operation's name without the `atomic_` prefix (also the backends' function name).
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Max => "max",
            AtomicOp::Min => "min",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Xchg => "xchg",
            AtomicOp::Cas => "cas",
        }
    }
    /// `atomic_add` -> `Add`.
    pub fn from_builtin(s: &str) -> Option<AtomicOp> {
        let op = s.strip_prefix("atomic_")?;
        AtomicOp::ALL.iter().copied().find(|a| a.name() == op)
    }
}

/// What a Philox random-number builtin gives (`randint`, `rand`, `randn` and their `4x` forms).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RandKind {
    /// `u32` words.
    Int,
    /// `f32` uniform in `[0, 1)`.
    Uniform,
    /// `f32` standard normal.
    Normal,
}

impl RandKind {
    /// The builtin's name without `4x`, also the `kernel_std::random` function's.
    pub fn name(self) -> &'static str {
        match self {
            RandKind::Int => "randint",
            RandKind::Uniform => "rand",
            RandKind::Normal => "randn",
        }
    }
    /// `randint4x` -> (`Int`, true).
    pub fn from_builtin(s: &str) -> Option<(RandKind, bool)> {
        let (base, four) = match s.strip_suffix("4x") {
            Some(b) => (b, true),
            None => (s, false),
        };
        let kind = [RandKind::Int, RandKind::Uniform, RandKind::Normal].into_iter().find(|k| k.name() == base)?;
        Some((kind, four))
    }
    pub fn dtype(self) -> DType {
        match self {
            RandKind::Int => DType::U32,
            RandKind::Uniform | RandKind::Normal => DType::F32,
        }
    }
}

/// Memory ordering of an atomic (Triton's `sem`): `AcqRel` unless the kernel asks otherwise.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sem {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

/// Which threads an atomic is atomic with respect to (Triton's `scope`): `Gpu` by default.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scope {
    Gpu,
    Cta,
    Sys,
}

impl Sem {
    pub const NAMES: [&'static str; 4] = ["relaxed", "acquire", "release", "acq_rel"];
    pub fn name(self) -> &'static str {
        Sem::NAMES[self as usize]
    }
    pub fn from_name(s: &str) -> Option<Sem> {
        [Sem::Relaxed, Sem::Acquire, Sem::Release, Sem::AcqRel].into_iter().find(|x| x.name() == s)
    }
}

impl Scope {
    pub const NAMES: [&'static str; 3] = ["gpu", "cta", "sys"];
    pub fn name(self) -> &'static str {
        Scope::NAMES[self as usize]
    }
    pub fn from_name(s: &str) -> Option<Scope> {
        [Scope::Gpu, Scope::Cta, Scope::Sys].into_iter().find(|x| x.name() == s)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// Bitwise xor of integers (`xor_sum`).
    Xor,
}

/// Inclusive scans along an axis (`cumsum`, `cumprod`, `associative_scan`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ScanOp {
    Sum,
    Prod,
    /// A `#[helper]` combine function: `comb`, an expression over the scalar locals `a` and
    /// `b` (its parameters, never assigned: the backends bind them), nothing else.
    Combine(Combine),
}

/// A combine function of `associative_scan` and `reduce`, inlined: the scalar expression
/// `comb` over the parameter locals `a` and `b`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Combine {
    pub a: LocalId,
    pub b: LocalId,
    pub comb: ExprId,
}

impl ScanOp {
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
            ScanOp::Combine(_) => "associative_scan",
        }
    }
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Xor => "xor_sum",
        }
    }
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    /// A scalar parameter or the base pointer of a pointer parameter.
    Param(usize),
    /// An integer or bool meta-parameter (index into `Kernel::metas`).
    Meta(usize),
    Lit(Lit),
    Local(LocalId),
    ProgramId(u8),
    NumPrograms(u8),
    /// `arange(start, end)`; start and end are compile-time dimensions.
    Arange { start: Dim, end: Dim },
    /// A block of the type's shape filled with a scalar.
    Full(ExprId),
    Unary(UnOp, ExprId),
    /// Operands already have the result's operand dtype (casts are explicit).
    Binary(BinOp, ExprId, ExprId),
    /// Pointer plus integer offsets (elements).
    PtrAdd(ExprId, ExprId),
    /// Conversion to the node's dtype.
    Cast(ExprId),
    ExpandDims(ExprId, usize),
    Trans(ExprId),
    /// Reshape to the node's shape (same number of elements).
    Reshape(ExprId),
    /// Broadcast to the node's shape.
    BroadcastTo(ExprId),
    /// A math function of `MathFn::arity` operands.
    Math(MathFn, Vec<ExprId>),
    Where(ExprId, ExprId, ExprId),
    Load { ptr: ExprId, mask: Option<ExprId>, other: Option<ExprId> },
    Dot { a: ExprId, b: ExprId, acc: Option<ExprId> },
    Reduce { op: ReduceOp, x: ExprId, axis: usize },
    /// Inclusive scan along `axis` (from the end when `reverse`); same shape and dtype.
    Scan { op: ScanOp, x: ExprId, axis: usize, reverse: bool },
    /// `reduce(x, axis, combine)`: `x` folded along `axis` (first element first) with a combine
    /// function; the axis is removed.
    ReduceWith { x: ExprId, axis: usize, f: Combine },
    /// An atomic read-modify-write of every element `ptr` points to (where `mask` holds),
    /// giving the old values (0 where masked off). It writes memory, so it is only ever the
    /// value of a `let` of its own (the front end hoists it there): evaluated exactly once.
    Atomic { op: AtomicOp, ptr: ExprId, val: ExprId, cmp: Option<ExprId>, mask: Option<ExprId>, sem: Sem, scope: Scope },
    /// Philox random numbers of `(seed, offset)` (`kernel_std::random`): word `word` of the
    /// four (`four`: the `4x` form) after `rounds` rounds.
    Random { kind: RandKind, seed: ExprId, offset: ExprId, four: bool, word: u8, rounds: u32 },
}

impl ExprKind {
    /// The expressions this one reads.
    pub fn operands(&self) -> Vec<ExprId> {
        match self {
            ExprKind::Param(_)
            | ExprKind::Meta(_)
            | ExprKind::Lit(_)
            | ExprKind::Local(_)
            | ExprKind::ProgramId(_)
            | ExprKind::NumPrograms(_)
            | ExprKind::Arange { .. } => vec![],
            ExprKind::Full(x)
            | ExprKind::Unary(_, x)
            | ExprKind::Cast(x)
            | ExprKind::ExpandDims(x, _)
            | ExprKind::Trans(x)
            | ExprKind::Reshape(x)
            | ExprKind::BroadcastTo(x)
            | ExprKind::Reduce { x, .. }
            | ExprKind::Scan { x, .. }
            | ExprKind::ReduceWith { x, .. } => vec![*x],
            ExprKind::Math(_, xs) => xs.clone(),
            ExprKind::Binary(_, a, b) | ExprKind::PtrAdd(a, b) => vec![*a, *b],
            ExprKind::Where(c, a, b) => vec![*c, *a, *b],
            ExprKind::Load { ptr, mask, other } => [Some(*ptr), *mask, *other].into_iter().flatten().collect(),
            ExprKind::Dot { a, b, acc } => [Some(*a), Some(*b), *acc].into_iter().flatten().collect(),
            ExprKind::Atomic { ptr, val, cmp, mask, .. } => [Some(*ptr), *cmp, Some(*val), *mask].into_iter().flatten().collect(),
            ExprKind::Random { seed, offset, .. } => vec![*seed, *offset],
        }
    }
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Sp,
}

#[derive(Clone, Debug)]
pub enum Stmt {
    Let { local: LocalId, value: ExprId },
    Assign { local: LocalId, value: ExprId },
    Store { ptr: ExprId, value: ExprId, mask: Option<ExprId>, span: Sp },
    For { var: LocalId, start: ExprId, end: ExprId, step: ExprId, body: Vec<Stmt>, span: Sp },
    If { cond: ExprId, then: Vec<Stmt>, els: Vec<Stmt> },
    /// `while cond { body }`: `pre` computes the condition (it ends with the `let` of the scalar
    /// bool local that `test` reads) and runs before every test.
    While { pre: Vec<Stmt>, test: ExprId, body: Vec<Stmt> },
    Return,
    /// `device_assert(cond, "message")`: where the mask `cond` (a bool scalar or block) is
    /// false, the program's first failing element is reported and the launch fails. `text` is
    /// the condition as written. When `cond` is a comparison, `operands` are its two sides (each
    /// with its source text), whose values at that element the report gives; they read what the
    /// comparison reads (`cond`'s operands are the same locals or copies of the same leaves) and
    /// broadcast to `cond`'s shape.
    ///
    /// `hint`: the check of a `multiple_of(x, n)` hint (the local, `n`: a compile-time integer
    /// expression): `cond` is `x % n == 0` (for
    /// a pointer, of its address in bytes) on the local just bound to `x`; where it fails the
    /// program stops (after the report) instead of going on, so the code that follows may rely
    /// on it. Kept by `#[kernel(asserts = false)]`, and left out of the device code where the
    /// code generator proves it.
    Assert { cond: ExprId, message: String, text: String, operands: Vec<(String, ExprId)>, span: Sp, hint: Option<(LocalId, ExprId)> },
    /// `device_print("prefix", values...)`: prints the prefix and the values with the program
    /// id, one line per element of the values (all of one shape: the front end broadcasts them),
    /// or one line per program when they are scalars.
    Print { prefix: String, values: Vec<ExprId> },
    /// `debug_barrier()`: every thread of the program's block waits for the others (Triton's
    /// `tl.debug_barrier`); nothing on the CPU backend, which runs a program on one thread.
    Barrier,
}

impl Stmt {
    /// The statement lists nested in this one, in program order: a loop's body, a `while`'s
    /// condition statements and body, a branch's two arms.
    pub fn bodies(&self) -> Vec<&[Stmt]> {
        match self {
            Stmt::For { body, .. } => vec![body],
            Stmt::While { pre, body, .. } => vec![pre, body],
            Stmt::If { then, els, .. } => vec![then, els],
            _ => vec![],
        }
    }
}

/// Removes, at every depth of `stmts` (loop and branch bodies, `while` conditions), the
/// statements that `keep` refuses.
pub fn retain_stmts(stmts: &mut Vec<Stmt>, keep: &dyn Fn(&Stmt) -> bool) {
    stmts.retain(|s| keep(s));
    for s in stmts.iter_mut() {
        match s {
            Stmt::For { body, .. } => retain_stmts(body, keep),
            Stmt::If { then, els, .. } => {
                retain_stmts(then, keep);
                retain_stmts(els, keep);
            }
            Stmt::While { pre, body, .. } => {
                retain_stmts(pre, keep);
                retain_stmts(body, keep);
            }
            _ => {}
        }
    }
}

#[derive(Clone, Debug)]
pub struct Local {
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
}

#[derive(Clone, Debug)]
pub enum ParamKind {
    Ptr(DType),
    Scalar(DType),
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum MetaKind {
    /// Integer meta-parameter; the Rust type it was declared with (`i32`, `usize`, ...).
    Int(String),
    Bool,
    /// Function meta-parameter; `optional` for `Option<Func>`.
    Func { optional: bool },
}

#[derive(Clone, Debug)]
pub struct MetaParam {
    pub name: String,
    pub kind: MetaKind,
    pub span: Sp,
}

/// One variant of a kernel, validated: later passes may trust every type in it.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub metas: Vec<MetaParam>,
    /// The function meta-parameters' values for this variant (`None` = `None`).
    pub fn_values: Vec<(String, Option<String>)>,
    pub exprs: Vec<Expr>,
    pub locals: Vec<Local>,
    pub body: Vec<Stmt>,
}


// ---------------------------------------------------------------------------------------
// Display: `KERNEL_DUMP=dir` writes this text form of each variant.

impl Kernel {
    /// Expression `id` as the IR dump writes it.
    pub fn expr_text(&self, id: ExprId) -> String {
        struct E<'a>(&'a Kernel, ExprId);
        impl fmt::Display for E<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt_expr(self.1, f)
            }
        }
        E(self, id).to_string()
    }

    fn fmt_expr(&self, id: ExprId, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.exprs[id];
        match &e.kind {
            ExprKind::Param(i) => write!(f, "{}", self.params[*i].name),
            ExprKind::Meta(i) => write!(f, "{}", self.metas[*i].name),
            ExprKind::Lit(Lit::Int(v)) => write!(f, "{v}"),
            ExprKind::Lit(Lit::Float(v)) => write!(f, "{v:?}"),
            ExprKind::Lit(Lit::Bool(v)) => write!(f, "{v}"),
            ExprKind::Local(l) => write!(f, "%{}.{}", self.locals[*l].name, l),
            ExprKind::ProgramId(a) => write!(f, "program_id({a})"),
            ExprKind::NumPrograms(a) => write!(f, "num_programs({a})"),
            ExprKind::Arange { start, end } => write!(f, "arange({start}, {end})"),
            ExprKind::Full(v) => {
                write!(f, "full{}(", shape_to_string(&e.ty.shape))?;
                self.fmt_expr(*v, f)?;
                write!(f, ")")
            }
            ExprKind::Unary(op, x) => {
                write!(f, "{}", if *op == UnOp::Neg { "-" } else { "!" })?;
                self.fmt_expr(*x, f)
            }
            ExprKind::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => self.fmt_call(op.symbol(), &[*a, *b], f),
            ExprKind::Binary(op, a, b) => self.fmt_infix(op.symbol(), *a, *b, f),
            ExprKind::PtrAdd(a, b) => self.fmt_infix("+", *a, *b, f),
            ExprKind::Cast(x) => {
                self.fmt_expr(*x, f)?;
                write!(f, ".to::<{}>()", e.ty.dtype().map(|d| d.name()).unwrap_or("?"))
            }
            ExprKind::ExpandDims(x, a) => {
                self.fmt_expr(*x, f)?;
                write!(f, ".expand_dims({a})")
            }
            ExprKind::Trans(x) => self.fmt_call("trans", &[*x], f),
            ExprKind::Reshape(x) => self.fmt_call("reshape", &[*x], f),
            ExprKind::BroadcastTo(x) => self.fmt_call("broadcast_to", &[*x], f),
            ExprKind::Math(m, xs) => self.fmt_call(m.name(), xs, f),
            ExprKind::Where(c, a, b) => self.fmt_call("where_", &[*c, *a, *b], f),
            ExprKind::Load { ptr, mask, other } => {
                let mut args = vec![*ptr];
                args.extend(mask.iter().copied());
                args.extend(other.iter().copied());
                self.fmt_call("load", &args, f)
            }
            ExprKind::Dot { a, b, acc } => {
                let mut args = vec![*a, *b];
                args.extend(acc.iter().copied());
                self.fmt_call("dot", &args, f)
            }
            ExprKind::Reduce { op, x, axis } => {
                self.fmt_expr(*x, f)?;
                write!(f, ".{}({axis})", op.name())
            }
            ExprKind::Scan { op, x, axis, reverse } => {
                self.fmt_expr(*x, f)?;
                write!(f, ".{}({axis}{}", op.name(), if *reverse { ", reverse" } else { "" })?;
                if let ScanOp::Combine(c) = op {
                    write!(f, ", ")?;
                    self.fmt_combine(c, f)?;
                }
                write!(f, ")")
            }
            ExprKind::ReduceWith { x, axis, f: c } => {
                self.fmt_expr(*x, f)?;
                write!(f, ".reduce({axis}, ")?;
                self.fmt_combine(c, f)?;
                write!(f, ")")
            }
            ExprKind::Random { kind, seed, offset, four, word, rounds } => {
                let name = if *four { format!("{}4x[{word}]", kind.name()) } else { kind.name().to_string() };
                self.fmt_call(&format!("{name}<{rounds}>"), &[*seed, *offset], f)
            }
            ExprKind::Atomic { op, ptr, val, cmp, mask, sem, scope } => {
                let args: Vec<ExprId> = [Some(*ptr), *cmp, Some(*val), *mask].into_iter().flatten().collect();
                self.fmt_call(&format!("atomic_{}[{}, {}]", op.name(), sem.name(), scope.name()), &args, f)
            }
        }
    }

    fn fmt_combine(&self, c: &Combine, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "|%{}.{}, %{}.{}| ", self.locals[c.a].name, c.a, self.locals[c.b].name, c.b)?;
        self.fmt_expr(c.comb, f)
    }

    fn fmt_infix(&self, sym: &str, a: ExprId, b: ExprId, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        self.fmt_expr(a, f)?;
        write!(f, " {sym} ")?;
        self.fmt_expr(b, f)?;
        write!(f, ")")
    }

    fn fmt_call(&self, name: &str, args: &[ExprId], f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{name}(")?;
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            self.fmt_expr(*a, f)?;
        }
        write!(f, ")")
    }

    fn fmt_stmts(&self, stmts: &[Stmt], indent: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pad = "    ".repeat(indent);
        for s in stmts {
            match s {
                Stmt::Let { local, value } | Stmt::Assign { local, value } => {
                    let kw = if matches!(s, Stmt::Let { .. }) { "let " } else { "" };
                    let l = &self.locals[*local];
                    write!(f, "{pad}{kw}%{}.{}: {} = ", l.name, local, l.ty)?;
                    self.fmt_expr(*value, f)?;
                    writeln!(f)?;
                }
                Stmt::Store { ptr, value, mask, .. } => {
                    write!(f, "{pad}store(")?;
                    self.fmt_expr(*ptr, f)?;
                    write!(f, ", ")?;
                    self.fmt_expr(*value, f)?;
                    if let Some(m) = mask {
                        write!(f, ", ")?;
                        self.fmt_expr(*m, f)?;
                    }
                    writeln!(f, ")")?;
                }
                Stmt::For { var, start, end, step, body, .. } => {
                    write!(f, "{pad}for %{}.{} in range(", self.locals[*var].name, var)?;
                    self.fmt_expr(*start, f)?;
                    write!(f, ", ")?;
                    self.fmt_expr(*end, f)?;
                    write!(f, ", ")?;
                    self.fmt_expr(*step, f)?;
                    writeln!(f, ") {{")?;
                    self.fmt_stmts(body, indent + 1, f)?;
                    writeln!(f, "{pad}}}")?;
                }
                Stmt::If { cond, then, els } => {
                    write!(f, "{pad}if ")?;
                    self.fmt_expr(*cond, f)?;
                    writeln!(f, " {{")?;
                    self.fmt_stmts(then, indent + 1, f)?;
                    if !els.is_empty() {
                        writeln!(f, "{pad}}} else {{")?;
                        self.fmt_stmts(els, indent + 1, f)?;
                    }
                    writeln!(f, "{pad}}}")?;
                }
                Stmt::While { pre, test, body } => {
                    writeln!(f, "{pad}loop {{")?;
                    self.fmt_stmts(pre, indent + 1, f)?;
                    write!(f, "{pad}    if !")?;
                    self.fmt_expr(*test, f)?;
                    writeln!(f, " {{ break }}")?;
                    self.fmt_stmts(body, indent + 1, f)?;
                    writeln!(f, "{pad}}}")?;
                }
                Stmt::Return => writeln!(f, "{pad}return")?,
                Stmt::Assert { cond, message, operands, hint, .. } => {
                    write!(f, "{pad}{}(", if hint.is_some() { "hint_check" } else { "device_assert" })?;
                    self.fmt_expr(*cond, f)?;
                    write!(f, ", {message:?})")?;
                    for (text, e) in operands {
                        write!(f, " [{text} = ")?;
                        self.fmt_expr(*e, f)?;
                        write!(f, "]")?;
                    }
                    writeln!(f)?;
                }
                Stmt::Print { prefix, values, .. } => {
                    write!(f, "{pad}device_print({prefix:?}")?;
                    for v in values {
                        write!(f, ", ")?;
                        self.fmt_expr(*v, f)?;
                    }
                    writeln!(f, ")")?;
                }
                Stmt::Barrier => writeln!(f, "{pad}debug_barrier()")?,
            }
        }
        Ok(())
    }
}


impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel {}", self.name)?;
        let fns: Vec<String> = self
            .fn_values
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("None")))
            .collect();
        if !fns.is_empty() {
            write!(f, " [{}]", fns.join(", "))?;
        }
        writeln!(f, "(")?;
        for p in &self.params {
            match p.kind {
                ParamKind::Ptr(d) => writeln!(f, "    {}: Ptr<{d}>,", p.name)?,
                ParamKind::Scalar(d) => writeln!(f, "    {}: {d},", p.name)?,
            }
        }
        writeln!(f, ") {{")?;
        self.fmt_stmts(&self.body, 1, f)?;
        writeln!(f, "}}")
    }
}
