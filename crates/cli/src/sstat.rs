//! `sstat`: the usage of running steps so far, as Slurm 22.05 prints it.
//!
//! ```text
//! args --parse_args--> SstatArgs ---for each -j entry--> StepStat{job} --> ctld
//!                                                                          | asks the step's nodes;
//!                                                                          | each supervisor's newest
//!                                                                          v sample, merged
//!  text <--render(rows)-- select(entry, Vec<LiveStepStat>) <----------------+
//! ```
//!
//! The numbers are the node supervisors' newest sample (taken every
//! JobAcctGatherFrequency seconds, or the job's `--acctg-freq`), merged
//! over the step's nodes as sacct's are. Formatting shares sacct's helpers
//! (`sacct::fields`). Not measured, printed empty: disk I/O, energy, CPU
//! frequency.

use crate::common::{self, print_stdout, Stop};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use crate::sacct::fields::{self, f, l, Ctx, FieldDef};
use crate::sacct::Layout;
use proto::{LiveStepStat, StepId};

/// sstat's fields, in `--helpformat` order, with their default widths.
pub const FIELDS: &[FieldDef] = &[
    f("AveCPU", 10),
    f("AveCPUFreq", 10),
    f("AveDiskRead", 12),
    f("AveDiskWrite", 12),
    f("AvePages", 10),
    f("AveRSS", 10),
    f("AveVMSize", 10),
    f("ConsumedEnergy", 14),
    f("ConsumedEnergyRaw", 17),
    l("JobID", 12),
    f("MaxDiskRead", 12),
    f("MaxDiskReadNode", 15),
    f("MaxDiskReadTask", 15),
    f("MaxDiskWrite", 12),
    f("MaxDiskWriteNode", 16),
    f("MaxDiskWriteTask", 16),
    f("MaxPages", 8),
    f("MaxPagesNode", 12),
    f("MaxPagesTask", 14),
    f("MaxRSS", 10),
    f("MaxRSSNode", 10),
    f("MaxRSSTask", 10),
    f("MaxVMSize", 10),
    f("MaxVMSizeNode", 14),
    f("MaxVMSizeTask", 14),
    f("MinCPU", 10),
    f("MinCPUNode", 10),
    f("MinCPUTask", 10),
    f("Nodelist", 20),
    f("NTasks", 8),
    f("Pids", 20),
    f("ReqCPUFreq", 13),
    f("ReqCPUFreqMin", 13),
    f("ReqCPUFreqMax", 13),
    f("ReqCPUFreqGov", 13),
    l("TRESUsageInAve", 14),
    l("TRESUsageInMax", 14),
    l("TRESUsageInMaxNode", 18),
    l("TRESUsageInMaxTask", 18),
    l("TRESUsageInMin", 14),
    l("TRESUsageInMinNode", 18),
    l("TRESUsageInMinTask", 18),
    l("TRESUsageInTot", 14),
    l("TRESUsageOutAve", 15),
    l("TRESUsageOutMax", 15),
    l("TRESUsageOutMaxNode", 19),
    l("TRESUsageOutMaxTask", 19),
    l("TRESUsageOutMin", 15),
    l("TRESUsageOutMinNode", 19),
    l("TRESUsageOutMinTask", 19),
    l("TRESUsageOutTot", 15),
];

/// Fields sstat accepts besides Slurm's (`FIELDS`, which `--helpformat`
/// lists as Slurm's sstat does): a container step's start-up.
pub const EXTRA_FIELDS: &[FieldDef] = &[f("ContainerStart", 14)];

/// The columns sstat prints without `-o`.
pub const DEFAULT_FORMAT: &str = "JobID,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,\
MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,MinCPU,MinCPUNode,\
MinCPUTask,AveCPU,NTasks,AveCPUFreq,ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ConsumedEnergy,\
MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,\
MaxDiskWriteTask,AveDiskWrite,TRESUsageInAve,TRESUsageInMax,TRESUsageInMaxNode,\
TRESUsageInMaxTask,TRESUsageInMin,TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot,\
TRESUsageOutAve,TRESUsageOutMax,TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutMin,\
TRESUsageOutMinNode,TRESUsageOutMinTask,TRESUsageOutTot";

