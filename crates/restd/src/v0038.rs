//! The data parser v0.0.38 (slurmrestd 22.05): what each answer holds, in
//! the order and spelling of `../shared/reference/slurm-22.05/rest_*`.
//! Pure: from the controller's answers to [`J`] values.
//!
//! Values muster does not keep are written as Slurm writes them unset
//! (`""`, `0`, `null`), listed in docs/rest.md.

use crate::json::{obj, strs, J};
use model::{JobState, NodeBase, TimeLimit};
use proto::resv::ResvInfo;
use proto::{JobInfo, LicenseInfo, NodeInfo, PartitionInfo, SlurmError};

/// The Slurm release the answers name (`scontrol version`'s).
pub const SLURM_RELEASE: &str = "22.05.8";

/// The `meta` of every answer: `plugin` is `openapi/v0.0.38` or
/// `openapi/dbv0.0.38`.
pub fn meta(db: bool) -> J {
    let (ty, name) = if db {
        ("openapi/dbv0.0.38", "Slurm OpenAPI DB v0.0.38")
    } else {
        ("openapi/v0.0.38", "Slurm OpenAPI v0.0.38")
    };
    obj(vec![
        (
            "plugin",
            obj(vec![("type", J::from(ty)), ("name", J::from(name))]),
        ),
        (
            "Slurm",
            obj(vec![
                (
                    "version",
                    obj(vec![
                        ("major", J::Int(22)),
                        ("micro", J::Int(8)),
                        ("minor", J::Int(5)),
                    ]),
                ),
                ("release", J::from(SLURM_RELEASE)),
            ]),
        ),
    ])
}

/// `{"meta", "errors": errors, ...rest}`.
pub fn answer(db: bool, errors: Vec<J>, rest: Vec<(&str, J)>) -> J {
    let mut pairs = vec![("meta", meta(db)), ("errors", J::Arr(errors))];
    pairs.extend(rest);
    obj(pairs)
}

/// One error as most handlers report it.
pub fn error(description: &str, number: i64, text: &str, source: &str) -> J {
    obj(vec![
        ("description", J::from(description)),
        ("error_number", J::Int(number)),
        ("error", J::from(text)),
        ("source", J::from(source)),
    ])
}

/// One error as the submission handler reports it (`error_code`).
pub fn submit_error(e: SlurmError) -> J {
    obj(vec![
        ("error_code", J::Int(errno(e))),
        ("error", J::from(e.as_slurm_str())),
    ])
}

/// Slurm's error number for a refusal (`slurm_errno.h`).
pub fn errno(e: SlurmError) -> i64 {
    match e {
        SlurmError::InvalidPartitionName => 2000,
        SlurmError::AccessDenied => 2002,
        SlurmError::TooManyRequestedCpus => 2005,
        SlurmError::InvalidUserId => 2010,
        SlurmError::RequestedNodeConfigUnavailable | SlurmError::MemoryNotSatisfiable => 2014,
        SlurmError::RequestedPartConfigUnavailable => 2015,
        SlurmError::NodesBusy => 2016,
        SlurmError::InvalidJobId => 2017,
        SlurmError::InvalidNodeName => 2018,
        SlurmError::TransitionStateNoUpdate => 2020,
        SlurmError::AlreadyDone => 2021,
        SlurmError::InvalidNodeState => 2028,
        SlurmError::InvalidFeature => 2029,
        SlurmError::NotSupported => 2036,
        SlurmError::Disabled => 2037,
        SlurmError::Dependency => 2038,
        SlurmError::InvalidAccount => 2045,
        SlurmError::InvalidTimeLimit => 2051,
        SlurmError::ProtocolAuthentication => 1007,
        _ => -1,
    }
}

