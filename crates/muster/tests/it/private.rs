//! `PrivateData` (slurm.conf) end to end, as root with real Unix users:
//! under `PrivateData=jobs,usage` a user's squeue, scontrol, sacct, sshare
//! and REST answers hold their own jobs and usage alone, while root and a
//! user of AdminLevel Administrator see everyone's; without it every user
//! sees every job, as before.

use crate::auth::{is_root, TestUser};
use crate::rest::{jwt_key, token_of, users_base, Restd};
use crate::{builder, secs};
use e2e::Cluster;

/// The ids `squeue -h -o %i` lists for `user` (root when None), sorted.
fn squeue_ids(c: &Cluster, user: Option<&TestUser>) -> Vec<u32> {
    let out = match user {
        Some(u) => u.run(c, "squeue", &["-h", "-o", "%i"]),
        None => c.ok("squeue", &["-h", "-o", "%i"]),
    };
    assert_eq!(out.code, 0, "{out}");
    let mut ids: Vec<u32> = out
        .stdout
        .lines()
        .map(|l| l.trim().parse().expect("a job id"))
        .collect();
    ids.sort_unstable();
    ids
}

/// The job ids `sacct -a -X -n -P -o JobID` lists for `user`, sorted.
fn sacct_ids(c: &Cluster, user: Option<&TestUser>) -> Vec<u32> {
    let args = ["-a", "-X", "-n", "-P", "-o", "JobID"];
    let out = match user {
        Some(u) => u.run(c, "sacct", &args),
        None => c.ok("sacct", &args),
    };
    assert_eq!(out.code, 0, "{out}");
    let mut ids: Vec<u32> = out
        .stdout
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

fn sleeper(c: &Cluster, u: &TestUser) -> u32 {
    let out = u.run(c, "sbatch", &["--parsable", "--wrap", "sleep 300"]);
    assert!(out.ok(), "sbatch as {}: {out}\n{}", u.name, c.logs());
    let id: u32 = out.stdout.trim().parse().expect("a job id");
    c.wait_state(id, "RUNNING", secs(30));
    id
}

/// The job ids of a REST answer's `jobs`, sorted.
fn rest_ids(v: &serde_json::Value) -> Vec<u32> {
    let mut ids: Vec<u32> = v["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs in {v}"))
        .iter()
        .map(|j| j["job_id"].as_u64().expect("a job id") as u32)
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn private_data_jobs_and_usage_hide_other_users_from_every_reader() {
    if !is_root() {
        eprintln!("private_data: not run: it creates Unix users, which needs root");
        return;
    }
    // The users go last: the cluster (and their jobs) end before them.
    let base = users_base();
    let alice = TestUser::create("pa", base.path());
    let bob = TestUser::create("pb", base.path());
    let olga = TestUser::create("po", base.path());
    let key = jwt_key();
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}\nPrivateData=jobs,usage\n",
            key.path.display()
        ))
        .start();
    let out = c.ok("scontrol", &["show", "config"]);
    assert!(
        out.stdout
            .lines()
            .any(|l| l == "PrivateData             = jobs,usage"),
        "{out}"
    );
    for u in [&alice, &bob] {
        c.ok("sacctmgr", &["-i", "add", "user", &u.name, "account=root"]);
    }
    let a = sleeper(&c, &alice);
    let b = sleeper(&c, &bob);

    // squeue: each user their own; root both.
    assert_eq!(squeue_ids(&c, Some(&alice)), vec![a]);
    assert_eq!(squeue_ids(&c, Some(&bob)), vec![b]);
    assert_eq!(squeue_ids(&c, None), vec![a, b]);

    // Another user's job is answered as one that does not exist.
    let out = alice.run(&c, "scontrol", &["show", "job", &b.to_string()]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "slurm_load_jobs error: Invalid job id specified\n"
    );
    let theirs = alice.run(&c, "squeue", &["-j", &b.to_string()]);
    let nobodys = alice.run(&c, "squeue", &["-j", "999999"]);
    assert_eq!(
        (theirs.code, theirs.stdout.as_str(), theirs.stderr.as_str()),
        (
            nobodys.code,
            nobodys.stdout.as_str(),
            nobodys.stderr.as_str()
        )
    );
    let out = alice.run(&c, "scontrol", &["show", "job", &a.to_string()]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.starts_with(&format!("JobId={a} ")), "{out}");

    // sacct: the accounting records alike.
    c.wait_until("both jobs in accounting", secs(20), || {
        (sacct_ids(&c, None) == vec![a, b]).then_some(())
    });
    assert_eq!(sacct_ids(&c, Some(&alice)), vec![a]);
    assert_eq!(sacct_ids(&c, Some(&bob)), vec![b]);

    // sshare (usage): a user's own rows alone.
    let out = alice.run(&c, "sshare", &["-a", "-n", "-P"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout
            .lines()
            .all(|l| l.split('|').nth(1) == Some(alice.name.as_str())),
        "{out}"
    );
    let out = c.ok("sshare", &["-a", "-n", "-P"]);
    assert!(out.stdout.contains(&bob.name), "{out}");

    // An administrator by AdminLevel sees everything.
    assert_eq!(squeue_ids(&c, Some(&olga)), Vec::<u32>::new());
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "add",
            "user",
            &olga.name,
            "account=root",
            "adminlevel=Administrator",
        ],
    );
    assert_eq!(squeue_ids(&c, Some(&olga)), vec![a, b]);
    assert_eq!(sacct_ids(&c, Some(&olga)), vec![a, b]);
    let out = olga.run(&c, "scontrol", &["show", "job", &b.to_string()]);
    assert_eq!(out.code, 0, "{out}");

    // The REST API asks as the token's user: the same answers.
    let restd = Restd::start(&c);
    let alice_token = token_of(&alice.run(&c, "scontrol", &["token"]));
    let olga_token = token_of(&olga.run(&c, "scontrol", &["token"]));
    for path in ["/slurm/v0.0.38/jobs", "/slurm/v0.0.44/jobs"] {
        let (status, v) = restd.get(path, &alice_token);
        assert_eq!(status, 200, "{path}: {v}");
        assert_eq!(rest_ids(&v), vec![a], "{path}: {v}");
        let (status, v) = restd.get(path, &olga_token);
        assert_eq!(status, 200, "{path}: {v}");
        assert_eq!(rest_ids(&v), vec![a, b], "{path}: {v}");
    }
    let (status, v) = restd.get("/slurmdb/v0.0.38/jobs", &alice_token);
    assert_eq!(status, 200, "{v}");
    assert_eq!(rest_ids(&v), vec![a], "{v}");
    let (theirs, nobodys) = (
        restd.get(&format!("/slurm/v0.0.38/job/{b}"), &alice_token),
        restd.get("/slurm/v0.0.38/job/999999", &alice_token),
    );
    assert_eq!(theirs.0, nobodys.0, "{} / {}", theirs.1, nobodys.1);
    assert_eq!(
        theirs.1["errors"][0]["error"], nobodys.1["errors"][0]["error"],
        "{} / {}",
        theirs.1, nobodys.1
    );
    let (status, v) = restd.get(&format!("/slurm/v0.0.38/job/{a}"), &alice_token);
    assert_eq!(status, 200, "{v}");
    assert_eq!(rest_ids(&v), vec![a]);
    let (_, v) = restd.get(&format!("/slurm/v0.0.38/job/{b}"), &olga_token);
    assert_eq!(rest_ids(&v), vec![b], "{v}");

    // The dashboard asks as its viewer too.
    let page =
        |path: &str, token: &str| restd.call("GET", path, &[("X-SLURM-USER-TOKEN", token)], "");
    let link = |id: u32| format!("<a href=\"/jobs/{id}\">");
    let (status, html) = page("/jobs", &alice_token);
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains(&link(a)) && !html.contains(&link(b)),
        "{html}"
    );
    let (status, html) = page("/jobs", &olga_token);
    assert_eq!(status, 200, "{html}");
    assert!(html.contains(&link(a)) && html.contains(&link(b)), "{html}");
    assert_eq!(page(&format!("/jobs/{b}"), &alice_token).0, 404);
    let cancel = |id: u32| format!("action=\"/jobs/{id}/cancel\"");
    let (status, html) = page(&format!("/jobs/{b}"), &olga_token);
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains(&cancel(b)),
        "an administrator's buttons: {html}"
    );
    // An Administrator changes nodes as root does.
    let drain = ["update", "NodeName=node1", "State=DRAIN", "Reason=by-olga"];
    let out = olga.run(&c, "scontrol", &drain);
    assert!(out.ok(), "an administrator's drain: {out}");
    let resume = ["update", "NodeName=node1", "State=RESUME"];
    let out = olga.run(&c, "scontrol", &resume);
    assert!(out.ok(), "an administrator's resume: {out}");

    // AdminLevel Operator acts on every user's jobs (the dashboard shows
    // the buttons), but changes no node; Administrator does.
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "user",
            &olga.name,
            "set",
            "adminlevel=Operator",
        ],
    );
    let (_, html) = page(&format!("/jobs/{b}"), &olga_token);
    assert!(html.contains(&cancel(b)), "an operator's buttons: {html}");
    let out = olga.run(&c, "scontrol", &drain);
    assert_ne!(out.code, 0, "an operator drained a node: {out}");
    let out = olga.run(&c, "scontrol", &["hold", &b.to_string()]);
    assert!(out.ok(), "an operator's hold: {out}");
    let out = olga.run(&c, "scancel", &[&b.to_string()]);
    assert!(out.ok(), "an operator's scancel: {out}");
    c.wait_state(b, "CANCELLED", secs(20));
    let out = alice.run(&c, "scontrol", &drain);
    assert_ne!(out.code, 0, "a user drained a node: {out}");

    c.ok("scancel", &[&a.to_string()]);
}

