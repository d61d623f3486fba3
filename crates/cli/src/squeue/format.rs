//! squeue's output formats: the `-o` percent codes and the `-O` field names,
//! how each field is printed, and how rows are sorted (`-S`).
//!
//! Width rules follow `squeue(1)`: `%.Nx` right-justifies in N columns and
//! `%Nx` left-justifies. A left-justified value longer than N is cut to N;
//! a right-justified one is cut only for text fields (names, states,
//! reasons), never for times and node lists (`365-00:00:00` in a `%.9l`
//! column is printed whole, as in `squeue -l`).

use model::units::{format_duration, format_memory_mb, format_time_limit};
use model::{JobId, JobState, PendingReason, TimeLimit, Timestamp};
use proto::{JobInfo, JobRows, PackedRow};
use std::cmp::Ordering;

use crate::common::fmt_time;

/// What one column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// `%a`.
    Account,
    /// `%A`: the job id alone.
    JobIdRaw,
    /// `%b`: TRES per node.
    TresPerNode,
    /// `%B`: the host running the batch script.
    BatchHost,
    /// `%c`: minimum CPUs per node.
    MinCpus,
    /// `%C`: CPUs.
    NumCpus,
    /// `%d`: minimum temporary disk.
    MinTmpDisk,
    /// `%D`: nodes.
    NumNodes,
    /// `%e`: end time.
    EndTime,
    /// `%E`: dependencies.
    Dependency,
    /// `%f`: features.
    Features,
    /// `%F`: array job id.
    ArrayJobId,
    /// `%g`: group name.
    GroupName,
    /// `%G`: group id.
    GroupId,
    /// `%h`: OverSubscribe.
    OverSubscribe,
    /// `%H`: sockets per node.
    Sockets,
    /// `%i`: job id (array form for arrays).
    JobId,
    /// `%I`: cores per socket.
    Cores,
    /// `%j`: name.
    Name,
    /// `%J`: threads per core.
    Threads,
    /// `%k`: comment.
    Comment,
    /// `%K`: array task id.
    ArrayTaskId,
    /// `%l`: time limit.
    TimeLimit,
    /// `%L`: time left.
    TimeLeft,
    /// `%m`: minimum memory.
    MinMemory,
    /// `%M`: time used.
    TimeUsed,
    /// `%n`: requested nodes.
    ReqNodes,
    /// `%N`: allocated nodes.
    NodeList,
    /// `%o`: command.
    Command,
    /// `%O`: contiguous.
    Contiguous,
    /// `%p`: priority as a fraction of the largest.
    Priority,
    /// `%P`: partition.
    Partition,
    /// `%q`: QOS.
    Qos,
    /// `%Q`: priority as an integer.
    PriorityLong,
    /// `%r`: reason.
    Reason,
    /// `%R`: reason for waiting or ended jobs, node list otherwise.
    ReasonList,
    /// `%S`: start time.
    StartTime,
    /// `%t`: compact state.
    StateCompact,
    /// `%T`: state.
    State,
    /// `%u`: user name.
    UserName,
    /// `%U`: user id.
    UserId,
    /// `%v`: reservation.
    Reservation,
    /// `%V`: submit time.
    SubmitTime,
    /// `%w`: wckey.
    Wckey,
    /// `%W`: licenses.
    Licenses,
    /// `%x`: excluded nodes.
    ExcNodes,
    /// `%X`: core specialisation.
    CoreSpec,
    /// `%y`: nice.
    Nice,
    /// `%Y`: nodes planned for a pending job.
    SchedNodes,
    /// `%z`: sockets:cores:threads.
    Sct,
    /// `%Z`: working directory.
    WorkDir,
    /// `-O NumTasks`.
    NumTasks,
    /// `-O cpus-per-task`.
    CpusPerTask,
    /// `-O EligibleTime`.
    EligibleTime,
    /// `-O PendingTime`.
    PendingTime,
    /// `-O STDOUT`.
    Stdout,
    /// `-O STDERR`.
    Stderr,
    /// `-O STDIN`.
    Stdin,
    /// `-O tres-alloc`.
    TresAlloc,
    /// `-O Requeue`.
    Requeue,
    /// `-O Restartcnt`.
    RestartCnt,
    /// `-O LastSchedEval`.
    LastSchedEval,
    /// `-O Cluster` (no federation yet: `(null)`).
    Cluster,
    /// `%s`: the node selection plugin's data, which Slurm 22.05's squeue
    /// prints empty, under an empty header, for jobs.
    SelectInfo,
    /// A `%x` code squeue does not know: printed as typed.
    Invalid,
}

/// One column: what, how wide, which side, and the text after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// What it shows.
    pub kind: FieldKind,
    /// Column width; 0 prints the value as is.
    pub width: usize,
    /// Right-justify.
    pub right: bool,
    /// Literal text printed after the value.
    pub suffix: String,
}

/// A parsed format: literal text before the first field, then the fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Format {
    /// Text printed at the start of every line.
    pub prefix: String,
    /// The columns.
    pub fields: Vec<Field>,
}

/// The `-o` letters and what they show.
fn kind_for_code(c: char) -> Option<FieldKind> {
    use FieldKind::*;
    Some(match c {
        'a' => Account,
        'A' => JobIdRaw,
        'b' => TresPerNode,
        'B' => BatchHost,
        'c' => MinCpus,
        'C' => NumCpus,
        'd' => MinTmpDisk,
        'D' => NumNodes,
        'e' => EndTime,
        'E' => Dependency,
        'f' => Features,
        'F' => ArrayJobId,
        'g' => GroupName,
        'G' => GroupId,
        'h' => OverSubscribe,
        'H' => Sockets,
        'i' => JobId,
        'I' => Cores,
        'j' => Name,
        'J' => Threads,
        'k' => Comment,
        'K' => ArrayTaskId,
        'l' => TimeLimit,
        'L' => TimeLeft,
        'm' => MinMemory,
        'M' => TimeUsed,
        'n' => ReqNodes,
        'N' => NodeList,
        'o' => Command,
        'O' => Contiguous,
        'p' => Priority,
        'P' => Partition,
        'q' => Qos,
        'Q' => PriorityLong,
        'r' => Reason,
        'R' => ReasonList,
        's' => SelectInfo,
        'S' => StartTime,
        't' => StateCompact,
        'T' => State,
        'u' => UserName,
        'U' => UserId,
        'v' => Reservation,
        'V' => SubmitTime,
        'w' => Wckey,
        'W' => Licenses,
        'x' => ExcNodes,
        'X' => CoreSpec,
        'y' => Nice,
        'Y' => SchedNodes,
        'z' => Sct,
        'Z' => WorkDir,
        _ => return None,
    })
}

