//! Random *valid* kernels for the differential test, with the host code that runs each one.
//!
//! Every generated kernel is correct by construction: each access is in bounds (masked
//! where the index can leave the buffer), integer divisors are positive, and every program
//! writes its own elements, so the result does not depend on the order programs run in.
//! Three families cover the backends' code paths:
//! - `map`: 1-D blocks, several inputs of mixed dtypes read at affine, reversed or gathered
//!   offsets, an expression DAG, an optional loop with an accumulator and an `if` on a scalar;
//! - `tile`: 2-D `[R, C]` tiles of a row-major matrix, reductions along either axis and
//!   broadcasts back (`as_col`/`as_row`);
//! - `dot`: a K loop of `dot` on f16, bf16 or f32 tiles in row- or column-major layouts
//!   (strides passed at run time), ragged edges, an elementwise epilogue.
//!
//! A kernel is *exact* or *approximate*. Exact kernels see small integers and use only
//! operations whose results stay exactly representable (the generator bounds every value's
//! magnitude against its dtype's integer range), so the backends must agree bit for bit
//! whatever order they sum in. Approximate kernels see real numbers and use the
//! transcendental functions and division; they are compared with a tolerance scaled by the
//! dtype and the magnitude of the values.

/// A small deterministic generator (SplitMix64), so a seed names a corpus.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// Element types of generated buffers and values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ty {
    F16,
    Bf16,
    F32,
    F64,
    I32,
    I64,
    U32,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::F16 => "f16",
            Ty::Bf16 => "bf16",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::U32 => "u32",
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64)
    }
    /// Integers up to this magnitude are exact in the dtype (wrapping integers: any).
    fn exact_limit(self) -> f64 {
        match self {
            Ty::F16 => 2048.0,
            Ty::Bf16 => 256.0,
            Ty::F32 => 16_777_216.0,
            Ty::F64 => 9.0e15,
            Ty::I32 | Ty::U32 | Ty::I64 => f64::INFINITY,
        }
    }
    /// The relative tolerance of approximate kernels computing in this dtype.
    fn rtol(self) -> f64 {
        match self {
            Ty::F16 => 2e-2,
            Ty::Bf16 => 1e-1,
            Ty::F32 => 2e-4,
            Ty::F64 => 1e-11,
            _ => 0.0,
        }
    }
    fn zero(self) -> &'static str {
        if self.is_float() {
            "0.0"
        } else {
            "0"
        }
    }
}

const FLOATS: [Ty; 4] = [Ty::F32, Ty::F32, Ty::F16, Ty::Bf16];
const ALL: [Ty; 8] = [Ty::F32, Ty::F32, Ty::F16, Ty::Bf16, Ty::F64, Ty::I32, Ty::I64, Ty::U32];

/// One generated expression: its source, dtype, a bound on its magnitude and whether it is
/// exact (an integer within its dtype's exact range, computed without rounding).
#[derive(Clone)]
struct Val {
    code: String,
    ty: Ty,
    bound: f64,
    exact: bool,
}

/// How the runner fills an input buffer.
#[derive(Clone, Copy, Debug)]
pub enum Fill {
    /// Integers uniformly in `-m..=m` (`0..=2m` for `u32`).
    Ints(i64),
    /// Reals uniformly in `[lo, hi)`.
    Reals(f64, f64),
}

/// A generated buffer parameter.
#[derive(Clone, Debug)]
pub struct Buf {
    pub name: String,
    pub ty: Ty,
    /// Element count, as a Rust expression over the case's sizes (`n`, `rows * cols`, ...).
    pub len: String,
    pub fill: Fill,
    pub output: bool,
}

/// One kernel with everything the runner needs to launch it.
pub struct Case {
    pub name: String,
    pub family: &'static str,
    pub exact: bool,
    /// The kernel item (`#[kernel(...)] pub fn ...`).
    pub kernel: String,
    pub bufs: Vec<Buf>,
    /// `let` statements defining the sizes used by `len`, `grid` and `args`.
    pub sizes: String,
    /// Scalar arguments after the buffers, in order, as Rust expressions.
    pub args: Vec<String>,
    /// The meta-parameter values passed to `launch` after the arguments.
    pub metas: Vec<String>,
    pub grid: String,
    /// Per output buffer: the relative tolerance and the magnitude scale (0 for exact).
    pub tol: Vec<(f64, f64)>,
}

