//! Which of the keys muster accepts act here, for `muster check-config`.
//!
//! The `keys` table says which keys Slurm knows; this module says which of
//! those muster reads and acts on. A key that parses but that no part of
//! muster reads "does nothing here": the daemons keep it for
//! `scontrol show config`, and `check-config` warns about it with its
//! file and line ([`inert_keys`]), so no setting is ignored in silence.
//!
//! Keep the tables in step with the code that reads `Config::other`
//! (engine, ctld, noded, cli) and with docs/compatibility.md.

use std::path::Path;

use crate::lex;
use crate::{ConfError, Warning};

/// Global keys kept in `Config::other` that some part of muster reads.
/// Keys with typed fields (`keys::MODELLED_GLOBAL`, `SchedulerType`,
/// `SchedulerParameters`, `Priority*`) act by construction and are listed
/// here too where they are read from `Config::other`.
const ACTING_GLOBAL: &[&str] = &[
    "AccountingStorageEnforce",
    "AccountingStorageHost",
    "AccountingStorageParameters",
    "AccountingStoragePass",
    "AccountingStoragePort",
    "AccountingStorageType",
    "AccountingStorageUser",
    "AuthAltParameters",
    "AuthAltTypes",
    "AuthInfo",
    "DependencyParameters",
    "Epilog",
    "EpilogSlurmctld",
    "HealthCheckInterval",
    "HealthCheckNodeState",
    "HealthCheckParameters",
    "HealthCheckProgram",
    "JobAcctGatherFrequency",
    "JobAcctGatherType",
    "JobRequeue",
    "Licenses",
    "LogTimeFormat",
    "MailDomain",
    "MailProg",
    "MaxArraySize",
    "MessageTimeout",
    "MpiDefault",
    "MusterTopologyProbe",
    "PreemptExemptTime",
    "PreemptMode",
    "PreemptParameters",
    "PreemptType",
    "PriorityCalcPeriod",
    "PriorityDecayHalfLife",
    "PriorityFavorSmall",
    "PriorityFlags",
    "PriorityMaxAge",
    "PriorityType",
    "PriorityUsageResetPeriod",
    "PriorityWeightAge",
    "PriorityWeightAssoc",
    "PriorityWeightFairshare",
    "PriorityWeightJobSize",
    "PriorityWeightPartition",
    "PriorityWeightQOS",
    "PriorityWeightTRES",
    "PrivateData",
    "ProctrackType",
    "Prolog",
    "PrologEpilogTimeout",
    "PrologFlags",
    "PrologSlurmctld",
    "RebootProgram",
    "ReconfigFlags",
    "ResumeTimeout",
    "SchedulerParameters",
    "SchedulerType",
    "SelectTypeParameters",
    "SlurmctldDebug",
    "SlurmctldLogFile",
    "SlurmdDebug",
    "SlurmdLogFile",
    "SlurmdParameters",
    "SrunEpilog",
    "SrunProlog",
    "TaskEpilog",
    "TaskPlugin",
    "TaskProlog",
    "TaskPluginParam",
];

/// Keys muster refuses (the daemons do not start, `check-config` says
/// why at the key's file and line): scripts whose absence would change
/// where, when or as whom a job runs, which muster does not run.
/// (None now: `PrologSlurmctld` and `EpilogSlurmctld`, once here, run.)
const REFUSED_GLOBAL: &[(&str, &str)] = &[];

/// The `PrologFlags` words muster acts on: `Alloc` (the Prolog runs when
/// the batch script is launched, which is at allocation), `Contain` (the
/// extern step), `RunInJob` (the extern step, and the Prolog and Epilog
/// in the job's cgroup), `Serial` (one Prolog or Epilog at a time per
/// node) and `NoHold` (salloc does not wait for the Prolog: it never does
/// here, the Prolog running at the first step).
const PROLOG_FLAGS: &[&str] = &["Alloc", "Contain", "NoHold", "RunInJob", "Serial"];

