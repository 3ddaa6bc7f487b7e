//! The files of the multipart staging directory: how an I/O error on them is answered, and how
//! one is written atomically and durably. Shared by the upload table ([`super::multipart`]), the
//! part writer ([`super::part_writer`]) and completion ([`super::complete`]).

use std::fs;
use std::path::Path;

use s3s::s3_error;

/// The answer to an I/O error on the staging directory.
pub(crate) fn io(e: std::io::Error) -> s3s::S3Error {
    s3_error!(InternalError, "multipart staging: {e}")
}

/// Writes `dir/name` atomically and durably: a temporary file fsync'ed, renamed into place, the
/// directory fsync'ed. `tag` makes the temporary name unique among concurrent writers.
pub(super) fn write_durable(dir: &Path, name: &str, tag: u64, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("tmp-{name}-{tag}"));
    let mut f = fs::File::create(&tmp)?;
    f.write_all(bytes).and_then(|_| f.sync_all())?;
    fs::rename(&tmp, dir.join(name))?;
    fs::File::open(dir)?.sync_all()
}
