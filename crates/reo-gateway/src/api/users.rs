//! `/_reo/admin/users` (admins only): `GET` lists the users (no secrets); `POST` with a
//! [`NewUser`] JSON body adds one and answers its key pair, the only time the secret is shown;
//! `DELETE /_reo/admin/users/{name}` removes one; `POST /_reo/admin/users/{name}/rotate` gives it
//! a new secret key and answers the pair.

use http::{Method, StatusCode};

use super::admin_types::{UserKeys, UserList, UserRemoved};
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
    Reply::typed(&UserKeys {
        name: u.name.clone(),
        role: u.role,
        scopes: u.scopes.clone(),
        access_key: u.access_key.clone(),
        secret_key: secret.to_string(),
    })
}

/// `rest` is the path after `/_reo/admin/users`.
pub fn dispatch(api: &Api, method: &Method, rest: &str, body: &[u8]) -> Reply {
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match (method.as_str(), parts.as_slice()) {
        ("GET", []) => {
            let users: Vec<User> = api.users.list().iter().map(|u| (**u).clone()).collect();
            Reply::typed(&UserList { users })
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
            Ok(()) => Reply::typed(&UserRemoved { removed: name.to_string() }),
            Err(e) => error(e),
        },
        ("POST", [name, "rotate"]) => match api.users.rotate(name) {
            Ok((u, secret)) => with_secret(&u, &secret),
            Err(e) => error(e),
        },
        _ => Reply::error(StatusCode::NOT_FOUND, format!("no API endpoint {method} /_reo/admin/users{rest}")),
    }
}
