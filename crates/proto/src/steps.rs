//! Job steps: what srun asks the controller for, what the controller tells
//! the node daemons, and the stream between a node's step supervisor and
//! srun (task output, task ends, stdin, signals and the PMI fence).
//!
//! ```text
//!  srun --CreateStep--> ctld --LaunchStep (per node)--> noded --> step supervisor
//!   ^                                                                |
//!   +-------- StepdToSrun / SrunToStepd over srun's listener <-------+
//!  noded --StepExited (per node)--> ctld
//! ```

use model::{ExitCode, Gres, JobId, JobState, PendingReason, TimeLimit, Timestamp};
use serde::{Deserialize, Serialize};

/// `-m/--distribution`: how tasks are laid out over the step's nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Distribution {
    /// Consecutive tasks fill a node before the next (`block`, the default).
    #[default]
    Block,
    /// Tasks go round-robin over the nodes (`cyclic`).
    Cyclic,
    /// Blocks of `n` consecutive tasks go round-robin (`plane=n`).
    Plane(u32),
}

impl Distribution {
    /// Parses the first part of `-m` (`block`, `cyclic`, `plane=4`,
    /// `block:cyclic`; the socket and core parts are accepted and ignored).
    pub fn parse(text: &str) -> Option<Distribution> {
        let first = text.split([':', ',']).next().unwrap_or("").trim();
        let lower = first.to_ascii_lowercase();
        match lower.as_str() {
            "block" | "*" | "" => Some(Distribution::Block),
            "cyclic" => Some(Distribution::Cyclic),
            "arbitrary" => Some(Distribution::Block),
            p if p.starts_with("plane=") => p[6..]
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .map(Distribution::Plane),
            "plane" => text
                .split_once('=')
                .and_then(|(_, n)| n.trim().parse::<u32>().ok())
                .filter(|n| *n > 0)
                .map(Distribution::Plane),
            _ => None,
        }
    }

    /// The name `scontrol show step` prints after `Dist=`.
    pub fn as_slurm_str(self) -> &'static str {
        match self {
            Distribution::Block => "Block",
            Distribution::Cyclic => "Cyclic",
            Distribution::Plane(_) => "Plane",
        }
    }
}

/// Where a task's standard input comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum StdinMode {
    /// srun's stdin goes to task 0; the others read /dev/null (what srun
    /// sent before it gave stdin to every task by default, as Slurm's does).
    #[default]
    Task0,
    /// `-i N`: to task N only.
    Task(u32),
    /// `-i all`: to every task.
    All,
    /// `--input none`: /dev/null for every task.
    None,
    /// `-i PATTERN`: a file per task, opened on the node.
    File(String),
}

