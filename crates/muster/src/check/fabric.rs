//! `muster check-config --fabric`: what the node daemons reported of the
//! network fabric when they registered (`proto::FabricReport`, from the
//! site's `MusterTopologyProbe` script, LLDP, InfiniBand sysfs: noded's
//! `daemon::fabric`) compared with topology.conf. Every disagreement is a
//! warning at the topology.conf line it concerns:
//!
//! ```text
//! topology.conf:2: warning: node node3 reports leaf switch s0 (MusterTopologyProbe), but topology.conf puts it under s1
//! topology.conf: warning: node node9 reports leaf switch s4 (lldp), but topology.conf puts it under no switch
//! ```
//!
//! Also: a switch above the leaf that differs, a probe that failed, a node
//! that reported nothing while a probe is configured, and nodes under one
//! top switch whose active InfiniBand ports are on different subnets
//! (subnet prefix and subnet manager LID), which no switch joins.

use std::collections::BTreeMap;
use std::path::Path;

use proto::FabricReport;

use super::{Finding, Severity};

/// The findings, then the `fabric:` summary line.
pub fn compare(
    topo: &conf::TopologyConf,
    topo_path: &Path,
    node_names: &[&str],
    probe_configured: bool,
    reports: &[(String, FabricReport)],
) -> (Vec<Finding>, String) {
    let blocks = !topo.blocks.is_empty();
    let what = if blocks { "block" } else { "leaf switch" };
    let warn = |line: Option<usize>, message: String| Finding {
        file: topo_path.to_path_buf(),
        line,
        severity: Severity::Warning,
        message,
    };
    // Each node's place in the file: the line naming it, and the switches
    // from there up (leaf first).
    let mut place: BTreeMap<&str, (usize, Vec<&str>)> = BTreeMap::new();
    for s in &topo.switches {
        for n in &s.nodes {
            place
                .entry(n.as_str())
                .or_insert_with(|| (s.line, path_up(topo, &s.name)));
        }
    }
    for b in &topo.blocks {
        for n in &b.nodes {
            place
                .entry(n.as_str())
                .or_insert_with(|| (b.line, vec![b.name.as_str()]));
        }
    }
    let line_of = |name: &str| {
        topo.switches
            .iter()
            .map(|s| (s.name.as_str(), s.line))
            .chain(topo.blocks.iter().map(|b| (b.name.as_str(), b.line)))
            .find(|(n, _)| *n == name)
            .map(|(_, l)| l)
    };
    let mut out = Vec::new();
    let reported: BTreeMap<&str, &FabricReport> =
        reports.iter().map(|(n, r)| (n.as_str(), r)).collect();
    for (node, r) in &reported {
        if !r.error.is_empty() {
            out.push(warn(None, format!("node {node}: {}", r.error)));
        }
        let Some(leaf) = r.switches.first() else {
            continue;
        };
        let src = &r.source;
        match place.get(node) {
            None => out.push(warn(
                None,
                format!("node {node} reports {what} {leaf} ({src}), but topology.conf puts it under no {}", if blocks { "block" } else { "switch" }),
            )),
            Some((line, path)) if path[0] != leaf.as_str() => {
                let named = if line_of(leaf).is_some() {
                    String::new()
                } else {
                    ", a name topology.conf does not have".to_string()
                };
                out.push(warn(
                    Some(*line),
                    format!(
                        "node {node} reports {what} {leaf} ({src}{named}), but topology.conf puts it under {}",
                        path[0]
                    ),
                ));
            }
            Some((_, path)) => {
                // The leaf agrees: the switches above, as far as reported.
                for (k, above) in r.switches.iter().enumerate().skip(1) {
                    let file = path.get(k).copied();
                    if file == Some(above.as_str()) {
                        continue;
                    }
                    out.push(warn(
                        line_of(path[k - 1]),
                        format!(
                            "node {node} reports switch {above} above {} ({src}), but topology.conf has {}",
                            r.switches[k - 1],
                            file.map_or_else(|| "no switch there".to_string(), |f| format!("{f} there")),
                        ),
                    ));
                    break;
                }
            }
        }
    }
    if probe_configured {
        let silent: Vec<&str> = node_names
            .iter()
            .copied()
            .filter(|n| {
                reported
                    .get(n)
                    .is_none_or(|r| r.switches.is_empty() && r.error.is_empty())
            })
            .collect();
        if !silent.is_empty() {
            out.push(warn(
                None,
                format!(
                    "{} reported no switch though MusterTopologyProbe is set (not registered since the controller started, or an older daemon)",
                    plural_nodes(&silent)
                ),
            ));
        }
    }
    out.extend(
        subnet_splits(topo, &reported, &place)
            .into_iter()
            .map(|(line, m)| warn(line, m)),
    );
    let named = reported.values().filter(|r| !r.switches.is_empty()).count();
    let ports: usize = reported.values().map(|r| r.ib_ports.len()).sum();
    let lldp: usize = reported.values().map(|r| r.lldp.len()).sum();
    let summary = format!(
        "fabric: {} reported, {named} naming a {what}, {ports} InfiniBand {}, {lldp} LLDP {}\n",
        plural_nodes(&reported.keys().copied().collect::<Vec<_>>()),
        if ports == 1 { "port" } else { "ports" },
        if lldp == 1 { "neighbour" } else { "neighbours" },
    );
    (out, summary)
}

