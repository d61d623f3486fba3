//! Registry pulls (issue 42 item 3): `srun --container-image=REGISTRY#IMAGE:TAG`
//! against real registries the test starts (Debian's `docker-registry`,
//! distribution 2.8, on loopback): one over plain HTTP without auth, one
//! over HTTPS (a certificate from a test CA that pyxis.conf's
//! `registry_ca` names) with token auth against a token server the test
//! runs itself (JWTs signed with a key whose certificate the registry
//! trusts, `rootcertbundle`). Both serve one storage directory: the test
//! pushes through the plain one, with the distribution API (blob uploads,
//! manifest PUTs), a busybox image as the other container tests build it.
//! Needs what the container tests need, plus `docker-registry` and
//! `openssl` (xtask/setup.sh installs them; CI must have them).

use crate::containers::{can_run, rootfs, settle_clean, sh, sha256, tar_dir, Scratch};
use crate::secs;
use base64::Engine;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether the registry's programs are here; CI must have them.
pub(crate) fn registry_tools(test: &str) -> bool {
    let missing: Vec<&str> = [
        Command::new("docker-registry")
            .arg("--version")
            .output()
            .is_err()
            .then_some("docker-registry (Debian package docker-registry)"),
        Command::new("openssl")
            .arg("version")
            .output()
            .is_err()
            .then_some("openssl"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "{test}: CI must run it; missing {missing:?} (xtask/setup.sh installs them)"
    );
    eprintln!("{test}: not run: it needs {missing:?} (xtask/setup.sh installs them)");
    false
}

fn openssl(args: &[&str], dir: &Path) {
    sh(Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null()));
}

/// A CA, a server certificate for 127.0.0.1 it signed, and the token
/// issuer's key and self-signed certificate.
pub(crate) fn make_certs(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let rsa = ["-newkey", "rsa:2048", "-nodes", "-days", "2"];
    let mut ca = vec!["req", "-x509"];
    ca.extend(rsa);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=muster test CA",
    ]);
    openssl(&ca, dir);
    let mut csr = vec!["req"];
    csr.extend(["-newkey", "rsa:2048", "-nodes"]);
    csr.extend([
        "-keyout",
        "tls.key",
        "-out",
        "tls.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    openssl(&csr, dir);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "tls.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "tls.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
        dir,
    );
    let mut token = vec!["req", "-x509"];
    token.extend(rsa);
    token.extend([
        "-keyout",
        "token.key",
        "-out",
        "token.crt",
        "-subj",
        "/CN=muster test token issuer",
    ]);
    openssl(&token, dir);
}

/// A `docker-registry serve` on 127.0.0.1, killed on drop.
pub(crate) struct Registry {
    child: Child,
    pub(crate) port: u16,
    pub(crate) log: PathBuf,
}

impl Registry {
    /// `secure`: (certificate dir, token server port): HTTPS and token auth.
    pub(crate) fn start(
        dir: &Path,
        name: &str,
        storage: &Path,
        secure: Option<(&Path, u16)>,
    ) -> Registry {
        let port = e2e::free_port();
        let mut conf = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n  secret: muster-test-secret\n",
            storage.display()
        );
        if let Some((certs, token_port)) = secure {
            conf.push_str(&format!(
                "  tls:\n    certificate: {c}/tls.crt\n    key: {c}/tls.key\n\
                 auth:\n  token:\n    realm: http://127.0.0.1:{token_port}/token\n\
                 \x20   service: muster-test\n    issuer: muster-test\n    rootcertbundle: {c}/token.crt\n",
                c = certs.display()
            ));
        }
        Registry::spawn(dir, name, port, &conf)
    }

    /// `docker-registry serve` of the configuration `conf` (which says
    /// `addr: 127.0.0.1:PORT`), once it listens.
    pub(crate) fn spawn(dir: &Path, name: &str, port: u16, conf: &str) -> Registry {
        let conf_path = dir.join(format!("{name}.yml"));
        std::fs::write(&conf_path, conf).unwrap();
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&conf_path)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("starting docker-registry");
        let r = Registry { child, port, log };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "docker-registry {name} did not listen: {}",
                std::fs::read_to_string(&r.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One plain HTTP/1.1 exchange: status, headers, body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP response");
    let head = String::from_utf8_lossy(&all[..split]).to_string();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    (status, headers, all[split + 4..].to_vec())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} header in {headers:?}"))
}

