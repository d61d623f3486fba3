//! sacctmgr end to end: the association database kept by the controller's
//! accounting writer, changed and listed through the real command.

use crate::{builder, cluster, reference, secs};

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn sacctmgr_builds_the_account_tree_and_keeps_it() {
    let mut c = cluster(1);
    // A fresh database: the cluster, its root account and root user.
    let out = c.ok(
        "sacctmgr",
        &["-nP", "show", "assoc", "format=cluster,account,user,qos"],
    );
    assert_eq!(
        lines(&out.stdout),
        ["e2e|root||normal", "e2e|root|root|normal"]
    );

    let out = c.ok(
        "sacctmgr",
        &[
            "-i",
            "add",
            "account",
            "ML",
            "Description=machine learning",
            "fairshare=10",
        ],
    );
    assert_eq!(
        out.stdout,
        " Adding Account(s)\n  ml\n Settings\n  Description     = machine learning\n  \
         Organization    = Parent/Account Name\n Associations\n  A = ml         C = e2e       \n \
         Settings\n  Fairshare     = 10\n"
    );
    c.ok("sacctmgr", &["-i", "add", "account", "vision", "parent=ml"]);
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "add",
            "qos",
            "high",
            "priority=100",
            "maxwall=1:00:00",
        ],
    );
    let out = c.ok(
        "sacctmgr",
        &[
            "-i",
            "add",
            "user",
            "alice",
            "account=vision",
            "adminlevel=operator",
            "qos=high,normal",
        ],
    );
    assert!(
        out.stdout
            .contains("  U = alice     A = vision     C = e2e       \n"),
        "{out}"
    );
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "user",
            "alice",
            "set",
            "maxjobs=3",
            "defaultqos=high",
        ],
    );

    let tree = "cluster,account,user,share,maxjobs,qos,defaultqos";
    let expected = [
        "e2e|root||1||normal|",
        "e2e|root|root|1||normal|",
        "e2e|ml||10||normal|",
        "e2e|vision||1||normal|",
        "e2e|vision|alice|1|3|high,normal|high",
    ];
    let show = |c: &e2e::Cluster| {
        c.ok(
            "sacctmgr",
            &["-nP", "show", "assoc", &format!("format={tree}")],
        )
        .stdout
    };
    let got = show(&c);
    assert_eq!(lines(&got), expected);
    let users = c.ok(
        "sacctmgr",
        &[
            "-nP",
            "show",
            "user",
            "alice",
            "format=user,defaultaccount,admin",
        ],
    );
    assert_eq!(users.stdout, "alice|vision|Operator\n");
    let qos = c.ok(
        "sacctmgr",
        &["-nP", "show", "qos", "format=name,priority,maxwall"],
    );
    assert_eq!(qos.stdout, "normal|0|\nhigh|100|01:00:00\n");

    // The database is the store's: a restarted controller still has it.
    c.restart_ctld();
    assert_eq!(show(&c), got);

    // Without -i, sacctmgr asks; anything but y discards.
    let no = c.run_stdin("sacctmgr", &["delete", "user", "alice"], "n\n");
    assert!(no.ok(), "{no}");
    assert!(no.stdout.contains(" Deleting users...\n  alice\n"), "{no}");
    assert!(no.stdout.ends_with(" Changes Discarded\n"), "{no}");
    assert!(show(&c).contains("alice"));
    let yes = c.run_stdin("sacctmgr", &["delete", "user", "alice"], "y\n");
    assert!(yes.ok(), "{yes}");
    assert!(!show(&c).contains("alice"));

    // Refusals keep Slurm's words and exit 1.
    let root = c.run("sacctmgr", &["-i", "delete", "account", "root"]);
    assert_eq!(root.code, 1);
    assert_eq!(
        root.stderr,
        " You are not allowed to remove the root account.\n Use remove cluster instead.\n"
    );
    let again = c.run("sacctmgr", &["-i", "add", "account", "ml"]);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (1, " Nothing new added.\n")
    );
    let bad = c.run("sacctmgr", &["show", "assoc", "format=nonsense"]);
    assert_eq!(
        (bad.code, bad.stderr.as_str()),
        (1, "Unknown field 'nonsense'\n")
    );
}

