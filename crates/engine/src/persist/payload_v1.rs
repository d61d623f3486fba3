//! Version 1 of the wire payloads that both persisted forms hold: a job's
//! description (`proto::JobDesc`), a node's registration
//! (`proto::NodeRegistration`), a step's usage (`proto::StepUsage`) and a
//! job's priority factors (`proto::PriorityFactors`). A journal record
//! (`journal_v1`) and a snapshot (`v1`) write these mirrors, never the wire
//! types themselves, so that a field added to a wire type changes neither
//! until it is added here too.
//!
//! Each mirror has the field names, order, `serde` defaults and skips of
//! the wire type as every release up to issue 36 wrote it, so the bytes on
//! disk are those of the wire type. The write side borrows
//! ([`Cow::Borrowed`], `From<&proto::X>`); the read side owns
//! ([`Cow::Owned`]) and moves into the wire type (`From<X> for proto::X`).
//! A snapshot keeps its payloads owned (`X<'static>`, `into_owned`).

use model::{Gres, JobId, TimeLimit, Timestamp};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// `--signal=[B:]SIG@SECS` (`proto::SignalSpec`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SignalSpec {
    /// Signal number.
    pub signal: i32,
    /// Seconds before the end of the time limit.
    pub secs: u32,
    /// `B:`: the batch shell only.
    pub batch_only: bool,
}

impl From<&proto::SignalSpec> for SignalSpec {
    fn from(s: &proto::SignalSpec) -> Self {
        SignalSpec {
            signal: s.signal,
            secs: s.secs,
            batch_only: s.batch_only,
        }
    }
}

impl From<SignalSpec> for proto::SignalSpec {
    fn from(s: SignalSpec) -> Self {
        proto::SignalSpec {
            signal: s.signal,
            secs: s.secs,
            batch_only: s.batch_only,
        }
    }
}

