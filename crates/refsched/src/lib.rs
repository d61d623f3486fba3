//! `refsched`: a small reference implementation of the textbook scheduling
//! policies (FCFS, EASY, conservative backfilling, muster's
//! plan-every-blocked-job `replan`, and muster's `default`: EASY's
//! reservation, conservative backfilling for wide jobs, the rest backfilled
//! shortest first) over a pool of processors, independent
//! of muster's engine and scheduler, to check `muster sim` against
//! (issue #6: the default scheduler's maximum wait must be no worse than
//! conservative backfilling's on every shipped trace).
//!
//! The trace is read and normalized by `sim::swf` (the same jobs as
//! `muster sim` sees, `--limit` applied after the normalization as there),
//! and the summary is `sim::report::summarize`'s (the same definitions of
//! wait, bounded slowdown and utilization). What differs is the machine:
//! one pool of processors, no nodes, so a reservation may use whichever
//! processors are free at each instant of its window.
//!
//! - `profile` (`sched::profile`, which pool planning uses too): free
//!   processors over time, a treap of breakpoints with
//!   range addition and subtree minima and maxima: O(log n) per change or
//!   descent, n the running jobs and reservations.
//! - `simulate`: the event loop and the policies. What keeps a whole
//!   RICC-2010-2 (447,784 jobs, queues of thousands) to minutes: a memo per
//!   job shape (processors, limit) of where the last search found no room,
//!   with the regions freed since, so that compressing the schedule tries
//!   only the starts that could have become possible; `replan` places
//!   jobs only as far down the queue as one could still start now; and
//!   `default` decides only the arrivals when nothing ended, and skips the
//!   narrow jobs that cannot fit by their processors alone.
//!
//! ```text
//! refsched --trace FILE [--policy fcfs|easy|conservative|replan|default]
//!          [--limit N]
//!          [--exact-limits] [--csv FILE]
//! ```
//!
//! Only `run` and `main` touch files, the clock and the terminal.
#![warn(missing_docs)]

/// The profile lives in `sched` (its pool planning uses it too).
pub use sched::profile;
pub mod simulate;

#[cfg(test)]
mod tests;

use anyhow::Context;
use sim::driver::JobRecord;
use sim::swf::{BadLines, Trace};
use simulate::{Job, Options, Policy};
use std::fmt::Write as _;
use std::path::PathBuf;

const USAGE: &str = "\
Usage: refsched --trace FILE [options]

