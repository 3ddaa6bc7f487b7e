//! Writes at the home node: the key's writes in order, every caching permission on it revoked
//! before the write is applied, and an unflushed result replicated to `replicas − 1` peers
//! before it is acknowledged ([`home_write`]). Replica targets are chosen by the seed's rule,
//! free replica space over the degree of replication: `benefit = f / (1 + r)` with `f` the
//! bytes a peer can still take and `r` the replicas it holds; the key's previous targets come
//! first (their older copy is replaced in place). Once the owner has written an object back,
//! its replicas are dropped ([`drop_flushed`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::join_all;
use reo_gateway::backend::ObjectInfo;
use reo_gateway::gateway::peers::DirtyState;
use reo_gateway::gateway::pending::cache_key;
use reo_gateway::intercept::{Answer, LocalService};

use crate::answers::slowdown;
use crate::node::{Node, Replicated};
use crate::peer::H_INFO;
use crate::view::View;

/// Query-string encoding of a value.
pub(crate) fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A write at its home node (see the module doc).
pub async fn home_write(
    node: &Arc<Node>,
    req: http::Request<s3s::Body>,
    local: LocalService,
    (bucket, key): (&str, &str),
    changes: bool,
    view: &str,
) -> Answer {
    let ck = cache_key(bucket, key);
    let _order = node.lock_key(&ck).await;
    if changes {
        revoke(node, bucket, key).await;
    }
    let _applying = match node.applying(view).await {
        Ok(g) => g,
        Err(why) => return slowdown(why),
    };
    let sent = Instant::now();
    let resp = local(req).await?;
    if !changes || !resp.status().is_success() {
        return Ok(resp);
    }
    // This node's copy is the key's newest for as long as it stays home in the membership the
    // write was routed in (a later one moves the key, and the mark with it).
    node.holdings.install(&ck, sent, view, true);
    match sync_replicas(node, bucket, key).await {
        Ok(()) => Ok(resp),
        Err(why) => {
            // The write is durable here but not on enough peers: it is reported failed and
            // written back at once.
            node.count(|c| c.under_replicated += 1);
            node.gw().flush_now();
            slowdown(why)
        }
    }
}

