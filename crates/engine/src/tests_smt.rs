//! Nodes of several threads per core (issue 37, item 4): under
//! `SelectTypeParameters=CR_Core` a job takes whole cores, as Slurm's
//! select/cons_tres does, and two jobs never share a core; under `CR_CPU`
//! each thread is its own CPU.

use crate::tests::{assert_invariants, config, desc, reg, submit, user};
use crate::{Command, Engine};
use model::{JobId, PendingReason};
use proto::JobDesc;

/// One node `s1` of two cores of two threads (CPU ids 0-1: core 0,
/// 2-3: core 1) under `select`.
fn smt_engine(select: &str) -> Engine {
    let cfg = config(&format!(
        "ClusterName=c\nSlurmctldHost=h\nSelectTypeParameters={select}\nGresTypes=gpu\n\
         NodeName=s1 Sockets=1 CoresPerSocket=2 ThreadsPerCore=2 RealMemory=4000 Port=7001\n\
         PartitionName=p Nodes=s1 Default=YES MaxTime=INFINITE State=UP\n"
    ));
    let mut e = Engine::new(&cfg, 0);
    e.on_node_registered(reg("s1", 4, 4000), 0).unwrap();
    e
}

fn tasks(n: u32) -> JobDesc {
    let mut d = desc();
    d.ntasks = Some(n);
    d
}

/// (CPUs, CPU ids) the job holds on its one node; None while pending.
fn held(e: &Engine, id: JobId) -> Option<(u32, Vec<u32>)> {
    let a = e.jobs[&id].alloc.as_ref()?;
    Some((a.nodes[0].cpus, a.nodes[0].cpu_ids.clone()))
}

fn batch_env(e: &mut Engine, id: JobId, key: &str) -> Option<String> {
    e.take_commands().into_iter().find_map(|c| match c {
        Command::LaunchBatch { launch, .. } if launch.job_id == id => launch
            .env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone()),
        _ => None,
    })
}

#[test]
fn cr_core_gives_a_one_task_job_both_threads_of_a_core() {
    let mut e = smt_engine("CR_Core");
    let a = submit(&mut e, tasks(1), 0);
    assert_eq!(held(&e, a), Some((2, vec![0, 1])));
    assert_eq!(
        batch_env(&mut e, a, "SLURM_CPUS_ON_NODE").as_deref(),
        Some("2")
    );
    assert_eq!(
        e.job_info(&e.jobs[&a], 0).cpu_ids_per_node,
        vec![vec![0, 1]]
    );
    let b = submit(&mut e, tasks(1), 0);
    assert_eq!(held(&e, b), Some((2, vec![2, 3])));
    // Every core is taken: a third one-task job waits, though no thread
    // runs a task.
    let c = submit(&mut e, tasks(1), 0);
    assert_eq!(held(&e, c), None);
    assert_eq!(e.jobs[&c].reason, PendingReason::Resources);
    e.on_job_exited(a, "s1", model::ExitCode::default(), None, 1)
        .unwrap();
    e.schedule(1);
    assert_invariants(&e);
    assert_eq!(held(&e, c), Some((2, vec![0, 1])));
}

#[test]
fn cr_core_packs_tasks_on_a_cores_threads() {
    let mut e = smt_engine("CR_Core_Memory");
    // Two tasks: one core. Three: two cores.
    let a = submit(&mut e, tasks(2), 0);
    assert_eq!(held(&e, a), Some((2, vec![0, 1])));
    e.on_job_exited(a, "s1", model::ExitCode::default(), None, 1)
        .unwrap();
    e.schedule(1);
    let b = submit(&mut e, tasks(3), 1);
    assert_eq!(held(&e, b), Some((4, vec![0, 1, 2, 3])));
}

#[test]
fn cr_cpu_keeps_threads_as_cpus() {
    let mut e = smt_engine("CR_CPU");
    let a = submit(&mut e, tasks(1), 0);
    let b = submit(&mut e, tasks(1), 0);
    assert_eq!(held(&e, a), Some((1, vec![0])));
    assert_eq!(held(&e, b), Some((1, vec![1])));
}

