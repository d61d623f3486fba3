//! The environment a batch script gets.

use crate::{builder, cluster, secs};
use e2e::Cluster;
use std::collections::BTreeMap;

/// Runs `env | sort > NAME` as a job with `args` and returns the variables.
fn job_env(
    c: &Cluster,
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (u32, BTreeMap<String, String>) {
    let wrap = format!("env | sort > {name}");
    let mut all = vec!["--parsable"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--wrap", &wrap]);
    let out = c.run_env("sbatch", &all, env);
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    let id: u32 = out.stdout.trim().parse().expect("a job id");
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    let text = c.wait_file(name, secs(5));
    let vars = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (id, vars)
}

fn get<'a>(vars: &'a BTreeMap<String, String>, key: &str) -> &'a str {
    vars.get(key)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("{key} is not in the job's environment: {vars:#?}"))
}

#[test]
fn batch_environment_has_the_slurm_variables() {
    let c = cluster(2);
    let (id, v) = job_env(&c, "env.txt", &["-J", "envjob"], &[("FOO", "bar")]);
    let id = id.to_string();
    let work = c.work().display().to_string();
    let uid = nix::unistd::getuid().as_raw().to_string();
    let expect: &[(&str, &str)] = &[
        ("SLURM_JOB_ID", &id),
        ("SLURM_JOBID", &id),
        ("SLURM_JOB_NAME", "envjob"),
        ("SLURM_JOB_NODELIST", "node1"),
        ("SLURM_NODELIST", "node1"),
        ("SLURM_JOB_NUM_NODES", "1"),
        ("SLURM_NNODES", "1"),
        ("SLURM_JOB_PARTITION", "debug"),
        ("SLURM_SUBMIT_DIR", &work),
        ("SLURM_SUBMIT_HOST", &e2e::hostname()),
        ("SLURMD_NODENAME", "node1"),
        ("SLURM_CLUSTER_NAME", "e2e"),
        ("SLURM_JOB_USER", &e2e::user_name()),
        ("SLURM_JOB_UID", &uid),
        ("SLURM_PROCID", "0"),
        ("SLURM_LOCALID", "0"),
        ("SLURM_NODEID", "0"),
        ("SLURM_MEM_PER_CPU", "100"),
        ("FOO", "bar"),
    ];
    for (k, want) in expect {
        assert_eq!(get(&v, k), *want, "{k}");
    }
    // Issue 35: no task count for a job that asked for none, as Slurm's
    // batch_env without -n.
    for k in ["SLURM_NTASKS", "SLURM_NPROCS"] {
        assert!(!v.contains_key(k), "{k}: {v:#?}");
    }
    // One task on a node of 2 cores (one thread each) gets one CPU.
    assert_eq!(get(&v, "SLURM_CPUS_ON_NODE"), "1");
    assert_eq!(get(&v, "SLURM_JOB_CPUS_PER_NODE"), "1");
    assert_eq!(get(&v, "SLURM_TASKS_PER_NODE"), "1");
    assert_eq!(get(&v, "SLURM_CONF"), c.conf().display().to_string());
}

#[test]
fn export_none_all_and_extra_variables() {
    let c = cluster(1);
    let (_, none) = job_env(&c, "none.txt", &["--export=NONE"], &[("FOO", "bar")]);
    assert!(!none.contains_key("FOO"), "{none:#?}");
    assert!(none.contains_key("SLURM_JOB_ID"), "{none:#?}");
    let (_, extra) = job_env(&c, "extra.txt", &["--export=ALL,X=1"], &[("FOO", "bar")]);
    assert_eq!(get(&extra, "X"), "1");
    assert_eq!(get(&extra, "FOO"), "bar");
}

#[test]
fn two_nodes_three_tasks() {
    let c = cluster(2);
    let (_, v) = job_env(&c, "env.txt", &["-N2", "-n3"], &[]);
    assert_eq!(get(&v, "SLURM_TASKS_PER_NODE"), "2,1");
    assert_eq!(get(&v, "SLURM_JOB_NODELIST"), "node[1-2]");
    assert_eq!(get(&v, "SLURM_NODELIST"), "node[1-2]");
    assert_eq!(get(&v, "SLURM_JOB_NUM_NODES"), "2");
    assert_eq!(get(&v, "SLURM_NTASKS"), "3");
    assert_eq!(get(&v, "SLURM_NPROCS"), "3");
    assert_eq!(get(&v, "SLURMD_NODENAME"), "node1");
}

