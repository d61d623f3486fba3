//! `sbatch`: submit a batch script, with Slurm 22.05's options, `#SBATCH`
//! directives, `SBATCH_*` input variables, output and exit codes.
//!
//! ```text
//! argv ──getopt──▶ first pass (--wrap, --help, script path)
//!                     │
//!                     ▼
//!  script (file | --wrap | stdin) ──checks──▶ #SBATCH words
//!                     │
//!   #SBATCH words, SBATCH_* vars, argv  ──apply, lowest first──▶ JobDesc
//!                     │
//!                     ▼                          (build: no network)
//!   main: client.call(Submit) ─▶ "Submitted batch job N" ─▶ [--wait: poll]
//! ```
//!
//! [`build`] is the pure core the tests drive: it reads only the script and
//! the files options name (`-w file`, `--export-file`), never the controller.
//! It does not expand filename patterns: `-o`/`-e`/`-i` go to the controller
//! as typed (`slurm-%j.out` by default, relative to the working directory),
//! because only the controller knows the job id and the node.

pub(crate) mod export;
pub(crate) mod opts;
mod script;
mod signal;

#[cfg(test)]
mod tests;

pub use crate::timespec::parse_begin;
pub use script::wrap_script;
pub use signal::parse_signal;

use crate::getopt::{self, Item};
use opts::{Ctx, Level, State};
use proto::{CtldRequest, CtldResponse, Identity, JobDesc, SlurmError};

/// The Slurm release whose behaviour sbatch reproduces (`sbatch -V`).
pub use crate::common::SLURM_VERSION;

/// The stdout pattern when `-o` is not given (`sbatch(1)`).
pub const DEFAULT_STDOUT: &str = "slurm-%j.out";

/// The stdout pattern of a job array when `-o` is not given: sbatch(1)
/// "By default both standard output and standard error are directed to a
/// file of the name "slurm-%j.out" [...]. For job arrays, the default file
/// name is "slurm-%A_%a.out"".
pub const DEFAULT_ARRAY_STDOUT: &str = "slurm-%A_%a.out";

/// How many times a submission refused as "temporarily unable" is retried
/// (Slurm's sbatch retries as many).
const MAX_RETRIES: u32 = 15;

/// A submission ready to send, and how to report it.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    /// The job.
    pub desc: JobDesc,
    /// `--parsable`: print only the id.
    pub parsable: bool,
    /// `-W`: wait for the job to end and exit with its exit code.
    pub wait: bool,
    /// `--test-only`: ask for an estimate, queue nothing.
    pub test_only: bool,
    /// `-Q` (command line only, as in Slurm): print nothing on success.
    pub quiet: bool,
    /// `-M`, as given: the id is followed by the cluster name.
    pub clusters: Option<String>,
    /// `sbatch: warning: ...` lines for the options given that are ignored
    /// here (`compat::SBATCH`), for stderr.
    pub warnings: String,
}

/// Why sbatch stops before (or instead of) submitting: the exact text to
/// print and the exit status. `--help`, `--usage` and `--version` also end
/// here, with their text on stdout and status 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SbatchError {
    /// Text for stdout (only `--help` and friends).
    pub stdout: String,
    /// Text for stderr, each line ending in a newline.
    pub stderr: String,
    /// Exit status.
    pub code: i32,
}

impl SbatchError {
    /// `sbatch: error: <line>` for each line, exit 1 (Slurm's `error_exit`).
    pub fn error(lines: &[&str]) -> SbatchError {
        SbatchError {
            stdout: String::new(),
            stderr: lines
                .iter()
                .map(|l| format!("sbatch: error: {l}\n"))
                .collect(),
            code: 1,
        }
    }

    /// An invalid option value: `sbatch: error: <line>`, exit 255 (Slurm
    /// exits with -1 from its option parsers, see `err_sbatch_invalid_time`).
    pub fn invalid(line: &str) -> SbatchError {
        SbatchError {
            code: 255,
            ..SbatchError::error(&[line])
        }
    }

