//! Registry pulls (`--container-image=[USER@][REGISTRY#]IMAGE[:TAG]`,
//! enroot's form; `IMAGE@sha256:...` for a digest): the OCI distribution
//! API over HTTP/1.1, by hand over rustls (`http`), with enroot's
//! authentication (`auth`).
//!
//! ```text
//!   reference --(pyxis.conf: registry_mirror, registry_http)--> endpoint
//!   GET /v2/REPO/manifests/TAG  (Accept: OCI and Docker v2 manifests, indexes)
//!     401 + WWW-Authenticate --> token from the realm (or Basic) --> again
//!   index/list --> the linux/<this arch> manifest
//!   manifest digest in the cache? --> that squashfs
//!   GET /v2/REPO/blobs/DIGEST for the config and each layer, each sha256
//!   checked while it is written --> image::build_image (layers to squashfs)
//! ```
//!
//! Without a registry (`IMAGE` or `IMAGE:TAG`) the image is Docker Hub's
//! (`docker.io`, `library/` before one-word names), as enroot does. When
//! pyxis.conf names a mirror for the registry (or for all), every request
//! goes to the mirror instead, with the same repository path.
//! Errors are enroot's log lines (`URL ... returned error code: 404 Not
//! Found`), which the caller prints under pyxis's `failed to import docker
//! image`.

pub mod auth;
pub mod http;

#[cfg(test)]
mod tests;

use super::image;
use super::SiteConf;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most a manifest, an index or a config may weigh.
const MAX_DOCUMENT: u64 = 16 << 20;
/// Redirects followed per request (blob stores redirect to a CDN).
const MAX_REDIRECTS: usize = 5;

/// What the manifest requests accept, as Docker and enroot ask.
const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.v2+json";

/// A parsed `[USER@][REGISTRY#]IMAGE[:TAG|@DIGEST]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// `USER@`: whose credentials to use.
    pub user: Option<String>,
    /// The registry as written (`docker.io` when none).
    pub registry: String,
    /// The repository (`library/ubuntu`).
    pub repository: String,
    /// The tag or `sha256:...` digest.
    pub reference: String,
}

/// Docker Hub's name and the host its API answers on.
const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_API: &str = "registry-1.docker.io";

impl Reference {
    /// Parses enroot's form (`docker://` may lead).
    pub fn parse(s: &str) -> Result<Reference, String> {
        let bad = || format!("invalid image reference: {s}");
        let rest = s.strip_prefix("docker://").unwrap_or(s);
        // A digest: `...@sha256:HEX` at the end.
        let (rest, digest) = match rest.rsplit_once("@sha256:") {
            Some((r, hex)) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
                (r, Some(format!("sha256:{}", hex.to_ascii_lowercase())))
            }
            _ => (rest, None),
        };
        let hash = rest.find('#');
        let (user, rest) = match rest.find('@') {
            Some(at) if hash.map_or(true, |h| at < h) => (Some(&rest[..at]), &rest[at + 1..]),
            _ => (None, rest),
        };
        let (registry, image) = match rest.split_once('#') {
            Some((r, i)) => (Some(r), i),
            None => (None, rest),
        };
        let (repository, tag) = match image.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r, Some(t)),
            _ => (image, None),
        };
        let name_ok = !repository.is_empty()
            && !repository.starts_with('/')
            && !repository.ends_with('/')
            && !repository.contains("//")
            && repository
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"/._-".contains(&b));
        let tag_ok = tag.map_or(true, |t| {
            !t.is_empty()
                && t.len() <= 128
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
        let registry_ok = registry.map_or(true, |r| {
            !r.is_empty()
                && r.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        });
        if !name_ok || !tag_ok || !registry_ok || user.is_some_and(str::is_empty) {
            return Err(bad());
        }
        if digest.is_some() && tag.is_some() {
            return Err(bad());
        }
        let registry = registry.unwrap_or(DOCKER_HUB).to_string();
        let repository = if registry == DOCKER_HUB && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository.to_string()
        };
        Ok(Reference {
            user: user.map(str::to_string),
            registry,
            repository,
            reference: digest.unwrap_or_else(|| tag.unwrap_or("latest").to_string()),
        })
    }

    /// Where the API is: the mirror pyxis.conf names for this registry (or
    /// for all), else the registry itself, by HTTPS unless `registry_http`
    /// lists it.
    pub fn endpoint(&self, conf: &SiteConf) -> Result<http::Url, String> {
        let mirror = conf
            .registry_mirrors
            .iter()
            .find(|(r, _)| r.as_deref() == Some(self.registry.as_str()))
            .or_else(|| conf.registry_mirrors.iter().find(|(r, _)| r.is_none()));
        if let Some((_, url)) = mirror {
            let mut u = http::Url::parse(url).map_err(|e| format!("registry_mirror: {e}"))?;
            u.path = u.path.trim_end_matches('/').to_string();
            return Ok(u);
        }
        let host = if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            self.registry.as_str()
        };
        let https = !conf.registry_http.iter().any(|h| h == &self.registry);
        let scheme = if https { "https" } else { "http" };
        let mut u = http::Url::parse(&format!("{scheme}://{host}"))?;
        u.path.clear();
        Ok(u)
    }
}

