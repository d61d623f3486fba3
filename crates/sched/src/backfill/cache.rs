//! The pass cache: what one pass keeps for the next (`PassCache`), the
//! timeline's memory, the node orders, the diagnoses by shape, and the
//! probes a caller asks whether a job left out of a pass could start.

use super::shape::{shape_key, spread_key, ShapeKey};
use super::timeline::Timeline;
use super::walk::PassState;
use super::{limit_secs, ClusterView, PartSize, Policy, SchedConfig};
use crate::placement::{JobRequest, NodeView, PartView, Unfit};
use std::collections::BTreeMap;

/// What one pass keeps for the next (`plan_with`): the timeline's memory,
/// its sorted node orders, and why jobs of each shape wait when they have no
/// plan (that depends only on the nodes' configuration and availability and
/// on the partitions, which are checked against the cache's at every pass).
#[derive(Clone, Debug, Default)]
pub struct PassCache {
    /// Per node: what `diagnose` reads of it, as the cache's entries saw it.
    nodes: Vec<NodeKey>,
    /// The partitions the cache's entries and node orders are for.
    parts: Vec<PartView>,
    /// Their sizes (`PartSize::all`), and whether every node is available,
    /// as of `nodes` and `parts`: made again only when either changes.
    pub(super) part_sizes: Vec<PartSize>,
    pub(super) all_up: bool,
    /// Why a job of each shape (time left out) waits when it has no plan.
    pub(super) diagnosed: BTreeMap<ShapeKey, Unfit>,
    pub(super) timeline: Option<Box<Timeline>>,
    /// The last pass, to go on with (`plan_more`), and what it learnt
    /// (`PassCache::cannot_start`).
    pub(super) pass: Option<PassState>,
    /// The spread keys numbered (`Probe`, `PassState::spread_failed`).
    pub(super) spread_ids: SpreadIds,
    /// What the caller said of the next pass's views
    /// (`PassCache::views_differ_only_on`).
    pub(super) hint: Option<Vec<usize>>,
    /// Set by a caller that goes on with the next pass (`plan_more`):
    /// that pass leaves the jobs it defers (`BackfillOrder::Shortest`)
    /// undecided, for the caller to try after its own
    /// (`take_deferred`), instead of trying them at its end.
    pub hold_deferred: bool,
    /// Set by the caller before a pass: every pending job, the ones the
    /// pass is not given included (`plan_more`), may put its tasks on any
    /// free CPUs (`spreads`), and no node that holds running jobs refuses
    /// new ones (`gives_back_apart`). With `PlanOn::Auto` the pass plans
    /// over the pool only then (`pool_is_exact`).
    pub pool_exact: bool,
    /// Set by the caller before a pass: windows in which nodes take no job
    /// of the pass (advance reservations), and the jobs decided before they
    /// are laid on (the reservations' own jobs). See [`Blocks`].
    pub blocks: Blocks,
}

/// Windows in which nodes take no job (Slurm's advance reservations, seen
/// from the jobs outside them): each is laid on the timeline as a plan that
/// holds its nodes whole over `[from, until)` before the pass decides any
/// job not in `first`, so those jobs start now only where their run ends
/// before the window or lies on other nodes, and are planned after it.
/// The jobs in `first` (the reservations' own, kept to their nodes by the
/// caller) are decided before any window is laid, in priority order.
/// With windows the pass plans on nodes, never over the pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blocks {
    /// The windows.
    pub windows: Vec<Block>,
    /// The jobs decided before the windows are laid on.
    pub first: std::collections::BTreeSet<model::JobId>,
}

/// One window of [`Blocks`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Its nodes.
    pub nodes: Vec<crate::NodeIdx>,
    /// When it begins (a time past counts from now).
    pub from: model::Timestamp,
    /// When it ends.
    pub until: model::Timestamp,
}

/// Whether a job with `ntasks` tasks for `d` seconds is covered by one of
/// the `failed` (tasks, seconds) of its spread shape that could not start:
/// no more tasks and no longer a limit.
pub(super) fn covered(failed: &[(u32, i64)], ntasks: u32, d: i64) -> bool {
    failed.iter().any(|&(n, t)| n <= ntasks && t <= d)
}

/// What `PassCache::cannot_start` reads of a job, made once
/// (`PassCache::probe`): 16 bytes, so that a caller keeping one per
/// waiting job reads little to ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Its `spread_key`'s number in `SpreadIds` (`NO_SPREAD`: the pass
    /// learns nothing about it), valid in that numbering's `epoch`.
    spread: u32,
    epoch: u32,
    ntasks: u32,
    limit: i64,
}

