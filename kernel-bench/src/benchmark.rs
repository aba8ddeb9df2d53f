//! The description of a sweep: [`Benchmark`], its x values ([`XVal`]) and
//! line styles ([`Color`], [`LineStyle`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::BenchError;

/// One value on the x axis: an integer (a matrix size) or a float.
///
/// Integers print without a decimal point (`512`), floats with Rust's
/// shortest round-trip formatting (`0.5`).
///
/// ```
/// use kernel_bench::XVal;
/// assert_eq!(XVal::from(512).to_string(), "512");
/// assert_eq!(XVal::from(0.5).as_f64(), 0.5);
/// assert_eq!(XVal::from(2.0).as_i64(), Some(2));
/// assert_eq!(XVal::from(2.5).as_i64(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum XVal {
    /// An integer value.
    Int(i64),
    /// A floating-point value.
    Float(f64),
}

impl XVal {
    /// The value as `f64` (integers beyond 2^53 round).
    ///
    /// ```
    /// assert_eq!(kernel_bench::XVal::Int(3).as_f64(), 3.0);
    /// ```
    pub fn as_f64(self) -> f64 {
        match self {
            XVal::Int(v) => v as f64,
            XVal::Float(v) => v,
        }
    }

    /// The value as `i64`, if it is an integer or a float with no fractional
    /// part that fits.
    ///
    /// ```
    /// use kernel_bench::XVal;
    /// assert_eq!(XVal::Float(64.0).as_i64(), Some(64));
    /// assert_eq!(XVal::Float(f64::NAN).as_i64(), None);
    /// ```
    pub fn as_i64(self) -> Option<i64> {
        match self {
            XVal::Int(v) => Some(v),
            // ±2^63 are exactly representable; -2^63 fits, 2^63 does not.
            XVal::Float(v)
                if v.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&v) =>
            {
                Some(v as i64)
            }
            XVal::Float(_) => None,
        }
    }
}

impl fmt::Display for XVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XVal::Int(v) => v.fmt(f),
            XVal::Float(v) => v.fmt(f),
        }
    }
}

impl From<i64> for XVal {
    fn from(v: i64) -> Self {
        XVal::Int(v)
    }
}

impl From<i32> for XVal {
    fn from(v: i32) -> Self {
        XVal::Int(v.into())
    }
}

impl From<u32> for XVal {
    fn from(v: u32) -> Self {
        XVal::Int(v.into())
    }
}

/// Sizes above `i64::MAX` saturate to `i64::MAX`.
impl From<usize> for XVal {
    fn from(v: usize) -> Self {
        XVal::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<f64> for XVal {
    fn from(v: f64) -> Self {
        XVal::Float(v)
    }
}

impl From<f32> for XVal {
    fn from(v: f32) -> Self {
        XVal::Float(v.into())
    }
}

/// An RGB line color.
///
/// Parses matplotlib-style names as Triton's `styles` use them (`"green"`,
/// `"tab:blue"`, one-letter `"g"`), and `#rrggbb`.
///
/// ```
/// use kernel_bench::Color;
/// assert_eq!("green".parse::<Color>().unwrap(), Color::GREEN);
/// assert_eq!("#ff8000".parse::<Color>().unwrap(), Color::rgb(255, 128, 0));
/// assert!("greenish".parse::<Color>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Color {
    /// Red, 0–255.
    pub r: u8,
    /// Green, 0–255.
    pub g: u8,
    /// Blue, 0–255.
    pub b: u8,
}

impl Color {
    /// matplotlib `blue`.
    pub const BLUE: Color = Color::rgb(0, 0, 255);
    /// matplotlib `green`.
    pub const GREEN: Color = Color::rgb(0, 128, 0);
    /// matplotlib `red`.
    pub const RED: Color = Color::rgb(255, 0, 0);
    /// matplotlib `orange`.
    pub const ORANGE: Color = Color::rgb(255, 165, 0);
    /// matplotlib `purple`.
    pub const PURPLE: Color = Color::rgb(128, 0, 128);
    /// matplotlib `black`.
    pub const BLACK: Color = Color::rgb(0, 0, 0);
    /// matplotlib `gray`.
    pub const GRAY: Color = Color::rgb(128, 128, 128);
    /// matplotlib `cyan`.
    pub const CYAN: Color = Color::rgb(0, 191, 191);
    /// matplotlib `magenta`.
    pub const MAGENTA: Color = Color::rgb(191, 0, 191);