/// One pull's conversation with a registry: the endpoint, the user's
/// credentials, and the authorization once earned.
struct Session<'a> {
    base: http::Url,
    tls: Arc<rustls::ClientConfig>,
    credentials: &'a [auth::NetrcEntry],
    user: Option<&'a str>,
    authorization: Option<String>,
}

fn basic(entry: &auth::NetrcEntry) -> String {
    use base64::Engine;
    let raw = format!("{}:{}", entry.login, entry.password);
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// enroot's line for a refused request.
fn refused(url: &http::Url, r: &http::Response) -> String {
    let shown = url.to_string();
    let shown = shown.split('?').next().unwrap_or(&shown);
    format!(
        "URL {shown} returned error code: {} {}",
        r.status,
        r.reason.trim()
    )
}

impl Session<'_> {
    /// `GET base + path`, authenticating once when asked, following
    /// redirects; an answer other than 200 is an error.
    fn get(&mut self, path: &str, accept: Option<&str>) -> Result<http::Response, String> {
        let mut url = self.base.clone();
        url.path = format!("{}{path}", self.base.path);
        let mut authed = false;
        let mut hops = 0;
        loop {
            let mut headers = Vec::new();
            if let Some(a) = accept {
                headers.push(("Accept", a.to_string()));
            }
            // Credentials go only to the registry, never to where it
            // redirects.
            let same = url.authority() == self.base.authority();
            if let (true, Some(a)) = (same, &self.authorization) {
                headers.push(("Authorization", a.clone()));
            }
            let r = http::get(&url, &headers, &self.tls)?;
            match r.status {
                200 => return Ok(r),
                301 | 302 | 303 | 307 | 308 if hops < MAX_REDIRECTS => {
                    let loc = r
                        .header("Location")
                        .ok_or_else(|| refused(&url, &r))?
                        .to_string();
                    url = url.join(&loc)?;
                    hops += 1;
                }
                401 if same && !authed => {
                    let challenge = r
                        .header("WWW-Authenticate")
                        .and_then(auth::parse_challenge)
                        .ok_or_else(|| refused(&url, &r))?;
                    self.authorization = Some(self.authorize(&challenge, &url, &r)?);
                    authed = true;
                }
                _ => return Err(refused(&url, &r)),
            }
        }
    }

    /// The `Authorization` value a challenge asks for.
    fn authorize(
        &self,
        challenge: &auth::Challenge,
        url: &http::Url,
        r: &http::Response,
    ) -> Result<String, String> {
        match challenge {
            auth::Challenge::Basic => {
                match auth::lookup(self.credentials, &self.base.authority(), self.user) {
                    Some(e) => Ok(basic(e)),
                    None => Err(refused(url, r)),
                }
            }
            auth::Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                let mut token_url = http::Url::parse(realm)?;
                let mut query = Vec::new();
                if let Some(s) = service {
                    query.push(format!("service={}", http::encode(s)));
                }
                if let Some(s) = scope {
                    query.push(format!("scope={}", http::encode(s)));
                }
                if !query.is_empty() {
                    let sep = if token_url.path.contains('?') {
                        '&'
                    } else {
                        '?'
                    };
                    token_url.path = format!("{}{sep}{}", token_url.path, query.join("&"));
                }
                let mut headers = Vec::new();
                if let Some(e) = auth::lookup(self.credentials, &token_url.authority(), self.user) {
                    headers.push(("Authorization", basic(e)));
                }
                let resp = http::get(&token_url, &headers, &self.tls)?;
                if resp.status != 200 {
                    return Err(refused(&token_url, &resp));
                }
                let body: serde_json::Value = serde_json::from_slice(&resp.read_all(MAX_DOCUMENT)?)
                    .map_err(|e| format!("bad token from {}: {e}", token_url.authority()))?;
                let token = body
                    .get("token")
                    .or_else(|| body.get("access_token"))
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| format!("no token from {}", token_url.authority()))?;
                Ok(format!("Bearer {token}"))
            }
        }
    }

    /// A manifest or index, and its digest.
    fn manifest(
        &mut self,
        repository: &str,
        reference: &str,
    ) -> Result<(serde_json::Value, String), String> {
        let r = self.get(
            &format!("/v2/{repository}/manifests/{reference}"),
            Some(MANIFEST_ACCEPT),
        )?;
        let bytes = r.read_all(MAX_DOCUMENT)?;
        let digest = sha256_hex(&bytes);
        if reference.starts_with("sha256:") && reference != digest {
            return Err(format!(
                "image manifest {reference} is corrupted (its sha256 is {digest})"
            ));
        }
        let value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("bad manifest for {repository}:{reference}: {e}"))?;
        Ok((value, digest))
    }

    /// Downloads a blob to `dir/HEX`, checking its digest as it comes.
    fn blob(&mut self, repository: &str, digest: &str, dir: &Path) -> Result<PathBuf, String> {
        let hex = digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| format!("unsupported digest {digest}"))?;
        let mut r = self.get(&format!("/v2/{repository}/blobs/{digest}"), None)?;
        let path = dir.join(hex);
        let mut file = std::fs::File::create(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = r
                .body()
                .read(&mut buf)
                .map_err(|e| format!("reading blob {digest}: {e}"))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            file.write_all(&buf[..n])
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        let got = format!("sha256:{}", hex_of(&h.finalize()));
        if got != digest {
            return Err(format!(
                "image blob {digest} is corrupted (its sha256 is {got})"
            ));
        }
        Ok(path)
    }
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("sha256:{}", hex_of(&Sha256::digest(bytes)))
}

