//! Issue 37: GPUs per step and per task, with fake GPUs (gres.conf
//! `File=` naming plain files: nothing here opens them) and no cgroup, so
//! the vendor variables carry the node's own indexes.

use crate::secs;
use e2e::Cluster;

/// One node with four fake GPUs (`Type=fake`, `Cores=0-1`), and the
/// directory of their files.
fn gpu_cluster() -> (Cluster, tempfile::TempDir) {
    let dev = tempfile::tempdir().expect("a temporary directory");
    for i in 0..4 {
        std::fs::write(dev.path().join(format!("nvidia{i}")), "").expect("a fake device file");
    }
    let c = crate::builder()
        .nodes(1)
        .node_extra(1, "Gres=gpu:fake:4")
        .file(
            "gres.conf",
            &format!(
                "Name=gpu Type=fake File={}/nvidia[0-3] Cores=0-1\n",
                dev.path().display()
            ),
        )
        .start();
    (c, dev)
}

/// The lines of `out`, sorted (tasks print in any order).
fn sorted(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// Acceptance test 12 (without ConstrainDevices): a step's tasks see the
/// step's GPUs with the node's indexes in every vendor variable,
/// SLURM_STEP_GPUS and SLURM_GPUS_ON_NODE.
#[test]
fn issue_37_gpu_step_env_names_the_steps_gpus() {
    let (c, _dev) = gpu_cluster();
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--gres=gpu:2",
            "bash",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES $ROCR_VISIBLE_DEVICES $ZE_AFFINITY_MASK \
             $GPU_DEVICE_ORDINAL $SLURM_STEP_GPUS $SLURM_GPUS_ON_NODE",
        ],
    );
    assert_eq!(out.stdout, "0,1 0,1 0,1 0,1 0,1 2\n", "{out}\n{}", c.logs());
    // A second job gets the other two, named as the node numbers them.
    let id = c.submit(&["-n1", "--gres=gpu:2", "--wrap", "sleep 60"]);
    c.wait_state(id, "RUNNING", secs(10));
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--gres=gpu:2",
            "bash",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS",
        ],
    );
    assert_eq!(out.stdout, "2,3 2,3\n", "{out}\n{}", c.logs());
    c.ok("scancel", &[&id.to_string()]);
}

/// Acceptance test 14: `--gpus-per-task=1` gives each task a GPU of its
/// own; `--gpu-bind=none` gives each all of the step's; `map_gpu:1,0`
/// swaps them; `--ntasks-per-gpu=2` puts two tasks on one GPU.
#[test]
fn issue_37_gpu_per_task_binding() {
    let (c, _dev) = gpu_cluster();
    let tasks = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["-n2", "-l"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["bash", "-c", "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS"]);
        let out = c.run("srun", &args);
        assert_eq!(out.code, 0, "{args:?}: {out}\n{}", c.logs());
        sorted(&out.stdout)
    };
    // Slurm's default: every task sees all of the step's GPUs.
    assert_eq!(tasks(&["--gres=gpu:2"]), ["0: 0,1 0,1", "1: 0,1 0,1"]);
    assert_eq!(tasks(&["--gpus-per-task=1"]), ["0: 0 0,1", "1: 1 0,1"]);
    assert_eq!(
        tasks(&["--gpus-per-task=1", "--gpu-bind=none"]),
        ["0: 0,1 0,1", "1: 0,1 0,1"]
    );
    assert_eq!(
        tasks(&["--gpus-per-task=1", "--gpu-bind=map_gpu:1,0"]),
        ["0: 1 0,1", "1: 0 0,1"]
    );
    assert_eq!(
        tasks(&["--gres=gpu:2", "--gpu-bind=single:2"]),
        ["0: 0 0,1", "1: 0 0,1"]
    );
    assert_eq!(
        tasks(&["--gres=gpu:2", "--gpu-bind=mask_gpu:0x2,0x3"]),
        ["0: 1 0,1", "1: 0,1 0,1"]
    );
    // A bad binding is srun's error, before anything is allocated.
    let out = c.run("srun", &["-n2", "--gpu-bind=sideways", "true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "srun: error: Invalid --gpu-bind argument: sideways\n"
    );
}

