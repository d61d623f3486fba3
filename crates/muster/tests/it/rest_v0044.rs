//! The REST API's newer data parser (v0.0.44) beside v0.0.38, slurmdbd's
//! v0.0.38 paths, and RS256 tokens of an identity provider
//! (`AuthAltParameters=jwks=`), end to end with real daemons. Every
//! answer is checked against the document restd serves (`Restd::call`).

use crate::rest::{bad_token_errors, json, jwt_cluster, jwt_key, submit_body, token_of, Restd};
use crate::{builder, secs};
use base64::Engine as _;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A job description in v0.0.44's form: numbers as `{set, infinite,
/// number}`, the environment as `NAME=value` strings, the script inside.
fn submit_body_v0044(dir: &str) -> String {
    serde_json::json!({
        "job": {
            "name": "rest44",
            "partition": "debug",
            "tasks": 1,
            "minimum_nodes": 1,
            "current_working_directory": dir,
            "standard_output": format!("{dir}/rest44-%j.out"),
            "environment": ["PATH=/bin:/usr/bin", "LANG=C"],
            "time_limit": {"set": true, "infinite": false, "number": 20},
            "memory_per_node": {"set": false, "infinite": false, "number": 0},
            "script": "#!/bin/sh\nsleep 300\n"
        }
    })
    .to_string()
}

