//! `squeue`: list the controller's jobs, filtered, sorted and formatted
//! as Slurm 22.05 prints them.
//!
//! ```text
//! args --parse_args--> SqueueArgs --+
//!                                   +--render()--> text (pure)
//! controller --ListJobs--> JobList -+
//! ```
//!
//! Job arrays: running tasks print as `123_4`, an array's pending tasks as
//! one line `123_[5-9%2]`, which `-r` (or `-j 123_5`) expands.
//!
//! Not yet: job steps (`-s` prints the step header only), federation and
//! clusters (`-M` is accepted and ignored).

pub mod format;

#[cfg(test)]
mod tests;

use crate::common::split_list;
use crate::common::{self, fmt_banner, print_stdout, Stop};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use format::{Format, JobView, RowView, SortKey};
use model::{JobState, ALL_JOB_STATES};
use proto::{JobInfo, JobList, JobRows};
use std::fmt;

/// `squeue`'s default format.
pub const DEFAULT_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
/// `squeue -l`.
pub const LONG_FORMAT: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
/// `squeue --start`.
pub const START_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";
/// `squeue -s`.
pub const STEP_FORMAT: &str = "%.15i %.8j %.9P %.8u %.9M %N";
/// Default `-S` for jobs.
pub const DEFAULT_SORT: &str = "P,t,-p";

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("account", Some('A'), Arg::Required),
    opt("all", Some('a'), Arg::None),
    opt("array", Some('r'), Arg::None),
    opt("array-unique", None, Arg::None),
    opt("clusters", Some('M'), Arg::Required),
    opt("federation", None, Arg::None),
    opt("format", Some('o'), Arg::Required),
    opt("Format", Some('O'), Arg::Required),
    opt("help", None, Arg::None),
    opt("hide", None, Arg::None),
    opt("iterate", Some('i'), Arg::Required),
    opt("jobs", Some('j'), Arg::Optional),
    opt("json", None, Arg::Optional),
    opt("licenses", Some('L'), Arg::Required),
    opt("local", None, Arg::None),
    opt("long", Some('l'), Arg::None),
    opt("me", None, Arg::None),
    opt("name", Some('n'), Arg::Required),
    opt("noconvert", None, Arg::None),
    opt("noheader", Some('h'), Arg::None),
    opt("nodelist", Some('w'), Arg::Required),
    opt("partition", Some('p'), Arg::Required),
    opt("priority", Some('P'), Arg::None),
    opt("qos", Some('q'), Arg::Required),
    opt("reservation", Some('R'), Arg::Required),
    opt("sibling", None, Arg::None),
    opt("sort", Some('S'), Arg::Required),
    opt("start", None, Arg::None),
    opt("states", Some('t'), Arg::Required),
    opt("steps", Some('s'), Arg::Optional),
    opt("usage", None, Arg::None),
    opt("user", Some('u'), Arg::Required),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
    opt("yaml", None, Arg::Optional),
];

/// Which format the user asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FormatChoice {
    /// None: the default, `-l` or `--start` format.
    #[default]
    Default,
    /// `-o`.
    Percent(String),
    /// `-O`.
    Long(String),
}

/// squeue's options, as parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SqueueArgs {
    /// `-o` / `-O`.
    pub format: FormatChoice,
    /// `-l`.
    pub long: bool,
    /// `-h`.
    pub noheader: bool,
    /// `-u` (names or uids).
    pub users: Vec<String>,
    /// `--me`.
    pub me: bool,
    /// `-j` (None: not given): the job or array ids.
    pub jobs: Option<Vec<u32>>,
    /// `-j` entries naming array tasks (`123_4`, `123_[1-3]`).
    pub tasks: Vec<(u32, model::array::TaskSet)>,
    /// `-r`: one line per array task, pending ones included.
    pub array: bool,
    /// `-p`.
    pub partitions: Vec<String>,
    /// `-t` (None: the default set; `all` gives every state).
    pub states: Option<Vec<StateFilter>>,
    /// `-n`.
    pub names: Vec<String>,
    /// `-w`, expanded.
    pub nodes: Vec<String>,
    /// `-A`.
    pub accounts: Vec<String>,
    /// `-q`.
    pub qos: Vec<String>,
    /// `-L`: jobs that ask for any of these licenses.
    pub licenses: Vec<String>,
    /// `-R/--reservation`: jobs in any of these reservations.
    pub reservations: Vec<String>,
    /// `-S`.
    pub sort: Option<String>,
    /// `--start`.
    pub start: bool,
    /// `--json`.
    pub json: bool,
    /// `-s`.
    pub steps: bool,
    /// `-i`, seconds.
    pub iterate: Option<u64>,
    /// `--noconvert`.
    pub noconvert: bool,
    /// `-v` count.
    pub verbose: u32,
    /// `--help`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`.
    pub version: bool,
}

