//! `scontrol`: show and change jobs, nodes and partitions, as Slurm 22.05's
//! `scontrol(1)` does.
//!
//! ```text
//! args -> options + command words -> run_command -> Client -> render_* -> stdout
//!                                    (no command: read commands from stdin)
//! ```
//!
//! The `render_*` functions are pure and pinned by `tests/golden_scontrol.rs`
//! against what Slurm printed. A record is a list of lines: Slurm prints the
//! first as is, the rest indented by three spaces, and a blank line after
//! the record; `-o/--oneliner` joins the lines with single spaces instead.

use crate::common::{self, fmt_time};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use crate::timespec::parse_start_time;
use model::array::{split_job_list, JobIdSpec, TaskSet};
use model::units::{
    format_duration_hms, format_memory_mb, format_time_limit_hms, parse_memory_mb, parse_time_limit,
};
use model::{Gres, JobId, TimeLimit, Timestamp};
use proto::{
    ConfigInfo, CtldRequest, CtldResponse, JobInfo, JobUpdate, NodeInfo, NodeStateRequest,
    PartitionInfo,
};

pub(crate) const OPTS: &[OptSpec] = &[
    opt("all", Some('a'), Arg::None),
    opt("details", Some('d'), Arg::None),
    opt("federation", None, Arg::None),
    opt("future", Some('F'), Arg::None),
    opt("help", Some('h'), Arg::None),
    opt("hide", None, Arg::None),
    opt("json", None, Arg::None),
    opt("local", None, Arg::None),
    opt("clusters", Some('M'), Arg::Required),
    opt("oneliner", Some('o'), Arg::None),
    opt("quiet", Some('Q'), Arg::None),
    opt("sibling", None, Arg::None),
    opt("usage", None, Arg::None),
    opt("uid", Some('u'), Arg::Required),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
    opt("yaml", None, Arg::None),
];

/// How records print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShowOpts {
    /// `-o/--oneliner`: one line per record.
    pub oneliner: bool,
    /// `-d/--details`.
    pub details: bool,
}

/// Joins a record's lines the way `scontrol show` prints them.
fn finish_record(lines: &[String], opts: ShowOpts) -> String {
    if opts.oneliner {
        let mut s = lines.join(" ");
        s.push('\n');
        return s;
    }
    let mut s = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            s.push_str("   ");
        }
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    s
}

fn time_or(ts: Option<Timestamp>, none: &str) -> String {
    match ts {
        Some(t) if t > 0 => fmt_time(t),
        _ => none.to_string(),
    }
}

fn or_null(s: Option<&str>) -> String {
    match s {
        Some(v) if !v.is_empty() => v.to_string(),
        _ => "(null)".to_string(),
    }
}

fn hostlist_or_null(names: &[String]) -> String {
    if names.is_empty() {
        "(null)".to_string()
    } else {
        hostlist::compress(names)
    }
}

fn job_state_str(job: &JobInfo) -> &'static str {
    if job.completing {
        "COMPLETING"
    } else if job.configuring && job.state == model::JobState::Running {
        "CONFIGURING"
    } else {
        job.state.as_slurm_str()
    }
}

/// The lines of one `scontrol show job` record.
fn job_lines(job: &JobInfo, details: bool) -> Vec<String> {
    let mut l = Vec::new();
    l.push({
        // Every record of a throttled array says so (real scontrol
        // 22.05: `JobId=17 ArrayJobId=16 ArrayTaskId=4
        // ArrayTaskThrottle=1`).
        let throttle = job
            .array_max_tasks
            .map(|n| format!(" ArrayTaskThrottle={n}"))
            .unwrap_or_default();
        match (job.array_job_id, job.array_task_id, &job.array_task_str) {
            (Some(a), Some(t), _) => format!(
                "JobId={} ArrayJobId={a} ArrayTaskId={t}{throttle} JobName={}",
                job.job_id, job.name
            ),
            (Some(a), None, Some(list)) => format!(
                "JobId={} ArrayJobId={a} ArrayTaskId={list}{throttle} JobName={}",
                job.job_id, job.name
            ),
            _ => format!("JobId={} JobName={}", job.job_id, job.name),
        }
    });
    l.push(format!(
        "UserId={}({}) GroupId={}({}) MCS_label=N/A",
        job.user, job.uid, job.group, job.gid
    ));
    l.push(format!(
        "Priority={} Nice={} Account={} QOS={}",
        job.priority, job.nice, job.account, job.qos
    ));
    l.push(format!(
        "JobState={} Reason={} Dependency={}",
        job_state_str(job),
        // A described reason ("job requeued in held state") is one word
        // here, as Slurm's scontrol writes it.
        job.reason.as_slurm_str().replace(' ', "_"),
        or_null(job.dependency.as_deref())
    ));
    l.push(format!(
        "Requeue={} Restarts={} BatchFlag=1 Reboot=0 ExitCode={}",
        u8::from(job.requeue),
        job.restarts,
        job.exit_code
    ));
    if details {
        l.push(format!("DerivedExitCode={}", job.exit_code));
    }
    l.push(format!(
        "RunTime={} TimeLimit={} TimeMin={}",
        format_duration_hms(job.run_time),
        format_time_limit_hms(job.time_limit),
        job.time_min
            .map(format_time_limit_hms)
            .unwrap_or_else(|| "N/A".to_string())
    ));
    let eligible = (job.eligible_time > 0).then_some(job.eligible_time);
    l.push(format!(
        "SubmitTime={} EligibleTime={}",
        time_or(Some(job.submit_time), "Unknown"),
        time_or(eligible, "Unknown")
    ));
    l.push(format!("AccrueTime={}", time_or(eligible, "Unknown")));
    l.push(format!(
        "StartTime={} EndTime={} Deadline={}",
        time_or(job.start_time, "Unknown"),
        time_or(job.end_time, "Unknown"),
        time_or(job.deadline, "N/A")
    ));
    l.push(format!(
        "SuspendTime={} SecsPreSuspend={} LastSchedEval={} Scheduler={}",
        time_or(job.suspend_time, "None"),
        job.secs_pre_suspend,
        time_or(job.last_sched_eval, "Unknown"),
        if job.scheduler.is_empty() {
            "Main"
        } else {
            &job.scheduler
        }
    ));
    l.push(format!(
        "Partition={} AllocNode:Sid={}:{}",
        job.partition, job.alloc_node, job.alloc_sid
    ));
    l.push(format!(
        "ReqNodeList={} ExcNodeList={}",
        hostlist_or_null(&job.req_nodes),
        hostlist_or_null(&job.exc_nodes)
    ));
    if job.sched_nodes.is_empty() {
        l.push(format!("NodeList={}", hostlist::compress(&job.nodes)));
    } else {
        l.push(format!(
            "NodeList={} SchedNodeList={}",
            hostlist::compress(&job.nodes),
            hostlist::compress(&job.sched_nodes)
        ));
    }
    if let Some(host) = &job.batch_host {
        l.push(format!("BatchHost={host}"));
    }
    l.push(format!(
        "NumNodes={} NumCPUs={} NumTasks={} CPUs/Task={} ReqB:S:C:T=0:0:*:*",
        job.num_nodes, job.num_cpus, job.num_tasks, job.cpus_per_task
    ));
    l.push(format!("TRES={}", job.tres));
    l.push(format!(
        "Socks/Node=* NtasksPerN:B:S:C={}:0:*:* CoreSpec=*",
        job.ntasks_per_node.unwrap_or(0)
    ));
    if details {
        let gres = job
            .tres_per_node
            .as_deref()
            .map(|g| g.strip_prefix("gres:").unwrap_or(g).to_string());
        l.push(format!("JOB_GRES={}", or_null(gres.as_deref())));
        l.extend(job_node_detail_lines(job, gres.as_deref().unwrap_or("")));
    }
    let min_cpus = job.cpus_per_task.max(1) * job.ntasks_per_node.unwrap_or(1).max(1);
    let mem = match (job.mem_per_cpu, job.mem_per_node) {
        (Some(m), _) => format!("MinMemoryCPU={}", format_memory_mb(m)),
        (None, Some(m)) => format!("MinMemoryNode={}", format_memory_mb(m)),
        (None, None) => "MinMemoryNode=0".to_string(),
    };
    l.push(format!("MinCPUsNode={min_cpus} {mem} MinTmpDiskNode=0"));
    l.push(format!(
        "Features={} DelayBoot=00:00:00",
        or_null(job.features.as_deref())
    ));
    l.push(format!(
        "OverSubscribe={} Contiguous=0 Licenses={} Network=(null)",
        if job.exclusive { "NO" } else { "OK" },
        or_null(job.licenses.as_deref())
    ));
    l.push(format!("Command={}", or_null(job.command.as_deref())));
    l.push(format!("WorkDir={}", job.work_dir));
    if let Some(comment) = job.comment.as_deref().filter(|c| !c.is_empty()) {
        l.push(format!("Comment={comment}"));
    }
    l.push(format!("StdErr={}", job.stderr));
    l.push(format!("StdIn={}", job.stdin));
    l.push(format!("StdOut={}", job.stdout));
    l.push("Power=".to_string());
    if let Some(c) = &job.container {
        l.push(format!("Container={c}"));
    }
    if let Some(t) = &job.tres_per_job {
        l.push(format!("TresPerJob={t}"));
    }
    if let Some(t) = &job.tres_per_node {
        l.push(format!("TresPerNode={t}"));
    }
    if let Some(t) = &job.tres_per_task {
        l.push(format!("TresPerTask={t}"));
    }
    if job.mail_type != 0 {
        l.push(format!(
            "MailUser={} MailType={}",
            job.mail_user.as_deref().unwrap_or(&job.user),
            model::mail::names(job.mail_type)
        ));
    }
    l.push(String::new());
    l
}

