//! The peer API (`/_reo/peer/...`), answered only to requests signed with the cluster's secret
//! ([`crate::auth`]):
//!
//! | request | what it does |
//! |---|---|
//! | `GET object?bucket&key&start&end&view` | the home node's bytes and info of an object, granting the caller a caching permission |
//! | `GET head?bucket&key&view` | the same without the bytes |
//! | `POST revoke?bucket&key` | drop the permission and the cached copy (a write at the home node) |
//! | `PUT replica?owner&bucket&key&version&deleted` | store a replica (body: the object, `x-reo-info`: its info) |
//! | `POST drop?owner&bucket&key&version` | drop a replica up to a version (written back) |
//! | `GET inventory?owner` | the replicas held of `owner` (failover) |
//! | `GET replica?owner&bucket&key` | one replica (reads during a failover) |
//! | `POST flush?owner&bucket&key&version` | write the replica back to the backend (failover) |
//! | `POST drop-owner?owner` | drop every replica of `owner` (failover done) |
//! | `POST drop-older?owner&before` | drop the sender's replicas of versions below `before` (made before it started) |
//! | `GET dirty?bucket&key` | this node's unflushed copy of a key (reads during a hand-over) |
//! | `GET unflushed?bucket&prefix&after&limit` | this node's unflushed keys in a listing's range, JSON `[[key, info or null]]` |

use std::sync::Arc;

use bytes::Bytes;
use reo_gateway::gateway::peers::DirtyState;
use reo_gateway::gateway::pending::cache_key;
use reo_gateway::intercept::Answer;

use crate::node::Node;
use crate::peer::{info_hex, parse_info, H_DELETED, H_ERROR, H_INFO, H_VERSION};
use crate::replicas::{ReplicaHeader, Stored};

fn reply(status: u16, headers: &[(&str, String)], body: impl Into<Bytes>) -> Answer {
    let mut b = http::Response::builder().status(status);
    for (k, v) in headers {
        b = b.header(*k, v);
    }
    Ok(b.body(s3s::Body::from(body.into())).expect("valid peer answer"))
}

fn text(status: u16, msg: impl Into<String>) -> Answer {
    reply(status, &[], Bytes::from(msg.into() + "\n"))
}

/// Answers a peer request.
pub async fn handle(node: &Arc<Node>, req: http::Request<s3s::Body>) -> Answer {
    let (parts, mut body) = req.into_parts();
    let pq = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let (from, body_sha) = match node.peers.key().verify(parts.method.as_str(), &pq, &parts.headers) {
        Ok(v) => v,
        Err(e) => return text(403, e.to_string()),
    };
    let limit = usize::try_from(node.cfg.replica_bytes.min(8 << 30)).unwrap_or(usize::MAX);
    let data = match body.store_all_limited(limit).await {
        Ok(b) => b,
        Err(e) => return text(413, format!("peer request body: {e}")),
    };
    if crate::auth::sha256_hex(&data) != body_sha {
        return text(403, "peer request body does not match its signed hash");
    }
    let params: std::collections::HashMap<String, String> =
        reo_gateway::api::query_params(&parts.uri).into_iter().collect();
    let p = |k: &str| params.get(k).cloned().unwrap_or_default();
    let num = |k: &str| params.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let what = parts.uri.path().trim_start_matches("/_reo/peer/").to_string();
    match (parts.method.as_str(), what.as_str()) {
        ("GET", "object") | ("GET", "head") => {
            object(node, &from, &p("bucket"), &p("key"), &p("view"), what == "head", num("start"), num("end")).await
        }
        ("POST", "revoke") => {
            let (bucket, key) = (p("bucket"), p("key"));
            node.holdings.revoke(&cache_key(&bucket, &key));
            // A fetch begun before the write, still in flight, must not cache its older bytes
            // after this answer: they could then be served under a permission granted later.
            node.gw().refuse_older_fills(&bucket, &key);
            // Answered before the cached copy goes: once revoked, no read here serves it (a
            // read finds the holding invalid and drops the copy itself), and a read of this
            // key in flight here may hold the key's stripe while it waits on the home node,
            // which holds its key lock until this answer comes.
            let (n, gw) = (node.clone(), node.gw().clone());
            tokio::spawn(async move { n.blocking(move || gw.drop_clean(&bucket, &key)).await });
            text(200, "revoked")
        }
        ("PUT", "replica") => {
            let Some(info) = parse_info(&parts.headers) else { return text(400, "replica without x-reo-info") };
            let h = ReplicaHeader {
                owner: p("owner"),
                bucket: p("bucket"),
                key: p("key"),
                version: num("version"),
                deleted: p("deleted") == "1",
                info,
                sha256: body_sha,
            };
            if h.owner != from {
                return text(403, "a node replicates only its own writes");
            }
            let n = node.clone();
            match node.blocking(move || n.replicas.put(&h, &data)).await {
                Ok(Stored::Stored | Stored::Superseded) => text(200, "stored"),
                Ok(Stored::Full) => text(507, "the replica area is full"),
                Err(e) => text(500, format!("storing the replica: {e}")),
            }
        }
        ("POST", "drop") => {
            if p("owner") != from {
                return text(403, "a node drops only replicas of its own writes");
            }
            let n = node.clone();
            let (b, k, v) = (p("bucket"), p("key"), num("version"));
            match node.blocking(move || n.replicas.drop_upto(&from, &b, &k, v)).await {
                Ok(_) => text(200, "dropped"),
                Err(e) => text(500, format!("dropping the replica: {e}")),
            }
        }
        ("GET", "inventory") => {
            let inv = node.replicas.inventory(&p("owner"));
            reply(200, &[], serde_json::to_vec(&inv).unwrap_or_default())
        }
        ("GET", "replica") => {
            let n = node.clone();
            let (o, b, k) = (p("owner"), p("bucket"), p("key"));
            match node.blocking(move || n.replicas.get(&o, &b, &k)).await {
                Ok(Some((h, body))) => reply(
                    200,
                    &[
                        (H_INFO, info_hex(&h.info)),
                        (H_VERSION, h.version.to_string()),
                        (H_DELETED, u8::from(h.deleted).to_string()),
                    ],
                    body,
                ),
                Ok(None) => text(404, "no such replica"),
                Err(e) => text(500, format!("reading the replica: {e}")),
            }
        }
        ("POST", "flush") => {
            match crate::failover::flush_local(node, &p("owner"), &p("bucket"), &p("key"), num("version")).await {
                Ok(()) => text(200, "flushed"),
                Err(e) => text(500, e),
            }
        }
        ("POST", "drop-older") => {
            if p("owner") != from {
                return text(403, "a node drops only replicas of its own writes");
            }
            let n = node.clone();
            let before = num("before");
            match node.blocking(move || n.replicas.drop_older(&from, before)).await {
                Ok(_) => text(200, "dropped"),
                Err(e) => text(500, format!("dropping the replicas: {e}")),
            }
        }
        ("POST", "drop-owner") => {
            let n = node.clone();
            let o = p("owner");
            match node.blocking(move || n.replicas.drop_owner(&o)).await {
                Ok(_) => text(200, "dropped"),
                Err(e) => text(500, format!("dropping the replicas: {e}")),
            }
        }
        ("GET", "unflushed") => {
            let gw = node.gw().clone();
            let (b, pre, after) = (p("bucket"), p("prefix"), p("after"));
            let n = usize::try_from(num("limit")).unwrap_or(usize::MAX).clamp(1, crate::listing::MAX_UNFLUSHED);
            let keys = node.blocking(move || gw.unflushed_after(&b, &pre, &after, n)).await;
            reply(200, &[], serde_json::to_vec(&keys).unwrap_or_default())
        }
        ("GET", "dirty") => {
            let gw = node.gw().clone();
            let (b, k) = (p("bucket"), p("key"));
            let r = node
                .blocking(move || match gw.dirty_state(&b, &k) {
                    Some(DirtyState::Deleted) => Ok(Some(None)),
                    Some(DirtyState::Written(_)) => gw.read_dirty(&b, &k).map(|o| o.map(Some)),
                    None => Ok(None),
                })
                .await;
            match r {
                Ok(Some(Some((info, data)))) => reply(200, &[(H_INFO, info_hex(&info))], data),
                Ok(Some(None)) => reply(200, &[(H_DELETED, "1".into())], Bytes::new()),
                Ok(None) => text(404, "not unflushed here"),
                Err(e) => text(500, format!("reading the unflushed copy: {e}")),
            }
        }
        _ => text(404, format!("no peer endpoint {} {what}", parts.method)),
    }
}

