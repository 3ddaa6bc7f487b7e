//! [`MinRate`]: a request body that must keep coming. hyper bounds how long a request's header
//! may take (`header_timeout`) but not its body: a client could hold a connection slot (and a
//! body's memory reservation) for ever by sending a byte now and then. A body that sends nothing
//! for [`BodyLimits::idle`], or whose average rate after [`BodyLimits::grace`] falls below
//! [`BodyLimits::min_rate`], ends with an error; the request gets S3's `400 RequestTimeout`
//! (`s3::integrity::body_error`) and nothing of it is stored.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// What a request body must keep up (SECURITY.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Longest pause between two pieces of the body.
    pub idle: Duration,
    /// Lowest average rate, bytes per second, once `grace` has passed.
    pub min_rate: u64,
    /// How long a body may run before `min_rate` applies.
    pub grace: Duration,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits { idle: Duration::from_secs(30), min_rate: 1024, grace: Duration::from_secs(10) }
    }
}

/// Why a body was cut off.
#[derive(Debug)]
pub struct TooSlow(String);

impl std::fmt::Display for TooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RequestTimeout: {}", self.0)
    }
}

impl std::error::Error for TooSlow {}

/// See the module doc.
pub struct MinRate<B> {
    inner: B,
    limits: BodyLimits,
    started: Instant,
    last: Instant,
    bytes: u64,
    /// Made the first time the body waits: most bodies (empty ones, those already buffered by
    /// the kernel) never do, and a request should not pay for a timer it does not use.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> MinRate<B> {
    /// `inner`, held to `limits` from now.
    pub fn new(inner: B, limits: BodyLimits) -> MinRate<B> {
        let now = Instant::now();
        MinRate { inner, limits, started: now, last: now, bytes: 0, timer: None }
    }

    /// When the body is next too slow if nothing more arrives: the idle limit, or the moment
    /// its average falls below the minimum rate.
    fn deadline(&self) -> Instant {
        let idle = self.last + self.limits.idle;
        let rate_ok_until = match self.limits.min_rate {
            0 => idle,
            r => self.started + self.limits.grace.max(Duration::from_secs_f64(self.bytes as f64 / r as f64)),
        };
        idle.min(rate_ok_until)
    }
}

impl<B> Body for MinRate<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    this.bytes += d.len() as u64;
                    this.last = Instant::now();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let deadline = this.deadline();
                if Instant::now() >= deadline {
                    let elapsed = this.started.elapsed().as_secs_f64();
                    return Poll::Ready(Some(Err(Box::new(TooSlow(format!(
                        "the request body came too slowly ({} bytes in {elapsed:.1} s; at least {} bytes per second \
                         after {:?}, and no pause over {:?})",
                        this.bytes, this.limits.min_rate, this.limits.grace, this.limits.idle
                    ))))));
                }
                let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                timer.as_mut().reset(deadline);
                // Registers the waker for the deadline; the inner body's wakes it sooner.
                let _ = timer.as_mut().poll(cx);
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

use std::future::Future as _;

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A body that sends `n` pieces of `piece` bytes, `gap` apart.
    fn trickle(n: usize, piece: usize, gap: Duration) -> impl Body<Data = Bytes, Error = std::io::Error> + Unpin {
        let s = futures::stream::unfold(0, move |i| async move {
            if i == n {
                return None;
            }
            tokio::time::sleep(gap).await;
            Some((Ok::<_, std::io::Error>(Frame::data(Bytes::from(vec![b'x'; piece]))), i + 1))
        });
        http_body_util::StreamBody::new(Box::pin(s))
    }

    #[tokio::test(start_paused = true)]
    async fn a_steady_body_passes_and_a_trickle_is_cut_off() {
        let limits = BodyLimits { idle: Duration::from_secs(30), min_rate: 1000, grace: Duration::from_secs(10) };
        // 2,000 bytes a second for 20 s: fine.
        let ok = MinRate::new(trickle(20, 2000, Duration::from_secs(1)), limits).collect().await;
        assert_eq!(ok.unwrap().to_bytes().len(), 40_000);
        // 100 bytes a second: below the minimum once the grace period is over.
        let slow = MinRate::new(trickle(100, 100, Duration::from_secs(1)), limits).collect().await;
        assert!(slow.unwrap_err().to_string().starts_with("RequestTimeout"));
        // Fast, then silent for longer than the idle limit.
        let stalled = MinRate::new(trickle(2, 50_000, Duration::from_secs(31)), limits).collect().await;
        assert!(stalled.unwrap_err().to_string().contains("too slowly"));
    }
}
