//! `muster check-config [-f slurm.conf] [--diff]`: reads slurm.conf (with
//! its Includes), and gres.conf, cgroup.conf, pyxis.conf and topology.conf
//! beside it, as the daemons would, and prints one line per finding:
//!
//! ```text
//! slurm.conf:12: error: invalid value "x" for KillWait: expected a whole number
//! cgroup.conf:3: warning: ConstrainCores=yes does nothing here (jobs are not held to their cores)
//! checked slurm.conf, cgroup.conf: 1 error, 1 warning
//! ```
//!
//! Errors are what would stop a daemon (exit 1); warnings are the
//! parsers' (unknown, obsolete or repeated keys) and the keys that parse
//! but do nothing in muster (`conf::effect`). Paths are shown relative to
//! slurm.conf's directory.
//!
//! `--fabric` asks the running controller what each node daemon reported
//! of the network fabric (muster's own, `fabric`) and warns where it
//! disagrees with topology.conf.
//!
//! `--diff` asks the running controller for its configuration (the
//! request `scontrol show config` makes) and compares it key by key with
//! the file's, plus the node and partition names; each change is
//! classified by `conf::effect::reload_for` (one table).

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use conf::effect::Reload;
use proto::{CtldRequest, CtldResponse};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub severity: Severity,
    pub message: String,
}

impl Finding {
    fn warning(w: conf::Warning) -> Finding {
        Finding {
            file: w.file,
            line: Some(w.line),
            severity: Severity::Warning,
            message: w.message,
        }
    }

    fn error(e: &conf::ConfError, fallback: &Path) -> Finding {
        let (file, line, message) = conf::effect::error_parts(e);
        Finding {
            file: file.unwrap_or(fallback).to_path_buf(),
            line,
            severity: Severity::Error,
            message,
        }
    }

    /// `file:line: severity: message`, the files (also those the message
    /// names) relative to `root`.
    pub fn render(&self, root: &Path) -> String {
        let file = self.file.strip_prefix(root).unwrap_or(&self.file);
        let severity = self.severity;
        let message = if root.as_os_str().is_empty() {
            self.message.clone()
        } else {
            self.message.replace(&format!("{}/", root.display()), "")
        };
        match self.line {
            Some(line) => format!("{}:{line}: {severity}: {message}", file.display()),
            None => format!("{}: {severity}: {message}", file.display()),
        }
    }
}

