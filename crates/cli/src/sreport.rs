//! `sreport`: usage reports from the accounting store's rollups, as Slurm
//! 22.05 prints them: `cluster utilization`, `cluster
//! AccountUtilizationByUser`, `user top` and `reservation utilization`.
//!
//! ```text
//! args --parse--> Report --UsageQuery--> controller (rolls up, sums hours)
//!                   |                        |
//!                   +------ render(report, UsageReport, tables) --> text (pure)
//! ```
//!
//! Not yet: Down and PLND Down are always 0 (node state history is not
//! kept), Energy is 0, the `-T` TRES selection (CPU only), job reports, `tree`.
//!
//! `reservation utilization` reads the windows accounting keeps
//! (`proto::resv::AcctResv`, as `sacctmgr show reservation` does), clipped
//! to the report window: Allocated is the CPU time its jobs used, Idle the
//! rest of its CPUs' time. A window's record holds one total for what its
//! jobs used, so a window that only partly meets the report window is
//! counted by the overlap's share of the time the record covers.

use crate::common::{self, print_stdout, Stop};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use crate::sacctmgr::abbrev;
use crate::timespec::{midnight, parse_time};
use model::Timestamp;
use proto::acctdb::{AcctTables, UsageQuery, UsageReport};

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("all_clusters", Some('a'), Arg::None),
    opt("cluster", Some('M'), Arg::Required),
    opt("help", Some('h'), Arg::None),
    opt("noheader", Some('n'), Arg::None),
    opt("parsable", Some('p'), Arg::None),
    opt("parsable2", Some('P'), Arg::None),
    opt("quiet", Some('Q'), Arg::None),
    opt("time", Some('t'), Arg::Required),
    opt("tres", Some('T'), Arg::Required),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
];

const HELP: &str = "\
sreport [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -h or --help: equivalent to \"help\" command
     -n or --noheader: equivalent to \"noheader\" command
     -p or --parsable: output will be '|' delimited with a '|' at the end
     -P or --parsable2: output will be '|' delimited without a '|' at the end
     -t <time_format>: Second, Minute, Hour, Percent, SecPer, MinPer, HourPer
     -V or --version: equivalent to \"version\" command

    Valid <COMMAND> values are:
     cluster AccountUtilizationByUser [<OPTIONS>]
     cluster Utilization [<OPTIONS>]
     reservation Utilization [<OPTIONS>]
     user TopUsage [<OPTIONS>]

    <OPTIONS> are Start=<time>, End=<time>, Format=<fields>, Users=<list>,
    Accounts=<list>, TopCount=<n>, Names=<list>, Nodes=<list>.
";

/// How usage is printed (`-t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeFormat {
    /// CPU minutes (the default).
    #[default]
    Minutes,
    /// CPU seconds.
    Seconds,
    /// CPU hours.
    Hours,
    /// Percent of the cluster's total.
    Percent,
}

impl TimeFormat {
    fn parse(s: &str) -> Option<TimeFormat> {
        let l = s.to_ascii_lowercase();
        Some(if l.starts_with("sec") || l == "s" {
            TimeFormat::Seconds
        } else if l.starts_with("min") || l == "m" {
            TimeFormat::Minutes
        } else if l.starts_with("hour") || l == "h" {
            TimeFormat::Hours
        } else if l.starts_with("per") || l == "p" {
            TimeFormat::Percent
        } else {
            return None;
        })
    }

    fn name(self) -> &'static str {
        match self {
            TimeFormat::Minutes => "CPU Minutes",
            TimeFormat::Seconds => "CPU Seconds",
            TimeFormat::Hours => "CPU Hours",
            TimeFormat::Percent => "Percentage of Total",
        }
    }

    /// Slurm's rendering of `secs` out of `total`.
    pub fn show(self, secs: i64, total: i64) -> String {
        let v = secs as f64;
        match self {
            TimeFormat::Seconds => secs.to_string(),
            TimeFormat::Minutes => format!("{:.0}", v / 60.0),
            TimeFormat::Hours => format!("{:.0}", v / 3600.0),
            TimeFormat::Percent => format!("{:.2}%", v / (total.max(1) as f64) * 100.0),
        }
    }
}

/// Which report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `cluster utilization`.
    Utilization,
    /// `cluster AccountUtilizationByUser`.
    AccountByUser,
    /// `user top`.
    UserTop,
    /// `reservation utilization`.
    ResvUtil,
}

