//! slurmdbd's shapes in the data parser v0.0.44: accounting jobs with
//! their steps, accounts, users, associations, QOS, TRES. Pure.

use super::render::{exit_code, infinite, no_val, no_val_f64, num, time};
use crate::json::{obj, strs, J};
use proto::acctdb::{AcctAccount, AcctTables, AcctUser, Assoc, Limits, Qos};
use proto::{AcctJob, AcctStep};

fn usecs(us: Option<u64>) -> J {
    let us = us.unwrap_or(0);
    obj(vec![
        ("seconds", J::from(us / 1_000_000)),
        ("microseconds", J::from(us % 1_000_000)),
    ])
}

fn tres(s: &str) -> J {
    crate::v0038::tres_list(s)
}

fn opt_tres(s: &Option<String>) -> J {
    tres(s.as_deref().unwrap_or(""))
}

fn limit(n: Option<u32>) -> J {
    n.map_or_else(infinite, num)
}

fn step(job: &AcctJob, s: &AcctStep) -> J {
    let id = match s.step {
        proto::StepId::Batch => "batch".to_string(),
        proto::StepId::Extern => "extern".to_string(),
        proto::StepId::Numbered(n) => n.to_string(),
    };
    let elapsed = match (s.start_time, s.end_time) {
        (Some(a), Some(b)) if b >= a => b - a,
        _ => 0,
    };
    let total = s
        .usage
        .user_cpu_usec
        .zip(s.usage.sys_cpu_usec)
        .map(|(u, y)| u + y);
    obj(vec![
        (
            "time",
            obj(vec![
                ("elapsed", J::from(elapsed)),
                ("end", time(s.end_time)),
                ("start", time(s.start_time)),
                ("suspended", J::Int(0)),
                ("system", usecs(s.usage.sys_cpu_usec)),
                ("total", usecs(total)),
                ("user", usecs(s.usage.user_cpu_usec)),
            ]),
        ),
        ("exit_code", exit_code(&s.exit_code, s.end_time.is_some())),
        (
            "nodes",
            obj(vec![
                ("count", J::from(s.n_nodes)),
                ("range", J::from(&s.nodes)),
                (
                    "list",
                    strs(&hostlist::expand(&s.nodes).unwrap_or_default()),
                ),
            ]),
        ),
        ("tasks", obj(vec![("count", J::from(s.n_tasks))])),
        ("state", strs(&[s.state.as_slurm_str()])),
        (
            "step",
            obj(vec![
                ("id", J::from(format!("{}.{id}", job.job_id.0))),
                ("name", J::from(&s.name)),
            ]),
        ),
        (
            "tres",
            obj(vec![
                (
                    "requested",
                    obj(vec![
                        ("max", J::Arr(vec![])),
                        ("min", J::Arr(vec![])),
                        ("average", J::Arr(vec![])),
                        ("total", J::Arr(vec![])),
                    ]),
                ),
                (
                    "consumed",
                    obj(vec![
                        ("max", J::Arr(vec![])),
                        ("min", J::Arr(vec![])),
                        ("average", J::Arr(vec![])),
                        ("total", J::Arr(vec![])),
                    ]),
                ),
                ("allocated", tres(&s.alloc_tres)),
            ]),
        ),
    ])
}

