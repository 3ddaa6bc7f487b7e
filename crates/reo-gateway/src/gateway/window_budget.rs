//! The flash windows a flush round's workers hold between them: one window and a MiB, so that
//! large objects flush one at a time, as with a single flusher thread, and the flusher's windows
//! stay within one window and a MiB whatever the number of workers, while small objects share
//! the rest and never wait for each other.

use parking_lot::{Condvar, Mutex};

use super::flushing::WINDOW;

/// Bytes of flash windows a round's workers hold at once.
pub(crate) const WINDOW_BUDGET: u64 = WINDOW + (1 << 20);

/// The window bytes a round's workers hold, bounded by [`WINDOW_BUDGET`].
#[derive(Default)]
pub(crate) struct WindowBudget {
    held: Mutex<u64>,
    freed: Condvar,
}

/// Window bytes a worker holds ([`WindowBudget::take`]), given back when dropped.
pub(crate) struct Window<'a> {
    budget: &'a WindowBudget,
    bytes: u64,
}

impl WindowBudget {
    /// Waits until `bytes` (at most a window) fit the budget beside what the others hold; a
    /// worker alone always proceeds, so a take never waits for itself.
    pub(crate) fn take(&self, bytes: u64) -> Window<'_> {
        let bytes = bytes.min(WINDOW);
        let mut held = self.held.lock();
        while *held > 0 && *held + bytes > WINDOW_BUDGET {
            self.freed.wait(&mut held);
        }
        *held += bytes;
        Window { budget: self, bytes }
    }

    /// Bytes held now.
    #[cfg(test)]
    fn held(&self) -> u64 {
        *self.held.lock()
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        *self.budget.held.lock() -= self.bytes;
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn small_windows_share_the_budget_and_a_second_large_one_waits_for_the_first() {
        let budget = WindowBudget::default();
        let large = budget.take(64 << 20);
        assert_eq!(budget.held(), WINDOW, "a take is capped at one window");
        let small: Vec<_> = (0..64).map(|_| budget.take(4096)).collect();
        assert_eq!(budget.held(), WINDOW + 64 * 4096, "small windows fit beside a large one");
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let second = budget.take(WINDOW);
                tx.send(()).unwrap();
                drop(second);
            });
            assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "a second large window went past the budget");
            drop(large);
            rx.recv().expect("the second large window proceeds once the first is given back");
        });
        drop(small);
        assert_eq!(budget.held(), 0);
    }
}