fn time_limit(t: TimeLimit) -> J {
    match t {
        TimeLimit::Minutes(m) => J::from(m),
        TimeLimit::Unlimited => J::Null,
    }
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

/// The shape of one node, for a job's `job_resources`: (name, sockets,
/// cores per socket, threads per core).
pub type Topology<'a> = &'a [(String, u32, u32, u32)];

fn job_resources(j: &JobInfo, topo: Topology<'_>) -> J {
    let mut nodes = Vec::new();
    for (i, name) in j.nodes.iter().enumerate() {
        let cpus = j.cpus_per_node.get(i).copied().unwrap_or(0);
        let ids: Vec<u32> = match j.cpu_ids_per_node.get(i) {
            Some(ids) if !ids.is_empty() => ids.clone(),
            _ => (0..cpus).collect(),
        };
        let (_, _, cores, threads) = topo.iter().find(|(n, ..)| n == name).cloned().unwrap_or((
            String::new(),
            1,
            cpus.max(1),
            1,
        ));
        let (cores, threads) = (cores.max(1), threads.max(1));
        // socket -> cores, in order.
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
            (
                "sockets",
                J::Obj(
                    sockets
                        .into_iter()
                        .map(|(s, cs)| {
                            (
                                s.to_string(),
                                obj(vec![(
                                    "cores",
                                    J::Obj(
                                        cs.into_iter()
                                            .map(|c| (c.to_string(), J::from("allocated")))
                                            .collect(),
                                    ),
                                )]),
                            )
                        })
                        .collect(),
                ),
            ),
            ("nodename", J::from(name)),
            ("cpus_used", J::Int(0)),
            ("memory_used", J::Int(0)),
            ("memory_allocated", J::from(mem)),
        ]));
    }
    obj(vec![
        ("nodes", J::from(nodelist(&j.nodes))),
        ("allocated_cores", J::from(j.num_cpus)),
        ("allocated_hosts", J::from(j.nodes.len() as u64)),
        ("allocated_nodes", J::Arr(nodes)),
    ])
}

