//! The query parameters of `GET /slurmdb/v0.0.X/jobs` (sacct's filters):
//! those the accounting store filters on go into a `proto::AcctQuery`,
//! the rest are applied here to its answer ([`JobFilter::keeps`]). A
//! parameter muster cannot honour is refused by name, never ignored.

use proto::{AcctJob, AcctQuery};

/// The parameters taken, with their descriptions (slurmrestd's).
pub const TAKEN: &[(&str, &str)] = &[
    (
        "submit_time",
        "Filter by submission time (seconds since the epoch)",
    ),
    (
        "start_time",
        "Filter by start time (seconds since the epoch)",
    ),
    ("end_time", "Filter by end time (seconds since the epoch)"),
    ("account", "Comma delimited list of accounts to match"),
    ("cluster", "Comma delimited list of cluster to match"),
    ("cpus_max", "Filter by maximum number of CPUs"),
    ("cpus_min", "Filter by minimum number of CPUs"),
    ("skip_steps", "Do not show the job steps (true or false)"),
    (
        "disable_wait_for_result",
        "Accepted for compatibility: muster answers from its store at once",
    ),
    ("exit_code", "Filter by the job's exit code"),
    (
        "group",
        "Comma delimited list of groups (names or ids) to match",
    ),
    ("job_name", "Comma delimited list of job names to match"),
    ("nodes_max", "Filter by maximum number of nodes"),
    ("nodes_min", "Filter by minimum number of nodes"),
    ("partition", "Comma delimited list of partitions to match"),
    ("qos", "Comma delimited list of QOS to match"),
    ("reason", "Comma delimited list of pending reasons to match"),
    ("state", "Comma delimited list of states to match"),
    ("node", "Jobs that ran on any of these nodes (hostlist)"),
    ("users", "Comma delimited list of users to match"),
];

/// What the store does not filter on: applied to each record it returns.
#[derive(Clone, Debug, Default)]
pub struct JobFilter {
    submit_after: Option<i64>,
    cpus: (Option<u32>, Option<u32>),
    nodes: (Option<u32>, Option<u32>),
    exit_code: Option<i32>,
    groups: Vec<String>,
    qos: Vec<String>,
    reasons: Vec<String>,
    on_nodes: Vec<String>,
    /// `skip_steps=true`: the records are written without their steps.
    pub skip_steps: bool,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn number<T: std::str::FromStr>(k: &str, v: &str) -> Result<T, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{k}={v}: expected a number"))
}

/// The store's query and the rest of the filter for `query`'s pairs; an
/// error names the first parameter that is refused or malformed.
pub fn parse(query: &[(String, String)]) -> Result<(AcctQuery, JobFilter), String> {
    let mut q = AcctQuery::default();
    let mut f = JobFilter::default();
    for (k, v) in query {
        match k.as_str() {
            "start_time" | "end_time" | "submit_time" => {
                let Ok(t) = v.parse::<i64>() else {
                    return Err(format!(
                        "{k}={v}: only seconds since the epoch are supported here"
                    ));
                };
                match k.as_str() {
                    "start_time" => q.start = Some(t),
                    "end_time" => q.end = Some(t),
                    _ => f.submit_after = Some(t),
                }
            }
            "account" => q.accounts = list(v),
            "cluster" => q.cluster = list(v).into_iter().next(),
            "job_name" => q.names = list(v),
            "partition" => q.partitions = list(v),
            "users" => q.users = list(v),
            "state" => {
                let mut states = Vec::new();
                for s in list(v) {
                    match model::JobState::parse(&s) {
                        Some(st) => states.push(st),
                        None => return Err(format!("invalid job state {s}")),
                    }
                }
                q.states = states;
            }
            "cpus_min" => f.cpus.0 = Some(number(k, v)?),
            "cpus_max" => f.cpus.1 = Some(number(k, v)?),
            "nodes_min" => f.nodes.0 = Some(number(k, v)?),
            "nodes_max" => f.nodes.1 = Some(number(k, v)?),
            "exit_code" => f.exit_code = Some(number(k, v)?),
            "group" => f.groups = list(v),
            "qos" => f.qos = list(v),
            "reason" => f.reasons = list(v),
            "node" => {
                f.on_nodes = hostlist::expand(v).map_err(|e| format!("node={v}: {e}"))?;
            }
            "skip_steps" => {
                f.skip_steps = match v.to_ascii_lowercase().as_str() {
                    "" | "true" | "1" | "yes" => true,
                    "false" | "0" | "no" => false,
                    _ => return Err(format!("skip_steps={v}: expected true or false")),
                }
            }
            "disable_wait_for_result" => {}
            other => return Err(format!("query parameter {other} is not supported here")),
        }
    }
    Ok((q, f))
}

impl JobFilter {
    /// Whether `j` passes; `group` is the name of its group.
    pub fn keeps(&self, j: &AcctJob, group: &str) -> bool {
        let within = |n: u32, (lo, hi): (Option<u32>, Option<u32>)| {
            lo.is_none_or(|lo| lo <= n) && hi.is_none_or(|hi| n <= hi)
        };
        self.submit_after.is_none_or(|t| t <= j.submit_time)
            && within(j.n_cpus, self.cpus)
            && within(j.n_nodes, self.nodes)
            && self.exit_code.is_none_or(|c| c == j.exit_code.code)
            && (self.groups.is_empty()
                || self
                    .groups
                    .iter()
                    .any(|g| g == group || *g == j.gid.to_string()))
            && (self.qos.is_empty() || self.qos.iter().any(|x| x.eq_ignore_ascii_case(&j.qos)))
            && (self.reasons.is_empty() || self.reasons.contains(&j.reason))
            && (self.on_nodes.is_empty() || {
                let ran = hostlist::expand(&j.nodes).unwrap_or_default();
                ran.iter().any(|n| self.on_nodes.contains(n))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &str) -> Vec<(String, String)> {
        crate::parse_query(q)
    }

    #[test]
    fn filters_go_to_the_store_or_stay_here_and_others_are_refused() {
        let (q, f) = parse(&pairs(
            "state=COMPLETED&users=alice&cpus_min=2&qos=normal&node=n[1-2]&skip_steps=true",
        ))
        .unwrap();
        assert_eq!(q.users, vec!["alice"]);
        assert_eq!(q.states, vec![model::JobState::Completed]);
        assert!(f.skip_steps);
        let mut j = crate::openapi::example_acct_job();
        j.n_cpus = 1;
        j.nodes = "n2".into();
        assert!(!f.keeps(&j, "g"));
        j.n_cpus = 2;
        assert!(f.keeps(&j, "g"));
        j.nodes = "n3".into();
        assert!(!f.keeps(&j, "g"));
        assert_eq!(
            parse(&pairs("reservation=r")).unwrap_err(),
            "query parameter reservation is not supported here"
        );
        assert!(parse(&pairs("cpus_min=many")).is_err());
    }
}
