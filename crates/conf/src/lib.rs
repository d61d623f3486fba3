//! Reads `slurm.conf` and `gres.conf` the way Slurm does: case-insensitive
//! `Key=Value` pairs, `"quoted values"`, `#` comments, backslash
//! continuations, `Include`, `NodeName=`/`PartitionName=` lines with hostlist
//! ranges and `DEFAULT` records.
//!
//! ```text
//! load(path) --reads--> text --parse_str()--> Loaded { Config, warnings }
//!                         \--Include--> include(path) callback
//! gres.conf (same directory) --parse_gres_conf()--> Config::gres
//! cgroup.conf (same directory) --parse_cgroup_conf()--> Config::cgroup
//! topology.conf (where TopologyPlugin is tree or block) --parse_topology_conf()--> Config::topology
//! ```
//!
//! [`effect`] says which accepted keys act in muster (for `muster check-config`).
//!
//! Only [`load`] touches the file system; [`parse_str`],
//! [`parse_gres_conf`] and [`parse_cgroup_conf`] are pure and get included files through a callback.
//! This crate does not watch files, resolve user names, or look at the
//! hardware.
//!
//! Invariant: a key Slurm does not know is a [`Warning`], never a failure;
//! a value muster cannot use is a [`ConfError`] naming the file and line.

#![warn(missing_docs)]

mod cgroup;
pub mod effect;
mod gres;
mod keys;
mod lex;
pub mod memlimit;
mod parse;
mod private_data;
mod show;
mod topology;
pub mod wildcard;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use model::TimeLimit;
use serde::{Deserialize, Serialize};

pub use cgroup::{parse_cgroup_conf, CgroupConf, CgroupPlugin};
pub use gres::{check_against_types as check_gres_types, parse_gres_conf, parse_id_list};
pub use private_data::PrivateData;
pub use show::{override_entry, render_show_config, SLURM_COMPAT_VERSION};
pub use topology::{
    check_kind as check_topology_kind, check_topology_nodes, check_unreached_nodes,
    parse_topology_conf, TopologyBlock, TopologyConf, TopologySwitch,
};

/// A parsed configuration and the warnings met on the way (unknown keys,
/// keys given twice, obsolete keys).
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The configuration.
    pub config: Config,
    /// Non-fatal findings, in file order; daemons log them at startup.
    pub warnings: Vec<Warning>,
}

/// A non-fatal finding in a config file; displays as `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// The file the finding is in (an included file where it came from one).
    pub file: PathBuf,
    /// 1-based line number (the first line of a continued line).
    pub line: usize,
    /// What was found, e.g. `unknown key Foo`.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

/// Why a configuration could not be used. Daemons refuse to start on any of
/// these, as slurmctld does on a bad slurm.conf.
#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    /// A value that cannot be used: not a number, a bad time or memory size,
    /// an unknown state, a bad hostlist, an undefined node, a duplicate name.
    #[error("{}:{line}: invalid value \"{value}\" for {key}: {reason}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The key as written.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong and, where it helps, what is expected.
        reason: String,
    },
    /// A line that is not `Key=Value` pairs (a bare word, an unterminated
    /// quote).
    #[error("{}:{line}: {reason}", file.display())]
    Syntax {
        /// The file.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The main file (or gres.conf) could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An `Include` line named a file that could not be read.
    #[error("{}:{line}: cannot read included file {}: {source}", file.display(), path.display())]
    Include {
        /// The file holding the `Include` line.
        file: PathBuf,
        /// 1-based line number of the `Include` line.
        line: usize,
        /// The included path, resolved against the config directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `Include` lines nested too deep, which means a file includes itself.
    #[error("{}:{line}: Include nested more than {max} deep (does {} include itself?)", file.display(), path.display())]
    IncludeDepth {
        /// The file holding the `Include` line.
        file: PathBuf,
        /// 1-based line number of the `Include` line.
        line: usize,
        /// The included path.
        path: PathBuf,
        /// The nesting limit.
        max: usize,
    },
    /// A key that Slurm requires is absent (`ClusterName`, `SlurmctldHost`).
    #[error("{}: {what} needs to be specified", file.display())]
    Missing {
        /// The main config file.
        file: PathBuf,
        /// The missing key.
        what: String,
    },
}

/// One controller host: `SlurmctldHost=ctl(10.201.0.1)` gives name `ctl`
/// and address `10.201.0.1`. The first is the primary, the rest backups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtldHost {
    /// The host name.
    pub name: String,
    /// The address to reach it at, when it differs from the name.
    pub addr: Option<String>,
}