/// One `-t` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateFilter {
    /// A base state.
    State(JobState),
    /// `CG`/`COMPLETING`.
    Completing,
    /// `CF`/`CONFIGURING`: running, its PrologSlurmctld not ended (a
    /// running job's flag: `-t R` shows these too).
    Configuring,
}

/// Why squeue printed nothing but an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenderError {
    /// `-j ID` for one id the controller does not hold.
    InvalidJobId,
    /// `-S` with a letter squeue does not sort by.
    InvalidSort(char),
    /// `-O` with an unknown field.
    InvalidFormat(String),
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::InvalidJobId => {
                f.write_str("slurm_load_jobs error: Invalid job id specified")
            }
            RenderError::InvalidSort(c) => {
                write!(f, "squeue: error: Invalid sort specification: {c}")
            }
            RenderError::InvalidFormat(msg) => write!(f, "squeue: error: {msg}"),
        }
    }
}

fn parse_states(v: &str) -> Result<Vec<StateFilter>, String> {
    let mut out = Vec::new();
    for s in v.split(',').filter(|s| !s.is_empty()) {
        if s.eq_ignore_ascii_case("all") {
            out.extend(ALL_JOB_STATES.iter().map(|st| StateFilter::State(*st)));
            out.push(StateFilter::Completing);
        } else if s.eq_ignore_ascii_case("CG") || s.eq_ignore_ascii_case("COMPLETING") {
            out.push(StateFilter::Completing);
        } else if s.eq_ignore_ascii_case("CF") || s.eq_ignore_ascii_case("CONFIGURING") {
            out.push(StateFilter::Configuring);
        } else if let Some(st) = JobState::parse(s) {
            out.push(StateFilter::State(st));
        } else {
            let names: Vec<&str> = ALL_JOB_STATES.iter().map(|s| s.as_slurm_str()).collect();
            return Err(format!(
                "squeue: error: Invalid job state specified: {s}\nsqueue: error: Valid job states include: {},COMPLETING\n",
                names.join(",")
            ));
        }
    }
    Ok(out)
}

fn parse_job_ids(
    v: &str,
    out: &mut Vec<u32>,
    tasks: &mut Vec<(u32, model::array::TaskSet)>,
) -> Result<(), String> {
    for id in model::array::split_job_list(v) {
        // `123.0` names a step: it selects its job.
        let base = id.split('.').next().unwrap_or(&id);
        match model::array::JobIdSpec::parse(base) {
            Some(spec) => {
                out.push(spec.job_id);
                if let Some(t) = spec.tasks {
                    tasks.push((spec.job_id, t));
                }
            }
            None => return Err(format!("squeue: error: Invalid job id: {id}\n")),
        }
    }
    Ok(())
}

/// Parses squeue's command line (without the program name). The error is
/// the complete text for stderr.
pub fn parse_args(args: &[String]) -> Result<SqueueArgs, String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| crate::common::usage_error("squeue", &e.message()))?;
    let mut a = SqueueArgs::default();
    let mut jobs_flag = false;
    for item in items {
        match item {
            Item::Opt(name, value) => {
                let v = value.unwrap_or_default();
                match name {
                    "account" => a.accounts.extend(split_list(&v)),
                    "format" => a.format = FormatChoice::Percent(v),
                    "Format" => a.format = FormatChoice::Long(v),
                    "help" => a.help = true,
                    "usage" => a.usage = true,
                    "version" => a.version = true,
                    "iterate" => match v.parse::<u64>() {
                        Ok(n) if n > 0 => a.iterate = Some(n),
                        _ => {
                            return Err(format!(
                                "squeue: error: --iterate={v} must be a positive integer\n"
                            ))
                        }
                    },
                    "jobs" => {
                        jobs_flag = true;
                        let list = a.jobs.get_or_insert_with(Vec::new);
                        parse_job_ids(&v, list, &mut a.tasks)?;
                    }
                    "json" => a.json = true,
                    "array" => a.array = true,
                    "long" => a.long = true,
                    "me" => a.me = true,
                    "name" => a.names.extend(split_list(&v)),
                    "noconvert" => a.noconvert = true,
                    "noheader" => a.noheader = true,
                    "nodelist" => {
                        let expanded = hostlist::expand(&v).map_err(|_| {
                            format!("squeue: error: Invalid node name specified: {v}\n")
                        })?;
                        a.nodes.extend(expanded);
                    }
                    "partition" => a.partitions.extend(split_list(&v)),
                    "qos" => a.qos.extend(split_list(&v)),
                    "licenses" => a.licenses.extend(split_list(&v)),
                    "reservation" => a.reservations.extend(split_list(&v)),
                    "sort" => a.sort = Some(v),
                    "start" => a.start = true,
                    "states" => a
                        .states
                        .get_or_insert_with(Vec::new)
                        .extend(parse_states(&v)?),
                    "steps" => a.steps = true,
                    "user" => a.users.extend(split_list(&v)),
                    "verbose" => a.verbose += 1,
                    // Accepted, no effect in muster: -a, -M, -P, --hide,
                    // --local, --federation, --sibling, --array-unique, --yaml.
                    _ => {}
                }
            }
            Item::Positional(p) => {
                // `squeue -j 1,2` with the list after a bare -j, as Slurm allows.
                if jobs_flag {
                    parse_job_ids(&p, a.jobs.get_or_insert_with(Vec::new), &mut a.tasks)?;
                } else {
                    return Err(format!(
                        "squeue: error: Unrecognized option: {p}\nUsage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]\n              [-n name] [-o format] [-p partitions] [--qos qos]\n              [--reservation reservation] [--sort fields] [--start]\n              [--step step_id] [-t states] [-u user_name] [--usage]\n              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]\n              [-ahjlrsv]\n"
                    ));
                }
            }
        }
    }
    if a.jobs.as_ref().is_some_and(Vec::is_empty) {
        // A bare `-j` with no list selects every job.
        a.jobs = None;
    }
    Ok(a)
}