#[test]
fn gpus_are_split_between_concurrent_jobs() {
    let c = builder().nodes(1).node_extra(1, "Gres=gpu:2").start();
    let script =
        "echo \"$CUDA_VISIBLE_DEVICES $SLURM_GPUS_ON_NODE\" > gpu-$SLURM_JOB_ID.txt; sleep 2";
    let a = c.submit(&["--gres=gpu:1", "--wrap", script]);
    let b = c.submit(&["--gres=gpu:1", "--wrap", script]);
    let ta = c.wait_file(&format!("gpu-{a}.txt"), secs(10));
    let tb = c.wait_file(&format!("gpu-{b}.txt"), secs(10));
    // Both ran at once, each with its own GPU.
    assert_eq!(c.job_state(a), "RUNNING", "{}", c.logs());
    let mut got = vec![ta.trim().to_string(), tb.trim().to_string()];
    got.sort();
    assert_eq!(got, ["0 1", "1 1"], "{}", c.logs());
    let show = c.run("scontrol", &["show", "job", &a.to_string()]).stdout;
    assert!(show.contains("gres/gpu=1"), "{show}");
    // A third one waits for a GPU.
    let third = c.submit(&["--gres=gpu:1", "--wrap", "true"]);
    assert_eq!(c.squeue_field(third, "%T %r"), "PENDING Resources");
    assert_eq!(c.wait_done(third, secs(15)), "COMPLETED");
}

#[test]
fn issue_35_export_without_all_starts_from_the_login_environment() {
    let c = cluster(1);
    let user = e2e::user_name();
    // Slurm 22.05: `sbatch --export=NONE` and `--export=X=1` gave the job
    // HOME, USER, ... with SLURM_EXPORT_ENV and SLURM_GET_USER_ENV=1;
    // `--export=ALL,X=1` neither.
    let (_, none) = job_env(&c, "none.txt", &["--export=NONE"], &[("FOO", "bar")]);
    assert!(!none.contains_key("FOO"), "{none:#?}");
    assert_eq!(get(&none, "USER"), user);
    assert_eq!(get(&none, "LOGNAME"), user);
    assert!(get(&none, "HOME").starts_with('/'), "{none:#?}");
    assert!(none.contains_key("PATH"), "{none:#?}");
    assert_eq!(get(&none, "SLURM_EXPORT_ENV"), "NONE");
    assert_eq!(get(&none, "SLURM_GET_USER_ENV"), "1");
    let (_, x) = job_env(&c, "x.txt", &["--export=X=1"], &[("FOO", "bar")]);
    assert_eq!(get(&x, "X"), "1");
    assert!(!x.contains_key("FOO"), "{x:#?}");
    assert_eq!(get(&x, "USER"), user);
    assert_eq!(get(&x, "SLURM_EXPORT_ENV"), "X=1");
    let (_, all) = job_env(&c, "all.txt", &["--export=ALL,X=1"], &[("FOO", "bar")]);
    assert_eq!(get(&all, "FOO"), "bar");
    assert!(!all.contains_key("SLURM_EXPORT_ENV"), "{all:#?}");
}

/// `srun ... env` or `salloc ... env` output as a map.
fn vars(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn issue_35_steps_and_allocations_have_only_slurms_variables() {
    let c = cluster(1);
    // A standalone srun's task (reference srun_env_slurm.out): neither the
    // memory default nor the node aliases, no distribution unless -m.
    let out = c.ok("srun", &["-n1", "env"]);
    let task = vars(&out.stdout);
    for k in [
        "SLURM_MEM_PER_CPU",
        "SLURM_NODE_ALIASES",
        "SLURM_DISTRIBUTION",
    ] {
        assert!(!task.contains_key(k), "{k}: {task:#?}");
    }
    for k in [
        "SLURM_JOB_UID",
        "SLURM_JOB_USER",
        "SLURM_JOB_GID",
        "SLURM_WORKING_CLUSTER",
    ] {
        assert!(task.contains_key(k), "{k}: {task:#?}");
    }
    // Slurm 22.05: `srun -m block -n1 env` has SLURM_DISTRIBUTION=block.
    let out = c.ok("srun", &["-m", "block", "-n1", "env"]);
    assert_eq!(get(&vars(&out.stdout), "SLURM_DISTRIBUTION"), "block");
    // salloc's command (Slurm 22.05 `salloc bash -c 'env'`): the
    // allocation's variables, no task count without -n, none of the
    // owner's, the priority's, the cluster address or the memory default.
    let out = c.ok("salloc", &["env"]);
    let alloc = vars(&out.stdout);
    assert_eq!(get(&alloc, "SLURM_NODE_ALIASES"), "(null)");
    for k in [
        "SLURM_NTASKS",
        "SLURM_NPROCS",
        "SLURM_JOB_UID",
        "SLURM_JOB_USER",
        "SLURM_JOB_GID",
        "SLURM_PRIO_PROCESS",
        "SLURM_UMASK",
        "SLURM_WORKING_CLUSTER",
        "SLURM_MEM_PER_CPU",
    ] {
        assert!(!alloc.contains_key(k), "{k}: {alloc:#?}");
    }
    let out = c.ok("salloc", &["-n1", "env"]);
    assert_eq!(get(&vars(&out.stdout), "SLURM_NTASKS"), "1");
}
