//! TLS client configuration for the load engine, built once per run and
//! shared by every connection (rustls keeps its session cache in the
//! config, so resumption works across connections and threads).
//!
//! The engine drives rustls sans-IO inside its epoll loop (see
//! `engine.rs`): no TLS library owns a socket, so a TLS connection costs the
//! same system calls as a plain one. Anything that needs a client config
//! for another protocol (HTTP/2 wants ALPN `h2`) calls [`client_config`]
//! with its own ALPN list.

use crate::LoadError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;

/// ALPN for HTTP/1.1 (RFC 7301 registry).
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The TLS flags of a load, unvalidated until [`client_config`] reads the
/// files they name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// `-k/--insecure`: accept any server certificate (the handshake's
    /// signatures are still checked, so the numbers are those of a real TLS
    /// session with that key).
    pub insecure: bool,
    /// `--cacert FILE`: trust these PEM certificates instead of the system's.
    pub cacert: Option<PathBuf>,
    /// `--cert FILE`: PEM client certificate chain (with `--key`).
    pub cert: Option<PathBuf>,
    /// `--key FILE`: PEM private key of the client certificate.
    pub key: Option<PathBuf>,
    /// Resume sessions (tickets or session ids) on new connections; off
    /// with `--no-tls-resume`, so every connection pays a full handshake.
    pub resume: bool,
    /// `--sni NAME`: the server name sent and verified, instead of the URL's host.
    pub sni: Option<String>,
}

impl Default for TlsOptions {
    /// Verify against the system's roots, resume sessions, SNI from the URL.
    fn default() -> Self {
        TlsOptions {
            insecure: false,
            cacert: None,
            cert: None,
            key: None,
            resume: true,
            sni: None,
        }
    }
}

fn bad(msg: impl Into<String>) -> LoadError {
    LoadError::BadInput(msg.into())
}

/// Builds the client config for `opts` offering `alpn` (e.g.
/// `[ALPN_HTTP11]`). Unreadable or malformed certificate and key files are
/// [`LoadError::BadInput`] naming the flag.
pub fn client_config(opts: &TlsOptions, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, LoadError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| LoadError::Engine(format!("TLS: {e}")))?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate { provider }))
    } else {
        builder.with_root_certificates(roots(opts)?)
    };
    let mut config = match (&opts.cert, &opts.key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => return Err(bad("--cert needs --key (the certificate's private key)")),
        (None, Some(_)) => return Err(bad("--key needs --cert (the client certificate)")),
        (Some(cert), Some(key)) => {
            let chain = read_certs("--cert", cert)?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| bad(format!("--key {}: {}", key.display(), pem_error(&e))))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| bad(format!("--cert/--key: {e}")))?
        }
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = if opts.resume {
        Resumption::default()
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(config))
}

/// The name sent as SNI and checked against the certificate: `--sni`, or
/// the URL's host (an IP address sends no SNI, as RFC 6066 requires).
pub fn server_name(opts: &TlsOptions, host: &str) -> Result<ServerName<'static>, LoadError> {
    let name = opts.sni.as_deref().unwrap_or(host);
    ServerName::try_from(name.to_string())
        .map_err(|e| bad(format!("TLS server name {name:?}: {e}")))
}

fn roots(opts: &TlsOptions) -> Result<RootCertStore, LoadError> {
    let mut store = RootCertStore::empty();
    match &opts.cacert {
        Some(path) => {
            for cert in read_certs("--cacert", path)? {
                store
                    .add(cert)
                    .map_err(|e| bad(format!("--cacert {}: {e}", path.display())))?;
            }
        }
        None => {
            // Certificates the system cannot parse are skipped, as every
            // TLS client does; an empty store fails each handshake with
            // "unknown issuer", whose message suggests --cacert or -k.
            let found = rustls_native_certs::load_native_certs();
            let _ = store.add_parsable_certificates(found.certs);
        }
    }
    Ok(store)
}

