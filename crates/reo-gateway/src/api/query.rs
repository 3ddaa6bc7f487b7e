//! `GET /_reo/query?bucket=B&key=K` or `?bucket=B&prefix=P`: what the cache holds of each object
//! — cached bytes, class, schemes, dirty, access (degraded…), devices, Freq and H, pin, the hints
//! (leases) covering it — and the engine's sense code. A user queries the keys it may read.

use http::StatusCode;
use serde_json::json;

use super::{param, Api, Reply};
use crate::gateway::pending::cache_key;
use crate::users::{Access, User};

/// Most objects one prefix query lists.
const LIMIT: usize = 1000;

/// `GET /_reo/query`: what the cache holds of `key`, or of up to 1000 objects under `prefix`.
pub fn query(api: &Api, user: &User, params: &[(String, String)]) -> Reply {
    let Some(bucket) = param(params, "bucket") else {
        return Reply::error(StatusCode::BAD_REQUEST, "bucket: missing");
    };
    if !crate::hints::bucket_name_safe(bucket) {
        return Reply::error(StatusCode::BAD_REQUEST, "bucket: must not contain '/' or control characters");
    }
    let keys: Vec<String> = match (param(params, "key"), param(params, "prefix")) {
        (Some(k), None) if !user.may_object(Access::Read, bucket, k) => {
            return Reply::denied(user, format_args!("query {bucket}/{k}"));
        }
        (None, Some(p)) if !user.may_prefix(Access::Read, bucket, p) => {
            return Reply::denied(user, format_args!("query {bucket}/{p}*"));
        }
        (Some(k), None) => vec![k.to_string()],
        (None, Some(p)) => {
            let mut keys: Vec<String> = match api.gw.backend.list(bucket, p, "", LIMIT) {
                Ok(v) => v.into_iter().map(|e| e.key).collect(),
                Err(e) => return Reply::error(StatusCode::NOT_FOUND, format!("listing {bucket}: {e:?}")),
            };
            keys.extend(api.gw.pending().in_bucket(bucket, p).into_iter().map(|(k, _)| k));
            keys.sort();
            keys.dedup();
            keys.truncate(LIMIT);
            keys
        }
        _ => return Reply::error(StatusCode::BAD_REQUEST, "key, prefix: give exactly one"),
    };
    let fs = api.gw.cache.config().fragment_size;
    let objects: Vec<serde_json::Value> = keys
        .iter()
        .map(|key| {
            let ck = cache_key(bucket, key);
            let leases: Vec<serde_json::Value> = api
                .hints
                .covering(bucket, key)
                .into_iter()
                .map(|h| {
                    json!({"request_id": h.request_id, "app_id": h.spec.app_id, "intent": h.spec.intent,
                           "state": h.state, "lease": h.spec.lease})
                })
                .collect();
            let (Some(st), Some(info)) = (api.gw.cache.status(ck.as_bytes()), api.gw.cache.info(ck.as_bytes())) else {
                return json!({"key": key, "cached": false, "cached_bytes": 0, "pinned": false, "dirty": false, "leases": leases});
            };
            let cached_bytes = (st.cached_fragments * fs).min(st.size);
            json!({
                "key": key, "cached": st.cached_fragments > 0, "size": st.size, "cached_bytes": cached_bytes,
                "class": st.class, "schemes": st.schemes, "dirty": st.dirty,
                "degraded": st.access != reo_cache::Access::Accessible, "access": st.access,
                "devices": st.devices, "freq": st.freq, "h": st.hotness, "pinned": info.pinned,
                "leases": leases, "sense": st.sense, "sense_code": st.sense.code(),
            })
        })
        .collect();
    let sense = api.gw.cache.engine_sense(false, 0);
    Reply::ok(json!({"bucket": bucket, "objects": objects, "sense": sense, "sense_code": sense.code()}))
}