/// One `job` of `GET /slurmdb/v0.0.44/jobs` and `job/{id}`.
pub fn job(j: &AcctJob, group: &str, kill_user: Option<&str>) -> J {
    let elapsed = match (j.start_time, j.end_time) {
        (Some(a), Some(b)) if b >= a => b - a,
        _ => 0,
    };
    let user_us: u64 = j.steps.iter().filter_map(|s| s.usage.user_cpu_usec).sum();
    let sys_us: u64 = j.steps.iter().filter_map(|s| s.usage.sys_cpu_usec).sum();
    let started = j.start_time.is_some() && !j.nodes.is_empty() && j.nodes != "None assigned";
    let time_limit = match j.time_limit {
        model::TimeLimit::Minutes(m) => num(m),
        model::TimeLimit::Unlimited => infinite(),
    };
    obj(vec![
        ("account", J::from(&j.account)),
        (
            "comment",
            obj(vec![
                ("administrator", J::from("")),
                ("job", J::from(j.comment.clone().unwrap_or_default())),
                ("system", J::from("")),
            ]),
        ),
        (
            "allocation_nodes",
            J::from(if started { j.n_nodes } else { 0 }),
        ),
        (
            "array",
            obj(vec![
                ("job_id", J::from(j.array_job_id.unwrap_or(0))),
                (
                    "limits",
                    obj(vec![(
                        "max",
                        obj(vec![("running", obj(vec![("tasks", J::Int(0))]))]),
                    )]),
                ),
                ("task_id", no_val(j.array_task_id.map(i64::from))),
                (
                    "task",
                    J::from(j.array_task_str.clone().unwrap_or_default()),
                ),
            ]),
        ),
        (
            "association",
            obj(vec![
                ("account", J::from(&j.account)),
                ("cluster", J::from(&j.cluster)),
                ("partition", J::from("")),
                ("user", J::from(&j.user)),
            ]),
        ),
        ("cluster", J::from(&j.cluster)),
        ("constraints", J::from("")),
        ("container", J::from(j.container.as_deref().unwrap_or(""))),
        (
            "derived_exit_code",
            exit_code(&model::ExitCode::default(), j.end_time.is_some()),
        ),
        (
            "time",
            obj(vec![
                ("elapsed", J::from(elapsed)),
                (
                    "eligible",
                    J::from(j.eligible_time.unwrap_or(j.submit_time)),
                ),
                ("end", J::from(j.end_time.unwrap_or(0))),
                ("planned", no_val(None)),
                ("start", J::from(j.start_time.unwrap_or(0))),
                ("submission", J::from(j.submit_time)),
                ("suspended", J::from(j.suspended_secs)),
                ("system", usecs(Some(sys_us))),
                ("limit", time_limit),
                ("total", usecs(Some(user_us + sys_us))),
                ("user", usecs(Some(user_us))),
            ]),
        ),
        ("exit_code", exit_code(&j.exit_code, j.end_time.is_some())),
        ("extra", J::from("")),
        ("failed_node", J::from("")),
        ("flags", J::Arr(vec![])),
        ("group", J::from(group)),
        (
            "het",
            obj(vec![("job_id", J::Int(0)), ("job_offset", no_val(None))]),
        ),
        ("job_id", J::from(j.job_id.0)),
        ("name", J::from(&j.name)),
        ("licenses", J::from("")),
        ("mcs", obj(vec![("label", J::from(""))])),
        (
            "nodes",
            J::from(if j.nodes.is_empty() {
                "None assigned".to_string()
            } else {
                j.nodes.clone()
            }),
        ),
        ("partition", J::from(&j.partition)),
        ("hold", J::Bool(false)),
        ("priority", num(j.priority)),
        ("qos", J::from(&j.qos)),
        (
            "required",
            obj(vec![
                ("CPUs", J::from(j.n_cpus)),
                ("memory_per_cpu", no_val(None)),
                ("memory_per_node", no_val(None)),
            ]),
        ),
        ("kill_request_user", J::from(kill_user.unwrap_or_default())),
        ("restart_cnt", J::Int(0)),
        (
            "reservation",
            obj(vec![("id", J::Int(0)), ("name", J::from(""))]),
        ),
        (
            "state",
            obj(vec![
                ("current", strs(&[j.state.as_slurm_str()])),
                ("reason", J::from(&j.reason)),
            ]),
        ),
        (
            "steps",
            J::Arr(j.steps.iter().map(|s| step(j, s)).collect()),
        ),
        ("submit_line", J::from(&j.submit_line)),
        (
            "tres",
            obj(vec![
                ("allocated", tres(&j.alloc_tres)),
                ("requested", tres(&j.req_tres)),
            ]),
        ),
        ("user", J::from(&j.user)),
        (
            "wckey",
            obj(vec![("wckey", J::from("")), ("flags", J::Arr(vec![]))]),
        ),
        ("working_directory", J::from(&j.work_dir)),
    ])
}

/// `assoc_short`: `{account, cluster, partition, user, id}`.
pub fn assoc_short(a: &Assoc) -> J {
    obj(vec![
        ("account", J::from(&a.account)),
        ("cluster", J::from(&a.cluster)),
        ("partition", J::from(&a.partition)),
        ("user", J::from(&a.user)),
        ("id", J::from(a.id)),
    ])
}

/// One `account`.
pub fn account(t: &AcctTables, a: &AcctAccount) -> J {
    obj(vec![
        (
            "associations",
            J::Arr(
                t.assocs
                    .iter()
                    .filter(|x| x.account == a.name)
                    .map(assoc_short)
                    .collect(),
            ),
        ),
        ("coordinators", J::Arr(vec![])),
        ("description", J::from(&a.description)),
        ("name", J::from(&a.name)),
        ("organization", J::from(&a.organization)),
        ("flags", J::Arr(vec![])),
    ])
}