/// The `-O` names (case-insensitive), per `squeue(1)`.
const LONG_NAMES: &[(&str, FieldKind)] = &[
    ("Account", FieldKind::Account),
    ("ArrayJobID", FieldKind::ArrayJobId),
    ("ArrayTaskID", FieldKind::ArrayTaskId),
    ("BatchHost", FieldKind::BatchHost),
    ("Cluster", FieldKind::Cluster),
    ("Command", FieldKind::Command),
    ("Comment", FieldKind::Comment),
    ("Contiguous", FieldKind::Contiguous),
    ("Cores", FieldKind::Cores),
    ("CoreSpec", FieldKind::CoreSpec),
    ("cpus-per-task", FieldKind::CpusPerTask),
    ("Dependency", FieldKind::Dependency),
    ("EligibleTime", FieldKind::EligibleTime),
    ("EndTime", FieldKind::EndTime),
    ("ExcNodes", FieldKind::ExcNodes),
    ("Feature", FieldKind::Features),
    ("GroupID", FieldKind::GroupId),
    ("GroupName", FieldKind::GroupName),
    ("JobArrayID", FieldKind::JobId),
    ("JobID", FieldKind::JobIdRaw),
    ("LastSchedEval", FieldKind::LastSchedEval),
    ("Licenses", FieldKind::Licenses),
    ("MinCpus", FieldKind::MinCpus),
    ("MinMemory", FieldKind::MinMemory),
    ("MinTmpDisk", FieldKind::MinTmpDisk),
    ("Name", FieldKind::Name),
    ("Nice", FieldKind::Nice),
    ("NodeList", FieldKind::NodeList),
    ("NumCPUs", FieldKind::NumCpus),
    ("NumNodes", FieldKind::NumNodes),
    ("NumTasks", FieldKind::NumTasks),
    ("OverSubscribe", FieldKind::OverSubscribe),
    ("Partition", FieldKind::Partition),
    ("PendingTime", FieldKind::PendingTime),
    ("Priority", FieldKind::Priority),
    ("PriorityLong", FieldKind::PriorityLong),
    ("QOS", FieldKind::Qos),
    ("Reason", FieldKind::Reason),
    ("ReasonList", FieldKind::ReasonList),
    ("ReqNodes", FieldKind::ReqNodes),
    ("Requeue", FieldKind::Requeue),
    ("Reservation", FieldKind::Reservation),
    ("Restartcnt", FieldKind::RestartCnt),
    ("SchedNodes", FieldKind::SchedNodes),
    ("SCT", FieldKind::Sct),
    ("Sockets", FieldKind::Sockets),
    ("StartTime", FieldKind::StartTime),
    ("State", FieldKind::State),
    ("StateCompact", FieldKind::StateCompact),
    ("STDERR", FieldKind::Stderr),
    ("STDIN", FieldKind::Stdin),
    ("STDOUT", FieldKind::Stdout),
    ("SubmitTime", FieldKind::SubmitTime),
    ("Threads", FieldKind::Threads),
    ("TimeLeft", FieldKind::TimeLeft),
    ("TimeLimit", FieldKind::TimeLimit),
    ("TimeUsed", FieldKind::TimeUsed),
    ("tres-alloc", FieldKind::TresAlloc),
    ("tres-per-node", FieldKind::TresPerNode),
    ("UserID", FieldKind::UserId),
    ("UserName", FieldKind::UserName),
    ("WCKey", FieldKind::Wckey),
    ("WorkDir", FieldKind::WorkDir),
];

/// Width of an `-O` field given without `:size`, per `squeue(1)`.
const DEFAULT_LONG_WIDTH: usize = 20;

/// Parses an `-o` format (`"%.18i %.9P %j"`). Unknown letters are kept
/// as [`FieldKind::Invalid`] and reported in the second value, as squeue
/// reports them on stderr and goes on.
pub fn parse_percent(format: &str) -> (Format, Vec<String>) {
    if format == "%all" {
        return parse_percent(&all_format());
    }
    let mut out = Format::default();
    let mut errors = Vec::new();
    let (prefix, rest) = match format.find('%') {
        Some(i) => (&format[..i], &format[i..]),
        None => (format, ""),
    };
    out.prefix = prefix.to_string();
    // Each token runs from one '%' to the next; empty tokens ("%%") vanish,
    // as with strtok.
    for token in rest.split('%').filter(|t| !t.is_empty()) {
        let mut chars = token.char_indices().peekable();
        let mut right = false;
        if let Some(&(_, c)) = chars.peek() {
            if c == '.' {
                right = true;
                chars.next();
            } else if c == '-' {
                chars.next();
            }
        }
        let mut width = 0usize;
        while let Some(&(_, c)) = chars.peek() {
            match c.to_digit(10) {
                Some(d) => {
                    width = width.saturating_mul(10).saturating_add(d as usize);
                    chars.next();
                }
                None => break,
            }
        }
        let Some((pos, code)) = chars.next() else {
            continue;
        };
        let suffix = token[pos + code.len_utf8()..].to_string();
        match kind_for_code(code) {
            Some(kind) => out.fields.push(Field {
                kind,
                width,
                right,
                suffix,
            }),
            None => {
                errors.push(format!("Invalid job format specification: {code}"));
                out.fields.push(Field {
                    kind: FieldKind::Invalid,
                    width,
                    right,
                    suffix: format!("%{token}"),
                });
            }
        }
    }
    (out, errors)
}

/// What `-o %all` stands for: every field letter, `a` to `z` then `A` to
/// `Z`, separated by `|` (as Slurm's squeue builds it).
fn all_format() -> String {
    ('a'..='z')
        .chain('A'..='Z')
        .map(|c| format!("%{c}"))
        .collect::<Vec<_>>()
        .join("|")
}

/// Parses an `-O` format: `Name[:[.][size][suffix]]`, comma separated.
/// A field without `:` is 20 columns wide; `Name:` alone is unpadded.
pub fn parse_long(format: &str) -> Result<Format, String> {
    let mut out = Format::default();
    for token in format.split(',').filter(|t| !t.is_empty()) {
        let (name, spec) = match token.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (token, None),
        };
        let kind = LONG_NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, k)| *k)
            .ok_or_else(|| format!("Invalid job format specification: {name}"))?;
        let (width, right, suffix) = match spec {
            None => (DEFAULT_LONG_WIDTH, false, String::new()),
            Some(spec) => {
                let (right, spec) = match spec.strip_prefix('.') {
                    Some(s) => (true, s),
                    None => (false, spec),
                };
                let digits = spec.bytes().take_while(u8::is_ascii_digit).count();
                let width = spec[..digits].parse().unwrap_or(0);
                (width, right, spec[digits..].to_string())
            }
        };
        out.fields.push(Field {
            kind,
            width,
            right,
            suffix,
        });
    }
    Ok(out)
}

