//! Listing: the backend's keys merged with the unflushed writes and deletes of the pending map,
//! fetched in rounds of about a page, so that a page costs in proportion to the page (and to the
//! deletes it passes over), never to the bucket.
//!
//! Each round takes up to `n` pending states after the cursor *before* it lists the backend (a
//! write the flusher lands meanwhile is then in both, and the pending copy wins; a delete it
//! applies meanwhile is still known), then up to `n` backend keys. Only keys up to the end of
//! what both answered completely are merged; the next round starts after them. A round ending in
//! a common prefix resumes after the whole group, whose other keys the page skips anyway.

use std::collections::BTreeMap;

use s3s::S3Result;

use super::errors::backend_err;
use super::handle::Gateway;
use crate::backend::list::{known_upto, ListPage, ListQuery, Pager};
use crate::backend::ListEntry;

/// Past every key that starts with a group (`U+10FFFF` is the largest character).
fn after_group(group: &str) -> String {
    format!("{group}\u{10FFFF}")
}

impl Gateway {
    /// A listing page: the backend's keys merged with unflushed writes.
    pub fn list(&self, bucket: &str, q: &ListQuery) -> S3Result<ListPage> {
        let mut pager = Pager::new(q);
        // Resuming after a common prefix (its continuation token): past all of its keys.
        let resumes_group = q.delimiter.as_deref().is_some_and(|d| !d.is_empty() && q.after.ends_with(d));
        let mut cursor =
            if resumes_group && q.after.starts_with(&q.prefix) { after_group(&q.after) } else { q.after.clone() };
        loop {
            // One more than the page still needs decides whether it is truncated; a grouped
            // page needs more keys (a group may stand for many), but not without bound.
            let need = q.max_keys.saturating_sub(pager.count()).saturating_add(1);
            let n = if pager.grouped() { need.clamp(16, 1001) } else { need.min(1001) };
            let pending = self.pending().after(bucket, &q.prefix, &cursor, n);
            let backend = self.backend.list(bucket, &q.prefix, &cursor, n).map_err(backend_err)?;
            // Keys up to `end` are known from both (None: to the end of the listing).
            let end = known_upto([
                (backend.len() == n, backend.last().map(|e| &e.key)),
                (pending.len() == n, pending.last().map(|p| &p.0)),
            ]);
            let within = |k: &str| end.as_deref().is_none_or(|e| k <= e);
            let mut merged: BTreeMap<String, Option<ListEntry>> =
                backend.into_iter().filter(|e| within(&e.key)).map(|e| (e.key.clone(), Some(e))).collect();
            for (key, info) in pending.into_iter().filter(|(k, _)| within(k)) {
                // A pending write wins over the backend's copy; a tombstone takes it away.
                let entry = info.map(|info| ListEntry { key: key.clone(), info });
                merged.insert(key, entry);
            }
            for entry in merged.into_values().flatten() {
                if pager.push(entry) {
                    return Ok(pager.finish());
                }
            }
            let Some(end) = end else { return Ok(pager.finish()) };
            cursor = match pager.open_group().map(after_group) {
                Some(skip) if skip > end => skip,
                _ => end,
            };
        }
    }
}