/// A batch job submission (`proto::JobDesc`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobDesc<'a> {
    /// `-J`.
    pub name: Cow<'a, str>,
    /// The script text.
    pub script: Cow<'a, str>,
    /// Arguments passed to the script.
    pub argv: Cow<'a, [String]>,
    /// The script's path when it came from a file.
    #[serde(default)]
    pub command: Option<Cow<'a, str>>,
    /// Working directory.
    pub work_dir: Cow<'a, str>,
    /// The directory sbatch ran in.
    pub submit_dir: Cow<'a, str>,
    /// Host sbatch ran on.
    pub submit_host: Cow<'a, str>,
    /// The command line as typed.
    pub submit_line: Cow<'a, str>,
    /// Environment for the job (empty in a binary journal record, which
    /// gives it in [`Body::env`](super::journal_v1::Body::env), and in a
    /// snapshot, which gives it in its table of environments).
    pub env: Cow<'a, [(String, String)]>,
    /// `-p`.
    pub partitions: Cow<'a, [String]>,
    /// `-N` minimum.
    pub min_nodes: Option<u32>,
    /// `-N` maximum.
    pub max_nodes: Option<u32>,
    /// `-n`.
    pub ntasks: Option<u32>,
    /// `--ntasks-per-node`.
    pub ntasks_per_node: Option<u32>,
    /// `-c`.
    pub cpus_per_task: Option<u32>,
    /// `--mem` in MB.
    pub mem_per_node: Option<u64>,
    /// `--mem-per-cpu` in MB.
    pub mem_per_cpu: Option<u64>,
    /// `--mem-per-gpu` in MB.
    pub mem_per_gpu: Option<u64>,
    /// `--gres`: per node.
    pub gres: Cow<'a, [Gres]>,
    /// `-G/--gpus`.
    pub gpus: Option<Cow<'a, Gres>>,
    /// `--gpus-per-node`.
    pub gpus_per_node: Option<Cow<'a, Gres>>,
    /// `--gpus-per-task`.
    pub gpus_per_task: Option<Cow<'a, Gres>>,
    /// `--cpus-per-gpu`.
    pub cpus_per_gpu: Option<u32>,
    /// `-t`.
    pub time_limit: Option<TimeLimit>,
    /// `--time-min`.
    pub time_min: Option<TimeLimit>,
    /// `-o` pattern.
    pub stdout: Option<Cow<'a, str>>,
    /// `-e` pattern.
    pub stderr: Option<Cow<'a, str>>,
    /// `-i`.
    pub stdin: Option<Cow<'a, str>>,
    /// `--open-mode=append`.
    pub open_append: bool,
    /// `--exclusive`.
    pub exclusive: bool,
    /// `-w`, expanded.
    pub nodelist: Cow<'a, [String]>,
    /// `-x`, expanded.
    pub exclude: Cow<'a, [String]>,
    /// `-C`.
    pub constraint: Option<Cow<'a, str>>,
    /// `-H`.
    pub hold: bool,
    /// `-b`.
    pub begin_time: Option<Timestamp>,
    /// `--signal`.
    pub signal: Option<SignalSpec>,
    /// `--requeue` / `--no-requeue`.
    pub requeue: Option<bool>,
    /// `--comment`.
    pub comment: Option<Cow<'a, str>>,
    /// `--acctg-freq`.
    #[serde(default)]
    pub acctg_freq: Option<Cow<'a, str>>,
    /// `-A`.
    pub account: Option<Cow<'a, str>>,
    /// `-q`.
    pub qos: Option<Cow<'a, str>>,
    /// `--nice`.
    pub nice: i32,
    /// `-d`, as typed.
    pub dependency: Option<Cow<'a, str>>,
    /// `--test-only`.
    pub test_only: bool,
    /// The user's numeric id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// The submitting user's name.
    pub user: Cow<'a, str>,
    /// sbatch's own pid.
    pub alloc_sid: u32,
    /// `-a/--array`, as typed.
    #[serde(default)]
    pub array: Option<Cow<'a, str>>,
    /// `--kill-on-invalid-dep=yes`.
    #[serde(default)]
    pub kill_on_invalid_dep: Option<bool>,
    /// `--deadline`.
    #[serde(default)]
    pub deadline: Option<Timestamp>,
    /// salloc and a standalone srun: an allocation without a script.
    #[serde(default)]
    pub alloc_only: bool,
    /// The submission's token.
    #[serde(default)]
    pub submit_token: Option<Cow<'a, str>>,
    /// `-L` (normalised, `foo:1,bar:2`). Absent in what older releases
    /// wrote, and skipped where None, so their bytes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub licenses: Option<Cow<'a, str>>,
    /// `--gres-flags` (absent in records written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gres_flags: Option<Cow<'a, str>>,
    /// `--mail-type` bits (absent in records written before it, and when 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_type: Option<u16>,
    /// `--mail-user` (absent in records written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_user: Option<Cow<'a, str>>,
    /// The submitter's groups the controller looked up (absent in records
    /// written before it, and where empty).
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub user_groups: Cow<'a, [String]>,
    /// `--hint` (absent in records written before it, and when None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<Cow<'a, str>>,
    /// `--threads-per-core` (absent before it, and when None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_core: Option<u32>,
    /// `--ntasks-per-core` (absent before it, and when None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks_per_core: Option<u32>,
    /// `--reservation` (absent in records written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<Cow<'a, str>>,
    /// `--switches` count (absent before it, and when None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches: Option<u32>,
    /// `--switches` max-time in seconds (absent before it, and when None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_wait: Option<u32>,
    /// `--segment` (absent before it, and when None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<u32>,
    /// pyxis's container options (absent in records written before them,
    /// and where none were given).
    #[serde(default, skip_serializing_if = "<[(String, String)]>::is_empty")]
    pub container: Cow<'a, [(String, String)]>,
}

/// `Option<String>` borrowed.
pub(super) fn text(s: &Option<String>) -> Option<Cow<'_, str>> {
    s.as_deref().map(Cow::Borrowed)
}

