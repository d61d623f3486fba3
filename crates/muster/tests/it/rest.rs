//! The REST API (`muster restd`, slurmrestd) end to end with real daemons:
//! tokens from `scontrol token`, submit, query and cancel over HTTP, bad
//! tokens refused as slurmrestd refuses them, and (as root, with two real
//! users) a user who cannot cancel another's job over REST either.

use crate::auth::{is_root, TestUser};
use crate::{builder, secs};
use e2e::Cluster;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A JWT key outside the cluster's directory (its path must be in
/// slurm.conf before the cluster starts).
pub(crate) struct Key {
    _dir: tempfile::TempDir,
    pub(crate) path: std::path::PathBuf,
    pub(crate) bytes: Vec<u8>,
}

pub(crate) fn jwt_key() -> Key {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("jwt.key");
    let bytes: Vec<u8> = (0..32u8)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    std::fs::write(&path, &bytes).expect("writing the key");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    Key {
        _dir: dir,
        path,
        bytes,
    }
}

pub(crate) fn jwt_cluster(key: &Key) -> Cluster {
    builder()
        .nodes(1)
        .conf_extra(&format!(
            "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}\n",
            key.path.display()
        ))
        .start()
}

/// A running `muster restd`, stopped (SIGTERM, then waited for) on drop.
pub(crate) struct Restd {
    child: Child,
    pub(crate) addr: String,
    /// The OpenAPI document it serves: every answer is checked against it.
    pub(crate) doc: serde_json::Value,
}

impl Restd {
    pub(crate) fn start(c: &Cluster) -> Restd {
        let addr = format!("127.0.0.1:{}", e2e::free_port());
        let mut cmd = Command::new(c.binary());
        cmd.args(["restd", "-f"])
            .arg(c.conf())
            .args(["-a", "rest_auth/jwt", &addr]);
        Restd::spawn(c, cmd, addr)
    }

    /// Starts `cmd` (a `muster restd` command line listening on `addr`,
    /// a TCP address or `unix:PATH`) and waits until it listens.
    pub(crate) fn spawn(c: &Cluster, mut cmd: Command, addr: String) -> Restd {
        let log = std::fs::File::create(c.root().join("log/restd.log")).expect("restd log");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting muster restd");
        let mut r = Restd {
            child,
            addr,
            doc: serde_json::Value::Null,
        };
        c.wait_until("restd to listen", secs(20), || {
            match r.addr.strip_prefix("unix:") {
                Some(path) => std::os::unix::net::UnixStream::connect(path)
                    .ok()
                    .map(|_| ()),
                None => std::net::TcpStream::connect(&r.addr).ok().map(|_| ()),
            }
        });
        if !r.addr.starts_with("unix:") {
            let (status, body) = http(&r.addr, "GET", "/openapi/v3", &[], "");
            assert_eq!(status, 200, "{body}");
            r.doc = json(&body);
        }
        r
    }

    /// One request; (status, body).
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let (status, answer) = http(&self.addr, method, path, headers, body);
        // Every JSON answer fits the document restd serves.
        let route = path.split('?').next().unwrap_or(path);
        if let Some(schema) = restd::openapi::schema_for(method, route) {
            if !self.doc.is_null() && answer.starts_with('{') {
                // A refusal fits the route's schema (`jobs: []` with the
                // errors) or the plain errors one.
                let v = json(&answer);
                let fits = restd::openapi::validate(&self.doc, schema, &v);
                if let Err(e) = fits {
                    if status == 200
                        || restd::openapi::validate(&self.doc, "v0.0.38_errors", &v).is_err()
                    {
                        panic!(
                            "{method} {path}: the answer does not fit the document: {e}\n{answer}"
                        );
                    }
                }
            }
        }
        (status, answer)
    }

    pub(crate) fn get(&self, path: &str, token: &str) -> (u16, serde_json::Value) {
        let (status, body) = self.call("GET", path, &[("X-SLURM-USER-TOKEN", token)], "");
        (status, json(&body))
    }
}

