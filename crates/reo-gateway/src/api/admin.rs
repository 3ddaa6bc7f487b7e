//! `/_reo/admin/...` (signed): `GET status` (devices with health and I/O counts, array I/O, space per scheme, cache occupancy and
//! hit ratio, dirty bytes and flush lag, the backend's state, stuck objects (their bucket missing in the backend), rebuild progress, data-loss events), `POST device/fail?device=N`,
//! `POST device/replace?device=N&path=P[&rate_bps=R]` (a new device file inside the data
//! directory, or a block device on `[server] replacement_devices`; rebuilt in the background at most R bytes per second, else at `reo serve`'s rebuild bandwidth; poll status),
//! `POST flush` (flushes everything written so far, the flush delay notwithstanding; poll status
//! until nothing is dirty), `POST scrub` (with `blobs_restored`: blobs a rebuild had left off a
//! device, restored onto it).

use std::sync::Arc;

use http::{Method, StatusCode};
use reo_media::{FileMedia, FileOptions, Media};
use reo_store::RebuildState;

use super::admin_types::{
    CacheStatus, DeviceFailed, DeviceReplaced, DeviceStatus, Flushing, Rebuild, SchemeSpace, Scrubbed, Space, Status,
    StoreIo,
};
use super::{param, Api, Reply};
use crate::device_files::{confine_replacement, device_path, Replacement, Repoint};

/// Answers `METHOD /_reo/admin/<what>` (status, device fail and replace, flush, scrub, …); the
/// caller has checked that the user is an admin.
pub fn dispatch(api: &Api, method: &Method, what: &str, params: &[(String, String)]) -> Reply {
    match (method.as_str(), what) {
        ("GET", "status") => Reply::typed(&status(api)),
        ("GET", "cluster") => match &api.extension {
            Some(x) => Reply::ok(x.status()),
            None => Reply::error(StatusCode::NOT_FOUND, "this gateway is not in a cluster (no --cluster)"),
        },
        ("POST", "cluster/leave") => match &api.extension {
            Some(x) => match x.leave() {
                Ok(v) => Reply::ok(v),
                Err(e) => Reply::error(StatusCode::SERVICE_UNAVAILABLE, e),
            },
            None => Reply::error(StatusCode::NOT_FOUND, "this gateway is not in a cluster (no --cluster)"),
        },
        ("POST", "device/fail") => fail(api, params),
        ("POST", "device/replace") => replace(api, params),
        ("POST", "flush") => {
            api.gw.flush_now();
            let (objects, bytes) = api.gw.dirty();
            Reply::typed(&Flushing {
                dirty_objects: objects as u64,
                dirty_bytes: bytes,
                backend: api.gw.health.report(),
            })
        }
        ("POST", "scrub") => {
            let Some(r) = api.scrubs.run(|| api.gw.cache.scrub(None)) else {
                return Reply::error(StatusCode::CONFLICT, "a scrub is running; try again when it ends");
            };
            Reply::typed(&Scrubbed {
                blobs: r.blobs,
                chunks_verified: r.chunks_verified,
                chunks_bad: r.chunks_bad,
                chunks_repaired: r.chunks_repaired,
                chunks_skipped: r.chunks_skipped,
                bytes_read: r.bytes_read,
                unrecoverable: r.unrecoverable.len() as u64,
                blobs_restored: r.blobs_restored,
            })
        }
        _ => Reply::error(StatusCode::NOT_FOUND, format!("no admin endpoint {method} {what}")),
    }
}

fn rebuild_state(s: &RebuildState) -> String {
    match s {
        RebuildState::Paused => "paused".into(),
        RebuildState::Running => "running".into(),
        RebuildState::Done => "done".into(),
        RebuildState::Aborted(why) => format!("aborted: {why}"),
    }
}

