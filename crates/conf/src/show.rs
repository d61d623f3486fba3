//! `scontrol show config`: the entries Slurm 22.05 prints, in its order and
//! spelling, with muster's values where it has them and Slurm's defaults
//! where it does not.
//!
//! ```text
//! Config --entries()--> [(Key, Value)] --override_entry()--> runtime facts
//!        --render_show_config()--> "Key                     = Value" lines
//! ```
//!
//! The table is static so the order cannot drift; a key set in slurm.conf
//! but not modelled by muster is looked up in `Config::other` and printed
//! with the unit Slurm prints (`10 sec`, `300 nodes/min`).

use model::units::{format_time_limit_hms, parse_time_limit};
use model::TimeLimit;

use crate::Config;

/// The Slurm release whose `scontrol show config` layout this follows,
/// printed as `SLURM_VERSION` unless the caller overrides it.
pub const SLURM_COMPAT_VERSION: &str = "22.05.8";

/// How a row gets its value.
enum Val {
    /// A value muster models in a `Config` field.
    Field(F),
    /// A fact about the build, not the configuration.
    Fixed(&'static str),
    /// A key kept in `Config::other`: Slurm's default as printed, and how to
    /// print a configured value.
    Other(&'static str, Fmt),
}

/// Rows computed from typed `Config` fields.
enum F {
    AuthType,
    BootTime,
    ClusterName,
    DefMem,
    FirstJobId,
    GresTypes,
    KillWait,
    MaxJobCount,
    MaxMem,
    MaxNodeCount,
    MinJobAge,
    NextJobId,
    ReturnToService,
    SlurmUser,
    SlurmctldHost,
    SlurmctldPort,
    SlurmdPort,
    SlurmdSpoolDir,
    SlurmdTimeout,
    SlurmConf,
    SlurmVersion,
    StateSaveLocation,
}

/// How Slurm prints a configured value.
enum Fmt {
    /// As written; empty prints `(null)`.
    Plain,
    /// As written, even when empty.
    Raw,
    /// `N sec`.
    Sec,
    /// `N min`.
    Min,
    /// `N usec`.
    Usec,
    /// `N nodes/min`.
    PerMin,
    /// `N percent`.
    Percent,
    /// `Yes` or `No`.
    YesNo,
    /// Uppercased.
    Upper,
    /// A time in `[D-]HH:MM:SS`, written in minutes or Slurm's time forms.
    Duration,
    /// `AccountingStorageTRES`: Slurm's default TRES, then the configured ones.
    Tres,
    /// `N sec` for a number, otherwise the word uppercased (`INFINITE`).
    SecOrWord,
    /// A user name with its uid, which this crate only knows for root.
    User,
    /// `PrivateData`: its words in Slurm's order, or `none`.
    PrivateData,
}

/// `scontrol show config` rows of Slurm 22.05, in order.
const TABLE: &[(&str, Val)] = &[
    (
        "AccountingStorageBackupHost",
        Val::Other("(null)", Fmt::Plain),
    ),
    ("AccountingStorageEnforce", Val::Other("none", Fmt::Plain)),
    ("AccountingStorageHost", Val::Other("localhost", Fmt::Plain)),
    (
        "AccountingStorageExternalHost",
        Val::Other("(null)", Fmt::Plain),
    ),
    (
        "AccountingStorageParameters",
        Val::Other("(null)", Fmt::Plain),
    ),
    ("AccountingStoragePort", Val::Other("0", Fmt::Plain)),
    (
        "AccountingStorageTRES",
        Val::Other("cpu,mem,energy,node,billing,fs/disk,vmem,pages", Fmt::Tres),
    ),
    (
        "AccountingStorageType",
        Val::Other("accounting_storage/none", Fmt::Plain),
    ),
    ("AccountingStorageUser", Val::Other("N/A", Fmt::Plain)),
    ("AccountingStoreFlags", Val::Other("(null)", Fmt::Plain)),
    (
        "AcctGatherEnergyType",
        Val::Other("acct_gather_energy/none", Fmt::Plain),
    ),
    (
        "AcctGatherFilesystemType",
        Val::Other("acct_gather_filesystem/none", Fmt::Plain),
    ),
    (
        "AcctGatherInterconnectType",
        Val::Other("acct_gather_interconnect/none", Fmt::Plain),
    ),
    ("AcctGatherNodeFreq", Val::Other("0 sec", Fmt::Sec)),
    (
        "AcctGatherProfileType",
        Val::Other("acct_gather_profile/none", Fmt::Plain),
    ),
    ("AllowSpecResourcesUsage", Val::Other("No", Fmt::YesNo)),
    ("AuthAltTypes", Val::Other("(null)", Fmt::Plain)),
    ("AuthAltParameters", Val::Other("(null)", Fmt::Plain)),
    ("AuthInfo", Val::Other("(null)", Fmt::Plain)),
    ("AuthType", Val::Field(F::AuthType)),
    ("BatchStartTimeout", Val::Other("10 sec", Fmt::Sec)),
    (
        "BcastExclude",
        Val::Other("/lib,/usr/lib,/lib64,/usr/lib64", Fmt::Plain),
    ),
    ("BcastParameters", Val::Other("(null)", Fmt::Plain)),
    ("BOOT_TIME", Val::Field(F::BootTime)),
    ("BurstBufferType", Val::Other("(null)", Fmt::Plain)),
    ("CliFilterPlugins", Val::Other("(null)", Fmt::Plain)),
    ("ClusterName", Val::Field(F::ClusterName)),
    ("CommunicationParameters", Val::Other("(null)", Fmt::Plain)),
    ("CompleteWait", Val::Other("0 sec", Fmt::Sec)),
    ("CoreSpecPlugin", Val::Other("core_spec/none", Fmt::Plain)),
    ("CpuFreqDef", Val::Other("Unknown", Fmt::Plain)),
    (
        "CpuFreqGovernors",
        Val::Other("OnDemand,Performance,UserSpace", Fmt::Plain),
    ),
    ("CredType", Val::Other("cred/munge", Fmt::Plain)),
    ("DebugFlags", Val::Other("(null)", Fmt::Plain)),
    ("DefMemPerCPU", Val::Field(F::DefMem)),
    ("DependencyParameters", Val::Other("(null)", Fmt::Plain)),
    ("DisableRootJobs", Val::Other("No", Fmt::YesNo)),
    ("EioTimeout", Val::Other("60", Fmt::Plain)),
    ("EnforcePartLimits", Val::Other("NO", Fmt::Upper)),
    ("Epilog", Val::Other("(null)", Fmt::Plain)),
    ("EpilogMsgTime", Val::Other("2000 usec", Fmt::Usec)),
    ("EpilogSlurmctld", Val::Other("(null)", Fmt::Plain)),
    ("ExtSensorsType", Val::Other("ext_sensors/none", Fmt::Plain)),
    ("ExtSensorsFreq", Val::Other("0 sec", Fmt::Sec)),
    ("FairShareDampeningFactor", Val::Other("1", Fmt::Plain)),
    ("FederationParameters", Val::Other("(null)", Fmt::Plain)),
    ("FirstJobId", Val::Field(F::FirstJobId)),
    ("GetEnvTimeout", Val::Other("2 sec", Fmt::Sec)),
    ("GresTypes", Val::Field(F::GresTypes)),
    ("GpuFreqDef", Val::Other("high,memory=high", Fmt::Plain)),
    ("GroupUpdateForce", Val::Other("1", Fmt::Plain)),
    ("GroupUpdateTime", Val::Other("600 sec", Fmt::Sec)),
    ("HASH_VAL", Val::Fixed("Match")),
    ("HealthCheckInterval", Val::Other("0 sec", Fmt::Sec)),
    ("HealthCheckNodeState", Val::Other("ANY", Fmt::Upper)),
    ("HealthCheckProgram", Val::Other("(null)", Fmt::Plain)),
    ("InactiveLimit", Val::Other("0 sec", Fmt::Sec)),
    (
        "InteractiveStepOptions",
        Val::Other("--interactive --preserve-env --pty $SHELL", Fmt::Plain),
    ),
    ("JobAcctGatherFrequency", Val::Other("30", Fmt::Plain)),
    // muster gathers from /proc unless told otherwise (Slurm: none).
    (
        "JobAcctGatherType",
        Val::Other("jobacct_gather/linux", Fmt::Plain),
    ),
    ("JobAcctGatherParams", Val::Other("(null)", Fmt::Plain)),
    ("JobCompHost", Val::Other("localhost", Fmt::Plain)),
    (
        "JobCompLoc",
        Val::Other("/var/log/slurm_jobcomp.log", Fmt::Plain),
    ),
    ("JobCompPort", Val::Other("0", Fmt::Plain)),
    ("JobCompType", Val::Other("jobcomp/none", Fmt::Plain)),
    ("JobCompUser", Val::Other("root", Fmt::Plain)),
    (
        "JobContainerType",
        Val::Other("job_container/none", Fmt::Plain),
    ),
    ("JobCredentialPrivateKey", Val::Other("(null)", Fmt::Plain)),
    (
        "JobCredentialPublicCertificate",
        Val::Other("(null)", Fmt::Plain),
    ),
    ("JobDefaults", Val::Other("(null)", Fmt::Plain)),
    ("JobFileAppend", Val::Other("0", Fmt::Plain)),
    ("JobRequeue", Val::Other("1", Fmt::Plain)),
    ("JobSubmitPlugins", Val::Other("(null)", Fmt::Plain)),
    ("KillOnBadExit", Val::Other("0", Fmt::Plain)),
    ("KillWait", Val::Field(F::KillWait)),
    ("LaunchParameters", Val::Other("(null)", Fmt::Plain)),
    ("LaunchType", Val::Other("launch/slurm", Fmt::Plain)),
    ("Licenses", Val::Other("(null)", Fmt::Plain)),
    ("LogTimeFormat", Val::Other("iso8601_ms", Fmt::Plain)),
    ("MailDomain", Val::Other("(null)", Fmt::Plain)),
    ("MailProg", Val::Other("/bin/mail", Fmt::Plain)),
    ("MaxArraySize", Val::Other("1001", Fmt::Plain)),
    ("MaxDBDMsgs", Val::Other("200016", Fmt::Plain)),
    ("MaxJobCount", Val::Field(F::MaxJobCount)),
    ("MaxJobId", Val::Other("67043328", Fmt::Plain)),
    ("MaxMemPerNode", Val::Field(F::MaxMem)),
    ("MaxNodeCount", Val::Field(F::MaxNodeCount)),
    ("MaxStepCount", Val::Other("40000", Fmt::Plain)),
    ("MaxTasksPerNode", Val::Other("512", Fmt::Plain)),
    ("MCSPlugin", Val::Other("mcs/none", Fmt::Plain)),
    ("MCSParameters", Val::Other("(null)", Fmt::Plain)),
    ("MessageTimeout", Val::Other("10 sec", Fmt::Sec)),
    ("MinJobAge", Val::Field(F::MinJobAge)),
    ("MpiDefault", Val::Other("none", Fmt::Plain)),
    ("MpiParams", Val::Other("(null)", Fmt::Plain)),
    ("MULTIPLE_SLURMD", Val::Fixed("Yes")),
    ("NEXT_JOB_ID", Val::Field(F::NextJobId)),
    ("NodeFeaturesPlugins", Val::Other("(null)", Fmt::Plain)),
    ("OverTimeLimit", Val::Other("0 min", Fmt::Min)),
    (
        "PluginDir",
        Val::Other("/usr/lib/x86_64-linux-gnu/slurm-wlm", Fmt::Plain),
    ),
    ("PlugStackConfig", Val::Other("(null)", Fmt::Plain)),
    ("PowerParameters", Val::Other("(null)", Fmt::Plain)),
    ("PowerPlugin", Val::Other("", Fmt::Raw)),
    ("PreemptMode", Val::Other("OFF", Fmt::Upper)),
    ("PreemptType", Val::Other("preempt/none", Fmt::Plain)),
    ("PreemptExemptTime", Val::Other("00:00:00", Fmt::Duration)),
    ("PrEpParameters", Val::Other("(null)", Fmt::Plain)),
    ("PrEpPlugins", Val::Other("prep/script", Fmt::Plain)),
    ("PriorityParameters", Val::Other("(null)", Fmt::Plain)),
    (
        "PrioritySiteFactorParameters",
        Val::Other("(null)", Fmt::Plain),
    ),
    ("PrioritySiteFactorPlugin", Val::Other("(null)", Fmt::Plain)),
    (
        "PriorityDecayHalfLife",
        Val::Other("7-00:00:00", Fmt::Duration),
    ),
    ("PriorityCalcPeriod", Val::Other("00:05:00", Fmt::Duration)),
    ("PriorityFavorSmall", Val::Other("No", Fmt::YesNo)),
    ("PriorityFlags", Val::Other("", Fmt::Raw)),
    ("PriorityMaxAge", Val::Other("7-00:00:00", Fmt::Duration)),
    ("PriorityUsageResetPeriod", Val::Other("NONE", Fmt::Upper)),
    ("PriorityType", Val::Other("priority/basic", Fmt::Plain)),
    ("PriorityWeightAge", Val::Other("0", Fmt::Plain)),
    ("PriorityWeightAssoc", Val::Other("0", Fmt::Plain)),
    ("PriorityWeightFairShare", Val::Other("0", Fmt::Plain)),
    ("PriorityWeightJobSize", Val::Other("0", Fmt::Plain)),
    ("PriorityWeightPartition", Val::Other("0", Fmt::Plain)),
    ("PriorityWeightQOS", Val::Other("0", Fmt::Plain)),
    ("PriorityWeightTRES", Val::Other("(null)", Fmt::Plain)),
    ("PrivateData", Val::Other("none", Fmt::PrivateData)),
    ("ProctrackType", Val::Other("proctrack/cgroup", Fmt::Plain)),
    ("Prolog", Val::Other("(null)", Fmt::Plain)),
    ("PrologEpilogTimeout", Val::Other("65534", Fmt::Plain)),
    ("PrologSlurmctld", Val::Other("(null)", Fmt::Plain)),
    ("PrologFlags", Val::Other("(null)", Fmt::Plain)),
    ("PropagatePrioProcess", Val::Other("0", Fmt::Plain)),
    ("PropagateResourceLimits", Val::Other("ALL", Fmt::Plain)),
    (
        "PropagateResourceLimitsExcept",
        Val::Other("(null)", Fmt::Plain),
    ),
    ("RebootProgram", Val::Other("(null)", Fmt::Plain)),
    ("ReconfigFlags", Val::Other("(null)", Fmt::Plain)),
    ("RequeueExit", Val::Other("(null)", Fmt::Plain)),
    ("RequeueExitHold", Val::Other("(null)", Fmt::Plain)),
    ("ResumeFailProgram", Val::Other("(null)", Fmt::Plain)),
    ("ResumeProgram", Val::Other("(null)", Fmt::Plain)),
    ("ResumeRate", Val::Other("300 nodes/min", Fmt::PerMin)),
    ("ResumeTimeout", Val::Other("60 sec", Fmt::Sec)),
    ("ResvEpilog", Val::Other("(null)", Fmt::Plain)),
    ("ResvOverRun", Val::Other("0 min", Fmt::Min)),
    ("ResvProlog", Val::Other("(null)", Fmt::Plain)),
    ("ReturnToService", Val::Field(F::ReturnToService)),
    ("RoutePlugin", Val::Other("route/default", Fmt::Plain)),
    ("SchedulerParameters", Val::Other("(null)", Fmt::Plain)),
    ("SchedulerTimeSlice", Val::Other("30 sec", Fmt::Sec)),
    ("SchedulerType", Val::Other("sched/backfill", Fmt::Plain)),
    ("ScronParameters", Val::Other("(null)", Fmt::Plain)),
    ("SelectType", Val::Other("select/cons_tres", Fmt::Plain)),
    ("SelectTypeParameters", Val::Other("(null)", Fmt::Upper)),
    ("SlurmUser", Val::Field(F::SlurmUser)),
    ("SlurmctldAddr", Val::Other("(null)", Fmt::Plain)),
    ("SlurmctldDebug", Val::Other("info", Fmt::Plain)),
    ("SlurmctldHost[0]", Val::Field(F::SlurmctldHost)),
    ("SlurmctldLogFile", Val::Other("(null)", Fmt::Plain)),
    ("SlurmctldPort", Val::Field(F::SlurmctldPort)),
    ("SlurmctldSyslogDebug", Val::Other("(null)", Fmt::Plain)),
    ("SlurmctldPrimaryOffProg", Val::Other("(null)", Fmt::Plain)),
    ("SlurmctldPrimaryOnProg", Val::Other("(null)", Fmt::Plain)),
    ("SlurmctldTimeout", Val::Other("120 sec", Fmt::Sec)),
    ("SlurmctldParameters", Val::Other("(null)", Fmt::Plain)),
    ("SlurmdDebug", Val::Other("info", Fmt::Plain)),
    ("SlurmdLogFile", Val::Other("(null)", Fmt::Plain)),
    ("SlurmdParameters", Val::Other("(null)", Fmt::Plain)),
    (
        "SlurmdPidFile",
        Val::Other("/var/run/slurmd.pid", Fmt::Plain),
    ),
    ("SlurmdPort", Val::Field(F::SlurmdPort)),
    ("SlurmdSpoolDir", Val::Field(F::SlurmdSpoolDir)),
    ("SlurmdSyslogDebug", Val::Other("(null)", Fmt::Plain)),
    ("SlurmdTimeout", Val::Field(F::SlurmdTimeout)),
    ("SlurmdUser", Val::Other("root(0)", Fmt::User)),
    ("SlurmSchedLogFile", Val::Other("(null)", Fmt::Plain)),
    ("SlurmSchedLogLevel", Val::Other("0", Fmt::Plain)),
    (
        "SlurmctldPidFile",
        Val::Other("/var/run/slurmctld.pid", Fmt::Plain),
    ),
    ("SlurmctldPlugstack", Val::Other("(null)", Fmt::Plain)),
    ("SLURM_CONF", Val::Field(F::SlurmConf)),
    ("SLURM_VERSION", Val::Field(F::SlurmVersion)),
    ("SrunEpilog", Val::Other("(null)", Fmt::Plain)),
    ("SrunPortRange", Val::Other("0-0", Fmt::Plain)),
    ("SrunProlog", Val::Other("(null)", Fmt::Plain)),
    ("StateSaveLocation", Val::Field(F::StateSaveLocation)),
    ("SuspendExcNodes", Val::Other("(null)", Fmt::Plain)),
    ("SuspendExcParts", Val::Other("(null)", Fmt::Plain)),
    ("SuspendProgram", Val::Other("(null)", Fmt::Plain)),
    ("SuspendRate", Val::Other("60 nodes/min", Fmt::PerMin)),
    ("SuspendTime", Val::Other("INFINITE", Fmt::SecOrWord)),
    ("SuspendTimeout", Val::Other("30 sec", Fmt::Sec)),
    ("SwitchParameters", Val::Other("(null)", Fmt::Plain)),
    ("SwitchType", Val::Other("switch/none", Fmt::Plain)),
    ("TaskEpilog", Val::Other("(null)", Fmt::Plain)),
    ("TaskPlugin", Val::Other("task/none", Fmt::Plain)),
    ("TaskPluginParam", Val::Other("(null type)", Fmt::Plain)),
    ("TaskProlog", Val::Other("(null)", Fmt::Plain)),
    ("TCPTimeout", Val::Other("2 sec", Fmt::Sec)),
    ("TmpFS", Val::Other("/tmp", Fmt::Plain)),
    ("TopologyParam", Val::Other("(null)", Fmt::Plain)),
    ("TopologyPlugin", Val::Other("topology/none", Fmt::Plain)),
    ("TrackWCKey", Val::Other("No", Fmt::YesNo)),
    ("TreeWidth", Val::Other("50", Fmt::Plain)),
    ("UsePam", Val::Other("No", Fmt::YesNo)),
    ("UnkillableStepProgram", Val::Other("(null)", Fmt::Plain)),
    ("UnkillableStepTimeout", Val::Other("60 sec", Fmt::Sec)),
    ("VSizeFactor", Val::Other("0 percent", Fmt::Percent)),
    ("WaitTime", Val::Other("0 sec", Fmt::Sec)),
    ("X11Parameters", Val::Other("(null)", Fmt::Plain)),
];

/// Slurm's default `AccountingStorageTRES`, which configured TRES extend.
const DEFAULT_TRES: &str = "cpu,mem,energy,node,billing,fs/disk,vmem,pages";

pub(crate) fn entries(config: &Config) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(TABLE.len() + 2);
    for (key, val) in TABLE {
        match val {
            Val::Field(field) => push_field(config, key, field, &mut out),
            Val::Fixed(value) => out.push((key.to_string(), (*value).to_string())),
            Val::Other(default, fmt) => {
                let value = match config.other.get(&key.to_ascii_lowercase()) {
                    Some((_, written)) => format_value(written, fmt),
                    None => (*default).to_string(),
                };
                out.push((key.to_string(), value));
            }
        }
    }
    out
}

fn push_field(config: &Config, key: &str, field: &F, out: &mut Vec<(String, String)>) {
    let mut push = |k: &str, v: String| out.push((k.to_string(), v));
    match field {
        F::AuthType => push(key, config.auth_type.clone()),
        F::BootTime => push(key, "(null)".to_string()),
        F::ClusterName => push(key, config.cluster_name.clone()),
        // Slurm prints whichever of the pair is set, DefMemPerNode=UNLIMITED
        // when neither is.
        F::DefMem => match (config.def_mem_per_cpu, config.def_mem_per_node) {
            (Some(mb), _) => push("DefMemPerCPU", mb.to_string()),
            (None, Some(mb)) => push("DefMemPerNode", mb.to_string()),
            (None, None) => push("DefMemPerNode", "UNLIMITED".to_string()),
        },
        F::FirstJobId => push(key, config.first_job_id.to_string()),
        F::GresTypes => push(key, or_null(&config.gres_types.join(","))),
        F::KillWait => push(key, format!("{} sec", config.kill_wait)),
        F::MaxJobCount => push(key, config.max_job_count.to_string()),
        F::MaxMem => match (config.other.get("maxmempercpu"), config.max_mem_per_node) {
            (Some((_, per_cpu)), _) => push("MaxMemPerCPU", per_cpu.clone()),
            (None, Some(mb)) => push("MaxMemPerNode", mb.to_string()),
            (None, None) => push("MaxMemPerNode", "UNLIMITED".to_string()),
        },
        F::MaxNodeCount => match config.other.get("maxnodecount") {
            Some((_, written)) => push(key, written.clone()),
            None => push(key, config.nodes.len().to_string()),
        },
        F::MinJobAge => push(key, format!("{} sec", config.min_job_age)),
        F::NextJobId => push(key, config.first_job_id.to_string()),
        F::ReturnToService => push(key, config.return_to_service.to_string()),
        F::SlurmUser => push(key, format_value(&config.slurm_user, &Fmt::User)),
        F::SlurmctldHost => {
            for (i, host) in config.slurmctld_host.iter().enumerate() {
                push(&format!("SlurmctldHost[{i}]"), host.to_string());
            }
        }
        F::SlurmctldPort => push(key, config.slurmctld_port.to_string()),
        F::SlurmdPort => push(key, config.slurmd_port.to_string()),
        F::SlurmdSpoolDir => push(key, config.slurmd_spool_dir.clone()),
        F::SlurmdTimeout => push(key, format!("{} sec", config.slurmd_timeout)),
        F::SlurmConf => push(key, config.path.display().to_string()),
        F::SlurmVersion => push(key, SLURM_COMPAT_VERSION.to_string()),
        F::StateSaveLocation => push(key, config.state_save_location.clone()),
    }
}

fn or_null(s: &str) -> String {
    if s.is_empty() {
        "(null)".to_string()
    } else {
        s.to_string()
    }
}

fn with_unit(value: &str, unit: &str) -> String {
    let trimmed = value.trim();
    if trimmed.parse::<i64>().is_ok() {
        format!("{trimmed} {unit}")
    } else {
        or_null(trimmed)
    }
}

fn format_value(value: &str, fmt: &Fmt) -> String {
    match fmt {
        Fmt::Plain => or_null(value),
        Fmt::Raw => value.to_string(),
        Fmt::Sec => with_unit(value, "sec"),
        Fmt::Min => with_unit(value, "min"),
        Fmt::Usec => with_unit(value, "usec"),
        Fmt::PerMin => with_unit(value, "nodes/min"),
        Fmt::Percent => with_unit(value, "percent"),
        Fmt::YesNo => match value.to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" | "1" => "Yes".to_string(),
            _ => "No".to_string(),
        },
        Fmt::Upper => or_null(&value.to_ascii_uppercase()),
        Fmt::Duration => match parse_time_limit(value.trim()) {
            Ok(limit @ TimeLimit::Minutes(_)) => format_time_limit_hms(limit),
            _ => or_null(value),
        },
        Fmt::Tres => {
            let mut tres: Vec<&str> = DEFAULT_TRES.split(',').collect();
            for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if !tres.iter().any(|t| t.eq_ignore_ascii_case(item)) {
                    tres.push(item);
                }
            }
            tres.join(",")
        }
        Fmt::SecOrWord => {
            let trimmed = value.trim();
            if trimmed.parse::<i64>().is_ok() {
                format!("{trimmed} sec")
            } else {
                or_null(&trimmed.to_ascii_uppercase())
            }
        }
        // Resolving other users' uids needs the user database, which this
        // pure crate does not read; the controller may override the row.
        Fmt::User if value == "root" || value == "0" => "root(0)".to_string(),
        Fmt::User => or_null(value),
        Fmt::PrivateData => crate::PrivateData::parse(value).as_slurm_string(),
    }
}

/// Replaces the value of `key` in `entries` (e.g. `BOOT_TIME`,
/// `NEXT_JOB_ID`, which only the running controller knows); returns whether
/// the key was there.
pub fn override_entry(
    entries: &mut [(String, String)],
    key: &str,
    value: impl Into<String>,
) -> bool {
    match entries.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => {
            entry.1 = value.into();
            true
        }
        None => false,
    }
}

/// Renders entries as `scontrol show config` prints them, one per line:
/// the key padded to 23 columns, then ` = ` and the value (a longer key is
/// followed directly by ` = `). The "Configuration data as of" header is
/// the caller's.
pub fn render_show_config(entries: &[(String, String)]) -> String {
    let mut out = String::new();
    for (key, value) in entries {
        out.push_str(&format!("{key:<23} = {value}\n"));
    }
    out
}

/// Keys of the table that are looked up in `Config::other`, for tests.
#[cfg(test)]
pub(crate) fn other_keys() -> Vec<&'static str> {
    TABLE
        .iter()
        .filter_map(|(k, v)| matches!(v, Val::Other(..)).then_some(*k))
        .collect()
}