/// `-i/--pidformat`.
pub const PID_FORMAT: &str = "JobID,Nodelist,Pids";

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("allsteps", Some('a'), Arg::None),
    opt("fields", None, Arg::Required),
    opt("format", Some('o'), Arg::Required),
    opt("help", Some('h'), Arg::None),
    opt("helpformat", Some('e'), Arg::None),
    opt("jobs", Some('j'), Arg::Required),
    opt("noconvert", None, Arg::None),
    opt("noheader", Some('n'), Arg::None),
    opt("parsable", Some('p'), Arg::None),
    opt("parsable2", Some('P'), Arg::None),
    opt("pidformat", Some('i'), Arg::None),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
];

/// One column: a field and its width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The field.
    pub def: &'static FieldDef,
    /// Width.
    pub width: usize,
    /// Left-justified.
    pub left: bool,
}

/// One `-j` entry: a job, and a step or none (the first running step, or
/// all of them with `-a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepSel {
    /// The job.
    pub job: u32,
    /// The step.
    pub step: Option<StepId>,
}

/// sstat's options, as parsed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SstatArgs {
    /// The columns.
    pub columns: Vec<Column>,
    /// `-j`.
    pub jobs: Vec<StepSel>,
    /// `-a`.
    pub allsteps: bool,
    /// `-p` / `-P`.
    pub layout: Layout,
    /// `-n`.
    pub noheader: bool,
    /// `--noconvert`.
    pub noconvert: bool,
    /// `-i`: one row per node of each step, with its pids there.
    pub pidformat: bool,
    /// `-e`.
    pub helpformat: bool,
    /// `-h`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`.
    pub version: bool,
}

/// Finds a field: exact name in any case, else the first that starts so.
pub fn lookup(name: &str) -> Option<&'static FieldDef> {
    let low = name.to_ascii_lowercase();
    let all = || FIELDS.iter().chain(EXTRA_FIELDS);
    all()
        .find(|d| d.name.eq_ignore_ascii_case(name))
        .or_else(|| {
            all().find(|d| !low.is_empty() && d.name.to_ascii_lowercase().starts_with(&low))
        })
}

/// Parses a `--format` list (`name[%[-]width]`); the error is the item
/// sstat did not know.
pub fn parse_format(spec: &str) -> Result<Vec<Column>, String> {
    crate::common::format_items(spec)
        .into_iter()
        .map(|(item, name, width)| {
            let def = lookup(name).ok_or_else(|| item.to_string())?;
            let (width, left) = width.unwrap_or((def.width, def.left));
            Ok(Column { def, width, left })
        })
        .collect()
}

/// Parses one `-j` entry: `123`, `123.4`, `123.batch`, `123.extern`.
pub fn parse_step_sel(text: &str) -> Option<StepSel> {
    let (job, step) = match text.split_once('.') {
        Some((j, s)) => (
            j,
            Some(match s {
                "batch" => StepId::Batch,
                "extern" => StepId::Extern,
                n => StepId::Numbered(n.parse().ok()?),
            }),
        ),
        None => (text, None),
    };
    let job: u32 = job.parse().ok()?;
    (job != 0).then_some(StepSel { job, step })
}