/// `Probe::spread` of a job without a spread key.
const NO_SPREAD: u32 = u32::MAX;

/// Spread keys numbered, so that a probe and a pass's memo of the shapes
/// that could not start name a shape by a number. Kept by the cache from
/// pass to pass; emptied between passes past `SPREAD_IDS_MAX` keys, which
/// starts a new `epoch` (probes of an older one tell nothing).
#[derive(Clone, Debug, Default)]
pub(super) struct SpreadIds {
    ids: std::collections::HashMap<ShapeKey, u32, ShapeHash>,
    epoch: u32,
}

/// Shape keys are hashed a word at a time: every job a pass decides looks
/// its shape up, and the keys are the scheduler's own, made from requests.
type ShapeHash = model::hash::WordHash;

/// Distinct spread keys kept at most (a deep queue has a few dozen).
const SPREAD_IDS_MAX: usize = 1 << 16;

impl SpreadIds {
    pub(super) fn id(&mut self, key: ShapeKey) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(key).or_insert(next)
    }

    /// Empties a numbering grown past `SPREAD_IDS_MAX`: only between
    /// passes (a pass's memo holds numbers).
    pub(super) fn trim(&mut self) {
        if self.ids.len() > SPREAD_IDS_MAX {
            self.ids.clear();
            self.epoch = self.epoch.wrapping_add(1);
        }
    }
}

/// A node's configuration and availability: what placement on an empty
/// node reads (`diagnose`).
#[derive(Clone, Debug, PartialEq)]
struct NodeKey {
    cpus: u32,
    threads: u32,
    real_memory: u64,
    weight: u32,
    available: bool,
    features: Vec<String>,
    gres: Vec<(String, Option<String>, usize)>,
}

fn node_key_matches(k: &NodeKey, n: &NodeView) -> bool {
    k.cpus == n.cpus
        && k.threads == n.threads
        && k.real_memory == n.real_memory
        && k.weight == n.weight
        && k.available == n.available
        && k.features == n.features
        && k.gres.len() == n.gres.len()
        && k.gres
            .iter()
            .zip(&n.gres)
            .all(|(a, b)| a.0 == b.name && a.1 == b.type_ && a.2 == b.indexes.len())
}

impl PassCache {
    /// Whether `job`, had it come after every job of the last pass
    /// (`plan_with` with this cache), could not have started now either:
    /// an earlier job of that pass with its `spread_key`, no more tasks
    /// and no longer a limit could not. False where that is not known
    /// (other jobs: only a pass tells). The nodes only fill up as a pass
    /// goes on, so a caller that left `job` out of a pass may keep its
    /// decision to wait when this holds.
    pub fn cannot_start(&self, job: &JobRequest) -> bool {
        let Some(key) = spread_key(job, &shape_key(job)) else {
            return false;
        };
        // A shape never numbered never failed.
        let Some(&spread) = self.spread_ids.ids.get(&key) else {
            return false;
        };
        self.cannot_start_as(&self.probe_as(job, spread))
    }

    /// `job`'s probe, for `cannot_start_as`.
    pub fn probe(&mut self, job: &JobRequest) -> Probe {
        let spread = spread_key(job, &shape_key(job)).map_or(NO_SPREAD, |k| self.spread_ids.id(k));
        self.probe_as(job, spread)
    }

    /// `job`'s probe, its spread key numbered `spread`.
    fn probe_as(&self, job: &JobRequest, spread: u32) -> Probe {
        Probe {
            spread,
            epoch: self.spread_ids.epoch,
            ntasks: job.ntasks,
            limit: limit_secs(job.time_limit),
        }
    }

    /// Whether a job on `partitions` that cannot start, had it come after
    /// every job of the last pass, would only have been told to wait there
    /// with reason Priority, without a plan: a blocked job waits before it
    /// in each of its partitions, and each has as many planned jobs as
    /// `cfg` plans (so it would get a plan only for its age, which the
    /// caller checks: `aged`).
    pub fn settled(&self, partitions: &[usize], cfg: &SchedConfig) -> bool {
        let Some(pass) = &self.pass else {
            return false;
        };
        let reserve = match cfg.policy {
            Policy::Fcfs => return false,
            Policy::Easy => {
                if pass.n_planned == 0 {
                    return false;
                }
                0
            }
            Policy::Backfill => match cfg.bf_job_part_count_reserve {
                Some(m) => m,
                None => return false,
            },
        };
        pass.blocked_with(partitions, reserve)
    }

