//! One program instance ([`Ctx`]) and its memory accesses: [`load`] and
//! [`store`], bounds-checked on every unmasked lane.
//!
//! A pointer `P { buf, off }` is valid when `0 <= storage_offset + off <
//! storage_len` for the storage of pointer argument `buf`. Masked-off lanes
//! never touch memory, whatever their pointer.

use super::blk::Blk;
use super::broadcast::{bcast_strides, broadcast_shapes_or_internal, internal, numel, try_for_each_bcast};
use super::error::{KernelError, Site};
use super::ptr::P;
use crate::dtype::DType;
use crate::launch::{ArgMem, PtrArg};

/// One program instance: its program ids, the grid, and the kernel's pointer
/// arguments.
///
/// ```
/// use kernel_runtime::__private::cpu::Ctx;
/// let ctx = Ctx::new("k", [3, 0, 0], [8, 1, 1], &[]);
/// assert_eq!(ctx.program_id(0), 3);
/// assert_eq!(ctx.num_programs(0), 8);
/// assert_eq!(ctx.num_programs(2), 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    kernel: &'static str,
    pid: [u32; 3],
    grid: [u32; 3],
    args: &'a [PtrArg<'a>],
}

impl<'a> Ctx<'a> {
    /// The instance `program_id` of a launch of `kernel` over `grid`, with
    /// pointer arguments `args` (numbered as in [`P::arg`]). `launch_cpu`
    /// builds these; this constructor is for tests and tools.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::Ctx;
    /// let ctx = Ctx::new("k", [0, 1, 0], [1, 2, 1], &[]);
    /// assert_eq!(ctx.kernel(), "k");
    /// ```
    pub fn new(
        kernel: &'static str,
        program_id: [u32; 3],
        grid: [u32; 3],
        args: &'a [PtrArg<'a>],
    ) -> Self {
        Ctx { kernel, pid: program_id, grid, args }
    }

    /// This instance's index along `axis` (0, 1 or 2).
    ///
    /// # Panics
    /// When `axis > 2` (an internal error: the macro checks it).
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::Ctx;
    /// assert_eq!(Ctx::new("k", [0, 5, 0], [1, 6, 1], &[]).program_id(1), 5);
    /// ```
    pub fn program_id(&self, axis: u32) -> i32 {
        match self.pid.get(axis as usize) {
            // Grid sizes are at most 2^31 - 1, so ids fit in i32.
            Some(&v) => v as i32,
            None => internal(format!("program_id: axis {axis} is not 0, 1 or 2")),
        }
    }

    /// The grid size along `axis` (0, 1 or 2).
    ///
    /// # Panics
    /// When `axis > 2` (an internal error: the macro checks it).
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::Ctx;
    /// assert_eq!(Ctx::new("k", [0, 0, 0], [4, 1, 1], &[]).num_programs(0), 4);
    /// ```
    pub fn num_programs(&self, axis: u32) -> i32 {
        match self.grid.get(axis as usize) {
            Some(&v) => v as i32,
            None => internal(format!("num_programs: axis {axis} is not 0, 1 or 2")),
        }
    }

    /// The address of `p` in bytes, as a `multiple_of` hint on a pointer describes it: its
    /// element offset from the start of its argument's storage (the tensor's storage offset
    /// plus `p.off`) times the element size — the address it has on the GPU relative to the
    /// storage's start, which device allocations align to 256 bytes. An unknown argument has
    /// address 0 (a load or store through it is an error).
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::{Ctx, P};
    /// let ctx = Ctx::new("k", [0, 0, 0], [1, 1, 1], &[]);
    /// assert_eq!(ctx.address(P { buf: 0, off: 3 }), 0);
    /// ```
    pub fn address(&self, p: P) -> i64 {
        match self.args.get(p.buf as usize) {
            Some(arg) => (arg.offset as i64).wrapping_add(p.off).wrapping_mul(arg.kind.size_bytes() as i64),
            None => 0,
        }
    }

    /// The kernel's name.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::Ctx;
    /// assert_eq!(Ctx::new("add_kernel", [0; 3], [1; 3], &[]).kernel(), "add_kernel");
    /// ```
    pub fn kernel(&self) -> &'static str {
        self.kernel
    }
}

/// Finds and bounds-checks the storage cell of each pointer, caching the last
/// argument looked up (lanes of a block almost always share one).
pub(super) struct Resolver<'a, T: DType> {
    args: &'a [PtrArg<'a>],
    site: &'a Site,
    op: &'static str,
    cached: Option<(u32, &'a [T::Atomic], usize, &'static str)>,
}

impl<'a, T: DType> Resolver<'a, T> {
    pub(super) fn new(ctx: &Ctx<'a>, site: &'a Site, op: &'static str) -> Self {
        Resolver { args: ctx.args, site, op, cached: None }
    }

