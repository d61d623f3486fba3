//! The watch stream (`CtldRequest::Watch`, `proto::watch`): every job and
//! node change, numbered, to the watchers that asked for it.
//!
//! ```text
//!  engine task: batch applied -> commit -> replies and commands leave
//!               -> Hub::publish: jobs the engine noted as changed
//!                  (Engine::take_watch_changes) and nodes whose state
//!                  differs from the last look -> numbered events -> ring
//!                  -> each watcher's channel -> its connection's writer
//! ```
//!
//! Cost when nobody watches: none. The hub is idle until the first
//! `Watch`; it then has the engine note changed jobs, looks at every
//! node's state after each batch, and keeps the last [`RING`] events so
//! that a watcher that reconnects gets what it missed. It goes idle again
//! (notes off, ring emptied) [`KEEP_ARMED_SECS`] after the last watcher
//! left. Events are made after the batch is on disk and after its replies
//! and commands have left, so a pass's launches never wait for them and a
//! watcher never sees a change that a crash could undo.
//!
//! A watcher whose channel is full (it reads slower than changes come)
//! is dropped: its connection closes and it resumes from its last event
//! out of the ring. A resume from a position the ring no longer holds, or
//! from another controller process (`WatchBatch::epoch`), or after the
//! hub went idle, starts with `reset` (proto::watch).
//!
//! Permissions: a watcher sees what squeue and sinfo would show it
//! ([`visible`], through the engine's `Sight` for the watcher, taken
//! again at each batch so that an AdminLevel or a reconfigured
//! `PrivateData` applies at once): under `PrivateData=jobs` a user gets
//! the events of their own jobs alone, under `nodes` no node event.

use engine::privacy::Sight;
use engine::Engine;
use model::{JobId, JobState, NodeState, Timestamp};
use proto::watch::{
    JobEvent, NodeChange, WatchBatch, WatchChange, WatchEvent, WatchPosition, WatchRequest,
};
use proto::{CtldResponse, Identity};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Events the ring keeps for watchers that reconnect.
pub const RING: usize = 100_000;

/// How long the hub keeps noting changes after the last watcher left, so
/// that a watcher that reconnects within it resumes without a reset.
pub const KEEP_ARMED_SECS: i64 = 600;

/// Batches a watcher's channel holds before it is dropped as too slow.
pub const WATCHER_QUEUE: usize = 4096;

/// Events sent per batch when a resume catches up from the ring.
const CATCH_UP_CHUNK: usize = 1024;

/// A watcher's channel to its connection.
pub type WatchTx = mpsc::Sender<CtldResponse>;

struct Watcher {
    who: Identity,
    req: WatchRequest,
    tx: WatchTx,
}

/// The stream's state, owned by the engine task.
pub struct Hub {
    /// This process: its start, in ms since the epoch.
    epoch: u64,
    /// Noting changes (someone watches, or did within KEEP_ARMED_SECS).
    armed: bool,
    /// The number of the last event made.
    last: u64,
    ring: VecDeque<Arc<WatchEvent>>,
    watchers: Vec<Watcher>,
    /// Every job's state as the stream last told it.
    jobs: BTreeMap<JobId, JobState>,
    /// Every node's state as the stream last told it.
    nodes: Vec<NodeState>,
    /// When the last watcher left (while armed with none).
    idle_since: Option<Timestamp>,
    /// A buffer for the engine's notes.
    changed: Vec<JobId>,
}

/// Whether a watcher of `sight` may see `change`: as squeue (a job) and
/// sinfo (a node) would show it.
fn visible(sight: &Sight, change: &WatchChange) -> bool {
    match change {
        WatchChange::Job(j) => sight.job(j.uid),
        WatchChange::Node(_) => sight.nodes(),
    }
}

impl Hub {
    /// An idle hub for this process.
    pub fn new() -> Hub {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        Hub {
            epoch,
            armed: false,
            last: 0,
            ring: VecDeque::new(),
            watchers: Vec::new(),
            jobs: BTreeMap::new(),
            nodes: Vec::new(),
            idle_since: None,
            changed: Vec::new(),
        }
    }

    /// Open streams.
    pub fn watchers(&self) -> u64 {
        self.watchers.len() as u64
    }

    /// Events the ring holds.
    pub fn ring_len(&self) -> u64 {
        self.ring.len() as u64
    }

    /// Events numbered so far.
    pub fn events(&self) -> u64 {
        self.last
    }

    fn arm(&mut self, engine: &mut Engine) {
        if self.armed {
            return;
        }
        self.armed = true;
        engine.set_watch_notes(true);
        self.jobs = engine.job_states().collect();
        self.nodes = engine.nodes().iter().map(|n| n.state).collect();
    }

    fn disarm(&mut self, engine: &mut Engine) {
        self.armed = false;
        engine.set_watch_notes(false);
        self.ring = VecDeque::new();
        self.jobs = BTreeMap::new();
        self.nodes = Vec::new();
        self.idle_since = None;
    }

