//! `HealthCheckProgram`: run as root once the daemon has registered, then
//! every `HealthCheckInterval` seconds while the node is in a state
//! `HealthCheckNodeState` names (asked of the controller before each run).
//!
//! As in Slurm the program's exit status is not acted on: an NHC-style
//! program drains the node itself (`scontrol update nodename=$(hostname)
//! state=drain reason=...`; `SLURM_CONF` is in its environment). With
//! muster's `HealthCheckParameters=drain_on_failure` the daemon drains the
//! node when the program exits non-zero, with the program's first output
//! line as the reason ("health check failed" when it printed none), and
//! resumes it when a later check passes, only while the node is still
//! drained with that very reason (an administrator's drain stays). The
//! reason it set is kept in the spool (`health_drained`), so a restarted
//! daemon still resumes the node.
//!
//! A site's GPU verdict: with `drain_on_failure`, a failing check whose
//! first output line is an NVIDIA Xid line (`NVRM: Xid (PCI:...): N, ...`)
//! naming a fatal Xid (crate::xid) quarantines the node as the kernel
//! log's would (`daemon::xid`): drained `GPU Xid N`, the job on that GPU
//! requeued elsewhere. That drain is the administrator's to resume.
//!
//! After each run (and what it made the daemon do) the daemon reports it
//! to the controller (`CtldRequest::HealthCheckRan`: start, duration, exit
//! code, the first output line, the action), which keeps the last few of
//! each node for the dashboard's node page (ctld's `health`).

use crate::daemon::link::NodeLink;
use crate::hooks::{self, HealthSettings};
use proto::health::{clip, HealthCheckAction, HealthCheckRun, OUTPUT_MAX};
use proto::{CtldRequest, CtldResponse, NodeInfo, NodeStateRequest};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// The spool file with the reason of a drain this check made.
const DRAINED: &str = "health_drained";

/// Runs the check now and then every interval (an interval of 0: once).
pub async fn run(
    link: Arc<NodeLink>,
    settings: HealthSettings,
    timeout: Option<Duration>,
    gpus: (crate::xid::XidSettings, Vec<String>),
) {
    let node = link.node_name.clone();
    let env = vec![
        ("SLURMD_NODENAME".to_string(), node.clone()),
        (
            "SLURM_CONF".to_string(),
            link.conf_path.to_string_lossy().into_owned(),
        ),
        (
            "PATH".to_string(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
        ),
        (
            "SLURM_SCRIPT_CONTEXT".to_string(),
            "health_check".to_string(),
        ),
    ];
    let mut first = true;
    loop {
        if !first {
            if settings.interval.is_zero() {
                return;
            }
            tokio::time::sleep(settings.interval).await;
        }
        first = false;
        let me = own_node(&link).await;
        if let Some(me) = &me {
            if !settings.states.covers(&me.state) {
                continue;
            }
        }
        let start = crate::daemon::setup::now();
        let began = Instant::now();
        let outcome = hooks::run_scripts(&settings.program, &env, timeout).await;
        let duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        if !outcome.ok {
            warn!("health check failed: {}", outcome.why);
        }
        let mut action = HealthCheckAction::None;
        if settings.drain_on_failure {
            let xid = (!outcome.ok)
                .then(|| crate::xid::parse_line(&outcome.first_line))
                .flatten()
                .filter(|e| gpus.0.is_fatal(e));
            action = match xid {
                Some(event) => {
                    crate::daemon::xid::report(&link, &event, &gpus.1).await;
                    HealthCheckAction::GpuXid
                }
                None => act(&link, &outcome, me.as_ref()).await,
            };
        }
        let run = HealthCheckRun {
            node: node.clone(),
            start,
            duration_ms,
            ok: outcome.ok,
            exit_code: outcome.code,
            why: if outcome.ok {
                String::new()
            } else {
                clip(&outcome.why, OUTPUT_MAX)
            },
            output: clip(&outcome.first_line, OUTPUT_MAX),
            action,
            // The controller's to fill in.
            drained: false,
            reason: None,
        };
        report(&link, run).await;
    }
}

/// Tells the controller about one run (it keeps the last few per node).
async fn report(link: &NodeLink, run: HealthCheckRun) {
    let answer = link
        .ctld
        .call_until_answered(
            || CtldRequest::HealthCheckRan(Box::new(run.clone())),
            "health check report",
        )
        .await;
    if !matches!(answer, CtldResponse::Ok) {
        // An older controller does not know the report: nothing is lost
        // but the dashboard's list.
        debug!("the controller did not take the health check's report: {answer:?}");
    }
}

/// This node as the controller shows it.
async fn own_node(link: &NodeLink) -> Option<NodeInfo> {
    match link
        .ctld
        .call_until_answered(|| CtldRequest::ListNodes, "node state for the health check")
        .await
    {
        CtldResponse::Nodes(nodes) => nodes.into_iter().find(|n| n.name == link.node_name),
        _ => None,
    }
}

/// `drain_on_failure`: drains on a failure, resumes a drain of its own on
/// a pass. Returns what it asked of the controller.
async fn act(
    link: &NodeLink,
    outcome: &hooks::Outcome,
    me: Option<&NodeInfo>,
) -> HealthCheckAction {
    let file = link.spool_dir.join(DRAINED);
    let ours = std::fs::read_to_string(&file).ok();
    let (state, reason) = if outcome.ok {
        let Some(reason) = ours else {
            return HealthCheckAction::None;
        };
        // Only a drain that is still the one this check made.
        let still = me.is_some_and(|n| n.state.drain && n.reason.as_deref() == Some(&reason));
        let _ = std::fs::remove_file(&file);
        if !still {
            return HealthCheckAction::None;
        }
        info!("health check passes again: resuming the node");
        (NodeStateRequest::Resume, None)
    } else {
        let reason = if outcome.first_line.is_empty() {
            "health check failed".to_string()
        } else {
            outcome.first_line.clone()
        };
        let drained = me.is_some_and(|n| n.state.drain);
        let drained_by_us = me.is_some_and(|n| n.reason.is_some() && n.reason == ours);
        if drained && (!drained_by_us || ours.as_deref() == Some(reason.as_str())) {
            // Someone else's drain stays as it is; ours already says this.
            return HealthCheckAction::None;
        }
        if let Err(e) = crate::spool::write_atomic(&file, reason.as_bytes()) {
            warn!("cannot record the health check's drain: {e}");
        }
        info!("health check failed: draining the node ({reason})");
        (NodeStateRequest::Drain, Some(reason))
    };
    let node = link.node_name.clone();
    let answer = link
        .ctld
        .call_until_answered(
            || CtldRequest::UpdateNode {
                nodes: vec![node.clone()],
                state: Some(state.clone()),
                reason: reason.clone(),
            },
            "health check drain",
        )
        .await;
    if !matches!(answer, CtldResponse::Ok) {
        warn!("the controller refused the health check's node update: {answer:?}");
        return HealthCheckAction::None;
    }
    match state {
        NodeStateRequest::Resume => HealthCheckAction::Resumed,
        _ => HealthCheckAction::Drained,
    }
}
