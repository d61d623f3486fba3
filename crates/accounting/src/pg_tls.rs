//! TLS to PostgreSQL as libpq does it, on rustls (no OpenSSL needed).
//!
//! The connection string may carry libpq's TLS settings, which the
//! `postgres` client does not know past `sslmode=require`:
//!
//! - `sslmode`: `disable` (never TLS), `prefer` (the default: TLS when the
//!   server offers it, unverified, else plain), `require` (TLS or no
//!   connection; the certificate is not checked unless a root certificate
//!   file is given, in which case it is checked as `verify-ca`, as libpq
//!   does), `verify-ca` (the server's certificate chains to a root of
//!   `sslrootcert`), `verify-full` (that, and it names the host connected
//!   to);
//! - `sslrootcert`: PEM file of the trusted roots (default
//!   `~/.postgresql/root.crt`), or `system` for the system's bundle;
//! - `sslcert`, `sslkey`: PEM client certificate and key, for servers that
//!   ask for one (`clientcert=verify-full` in pg_hba.conf); by default
//!   `~/.postgresql/postgresql.crt` and `postgresql.key` where both exist.
//!
//! [`split`] takes them out of the string; [`connector`] makes the
//! `MakeTlsConnect` that applies them. What the server presents is checked
//! at the handshake, so a wrong root or host name refuses the connection
//! with rustls' reason.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use postgres::config::SslMode as PgSslMode;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::AcctError;

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS where the server offers it, unverified.
    Prefer,
    /// TLS or no connection, unverified.
    Require,
    /// TLS with a certificate that chains to a trusted root.
    VerifyCa,
    /// `VerifyCa`, and the certificate names the host.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode, AcctError> {
        Ok(match value {
            "disable" => SslMode::Disable,
            // libpq's `allow` tries plain first: here it is `prefer`.
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(AcctError::Tls(format!(
                    "invalid sslmode \"{other}\": expected disable, allow, prefer, require, \
                     verify-ca or verify-full"
                )))
            }
        })
    }
}

/// The TLS settings of a connection string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// `sslmode` (default `prefer`).
    pub mode: SslMode,
    /// `sslrootcert`, where given.
    pub root_cert: Option<String>,
    /// `sslcert`, where given.
    pub cert: Option<PathBuf>,
    /// `sslkey`, where given.
    pub key: Option<PathBuf>,
}

/// The TLS keys libpq knows.
const TLS_KEYS: &[&str] = &["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// Splits a connection string (`key=value ...` or a `postgresql://` URL)
/// into the string without libpq's TLS keys, for the `postgres` client,
/// and those keys.
///
/// # Errors
///
/// [`AcctError::Tls`] for an `sslmode` libpq does not know or a value
/// whose quote does not end.
pub fn split(conninfo: &str) -> Result<(String, TlsSettings), AcctError> {
    let trimmed = conninfo.trim();
    let mut tls = TlsSettings {
        mode: SslMode::Prefer,
        root_cert: None,
        cert: None,
        key: None,
    };
    let mut take = |key: &str, value: String| -> Result<(), AcctError> {
        match key {
            "sslmode" => tls.mode = SslMode::parse(&value)?,
            "sslrootcert" => tls.root_cert = Some(value),
            "sslcert" => tls.cert = Some(value.into()),
            "sslkey" => tls.key = Some(value.into()),
            _ => {}
        }
        Ok(())
    };
    if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
        let Some((head, query)) = trimmed.split_once('?') else {
            return Ok((trimmed.to_owned(), tls));
        };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if TLS_KEYS.contains(&k) {
                take(k, percent_decode(v))?;
            } else {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() {
            head.to_owned()
        } else {
            format!("{head}?{}", kept.join("&"))
        };
        return Ok((rest, tls));
    }
    let mut kept = Vec::new();
    for (k, v) in pairs(trimmed)? {
        if TLS_KEYS.contains(&k.as_str()) {
            take(&k, v)?;
        } else {
            kept.push(format!("{k}={}", quote(&v)));
        }
    }
    Ok((kept.join(" "), tls))
}

/// The `key=value` pairs of a libpq connection string: spaces around `=`
/// allowed, a value in single quotes may hold spaces, `\'` and `\\`.
fn pairs(text: &str) -> Result<Vec<(String, String)>, AcctError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(AcctError::Tls(format!(
                "connection string: missing \"=\" after \"{key}\""
            )));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => {
                        return Err(AcctError::Tls(format!(
                            "connection string: the quoted value of \"{key}\" does not end"
                        )))
                    }
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                if c == '\\' {
                    chars.next();
                    value.extend(chars.next());
                    continue;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key, value));
    }
}

