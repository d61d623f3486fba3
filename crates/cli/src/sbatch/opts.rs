//! sbatch's options: the getopt table (every option Slurm 22.05's sbatch
//! accepts, so nothing a user commonly types fails as unrecognized) and how
//! each value lands in the [`JobDesc`].
//!
//! Options arrive from three sources, applied lowest first so later ones win
//! (`sbatch(1)`): `#SBATCH` directives, then `SBATCH_*` input environment
//! variables, then the command line. Values are checked as they are applied,
//! so an invalid value fails even when a later source overrides it, as in
//! Slurm.

use super::signal::parse_signal;
use super::SbatchError;
use crate::getopt::{opt, Arg, OptSpec};
use crate::timespec::parse_begin;
use model::{Gres, TimeLimit, Timestamp};
use proto::JobDesc;

/// Every sbatch option, long name first.
pub const SPECS: &[OptSpec] = &[
    opt("account", Some('A'), Arg::Required),
    opt("acctg-freq", None, Arg::Required),
    opt("array", Some('a'), Arg::Required),
    opt("batch", None, Arg::Required),
    opt("bb", None, Arg::Required),
    opt("bbf", None, Arg::Required),
    opt("begin", Some('b'), Arg::Required),
    opt("chdir", Some('D'), Arg::Required),
    opt("cluster", None, Arg::Required),
    opt("cluster-constraint", None, Arg::Required),
    opt("clusters", Some('M'), Arg::Required),
    opt("comment", None, Arg::Required),
    opt("constraint", Some('C'), Arg::Required),
    opt("container", None, Arg::Required),
    opt("container-image", None, Arg::Required),
    opt("container-mounts", None, Arg::Required),
    opt("container-workdir", None, Arg::Required),
    opt("container-name", None, Arg::Required),
    opt("container-save", None, Arg::Required),
    opt("container-mount-home", None, Arg::None),
    opt("no-container-mount-home", None, Arg::None),
    opt("container-remap-root", None, Arg::None),
    opt("no-container-remap-root", None, Arg::None),
    opt("container-writable", None, Arg::None),
    opt("container-readonly", None, Arg::None),
    opt("container-env", None, Arg::Required),
    opt("container-entrypoint", None, Arg::None),
    opt("no-container-entrypoint", None, Arg::None),
    opt("container-entrypoint-log", None, Arg::None),
    opt("contiguous", None, Arg::None),
    opt("core-spec", Some('S'), Arg::Required),
    opt("cores-per-socket", None, Arg::Required),
    opt("cpu-freq", None, Arg::Required),
    opt("cpus-per-gpu", None, Arg::Required),
    opt("cpus-per-task", Some('c'), Arg::Required),
    opt("deadline", None, Arg::Required),
    opt("delay-boot", None, Arg::Required),
    opt("dependency", Some('d'), Arg::Required),
    opt("distribution", Some('m'), Arg::Required),
    opt("error", Some('e'), Arg::Required),
    opt("exclude", Some('x'), Arg::Required),
    opt("exclusive", None, Arg::Optional),
    opt("export", None, Arg::Required),
    opt("export-file", None, Arg::Required),
    opt("extra-node-info", Some('B'), Arg::Required),
    opt("get-user-env", None, Arg::Optional),
    opt("gid", None, Arg::Required),
    opt("gpu-bind", None, Arg::Required),
    opt("gpu-freq", None, Arg::Required),
    opt("gpus", Some('G'), Arg::Required),
    opt("gpus-per-node", None, Arg::Required),
    opt("gpus-per-socket", None, Arg::Required),
    opt("gpus-per-task", None, Arg::Required),
    opt("gres", None, Arg::Required),
    opt("gres-flags", None, Arg::Required),
    opt("help", Some('h'), Arg::None),
    opt("hint", None, Arg::Required),
    opt("hold", Some('H'), Arg::None),
    opt("ignore-pbs", None, Arg::None),
    opt("input", Some('i'), Arg::Required),
    opt("job-name", Some('J'), Arg::Required),
    opt("kill-on-invalid-dep", None, Arg::Required),
    opt("licenses", Some('L'), Arg::Required),
    opt("mail-type", None, Arg::Required),
    opt("mail-user", None, Arg::Required),
    opt("mcs-label", None, Arg::Required),
    opt("mem", None, Arg::Required),
    opt("mem-bind", None, Arg::Required),
    opt("mem-per-cpu", None, Arg::Required),
    opt("mem-per-gpu", None, Arg::Required),
    opt("mincpus", None, Arg::Required),
    opt("network", None, Arg::Required),
    opt("nice", None, Arg::Optional),
    opt("no-kill", Some('k'), Arg::Optional),
    opt("no-requeue", None, Arg::None),
    opt("nodefile", Some('F'), Arg::Required),
    opt("nodelist", Some('w'), Arg::Required),
    opt("nodes", Some('N'), Arg::Required),
    opt("ntasks", Some('n'), Arg::Required),
    opt("ntasks-per-core", None, Arg::Required),
    opt("ntasks-per-gpu", None, Arg::Required),
    opt("ntasks-per-node", None, Arg::Required),
    opt("ntasks-per-socket", None, Arg::Required),
    opt("open-mode", None, Arg::Required),
    opt("output", Some('o'), Arg::Required),
    opt("overcommit", Some('O'), Arg::None),
    opt("oversubscribe", Some('s'), Arg::None),
    opt("parsable", None, Arg::None),
    opt("partition", Some('p'), Arg::Required),
    opt("power", None, Arg::Required),
    opt("prefer", None, Arg::Required),
    opt("priority", None, Arg::Required),
    opt("profile", None, Arg::Required),
    opt("propagate", None, Arg::Optional),
    opt("qos", Some('q'), Arg::Required),
    opt("quiet", Some('Q'), Arg::None),
    opt("reboot", None, Arg::None),
    opt("requeue", None, Arg::None),
    opt("reservation", None, Arg::Required),
    opt("signal", None, Arg::Required),
    opt("sockets-per-node", None, Arg::Required),
    opt("segment", None, Arg::Required),
    opt("spread-job", None, Arg::None),
    opt("switches", None, Arg::Required),
    opt("test-only", None, Arg::None),
    opt("thread-spec", None, Arg::Required),
    opt("threads-per-core", None, Arg::Required),
    opt("time", Some('t'), Arg::Required),
    opt("time-min", None, Arg::Required),
    opt("tmp", None, Arg::Required),
    opt("tres-per-task", None, Arg::Required),
    opt("uid", None, Arg::Required),
    opt("usage", None, Arg::None),
    opt("use-min-nodes", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
    opt("wait", Some('W'), Arg::None),
    opt("wait-all-nodes", None, Arg::Required),
    opt("wckey", None, Arg::Required),
    opt("wrap", None, Arg::Required),
];

/// `sbatch(1)` INPUT ENVIRONMENT VARIABLES: each variable and the option it
/// stands for. Variables for options muster ignores are listed too, so that
/// they are at least checked the same way.
pub const INPUT_ENV: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "account"),
    ("SBATCH_ACCTG_FREQ", "acctg-freq"),
    ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_BATCH", "batch"),
    ("SBATCH_CLUSTERS", "clusters"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CONTAINER", "container"),
    ("SBATCH_CORE_SPEC", "core-spec"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SBATCH_DEBUG", "verbose"),
    ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"),
    ("SBATCH_ERROR", "error"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"),
    ("SBATCH_GET_USER_ENV", "get-user-env"),
    ("SBATCH_GPU_BIND", "gpu-bind"),
    ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"),
    ("SBATCH_GRES", "gres"),
    ("SBATCH_GRES_FLAGS", "gres-flags"),
    ("SBATCH_HINT", "hint"),
    ("SLURM_HINT", "hint"),
    ("SBATCH_IGNORE_PBS", "ignore-pbs"),
    ("SBATCH_INPUT", "input"),
    ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_BIND", "mem-bind"),
    ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"),
    ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NETWORK", "network"),
    ("SBATCH_NO_KILL", "no-kill"),
    ("SBATCH_NO_REQUEUE", "no-requeue"),
    ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OUTPUT", "output"),
    ("SBATCH_OVERCOMMIT", "overcommit"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_POWER", "power"),
    ("SBATCH_PROFILE", "profile"),
    ("SBATCH_QOS", "qos"),
    ("SBATCH_REQ_SWITCH", "switches"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"),
    ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_SPREAD_JOB", "spread-job"),
    ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"),
    ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_TRES_PER_TASK", "tres-per-task"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"),
    ("SBATCH_WAIT", "wait"),
    ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SBATCH_WCKEY", "wckey"),
];

/// Where an option came from, lowest precedence first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// An `#SBATCH` directive.
    Script,
    /// An `SBATCH_*` variable.
    Env,
    /// The command line.
    Cli,
}

/// Everything the options set: the job description plus what only sbatch
/// itself uses.
#[derive(Debug, Default)]
pub struct State {
    /// The job being built.
    pub desc: JobDesc,
    /// `--mem`, `--mem-per-cpu`, `--mem-per-gpu`: the value and its level.
    pub mem: [Option<(u64, Level)>; 3],
    /// `--export`, as given.
    pub export: Option<String>,
    /// `--export-file`, as given.
    pub export_file: Option<String>,
    /// `-D`, as given.
    pub chdir: Option<String>,
    /// `--parsable`.
    pub parsable: bool,
    /// `-W`.
    pub wait: bool,
    /// `--test-only`.
    pub test_only: bool,
    /// `-M`, as given.
    pub clusters: Option<String>,
    /// `--get-user-env`.
    pub get_user_env: bool,
    /// `--array`, as given.
    pub array: Option<String>,
    /// `--uid`, resolved.
    pub uid: Option<u32>,
    /// `--gid`, resolved.
    pub gid: Option<u32>,
    /// Whether `-J` was given.
    pub name_set: bool,
}

/// What option values need from the outside: the clock and directories.
pub struct Ctx<'a> {
    /// The time `--begin` is relative to.
    pub now: Timestamp,
    /// sbatch's working directory, for relative `-D` and `-w` files.
    pub cwd: &'a str,
}

/// The options that take effect only on the command line, before anything
/// else is read (`--wrap`, `--help`, ...) or that sbatch keeps from the first
/// pass only (`-Q`).
pub const FIRST_PASS_ONLY: &[&str] = &["wrap", "help", "usage", "version", "quiet"];

const MEM_IDX: [&str; 3] = ["mem", "mem-per-cpu", "mem-per-gpu"];

/// Applies one option.
pub fn apply(
    st: &mut State,
    name: &'static str,
    value: Option<String>,
    level: Level,
    ctx: &Ctx<'_>,
) -> Result<(), SbatchError> {
    let v = value.clone().unwrap_or_default();
    let d = &mut st.desc;
    match name {
        "account" => d.account = Some(v),
        "array" => st.array = Some(v),
        "begin" => {
            d.begin_time = Some(
                parse_begin(&v, ctx.now, &chrono::Local)
                    .ok_or_else(|| SbatchError::invalid("Invalid --begin specification"))?,
            );
        }
        "chdir" => st.chdir = Some(v),
        "cluster" | "clusters" => st.clusters = Some(v),
        "comment" => d.comment = Some(v),
        "acctg-freq" => d.acctg_freq = Some(v),
        "constraint" => d.constraint = Some(v),
        "cpus-per-gpu" => d.cpus_per_gpu = Some(positive(&v, "--cpus-per-gpu")?),
        "cpus-per-task" => d.cpus_per_task = Some(positive(&v, "--cpus-per-task")?),
        "dependency" => {
            if model::depend::Dependency::parse(&v) == Err(model::depend::DepError::BurstBuffer) {
                return Err(SbatchError::error(&[
                    "afterburstbuffer dependencies need a burst buffer plugin, which muster does not have",
                    "Batch job submission failed: Job dependency problem",
                ]));
            }
            d.dependency = Some(v);
        }
        "deadline" => {
            d.deadline = Some(
                parse_begin(&v, ctx.now, &chrono::Local)
                    .ok_or_else(|| SbatchError::invalid("Invalid --deadline specification"))?,
            );
        }
        "kill-on-invalid-dep" => {
            d.kill_on_invalid_dep = match v.to_ascii_lowercase().as_str() {
                "yes" => Some(true),
                "no" => Some(false),
                _ => {
                    return Err(SbatchError::invalid(
                        "Invalid --kill-on-invalid-dep specification",
                    ))
                }
            };
        }
        "error" => d.stderr = Some(io_path(v)),
        "exclude" => d.exclude = hosts(&v, ctx.cwd, "--exclude")?,
        "exclusive" => {
            match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                None | Some("exclusive") => d.exclusive = true,
                Some("oversubscribe") => d.exclusive = false,
                // Node sharing per user, MCS label or topology block is not
                // modelled: refused rather than run shared (`compat`).
                Some(kind @ ("user" | "mcs" | "topo")) => {
                    return Err(SbatchError::error(&[&format!(
                        "--exclusive={kind} is not supported here: nodes are shared only as --exclusive and --oversubscribe say"
                    )]))
                }
                Some(_) => return Err(SbatchError::invalid("Invalid --exclusive specification")),
            }
        }
        "oversubscribe" => d.exclusive = false,
        "export" => st.export = Some(v),
        "export-file" => st.export_file = Some(v),
        "get-user-env" => st.get_user_env = true,
        "gid" => st.gid = Some(resolve_gid(&v)?),
        "gpus" => d.gpus = Some(gpu_spec(&v)?),
        "gpus-per-node" => d.gpus_per_node = Some(gpu_spec(&v)?),
        "gpus-per-task" => d.gpus_per_task = Some(gpu_spec(&v)?),
        "gres" => {
            d.gres = Gres::parse_list(&v).map_err(|_| SbatchError::gres())?;
        }
        // sbatch(1) --gres-flags: `enforce-binding` and `disable-binding`
        // act (placement); the task-sharing flags are checked and kept.
        "gres-flags" => {
            let flags: Vec<String> = v
                .split(',')
                .map(|f| f.trim().to_ascii_lowercase())
                .filter(|f| !f.is_empty())
                .collect();
            let known = [
                "enforce-binding",
                "disable-binding",
                "allow-task-sharing",
                "one-task-per-sharing",
                "multiple-tasks-per-sharing",
            ];
            if flags.is_empty() || flags.iter().any(|f| !known.contains(&f.as_str())) {
                return Err(SbatchError::invalid("Invalid --gres-flags specification"));
            }
            d.gres_flags = Some(flags.join(","));
        }
        "mail-type" => {
            d.mail_type = model::mail::parse(&v).map_err(|e| match e {
                model::mail::MailTypeError::Invalid(_) => SbatchError::invalid(&e.to_string()),
                model::mail::MailTypeError::Unsupported(_) => SbatchError::error(&[&e.to_string()]),
            })?;
        }
        "mail-user" => d.mail_user = Some(v),
        "reservation" => d.reservation = Some(v),
        // pyxis's options (`proto::container`): checked now, run by the
        // nodes.
        n if proto::container::OPTIONS.contains(&n) => {
            proto::container::check(n, &v).map_err(|e| SbatchError::error(&[&e]))?;
            d.container.push((n.to_string(), v));
        }
        "hold" => d.hold = true,
        "input" => d.stdin = Some(io_path(v)),
        "job-name" => {
            d.name = v;
            st.name_set = true;
        }
        "mem" | "mem-per-cpu" | "mem-per-gpu" => {
            let mb = model::units::parse_memory_mb(&v)
                .map_err(|_| SbatchError::invalid(&format!("Invalid --{name} specification")))?;
            let idx = MEM_IDX.iter().position(|n| *n == name).unwrap_or(0);
            st.mem[idx] = Some((mb, level));
        }
        "nice" => {
            d.nice = match value {
                None => 100,
                Some(text) => text
                    .trim()
                    .parse::<i32>()
                    .map_err(|_| SbatchError::invalid(&format!("Invalid --nice value: {text}")))?,
            };
        }
        "no-requeue" => d.requeue = Some(false),
        "requeue" => d.requeue = Some(true),
        "nodefile" => d.nodelist = hosts_file(&v, ctx.cwd, "--nodefile")?,
        "nodelist" => d.nodelist = hosts(&v, ctx.cwd, "--nodelist")?,
        "nodes" => {
            let (min, max) = node_count(&v).ok_or_else(|| {
                SbatchError::invalid(&format!("\"{v}\" is not a valid node count"))
            })?;
            d.min_nodes = Some(min);
            d.max_nodes = max;
        }
        "ntasks" => d.ntasks = Some(positive(&v, "--ntasks")?),
        "ntasks-per-node" => d.ntasks_per_node = Some(positive(&v, "--ntasks-per-node")?),
        "open-mode" => {
            d.open_append = match v.chars().next().map(|c| c.to_ascii_lowercase()) {
                Some('a') => true,
                Some('t') => false,
                _ => return Err(SbatchError::invalid("Invalid --open-mode specification")),
            };
        }
        "output" => d.stdout = Some(io_path(v)),
        "parsable" => st.parsable = true,
        "partition" => {
            d.partitions = v
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect();
        }
        "qos" => d.qos = Some(v),
        "signal" => {
            d.signal = Some(
                parse_signal(&v)
                    .ok_or_else(|| SbatchError::invalid("Invalid --signal specification"))?,
            );
        }
        // `nomultithread` allocates one task per core where nodes give
        // whole cores (`SelectTypeParameters=CR_Core`); sruns bind by
        // their own --hint or SLURM_HINT.
        "hint" => {
            proto::CpuBind::of_hint(&v)
                .map_err(|_| SbatchError::invalid(&format!("Invalid --hint argument: {v}")))?;
            d.hint = Some(v);
        }
        "threads-per-core" => {
            d.threads_per_core = Some(positive(&v, "--threads-per-core")?);
        }
        "ntasks-per-core" => {
            d.ntasks_per_core = Some(positive(&v, "--ntasks-per-core")?);
        }
        "test-only" => st.test_only = true,
        "time" => d.time_limit = Some(time_limit(&v, "--time")?),
        "time-min" => d.time_min = Some(time_limit(&v, "--time-min")?),
        // `--switches=N[@max-time]`; max-time in sbatch's time forms.
        "switches" => {
            let (count, wait) = match v.split_once('@') {
                Some((c, w)) => (c, Some(w)),
                None => (v.as_str(), None),
            };
            d.switches = Some(positive(count, "--switches")?);
            d.switch_wait = match wait.map(model::units::parse_time_limit) {
                None => None,
                Some(Ok(TimeLimit::Minutes(m))) => Some(m.saturating_mul(60)),
                Some(Ok(TimeLimit::Unlimited)) => Some(u32::MAX),
                Some(Err(_)) => {
                    return Err(SbatchError::invalid("Invalid --switches specification"))
                }
            };
        }
        "segment" => d.segment = Some(positive(&v, "--segment")?),
        // Checked by the controller (an unknown license, or more than its
        // total: `Invalid license specification`); only `|`, which muster
        // does not implement, is refused here, with what to do instead.
        "licenses" => {
            if let Err(e @ model::licenses::LicenseSpecError::Or { .. }) =
                model::licenses::parse(&v)
            {
                return Err(SbatchError::invalid(&e.to_string()));
            }
            d.licenses = Some(v);
        }
        "uid" => st.uid = Some(resolve_uid(&v)?),
        "wait" => st.wait = true,
        // The rest are acted on elsewhere (first pass, srun, salloc), are
        // the same as what muster does anyway (`--ignore-pbs`,
        // `--wait-all-nodes`), or were warned about or refused before
        // they got here (`compat::SBATCH`).
        _ => {}
    }
    Ok(())
}

