//! The debugging builtins on the CPU backend: `device_assert` ([`first_false`],
//! [`assertion_failed`]) and `device_print` ([`device_print`], [`format_print`]).

use std::fmt::Display;

use super::blk::Blk;
use super::broadcast::{bcast_strides, numel};
use super::elem::Elem;
use super::error::{AssertionFailure, KernelError, Site};
use super::memory::Ctx;

/// A block whose elements print: what a failed `device_assert` reports and [`device_print`] prints,
/// whatever their element type (every value type; pointers do not print).
pub trait BlkText {
    /// The block's shape.
    fn shape(&self) -> &[usize];
    /// Element `flat` of the block read as a block of shape `out` (broadcast), as text.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::{Blk, BlkText};
    /// let row = Blk::from_vec(vec![1, 3], vec![1.5f32, 2.0, -0.25]);
    /// assert_eq!(row.text_at(&[2, 3], 5), "-0.25");
    /// assert_eq!(Blk::scalar(true).text_at(&[4], 2), "true");
    /// ```
    fn text_at(&self, out: &[usize], flat: usize) -> String;
}

impl<T: Elem + Display> BlkText for Blk<T> {
    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn text_at(&self, out: &[usize], flat: usize) -> String {
        let strides = bcast_strides(&self.shape, out);
        let mut rest = flat;
        let mut at = 0usize;
        for (d, &n) in out.iter().enumerate().rev() {
            at += (rest % n.max(1)) * strides[d];
            rest /= n.max(1);
        }
        self.data.get(at).map_or_else(String::new, |v| v.to_string())
    }
}

/// The first (row-major) element where the condition of a `device_assert` is false.
///
/// ```
/// use kernel_runtime::__private::cpu::{first_false, Blk};
/// assert_eq!(first_false(&Blk::from_vec(vec![3], vec![true, false, false])), Some(1));
/// assert_eq!(first_false(&Blk::scalar(true)), None);
/// ```
pub fn first_false(cond: &Blk<bool>) -> Option<usize> {
    cond.data.iter().position(|c| !c)
}

/// The error of a `device_assert` at `site` of program `ctx` whose condition (`text`, as
/// written) is false at element `at = (shape, flat index)` of a block (`None`: a scalar), with
/// the `operands` (the condition's two sides when it is a comparison, as written) read there.
///
/// ```
/// use kernel_runtime::__private::cpu::{assertion_failed, Blk, BlkText, Ctx, KernelError, Site};
/// let ctx = Ctx::new("k", [2, 0, 0], [4, 1, 1], &[]);
/// let site = Site { kernel: "k", line: 7, column: 5 };
/// let x = Blk::from_vec(vec![4], vec![1, 2, 30, 40]);
/// let n = Blk::scalar(10);
/// let ops: [(&str, &dyn BlkText); 2] = [("x", &x), ("n", &n)];
/// let KernelError::Assertion(f) = assertion_failed(&ctx, "x < n", "small", Some((&[4], 2)), &ops, &site) else { panic!() };
/// assert_eq!((f.index, f.program), (Some(2), [2, 0, 0]));
/// assert_eq!(f.operands, vec![("x".to_string(), "30".to_string()), ("n".to_string(), "10".to_string())]);
/// ```
pub fn assertion_failed(ctx: &Ctx<'_>, text: &str, message: &str, at: Option<(&[usize], usize)>, operands: &[(&str, &dyn BlkText)], site: &Site) -> KernelError {
    let (shape, i) = at.unwrap_or((&[], 0));
    KernelError::Assertion(AssertionFailure {
        kernel: site.kernel,
        line: site.line,
        column: site.column,
        condition: text.to_string(),
        message: message.to_string(),
        program: program(ctx),
        index: at.map(|(_, i)| i),
        operands: operands.iter().map(|(t, v)| (t.to_string(), v.text_at(shape, i))).collect(),
    })
}

/// `device_print("prefix", values...)` in program `ctx`: [`format_print`]'s lines on stdout,
/// written at once (lines of programs running in parallel do not interleave).
pub fn device_print(ctx: &Ctx<'_>, prefix: &str, values: &[&dyn BlkText]) {
    let mut out = format_print(program(ctx), prefix, values).join("\n");
    out.push('\n');
    print!("{out}");
}

/// The lines `device_print` writes for program `pid`: one per element of the values (all of
/// one shape, as the macro broadcasts them), `pid (x, y, z) idx (i, j) <prefix> v1, v2`, or
/// one without `idx` when the values are scalars (or there are none).
///
/// ```
/// use kernel_runtime::__private::cpu::{format_print, Blk, BlkText};
/// let x = Blk::from_vec(vec![2], vec![1.5f32, -2.0]);
/// let i = Blk::from_vec(vec![2], vec![7i64, 8]);
/// assert_eq!(
///     format_print([1, 0, 0], "x, i =", &[&x as &dyn BlkText, &i]),
///     ["pid (1, 0, 0) idx (0) x, i = 1.5, 7", "pid (1, 0, 0) idx (1) x, i = -2, 8"]
/// );
/// assert_eq!(format_print([0, 2, 0], "n", &[&Blk::scalar(3u32) as &dyn BlkText]), ["pid (0, 2, 0) n 3"]);
/// ```
pub fn format_print(pid: [u32; 3], prefix: &str, values: &[&dyn BlkText]) -> Vec<String> {
    let shape: Vec<usize> = values.first().map_or_else(Vec::new, |v| v.shape().to_vec());
    let head = format!("pid ({}, {}, {})", pid[0], pid[1], pid[2]);
    let sep = if prefix.is_empty() || prefix.ends_with(' ') || values.is_empty() { "" } else { " " };
    let line = |idx: Option<String>, flat: usize| {
        let vals: Vec<String> = values.iter().map(|v| v.text_at(&shape, flat)).collect();
        let idx = idx.map(|i| format!(" idx ({i})")).unwrap_or_default();
        let body = format!("{prefix}{sep}{}", vals.join(", "));
        if body.is_empty() { format!("{head}{idx}") } else { format!("{head}{idx} {body}") }
    };
    if shape.is_empty() {
        return vec![line(None, 0)];
    }
    (0..numel(&shape)).map(|f| line(Some(index_text(&shape, f)), f)).collect()
}

/// `i, j` for the row-major flat index `flat` of a block of `shape`.
fn index_text(shape: &[usize], flat: usize) -> String {
    let mut coords = vec![0usize; shape.len()];
    let mut rest = flat;
    for (c, &n) in coords.iter_mut().zip(shape).rev() {
        *c = rest % n.max(1);
        rest /= n.max(1);
    }
    coords.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
}

/// The program id of `ctx`.
fn program(ctx: &Ctx<'_>) -> [u32; 3] {
    [0, 1, 2].map(|a| ctx.program_id(a) as u32)
}