    fn arg(&mut self, buf: u32) -> Result<(&'a [T::Atomic], usize, &'static str), KernelError> {
        if let Some((b, cells, base, name)) = self.cached {
            if b == buf {
                return Ok((cells, base, name));
            }
        }
        let internal = |message: String| KernelError::Internal { kernel: self.site.kernel, message };
        let Some(arg) = self.args.get(buf as usize) else {
            return Err(internal(format!(
                "{} through pointer argument #{buf}, but the launch has {} pointer arguments",
                self.op,
                self.args.len()
            )));
        };
        let cells = match &arg.mem {
            ArgMem::Host(cells) if arg.kind == T::KIND => T::from_cells(cells),
            _ => None,
        };
        let Some(cells) = cells else {
            return Err(internal(format!(
                "{} of {} through argument `{}`, which holds {}",
                self.op,
                T::KIND,
                arg.name,
                arg.kind
            )));
        };
        self.cached = Some((buf, cells, arg.offset, arg.name));
        Ok((cells, arg.offset, arg.name))
    }

    /// The cell `p` points to, or `KernelError::OutOfBounds`.
    pub(super) fn locate(&mut self, p: P) -> Result<&'a T::Atomic, KernelError> {
        let (cells, base, name) = self.arg(p.buf)?;
        // `base <= cells.len() <= isize::MAX`, so `base as i64` is exact.
        let index = p.off.checked_add(base as i64).and_then(|i| usize::try_from(i).ok());
        match index.and_then(|i| cells.get(i)) {
            Some(cell) => Ok(cell),
            None => Err(KernelError::OutOfBounds {
                kernel: self.site.kernel,
                line: self.site.line,
                column: self.site.column,
                op: self.op,
                arg: name,
                index: p.off,
                len: cells.len().saturating_sub(base),
            }),
        }
    }
}

/// Reads the elements `ptrs` point to. Lanes where `mask` is false are not
/// read and take `other` (or zero); `ptrs`, `mask` and `other` broadcast
/// together.
///
/// # Errors
/// [`KernelError::OutOfBounds`] for the first unmasked lane (row-major) whose
/// pointer is outside its argument; [`KernelError::Internal`] when a pointer
/// names an argument that does not exist or holds another dtype.
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, load, map1, map2, ptr_add, Blk, Ctx, P, Site};
/// use kernel_runtime::__private::ptr_arg;
/// use kernel_runtime::{Device, Tensor};
/// let x = Tensor::from_vec(&Device::cpu(), &[3], vec![10i32, 20, 30]).unwrap();
/// let args = [ptr_arg("x_ptr", &x)];
/// let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
/// let site = Site { kernel: "k", line: 1, column: 1 };
/// let offs = arange(0, 4);
/// let ptrs = map2(&Blk::scalar(P::arg(0)), &offs, ptr_add);
/// let mask = map1(&offs, |o| o < 3);
/// let v = load(&ctx, &ptrs, Some(&mask), Some(&Blk::scalar(-1)), &site).unwrap();
/// assert_eq!(v.data(), &[10, 20, 30, -1]);
/// assert!(load::<i32>(&ctx, &ptrs, None, None, &site).is_err()); // lane 3 is out of bounds
/// ```
pub fn load<T: DType>(
    ctx: &Ctx<'_>,
    ptrs: &Blk<P>,
    mask: Option<&Blk<bool>>,
    other: Option<&Blk<T>>,
    site: &Site,
) -> Result<Blk<T>, KernelError> {
    let mask_shape = mask.map_or(&[][..], |m| m.shape());
    let other_shape = other.map_or(&[][..], |o| o.shape());
    let out = broadcast_shapes_or_internal("load", &[ptrs.shape(), mask_shape, other_shape]);
    let strides = [
        bcast_strides(ptrs.shape(), &out),
        bcast_strides(mask_shape, &out),
        bcast_strides(other_shape, &out),
    ];
    let mask_data = mask.map_or(&[true][..], |m| m.data());
    let zero = [T::default()];
    let other_data = other.map_or(&zero[..], |o| o.data());
    let mut resolver = Resolver::<T>::new(ctx, site, "load");
    let mut data = Vec::with_capacity(numel(&out));
    try_for_each_bcast(&out, &strides, |[p, m, o]| {
        let v = if mask_data[m] { T::load(resolver.locate(ptrs.data[p])?) } else { other_data[o] };
        data.push(v);
        Ok(())
    })?;
    Ok(Blk { shape: out, data })
}