/// The `--usage` text.
pub const USAGE: &str = "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [-p partitions] [--qos qos]
              [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
              [-ahjlrsv]
";

/// The `--help` text.
pub const HELP: &str = "Usage: squeue [OPTIONS]
  -A, --account=account(s)        comma separated list of accounts
                                  to view, default is all accounts
  -a, --all                       display jobs in hidden partitions
  -h, --noheader                  no headers on output
  -i, --iterate=seconds           specify an interation period
  -j, --job=job(s)                comma separated list of jobs IDs
                                  to view, default is all
      --json                      produce JSON output
  -l, --long                      long report
  -M, --clusters=cluster_name     cluster to issue commands to (accepted)
      --me                        equivalent to --user=<my username>
  -n, --name=job_name(s)          comma separated list of job names to view
      --noconvert                 don't convert units from their original type
  -o, --format=format             format specification
  -O, --Format=format             format specification
  -p, --partition=partition(s)    comma separated list of partitions
                                  to view, default is all partitions
  -q, --qos=qos(s)                comma separated list of qos's
                                  to view, default is all qos's
  -r, --array                     display one job array element per line
  -S, --sort=fields               comma separated list of fields to sort on
      --start                     print expected start times of pending jobs
  -t, --states=states             comma separated list of states to view,
                                  default is pending and running,
                                  '--states=all' reports all states
  -u, --user=user_name(s)         comma separated list of users to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --nodelist=hostlist         list of nodes to view, default is
                                  all nodes

Help options:
  --help                          show this help message
  --usage                         display a brief summary of squeue options
";

/// Whether `job` asks for one of `names` (`squeue -L`; the job's list is
/// `name:count,...`).
fn asks_for_license<J: JobView + ?Sized>(job: &J, names: &[String]) -> bool {
    let Some(list) = job.full().and_then(|j| j.licenses.as_deref()) else {
        return false;
    };
    list.split(',')
        .map(|l| l.split(':').next().unwrap_or(l))
        .any(|l| names.iter().any(|n| n == l))
}

/// Whether `job` passes every filter of `args` (`me` is the caller's name).
pub fn matches<J: JobView + ?Sized>(args: &SqueueArgs, job: &J, me: &str) -> bool {
    if let Some(ids) = &args.jobs {
        let named = |id: &u32| *id == job.job_id().0 || Some(*id) == job.array_job_id();
        if !ids.iter().any(named) {
            return false;
        }
        // `-j 123_4`: only those tasks of array 123 (other ids name whole jobs).
        let array = job.array_job_id().unwrap_or(job.job_id().0);
        let wanted: Vec<&model::array::TaskSet> = args
            .tasks
            .iter()
            .filter(|(a, _)| *a == array)
            .map(|(_, t)| t)
            .collect();
        let whole = ids
            .iter()
            .any(|id| named(id) && !args.tasks.iter().any(|(a, _)| a == id));
        if !whole && !wanted.is_empty() {
            let Some(t) = job.array_task_id() else {
                return false;
            };
            if !wanted.iter().any(|set| set.contains(t)) {
                return false;
            }
        }
    }
    match &args.states {
        Some(states) => {
            let ok = states.iter().any(|s| match s {
                StateFilter::Completing => job.completing(),
                StateFilter::Configuring => job.configuring() && !job.completing(),
                StateFilter::State(st) => *st == job.state() && !job.completing(),
            });
            if !ok {
                return false;
            }
        }
        None => {
            // squeue(1) -t: "By default, pending, running, completing,
            // configuring, and resizing jobs are reported", also for jobs
            // named with -j: a finished job (or cancelled array task) the
            // controller still holds is known but shows nothing, so that
            // scripts polling `squeue -j ID` see it leave at once.
            let active = job.completing()
                || matches!(
                    job.state(),
                    JobState::Pending | JobState::Running | JobState::Suspended
                );
            if !active {
                return false;
            }
        }
    }
    if args.start && job.state() != JobState::Pending && args.states.is_none() {
        return false;
    }
    if !args.licenses.is_empty() && !asks_for_license(job, &args.licenses) {
        return false;
    }
    if !args.reservations.is_empty() {
        let resv = job.full().and_then(|j| j.reservation.as_deref());
        if !resv.is_some_and(|r| args.reservations.iter().any(|n| n == r)) {
            return false;
        }
    }
    let user_ok = |u: &str| u == job.user() || u.parse::<u32>().is_ok_and(|n| n == job.uid());
    if args.me || !args.users.is_empty() {
        let ok = (args.me && job.user() == me) || args.users.iter().any(|u| user_ok(u));
        if !ok {
            return false;
        }
    }
    if !args.partitions.is_empty()
        && !job
            .partition()
            .split(',')
            .any(|p| args.partitions.iter().any(|q| q == p))
    {
        return false;
    }
    if !args.names.is_empty() && !args.names.iter().any(|n| n == job.name()) {
        return false;
    }
    if !args.accounts.is_empty()
        && !args
            .accounts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(job.account()))
    {
        return false;
    }
    if !args.qos.is_empty() && !args.qos.iter().any(|q| q.eq_ignore_ascii_case(job.qos())) {
        return false;
    }
    if !args.nodes.is_empty()
        && !(0..job.node_count()).any(|i| args.nodes.iter().any(|n| n == job.node(i)))
    {
        return false;
    }
    true
}

