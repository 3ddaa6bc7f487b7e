//! [`Classes`]: the state of classification — the hot threshold H_hot and when it is due again,
//! whether dirty data's redundancy exceeds the budget, and where the re-encoder resumes (see
//! `classify.rs` for how they are computed and used).

use crate::object::{Class, ObjectEntry};

/// H_hot, the requests since it was computed, the budget flag and the re-encoder's cursor.
pub(crate) struct Classes {
    /// Clean objects with H = Freq / Size ≥ this are hot (∞: none).
    h_hot: f64,
    /// The budget covers every clean object, those not read since they were cached (H = 0)
    /// included: they, and new objects while `hot_room` lasts, are hot too.
    unread_hot: bool,
    /// Redundancy bytes the budget had left at the last recomputation, less what the new objects
    /// made hot since took: once it runs out, new objects are cold again.
    hot_room: f64,
    /// Redundancy bytes a byte of hot data costs.
    hot_per_byte: f64,
    /// Requests since H_hot was last computed.
    since_recompute: u64,
    /// Dirty data's redundancy alone exceeds the budget (sense code 0x67).
    over_budget: bool,
    /// Where the re-encoder resumes (a slot number, wrapping).
    reencode_cursor: u64,
    /// Slots the re-encoder looked at in a row without finding a misplaced fragment: once that
    /// covers the whole index, it sleeps until something can have become misplaced (a class
    /// changed), instead of scanning a correct index on every `maintain`.
    reencode_clean_run: usize,
}

impl Default for Classes {
    #[inline]
    fn default() -> Self {
        Classes {
            h_hot: f64::INFINITY,
            unread_hot: false,
            hot_room: 0.0,
            hot_per_byte: 0.0,
            since_recompute: 0,
            over_budget: false,
            reencode_cursor: 0,
            reencode_clean_run: 0,
        }
    }
}

impl Classes {
    /// The class entry `e` should have now: dirty, the class a command set, or hot / cold by H.
    pub fn class_of(&self, e: &ObjectEntry) -> Class {
        if e.dirty() {
            Class::Dirty
        } else if e.explicit_class() {
            e.class()
        } else if e.hotness() >= self.h_hot && (e.freq() > 0 || self.unread_hot) {
            Class::Hot
        } else {
            Class::Cold
        }
    }

    /// The current hot threshold.
    #[inline]
    pub fn h_hot(&self) -> f64 {
        self.h_hot
    }

    /// Counts a request; true when H_hot is due (every `every` requests).
    #[inline]
    pub fn tick(&mut self, every: u64) -> bool {
        self.since_recompute += 1;
        self.since_recompute >= every.max(1)
    }

    /// Whether the next [`Classes::tick`] would call for a recomputation.
    #[inline]
    pub fn due(&self, every: u64) -> bool {
        self.since_recompute + 1 >= every.max(1)
    }

    /// A recomputation starts: the request count restarts.
    #[inline]
    pub fn recomputing(&mut self) {
        self.since_recompute = 0;
    }

    /// Sets H_hot (as computed); with `unread_hot`, the budget covers every clean object and
    /// leaves `room` redundancy bytes for new ones, at `per_byte` each.
    #[inline]
    pub fn set_h_hot(&mut self, h_hot: f64, unread_hot: bool, room: f64, per_byte: f64) {
        self.h_hot = h_hot;
        self.unread_hot = unread_hot;
        self.hot_room = room;
        self.hot_per_byte = per_byte;
    }

    /// The class of a new object of `size` bytes: hot while the budget covers every clean object
    /// and has room for its redundancy (taken from the room), else cold until it is read. Once
    /// the room is spent, unread objects stop counting as hot until the next recomputation.
    #[inline]
    pub fn new_object_class(&mut self, size: u64) -> Class {
        if self.unread_hot {
            let cost = size as f64 * self.hot_per_byte;
            if cost <= self.hot_room {
                self.hot_room -= cost;
                return Class::Hot;
            }
            self.unread_hot = false;
        }
        Class::Cold
    }

    /// Records whether dirty data's redundancy exceeds the budget.
    #[inline]
    pub fn set_over_budget(&mut self, over: bool) {
        self.over_budget = over;
    }

    /// Whether dirty data's redundancy exceeds the budget (sense code 0x67).
    #[inline]
    pub fn over_budget(&self) -> bool {
        self.over_budget
    }

    /// The re-encoder's next slot among `total`; the cursor moves past it.
    #[inline]
    pub fn next_reencode_slot(&mut self, total: usize) -> u32 {
        let slot = (self.reencode_cursor as usize % total.max(1)) as u32;
        self.reencode_cursor = self.reencode_cursor.wrapping_add(1);
        slot
    }

    /// The re-encoder comes back to the slot it just took (for the object's other fragments).
    #[inline]
    pub fn revisit_reencode_slot(&mut self) {
        self.reencode_cursor = self.reencode_cursor.wrapping_sub(1);
    }

    /// The re-encoder skips the slot the cursor is at.
    #[inline]
    pub fn skip_reencode_slot(&mut self) {
        self.reencode_cursor = self.reencode_cursor.wrapping_add(1);
    }

    /// The re-encoder found nothing misplaced in the last `total` slots (a whole index of `total`
    /// slots): nothing to do until [`Classes::wake_reencoder`].
    #[inline]
    pub fn reencoder_idle(&self, total: usize) -> bool {
        self.reencode_clean_run >= total
    }

    /// Counts a slot the re-encoder found in place (`true`) or with a misplaced fragment.
    #[inline]
    pub fn reencode_seen(&mut self, in_place: bool) {
        self.reencode_clean_run = if in_place { self.reencode_clean_run + 1 } else { 0 };
    }

    /// Objects may have changed class (a recomputation, a command, a flush): the re-encoder looks
    /// at the whole index again.
    #[inline]
    pub fn wake_reencoder(&mut self) {
        self.reencode_clean_run = 0;
    }
}
