//! The seam where a layer above the gateway sees each S3 request before the gateway's own S3
//! service does ([`Interceptor`]): `reo-cluster` sends a write to the key's home node, answers
//! peer requests, and replicates an unflushed write before it is acknowledged. Requests reach it
//! after the checks that need no signature (SigV2, form POSTs, presigned-URL limits) and before
//! s3s verifies the signature; what it passes on ([`LocalService`]) is verified as usual.

use futures::future::BoxFuture;
use s3s::{Body, HttpError};

/// A request's answer, as s3s's service gives it.
pub type Answer = Result<http::Response<Body>, HttpError>;

/// The gateway's own S3 service for one request.
pub type LocalService = Box<dyn FnOnce(http::Request<Body>) -> BoxFuture<'static, Answer> + Send>;

/// A layer that sees every S3 request first (see the module doc).
#[async_trait::async_trait]
pub trait Interceptor: Send + Sync + std::fmt::Debug + 'static {
    /// Answers `req`, by itself or by calling `local` (at most once).
    async fn handle(&self, req: http::Request<Body>, local: LocalService) -> Answer;
}

/// A layer `reo serve` runs the gateway under (the cluster): it wraps the backend the gateway
/// reads and writes, starts once the gateway has opened (before its flusher, so it can discard
/// unflushed writes the cluster superseded while this node was away), and gives the
/// [`Interceptor`] the server calls.
pub trait Extension: Send + Sync + std::fmt::Debug + 'static {
    /// The backend the gateway is to use, around the configured one.
    fn wrap_backend(
        &self,
        backend: std::sync::Arc<dyn crate::backend::Backend>,
    ) -> std::sync::Arc<dyn crate::backend::Backend>;
    /// Starts over the opened gateway, on `rt`; an error stops the start.
    fn start(
        &self,
        gw: &std::sync::Arc<crate::gateway::Gateway>,
        rt: &tokio::runtime::Handle,
    ) -> Result<std::sync::Arc<dyn Interceptor>, String>;
    /// Stops its background work (the server has drained).
    fn stop(&self);
    /// Its state, for `GET /_reo/admin/cluster` (blocking allowed).
    fn status(&self) -> serde_json::Value;
    /// Leaves gracefully (`POST /_reo/admin/cluster/leave`): hands over what only this node
    /// holds, then stops taking part; blocking, the outcome as JSON or why it failed.
    fn leave(&self) -> Result<serde_json::Value, String>;
}
