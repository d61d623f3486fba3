//! `scontrol reboot` and `cancel_reboot`: nodes rebooted by their daemons'
//! RebootProgram once idle, as Slurm's controller does it (scontrol(1)
//! `reboot`, slurm.conf(5) `RebootProgram`, `ResumeTimeout`).
//!
//! ```text
//!  RebootNodes --> REBOOT_REQUESTED (+DRAIN "Reboot ASAP" with ASAP)
//!        | the node is idle (or DOWN), at the end of a batch (Tick)
//!        v
//!  DOWN+REBOOT_ISSUED, Command::RebootNode --> noded runs RebootProgram
//!        | the daemon registers with a new boot id     | ResumeTimeout passes
//!        v                                              v
//!  IDLE (nextstate=resume / as before) or DOWN     DOWN "reboot timed out"
//! ```
//!
//! Without ASAP a node waiting for its reboot still takes jobs (Slurm's
//! documented default); it reboots the first time it is idle. A reboot
//! not yet issued can be cancelled; an issued one cannot (Slurm's "Reboot
//! already in progress"). What a node waits for is kept in snapshots
//! (`persist::v1::Node::reboot`) and the requests are journaled, so the
//! state survives a controller restart.

use crate::{Command, Engine};
use model::{NodeBase, Timestamp};
use proto::{Identity, RebootNextState, SlurmError};
use sched::NodeIdx;

/// The reason ASAP gives a node when `reason=` is not given.
pub const REBOOT_ASAP: &str = "Reboot ASAP";
/// What an issued reboot appends to the node's reason.
pub const REBOOT_ISSUED_SUFFIX: &str = " : reboot issued";
/// What a node DOWN after its reboot (`nextstate=down`) gets instead.
pub const REBOOT_COMPLETE_SUFFIX: &str = " : reboot complete";
/// The reason of a node that did not come back within ResumeTimeout.
pub const REBOOT_TIMED_OUT: &str = "reboot timed out";

/// A reboot a node waits for, or is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reboot {
    /// `ASAP`: the node was drained for it.
    pub asap: bool,
    /// `nextstate=`.
    pub next_state: Option<RebootNextState>,
    /// When it was issued (the node told to reboot); None while requested.
    pub issued: Option<Timestamp>,
    /// The boot id the node had when it was issued: a registration with
    /// another one is the host back.
    pub boot_id: String,
}

impl Engine {
    /// `scontrol reboot`: operators only.
    pub fn on_reboot_nodes(
        &mut self,
        names: &[String],
        asap: bool,
        next_state: Option<RebootNextState>,
        reason: Option<String>,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        if !self.is_super(who) {
            return Err(SlurmError::AccessDenied);
        }
        let idxs: Vec<NodeIdx> = names
            .iter()
            .map(|n| self.node_idx(n).ok_or(SlurmError::InvalidNodeName))
            .collect::<Result<_, _>>()?;
        for idx in idxs {
            let n = &mut self.nodes[idx.0 as usize];
            if n.state.base == NodeBase::Future {
                continue;
            }
            if n.reboot.as_ref().is_some_and(|r| r.issued.is_some()) {
                // Already rebooting: the request changes nothing.
                continue;
            }
            n.reboot = Some(Reboot {
                asap,
                next_state,
                issued: None,
                boot_id: String::new(),
            });
            n.state.reboot = true;
            let reason = match (&reason, asap) {
                (Some(r), _) => Some(r.clone()),
                (None, true) => Some(REBOOT_ASAP.to_string()),
                (None, false) => None,
            };
            if asap {
                n.state.drain = true;
            }
            if let Some(r) = reason {
                n.reason = Some(r);
                n.reason_user = Some(who.user.clone());
                n.reason_time = Some(now);
            }
        }
        self.any_reboot = true;
        self.reboot_tick(now);
        Ok(())
    }

    /// `scontrol cancel_reboot`: forgets reboots not yet issued, and the
    /// DRAIN and reason an ASAP one gave. Refused for a node already
    /// rebooting.
    pub fn on_cancel_reboot(&mut self, names: &[String], who: &Identity) -> Result<(), SlurmError> {
        self.touch();
        if !self.is_super(who) {
            return Err(SlurmError::AccessDenied);
        }
        let idxs: Vec<NodeIdx> = names
            .iter()
            .map(|n| self.node_idx(n).ok_or(SlurmError::InvalidNodeName))
            .collect::<Result<_, _>>()?;
        let mut refused = false;
        for idx in idxs {
            let n = &mut self.nodes[idx.0 as usize];
            match &n.reboot {
                None => {}
                Some(r) if r.issued.is_some() => refused = true,
                Some(r) => {
                    if r.asap && n.reason.as_deref() == Some(REBOOT_ASAP) {
                        n.state.drain = false;
                        n.reason = None;
                        n.reason_user = None;
                        n.reason_time = None;
                    } else if r.asap {
                        n.state.drain = false;
                    }
                    n.reboot = None;
                    n.state.reboot = false;
                }
            }
        }
        if refused {
            return Err(SlurmError::RebootInProgress);
        }
        Ok(())
    }

