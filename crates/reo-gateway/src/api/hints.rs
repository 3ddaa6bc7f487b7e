//! `POST /_reo/hints` (submit; answers the `request_id`), `GET /_reo/hints` (the hints in force),
//! `DELETE /_reo/hints/{id}` (withdraw; its pins are released).

use http::StatusCode;

use super::{Api, Reply};
use crate::hints::HintSpec;

pub fn submit(api: &Api, body: &[u8]) -> Reply {
    let spec: HintSpec = match serde_json::from_slice(body) {
        Ok(s) => s,
        Err(e) => return Reply::error(StatusCode::BAD_REQUEST, format!("hint JSON: {e}")),
    };
    match api.hints.submit(spec) {
        Ok(id) => Reply::ok(serde_json::json!({ "request_id": id })),
        Err(e) => Reply::error(StatusCode::BAD_REQUEST, e),
    }
}

pub fn list(api: &Api) -> Reply {
    Reply::ok(serde_json::json!({ "hints": api.hints.list() }))
}

pub fn cancel(api: &Api, id: &str) -> Reply {
    match api.hints.cancel(id) {
        Ok(true) => Reply::ok(serde_json::json!({ "request_id": id, "cancelled": true })),
        Ok(false) => Reply::error(StatusCode::NOT_FOUND, format!("no hint {id:?}")),
        Err(e) => Reply::error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