/// One `user`.
pub fn user(t: &AcctTables, u: &AcctUser) -> J {
    obj(vec![
        ("administrator_level", strs(&[u.admin_level.as_str()])),
        (
            "associations",
            J::Arr(
                t.assocs
                    .iter()
                    .filter(|x| x.user == u.name)
                    .map(assoc_short)
                    .collect(),
            ),
        ),
        ("coordinators", J::Arr(vec![])),
        (
            "default",
            obj(vec![
                ("account", J::from(&u.default_account)),
                ("wckey", J::from("")),
            ]),
        ),
        ("flags", J::Arr(vec![])),
        ("name", J::from(&u.name)),
        ("wckeys", J::Arr(vec![])),
    ])
}

/// One `assoc`.
pub fn assoc(a: &Assoc) -> J {
    let l: &Limits = &a.limits;
    obj(vec![
        ("accounting", J::Arr(vec![])),
        ("account", J::from(&a.account)),
        ("cluster", J::from(&a.cluster)),
        ("comment", J::from("")),
        (
            "default",
            obj(vec![(
                "qos",
                J::from(a.default_qos.clone().unwrap_or_default()),
            )]),
        ),
        ("flags", J::Arr(vec![])),
        (
            "max",
            obj(vec![
                (
                    "jobs",
                    obj(vec![
                        (
                            "per",
                            obj(vec![
                                ("count", limit(l.max_jobs)),
                                ("submitted", limit(l.max_submit_jobs)),
                                ("wall_clock", limit(l.max_wall)),
                            ]),
                        ),
                        ("active", limit(l.grp_jobs)),
                        ("total", limit(l.grp_submit_jobs)),
                    ]),
                ),
                (
                    "tres",
                    obj(vec![
                        ("total", opt_tres(&l.grp_tres)),
                        (
                            "per",
                            obj(vec![
                                ("job", opt_tres(&l.max_tres_per_job)),
                                ("node", J::Arr(vec![])),
                            ]),
                        ),
                    ]),
                ),
                (
                    "per",
                    obj(vec![(
                        "account",
                        obj(vec![("wall_clock", limit(l.grp_wall))]),
                    )]),
                ),
            ]),
        ),
        ("id", J::from(a.id)),
        ("is_default", J::Bool(false)),
        ("parent_account", J::from(&a.parent)),
        ("partition", J::from(&a.partition)),
        ("priority", no_val(a.priority.map(i64::from))),
        ("qos", strs(&a.qos)),
        ("shares_raw", J::from(a.shares)),
        ("user", J::from(&a.user)),
    ])
}

/// One `qos`.
pub fn qos(q: &Qos) -> J {
    let l = &q.limits;
    let mode = match q.preempt_mode.to_ascii_lowercase().as_str() {
        "off" => "DISABLED".to_string(),
        other => other.to_ascii_uppercase(),
    };
    obj(vec![
        ("description", J::from(&q.description)),
        (
            "flags",
            J::Arr(
                q.flags
                    .iter()
                    .map(|f| J::from(f.to_ascii_uppercase()))
                    .collect(),
            ),
        ),
        ("id", J::from(q.id)),
        (
            "limits",
            obj(vec![
                ("grace_time", J::from(q.grace_time)),
                (
                    "max",
                    obj(vec![
                        (
                            "jobs",
                            obj(vec![(
                                "active_jobs",
                                obj(vec![(
                                    "per",
                                    obj(vec![("account", infinite()), ("user", limit(l.max_jobs))]),
                                )]),
                            )]),
                        ),
                        (
                            "tres",
                            obj(vec![
                                ("total", opt_tres(&l.grp_tres)),
                                (
                                    "per",
                                    obj(vec![
                                        ("job", opt_tres(&l.max_tres_per_job)),
                                        ("user", opt_tres(&l.max_tres_per_user)),
                                    ]),
                                ),
                            ]),
                        ),
                        (
                            "wall_clock",
                            obj(vec![(
                                "per",
                                obj(vec![("qos", limit(l.grp_wall)), ("job", limit(l.max_wall))]),
                            )]),
                        ),
                    ]),
                ),
                ("factor", no_val_f64(None)),
            ]),
        ),
        ("name", J::from(&q.name)),
        (
            "preempt",
            obj(vec![
                ("list", strs(&q.preempt)),
                ("mode", strs(&[mode.as_str()])),
                ("exempt_time", no_val(q.preempt_exempt_time.map(i64::from))),
            ]),
        ),
        ("priority", num(q.priority)),
        ("usage_factor", no_val_f64(Some(q.usage_factor))),
        ("usage_threshold", no_val_f64(None)),
    ])
}

/// `stats_rec` (`GET /slurmdb/v0.0.44/diag`): muster's accounting runs in
/// the controller, so its start is the controller's and slurmdbd's own
/// RPC lists are empty.
pub fn diag(time_start: i64) -> J {
    obj(vec![
        ("time_start", J::Int(time_start)),
        ("RPCs", J::Arr(vec![])),
        ("users", J::Arr(vec![])),
    ])
}