/// A parsed command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Which report.
    pub kind: Kind,
    /// Window start (on an hour).
    pub start: Timestamp,
    /// Window end (exclusive, on an hour).
    pub end: Timestamp,
    /// `-t`.
    pub time: TimeFormat,
    /// `-p` / `-P` (0: columns, 1: trailing `|`, 2: between).
    pub parsable: u8,
    /// `-n`.
    pub noheader: bool,
    /// `Users=`.
    pub users: Vec<String>,
    /// `Accounts=`.
    pub accounts: Vec<String>,
    /// `TopCount=`.
    pub top: usize,
    /// `Names=` (reservation reports).
    pub names: Vec<String>,
    /// `Nodes=` (reservation reports, expanded).
    pub nodes: Vec<String>,
    /// Columns (name, header, width).
    pub columns: Vec<(&'static str, &'static str, i32)>,
}

/// Columns: (matching name, minimum typed length, header, width).
const COLUMNS: &[(&str, usize, &str, i32)] = &[
    ("accounts", 2, "Account", 15),
    ("allocated", 2, "Allocated", 12),
    ("cluster", 2, "Cluster", 9),
    ("down", 1, "Down", 10),
    ("energy", 1, "Energy", 10),
    ("idle", 1, "Idle", 12),
    ("login", 1, "Login", 9),
    ("planneddown", 2, "PLND Down", 10),
    ("proper", 2, "Proper Name", 15),
    ("reported", 3, "Reported", 12),
    ("reserved", 3, "Planned", 9),
    ("used", 1, "Used", 10),
];

/// The reservation report's columns, as [`COLUMNS`]: the names are the
/// sreport man page's (FORMAT OPTIONS FOR EACH REPORT).
const RESV_COLUMNS: &[(&str, usize, &str, i32)] = &[
    ("allocated", 1, "Allocated", 9),
    ("associations", 1, "Associations", 15),
    ("cluster", 1, "Cluster", 9),
    ("end", 1, "End", 19),
    ("idle", 1, "Idle", 9),
    ("name", 2, "Name", 9),
    ("nodes", 5, "Nodes", 15),
    ("nodecount", 5, "NodeCount", 9),
    ("start", 1, "Start", 19),
    ("trescount", 4, "TRES Count", 10),
    ("tresname", 4, "TRES Name", 14),
    ("trestime", 4, "TRES Time", 9),
];

fn columns(spec: &str, kind: Kind) -> Result<Vec<(&'static str, &'static str, i32)>, String> {
    let mut out = Vec::new();
    if kind == Kind::ResvUtil {
        for item in spec.split(',').filter(|s| !s.is_empty()) {
            let (name, width) = match item.split_once('%') {
                Some((n, w)) => (n, w.parse::<i32>().ok().filter(|w| *w != 0)),
                None => (item, None),
            };
            let l = name.to_ascii_lowercase();
            // `Node` and `Nodes` are the list; longer prefixes of
            // `NodeCount` the count.
            let found = if l == "node" || l == "nodes" {
                RESV_COLUMNS.iter().find(|c| c.0 == "nodes")
            } else {
                RESV_COLUMNS
                    .iter()
                    .find(|(full, min, ..)| abbrev(&l, full, *min))
            };
            let Some(&(full, _, header, w)) = found else {
                return Err(format!(" Unknown field '{name}'\n"));
            };
            out.push((full, header, width.unwrap_or(w)));
        }
        return Ok(out);
    }
    for item in spec.split(',').filter(|s| !s.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, w.parse::<i32>().ok().filter(|w| *w != 0)),
            None => (item, None),
        };
        let l = name.to_ascii_lowercase();
        // `planned` is PlannedDown (as in Slurm), `res` the Planned column.
        // In user reports one letter is enough for Account and Proper
        // (there is no Allocated or PLND Down to confuse them with).
        let user_report = kind == Kind::UserTop;
        let found = if l == "planned" {
            COLUMNS.iter().find(|c| c.0 == "planneddown")
        } else if user_report && (l == "a" || l == "p") {
            let full = if l == "a" { "accounts" } else { "proper" };
            COLUMNS.iter().find(|c| c.0 == full)
        } else {
            COLUMNS
                .iter()
                .find(|(full, min, ..)| abbrev(&l, full, *min))
        };
        let Some(&(full, _, header, w)) = found else {
            return Err(format!(" Unknown field '{name}'\n"));
        };
        out.push((full, header, width.unwrap_or(w)));
    }
    Ok(out)
}

