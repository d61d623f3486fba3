//! sreport's three reports, rendered from a fixed usage answer. The layout
//! (80-dash banners, the title with the window, `Usage reported in CPU
//! Minutes`, right-aligned columns, `%.0f` minutes) follows Slurm 22.05's
//! sreport; the capture in `shared/reference` has no sreport output, so
//! these pin the format against regressions.

use cli::sreport::{self, Kind, TimeFormat};
use proto::acctdb::{AcctTables, Assoc, UsageEntry, UsageReport};
use proto::resv::AcctResv;

/// 2026-12-01T00:00:00Z.
const DAY: i64 = 1_796_083_200;

fn report(args: &[&str]) -> sreport::Report {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    // "now" is 2026-12-02T10:00:00Z: the default window is 2026-12-01.
    sreport::parse(&args, DAY + 86_400 + 36_000, &chrono::Utc)
        .unwrap()
        .unwrap()
}

fn entry(account: &str, user: &str, alloc: i64, cap: i64) -> UsageEntry {
    UsageEntry {
        account: account.into(),
        user: user.into(),
        alloc_secs: alloc,
        capacity_secs: cap,
    }
}

fn usage() -> UsageReport {
    UsageReport {
        cluster: "anchor".into(),
        rows: vec![
            entry("", "", 36_000, 8 * 86_400),
            entry("ml", "sauser", 30_000, 0),
            entry("research", "sauser", 3_000, 0),
            entry("research", "root", 3_000, 0),
        ],
    }
}

fn tables() -> AcctTables {
    let assoc = |account: &str, user: &str, parent: &str| Assoc {
        cluster: "anchor".into(),
        account: account.into(),
        user: user.into(),
        parent: parent.into(),
        ..Assoc::default()
    };
    AcctTables {
        assocs: vec![
            assoc("root", "", ""),
            assoc("ml", "", "root"),
            assoc("ml", "sauser", "ml"),
            assoc("research", "", "root"),
            assoc("research", "root", "research"),
            assoc("research", "sauser", "research"),
        ],
        ..AcctTables::default()
    }
}

fn render(r: &sreport::Report) -> String {
    let time = |t: i64| {
        chrono::DateTime::from_timestamp(t, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    };
    sreport::render(r, &usage(), &tables(), &|_| String::new(), &time)
}

const BANNER: &str =
    "--------------------------------------------------------------------------------\n";

#[test]
fn cluster_utilization() {
    let r = report(&["cluster", "utilization"]);
    assert_eq!(
        (r.kind, r.start, r.end),
        (Kind::Utilization, DAY, DAY + 86_400)
    );
    assert_eq!(
        render(&r),
        format!(
            "{BANNER}Cluster Utilization 2026-12-01T00:00:00 - 2026-12-01T23:59:59\n\
             Usage reported in CPU Minutes\n{BANNER}\
             \x20 Cluster    Allocated       Down  PLND Down         Idle   Planned     Reported \n\
             --------- ------------ ---------- ---------- ------------ --------- ------------ \n\
             \x20  anchor          600          0          0        10920         0        11520 \n"
        )
    );
    let p = report(&["-P", "-n", "-t", "percent", "cluster", "utilization"]);
    assert_eq!(p.time, TimeFormat::Percent);
    assert_eq!(
        render(&p),
        "anchor|5.21%|0.00%|0.00%|94.79%|0.00%|100.00%\n"
    );
}

#[test]
fn user_top() {
    let r = report(&["user", "top", "start=2026-12-01", "end=2026-12-02"]);
    assert_eq!(
        render(&r),
        format!(
            "{BANNER}Top 10 Users 2026-12-01T00:00:00 - 2026-12-01T23:59:59 (86400 secs)\n\
             Usage reported in CPU Minutes\n{BANNER}\
             \x20 Cluster     Login     Proper Name         Account       Used     Energy \n\
             --------- --------- --------------- --------------- ---------- ---------- \n\
             \x20  anchor    sauser                    ml, research        550          0 \n\
             \x20  anchor      root                        research         50          0 \n"
        )
    );
    let one = report(&["-p", "-n", "user", "top", "topcount=1", "format=login,used"]);
    assert_eq!(render(&one), "sauser|550|\n");
}

#[test]
fn account_utilization_by_user() {
    let r = report(&[
        "-n",
        "-P",
        "-t",
        "hours",
        "cluster",
        "AccountUtilizationByUser",
    ]);
    assert_eq!(
        render(&r),
        "anchor|root|||10|0\nanchor|ml|||8|0\nanchor|ml|sauser||8|0\n\
         anchor|research|||2|0\nanchor|research|root||1|0\nanchor|research|sauser||1|0\n"
    );
}

#[test]
fn bad_reports_and_fields() {
    let parse = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        sreport::parse(&args, DAY, &chrono::Utc).unwrap_err()
    };
    assert_eq!(
        parse(&["cluster", "utilization", "format=bogus"]),
        " Unknown field 'bogus'\n"
    );
    assert_eq!(
        parse(&["cluster", "utilization", "colour=red"]),
        " Unknown condition: colour=red\nUse keyword set to modify value\n"
    );
    assert!(parse(&["cluster", "nonsense"]).starts_with("Not valid report nonsense\n"));
    assert_eq!(
        parse(&["reservation", "utilization", "format=used"]),
        " Unknown field 'used'\n"
    );
}

