use super::*;

fn env(b: &Binding, key: &str) -> String {
    b.env
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

#[test]
fn node_ids_map_onto_the_hosts_cpus_modulo_their_number() {
    assert_eq!(to_host(&[0, 1], &[0, 1, 2, 3]), vec![0, 1]);
    assert_eq!(to_host(&[2, 3], &[0, 1]), vec![0, 1]);
    assert_eq!(to_host(&[0, 2], &[4, 6]), vec![4]);
    assert_eq!(to_host(&[3], &[]), vec![3]);
}

#[test]
fn cpu_lists_parse_as_the_kernel_writes_them() {
    assert_eq!(parse_cpu_list("0-3,8\n"), vec![0, 1, 2, 3, 8]);
    assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
    assert_eq!(parse_cpu_list("5"), vec![5]);
}

/// Slurm's default with task/affinity (the reference capture of a
/// one-task step on CPU 1: `SLURM_CPU_BIND=quiet,mask_cpu:0x2`).
#[test]
fn default_binds_each_task_to_its_cores_quietly() {
    let b = plan(None, &[1], &[0, 1], 1, 1);
    assert_eq!(b.tasks, vec![Some(vec![1])]);
    assert_eq!(env(&b, "SLURM_CPU_BIND"), "quiet,mask_cpu:0x2");
    assert_eq!(env(&b, "SLURM_CPU_BIND_LIST"), "0x2");
    assert_eq!(env(&b, "SLURM_CPU_BIND_TYPE"), "mask_cpu:");
    assert_eq!(env(&b, "SLURM_CPU_BIND_VERBOSE"), "quiet");
    assert!(!b.verbose);
    // More tasks than CPUs: not bound by default.
    let b = plan(None, &[0], &[0, 1], 2, 1);
    assert_eq!(b.tasks, vec![None, None]);
    assert_eq!(env(&b, "SLURM_CPU_BIND"), "quiet,none");
}

#[test]
fn cores_give_each_task_its_cpus_per_task() {
    let b = plan(Some("verbose,cores"), &[0, 1, 2, 3], &[0, 1, 2, 3], 2, 2);
    assert_eq!(b.tasks, vec![Some(vec![0, 1]), Some(vec![2, 3])]);
    assert_eq!(env(&b, "SLURM_CPU_BIND"), "verbose,mask_cpu:0x3,0xc");
    assert!(b.verbose);
}

#[test]
fn none_rank_map_and_mask_bind_as_asked() {
    let b = plan(Some("none"), &[0, 1], &[0, 1], 2, 1);
    assert_eq!(b.tasks, vec![None, None]);
    assert_eq!(env(&b, "SLURM_CPU_BIND_TYPE"), "none");
    assert_eq!(env(&b, "SLURM_CPU_BIND_LIST"), "");
    let b = plan(Some("rank"), &[2, 3], &[0, 1, 2, 3], 2, 1);
    assert_eq!(b.tasks, vec![Some(vec![2]), Some(vec![3])]);
    let b = plan(Some("map_cpu:1,0"), &[0, 1], &[0, 1], 2, 1);
    assert_eq!(b.tasks, vec![Some(vec![1]), Some(vec![0])]);
    let b = plan(Some("mask_cpu:0x3"), &[0, 1], &[0, 1], 2, 1);
    assert_eq!(b.tasks, vec![Some(vec![0, 1]), Some(vec![0, 1])]);
    let b = plan(Some("sockets"), &[0, 1], &[0, 1], 1, 1);
    assert_eq!(b.tasks, vec![Some(vec![0, 1])]);
}

/// A test cluster's node that claims more CPUs than the host has binds
/// to host CPUs that exist.
#[test]
fn bindings_land_on_host_cpus_that_exist() {
    let b = plan(Some("cores"), &[3], &[0, 1], 1, 1);
    assert_eq!(b.tasks, vec![Some(vec![1])]);
    assert_eq!(env(&b, "SLURM_CPU_BIND_LIST"), "0x2");
}

#[test]
fn verbose_line_has_slurms_form() {
    assert_eq!(
        verbose_line("node1", 0, 0, 4242, Some(&[0]), &[0, 1]),
        "cpu-bind=MASK - node1, task  0  0 [4242]: mask 0x1 set\n"
    );
    assert_eq!(
        verbose_line("node1", 12, 1, 7, None, &[0, 1]),
        "cpu-bind=NULL - node1, task 12  1 [7]: mask 0x3 set\n"
    );
}

#[test]
fn a_mask_binds_this_process() {
    let host = host_cpus();
    assert!(!host.is_empty());
    // Binding to what it already has changes nothing and succeeds.
    assert!(CpuMask::new(&host).apply());
    assert_eq!(host_cpus(), host);
}

/// `--gpu-bind=closest` reads each task's CPUs by the node's ids, which
/// differ from the host's where the node claims more CPUs than it has.
#[test]
fn node_ids_of_each_task_are_kept_beside_the_hosts() {
    let b = plan(Some("cores"), &[2, 3], &[0, 1], 2, 1);
    assert_eq!(b.node_tasks, vec![Some(vec![2]), Some(vec![3])]);
    assert_eq!(b.tasks, vec![Some(vec![0]), Some(vec![1])]);
    let b = plan(Some("none"), &[2, 3], &[0, 1], 2, 1);
    assert_eq!(b.node_tasks, vec![None, None]);
}

/// A node of two threads per core (ids 0-1 core 0, 2-3 core 1): the
/// default and `cores` give each task its whole core; more tasks than
/// cores bind to threads by default.
#[test]
fn whole_cores_on_a_node_of_two_threads_per_core() {
    let b = plan_smt(None, &[0, 1], &[0, 1], 1, 1, 2);
    assert_eq!(b.tasks, vec![Some(vec![0, 1])]);
    assert_eq!(env(&b, "SLURM_CPU_BIND"), "quiet,mask_cpu:0x3");
    let b = plan_smt(Some("cores"), &[0, 1, 2, 3], &[0, 1, 2, 3], 2, 1, 2);
    assert_eq!(b.tasks, vec![Some(vec![0, 1]), Some(vec![2, 3])]);
    let b = plan_smt(None, &[0, 1], &[0, 1], 2, 1, 2);
    assert_eq!(b.tasks, vec![Some(vec![0]), Some(vec![1])]);
    let b = plan_smt(Some("threads"), &[0, 1, 2, 3], &[0, 1, 2, 3], 2, 1, 2);
    assert_eq!(b.tasks, vec![Some(vec![0]), Some(vec![1])]);
}

/// Host CPUs in Slurm's order: a core's threads together, whatever the
/// kernel's numbering (siblings 0 and 2 here).
#[test]
fn host_cpus_come_core_by_core() {
    let key = |c: u32| Some((0, 0, c % 2));
    assert_eq!(in_core_order(vec![0, 1, 2, 3], key), vec![0, 2, 1, 3]);
    assert_eq!(in_core_order(vec![0, 1], |_| None), vec![0, 1]);
    // Two sockets numbered alternately: socket 0's first.
    let key = |c: u32| Some((c % 2, 0, c / 2));
    assert_eq!(in_core_order(vec![0, 1, 2, 3], key), vec![0, 2, 1, 3]);
}
