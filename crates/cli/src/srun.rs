//! `srun`: run a parallel job step, inside an allocation (`SLURM_JOB_ID`
//! set: a step of that job) or standalone (an allocation of its own, one
//! step, then the allocation is given back).
//!
//! ```text
//!  options --> [standalone: alloc::allocate] --> listen on the address that
//!  reaches the controller --CreateStep--> step id + layout
//!  each node's supervisor connects: Hello(token) --> readers --> events
//!  events: Output (label, line-buffered) | TaskExited | FenceIn/FenceOut (PMI root)
//!          | Abort | node gone | signals (Ctrl-C twice cancels) --> exit code
//! ```
//!
//! srun's exit status is the highest exit code of its tasks, or 128 plus
//! the signal that killed one.
//!
//! `--pty`: task 0 runs on a terminal of its node (`pty`: srun's own in raw
//! mode meanwhile, SIGWINCH passed on as `WindowSize`); `--multi-prog`: the
//! file's text goes with the step; `--bcast=DEST`: a copy step first
//! (`sbcast::copy`), then DEST runs.

mod pty;

use crate::alloc;
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use model::{ExitCode, JobId};
use proto::{
    CtldRequest, CtldResponse, Distribution, SlurmError, SrunToStepd, StdinMode, StepCreated,
    StepRequest, StepdToSrun,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One whole message line to stderr in a single write (`eprintln!` writes
/// its pieces one by one): two sruns sharing a stderr, as in
/// `srun ... & srun ...`, must not splice their lines together.
macro_rules! say {
    ($($arg:tt)*) => {
        eprint_lines(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// srun's own options; the job options (`-N`, `-n`, `-c`, `--mem`, ...)
/// come from sbatch's table, less those only sbatch has.
const SRUN_ONLY: &[OptSpec] = &[
    opt("bcast", None, Arg::Optional),
    opt("compress", None, Arg::Optional),
    opt("cpu-bind", None, Arg::Required),
    opt("cpu_bind", None, Arg::Required),
    opt("epilog", None, Arg::Required),
    opt("exact", None, Arg::None),
    opt("external-launcher", None, Arg::None),
    opt("immediate", Some('I'), Arg::Optional),
    opt("jobid", None, Arg::Required),
    opt("kill-on-bad-exit", Some('K'), Arg::Optional),
    opt("label", Some('l'), Arg::None),
    opt("mpi", None, Arg::Required),
    opt("multi-prog", None, Arg::None),
    opt("no-allocate", Some('Z'), Arg::None),
    opt("overlap", None, Arg::None),
    opt("preserve-env", Some('E'), Arg::None),
    opt("prolog", None, Arg::Required),
    opt("pty", None, Arg::None),
    opt("quit-on-interrupt", None, Arg::None),
    opt("relative", Some('r'), Arg::Required),
    opt("resv-ports", None, Arg::Optional),
    opt("slurmd-debug", None, Arg::Required),
    opt("task-epilog", None, Arg::Required),
    opt("task-prolog", None, Arg::Required),
    opt("unbuffered", Some('u'), Arg::None),
    opt("wait", Some('W'), Arg::Required),
    opt("whole", None, Arg::None),
    opt("x11", None, Arg::Optional),
];

/// sbatch options srun does not have (or has with another meaning).
const SBATCH_ONLY: &[&str] = &[
    "array",
    "batch",
    "export-file",
    "get-user-env",
    "ignore-pbs",
    "kill-on-invalid-dep",
    "no-requeue",
    "parsable",
    "requeue",
    "wait",
    "wrap",
];

/// Every option srun takes.
/// Whether this build serves `--mpi=pmix` (the `pmix` cargo feature; the
/// step supervisors of the nodes need it too).
const PMIX: bool = cfg!(feature = "pmix");

/// `srun --mpi=list`: Slurm's listing of the plugins this build has.
pub fn mpi_list() -> &'static str {
    if PMIX {
        "MPI plugin types are...\n\tpmix\n\tnone\n\tpmi2\nspecific pmix plugin versions available: pmix_v4\n"
    } else {
        "MPI plugin types are...\n\tnone\n\tpmi2\n"
    }
}

pub fn specs() -> Vec<OptSpec> {
    let mut v: Vec<OptSpec> = crate::sbatch::opts::SPECS
        .iter()
        .filter(|s| !SBATCH_ONLY.contains(&s.long))
        .copied()
        .collect();
    v.extend_from_slice(SRUN_ONLY);
    v
}

const USAGE: &str = "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]\n";

const HELP: &str = "\
Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]

Parallel run options:
  -A, --account=name          charge job to specified account
  -c, --cpus-per-task=ncpus   number of cpus required per task
  -D, --chdir=path            change remote current working directory
  -e, --error=err             location of stderr redirection
      --export=env_vars|NONE  environment variables passed to launcher
  -i, --input=in              location of stdin redirection
  -J, --job-name=jobname      name of job
  -K, --kill-on-bad-exit      kill the job if any task terminates with a
                              non-zero exit code
  -l, --label                 prepend task number to lines of stdout/err
  -m, --distribution=type     distribution method for processes to nodes
                              (type = block|cyclic|plane=N)
      --mpi=type              type of MPI being used (none, pmi2, pmix; list)
  -n, --ntasks=ntasks         number of tasks to run
  -N, --nodes=N               number of nodes on which to run (N = min[-max])
  -o, --output=out            location of stdout redirection
  -O, --overcommit            overcommit resources
      --overlap               share CPUs with other steps
  -p, --partition=partition   partition requested
  -Q, --quiet                 quiet mode (suppress informational messages)
  -t, --time=minutes          time limit
  -u, --unbuffered            do not line-buffer stdout/err
  -W, --wait=sec              seconds to wait after first task exits
                              before killing job
  -w, --nodelist=hosts...     request a specific list of hosts
  -x, --exclude=hosts...      exclude a specific list of hosts
      --exact                 use only the resources requested for the step
      --exclusive             steps do not share CPUs (the default)
      --gres=list             required generic resources
  -G, --gpus=n                count of GPUs required for the job
      --mem=MB                minimum amount of real memory

Help options:
  -h, --help                  show this help message
      --usage                 display brief usage message

Other options:
  -V, --version               output version information and exit
";

/// srun's own choices (what is not a job option).
#[derive(Clone, Debug, Default)]
struct Opts {
    label: bool,
    unbuffered: bool,
    kill_on_bad_exit: bool,
    wait: Option<u64>,
    quiet: bool,
    mpi: Option<String>,
    stdin: StdinMode,
    stdout: Option<String>,
    stderr: Option<String>,
    distribution: Distribution,
    /// `-m` as given, when it was.
    distribution_arg: Option<String>,
    overlap: bool,
    exclusive: bool,
    exact: bool,
    /// `--whole`: all of the job's CPUs on the step's nodes, even with
    /// `-c` (what a step without `--exact` gets anyway).
    whole: bool,
    overcommit: bool,
    jobid: Option<u32>,
    export: Option<String>,
    /// `--gpu-bind`, checked.
    gpu_bind: Option<String>,
    /// `--cpu-bind`, parsed.
    cpu_bind: Option<proto::CpuBind>,
    /// `--hint`, checked.
    hint: Option<String>,
    /// `--ntasks-per-gpu`.
    ntasks_per_gpu: Option<u32>,
    /// `--prolog`, `--epilog`: run by srun itself.
    prolog: Option<String>,
    epilog: Option<String>,
    /// `--task-prolog`, `--task-epilog`.
    task_prolog: Option<String>,
    task_epilog: Option<String>,
    /// `--pty`: task 0 on a pseudo-terminal.
    pty: bool,
    /// `--multi-prog`: the command is a configuration file.
    multi_prog: bool,
    /// `--bcast[=DEST]`: the program is copied to DEST on every node first.
    bcast: Option<String>,
    argv: Vec<String>,
}

/// A path relative to srun's working directory made absolute (the tasks
/// run it from theirs).
fn absolute(path: &str) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    match std::env::current_dir() {
        Ok(d) => d.join(path).to_string_lossy().into_owned(),
        Err(_) => path.to_string(),
    }
}

/// What srun asks task/affinity for: `--cpu-bind` (else `SLURM_CPU_BIND`,
/// srun(1)'s input variable), its type from `--hint` (else `SLURM_HINT`)
/// where it names none; `None` for Slurm's default.
fn cpu_bind_request(given: Option<proto::CpuBind>, hint: Option<&str>) -> Option<String> {
    let mut bind = given
        .or_else(|| {
            std::env::var("SLURM_CPU_BIND")
                .ok()
                .and_then(|v| proto::CpuBind::parse(&v).ok())
        })
        .unwrap_or_default();
    let hint = hint
        .map(str::to_string)
        .or_else(|| std::env::var("SLURM_HINT").ok());
    if bind.kind == proto::CpuBindType::Auto {
        if let Some(kind) = hint.and_then(|h| proto::CpuBind::of_hint(&h).ok()) {
            bind.kind = kind;
        }
    }
    Some(bind.to_text()).filter(|t| !t.is_empty())
}

fn eprint_lines(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// `-i`: `all`, `none`, a task number, or a file name pattern.
fn stdin_mode(val: &str) -> StdinMode {
    if val.eq_ignore_ascii_case("none") {
        StdinMode::None
    } else if val.eq_ignore_ascii_case("all") {
        StdinMode::All
    } else if let Ok(n) = val.parse::<u32>() {
        StdinMode::Task(n)
    } else {
        StdinMode::File(val.to_string())
    }
}

/// `-o`/`-e` patterns that name one file per task or node are opened by
/// the nodes; the others are written by srun itself.
fn per_task_pattern(p: &str) -> bool {
    p.contains("%t") || p.contains("%n") || p.contains("%N")
}

/// Runs `srun`.
pub fn main(args: Vec<String>) -> i32 {
    let parsed = match getopt::parse(&specs(), &args, true) {
        Ok(p) => p,
        Err(e) => {
            eprint_lines(&crate::common::usage_error("srun", &e.message()));
            return 1;
        }
    };
    // srun(1) "IO Redirection": stdin goes to every task unless `-i`
    // (or SLURM_STDINMODE) says otherwise.
    let mut o = Opts {
        exclusive: true,
        stdin: std::env::var("SLURM_STDINMODE")
            .ok()
            .filter(|v| !v.is_empty())
            .map_or(StdinMode::All, |v| stdin_mode(&v)),
        ..Opts::default()
    };
    let mut job_items: Vec<(&'static str, Option<String>)> = Vec::new();
    for item in parsed {
        match item {
            Item::Positional(p) => o.argv.push(p),
            Item::Opt(name, v) => {
                let val = v.clone().unwrap_or_default();
                match name {
                    "help" => {
                        crate::common::print_stdout(HELP);
                        return 0;
                    }
                    "usage" => {
                        crate::common::print_stdout(USAGE);
                        return 0;
                    }
                    "version" => {
                        crate::common::print_stdout(&crate::common::version_line());
                        return 0;
                    }
                    "label" => o.label = true,
                    "pty" => o.pty = true,
                    "multi-prog" => o.multi_prog = true,
                    "bcast" => o.bcast = Some(val),
                    "unbuffered" => o.unbuffered = true,
                    "kill-on-bad-exit" => o.kill_on_bad_exit = val != "0",
                    "wait" => match val.parse() {
                        Ok(n) => o.wait = Some(n),
                        Err(_) => {
                            say!("srun: error: Invalid numeric value \"{val}\" for --wait.");
                            return 1;
                        }
                    },
                    "quiet" => o.quiet = true,
                    "mpi" => o.mpi = Some(val),
                    "input" => o.stdin = stdin_mode(&val),
                    "output" => o.stdout = Some(val),
                    "error" => o.stderr = Some(val),
                    "distribution" => match Distribution::parse(&val) {
                        Some(d) => {
                            o.distribution = d;
                            o.distribution_arg = Some(val);
                        }
                        None => {
                            say!("srun: error: Invalid --distribution specification");
                            return 1;
                        }
                    },
                    "overlap" => o.overlap = true,
                    "exact" => {
                        o.exclusive = true;
                        o.exact = true;
                    }
                    "overcommit" => o.overcommit = true,
                    "whole" => o.whole = true,
                    // What Open MPI's mpirun passes for its daemons: a
                    // step beside the others, on all of the job's CPUs.
                    "external-launcher" => {
                        o.overlap = true;
                        o.whole = true;
                    }
                    "jobid" => match val.parse() {
                        Ok(n) => o.jobid = Some(n),
                        Err(_) => {
                            say!("srun: error: Invalid --jobid specification");
                            return 1;
                        }
                    },
                    "export" => o.export = Some(val),
                    "task-prolog" => o.task_prolog = Some(val),
                    "prolog" => o.prolog = Some(val),
                    "epilog" => o.epilog = Some(val),
                    "task-epilog" => o.task_epilog = Some(val),
                    "exclusive" => {
                        o.exclusive = true;
                        o.exact = true;
                        job_items.push((name, v));
                    }
                    "cpu-bind" | "cpu_bind" => match proto::CpuBind::parse(&val) {
                        Ok(b) => o.cpu_bind = Some(b),
                        Err(e) => {
                            say!("srun: error: {e}");
                            return 1;
                        }
                    },
                    "hint" => match proto::CpuBind::of_hint(&val) {
                        Ok(_) => {
                            o.hint = Some(val);
                            job_items.push((name, v));
                        }
                        Err(e) => {
                            say!("srun: error: {e}");
                            return 1;
                        }
                    },
                    "gpu-bind" => match proto::GpuBind::parse(&val) {
                        Ok(_) => o.gpu_bind = Some(val),
                        Err(e) => {
                            say!("srun: error: {e}");
                            return 1;
                        }
                    },
                    "ntasks-per-gpu" => match val.trim().parse::<u32>() {
                        Ok(n) if n > 0 => o.ntasks_per_gpu = Some(n),
                        _ => {
                            say!("srun: error: Invalid numeric value \"{val}\" for --ntasks-per-gpu.");
                            return 1;
                        }
                    },
                    _ => job_items.push((name, v)),
                }
            }
        }
    }
    if o.mpi
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("list"))
    {
        crate::common::print_stdout(mpi_list());
        if !PMIX {
            // Slurm's list stays as it is on stdout; the reason pmix is
            // missing goes beside it.
            say!(
                "srun: note: no pmix: this muster was built without PMIx (cargo feature `pmix`, \
                 which links the system's OpenPMIx, Debian libpmix-dev)"
            );
        }
        return 0;
    }
    if o.argv.is_empty() {
        say!("srun: fatal: No command given to execute.");
        return 1;
    }
    let multi_prog = if o.multi_prog {
        match read_multi_prog(&o.argv[0]) {
            Ok(text) => Some(text),
            Err(lines) => {
                eprint_lines(&lines);
                return 1;
            }
        }
    } else {
        None
    };
    if let Some(dest) = &o.bcast {
        if dest.is_empty() || dest.ends_with('/') {
            say!(
                "srun: error: --bcast needs a destination file here (--bcast=PATH): \
                 slurm_bcast_JOB.STEP_NODE names are not made"
            );
            return 1;
        }
    }
    if o.pty {
        // srun(1) --pty: task 0 alone reads srun's stdin, and its output
        // is passed on as it comes (no labels: a terminal's bytes).
        o.stdin = StdinMode::Task0;
        o.unbuffered = true;
        o.label = false;
    }
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".to_string());
    let st = match alloc::job_state("srun", &job_items, &cwd, crate::common::now()) {
        Ok(st) => st,
        Err(text) => {
            eprint_lines(&text);
            return if text.contains("Invalid --") { 255 } else { 1 };
        }
    };
    let client = match client::Client::from_env() {
        Ok(c) => c,
        Err(e) => {
            say!("srun: error: {e}");
            return 1;
        }
    };
    let cfg_mpi = client
        .config()
        .other
        .get("mpidefault")
        .map(|(_, v)| v.clone());
    let env_mpi = std::env::var("SLURM_MPI_TYPE").ok();
    let mpi = o
        .mpi
        .clone()
        .or(env_mpi)
        .or(cfg_mpi)
        .unwrap_or_else(|| "none".into())
        .to_ascii_lowercase();
    let mpi = match mpi.as_str() {
        "none" | "openmpi" => "none".to_string(),
        "pmi2" | "pmi1" | "pmi" => "pmi2".to_string(),
        "pmix" | "pmix_v4" if PMIX => "pmix".to_string(),
        "pmix" | "pmix_v4" => {
            say!(
                "srun: error: MPI type '{mpi}' is not available: this muster was built without \
                 PMIx (cargo feature `pmix`), --mpi=list for acceptable types"
            );
            return 1;
        }
        other => {
            say!("srun: error: Invalid MPI type '{other}', --mpi=list for acceptable types");
            return 1;
        }
    };
    let mut env = alloc::process_env();
    crate::sbatch::add_process_env(&mut env);
    let in_job = o.jobid.or_else(|| {
        ["SLURM_JOB_ID", "SLURM_JOBID"]
            .iter()
            .find_map(|k| std::env::var(k).ok())
            .and_then(|v| v.parse().ok())
    });
    let work_dir = match &st.chdir {
        Some(d) if d.starts_with('/') => d.clone(),
        Some(d) => format!("{}/{d}", cwd.trim_end_matches('/')),
        None => cwd.clone(),
    };
    let name = if st.name_set {
        st.desc.name.clone()
    } else {
        o.argv[0]
            .rsplit('/')
            .next()
            .unwrap_or(&o.argv[0])
            .to_string()
    };
    // Inside an allocation srun takes its counts from it when not given.
    let env_num = |k: &str| -> Option<u32> { std::env::var(k).ok()?.parse().ok() };
    let (job_id, standalone) = match in_job {
        Some(id) => (JobId(id), false),
        None => {
            let mut desc = st.desc.clone();
            desc.alloc_only = true;
            desc.name = name.clone();
            desc.work_dir = work_dir.clone();
            desc.submit_dir = cwd.clone();
            desc.submit_host = client.identity().host.clone();
            desc.submit_line = std::iter::once("srun")
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            desc.uid = client.identity().uid;
            desc.gid = client.identity().gid;
            desc.user = client.identity().user.clone();
            desc.alloc_sid = std::process::id();
            let a = match alloc::allocate(&client, "srun", desc, o.quiet) {
                Ok(a) => a,
                Err(code) => return code,
            };
            // A standalone srun's tasks have the allocation's variables
            // less its node aliases and the memory default, as Slurm's.
            for (k, v) in &a.env {
                if !matches!(
                    k.as_str(),
                    "SLURM_NODE_ALIASES" | "SLURM_MEM_PER_CPU" | "SLURM_MEM_PER_NODE"
                ) {
                    alloc::set_env(&mut env, k, v);
                }
            }
            (a.job_id, true)
        }
    };
    let ntasks = st.desc.ntasks.or_else(|| {
        if st.desc.min_nodes.is_some() || st.desc.ntasks_per_node.is_some() {
            None
        } else if in_job.is_some() {
            env_num("SLURM_NTASKS").or_else(|| env_num("SLURM_NPROCS"))
        } else {
            None
        }
    });
    // Inside an allocation srun asks for the job's node count unless `-N`
    // says otherwise (SLURM_NNODES), so fewer tasks than that get the
    // warning too (real Slurm: `srun -n1` and `srun -n1 -w node2` in a
    // two-node allocation; not `srun -n1 -N1`).
    if in_job.is_some() && st.desc.min_nodes.is_none() {
        if let (Some(n), Some(job_nodes)) = (st.desc.ntasks, env_num("SLURM_NNODES")) {
            if n > 0 && n < job_nodes {
                say!(
                    "srun: Warning: can't run {n} processes on {job_nodes} nodes, setting nnodes to {n}"
                );
            }
        }
    }
    // `-m block` is said in the tasks' environment too (the controller
    // sets the other distributions' names).
    if o.distribution == Distribution::Block {
        if let Some(arg) = &o.distribution_arg {
            let first = arg.split([':', ',']).next().unwrap_or("");
            if first.eq_ignore_ascii_case("block") {
                alloc::set_env(&mut env, "SLURM_DISTRIBUTION", "block");
            }
        }
    }
    // --bcast: the program goes to every node first, then runs from there.
    let mut argv = o.argv.clone();
    if let Some(dest) = &o.bcast {
        let source = find_program(&argv[0], &cwd);
        let code = crate::sbcast::copy(
            "srun",
            &crate::sbcast::Copy {
                job_id: job_id.0,
                source: &source,
                dest,
                force: true,
                preserve: false,
                mode: true,
            },
        );
        if code != 0 {
            if standalone {
                alloc::release(&client, job_id, ExitCode { code, signal: 0 });
            }
            return code;
        }
        argv[0] = dest.clone();
    }
    let step_env = match o.export.as_deref() {
        None => env.clone(),
        Some(spec) => crate::sbatch::export::resolve(Some(spec), &env, None),
    };
    let code = run_step(
        &client,
        &o,
        StepRequest {
            job_id,
            name,
            argv,
            ntasks,
            min_nodes: st.desc.min_nodes,
            max_nodes: st.desc.max_nodes,
            ntasks_per_node: st.desc.ntasks_per_node,
            cpus_per_task: st.desc.cpus_per_task,
            mem_per_node: st.desc.mem_per_node,
            gres: step_gres(&st.desc),
            gpus: st.desc.gpus.as_ref().map(|g| g.count),
            nodelist: st.desc.nodelist.clone(),
            exclude: st.desc.exclude.clone(),
            distribution: o.distribution,
            exclusive: o.exclusive,
            // srun(1): `-c` implies `--exact`, as `--exclusive` does for a step.
            exact: !o.whole && (o.exact || st.desc.cpus_per_task.is_some()),
            overlap: o.overlap,
            overcommit: o.overcommit,
            time_limit: st.desc.time_limit,
            env: step_env,
            work_dir,
            stdout: o.stdout.clone().filter(|p| per_task_pattern(p)),
            stderr: o.stderr.clone().filter(|p| per_task_pattern(p)),
            stdin: o.stdin.clone(),
            mpi,
            acctg_freq: st.desc.acctg_freq.clone(),
            // Inside an allocation the job's --gpus-per-task (and
            // --gpu-bind) reach srun as input variables, as in Slurm.
            gpus_per_task: st.desc.gpus_per_task.as_ref().map(|g| g.count).or_else(|| {
                in_job
                    .and(std::env::var("SLURM_GPUS_PER_TASK").ok())
                    .and_then(|v| v.rsplit(':').next()?.parse().ok())
            }),
            ntasks_per_gpu: o.ntasks_per_gpu.or_else(|| {
                in_job
                    .and(std::env::var("SLURM_NTASKS_PER_GPU").ok())
                    .and_then(|v| v.parse().ok())
            }),
            gpu_bind: o.gpu_bind.clone().or_else(|| {
                in_job
                    .and(std::env::var("SLURM_GPU_BIND").ok())
                    .filter(|v| proto::GpuBind::parse(v).is_ok())
            }),
            cpu_bind: cpu_bind_request(o.cpu_bind.clone(), o.hint.as_deref()),
            task_prolog: o.task_prolog.clone().map(|p| absolute(&p)),
            task_epilog: o.task_epilog.clone().map(|p| absolute(&p)),
            gres_flags: st.desc.gres_flags.clone(),
            pty: o.pty.then(|| pty::window_size().unwrap_or((0, 0))),
            multi_prog,
            container: st.desc.container.clone(),
            ..StepRequest::default()
        },
    );
    if standalone {
        let exit = match code {
            c if c > 128 => ExitCode {
                code: 0,
                signal: c - 128,
            },
            c => ExitCode { code: c, signal: 0 },
        };
        alloc::release(&client, job_id, exit);
    }
    code
}

/// `--bcast`'s source: the program as named, or found on srun's PATH.
fn find_program(name: &str, cwd: &str) -> String {
    if name.contains('/') {
        return if name.starts_with('/') {
            name.to_string()
        } else {
            format!("{}/{name}", cwd.trim_end_matches('/'))
        };
    }
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| format!("{}/{name}", d.trim_end_matches('/')))
        .find(|p| std::path::Path::new(p).is_file())
        .unwrap_or_else(|| name.to_string())
}

/// `--multi-prog FILE`: the file's text once it parses, else srun's error
/// lines.
fn read_multi_prog(path: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|_| format!("srun: error: Unable to open configuration file {path}\n"))?;
    match proto::multi_prog::parse(&text) {
        Ok(_) => Ok(text),
        Err((line, what)) => Err(format!(
            "srun: error: Line {line} of configuration file {path} invalid: {what}\n\
             srun: error: Configuration file {path} invalid\n"
        )),
    }
}

/// The address this host reaches the controller from: the one the step's
/// nodes can reach srun on.
pub(crate) fn local_addr(client: &client::Client) -> String {
    let cfg = client.config();
    for h in &cfg.slurmctld_host {
        let host = h.addr.as_deref().unwrap_or(&h.name);
        let target = format!("{host}:{}", cfg.slurmctld_port);
        if let Ok(mut addrs) = std::net::ToSocketAddrs::to_socket_addrs(&target) {
            if let Some(sa) = addrs.next() {
                // A connected UDP socket sends nothing but knows its route.
                let any = if sa.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
                if let Ok(s) = std::net::UdpSocket::bind(any) {
                    if s.connect(sa).is_ok() {
                        if let Ok(local) = s.local_addr() {
                            return local.ip().to_string();
                        }
                    }
                }
            }
        }
    }
    "127.0.0.1".to_string()
}

pub(crate) fn random_token() -> String {
    let mut buf = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut buf);
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// One PMI fence being gathered: the nodes in it and their puts.
type FenceGather = (BTreeSet<u32>, Vec<(String, String)>);

/// What the main loop hears about.
enum Event {
    /// A node's supervisor connected and said hello.
    Connected(u32, TcpStream),
    /// A message from a node.
    Msg(u32, StepdToSrun),
    /// A node's connection ended.
    Gone(u32),
    /// srun got a signal.
    Signal(i32),
    /// srun's stdin had data (or ended: empty).
    Stdin(Vec<u8>),
}

fn signal_name(sig: i32) -> String {
    // SAFETY: strsignal returns a pointer to a static or thread-local string.
    let p = unsafe { libc::strsignal(sig) };
    if p.is_null() {
        return format!("Signal {sig}");
    }
    // SAFETY: a NUL-terminated string from libc.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// `0-3,5` for a sorted list of task ids.
fn ranges(ids: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// The lines srun prints for tasks that did not exit 0, grouped by node
/// and status (`srun: error: node1: tasks 0-1: Exited with exit code 3`).
pub fn failure_lines(nodes: &[String], tasks: &[Vec<u32>], status: &BTreeMap<u32, i32>) -> String {
    let mut out = String::new();
    for (node, ids) in nodes.iter().zip(tasks) {
        let mut groups: BTreeMap<(i32, i32), Vec<u32>> = BTreeMap::new();
        for t in ids {
            let Some(s) = status.get(t) else { continue };
            let e = ExitCode::from_wait_status(*s);
            if !e.is_success() {
                groups.entry((e.signal, e.code)).or_default().push(*t);
            }
        }
        for ((sig, code), mut ids) in groups {
            ids.sort_unstable();
            let which = if ids.len() == 1 {
                format!("task {}", ids[0])
            } else {
                format!("tasks {}", ranges(&ids))
            };
            // Slurm's SIG_OOM (status 253): the OOM killer hit the task.
            let what = if sig == 125 {
                "Out Of Memory".to_string()
            } else if sig != 0 {
                signal_name(sig)
            } else {
                format!("Exited with exit code {code}")
            };
            out.push_str(&format!("srun: error: {node}: {which}: {what}\n"));
        }
    }
    out
}

/// Writes task output, with `N: ` labels and line buffering unless `-u`.
struct OutputSink {
    label: bool,
    unbuffered: bool,
    partial: BTreeMap<(u32, bool), Vec<u8>>,
    files: [Option<std::fs::File>; 2],
}

impl OutputSink {
    fn write_raw(&mut self, stderr: bool, bytes: &[u8]) {
        let idx = usize::from(stderr);
        if let Some(f) = self.files[idx].as_mut() {
            let _ = f.write_all(bytes);
            return;
        }
        if stderr {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(bytes);
            let _ = e.flush();
        } else {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
    }

    fn add(&mut self, task: u32, stderr: bool, data: &[u8]) {
        if self.unbuffered && !self.label {
            self.write_raw(stderr, data);
            return;
        }
        let buf = self.partial.entry((task, stderr)).or_default();
        buf.extend_from_slice(data);
        let Some(last_nl) = buf.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        let rest = buf.split_off(last_nl + 1);
        let whole = std::mem::replace(buf, rest);
        let text = if self.label {
            let mut t = Vec::with_capacity(whole.len() + 8);
            for line in whole.split_inclusive(|b| *b == b'\n') {
                t.extend_from_slice(format!("{task}: ").as_bytes());
                t.extend_from_slice(line);
            }
            t
        } else {
            whole
        };
        self.write_raw(stderr, &text);
    }

    fn flush_task(&mut self, task: u32) {
        for stderr in [false, true] {
            if let Some(rest) = self.partial.remove(&(task, stderr)) {
                if rest.is_empty() {
                    continue;
                }
                // A labelled last line without its newline gets one, as
                // srun -l ends it: the next task's line starts on its own.
                let text = if self.label {
                    let mut t = format!("{task}: ").into_bytes();
                    t.extend_from_slice(&rest);
                    t.push(b'\n');
                    t
                } else {
                    rest
                };
                self.write_raw(stderr, &text);
            }
        }
    }
}

fn send(stream: &mut TcpStream, msg: SrunToStepd) -> bool {
    client::stepio::send(stream, msg).is_ok()
}

fn block_signals(pty: bool) -> nix::sys::signal::SigSet {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    if pty {
        set.add(Signal::SIGWINCH);
    }
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGCONT,
        Signal::SIGALRM,
    ] {
        set.add(s);
    }
    let _ = set.thread_block();
    set
}

/// Creates the step, runs it to the end and returns srun's exit status.
///
/// ```text
/// create_step --> spawn_event_threads --> open_sink --> StepRun::on_event ... --> finish
/// ```
fn run_step(client: &client::Client, o: &Opts, mut req: StepRequest) -> i32 {
    // `--prolog`: srun runs it itself before the step, with the step's
    // command line as its arguments; a failure aborts srun.
    // slurm.conf's SrunProlog/SrunEpilog where the options are not given.
    let conf = |key: &str| {
        client
            .config()
            .other
            .get(key)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let prolog = o.prolog.clone().or_else(|| conf("srunprolog"));
    let epilog = o.epilog.clone().or_else(|| conf("srunepilog"));
    if let Some(prolog) = prolog.as_deref().filter(|p| *p != "none") {
        match run_local_script(prolog, &req.argv, req.job_id, None) {
            Ok(0) => {}
            Ok(code) => {
                say!("srun: error: srun prolog failed: status={code}");
                return 1;
            }
            Err(e) => {
                say!("srun: error: srun prolog failed: {e}");
                return 1;
            }
        }
    }
    let (listener, created) = match create_step(client, o, &mut req) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let step_id = created.step_id;
    let code = run_created_step(client, o, req.clone(), listener, created);
    // `--epilog`: after the step, whatever its end.
    if let Some(epilog) = epilog.as_deref().filter(|p| *p != "none") {
        match run_local_script(epilog, &req.argv, req.job_id, Some(step_id)) {
            Ok(0) => {}
            Ok(code) => say!("srun: error: srun epilog failed: status={code}"),
            Err(e) => say!("srun: error: srun epilog failed: {e}"),
        }
    }
    code
}

/// Runs srun's `--prolog` or `--epilog` here, as the user, with srun's
/// environment and the job's (and step's) id; its exit code.
fn run_local_script(
    path: &str,
    argv: &[String],
    job_id: model::JobId,
    step_id: Option<u32>,
) -> Result<i32, String> {
    let mut cmd = std::process::Command::new(path);
    cmd.args(argv)
        .env("SLURM_JOB_ID", job_id.to_string())
        .env("SLURM_JOBID", job_id.to_string())
        .stdin(std::process::Stdio::null());
    if let Some(s) = step_id {
        cmd.env("SLURM_STEP_ID", s.to_string())
            .env("SLURM_STEPID", s.to_string());
    }
    let status = cmd.status().map_err(|e| format!("{path}: {e}"))?;
    Ok(status.code().unwrap_or_else(|| {
        128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
    }))
}

/// Runs a created step to its end; srun's exit status.
fn run_created_step(
    client: &client::Client,
    o: &Opts,
    req: StepRequest,
    listener: TcpListener,
    created: StepCreated,
) -> i32 {
    let rx = spawn_event_threads(listener, req.token.clone(), &o.stdin, o.pty);
    let sink = open_sink(client, o, &req, &created);
    let mut run = StepRun::new(o, &created, req.job_id, sink, client.config().kill_wait);
    let raw = o.pty.then(pty::RawMode::enter).flatten();
    while run.done_nodes.len() < run.n_nodes {
        let ev = match rx.recv_timeout(run.timeout()) {
            Ok(ev) => ev,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                run.on_timeout();
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        run.on_event(ev);
    }
    drop(raw);
    run.finish()
}

/// Listens for the supervisors, then asks the controller for the step until
/// the nodes are free. The error is srun's exit status, the reason printed.
fn create_step(
    client: &client::Client,
    o: &Opts,
    req: &mut StepRequest,
) -> Result<(TcpListener, StepCreated), i32> {
    let host = local_addr(client);
    let listener = match TcpListener::bind((host.as_str(), 0)) {
        Ok(l) => l,
        Err(e) => {
            say!("srun: error: cannot listen on {host}: {e}");
            return Err(1);
        }
    };
    req.srun_host = host;
    req.srun_port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    req.srun_pid = std::process::id();
    req.token = random_token();
    let job_id = req.job_id;
    let mut said_busy = false;
    let mut delay = Duration::from_millis(10);
    let created: StepCreated = loop {
        match client.call(CtldRequest::CreateStep(Box::new(req.clone()))) {
            Ok(CtldResponse::StepCreated(c)) => break c,
            Ok(_) => {
                say!("srun: error: Unable to create step for job {job_id}: Unexpected message received");
                return Err(1);
            }
            Err(client::ClientError::Refused(SlurmError::NodesBusy)) => {
                if !said_busy && !o.quiet {
                    say!("srun: Job {job_id} step creation temporarily disabled, retrying (Requested nodes are busy)");
                }
                said_busy = true;
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(500));
            }
            Err(client::ClientError::Refused(e)) => {
                say!(
                    "srun: error: Unable to create step for job {job_id}: {}",
                    e.as_slurm_str()
                );
                return Err(1);
            }
            Err(e) => {
                say!("srun: error: Unable to create step for job {job_id}: {e}");
                return Err(1);
            }
        }
    };
    if said_busy && !o.quiet {
        say!("srun: Step created for job {job_id}");
    }
    Ok((listener, created))
}

/// Blocks srun's signals and starts the threads that feed the main loop:
/// one for signals, one accepting the supervisors (a reader each, after a
/// Hello carrying `token`), and one for stdin when the tasks read it.
fn spawn_event_threads(
    listener: TcpListener,
    token: String,
    stdin: &StdinMode,
    pty: bool,
) -> mpsc::Receiver<Event> {
    let sigset = block_signals(pty);
    let (tx, rx) = mpsc::channel::<Event>();
    // Signals.
    {
        let tx = tx.clone();
        std::thread::spawn(move || loop {
            match sigset.wait() {
                Ok(sig) => {
                    if tx.send(Event::Signal(sig as i32)).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            }
        });
    }
    // Connections from the supervisors.
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { continue };
                let _ = s.set_nodelay(true);
                let tx = tx.clone();
                let token = token.clone();
                std::thread::spawn(move || {
                    let Ok(StepdToSrun::Hello {
                        token: t,
                        node_index,
                        ..
                    }) = client::stepio::recv(&mut s)
                    else {
                        return;
                    };
                    if t != token {
                        return;
                    }
                    let Ok(writer) = s.try_clone() else { return };
                    if tx.send(Event::Connected(node_index, writer)).is_err() {
                        return;
                    }
                    loop {
                        match client::stepio::recv(&mut s) {
                            Ok(m) => {
                                if tx.send(Event::Msg(node_index, m)).is_err() {
                                    return;
                                }
                            }
                            Err(_) => {
                                let _ = tx.send(Event::Gone(node_index));
                                return;
                            }
                        }
                    }
                });
            }
        });
    }
    // stdin, for the tasks that read it.
    if !matches!(stdin, StdinMode::None | StdinMode::File(_)) {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let mut input = std::io::stdin().lock();
            loop {
                match input.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Event::Stdin(Vec::new()));
                        return;
                    }
                    Ok(n) => {
                        if tx.send(Event::Stdin(buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
    drop(tx);
    rx
}

/// Where the tasks' output goes: `-o`/`-e` files that srun writes itself
/// (stderr follows stdout's file when only `-o` is given), else srun's own.
fn open_sink(
    client: &client::Client,
    o: &Opts,
    req: &StepRequest,
    created: &StepCreated,
) -> OutputSink {
    let open = |p: &Option<String>| -> Option<std::fs::File> {
        let p = p.as_ref().filter(|p| !per_task_pattern(p))?;
        let path = expand_srun_path(p, req, created.step_id, &client.identity().user);
        std::fs::File::create(&path).ok()
    };
    let out_file = open(&o.stdout);
    let err_file = match (&o.stderr, &out_file) {
        (None, Some(f)) => f.try_clone().ok(),
        _ => open(&o.stderr),
    };
    OutputSink {
        label: o.label,
        unbuffered: o.unbuffered,
        partial: BTreeMap::new(),
        files: [out_file, err_file],
    }
}

/// Sends `msg` to every connected supervisor.
fn broadcast(writers: &mut BTreeMap<u32, TcpStream>, msg: SrunToStepd) {
    for w in writers.values_mut() {
        send(w, msg.clone());
    }
}

/// The main loop's state while a step runs: the supervisors connected,
/// the tasks' exit statuses, stdin kept for late nodes, PMI fences, and
/// what srun has already said or done about ending the step.
struct StepRun<'a> {
    o: &'a Opts,
    created: &'a StepCreated,
    step_name: String,
    n_nodes: usize,
    ntasks: usize,
    sink: OutputSink,
    stdin_nodes: BTreeSet<u32>,
    writers: BTreeMap<u32, TcpStream>,
    pending_stdin: Vec<Vec<u8>>,
    stdin_done: bool,
    done_nodes: BTreeSet<u32>,
    status: BTreeMap<u32, i32>,
    fence: BTreeMap<u32, FenceGather>,
    last_int: Option<Instant>,
    kill_at: Option<Instant>,
    killed: bool,
    /// The controller ended the step alone (`scancel J.S`, `-K`): said once
    /// at the end, as Slurm's srun does.
    force_terminated: bool,
    said_aborted: bool,
    kill_wait: u32,
    /// Signals forwarded so far: a supervisor that connects later gets them
    /// too (its tasks may already run: it says Hello before it starts them,
    /// but that Hello can reach this loop after a signal does).
    forwarded: Vec<i32>,
    connect_deadline: Instant,
}

impl<'a> StepRun<'a> {
    fn new(
        o: &'a Opts,
        created: &'a StepCreated,
        job_id: JobId,
        sink: OutputSink,
        kill_wait: u32,
    ) -> Self {
        let n_nodes = created.nodes.len();
        let stdin_nodes: BTreeSet<u32> = match &o.stdin {
            StdinMode::Task0 => node_of(&created.tasks, 0).into_iter().collect(),
            StdinMode::Task(t) => node_of(&created.tasks, *t).into_iter().collect(),
            StdinMode::All => (0..n_nodes as u32).collect(),
            _ => BTreeSet::new(),
        };
        StepRun {
            o,
            created,
            step_name: format!("{job_id}.{}", created.step_id),
            n_nodes,
            ntasks: created.tasks.iter().map(Vec::len).sum(),
            sink,
            stdin_nodes,
            writers: BTreeMap::new(),
            pending_stdin: Vec::new(),
            stdin_done: false,
            done_nodes: BTreeSet::new(),
            status: BTreeMap::new(),
            fence: BTreeMap::new(),
            last_int: None,
            kill_at: None,
            killed: false,
            force_terminated: false,
            said_aborted: false,
            kill_wait,
            forwarded: Vec::new(),
            connect_deadline: Instant::now() + Duration::from_secs(60),
        }
    }

    /// Whether some node's supervisor has neither connected nor finished.
    fn waiting_for_connections(&self) -> bool {
        self.writers.len() + self.done_nodes.len() < self.n_nodes
    }

    /// How long the loop may wait for the next event.
    fn timeout(&self) -> Duration {
        match self.kill_at {
            Some(t) => t.saturating_duration_since(Instant::now()),
            None if self.waiting_for_connections() => self
                .connect_deadline
                .saturating_duration_since(Instant::now()),
            None => Duration::from_secs(3600),
        }
    }

    /// No event in time: `-W` ran out, or nodes never connected.
    fn on_timeout(&mut self) {
        if self.kill_at.is_some_and(|t| Instant::now() >= t) {
            self.kill_at = None;
            if !self.killed {
                say!("srun: error: Timed out waiting for job step to complete");
            }
            self.killed = true;
            broadcast(&mut self.writers, SrunToStepd::Signal(libc::SIGKILL));
            return;
        }
        if self.waiting_for_connections() && Instant::now() >= self.connect_deadline {
            for (i, node) in self.created.nodes.iter().enumerate() {
                let i = i as u32;
                if !self.writers.contains_key(&i) && !self.done_nodes.contains(&i) {
                    say!("srun: error: {node}: the step's tasks never started");
                    for t in &self.created.tasks[i as usize] {
                        self.status.entry(*t).or_insert(libc::SIGKILL);
                    }
                    self.done_nodes.insert(i);
                }
            }
            broadcast(&mut self.writers, SrunToStepd::Signal(libc::SIGKILL));
        }
    }

    fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Connected(i, w) => self.on_connected(i, w),
            Event::Stdin(data) => self.on_stdin(data),
            Event::Msg(i, msg) => self.on_msg(i, msg),
            Event::Gone(i) => self.on_gone(i),
            Event::Signal(sig) if sig == libc::SIGINT => self.on_interrupt(),
            Event::Signal(sig) if sig == libc::SIGWINCH => {
                // --pty: task 0's terminal takes srun's new size.
                if let (Some((rows, cols)), Some(n)) =
                    (pty::window_size(), node_of(&self.created.tasks, 0))
                {
                    if let Some(w) = self.writers.get_mut(&n) {
                        send(w, SrunToStepd::WindowSize(rows, cols));
                    }
                }
            }
            Event::Signal(sig) => {
                self.forwarded.push(sig);
                broadcast(&mut self.writers, SrunToStepd::Signal(sig));
            }
        }
    }

    /// A supervisor connected: it gets the stdin, signals and kill it missed.
    fn on_connected(&mut self, i: u32, mut w: TcpStream) {
        if self.stdin_nodes.contains(&i) {
            for chunk in &self.pending_stdin {
                send(&mut w, SrunToStepd::Stdin(chunk.clone()));
            }
            if self.stdin_done {
                send(&mut w, SrunToStepd::StdinEof);
            }
        }
        for sig in &self.forwarded {
            send(&mut w, SrunToStepd::Signal(*sig));
        }
        if self.killed {
            send(&mut w, SrunToStepd::Signal(libc::SIGKILL));
        }
        self.writers.insert(i, w);
    }

    fn on_stdin(&mut self, data: Vec<u8>) {
        let eof = data.is_empty();
        for n in &self.stdin_nodes {
            if let Some(w) = self.writers.get_mut(n) {
                send(
                    w,
                    if eof {
                        SrunToStepd::StdinEof
                    } else {
                        SrunToStepd::Stdin(data.clone())
                    },
                );
            }
        }
        if eof {
            self.stdin_done = true;
        } else {
            self.pending_stdin.push(data);
        }
    }

    fn on_msg(&mut self, i: u32, msg: StepdToSrun) {
        let o = self.o;
        match msg {
            StepdToSrun::Hello { .. } => {}
            StepdToSrun::Output { task, stderr, data } => self.sink.add(task, stderr, &data),
            StepdToSrun::TaskExited { task, status: s } => {
                self.sink.flush_task(task);
                self.status.insert(task, s);
                let e = ExitCode::from_wait_status(s);
                // -K ends the step as the controller ends a cancelled
                // one: the other tasks get SIGTERM (rc 143).
                if !e.is_success() && o.kill_on_bad_exit && !self.killed {
                    self.killed = true;
                    if !o.quiet {
                        say!(
                            "srun: launch/slurm: _step_signal: Terminating StepId={}",
                            self.step_name
                        );
                    }
                    let kill_wait = self.kill_wait;
                    broadcast(&mut self.writers, SrunToStepd::Terminate { kill_wait });
                }
                if let (Some(w), None) = (o.wait, self.kill_at) {
                    if self.status.len() < self.ntasks {
                        self.kill_at = Some(Instant::now() + Duration::from_secs(w));
                    }
                }
            }
            StepdToSrun::FenceIn { seq, kvs } => {
                let entry = self.fence.entry(seq).or_default();
                entry.0.insert(i);
                entry.1.extend(kvs);
                if entry.0.len() == self.n_nodes {
                    let (_, all) = self.fence.remove(&seq).unwrap_or_default();
                    broadcast(&mut self.writers, SrunToStepd::FenceOut { seq, kvs: all });
                }
            }
            StepdToSrun::Abort {
                task,
                code: _,
                message,
            } => {
                if !self.killed {
                    let node = &self.created.nodes[i as usize];
                    say!("srun: error: {node}: task {task}: {message}");
                    say!("srun: Terminating StepId={}", self.step_name);
                    self.killed = true;
                    broadcast(&mut self.writers, SrunToStepd::Signal(libc::SIGKILL));
                }
            }
            StepdToSrun::Ending {
                step,
                kill_wait: wait,
            } => {
                if step {
                    self.force_terminated = true;
                } else if !self.said_aborted && !o.quiet {
                    self.said_aborted = true;
                    say!(
                        "srun: Job step aborted: Waiting up to {} seconds for job step to finish.",
                        wait + 2
                    );
                }
            }
            StepdToSrun::Done => {
                self.done_nodes.insert(i);
            }
        }
    }

    /// A node's connection ended before it said Done: its tasks count as
    /// killed and the step is ended.
    fn on_gone(&mut self, i: u32) {
        self.writers.remove(&i);
        if !self.done_nodes.contains(&i) {
            let node = &self.created.nodes[i as usize];
            say!("srun: error: Node failure on {node}");
            for t in &self.created.tasks[i as usize] {
                self.status.entry(*t).or_insert(libc::SIGKILL);
            }
            self.done_nodes.insert(i);
            if !self.killed {
                self.killed = true;
                broadcast(&mut self.writers, SrunToStepd::Signal(libc::SIGKILL));
            }
        }
    }

    /// Ctrl-C: the tasks' state; a second one within a second kills the step.
    fn on_interrupt(&mut self) {
        let step_name = &self.step_name;
        let now = Instant::now();
        if self
            .last_int
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            say!("srun: sending Ctrl-C to StepId={step_name}");
            say!("srun: forcing job termination");
            self.killed = true;
            broadcast(&mut self.writers, SrunToStepd::Signal(libc::SIGKILL));
        } else {
            self.last_int = Some(now);
            say!("srun: interrupt (one more within 1 sec to abort)");
            let running: Vec<u32> = (0..self.ntasks as u32)
                .filter(|t| !self.status.contains_key(t))
                .collect();
            let exited: Vec<u32> = (0..self.ntasks as u32)
                .filter(|t| self.status.contains_key(t))
                .collect();
            let plural = |v: &[u32]| if v.len() == 1 { "task" } else { "tasks" };
            if !running.is_empty() {
                say!(
                    "srun: StepId={step_name} {} {}: running",
                    plural(&running),
                    ranges(&running)
                );
            }
            if !exited.is_empty() {
                say!(
                    "srun: StepId={step_name} {} {}: exited",
                    plural(&exited),
                    ranges(&exited)
                );
            }
        }
    }

    /// Flushes the last output, reports the failed tasks and returns srun's
    /// exit status.
    fn finish(mut self) -> i32 {
        for t in 0..self.ntasks as u32 {
            self.sink.flush_task(t);
        }
        if !self.o.quiet || self.status.values().any(|s| *s != 0) {
            eprint_lines(&failure_lines(
                &self.created.nodes,
                &self.created.tasks,
                &self.status,
            ));
        }
        if self.force_terminated && !self.o.quiet {
            say!("srun: Force Terminated StepId={}", self.step_name);
        }
        exit_status(self.status.values().copied())
    }
}

/// The step's GRES per node: `--gres`, with `--gpus-per-node` as `gpu`.
fn step_gres(desc: &proto::JobDesc) -> Vec<model::Gres> {
    let mut v = desc.gres.clone();
    if let Some(g) = &desc.gpus_per_node {
        if !v.iter().any(|x| x.name == "gpu") {
            v.push(g.clone());
        }
    }
    v
}

/// srun's exit status from its tasks' wait statuses.
pub fn exit_status(statuses: impl Iterator<Item = i32>) -> i32 {
    let mut worst = ExitCode::default();
    for s in statuses {
        let e = ExitCode::from_wait_status(s);
        let key = |e: ExitCode| (e.signal != 0, e.signal, e.code);
        if key(e) > key(worst) {
            worst = e;
        }
    }
    if worst.signal != 0 {
        128 + worst.signal
    } else {
        worst.code
    }
}

fn node_of(tasks: &[Vec<u32>], task: u32) -> Option<u32> {
    tasks
        .iter()
        .position(|t| t.contains(&task))
        .map(|p| p as u32)
}

/// Expands a pattern srun itself writes (one without `%t %n %N`), made
/// absolute against the step's working directory (`model::filename`: the
/// job's name and array ids from the step's environment, as in the tasks).
fn expand_srun_path(p: &str, req: &StepRequest, step: u32, user: &str) -> String {
    let env = |name: &str| {
        req.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let env_num = |name: &str| env(name).and_then(|v| v.parse::<u32>().ok());
    let job_step = format!("{}.{step}", req.job_id);
    let step = step.to_string();
    let name = env("SLURM_JOB_NAME").unwrap_or_else(|| req.name.clone());
    model::filename::expand(
        p,
        &model::filename::PatternValues {
            job_id: req.job_id.0,
            job_step: Some(&job_step),
            array_job_id: env_num("SLURM_ARRAY_JOB_ID").unwrap_or(req.job_id.0),
            array_task_id: env_num("SLURM_ARRAY_TASK_ID"),
            name: &name,
            user,
            node: "",
            node_index: 0,
            task: 0,
            step: &step,
            work_dir: &req.work_dir,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_grouped_per_node_and_status() {
        let nodes = vec!["node1".to_string(), "node2".to_string()];
        let tasks = vec![vec![0, 1], vec![2]];
        let st: BTreeMap<u32, i32> = [(0, 3 << 8), (1, 3 << 8), (2, 9)].into_iter().collect();
        assert_eq!(
            failure_lines(&nodes, &tasks, &st),
            "srun: error: node1: tasks 0-1: Exited with exit code 3\nsrun: error: node2: task 2: Killed\n"
        );
    }

    #[test]
    fn issue_37_a_task_the_oom_killer_hit_is_out_of_memory() {
        // Slurm's SIG_OOM wait status, 253: srun exits 128 + 125.
        let nodes = vec!["node1".to_string()];
        let st: BTreeMap<u32, i32> = [(0, 253), (1, 0)].into_iter().collect();
        assert_eq!(
            failure_lines(&nodes, &[vec![0, 1]], &st),
            "srun: error: node1: task 0: Out Of Memory\n"
        );
        assert_eq!(exit_status(st.values().copied()), 253);
    }

    #[test]
    fn the_reference_exit_line_matches() {
        let nodes = vec!["node1".to_string()];
        let st: BTreeMap<u32, i32> = [(0, 3 << 8)].into_iter().collect();
        let text = failure_lines(&nodes, &[vec![0]], &st);
        let reference = "srun: error: node1: task 0: Exited with exit code 3\n";
        assert_eq!(text, reference);
        assert_eq!(exit_status(st.values().copied()), 3);
    }

    #[test]
    fn exit_status_is_the_highest_code_or_signal() {
        assert_eq!(exit_status([0, 2 << 8, 1 << 8].into_iter()), 2);
        assert_eq!(exit_status([3 << 8, 9].into_iter()), 137);
        assert_eq!(exit_status([].into_iter()), 0);
    }

    #[test]
    fn labels_prefix_every_whole_line() {
        let mut sink = OutputSink {
            label: true,
            unbuffered: false,
            partial: BTreeMap::new(),
            files: [None, None],
        };
        sink.add(1, false, b"a\nb");
        assert_eq!(sink.partial[&(1, false)], b"b".to_vec());
    }

    #[test]
    fn issue_35_srun_output_patterns_name_user_job_and_array() {
        let req = StepRequest {
            job_id: JobId(42),
            name: "hostname".into(),
            work_dir: "/w".into(),
            env: vec![
                ("SLURM_JOB_NAME".into(), "myjob".into()),
                ("SLURM_ARRAY_JOB_ID".into(), "40".into()),
                ("SLURM_ARRAY_TASK_ID".into(), "2".into()),
            ],
            ..StepRequest::default()
        };
        assert_eq!(
            expand_srun_path("%u-%x-%A_%a-%j.%s-%J-%%.out", &req, 3, "alice"),
            "/w/alice-myjob-40_2-42.3-42.3-%.out"
        );
        assert_eq!(expand_srun_path("/o/%j", &req, 0, "alice"), "/o/42");
    }

    /// `srun -l -n2 bash -c 'printf p$SLURM_PROCID'` under Slurm 22.05
    /// prints `0: p0` and `1: p1` on lines of their own.
    #[test]
    fn issue_35_a_labelled_last_line_is_ended_with_a_newline() {
        let dir = std::env::temp_dir().join(format!("srun-label-{}", std::process::id()));
        let file = std::fs::File::create(&dir).expect("a temp file");
        let mut sink = OutputSink {
            label: true,
            unbuffered: false,
            partial: BTreeMap::new(),
            files: [file.try_clone().ok(), None],
        };
        sink.add(0, false, b"p0");
        sink.add(1, false, b"p1");
        sink.flush_task(0);
        sink.flush_task(1);
        drop(sink);
        let text = std::fs::read_to_string(&dir).expect("written");
        let _ = std::fs::remove_file(&dir);
        assert_eq!(text, "0: p0\n1: p1\n");
    }
}
