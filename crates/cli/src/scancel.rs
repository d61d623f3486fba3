//! `scancel`: cancel or signal jobs by id or by filter, as Slurm 22.05's
//! scancel does, with its messages and exit codes.
//!
//! ```text
//! args --parse_args--> ScancelArgs --ids only----------------------------> Cancel per id
//!                                  \--filters--> CancelJobs(job_select()) --> outcome per job
//!                                  \--filters, -i (or an older controller)-->
//!                                           ListJobs --select()--> Cancel per job
//! ```
//!
//! With filters the controller picks the jobs and cancels them in one
//! request (one journal record, one commit): 100,000 jobs take one round
//! trip, not 100,000. Its answer gives each job's outcome, printed as the
//! answers to single cancels were. `-i` still lists, to ask before each
//! job; so does a controller that does not know `CancelJobs`.
//!
//! Exit status follows Slurm: an unknown or already finished job is not an
//! error when cancelling (it is reported only with `-v`), and any other
//! refusal makes scancel exit with the Slurm error number modulo 256
//! (ESLURM_ACCESS_DENIED, 2002, gives 210).
//!
//! Array tasks (`123_4`, `123_[1-3]`) go to the controller with the task
//! list; `123` alone cancels every task of array 123.
//!
//! Steps (`123.0`) are cancelled or signalled alone. `--signal` without
//! `-b` or `-f` reaches the job's steps and not the batch shell, `-b` the
//! batch shell alone (not its children), `-f` the batch shell, its
//! children and the steps (`request`, proto::SignalScope).

#[cfg(test)]
mod tests;

use crate::common::print_stdout;
use crate::common::split_list;
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use model::{JobId, JobState};
use proto::{CtldRequest, JobList, SlurmError};

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("account", Some('A'), Arg::Required),
    opt("batch", Some('b'), Arg::None),
    opt("ctld", Some('c'), Arg::None),
    opt("clusters", Some('M'), Arg::Required),
    opt("full", Some('f'), Arg::None),
    opt("help", None, Arg::None),
    opt("hurry", Some('H'), Arg::None),
    opt("interactive", Some('i'), Arg::None),
    opt("jobname", None, Arg::Required),
    opt("me", None, Arg::None),
    opt("name", Some('n'), Arg::Required),
    opt("nodelist", Some('w'), Arg::Required),
    opt("partition", Some('p'), Arg::Required),
    opt("qos", Some('q'), Arg::Required),
    opt("quiet", Some('Q'), Arg::None),
    opt("reservation", Some('R'), Arg::Required),
    opt("sibling", None, Arg::Required),
    opt("signal", Some('s'), Arg::Required),
    opt("state", Some('t'), Arg::Required),
    opt("usage", None, Arg::None),
    opt("user", Some('u'), Arg::Required),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
    opt("wckey", None, Arg::Required),
];

/// One job named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobSpec {
    /// `123`.
    Job(JobId),
    /// `123_4`, `123_[1-3]`: tasks of an array, as typed.
    Tasks(String),
    /// `123.0`: a job's step, kept as typed (`request` makes it a
    /// `CancelStep`; filters never select steps).
    Unsupported(String),
}

impl JobSpec {
    /// The id as the user typed it, for messages.
    pub fn text(&self) -> String {
        match self {
            JobSpec::Job(id) => id.to_string(),
            JobSpec::Tasks(s) | JobSpec::Unsupported(s) => s.clone(),
        }
    }
}

