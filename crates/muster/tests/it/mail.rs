//! Mail end to end: `--mail-type`/`--mail-user` make the controller run
//! slurm.conf's `MailProg` as `MailProg -s SUBJECT USER` with Slurm's
//! subject lines, the submitter being the default user.

use crate::{builder, secs};
use std::path::Path;

/// A MailProg that appends its arguments, `|` separated, to `log`.
fn mail_prog(dir: &Path, log: &Path) -> String {
    let p = dir.join("mail.sh");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nprintf '%s|%s|%s\\n' \"$1\" \"$2\" \"$3\" >> {}\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

fn me() -> String {
    let out = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The logged lines once there are `n`.
fn lines(c: &e2e::Cluster, log: &Path, n: usize) -> Vec<String> {
    c.wait_until("the mails", secs(15), || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let v: Vec<String> = text.lines().map(str::to_string).collect();
        (v.len() >= n).then_some(v)
    })
}

#[test]
fn begin_end_and_fail_run_mail_prog_with_slurms_subjects() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mail.log");
    let prog = mail_prog(dir.path(), &log);
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("MailProg={prog}\nMailDomain=example.org"))
        .start();
    let user = me();

    let a = c.submit(&["--mail-type=BEGIN,END", "-J", "ok", "--wrap", "true"]);
    assert_eq!(c.wait_done(a, secs(15)), "COMPLETED");
    let got = lines(&c, &log, 2);
    assert_eq!(got.len(), 2, "{got:?}");
    let begin = format!("-s|Slurm Job_id={a} Name=ok Began, Queued time ");
    assert!(got[0].starts_with(&begin), "{got:?}");
    assert!(got[0].ends_with(&format!("|{user}@example.org")), "{got:?}");
    let end = format!("-s|Slurm Job_id={a} Name=ok Ended, Run time ");
    assert!(got[1].starts_with(&end), "{got:?}");
    assert!(
        got[1].ends_with(&format!(", COMPLETED, ExitCode 0|{user}@example.org")),
        "{got:?}"
    );

    let b = c.submit(&[
        "--mail-type=FAIL",
        "--mail-user=ops@site",
        "-J",
        "bad",
        "--wrap",
        "exit 3",
    ]);
    assert_eq!(c.wait_done(b, secs(15)), "FAILED");
    let got = lines(&c, &log, 3);
    let fail = &got[2];
    assert!(
        fail.starts_with(&format!("-s|Slurm Job_id={b} Name=bad Failed, Run time ")),
        "{got:?}"
    );
    assert!(fail.ends_with(", FAILED, ExitCode 3|ops@site"), "{got:?}");
    // Durations read HH:MM:SS.
    let run = fail.split("Run time ").nth(1).unwrap();
    let hms: Vec<&str> = run[..8].split(':').collect();
    assert!(
        hms.len() == 3 && hms.iter().all(|p| p.len() == 2 && p.parse::<u32>().is_ok()),
        "{fail}"
    );

    // An invalid type.
    let out = c.run("sbatch", &["--mail-type=NOPE", "--wrap", "true"]);
    assert_eq!(
        out.stderr, "sbatch: error: --mail-type=NOPE invalid\n",
        "{out}"
    );

    // A job without --mail-type mails nobody.
    let d = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(d, secs(15)), "COMPLETED");
    std::thread::sleep(secs(1));
    assert_eq!(lines(&c, &log, 3).len(), 3);

    // scontrol shows the mail settings; a cancelled job's mail is END's.
    let h = c.submit(&["--hold", "--mail-type=ALL", "-J", "held", "--wrap", "true"]);
    let show = c.ok("scontrol", &["show", "job", &h.to_string()]);
    assert!(
        show.stdout.contains(&format!(
            "\n   MailUser={user} MailType=INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT\n"
        )),
        "{show}"
    );
    c.ok("scancel", &[&h.to_string()]);
    let got = lines(&c, &log, 4);
    assert_eq!(
        got[3],
        format!(
            "-s|Slurm Job_id={h} Name=held Ended, Run time 00:00:00, CANCELLED, ExitCode 0|{user}@example.org"
        ),
        "{got:?}"
    );
}

#[test]
fn time_limit_shares_and_array_summaries_are_mailed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mail.log");
    let prog = mail_prog(dir.path(), &log);
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("MailProg={prog}\n"))
        .start();
    let user = me();
    // One summary for a whole array (no ARRAY_TASKS), when its last task
    // ends: one task fails, so FAIL's word and Mixed exit codes.
    let a = c.submit(&[
        "--array=1-3",
        "--mail-type=END,FAIL",
        "-J",
        "arr",
        "--wrap",
        "[ $SLURM_ARRAY_TASK_ID != 2 ] || exit 4",
    ]);
    let got = lines(&c, &log, 1);
    assert_eq!(
        got,
        [format!(
            "-s|Slurm Array Summary Job_id={a}_* ({a}) Name=arr Failed, Mixed, ExitCode [0-4]|{user}"
        )]
    );
    // TIME_LIMIT_50 of a one-minute job: a mail at 30 s of run time, from
    // the controller's timer.
    let t = c.submit(&[
        "-t",
        "1",
        "--mail-type=TIME_LIMIT_50",
        "-J",
        "half",
        "--wrap",
        "sleep 300",
    ]);
    c.wait_state(t, "RUNNING", secs(20));
    let got = c.wait_until("the 50% mail", secs(120), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let v: Vec<String> = text.lines().map(str::to_string).collect();
        (v.len() >= 2).then_some(v)
    });
    let half = format!("-s|Slurm Job_id={t} Name=half Reached 50% of time limit, Run time 00:0");
    assert!(got[1].starts_with(&half), "{got:?}");
    assert!(got[1].ends_with(&format!("|{user}")), "{got:?}");
    assert_eq!(c.job_state(t), "RUNNING");
    c.ok("scancel", &[&t.to_string()]);
}
