//! Register layouts as bit maps ([`BitLayout`]): which bit of a thread's register slot, lane and
//! warp index gives which bit of an element's flat index, for the layouts whose dimensions are
//! powers of two. The plans built on them are pure functions of the layouts: how a reduction
//! combines slots, lanes and warps ([`BitLayout::reduce`]), the layout of its result
//! ([`BitLayout::sliced`]), and which register of its own a thread reads an element of another
//! layout from ([`BitLayout::local_read`]).

use super::Layout;
use proc_macro2::TokenStream;
use quote::quote;

/// The most register-slot bits per thread a reduction is planned in registers for (4096
/// slots: far beyond what registers hold; larger blocks reduce through shared memory).
const MAX_SLOT_BITS: usize = 12;

/// Where the bits of a thread's register slot, lane and warp indices put its elements: bit `b`
/// of the slot index is bit `slot[b]` of the element's flat index, and likewise for the lane and
/// warp. A bit at or past `bits` means an element past the block (a thread that owns nothing),
/// except [`REPL`]: a lane or warp bit that selects no element (threads that differ only there
/// hold the same elements, as a reduction's result does in the lanes it combined).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct BitLayout {
    pub(super) slot: Vec<u32>,
    pub(super) lane: Vec<u32>,
    pub(super) warp: Vec<u32>,
    /// `log2` of the block's element count.
    pub(super) bits: u32,
}

/// How a reduction combines the values of a [`BitLayout`].
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RegReduce {
    /// The partial result register slot `j` joins (slots that differ only in reduced bits).
    pub(super) local: Vec<usize>,
    /// A slot of each partial result.
    pub(super) rep: Vec<usize>,
    /// The lane bits (as `shfl.sync.bfly` masks) whose lanes hold the same outputs.
    pub(super) lane_masks: Vec<u32>,
    /// The warp-index bits whose warps hold the same outputs (their partials meet in shared
    /// memory, `2^len` per output).
    pub(super) warp_bits: Vec<u32>,
    /// The reduced axis is flat-index bits `lo..hi`.
    pub(super) lo: u32,
    pub(super) hi: u32,
}

/// A lane or warp bit of a [`BitLayout`] along which the elements are replicated.
pub(super) const REPL: u32 = u32::MAX;

fn log2_exact(n: usize) -> Option<u32> {
    n.is_power_of_two().then(|| n.trailing_zeros())
}

impl BitLayout {
    /// The cyclic layout of `numel` elements over `threads` threads in chunks of `v` (see the
    /// module documentation of `expand_device`): slot `j` of thread `t` is element
    /// `((j / v) * threads + t) * v + j % v`.
    pub(super) fn cyclic(numel: usize, threads: usize, v: usize, slots: usize) -> Option<BitLayout> {
        let (n, lt, lv, ls) = (log2_exact(numel)?, log2_exact(threads)?, log2_exact(v)?, log2_exact(slots)?);
        let slot = (0..ls).map(|b| if b < lv { b } else { b + lt }).collect();
        let thread: Vec<u32> = (0..lt).map(|b| lv + b).collect();
        let lanes = lt.min(5) as usize;
        Some(BitLayout { slot, lane: thread[..lanes].to_vec(), warp: thread[lanes..].to_vec(), bits: n })
    }

    /// An `mma` accumulator layout (see [`Layout::Mma`]) whose warp grid and tile counts are
    /// powers of two.
    pub(super) fn mma(layout: Layout) -> Option<BitLayout> {
        let Layout::Mma { wm, wn, tm, tn, n, wg } = layout else { return None };
        let (lwm, lwn, ltm, ltn, ln) = (log2_exact(wm)?, log2_exact(wn)?, log2_exact(tm)?, log2_exact(tn)?, log2_exact(n)?);
        // Row bit `b` is flat bit `ln + b`; column bit `b` is flat bit `b`.
        let row = |b: u32| ln + b;
        // Slot `j = t_m * 4 tn + t_n * 4 + r`: r's bit 0 is column bit 0, its bit 1 row bit 3;
        // t_n's bits are column bits 3..; t_m's bits rows of 16 (64 with warpgroups).
        let tile_row = if wg { 6 } else { 4 };
        let mut slot = vec![0, row(3)];
        slot.extend((0..ltn).map(|b| 3 + b));
        slot.extend((0..ltm).map(|b| row(tile_row + b)));
        // Lane `l`: column bits 1, 2 are `l % 4`, row bits 0..3 are `l / 4`.
        let lane = vec![1, 2, row(0), row(1), row(2)];
        // Warp index: with warpgroups, bits 0 and 1 are row bits 4 and 5 and the group index
        // follows; the (group) index is `row-block * wn + column-block`.
        let (col_base, row_base) = (3 + ltn, tile_row + ltm);
        let mut warp = if wg { vec![row(4), row(5)] } else { vec![] };
        warp.extend((0..lwn).map(|b| col_base + b));
        warp.extend((0..lwm).map(|b| row(row_base + b)));
        Some(BitLayout { slot, lane, warp, bits: ln + log2_exact(wm * tm * if wg { 64 } else { 16 })? })
    }

