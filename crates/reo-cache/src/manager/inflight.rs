//! [`InFlight`]: what the cleaner must know about writes whose blobs are on flash but not yet in
//! the index — the count of orphans it freed (a writer compares it before installing), and the
//! fragments of streamed writes in progress ([`crate::StreamedPut`]), which it must keep.

use std::collections::HashMap;

use reo_store::Location;

/// Orphans freed, and the staged fragments of streamed writes.
#[derive(Default)]
pub(crate) struct InFlight {
    /// Blobs the cleaner met that the index did not know and freed (under the cache's lock): a
    /// writer whose blobs were put with the lock dropped compares this with the value it saw
    /// before its puts, and only if it moved checks that its blobs are still live before
    /// installing them.
    orphans_freed: u64,
    /// Streamed writes in progress: write id → location of each fragment after the first (the
    /// first is never staged); `None` until written, or once lost.
    staged: HashMap<u64, Vec<Option<Location>>>,
}

impl InFlight {
    /// Orphans freed so far: what a writer notes before putting blobs with the lock dropped.
    #[inline]
    pub fn orphans_freed(&self) -> u64 {
        self.orphans_freed
    }

    /// Counts an orphan the cleaner freed.
    #[inline]
    pub fn orphan_freed(&mut self) {
        self.orphans_freed += 1;
    }

    /// Starts staging a streamed write of `fragments` fragments; returns its id (non-zero, not in
    /// use: `seed`, or the next free one after it).
    #[inline]
    pub fn stage(&mut self, seed: u64, fragments: usize) -> u64 {
        let mut write = seed.max(1);
        while self.staged.contains_key(&write) {
            write = write.wrapping_add(1).max(1);
        }
        self.staged.insert(write, vec![None; fragments - 1]);
        write
    }

    /// Whether streamed write `write` is still staged (not installed, not abandoned).
    #[inline]
    pub fn is_staged(&self, write: u64) -> bool {
        self.staged.contains_key(&write)
    }

    /// Records `loc` as fragment `frag` (≥ 1) of staged write `write`.
    #[inline]
    pub fn record(&mut self, write: u64, frag: u32, loc: Location) {
        let slot = self.slot(write, frag).expect("staged until finished or dropped");
        *slot = Some(loc);
    }

    /// Is `loc` fragment `frag` of staged write `write`?
    #[inline]
    pub fn holds(&mut self, write: u64, frag: u32, loc: &Location) -> bool {
        self.slot(write, frag).is_some_and(|l| l.as_ref() == Some(loc))
    }

    /// Replaces fragment `frag` of staged write `write` with `new` if it is `old` (the cleaner
    /// moved it, or lost it: `None`); false when it is not.
    pub fn replace(&mut self, write: u64, frag: u32, old: &Location, new: Option<Location>) -> bool {
        match self.slot(write, frag).filter(|l| l.as_ref() == Some(old)) {
            Some(l) => {
                *l = new;
                true
            }
            None => false,
        }
    }

    /// Takes the staged fragments of `write` (to install them; empty if none).
    #[inline]
    pub fn take(&mut self, write: u64) -> Vec<Option<Location>> {
        self.staged.remove(&write).unwrap_or_default()
    }

    /// Stages again fragments [`InFlight::take`] took (the install was refused).
    #[inline]
    pub fn restore(&mut self, write: u64, fragments: Vec<Option<Location>>) {
        self.staged.insert(write, fragments);
    }

    /// The slot of fragment `frag` of streamed write `write` (its first fragment is never staged).
    #[inline]
    fn slot(&mut self, write: u64, frag: u32) -> Option<&mut Option<Location>> {
        self.staged.get_mut(&write)?.get_mut((frag as usize).checked_sub(1)?)
    }
}
