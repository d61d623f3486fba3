//! `sacct`: list finished and running jobs from the accounting store, as
//! Slurm 22.05 prints them.
//!
//! ```text
//! args --parse_args--> SacctArgs --query_for--> JobFilter --fetch--> Vec<AcctJob>
//!                          |                                            |
//!                          +------------------render()------------------+--> text (pure)
//! ```
//!
//! `query_for` decides which jobs the store returns (users, time window,
//! states, names, ...); `render` decides which rows of those jobs print
//! (`-X`, `-j 123.batch`) and how.
//!
//! Not yet: per-step
//! statistics that are not gathered (disk I/O, energy, CPU frequency)
//! print empty, and `TRESUsageIn*` lists only cpu, mem, pages and vmem;
//! `-M`/`-L` are accepted and ignored.

pub mod fields;

#[cfg(test)]
mod tests;

use crate::common::split_list;
use crate::common::{self, print_stdout, Stop};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use crate::timespec;
use fields::{Column, Ctx, Unit};
use model::{JobState, Timestamp, ALL_JOB_STATES};
use proto::{AcctJob, StepId};

/// The default `--format`.
pub const DEFAULT_FORMAT: &str = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode";
/// `-b/--brief`.
pub const BRIEF_FORMAT: &str = "JobID,State,ExitCode";
/// `-l/--long`, as sacct(1) lists it.
pub const LONG_FORMAT: &str = "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,\
maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,maxpages,\
maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,\
alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,reqcpufreqmax,\
reqcpufreqgov,reqmem,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,\
avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,\
reqtres,alloctres,tresusageinave,tresusageinmax,\
tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,\
tresusageintot,tresusageoutmax,tresusageoutmaxn,\
tresusageoutmaxt,tresusageoutave,tresusageouttot";

/// What sacct prints, on stderr, when the cluster keeps no accounting
/// (`AccountingStorageType=accounting_storage/none`); it then exits 1.
pub const ACCOUNTING_DISABLED: &str = "Slurm accounting storage is disabled";

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("accounts", Some('A'), Arg::Required),
    opt("allclusters", Some('L'), Arg::None),
    opt("allocations", Some('X'), Arg::None),
    opt("allusers", Some('a'), Arg::None),
    opt("array", None, Arg::None),
    opt("brief", Some('b'), Arg::None),
    opt("clusters", Some('M'), Arg::Required),
    opt("delimiter", None, Arg::Required),
    opt("duplicates", Some('D'), Arg::None),
    opt("endtime", Some('E'), Arg::Required),
    opt("format", Some('o'), Arg::Required),
    opt("gid", Some('g'), Arg::Required),
    opt("group", None, Arg::Required),
    opt("help", Some('h'), Arg::None),
    opt("helpformat", Some('e'), Arg::None),
    opt("jobs", Some('j'), Arg::Required),
    opt("json", None, Arg::Optional),
    opt("local", None, Arg::None),
    opt("long", Some('l'), Arg::None),
    opt("name", None, Arg::Required),
    opt("noconvert", None, Arg::None),
    opt("noheader", Some('n'), Arg::None),
    opt("nodelist", Some('N'), Arg::Required),
    opt("parsable", Some('p'), Arg::None),
    opt("parsable2", Some('P'), Arg::None),
    opt("partition", Some('r'), Arg::Required),
    opt("qos", Some('q'), Arg::Required),
    opt("starttime", Some('S'), Arg::Required),
    opt("state", Some('s'), Arg::Required),
    opt("truncate", Some('T'), Arg::None),
    opt("uid", None, Arg::Required),
    opt("units", None, Arg::Required),
    opt("usage", None, Arg::None),
    opt("user", Some('u'), Arg::Required),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
    opt("yaml", None, Arg::Optional),
];

/// One `-j` entry: `123`, `123_4`, `123.batch`, `123_4.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSel {
    /// The job id, or the array's job id with `task`.
    pub job: u32,
    /// The array task index.
    pub task: Option<u32>,
    /// Only this step.
    pub step: Option<StepId>,
}

/// How rows are separated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// Fixed-width columns with a dashes line.
    #[default]
    Columns,
    /// `-p`: delimited, with a trailing delimiter.
    Parsable,
    /// `-P`: delimited, no trailing delimiter.
    Parsable2,
}