/// What checking the files found.
#[derive(Debug)]
pub struct Report {
    /// slurm.conf's directory: paths are shown relative to it.
    pub root: PathBuf,
    /// The files read, in order.
    pub files: Vec<PathBuf>,
    pub findings: Vec<Finding>,
    /// The configuration, where slurm.conf parsed.
    pub config: Option<conf::Config>,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }

    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }

    /// The findings, one line each, then `more` (the `--diff` section),
    /// then the summary line.
    pub fn render_with(&self, more: &str) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&f.render(&self.root));
            out.push('\n');
        }
        out.push_str(more);
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    fn summary(&self) -> String {
        let files: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                f.strip_prefix(&self.root)
                    .unwrap_or(f)
                    .display()
                    .to_string()
            })
            .collect();
        format!(
            "checked {}: {}, {}",
            if files.is_empty() {
                "nothing".to_string()
            } else {
                files.join(", ")
            },
            plural(self.errors(), "error"),
            plural(self.warnings(), "warning")
        )
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Checks `path` and the files beside it; `read` reads a file (the tests
/// give a map).
pub fn check_files(path: &Path, read: &mut dyn FnMut(&Path) -> std::io::Result<String>) -> Report {
    let root = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut files = Vec::new();
    let mut findings = Vec::new();
    let mut config = None;
    // Every file read goes through here, so the summary names them.
    let mut reading = |p: &Path| {
        let r = read(p);
        if r.is_ok() && !files.iter().any(|f: &PathBuf| f == p) {
            files.push(p.to_path_buf());
        }
        r
    };
    match reading(path) {
        Err(source) => findings.push(Finding {
            file: path.to_path_buf(),
            line: None,
            severity: Severity::Error,
            message: format!("cannot read: {source}"),
        }),
        Ok(text) => {
            let mut main = Vec::new();
            match conf::parse_str(&text, path, &mut reading) {
                Ok(loaded) => {
                    main.extend(loaded.warnings.into_iter().map(Finding::warning));
                    config = Some(loaded.config);
                }
                Err(e) => main.push(Finding::error(&e, path)),
            }
            main.extend(
                conf::effect::inert_keys(&text, path, &mut reading)
                    .into_iter()
                    .map(Finding::warning),
            );
            findings.extend(in_file_order(main));
        }
    }
    let beside = |name: &str| root.join(name);

    let gres_path = beside("gres.conf");
    if let Ok(text) = reading(&gres_path) {
        match conf::parse_gres_conf(&text, &gres_path) {
            Ok((gres, warnings)) => {
                let mut all = warnings;
                if let Some(c) = config.as_mut() {
                    all.extend(conf::check_gres_types(&gres, &c.gres_types, &gres_path));
                    c.gres = gres;
                }
                findings.extend(in_file_order(
                    all.into_iter().map(Finding::warning).collect(),
                ));
            }
            Err(e) => findings.push(Finding::error(&e, &gres_path)),
        }
    }

    let cgroup_path = beside("cgroup.conf");
    if let Ok(text) = reading(&cgroup_path) {
        let mut all = Vec::new();
        match conf::parse_cgroup_conf(&text, &cgroup_path) {
            Ok((cgroup, warnings)) => {
                all.extend(warnings.into_iter().map(Finding::warning));
                // As `conf::load` sets it, for the confinement check below.
                if let Some(c) = config.as_mut() {
                    c.cgroup = Some(cgroup);
                }
            }
            Err(e) => all.push(Finding::error(&e, &cgroup_path)),
        }
        all.extend(
            conf::effect::inert_cgroup_keys(&text, &cgroup_path)
                .into_iter()
                .map(Finding::warning),
        );
        if let Some(c) = &config {
            if c.confinement().is_none() && all.iter().all(|f| f.severity == Severity::Warning) {
                all.push(Finding {
                    file: cgroup_path.clone(),
                    line: None,
                    severity: Severity::Warning,
                    message: format!(
                        "does nothing here: jobs are confined only with ProctrackType=proctrack/cgroup (slurm.conf says {}) and a CgroupPlugin other than disabled",
                        c.proctrack_type()
                    ),
                });
            }
        }
        findings.extend(in_file_order(all));
    }

    // pyxis.conf (the node daemon's container settings): what a step with
    // a container would refuse, and the keys that do nothing here.
    let pyxis_path = beside("pyxis.conf");
    if let Ok(text) = reading(&pyxis_path) {
        let at = |line: usize, severity, message: String| Finding {
            file: pyxis_path.clone(),
            line: Some(line),
            severity,
            message,
        };
        match noded::check_pyxis_conf(&text) {
            Ok(ignored) => findings.extend(
                ignored
                    .into_iter()
                    .map(|(line, why)| at(line, Severity::Warning, why)),
            ),
            Err(e) => {
                // "pyxis.conf:N: why"
                let mut parts = e.splitn(3, ':');
                let (_, line, why) = (parts.next(), parts.next(), parts.next());
                match (line.and_then(|l| l.parse().ok()), why) {
                    (Some(line), Some(why)) => {
                        findings.push(at(line, Severity::Error, why.trim().to_string()))
                    }
                    _ => findings.push(Finding {
                        file: pyxis_path.clone(),
                        line: None,
                        severity: Severity::Error,
                        message: e,
                    }),
                }
            }
        }
    }

    let topology_path = beside("topology.conf");
    if let Ok(text) = reading(&topology_path) {
        match conf::parse_topology_conf(&text, &topology_path) {
            Ok((topo, warnings)) => {
                let mut all: Vec<Finding> = warnings.into_iter().map(Finding::warning).collect();
                if let Some(c) = &config {
                    let names: BTreeSet<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
                    all.extend(
                        conf::check_topology_nodes(&topo, &names, &topology_path)
                            .into_iter()
                            .map(Finding::warning),
                    );
                    let in_order: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
                    all.extend(
                        conf::check_unreached_nodes(&topo, &in_order, &topology_path)
                            .map(Finding::warning),
                    );
                }
                if let Some(kind) = config.as_ref().and_then(|c| c.topology_plugin()) {
                    if let Err(e) = conf::check_topology_kind(&topo, kind, &topology_path) {
                        all.push(Finding::error(&e, &topology_path));
                    }
                }
                findings.extend(in_file_order(all));
                if let Some(c) = config.as_mut() {
                    c.topology = Some(topo);
                }
                if config
                    .as_ref()
                    .is_none_or(|c| c.topology_plugin().is_none())
                {
                    findings.push(Finding {
                        file: topology_path.clone(),
                        line: None,
                        severity: Severity::Warning,
                        message: "does nothing here: TopologyPlugin is neither topology/tree \
                                  nor topology/block"
                            .into(),
                    });
                }
            }
            Err(e) => findings.push(Finding::error(&e, &topology_path)),
        }
    } else if let Some(kind) = config.as_ref().and_then(|c| c.topology_plugin()) {
        findings.push(Finding {
            file: topology_path.clone(),
            line: None,
            severity: Severity::Error,
            message: format!("cannot read: TopologyPlugin={kind} needs this file"),
        });
    }
    Report {
        root,
        files,
        findings,
        config,
    }
}

/// Findings ordered by file (in the order the files first appear) and
/// line; findings without a line last.
fn in_file_order(mut findings: Vec<Finding>) -> Vec<Finding> {
    let mut order: Vec<PathBuf> = Vec::new();
    for f in &findings {
        if !order.contains(&f.file) {
            order.push(f.file.clone());
        }
    }
    findings.sort_by_key(|f| {
        (
            order.iter().position(|p| p == &f.file),
            f.line.unwrap_or(usize::MAX),
        )
    });
    findings
}

/// One difference between the running controller and the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The key as `scontrol show config` names it, or `NodeName`/`PartitionName`.
    pub key: String,
    /// The running value; None where the running controller lacks it.
    pub running: Option<String>,
    /// The file's value; None where the file lacks it.
    pub file: Option<String>,
}

