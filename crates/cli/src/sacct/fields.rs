//! sacct's fields: names, default widths, justification, and how each value
//! is printed for a job row or a step row.
//!
//! Widths follow what Slurm 22.05 prints (`sacct.out`: JobID 12 left-justified,
//! JobName/Partition/Account/AllocCPUS/State 10 and ExitCode 8 right-justified).
//! A value wider than its column keeps `width - 1` characters and a `+`
//! (`CANCELLED by 0` in 10 columns is `CANCELLED+`).

use crate::common::fmt_time;
use model::{JobState, TimeLimit, Timestamp};
use proto::{AcctJob, AcctStep, StepId};

/// One known field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// Slurm's spelling (`JobID`).
    pub name: &'static str,
    /// Default column width.
    pub width: usize,
    /// Left-justified by default (JobID, JobIDRaw, TRES strings, paths).
    pub left: bool,
}

/// A right-justified field (sacct's and sstat's tables).
pub(crate) const fn f(name: &'static str, width: usize) -> FieldDef {
    FieldDef {
        name,
        width,
        left: false,
    }
}

/// A left-justified field.
pub(crate) const fn l(name: &'static str, width: usize) -> FieldDef {
    FieldDef {
        name,
        width,
        left: true,
    }
}

/// Every field sacct accepts, in `--helpformat` order. Prefixes of these
/// names are accepted too (`tresusageinmaxn`), as sacct's own `-l` list uses.
pub const FIELDS: &[FieldDef] = &[
    f("Account", 10),
    f("AdminComment", 15),
    f("AllocCPUS", 10),
    f("AllocNodes", 10),
    l("AllocTRES", 10),
    f("AssocID", 10),
    f("AveCPU", 10),
    f("AveCPUFreq", 10),
    f("AveDiskRead", 12),
    f("AveDiskWrite", 12),
    f("AvePages", 10),
    f("AveRSS", 10),
    f("AveVMSize", 10),
    f("BlockID", 16),
    f("Cluster", 10),
    f("Comment", 15),
    l("Constraints", 12),
    l("Container", 12),
    f("ConsumedEnergy", 14),
    f("ConsumedEnergyRaw", 17),
    f("CPUTime", 10),
    f("CPUTimeRAW", 10),
    f("DBIndex", 19),
    f("DerivedExitCode", 15),
    f("Elapsed", 10),
    f("ElapsedRaw", 10),
    f("Eligible", 19),
    f("End", 19),
    f("ExitCode", 8),
    l("Flags", 12),
    f("GID", 6),
    f("Group", 9),
    l("JobID", 12),
    l("JobIDRaw", 12),
    f("JobName", 10),
    f("Layout", 9),
    f("MaxDiskRead", 12),
    f("MaxDiskReadNode", 15),
    f("MaxDiskReadTask", 15),
    f("MaxDiskWrite", 12),
    f("MaxDiskWriteNode", 16),
    f("MaxDiskWriteTask", 16),
    f("MaxPages", 8),
    f("MaxPagesNode", 12),
    f("MaxPagesTask", 12),
    f("MaxRSS", 10),
    f("MaxRSSNode", 10),
    f("MaxRSSTask", 10),
    f("MaxVMSize", 10),
    f("MaxVMSizeNode", 14),
    f("MaxVMSizeTask", 14),
    l("McsLabel", 12),
    f("MinCPU", 10),
    f("MinCPUNode", 10),
    f("MinCPUTask", 10),
    f("NCPUS", 10),
    f("NNodes", 8),
    f("NodeList", 15),
    f("NTasks", 8),
    f("Partition", 10),
    f("Priority", 10),
    f("QOS", 10),
    f("QOSRAW", 10),
    f("Reason", 20),
    f("ReqCPUFreq", 10),
    f("ReqCPUFreqGov", 13),
    f("ReqCPUFreqMax", 13),
    f("ReqCPUFreqMin", 13),
    f("ReqCPUS", 10),
    f("ReqMem", 10),
    f("ReqNodes", 8),
    l("ReqTRES", 10),
    f("Reservation", 20),
    f("ReservationId", 13),
    f("Reserved", 10),
    f("ResvCPU", 10),
    f("ResvCPURAW", 10),
    f("Start", 19),
    f("State", 10),
    f("Submit", 19),
    l("SubmitLine", 20),
    f("Suspended", 10),
    f("SystemComment", 15),
    f("SystemCPU", 10),
    f("Timelimit", 10),
    f("TimelimitRaw", 12),
    f("TotalCPU", 10),
    l("TRESUsageInAve", 10),
    l("TRESUsageInMax", 10),
    l("TRESUsageInMaxNode", 10),
    l("TRESUsageInMaxTask", 10),
    l("TRESUsageInMin", 10),
    l("TRESUsageInMinNode", 10),
    l("TRESUsageInMinTask", 10),
    l("TRESUsageInTot", 10),
    l("TRESUsageOutAve", 10),
    l("TRESUsageOutMax", 10),
    l("TRESUsageOutMaxNode", 10),
    l("TRESUsageOutMaxTask", 10),
    l("TRESUsageOutMin", 10),
    l("TRESUsageOutMinNode", 10),
    l("TRESUsageOutMinTask", 10),
    l("TRESUsageOutTot", 10),
    f("UID", 6),
    f("User", 9),
    f("UserCPU", 10),
    f("WCKey", 10),
    f("WCKeyID", 10),
    l("WorkDir", 15),
    // Not Slurm 22.05 fields: the array's job id and task index on their own.
    f("ArrayJobID", 12),
    f("ArrayTaskID", 11),
    // Not a Slurm field: a container step's start-up (issue 42), from its
    // node's supervisor starting until the container was ready, the image's
    // import included (`fmt_container_start`); empty without a container.
    f("ContainerStart", 14),
];

