//! `muster explain JOBID`: why a job waits, in plain words, with the
//! numbers behind it (not a Slurm command: Slurm has only the reason code).
//!
//! ```text
//! controller --Explain--> JobExplanation --render()--> text
//! ```

use crate::common::fmt_time;
use model::{JobState, PendingReason, TimeLimit, Timestamp};
use proto::{CtldRequest, CtldResponse, JobExplanation};

const USAGE: &str = "Usage: muster explain JOBID\n";

/// Most nodes listed before "and N more".
const MAX_NODES_SHOWN: usize = 12;

/// What a reason code means, in words.
fn reason_words(reason: PendingReason) -> String {
    match reason {
        PendingReason::Resources => "the resources it needs are in use by running jobs".to_string(),
        PendingReason::Priority => {
            "jobs with higher priority are queued ahead of it for the same resources".to_string()
        }
        PendingReason::Dependency => "its dependency is not satisfied yet".to_string(),
        PendingReason::JobHeldUser => {
            "it is held by its user (`scontrol release` lets it run)".to_string()
        }
        PendingReason::JobHeldAdmin => "it is held by an administrator".to_string(),
        PendingReason::BeginTime => "its begin time (--begin) has not come".to_string(),
        PendingReason::PartitionConfig => {
            "it asks for more than its partition has (nodes, CPUs or memory)".to_string()
        }
        PendingReason::PartitionNodeLimit => {
            "its node count is more than the partition has, or outside its MinNodes/MaxNodes"
                .to_string()
        }
        PendingReason::PartitionTimeLimit => {
            "its time limit is above the partition's MaxTime".to_string()
        }
        PendingReason::PartitionDown => "its partition is DOWN".to_string(),
        PendingReason::PartitionInactive => "its partition is INACTIVE".to_string(),
        PendingReason::NodesDown => {
            "the nodes that could run it are down, drained or reserved".to_string()
        }
        PendingReason::ReqNodeNotAvail => {
            "a node it requires (-w) is not available, or the nodes it could use are reserved"
                .to_string()
        }
        PendingReason::Reservation => "its reservation (--reservation) has not begun".to_string(),
        PendingReason::ReservedForMaint => {
            "a maintenance reservation holds the nodes it could use before its time limit would end"
                .to_string()
        }
        PendingReason::BadConstraints => "no node has the features it asks for (-C)".to_string(),
        PendingReason::Licenses => {
            "the licenses it asks for (-L) are in use, or kept for a job of higher priority (`scontrol show licenses`)"
                .to_string()
        }
        other => format!("reason {}", other.as_slurm_str()),
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn limit_words(limit: TimeLimit) -> String {
    match limit {
        TimeLimit::Unlimited => "no time limit".to_string(),
        TimeLimit::Minutes(_) => {
            format!("a time limit of {}", model::units::format_time_limit(limit))
        }
    }
}

/// The explanation as text.
pub fn render(x: &JobExplanation, now: Timestamp) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let state = x.state.as_slurm_str();
    line(format!(
        "Job {} ({}, partition {}) is {state}.",
        x.job_id, x.user, x.partition
    ));
    line(format!(
        "It asks for {} with {}.",
        x.request,
        limit_words(x.time_limit)
    ));
    if x.state != JobState::Pending {
        if let Some(start) = x.start_time {
            line(format!(
                "It started at {} on {}.",
                fmt_time(start),
                hostlist::compress(&x.planned_nodes)
            ));
        }
        return out;
    }
    line(format!("It waits because {}.", reason_words(x.reason)));
    if !x.reservations.is_empty() {
        line(format!(
            "Reservations in its way: {} (`scontrol show reservation`).",
            x.reservations.join(", ")
        ));
    }
    match x.position {
        Some(pos) => {
            let mut s = format!(
                "Queue: {} of {} jobs the scheduler tries, in priority order, with priority {}",
                ordinal(pos),
                x.n_queued,
                x.priority
            );
            if let Some((id, prio)) = x.ahead {
                s.push_str(&format!(
                    "; job {id} just ahead has {prio} ({} more)",
                    i64::from(prio) - i64::from(x.priority)
                ));
            }
            if let Some((id, prio)) = x.first.filter(|_| pos > 2) {
                s.push_str(&format!("; the first, job {id}, has {prio}"));
            }
            s.push('.');
            line(s);
        }
        None => line("Queue: the scheduler does not try it until that changes.".to_string()),
    }
    let usable: Vec<_> = x
        .candidates
        .iter()
        .filter(|n| !n.state.contains("down") && !n.state.contains("drain"))
        .collect();
    line(format!(
        "Nodes that could run it: {} of {} in its partition{} are up.",
        usable.len(),
        x.candidates.len(),
        if x.partition.contains(',') { "s" } else { "" }
    ));
    for n in x.candidates.iter().take(MAX_NODES_SHOWN) {
        let jobs = if n.jobs.is_empty() {
            "nothing running".to_string()
        } else {
            let list: Vec<String> = n
                .jobs
                .iter()
                .map(|(id, end)| match end {
                    Some(e) => format!("job {id} until {}", fmt_time(*e)),
                    None => format!("job {id} (no time limit)"),
                })
                .collect();
            format!("running {}", list.join(", "))
        };
        line(format!(
            "  {:<12} {:<10} {}/{} CPUs in use, {jobs}",
            n.name, n.state, n.alloc_cpus, n.cpus
        ));
    }
    if x.candidates.len() > MAX_NODES_SHOWN {
        line(format!(
            "  ... and {} more",
            x.candidates.len() - MAX_NODES_SHOWN
        ));
    }
    match x.start_time {
        Some(start) => {
            // A plan over the pool (`bf_plan`) holds CPUs counted over the
            // partition, on no named nodes.
            let pooled = x.planned_nodes.is_empty();
            let mut s = if pooled {
                format!(
                    "Expected start: {}, on CPUs counted over partition {}",
                    fmt_time(start),
                    x.partition
                )
            } else {
                format!(
                    "Expected start: {} on {}",
                    fmt_time(start),
                    hostlist::compress(&x.planned_nodes)
                )
            };
            let there = if pooled {
                "in the partition that end by then"
            } else {
                "on those nodes"
            };
            match x.waits_for.first() {
                Some((id, end)) => {
                    s.push_str(&format!(
                        ", when job {id} reaches its time limit at {}",
                        fmt_time(*end)
                    ));
                    if x.waits_for.len() > 1 {
                        s.push_str(&format!(
                            " (the last of {} running jobs {there})",
                            x.waits_for.len()
                        ));
                    }
                }
                None if start > now => {
                    let ahead = if pooled {
                        "in the partition"
                    } else {
                        "on those nodes"
                    };
                    s.push_str(&format!(", after the jobs planned ahead of it {ahead}"))
                }
                None => {}
            }
            s.push_str(". Jobs that end early make it sooner.");
            line(s);
        }
        None => line(
            "Expected start: unknown. It holds no plan: a pass plans the first blocked job of \
             each partition and, by default, every blocked job of at least a quarter of one; \
             the others start where they fit without delaying those plans, shortest time limit \
             first (or in priority order with bf_order=priority). A job gets none either when \
             it cannot start within the backfill window or is not tried."
                .to_string(),
        ),
    }
    out
}

/// `muster explain JOBID`.
pub fn main(args: Vec<String>) -> i32 {
    let id = match args.as_slice() {
        [a] if a == "-h" || a == "--help" => {
            crate::common::print_stdout(USAGE);
            return 0;
        }
        [a] => match a.parse::<u32>() {
            Ok(n) => model::JobId(n),
            Err(_) => {
                eprintln!("muster explain: error: Invalid job id specified: {a}");
                return 1;
            }
        },
        _ => {
            eprint!("{USAGE}");
            return 1;
        }
    };
    let client = match client::Client::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("muster explain: error: {e}");
            return 1;
        }
    };
    match client.call(CtldRequest::Explain { job_id: id }) {
        Ok(CtldResponse::Explanation(x)) => {
            crate::common::print_stdout(&render(&x, crate::common::now()));
            0
        }
        Ok(CtldResponse::Error(e)) => {
            eprintln!("muster explain: error: {}", e.as_slurm_str());
            1
        }
        Ok(other) => {
            eprintln!("muster explain: error: unexpected answer {other:?}");
            1
        }
        Err(e) => {
            eprintln!("muster explain: error: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests;
