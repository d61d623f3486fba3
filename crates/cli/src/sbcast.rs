//! `sbcast [-f] [-p] SOURCE DEST`: copies a file to every node of the job
//! it runs in (`SLURM_JOB_ID`, or `-j`), as the job's user; and the copy
//! `srun --bcast=DEST` makes of its program before running it.
//!
//! ```text
//!  SOURCE on srun's stdin --> a step of one task per node (--overlap),
//!  each writing its copy with /bin/sh: cat > DEST [; chmod; touch]
//! ```
//!
//! The bytes travel as a step's stdin does (srun --> each node's step
//! supervisor --> the task), so the copy is written by a task of the job,
//! as its user, in its cgroup; the step shows in `squeue -s` while it runs.

use crate::getopt::{self, opt, Arg, Item, OptSpec};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// sbcast's options (Slurm 22.05's sbcast(1)).
pub const OPTIONS: &[OptSpec] = &[
    opt("compress", Some('C'), Arg::Optional),
    opt("fanout", Some('F'), Arg::Required),
    opt("force", Some('f'), Arg::None),
    opt("help", None, Arg::None),
    opt("jobid", Some('j'), Arg::Required),
    opt("preserve", Some('p'), Arg::None),
    opt("size", Some('s'), Arg::Required),
    opt("timeout", Some('t'), Arg::Required),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
];

const USAGE: &str = "Usage: sbcast [-CfFjpstvV] SOURCE DEST\n";

const HELP: &str = "\
Usage: sbcast [OPTIONS] SOURCE DEST
  -C, --compress[=lib]  compress the file being transmitted (warned: not compressed)
  -f, --force           replace destination file as required
  -F, --fanout=num      specify message fanout (warned: every node is sent to directly)
  -j, --jobid=#[.#]     specify job ID and optional step ID
  -p, --preserve        preserve modes and times of source file
  -s, --size=num        block size in bytes (warned: not used)
  -t, --timeout=secs    specify message timeout (warned: not used)
  -v, --verbose         provide detailed event logging
  -V, --version         print version information and exit

Help options:
  --help                show this help message
  --usage               display brief usage message
";

/// How to copy.
pub struct Copy<'a> {
    /// The job.
    pub job_id: u32,
    /// The file to copy.
    pub source: &'a str,
    /// Where each node writes it.
    pub dest: &'a str,
    /// Replace DEST where it exists.
    pub force: bool,
    /// Give the copies the source's mode and times (`-p`; else its mode
    /// only where `mode` is set).
    pub preserve: bool,
    /// Give the copies the source's mode (srun --bcast: an executable).
    pub mode: bool,
}

/// Copies `c.source` to `c.dest` on every node of the job, through a step;
/// returns the exit status (0: every node has its copy), errors said as
/// `cmd: error: ...`.
pub fn copy(cmd: &str, c: &Copy) -> i32 {
    let file = match std::fs::File::open(c.source) {
        Ok(f) => f,
        Err(e) => {
            say(&format!(
                "{cmd}: error: Can't open `{}`: {}\n",
                c.source,
                strerror(&e)
            ));
            return 1;
        }
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(_) => return 1,
    };
    let mut script = String::from("set -e; ");
    if !c.force {
        script.push_str("set -C; ");
    }
    script.push_str("cat > \"$1\"");
    if c.preserve || c.mode {
        script.push_str(&format!("; chmod {:o} \"$1\"", meta.mode() & 0o7777));
    }
    if c.preserve {
        script.push_str(&format!("; touch -d @{} \"$1\"", meta.mtime()));
    }
    // The source becomes srun's stdin, which srun gives every task; the
    // old stdin comes back after (srun --bcast's program reads it).
    // SAFETY: dup/dup2 on this process's descriptors.
    let saved = unsafe { libc::dup(0) };
    if unsafe { libc::dup2(file.as_raw_fd(), 0) } < 0 {
        return 1;
    }
    let nodes = ["SLURM_JOB_NUM_NODES", "SLURM_NNODES"]
        .iter()
        .find_map(|k| std::env::var(k).ok());
    let mut args: Vec<String> = vec![
        format!("--jobid={}", c.job_id),
        "--ntasks-per-node=1".into(),
        "--overlap".into(),
        "--quiet".into(),
        "--input=all".into(),
        "--job-name=sbcast".into(),
    ];
    if let Some(n) = nodes {
        args.push(format!("--nodes={n}"));
    }
    args.extend(
        ["/bin/sh", "-c", &script, "sbcast", c.dest]
            .iter()
            .map(|s| s.to_string()),
    );
    let code = crate::srun::main(args);
    if saved >= 0 {
        // SAFETY: restores fd 0 from the copy made above.
        unsafe {
            libc::dup2(saved, 0);
            libc::close(saved);
        }
    }
    code
}

/// Runs `sbcast`.
pub fn main(args: Vec<String>) -> i32 {
    let parsed = match getopt::parse(OPTIONS, &args, false) {
        Ok(p) => p,
        Err(e) => {
            say(&crate::common::usage_error("sbcast", &e.message()));
            return 1;
        }
    };
    let (mut force, mut preserve, mut job) = (false, false, None);
    let mut pos = Vec::new();
    for item in parsed {
        match item {
            Item::Positional(p) => pos.push(p),
            Item::Opt(name, v) => match name {
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
                "force" => force = true,
                "preserve" => preserve = true,
                "jobid" => {
                    let v = v.unwrap_or_default();
                    match v.split('.').next().and_then(|j| j.parse::<u32>().ok()) {
                        Some(j) => job = Some(j),
                        None => {
                            say(&format!("sbcast: error: Invalid job ID {v}\n"));
                            return 1;
                        }
                    }
                }
                // How the bytes travel is muster's own: said, not acted on.
                other => {
                    let why = match other {
                        "compress" => "the file is sent uncompressed",
                        "fanout" => "every node is sent to directly",
                        "size" | "timeout" => "the file travels as a step's input",
                        _ => "sbcast prints no debug messages",
                    };
                    let long = OPTIONS
                        .iter()
                        .find(|o| o.long == other)
                        .and_then(|o| o.short)
                        .map_or(format!("--{other}"), |c| format!("-{c}/--{other}"));
                    say(&format!("sbcast: warning: {long} is ignored here: {why}\n"));
                }
            },
        }
    }
    let job = job.or_else(|| {
        ["SLURM_JOB_ID", "SLURM_JOBID"]
            .iter()
            .find_map(|k| std::env::var(k).ok()?.parse().ok())
    });
    let Some(job_id) = job else {
        say(
            "sbcast: error: Need a job id to run this command.  Run from within a Slurm job or use the --jobid option.\n",
        );
        return 1;
    };
    let [source, dest] = pos.as_slice() else {
        say("sbcast: error: Need two file names, have too few or too many\n");
        return 1;
    };
    // Any node's failure is sbcast's (its exit status is 1, as Slurm's).
    let code = copy(
        "sbcast",
        &Copy {
            job_id,
            source,
            dest,
            force,
            preserve,
            mode: false,
        },
    );
    i32::from(code != 0)
}

fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// `%m`: the C library's text for an error.
fn strerror(e: &std::io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return e.to_string();
    };
    // SAFETY: strerror returns a NUL-terminated static or thread-local string.
    unsafe { std::ffi::CStr::from_ptr(libc::strerror(n)) }
        .to_string_lossy()
        .into_owned()
}
