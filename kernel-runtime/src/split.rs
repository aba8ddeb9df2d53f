//! Split launches: how many blocks run each program of a 1-D grid.
//!
//! A GPU runs a launch in *waves* of as many blocks as fit on all its SMs at once. When the
//! last wave is less than half full, most SMs idle while it runs (on a 132-SM H100, 162 tiles
//! of a 2304² matmul take two waves, the second one 23 % full). An entry whose K loop can be
//! split (`InstanceInfo::split_bytes`, decided by the `#[kernel]` macro) then runs the programs
//! of the full waves whole and each program of the last wave on `parts` blocks, each taking a
//! contiguous run of the loop's iterations; the parts add their partial accumulators in a
//! workspace and the last one to finish stores the result. The result does not depend on the
//! split beyond the order of the f32 additions (fixed: part 0 first), so every launch of the
//! same plan gives the same bits.
//!
//! [`Settings::split`](crate::Settings::split) (`KERNEL_SPLIT`) chooses the policy: `auto`
//! (default: [`split_plan`] with at most [`DEFAULT_MAX_PARTS`] parts), a number `N` (the same
//! with at most `N` parts), `off` or `0` (never split). Tests make every split-capable launch
//! split, whatever the waves, inside [`with_forced_split`]
//! (`kernel_runtime::testing::with_forced_split`).

use std::cell::Cell;

/// How a launch runs the programs of a 1-D grid: the first `whole` programs on one block each,
/// the others on `parts` blocks each (`blocks` in all). `parts == 1`: no split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitPlan {
    /// Programs that run whole, one block each (the first ones).
    pub whole: u32,
    /// Blocks per split program (1: none is split).
    pub parts: u32,
    /// Blocks the launch runs.
    pub blocks: u32,
}

impl SplitPlan {
    /// Every program on one block.
    pub fn none(programs: u32) -> SplitPlan {
        SplitPlan { whole: programs, parts: 1, blocks: programs }
    }

    /// Programs that are split.
    pub fn split_programs(&self) -> u32 {
        if self.parts <= 1 {
            0
        } else {
            (self.blocks - self.whole) / self.parts
        }
    }
}

/// Parts per split program unless `KERNEL_SPLIT` says otherwise: more parts shorten the last
/// wave but make the last part of each program read more partial accumulators.
pub const DEFAULT_MAX_PARTS: u32 = 4;

/// The plan for `programs` programs when `wave` blocks run at once (SMs times blocks per SM):
/// when at least one full wave comes first and the last wave holds `r` programs with
/// `2 r <= wave`, each of them runs on `min(wave / r, max_parts)` blocks, so that the last wave
/// fills the GPU; otherwise nothing is split. (A grid of less than one wave is left alone: its
/// programs' loops are short, and splitting them costs more in hand-over than it gains.)
///
/// ```
/// use kernel_runtime::{split_plan, SplitPlan};
/// // 162 programs on 132 SMs: 132 whole, the last 30 on 4 blocks each.
/// assert_eq!(split_plan(162, 132, 4), SplitPlan { whole: 132, parts: 4, blocks: 252 });
/// // A last wave more than half full is left alone.
/// assert_eq!(split_plan(200, 132, 4), SplitPlan::none(200));
/// ```
pub fn split_plan(programs: u32, wave: u32, max_parts: u32) -> SplitPlan {
    if wave == 0 || programs == 0 {
        return SplitPlan::none(programs);
    }
    let rem = programs % wave;
    if programs < wave || rem == 0 || u64::from(rem) * 2 > u64::from(wave) {
        return SplitPlan::none(programs);
    }
    last_programs_split(programs, rem, (wave / rem).min(max_parts))
}

/// The plan that runs the last `rem` of `programs` programs on `parts` blocks each and the
/// others whole (none when `parts < 2` or the block count overflows).
fn last_programs_split(programs: u32, rem: u32, parts: u32) -> SplitPlan {
    if parts < 2 {
        return SplitPlan::none(programs);
    }
    let whole = programs - rem;
    match rem.checked_mul(parts).and_then(|b| b.checked_add(whole)) {
        Some(blocks) => SplitPlan { whole, parts, blocks },
        None => SplitPlan::none(programs),
    }
}