/// Generates case `index` of the corpus of `seed`.
pub fn case(seed: u64, index: usize) -> Case {
    let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(index as u64));
    let name = format!("k{index}");
    match rng.below(10) {
        0..=3 => map_kernel(&mut rng, name),
        4..=6 => tile_kernel(&mut rng, name),
        _ => dot_kernel(&mut rng, name),
    }
}

/// Expression building over a set of block values of one shape.
struct Exprs<'r> {
    rng: &'r mut Rng,
    exact: bool,
    /// Values available as operands.
    pool: Vec<Val>,
    /// The code of a block of the kernel's shape, for `full`.
    shape: String,
    /// An `i32` index block of that shape (for index-derived values).
    index: String,
    index_bound: f64,
}

impl Exprs<'_> {
    fn operand(&mut self) -> Val {
        let i = self.rng.below(self.pool.len());
        self.pool[i].clone()
    }

    /// `v` converted to `ty`: exact when its bound fits the target (conversions round
    /// correctly on both backends; an exact kernel only converts what fits).
    fn convert(&self, v: &Val, ty: Ty) -> Option<Val> {
        if v.ty == ty {
            return Some(v.clone());
        }
        if self.exact && (v.bound > ty.exact_limit() || (ty == Ty::U32 && v.ty != Ty::U32)) {
            return None;
        }
        if !self.exact && !ty.is_float() {
            return None;
        }
        Some(Val { code: format!("({}).to::<{}>()", v.code, ty.name()), ty, bound: v.bound, exact: v.exact })
    }

    /// A new value of `ty` built from the pool, `depth` levels deep.
    fn value(&mut self, ty: Ty, depth: usize) -> Val {
        for _ in 0..20 {
            if let Some(v) = self.try_value(ty, depth) {
                if !self.exact || v.bound <= ty.exact_limit() {
                    return v;
                }
            }
        }
        // Always possible: an index-derived value.
        Val { code: format!("({}).to::<{}>()", self.index, ty.name()), ty, bound: self.index_bound, exact: true }
    }

    fn leaf(&mut self, ty: Ty) -> Option<Val> {
        match self.rng.below(8) {
            0 => {
                let c = if ty.is_float() { self.rng.pick(&["0.0", "1.0", "2.0", "-3.0", "0.5"]) } else { self.rng.pick(&["0", "1", "2", "3", "7"]) };
                let exact = !c.contains(".5");
                let bound = c.parse::<f64>().unwrap_or(0.0).abs();
                Some(Val { code: format!("full::<{}>({}, {c})", ty.name(), self.shape), ty, bound, exact })
            }
            1 => self.convert(&Val { code: self.index.clone(), ty: Ty::I32, bound: self.index_bound, exact: true }, ty),
            _ => {
                let v = self.operand();
                self.convert(&v, ty)
            }
        }
    }

    fn try_value(&mut self, ty: Ty, depth: usize) -> Option<Val> {
        if depth == 0 {
            return self.leaf(ty);
        }
        let a = self.value(ty, depth - 1);
        let pick = self.rng.below(if ty.is_float() { 14 } else { 10 });
        Some(match pick {
            0..=2 => {
                let b = self.value(ty, depth - 1);
                let op = self.rng.pick(&["+", "-", "*"]);
                if ty == Ty::U32 && op == "-" {
                    return None;
                }
                let bound = if op == "*" { a.bound * b.bound } else { a.bound + b.bound };
                Val { code: format!("({} {op} {})", a.code, b.code), ty, bound, exact: a.exact && b.exact }
            }
            3 => {
                let b = self.value(ty, depth - 1);
                let f = self.rng.pick(&["minimum", "maximum"]);
                Val { code: format!("{f}({}, {})", a.code, b.code), ty, bound: a.bound.max(b.bound), exact: a.exact && b.exact }
            }
            4 => {
                // A select on an exact comparison (never a rounding-dependent one).
                let b = self.value(ty, depth - 1);
                let c = self.exact_operand()?;
                let cmp = self.rng.pick(&["<", ">=", "==", "!="]);
                let t = if c.ty.is_float() { "1.0" } else { "1" };
                let cond = format!("({} {cmp} {t})", c.code);
                Val { code: format!("where_({cond}, {}, {})", a.code, b.code), ty, bound: a.bound.max(b.bound), exact: a.exact && b.exact }
            }
            5 if ty != Ty::U32 => Val { code: format!("(-{})", a.code), ..a },
            6 => {
                // Integer division and remainder by a positive divisor; float `%` by a small
                // positive constant.
                let d = self.rng.pick(&[2, 3, 5, 7]);
                if ty.is_float() {
                    // `%` is discontinuous: only on exact values.
                    if a.bound > 1.0e6 || !a.exact {
                        return None;
                    }
                    Val { code: format!("({} % {d}.0)", a.code), ty, bound: a.bound.min(d as f64), exact: a.exact }
                } else {
                    let op = self.rng.pick(&["/", "%"]);
                    let b = self.value(ty, depth - 1);
                    let div = if ty == Ty::U32 { format!("({} % {d} + 1)", b.code) } else { format!("(({} % {d}) * ({} % {d}) + 1)", b.code, b.code) };
                    let bound = if op == "/" { a.bound } else { (d * d + 1) as f64 };
                    Val { code: format!("({} {op} {div})", a.code), ty, bound, exact: true }
                }
            }
            7 if !ty.is_float() => {
                let op = self.rng.pick(&["&", "|", "^"]);
                let b = self.value(ty, depth - 1);
                Val { code: format!("({} {op} {})", a.code, b.code), ty, bound: f64::INFINITY, exact: true }
            }
            8 if !ty.is_float() => {
                let op = self.rng.pick(&["<<", ">>"]);
                let s = self.rng.pick(&[0, 1, 3, 7, 31, 33]);
                Val { code: format!("({} {op} {s})", a.code), ty, bound: f64::INFINITY, exact: true }
            }
            7 => Val { code: format!("abs({})", a.code), ..a },
            // Roundings are discontinuous: only on exact values.
            8 if a.exact => Val { code: format!("floor({} * 0.5)", a.code), bound: a.bound / 2.0 + 1.0, ..a },
            9 if ty.is_float() && a.exact => Val { code: format!("ceil({})", a.code), bound: a.bound + 1.0, ..a },
            10..=13 if !self.exact => self.approx(a, ty)?,
            _ => {
                // A conversion round trip through another dtype.
                let other = self.rng.pick(&ALL);
                let there = self.convert(&a, other)?;
                let back = self.convert(&there, ty)?;
                if other.is_float() && !ty.is_float() {
                    return None;
                }
                back
            }
        })
    }

    /// An exact operand of the pool (for conditions), if any.
    fn exact_operand(&mut self) -> Option<Val> {
        let exact: Vec<Val> = self.pool.iter().filter(|v| v.exact).cloned().collect();
        if exact.is_empty() {
            return None;
        }
        Some(exact[self.rng.below(exact.len())].clone())
    }

    /// Transcendental functions and division (approximate kernels only), on arguments whose
    /// range keeps them well conditioned.
    fn approx(&mut self, a: Val, ty: Ty) -> Option<Val> {
        let b = a.bound;
        let (code, bound) = match self.rng.below(8) {
            0 if b <= 8.0 => (format!("exp({})", a.code), b.exp()),
            1 if b <= 8.0 => (format!("exp2({})", a.code), b.exp2()),
            2 => (format!("log(abs({}) + 1.0)", a.code), (b + 1.0).ln() + 1.0),
            3 => (format!("log2(abs({}) + 1.0)", a.code), (b + 1.0).log2() + 1.0),
            4 => (format!("sqrt(abs({}))", a.code), b.sqrt() + 1.0),
            5 => (format!("rsqrt(abs({}) + 1.0)", a.code), 1.0),
            6 if b <= 50.0 => (format!("{}({})", self.rng.pick(&["sin", "cos"]), a.code), 1.0),
            _ => {
                let d = self.value(ty, 0);
                (format!("({} / (abs({}) + 1.0))", a.code, d.code), b)
            }
        };
        Some(Val { code, ty, bound, exact: false })
    }
}

