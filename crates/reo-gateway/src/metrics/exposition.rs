//! `/metrics`' text: the request path's live instruments and the scrape-time [`Snapshot`], in the
//! Prometheus text format (version 0.0.4), encoded by prometheus-client.

use prometheus_client::registry::Registry;

use super::snapshot::Snapshot;
use crate::api::Api;

/// The exposition's `Content-Type`.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Every metric of the server, as Prometheus scrapes it. Blocking (it reads the components'
/// state under their locks): called off the runtime's threads.
pub fn render(api: &Api) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    api.metrics.register(&mut registry);
    registry.register_collector(Box::new(Snapshot(api.clone())));
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
    Ok(out)
}