#[test]
fn without_private_data_every_user_sees_every_job() {
    if !is_root() {
        eprintln!("private_data: not run: it creates Unix users, which needs root");
        return;
    }
    let base = users_base();
    let alice = TestUser::create("qa", base.path());
    let bob = TestUser::create("qb", base.path());
    let c = builder().nodes(1).start();
    let a = sleeper(&c, &alice);
    assert_eq!(squeue_ids(&c, Some(&bob)), vec![a]);
    let out = bob.run(&c, "scontrol", &["show", "job", &a.to_string()]);
    assert_eq!(out.code, 0, "{out}");
    c.wait_until("the job in accounting", secs(20), || {
        (sacct_ids(&c, Some(&bob)) == vec![a]).then_some(())
    });
    c.ok("scancel", &[&a.to_string()]);
}

#[test]
fn private_nodes_and_partitions_refuse_the_listings_as_slurm_does() {
    if !is_root() {
        eprintln!("private_data: not run: it creates Unix users, which needs root");
        return;
    }
    let base = users_base();
    let alice = TestUser::create("na", base.path());
    let c = builder()
        .nodes(1)
        .conf_extra("PrivateData=nodes,partitions\n")
        .start();
    let out = alice.run(&c, "sinfo", &[]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "slurm_load_partitions: Access/permission denied\n"
    );
    let out = alice.run(&c, "scontrol", &["show", "node", "node1"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "slurm_load_node error: Access/permission denied\n"
    );
    let out = alice.run(&c, "scontrol", &["show", "partition"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "slurm_load_partitions error: Access/permission denied\n"
    );
    // root lists them; the user's jobs are not hidden by these words.
    assert!(c.ok("sinfo", &["-h", "-o", "%N"]).stdout.contains("node1"));
    let a = sleeper(&c, &alice);
    assert_eq!(squeue_ids(&c, Some(&alice)), vec![a]);
    c.ok("scancel", &[&a.to_string()]);
    // sattach finds the step's nodes without the node listing.
    // The job's srun is the cluster's link: on PATH, and reachable.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(c.root(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut sbatch = alice.command(c.binary());
    sbatch
        .args(["sbatch", "--parsable", "--wrap"])
        .arg("srun -n1 bash -c 'for i in $(seq 1 30); do echo line $i; sleep 0.2; done'")
        .env("SLURM_CONF", c.conf())
        .env("PATH", c.path_env());
    let out = sbatch.output().expect("running sbatch");
    assert!(out.status.success(), "{out:?}");
    let out = e2e::Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: 0,
    };
    let id: u32 = out.stdout.trim().parse().expect("a job id");
    let step = format!("{id}.0");
    c.wait_until(&format!("step {step}"), secs(30), || {
        let out = c.run("squeue", &["-s", "-h", "-o", "%i"]);
        out.stdout.lines().any(|l| l.trim() == step).then_some(())
    });
    let out = alice.run(&c, "sattach", &[&step]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.ends_with("line 30\n"), "{out}");
}