/// `-d`: one `Nodes=... CPU_IDs=... Mem=... GRES=` line per run of nodes with
/// the same allocation (GRES with their indexes, `gpu:1(IDX:0)`, where the
/// controller sent them). A controller that only counted CPUs sends no ids:
/// then the first `n` ids of each node are shown.
fn job_node_detail_lines(job: &JobInfo, gres: &str) -> Vec<String> {
    let mut runs: Vec<(Vec<String>, u32, String, String)> = Vec::new();
    for (i, (name, cpus)) in job.nodes.iter().zip(job.cpus_per_node.iter()).enumerate() {
        let ids = match job.cpu_ids_per_node.get(i) {
            Some(ids) if !ids.is_empty() => proto::cpu_list(ids),
            _ => proto::cpu_list(&(0..(*cpus).max(1)).collect::<Vec<u32>>()),
        };
        // The node's GRES with their indexes where the controller sent
        // them, else the job's request.
        let g = job
            .gres_idx_per_node
            .get(i)
            .cloned()
            .unwrap_or_else(|| gres.to_string());
        match runs.last_mut() {
            Some((names, c, i, gg)) if *c == *cpus && *i == ids && *gg == g => {
                names.push(name.clone())
            }
            _ => runs.push((vec![name.clone()], *cpus, ids, g)),
        }
    }
    runs.into_iter()
        .map(|(names, cpus, ids, gres)| {
            let mem = match (job.mem_per_cpu, job.mem_per_node) {
                (Some(m), _) => m * u64::from(cpus),
                (None, Some(m)) => m,
                (None, None) => 0,
            };
            format!(
                "  Nodes={} CPU_IDs={ids} Mem={mem} GRES={gres}",
                hostlist::compress(&names)
            )
        })
        .collect()
}

/// `scontrol show job <id>` for one job, byte for byte as Slurm prints it.
///
/// `now` is the controller's clock at the time of the answer; the job's
/// `run_time` was already computed against it by the controller.
pub fn render_job(job: &JobInfo, now: Timestamp) -> String {
    render_job_with(job, now, ShowOpts::default())
}

/// [`render_job`] with `-d` and `-o`.
pub fn render_job_with(job: &JobInfo, _now: Timestamp, opts: ShowOpts) -> String {
    finish_record(&job_lines(job, opts.details), opts)
}

fn node_lines(node: &NodeInfo) -> Vec<String> {
    let mut l = Vec::new();
    l.push(format!(
        "NodeName={} Arch={} CoresPerSocket={} ",
        node.name,
        or_null(node.arch.as_deref()),
        node.cores_per_socket
    ));
    l.push(format!(
        "CPUAlloc={} CPUEfctv={} CPUTot={} CPULoad={}",
        node.alloc_cpus,
        node.cpus,
        node.cpus,
        node.cpu_load
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "N/A".to_string())
    ));
    let features = if node.features.is_empty() {
        "(null)".to_string()
    } else {
        node.features.join(",")
    };
    l.push(format!("AvailableFeatures={features}"));
    l.push(format!("ActiveFeatures={features}"));
    let gres = if node.gres.is_empty() {
        "(null)".to_string()
    } else {
        node.gres
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    l.push(format!("Gres={gres}"));
    l.push(format!(
        "NodeAddr={} NodeHostName={} Version={}",
        node.addr,
        node.hostname,
        or_null(node.version.as_deref())
    ));
    l.push(format!("OS={} ", or_null(node.os.as_deref())));
    l.push(format!(
        "RealMemory={} AllocMem={} FreeMem={} Sockets={} Boards={}",
        node.real_memory,
        node.alloc_mem,
        node.free_mem
            .map(|v| v.to_string())
            .unwrap_or_else(|| "N/A".to_string()),
        node.sockets,
        node.boards
    ));
    l.push(format!(
        "State={} ThreadsPerCore={} TmpDisk={} Weight={} Owner=N/A MCS_label=N/A",
        node_state_text(node),
        node.threads_per_core,
        node.tmp_disk,
        node.weight
    ));
    // Slurm prints the reboot's next state while one is pending or issued.
    if let (Some(next), true) = (
        node.next_state,
        node.state.reboot || node.state.reboot_issued,
    ) {
        l.push(format!("NextState={}", next.as_slurm_str()));
    }
    l.push(format!("Partitions={} ", node.partitions.join(",")));
    l.push(format!(
        "BootTime={} SlurmdStartTime={}",
        time_or(node.boot_time, "None"),
        time_or(node.slurmd_start_time, "None")
    ));
    l.push(format!(
        "LastBusyTime={}",
        time_or(node.last_busy, "Unknown")
    ));
    l.push(format!("CfgTRES={}", crate::sinfo::cfg_tres(node)));
    l.push(format!("AllocTRES={}", alloc_tres(node)));
    l.push("CapWatts=n/a".to_string());
    l.push("CurrentWatts=0 AveWatts=0".to_string());
    l.push("ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s".to_string());
    if let Some(reason) = &node.reason {
        l.push(format!(
            "Reason={} [{}@{}]",
            reason,
            node.reason_user.as_deref().unwrap_or("root"),
            time_or(node.reason_time, "Unknown")
        ));
    }
    l
}

/// `AllocTRES=`: what jobs hold on the node (`cpu=1,mem=500M,gres/gpu=2`), empty when idle.
fn alloc_tres(node: &NodeInfo) -> String {
    let mut parts = Vec::new();
    if node.alloc_cpus > 0 {
        parts.push(format!("cpu={}", node.alloc_cpus));
    }
    if node.alloc_mem > 0 {
        parts.push(format!("mem={}", format_memory_mb(node.alloc_mem)));
    }
    for (name, count) in crate::sinfo::gres_totals(&node.gres_used) {
        if count > 0 {
            parts.push(format!("gres/{name}={count}"));
        }
    }
    parts.join(",")
}

/// `scontrol show node <name>` for one node, byte for byte as Slurm prints it.
pub fn render_node(node: &NodeInfo) -> String {
    render_node_with(node, ShowOpts::default())
}

/// [`render_node`] with `-o`.
pub fn render_node_with(node: &NodeInfo, opts: ShowOpts) -> String {
    finish_record(&node_lines(node), opts)
}