    /// matplotlib's default color cycle (`tab:blue`, `tab:orange`, ...), used
    /// for lines when a benchmark gives no `styles`.
    ///
    /// ```
    /// assert_eq!(kernel_bench::Color::TAB10[0], "tab:blue".parse().unwrap());
    /// ```
    pub const TAB10: [Color; 10] = [
        Color::rgb(0x1f, 0x77, 0xb4),
        Color::rgb(0xff, 0x7f, 0x0e),
        Color::rgb(0x2c, 0xa0, 0x2c),
        Color::rgb(0xd6, 0x27, 0x28),
        Color::rgb(0x94, 0x67, 0xbd),
        Color::rgb(0x8c, 0x56, 0x4b),
        Color::rgb(0xe3, 0x77, 0xc2),
        Color::rgb(0x7f, 0x7f, 0x7f),
        Color::rgb(0xbc, 0xbd, 0x22),
        Color::rgb(0x17, 0xbe, 0xcf),
    ];

    /// A color from its components.
    ///
    /// ```
    /// let c = kernel_bench::Color::rgb(1, 2, 3);
    /// assert_eq!((c.r, c.g, c.b), (1, 2, 3));
    /// ```
    pub const fn rgb(r: u8, g: u8, b: u8) -> Color {
        Color { r, g, b }
    }
}

impl FromStr for Color {
    type Err = BenchError;

    fn from_str(s: &str) -> Result<Color, BenchError> {
        let t = s.trim().to_ascii_lowercase();
        if let Some(hex) = t.strip_prefix('#') {
            let byte = |i: usize| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok());
            return match (hex.len(), byte(0), byte(2), byte(4)) {
                (6, Some(r), Some(g), Some(b)) => Ok(Color::rgb(r, g, b)),
                _ => Err(BenchError::UnknownColor(s.to_string())),
            };
        }
        let tab = ["blue", "orange", "green", "red", "purple", "brown", "pink", "gray", "olive", "cyan"];
        if let Some(name) = t.strip_prefix("tab:") {
            let name = if name == "grey" { "gray" } else { name };
            return tab
                .iter()
                .position(|n| *n == name)
                .map(|i| Color::TAB10[i])
                .ok_or_else(|| BenchError::UnknownColor(s.to_string()));
        }
        let c = match t.as_str() {
            "b" | "blue" => Color::BLUE,
            "g" | "green" => Color::GREEN,
            "r" | "red" => Color::RED,
            "c" | "cyan" => Color::CYAN,
            "m" | "magenta" => Color::MAGENTA,
            "y" | "yellow" => Color::rgb(191, 191, 0),
            "k" | "black" => Color::BLACK,
            "orange" => Color::ORANGE,
            "purple" => Color::PURPLE,
            "gray" | "grey" => Color::GRAY,
            "brown" => Color::rgb(165, 42, 42),
            "pink" => Color::rgb(255, 192, 203),
            "olive" => Color::rgb(128, 128, 0),
            "navy" => Color::rgb(0, 0, 128),
            "teal" => Color::rgb(0, 128, 128),
            _ => return Err(BenchError::UnknownColor(s.to_string())),
        };
        Ok(c)
    }
}

/// How a provider's line is stroked, with matplotlib's spellings.
///
/// ```
/// use kernel_bench::LineStyle;
/// assert_eq!("--".parse::<LineStyle>().unwrap(), LineStyle::Dashed);
/// assert_eq!(LineStyle::DashDot.to_string(), "-.");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LineStyle {
    /// `-`
    #[default]
    Solid,
    /// `--`
    Dashed,
    /// `:`
    Dotted,
    /// `-.`
    DashDot,
}

impl fmt::Display for LineStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LineStyle::Solid => "-",
            LineStyle::Dashed => "--",
            LineStyle::Dotted => ":",
            LineStyle::DashDot => "-.",
        })
    }
}

impl FromStr for LineStyle {
    type Err = BenchError;

