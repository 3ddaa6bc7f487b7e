//! [`BlobHeader`]: what the cache writes into each blob's store header (on-flash format).
//!
//! The store keeps a blob's header in its replicated metadata and hands it back after a restart and
//! to the cleaner, so everything needed to rebuild the cache's index and to decide a blob's fate in
//! GC is here. Little-endian, versioned:
//!
//! ```text
//! magic "RCB1" (4) | version u8 = 1 | kind u8 (0 fragment, 1 dedup content) | flags u8 (bit0 dirty)
//! | class u8 | object size u64 | fragment u32 | mtime u64 (ns since the epoch)
//! | key len u16 | key | etag len u8 | etag | content-type len u8 | content-type
//! | (version 2) metadata count u8 | { name len u8 | name | value len u16 | value } × count
//! | (version 3) system metadata count u8 | { name len u8 | name | value len u16 | value } × count
//! | (version 4) write id u64
//! ```
//!
//! Version 1 (no user metadata), version 2 (no system metadata) and version 3 (no write id)
//! headers are still read (write id 0).
//!
//! The write id ties together the fragments of a *streamed* write
//! ([`crate::StreamedPut`]): its fragments after the first are written while the body still
//! arrives, before the ETag and checksums are known, so they carry an empty ETag and no
//! metadata; the first fragment, written last, carries the object's metadata. A version of an
//! object is then (size, write id) instead of (size, ETag). Write id 0: an ordinary write, every
//! fragment carries the full metadata.
//! System metadata are the object's standard headers and checksum (`cache-control`, …,
//! `x-amz-checksum-crc32`), named as their HTTP headers in lower case.
//!
//! For dedup content blobs (`kind` 1) the key is the 32-byte fingerprint and the sizes describe the
//! chunk. User metadata (S3's `x-amz-meta-*`, at most [`MAX_USER_META`] bytes) is kept so that a
//! dirty object — whose only copy is here — comes back whole after a restart.

use crate::object::Class;

const MAGIC: &[u8; 4] = b"RCB1";
const VERSION: u8 = 4;

/// Most bytes of user metadata (names plus values) a blob header carries (S3 allows 2 KiB).
pub const MAX_USER_META: usize = 8 << 10;

/// What a blob holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobKind {
    /// A fragment of an object.
    Fragment,
    /// A deduplicated content chunk named by its fingerprint.
    Content,
}

/// The decoded header of a cache blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobHeader {
    /// Object fragment or dedup content chunk.
    pub kind: BlobKind,
    /// Holds data not yet written back to the backend (the only copy of it).
    pub dirty: bool,
    /// The object's class when the blob was written.
    pub class: Class,
    /// Object size in bytes (content blobs: the chunk's uncompressed length).
    pub object_size: u64,
    /// Fragment index in the object (0 for content blobs).
    pub fragment: u32,
    /// Object's last-modified time, ns since the Unix epoch.
    pub mtime_ns: u64,
    /// Object key (content blobs: the 32-byte fingerprint); encoded up to 65,535 bytes.
    pub key: Vec<u8>,
    /// Object's ETag (empty in a streamed write's later fragments); encoded up to 255 bytes.
    pub etag: String,
    /// Object's content type; encoded up to 255 bytes.
    pub content_type: String,
    /// User metadata (name, value) pairs.
    pub user: Vec<(String, String)>,
    /// System metadata (header name, value) pairs.
    pub system: Vec<(String, String)>,
    /// The streamed write the blob belongs to (0: none; see the module doc).
    pub write: u64,
}

/// A header to encode, borrowing its strings: the write path encodes one per blob without
/// cloning the key and metadata into a [`BlobHeader`] first.
#[derive(Debug, Clone, Copy)]
pub struct HeaderRef<'a> {
    /// Object fragment or dedup content chunk.
    pub kind: BlobKind,
    /// Holds data not yet written back to the backend (the only copy of it).
    pub dirty: bool,
    /// The object's class when the blob was written.
    pub class: Class,
    /// Object size in bytes (content blobs: the chunk's uncompressed length).
    pub object_size: u64,
    /// Fragment index in the object (0 for content blobs).
    pub fragment: u32,
    /// Object's last-modified time, ns since the Unix epoch.
    pub mtime_ns: u64,
    /// Object key (content blobs: the 32-byte fingerprint); encoded up to 65,535 bytes.
    pub key: &'a [u8],
    /// Object's ETag (empty in a streamed write's later fragments); encoded up to 255 bytes.
    pub etag: &'a str,
    /// Object's content type; encoded up to 255 bytes.
    pub content_type: &'a str,
    /// User metadata (name, value) pairs.
    pub user: &'a [(String, String)],
    /// System metadata (header name, value) pairs.
    pub system: &'a [(String, String)],
    /// The streamed write the blob belongs to (0: none; see the module doc).
    pub write: u64,
}