fn partition_lines(part: &PartitionInfo) -> Vec<String> {
    let list_or_all = |v: &Option<Vec<String>>| match v {
        Some(items) if !items.is_empty() => items.join(","),
        _ => "ALL".to_string(),
    };
    let access = |key: &str| {
        part.access
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let yes_no = |key: &str| {
        if access(key).is_some_and(|v| v.eq_ignore_ascii_case("YES")) {
            "YES"
        } else {
            "NO"
        }
    };
    let mut l = Vec::new();
    l.push(format!("PartitionName={}", part.name));
    // A Deny list shows where no Allow list is set, as Slurm shows it.
    let accounts = match (&part.allow_accounts, access("DenyAccounts")) {
        (None, Some(deny)) => format!("DenyAccounts={deny}"),
        (allow, _) => format!("AllowAccounts={}", list_or_all(allow)),
    };
    let qos = match (access("AllowQos"), access("DenyQos")) {
        (None, Some(deny)) => format!("DenyQos={deny}"),
        (allow, _) => format!("AllowQos={}", allow.unwrap_or("ALL")),
    };
    l.push(format!(
        "AllowGroups={} {accounts} {qos}",
        list_or_all(&part.allow_groups),
    ));
    l.push(format!(
        "AllocNodes=ALL Default={} QoS=N/A",
        if part.default { "YES" } else { "NO" }
    ));
    l.push(format!(
        "DefaultTime={} DisableRootJobs={} ExclusiveUser={} GraceTime={} Hidden=NO",
        part.default_time
            .map(format_time_limit_hms)
            .unwrap_or_else(|| "NONE".to_string()),
        yes_no("DisableRootJobs"),
        yes_no("ExclusiveUser"),
        access("GraceTime").unwrap_or("0"),
    ));
    l.push(format!(
        "MaxNodes={} MaxTime={} MinNodes={} LLN={} MaxCPUsPerNode={}",
        part.max_nodes
            .map(|n| n.to_string())
            .unwrap_or_else(|| "UNLIMITED".to_string()),
        format_time_limit_hms(part.max_time),
        part.min_nodes,
        yes_no("LLN"),
        access("MaxCPUsPerNode").unwrap_or("UNLIMITED"),
    ));
    l.push(format!("Nodes={}", hostlist::compress(&part.nodes)));
    l.push(format!(
        "PriorityJobFactor={} PriorityTier={} RootOnly={} ReqResv=NO OverSubscribe={}",
        part.priority_job_factor,
        part.priority_tier,
        yes_no("RootOnly"),
        part.oversubscribe
    ));
    l.push("OverTimeLimit=NONE PreemptMode=OFF".to_string());
    l.push(format!(
        "State={} TotalCPUs={} TotalNodes={} SelectTypeParameters=NONE",
        part.state, part.total_cpus, part.total_nodes
    ));
    l.push("JobDefaults=(null)".to_string());
    let def_mem = match part.def_mem_per_cpu {
        Some(m) => format!("DefMemPerCPU={m}"),
        None => "DefMemPerNode=UNLIMITED".to_string(),
    };
    let max_mem = match part.max_mem_per_node {
        Some(m) => m.to_string(),
        None => "UNLIMITED".to_string(),
    };
    l.push(format!("{def_mem} MaxMemPerNode={max_mem}"));
    l.push(format!("TRES={}", part.tres));
    l
}

/// `scontrol show partition <name>` for one partition, byte for byte as Slurm prints it.
pub fn render_partition(part: &PartitionInfo) -> String {
    render_partition_with(part, ShowOpts::default())
}

/// [`render_partition`] with `-o`.
pub fn render_partition_with(part: &PartitionInfo, opts: ShowOpts) -> String {
    finish_record(&partition_lines(part), opts)
}

/// `scontrol show config`, up to the blank line before the controller status
/// lines (see [`ping_line`]).
///
/// Each entry prints as `Key = Value` with the key padded to 23 columns.
/// An entry whose key ends in `:` and whose value is empty is a section
/// title (`Cgroup Support Configuration:`), printed after a blank line.
pub fn render_config(config: &ConfigInfo) -> String {
    let mut out = format!("Configuration data as of {}\n", fmt_time(config.now));
    for (key, value) in &config.entries {
        if key.ends_with(':') && value.is_empty() {
            out.push('\n');
            out.push_str(key);
            out.push('\n');
        } else {
            out.push_str(&format!("{key:<23} = {value}\n"));
        }
    }
    out.push('\n');
    out
}

/// One line of `scontrol ping` (and the tail of `scontrol show config`):
/// `Slurmctld(primary) at ctl is UP`.
pub fn ping_line(index: usize, host: &str, up: bool) -> String {
    let role = if index == 0 { "primary" } else { "backup" };
    let status = if up { "UP" } else { "DOWN" };
    format!("Slurmctld({role}) at {host} is {status}\n")
}

/// A failed command: what it still prints on stdout (records found before
/// the error, ping lines) and the text for stderr (complete lines).
#[derive(Debug)]
struct Failure {
    stdout: String,
    stderr: String,
    /// The exit status (1; 0 where Slurm only logs an error).
    status: i32,
}

impl Failure {
    fn stderr(text: String) -> Failure {
        Failure {
            stdout: String::new(),
            stderr: text,
            status: 1,
        }
    }
}

type CmdResult = Result<String, Failure>;

fn fail(msg: impl Into<String>) -> Failure {
    let mut m = msg.into();
    if !m.ends_with('\n') {
        m.push('\n');
    }
    Failure::stderr(m)
}

/// The commands and the shortest abbreviation each accepts.
const COMMANDS: &[(&str, usize)] = &[
    ("show", 3),
    ("update", 1),
    ("create", 2),
    ("delete", 3),
    ("hold", 2),
    ("uhold", 2),
    ("release", 3),
    ("requeue", 7),
    ("requeuehold", 8),
    ("suspend", 2),
    ("resume", 3),
    ("ping", 2),
    ("reconfigure", 3),
    ("shutdown", 8),
    ("create", 2),
    ("delete", 3),
    ("listpids", 1),
    ("notify", 2),
    ("reboot", 6),
    ("reboot_nodes", 8),
    ("cancel_reboot", 13),
    ("top", 3),
    ("token", 3),
    ("version", 4),
    ("help", 2),
    ("quit", 4),
    ("exit", 1),
];

fn match_word(tag: &str, table: &[(&'static str, usize)]) -> Option<&'static str> {
    let lower = tag.to_ascii_lowercase();
    if let Some((name, _)) = table.iter().find(|(name, _)| *name == lower) {
        return Some(name);
    }
    table
        .iter()
        .find(|(name, min)| lower.len() >= *min && name.starts_with(&lower))
        .map(|(name, _)| *name)
}

/// Lazily connects to the controller.
struct Session {
    client: Option<client::Client>,
    opts: ShowOpts,
    quiet: bool,
}

impl Session {
    fn client(&mut self, what: &str) -> Result<&client::Client, Failure> {
        if self.client.is_none() {
            let c = client::Client::from_env().map_err(|e| fail(format!("{what}: {e}")))?;
            self.client = Some(c);
        }
        Ok(self.client.as_ref().expect("client was just set"))
    }
}

/// Runs one command (its words, the command first).
fn run_command(s: &mut Session, words: &[String]) -> CmdResult {
    let Some(first) = words.first() else {
        return Ok(String::new());
    };
    let Some(cmd) = match_word(first, COMMANDS) else {
        return Err(fail(format!("invalid keyword: {first}")));
    };
    let rest = &words[1..];
    match cmd {
        "show" => cmd_show(s, rest),
        "update" if resv::names_reservation(rest) => resv::cmd_update(s, rest),
        "update" => cmd_update(s, rest),
        "create" if resv::names_reservation(rest) => resv::cmd_create(s, rest),
        "delete" if resv::names_reservation(rest) => resv::cmd_delete(s, rest),
        "hold" | "uhold" | "release" | "requeue" | "requeuehold" | "suspend" | "resume" => {
            cmd_job_action(s, cmd, rest)
        }
        "ping" => cmd_ping(s),
        "reconfigure" => cmd_reconfigure(s),
        "shutdown" => cmd_shutdown(s, rest),
        "create" => cmd_create(s, rest),
        "delete" => cmd_delete(s, rest),
        "top" => cmd_top(s, rest),
        "notify" => cmd_notify(s, rest),
        "token" => cmd_token(s, rest),
        "listpids" => cmd_listpids(s, rest),
        "reboot" | "reboot_nodes" => reboot::cmd_reboot(s, rest),
        "cancel_reboot" => reboot::cmd_cancel_reboot(s, rest),
        "version" => Ok(crate::common::version_line()),
        "help" => Ok(HELP.to_string()),
        _ => Ok(String::new()),
    }
}

const SHOW_ENTITIES: &[(&str, usize)] = &[
    ("job", 1),
    ("jobs", 1),
    ("node", 1),
    ("nodes", 1),
    ("partition", 1),
    ("partitions", 1),
    ("config", 1),
    ("licenses", 3),
    ("license", 3),
    ("step", 4),
    ("steps", 4),
    ("hostnames", 5),
    ("hostname", 5),
    ("hostlistsorted", 9),
    ("hostlist", 5),
    ("reservations", 3),
    ("reservation", 3),
    ("topology", 2),
];

fn cmd_show(s: &mut Session, rest: &[String]) -> CmdResult {
    let Some(tag) = rest.first() else {
        return Err(fail("too few arguments for keyword:show"));
    };
    let arg = rest.get(1).map(String::as_str);
    let Some(entity) = match_word(tag, SHOW_ENTITIES) else {
        return Err(fail(format!("invalid entity:{tag} for keyword:show ")));
    };
    match entity {
        "job" | "jobs" => show_jobs(s, arg),
        "node" | "nodes" => show_nodes(s, arg),
        "partition" | "partitions" => show_partitions(s, arg),
        "config" => show_config(s),
        "licenses" | "license" => show_licenses(s, arg),
        "topology" => show_topology(s, arg),
        "step" | "steps" => show_steps(s, arg),
        "reservations" | "reservation" => resv::show(s, arg),
        "hostnames" | "hostname" => {
            let expr = match arg {
                Some(a) => a.to_string(),
                None => std::env::var("SLURM_JOB_NODELIST")
                    .or_else(|_| std::env::var("SLURM_NODELIST"))
                    .map_err(|_| fail("Hostlist is empty"))?,
            };
            let names =
                hostlist::expand(&expr).map_err(|_| fail(format!("Invalid hostlist: {expr}")))?;
            Ok(names.iter().map(|n| format!("{n}\n")).collect())
        }
        _ => {
            let expr = arg.ok_or_else(|| fail("Hostlist is empty"))?;
            let mut names = Vec::new();
            for part in expr.split(',').filter(|p| !p.is_empty()) {
                names.extend(
                    hostlist::expand(part)
                        .map_err(|_| fail(format!("Invalid hostlist: {expr}")))?,
                );
            }
            if entity == "hostlistsorted" {
                names.sort();
            }
            Ok(format!("{}\n", hostlist::compress(&names)))
        }
    }
}

/// Parses a job id as scontrol accepts it: `123`, or array tasks `123_4`,
/// `123_[1-3]` (a step suffix `.0` selects its job).
fn parse_job_id(text: &str) -> Option<(JobId, Option<TaskSet>)> {
    let base = text.split(['.', '+']).next().unwrap_or(text);
    let spec = JobIdSpec::parse(base)?;
    Some((JobId(spec.job_id), spec.tasks))
}

/// Whether `job` is one of the records `id` (with `tasks`) names: the job,
/// every record of the array it names, or the named tasks of it.
fn job_named(job: &JobInfo, id: JobId, tasks: Option<&TaskSet>) -> bool {
    let in_array = job.job_id == id || job.array_job_id == Some(id.0);
    match tasks {
        None => in_array,
        Some(set) => {
            job.array_job_id == Some(id.0)
                && match (job.array_task_id, &job.array_task_str) {
                    (Some(t), _) => set.contains(t),
                    (None, Some(list)) => TaskSet::parse(list)
                        .is_some_and(|pending| set.iter().any(|t| pending.contains(t))),
                    _ => false,
                }
        }
    }
}

fn show_jobs(s: &mut Session, arg: Option<&str>) -> CmdResult {
    let wanted = match arg {
        Some(a) => Some(
            parse_job_id(a)
                .ok_or_else(|| fail("slurm_load_jobs error: Invalid job id specified"))?,
        ),
        None => None,
    };
    let opts = s.opts;
    let list = s
        .client("slurm_load_jobs error")?
        .jobs()
        .map_err(|e| fail(format!("slurm_load_jobs error: {e}")))?;
    let jobs: Vec<&JobInfo> = list
        .jobs
        .iter()
        .filter(|j| match &wanted {
            Some((id, tasks)) => job_named(j, *id, tasks.as_ref()),
            None => true,
        })
        .collect();
    if jobs.is_empty() {
        return match wanted {
            Some(_) => Err(fail("slurm_load_jobs error: Invalid job id specified")),
            None => Ok("No jobs in the system\n".to_string()),
        };
    }
    Ok(jobs
        .iter()
        .map(|j| render_job_with(j, list.now, opts))
        .collect())
}

/// `scontrol show step [JOB[.STEP]]`.
fn show_steps(s: &mut Session, arg: Option<&str>) -> CmdResult {
    let invalid = || fail("slurm_get_job_steps error: Invalid job id specified");
    let wanted: Option<(u32, Option<String>)> = match arg {
        None => None,
        Some(a) => {
            let (job, step) = match a.split_once('.') {
                Some((j, st)) => (j, Some(st.to_string())),
                None => (a, None),
            };
            Some((job.parse().map_err(|_| invalid())?, step))
        }
    };
    let list = match s
        .client("slurm_get_job_steps error")?
        .call(proto::CtldRequest::ListSteps)
    {
        Ok(proto::CtldResponse::Steps(l)) => l,
        Ok(_) => {
            return Err(fail(
                "slurm_get_job_steps error: Unexpected message received",
            ))
        }
        Err(e) => return Err(fail(format!("slurm_get_job_steps error: {e}"))),
    };
    let steps: Vec<&proto::StepInfo> = list
        .steps
        .iter()
        .filter(|st| match &wanted {
            None => true,
            Some((j, step)) => {
                st.job_id.0 == *j
                    && step
                        .as_ref()
                        .is_none_or(|want| *want == st.step.as_slurm_string())
            }
        })
        .collect();
    if steps.is_empty() {
        return match wanted {
            Some((j, Some(st))) => Err(fail(format!("Job step {j}.{st} not found"))),
            _ => Ok("No steps in the system\n".to_string()),
        };
    }
    Ok(steps.iter().map(|st| render_step(st)).collect())
}

/// One step as `scontrol show step` prints it.
pub fn render_step(st: &proto::StepInfo) -> String {
    let limit = match st.time_limit {
        model::TimeLimit::Unlimited => "UNLIMITED".to_string(),
        model::TimeLimit::Minutes(m) => {
            let s = u64::from(m) * 60;
            if s >= 86_400 {
                format!(
                    "{}-{:02}:{:02}:{:02}",
                    s / 86_400,
                    s % 86_400 / 3600,
                    s % 3600 / 60,
                    s % 60
                )
            } else {
                format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
            }
        }
    };
    let nodes = hostlist::compress(&st.nodes);
    let mut out = format!(
        "StepId={}.{} UserId={} StartTime={} TimeLimit={limit}\n",
        st.job_id,
        st.step.as_slurm_string(),
        st.uid,
        crate::common::fmt_time(st.start_time)
    );
    out.push_str(&format!(
        "   State=RUNNING Partition={} NodeList={nodes}\n",
        st.partition
    ));
    out.push_str(&format!(
        "   Nodes={} CPUs={} Tasks={} Name={} Network=(null)\n",
        st.nodes.len(),
        st.cpus,
        st.ntasks,
        st.name
    ));
    out.push_str(&format!("   TRES={}\n", st.tres));
    out.push_str("   ResvPorts=(null)\n");
    out.push_str(&format!(
        "   CPUFreqReq=Default Dist={}\n",
        st.distribution.as_slurm_str()
    ));
    if !st.srun_host_pid.is_empty() {
        out.push_str(&format!("   SrunHost:Pid={}\n", st.srun_host_pid));
    }
    out.push('\n');
    out
}

/// A node's `State=`: the base state and its flags, with the flags of an
/// active reservation (`+RESERVED`; `+MAINTENANCE` too for a MAINT one, the
/// word Slurm prints for NODE_STATE_MAINT) in Slurm's order of flags.
fn node_state_text(node: &NodeInfo) -> String {
    const ORDER: &[&str] = &[
        "COMPLETING",
        "DRAIN",
        "FAIL",
        "MAINTENANCE",
        "NOT_RESPONDING",
        "POWERED_DOWN",
        "RESERVED",
    ];
    let text = node.state.scontrol_string();
    let mut words = text.split('+');
    let base = words.next().unwrap_or_default().to_string();
    let mut flags: Vec<&str> = words.collect();
    match node.resv {
        2 => flags.extend(["MAINTENANCE", "RESERVED"]),
        1 => flags.push("RESERVED"),
        _ => return text,
    }
    flags.sort_by_key(|f| ORDER.iter().position(|o| o == f).unwrap_or(ORDER.len()));
    flags.dedup();
    std::iter::once(base.as_str())
        .chain(flags)
        .collect::<Vec<_>>()
        .join("+")
}

fn show_nodes(s: &mut Session, arg: Option<&str>) -> CmdResult {
    let opts = s.opts;
    let nodes = s
        .client("slurm_load_node error")?
        .nodes()
        .map_err(|e| fail(format!("slurm_load_node error: {e}")))?;
    let Some(arg) = arg else {
        if nodes.is_empty() {
            return Ok("No nodes in the system\n".to_string());
        }
        return Ok(nodes.iter().map(|n| render_node_with(n, opts)).collect());
    };
    let names = hostlist::expand(arg).unwrap_or_else(|_| vec![arg.to_string()]);
    let mut out = String::new();
    for name in &names {
        match nodes.iter().find(|n| &n.name == name) {
            Some(n) => out.push_str(&render_node_with(n, opts)),
            None => {
                return Err(Failure {
                    stdout: out,
                    stderr: format!("Node {name} not found\n"),
                    status: 1,
                })
            }
        }
    }
    Ok(out)
}

fn show_partitions(s: &mut Session, arg: Option<&str>) -> CmdResult {
    let opts = s.opts;
    let parts = s
        .client("slurm_load_partitions error")?
        .partitions()
        .map_err(|e| fail(format!("slurm_load_partitions error: {e}")))?;
    match arg {
        None if parts.is_empty() => Ok("No partitions in the system\n".to_string()),
        None => Ok(parts
            .iter()
            .map(|p| render_partition_with(p, opts))
            .collect()),
        Some(name) => match parts.iter().find(|p| p.name == name) {
            Some(p) => Ok(render_partition_with(p, opts)),
            None => Err(fail(format!("Partition {name} not found"))),
        },
    }
}

/// `scontrol show topology [NAME]`: the controller's lines (Slurm 22.05's
/// `SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[1-2] `), all, or those of
/// switch `NAME`, or of the switches over node(s) `NAME`. What is not
/// found is said on stderr with exit status 0, as Slurm's `error()` does
/// there ([`topology_reply`]).
fn show_topology(s: &mut Session, arg: Option<&str>) -> CmdResult {
    let text = match s
        .client("slurm_load_topo error")?
        .call(CtldRequest::ShowTopology { node: None })
    {
        Ok(CtldResponse::Topology(t)) => t,
        Ok(_) => return Err(fail("slurm_load_topo error: Unexpected message received")),
        Err(e) => return Err(fail(format!("slurm_load_topo error: {e}"))),
    };
    let (stdout, stderr) = topology_reply(text.as_deref(), arg);
    if stderr.is_empty() {
        Ok(stdout)
    } else {
        Err(Failure {
            stdout,
            stderr,
            status: 0,
        })
    }
}

/// What `scontrol show topology [NAME]` prints (stdout, stderr) given the
/// controller's lines (`None`: no topology plugin). Slurm 22.05 answers
/// an empty topology with `No topology information available` and a name
/// it does not find with `Topology information contains no switch or node
/// named NAME`, both through `error()`: on stderr, exit status 0.
pub fn topology_reply(text: Option<&str>, arg: Option<&str>) -> (String, String) {
    let text = text.unwrap_or("");
    let name = arg.filter(|a| !a.is_empty());
    if text.is_empty() && name.is_none() {
        return (
            String::new(),
            "scontrol: error: No topology information available\n".into(),
        );
    }
    let Some(name) = name else {
        return (text.to_string(), String::new());
    };
    match filter_topology(text, name) {
        Some(out) => (out, String::new()),
        None => (
            String::new(),
            format!(
                "scontrol: error: Topology information contains no switch or node named {name}\n"
            ),
        ),
    }
}

/// The lines of `scontrol show topology` for `name`: the switch (block) of
/// that name, else every one whose `Nodes=` holds every node `name`
/// names (a hostlist, as Slurm's `hostset_within`).
pub fn filter_topology(text: &str, name: &str) -> Option<String> {
    let field = |line: &str, key: &str| -> Option<String> {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .map(str::to_string)
    };
    let lines: Vec<&str> = text.lines().collect();
    if let Some(line) = lines.iter().find(|l| {
        field(l, "SwitchName=")
            .or_else(|| field(l, "BlockName="))
            .is_some_and(|n| n == name)
    }) {
        return Some(format!("{line}\n"));
    }
    let wanted = hostlist::expand(name).unwrap_or_else(|_| vec![name.to_string()]);
    let chosen: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            field(l, "Nodes=")
                .and_then(|h| hostlist::expand(&h).ok())
                .is_some_and(|ns| wanted.iter().all(|w| ns.contains(w)))
        })
        .collect();
    (!chosen.is_empty()).then(|| chosen.iter().map(|l| format!("{l}\n")).collect())
}

fn show_licenses(s: &mut Session, arg: Option<&str>) -> CmdResult {
    let opts = s.opts;
    let licenses = match s
        .client("slurm_load_licenses error")?
        .call(CtldRequest::ListLicenses)
    {
        Ok(CtldResponse::Licenses(l)) => l,
        Ok(_) => {
            return Err(fail(
                "slurm_load_licenses error: Unexpected message received",
            ))
        }
        Err(e) => return Err(fail(format!("slurm_load_licenses error: {e}"))),
    };
    match arg {
        None if licenses.is_empty() => Ok("No licenses configured in Slurm.\n".to_string()),
        None => Ok(render_licenses(&licenses, opts)),
        Some(name) => match licenses.iter().find(|l| l.name == name) {
            Some(l) => Ok(render_licenses(std::slice::from_ref(l), opts)),
            None => Err(fail(format!("License {name} not found"))),
        },
    }
}

/// `scontrol show licenses`: per license `LicenseName=` on its line, then
/// the counts indented by four spaces (`-o`: one line each), as Slurm
/// 22.05 prints them. Remote (database) licenses are not implemented:
/// `Remote=no` always.
pub fn render_licenses(licenses: &[proto::LicenseInfo], opts: ShowOpts) -> String {
    let sep = if opts.oneliner { " " } else { "\n    " };
    licenses
        .iter()
        .map(|l| {
            format!(
                "LicenseName={}{sep}Total={} Used={} Free={} Reserved={} Remote=no\n",
                l.name,
                l.total,
                l.used,
                l.total.saturating_sub(l.used).saturating_sub(l.reserved),
                l.reserved
            )
        })
        .collect()
}

fn show_config(s: &mut Session) -> CmdResult {
    let client = s.client("slurm_load_ctl_conf error")?;
    let config = match client.call(CtldRequest::ShowConfig) {
        Ok(CtldResponse::Config(c)) => c,
        Ok(_) => {
            return Err(fail(
                "slurm_load_ctl_conf error: Unexpected message received",
            ))
        }
        Err(e) => return Err(fail(format!("slurm_load_ctl_conf error: {e}"))),
    };
    let mut out = render_config(&config);
    out.push_str(&ping_all(client).0);
    Ok(out)
}

/// Pings each controller host; returns the lines and whether the primary answered.
fn ping_all(client: &client::Client) -> (String, bool) {
    let mut out = String::new();
    let mut primary_up = false;
    let hosts = client.config().slurmctld_host.clone();
    for (i, host) in hosts.iter().enumerate() {
        let mut config = client.config().clone();
        config.slurmctld_host = vec![host.clone()];
        let one = client::Client::new(config, client.identity().clone());
        let up = matches!(one.call(CtldRequest::Ping), Ok(CtldResponse::Ok));
        if i == 0 {
            primary_up = up;
        }
        out.push_str(&ping_line(i, &host.name, up));
    }
    (out, primary_up)
}

fn cmd_ping(s: &mut Session) -> CmdResult {
    let client = s.client("slurm_ping error")?;
    let (out, up) = ping_all(client);
    if up {
        Ok(out)
    } else {
        Err(Failure {
            stdout: out,
            stderr: String::new(),
            status: 1,
        })
    }
}

/// Splits `Key=Value` (the key lowercased); a value in quotes loses them.
fn split_kv(arg: &str) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((k, v)) => {
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            (k.to_ascii_lowercase(), Some(v.to_string()))
        }
        None => (arg.to_ascii_lowercase(), None),
    }
}

