//! The data parser v0.0.44's shapes (slurmrestd 25.11), from the
//! controller's answers to [`J`] values. Pure.
//!
//! What changed since v0.0.38, and is written here: numbers that may be
//! unset or unlimited are `{"set", "infinite", "number"}` objects
//! ([`no_val`]); states and flags are arrays of strings (`job_state:
//! ["RUNNING"]`); exit codes are `{"status": [...], "return_code",
//! "signal": {"id", "name"}}`; answers carry their results first, then
//! `meta` (with `plugin.data_parser`, `client`, `slurm.version` as
//! strings), `errors` and `warnings`. Fields muster does not keep are left
//! out (every property of Slurm's v0.0.44 schemas is optional) or written
//! unset.

use crate::json::{obj, strs, J};
use model::{JobState, NodeBase, TimeLimit};
use proto::resv::ResvInfo;
use proto::{Identity, JobInfo, LicenseInfo, NodeInfo, PartitionInfo};

/// The data parser.
pub const VERSION: &str = "v0.0.44";

/// The Slurm release v0.0.44 is the newest parser of, as `meta` names it.
pub const SLURM_RELEASE: (&str, &str, &str) = ("25", "11", "0");

/// A number that may be unset: `{"set", "infinite", "number"}`.
pub fn no_val(n: Option<i64>) -> J {
    obj(vec![
        ("set", J::Bool(n.is_some())),
        ("infinite", J::Bool(false)),
        ("number", J::Int(n.unwrap_or(0))),
    ])
}

/// A number that is unlimited.
pub fn infinite() -> J {
    obj(vec![
        ("set", J::Bool(false)),
        ("infinite", J::Bool(true)),
        ("number", J::Int(0)),
    ])
}

/// A set number.
pub fn num<T: Into<i64>>(n: T) -> J {
    no_val(Some(n.into()))
}

/// A floating-point number that may be unset.
pub fn no_val_f64(n: Option<f64>) -> J {
    obj(vec![
        ("set", J::Bool(n.is_some())),
        ("infinite", J::Bool(false)),
        ("number", J::Float(n.unwrap_or(0.0))),
    ])
}

/// A time stamp: unset when 0 or missing.
pub fn time(t: Option<i64>) -> J {
    no_val(t.filter(|&t| t > 0))
}

fn minutes(t: TimeLimit) -> J {
    match t {
        TimeLimit::Minutes(m) => num(m),
        TimeLimit::Unlimited => infinite(),
    }
}

fn u64_no_val(n: Option<u64>) -> J {
    no_val(n.map(|x| i64::try_from(x).unwrap_or(i64::MAX)))
}

/// `meta`: slurmctld's or slurmdbd's plugin, the client (the caller), the
/// cluster.
pub fn meta(db: bool, cluster: &str, who: &Identity) -> J {
    let (ty, name) = if db {
        ("openapi/slurmdbd", "Slurm OpenAPI slurmdbd")
    } else {
        ("openapi/slurmctld", "Slurm OpenAPI slurmctld")
    };
    let (major, minor, micro) = SLURM_RELEASE;
    obj(vec![
        (
            "plugin",
            obj(vec![
                ("type", J::from(ty)),
                ("name", J::from(name)),
                ("data_parser", J::from(format!("data_parser/{VERSION}"))),
                ("accounting_storage", J::from("accounting_storage/slurmdbd")),
            ]),
        ),
        (
            "client",
            obj(vec![
                ("source", J::from(who.host.as_str())),
                ("user", J::from(who.user.as_str())),
                ("group", J::from(crate::api::group_name(who.gid))),
            ]),
        ),
        ("command", J::Arr(vec![])),
        (
            "slurm",
            obj(vec![
                (
                    "version",
                    obj(vec![
                        ("major", J::from(major)),
                        ("micro", J::from(micro)),
                        ("minor", J::from(minor)),
                    ]),
                ),
                ("release", J::from(format!("{major}.{minor}.{micro}"))),
                ("cluster", J::from(cluster)),
            ]),
        ),
    ])
}

