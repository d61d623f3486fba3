//! cgroup.conf (cgroup.conf(5)): how the node daemon confines jobs with
//! control groups. Same syntax as slurm.conf; every key is global.
//! Defaults are Slurm's, from the man page.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::lex::{self, Pair};
use crate::parse::{At, AtLike};
use crate::{ConfError, Warning};

/// `CgroupPlugin`: which cgroup version the node daemon drives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CgroupPlugin {
    /// `autodetect` (the default): v2 where the mount is the unified
    /// hierarchy with the needed controllers, else v1.
    #[default]
    Autodetect,
    /// `cgroup/v1`.
    V1,
    /// `cgroup/v2`.
    V2,
    /// `disabled`: no cgroups at all.
    Disabled,
}

impl CgroupPlugin {
    /// Slurm's spelling.
    pub fn as_slurm_str(self) -> &'static str {
        match self {
            CgroupPlugin::Autodetect => "autodetect",
            CgroupPlugin::V1 => "cgroup/v1",
            CgroupPlugin::V2 => "cgroup/v2",
            CgroupPlugin::Disabled => "disabled",
        }
    }
}

/// The settings of cgroup.conf, with Slurm's defaults for keys not given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupConf {
    /// `CgroupPlugin` (default autodetect).
    pub plugin: CgroupPlugin,
    /// `CgroupMountpoint` (default `/sys/fs/cgroup`).
    pub mountpoint: String,
    /// `IgnoreSystemd` (default no): on v2, make the daemon's scope with
    /// mkdir instead of asking systemd for a delegated one.
    pub ignore_systemd: bool,
    /// `IgnoreSystemdOnFailure` (default no).
    pub ignore_systemd_on_failure: bool,
    /// `ConstrainCores` (default no).
    pub constrain_cores: bool,
    /// `ConstrainRAMSpace` (default no).
    pub constrain_ram_space: bool,
    /// `AllowedRAMSpace`, percent of the allocated memory (default 100).
    pub allowed_ram_space: f64,
    /// `ConstrainSwapSpace` (default no).
    pub constrain_swap_space: bool,
    /// `AllowedSwapSpace`, percent of the allocated memory (default 0).
    pub allowed_swap_space: f64,
    /// `MinRAMSpace` in MB (default 30).
    pub min_ram_space: u64,
    /// `MaxRAMPercent`, percent of the node's memory (default 100).
    pub max_ram_percent: f64,
    /// `MaxSwapPercent`, percent of the node's memory (default 100).
    pub max_swap_percent: f64,
    /// `MemorySwappiness` (0-100); `None` leaves the kernel's value.
    pub memory_swappiness: Option<u32>,
    /// `ConstrainDevices` (default no).
    pub constrain_devices: bool,
    /// `EnableControllers` (default no).
    pub enable_controllers: bool,
    /// `SignalChildrenProcesses` (default no).
    pub signal_children_processes: bool,
    /// `CgroupSlice`: the v2 slice holding the daemon's scope (default
    /// `system.slice`).
    pub slice: String,
}

impl Default for CgroupConf {
    fn default() -> CgroupConf {
        CgroupConf {
            plugin: CgroupPlugin::Autodetect,
            mountpoint: "/sys/fs/cgroup".to_string(),
            ignore_systemd: false,
            ignore_systemd_on_failure: false,
            constrain_cores: false,
            constrain_ram_space: false,
            allowed_ram_space: 100.0,
            constrain_swap_space: false,
            allowed_swap_space: 0.0,
            min_ram_space: 30,
            max_ram_percent: 100.0,
            max_swap_percent: 100.0,
            memory_swappiness: None,
            constrain_devices: false,
            enable_controllers: false,
            signal_children_processes: false,
            slice: "system.slice".to_string(),
        }
    }
}

impl CgroupConf {
    /// The memory keys as numbers for [`crate::memlimit::mem_limits`];
    /// `None` unless it constrains RAM or swap and its `CgroupPlugin` is
    /// not `disabled`.
    pub fn memory_constraints(&self) -> Option<crate::memlimit::MemConstraints> {
        let constrained = self.constrain_ram_space || self.constrain_swap_space;
        (constrained && self.plugin != CgroupPlugin::Disabled).then_some(
            crate::memlimit::MemConstraints {
                constrain_ram: self.constrain_ram_space,
                constrain_swap: self.constrain_swap_space,
                allowed_ram_percent: self.allowed_ram_space,
                allowed_swap_percent: self.allowed_swap_space,
                min_ram_mb: self.min_ram_space,
                max_ram_percent: self.max_ram_percent,
                max_swap_percent: self.max_swap_percent,
            },
        )
    }
}

