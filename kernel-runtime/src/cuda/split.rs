//! The workspace of split launches (see [`crate::split`]): per device, one allocation holding
//! a counter per split program (zeroed once; the last part of each program resets its
//! counter) followed by the parts' partial accumulators. It grows when a launch needs more,
//! after the stream has finished with the old one.

use std::sync::{Arc, PoisonError};

use cudarc::driver::result;

use super::ptx::{self, LoadedFunction};
use super::CudaDevice;
use crate::error::DeviceError;
use crate::abi::{InstanceInfo, KernelInfo};
use crate::split::{self, SplitChoice, SplitPlan, SplitPolicy};

/// Split programs one launch may have (the counters' region is fixed, so that growing the
/// partials never leaves a counter in memory that held partials).
const MAX_SLOTS: u32 = 4096;
/// Bytes of the counters' region.
const COUNTER_BYTES: usize = MAX_SLOTS as usize * 4;

/// A device's split workspace: its address and size.
#[derive(Default)]
pub(crate) struct SplitArena {
    buffer: Option<(u64, usize)>,
}

/// A launch that splits: the split entry, its extra parameters and the blocks to run.
pub(crate) struct SplitLaunch {
    pub(crate) function: Arc<LoadedFunction>,
    pub(crate) slots: [u64; 4],
    pub(crate) blocks: u32,
}

/// How a launch of instance `index` of `info` over `grid` splits, if it does. `None` also when
/// the instance has no split entry here (PTX for another architecture than sm_90a, or built
/// before split entries existed; remembered per device) or no workspace could be allocated:
/// the programs then run whole, which is only slower.
pub(crate) fn split_launch(dev: &CudaDevice, info: &'static KernelInfo, index: usize, inst: &InstanceInfo, grid: [u32; 3]) -> Option<SplitLaunch> {
    let key = (std::ptr::from_ref(info) as usize, index);
    if inst.split_bytes == 0 || grid[1] != 1 || grid[2] != 1 || dev.no_split.lock().unwrap_or_else(PoisonError::into_inner).contains(&key) {
        return None;
    }
    let Ok(function) = ptx::function(dev, info, index, inst, true) else {
        dev.no_split.lock().unwrap_or_else(PoisonError::into_inner).insert(key);
        return None;
    };
    let p = plan(dev, grid[0], function.blocks_per_sm);
    if p.parts <= 1 || inst.threads > function.max_threads {
        return None;
    }
    let slots = split_slots(dev, inst, p).ok()?;
    Some(SplitLaunch { function, slots, blocks: p.blocks })
}

/// The plan for `programs` programs of an entry with `blocks_per_sm` blocks per SM on `dev`
/// under this thread's [`SplitChoice`], within the device's grid limit and the workspace's
/// counters (inside [`split::with_forced_split`]: the forced plan). Under
/// [`SplitChoice::Auto`] it also notes whether [`SplitChoice::Wide`] would plan otherwise
/// (autotuning then times both).
fn plan(dev: &CudaDevice, programs: u32, blocks_per_sm: u32) -> SplitPlan {
    let policy = SplitPolicy::current();
    let wave = dev.sm_count.saturating_mul(blocks_per_sm.max(1));
    let fits = |p: SplitPlan| if p.blocks > dev.max_grid[0] || p.split_programs() > MAX_SLOTS { SplitPlan::none(programs) } else { p };
    if split::forced() {
        return fits(split::forced_plan(programs));
    }
    let choice = split::current_choice();
    let p = fits(policy.plan(programs, wave, choice));
    if choice == SplitChoice::Auto {
        split::note_wide_differs(|| fits(policy.plan(programs, wave, SplitChoice::Wide)) != p);
    }
    p
}

/// The four extra parameters of an instance's split entry (workspace, counters, whole
/// programs, parts) for plan `p`, which splits (`p.parts > 1`). A workspace that cannot be
/// allocated is an error the caller may answer by launching the plain entry.
fn split_slots(dev: &CudaDevice, inst: &InstanceInfo, p: SplitPlan) -> Result<[u64; 4], DeviceError> {
    let need = COUNTER_BYTES + p.split_programs() as usize * p.parts as usize * inst.split_bytes as usize;
    let mut arena = dev.split.lock().unwrap_or_else(PoisonError::into_inner);
    let base = match arena.buffer {
        Some((b, size)) if size >= need => b,
        old => {
            if let Some((b, _)) = old {
                // Kernels queued before may still use the old workspace.
                dev.call("cuStreamSynchronize (split workspace)", || dev.stream.synchronize())?;
                arena.buffer = None;
                // SAFETY: no queued work uses `b` any more, and nothing else refers to it.
                dev.call("cuMemFree (split workspace)", || unsafe { result::free_sync(b) })?;
            }
            // Room to grow: the next larger launch of the same kernel rarely needs a new one.
            let bytes = need.next_power_of_two();
            // SAFETY: a plain allocation; its counters are zeroed (in stream order) before any
            // kernel can see them.
            let b = dev.call(format!("cuMemAlloc ({bytes} bytes, split workspace)"), || unsafe { result::malloc_sync(bytes) })?;
            // SAFETY: the counters' region lies inside the allocation just made.
            if let Err(e) = unsafe { dev.memset_d8(b, 0, COUNTER_BYTES) } {
                // SAFETY: nothing was queued that uses `b`.
                let _ = dev.call("cuMemFree (split workspace)", || unsafe { result::free_sync(b) });
                return Err(e);
            }
            arena.buffer = Some((b, bytes));
            b
        }
    };
    Ok([base + COUNTER_BYTES as u64, base, u64::from(p.whole), u64::from(p.parts)])
}
