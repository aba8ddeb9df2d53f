//! Elementwise phases in the `mma` layout run as a loop: the element code of a value with
//! transcendental functions, outside the kernel's loops (an epilogue such as a GELU on the
//! accumulator), over more than [`MAX_UNROLLED`] slots per thread. Unrolled, the 128 slots of
//! a 128x256 tile on 8 warps make a straight line of thousands of instructions that every warp
//! runs once, so that its time goes to instruction fetches; as a loop over groups of [`GROUP`]
//! slots the code is one group long.
//!
//! The loop cannot index the register arrays it reads and writes (they stay in registers only
//! while every index is a constant), so it runs on copies:
//! - in **shared memory** where they fit in what the kernel already reserves (the buffers of a
//!   K loop are free after it): each array is stored slot-major (slot `j` of thread `t` at
//!   element `j * threads + t`, so a warp's accesses to one slot are consecutive words, free of
//!   bank conflicts), the loop indexes them there (the device module's `SmemSlots`),
//!   and the result is read back into registers by constant indices;
//! - else in **local memory** (`let x = x;` in a block), which the compiler makes of arrays
//!   indexed by a variable.

use super::*;

/// Slots per iteration: independent element chains for the scheduler to interleave.
const GROUP: usize = 4;

/// Phases of more slots than this run as loops. At 64 slots the unrolled code is faster than
/// either loop (BENCHMARKS.md, the linear layer).
const MAX_UNROLLED: usize = 64;

/// An array the element code of a rolled phase reads by slot: its name, element type and slots,
/// and whether every read is of the slot being computed (`x[__j]`).
#[derive(Clone)]
pub(super) struct SlotRead {
    ident: Ident,
    elem: TokenStream,
    slots: usize,
    own: bool,
}