/// This node's platform in OCI's words.
fn oci_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// Where a pull takes the user's credentials from: enroot's
/// `$ENROOT_CONFIG_PATH/.credentials`, by default
/// `${XDG_CONFIG_HOME:-$HOME/.config}/enroot/.credentials`.
pub fn credentials_path(env: &[(String, String)], home: Option<&str>) -> Option<PathBuf> {
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let config = match get("ENROOT_CONFIG_PATH") {
        Some(p) => PathBuf::from(p),
        None => match get("XDG_CONFIG_HOME") {
            Some(x) => Path::new(x).join("enroot"),
            None => Path::new(get("HOME").or(home)?).join(".config/enroot"),
        },
    };
    Some(config.join(".credentials"))
}

/// Pulls `reference` (already parsed) for the user `who`, whose
/// credentials file is `credentials`; returns the cached squashfs. The
/// error is pyxis's block: `failed to import docker image` and enroot's
/// log line.
pub fn pull(
    reference: &Reference,
    conf: &SiteConf,
    credentials: Option<&Path>,
    who: (u32, u32),
) -> Result<PathBuf, String> {
    pull_inner(reference, conf, credentials, who).map_err(|e| {
        format!(
            "pyxis: failed to import docker image\npyxis: printing enroot log file:\npyxis:     [ERROR] {e}"
        )
    })
}

fn pull_inner(
    reference: &Reference,
    conf: &SiteConf,
    credentials: Option<&Path>,
    who: (u32, u32),
) -> Result<PathBuf, String> {
    let entries = credentials
        .map(|p| auth::read_credentials(p, who))
        .unwrap_or_default();
    let mut session = Session {
        base: reference.endpoint(conf)?,
        tls: http::tls_config(conf.registry_ca.as_deref())?,
        credentials: &entries,
        user: reference.user.as_deref(),
        authorization: None,
    };
    let repo = &reference.repository;
    let (mut manifest, mut digest) = session.manifest(repo, &reference.reference)?;
    // An index (OCI) or manifest list (Docker): this node's platform.
    if let Some(list) = manifest.get("manifests").and_then(|m| m.as_array()) {
        let pick = list
            .iter()
            .find(|m| {
                m.pointer("/platform/os").and_then(|v| v.as_str()) == Some("linux")
                    && m.pointer("/platform/architecture").and_then(|v| v.as_str())
                        == Some(oci_arch())
            })
            .and_then(|m| m.get("digest").and_then(|d| d.as_str()))
            .ok_or_else(|| {
                format!(
                    "no image for linux/{} in {}#{repo}:{}",
                    oci_arch(),
                    reference.registry,
                    reference.reference
                )
            })?
            .to_string();
        (manifest, digest) = session.manifest(repo, &pick)?;
    }
    if manifest.get("schemaVersion").and_then(|v| v.as_u64()) != Some(2)
        || manifest.get("layers").is_none()
    {
        return Err(format!(
            "unsupported manifest for {}#{repo}:{} (only Docker v2 schema 2 and OCI images)",
            reference.registry, reference.reference
        ));
    }
    if let Some(out) = image::cached_image(conf, &digest) {
        return Ok(out);
    }
    let work = image::work_dir(conf, "pull").map_err(|e| strip_pyxis(&e))?;
    let result = (|| {
        let config_digest = manifest
            .pointer("/config/digest")
            .and_then(|d| d.as_str())
            .ok_or("the manifest names no config")?;
        let config_path = session.blob(repo, config_digest, &work)?;
        let config_bytes = std::fs::read(&config_path).map_err(|e| e.to_string())?;
        let config: serde_json::Value =
            serde_json::from_slice(&config_bytes).map_err(|e| format!("bad image config: {e}"))?;
        let mut layers = Vec::new();
        for l in manifest["layers"].as_array().cloned().unwrap_or_default() {
            let d = l["digest"].as_str().unwrap_or("");
            layers.push(session.blob(repo, d, &work)?);
        }
        image::build_image(&layers, &image::image_config(&config), &digest, conf)
            .map_err(|e| strip_pyxis(&e))
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// The import's own errors carry pyxis's prefix; under the log line they
/// do not.
fn strip_pyxis(e: &str) -> String {
    e.strip_prefix("pyxis: ").unwrap_or(e).to_string()
}