/// sacct's options, as parsed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SacctArgs {
    /// The columns (`-o`, `-l`, `-b`, `SACCT_FORMAT` or the default).
    pub columns: Vec<Column>,
    /// `-p` / `-P`.
    pub layout: Layout,
    /// `--delimiter` (default `|`).
    pub delimiter: String,
    /// `-n`.
    pub noheader: bool,
    /// `-X`.
    pub allocations: bool,
    /// `-D`: every run of a requeued job, not only the last.
    pub duplicates: bool,
    /// `-j`.
    pub jobs: Vec<JobSel>,
    /// `-u` / `--uid` (names or uids).
    pub users: Vec<String>,
    /// `-a`.
    pub allusers: bool,
    /// `-A`.
    pub accounts: Vec<String>,
    /// `-s`.
    pub states: Vec<JobState>,
    /// `--name`.
    pub names: Vec<String>,
    /// `-r`.
    pub partitions: Vec<String>,
    /// `-q`.
    pub qos: Vec<String>,
    /// `-S`, as typed (resolved against `now` by `query_for`).
    pub starttime: Option<String>,
    /// `-E`, as typed.
    pub endtime: Option<String>,
    /// `--units`.
    pub units: Option<Unit>,
    /// `--noconvert`.
    pub noconvert: bool,
    /// `-M` (`all` included); accepted, muster has one cluster.
    pub clusters: Vec<String>,
    /// `--json`.
    pub json: bool,
    /// `-e`.
    pub helpformat: bool,
    /// `-h`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`.
    pub version: bool,
}

/// Which jobs to ask the accounting store for. Empty lists select
/// everything; the time window selects jobs that were eligible before `end`
/// and had not ended before `start`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Job ids (an id also selects the tasks of the array it names).
    pub ids: Vec<u32>,
    /// User names or uids; `None`: every user.
    pub users: Option<Vec<String>>,
    /// Accounts.
    pub accounts: Vec<String>,
    /// States.
    pub states: Vec<JobState>,
    /// Job names.
    pub names: Vec<String>,
    /// Partitions.
    pub partitions: Vec<String>,
    /// QOS names.
    pub qos: Vec<String>,
    /// Window start; `None`: no lower bound.
    pub start: Option<Timestamp>,
    /// Window end; `None`: no upper bound.
    pub end: Option<Timestamp>,
}

impl JobFilter {
    /// Whether `job` passes the filter (for stores that filter in memory,
    /// and as the reference for those that do not).
    pub fn matches(&self, job: &AcctJob) -> bool {
        if !self.ids.is_empty()
            && !self
                .ids
                .iter()
                .any(|id| *id == job.job_id.0 || Some(*id) == job.array_job_id)
        {
            return false;
        }
        if let Some(users) = &self.users {
            let ok = users
                .iter()
                .any(|u| *u == job.user || u.parse::<u32>().is_ok_and(|n| n == job.uid));
            if !ok {
                return false;
            }
        }
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        let any_ci = |list: &[String], v: &str| {
            list.is_empty() || list.iter().any(|x| x.eq_ignore_ascii_case(v))
        };
        if !any_ci(&self.accounts, &job.account)
            || !any(&self.names, &job.name)
            || !any(&self.partitions, &job.partition)
            || !any_ci(&self.qos, &job.qos)
        {
            return false;
        }
        if !self.states.is_empty() && !self.states.contains(&job.state) {
            return false;
        }
        let began = job.eligible_time.unwrap_or(job.submit_time);
        if self.end.is_some_and(|end| began > end) {
            return false;
        }
        if let (Some(start), Some(ended)) = (self.start, job.end_time) {
            if ended < start {
                return false;
            }
        }
        true
    }
}

fn parse_step(s: &str) -> Option<StepId> {
    match s {
        "batch" => Some(StepId::Batch),
        "extern" => Some(StepId::Extern),
        n => n.parse().ok().map(StepId::Numbered),
    }
}

/// Parses one `-j` entry.
pub fn parse_job_sel(text: &str) -> Option<JobSel> {
    let (job_part, step) = match text.split_once('.') {
        Some((j, s)) => (j, Some(parse_step(s)?)),
        None => (text, None),
    };
    let (job, task) = match job_part.split_once('_') {
        Some((j, t)) => (j, Some(t.parse().ok()?)),
        None => (job_part, None),
    };
    let job: u32 = job.parse().ok()?;
    if job == 0 {
        return None;
    }
    Some(JobSel { job, task, step })
}

