//! Elementwise phases in the `mma` layout run as a loop: the element code of a value with
//! transcendental functions, outside the kernel's loops (an epilogue such as a GELU on the
//! accumulator), over more than [`MAX_UNROLLED`] slots per thread. Unrolled, the 128 slots of
//! a 128x256 tile on 8 warps make a straight line of thousands of instructions that every warp
//! runs once, so that its time goes to instruction fetches; as a loop over groups of [`GROUP`]
//! slots the code is one group long.
//!
//! The loop indexes copies of the arrays it reads and of the one it writes (`let x = x;` in a
//! block), which the compiler keeps in local memory; the arrays themselves are still indexed by
//! constants only and stay in registers.

use super::*;

/// Slots per iteration: independent element chains for the scheduler to interleave.
const GROUP: usize = 4;

/// Phases of more slots than this run as loops; at 64 slots the local-memory round trip costs
/// more than the unrolled code's instruction fetches (BENCHMARKS.md, the linear layer).
const MAX_UNROLLED: usize = 64;

impl DevGen<'_> {
    /// Records that the element code being generated reads array `id` (indexed by the slot).
    pub(super) fn note_slot_read(&mut self, id: &Ident) {
        if let Some(reads) = &mut self.slot_reads {
            if !reads.contains(id) {
                reads.push(id.clone());
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
        let d = &self.p.d;
        let slots = self.slots(numel, layout);
        let groups = slots / GROUP;
        let f = Self::mma_flat_at(layout, &quote!(__j));
        let group = self.unrolled(GROUP, quote!(__u), quote!(let __j: usize = __g * #GROUP + __u; let __f: usize = #f; #b));
        let copies_in = reads.iter().filter(|r| *r != id).map(|r| quote!(let #r = #r;));
        let dest = if reads.contains(id) { quote!(let mut #id = #id;) } else { quote!(let mut #id: [#t; #slots] = unsafe { ::core::mem::zeroed() };) };
        quote! {
            #pre
            #id = {
                #(#copies_in)*
                #dest
                let __ng: usize = #d::opaque_usize(#groups);
                let mut __g: usize = 0;
                while __g < __ng {
                    #group
                    __g += 1;
                }
                #id
            };
            #post
        }
    }
}
