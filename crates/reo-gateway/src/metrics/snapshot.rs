//! [`Snapshot`]: the metrics read from the server's components at each scrape — the store's
//! counters and space, each device's I/O, latency and health, the cache's hits, admissions,
//! evictions and write amplification, classes and their schemes, the gateway's dirty data and
//! flush lag, the backend's state and call latency, rebuild and scrub progress, hints and the
//! cluster. Names and meanings: docs/METRICS.md.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use reo_cache::Class;
use reo_store::RebuildState;

use super::collect::Out;
use crate::api::Api;

/// The scrape-time collector (see the module doc).
pub(super) struct Snapshot(pub Api);

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Snapshot")
    }
}

impl Collector for Snapshot {
    fn encode(&self, encoder: DescriptorEncoder) -> fmt::Result {
        let mut out = Out(encoder);
        store(&self.0, &mut out)?;
        devices(&self.0, &mut out)?;
        cache(&self.0, &mut out)?;
        gateway(&self.0, &mut out)?;
        backend(&self.0, &mut out)?;
        rebuild(&self.0, &mut out)?;
        scrub(&self.0, &mut out)?;
        hints(&self.0, &mut out)?;
        cluster(&self.0, &mut out)
    }
}

fn store(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let store = api.gw.cache.store();
    let st = store.stats();
    let counters: [(&str, &str, u64); 23] = [
        ("reo_store_puts", "Blobs put by users (the cleaner's relocations excluded)", st.puts),
        ("reo_store_put_bytes", "User bytes put (blob lengths)", st.put_bytes),
        ("reo_store_put_device_bytes", "Device bytes written by puts, redundancy included", st.put_device_bytes),
        ("reo_store_frees", "Blobs freed", st.frees),
        ("reo_store_reads", "Blob reads (whole blobs or ranges)", st.reads),
        ("reo_store_read_bytes", "User bytes blob reads asked for", st.read_bytes),
        ("reo_store_degraded_reads", "Reads that needed a copy or a reconstruction", st.degraded_reads),
        ("reo_store_reconstructed_chunks", "Chunks rebuilt from copies or parity for reads", st.reconstructed_chunks),
        ("reo_store_checksum_errors", "Chunks whose checksum did not match", st.checksum_errors),
        ("reo_store_read_errors", "Device reads that failed with an I/O error", st.read_errors),
        ("reo_store_slow_reads", "Reads past the slow-read deadline, served from the other devices", st.slow_reads),
        ("reo_store_write_errors", "Device writes or syncs that failed", st.write_errors),
        ("reo_store_gc_runs", "Cleaning passes (one band each)", st.gc_runs),
        ("reo_store_gc_relocated_blobs", "Blobs the cleaner moved to another band", st.gc_relocated_blobs),
        ("reo_store_gc_relocated_bytes", "User bytes the cleaner moved", st.gc_relocated_bytes),
        ("reo_store_gc_device_bytes", "Device bytes the cleaner wrote", st.gc_device_bytes),
        ("reo_store_gc_dropped_blobs", "Blobs the cleaner dropped (GC-based eviction)", st.gc_dropped_blobs),
        ("reo_store_journal_batches", "Metadata journal batches written (group commits)", st.journal_batches),
        (
            "reo_store_journal_device_bytes",
            "Device bytes of metadata: journal and checkpoints",
            st.journal_device_bytes,
        ),
        ("reo_store_checkpoints", "Metadata checkpoints written", st.checkpoints),
        ("reo_store_ejections", "Devices ejected by the error budget", st.ejections),
        ("reo_store_rebuilt_blobs", "Blobs whose chunks on a replaced device were rebuilt", st.rebuilt_blobs),
        (
            "reo_store_rebuild_device_bytes",
            "Device bytes the rebuild wrote to replaced devices",
            st.rebuild_device_bytes,
        ),
    ];
    for (name, help, v) in counters {
        out.counter(name, help, v)?;
    }
    let space = store.space();
    out.gauge("reo_store_capacity_bytes", "Device bytes of the array's data bands", space.capacity)?;
    out.gauge("reo_store_bands", "Bands of the array", space.total_bands as u64)?;
    out.gauge("reo_store_free_bands", "Bands holding nothing", space.free_bands as u64)?;
    let room = store.metadata_room();
    out.gauge("reo_store_metadata_used_bytes", "Bytes a checkpoint of the live blobs takes", room.used)?;
    out.gauge(
        "reo_store_metadata_limit_bytes",
        "Checkpoint bytes puts may fill; past it the cache evicts to make room",
        room.limit,
    )?;
    let per = |f: fn(&reo_store::SchemeSpace) -> u64| -> Vec<([(&str, String); 1], u64)> {
        space.per_scheme.iter().map(|(s, sp)| ([("scheme", s.to_string())], f(sp))).collect()
    };
    out.gauges("reo_store_scheme_bands", "Bands written in each redundancy scheme", &per(|s| s.bands as u64))?;
    out.gauges("reo_store_scheme_live_bytes", "User bytes of live blobs, by scheme", &per(|s| s.live_bytes))?;
    out.gauges(
        "reo_store_scheme_live_device_bytes",
        "Device bytes of live blobs (copies, parity, padding), by scheme",
        &per(|s| s.live_device_bytes),
    )?;
    out.gauges(
        "reo_store_scheme_used_device_bytes",
        "Device bytes of the scheme's bands in use, dead blobs included (what cleaning reclaims)",
        &per(|s| s.used_device_bytes),
    )
}