/// One job of `GET /slurm/v0.0.38/jobs` and `job/{id}`.
pub fn job(j: &JobInfo, cluster: &str, topo: Topology<'_>) -> J {
    let started = j.start_time.is_some() && j.state != JobState::Pending;
    let status = i64::from(j.exit_code.code) << 8 | i64::from(j.exit_code.signal);
    let mut v = obj(vec![
        ("account", J::from(&j.account)),
        ("accrue_time", J::from(j.eligible_time)),
        ("admin_comment", J::from("")),
        ("array_job_id", J::from(j.array_job_id.unwrap_or(0))),
        ("array_task_id", J::from(j.array_task_id)),
        ("array_max_tasks", J::from(j.array_max_tasks.unwrap_or(0))),
        ("array_task_string", opt_str(&j.array_task_str)),
        ("association_id", J::Int(0)),
        ("batch_features", J::from("")),
        ("batch_flag", J::Bool(true)),
        ("batch_host", opt_str(&j.batch_host)),
        ("flags", J::Arr(vec![])),
        ("burst_buffer", J::from("")),
        ("burst_buffer_state", J::from("")),
        ("cluster", J::from(cluster)),
        ("cluster_features", J::from("")),
        ("command", opt_str(&j.command)),
        ("comment", opt_str(&j.comment)),
        ("container", J::from(j.container.as_deref().unwrap_or(""))),
        ("contiguous", J::Bool(false)),
        ("core_spec", J::Null),
        ("thread_spec", J::Null),
        ("cores_per_socket", J::Null),
        (
            "billable_tres",
            if started {
                J::from(j.num_cpus)
            } else {
                J::Null
            },
        ),
        (
            "cpus_per_task",
            if j.cpus_per_task > 1 {
                J::from(j.cpus_per_task)
            } else {
                J::Null
            },
        ),
        ("cpu_frequency_minimum", J::Null),
        ("cpu_frequency_maximum", J::Null),
        ("cpu_frequency_governor", J::Null),
        ("cpus_per_tres", J::from("")),
        ("deadline", J::from(j.deadline.unwrap_or(0))),
        ("delay_boot", J::Int(0)),
        ("dependency", opt_str(&j.dependency)),
        ("derived_exit_code", J::Int(0)),
        ("eligible_time", J::from(j.eligible_time)),
        ("end_time", J::from(j.end_time.unwrap_or(0))),
        ("excluded_nodes", J::from(nodelist(&j.exc_nodes))),
        ("exit_code", J::Int(status)),
        ("features", opt_str(&j.features)),
        ("federation_origin", J::from("")),
        ("federation_siblings_active", J::from("")),
        ("federation_siblings_viable", J::from("")),
        ("gres_detail", strs(&j.gres_idx_per_node)),
        ("group_id", J::from(j.gid)),
        ("group_name", J::from(&j.group)),
        ("job_id", J::from(j.job_id.0)),
    ]);
    if !j.nodes.is_empty() && started {
        v.push("job_resources", job_resources(j, topo));
    }
    let state = j.state.as_slurm_str();
    let rest = vec![
        ("job_state", J::from(state)),
        (
            "last_sched_evaluation",
            J::from(j.last_sched_eval.unwrap_or(0)),
        ),
        ("licenses", opt_str(&j.licenses)),
        ("max_cpus", J::Int(0)),
        ("max_nodes", J::from(j.max_nodes.unwrap_or(0))),
        ("mcs_label", J::from("")),
        ("memory_per_tres", J::from("")),
        ("name", J::from(&j.name)),
        ("nodes", J::from(nodelist(&j.nodes))),
        (
            "nice",
            if j.nice == 0 {
                J::Null
            } else {
                J::from(j.nice)
            },
        ),
        ("tasks_per_core", J::Null),
        ("tasks_per_node", J::from(j.ntasks_per_node.unwrap_or(0))),
        ("tasks_per_socket", J::Null),
        ("tasks_per_board", J::Int(0)),
        ("cpus", J::from(j.num_cpus)),
        ("node_count", J::from(j.num_nodes)),
        ("tasks", J::from(j.num_tasks)),
        ("het_job_id", J::Int(0)),
        ("het_job_id_set", J::from("")),
        ("het_job_offset", J::Int(0)),
        ("partition", J::from(&j.partition)),
        ("prefer", J::from("")),
        ("memory_per_node", J::from(j.mem_per_node)),
        ("memory_per_cpu", J::from(j.mem_per_cpu)),
        ("minimum_cpus_per_node", J::from(j.cpus_per_task.max(1))),
        ("minimum_tmp_disk_per_node", J::Int(0)),
        ("preempt_time", J::Int(0)),
        ("pre_sus_time", J::from(j.secs_pre_suspend)),
        ("priority", J::from(j.priority)),
        ("profile", J::Null),
        ("qos", J::from(&j.qos)),
        ("reboot", J::Bool(false)),
        ("required_nodes", J::from(nodelist(&j.req_nodes))),
        ("requeue", J::Bool(j.requeue)),
        ("resize_time", J::Int(0)),
        ("restart_cnt", J::from(j.restarts)),
        ("resv_name", J::from("")),
        ("shared", J::Null),
        (
            "show_flags",
            strs(&["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"]),
        ),
        ("sockets_per_board", J::Int(0)),
        ("sockets_per_node", J::Null),
        (
            "start_time",
            J::from(if started {
                j.start_time.unwrap_or(0)
            } else {
                0
            }),
        ),
        ("state_description", J::from("")),
        ("state_reason", J::from(j.reason.as_slurm_str())),
        (
            "standard_error",
            J::from(j.stderr_pattern.clone().unwrap_or_default()),
        ),
        ("standard_input", J::from(&j.stdin)),
        (
            "standard_output",
            J::from(j.stdout_pattern.clone().unwrap_or_else(|| j.stdout.clone())),
        ),
        ("submit_time", J::from(j.submit_time)),
        ("suspend_time", J::from(j.suspend_time.unwrap_or(0))),
        ("system_comment", J::from("")),
        ("time_limit", time_limit(j.time_limit)),
        ("time_minimum", j.time_min.map_or(J::Int(0), time_limit)),
        ("threads_per_core", J::Null),
        ("tres_bind", J::from("")),
        ("tres_freq", J::from("")),
        ("tres_per_job", opt_str(&j.tres_per_job)),
        ("tres_per_node", opt_str(&j.tres_per_node)),
        ("tres_per_socket", J::from("")),
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
        ("wckey", J::from("")),
        ("current_working_directory", J::from(&j.work_dir)),
    ];
    for (k, x) in rest {
        v.push(k, x);
    }
    v
}