/// Parses sstat's command line (without the program name). The error is
/// the complete text for stderr.
pub fn parse_args(args: &[String]) -> Result<SstatArgs, String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| crate::common::usage_error("sstat", &e.message()))?;
    let mut a = SstatArgs::default();
    let mut format = String::new();
    for item in items {
        let (name, v) = match item {
            Item::Opt(name, value) => (name, value.unwrap_or_default()),
            // A bare job id is taken as `-j` (sstat 123).
            Item::Positional(p) => ("jobs", p),
        };
        match name {
            "allsteps" => a.allsteps = true,
            "fields" | "format" => {
                if !format.is_empty() {
                    format.push(',');
                }
                format.push_str(&v);
            }
            "help" => a.help = true,
            "helpformat" => a.helpformat = true,
            "jobs" => {
                for s in v.split(',').filter(|s| !s.is_empty()) {
                    let sel = parse_step_sel(s)
                        .ok_or_else(|| format!("sstat: fatal: Bad job/step specified: {s}\n"))?;
                    a.jobs.push(sel);
                }
            }
            "noconvert" => a.noconvert = true,
            "noheader" => a.noheader = true,
            "parsable" => a.layout = Layout::Parsable,
            "parsable2" => a.layout = Layout::Parsable2,
            // Like -o, in its place among them: JobID,Nodelist,Pids.
            "pidformat" => {
                a.pidformat = true;
                if !format.is_empty() {
                    format.push(',');
                }
                format.push_str(PID_FORMAT);
            }
            "usage" => a.usage = true,
            "version" => a.version = true,
            _ => {}
        }
    }
    let spec = if !format.is_empty() {
        format
    } else {
        DEFAULT_FORMAT.to_string()
    };
    a.columns = parse_format(&spec)
        .map_err(|bad| format!("sstat: error: Invalid field requested: \"{bad}\"\n"))?;
    Ok(a)
}

/// What one `-j` entry gives, from the job's running steps (as the
/// controller lists them: batch, then srun's steps in id order): the step
/// named; else all of them with `-a`; else the lowest numbered step, or
/// the batch step where srun runs none. `Err` is the error line for a job
/// with no step running.
pub fn select<'a>(
    sel: &StepSel,
    allsteps: bool,
    steps: &'a [LiveStepStat],
) -> Result<Vec<&'a LiveStepStat>, String> {
    match sel.step {
        // A step that is not running prints nothing (Slurm says so only
        // at debug level).
        Some(want) => Ok(steps.iter().filter(|s| s.step == want).collect()),
        None if steps.is_empty() => Err(format!(
            "sstat: error: no steps running for job {}\n",
            sel.job
        )),
        None if allsteps => Ok(steps.iter().collect()),
        None => Ok(steps
            .iter()
            .find(|s| matches!(s.step, StepId::Numbered(_)))
            .or(steps.first())
            .into_iter()
            .collect()),
    }
}

/// The text of field `name` for one step.
pub fn value(name: &str, s: &LiveStepStat, ctx: &Ctx) -> String {
    let u = &s.usage;
    let kib = |v: Option<u64>| v.map(|k| fields::fmt_kib(k, ctx)).unwrap_or_default();
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let num = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
    let task = |v: Option<u32>| v.map(|n| n.to_string()).unwrap_or_default();
    let cpu = |v: Option<u64>| {
        v.map(|us| fields::fmt_elapsed((us / 1_000_000) as i64))
            .unwrap_or_default()
    };
    match name {
        "AveCPU" => cpu(u.ave_cpu_usec),
        "AvePages" => num(u.ave_pages),
        "AveRSS" => kib(u.ave_rss_kib),
        "AveVMSize" => kib(u.ave_vmsize_kib),
        "JobID" => format!("{}.{}", s.job_id.0, s.step.as_slurm_string()),
        "MaxPages" => num(u.max_pages),
        "MaxPagesNode" => text(&u.max_pages_node),
        "MaxPagesTask" => task(u.max_pages_task),
        "MaxRSS" => kib(u.max_rss_kib),
        "MaxRSSNode" => text(&u.max_rss_node),
        "MaxRSSTask" => task(u.max_rss_task),
        "MaxVMSize" => kib(u.max_vmsize_kib),
        "MaxVMSizeNode" => text(&u.max_vmsize_node),
        "MaxVMSizeTask" => task(u.max_vmsize_task),
        "MinCPU" => cpu(u.min_cpu_usec),
        "MinCPUNode" => text(&u.min_cpu_node),
        "MinCPUTask" => task(u.min_cpu_task),
        "Nodelist" => hostlist::compress(&s.nodes),
        "NTasks" => s.ntasks.to_string(),
        "Pids" => s
            .pids
            .iter()
            .flat_map(|(_, p)| p.iter().map(u32::to_string))
            .collect::<Vec<_>>()
            .join(","),
        "ReqCPUFreq" | "ReqCPUFreqMin" | "ReqCPUFreqMax" | "ReqCPUFreqGov" => "Unknown".into(),
        "ContainerStart" => fields::fmt_container_start(u),
        other => fields::tres_usage(other, u, ctx).unwrap_or_default(),
    }
}

