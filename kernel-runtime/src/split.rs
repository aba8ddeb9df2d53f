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
//! `KERNEL_SPLIT` (read once per process) chooses the policy: `auto` (default: [`split_plan`]
//! with at most [`DEFAULT_MAX_PARTS`] parts), a number `N` (the same with at most `N` parts),
//! `off` or `0` (never split), `force` (for tests: half the programs whole, the others in 3
//! parts each, whatever the waves).

use std::sync::OnceLock;

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
/// programs' loops are short, and on an H100 splitting 512² cost more in hand-over than it
/// gained.)
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
    let parts = (wave / rem).min(max_parts);
    if parts < 2 {
        return SplitPlan::none(programs);
    }
    let whole = programs - rem;
    match rem.checked_mul(parts).and_then(|b| b.checked_add(whole)) {
        Some(blocks) => SplitPlan { whole, parts, blocks },
        None => SplitPlan::none(programs),
    }
}

/// The `KERNEL_SPLIT` policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SplitPolicy {
    /// [`split_plan`] with at most this many parts.
    Auto(u32),
    Off,
    /// Half the programs whole, the others in 3 parts (tests).
    Force,
}

impl SplitPolicy {
    /// The policy a `KERNEL_SPLIT` value asks for, or why the value is not one.
    pub(crate) fn parse(v: Option<&str>) -> Result<SplitPolicy, String> {
        match v.map(str::trim) {
            None | Some("" | "auto") => Ok(SplitPolicy::Auto(DEFAULT_MAX_PARTS)),
            Some("off" | "0" | "1") => Ok(SplitPolicy::Off),
            Some("force") => Ok(SplitPolicy::Force),
            Some(s) => match s.parse::<u32>() {
                Ok(n) if (2..=64).contains(&n) => Ok(SplitPolicy::Auto(n)),
                _ => Err(format!("KERNEL_SPLIT={s:?} is not one of auto, off, force or a part count in 2..=64")),
            },
        }
    }

    /// The process's policy (read once; an invalid value is reported on stderr and ignored).
    pub(crate) fn current() -> SplitPolicy {
        static POLICY: OnceLock<SplitPolicy> = OnceLock::new();
        *POLICY.get_or_init(|| {
            let v = std::env::var("KERNEL_SPLIT").ok();
            SplitPolicy::parse(v.as_deref()).unwrap_or_else(|why| {
                eprintln!("kernel-runtime: {why}; using auto");
                SplitPolicy::Auto(DEFAULT_MAX_PARTS)
            })
        })
    }

    /// The plan for `programs` programs when `wave` blocks run at once.
    pub(crate) fn plan(self, programs: u32, wave: u32) -> SplitPlan {
        match self {
            SplitPolicy::Auto(max) => split_plan(programs, wave, max),
            SplitPolicy::Off => SplitPlan::none(programs),
            SplitPolicy::Force => {
                let whole = programs / 2;
                match (programs - whole).checked_mul(3).and_then(|b| b.checked_add(whole)) {
                    Some(blocks) if programs > 0 => SplitPlan { whole, parts: 3, blocks },
                    _ => SplitPlan::none(programs),
                }
            }
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
    fn kernel_split_values() {
        assert_eq!(SplitPolicy::parse(None), Ok(SplitPolicy::Auto(DEFAULT_MAX_PARTS)));
        assert_eq!(SplitPolicy::parse(Some("auto")), Ok(SplitPolicy::Auto(DEFAULT_MAX_PARTS)));
        assert_eq!(SplitPolicy::parse(Some("off")), Ok(SplitPolicy::Off));
        assert_eq!(SplitPolicy::parse(Some("0")), Ok(SplitPolicy::Off));
        assert_eq!(SplitPolicy::parse(Some("force")), Ok(SplitPolicy::Force));
        assert_eq!(SplitPolicy::parse(Some("8")), Ok(SplitPolicy::Auto(8)));
        let e = SplitPolicy::parse(Some("lots")).unwrap_err();
        assert!(e.contains("\"lots\"") && e.contains("auto, off, force"), "{e}");
        assert!(SplitPolicy::parse(Some("100")).is_err());
    }

    #[test]
    fn forced_plans_split_half_the_programs_in_three() {
        let p = SplitPolicy::Force.plan(10, 132);
        assert_eq!(p, SplitPlan { whole: 5, parts: 3, blocks: 20 });
        assert!(covers(p, 10));
        assert_eq!(SplitPolicy::Force.plan(1, 132), SplitPlan { whole: 0, parts: 3, blocks: 3 });
        assert_eq!(SplitPolicy::Force.plan(0, 132), SplitPlan::none(0));
        assert_eq!(SplitPolicy::Off.plan(162, 132), SplitPlan::none(162));
    }
}
