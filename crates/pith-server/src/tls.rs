//! TLS for the `tls-port` listener: a rustls server configuration from
//! the PEM files `tls-cert-file` and `tls-key-file` name.
//!
//! Server authentication only: the server proves who it is with its
//! certificate, clients authenticate with `requirepass` as on the plain
//! port (Redis's `tls-auth-clients no`). TLS 1.2 and 1.3, rustls's
//! default cipher suites (the ring provider). The files are read once, at
//! start; an unreadable file, a file without a certificate or a key, or a
//! key that does not match the certificate stops the start with an error
//! naming the file.

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// Seconds a client has to finish the TLS handshake before it is
/// dropped, so a client that connects and says nothing holds no slot
/// for long.
pub const HANDSHAKE_SECONDS: u64 = 10;

/// An acceptor for TLS connections with the certificate chain in `cert`
/// and the private key in `key` (PEM files).
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let named = |path: &Path, e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| named(cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| named(cert, &e))?;
    if chain.is_empty() {
        return Err(named(cert, &"no PEM certificate in the file"));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| named(key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| {
            format!(
                "{} and {} do not make a TLS identity: {e}",
                cert.display(),
                key.display()
            )
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