/// A parsed `scontrol update` request.
#[derive(Clone, Debug, PartialEq)]
pub enum UpdateRequest {
    /// `NodeName=...`.
    Node {
        /// Expanded node names.
        nodes: Vec<String>,
        /// `State=`.
        state: Option<NodeStateRequest>,
        /// `Reason=`.
        reason: Option<String>,
    },
    /// `JobId=...`.
    Job {
        /// The jobs, each with the array tasks it names (a comma list
        /// applies the same change to each).
        job_ids: Vec<(JobId, Option<TaskSet>)>,
        /// The changes.
        update: Box<JobUpdate>,
        /// `TimeLimit=+N` / `-N`: minutes added to (taken from) each job's
        /// current limit, which scontrol reads first, as Slurm's does.
        time_delta: Option<i64>,
    },
    /// `PartitionName=...`.
    Partition(Box<proto::PartitionUpdate>),
}

/// Parses the words after `update`. `now` resolves `StartTime=now+1hour`.
/// On refusal, returns the complete stderr text.
pub fn parse_update(words: &[String], now: Timestamp) -> Result<UpdateRequest, String> {
    let keys: Vec<String> = words.iter().map(|w| split_kv(w).0).collect();
    if keys.iter().any(|k| k == "nodename") {
        return parse_node_update(words);
    }
    if keys.iter().any(|k| k == "partitionname") {
        return parse_partition_options(words).map(|u| UpdateRequest::Partition(Box::new(u)));
    }
    if keys.iter().any(|k| k == "jobid" || k == "job") {
        return parse_job_update(words, now);
    }
    Err("No valid entity in update command\n\
         Input line must include \"NodeName\", \"PartitionName\", \"Reservation\", \"StepId\", \"SuspendExcNodes\", \"SuspendExcParts\", \"SuspendExcStates\", or \"JobId\"\n"
        .to_string())
}