#[allow(clippy::too_many_arguments)]
async fn object(
    node: &Arc<Node>,
    from: &str,
    bucket: &str,
    key: &str,
    view: &str,
    head: bool,
    start: u64,
    end: u64,
) -> Answer {
    let v = node.view();
    if view != v.id() {
        return text(409, "the caller's membership differs from this node's; retry");
    }
    if Node::home_of(&v, bucket, key).map(|(h, _)| h).as_deref() != Some(node.me()) {
        return text(409, "this node is not the key's home");
    }
    if node.membership.fenced() {
        return text(503, "this node cannot reach etcd: it serves no object as their home");
    }
    let ck = cache_key(bucket, key);
    // The grant and the read happen between the key's writes, never during one: a write
    // revokes the grants it finds, so a grant made while it runs would outlive it with the
    // older bytes.
    let _order = node.lock_key(&ck).await;
    let gw = node.gw();
    if !v.settled() && gw.dirty_state(bucket, key).is_none() {
        match crate::reads::newest_elsewhere(node, &v, bucket, key).await {
            crate::reads::Elsewhere::Nothing => {}
            crate::reads::Elsewhere::Unanswered(why) => return text(503, why),
            crate::reads::Elsewhere::Found(None) => {
                return reply(404, &[(H_ERROR, "NoSuchKey".into())], "NoSuchKey: deleted")
            }
            crate::reads::Elsewhere::Found(Some((info, data))) => {
                // Served without a permission: the copy is not the home node's own yet.
                let (s, e) = (start.min(info.size) as usize, end.min(info.size) as usize);
                let body = if head { Vec::new() } else { data.get(s..e.max(s)).unwrap_or_default().to_vec() };
                return reply(200, &[(H_INFO, info_hex(&info))], body);
            }
        }
    }
    node.grants.grant(&ck, from, node.cfg.permission);
    let (b, k) = (bucket.to_string(), key.to_string());
    let stale = !node.holdings.valid(&ck, &v.id(), true);
    let r = node
        .blocking(move || {
            if stale {
                gw.drop_clean(&b, &k);
            }
            let _g = gw.read_lock(&b, &k);
            let info = gw.head(&b, &k)?;
            let data = if head { Vec::new() } else { gw.read(&b, &k, &info, start, end.min(info.size))? };
            Ok::<_, s3s::S3Error>((info, data))
        })
        .await;
    match r {
        Ok((info, data)) => reply(200, &[(H_INFO, info_hex(&info))], data),
        Err(e) => {
            let code = e.code().as_str().to_string();
            let status = if code == "NoSuchKey" || code == "NoSuchBucket" { 404 } else { 500 };
            let msg = format!("{code}: {}", e.message().unwrap_or(""));
            reply(status, &[(H_ERROR, code)], Bytes::from(msg))
        }
    }
}