fn devices(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let store = api.gw.cache.store();
    let failed = store.failed_devices();
    let healths = crate::api::admin::device_health(store);
    let n = healths.len();
    let label = |d: usize| [("device", d.to_string())];
    let mut states = Vec::with_capacity(3 * n);
    for (d, &now) in healths.iter().enumerate() {
        for s in ["healthy", "rebuilding", "failed"] {
            states.push(([("device", d.to_string()), ("state", s.to_string())], u64::from(s == now)));
        }
    }
    out.gauges("reo_device_state", "1 for each device's current health state (healthy, rebuilding, failed)", &states)?;
    out.gauges(
        "reo_device_failed",
        "1 if the device has failed",
        &(0..n).map(|d| (label(d), u64::from(failed.contains(&d)))).collect::<Vec<_>>(),
    )?;
    let io = api.device_io.snapshot();
    let helps = [
        "Read calls to the device",
        "Bytes read from the device",
        "Write calls to the device",
        "Bytes written to the device",
        "Sync (fdatasync) calls to the device",
        "Device calls that failed",
    ];
    for (i, (field, help)) in crate::device_io::FIELDS.iter().zip(helps).enumerate() {
        let items: Vec<_> = io.iter().enumerate().map(|(d, c)| (label(d), c[i])).collect();
        out.counters(&format!("reo_device_{field}"), help, &items)?;
    }
    let mut latency = Vec::new();
    for (d, hs) in api.device_io.latency().into_iter().enumerate() {
        for (call, h) in crate::device_io::CALLS.iter().zip(hs) {
            latency.push(([("device", d.to_string()), ("call", call.to_string())], h));
        }
    }
    out.histograms(
        "reo_device_io_duration_seconds",
        "Time of one device call, by device and call (read, write, sync)",
        &latency,
    )
}