    /// `sbatch: fatal: <line>`, exit 1.
    pub fn fatal(line: &str) -> SbatchError {
        SbatchError {
            stdout: String::new(),
            stderr: format!("sbatch: fatal: {line}\n"),
            code: 1,
        }
    }

    /// The GRES refusal sbatch prints itself (`err_sbatch_invalid_gres`).
    pub fn gres() -> SbatchError {
        SbatchError::error(&["Invalid generic resource (gres) specification"])
    }

    /// A getopt complaint, as getopt and sbatch print it.
    fn getopt(e: &getopt::OptError) -> SbatchError {
        SbatchError {
            stdout: String::new(),
            stderr: crate::common::usage_error("sbatch", &e.message()),
            code: 1,
        }
    }

    /// Text on stdout and exit 0 (`--help`, `--version`).
    fn exit_ok(stdout: String) -> SbatchError {
        SbatchError {
            stdout,
            stderr: String::new(),
            code: 0,
        }
    }

    /// A refusal from the controller, with the line Slurm prints before it
    /// for some of them.
    pub fn refused(err: SlurmError, desc: &JobDesc) -> SbatchError {
        let mut lines = Vec::new();
        let partitions = desc.partitions.join(",");
        match err {
            SlurmError::InvalidPartitionName if !partitions.is_empty() => {
                lines.push(format!("invalid partition specified: {partitions}"));
            }
            SlurmError::MemoryNotSatisfiable => {
                lines.push("Memory specification can not be satisfied".to_string());
            }
            SlurmError::AccountingPolicy(limit) => {
                lines.push(limit.as_slurm_str().to_string());
            }
            _ => {}
        }
        lines.push(format!(
            "Batch job submission failed: {}",
            err.as_slurm_str()
        ));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        SbatchError::error(&refs)
    }
}

