//! Job history exported from muster's own accounting, so that a site can
//! replay its own past. Two forms of `sacct` output are read:
//!
//! - parsable, with its header line:
//!   `sacct -a -X -P -o JobIDRaw,Submit,Start,End,NCPUS,NNodes,Timelimit,User,Account,Partition,NodeList -S ... -E ...`
//!   (columns by name, in any order; `JobIDRaw` or `JobID`, `Submit`,
//!   `Start`, `End` and `NCPUS` (or `AllocCPUS`) are needed, the others are
//!   used when present; step lines, `123.batch`, are passed over);
//! - `sacct --json` (the `jobs` array: `job_id`, `time.submission`,
//!   `time.start`, `time.end`, `time.limit`, `required.CPUs`,
//!   `allocation_nodes`, `nodes`, `user`, `account`, `partition`).
//!
//! Each job becomes the SWF fields it stands for and then goes through the
//! same normalization as an SWF trace (`swf::normalize`): run time = End -
//! Start (a job that never started or has not ended has none and is
//! dropped), allocated processors = NCPUS, requested processors = ReqCPUS
//! when the export has it, requested time = Timelimit. Users and accounts
//! keep their names (numbered in order of appearance for fair-share).
//!
//! The machine, when no `--config` with nodes is given: as many nodes as
//! the export names in `NodeList` (else as many as the busiest moment of
//! the history needed), each with the most CPUs per node any job used.
//!
//! sacct prints local times; only differences are used, so the zone does
//! not matter (a daylight-saving change inside the history shifts the jobs
//! after it by an hour; `--json` has epoch seconds and no such shift).

use crate::swf::{normalize, BadLines, LineError, Raw, Trace, TraceError};
use std::collections::{BTreeMap, BTreeSet};

/// Whether `text` looks like a sacct export (JSON, or a `|` header naming
/// the columns this reader needs) rather than SWF.
pub fn looks_like_sacct(text: &str) -> bool {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        Some(l) if l.starts_with('{') => true,
        Some(l) => {
            l.contains('|')
                && l.split('|')
                    .any(|c| c.eq_ignore_ascii_case("Submit") || c.eq_ignore_ascii_case("JobIDRaw"))
        }
        None => false,
    }
}

/// Reads a sacct export (either form) and normalizes it.
pub fn parse(text: &str, bad: BadLines) -> Result<Trace, TraceError> {
    if text.trim_start().starts_with('{') {
        parse_json(text, bad)
    } else {
        parse_parsable(text, bad)
    }
}

/// One job as read, before it becomes SWF fields.
#[derive(Clone, Debug, Default)]
struct Row {
    id: u64,
    submit: i64,
    start: Option<i64>,
    end: Option<i64>,
    cpus: i64,
    req_cpus: Option<i64>,
    nodes: Option<i64>,
    limit_secs: Option<i64>,
    user: Option<String>,
    account: Option<String>,
    partition: Option<String>,
    node_list: Option<String>,
}

/// Seconds of a sacct time (`2026-12-02T13:14:00`) counted as if it were
/// UTC; None for `Unknown`, `None` or empty.
pub fn parse_time(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() || s == "Unknown" || s == "None" {
        return Ok(None);
    }
    let bad = || format!("{s:?} is not a time (YYYY-MM-DDTHH:MM:SS)");
    let (d, t) = s.split_once('T').ok_or_else(bad)?;
    let n: Vec<i64> = d
        .split('-')
        .chain(t.split(':'))
        .map(|x| x.parse::<i64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if n.len() != 6 || !(1..=12).contains(&n[1]) || !(1..=31).contains(&n[2]) {
        return Err(bad());
    }
    // Days from a civil date (Howard Hinnant's algorithm).
    let (y, m, day) = (n[0] - i64::from(n[1] <= 2), n[1], n[2]);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(Some(days * 86_400 + n[3] * 3600 + n[4] * 60 + n[5]))
}

/// Seconds of a `Timelimit` (`[D-]HH:MM:SS`, `MM:SS`) or `TimelimitRaw`
/// (minutes); None for `UNLIMITED`, `Partition_Limit` and the like.
pub fn parse_limit(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty()
        || ["UNLIMITED", "Partition_Limit", "INVALID", "NONE"]
            .iter()
            .any(|w| s.eq_ignore_ascii_case(w))
    {
        return Ok(None);
    }
    let bad = || format!("{s:?} is not a time limit ([D-]HH:MM:SS or minutes)");
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<i64>().map_err(|_| bad())?, r),
        None => (0, s),
    };
    let parts: Vec<i64> = rest
        .split(':')
        .map(|x| x.parse::<i64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let secs = match parts.as_slice() {
        [m] if days == 0 => m * 60,
        [h] => h * 3600,
        [m, sec] if days == 0 => m * 60 + sec,
        [h, m] => h * 3600 + m * 60,
        [h, m, sec] => h * 3600 + m * 60 + sec,
        _ => return Err(bad()),
    };
    Ok(Some(days * 86_400 + secs))
}

