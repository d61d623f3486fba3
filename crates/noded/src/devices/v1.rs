//! cgroup v1 device rules, as Slurm's task/cgroup writes them: the
//! directory keeps its default (`a *:* rwm`, everything allowed, inherited
//! from the parent), `devices.deny` gets `c MAJ:MIN rwm` for every GRES
//! device of the node the level was not given, and `devices.allow` one for
//! each it was given.
//!
//! In default-allow mode a deny line adds an exception and an allow line
//! removes one, so the allow lines undo a deny a parent level passed down
//! at the directory's creation for a device this level was given back
//! (never the case when levels are written top down, since what a step is
//! given its job was given too); the kernel refuses to allow a device the
//! parent denies (EPERM). `devices.list` keeps showing `a *:* rwm`:
//! exceptions of default-allow mode are not listed there, only an open
//! (EPERM) shows them.

use super::{unallocated, Access, Device, DeviceError};
use std::io::Write;
use std::path::Path;

/// The lines for one cgroup level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lines {
    /// For `devices.deny`, one rule a line: the devices not given.
    pub deny: Vec<String>,
    /// For `devices.allow`: the devices given.
    pub allow: Vec<String>,
}

/// The rules for a level given `allocated` out of the node's
/// `node_devices` (sorted, without duplicates).
pub fn lines(node_devices: &[Device], allocated: &[Device]) -> Lines {
    let mut given: Vec<Device> = allocated.to_vec();
    given.sort();
    given.dedup();
    Lines {
        deny: unallocated(node_devices, allocated)
            .iter()
            .map(|d| d.v1_rule(Access::ALL))
            .collect(),
        allow: given.iter().map(|d| d.v1_rule(Access::ALL)).collect(),
    }
}

/// Writes `lines` into the devices files of `cgroup_dir` (a directory of
/// the v1 `devices` hierarchy): the denials first, one rule per write(2),
/// as the kernel parses one rule per write.
pub fn write(cgroup_dir: &Path, lines: &Lines) -> Result<(), DeviceError> {
    for (file, rules) in [
        ("devices.deny", &lines.deny),
        ("devices.allow", &lines.allow),
    ] {
        if rules.is_empty() {
            continue;
        }
        let path = cgroup_dir.join(file);
        let fail = |rule: &str, source| DeviceError::WriteRule {
            path: path.clone(),
            rule: rule.to_string(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| fail(&rules[0], e))?;
        for rule in rules {
            let n = f.write(rule.as_bytes()).map_err(|e| fail(rule, e))?;
            if n != rule.len() {
                return Err(fail(
                    rule,
                    std::io::Error::new(std::io::ErrorKind::WriteZero, "short write"),
                ));
            }
        }
    }
    Ok(())
}
