//! [`Replay`]: one trace through the real cache manager and store, request by request.
//!
//! A get asks the cache for its range ([`Cache::get_sized`]: the same lookup, policy, statistics
//! and device reads as `reo serve`'s GET, without moving bytes); what missed is fetched from the
//! (modelled) backend fragment by fragment and offered back with [`Cache::fill`], where
//! admission decides. A put is a write-back (dirty, class 1) or write-through client write; a
//! delete removes. Failure points fail and replace devices at given requests; the rebuild of a
//! replaced device runs to its end before the next request (the simulator has no clock for it
//! to race). `maintain` (cleaner, re-encoder, failure sweeps) runs every 64 requests.

use std::sync::Arc;
use std::time::Instant;

use reo_cache::{Cache, CacheConfig, ObjectMeta};
use reo_store::Store;
use reo_trace::{Op, Request};

use crate::array::{ArraySpec, Counted};
use crate::capacity::{Capacity, LOGICAL_FLASH_FACTOR};
use crate::content::Contents;
use crate::error::ReplayError;
use crate::failure_plan::{FailureAction, FailurePlan};
use crate::flusher::{FlushPace, Flusher};
use crate::histogram::Histogram;
use crate::model::{DeviceIo, LatencyModel};
use crate::report::{ReplayReport, Window};

/// Everything a replay is configured with.
#[derive(Clone)]
pub struct ReplayConfig {
    /// Name of the configuration in reports (e.g. `reo-20%`, `lru/d-arc`).
    pub name: String,
    /// The device array the cache runs on.
    pub array: ArraySpec,
    /// What `array.cache_bytes` counts: flash (data and redundancy) or the policy's user bytes.
    pub capacity: Capacity,
    /// Cache manager configuration; `capacity_bytes` is derived from the array when 0
    /// (see [`ReplayConfig::policy_capacity`]).
    pub cache: CacheConfig,
    /// Devices to fail and replace, at given requests.
    pub failures: FailurePlan,
    /// Puts are write-back (dirty until flushed) — else write-through.
    pub write_back: bool,
    /// When dirty objects are flushed: past a watermark, or as fast as the backend takes them
    /// (`reo serve`'s flusher).
    pub flush_pace: FlushPace,
    /// The age at which the backend pace flushes a dirty object, modelled seconds (`reo serve`'s
    /// `flush.delay_ms`).
    pub flush_delay_secs: f64,
    /// Dirty bytes, as a fraction of the cache's user capacity, above which the oldest dirty
    /// objects are flushed to the backend (watermark pace), or past which write-back puts are
    /// refused (backend pace: the dirty limit).
    pub dirty_high: f64,
    /// Fraction of the user capacity the flusher brings dirty bytes down to (capped at
    /// `dirty_high`).
    pub dirty_low: f64,
    /// Requests per window of the time series (0: no windows).
    pub window: u64,
    /// Typical object size of the trace (for sizing, see [`ReplayConfig::policy_capacity`]);
    /// `None`: objects of a fragment or more. Used when `object_sizes` is empty.
    pub object_hint: Option<u64>,
    /// Sizes of (a sample of) the trace's distinct objects, for sizing: the policy's share of the
    /// flash is their user bytes over the flash they take ([`ReplayConfig::policy_capacity`]).
    pub object_sizes: Vec<u64>,
    /// Share of the flash the policy fills (default 0.85; the rest is the cleaner's headroom).
    pub fill: f64,
    /// Device, backend and link model that turns counted I/O into latency and bandwidth.
    pub model: LatencyModel,
}

