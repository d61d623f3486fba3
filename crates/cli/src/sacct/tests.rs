use super::fields::{fmt_cpu, fmt_elapsed, fmt_kib, lookup, parse_format, Ctx};
use super::*;
use crate::timespec::{midnight, parse_time};
use chrono::Utc;

/// 2026-12-02T10:24:12 UTC.
const NOW: Timestamp = 1_796_207_052;

fn parse(args: &[&str]) -> Result<SacctArgs, String> {
    parse_env(args, &[])
}

fn parse_env(args: &[&str], env: &[(&str, &str)]) -> Result<SacctArgs, String> {
    let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let e: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    parse_args(&v, &e)
}

fn names(a: &SacctArgs) -> Vec<&'static str> {
    a.columns.iter().map(|c| c.def.name).collect()
}

fn t(spec: &str) -> Option<String> {
    use chrono::TimeZone;
    parse_time(spec, NOW, &Utc).map(|ts| {
        Utc.timestamp_opt(ts, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    })
}

#[test]
fn default_columns_and_layout() {
    let a = parse(&[]).unwrap();
    assert_eq!(
        names(&a),
        [
            "JobID",
            "JobName",
            "Partition",
            "Account",
            "AllocCPUS",
            "State",
            "ExitCode"
        ]
    );
    assert_eq!(a.layout, Layout::Columns);
    assert_eq!(a.delimiter, "|");
    let a = parse(&["-b"]).unwrap();
    assert_eq!(names(&a), ["JobID", "State", "ExitCode"]);
    assert_eq!(parse(&["-l"]).unwrap().columns.len(), 54);
}

#[test]
fn sacct_format_env_only_without_options() {
    let a = parse_env(&[], &[("SACCT_FORMAT", "jobid,user")]).unwrap();
    assert_eq!(names(&a), ["JobID", "User"]);
    let a = parse_env(&["-o", "state"], &[("SACCT_FORMAT", "jobid,user")]).unwrap();
    assert_eq!(names(&a), ["State"]);
}

#[test]
fn format_widths_and_justification() {
    let cols = parse_format("jobid,state%20,nodelist%-256,Account%256,jobname").unwrap();
    assert_eq!((cols[0].width, cols[0].left), (12, true));
    assert_eq!((cols[1].width, cols[1].left), (20, false));
    assert_eq!((cols[2].width, cols[2].left), (256, true));
    assert_eq!((cols[3].width, cols[3].left), (256, false));
    assert_eq!((cols[4].width, cols[4].left), (10, false));
    assert_eq!(
        lookup("tresusageinmaxn").unwrap().name,
        "TRESUsageInMaxNode"
    );
    assert_eq!(lookup("JOBIDRAW").unwrap().name, "JobIDRaw");
    assert_eq!(lookup("jobid").unwrap().name, "JobID");
    assert_eq!(
        parse(&["-o", "jobid,bogus"]).unwrap_err(),
        "sacct: error: Invalid field requested: \"bogus\"\n"
    );
    // Repeated -o append.
    let a = parse(&["-o", "jobid", "--format=state"]).unwrap();
    assert_eq!(names(&a), ["JobID", "State"]);
}

#[test]
fn jobs_lists_steps_and_array_tasks() {
    let a = parse(&["-j", "1,2.batch", "--jobs=3_4", "-j", "5.0,6.extern,7_8.1"]).unwrap();
    let sel = |job, task, step| JobSel { job, task, step };
    assert_eq!(
        a.jobs,
        vec![
            sel(1, None, None),
            sel(2, None, Some(StepId::Batch)),
            sel(3, Some(4), None),
            sel(5, None, Some(StepId::Numbered(0))),
            sel(6, None, Some(StepId::Extern)),
            sel(7, Some(8), Some(StepId::Numbered(1))),
        ]
    );
    assert_eq!(
        parse(&["-j", "abc"]).unwrap_err(),
        "sacct: fatal: Bad job/step specified: abc\n"
    );
}

#[test]
fn flags_and_lists() {
    let a = parse(&[
        "-X",
        "-n",
        "-P",
        "-a",
        "-A",
        "x,y",
        "-u",
        "alice",
        "--uid=1000",
        "--name=n1,n2",
        "-r",
        "debug",
        "--units=G",
        "--noconvert",
        "-L",
        "--json",
        "--delimiter",
        ";",
        "--clusters",
        "all",
        "stray",
    ])
    .unwrap();
    assert!(a.allocations && a.noheader && a.allusers && a.noconvert && a.json);
    assert_eq!(a.layout, Layout::Parsable2);
    assert_eq!(a.accounts, ["x", "y"]);
    assert_eq!(a.users, ["alice", "1000"]);
    assert_eq!(a.names, ["n1", "n2"]);
    assert_eq!(a.partitions, ["debug"]);
    assert_eq!(a.units, Some(Unit::G));
    assert_eq!(a.delimiter, ";");
    assert_eq!(a.clusters, ["all", "all"]);
    assert_eq!(parse(&["-p"]).unwrap().layout, Layout::Parsable);
    assert!(parse(&["--units=X"]).is_err());
    assert_eq!(
        parse(&["--bogus"]).unwrap_err(),
        "sacct: unrecognized option '--bogus'\nTry \"sacct --help\" for more information\n"
    );
}

#[test]
fn states_short_and_long() {
    let a = parse(&["-s", "CA,completed,f", "--state=TO,R,pd,oom,nf"]).unwrap();
    assert_eq!(
        a.states,
        [
            JobState::Cancelled,
            JobState::Completed,
            JobState::Failed,
            JobState::Timeout,
            JobState::Running,
            JobState::Pending,
            JobState::OutOfMemory,
            JobState::NodeFail
        ]
    );
    assert!(parse(&["-s", "bogus"])
        .unwrap_err()
        .starts_with("sacct: error: Invalid state specified: bogus\n"));
}

#[test]
fn time_forms() {
    assert_eq!(t("now").as_deref(), Some("2026-12-02T10:24:12"));
    assert_eq!(t("now-1day").as_deref(), Some("2026-12-01T10:24:12"));
    assert_eq!(t("now-2hours").as_deref(), Some("2026-12-02T08:24:12"));
    assert_eq!(t("now+30").as_deref(), Some("2026-12-02T10:24:42"));
    assert_eq!(t("now-1weeks").as_deref(), Some("2026-11-25T10:24:12"));
    assert_eq!(t("midnight").as_deref(), Some("2026-12-02T00:00:00"));
    assert_eq!(t("today").as_deref(), Some("2026-12-02T00:00:00"));
    assert_eq!(t("noon").as_deref(), Some("2026-12-02T12:00:00"));
    assert_eq!(t("teatime").as_deref(), Some("2026-12-02T16:00:00"));
    assert_eq!(t("2026-11-30").as_deref(), Some("2026-11-30T00:00:00"));
    assert_eq!(
        t("2026-11-30T08:15").as_deref(),
        Some("2026-11-30T08:15:00")
    );
    assert_eq!(
        t("2026-11-30T08:15:09").as_deref(),
        Some("2026-11-30T08:15:09")
    );
    // A time of day is today's even when it has passed.
    assert_eq!(t("09:00").as_deref(), Some("2026-12-02T09:00:00"));
    assert_eq!(t("9:00pm").as_deref(), Some("2026-12-02T21:00:00"));
    assert_eq!(t("1130").as_deref(), Some("2026-11-30T00:00:00"));
    assert_eq!(t("113025").as_deref(), Some("2025-11-30T00:00:00"));
    assert_eq!(t("1130-08:00").as_deref(), Some("2026-11-30T08:00:00"));
    assert_eq!(t("11/30").as_deref(), Some("2026-11-30T00:00:00"));
    assert_eq!(t("11/30/25").as_deref(), Some("2025-11-30T00:00:00"));
    assert_eq!(
        t("11.30.25-01:02:03").as_deref(),
        Some("2025-11-30T01:02:03")
    );
    for bad in ["", "abc", "now-1fortnight", "25:00", "2026-13-01", "13/40"] {
        assert_eq!(t(bad), None, "{bad}");
    }
    assert!(parse(&["-S", "abc"]).is_err());
    assert!(parse(&["-S", "2026-11-30T08:15", "-E", "now"]).is_ok());
}

#[test]
fn query_defaults_follow_the_time_window_rules() {
    let midnight_today = midnight(NOW, &Utc);
    let q = query_for_tz(&parse(&[]).unwrap(), "sauser", NOW, &Utc);
    assert_eq!(q.start, Some(midnight_today));
    assert_eq!(q.end, None);
    assert_eq!(q.users, Some(vec!["sauser".to_string()]));
    // -j: no time limit and no user restriction.
    let q = query_for_tz(&parse(&["-j", "5,6_1"]).unwrap(), "sauser", NOW, &Utc);
    assert_eq!((q.start, q.end), (None, None));
    assert_eq!(q.ids, [5, 6]);
    assert_eq!(q.users, None);
    // -s without -S: now..now.
    let q = query_for_tz(&parse(&["-s", "R"]).unwrap(), "sauser", NOW, &Utc);
    assert_eq!((q.start, q.end), (Some(NOW), Some(NOW)));
    // Issue 35: -S T -s STATES without -E ends the window at T (Slurm's
    // sacct: "-E defaults to -S" with -s), with -j or without.
    for args in [
        &["-S", "now-1day", "-s", "CD"][..],
        &["-S", "now-1day", "-s", "CD", "-j", "5"],
    ] {
        let q = query_for_tz(&parse(args).unwrap(), "sauser", NOW, &Utc);
        assert_eq!(
            (q.start, q.end),
            (Some(NOW - 86_400), Some(NOW - 86_400)),
            "{args:?}"
        );
    }
    // -j -s without -S: no bounds (Slurm: from the epoch to now).
    let q = query_for_tz(
        &parse(&["-s", "CD", "-j", "5"]).unwrap(),
        "sauser",
        NOW,
        &Utc,
    );
    assert_eq!((q.start, q.end), (None, None));
    // -a and root see everyone; -u wins.
    assert_eq!(
        query_for_tz(&parse(&["-a"]).unwrap(), "x", NOW, &Utc).users,
        None
    );
    assert_eq!(
        query_for_tz(&parse(&[]).unwrap(), "root", NOW, &Utc).users,
        None
    );
    let q = query_for_tz(
        &parse(&["-u", "bob", "-S", "now-1day", "-E", "now"]).unwrap(),
        "x",
        NOW,
        &Utc,
    );
    assert_eq!(q.users, Some(vec!["bob".to_string()]));
    assert_eq!((q.start, q.end), (Some(NOW - 86_400), Some(NOW)));
}

/// `ContainerStart` (not Slurm's): listed by `--helpformat` after Slurm's
/// fields, a container step's start-up as the CPU times print, empty
/// without a container.
#[test]
fn container_start_formats_as_cpu_times() {
    use super::fields::{fmt_container_start, helpformat};
    let mut u = proto::StepUsage::default();
    assert_eq!(fmt_container_start(&u), "");
    u.container_start_usec = Some(1_234_567);
    assert_eq!(fmt_container_start(&u), "00:01.234");
    u.container_start_usec = Some(90_061_000_000);
    assert_eq!(fmt_container_start(&u), "1-01:01:01");
    assert_eq!(lookup("containerstart").unwrap().name, "ContainerStart");
    assert_eq!(lookup("container").unwrap().name, "Container");
    assert!(helpformat().contains("ContainerStart"));
}

#[test]
fn value_formats() {
    assert_eq!(fmt_elapsed(3), "00:00:03");
    assert_eq!(fmt_elapsed(93_784), "1-02:03:04");
    assert_eq!(fmt_cpu(8_000), "00:00.008");
    assert_eq!(fmt_cpu(3_723_000_000), "01:02:03");
    let ctx = |units, noconvert| Ctx {
        now: NOW,
        units,
        noconvert,
    };
    assert_eq!(fmt_kib(3596, &ctx(None, false)), "3596K");
    assert_eq!(fmt_kib(2048, &ctx(None, false)), "2M");
    assert_eq!(fmt_kib(2048, &ctx(None, true)), "2048K");
    assert_eq!(fmt_kib(3596, &ctx(Some(Unit::M), false)), "3.51M");
    assert_eq!(fmt_kib(1_048_576, &ctx(Some(Unit::G), false)), "1.00G");
    assert_eq!(fmt_kib(0, &ctx(Some(Unit::G), false)), "0");
}

#[test]
fn helpformat_lists_every_field() {
    let text = fields::helpformat();
    assert!(text
        .starts_with("Account             AdminComment        AllocCPUS           AllocNodes\n"));
    assert_eq!(text.split_whitespace().count(), fields::FIELDS.len());
}