/// `--hint=nomultithread`, `--threads-per-core=1` and
/// `--ntasks-per-core=1`: one task per core, the job holding whole cores.
#[test]
fn one_task_per_core_when_asked() {
    for how in ["hint", "threads", "ntasks"] {
        let mut e = smt_engine("CR_Core");
        let mut d = tasks(2);
        match how {
            "hint" => d.hint = Some("nomultithread".into()),
            "threads" => d.threads_per_core = Some(1),
            _ => d.ntasks_per_core = Some(1),
        }
        let a = submit(&mut e, d.clone(), 0);
        assert_eq!(held(&e, a), Some((4, vec![0, 1, 2, 3])), "{how}");
        // Three tasks one per core never fit two cores.
        d.ntasks = Some(3);
        assert_eq!(
            e.on_submit(d, &user(), 0).unwrap_err(),
            proto::SlurmError::RequestedNodeConfigUnavailable,
            "{how}"
        );
    }
    // Without SMT-aware allocation (CR_CPU) the hint changes nothing.
    let mut e = smt_engine("CR_CPU");
    let mut d = tasks(2);
    d.hint = Some("nomultithread".into());
    let a = submit(&mut e, d, 0);
    assert_eq!(held(&e, a), Some((2, vec![0, 1])));
}

/// Memory per CPU counts the CPUs the job holds (both threads).
#[test]
fn mem_per_cpu_counts_the_whole_core() {
    let mut e = smt_engine("CR_Core_Memory");
    let mut d = tasks(1);
    d.mem_per_cpu = Some(100);
    let a = submit(&mut e, d, 0);
    assert_eq!(e.jobs[&a].alloc.as_ref().unwrap().nodes[0].mem, 200);
}

/// `--exclusive` takes the node's every CPU, as before.
#[test]
fn an_exclusive_job_holds_every_thread() {
    let mut e = smt_engine("CR_Core");
    let mut d = tasks(1);
    d.exclusive = true;
    let a = submit(&mut e, d, 0);
    assert_eq!(held(&e, a), Some((4, vec![0, 1, 2, 3])));
}

/// `SelectTypeParameters=...,ENFORCE_BINDING_GRES` binds every job to its
/// GPUs' cores, as `--gres-flags=enforce-binding` does; `disable-binding`
/// turns it off for a job. gres.conf `Cores=` names cores: on a node of
/// two threads per core, core 1 is CPU ids 2-3.
#[test]
fn enforce_binding_gres_binds_every_job() {
    let mut cfg = config(
        "ClusterName=c\nSlurmctldHost=h\nSelectTypeParameters=CR_Core,ENFORCE_BINDING_GRES\n\
         GresTypes=gpu\n\
         NodeName=g1 Sockets=1 CoresPerSocket=2 ThreadsPerCore=2 RealMemory=4000 Gres=gpu:2 Port=7001\n\
         PartitionName=p Nodes=g1 Default=YES MaxTime=INFINITE State=UP\n",
    );
    cfg.gres = conf::parse_gres_conf(
        "Name=gpu File=/dev/nvidia0 Cores=0\nName=gpu File=/dev/nvidia1 Cores=1\n",
        std::path::Path::new("/x/gres.conf"),
    )
    .expect("gres.conf parses")
    .0;
    let mut e = Engine::new(&cfg, 0);
    e.on_node_registered(reg("g1", 4, 4000), 0).unwrap();
    let gpu_job = |flags: Option<&str>| {
        let mut d = tasks(1);
        d.gres = vec![model::Gres::parse("gpu:1").unwrap()];
        d.gres_flags = flags.map(str::to_string);
        d
    };
    let gpus = |e: &Engine, id: JobId| -> Vec<u32> {
        e.jobs[&id].alloc.as_ref().unwrap().nodes[0]
            .gres
            .iter()
            .flat_map(|g| g.1.clone())
            .collect()
    };
    let a = submit(&mut e, gpu_job(Some("disable-binding")), 0);
    assert_eq!((gpus(&e, a), held(&e, a)), (vec![0], Some((2, vec![0, 1]))));
    let b = submit(&mut e, gpu_job(None), 0);
    assert_eq!((gpus(&e, b), held(&e, b)), (vec![1], Some((2, vec![2, 3]))));
}