/// Finds a field by name: an exact match in any case first, then the first
/// field whose name starts with `name`.
pub fn lookup(name: &str) -> Option<&'static FieldDef> {
    FIELDS
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(name))
        .or_else(|| {
            let low = name.to_ascii_lowercase();
            FIELDS
                .iter()
                .find(|d| !low.is_empty() && d.name.to_ascii_lowercase().starts_with(&low))
        })
}

/// One column of the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The field.
    pub def: &'static FieldDef,
    /// Width (the field's default unless `%N` gave one).
    pub width: usize,
    /// Left-justified.
    pub left: bool,
}

/// Parses a `--format` list: `name[%[-]width]`, comma separated. The error
/// is the name sacct did not know.
pub fn parse_format(spec: &str) -> Result<Vec<Column>, String> {
    crate::common::format_items(spec)
        .into_iter()
        .map(|(item, name, width)| {
            let def = lookup(name).ok_or_else(|| item.to_string())?;
            let (width, left) = width.unwrap_or((def.width, def.left));
            Ok(Column { def, width, left })
        })
        .collect()
}

/// `--units`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Kibibytes.
    K,
    /// Mebibytes.
    M,
    /// Gibibytes.
    G,
    /// Tebibytes.
    T,
    /// Pebibytes.
    P,
}

impl Unit {
    /// Parses `K`, `M`, `G`, `T` or `P` (any case).
    pub fn parse(s: &str) -> Option<Unit> {
        Some(match s.to_ascii_uppercase().as_str() {
            "K" => Unit::K,
            "M" => Unit::M,
            "G" => Unit::G,
            "T" => Unit::T,
            "P" => Unit::P,
            _ => return None,
        })
    }

    fn power(self) -> u32 {
        match self {
            Unit::K => 1,
            Unit::M => 2,
            Unit::G => 3,
            Unit::T => 4,
            Unit::P => 5,
        }
    }
}

const UNIT_LETTERS: [char; 6] = ['K', 'M', 'G', 'T', 'P', 'E'];

/// How a value is printed: everything a row needs besides the record.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// The time running jobs' elapsed time counts to.
    pub now: Timestamp,
    /// `--units`.
    pub units: Option<Unit>,
    /// `--noconvert`.
    pub noconvert: bool,
}