fn cache(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let cache = &api.gw.cache;
    let cs = cache.stats();
    let counters: [(&str, &str, u64); 24] = [
        ("reo_cache_requests", "Read requests (GET of a byte range)", cs.requests),
        ("reo_cache_hits", "Read requests served wholly from the cache (memory tier or flash)", cs.hits),
        ("reo_cache_misses", "Read requests not served wholly from the cache", cs.requests.saturating_sub(cs.hits)),
        ("reo_cache_request_bytes", "Bytes read requests asked for", cs.request_bytes),
        ("reo_cache_hit_bytes", "Requested bytes served from the cache (partial hits included)", cs.hit_bytes),
        ("reo_cache_backend_read_bytes", "Bytes fetched from the backend on misses", cs.backend_read_bytes),
        ("reo_cache_original_write_bytes", "Bytes clients wrote", cs.original_write_bytes),
        ("reo_cache_write_bytes", "User bytes written to flash for the cache (fills and writes)", cs.cache_write_bytes),
        ("reo_cache_writes", "Blobs written for the cache", cs.cache_writes),
        ("reo_cache_gc_write_bytes", "User bytes the cleaner relocated", cs.gc_write_bytes),
        ("reo_cache_device_write_bytes", "Device bytes written for cache and cleaner writes", cs.device_write_bytes),
        ("reo_cache_dedup_hits", "Fragments served through the dedup cache", cs.dedup_hits),
        ("reo_cache_dedup_saved_writes", "Writes whose content was already on flash", cs.dedup_saved_writes),
        ("reo_cache_full_rejections", "Inserts refused because everything was pinned or dirty", cs.full_rejections),
        ("reo_cache_class_changes", "Objects whose class changed (hot and cold)", cs.class_changes),
        ("reo_cache_reencoded_bytes", "User bytes moved to their class's scheme", cs.reencoded_bytes),
        (
            "reo_cache_wasted_write_bytes",
            "User bytes written to flash and freed without being installed",
            cs.wasted_write_bytes,
        ),
        (
            "reo_cache_flushed_dropped",
            "Flushed objects dropped for want of room for their clean copy",
            cs.flushed_dropped,
        ),
        (
            "reo_cache_cleaned_in_place_bytes",
            "User bytes of flushed objects made clean in place, without a rewrite",
            cs.cleaned_in_place_bytes,
        ),
        (
            "reo_cache_lost_clean_fragments",
            "Clean fragments lost with their devices (refetched on demand)",
            cs.lost_clean_fragments,
        ),
        ("reo_cache_dirty_lost", "Dirty fragments unreadable beyond their redundancy: data-loss events", cs.dirty_lost),
        ("reo_cache_raced_reads", "Reads whose blob moved under them and were retried", cs.raced_reads),
        ("reo_cache_memory_admissions", "Object copies the memory tier took", cs.memory_admissions),
        ("reo_cache_memory_evictions", "Object copies the memory tier's SIEVE pushed out", cs.memory_evictions),
    ];
    for (name, help, v) in counters {
        out.counter(name, help, v)?;
    }
    let by_class = |pc: &reo_cache::stats::PerClass| -> Vec<([(&str, &str); 1], u64)> {
        Class::ALL.iter().map(|&c| ([("class", super::class_name(c))], pc.get(c))).collect()
    };
    let by_tier =
        |memory: u64, all: u64| [([("tier", "memory")], memory), ([("tier", "flash")], all.saturating_sub(memory))];
    out.counters(
        "reo_cache_tier_hits",
        "Read requests served wholly from the cache, by tier (memory: no device read)",
        &by_tier(cs.memory_hits, cs.hits),
    )?;
    out.counters(
        "reo_cache_tier_hit_bytes",
        "Bytes served from the cache, by tier",
        &by_tier(cs.memory_hit_bytes, cs.hit_bytes),
    )?;
    out.counters(
        "reo_cache_class_hits",
        "Read requests served wholly from flash, by class",
        &by_class(&cs.hits_by_class),
    )?;
    out.counters("reo_cache_class_hit_bytes", "Bytes served from flash, by class", &by_class(&cs.hit_bytes_by_class))?;
    out.counters(
        "reo_cache_evictions",
        "Fragments evicted, by cause (policy: the replacement policy; gc: the cleaner under GC-based eviction)",
        &[([("cause", "policy")], cs.evictions), ([("cause", "gc")], cs.gc_evictions)],
    )?;
    let a = &cs.admission;
    let outcomes = |admitted, rejected, throttled| {
        [
            ([("outcome", "admitted")], admitted),
            ([("outcome", "rejected")], rejected),
            ([("outcome", "throttled")], throttled),
        ]
    };
    out.counters(
        "reo_cache_admission_decisions",
        "Admission decisions, by outcome",
        &outcomes(a.admitted, a.rejected, a.throttled),
    )?;
    out.counters(
        "reo_cache_admission_bytes",
        "Bytes of admission decisions, by outcome",
        &outcomes(a.admitted_bytes, a.rejected_bytes, a.throttled_bytes),
    )?;
    out.counters(
        "reo_cache_admission_rejections",
        "Admission rejections, by reason",
        &named_counts(&a.rejected_by, "reason"),
    )?;
    out.counters(
        "reo_cache_admission_throttles",
        "Admissions throttled by the write budget, by kind",
        &named_counts(&a.throttled_by, "kind"),
    )?;
    let (objects, bytes) = cache.occupancy();
    out.gauge("reo_cache_objects", "Objects in the cache's index", objects as u64)?;
    out.gauge("reo_cache_bytes", "User bytes the replacement policy holds", bytes)?;
    out.gauge("reo_cache_capacity_bytes", "The cache's capacity in user bytes", cache.config().capacity_bytes)?;
    let (copies, used, capacity) = cache.memory_occupancy();
    out.gauge("reo_cache_memory_objects", "Object copies in the memory tier", copies as u64)?;
    out.gauge("reo_cache_memory_bytes", "Bytes the memory tier's copies count against its capacity", used)?;
    out.gauge("reo_cache_memory_capacity_bytes", "The memory tier's capacity in bytes (0: off)", capacity)?;
    let r = cs.ratios();
    out.gauge("reo_cache_hit_ratio", "Hits / read requests since start", r.hit_ratio)?;
    out.gauge("reo_cache_byte_hit_ratio", "Hit bytes / requested bytes since start", r.byte_hit_ratio)?;
    if let Some(clwa) = r.clwa {
        out.gauge("reo_cache_clwa_ratio", "Cache-layer write amplification: cache writes / client writes", clwa)?;
    }
    if let Some(flwa) = r.flwa {
        out.gauge(
            "reo_cache_flwa_ratio",
            "Flash-layer write amplification: (cache + cleaner writes) / cache writes",
            flwa,
        )?;
    }
    out.gauge(
        "reo_cache_hot_threshold",
        "H_hot: clean objects with Freq/Size at least this are hot (+Inf: none)",
        cache.hot_threshold(),
    )?;
    out.gauge(
        "reo_cache_space_efficiency_ratio",
        "User bytes cached / device bytes they occupy",
        cache.space_efficiency(),
    )?;
    let occ = api.occupancy.of(cache);
    let classes = |f: fn(&(u64, u64)) -> u64| -> Vec<([(&str, &str); 1], u64)> {
        Class::ALL.iter().map(|&c| ([("class", super::class_name(c))], f(&occ[c as usize]))).collect()
    };
    out.gauges("reo_cache_class_objects", "Objects in the index, by class", &classes(|o| o.0))?;
    out.gauges("reo_cache_class_object_bytes", "Sizes of the objects in the index, by class", &classes(|o| o.1))?;
    let schemes = cache.class_schemes();
    let info: Vec<_> = Class::ALL
        .iter()
        .map(|&c| ([("class", super::class_name(c).to_string()), ("scheme", schemes.of(c).to_string())], 1u64))
        .collect();
    out.gauges("reo_cache_class_scheme_info", "The redundancy scheme of each class (value 1)", &info)
}

