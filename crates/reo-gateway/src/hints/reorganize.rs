//! The `reorganize` intent: the application moved objects from one key prefix to another in the
//! backend (a rename of a directory, a compaction that rewrote files under new names) and tells
//! the cache, so the cached bytes follow instead of being refetched. For every key under `to` in
//! the backend whose counterpart under `from` is cached with the same ETag (the same bytes), the
//! cached copy is rewritten under the new key (clean) and the old one dropped. Unflushed objects
//! are left alone (they are not the backend's yet). The access history moves with the bytes:
//! Freq (so H = Freq / Size), the referenced bit and a policy hit per fragment
//! ([`reo_cache::AccessHistory`]), taken before the move's own read so that read does not count.
//! Each move holds both keys' stripes and checks the backend's listing entry again under them.

use crate::gateway::pending::cache_key;
use crate::gateway::{now_ns, Gateway};

/// Most keys one reorganize hint moves.
const LIMIT: usize = 10_000;

/// Moves cached objects from prefix `from` to `to` in `bucket`; returns the bytes moved.
pub fn reorganize(gw: &Gateway, bucket: &str, from: &str, to: &str) -> u64 {
    let Ok(entries) = gw.backend.list(bucket, to, "", LIMIT) else { return 0 };
    let mut moved = 0;
    for e in entries {
        let suffix = &e.key[to.len()..];
        let old = cache_key(bucket, &format!("{from}{suffix}"));
        let new = cache_key(bucket, &e.key);
        if old == new {
            continue;
        }
        // Both keys' stripes, in a fixed order (they may be the same stripe).
        let (first, second) = if old < new { (&old, &new) } else { (&new, &old) };
        let _a = gw.stripe(first);
        let _b = if gw.same_stripe(first, second) { None } else { Some(gw.stripe(second)) };
        if gw.pending().map.contains_key(&old) || gw.pending().map.contains_key(&new) {
            continue;
        }
        // The listing is from before the locks: the new key may have been rewritten or deleted
        // since (a write-around, a flushed delete), and the old bytes must not come back under
        // it. Under both stripes the backend's answer now stays true until the move is done.
        match gw.backend.head(bucket, &e.key) {
            Ok(now) if now.etag == e.info.etag && now.size == e.info.size => {}
            _ => continue,
        }
        let Some(meta) = gw.cache.meta(old.as_bytes()) else { continue };
        if meta.etag != e.info.etag || gw.cache.info(new.as_bytes()).is_some() {
            continue;
        }
        let history = gw.cache.access_history(old.as_bytes());
        let Ok(r) = gw.cache.get(old.as_bytes(), 0, e.info.size, now_ns()) else { continue };
        if !r.is_hit() {
            continue; // partly cached: the missing pieces would have to come from the backend
        }
        let data: Vec<u8> = r.pieces.into_iter().flat_map(|p| p.data.unwrap_or_default()).collect();
        let meta = crate::gateway::meta_of(&e.info);
        if gw.cache.put(new.as_bytes(), &data, &meta, false, now_ns()).is_ok() {
            if let Some(h) = history {
                gw.cache.set_access_history(new.as_bytes(), &h);
            }
            gw.cache.delete(old.as_bytes());
            moved += data.len() as u64;
        }
    }
    // The old keys' copies must not come back after a crash: the backend no longer has them.
    if moved > 0 {
        if let Err(e) = gw.cache.store().flush() {
            tracing::warn!("reorganize: cannot make the moves durable yet: {e}");
        }
    }
    moved
}