    /// A new watcher: what it missed (or a reset), then every change as
    /// it is published.
    pub fn subscribe(
        &mut self,
        engine: &mut Engine,
        who: Identity,
        req: WatchRequest,
        tx: WatchTx,
    ) {
        self.arm(engine);
        self.idle_since = None;
        let oldest = self.ring.front().map_or(self.last + 1, |e| e.seq);
        let start = match req.after {
            None => None,
            Some(WatchPosition { epoch, seq })
                if epoch == self.epoch && seq <= self.last && seq + 1 >= oldest =>
            {
                Some(seq)
            }
            Some(_) => None,
        };
        let reset = req.after.is_some() && start.is_none();
        let mut first = WatchBatch {
            epoch: self.epoch,
            reset,
            last: self.last,
            events: Vec::new(),
        };
        let sight = engine.sight(&who);
        if let Some(after) = start {
            let skip = (after + 1 - oldest) as usize;
            let missed: Vec<WatchEvent> = self
                .ring
                .iter()
                .skip(skip)
                .filter(|e| req.wants(&e.change) && visible(&sight, &e.change))
                .map(|e| (**e).clone())
                .collect();
            let mut chunks = missed.chunks(CATCH_UP_CHUNK).peekable();
            while let Some(chunk) = chunks.next() {
                let batch = WatchBatch {
                    events: chunk.to_vec(),
                    ..first.clone()
                };
                if chunks.peek().is_none() {
                    first = batch;
                } else if tx.try_send(CtldResponse::WatchEvents(batch)).is_err() {
                    return;
                }
            }
        }
        if tx.try_send(CtldResponse::WatchEvents(first)).is_err() {
            return;
        }
        self.watchers.push(Watcher { who, req, tx });
    }

    /// Makes the events of the batch just applied and sends each watcher
    /// those it wants. Nothing while idle.
    pub fn publish(&mut self, engine: &mut Engine, now: Timestamp) {
        if !self.armed {
            return;
        }
        self.watchers.retain(|w| !w.tx.is_closed());
        if self.watchers.is_empty() {
            let since = *self.idle_since.get_or_insert(now);
            if now - since >= KEEP_ARMED_SECS {
                self.disarm(engine);
                return;
            }
        }
        let seq_before = self.last;
        let mut changed = std::mem::take(&mut self.changed);
        engine.take_watch_changes(&mut changed);
        for &id in &changed {
            let now_state = engine.job(id).map(|j| j.state);
            let before = self.jobs.get(&id).copied();
            let events: Vec<(JobEvent, Option<JobState>)> = match (before, now_state) {
                (_, None) => {
                    self.jobs.remove(&id);
                    continue;
                }
                (Some(b), Some(s)) if b == s => continue,
                (None, Some(JobState::Pending)) => vec![(JobEvent::Submitted, None)],
                // Submitted and moved on within one batch (started by the
                // pass after the submission, or refused): both are told.
                (None, Some(s)) => {
                    let next = if s.is_finished() {
                        JobEvent::Ended
                    } else if s == JobState::Running {
                        JobEvent::Started
                    } else {
                        JobEvent::StateChanged
                    };
                    vec![(JobEvent::Submitted, None), (next, Some(JobState::Pending))]
                }
                (Some(b), Some(s)) if s.is_finished() => vec![(JobEvent::Ended, Some(b))],
                (Some(JobState::Pending), Some(JobState::Running)) => {
                    vec![(JobEvent::Started, Some(JobState::Pending))]
                }
                (Some(b), Some(_)) => vec![(JobEvent::StateChanged, Some(b))],
            };
            for (event, previous) in events {
                if let Some(change) = engine.watch_job(id, event, previous) {
                    self.push(now, WatchChange::Job(change));
                }
            }
            if let Some(s) = now_state {
                self.jobs.insert(id, s);
            }
        }
        self.changed = changed;
        let nodes = engine.nodes();
        self.nodes
            .resize(nodes.len(), NodeState::new(model::NodeBase::Unknown));
        let mut node_changes = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if self.nodes[i] != n.state {
                node_changes.push(NodeChange {
                    name: n.conf.name.clone(),
                    state: n.state.scontrol_string(),
                    previous: self.nodes[i].scontrol_string(),
                    reason: n.reason.clone(),
                    partitions: n.partitions.clone(),
                });
                self.nodes[i] = n.state;
            }
        }
        for c in node_changes {
            self.push(now, WatchChange::Node(c));
        }
        // This batch's events: the ring's last ones (all of them, unless
        // more came at once than the ring holds).
        let n_fresh = ((self.last - seq_before) as usize).min(self.ring.len());
        let fresh: Vec<Arc<WatchEvent>> = self
            .ring
            .iter()
            .skip(self.ring.len() - n_fresh)
            .cloned()
            .collect();
        if fresh.is_empty() {
            return;
        }
        let epoch = self.epoch;
        let last = self.last;
        self.watchers.retain(|w| {
            let sight = engine.sight(&w.who);
            let events: Vec<WatchEvent> = fresh
                .iter()
                .filter(|e| w.req.wants(&e.change) && visible(&sight, &e.change))
                .map(|e| (**e).clone())
                .collect();
            if events.is_empty() {
                return true;
            }
            let batch = WatchBatch {
                epoch,
                reset: false,
                last,
                events,
            };
            // Full: too slow; it resumes from the ring after reconnecting.
            w.tx.try_send(CtldResponse::WatchEvents(batch)).is_ok()
        });
    }

    fn push(&mut self, now: Timestamp, change: WatchChange) {
        self.last += 1;
        if self.ring.len() == RING {
            self.ring.pop_front();
        }
        self.ring.push_back(Arc::new(WatchEvent {
            seq: self.last,
            time: now,
            change,
        }));
    }
}

#[cfg(test)]
mod tests;
