//! Errors raised while a program instance runs: [`KernelError`] (with the
//! [`Site`] of the failing operation) and the scalar [`ArithError`].

/// The source position of an operation in a kernel, for error messages.
///
/// ```
/// use kernel_runtime::__private::cpu::Site;
/// const SITE: Site = Site { kernel: "add_kernel", line: 12, column: 5 };
/// assert_eq!(SITE.to_string(), "kernel `add_kernel` at line 12, column 5");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    /// The kernel's name.
    pub kernel: &'static str,
    /// 1-based line in the kernel's source file.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kernel `{}` at line {}, column {}", self.kernel, self.line, self.column)
    }
}

/// Why a scalar operation failed; turned into a [`KernelError`] with
/// [`ArithError::at`].
///
/// ```
/// use kernel_runtime::__private::cpu::{ArithError, Num};
/// assert_eq!(Num::rem(5u32, 0), Err(ArithError::DivisionByZero));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArithError {
    /// Integer division or remainder by zero.
    #[error("integer division by zero")]
    DivisionByZero,
}

impl ArithError {
    /// The kernel error for this failure at `site`.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::{ArithError, KernelError, Site};
    /// let site = Site { kernel: "k", line: 3, column: 9 };
    /// let e = ArithError::DivisionByZero.at(&site);
    /// assert_eq!(e.to_string(), "integer division by zero in kernel `k` at line 3, column 9");
    /// ```
    pub fn at(self, site: &Site) -> KernelError {
        match self {
            ArithError::DivisionByZero => KernelError::DivisionByZero {
                kernel: site.kernel,
                line: site.line,
                column: site.column,
            },
        }
    }
}

/// Why a program instance failed.
///
/// ```
/// use kernel_runtime::__private::cpu::KernelError;
/// let e = KernelError::OutOfBounds {
///     kernel: "matmul_kernel", line: 42, column: 17,
///     op: "load", arg: "a_ptr", index: 70000, len: 65536,
/// };
/// assert_eq!(
///     e.to_string(),
///     "out-of-bounds load in kernel `matmul_kernel` at line 42, column 17: \
///      index 70000 of argument `a_ptr` (length 65536)"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// An unmasked `load` or `store` lane pointed outside its argument.
    #[error(
        "out-of-bounds {op} in kernel `{kernel}` at line {line}, column {column}: \
         index {index} of argument `{arg}` (length {len})"
    )]
    OutOfBounds {
        /// The kernel's name.
        kernel: &'static str,
        /// Line of the operation.
        line: u32,
        /// Column of the operation.
        column: u32,
        /// `"load"` or `"store"`.
        op: &'static str,
        /// The pointer argument's name.
        arg: &'static str,
        /// Element offset from the argument's first element.
        index: i64,
        /// Elements reachable from the argument's first element.
        len: usize,
    },
    /// Integer division or remainder by zero.
    #[error("integer division by zero in kernel `{kernel}` at line {line}, column {column}")]
    DivisionByZero {
        /// The kernel's name.
        kernel: &'static str,
        /// Line of the operation.
        line: u32,
        /// Column of the operation.
        column: u32,
    },
    /// A `for` loop whose step evaluated to zero at run time.
    #[error("loop step is zero in kernel `{kernel}` at line {line}, column {column}: the loop would never end")]
    ZeroStep {
        /// The kernel's name.
        kernel: &'static str,
        /// Line of the loop.
        line: u32,
        /// Column of the loop.
        column: u32,
    },
    /// A `device_assert` whose condition was false.
    #[error("{0}")]
    Assertion(AssertionFailure),
    /// A broken invariant of the generated code or the runtime (a bug, not a
    /// user error): block shape mismatch, bad pointer argument index, ...
    #[error("internal error in kernel `{kernel}`: {message} (this is a bug in kernel-macros or kernel-runtime)")]
    Internal {
        /// The kernel's name.
        kernel: &'static str,
        /// What went wrong.
        message: String,
    },
}

/// A failed `device_assert`: where, the message, and the first element of the program where
/// the condition was false, with the values of the condition's operands there when it is a
/// comparison. The CPU backend returns it as [`KernelError::Assertion`], the GPU as
/// [`DeviceError::Assertion`](crate::DeviceError::Assertion).
///
/// ```
/// use kernel_runtime::cpu::AssertionFailure;
/// let f = AssertionFailure {
///     kernel: "k", line: 12, column: 5, condition: "offs < n".into(), message: "offsets in range".into(),
///     program: [1, 0, 0], index: Some(70), operands: vec![("offs".into(), "134".into()), ("n".into(), "100".into())],
/// };
/// assert_eq!(
///     f.to_string(),
///     "device_assert failed in kernel `k` at line 12, column 5: offsets in range: \
///      `offs < n` is false at element 70 of program (1, 0, 0), where offs = 134, n = 100"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssertionFailure {
    /// The kernel's name.
    pub kernel: &'static str,
    /// Line of the `device_assert`.
    pub line: u32,
    /// Column of the `device_assert`.
    pub column: u32,
    /// The condition, as written.
    pub condition: String,
    /// The message (empty when none was given).
    pub message: String,
    /// The program id of the failing program.
    pub program: [u32; 3],
    /// The flat (row-major) index of the first failing element; `None` for a scalar condition.
    pub index: Option<usize>,
    /// The condition's operands when it is a comparison: (as written, value at the element).
    pub operands: Vec<(String, String)>,
}

impl std::fmt::Display for AssertionFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device_assert failed in kernel `{}` at line {}, column {}: ", self.kernel, self.line, self.column)?;
        if !self.message.is_empty() {
            write!(f, "{}: ", self.message)?;
        }
        let [x, y, z] = self.program;
        match self.index {
            Some(i) => write!(f, "`{}` is false at element {i} of program ({x}, {y}, {z})", self.condition)?,
            None => write!(f, "`{}` is false in program ({x}, {y}, {z})", self.condition)?,
        }
        for (i, (text, value)) in self.operands.iter().enumerate() {
            write!(f, "{}{text} = {value}", if i == 0 { ", where " } else { ", " })?;
        }
        Ok(())
    }
}

impl std::error::Error for AssertionFailure {}