/// Why a global key set to `value` is refused, if it is: a key of
/// `REFUSED_GLOBAL` set to anything, or a `PrologFlags` word muster does
/// not act on.
pub fn refusal(key: &str, value: &str) -> Option<String> {
    if value.trim().is_empty() {
        return None;
    }
    if let Some((_, why)) = REFUSED_GLOBAL
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
    {
        return Some(format!("not supported: {why}"));
    }
    if key.eq_ignore_ascii_case("ReconfigFlags") {
        let unknown: Vec<&str> = value
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty() && !contains(RECONFIG_FLAGS, w))
            .collect();
        if !unknown.is_empty() {
            return Some(format!(
                "not supported: {} (muster acts on {})",
                unknown.join(","),
                RECONFIG_FLAGS.join(", ")
            ));
        }
    }
    if key.eq_ignore_ascii_case("PrologFlags") {
        let unknown: Vec<&str> = value
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty() && !contains(PROLOG_FLAGS, w))
            .collect();
        if !unknown.is_empty() {
            return Some(format!(
                "not supported: {} (muster acts on {})",
                unknown.join(","),
                PROLOG_FLAGS.join(", ")
            ));
        }
    }
    None
}

/// Keys that muster does not read but whose given value is what muster
/// does anyway (its only behaviour), or that it reads for these values
/// alone (`SlurmctldParameters`: ctld's configless mode): no warning for
/// these values; a comma-separated list warns unless every item is one.
const SAME_AS_MUSTER: &[(&str, &[&str])] = &[
    ("SlurmctldParameters", &["enable_configless"]),
    ("SelectType", &["select/cons_tres", "select/cons_res"]),
    ("SwitchType", &["switch/none"]),
    ("LaunchType", &["launch/slurm"]),
    (
        "TopologyPlugin",
        &[
            "topology/none",
            "topology/default",
            "topology/tree",
            "topology/block",
        ],
    ),
    ("JobCompType", &["jobcomp/none"]),
    ("CredType", &["cred/munge", "cred/none"]),
];

/// Partition-line keys kept as text that muster reads (the access keys
/// at submission, `engine`'s `part_access`).
const ACTING_PARTITION: &[&str] = &[
    "AllowQos",
    "DenyAccounts",
    "DenyQos",
    "DisableRootJobs",
    "GraceTime",
    "LLN",
    "MaxCPUsPerNode",
    "PreemptMode",
    "RootOnly",
];

/// What the configuration table says beside `acts` for a few acting
/// keys: (section, key, note).
pub const ACTING_NOTES: &[(&str, &str, &str)] = &[
    (
        "slurm.conf partition line",
        "MaxCPUsPerNode",
        "the partition's jobs on a node hold at most that many of its CPUs together, \
         the rest stays for other partitions' jobs; backfill plans count the CPUs of the \
         partition's running jobs until their expected ends, and those of its planned \
         jobs over the whole pass (a later plan of the partition may come later than it \
         could, never beyond the cap)",
    ),
    (
        "slurm.conf",
        "PrivateData",
        "enforced by the controller for every reader (the commands, the REST API, the \
         dashboard, the watch stream); root, SlurmUser and AdminLevel Operator or \
         Administrator see everything. `jobs`, `usage`, `nodes`, `partitions`, \
         `reservations`, `users` and `accounts` hide what Slurm hides (the accounting \
         kinds too: the controller is its own slurmdbd); `cloud` and `events` have \
         nothing to hide here (no node is powered down, no event is recorded); \
         account coordinators are not modelled, so they see only their own; a word \
         that names nothing is warned about",
    ),
];

/// Partition-line keys refused with any value (the parser's error says
/// why): they would change where a job runs, and muster does not do it.
pub const REFUSED_PARTITION_KEYS: &[(&str, &str)] = &[
    (
        "Alternate",
        "submissions to a DRAIN or INACTIVE partition are not sent to an alternate one",
    ),
    (
        "QOS",
        "a partition QOS (limits on every job of the partition) is not implemented",
    ),
];

/// Partition-line keys that change who may run where and that muster does
/// not implement: only these values are accepted, any other is refused
/// with a `file:line` error (the parser's `refused_partition_value`).
pub const REFUSED_PARTITION: &[(&str, &[&str])] = &[
    ("AllocNodes", &["ALL"]),
    ("ExclusiveUser", &["NO"]),
    ("ReqResv", &["NO"]),
];