impl fmt::Display for CtldHost {
    /// `name(addr)` or `name`, as `scontrol show config` prints
    /// `SlurmctldHost[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.addr {
            Some(addr) => write!(f, "{}({})", self.name, addr),
            None => write!(f, "{}", self.name),
        }
    }
}

/// The cluster configuration read from slurm.conf (and gres.conf).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The slurm.conf this was read from (`SLURM_CONF` in `scontrol show config`).
    pub path: PathBuf,
    /// `ClusterName`, lowercased as Slurm does.
    pub cluster_name: String,
    /// `SlurmctldHost` lines in order (or the old `ControlMachine`/`ControlAddr`
    /// and `BackupController`/`BackupAddr`); never empty.
    pub slurmctld_host: Vec<CtldHost>,
    /// `SlurmctldPort` (default 6817; of a range `6817-6818`, the first).
    pub slurmctld_port: u16,
    /// `SlurmdPort` (default 6818).
    pub slurmd_port: u16,
    /// `StateSaveLocation` (default `/var/spool/slurmctld`).
    pub state_save_location: String,
    /// `SlurmdSpoolDir` as written, `%n`/`%h` unexpanded (default
    /// `/var/spool/slurmd`); see [`Config::spool_dir_for`].
    pub slurmd_spool_dir: String,
    /// `SlurmUser` (default `root`).
    pub slurm_user: String,
    /// `SlurmdTimeout` in seconds (default 300).
    pub slurmd_timeout: u32,
    /// `KillWait` in seconds (default 30).
    pub kill_wait: u32,
    /// `MinJobAge` in seconds (default 300).
    pub min_job_age: u32,
    /// `MaxJobCount` (default 10000).
    pub max_job_count: u32,
    /// `FirstJobId` (default 1).
    pub first_job_id: u32,
    /// `ReturnToService` 0, 1 or 2 (default 0).
    pub return_to_service: u32,
    /// `GresTypes`: every GRES name nodes may have.
    pub gres_types: Vec<String>,
    /// `DefMemPerCPU` in MB; `None` when unset, 0 or UNLIMITED.
    pub def_mem_per_cpu: Option<u64>,
    /// `DefMemPerNode` in MB; `None` when unset, 0 or UNLIMITED.
    pub def_mem_per_node: Option<u64>,
    /// `MaxMemPerNode` in MB; `None` when unset, 0 or UNLIMITED.
    pub max_mem_per_node: Option<u64>,
    /// `AuthType` as written (default `auth/munge`, as Slurm's).
    pub auth_type: String,
    /// `SchedulerType`: `sched/backfill` (the default), `sched/builtin`
    /// (first come, first served) or `sched/easy` (muster: textbook EASY
    /// backfilling, one planned start for the queue head).
    pub scheduler_type: String,
    /// The scheduler's options from `SchedulerParameters`.
    pub scheduler_params: SchedulerParams,
    /// `PriorityType` and the multifactor plugin's `Priority*` keys.
    pub priority: PriorityConf,
    /// Every other global key Slurm knows and muster does not model, by
    /// lowercase key: (key as written, value).
    pub other: BTreeMap<String, (String, String)>,
    /// One entry per node, ranges expanded and `NodeName=DEFAULT` applied,
    /// in file order.
    pub nodes: Vec<NodeConf>,
    /// Partitions in file order, `PartitionName=DEFAULT` applied.
    pub partitions: Vec<PartitionConf>,
    /// gres.conf lines in file order (empty without a gres.conf).
    pub gres: Vec<GresConf>,
    /// cgroup.conf beside slurm.conf; `None` without one (jobs are then
    /// not confined).
    #[serde(default)]
    pub cgroup: Option<CgroupConf>,
    /// topology.conf beside slurm.conf, read where `TopologyPlugin` is
    /// `topology/tree` or `topology/block` (`None` otherwise: placement
    /// ignores the fabric).
    #[serde(default)]
    pub topology: Option<TopologyConf>,
}