fn not_supported(arg: &str) -> String {
    format!("Update of this parameter is not supported: {arg}\nRequest aborted\n")
}

fn parse_node_update(words: &[String]) -> Result<UpdateRequest, String> {
    let mut nodes = Vec::new();
    let mut state = None;
    let mut reason = None;
    for word in words {
        let (key, value) = split_kv(word);
        let value = value.ok_or_else(|| not_supported(word))?;
        match key.as_str() {
            "nodename" => {
                nodes = hostlist::expand(&value)
                    .map_err(|_| format!("Invalid node name specified: {value}\n"))?;
            }
            "reason" => reason = Some(value),
            "state" => {
                state = Some(match value.to_ascii_uppercase().as_str() {
                    "DRAIN" => NodeStateRequest::Drain,
                    "RESUME" => NodeStateRequest::Resume,
                    "DOWN" => NodeStateRequest::Down,
                    "UNDRAIN" => NodeStateRequest::Undrain,
                    "IDLE" => NodeStateRequest::Idle,
                    _ => {
                        return Err(format!(
                            "Invalid input: {word}\nRequest aborted\n\
                             Valid states are: DOWN DRAIN IDLE RESUME UNDRAIN\n"
                        ))
                    }
                });
            }
            _ => return Err(not_supported(word)),
        }
    }
    if matches!(
        state,
        Some(NodeStateRequest::Drain | NodeStateRequest::Down)
    ) && reason.is_none()
    {
        return Err(
            "You must specify a reason when DOWNING or DRAINING a node. Request denied\n"
                .to_string(),
        );
    }
    Ok(UpdateRequest::Node {
        nodes,
        state,
        reason,
    })
}

fn parse_u32(key: &str, value: &str) -> Result<u32, String> {
    value
        .parse()
        .map_err(|_| format!("Invalid {key} value: {value}\n"))
}

fn parse_job_update(words: &[String], now: Timestamp) -> Result<UpdateRequest, String> {
    let mut job_ids = Vec::new();
    let mut u = JobUpdate::default();
    let mut time_delta = None;
    for word in words {
        let (key, value) = split_kv(word);
        let value = value.ok_or_else(|| not_supported(word))?;
        let time = |v: &str, what: &str| -> Result<TimeLimit, String> {
            parse_time_limit(v).map_err(|_| format!("scontrol: error: Invalid {what} value\n"))
        };
        match key.as_str() {
            "jobid" | "job" => {
                for id in split_job_list(&value) {
                    job_ids.push(
                        parse_job_id(&id)
                            .ok_or_else(|| format!("Invalid job id specified for job {id}\n"))?,
                    );
                }
            }
            "arraytaskthrottle" => {
                u.array_throttle = Some(parse_u32("ArrayTaskThrottle", &value)?);
            }
            "timelimit" if value.starts_with(['+', '-']) => {
                let (sign, minutes) = value.split_at(1);
                let TimeLimit::Minutes(m) = time(minutes, "TimeLimit")? else {
                    return Err("scontrol: error: Invalid TimeLimit value\n".to_string());
                };
                let m = i64::from(m);
                time_delta = Some(if sign == "-" { -m } else { m });
            }
            "timelimit" => u.time_limit = Some(time(&value, "TimeLimit")?),
            "timemin" => u.time_min = Some(time(&value, "TimeMin")?),
            "partition" => u.partitions = Some(value.split(',').map(str::to_string).collect()),
            "numnodes" | "reqnodes" | "minnodes" => {
                let (min, max) = match value.split_once('-') {
                    Some((a, b)) => (parse_u32("NumNodes", a)?, Some(parse_u32("NumNodes", b)?)),
                    None => (parse_u32("NumNodes", &value)?, None),
                };
                u.min_nodes = Some(min);
                u.max_nodes = max;
            }
            "maxnodes" => u.max_nodes = Some(parse_u32("MaxNodes", &value)?),
            "numtasks" | "reqprocs" => u.ntasks = Some(parse_u32("NumTasks", &value)?),
            "features" => u.constraint = Some(value),
            "name" | "jobname" => u.name = Some(value),
            "comment" => u.comment = Some(value),
            "nice" => {
                u.nice = Some(
                    value
                        .parse()
                        .map_err(|_| format!("Invalid nice value: {value}\n"))?,
                );
            }
            "reqnodelist" | "nodelist" => {
                u.nodelist = Some(
                    hostlist::expand(&value)
                        .map_err(|_| format!("Invalid node name specified: {value}\n"))?,
                );
            }
            "excnodelist" => {
                u.exclude = Some(
                    hostlist::expand(&value)
                        .map_err(|_| format!("Invalid node name specified: {value}\n"))?,
                );
            }
            "account" => u.account = Some(value),
            "qos" => u.qos = Some(value),
            "priority" => u.priority = Some(parse_u32("Priority", &value)?),
            "minmemorynode" => {
                u.mem_per_node = Some(
                    parse_memory_mb(&value)
                        .map_err(|_| format!("Invalid MinMemoryNode value: {value}\n"))?,
                );
            }
            "minmemorycpu" => {
                u.mem_per_cpu = Some(
                    parse_memory_mb(&value)
                        .map_err(|_| format!("Invalid MinMemoryCPU value: {value}\n"))?,
                );
            }
            "gres" | "trespernode" => {
                u.gres =
                    Some(Gres::parse_list(&value).map_err(|_| {
                        "Invalid generic resource (gres) specification\n".to_string()
                    })?);
            }
            "dependency" => u.dependency = Some(value),
            "starttime" | "begintime" => {
                u.begin_time = Some(
                    parse_start_time(&value, now)
                        .ok_or_else(|| format!("Invalid StartTime value: {value}\n"))?,
                );
            }
            "requeue" => {
                u.requeue = Some(match value.as_str() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("Invalid Requeue value: {value}\n")),
                });
            }
            _ => return Err(not_supported(word)),
        }
    }
    if u == JobUpdate::default() && time_delta.is_none() {
        return Err("No changes specified\n".to_string());
    }
    Ok(UpdateRequest::Job {
        job_ids,
        update: Box::new(u),
        time_delta,
    })
}