/// The header lines (none with `-n`).
pub fn render_header(args: &SstatArgs) -> String {
    if args.noheader {
        return String::new();
    }
    let mut out = line(
        args,
        args.columns
            .iter()
            .map(|c| c.def.name.to_string())
            .collect(),
    );
    if args.layout == Layout::Columns {
        out.push_str(&line(
            args,
            args.columns.iter().map(|c| "-".repeat(c.width)).collect(),
        ));
    }
    out
}

/// The rows of `steps`: one per step, or with `-i` one per node of each
/// step (its Nodelist that node, its Pids the step's pids there), as
/// Slurm's sstat prints each node's answer in turn.
pub fn render_rows(args: &SstatArgs, steps: &[&LiveStepStat]) -> String {
    let ctx = Ctx {
        now: 0,
        units: None,
        noconvert: args.noconvert,
    };
    let per_node: Vec<LiveStepStat>;
    let steps: Vec<&LiveStepStat> = if args.pidformat {
        per_node = steps
            .iter()
            .flat_map(|s| {
                s.pids.iter().map(|(node, pids)| LiveStepStat {
                    nodes: vec![node.clone()],
                    pids: vec![(node.clone(), pids.clone())],
                    ..(*s).clone()
                })
            })
            .collect();
        per_node.iter().collect()
    } else {
        steps.to_vec()
    };
    steps
        .iter()
        .map(|s| {
            line(
                args,
                args.columns
                    .iter()
                    .map(|c| value(c.def.name, s, &ctx))
                    .collect(),
            )
        })
        .collect()
}

fn line(args: &SstatArgs, cells: Vec<String>) -> String {
    let mut out = String::new();
    match args.layout {
        Layout::Columns => {
            for (c, text) in args.columns.iter().zip(cells) {
                out.push_str(&fields::fit(&text, c.width, c.left));
                out.push(' ');
            }
        }
        Layout::Parsable | Layout::Parsable2 => {
            out.push_str(&cells.join("|"));
            if args.layout == Layout::Parsable {
                out.push('|');
            }
        }
    }
    out.push('\n');
    out
}

/// The `--helpformat` text: every field, four to a line.
pub fn helpformat() -> String {
    crate::common::helpformat(FIELDS.iter().map(|d| d.name))
}

/// The `--usage` text.
pub const USAGE: &str = "Usage: sstat [options] -j <job(.stepid)>
";