fn gres_list(g: &[model::Gres]) -> String {
    g.iter()
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A node's TRES: `cpu=2,mem=4000M,billing=2[,gres/gpu=2]`.
fn node_tres(n: &NodeInfo) -> String {
    let mut s = format!("cpu={},mem={}M,billing={}", n.cpus, n.real_memory, n.cpus);
    for g in &n.gres {
        s.push_str(&format!(",gres/{}={}", g.name, g.count));
    }
    s
}

/// One node of `GET /slurm/v0.0.38/nodes` and `node/{name}`.
pub fn node(n: &NodeInfo) -> J {
    let base = match n.state.base {
        NodeBase::Unknown => "unknown",
        NodeBase::Down => "down",
        NodeBase::Idle => "idle",
        NodeBase::Allocated => "allocated",
        NodeBase::Mixed => "mixed",
        NodeBase::Future => "future",
    };
    let mut flags = Vec::new();
    let st = &n.state;
    for (on, name) in [
        (st.drain, "DRAIN"),
        (st.completing, "COMPLETING"),
        (st.fail, "FAIL"),
        (st.not_responding, "NOT_RESPONDING"),
        (st.powered_down, "POWERED_DOWN"),
        (st.powering_up, "POWERING_UP"),
        (st.powering_down, "POWERING_DOWN"),
        (st.reboot, "REBOOT_REQUESTED"),
        (st.reboot_issued || n.reboot_issued, "REBOOT_ISSUED"),
    ] {
        if on {
            flags.push(name);
        }
    }
    let gres_used = if n.gres.is_empty() {
        "gpu:0".to_string()
    } else {
        gres_list(&n.gres_used)
    };
    let tres_used = if n.alloc_cpus == 0 {
        J::Null
    } else {
        let mut s = format!("cpu={},mem={}M", n.alloc_cpus, n.alloc_mem);
        for g in n.gres_used.iter().filter(|g| g.count > 0) {
            s.push_str(&format!(",gres/{}={}", g.name, g.count));
        }
        J::from(s)
    };
    obj(vec![
        ("architecture", opt_str(&n.arch)),
        ("burstbuffer_network_address", J::from("")),
        ("boards", J::from(n.boards)),
        ("boot_time", J::from(n.boot_time.unwrap_or(0))),
        ("comment", J::from("")),
        ("cores", J::from(n.cores_per_socket)),
        ("cpu_binding", J::Int(0)),
        (
            "cpu_load",
            J::Int(n.cpu_load.map_or(0, |l| (l * 100.0).round() as i64)),
        ),
        ("extra", J::from("")),
        ("free_memory", J::from(n.free_mem.unwrap_or(0))),
        ("cpus", J::from(n.cpus)),
        ("last_busy", J::from(n.last_busy.unwrap_or(0))),
        ("features", J::from(n.features.join(","))),
        ("active_features", J::from(n.features.join(","))),
        ("gres", J::from(gres_list(&n.gres))),
        ("gres_drained", J::from("N/A")),
        ("gres_used", J::from(gres_used)),
        ("mcs_label", J::from("")),
        ("name", J::from(&n.name)),
        ("next_state_after_reboot", J::from("invalid")),
        ("address", J::from(&n.addr)),
        ("hostname", J::from(&n.hostname)),
        ("state", J::from(base)),
        ("state_flags", strs(&flags)),
        ("next_state_after_reboot_flags", J::Arr(vec![])),
        ("operating_system", opt_str(&n.os)),
        ("owner", J::Null),
        ("partitions", strs(&n.partitions)),
        ("port", J::from(u32::from(n.port))),
        ("real_memory", J::from(n.real_memory)),
        ("reason", opt_str(&n.reason)),
        ("reason_changed_at", J::from(n.reason_time.unwrap_or(0))),
        ("reason_set_by_user", J::from(n.reason_user.clone())),
        (
            "slurmd_start_time",
            J::from(n.slurmd_start_time.unwrap_or(0)),
        ),
        ("sockets", J::from(n.sockets)),
        ("threads", J::from(n.threads_per_core)),
        ("temporary_disk", J::from(n.tmp_disk)),
        ("weight", J::from(n.weight)),
        ("tres", J::from(node_tres(n))),
        ("slurmd_version", opt_str(&n.version)),
        ("alloc_memory", J::from(n.alloc_mem)),
        ("alloc_cpus", J::from(n.alloc_cpus)),
        ("idle_cpus", J::from(n.cpus.saturating_sub(n.alloc_cpus))),
        ("tres_used", tres_used),
        ("tres_weighted", J::Float(f64::from(n.alloc_cpus))),
    ])
}

/// One partition of `GET /slurm/v0.0.38/partitions` and `partition/{name}`.
pub fn partition(p: &PartitionInfo) -> J {
    let list =
        |l: &Option<Vec<String>>| J::from(l.as_ref().map(|l| l.join(",")).unwrap_or_default());
    obj(vec![
        (
            "flags",
            if p.default {
                strs(&["default"])
            } else {
                J::Arr(vec![])
            },
        ),
        ("preemption_mode", strs(&["disabled"])),
        ("allowed_allocation_nodes", J::from("")),
        ("allowed_accounts", list(&p.allow_accounts)),
        ("allowed_groups", list(&p.allow_groups)),
        ("allowed_qos", J::from("")),
        ("alternative", J::from("")),
        ("billing_weights", J::from("")),
        ("default_memory_per_cpu", J::from(p.def_mem_per_cpu)),
        ("default_memory_per_node", J::Null),
        (
            "default_time_limit",
            p.default_time.map_or(J::Null, time_limit),
        ),
        ("denied_accounts", J::from("")),
        ("denied_qos", J::from("")),
        ("preemption_grace_time", J::Int(0)),
        ("maximum_cpus_per_node", J::Int(-1)),
        ("maximum_memory_per_cpu", J::Null),
        ("maximum_memory_per_node", J::from(p.max_mem_per_node)),
        (
            "maximum_nodes_per_job",
            p.max_nodes.map_or(J::Int(-1), J::from),
        ),
        (
            "max_time_limit",
            match p.max_time {
                TimeLimit::Minutes(m) => J::from(m),
                TimeLimit::Unlimited => J::Int(-1),
            },
        ),
        ("min nodes per job", J::from(p.min_nodes)),
        ("name", J::from(&p.name)),
        ("nodes", J::from(nodelist(&p.nodes))),
        ("over_time_limit", J::Null),
        ("priority_job_factor", J::from(p.priority_job_factor)),
        ("priority_tier", J::from(p.priority_tier)),
        ("qos", J::from("")),
        ("state", J::from(&p.state)),
        ("total_cpus", J::from(p.total_cpus)),
        ("total_nodes", J::from(p.total_nodes)),
        ("tres", J::from(&p.tres)),
    ])
}

/// One reservation as v0.0.38's `reservations` lists it.
pub fn reservation(r: &ResvInfo) -> J {
    let text = |t: &str| J::from(if t == "(null)" { "" } else { t });
    obj(vec![
        ("accounts", text(&r.accounts)),
        ("burst_buffer", J::from("")),
        ("core_count", J::from(r.core_cnt)),
        ("core_spec_cnt", J::Int(0)),
        ("end_time", J::Int(r.end)),
        ("features", J::from("")),
        (
            "flags",
            J::Arr(
                r.flags
                    .split(',')
                    .filter(|f| !f.is_empty())
                    .map(J::from)
                    .collect(),
            ),
        ),
        ("groups", J::from("")),
        ("licenses", J::from("")),
        ("max_start_delay", J::Int(0)),
        ("name", J::from(r.name.as_str())),
        ("node_count", J::from(r.node_cnt)),
        ("node_list", J::from(r.nodes.as_str())),
        ("partition", J::from(r.partition.as_deref().unwrap_or(""))),
        ("purge_completed", obj(vec![("time", J::Int(0))])),
        ("start_time", J::Int(r.start)),
        ("watts", J::Int(0)),
        ("tres", J::from(format!("cpu={}", r.cpu_cnt))),
        ("users", text(&r.users)),
    ])
}

/// One license of `GET /slurm/v0.0.38/licenses`.
pub fn license(l: &LicenseInfo) -> J {
    obj(vec![
        ("LicenseName", J::from(&l.name)),
        ("Total", J::from(l.total)),
        ("Used", J::from(l.used)),
        ("Free", J::from(l.total.saturating_sub(l.used + l.reserved))),
        ("Reserved", J::from(l.reserved)),
        ("Remote", J::Bool(false)),
    ])
}

/// `GET /slurm/v0.0.38/diag`'s `statistics`.
pub fn diag(d: &proto::diag::DiagStats) -> J {
    let s = &d.schedule;
    let b = &d.backfill;
    let mean = |sum: u64, n: u64| sum.checked_div(n).unwrap_or(0);
    obj(vec![
        ("parts_packed", J::Int(0)),
        ("req_time", J::from(d.req_time)),
        ("req_time_start", J::from(d.req_time_start)),
        ("server_thread_count", J::from(d.server_thread_count)),
        ("agent_queue_size", J::from(d.agent_queue_size)),
        ("agent_count", J::from(d.agent_count)),
        ("agent_thread_count", J::from(d.agent_thread_count)),
        ("dbd_agent_queue_size", J::from(d.dbd_agent_queue_size)),
        ("gettimeofday_latency", J::Int(0)),
        ("schedule_cycle_max", J::from(s.max_cycle)),
        ("schedule_cycle_last", J::from(s.last_cycle)),
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
        ("schedule_queue_length", J::from(s.last_queue_length)),
        ("jobs_submitted", J::from(d.jobs_submitted)),
        ("jobs_started", J::from(d.jobs_started)),
        ("jobs_completed", J::from(d.jobs_completed)),
        ("jobs_canceled", J::from(d.jobs_canceled)),
        ("jobs_failed", J::from(d.jobs_failed)),
        ("jobs_pending", J::from(d.jobs_pending)),
        ("jobs_running", J::from(d.jobs_running)),
        ("job_states_ts", J::from(d.job_states_ts)),
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
        ("bf_cycle_last", J::from(b.last_cycle)),
        ("bf_cycle_max", J::from(b.max_cycle)),
        ("bf_queue_len", J::from(b.last_queue_length)),
        (
            "bf_queue_len_mean",
            J::from(mean(b.queue_length_sum, u64::from(b.total_cycles))),
        ),
        ("bf_table_size", J::from(b.table_size)),
        ("bf_table_size_mean", J::Int(0)),
        ("bf_when_last_cycle", J::from(b.last_cycle_when)),
        ("bf_active", J::Bool(false)),
        (
            "rpcs_by_message_type",
            J::Arr(
                d.rpc_by_type
                    .iter()
                    .map(|r| {
                        obj(vec![
                            ("message_type", J::from(&r.name)),
                            ("type_id", J::from(r.id)),
                            ("count", J::from(r.count)),
                            (
                                "average_time",
                                J::from(mean(r.total_time, u64::from(r.count))),
                            ),
                            ("total_time", J::from(r.total_time)),
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
                            ("user", J::from(&r.user)),
                            ("user_id", J::from(r.uid)),
                            ("count", J::from(r.count)),
                            (
                                "average_time",
                                J::from(mean(r.total_time, u64::from(r.count))),
                            ),
                            ("total_time", J::from(r.total_time)),
                        ])
                    })
                    .collect(),
            ),
        ),
    ])
}

/// `GET /slurm/v0.0.38/ping`'s one entry.
pub fn ping(host: &str, up: bool) -> J {
    obj(vec![
        ("hostname", J::from(host)),
        ("ping", J::from(if up { "UP" } else { "DOWN" })),
        ("status", J::Int(if up { 0 } else { -1 })),
        ("mode", J::from("primary")),
    ])
}

/// A TRES string (`cpu=1,mem=500M,node=1,billing=1,gres/gpu=2`) as the
/// list slurmdbd's answers hold: `{type, name, id, count}` with Slurm's
/// ids for the standard ones (cpu 1, mem 2, energy 3, node 4, billing 5)
/// and 1001 on for GRES, memory in MB.
pub fn tres_list(s: &str) -> J {
    let mut gres_id = 1000;
    J::Arr(
        s.split(',')
            .filter(|p| !p.is_empty())
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| {
                let (ty, name) = match k.split_once('/') {
                    Some((t, n)) => (t, J::from(n)),
                    None => (k, J::Null),
                };
                let id = match ty {
                    "cpu" => 1,
                    "mem" => 2,
                    "energy" => 3,
                    "node" => 4,
                    "billing" => 5,
                    _ => {
                        gres_id += 1;
                        gres_id
                    }
                };
                let count = match v.char_indices().last() {
                    Some((i, unit @ ('K' | 'M' | 'G' | 'T'))) => {
                        let n: f64 = v[..i].parse().unwrap_or(0.0);
                        let mb = match unit {
                            'K' => n / 1024.0,
                            'M' => n,
                            'G' => n * 1024.0,
                            _ => n * 1024.0 * 1024.0,
                        };
                        mb.round() as i64
                    }
                    _ => v.parse().unwrap_or(0),
                };
                obj(vec![
                    ("type", J::from(ty)),
                    ("name", name),
                    ("id", J::Int(id)),
                    ("count", J::Int(count)),
                ])
            })
            .collect(),
    )
}