fn plural_nodes(names: &[&str]) -> String {
    match names {
        [] => "no nodes".to_string(),
        [one] => format!("node {one}"),
        many => format!("{} nodes ({})", many.len(), hostlist::compress(many)),
    }
}

/// `name` and the switches above it, by the first parent naming each.
fn path_up<'a>(topo: &'a conf::TopologyConf, name: &'a str) -> Vec<&'a str> {
    let mut out = vec![name];
    let mut at = name;
    while let Some(p) = topo
        .switches
        .iter()
        .find(|s| s.switches.iter().any(|c| c == at))
    {
        if out.contains(&p.name.as_str()) || out.len() > topo.switches.len() {
            break;
        }
        out.push(&p.name);
        at = &p.name;
    }
    out
}

/// Under each top switch, the nodes whose active InfiniBand ports are on
/// different subnets (prefix and subnet manager LID): one line per top
/// switch, at its line.
fn subnet_splits(
    topo: &conf::TopologyConf,
    reported: &BTreeMap<&str, &FabricReport>,
    place: &BTreeMap<&str, (usize, Vec<&str>)>,
) -> Vec<(Option<usize>, String)> {
    let mut by_top: BTreeMap<&str, BTreeMap<String, Vec<&str>>> = BTreeMap::new();
    for (node, r) in reported {
        let Some((_, path)) = place.get(node) else {
            continue;
        };
        let Some(top) = path.last() else { continue };
        for p in &r.ib_ports {
            if !p.state.contains("ACTIVE") || p.link_layer != "InfiniBand" {
                continue;
            }
            let subnet = format!("{} SM LID {}", p.subnet_prefix, p.sm_lid);
            let nodes = by_top.entry(top).or_default().entry(subnet).or_default();
            if !nodes.contains(node) {
                nodes.push(node);
            }
        }
    }
    let mut out = Vec::new();
    for (top, subnets) in by_top {
        if subnets.len() < 2 {
            continue;
        }
        let parts: Vec<String> = subnets
            .iter()
            .map(|(s, nodes)| format!("{} on {s}", hostlist::compress(nodes)))
            .collect();
        let line = topo
            .switches
            .iter()
            .find(|s| s.name == top)
            .map(|s| s.line)
            .or_else(|| topo.blocks.iter().find(|b| b.name == top).map(|b| b.line));
        out.push((
            line,
            format!(
                "{top} holds nodes on different InfiniBand subnets: {}",
                parts.join("; ")
            ),
        ));
    }
    out
}