/// srun's request for a step of a running job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRequest {
    /// The job (allocation) the step belongs to.
    pub job_id: JobId,
    /// `-J`, else the command's base name.
    pub name: String,
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// `-n` (None: one per node, or `SLURM_NTASKS` of the allocation).
    pub ntasks: Option<u32>,
    /// `-N` minimum.
    pub min_nodes: Option<u32>,
    /// `-N` maximum.
    pub max_nodes: Option<u32>,
    /// `--ntasks-per-node`.
    pub ntasks_per_node: Option<u32>,
    /// `-c`.
    pub cpus_per_task: Option<u32>,
    /// `--mem` in MB per node: within the job's memory there, less what
    /// other steps asked for (enforcement comes with cgroups).
    pub mem_per_node: Option<u64>,
    /// `--gres` for the step, per node (`gpu` picks devices).
    pub gres: Vec<Gres>,
    /// `--gpus`: GPUs for the whole step, spread over its nodes.
    #[serde(default)]
    pub gpus: Option<u64>,
    /// `-w`, expanded, in the order given.
    pub nodelist: Vec<String>,
    /// `-x`, expanded.
    pub exclude: Vec<String>,
    /// `-m`.
    pub distribution: Distribution,
    /// `--exclusive`/`--exact`: the step's CPUs are its own (the default).
    pub exclusive: bool,
    /// `--exact` (or `--exclusive`, or `-c`, which imply it): the step
    /// gets only the CPUs its tasks need. Without it a step gets all of
    /// the job's CPUs on each of its nodes (srun(1) `--exact`), so steps
    /// that do not `--overlap` run one after the other.
    #[serde(default)]
    pub exact: bool,
    /// `--overlap`: the step may share CPUs with other steps.
    pub overlap: bool,
    /// `-O/--overcommit`: more tasks than CPUs.
    pub overcommit: bool,
    /// `-t`.
    pub time_limit: Option<TimeLimit>,
    /// The tasks' environment before the step's own variables (srun's,
    /// per `--export`).
    pub env: Vec<(String, String)>,
    /// `-D`, else srun's working directory.
    pub work_dir: String,
    /// Address srun listens on for the step supervisors.
    pub srun_host: String,
    /// Port srun listens on (`SLURM_SRUN_COMM_PORT`).
    pub srun_port: u16,
    /// srun's pid (`SrunHost:Pid`).
    pub srun_pid: u32,
    /// A secret the supervisors present to srun, so nobody else can feed it output.
    pub token: String,
    /// `-o` pattern (None: forward to srun).
    pub stdout: Option<String>,
    /// `-e` pattern (None: forward to srun).
    pub stderr: Option<String>,
    /// `-i`.
    pub stdin: StdinMode,
    /// `--mpi` (`none`, `pmi2`).
    pub mpi: String,
    /// `--acctg-freq`, if given: the usage sampling interval.
    #[serde(default)]
    pub acctg_freq: Option<String>,
    /// `--gpus-per-task`: the step takes this many GPUs per task on each
    /// node, and each task gets its own (`GpuBind::PerTask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_task: Option<u64>,
    /// `--ntasks-per-gpu`: one GPU per this many tasks on each node, each
    /// task bound to one (`GpuBind::Single`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks_per_gpu: Option<u32>,
    /// `--gpu-bind`, as written (checked by srun with `GpuBind::parse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_bind: Option<String>,
    /// `--cpu-bind`, as written (checked by srun with `CpuBind::parse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_bind: Option<String>,
    /// `--task-prolog`: run as the user before each task, after slurm.conf's
    /// TaskProlog (its `export`/`unset`/`print` lines honoured).
    #[serde(default)]
    pub task_prolog: Option<String>,
    /// `--task-epilog`: run as the user after each task, before slurm.conf's
    /// TaskEpilog.
    #[serde(default)]
    pub task_epilog: Option<String>,
    /// `--gres-flags` given to srun (lowercase, comma separated); None:
    /// the job's. With `enforce-binding` an `--exact` step's CPUs are
    /// those near its GPUs first. Never skipped.
    #[serde(default)]
    pub gres_flags: Option<String>,
    /// `--pty`: task 0 runs on a pseudo-terminal of this size (rows,
    /// columns; 0 when srun's stdin is no terminal).
    #[serde(default)]
    pub pty: Option<(u16, u16)>,
    /// `--multi-prog`: the configuration file's text (`multi_prog`); each
    /// task runs the program its line names, `argv` being the file name.
    #[serde(default)]
    pub multi_prog: Option<String>,
    /// pyxis's container options (`container::OPTIONS`) as `(option,
    /// value)` pairs: the step's tasks run in that container.
    #[serde(default)]
    pub container: Vec<(String, String)>,
}

/// The controller's answer to [`StepRequest`]: the step's id and layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCreated {
    /// The step's id within its job (0, 1, ...).
    pub step_id: u32,
    /// The step's nodes, in step order (`SLURM_NODEID`).
    pub nodes: Vec<String>,
    /// Global task ids on each of those nodes.
    pub tasks: Vec<Vec<u32>>,
    /// CPUs of the step on each node.
    pub cpus: Vec<u32>,
}