/// What the first pass over the command line found.
struct FirstPass {
    /// Options, in order (script path and arguments removed).
    items: Vec<(&'static str, Option<String>)>,
    /// The script path, when given.
    script: Option<String>,
    /// The script's arguments.
    script_args: Vec<String>,
    /// `--wrap`.
    wrap: Option<String>,
    /// `-Q`.
    quiet: bool,
}

fn first_pass(args: &[String]) -> Result<FirstPass, SbatchError> {
    let parsed = getopt::parse(opts::SPECS, args, true).map_err(|e| SbatchError::getopt(&e))?;
    let mut fp = FirstPass {
        items: Vec::new(),
        script: None,
        script_args: Vec::new(),
        wrap: None,
        quiet: false,
    };
    for item in parsed {
        match item {
            Item::Opt("help", _) => return Err(SbatchError::exit_ok(help_text())),
            Item::Opt("usage", _) => return Err(SbatchError::exit_ok(usage_text())),
            Item::Opt("version", _) => {
                return Err(SbatchError::exit_ok(format!("slurm {SLURM_VERSION}\n")))
            }
            Item::Opt("wrap", v) => fp.wrap = v,
            Item::Opt("quiet", _) => fp.quiet = true,
            Item::Opt(name, v) => fp.items.push((name, v)),
            Item::Positional(p) if fp.script.is_none() => fp.script = Some(p),
            Item::Positional(p) => fp.script_args.push(p),
        }
    }
    Ok(fp)
}

/// Whether sbatch will read its script from standard input (no script path,
/// no `--wrap`, and the command line parses), so `main` reads stdin only then.
pub fn needs_stdin(args: &[String]) -> bool {
    match first_pass(args) {
        Ok(fp) => fp.script.is_none() && fp.wrap.is_none(),
        Err(_) => false,
    }
}

/// Resolves a script path as `sbatch(1)` SCRIPT PATH RESOLUTION says:
/// `./x` and `/x` as given, then the working directory, then `PATH`.
fn resolve_script(name: &str, cwd: &str, env: &[(String, String)]) -> String {
    let in_dir = |dir: &str| format!("{}/{name}", dir.trim_end_matches('/'));
    if name.starts_with('/') {
        return name.to_string();
    }
    if name.starts_with('.') {
        return in_dir(cwd);
    }
    let here = in_dir(cwd);
    if std::path::Path::new(&here).is_file() {
        return here;
    }
    if !name.contains('/') {
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        for dir in path.split(':').filter(|d| !d.is_empty()) {
            let cand = in_dir(dir);
            if std::path::Path::new(&cand).is_file() {
                return cand;
            }
        }
    }
    here
}

fn env_get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Builds the submission from the command line, the environment, the script
/// and the caller, without talking to the controller.
///
/// `env` is sbatch's environment (the job's, per `--export`, and the source
/// of `SBATCH_*` options); `stdin` the script when none is named (pass
/// `None` when stdin was not read); `now` the time `--begin` is relative to.
pub fn build(
    args: &[String],
    env: &[(String, String)],
    stdin: Option<&[u8]>,
    cwd: &str,
    identity: &Identity,
    now: i64,
) -> Result<Built, SbatchError> {
    build_inner(args, env, stdin, cwd, identity, now).map_err(|mut e| {
        // SLURM_EXIT_ERROR replaces the generic error status (`sbatch(1)`).
        if e.code == 1 {
            if let Some(code) = env_get(env, "SLURM_EXIT_ERROR").and_then(|v| v.parse().ok()) {
                if code != 0 {
                    e.code = code;
                }
            }
        }
        e
    })
}

fn build_inner(
    args: &[String],
    env: &[(String, String)],
    stdin: Option<&[u8]>,
    cwd: &str,
    identity: &Identity,
    now: i64,
) -> Result<Built, SbatchError> {
    let fp = first_pass(args)?;

    // The script.
    let mut command = None;
    let (script_text, script_name, default_name) = match (&fp.wrap, &fp.script) {
        (Some(cmd), script) => {
            if script.is_some() {
                return Err(SbatchError::error(&[
                    "Script arguments not permitted with --wrap option",
                ]));
            }
            (wrap_script(cmd), "wrap".to_string(), "wrap".to_string())
        }
        (None, Some(path)) => {
            let full = resolve_script(path, cwd, env);
            let bytes = std::fs::read(&full)
                .map_err(|_| SbatchError::error(&[&format!("Unable to open file {path}")]))?;
            let base = path.rsplit('/').next().unwrap_or(path).to_string();
            command = Some(if full.starts_with('/') {
                full.clone()
            } else {
                format!(
                    "{}/{}",
                    cwd.trim_end_matches('/'),
                    full.trim_start_matches("./")
                )
            });
            (script::check_script(&bytes)?, base.clone(), base)
        }
        (None, None) => {
            let text = script::check_script(stdin.unwrap_or_default())?;
            (text, "stdin".to_string(), "sbatch".to_string())
        }
    };

    let ctx = Ctx { now, cwd };
    let mut st = State::default();

    // #SBATCH directives (not for --wrap, whose script has none).
    let words = script::directives(&script_text, &script_name)?;
    let parsed = getopt::parse(opts::SPECS, &words, true).map_err(|e| SbatchError::getopt(&e))?;
    let mut given: Vec<(&'static str, Option<String>, Level)> = Vec::new();
    for item in parsed {
        match item {
            Item::Opt(name, _) if opts::FIRST_PASS_ONLY.contains(&name) => {}
            Item::Opt(name, v) => given.push((name, v, Level::Script)),
            Item::Positional(p) => {
                return Err(SbatchError::error(&[&format!(
                    "Invalid directive found in batch script: {p}"
                )]))
            }
        }
    }

    // SBATCH_* input variables.
    for (var, name) in opts::INPUT_ENV {
        let Some(value) = env_get(env, var) else {
            continue;
        };
        let spec = opts::SPECS.iter().find(|s| s.long == *name);
        let value = match spec.map(|s| s.arg) {
            Some(getopt::Arg::None) => None,
            Some(getopt::Arg::Optional) if value.is_empty() => None,
            _ => Some(value.to_string()),
        };
        let name: &'static str = spec.map(|s| s.long).unwrap_or(name);
        given.push((name, value, Level::Env));
    }

    // pyxis's PYXIS_CONTAINER_* variables, for the options neither the
    // script nor the command line gives.
    let named: Vec<&str> = given
        .iter()
        .map(|(n, _, _)| *n)
        .chain(fp.items.iter().map(|(n, _)| *n))
        .collect();
    for (name, v) in proto::container::env_pairs(&named, |k| env_get(env, k).map(str::to_string)) {
        if let Some(spec) = opts::SPECS.iter().find(|s| s.long == name) {
            let v = (spec.arg != getopt::Arg::None).then_some(v);
            given.push((spec.long, v, Level::Env));
        }
    }

    // The command line.
    given.extend(fp.items.into_iter().map(|(name, v)| (name, v, Level::Cli)));

    // Refused options fail before any is applied; ignored ones are warned
    // about once (`compat::SBATCH`).
    let warnings =
        crate::compat::check("sbatch", given.iter().map(|(name, _, _)| *name)).map_err(|line| {
            SbatchError {
                stdout: String::new(),
                stderr: line,
                code: 1,
            }
        })?;
    for (name, v, level) in given {
        opts::apply(&mut st, name, v, level, &ctx)?;
    }
    opts::resolve_memory(&mut st)?;

    if let Some(a) = &st.array {
        if model::array::ArraySpec::parse(a).is_none() {
            return Err(SbatchError::error(&["Invalid --array specification"]));
        }
    }
    if st.uid.is_some_and(|u| u != identity.uid) || st.gid.is_some_and(|g| g != identity.gid) {
        // Only root may submit for someone else; the controller checks the
        // credential, sbatch only refuses early for ordinary users.
        if identity.uid != 0 {
            return Err(SbatchError::error(&[&format!(
                "Batch job submission failed: {}",
                SlurmError::AccessDenied.as_slurm_str()
            )]));
        }
    }

    // Environment: sbatch first adds its own bookkeeping variables, as Slurm
    // sets them in its environment before capturing it.
    let mut own_env = env.to_vec();
    // The pyxis options the job was given, as Slurm's sbatch sets SPANK
    // options (`SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image`):
    // the batch script sees them, and an srun in it reads them.
    let spank = proto::container::spank_env(&st.desc.container);
    for (k, v) in [
        ("SLURM_SUBMIT_DIR".to_string(), cwd.to_string()),
        ("SLURM_SUBMIT_HOST".to_string(), identity.host.clone()),
    ]
    .into_iter()
    .chain(spank)
    {
        match own_env.iter_mut().find(|(key, _)| *key == k) {
            Some(e) => e.1 = v,
            None => own_env.push((k, v)),
        }
    }
    let from_file = match &st.export_file {
        None => None,
        Some(path) => {
            let full = if path.starts_with('/') {
                path.clone()
            } else {
                format!("{cwd}/{path}")
            };
            let bytes = std::fs::read(&full)
                .map_err(|_| SbatchError::error(&[&format!("Unable to open file {path}")]))?;
            Some(export::parse_export_file(&bytes))
        }
    };
    let from_file_given = from_file.is_some();
    let mut job_env = export::resolve(st.export.as_deref(), &own_env, from_file);
    if let Some(spec) = st.export.as_deref() {
        if !from_file_given && export::leaves_out_environment(spec) {
            let login = match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(identity.uid))
            {
                Ok(Some(u)) => export::login_env(
                    &u.name,
                    identity.uid,
                    &u.dir.to_string_lossy(),
                    &u.shell.to_string_lossy(),
                ),
                _ => export::login_env(&identity.user, identity.uid, "", ""),
            };
            job_env = export::from_login(spec, login, job_env);
        }
    }
    if st.get_user_env {
        job_env.retain(|(k, _)| k != "SLURM_GET_USER_ENV");
        job_env.push(("SLURM_GET_USER_ENV".to_string(), "1".to_string()));
    }

    let mut desc = st.desc;
    if !st.name_set {
        desc.name = default_name;
    }
    desc.script = script_text;
    desc.argv = fp.script_args;
    desc.command = command;
    desc.work_dir = match &st.chdir {
        Some(dir) if dir.starts_with('/') => dir.clone(),
        Some(dir) => format!("{}/{dir}", cwd.trim_end_matches('/')),
        None => cwd.to_string(),
    };
    desc.submit_dir = cwd.to_string();
    desc.submit_host = identity.host.clone();
    desc.submit_line = std::iter::once("sbatch")
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    desc.env = job_env.into();
    desc.test_only = st.test_only;
    desc.array = st.array;
    if desc.stdout.is_none() {
        let default = if desc.array.is_some() {
            DEFAULT_ARRAY_STDOUT
        } else {
            DEFAULT_STDOUT
        };
        desc.stdout = Some(default.to_string());
    }
    desc.uid = st.uid.unwrap_or(identity.uid);
    desc.gid = st.gid.unwrap_or(identity.gid);
    desc.user = match st.uid {
        Some(uid) if uid != identity.uid => nix::unistd::User::from_uid(uid.into())
            .ok()
            .flatten()
            .map(|u| u.name)
            .unwrap_or_else(|| uid.to_string()),
        _ => identity.user.clone(),
    };
    desc.alloc_sid = std::process::id();

    Ok(Built {
        desc,
        parsable: st.parsable,
        wait: st.wait,
        test_only: st.test_only,
        quiet: fp.quiet,
        clusters: st.clusters,
        warnings,
    })
}

/// Checks requested GRES names against `GresTypes` (the client knows them
/// from slurm.conf); an unknown name is refused before submitting, as Slurm's
/// sbatch does (`err_sbatch_invalid_gres`).
pub fn check_gres_types(desc: &JobDesc, gres_types: &[String]) -> Result<(), SbatchError> {
    let known = |name: &str| gres_types.iter().any(|t| t == name);
    let gpus_wanted =
        desc.gpus.is_some() || desc.gpus_per_node.is_some() || desc.gpus_per_task.is_some();
    if desc.gres.iter().any(|g| !known(&g.name)) || (gpus_wanted && !known("gpu")) {
        return Err(SbatchError::gres());
    }
    Ok(())
}

/// What sbatch prints on stdout once the controller accepted the job.
pub fn submitted_line(built: &Built, job_id: u32, cluster: Option<&str>) -> String {
    match (built.parsable, cluster) {
        (true, Some(c)) => format!("{job_id};{c}\n"),
        (true, None) => format!("{job_id}\n"),
        (false, Some(c)) => format!("Submitted batch job {job_id} on cluster {c}\n"),
        (false, None) => format!("Submitted batch job {job_id}\n"),
    }
}

/// The `--test-only` line (stderr).
pub fn test_only_line(job_id: u32, est: &proto::TestOnlyEstimate) -> String {
    format!(
        "sbatch: Job {job_id} to start at {} using {} processors on nodes {} in partition {}\n",
        crate::common::fmt_time(est.start_time),
        est.cpus,
        est.nodes,
        est.partition
    )
}

/// The exit status `-W` reports for a finished job: its exit code, or 1 when
/// a signal ended it (`sbatch(1) --wait`).
pub fn wait_exit_status(exit: model::ExitCode) -> i32 {
    if exit.signal != 0 {
        1
    } else {
        exit.code
    }
}

fn eprint(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Runs `sbatch`.
pub fn main(args: Vec<String>) -> i32 {
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    add_process_env(&mut env);
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".to_string());
    let stdin = if needs_stdin(&args) {
        use std::io::Read;
        let mut buf = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut buf);
        Some(buf)
    } else {
        None
    };
    let identity = client::current_identity();
    let mut built = match build(
        &args,
        &env,
        stdin.as_deref(),
        &cwd,
        &identity,
        crate::common::now(),
    ) {
        Ok(b) => b,
        Err(e) => {
            crate::common::print_stdout(&e.stdout);
            eprint(&e.stderr);
            return e.code;
        }
    };
    eprint(&built.warnings);
    if let Some(warning) = opts::fit_nodes_to_tasks(&mut built.desc) {
        eprint(&format!("sbatch: Warning: {warning}\n"));
    }
    let exit_error = env_get(&env, "SLURM_EXIT_ERROR")
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|c| *c != 0)
        .unwrap_or(1);
    let fail = |e: SbatchError| -> i32 {
        eprint(&e.stderr);
        if e.code == 1 {
            exit_error
        } else {
            e.code
        }
    };

