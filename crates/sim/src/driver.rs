//! The virtual clock: replays a trace through the controller's own
//! `engine::Engine` (and so `sched::plan`), by the entry point ctld uses
//! (`Engine::apply`): nodes register, jobs are submitted, every batch of
//! events is followed by one tick, timers then a pass (a pass that could
//! start nothing is skipped: `Input::TickUnlessIdle`), launches become job
//! ends `run` seconds later.
//!
//! ```text
//!   trace jobs --submit at t--> apply(Request(Submit))
//!   job ends   --at start+run-> apply(Request(JobExited))  then apply(TickUnlessIdle)
//!   Command::LaunchBatch  <----------------------------------+  (start = t)
//! ```
//!
//! No clock, no threads: time jumps from one event to the next.

use crate::swf::{Machine, Trace};
use engine::{Command, Engine, Input};
use model::{ExitCode, JobId, TimeLimit, Timestamp};
use proto::{CtldRequest, CtldResponse, Identity, JobDesc, NodeRegistration};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// `simulate_with`'s trace index of an engine job id that is none of the
/// trace's.
const NOT_OURS: usize = usize::MAX;

/// One simulated job's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    /// The trace's job number.
    pub id: u64,
    /// Submission (seconds from the trace's start).
    pub submit: i64,
    /// Start.
    pub start: i64,
    /// End.
    pub end: i64,
    /// Processors.
    pub procs: u32,
    /// Nodes it ran on: indices into the configuration's nodes
    /// (`report::csv` writes them as a hostlist).
    pub nodes: Vec<u32>,
}

/// The state of the cluster after one batch of events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// When.
    pub t: i64,
    /// Processors of running jobs.
    pub busy: u64,
    /// Jobs waiting.
    pub queued: u64,
}

/// What a simulation produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// One record per job that ran, in trace order.
    pub records: Vec<JobRecord>,
    /// Jobs the controller refused at submission: (trace id, why).
    pub refused: Vec<(u64, String)>,
    /// The cluster after every batch of events.
    pub samples: Vec<Sample>,
    /// Scheduling passes run.
    pub passes: u64,
    /// With `track_plans`: the first planned start each job was given
    /// (trace id -> time), to check that plans are never broken.
    pub first_plans: BTreeMap<u64, i64>,
}

/// The slurm.conf of a trace's machine: one partition over MaxNodes nodes,
/// with `sched` lines (SchedulerType, SchedulerParameters, ...) added.
pub fn machine_conf(m: &Machine, sched: &str) -> String {
    format!(
        "ClusterName=sim\nSlurmctldHost=sim\nSlurmdTimeout=0\nMinJobAge=0\n\
         MaxJobCount=4000000000\nSelectTypeParameters=CR_Core\n{sched}\
         NodeName=n[1-{n}] CPUs={c} RealMemory=1000\n\
         PartitionName=batch Nodes=n[1-{n}] Default=YES MaxTime=INFINITE State=UP\n",
        n = m.nodes,
        c = m.cpus_per_node
    )
}

/// Makes a configuration fit for simulation: no node ever times out (the
/// simulated nodes do not answer pings), finished jobs leave the tables at
/// once (their records are kept here), and there is no cap on jobs.
pub fn simulation_ready(cfg: &mut conf::Config) {
    cfg.slurmd_timeout = 0;
    cfg.min_job_age = 0;
    cfg.max_job_count = u32::MAX;
}

fn registration(node: &conf::NodeConf) -> NodeRegistration {
    NodeRegistration {
        name: node.name.clone(),
        addr: "sim".into(),
        port: 0,
        cpus: node.cpus,
        boards: 1,
        sockets: node.cpus.max(1),
        cores_per_socket: 1,
        threads_per_core: 1,
        real_memory: node.real_memory,
        free_memory: node.real_memory,
        cpu_load: 0.0,
        gres: vec![],
        os: "Linux".into(),
        arch: "x86_64".into(),
        boot_time: 0,
        start_time: 0,
        running_jobs: vec![],
        version: "sim".into(),
        boot_id: String::new(),
        fabric: None,
    }
}

