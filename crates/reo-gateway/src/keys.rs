//! Key and bucket-name validation, and the local backend's file-name encoding of keys.
//!
//! A key is at most 1024 bytes of UTF-8 without NUL. Nothing in it is interpreted as a path: the
//! local backend splits it on `/` into segments and encodes each segment into a file-name
//! component with a one-letter kind prefix (`o.` object, `m.` its sidecar, `d.` directory), so
//! `.`, `..`, empty segments and absolute paths are ordinary names, and keys `a` and `a/b` live at
//! `o.a` and `d.a/o.b` without clashing. A segment whose encoding is longer than
//! [`SEG_CHUNK`] bytes continues in nested `c.` directories (file names stay under 255 bytes).

/// Hex MD5 of `data` (S3 ETags, file names of pending records).
pub fn md5_hex(data: &[u8]) -> String {
    use md5::Digest;
    crate::hex::hex(&md5::Md5::digest(data))
}

/// S3's key length limit.
pub const MAX_KEY_LEN: usize = 1024;
/// Encoded bytes per file-name component (plus the 2-byte kind prefix).
pub const SEG_CHUNK: usize = 200;

/// Why an object key or a bucket name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The key is empty.
    #[error("the object key is empty")]
    EmptyKey,
    /// The key's length in bytes.
    #[error("the object key is {0} bytes long; the limit is {MAX_KEY_LEN}")]
    KeyTooLong(usize),
    /// The key contains a NUL byte.
    #[error("the object key contains a NUL character")]
    NulInKey,
    /// The bucket name refused.
    #[error(
        "invalid bucket name {0:?}: 3 to 63 characters of a-z, 0-9, '.' and '-', starting and ending with a letter or digit"
    )]
    Bucket(String),
}

/// Checks an object key; the error says what is wrong with it.
pub fn validate_key(key: &str) -> Result<(), NameError> {
    if key.is_empty() {
        return Err(NameError::EmptyKey);
    }
    if key.len() > MAX_KEY_LEN {
        return Err(NameError::KeyTooLong(key.len()));
    }
    if key.contains('\0') {
        return Err(NameError::NulInKey);
    }
    Ok(())
}

/// Checks a bucket name against S3's rules (3–63 of `a-z 0-9 . -`, starting and ending with a
/// letter or digit, no `..`).
pub fn validate_bucket(name: &str) -> Result<(), NameError> {
    let ok_len = (3..=63).contains(&name.len());
    let ok_chars = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    let ends = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok_len && ok_chars && ends(name.bytes().next()) && ends(name.bytes().last()) && !name.contains("..") {
        Ok(())
    } else {
        Err(NameError::Bucket(name.to_string()))
    }
}

/// Percent-encodes one key segment for use in a file name: bytes outside `A-Z a-z 0-9 - _ . ~`
/// become `%XX`.
pub fn encode_segment(seg: &str) -> String {
    let mut out = String::with_capacity(seg.len());
    for &b in seg.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Inverse of [`encode_segment`] (on the concatenation of a segment's chunks).
pub fn decode_segment(enc: &str) -> Option<String> {
    let b = enc.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = enc.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Splits an encoded segment into chunks of at most [`SEG_CHUNK`] bytes, never inside a `%XX`.
pub fn chunk_encoded(enc: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = enc;
    while rest.len() > SEG_CHUNK {
        let mut cut = SEG_CHUNK;
        // Do not split "%XX": back off if one of the two bytes before the cut is '%'.
        for back in 1..=2 {
            if rest.as_bytes()[cut - back] == b'%' {
                cut -= back;
                break;
            }
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

/// The relative path components of `key`'s data file (object kind `o`) or sidecar (`m`).
pub fn key_path(key: &str, kind: char) -> Vec<String> {
    let segs: Vec<&str> = key.split('/').collect();
    let mut comps = Vec::new();
    for (i, seg) in segs.iter().enumerate() {
        let enc = encode_segment(seg);
        let chunks = chunk_encoded(&enc);
        let last_seg = i + 1 == segs.len();
        for (j, c) in chunks.iter().enumerate() {
            let last_chunk = j + 1 == chunks.len();
            let prefix = match (last_seg, last_chunk) {
                (_, false) => 'c',
                (false, true) => 'd',
                (true, true) => kind,
            };
            comps.push(format!("{prefix}.{c}"));
        }
    }
    comps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_validated() {
        assert!(validate_key("a").is_ok());
        assert!(validate_key("../../etc/passwd").is_ok(), "dots are ordinary names");
        assert!(validate_key("").is_err());
        assert!(validate_key("a\0b").is_err());
        assert!(validate_key(&"x".repeat(1024)).is_ok());
        assert!(validate_key(&"x".repeat(1025)).unwrap_err().to_string().contains("1025 bytes"));
    }

    #[test]
    fn bucket_names() {
        assert!(validate_bucket("my-bucket.1").is_ok());
        for bad in ["ab", "Upper", "-a-", "a..b", "a_b", &"a".repeat(64)] {
            assert!(validate_bucket(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_cannot_escape_or_clash() {
        assert_eq!(key_path("a", 'o'), vec!["o.a"]);
        assert_eq!(key_path("a/b", 'o'), vec!["d.a", "o.b"]);
        assert_eq!(key_path("/etc/passwd", 'o'), vec!["d.", "d.etc", "o.passwd"]);
        assert_eq!(key_path("../x", 'o'), vec!["d...", "o.x"]);
        for k in ["..", ".", "a/../../b", "a//b/", "/", "é + %41 b"] {
            for c in key_path(k, 'o') {
                assert!(c.len() >= 2 && !c.contains('/') && c != "." && c != "..", "{k}: {c}");
                assert!(c.len() <= SEG_CHUNK + 2);
            }
        }
    }

    #[test]
    fn long_segments_are_chunked_and_round_trip() {
        let seg = "é%".repeat(300);
        let enc = encode_segment(&seg);
        let chunks = chunk_encoded(&enc);
        assert!(chunks.len() > 1 && chunks.iter().all(|c| c.len() <= SEG_CHUNK));
        assert_eq!(decode_segment(&chunks.concat()).unwrap(), seg);
        assert_eq!(decode_segment(&encode_segment("a b+c%41/é")).unwrap(), "a b+c%41/é");
    }
}
