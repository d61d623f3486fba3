//! Accounting end to end: job records written as jobs move, read by sacct.

use crate::{cluster, secs};

#[test]
fn sacct_shows_finished_jobs_with_their_steps() {
    let c = cluster(1);
    let failed = c.submit(&["--wrap", "exit 3"]);
    let ok = c.submit(&["-J", "fine", "--wrap", "true"]);
    let long = c.submit(&["--wrap", "sleep 60"]);
    assert_eq!(c.wait_done(failed, secs(10)), "FAILED");
    assert_eq!(c.wait_done(ok, secs(10)), "COMPLETED");
    c.wait_state(long, "RUNNING", secs(10));
    c.ok("scancel", &[&long.to_string()]);
    assert_eq!(c.wait_done(long, secs(10)), "CANCELLED");
    let me = e2e::user_name();
    let uid = nix::unistd::getuid().as_raw();
    // Records reach the store asynchronously: wait for the last one.
    let out = c.wait_until("the cancelled job in sacct", secs(10), || {
        let o = c.run("sacct", &["-P", "-o", "JobID,JobName,State,ExitCode"]);
        o.stdout
            .contains(&format!("{long}.batch|batch|CANCELLED|0:15"))
            .then_some(o.stdout)
    });
    let expected = format!(
        "JobID|JobName|State|ExitCode\n\
         {failed}|wrap|FAILED|3:0\n{failed}.batch|batch|FAILED|3:0\n\
         {ok}|fine|COMPLETED|0:0\n{ok}.batch|batch|COMPLETED|0:0\n\
         {long}|wrap|CANCELLED by {uid}|0:0\n{long}.batch|batch|CANCELLED|0:15\n"
    );
    assert_eq!(out, expected, "user {me}");
    // Parsl's form: -X, no header, state%20, a job list.
    let x = c.ok(
        "sacct",
        &[
            "-X",
            "--noheader",
            "--format=jobid,state%20",
            "--job",
            &format!("{failed},{ok}"),
        ],
    );
    assert_eq!(
        x.stdout,
        format!(
            "{failed:<12} {:>20} \n{ok:<12} {:>20} \n",
            "FAILED", "COMPLETED"
        )
    );
}

#[test]
fn sacct_reports_what_the_batch_step_used() {
    let c = cluster(1);
    // dd holds a 64 MiB buffer and spends some CPU copying it.
    let id = c.submit(&[
        "--wrap",
        "dd if=/dev/zero of=/dev/null bs=64M count=4 2>/dev/null",
    ]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    let row = c.wait_until("the batch step's usage in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-j",
                &id.to_string(),
                "-n",
                "-P",
                "-o",
                "JobID,MaxRSS,TotalCPU",
            ],
        );
        o.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id}.batch|")) && !l.contains("||"))
            .map(str::to_string)
    });
    let fields: Vec<&str> = row.split('|').collect();
    let rss_kib: u64 = fields[1]
        .trim_end_matches('K')
        .parse()
        .expect("MaxRSS in K");
    assert!(
        rss_kib >= 64 * 1024,
        "MaxRSS {} below the 64 MiB buffer",
        fields[1]
    );
    assert_ne!(fields[2], "00:00:00", "TotalCPU");
}

#[test]
fn prolog_contain_records_an_extern_step() {
    let c = crate::builder()
        .nodes(1)
        .conf_extra("PrologFlags=Contain\n")
        .start();
    let id = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    let out = c.wait_until("the ended extern step", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,JobName,State,ExitCode",
                "-j",
                &id.to_string(),
            ],
        );
        o.stdout
            .contains(".extern|extern|COMPLETED")
            .then_some(o.stdout)
    });
    assert_eq!(
        out,
        format!(
            "{id}|wrap|COMPLETED|0:0\n{id}.batch|batch|COMPLETED|0:0\n\
             {id}.extern|extern|COMPLETED|0:0\n"
        )
    );
}