/// Revokes every caching permission granted on the key: each holder is told, and waited for
/// until it acknowledges or its permission has expired.
pub(crate) async fn revoke(node: &Arc<Node>, bucket: &str, key: &str) {
    let ck = cache_key(bucket, key);
    let grants = node.grants.take(&ck);
    if grants.is_empty() {
        return;
    }
    let view = node.view();
    let pq = format!("/_reo/peer/revoke?bucket={}&key={}", enc(bucket), enc(key));
    let waits = grants.into_iter().map(|(holder, until)| {
        let addr = view.members.get(&holder).map(|m| m.advertise.clone());
        let pq = pq.clone();
        async move {
            let until = tokio::time::Instant::from_std(until);
            if let Some(addr) = addr {
                while tokio::time::Instant::now() < until {
                    let call = node.peers.call(&holder, &addr, http::Method::POST, &pq, &[], Bytes::new());
                    if let Ok(Ok(_)) = tokio::time::timeout_at(until, call).await {
                        return false;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            tokio::time::sleep_until(until).await;
            true
        }
    });
    let waited = join_all(waits).await;
    let n = waited.len() as u64;
    let w = waited.into_iter().filter(|w| *w).count() as u64;
    node.count(|c| {
        c.revocations += n;
        c.revocations_waited += w;
    });
}

/// Peers to replicate to, best first: the key's previous targets, then by `f / (1 + r)`.
pub(crate) fn targets(view: &View, me: &str, previous: &[String], size: u64) -> Vec<(String, String)> {
    let mut c: Vec<(bool, f64, String, String)> = view
        .members
        .iter()
        .filter(|(id, m)| id.as_str() != me && m.replica_free >= size)
        .map(|(id, m)| {
            let benefit = m.replica_free as f64 / (1.0 + m.replicas_held as f64);
            (previous.contains(id), benefit, id.clone(), m.advertise.clone())
        })
        .collect();
    c.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
    c.into_iter().map(|(_, _, id, addr)| (id, addr)).collect()
}

/// Brings the key's replicas in line with its unflushed state here: replicated anew if
/// unflushed, dropped if not. `Err`: fewer than `min_replicas` copies could be made.
pub(crate) async fn sync_replicas(node: &Arc<Node>, bucket: &str, key: &str) -> Result<(), String> {
    let need = node.cfg.replicas - 1;
    let ck = cache_key(bucket, key);
    let gw = node.gw().clone();
    let (b, k) = (bucket.to_string(), key.to_string());
    let state = node
        .blocking(move || match gw.dirty_state(&b, &k) {
            Some(DirtyState::Written(_)) => gw.read_dirty(&b, &k).map(|o| o.map(|(i, d)| (false, i, d))),
            Some(DirtyState::Deleted) => Ok(Some((true, ObjectInfo::default(), Vec::new()))),
            None => Ok(None),
        })
        .await
        .map_err(|e| format!("reading the written object back: {e}"))?;
    let Some((deleted, info, data)) = state else {
        drop_replicas(node, bucket, key).await;
        return Ok(());
    };
    if need == 0 {
        return Ok(());
    }
    let version = node.next_version(&ck);
    let (previous, mut stale) =
        node.replicated.lock().get(&ck).map(|r| (r.targets.clone(), r.stale.clone())).unwrap_or_default();
    let view = node.view();
    let candidates = targets(&view, node.me(), &previous, data.len() as u64);
    let info_hex = reo_gateway::hex::hex(&serde_json::to_vec(&info).unwrap_or_default());
    let pq = format!(
        "/_reo/peer/replica?owner={}&bucket={}&key={}&version={version}&deleted={}",
        enc(node.me()),
        enc(bucket),
        enc(key),
        u8::from(deleted)
    );
    let body = Bytes::from(data);
    let send = |id: String, addr: String| {
        let (pq, body, info_hex) = (pq.clone(), body.clone(), info_hex.clone());
        async move {
            let r = node.peers.call(&id, &addr, http::Method::PUT, &pq, &[(H_INFO, info_hex)], body).await;
            (id, r)
        }
    };
    let mut done: Vec<String> = Vec::new();
    let mut next = candidates.into_iter();
    while done.len() < need {
        let batch: Vec<(String, String)> = next.by_ref().take(need - done.len()).collect();
        if batch.is_empty() {
            break;
        }
        for (id, r) in join_all(batch.into_iter().map(|(id, addr)| send(id, addr))).await {
            match r {
                Ok(_) => {
                    node.count(|c| c.replicas_sent += 1);
                    done.push(id);
                }
                Err(e) => {
                    node.count(|c| c.replica_failures += 1);
                    tracing::warn!(bucket, key, "replica target failed, trying another: {e}");
                }
            }
        }
    }
    // Targets that no longer hold the newest version drop their older one; those that do not
    // confirm stay on the entry until they do.
    let old: Vec<String> = previous
        .iter()
        .chain(&stale)
        .filter(|p| !done.contains(p))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let confirmed = send_drops(node, bucket, key, version, &old).await;
    stale = old.into_iter().filter(|t| !confirmed.contains(t)).collect();
    let enough = done.len() + 1 >= node.cfg.min_replicas;
    let incarnations =
        done.iter().map(|t| view.members.get(t).map(|m| m.incarnation.clone()).unwrap_or_default()).collect();
    node.replicated.lock().insert(ck.clone(), Replicated { version, targets: done.clone(), incarnations, stale });
    if enough {
        if done.len() < need {
            tracing::warn!(bucket, key, copies = done.len() + 1, "acknowledged with fewer copies (min_replicas)");
        }
        Ok(())
    } else {
        Err(format!(
            "only {} of the {} copies this write needs could be made (replica targets unreachable or full); \
             it is being written back to the backend instead",
            done.len() + 1,
            node.cfg.min_replicas
        ))
    }
}

/// Tells `targets` to drop their replica of the key up to `version`; which of them confirmed.
pub(crate) async fn send_drops(node: &Node, bucket: &str, key: &str, version: u64, targets: &[String]) -> Vec<String> {
    let view = node.view();
    let pq =
        format!("/_reo/peer/drop?owner={}&bucket={}&key={}&version={version}", enc(node.me()), enc(bucket), enc(key));
    let calls = targets.iter().map(|t| {
        let addr = view.members.get(t).map(|m| m.advertise.clone());
        let pq = pq.clone();
        async move {
            match addr {
                // Not a member any more: its replicas were dropped when it re-joined, or it is
                // failed over (and this node's object is written back, so nothing is lost).
                None => Some(t.clone()),
                Some(addr) => {
                    node.peers.call(t, &addr, http::Method::POST, &pq, &[], Bytes::new()).await.ok().map(|_| t.clone())
                }
            }
        }
    });
    let ok: Vec<String> = join_all(calls).await.into_iter().flatten().collect();
    node.count(|c| c.replica_drops += ok.len() as u64);
    ok
}

/// Drops the key's replicas everywhere (`flushed`: the object is written back, so its current
/// targets drop theirs too; else only the stale ones); the entry goes once all confirmed.
async fn drop_entry(node: &Node, ck: &str, r: &Replicated, flushed: bool) {
    let Some((bucket, key)) = ck.split_once('/') else { return };
    let mut asked: Vec<String> = r.stale.clone();
    if flushed {
        asked.extend(r.targets.iter().cloned());
    }
    if asked.is_empty() && !flushed {
        return;
    }
    let ok = send_drops(node, bucket, key, r.version, &asked).await;
    let mut m = node.replicated.lock();
    let Some(e) = m.get_mut(ck).filter(|x| x.version == r.version) else { return };
    e.stale.retain(|t| !ok.contains(t));
    if flushed && e.stale.is_empty() && r.targets.iter().all(|t| ok.contains(t)) {
        m.remove(ck);
    }
}

async fn drop_replicas(node: &Node, bucket: &str, key: &str) {
    let ck = cache_key(bucket, key);
    let Some(r) = node.replicated.lock().get(&ck).cloned() else { return };
    drop_entry(node, &ck, &r, true).await;
}

/// One pass of the replica reaper: every replicated object this node has written back since has
/// its replicas dropped, and earlier targets that missed a drop are asked again. Runs every half
/// second, and at every hand-over.
pub(crate) async fn drop_flushed(node: &Arc<Node>) {
    let entries: Vec<(String, Replicated)> =
        node.replicated.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (ck, r) in entries {
        let Some((bucket, key)) = ck.split_once('/') else { continue };
        let (gw, b, k) = (node.gw().clone(), bucket.to_string(), key.to_string());
        let flushed = !node.blocking(move || gw.dirty_state(&b, &k).is_some()).await;
        drop_entry(node, &ck, &r, flushed).await;
    }
}

/// DeleteObjects: handled at the keys' home node when they all have the same one (forwarded
/// there if it is another); keys of several homes are refused with `501 NotImplemented` naming
/// the way out (one DeleteObject per key, or one request per home), never half applied.
pub async fn delete_many(node: &Arc<Node>, req: http::Request<s3s::Body>, local: LocalService, bucket: &str) -> Answer {
    if node.leaving() {
        return slowdown("this node is leaving or has left its cluster; send writes to another node");
    }
    let fwd = match crate::router::forwarded(node, &req) {
        Ok(f) => f,
        Err(e) => return crate::router::denied(e),
    };
    let (parts, mut body) = req.into_parts();
    let bytes = match body.store_all_limited(2 << 20).await {
        Ok(b) => b,
        Err(e) => return crate::answers::error(s3s::s3_error!(MalformedXML, "reading DeleteObjects: {e}")),
    };
    let keys = keys_of(&bytes);
    let view = node.view();
    let mut homes: Vec<(String, String)> = keys.iter().filter_map(|k| Node::home_of(&view, bucket, k)).collect();
    homes.sort();
    homes.dedup();
    let req = http::Request::from_parts(parts, s3s::Body::from(bytes));
    match homes.as_slice() {
        [] => local(req).await,
        [(home, addr)] if home != node.me() => {
            if fwd.is_some() {
                return slowdown("the cluster's membership is changing; retry");
            }
            match node.peers.forward(addr, &view.id(), req).await {
                Ok(a) => a,
                Err(e) => slowdown(format!("the home node of these keys is unreachable: {e}")),
            }
        }
        [_] => {
            if node.membership.fenced() || !crate::router::wait_settled(node).await {
                return slowdown("writes need cluster coordination, which is not available now; retry");
            }
            let cks: Vec<String> = keys.iter().map(|k| cache_key(bucket, k)).collect();
            let _order = node.lock_keys(&cks).await;
            for k in &keys {
                revoke(node, bucket, k).await;
            }
            let _applying = match node.applying(&view.id()).await {
                Ok(g) => g,
                Err(why) => return slowdown(why),
            };
            let resp = local(req).await?;
            let mut failed = None;
            for k in &keys {
                if let Err(e) = sync_replicas(node, bucket, k).await {
                    failed = Some(e);
                }
            }
            match failed {
                None => Ok(resp),
                Some(e) => {
                    node.gw().flush_now();
                    slowdown(e)
                }
            }
        }
        _ => crate::answers::error(s3s::s3_error!(
            NotImplemented,
            "DeleteObjects with keys of {} cluster nodes: delete them with one DeleteObject each, or group \
             the keys by node",
            homes.len()
        )),
    }
}

/// The `<Key>` values of a DeleteObjects body (XML entities decoded).
pub(crate) fn keys_of(xml: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(xml);
    let mut out = Vec::new();
    let mut rest = s.as_ref();
    while let Some(i) = rest.find("<Key>") {
        rest = &rest[i + 5..];
        let Some(j) = rest.find("</Key>") else { break };
        out.push(
            rest[..j]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        );
        rest = &rest[j + 6..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::MemberInfo;

    #[test]
    fn targets_follow_free_space_over_degree_and_keep_previous_ones_first() {
        let mut v = View::default();
        let m = |free, held| MemberInfo {
            advertise: "a".into(),
            incarnation: "i".into(),
            replica_free: free,
            replicas_held: held,
        };
        v.members.insert("me".into(), m(1000, 0));
        v.members.insert("a".into(), m(1000, 9)); // 100
        v.members.insert("b".into(), m(600, 1)); // 300
        v.members.insert("c".into(), m(400, 0)); // 400
        v.members.insert("d".into(), m(10, 0)); // too small for 50 bytes
        let ids = |t: Vec<(String, String)>| t.into_iter().map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(ids(targets(&v, "me", &[], 50)), ["c", "b", "a"]);
        assert_eq!(ids(targets(&v, "me", &["a".into()], 50)), ["a", "c", "b"]);
    }

    #[test]
    fn delete_objects_keys_are_decoded() {
        let xml = b"<Delete><Object><Key>a&amp;b</Key></Object><Object><Key>c/d</Key><VersionId>x</VersionId></Object></Delete>";
        assert_eq!(keys_of(xml), ["a&b", "c/d"]);
        assert_eq!(enc("a b/é"), "a%20b%2F%C3%A9");
    }
}