fn read_certs(
    flag: &str,
    path: &std::path::Path,
) -> Result<Vec<CertificateDer<'static>>, LoadError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| bad(format!("{flag} {}: {}", path.display(), pem_error(&e))))?;
    if certs.is_empty() {
        return Err(bad(format!(
            "{flag} {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in the file",
            path.display()
        )));
    }
    Ok(certs)
}

fn pem_error(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM item of the expected kind".into(),
        other => format!("not valid PEM: {other:?}"),
    }
}

/// What a failed handshake means for the user, with the flag that helps.
pub fn explain(e: &rustls::Error) -> String {
    use rustls::{CertificateError, Error};
    match e {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "{e} (the server's certificate is not signed by a trusted CA: give it with --cacert FILE, or skip verification with -k)"
        ),
        Error::InvalidCertificate(CertificateError::NotValidForName)
        | Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => format!(
            "{e} (the certificate does not name the URL's host: use the name it was issued for, or --sni NAME)"
        ),
        Error::InvalidCertificate(CertificateError::Expired)
        | Error::InvalidCertificate(CertificateError::ExpiredContext { .. }) => {
            format!("{e} (the certificate has expired; -k skips verification)")
        }
        Error::AlertReceived(rustls::AlertDescription::CertificateRequired)
        | Error::AlertReceived(rustls::AlertDescription::HandshakeFailure)
        | Error::AlertReceived(rustls::AlertDescription::BadCertificate) => format!(
            "{e} (the server may require a client certificate: --cert FILE --key FILE)"
        ),
        _ => e.to_string(),
    }
}

/// `-k`: certificates are not checked, handshake signatures are, with the
/// provider's own algorithms (so the cost measured is a real handshake's).
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(r: Result<Arc<ClientConfig>, LoadError>) -> String {
        match r {
            Err(LoadError::BadInput(m)) => m,
            other => panic!("expected bad input, got {other:?}"),
        }
    }

    #[test]
    fn alpn_and_resumption_follow_the_options() {
        let c = client_config(&TlsOptions::default(), &[ALPN_HTTP11]).expect("config");
        assert_eq!(c.alpn_protocols, vec![b"http/1.1".to_vec()]);
        let off = TlsOptions {
            resume: false,
            insecure: true,
            ..TlsOptions::default()
        };
        let c = client_config(&off, &[b"h2"]).expect("config");
        assert_eq!(c.alpn_protocols, vec![b"h2".to_vec()]);
        assert!(
            format!("{:?}", c.resumption).contains("Disabled"),
            "{:?}",
            c.resumption
        );
    }

    #[test]
    fn bad_files_name_the_flag() {
        let dir = tempfile::tempdir().expect("tempdir");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not pem at all\n").expect("write");
        let o = TlsOptions {
            cacert: Some(junk.clone()),
            ..TlsOptions::default()
        };
        assert!(msg(client_config(&o, &[])).starts_with("--cacert "));
        let o = TlsOptions {
            cacert: Some(dir.path().join("missing.pem")),
            ..TlsOptions::default()
        };
        assert!(msg(client_config(&o, &[])).contains("missing.pem"));
        let o = TlsOptions {
            cert: Some(junk.clone()),
            ..TlsOptions::default()
        };
        assert!(msg(client_config(&o, &[])).contains("--cert needs --key"));
        let o = TlsOptions {
            cert: Some(junk.clone()),
            key: Some(junk),
            insecure: true,
            ..TlsOptions::default()
        };
        assert!(msg(client_config(&o, &[])).starts_with("--cert "));
    }

    #[test]
    fn server_names() {
        let o = TlsOptions::default();
        assert!(matches!(
            server_name(&o, "127.0.0.1").expect("ip"),
            ServerName::IpAddress(_)
        ));
        let o = TlsOptions {
            sni: Some("api.example".into()),
            ..TlsOptions::default()
        };
        assert!(matches!(
            server_name(&o, "127.0.0.1").expect("dns"),
            ServerName::DnsName(_)
        ));
    }
}