/// The `--help` text.
pub const HELP: &str = "sstat [<OPTION>] -j <job(.stepid)>
    Valid <OPTION> values are:
      -a, --allsteps:
                   Print all steps for the given job(s) when no step is
                   specified.
      -e, --helpformat:
                   Print a list of fields that can be specified with the
                   '--format' option
      -h, --help:  Print this description of use.
      -i, --pidformat:
                   Predefined format to list the pids running for each
                   job step.  (JobId,Nodes,Pids)
      -j, --jobs:
                   Format is <job(.step)>. Stat this job step
                   or comma-separated list of job steps. This option is
                   required.  The step portion will default to the lowest
                   numbered (not batch, extern, etc) step running if not
                   specified (the batch step if there is none), unless the
                   --allsteps flag is set where not specifying a step will
                   result in all running steps to be displayed.
      -n, --noheader:
                   No header will be added to the beginning of output.
                   The default is to print a header.
      --noconvert: Don't convert units from their original type
                   (e.g. 2048M won't be converted to 2G).
      -o, --format:
                   Comma separated list of fields. (use \"--helpformat\"
                   for a list of available fields).
      -p, --parsable: output will be '|' delimited with a '|' at the end
      -P, --parsable2: output will be '|' delimited without a '|' at the end
      --usage:     Display brief usage message.
      -v, --verbose:
                   Primarily for debugging purposes, report the state of
                   various variables during processing.
      -V, --version: Print version.
";

/// What sstat prints, on stderr, without `-j` (it then exits 1).
pub const NO_JOBS: &str = "sstat: error: You didn't give me any jobs to stat.\n";

/// What sstat prints for a `-j` entry whose job the controller does not
/// know (ended and purged, or never was): for a numbered step nothing
/// (Slurm says "has already completed" only at debug level); for `.batch`
/// and `.extern`, which Slurm finds through the job, that it could not
/// get the job; for a job alone, that it could not get its steps.
pub fn unknown_job(sel: &StepSel) -> String {
    match sel.step {
        Some(StepId::Numbered(_)) => String::new(),
        Some(_) => format!("sstat: error: couldn't get info for job {}\n", sel.job),
        None => format!("sstat: error: couldn't get steps for job {}\n", sel.job),
    }
}

/// Asks the controller for the running steps of the job of `sel`. `Err`
/// is the text to print for a job it does not know or may not show.
fn fetch(client: &client::Client, sel: &StepSel) -> Result<Vec<LiveStepStat>, String> {
    let job = sel.job;
    let req = proto::CtldRequest::StepStat {
        job_id: model::JobId(job),
    };
    match client.call(req) {
        Ok(proto::CtldResponse::StepStats(steps)) => Ok(steps),
        Err(client::ClientError::Refused(proto::SlurmError::InvalidJobId)) => Err(unknown_job(sel)),
        Err(client::ClientError::Refused(e)) => Err(format!(
            "sstat: error: problem getting steps for job {job}: {}\n",
            e.as_slurm_str()
        )),
        Ok(_) => Err("sstat: error: unexpected answer from the controller\n".into()),
        Err(e) => Err(format!("sstat: error: {e}\n")),
    }
}

/// Runs `sstat`. Like Slurm's, it reports a job it cannot stat on stderr
/// and goes on with the next; the exit status is 0 once the jobs were
/// asked about, 1 for bad options, no `-j`, or no controller.
pub fn main(args: Vec<String>) -> i32 {
    common::run(
        || {
            let args = common::parsed(parse_args(&args), |a| {
                common::info_flags(a.help, a.usage, a.version, HELP, USAGE)
            })?;
            if args.helpformat {
                print_stdout(&helpformat());
                return Err(Stop::Exit(0));
            }
            if args.jobs.is_empty() {
                return Err(Stop::Fail(NO_JOBS.to_string()));
            }
            Ok(args)
        },
        |_| client::Client::from_env().map_err(|e| Stop::Fail(format!("sstat: error: {e}\n"))),
        show,
    )
}

/// The header, then each `-j` entry's rows as they come: an entry that
/// fails says so on stderr and the others still print.
fn show(args: &SstatArgs, client: client::Client) -> i32 {
    print_stdout(&render_header(args));
    for sel in &args.jobs {
        let steps = match fetch(&client, sel) {
            Ok(s) => s,
            Err(text) => {
                eprint!("{text}");
                continue;
            }
        };
        match select(sel, args.allsteps, &steps) {
            Ok(rows) => print_stdout(&render_rows(args, &rows)),
            Err(text) => eprint!("{text}"),
        }
    }
    0
}
