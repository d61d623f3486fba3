use super::*;

fn settings(numbering: GpuNumbering) -> GpuSettings {
    GpuSettings {
        numbering,
        ..GpuSettings::default()
    }
}

fn get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Issue 37: without a per-task binding every task gets all of the
/// step's GPUs (Slurm's default), named with the node's indexes.
#[test]
fn issue_37_without_binding_every_task_sees_the_steps_gpus() {
    let s = settings(GpuNumbering::Global);
    for local in 0..3 {
        assert_eq!(task_gpus(&[1, 3], &GpuBind::None, local, &s, None), [1, 3]);
    }
    let env = gpu_env(&[1, 3], &[1, 3], &s);
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("1,3"));
    assert_eq!(get(&env, "ROCR_VISIBLE_DEVICES"), Some("1,3"));
    assert_eq!(get(&env, "ZE_AFFINITY_MASK"), Some("1,3"));
    assert_eq!(get(&env, "GPU_DEVICE_ORDINAL"), Some("1,3"));
    assert_eq!(get(&env, "SLURM_STEP_GPUS"), Some("1,3"));
    assert_eq!(get(&env, "SLURM_GPUS_ON_NODE"), Some("2"));
    assert!(gpu_env(&[], &[], &s).is_empty());
}

/// Issue 37, acceptance test 14: `--gpus-per-task=1` gives each task its
/// own GPU; `single:2` puts two tasks on each; `map_gpu:1,0` swaps them.
#[test]
fn issue_37_per_task_bindings() {
    let s = settings(GpuNumbering::Global);
    let step = [2, 3];
    let per_task = |b: &GpuBind| -> Vec<Vec<u32>> {
        (0..4).map(|t| task_gpus(&step, b, t, &s, None)).collect()
    };
    assert_eq!(per_task(&GpuBind::PerTask(1)), [[2], [3], [2], [3]]);
    assert_eq!(
        per_task(&GpuBind::PerTask(2)),
        [[2, 3], [2, 3], [2, 3], [2, 3]]
    );
    assert_eq!(per_task(&GpuBind::Single(2)), [[2], [2], [3], [3]]);
    // Node indexes when devices are not confined; ids outside the step
    // give nothing.
    assert_eq!(
        per_task(&GpuBind::Map(vec![3, 2])),
        [vec![3], vec![2], vec![3], vec![2]]
    );
    assert_eq!(
        per_task(&GpuBind::Map(vec![0])),
        [Vec::<u32>::new(), vec![], vec![], vec![]]
    );
    assert_eq!(
        per_task(&GpuBind::Mask(vec![0xc, 0x8])),
        [vec![2, 3], vec![3], vec![2, 3], vec![3]]
    );
    // Confined: ids count among the step's GPUs.
    let c = settings(GpuNumbering::Step);
    assert_eq!(
        task_gpus(&step, &GpuBind::Map(vec![1, 0]), 0, &c, None),
        [3]
    );
    assert_eq!(
        task_gpus(&step, &GpuBind::Map(vec![1, 0]), 1, &c, None),
        [2]
    );
    assert_eq!(
        task_gpus(&step, &GpuBind::Mask(vec![0x2]), 0, &c, None),
        [3]
    );
}

/// Issue 37, acceptance test 12: with devices confined the vendor
/// variables count from 0 among what the task's cgroup shows, while
/// SLURM_STEP_GPUS keeps the node's indexes.
#[test]
fn issue_37_numbering_follows_what_the_task_can_see() {
    let step = [1, 2, 3];
    let global = gpu_env(&step, &[2, 3], &settings(GpuNumbering::Global));
    assert_eq!(get(&global, "CUDA_VISIBLE_DEVICES"), Some("2,3"));
    let in_step = gpu_env(&step, &[2, 3], &settings(GpuNumbering::Step));
    assert_eq!(get(&in_step, "CUDA_VISIBLE_DEVICES"), Some("1,2"));
    assert_eq!(get(&in_step, "SLURM_STEP_GPUS"), Some("1,2,3"));
    let in_task = gpu_env(&step, &[2, 3], &settings(GpuNumbering::Task));
    assert_eq!(get(&in_task, "CUDA_VISIBLE_DEVICES"), Some("0,1"));
    assert_eq!(get(&in_task, "SLURM_GPUS_ON_NODE"), Some("3"));
}