impl HeaderRef<'_> {
    /// Encodes; the key must be ≤ 65,535 bytes, etag and content type ≤ 255 (longer ones are cut:
    /// they are hints the backend can always answer exactly).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode_into(&mut v);
        v
    }

    /// [`HeaderRef::encode`] into `v` (cleared first), so that a caller can reuse one buffer.
    pub fn encode_into(&self, v: &mut Vec<u8>) {
        let etag = clip(self.etag.as_bytes());
        let ct = clip(self.content_type.as_bytes());
        // Exact size: a put encodes one header per blob, and a regrowth would double its cost.
        let pairs = |p: &[(String, String)]| -> usize {
            p.iter().take(255).map(|(n, v)| 3 + clip(n.as_bytes()).len() + v.len().min(u16::MAX as usize)).sum()
        };
        let (user, system) = (pairs(self.user), pairs(self.system));
        v.clear();
        v.reserve_exact(42 + self.key.len().min(u16::MAX as usize) + etag.len() + ct.len() + user + system);
        v.extend_from_slice(MAGIC);
        v.push(VERSION);
        v.push(match self.kind {
            BlobKind::Fragment => 0,
            BlobKind::Content => 1,
        });
        v.push(u8::from(self.dirty));
        v.push(self.class as u8);
        v.extend_from_slice(&self.object_size.to_le_bytes());
        v.extend_from_slice(&self.fragment.to_le_bytes());
        v.extend_from_slice(&self.mtime_ns.to_le_bytes());
        let klen = self.key.len().min(u16::MAX as usize);
        v.extend_from_slice(&(klen as u16).to_le_bytes());
        v.extend_from_slice(&self.key[..klen]);
        v.push(etag.len() as u8);
        v.extend_from_slice(etag);
        v.push(ct.len() as u8);
        v.extend_from_slice(ct);
        encode_pairs(self.user, v);
        encode_pairs(self.system, v);
        v.extend_from_slice(&self.write.to_le_bytes());
    }
}

/// A count (at most 255) and that many (name, value) pairs.
fn encode_pairs(pairs: &[(String, String)], v: &mut Vec<u8>) {
    let n = pairs.len().min(255);
    v.push(n as u8);
    for (name, value) in &pairs[..n] {
        let name = clip(name.as_bytes());
        let value = &value.as_bytes()[..value.len().min(u16::MAX as usize)];
        v.push(name.len() as u8);
        v.extend_from_slice(name);
        v.extend_from_slice(&(value.len() as u16).to_le_bytes());
        v.extend_from_slice(value);
    }
}

impl BlobHeader {
    /// Encodes (see [`HeaderRef::encode`]).
    pub fn encode(&self) -> Vec<u8> {
        HeaderRef {
            kind: self.kind,
            dirty: self.dirty,
            class: self.class,
            object_size: self.object_size,
            fragment: self.fragment,
            mtime_ns: self.mtime_ns,
            key: &self.key,
            etag: &self.etag,
            content_type: &self.content_type,
            user: &self.user,
            system: &self.system,
            write: self.write,
        }
        .encode()
    }

    /// Whether the encoded header `b` carries the ETag `etag` (as encoded: cut to 255 bytes),
    /// read without decoding the rest or allocating: a get of one version checks it under the
    /// cache's lock. `false` for anything that is not a well-formed header's start.
    pub fn has_etag(b: &[u8], etag: &str) -> bool {
        // Magic, version, kind, flags, class, size, fragment, mtime: 28 bytes; then the key.
        if b.get(..4) != Some(&MAGIC[..]) || !b.get(4).is_some_and(|v| (1..=VERSION).contains(v)) {
            return false;
        }
        let Some(klen) = b.get(28..30).map(|k| u16::from_le_bytes([k[0], k[1]]) as usize) else { return false };
        let at = 30 + klen;
        let Some(&elen) = b.get(at) else { return false };
        b.get(at + 1..at + 1 + elen as usize) == Some(clip(etag.as_bytes()))
    }

    /// Decodes; `None` for anything that is not a well-formed header of a known version (never panics).
    pub fn decode(b: &[u8]) -> Option<BlobHeader> {
        let mut r = b;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (h, t) = r.split_at_checked(n)?;
            r = t;
            Some(h)
        };
        if take(4)? != MAGIC {
            return None;
        }
        let version = take(1)?[0];
        if !(1..=VERSION).contains(&version) {
            return None;
        }
        let kind = match take(1)?[0] {
            0 => BlobKind::Fragment,
            1 => BlobKind::Content,
            _ => return None,
        };
        let flags = take(1)?[0];
        let class = Class::from_bits(u64::from(take(1)?[0]));
        let u64_of = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
        let object_size = u64_of(take(8)?);
        let fragment = u32::from_le_bytes(take(4)?.try_into().ok()?);
        let mtime_ns = u64_of(take(8)?);
        let klen = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
        let key = take(klen)?.to_vec();
        let elen = take(1)?[0] as usize;
        let etag = String::from_utf8(take(elen)?.to_vec()).ok()?;
        let clen = take(1)?[0] as usize;
        let content_type = String::from_utf8(take(clen)?.to_vec()).ok()?;
        let (mut user, mut system) = (Vec::new(), Vec::new());
        for (list, since) in [(&mut user, 2), (&mut system, 3)] {
            if version < since {
                continue;
            }
            for _ in 0..take(1)?[0] {
                let nlen = take(1)?[0] as usize;
                let name = String::from_utf8(take(nlen)?.to_vec()).ok()?;
                let vlen = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
                let value = String::from_utf8(take(vlen)?.to_vec()).ok()?;
                list.push((name, value));
            }
        }
        let write = if version >= 4 { u64_of(take(8)?) } else { 0 };
        Some(BlobHeader {
            kind,
            dirty: flags & 1 != 0,
            class,
            object_size,
            fragment,
            mtime_ns,
            key,
            etag,
            content_type,
            user,
            system,
            write,
        })
    }
}