/// scancel's options, as parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScancelArgs {
    /// Positional job ids.
    pub jobs: Vec<JobSpec>,
    /// `-A`.
    pub accounts: Vec<String>,
    /// `-b`.
    pub batch: bool,
    /// `-f`.
    pub full: bool,
    /// `-i`.
    pub interactive: bool,
    /// `--me`.
    pub me: bool,
    /// `-n` / `--jobname`.
    pub names: Vec<String>,
    /// `-w`, expanded.
    pub nodes: Vec<String>,
    /// `-p`.
    pub partitions: Vec<String>,
    /// `-q`.
    pub qos: Vec<String>,
    /// `-Q`.
    pub quiet: bool,
    /// `-s`, as a number.
    pub signal: Option<i32>,
    /// `-t`.
    pub states: Vec<JobState>,
    /// `-u` (a name or a uid).
    pub user: Option<String>,
    /// `-v` count.
    pub verbose: u32,
    /// `--help`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`.
    pub version: bool,
}

impl ScancelArgs {
    /// Whether any filter besides job ids was given (scancel then loads the
    /// job list and picks matching jobs).
    pub fn has_filters(&self) -> bool {
        !self.accounts.is_empty()
            || self.me
            || !self.names.is_empty()
            || !self.nodes.is_empty()
            || !self.partitions.is_empty()
            || !self.qos.is_empty()
            || !self.states.is_empty()
            || self.user.is_some()
    }

    /// The signal to request: None cancels the job. `-s KILL` alone is a
    /// cancel too, as in Slurm (SIGKILL is scancel's default).
    pub fn request_signal(&self) -> Option<i32> {
        match self.signal {
            Some(9) if !self.batch && !self.full => None,
            other => other,
        }
    }
}

/// Signal names scancel accepts, with or without `SIG`, any case.
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("TRAP", 5),
    ("ABRT", 6),
    ("BUS", 7),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
    ("STKFLT", 16),
    ("CHLD", 17),
    ("CONT", 18),
    ("STOP", 19),
    ("TSTP", 20),
    ("TTIN", 21),
    ("TTOU", 22),
    ("URG", 23),
    ("XCPU", 24),
    ("XFSZ", 25),
    ("VTALRM", 26),
    ("PROF", 27),
    ("WINCH", 28),
    ("IO", 29),
    ("POLL", 29),
    ("PWR", 30),
    ("SYS", 31),
];

/// Parses a signal: `KILL`, `SIGUSR1`, `usr2`, `9`.
pub fn parse_signal(s: &str) -> Option<i32> {
    if let Ok(n) = s.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let up = s.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    SIGNALS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

fn parse_job_spec(s: &str) -> Option<JobSpec> {
    if let Ok(n) = s.parse::<u32>() {
        return (n > 0).then_some(JobSpec::Job(JobId(n)));
    }
    let base_len = s.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &s[base_len..];
    let base_ok = base_len > 0 && s[..base_len].parse::<u32>().is_ok_and(|n| n > 0);
    let rest_ok = match rest.as_bytes().first() {
        Some(b'_') => {
            let r = &rest[1..];
            let inner = r
                .strip_prefix('[')
                .and_then(|x| x.strip_suffix(']'))
                .unwrap_or(r);
            !inner.is_empty()
                && inner
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, ',' | '-' | '%' | ':'))
        }
        Some(b'.') => {
            let r = &rest[1..];
            !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric() || c == '+')
        }
        _ => false,
    };
    if base_ok && rest.starts_with('_') && model::array::JobIdSpec::parse(s).is_some() {
        return Some(JobSpec::Tasks(s.to_string()));
    }
    (base_ok && rest_ok).then(|| JobSpec::Unsupported(s.to_string()))
}

