//! sacctmgr end to end: the association database kept by the controller's
//! accounting writer, changed and listed through the real command.

use crate::cluster;

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