    // The identity looked up above (the passwd database is read once).
    let client = match client::Client::from_env_as(identity) {
        Ok(c) => c,
        Err(e) => return fail(SbatchError::error(&[&e.to_string()])),
    };
    if let Err(e) = check_gres_types(&built.desc, &client.config().gres_types) {
        return fail(e);
    }
    // `-M` picks among clusters; muster serves its own one only.
    if let Some(m) = built.clusters.as_deref() {
        let own = &client.config().cluster_name;
        if !m
            .split(',')
            .any(|c| c.is_empty() || c.eq_ignore_ascii_case("all") || c == own)
        {
            return fail(SbatchError::error(&[&format!(
                "-M/--clusters={m} is not supported here: jobs run on this cluster ({own}) only"
            )]));
        }
    }
    let cluster = built.clusters.as_deref().map(|m| {
        let first = m.split(',').next().unwrap_or(m);
        if first.is_empty() || first.eq_ignore_ascii_case("all") {
            client.config().cluster_name.clone()
        } else {
            first.to_string()
        }
    });

    let reply = match submit(&client, &built) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let job_id = reply.job_id.0;
    if built.test_only {
        if let Some(est) = &reply.test_only {
            eprint(&test_only_line(job_id, est));
        }
        return 0;
    }
    if !built.quiet {
        crate::common::print_stdout(&submitted_line(&built, job_id, cluster.as_deref()));
    }
    if built.wait {
        return wait_for(&client, reply.job_id);
    }
    0
}