impl ReplayConfig {
    /// User bytes the replacement policy may hold on `store`: the flash (`array.cache_bytes`)
    /// times `fill` (the cleaner's headroom) times the space efficiency of the trace's objects
    /// under the clean data's scheme — chunk trailers, sector padding and parity included, so a
    /// 4 KiB object in `rs(3,2)` over five devices, which takes 20 KiB of flash, counts as such. The
    /// efficiency is that of `object_sizes` (their bytes over their footprints, each object cut
    /// into fragments as the cache cuts it), else of one `object_hint`-sized blob (at most a
    /// fragment). With it, the objects held grow in proportion to the flash whatever their size.
    /// For Reo-x% the clean scheme is the cold one (no parity) and the result is divided by
    /// 1 + x: the hot threshold keeps hot parity and dirty replicas within x of the data, so data
    /// and redundancy together fill the flash.
    pub fn policy_capacity(&self, store: &Store) -> u64 {
        let n = self.array.devices;
        let schemes = self.cache.class_schemes.unwrap_or_else(|| self.cache.redundancy.class_schemes(n));
        let cold = schemes.of(reo_cache::Class::Cold);
        let fs = self.cache.fragment_size.max(1);
        let eff = if self.object_sizes.is_empty() {
            let typical = self.object_hint.unwrap_or(fs).clamp(1, fs);
            typical as f64 / store.footprint(typical, cold) as f64
        } else {
            let full = store.footprint(fs, cold);
            let (mut user, mut flash) = (0u128, 0u128);
            for &size in &self.object_sizes {
                let size = size.max(1);
                let tail = size % fs;
                user += u128::from(size);
                flash += u128::from(size / fs) * u128::from(full);
                if tail > 0 {
                    flash += u128::from(store.footprint(tail, cold));
                }
            }
            user as f64 / flash.max(1) as f64
        };
        // Reo-x%: data plus at most x of it in redundancy (hot parity and dirty replicas, which
        // the hot threshold keeps within the budget) fill the flash.
        let budget = self.cache.redundancy.hot_budget().unwrap_or(0.0);
        (self.array.cache_bytes as f64 * self.fill * eff / (1.0 + budget)) as u64
    }
}

/// A replay in progress.
pub struct Replay {
    cfg: ReplayConfig,
    store: Arc<Store>,
    cache: Cache,
    devices: Vec<Arc<Counted>>,
    contents: Contents,
    flusher: Flusher,
    plan: FailurePlan,
    dedup: bool,
    started: Instant,
    // Totals.
    requests: u64,
    gets: u64,
    puts: u64,
    deletes: u64,
    hits: u64,
    request_bytes: u64,
    hit_bytes: u64,
    backend_read_bytes: u64,
    latency_secs: f64,
    hist: Histogram,
    dirty_lost_reads: u64,
    refused_puts: u64,
    refused_at_limit: u64,
    // The current window.
    window: WindowAcc,
    windows: Vec<Window>,
    io: Vec<DeviceIo>,
    /// The array's I/O count when `io` was taken.
    io_ops: u64,
}

#[derive(Default)]
struct WindowAcc {
    requests: u64,
    hits: u64,
    request_bytes: u64,
    hit_bytes: u64,
    latency_secs: f64,
    /// Requests that failed (reads of lost dirty data): no latency counted.
    failed: u64,
    flash_write_base: u64,
}

impl Replay {
    /// Builds the array, sizes the policy (when `cfg.cache.capacity_bytes` is 0) and opens the
    /// cache over it, ready for the first request.
    pub fn new(mut cfg: ReplayConfig) -> Result<Replay, ReplayError> {
        if cfg.capacity == Capacity::Logical {
            // The policy holds the given user bytes; the flash under it never fills first.
            cfg.cache.capacity_bytes = cfg.array.cache_bytes.max(1);
            cfg.array.cache_bytes = cfg.array.cache_bytes.saturating_mul(LOGICAL_FLASH_FACTOR).max(64 << 20);
        }
        let (store, devices) = cfg.array.build()?;
        if cfg.cache.capacity_bytes == 0 {
            cfg.cache.capacity_bytes = cfg.policy_capacity(&store).max(1);
        }
        cfg.cache.validate(cfg.array.devices)?;
        let cache = Cache::open(store.clone(), cfg.cache.clone())?;
        let cap = cfg.cache.capacity_bytes as f64;
        let flusher = Flusher::new(
            cfg.flush_pace,
            (cap * cfg.dirty_high) as u64,
            (cap * cfg.dirty_low) as u64,
            cfg.flush_delay_secs,
        );
        let io_ops = devices.first().map_or(0, |d| d.array_ops());
        let io = devices.iter().map(|d| d.data_io()).collect();
        Ok(Replay {
            io_ops,
            dedup: cfg.cache.dedup != reo_cache::DedupKind::Off,
            plan: cfg.failures.clone(),
            contents: Contents::new(64 << 20),
            cfg,
            store,
            cache,
            devices,
            flusher,
            started: Instant::now(),
            requests: 0,
            gets: 0,
            puts: 0,
            deletes: 0,
            hits: 0,
            request_bytes: 0,
            hit_bytes: 0,
            backend_read_bytes: 0,
            latency_secs: 0.0,
            hist: Histogram::default(),
            dirty_lost_reads: 0,
            refused_puts: 0,
            refused_at_limit: 0,
            window: WindowAcc::default(),
            windows: Vec::new(),
            io,
        })
    }