/// Issue 37: `closest` picks the GPUs whose `Cores=` hold the task's CPUs;
/// without the task's CPUs or `Cores=` every GPU of the step.
#[test]
fn issue_37_closest_uses_cores() {
    let line = |files: &[&str], cores: Option<&str>| conf::GresConf {
        node_names: vec![],
        name: "gpu".into(),
        type_: Some("fake".into()),
        files: files.iter().map(|f| f.to_string()).collect(),
        count: files.len() as u64,
        cores: cores.map(str::to_string),
        links: None,
        flags: vec![],
        autodetect: None,
        line: 1,
    };
    let a = line(&["/d/nvidia0", "/d/nvidia1"], Some("0-1"));
    let b = line(&["/d/nvidia2", "/d/nvidia3"], Some("2-3"));
    let s = GpuSettings::from_gres(&[&a, &b], GpuNumbering::Global);
    assert_eq!(s.cores.get(&3), Some(&vec![2, 3]));
    let step = [0, 1, 2, 3];
    assert_eq!(
        task_gpus(&step, &GpuBind::Closest, 0, &s, Some(&[3])),
        [2, 3]
    );
    assert_eq!(
        task_gpus(&step, &GpuBind::Closest, 0, &s, Some(&[0])),
        [0, 1]
    );
    assert_eq!(task_gpus(&step, &GpuBind::Closest, 0, &s, None), step);
    let none = line(&["/d/nvidia0"], None);
    let s = GpuSettings::from_gres(&[&none], GpuNumbering::Global);
    assert_eq!(task_gpus(&[0], &GpuBind::Closest, 0, &s, Some(&[1])), [0]);
}

/// Issue 37: two tasks bound to CPUs of different sockets each get their
/// socket's GPU; a task whose CPUs no GPU's `Cores=` hold gets the
/// nearest; a GPU without `Cores=` is near every CPU.
#[test]
fn issue_37_closest_per_task_and_nearest() {
    let cores: BTreeMap<u32, Vec<u32>> = [(0, vec![0, 1]), (1, vec![2, 3])].into();
    let s = GpuSettings {
        cores: cores.clone(),
        ..GpuSettings::default()
    };
    let step = [0, 1];
    assert_eq!(task_gpus(&step, &GpuBind::Closest, 0, &s, Some(&[1])), [0]);
    assert_eq!(task_gpus(&step, &GpuBind::Closest, 1, &s, Some(&[2])), [1]);
    // Spanning both sockets: both.
    assert_eq!(closest(&step, &cores, &[1, 2]), [0, 1]);
    // CPU 5 is in no Cores=: GPU 1 (Cores=2-3) is nearer.
    assert_eq!(closest(&step, &cores, &[5]), [1]);
    // Only GPU 0 in the step, the task on the other socket: still GPU 0.
    assert_eq!(closest(&[0], &cores, &[3]), [0]);
    // GPU 2 has no Cores=: near the task wherever it runs.
    assert_eq!(closest(&[0, 1, 2], &cores, &[3]), [1, 2]);
    // No CPUs known, or none given: every GPU of the step.
    assert_eq!(task_gpus(&step, &GpuBind::Closest, 0, &s, Some(&[])), step);
}

/// Issue 37: gres.conf `Flags=` choose the vendor variables.
#[test]
fn issue_37_flags_choose_the_vendor_variables() {
    let s = GpuSettings {
        env: GpuEnvVars::from_flags(["nvidia_gpu_env", "countonly"]),
        ..GpuSettings::default()
    };
    let env = gpu_env(&[0], &[0], &s);
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("0"));
    assert_eq!(get(&env, "ROCR_VISIBLE_DEVICES"), None);
    assert_eq!(get(&env, "ZE_AFFINITY_MASK"), None);
    let none = GpuSettings {
        env: GpuEnvVars::from_flags(["no_gpu_env"]),
        ..GpuSettings::default()
    };
    let env = gpu_env(&[0], &[0], &none);
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), None);
    assert_eq!(get(&env, "SLURM_STEP_GPUS"), Some("0"));
    assert_eq!(GpuEnvVars::from_flags(["countonly"]), GpuEnvVars::default());
}

#[test]
fn issue_37_numbering_follows_confinement() {
    assert_eq!(
        GpuNumbering::for_confinement(false, true),
        GpuNumbering::Global
    );
    assert_eq!(
        GpuNumbering::for_confinement(true, false),
        GpuNumbering::Step
    );
    assert_eq!(
        GpuNumbering::for_confinement(true, true),
        GpuNumbering::Task
    );
    assert_eq!(GpuNumbering::default(), GpuNumbering::Global);
}