/// One HTTP/1.1 request to `addr`; (status, body).
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connecting to restd");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).expect("sending");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("reading the answer");
    let (head, body) = out.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, body.to_string())
}

impl Drop for Restd {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// A directory for test users' homes that they can reach.
pub(crate) fn users_base() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().expect("a directory");
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    base
}

pub(crate) fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

pub(crate) fn token_of(out: &e2e::Output) -> String {
    assert_eq!(out.code, 0, "{out}");
    out.stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .unwrap_or_else(|| panic!("no SLURM_JWT= in {out}"))
        .to_string()
}

/// Checks `text` against the Prometheus text format (0.0.4): every sample
/// is `name{label="value",...} number` of a family declared before it by
/// `# TYPE`, each family's samples together.
pub(crate) fn prometheus_text(text: &str) {
    let mut declared: Vec<String> = Vec::new();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().enumerate().all(|(i, c)| {
                c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
            })
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(name_ok(name), "{line}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            assert!(
                !declared.iter().any(|d| d == name),
                "declared twice: {line}"
            );
            declared.push(name.to_string());
            continue;
        }
        if line.starts_with("# HELP ") || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample and its value");
        assert!(value.parse::<f64>().is_ok(), "{line}");
        let name = series.split('{').next().unwrap();
        assert!(name_ok(name), "{line}");
        // A histogram's samples carry a suffix of its name.
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|suffix| name.strip_suffix(suffix))
            .find(|base| declared.last().map(String::as_str) == Some(*base))
            .unwrap_or(name);
        assert_eq!(declared.last().map(String::as_str), Some(family), "{line}");
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                let inner = labels
                    .strip_prefix('{')
                    .and_then(|l| l.strip_suffix('}'))
                    .unwrap_or_else(|| panic!("{line}"));
                for pair in inner.split("\",").filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once("=\"").unwrap_or_else(|| panic!("{line}"));
                    assert!(name_ok(k), "{line}");
                    assert!(!v.trim_end_matches('"').contains('"'), "{line}");
                }
            }
        }
    }
    assert!(!declared.is_empty());
}

pub(crate) fn submit_body(dir: &str, partition: &str) -> String {
    serde_json::json!({
        "job": {
            "name": "restjob",
            "partition": partition,
            "tasks": 1,
            "nodes": 1,
            "current_working_directory": dir,
            "standard_output": format!("{dir}/restjob-%j.out"),
            "environment": {"PATH": "/bin:/usr/bin", "LANG": "C"}
        },
        "script": "#!/bin/sh\nsleep 300\n"
    })
    .to_string()
}

/// The `errors` of slurmrestd's answer to a bad token
/// (`rest_bad_token.response`).
pub(crate) fn bad_token_errors() -> serde_json::Value {
    serde_json::json!([{
        "description": "slurmctld config is unable to load",
        "error_number": -1,
        "error": "Unspecified error",
        "source": "slurm_load_ctl_conf"
    }])
}