/// Pads or cuts `s` as squeue does. `cut` applies to right-justified
/// values; left-justified ones are always cut to the width.
fn put(out: &mut String, s: &str, width: usize, right: bool, cut: bool) {
    if width == 0 {
        out.push_str(s);
        return;
    }
    // The byte length of the first `width` characters, and their count.
    let (shown_len, shown_n) = if s.is_ascii() {
        let n = s.len().min(width);
        (n, n)
    } else {
        match s.char_indices().nth(width) {
            Some((i, _)) => (i, width),
            None => (s.len(), s.chars().count()),
        }
    };
    let pad = |out: &mut String, mut n: usize| {
        const SPACES: &str = "                                                                ";
        while n > 0 {
            let k = n.min(SPACES.len());
            out.push_str(&SPACES[..k]);
            n -= k;
        }
    };
    if right {
        if cut || shown_len == s.len() {
            pad(out, width - shown_n);
            out.push_str(&s[..shown_len]);
        } else {
            out.push_str(s);
        }
    } else {
        out.push_str(&s[..shown_len]);
        pad(out, width - shown_n);
    }
}

/// The header text of a column.
fn header(kind: FieldKind) -> &'static str {
    use FieldKind::*;
    match kind {
        Account => "ACCOUNT",
        JobIdRaw | JobId => "JOBID",
        TresPerNode => "TRES_PER_NODE",
        BatchHost => "EXEC_HOST",
        MinCpus => "MIN_CPUS",
        NumCpus => "CPUS",
        MinTmpDisk => "MIN_TMP_DISK",
        NumNodes => "NODES",
        EndTime => "END_TIME",
        Dependency => "DEPENDENCY",
        Features => "FEATURES",
        ArrayJobId => "ARRAY_JOB_ID",
        GroupName | GroupId => "GROUP",
        OverSubscribe => "OVER_SUBSCRIBE",
        Sockets => "SOCKETS_PER_NODE",
        Cores => "CORES_PER_SOCKET",
        Name => "NAME",
        Threads => "THREADS_PER_CORE",
        Comment => "COMMENT",
        ArrayTaskId => "ARRAY_TASK_ID",
        TimeLimit => "TIME_LIMIT",
        TimeLeft => "TIME_LEFT",
        MinMemory => "MIN_MEMORY",
        TimeUsed => "TIME",
        ReqNodes => "REQ_NODES",
        NodeList => "NODELIST",
        Command => "COMMAND",
        Contiguous => "CONTIGUOUS",
        Priority | PriorityLong => "PRIORITY",
        Partition => "PARTITION",
        Qos => "QOS",
        Reason => "REASON",
        ReasonList => "NODELIST(REASON)",
        StartTime => "START_TIME",
        StateCompact => "ST",
        State => "STATE",
        UserName => "USER",
        UserId => "UID",
        Reservation => "RESERVATION",
        SubmitTime => "SUBMIT_TIME",
        Wckey => "WCKEY",
        Licenses => "LICENSES",
        ExcNodes => "EXC_NODES",
        CoreSpec => "CORE_SPEC",
        Nice => "NICE",
        SchedNodes => "SCHEDNODES",
        Sct => "S:C:T",
        WorkDir => "WORK_DIR",
        NumTasks => "TASKS",
        CpusPerTask => "CPUS_PER_TASK",
        EligibleTime => "ELIGIBLE_TIME",
        PendingTime => "PENDING_TIME",
        Stdout => "STDOUT",
        Stderr => "STDERR",
        Stdin => "STDIN",
        TresAlloc => "TRES_ALLOC",
        Requeue => "REQUEUE",
        RestartCnt => "RESTARTCNT",
        LastSchedEval => "LAST_SCHED_EVAL",
        Cluster => "CLUSTER",
        SelectInfo | Invalid => "",
    }
}

/// What squeue reads of a job: a full [`JobInfo`], or a compact row of
/// an answer to a `rows` query ([`RowView`]). The fields only the full
/// form carries come through [`JobView::full`]; squeue asks for rows only
/// when its format, sort keys and filters read none of them.
#[allow(missing_docs)] // Each is the `JobInfo` field of the same name.
pub trait JobView {
    fn job_id(&self) -> JobId;
    fn name(&self) -> &str;
    fn user(&self) -> &str;
    fn uid(&self) -> u32;
    fn group(&self) -> &str;
    fn gid(&self) -> u32;
    fn account(&self) -> &str;
    fn qos(&self) -> &str;
    fn partition(&self) -> &str;
    fn state(&self) -> JobState;
    fn completing(&self) -> bool;
    /// Running, its PrologSlurmctld not ended (CONFIGURING).
    fn configuring(&self) -> bool {
        false
    }
    fn reason(&self) -> PendingReason;
    fn priority(&self) -> u32;
    fn nice(&self) -> i32;
    fn submit_time(&self) -> Timestamp;
    fn eligible_time(&self) -> Timestamp;
    fn start_time(&self) -> Option<Timestamp>;
    fn end_time(&self) -> Option<Timestamp>;
    fn run_time(&self) -> u64;
    fn time_limit(&self) -> TimeLimit;
    fn num_nodes(&self) -> u32;
    fn num_cpus(&self) -> u32;
    fn num_tasks(&self) -> u32;
    fn cpus_per_task(&self) -> u32;
    fn mem_per_cpu(&self) -> Option<u64>;
    fn mem_per_node(&self) -> Option<u64>;
    fn exclusive(&self) -> bool;
    fn requeue(&self) -> bool;
    fn restarts(&self) -> u32;
    fn last_sched_eval(&self) -> Option<Timestamp>;
    fn array_job_id(&self) -> Option<u32>;
    fn array_task_id(&self) -> Option<u32>;
    fn array_task_str(&self) -> Option<&str>;
    fn array_max_tasks(&self) -> Option<u32>;
    /// How many allocated nodes, and the `i`th.
    fn node_count(&self) -> usize;
    fn node(&self, i: usize) -> &str;
    /// The planned nodes (`%Y`), as a hostlist ("" for none).
    fn sched_nodes_text(&self) -> String;
    /// The whole `JobInfo`, when this is one.
    fn full(&self) -> Option<&JobInfo>;
    /// The string-table index of a text field (`kind` one of the name,
    /// user, group, account, QOS and partition), for rows; None for a
    /// `JobInfo`, whose texts are not indexed.
    fn text_index(&self, _kind: FieldKind) -> Option<u32> {
        None
    }
    /// Asks the CPU to bring in what this job's line will read (a hint:
    /// nothing happens for a `JobInfo`).
    fn prefetch(&self) {}

    /// The allocated nodes, as a hostlist ("" for none).
    fn nodes_text(&self) -> String {
        let names: Vec<&str> = (0..self.node_count()).map(|i| self.node(i)).collect();
        nodes(&names)
    }

    /// `123`, `123_4`, or an array's pending tasks `123_[5-9%2]`, as
    /// [`JobInfo::display_id`].
    fn display_id(&self) -> String {
        match (
            self.array_job_id(),
            self.array_task_id(),
            self.array_task_str(),
        ) {
            (Some(a), Some(t), _) => format!("{a}_{t}"),
            // One task left: Slurm shows it as that task (`16_5`).
            (Some(a), None, Some(list)) if list.parse::<u32>().is_ok() => format!("{a}_{list}"),
            (Some(a), None, Some(list)) => match self.array_max_tasks() {
                Some(n) if n > 0 => format!("{a}_[{list}%{n}]"),
                _ => format!("{a}_[{list}]"),
            },
            _ => self.job_id().to_string(),
        }
    }
}