/// Users and groups of the trace become users and accounts, so that
/// fair-share has something to work on; a sacct export keeps its names.
fn identity(user: i64, group: i64, name: Option<&str>) -> Identity {
    let uid = if user >= 0 {
        10_000 + user as u32
    } else {
        9_999
    };
    Identity {
        uid,
        gid: if group >= 0 {
            10_000 + group as u32
        } else {
            9_999
        },
        user: name.map_or_else(|| format!("user{}", uid - 9_999), str::to_string),
        host: "sim".into(),
    }
}

/// Replays `trace` through an engine built from `cfg` (already
/// `simulation_ready`), with `sched` as its scheduler settings.
/// `progress(done, total)` is called now and then. With `track_plans`
/// every batch gets its pass, so that the plans recorded are those a
/// controller shows.
pub fn simulate(
    trace: &Trace,
    cfg: &conf::Config,
    sched: sched::SchedConfig,
    track_plans: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Outcome {
    simulate_with(trace, cfg, sched, track_plans, false, progress)
}

/// `simulate`, with `full_passes`: a pass over every job after every batch
/// (`Engine::set_full_passes`), to check that the shortcut changes nothing.
pub fn simulate_with(
    trace: &Trace,
    cfg: &conf::Config,
    sched: sched::SchedConfig,
    track_plans: bool,
    full_passes: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Outcome {
    let mut engine = Engine::new(cfg, 0);
    engine.set_full_passes(full_passes);
    engine.set_sched_config(sched);
    engine.set_simulated(true);
    for n in &cfg.nodes {
        // A node of the configuration always registers.
        let _ = engine.on_node_registered(registration(n), 0);
    }
    let mut out = Outcome::default();
    // Engine job id -> trace index (`NOT_OURS`: none), by the id's number:
    // the engine numbers the jobs it accepts one after another.
    let mut by_id: Vec<usize> = Vec::new();
    let mut started: Vec<Option<(i64, u32, Vec<u32>)>> = vec![None; trace.jobs.len()];
    let mut ends: BinaryHeap<Reverse<(Timestamp, JobId)>> = BinaryHeap::new();
    // The batch host of each started job, by trace index.
    let mut batch_host: Vec<String> = vec![String::new(); trace.jobs.len()];
    // The identities of a trace without user names, made once per user.
    let mut identities: BTreeMap<(i64, i64), Identity> = BTreeMap::new();
    // Who reports a job's end: the node daemons (the engine does not read it).
    let node_daemon = Identity {
        uid: 0,
        gid: 0,
        user: "root".into(),
        host: "sim".into(),
    };
    let (mut next, mut busy, mut queued, mut done) = (0usize, 0u64, 0u64, 0usize);
    let total = trace.jobs.len();
    let mut last_t = i64::MIN;
    let mut batches = 0u64;
    loop {
        let t_sub = trace.jobs.get(next).map(|j| j.submit);
        let t_end = ends.peek().map(|e| e.0 .0);
        let t_wake = engine.next_wakeup().filter(|w| *w > last_t);
        let Some(t) = [t_sub, t_end, t_wake].into_iter().flatten().min() else {
            break;
        };
        last_t = t;
        while let Some(Reverse((end, id))) = ends.peek().copied() {
            if end > t {
                break;
            }
            ends.pop();
            let k = by_id[id.0 as usize];
            let node = std::mem::take(&mut batch_host[k]);
            let exited = CtldRequest::JobExited {
                job_id: id,
                node,
                exit: ExitCode::default(),
                launch_failed: None,
                usage: None,
                oom_kills: 0,
                script_failed: None,
            };
            engine.apply(
                Input::Request {
                    req: Box::new(exited),
                    who: node_daemon.clone(),
                },
                t,
            );
            busy -= u64::from(trace.jobs[k].procs);
            done += 1;
        }
        while let Some(job) = trace.jobs.get(next) {
            if job.submit > t {
                break;
            }
            let minutes = (job.req_time.max(1) as u64).div_ceil(60);
            let desc = JobDesc {
                name: format!("swf{}", job.id),
                script: "#!/bin/sh\n".into(),
                work_dir: "/".into(),
                submit_dir: "/".into(),
                ntasks: Some(job.procs),
                time_limit: Some(TimeLimit::Minutes(minutes.min(u64::from(u32::MAX)) as u32)),
                account: job
                    .account
                    .clone()
                    .or_else(|| (job.group >= 0).then(|| format!("group{}", job.group))),
                // A sacct export's partition, where the simulated
                // configuration has one of that name (else the default).
                partitions: job
                    .partition
                    .iter()
                    .filter(|p| cfg.partitions.iter().any(|c| &c.name == *p))
                    .cloned()
                    .collect(),
                ..JobDesc::default()
            };
            let made;
            let who = match &job.user_name {
                Some(name) => {
                    made = identity(job.user, job.group, Some(name));
                    &made
                }
                None => identities
                    .entry((job.user, job.group))
                    .or_insert_with(|| identity(job.user, job.group, None)),
            };
            let submit = Input::Request {
                req: Box::new(CtldRequest::Submit(Box::new(desc))),
                who: who.clone(),
            };
            match engine.apply(submit, t).reply {
                Some(CtldResponse::Submitted(reply)) => {
                    let at = reply.job_id.0 as usize;
                    if by_id.len() <= at {
                        by_id.resize(at + 1, NOT_OURS);
                    }
                    by_id[at] = next;
                    queued += 1;
                }
                Some(CtldResponse::Error(e)) => {
                    out.refused.push((job.id, e.as_slurm_str().to_string()));
                    done += 1;
                }
                other => unreachable!("a submission answers Submitted or Error, not {other:?}"),
            }
            next += 1;
        }
        // A pass that can start nothing only gives the waiting jobs
        // reasons and plans, which the next pass makes again: skipped
        // (`Input::TickUnlessIdle`; never with `full_passes`), unless the
        // plans are tracked (they are those a controller shows).
        let tick = if track_plans {
            Input::Tick
        } else {
            Input::TickUnlessIdle
        };
        if engine.apply(tick, t).scheduled {
            out.passes += 1;
        }
        batches += 1;
        // Debug builds (the tests) check the engine's own bookkeeping
        // (allocations, the earliest deadline it keeps) after every batch.
        debug_assert_eq!(engine.check_invariants(), Vec::<String>::new(), "at {t}");
        for cmd in engine.take_commands() {
            // Jobs never outlive their limit (requested time >= run time),
            // nothing is cancelled, and accounting is not kept: only
            // launches matter.
            let Command::LaunchBatch { node, launch, .. } = cmd else {
                continue;
            };
            let id = launch.job_id;
            let Some(&k) = by_id.get(id.0 as usize).filter(|k| **k != NOT_OURS) else {
                continue;
            };
            let job = &trace.jobs[k];
            let on: Vec<u32> = engine
                .job(id)
                .map(|j| j.ran_on.iter().map(|i| i.0).collect())
                .unwrap_or_default();
            started[k] = Some((t, job.procs, on));
            ends.push(Reverse((t + job.run, id)));
            batch_host[k] = node;
            busy += u64::from(job.procs);
            queued -= 1;
        }
        if track_plans {
            for (id, p) in engine.plans() {
                if let Some(&k) = by_id.get(id.0 as usize).filter(|k| **k != NOT_OURS) {
                    out.first_plans.entry(trace.jobs[k].id).or_insert(p.start);
                }
            }
        }
        out.samples.push(Sample { t, busy, queued });
        if batches & 4095 == 0 {
            progress(done, total);
        }
    }
    progress(done, total);
    for (k, job) in trace.jobs.iter().enumerate() {
        if let Some((start, procs, nodes)) = started[k].take() {
            out.records.push(JobRecord {
                id: job.id,
                submit: job.submit,
                start,
                end: start + job.run,
                procs,
                nodes,
            });
        }
    }
    out
}