fn parse_state(s: &str) -> Option<JobState> {
    JobState::parse(s)
}

/// Parses sacct's command line (without the program name); `env` is the
/// process environment (`SACCT_FORMAT`). The error is the complete text for
/// stderr.
pub fn parse_args(args: &[String], env: &[(String, String)]) -> Result<SacctArgs, String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| crate::common::usage_error("sacct", &e.message()))?;
    let mut a = SacctArgs {
        delimiter: "|".into(),
        ..SacctArgs::default()
    };
    let mut format = String::new();
    let mut long = false;
    let mut brief = false;
    for item in items {
        let (name, v) = match item {
            Item::Opt(name, value) => (name, value.unwrap_or_default()),
            // Slurm's sacct ignores stray arguments (`sacct -nu user -o x extra`).
            Item::Positional(_) => continue,
        };
        match name {
            "accounts" => a.accounts.extend(split_list(&v)),
            "allclusters" => a.clusters = vec!["all".into()],
            "allocations" => a.allocations = true,
            "duplicates" => a.duplicates = true,
            "allusers" => a.allusers = true,
            "brief" => brief = true,
            "clusters" => a.clusters.extend(split_list(&v)),
            "delimiter" => a.delimiter = v,
            "endtime" => a.endtime = Some(check_time(&v)?),
            "format" => {
                if !format.is_empty() {
                    format.push(',');
                }
                format.push_str(&v);
            }
            "help" => a.help = true,
            "helpformat" => a.helpformat = true,
            "jobs" => {
                for s in v.split(',').filter(|s| !s.is_empty()) {
                    let sel = parse_job_sel(s)
                        .ok_or_else(|| format!("sacct: fatal: Bad job/step specified: {s}\n"))?;
                    a.jobs.push(sel);
                }
            }
            "json" => a.json = true,
            "long" => long = true,
            "name" => a.names.extend(split_list(&v)),
            "noconvert" => a.noconvert = true,
            "noheader" => a.noheader = true,
            "parsable" => a.layout = Layout::Parsable,
            "parsable2" => a.layout = Layout::Parsable2,
            "partition" => a.partitions.extend(split_list(&v)),
            "qos" => a.qos.extend(split_list(&v)),
            "starttime" => a.starttime = Some(check_time(&v)?),
            "state" => {
                for s in v.split(',').filter(|s| !s.is_empty()) {
                    let st = parse_state(s).ok_or_else(|| {
                        let names: Vec<&str> =
                            ALL_JOB_STATES.iter().map(|s| s.as_slurm_str()).collect();
                        format!(
                            "sacct: error: Invalid state specified: {s}\nsacct: error: Valid job states include: {}\n",
                            names.join(",")
                        )
                    })?;
                    if !a.states.contains(&st) {
                        a.states.push(st);
                    }
                }
            }
            "units" => {
                a.units =
                    Some(Unit::parse(&v).ok_or_else(|| {
                        format!("sacct: error: Invalid --units specification: {v}\n")
                    })?)
            }
            "usage" => a.usage = true,
            "user" | "uid" => a.users.extend(split_list(&v)),
            "version" => a.version = true,
            // Accepted, no effect in muster: --array, -g, -N, -T, -v,
            // --local, --yaml.
            _ => {}
        }
    }
    let spec = if !format.is_empty() {
        format
    } else if long {
        LONG_FORMAT.to_string()
    } else if brief {
        BRIEF_FORMAT.to_string()
    } else if let Some((_, f)) = env.iter().find(|(k, _)| k == "SACCT_FORMAT") {
        f.clone()
    } else {
        DEFAULT_FORMAT.to_string()
    };
    a.columns = fields::parse_format(&spec)
        .map_err(|bad| format!("sacct: error: Invalid field requested: \"{bad}\"\n"))?;
    Ok(a)
}

fn check_time(v: &str) -> Result<String, String> {
    // Validity does not depend on the day; the value is resolved later.
    match timespec::parse_time(v, 0, &chrono::Utc) {
        Some(_) => Ok(v.to_string()),
        None => Err(format!("sacct: error: Invalid time specification: {v}\n")),
    }
}

/// The store query for `args`, for the caller `me` at `now` (local time).
pub fn query_for(args: &SacctArgs, me: &str, now: Timestamp) -> JobFilter {
    query_for_tz(args, me, now, &chrono::Local)
}