fn exit_code_obj(e: &model::ExitCode) -> J {
    let status = if e.signal != 0 {
        "SIGNALED"
    } else if e.code != 0 {
        "FAILED"
    } else {
        "SUCCESS"
    };
    let mut v = obj(vec![
        ("status", J::from(status)),
        ("return_code", J::from(e.code)),
    ]);
    if e.signal != 0 {
        v.push(
            "signal",
            obj(vec![("signal_id", J::from(e.signal)), ("name", J::Null)]),
        );
    }
    v
}

fn usecs(us: Option<u64>) -> J {
    let us = us.unwrap_or(0);
    obj(vec![
        ("seconds", J::from(us / 1_000_000)),
        ("microseconds", J::from(us % 1_000_000)),
    ])
}

fn db_step(job: &proto::AcctJob, s: &proto::AcctStep) -> J {
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
                ("end", J::from(s.end_time.unwrap_or(0))),
                ("start", J::from(s.start_time.unwrap_or(0))),
                ("suspended", J::Int(0)),
                ("system", usecs(s.usage.sys_cpu_usec)),
                ("total", usecs(total)),
                ("user", usecs(s.usage.user_cpu_usec)),
            ]),
        ),
        ("exit_code", exit_code_obj(&s.exit_code)),
        (
            "nodes",
            obj(vec![
                ("count", J::from(s.n_nodes)),
                ("range", J::from(&s.nodes)),
            ]),
        ),
        ("tasks", obj(vec![("count", J::from(s.n_tasks))])),
        ("state", J::from(s.state.as_slurm_str())),
        (
            "step",
            obj(vec![
                ("job_id", J::from(job.job_id.0)),
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
                ("allocated", tres_list(&s.alloc_tres)),
            ]),
        ),
    ])
}

