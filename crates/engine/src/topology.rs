//! The cluster's network topology (`TopologyPlugin=topology/tree` or
//! `topology/block` with topology.conf, `conf::Config::topology`) as the
//! scheduler reads it (`sched::Topology`, on every partition's view), and
//! what jobs see of it: `--switches` with its wait, the topology address
//! of a node (`SLURM_TOPOLOGY_ADDR`), `scontrol show topology`.
//!
//! Without such a plugin the partitions carry no topology and placement
//! is the plain one.

use crate::{Engine, Job};
use model::Timestamp;
use sched::{NodeIdx, Switch, TopoKind, TopoRef, Topology};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Slurm's default `max_switch_wait` (seconds).
pub(crate) const DEFAULT_MAX_SWITCH_WAIT: u32 = 300;

/// The scheduler's topology from the configuration, in node indexes;
/// `None` without a topology plugin. Nodes topology.conf names that
/// slurm.conf does not are left out (the daemons warned at start).
pub(crate) fn build(cfg: &conf::Config, node_by_name: &BTreeMap<String, NodeIdx>) -> TopoRef {
    let topo = cfg.topology.as_ref()?;
    let kind = match cfg.topology_plugin()? {
        "topology/block" => TopoKind::Block,
        _ => TopoKind::Tree,
    };
    let nodes_of = |names: &[String]| -> Vec<NodeIdx> {
        names
            .iter()
            .filter_map(|n| node_by_name.get(n).copied())
            .collect()
    };
    let switches: Vec<Switch> = match kind {
        TopoKind::Tree => {
            let index: BTreeMap<&str, u32> = topo
                .switches
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), i as u32))
                .collect();
            topo.switches
                .iter()
                .map(|s| Switch {
                    name: s.name.clone(),
                    level: 0,
                    link_speed: s.link_speed.unwrap_or(1),
                    parent: None,
                    children: s
                        .switches
                        .iter()
                        .filter_map(|c| index.get(c.as_str()).copied())
                        .collect(),
                    nodes: nodes_of(&s.nodes),
                })
                .collect()
        }
        TopoKind::Block => topo
            .blocks
            .iter()
            .map(|b| Switch {
                name: b.name.clone(),
                level: 0,
                link_speed: 1,
                parent: None,
                children: Vec::new(),
                nodes: nodes_of(&b.nodes),
            })
            .collect(),
    };
    Some(Arc::new(Topology::new(
        kind,
        switches,
        node_by_name.len(),
        topo.block_sizes.clone(),
    )))
}

impl Engine {
    /// The topology placement uses, if any.
    pub fn topology(&self) -> Option<&Topology> {
        self.part_views.first().and_then(|p| p.topology.as_deref())
    }

    /// When `job`'s `--switches` limit gives way: its eligible time plus
    /// its max-time (or `max_switch_wait`). None without a limit.
    pub(crate) fn switch_deadline(&self, job: &Job) -> Option<Timestamp> {
        job.desc.switches?;
        let wait = job.desc.switch_wait.unwrap_or_else(|| {
            self.cfg
                .scheduler_params
                .max_switch_wait
                .unwrap_or(DEFAULT_MAX_SWITCH_WAIT)
        });
        Some(job.eligible_time.max(job.submit_time) + i64::from(wait))
    }

    /// `--switches=N` as the scheduler reads it at `now`: N until the
    /// job's wait is over, then no limit.
    pub(crate) fn max_leaves_at(&self, job: &Job, now: Timestamp) -> Option<u32> {
        let n = job.desc.switches?;
        self.topology()?;
        self.switch_deadline(job)
            .is_some_and(|t| now < t)
            .then_some(n)
    }

    /// The earliest moment after `after` (the last look,
    /// `switch_wait_ended`) a pending job's `--switches` limit gives way:
    /// the engine wakes then and makes the job's request again.
    pub(crate) fn switch_wake(&self, after: Timestamp) -> Option<Timestamp> {
        self.topology()?;
        self.jobs
            .values()
            .filter(|j| j.state == model::JobState::Pending && j.desc.switches.is_some())
            .filter_map(|j| self.switch_deadline(j))
            .filter(|t| *t > after)
            .min()
    }