/// cgroup.conf keys read and typed but not applied (the node daemon says
/// so once at start), with what is missing.
pub const CGROUP_NOT_APPLIED: &[(&str, &str)] = &[
    (
        "MemorySwappiness",
        "the kernel's swappiness is left as it is",
    ),
    ("SignalChildrenProcesses", "signals reach the tasks only"),
    ("EnableControllers", "controllers are not enabled by muster"),
    ("IgnoreSystemdOnFailure", "not used"),
];

/// cgroup.conf keys accepted for compatibility that act nowhere.
const CGROUP_INERT: &[&str] = crate::cgroup::ACCEPTED_KEYS;

/// How a changed key reaches the running daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// `scontrol reconfigure` applies it.
    Reconfigure,
    /// The controller and the node daemons must be restarted.
    Restart,
}

/// The keys (as `scontrol show config` names them) whose change
/// `scontrol reconfigure` (or SIGHUP to the controller) applies to the
/// running controller ([`reconfigured`]); this is the one table
/// `check-config --diff` uses. Partitions (`PartitionName`, added, changed
/// or removed while no job uses them) and nodes added after the last one
/// are applied too. Every other change needs a restart.
pub const APPLIED_BY_RECONFIGURE: &[&str] = &[
    "AccountingStorageEnforce",
    "DefMemPerCPU",
    "DefMemPerNode",
    "DependencyParameters",
    "JobRequeue",
    "KillWait",
    "MaxArraySize",
    "MaxJobCount",
    "MaxMemPerNode",
    "MinJobAge",
    "PreemptExemptTime",
    "PreemptMode",
    "PreemptParameters",
    "PreemptType",
    "PriorityCalcPeriod",
    "PriorityDecayHalfLife",
    "PriorityFavorSmall",
    "PriorityFlags",
    "PriorityMaxAge",
    "PriorityType",
    "PriorityUsageResetPeriod",
    "PriorityWeightAge",
    "PriorityWeightAssoc",
    "PriorityWeightFairShare",
    "PriorityWeightJobSize",
    "PriorityWeightPartition",
    "PriorityWeightQOS",
    "PriorityWeightTRES",
    "PrivateData",
    "ReconfigFlags",
    "ReturnToService",
    "SchedulerParameters",
    "SchedulerType",
    "SlurmctldDebug",
];

/// What `scontrol reconfigure` makes of the configuration in force and the
/// one the files now give ([`reconfigured`]).
#[derive(Debug, Clone)]
pub struct Reconfigured {
    /// The configuration to run with: the running one with every change
    /// reconfigure applies taken from the files.
    pub config: crate::Config,
    /// The changes applied, one line each.
    pub applied: Vec<String>,
    /// The changes left for a restart, one line each.
    pub restart: Vec<String>,
}