/// [`query_for`] in the time zone `tz`.
///
/// The window follows sacct(1): `-S` defaults to midnight today, to `now`
/// with `-s`, and to no bound with `-j`; `-E` defaults to no bound, and
/// with `-s` to the window's start (`-S T -s CD` asks for the jobs in that
/// state at T, as Slurm's sacct does; `now` without `-S`). Users: `-u` as given; everyone with `-a`, for root, or with
/// `-j` (the ids already select); otherwise only the caller.
pub fn query_for_tz<Tz: chrono::TimeZone>(
    args: &SacctArgs,
    me: &str,
    now: Timestamp,
    tz: &Tz,
) -> JobFilter {
    let resolve = |s: &Option<String>| s.as_deref().and_then(|v| timespec::parse_time(v, now, tz));
    let start = match resolve(&args.starttime) {
        Some(t) => Some(t),
        None if !args.jobs.is_empty() => None,
        None if !args.states.is_empty() => Some(now),
        None => Some(timespec::midnight(now, tz)),
    };
    let end = match resolve(&args.endtime) {
        Some(t) => Some(t),
        None if !args.states.is_empty() => start,
        None => None,
    };
    let users = if !args.users.is_empty() {
        Some(args.users.clone())
    } else if args.allusers || me == "root" || !args.jobs.is_empty() {
        None
    } else {
        Some(vec![me.to_string()])
    };
    let mut ids: Vec<u32> = args.jobs.iter().map(|j| j.job).collect();
    ids.dedup();
    JobFilter {
        ids,
        users,
        accounts: args.accounts.clone(),
        states: args.states.clone(),
        names: args.names.clone(),
        partitions: args.partitions.clone(),
        qos: args.qos.clone(),
        start,
        end,
    }
}

/// The records to show: without `-D`, only the last run of each job (a
/// requeued job's earlier runs are REQUEUED records with older submit times).
fn latest_runs<'a>(args: &SacctArgs, jobs: &'a [AcctJob]) -> std::borrow::Cow<'a, [AcctJob]> {
    use std::collections::BTreeMap;
    if args.duplicates {
        return std::borrow::Cow::Borrowed(jobs);
    }
    let mut last: BTreeMap<(&str, u32), Timestamp> = BTreeMap::new();
    for j in jobs {
        let e = last
            .entry((j.cluster.as_str(), j.job_id.0))
            .or_insert(j.submit_time);
        *e = (*e).max(j.submit_time);
    }
    if last.len() == jobs.len() {
        return std::borrow::Cow::Borrowed(jobs);
    }
    std::borrow::Cow::Owned(
        jobs.iter()
            .filter(|j| last[&(j.cluster.as_str(), j.job_id.0)] == j.submit_time)
            .cloned()
            .collect(),
    )
}

/// One output row.
enum Row<'a> {
    Job(&'a AcctJob),
    Step(&'a AcctJob, &'a proto::AcctStep),
}

/// The rows `args` prints for `jobs`: each job, then its steps, unless `-X`
/// or a `-j` entry naming a step selects otherwise.
fn rows<'a>(args: &SacctArgs, jobs: &'a [AcctJob]) -> Vec<Row<'a>> {
    let mut out = Vec::new();
    for job in jobs {
        let sels: Vec<&JobSel> = args
            .jobs
            .iter()
            .filter(|s| match s.task {
                None => s.job == job.job_id.0 || Some(s.job) == job.array_job_id,
                Some(t) => Some(s.job) == job.array_job_id && Some(t) == job.array_task_id,
            })
            .collect();
        if !args.jobs.is_empty() && sels.is_empty() {
            continue;
        }
        let whole = args.jobs.is_empty() || sels.iter().any(|s| s.step.is_none());
        if whole {
            out.push(Row::Job(job));
        }
        if args.allocations {
            continue;
        }
        for step in &job.steps {
            if whole || sels.iter().any(|s| s.step == Some(step.step)) {
                out.push(Row::Step(job, step));
            }
        }
    }
    out
}