/// What a node daemon needs to start its share of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepLaunch {
    /// The job.
    pub job_id: JobId,
    /// The step.
    pub step_id: u32,
    /// User to run as.
    pub uid: u32,
    /// Group to run as.
    pub gid: u32,
    /// User name.
    pub user: String,
    /// Command and arguments.
    pub argv: Vec<String>,
    /// Environment common to every task (node and task variables are added
    /// on the node).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub work_dir: String,
    /// This node's index in the step (`SLURM_NODEID`).
    pub node_index: u32,
    /// Every node of the step, in order.
    pub nodes: Vec<String>,
    /// Global task ids on each node of the step.
    pub tasks: Vec<Vec<u32>>,
    /// CPUs of the step on this node.
    pub cpus: u32,
    /// Memory of the step on this node (MB): its `--mem`, else the job's
    /// there; 0: none allocated. What its memory cgroup is limited to.
    #[serde(default)]
    pub mem: u64,
    /// Memory of the job on this node (MB), what the job's memory cgroup
    /// is limited to (its steps together); 0: none allocated, or a
    /// controller that does not say.
    #[serde(default)]
    pub job_mem: u64,
    /// GPU indexes of the step on this node (global: the node's own
    /// numbering).
    pub gpus: Vec<u32>,
    /// The CPU ids (the node's) the step runs on here (cgroup.conf
    /// `ConstrainCores`, task/affinity). Empty from older controllers:
    /// not confined.
    #[serde(default)]
    pub cpu_ids: Vec<u32>,
    /// The CPU ids the job holds here (the job's cpuset).
    #[serde(default)]
    pub job_cpu_ids: Vec<u32>,
    /// srun's `--cpu-bind`, as given (task/affinity binds by it).
    #[serde(default)]
    pub cpu_bind: Option<String>,
    /// `host:port` of srun.
    pub srun_addr: String,
    /// The secret to present to srun.
    pub token: String,
    /// `-o` pattern (None: forward to srun).
    pub stdout: Option<String>,
    /// `-e` pattern (None: forward to srun).
    pub stderr: Option<String>,
    /// `-i`.
    pub stdin: StdinMode,
    /// `--mpi`.
    pub mpi: String,
    /// `--acctg-freq`, if given: the usage sampling interval.
    #[serde(default)]
    pub acctg_freq: Option<String>,
    /// How the node gives `gpus` to its tasks: `GpuBind::of_step` of the
    /// request's `--gpu-bind`, `--gpus-per-task` and `--ntasks-per-gpu`.
    #[serde(default)]
    pub gpu_bind: crate::GpuBind,
    /// srun's `--task-prolog`.
    #[serde(default)]
    pub task_prolog: Option<String>,
    /// srun's `--task-epilog`.
    #[serde(default)]
    pub task_epilog: Option<String>,
    /// `srun --pty`: task 0's pseudo-terminal size (rows, columns).
    #[serde(default)]
    pub pty: Option<(u16, u16)>,
    /// `srun --multi-prog`: the configuration file's text.
    #[serde(default)]
    pub multi_prog: Option<String>,
    /// The step's container options (`StepRequest::container`).
    #[serde(default)]
    pub container: Vec<(String, String)>,
}

impl StepLaunch {
    /// The total number of tasks of the step.
    pub fn ntasks(&self) -> u32 {
        self.tasks.iter().map(|t| t.len() as u32).sum()
    }
}

/// A step supervisor's messages to srun.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StepdToSrun {
    /// First message on the connection.
    Hello {
        /// The step's secret.
        token: String,
        /// The node's index in the step.
        node_index: u32,
        /// The node's name.
        node: String,
    },
    /// Output of a task.
    Output {
        /// Global task id.
        task: u32,
        /// From stderr rather than stdout.
        stderr: bool,
        /// The bytes.
        data: Vec<u8>,
    },
    /// A task ended.
    TaskExited {
        /// Global task id.
        task: u32,
        /// Raw wait status.
        status: i32,
    },
    /// Every local task entered the PMI fence number `seq`; these are the
    /// node's puts since the previous fence.
    FenceIn {
        /// Fence sequence number, from 0.
        seq: u32,
        /// Key-value pairs put on this node.
        kvs: Vec<(String, String)>,
    },
    /// A task asked MPI to abort the step (PMI `abort`), or broke the PMI
    /// protocol (exited without finalize while others wait in a fence).
    Abort {
        /// Global task id.
        task: u32,
        /// Its exit code.
        code: i32,
        /// Why.
        message: String,
    },
    /// The controller is ending the step (`step`: the step alone, with
    /// `scancel J.S` or srun `-K`; otherwise its whole job, cancelled or out
    /// of time, whose tasks get `kill_wait` seconds after SIGTERM): srun
    /// says so as Slurm's does.
    Ending {
        /// Only this step ends, not its job.
        step: bool,
        /// KillWait, in seconds.
        kill_wait: u32,
    },
    /// Every task on the node has ended and was reported.
    Done,
}

/// srun's messages to a step supervisor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SrunToStepd {
    /// Bytes of srun's stdin for the tasks that read it.
    Stdin(Vec<u8>),
    /// srun's stdin ended.
    StdinEof,
    /// Send this signal to every task.
    Signal(i32),
    /// `srun -K`: a task failed, end the step as the controller ends a
    /// cancelled one (banner, SIGCONT and SIGTERM, SIGKILL after
    /// `kill_wait` seconds).
    Terminate {
        /// KillWait, in seconds.
        kill_wait: u32,
    },
    /// The fence completed everywhere; the merged puts of every node.
    FenceOut {
        /// Fence sequence number.
        seq: u32,
        /// Every key-value pair put since the previous fence, on all nodes.
        kvs: Vec<(String, String)>,
    },
    /// `srun --pty`: srun's terminal changed size (rows, columns).
    WindowSize(u16, u16),
}