/// `{...result, "meta", "errors", "warnings"}`.
pub fn answer(meta: J, result: Vec<(&str, J)>, errors: Vec<J>) -> J {
    let mut pairs: Vec<(&str, J)> = result;
    pairs.push(("meta", meta));
    pairs.push(("errors", J::Arr(errors)));
    pairs.push(("warnings", J::Arr(vec![])));
    obj(pairs)
}

/// One error.
pub fn error(description: &str, number: i64, text: &str, source: &str) -> J {
    obj(vec![
        ("description", J::from(description)),
        ("error_number", J::Int(number)),
        ("error", J::from(text)),
        ("source", J::from(source)),
    ])
}

fn opt_str(s: &Option<String>) -> J {
    J::from(s.clone().unwrap_or_default())
}

fn nodelist(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        hostlist::compress(names)
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "",
    }
}

/// `process_exit_code_verbose`; `ended` false: not known yet (PENDING).
pub fn exit_code(e: &model::ExitCode, ended: bool) -> J {
    if !ended {
        return obj(vec![
            ("status", strs(&["PENDING"])),
            ("return_code", no_val(None)),
            (
                "signal",
                obj(vec![("id", no_val(None)), ("name", J::from(""))]),
            ),
        ]);
    }
    let status = if e.signal != 0 {
        "SIGNALED"
    } else if e.code != 0 {
        "ERROR"
    } else {
        "SUCCESS"
    };
    obj(vec![
        ("status", strs(&[status])),
        ("return_code", num(e.code)),
        (
            "signal",
            obj(vec![
                (
                    "id",
                    if e.signal != 0 {
                        num(e.signal)
                    } else {
                        no_val(None)
                    },
                ),
                ("name", J::from(signal_name(e.signal))),
            ]),
        ),
    ])
}

/// `job_res`: the allocation, node by node, with each core's state.
fn job_resources(j: &JobInfo, topo: crate::v0038::Topology<'_>) -> J {
    let mut nodes = Vec::new();
    for (i, name) in j.nodes.iter().enumerate() {
        let cpus = j.cpus_per_node.get(i).copied().unwrap_or(0);
        let ids: Vec<u32> = match j.cpu_ids_per_node.get(i) {
            Some(ids) if !ids.is_empty() => ids.clone(),
            _ => (0..cpus).collect(),
        };
        let (cores, threads) = topo
            .iter()
            .find(|(n, ..)| n == name)
            .map_or((cpus.max(1), 1), |(_, _, c, t)| (*c, *t));
        let (cores, threads) = (cores.max(1), threads.max(1));
        let mut sockets: Vec<(u32, Vec<u32>)> = Vec::new();
        for id in ids {
            let core_global = id / threads;
            let (socket, core) = (core_global / cores, core_global % cores);
            match sockets.iter_mut().find(|(s, _)| *s == socket) {
                Some((_, cs)) if cs.contains(&core) => {}
                Some((_, cs)) => cs.push(core),
                None => sockets.push((socket, vec![core])),
            }
        }
        let mem = j
            .mem_per_node
            .or_else(|| j.mem_per_cpu.map(|m| m * u64::from(cpus)))
            .unwrap_or(0);
        nodes.push(obj(vec![
            ("index", J::from(i as u64)),
            ("name", J::from(name)),
            (
                "cpus",
                obj(vec![("count", J::from(cpus)), ("used", J::Int(0))]),
            ),
            (
                "memory",
                obj(vec![("used", J::Int(0)), ("allocated", J::from(mem))]),
            ),
            (
                "sockets",
                J::Arr(
                    sockets
                        .into_iter()
                        .map(|(s, cs)| {
                            obj(vec![
                                ("index", J::from(s)),
                                (
                                    "cores",
                                    J::Arr(
                                        cs.into_iter()
                                            .map(|c| {
                                                obj(vec![
                                                    ("index", J::from(c)),
                                                    ("status", strs(&["ALLOCATED"])),
                                                ])
                                            })
                                            .collect(),
                                    ),
                                ),
                            ])
                        })
                        .collect(),
                ),
            ),
        ]));
    }
    obj(vec![
        ("select_type", strs(&["CPU"])),
        (
            "nodes",
            obj(vec![
                ("count", J::from(j.nodes.len() as u64)),
                ("select_type", strs(&["AVAILABLE"])),
                ("list", J::from(nodelist(&j.nodes))),
                ("whole", J::Bool(j.exclusive)),
                ("allocation", J::Arr(nodes)),
            ]),
        ),
        ("cpus", J::from(j.num_cpus)),
        ("threads_per_core", no_val(None)),
    ])
}