/// `PriorityType=priority/multifactor` and its settings (slurm.conf(5)).
/// Times are in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityConf {
    /// `PriorityType=priority/multifactor` (otherwise priority/basic:
    /// submission order).
    pub multifactor: bool,
    /// `PriorityWeightAge`.
    pub weight_age: u32,
    /// `PriorityWeightAssoc`.
    pub weight_assoc: u32,
    /// `PriorityWeightFairshare`.
    pub weight_fairshare: u32,
    /// `PriorityWeightJobSize`.
    pub weight_jobsize: u32,
    /// `PriorityWeightPartition`.
    pub weight_partition: u32,
    /// `PriorityWeightQOS`.
    pub weight_qos: u32,
    /// `PriorityWeightTRES` (`CPU=1000,Mem=2000,GRES/gpu=3000`), names as written.
    pub weight_tres: Vec<(String, u32)>,
    /// `PriorityMaxAge` (default 7 days): the age factor is 1 from then on.
    pub max_age: u32,
    /// `PriorityDecayHalfLife` (default 7 days; 0: no decay).
    pub decay_half_life: u32,
    /// `PriorityCalcPeriod` (default 5 minutes).
    pub calc_period: u32,
    /// `PriorityFavorSmall=YES`.
    pub favor_small: bool,
    /// `PriorityFlags`, upper case (`NO_FAIR_TREE`, `SMALL_RELATIVE_TO_TIME`, ...).
    pub flags: Vec<String>,
    /// `PriorityUsageResetPeriod`, upper case (`NONE`, `DAILY`, `WEEKLY`, ...).
    pub usage_reset_period: String,
}

impl Default for PriorityConf {
    fn default() -> PriorityConf {
        PriorityConf {
            multifactor: false,
            weight_age: 0,
            weight_assoc: 0,
            weight_fairshare: 0,
            weight_jobsize: 0,
            weight_partition: 0,
            weight_qos: 0,
            weight_tres: Vec::new(),
            max_age: 7 * 86_400,
            decay_half_life: 7 * 86_400,
            calc_period: 300,
            favor_small: false,
            flags: Vec::new(),
            usage_reset_period: "NONE".into(),
        }
    }
}