    /// The cache under replay (for inspection by tests and experiments).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Replays every request of `trace`; the first error stops the replay.
    pub fn run<E: std::fmt::Display>(
        &mut self,
        trace: impl Iterator<Item = Result<Request, E>>,
        mut progress: impl FnMut(u64),
    ) -> Result<(), ReplayError> {
        for r in trace {
            let r = r.map_err(|e| ReplayError::Trace(e.to_string()))?;
            self.step(&r)?;
            if self.requests.is_multiple_of(16_384) {
                progress(self.requests);
            }
        }
        Ok(())
    }

    /// Slowest device's time on the data-region I/O since the last snapshot (and takes a new
    /// snapshot).
    fn device_secs(&mut self) -> f64 {
        // Twice per request: in place, without allocating.
        let mut secs = 0.0f64;
        // Taken before the counters: an I/O racing with the look is seen now or next time.
        let ops = self.devices.first().map_or(0, |d| d.array_ops());
        if ops == self.io_ops {
            return secs;
        }
        self.io_ops = ops;
        for (dev, last) in self.devices.iter().zip(self.io.iter_mut()) {
            let now = dev.data_io();
            // Most requests touch one device: skip the arithmetic for the others.
            if now != *last {
                secs = secs.max(self.cfg.model.device_secs(&now.since(last)));
                *last = now;
            }
        }
        secs
    }

    /// Replays one request.
    pub fn step(&mut self, r: &Request) -> Result<(), ReplayError> {
        self.apply_failures()?;
        let now = r.time_ns.max(self.requests);
        let key = r.key.to_le_bytes();
        self.device_secs(); // background I/O since the last request is not this request's
        let mut secs = self.cfg.model.network_secs(r.len);
        // The backend's share of `secs`: the rest of the request's time the backend is idle.
        let mut backend_secs = 0.0;
        match r.op {
            Op::Get => {
                self.gets += 1;
                let Some((hit, hit_bytes, backend, flash_secs)) = self.get(&key, r, now)? else {
                    // The only copy is gone: the read fails (the client gets an error, no
                    // bytes). Counted in `dirty_lost_reads`, and kept out of the latency and
                    // bandwidth of the requests served, which a near-free failure would flatter.
                    self.window.failed += 1;
                    self.end_request(None);
                    return Ok(());
                };
                secs += flash_secs;
                if backend > 0 {
                    backend_secs = self.cfg.model.backend_secs(1, backend);
                    secs += backend_secs;
                }
                self.request_bytes += r.len;
                self.window.request_bytes += r.len;
                self.hit_bytes += hit_bytes;
                self.window.hit_bytes += hit_bytes;
                if hit {
                    self.hits += 1;
                    self.window.hits += 1;
                }
                self.backend_read_bytes += backend;
                // The fills after a miss write in the background.
                self.device_secs();
            }
            Op::Put => {
                self.puts += 1;
                let data = if self.dedup {
                    let id = r.fingerprint.unwrap_or(r.key ^ self.requests.rotate_left(32));
                    self.contents.synthesize(id, 0, r.obj_size)
                } else {
                    self.contents.zeros(r.obj_size)
                };
                let dirty = self.cfg.write_back;
                let at_limit = dirty && self.flusher.refuses(r.obj_size);
                let put = if at_limit {
                    self.refused_at_limit += 1;
                    None
                } else {
                    match self.cache.put(&key, data, &ObjectMeta::default(), dirty, now) {
                        Ok(receipt) => Some(receipt),
                        // Full of dirty data, or too few devices left to protect it.
                        Err(reo_cache::WriteError::Full(_))
                        | Err(reo_cache::WriteError::Store(reo_store::Error::InsufficientDevices { .. })) => None,
                        Err(e) => return Err(self.request_error("put", e)),
                    }
                };
                match put {
                    Some(receipt) if dirty => {
                        self.flusher.dirtied(r.key, receipt.version, r.obj_size);
                        secs += self.cfg.model.commit_secs();
                    }
                    Some(_) => {}
                    None => {
                        // Refused (past the dirty limit, or the cache could not take it): the
                        // gateway answers 503 and the client writes again later. The model
                        // takes the write as the client's straight to the backend (nothing is
                        // lost): the key's cached copy and any older dirty version are stale,
                        // and a write-back put pays the backend write on its path (a
                        // write-through put's backend write is not modelled).
                        self.refused_puts += 1;
                        self.cache.delete(&key);
                        self.flusher.forget(r.key);
                        if dirty {
                            self.flusher.flushed_bytes += r.obj_size;
                            backend_secs = self.cfg.model.backend_secs(1, r.obj_size);
                            secs += backend_secs;
                        }
                    }
                }
                secs += self.device_secs();
            }
            Op::Delete => {
                self.deletes += 1;
                self.cache.delete(&key);
                self.flusher.forget(r.key);
            }
        }
        self.flusher.run(&self.cache, secs, secs - backend_secs, &self.cfg.model);
        self.end_request(Some(secs));
        Ok(())
    }