fn resolve_format(args: &SqueueArgs) -> Result<Format, RenderError> {
    let text = match &args.format {
        FormatChoice::Long(spec) => {
            return format::parse_long(spec).map_err(RenderError::InvalidFormat)
        }
        FormatChoice::Percent(spec) => spec.as_str(),
        FormatChoice::Default if args.steps => STEP_FORMAT,
        FormatChoice::Default if args.start => START_FORMAT,
        FormatChoice::Default if args.long => LONG_FORMAT,
        FormatChoice::Default => DEFAULT_FORMAT,
    };
    // Unknown letters print as typed; squeue's complaint goes to stderr in main.
    Ok(format::parse_percent(text).0)
}

fn resolve_sort(args: &SqueueArgs) -> Result<Vec<SortKey>, RenderError> {
    let spec = match &args.sort {
        Some(s) => s.as_str(),
        None if args.start => "S",
        None => DEFAULT_SORT,
    };
    format::parse_sort(spec).map_err(RenderError::InvalidSort)
}

/// The jobs `args` selects, in display order.
pub fn selected<'a>(
    args: &SqueueArgs,
    list: &'a JobList,
    me: &str,
) -> Result<Vec<&'a JobInfo>, RenderError> {
    select(args, list.jobs.iter().collect(), list.now, me)
}

/// `jobs` (every job of an answer) less those `args` filters out, sorted.
fn select<J: JobView>(
    args: &SqueueArgs,
    mut jobs: Vec<J>,
    now: model::Timestamp,
    me: &str,
) -> Result<Vec<J>, RenderError> {
    // With exactly one -j id squeue asks the controller for that job alone,
    // and an unknown id is an error; with several it filters the full list.
    if let Some(ids) = &args.jobs {
        let known = |j: &J| j.job_id().0 == ids[0] || j.array_job_id() == Some(ids[0]);
        if ids.len() == 1 && !jobs.iter().any(known) {
            return Err(RenderError::InvalidJobId);
        }
    }
    let keys = resolve_sort(args)?;
    jobs.retain(|j| matches(args, j, me));
    format::sort_jobs(&mut jobs, &keys, now);
    Ok(jobs)
}

/// What squeue asks the controller for: the filters the controller can
/// apply exactly (users, partitions, active jobs only) and the brief form
/// of each job when the output needs none of [`JobInfo::BRIEF_OMITS`].
/// `matches` still runs on the answer, so this only narrows the transfer.
pub fn job_filter(args: &SqueueArgs, me: &str) -> proto::JobFilter {
    let mut users = args.users.clone();
    if args.me && !users.is_empty() {
        users.push(me.to_string());
    } else if args.me {
        users = vec![me.to_string()];
    }
    let brief = brief_enough(args);
    proto::JobFilter {
        users,
        partitions: args.partitions.clone(),
        active_only: args.states.is_none() && args.jobs.is_none(),
        brief,
        omit: if brief {
            unread_fields(args)
        } else {
            Vec::new()
        },
        rows: brief,
        // Set by `Client::query_job_rows`, which reads the parts.
        stream: false,
        // `-j` also names array tasks by their array's id: filtered here.
        job_ids: Vec::new(),
        wire: false,
    }
}