Simulates a Standard Workload Format trace (plain or .gz), normalized as
`muster sim` does, on a pool of the trace's processors under a textbook
policy, and prints the summary as one JSON object (the keys of
`muster sim --json`, and \"policy\" and \"limits\").

Options:
  --trace FILE       the trace (required)
  --policy P         fcfs | easy | conservative | replan | default
                     (default: easy; `default` is muster's default policy)
  --limit N          only the first N jobs of the trace
  --exact-limits     plan with the requested time in seconds (default: rounded
                     up to whole minutes, at least one, as muster submits it)
  --csv FILE         write one line per job (id,submit,start,end,procs)
";

/// Options of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// `--trace`.
    pub trace: PathBuf,
    /// `--policy`.
    pub policy: Policy,
    /// `--limit`.
    pub limit: Option<usize>,
    /// `--exact-limits`.
    pub exact_limits: bool,
    /// `--csv`.
    pub csv: Option<PathBuf>,
}

/// Parses the command line (`--key value` or `--key=value`); `None` asks
/// for the usage.
pub fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let mut trace = None;
    let mut a = Args {
        trace: PathBuf::new(),
        policy: Policy::Easy,
        limit: None,
        exact_limits: false,
        csv: None,
    };
    let mut opts = sim::Options::new(args);
    while let Some(key) = opts.next_key() {
        let mut value = |name: &str| opts.value(name);
        match key {
            "-h" | "--help" => return Ok(None),
            "--trace" => trace = Some(PathBuf::from(value("--trace")?)),
            "--policy" => {
                let v = value("--policy")?;
                a.policy = Policy::parse(&v).ok_or_else(|| {
                    format!("unknown policy {v:?}: expected fcfs, easy, conservative, replan or default")
                })?;
            }
            "--limit" => a.limit = Some(sim::limit(&value("--limit")?)?),
            "--exact-limits" => a.exact_limits = true,
            "--csv" => a.csv = Some(PathBuf::from(value("--csv")?)),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    a.trace = trace.ok_or("--trace FILE is required")?;
    Ok(Some(a))
}

/// The time limit planned with for a requested time: `muster sim` submits
/// whole minutes, rounded up, at least one; `exact` keeps the seconds.
pub fn limit_of(req_time: i64, exact: bool) -> i64 {
    if exact {
        req_time
    } else {
        (req_time.max(1) as u64).div_ceil(60) as i64 * 60
    }
}

/// The scheduler's jobs of a normalized trace.
pub fn jobs_of(trace: &Trace, exact_limits: bool) -> Vec<Job> {
    trace
        .jobs
        .iter()
        .map(|j| Job {
            id: j.id,
            submit: j.submit,
            run: j.run,
            procs: j.procs,
            limit: limit_of(j.req_time, exact_limits),
        })
        .collect()
}

/// Each job's record, as `muster sim` reports it (no nodes).
pub fn records(jobs: &[Job], start: &[i64]) -> Vec<JobRecord> {
    jobs.iter()
        .zip(start)
        .map(|(j, &s)| JobRecord {
            id: j.id,
            submit: j.submit,
            start: s,
            end: s + j.run,
            procs: j.procs,
            nodes: Vec::new(),
        })
        .collect()
}

/// The per-job CSV: `id,submit,start,end,procs`.
pub fn csv(records: &[JobRecord]) -> String {
    let mut out = String::from("id,submit,start,end,procs\n");
    for r in records {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            r.id, r.submit, r.start, r.end, r.procs
        );
    }
    out
}

/// Runs the command line's simulation; the JSON line to print.
pub fn run(args: &Args) -> anyhow::Result<String> {
    let text = sim::read_trace(&args.trace)?;
    let mut trace = sim::swf::parse(&text, BadLines::Reject)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.trace.display()))?;
    drop(text);
    // As `muster sim --limit`: the first N jobs after the normalization.
    if let Some(n) = args.limit {
        trace.jobs.truncate(n);
    }
    let procs = u32::try_from(trace.machine.procs()).context("too many processors")?;
    let jobs = jobs_of(&trace, args.exact_limits);
    let started = std::time::Instant::now();
    let out = simulate::simulate(&jobs, procs, &Options::new(args.policy));
    let secs = started.elapsed().as_secs_f64();
    let records = records(&jobs, &out.start);
    let summary = sim::report::summarize(&records, u64::from(procs), out.passes, secs);
    if let Some(p) = &args.csv {
        std::fs::write(p, csv(&records)).with_context(|| format!("writing {}", p.display()))?;
    }
    let mut json: serde_json::Value = serde_json::from_str(&summary.json())?;
    if let Some(obj) = json.as_object_mut() {
        obj.insert("policy".into(), args.policy.name().into());
        let limits = if args.exact_limits {
            "exact"
        } else {
            "minutes"
        };
        obj.insert("limits".into(), limits.into());
    }
    Ok(format!("{json}\n"))
}

/// `refsched ...`: the exit status.
pub fn main(args: Vec<String>) -> i32 {
    match parse_args(&args) {
        Ok(None) => {
            print!("{USAGE}");
            0
        }
        Err(e) => {
            eprintln!("refsched: {e}\n\n{USAGE}");
            2
        }
        Ok(Some(a)) => match run(&a) {
            Ok(out) => {
                print!("{out}");
                0
            }
            Err(e) => {
                eprintln!("refsched: {e:#}");
                1
            }
        },
    }
}
