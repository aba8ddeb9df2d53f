//! The one error type of this crate, [`BenchError`].

use std::path::PathBuf;

/// Why a benchmark could not be set up, queried or written out.
///
/// A point whose measurement fails is *not* an error of the sweep: it is kept
/// in the [`Report`](crate::Report) as a missing value with its message (see
/// [`Report::failures`](crate::Report::failures)).
///
/// ```
/// use kernel_bench::BenchError;
/// let e = BenchError::LengthMismatch { field: "line_names", found: 1, expected: 2 };
/// assert_eq!(e.to_string(), "`line_names` has 1 entries, but `line_vals` has 2");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A list of the [`Benchmark`](crate::Benchmark) that must not be empty is empty.
    #[error("`{field}` is empty; a benchmark needs at least one entry")]
    Empty {
        /// The field: `x_names`, `x_vals` or `line_vals`.
        field: &'static str,
    },
    /// `line_names` or `styles` does not have one entry per `line_vals` entry.
    #[error("`{field}` has {found} entries, but `line_vals` has {expected}")]
    LengthMismatch {
        /// The field: `line_names` or `styles`.
        field: &'static str,
        /// Its number of entries.
        found: usize,
        /// The number of `line_vals`.
        expected: usize,
    },
    /// A name occurs twice where names must be unique.
    #[error("`{field}` names `{name}` twice")]
    Duplicate {
        /// The field: `x_names` or `line_vals`.
        field: &'static str,
        /// The repeated name.
        name: String,
    },
    /// A name is empty where it must not be (`x_names`, `line_vals`, `line_arg`).
    #[error("`{field}` contains an empty name")]
    EmptyName {
        /// The field.
        field: &'static str,
    },
    /// `line_arg` is also one of the `x_names`, so a point would have two values for it.
    #[error("`line_arg` `{0}` is also an x name")]
    LineArgIsXName(String),
    /// An x value is NaN or infinite.
    #[error("x value #{index} is not finite ({value})")]
    NonFiniteX {
        /// Its position in `x_vals`.
        index: usize,
        /// The value.
        value: f64,
    },
    /// An x value is zero or negative while the x axis is logarithmic.
    #[error("x value #{index} is {value}, but a logarithmic x axis needs positive values")]
    NonPositiveLogX {
        /// Its position in `x_vals`.
        index: usize,
        /// The value.
        value: f64,
    },
    /// `plot_name` cannot be used as a file name.
    #[error("plot name `{name}` cannot be used as a file name: {reason}")]
    InvalidPlotName {
        /// The plot name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A provider was asked for that is neither a `line_vals` nor a `line_names` entry.
    #[error("unknown provider `{name}`; the providers are {known:?}")]
    UnknownProvider {
        /// The name asked for.
        name: String,
        /// The `line_vals` of the benchmark.
        known: Vec<String>,
    },
    /// A [`Point`](crate::Point) was asked for an x name the benchmark does not have.
    #[error("unknown x name `{name}`; the x names are {known:?}")]
    UnknownXName {
        /// The name asked for.
        name: String,
        /// The `x_names` of the benchmark.
        known: Vec<String>,
    },
    /// An x value was asked for as an integer but is not one (or is out of range).
    #[error("x value {name}={value} is not a {wanted}")]
    NotAnInteger {
        /// The x name.
        name: String,
        /// The value, as written in tables.
        value: String,
        /// The integer type asked for.
        wanted: &'static str,
    },
    /// A color name or `#rrggbb` string was not recognized.
    #[error("unknown color `{0}`; expected a name such as `green` or `tab:blue`, or `#rrggbb`")]
    UnknownColor(String),
    /// A line style was not recognized.
    #[error("unknown line style `{0}`; expected `-`, `--`, `:` or `-.`")]
    UnknownLineStyle(String),
    /// No point in the requested x range has a value for both providers.
    #[error("no x value in the range has measurements for both `{numerator}` and `{denominator}`")]
    NoPointsInRange {
        /// The numerator provider.
        numerator: String,
        /// The denominator provider.
        denominator: String,
    },
    /// A ratio is zero, negative or infinite, so it has no geometric mean.
    #[error("the ratio at x={x} is {ratio}; a geometric mean needs positive, finite ratios")]
    NonPositiveRatio {
        /// The x value, as written in tables.
        x: String,
        /// The ratio.
        ratio: f64,
    },
    /// Reading or writing a file failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Drawing or encoding a plot failed.
    #[error("cannot draw the {format} plot: {reason}")]
    Plot {
        /// `svg` or `png`.
        format: &'static str,
        /// The drawing library's message.
        reason: String,
    },
}

impl BenchError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BenchError::Io { path: path.into(), source }
    }
}
