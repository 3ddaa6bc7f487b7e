//! Warm restart: the index rebuilt from the blobs the store kept (their headers), so a restarted
//! cache serves what it held and still knows which objects are dirty.
//!
//! A crash can leave two versions of an object on flash (an overwrite whose old blobs' frees were
//! not yet durable, or an interrupted write). A version is the pair (object size, ETag), or for a
//! streamed write (object size, write id), its first fragment alone carrying the ETag
//! ([`crate::header`]); a streamed write puts that fragment last, so an interrupted one is
//! incomplete. Rules:
//! a dirty version counts only if all its fragments are present (an unacknowledged write that
//! stopped half-way must not shadow the acknowledged one); a complete dirty version wins over
//! clean ones (dirty data is only ever replaced with durable frees, so a newer clean blob of
//! another version is a free the crash undid); otherwise the version holding the newest blob
//! wins; every other blob is freed. Within one version a fragment stored twice (an interrupted
//! re-encode) keeps its newest copy, and the newest copy's state (a re-encode after a flush is
//! clean) is the version's.

use std::collections::HashMap;

use reo_store::{Durability, Location};

use super::cache::free_all;
use super::cache::Cache;
use super::error::CacheError;
use super::objects::{frag_count, new_entry};
use super::placement::version_tag;
use crate::header::{BlobHeader, BlobKind};

/// One version of one object found on flash.
struct Version {
    size: u64,
    /// The streamed write (0: none).
    write: u64,
    etag: String,
    dirty: bool,
    class: crate::object::Class,
    newest: u64,
    /// fragment → newest location; older duplicates go to `extra`.
    frags: HashMap<u32, Location>,
    extra: Vec<Location>,
}

impl Cache {
    pub(crate) fn rebuild_from_store(&self) -> Result<(), CacheError> {
        let fs = self.cfg.fragment_size;
        let mut objects: HashMap<Vec<u8>, Vec<Version>> = HashMap::new();
        let mut garbage = Vec::new();
        for (loc, hdr) in self.store.blobs() {
            let Some(h) = BlobHeader::decode(&hdr).filter(|h| h.kind == BlobKind::Fragment) else {
                garbage.push(loc);
                continue;
            };
            if u64::from(h.fragment) >= frag_count(h.object_size, fs) {
                garbage.push(loc); // cut with another fragment size: unusable
                continue;
            }
            let versions = objects.entry(h.key).or_default();
            let same =
                |v: &Version| v.size == h.object_size && v.write == h.write && (h.write != 0 || v.etag == h.etag);
            let v = match versions.iter().position(same) {
                Some(i) => &mut versions[i],
                None => {
                    versions.push(Version {
                        size: h.object_size,
                        write: h.write,
                        etag: String::new(),
                        dirty: h.dirty,
                        class: h.class,
                        newest: 0,
                        frags: HashMap::new(),
                        extra: Vec::new(),
                    });
                    versions.last_mut().expect("pushed")
                }
            };
            // Only the first fragment of a streamed write carries the ETag.
            if h.write == 0 || h.fragment == 0 {
                v.etag = h.etag;
            }
            v.newest = v.newest.max(loc.seq);
            // Blobs come in sequence order: a later copy of a fragment is newer.
            if let Some(old) = v.frags.insert(h.fragment, loc) {
                v.extra.push(old);
            }
            // The newest copy's state wins (a re-encode after flushing is clean).
            v.dirty = h.dirty;
            v.class = h.class;
        }
        let mut s = self.lock();
        for (key, versions) in objects {
            let complete = |v: &Version| v.frags.len() as u64 == frag_count(v.size, fs);
            // A complete dirty version wins over any clean one: every path that replaces dirty
            // data frees it durably, so a clean blob of another version newer on flash is one
            // whose free a crash undid (a fill that lost a race), not a newer state.
            let best = versions
                .iter()
                .enumerate()
                // A streamed write without its first fragment was never finished, dirty or clean.
                .filter(|(_, v)| (v.write == 0 || v.frags.contains_key(&0)) && (!v.dirty || complete(v)))
                .max_by_key(|(_, v)| (v.dirty, v.newest))
                .map(|(i, _)| i);
            for (i, mut v) in versions.into_iter().enumerate() {
                garbage.append(&mut v.extra);
                if Some(i) != best {
                    if v.dirty && complete(&v) {
                        tracing::info!(
                            key = %String::from_utf8_lossy(&key),
                            "restart: an older dirty version was superseded by a newer write"
                        );
                    }
                    garbage.extend(v.frags.into_values());
                    continue;
                }
                let slot = s.objects.insert(new_entry(&key, v.size, v.class, fs));
                let e = s.objects.get_mut(slot).expect("inserted");
                e.set_dirty(v.dirty);
                let mut frags: Vec<_> = v.frags.into_iter().collect();
                frags.sort_by_key(|(f, _)| *f);
                for (f, loc) in frags {
                    match s.policy_insert(slot, f, loc.len, fs) {
                        Ok(evicted) => {
                            s.objects.set_location(slot, f, Some(&loc));
                            garbage.extend(evicted);
                        }
                        // Smaller cache than before the restart: what does not fit goes (unless
                        // dirty: then it stays indexed, outside the policy, never evicted).
                        Err(evicted) => {
                            garbage.extend(evicted);
                            if v.dirty {
                                s.objects.set_location(slot, f, Some(&loc));
                            } else {
                                garbage.push(loc);
                            }
                        }
                    }
                }
                s.objects.set_version_tag(slot, version_tag(&v.etag));
                s.drop_entry_if_empty(slot);
            }
        }
        // Rebuilding is not traffic.
        s.stats.reset();
        drop(s);
        free_all(&self.store, &garbage, Durability::None);
        Ok(())
    }
}
