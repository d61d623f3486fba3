//! From the command line and slurm.conf to what this daemon needs: its
//! node entry, where to listen, where the controller is, and the resources
//! it reports.

use crate::daemon::hw;
use crate::options::NodedOptions;
use anyhow::Context;
use model::Gres;
use proto::{Identity, NodeRegistration};
use std::path::PathBuf;
use std::sync::Arc;

/// Everything the daemon takes from its configuration at start.
#[derive(Clone, Debug)]
pub struct NodeSetup {
    /// This node's NodeName.
    pub node_name: String,
    /// The absolute slurm.conf path (`SLURM_CONF` in jobs).
    pub conf_path: PathBuf,
    /// `SLURM_TOPOLOGY_ADDR` and `SLURM_TOPOLOGY_ADDR_PATTERN` of this
    /// node (`conf::Config::topology_addr`); None: its name and `node`.
    pub topology_addr: Option<(String, String)>,
    /// `NodeAddr`.
    pub addr: String,
    /// The port to listen on.
    pub port: u16,
    /// Controller addresses (`host:port`), primary first.
    pub ctld_addrs: Vec<String>,
    /// The spool directory (`SlurmdSpoolDir`, `%n` expanded).
    pub spool_dir: PathBuf,
    /// JobAcctGatherType and JobAcctGatherFrequency, for the supervisors.
    pub gather: crate::gather::GatherSettings,
    /// The node's GPUs as gres.conf describes them, for its steps' tasks.
    pub gpus: crate::gpus::GpuSettings,
    /// Where jobs' cgroups are: `Some` where cgroup.conf and
    /// `ProctrackType=proctrack/cgroup` confine jobs and the daemon is root.
    pub cgroup: Option<crate::cgroup::CgroupSettings>,
    /// slurm.conf `TaskPlugin` has `task/affinity`: steps' tasks are bound
    /// to CPUs (`--cpu-bind`).
    pub task_affinity: bool,
    /// Prolog, Epilog and the health check (crate::hooks).
    pub hooks: crate::hooks::HookSettings,
    /// The GPU Xid watcher's source and fatal Xids (crate::xid).
    pub xid: crate::xid::XidSettings,
    /// The node's GPU device files in gres.conf's order (the index of
    /// each is the GPU's index on the node).
    pub gpu_files: Vec<String>,
    /// The node's threads per core as its CPU ids count them
    /// (`ThreadsPerCore` where `CPUs` counts every thread, else 1): task
    /// binding gives whole cores of that many ids.
    pub cpu_threads: u32,
    /// slurm.conf `TaskPluginParam`: the binding of a step that asks for
    /// none (`--cpu-bind` text: `cores`, `threads`, `sockets`, `none`,
    /// with `verbose`); None: Slurm's automatic binding.
    pub default_cpu_bind: Option<String>,
    /// What registration reports (free memory, load and start time are
    /// refreshed on each attempt).
    pub registration: NodeRegistration,
    /// Who the daemon is, for its requests to the controller.
    pub identity: Identity,
    /// Credentials: made for the daemon's requests and its socket, checked
    /// on every request it serves.
    pub auth: Arc<NodeAuth>,
    /// slurm.conf `RebootProgram`: what `scontrol reboot` runs here.
    pub reboot_program: Option<String>,
    /// slurm.conf `MusterTopologyProbe` (muster's own): the site's script
    /// naming this node's switches (`daemon::fabric`).
    pub fabric_probe: Option<String>,
}

/// The daemon's side of authentication (crate `auth`).
#[derive(Debug)]
pub struct NodeAuth {
    /// Signs the daemon's requests and the credentials its socket hands out.
    pub signer: auth::Signer,
    /// Checks every request.
    pub verifier: auth::Verifier,
    /// The scheme and paths from `AuthType` and `AuthInfo`.
    pub settings: auth::AuthSettings,
    /// Who may launch, signal and end jobs and stop the daemon: root and
    /// `SlurmUser` (the controller's user).
    pub privileged_uids: Vec<u32>,
}

impl NodeAuth {
    /// True when checking or making a credential asks munged (a blocking
    /// round trip), rather than only computing an HMAC.
    pub fn blocks(&self) -> bool {
        self.verifier.blocks() || self.signer.blocks()
    }

    /// Loads the key (or libmunge) and resolves `SlurmUser`.
    pub fn from_config(config: &conf::Config) -> anyhow::Result<NodeAuth> {
        let settings = auth::AuthSettings::from_config(config)?;
        let (signer, verifier) = auth::from_config(config)?;
        let (privileged_uids, known) = auth::daemon_uids(config);
        if !known {
            tracing::warn!(
                "SlurmUser {:?} is not a known user: only root may launch jobs here",
                config.slurm_user
            );
        }
        Ok(NodeAuth {
            signer,
            verifier,
            settings,
            privileged_uids,
        })
    }
}