    fn from_str(s: &str) -> Result<LineStyle, BenchError> {
        match s.trim() {
            "-" | "solid" => Ok(LineStyle::Solid),
            "--" | "dashed" => Ok(LineStyle::Dashed),
            ":" | "dotted" => Ok(LineStyle::Dotted),
            "-." | "dashdot" => Ok(LineStyle::DashDot),
            _ => Err(BenchError::UnknownLineStyle(s.to_string())),
        }
    }
}

/// A sweep to run with [`perf_report`](crate::perf_report): Triton's
/// `triton.testing.Benchmark`.
///
/// Every name in `x_names` takes the same value from `x_vals` at each point
/// (Triton's scalar `x_vals`), and the plot's x axis is the first x name.
/// Each entry of `line_vals` is one *provider*, one line of the plot, named
/// `line_names[i]` in the legend and table and drawn with `styles[i]`
/// (`styles` may be left empty for matplotlib's default colors). `args` are
/// fixed extra arguments that every point can read.
///
/// Build it with a struct literal, as in Triton:
///
/// ```
/// use kernel_bench::{Benchmark, Color, LineStyle, XVal};
/// let bench = Benchmark {
///     x_names: vec!["M".into(), "N".into(), "K".into()],
///     x_vals: (2..33).map(|i| XVal::from(128 * i)).collect(),
///     line_arg: "provider".into(),
///     line_vals: vec!["cublas".into(), "triton".into()],
///     line_names: vec!["cuBLAS".into(), "Triton".into()],
///     styles: vec![(Color::GREEN, LineStyle::Solid), (Color::BLUE, LineStyle::Solid)],
///     ylabel: "TFLOPS".into(),
///     plot_name: "matmul-performance".into(),
///     ..Default::default()
/// };
/// assert!(bench.validate().is_ok());
/// ```
///
/// or with the builder methods of the same names:
///
/// ```
/// use kernel_bench::{Benchmark, Color, LineStyle};
/// let bench = Benchmark::new("matmul-performance")
///     .x_names(["M", "N", "K"])
///     .x_vals((2..33).map(|i| 128 * i))
///     .line_arg("provider")
///     .line("cublas", "cuBLAS", (Color::GREEN, LineStyle::Solid))
///     .line("triton", "Triton", (Color::BLUE, LineStyle::Solid))
///     .ylabel("TFLOPS");
/// assert_eq!(bench.line_names, ["cuBLAS", "Triton"]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Benchmark {
    /// Argument names that take the x value; the first labels the x axis.
    pub x_names: Vec<String>,
    /// The x values swept, in order.
    pub x_vals: Vec<XVal>,
    /// Name of the argument whose value selects the provider (e.g. `provider`).
    pub line_arg: String,
    /// The providers, one line each; [`Point::provider`](crate::Point::provider) returns one.
    pub line_vals: Vec<String>,
    /// Display name of each provider, for the legend, table and CSV.
    pub line_names: Vec<String>,
    /// Color and stroke of each provider's line; empty for the default cycle.
    pub styles: Vec<(Color, LineStyle)>,
    /// Label of the y axis (e.g. `TFLOPS`).
    pub ylabel: String,
    /// Title of the plot and stem of the files [`Report::save`](crate::Report::save) writes.
    pub plot_name: String,
    /// Fixed arguments passed to every point (e.g. `dtype` = `f16`).
    pub args: BTreeMap<String, String>,
    /// Draw the x axis on a log2 scale (ticks at powers of two).
    pub x_log: bool,
    /// Draw the y axis on a log10 scale.
    pub y_log: bool,
    /// Log one line per measured point at level `info` (`debug` otherwise; the `log`
    /// crate, target `kernel_bench`). Also switched on by the environment variable
    /// `KERNEL_BENCH_PROGRESS=1`.
    pub progress: bool,
}

impl Default for Benchmark {
    fn default() -> Self {
        Benchmark {
            x_names: Vec::new(),
            x_vals: Vec::new(),
            line_arg: "provider".into(),
            line_vals: Vec::new(),
            line_names: Vec::new(),
            styles: Vec::new(),
            ylabel: String::new(),
            plot_name: "benchmark".into(),
            args: BTreeMap::new(),
            x_log: false,
            y_log: false,
            progress: false,
        }
    }
}

fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

