//! Reading a request body into a [`BodySink`] as it arrives: cut into the sink's pieces, each
//! digested and written on the blocking pool while the next one is read from the network (one
//! write in flight, so a body costs three pieces of memory whatever its size).

use std::sync::Arc;

use futures::StreamExt;
use reo_media::AlignedBuf;
use s3s::dto::StreamingBlob;
use s3s::stream::ByteStream;
use s3s::{s3_error, S3Result};
use tokio::task::JoinHandle;

use crate::body::{BodySink, Digested, Digests};
use crate::budget::MemoryBudget;
use crate::checksum::Algo;

/// Pieces up to this size that the sink only copies into memory are digested and written on
/// the task that read them (a small PUT costs no hand-off before it is stored).
const INLINE: usize = 256 << 10;

/// A write on the blocking pool: it hands back the sink, the digests and the piece's buffer.
type Write<S> = JoinHandle<S3Result<(S, Digests, AlignedBuf)>>;

/// The pipeline of one body: the sink and digests (here, or in the write in flight).
struct Pipe<S> {
    idle: Option<(S, Digests)>,
    busy: Option<Write<S>>,
    spare: Option<AlignedBuf>,
}

impl<S: BodySink> Pipe<S> {
    /// Waits for the write in flight, if any.
    async fn settle(&mut self) -> S3Result<()> {
        if let Some(w) = self.busy.take() {
            let (sink, digests, mut buf) =
                w.await.map_err(|e| s3_error!(InternalError, "body writer failed: {e}"))??;
            buf.resize(0);
            self.spare = Some(buf);
            self.idle = Some((sink, digests));
        }
        Ok(())
    }

    /// Starts writing `piece` once the previous write is done.
    async fn hand_off(&mut self, piece: AlignedBuf) -> S3Result<()> {
        self.settle().await?;
        let (mut sink, mut digests) = self.idle.take().expect("idle after settle");
        if piece.len() <= INLINE && sink.next_in_memory() {
            digests.update(&piece);
            sink.write(&piece)?;
            self.idle = Some((sink, digests));
            return Ok(());
        }
        self.busy = Some(tokio::task::spawn_blocking(move || {
            digests.update(&piece);
            sink.write(&piece)?;
            Ok((sink, digests, piece))
        }));
        Ok(())
    }
}

/// Reads `body` (at most `limit` bytes) into `sink`, computing its MD5 and `algo`'s checksum;
/// the pieces in memory are reserved in `budget`. An error drops the sink (which undoes what it
/// wrote).
pub async fn receive<S: BodySink>(
    body: Option<StreamingBlob>,
    limit: u64,
    budget: &Arc<MemoryBudget>,
    sink: S,
    algo: Option<Algo>,
) -> S3Result<(S, Digested)> {
    let too_large = || s3_error!(EntityTooLarge, "the body exceeds this gateway's limit of {limit} bytes");
    let plen = sink.piece_len();
    let declared = body.as_ref().and_then(|b| b.remaining_length().exact());
    if declared.is_some_and(|n| n as u64 > limit) {
        return Err(too_large());
    }
    // The piece being read, the one being written, the spare one, and what the sink keeps (no
    // more than the body, when its length is declared).
    let small = declared.unwrap_or(usize::MAX);
    let mut held = budget.reserve();
    held.grow((3 * plen).min(small).saturating_add(sink.kept().min(small)) as u64)?;
    let mut pipe = Pipe { idle: Some((sink, Digests::new(algo))), busy: None, spare: None };
    let mut buf = AlignedBuf::with_capacity(plen.min(small));
    let (mut total, mut pieces) = (0u64, 0u64);
    if let Some(mut b) = body {
        while let Some(chunk) = b.next().await {
            let chunk = chunk.map_err(|e| super::integrity::body_error(&e))?;
            total += chunk.len() as u64;
            if total > limit {
                return Err(too_large());
            }
            let mut rest = &chunk[..];
            while !rest.is_empty() {
                let n = (plen - buf.len()).min(rest.len());
                buf.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if buf.len() == plen {
                    let next = pipe.spare.take().unwrap_or_else(|| AlignedBuf::with_capacity(plen));
                    pipe.hand_off(std::mem::replace(&mut buf, next)).await?;
                    pieces += 1;
                }
            }
        }
    }
    if !buf.is_empty() || pieces == 0 {
        pipe.hand_off(buf).await?;
    }
    pipe.settle().await?;
    let (sink, digests) = pipe.idle.take().expect("settled");
    Ok((sink, digests.finish()))
}
