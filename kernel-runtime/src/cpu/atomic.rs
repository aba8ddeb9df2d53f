//! Atomic read-modify-writes (`atomic_add`, ..., `atomic_cas`): every element a pointer
//! lane points to is updated atomically, so program instances running at the same time
//! (the CPU backend runs them on several threads) see each other's updates, as on a GPU.

use super::blk::Blk;
use super::broadcast::{bcast_strides, broadcast_shapes_or_internal, numel, try_for_each_bcast};
use super::error::{KernelError, Site};
use super::memory::{Ctx, Resolver};
use super::ptr::P;
use crate::dtype::DType;
use std::sync::atomic::Ordering;

/// Replaces each element `ptrs` point to, where `mask` holds, by `f(old, val)` atomically
/// (lanes in row-major order) and returns the old values (zero where masked off). `ptrs`,
/// `vals` and `mask` broadcast together; every active lane is bounds-checked before any
/// element is written.
///
/// # Errors
/// As [`load`](super::load): the first unmasked lane outside its argument.
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, atomic_rmw, map2, ptr_add, Blk, Ctx, Num, P, Site};
/// use kernel_runtime::__private::ptr_arg;
/// use kernel_runtime::{Device, Tensor};
/// use std::sync::atomic::Ordering;
/// let hist = Tensor::from_vec(&Device::cpu(), &[2], vec![0i32, 10]).unwrap();
/// let args = [ptr_arg("hist", &hist)];
/// let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
/// let site = Site { kernel: "k", line: 1, column: 1 };
/// // Four lanes, two per bin: each sees the count before its own increment.
/// let bins = Blk::from_vec(vec![4], vec![0, 1, 0, 1]);
/// let ptrs = map2(&Blk::scalar(P::arg(0)), &bins, ptr_add);
/// let old = atomic_rmw(&ctx, &ptrs, &Blk::scalar(1), None, Num::add, Ordering::AcqRel, &site).unwrap();
/// assert_eq!(old.data(), &[0, 10, 1, 11]);
/// assert_eq!(hist.to_vec(), vec![2, 12]);
/// ```
pub fn atomic_rmw<T: DType>(
    ctx: &Ctx<'_>,
    ptrs: &Blk<P>,
    vals: &Blk<T>,
    mask: Option<&Blk<bool>>,
    mut f: impl FnMut(T, T) -> T,
    order: Ordering,
    site: &Site,
) -> Result<Blk<T>, KernelError> {
    let mask_shape = mask.map_or(&[][..], |m| m.shape());
    let out = broadcast_shapes_or_internal("atomic", &[ptrs.shape(), vals.shape(), mask_shape]);
    let strides = [bcast_strides(ptrs.shape(), &out), bcast_strides(vals.shape(), &out), bcast_strides(mask_shape, &out)];
    let mask_data = mask.map_or(&[true][..], |m| m.data());
    let mut resolver = Resolver::<T>::new(ctx, site, "atomic");
    let mut lanes = Vec::with_capacity(numel(&out));
    try_for_each_bcast(&out, &strides, |[p, v, m]| {
        lanes.push(if mask_data[m] { Some((resolver.locate(ptrs.data[p])?, vals.data[v])) } else { None });
        Ok(())
    })?;
    let data = lanes
        .into_iter()
        .map(|lane| match lane {
            Some((cell, v)) => T::update(cell, order, |old| f(old, v)),
            None => T::default(),
        })
        .collect();
    Ok(Blk { shape: out, data })
}

/// Writes `vals` where the element `ptrs` point to holds the bits of `cmp`, atomically
/// (lanes in row-major order); returns the old values. `ptrs`, `cmp` and `vals` broadcast
/// together.
///
/// # Errors
/// As [`atomic_rmw`].
///
/// ```
/// use kernel_runtime::__private::cpu::{atomic_cas, Blk, Ctx, P, Site};
/// use kernel_runtime::__private::ptr_arg;
/// use kernel_runtime::{Device, Tensor};
/// use std::sync::atomic::Ordering;
/// let lock = Tensor::from_vec(&Device::cpu(), &[1], vec![0i32]).unwrap();
/// let args = [ptr_arg("lock", &lock)];
/// let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
/// let site = Site { kernel: "k", line: 1, column: 1 };
/// let p = Blk::scalar(P::arg(0));
/// let first = atomic_cas(&ctx, &p, &Blk::scalar(0), &Blk::scalar(1), Ordering::AcqRel, &site).unwrap();
/// let second = atomic_cas(&ctx, &p, &Blk::scalar(0), &Blk::scalar(1), Ordering::AcqRel, &site).unwrap();
/// assert_eq!((first.data(), second.data()), (&[0][..], &[1][..]));
/// ```
pub fn atomic_cas<T: DType>(
    ctx: &Ctx<'_>,
    ptrs: &Blk<P>,
    cmp: &Blk<T>,
    vals: &Blk<T>,
    order: Ordering,
    site: &Site,
) -> Result<Blk<T>, KernelError> {
    let out = broadcast_shapes_or_internal("atomic_cas", &[ptrs.shape(), cmp.shape(), vals.shape()]);
    let strides = [bcast_strides(ptrs.shape(), &out), bcast_strides(cmp.shape(), &out), bcast_strides(vals.shape(), &out)];
    let mut resolver = Resolver::<T>::new(ctx, site, "atomic_cas");
    let mut lanes = Vec::with_capacity(numel(&out));
    try_for_each_bcast(&out, &strides, |[p, c, v]| {
        lanes.push((resolver.locate(ptrs.data[p])?, cmp.data[c], vals.data[v]));
        Ok(())
    })?;
    let data = lanes.into_iter().map(|(cell, c, v)| T::compare_exchange(cell, c, v, order)).collect();
    Ok(Blk { shape: out, data })
}