/// The fields of a serializable struct of counts as `(label, count)` pairs (reasons and kinds
/// follow the struct: a new one appears without a change here).
fn named_counts<T: serde::Serialize>(t: &T, label: &'static str) -> Vec<([(&'static str, String); 1], u64)> {
    match serde_json::to_value(t) {
        Ok(serde_json::Value::Object(m)) => {
            m.into_iter().filter_map(|(k, v)| v.as_u64().map(|v| ([(label, k)], v))).collect()
        }
        _ => Vec::new(),
    }
}

fn gateway(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let gw = &api.gw;
    let c = gw.counters();
    let counters: [(&str, &str, u64); 9] = [
        ("reo_gateway_flushed_objects", "Objects written back to the backend by the flusher", c.flushed_objects),
        ("reo_gateway_flushed_bytes", "Bytes of the objects written back", c.flushed_bytes),
        ("reo_gateway_flush_errors", "Flush attempts that failed (retried)", c.flush_errors),
        (
            "reo_gateway_flushes_abandoned",
            "Streamed flushes given up because the object changed meanwhile",
            c.flushes_abandoned,
        ),
        ("reo_gateway_write_around", "Writes sent to the backend without a copy on flash", c.write_around),
        ("reo_gateway_flushed_deletes", "Write-back deletes applied in the backend", c.flushed_deletes),
        ("reo_gateway_slowdowns", "Writes refused with 503 SlowDown", c.slowdowns),
        ("reo_gateway_backend_reads", "Object reads sent to the backend (cache misses)", c.backend_reads),
        (
            "reo_gateway_worker_flash_reads",
            "Small GETs read from flash by the async worker that received them",
            c.worker_flash_reads,
        ),
    ];
    for (name, help, v) in counters {
        out.counter(name, help, v)?;
    }
    out.counter("reo_gateway_denied_requests", "Requests answered 401 or 403", api.denials.total())?;
    out.gauge("reo_gateway_body_bytes_in_memory", "Request body bytes held in memory now", api.budget.used())?;
    out.gauge("reo_gateway_memory_budget_bytes", "The bound on request body bytes in memory", api.budget.limit())?;
    out.counter(
        "reo_gateway_memory_budget_refusals",
        "Requests refused because the body budget was spent",
        api.budget.refused(),
    )?;
    let (objects, bytes) = gw.dirty();
    out.gauge("reo_gateway_dirty_objects", "Unflushed (dirty) objects", objects as u64)?;
    out.gauge("reo_gateway_dirty_bytes", "Bytes of unflushed objects", bytes)?;
    out.gauge("reo_gateway_flush_lag_seconds", "Age of the oldest unflushed write", gw.flush_lag_secs())?;
    let stuck = gw.stuck();
    out.gauge("reo_gateway_stuck_objects", "Dirty objects the backend refuses (their bucket gone)", stuck.objects)?;
    out.gauge("reo_gateway_stuck_bytes", "Bytes of stuck objects", stuck.bytes)?;
    out.gauge("reo_gateway_stuck_buckets", "Buckets with stuck objects", stuck.buckets.len() as u64)
}