/// A KiB amount as sacct prints memory: by default reduced to the largest
/// unit that divides it exactly (`2048K` is `2M`, `3596K` stays), with
/// `--units` converted to that unit with two decimals, with `--noconvert` as
/// stored; zero is `0`.
pub fn fmt_kib(kib: u64, ctx: &Ctx) -> String {
    if kib == 0 {
        return "0".into();
    }
    if let Some(u) = ctx.units {
        if u == Unit::K {
            return format!("{kib}K");
        }
        let v = kib as f64 / 1024f64.powi(u.power() as i32 - 1);
        return format!("{v:.2}{}", UNIT_LETTERS[u.power() as usize - 1]);
    }
    if ctx.noconvert {
        return format!("{kib}K");
    }
    let mut v = kib;
    let mut idx = 0;
    while v.is_multiple_of(1024) && idx + 1 < UNIT_LETTERS.len() {
        v /= 1024;
        idx += 1;
    }
    format!("{v}{}", UNIT_LETTERS[idx])
}

/// `[D-]HH:MM:SS`.
pub fn fmt_elapsed(secs: i64) -> String {
    let secs = secs.max(0);
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// CPU times (TotalCPU, UserCPU, SystemCPU): `[D-]HH:MM:SS` from an hour
/// up, `MM:SS.mmm` below.
pub fn fmt_cpu(usec: u64) -> String {
    let secs = usec / 1_000_000;
    let millis = usec % 1_000_000 / 1000;
    if secs >= 3600 {
        fmt_elapsed(secs as i64)
    } else {
        format!("{:02}:{:02}.{millis:03}", secs / 60, secs % 60)
    }
}

/// `ContainerStart` (sacct's and sstat's, not Slurm's): the step's
/// container start-up as the CPU times print (`MM:SS.mmm`, `[D-]HH:MM:SS`
/// from an hour up); empty for a step without a container.
pub fn fmt_container_start(u: &proto::StepUsage) -> String {
    u.container_start_usec.map(fmt_cpu).unwrap_or_default()
}

fn fmt_limit(limit: TimeLimit) -> String {
    match limit {
        TimeLimit::Unlimited => "UNLIMITED".into(),
        TimeLimit::Minutes(m) => fmt_elapsed(i64::from(m) * 60),
    }
}

fn fmt_opt_time(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "Unknown".into(), fmt_time)
}

/// The state as sacct prints it for a job (`CANCELLED by 1000`).
pub fn job_state(job: &AcctJob) -> String {
    match (job.state, job.cancelled_by) {
        (JobState::Cancelled, Some(uid)) => format!("CANCELLED by {uid}"),
        (st, _) => st.as_slurm_str().into(),
    }
}

/// The job's `JobID`: `123`, or `123_4` for an array task.
pub fn job_id(job: &AcctJob) -> String {
    match (job.array_job_id, job.array_task_id, &job.array_task_str) {
        (Some(a), Some(t), _) => format!("{a}_{t}"),
        // An array record that never split into tasks: `123_[0-3%2]`.
        (Some(a), None, Some(list)) => format!("{a}_[{list}]"),
        _ => job.job_id.0.to_string(),
    }
}

fn elapsed_of(start: Option<Timestamp>, end: Option<Timestamp>, now: Timestamp) -> i64 {
    match start {
        Some(s) => end.unwrap_or(now) - s,
        None => 0,
    }
}

/// Run time, the time it spent suspended left out (as Slurm's Elapsed).
fn job_elapsed(job: &AcctJob, now: Timestamp) -> i64 {
    (elapsed_of(job.start_time, job.end_time, now) - job.suspended_secs).max(0)
}

fn step_elapsed(job: &AcctJob, step: &AcctStep, now: Timestamp) -> i64 {
    // A step that never reported its end ended with its job at the latest.
    let end = step.end_time.or(job.end_time);
    elapsed_of(step.start_time, end, now)
}

fn total_cpu_usec(steps: &[AcctStep]) -> (u64, u64) {
    steps.iter().fold((0, 0), |(u, s), st| {
        (
            u + st.usage.user_cpu_usec.unwrap_or(0),
            s + st.usage.sys_cpu_usec.unwrap_or(0),
        )
    })
}

