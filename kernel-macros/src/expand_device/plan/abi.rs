//! The kernel ABI: the parameters an entry takes after the kernel's declared ones, in order.
//! The entry's signature is generated from this list and the host module writes the same list
//! into `InstanceInfo::hidden` (`kernel_runtime`'s `Hidden`), from which the runtime builds a
//! launch's argument list: nothing else fixes their order.

use super::*;

/// One hidden parameter of an entry (`kernel_runtime::Hidden` names the same ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hidden {
    /// `__len_<name>: u64`: the elements addressable from pointer parameter `i` (`bounds.rs`).
    Len(usize),
    /// `__fault: *mut u32`: the launch's fault record.
    Fault,
    /// `__tag: u32`: the launch's tag, written into the record with a fault.
    Tag,
    /// `__tma: *const u8`: the tensor maps of the instance's `TmaOperand`s, 128 bytes each.
    TensorMaps,
    /// `__tmask: u32`: which of those maps are valid.
    TensorMapMask,
    /// `__sk_ws: *mut f32`: the split launch's workspace of partial accumulators.
    SplitWorkspace,
    /// `__sk_cnt: *mut u32`: the split launch's arrival counters.
    SplitCounters,
    /// `__sk_dp: u32`: the programs a split launch runs whole.
    SplitWholePrograms,
    /// `__sk_parts: u32`: the parts each split program runs on.
    SplitParts,
}

/// The hidden parameters of an entry of kernel `k`: a length per pointer parameter, the fault
/// record and tag, then the tensor maps' address and mask when the entry copies with tensor
/// maps, then the split launch's four when it is the entry of split launches.
pub(crate) fn hidden_params(k: &Kernel, tensor_maps: bool, split: bool) -> Vec<Hidden> {
    let lens = k.params.iter().enumerate().filter(|(_, p)| matches!(p.kind, ParamKind::Ptr(_))).map(|(i, _)| Hidden::Len(i));
    let maps = if tensor_maps { &[Hidden::TensorMaps, Hidden::TensorMapMask][..] } else { &[] };
    let parts = if split { &[Hidden::SplitWorkspace, Hidden::SplitCounters, Hidden::SplitWholePrograms, Hidden::SplitParts][..] } else { &[] };
    lens.chain([Hidden::Fault, Hidden::Tag]).chain(maps.iter().copied()).chain(parts.iter().copied()).collect()
}

impl Hidden {
    /// The parameter in the entry's signature (`name: type`).
    pub(crate) fn param(self, k: &Kernel) -> TokenStream {
        match self {
            Hidden::Len(i) => {
                let id = crate::expand_device::bounds::len_ident(&k.params[i].name);
                quote!(#id: u64)
            }
            Hidden::Fault => quote!(__fault: *mut u32),
            Hidden::Tag => quote!(__tag: u32),
            Hidden::TensorMaps => quote!(__tma: *const u8),
            Hidden::TensorMapMask => quote!(__tmask: u32),
            Hidden::SplitWorkspace => quote!(__sk_ws: *mut f32),
            Hidden::SplitCounters => quote!(__sk_cnt: *mut u32),
            Hidden::SplitWholePrograms => quote!(__sk_dp: u32),
            Hidden::SplitParts => quote!(__sk_parts: u32),
        }
    }

    /// The runtime's value for this parameter (`rt`: the path of `kernel_runtime::__private`).
    pub(crate) fn runtime(self, rt: &TokenStream) -> TokenStream {
        match self {
            Hidden::Len(i) => quote!(#rt::Hidden::Len(#i)),
            Hidden::Fault => quote!(#rt::Hidden::Fault),
            Hidden::Tag => quote!(#rt::Hidden::Tag),
            Hidden::TensorMaps => quote!(#rt::Hidden::TensorMaps),
            Hidden::TensorMapMask => quote!(#rt::Hidden::TensorMapMask),
            Hidden::SplitWorkspace => quote!(#rt::Hidden::SplitWorkspace),
            Hidden::SplitCounters => quote!(#rt::Hidden::SplitCounters),
            Hidden::SplitWholePrograms => quote!(#rt::Hidden::SplitWholePrograms),
            Hidden::SplitParts => quote!(#rt::Hidden::SplitParts),
        }
    }
}