fn backend(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let h = api.gw.health.report();
    out.gauge("reo_backend_up", "1 when no backend call failed since it last served one", u64::from(h.up))?;
    out.gauge("reo_backend_reachable", "1 when requests are let through to the backend", u64::from(h.reachable))?;
    out.gauge("reo_backend_down_seconds", "Length of the current backend outage (0 when up)", h.down_seconds)?;
    out.counter("reo_backend_failures", "Backend calls that failed", h.failures)?;
    out.gauge(
        "reo_backend_slowing_down",
        "1 when write-back PUTs get SlowDown because of the outage",
        u64::from(h.slowing_down),
    )?;
    let calls = &api.gw.backend_calls;
    let duration = calls.duration();
    let errors = calls.errors();
    let ops = [
        "list_buckets",
        "create_bucket",
        "head_bucket",
        "delete_bucket",
        "put",
        "head",
        "get",
        "delete",
        "list",
        "advise",
    ];
    let lat: Vec<_> = ops.iter().map(|&op| ([("op", op)], duration.get_or_create(&op_label(op)).clone())).collect();
    out.histograms(
        "reo_backend_request_duration_seconds",
        "Time of one backend call to its first answer, by operation",
        &lat,
    )?;
    let errs: Vec<_> = ops.iter().map(|&op| ([("op", op)], errors.get_or_create(&op_label(op)).get())).collect();
    out.counters("reo_backend_request_errors", "Backend calls that failed, by operation", &errs)
}

fn op_label(op: &'static str) -> crate::gateway::backend_calls::CallLabel {
    crate::gateway::backend_calls::CallLabel { op }
}

fn rebuild(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let store = api.gw.cache.store();
    let p = store.rebuild_progress().or_else(|| api.last_rebuild.lock().as_ref().map(|h| h.progress()));
    let running = p.as_ref().is_some_and(|p| p.state == RebuildState::Running);
    out.gauge("reo_rebuild_running", "1 while a rebuild restores a replaced device", u64::from(running))?;
    let Some(p) = p else { return Ok(()) };
    out.gauge("reo_rebuild_device", "The device the current or last rebuild restores", p.device as u64)?;
    out.gauge("reo_rebuild_done_bytes", "Bytes the current or last rebuild has restored", p.bytes_done)?;
    out.gauge("reo_rebuild_planned_bytes", "Bytes the current or last rebuild restores in all", p.bytes_total)?;
    out.gauge("reo_rebuild_rate_bytes_per_second", "The rebuild's restore rate", p.rate)?;
    let class = |c: &u8| Class::ALL.get(usize::from(*c)).map_or("other", |&c| super::class_name(c));
    let per = |f: fn(&reo_store::ClassProgress) -> u64| -> Vec<([(&str, &str); 1], u64)> {
        p.classes.iter().map(|(c, cp)| ([("class", class(c))], f(cp))).collect()
    };
    out.gauges(
        "reo_rebuild_class_done_bytes",
        "Bytes restored, by class (restored in class order)",
        &per(|c| c.bytes_done),
    )?;
    out.gauges("reo_rebuild_class_planned_bytes", "Bytes to restore, by class", &per(|c| c.bytes_total))?;
    out.gauges("reo_rebuild_class_lost_blobs", "Blobs that could not be restored, by class", &per(|c| c.blobs_lost))
}

fn scrub(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let s = api.scrubs.snapshot();
    out.gauge("reo_scrub_running", "1 while a scrub verifies the array", u64::from(s.running))?;
    out.counter("reo_scrub_runs", "Scrubs completed", s.runs)?;
    out.counter("reo_scrub_verified_chunks", "Chunks scrubs verified", s.chunks_verified)?;
    out.counter("reo_scrub_bad_chunks", "Chunks scrubs found bad", s.chunks_bad)?;
    out.counter("reo_scrub_repaired_chunks", "Chunks scrubs repaired", s.chunks_repaired)?;
    out.counter("reo_scrub_unrecoverable_blobs", "Blobs scrubs found beyond their redundancy", s.unrecoverable)?;
    out.gauge(
        "reo_scrub_last_end_timestamp_seconds",
        "When the last scrub ended (Unix time; 0: never)",
        s.last_end_unix,
    )
}