/// Writes `vals` where `ptrs` point, on lanes where `mask` is true
/// (`ptrs`, `vals` and `mask` broadcast together). Every active lane is
/// checked before anything is written, so a failing store writes nothing.
/// When two active lanes point to the same element, the later one (row-major)
/// wins.
///
/// # Errors
/// As [`load`].
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, map1, map2, ptr_add, store, Blk, Ctx, P, Site};
/// use kernel_runtime::__private::ptr_arg;
/// use kernel_runtime::{Device, Tensor};
/// let y = Tensor::<f32>::zeros(&Device::cpu(), &[3]).unwrap();
/// let args = [ptr_arg("y_ptr", &y)];
/// let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
/// let site = Site { kernel: "k", line: 1, column: 1 };
/// let offs = arange(0, 4);
/// let ptrs = map2(&Blk::scalar(P::arg(0)), &offs, ptr_add);
/// store(&ctx, &ptrs, &Blk::scalar(1.5f32), Some(&map1(&offs, |o| o < 3)), &site).unwrap();
/// assert_eq!(y.to_vec(), vec![1.5, 1.5, 1.5]);
/// ```
pub fn store<T: DType>(
    ctx: &Ctx<'_>,
    ptrs: &Blk<P>,
    vals: &Blk<T>,
    mask: Option<&Blk<bool>>,
    site: &Site,
) -> Result<(), KernelError> {
    let mask_shape = mask.map_or(&[][..], |m| m.shape());
    let out = broadcast_shapes_or_internal("store", &[ptrs.shape(), vals.shape(), mask_shape]);
    let strides = [
        bcast_strides(ptrs.shape(), &out),
        bcast_strides(vals.shape(), &out),
        bcast_strides(mask_shape, &out),
    ];
    let mask_data = mask.map_or(&[true][..], |m| m.data());
    let mut resolver = Resolver::<T>::new(ctx, site, "store");
    let mut writes = Vec::with_capacity(numel(&out));
    try_for_each_bcast(&out, &strides, |[p, v, m]| {
        if mask_data[m] {
            writes.push((resolver.locate(ptrs.data[p])?, vals.data[v]));
        }
        Ok(())
    })?;
    for (cell, v) in writes {
        T::store(cell, v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::elementwise::{arange, full, map1, map2};
    use super::super::ptr::ptr_add;
    use super::*;
    use crate::launch::ptr_arg;
    use crate::{f16, Device, Tensor};

    const SITE: Site = Site { kernel: "copy_kernel", line: 42, column: 17 };

    fn ptrs(buf: u32, offs: &Blk<i32>) -> Blk<P> {
        map2(&Blk::scalar(P::arg(buf)), offs, ptr_add)
    }

    #[test]
    fn masked_off_lanes_are_not_accessed() {
        let x = Tensor::from_vec(&Device::cpu(), &[4], vec![1i32, 2, 3, 4]).unwrap();
        let args = [ptr_arg("x_ptr", &x)];
        let ctx = Ctx::new("copy_kernel", [0; 3], [1; 3], &args);
        // Lanes 4.. and the negative lane are far out of bounds, but masked off.
        let offs = Blk::from_vec(vec![6], vec![0, 1, -100, 3, 1_000_000, 2]);
        let mask = map1(&offs, |o| (0..4).contains(&o));
        let v = load(&ctx, &ptrs(0, &offs), Some(&mask), Some(&Blk::scalar(7)), &SITE).unwrap();
        assert_eq!(v.data(), &[1, 2, 7, 4, 7, 3]);
        let v = load::<i32>(&ctx, &ptrs(0, &offs), Some(&mask), None, &SITE).unwrap();
        assert_eq!(v.data(), &[1, 2, 0, 4, 0, 3]);
        store(&ctx, &ptrs(0, &offs), &map1(&offs, |o| o * 10), Some(&mask), &SITE).unwrap();
        assert_eq!(x.to_vec(), vec![0, 10, 20, 30]);
        // A fully masked-off store through a wild pointer is fine too.
        let wild = Blk::scalar(P { buf: 0, off: i64::MIN });
        store(&ctx, &wild, &Blk::scalar(5), Some(&Blk::scalar(false)), &SITE).unwrap();
    }

    #[test]
    fn out_of_bounds_load_reports_the_site_and_argument() {
        let a = Tensor::<f16>::zeros(&Device::cpu(), &[256, 256]).unwrap();
        let b = Tensor::<f16>::zeros(&Device::cpu(), &[4]).unwrap();
        let args = [ptr_arg("b_ptr", &b), ptr_arg("a_ptr", &a)];
        let ctx = Ctx::new("matmul_kernel", [0; 3], [1; 3], &args);
        let site = Site { kernel: "matmul_kernel", line: 42, column: 17 };
        let offs = Blk::from_vec(vec![2], vec![65535, 70000]);
        let err = load::<f16>(&ctx, &ptrs(1, &offs), None, None, &site).unwrap_err();
        assert_eq!(
            err,
            KernelError::OutOfBounds {
                kernel: "matmul_kernel",
                line: 42,
                column: 17,
                op: "load",
                arg: "a_ptr",
                index: 70000,
                len: 65536,
            }
        );
        assert_eq!(
            err.to_string(),
            "out-of-bounds load in kernel `matmul_kernel` at line 42, column 17: \
             index 70000 of argument `a_ptr` (length 65536)"
        );
        let neg = load::<f16>(&ctx, &ptrs(0, &Blk::scalar(-1)), None, None, &site).unwrap_err();
        assert!(matches!(neg, KernelError::OutOfBounds { index: -1, len: 4, arg: "b_ptr", .. }));
    }

    #[test]
    fn out_of_bounds_store_writes_nothing() {
        let y = Tensor::<u32>::zeros(&Device::cpu(), &[3]).unwrap();
        let args = [ptr_arg("y_ptr", &y)];
        let ctx = Ctx::new("copy_kernel", [0; 3], [1; 3], &args);
        let err = store(&ctx, &ptrs(0, &arange(0, 4)), &full(&[4], 9u32), None, &SITE).unwrap_err();
        assert_eq!(
            err.to_string(),
            "out-of-bounds store in kernel `copy_kernel` at line 42, column 17: \
             index 3 of argument `y_ptr` (length 3)"
        );
        assert_eq!(y.to_vec(), vec![0, 0, 0]);
        let huge = Blk::scalar(P { buf: 0, off: i64::MAX });
        assert!(matches!(
            store(&ctx, &huge, &Blk::scalar(1u32), None, &SITE),
            Err(KernelError::OutOfBounds { index: i64::MAX, .. })
        ));
    }

    #[test]
    fn views_bound_pointers_by_their_storage() {
        // Row 1 of a 3x4 matrix: storage offset 4, storage length 12.
        let m = Tensor::from_vec(&Device::cpu(), &[3, 4], (0..12).collect::<Vec<i64>>()).unwrap();
        let row = m.narrow(0, 1, 1).unwrap();
        let args = [ptr_arg("row", &row)];
        let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
        let v = load::<i64>(&ctx, &ptrs(0, &arange(-4, 8)), None, None, &SITE).unwrap();
        assert_eq!(v.data(), (0..12).collect::<Vec<i64>>().as_slice());
        let err = load::<i64>(&ctx, &ptrs(0, &Blk::scalar(8)), None, None, &SITE).unwrap_err();
        assert!(matches!(err, KernelError::OutOfBounds { index: 8, len: 8, .. }));
        assert!(load::<i64>(&ctx, &ptrs(0, &Blk::scalar(-5)), None, None, &SITE).is_err());
    }

    #[test]
    fn wrong_dtype_or_argument_is_internal() {
        let x = Tensor::<f32>::zeros(&Device::cpu(), &[2]).unwrap();
        let args = [ptr_arg("x_ptr", &x)];
        let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
        let err = load::<i32>(&ctx, &ptrs(0, &arange(0, 2)), None, None, &SITE).unwrap_err();
        assert_eq!(
            err,
            KernelError::Internal {
                kernel: "copy_kernel",
                message: "load of i32 through argument `x_ptr`, which holds f32".to_string()
            }
        );
        let err = store(&ctx, &ptrs(3, &arange(0, 2)), &full(&[2], 0.0f32), None, &SITE).unwrap_err();
        assert!(matches!(err, KernelError::Internal { .. }));
        // An empty block touches nothing, even through a bad argument.
        assert_eq!(load::<f32>(&ctx, &ptrs(9, &arange(0, 0)), None, None, &SITE).unwrap().numel(), 0);
    }

    #[test]
    fn load_broadcasts_pointer_rows_and_columns() {
        // A 2x3 tile of a 3x3 row-major matrix, built like Triton's
        // `ptr + rows[:, None] * 3 + cols[None, :]`.
        let m = Tensor::from_vec(&Device::cpu(), &[3, 3], (0..9).map(|v| v as f32).collect()).unwrap();
        let args = [ptr_arg("m", &m)];
        let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
        let rows = super::super::layout::expand_dims(&map1(&arange(1, 3), |r| r * 3), 1);
        let cols = super::super::layout::expand_dims(&arange(0, 3), 0);
        let offs = map2(&rows, &cols, |r, c| r + c);
        let tile = load::<f32>(&ctx, &ptrs(0, &offs), None, None, &SITE).unwrap();
        assert_eq!(tile.shape(), &[2, 3]);
        assert_eq!(tile.data(), &[3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        let ctx1 = Ctx::new("k", [1, 2, 3], [4, 5, 6], &args);
        assert_eq!((ctx1.program_id(2), ctx1.num_programs(1)), (3, 5));
    }
}