/// The configuration `scontrol reconfigure` runs with: `running` with the
/// keys of [`APPLIED_BY_RECONFIGURE`], the partitions and nodes added after
/// the last one taken from `file`. A partition that jobs still use
/// (`in_use`) is kept when the files drop it; nodes removed, renamed,
/// reordered or redefined, gres.conf and cgroup.conf changes, and every
/// other key need a restart and stay as they run.
pub fn reconfigured(
    running: &crate::Config,
    file: &crate::Config,
    in_use: &[String],
) -> Reconfigured {
    let mut cfg = running.clone();
    let (mut applied, mut restart) = (Vec::new(), Vec::new());
    let before = running.show_config_entries();
    let after = file.show_config_entries();
    let value = |list: &[(String, String)], key: &str| {
        list.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    };
    let mut keys: Vec<&String> = before.iter().map(|(k, _)| k).collect();
    keys.extend(
        after
            .iter()
            .map(|(k, _)| k)
            .filter(|k| value(&before, k).is_none()),
    );
    for key in keys {
        if ["BOOT_TIME", "NEXT_JOB_ID", "SLURM_CONF"].contains(&key.as_str()) {
            continue;
        }
        // Unless written, MaxNodeCount is the number of nodes: their
        // change is told below.
        if key == "MaxNodeCount"
            && !running.other.contains_key("maxnodecount")
            && !file.other.contains_key("maxnodecount")
        {
            continue;
        }
        let (old, new) = (value(&before, key), value(&after, key));
        if old == new {
            continue;
        }
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
        let line = format!("{key}: {} -> {}", show(&old), show(&new));
        if contains(APPLIED_BY_RECONFIGURE, key) {
            applied.push(line);
        } else {
            restart.push(line);
        }
    }
    // The typed fields of the keys applied; the others stay.
    cfg.scheduler_type = file.scheduler_type.clone();
    cfg.scheduler_params = file.scheduler_params.clone();
    cfg.priority = file.priority.clone();
    cfg.min_job_age = file.min_job_age;
    cfg.max_job_count = file.max_job_count;
    cfg.kill_wait = file.kill_wait;
    cfg.return_to_service = file.return_to_service;
    cfg.def_mem_per_cpu = file.def_mem_per_cpu;
    cfg.def_mem_per_node = file.def_mem_per_node;
    cfg.max_mem_per_node = file.max_mem_per_node;
    for key in APPLIED_BY_RECONFIGURE {
        let lower = key.to_ascii_lowercase();
        match file.other.get(&lower) {
            Some(v) => {
                cfg.other.insert(lower, v.clone());
            }
            None => {
                cfg.other.remove(&lower);
            }
        }
    }
    // Nodes: those added after the last one; any other change waits.
    let old_names: Vec<&str> = running.nodes.iter().map(|n| n.name.as_str()).collect();
    let new_names: Vec<&str> = file.nodes.iter().map(|n| n.name.as_str()).collect();
    if new_names.starts_with(&old_names) {
        for (old, new) in running.nodes.iter().zip(&file.nodes) {
            if old_differs(old, new) {
                restart.push(format!("NodeName={}: definition changed", old.name));
            }
        }
        for n in &file.nodes[old_names.len()..] {
            applied.push(format!("NodeName={}: added", n.name));
            cfg.nodes.push(n.clone());
        }
    } else {
        restart.push(format!(
            "NodeName: nodes removed, renamed or reordered ({} -> {})",
            names_or_none(&old_names),
            names_or_none(&new_names)
        ));
    }
    // Partitions: as the files have them, with the ones still in use kept;
    // under ReconfigFlags=KeepPartInfo the running ones as they are
    // (`scontrol update` changes kept), under KeepPartState the files'
    // with the running State.
    let keep = keep_part_flags(file);
    let mut parts = Vec::new();
    for p in &file.partitions {
        let mut p = p.clone();
        match running.partition(&p.name) {
            None => applied.push(format!("PartitionName={}: added", p.name)),
            Some(old) if keep == KeepPart::Info => {
                if !same_partition(old, &p) {
                    restart.push(format!(
                        "PartitionName={}: changed in the files; kept as it runs \
                         (ReconfigFlags=KeepPartInfo)",
                        p.name
                    ));
                }
                p = old.clone();
            }
            Some(old) => {
                if keep == KeepPart::State && old.state != p.state {
                    applied.push(format!(
                        "PartitionName={}: State kept {} (ReconfigFlags=KeepPartState)",
                        p.name, old.state
                    ));
                    p.state = old.state.clone();
                }
                if !same_partition(old, &p) {
                    applied.push(format!("PartitionName={}: changed", p.name))
                }
            }
        }
        // Nodes the running configuration does not have yet wait too.
        p.nodes.retain(|n| cfg.nodes.iter().any(|c| &c.name == n));
        parts.push(p);
    }
    for old in &running.partitions {
        if file.partition(&old.name).is_some() {
            continue;
        }
        if keep != KeepPart::No {
            // Merged: a partition made by `scontrol create` stays.
            parts.push(old.clone());
        } else if in_use.iter().any(|n| n == &old.name) {
            restart.push(format!(
                "PartitionName={}: removed from the files but jobs still use it; kept",
                old.name
            ));
            parts.push(old.clone());
        } else {
            applied.push(format!("PartitionName={}: removed", old.name));
        }
    }
    cfg.partitions = parts;
    if running.gres != file.gres {
        restart.push("gres.conf: changed".into());
    }
    if running.cgroup != file.cgroup {
        restart.push("cgroup.conf: changed".into());
    }
    Reconfigured {
        config: cfg,
        applied,
        restart,
    }
}

/// What `ReconfigFlags` keeps of the running partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeepPart {
    /// Neither flag: the partitions are the files'.
    No,
    /// `KeepPartState`: the files' definitions with the running State.
    State,
    /// `KeepPartInfo` (which supersedes KeepPartState): the running
    /// definitions.
    Info,
}

