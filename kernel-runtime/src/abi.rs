//! The contract between `#[kernel]`'s generated code and the runtime: the static descriptions
//! of kernels, their instances and parameters (hidden ones included) and of the crate that
//! holds their device code. Generated host modules build these as statics; the launchers read
//! them.

use std::fmt;

use crate::config::Config;
use crate::dtype::DTypeKind;

/// What a kernel parameter is.
///
/// ```
/// use kernel_runtime::__private::ParamKind;
/// use kernel_runtime::DTypeKind;
/// assert!(ParamKind::Ptr(DTypeKind::F16).is_ptr());
/// assert_eq!(ParamKind::Scalar(DTypeKind::I32).dtype(), DTypeKind::I32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A pointer to elements of this type (a tensor argument).
    Ptr(DTypeKind),
    /// A scalar of this type, passed by value.
    Scalar(DTypeKind),
}

impl ParamKind {
    /// Whether this is a pointer parameter.
    ///
    /// ```
    /// use kernel_runtime::__private::ParamKind;
    /// use kernel_runtime::DTypeKind;
    /// assert!(!ParamKind::Scalar(DTypeKind::I32).is_ptr());
    /// ```
    pub const fn is_ptr(self) -> bool {
        matches!(self, ParamKind::Ptr(_))
    }

    /// The element type (pointee type for pointers).
    ///
    /// ```
    /// use kernel_runtime::__private::ParamKind;
    /// use kernel_runtime::DTypeKind;
    /// assert_eq!(ParamKind::Ptr(DTypeKind::BF16).dtype(), DTypeKind::BF16);
    /// ```
    pub const fn dtype(self) -> DTypeKind {
        match self {
            ParamKind::Ptr(d) | ParamKind::Scalar(d) => d,
        }
    }
}

/// One parameter of a kernel, as declared.
///
/// ```
/// use kernel_runtime::__private::{ParamInfo, ParamKind};
/// use kernel_runtime::DTypeKind;
/// const A: ParamInfo = ParamInfo { name: "a_ptr", kind: ParamKind::Ptr(DTypeKind::F16) };
/// assert_eq!(A.name, "a_ptr");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamInfo {
    /// The parameter's name.
    pub name: &'static str,
    /// Pointer or scalar, and its dtype.
    pub kind: ParamKind,
}

/// The static description of a kernel that `#[kernel]` emits.
///
/// ```
/// use kernel_runtime::__private::{KernelInfo, ModuleInfo, ParamInfo, ParamKind};
/// use kernel_runtime::{Config, DTypeKind, MetaValue};
/// static INFO: KernelInfo = KernelInfo {
///     name: "add_kernel",
///     params: &[
///         ParamInfo { name: "x_ptr", kind: ParamKind::Ptr(DTypeKind::F32) },
///         ParamInfo { name: "n", kind: ParamKind::Scalar(DTypeKind::I32) },
///     ],
///     configs: &[Config::new(&[("BLOCK", MetaValue::Int(1024))], 4, 2)],
///     key: &["n"],
///     instances: &[],
///     module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
/// };
/// assert_eq!(INFO.ptr_params().count(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelInfo {
    /// The kernel's name.
    pub name: &'static str,
    /// All parameters, in declaration order.
    pub params: &'static [ParamInfo],
    /// The declared configurations (autotuning candidates or instances).
    pub configs: &'static [Config],
    /// Names of the parameters whose values key the autotuning cache.
    pub key: &'static [&'static str],
    /// Every compiled instance (one device entry point each), in declaration order.
    pub instances: &'static [InstanceInfo],
    /// Where the kernel was defined, to find its compiled PTX.
    pub module: ModuleInfo,
    /// Its `device_assert`s, by source position: what a failure the GPU records is reported with.
    pub asserts: &'static [AssertInfo],
}

/// A `device_assert` of a kernel: its position, the condition and operands as written, and its
/// message. The GPU records only the position of a failure (with the index and values); this
/// gives the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AssertInfo {
    /// Line of the `device_assert`.
    pub line: u32,
    /// Column of the `device_assert`.
    pub column: u32,
    /// The condition, as written.
    pub condition: &'static str,
    /// The message (empty when none was given).
    pub message: &'static str,
    /// The condition's operands, as written, when it is a comparison.
    pub operands: &'static [&'static str],
}

impl KernelInfo {
    /// The `device_assert` at `line` and `column`.
    ///
    /// ```
    /// use kernel_runtime::__private::{AssertInfo, KernelInfo, ModuleInfo};
    /// static INFO: KernelInfo = KernelInfo {
    ///     name: "k", params: &[], configs: &[], key: &[], instances: &[],
    ///     module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] },
    ///     asserts: &[AssertInfo { line: 7, column: 5, condition: "x < n", message: "", operands: &["x", "n"] }],
    /// };
    /// assert_eq!(INFO.assert_at(7, 5).map(|a| a.condition), Some("x < n"));
    /// assert!(INFO.assert_at(7, 6).is_none());
    /// ```
    pub fn assert_at(&self, line: u32, column: u32) -> Option<&'static AssertInfo> {
        self.asserts.iter().find(|a| a.line == line && a.column == column)
    }
}

