use super::*;
use model::JobId;

fn launch() -> BatchLaunch {
    BatchLaunch {
        job_id: JobId(66778),
        uid: 2001,
        gid: 2001,
        user: "sauser".into(),
        script: "#!/bin/sh\n".into(),
        argv: vec![],
        env: vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("SLURM_JOB_ID".into(), "66778".into()),
            ("SLURMD_NODENAME".into(), "wrong".into()),
        ],
        work_dir: "/home/sauser".into(),
        stdout: "/home/sauser/slurm-66778.out".into(),
        stderr: "/home/sauser/slurm-66778.out".into(),
        stdin: "/dev/null".into(),
        open_append: false,
        cpus: 2,
        mem: 1000,
        gpus: vec![],
        cpu_ids: vec![],
        time_limit_secs: None,
        acctg_freq: None,
        restarts: 0,
        container: Vec::new(),
    }
}

fn node() -> NodeEnv<'static> {
    NodeEnv {
        node_name: "node1",
        conf_path: "/etc/slurm/slurm.conf",
        topology_addr: None,
        gpu_env: Default::default(),
        gpus_relative: false,
    }
}

fn get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

#[test]
fn node_facts_are_added_and_replace_sent_values() {
    let env = job_env(&launch(), &node());
    assert_eq!(get(&env, "PATH"), Some("/usr/bin:/bin"));
    assert_eq!(get(&env, "SLURM_JOB_ID"), Some("66778"));
    assert_eq!(get(&env, "SLURMD_NODENAME"), Some("node1"));
    assert_eq!(get(&env, "SLURM_TOPOLOGY_ADDR"), Some("node1"));
    assert_eq!(get(&env, "SLURM_TOPOLOGY_ADDR_PATTERN"), Some("node"));
    // Under a switch tree (topology/tree): the switches, top first.
    let under = NodeEnv {
        topology_addr: Some(("top.s0.node1", "switch.switch.node")),
        ..node()
    };
    let env = job_env(&launch(), &under);
    assert_eq!(get(&env, "SLURM_TOPOLOGY_ADDR"), Some("top.s0.node1"));
    assert_eq!(
        get(&env, "SLURM_TOPOLOGY_ADDR_PATTERN"),
        Some("switch.switch.node")
    );
    assert_eq!(get(&env, "SLURM_CONF"), Some("/etc/slurm/slurm.conf"));
    assert_eq!(get(&env, "SLURM_CPUS_ON_NODE"), Some("2"));
    assert_eq!(get(&env, "ENVIRONMENT"), Some("BATCH"));
    assert_eq!(get(&env, "SLURM_PROCID"), Some("0"));
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), None);
    // Each name once.
    let mut names: Vec<_> = env.iter().map(|(k, _)| k.clone()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), env.len());
    // The controller's order is kept.
    assert_eq!(env[0].0, "PATH");
}

#[test]
fn daemon_environment_is_not_inherited() {
    let env = job_env(&launch(), &node());
    assert_eq!(get(&env, "HOME"), None);
    assert_eq!(get(&env, "CARGO_PKG_NAME"), None);
}

#[test]
fn gpus_set_visible_devices_unless_sent() {
    let mut l = launch();
    l.gpus = vec![0, 1];
    l.env.push(("GPU_DEVICE_ORDINAL".into(), "5".into()));
    let env = job_env(&l, &node());
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("0,1"));
    assert_eq!(get(&env, "SLURM_JOB_GPUS"), Some("0,1"));
    assert_eq!(get(&env, "SLURM_GPUS_ON_NODE"), Some("2"));
    assert_eq!(get(&env, "GPU_DEVICE_ORDINAL"), Some("5"));
}

#[test]
fn sent_cpus_on_node_wins_and_bad_names_are_dropped() {
    let mut l = launch();
    l.env.push(("SLURM_CPUS_ON_NODE".into(), "8".into()));
    l.env.push(("A=B".into(), "x".into()));
    l.env.push(("".into(), "x".into()));
    l.env.push(("NUL".into(), "a\0b".into()));
    l.env.push(("PATH".into(), "/opt/bin".into()));
    let env = job_env(&l, &node());
    assert_eq!(get(&env, "SLURM_CPUS_ON_NODE"), Some("8"));
    assert_eq!(get(&env, "A=B"), None);
    assert_eq!(get(&env, ""), None);
    assert_eq!(get(&env, "NUL"), None);
    assert_eq!(get(&env, "PATH"), Some("/opt/bin"));
}

/// Issue 37: gres.conf `Flags=` choose the batch script's vendor
/// variables too; the others are dropped even when the controller sent them.
#[test]
fn issue_37_flags_choose_the_batch_vendor_variables() {
    let mut l = launch();
    l.gpus = vec![2, 3];
    l.env.push(("CUDA_VISIBLE_DEVICES".into(), "2,3".into()));
    l.env.push(("GPU_DEVICE_ORDINAL".into(), "2,3".into()));
    let all = job_env(&l, &node());
    assert_eq!(get(&all, "ZE_AFFINITY_MASK"), Some("2,3"));
    assert_eq!(get(&all, "ROCR_VISIBLE_DEVICES"), Some("2,3"));
    let amd = NodeEnv {
        gpu_env: crate::gpus::GpuEnvVars::from_flags(["amd_gpu_env"]),
        ..node()
    };
    let env = job_env(&l, &amd);
    assert_eq!(get(&env, "ROCR_VISIBLE_DEVICES"), Some("2,3"));
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), None);
    assert_eq!(get(&env, "GPU_DEVICE_ORDINAL"), None);
    assert_eq!(get(&env, "SLURM_JOB_GPUS"), Some("2,3"));
    // ConstrainDevices: the job sees only its GPUs, counted from 0, also
    // where the controller sent the node's indexes.
    let confined = NodeEnv {
        gpus_relative: true,
        ..amd
    };
    let env = job_env(&l, &confined);
    assert_eq!(get(&env, "ROCR_VISIBLE_DEVICES"), Some("0,1"));
    assert_eq!(get(&env, "SLURM_JOB_GPUS"), Some("2,3"));
    let env = job_env(
        &l,
        &NodeEnv {
            gpus_relative: true,
            ..node()
        },
    );
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("0,1"));
}