#[test]
fn rest_submit_query_cancel_with_a_token_from_scontrol() {
    let key = jwt_key();
    let c = jwt_cluster(&key);
    let restd = Restd::start(&c);
    let token = token_of(&c.run("scontrol", &["token", "lifespan=900"]));
    let me = client::current_identity().user;

    let (status, ping) = restd.get("/slurm/v0.0.38/ping", &token);
    assert_eq!(status, 200, "{ping}");
    assert_eq!(ping["pings"][0]["ping"], "UP");
    assert_eq!(ping["meta"]["plugin"]["type"], "openapi/v0.0.38");
    assert_eq!(ping["errors"], serde_json::json!([]));

    let work = c.work().display().to_string();
    let (status, body) = restd.call(
        "POST",
        "/slurm/v0.0.38/job/submit",
        &[
            ("X-SLURM-USER-NAME", &me),
            ("X-SLURM-USER-TOKEN", &token),
            ("Content-Type", "application/json"),
        ],
        &submit_body(&work, "debug"),
    );
    assert_eq!(status, 200, "{body}");
    let submitted = json(&body);
    assert_eq!(submitted["step_id"], "BATCH");
    let id = submitted["job_id"].as_u64().expect("a job id") as u32;
    c.wait_state(id, "RUNNING", secs(30));

    // The same job through `Authorization: Bearer`.
    let (status, body) = restd.call(
        "GET",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[("Authorization", &format!("Bearer {token}"))],
        "",
    );
    assert_eq!(status, 200, "{body}");
    let job = &json(&body)["jobs"][0];
    assert_eq!(job["job_id"], id);
    assert_eq!(job["name"], "restjob");
    assert_eq!(job["user_name"], me.as_str());
    assert_eq!(job["job_state"], "RUNNING");
    assert_eq!(job["standard_output"], format!("{work}/restjob-%j.out"));

    for path in [
        "/slurm/v0.0.38/jobs",
        "/slurm/v0.0.38/nodes",
        "/slurm/v0.0.38/node/node1",
        "/slurm/v0.0.38/partitions",
        "/slurm/v0.0.38/partition/debug",
        "/slurm/v0.0.38/diag",
        "/slurm/v0.0.38/licenses",
        "/slurm/v0.0.38/reservations",
    ] {
        let (status, v) = restd.get(path, &token);
        assert_eq!(status, 200, "{path}: {v}");
        assert_eq!(v["errors"], serde_json::json!([]), "{path}");
    }
    let (_, nodes) = restd.get("/slurm/v0.0.38/nodes", &token);
    assert_eq!(nodes["nodes"][0]["name"], "node1");

    // Errors as slurmrestd 22.05 answers them.
    let (status, v) = restd.get("/slurm/v0.0.38/job/999999", &token);
    assert_eq!(status, 500);
    assert_eq!(v["errors"][0]["error_number"], 2017);
    assert_eq!(v["errors"][0]["description"], "Unable to find JobId=999999");
    let (status, body) = restd.call(
        "POST",
        "/slurm/v0.0.38/job/submit",
        &[("X-SLURM-USER-TOKEN", &token)],
        &submit_body("/tmp", "nosuchpart"),
    );
    assert_eq!(status, 500, "{body}");
    assert_eq!(
        json(&body)["errors"],
        serde_json::json!([{"error_code": 2000, "error": "Invalid partition name specified"}])
    );

    // The document and the metrics.
    let (status, body) = restd.call("GET", "/openapi/v3", &[], "");
    assert_eq!(status, 200);
    assert!(json(&body)["paths"]["/slurm/v0.0.38/job/{job_id}"]["delete"].is_object());
    let (status, body) = restd.call("GET", "/metrics", &[("X-SLURM-USER-TOKEN", &token)], "");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("muster_jobs{state=\"RUNNING\",partition=\"debug\"} 1"),
        "{body}"
    );
    prometheus_text(&body);

    // Update over REST, as scontrol update.
    let (status, body) = restd.call(
        "POST",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[("X-SLURM-USER-TOKEN", &token)],
        r#"{"comment": "via rest", "time_limit": 30}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (_, v) = restd.get(&format!("/slurm/v0.0.38/job/{id}"), &token);
    assert_eq!(v["jobs"][0]["comment"], "via rest", "{v}");
    assert_eq!(v["jobs"][0]["time_limit"], 30, "{v}");
    let (status, body) = restd.call(
        "POST",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[("X-SLURM-USER-TOKEN", &token)],
        r#"{"reservation": "r"}"#,
    );
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("reservation cannot be updated here"),
        "{body}"
    );

    // Cancel over REST.
    let (status, body) = restd.call(
        "DELETE",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[("X-SLURM-USER-TOKEN", &token)],
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["errors"], serde_json::json!([]));
    assert_eq!(c.wait_done(id, secs(30)), "CANCELLED");

    // The accounting record, as slurmdbd's part of the API shows it.
    let job = c.wait_until("the job in accounting", secs(20), || {
        let (status, v) = restd.get(&format!("/slurmdb/v0.0.38/job/{id}"), &token);
        (status == 200 && v["jobs"][0]["state"]["current"] == "CANCELLED").then_some(v)
    });
    assert_eq!(job["meta"]["plugin"]["type"], "openapi/dbv0.0.38");
    assert_eq!(job["jobs"][0]["name"], "restjob");
    assert_eq!(job["jobs"][0]["kill_request_user"], me.as_str());
    let (status, v) = restd.get(
        "/slurmdb/v0.0.38/jobs?state=CANCELLED&job_name=restjob",
        &token,
    );
    assert_eq!(status, 200, "{v}");
    assert!(
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["job_id"] == id),
        "{v}"
    );
    let (status, v) = restd.get("/slurmdb/v0.0.38/jobs?reservation=r", &token);
    assert_eq!(status, 500, "{v}");
}

