//! Multifactor priority: sprio and sshare against a real controller.

use crate::{builder, cluster};

const MULTIFACTOR: &str = "PriorityType=priority/multifactor\nPriorityWeightFairshare=10000\n\
PriorityWeightJobSize=1000\nPriorityWeightPartition=1000\nPriorityWeightQOS=1000\n\
PriorityWeightAge=1000\n";

#[test]
fn sprio_shows_each_factor_and_sshare_the_tree() {
    let c = builder().nodes(2).conf_extra(MULTIFACTOR).start();
    // A job on every node, and one that waits behind it.
    let blocker = c.submit(&["-N", "2", "--exclusive", "--wrap", "sleep 60"]);
    c.wait_state(blocker, "RUNNING", crate::secs(10));
    let id = c.submit(&["-n", "1", "--wrap", "true"]);
    let out = c.ok("sprio", &[]).stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    // One user without usage: fair-share 1 (10000); the only partition: 1000.
    assert_eq!(row[0], id.to_string(), "{out}");
    assert_eq!((row[5], row[7]), ("10000", "1000"), "{out}");
    let prio: u32 = row[2].parse().unwrap();
    assert!(prio >= 11_000, "{out}");
    let weights = c.ok("sprio", &["-w"]).stdout;
    assert_eq!(
        weights.lines().nth(1).unwrap(),
        "        Weights                               1       1000      10000       1000       1000       1000"
    );
    let long = c.ok("sprio", &["-l", "-h", "-j", &id.to_string()]).stdout;
    assert!(long.contains(&e2e::user_name()), "{long}");
    let shares = c.ok("sshare", &["-a", "-P"]).stdout;
    let me = e2e::user_name();
    assert!(
        shares
            .lines()
            .any(|l| l.starts_with(&format!("root|{me}|1|"))),
        "{shares}"
    );
    assert!(
        shares.starts_with("Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare\n")
    );
    // scontrol show job carries the same priority.
    assert_eq!(c.job_field(id, "Priority"), prio.to_string());
    c.ok("scancel", &[&blocker.to_string(), &id.to_string()]);
}

#[test]
fn sprio_needs_the_multifactor_plugin() {
    let c = cluster(1);
    let out = c.run("sprio", &[]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("priority/basic"), "{}", out.stderr);
}

/// AccountingStorageEnforce=limits: a QOS limit set with sacctmgr holds
/// the user's next job with Slurm's reason until the first one ends.
#[test]
fn qos_limits_set_with_sacctmgr_hold_jobs_with_their_reason() {
    let c = builder()
        .nodes(1)
        .conf_extra("AccountingStorageEnforce=associations,limits,qos\n")
        .start();
    c.ok(
        "sacctmgr",
        &["-i", "modify", "qos", "normal", "set", "MaxJobsPerUser=1"],
    );
    let first = c.submit(&["--wrap", "sleep 4"]);
    let second = c.submit(&["--wrap", "true"]);
    c.wait_state(first, "RUNNING", crate::secs(10));
    assert_eq!(
        c.squeue_field(second, "%T %r"),
        "PENDING QOSMaxJobsPerUserLimit"
    );
    assert_eq!(c.wait_done(second, crate::secs(30)), "COMPLETED");
    c.ok(
        "sacctmgr",
        &["-i", "modify", "qos", "normal", "set", "MaxWall=10"],
    );
    let long = c.submit(&["-t", "30", "--wrap", "true"]);
    c.wait_for(long, crate::secs(10), |s| s == "PENDING");
    assert_eq!(c.squeue_field(long, "%r"), "QOSMaxWallDurationPerJobLimit");
    c.ok("scancel", &[&long.to_string()]);
    // MaxSubmitJobsPerUser refuses at submit, in Slurm's words.
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "qos",
            "normal",
            "set",
            "MaxSubmitJobsPerUser=1",
            "MaxWall=-1",
        ],
    );
    let held = c.submit(&["-H", "--wrap", "true"]);
    let out = c.run("sbatch", &["--wrap", "true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "sbatch: error: QOSMaxSubmitJobPerUserLimit\n\
         sbatch: error: Batch job submission failed: Job violates accounting/QOS policy \
         (job submit limit, user's size and/or time limits)\n"
    );
    c.ok("scancel", &[&held.to_string()]);
}
