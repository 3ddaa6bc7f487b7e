//! The promote-bandwidth budget: a token bucket of bytes per second that prefetches draw from,
//! so hints cannot swamp the backend. Time is passed in (nanoseconds) so tests need no sleeps.

/// A token bucket holding at most one second of budget.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: u64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    /// `rate` bytes per second; 0 means unlimited. Starts full.
    pub fn new(rate: u64, now_ns: u64) -> TokenBucket {
        TokenBucket { rate, tokens: rate as f64, last_ns: now_ns }
    }

    fn refill(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns) as f64 / 1e9;
        self.tokens = (self.tokens + dt * self.rate as f64).min(self.rate as f64);
        self.last_ns = now_ns;
    }

    /// Takes `bytes` if the budget allows, else says how long to wait before it will. A request
    /// larger than a second's budget is allowed once the bucket is full (it then goes negative),
    /// so a big object is not starved forever.
    pub fn take(&mut self, bytes: u64, now_ns: u64) -> Result<(), std::time::Duration> {
        if self.rate == 0 {
            return Ok(());
        }
        self.refill(now_ns);
        let need = (bytes as f64).min(self.rate as f64);
        if self.tokens >= need {
            self.tokens -= bytes as f64;
            return Ok(());
        }
        Err(std::time::Duration::from_secs_f64((need - self.tokens) / self.rate as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn budget_refills_at_the_rate() {
        let mut b = TokenBucket::new(1000, 0);
        assert!(b.take(600, 0).is_ok());
        let wait = b.take(600, 0).unwrap_err();
        assert!((wait.as_secs_f64() - 0.2).abs() < 1e-6, "{wait:?}");
        assert!(b.take(600, S / 5).is_ok());
        assert!(b.take(1, S / 5).is_err());
    }

    #[test]
    fn large_requests_go_when_full_and_unlimited_never_waits() {
        let mut b = TokenBucket::new(1000, 0);
        assert!(b.take(5000, 0).is_ok()); // full bucket: allowed, goes into debt
        let wait = b.take(1, 0).unwrap_err();
        assert!(wait.as_secs_f64() > 4.0);
        let mut u = TokenBucket::new(0, 0);
        assert!(u.take(u64::MAX, 0).is_ok());
    }
}
