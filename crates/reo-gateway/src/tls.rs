//! TLS for `reo serve`: rustls, with the aws-lc-rs provider the S3 backend's HTTPS client
//! already builds. A certificate chain and its private key, both PEM files, are loaded at start
//! (a bad file stops the start with a message naming it); TLS 1.2 and 1.3, ALPN `http/1.1`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// Why the TLS settings cannot serve; the message names the file or option.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file could not be read or parsed.
    #[error("--tls-cert {}: {source}", path.display())]
    Cert {
        /// The certificate file.
        path: PathBuf,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error("--tls-cert {}: no certificate in the file", path.display())]
    NoCert {
        /// The certificate file.
        path: PathBuf,
    },
    /// The key file could not be read or parsed.
    #[error("--tls-key {}: {source}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// The protocol versions of the provider.
    #[error("TLS: {0}")]
    Protocol(rustls::Error),
    /// The certificate and key do not make a server configuration (e.g. they do not match).
    #[error("--tls-cert/--tls-key: {0}")]
    Pair(rustls::Error),
}

/// The server side of TLS from `cert` (the chain, leaf first) and `key` (PKCS#8, PKCS#1 or
/// SEC1).
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let cert_err = |source| TlsError::Cert { path: cert.to_path_buf(), source };
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(cert).map_err(cert_err)?.collect::<Result<_, _>>().map_err(cert_err)?;
    if chain.is_empty() {
        return Err(TlsError::NoCert { path: cert.to_path_buf() });
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|source| TlsError::Key { path: key.to_path_buf(), source })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Protocol)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(TlsError::Pair)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}