impl Benchmark {
    /// An empty benchmark named `plot_name`, with `line_arg` = `provider`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::new("softmax");
    /// assert_eq!((b.plot_name.as_str(), b.line_arg.as_str()), ("softmax", "provider"));
    /// ```
    pub fn new(plot_name: impl Into<String>) -> Self {
        Benchmark { plot_name: plot_name.into(), ..Default::default() }
    }

    /// Sets `x_names`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::new("p").x_names(["M", "N"]);
    /// assert_eq!(b.x_names, ["M", "N"]);
    /// ```
    pub fn x_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.x_names = strings(names);
        self
    }

    /// Sets `x_vals` from integers or floats.
    ///
    /// ```
    /// use kernel_bench::XVal;
    /// let b = kernel_bench::Benchmark::new("p").x_vals([256, 512]);
    /// assert_eq!(b.x_vals, [XVal::Int(256), XVal::Int(512)]);
    /// ```
    pub fn x_vals<V: Into<XVal>>(mut self, vals: impl IntoIterator<Item = V>) -> Self {
        self.x_vals = vals.into_iter().map(Into::into).collect();
        self
    }

    /// Sets `line_arg`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::new("p").line_arg("backend");
    /// assert_eq!(b.line_arg, "backend");
    /// ```
    pub fn line_arg(mut self, name: impl Into<String>) -> Self {
        self.line_arg = name.into();
        self
    }

    /// Sets `line_vals`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::new("p").line_vals(["cublas", "triton"]);
    /// assert_eq!(b.line_vals, ["cublas", "triton"]);
    /// ```
    pub fn line_vals<S: Into<String>>(mut self, vals: impl IntoIterator<Item = S>) -> Self {
        self.line_vals = strings(vals);
        self
    }

    /// Sets `line_names`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::new("p").line_names(["cuBLAS", "Triton"]);
    /// assert_eq!(b.line_names, ["cuBLAS", "Triton"]);
    /// ```
    pub fn line_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.line_names = strings(names);
        self
    }

    /// Sets `styles`.
    ///
    /// ```
    /// use kernel_bench::{Color, LineStyle};
    /// let b = kernel_bench::Benchmark::new("p").styles([(Color::GREEN, LineStyle::Dashed)]);
    /// assert_eq!(b.styles.len(), 1);
    /// ```
    pub fn styles(mut self, styles: impl IntoIterator<Item = (Color, LineStyle)>) -> Self {
        self.styles = styles.into_iter().collect();
        self
    }

    /// Appends one provider: its `line_vals`, `line_names` and `styles` entries.
    ///
    /// ```
    /// use kernel_bench::{Color, LineStyle};
    /// let b = kernel_bench::Benchmark::new("p").line("triton", "Triton", (Color::BLUE, LineStyle::Solid));
    /// assert_eq!((b.line_vals.len(), b.line_names.len(), b.styles.len()), (1, 1, 1));
    /// ```
    pub fn line(mut self, val: impl Into<String>, name: impl Into<String>, style: (Color, LineStyle)) -> Self {
        self.line_vals.push(val.into());
        self.line_names.push(name.into());
        self.styles.push(style);
        self
    }

    /// Sets `ylabel`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::new("p").ylabel("GB/s");
    /// assert_eq!(b.ylabel, "GB/s");
    /// ```
    pub fn ylabel(mut self, label: impl Into<String>) -> Self {
        self.ylabel = label.into();
        self
    }

    /// Sets `plot_name`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::default().plot_name("softmax");
    /// assert_eq!(b.plot_name, "softmax");
    /// ```
    pub fn plot_name(mut self, name: impl Into<String>) -> Self {
        self.plot_name = name.into();
        self
    }

    /// Adds one fixed argument to `args`.
    ///
    /// ```
    /// let b = kernel_bench::Benchmark::new("p").arg("dtype", "f16");
    /// assert_eq!(b.args["dtype"], "f16");
    /// ```
    pub fn arg(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.args.insert(name.into(), value.into());
        self
    }

    /// Sets `x_log`.
    ///
    /// ```
    /// assert!(kernel_bench::Benchmark::new("p").x_log(true).x_log);
    /// ```
    pub fn x_log(mut self, on: bool) -> Self {
        self.x_log = on;
        self
    }

    /// Sets `y_log`.
    ///
    /// ```
    /// assert!(kernel_bench::Benchmark::new("p").y_log(true).y_log);
    /// ```
    pub fn y_log(mut self, on: bool) -> Self {
        self.y_log = on;
        self
    }

    /// Sets `progress`.
    ///
    /// ```
    /// assert!(kernel_bench::Benchmark::new("p").progress(true).progress);
    /// ```
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Checks that the benchmark can be run and plotted: `x_names`, `x_vals`
    /// and `line_vals` are non-empty; `line_names` (and `styles`, unless
    /// empty) have one entry per `line_vals`; names are non-empty and unique;
    /// `line_arg` is not an x name; x values are finite (and positive on a log
    /// axis); `plot_name` is a plain file name. Returns the first problem.
    ///
    /// ```
    /// use kernel_bench::{BenchError, Benchmark};
    /// let b = Benchmark::new("p").x_names(["N"]).x_vals([1, 2]).line_vals(["a", "b"]).line_names(["A"]);
    /// assert!(matches!(b.validate(), Err(BenchError::LengthMismatch { field: "line_names", .. })));
    /// ```
    pub fn validate(&self) -> Result<(), BenchError> {
        // Each required list has at least one entry.
        for (field, len) in
            [("x_names", self.x_names.len()), ("x_vals", self.x_vals.len()), ("line_vals", self.line_vals.len())]
        {
            if len == 0 {
                return Err(BenchError::Empty { field });
            }
        }
        // `line_names` and `styles` line up with `line_vals`.
        let expected = self.line_vals.len();
        if self.line_names.len() != expected {
            return Err(BenchError::LengthMismatch { field: "line_names", found: self.line_names.len(), expected });
        }
        if !self.styles.is_empty() && self.styles.len() != expected {
            return Err(BenchError::LengthMismatch { field: "styles", found: self.styles.len(), expected });
        }
        // Names that select things are non-empty and unique.
        for (field, names) in [("x_names", &self.x_names), ("line_vals", &self.line_vals)] {
            let mut seen = BTreeSet::new();
            for name in names {
                if name.is_empty() {
                    return Err(BenchError::EmptyName { field });
                }
                if !seen.insert(name.as_str()) {
                    return Err(BenchError::Duplicate { field, name: name.clone() });
                }
            }
        }
        if self.line_arg.is_empty() {
            return Err(BenchError::EmptyName { field: "line_arg" });
        }
        // The provider argument cannot also be an x argument.
        if self.x_names.contains(&self.line_arg) {
            return Err(BenchError::LineArgIsXName(self.line_arg.clone()));
        }
        // x values can be placed on the axis.
        for (index, x) in self.x_vals.iter().enumerate() {
            let value = x.as_f64();
            if !value.is_finite() {
                return Err(BenchError::NonFiniteX { index, value });
            }
            if self.x_log && value <= 0.0 {
                return Err(BenchError::NonPositiveLogX { index, value });
            }
        }
        check_plot_name(&self.plot_name)
    }

    /// The color and stroke of provider `i`: `styles[i]`, or the default cycle.
    pub(crate) fn style(&self, i: usize) -> (Color, LineStyle) {
        self.styles.get(i).copied().unwrap_or((Color::TAB10[i % Color::TAB10.len()], LineStyle::Solid))
    }

    /// The index of a provider, by `line_vals` entry first, then `line_names` entry.
    pub(crate) fn provider_index(&self, name: &str) -> Result<usize, BenchError> {
        self.line_vals
            .iter()
            .position(|v| v == name)
            .or_else(|| self.line_names.iter().position(|v| v == name))
            .ok_or_else(|| BenchError::UnknownProvider { name: name.to_string(), known: self.line_vals.clone() })
    }
}

/// `plot_name` is the stem of the files `Report::save` writes, so it must be
/// a plain file name.
fn check_plot_name(name: &str) -> Result<(), BenchError> {
    let reason = if name.trim().is_empty() {
        "it is empty"
    } else if name.contains(['/', '\\']) {
        "it contains a path separator"
    } else if name.chars().any(char::is_control) {
        "it contains a control character"
    } else if name == "." || name == ".." {
        "it names a directory"
    } else {
        return Ok(());
    };
    Err(BenchError::InvalidPlotName { name: name.to_string(), reason })
}