#[test]
fn rest_refuses_missing_forged_and_expired_tokens() {
    let key = jwt_key();
    let c = jwt_cluster(&key);
    let restd = Restd::start(&c);
    let me = client::current_identity().user;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let good = auth::jwt::mint(&key.bytes, &me, now, 600);
    let (status, _) = restd.get("/slurm/v0.0.38/ping", &good);
    assert_eq!(status, 200);
    let forged = auth::jwt::mint(b"not the cluster's key at all", &me, now, 600);
    let expired = auth::jwt::mint(&key.bytes, &me, now - 1000, 10);
    let unknown_user = auth::jwt::mint(&key.bytes, "no-such-user-here", now, 600);
    for token in ["invalid", &forged, &expired, &unknown_user] {
        let (status, v) = restd.get("/slurm/v0.0.38/ping", token);
        assert_eq!(status, 500, "{token}: {v}");
        assert_eq!(v["errors"], bad_token_errors(), "{token}");
    }
    let (status, body) = restd.call("GET", "/slurm/v0.0.38/jobs", &[], "");
    assert_eq!(status, 401, "{body}");
    // Nothing was submitted by any of them.
    assert!(c.ok("squeue", &["-h"]).stdout.trim().is_empty());
}

#[test]
fn rest_users_cannot_cancel_each_others_jobs() {
    if !is_root() {
        eprintln!("skipped: needs root to make users");
        return;
    }
    // The users go last: the cluster (and their jobs) end before them.
    let base = users_base();
    let alice = TestUser::create("ra", base.path());
    let bob = TestUser::create("rb", base.path());
    let key = jwt_key();
    let c = jwt_cluster(&key);
    let restd = Restd::start(&c);
    let alice_token = token_of(&alice.run(&c, "scontrol", &["token"]));
    let bob_token = token_of(&bob.run(&c, "scontrol", &["token"]));
    // Only root and SlurmUser may name another user.
    let out = bob.run(
        &c,
        "scontrol",
        &["token", &format!("username={}", alice.name)],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("Access/permission denied"), "{out}");
    let for_bob = token_of(&c.run("scontrol", &["token", &format!("username={}", bob.name)]));

    let (status, body) = restd.call(
        "POST",
        "/slurm/v0.0.38/job/submit",
        &[("X-SLURM-USER-TOKEN", &alice_token)],
        &submit_body(
            &base.path().join(&alice.name).display().to_string(),
            "debug",
        ),
    );
    assert_eq!(status, 200, "{body}");
    let id = json(&body)["job_id"].as_u64().unwrap() as u32;
    let (_, job) = restd.get(&format!("/slurm/v0.0.38/job/{id}"), &bob_token);
    assert_eq!(job["jobs"][0]["user_name"], alice.name.as_str());

    for token in [&bob_token, &for_bob] {
        let (status, body) = restd.call(
            "DELETE",
            &format!("/slurm/v0.0.38/job/{id}"),
            &[("X-SLURM-USER-TOKEN", token)],
            "",
        );
        assert_eq!(status, 500, "{body}");
        assert_eq!(
            json(&body)["errors"][0]["error"],
            "Access/permission denied"
        );
    }
    // A user's token cannot be turned into another's with the name header.
    let (status, body) = restd.call(
        "DELETE",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[
            ("X-SLURM-USER-TOKEN", &bob_token),
            ("X-SLURM-USER-NAME", &alice.name),
        ],
        "",
    );
    assert_eq!(status, 500, "{body}");
    assert_ne!(c.job_state(id), "CANCELLED");
    let (status, body) = restd.call(
        "DELETE",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[("X-SLURM-USER-TOKEN", &alice_token)],
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(c.wait_done(id, secs(30)), "CANCELLED");
}

/// `rest_auth/local`: on a Unix socket the caller is whom the kernel says
/// (SO_PEERCRED), with no token; as root, a second real user's request
/// acts as that user.
#[test]
fn rest_local_auth_takes_the_callers_uid_from_the_socket() {
    // The user goes last: the cluster (and its jobs) end before it.
    let base = users_base();
    let carol = is_root().then(|| TestUser::create("rl", base.path()));
    let c = builder().nodes(1).start();
    let sock = c.root().join("restd.sock");
    let addr = format!("unix:{}", sock.display());
    let mut cmd = Command::new(c.binary());
    cmd.args(["restd", "-f"])
        .arg(c.conf())
        .args(["-a", "rest_auth/local", &addr]);
    let _restd = Restd::spawn(&c, cmd, addr);
    let me = client::current_identity().user;
    let curl = |cmd: &mut Command, method: &str, path: &str, body: &str| {
        let out = cmd
            .args(["-s", "--unix-socket"])
            .arg(&sock)
            .args(["-X", method, "-H", "Content-Type: application/json"])
            .args(if body.is_empty() {
                vec![]
            } else {
                vec!["-d", body]
            })
            .arg(format!("http://localhost{path}"))
            .output()
            .expect("running curl");
        json(&String::from_utf8_lossy(&out.stdout))
    };
    let v = curl(
        &mut Command::new("curl"),
        "POST",
        "/slurm/v0.0.38/job/submit",
        &submit_body(&c.work().display().to_string(), "debug"),
    );
    let id = v["job_id"].as_u64().unwrap_or_else(|| panic!("{v}"));
    let v = curl(
        &mut Command::new("curl"),
        "GET",
        &format!("/slurm/v0.0.38/job/{id}"),
        "",
    );
    assert_eq!(v["jobs"][0]["user_name"], me.as_str(), "{v}");
    let Some(carol) = &carol else {
        return;
    };
    let v = curl(
        &mut carol.command(std::path::Path::new("/usr/bin/curl")),
        "POST",
        "/slurm/v0.0.38/job/submit",
        &submit_body(
            &base.path().join(&carol.name).display().to_string(),
            "debug",
        ),
    );
    let theirs = v["job_id"].as_u64().unwrap_or_else(|| panic!("{v}"));
    let v = curl(
        &mut Command::new("curl"),
        "GET",
        &format!("/slurm/v0.0.38/job/{theirs}"),
        "",
    );
    assert_eq!(v["jobs"][0]["user_name"], carol.name.as_str(), "{v}");
    // carol cannot cancel root's job over the socket either.
    let v = curl(
        &mut carol.command(std::path::Path::new("/usr/bin/curl")),
        "DELETE",
        &format!("/slurm/v0.0.38/job/{id}"),
        "",
    );
    assert_eq!(v["errors"][0]["error"], "Access/permission denied", "{v}");
    c.ok("scancel", &[&id.to_string(), &theirs.to_string()]);
}

/// A restd that runs as an ordinary user cannot act for anyone else: the
/// controller takes `OnBehalf` only from root and SlurmUser.
#[test]
fn rest_a_restd_of_an_ordinary_user_serves_only_that_user() {
    if !is_root() {
        eprintln!("skipped: needs root to make users");
        return;
    }
    let base = users_base();
    let dave = TestUser::create("rd", base.path());
    let erin = TestUser::create("re", base.path());
    let key = jwt_key();
    let c = jwt_cluster(&key);
    // dave runs restd, so he must read the key.
    let dave_uid = nix::unistd::User::from_name(&dave.name)
        .unwrap()
        .unwrap()
        .uid;
    nix::unistd::chown(&key.path, Some(dave_uid), None).expect("chown the key");
    let addr = format!("127.0.0.1:{}", e2e::free_port());
    let mut cmd = dave.command(c.binary());
    cmd.args(["restd", "-f"])
        .arg(c.conf())
        .args(["-a", "rest_auth/jwt", &addr]);
    let restd = Restd::spawn(&c, cmd, addr);
    let dave_token = token_of(&dave.run(&c, "scontrol", &["token"]));
    let erin_token = token_of(&erin.run(&c, "scontrol", &["token"]));
    let (status, v) = restd.get("/slurm/v0.0.38/jobs", &dave_token);
    assert_eq!(status, 200, "{v}");
    let (status, v) = restd.get("/slurm/v0.0.38/jobs", &erin_token);
    assert_eq!(status, 500, "{v}");
    assert_eq!(v["errors"][0]["error"], "Access/permission denied", "{v}");
    let (status, body) = restd.call(
        "POST",
        "/slurm/v0.0.38/job/submit",
        &[("X-SLURM-USER-TOKEN", &erin_token)],
        &submit_body("/tmp", "debug"),
    );
    assert_eq!(status, 500, "{body}");
    assert!(c.ok("squeue", &["-h"]).stdout.trim().is_empty());
}

/// A listing of more jobs than one part holds (`proto::JobWires`: the
/// controller streams about 1 MiB at a time) lists every job once, the
/// same again from restd's cache, and a job changed between two listings
/// as it now is.
#[test]
fn rest_a_listing_in_parts_has_every_job_and_follows_changes() {
    const JOBS: usize = 6_000;
    let key = jwt_key();
    let c = jwt_cluster(&key);
    let restd = Restd::start(&c);
    let token = token_of(&c.run("scontrol", &["token", "lifespan=900"]));
    let work = c.work().display().to_string();
    let cfg = conf::load(c.conf()).expect("slurm.conf").config;
    let client = client::Client::new(cfg, client::current_identity());
    let reqs: Vec<proto::CtldRequest> = (0..JOBS)
        .map(|i| {
            proto::CtldRequest::Submit(Box::new(proto::JobDesc {
                name: format!("part{i}"),
                script: "#!/bin/sh\ntrue\n".into(),
                work_dir: work.clone(),
                submit_dir: work.clone(),
                hold: true,
                ..proto::JobDesc::default()
            }))
        })
        .collect();
    let mut ids = Vec::new();
    for r in client.call_pipelined(&reqs) {
        match r {
            Ok(proto::CtldResponse::Submitted(s)) => ids.push(s.job_id.0 as u64),
            other => panic!("submission refused: {other:?}"),
        }
    }
    let listing = || {
        let (status, body) = http(
            &restd.addr,
            "GET",
            "/slurm/v0.0.38/jobs",
            &[("X-SLURM-USER-TOKEN", &token)],
            "",
        );
        assert_eq!(status, 200);
        assert!(
            body.len() > 2 << 20,
            "{} bytes: more than two parts",
            body.len()
        );
        json(&body)["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .map(|j| {
                (
                    j["job_id"].as_u64().unwrap(),
                    j["name"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let first = listing();
    let want: Vec<(u64, String)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, format!("part{i}")))
        .collect();
    assert_eq!(first, want);
    assert_eq!(listing(), want);
    let changed = ids[JOBS / 2];
    let out = c.run(
        "scontrol",
        &["update", &format!("jobid={changed}"), "name=renamed"],
    );
    assert_eq!(out.code, 0, "{out}");
    let mut want = want;
    want[JOBS / 2].1 = "renamed".into();
    assert_eq!(listing(), want);
}
