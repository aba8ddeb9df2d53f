//! The shared memory of one body as the emitter hands it out: a bump allocator above a floor.
//!
//! Below the floor lie the tiles the loops being generated keep for their whole body (their
//! resident `dot` operands and the buffers of their copies ahead, as the plan's loop schedules
//! say). Above it, each statement bump-allocates what it needs (its `dot` and reduction
//! temporaries, the values its phases read at other threads' coordinates, a pipelined loop's
//! buffers) and gives it all back when the next statement starts. The most ever in use is the
//! body's dynamic shared memory.

/// Offsets are bytes from the start of the dynamic shared memory (`__smem`). The contract:
/// - [`SmemAlloc::alloc`] hands out `[cursor rounded up, + bytes)` and moves the cursor past it;
///   nothing it handed out is handed out again until [`SmemAlloc::clear`] or
///   [`SmemAlloc::reset`] gives it back.
/// - [`SmemAlloc::clear`] gives back everything above the floor (a statement starts).
/// - [`SmemAlloc::keep`] raises the floor to the cursor: what is allocated so far stays until
///   the floor is put back with [`SmemAlloc::restore_floor`] (a loop's tiles, for its body).
/// - [`SmemAlloc::mark`] and [`SmemAlloc::reset`] undo the allocations in between, the most in
///   use included (code generated and then dropped).
/// - [`SmemAlloc::max`] is the most in use at any point, at least what [`SmemAlloc::cover`]
///   asked for.
#[derive(Debug, Default)]
pub(super) struct SmemAlloc {
    /// Where the next allocation starts looking.
    cursor: usize,
    /// Where [`SmemAlloc::clear`] puts the cursor back.
    floor: usize,
    /// The end of the highest allocation so far.
    max: usize,
}

/// A state of the allocator to go back to ([`SmemAlloc::mark`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Mark {
    cursor: usize,
    max: usize,
}

impl SmemAlloc {
    /// `bytes` at the first multiple of `align` at or above the cursor: their offset.
    pub(super) fn alloc(&mut self, bytes: usize, align: usize) -> usize {
        let off = self.cursor.next_multiple_of(align);
        self.cursor = off + bytes;
        self.max = self.max.max(self.cursor);
        off
    }

    /// Gives back everything above the floor.
    pub(super) fn clear(&mut self) {
        self.cursor = self.floor;
    }

    /// Keeps everything allocated so far: the floor rises to the cursor.
    pub(super) fn keep(&mut self) {
        self.floor = self.cursor;
    }

    /// The floor, to put back later with [`SmemAlloc::restore_floor`].
    pub(super) fn floor(&self) -> usize {
        self.floor
    }

    /// Puts the floor back where [`SmemAlloc::floor`] found it (the cursor stays).
    pub(super) fn restore_floor(&mut self, floor: usize) {
        self.floor = floor;
    }

    /// Where the next allocation (of alignment 1) would start.
    pub(super) fn cursor(&self) -> usize {
        self.cursor
    }

    /// The current state, to go back to with [`SmemAlloc::reset`].
    pub(super) fn mark(&self) -> Mark {
        Mark { cursor: self.cursor, max: self.max }
    }

    /// Whether anything was allocated since `mark`.
    pub(super) fn allocated_since(&self, mark: Mark) -> bool {
        self.cursor != mark.cursor
    }

    /// Goes back to `mark`: the allocations since are given back and no longer count towards
    /// [`SmemAlloc::max`]. The floor stays.
    pub(super) fn reset(&mut self, mark: Mark) {
        self.cursor = mark.cursor;
        self.max = mark.max;
    }

    /// Counts the first `bytes` as used, for code that uses them outside any allocation (where
    /// no statement's shared memory is live).
    pub(super) fn cover(&mut self, bytes: usize) {
        self.max = self.max.max(bytes);
    }

    /// The most shared memory in use at any point: the body's dynamic shared memory.
    pub(super) fn max(&self) -> usize {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::SmemAlloc;

    #[test]
    fn allocations_above_the_floor_are_given_back_and_the_most_in_use_stays() {
        let mut s = SmemAlloc::default();
        let outer = s.floor();
        assert_eq!(s.alloc(10, 16), 0);
        assert_eq!(s.alloc(8, 16), 16);
        s.keep();
        assert_eq!((s.floor(), s.max()), (24, 24));
        assert_eq!(s.alloc(100, 8), 24);
        s.clear();
        assert_eq!(s.alloc(4, 4), 24);
        let before = s.mark();
        assert_eq!(s.alloc(1000, 16), 32);
        assert!(s.allocated_since(before));
        s.reset(before);
        assert_eq!((s.cursor(), s.max()), (28, 124));
        s.cover(16);
        assert_eq!(s.max(), 124);
        s.restore_floor(outer);
        s.clear();
        assert_eq!(s.alloc(4, 4), 0);
    }
}