    /// Counts a request that took `secs` (modelled), or failed (`None`).
    fn end_request(&mut self, secs: Option<f64>) {
        if let Some(secs) = secs {
            self.latency_secs += secs;
            self.window.latency_secs += secs;
            self.hist.record(secs);
        }
        self.requests += 1;
        self.window.requests += 1;
        if self.requests.is_multiple_of(64) {
            self.cache.maintain();
        }
        if self.cfg.window > 0 && self.window.requests >= self.cfg.window {
            self.close_window();
        }
    }

    /// A get: (whole hit, bytes from flash, bytes fetched from the backend, seconds of the flash
    /// reads on the request's path). The fills of a miss are written after the reply (the gateway
    /// admits in the background), so their device time is not the request's.
    /// `None`: the read failed (its dirty data is lost).
    fn get(&mut self, key: &[u8], r: &Request, now: u64) -> Result<Option<(bool, u64, u64, f64)>, ReplayError> {
        let end = r.offset + r.len;
        let looked_up = self.cache.get_sized(key, r.offset, end, now);
        let flash_secs = self.device_secs();
        let res = match looked_up {
            Ok(res) => res,
            Err(reo_cache::WriteError::DirtyLost(_)) => {
                // The only copy is gone: a data-loss event (counted); the client gets an error.
                self.dirty_lost_reads += 1;
                return Ok(None);
            }
            Err(e) => return Err(self.request_error("get", e)),
        };
        let hit = res.is_hit();
        let hit_bytes: u64 = res.pieces.iter().filter_map(|p| p.data).sum();
        if hit {
            return Ok(Some((true, hit_bytes, 0, flash_secs)));
        }
        // Fetch whole fragments of what missed (the cache caches fragments) and offer them.
        let fs = self.cfg.cache.fragment_size;
        let size = r.obj_size;
        let mut backend = 0;
        let mut last = u32::MAX;
        for (a, b) in res.missing() {
            let b = b.min(size);
            if a >= b {
                continue;
            }
            for f in (a / fs) as u32..=((b - 1) / fs) as u32 {
                if f == last {
                    continue;
                }
                last = f;
                let flen = fs.min(size - u64::from(f) * fs);
                backend += flen;
                let data = if self.dedup {
                    let id = r.fingerprint.unwrap_or(r.key);
                    self.contents.synthesize(id, f, flen)
                } else {
                    self.contents.zeros(flen)
                };
                self.cache
                    .fill(key, size, f, data, &ObjectMeta::default(), res.token, now)
                    .map_err(|e| self.request_error("fill", e))?;
            }
        }
        Ok(Some((false, hit_bytes, backend, flash_secs)))
    }

    /// The error of request number `self.requests` failing in the cache's `op`.
    fn request_error(&self, op: &'static str, source: reo_cache::WriteError) -> ReplayError {
        ReplayError::Request { request: self.requests, op, source }
    }

