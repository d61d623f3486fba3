//! The one entry point of the engine's transitions: [`Engine::apply`].
//! The controller (live, and replaying its journal on recovery) and the
//! simulator hand it the same [`Input`]s, so they cannot disagree.
//!
//! ```text
//!   ctld batch / journal replay / sim --Input, now--> Engine::apply --> Applied (reply)
//!                                                          |
//!   ctld after the batch's commit, sim after its tick <----+ take_commands()
//! ```
//!
//! Commands are not returned per input: they stay queued in the engine
//! until the shell takes them ([`Engine::take_commands`]) at the end of a
//! batch, after its journal commit, so that nothing leaves for a node
//! before the inputs that caused it are durable.
//!
//! Requests the controller answers without the engine's state machine
//! (accounting queries, `StepStat`, `Shutdown`, streamed job rows) never
//! come here; recording inputs (the journal's records) is the shell's.

use crate::Engine;
use model::{JobId, Timestamp};
use proto::{CtldRequest, CtldResponse, Identity, SlurmError};
use std::sync::Arc;
use tracing::{debug, info, warn};

/// One input to the engine: a fact it must act on. The time it is applied
/// at is [`Engine::apply`]'s `now`, not part of the input.
#[derive(Clone, Debug)]
pub enum Input {
    /// A request of a client or a node daemon, answered in
    /// [`Applied::reply`].
    Request {
        /// The request.
        req: Box<CtldRequest>,
        /// Who sent it.
        who: Identity,
    },
    /// A launch could not be delivered to a node.
    LaunchFailed {
        /// The job.
        job_id: JobId,
        /// The node.
        node: String,
    },
    /// A node no longer runs a job it was told to end.
    JobGone {
        /// The job.
        job_id: JobId,
        /// The node.
        node: String,
        /// The run that was ended.
        run: u32,
    },
    /// A ping's outcome.
    Ping {
        /// The node.
        node: String,
        /// Whether it answered.
        ok: bool,
    },
    /// The association database changed (sacctmgr), or was read at start.
    /// `now` is not read.
    AssocTables {
        /// The whole database.
        tables: Box<proto::acctdb::AcctTables>,
    },
    /// The end of a batch: timers, then a scheduling pass.
    Tick,
    /// A job's `PrologSlurmctld` ended (run by the controller for
    /// `Command::CtldScript`).
    PrologSlurmctldEnded {
        /// The job.
        job_id: JobId,
        /// The run it was for.
        run: u32,
        /// It exited 0.
        ok: bool,
    },
    /// The end of a batch as the simulator ends it: timers, then a
    /// scheduling pass unless that pass could start nothing
    /// ([`Engine::schedule_unless_idle`]; never skipped with
    /// [`Engine::set_full_passes`]). A skipped pass only gives the waiting
    /// jobs reasons and plans that the next pass gives again.
    TickUnlessIdle,
}

/// What applying one [`Input`] gave back. Its commands stay queued in the
/// engine ([`Engine::take_commands`]).
#[derive(Debug)]
pub struct Applied {
    /// The answer to an [`Input::Request`]; `None` for the other inputs.
    pub reply: Option<CtldResponse>,
    /// Whether a scheduling pass ran: always after [`Input::Tick`], after
    /// [`Input::TickUnlessIdle`] when one could start something.
    pub scheduled: bool,
}

/// What `scontrol show config` reports beyond the engine's own tables:
/// the configuration as read, and the controller's start as local time
/// (the engine reads no time zone).
#[derive(Clone, Debug)]
pub(crate) struct ShowConfig {
    pub(crate) cfg: Arc<conf::Config>,
    boot_text: String,
}