/// The states of a job: its state and, while it completes, COMPLETING.
fn job_state(j: &JobInfo) -> J {
    let mut states = vec![j.state.as_slurm_str()];
    if j.completing {
        states.push("COMPLETING");
    }
    strs(&states)
}

/// One `job_info` of `GET /slurm/v0.0.44/jobs` and `job/{id}`.
pub fn job(j: &JobInfo, cluster: &str, topo: crate::v0038::Topology<'_>) -> J {
    let started = j.start_time.is_some() && j.state != JobState::Pending;
    let ended = j.state.is_finished();
    let mut v = obj(vec![
        ("account", J::from(&j.account)),
        ("accrue_time", time(Some(j.eligible_time))),
        ("admin_comment", J::from("")),
        ("allocating_node", J::from(&j.alloc_node)),
        ("array_job_id", num(j.array_job_id.unwrap_or(0))),
        ("array_task_id", no_val(j.array_task_id.map(i64::from))),
        ("array_max_tasks", num(j.array_max_tasks.unwrap_or(0))),
        ("array_task_string", opt_str(&j.array_task_str)),
        ("batch_flag", J::Bool(true)),
        ("batch_host", opt_str(&j.batch_host)),
        ("flags", J::Arr(vec![])),
        ("cluster", J::from(cluster)),
        ("command", opt_str(&j.command)),
        ("comment", opt_str(&j.comment)),
        ("container", J::from(j.container.as_deref().unwrap_or(""))),
        ("contiguous", J::Bool(false)),
        (
            "billable_tres",
            no_val_f64(started.then_some(f64::from(j.num_cpus))),
        ),
        ("cpus_per_task", num(j.cpus_per_task.max(1))),
        ("deadline", time(j.deadline)),
        ("dependency", opt_str(&j.dependency)),
        (
            "derived_exit_code",
            exit_code(&model::ExitCode::default(), ended),
        ),
        ("eligible_time", time(Some(j.eligible_time))),
        ("end_time", time(j.end_time)),
        ("excluded_nodes", J::from(nodelist(&j.exc_nodes))),
        ("exit_code", exit_code(&j.exit_code, ended)),
        ("features", opt_str(&j.features)),
        ("gres_detail", strs(&j.gres_idx_per_node)),
        ("group_id", J::from(j.gid)),
        ("group_name", J::from(&j.group)),
        ("job_id", J::from(j.job_id.0)),
    ]);
    if !j.nodes.is_empty() && started {
        v.push("job_resources", job_resources(j, topo));
    }
    let rest = vec![
        ("job_state", job_state(j)),
        ("last_sched_evaluation", time(j.last_sched_eval)),
        ("licenses", opt_str(&j.licenses)),
        ("mail_user", opt_str(&j.mail_user)),
        ("max_nodes", num(j.max_nodes.unwrap_or(0))),
        ("name", J::from(&j.name)),
        ("nodes", J::from(nodelist(&j.nodes))),
        ("nice", J::from(j.nice)),
        ("tasks_per_node", no_val(j.ntasks_per_node.map(i64::from))),
        ("cpus", num(j.num_cpus)),
        ("node_count", num(j.num_nodes)),
        ("tasks", num(j.num_tasks)),
        ("partition", J::from(&j.partition)),
        ("memory_per_cpu", u64_no_val(j.mem_per_cpu)),
        ("memory_per_node", u64_no_val(j.mem_per_node)),
        ("minimum_cpus_per_node", num(j.cpus_per_task.max(1))),
        ("pre_sus_time", u64_no_val(Some(j.secs_pre_suspend))),
        ("hold", J::Bool(j.reason.is_hold())),
        ("priority", num(j.priority)),
        ("qos", J::from(&j.qos)),
        ("reboot", J::Bool(false)),
        ("required_nodes", J::from(nodelist(&j.req_nodes))),
        ("requeue", J::Bool(j.requeue)),
        ("restart_cnt", J::from(j.restarts)),
        ("resv_name", opt_str(&j.reservation)),
        ("scheduled_nodes", J::from(nodelist(&j.sched_nodes))),
        (
            "start_time",
            time(if started { j.start_time } else { None }),
        ),
        ("state_description", J::from("")),
        ("state_reason", J::from(j.reason.as_slurm_str())),
        ("standard_input", J::from(&j.stdin)),
        (
            "standard_output",
            J::from(j.stdout_pattern.clone().unwrap_or_else(|| j.stdout.clone())),
        ),
        (
            "standard_error",
            J::from(j.stderr_pattern.clone().unwrap_or_else(|| j.stderr.clone())),
        ),
        ("stdin_expanded", J::from(&j.stdin)),
        ("stdout_expanded", J::from(&j.stdout)),
        ("stderr_expanded", J::from(&j.stderr)),
        ("submit_time", time(Some(j.submit_time))),
        ("submit_line", J::from(&j.submit_line)),
        ("suspend_time", time(j.suspend_time)),
        ("time_limit", minutes(j.time_limit)),
        (
            "time_minimum",
            j.time_min.map_or_else(|| no_val(None), minutes),
        ),
        ("tres_per_job", opt_str(&j.tres_per_job)),
        ("tres_per_node", opt_str(&j.tres_per_node)),
        ("tres_per_task", opt_str(&j.tres_per_task)),
        ("tres_req_str", J::from(&j.tres)),
        (
            "tres_alloc_str",
            J::from(if started {
                j.tres.clone()
            } else {
                String::new()
            }),
        ),
        ("user_id", J::from(j.uid)),
        ("user_name", J::from(&j.user)),
        ("current_working_directory", J::from(&j.work_dir)),
    ];
    for (k, x) in rest {
        v.push(k, x);
    }
    v
}