/// One compiled instance of a kernel: a device entry point with concrete meta values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InstanceInfo {
    /// The PTX entry name, e.g. `matmul_kernel__leaky_relu__c0`.
    pub entry: &'static str,
    /// Index into [`KernelInfo::configs`].
    pub config: usize,
    /// Index of the function meta-parameter assignment.
    pub variant: usize,
    /// Values of the meta-parameters given at launch.
    pub launch_metas: &'static [(&'static str, i64)],
    /// Threads per program (`32 * num_warps`).
    pub threads: u32,
    /// Dynamic shared memory the entry needs, in bytes.
    pub shared_bytes: u32,
    /// Operands the entry can copy with the tensor memory accelerator (Hopper), each through a
    /// tensor map that the launch builds; empty for most entries.
    pub tma: &'static [TmaOperand],
    /// Bytes of one part's partial accumulator when the instance has a second entry,
    /// `<entry>__split`, that launches splitting its K loop over several blocks per program run
    /// instead (the last wave of a 1-D grid, see [`crate::split_plan`]); 0 when it has none.
    pub split_bytes: u32,
    /// The parameters the entry takes after the declared ones, in order: a launch passes
    /// [`Hidden`] values in this order and no other.
    pub hidden: &'static [Hidden],
    /// Those of the split entry (`<entry>__split`); empty when there is none.
    pub split_hidden: &'static [Hidden],
}

/// A parameter an entry takes after the kernel's declared ones (see [`InstanceInfo::hidden`]):
/// the device code generator lists them for each entry, the launch fills them in.
///
/// ```
/// use kernel_runtime::__private::Hidden;
/// let hidden = [Hidden::Len(0), Hidden::Len(2), Hidden::Fault, Hidden::Tag];
/// assert_eq!(hidden.iter().filter(|h| matches!(h, Hidden::Len(_))).count(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hidden {
    /// The elements addressable from pointer parameter `i` (an index into
    /// [`KernelInfo::params`]): its allocation's length minus the argument's offset, `u64`.
    Len(usize),
    /// The address of the device's fault record (`*mut u32`).
    Fault,
    /// The launch's tag (`u32`), which the device writes into the record with a fault.
    Tag,
    /// The address of the instance's tensor maps, one per [`InstanceInfo::tma`] operand, 128
    /// bytes each (`*const u8`).
    TensorMaps,
    /// Which of those maps are valid (`u32`, bit `i` for operand `i`).
    TensorMapMask,
    /// A split launch's workspace of partial accumulators (`*mut f32`).
    SplitWorkspace,
    /// A split launch's arrival counters (`*mut u32`).
    SplitCounters,
    /// The programs a split launch runs whole (`u32`).
    SplitWholePrograms,
    /// The parts each split program runs on (`u32`).
    SplitParts,
}

/// A tensor map that a launch builds for an entry (see [`InstanceInfo::tma`]): the buffer of
/// pointer parameter `ptr` viewed as a 2-D tensor of rows `row_stride` elements apart (the value
/// of that scalar parameter), copied in boxes of `box_rows x box_inner` elements into shared
/// memory swizzled in `swizzle`-byte patterns (0: none).
///
/// The launch builds the map only when the view is valid for the copy engine: column stride 1
/// (parameter `col_stride`, or none), a 16-byte aligned address and row pitch. The entry gets the
/// maps' address and a mask of the valid ones; it still checks before its K loop that its
/// accesses match the map, and copies the other way when they do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmaOperand {
    /// Index into [`KernelInfo::params`] of the pointer parameter.
    pub ptr: usize,
    /// Index of the scalar parameter giving the distance between rows, in elements.
    pub row_stride: usize,
    /// Index of the scalar parameter giving the distance between columns (must be 1).
    pub col_stride: Option<usize>,
    /// Box columns (elements).
    pub box_inner: u32,
    /// Box rows.
    pub box_rows: u32,
    /// Shared-memory swizzle pattern in bytes: 0, 32, 64 or 128.
    pub swizzle: u32,
}

/// The crate that defines a kernel: its PTX is embedded in the binary (`embedded`, when the
/// crate's build script uses `kernel-build` and its root `kernel_std::embed_ptx!()`), or found
/// on disk as `target/ptx/<arch>/<crate_name>.ptx` (see `cuda::ptx` for the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModuleInfo {
    /// `CARGO_CRATE_NAME` of the defining crate.
    pub crate_name: &'static str,
    /// `CARGO_MANIFEST_DIR` of the defining crate at build time.
    pub manifest_dir: &'static str,
    /// The device code built into the binary, one module per architecture; empty when the
    /// crate embeds none.
    pub embedded: &'static [EmbeddedModule],
}

/// The device code of a crate for one architecture, embedded in the binary by
/// `kernel_std::embed_ptx!()` from the files `kernel_build::Builder` wrote to `OUT_DIR`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedModule {
    /// `sm_80`, `sm_90`, `sm_90a`.
    pub arch: &'static str,
    /// Where the PTX was at build time (for messages; never read at run time).
    pub path: &'static str,
    /// The PTX text.
    pub ptx: &'static [u8],
    /// The cubin `ptxas` assembled from it for `arch` (empty: none).
    pub cubin: &'static [u8],
    /// The manifest (`kernel_formats::manifest`) describing both (empty: none).
    pub manifest: &'static str,
}

impl fmt::Debug for EmbeddedModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedModule")
            .field("arch", &self.arch)
            .field("path", &self.path)
            .field("ptx_bytes", &self.ptx.len())
            .field("cubin_bytes", &self.cubin.len())
            .field("manifest_bytes", &self.manifest.len())
            .finish()
    }
}

impl std::hash::Hash for EmbeddedModule {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Cheap and consistent with `Eq`: the contents are megabytes.
        (self.arch, self.path, self.ptx.len(), self.cubin.len()).hash(state);
    }
}