/// Parses scancel's command line (without the program name). Options may
/// come before or after the ids. The error is the full text for stderr.
pub fn parse_args(args: &[String]) -> Result<ScancelArgs, String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| crate::common::usage_error("scancel", &e.message()))?;
    let mut a = ScancelArgs::default();
    for item in items {
        match item {
            Item::Opt(name, value) => {
                let v = value.unwrap_or_default();
                match name {
                    "account" => a.accounts.extend(split_list(&v)),
                    "batch" => a.batch = true,
                    "full" => a.full = true,
                    "help" => a.help = true,
                    "interactive" => a.interactive = true,
                    "jobname" | "name" => a.names.extend(split_list(&v)),
                    "me" => a.me = true,
                    "nodelist" => {
                        let expanded = hostlist::expand(&v).map_err(|_| {
                            format!("scancel: error: Invalid node list specified: {v}\n")
                        })?;
                        a.nodes.extend(expanded);
                    }
                    "partition" => a.partitions.extend(split_list(&v)),
                    "qos" => a.qos.extend(split_list(&v)),
                    "quiet" => a.quiet = true,
                    "signal" => {
                        a.signal =
                            Some(parse_signal(&v).ok_or_else(|| {
                                format!("scancel: error: Invalid job signal: {v}\n")
                            })?)
                    }
                    "state" => {
                        for s in v.split(',').filter(|s| !s.is_empty()) {
                            match JobState::parse(s) {
                                Some(
                                    st @ (JobState::Pending
                                    | JobState::Running
                                    | JobState::Suspended),
                                ) => a.states.push(st),
                                _ => {
                                    return Err(format!(
                                        "scancel: error: Invalid job state specified: {s}\nscancel: error: Valid job states are PENDING, RUNNING, and SUSPENDED\n"
                                    ))
                                }
                            }
                        }
                    }
                    "usage" => a.usage = true,
                    "user" => a.user = Some(v),
                    "verbose" => a.verbose += 1,
                    "version" => a.version = true,
                    // Accepted, no effect in muster: -c, -H, -M, -R, --sibling, --wckey.
                    _ => {}
                }
            }
            Item::Positional(p) => {
                // Slurm also accepts several ids in one argument separated by
                // spaces or commas (`scancel "1 2"`).
                for id in model::array::split_job_list(&p) {
                    let id = id.as_str();
                    let spec = parse_job_spec(id)
                        .ok_or_else(|| format!("scancel: error: Invalid job id {id}\n"))?;
                    a.jobs.push(spec);
                }
            }
        }
    }
    Ok(a)
}

/// The `--usage` text.
pub const USAGE: &str =
    "Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]
               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]
               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]
               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey] [--me]
               [job_id[_array_id][.step_id]]
";

/// The `--help` text.
pub const HELP: &str = "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]
  -A, --account=account           act only on jobs charging this account
  -b, --batch                     signal batch shell for specified job
  -f, --full                      signal batch shell and all steps for specified job
  -i, --interactive               require response from user for each job
  -M, --clusters                  clusters to issue commands to (accepted)
      --me                        cancel jobs of the current user
  -n, --name=job_name             act only on jobs with this name
  -p, --partition=partition       act only on jobs in this partition
  -Q, --quiet                     disable warnings
  -q, --qos=qos                   act only on jobs with this quality of service
  -s, --signal=name | integer     signal to send to job, default is SIGKILL
  -t, --state=states              act only on jobs in this state.  Valid job
                                  states are PENDING, RUNNING and SUSPENDED
  -u, --user=user_name            act only on jobs of this user
  -V, --version                   output version information and exit
  -v, --verbose                   verbosity level
  -w, --nodelist                  act only on jobs on these nodes

Help options:
  --help                          show this help message
  --usage                         display brief usage message
";

/// The filters as the controller applies them (`proto::JobSelect`): every
/// filter must match (AND), ids given on the command line restrict the set
/// further (an array's id takes its tasks), and finished jobs are skipped.
pub fn job_select(args: &ScancelArgs) -> proto::JobSelect {
    proto::JobSelect {
        job_ids: args
            .jobs
            .iter()
            .filter_map(|j| match j {
                JobSpec::Job(id) => Some(*id),
                JobSpec::Tasks(_) | JobSpec::Unsupported(_) => None,
            })
            .collect(),
        by_id: !args.jobs.is_empty(),
        me: args.me,
        user: args.user.clone(),
        names: args.names.clone(),
        partitions: args.partitions.clone(),
        accounts: args.accounts.clone(),
        qos: args.qos.clone(),
        states: args.states.clone(),
        nodes: args.nodes.clone(),
    }
}

