//! Split K loops (`kernel_std::device::split`): when a launch's last wave of programs would
//! leave SMs idle, the runtime runs each of its programs on several blocks, each taking a
//! contiguous run of the K loop's iterations; the parts add up their partial accumulators in
//! global memory and the last one to finish runs the rest of the program.
//!
//! Which loop of a kernel may be split is part of the device plan (`plan/split.rs`); this
//! module generates the code around it: the block's program and part
//! at entry, the part's iteration range, and the hand-over of the accumulator after the loop.
//! Only the instance's second entry, `<entry>__split`, has this code; the runtime launches it
//! when it splits (`kernel_runtime::split_plan`), else the plain entry.

use super::*;

impl DevGen<'_> {
    /// Steps the affine locals of the loop that `only` lists `times` iterations (an `i64`
    /// expression) at once.
    fn split_advance(&mut self, sl: &SplitLoop, only: &[LocalId], times: TokenStream) -> TokenStream {
        let (k, d) = (self.k, &self.p.d);
        let code = sl.steps.iter().filter(|s| only.contains(&s.0)).map(|(l, st, sub)| {
            let off = format_ident!("{}_off", crate::expand_cpu::local_ident(k, *l));
            let off_t = match k.locals[*l].ty.elem {
                Elem::Ptr(_) => quote!(i64),
                _ => self.elem(&k.locals[*l].ty),
            };
            let (sv, st_t) = (self.ev(*st, &At::Own), self.elem(&k.exprs[*st].ty));
            let f = if *sub { quote!(sub) } else { quote!(add) };
            quote!(#off = <#off_t as #d::Num>::#f(#off, #d::cast::<i64, #off_t>((#times) * #d::cast::<#st_t, i64>(#sv)));)
        });
        quote!(#(#code)*)
    }

    /// Inside the loop's code, right after its trip count `__n` (from `__start` and `__step`,
    /// of type `var_t`) is known: this part's iterations replace the loop's, and the stepped
    /// locals move to the part's first iteration. Returns that code and the code after the
    /// loop that moves them on to where the whole loop leaves them.
    pub(super) fn split_range_code(&mut self, sl: &SplitLoop, var_t: &TokenStream) -> (TokenStream, TokenStream) {
        let d = &self.p.d;
        let all: Vec<LocalId> = sl.steps.iter().map(|s| s.0).collect();
        let before = self.split_advance(sl, &all, quote!(__sk_it0));
        let after = self.split_advance(sl, &sl.read_after, quote!(__sk_n - __sk_it0 - __n));
        (
            quote! {
                // Recomputed from the parameters where needed rather than kept live in registers
                // from the entry.
                let __sk: #d::SplitBlock = #d::split_block(__sk_dp, __sk_parts);
                let __sk_n: i64 = __n;
                let (__sk_it0, __n): (i64, i64) = #d::split_range(__n, __sk.part, __sk.parts);
                let __start: #var_t = ((__start as i64) + __sk_it0 * (__step as i64)) as #var_t;
                #before
            },
            after,
        )
    }

    /// After the loop, in a block that runs part of it: writes the partial accumulator to the
    /// program's workspace slot, counts the part, and ends the block unless it is the last
    /// part, which sums every part's partial (in part order, from the workspace) into the
    /// accumulator and goes on with the program.
    pub(super) fn split_reduce_code(&mut self, sl: &SplitLoop) -> TokenStream {
        let (k, d) = (self.k, &self.p.d);
        let acc = crate::expand_cpu::local_ident(k, sl.acc);
        let floats = self.split_floats(sl);
        let threads = self.threads;
        let r = floats / threads;
        // The last-part flag lives at offset 0: after the loop (which ends with a block
        // barrier) no shared memory of the statement is live any more.
        let flag = 0usize;
        self.smem.cover(16);
        // Slot `j` of thread `t`: 16 bytes per thread and group of four slots (a warp writes 512
        // contiguous bytes), or one float per thread and slot. `read(op)` applies `op` (`=`, `+=`)
        // to each slot and the value read back from L2.
        let (write, read): (TokenStream, Box<dyn Fn(TokenStream) -> TokenStream>) = if r.is_multiple_of(4) {
            let at: Vec<TokenStream> = (0..r / 4).map(|g| quote!((#g * #threads + __tid) * 4)).collect();
            let quads: Vec<[usize; 4]> = (0..r / 4).map(|g| [4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3]).collect();
            let write = at.iter().zip(&quads).map(|(at, [j0, j1, j2, j3])| quote!(#d::st_cg_v4(__skp.add(#at), [#acc[#j0], #acc[#j1], #acc[#j2], #acc[#j3]]);));
            let write = quote!(#(#write)*);
            let read = move |op: TokenStream| {
                let reads = at.iter().zip(&quads).map(|(at, [j0, j1, j2, j3])| quote!({ let __v: [f32; 4] = #d::ld_cg_v4(__skp.add(#at)); #acc[#j0] #op __v[0]; #acc[#j1] #op __v[1]; #acc[#j2] #op __v[2]; #acc[#j3] #op __v[3]; }));
                quote!(#(#reads)*)
            };
            (write, Box::new(read))
        } else {
            let at: Vec<TokenStream> = (0..r).map(|j| quote!(#j * #threads + __tid)).collect();
            let write = at.iter().enumerate().map(|(j, at)| quote!(#d::st_cg(__skp.add(#at), #acc[#j]);));
            let write = quote!(#(#write)*);
            let read = move |op: TokenStream| {
                let reads = at.iter().enumerate().map(|(j, at)| quote!(#acc[#j] #op #d::ld_cg(__skp.add(#at));));
                quote!(#(#reads)*)
            };
            (write, Box::new(read))
        };
        let (first, add) = (read(quote!(=)), read(quote!(+=)));
        quote! {
            let __sk: #d::SplitBlock = #d::split_block(__sk_dp, __sk_parts);
            if __sk.parts > 1 {
                // Out of line: the epilogue follows the loop in the instruction stream.
                ::core::hint::cold_path();
                let __skw: *mut f32 = __sk_ws.add(__sk.slot as usize * __sk.parts as usize * #floats);
                let __skp: *mut f32 = __skw.add(__sk.part as usize * #floats);
                #write
                #d::fence_acq_rel_gpu();
                #d::bar_sync();
                if __tid == 0 {
                    let __last: bool = #d::split_arrive(__sk_cnt.add(__sk.slot as usize), __sk.parts);
                    #d::store(__smem.add(#flag) as *mut u32, __last as u32);
                }
                #d::bar_sync();
                let __sk_last: bool = #d::load(__smem.add(#flag) as *mut u32) != 0;
                #d::bar_sync();
                if !__sk_last {
                    return;
                }
                #d::fence_acq_rel_gpu();
                let __skp: *mut f32 = __skw;
                #first
                let mut __skq: usize = 1;
                while __skq < __sk.parts as usize {
                    let __skp: *mut f32 = __skw.add(__skq * #floats);
                    #add
                    __skq += 1;
                }
            }
        }
    }
}