/// `Option<Cow<str>>` owned.
pub(super) fn owned(s: Option<Cow<'_, str>>) -> Option<String> {
    s.map(Cow::into_owned)
}

impl<'a> From<&'a proto::JobDesc> for JobDesc<'a> {
    fn from(d: &'a proto::JobDesc) -> Self {
        JobDesc {
            name: Cow::Borrowed(&d.name),
            script: Cow::Borrowed(&d.script),
            argv: Cow::Borrowed(&d.argv),
            command: text(&d.command),
            work_dir: Cow::Borrowed(&d.work_dir),
            submit_dir: Cow::Borrowed(&d.submit_dir),
            submit_host: Cow::Borrowed(&d.submit_host),
            submit_line: Cow::Borrowed(&d.submit_line),
            env: Cow::Borrowed(&d.env[..]),
            partitions: Cow::Borrowed(&d.partitions),
            min_nodes: d.min_nodes,
            max_nodes: d.max_nodes,
            ntasks: d.ntasks,
            ntasks_per_node: d.ntasks_per_node,
            cpus_per_task: d.cpus_per_task,
            mem_per_node: d.mem_per_node,
            mem_per_cpu: d.mem_per_cpu,
            mem_per_gpu: d.mem_per_gpu,
            gres: Cow::Borrowed(&d.gres),
            gpus: d.gpus.as_ref().map(Cow::Borrowed),
            gpus_per_node: d.gpus_per_node.as_ref().map(Cow::Borrowed),
            gpus_per_task: d.gpus_per_task.as_ref().map(Cow::Borrowed),
            cpus_per_gpu: d.cpus_per_gpu,
            time_limit: d.time_limit,
            time_min: d.time_min,
            stdout: text(&d.stdout),
            stderr: text(&d.stderr),
            stdin: text(&d.stdin),
            open_append: d.open_append,
            exclusive: d.exclusive,
            nodelist: Cow::Borrowed(&d.nodelist),
            exclude: Cow::Borrowed(&d.exclude),
            constraint: text(&d.constraint),
            hold: d.hold,
            begin_time: d.begin_time,
            signal: d.signal.as_ref().map(SignalSpec::from),
            requeue: d.requeue,
            comment: text(&d.comment),
            acctg_freq: text(&d.acctg_freq),
            account: text(&d.account),
            qos: text(&d.qos),
            nice: d.nice,
            dependency: text(&d.dependency),
            test_only: d.test_only,
            uid: d.uid,
            gid: d.gid,
            user: Cow::Borrowed(&d.user),
            alloc_sid: d.alloc_sid,
            array: text(&d.array),
            kill_on_invalid_dep: d.kill_on_invalid_dep,
            deadline: d.deadline,
            alloc_only: d.alloc_only,
            submit_token: text(&d.submit_token),
            licenses: text(&d.licenses),
            gres_flags: text(&d.gres_flags),
            mail_type: (d.mail_type != 0).then_some(d.mail_type),
            mail_user: text(&d.mail_user),
            user_groups: Cow::Borrowed(&d.user_groups),
            hint: text(&d.hint),
            threads_per_core: d.threads_per_core,
            ntasks_per_core: d.ntasks_per_core,
            reservation: text(&d.reservation),
            switches: d.switches,
            switch_wait: d.switch_wait,
            segment: d.segment,
            container: Cow::Borrowed(&d.container[..]),
        }
    }
}