fn hints(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let h = api.hints.counters();
    let counters: [(&str, &str, u64); 9] = [
        ("reo_hints_submitted", "Hints submitted", h.submitted),
        ("reo_hints_applied", "Hints applied", h.applied),
        ("reo_hints_expired", "Hints that expired", h.expired),
        ("reo_hints_prefetched_objects", "Objects prefetched for hints", h.prefetched_objects),
        ("reo_hints_prefetched_bytes", "Bytes prefetched for hints", h.prefetched_bytes),
        ("reo_hints_throttle_waits", "Waits of the promote throttle", h.throttle_waits),
        ("reo_hints_reorganized_bytes", "Bytes moved by hints to another class", h.reorganized_bytes),
        ("reo_hints_backend_advised", "Hints passed on to the backend as advice", h.backend_advised),
        ("reo_hints_errors", "Hints that failed", h.errors),
    ];
    for (name, help, v) in counters {
        out.counter(name, help, v)?;
    }
    out.gauge("reo_hints_in_force", "Hints in force", api.hints.list().len() as u64)
}

/// What the cluster's counters count (they come from the cluster layer as named numbers).
const CLUSTER_COUNTERS: [(&str, &str); 12] = [
    ("forwarded_writes", "Writes sent on to their home node"),
    ("permission_hits", "Reads of objects homed elsewhere served from this node's cache"),
    ("home_fetches", "Reads fetched from their home node"),
    ("revocations", "Read permissions revoked by writes at this node"),
    ("revocations_waited", "Revocations that waited for a permission to expire"),
    ("replicas_sent", "Replicas of dirty writes sent to peers"),
    ("replica_failures", "Replica sends that failed (another peer was tried)"),
    ("under_replicated", "Writes refused because fewer than min_replicas copies could be made"),
    ("replica_drops", "Replicas dropped at their holders after a write-back"),
    (
        "copies_restored",
        "Unflushed writes replicated again at a membership change (a holder of a copy left, or this node restarted)",
    ),
    ("failover_flushed", "Objects written back by failovers this node coordinated"),
    ("failovers", "Failovers this node coordinated"),
];

fn cluster(api: &Api, out: &mut Out<'_>) -> fmt::Result {
    let Some(x) = &api.extension else { return Ok(()) };
    let s = x.status();
    if let Some(counters) = s["counters"].as_object() {
        for (k, v) in counters {
            let help =
                CLUSTER_COUNTERS.iter().find(|(n, _)| n == k).map_or("Cluster events (docs/CLUSTER.md)", |(_, h)| h);
            out.counter(&format!("reo_cluster_{k}"), help, v.as_u64().unwrap_or(0))?;
        }
    }
    let flag = |v: &serde_json::Value| u64::from(v.as_bool().unwrap_or(false));
    out.gauge("reo_cluster_fenced", "1 while this node's lease is lost and it refuses writes", flag(&s["fenced"]))?;
    out.gauge("reo_cluster_settled", "1 when the membership view is settled", flag(&s["settled"]))?;
    out.gauge("reo_cluster_etcd_up", "1 when etcd answers", flag(&s["etcd_up"]))?;
    out.gauge("reo_cluster_members", "Members in the view", s["members"].as_array().map_or(0, Vec::len) as u64)?;
    out.gauge(
        "reo_cluster_pending_failovers",
        "Failed members whose dirty data awaits a failover",
        s["pending_failover"].as_array().map_or(0, Vec::len) as u64,
    )?;
    out.gauge(
        "reo_cluster_replica_objects",
        "Replicas this node holds for others",
        s["replicas"]["objects"].as_u64().unwrap_or(0),
    )?;
    out.gauge(
        "reo_cluster_replica_bytes",
        "Bytes of the replicas this node holds",
        s["replicas"]["bytes"].as_u64().unwrap_or(0),
    )?;
    out.gauge(
        "reo_cluster_replicated_objects",
        "This node's dirty objects with replicas elsewhere",
        s["replicated_objects"].as_u64().unwrap_or(0),
    )
}
