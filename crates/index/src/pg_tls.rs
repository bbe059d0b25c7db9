//! TLS to the shared catalog's PostgreSQL server, with rustls (ring), as the catalog URL's
//! `sslmode` and `sslrootcert` ask:
//!
//! - `disable`: no TLS.
//! - `require`: TLS, the server's certificate not verified (a passive listener reads
//!   nothing; an active one can pose as the server). With `sslrootcert`, as `verify-ca`
//!   (libpq does the same).
//! - `verify-ca`: TLS, the certificate's chain verified against the trusted authorities;
//!   its host name not checked.
//! - `verify-full`: TLS, the chain verified and the certificate naming the host the URL
//!   names (its `host`, even when `hostaddr` says where to connect).
//! - none: `disable` when every host is a loopback one (`localhost`, `127.0.0.0/8`, `::1`) or
//!   a Unix socket (what ingest always did: the traffic does not leave the machine) and no
//!   `sslrootcert` is given; `verify-full` otherwise.
//! - `allow` and `prefer` (libpq's default) are refused: they fall back to plain text
//!   without saying so and verify nothing, so they protect against nobody who can reach the
//!   network; say `require` or `disable`.
//!
//! Trusted authorities: the PEM certificates of `sslrootcert=PATH`, else (or with
//! `sslrootcert=system`) the platform's trust store (`rustls-platform-verifier`). Client
//! certificates (`sslcert`, `sslkey`) are not supported and refused. The file is read when
//! the URL is parsed, so a missing or empty one is a configuration error at start.
//!
//! Connection errors are explained ([`Manager`]): a server that refuses TLS, one that
//! refuses a connection without it, a certificate no trusted authority signed, one that does
//! not name the host. They name the host, never the password.

use std::path::PathBuf;
use std::sync::Arc;

use postgres::config::Host;
use postgres::{Client, NoTls};
use r2d2_postgres::PostgresConnectionManager;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What a connection does about TLS (the URL's `sslmode`, resolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The TLS parameters of a catalog URL, taken out of it (`postgres::Config` knows only
/// `disable`, `prefer` and `require`, and no `sslrootcert`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TlsParams {
    pub sslmode: Option<String>,
    pub sslrootcert: Option<String>,
}

/// `url` without its `sslmode` and `sslrootcert` parameters, and them (the last of each).
/// The query starts at the first `?` after the credentials, as `postgres::Config` reads it.
/// Other `ssl…` parameters but `sslnegotiation` are refused: client certificates and
/// revocation lists are not supported, and one silently ignored would be worse.
pub fn take_tls_params(url: &str) -> Result<(String, TlsParams), String> {
    let after_credentials = url.find('@').map_or(0, |i| i + 1);
    let query_at = url
        .get(after_credentials..)
        .and_then(|rest| rest.find('?'))
        .map(|i| after_credentials + i);
    let mut params = TlsParams::default();
    let Some((head, query)) = query_at.and_then(|at| Some((url.get(..at)?, url.get(at + 1..)?)))
    else {
        return Ok((url.to_string(), params));
    };
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| "a URL parameter is not UTF-8".to_string())
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?;
        match key.as_str() {
            "sslmode" => params.sslmode = Some(decode(value)?),
            "sslrootcert" => params.sslrootcert = Some(decode(value)?),
            "sslnegotiation" => kept.push(pair),
            k if k.starts_with("ssl") => {
                let shown: String = k
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .take(40)
                    .collect();
                return Err(format!(
                    "the parameter {shown} is not supported (of TLS's, sslmode, sslrootcert and \
                     sslnegotiation are; client certificates are not)"
                ));
            }
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    Ok((format!("{head}{rest}"), params))
}

/// Whether a connection to `host` (or to `hostaddr`, which says where to connect when
/// given) stays on this machine.
fn is_local(host: &Host, hostaddr: Option<&std::net::IpAddr>) -> bool {
    if let Some(addr) = hostaddr {
        return addr.is_loopback();
    }
    match host {
        Host::Tcp(name) => {
            let name = name.trim_end_matches('.');
            name.eq_ignore_ascii_case("localhost")
                || name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|a| a.is_loopback())
        }
        #[cfg(unix)]
        Host::Unix(_) => true,
    }
}

/// Where the authorities a certificate must chain to come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Roots {
    Platform,
    File(PathBuf),
}

/// The TLS of a catalog URL: its mode, its trusted authorities (as shown in errors) and the
/// connector that does it (none for `disable`).
#[derive(Clone)]
pub struct Tls {
    mode: SslMode,
    roots: String,
    connector: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("roots", &self.roots)
            .finish()
    }
}

