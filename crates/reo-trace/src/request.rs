//! [`Request`]: one cache request, the common currency of every trace reader and generator.

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read `[offset, offset + len)` of the object.
    Get,
    /// Write the object whole (a new version of size `obj_size`; `offset`/`len` cover it).
    Put,
    /// Remove the object.
    Delete,
}

/// One request of a trace. Object traces address whole objects (`offset` 0, `len` =
/// `obj_size` for whole-object reads); block traces are cut into fixed-size blocks, one
/// request per block, each block an object of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Arrival time in nanoseconds since the start of the trace (0 when the trace has none).
    pub time_ns: u64,
    /// Get, put or delete.
    pub op: Op,
    /// The object's id (block traces: volume and block number mixed into one id).
    pub key: u64,
    /// First byte of the object the request touches.
    pub offset: u64,
    /// Bytes the request touches.
    pub len: u64,
    /// The object's size.
    pub obj_size: u64,
    /// Content identity for dedup: equal fingerprints mean equal content; `None` when the trace
    /// has no content information (then each (key, version) is distinct content).
    pub fingerprint: Option<u64>,
}