/// Keys of cgroup.conf(5) that muster accepts and does not use (some are
/// obsolete in Slurm too: the kernel memory ones, the release agent).
pub(crate) const ACCEPTED_KEYS: &[&str] = &[
    "AllowedKmemSpace",
    "CgroupAutomount",
    "CgroupReleaseAgentDir",
    "ConstrainKmemSpace",
    "MaxKmemPercent",
    "MinKmemSpace",
    "SystemdTimeout",
    "TaskAffinity",
];

/// Parses cgroup.conf text; `origin` names the file in messages. A key
/// cgroup.conf(5) does not know is a warning; a value that cannot be used
/// is an error naming the file and line.
pub fn parse_cgroup_conf(
    text: &str,
    origin: &Path,
) -> Result<(CgroupConf, Vec<Warning>), ConfError> {
    let mut conf = CgroupConf::default();
    let mut warnings = Vec::new();
    for logical in lex::logical_lines(text) {
        let at = At {
            file: origin,
            line: logical.line,
        };
        let pairs = lex::tokenize(&logical.text).map_err(|reason| ConfError::Syntax {
            file: origin.to_path_buf(),
            line: logical.line,
            reason,
        })?;
        for Pair { key, value } in &pairs {
            let flag = || yes_no(key, value, &at);
            let pct = || percent(key, value, &at);
            match key.to_ascii_lowercase().as_str() {
                "cgroupplugin" => {
                    conf.plugin = match value.trim().to_ascii_lowercase().as_str() {
                        "autodetect" => CgroupPlugin::Autodetect,
                        "cgroup/v1" => CgroupPlugin::V1,
                        "cgroup/v2" => CgroupPlugin::V2,
                        "disabled" => CgroupPlugin::Disabled,
                        _ => {
                            return Err(at.invalid_at(
                                key,
                                value,
                                "expected autodetect, cgroup/v1, cgroup/v2 or disabled".into(),
                            ))
                        }
                    }
                }
                "cgroupmountpoint" => {
                    if !value.starts_with('/') {
                        return Err(at.invalid_at(key, value, "expected an absolute path".into()));
                    }
                    conf.mountpoint = value.trim_end_matches('/').to_string();
                    if conf.mountpoint.is_empty() {
                        conf.mountpoint = "/".to_string();
                    }
                }
                "cgroupslice" => conf.slice = value.clone(),
                "ignoresystemd" => conf.ignore_systemd = flag()?,
                "ignoresystemdonfailure" => conf.ignore_systemd_on_failure = flag()?,
                "constraincores" => conf.constrain_cores = flag()?,
                "constrainramspace" => conf.constrain_ram_space = flag()?,
                "allowedramspace" => conf.allowed_ram_space = pct()?,
                "constrainswapspace" => conf.constrain_swap_space = flag()?,
                "allowedswapspace" => conf.allowed_swap_space = pct()?,
                "minramspace" => {
                    conf.min_ram_space = value.trim().parse().map_err(|_| {
                        at.invalid_at(key, value, "expected a number of megabytes".into())
                    })?
                }
                "maxrampercent" => conf.max_ram_percent = pct()?,
                "maxswappercent" => conf.max_swap_percent = pct()?,
                "memoryswappiness" => {
                    let n: u32 = value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|n| *n <= 100)
                        .ok_or_else(|| at.invalid_at(key, value, "expected 0 to 100".into()))?;
                    conf.memory_swappiness = Some(n);
                }
                "constraindevices" => conf.constrain_devices = flag()?,
                "enablecontrollers" => conf.enable_controllers = flag()?,
                "signalchildrenprocesses" => conf.signal_children_processes = flag()?,
                _ if ACCEPTED_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key)) => {}
                _ => warnings.push(Warning {
                    file: origin.to_path_buf(),
                    line: logical.line,
                    message: format!("unknown key {key}"),
                }),
            }
        }
    }
    Ok((conf, warnings))
}

fn yes_no(key: &str, value: &str, at: &At<'_>) -> Result<bool, ConfError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "yes" | "y" | "true" | "1" => Ok(true),
        "no" | "n" | "false" | "0" => Ok(false),
        _ => Err(at.invalid_at(key, value, "expected yes or no".into())),
    }
}

/// A percentage, as cgroup.conf(5) allows: a number, maybe with decimals
/// and a trailing `%`, from 0 to 100.
fn percent(key: &str, value: &str, at: &At<'_>) -> Result<f64, ConfError> {
    value
        .trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or_else(|| at.invalid_at(key, value, "expected a percentage from 0 to 100".into()))
}
