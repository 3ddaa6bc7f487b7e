//! [`Acceptor`]: the server's accept loop over its listeners (HTTP, HTTPS) and its guards against connections costing what it cannot
//! give. At most `max_connections` are open at once (a permit per connection; the loop waits for
//! one before it accepts, so the kernel's backlog queues the rest); when accepting fails for want
//! of file descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the loop backs off 10 ms,
//! doubling to 100 ms, instead of retrying at once (which spins a core), and warns at most once
//! a second with the count of failures since.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Descriptors kept back from connections for the process's own files (devices, journal,
/// pending records, staged parts, the backend's files).
const RESERVED_FDS: u64 = 256;

/// The default connection cap: what the open-file limit leaves after [`RESERVED_FDS`], at least
/// 16 and at most 65,536.
pub fn default_max_connections() -> usize {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0 { l.rlim_cur } else { 1024 };
    soft.saturating_sub(RESERVED_FDS).clamp(16, 65_536) as usize
}

/// See the module doc.
pub struct Acceptor {
    listeners: Vec<TcpListener>,
    permits: Arc<Semaphore>,
    backoff: Duration,
    failures: u64,
    last_warning: Option<Instant>,
}

impl Acceptor {
    pub fn new(listeners: Vec<TcpListener>, max_connections: usize) -> Acceptor {
        Acceptor {
            listeners,
            permits: Arc::new(Semaphore::new(max_connections.max(1))),
            backoff: Duration::ZERO,
            failures: 0,
            last_warning: None,
        }
    }

    /// The next connection, the index of the listener it came to, and its permit (released
    /// when the connection ends).
    pub async fn accept(&mut self) -> (TcpStream, usize, OwnedSemaphorePermit) {
        let permit = self.permits.clone().acquire_owned().await.expect("the semaphore is never closed");
        loop {
            let accepts = self.listeners.iter().map(|l| Box::pin(l.accept()));
            let (result, which, _) = futures::future::select_all(accepts).await;
            match result {
                Ok((socket, _)) => {
                    self.backoff = Duration::ZERO;
                    return (socket, which, permit);
                }
                Err(e) => {
                    let starved =
                        matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM));
                    self.failures += 1;
                    if self.last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                        tracing::warn!(failures = self.failures, "accepting a connection failed: {e}");
                        self.last_warning = Some(Instant::now());
                        self.failures = 0;
                    }
                    if starved {
                        self.backoff = (self.backoff * 2).clamp(Duration::from_millis(10), Duration::from_millis(100));
                        tokio::time::sleep(self.backoff).await;
                    }
                }
            }
        }
    }
}
