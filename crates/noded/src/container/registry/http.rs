//! A small blocking HTTP/1.1 client: one request per connection
//! (`Connection: close`), plain TCP or TLS (rustls, the workspace's TLS
//! crate), bodies by `Content-Length`, chunked, or to the end. Enough for
//! the distribution API; redirects and auth are the caller's.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long a connection may take to open, and a read may wait.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const READ_TIMEOUT: Duration = Duration::from_secs(120);
/// The most a status line and headers may take.
const MAX_HEAD: usize = 64 << 10;

/// An `http://` or `https://` address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// TLS.
    pub https: bool,
    /// Host name or address (without brackets).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Url {
    /// Parses an absolute address.
    pub fn parse(s: &str) -> Result<Url, String> {
        let (https, rest) = if let Some(r) = s.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = s.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("not an http(s) URL: {s}"));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let default_port = if https { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| format!("bad URL: {s}"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| format!("bad port in URL: {s}"))?,
                None => default_port,
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().map_err(|_| format!("bad port in URL: {s}"))?,
                ),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() {
            return Err(format!("bad URL: {s}"));
        }
        Ok(Url {
            https,
            host,
            port,
            path,
        })
    }

    /// `host[:port]` as the `Host` header and credentials name it.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == if self.https { 443 } else { 80 } {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The address `location` (absolute, or a path) names, seen from here.
    pub fn join(&self, location: &str) -> Result<Url, String> {
        if location.starts_with("http://") || location.starts_with("https://") {
            return Url::parse(location);
        }
        if location.starts_with('/') {
            return Ok(Url {
                path: location.to_string(),
                ..self.clone()
            });
        }
        let base = self.path.split('?').next().unwrap_or("/");
        let dir = &base[..base.rfind('/').map_or(0, |i| i + 1)];
        Ok(Url {
            path: format!("{dir}{location}"),
            ..self.clone()
        })
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority(), self.path)
    }
}

/// The certificates TLS connections trust: the system's bundle, plus the
/// site's (`registry_ca`).
pub fn tls_config(extra_ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for bundle in [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/ssl/cert.pem",
    ] {
        if let Ok(iter) = CertificateDer::pem_file_iter(bundle) {
            for cert in iter.flatten() {
                let _ = roots.add(cert);
            }
            break;
        }
    }
    if let Some(path) = extra_ca {
        let iter = CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("cannot read registry_ca {}: {e}", path.display()))?;
        for cert in iter {
            let cert =
                cert.map_err(|e| format!("cannot read registry_ca {}: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("registry_ca {}: {e}", path.display()))?;
        }
    }
    // ring, as the accounting crate's TLS: deprecated in rustls 0.23 for
    // lacking post-quantum key exchange, which registries do not require.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// A response: status, headers, and the body to read.
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The reason phrase (`Not Found`).
    pub reason: String,
    headers: Vec<(String, String)>,
    body: Body,
}

impl Response {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The whole body, at most `limit` bytes.
    pub fn read_all(mut self, limit: u64) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        (&mut self.body)
            .take(limit + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("reading the response: {e}"))?;
        if out.len() as u64 > limit {
            return Err(format!("response larger than {limit} bytes"));
        }
        Ok(out)
    }

    /// The body as a reader.
    pub fn body(&mut self) -> &mut dyn Read {
        &mut self.body
    }
}

enum Body {
    Length(std::io::Take<BufReader<Box<dyn Stream>>>),
    Chunked(Chunked),
    ToEnd(BufReader<Box<dyn Stream>>),
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Body::Length(r) => r.read(buf),
            Body::Chunked(r) => r.read(buf),
            // A TLS peer that closes without close_notify ends the body.
            Body::ToEnd(r) => match r.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
                other => other,
            },
        }
    }
}

/// `Transfer-Encoding: chunked`.
struct Chunked {
    inner: BufReader<Box<dyn Stream>>,
    left: u64,
    done: bool,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.inner.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = u64::from_str_radix(size, 16).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "bad chunk size")
            })?;
            if self.left == 0 {
                // Trailers, up to the empty line.
                loop {
                    line.clear();
                    if self.inner.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left as usize);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= n as u64;
        if self.left == 0 {
            let mut crlf = [0u8; 2];
            self.inner.read_exact(&mut crlf)?;
        }
        Ok(n)
    }
}

fn connect(url: &Url, tls: &Arc<rustls::ClientConfig>) -> Result<Box<dyn Stream>, String> {
    let addrs: Vec<_> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", url.host))?
        .collect();
    let mut last = format!("cannot resolve {}", url.host);
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(tcp) => {
                let _ = tcp.set_read_timeout(Some(READ_TIMEOUT));
                let _ = tcp.set_write_timeout(Some(READ_TIMEOUT));
                if !url.https {
                    return Ok(Box::new(tcp));
                }
                let name = ServerName::try_from(url.host.clone())
                    .map_err(|e| format!("bad host name {}: {e}", url.host))?;
                let conn = rustls::ClientConnection::new(tls.clone(), name)
                    .map_err(|e| format!("TLS: {e}"))?;
                return Ok(Box::new(rustls::StreamOwned::new(conn, tcp)));
            }
            Err(e) => last = format!("cannot connect to {}: {e}", url.authority()),
        }
    }
    Err(last)
}

/// Sends `GET url` with `headers`, and reads the status and headers.
pub fn get(
    url: &Url,
    headers: &[(&str, String)],
    tls: &Arc<rustls::ClientConfig>,
) -> Result<Response, String> {
    let mut stream = connect(url, tls)?;
    let mut req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: muster-noded\r\nConnection: close\r\n",
        url.path,
        url.authority()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream
        .write_all(req.as_bytes())
        .and_then(|_| stream.flush())
        .map_err(|e| format!("{url}: {e}"))?;
    let mut reader = BufReader::new(stream);
    let mut head = 0usize;
    let mut line = String::new();
    let mut read_line = |reader: &mut BufReader<Box<dyn Stream>>, line: &mut String| {
        line.clear();
        let n = reader.read_line(line).map_err(|e| format!("{url}: {e}"))?;
        head += n;
        if n == 0 || head > MAX_HEAD {
            return Err(format!("{url}: bad HTTP response"));
        }
        Ok(())
    };
    read_line(&mut reader, &mut line)?;
    let mut parts = line.trim_end().splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .filter(|_| version.starts_with("HTTP/1."))
        .ok_or_else(|| format!("{url}: bad HTTP response"))?;
    let reason = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        read_line(&mut reader, &mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let body =
        if find("Transfer-Encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
            Body::Chunked(Chunked {
                inner: reader,
                left: 0,
                done: false,
            })
        } else if let Some(n) = find("Content-Length").and_then(|v| v.parse::<u64>().ok()) {
            Body::Length(reader.take(n))
        } else {
            Body::ToEnd(reader)
        };
    Ok(Response {
        status,
        reason,
        headers,
        body,
    })
}

/// `s` percent-encoded for a query value.
pub fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