    /// The partitions below 64 that `settled` holds for, as a bit set:
    /// `settled(ps)` for partitions all below 64 is `ps` not empty and
    /// every one of its bits set here.
    pub fn settled_parts(&self, cfg: &SchedConfig) -> u64 {
        let n = self
            .pass
            .as_ref()
            .map_or(0, |s| s.blocked_parts.len().min(64));
        (0..n)
            .filter(|&p| self.settled(&[p], cfg))
            .fold(0, |m, p| m | 1 << p)
    }

    /// Whether the last pass, gone on with `plan_more`, would try `job`
    /// only after every job it does not defer (`BackfillOrder::Shortest`):
    /// the caller then tries it after them, by its time limit.
    pub fn defers(&self, job: &JobRequest, cfg: &SchedConfig) -> bool {
        self.pass.as_ref().is_some_and(|p| p.defers(job, cfg))
    }

    /// The jobs the last pass deferred and left undecided
    /// (`hold_deferred`), as indices in its view's jobs, in priority
    /// order.
    pub fn take_deferred(&mut self) -> Vec<usize> {
        self.pass
            .as_mut()
            .map(|p| std::mem::take(&mut p.deferred))
            .unwrap_or_default()
    }

    /// Whether the last pass planned over the pool (`PlanOn`).
    pub fn last_pooled(&self) -> bool {
        self.timeline.as_ref().is_some_and(|t| t.pool_pass)
    }

    /// `cannot_start` for the job `probe` was made of (a caller that asks
    /// about the same jobs pass after pass keeps their probes).
    pub fn cannot_start_as(&self, probe: &Probe) -> bool {
        if probe.spread == NO_SPREAD || probe.epoch != self.spread_ids.epoch {
            return false;
        }
        self.pass
            .as_ref()
            .and_then(|p| p.spread_failed.get(&probe.spread))
            .is_some_and(|f| covered(f, probe.ntasks, probe.limit))
    }

    /// Forgets what no longer holds for `view`.
    /// Tells the cache that the views the next pass gets (`plan_with`,
    /// `plan_with_changes`) differ from the ones the last pass got only on
    /// the nodes at these indices, and that its partitions are the same:
    /// the pass then looks only at those nodes for what changed, instead
    /// of comparing every node and partition. Kept until a pass takes the
    /// views in. (Debug builds compare every node and check the hint.)
    pub fn views_differ_only_on(&mut self, nodes: Vec<usize>) {
        self.hint = Some(nodes);
    }

    pub(super) fn check(&mut self, view: &ClusterView, hint: Option<&[usize]>) {
        let same_size = self.nodes.len() == view.nodes.len();
        let (same_nodes, same_parts) = match hint {
            // Only the nodes named can differ, and the partitions do not.
            Some(changed) if same_size => (
                changed
                    .iter()
                    .all(|&i| node_key_matches(&self.nodes[i], &view.nodes[i])),
                true,
            ),
            _ => (
                same_size
                    && self
                        .nodes
                        .iter()
                        .zip(view.nodes)
                        .all(|(k, n)| node_key_matches(k, n)),
                self.parts.as_slice() == view.parts,
            ),
        };
        debug_assert!(
            hint.is_none()
                || !same_size
                || (same_nodes
                    == self
                        .nodes
                        .iter()
                        .zip(view.nodes)
                        .all(|(k, n)| node_key_matches(k, n))
                    && self.parts.as_slice() == view.parts),
            "a hint left out a node or partition that changed"
        );
        if same_nodes && same_parts {
            return;
        }
        self.diagnosed.clear();
        if !same_parts {
            self.parts = view.parts.to_vec();
            if let Some(tl) = self.timeline.as_mut() {
                tl.orders = [Vec::new(), Vec::new()];
            }
        }
        if !same_nodes {
            self.nodes = view
                .nodes
                .iter()
                .map(|n| NodeKey {
                    cpus: n.cpus,
                    threads: n.threads,
                    real_memory: n.real_memory,
                    weight: n.weight,
                    available: n.available,
                    features: n.features.clone(),
                    gres: n
                        .gres
                        .iter()
                        .map(|g| (g.name.clone(), g.type_.clone(), g.indexes.len()))
                        .collect(),
                })
                .collect();
        }
        self.part_sizes = PartSize::all(view.nodes, view.parts);
        self.all_up = view.nodes.iter().all(|n| n.available);
    }
}