fn parse_parsable(text: &str, bad: BadLines) -> Result<Trace, TraceError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, head)) = lines.next() else {
        return Err(TraceError::Empty);
    };
    let cols: Vec<String> = head.split('|').map(|c| c.trim().to_string()).collect();
    let find = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| cols.iter().position(|c| c.eq_ignore_ascii_case(n)))
    };
    let need = |names: &[&str]| {
        find(names).ok_or_else(|| {
            TraceError::Unreadable(format!(
                "the sacct header has no {} column (export with `sacct -a -X -P -o JobIDRaw,Submit,Start,End,NCPUS,NNodes,Timelimit,User,Account,Partition,NodeList`)",
                names[0]
            ))
        })
    };
    let c_id = need(&["JobIDRaw", "JobID"])?;
    let c_submit = need(&["Submit"])?;
    let c_start = need(&["Start"])?;
    let c_end = need(&["End"])?;
    let c_cpus = need(&["NCPUS", "AllocCPUS"])?;
    let c_req = find(&["ReqCPUS"]);
    let c_nodes = find(&["NNodes", "AllocNodes"]);
    let c_limit = find(&["Timelimit", "TimelimitRaw"]);
    let c_user = find(&["User", "UID"]);
    let c_account = find(&["Account", "Group", "GID"]);
    let c_part = find(&["Partition"]);
    let c_list = find(&["NodeList"]);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split('|').collect();
        let row = (|| -> Result<Option<Row>, String> {
            // A trailing `|` (sacct -p) gives one empty field more.
            if f.len() != cols.len() && !(f.len() == cols.len() + 1 && f[cols.len()].is_empty()) {
                return Err(format!(
                    "expected {} fields as the header has, found {}",
                    cols.len(),
                    f.len()
                ));
            }
            let id_text = f[c_id].trim();
            if id_text.contains('.') {
                return Ok(None); // a step, not a job
            }
            // An array task's JobID (`12_3`): its raw id is not there.
            let id = id_text
                .split('_')
                .next()
                .unwrap_or("")
                .parse::<u64>()
                .map_err(|_| format!("job id {id_text:?} is not a number"))?;
            let time = |c: usize, what: &str| parse_time(f[c]).map_err(|e| format!("{what}: {e}"));
            let num = |c: usize, what: &str| -> Result<Option<i64>, String> {
                let s = f[c].trim();
                if s.is_empty() {
                    return Ok(None);
                }
                s.parse::<i64>()
                    .map(Some)
                    .map_err(|_| format!("{what} {s:?} is not a number"))
            };
            let name =
                |c: Option<usize>| c.map(|c| f[c].trim().to_string()).filter(|s| !s.is_empty());
            Ok(Some(Row {
                id,
                submit: time(c_submit, "Submit")?.ok_or("Submit is unknown")?,
                start: time(c_start, "Start")?,
                end: time(c_end, "End")?,
                cpus: num(c_cpus, "NCPUS")?.unwrap_or(0),
                req_cpus: c_req.map(|c| num(c, "ReqCPUS")).transpose()?.flatten(),
                nodes: c_nodes.map(|c| num(c, "NNodes")).transpose()?.flatten(),
                limit_secs: c_limit
                    .map(|c| {
                        if cols[c].eq_ignore_ascii_case("TimelimitRaw") {
                            num(c, "TimelimitRaw").map(|m| m.map(|m| m * 60))
                        } else {
                            parse_limit(f[c])
                        }
                    })
                    .transpose()?
                    .flatten(),
                user: name(c_user),
                account: name(c_account),
                partition: name(c_part),
                node_list: name(c_list),
            }))
        })();
        match row {
            Ok(Some(r)) => rows.push(r),
            Ok(None) => {}
            Err(reason) => {
                let e = LineError::line(i + 1, reason);
                match bad {
                    BadLines::Reject => return Err(TraceError::Malformed(e)),
                    BadLines::Skip => skipped.push(e),
                }
            }
        }
    }
    finish(rows, skipped)
}