/// `host:port`, bracketing an IPv6 literal.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The node's threads per core as its CPU ids count them: `ThreadsPerCore`
/// where `CPUs` is Boards x Sockets x CoresPerSocket x ThreadsPerCore
/// (Slurm numbers the ids core by core), else 1.
pub fn cpu_threads(node: &conf::NodeConf) -> u32 {
    let t = node.threads_per_core.max(1);
    let all = node
        .boards
        .max(1)
        .saturating_mul(node.sockets.max(1))
        .saturating_mul(node.cores_per_socket.max(1))
        .saturating_mul(t);
    if node.cpus == all {
        t
    } else {
        1
    }
}

/// slurm.conf `TaskPluginParam` as the `--cpu-bind` text of a step that
/// gives none: `Cores`, `Threads`, `Sockets` or `None` (the default
/// binding type), `Autobind=cores|threads|sockets` (the same where no
/// type is given) and `Verbose`; with the words it does not act on
/// (`SlurmdOffSpec`, `OMPThreads`, ...), for the daemon to say so.
pub fn task_plugin_param(value: Option<&str>) -> (Option<String>, Vec<String>) {
    let mut kind = None;
    let mut auto = None;
    let mut verbose = false;
    let mut not_read = Vec::new();
    for word in value.unwrap_or_default().split(',') {
        let w = word.trim().to_ascii_lowercase();
        match w.as_str() {
            "" => {}
            "cores" | "threads" | "sockets" | "none" => kind = Some(w),
            "autobind=cores" | "autobind=threads" | "autobind=sockets" => {
                auto = Some(w["autobind=".len()..].to_string());
            }
            "verbose" => verbose = true,
            _ => not_read.push(word.trim().to_string()),
        }
    }
    let bind = match (kind.or(auto), verbose) {
        (None, false) => None,
        (None, true) => Some("verbose".to_string()),
        (Some(k), false) => Some(k),
        (Some(k), true) => Some(format!("verbose,{k}")),
    };
    (bind, not_read)
}

/// True when `SlurmdParameters` has `config_overrides`: report the
/// configured resources instead of the hardware (slurm.conf(5)).
pub fn has_config_overrides(slurmd_parameters: Option<&str>) -> bool {
    slurmd_parameters.is_some_and(|p| {
        p.split(',')
            .any(|w| w.trim().eq_ignore_ascii_case("config_overrides"))
    })
}

/// Sums gres.conf lines into the node's GRES inventory, keeping the order
/// of first appearance.
pub fn gres_inventory(lines: &[&conf::GresConf]) -> Vec<Gres> {
    let mut out: Vec<Gres> = Vec::new();
    for line in lines {
        match out
            .iter_mut()
            .find(|g| g.name == line.name && g.type_ == line.type_)
        {
            Some(g) => g.count += line.count,
            None => out.push(Gres {
                name: line.name.clone(),
                type_: line.type_.clone(),
                count: line.count,
            }),
        }
    }
    out
}

/// The gres.conf lines of `node`, its gpu lines replaced by what NVML
/// finds where a line asks for `AutoDetect=nvml`. Without the library (no
/// NVIDIA driver) the daemon says so once, here, and keeps gres.conf.
pub fn node_gres_lines(config: &conf::Config, node: &str) -> Vec<conf::GresConf> {
    let lines: Vec<conf::GresConf> = config.gres_for_node(node).into_iter().cloned().collect();
    if !lines
        .iter()
        .any(|g| g.autodetect.as_deref() == Some("nvml"))
    {
        return lines;
    }
    match crate::nvml::Nvml::load().and_then(|nvml| crate::nvml::autodetect_lines(&lines, &nvml)) {
        Ok(found) => {
            tracing::info!(
                "AutoDetect=nvml: {} GPUs found",
                found.iter().filter(|g| g.name == "gpu").count()
            );
            found
        }
        Err(e) => {
            tracing::warn!("AutoDetect=nvml: {e}; using the GPUs of gres.conf");
            lines
        }
    }
}

/// This host's short name (up to the first dot).
pub fn short_hostname() -> anyhow::Result<String> {
    let name = nix::unistd::gethostname().context("reading the host name")?;
    let name = name.to_string_lossy();
    Ok(name.split('.').next().unwrap_or_default().to_string())
}