/// Adds what Slurm's sbatch sets in its own environment before capturing it:
/// its scheduling priority and umask, for the job to inherit.
pub(crate) fn add_process_env(env: &mut Vec<(String, String)>) {
    // SAFETY: getpriority and umask only read and set this process's
    // attributes; umask is restored at once.
    let prio = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    env.retain(|(k, _)| k != "SLURM_PRIO_PROCESS");
    env.push(("SLURM_PRIO_PROCESS".to_string(), prio.to_string()));
    if env_get(env, "SLURM_UMASK").is_none() {
        // SAFETY: as above.
        let mask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        env.push(("SLURM_UMASK".to_string(), format!("{:04o}", mask & 0o777)));
    }
}

/// Sends the submission, retrying while the controller is temporarily full.
fn submit(client: &client::Client, built: &Built) -> Result<proto::SubmitReply, SbatchError> {
    let mut retries = 0;
    loop {
        match client.call(CtldRequest::Submit(Box::new(built.desc.clone()))) {
            Ok(CtldResponse::Submitted(reply)) => return Ok(reply),
            Ok(_) => {
                return Err(SbatchError::error(&[
                    "Batch job submission failed: Unexpected message received",
                ]))
            }
            Err(client::ClientError::Refused(SlurmError::TooManyJobs)) if retries < MAX_RETRIES => {
                if retries == 0 {
                    eprint(&format!(
                        "sbatch: error: {}\n",
                        SlurmError::TooManyJobs.as_slurm_str()
                    ));
                }
                retries += 1;
                std::thread::sleep(std::time::Duration::from_secs(u64::from(retries)));
            }
            Err(client::ClientError::Refused(err)) if built.test_only => {
                // Slurm reports a failed estimate with slurm_perror, unprefixed.
                return Err(SbatchError {
                    stdout: String::new(),
                    stderr: format!("allocation failure: {}\n", err.as_slurm_str()),
                    code: 1,
                });
            }
            Err(client::ClientError::Refused(err)) => {
                return Err(SbatchError::refused(err, &built.desc))
            }
            Err(client::ClientError::TooLarge { bytes, limit }) => {
                return Err(too_large(&built.desc, bytes, limit))
            }
            Err(e) => {
                return Err(SbatchError::error(&[&format!(
                    "Batch job submission failed: {e}"
                )]))
            }
        }
    }
}