/// The text fields of a job that neither the format, the sort keys nor
/// the filters of `args` read, which the controller may leave empty.
fn unread_fields(args: &SqueueArgs) -> Vec<proto::JobField> {
    use format::FieldKind as K;
    use proto::JobField as F;
    let (Ok(format), Ok(keys)) = (resolve_format(args), resolve_sort(args)) else {
        return Vec::new();
    };
    let mut read: Vec<F> = vec![];
    for f in &format.fields {
        read.extend(match f.kind {
            K::Name => &[F::Name][..],
            K::UserName => &[F::User],
            K::GroupName => &[F::Group],
            K::Account => &[F::Account],
            K::Qos => &[F::Qos],
            K::Partition => &[F::Partition],
            K::NodeList | K::ReasonList | K::BatchHost | K::ReqNodes | K::ExcNodes => &[F::Nodes],
            K::SchedNodes => &[F::SchedNodes],
            _ => &[],
        });
    }
    for k in &keys {
        read.extend(match k.key {
            'j' => &[F::Name][..],
            'u' => &[F::User],
            'g' => &[F::Group],
            'P' => &[F::Partition],
            'N' | 'B' => &[F::Nodes],
            _ => &[],
        });
    }
    // What `matches` reads.
    if args.me || !args.users.is_empty() {
        read.push(F::User);
    }
    if !args.partitions.is_empty() {
        read.push(F::Partition);
    }
    if !args.names.is_empty() {
        read.push(F::Name);
    }
    if !args.accounts.is_empty() {
        read.push(F::Account);
    }
    if !args.qos.is_empty() {
        read.push(F::Qos);
    }
    if !args.nodes.is_empty() {
        read.push(F::Nodes);
    }
    F::ALL.into_iter().filter(|f| !read.contains(f)).collect()
}

/// Whether every field and sort key squeue will print reads only what a
/// brief `JobInfo` carries.
fn brief_enough(args: &SqueueArgs) -> bool {
    use format::FieldKind as K;
    if args.json || args.steps || !args.licenses.is_empty() || !args.reservations.is_empty() {
        return false;
    }
    let (Ok(format), Ok(keys)) = (resolve_format(args), resolve_sort(args)) else {
        return false;
    };
    let field_ok = |k: K| {
        !matches!(
            k,
            K::TresPerNode
                | K::BatchHost
                | K::Dependency
                | K::Features
                | K::Comment
                | K::Licenses
                | K::Reservation
                | K::ReqNodes
                | K::Command
                | K::ExcNodes
                | K::WorkDir
                | K::Stdout
                | K::Stderr
                | K::Stdin
                | K::TresAlloc
        )
    };
    format.fields.iter().all(|f| field_ok(f.kind)) && keys.iter().all(|k| k.key != 'B')
}

/// Renders squeue's whole output for `list` (`me`: the caller's user name).
pub fn render(args: &SqueueArgs, list: &JobList, me: &str) -> Result<String, RenderError> {
    let expanded;
    let list = if list.jobs.iter().any(|j| expands(args, j)) {
        expanded = expand_arrays(args, list);
        &expanded
    } else {
        list
    };
    if args.json {
        return render_json(args, list, me);
    }
    let format = resolve_format(args)?;
    let jobs = selected(args, list, me)?;
    Ok(render_lines(args, &format, list.now, &jobs))
}

/// [`render`] from compact rows (`JobFilter::rows`, asked for when
/// [`job_filter`] sets it): the same text for the same jobs.
pub fn render_rows(args: &SqueueArgs, rows: &JobRows, me: &str) -> Result<String, RenderError> {
    let mut out = String::new();
    render_rows_to(args, rows, me, &mut out, &mut |_| {})?;
    Ok(out)
}

/// How many bytes of output [`render_rows_to`] gathers before it hands
/// them on.
const FLUSH_BYTES: usize = 64 * 1024;

/// [`render_rows`] in pieces: the text goes into `out`, and whenever it
/// holds `FLUSH_BYTES` or more (whole lines), `flush` is called with it
/// and may take it (squeue writes and clears it, so the output of 100,000
/// jobs never lies in memory whole). Nothing is written before the jobs
/// are known to render (a `RenderError` leaves `out` empty).
pub fn render_rows_to(
    args: &SqueueArgs,
    rows: &JobRows,
    me: &str,
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
) -> Result<(), RenderError> {
    let expanded;
    // Only -r and -j with tasks expand arrays: no look at every row else.
    let may_expand = args.array || !args.tasks.is_empty();
    let rows = if may_expand && rows.rows().any(|row| expands(args, &RowView { row, rows })) {
        expanded = expand_rows(args, rows);
        &expanded
    } else {
        rows
    };
    if args.json {
        // Never asked for with rows: --json reads every field.
        let list = JobList {
            now: rows.now,
            jobs: rows.rows().map(|r| r.to_info(rows)).collect(),
        };
        out.push_str(&render_json(args, &list, me)?);
        return Ok(());
    }
    let format = resolve_format(args)?;
    let views = rows.rows().map(|row| RowView { row, rows }).collect();
    let jobs = select(args, views, rows.now, me)?;
    render_lines_to(args, &format, rows.now, &jobs, out, flush);
    flush(out);
    Ok(())
}