/// At most 255 bytes, cut on a UTF-8 boundary.
pub(crate) fn clip(s: &[u8]) -> &[u8] {
    if s.len() <= 255 {
        return s;
    }
    let mut n = 255;
    while n > 0 && (s[n] & 0xC0) == 0x80 {
        n -= 1;
    }
    &s[..n]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> BlobHeader {
        BlobHeader {
            kind: BlobKind::Fragment,
            dirty: true,
            class: Class::Dirty,
            object_size: 5 << 30,
            fragment: 4,
            mtime_ns: 1_700_000_000_000_000_000,
            key: b"bucket/photos/x.jpg".to_vec(),
            etag: "\"9e107d9d372bb6826bd81d3542a419d6\"".into(),
            content_type: "image/jpeg".into(),
            user: vec![("camera".into(), "x100".into()), ("é".into(), String::new())],
            system: vec![("cache-control".into(), "max-age=60".into())],
            write: 0x0123_4567_89ab_cdef,
        }
    }

    #[test]
    fn round_trips() {
        let h = sample();
        assert_eq!(BlobHeader::decode(&h.encode()), Some(h));
        let c = BlobHeader { kind: BlobKind::Content, dirty: false, class: Class::Hot, ..sample() };
        assert_eq!(BlobHeader::decode(&c.encode()), Some(c));
    }

    #[test]
    fn encoding_allocates_exactly_once() {
        for h in [sample(), BlobHeader { user: Vec::new(), system: Vec::new(), etag: String::new(), ..sample() }] {
            let b = h.encode();
            assert_eq!(b.len(), b.capacity(), "the size is computed up front");
        }
    }

    #[test]
    fn long_etag_is_cut_on_a_char_boundary() {
        let h = BlobHeader { etag: "é".repeat(200), ..sample() };
        let d = BlobHeader::decode(&h.encode()).unwrap();
        assert_eq!(d.etag, "é".repeat(127));
        assert!(BlobHeader::has_etag(&h.encode(), &"é".repeat(200)), "compared as encoded");
    }

    #[test]
    fn has_etag_reads_the_etag_alone() {
        let h = sample();
        let b = h.encode();
        assert!(BlobHeader::has_etag(&b, &h.etag));
        assert!(!BlobHeader::has_etag(&b, "\"other\""));
        assert!(!BlobHeader::has_etag(&b, ""));
        let empty = BlobHeader { etag: String::new(), ..sample() }.encode();
        assert!(BlobHeader::has_etag(&empty, ""));
        for n in 0..b.len().min(40 + h.key.len()) {
            assert!(!BlobHeader::has_etag(&b[..n], &h.etag), "truncated to {n}");
        }
    }

    #[test]
    fn rejects_other_versions_and_truncations() {
        let mut b = sample().encode();
        for n in 0..b.len() {
            assert!(BlobHeader::decode(&b[..n]).is_none(), "truncated to {n}");
        }
        b[4] = 5;
        assert!(BlobHeader::decode(&b).is_none());
        // Headers of versions 1 to 3 (no metadata sections, no system metadata, no write id)
        // still decode.
        let v1 = BlobHeader { user: Vec::new(), system: Vec::new(), write: 0, ..sample() };
        let mut b = v1.encode();
        b[4] = 1;
        b.truncate(b.len() - 10); // the empty metadata counts and the write id
        assert_eq!(BlobHeader::decode(&b), Some(v1));
        let v2 = BlobHeader { system: Vec::new(), write: 0, ..sample() };
        let mut b = v2.encode();
        b[4] = 2;
        b.truncate(b.len() - 9); // the empty system metadata count and the write id
        assert_eq!(BlobHeader::decode(&b), Some(v2));
        let v3 = BlobHeader { write: 0, ..sample() };
        let mut b = v3.encode();
        b[4] = 3;
        b.truncate(b.len() - 8);
        assert_eq!(BlobHeader::decode(&b), Some(v3));
    }

    proptest! {
        #[test]
        fn decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = BlobHeader::decode(&bytes);
            let mut framed = b"RCB1\x01\x00".to_vec();
            framed.extend_from_slice(&bytes);
            let _ = BlobHeader::decode(&framed);
            // The ETag check agrees with the decoder wherever the decoder accepts.
            if let Some(h) = BlobHeader::decode(&framed) {
                prop_assert!(BlobHeader::has_etag(&framed, &h.etag));
            }
            let _ = BlobHeader::has_etag(&bytes, "x");
        }
    }
}