impl Engine {
    /// Applies one input at `now`. Deterministic: the same inputs at the
    /// same times give the same state, answers and commands, which is what
    /// lets the controller replay its journal.
    pub fn apply(&mut self, input: Input, now: Timestamp) -> Applied {
        let mut scheduled = false;
        self.resv_tick(now);
        let reply = match input {
            Input::Request { req, who } => Some(self.answer(*req, &who, now)),
            Input::LaunchFailed { job_id, node } => {
                self.on_launch_failed(job_id, &node, now);
                None
            }
            Input::JobGone { job_id, node, run } => {
                self.on_job_gone(job_id, &node, run, now);
                None
            }
            Input::Ping { node, ok } => {
                self.on_node_ping(&node, ok, now);
                None
            }
            Input::AssocTables { tables } => {
                self.on_assoc_tables(*tables);
                None
            }
            Input::PrologSlurmctldEnded { job_id, run, ok } => {
                if !ok {
                    warn!(target: "ctld", "job {job_id}: PrologSlurmctld failed");
                }
                self.on_prolog_slurmctld_ended(job_id, run, ok, now);
                None
            }
            Input::Tick => {
                self.reboot_tick(now);
                self.on_timer(now);
                self.schedule(now);
                scheduled = true;
                None
            }
            Input::TickUnlessIdle => {
                self.reboot_tick(now);
                self.on_timer(now);
                scheduled = self.schedule_unless_idle(now);
                None
            }
        };
        Applied { reply, scheduled }
    }

    /// What `scontrol show config` answers with: the configuration the
    /// engine was built from, and the controller's start written as local
    /// time. Until it is set, `ShowConfig` is refused (`InvalidRequest`):
    /// only a controller answers it, and it sets this before it listens.
    pub fn set_show_config(&mut self, cfg: Arc<conf::Config>, boot_text: String) {
        self.show_config = Some(ShowConfig { cfg, boot_text });
    }