/// `AllocationInfo`'s answer: a job's state and, once it runs, the
/// variables of its allocation (what salloc and a standalone srun export).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocationInfo {
    /// The job.
    pub job_id: JobId,
    /// Its state.
    pub state: JobState,
    /// Why it waits.
    pub reason: PendingReason,
    /// Its nodes once running.
    pub nodes: Vec<String>,
    /// `SLURM_*` variables of the allocation once running.
    pub env: Vec<(String, String)>,
}

/// One step as `squeue -s` and `scontrol show step` show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// The job.
    pub job_id: JobId,
    /// Step id (`batch` steps are listed too).
    pub step: crate::StepId,
    /// Step name.
    pub name: String,
    /// Owner name.
    pub user: String,
    /// Owner uid.
    pub uid: u32,
    /// The job's partition.
    pub partition: String,
    /// RUNNING while running.
    pub state: JobState,
    /// When it started.
    pub start_time: Timestamp,
    /// Time limit.
    pub time_limit: TimeLimit,
    /// Nodes, in step order.
    pub nodes: Vec<String>,
    /// Tasks.
    pub ntasks: u32,
    /// CPUs.
    pub cpus: u32,
    /// TRES (`cpu=2,mem=0,node=1`).
    pub tres: String,
    /// Task layout.
    pub distribution: Distribution,
    /// `host:pid` of srun.
    pub srun_host_pid: String,
    /// `host:port` of each node's daemon, in `nodes` order (empty from a
    /// controller that does not fill it in): sattach reaches the step
    /// there without the node listing, which `PrivateData=nodes` refuses
    /// users.
    #[serde(default)]
    pub node_addrs: Vec<String>,
}

/// `ListSteps`' answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepList {
    /// The controller's time.
    pub now: Timestamp,
    /// Running steps, by job then step.
    pub steps: Vec<StepInfo>,
}

/// How one node's share of a step ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepNodeEnd {
    /// The job.
    pub job_id: JobId,
    /// The step.
    pub step_id: u32,
    /// The node.
    pub node: String,
    /// The highest exit of its tasks (a signal counts over a code).
    pub exit: ExitCode,
    /// What its tasks used.
    pub usage: Option<crate::StepUsage>,
    /// How many of its processes the kernel's OOM killer killed on this
    /// node (the memory cgroups' counters, summed over the task cgroups on
    /// cgroup v1): the step then ends OUT_OF_MEMORY. 0 where no cgroup
    /// counts them.
    #[serde(default, skip_serializing_if = "crate::is_zero_u64")]
    pub oom_kills: u64,
}

/// `PMI_process_mapping` (RFC 13) for a layout: `(vector,(node,count,ppn),...)`
/// for runs of consecutive task blocks.
pub fn process_mapping(tasks: &[Vec<u32>]) -> String {
    // Blocks of consecutive ranks, in rank order: (node, length).
    let mut blocks: Vec<(usize, u32)> = Vec::new();
    let mut owner: Vec<(u32, usize)> = Vec::new();
    for (node, ts) in tasks.iter().enumerate() {
        owner.extend(ts.iter().map(|t| (*t, node)));
    }
    owner.sort_unstable();
    for (_, node) in owner {
        match blocks.last_mut() {
            Some((n, len)) if *n == node => *len += 1,
            _ => blocks.push((node, 1)),
        }
    }
    // Runs of blocks on consecutive nodes with the same length.
    let mut triples: Vec<(usize, usize, u32)> = Vec::new();
    for (node, len) in blocks {
        match triples.last_mut() {
            Some((start, count, ppn)) if *ppn == len && *start + *count == node => *count += 1,
            _ => triples.push((node, 1, len)),
        }
    }
    let mut out = String::from("(vector");
    for (start, count, ppn) in triples {
        out.push_str(&format!(",({start},{count},{ppn})"));
    }
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_mapping_follows_rfc13() {
        assert_eq!(
            process_mapping(&[vec![0, 1], vec![2, 3]]),
            "(vector,(0,2,2))"
        );
        assert_eq!(
            process_mapping(&[vec![0, 2], vec![1, 3]]),
            "(vector,(0,2,1),(0,2,1))"
        );
        assert_eq!(
            process_mapping(&[vec![0, 1], vec![2, 3], vec![4, 5, 6, 7], vec![8, 9, 10, 11]]),
            "(vector,(0,2,2),(2,2,4))"
        );
    }
}