/// The daemon's own identity: its uid, gid, user name and node name.
pub fn own_identity(node_name: &str) -> Identity {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let user = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name);
    Identity {
        uid: uid.as_raw(),
        gid: gid.as_raw(),
        user,
        host: node_name.to_string(),
    }
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Loads slurm.conf and finds this node.
pub fn load(opts: &NodedOptions) -> anyhow::Result<NodeSetup> {
    let node_name = match &opts.node_name {
        Some(n) => n.clone(),
        None => short_hostname()?,
    };
    let conf_path = if opts.conf_path.is_absolute() {
        opts.conf_path.clone()
    } else {
        std::env::current_dir()
            .context("reading the current directory")?
            .join(&opts.conf_path)
    };
    // ConfError's text already names the file, the line and the cause.
    let loaded = conf::load(&conf_path).map_err(|e| anyhow::anyhow!("{e}"))?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    // Keys Slurm knows that do nothing here, once (`conf::effect`).
    if let Ok(text) = std::fs::read_to_string(&conf_path) {
        for warning in
            conf::effect::inert_keys(&text, &conf_path, &mut |p| std::fs::read_to_string(p))
        {
            tracing::warn!("{warning}");
        }
    }
    let config = loaded.config;
    let node = config.node(&node_name).with_context(|| {
        format!(
            "node {node_name:?} is not defined in {} (use -N to name it)",
            conf_path.display()
        )
    })?;
    let port = node.port.unwrap_or(config.slurmd_port);
    let ctld_addrs = config
        .slurmctld_host
        .iter()
        .map(|h| host_port(h.addr.as_deref().unwrap_or(&h.name), config.slurmctld_port))
        .collect();
    let overrides = has_config_overrides(
        config
            .other
            .get("slurmdparameters")
            .map(|(_, v)| v.as_str()),
    );
    let gres_lines = node_gres_lines(&config, &node_name);
    let probe = hw::probe();
    let mut registration = NodeRegistration {
        name: node_name.clone(),
        addr: node.addr.clone(),
        port,
        cpus: probe.topology.cpus,
        boards: 1,
        sockets: probe.topology.sockets,
        cores_per_socket: probe.topology.cores_per_socket,
        threads_per_core: probe.topology.threads_per_core,
        real_memory: probe.memory.total_mb,
        free_memory: probe.memory.free_mb,
        cpu_load: probe.load,
        gres: Vec::new(),
        os: probe.os,
        arch: probe.arch,
        boot_time: probe.boot_time,
        start_time: now(),
        running_jobs: Vec::new(),
        version: conf::SLURM_COMPAT_VERSION.to_string(),
        boot_id: hw::boot_id(),
        fabric: None,
    };
    if overrides {
        registration.cpus = node.cpus;
        registration.boards = node.boards;
        registration.sockets = node.sockets;
        registration.cores_per_socket = node.cores_per_socket;
        registration.threads_per_core = node.threads_per_core;
        registration.real_memory = node.real_memory;
        registration.gres = node.gres.clone();
    } else {
        let lines: Vec<&conf::GresConf> = gres_lines.iter().collect();
        // GRES without a gres.conf line (a count-only GRES) keeps the
        // count slurm.conf gives it.
        registration.gres = gres_inventory(&lines);
        for g in &node.gres {
            if !registration.gres.iter().any(|r| r.name == g.name) {
                registration.gres.push(g.clone());
            }
        }
    }
    let auth = NodeAuth::from_config(&config).context("setting up authentication")?;
    let spool_dir = PathBuf::from(config.spool_dir_for(&node_name));
    let other = |key: &str| config.other.get(key).map(|(_, v)| v.as_str());
    let mut gather = crate::gather::GatherSettings::from_conf(
        other("jobacctgathertype"),
        other("jobacctgatherfrequency"),
        &node_name,
        &spool_dir,
    );
    let cgroup = confinement(&config, &node_name, &spool_dir, &gres_lines)?;
    // With ConstrainDevices a step sees only its own GPUs, numbered from 0
    // (CUDA_VISIBLE_DEVICES relative; SLURM_STEP_GPUS stays global).
    let devices_confined = cgroup.as_ref().is_some_and(|c| c.devices.is_some());
    let gpus = crate::gpus::GpuSettings::from_gres(
        &gres_lines.iter().collect::<Vec<_>>(),
        crate::gpus::GpuNumbering::for_confinement(devices_confined, false),
    );
    // cgroup.conf's memory limits: on the job's cgroups where the cgroup
    // layer confines, else on the gathering cgroups.
    gather.memory = config.memory_constraints();
    gather.real_memory_mb = registration.real_memory;
    let task_affinity = config
        .task_plugin()
        .split(',')
        .any(|p| p.trim() == "task/affinity" || p.trim() == "affinity");
    let hooks = crate::hooks::HookSettings::from_config(&config);
    // pyxis.conf is read again by each container step; what it says wrong
    // or in vain is told once here.
    match crate::container::SiteConf::beside(&conf_path.to_string_lossy()) {
        Ok(site) => {
            for (line, why) in &site.ignored {
                tracing::warn!("pyxis.conf:{line}: {why}");
            }
        }
        Err(e) => tracing::warn!("{e} (every step with a container will fail)"),
    }
    let gpu_files: Vec<String> = gres_lines
        .iter()
        .filter(|g| g.name == "gpu")
        .flat_map(|g| g.files.iter().cloned())
        .collect();
    let has_gpus =
        gres_lines.iter().any(|g| g.name == "gpu") || node.gres.iter().any(|g| g.name == "gpu");
    let (xid, bad) = crate::xid::XidSettings::from_parameters(
        other("healthcheckparameters"),
        &node_name,
        has_gpus,
    );
    for word in bad {
        eprintln!("noded: HealthCheckParameters: cannot read {word}; the default Xids are fatal");
    }
    let (default_cpu_bind, not_read) =
        task_plugin_param(config.other.get("taskpluginparam").map(|(_, v)| v.as_str()));
    for word in not_read {
        eprintln!(
            "noded: TaskPluginParam={word} is not acted on here; tasks are bound as without it"
        );
    }
    let reboot_program = other("rebootprogram")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let fabric_probe = other("mustertopologyprobe")
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    Ok(NodeSetup {
        reboot_program,
        fabric_probe,
        topology_addr: Some(config.topology_addr(&node_name)),
        hooks,
        xid,
        gpu_files,
        gather,
        gpus,
        cgroup,
        task_affinity,
        cpu_threads: cpu_threads(node),
        default_cpu_bind,
        auth: Arc::new(auth),
        identity: own_identity(&node_name),
        spool_dir,
        addr: node.addr.clone(),
        port,
        ctld_addrs,
        conf_path,
        node_name,
        registration,
    })
}