impl<T: JobView + ?Sized> JobView for &T {
    fn job_id(&self) -> JobId {
        (**self).job_id()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
    fn user(&self) -> &str {
        (**self).user()
    }
    fn uid(&self) -> u32 {
        (**self).uid()
    }
    fn group(&self) -> &str {
        (**self).group()
    }
    fn gid(&self) -> u32 {
        (**self).gid()
    }
    fn account(&self) -> &str {
        (**self).account()
    }
    fn qos(&self) -> &str {
        (**self).qos()
    }
    fn partition(&self) -> &str {
        (**self).partition()
    }
    fn state(&self) -> JobState {
        (**self).state()
    }
    fn completing(&self) -> bool {
        (**self).completing()
    }
    fn configuring(&self) -> bool {
        (**self).configuring()
    }
    fn reason(&self) -> PendingReason {
        (**self).reason()
    }
    fn priority(&self) -> u32 {
        (**self).priority()
    }
    fn nice(&self) -> i32 {
        (**self).nice()
    }
    fn submit_time(&self) -> Timestamp {
        (**self).submit_time()
    }
    fn eligible_time(&self) -> Timestamp {
        (**self).eligible_time()
    }
    fn start_time(&self) -> Option<Timestamp> {
        (**self).start_time()
    }
    fn end_time(&self) -> Option<Timestamp> {
        (**self).end_time()
    }
    fn run_time(&self) -> u64 {
        (**self).run_time()
    }
    fn time_limit(&self) -> TimeLimit {
        (**self).time_limit()
    }
    fn num_nodes(&self) -> u32 {
        (**self).num_nodes()
    }
    fn num_cpus(&self) -> u32 {
        (**self).num_cpus()
    }
    fn num_tasks(&self) -> u32 {
        (**self).num_tasks()
    }
    fn cpus_per_task(&self) -> u32 {
        (**self).cpus_per_task()
    }
    fn mem_per_cpu(&self) -> Option<u64> {
        (**self).mem_per_cpu()
    }
    fn mem_per_node(&self) -> Option<u64> {
        (**self).mem_per_node()
    }
    fn exclusive(&self) -> bool {
        (**self).exclusive()
    }
    fn requeue(&self) -> bool {
        (**self).requeue()
    }
    fn restarts(&self) -> u32 {
        (**self).restarts()
    }
    fn last_sched_eval(&self) -> Option<Timestamp> {
        (**self).last_sched_eval()
    }
    fn array_job_id(&self) -> Option<u32> {
        (**self).array_job_id()
    }
    fn array_task_id(&self) -> Option<u32> {
        (**self).array_task_id()
    }
    fn array_task_str(&self) -> Option<&str> {
        (**self).array_task_str()
    }
    fn array_max_tasks(&self) -> Option<u32> {
        (**self).array_max_tasks()
    }
    fn node_count(&self) -> usize {
        (**self).node_count()
    }
    fn node(&self, i: usize) -> &str {
        (**self).node(i)
    }
    fn sched_nodes_text(&self) -> String {
        (**self).sched_nodes_text()
    }
    fn full(&self) -> Option<&JobInfo> {
        (**self).full()
    }
    fn text_index(&self, kind: FieldKind) -> Option<u32> {
        (**self).text_index(kind)
    }
    fn prefetch(&self) {
        (**self).prefetch()
    }
    fn nodes_text(&self) -> String {
        (**self).nodes_text()
    }
    fn display_id(&self) -> String {
        (**self).display_id()
    }
}

impl JobView for JobInfo {
    fn job_id(&self) -> JobId {
        self.job_id
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn user(&self) -> &str {
        &self.user
    }
    fn uid(&self) -> u32 {
        self.uid
    }
    fn group(&self) -> &str {
        &self.group
    }
    fn gid(&self) -> u32 {
        self.gid
    }
    fn account(&self) -> &str {
        &self.account
    }
    fn qos(&self) -> &str {
        &self.qos
    }
    fn partition(&self) -> &str {
        &self.partition
    }
    fn state(&self) -> JobState {
        self.state
    }
    fn completing(&self) -> bool {
        self.completing
    }
    fn configuring(&self) -> bool {
        self.configuring
    }
    fn reason(&self) -> PendingReason {
        self.reason
    }
    fn priority(&self) -> u32 {
        self.priority
    }
    fn nice(&self) -> i32 {
        self.nice
    }
    fn submit_time(&self) -> Timestamp {
        self.submit_time
    }
    fn eligible_time(&self) -> Timestamp {
        self.eligible_time
    }
    fn start_time(&self) -> Option<Timestamp> {
        self.start_time
    }
    fn end_time(&self) -> Option<Timestamp> {
        self.end_time
    }
    fn run_time(&self) -> u64 {
        self.run_time
    }
    fn time_limit(&self) -> TimeLimit {
        self.time_limit
    }
    fn num_nodes(&self) -> u32 {
        self.num_nodes
    }
    fn num_cpus(&self) -> u32 {
        self.num_cpus
    }
    fn num_tasks(&self) -> u32 {
        self.num_tasks
    }
    fn cpus_per_task(&self) -> u32 {
        self.cpus_per_task
    }
    fn mem_per_cpu(&self) -> Option<u64> {
        self.mem_per_cpu
    }
    fn mem_per_node(&self) -> Option<u64> {
        self.mem_per_node
    }
    fn exclusive(&self) -> bool {
        self.exclusive
    }
    fn requeue(&self) -> bool {
        self.requeue
    }
    fn restarts(&self) -> u32 {
        self.restarts
    }
    fn last_sched_eval(&self) -> Option<Timestamp> {
        self.last_sched_eval
    }
    fn array_job_id(&self) -> Option<u32> {
        self.array_job_id
    }
    fn array_task_id(&self) -> Option<u32> {
        self.array_task_id
    }
    fn array_task_str(&self) -> Option<&str> {
        self.array_task_str.as_deref()
    }
    fn array_max_tasks(&self) -> Option<u32> {
        self.array_max_tasks
    }
    fn node_count(&self) -> usize {
        self.nodes.len()
    }
    fn node(&self, i: usize) -> &str {
        &self.nodes[i]
    }
    fn sched_nodes_text(&self) -> String {
        nodes(&self.sched_nodes)
    }
    fn full(&self) -> Option<&JobInfo> {
        Some(self)
    }
    fn nodes_text(&self) -> String {
        nodes(&self.nodes)
    }
}

/// A compact row with the answer whose string table it indexes.
#[derive(Clone, Copy, Debug)]
pub struct RowView<'a> {
    /// The row.
    pub row: &'a PackedRow,
    /// The answer it came in.
    pub rows: &'a JobRows,
}

impl RowView<'_> {
    fn text(&self, i: u32) -> &str {
        self.rows.text(i)
    }
}