fn digest_of(bytes: &[u8], s: &Scratch) -> String {
    let tmp = s.path("digest.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    format!("sha256:{}", sha256(&tmp))
}

/// Uploads a blob (POST, then PUT with its digest).
fn push_blob(port: u16, repo: &str, bytes: &[u8], s: &Scratch) -> String {
    let digest = digest_of(bytes, s);
    let (st, h, body) = http(
        port,
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        b"",
    );
    assert_eq!(st, 202, "{}", String::from_utf8_lossy(&body));
    let loc = header(&h, "Location");
    let path = loc
        .strip_prefix(&format!("http://127.0.0.1:{port}"))
        .unwrap_or(loc);
    let sep = if path.contains('?') { '&' } else { '?' };
    let (st, _, body) = http(
        port,
        "PUT",
        &format!("{path}{sep}digest={digest}"),
        &[("Content-Type", "application/octet-stream")],
        bytes,
    );
    assert_eq!(st, 201, "{}", String::from_utf8_lossy(&body));
    digest
}

fn push_manifest(port: u16, repo: &str, reference: &str, media_type: &str, bytes: &[u8]) {
    let (st, _, body) = http(
        port,
        "PUT",
        &format!("/v2/{repo}/manifests/{reference}"),
        &[("Content-Type", media_type)],
        bytes,
    );
    assert_eq!(st, 201, "{}", String::from_utf8_lossy(&body));
}

/// A gzip'd layer of `dir`, and its diff_id (the tar's digest).
pub(crate) fn layer(s: &Scratch, name: &str, dir: &Path) -> (Vec<u8>, String) {
    let tar = s.path(&format!("{name}.tar"));
    tar_dir(dir, &tar);
    let diff_id = format!("sha256:{}", sha256(&tar));
    let out = Command::new("gzip").arg("-nc").arg(&tar).output().unwrap();
    assert!(out.status.success());
    (out.stdout, diff_id)
}

const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// Pushes an image of `layers` as `repo:tag` (a Docker v2 schema 2
/// manifest); returns the manifest's digest and the layers' digests.
pub(crate) fn push_image(
    port: u16,
    repo: &str,
    tag: &str,
    layers: &[(Vec<u8>, String)],
    s: &Scratch,
) -> (String, Vec<String>) {
    let diff_ids: Vec<String> = layers.iter().map(|(_, d)| format!("\"{d}\"")).collect();
    let config = format!(
        r#"{{"architecture":"{}","os":"linux","config":{{"Env":["PATH=/bin:/usr/bin","IMAGE_VAR=from-registry"],"WorkingDir":"/"}},"rootfs":{{"type":"layers","diff_ids":[{}]}}}}"#,
        oci_arch(),
        diff_ids.join(",")
    );
    let config_digest = push_blob(port, repo, config.as_bytes(), s);
    let mut entries = Vec::new();
    let mut digests = Vec::new();
    for (bytes, _) in layers {
        let d = push_blob(port, repo, bytes, s);
        entries.push(format!(
            r#"{{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":{},"digest":"{d}"}}"#,
            bytes.len()
        ));
        digests.push(d);
    }
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"{DOCKER_MANIFEST}","config":{{"mediaType":"application/vnd.docker.container.image.v1+json","size":{},"digest":"{config_digest}"}},"layers":[{}]}}"#,
        config.len(),
        entries.join(",")
    );
    push_manifest(port, repo, tag, DOCKER_MANIFEST, manifest.as_bytes());
    (digest_of(manifest.as_bytes(), s), digests)
}