    /// Whether some pending job's `--switches` limit gave way since the
    /// last look (its requests must be made again: `touch`).
    pub(crate) fn switch_wait_ended(&mut self, now: Timestamp) -> bool {
        let from = std::mem::replace(&mut self.switch_checked, now);
        self.topology().is_some()
            && self.jobs.values().any(|j| {
                j.state == model::JobState::Pending
                    && self
                        .switch_deadline(j)
                        .is_some_and(|t| from < t && t <= now)
            })
    }

    /// `scontrol show topology [NODE]` as Slurm 22.05 prints it: a line per
    /// switch (`SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[1-2] `; a switch
    /// above others shows every node below it and its `Switches=`), or,
    /// with `node`, the switches that hold it. Blocks: a line per block
    /// (`BlockName=b0 BlockIndex=0 Nodes=n[1-4] BlockSize=4`), then
    /// `BlockSizes=`. None without a topology.
    pub fn show_topology(&self, node: Option<&str>) -> Option<String> {
        let topo = self.topology()?;
        let name_of = |n: &NodeIdx| self.nodes[n.0 as usize].conf.name.as_str();
        let idx = node.and_then(|n| self.node_idx(n));
        if node.is_some() && idx.is_none() {
            return Some(String::new());
        }
        let mut out = String::new();
        for (i, s) in topo.switches.iter().enumerate() {
            let mut below: Vec<NodeIdx> = Vec::new();
            let mut stack = vec![i as u32];
            let mut seen = 0;
            while let Some(x) = stack.pop() {
                seen += 1;
                if seen > topo.switches.len() * 2 {
                    break;
                }
                let sw = &topo.switches[x as usize];
                below.extend(sw.nodes.iter().copied());
                stack.extend(sw.children.iter().copied());
            }
            below.sort_unstable();
            below.dedup();
            if idx.is_some_and(|n| !below.contains(&n)) {
                continue;
            }
            let names: Vec<&str> = below.iter().map(name_of).collect();
            match topo.kind {
                TopoKind::Tree => {
                    out.push_str(&format!(
                        "SwitchName={} Level={} LinkSpeed={} ",
                        s.name, s.level, s.link_speed
                    ));
                    if !names.is_empty() {
                        out.push_str(&format!("Nodes={} ", hostlist::compress(&names)));
                    }
                    if !s.children.is_empty() {
                        let kids: Vec<&str> = s
                            .children
                            .iter()
                            .map(|c| topo.switches[*c as usize].name.as_str())
                            .collect();
                        out.push_str(&format!("Switches={} ", hostlist::compress(&kids)));
                    }
                    out.push('\n');
                }
                TopoKind::Block => {
                    out.push_str(&format!(
                        "BlockName={} BlockIndex={} Nodes={} BlockSize={}\n",
                        s.name,
                        i,
                        hostlist::compress(&names),
                        names.len()
                    ));
                }
            }
        }
        if topo.kind == TopoKind::Block && idx.is_none() && !topo.block_sizes.is_empty() {
            let sizes: Vec<String> = topo.block_sizes.iter().map(u32::to_string).collect();
            out.push_str(&format!("BlockSizes={}\n", sizes.join(",")));
        }
        Some(out)
    }
}

impl Engine {
    /// `--segment=N` under a topology plugin, checked at submission as
    /// Slurm's block evaluation refuses it
    /// (ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE, "Requested topology
    /// configuration is not available"): N must divide the job's node
    /// count and, with `BlockSizes`, be no larger than the base block.
    /// Without a topology plugin `--segment` does nothing.
    pub(crate) fn check_segment(&self, job: &Job) -> Result<(), proto::SlurmError> {
        let (Some(seg), Some(topo)) = (job.desc.segment, self.topology()) else {
            return Ok(());
        };
        let seg = seg.max(1);
        let too_big = topo.kind == TopoKind::Block && topo.base_block().is_some_and(|bs| seg > bs);
        if too_big || !job.min_nodes.max(1).is_multiple_of(seg) {
            return Err(proto::SlurmError::RequestedTopoConfigUnavailable);
        }
        Ok(())
    }
}