impl JobView for RowView<'_> {
    fn job_id(&self) -> JobId {
        self.row.job_id
    }
    fn name(&self) -> &str {
        self.text(self.row.name)
    }
    fn user(&self) -> &str {
        self.text(self.row.user)
    }
    fn uid(&self) -> u32 {
        self.row.uid
    }
    fn group(&self) -> &str {
        self.text(self.row.group)
    }
    fn gid(&self) -> u32 {
        self.row.gid
    }
    fn account(&self) -> &str {
        self.text(self.row.account)
    }
    fn qos(&self) -> &str {
        self.text(self.row.qos)
    }
    fn partition(&self) -> &str {
        self.text(self.row.partition)
    }
    fn state(&self) -> JobState {
        self.row.state
    }
    fn completing(&self) -> bool {
        self.row.completing()
    }
    fn configuring(&self) -> bool {
        self.row.configuring()
    }
    fn reason(&self) -> PendingReason {
        self.row.reason
    }
    fn priority(&self) -> u32 {
        self.row.priority
    }
    fn nice(&self) -> i32 {
        self.row.nice
    }
    fn submit_time(&self) -> Timestamp {
        self.row.submit_time
    }
    fn eligible_time(&self) -> Timestamp {
        self.row.eligible_time
    }
    fn start_time(&self) -> Option<Timestamp> {
        self.row.start_time()
    }
    fn end_time(&self) -> Option<Timestamp> {
        self.row.end_time()
    }
    fn run_time(&self) -> u64 {
        self.row.run_time
    }
    fn time_limit(&self) -> TimeLimit {
        self.row.time_limit()
    }
    fn num_nodes(&self) -> u32 {
        self.row.num_nodes
    }
    fn num_cpus(&self) -> u32 {
        self.row.num_cpus
    }
    fn num_tasks(&self) -> u32 {
        self.row.num_tasks
    }
    fn cpus_per_task(&self) -> u32 {
        self.row.cpus_per_task
    }
    fn mem_per_cpu(&self) -> Option<u64> {
        self.row.mem_per_cpu()
    }
    fn mem_per_node(&self) -> Option<u64> {
        self.row.mem_per_node()
    }
    fn exclusive(&self) -> bool {
        self.row.exclusive()
    }
    fn requeue(&self) -> bool {
        self.row.requeue()
    }
    fn restarts(&self) -> u32 {
        self.row.restarts
    }
    fn last_sched_eval(&self) -> Option<Timestamp> {
        self.row.last_sched_eval()
    }
    fn array_job_id(&self) -> Option<u32> {
        self.row.array_job_id()
    }
    fn array_task_id(&self) -> Option<u32> {
        self.row.array_task_id()
    }
    fn array_task_str(&self) -> Option<&str> {
        self.row.array_task_str()
    }
    fn array_max_tasks(&self) -> Option<u32> {
        self.row.array_max_tasks()
    }
    fn node_count(&self) -> usize {
        self.row.nodes().len()
    }
    fn node(&self, i: usize) -> &str {
        self.text(self.row.nodes()[i])
    }
    fn sched_nodes_text(&self) -> String {
        let names: Vec<&str> = self
            .row
            .sched_nodes()
            .iter()
            .map(|i| self.text(*i))
            .collect();
        nodes(&names)
    }
    fn full(&self) -> Option<&JobInfo> {
        None
    }
    fn prefetch(&self) {
        proto::prefetch(self.row);
    }
    fn text_index(&self, kind: FieldKind) -> Option<u32> {
        use FieldKind as K;
        let r = self.row;
        match kind {
            K::Name => Some(r.name),
            K::UserName => Some(r.user),
            K::GroupName => Some(r.group),
            K::Account => Some(r.account),
            K::Qos => Some(r.qos),
            K::Partition => Some(r.partition),
            _ => None,
        }
    }
}

/// `squeue %T`: the COMPLETING flag wins over the base state, and
/// CONFIGURING over RUNNING.
pub fn state_long<J: JobView + ?Sized>(job: &J) -> &'static str {
    if job.completing() {
        "COMPLETING"
    } else if job.configuring() && job.state() == JobState::Running {
        "CONFIGURING"
    } else {
        job.state().as_slurm_str()
    }
}

/// `squeue %t`.
pub fn state_short<J: JobView + ?Sized>(job: &J) -> &'static str {
    if job.completing() {
        "CG"
    } else if job.configuring() && job.state() == JobState::Running {
        "CF"
    } else {
        job.state().as_short_str()
    }
}

/// squeue prints durations beyond a year as INVALID.
fn secs(s: u64) -> String {
    if s > 365 * 86_400 {
        "INVALID".to_string()
    } else {
        format_duration(s)
    }
}

fn time_or_na(t: Option<Timestamp>) -> String {
    match t {
        Some(t) if t != 0 => fmt_time(t),
        _ => "N/A".to_string(),
    }
}

fn or_null(s: Option<&str>) -> String {
    match s {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "(null)".to_string(),
    }
}

fn nodes(list: &[impl AsRef<str>]) -> String {
    if list.is_empty() {
        String::new()
    } else {
        hostlist::compress(list)
    }
}

/// Seconds a job has run, as squeue shows it (0 while pending).
pub fn time_used<J: JobView + ?Sized>(job: &J) -> u64 {
    if job.state() == JobState::Pending {
        0
    } else {
        job.run_time()
    }
}

/// Whether `%R` shows the reason rather than the nodes.
fn shows_reason<J: JobView + ?Sized>(job: &J) -> bool {
    !job.completing()
        && matches!(
            job.state(),
            JobState::Pending | JobState::Timeout | JobState::Failed | JobState::NodeFail
        )
}

/// The fields only a full `JobInfo` carries: those of `job`, or for a
/// compact row the empty ones of a brief `JobInfo` (squeue asks for rows
/// only when it reads none of them).
fn full<J: JobView + ?Sized>(job: &J) -> &JobInfo {
    static BRIEF: std::sync::OnceLock<JobInfo> = std::sync::OnceLock::new();
    job.full()
        .unwrap_or_else(|| BRIEF.get_or_init(JobInfo::default))
}

