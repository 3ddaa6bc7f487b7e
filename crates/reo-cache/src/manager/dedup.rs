//! Dedup in the manager: clean fragments go through a [`DedupPolicy`](crate::dedup::DedupPolicy) (D-LRU, D-ARC, CD-ARC)
//! instead of the replacement policy. The address of a fragment is its fragment key; its content
//! is a *content blob* named by its BLAKE3 fingerprint, written once however many fragments share
//! it, and freed when the dedup policy evicts the fingerprint.
//!
//! Dirty data bypasses dedup: it is written as ordinary fragment blobs (replicated, never evicted)
//! and enters dedup when the flusher marks it clean. With CD-ARC a content blob holds the LZ4
//! block of the fragment (kept raw when compression does not shrink it); the WEU is the policy's
//! eviction unit — every content blob of an evicted WEU is freed together.
//!
//! After a restart dedup starts cold: content blobs are not addressable without the metadata cache
//! (address → fingerprint), which lives in DRAM only, so they are freed.

use reo_store::{Durability, Location, Scheme};

use super::cache::{free_all, Cache};
use super::dedup_cache::{ContentRef, Offered};
use crate::dedup::{compress, decompress, Chunk, Fingerprint};
use crate::header::{BlobHeader, BlobKind};
use crate::object::Class;

impl Cache {
    /// Scheme of content blobs: the clean classes' scheme for cold data.
    fn content_scheme(&self) -> Scheme {
        self.classes.of(Class::Cold)
    }

    /// Reads `[a, b)` of a deduplicated fragment of `frag_len` bytes.
    pub(crate) fn read_content(&self, c: &ContentRef, frag_len: u64, a: u64, b: u64) -> reo_store::Result<Vec<u8>> {
        if c.compressed && c.loc.len < frag_len {
            let z = self.store.read_all(&c.loc)?;
            let raw = decompress(&z, frag_len as usize).ok_or_else(|| reo_store::Error::Corrupt {
                seq: c.loc.seq,
                detail: "content blob does not decompress to its fragment length".into(),
            })?;
            Ok(raw[a as usize..b as usize].to_vec())
        } else {
            self.store.read(&c.loc, a, b)
        }
    }

    /// [`Cache::read_content`] for its device I/O only: returns the byte count.
    pub(crate) fn read_content_sized(&self, c: &ContentRef, frag_len: u64, a: u64, b: u64) -> reo_store::Result<u64> {
        if c.compressed && c.loc.len < frag_len {
            self.store.read_sized(&c.loc, 0, c.loc.len).map(|_| b - a)
        } else {
            self.store.read_sized(&c.loc, a, b)
        }
    }