impl From<JobDesc<'_>> for proto::JobDesc {
    fn from(d: JobDesc<'_>) -> Self {
        proto::JobDesc {
            name: d.name.into_owned(),
            script: d.script.into_owned(),
            argv: d.argv.into_owned(),
            command: owned(d.command),
            work_dir: d.work_dir.into_owned(),
            submit_dir: d.submit_dir.into_owned(),
            submit_host: d.submit_host.into_owned(),
            submit_line: d.submit_line.into_owned(),
            env: Arc::new(d.env.into_owned()),
            partitions: d.partitions.into_owned(),
            min_nodes: d.min_nodes,
            max_nodes: d.max_nodes,
            ntasks: d.ntasks,
            ntasks_per_node: d.ntasks_per_node,
            cpus_per_task: d.cpus_per_task,
            mem_per_node: d.mem_per_node,
            mem_per_cpu: d.mem_per_cpu,
            mem_per_gpu: d.mem_per_gpu,
            gres: d.gres.into_owned(),
            gpus: d.gpus.map(Cow::into_owned),
            gpus_per_node: d.gpus_per_node.map(Cow::into_owned),
            gpus_per_task: d.gpus_per_task.map(Cow::into_owned),
            cpus_per_gpu: d.cpus_per_gpu,
            time_limit: d.time_limit,
            time_min: d.time_min,
            stdout: owned(d.stdout),
            stderr: owned(d.stderr),
            stdin: owned(d.stdin),
            open_append: d.open_append,
            exclusive: d.exclusive,
            nodelist: d.nodelist.into_owned(),
            exclude: d.exclude.into_owned(),
            constraint: owned(d.constraint),
            hold: d.hold,
            begin_time: d.begin_time,
            signal: d.signal.map(Into::into),
            requeue: d.requeue,
            comment: owned(d.comment),
            acctg_freq: owned(d.acctg_freq),
            account: owned(d.account),
            qos: owned(d.qos),
            nice: d.nice,
            dependency: owned(d.dependency),
            test_only: d.test_only,
            uid: d.uid,
            gid: d.gid,
            user: d.user.into_owned(),
            alloc_sid: d.alloc_sid,
            array: owned(d.array),
            kill_on_invalid_dep: d.kill_on_invalid_dep,
            deadline: d.deadline,
            alloc_only: d.alloc_only,
            submit_token: owned(d.submit_token),
            licenses: owned(d.licenses),
            gres_flags: owned(d.gres_flags),
            mail_type: d.mail_type.unwrap_or(0),
            mail_user: owned(d.mail_user),
            user_groups: d.user_groups.into_owned(),
            hint: owned(d.hint),
            threads_per_core: d.threads_per_core,
            ntasks_per_core: d.ntasks_per_core,
            reservation: owned(d.reservation),
            switches: d.switches,
            switch_wait: d.switch_wait,
            segment: d.segment,
            container: d.container.into_owned(),
        }
    }
}

/// What a node daemon reports when it registers (`proto::NodeRegistration`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeRegistration<'a> {
    /// Its NodeName.
    pub name: Cow<'a, str>,
    /// The address it listens on.
    pub addr: Cow<'a, str>,
    /// Its listening port.
    pub port: u16,
    /// CPUs found.
    pub cpus: u32,
    /// Boards.
    pub boards: u32,
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Threads per core.
    pub threads_per_core: u32,
    /// Memory in MB.
    pub real_memory: u64,
    /// Free memory in MB.
    pub free_memory: u64,
    /// Load average.
    pub cpu_load: f64,
    /// GRES found.
    pub gres: Cow<'a, [Gres]>,
    /// `uname -r -v`.
    pub os: Cow<'a, str>,
    /// `uname -m`.
    pub arch: Cow<'a, str>,
    /// Host boot time.
    pub boot_time: Timestamp,
    /// When the daemon started.
    pub start_time: Timestamp,
    /// Jobs it is still running.
    pub running_jobs: Cow<'a, [JobId]>,
    /// Its build's version string.
    pub version: Cow<'a, str>,
    /// The host's boot id (empty in records of older builds, and left out
    /// where empty).
    #[serde(default, skip_serializing_if = "str::is_empty")]
    pub boot_id: Cow<'a, str>,
    /// What the node saw of the fabric (records of older builds, and
    /// registrations without one, leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricReport>,
}