/// Each device's health, by device: `failed`, `rebuilding` (a rebuild restores it now) or
/// `healthy` (status, `/metrics` and the console say the same).
pub fn device_health(store: &reo_store::Store) -> Vec<&'static str> {
    let failed = store.failed_devices();
    let rebuilding = store.rebuild_progress().filter(|p| p.state == RebuildState::Running).map(|p| p.device);
    (0..store.layout().devices as usize)
        .map(|d| {
            if failed.contains(&d) {
                "failed"
            } else if rebuilding == Some(d) {
                "rebuilding"
            } else {
                "healthy"
            }
        })
        .collect()
}

/// The server's state as `reo admin status` shows it.
pub fn status(api: &Api) -> Status {
    let cache = &api.gw.cache;
    let store = cache.store();
    let rebuild = store.rebuild_progress().or_else(|| api.last_rebuild.lock().as_ref().map(|h| h.progress()));
    let healths = device_health(store);
    let io = api.device_io.snapshot();
    let devices = (0..store.layout().devices as usize)
        .map(|d| {
            let io = match io.get(d) {
                Some(c) => crate::device_io::FIELDS.iter().zip(c).map(|(k, v)| (k.to_string(), *v)).collect(),
                None => Default::default(),
            };
            DeviceStatus { device: d, health: healths[d].into(), io }
        })
        .collect();
    let st = store.stats();
    let space = store.space();
    let per_scheme = space
        .per_scheme
        .iter()
        .map(|(s, sp)| SchemeSpace {
            scheme: s.to_string(),
            bands: sp.bands as u64,
            live_bytes: sp.live_bytes,
            live_device_bytes: sp.live_device_bytes,
            used_device_bytes: sp.used_device_bytes,
        })
        .collect();
    let cs = cache.stats();
    let (objects, bytes) = cache.occupancy();
    let (dirty_objects, dirty_bytes) = api.gw.dirty();
    let hit_ratio = if cs.requests == 0 { 0.0 } else { cs.hits as f64 / cs.requests as f64 };
    Status {
        devices,
        io: StoreIo {
            reads: st.reads,
            read_bytes: st.read_bytes,
            puts: st.puts,
            put_bytes: st.put_bytes,
            degraded_reads: st.degraded_reads,
            read_errors: st.read_errors,
            write_errors: st.write_errors,
            checksum_errors: st.checksum_errors,
            slow_reads: st.slow_reads,
            ejections: st.ejections,
        },
        space: Space {
            capacity: space.capacity,
            free_bands: space.free_bands as u64,
            total_bands: space.total_bands as u64,
            per_scheme,
        },
        cache: CacheStatus {
            objects: objects as u64,
            bytes,
            capacity: cache.config().capacity_bytes,
            requests: cs.requests,
            hits: cs.hits,
            hit_ratio,
            memory_hits: cs.memory_hits,
        },
        dirty_objects: dirty_objects as u64,
        dirty_bytes,
        flush_lag_seconds: api.gw.flush_lag_secs(),
        backend: api.gw.health.report(),
        stuck: api.gw.stuck(),
        rebuild: rebuild.map(|p| Rebuild {
            device: p.device,
            state: rebuild_state(&p.state),
            blobs_done: p.blobs_done,
            blobs_total: p.blobs_total,
            bytes_done: p.bytes_done,
            bytes_total: p.bytes_total,
        }),
        rebuilding: cache.rebuilding(),
        data_loss_events: cs.dirty_lost,
        hints: api.hints.list().len() as u64,
    }
}

fn device_param(api: &Api, params: &[(String, String)]) -> Result<usize, Reply> {
    let n = api.gw.cache.store().layout().devices as usize;
    match param(params, "device").map(str::parse::<usize>) {
        Some(Ok(d)) if d < n => Ok(d),
        Some(Ok(d)) => Err(Reply::error(StatusCode::BAD_REQUEST, format!("device: no device {d} (there are {n})"))),
        _ => Err(Reply::error(StatusCode::BAD_REQUEST, "device: expected a device number")),
    }
}