fn node_states(n: &NodeInfo) -> J {
    let base = match n.state.base {
        NodeBase::Unknown => "UNKNOWN",
        NodeBase::Down => "DOWN",
        NodeBase::Idle => "IDLE",
        NodeBase::Allocated => "ALLOCATED",
        NodeBase::Mixed => "MIXED",
        NodeBase::Future => "FUTURE",
    };
    let st = &n.state;
    let mut states = vec![base];
    for (on, name) in [
        (st.drain, "DRAIN"),
        (st.completing, "COMPLETING"),
        (st.fail, "FAIL"),
        (st.not_responding, "NOT_RESPONDING"),
        (st.powered_down, "POWERED_DOWN"),
        (st.powering_up, "POWERING_UP"),
        (st.powering_down, "POWERING_DOWN"),
        (st.reboot, "REBOOT_REQUESTED"),
    ] {
        if on {
            states.push(name);
        }
    }
    strs(&states)
}

fn gres_list(g: &[model::Gres]) -> String {
    g.iter()
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// One `node` of `GET /slurm/v0.0.44/nodes` and `node/{name}`.
pub fn node(n: &NodeInfo, cluster: &str) -> J {
    let mut tres = format!("cpu={},mem={}M,billing={}", n.cpus, n.real_memory, n.cpus);
    for g in &n.gres {
        tres.push_str(&format!(",gres/{}={}", g.name, g.count));
    }
    let tres_used = if n.alloc_cpus == 0 {
        String::new()
    } else {
        let mut s = format!("cpu={},mem={}M", n.alloc_cpus, n.alloc_mem);
        for g in n.gres_used.iter().filter(|g| g.count > 0) {
            s.push_str(&format!(",gres/{}={}", g.name, g.count));
        }
        s
    };
    obj(vec![
        ("architecture", opt_str(&n.arch)),
        ("burstbuffer_network_address", J::from("")),
        ("boards", J::from(n.boards)),
        ("boot_time", time(n.boot_time)),
        ("cluster_name", J::from(cluster)),
        ("cores", J::from(n.cores_per_socket)),
        ("specialized_cores", J::Int(0)),
        ("cpu_binding", J::Int(0)),
        (
            "cpu_load",
            J::Int(n.cpu_load.map_or(0, |l| (l * 100.0).round() as i64)),
        ),
        ("free_mem", u64_no_val(n.free_mem)),
        ("cpus", J::from(n.cpus)),
        ("effective_cpus", J::from(n.cpus)),
        ("specialized_cpus", J::from("")),
        ("extra", J::from("")),
        ("features", strs(&n.features)),
        ("active_features", strs(&n.features)),
        ("gres", J::from(gres_list(&n.gres))),
        ("gres_drained", J::from("N/A")),
        ("gres_used", J::from(gres_list(&n.gres_used))),
        ("last_busy", time(n.last_busy)),
        ("mcs_label", J::from("")),
        ("specialized_memory", J::Int(0)),
        ("name", J::from(&n.name)),
        ("next_state_after_reboot", J::Arr(vec![])),
        ("address", J::from(&n.addr)),
        ("hostname", J::from(&n.hostname)),
        ("state", node_states(n)),
        ("operating_system", opt_str(&n.os)),
        ("owner", J::from("")),
        ("partitions", strs(&n.partitions)),
        ("port", J::from(u32::from(n.port))),
        ("real_memory", J::from(n.real_memory)),
        ("comment", J::from("")),
        ("reason", opt_str(&n.reason)),
        ("reason_changed_at", time(n.reason_time)),
        ("reason_set_by_user", opt_str(&n.reason_user)),
        ("resume_after", no_val(None)),
        ("reservation", J::from("")),
        ("alloc_memory", J::from(n.alloc_mem)),
        ("alloc_cpus", J::from(n.alloc_cpus)),
        (
            "alloc_idle_cpus",
            J::from(n.cpus.saturating_sub(n.alloc_cpus)),
        ),
        ("tres_used", J::from(tres_used)),
        ("tres_weighted", J::Float(f64::from(n.alloc_cpus))),
        ("slurmd_start_time", time(n.slurmd_start_time)),
        ("sockets", J::from(n.sockets)),
        ("threads", J::from(n.threads_per_core)),
        ("temporary_disk", J::from(n.tmp_disk)),
        ("weight", J::from(n.weight)),
        ("tres", J::from(tres)),
        ("version", opt_str(&n.version)),
    ])
}

/// One `partition_info` of `GET /slurm/v0.0.44/partitions`.
pub fn partition(p: &PartitionInfo, cluster: &str) -> J {
    let opt_u64 = |x: Option<u64>| u64_no_val(x);
    obj(vec![
        (
            "nodes",
            obj(vec![
                ("allowed_allocation", J::from("")),
                ("configured", J::from(nodelist(&p.nodes))),
                ("total", J::from(p.total_nodes)),
            ]),
        ),
        (
            "accounts",
            obj(vec![
                (
                    "allowed",
                    J::from(p.allow_accounts.as_deref().unwrap_or_default().join(",")),
                ),
                ("deny", J::from("")),
            ]),
        ),
        (
            "groups",
            obj(vec![(
                "allowed",
                J::from(p.allow_groups.as_deref().unwrap_or_default().join(",")),
            )]),
        ),
        (
            "qos",
            obj(vec![
                ("allowed", J::from("")),
                ("deny", J::from("")),
                ("assigned", J::from("")),
            ]),
        ),
        ("alternate", J::from("")),
        (
            "tres",
            obj(vec![
                ("billing_weights", J::from("")),
                ("configured", J::from(&p.tres)),
            ]),
        ),
        ("cluster", J::from(cluster)),
        ("select_type", J::Arr(vec![])),
        (
            "cpus",
            obj(vec![
                ("task_binding", J::Int(0)),
                ("total", J::from(p.total_cpus)),
            ]),
        ),
        (
            "defaults",
            obj(vec![
                ("memory_per_cpu", J::from(p.def_mem_per_cpu.unwrap_or(0))),
                ("partition_memory_per_cpu", opt_u64(p.def_mem_per_cpu)),
                ("partition_memory_per_node", no_val(None)),
                ("time", p.default_time.map_or_else(|| no_val(None), minutes)),
                ("job", J::from("")),
            ]),
        ),
        ("grace_time", J::Int(0)),
        (
            "maximums",
            obj(vec![
                ("cpus_per_node", infinite()),
                ("cpus_per_socket", infinite()),
                ("memory_per_cpu", J::Int(0)),
                ("partition_memory_per_cpu", no_val(None)),
                ("partition_memory_per_node", opt_u64(p.max_mem_per_node)),
                ("nodes", p.max_nodes.map_or_else(infinite, num)),
                ("shares", J::Int(1)),
                (
                    "oversubscribe",
                    obj(vec![("jobs", J::Int(1)), ("flags", J::Arr(vec![]))]),
                ),
                ("time", minutes(p.max_time)),
                ("over_time_limit", no_val(None)),
            ]),
        ),
        ("minimums", obj(vec![("nodes", J::from(p.min_nodes))])),
        ("name", J::from(&p.name)),
        ("node_sets", J::from("")),
        (
            "priority",
            obj(vec![
                ("job_factor", J::from(p.priority_job_factor)),
                ("tier", J::from(p.priority_tier)),
            ]),
        ),
        (
            "timeouts",
            obj(vec![("resume", no_val(None)), ("suspend", no_val(None))]),
        ),
        (
            "partition",
            obj(vec![(
                "state",
                J::Arr(vec![J::from(p.state.to_ascii_uppercase())]),
            )]),
        ),
        ("suspend_time", no_val(None)),
    ])
}

/// One `reservation_info`.
pub fn reservation(r: &ResvInfo) -> J {
    let text = |s: &str| J::from(if s == "(null)" { "" } else { s });
    let flags: Vec<String> = r
        .flags
        .split(',')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    obj(vec![
        ("accounts", text(&r.accounts)),
        ("burst_buffer", J::from("")),
        ("core_count", J::from(r.core_cnt)),
        ("core_specializations", J::Arr(vec![])),
        ("end_time", time(Some(r.end))),
        ("features", J::from("")),
        ("flags", strs(&flags)),
        ("groups", J::from("")),
        ("licenses", J::from("")),
        ("max_start_delay", J::Int(0)),
        ("name", J::from(r.name.as_str())),
        ("node_count", J::from(r.node_cnt)),
        ("node_list", J::from(r.nodes.as_str())),
        ("partition", J::from(r.partition.as_deref().unwrap_or(""))),
        ("purge_completed", obj(vec![("time", no_val(None))])),
        ("start_time", time(Some(r.start))),
        ("watts", no_val(None)),
        ("tres", J::from(format!("cpu={}", r.cpu_cnt))),
        ("users", text(&r.users)),
    ])
}

/// One license.
pub fn license(l: &LicenseInfo) -> J {
    obj(vec![
        ("LicenseName", J::from(&l.name)),
        ("Total", J::from(l.total)),
        ("Used", J::from(l.used)),
        ("Free", J::from(l.total.saturating_sub(l.used + l.reserved))),
        ("Remote", J::Bool(false)),
        ("Reserved", J::from(l.reserved)),
    ])
}

/// `ping` entries.
pub fn ping(host: &str, up: bool, latency_us: u64) -> J {
    obj(vec![
        ("hostname", J::from(host)),
        ("pinged", J::from(if up { "UP" } else { "DOWN" })),
        ("latency", J::from(latency_us)),
        ("mode", J::from("primary")),
        ("primary", J::Bool(true)),
        ("responding", J::Bool(up)),
    ])
}

/// `stats_msg` (`GET /slurm/v0.0.44/diag`'s `statistics`).
pub fn diag(d: &proto::diag::DiagStats) -> J {
    let s = &d.schedule;
    let b = &d.backfill;
    let mean = |sum: u64, n: u64| sum.checked_div(n).unwrap_or(0);
    obj(vec![
        ("parts_packed", J::Int(0)),
        ("req_time", time(Some(d.req_time))),
        ("req_time_start", time(Some(d.req_time_start))),
        ("server_thread_count", J::from(d.server_thread_count)),
        ("agent_queue_size", J::from(d.agent_queue_size)),
        ("agent_count", J::from(d.agent_count)),
        ("agent_thread_count", J::from(d.agent_thread_count)),
        ("dbd_agent_queue_size", J::from(d.dbd_agent_queue_size)),
        ("gettimeofday_latency", J::Int(0)),
        ("schedule_cycle_max", J::from(s.max_cycle)),
        ("schedule_cycle_last", J::from(s.last_cycle)),
        ("schedule_cycle_sum", J::from(s.cycle_sum)),
        ("schedule_cycle_total", J::from(s.total_cycles)),
        (
            "schedule_cycle_mean",
            J::from(mean(s.cycle_sum, u64::from(s.total_cycles))),
        ),
        (
            "schedule_cycle_mean_depth",
            J::from(mean(s.depth_sum, u64::from(s.total_cycles))),
        ),
        ("schedule_cycle_per_minute", J::Int(0)),
        ("schedule_cycle_depth", J::from(s.depth_sum)),
        ("schedule_queue_length", J::from(s.last_queue_length)),
        ("jobs_submitted", J::from(d.jobs_submitted)),
        ("jobs_started", J::from(d.jobs_started)),
        ("jobs_completed", J::from(d.jobs_completed)),
        ("jobs_canceled", J::from(d.jobs_canceled)),
        ("jobs_failed", J::from(d.jobs_failed)),
        ("jobs_pending", J::from(d.jobs_pending)),
        ("jobs_running", J::from(d.jobs_running)),
        ("job_states_ts", time(Some(d.job_states_ts))),
        ("bf_backfilled_jobs", J::from(b.backfilled_jobs)),
        ("bf_last_backfilled_jobs", J::from(b.last_backfilled_jobs)),
        ("bf_backfilled_het_jobs", J::Int(0)),
        ("bf_cycle_counter", J::from(b.total_cycles)),
        (
            "bf_cycle_mean",
            J::from(mean(b.cycle_sum, u64::from(b.total_cycles))),
        ),
        (
            "bf_depth_mean",
            J::from(mean(b.depth_sum, u64::from(b.total_cycles))),
        ),
        ("bf_depth_mean_try", J::Int(0)),
        ("bf_cycle_sum", J::from(b.cycle_sum)),
        ("bf_cycle_last", J::from(b.last_cycle)),
        ("bf_cycle_max", J::from(b.max_cycle)),
        ("bf_depth_sum", J::from(b.depth_sum)),
        ("bf_queue_len", J::from(b.last_queue_length)),
        (
            "bf_queue_len_mean",
            J::from(mean(b.queue_length_sum, u64::from(b.total_cycles))),
        ),
        ("bf_queue_len_sum", J::from(b.queue_length_sum)),
        ("bf_table_size", J::from(b.table_size)),
        ("bf_table_size_mean", J::Int(0)),
        ("bf_when_last_cycle", time(Some(b.last_cycle_when))),
        ("bf_active", J::Bool(false)),
        (
            "rpcs_by_message_type",
            J::Arr(
                d.rpc_by_type
                    .iter()
                    .map(|r| {
                        obj(vec![
                            ("type_id", J::from(r.id)),
                            ("message_type", J::from(&r.name)),
                            ("count", J::from(r.count)),
                            ("queued", J::Int(0)),
                            ("dropped", J::Int(0)),
                            ("cycle_last", J::Int(0)),
                            ("cycle_max", J::Int(0)),
                            ("total_time", J::from(r.total_time)),
                            (
                                "average_time",
                                num(i64::try_from(mean(r.total_time, u64::from(r.count)))
                                    .unwrap_or(i64::MAX)),
                            ),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            "rpcs_by_user",
            J::Arr(
                d.rpc_by_user
                    .iter()
                    .map(|r| {
                        obj(vec![
                            ("user_id", J::from(r.uid)),
                            ("user", J::from(&r.user)),
                            ("count", J::from(r.count)),
                            ("total_time", J::from(r.total_time)),
                            (
                                "average_time",
                                num(i64::try_from(mean(r.total_time, u64::from(r.count)))
                                    .unwrap_or(i64::MAX)),
                            ),
                        ])
                    })
                    .collect(),
            ),
        ),
    ])
}