/// `proto::FabricReport`, as the journal writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricReport {
    /// Where `switches` come from.
    pub source: String,
    /// The switches over the node, leaf first.
    pub switches: Vec<String>,
    /// InfiniBand ports.
    pub ib_ports: Vec<IbPort>,
    /// LLDP neighbours.
    pub lldp: Vec<LldpNeighbor>,
    /// Why the probe said nothing.
    pub error: String,
}

/// `proto::IbPort`, as the journal writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbPort {
    /// The device.
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `state`.
    pub state: String,
    /// `rate`.
    pub rate: String,
    /// `link_layer`.
    pub link_layer: String,
    /// `lid`.
    pub lid: String,
    /// `sm_lid`.
    pub sm_lid: String,
    /// The subnet prefix.
    pub subnet_prefix: String,
    /// `node_guid`.
    pub node_guid: String,
}

/// `proto::LldpNeighbor`, as the journal writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LldpNeighbor {
    /// The local interface.
    pub interface: String,
    /// The neighbour's system name.
    pub chassis: String,
    /// The neighbour's port id.
    pub port: String,
}

impl From<&proto::FabricReport> for FabricReport {
    fn from(f: &proto::FabricReport) -> Self {
        FabricReport {
            source: f.source.clone(),
            switches: f.switches.clone(),
            ib_ports: f
                .ib_ports
                .iter()
                .map(|p| IbPort {
                    device: p.device.clone(),
                    port: p.port,
                    state: p.state.clone(),
                    rate: p.rate.clone(),
                    link_layer: p.link_layer.clone(),
                    lid: p.lid.clone(),
                    sm_lid: p.sm_lid.clone(),
                    subnet_prefix: p.subnet_prefix.clone(),
                    node_guid: p.node_guid.clone(),
                })
                .collect(),
            lldp: f
                .lldp
                .iter()
                .map(|n| LldpNeighbor {
                    interface: n.interface.clone(),
                    chassis: n.chassis.clone(),
                    port: n.port.clone(),
                })
                .collect(),
            error: f.error.clone(),
        }
    }
}

impl From<FabricReport> for proto::FabricReport {
    fn from(f: FabricReport) -> Self {
        proto::FabricReport {
            source: f.source,
            switches: f.switches,
            ib_ports: f
                .ib_ports
                .into_iter()
                .map(|p| proto::IbPort {
                    device: p.device,
                    port: p.port,
                    state: p.state,
                    rate: p.rate,
                    link_layer: p.link_layer,
                    lid: p.lid,
                    sm_lid: p.sm_lid,
                    subnet_prefix: p.subnet_prefix,
                    node_guid: p.node_guid,
                })
                .collect(),
            lldp: f
                .lldp
                .into_iter()
                .map(|n| proto::LldpNeighbor {
                    interface: n.interface,
                    chassis: n.chassis,
                    port: n.port,
                })
                .collect(),
            error: f.error,
        }
    }
}

impl<'a> From<&'a proto::NodeRegistration> for NodeRegistration<'a> {
    fn from(r: &'a proto::NodeRegistration) -> Self {
        NodeRegistration {
            name: Cow::Borrowed(&r.name),
            addr: Cow::Borrowed(&r.addr),
            port: r.port,
            cpus: r.cpus,
            boards: r.boards,
            sockets: r.sockets,
            cores_per_socket: r.cores_per_socket,
            threads_per_core: r.threads_per_core,
            real_memory: r.real_memory,
            free_memory: r.free_memory,
            cpu_load: r.cpu_load,
            gres: Cow::Borrowed(&r.gres),
            os: Cow::Borrowed(&r.os),
            arch: Cow::Borrowed(&r.arch),
            boot_time: r.boot_time,
            start_time: r.start_time,
            running_jobs: Cow::Borrowed(&r.running_jobs),
            version: Cow::Borrowed(&r.version),
            boot_id: Cow::Borrowed(&r.boot_id),
            fabric: r.fabric.as_ref().map(FabricReport::from),
        }
    }
}