impl PriorityConf {
    /// Whether `PriorityFlags` has `flag`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// The `SchedulerParameters` options the scheduler uses; `None` where the
/// option is not given (the scheduler's default applies). Other options
/// Slurm knows are accepted and ignored; the raw value stays in
/// `Config::other` for `scontrol show config`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerParams {
    /// `bf_window` in minutes (1-43200).
    pub bf_window: Option<u32>,
    /// `bf_resolution` in seconds (1-3600).
    pub bf_resolution: Option<u32>,
    /// `bf_max_job_test` (1-1000000).
    pub bf_max_job_test: Option<u32>,
    /// `bf_max_job_user` (0-1000000; 0 is no limit).
    pub bf_max_job_user: Option<u32>,
    /// `bf_job_part_count_reserve` (0-100000; 0 is every job).
    #[serde(default)]
    pub bf_job_part_count_reserve: Option<u32>,
    /// `bf_age_reserve` in seconds (0-31536000; 0 is off): muster's own.
    #[serde(default)]
    pub bf_age_reserve: Option<u32>,
    /// `bf_slowdown_reserve` (0-1000000; 0 is off): muster's own.
    pub bf_slowdown_reserve: Option<u32>,
    /// `bf_slowdown_reserve_width` (percent, 0-100): muster's own.
    #[serde(default)]
    pub bf_slowdown_reserve_width: Option<u32>,
    /// `bf_order=shortest|priority`: muster's own; `Some(true)` for
    /// shortest.
    #[serde(default)]
    pub bf_order_shortest: Option<bool>,
    /// `bf_plan=auto|nodes|pool`: muster's own; `Some(true)` for pool,
    /// `Some(false)` for nodes, `None` for auto (the default).
    #[serde(default)]
    pub bf_plan_pool: Option<bool>,
    /// `bf_continue`.
    pub bf_continue: bool,
    /// `bf_interval` in seconds (1-10800).
    pub bf_interval: Option<u32>,
    /// `default_queue_depth` (1-1000000).
    pub default_queue_depth: Option<u32>,
    /// `sched_interval` in seconds (0-3600).
    pub sched_interval: Option<u32>,
    /// `max_switch_wait` in seconds (0-31536000; Slurm's default 300): how
    /// long a job with `--switches` and no max-time of its own waits for
    /// its switch count.
    #[serde(default)]
    pub max_switch_wait: Option<u32>,
}

/// One node from a `NodeName=` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeConf {
    /// `NodeName`.
    pub name: String,
    /// `NodeAddr`; defaults to the hostname, as in slurm.conf(5).
    pub addr: String,
    /// `NodeHostname`; defaults to the name.
    pub hostname: String,
    /// `Port` of this node's daemon, when it differs from `SlurmdPort`.
    pub port: Option<u16>,
    /// `CPUs` (or `Procs`); defaults to boards*sockets*cores*threads.
    pub cpus: u32,
    /// `Boards` (default 1).
    pub boards: u32,
    /// `Sockets` (per board when `Boards` is given, as slurm.conf(5) says);
    /// inferred from `CPUs` when not given, so `CPUs=2` alone means 2 sockets.
    pub sockets: u32,
    /// `CoresPerSocket` (default 1).
    pub cores_per_socket: u32,
    /// `ThreadsPerCore` (default 1).
    pub threads_per_core: u32,
    /// `RealMemory` in MB (default 1).
    pub real_memory: u64,
    /// `TmpDisk` in MB (default 0).
    pub tmp_disk: u64,
    /// `Gres`, e.g. `gpu:a100:2`.
    pub gres: Vec<model::Gres>,
    /// `Features` (or `Feature`), comma-separated in the file.
    pub features: Vec<String>,
    /// `Weight` (default 1).
    pub weight: u32,
    /// `State` uppercased (`UNKNOWN`, `FUTURE`, `DOWN`, `IDLE`, `DRAIN`,
    /// `CLOUD`...), or a `DownNodes=` line's state; `None` when not given.
    pub state: Option<String>,
    /// `Reason` from the node line or a `DownNodes=` line.
    pub reason: Option<String>,
    /// Other node keys Slurm knows, by lowercase key: (key as written, value).
    pub other: BTreeMap<String, (String, String)>,
    /// Line of the `NodeName=` entry in its file.
    pub line: usize,
}