/// The fill of an input buffer of `ty` for an exact or approximate kernel.
fn input_fill(rng: &mut Rng, ty: Ty, exact: bool) -> (Fill, f64) {
    if exact || !ty.is_float() {
        let m = rng.pick(&[1i64, 3, 8]);
        (Fill::Ints(m), if ty == Ty::U32 { 2.0 * m as f64 } else { m as f64 })
    } else {
        let (lo, hi) = rng.pick(&[(-2.0, 2.0), (0.25, 2.0), (-1.0, 1.0)]);
        (Fill::Reals(lo, hi), 2.0)
    }
}

fn output_tol(v: &Val, exact: bool) -> (f64, f64) {
    if exact {
        (0.0, 0.0)
    } else {
        (v.ty.rtol(), v.bound.min(1e30))
    }
}

/// The block size of 1-D kernels and the `num_warps` of any kernel.
fn warps(rng: &mut Rng) -> String {
    if rng.chance(50) {
        String::new()
    } else {
        format!(", num_warps = {}", rng.pick(&[1, 2, 4, 8]))
    }
}

fn map_kernel(rng: &mut Rng, name: String) -> Case {
    let exact = rng.chance(65);
    let block = rng.pick(&[16, 32, 64, 128, 256, 512, 1024]);
    let n = 1 + rng.below(3000);
    let loop_iters = if rng.chance(30) { 1 + rng.below(4) } else { 0 };
    let mut bufs = Vec::new();
    let mut body = String::from("    let offs = program_id(0) * B + arange(0, B);\n    let m = offs < n;\n");
    let mut pool = Vec::new();
    for i in 0..1 + rng.below(3) {
        let ty = if exact { rng.pick(&ALL) } else { rng.pick(&[Ty::F32, Ty::F32, Ty::F16, Ty::Bf16, Ty::F64]) };
        let (fill, bound) = input_fill(rng, ty, exact);
        let x = format!("x{i}");
        // Affine, reversed or gathered offsets (all inside `0..n` where `m` holds).
        let idx = match rng.below(4) {
            0 => "n - 1 - offs".to_string(),
            1 => format!("(offs * {}) % n", rng.pick(&[3, 7, 2])),
            _ => "offs".to_string(),
        };
        body += &format!("    let v{i} = load({x} + {idx}, m, {});\n", ty.zero());
        pool.push(Val { code: format!("v{i}"), ty, bound, exact: exact || !ty.is_float() });
        bufs.push(Buf { name: x, ty, len: if loop_iters > 0 && i == 0 { "n * l".into() } else { "n".into() }, fill, output: false });
    }
    let mut ex = Exprs { rng, exact, pool, shape: "[B]".into(), index: "offs".into(), index_bound: 4096.0 };
    let compute = if exact { ex.rng.pick(&ALL) } else { ex.rng.pick(&[Ty::F32, Ty::F32, Ty::F16, Ty::Bf16, Ty::F64]) };
    let t0 = ex.value(compute, 2);
    body += &format!("    let mut t0 = {};\n", t0.code);
    let mut t0 = Val { code: "t0".into(), ..t0 };
    let mut args = vec!["n as i32".to_string()];
    let mut params = String::new();
    if ex.rng.chance(15) {
        // One program returns before storing: its outputs keep the poison on both backends.
        body = body.replacen("    let m = offs < n;\n", "    let m = offs < n;\n    if program_id(0) == 1 {\n        return;\n    }\n", 1);
    }
    if compute == Ty::F32 && ex.rng.chance(40) {
        // A strong f32 scalar argument.
        let scale = ex.rng.pick(&[2.0, -1.0, 3.0]);
        body += "    t0 = t0 * a;\n";
        t0.bound *= f64::abs(scale);
        params += ", a: f32";
        args.push(format!("{scale:?}f32"));
    }
    if ex.rng.chance(40) {
        // A uniform branch on a scalar argument.
        let alt = ex.value(compute, 1);
        let thr = ex.rng.below(6);
        body += &format!("    if s > {thr} {{\n        t0 = {};\n    }}\n", alt.code);
        t0.bound = t0.bound.max(alt.bound);
        t0.exact &= alt.exact;
        params += ", s: i32";
        args.push(format!("{}", ex.rng.below(10)));
    }
    t0.exact &= t0.bound <= compute.exact_limit();
    ex.pool.push(t0.clone());
    if loop_iters > 0 {
        // An accumulation over `l` slices of x0 (exact ints stay small enough in f32).
        let x0 = &ex.pool[0];
        let bound = x0.bound * loop_iters as f64 + 1.0;
        body += &format!(
            "    let mut acc = zeros::<f32>([B]);\n    for k in 0..l {{\n        let w = load(x0 + k * n + offs, m, {});\n        acc += w.to::<f32>() * 2.0 - 1.0;\n    }}\n",
            x0.ty.zero()
        );
        params += ", l: i32";
        args.push(format!("{loop_iters}"));
        ex.pool.push(Val { code: "acc".into(), ty: Ty::F32, bound: bound * 2.0 + 1.0, exact: exact || !x0.ty.is_float() });
    }
    let outs = 1 + ex.rng.below(2);
    let mut tol = Vec::new();
    for o in 0..outs {
        let oty = if exact { ex.rng.pick(&ALL) } else { ex.rng.pick(&FLOATS) };
        let v = if o == 0 { ex.convert(&t0, oty) } else { None };
        let v = v.unwrap_or_else(|| ex.value(oty, 1));
        body += &format!("    store(o{o} + offs, {}, m);\n", v.code);
        tol.push(output_tol(&v, exact && v.exact));
        bufs.push(Buf { name: format!("o{o}"), ty: oty, len: "n".into(), fill: Fill::Ints(0), output: true });
    }
    let warps = warps(ex.rng);
    let exact = exact && tol.iter().all(|t| t.0 == 0.0);
    let ptrs: Vec<String> = bufs.iter().map(|b| format!("{}: Ptr<{}>", b.name, b.ty.name())).collect();
    let kernel = format!(
        "#[kernel(B = [{block}]{warps})]\npub fn {name}<const B: i32>({}, n: i32{params}) {{\n{body}}}\n",
        ptrs.join(", ")
    );
    Case {
        name,
        family: "map",
        exact,
        kernel,
        bufs,
        sizes: format!("let n = {n}usize; let l = {}usize;", loop_iters.max(1)),
        args,
        metas: vec![format!("{block}")],
        grid: format!("(n.div_ceil({block}),)"),
        tol,
    }
}