impl DevGen<'_> {
    /// Records that the element code being generated reads array `m`, at the slot being
    /// computed (`own`) or at another one.
    pub(super) fn note_slot_read(&mut self, m: &MatVar, own: bool) {
        let slots = self.slots(m.numel, m.layout);
        if let Some(reads) = &mut self.slot_reads {
            match reads.iter_mut().find(|r| r.ident == m.ident) {
                Some(r) => r.own &= own,
                None => reads.push(SlotRead { ident: m.ident.clone(), elem: m.elem.clone(), slots, own }),
            }
        }
    }

    /// Whether the materialization of `value` (`numel` elements in `layout`) runs as a loop.
    pub(super) fn rolls(&self, value: ExprId, numel: usize, layout: Layout) -> bool {
        let slots = self.slots(numel, layout);
        matches!(layout, Layout::Mma { .. }) && self.loop_depth == 0 && slots > MAX_UNROLLED && slots.is_multiple_of(GROUP) && self.has_transcendental(value, &self.kinds)
    }

    /// `id[__j] = value` for every slot of this thread, as a loop over groups of slots. `elem`
    /// generates the element code; `t` is the element type.
    pub(super) fn materialize_rolled(&mut self, id: &Ident, t: &TokenStream, numel: usize, layout: Layout, elem: impl FnOnce(&mut Self) -> TokenStream) -> TokenStream {
        let scope = self.enter_iteration(numel, layout);
        let outer = self.slot_reads.replace(Vec::new());
        let b = elem(self);
        let reads = std::mem::replace(&mut self.slot_reads, outer).unwrap_or_default();
        let staged = self.leave_iteration(scope);
        let (pre, post) = self.staging(&staged);
        let slots = self.slots(numel, layout);
        let f = Self::mma_flat_at(layout, &quote!(__j));
        let group = self.unrolled(GROUP, quote!(__u), quote!(let __j: usize = __g * #GROUP + __u; let __f: usize = #f; #b));
        let dest = SlotRead { ident: id.clone(), elem: t.clone(), slots, own: true };
        let main = match self.smem_copies(&reads, &dest) {
            Some(copies) => self.rolled_in_smem(reads.len(), &dest, &copies, group),
            None => self.rolled_in_local(&reads, &dest, group),
        };
        quote! {
            #pre
            #id = #main;
            #post
        }
    }

    /// The loop over groups of slots around `group`.
    fn group_loop(&self, slots: usize, group: TokenStream) -> TokenStream {
        let d = &self.p.d;
        let groups = slots / GROUP;
        quote! {
            let __ng: usize = #d::opaque_usize(#groups);
            let mut __g: usize = 0;
            while __g < __ng {
                #group
                __g += 1;
            }
        }
    }

    /// The slot-major copies in shared memory, each at its offset: every array `reads` names
    /// and `dest`, if they fit in the shared memory the kernel uses anyway. `dest` takes the
    /// place of an array read only at the slot being computed, of its type and size (slot `j`
    /// is written after its last read), where there is one: itself (updated in place) or, for
    /// instance, the argument of an inlined helper.
    fn smem_copies(&mut self, reads: &[SlotRead], dest: &SlotRead) -> Option<Vec<(SlotRead, usize)>> {
        let (mark, most) = (self.smem.mark(), self.smem.max());
        let mut copies = Vec::new();
        for r in reads {
            let bytes = elem_bytes(&r.elem)?;
            copies.push((r.clone(), self.smem.alloc(r.slots * self.threads * bytes, 16)));
        }
        let same = |r: &SlotRead| r.own && r.slots == dest.slots && r.elem.to_string() == dest.elem.to_string();
        if !reads.iter().any(|r| r.ident == dest.ident) {
            let off = match copies.iter().find(|(r, _)| same(r)) {
                Some((_, off)) => *off,
                None => self.smem.alloc(dest.slots * self.threads * elem_bytes(&dest.elem)?, 16),
            };
            copies.push((dest.clone(), off));
        }
        if self.smem.max() > most {
            self.smem.reset(mark);
            return None;
        }
        Some(copies)
    }

    /// The loop on the shared-memory `copies` ([`Self::smem_copies`]; the first `reads` of them
    /// stored from registers first), then `dest` read back by constant slots, and a barrier
    /// before another statement uses the memory.
    fn rolled_in_smem(&self, reads: usize, dest: &SlotRead, copies: &[(SlotRead, usize)], group: TokenStream) -> TokenStream {
        let (d, threads) = (&self.p.d, self.threads);
        let stores = copies[..reads].iter().map(|(r, off)| {
            let (ri, e) = (&r.ident, &r.elem);
            self.unrolled(r.slots, quote!(__j), quote!(#d::store((__smem.add(#off) as *mut #e).add(__j * #threads + __tid), #ri[__j]);))
        });
        let views = copies.iter().map(|(r, off)| {
            let (ri, e) = (&r.ident, &r.elem);
            let m = (r.ident == dest.ident).then(|| quote!(mut));
            quote!(let #m #ri = unsafe { #d::SmemSlots::<#e>::new(#off, #threads, __tid) };)
        });
        let (id, t, n) = (&dest.ident, &dest.elem, dest.slots);
        let back = self.unrolled(n, quote!(__j), quote!(__out[__j] = #id[__j];));
        let lp = self.group_loop(n, group);
        quote! {{
            #(#stores)*
            let __out: [#t; #n] = {
                #(#views)*
                let mut __out: [#t; #n] = unsafe { ::core::mem::zeroed() };
                #lp
                #back
                __out
            };
            #d::bar_sync();
            __out
        }}
    }

    /// The loop on local copies of the arrays it reads and writes.
    fn rolled_in_local(&self, reads: &[SlotRead], dest: &SlotRead, group: TokenStream) -> TokenStream {
        let (id, t, n) = (&dest.ident, &dest.elem, dest.slots);
        let copies_in = reads.iter().filter(|r| r.ident != *id).map(|r| {
            let ri = &r.ident;
            quote!(let #ri = #ri;)
        });
        let decl = if reads.iter().any(|r| r.ident == *id) { quote!(let mut #id = #id;) } else { quote!(let mut #id: [#t; #n] = unsafe { ::core::mem::zeroed() };) };
        let lp = self.group_loop(n, group);
        quote! {{
            #(#copies_in)*
            #decl
            #lp
            #id
        }}
    }
}

/// Bytes per element of a device element type (as [`dev_dtype`] writes it), if known.
fn elem_bytes(e: &TokenStream) -> Option<usize> {
    let s = e.to_string();
    if s.starts_with('*') {
        return Some(8);
    }
    DType::ALL.into_iter().find(|d| dev_dtype(*d).to_string() == s).map(|d| elem_size(&Elem::Val(d)))
}