fn parse_json(text: &str, bad: BadLines) -> Result<Trace, TraceError> {
    let doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| TraceError::Unreadable(format!("not a sacct --json document: {e}")))?;
    let jobs = doc
        .get("jobs")
        .and_then(|j| j.as_array())
        .ok_or_else(|| TraceError::Unreadable("the JSON document has no \"jobs\" array".into()))?;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (k, j) in jobs.iter().enumerate() {
        let row = (|| -> Result<Row, String> {
            // `limit` is minutes (or null); newer Slurm wraps numbers as
            // {"set": true, "number": N}.
            let int = |v: Option<&serde_json::Value>| -> Option<i64> {
                let v = v?;
                v.as_i64().or_else(|| {
                    let set = v.get("set").and_then(|s| s.as_bool()).unwrap_or(true);
                    v.get("number").and_then(|n| n.as_i64()).filter(|_| set)
                })
            };
            let at = |path: &[&str]| path.iter().try_fold(j, |v, k| v.get(*k));
            let id = int(at(&["job_id"])).ok_or("no job_id")?;
            let time = |key: &str| int(at(&["time", key])).filter(|t| *t > 0);
            let text = |key: &str| {
                at(&[key])
                    .and_then(|v| v.as_str())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            Ok(Row {
                id: u64::try_from(id).map_err(|_| format!("job_id {id} is negative"))?,
                submit: time("submission").ok_or("no time.submission")?,
                start: time("start"),
                end: time("end"),
                cpus: int(at(&["required", "CPUs"])).ok_or("no required.CPUs")?,
                req_cpus: None,
                nodes: int(at(&["allocation_nodes"])),
                limit_secs: int(at(&["time", "limit"])).map(|m| m * 60),
                user: text("user"),
                account: text("account"),
                partition: text("partition"),
                node_list: text("nodes"),
            })
        })();
        match row {
            Ok(r) => rows.push(r),
            Err(reason) => {
                let e = LineError {
                    line: k,
                    reason,
                    json: true,
                };
                match bad {
                    BadLines::Reject => return Err(TraceError::Malformed(e)),
                    BadLines::Skip => skipped.push(e),
                }
            }
        }
    }
    finish(rows, skipped)
}

/// Numbers names in order of first appearance.
fn number(names: &mut BTreeMap<String, i64>, name: Option<&String>) -> i64 {
    match name {
        None => -1,
        Some(n) => {
            let next = names.len() as i64;
            *names.entry(n.clone()).or_insert(next)
        }
    }
}