/// A value as a libpq connection string writes it: in quotes where it
/// holds a space, a quote or a backslash (or is empty).
pub fn quote(value: &str) -> String {
    if !value.is_empty() && !value.contains([' ', '\'', '\\', '\t', '\n']) {
        return value.to_owned();
    }
    let escaped = value.replace('\\', "\\\\").replace('\'', "\\'");
    format!("'{escaped}'")
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `postgres` client's own mode for these settings: it asks the
/// server for TLS unless `disable`, and insists on it from `require` up.
pub fn client_mode(tls: &TlsSettings) -> PgSslMode {
    match tls.mode {
        SslMode::Disable => PgSslMode::Disable,
        SslMode::Prefer => PgSslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => PgSslMode::Require,
    }
}

/// `~/.postgresql/NAME`, where the home is known.
fn home_file(name: &str) -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".postgresql").join(name))
}

/// Where the system keeps its trusted roots (`sslrootcert=system`).
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, AcctError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| AcctError::Tls(format!("reading {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(AcctError::Tls(format!(
            "{}: no certificate in the file",
            path.display()
        )));
    }
    Ok(certs)
}

/// The trusted roots: `sslrootcert`'s file, the system's bundle for
/// `system`, or `~/.postgresql/root.crt` where it exists; `None` where
/// there are none (an error from `verify-ca` up, as libpq's).
fn roots(tls: &TlsSettings) -> Result<Option<RootCertStore>, AcctError> {
    let path = match tls.root_cert.as_deref() {
        Some("system") => SYSTEM_BUNDLES
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .ok_or_else(|| {
                AcctError::Tls(format!(
                    "sslrootcert=system: no system certificate bundle (looked for {})",
                    SYSTEM_BUNDLES.join(", ")
                ))
            })?,
        Some(p) => PathBuf::from(p),
        None => match home_file("root.crt").filter(|p| p.exists()) {
            Some(p) => p,
            None if matches!(tls.mode, SslMode::VerifyCa | SslMode::VerifyFull) => {
                return Err(AcctError::Tls(format!(
                    "sslmode={}: no root certificate file: set sslrootcert (the CA that signed \
                     the server's certificate), or use sslmode=require",
                    if tls.mode == SslMode::VerifyCa {
                        "verify-ca"
                    } else {
                        "verify-full"
                    }
                )))
            }
            None => return Ok(None),
        },
    };
    let mut store = RootCertStore::empty();
    for cert in read_certs(&path)? {
        store
            .add(cert)
            .map_err(|e| AcctError::Tls(format!("{}: {e}", path.display())))?;
    }
    Ok(Some(store))
}