/// The plan [`SplitChoice::Wide`] asks for: the programs of the last wave (all of them when
/// the grid is less than one wave) run on `p` blocks each, `p` in `2..=max_parts` the count
/// that makes those blocks take the fewest waves of one part's length
/// (`ceil(r p / wave) / p` of a whole program's time for `r` programs), fewer parts on a tie;
/// nothing is split when no count beats running them whole. Unlike [`split_plan`] it also
/// splits a grid of less than one wave and a last wave more than half full (on 132 SMs, 84
/// programs left run in 3 parts: 252 blocks, two waves of a third of a program each). Whether
/// that pays depends on the hand-over's cost, so only autotuning uses it, where it measured
/// faster (see [`with_split`]).
///
/// ```
/// use kernel_runtime::{split_plan, wide_plan, SplitPlan};
/// // 216 programs on 132 SMs: 132 whole, the last 84 on 3 blocks each.
/// assert_eq!(wide_plan(216, 132, 4), SplitPlan { whole: 132, parts: 3, blocks: 384 });
/// // Less than one wave: every program on 4 blocks.
/// assert_eq!(wide_plan(32, 132, 4), SplitPlan { whole: 0, parts: 4, blocks: 128 });
/// // Where split_plan splits, the wide plan is the same.
/// assert_eq!(wide_plan(162, 132, 4), split_plan(162, 132, 4));
/// ```
pub fn wide_plan(programs: u32, wave: u32, max_parts: u32) -> SplitPlan {
    if wave == 0 || programs == 0 {
        return SplitPlan::none(programs);
    }
    let rem = programs % wave;
    if rem == 0 {
        return SplitPlan::none(programs);
    }
    let (rem, wave64) = (u64::from(rem), u64::from(wave));
    // Cost of the last wave in units of one whole program: waves(p) / p, compared exactly as
    // waves(p) * best_p < best_waves * p.
    let (mut best_p, mut best_waves) = (1u64, 1u64);
    for p in 2..=u64::from(max_parts) {
        let waves = (rem * p).div_ceil(wave64);
        if waves * best_p < best_waves * p {
            (best_p, best_waves) = (p, waves);
        }
    }
    last_programs_split(programs, rem as u32, best_p as u32)
}

/// Which plan the launches inside [`with_split`] use when the policy is `auto` or a part count
/// (`off` and [`with_forced_split`] apply whatever the choice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SplitChoice {
    /// [`split_plan`]: only a last wave at most half full (the default).
    #[default]
    Auto,
    /// [`wide_plan`]: also grids under one wave and last waves more than half full.
    Wide,
}

impl SplitChoice {
    /// The name stored in the autotuning cache.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SplitChoice::Auto => "auto",
            SplitChoice::Wide => "wide",
        }
    }

    /// The choice a cache entry names (`None`: not a choice this build knows).
    pub(crate) fn from_name(name: &str) -> Option<SplitChoice> {
        [SplitChoice::Auto, SplitChoice::Wide].into_iter().find(|c| c.name() == name)
    }
}

thread_local! {
    static CHOICE: Cell<SplitChoice> = const { Cell::new(SplitChoice::Auto) };
    /// Whether [`with_forced_split`] runs on this thread.
    static FORCED: Cell<bool> = const { Cell::new(false) };
    /// `Some` while [`probe_wide`] runs: whether a launch would have planned otherwise under
    /// [`SplitChoice::Wide`].
    static WIDE_DIFFERS: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Runs `f` with the kernel launches it makes on this thread using `choice`'s plan (the
/// previous choice is restored afterwards, also when `f` panics). An autotuned kernel's
/// `launch` runs under the choice its tuning kept.
///
/// ```
/// use kernel_runtime::{with_split, SplitChoice};
/// assert_eq!(with_split(SplitChoice::Wide, || 1 + 1), 2);
/// ```
pub fn with_split<R>(choice: SplitChoice, f: impl FnOnce() -> R) -> R {
    struct Restore(SplitChoice);
    impl Drop for Restore {
        fn drop(&mut self) {
            CHOICE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CHOICE.with(|c| c.replace(choice)));
    f()
}

/// For tests: runs `f` with every split-capable launch it makes on this thread splitting half
/// its programs (the last ones) in 3 parts each, whatever the waves and the policy, so that the
/// split entries run on small grids too (the previous state is restored afterwards, also when
/// `f` panics). Launches on the CPU backend are not split.
///
/// ```
/// use kernel_runtime::testing::with_forced_split;
/// assert_eq!(with_forced_split(|| 1 + 1), 2);
/// ```
pub fn with_forced_split<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|c| c.replace(true)));
    f()
}