/// The banner, header and one line per job.
fn render_lines<J: JobView>(
    args: &SqueueArgs,
    format: &Format,
    now: model::Timestamp,
    jobs: &[J],
) -> String {
    let mut out = String::new();
    render_lines_to(args, format, now, jobs, &mut out, &mut |_| {});
    out
}

/// [`render_lines`] into `out`, calling `flush` each time `out` holds
/// [`FLUSH_BYTES`] or more.
fn render_lines_to<J: JobView>(
    args: &SqueueArgs,
    format: &Format,
    now: model::Timestamp,
    jobs: &[J],
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
) {
    if args.long || args.iterate.is_some() {
        out.push_str(&fmt_banner(now));
        out.push('\n');
    }
    if !args.noheader {
        out.push_str(&format::header_line(format));
    }
    if args.steps {
        // No job steps yet: the header alone, as for a job without steps.
        return;
    }
    let mut scratch = format::LineScratch::default();
    let mut jobs = jobs.iter();
    if let Some(first) = jobs.next() {
        let start = out.len();
        format::push_job_line_with(out, &mut scratch, format, first, now, args.noconvert);
        // Lines of one format are about as long as each other: room for
        // all of them, or for one piece and a line more.
        let line = out.len() - start + 8;
        out.reserve((line * jobs.len()).min(FLUSH_BYTES + 2 * line));
    }
    // What the line four ahead reads, asked for while this one is made.
    let mut ahead = jobs.clone().skip(4);
    for job in jobs {
        if let Some(next) = ahead.next() {
            next.prefetch();
        }
        format::push_job_line_with(out, &mut scratch, format, job, now, args.noconvert);
        if out.len() >= FLUSH_BYTES {
            flush(out);
        }
    }
}

/// [`expand_arrays`] for compact rows.
fn expand_rows(args: &SqueueArgs, rows: &JobRows) -> JobRows {
    let mut out = JobRows::new(rows.now);
    out.strings = rows.strings.clone();
    for r in rows.rows() {
        let pending = match r.array_task_str() {
            Some(text) if expands(args, &RowView { row: r, rows }) => {
                model::array::TaskSet::parse(text)
            }
            _ => None,
        };
        match pending {
            Some(set) => {
                for t in set.iter() {
                    out.push_packed(r.as_task(t));
                }
            }
            None => out.push_packed(r.clone()),
        }
    }
    out
}

/// The list as squeue shows it: with `-r`, or when `-j` names single
/// tasks, an array's pending record becomes one row per pending task.
pub fn expand_arrays(args: &SqueueArgs, list: &JobList) -> JobList {
    let mut jobs = Vec::with_capacity(list.jobs.len());
    for j in &list.jobs {
        let pending = match &j.array_task_str {
            Some(text) if expands(args, j) => model::array::TaskSet::parse(text),
            _ => None,
        };
        match pending {
            Some(set) => {
                for t in set.iter() {
                    let mut row = j.clone();
                    row.array_task_id = Some(t);
                    row.array_task_str = None;
                    row.array_max_tasks = None;
                    jobs.push(row);
                }
            }
            None => jobs.push(j.clone()),
        }
    }
    JobList {
        now: list.now,
        jobs,
    }
}

/// Whether `j` is an array's pending record that [`expand_arrays`]
/// shows as one row per pending task.
fn expands<J: JobView + ?Sized>(args: &SqueueArgs, j: &J) -> bool {
    match (j.array_task_str(), j.array_job_id()) {
        (Some(_), Some(a)) if j.array_task_id().is_none() => {
            args.array || args.tasks.iter().any(|(id, _)| *id == a)
        }
        _ => false,
    }
}

fn opt_ts(t: Option<model::Timestamp>) -> i64 {
    t.unwrap_or(0)
}