    /// The layout of the result of reduction `plan` of a block in this layout: the kept slot
    /// bits in order (the partials' order), the reduced lane and warp bits replicated, the flat
    /// bits past the reduced axis moved down over it.
    pub(super) fn sliced(&self, plan: &RegReduce) -> BitLayout {
        let (lo, hi) = (plan.lo, plan.hi);
        let down = |b: u32| if b == REPL || b < lo { b } else if b < hi { REPL } else { b - (hi - lo) };
        let slot = self.slot.iter().copied().filter(|b| !(lo..hi).contains(b)).map(down).collect();
        BitLayout { slot, lane: self.lane.iter().copied().map(down).collect(), warp: self.warp.iter().copied().map(down).collect(), bits: self.bits - (hi - lo) }
    }

    /// The flat index (a `usize` expression) of register slot `j` (a `usize` expression) of this
    /// thread (`__lane`, `__warp`).
    pub(super) fn flat_at(&self, j: &TokenStream) -> TokenStream {
        let part = |bits: &[u32], x: TokenStream| {
            let terms = bits.iter().enumerate().filter(|(_, f)| **f != REPL).map(|(i, f)| quote!(((#x >> #i) & 1) << #f)).collect::<Vec<_>>();
            quote!(#(| #terms)*)
        };
        let (s, l, w) = (part(&self.slot, quote!((#j))), part(&self.lane, quote!(__lane)), part(&self.warp, quote!(__warp)));
        quote!((0usize #s #l #w))
    }

    /// Where a thread finds, in its own registers in this layout, the element that an iteration
    /// in layout `iter` needs at slot `j`, when bit `c` of that element's flat index is bit
    /// `map[c]` of the iteration element's: every bit this layout takes from the lane or warp
    /// index must be the same lane or warp bit of `iter`, and every bit it takes from the slot
    /// index some slot bit of `iter`'s. Returns, for each slot bit `p` here, the bit `q` of `j`
    /// that it is (the slot read is `sum((j >> q) & 1) << p`).
    pub(super) fn local_read(&self, iter: &BitLayout, map: &[u32]) -> Option<Vec<usize>> {
        if map.len() != self.bits as usize {
            return None;
        }
        let same = |ours: &[u32], theirs: &[u32]| ours.iter().enumerate().all(|(p, c)| *c == REPL || (*c < self.bits && theirs.get(p) == Some(&map[*c as usize])));
        if !same(&self.lane, &iter.lane) || !same(&self.warp, &iter.warp) {
            return None;
        }
        self.slot.iter().map(|c| {
            let want = *map.get(*c as usize)?;
            iter.slot.iter().position(|b| *b == want)
        }).collect()
    }

    /// The plan of a reduction of a block of shape `shape` in this layout along `axis`; `None`
    /// beyond [`MAX_SLOT_BITS`] register slots per thread (the plan lists every slot).
    pub(super) fn reduce(&self, shape: &[usize], axis: usize) -> Option<RegReduce> {
        if self.slot.len() > MAX_SLOT_BITS {
            return None;
        }
        let lo = log2_exact(shape[axis + 1..].iter().product())?;
        let hi = lo + log2_exact(shape[axis])?;
        let reduced = |b: &u32| (lo..hi).contains(b);
        let kept: Vec<usize> = (0..self.slot.len()).filter(|b| !reduced(&self.slot[*b])).collect();
        let compress = |j: usize| kept.iter().enumerate().map(|(i, b)| ((j >> b) & 1) << i).sum::<usize>();
        let local: Vec<usize> = (0..1usize << self.slot.len()).map(compress).collect();
        let rep = (0..1usize << kept.len()).map(|l| local.iter().position(|x| *x == l).unwrap_or(0)).collect();
        let lane_masks = (0..self.lane.len()).filter(|b| reduced(&self.lane[*b])).map(|b| 1u32 << b).collect();
        let warp_bits = (0..self.warp.len() as u32).filter(|b| reduced(&self.warp[*b as usize])).collect();
        Some(RegReduce { local, rep, lane_masks, warp_bits, lo, hi })
    }
}

impl RegReduce {
    pub(super) fn partials(&self) -> usize {
        self.rep.len()
    }

    pub(super) fn warps(&self) -> usize {
        1 << self.warp_bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flat index of slot `j`, lane `l`, warp `w` by a layout's bits.
    fn flat(b: &BitLayout, j: usize, l: usize, w: usize) -> usize {
        let pick = |bits: &[u32], x: usize| bits.iter().enumerate().map(|(i, f)| ((x >> i) & 1) << f).sum::<usize>();
        pick(&b.slot, j) | pick(&b.lane, l) | pick(&b.warp, w)
    }

    #[test]
    fn cyclic_bits_match_the_cyclic_formula() {
        for (numel, threads, v) in [(1024, 128, 4), (256, 128, 2), (128, 128, 1), (32, 128, 1), (8192, 256, 4)] {
            let slots = if numel >= threads { numel / threads } else { 1 };
            let b = BitLayout::cyclic(numel, threads, v, slots).unwrap();
            for t in 0..threads {
                for j in 0..slots {
                    assert_eq!(flat(&b, j, t % 32, t / 32), ((j / v) * threads + t) * v + j % v, "{numel} {threads} {v} t{t} j{j}");
                }
            }
        }
        assert_eq!(BitLayout::cyclic(1000, 128, 4, 8), None);
    }

    /// Row and column of slot `j` of lane `l` in warp `w`, from the layout's definition.
    fn mma_rc(layout: Layout, j: usize, l: usize, w: usize) -> (usize, usize) {
        let Layout::Mma { wn, tm, tn, wg, .. } = layout else { unreachable!() };
        let (t_m, t_n, r) = (j / (tn * 4), (j % (tn * 4)) / 4, j % 4);
        let col = t_n * 8 + r % 2 + (l % 4) * 2;
        if wg {
            let g = w / 4;
            ((g / wn) * tm * 64 + t_m * 64 + (r / 2) * 8 + (w % 4) * 16 + l / 4, (g % wn) * tn * 8 + col)
        } else {
            ((w / wn) * tm * 16 + t_m * 16 + (r / 2) * 8 + l / 4, (w % wn) * tn * 8 + col)
        }
    }

    #[test]
    fn mma_bits_match_the_accumulator_layout() {
        let layouts = [
            Layout::Mma { wm: 2, wn: 2, tm: 2, tn: 4, n: 64, wg: false },
            Layout::Mma { wm: 4, wn: 1, tm: 1, tn: 8, n: 64, wg: false },
            Layout::Mma { wm: 1, wn: 1, tm: 2, tn: 16, n: 128, wg: true },
            Layout::Mma { wm: 1, wn: 2, tm: 1, tn: 8, n: 128, wg: true },
        ];
        for layout in layouts {
            let Layout::Mma { wm, wn, tm, tn, n, wg } = layout else { unreachable!() };
            let b = BitLayout::mma(layout).unwrap();
            let warps = wm * wn * if wg { 4 } else { 1 };
            let mut seen = vec![false; 1 << b.bits];
            for w in 0..warps {
                for l in 0..32 {
                    for j in 0..tm * tn * 4 {
                        let (r, c) = mma_rc(layout, j, l, w);
                        let f = flat(&b, j, l, w);
                        assert_eq!(f, r * n + c, "{layout:?} j{j} l{l} w{w}");
                        seen[f] = true;
                    }
                }
            }
            assert!(seen.iter().all(|s| *s), "{layout:?} covers its block");
        }
        assert_eq!(BitLayout::mma(Layout::Mma { wm: 1, wn: 1, tm: 1, tn: 24, n: 192, wg: true }), None);
    }

    /// `flat` of a layout that may hold replicated bits.
    fn flat_repl(b: &BitLayout, j: usize, l: usize, w: usize) -> usize {
        let pick = |bits: &[u32], x: usize| bits.iter().enumerate().filter(|(_, f)| **f != REPL).map(|(i, f)| ((x >> i) & 1) << f).sum::<usize>();
        pick(&b.slot, j) | pick(&b.lane, l) | pick(&b.warp, w)
    }

    #[test]
    fn rows_of_an_mma_block_are_read_from_own_registers() {
        let layouts = [
            Layout::Mma { wm: 2, wn: 2, tm: 2, tn: 4, n: 64, wg: false },
            Layout::Mma { wm: 4, wn: 1, tm: 2, tn: 8, n: 64, wg: false },
            Layout::Mma { wm: 1, wn: 1, tm: 2, tn: 8, n: 64, wg: true },
            Layout::Mma { wm: 2, wn: 1, tm: 1, tn: 16, n: 128, wg: true },
            Layout::Mma { wm: 1, wn: 2, tm: 2, tn: 8, n: 128, wg: true },
        ];
        for layout in layouts {
            let Layout::Mma { wm, wn, tm, tn, n, wg } = layout else { unreachable!() };
            let m = wm * tm * if wg { 64 } else { 16 };
            let parent = BitLayout::mma(layout).unwrap();
            let rows = parent.sliced(&parent.reduce(&[m, n], 1).unwrap());
            assert_eq!((rows.slot.len(), rows.bits), ((2 * tm).trailing_zeros() as usize, m.trailing_zeros()), "{layout:?}");
            // `x.as_col()` broadcast over the columns: the row bits of the parent's flat index.
            let ln = n.trailing_zeros();
            let map: Vec<u32> = (ln..ln + rows.bits).collect();
            let from = rows.local_read(&parent, &map).unwrap_or_else(|| panic!("{layout:?} reads its rows locally"));
            let warps = wm * wn * if wg { 4 } else { 1 };
            for w in 0..warps {
                for l in 0..32 {
                    for j in 0..tm * tn * 4 {
                        let src = from.iter().enumerate().map(|(p, q)| ((j >> q) & 1) << p).sum::<usize>();
                        assert!(src < 2 * tm);
                        assert_eq!(flat_repl(&rows, src, l, w), flat(&parent, j, l, w) >> ln, "{layout:?} j{j} l{l} w{w}");
                    }
                }
            }
            // A cyclic iteration holds other rows in each thread: no local read.
            let cyclic = BitLayout::cyclic(m * n, warps * 32, 4, m * n / (warps * 32)).unwrap();
            assert_eq!(rows.local_read(&cyclic, &(ln..ln + rows.bits).collect::<Vec<_>>()), None);
        }
    }

    #[test]
    fn reductions_split_into_slots_lanes_and_warps() {
        // A [4, 1024] block over 128 threads in chunks of 4, reduced along its rows: the four
        // rows are four partials of each thread, every lane and both warp bits combine.
        let b = BitLayout::cyclic(4096, 128, 4, 32).unwrap();
        let p = b.reduce(&[4, 1024], 1).unwrap();
        assert_eq!(p.partials(), 4);
        assert_eq!(p.lane_masks, vec![1, 2, 4, 8, 16]);
        assert_eq!(p.warps(), 4);
        assert_eq!((0..32).map(|j| p.local[j]).collect::<Vec<_>>(), (0..32).map(|j| j / 8).collect::<Vec<_>>());
        // Along the columns: a chunk's four slots and chunks 512 elements apart hold eight
        // columns, lanes and warps other columns, chunks 1024 apart other rows: only slots
        // combine.
        let p = b.reduce(&[4, 1024], 0).unwrap();
        assert_eq!((p.partials(), p.lane_masks.len(), p.warps()), (8, 0, 1));
        // An mma accumulator's rows: the two column slots, 2 lanes and the column warps.
        let b = BitLayout::mma(Layout::Mma { wm: 2, wn: 2, tm: 2, tn: 4, n: 64, wg: false }).unwrap();
        let p = b.reduce(&[64, 64], 1).unwrap();
        assert_eq!((p.partials(), p.lane_masks.clone(), p.warps()), (4, vec![1, 2], 2));
        // Slots holding the same row fold together: r bit 0 and the column tiles differ.
        for j in 0..32 {
            assert_eq!(p.local[j], ((j >> 1) & 1) | ((j >> 4) << 1), "slot {j}");
        }
    }
}