/// The `ReconfigFlags` words muster acts on (`KeepPowerSaveSettings`: it
/// has no power saving, so there is nothing to keep).
const RECONFIG_FLAGS: &[&str] = &["KeepPartInfo", "KeepPartState", "KeepPowerSaveSettings"];

fn keep_part_flags(cfg: &crate::Config) -> KeepPart {
    let words: Vec<String> = cfg
        .other
        .get("reconfigflags")
        .map(|(_, v)| {
            v.split(',')
                .map(|w| w.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    if words.iter().any(|w| w == "keeppartinfo") {
        KeepPart::Info
    } else if words.iter().any(|w| w == "keeppartstate") {
        KeepPart::State
    } else {
        KeepPart::No
    }
}

fn names_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "(none)".into()
    } else {
        hostlist::compress(names)
    }
}

/// Whether a node's definition changed (its line number aside).
fn old_differs(old: &crate::NodeConf, new: &crate::NodeConf) -> bool {
    let mut a = old.clone();
    a.line = new.line;
    a != *new
}

/// Whether two partition definitions are the same (line numbers aside).
fn same_partition(a: &crate::PartitionConf, b: &crate::PartitionConf) -> bool {
    let mut a = a.clone();
    a.line = b.line;
    a == *b
}

/// How a change of `key` reaches the running daemons ([`APPLIED_BY_RECONFIGURE`]).
pub fn reload_for(key: &str) -> Reload {
    if contains(APPLIED_BY_RECONFIGURE, key) {
        Reload::Reconfigure
    } else {
        Reload::Restart
    }
}

fn contains(list: &[&str], key: &str) -> bool {
    list.iter().any(|k| k.eq_ignore_ascii_case(key))
}

/// Whether global key `key` set to `value` does nothing in muster: a key
/// Slurm knows (`keys::OTHER_GLOBAL`) that no part of muster reads, unless
/// the value is what muster does anyway. Unknown and obsolete keys are the
/// parser's warnings, not this.
pub fn global_key_is_inert(key: &str, value: &str) -> bool {
    if !crate::keys::contains(crate::keys::OTHER_GLOBAL, key)
        || contains(ACTING_GLOBAL, key)
        || REFUSED_GLOBAL
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(key))
    {
        return false;
    }
    let same = SAME_AS_MUSTER
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .is_some_and(|(_, values)| value.split(',').all(|item| contains(values, item.trim())));
    !same
}

/// The keys of a slurm.conf text (and the files it includes) that do
/// nothing here, as warnings at their file and line, in file order:
/// global keys ([`global_key_is_inert`]), node-line and partition-line
/// keys that muster accepts but does not read. `include` returns an
/// included file's text; the parse proper ([`crate::parse_str`]) reports
/// the errors, so a line that does not lex or an include that cannot be
/// read is skipped here.
pub fn inert_keys(
    text: &str,
    origin: &Path,
    include: &mut dyn FnMut(&Path) -> std::io::Result<String>,
) -> Vec<Warning> {
    let mut out = Vec::new();
    let base = origin.parent().map(Path::to_path_buf).unwrap_or_default();
    walk(text, origin, &base, include, 0, &mut out);
    out
}

