//! Kernel configurations: meta-parameter values plus `num_warps` and
//! `num_stages` (Triton's `triton.Config`).

use std::fmt;

/// The value of one meta-parameter in a [`Config`].
///
/// ```
/// use kernel_runtime::MetaValue;
/// assert_eq!(MetaValue::Int(64).to_string(), "64");
/// assert_eq!(MetaValue::Func(Some("leaky_relu")).to_string(), "leaky_relu");
/// assert_eq!(MetaValue::Func(None).to_string(), "none");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaValue {
    /// An integer (block sizes, group sizes, ...).
    Int(i64),
    /// A flag.
    Bool(bool),
    /// A function meta-parameter: the function's name, or `None` for "no function".
    Func(Option<&'static str>),
}

impl MetaValue {
    /// The integer, if this is [`MetaValue::Int`].
    ///
    /// ```
    /// use kernel_runtime::MetaValue;
    /// assert_eq!(MetaValue::Int(3).as_int(), Some(3));
    /// assert_eq!(MetaValue::Bool(true).as_int(), None);
    /// ```
    pub const fn as_int(self) -> Option<i64> {
        match self {
            MetaValue::Int(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for MetaValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaValue::Int(v) => write!(f, "{v}"),
            MetaValue::Bool(v) => write!(f, "{v}"),
            MetaValue::Func(Some(name)) => f.write_str(name),
            MetaValue::Func(None) => f.write_str("none"),
        }
    }
}

impl From<Func> for MetaValue {
    fn from(func: Func) -> Self {
        MetaValue::Func(Some(func.name))
    }
}

/// A function used as a meta-parameter value (Triton's `ACTIVATION=leaky_relu`).
///
/// ```
/// use kernel_runtime::Func;
/// const ACT: Func = Func::new("leaky_relu");
/// assert_eq!(ACT.to_string(), "leaky_relu");
/// assert_eq!(ACT, Func::new("leaky_relu"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Func {
    /// The function's name, as written in the kernel's source.
    pub name: &'static str,
}

impl Func {
    /// A function meta-parameter value named `name`.
    ///
    /// ```
    /// use kernel_runtime::Func;
    /// assert_eq!(Func::new("sigmoid").name, "sigmoid");
    /// ```
    pub const fn new(name: &'static str) -> Self {
        Func { name }
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// One configuration of a kernel: meta-parameter values, `num_warps` and
/// `num_stages`. Constructible in `const` context, so configuration lists are
/// `static`.
///
/// ```
/// use kernel_runtime::{Config, MetaValue};
/// const C: Config = Config::new(
///     &[("BLOCK_M", MetaValue::Int(128)), ("BLOCK_N", MetaValue::Int(64))],
///     4,
///     3,
/// );
/// assert_eq!(C.get("BLOCK_N"), Some(MetaValue::Int(64)));
/// assert_eq!(C.to_string(), "BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Meta-parameter names and values, in declaration order.
    pub meta: &'static [(&'static str, MetaValue)],
    /// Warps per program instance on a GPU (ignored on the CPU).
    pub num_warps: u32,
    /// Software-pipelining depth on a GPU (ignored on the CPU).
    pub num_stages: u32,
    /// The device architectures whose builds have this configuration's entries (`archs = [...]`
    /// in its `config(...)`: `"sm_90a"`, `"sm_80"`); empty for every one. On a GPU whose module
    /// lacks them, launching the configuration is [`LaunchError::MissingEntry`] and the
    /// autotuner skips it; the CPU backend runs every configuration.
    ///
    /// [`LaunchError::MissingEntry`]: crate::LaunchError::MissingEntry
    pub archs: &'static [&'static str],
}

impl Config {
    /// A configuration from its parts.
    ///
    /// ```
    /// use kernel_runtime::{Config, MetaValue};
    /// const C: Config = Config::new(&[("BLOCK", MetaValue::Int(1024))], 4, 2);
    /// assert_eq!(C.num_stages, 2);
    /// ```
    pub const fn new(
        meta: &'static [(&'static str, MetaValue)],
        num_warps: u32,
        num_stages: u32,
    ) -> Self {
        Config { meta, num_warps, num_stages, archs: &[] }
    }

    /// The same configuration, built for the architectures `archs` only (see [`Config::archs`]).
    ///
    /// ```
    /// use kernel_runtime::{Config, MetaValue};
    /// const C: Config = Config::new(&[("BLOCK", MetaValue::Int(64))], 8, 2).for_archs(&["sm_90a"]);
    /// assert!(C.is_built_for("sm_90a") && !C.is_built_for("sm_80"));
    /// assert_eq!(C.to_string(), "BLOCK=64, num_warps=8, num_stages=2, archs=[sm_90a]");
    /// assert!(Config::new(&[], 4, 3).is_built_for("sm_80"));
    /// ```
    pub const fn for_archs(self, archs: &'static [&'static str]) -> Self {
        Config { archs, ..self }
    }

    /// Whether device builds for architecture `arch` have this configuration's entries.
    pub fn is_built_for(&self, arch: &str) -> bool {
        self.archs.is_empty() || self.archs.contains(&arch)
    }

    /// The value of meta-parameter `name`, if the configuration sets it.
    ///
    /// ```
    /// use kernel_runtime::{Config, MetaValue};
    /// const C: Config = Config::new(&[("EVEN_K", MetaValue::Bool(true))], 4, 3);
    /// assert_eq!(C.get("EVEN_K"), Some(MetaValue::Bool(true)));
    /// assert_eq!(C.get("BLOCK_K"), None);
    /// ```
    pub fn get(&self, name: &str) -> Option<MetaValue> {
        self.meta.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in self.meta {
            write!(f, "{name}={value}, ")?;
        }
        write!(f, "num_warps={}, num_stages={}", self.num_warps, self.num_stages)?;
        if !self.archs.is_empty() {
            write!(f, ", archs=[{}]", self.archs.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static CONFIGS: [Config; 2] = [
        Config::new(
            &[
                ("BLOCK_M", MetaValue::Int(128)),
                ("ACTIVATION", MetaValue::Func(Some("leaky_relu"))),
            ],
            8,
            3,
        ),
        Config::new(&[], 4, 2),
    ];

    #[test]
    fn display_and_lookup() {
        assert_eq!(
            CONFIGS[0].to_string(),
            "BLOCK_M=128, ACTIVATION=leaky_relu, num_warps=8, num_stages=3"
        );
        assert_eq!(CONFIGS[1].to_string(), "num_warps=4, num_stages=2");
        assert_eq!(CONFIGS[0].get("ACTIVATION"), Some(Func::new("leaky_relu").into()));
        assert_eq!(CONFIGS[0].get("BLOCK_M").and_then(MetaValue::as_int), Some(128));
        assert_eq!(CONFIGS[1].get("BLOCK_M"), None);
    }
}