/// The value of one field for one job, and whether a right-justified
/// value may be cut to the width.
fn value<J: JobView + ?Sized>(
    kind: FieldKind,
    job: &J,
    now: Timestamp,
    noconvert: bool,
) -> (String, bool) {
    use FieldKind as K;
    let mem = |mb: u64| {
        if noconvert {
            format!("{mb}M")
        } else {
            format_memory_mb(mb)
        }
    };
    match kind {
        K::Account => (or_null(Some(job.account())), true),
        K::JobIdRaw => (job.job_id().to_string(), true),
        K::JobId => (job.display_id(), true),
        K::ArrayJobId => (
            job.array_job_id().unwrap_or(job.job_id().0).to_string(),
            true,
        ),
        K::ArrayTaskId => (
            match (job.array_task_id(), job.array_task_str()) {
                (Some(t), _) => t.to_string(),
                (None, Some(list)) => list.to_string(),
                (None, None) => "N/A".to_string(),
            },
            true,
        ),
        K::TresPerNode => (
            full(job)
                .tres_per_node
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "N/A".into()),
            true,
        ),
        K::BatchHost => (
            full(job)
                .batch_host
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "n/a".into()),
            true,
        ),
        K::MinCpus => (job.cpus_per_task().max(1).to_string(), true),
        K::NumCpus => (job.num_cpus().to_string(), true),
        K::MinTmpDisk => ("0".to_string(), true),
        K::NumNodes => (job.num_nodes().to_string(), true),
        K::EndTime => match job.end_time() {
            Some(end) if job.time_limit() == TimeLimit::Unlimited && end > now => {
                ("NONE".to_string(), true)
            }
            other => (time_or_na(other), true),
        },
        K::Dependency => (or_null(full(job).dependency.as_deref()), true),
        K::Features => (or_null(full(job).features.as_deref()), true),
        K::GroupName => (job.group().to_string(), true),
        K::GroupId => (job.gid().to_string(), true),
        K::OverSubscribe => (
            (if job.exclusive() { "NO" } else { "OK" }).to_string(),
            true,
        ),
        K::Sockets | K::Cores | K::Threads => ("*".to_string(), true),
        K::Sct => ("*:*:*".to_string(), true),
        K::Name => (job.name().to_string(), true),
        K::Comment => (or_null(full(job).comment.as_deref()), true),
        K::TimeLimit => match job.time_limit() {
            TimeLimit::Unlimited => ("UNLIMITED".to_string(), true),
            TimeLimit::Minutes(m) => (
                if u64::from(m) * 60 > 365 * 86_400 {
                    "INVALID".to_string()
                } else {
                    format_time_limit(job.time_limit())
                },
                false,
            ),
        },
        K::TimeLeft => match job.time_limit() {
            TimeLimit::Unlimited => ("UNLIMITED".to_string(), true),
            TimeLimit::Minutes(m) => (
                secs((u64::from(m) * 60).saturating_sub(time_used(job))),
                false,
            ),
        },
        K::MinMemory => (
            match (job.mem_per_node(), job.mem_per_cpu()) {
                (Some(mb), _) | (None, Some(mb)) => mem(mb),
                (None, None) => "0".to_string(),
            },
            true,
        ),
        K::TimeUsed => (secs(time_used(job)), false),
        K::ReqNodes => (nodes(&full(job).req_nodes), false),
        K::NodeList => (job.nodes_text(), false),
        K::Command => (or_null(full(job).command.as_deref()), true),
        K::Contiguous => ("0".to_string(), true),
        K::Priority => (
            format!("{:.14}", f64::from(job.priority()) / f64::from(u32::MAX)),
            true,
        ),
        K::PriorityLong => (job.priority().to_string(), true),
        K::Partition => (job.partition().to_string(), true),
        K::Qos => (or_null(Some(job.qos())), true),
        K::Reason => (job.reason().as_slurm_str().to_string(), true),
        K::ReasonList => {
            if shows_reason(job) {
                (format!("({})", job.reason().as_slurm_str()), true)
            } else {
                (job.nodes_text(), false)
            }
        }
        K::StartTime => (time_or_na(job.start_time()), true),
        K::StateCompact => (state_short(job).to_string(), true),
        K::State => (state_long(job).to_string(), true),
        K::UserName => (job.user().to_string(), true),
        K::UserId => (job.uid().to_string(), true),
        K::Licenses => (or_null(full(job).licenses.as_deref()), true),
        K::Reservation => (or_null(full(job).reservation.as_deref()), true),
        K::Wckey => ("(null)".to_string(), true),
        K::SubmitTime => (time_or_na(Some(job.submit_time())), true),
        K::EligibleTime => (time_or_na(Some(job.eligible_time())), true),
        K::LastSchedEval => (time_or_na(job.last_sched_eval()), true),
        K::PendingTime => {
            let pending = match job.start_time() {
                Some(start) if start != 0 && start < now => start - job.submit_time(),
                _ => now - job.submit_time(),
            };
            (pending.to_string(), true)
        }
        K::ExcNodes => (nodes(&full(job).exc_nodes), false),
        K::CoreSpec => ("N/A".to_string(), true),
        K::Nice => (job.nice().to_string(), true),
        K::SchedNodes => {
            let text = job.sched_nodes_text();
            if text.is_empty() {
                ("(null)".to_string(), true)
            } else {
                (text, true)
            }
        }
        K::WorkDir => (full(job).work_dir.clone(), true),
        K::NumTasks => (job.num_tasks().to_string(), true),
        K::CpusPerTask => (job.cpus_per_task().to_string(), true),
        // Slurm's squeue shows a given pattern as submitted; scontrol's
        // StdOut= has codes expanded (`JobInfo::stdout_pattern`).
        K::Stdout => {
            let j = full(job);
            (j.stdout_pattern.as_ref().unwrap_or(&j.stdout).clone(), true)
        }
        K::Stderr => {
            let j = full(job);
            (j.stderr_pattern.as_ref().unwrap_or(&j.stderr).clone(), true)
        }
        K::Stdin => (full(job).stdin.clone(), true),
        K::TresAlloc => (full(job).tres.clone(), true),
        K::Requeue => (u8::from(job.requeue()).to_string(), true),
        K::RestartCnt => (job.restarts().to_string(), true),
        K::Cluster => ("(null)".to_string(), true),
        K::SelectInfo | K::Invalid => (String::new(), true),
    }
}

/// Renders the header line.
pub fn header_line(format: &Format) -> String {
    let mut out = format.prefix.clone();
    for f in &format.fields {
        put(&mut out, header(f.kind), f.width, f.right, true);
        out.push_str(&f.suffix);
    }
    out.push('\n');
    out
}

/// Appends one job's line to `out`.
pub fn push_job_line<J: JobView + ?Sized>(
    out: &mut String,
    format: &Format,
    job: &J,
    now: Timestamp,
    noconvert: bool,
) {
    push_job_line_with(
        out,
        &mut LineScratch::default(),
        format,
        job,
        now,
        noconvert,
    );
}

/// What [`push_job_line_with`] keeps from line to line: a buffer for the
/// common fields' values, and each column's last text with what it was
/// made from, so a column whose value is the same as on the line before
/// (the partition, name, user, state, time and reason of one user's
/// queued jobs) is copied instead of formatted again.
#[derive(Debug, Default)]
pub struct LineScratch {
    buf: String,
    memo: Vec<(u128, String)>,
    /// Where each column of the line being made starts in the output.
    starts: Vec<usize>,
    /// The text of the columns from `tail_from` to the end on the last
    /// line that formatted them, every one of which has a memo key: when
    /// each is the same on the next line (a queue of one user's jobs,
    /// where only the id changes), it is copied whole instead of column
    /// by column. `tail_from` is `usize::MAX` when there is none.
    tail: String,
    tail_from: usize,
}