/// One partition from a `PartitionName=` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionConf {
    /// `PartitionName`.
    pub name: String,
    /// `Nodes`, expanded, in node-definition order; `ALL` means every node
    /// and NodeSet names are replaced by their nodes.
    pub nodes: Vec<String>,
    /// `Default=YES`.
    pub default: bool,
    /// `MaxTime` (default UNLIMITED).
    pub max_time: TimeLimit,
    /// `DefaultTime`; `None` when unset or `NONE` (jobs then get `MaxTime`).
    pub default_time: Option<TimeLimit>,
    /// `MaxNodes`; `None` is UNLIMITED.
    pub max_nodes: Option<u32>,
    /// `MinNodes` (default 0).
    pub min_nodes: u32,
    /// `State`: `UP`, `DOWN`, `DRAIN` or `INACTIVE` (default `UP`).
    pub state: String,
    /// `PriorityTier` (default 1).
    pub priority_tier: u32,
    /// `PriorityJobFactor` (default 1).
    pub priority_job_factor: u32,
    /// `OverSubscribe` uppercased: `NO` (default), `EXCLUSIVE`, `YES[:n]`,
    /// `FORCE[:n]`.
    pub oversubscribe: String,
    /// `AllowAccounts`; `None` is ALL.
    pub allow_accounts: Option<Vec<String>>,
    /// `AllowGroups`; `None` is ALL.
    pub allow_groups: Option<Vec<String>>,
    /// `DefMemPerCPU` in MB, overriding the global one.
    pub def_mem_per_cpu: Option<u64>,
    /// `MaxMemPerNode` in MB, overriding the global one.
    pub max_mem_per_node: Option<u64>,
    /// Other partition keys Slurm knows, by lowercase key: (key as written, value).
    pub other: BTreeMap<String, (String, String)>,
    /// Line of the `PartitionName=` entry in its file.
    pub line: usize,
}

/// One gres.conf line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GresConf {
    /// `NodeName`, expanded; empty means every node.
    pub node_names: Vec<String>,
    /// `Name`, e.g. `gpu`.
    pub name: String,
    /// `Type`, e.g. `a100`.
    pub type_: Option<String>,
    /// `File`, expanded (`/dev/nvidia[0-1]` gives two files).
    pub files: Vec<String>,
    /// `Count`, else the number of files, else 1.
    pub count: u64,
    /// `Cores` (or the old `CPUs`) as written, e.g. `0-15`.
    pub cores: Option<String>,
    /// `Links` as written (one connection count per GPU of the node, `-1`
    /// for the device itself), e.g. `-1,2,0,0`.
    pub links: Option<String>,
    /// `Flags`, lowercase, e.g. `["nvidia_gpu_env"]` (gres.conf(5):
    /// `CountOnly`, `env_uuid`, `explicit`, `one_sharing`, `all_sharing`,
    /// `nvidia_gpu_env`, `amd_gpu_env`, `intel_gpu_env`, `opencl_env`,
    /// `no_gpu_env`).
    pub flags: Vec<String>,
    /// `AutoDetect` of this line, or of a global `AutoDetect=` line in the
    /// file (`off`, `nvml`, `rsmi`, `oneapi`, `nvidia`).
    pub autodetect: Option<String>,
    /// Line in gres.conf.
    pub line: usize,
}