/// `-o none` and friends mean `/dev/null` (`sbatch(1)`).
fn io_path(v: String) -> String {
    if v.eq_ignore_ascii_case("none") {
        "/dev/null".to_string()
    } else {
        v
    }
}

/// A positive count, with Slurm's message for anything else.
fn positive(v: &str, name: &str) -> Result<u32, SbatchError> {
    match v.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(SbatchError::error(&[&format!(
            "Invalid numeric value \"{v}\" for {name}."
        )])),
    }
}

/// `-t`/`--time-min`; a limit of zero means no limit (`sbatch(1) --time`).
fn time_limit(v: &str, name: &str) -> Result<TimeLimit, SbatchError> {
    match model::units::parse_time_limit(v) {
        Ok(TimeLimit::Minutes(0)) => Ok(TimeLimit::Unlimited),
        Ok(t) => Ok(t),
        Err(_) => Err(SbatchError::invalid(&format!(
            "Invalid {name} specification"
        ))),
    }
}

/// `-N min[-max]`.
fn node_count(v: &str) -> Option<(u32, Option<u32>)> {
    let num = |s: &str| -> Option<u32> {
        let n = model::units::parse_count(s.trim())?;
        u32::try_from(n).ok()
    };
    match v.split_once('-') {
        Some((min, max)) => {
            let min = num(min)?;
            let max = num(max)?;
            (min >= 1 && max >= min).then_some((min, Some(max)))
        }
        None => {
            let n = num(v)?;
            (n >= 1).then_some((n, Some(n)))
        }
    }
}

