//! Standard Workload Format: 18 whitespace-separated fields per job, `;`
//! header comments (`MaxNodes`, `MaxProcs`, `UnixStartTime`; -1 is unknown).
//!
//! Normalization, applied the same way every time (docs/simulator.md):
//! - requested processors = field 8 if > 0, else field 5;
//! - jobs with run time <= 0, processors <= 0 or more processors than the
//!   machine are dropped;
//! - requested time = field 9 if > 0, else the run time, and never less
//!   than the run time;
//! - submit times are shifted so that the first job is at 0.
//!
//! The machine: MaxNodes nodes of MaxProcs/MaxNodes CPUs when the header
//! gives both, else MaxProcs one-CPU nodes (else, without either, as many
//! one-CPU nodes as the widest job asks for).

use std::fmt;

/// One job of a trace, normalized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceJob {
    /// Field 1: the trace's job number.
    pub id: u64,
    /// Field 2, shifted so the first job is at 0 (seconds).
    pub submit: i64,
    /// Field 4 (seconds, > 0).
    pub run: i64,
    /// Requested processors (field 8, else field 5).
    pub procs: u32,
    /// Requested time (field 9, else the run time; never below the run time).
    pub req_time: i64,
    /// Field 12 (-1 when unknown).
    pub user: i64,
    /// Field 13 (-1 when unknown).
    pub group: i64,
    /// The user's name, where the trace has one (a sacct export).
    pub user_name: Option<String>,
    /// The account, where the trace has one (a sacct export).
    pub account: Option<String>,
    /// The partition, where the trace has one (a sacct export).
    pub partition: Option<String>,
}

/// The machine a trace ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Nodes.
    pub nodes: u32,
    /// CPUs per node.
    pub cpus_per_node: u32,
}

impl Machine {
    /// All processors.
    pub fn procs(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.cpus_per_node)
    }
}

/// A trace, read and normalized.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The machine.
    pub machine: Machine,
    /// Header `UnixStartTime` (the epoch of time 0 before the shift).
    pub unix_start: Option<i64>,
    /// What the shift subtracted from every submit time.
    pub shift: i64,
    /// The jobs, in submission order (then trace order).
    pub jobs: Vec<TraceJob>,
    /// Jobs dropped by the normalization: (run <= 0, procs <= 0, too wide).
    pub dropped: (usize, usize, usize),
    /// Malformed lines skipped (with `BadLines::Skip`).
    pub skipped: Vec<LineError>,
}

/// What to do with a malformed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadLines {
    /// Refuse the whole trace (the default).
    Reject,
    /// Report it and go on.
    Skip,
}

/// A malformed line (or, in a JSON export, a malformed job entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number (the entry's index in `jobs`, from 0, for JSON).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
    /// A JSON entry rather than a line.
    pub json: bool,
}

impl LineError {
    /// A malformed line.
    pub fn line(line: usize, reason: String) -> LineError {
        LineError {
            line,
            reason,
            json: false,
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.json {
            write!(f, "jobs[{}]: {}", self.line, self.reason)
        } else {
            write!(f, "line {}: {}", self.line, self.reason)
        }
    }
}

/// Why a trace cannot be simulated.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// A malformed line (with `BadLines::Reject`).
    #[error("{0} (use --skip-bad-lines to skip such lines)")]
    Malformed(LineError),
    /// The text is not what its format needs at all (no header, not JSON).
    #[error("{0}")]
    Unreadable(String),
    /// No job lines at all.
    #[error("the trace has no jobs")]
    Empty,
    /// Every job was dropped by the normalization.
    #[error("no job of the trace can run on the machine ({nodes} nodes of {cpus} CPUs): {run} with run time <= 0, {procs} with no processors, {wide} wider than the machine")]
    NothingRuns {
        /// Nodes of the machine.
        nodes: u32,
        /// CPUs per node.
        cpus: u32,
        /// Dropped for run time.
        run: usize,
        /// Dropped for processors.
        procs: usize,
        /// Dropped for width.
        wide: usize,
    },
}

/// A header value (`; MaxProcs: 100`); None when absent or -1.
fn header(line: &str, key: &str) -> Option<i64> {
    let rest = line.trim_start_matches(';').trim_start();
    let value = rest.strip_prefix(key)?.trim_start().strip_prefix(':')?;
    let n: i64 = value.split_whitespace().next()?.parse().ok()?;
    (n >= 0).then_some(n)
}

