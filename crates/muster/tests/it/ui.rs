//! The dashboard (restd's pages) in a real browser: Debian's chromium,
//! headless, driven by Playwright for Python (`ui_browser.py`), against a
//! real cluster with two real users. `xtask/setup.sh` installs both and
//! sets `MUSTER_TEST_UI_PYTHON` and `MUSTER_TEST_CHROMIUM`; without them the
//! test fails under CI (`MUSTER_REQUIRE_MPI=1`, which setup sets too) and
//! says why elsewhere. Screenshots land in `target/ui-screenshots/`.
//! node2's HealthCheckProgram fails: its page must show the run.

use crate::auth::{is_root, TestUser};
use crate::rest::{jwt_key, token_of, users_base, Key, Restd};
use std::path::PathBuf;
use std::process::Command;

/// A cluster of `nodes` nodes that takes JWTs, its restd and a token for
/// the caller; the key comes back too, as its file must outlive the cluster.
fn jwt_cluster(nodes: u32) -> (Key, e2e::Cluster, Restd, String) {
    let key = jwt_key();
    let c = crate::builder()
        .nodes(nodes)
        .conf_extra(&format!(
            "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}\n",
            key.path.display()
        ))
        .start();
    let restd = Restd::start(&c);
    let token = token_of(&c.run("scontrol", &["token"]));
    (key, c, restd, token)
}

fn tools() -> Option<(PathBuf, PathBuf)> {
    let python = std::env::var_os("MUSTER_TEST_UI_PYTHON").map(PathBuf::from);
    let chromium = std::env::var_os("MUSTER_TEST_CHROMIUM").map(PathBuf::from);
    match (python, chromium) {
        (Some(p), Some(c)) if p.exists() && c.exists() => Some((p, c)),
        _ => {
            assert!(
                std::env::var("MUSTER_REQUIRE_MPI").as_deref() != Ok("1"),
                "CI set-up ran (MUSTER_REQUIRE_MPI=1) but MUSTER_TEST_UI_PYTHON/MUSTER_TEST_CHROMIUM are missing"
            );
            None
        }
    }
}