/// `-G`, `--gpus-per-node`, `--gpus-per-task`: `[gpu:][type:]count`.
fn gpu_spec(v: &str) -> Result<Gres, SbatchError> {
    let text = v.trim();
    let text = text.strip_prefix("gpu:").unwrap_or(text);
    let parts: Vec<&str> = text.split(':').collect();
    let (type_, count) = match parts.as_slice() {
        [count] => (None, *count),
        [ty, count] if !ty.is_empty() => (Some(ty.to_string()), *count),
        _ => return Err(SbatchError::gres()),
    };
    let count = model::units::parse_count(count).ok_or_else(SbatchError::gres)?;
    Ok(Gres {
        name: "gpu".to_string(),
        type_,
        count,
    })
}

/// `-w`/`-x`: a hostlist expression, or a file of them when the value
/// contains a `/` (`sbatch(1) --nodelist`).
fn hosts(v: &str, cwd: &str, name: &str) -> Result<Vec<String>, SbatchError> {
    if v.contains('/') {
        return hosts_file(v, cwd, name);
    }
    expand_list(v).ok_or_else(|| SbatchError::invalid(&format!("Invalid {name} specification")))
}

fn hosts_file(path: &str, cwd: &str, name: &str) -> Result<Vec<String>, SbatchError> {
    let full = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    let err = || SbatchError::invalid(&format!("Invalid {name} specification"));
    let text = std::fs::read_to_string(full).map_err(|_| err())?;
    let joined: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .collect();
    let mut out = Vec::new();
    for expr in joined {
        out.extend(expand_list(expr).ok_or_else(err)?);
    }
    Ok(out)
}