/// Parses sreport's arguments, for `now` in time zone `tz`.
pub fn parse<Tz: chrono::TimeZone>(
    args: &[String],
    now: Timestamp,
    tz: &Tz,
) -> Result<Option<Report>, String> {
    let items = getopt::parse(OPTIONS, args, true)
        .map_err(|e| crate::common::usage_error("sreport", &e.message()))?;
    let mut words = Vec::new();
    let mut time = TimeFormat::Minutes;
    let mut parsable = 0;
    let mut noheader = false;
    for item in items {
        match item {
            Item::Opt("help" | "usage", _) => {
                print_stdout(HELP);
                return Ok(None);
            }
            Item::Opt("version", _) => {
                print_stdout(&crate::common::version_line());
                return Ok(None);
            }
            Item::Opt("noheader", _) => noheader = true,
            Item::Opt("parsable", _) => parsable = 1,
            Item::Opt("parsable2", _) => parsable = 2,
            Item::Opt("time", Some(v)) => {
                time = TimeFormat::parse(&v).ok_or_else(|| format!("unknown time format {v}\n"))?
            }
            Item::Opt(..) => {}
            Item::Positional(w) => words.push(w),
        }
    }
    let (Some(what), Some(report)) = (words.first(), words.get(1)) else {
        return Err("sreport: interactive mode is not supported, give a report\n".into());
    };
    let kind = if abbrev(what, "cluster", 2) && abbrev(report, "utilization", 2) {
        Kind::Utilization
    } else if abbrev(what, "cluster", 2) && abbrev(report, "accountutilizationbyuser", 1) {
        Kind::AccountByUser
    } else if abbrev(what, "user", 1) && abbrev(report, "topusage", 1) {
        Kind::UserTop
    } else if abbrev(what, "reservation", 3) && abbrev(report, "utilization", 1) {
        Kind::ResvUtil
    } else {
        return Err(format!("Not valid report {report}\nValid cluster reports are, \"AccountUtilizationByUser\" and \"Utilization\"\nValid reservation reports are, \"Utilization\"\nValid user reports are, \"TopUsage\"\n"));
    };
    let midnight = midnight(now, tz);
    let mut start = None;
    let mut end = None;
    let mut format = String::new();
    let mut users = Vec::new();
    let mut accounts = Vec::new();
    let mut top = 10;
    let mut names = Vec::new();
    let mut nodes = Vec::new();
    let mut err = String::new();
    for w in &words[2..] {
        let (k, v) = match w.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (String::new(), w.clone()),
        };
        let list = |v: &str| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        if kind == Kind::ResvUtil && (k.is_empty() || abbrev(&k, "names", 1)) {
            names.extend(list(&v));
        } else if kind == Kind::ResvUtil && abbrev(&k, "nodes", 1) {
            nodes.extend(hostlist::expand(&v).map_err(|_| format!("Invalid node list {v}\n"))?);
        } else if k.is_empty() || abbrev(&k, "users", 1) {
            users.extend(list(&v));
        } else if abbrev(&k, "accounts", 2) {
            accounts.extend(list(&v.to_ascii_lowercase()));
        } else if abbrev(&k, "clusters", 1) {
        } else if abbrev(&k, "start", 1) {
            start = Some(
                parse_time(&v, now, tz)
                    .ok_or_else(|| format!("Invalid time specification: {v}\n"))?,
            );
        } else if abbrev(&k, "end", 1) {
            end = Some(
                parse_time(&v, now, tz)
                    .ok_or_else(|| format!("Invalid time specification: {v}\n"))?,
            );
        } else if abbrev(&k, "format", 1) {
            if !format.is_empty() {
                format.push(',');
            }
            format.push_str(&v);
        } else if abbrev(&k, "topcount", 1) {
            top = v
                .parse()
                .map_err(|_| format!(" Bad TopCount value: {v}\n"))?;
        } else {
            err.push_str(&format!(
                " Unknown condition: {w}\nUse keyword set to modify value\n"
            ));
        }
    }
    if !err.is_empty() {
        return Err(err);
    }
    // Slurm's defaults: yesterday, midnight to midnight. Both ends go to
    // hour boundaries, the end up to the end of its hour (so the hour in
    // progress can be asked for), and never past the hour in progress.
    let hour = |t: Timestamp| t - t.rem_euclid(3600);
    let end = end.unwrap_or(midnight).min(now);
    let end = if end.rem_euclid(3600) == 0 {
        end
    } else {
        hour(end) + 3600
    };
    let start = hour(start.unwrap_or(midnight - 86_400));
    let end = if end <= start { start + 3600 } else { end };
    if format.is_empty() {
        format = match kind {
            Kind::Utilization => "Cl,al,d,planned,i,res,rep",
            Kind::AccountByUser => "Cluster,Ac,Login,Proper,Used,Energy",
            Kind::UserTop => "Cl,L,P,A,U,Energy",
            Kind::ResvUtil => "Cluster,Name,Start,End,TresName,Allocated,Idle",
        }
        .to_owned();
    }
    Ok(Some(Report {
        kind,
        start,
        end,
        time,
        parsable,
        noheader,
        users,
        accounts,
        top,
        names,
        nodes,
        columns: columns(&format, kind)?,
    }))
}

