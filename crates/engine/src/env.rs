//! What a batch job is started with: its environment (the `SLURM_*`
//! variables of sbatch(1) "OUTPUT ENVIRONMENT VARIABLES", both old and new
//! spellings, since MPI launchers read the old ones) and its output paths.

use crate::{Engine, Job};
use model::JobId;
use proto::BatchLaunch;

/// Slurm's run-length form for per-node counts: `2(x3),1`.
pub fn rle_counts(counts: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let mut j = i;
        while j + 1 < counts.len() && counts[j + 1] == counts[i] {
            j += 1;
        }
        let n = j - i + 1;
        out.push(if n > 1 {
            format!("{}(x{})", counts[i], n)
        } else {
            counts[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// The job's stdout and stderr patterns: as submitted, else Slurm's
/// defaults (`slurm-%j.out`, `slurm-%A_%a.out` for an array; stderr goes
/// where stdout goes).
pub(crate) fn output_patterns(job: &Job) -> (&str, &str) {
    let default = if job.array.is_some() {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    };
    let out = job.desc.stdout.as_deref().unwrap_or(default);
    (out, job.desc.stderr.as_deref().unwrap_or(out))
}

/// The job's `StdOut=` and `StdErr=` as Slurm's job query shows them, from
/// submission on (`model::filename::expand_shown`: `%N` and the other
/// codes only a node knows stay as written).
pub(crate) fn shown_paths(job: &Job) -> (String, String) {
    let (out, err) = output_patterns(job);
    let values = pattern_values(job, "");
    let shown = model::filename::expand_shown(out, &values);
    let err = if err == out {
        shown.clone()
    } else {
        model::filename::expand_shown(err, &values)
    };
    (shown, err)
}

/// The job's paths as Slurm's `squeue -O STDOUT,STDERR` shows them: a
/// pattern the user gave as submitted, anchored at the working directory
/// (no code expanded); `None` for the defaults, which squeue shows
/// expanded as scontrol does ([`shown_paths`]).
pub(crate) fn squeue_paths(job: &Job) -> (Option<String>, Option<String>) {
    let defaults = ["slurm-%j.out", "slurm-%A_%a.out"];
    let dir = job.desc.work_dir.trim_end_matches('/');
    let anchored = |p: &str| {
        if p.starts_with('/') {
            p.to_string()
        } else {
            format!("{dir}/{p}")
        }
    };
    let given_out = job.desc.stdout.as_deref().filter(|p| !defaults.contains(p));
    let given_err = match job.desc.stderr.as_deref() {
        Some(p) => Some(p),
        None => given_out,
    };
    (given_out.map(anchored), given_err.map(anchored))
}

fn pattern_values<'a>(job: &'a Job, batch_host: &'a str) -> model::filename::PatternValues<'a> {
    model::filename::PatternValues {
        job_id: job.id.0,
        job_step: None,
        array_job_id: job.array.as_ref().map_or(job.id, |a| a.array_job_id).0,
        array_task_id: job.array.as_ref().and_then(|a| a.task_id),
        name: &job.desc.name,
        user: &job.desc.user,
        node: batch_host,
        node_index: 0,
        task: 0,
        step: "batch",
        work_dir: &job.desc.work_dir,
    }
}

/// Expands sbatch's filename pattern for the batch script (`%s` is
/// `batch`, `%n` and `%t` are 0, `%N` the batch host; `model::filename`).
pub(crate) fn expand_path(pattern: &str, job: &Job, batch_host: &str) -> String {
    model::filename::expand(pattern, &pattern_values(job, batch_host))
}

impl Engine {
    /// The launch message for a job that just started.
    pub(crate) fn batch_launch(&self, id: JobId) -> BatchLaunch {
        let job = &self.jobs[&id];
        let alloc = job.alloc.as_ref().expect("started job has an allocation");
        let batch = &alloc.nodes[0];
        let batch_node = &self.nodes[batch.node.0 as usize];
        let gpus: Vec<u32> = batch
            .gres
            .iter()
            .filter(|(p, _)| batch_node.gres[*p].name == "gpu")
            .flat_map(|(_, idx)| idx.iter().copied())
            .collect();
        BatchLaunch {
            job_id: id,
            uid: job.desc.uid,
            gid: job.desc.gid,
            user: job.desc.user.clone(),
            script: job.script.to_string(),
            argv: job.desc.argv.clone(),
            env: if self.simulated {
                Vec::new()
            } else {
                self.batch_env(job)
            },
            work_dir: job.desc.work_dir.clone(),
            stdout: job.stdout.clone(),
            stderr: job.stderr.clone(),
            stdin: job
                .desc
                .stdin
                .clone()
                .unwrap_or_else(|| "/dev/null".to_string()),
            // A requeued job's later runs add to what the first wrote.
            open_append: job.desc.open_append || job.restarts > 0,
            cpus: batch.cpus,
            mem: batch.mem,
            gpus,
            cpu_ids: batch.cpu_ids.clone(),
            time_limit_secs: match job.time_limit {
                model::TimeLimit::Minutes(m) => Some(m as u64 * 60),
                model::TimeLimit::Unlimited => None,
            },
            acctg_freq: job.desc.acctg_freq.clone(),
            restarts: job.restarts,
            container: job.desc.container.clone(),
        }
    }

    /// The batch script's environment: the user's exported variables, then
    /// Slurm's. Node-only values (`SLURMD_NODENAME`, `SLURM_TASK_PID`) are
    /// added by the node daemon.
    pub(crate) fn batch_env(&self, job: &Job) -> Vec<(String, String)> {
        let alloc = job.alloc.as_ref().expect("started job has an allocation");
        let d = &job.desc;
        let names: Vec<String> = alloc
            .nodes
            .iter()
            .map(|n| self.nodes[n.node.0 as usize].conf.name.clone())
            .collect();
        let nodelist = hostlist::compress(&names);
        let cpus: Vec<u32> = alloc.nodes.iter().map(|n| n.cpus).collect();
        let tasks: Vec<u32> = alloc.nodes.iter().map(|n| n.tasks).collect();
        let n_tasks: u32 = tasks.iter().sum();
        let batch = &alloc.nodes[0];
        let batch_node = &self.nodes[batch.node.0 as usize];
        let mut slurm: Vec<(String, String)> = Vec::new();
        slurm.extend(Engine::array_env(job));
        let mut set = |k: &str, v: String| slurm.push((k.to_string(), v));
        set("ENVIRONMENT", "BATCH".into());
        set("SLURM_CLUSTER_NAME", self.settings.cluster_name.clone());
        set("SLURM_CPUS_ON_NODE", batch.cpus.to_string());
        if let Some(c) = d.cpus_per_task {
            set("SLURM_CPUS_PER_TASK", c.to_string());
        }
        set("SLURM_GTIDS", "0".into());
        set("SLURM_JOBID", job.id.to_string());
        set("SLURM_JOB_ID", job.id.to_string());
        if let Some(a) = &d.account {
            set("SLURM_JOB_ACCOUNT", a.clone());
        }
        set("SLURM_JOB_CPUS_PER_NODE", rle_counts(&cpus));
        set("SLURM_JOB_GID", d.gid.to_string());
        set("SLURM_JOB_NAME", d.name.clone());
        set("SLURM_JOB_NODELIST", nodelist.clone());
        set("SLURM_JOB_NUM_NODES", names.len().to_string());
        set(
            "SLURM_JOB_PARTITION",
            self.parts[alloc.partition].conf.name.clone(),
        );
        set(
            "SLURM_JOB_QOS",
            d.qos.clone().unwrap_or_else(|| "normal".into()),
        );
        if let Some(r) = &d.reservation {
            set("SLURM_JOB_RESERVATION", r.clone());
        }
        set("SLURM_JOB_UID", d.uid.to_string());
        set("SLURM_JOB_USER", d.user.clone());
        set("SLURM_LOCALID", "0".into());
        match (d.mem_per_node, d.mem_per_cpu) {
            (Some(_), _) => set("SLURM_MEM_PER_NODE", batch.mem.to_string()),
            (None, Some(m)) => set("SLURM_MEM_PER_CPU", m.to_string()),
            (None, None) => {
                let part = &self.parts[alloc.partition].conf;
                match part.def_mem_per_cpu.or(self.settings.def_mem_per_cpu) {
                    Some(m) => set("SLURM_MEM_PER_CPU", m.to_string()),
                    None => set("SLURM_MEM_PER_NODE", batch.mem.to_string()),
                }
            }
        }
        set("SLURM_NNODES", names.len().to_string());
        set("SLURM_NODEID", "0".into());
        set("SLURM_NODELIST", nodelist);
        set("SLURM_NODE_ALIASES", "(null)".into());
        // Only for a job that asked for tasks, as sbatch(1) sets them.
        if d.ntasks.is_some() || d.ntasks_per_node.is_some() {
            set("SLURM_NPROCS", n_tasks.to_string());
            set("SLURM_NTASKS", n_tasks.to_string());
        }
        if let Some(t) = d.ntasks_per_node {
            set("SLURM_NTASKS_PER_NODE", t.to_string());
        }
        set("SLURM_PRIO_PROCESS", "0".into());
        set("SLURM_PROCID", "0".into());
        if job.restarts > 0 {
            set("SLURM_RESTART_COUNT", job.restarts.to_string());
        }
        set("SLURM_SUBMIT_DIR", d.submit_dir.clone());
        set("SLURM_SUBMIT_HOST", d.submit_host.clone());
        set("SLURM_TASKS_PER_NODE", rle_counts(&tasks));
        set(
            "SLURM_WORKING_CLUSTER",
            format!(
                "{}:{}:{}:9728:109",
                self.settings.cluster_name, self.settings.ctld_addr, self.settings.ctld_port
            ),
        );
        let gpus: Vec<String> = batch
            .gres
            .iter()
            .filter(|(p, _)| batch_node.gres[*p].name == "gpu")
            .flat_map(|(_, idx)| idx.iter().map(|i| i.to_string()))
            .collect();
        if !gpus.is_empty() {
            let list = gpus.join(",");
            set("SLURM_GPUS_ON_NODE", gpus.len().to_string());
            set("SLURM_JOB_GPUS", list.clone());
            set("CUDA_VISIBLE_DEVICES", list.clone());
            set("GPU_DEVICE_ORDINAL", list);
        }
        for (k, v) in sharing_env(&batch_node.gres, &batch.gres) {
            set(&k, v);
        }
        if let Some(g) = &d.gpus {
            set("SLURM_GPUS", g.count.to_string());
        }
        if let Some(g) = &d.gpus_per_node {
            set("SLURM_GPUS_PER_NODE", g.count.to_string());
        }
        if let Some(g) = &d.gpus_per_task {
            set("SLURM_GPUS_PER_TASK", g.count.to_string());
        }
        // The user's variables come first; Slurm's win on conflict.
        let mut env: Vec<(String, String)> = job
            .env
            .iter()
            .filter(|(k, _)| !slurm.iter().any(|(s, _)| s == k))
            .cloned()
            .collect();
        if !env.iter().any(|(k, _)| k == "TMPDIR") {
            env.push(("TMPDIR".into(), "/tmp".into()));
        }
        env.extend(slurm);
        env
    }
}

/// The variables of GPU sharing for what a job holds on a node (`taken`:
/// pool and indexes, as in its allocation): `--gres=shard:N` gives
/// `SLURM_SHARDS_ON_NODE=N`, `--gres=mps:N` `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`
/// (N * 100 / the node's mps count per GPU, gres.conf(5) and Slurm's
/// gres_mps guide), both with the vendor variables naming the GPU they
/// belong to. Shares are spread evenly over the node's GPUs in order, as
/// Slurm splits a `Count=` given without `File=`. Nothing for a job that
/// holds GPUs themselves (it sees those) or no shares.
pub(crate) fn sharing_env(
    pools: &[sched::GresPool],
    taken: &[(usize, Vec<u32>)],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let holds = |name: &str| -> Vec<u32> {
        taken
            .iter()
            .filter(|(p, _)| pools.get(*p).is_some_and(|pool| pool.name == name))
            .flat_map(|(_, idx)| idx.iter().copied())
            .collect()
    };
    if !holds("gpu").is_empty() {
        return out;
    }
    let n_gpus = pools
        .iter()
        .filter(|p| p.name == "gpu")
        .map(|p| p.indexes.len() as u64)
        .sum::<u64>();
    let total = |name: &str| -> u64 {
        pools
            .iter()
            .filter(|p| p.name == name)
            .map(|p| p.indexes.len() as u64)
            .sum()
    };
    // The GPU share `first` of `count` shares lives on.
    let gpu_of = |first: u32, count: u64| -> u64 {
        if n_gpus == 0 || count == 0 {
            0
        } else {
            u64::from(first) * n_gpus / count
        }
    };
    let vendor = |out: &mut Vec<(String, String)>, gpu: u64| {
        for name in [
            "CUDA_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
            "ZE_AFFINITY_MASK",
            "GPU_DEVICE_ORDINAL",
        ] {
            if !out.iter().any(|(k, _)| k == name) {
                out.push((name.to_string(), gpu.to_string()));
            }
        }
    };
    let shards = holds("shard");
    if let Some(first) = shards.iter().min() {
        out.push(("SLURM_SHARDS_ON_NODE".to_string(), shards.len().to_string()));
        vendor(&mut out, gpu_of(*first, total("shard")));
    }
    let mps = holds("mps");
    if let Some(first) = mps.iter().min() {
        let count = total("mps");
        let per_gpu = count.checked_div(n_gpus).unwrap_or(count).max(1);
        let percent = (mps.len() as u64 * 100 / per_gpu).clamp(1, 100);
        out.push((
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".to_string(),
            percent.to_string(),
        ));
        vendor(&mut out, gpu_of(*first, count));
    }
    out
}