/// Inside a batch job the job's `--gpus-per-task` reaches srun (as
/// SLURM_GPUS_PER_TASK) and binds the step's tasks; `--ntasks-per-gpu`
/// takes one GPU per two tasks.
#[test]
fn issue_37_gpu_per_task_inside_a_batch_job() {
    let (c, _dev) = gpu_cluster();
    let id = c.submit(&[
        "-n2",
        "--gpus-per-task=1",
        "-o",
        "out.txt",
        "--wrap",
        "srun -l bash -c 'echo $CUDA_VISIBLE_DEVICES' | sort > tasks.txt",
    ]);
    let state = c.wait_done(id, secs(30));
    assert!(
        state.contains("COMPLETED"),
        "{state}\n{}\n{}",
        c.read("out.txt"),
        c.logs()
    );
    assert_eq!(c.read("tasks.txt"), "0: 0\n1: 1\n");
    let id = c.submit(&[
        "-n2",
        "--gres=gpu:2",
        "-o",
        "out2.txt",
        "--wrap",
        "srun -l --ntasks-per-gpu=2 bash -c 'echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS' | sort > shared.txt",
    ]);
    let state = c.wait_done(id, secs(30));
    assert!(
        state.contains("COMPLETED"),
        "{state}\n{}\n{}",
        c.read("out2.txt"),
        c.logs()
    );
    assert_eq!(c.read("shared.txt"), "0: 0 0\n1: 0 0\n");
}

/// Acceptance test 17: `AutoDetect=nvml` on a node without NVIDIA's
/// library: the daemon says so once, starts, and its GPUs are gres.conf's.
#[test]
fn issue_37_gpu_autodetect_without_nvml_falls_back_to_gres_conf() {
    let dev = tempfile::tempdir().expect("a temporary directory");
    let c = crate::builder()
        .nodes(1)
        .node_extra(1, "Gres=gpu:fake:2")
        .file(
            "gres.conf",
            &format!(
                "AutoDetect=nvml\nName=gpu Type=fake File={}/nvidia[0-1]\n",
                dev.path().display()
            ),
        )
        .start();
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--gres=gpu:2",
            "bash",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES",
        ],
    );
    assert_eq!(out.stdout, "0,1\n", "{out}\n{}", c.logs());
    let log = c.log("noded-node1");
    if std::path::Path::new("/dev/nvidiactl").exists() {
        // A node with a driver: detection is real, nothing to check here.
        return;
    }
    assert_eq!(
        log.matches("AutoDetect=nvml: cannot load libnvidia-ml.so.1")
            .count(),
        1,
        "{log}"
    );
}

/// Acceptance test 15 (batch jobs and steps): `--gres=shard:4` gets the GPU's vendor
/// variables and SLURM_SHARDS_ON_NODE; `--gres=mps:50` of 100 shares per
/// GPU gets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50.
#[test]
fn issue_37_gpu_shard_and_mps_batch_variables() {
    let c = crate::builder()
        .nodes(1)
        .conf_extra("GresTypes=gpu,shard,mps\n")
        .node_extra(1, "Gres=gpu:2,shard:8,mps:200")
        .start();
    let shard = c.submit(&[
        "--gres=shard:4",
        "--wrap",
        "echo $SLURM_SHARDS_ON_NODE $CUDA_VISIBLE_DEVICES > shard.txt",
    ]);
    let mps = c.submit(&[
        "--gres=mps:50",
        "--wrap",
        "echo $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE $CUDA_VISIBLE_DEVICES > mps.txt",
    ]);
    for id in [shard, mps] {
        let state = c.wait_done(id, secs(30));
        assert!(state.contains("COMPLETED"), "{state}\n{}", c.logs());
    }
    assert_eq!(c.read("shard.txt"), "4 0\n");
    assert_eq!(c.read("mps.txt"), "50 0\n");
    // A step of a standalone srun: the same, per node.
    let out = c.ok(
        "srun",
        &[
            "--gres=shard:2",
            "bash",
            "-c",
            "echo $SLURM_SHARDS_ON_NODE $CUDA_VISIBLE_DEVICES $ROCR_VISIBLE_DEVICES",
        ],
    );
    assert_eq!(out.stdout, "2 0 0\n", "{out}\n{}", c.logs());
}