fn fail(api: &Api, params: &[(String, String)]) -> Reply {
    let d = match device_param(api, params) {
        Ok(d) => d,
        Err(r) => return r,
    };
    match api.gw.cache.fail_device(d) {
        Ok(r) => {
            tracing::warn!(
                device = d,
                lost_dirty = r.lost_dirty,
                lost_clean = r.lost_clean,
                "device failed by command"
            );
            Reply::typed(&DeviceFailed {
                device: d,
                healthy_fragments: r.healthy,
                degraded_fragments: r.degraded,
                lost_clean_fragments: r.lost_clean,
                lost_dirty_fragments: r.lost_dirty,
            })
        }
        Err(e) => Reply::error(StatusCode::CONFLICT, e.to_string()),
    }
}

fn replace(api: &Api, params: &[(String, String)]) -> Reply {
    let d = match device_param(api, params) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let Some(path) = param(params, "path").filter(|p| !p.is_empty()) else {
        return Reply::error(StatusCode::BAD_REQUEST, "path: the replacement device file is missing");
    };
    let rate = match param(params, "rate_bps").map(str::parse::<u64>) {
        None => api.rebuild_bps,
        Some(Ok(r)) if r > 0 => Some(r),
        Some(_) => {
            return Reply::error(
                StatusCode::BAD_REQUEST,
                "rate_bps: expected the rebuild's bandwidth cap as a positive number of bytes per second",
            )
        }
    };
    let target = match confine_replacement(&api.data_dir, path, &api.replacement_devices) {
        Ok(t) => t,
        Err(e) => return Reply::error(StatusCode::BAD_REQUEST, format!("path: {e}")),
    };
    // One replacement at a time: two repointing `devN.img` at once could leave it at a file the
    // other one removed.
    static REPLACING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    let _one = REPLACING.lock();
    // The store's own refusals, checked before any file is touched.
    let store = api.gw.cache.store();
    if !store.failed_devices().contains(&d) {
        return Reply::error(
            StatusCode::CONFLICT,
            format!("device {d} is healthy: only a failed device can be replaced (fail it first)"),
        );
    }
    if let Some(r) = store.rebuild_progress().filter(|p| !p.finished()) {
        return Reply::error(
            StatusCode::CONFLICT,
            format!(
                "device {} is being rebuilt; wait for that rebuild to finish before replacing another device",
                r.device
            ),
        );
    }
    let (opened, path, created) = match target {
        Replacement::NewFile(p) => (FileMedia::create_new(&p, api.device_bytes), p, true),
        Replacement::BlockDevice(p) => {
            (FileMedia::open(&p, &FileOptions { direct: false, create_len: Some(api.device_bytes) }), p, false)
        }
    };
    let media: Arc<dyn Media> = match opened {
        Ok(m) => api.device_io.wrap(d, Arc::new(m)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Reply::error(StatusCode::CONFLICT, format!("path: {} exists already", path.display()))
        }
        Err(e) => return Reply::error(StatusCode::BAD_REQUEST, format!("path: {e}")),
    };
    // Only a file this call created is removed on a failure (never an allow-listed device).
    let discard = |p: &std::path::Path| {
        if created {
            let _ = std::fs::remove_file(p);
        }
    };
    // The name the next start opens leads to the replacement before the store writes to it
    // (`device_files.rs`).
    let repoint = match Repoint::start(&api.data_dir, d, &path) {
        Ok(r) => r,
        Err(e) => {
            discard(&path);
            let dev = device_path(&api.data_dir, d);
            return Reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot point {} at {}: {e}", dev.display(), path.display()),
            );
        }
    };
    match api.gw.cache.replace_device(d, media, rate) {
        Ok(handle) => {
            *api.last_rebuild.lock() = Some(handle);
            if let Err(e) = repoint.commit() {
                tracing::warn!(device = d, "the failed device's file was not removed: {e}");
            }
            tracing::info!(device = d, path = %path.display(), "device replaced; rebuild started");
            Reply::typed(&DeviceReplaced {
                device: d,
                path: path.display().to_string(),
                rebuild: "started".into(),
                rate_bps: rate,
            })
        }
        Err(e) => {
            if let Err(u) = repoint.undo() {
                tracing::error!(device = d, "the device file could not be pointed back at the failed device: {u}");
            }
            discard(&path);
            Reply::error(StatusCode::CONFLICT, e.to_string())
        }
    }
}