impl From<NodeRegistration<'_>> for proto::NodeRegistration {
    fn from(r: NodeRegistration<'_>) -> Self {
        proto::NodeRegistration {
            name: r.name.into_owned(),
            addr: r.addr.into_owned(),
            port: r.port,
            cpus: r.cpus,
            boards: r.boards,
            sockets: r.sockets,
            cores_per_socket: r.cores_per_socket,
            threads_per_core: r.threads_per_core,
            real_memory: r.real_memory,
            free_memory: r.free_memory,
            cpu_load: r.cpu_load,
            gres: r.gres.into_owned(),
            os: r.os.into_owned(),
            arch: r.arch.into_owned(),
            boot_time: r.boot_time,
            start_time: r.start_time,
            running_jobs: r.running_jobs.into_owned(),
            version: r.version.into_owned(),
            boot_id: r.boot_id.into_owned(),
            fabric: r.fabric.map(Into::into),
        }
    }
}

/// What a step's tasks used (`proto::StepUsage`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepUsage<'a> {
    /// User CPU time in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_cpu_usec: Option<u64>,
    /// System CPU time in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sys_cpu_usec: Option<u64>,
    /// Largest resident set size of any task, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<u64>,
    /// Average resident set size, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_rss_kib: Option<u64>,
    /// Largest virtual memory size of any task, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_vmsize_kib: Option<u64>,
    /// The node where MaxRSS was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_node: Option<Cow<'a, str>>,
    /// The task where MaxRSS was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_task: Option<u32>,
    /// The node where MaxVMSize was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_vmsize_node: Option<Cow<'a, str>>,
    /// The task where MaxVMSize was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_vmsize_task: Option<u32>,
    /// Average virtual memory size, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_vmsize_kib: Option<u64>,
    /// Most major page faults of any task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages: Option<u64>,
    /// The node where MaxPages was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages_node: Option<Cow<'a, str>>,
    /// The task where MaxPages was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages_task: Option<u32>,
    /// Average major page faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_pages: Option<u64>,
    /// Least CPU time of any task, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cpu_usec: Option<u64>,
    /// The node of MinCPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cpu_node: Option<Cow<'a, str>>,
    /// The task of MinCPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cpu_task: Option<u32>,
    /// Average CPU time, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_cpu_usec: Option<u64>,
    /// How many tasks the averages are over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_tasks: Option<u32>,
    /// The container's start-up, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_start_usec: Option<u64>,
}

impl<'a> From<&'a proto::StepUsage> for StepUsage<'a> {
    fn from(u: &'a proto::StepUsage) -> Self {
        StepUsage {
            user_cpu_usec: u.user_cpu_usec,
            sys_cpu_usec: u.sys_cpu_usec,
            max_rss_kib: u.max_rss_kib,
            ave_rss_kib: u.ave_rss_kib,
            max_vmsize_kib: u.max_vmsize_kib,
            max_rss_node: text(&u.max_rss_node),
            max_rss_task: u.max_rss_task,
            max_vmsize_node: text(&u.max_vmsize_node),
            max_vmsize_task: u.max_vmsize_task,
            ave_vmsize_kib: u.ave_vmsize_kib,
            max_pages: u.max_pages,
            max_pages_node: text(&u.max_pages_node),
            max_pages_task: u.max_pages_task,
            ave_pages: u.ave_pages,
            min_cpu_usec: u.min_cpu_usec,
            min_cpu_node: text(&u.min_cpu_node),
            min_cpu_task: u.min_cpu_task,
            ave_cpu_usec: u.ave_cpu_usec,
            n_tasks: u.n_tasks,
            container_start_usec: u.container_start_usec,
        }
    }
}

