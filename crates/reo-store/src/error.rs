//! The store's error type: every failure a caller can see, with a message that says what to do.

use std::fmt;
use std::io;

/// Result alias for store operations.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong in a store operation.
#[derive(Debug)]
pub enum Error {
    /// A configuration value is out of range or inconsistent.
    Config(String),
    /// The devices given do not form one store (different store ids, geometry, duplicates).
    Devices(String),
    /// A device I/O operation failed; the device has been marked failed if the error was a write
    /// or sync error.
    Io { device: usize, op: &'static str, source: io::Error },
    /// No band has room for the blob, even after cleaning would be needed: run GC or free blobs.
    OutOfSpace { needed: u64 },
    /// The blob is larger than one band can hold.
    TooLarge { len: u64, max: u64 },
    /// The header is longer than the format allows.
    HeaderTooLarge { len: usize, max: usize },
    /// Not enough healthy devices to store the blob with at least its data recoverable.
    InsufficientDevices { scheme: String, healthy: usize },
    /// The metadata journal or checkpoint region cannot hold the store's metadata.
    MetadataFull(String),
    /// The location does not name a live blob (freed, relocated, or never written).
    NotFound { seq: u64 },
    /// The requested byte range is outside the blob.
    BadRange { start: u64, end: u64, len: u64 },
    /// Data was lost beyond what its redundancy can reconstruct (dead devices or checksum
    /// mismatches). Wrong bytes are never returned instead.
    Corrupt { seq: u64, detail: String },
    /// Metadata could not be made durable on any healthy device; the write is not acknowledged.
    Journal(String),
    /// The store has been shut down or its metadata can no longer be written to any device.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "bad store configuration: {m}"),
            Error::Devices(m) => write!(f, "device set is not usable: {m}"),
            Error::Io { device, op, source } => write!(f, "device {device}: {op} failed: {source}"),
            Error::OutOfSpace { needed } => {
                write!(f, "store is full: no band has {needed} free bytes (free blobs or run the cleaner)")
            }
            Error::TooLarge { len, max } => {
                write!(f, "blob of {len} bytes exceeds the largest storable blob ({max} bytes)")
            }
            Error::HeaderTooLarge { len, max } => {
                write!(f, "blob header of {len} bytes exceeds the limit of {max} bytes")
            }
            Error::InsufficientDevices { scheme, healthy } => {
                write!(f, "scheme {scheme} cannot keep data recoverable with only {healthy} healthy devices")
            }
            Error::MetadataFull(m) => write!(f, "metadata region full: {m}"),
            Error::NotFound { seq } => write!(f, "blob {seq} is not live in the store"),
            Error::BadRange { start, end, len } => {
                write!(f, "range {start}..{end} is outside the blob of {len} bytes")
            }
            Error::Corrupt { seq, detail } => {
                write!(f, "blob {seq} is unrecoverable (beyond its redundancy): {detail}")
            }
            Error::Journal(m) => write!(f, "metadata could not be made durable: {m}"),
            Error::Closed => write!(f, "store is closed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