/// No capture of real Slurm's `sreport reservation utilization` exists
/// (shared/reference has no sreport output): the banner and column layout
/// follow the other sreport reports, and the field names and the default
/// `Cluster,Name,Start,End,TresName,Allocated,Idle` are the sreport man
/// page's (FORMAT OPTIONS FOR EACH REPORT). This pins that format.
fn resvs() -> Vec<AcctResv> {
    let resv = |name: &str, start: i64, end: i64, nodes: &str, cpus: u32, used: u64| AcctResv {
        cluster: "anchor".into(),
        name: name.into(),
        start,
        end,
        nodes: nodes.into(),
        tres: format!("cpu={cpus}"),
        flags: "SPEC_NODES".into(),
        cpus,
        used_cpu_secs: used,
        unused_wall: (end - start) as f64 - used as f64 / f64::from(cpus),
    };
    vec![
        // From noon the day before to noon: half of it in the window,
        // its jobs used half of its CPUs' time.
        resv("long", DAY - 43_200, DAY + 43_200, "n3", 8, 8 * 43_200),
        // 02:00 to 04:00, one hour of all 16 CPUs used.
        resv("maint", DAY + 7_200, DAY + 14_400, "n[1-2]", 16, 16 * 3_600),
    ]
}

fn render_resv(r: &sreport::Report) -> String {
    let time = |t: i64| {
        chrono::DateTime::from_timestamp(t, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    };
    sreport::render_resv(r, &resvs(), DAY + 86_400 + 36_000, &time)
}

#[test]
fn reservation_utilization() {
    let r = report(&["reservation", "utilization"]);
    assert_eq!(
        (r.kind, r.start, r.end),
        (Kind::ResvUtil, DAY, DAY + 86_400)
    );
    assert_eq!(
        render_resv(&r),
        format!(
            "{BANNER}Reservation Utilization 2026-12-01T00:00:00 - 2026-12-01T23:59:59\n\
             Usage reported in TRES Minutes\n{BANNER}\
             \x20 Cluster      Name               Start                 End      TRES Name Allocated      Idle \n\
             --------- --------- ------------------- ------------------- -------------- --------- --------- \n\
             \x20  anchor      long 2026-12-01T00:00:00 2026-12-01T12:00:00            cpu      2880      2880 \n\
             \x20  anchor     maint 2026-12-01T02:00:00 2026-12-01T04:00:00            cpu       960       960 \n"
        )
    );
    let p = report(&[
        "-P",
        "-n",
        "-t",
        "percent",
        "reservation",
        "utilization",
        "names=maint",
    ]);
    assert_eq!(
        render_resv(&p),
        "anchor|maint|2026-12-01T02:00:00|2026-12-01T04:00:00|cpu|50.00%|50.00%\n"
    );
    let n = report(&[
        "-p",
        "-n",
        "-t",
        "hours",
        "res",
        "util",
        "nodes=n2",
        "format=name,nodes,nodecount,trescount,trestime,allocated,idle",
    ]);
    assert_eq!(render_resv(&n), "maint|n[1-2]|2|16|32|16|16|\n");
    // A window outside the report's is not listed.
    let none = report(&["-n", "reservation", "utilization", "start=2026-12-03"]);
    assert_eq!(render_resv(&none), "");
}