    /// Issues the reboots whose nodes are ready, and sets DOWN the nodes
    /// that did not come back in time. At the end of every batch, before
    /// the scheduling pass (a node rebooting now takes no job).
    pub(crate) fn reboot_tick(&mut self, now: Timestamp) {
        if !self.any_reboot {
            return;
        }
        let timeout = i64::from(self.settings.resume_timeout);
        let mut any = false;
        for i in 0..self.nodes.len() {
            let idx = NodeIdx(i as u32);
            let n = &self.nodes[i];
            let Some(r) = &n.reboot else { continue };
            any = true;
            match r.issued {
                Some(at) if now >= at + timeout => self.reboot_timed_out(idx, now),
                Some(_) => {}
                None if self.reboot_ready(idx) => self.issue_reboot(idx, now),
                None => {}
            }
        }
        self.any_reboot = any;
    }

    /// Whether a requested reboot may be issued: the node runs nothing
    /// (and is not cleaning up after a job), or it is DOWN anyway.
    fn reboot_ready(&self, idx: NodeIdx) -> bool {
        let n = &self.nodes[idx.0 as usize];
        if !n.registered {
            return false;
        }
        match n.state.base {
            NodeBase::Down => true,
            NodeBase::Idle => n.jobs.is_empty() && !n.state.completing && !n.state.not_responding,
            _ => false,
        }
    }

    fn issue_reboot(&mut self, idx: NodeIdx, now: Timestamp) {
        self.touch();
        let n = &mut self.nodes[idx.0 as usize];
        let boot_id = n
            .report
            .as_ref()
            .map(|r| r.boot_id.clone())
            .unwrap_or_default();
        if let Some(r) = n.reboot.as_mut() {
            r.issued = Some(now);
            r.boot_id = boot_id;
        }
        n.state.reboot = false;
        n.state.reboot_issued = true;
        n.state.base = NodeBase::Down;
        if let Some(reason) = n.reason.as_mut() {
            if !reason.ends_with(REBOOT_ISSUED_SUFFIX) {
                reason.push_str(REBOOT_ISSUED_SUFFIX);
            }
        }
        self.outbox.push(Command::RebootNode {
            node: n.conf.name.clone(),
            addr: n.daemon_addr.clone(),
        });
    }

    fn reboot_timed_out(&mut self, idx: NodeIdx, now: Timestamp) {
        self.touch();
        let slurm_user = self.settings.slurm_user.clone();
        let n = &mut self.nodes[idx.0 as usize];
        n.reboot = None;
        n.state.reboot = false;
        n.state.reboot_issued = false;
        n.state.base = NodeBase::Down;
        n.reason = Some(REBOOT_TIMED_OUT.to_string());
        n.reason_user = Some(slurm_user);
        n.reason_time = Some(now);
    }

    /// The earliest ResumeTimeout of an issued reboot.
    pub(crate) fn reboot_wake(&self) -> Option<Timestamp> {
        if !self.any_reboot {
            return None;
        }
        let timeout = i64::from(self.settings.resume_timeout);
        self.nodes
            .iter()
            .filter_map(|n| n.reboot.as_ref().and_then(|r| r.issued))
            .map(|at| at + timeout)
            .min()
    }

    /// A registration of a node whose reboot was issued: true when it is
    /// the host back (another boot id, or, from a daemon that reports
    /// none, a boot after the reboot was issued), and the node then takes
    /// the state the reboot asked for. False for anything else (the
    /// daemon restarted without the host rebooting: still rebooting).
    pub(crate) fn reboot_registered(
        &mut self,
        idx: NodeIdx,
        boot_id: &str,
        boot_time: Timestamp,
    ) -> bool {
        let n = &mut self.nodes[idx.0 as usize];
        let Some(r) = n.reboot.clone() else {
            return false;
        };
        let Some(issued) = r.issued else {
            return false;
        };
        let back = if boot_id.is_empty() || r.boot_id.is_empty() {
            boot_time >= issued
        } else {
            boot_id != r.boot_id
        };
        if !back {
            return false;
        }
        n.reboot = None;
        n.state.reboot = false;
        n.state.reboot_issued = false;
        let issued_reason = n
            .reason
            .as_deref()
            .and_then(|s| s.strip_suffix(REBOOT_ISSUED_SUFFIX))
            .map(str::to_string);
        // scontrol(1): DRAIN is cleared when the reboot was ASAP or named
        // a next state.
        if r.asap || r.next_state.is_some() {
            n.state.drain = false;
        }
        match r.next_state {
            Some(RebootNextState::Down) => {
                n.state.base = NodeBase::Down;
                if let Some(base) = issued_reason {
                    n.reason = Some(format!("{base}{REBOOT_COMPLETE_SUFFIX}"));
                }
            }
            Some(RebootNextState::Resume) => {
                n.state.base = NodeBase::Idle;
                n.reason = None;
                n.reason_user = None;
                n.reason_time = None;
            }
            None => {
                n.state.base = NodeBase::Idle;
                if n.state.drain {
                    // Drained by an administrator before: keep the reason.
                    if let Some(base) = issued_reason {
                        n.reason = Some(base);
                    }
                } else {
                    n.reason = None;
                    n.reason_user = None;
                    n.reason_time = None;
                }
            }
        }
        true
    }

    /// `scontrol update State=RESUME` on a node being rebooted: the reboot
    /// is forgotten (the administrator says the node is fine).
    pub(crate) fn forget_reboot(&mut self, idx: NodeIdx) {
        let n = &mut self.nodes[idx.0 as usize];
        n.reboot = None;
        n.state.reboot = false;
        n.state.reboot_issued = false;
    }
}