/// One printed row: column name to text.
type Row = Vec<(&'static str, String)>;

fn line(r: &Report, cells: &[String]) -> String {
    let mut s = String::new();
    match r.parsable {
        0 => {
            for ((_, _, w), c) in r.columns.iter().zip(cells) {
                let n = w.unsigned_abs() as usize;
                let c: String = c.chars().take(n).collect();
                if *w < 0 {
                    s.push_str(&format!("{c:<n$} "));
                } else {
                    s.push_str(&format!("{c:>n$} "));
                }
            }
        }
        1 => {
            for c in cells {
                s.push_str(c);
                s.push('|');
            }
        }
        _ => s.push_str(&cells.join("|")),
    }
    s.push('\n');
    s
}

/// The report's text, from the controller's answer. `proper` names users
/// (the GECOS field), `fmt_time` prints a timestamp.
pub fn render(
    r: &Report,
    usage: &UsageReport,
    tables: &AcctTables,
    proper: &dyn Fn(&str) -> String,
    fmt_time: &dyn Fn(Timestamp) -> String,
) -> String {
    let mut out = String::new();
    let total = usage
        .rows
        .iter()
        .find(|x| x.account.is_empty() && x.user.is_empty());
    let (cap, alloc) = total.map_or((0, 0), |t| (t.capacity_secs, t.alloc_secs));
    if !r.noheader {
        out.push_str(&header(r, fmt_time));
    }
    let t = |secs: i64| r.time.show(secs, alloc.max(1));
    let mut rows: Vec<Row> = Vec::new();
    let cluster = usage.cluster.clone();
    match r.kind {
        Kind::Utilization => {
            if cap > 0 {
                let pt = |secs: i64| r.time.show(secs, cap);
                rows.push(vec![
                    ("cluster", cluster.clone()),
                    ("allocated", pt(alloc)),
                    ("down", pt(0)),
                    ("planneddown", pt(0)),
                    ("idle", pt(cap - alloc)),
                    ("reserved", pt(0)),
                    ("reported", pt(cap)),
                    ("energy", "0".into()),
                ]);
            }
        }
        Kind::UserTop => {
            let mut by: std::collections::BTreeMap<&str, (i64, Vec<&str>)> = Default::default();
            for x in usage.rows.iter().filter(|x| !x.user.is_empty()) {
                if !r.users.is_empty() && !r.users.contains(&x.user) {
                    continue;
                }
                if !r.accounts.is_empty() && !r.accounts.contains(&x.account) {
                    continue;
                }
                let e = by.entry(&x.user).or_default();
                e.0 += x.alloc_secs;
                if !e.1.contains(&x.account.as_str()) {
                    e.1.push(&x.account);
                }
            }
            let mut users: Vec<(&str, (i64, Vec<&str>))> = by.into_iter().collect();
            users.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
            for (user, (secs, accts)) in users.into_iter().take(r.top) {
                rows.push(vec![
                    ("cluster", cluster.clone()),
                    ("login", user.to_owned()),
                    ("proper", proper(user)),
                    ("accounts", accts.join(", ")),
                    ("used", t(secs)),
                    ("energy", "0".into()),
                ]);
            }
        }
        Kind::AccountByUser => {
            let used = |acct: &str, user: Option<&str>| -> i64 {
                usage
                    .rows
                    .iter()
                    .filter(|x| !x.account.is_empty())
                    .filter(|x| match user {
                        Some(u) => x.account == acct && x.user == u,
                        None => in_subtree(tables, &cluster, &x.account, acct),
                    })
                    .map(|x| x.alloc_secs)
                    .sum()
            };
            for a in assoc_order(tables, &cluster) {
                if !r.accounts.is_empty() && !r.accounts.contains(&a.account) {
                    continue;
                }
                if !a.user.is_empty() && !r.users.is_empty() && !r.users.contains(&a.user) {
                    continue;
                }
                let (login, secs) = if a.user.is_empty() {
                    (String::new(), used(&a.account, None))
                } else {
                    (a.user.clone(), used(&a.account, Some(&a.user)))
                };
                rows.push(vec![
                    ("cluster", cluster.clone()),
                    ("accounts", a.account.clone()),
                    ("login", login.clone()),
                    (
                        "proper",
                        if login.is_empty() {
                            String::new()
                        } else {
                            proper(&login)
                        },
                    ),
                    ("used", t(secs)),
                    ("energy", "0".into()),
                ]);
            }
        }
        Kind::ResvUtil => {}
    }
    out.push_str(&body(r, rows));
    out
}

/// The banner (title, unit) and the column headers.
fn header(r: &Report, fmt_time: &dyn Fn(Timestamp) -> String) -> String {
    let mut out = String::new();
    let dashes = "-".repeat(80);
    let (a, b) = (fmt_time(r.start), fmt_time(r.end - 1));
    let secs = r.end - r.start;
    let title = match r.kind {
        Kind::Utilization => format!("Cluster Utilization {a} - {b}"),
        Kind::AccountByUser => {
            format!("Cluster/Account/User Utilization {a} - {b} ({secs} secs)")
        }
        Kind::UserTop => format!("Top {} Users {a} - {b} ({secs} secs)", r.top),
        Kind::ResvUtil => format!("Reservation Utilization {a} - {b}"),
    };
    let unit = match r.kind {
        // The reservation report names TRES, not CPUs.
        Kind::ResvUtil if r.time != TimeFormat::Percent => {
            format!("Usage reported in {}", r.time.name().replace("CPU", "TRES"))
        }
        _ => format!("Usage reported in {}", r.time.name()),
    };
    out.push_str(&format!("{dashes}\n{title}\n{unit}\n{dashes}\n"));
    let headers: Vec<String> = r.columns.iter().map(|c| c.1.to_owned()).collect();
    out.push_str(&line(r, &headers));
    if r.parsable == 0 {
        for (_, _, w) in &r.columns {
            out.push_str(&"-".repeat(w.unsigned_abs() as usize));
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

/// The rows, in the report's columns.
fn body(r: &Report, rows: Vec<Row>) -> String {
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = r
            .columns
            .iter()
            .map(|(name, ..)| {
                row.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            })
            .collect();
        out.push_str(&line(r, &cells));
    }
    out
}

/// `reservation utilization`'s text from the windows accounting holds
/// (`now`: the windows not over yet count up to it).
pub fn render_resv(
    r: &Report,
    resvs: &[proto::resv::AcctResv],
    now: Timestamp,
    fmt_time: &dyn Fn(Timestamp) -> String,
) -> String {
    let mut out = String::new();
    if !r.noheader {
        out.push_str(&header(r, fmt_time));
    }
    let overlap = |a: Timestamp, b: Timestamp| (b.min(r.end) - a.max(r.start)).max(0);
    let mut rows: Vec<Row> = Vec::new();
    for x in resvs {
        if !r.names.is_empty() && !r.names.contains(&x.name) {
            continue;
        }
        let nodes = hostlist::expand(&x.nodes).unwrap_or_default();
        if !r.nodes.is_empty() && !nodes.iter().any(|n| r.nodes.contains(n)) {
            continue;
        }
        let (start, end) = (x.start.max(r.start), x.end.min(r.end));
        if x.start >= r.end || x.end <= r.start {
            continue;
        }
        let cpus = i64::from(x.cpus);
        let reserved = cpus * overlap(x.start, x.end.min(now));
        // The record's own span: UnusedWall is that span less what its
        // jobs used per CPU; what they used is spread evenly over it.
        let used = x.used_cpu_secs as f64;
        let covered = x.unused_wall + used / (cpus.max(1) as f64);
        let alloc = if covered > 0.0 {
            let seen = overlap(x.start, x.start + covered.round() as i64) as f64;
            (used * seen / covered).round() as i64
        } else {
            0
        }
        .min(reserved);
        let t = |secs: i64| r.time.show(secs, reserved.max(1));
        rows.push(vec![
            ("cluster", x.cluster.clone()),
            ("name", x.name.clone()),
            ("start", fmt_time(start)),
            ("end", fmt_time(end)),
            ("tresname", "cpu".into()),
            ("trescount", cpus.to_string()),
            ("trestime", t(reserved)),
            ("allocated", t(alloc)),
            ("idle", t(reserved - alloc)),
            ("nodes", x.nodes.clone()),
            ("nodecount", nodes.len().to_string()),
            ("associations", String::new()),
        ]);
    }
    out.push_str(&body(r, rows));
    out
}

/// Whether `account` is `top` or below it on `cluster`.
fn in_subtree(t: &AcctTables, cluster: &str, account: &str, top: &str) -> bool {
    let mut cur = account.to_owned();
    for _ in 0..64 {
        if cur == top {
            return true;
        }
        match t.account_assoc(cluster, &cur) {
            Some(a) if !a.parent.is_empty() => cur = a.parent.clone(),
            _ => return false,
        }
    }
    false
}

/// The cluster's associations in the account tree's order (as sacctmgr
/// lists them), one line per user of an account.
fn assoc_order<'a>(t: &'a AcctTables, cluster: &str) -> Vec<&'a proto::acctdb::Assoc> {
    let mut out: Vec<&proto::acctdb::Assoc> = crate::sacctmgr::fields::tree_order(t)
        .into_iter()
        .filter(|a| a.cluster == cluster)
        .collect();
    out.dedup_by(|x, y| x.account == y.account && x.user == y.user);
    out
}

/// The user's full name from the password database (first GECOS field).
fn gecos(user: &str) -> String {
    nix::unistd::User::from_name(user)
        .ok()
        .flatten()
        .and_then(|u| u.gecos.into_string().ok())
        .map(|g| g.split(',').next().unwrap_or("").to_owned())
        .unwrap_or_default()
}

/// Runs `sreport`.
pub fn main(args: Vec<String>) -> i32 {
    let now = common::now();
    common::run(
        || match parse(&args, now, &chrono::Local) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(Stop::Exit(0)),
            Err(e) => Err(Stop::Fail(e)),
        },
        ask,
        |report, answer| {
            print_stdout(&match answer {
                Answer::Usage(usage, tables) => {
                    render(report, &usage, &tables, &gecos, &common::fmt_time)
                }
                Answer::Resvs(resvs) => render_resv(report, &resvs, now, &common::fmt_time),
            });
            0
        },
    )
}