impl Tls {
    /// The TLS `params` ask for on the connections `config` describes: the mode resolved
    /// (see the module's documentation), the authorities read, the connector made.
    pub fn resolve(params: &TlsParams, config: &postgres::Config) -> Result<Tls, String> {
        let hosts = config.get_hosts();
        let addrs = config.get_hostaddrs();
        let local = hosts
            .iter()
            .enumerate()
            .all(|(i, h)| is_local(h, addrs.get(i)));
        let rootcert = params.sslrootcert.as_deref();
        let mode = match params.sslmode.as_deref() {
            None if local && rootcert.is_none() => SslMode::Disable,
            None => SslMode::VerifyFull,
            Some("disable") => SslMode::Disable,
            Some("require") if rootcert.is_some() => SslMode::VerifyCa,
            Some("require") => SslMode::Require,
            Some("verify-ca") => SslMode::VerifyCa,
            Some("verify-full") => SslMode::VerifyFull,
            Some(weak @ ("allow" | "prefer")) => {
                return Err(format!(
                    "sslmode={weak} is not supported: it falls back to plain text without \
                     saying so and verifies nothing; use sslmode=verify-full (or verify-ca, \
                     require, disable)"
                ))
            }
            Some(_) => {
                return Err(
                    "unknown sslmode (disable, require, verify-ca or verify-full)".to_string(),
                )
            }
        };
        if mode == SslMode::Disable {
            if rootcert.is_some() {
                return Err("sslrootcert with sslmode=disable (no TLS to verify)".to_string());
            }
            return Ok(Tls {
                mode,
                roots: String::new(),
                connector: None,
            });
        }
        #[cfg(unix)]
        if hosts.iter().any(|h| matches!(h, Host::Unix(_))) {
            return Err(format!(
                "sslmode={} over a Unix socket: PostgreSQL has no TLS there (give a TCP host, \
                 or sslmode=disable)",
                mode.name()
            ));
        }
        let roots = match rootcert {
            None | Some("system") => Roots::Platform,
            Some(path) => Roots::File(PathBuf::from(path)),
        };
        let shown = match (&roots, mode) {
            (_, SslMode::Require) => "none (sslmode=require verifies nothing)".to_string(),
            (Roots::Platform, _) => "the platform's trust store".to_string(),
            (Roots::File(p), _) => format!("sslrootcert {}", p.display()),
        };
        let config = client_config(mode, &roots)?;
        Ok(Tls {
            mode,
            roots: shown,
            connector: Some(MakeRustlsConnect::new(config)),
        })
    }

    pub fn mode(&self) -> SslMode {
        self.mode
    }
}

/// The certificates of a PEM file, as trusted authorities.
fn read_roots(path: &std::path::Path) -> Result<rustls::RootCertStore, String> {
    let why = |e: &dyn std::fmt::Display| format!("sslrootcert {}: {e}", path.display());
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| why(&e))? {
        let cert = cert.map_err(|e| why(&e))?;
        store.add(cert).map_err(|e| why(&e))?;
    }
    if store.is_empty() {
        return Err(why(&"no certificate in it (PEM expected)"));
    }
    Ok(store)
}