/// AccountingStorageEnforce=associations,limits,qos: who may submit under
/// which account and QOS comes from the association database, as pushed
/// into the engine (and replayed from the journal after a restart).
#[test]
fn enforced_associations_decide_who_may_submit() {
    let mut c = builder()
        .nodes(1)
        .conf_extra("AccountingStorageEnforce=associations,limits,qos\n")
        .start();
    let refused = |c: &e2e::Cluster, args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--wrap", "true"]);
        let out = c.run("sbatch", &all);
        assert_eq!(out.code, 1, "{out}");
        out.stderr
    };
    let bad_account = "sbatch: error: Batch job submission failed: \
                       Invalid account or account/partition combination specified\n";
    let bad_qos = "sbatch: error: Batch job submission failed: Invalid qos specification\n";
    if let Some(r) = reference("err_sbatch_bad_account.err") {
        assert_eq!(r, bad_account);
    }
    if let Some(r) = reference("err_sbatch_bad_qos.err") {
        assert_eq!(r, bad_qos);
    }
    assert_eq!(refused(&c, &["-A", "nosuchacct"]), bad_account);
    assert_eq!(refused(&c, &["--qos=nosuchqos"]), bad_qos);
    // The default account and QOS are filled in.
    let id = c.submit(&["--wrap", "true"]);
    assert_eq!(c.squeue_field(id, "%a %q"), "root normal");

    // An account the user is not in is refused until the user is added.
    c.ok("sacctmgr", &["-i", "add", "account", "ml"]);
    c.ok("sacctmgr", &["-i", "add", "qos", "high"]);
    let me = e2e::user_name();
    assert_eq!(refused(&c, &["-A", "ml"]), bad_account);
    c.ok("sacctmgr", &["-i", "add", "user", &me, "account=ml"]);
    let id = c.submit(&["-A", "ml", "--wrap", "true"]);
    assert_eq!(c.squeue_field(id, "%a %q"), "ml normal");
    // A QOS the association does not allow is refused until it does.
    assert_eq!(refused(&c, &["-A", "ml", "--qos=high"]), bad_qos);
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "user",
            &me,
            "where",
            "account=ml",
            "set",
            "qos+=high",
        ],
    );
    let id = c.submit(&["-A", "ml", "--qos=high", "--wrap", "true"]);
    assert_eq!(c.squeue_field(id, "%a %q"), "ml high");

    // A user with no association at all cannot submit; a restarted
    // controller (journal replay) decides the same.
    c.ok(
        "sacctmgr",
        &["-i", "delete", "user", &me, "where", "account=ml"],
    );
    assert_eq!(refused(&c, &["-A", "ml"]), bad_account);
    c.restart_ctld();
    assert_eq!(refused(&c, &["-A", "ml"]), bad_account);
    let id = c.submit(&["--wrap", "true"]);
    assert_eq!(c.squeue_field(id, "%a %q"), "root normal");
}

/// Usage rollups end to end: a finished job's CPU-seconds show in sreport
/// (the hour in progress is rolled up on demand) and in the decayed usage
/// the controller keeps for fair-share.
#[test]
fn sreport_shows_what_jobs_used() {
    let c = cluster(1);
    let id = c.submit(&["-A", "root", "-n", "2", "--wrap", "sleep 2"]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    let me = e2e::user_name();
    // The record reaches the store asynchronously: wait for its end.
    let cpu_secs = c.wait_until("the job's record", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-X",
                "-n",
                "-P",
                "-o",
                "State,CPUTimeRAW",
                "-j",
                &id.to_string(),
            ],
        );
        o.stdout
            .strip_prefix("COMPLETED|")
            .map(|v| v.trim().to_owned())
    });
    assert!(cpu_secs.parse::<i64>().unwrap() >= 4, "{cpu_secs}");
    let window = ["start=now-1hours", "end=now+1hours"];
    let mut args = vec![
        "-nP",
        "-t",
        "seconds",
        "user",
        "top",
        "format=login,account,used",
    ];
    args.extend_from_slice(&window);
    let top = c.ok("sreport", &args);
    assert_eq!(top.stdout, format!("{me}|root|{cpu_secs}\n"));
    let mut args = vec![
        "-nP",
        "-t",
        "seconds",
        "cluster",
        "utilization",
        "format=cluster,allocated",
    ];
    args.extend_from_slice(&window);
    let util = c.ok("sreport", &args);
    assert_eq!(util.stdout, format!("e2e|{cpu_secs}\n"));
    let mut args = vec![
        "-nP",
        "-t",
        "seconds",
        "cluster",
        "AccountUtilizationByUser",
        "format=account,login,used",
    ];
    args.extend_from_slice(&window);
    let by = c.ok("sreport", &args);
    assert!(
        by.stdout.starts_with(&format!("root||{cpu_secs}\n")),
        "{by}"
    );
    assert!(
        by.stdout.contains(&format!("root|{me}|{cpu_secs}\n")),
        "{by}"
    );
    // The banner names the report and its unit.
    let mut args = vec!["cluster", "utilization"];
    args.extend_from_slice(&window);
    let banner = c.ok("sreport", &args);
    assert!(
        banner.stdout.contains("\nUsage reported in CPU Minutes\n"),
        "{banner}"
    );
}