/// The raw fields of one job, before normalization (SWF's numbering).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Raw {
    /// Field 1.
    pub id: u64,
    /// Field 2.
    pub submit: i64,
    /// Field 4.
    pub run: i64,
    /// Field 5.
    pub alloc_procs: i64,
    /// Field 8.
    pub req_procs: i64,
    /// Field 9.
    pub req_time: i64,
    /// Field 12.
    pub user: i64,
    /// Field 13.
    pub group: i64,
    /// Names a sacct export carries (SWF has numbers only).
    pub user_name: Option<String>,
    /// The account.
    pub account: Option<String>,
    /// The partition.
    pub partition: Option<String>,
}

fn parse_line(text: &str) -> Result<Raw, String> {
    // The fields read are among the first 13: no vector of every field.
    // Fields are split at ASCII blanks (the format's), byte by byte.
    let mut fields = [""; 13];
    let mut count = 0usize;
    for f in text.split_ascii_whitespace() {
        if let Some(slot) = fields.get_mut(count) {
            *slot = f;
        }
        count += 1;
    }
    if count < 13 {
        return Err(format!(
            "expected 18 fields, found {count} (job lines need at least 13)"
        ));
    }
    let num = |i: usize| -> Result<i64, String> {
        let f = fields[i];
        f.parse::<i64>()
            .or_else(|_| f.parse::<f64>().map(|x| x.round() as i64))
            .map_err(|_| format!("field {} ({:?}) is not a number", i + 1, f))
    };
    let id = num(0)?;
    Ok(Raw {
        id: u64::try_from(id).map_err(|_| format!("field 1 (job number {id}) is negative"))?,
        submit: num(1)?,
        run: num(3)?,
        alloc_procs: num(4)?,
        req_procs: num(7)?,
        req_time: num(8)?,
        user: num(11)?,
        group: num(12)?,
        ..Raw::default()
    })
}

/// Reads a trace's text and normalizes it.
pub fn parse(text: &str, bad: BadLines) -> Result<Trace, TraceError> {
    let (mut max_nodes, mut max_procs, mut unix_start) = (None, None, None);
    // Room for every line at once (a job's line has 18 fields, at least
    // 36 bytes): a list grown by doubling copies itself into fresh pages,
    // which cost more than the parse on a small trace.
    let mut raws = Vec::with_capacity(text.len() / 36 + 1);
    let mut skipped = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        if t.starts_with(';') {
            max_nodes = max_nodes.or(header(t, "MaxNodes"));
            max_procs = max_procs.or(header(t, "MaxProcs"));
            unix_start = unix_start.or(header(t, "UnixStartTime"));
            continue;
        }
        match parse_line(t) {
            Ok(r) => raws.push(r),
            Err(reason) => {
                let e = LineError::line(i + 1, reason);
                match bad {
                    BadLines::Reject => return Err(TraceError::Malformed(e)),
                    BadLines::Skip => skipped.push(e),
                }
            }
        }
    }
    normalize(raws, max_nodes, max_procs, unix_start, skipped)
}