fn tile_kernel(rng: &mut Rng, name: String) -> Case {
    let exact = rng.chance(65);
    let (r, c) = (rng.pick(&[1, 2, 4, 8, 16, 32]), rng.pick(&[16, 32, 64, 128]));
    let (rows, cols) = (1 + rng.below(100), 1 + rng.below(2 * c));
    let mut bufs = Vec::new();
    let mut body = String::from(
        "    let r = program_id(0) * R + arange(0, R);\n    let c = arange(0, C);\n    let m = (r.as_col() < rows) & (c.as_row() < cols);\n    let offs = r.as_col() * cols + c.as_row();\n",
    );
    let mut pool = Vec::new();
    for i in 0..1 + rng.below(2) {
        let ty = if exact { rng.pick(&ALL) } else { rng.pick(&[Ty::F32, Ty::F32, Ty::F16, Ty::Bf16, Ty::F64]) };
        let (fill, bound) = input_fill(rng, ty, exact);
        body += &format!("    let v{i} = load(x{i} + offs, m, {});\n", ty.zero());
        pool.push(Val { code: format!("v{i}"), ty, bound, exact: exact || !ty.is_float() });
        bufs.push(Buf { name: format!("x{i}"), ty, len: "rows * cols".into(), fill, output: false });
    }
    let mut ex = Exprs { rng, exact, pool, shape: "[R, C]".into(), index: "(r.as_col() * 3 + c.as_row())".into(), index_bound: 4096.0 };
    let compute = if exact { ex.rng.pick(&[Ty::F32, Ty::F32, Ty::F16, Ty::F64, Ty::I32, Ty::I64]) } else { ex.rng.pick(&FLOATS) };
    let t = ex.value(compute, 2);
    body += &format!("    let t = {};\n", t.code);
    // Reduce along one axis and broadcast back.
    let axis = ex.rng.below(2);
    let op = ex.rng.pick(&["sum", "max", "min"]);
    let n_red = if axis == 1 { c } else { r } as f64;
    let red_bound = if op == "sum" { t.bound * n_red } else { t.bound };
    let red_ty = t.ty;
    let red = Val { code: format!("t.{op}({axis})"), ty: red_ty, bound: red_bound, exact: t.exact };
    let back = if axis == 1 { "red.as_col()" } else { "red.as_row()" };
    body += &format!("    let red = {};\n", red.code);
    let combined = Val { code: format!("(t - {back})"), ty: red_ty, bound: t.bound + red_bound, exact: t.exact };
    let mut tol = Vec::new();
    let mut outs = Vec::new();
    for (o, v) in [combined, Val { code: "red".into(), ..red.clone() }].into_iter().enumerate() {
        let oty = if v.ty == Ty::I64 || v.ty == Ty::I32 { v.ty } else if exact { ex.rng.pick(&[Ty::F32, Ty::F64, v.ty]) } else { ex.rng.pick(&FLOATS) };
        let conv = ex.convert(&v, oty).unwrap_or_else(|| Val { code: format!("({}).to::<{}>()", v.code, oty.name()), ty: oty, exact: false, ..v.clone() });
        let conv = if exact && conv.bound > oty.exact_limit() { Val { exact: false, ..conv } } else { conv };
        tol.push(if exact && conv.exact { (0.0, 0.0) } else { (oty.rtol().max(v.ty.rtol()), conv.bound.min(1e30)) });
        outs.push((o, oty, conv));
    }
    let (_, _, o0) = &outs[0];
    body += &format!("    store(o0 + offs, {}, m);\n", o0.code);
    let (_, _, o1) = &outs[1];
    let (store1, len1) = if axis == 1 {
        (format!("    store(o1 + r, {}, r < rows);\n", o1.code), "rows".to_string())
    } else {
        (format!("    store(o1 + program_id(0) * cols + c, {}, c < cols);\n", o1.code), format!("rows.div_ceil({r}) * cols"))
    };
    body += &store1;
    bufs.push(Buf { name: "o0".into(), ty: outs[0].1, len: "rows * cols".into(), fill: Fill::Ints(0), output: true });
    bufs.push(Buf { name: "o1".into(), ty: outs[1].1, len: len1, fill: Fill::Ints(0), output: true });
    // Exact reductions of values that are not exact are order-dependent: compare with a tolerance.
    let exact = exact && tol.iter().all(|t| t.0 == 0.0);
    let warps = warps(ex.rng);
    let ptrs: Vec<String> = bufs.iter().map(|b| format!("{}: Ptr<{}>", b.name, b.ty.name())).collect();
    let kernel = format!(
        "#[kernel(R = [{r}], C = [{c}]{warps})]\npub fn {name}<const R: i32, const C: i32>({}, rows: i32, cols: i32) {{\n{body}}}\n",
        ptrs.join(", ")
    );
    Case {
        name,
        family: "tile",
        exact,
        kernel,
        bufs,
        sizes: format!("let rows = {rows}usize; let cols = {cols}usize;"),
        args: vec!["rows as i32".into(), "cols as i32".into()],
        metas: vec![format!("{r}"), format!("{c}")],
        grid: format!("(rows.div_ceil({r}),)"),
        tol,
    }
}

