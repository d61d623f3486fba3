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
    "AccountingStoragePass",
    "AccountingStoragePort",
    "AccountingStorageType",
    "AccountingStorageUser",
    "AuthInfo",
    "DependencyParameters",
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
    "ProctrackType",
    "PrologFlags",
    "SchedulerParameters",
    "SchedulerType",
    "SelectTypeParameters",
    "SlurmctldDebug",
    "SlurmctldLogFile",
    "SlurmdDebug",
    "SlurmdLogFile",
    "SlurmdParameters",
    "TaskPlugin",
    "TaskPluginParam",
];

/// Keys that muster does not read but whose given value is what muster
/// does anyway (its only behaviour): no warning for these values.
const SAME_AS_MUSTER: &[(&str, &[&str])] = &[
    ("SelectType", &["select/cons_tres", "select/cons_res"]),
    ("SwitchType", &["switch/none"]),
    ("LaunchType", &["launch/slurm"]),
    ("TopologyPlugin", &["topology/none", "topology/default"]),
    ("JobCompType", &["jobcomp/none"]),
    ("CredType", &["cred/munge", "cred/none"]),
];

/// Partition-line keys kept as text that muster reads.
const ACTING_PARTITION: &[&str] = &["PreemptMode"];

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
/// `scontrol reconfigure` applies to the running daemons. Empty: muster
/// has no `scontrol reconfigure` yet (scontrol answers `invalid keyword`),
/// and the daemons read their configuration once, at start, so every
/// change needs a restart. When reconfigure is implemented, list here the
/// keys it re-reads; this is the one table `check-config --diff` uses.
pub const APPLIED_BY_RECONFIGURE: &[&str] = &[];

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
    if !crate::keys::contains(crate::keys::OTHER_GLOBAL, key) || contains(ACTING_GLOBAL, key) {
        return false;
    }
    let same = SAME_AS_MUSTER
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .is_some_and(|(_, values)| contains(values, value.trim()));
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
        let disposition = if contains(ACTING_GLOBAL, key) {
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