    /// Offers clean fragment `frag` of `key` (in `slot`, an object of `size` bytes; bytes `data`)
    /// to the dedup cache: maps it, writes its content if new, frees evicted contents. The entry is
    /// re-checked under the lock right before mapping (the slot may have been reused, the object
    /// rewritten or, with a fill `token`, invalidated since its bytes were fetched). `rewrite`
    /// counts the write as a GC write (a flushed object moving in), not a cache write. Returns
    /// whether the fragment is now cached.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn dedup_insert(
        &self,
        key: &[u8],
        slot: u32,
        frag: u32,
        size: u64,
        data: &[u8],
        token: Option<u64>,
        rewrite: bool,
    ) -> bool {
        let addr = crate::index::frag_key(slot, frag);
        let fp = Fingerprint::of(data);
        let chunk_len = data.len() as u32;
        let (stored, z) = {
            let s = self.lock();
            let compressed = s.dedup.as_ref().is_some_and(|d| d.compressed());
            drop(s);
            if compressed {
                let z = compress(data);
                if z.len() < data.len() {
                    (z.len() as u32, Some(z))
                } else {
                    (chunk_len, None)
                }
            } else {
                (chunk_len, None)
            }
        };
        // The unit is charged what the chunk takes on flash, not its compressed length: the store
        // keeps each content blob in whole sectors, so a 4 KiB block compressed to 2 KiB still
        // takes a sector, and charging 2 KiB let the policy hold twice what the flash holds
        // (the cleaner then relocated full bands on every put).
        let on_flash = if stored < chunk_len {
            let isolated = reo_store::Scheme::None(reo_store::Placement::Isolated);
            self.store.footprint(u64::from(stored), isolated).min(u64::from(chunk_len)) as u32
        } else {
            chunk_len
        };
        let chunk = Chunk { fp, size: chunk_len, compressed: on_flash };
        let (write, evicted, seen) = {
            let mut s = self.lock();
            let same = s.objects.find(key) == Some(slot)
                && s.objects.get(slot).is_some_and(|e| e.size() == size && !e.dirty())
                && !token.is_some_and(|t| s.invalidations.changed_since(key, t));
            if !same {
                return false;
            }
            let Some(d) = s.dedup.as_mut() else { return false };
            let Offered { admitted, write, evicted } = d.offer(addr, &chunk);
            s.stats.evicted(evicted.len() as u64);
            if !admitted {
                drop(s);
                free_all(&self.store, &evicted, Durability::None);
                return false;
            }
            if !write {
                s.stats.dedup_saved_write();
            }
            (write, evicted, s.inflight.orphans_freed())
        };
        free_all(&self.store, &evicted, Durability::None);
        if !write {
            return true;
        }
        let header = BlobHeader {
            kind: BlobKind::Content,
            dirty: false,
            class: Class::Cold,
            object_size: u64::from(chunk_len),
            fragment: 0,
            mtime_ns: 0,
            key: fp.as_bytes().to_vec(),
            etag: String::new(),
            content_type: String::new(),
            user: Vec::new(),
            system: Vec::new(),
            write: 0,
        }
        .encode();
        let body = z.as_deref().unwrap_or(data);
        let placement = fp.prefix();
        let put = self.put_blob(&header, body, self.content_scheme(), false, placement);
        let mut s = self.lock();
        match put {
            Ok(loc) if self.lost_to_cleaner(&s, seen, &[loc]) => {
                // Freed by the cleaner before it was mapped: as if the write had failed.
                s.dedup_forget(addr);
                s.stats.wasted(loc.len);
                false
            }
            Ok(loc) => {
                if rewrite {
                    s.stats.gc_write(loc.len);
                } else {
                    s.stats.cache_write(loc.len);
                }
                match s.dedup.as_mut().expect("dedup on").install(&fp, loc) {
                    Ok(old) => {
                        if let Some(old) = old {
                            drop(s);
                            free_all(&self.store, &[old], Durability::None);
                        }
                        true
                    }
                    // Evicted while being written.
                    Err(loc) => {
                        s.stats.wasted(loc.len);
                        drop(s);
                        free_all(&self.store, &[loc], Durability::None);
                        false
                    }
                }
            }
            Err(_) => {
                s.dedup_forget(addr);
                s.stats.full_rejection();
                false
            }
        }
    }

    /// The cleaner moved content blob `fp`. If the content left the cache meanwhile, the copy is
    /// freed (nothing would ever free it otherwise).
    pub(crate) fn content_moved(&self, fp: &[u8], old: &Location, new: &Location) {
        let mut s = self.lock();
        s.stats.gc_write(new.len);
        let moved = s.dedup.as_mut().is_some_and(|d| d.relocate(fp, old, new));
        drop(s);
        if !moved {
            free_all(&self.store, &[*new], Durability::None);
        }
    }

    /// The cleaner could not read content blob `fp`: forget it (the addresses mapping to it miss
    /// and refetch).
    pub(crate) fn content_lost(&self, fp: &[u8], loc: &Location) {
        let mut s = self.lock();
        if let Some(d) = s.dedup.as_mut() {
            d.forget_content(fp, loc);
        }
    }
}
