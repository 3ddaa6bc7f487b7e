//! `POST /_reo/hints` (submit; answers the `request_id`), `GET /_reo/hints` (the hints in force),
//! `DELETE /_reo/hints/{id}` (withdraw; its pins are released). A user submits and cancels hints
//! on keys it may write, sees those on keys it may read, and has at most
//! [`MAX_HINTS_PER_USER`] in force whose pins hold at most a quarter of the cache (pins past it
//! are listed in the hint's `pins_refused`); an admin has no scope and no per-user limit.

use http::StatusCode;

use super::{Api, Reply};
use crate::hints::engine::{MAX_HINTS, MAX_HINTS_PER_USER};
use crate::hints::HintSpec;
use crate::users::{Access, Role, User};

/// Whether `user` may read or write every key the hint addresses.
fn may(user: &User, access: Access, spec: &HintSpec) -> bool {
    let b = &spec.bucket;
    match (&spec.key, &spec.prefix, &spec.reorganize) {
        (Some(k), _, _) => user.may_object(access, b, k),
        (None, Some(p), _) => user.may_prefix(access, b, p),
        (None, None, Some(m)) => user.may_prefix(access, b, &m.from) && user.may_prefix(access, b, &m.to),
        (None, None, None) => user.may_prefix(access, b, ""),
    }
}

/// `POST /_reo/hints`: validates and submits the JSON hint in `body`; answers its `request_id`.
pub fn submit(api: &Api, user: &User, body: &[u8]) -> Reply {
    let spec: HintSpec = match serde_json::from_slice(body) {
        Ok(s) => s,
        Err(e) => return Reply::error(StatusCode::BAD_REQUEST, format!("hint JSON: {e}")),
    };
    if !may(user, Access::Write, &spec) {
        return Reply::denied(user, format_args!("hint on {} (outside its scopes)", spec.bucket));
    }
    let admin = user.role == Role::Admin;
    let per_user = if admin { MAX_HINTS } else { MAX_HINTS_PER_USER };
    // A user's pins may hold at most a quarter of the cache: pinned bytes are not evictable.
    let pin_limit = (!admin).then(|| api.gw.cache.config().capacity_bytes / 4);
    match api.hints.submit_for(spec, Some(&user.name), per_user, pin_limit) {
        Ok(id) => Reply::ok(serde_json::json!({ "request_id": id })),
        Err(e) => Reply::error(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

/// `GET /_reo/hints`: the hints in force on keys `user` may read.
pub fn list(api: &Api, user: &User) -> Reply {
    let hints: Vec<_> = api.hints.list().into_iter().filter(|h| may(user, Access::Read, &h.spec)).collect();
    Reply::ok(serde_json::json!({ "hints": hints }))
}

/// `DELETE /_reo/hints/<id>`: withdraws hint `id` (404 if none).
pub fn cancel(api: &Api, user: &User, id: &str) -> Reply {
    let found = api.hints.list().into_iter().find(|h| h.request_id == id);
    if let Some(h) = &found {
        if !may(user, Access::Write, &h.spec) {
            return Reply::denied(user, format_args!("cancel hint {id} (outside its scopes)"));
        }
    }
    match api.hints.cancel(id) {
        Ok(true) => Reply::ok(serde_json::json!({ "request_id": id, "cancelled": true })),
        Ok(false) => Reply::error(StatusCode::NOT_FOUND, format!("no hint {id:?}")),
        Err(e) => Reply::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