/// The text of `name` for the job's own row.
pub fn job_value(name: &str, job: &AcctJob, ctx: &Ctx) -> String {
    let elapsed = job_elapsed(job, ctx.now);
    match name {
        "Account" => job.account.clone(),
        "AllocCPUS" | "NCPUS" => job.n_cpus.to_string(),
        "ReqCPUS" => job.n_cpus.to_string(),
        "AllocNodes" => {
            if job.start_time.is_some() {
                job.n_nodes.to_string()
            } else {
                "0".into()
            }
        }
        "NNodes" | "ReqNodes" => job.n_nodes.to_string(),
        "AllocTRES" => job.alloc_tres.clone(),
        "ReqTRES" => job.req_tres.clone(),
        "Cluster" => job.cluster.clone(),
        "Comment" => job.comment.clone().unwrap_or_default(),
        "Container" => job.container.clone().unwrap_or_default(),
        "CPUTime" => fmt_elapsed(elapsed * i64::from(job.n_cpus)),
        "CPUTimeRAW" => (elapsed * i64::from(job.n_cpus)).to_string(),
        "DerivedExitCode" => {
            // The highest exit code of the job's srun steps (sacct(1)).
            let worst = job
                .steps
                .iter()
                .filter(|s| matches!(s.step, StepId::Numbered(_)))
                .map(|s| s.exit_code)
                .max_by_key(|e| (e.code, e.signal));
            worst.unwrap_or_default().to_string()
        }
        "Elapsed" => fmt_elapsed(elapsed),
        "ElapsedRaw" => elapsed.to_string(),
        "Eligible" => fmt_opt_time(job.eligible_time),
        "End" => fmt_opt_time(job.end_time),
        "ExitCode" => job.exit_code.to_string(),
        "GID" => job.gid.to_string(),
        "Group" => group_name(job.gid),
        "JobID" => job_id(job),
        "JobIDRaw" => job.job_id.0.to_string(),
        "JobName" => job.name.clone(),
        "NodeList" => job.nodes.clone(),
        "Partition" => job.partition.clone(),
        "Priority" => job.priority.to_string(),
        "QOS" => job.qos.clone(),
        "Reason" => job.reason.clone(),
        "ReqCPUFreq" | "ReqCPUFreqMin" | "ReqCPUFreqMax" | "ReqCPUFreqGov" => "Unknown".into(),
        "ReqMem" => job.req_mem.clone(),
        "Start" => fmt_opt_time(job.start_time),
        "State" => job_state(job),
        "Submit" => fmt_time(job.submit_time),
        "SubmitLine" => job.submit_line.clone(),
        "Suspended" => fmt_elapsed(job.suspended_secs),
        "SystemCPU" => fmt_cpu(total_cpu_usec(&job.steps).1),
        "Timelimit" => fmt_limit(job.time_limit),
        "TimelimitRaw" => match job.time_limit {
            TimeLimit::Unlimited => "UNLIMITED".into(),
            TimeLimit::Minutes(m) => m.to_string(),
        },
        "TotalCPU" => {
            let (u, s) = total_cpu_usec(&job.steps);
            fmt_cpu(u + s)
        }
        "UID" => job.uid.to_string(),
        "User" => job.user.clone(),
        "UserCPU" => fmt_cpu(total_cpu_usec(&job.steps).0),
        "WorkDir" => job.work_dir.clone(),
        "ArrayJobID" => job.array_job_id.map(|a| a.to_string()).unwrap_or_default(),
        "ArrayTaskID" => job.array_task_id.map(|t| t.to_string()).unwrap_or_default(),
        // Usage statistics live on the steps; the job row leaves them empty.
        _ => String::new(),
    }
}