/// Reads `path` as slurm.conf, following `Include` lines (relative to the
/// file's directory), and `gres.conf` and `cgroup.conf` from the same
/// directory where they exist.
// The crate's one reader of files, by design: the parsers stay pure.
#[allow(clippy::disallowed_methods)]
pub fn load(path: &Path) -> Result<Loaded, ConfError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut read = |p: &Path| std::fs::read_to_string(p);
    let mut loaded = parse_str(&text, path, &mut read)?;
    let gres_path = path
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join("gres.conf");
    match std::fs::read_to_string(&gres_path) {
        Ok(gres_text) => {
            let (gres, warnings) = parse_gres_conf(&gres_text, &gres_path)?;
            loaded.warnings.extend(warnings);
            loaded.warnings.extend(gres::check_against_types(
                &gres,
                &loaded.config.gres_types,
                &gres_path,
            ));
            loaded.config.gres = gres;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(ConfError::Io {
                path: gres_path,
                source,
            })
        }
    }
    if let Some(kind) = loaded.config.topology_plugin() {
        let topo_path = path
            .parent()
            .unwrap_or_else(|| Path::new(""))
            .join("topology.conf");
        let text = std::fs::read_to_string(&topo_path).map_err(|source| ConfError::Io {
            path: topo_path.clone(),
            source,
        })?;
        let (topo, warnings) = parse_topology_conf(&text, &topo_path)?;
        topology::check_kind(&topo, kind, &topo_path)?;
        loaded.warnings.extend(warnings);
        let names: std::collections::BTreeSet<&str> = loaded
            .config
            .nodes
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        let unknown = check_topology_nodes(&topo, &names, &topo_path);
        loaded.warnings.extend(unknown);
        let in_order: Vec<&str> = loaded
            .config
            .nodes
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        loaded
            .warnings
            .extend(check_unreached_nodes(&topo, &in_order, &topo_path));
        loaded.config.topology = Some(topo);
    }
    let cgroup_path = path
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join("cgroup.conf");
    match std::fs::read_to_string(&cgroup_path) {
        Ok(text) => {
            let (cgroup, warnings) = parse_cgroup_conf(&text, &cgroup_path)?;
            loaded.warnings.extend(warnings);
            loaded.config.cgroup = Some(cgroup);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(ConfError::Io {
                path: cgroup_path,
                source,
            })
        }
    }
    Ok(loaded)
}

/// Parses slurm.conf text. `origin` is the file's path, used in messages
/// and to resolve relative `Include` paths (against its directory);
/// `include` returns the text of an included file. gres.conf is not read:
/// set `Config::gres` from [`parse_gres_conf`] if wanted.
pub fn parse_str(
    text: &str,
    origin: &Path,
    include: &mut dyn FnMut(&Path) -> std::io::Result<String>,
) -> Result<Loaded, ConfError> {
    parse::parse(text, origin, include)
}

/// The value the last `key=` of one slurm.conf text sets (key compared
/// without case), read with the parser's own lexer (comments, continued
/// lines, quotes) but without building a [`Config`]: for a program that
/// needs one setting before anything else (`muster-cli`'s `AuthType`).
/// `Some(None)` where the text does not set it; `None` where this text
/// alone cannot tell: an `Include` line could set it elsewhere, or a line
/// does not lex (the whole parse then reports it).
pub fn main_file_value(text: &str, key: &str) -> Option<Option<String>> {
    let mut value = None;
    for logical in lex::logical_lines(text) {
        if lex::include_target(&logical.text).is_some() {
            return None;
        }
        for pair in lex::tokenize(&logical.text).ok()? {
            if pair.key.eq_ignore_ascii_case(key) {
                value = Some(pair.value);
            }
        }
    }
    Some(value)
}

impl Config {
    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&NodeConf> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The partition named `name`.
    pub fn partition(&self, name: &str) -> Option<&PartitionConf> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// The partition with `Default=YES` (the last one, if several say so,
    /// as Slurm keeps the last). Slurm has no default otherwise: `None`.
    pub fn default_partition(&self) -> Option<&PartitionConf> {
        self.partitions.iter().rev().find(|p| p.default)
    }

    /// `SlurmdSpoolDir` for `node`: `%n` becomes the node name and `%h` its
    /// hostname (the name itself for a node not in the config).
    pub fn spool_dir_for(&self, node: &str) -> String {
        let hostname = self.node(node).map_or(node, |n| n.hostname.as_str());
        self.slurmd_spool_dir
            .replace("%n", node)
            .replace("%h", hostname)
    }

    /// `ProctrackType` (Slurm's default `proctrack/cgroup` where unset).
    pub fn proctrack_type(&self) -> &str {
        self.other
            .get("proctracktype")
            .map_or("proctrack/cgroup", |(_, v)| v.as_str())
    }

    /// `TaskPlugin` as written (Slurm's default `task/none` where unset).
    pub fn task_plugin(&self) -> &str {
        self.other
            .get("taskplugin")
            .map_or("task/none", |(_, v)| v.as_str())
    }