/// The memo key of a column whose text is not memoized (no real key is
/// this large: see [`memo_key`]).
const NO_KEY: u128 = u128::MAX;

/// What a column's text is made from, when that is cheap to compare: the
/// same key in the same column, within one answer, gives the same text.
/// Texts are keyed by their string-table index (rows only), the state and
/// reason texts by the address of their static text, numbers by value.
#[inline(always)]
fn memo_key<J: JobView + ?Sized>(kind: FieldKind, job: &J) -> u128 {
    memo_key_of(kind, job).unwrap_or(NO_KEY)
}

#[inline(always)]
fn memo_key_of<J: JobView + ?Sized>(kind: FieldKind, job: &J) -> Option<u128> {
    use FieldKind as K;
    let num = |n: u64| Some(u128::from(n));
    let opt = |t: Option<Timestamp>| Some(t.map_or(0, |t| (1 << 64) | u128::from(t as u64)));
    let text = |s: &'static str| num(s.as_ptr() as u64);
    match kind {
        K::Name | K::UserName | K::GroupName | K::Account | K::Qos | K::Partition => {
            job.text_index(kind).map(u128::from)
        }
        K::StateCompact => text(state_short(job)),
        K::State => text(state_long(job)),
        K::Reason => text(job.reason().as_slurm_str()),
        K::ReasonList if shows_reason(job) => text(job.reason().as_slurm_str()),
        K::TimeUsed => num(time_used(job)),
        K::TimeLimit => num(match job.time_limit() {
            TimeLimit::Unlimited => u64::MAX,
            TimeLimit::Minutes(m) => u64::from(m),
        }),
        K::NumNodes => num(job.num_nodes().into()),
        K::NumCpus => num(job.num_cpus().into()),
        K::NumTasks => num(job.num_tasks().into()),
        K::CpusPerTask => num(job.cpus_per_task().into()),
        K::MinCpus => num(job.cpus_per_task().max(1).into()),
        K::PriorityLong | K::Priority => num(job.priority().into()),
        K::UserId => num(job.uid().into()),
        K::GroupId => num(job.gid().into()),
        K::SubmitTime => opt(Some(job.submit_time())),
        K::EligibleTime => opt(Some(job.eligible_time())),
        K::StartTime => opt(job.start_time()),
        K::LastSchedEval => opt(job.last_sched_eval()),
        _ => None,
    }
}

/// [`push_job_line`] with what it keeps between the lines of one
/// answer (`scratch`: its memo is only valid for the jobs of one answer,
/// whose string table the text keys index).
pub fn push_job_line_with<J: JobView + ?Sized>(
    out: &mut String,
    scratch: &mut LineScratch,
    format: &Format,
    job: &J,
    now: Timestamp,
    noconvert: bool,
) {
    out.push_str(&format.prefix);
    let n = format.fields.len();
    if scratch.memo.len() < n {
        scratch.memo.resize(n, (NO_KEY, String::new()));
        scratch.tail_from = usize::MAX;
    }
    scratch.starts.clear();
    // The last column without a memo key so far.
    let mut keyless = None;
    for (i, f) in format.fields.iter().enumerate() {
        if i == scratch.tail_from {
            let fields = format.fields[i..].iter().zip(&scratch.memo[i..]);
            if fields
                .map(|(f, m)| (memo_key(f.kind, job), m.0))
                .all(|(key, kept)| key != NO_KEY && key == kept)
            {
                out.push_str(&scratch.tail);
                out.push('\n');
                return;
            }
        }
        scratch.starts.push(out.len());
        let key = memo_key(f.kind, job);
        let memo = &mut scratch.memo[i];
        if key == NO_KEY {
            keyless = Some(i);
        } else if memo.0 == key {
            out.push_str(&memo.1);
            continue;
        }
        let start = out.len();
        let buf = &mut scratch.buf;
        buf.clear();
        match quick_value(f.kind, job, buf) {
            Some(cut) => put(out, buf, f.width, f.right, cut),
            None => {
                let (v, cut) = value(f.kind, job, now, noconvert);
                put(out, &v, f.width, f.right, cut);
            }
        }
        out.push_str(&f.suffix);
        if key != NO_KEY {
            memo.0 = key;
            memo.1.clear();
            memo.1.push_str(&out[start..]);
        }
    }
    // Every column after `keyless` was memoized from this line.
    let from = keyless.map_or(0, |i| i + 1);
    if from < n {
        scratch.tail.clear();
        scratch.tail.push_str(&out[scratch.starts[from]..]);
        scratch.tail_from = from;
    } else {
        scratch.tail_from = usize::MAX;
    }
    out.push('\n');
}

/// The value of the fields every squeue line prints, written into `buf`
/// as [`value`] gives them (and whether it may be cut); None for the
/// others, which `value` formats.
fn quick_value<J: JobView + ?Sized>(kind: FieldKind, job: &J, buf: &mut String) -> Option<bool> {
    use FieldKind as K;
    match kind {
        K::Name => buf.push_str(job.name()),
        K::UserName => buf.push_str(job.user()),
        K::GroupName => buf.push_str(job.group()),
        K::Partition => buf.push_str(job.partition()),
        K::StateCompact => buf.push_str(state_short(job)),
        K::State => buf.push_str(state_long(job)),
        K::Reason => buf.push_str(job.reason().as_slurm_str()),
        K::ReasonList if shows_reason(job) => {
            buf.push('(');
            buf.push_str(job.reason().as_slurm_str());
            buf.push(')');
        }
        K::JobId if job.array_job_id().is_none() => {
            push_decimal(buf, job.job_id().0.into());
        }
        K::JobIdRaw => {
            push_decimal(buf, job.job_id().0.into());
        }
        K::NumNodes => {
            push_decimal(buf, job.num_nodes().into());
        }
        K::NumCpus => {
            push_decimal(buf, job.num_cpus().into());
        }
        K::PriorityLong => {
            push_decimal(buf, job.priority().into());
        }
        K::TimeUsed if time_used(job) == 0 => {
            buf.push_str("0:00");
            return Some(false);
        }
        _ => return None,
    }
    Some(true)
}

/// Appends `n` in decimal, as `{}` writes it (without going through
/// `core::fmt`, which costs more than the digits on a long listing).
fn push_decimal(buf: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // SAFETY: only ASCII digits were written, which are UTF-8 (checking
    // them again was a tenth of formatting 100,000 job ids).
    buf.push_str(unsafe { std::str::from_utf8_unchecked(&digits[i..]) });
}

/// One `-S` key: a format letter, descending when written `-x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The letter.
    pub key: char,
    /// `-x`.
    pub descending: bool,
}