impl From<StepUsage<'_>> for proto::StepUsage {
    fn from(u: StepUsage<'_>) -> Self {
        proto::StepUsage {
            user_cpu_usec: u.user_cpu_usec,
            sys_cpu_usec: u.sys_cpu_usec,
            max_rss_kib: u.max_rss_kib,
            ave_rss_kib: u.ave_rss_kib,
            max_vmsize_kib: u.max_vmsize_kib,
            max_rss_node: owned(u.max_rss_node),
            max_rss_task: u.max_rss_task,
            max_vmsize_node: owned(u.max_vmsize_node),
            max_vmsize_task: u.max_vmsize_task,
            ave_vmsize_kib: u.ave_vmsize_kib,
            max_pages: u.max_pages,
            max_pages_node: owned(u.max_pages_node),
            max_pages_task: u.max_pages_task,
            ave_pages: u.ave_pages,
            min_cpu_usec: u.min_cpu_usec,
            min_cpu_node: owned(u.min_cpu_node),
            min_cpu_task: u.min_cpu_task,
            ave_cpu_usec: u.ave_cpu_usec,
            n_tasks: u.n_tasks,
            container_start_usec: u.container_start_usec,
        }
    }
}

impl JobDesc<'_> {
    /// The same, owning what it borrowed (a snapshot keeps it).
    pub fn into_owned(self) -> JobDesc<'static> {
        JobDesc {
            name: own(self.name),
            script: own(self.script),
            argv: own(self.argv),
            command: self.command.map(own),
            work_dir: own(self.work_dir),
            submit_dir: own(self.submit_dir),
            submit_host: own(self.submit_host),
            submit_line: own(self.submit_line),
            env: own(self.env),
            partitions: own(self.partitions),
            min_nodes: self.min_nodes,
            max_nodes: self.max_nodes,
            ntasks: self.ntasks,
            ntasks_per_node: self.ntasks_per_node,
            cpus_per_task: self.cpus_per_task,
            mem_per_node: self.mem_per_node,
            mem_per_cpu: self.mem_per_cpu,
            mem_per_gpu: self.mem_per_gpu,
            gres: own(self.gres),
            gpus: self.gpus.map(own),
            gpus_per_node: self.gpus_per_node.map(own),
            gpus_per_task: self.gpus_per_task.map(own),
            cpus_per_gpu: self.cpus_per_gpu,
            time_limit: self.time_limit,
            time_min: self.time_min,
            stdout: self.stdout.map(own),
            stderr: self.stderr.map(own),
            stdin: self.stdin.map(own),
            open_append: self.open_append,
            exclusive: self.exclusive,
            nodelist: own(self.nodelist),
            exclude: own(self.exclude),
            constraint: self.constraint.map(own),
            hold: self.hold,
            begin_time: self.begin_time,
            signal: self.signal,
            requeue: self.requeue,
            comment: self.comment.map(own),
            acctg_freq: self.acctg_freq.map(own),
            account: self.account.map(own),
            qos: self.qos.map(own),
            nice: self.nice,
            dependency: self.dependency.map(own),
            test_only: self.test_only,
            uid: self.uid,
            gid: self.gid,
            user: own(self.user),
            alloc_sid: self.alloc_sid,
            array: self.array.map(own),
            kill_on_invalid_dep: self.kill_on_invalid_dep,
            deadline: self.deadline,
            alloc_only: self.alloc_only,
            submit_token: self.submit_token.map(own),
            licenses: self.licenses.map(own),
            gres_flags: self.gres_flags.map(own),
            mail_type: self.mail_type,
            mail_user: self.mail_user.map(own),
            user_groups: own(self.user_groups),
            hint: self.hint.map(own),
            threads_per_core: self.threads_per_core,
            ntasks_per_core: self.ntasks_per_core,
            reservation: self.reservation.map(own),
            switches: self.switches,
            switch_wait: self.switch_wait,
            segment: self.segment,
            container: own(self.container),
        }
    }
}

