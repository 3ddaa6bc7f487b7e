//! [`DirtyClaims`]: room in the dirty budget promised to write-back bodies still arriving. A
//! streamed PUT is checked against the budget before its body is read; its bytes land on flash
//! as they arrive but count as unflushed only once the write is stored. Without a claim, any
//! number of concurrent uploads would each pass the check and together overrun the budget. A
//! claim is counted with the unflushed bytes ([`super::Gateway::check_dirty_room`]) until it is
//! dropped, with the body's write.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// See the module doc.
#[derive(Default)]
pub(crate) struct DirtyClaims {
    claimed: Arc<AtomicU64>,
}

/// One body's claim, released on drop.
pub struct DirtyClaim {
    claimed: Arc<AtomicU64>,
    bytes: u64,
}

impl DirtyClaims {
    /// Claims `bytes` (checked by the caller with the claim counted: concurrent claimers may be
    /// refused together, never admitted together past the budget).
    pub fn claim(&self, bytes: u64) -> DirtyClaim {
        self.claimed.fetch_add(bytes, Ordering::AcqRel);
        DirtyClaim { claimed: self.claimed.clone(), bytes }
    }

    /// The bytes claimed now.
    pub fn total(&self) -> u64 {
        self.claimed.load(Ordering::Acquire)
    }
}

impl DirtyClaim {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for DirtyClaim {
    fn drop(&mut self) {
        self.claimed.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::DirtyClaims;

    #[test]
    fn claims_count_until_dropped() {
        let c = DirtyClaims::default();
        let a = c.claim(10);
        let b = c.claim(5);
        assert_eq!((c.total(), a.bytes()), (15, 10));
        drop(a);
        assert_eq!(c.total(), 5);
        drop(b);
        assert_eq!(c.total(), 0);
    }
}
