//! What this node sees of the network fabric, sent with its registration
//! (`proto::FabricReport`) so that `muster check-config --fabric` can
//! compare it with topology.conf. Muster's own: Slurm only reads
//! topology.conf. Found once, when the daemon starts, from three sources:
//!
//! - `MusterTopologyProbe=/path` in slurm.conf (a glob as `Prolog`'s): the
//!   site's script, run as the daemon's user with `SLURMD_NODENAME`,
//!   `SLURM_CONF` and a plain `PATH`, for at most 10 s. Its first output
//!   line names the node's leaf switch (its block under topology/block),
//!   optionally followed by the switches above it, leaf first, separated
//!   by blanks or commas (`leaf3 spine1 core`). A failing or silent script
//!   is reported as such.
//! - InfiniBand ports in sysfs (`/sys/class/infiniband/DEV/ports/N/`):
//!   state, rate, link layer, the port's LID, the subnet manager's LID,
//!   the subnet prefix (`gids/0`) and the device's node GUID. The kernel
//!   does not show who is at the other end of the cable: naming the switch
//!   takes management datagrams (`ibnetdiscover`, `smpquery` over umad),
//!   which muster does not send. So these ports name no switch; the
//!   comparison uses them to find nodes one switch holds that sit on
//!   different InfiniBand subnets.
//! - LLDP, where `lldpctl` (lldpd) is installed: `lldpctl -f json0` gives
//!   each interface's neighbour (system name, port). Without a script,
//!   a node whose neighbours all name one system reports it as its leaf
//!   switch (source `lldp`): sites that name their switches in
//!   topology.conf as the switches name themselves get a comparison with
//!   no script at all.

use proto::{FabricReport, IbPort, LldpNeighbor};
use std::path::Path;
use std::time::Duration;

/// Where the kernel lists InfiniBand (and RoCE) devices.
const IB_SYSFS: &str = "/sys/class/infiniband";

/// How long the site's script and `lldpctl` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The report for this node: the script's switches (or LLDP's), the
/// InfiniBand ports and the LLDP neighbours.
pub async fn probe(script: Option<&str>, node: &str, conf_path: &Path) -> FabricReport {
    let mut report = FabricReport {
        ib_ports: read_ib_ports(Path::new(IB_SYSFS)),
        lldp: lldp_neighbors().await,
        ..FabricReport::default()
    };
    if let Some(spec) = script {
        let env = vec![
            ("SLURMD_NODENAME".to_string(), node.to_string()),
            (
                "SLURM_CONF".to_string(),
                conf_path.to_string_lossy().into_owned(),
            ),
            (
                "PATH".to_string(),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
            ),
        ];
        let outcome = crate::hooks::run_scripts(spec, &env, Some(PROBE_TIMEOUT)).await;
        let switches = switches_of(&outcome.first_line);
        if !outcome.ok {
            report.error = format!("MusterTopologyProbe failed: {}", outcome.why);
        } else if switches.is_empty() {
            report.error = "MusterTopologyProbe printed no switch name".to_string();
        } else {
            report.source = "MusterTopologyProbe".to_string();
            report.switches = switches;
        }
    } else if let Some(leaf) = lldp_leaf(&report.lldp) {
        report.source = "lldp".to_string();
        report.switches = vec![leaf];
    }
    report
}

/// The switch names of the script's first line, leaf first.
pub fn switches_of(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The one system every LLDP neighbour names, if they agree.
pub fn lldp_leaf(neighbors: &[LldpNeighbor]) -> Option<String> {
    let first = neighbors.iter().find(|n| !n.chassis.is_empty())?;
    neighbors
        .iter()
        .filter(|n| !n.chassis.is_empty())
        .all(|n| n.chassis == first.chassis)
        .then(|| first.chassis.clone())
}

/// The ports under `root` (`/sys/class/infiniband`), by device then port
/// number; a device or port whose files cannot be read is left out.
pub fn read_ib_ports(root: &Path) -> Vec<IbPort> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    let Ok(devices) = std::fs::read_dir(root) else {
        return out;
    };
    let mut devices: Vec<_> = devices.flatten().map(|e| e.path()).collect();
    devices.sort();
    for dev in devices {
        let name = dev
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let node_guid = read(&dev.join("node_guid"));
        let Ok(ports) = std::fs::read_dir(dev.join("ports")) else {
            continue;
        };
        let mut ports: Vec<(u32, std::path::PathBuf)> = ports
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().parse().ok()?;
                Some((n, e.path()))
            })
            .collect();
        ports.sort();
        for (port, dir) in ports {
            let gid = read(&dir.join("gids").join("0"));
            out.push(IbPort {
                device: name.clone(),
                port,
                state: read(&dir.join("state")),
                rate: read(&dir.join("rate")),
                link_layer: read(&dir.join("link_layer")),
                lid: read(&dir.join("lid")),
                sm_lid: read(&dir.join("sm_lid")),
                subnet_prefix: gid.split(':').take(4).collect::<Vec<_>>().join(":"),
                node_guid: node_guid.clone(),
            });
        }
    }
    out
}