    /// The answer to a request. Log lines keep the controller's target
    /// (`ctld`), as they had when the controller dispatched requests.
    fn answer(&mut self, req: CtldRequest, who: &Identity, t: Timestamp) -> CtldResponse {
        let ok = |r: Result<(), SlurmError>| match r {
            Ok(()) => CtldResponse::Ok,
            Err(e) => CtldResponse::Error(e),
        };
        match req {
            CtldRequest::Ping => CtldResponse::Ok,
            CtldRequest::Submit(desc) => match self.on_submit(*desc, who, t) {
                Ok(reply) => {
                    // The simulator submits whole traces: no line per job.
                    if reply.test_only.is_none() && !self.simulated {
                        debug!(target: "ctld", "job {} submitted by {}", reply.job_id, who.user);
                    }
                    CtldResponse::Submitted(reply)
                }
                Err(e) => CtldResponse::Error(e),
            },
            CtldRequest::ListJobs => {
                let all = proto::JobFilter::default();
                CtldResponse::Jobs(self.job_query_seen(&all, t, &self.sight(who)))
            }
            // Encoded by the controller from the rows the engine hands out
            // (`proto::JobRowSource`): the engine writes no wire bytes.
            CtldRequest::QueryJobs(filter) if filter.rows && filter.brief => {
                CtldResponse::Error(SlurmError::InvalidRequest)
            }
            CtldRequest::QueryJobs(filter) => {
                CtldResponse::Jobs(self.job_query_seen(&filter, t, &self.sight(who)))
            }
            CtldRequest::Priorities => {
                let sight = self.sight(who);
                let mut list = self.priority_list();
                list.jobs.retain(|j| sight.job(j.uid));
                CtldResponse::Priorities(list)
            }
            CtldRequest::JobPriorities { job_ids } => {
                let sight = self.sight(who);
                let mut list = self.priority_list_of(&job_ids);
                list.jobs.retain(|j| sight.job(j.uid));
                CtldResponse::Priorities(list)
            }
            CtldRequest::Shares => CtldResponse::Shares(self.sight(who).shares(self.share_rows())),
            // PrivateData=nodes and =partitions: the listing is refused
            // (Slurm's REQUEST_NODE_INFO and REQUEST_PARTITION_INFO).
            CtldRequest::ListNodes if !self.sight(who).nodes() => {
                CtldResponse::Error(SlurmError::AccessDenied)
            }
            CtldRequest::ListNodes => CtldResponse::Nodes(self.node_infos()),
            CtldRequest::ListPartitions if !self.sight(who).partitions() => {
                CtldResponse::Error(SlurmError::AccessDenied)
            }
            CtldRequest::ListPartitions => CtldResponse::Partitions(self.partition_infos()),
            CtldRequest::ListLicenses => CtldResponse::Licenses(self.license_infos()),
            CtldRequest::ShowTopology { node } => {
                CtldResponse::Topology(self.show_topology(node.as_deref()))
            }
            CtldRequest::ListReservations => {
                CtldResponse::Reservations(self.resv_infos_seen(t, &self.sight(who)))
            }
            CtldRequest::CreateReservation(spec) => match self.on_create_resv(spec, who, t) {
                Ok(name) => CtldResponse::ReservationCreated(name),
                Err(e) => CtldResponse::Error(e),
            },
            CtldRequest::UpdateReservation(spec) => ok(self.on_update_resv(spec, who, t)),
            CtldRequest::DeleteReservation { name } => ok(self.on_delete_resv(&name, who, t)),
            CtldRequest::ShowConfig => match &self.show_config {
                Some(show) => CtldResponse::Config(self.config_info(&show.cfg, t, &show.boot_text)),
                None => CtldResponse::Error(SlurmError::InvalidRequest),
            },
            CtldRequest::Explain { job_id } if !self.sees_job(who, job_id) => {
                CtldResponse::Error(SlurmError::InvalidJobId)
            }
            CtldRequest::Explain { job_id } => match self.explain(job_id, t) {
                Ok(mut x) => {
                    self.explained_for(&mut x, &self.sight(who));
                    CtldResponse::Explanation(Box::new(x))
                }
                Err(e) => CtldResponse::Error(e),
            },
            CtldRequest::Cancel {
                job_id,
                signal,
                batch_only,
                full,
                tasks,
            } => ok(self.on_cancel_tasks(
                job_id,
                tasks.as_ref(),
                signal,
                proto::SignalScope::of_flags(batch_only, full),
                who,
                t,
            )),
            CtldRequest::CancelJobs {
                select,
                signal,
                batch_only,
                full,
            } => CtldResponse::Cancelled(self.on_cancel_selected(
                &select,
                signal,
                proto::SignalScope::of_flags(batch_only, full),
                who,
                t,
            )),
            CtldRequest::UpdateJob {
                job_id,
                update,
                tasks,
            } => ok(self.on_update_tasks(job_id, tasks.as_ref(), update, who, t)),
            CtldRequest::UpdateNode {
                nodes,
                state,
                reason,
            } => ok(self.on_update_node(&nodes, state, reason, who, t)),
            CtldRequest::RebootNodes {
                nodes,
                asap,
                next_state,
                reason,
            } => ok(self.on_reboot_nodes(&nodes, asap, next_state, reason, who, t)),
            CtldRequest::CancelReboot { nodes } => ok(self.on_cancel_reboot(&nodes, who)),
            CtldRequest::Hold {
                job_id,
                user,
                tasks,
            } => ok(self.on_hold_tasks(job_id, tasks.as_ref(), user, who, t)),
            CtldRequest::Release { job_id, tasks } => {
                ok(self.on_release_tasks(job_id, tasks.as_ref(), who, t))
            }
            CtldRequest::Top { job_id } => ok(self.on_top(job_id, who)),
            CtldRequest::Notify { job_id, message } => ok(self.on_notify(job_id, message, who)),
            CtldRequest::Requeue {
                job_id,
                hold,
                tasks,
            } => ok(self.on_requeue_tasks(job_id, tasks.as_ref(), hold, who, t)),
            CtldRequest::Suspend { job_id, tasks } => {
                ok(self.on_suspend_tasks(job_id, tasks.as_ref(), who, t))
            }
            CtldRequest::Resume { job_id, tasks } => {
                ok(self.on_resume_tasks(job_id, tasks.as_ref(), who, t))
            }
            CtldRequest::RegisterNode(reg) => {
                // Only the daemons (root or SlurmUser) get here: the
                // controller's gate (`Gate::permit`) sees to it.
                let name = reg.name.clone();
                let r = self.on_node_registered(reg, t);
                if r.is_ok() {
                    info!(target: "ctld", "node {name} registered");
                }
                ok(r)
            }
            CtldRequest::JobExited {
                job_id,
                node,
                exit,
                launch_failed,
                usage,
                oom_kills,
                script_failed,
            } => {
                if let Some(why) = &launch_failed {
                    warn!(target: "ctld", "job {job_id} could not start on {node}: {why}");
                }
                if let Some(usage) = usage {
                    self.on_batch_usage(job_id, &node, usage);
                }
                // The OOM killer hit the batch step: the job ends
                // OUT_OF_MEMORY whatever the script's own exit.
                let exit = if oom_kills > 0 && launch_failed.is_none() {
                    crate::OOM_EXIT
                } else {
                    exit
                };
                match script_failed {
                    None => ok(self.on_job_exited(job_id, &node, exit, launch_failed, t)),
                    Some(script) => ok(self.on_node_script_failed(job_id, &node, exit, script, t)),
                }
            }
            CtldRequest::AllocationInfo { job_id } if !self.sees_job(who, job_id) => {
                CtldResponse::Error(SlurmError::InvalidJobId)
            }
            CtldRequest::AllocationInfo { job_id } => match self.allocation_info(job_id) {
                Ok(info) => CtldResponse::Allocation(info),
                Err(e) => CtldResponse::Error(e),
            },
            CtldRequest::CompleteAllocation { job_id, exit } => {
                ok(self.on_complete_allocation(job_id, exit, who, t))
            }
            CtldRequest::CreateStep(req) => match self.on_create_step(*req, who, t) {
                Ok(created) => CtldResponse::StepCreated(created),
                Err(e) => CtldResponse::Error(e),
            },
            CtldRequest::StepExited(end) => ok(self.on_step_exited(end, t)),
            CtldRequest::ExternEnded {
                job_id,
                node,
                usage,
            } => ok(self.on_extern_ended(job_id, &node, usage, t)),
            CtldRequest::CancelStep {
                job_id,
                step_id,
                signal,
            } => ok(self.on_cancel_step(job_id, step_id, signal, who, t)),
            CtldRequest::ListSteps => {
                let sight = self.sight(who);
                let mut list = self.step_list(t);
                list.steps.retain(|s| sight.job(s.uid));
                CtldResponse::Steps(list)
            }
            CtldRequest::Shutdown | CtldRequest::ShutdownController => CtldResponse::Ok,
            CtldRequest::UpdatePartition(u) => ok(self.on_update_partition(*u, false, who)),
            CtldRequest::CreatePartition(u) => ok(self.on_update_partition(*u, true, who)),
            CtldRequest::DeletePartition { name } => ok(self.on_delete_partition(&name, who)),
            CtldRequest::GpuXid {
                node,
                xid,
                gpu,
                pci,
            } => {
                warn!(target: "ctld", "node {node}: fatal GPU Xid {xid} (PCI {pci})");
                ok(self.on_gpu_xid(&node, xid, gpu, t))
            }
            // Answered by the controller's accounting writer, never by the
            // engine.
            CtldRequest::AcctQuery(_)
            | CtldRequest::StepStat { .. }
            | CtldRequest::AcctTables
            | CtldRequest::AcctAdmin(_)
            | CtldRequest::AcctUsage(_)
            | CtldRequest::AcctReservations { .. }
            | CtldRequest::AcctDecayedUsage
            // Answered by the controller, which keeps the statistics.
            | CtldRequest::Diag { .. }
            // Answered by the controller's connection: files, not state.
            | CtldRequest::GetConfig => CtldResponse::Error(SlurmError::InvalidRequest),
            // Done by the controller, which reads the files.
            | CtldRequest::Reconfigure => CtldResponse::Error(SlurmError::InvalidRequest),
            // Taken apart by the connection, never passed on.
            CtldRequest::OpenSession
            | CtldRequest::InSession { .. }
            | CtldRequest::OnBehalf { .. }
            | CtldRequest::Token { .. }
            | CtldRequest::Watch(_)
            | CtldRequest::Stats
            | CtldRequest::FabricReports => CtldResponse::Error(SlurmError::InvalidRequest),
            // Kept and answered by the controller, in memory: not state.
            CtldRequest::HealthCheckRan(_) | CtldRequest::HealthChecks { .. } => {
                CtldResponse::Error(SlurmError::InvalidRequest)
            }
        }
    }
}