/// The text of `name` for a step's row.
pub fn step_value(name: &str, job: &AcctJob, step: &AcctStep, ctx: &Ctx) -> String {
    let elapsed = step_elapsed(job, step, ctx.now);
    let u = &step.usage;
    let kib = |v: Option<u64>| v.map(|k| fmt_kib(k, ctx)).unwrap_or_default();
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let num = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
    let task = |v: Option<u32>| v.map(|n| n.to_string()).unwrap_or_default();
    let cpu_secs = |v: Option<u64>| {
        v.map(|us| fmt_elapsed((us / 1_000_000) as i64))
            .unwrap_or_default()
    };
    let suffix = step.step.as_slurm_string();
    match name {
        "Account" => job.account.clone(),
        "AllocCPUS" | "NCPUS" | "ReqCPUS" => step.n_cpus.to_string(),
        "AllocNodes" | "NNodes" => step.n_nodes.to_string(),
        "AllocTRES" => step.alloc_tres.clone(),
        "AveCPU" => cpu_secs(u.ave_cpu_usec),
        "AvePages" => num(u.ave_pages),
        "AveRSS" => kib(u.ave_rss_kib),
        "AveVMSize" => kib(u.ave_vmsize_kib),
        "Cluster" => job.cluster.clone(),
        "Container" => text(&step.container),
        "CPUTime" => fmt_elapsed(elapsed * i64::from(step.n_cpus)),
        "CPUTimeRAW" => (elapsed * i64::from(step.n_cpus)).to_string(),
        "Elapsed" => fmt_elapsed(elapsed),
        "ElapsedRaw" => elapsed.to_string(),
        "Eligible" => fmt_opt_time(step.start_time),
        "End" => fmt_opt_time(step.end_time),
        "ExitCode" => {
            // A step of a finished job that never reported its end (its node
            // failed) has no exit code, and sacct leaves the column empty.
            let unreported = step.end_time.is_none()
                && !matches!(step.state, JobState::Running | JobState::Pending);
            if unreported {
                String::new()
            } else {
                step.exit_code.to_string()
            }
        }
        "JobID" => format!("{}.{suffix}", job_id(job)),
        "JobIDRaw" => format!("{}.{suffix}", job.job_id.0),
        "JobName" => step.name.clone(),
        "MaxPages" => num(u.max_pages),
        "MaxPagesNode" => text(&u.max_pages_node),
        "MaxPagesTask" => task(u.max_pages_task),
        "MaxRSS" => kib(u.max_rss_kib),
        "MaxRSSNode" => text(&u.max_rss_node),
        // Records from before task ids were kept: the batch step's one task.
        "MaxRSSTask" => task(u.max_rss_task.or(u.max_rss_kib.map(|_| 0))),
        "MaxVMSize" => kib(u.max_vmsize_kib),
        "MaxVMSizeNode" => text(&u.max_vmsize_node),
        "MaxVMSizeTask" => task(u.max_vmsize_task),
        "MinCPU" => cpu_secs(u.min_cpu_usec),
        "MinCPUNode" => text(&u.min_cpu_node),
        "MinCPUTask" => task(u.min_cpu_task),
        "NodeList" => step.nodes.clone(),
        "NTasks" => step.n_tasks.to_string(),
        "Start" => fmt_opt_time(step.start_time),
        "State" => step.state.as_slurm_str().into(),
        "Submit" => fmt_opt_time(step.start_time),
        "SystemCPU" => u.sys_cpu_usec.map(fmt_cpu).unwrap_or_default(),
        "TotalCPU" => match (u.user_cpu_usec, u.sys_cpu_usec) {
            (None, None) => String::new(),
            (a, b) => fmt_cpu(a.unwrap_or(0) + b.unwrap_or(0)),
        },
        "UserCPU" => u.user_cpu_usec.map(fmt_cpu).unwrap_or_default(),
        "ArrayJobID" => job.array_job_id.map(|a| a.to_string()).unwrap_or_default(),
        "ArrayTaskID" => job.array_task_id.map(|t| t.to_string()).unwrap_or_default(),
        "ContainerStart" => fmt_container_start(u),
        other => tres_usage(other, u, ctx).unwrap_or_default(),
    }
}