/// A job's limit after `TimeLimit=+N`/`-N` (`delta` minutes); a decrement
/// past zero is Slurm's error.
pub fn relative_time_limit(current: TimeLimit, delta: i64) -> Result<TimeLimit, String> {
    let TimeLimit::Minutes(m) = current else {
        return Ok(current);
    };
    let m = i64::from(m);
    if -delta > m {
        return Err(format!(
            "scontrol: error: TimeLimit decrement larger than current time limit ({} > {m})\n",
            -delta
        ));
    }
    Ok(TimeLimit::Minutes(
        u32::try_from(m + delta).unwrap_or(u32::MAX),
    ))
}

fn cmd_update(s: &mut Session, rest: &[String]) -> CmdResult {
    if rest.is_empty() {
        return Err(fail("too few arguments for keyword:update"));
    }
    let req = parse_update(rest, common::now()).map_err(Failure::stderr)?;
    let client = s.client("slurm_update error")?;
    match req {
        UpdateRequest::Partition(u) => {
            if u.name.is_empty() {
                return Err(fail("PartitionName must be given."));
            }
            client
                .call_ok(CtldRequest::UpdatePartition(u))
                .map_err(|e| fail(format!("slurm_update error: {e}")))?
        }
        UpdateRequest::Node {
            nodes,
            state,
            reason,
        } => client
            .call_ok(CtldRequest::UpdateNode {
                nodes,
                state,
                reason,
            })
            .map_err(|e| fail(format!("slurm_update error: {e}")))?,
        UpdateRequest::Job {
            job_ids,
            update,
            time_delta,
        } => {
            let current = match time_delta {
                Some(_) => Some(
                    client
                        .jobs()
                        .map_err(|e| fail(format!("slurm_load_jobs error: {e}")))?,
                ),
                None => None,
            };
            for (job_id, tasks) in job_ids {
                let id_text = match &tasks {
                    Some(t) => format!("{job_id}_{t}"),
                    None => job_id.to_string(),
                };
                let mut update = (*update).clone();
                if let (Some(delta), Some(list)) = (time_delta, &current) {
                    let job = list
                        .jobs
                        .iter()
                        .find(|j| job_named(j, job_id, tasks.as_ref()))
                        .ok_or_else(|| {
                            fail(format!("Invalid job id specified for job {id_text}"))
                        })?;
                    update.time_limit =
                        Some(relative_time_limit(job.time_limit, delta).map_err(Failure::stderr)?);
                }
                // Slurm's form: "<error> for job <id>".
                client
                    .call_ok(CtldRequest::UpdateJob {
                        job_id,
                        update,
                        tasks,
                    })
                    .map_err(|e| fail(format!("{e} for job {id_text}")))?;
            }
        }
    }
    Ok(String::new())
}

/// Whether `tag` names `key` as scontrol's partition options accept it:
/// any prefix of at least `min` letters (`MAX(taglen, min)` in Slurm).
fn tag_is(tag: &str, key: &str, min: usize) -> bool {
    tag.len() >= min && tag.len() <= key.len() && key[..tag.len()].eq_ignore_ascii_case(tag)
}

/// `YES`/`NO` (any prefix) of a partition flag, with Slurm's error.
fn part_yes_no(arg: &str, key: &str, value: &str) -> Result<bool, String> {
    if !value.is_empty() && tag_is(value, "NO", 1) {
        Ok(false)
    } else if !value.is_empty() && tag_is(value, "YES", 1) {
        Ok(true)
    } else {
        Err(format!(
            "Invalid input: {arg}\nAcceptable {key} values are YES and NO\n"
        ))
    }
}

/// `ALL` or a comma list (AllowAccounts, AllowGroups).
fn all_or_list(value: &str) -> Option<Vec<String>> {
    if value.eq_ignore_ascii_case("ALL") || value.is_empty() {
        None
    } else {
        Some(value.split(',').map(str::to_string).collect())
    }
}

/// scontrol's partition options (`update PartitionName=...`, `create
/// PartitionName=...`): Slurm's abbreviations and messages. Keys muster
/// does not apply to partitions are refused, as Slurm refuses unknown ones.
pub fn parse_partition_options(words: &[String]) -> Result<proto::PartitionUpdate, String> {
    let mut u = proto::PartitionUpdate::default();
    let mut changes = 0;
    for arg in words {
        let Some((tag, value)) = arg.split_once('=') else {
            return Err(format!("Invalid input: {arg}  Request aborted\n"));
        };
        let bad = || format!("Invalid input {arg}\n");
        let number = |what: &str| -> Result<u32, String> {
            value
                .parse::<u32>()
                .ok()
                .filter(|&n| n <= u32::from(u16::MAX))
                .ok_or_else(|| format!("Invalid {what} value: {value}\n"))
        };
        if tag_is(tag, "PartitionName", 2) {
            u.name = value.to_string();
            continue;
        }
        changes += 1;
        if tag_is(tag, "MaxTime", 4) {
            u.max_time = Some(parse_time_limit(value).map_err(|_| bad())?);
        } else if tag_is(tag, "DefaultTime", 8) {
            u.default_time = Some(Some(parse_time_limit(value).map_err(|_| bad())?));
        } else if tag_is(tag, "MaxNodes", 4) {
            u.max_nodes = Some(
                if value.eq_ignore_ascii_case("UNLIMITED") || value.eq_ignore_ascii_case("INFINITE")
                {
                    None
                } else {
                    Some(value.parse().map_err(|_| bad())?)
                },
            );
        } else if tag_is(tag, "MinNodes", 2) {
            u.min_nodes = Some(value.parse().map_err(|_| bad())?);
        } else if tag_is(tag, "Default", 7) {
            u.default = Some(part_yes_no(arg, "Default", value)?);
        } else if tag_is(tag, "DisableRootJobs", 1) {
            let yes = part_yes_no(arg, "DisableRootJobs", value)?;
            u.other.push((
                "DisableRootJobs".into(),
                if yes { "YES" } else { "NO" }.into(),
            ));
        } else if tag_is(tag, "ExclusiveUser", 1) {
            // Not implemented: NO (what muster does) only.
            if part_yes_no(arg, "ExclusiveUser", value)? {
                return Err(not_supported(arg));
            }
            u.other.push(("ExclusiveUser".into(), "NO".into()));
        } else if tag_is(tag, "RootOnly", 3) {
            let yes = part_yes_no(arg, "RootOnly", value)?;
            u.other
                .push(("RootOnly".into(), if yes { "YES" } else { "NO" }.into()));
        } else if tag_is(tag, "OverSubscribe", 5) || tag_is(tag, "Shared", 2) {
            let (kind, count) = match value.split_once(':') {
                Some((k, c)) => (k, Some(c)),
                None => (value, None),
            };
            let upper = if !kind.is_empty() && tag_is(kind, "NO", 1) {
                "NO".to_string()
            } else if !kind.is_empty() && tag_is(kind, "EXCLUSIVE", 1) {
                "EXCLUSIVE".to_string()
            } else if !kind.is_empty() && (tag_is(kind, "YES", 1) || tag_is(kind, "FORCE", 1)) {
                let word = if tag_is(kind, "YES", 1) {
                    "YES"
                } else {
                    "FORCE"
                };
                format!("{word}:{}", count.unwrap_or("4"))
            } else {
                return Err(format!(
                    "Invalid input: {arg}\nAcceptable OverSubscribe values are NO, EXCLUSIVE, YES:#, and FORCE:#\n"
                ));
            };
            u.oversubscribe = Some(upper);
        } else if tag_is(tag, "PriorityJobFactor", 3) && tag.len() > "Priority".len() {
            u.priority_job_factor = Some(number("PriorityJobFactor")?);
        } else if tag_is(tag, "PriorityTier", 3) && tag.len() > "Priority".len() {
            u.priority_tier = Some(number("PriorityTier")?);
        } else if tag_is(tag, "Priority", 3) {
            let n = number("Priority")?;
            u.priority_tier = Some(n);
            u.priority_job_factor = Some(n);
        } else if tag_is(tag, "State", 2) {
            let state = ["INACTIVE", "DOWN", "UP", "DRAIN"]
                .into_iter()
                .find(|s| !value.is_empty() && tag_is(value, s, 1))
                .ok_or_else(|| {
                    format!(
                        "Invalid input: {arg}\nAcceptable State values are UP, DOWN, DRAIN and INACTIVE\n"
                    )
                })?;
            u.state = Some(state.to_string());
        } else if tag_is(tag, "Nodes", 1) {
            u.nodes = Some(if value.is_empty() {
                Vec::new()
            } else {
                hostlist::expand(value).map_err(|_| bad())?
            });
        } else if tag_is(tag, "AllowGroups", 6) {
            u.allow_groups = Some(all_or_list(value));
        } else if tag_is(tag, "AllowAccounts", 6) {
            u.allow_accounts = Some(all_or_list(value));
        } else if tag_is(tag, "AllowQos", 6) {
            u.other.push(("AllowQos".into(), value.to_string()));
        } else if tag_is(tag, "DenyAccounts", 5) {
            u.other.push(("DenyAccounts".into(), value.to_string()));
        } else if tag_is(tag, "DenyQos", 5) {
            u.other.push(("DenyQos".into(), value.to_string()));
        } else {
            return Err(not_supported(arg));
        }
    }
    if changes == 0 {
        return Err("No changes specified\n".into());
    }
    Ok(u)
}