/// The cgroup settings where the configuration confines jobs. Not root:
/// said once, and jobs run as without cgroups. Root, but the cgroups
/// cannot be used (no such mount, a controller missing): an error that
/// names what is missing, and the daemon does not start.
fn confinement(
    config: &conf::Config,
    node_name: &str,
    spool_dir: &std::path::Path,
    gres_lines: &[conf::GresConf],
) -> anyhow::Result<Option<crate::cgroup::CgroupSettings>> {
    let Some(cgroup_conf) = config.confinement() else {
        return Ok(None);
    };
    if !nix::unistd::geteuid().is_root() {
        tracing::warn!(
            "jobs are not confined: cgroup.conf asks for cgroups, but only root can make them"
        );
        return Ok(None);
    }
    let mut settings = crate::cgroup::CgroupSettings::from_conf(cgroup_conf, node_name, spool_dir)
        .context("cannot confine jobs with cgroups (cgroup.conf)")?;
    // Keys read and typed but not yet acted on: said once, not ignored
    // in silence (docs/compatibility.md).
    let not_applied: Vec<&str> = [
        (cgroup_conf.memory_swappiness.is_some(), "MemorySwappiness"),
        (
            cgroup_conf.signal_children_processes,
            "SignalChildrenProcesses=yes",
        ),
        (cgroup_conf.enable_controllers, "EnableControllers=yes"),
        (
            cgroup_conf.ignore_systemd_on_failure,
            "IgnoreSystemdOnFailure=yes",
        ),
    ]
    .into_iter()
    .filter_map(|(set, key)| set.then_some(key))
    .collect();
    if !not_applied.is_empty() {
        tracing::warn!(
            "cgroup.conf: not applied here, ignored: {}",
            not_applied.join(", ")
        );
    }
    if cgroup_conf.constrain_devices {
        // The node's GPU device files, by index (GPUs count up over the
        // gpu lines in file order).
        settings.devices = Some(
            gres_lines
                .iter()
                .filter(|g| g.name == "gpu")
                .flat_map(|g| g.files.iter().map(PathBuf::from))
                .collect(),
        );
    }
    tracing::info!(
        "jobs are confined: cgroup {:?} under {}, controllers {}",
        settings.version,
        settings.mount.join(&settings.base).display(),
        settings
            .controllers
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    Ok(Some(settings))
}

#[cfg(test)]
mod tests;