/// The `TRESUsageIn*` and `TRESUsageOut*` fields of a step's usage, as
/// Slurm prints them (`cpu=00:01:02,mem=1004K,pages=0,vmem=217700K`: TRES
/// names in order, CPU as a time, memory in KiB units); `None` for any
/// other field name. Only what is measured is listed: CPU, memory
/// (`mem`), virtual memory (`vmem`) and major faults (`pages`); disk and
/// energy (Slurm's `energy=`, `fs/disk=`) are not gathered, so they are
/// left out and the `Out` fields are empty.
pub fn tres_usage(name: &str, u: &proto::StepUsage, ctx: &Ctx) -> Option<String> {
    let cpu = |v: Option<u64>| v.map(|us| fmt_elapsed((us / 1_000_000) as i64));
    let kib = |v: Option<u64>| v.map(|k| fmt_kib(k, ctx));
    let num = |v: Option<u64>| v.map(|n| n.to_string());
    let node = |v: &Option<String>| v.clone();
    let task = |v: Option<u32>| v.map(|t| t.to_string());
    // With one task the largest and the smallest are the same values, so
    // those lists are complete; with more, only what is kept (the largest
    // memory, the smallest CPU time) is listed.
    let one = u.n_tasks == Some(1);
    let only = |keep: bool, v: Option<String>| v.filter(|_| keep);
    let sum = |v: Option<u64>| v.map(|a| a * u64::from(u.n_tasks.unwrap_or(1)));
    let pairs: Vec<(&str, Option<String>)> = match name {
        "TRESUsageInAve" => vec![
            ("cpu", cpu(u.ave_cpu_usec)),
            ("mem", kib(u.ave_rss_kib)),
            ("pages", num(u.ave_pages)),
            ("vmem", kib(u.ave_vmsize_kib)),
        ],
        "TRESUsageInMax" | "TRESUsageInMin" => {
            let max = name == "TRESUsageInMax";
            vec![
                ("cpu", only(!max || one, cpu(u.min_cpu_usec))),
                ("mem", only(max || one, kib(u.max_rss_kib))),
                ("pages", only(max || one, num(u.max_pages))),
                ("vmem", only(max || one, kib(u.max_vmsize_kib))),
            ]
        }
        "TRESUsageInMaxNode" | "TRESUsageInMinNode" => {
            let max = name == "TRESUsageInMaxNode";
            vec![
                ("cpu", only(!max || one, node(&u.min_cpu_node))),
                ("mem", only(max || one, node(&u.max_rss_node))),
                ("pages", only(max || one, node(&u.max_pages_node))),
                ("vmem", only(max || one, node(&u.max_vmsize_node))),
            ]
        }
        "TRESUsageInMaxTask" | "TRESUsageInMinTask" => {
            let max = name == "TRESUsageInMaxTask";
            vec![
                ("cpu", only(!max || one, task(u.min_cpu_task))),
                ("mem", only(max || one, task(u.max_rss_task))),
                ("pages", only(max || one, task(u.max_pages_task))),
                ("vmem", only(max || one, task(u.max_vmsize_task))),
            ]
        }
        "TRESUsageInTot" => {
            // CPU: the reaped tasks' rusage where known, else what the
            // samples saw; memory: the tasks' averages summed.
            let total = match (u.user_cpu_usec, u.sys_cpu_usec) {
                (Some(a), Some(b)) if a + b > 0 => Some(a + b),
                _ => sum(u.ave_cpu_usec),
            };
            vec![
                ("cpu", cpu(total)),
                ("mem", kib(sum(u.ave_rss_kib))),
                ("pages", num(sum(u.ave_pages))),
                ("vmem", kib(sum(u.ave_vmsize_kib))),
            ]
        }
        "TRESUsageOutAve"
        | "TRESUsageOutMax"
        | "TRESUsageOutMaxNode"
        | "TRESUsageOutMaxTask"
        | "TRESUsageOutMin"
        | "TRESUsageOutMinNode"
        | "TRESUsageOutMinTask"
        | "TRESUsageOutTot" => Vec::new(),
        _ => return None,
    };
    Some(
        pairs
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(","),
    )
}

fn group_name(gid: u32) -> String {
    // SAFETY: getgrgid_r writes only into the buffers it is given.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut result: *mut libc::group = std::ptr::null_mut();
    let rc = unsafe { libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() {
        return gid.to_string();
    }
    // SAFETY: on success gr_name points into buf, NUL-terminated.
    unsafe { std::ffi::CStr::from_ptr(grp.gr_name) }
        .to_string_lossy()
        .into_owned()
}

/// Fits `text` into a fixed-width column: truncated with `+`, padded on
/// the side the column justifies to.
pub fn fit(text: &str, width: usize, left: bool) -> String {
    let n = text.chars().count();
    let body = if n > width {
        let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
        s.push('+');
        s
    } else {
        text.to_string()
    };
    if left {
        format!("{body:<width$}")
    } else {
        format!("{body:>width$}")
    }
}

/// The `--helpformat` text: every field, four to a line.
pub fn helpformat() -> String {
    crate::common::helpformat(FIELDS.iter().map(|d| d.name))
}
