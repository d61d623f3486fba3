//! topology.conf: read where `TopologyPlugin` is `topology/tree` (switch
//! lines) or `topology/block` (block lines), into `Config::topology`, which
//! the engine turns into `sched::Topology` for placement. Without such a
//! plugin the file is not read by the daemons, and `muster check-config`
//! still finds its mistakes with file and line.
//!
//! Lines (topology.conf(5)): `SwitchName=s0 Nodes=tux[0-3] LinkSpeed=1`,
//! `SwitchName=s2 Switches=s[0-1]`, and for block topologies
//! `BlockName=b0 Nodes=tux[0-7]` and `BlockSizes=8,16` (the base block
//! size, then sizes each a power of two times the one before; every block
//! at least the base size). Nodes of slurm.conf under no switch are warned
//! as slurmctld does ("switches lack access to N nodes: ...",
//! [`check_unreached_nodes`]).

use std::collections::BTreeSet;
use std::path::Path;

use crate::lex::{self, Pair};
use crate::parse::{expand, At, AtLike};
use crate::{ConfError, Warning};

/// One `SwitchName` line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopologySwitch {
    /// `SwitchName`.
    pub name: String,
    /// `Switches`, expanded.
    pub switches: Vec<String>,
    /// `Nodes`, expanded.
    pub nodes: Vec<String>,
    /// `LinkSpeed` (a relative number, unused by Slurm's own plugins too).
    pub link_speed: Option<u64>,
    /// Line in topology.conf.
    pub line: usize,
}

/// One `BlockName` line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopologyBlock {
    /// `BlockName`.
    pub name: String,
    /// `Nodes`, expanded.
    pub nodes: Vec<String>,
    /// Line in topology.conf.
    pub line: usize,
}

/// topology.conf as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopologyConf {
    /// Switch lines in file order.
    pub switches: Vec<TopologySwitch>,
    /// Block lines in file order.
    pub blocks: Vec<TopologyBlock>,
    /// `BlockSizes`.
    pub block_sizes: Vec<u32>,
}

impl TopologyConf {
    /// Every node named on a switch or block line, each once.
    pub fn node_names(&self) -> BTreeSet<&str> {
        self.switches
            .iter()
            .flat_map(|s| s.nodes.iter())
            .chain(self.blocks.iter().flat_map(|b| b.nodes.iter()))
            .map(String::as_str)
            .collect()
    }
}

/// Parses topology.conf text; `origin` names the file in messages. A
/// line that is not a switch, block or `BlockSizes` line, a bad hostlist
/// or number, a name given twice, a switch that names an undefined switch
/// or nothing below it, and switch and block lines mixed are errors at
/// their line; an unknown key is a warning.
pub fn parse_topology_conf(
    text: &str,
    origin: &Path,
) -> Result<(TopologyConf, Vec<Warning>), ConfError> {
    let mut conf = TopologyConf::default();
    let mut warnings = Vec::new();
    let mut block_sizes_line = 0;
    let syntax = |line: usize, reason: String| ConfError::Syntax {
        file: origin.to_path_buf(),
        line,
        reason,
    };
    for logical in lex::logical_lines(text) {
        let at = At {
            file: origin,
            line: logical.line,
        };
        let pairs = lex::tokenize(&logical.text).map_err(|r| syntax(logical.line, r))?;
        let Some(first) = pairs.first() else {
            continue;
        };
        let mut unknown = |p: &Pair| {
            warnings.push(Warning {
                file: origin.to_path_buf(),
                line: logical.line,
                message: format!("unknown key {}", p.key),
            })
        };
        match first.key.to_ascii_lowercase().as_str() {
            "switchname" => {
                let mut sw = TopologySwitch {
                    name: name_of(first, &at)?,
                    switches: Vec::new(),
                    nodes: Vec::new(),
                    link_speed: None,
                    line: logical.line,
                };
                for p in &pairs[1..] {
                    match p.key.to_ascii_lowercase().as_str() {
                        "switches" => sw.switches = expand(&p.value, &p.key, &at)?,
                        "nodes" => sw.nodes = expand(&p.value, &p.key, &at)?,
                        "linkspeed" => {
                            sw.link_speed = Some(p.value.trim().parse().map_err(|_| {
                                at.invalid_at(&p.key, &p.value, "expected a whole number".into())
                            })?)
                        }
                        _ => unknown(p),
                    }
                }
                if sw.switches.is_empty() && sw.nodes.is_empty() {
                    return Err(syntax(
                        logical.line,
                        format!("switch {} has neither Switches= nor Nodes=", sw.name),
                    ));
                }
                if conf.switches.iter().any(|s| s.name == sw.name) {
                    return Err(at.invalid_at(
                        &first.key,
                        &first.value,
                        "switch defined twice".into(),
                    ));
                }
                conf.switches.push(sw);
            }
            "blockname" => {
                let mut block = TopologyBlock {
                    name: name_of(first, &at)?,
                    nodes: Vec::new(),
                    line: logical.line,
                };
                for p in &pairs[1..] {
                    match p.key.to_ascii_lowercase().as_str() {
                        "nodes" => block.nodes = expand(&p.value, &p.key, &at)?,
                        _ => unknown(p),
                    }
                }
                if block.nodes.is_empty() {
                    return Err(syntax(
                        logical.line,
                        format!("block {} has no Nodes=", block.name),
                    ));
                }
                if conf.blocks.iter().any(|b| b.name == block.name) {
                    return Err(at.invalid_at(
                        &first.key,
                        &first.value,
                        "block defined twice".into(),
                    ));
                }
                conf.blocks.push(block);
            }
            "blocksizes" => {
                for p in &pairs[1..] {
                    unknown(p);
                }
                conf.block_sizes = first
                    .value
                    .split(',')
                    .map(|n| n.trim().parse::<u32>().ok().filter(|n| *n > 0))
                    .collect::<Option<Vec<u32>>>()
                    .ok_or_else(|| {
                        at.invalid_at(
                            &first.key,
                            &first.value,
                            "expected a list of positive whole numbers".into(),
                        )
                    })?;
                // topology.conf(5): the base block size, then sizes each a
                // power of two times larger than the one before.
                if conf.block_sizes.windows(2).any(|w| {
                    w[1] <= w[0] || !w[1].is_multiple_of(w[0]) || !(w[1] / w[0]).is_power_of_two()
                }) {
                    return Err(at.invalid_at(
                        &first.key,
                        &first.value,
                        "each size must be the one before it times a power of two".into(),
                    ));
                }
                block_sizes_line = logical.line;
            }
            _ => {
                return Err(syntax(
                    logical.line,
                    format!(
                        "expected a SwitchName=, BlockName= or BlockSizes= line, not {}=",
                        first.key
                    ),
                ))
            }
        }
        if !conf.switches.is_empty() && !conf.blocks.is_empty() {
            return Err(syntax(
                logical.line,
                "switch lines and block lines mixed in one topology.conf".into(),
            ));
        }
    }
    for sw in &conf.switches {
        if let Some(missing) = sw
            .switches
            .iter()
            .find(|name| !conf.switches.iter().any(|s| &&s.name == name))
        {
            return Err(ConfError::Invalid {
                file: origin.to_path_buf(),
                line: sw.line,
                key: "Switches".into(),
                value: missing.clone(),
                reason: "no such switch in this file".into(),
            });
        }
    }
    // topology.conf(5): "Each block must have at least the planning base
    // block size count of nodes."
    if let Some(&base) = conf.block_sizes.first() {
        if let Some(b) = conf
            .blocks
            .iter()
            .find(|b| (b.nodes.len() as u64) < u64::from(base))
        {
            return Err(ConfError::Syntax {
                file: origin.to_path_buf(),
                line: b.line,
                reason: format!(
                    "block {} has {} nodes, fewer than the base block size {base} (BlockSizes= at line {block_sizes_line})",
                    b.name,
                    b.nodes.len()
                ),
            });
        }
    }
    Ok((conf, warnings))
}