/// Renders sacct's whole output for `jobs` (already selected by the store).
pub fn render(args: &SacctArgs, jobs: &[AcctJob], now: Timestamp) -> String {
    let latest = latest_runs(args, jobs);
    let jobs: &[AcctJob] = &latest;
    if args.json {
        return render_json(args, jobs, now);
    }
    let ctx = Ctx {
        now,
        units: args.units,
        noconvert: args.noconvert,
    };
    let cols = &args.columns;
    let mut out = String::new();
    let line = |out: &mut String, cells: Vec<String>| match args.layout {
        Layout::Columns => {
            for (c, text) in cols.iter().zip(cells) {
                out.push_str(&fields::fit(&text, c.width, c.left));
                out.push(' ');
            }
            out.push('\n');
        }
        Layout::Parsable | Layout::Parsable2 => {
            out.push_str(&cells.join(&args.delimiter));
            if args.layout == Layout::Parsable {
                out.push_str(&args.delimiter);
            }
            out.push('\n');
        }
    };
    if !args.noheader {
        line(
            &mut out,
            cols.iter().map(|c| c.def.name.to_string()).collect(),
        );
        if args.layout == Layout::Columns {
            line(&mut out, cols.iter().map(|c| "-".repeat(c.width)).collect());
        }
    }
    for row in rows(args, jobs) {
        let cells = cols
            .iter()
            .map(|c| match row {
                Row::Job(j) => fields::job_value(c.def.name, j, &ctx),
                Row::Step(j, s) => fields::step_value(c.def.name, j, s, &ctx),
            })
            .collect();
        line(&mut out, cells);
    }
    out
}