fn oci_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The token server: grants what a scope asks, except `test/private`,
/// which needs `alice:secret`; counts the tokens it gave.
pub(crate) struct TokenServer {
    pub(crate) port: u16,
    pub(crate) issued: Arc<AtomicUsize>,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A registry token (RS256, the issuer's certificate in `x5c`).
fn mint(certs: &Path, x5c: &str, scope: Option<&str>) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let access: Vec<serde_json::Value> = scope
        .and_then(|s| {
            let mut parts = s.splitn(3, ':');
            let kind = parts.next()?;
            let name = parts.next()?;
            let actions: Vec<&str> = parts.next()?.split(',').collect();
            Some(serde_json::json!({"type": kind, "name": name, "actions": actions}))
        })
        .into_iter()
        .collect();
    let head = serde_json::json!({"typ": "JWT", "alg": "RS256", "x5c": [x5c]});
    let claims = serde_json::json!({
        "iss": "muster-test", "sub": "alice", "aud": "muster-test",
        "exp": now + 600, "nbf": now - 60, "iat": now - 60,
        "jti": format!("{now}-{}", scope.unwrap_or("")), "access": access,
    });
    let signing = format!(
        "{}.{}",
        b64url(head.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(certs.join("token.key"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(signing.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    format!("{signing}.{}", b64url(&out.stdout))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl TokenServer {
    pub(crate) fn start(certs: &Path) -> TokenServer {
        let der = Command::new("openssl")
            .args(["x509", "-outform", "der", "-in"])
            .arg(certs.join("token.crt"))
            .output()
            .unwrap();
        assert!(der.status.success());
        let x5c = base64::engine::general_purpose::STANDARD.encode(&der.stdout);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let issued = Arc::new(AtomicUsize::new(0));
        let (count, certs) = (issued.clone(), certs.to_path_buf());
        let alice = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:secret")
        );
        // The listener lives as long as the test binary; each request is
        // answered and its connection closed.
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                let mut authorization = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("authorization") {
                            authorization = Some(v.trim().to_string());
                        }
                    }
                }
                let target = first.split(' ').nth(1).unwrap_or("");
                let query = target.split_once('?').map_or("", |(_, q)| q);
                let scope = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("scope="))
                    .map(percent_decode);
                let private = scope
                    .as_deref()
                    .is_some_and(|s| s.contains(":test/private:"));
                let mut conn = conn;
                let reply = if private && authorization.as_deref() != Some(alice.as_str()) {
                    "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_string()
                } else {
                    count.fetch_add(1, Ordering::SeqCst);
                    let token = mint(&certs, &x5c, scope.as_deref());
                    let body = format!(r#"{{"token":"{token}","expires_in":600}}"#);
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = conn.write_all(reply.as_bytes());
            }
        });
        TokenServer { port, issued }
    }
}

/// Registry references pulled over HTTP and HTTPS with token auth (and the
/// user's enroot credentials for a private repository), through a mirror,
/// by digest, from the cache; a bad tag, a refused token and a corrupted
/// blob fail the step with pyxis's lines while the node stays idle;
/// nothing stays mounted.
#[test]
fn registry_images_are_pulled_verified_and_cached() {
    let test = "registry_images_are_pulled_verified_and_cached";
    if !can_run(test) || !registry_tools(test) {
        return;
    }
    let s = Scratch::new();
    let certs = s.path("certs");
    make_certs(&certs);
    let storage = s.path("registry-storage");
    let plain = Registry::start(s.dir.path(), "plain", &storage, None);
    let tokens = TokenServer::start(&certs);
    let secure = Registry::start(
        s.dir.path(),
        "secure",
        &storage,
        Some((&certs, tokens.port)),
    );

    // The images: busybox with a marker; a second layer for the one
    // whose blob gets corrupted.
    let root = s.path("rootfs");
    rootfs(&root);
    std::fs::remove_file(root.join("etc/environment")).unwrap();
    std::fs::write(root.join("etc/marker"), "pulled from the registry\n").unwrap();
    let base = layer(&s, "base", &root);
    let extra_dir = s.path("extra");
    std::fs::create_dir_all(extra_dir.join("etc")).unwrap();
    std::fs::write(extra_dir.join("etc/extra"), "x".repeat(4096)).unwrap();
    let extra = layer(&s, "extra", &extra_dir);
    let (busybox, _) = push_image(
        plain.port,
        "test/busybox",
        "1",
        std::slice::from_ref(&base),
        &s,
    );
    push_image(
        plain.port,
        "test/private",
        "1",
        std::slice::from_ref(&base),
        &s,
    );
    let (_, broken_layers) = push_image(
        plain.port,
        "test/broken",
        "1",
        &[base.clone(), extra.clone()],
        &s,
    );
    // Docker Hub's `busybox` on the mirror: an index whose first entry is
    // another platform's.
    let (hub, _) = push_image(
        plain.port,
        "library/busybox",
        "single",
        std::slice::from_ref(&base),
        &s,
    );
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{{"mediaType":"{DOCKER_MANIFEST}","digest":"{hub}","size":1,"platform":{{"architecture":"s390x","os":"linux"}}}},{{"mediaType":"{DOCKER_MANIFEST}","digest":"{hub}","size":1,"platform":{{"architecture":"{}","os":"linux"}}}}]}}"#,
        oci_arch()
    );
    push_manifest(
        plain.port,
        "library/busybox",
        "latest",
        "application/vnd.oci.image.index.v1+json",
        index.as_bytes(),
    );
    sh(Command::new("chmod").args(["-R", "a+rX"]).arg(s.dir.path()));

    let c = s.cluster(&format!(
        "registry_http=127.0.0.1:{plain}\nregistry_ca={ca}\nregistry_mirror=docker.io=http://127.0.0.1:{plain}\n",
        plain = plain.port,
        ca = certs.join("ca.crt").display()
    ));
    let probe = "cat /etc/marker; echo $IMAGE_VAR";
    let want = "pulled from the registry\nfrom-registry\n";
    let images = || {
        std::fs::read_dir(s.path("cache/images"))
            .map(|d| d.count())
            .unwrap_or(0)
    };

    // Plain HTTP, no auth; then from the cache; then by digest.
    let direct = format!("--container-image=127.0.0.1:{}#test/busybox:1", plain.port);
    let out = c.ok("srun", &[&direct, "sh", "-c", probe]);
    assert_eq!(out.stdout, want, "{out}");
    assert_eq!(images(), 1);
    let out = c.ok("srun", &[&direct, "sh", "-c", probe]);
    assert_eq!(out.stdout, want, "{out}");
    let by_digest = format!(
        "--container-image=127.0.0.1:{}#test/busybox@{busybox}",
        plain.port
    );
    let out = c.ok("srun", &[&by_digest, "cat", "/etc/marker"]);
    assert_eq!(out.stdout, "pulled from the registry\n", "{out}");
    assert_eq!(images(), 1, "the same manifest is one cached image");

    // HTTPS with token auth (anonymous), the blobs fetched again.
    std::fs::remove_dir_all(s.path("cache/images")).unwrap();
    let secure_ref = format!("--container-image=127.0.0.1:{}#test/busybox:1", secure.port);
    let out = c.ok("srun", &[&secure_ref, "sh", "-c", probe]);
    assert_eq!(out.stdout, want, "{out}");
    assert!(tokens.issued.load(Ordering::SeqCst) >= 1);

    // A private repository: refused without credentials, pulled with the
    // user's enroot credentials file.
    let private = format!("--container-image=127.0.0.1:{}#test/private:1", secure.port);
    let out = c.run("srun", &[&private, "true"]);
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr
            .contains("slurmstepd: error: pyxis: failed to import docker image\n"),
        "{out}"
    );
    assert!(
        out.stderr.contains(&format!(
            "pyxis:     [ERROR] URL http://127.0.0.1:{}/token returned error code: 401 Unauthorized",
            tokens.port
        )),
        "{out}"
    );
    let enroot = s.path("enroot");
    std::fs::create_dir_all(&enroot).unwrap();
    std::fs::write(
        enroot.join(".credentials"),
        "machine 127.0.0.1 login alice password secret\n",
    )
    .unwrap();
    let enroot_env = enroot.display().to_string();
    let out = c.run_env(
        "srun",
        &[&private, "cat", "/etc/marker"],
        &[("ENROOT_CONFIG_PATH", &enroot_env)],
    );
    assert!(out.ok(), "{out}");
    assert_eq!(out.stdout, "pulled from the registry\n", "{out}");

    // A batch script in the private image: the job's environment names
    // the credentials there too.
    c.write("b.sh", "#!/bin/sh\ncat /etc/marker\necho $IMAGE_VAR\n");
    let out = c.run_env(
        "sbatch",
        &[&private, "-o", "b.out", "b.sh"],
        &[("ENROOT_CONFIG_PATH", &enroot_env)],
    );
    assert!(out.ok(), "{out}");
    let id: u32 = out
        .stdout
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.read("b.out"), want);

    // Docker Hub's name through the mirror, the index's platform picked.
    let out = c.ok("srun", &["--container-image=busybox", "sh", "-c", probe]);
    assert_eq!(out.stdout, want, "{out}");

    // A tag the registry does not have.
    let out = c.run(
        "srun",
        &[
            &format!(
                "--container-image=127.0.0.1:{}#test/busybox:nope",
                plain.port
            ),
            "true",
        ],
    );
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr.contains(&format!(
            "slurmstepd: error: pyxis:     [ERROR] URL http://127.0.0.1:{}/v2/test/busybox/manifests/nope returned error code: 404 Not Found",
            plain.port
        )),
        "{out}"
    );

    // A blob corrupted in the registry's storage is refused.
    let bad = &broken_layers[1];
    let hex = bad.strip_prefix("sha256:").unwrap();
    let data = storage.join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ));
    let mut bytes = std::fs::read(&data).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&data, bytes).unwrap();
    let out = c.run(
        "srun",
        &[
            &format!("--container-image=127.0.0.1:{}#test/broken:1", plain.port),
            "true",
        ],
    );
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr
            .contains(&format!("[ERROR] image blob {bad} is corrupted")),
        "{out}"
    );
    assert_eq!(c.node_state("node1"), "idle");
    // No pull's work directory is left behind.
    let left: Vec<_> = std::fs::read_dir(s.path("cache/tmp"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
    drop((plain, secure));
}