impl Change {
    fn reload(&self) -> Reload {
        // Partitions (added, changed, removed) and nodes added after the
        // last one: `scontrol reconfigure` applies them
        // (`conf::effect::reconfigured`).
        if self.key == "PartitionName"
            || self.key.starts_with("PartitionName=")
            || self.key == NODES_ADDED
        {
            return Reload::Reconfigure;
        }
        conf::effect::reload_for(&self.key)
    }

    fn render(&self) -> String {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
        format!(
            "{}: running {} -> file {}: {}",
            self.key,
            show(&self.running),
            show(&self.file),
            match self.reload() {
                Reload::Reconfigure => "applied by `scontrol reconfigure`",
                Reload::Restart => "needs a restart",
            }
        )
    }
}

/// The key of a node change that only adds nodes after the last one.
const NODES_ADDED: &str = "NodeName (added)";

/// Entries left out of the comparison: runtime facts, not configuration,
/// and the file's own path (a candidate file is usually not where the
/// running one is).
const RUNTIME_ENTRIES: &[&str] = &["BOOT_TIME", "NEXT_JOB_ID", "SLURM_CONF"];

/// The changes between two `scontrol show config` entry lists, in the
/// running list's order, then the keys only the file has.
pub fn diff_entries(running: &[(String, String)], file: &[(String, String)]) -> Vec<Change> {
    let mut out = Vec::new();
    let get = |list: &[(String, String)], key: &str| {
        list.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    };
    for (key, value) in running {
        if RUNTIME_ENTRIES.contains(&key.as_str()) {
            continue;
        }
        let new = get(file, key);
        if new.as_deref() != Some(value.as_str()) {
            out.push(Change {
                key: key.clone(),
                running: Some(value.clone()),
                file: new,
            });
        }
    }
    for (key, value) in file {
        if !RUNTIME_ENTRIES.contains(&key.as_str()) && get(running, key).is_none() {
            out.push(Change {
                key: key.clone(),
                running: None,
                file: Some(value.clone()),
            });
        }
    }
    out
}

/// A change of a set of names (nodes, partitions), as one [`Change`].
pub fn diff_names(key: &str, running: &[String], file: &[String]) -> Option<Change> {
    let r: BTreeSet<&String> = running.iter().collect();
    let f: BTreeSet<&String> = file.iter().collect();
    if r == f {
        return None;
    }
    let list = |s: &BTreeSet<&String>| {
        let v: Vec<&str> = s.iter().map(|x| x.as_str()).collect();
        if v.is_empty() {
            "(none)".to_string()
        } else {
            hostlist::compress(&v)
        }
    };
    Some(Change {
        key: key.to_string(),
        running: Some(list(&r)),
        file: Some(list(&f)),
    })
}

/// The running controller's configuration compared with `cfg`; an error
/// where the controller cannot be asked.
fn diff_with_running(cfg: &conf::Config) -> anyhow::Result<Vec<Change>> {
    let c = client::Client::new(cfg.clone(), client::current_identity());
    let host = cfg
        .slurmctld_host
        .first()
        .map_or_else(String::new, |h| h.to_string());
    let unreachable = |e: client::ClientError| {
        anyhow::anyhow!(
            "--diff: cannot ask the controller at {host} port {} (as this file names it): {e}",
            cfg.slurmctld_port
        )
    };
    let running = match c.call(CtldRequest::ShowConfig).map_err(unreachable)? {
        CtldResponse::Config(info) => info.entries,
        other => anyhow::bail!("--diff: unexpected answer to ShowConfig: {other:?}"),
    };
    let mut changes = diff_entries(&running, &cfg.show_config_entries());
    // Unwritten, MaxNodeCount counts the nodes: the NodeName change below
    // tells it.
    if !cfg.other.contains_key("maxnodecount") {
        changes.retain(|c| c.key != "MaxNodeCount");
    }
    let nodes: Vec<String> = c
        .nodes()
        .map_err(unreachable)?
        .into_iter()
        .map(|n| n.name)
        .collect();
    let file_nodes: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
    let key = if file_nodes.starts_with(&nodes) {
        NODES_ADDED
    } else {
        "NodeName"
    };
    changes.extend(diff_names(key, &nodes, &file_nodes));
    let parts = c.partitions().map_err(unreachable)?;
    let names: Vec<String> = parts.iter().map(|p| p.name.clone()).collect();
    let file_names: Vec<String> = cfg.partitions.iter().map(|p| p.name.clone()).collect();
    changes.extend(diff_names("PartitionName", &names, &file_names));
    for p in &parts {
        if let Some(fp) = cfg.partition(&p.name) {
            changes.extend(diff_names(
                &format!("PartitionName={} Nodes", p.name),
                &p.nodes,
                &fp.nodes,
            ));
        }
    }
    Ok(changes)
}