/// `squeue --json`: Slurm's `data_parser` shape (`meta`, `errors`, `jobs`)
/// with the job fields muster knows, named as slurmrestd v0.0.38 names them.
fn render_json(args: &SqueueArgs, list: &JobList, me: &str) -> Result<String, RenderError> {
    use serde_json::json;
    let jobs = selected(args, list, me)?;
    let jobs: Vec<serde_json::Value> = jobs
        .into_iter()
        .map(|j| {
            let time_limit = match j.time_limit {
                model::TimeLimit::Unlimited => json!(null),
                model::TimeLimit::Minutes(m) => json!(m),
            };
            let mut m = serde_json::Map::new();
            m.insert("account".into(), json!(j.account));
            m.insert(
                "batch_host".into(),
                json!(j.batch_host.clone().unwrap_or_default()),
            );
            m.insert(
                "command".into(),
                json!(j.command.clone().unwrap_or_default()),
            );
            m.insert(
                "comment".into(),
                json!(j.comment.clone().unwrap_or_default()),
            );
            m.insert("cpus".into(), json!(j.num_cpus));
            m.insert("cpus_per_task".into(), json!(j.cpus_per_task));
            m.insert("current_working_directory".into(), json!(j.work_dir));
            m.insert(
                "dependency".into(),
                json!(j.dependency.clone().unwrap_or_default()),
            );
            m.insert("eligible_time".into(), json!(j.eligible_time));
            m.insert("end_time".into(), json!(opt_ts(j.end_time)));
            m.insert(
                "excluded_nodes".into(),
                json!(hostlist_or_empty(&j.exc_nodes)),
            );
            m.insert("exit_code".into(), json!(j.exit_code.code));
            m.insert(
                "features".into(),
                json!(j.features.clone().unwrap_or_default()),
            );
            m.insert("group_id".into(), json!(j.gid));
            m.insert("group_name".into(), json!(j.group));
            m.insert("job_id".into(), json!(j.job_id.0));
            m.insert("job_state".into(), json!(format::state_long(j)));
            m.insert(
                "last_sched_evaluation".into(),
                json!(opt_ts(j.last_sched_eval)),
            );
            m.insert("memory_per_cpu".into(), json!(j.mem_per_cpu));
            m.insert("memory_per_node".into(), json!(j.mem_per_node));
            m.insert("name".into(), json!(j.name));
            m.insert("nice".into(), json!(j.nice));
            m.insert("node_count".into(), json!(j.num_nodes));
            m.insert("nodes".into(), json!(hostlist_or_empty(&j.nodes)));
            m.insert("partition".into(), json!(j.partition));
            m.insert("priority".into(), json!(j.priority));
            m.insert("qos".into(), json!(j.qos));
            m.insert("requeue".into(), json!(j.requeue));
            m.insert(
                "required_nodes".into(),
                json!(hostlist_or_empty(&j.req_nodes)),
            );
            m.insert("restart_cnt".into(), json!(j.restarts));
            m.insert("standard_error".into(), json!(j.stderr));
            m.insert("standard_input".into(), json!(j.stdin));
            m.insert("standard_output".into(), json!(j.stdout));
            m.insert("start_time".into(), json!(opt_ts(j.start_time)));
            m.insert("state_description".into(), json!(""));
            m.insert("state_reason".into(), json!(j.reason.as_slurm_str()));
            m.insert("submit_time".into(), json!(j.submit_time));
            m.insert("tasks".into(), json!(j.num_tasks));
            m.insert("time_limit".into(), json!(time_limit));
            m.insert("tres_alloc_str".into(), json!(j.tres));
            m.insert(
                "tres_per_job".into(),
                json!(j.tres_per_job.clone().unwrap_or_default()),
            );
            m.insert(
                "tres_per_node".into(),
                json!(j.tres_per_node.clone().unwrap_or_default()),
            );
            m.insert(
                "tres_per_task".into(),
                json!(j.tres_per_task.clone().unwrap_or_default()),
            );
            m.insert("user_id".into(), json!(j.uid));
            m.insert("user_name".into(), json!(j.user));
            serde_json::Value::Object(m)
        })
        .collect();
    let doc = json!({
        "meta": {
            "plugin": { "type": "", "name": "" },
            "Slurm": {
                "version": { "major": 22, "micro": 8, "minor": 5 },
                "release": crate::common::SLURM_VERSION
            }
        },
        "errors": [],
        "jobs": jobs,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    Ok(text)
}

fn hostlist_or_empty(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        hostlist::compress(names)
    }
}

/// Applies `SQUEUE_FORMAT`, `SQUEUE_FORMAT2` and `SQUEUE_SORT` as squeue
/// does: the environment never overrides `-o`, `-O`, `-l`, `--start` or `-S`.
fn apply_env(args: &mut SqueueArgs) {
    let overridden = args.format != FormatChoice::Default || args.long || args.start || args.steps;
    if !overridden {
        if let Ok(f) = std::env::var("SQUEUE_FORMAT") {
            args.format = FormatChoice::Percent(f);
        } else if let Ok(f) = std::env::var("SQUEUE_FORMAT2") {
            args.format = FormatChoice::Long(f);
        }
    }
    if args.sort.is_none() {
        if let Ok(s) = std::env::var("SQUEUE_SORT") {
            args.sort = Some(s);
        }
    }
}

/// Renders `squeue -s` for `list`: running steps, by job then step.
pub fn render_steps(args: &SqueueArgs, list: &proto::StepList) -> Result<String, RenderError> {
    let format = resolve_format(args)?;
    let mut out = String::new();
    if !args.noheader {
        // `%i` is the step id here, and squeue heads it STEPID.
        let header = format::header_line(&format);
        let header = if header.contains(" JOBID") {
            header.replacen(" JOBID", "STEPID", 1)
        } else {
            header.replacen("JOBID", "STEPID", 1)
        };
        out.push_str(&header);
    }
    for step in &list.steps {
        if args
            .jobs
            .as_ref()
            .is_some_and(|ids| !ids.contains(&step.job_id.0))
        {
            continue;
        }
        if !args.users.is_empty() && !args.users.contains(&step.user) {
            continue;
        }
        if !args.partitions.is_empty() && !args.partitions.contains(&step.partition) {
            continue;
        }
        out.push_str(&format::step_line(&format, step, list.now));
    }
    Ok(out)
}

fn steps_main(args: &SqueueArgs, client: &client::Client) -> i32 {
    let list = match client.call(proto::CtldRequest::ListSteps) {
        Ok(proto::CtldResponse::Steps(l)) => l,
        Ok(_) => {
            eprintln!("slurm_load_job_steps error: Unexpected message received");
            return 1;
        }
        Err(e) => {
            eprintln!("slurm_load_job_steps error: {e}");
            return 1;
        }
    };
    match render_steps(args, &list) {
        Ok(text) => {
            print_stdout(&text);
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

/// The first of the `-w` names (expanded) that is no node of `known`.
pub fn unknown_node<'a>(names: &'a [String], known: &[proto::NodeInfo]) -> Option<&'a str> {
    names
        .iter()
        .find(|n| !known.iter().any(|k| k.name == **n))
        .map(String::as_str)
}

/// Runs `squeue`.
pub fn main(args: Vec<String>) -> i32 {
    common::run(
        || {
            let mut args = common::parsed(parse_args(&args), |a| {
                common::info_flags(a.help, a.usage, a.version, HELP, USAGE)
            })?;
            apply_env(&mut args);
            if let FormatChoice::Percent(spec) = &args.format {
                for e in format::parse_percent(spec).1 {
                    eprintln!("squeue: error: {e}");
                }
            }
            Ok(args)
        },
        connect,
        |args, (client, me)| {
            if args.steps {
                steps_main(args, &client)
            } else {
                jobs_main(args, &client, &me)
            }
        },
    )
}

/// The ask step: a client, with `-u` and `-w` checked as Slurm's squeue
/// checks them, and the caller's name.
fn connect(args: &SqueueArgs) -> Result<(client::Client, String), Stop> {
    let client = client::Client::from_env()
        .map_err(|e| Stop::Fail(format!("slurm_load_jobs error: {e}\n")))?;
    let me = client.identity().user.clone();
    // Slurm's squeue drops a user it cannot find, with an error but no
    // failure; the filter keeps the name, which matches no job.
    for user in args.users.iter().filter(|u| !common::user_exists(u)) {
        eprintln!("squeue: error: Invalid user: {user}\n");
    }
    if !args.nodes.is_empty() {
        // Slurm's squeue refuses a -w name the controller does not know.
        let known = client
            .nodes()
            .map_err(|e| Stop::Fail(format!("slurm_load_node error: {e}\n")))?;
        if let Some(name) = unknown_node(&args.nodes, &known) {
            return Err(Stop::Fail(format!(
                "squeue: error: Invalid node name {name}\n"
            )));
        }
    }
    Ok((client, me))
}

/// The job list, once, or every `-i` seconds until squeue is stopped.
fn jobs_main(args: &SqueueArgs, client: &client::Client, me: &str) -> i32 {
    loop {
        let filter = job_filter(args, me);
        let text = if filter.rows {
            client.query_job_rows(filter).map(|rows| {
                // Written in pieces as it is formatted.
                let mut out = String::new();
                let mut write = |text: &mut String| {
                    print_stdout(text);
                    text.clear();
                };
                let done = render_rows_to(args, &rows, me, &mut out, &mut write);
                if args.iterate.is_none() {
                    // The process ends here: freeing every row one by
                    // one would only cost time.
                    std::mem::forget(rows);
                }
                done.map(|()| out)
            })
        } else {
            client.query_jobs(filter).map(|list| {
                let text = render(args, &list, me);
                if args.iterate.is_none() {
                    std::mem::forget(list);
                }
                text
            })
        };
        match text {
            Ok(Ok(text)) => print_stdout(&text),
            Ok(Err(e)) => {
                eprintln!("{e}");
                return 1;
            }
            Err(e) => {
                eprintln!("slurm_load_jobs error: {e}");
                return 1;
            }
        }
        match args.iterate {
            Some(secs) => {
                print_stdout("\n");
                std::thread::sleep(std::time::Duration::from_secs(secs));
            }
            None => return 0,
        }
    }
}