/// What the server's certificate is checked against.
#[derive(Debug)]
struct Verifier {
    /// None: not checked (`prefer`, `require` without roots).
    roots: Option<RootCertStore>,
    /// The certificate must name the host (`verify-full`).
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(roots) = &self.roots else {
            return Ok(ServerCertVerified::assertion());
        };
        let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            roots,
            intermediates,
            now,
            self.provider.signature_verification_algorithms.all,
        )?;
        if self.check_name {
            rustls::client::verify_server_name(&cert, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
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
        verify_tls13_signature(
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

/// The client certificate and key: `sslcert`/`sslkey`, or libpq's default
/// files where both exist.
fn client_auth(
    tls: &TlsSettings,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, AcctError> {
    let (cert, key) = match (&tls.cert, &tls.key) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        (Some(c), None) => {
            return Err(AcctError::Tls(format!(
                "sslcert={} is set but sslkey is not",
                c.display()
            )))
        }
        (None, Some(k)) => {
            return Err(AcctError::Tls(format!(
                "sslkey={} is set but sslcert is not",
                k.display()
            )))
        }
        (None, None) => match (home_file("postgresql.crt"), home_file("postgresql.key")) {
            (Some(c), Some(k)) if c.exists() && k.exists() => (c, k),
            _ => return Ok(None),
        },
    };
    let certs = read_certs(&cert)?;
    let key = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| AcctError::Tls(format!("reading {}: {e}", key.display())))?;
    Ok(Some((certs, key)))
}

/// The connector for these settings.
///
/// # Errors
///
/// [`AcctError::Tls`] when a certificate or key file cannot be read, or
/// `verify-ca`/`verify-full` has no root certificate.
pub fn connector(tls: &TlsSettings) -> Result<RustlsConnect, AcctError> {
    // ring (plain Rust and a little C, no cmake): deprecated in rustls
    // 0.23 for lacking post-quantum key exchange, which PostgreSQL's
    // OpenSSL does not offer either.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match tls.mode {
        SslMode::Disable | SslMode::Prefer => None,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => roots(tls)?,
    };
    let verifier = Verifier {
        roots,
        check_name: tls.mode == SslMode::VerifyFull,
        provider: provider.clone(),
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| AcctError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let config = match client_auth(tls)? {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| AcctError::Tls(format!("client certificate: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    Ok(RustlsConnect {
        config: Arc::new(config),
    })
}

/// `MakeTlsConnect` over rustls for the `postgres` client.
#[derive(Clone)]
pub struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = RustlsHandshake;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsHandshake, Self::Error> {
        let name = ServerName::try_from(domain)?.to_owned();
        Ok(RustlsHandshake {
            config: self.config.clone(),
            name,
        })
    }
}

/// One handshake with the server named.
pub struct RustlsHandshake {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsHandshake
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move {
            let s = connector.connect(self.name, stream).await?;
            Ok(TlsStream(s))
        })
    }
}

/// A TLS session with the server.
pub struct TlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> postgres::tls::TlsStream for TlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM goes without channel binding (`SCRAM-SHA-256`), as over
        // a plain connection.
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_keys_are_taken_out_of_a_key_value_string() {
        let (rest, tls) = split(
            "host=db port=5432 sslmode=verify-full sslrootcert=/etc/ca.pem \
             options='-c search_path=a b' password='it\\'s'",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.root_cert.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(
            rest,
            "host=db port=5432 options='-c search_path=a b' password='it\\'s'"
        );
        let (rest, tls) = split("host = db  dbname='x y'").unwrap();
        assert_eq!(tls.mode, SslMode::Prefer);
        assert_eq!(rest, "host=db dbname='x y'");
        let (_, tls) = split("host=db sslmode=require sslcert=/c sslkey=/k").unwrap();
        assert_eq!(
            (tls.mode, tls.cert, tls.key),
            (SslMode::Require, Some("/c".into()), Some("/k".into()))
        );
    }

    #[test]
    fn tls_keys_are_taken_out_of_a_url() {
        let (rest, tls) = split(
            "postgresql://u@db/acct?sslmode=verify-ca&application_name=m&sslrootcert=%2Fetc%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgresql://u@db/acct?application_name=m");
        assert_eq!(tls.mode, SslMode::VerifyCa);
        assert_eq!(tls.root_cert.as_deref(), Some("/etc/ca.pem"));
        let (rest, _) = split("postgresql://db/acct?sslmode=disable").unwrap();
        assert_eq!(rest, "postgresql://db/acct");
    }

    #[test]
    fn an_unknown_sslmode_is_refused_with_the_choices() {
        let e = split("host=db sslmode=verify").unwrap_err().to_string();
        assert!(e.contains("invalid sslmode \"verify\""), "{e}");
        assert!(e.contains("verify-full"), "{e}");
        let e = split("host=db dbname='x").unwrap_err().to_string();
        assert!(e.contains("does not end"), "{e}");
    }

    #[test]
    fn verify_modes_need_a_root_certificate() {
        let tls = TlsSettings {
            mode: SslMode::VerifyFull,
            root_cert: Some("/nonexistent/ca.pem".into()),
            cert: None,
            key: None,
        };
        let e = connector(&tls)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let tls = TlsSettings {
            cert: Some("/c".into()),
            root_cert: None,
            mode: SslMode::Require,
            key: None,
        };
        let e = connector(&tls)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("sslkey is not"), "{e}");
    }
}