/// What the controller answered for a report.
enum Answer {
    /// The usage rollups, with the accounting tables where needed.
    Usage(UsageReport, AcctTables),
    /// The reservation windows.
    Resvs(Vec<proto::resv::AcctResv>),
}

/// The usage in the report's window, and for the per-user report the
/// accounting tables (users' accounts), or the reservation windows that
/// meet it, from the controller.
fn ask(report: &Report) -> Result<Answer, Stop> {
    let fail = |e: &dyn std::fmt::Display| Stop::Fail(format!("sreport: error: {e}\n"));
    let client = client::Client::from_env().map_err(|e| fail(&e))?;
    if report.kind == Kind::ResvUtil {
        let q = proto::CtldRequest::AcctReservations {
            start: Some(report.start),
            end: Some(report.end),
        };
        return match client.call(q) {
            Ok(proto::CtldResponse::AcctReservations(v)) => Ok(Answer::Resvs(v)),
            Ok(_) => Err(fail(&"Unexpected message received")),
            Err(client::ClientError::Refused(e)) => Err(fail(&e.as_slurm_str())),
            Err(e) => Err(fail(&e)),
        };
    }
    let q = UsageQuery {
        start: report.start,
        end: report.end,
    };
    let usage = match client.call(proto::CtldRequest::AcctUsage(q)) {
        Ok(proto::CtldResponse::AcctUsage(u)) => u,
        Ok(_) => return Err(fail(&"Unexpected message received")),
        Err(client::ClientError::Refused(e)) => return Err(fail(&e.as_slurm_str())),
        Err(e) => return Err(fail(&e)),
    };
    let tables = match report.kind {
        Kind::AccountByUser => match client.call(proto::CtldRequest::AcctTables) {
            Ok(proto::CtldResponse::AcctTables(t)) => t,
            _ => AcctTables::default(),
        },
        _ => AcctTables::default(),
    };
    Ok(Answer::Usage(usage, tables))
}