/// The file's lines must be of the plugin's kind (`plugin` as
/// `Config::topology_plugin` gives it): switch lines for
/// `topology/tree`, block lines for `topology/block`, and some at all.
pub fn check_kind(topo: &TopologyConf, plugin: &str, origin: &Path) -> Result<(), ConfError> {
    let (want, have) = if plugin == "topology/block" {
        (
            "BlockName=",
            !topo.blocks.is_empty() && topo.switches.is_empty(),
        )
    } else {
        (
            "SwitchName=",
            !topo.switches.is_empty() && topo.blocks.is_empty(),
        )
    };
    if have {
        return Ok(());
    }
    Err(ConfError::Syntax {
        file: origin.to_path_buf(),
        line: 1,
        reason: format!("TopologyPlugin={plugin} needs {want} lines in this file"),
    })
}

fn name_of(pair: &Pair, at: &At<'_>) -> Result<String, ConfError> {
    let name = pair.value.trim();
    if name.is_empty() || name.contains([',', '[', ']']) {
        return Err(at.invalid_at(&pair.key, &pair.value, "expected one name".into()));
    }
    Ok(name.to_string())
}

/// Warnings for the nodes a topology names that slurm.conf does not
/// define, at the line naming them (one per line).
pub fn check_topology_nodes(
    topo: &TopologyConf,
    node_names: &BTreeSet<&str>,
    origin: &Path,
) -> Vec<Warning> {
    let lines = topo
        .switches
        .iter()
        .map(|s| (s.line, &s.nodes))
        .chain(topo.blocks.iter().map(|b| (b.line, &b.nodes)));
    let mut out = Vec::new();
    for (line, nodes) in lines {
        let unknown: Vec<&str> = nodes
            .iter()
            .map(String::as_str)
            .filter(|n| !node_names.contains(n))
            .collect();
        if !unknown.is_empty() {
            out.push(Warning {
                file: origin.to_path_buf(),
                line,
                message: format!("node {} not in slurm.conf", hostlist::compress(&unknown)),
            });
        }
    }
    out
}

/// Slurm's warning at start for the nodes of slurm.conf (`node_names`, in
/// its order) under no switch of a `topology/tree` file: "switches lack
/// access to N nodes: LIST" (at the first switch line). Such nodes take no
/// job: placement keeps to the nodes under one switch. None for blocks,
/// or where every node is under a switch.
pub fn check_unreached_nodes(
    topo: &TopologyConf,
    node_names: &[&str],
    origin: &Path,
) -> Option<Warning> {
    let first = topo.switches.first()?;
    let reached = topo.node_names();
    let lacking: Vec<&str> = node_names
        .iter()
        .copied()
        .filter(|n| !reached.contains(n))
        .collect();
    (!lacking.is_empty()).then(|| Warning {
        file: origin.to_path_buf(),
        line: first.line,
        message: format!(
            "switches lack access to {} nodes: {}",
            lacking.len(),
            hostlist::compress(&lacking)
        ),
    })
}

#[cfg(test)]
mod tests;