/// The one request of a filtered scancel.
pub fn cancel_jobs_request(args: &ScancelArgs) -> CtldRequest {
    CtldRequest::CancelJobs {
        select: Box::new(job_select(args)),
        signal: args.request_signal(),
        batch_only: args.batch,
        full: args.full,
    }
}

/// The jobs a filtered scancel acts on, picked from a listing in the
/// controller's order ([`job_select`]; `-i`, or a controller without
/// `CancelJobs`). `me` is the caller's user name.
pub fn select(args: &ScancelArgs, list: &JobList, me: &str) -> Vec<JobId> {
    let select = job_select(args);
    list.jobs
        .iter()
        .filter(|j| {
            let facts = proto::SelectFacts {
                job_id: j.job_id,
                array_job_id: j.array_job_id,
                state: j.state,
                user: &j.user,
                uid: j.uid,
                name: &j.name,
                account: &j.account,
                qos: &j.qos,
            };
            select.selects(
                &facts,
                me,
                j.partition.split(','),
                j.nodes.iter().map(String::as_str),
            )
        })
        .map(|j| j.job_id)
        .collect()
}

/// Slurm's error number for a refusal (`slurm_errno.h`); scancel exits
/// with it modulo 256.
pub fn slurm_errno(e: SlurmError) -> i32 {
    match e {
        SlurmError::InvalidPartitionName => 2000,
        SlurmError::AccessDenied => 2002,
        SlurmError::InvalidUserId => 2010,
        SlurmError::RequestedNodeConfigUnavailable | SlurmError::MemoryNotSatisfiable => 2014,
        SlurmError::RequestedPartConfigUnavailable => 2015,
        SlurmError::InvalidJobId => 2017,
        SlurmError::InvalidNodeName => 2018,
        SlurmError::TransitionStateNoUpdate => 2020,
        SlurmError::AlreadyDone => 2021,
        SlurmError::InvalidNodeState => 2028,
        SlurmError::InvalidFeature => 2029,
        SlurmError::Disabled => 2037,
        SlurmError::InvalidAccount => 2045,
        SlurmError::InvalidTimeLimit => 2051,
        _ => 1,
    }
}

/// What scancel prints and returns for one job's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Lines for stderr, without newlines.
    pub messages: Vec<String>,
    /// The exit status this answer calls for (0: none).
    pub status: i32,
}

/// Turns the controller's answer for `job` into scancel's messages and
/// status. `err` is None when the controller said Ok.
pub fn outcome(args: &ScancelArgs, job: &str, err: Option<&client::ClientError>) -> Outcome {
    let mut messages = Vec::new();
    if args.verbose > 0 {
        match args.request_signal() {
            None => messages.push(format!("scancel: Terminating job {job}")),
            Some(sig) => messages.push(format!("scancel: Signal {sig} to job {job}")),
        }
    }
    let Some(err) = err else {
        return Outcome {
            messages,
            status: 0,
        };
    };
    let refusal = match err {
        client::ClientError::Refused(e) => Some(*e),
        _ => None,
    };
    // An unknown or already finished job: quiet unless -v, and not an error
    // when cancelling (squeue and scancel race with job ends all the time).
    let benign = matches!(
        refusal,
        Some(SlurmError::InvalidJobId | SlurmError::AlreadyDone)
    );
    if args.verbose > 0 || !benign {
        messages.push(format!(
            "scancel: error: Kill job error on job id {job}: {err}"
        ));
    }
    let status = match refusal {
        Some(_) if benign && args.request_signal().is_none() => 0,
        Some(e) => slurm_errno(e) & 0xff,
        None => 1,
    };
    Outcome { messages, status }
}

fn confirm(job: &proto::JobInfo) -> bool {
    use std::io::BufRead;
    print_stdout(&format!(
        "Cancel job_id={} name={} partition={} [y/n]? ",
        job.job_id, job.name, job.partition
    ));
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim_start().chars().next(), Some('y' | 'Y'))
}