/// rustls's client configuration for `mode` (not `disable`) with `roots`.
fn client_config(mode: SslMode, roots: &Roots) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain: Option<Arc<dyn ServerCertVerifier>> = match (mode, roots) {
        (SslMode::Require, _) => None,
        (_, Roots::File(path)) => Some(
            WebPkiServerVerifier::builder_with_provider(
                Arc::new(read_roots(path)?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?,
        ),
        (_, Roots::Platform) => Some(Arc::new(
            rustls_platform_verifier::Verifier::new(Arc::clone(&provider))
                .map_err(|e| format!("the platform's trust store: {e}"))?,
        )),
    };
    let verifier: Arc<dyn ServerCertVerifier> = match chain {
        Some(chain) if mode == SslMode::VerifyFull => chain,
        chain => Arc::new(Lenient {
            chain,
            provider: Arc::clone(&provider),
        }),
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// `sslmode=require` (no `chain`: any certificate is taken) and `sslmode=verify-ca` (the
/// chain verified by `chain`, a certificate that does not name the host taken: rustls's
/// WebPKI verifier checks the name last, after the chain, so a name error means the chain
/// verified). The handshake's signatures are checked either way, so the session is with the
/// holder of the certificate's key.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<dyn ServerCertVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.chain.as_ref().and_then(|c| c.root_hint_subjects())
    }
}

/// Why a connection failed, explained (the host named, never the password).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConnectError(String);

enum Inner {
    Plain(PostgresConnectionManager<NoTls>),
    Tls(PostgresConnectionManager<MakeRustlsConnect>),
}

/// The pool's connection manager: `r2d2_postgres`'s, with TLS or without, its errors
/// explained.
pub struct Manager {
    inner: Inner,
    /// The host the URL names, for errors.
    host: String,
    mode: SslMode,
    roots: String,
}

impl Manager {
    pub fn new(mut config: postgres::Config, tls: &Tls, host: &str) -> Manager {
        let inner = match &tls.connector {
            Some(connector) => {
                config.ssl_mode(postgres::config::SslMode::Require);
                Inner::Tls(PostgresConnectionManager::new(config, connector.clone()))
            }
            None => {
                config.ssl_mode(postgres::config::SslMode::Disable);
                Inner::Plain(PostgresConnectionManager::new(config, NoTls))
            }
        };
        Manager {
            inner,
            host: host.to_string(),
            mode: tls.mode,
            roots: tls.roots.clone(),
        }
    }

    /// What went wrong connecting, in words that say what to do.
    fn explain(&self, e: &postgres::Error) -> ConnectError {
        let host = &self.host;
        let mode = self.mode.name();
        let chain = error_chain(e);
        let said = if let Some(tls) = rustls_error(e) {
            match tls {
                rustls::Error::InvalidCertificate(c) => self.certificate(c),
                other => format!("TLS with {host} failed (sslmode={mode}): {other}"),
            }
        } else if chain.contains("server does not support TLS") {
            format!(
                "{host} refused TLS (its PostgreSQL has ssl = off) and sslmode={mode} requires \
                 it: turn ssl on on the server, or, on a network you trust, set sslmode=disable"
            )
        } else if self.mode == SslMode::Disable
            && e.as_db_error().is_some_and(|db| {
                *db.code() == postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                    && db.message().contains("no encryption")
            })
        {
            format!(
                "{host} refuses connections without TLS ({chain}): add sslmode=verify-full and \
                 sslrootcert=PATH (its authority's certificate) to the catalog URL"
            )
        } else {
            chain
        };
        ConnectError(said)
    }

    fn certificate(&self, c: &CertificateError) -> String {
        let (host, mode, roots) = (&self.host, self.mode.name(), &self.roots);
        match c {
            CertificateError::UnknownIssuer => format!(
                "the certificate of {host} was not trusted: no authority of {roots} signed it \
                 (sslmode={mode}; give its authority with sslrootcert=PATH)"
            ),
            CertificateError::NotValidForName => format!(
                "the certificate of {host} does not name {host} (sslmode=verify-full): connect \
                 by a name it holds, or use sslmode=verify-ca"
            ),
            CertificateError::NotValidForNameContext { presented, .. } => format!(
                "the certificate of {host} does not name {host} but {} (sslmode=verify-full): \
                 connect by a name it holds, or use sslmode=verify-ca",
                presented.join(", ")
            ),
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("the certificate of {host} has expired (sslmode={mode})")
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                format!("the certificate of {host} is not valid yet (sslmode={mode})")
            }
            other => format!(
                "the certificate of {host} did not verify against {roots} (sslmode={mode}): {other}"
            ),
        }
    }
}

/// `e` and its causes, joined by `: ` (`postgres::Error` shows only its kind).
fn error_chain(e: &postgres::Error) -> String {
    let mut said = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        said.push_str(": ");
        said.push_str(&c.to_string());
        cause = c.source();
    }
    said
}

/// The rustls error among `e`'s causes, if any (inside the I/O error of the handshake).
fn rustls_error(e: &postgres::Error) -> Option<&rustls::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(tls) = c.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(tls) = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(tls);
        }
        cause = c.source();
    }
    None
}

impl r2d2::ManageConnection for Manager {
    type Connection = Client;
    type Error = ConnectError;

    fn connect(&self) -> Result<Client, ConnectError> {
        let connected = match &self.inner {
            Inner::Plain(m) => m.connect(),
            Inner::Tls(m) => m.connect(),
        };
        connected.map_err(|e| self.explain(&e))
    }

    fn is_valid(&self, client: &mut Client) -> Result<(), ConnectError> {
        client
            .simple_query("")
            .map(|_| ())
            .map_err(|e| self.explain(&e))
    }