/// Rows to SWF fields, the machine inferred, then the SWF normalization.
fn finish(rows: Vec<Row>, skipped: Vec<LineError>) -> Result<Trace, TraceError> {
    if rows.is_empty() {
        return Err(TraceError::Empty);
    }
    let ran = |r: &Row| match (r.start, r.end) {
        (Some(s), Some(e)) if e > s => Some((s, e)),
        _ => None,
    };
    // The machine: nodes named in NodeList, else the busiest moment; CPUs
    // per node: the most any job used on one node.
    let mut cpus_per_node = 1i64;
    let mut widest_nodes = 1i64;
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut steps: Vec<(i64, i64)> = Vec::new();
    for r in &rows {
        let Some((s, e)) = ran(r) else { continue };
        let n = r.nodes.unwrap_or(1).max(1);
        widest_nodes = widest_nodes.max(n);
        cpus_per_node = cpus_per_node.max((r.cpus + n - 1) / n);
        steps.push((s, r.cpus));
        steps.push((e, -r.cpus));
        if let Some(list) = &r.node_list {
            if let Ok(hosts) = hostlist::expand(list) {
                named.extend(hosts.into_iter().filter(|h| !h.contains(' ')));
            }
        }
    }
    steps.sort();
    let (mut busy, mut peak) = (0i64, 0i64);
    for (_, d) in steps {
        busy += d;
        peak = peak.max(busy);
    }
    let nodes = if named.is_empty() {
        ((peak + cpus_per_node - 1) / cpus_per_node).max(widest_nodes)
    } else {
        named.len() as i64
    };
    let (mut users, mut accounts) = (BTreeMap::new(), BTreeMap::new());
    let raws = rows
        .into_iter()
        .map(|r| Raw {
            id: r.id,
            submit: r.submit,
            run: ran(&r).map_or(0, |(s, e)| e - s),
            alloc_procs: r.cpus,
            req_procs: r.req_cpus.unwrap_or(-1),
            req_time: r.limit_secs.unwrap_or(-1),
            user: number(&mut users, r.user.as_ref()),
            group: number(&mut accounts, r.account.as_ref()),
            user_name: r.user,
            account: r.account,
            partition: r.partition,
        })
        .collect();
    normalize(
        raws,
        Some(nodes),
        Some(nodes * cpus_per_node),
        None,
        skipped,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swf::Machine;

    const HEAD: &str =
        "JobIDRaw|Submit|Start|End|NCPUS|NNodes|Timelimit|User|Account|Partition|NodeList\n";

    #[test]
    fn parsable_export_is_normalized_as_swf() {
        let text = format!(
            "{HEAD}\
12|2026-12-02T10:00:00|2026-12-02T10:00:01|2026-12-02T10:01:01|2|1|00:05:00|alice|phys|batch|n1
12.batch|2026-12-02T10:00:00|2026-12-02T10:00:01|2026-12-02T10:01:01|2|1|||||n1
13|2026-12-02T10:00:30|2026-12-02T10:01:01|2026-12-02T10:01:31|4|2|1-00:00:00|bob|chem|batch|n[1-2]
14|2026-12-02T10:00:40|Unknown|Unknown|0|0|00:01:00|bob|chem|batch|None assigned
15|2026-12-02T10:00:50|2026-12-02T10:01:31|2026-12-02T10:04:31|1|1|UNLIMITED|alice|chem|batch|n2
"
        );
        let t = parse(&text, BadLines::Reject).unwrap();
        assert_eq!(
            t.machine,
            Machine {
                nodes: 2,
                cpus_per_node: 2
            }
        );
        // Job 14 never started: dropped for its run time, as in SWF.
        assert_eq!(t.dropped, (1, 0, 0));
        let got: Vec<_> = t
            .jobs
            .iter()
            .map(|j| {
                (
                    j.id,
                    j.submit,
                    j.run,
                    j.procs,
                    j.req_time,
                    j.user,
                    j.group,
                    j.user_name.as_deref(),
                    j.account.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (12, 0, 60, 2, 300, 0, 0, Some("alice"), Some("phys")),
                (13, 30, 30, 4, 86_400, 1, 1, Some("bob"), Some("chem")),
                // No limit: the requested time is the run time.
                (15, 50, 180, 1, 180, 0, 1, Some("alice"), Some("chem")),
            ]
        );
        assert_eq!(t.jobs[0].partition.as_deref(), Some("batch"));
    }

    #[test]
    fn malformed_lines_are_rejected_or_skipped_with_their_number() {
        let text = format!(
            "{HEAD}\
1|2026-12-02T10:00:00|2026-12-02T10:00:00|2026-12-02T10:00:10|1|1|00:01:00|a|b|p|n1
2|yesterday|2026-12-02T10:00:00|2026-12-02T10:00:10|1|1|00:01:00|a|b|p|n1
3|2026-12-02T10:00:00|2026-12-02T10:00:00
4|2026-12-02T10:00:00|2026-12-02T10:00:00|2026-12-02T10:00:10|many|1|00:01:00|a|b|p|n1
5|2026-12-02T10:00:00|2026-12-02T10:00:00|2026-12-02T10:00:10|1|1|soon|a|b|p|n1
x6|2026-12-02T10:00:00|2026-12-02T10:00:00|2026-12-02T10:00:10|1|1|00:01:00|a|b|p|n1
"
        );
        assert_eq!(
            parse(&text, BadLines::Reject).unwrap_err().to_string(),
            "line 3: Submit: \"yesterday\" is not a time (YYYY-MM-DDTHH:MM:SS) (use --skip-bad-lines to skip such lines)"
        );
        let t = parse(&text, BadLines::Skip).unwrap();
        assert_eq!(t.jobs.len(), 1);
        assert_eq!(
            t.skipped.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            vec![
                "line 3: Submit: \"yesterday\" is not a time (YYYY-MM-DDTHH:MM:SS)",
                "line 4: expected 11 fields as the header has, found 3",
                "line 5: NCPUS \"many\" is not a number",
                "line 6: \"soon\" is not a time limit ([D-]HH:MM:SS or minutes)",
                "line 7: job id \"x6\" is not a number",
            ]
        );
    }

    #[test]
    fn a_header_without_the_needed_columns_or_jobs_is_a_clear_error() {
        assert_eq!(
            parse("JobIDRaw|Start|End|NCPUS\n1|a|b|c\n", BadLines::Skip)
                .unwrap_err()
                .to_string(),
            "the sacct header has no Submit column (export with `sacct -a -X -P -o JobIDRaw,Submit,Start,End,NCPUS,NNodes,Timelimit,User,Account,Partition,NodeList`)"
        );
        assert_eq!(parse(HEAD, BadLines::Reject), Err(TraceError::Empty));
        // Nothing ever ran.
        let never = format!(
            "{HEAD}1|2026-12-02T10:00:00|Unknown|Unknown|1|1|00:01:00|a|b|p|None assigned\n"
        );
        assert!(matches!(
            parse(&never, BadLines::Reject),
            Err(TraceError::NothingRuns { run: 1, .. })
        ));
    }

    #[test]
    fn json_export_is_read_the_same_way() {
        let text = r#"{"meta": {}, "errors": [], "jobs": [
  {"job_id": 7, "user": "alice", "account": "phys", "partition": "batch", "nodes": "n[1-3]",
   "allocation_nodes": 3, "required": {"CPUs": 6, "memory": 0},
   "time": {"submission": 1000, "start": 1010, "end": 1110, "limit": 10, "elapsed": 100}},
  {"job_id": 8, "user": "bob", "account": "chem", "partition": "batch", "nodes": "None assigned",
   "allocation_nodes": 0, "required": {"CPUs": 1, "memory": 0},
   "time": {"submission": 1005, "start": 0, "end": 1006, "limit": null}},
  {"job_id": 9, "user": "bob", "account": "chem", "partition": "batch", "nodes": "n1",
   "allocation_nodes": 1, "required": {"CPUs": 2, "memory": 0},
   "time": {"submission": 1020, "start": 1110, "end": 1170, "limit": {"set": true, "number": 2}}}
]}"#;
        let t = parse(text, BadLines::Reject).unwrap();
        assert_eq!(
            t.machine,
            Machine {
                nodes: 3,
                cpus_per_node: 2
            }
        );
        let got: Vec<_> = t
            .jobs
            .iter()
            .map(|j| (j.id, j.submit, j.run, j.procs, j.req_time))
            .collect();
        assert_eq!(got, vec![(7, 0, 100, 6, 600), (9, 20, 60, 2, 120)]);
        let broken = r#"{"jobs": [{"job_id": 1}, {"job_id": 2, "required": {"CPUs": 1},
            "time": {"submission": 5, "start": 6, "end": 9}}]}"#;
        assert_eq!(
            parse(broken, BadLines::Reject).unwrap_err().to_string(),
            "jobs[0]: no time.submission (use --skip-bad-lines to skip such lines)"
        );
        assert_eq!(parse(broken, BadLines::Skip).unwrap().jobs.len(), 1);
        assert!(parse("{\"jobs\": 3}", BadLines::Skip)
            .unwrap_err()
            .to_string()
            .contains("no \"jobs\" array"));
    }

    #[test]
    fn times_and_limits() {
        assert_eq!(parse_time("1970-01-02T00:00:01"), Ok(Some(86_401)));
        assert_eq!(parse_time("Unknown"), Ok(None));
        assert_eq!(parse_limit("2-01:00:00"), Ok(Some(2 * 86_400 + 3600)));
        assert_eq!(parse_limit("05:30"), Ok(Some(330)));
        assert_eq!(parse_limit("Partition_Limit"), Ok(None));
        assert!(looks_like_sacct(HEAD));
        assert!(looks_like_sacct("  {\"jobs\": []}"));
        assert!(!looks_like_sacct("; MaxNodes: 4\n1 0 0 5 1\n"));
    }
}