fn dot_kernel(rng: &mut Rng, name: String) -> Case {
    let ty = rng.pick(&[Ty::F16, Ty::F16, Ty::Bf16, Ty::F32]);
    let (bm, bn, bk) = (rng.pick(&[16, 32, 64, 128]), rng.pick(&[16, 32, 64, 128]), rng.pick(&[16, 32, 64]));
    let (m, n, k) = (1 + rng.below(200), 1 + rng.below(200), 1 + rng.below(160));
    // Row- or column-major operands, as strides.
    let a_rows = rng.chance(60);
    let b_rows = rng.chance(60);
    let (sam, sak) = if a_rows { ("k", "1") } else { ("1", "m") };
    let (sbk, sbn) = if b_rows { ("n", "1") } else { ("1", "k") };
    let acc_form = rng.pick(&["acc += dot(x, y);", "acc = dot(x, y, acc);"]);
    // B read as a [BN, BK] block and transposed in the kernel (`b.trans()`), or read as is.
    let trans_b = rng.chance(35);
    let (y_load, acc_form) = if trans_b {
        (
            "load(b + rn.as_col() * sbn + ka.as_row() * sbk, (rn.as_col() < N) & (ka.as_row() < K), 0.0)",
            acc_form.replace("dot(x, y", "dot(x, y.trans()"),
        )
    } else {
        ("load(b + ka.as_col() * sbk + rn.as_row() * sbn, (ka.as_col() < K) & (rn.as_row() < N), 0.0)", acc_form.to_string())
    };
    let mut ex_rng = Rng::new(rng.next());
    let pool = vec![Val { code: "acc".into(), ty: Ty::F32, bound: (16 * 160) as f64, exact: true }];
    let mut ex = Exprs { rng: &mut ex_rng, exact: true, pool, shape: "[BM, BN]".into(), index: "(rm.as_col() + rn.as_row())".into(), index_bound: 512.0 };
    let oty = ex.rng.pick(&[Ty::F32, Ty::F32, Ty::F16, Ty::Bf16, Ty::F64, Ty::I32]);
    let epi = ex.value(Ty::F32, 1);
    let out = ex.convert(&epi, oty).unwrap_or_else(|| Val { code: format!("({}).to::<{}>()", epi.code, oty.name()), ty: oty, ..epi.clone() });
    let warps = warps(rng);
    let stages = if rng.chance(50) { String::new() } else { format!(", num_stages = {}", rng.pick(&[1, 2, 3, 4])) };
    // Drawn last, so that a seed's other choices do not depend on it: the product added only
    // where a condition on the indices holds (a loop that runs as written; conditions that
    // compare indices with bounds are tested once per iteration on the GPU).
    let acc_form = if rng.chance(30) {
        let cond = rng.pick(&[
            "(rm.as_col() + k0 < M) & (rn.as_row() < N)",
            "(k0 + BK <= K) | (rn.as_row() < N / 2)",
            "(k0 < K / 2) | (rm.as_col() < M / 2)",
            "rm.as_col() + rn.as_row() >= k0",
            "(rn.as_row() < N) & ((M > 100) | (rm.as_col() >= rn.as_row() + k0))",
        ]);
        let product = if trans_b { "dot(x, y.trans())" } else { "dot(x, y)" };
        format!("acc = acc + where_({cond}, {product}, 0.0);")
    } else {
        acc_form
    };
    let kernel = format!(
        "#[kernel(BM = [{bm}], BN = [{bn}], BK = [{bk}]{warps}{stages})]
pub fn {name}<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<{t}>, b: Ptr<{t}>, o: Ptr<{o}>, M: i32, N: i32, K: i32, sam: i32, sak: i32, sbk: i32, sbn: i32) {{
    let rm = program_id(0) * BM + arange(0, BM);
    let rn = program_id(1) * BN + arange(0, BN);
    let rk = arange(0, BK);
    let mut acc = zeros::<f32>([BM, BN]);
    for k0 in (0..K).step_by(BK) {{
        let ka = k0 + rk;
        let x = load(a + rm.as_col() * sam + ka.as_row() * sak, (rm.as_col() < M) & (ka.as_row() < K), 0.0);
        let y = {y_load};
        {acc_form}
    }}
    store(o + rm.as_col() * N + rn.as_row(), {}, (rm.as_col() < M) & (rn.as_row() < N));
}}
",
        out.code,
        t = ty.name(),
        o = oty.name(),
    );
    let exact_out = out.bound <= oty.exact_limit() || !oty.is_float();
    let tol = if exact_out { (0.0, 0.0) } else { (oty.rtol(), out.bound) };
    Case {
        name,
        family: "dot",
        exact: exact_out,
        kernel,
        bufs: vec![
            Buf { name: "a".into(), ty, len: "m * k".into(), fill: Fill::Ints(4), output: false },
            Buf { name: "b".into(), ty, len: "k * n".into(), fill: Fill::Ints(4), output: false },
            Buf { name: "o".into(), ty: oty, len: "m * n".into(), fill: Fill::Ints(0), output: true },
        ],
        sizes: format!("let m = {m}usize; let n = {n}usize; let k = {k}usize;"),
        args: ["m", "n", "k", sam, sak, sbk, sbn].iter().map(|s| format!("{s} as i32")).collect(),
        metas: vec![format!("{bm}"), format!("{bn}"), format!("{bk}")],
        grid: format!("(m.div_ceil({bm}), n.div_ceil({bn}))"),
        tol: vec![tol],
    }
}