    fn has_broken(&self, client: &mut Client) -> bool {
        client.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(url: &str) -> Result<SslMode, String> {
        let (rest, params) = take_tls_params(url)?;
        let config: postgres::Config = rest.parse().map_err(|e| format!("{e}"))?;
        Tls::resolve(&params, &config).map(|t| t.mode())
    }

    #[test]
    fn tls_parameters_are_taken_out_of_the_url() {
        let (rest, p) = take_tls_params(
            "postgres://u:p%3Fw@h:1/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p%3Fw@h:1/db?application_name=x");
        assert_eq!(p.sslmode.as_deref(), Some("verify-full"));
        assert_eq!(p.sslrootcert.as_deref(), Some("/ca.pem"));
        // A `?` in the password is not the query's start (the query follows the `@`).
        let (rest, p) = take_tls_params("postgres://u:a?b@h/db?sslmode=disable").unwrap();
        assert_eq!(rest, "postgres://u:a?b@h/db");
        assert_eq!(p.sslmode.as_deref(), Some("disable"));
        let (rest, p) = take_tls_params("postgres://u@h/db").unwrap();
        assert_eq!(
            (rest.as_str(), p),
            ("postgres://u@h/db", TlsParams::default())
        );
        let err = take_tls_params("postgres://u:pw@h/db?sslkey=/k.pem").unwrap_err();
        assert!(err.contains("sslkey is not supported"), "{err}");
        assert!(!err.contains("pw"), "{err}");
    }

    #[test]
    fn sslmode_defaults_to_no_tls_on_loopback_only() {
        let cases = [
            ("postgres://u@127.0.0.1/db", SslMode::Disable),
            ("postgres://u@localhost:5433/db", SslMode::Disable),
            ("postgres://u@[::1]:5433/db", SslMode::Disable),
            ("postgres://u@127.3.0.1/db", SslMode::Disable),
            ("postgres://u@db.internal/db", SslMode::VerifyFull),
            ("postgres://u@10.0.0.5/db", SslMode::VerifyFull),
            // Where hostaddr points decides, not the name.
            (
                "postgres://u@db.internal/db?hostaddr=127.0.0.1",
                SslMode::Disable,
            ),
            (
                "postgres://u@localhost/db?hostaddr=10.0.0.5",
                SslMode::VerifyFull,
            ),
            ("postgres://u@localhost,db.internal/db", SslMode::VerifyFull),
            (
                "postgres://u@db.internal/db?sslmode=disable",
                SslMode::Disable,
            ),
            (
                "postgres://u@db.internal/db?sslmode=require",
                SslMode::Require,
            ),
            (
                "postgres://u@db.internal/db?sslmode=verify-ca",
                SslMode::VerifyCa,
            ),
            (
                "postgres://u@127.0.0.1/db?sslmode=verify-full",
                SslMode::VerifyFull,
            ),
        ];
        for (url, mode) in cases {
            assert_eq!(resolve(url), Ok(mode), "{url}");
        }
    }

    #[test]
    fn weak_or_contradictory_tls_settings_are_refused() {
        for (url, says) in [
            (
                "postgres://u@h/db?sslmode=prefer",
                "sslmode=prefer is not supported",
            ),
            (
                "postgres://u@h/db?sslmode=allow",
                "sslmode=allow is not supported",
            ),
            ("postgres://u@h/db?sslmode=verify", "unknown sslmode"),
            (
                "postgres://u@h/db?sslmode=disable&sslrootcert=/ca.pem",
                "sslrootcert with sslmode=disable",
            ),
            (
                "postgres://u@%2Frun%2Fpostgresql/db?sslmode=require",
                "over a Unix socket",
            ),
        ] {
            let err = resolve(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn a_root_certificate_file_must_hold_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let err = resolve(&format!(
            "postgres://u:pw@h/db?sslmode=verify-full&sslrootcert={}",
            missing.display()
        ))
        .unwrap_err();
        assert!(err.contains("missing.pem"), "{err}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = resolve(&format!(
            "postgres://u:pw@h/db?sslrootcert={}",
            empty.display()
        ))
        .unwrap_err();
        assert!(err.contains("no certificate in it"), "{err}");
        // sslrootcert alone asks for TLS (verify-full), even on loopback; `system` is the
        // platform's store.
        assert_eq!(
            resolve("postgres://u@127.0.0.1/db?sslrootcert=system"),
            Ok(SslMode::VerifyFull)
        );
        assert_eq!(
            resolve("postgres://u@h/db?sslmode=require&sslrootcert=system"),
            Ok(SslMode::VerifyCa)
        );
    }
}
