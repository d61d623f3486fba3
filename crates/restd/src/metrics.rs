//! `GET /metrics`: the cluster's state and the controller's statistics in
//! the Prometheus text format (0.0.4), read from the controller at each
//! scrape as the caller (so a user sees what `squeue`/`sdiag` show them).

use crate::api::Ctx;
use proto::{CtldRequest, CtldResponse, Identity};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// restd's own counters: requests by method and status.
#[derive(Default)]
pub struct Counters {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
}

impl Counters {
    /// Counts one answered request.
    pub fn count(&self, method: &str, status: u16) {
        let mut m = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry((method.to_string(), status)).or_default() += 1;
    }
}

/// A label value, escaped as the text format wants.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The text for one scrape.
pub fn render(ctx: &Ctx, who: &Identity) -> Result<String, client::ClientError> {
    let mut out = String::with_capacity(8192);
    let jobs = match ctx.call(who, CtldRequest::ListJobs)? {
        CtldResponse::Jobs(l) => l.jobs,
        _ => return Err(client::ClientError::Unexpected),
    };
    let nodes = match ctx.call(who, CtldRequest::ListNodes)? {
        CtldResponse::Nodes(n) => n,
        _ => return Err(client::ClientError::Unexpected),
    };
    let mut by_state: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
    for j in &jobs {
        for p in j.partition.split(',') {
            *by_state
                .entry((j.state.as_slurm_str().to_string(), p.to_string()))
                .or_default() += 1;
        }
        if j.state == model::JobState::Pending {
            *by_reason
                .entry(j.reason.as_slurm_str().to_string())
                .or_default() += 1;
        }
    }
    family(
        &mut out,
        "muster_jobs",
        "gauge",
        "Jobs the controller holds, by state and partition.",
    );
    for ((state, part), n) in &by_state {
        let _ = writeln!(
            out,
            "muster_jobs{{state=\"{}\",partition=\"{}\"}} {n}",
            esc(state),
            esc(part)
        );
    }
    family(
        &mut out,
        "muster_jobs_pending",
        "gauge",
        "Pending jobs by the reason they wait.",
    );
    for (reason, n) in &by_reason {
        let _ = writeln!(out, "muster_jobs_pending{{reason=\"{}\"}} {n}", esc(reason));
    }
    let mut node_states: BTreeMap<(String, String), u64> = BTreeMap::new();
    let (mut cpus_alloc, mut cpus_total, mut mem_alloc, mut mem_total) = (0u64, 0u64, 0u64, 0u64);
    for n in &nodes {
        let state = n.state.scontrol_string().to_ascii_lowercase();
        for p in &n.partitions {
            *node_states.entry((state.clone(), p.clone())).or_default() += 1;
        }
        cpus_alloc += u64::from(n.alloc_cpus);
        cpus_total += u64::from(n.cpus);
        mem_alloc += n.alloc_mem;
        mem_total += n.real_memory;
    }
    family(
        &mut out,
        "muster_nodes",
        "gauge",
        "Nodes by state and partition.",
    );
    for ((state, part), n) in &node_states {
        let _ = writeln!(
            out,
            "muster_nodes{{state=\"{}\",partition=\"{}\"}} {n}",
            esc(state),
            esc(part)
        );
    }
    family(
        &mut out,
        "muster_cpus",
        "gauge",
        "CPUs of all nodes, allocated and idle.",
    );
    let _ = writeln!(out, "muster_cpus{{state=\"allocated\"}} {cpus_alloc}");
    let _ = writeln!(
        out,
        "muster_cpus{{state=\"idle\"}} {}",
        cpus_total.saturating_sub(cpus_alloc)
    );
    family(
        &mut out,
        "muster_memory_megabytes",
        "gauge",
        "Memory of all nodes (MB), allocated and idle.",
    );
    let _ = writeln!(
        out,
        "muster_memory_megabytes{{state=\"allocated\"}} {mem_alloc}"
    );
    let _ = writeln!(
        out,
        "muster_memory_megabytes{{state=\"idle\"}} {}",
        mem_total.saturating_sub(mem_alloc)
    );
    if let Ok(CtldResponse::Diag(d)) = ctx.call(who, CtldRequest::Diag { reset: false }) {
        family(
            &mut out,
            "muster_scheduler_cycles_total",
            "counter",
            "Main scheduling passes.",
        );
        let _ = writeln!(
            out,
            "muster_scheduler_cycles_total {}",
            d.schedule.total_cycles
        );
        family(
            &mut out,
            "muster_scheduler_cycle_last_microseconds",
            "gauge",
            "The last main pass's duration.",
        );
        let _ = writeln!(
            out,
            "muster_scheduler_cycle_last_microseconds {}",
            d.schedule.last_cycle
        );
        family(
            &mut out,
            "muster_backfill_cycles_total",
            "counter",
            "Backfill passes.",
        );
        let _ = writeln!(
            out,
            "muster_backfill_cycles_total {}",
            d.backfill.total_cycles
        );
        family(
            &mut out,
            "muster_backfilled_jobs_total",
            "counter",
            "Jobs started by backfill.",
        );
        let _ = writeln!(
            out,
            "muster_backfilled_jobs_total {}",
            d.backfill.backfilled_jobs
        );
        family(
            &mut out,
            "muster_rpcs_total",
            "counter",
            "Requests the controller handled, by Slurm message type.",
        );
        for r in &d.rpc_by_type {
            let _ = writeln!(
                out,
                "muster_rpcs_total{{type=\"{}\"}} {}",
                esc(&r.name),
                r.count
            );
        }
        family(
            &mut out,
            "muster_rpcs_by_user_total",
            "counter",
            "Requests the controller handled, by user.",
        );
        for r in &d.rpc_by_user {
            let _ = writeln!(
                out,
                "muster_rpcs_by_user_total{{user=\"{}\"}} {}",
                esc(&r.user),
                r.count
            );
        }
    }
    family(
        &mut out,
        "muster_rest_requests_total",
        "counter",
        "Requests this REST daemon answered, by method and status.",
    );
    let m = ctx
        .metrics
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    for ((method, status), n) in m.iter() {
        let _ = writeln!(
            out,
            "muster_rest_requests_total{{method=\"{method}\",status=\"{status}\"}} {n}"
        );
    }
    Ok(out)
}