/// `sacct --json`: slurmrestd's `slurmdb` job shape (v0.0.38 names) with the
/// fields the accounting store keeps.
fn render_json(args: &SacctArgs, jobs: &[AcctJob], now: Timestamp) -> String {
    use serde_json::json;
    let ts = |t: Option<Timestamp>| t.unwrap_or(0);
    let exit = |e: model::ExitCode| {
        let status = if e.signal != 0 {
            "SIGNALED"
        } else if e.code != 0 {
            "FAILED"
        } else {
            "SUCCESS"
        };
        json!({ "status": status, "return_code": e.code, "signal": { "signal_id": e.signal } })
    };
    let mut seen = std::collections::BTreeSet::new();
    let docs: Vec<serde_json::Value> = rows(args, jobs)
        .into_iter()
        .filter_map(|r| match r {
            Row::Job(j) | Row::Step(j, _) => seen.insert(j.job_id.0).then_some(j),
        })
        .map(|j| {
            let elapsed = j
                .start_time
                .map_or(0, |s| j.end_time.unwrap_or(now) - s - j.suspended_secs)
                .max(0);
            let limit = match j.time_limit {
                model::TimeLimit::Unlimited => json!(null),
                model::TimeLimit::Minutes(m) => json!(m),
            };
            let steps: Vec<serde_json::Value> = if args.allocations {
                Vec::new()
            } else {
                j.steps
                    .iter()
                    .map(|s| {
                        let elapsed = s.start_time.map_or(0, |st| s.end_time.unwrap_or(now) - st);
                        // Slurm 22.05 (dbv0.0.38) names a step by its id alone:
                        // "batch", "extern", or the number.
                        let id = match s.step {
                            StepId::Numbered(n) => json!(n),
                            other => json!(other.as_slurm_string()),
                        };
                        // The keys of dbv0.0.38_job_step; what muster does
                        // not keep (the first pid, CPU frequencies, who
                        // cancelled the step) is null or empty.
                        json!({
                            "step": {
                                "job_id": j.job_id.0,
                                "het": { "component": null },
                                "id": id,
                                "name": s.name,
                            },
                            "state": s.state.as_slurm_str(),
                            "exit_code": exit(s.exit_code),
                            "nodes": { "count": s.n_nodes, "range": s.nodes },
                            "tasks": { "count": s.n_tasks },
                            "task": { "distribution": "Unknown" },
                            "pid": null,
                            "kill_request_user": null,
                            "CPU": {
                                "requested_frequency": { "min": 0, "max": 0 },
                                "governor": [],
                            },
                            "time": {
                                "start": ts(s.start_time),
                                "end": ts(s.end_time),
                                "elapsed": elapsed,
                                "suspended": 0,
                                "user": { "seconds": s.usage.user_cpu_usec.unwrap_or(0) / 1_000_000,
                                          "microseconds": s.usage.user_cpu_usec.unwrap_or(0) % 1_000_000 },
                                "system": { "seconds": s.usage.sys_cpu_usec.unwrap_or(0) / 1_000_000,
                                            "microseconds": s.usage.sys_cpu_usec.unwrap_or(0) % 1_000_000 },
                                "total": { "seconds": total_usec(&s.usage) / 1_000_000,
                                           "microseconds": total_usec(&s.usage) % 1_000_000 },
                            },
                            "tres": {
                                "allocated": tres_list(&s.alloc_tres),
                                "requested": usage_tres(&s.usage),
                                // TRESUsageOut (disk writes, energy): not gathered.
                                "consumed": { "max": [], "min": [], "average": [], "total": [] },
                            },
                            // CPU frequency and energy are not gathered: 0,
                            // as Slurm prints them without those plugins.
                            "statistics": {
                                "CPU": { "actual_frequency": 0 },
                                "energy": { "consumed": 0 },
                            },
                        })
                    })
                    .collect()
            };
            json!({
                "account": j.account,
                "array": {
                    "job_id": j.array_job_id.unwrap_or(0),
                    "task_id": j.array_task_id,
                },
                "cluster": j.cluster,
                "comment": { "job": j.comment.clone().unwrap_or_default() },
                "derived_exit_code": exit(j.steps.iter()
                    .filter(|s| matches!(s.step, StepId::Numbered(_)))
                    .map(|s| s.exit_code)
                    .max_by_key(|e| (e.code, e.signal))
                    .unwrap_or_default()),
                "exit_code": exit(j.exit_code),
                "group": j.gid.to_string(),
                "job_id": j.job_id.0,
                "name": j.name,
                "nodes": j.nodes,
                "allocation_nodes": j.n_nodes,
                "partition": j.partition,
                "priority": j.priority,
                "qos": j.qos,
                "required": { "CPUs": j.n_cpus, "memory": j.req_mem },
                "state": { "current": fields::job_state(j), "reason": j.reason },
                "submit_line": j.submit_line,
                "time": {
                    "elapsed": elapsed,
                    "eligible": ts(j.eligible_time),
                    "end": ts(j.end_time),
                    "start": ts(j.start_time),
                    "submission": j.submit_time,
                    "suspended": j.suspended_secs,
                    "limit": limit,
                },
                "tres": { "allocated": tres_list(&j.alloc_tres), "requested": tres_list(&j.req_tres) },
                "user": j.user,
                "working_directory": j.work_dir,
                "steps": steps,
            })
        })
        .collect();
    let doc = json!({
        "meta": {
            "plugin": { "type": "", "name": "" },
            "Slurm": {
                "version": { "major": 22, "micro": 8, "minor": 5 },
                "release": crate::common::SLURM_VERSION
            }
        },
        "errors": [],
        "jobs": docs,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

/// Slurm's TRES ids (the fixed ones; GRES get ids from 1001 up).
fn tres_id(kind: &str) -> u32 {
    match kind {
        "cpu" => 1,
        "mem" => 2,
        "energy" => 3,
        "node" => 4,
        "billing" => 5,
        "fs/disk" => 6,
        "vmem" => 7,
        "pages" => 8,
        _ => 1001,
    }
}

fn tres_entry(kind: &str, count: u64) -> serde_json::Value {
    let (ty, name) = match kind.split_once('/') {
        Some((t, n)) if t == "gres" || t == "license" => (t, Some(n)),
        _ => (kind, None),
    };
    serde_json::json!({ "type": ty, "name": name, "id": tres_id(kind), "count": count })
}

/// A TRES string (`cpu=2,mem=500M,node=1,gres/gpu=1`) as the JSON list
/// Slurm prints: in TRES id order, memory counted in MiB, as its TRES
/// records keep it.
pub fn tres_list(text: &str) -> serde_json::Value {
    let mut items: Vec<serde_json::Value> = text
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| {
            let count = if k == "mem" {
                let (num, unit) = match v.char_indices().last() {
                    Some((i, c)) if c.is_ascii_alphabetic() => (&v[..i], c),
                    _ => (v, 'M'),
                };
                let n: f64 = num.parse().ok()?;
                let scale = match unit.to_ascii_uppercase() {
                    'K' => 1.0 / 1024.0,
                    'G' => 1024.0,
                    'T' => 1024.0 * 1024.0,
                    _ => 1.0,
                };
                (n * scale).round() as u64
            } else {
                v.parse().ok()?
            };
            Some(tres_entry(k, count))
        })
        .collect();
    items.sort_by_key(|e| e["id"].as_u64());
    serde_json::Value::Array(items)
}

fn total_usec(u: &proto::StepUsage) -> u64 {
    u.user_cpu_usec.unwrap_or(0) + u.sys_cpu_usec.unwrap_or(0)
}

/// A step's usage as Slurm 22.05's JSON carries it (`tres.requested`,
/// i.e. TRESUsageIn): lists of TRES with counts in Slurm's units, CPU time
/// in milliseconds, memory and virtual memory in bytes, pages as a count.
/// `max` holds the largest memory figures and `min` the smallest CPU time
/// (with a single task, every figure in both); `total` sums the tasks
/// (their average memory times the task count).
pub fn usage_tres(u: &proto::StepUsage) -> serde_json::Value {
    let one = u.n_tasks == Some(1);
    let n = u64::from(u.n_tasks.unwrap_or(1));
    let ms = |v: Option<u64>| v.map(|us| us / 1000);
    let bytes = |v: Option<u64>| v.map(|k| k * 1024);
    let list = |items: Vec<(&str, Option<u64>)>| {
        serde_json::Value::Array(
            items
                .into_iter()
                .filter_map(|(k, v)| v.map(|c| tres_entry(k, c)))
                .collect(),
        )
    };
    let keep = |ok: bool, v: Option<u64>| v.filter(|_| ok);
    let total_cpu = match total_usec(u) {
        0 => u.ave_cpu_usec.map(|a| a * n),
        t => Some(t),
    };
    serde_json::json!({
        "average": list(vec![
            ("cpu", ms(u.ave_cpu_usec)),
            ("mem", bytes(u.ave_rss_kib)),
            ("pages", u.ave_pages),
            ("vmem", bytes(u.ave_vmsize_kib)),
        ]),
        "max": list(vec![
            ("cpu", keep(one, ms(u.min_cpu_usec))),
            ("mem", bytes(u.max_rss_kib)),
            ("pages", u.max_pages),
            ("vmem", bytes(u.max_vmsize_kib)),
        ]),
        "min": list(vec![
            ("cpu", ms(u.min_cpu_usec)),
            ("mem", keep(one, bytes(u.max_rss_kib))),
            ("pages", keep(one, u.max_pages)),
            ("vmem", keep(one, bytes(u.max_vmsize_kib))),
        ]),
        "total": list(vec![
            ("cpu", ms(total_cpu)),
            ("mem", bytes(u.ave_rss_kib.map(|a| a * n))),
            ("pages", u.ave_pages.map(|a| a * n)),
            ("vmem", bytes(u.ave_vmsize_kib.map(|a| a * n))),
        ]),
    })
}

/// The `--usage` text.
pub const USAGE: &str =
    "Usage: sacct [-A account] [-a] [-b] [-D] [-E end] [-e] [-h] [-j job[.step]]
             [-L] [-l] [-M clusters] [-n] [-o format] [-P] [-p] [-r partition]
             [-S start] [-s state] [-u user] [-X] [--delimiter=c] [--json]
             [--name=names] [--noconvert] [--units=[KMGTP]]
";

/// The `--help` text.
pub const HELP: &str = "sacct [<OPTION>]
    Valid <OPTION> values are:
     -A, --accounts:
                   Use this comma separated list of accounts to select jobs
                   to display.  By default, all accounts are selected.
     -a, --allusers:
                   Display jobs for all users. By default, only the
                   current user's jobs are displayed.  If ran by user root
                   this is the default.
     -b, --brief:
                   Equivalent to '--format=jobstep,state,error'.
     -D, --duplicates:
                   If Slurm job ids are reset, but the job history is not
                   reset, jobs can share an id; show all of them.
         --delimiter:
                   ASCII characters used to separate the fields when
                   specifying the  -p  or  -P options. The default delimiter
                   is a '|'. This options is ignored if -p or -P options
                   are not specified.
     -E, --endtime:
                   Select jobs eligible before this time.
     -e, --helpformat:
                   Print a list of fields that can be specified with the
                   '--format' option
     -h, --help:   Print this description of use.
     -j, --jobs:
                   Format is <job(.step)>. Display information about this
                   job or comma-separated list of jobs. The default is all
                   jobs. Adding .step will display the specific job step of
                   that job. (A step id of 'batch' will display the
                   information about the batch step.)
         --json:
                   Produce JSON output
     -L, --allclusters:
                   Display jobs ran on all clusters. (accepted)
     -l, --long:
                   Equivalent to specifying
                   '--format=jobid,jobidraw,jobname,partition,maxvmsize,...'
     -M, --clusters:
                   Only send data about these clusters. Use \"all\" for all
                   clusters. (accepted)
     -n, --noheader:
                   No header will be added to the beginning of the output.
                   The default is to print a header.
     --noconvert:
                   Don't convert units from their original type
                   (e.g. 2048M won't be converted to 2G).
     -o, --format:
                   Comma separated list of fields. (use \"--helpformat\"
                   for a list of available fields).
     -p, --parsable: output will be '|' delimited with a '|' at the end
     -P, --parsable2: output will be '|' delimited without a '|' at the end
     -r, --partition:
                   Comma separated list of partitions to select jobs and
                   job steps from. The default is all partitions.
     -S, --starttime:
                   Select jobs eligible after this time.  Default is
                   00:00:00 of the current day, unless '-s' is set then
                   the default is 'now'.
     -s, --state:
                   Select jobs based on their state during the time period
                   given. Valid states are: CA, CD, DL, F, NF, OOM, PD, PR,
                   R, S, TO (short or long form, any case).
     -u, --uid, --user:
                   Use this comma separated list of uids or user names
                   to select jobs to display.  By default, the running
                   user's uid is used.
     --units=[KMGTP]:
                   Display values in specified unit type.
     --usage:      Display brief usage message.
     -V, --version: Print version.
     -X, --allocations:
                   Only show statistics relevant to the job allocation
                   itself, not taking steps into consideration.
";

/// Reads the job records for `query` from the controller's accounting
/// store.
///
/// TODO: ask the controller once it serves accounting queries; until then
/// every cluster behaves as one with `accounting_storage/none`.
pub fn fetch(query: &JobFilter) -> Result<Vec<AcctJob>, String> {
    let client = client::Client::from_env().map_err(|e| e.to_string())?;
    // The store matches user names; uids given with -u are matched here
    // afterwards (`JobFilter::matches`), so they widen the server's query.
    let users = match &query.users {
        Some(u) if u.iter().all(|x| x.parse::<u32>().is_err()) => u.clone(),
        _ => Vec::new(),
    };
    let q = proto::AcctQuery {
        cluster: None,
        job_ids: query.ids.clone(),
        users,
        accounts: query.accounts.clone(),
        states: query.states.clone(),
        names: query.names.clone(),
        partitions: query.partitions.clone(),
        start: query.start,
        end: query.end,
    };
    match client.call(proto::CtldRequest::AcctQuery(q)) {
        Ok(proto::CtldResponse::AcctJobs(jobs)) => Ok(jobs),
        Err(client::ClientError::Refused(proto::SlurmError::AccountingDisabled)) => {
            Err(ACCOUNTING_DISABLED.to_string())
        }
        Ok(_) => Err("Unexpected message received".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs `sacct`.
pub fn main(args: Vec<String>) -> i32 {
    let env: Vec<(String, String)> = std::env::vars().collect();
    common::run(
        || {
            let args = common::parsed(parse_args(&args, &env), |a| {
                common::info_flags(a.help, a.usage, a.version, HELP, USAGE)
            })?;
            if args.helpformat {
                print_stdout(&fields::helpformat());
                return Err(Stop::Exit(0));
            }
            Ok(args)
        },
        ask,
        |args, (jobs, now)| {
            print_stdout(&render(args, &jobs, now));
            0
        },
    )
}

/// The caller's jobs in the window `args` asks for, from the accounting
/// store, with the time they were asked at.
fn ask(args: &SacctArgs) -> Result<(Vec<AcctJob>, Timestamp), Stop> {
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| nix::unistd::getuid().to_string());
    let now = common::now();
    let query = query_for(args, &me, now);
    match fetch(&query) {
        Ok(mut jobs) => {
            jobs.retain(|j| query.matches(j));
            Ok((jobs, now))
        }
        Err(e) if e == ACCOUNTING_DISABLED => Err(Stop::Fail(format!("{e}\n"))),
        Err(e) => Err(Stop::Fail(format!("sacct: error: {e}\n"))),
    }
}
