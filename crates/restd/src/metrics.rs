//! `GET /metrics`: the cluster's state and the controller's statistics in
//! the Prometheus text format (0.0.4), or OpenMetrics 1.0 when the scrape
//! asks for it (`Accept: application/openmetrics-text`), read from the
//! controller at each scrape as the caller.
//!
//! Three requests per scrape: `Stats` (job counts by state, partition and
//! pending reason, made in the controller so that a scrape does not list
//! every job; histograms of the scheduling passes and the journal's
//! commits; the accounting backlog; the watch stream), `ListNodes` (node
//! states, CPUs, GPUs, memory) and `Diag` (sdiag's counters, RPCs by type
//! and user).

use crate::api::Ctx;
use proto::stats::{CtldStats, Histogram};
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

/// The exposition format of a scrape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4.
    Prometheus,
    /// OpenMetrics text 1.0.0.
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when the `Accept` header names it, as Prometheus asks
    /// for it; the text format otherwise.
    pub fn of_accept(accept: &str) -> Format {
        if accept.contains("application/openmetrics-text") {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The answer's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A label value, escaped as both formats want.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes the text of one scrape.
struct Out {
    text: String,
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gauge,
    Counter,
    Histogram,
}

impl Out {
    /// A family's HELP and TYPE lines. `name` is a counter's name without
    /// `_total` (its samples carry it: [`Out::sample`]).
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let (name, kind) = match (kind, self.format) {
            (Kind::Counter, Format::Prometheus) => (format!("{name}_total"), "counter"),
            (Kind::Counter, Format::OpenMetrics) => (name.to_string(), "counter"),
            (Kind::Gauge, _) => (name.to_string(), "gauge"),
            (Kind::Histogram, _) => (name.to_string(), "histogram"),
        };
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample: `name` in full (a counter's with `_total`).
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", esc(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// A histogram kept in µs, written in seconds.
    fn histogram(&mut self, name: &str, help: &str, h: &Histogram) {
        self.family(name, Kind::Histogram, help);
        let seconds = |us: u64| us as f64 / 1e6;
        for (bound, n) in h.bounds.iter().zip(&h.cumulative) {
            let le = seconds(*bound).to_string();
            self.sample(&format!("{name}_bucket"), &[("le", &le)], n);
        }
        self.sample(&format!("{name}_bucket"), &[("le", "+Inf")], h.count);
        self.sample(&format!("{name}_sum"), &[], seconds(h.sum));
        self.sample(&format!("{name}_count"), &[], h.count);
    }
}

/// The text for one scrape.
pub fn render(ctx: &Ctx, who: &Identity, format: Format) -> Result<String, client::ClientError> {
    let stats: CtldStats = match ctx.call(who, CtldRequest::Stats)? {
        CtldResponse::Stats(s) => *s,
        _ => return Err(client::ClientError::Unexpected),
    };
    // Under PrivateData=nodes a user's scrape has no node families.
    let nodes = match ctx.call(who, CtldRequest::ListNodes) {
        Ok(CtldResponse::Nodes(n)) => n,
        Err(client::ClientError::Refused(proto::SlurmError::AccessDenied)) => Vec::new(),
        Err(e) => return Err(e),
        Ok(_) => return Err(client::ClientError::Unexpected),
    };
    let mut out = Out {
        text: String::with_capacity(16384),
        format,
    };
    out.family(
        "muster_jobs",
        Kind::Gauge,
        "Jobs the controller holds, by state and partition (a pending job of several partitions counts in each).",
    );
    for (state, part, n) in &stats.jobs {
        out.sample("muster_jobs", &[("state", state), ("partition", part)], n);
    }
    out.family(
        "muster_jobs_pending",
        Kind::Gauge,
        "Pending jobs by the reason they wait.",
    );
    for (reason, n) in &stats.pending_reasons {
        out.sample("muster_jobs_pending", &[("reason", reason)], n);
    }
    let mut node_states: BTreeMap<(String, String), u64> = BTreeMap::new();
    let (mut cpus_alloc, mut cpus_total, mut mem_alloc, mut mem_total) = (0u64, 0u64, 0u64, 0u64);
    let (mut gpus_alloc, mut gpus_total) = (0u64, 0u64);
    for n in &nodes {
        let state = n.state.scontrol_string().to_ascii_lowercase();
        for p in &n.partitions {
            *node_states.entry((state.clone(), p.clone())).or_default() += 1;
        }
        cpus_alloc += u64::from(n.alloc_cpus);
        cpus_total += u64::from(n.cpus);
        mem_alloc += n.alloc_mem;
        mem_total += n.real_memory;
        gpus_total += n
            .gres
            .iter()
            .filter(|g| g.name == "gpu")
            .map(|g| g.count)
            .sum::<u64>();
        gpus_alloc += n
            .gres_used
            .iter()
            .filter(|g| g.name == "gpu")
            .map(|g| g.count)
            .sum::<u64>();
    }
    out.family("muster_nodes", Kind::Gauge, "Nodes by state and partition.");
    for ((state, part), n) in &node_states {
        out.sample("muster_nodes", &[("state", state), ("partition", part)], n);
    }
    for (name, what, alloc, total) in [
        ("muster_cpus", "CPUs", cpus_alloc, cpus_total),
        ("muster_gpus", "GPUs (gres/gpu)", gpus_alloc, gpus_total),
        (
            "muster_memory_megabytes",
            "Memory (MB)",
            mem_alloc,
            mem_total,
        ),
    ] {
        out.family(
            name,
            Kind::Gauge,
            &format!("{what} of all nodes, allocated and idle."),
        );
        out.sample(name, &[("state", "allocated")], alloc);
        out.sample(name, &[("state", "idle")], total.saturating_sub(alloc));
    }
    out.histogram(
        "muster_scheduler_pass_duration_seconds",
        "Scheduling passes (with the timers of their tick), by duration.",
        &stats.sched_pass,
    );
    out.histogram(
        "muster_journal_fsync_duration_seconds",
        "Journal commits (write and fsync of one batch of records), by duration.",
        &stats.journal_commit,
    );
    out.family(
        "muster_accounting_backlog_records",
        Kind::Gauge,
        "Accounting records waiting to be written to the accounting store.",
    );
    out.sample("muster_accounting_backlog_records", &[], stats.acct_backlog);
    out.family(
        "muster_watch_streams",
        Kind::Gauge,
        "Open watch streams (/muster/v1/watch) on the controller.",
    );
    out.sample("muster_watch_streams", &[], stats.watchers);
    out.family(
        "muster_watch_events",
        Kind::Counter,
        "Changes numbered for the watch stream since the controller started.",
    );
    out.sample("muster_watch_events_total", &[], stats.watch_events);
    if let Ok(CtldResponse::Diag(d)) = ctx.call(who, CtldRequest::Diag { reset: false }) {
        out.family(
            "muster_scheduler_cycles",
            Kind::Counter,
            "Main scheduling passes.",
        );
        out.sample(
            "muster_scheduler_cycles_total",
            &[],
            d.schedule.total_cycles,
        );
        out.family(
            "muster_scheduler_cycle_last_microseconds",
            Kind::Gauge,
            "The last main pass's duration.",
        );
        out.sample(
            "muster_scheduler_cycle_last_microseconds",
            &[],
            d.schedule.last_cycle,
        );
        out.family(
            "muster_scheduler_queue_length",
            Kind::Gauge,
            "Pending jobs when the last pass ran.",
        );
        out.sample(
            "muster_scheduler_queue_length",
            &[],
            d.schedule.last_queue_length,
        );
        out.family(
            "muster_backfill_cycles",
            Kind::Counter,
            "Passes that backfilled at least one job.",
        );
        out.sample("muster_backfill_cycles_total", &[], d.backfill.total_cycles);
        out.family(
            "muster_backfilled_jobs",
            Kind::Counter,
            "Jobs started by backfill.",
        );
        out.sample(
            "muster_backfilled_jobs_total",
            &[],
            d.backfill.backfilled_jobs,
        );
        out.family(
            "muster_backfill_cycle_last_microseconds",
            Kind::Gauge,
            "The last backfilling pass's duration.",
        );
        out.sample(
            "muster_backfill_cycle_last_microseconds",
            &[],
            d.backfill.last_cycle,
        );
        out.family(
            "muster_backfill_last_depth",
            Kind::Gauge,
            "Jobs the last backfilling pass tried.",
        );
        out.sample("muster_backfill_last_depth", &[], d.backfill.last_depth);
        out.family(
            "muster_rpcs",
            Kind::Counter,
            "Requests the controller handled, by Slurm message type.",
        );
        for r in &d.rpc_by_type {
            out.sample("muster_rpcs_total", &[("type", &r.name)], r.count);
        }
        out.family(
            "muster_rpcs_by_user",
            Kind::Counter,
            "Requests the controller handled, by user.",
        );
        for r in &d.rpc_by_user {
            out.sample("muster_rpcs_by_user_total", &[("user", &r.user)], r.count);
        }
    }
    out.family(
        "muster_rest_requests",
        Kind::Counter,
        "Requests this REST daemon answered, by method and status.",
    );
    let m = ctx
        .metrics
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    for ((method, status), n) in m.iter() {
        out.sample(
            "muster_rest_requests_total",
            &[("method", method), ("status", &status.to_string())],
            n,
        );
    }
    drop(m);
    if format == Format::OpenMetrics {
        out.text.push_str("# EOF\n");
    }
    Ok(out.text)
}