/// `scontrol reconfigure`: the controller reads its files again; prints
/// nothing when it did, Slurm's `slurm_reconfigure error: ...` when it
/// refused. What needs a restart is told on stderr (the controller's log
/// has it too).
fn cmd_reconfigure(s: &mut Session) -> CmdResult {
    let client = s.client("slurm_reconfigure error")?;
    match client.call(CtldRequest::Reconfigure) {
        Ok(CtldResponse::Reconfigured(report)) => {
            if !report.restart.is_empty() {
                use std::io::Write;
                let mut text = String::new();
                for line in &report.restart {
                    text.push_str(&format!(
                        "scontrol: warning: not applied, needs a restart of the controller: {line}\n"
                    ));
                }
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            Ok(String::new())
        }
        Ok(CtldResponse::ReconfigureRefused(why)) => {
            Err(fail(format!("slurm_reconfigure error: {why}")))
        }
        Ok(CtldResponse::Error(e)) => Err(fail(format!(
            "slurm_reconfigure error: {}",
            e.as_slurm_str()
        ))),
        Ok(other) => Err(fail(format!(
            "slurm_reconfigure error: unexpected answer {other:?}"
        ))),
        Err(e) => Err(fail(format!("slurm_reconfigure error: {e}"))),
    }
}

/// `scontrol shutdown [slurmctld|controller]`: the controller saves its
/// state and exits; without an argument the node daemons stop too.
fn cmd_shutdown(s: &mut Session, rest: &[String]) -> CmdResult {
    let req = match rest.first().map(|w| w.to_ascii_lowercase()) {
        None => CtldRequest::Shutdown,
        Some(w) if w == "slurmctld" || w == "controller" => CtldRequest::ShutdownController,
        Some(w) => return Err(fail(format!("invalid shutdown argument:{w}"))),
    };
    if rest.len() > 1 {
        return Err(fail("too many arguments for keyword:shutdown"));
    }
    let client = s.client("slurm_shutdown error")?;
    client
        .call_ok(req)
        .map_err(|e| fail(format!("slurm_shutdown error: {e}")))?;
    Ok(String::new())
}

/// `scontrol create PartitionName=NAME ...` (also `create partition
/// PartitionName=NAME ...`).
fn cmd_create(s: &mut Session, rest: &[String]) -> CmdResult {
    let Some(first) = rest.first() else {
        return Err(fail("too few arguments for keyword:create"));
    };
    let words: &[String] = if !first.contains('=') && tag_is(first, "partition", 3) {
        &rest[1..]
    } else {
        rest
    };
    let is_part = words
        .first()
        .and_then(|w| w.split_once('='))
        .is_some_and(|(t, _)| tag_is(t, "PartitionName", 2));
    if !is_part {
        return Err(fail(format!("Invalid creation entity: {first}")));
    }
    let u = match parse_partition_options(words) {
        Ok(u) => u,
        Err(e) if e == "No changes specified\n" => return Err(fail("No parameters specified")),
        Err(e) => return Err(Failure::stderr(e)),
    };
    if u.name.eq_ignore_ascii_case("default") {
        return Err(fail("PartitionName cannot be \"DEFAULT\"."));
    }
    let client = s.client("Error creating the partition")?;
    client
        .call_ok(CtldRequest::CreatePartition(Box::new(u)))
        .map_err(|e| fail(format!("Error creating the partition: {e}")))?;
    Ok(String::new())
}

/// `scontrol delete PartitionName=NAME` (also `delete partition NAME`):
/// refused while jobs use it (`Partition is in use`).
fn cmd_delete(s: &mut Session, rest: &[String]) -> CmdResult {
    let Some(first) = rest.first() else {
        return Err(fail("too few arguments for keyword:delete"));
    };
    let (tag, name, shown) = match first.split_once('=') {
        Some((t, v)) => (t.to_string(), v.to_string(), first.clone()),
        None => match rest.get(1) {
            Some(v) => (first.clone(), v.clone(), first.clone()),
            None => {
                return Err(fail(
                    "Proper format is 'delete Partition=p' or 'delete Reservation=r'",
                ))
            }
        },
    };
    if !tag_is(&tag, "PartitionName", 3) {
        return Err(fail(format!("Invalid deletion entity: {first}")));
    }
    let client = s.client("delete_partition")?;
    client
        .call_ok(CtldRequest::DeletePartition { name })
        .map_err(|e| fail(format!("delete_partition {shown}: {e}")))?;
    Ok(String::new())
}

/// `scontrol top JOB_LIST`: each job first among its user's pending jobs
/// of the same partitions, account and QOS. Real scontrol 22.05 prints
/// nothing on success and `<error> for job <the list as typed>` on a
/// failure (`Job is no longer pending execution for job 19,20`).
fn cmd_top(s: &mut Session, rest: &[String]) -> CmdResult {
    let Some(list) = rest.first() else {
        return Err(fail("too few arguments for keyword:top"));
    };
    let mut ids = Vec::new();
    for text in split_job_list(list) {
        match text.parse::<u32>() {
            Ok(id) => ids.push(JobId(id)),
            Err(_) => return Err(fail(format!("Invalid job id specified for job {list}"))),
        }
    }
    let client = s.client("slurm_top_job error")?;
    for id in ids {
        client
            .call_ok(CtldRequest::Top { job_id: id })
            .map_err(|e| fail(format!("{e} for job {list}")))?;
    }
    Ok(String::new())
}

/// `scontrol notify JOB MESSAGE...`: real scontrol 22.05 says `job notify
/// failure: <error>` (exit 1) for a job that does not run or is unknown.
fn cmd_notify(s: &mut Session, rest: &[String]) -> CmdResult {
    if rest.len() < 2 {
        return Err(fail("too few arguments for keyword:notify"));
    }
    let Ok(id) = rest[0].parse::<u32>() else {
        return Err(fail("job notify failure: Invalid job id specified"));
    };
    let message = rest[1..].join(" ");
    s.client("job notify failure")?
        .call_ok(CtldRequest::Notify {
            job_id: JobId(id),
            message,
        })
        .map_err(|e| fail(format!("job notify failure: {e}")))?;
    Ok(String::new())
}

/// `scontrol token [username=U] [lifespan=S]`: a JWT minted by the
/// controller (`AuthAltTypes=auth/jwt`), printed as `SLURM_JWT=...` as real
/// scontrol 22.05 prints it. Only root and SlurmUser may name another user.
fn cmd_token(s: &mut Session, rest: &[String]) -> CmdResult {
    let mut username = None;
    let mut lifespan = None;
    for word in rest {
        let (key, value) = word.split_once('=').unwrap_or((word.as_str(), ""));
        match key.to_ascii_lowercase().as_str() {
            "username" if !value.is_empty() => username = Some(value.to_string()),
            "lifespan" => match value.parse::<u64>() {
                Ok(n) if n > 0 => lifespan = Some(n),
                _ => return Err(fail(format!("Invalid lifespan: {value}"))),
            },
            _ => return Err(fail(format!("Invalid parameter: {word}"))),
        }
    }
    match s
        .client("Unable to fetch token")?
        .call(CtldRequest::Token { username, lifespan })
    {
        Ok(CtldResponse::Token(token)) => Ok(format!("SLURM_JWT={token}\n")),
        Ok(CtldResponse::Error(e)) => {
            Err(fail(format!("Unable to fetch token: {}", e.as_slurm_str())))
        }
        Ok(_) => Err(fail("Unable to fetch token: Unexpected message received")),
        Err(e) => Err(fail(format!("Unable to fetch token: {e}"))),
    }
}

/// `scontrol listpids`' header (real scontrol 22.05).
const LISTPIDS_HEADER: &str = "PID      JOBID    STEPID   LOCALID GLOBALID\n";

/// One `scontrol listpids` line: `-` for the ids of a process a task
/// started.
pub fn listpids_line(p: &proto::JobProcess) -> String {
    let id = |v: Option<u32>| v.map_or_else(|| "-".to_string(), |n| n.to_string());
    format!(
        "{:<8} {:<8} {:<8} {:<7} {:<8}\n",
        p.pid,
        p.job_id.0,
        p.step,
        id(p.local_id),
        id(p.global_id)
    )
}

/// `scontrol listpids [JOB[.STEP]] [NODENAME]`: the processes of the jobs
/// on this host's node (or the one named), asked of its node daemon, as
/// Slurm asks the local slurmd. With none found, real scontrol 22.05
/// prints the header, then `No job steps exist on this node.` (or `JobId=7
/// does not exist on node <node>.`) on stderr, and exits 1.
fn cmd_listpids(s: &mut Session, rest: &[String]) -> CmdResult {
    let (job_id, step_id) = match rest.first().map(String::as_str) {
        None | Some("*") => (None, None),
        Some(spec) => {
            let (job, step) = match spec.split_once('.') {
                Some((j, st)) => (j, Some(st)),
                None => (spec, None),
            };
            let Ok(job) = job.parse::<u32>() else {
                return Err(fail(format!("\"{spec}\" does not look like a jobid")));
            };
            let step = match step.map(str::parse::<u32>) {
                None => None,
                Some(Ok(n)) => Some(n),
                Some(Err(_)) => {
                    return Err(fail(format!("\"{spec}\" does not look like a stepid")))
                }
            };
            (Some(JobId(job)), step)
        }
    };
    let client = s.client("slurm_load_node error")?;
    let nodes = client
        .nodes()
        .map_err(|e| fail(format!("slurm_load_node error: {e}")))?;
    let host = client.identity().host.clone();
    let short = host.split('.').next().unwrap_or(&host).to_string();
    let node = match rest.get(1) {
        Some(name) => nodes.iter().find(|n| n.name == *name),
        None => nodes
            .iter()
            .find(|n| n.name == short || n.hostname == host || n.hostname == short),
    };
    let rows = match node {
        Some(n) => client
            .node_pids(
                &format!("{}:{}", n.addr, n.port),
                proto::NodeRequest::ListPids { job_id, step_id },
            )
            .map_err(|e| fail(format!("slurm_list_pids error: {e}")))?,
        None => Vec::new(),
    };
    if rows.is_empty() {
        let node_name = node.map_or("(null)", |n| n.name.as_str());
        return Err(Failure {
            stdout: LISTPIDS_HEADER.to_string(),
            stderr: match job_id {
                Some(id) => format!("JobId={id} does not exist on node {node_name}.\n"),
                None => "No job steps exist on this node.\n".to_string(),
            },
            status: 1,
        });
    }
    let mut out = LISTPIDS_HEADER.to_string();
    for p in &rows {
        out.push_str(&listpids_line(p));
    }
    Ok(out)
}

fn cmd_job_action(s: &mut Session, cmd: &str, rest: &[String]) -> CmdResult {
    let ids: Vec<String> = rest.iter().flat_map(|w| split_job_list(w)).collect();
    if ids.is_empty() {
        return Err(fail(format!("too few arguments for keyword:{cmd}")));
    }
    let quiet = s.quiet;
    let client = s.client(&format!("slurm_{cmd} error"))?;
    let mut errors = String::new();
    let mut failed = false;
    let mut last_error = None;
    for text in ids {
        let Some((job_id, tasks)) = parse_job_id(&text) else {
            errors.push_str(&format!("Invalid job id specified for job {text}\n"));
            continue;
        };
        let req = match cmd {
            "hold" => CtldRequest::Hold {
                job_id,
                user: false,
                tasks,
            },
            "uhold" => CtldRequest::Hold {
                job_id,
                user: true,
                tasks,
            },
            "release" => CtldRequest::Release { job_id, tasks },
            "suspend" => CtldRequest::Suspend { job_id, tasks },
            "resume" => CtldRequest::Resume { job_id, tasks },
            "requeue" => CtldRequest::Requeue {
                job_id,
                hold: false,
                tasks,
            },
            _ => CtldRequest::Requeue {
                job_id,
                hold: true,
                tasks,
            },
        };
        if let Err(e) = client.call_ok(req) {
            failed = true;
            if !quiet {
                errors.push_str(&format!("{e} for job {text}\n"));
            }
            last_error = Some(e);
        }
    }
    // Slurm's hold, uhold and release end a failure with the last error
    // once more (real scontrol 22.05: "slurm_suspend error: Invalid job id
    // specified" after "Invalid job id specified for job 999").
    if let Some(e) = last_error.filter(|_| !quiet && matches!(cmd, "hold" | "uhold" | "release")) {
        errors.push_str(&format!("slurm_suspend error: {e}\n"));
    }
    if failed || !errors.is_empty() {
        Err(Failure::stderr(errors))
    } else {
        Ok(String::new())
    }
}

const USAGE: &str = "\
Usage: scontrol [-a|--all] [-d|--details] [-h|--help] [-M|--clusters=names]
                [-o|--oneliner] [-Q|--quiet] [-v|--verbose] [-V|--version]
                [<COMMAND>]
";

const HELP: &str = "\
scontrol [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -a or --all: equivalent to \"all\" command
     -d or --details: equivalent to \"details\" command
     -h or --help: equivalent to \"help\" command
     -M or --clusters: equivalent to \"cluster\" command
     -o or --oneliner: equivalent to \"oneliner\" command
     -Q or --quiet: equivalent to \"quiet\" command
     -v or --verbose: equivalent to \"verbose\" command
     -V or --version: equivalent to \"version\" command

  <keyword> may be omitted from the execute line and scontrol will execute
  in interactive mode. It will process commands as entered until explicitly
  terminated.

    Valid <COMMAND> values are:
     cancel_reboot <NodeList> cancel pending reboot on nodes.
     create <SPECIFICATIONS>  create a new partition (PartitionName=...).
     delete <SPECIFICATIONS>  delete the specified partition
                              (PartitionName=<name>, or partition <name>).
     exit                     terminate scontrol
     help                     print this description of use.
     hold <job_list>          prevent specified job from starting.
     listpids [<job_id>[.<step>]] [<node>]
                              list the processes of a job (or of every job)
                              on this host or on the named node.
     notify <job_id> <msg>    write a message into a running job's stderr.
     token [lifespan=S] [username=U]  print a JWT for the REST API.
     ping                     print status of slurmctld daemons.
     quit                     terminate this command.
     reboot [ASAP] [nextstate=RESUME|DOWN] [reason=<reason>] <ALL|NodeList>
                              reboot the nodes once they are idle (ASAP:
                              drain them first).
     reconfigure              re-read the configuration files; what a
                              running controller cannot change is told.
     release <job_list>       permit specified job to start.
     requeue <job_id>         re-queue a batch job.
     requeuehold <job_id>     re-queue and hold a batch job.
     resume <job_list>        resume previously suspended job.
     show <ENTITY> [<ID>]     display state of identified entity, default
                              is all records.
     shutdown <OPTS>          shutdown slurm controller and node daemons
                              (\"slurmctld\": the controller only).
     suspend <job_list>       suspend specified job (see resume).
     top <job_list>           put the jobs first among their user's pending
                              jobs.
     uhold <job_list>         place user hold on specified job.
     update <SPECIFICATIONS>  update job, node or partition configuration.
     version                  display tool version number.

  <ENTITY> may be \"config\", \"hostnames\", \"hostlist\", \"hostlistsorted\",
       \"job\", \"licenses\", \"node\" or \"partition\".

  <SPECIFICATIONS> are specified in the same format as the configuration
  file: NodeName=<hostlist> State=DRAIN|DOWN|RESUME|UNDRAIN|IDLE Reason=<text>,
  or JobId=<id> followed by TimeLimit=, Partition=, NumNodes=, NumTasks=,
  Features=, JobName=, Comment=, Nice=, ReqNodeList=, ExcNodeList=,
  Account=, QOS=, Priority=, MinMemoryNode=, MinMemoryCPU=, Gres=,
  Dependency=, StartTime= or Requeue=, or PartitionName=<name> followed by
  Nodes=, State=UP|DOWN|DRAIN|INACTIVE, MaxTime=, DefaultTime=, MaxNodes=,
  MinNodes=, Default=, Priority=, PriorityTier=, PriorityJobFactor=,
  OverSubscribe=, AllowAccounts=, DenyAccounts=, AllowGroups=, AllowQos=,
  DenyQos=, RootOnly= or DisableRootJobs=.
";

/// Splits an interactive line into words, honouring double and single quotes.
fn split_line(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Runs `scontrol`.
pub fn main(args: Vec<String>) -> i32 {
    let items = match getopt::parse(OPTS, &args, false) {
        Ok(items) => items,
        Err(e) => {
            eprint!("{}", common::usage_error("scontrol", &e.message()));
            return 1;
        }
    };
    let mut session = Session {
        client: None,
        opts: ShowOpts::default(),
        quiet: false,
    };
    let mut words = Vec::new();
    for item in items {
        match item {
            Item::Positional(w) => words.push(w),
            Item::Opt("help", _) => {
                common::print_stdout(HELP);
                return 0;
            }
            Item::Opt("usage", _) => {
                common::print_stdout(USAGE);
                return 0;
            }
            Item::Opt("version", _) => {
                common::print_stdout(&common::version_line());
                return 0;
            }
            Item::Opt("details", _) => session.opts.details = true,
            Item::Opt("oneliner", _) => session.opts.oneliner = true,
            Item::Opt("quiet", _) => session.quiet = true,
            Item::Opt(_, _) => {}
        }
    }
    if !words.is_empty() {
        return execute(&mut session, &words);
    }
    // Interactive mode: one command per line until quit/exit or end of input.
    let mut rc = 0;
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let words = split_line(&line);
        if let Some(first) = words.first() {
            if matches!(match_word(first, COMMANDS), Some("quit" | "exit")) {
                break;
            }
        }
        rc = execute(&mut session, &words);
    }
    rc
}

fn execute(session: &mut Session, words: &[String]) -> i32 {
    match run_command(session, words) {
        Ok(out) => {
            common::print_stdout(&out);
            0
        }
        Err(Failure {
            stdout,
            stderr,
            status,
        }) => {
            use std::io::Write;
            common::print_stdout(&stdout);
            let _ = std::io::stderr().write_all(stderr.as_bytes());
            status
        }
    }
}

pub mod reboot;
pub mod resv;
#[cfg(test)]
mod tests;
