//! `/_reo/admin/users` (admins only): `GET` lists the users (no secrets); `POST` with a
//! [`NewUser`] JSON body adds one and answers its key pair, the only time the secret is shown;
//! `DELETE /_reo/admin/users/{name}` removes one; `POST /_reo/admin/users/{name}/rotate` gives it
//! a new secret key and answers the pair.

use http::{Method, StatusCode};
use serde_json::json;

use super::{Api, Reply};
use crate::users::{NewUser, User, UserError};

fn error(e: UserError) -> Reply {
    let status = match e {
        UserError::NotFound(_) => StatusCode::NOT_FOUND,
        UserError::NameTaken(_) | UserError::KeyTaken(_) => StatusCode::CONFLICT,
        UserError::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    Reply::error(status, e.to_string())
}

fn with_secret(u: &User, secret: &str) -> Reply {
    Reply::ok(json!({
        "name": u.name, "role": u.role, "scopes": u.scopes,
        "access_key": u.access_key, "secret_key": secret,
    }))
}

/// `rest` is the path after `/_reo/admin/users`.
pub fn dispatch(api: &Api, method: &Method, rest: &str, body: &[u8]) -> Reply {
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match (method.as_str(), parts.as_slice()) {
        ("GET", []) => {
            let users: Vec<User> = api.users.list().iter().map(|u| (**u).clone()).collect();
            Reply::ok(json!({ "users": users }))
        }
        ("POST", []) => {
            let new: NewUser = match serde_json::from_slice(body) {
                Ok(n) => n,
                Err(e) => return Reply::error(StatusCode::BAD_REQUEST, format!("user JSON: {e}")),
            };
            match api.users.add(new) {
                Ok((u, secret)) => with_secret(&u, &secret),
                Err(e) => error(e),
            }
        }
        ("DELETE", [name]) => match api.users.remove(name) {
            Ok(()) => Reply::ok(json!({ "removed": name })),
            Err(e) => error(e),
        },
        ("POST", [name, "rotate"]) => match api.users.rotate(name) {
            Ok((u, secret)) => with_secret(&u, &secret),
            Err(e) => error(e),
        },
        _ => Reply::error(StatusCode::NOT_FOUND, format!("no API endpoint {method} /_reo/admin/users{rest}")),
    }
}