/// The normalization (module doc) of raw jobs, with the header's MaxNodes,
/// MaxProcs and UnixStartTime: every input format goes through it.
pub(crate) fn normalize(
    raws: Vec<Raw>,
    max_nodes: Option<i64>,
    max_procs: Option<i64>,
    unix_start: Option<i64>,
    skipped: Vec<LineError>,
) -> Result<Trace, TraceError> {
    if raws.is_empty() {
        return Err(TraceError::Empty);
    }
    let procs_of = |r: &Raw| {
        if r.req_procs > 0 {
            r.req_procs
        } else {
            r.alloc_procs
        }
    };
    let widest = raws.iter().map(procs_of).max().unwrap_or(1).max(1);
    let machine = match (max_nodes, max_procs) {
        (Some(n), Some(p)) if n > 0 && p >= n => Machine {
            nodes: n as u32,
            cpus_per_node: (p / n) as u32,
        },
        (_, Some(p)) if p > 0 => Machine {
            nodes: p as u32,
            cpus_per_node: 1,
        },
        (Some(n), None) if n > 0 => Machine {
            nodes: n as u32,
            cpus_per_node: 1,
        },
        _ => Machine {
            nodes: widest.min(i64::from(u32::MAX)) as u32,
            cpus_per_node: 1,
        },
    };
    let total = machine.procs() as i64;
    let mut dropped = (0, 0, 0);
    let mut jobs = Vec::with_capacity(raws.len());
    for r in raws {
        let procs = procs_of(&r);
        if r.run <= 0 {
            dropped.0 += 1;
        } else if procs <= 0 {
            dropped.1 += 1;
        } else if procs > total {
            dropped.2 += 1;
        } else {
            let req = if r.req_time > 0 { r.req_time } else { r.run };
            jobs.push(TraceJob {
                id: r.id,
                submit: r.submit,
                run: r.run,
                procs: procs as u32,
                req_time: req.max(r.run),
                user: r.user,
                group: r.group,
                user_name: r.user_name,
                account: r.account,
                partition: r.partition,
            });
        }
    }
    if jobs.is_empty() {
        return Err(TraceError::NothingRuns {
            nodes: machine.nodes,
            cpus: machine.cpus_per_node,
            run: dropped.0,
            procs: dropped.1,
            wide: dropped.2,
        });
    }
    // Stable: jobs submitted at the same second keep their trace order.
    jobs.sort_by_key(|j| j.submit);
    let shift = jobs[0].submit;
    for j in &mut jobs {
        j.submit -= shift;
    }
    Ok(Trace {
        machine,
        unix_start,
        shift,
        jobs,
        dropped,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "; MaxNodes: 4\n; MaxProcs: 8\n; UnixStartTime: 1000\n";

    #[test]
    fn header_machine_and_normalization() {
        let text = format!(
            "{HEAD}\
 1 100 5 50 2 -1 -1 4 -1 -1 1 7 3 -1 -1 -1 -1 -1
 2 110 0 30 2 -1 -1 -1 10 -1 1 8 3 -1 -1 -1 -1 -1
 3 120 0 0 2 -1 -1 2 60 -1 1 8 3 -1 -1 -1 -1 -1
 4 130 0 10 0 -1 -1 -1 60 -1 1 8 3 -1 -1 -1 -1 -1
 5 140 0 10 9 -1 -1 9 60 -1 1 8 3 -1 -1 -1 -1 -1
"
        );
        let t = parse(&text, BadLines::Reject).unwrap();
        assert_eq!(
            t.machine,
            Machine {
                nodes: 4,
                cpus_per_node: 2
            }
        );
        assert_eq!(t.unix_start, Some(1000));
        assert_eq!(t.shift, 100);
        assert_eq!(t.dropped, (1, 1, 1));
        assert_eq!(
            t.jobs,
            vec![
                TraceJob {
                    id: 1,
                    submit: 0,
                    run: 50,
                    procs: 4,
                    req_time: 50,
                    user: 7,
                    group: 3,
                    user_name: None,
                    account: None,
                    partition: None,
                },
                TraceJob {
                    id: 2,
                    submit: 10,
                    run: 30,
                    procs: 2,
                    req_time: 30,
                    user: 8,
                    group: 3,
                    user_name: None,
                    account: None,
                    partition: None,
                },
            ]
        );
    }

    #[test]
    fn max_procs_alone_gives_one_cpu_nodes() {
        let t = parse(
            "; MaxNodes: -1\n; MaxProcs: 16\n1 0 0 5 3 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n",
            BadLines::Reject,
        )
        .unwrap();
        assert_eq!(
            t.machine,
            Machine {
                nodes: 16,
                cpus_per_node: 1
            }
        );
    }

    #[test]
    fn malformed_lines_are_rejected_or_skipped_with_their_number() {
        let text = format!(
            "{HEAD}1 0 0 5 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1\n2 x 0 5 2\n3 1 0 5 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1\n4 2 0 five 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1\n"
        );
        assert_eq!(
            parse(&text, BadLines::Reject).unwrap_err().to_string(),
            "line 5: expected 18 fields, found 5 (job lines need at least 13) (use --skip-bad-lines to skip such lines)"
        );
        let t = parse(&text, BadLines::Skip).unwrap();
        assert_eq!(t.jobs.len(), 2);
        assert_eq!(
            t.skipped.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            vec![
                "line 5: expected 18 fields, found 5 (job lines need at least 13)",
                "line 7: field 4 (\"five\") is not a number"
            ]
        );
    }

    #[test]
    fn empty_and_impossible_traces_are_clear_errors() {
        assert_eq!(parse(HEAD, BadLines::Reject), Err(TraceError::Empty));
        let wide = format!("{HEAD}1 0 0 5 20 -1 -1 20 10 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert_eq!(
            parse(&wide, BadLines::Reject).unwrap_err().to_string(),
            "no job of the trace can run on the machine (4 nodes of 2 CPUs): 0 with run time <= 0, 0 with no processors, 1 wider than the machine"
        );
    }
}