/// `lldpctl -f json0`'s neighbours, where lldpctl is installed and
/// answers in time; none otherwise.
async fn lldp_neighbors() -> Vec<LldpNeighbor> {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("lldpctl").is_file()));
    if !found {
        return Vec::new();
    }
    let run = tokio::process::Command::new("lldpctl")
        .args(["-f", "json0"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(PROBE_TIMEOUT, run).await {
        Ok(Ok(out)) if out.status.success() => {
            parse_lldp_json0(&String::from_utf8_lossy(&out.stdout))
        }
        _ => Vec::new(),
    }
}

/// The neighbours in `lldpctl -f json0` output, whose shape does not
/// change with their number: `{"lldp": [{"interface": [{"name": ...,
/// "chassis": [{"name": [{"value": ...}]}], "port": [{"id": [{"value":
/// ...}]}]}]}]}`. Anything else gives none.
pub fn parse_lldp_json0(text: &str) -> Vec<LldpNeighbor> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    // `key[0]` of an object, as json0 nests every value in a list.
    let first = |v: &serde_json::Value, key: &str| v.get(key).and_then(|l| l.get(0)).cloned();
    let value = |v: Option<serde_json::Value>, key: &str| {
        v.and_then(|x| first(&x, key))
            .and_then(|x| x.get("value").and_then(|s| s.as_str()).map(str::to_string))
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for lldp in v
        .get("lldp")
        .and_then(|l| l.as_array())
        .into_iter()
        .flatten()
    {
        for iface in lldp
            .get("interface")
            .and_then(|l| l.as_array())
            .into_iter()
            .flatten()
        {
            out.push(LldpNeighbor {
                interface: iface
                    .get("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or_default()
                    .to_string(),
                chassis: value(first(iface, "chassis"), "name"),
                port: value(first(iface, "port"), "id"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_names_the_leaf_then_the_switches_above() {
        assert_eq!(
            switches_of("leaf3 spine1,core\n"),
            ["leaf3", "spine1", "core"]
        );
        assert!(switches_of("   ").is_empty());
    }

    #[test]
    fn infiniband_ports_from_sysfs() {
        let root = tempfile::tempdir().unwrap();
        let port = root.path().join("mlx5_0/ports/1");
        std::fs::create_dir_all(port.join("gids")).unwrap();
        let put = |p: std::path::PathBuf, s: &str| std::fs::write(p, s).unwrap();
        put(
            root.path().join("mlx5_0/node_guid"),
            "0c42:a103:0065:7e4a\n",
        );
        put(port.join("state"), "4: ACTIVE\n");
        put(port.join("rate"), "200 Gb/sec (4X HDR)\n");
        put(port.join("link_layer"), "InfiniBand\n");
        put(port.join("lid"), "0x1a\n");
        put(port.join("sm_lid"), "0x1\n");
        put(
            port.join("gids/0"),
            "fe80:0000:0000:0000:0c42:a103:0065:7e4a\n",
        );
        let ports = read_ib_ports(root.path());
        assert_eq!(
            ports,
            vec![IbPort {
                device: "mlx5_0".into(),
                port: 1,
                state: "4: ACTIVE".into(),
                rate: "200 Gb/sec (4X HDR)".into(),
                link_layer: "InfiniBand".into(),
                lid: "0x1a".into(),
                sm_lid: "0x1".into(),
                subnet_prefix: "fe80:0000:0000:0000".into(),
                node_guid: "0c42:a103:0065:7e4a".into(),
            }]
        );
        assert!(read_ib_ports(&root.path().join("none")).is_empty());
    }

    #[test]
    fn lldp_neighbours_and_the_leaf_they_agree_on() {
        let text = r#"{"lldp": [{"interface": [
            {"name": "eno1", "via": "LLDP",
             "chassis": [{"id": [{"type": "mac", "value": "0c:42:a1:00:00:01"}],
                          "name": [{"value": "leaf-a3"}]}],
             "port": [{"id": [{"type": "ifname", "value": "Ethernet12"}]}]},
            {"name": "eno2", "via": "LLDP",
             "chassis": [{"name": [{"value": "leaf-a3"}]}],
             "port": [{"id": [{"value": "Ethernet13"}]}]}
        ]}]}"#;
        let n = parse_lldp_json0(text);
        assert_eq!(n.len(), 2);
        assert_eq!(
            n[0],
            LldpNeighbor {
                interface: "eno1".into(),
                chassis: "leaf-a3".into(),
                port: "Ethernet12".into(),
            }
        );
        assert_eq!(lldp_leaf(&n).as_deref(), Some("leaf-a3"));
        let mut two = n.clone();
        two[1].chassis = "leaf-b1".into();
        assert_eq!(lldp_leaf(&two), None);
        assert!(parse_lldp_json0("not json").is_empty());
        assert!(parse_lldp_json0(r#"{"lldp": [{}]}"#).is_empty());
    }
}