impl NodeRegistration<'_> {
    /// The same, owning what it borrowed (a snapshot keeps it).
    pub fn into_owned(self) -> NodeRegistration<'static> {
        NodeRegistration {
            name: own(self.name),
            addr: own(self.addr),
            port: self.port,
            cpus: self.cpus,
            boards: self.boards,
            sockets: self.sockets,
            cores_per_socket: self.cores_per_socket,
            threads_per_core: self.threads_per_core,
            real_memory: self.real_memory,
            free_memory: self.free_memory,
            cpu_load: self.cpu_load,
            gres: own(self.gres),
            os: own(self.os),
            arch: own(self.arch),
            boot_time: self.boot_time,
            start_time: self.start_time,
            running_jobs: own(self.running_jobs),
            version: own(self.version),
            boot_id: own(self.boot_id),
            fabric: self.fabric,
        }
    }
}

impl StepUsage<'_> {
    /// The same, owning what it borrowed (a snapshot keeps it).
    pub fn into_owned(self) -> StepUsage<'static> {
        StepUsage {
            user_cpu_usec: self.user_cpu_usec,
            sys_cpu_usec: self.sys_cpu_usec,
            max_rss_kib: self.max_rss_kib,
            ave_rss_kib: self.ave_rss_kib,
            max_vmsize_kib: self.max_vmsize_kib,
            max_rss_node: self.max_rss_node.map(own),
            max_rss_task: self.max_rss_task,
            max_vmsize_node: self.max_vmsize_node.map(own),
            max_vmsize_task: self.max_vmsize_task,
            ave_vmsize_kib: self.ave_vmsize_kib,
            max_pages: self.max_pages,
            max_pages_node: self.max_pages_node.map(own),
            max_pages_task: self.max_pages_task,
            ave_pages: self.ave_pages,
            min_cpu_usec: self.min_cpu_usec,
            min_cpu_node: self.min_cpu_node.map(own),
            min_cpu_task: self.min_cpu_task,
            ave_cpu_usec: self.ave_cpu_usec,
            n_tasks: self.n_tasks,
            container_start_usec: self.container_start_usec,
        }
    }
}

/// A `Cow` that owns its value.
fn own<T: ToOwned + ?Sized + 'static>(c: Cow<'_, T>) -> Cow<'static, T> {
    Cow::Owned(c.into_owned())
}

/// A job's weighted priority factors when multifactor priority last set
/// its priority (`proto::PriorityFactors`, sprio).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PriorityFactors {
    /// Site factor.
    pub site: f64,
    /// Age factor times PriorityWeightAge.
    pub age: f64,
    /// Association factor times PriorityWeightAssoc.
    pub assoc: f64,
    /// Fair-share factor times PriorityWeightFairshare.
    pub fairshare: f64,
    /// Job size factor times PriorityWeightJobSize.
    pub jobsize: f64,
    /// Partition factor times PriorityWeightPartition.
    pub partition: f64,
    /// QOS factor times PriorityWeightQOS.
    pub qos: f64,
    /// The job's nice value (subtracted).
    pub nice: i32,
    /// Each PriorityWeightTRES entry's weighted factor.
    pub tres: Vec<(String, f64)>,
}

impl From<&proto::PriorityFactors> for PriorityFactors {
    fn from(p: &proto::PriorityFactors) -> Self {
        // Every field named: a field added to the wire type must be given
        // its place on disk (or left out) here.
        let proto::PriorityFactors {
            site,
            age,
            assoc,
            fairshare,
            jobsize,
            partition,
            qos,
            nice,
            tres,
        } = p;
        PriorityFactors {
            site: *site,
            age: *age,
            assoc: *assoc,
            fairshare: *fairshare,
            jobsize: *jobsize,
            partition: *partition,
            qos: *qos,
            nice: *nice,
            tres: tres.clone(),
        }
    }
}

impl From<PriorityFactors> for proto::PriorityFactors {
    fn from(p: PriorityFactors) -> Self {
        proto::PriorityFactors {
            site: p.site,
            age: p.age,
            assoc: p.assoc,
            fairshare: p.fairshare,
            jobsize: p.jobsize,
            partition: p.partition,
            qos: p.qos,
            nice: p.nice,
            tres: p.tres,
        }
    }
}