/// `--fabric`: the nodes' reports from the running controller compared
/// with the file's topology.conf.
fn fabric_findings(cfg: &conf::Config, path: &Path) -> anyhow::Result<(Vec<Finding>, String)> {
    let topo_path = path.with_file_name("topology.conf");
    let Some(topo) = &cfg.topology else {
        anyhow::bail!(
            "--fabric: no topology.conf beside {} to compare with",
            path.display()
        );
    };
    let c = client::Client::new(cfg.clone(), client::current_identity());
    let reports = match c.call(CtldRequest::FabricReports).map_err(|e| {
        anyhow::anyhow!("--fabric: cannot ask the controller (as this file names it): {e}")
    })? {
        CtldResponse::Fabric(r) => r,
        other => anyhow::bail!("--fabric: unexpected answer to FabricReports: {other:?}"),
    };
    let names: Vec<&str> = cfg.nodes.iter().map(|n| n.name.as_str()).collect();
    let probe = cfg
        .other
        .get("mustertopologyprobe")
        .is_some_and(|(_, v)| !v.trim().is_empty());
    Ok(fabric::compare(topo, &topo_path, &names, probe, &reports))
}

/// The `--diff` section: one line per change and what it needs.
pub fn render_changes(changes: &[Change]) -> String {
    let mut out = String::new();
    for c in changes {
        out.push_str("diff: ");
        out.push_str(&c.render());
        out.push('\n');
    }
    let by_reconfigure = changes
        .iter()
        .filter(|c| c.reload() == Reload::Reconfigure)
        .count();
    let restart = changes.len() - by_reconfigure;
    if changes.is_empty() {
        out.push_str("diff: the running controller uses this configuration\n");
    } else {
        out.push_str(&format!(
            "diff: {}: {by_reconfigure} applied by `scontrol reconfigure`, {restart} {} a restart of the controller and the node daemons\n",
            plural(changes.len(), "change"),
            if restart == 1 { "needs" } else { "need" },
        ));
    }
    out
}

/// `muster check-config`: the exit status.
pub fn main(a: &crate::args::CheckConfigArgs) -> i32 {
    let Some(path) = a.file.clone().or_else(client::find_config) else {
        eprintln!(
            "muster check-config: error: no slurm.conf: give -f FILE or set SLURM_CONF \
             (nor /etc/slurm/slurm.conf nor a `muster up` cluster's exists)"
        );
        return 1;
    };
    let mut read = |p: &Path| std::fs::read_to_string(p);
    let mut report = check_files(&path, &mut read);
    let mut diff_text = String::new();
    if a.diff {
        match &report.config {
            Some(cfg) => match diff_with_running(cfg) {
                Ok(changes) => diff_text = render_changes(&changes),
                Err(e) => report.findings.push(Finding {
                    file: path.clone(),
                    line: None,
                    severity: Severity::Error,
                    message: format!("{e:#}"),
                }),
            },
            None => {
                diff_text = format!(
                    "diff: not compared: {} has errors\n",
                    path.file_name().map_or_else(
                        || path.display().to_string(),
                        |n| n.to_string_lossy().into_owned()
                    )
                )
            }
        }
    }
    if a.fabric {
        match &report.config {
            Some(cfg) => match fabric_findings(cfg, &path) {
                Ok((found, summary)) => {
                    report.findings.extend(found);
                    diff_text.push_str(&summary);
                }
                Err(e) => report.findings.push(Finding {
                    file: path.clone(),
                    line: None,
                    severity: Severity::Error,
                    message: format!("{e:#}"),
                }),
            },
            None => diff_text.push_str("fabric: not compared: slurm.conf has errors\n"),
        }
    }
    let out = report.render_with(&diff_text);
    cli::common::print_stdout(&out);
    i32::from(report.errors() > 0)
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

mod fabric;
#[cfg(test)]
mod tests;