/// Whether launches on this thread are inside [`with_forced_split`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn forced() -> bool {
    FORCED.with(Cell::get)
}

/// The plan of [`with_forced_split`]: the first half of the programs whole, the others in 3
/// parts.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn forced_plan(programs: u32) -> SplitPlan {
    let whole = programs / 2;
    match (programs - whole).checked_mul(3).and_then(|b| b.checked_add(whole)) {
        Some(blocks) if programs > 0 => SplitPlan { whole, parts: 3, blocks },
        _ => SplitPlan::none(programs),
    }
}

/// The choice of the launches on this thread now.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn current_choice() -> SplitChoice {
    CHOICE.with(Cell::get)
}

/// Inside [`probe_wide`], records whether a launch would have run another plan under
/// [`SplitChoice::Wide`] than under [`SplitChoice::Auto`] (`differs` is evaluated only there:
/// launches outside autotuning do not plan twice).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn note_wide_differs(differs: impl FnOnce() -> bool) {
    WIDE_DIFFERS.with(|c| {
        if c.get().is_some() {
            c.set(Some(differs()));
        }
    });
}

/// Runs `f` and says whether a launch in it noted that the wide plan differs (autotuning then
/// times both).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn probe_wide<R>(f: impl FnOnce() -> R) -> (R, bool) {
    struct End(Option<bool>);
    impl Drop for End {
        fn drop(&mut self) {
            WIDE_DIFFERS.with(|c| c.set(self.0));
        }
    }
    let end = End(WIDE_DIFFERS.with(|c| c.replace(Some(false))));
    let r = f();
    let differs = WIDE_DIFFERS.with(Cell::get) == Some(true);
    drop(end);
    (r, differs)
}

/// When launches split their programs' K loops over several blocks ([`Settings::split`],
/// `KERNEL_SPLIT`).
///
/// ```
/// use kernel_runtime::{SplitPolicy, DEFAULT_MAX_PARTS};
/// assert_eq!(SplitPolicy::default(), SplitPolicy::Auto(DEFAULT_MAX_PARTS));
/// assert_eq!(SplitPolicy::parse(Some("off")), Ok(SplitPolicy::Off));
/// assert_eq!(SplitPolicy::parse(Some("8")), Ok(SplitPolicy::Auto(8)));
/// assert!(SplitPolicy::parse(Some("lots")).is_err());
/// ```
///
/// [`Settings::split`]: crate::Settings::split
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPolicy {
    /// [`split_plan`] (and, when autotuning chose it, [`wide_plan`]) with at most this many
    /// parts per program (`KERNEL_SPLIT=auto` or `N`).
    Auto(u32),
    /// Never split (`KERNEL_SPLIT=off`).
    Off,
}

impl Default for SplitPolicy {
    /// `Auto(DEFAULT_MAX_PARTS)`.
    fn default() -> Self {
        SplitPolicy::Auto(DEFAULT_MAX_PARTS)
    }
}

impl SplitPolicy {
    /// The policy a `KERNEL_SPLIT` value asks for (`None`, empty or `auto`: the default;
    /// `off`, `0` or `1`; a part count in 2..=64), or why the value is not one.
    ///
    /// # Errors
    /// A message naming the value and the accepted ones.
    pub fn parse(v: Option<&str>) -> Result<SplitPolicy, String> {
        match v.map(str::trim) {
            None | Some("" | "auto") => Ok(SplitPolicy::Auto(DEFAULT_MAX_PARTS)),
            Some("off" | "0" | "1") => Ok(SplitPolicy::Off),
            Some(s) => match s.parse::<u32>() {
                Ok(n) if (2..=64).contains(&n) => Ok(SplitPolicy::Auto(n)),
                _ => Err(format!("KERNEL_SPLIT={s:?} is not one of auto, off or a part count in 2..=64")),
            },
        }
    }