fn walk(
    text: &str,
    file: &Path,
    base: &Path,
    include: &mut dyn FnMut(&Path) -> std::io::Result<String>,
    depth: usize,
    out: &mut Vec<Warning>,
) {
    for logical in lex::logical_lines(text) {
        let warn = |message: String| Warning {
            file: file.to_path_buf(),
            line: logical.line,
            message,
        };
        if let Some(target) = lex::include_target(&logical.text) {
            let path = if Path::new(&target).is_absolute() {
                target.into()
            } else {
                base.join(target)
            };
            if depth < 16 {
                if let Ok(text) = include(&path) {
                    walk(&text, &path, base, include, depth + 1, out);
                }
            }
            continue;
        }
        let Ok(pairs) = lex::tokenize(&logical.text) else {
            continue;
        };
        let Some(first) = pairs.first() else {
            continue;
        };
        match first.key.to_ascii_lowercase().as_str() {
            "nodename" => {
                for p in &pairs[1..] {
                    if crate::keys::contains(crate::keys::OTHER_NODE, &p.key) {
                        out.push(warn(format!("{} (node line) does nothing here", p.key)));
                    }
                }
            }
            "partitionname" => {
                for p in &pairs[1..] {
                    if crate::keys::contains(crate::keys::OTHER_PARTITION, &p.key)
                        && !contains(ACTING_PARTITION, &p.key)
                        && !REFUSED_PARTITION_KEYS
                            .iter()
                            .any(|(k, _)| k.eq_ignore_ascii_case(&p.key))
                        && !REFUSED_PARTITION
                            .iter()
                            .any(|(k, _)| k.eq_ignore_ascii_case(&p.key))
                    {
                        out.push(warn(format!(
                            "{} (partition line) does nothing here",
                            p.key
                        )));
                    }
                }
            }
            "nodeset" | "downnodes" | "frontendname" | "switchname" => {}
            _ => {
                for p in &pairs {
                    if global_key_is_inert(&p.key, &p.value) {
                        out.push(warn(format!("{}={} does nothing here", p.key, p.value)));
                    }
                    if p.key.eq_ignore_ascii_case("PrivateData") {
                        for w in crate::PrivateData::unknown_words(&p.value) {
                            out.push(warn(format!(
                                "PrivateData: {w:?} names nothing and hides nothing (Slurm's \
                                 words: accounts, cloud, events, jobs, nodes, partitions, \
                                 reservations, usage, users, all)"
                            )));
                        }
                    }
                }
            }
        }
    }
}

/// The keys of a cgroup.conf text that do nothing here: those read but
/// not applied ([`CGROUP_NOT_APPLIED`], where set to anything but `no`)
/// and those accepted for compatibility. Errors are
/// [`crate::parse_cgroup_conf`]'s to report.
pub fn inert_cgroup_keys(text: &str, origin: &Path) -> Vec<Warning> {
    let mut out = Vec::new();
    for logical in lex::logical_lines(text) {
        let Ok(pairs) = lex::tokenize(&logical.text) else {
            continue;
        };
        for p in pairs {
            let message = if let Some((_, why)) = CGROUP_NOT_APPLIED
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(&p.key))
            {
                let off = matches!(
                    p.value.trim().to_ascii_lowercase().as_str(),
                    "no" | "n" | "false" | "0"
                );
                if off && !p.key.eq_ignore_ascii_case("MemorySwappiness") {
                    continue;
                }
                format!("{}={} does nothing here ({why})", p.key, p.value)
            } else if contains(CGROUP_INERT, &p.key) {
                format!("{} does nothing here", p.key)
            } else {
                continue;
            };
            out.push(Warning {
                file: origin.to_path_buf(),
                line: logical.line,
                message,
            });
        }
    }
    out
}

/// What muster does with one slurm.conf or cgroup.conf key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDisposition {
    /// Read and acted on.
    Acting,
    /// Not read: these values are what muster does anyway; any other is
    /// warned about.
    OnlyAs(&'static [&'static str]),
    /// Accepted (and shown by `scontrol show config`), not acted on:
    /// `muster check-config` and the daemons at start warn about it.
    Inert,
    /// Read but not applied (cgroup.conf); the node daemon warns at start.
    NotApplied(&'static str),
    /// Dropped by Slurm; warned about as obsolete and ignored.
    Obsolete,
    /// Refused where set (the daemons do not start), for this reason.
    Refused(&'static str),
    /// Only these values are accepted (what muster does); any other is
    /// refused with an error, as it would change who may run where.
    RefusedExcept(&'static [&'static str]),
}

/// One row of the configuration table.
#[derive(Debug, Clone, Copy)]
pub struct KeyRow {
    /// `slurm.conf`, `slurm.conf node line`, `slurm.conf partition line`
    /// or `cgroup.conf`.
    pub section: &'static str,
    /// The key as Slurm spells it.
    pub key: &'static str,
    /// What muster does with it.
    pub disposition: KeyDisposition,
}