#[test]
fn rest_v0044_submit_query_update_cancel_beside_v0038() {
    let key = jwt_key();
    let c = jwt_cluster(&key);
    let restd = Restd::start(&c);
    let token = token_of(&c.run("scontrol", &["token", "lifespan=900"]));
    let me = client::current_identity().user;
    let auth = [("X-SLURM-USER-TOKEN", token.as_str())];

    let (status, ping) = restd.get("/slurm/v0.0.44/ping", &token);
    assert_eq!(status, 200, "{ping}");
    assert_eq!(ping["pings"][0]["pinged"], "UP");
    assert_eq!(ping["meta"]["plugin"]["data_parser"], "data_parser/v0.0.44");
    assert_eq!(ping["meta"]["client"]["user"], me.as_str());

    let work = c.work().display().to_string();
    let (status, body) = restd.call(
        "POST",
        "/slurm/v0.0.44/job/submit",
        &auth,
        &submit_body_v0044(&work),
    );
    assert_eq!(status, 200, "{body}");
    let id = json(&body)["job_id"].as_u64().expect("a job id") as u32;
    assert_eq!(json(&body)["result"]["job_id"], id);
    c.wait_state(id, "RUNNING", secs(30));

    // The same job in both versions.
    let (status, v44) = restd.get(&format!("/slurm/v0.0.44/job/{id}"), &token);
    assert_eq!(status, 200, "{v44}");
    let job = &v44["jobs"][0];
    assert_eq!(job["job_state"], serde_json::json!(["RUNNING"]));
    assert_eq!(
        job["time_limit"],
        serde_json::json!({"set": true, "infinite": false, "number": 20})
    );
    assert_eq!(job["user_name"], me.as_str());
    assert_eq!(job["job_resources"]["nodes"]["list"], "node1");
    let (_, v38) = restd.get(&format!("/slurm/v0.0.38/job/{id}"), &token);
    assert_eq!(v38["jobs"][0]["job_state"], "RUNNING");
    assert_eq!(v38["jobs"][0]["time_limit"], 20);

    // Update in v0.0.44's form; v0.0.38 sees it.
    let (status, body) = restd.call(
        "POST",
        &format!("/slurm/v0.0.44/job/{id}"),
        &auth,
        r#"{"comment": "v44", "time_limit": {"set": true, "infinite": false, "number": 25}}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["results"][0]["job_id"], id);
    let (_, v38) = restd.get(&format!("/slurm/v0.0.38/job/{id}"), &token);
    assert_eq!(v38["jobs"][0]["comment"], "v44", "{v38}");
    assert_eq!(v38["jobs"][0]["time_limit"], 25, "{v38}");

    for path in [
        "/slurm/v0.0.44/jobs",
        "/slurm/v0.0.44/diag",
        "/slurm/v0.0.44/nodes",
        "/slurm/v0.0.44/node/node1",
        "/slurm/v0.0.44/partitions",
        "/slurm/v0.0.44/partition/debug",
        "/slurm/v0.0.44/reservations",
        "/slurm/v0.0.44/licenses",
        "/slurmdb/v0.0.44/accounts",
        "/slurmdb/v0.0.44/users",
        "/slurmdb/v0.0.44/associations",
        "/slurmdb/v0.0.44/qos",
        "/slurmdb/v0.0.44/qos/normal",
        "/slurmdb/v0.0.44/tres",
        "/slurmdb/v0.0.44/config",
        "/slurmdb/v0.0.44/diag",
        "/slurmdb/v0.0.38/accounts",
        "/slurmdb/v0.0.38/account/root",
        "/slurmdb/v0.0.38/users",
        &format!("/slurmdb/v0.0.38/user/{me}"),
        "/slurmdb/v0.0.38/associations",
        &format!("/slurmdb/v0.0.38/association?user={me}"),
        "/slurmdb/v0.0.38/qos",
        "/slurmdb/v0.0.38/qos/normal",
        "/slurmdb/v0.0.38/tres",
        "/slurmdb/v0.0.38/config",
        "/slurmdb/v0.0.38/diag",
    ] {
        let (status, v) = restd.get(path, &token);
        assert_eq!(status, 200, "{path}: {v}");
        assert_eq!(v["errors"], serde_json::json!([]), "{path}");
    }
    let (_, nodes) = restd.get("/slurm/v0.0.44/nodes", &token);
    let state = &nodes["nodes"][0]["state"][0];
    assert!(state == "MIXED" || state == "ALLOCATED", "{nodes}");
    let (_, users) = restd.get(&format!("/slurmdb/v0.0.38/user/{me}"), &token);
    assert_eq!(users["users"][0]["name"], me.as_str());
    let (_, tres) = restd.get("/slurmdb/v0.0.38/tres", &token);
    assert_eq!(tres["tres"][0]["type"], "cpu");

    // Refusals in v0.0.44's shape.
    let (status, v) = restd.get("/slurm/v0.0.44/job/999999", &token);
    assert_eq!(status, 500, "{v}");
    assert_eq!(v["errors"][0]["error_number"], 2017);
    assert_eq!(v["jobs"], serde_json::json!([]));
    let (status, v) = restd.get("/slurmdb/v0.0.38/qos/nosuchqos", &token);
    assert_eq!(status, 500, "{v}");
    // Heterogeneous jobs: Slurm's refusal of what the system does not
    // support, in each version's submission error shape.
    let het = serde_json::json!({"jobs": [{"name": "a"}, {"name": "b"}], "script": "#!/bin/sh\n"})
        .to_string();
    let (status, body) = restd.call("POST", "/slurm/v0.0.38/job/submit", &auth, &het);
    assert_eq!(status, 500, "{body}");
    assert_eq!(
        json(&body)["errors"],
        serde_json::json!([{"error_code": 2036, "error": "Requested operation not supported on this system"}])
    );
    let (status, body) = restd.call("POST", "/slurm/v0.0.44/job/submit", &auth, &het);
    assert_eq!(status, 500, "{body}");
    assert_eq!(json(&body)["errors"][0]["error_number"], 2036);

    // Cancel over v0.0.44; the accounting record over both.
    let (status, body) = restd.call("DELETE", &format!("/slurm/v0.0.44/job/{id}"), &auth, "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(c.wait_done(id, secs(30)), "CANCELLED");
    let job = c.wait_until("the job in accounting", secs(20), || {
        let (status, v) = restd.get(&format!("/slurmdb/v0.0.44/job/{id}"), &token);
        (status == 200 && v["jobs"][0]["state"]["current"][0] == "CANCELLED").then_some(v)
    });
    assert_eq!(job["jobs"][0]["name"], "rest44");
    assert_eq!(job["meta"]["plugin"]["type"], "openapi/slurmdbd");
    let (status, v) = restd.get(
        &format!("/slurmdb/v0.0.38/jobs?job_name=rest44&qos=normal&cpus_min=1&node=node1&skip_steps=true&users={me}"),
        &token,
    );
    assert_eq!(status, 200, "{v}");
    let found = v["jobs"].as_array().unwrap();
    assert!(found.iter().any(|j| j["job_id"] == id), "{v}");
    assert!(
        found.iter().all(|j| j["steps"] == serde_json::json!([])),
        "{v}"
    );
    let (_, v) = restd.get("/slurmdb/v0.0.44/jobs?job_name=rest44&cpus_min=64", &token);
    assert_eq!(v["jobs"], serde_json::json!([]), "{v}");
}

/// An RSA key pair of a pretend identity provider, made with the openssl
/// command: `sign` signs as the provider would.
struct Idp {
    dir: tempfile::TempDir,
    n: Vec<u8>,
}

fn openssl(args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new("openssl")
        .args(args)
        .output()
        .expect("running openssl");
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
    out.stdout
}

impl Idp {
    fn new() -> Idp {
        let dir = tempfile::tempdir().expect("a directory");
        let key = dir.path().join("key.pem").display().to_string();
        openssl(&["genrsa", "-out", &key, "2048"]);
        let modulus =
            String::from_utf8(openssl(&["rsa", "-in", &key, "-noout", "-modulus"])).expect("text");
        let hex = modulus.trim().strip_prefix("Modulus=").expect("a modulus");
        let n = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        Idp { dir, n }
    }

    fn jwk(&self, kid: &str) -> serde_json::Value {
        serde_json::json!({"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
            "n": b64(&self.n), "e": b64(&[1, 0, 1])})
    }

    fn token(&self, kid: &str, user: &str, iat: i64, exp: i64) -> String {
        let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": kid});
        let claims = serde_json::json!({"iat": iat, "exp": exp, "sun": user});
        let mut t = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let input = self.dir.path().join("input");
        std::fs::write(&input, &t).expect("writing");
        let key = self.dir.path().join("key.pem").display().to_string();
        let sig = openssl(&[
            "dgst",
            "-sha256",
            "-sign",
            &key,
            &input.display().to_string(),
        ]);
        t.push('.');
        t.push_str(&b64(&sig));
        t
    }
}

#[test]
fn rest_takes_rs256_tokens_of_the_jwks_and_refuses_others() {
    let idp = Idp::new();
    let stranger = Idp::new();
    let dir = tempfile::tempdir().expect("a directory");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(
        &jwks,
        serde_json::json!({"keys": [idp.jwk("idp-2026")]}).to_string(),
    )
    .expect("writing the JWKS");
    let key = jwt_key();
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={},jwks={}\n",
            key.path.display(),
            jwks.display()
        ))
        .start();
    let restd = Restd::start(&c);
    let me = client::current_identity().user;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_secs() as i64;

    let good = idp.token("idp-2026", &me, now, now + 600);
    let (status, v) = restd.get("/slurm/v0.0.44/ping", &good);
    assert_eq!(status, 200, "{v}");
    let (status, body) = restd.call(
        "POST",
        "/slurm/v0.0.38/job/submit",
        &[("Authorization", &format!("Bearer {good}"))],
        &submit_body(&c.work().display().to_string(), "debug"),
    );
    assert_eq!(status, 200, "{body}");
    let id = json(&body)["job_id"].as_u64().expect("a job id") as u32;
    let (_, v) = restd.get(&format!("/slurm/v0.0.38/job/{id}"), &good);
    assert_eq!(v["jobs"][0]["user_name"], me.as_str());
    // HS256 tokens of the controller still work beside the JWKS.
    let hs = token_of(&c.run("scontrol", &["token"]));
    assert_eq!(restd.get("/slurm/v0.0.38/ping", &hs).0, 200);

    let other_key = stranger.token("idp-2026", &me, now, now + 600);
    let unknown_kid = idp.token("idp-1999", &me, now, now + 600);
    let expired = idp.token("idp-2026", &me, now - 1000, now - 10);
    let unknown_user = idp.token("idp-2026", "no-such-user-here", now, now + 600);
    for token in [&other_key, &unknown_kid, &expired, &unknown_user] {
        let (status, v) = restd.get("/slurm/v0.0.38/ping", token);
        assert_eq!(status, 500, "{token}: {v}");
        assert_eq!(v["errors"], bad_token_errors(), "{token}");
    }
    let (status, body) = restd.call(
        "DELETE",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[("X-SLURM-USER-TOKEN", &other_key)],
        "",
    );
    assert_eq!(status, 500, "{body}");
    assert_ne!(c.job_state(id), "CANCELLED");
    let (status, _) = restd.call(
        "DELETE",
        &format!("/slurm/v0.0.38/job/{id}"),
        &[("X-SLURM-USER-TOKEN", &good)],
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(c.wait_done(id, secs(30)), "CANCELLED");
}
