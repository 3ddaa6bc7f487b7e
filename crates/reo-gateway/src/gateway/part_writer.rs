//! [`PartWriter`]: a multipart part received into its staging file as it arrives, and put in
//! place only once its digests are checked ([`PartWriter::commit`]). Dropped uncommitted, it
//! removes its temporary file: the part it would have replaced is untouched.
//!
//! Commit order (each step durable before the next): the part's checksum file, its MD5 file,
//! then the part itself renamed into place. A crash in between leaves a part whose MD5 (or
//! checksum) does not match its bytes, which completion refuses (`InvalidPart`); never a part
//! that passes for the one acknowledged before it.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use s3s::S3Result;

use super::staging::{io, write_durable};
use crate::body::{BodySink, PIECE};

/// See the module doc.
pub struct PartWriter {
    dir: PathBuf,
    number: i32,
    tag: u64,
    tmp: PathBuf,
    file: Option<fs::File>,
}

impl PartWriter {
    /// A writer of part `number` in the upload directory `dir`; `tag` makes its temporary
    /// files' names unique among concurrent writers of the same part.
    pub(super) fn create(dir: PathBuf, number: i32, tag: u64) -> S3Result<PartWriter> {
        let tmp = dir.join(format!("tmp-{number}-{tag}"));
        let file = fs::File::create(&tmp).map_err(io)?;
        Ok(PartWriter { dir, number, tag, tmp, file: Some(file) })
    }

    /// Puts the part in place with its MD5 (`etag`, hex) and checksum (base64, if the upload has
    /// an algorithm); see the module doc. An upload completed or aborted while the body arrived
    /// took its directory away: `NoSuchUpload`, as S3 answers.
    pub fn commit(mut self, etag: &str, checksum: Option<&str>) -> S3Result<()> {
        let gone = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::NotFound {
                s3s::s3_error!(NoSuchUpload, "the upload was completed or aborted while the part arrived")
            } else {
                io(e)
            }
        };
        self.file.as_ref().expect("open until committed").sync_all().map_err(gone)?;
        let n = self.number;
        if let Some(sum) = checksum {
            write_durable(&self.dir, &format!("part-{n:05}.sum"), self.tag, sum.as_bytes()).map_err(gone)?;
        }
        write_durable(&self.dir, &format!("part-{n:05}.md5"), self.tag, etag.as_bytes()).map_err(gone)?;
        fs::rename(&self.tmp, self.dir.join(format!("part-{n:05}"))).map_err(gone)?;
        // In place: nothing left for the drop to remove.
        self.file = None;
        fs::File::open(&self.dir).and_then(|f| f.sync_all()).map_err(gone)
    }
}

impl BodySink for PartWriter {
    fn piece_len(&self) -> usize {
        PIECE
    }

    fn write(&mut self, piece: &[u8]) -> S3Result<()> {
        self.file.as_mut().expect("open until committed").write_all(piece).map_err(io)
    }
}

impl Drop for PartWriter {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