/// One job of `GET /slurmdb/v0.0.38/jobs` and `job/{id}`, from the
/// accounting record. `group` and `kill_user` are the names of the job's
/// group and of the user who cancelled it (looked up by the caller).
pub fn db_job(j: &proto::AcctJob, group: &str, kill_user: Option<&str>) -> J {
    let elapsed = match (j.start_time, j.end_time) {
        (Some(a), Some(b)) if b >= a => b - a,
        _ => 0,
    };
    let user_us: u64 = j.steps.iter().filter_map(|s| s.usage.user_cpu_usec).sum();
    let sys_us: u64 = j.steps.iter().filter_map(|s| s.usage.sys_cpu_usec).sum();
    let mem = tres_list(&j.req_tres)
        .to_value()
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|t| t["type"] == "mem")
                .and_then(|t| t["count"].as_i64())
        })
        .unwrap_or(0);
    let started = j.start_time.is_some() && !j.nodes.is_empty() && j.nodes != "None assigned";
    obj(vec![
        ("account", J::from(&j.account)),
        (
            "comment",
            obj(vec![
                ("administrator", J::Null),
                ("job", J::from(j.comment.clone())),
                ("system", J::Null),
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
                ("task", J::from(j.array_task_str.clone())),
                ("task_id", J::from(j.array_task_id)),
            ]),
        ),
        (
            "association",
            obj(vec![
                ("account", J::from(&j.account)),
                ("cluster", J::from(&j.cluster)),
                ("partition", J::Null),
                ("user", J::from(&j.user)),
            ]),
        ),
        ("cluster", J::from(&j.cluster)),
        ("constraints", J::from("")),
        ("container", j.container.as_deref().map_or(J::Null, J::from)),
        (
            "derived_exit_code",
            obj(vec![
                ("status", J::from("SUCCESS")),
                ("return_code", J::Int(0)),
            ]),
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
                ("start", J::from(j.start_time.unwrap_or(0))),
                ("submission", J::from(j.submit_time)),
                ("suspended", J::from(j.suspended_secs)),
                ("system", usecs(Some(sys_us))),
                ("limit", time_limit(j.time_limit)),
                ("total", usecs(Some(user_us + sys_us))),
                ("user", usecs(Some(user_us))),
            ]),
        ),
        ("exit_code", exit_code_obj(&j.exit_code)),
        ("flags", J::Arr(vec![])),
        ("group", J::from(group)),
        (
            "het",
            obj(vec![("job_id", J::Int(0)), ("job_offset", J::Null)]),
        ),
        ("job_id", J::from(j.job_id.0)),
        ("name", J::from(&j.name)),
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
        ("priority", J::from(j.priority)),
        ("qos", J::from(&j.qos)),
        (
            "required",
            obj(vec![("CPUs", J::from(j.n_cpus)), ("memory", J::Int(mem))]),
        ),
        ("kill_request_user", J::from(kill_user.map(str::to_string))),
        (
            "reservation",
            obj(vec![("id", J::Int(0)), ("name", J::Int(0))]),
        ),
        (
            "state",
            obj(vec![
                ("current", J::from(j.state.as_slurm_str())),
                ("reason", J::from(&j.reason)),
            ]),
        ),
        (
            "steps",
            J::Arr(j.steps.iter().map(|s| db_step(j, s)).collect()),
        ),
        (
            "tres",
            obj(vec![
                ("allocated", tres_list(&j.alloc_tres)),
                ("requested", tres_list(&j.req_tres)),
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