#[test]
fn dashboard_pages_work_in_a_real_browser() {
    let Some((python, chromium)) = tools() else {
        eprintln!("skipped: no Playwright/chromium (xtask/setup.sh installs them)");
        return;
    };
    let base = users_base();
    let alice = if is_root() {
        Some(TestUser::create("ua", base.path()))
    } else {
        None
    };
    let bob = if is_root() {
        Some(TestUser::create("ub", base.path()))
    } else {
        None
    };
    let key = jwt_key();
    // A health check that fails on node2 (once, at start; no drain: the
    // page shows the failure all the same).
    let scripts = tempfile::tempdir().expect("a directory");
    let health = scripts.path().join("health");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(
            &health,
            "#!/bin/sh\nif [ \"$SLURMD_NODENAME\" = node2 ]; then echo 'ib0: link down'; exit 3; fi\nexit 0\n",
        )
        .expect("writing the health check");
        std::fs::set_permissions(&health, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let c = crate::builder()
        .nodes(2)
        .conf_extra(&format!(
            "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}\n\
             HealthCheckProgram={}\nHealthCheckInterval=0\n",
            key.path.display(),
            health.display()
        ))
        .start();
    let restd = Restd::start(&c);
    let as_alice = |cmd: &str, args: &[&str]| match &alice {
        Some(u) => u.run(&c, cmd, args),
        None => c.run(cmd, args),
    };
    let alice_token = token_of(&as_alice("scontrol", &["token"]));
    let bob_token = bob
        .as_ref()
        .map(|b| token_of(&b.run(&c, "scontrol", &["token"])));
    let submit = |args: &[&str]| -> u32 {
        let out = as_alice("sbatch", args);
        assert_eq!(out.code, 0, "{out}");
        out.stdout
            .trim()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let running = submit(&[
        "-t",
        "10",
        "-w",
        "node1",
        "--wrap",
        "echo hello from the job; sleep 600",
    ]);
    c.wait_state(running, "RUNNING", crate::secs(30));
    let pending = submit(&["-t", "5", "-N", "2", "--exclusive", "--wrap", "true"]);
    c.wait_until("the pending job to hold a plan", crate::secs(30), || {
        let out = c.run("squeue", &["-h", "-j", &pending.to_string(), "-o", "%r %S"]);
        (out.stdout.starts_with("Resources") && !out.stdout.contains("N/A")).then_some(())
    });
    // The failed check has reached the controller (the page itself is
    // the browser's to check).
    let node_page = |node: &str| {
        restd
            .call(
                "GET",
                &format!("/nodes/{node}"),
                &[("X-SLURM-USER-TOKEN", alice_token.as_str())],
                "",
            )
            .1
    };
    c.wait_until(
        "both nodes' health checks on their pages",
        crate::secs(30),
        || {
            (node_page("node2").contains("ib0: link down") && node_page("node1").contains("passed"))
                .then_some(())
        },
    );
    let home = match &alice {
        Some(u) => base.path().join(&u.name),
        None => std::env::temp_dir(),
    };
    let shots =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots");
    std::fs::create_dir_all(&shots).expect("the screenshots' directory");
    let submit_body = serde_json::json!({
        "job": {
            "name": "live", "partition": "debug", "tasks": 1, "nodes": 1,
            "current_working_directory": home.display().to_string(),
            "environment": {"PATH": "/bin:/usr/bin"}
        },
        "script": "#!/bin/sh\nsleep 1\n"
    })
    .to_string();
    let cfg = serde_json::json!({
        "url": format!("http://{}", restd.addr),
        "chromium": chromium,
        "shots": shots,
        "nodes": ["node1", "node2"],
        "sick": {"node": "node2", "output": "ib0: link down", "exit": "exit code 3"},
        "alice": alice_token,
        "bob": bob_token,
        "pending": pending,
        "running": running,
        "live": true,
        "submit_body": submit_body,
    });
    let cfg_path = c.root().join("ui-test.json");
    std::fs::write(&cfg_path, cfg.to_string()).expect("writing the test's settings");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/ui_browser.py");
    let out = Command::new(python)
        .arg(script)
        .arg(&cfg_path)
        .output()
        .expect("running the browser test");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the browser test failed:\n{text}\nrestd's log:\n{}",
        std::fs::read_to_string(c.root().join("log/restd.log")).unwrap_or_default()
    );
    assert_eq!(c.job_state(pending), "CANCELLED");
    assert!(shots.join("overview.png").exists());
}

/// The simulator page, posted as its form does (with the page's
/// anti-forgery token): the site's recent history replays on the cluster's
/// own nodes, A with the site's policy and B with a changed one, and both
/// results show. No browser needed.
#[test]
fn the_sim_page_replays_the_history_on_the_clusters_own_machine() {
    let (_key, c, restd, token) = jwt_cluster(2);
    let jobs: Vec<u32> = (0..3)
        .map(|_| c.submit(&["-t", "5", "--wrap", "sleep 1"]))
        .collect();
    for &j in &jobs {
        assert_eq!(c.wait_done(j, crate::secs(30)), "COMPLETED");
    }
    let last = jobs[2].to_string();
    // Records reach the store asynchronously: wait for the last one.
    c.wait_until("the jobs in sacct", crate::secs(10), || {
        let o = c.run("sacct", &["-X", "-n", "-P", "-o", "JobID", "-j", &last]);
        o.stdout.contains(&last).then_some(())
    });
    let auth = [("X-SLURM-USER-TOKEN", token.as_str())];
    let (status, form) = restd.call("GET", "/sim", &auth, "");
    assert_eq!(status, 200, "{form}");
    let csrf = form
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the form's anti-forgery token");
    let body = format!(
        "csrf={}&source=history&days=1&a=site&b=fcfs&b_params=",
        restd::ui::html::url_enc(csrf)
    );
    let (status, page) = restd.call(
        "POST",
        "/sim",
        &[
            auth[0],
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &body,
    );
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("class=\"err\""), "{page}");
    let cpus: u32 = c
        .run("sinfo", &["-h", "-N", "-o", "%c"])
        .stdout
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .sum();
    assert!(
        page.contains(&format!(
            "Machine: the cluster&#39;s own: 2 nodes, {cpus} CPUs"
        )),
        "{page}"
    );
    assert!(
        page.contains("<h3 id=\"run-a\">A: the site&#39;s sched/"),
        "{page}"
    );
    assert!(page.contains("<h3 id=\"run-b\">B: fcfs</h3>"), "{page}");
    for p in ["a", "b"] {
        assert!(
            page.contains(&format!("id=\"{p}-utilization-title\"")),
            "{page}"
        );
        assert!(
            page.contains(&format!("id=\"{p}-slowdown-title\"")),
            "{page}"
        );
    }
    // Both runs simulated the three jobs.
    assert!(page.contains("<td>jobs</td><td>3</td><td>3</td>"), "{page}");
}

/// A job's page lists its steps with what sacct and sstat give: a
/// finished step's exit code, elapsed time and usage from accounting, a
/// running step from the controller.
#[test]
fn a_jobs_page_shows_its_steps_with_their_usage() {
    let (_key, c, restd, token) = jwt_cluster(1);
    let done = c.submit(&["--wrap", "exit 3"]);
    assert_eq!(c.wait_done(done, crate::secs(30)), "FAILED");
    let batch = format!("{done}.batch");
    c.wait_until("the batch step in sacct", crate::secs(10), || {
        let o = c.run(
            "sacct",
            &["-n", "-P", "-o", "JobID", "-j", &done.to_string()],
        );
        o.stdout.contains(&batch).then_some(())
    });
    let auth = [("X-SLURM-USER-TOKEN", token.as_str())];
    let (status, page) = restd.call("GET", &format!("/jobs/{done}"), &auth, "");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(">MaxRSS</th>"), "{page}");
    assert!(
        page.contains(&format!(
            "<td>{batch}</td><td>batch</td><td>FAILED</td><td>3:0</td>"
        )),
        "{page}"
    );
    let running = c.submit(&["--wrap", "srun -J inner sleep 60"]);
    c.wait_until("the srun step", crate::secs(30), || {
        let o = c.run("squeue", &["-h", "-s", "-j", &running.to_string()]);
        o.stdout.contains("inner").then_some(())
    });
    let (_, page) = restd.call("GET", &format!("/jobs/{running}"), &auth, "");
    assert!(
        page.contains(&format!(
            "<td>{running}.0</td><td>inner</td><td>RUNNING</td><td></td>"
        )),
        "{page}"
    );
    c.ok("scancel", &[&running.to_string()]);
}
