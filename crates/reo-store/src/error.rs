//! The store's error type: every failure a caller can see, with a message that says what to do.

use std::io;

/// Result alias for store operations.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong in a store operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is out of range or inconsistent.
    #[error("bad store configuration: {0}")]
    Config(String),
    /// The devices given do not form one store (different store ids, geometry, duplicates).
    #[error("device set is not usable: {0}")]
    Devices(String),
    /// A device I/O operation failed; the device has been marked failed if the error was a write
    /// or sync error.
    #[error("device {device}: {op} failed: {source}")]
    Io {
        /// Index of the device in the array.
        device: usize,
        /// The operation that failed ("read", "format", "replace").
        op: &'static str,
        /// The device's error.
        source: io::Error,
    },
    /// No band has room for the blob, even after cleaning would be needed: run GC or free blobs.
    #[error("store is full: no band has {needed} free bytes (free blobs or run the cleaner)")]
    OutOfSpace {
        /// Bytes the blob needs in the zone of each device it spans (its column height, whole 4 KiB
        /// sectors).
        needed: u64,
    },
    /// The blob is larger than one band can hold.
    #[error("blob of {len} bytes exceeds the largest storable blob ({max} bytes)")]
    TooLarge {
        /// The blob's length in bytes.
        len: u64,
        /// The largest blob length in bytes one band holds with the blob's scheme.
        max: u64,
    },
    /// The header is longer than the format allows.
    #[error("blob header of {len} bytes exceeds the limit of {max} bytes")]
    HeaderTooLarge {
        /// The header's length in bytes.
        len: usize,
        /// The limit in bytes ([`crate::MAX_HEADER_LEN`]).
        max: usize,
    },
    /// Not enough healthy devices to store the blob with at least its data recoverable.
    #[error("scheme {scheme} cannot keep data recoverable with only {healthy} healthy devices")]
    InsufficientDevices {
        /// The requested scheme, as displayed (e.g. `rs(4,2)`).
        scheme: String,
        /// Devices of the array that are not failed.
        healthy: usize,
    },
    /// The metadata journal or checkpoint region cannot hold the store's metadata.
    #[error("metadata region full: {0}")]
    MetadataFull(String),
    /// The location does not name a live blob (freed, relocated, or never written).
    #[error("blob {seq} is not live in the store")]
    NotFound {
        /// Sequence number of the location asked for.
        seq: u64,
    },
    /// The requested byte range is outside the blob.
    #[error("range {start}..{end} is outside the blob of {len} bytes")]
    BadRange {
        /// First byte asked for.
        start: u64,
        /// End of the range asked for (exclusive).
        end: u64,
        /// The blob's length in bytes.
        len: u64,
    },
    /// Data was lost beyond what its redundancy can reconstruct (dead devices or checksum
    /// mismatches). Wrong bytes are never returned instead.
    #[error("blob {seq} is unrecoverable (beyond its redundancy): {detail}")]
    Corrupt {
        /// Sequence number of the blob.
        seq: u64,
        /// Which chunks were missing or bad, and why.
        detail: String,
    },
    /// Metadata could not be made durable on any healthy device; the write is not acknowledged.
    #[error("metadata could not be made durable: {0}")]
    Journal(String),
    /// The store has been shut down or its metadata can no longer be written to any device.
    #[error("store is closed")]
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// The messages callers and logs see, word for word, and the I/O error as the source.
    #[test]
    fn messages_and_source() {
        let io = || io::Error::other("disk on fire");
        let cases = [
            (Error::Config("x".into()), "bad store configuration: x"),
            (Error::Devices("x".into()), "device set is not usable: x"),
            (Error::Io { device: 2, op: "read", source: io() }, "device 2: read failed: disk on fire"),
            (
                Error::OutOfSpace { needed: 7 },
                "store is full: no band has 7 free bytes (free blobs or run the cleaner)",
            ),
            (Error::TooLarge { len: 9, max: 8 }, "blob of 9 bytes exceeds the largest storable blob (8 bytes)"),
            (Error::HeaderTooLarge { len: 9, max: 8 }, "blob header of 9 bytes exceeds the limit of 8 bytes"),
            (
                Error::InsufficientDevices { scheme: "rs(2,2)".into(), healthy: 1 },
                "scheme rs(2,2) cannot keep data recoverable with only 1 healthy devices",
            ),
            (Error::MetadataFull("x".into()), "metadata region full: x"),
            (Error::NotFound { seq: 5 }, "blob 5 is not live in the store"),
            (Error::BadRange { start: 1, end: 9, len: 4 }, "range 1..9 is outside the blob of 4 bytes"),
            (Error::Corrupt { seq: 5, detail: "x".into() }, "blob 5 is unrecoverable (beyond its redundancy): x"),
            (Error::Journal("x".into()), "metadata could not be made durable: x"),
            (Error::Closed, "store is closed"),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
            assert_eq!(e.source().is_some(), matches!(e, Error::Io { .. }), "{e}");
        }
    }
}