    /// The cgroup.conf settings that confine jobs: `Some` where a
    /// cgroup.conf exists, its `CgroupPlugin` is not `disabled` and
    /// `ProctrackType` is `proctrack/cgroup`; `None` (no confinement, as
    /// before cgroup support) otherwise.
    pub fn confinement(&self) -> Option<&CgroupConf> {
        self.cgroup.as_ref().filter(|c| {
            c.plugin != CgroupPlugin::Disabled
                && self
                    .proctrack_type()
                    .trim()
                    .eq_ignore_ascii_case("proctrack/cgroup")
        })
    }

    /// cgroup.conf's memory limits (`ConstrainRAMSpace`, ...): on the
    /// job's and step's cgroups where [`Config::confinement`] confines,
    /// else on the cgroups usage is gathered from. `None` without a
    /// cgroup.conf, with `CgroupPlugin=disabled` or nothing constrained.
    pub fn memory_constraints(&self) -> Option<memlimit::MemConstraints> {
        self.cgroup.as_ref()?.memory_constraints()
    }

    /// `TopologyPlugin`, where it is one that places by topology:
    /// `Some("topology/tree")` or `Some("topology/block")`.
    pub fn topology_plugin(&self) -> Option<&'static str> {
        let v = self.other.get("topologyplugin").map(|(_, v)| v.trim())?;
        ["topology/tree", "topology/block"]
            .into_iter()
            .find(|k| v.eq_ignore_ascii_case(k))
    }

    /// `SLURM_TOPOLOGY_ADDR` and `SLURM_TOPOLOGY_ADDR_PATTERN` of `node`:
    /// its switches from the top down, then its name (`top.s0.node1`,
    /// `switch.switch.node`), or its block (`b0.node1`, `block.node`);
    /// its name alone (`node`) outside the topology or without one.
    pub fn topology_addr(&self, node: &str) -> (String, String) {
        let alone = (node.to_string(), "node".to_string());
        let (Some(topo), Some(kind)) = (&self.topology, self.topology_plugin()) else {
            return alone;
        };
        let mut path: Vec<&str> = Vec::new();
        let level = if kind == "topology/block" {
            if let Some(b) = topo
                .blocks
                .iter()
                .find(|b| b.nodes.iter().any(|n| n == node))
            {
                path.push(&b.name);
            }
            "block"
        } else {
            let mut at = topo
                .switches
                .iter()
                .find(|s| s.nodes.iter().any(|n| n == node));
            while let Some(s) = at {
                if path.contains(&s.name.as_str()) || path.len() > topo.switches.len() {
                    break;
                }
                path.push(&s.name);
                at = topo.switches.iter().find(|p| p.switches.contains(&s.name));
            }
            "switch"
        };
        if path.is_empty() {
            return alone;
        }
        path.reverse();
        let pattern: Vec<&str> = path.iter().map(|_| level).chain(["node"]).collect();
        path.push(node);
        (path.join("."), pattern.join("."))
    }

    /// The gres.conf lines that apply to `node` (those naming it, and those
    /// naming no node).
    pub fn gres_for_node(&self, node: &str) -> Vec<&GresConf> {
        self.gres
            .iter()
            .filter(|g| g.node_names.is_empty() || g.node_names.iter().any(|n| n == node))
            .collect()
    }

    /// The `Key = Value` lines of `scontrol show config` (after its
    /// "Configuration data as of" header) in Slurm 22.05's order and
    /// spelling. Keys muster does not implement show Slurm's defaults.
    /// `BOOT_TIME` and `NEXT_JOB_ID` are runtime facts this crate does not
    /// know: they carry `(null)` and `FirstJobId`; the controller replaces
    /// them with [`override_entry`]. Render with [`render_show_config`].
    pub fn show_config_entries(&self) -> Vec<(String, String)> {
        show::entries(self)
    }
}

// Tests write and read fixture files of their own.
#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests;