/// Parses `-S` (`"P,t,-p"`, `"-i"`, `"+i,-t"`). Letters squeue accepts
/// but does not sort by (`c`, `f`, `h`, `n`, `O`) are dropped.
pub fn parse_sort(spec: &str) -> Result<Vec<SortKey>, char> {
    let mut keys = Vec::new();
    let mut descending = false;
    for c in spec.chars() {
        match c {
            ',' => descending = false,
            '+' => descending = false,
            '-' => descending = true,
            'c' | 'f' | 'h' | 'n' | 'O' | 'b' => descending = false,
            'B' | 'C' | 'd' | 'D' | 'e' | 'g' | 'G' | 'H' | 'i' | 'I' | 'j' | 'J' | 'l' | 'L'
            | 'm' | 'M' | 'N' | 'p' | 'P' | 'Q' | 'S' | 't' | 'T' | 'u' | 'U' | 'v' | 'V' | 'z' => {
                keys.push(SortKey { key: c, descending });
                descending = false;
            }
            other => return Err(other),
        }
    }
    Ok(keys)
}

/// squeue's notion of a start time when sorting: no start time sorts as
/// just after now, and a pending job's start time in the past as now.
fn sort_start<J: JobView + ?Sized>(job: &J, now: Timestamp) -> Timestamp {
    match job.start_time() {
        None | Some(0) => now + 100,
        Some(t) if job.state() == JobState::Pending && t < now => now,
        Some(t) => t,
    }
}

fn compare_key<J: JobView + ?Sized>(key: char, a: &J, b: &J, now: Timestamp) -> Ordering {
    let left = |j: &J| match j.time_limit() {
        TimeLimit::Unlimited => u64::MAX,
        TimeLimit::Minutes(m) => (u64::from(m) * 60).saturating_sub(time_used(j)),
    };
    let limit = |j: &J| match j.time_limit() {
        TimeLimit::Unlimited => u64::MAX,
        TimeLimit::Minutes(m) => u64::from(m),
    };
    let mem = |j: &J| j.mem_per_node().or(j.mem_per_cpu()).unwrap_or(0);
    fn first_node<J: JobView + ?Sized>(j: &J) -> &str {
        if j.node_count() > 0 {
            j.node(0)
        } else {
            ""
        }
    }
    // Rows of one answer with the same text index, and the same static
    // state word, are equal without comparing the text.
    let text = |kind: FieldKind, x: &str, y: &str| match (a.text_index(kind), b.text_index(kind)) {
        (Some(i), Some(j)) if i == j => Ordering::Equal,
        _ => x.cmp(y),
    };
    let word = |x: &'static str, y: &'static str| {
        if std::ptr::eq(x, y) {
            Ordering::Equal
        } else {
            x.cmp(y)
        }
    };
    match key {
        'B' => full(a).batch_host.cmp(&full(b).batch_host),
        'C' => a.num_cpus().cmp(&b.num_cpus()),
        'D' => a.num_nodes().cmp(&b.num_nodes()),
        'e' => a.end_time().unwrap_or(0).cmp(&b.end_time().unwrap_or(0)),
        'g' => text(FieldKind::GroupName, a.group(), b.group()),
        'G' => a.gid().cmp(&b.gid()),
        'i' => a.job_id().cmp(&b.job_id()),
        'j' => text(FieldKind::Name, a.name(), b.name()),
        'l' => limit(a).cmp(&limit(b)),
        'L' => left(a).cmp(&left(b)),
        'm' => mem(a).cmp(&mem(b)),
        'M' => time_used(a).cmp(&time_used(b)),
        'N' => first_node(a).cmp(first_node(b)),
        'p' | 'Q' => a.priority().cmp(&b.priority()),
        'P' => text(FieldKind::Partition, a.partition(), b.partition()),
        'S' => sort_start(a, now).cmp(&sort_start(b, now)),
        // Both state keys compare the printed words, so PD sorts before R.
        't' => word(state_short(a), state_short(b)),
        'T' => word(state_long(a), state_long(b)),
        'u' => text(FieldKind::UserName, a.user(), b.user()),
        'U' => a.uid().cmp(&b.uid()),
        'V' => a.submit_time().cmp(&b.submit_time()),
        _ => Ordering::Equal,
    }
}

/// Sorts jobs by `keys`, most significant first.
///
/// squeue sorts by start time (latest first), then stably by each key
/// from the last to the first, so jobs equal in every key keep the
/// controller's order. Slurm's controller order is not something muster
/// can reproduce (it depends on its hash and list history); the captured
/// outputs show ties in descending job id when the innermost key is
/// descending (`squeue`: `P,t,-p`) and ascending otherwise
/// (`squeue --start`: `S`), so that is the final tie-break here.
pub fn sort_jobs<J: JobView>(jobs: &mut [J], keys: &[SortKey], now: Timestamp) {
    let last_descending = keys.last().is_some_and(|k| k.descending);
    jobs.sort_by(|a, b| {
        for k in keys {
            let ord = compare_key(k.key, a, b, now);
            let ord = if k.descending { ord.reverse() } else { ord };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        let ord = sort_start(b, now).cmp(&sort_start(a, now));
        if ord != Ordering::Equal {
            return ord;
        }
        let ord = a.job_id().cmp(&b.job_id());
        if last_descending {
            ord.reverse()
        } else {
            ord
        }
    });
}

/// One line of `squeue -s`: the job fields that have a step meaning
/// (`%i` the step id `123.0`, `%j`, `%P`, `%u`, `%M`, `%N`, `%l`, `%S`,
/// `%C`, `%b`); others print empty.
pub fn step_line(format: &Format, step: &proto::StepInfo, now: Timestamp) -> String {
    use FieldKind as K;
    let mut out = format.prefix.clone();
    for f in &format.fields {
        let (v, cut) = match f.kind {
            K::JobId | K::JobIdRaw => (
                format!("{}.{}", step.job_id, step.step.as_slurm_string()),
                true,
            ),
            K::ArrayJobId => (step.job_id.to_string(), true),
            K::Name => (step.name.clone(), true),
            K::Partition => (step.partition.clone(), true),
            K::UserName => (step.user.clone(), true),
            K::UserId => (step.uid.to_string(), true),
            K::TimeUsed => (secs((now - step.start_time).max(0) as u64), false),
            K::NodeList | K::ReasonList => (nodes(&step.nodes), false),
            K::NumCpus => (step.cpus.to_string(), true),
            K::NumTasks => (step.ntasks.to_string(), true),
            K::State | K::StateCompact => ("RUNNING".to_string(), true),
            K::TimeLimit => match step.time_limit {
                TimeLimit::Unlimited => ("UNLIMITED".to_string(), true),
                TimeLimit::Minutes(m) => (secs(u64::from(m) * 60), true),
            },
            K::StartTime => (crate::common::fmt_time(step.start_time), true),
            _ => (String::new(), true),
        };
        put(&mut out, &v, f.width, f.right, cut);
        out.push_str(&f.suffix);
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod decimal_tests {
    use super::push_decimal;

    #[test]
    fn push_decimal_writes_what_display_writes() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            4_294_967_295,
            12_345_678_901,
            u64::MAX,
        ] {
            let mut buf = String::from("x");
            push_decimal(&mut buf, n);
            assert_eq!(buf, format!("x{n}"));
        }
    }
}