/// `123.4`: a numbered step of a job.
pub fn step_spec(text: &str) -> Option<(JobId, u32)> {
    let (job, step) = text.split_once('.')?;
    Some((JobId(job.parse().ok()?), step.parse().ok()?))
}

/// The controller request for one target as typed (`123`, `123_4`,
/// `123.0`); None for an id the controller could not know. With
/// `--signal`, `-b` and `-f` say who gets it (proto::SignalScope: the
/// steps alone without them); a step id names its step, and `-b`/`-f` do
/// not apply to it (scancel(1)).
pub fn request(args: &ScancelArgs, text: &str) -> Option<CtldRequest> {
    if let Some((job_id, step_id)) = step_spec(text) {
        return Some(CtldRequest::CancelStep {
            job_id,
            step_id,
            signal: args.request_signal(),
        });
    }
    let spec = model::array::JobIdSpec::parse(text)?;
    Some(CtldRequest::Cancel {
        job_id: JobId(spec.job_id),
        signal: args.request_signal(),
        batch_only: args.batch,
        full: args.full,
        tasks: spec.tasks,
    })
}

/// Runs `scancel`.
pub fn main(args: Vec<String>) -> i32 {
    let args = match parse_args(&args) {
        Ok(a) => a,
        Err(text) => {
            eprint!("{text}");
            return 1;
        }
    };
    if let Some(code) = crate::common::info_flags(args.help, args.usage, args.version, HELP, USAGE)
    {
        return code;
    }
    if args.jobs.is_empty() && !args.has_filters() {
        eprintln!("scancel: error: No job identification provided");
        return 1;
    }
    // Slurm checks the name before anything is sent (scancel(1) -u).
    if let Some(user) = args
        .user
        .as_deref()
        .filter(|u| !crate::common::user_exists(u))
    {
        eprintln!("scancel: error: Invalid user name: {user}");
        return 1;
    }
    let client = match client::Client::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("scancel: error: {e}");
            return 1;
        }
    };
    let me = client.identity().user.clone();

    // With filters the controller picks and cancels in one request. A
    // failure (a controller that does not know the request closes the
    // connection) falls back to listing and cancelling job by job, which
    // also reports an unreachable controller as scancel always did.
    if args.has_filters() && !args.interactive {
        if let Ok(proto::CtldResponse::Cancelled(outcomes)) =
            client.call(cancel_jobs_request(&args))
        {
            let mut status = 0;
            for o in outcomes {
                let err = o.error.map(client::ClientError::Refused);
                let out = outcome(&args, &o.job_id.to_string(), err.as_ref());
                for m in &out.messages {
                    eprintln!("{m}");
                }
                if out.status != 0 {
                    status = out.status;
                }
            }
            return status;
        }
    }

    // Without filters each id goes straight to the controller, which
    // answers for unknown ids; with filters scancel picks from the list.
    // `-i` needs the list too, to show each job before asking.
    let mut targets: Vec<String> = Vec::new();
    if args.has_filters() || args.interactive {
        let list = match client.jobs() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("scancel: error: slurm_load_jobs error: {e}");
                return 1;
            }
        };
        for id in select(&args, &list, &me) {
            if args.interactive {
                let Some(job) = list.jobs.iter().find(|j| j.job_id == id) else {
                    continue;
                };
                if !confirm(job) {
                    continue;
                }
            }
            targets.push(id.to_string());
        }
    } else {
        targets.extend(args.jobs.iter().map(JobSpec::text));
    }

    let mut status = 0;
    for text in targets {
        let result = match request(&args, &text) {
            Some(req) => client.call_ok(req),
            None => Err(client::ClientError::Refused(SlurmError::InvalidJobId)),
        };
        let out = outcome(&args, &text, result.as_ref().err());
        for m in &out.messages {
            eprintln!("{m}");
        }
        if out.status != 0 {
            status = out.status;
        }
    }
    status
}
