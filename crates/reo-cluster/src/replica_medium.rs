//! Where the replica area ([`crate::replicas::ReplicaStore`]) keeps its bytes
//! ([`ReplicaMedium`]): the node's own flash store, as class-1 data outside every bucket
//! ([`GatewayMedium`], the gateway's held objects: durable on every device the dirty scheme
//! needs before a put returns, never evicted, scrubbed and rebuilt with the array), or memory in
//! unit tests of the area's bookkeeping.

use std::sync::Weak;

use reo_gateway::gateway::Gateway;

/// A durable map from names to bytes, each with a short index string listed without reading
/// the bytes.
pub trait ReplicaMedium: Send + Sync {
    /// Stores `data` under `name` (replacing it) with `index`; durable when it returns.
    fn put(&self, name: &str, data: &[u8], index: &str) -> std::io::Result<()>;
    /// The bytes under `name`.
    fn get(&self, name: &str) -> std::io::Result<Option<Vec<u8>>>;
    /// Removes `name`, durably.
    fn remove(&self, name: &str) -> std::io::Result<()>;
    /// Every name and its index string.
    fn list(&self) -> std::io::Result<Vec<(String, String)>>;
}

/// The gateway's flash store (see the module doc). Weak: the gateway owns the store and must
/// be able to close it at shutdown.
pub struct GatewayMedium(pub Weak<Gateway>);

impl GatewayMedium {
    fn gw(&self) -> std::io::Result<std::sync::Arc<Gateway>> {
        self.0.upgrade().ok_or_else(|| std::io::Error::other("the gateway has stopped"))
    }
}

impl ReplicaMedium for GatewayMedium {
    fn put(&self, name: &str, data: &[u8], index: &str) -> std::io::Result<()> {
        self.gw()?.put_held(name, data, index)
    }
    fn get(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        self.gw()?.read_held(name)
    }
    fn remove(&self, name: &str) -> std::io::Result<()> {
        self.gw()?.remove_held(name).map(|_| ())
    }
    fn list(&self) -> std::io::Result<Vec<(String, String)>> {
        Ok(self.gw()?.held())
    }
}

/// Memory, for unit tests of the area's bookkeeping (the gateway's side is tested in
/// `reo-gateway`, the whole in the cluster's end-to-end tests).
#[cfg(test)]
#[derive(Default)]
pub struct MemMedium(pub parking_lot::Mutex<std::collections::BTreeMap<String, (Vec<u8>, String)>>);

#[cfg(test)]
impl ReplicaMedium for MemMedium {
    fn put(&self, name: &str, data: &[u8], index: &str) -> std::io::Result<()> {
        self.0.lock().insert(name.into(), (data.to_vec(), index.into()));
        Ok(())
    }
    fn get(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        Ok(self.0.lock().get(name).map(|(d, _)| d.clone()))
    }
    fn remove(&self, name: &str) -> std::io::Result<()> {
        self.0.lock().remove(name);
        Ok(())
    }
    fn list(&self) -> std::io::Result<Vec<(String, String)>> {
        Ok(self.0.lock().iter().map(|(n, (_, i))| (n.clone(), i.clone())).collect())
    }
}