    /// The process's policy ([`crate::Settings::split`]).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn current() -> SplitPolicy {
        crate::Settings::current().split
    }

    /// The plan for `programs` programs when `wave` blocks run at once, under `choice`.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn plan(self, programs: u32, wave: u32, choice: SplitChoice) -> SplitPlan {
        match self {
            SplitPolicy::Auto(max) => match choice {
                SplitChoice::Auto => split_plan(programs, wave, max),
                SplitChoice::Wide => wide_plan(programs, wave, max),
            },
            SplitPolicy::Off => SplitPlan::none(programs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every program is run: whole ones once, split ones by `parts` blocks each.
    fn covers(p: SplitPlan, programs: u32) -> bool {
        p.whole + p.split_programs() == programs && p.blocks == p.whole + p.split_programs() * p.parts
    }

    #[test]
    fn only_a_last_wave_at_most_half_full_is_split() {
        // The square matmul sizes whose 128x256 tiles leave the last wave nearly empty on 132 SMs.
        assert_eq!(split_plan(162, 132, 4), SplitPlan { whole: 132, parts: 4, blocks: 252 }); // 2304
        assert_eq!(split_plan(288, 132, 8), SplitPlan { whole: 264, parts: 5, blocks: 384 }); // 3072
        assert_eq!(split_plan(800, 132, 4), SplitPlan { whole: 792, parts: 4, blocks: 824 }); // 5120
        // Full waves, and last waves more than half full, are not split.
        assert_eq!(split_plan(264, 132, 4), SplitPlan::none(264));
        assert_eq!(split_plan(200, 132, 4), SplitPlan::none(200));
        // Less than one wave is not split.
        assert_eq!(split_plan(30, 132, 4), SplitPlan::none(30));
        assert_eq!(split_plan(0, 132, 4), SplitPlan::none(0));
        assert_eq!(split_plan(7, 0, 4), SplitPlan::none(7));
        for programs in 0..1000 {
            for wave in [1, 2, 7, 132, 264, 528] {
                let p = split_plan(programs, wave, 4);
                assert!(covers(p, programs), "{programs} programs, wave {wave}: {p:?}");
                assert!(p.parts <= 4 && (p.parts == 1 || p.blocks - p.whole <= wave));
            }
        }
        // No overflow near the grid limit.
        assert_eq!(split_plan(u32::MAX, 1 << 31, 4), SplitPlan::none(u32::MAX));
    }

    #[test]
    fn wide_plans_take_the_fewest_part_waves() {
        // Last waves more than half full: 84 left on 132 SMs in 3 parts (two waves of a third),
        // 68 left (2560² in 128x256 tiles) in 3 parts too; 124 left gain nothing.
        assert_eq!(wide_plan(216, 132, 4), SplitPlan { whole: 132, parts: 3, blocks: 384 });
        assert_eq!(wide_plan(200, 132, 4), SplitPlan { whole: 132, parts: 3, blocks: 336 });
        assert_eq!(wide_plan(256, 132, 4), SplitPlan::none(256));
        // Less than one wave: as many parts as fit, at most max_parts.
        assert_eq!(wide_plan(32, 132, 4), SplitPlan { whole: 0, parts: 4, blocks: 128 });
        assert_eq!(wide_plan(8, 132, 8), SplitPlan { whole: 0, parts: 8, blocks: 64 });
        assert_eq!(wide_plan(60, 132, 4), SplitPlan { whole: 0, parts: 2, blocks: 120 });
        // 100 programs: 2 parts take 2 waves of a half (no gain), 4 parts 4 waves of a quarter.
        assert_eq!(wide_plan(100, 132, 4), SplitPlan::none(100));
        // Full waves are never split.
        assert_eq!(wide_plan(264, 132, 4), SplitPlan::none(264));
        assert_eq!(wide_plan(0, 132, 4), SplitPlan::none(0));
        assert_eq!(wide_plan(7, 0, 4), SplitPlan::none(7));
        for programs in 0..1000 {
            for wave in [1, 2, 7, 132, 264, 528] {
                let w = wide_plan(programs, wave, 4);
                assert!(covers(w, programs), "{programs} programs, wave {wave}: {w:?}");
                assert!(w.parts <= 4);
                // Wherever the half-full rule splits, the wide plan is the same plan.
                let s = split_plan(programs, wave, 4);
                if s.parts > 1 {
                    assert_eq!(w, s, "{programs} programs, wave {wave}");
                }
                // A split never makes the last wave's blocks take longer than running whole.
                if w.parts > 1 {
                    let split = w.blocks - w.whole;
                    assert!(split.div_ceil(wave) < w.parts, "{programs} programs, wave {wave}: {w:?}");
                }
            }
        }
        assert_eq!(wide_plan(u32::MAX, 1 << 31, 4), SplitPlan::none(u32::MAX));
    }

    #[test]
    fn with_split_sets_the_choice_for_its_closure_only() {
        assert_eq!(current_choice(), SplitChoice::Auto);
        let inner = with_split(SplitChoice::Wide, || {
            let nested = with_split(SplitChoice::Auto, current_choice);
            (current_choice(), nested)
        });
        assert_eq!(inner, (SplitChoice::Wide, SplitChoice::Auto));
        assert_eq!(current_choice(), SplitChoice::Auto);
        // Restored when the closure panics.
        let r = std::panic::catch_unwind(|| with_split(SplitChoice::Wide, || panic!("boom")));
        assert!(r.is_err());
        assert_eq!(current_choice(), SplitChoice::Auto);
        // The wide-differs note counts only inside a probe, and is evaluated only there.
        note_wide_differs(|| panic!("evaluated outside a probe"));
        assert_eq!(probe_wide(|| note_wide_differs(|| true)), ((), true));
        assert_eq!(probe_wide(|| 7), (7, false));
        assert_eq!(probe_wide(|| note_wide_differs(|| false)), ((), false));
        note_wide_differs(|| panic!("evaluated after a probe"));
        assert_eq!(SplitChoice::from_name("wide"), Some(SplitChoice::Wide));
        assert_eq!(SplitChoice::from_name(SplitChoice::Auto.name()), Some(SplitChoice::Auto));
        assert_eq!(SplitChoice::from_name("sideways"), None);
    }

    #[test]
    fn the_choice_applies_only_to_the_auto_policy() {
        assert_eq!(SplitPolicy::Auto(4).plan(216, 132, SplitChoice::Auto), SplitPlan::none(216));
        assert_eq!(SplitPolicy::Auto(4).plan(216, 132, SplitChoice::Wide), wide_plan(216, 132, 4));
        assert_eq!(SplitPolicy::Off.plan(32, 132, SplitChoice::Wide), SplitPlan::none(32));
    }

    #[test]
    fn kernel_split_values() {
        assert_eq!(SplitPolicy::parse(None), Ok(SplitPolicy::Auto(DEFAULT_MAX_PARTS)));
        assert_eq!(SplitPolicy::parse(Some("auto")), Ok(SplitPolicy::Auto(DEFAULT_MAX_PARTS)));
        assert_eq!(SplitPolicy::parse(Some("off")), Ok(SplitPolicy::Off));
        assert_eq!(SplitPolicy::parse(Some("0")), Ok(SplitPolicy::Off));
        assert!(SplitPolicy::parse(Some("force")).is_err(), "forced splits are for tests: with_forced_split");
        assert_eq!(SplitPolicy::parse(Some("8")), Ok(SplitPolicy::Auto(8)));
        let e = SplitPolicy::parse(Some("lots")).unwrap_err();
        assert!(e.contains("\"lots\"") && e.contains("auto, off or a part count"), "{e}");
        assert!(SplitPolicy::parse(Some("100")).is_err());
    }

    #[test]
    fn forced_plans_split_half_the_programs_in_three() {
        let p = forced_plan(10);
        assert_eq!(p, SplitPlan { whole: 5, parts: 3, blocks: 20 });
        assert!(covers(p, 10));
        assert_eq!(forced_plan(1), SplitPlan { whole: 0, parts: 3, blocks: 3 });
        assert_eq!(forced_plan(0), SplitPlan::none(0));
        assert!(!forced());
        assert!(with_forced_split(forced));
        assert!(!forced());
        assert_eq!(SplitPolicy::Off.plan(162, 132, SplitChoice::Wide), SplitPlan::none(162));
    }
}