/// The keys muster models with typed fields, as Slurm spells them
/// (`keys::MODELLED_GLOBAL` holds them lowercased).
const MODELLED_SPELLING: &[&str] = &[
    "AuthType",
    "BackupAddr",
    "BackupController",
    "ClusterName",
    "ControlAddr",
    "ControlMachine",
    "DefMemPerCPU",
    "DefMemPerNode",
    "FirstJobId",
    "GresTypes",
    "KillWait",
    "MaxJobCount",
    "MaxMemPerNode",
    "MinJobAge",
    "ReturnToService",
    "SlurmctldHost",
    "SlurmctldPort",
    "SlurmdPort",
    "SlurmdSpoolDir",
    "SlurmdTimeout",
    "SlurmUser",
    "StateSaveLocation",
];

/// Every key of the tables in `keys` and `cgroup` with what muster does
/// with it: the configuration's disposition table, from which
/// docs/compatibility.md is generated. Node- and partition-line keys with
/// typed fields (`CPUs`, `Nodes`, ...) act and are not listed.
pub fn key_table() -> Vec<KeyRow> {
    use crate::keys;
    let mut rows = Vec::new();
    let slurm = "slurm.conf";
    for key in MODELLED_SPELLING {
        rows.push(KeyRow {
            section: slurm,
            key,
            disposition: KeyDisposition::Acting,
        });
    }
    for key in keys::OTHER_GLOBAL {
        let disposition = if let Some((_, why)) = REFUSED_GLOBAL.iter().find(|(k, _)| k == key) {
            KeyDisposition::Refused(why)
        } else if contains(ACTING_GLOBAL, key) {
            KeyDisposition::Acting
        } else if let Some((_, values)) = SAME_AS_MUSTER.iter().find(|(k, _)| k == key) {
            KeyDisposition::OnlyAs(values)
        } else {
            KeyDisposition::Inert
        };
        rows.push(KeyRow {
            section: slurm,
            key,
            disposition,
        });
    }
    for key in keys::OBSOLETE_GLOBAL {
        rows.push(KeyRow {
            section: slurm,
            key,
            disposition: KeyDisposition::Obsolete,
        });
    }
    for key in keys::OTHER_NODE {
        rows.push(KeyRow {
            section: "slurm.conf node line",
            key,
            disposition: KeyDisposition::Inert,
        });
    }
    for key in keys::OTHER_PARTITION {
        let disposition = if contains(ACTING_PARTITION, key) {
            KeyDisposition::Acting
        } else if let Some((_, why)) = REFUSED_PARTITION_KEYS.iter().find(|(k, _)| k == key) {
            KeyDisposition::Refused(why)
        } else if let Some((_, values)) = REFUSED_PARTITION.iter().find(|(k, _)| k == key) {
            KeyDisposition::RefusedExcept(values)
        } else {
            KeyDisposition::Inert
        };
        rows.push(KeyRow {
            section: "slurm.conf partition line",
            key,
            disposition,
        });
    }
    for (key, why) in CGROUP_NOT_APPLIED {
        rows.push(KeyRow {
            section: "cgroup.conf",
            key,
            disposition: KeyDisposition::NotApplied(why),
        });
    }
    for key in CGROUP_INERT {
        rows.push(KeyRow {
            section: "cgroup.conf",
            key,
            disposition: KeyDisposition::Inert,
        });
    }
    rows.sort_by_key(|r| (r.section, r.key.to_ascii_lowercase()));
    rows
}

/// The error's file and line, where it has them, and its message without
/// them: for tools that print findings as `file:line: error: message`.
pub fn error_parts(e: &ConfError) -> (Option<&Path>, Option<usize>, String) {
    let text = e.to_string();
    let (file, line) = match e {
        ConfError::Invalid { file, line, .. }
        | ConfError::Syntax { file, line, .. }
        | ConfError::Include { file, line, .. }
        | ConfError::IncludeDepth { file, line, .. } => (Some(file.as_path()), Some(*line)),
        ConfError::Missing { file, .. } => (Some(file.as_path()), None),
        ConfError::Io { .. } => (None, None),
    };
    let prefix = match (file, line) {
        (Some(f), Some(l)) => format!("{}:{l}: ", f.display()),
        (Some(f), None) => format!("{}: ", f.display()),
        _ => String::new(),
    };
    let message = text.strip_prefix(&prefix).unwrap_or(&text).to_string();
    (file, line, message)
}

#[cfg(test)]
mod tests;