fn expand_list(v: &str) -> Option<Vec<String>> {
    let names = hostlist::expand(v.trim()).ok()?;
    (!names.is_empty()).then_some(names)
}

fn resolve_uid(v: &str) -> Result<u32, SbatchError> {
    if let Ok(n) = v.parse() {
        return Ok(n);
    }
    match nix::unistd::User::from_name(v) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        _ => Err(SbatchError::error(&[&format!("--uid=\"{v}\" invalid")])),
    }
}

fn resolve_gid(v: &str) -> Result<u32, SbatchError> {
    if let Ok(n) = v.parse() {
        return Ok(n);
    }
    match nix::unistd::Group::from_name(v) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        _ => Err(SbatchError::error(&[&format!("--gid=\"{v}\" invalid")])),
    }
}

/// Fewer tasks than nodes (`-N3 -n2`): every node needs a task, so the
/// node count comes down to the task count. Returns Slurm's warning text
/// for `PROG: Warning: ` (real sbatch, salloc and srun 22.05 all said it).
pub fn fit_nodes_to_tasks(desc: &mut JobDesc) -> Option<String> {
    let (ntasks, min_nodes) = (desc.ntasks?, desc.min_nodes?);
    if ntasks == 0 || min_nodes <= ntasks {
        return None;
    }
    desc.min_nodes = Some(ntasks);
    desc.max_nodes = Some(ntasks);
    Some(format!(
        "can't run {ntasks} processes on {min_nodes} nodes, setting nnodes to {ntasks}"
    ))
}

/// Resolves `--mem`, `--mem-per-cpu` and `--mem-per-gpu`, which exclude each
/// other: the highest source that sets one decides, and two set by that same
/// source are an error (Slurm's rule).
pub fn resolve_memory(st: &mut State) -> Result<(), SbatchError> {
    let Some(top) = st.mem.iter().flatten().map(|(_, lvl)| *lvl).max() else {
        return Ok(());
    };
    let at_top: Vec<usize> = (0..3)
        .filter(|i| st.mem[*i].is_some_and(|(_, lvl)| lvl == top))
        .collect();
    if at_top.len() > 1 {
        return Err(SbatchError::fatal(
            "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.",
        ));
    }
    let keep = at_top[0];
    let value = st.mem[keep].map(|(mb, _)| mb);
    match keep {
        0 => st.desc.mem_per_node = value,
        1 => st.desc.mem_per_cpu = value,
        _ => st.desc.mem_per_gpu = value,
    }
    Ok(())
}