/// A submission larger than the controller reads
/// (`proto::MAX_REQUEST_BYTES`): the script when it alone is over the
/// limit, else the whole request, with what it is made of.
pub fn too_large(desc: &JobDesc, bytes: u64, limit: u64) -> SbatchError {
    let mib = limit >> 20;
    let script = desc.script.len() as u64;
    if script > limit {
        return SbatchError::error(&[&format!(
            "Batch job script is too large ({script} bytes, limit {mib} MiB)"
        )]);
    }
    let env: u64 = desc
        .env
        .iter()
        .map(|(k, v)| (k.len() + v.len() + 1) as u64)
        .sum();
    SbatchError::error(&[&format!(
        "Batch job submission is too large ({bytes} bytes, limit {mib} MiB): \
         the script is {script} bytes, the environment {env} bytes"
    )])
}

/// `-W`: polls the controller until the job has ended and returns its exit
/// status. Slurm polls with a growing interval; muster polls every second so
/// short CI jobs return promptly.
fn wait_for(client: &client::Client, job_id: model::JobId) -> i32 {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        match client.jobs() {
            Ok(list) => match list.jobs.iter().find(|j| j.job_id == job_id) {
                Some(job) if job.state.is_finished() => return wait_exit_status(job.exit_code),
                Some(_) => {}
                None => {
                    eprint(&format!(
                        "sbatch: error: Job {job_id} no longer found and exit code not found\n"
                    ));
                    return 0;
                }
            },
            Err(e) => eprint(&format!(
                "sbatch: error: Currently unable to load job state information, retrying: {e}\n"
            )),
        }
    }
}

fn usage_text() -> String {
    "Usage: sbatch [-N nnodes] [-n ntasks] [-c ncpus] [-p partition] [-t minutes]\n\
     \x20             [-J jobname] [-o out] [-e err] [-D path] [--mem=MB] [--gres=list]\n\
     \x20             [--export=ALL|NONE|vars] [--begin=time] [--signal=[B:]sig[@time]]\n\
     \x20             [--parsable] [--wait] [--test-only] [--wrap=cmd | script [args...]]\n"
        .to_string()
}

fn help_text() -> String {
    let mut out = String::from("Usage: sbatch [OPTIONS...] script [args...]\n\nOptions:\n");
    for spec in opts::SPECS {
        let short = spec.short.map(|c| format!("-{c}, ")).unwrap_or_default();
        let value = match spec.arg {
            getopt::Arg::None => "",
            getopt::Arg::Required => "=value",
            getopt::Arg::Optional => "[=value]",
        };
        out.push_str(&format!("  {short:>4}--{}{value}\n", spec.long));
    }
    out.push_str(
        "\nA script is read from the file named, from --wrap, or from standard input.\n\
         #SBATCH lines in the script, then SBATCH_* variables, then the command line\n\
         set options, each overriding the one before.\n",
    );
    out
}