    fn apply_failures(&mut self) -> Result<(), ReplayError> {
        let due: Vec<_> = self.plan.due(self.requests).to_vec();
        for p in due {
            match p.action {
                FailureAction::Fail => {
                    self.cache.fail_device(p.device).map_err(|source| ReplayError::Failure { point: p, source })?;
                }
                FailureAction::Replace => {
                    let media = self.cfg.array.replacement(&self.devices[p.device], p.device)?;
                    let handle = self
                        .cache
                        .replace_device(p.device, media.clone(), None)
                        .map_err(|source| ReplayError::Failure { point: p, source })?;
                    handle.wait();
                    self.devices[p.device] = media;
                    self.io = self.devices.iter().map(|d| d.data_io()).collect();
                }
            }
        }
        Ok(())
    }

    fn flash_write_bytes(&self) -> u64 {
        let s = self.store.stats();
        s.put_device_bytes + s.gc_device_bytes
    }

    fn close_window(&mut self) {
        let w = std::mem::take(&mut self.window);
        let total = self.flash_write_bytes();
        self.windows.push(Window {
            end_request: self.requests,
            requests: w.requests,
            hit_ratio: ratio(w.hits, w.requests),
            byte_hit_ratio: ratio(w.hit_bytes, w.request_bytes),
            mean_latency_ms: mean_ms(w.latency_secs, w.requests - w.failed),
            bandwidth_mibps: if w.latency_secs > 0.0 {
                w.request_bytes as f64 / w.latency_secs / 1048576.0
            } else {
                0.0
            },
            failed_devices: self.store.failed_devices().len(),
            flash_write_bytes: total - self.windows_flash_base(),
        });
        self.window.flash_write_base = total;
    }

    fn windows_flash_base(&self) -> u64 {
        self.window.flash_write_base
    }

    /// Ends the replay and reports.
    pub fn finish(mut self) -> ReplayReport {
        if self.window.requests > 0 && self.cfg.window > 0 {
            self.close_window();
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let stats = self.cache.stats();
        let ratios = stats.ratios();
        let flash_read_bytes = self.devices.iter().map(|d| d.io().read_bytes).sum();
        let (held_objects, held_user_bytes) = self.cache.occupancy();
        let held_flash_bytes: u64 = self.store.space().per_scheme.iter().map(|(_, x)| x.live_device_bytes).sum();
        ReplayReport {
            config: self.cfg.name.clone(),
            requests: self.requests,
            gets: self.gets,
            puts: self.puts,
            deletes: self.deletes,
            hits: self.hits,
            hit_ratio: ratio(self.hits, self.gets),
            byte_hit_ratio: ratio(self.hit_bytes, self.request_bytes),
            memory_bytes: self.cfg.cache.memory_bytes,
            memory_hits: stats.memory_hits,
            memory_hit_ratio: ratio(stats.memory_hits, self.gets),
            memory_byte_hit_ratio: ratio(stats.memory_hit_bytes, self.request_bytes),
            clwa: ratios.clwa,
            flwa: ratios.flwa,
            space_efficiency: self.cache.space_efficiency(),
            flash_write_bytes: self.flash_write_bytes(),
            flash_read_bytes,
            backend_read_bytes: self.backend_read_bytes,
            backend_write_bytes: self.flusher.flushed_bytes,
            mean_latency_ms: mean_ms(self.latency_secs, self.requests - self.dirty_lost_reads),
            p99_latency_ms: self.hist.quantile(0.99) * 1e3,
            bandwidth_mibps: if self.latency_secs > 0.0 {
                self.request_bytes as f64 / self.latency_secs / 1048576.0
            } else {
                0.0
            },
            requests_per_s: self.requests as f64 / elapsed.max(1e-9),
            elapsed_s: elapsed,
            failed_devices: self.store.failed_devices().len(),
            dirty_lost: stats.dirty_lost,
            dirty_lost_reads: self.dirty_lost_reads,
            refused_puts: self.refused_puts,
            refused_at_limit: self.refused_at_limit,
            flash_bytes: self.cfg.array.cache_bytes,
            policy_capacity_bytes: self.cfg.cache.capacity_bytes,
            held_objects: held_objects as u64,
            held_user_bytes,
            held_flash_bytes,
            flash_bytes_per_object: if held_objects == 0 { 0.0 } else { held_flash_bytes as f64 / held_objects as f64 },
            cache: stats.to_json(),
            windows: self.windows,
        }
    }
}

/// Mean latency in milliseconds of `served` requests that took `secs` in all.
fn mean_ms(secs: f64, served: u64) -> f64 {
    if served == 0 {
        0.0
    } else {
        secs * 1e3 / served as f64
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
