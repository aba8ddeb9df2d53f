//! Unrolling without repeating code: the device lowering writes the code for one element of a
//! thread's registers once, as a closure over the register slot, and [`unroll`] calls it for
//! every slot. Every call and the closure are `#[inline(always)]`, so after inlining the slot is
//! a constant in each copy: register arrays indexed by it stay in registers, exactly as if the
//! copies had been written out, while rustc's front end (type checking, borrow checking,
//! metadata) sees the code once instead of once per slot.

/// Calls `f(0)`, `f(1)`, ..., `f(N - 1)`, in that order, as straight-line code.
///
/// `N` is split into its binary digits at compile time (`N = 100` runs blocks of 64, 32 and 4
/// calls), each block a tree of `#[inline(always)]` halves, so no loop is left for the
/// optimizer to keep. `N` must be below 4096.
#[inline(always)]
pub fn unroll<const N: usize, F: FnMut(usize)>(mut f: F) {
    const { assert!(N < 4096, "unroll: at most 4095 copies") };
    let mut base = 0;
    macro_rules! digit {
        ($($bit:literal => $run:ident),*) => {$(
            if N & $bit != 0 {
                $run(&mut f, base);
                base += $bit;
            }
        )*};
    }
    digit!(2048 => u2048, 1024 => u1024, 512 => u512, 256 => u256, 128 => u128, 64 => u64_,
           32 => u32_, 16 => u16_, 8 => u8_, 4 => u4, 2 => u2, 1 => u1);
    let _ = base;
}

/// Returns `f` itself. The device lowering passes a closure through it to bind it to a name
/// with `#[inline(always)]` on the closure (an attribute on a closure is accepted in argument
/// position, not on a `let` initializer).
#[inline(always)]
pub fn inline_fn<F>(f: F) -> F {
    f
}

#[inline(always)]
fn u1<F: FnMut(usize)>(f: &mut F, b: usize) {
    f(b)
}

macro_rules! halves {
    ($($name:ident = 2 * $half:ident;)*) => {$(
        #[inline(always)]
        fn $name<F: FnMut(usize)>(f: &mut F, b: usize) {
            const H: usize = halves!(@count $half);
            $half(f, b);
            $half(f, b + H);
        }
    )*};
    (@count u1) => { 1 };
    (@count u2) => { 2 };
    (@count u4) => { 4 };
    (@count u8_) => { 8 };
    (@count u16_) => { 16 };
    (@count u32_) => { 32 };
    (@count u64_) => { 64 };
    (@count u128) => { 128 };
    (@count u256) => { 256 };
    (@count u512) => { 512 };
    (@count u1024) => { 1024 };
}

halves! {
    u2 = 2 * u1;
    u4 = 2 * u2;
    u8_ = 2 * u4;
    u16_ = 2 * u8_;
    u32_ = 2 * u16_;
    u64_ = 2 * u32_;
    u128 = 2 * u64_;
    u256 = 2 * u128;
    u512 = 2 * u256;
    u1024 = 2 * u512;
    u2048 = 2 * u1024;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls<const N: usize>() -> ([usize; 4096], usize) {
        let (mut seen, mut n) = ([usize::MAX; 4096], 0);
        unroll::<N, _>(|j| {
            seen[n] = j;
            n += 1;
        });
        (seen, n)
    }

    fn check<const N: usize>() {
        let (seen, n) = calls::<N>();
        assert_eq!(n, N);
        assert!(seen[..n].iter().enumerate().all(|(i, &j)| i == j), "N = {N}: {:?}", &seen[..n]);
    }

    #[test]
    fn every_slot_once_in_order() {
        check::<0>();
        check::<1>();
        check::<2>();
        check::<3>();
        check::<7>();
        check::<64>();
        check::<96>();
        check::<100>();
        check::<128>();
        check::<255>();
        check::<4095>();
        let mut sum = 0;
        inline_fn(|j: usize| sum += j)(5);
        assert_eq!(sum, 5);
    }
}
