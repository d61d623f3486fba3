//! `muster sim`: replays a workload trace through the controller's own
//! engine and scheduler with a virtual clock, far faster than real time,
//! and reports how the schedule went.
//!
//! - `swf`: Standard Workload Format traces (plain or gzip) to normalized jobs.
//! - `driver`: the virtual clock around `engine::Engine` (no simulator-only
//!   scheduler: the same `schedule` the controller runs).
//! - `fast`: `--policy fcfs`, `easy` and the default policy on a trace's
//!   own machine, in a loop of their own that gives the engine's schedule
//!   to the digit (`--engine` runs them through `driver` instead).
//! - `report`: summary, per-job CSV, SVG picture.
//!
//! Only `main` and `read_trace` touch files, the clock and the terminal.
#![warn(missing_docs)]

pub mod driver;
pub mod fast;
pub mod report;
pub mod sacct;
pub mod swf;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fast;

use anyhow::Context;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

const USAGE: &str = "\
Usage: muster sim --trace FILE [options]

Replays a workload trace through muster's scheduler with a virtual clock and
reports utilization, waits and slowdown. The trace is a Standard Workload
Format file (plain or .gz) or job history exported from muster's accounting:
  sacct -a -X -P -o JobIDRaw,Submit,Start,End,NCPUS,NNodes,Timelimit,User,Account,Partition,NodeList
or `sacct -a -X --json` (recognized by their first line).

Options:
  --trace FILE        the trace (required)
  --format F          swf | sacct: the trace's form (default: recognized)
  --config FILE       slurm.conf to take the scheduler settings from (and the
                      nodes, if it has any; else the trace's machine is used)
  --policy P          fcfs | easy | backfill: override SchedulerType
  --json              print the summary as one JSON object
  --csv FILE          write one line per job (id,submit,start,end,procs,nodes)
  --svg FILE          write a picture: utilization, queue length, wait times
  --limit N           only the first N jobs of the trace
  --topology FILE     a topology.conf (SwitchName= lines: topology/tree;
                      BlockName= lines: topology/block) naming the nodes
                      (n1..nN for a trace's machine): jobs are placed by it,
                      and the report says how many switches (blocks) the
                      multi-node jobs spanned and how many were fragmented
  --topology-report-only
                      with --topology: place jobs as without one, and
                      report against it (the comparison)
  --skip-bad-lines    report malformed trace lines and go on (default: refuse)
  --engine            run through the controller's engine as every run with
                      --config or --topology does (slower, the same
                      schedule); without it a trace's own machine takes a
                      loop of its own where that is exact (docs/simulator.md)
  --quiet             no progress bar
";

/// Options of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    /// `--trace`.
    pub trace: PathBuf,
    /// `--format`: None recognizes the form from the text.
    pub format: Option<Format>,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--policy`.
    pub policy: Option<sched::Policy>,
    /// `--json`.
    pub json: bool,
    /// `--csv`.
    pub csv: Option<PathBuf>,
    /// `--svg`.
    pub svg: Option<PathBuf>,
    /// `--limit`.
    pub limit: Option<usize>,
    /// `--skip-bad-lines`.
    pub skip_bad_lines: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// `--topology`.
    pub topology: Option<PathBuf>,
    /// `--topology-report-only`: `topology` for the report alone.
    pub topology_report_only: bool,
    /// `--engine`: through the engine always, never `fast`'s loop.
    pub engine: bool,
}

/// A trace's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Standard Workload Format.
    Swf,
    /// A sacct export (parsable with its header, or `--json`).
    Sacct,
}

/// Reads a trace in `format` (None: a sacct export when it looks like
/// one, else SWF).
pub fn parse_trace(
    text: &str,
    format: Option<Format>,
    bad: swf::BadLines,
) -> Result<swf::Trace, swf::TraceError> {
    match format.unwrap_or(if sacct::looks_like_sacct(text) {
        Format::Sacct
    } else {
        Format::Swf
    }) {
        Format::Swf => swf::parse(text, bad),
        Format::Sacct => sacct::parse(text, bad),
    }
}

/// `fcfs`, `easy` or `backfill`.
pub fn parse_policy(text: &str) -> Option<sched::Policy> {
    match text.to_ascii_lowercase().as_str() {
        "fcfs" | "builtin" => Some(sched::Policy::Fcfs),
        "easy" => Some(sched::Policy::Easy),
        "backfill" | "full" => Some(sched::Policy::Backfill),
        _ => None,
    }
}

/// A command line of `--key value` and `--key=value` options, read one
/// option at a time (`muster sim`'s, and `refsched`'s).
pub struct Options<'a> {
    args: std::slice::Iter<'a, String>,
    /// The value given after `=` with the current option.
    inline: Option<String>,
}

impl<'a> Options<'a> {
    /// Reads `args` (without the program and subcommand names).
    pub fn new(args: &'a [String]) -> Options<'a> {
        Options {
            args: args.iter(),
            inline: None,
        }
    }

    /// The next option's name (without its `=value`, kept for `value`).
    pub fn next_key(&mut self) -> Option<&'a str> {
        let arg = self.args.next()?;
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        self.inline = inline;
        Some(key)
    }

    /// The current option's value: the one after `=`, else the next
    /// argument; `name` is the option, for the error.
    pub fn value(&mut self, name: &str) -> Result<String, String> {
        self.inline
            .clone()
            .or_else(|| self.args.next().cloned())
            .ok_or_else(|| format!("{name} needs a value"))
    }
}

/// `--limit`'s value: a number of jobs.
pub fn limit(v: &str) -> Result<usize, String> {
    v.parse()
        .map_err(|_| format!("--limit {v:?}: expected a number of jobs"))
}

/// Parses the command line (`--key value` or `--key=value`).
pub fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let mut a = Args::default();
    let mut trace = None;
    let mut opts = Options::new(args);
    while let Some(key) = opts.next_key() {
        let mut value = |name: &str| opts.value(name);
        match key {
            "-h" | "--help" => return Ok(None),
            "--trace" => trace = Some(PathBuf::from(value("--trace")?)),
            "--config" => a.config = Some(PathBuf::from(value("--config")?)),
            "--format" => {
                let v = value("--format")?;
                a.format = Some(match v.to_ascii_lowercase().as_str() {
                    "swf" => Format::Swf,
                    "sacct" => Format::Sacct,
                    _ => return Err(format!("unknown format {v:?}: expected swf or sacct")),
                });
            }
            "--policy" => {
                let v = value("--policy")?;
                a.policy = Some(parse_policy(&v).ok_or_else(|| {
                    format!("unknown policy {v:?}: expected fcfs, easy or backfill")
                })?);
            }
            "--json" => a.json = true,
            "--csv" => a.csv = Some(PathBuf::from(value("--csv")?)),
            "--svg" => a.svg = Some(PathBuf::from(value("--svg")?)),
            "--limit" => a.limit = Some(limit(&value("--limit")?)?),
            "--topology" => a.topology = Some(PathBuf::from(value("--topology")?)),
            "--topology-report-only" => a.topology_report_only = true,
            "--skip-bad-lines" => a.skip_bad_lines = true,
            "--engine" => a.engine = true,
            "--quiet" | "-q" => a.quiet = true,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    a.trace = trace.ok_or("--trace FILE is required")?;
    Ok(Some(a))
}

/// Reads a trace file, gunzipping it when it starts with gzip's magic.
pub fn read_trace(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        // Room for the whole text at once, from the size the gzip trailer
        // gives (of its last member, modulo 4 GiB: a hint): a string grown
        // by doubling copies itself into fresh pages each time.
        let hint = bytes
            .last_chunk::<4>()
            .map_or(0, |b| u32::from_le_bytes(*b) as usize);
        let mut text = Vec::with_capacity(hint.max(bytes.len() * 4) + 1);
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_end(&mut text)
            .with_context(|| format!("decompressing {}", path.display()))?;
        String::from_utf8(text).with_context(|| format!("{} is not text", path.display()))
    } else {
        String::from_utf8(bytes).with_context(|| format!("{} is not text", path.display()))
    }
}

/// The configuration to simulate: the user's slurm.conf when it has nodes,
/// else the trace's machine with the user's scheduler settings.
pub fn build_config(
    machine: &swf::Machine,
    user: Option<&conf::Config>,
) -> anyhow::Result<conf::Config> {
    let mut cfg = match user {
        Some(c) if !c.nodes.is_empty() => c.clone(),
        _ => {
            let text = driver::machine_conf(machine, "");
            let mut cfg = conf::parse_str(&text, Path::new("sim.conf"), &mut |_| {
                Err(std::io::Error::other("no includes"))
            })
            .context("the machine's configuration")?
            .config;
            if let Some(u) = user {
                cfg.scheduler_type = u.scheduler_type.clone();
                cfg.scheduler_params = u.scheduler_params.clone();
                cfg.other.extend(u.other.clone());
            }
            cfg
        }
    };
    driver::simulation_ready(&mut cfg);
    Ok(cfg)
}

/// The slurm.conf given with `--config`. A file with only the settings to
/// try (say `SchedulerParameters=...` and the priority weights) is enough:
/// the keys a controller needs and a simulation does not (ClusterName,
/// SlurmctldHost) get placeholders when the file names neither itself nor
/// an included file.
fn load_config(path: &Path) -> anyhow::Result<conf::Config> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut extra = String::new();
    if !has_key(&text, "include") {
        for (key, placeholder) in [("ClusterName", "sim"), ("SlurmctldHost", "localhost")] {
            if !has_key(&text, key) {
                extra.push_str(&format!("\n{key}={placeholder}\n"));
            }
        }
    }
    if extra.is_empty() {
        return Ok(conf::load(path).map_err(|e| anyhow::anyhow!("{e}"))?.config);
    }
    let mut read = |p: &Path| std::fs::read_to_string(p);
    let loaded =
        conf::parse_str(&(text + &extra), path, &mut read).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(loaded.config)
}

/// The site programs a slurm.conf names that the simulator does not run
/// (it starts no processes: the engine's `simulated` mode emits no
/// script commands), one line each: jobs go on as if each succeeded.
pub fn programs_not_run(cfg: &conf::Config) -> Vec<String> {
    ["PrologSlurmctld", "EpilogSlurmctld", "Prolog", "Epilog"]
        .iter()
        .filter(|k| {
            cfg.other
                .get(&k.to_ascii_lowercase())
                .is_some_and(|(_, v)| !v.trim().is_empty())
        })
        .map(|k| format!("{k} is not run in a simulation: jobs go on as if it succeeded"))
        .collect()
}

/// Whether a line of slurm.conf text sets `key` (or, for `include`, starts
/// with it), case-insensitively as slurm.conf's keys are.
fn has_key(text: &str, key: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        line.len() > key.len()
            && line.is_char_boundary(key.len())
            && line[..key.len()].eq_ignore_ascii_case(key)
            && matches!(line.as_bytes()[key.len()], b'=' | b' ' | b'\t')
    })
}

/// Runs a simulation as the command line asks; the whole command.
pub fn run(args: &Args) -> anyhow::Result<String> {
    let text = read_trace(&args.trace)?;
    let bad = if args.skip_bad_lines {
        swf::BadLines::Skip
    } else {
        swf::BadLines::Reject
    };
    let mut trace = parse_trace(&text, args.format, bad)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.trace.display()))?;
    for e in &trace.skipped {
        eprintln!("muster sim: {}: skipped {e}", args.trace.display());
    }
    if let Some(n) = args.limit {
        trace.jobs.truncate(n);
    }
    let user = match &args.config {
        Some(p) => Some(load_config(p)?),
        None => None,
    };
    let mut cfg = build_config(&trace.machine, user.as_ref())?;
    for line in programs_not_run(&cfg) {
        eprintln!("muster sim: {line}");
    }
    if let Some(p) = &args.topology {
        with_topology(&mut cfg, p, !args.topology_report_only)?;
    }
    let mut sched = engine::sched_config(&cfg);
    if let Some(p) = args.policy {
        sched.policy = p;
        if p != sched::Policy::Backfill {
            // The reference policies plan to the second, and FCFS tries
            // every job up to the first blocked one at every pass (not
            // `default_queue_depth`'s first hundred, whose rest Slurm
            // tries a `sched_interval` later), as the textbook.
            sched.bf_resolution = 1;
            sched.default_queue_depth = u32::MAX;
        }
    }
    let procs: u64 = cfg.nodes.iter().map(|n| u64::from(n.cpus)).sum();
    let tty = !args.quiet && std::io::stderr().is_terminal();
    let mut last_shown = 0usize;
    let mut progress = |done: usize, total: usize| {
        if tty && (done - last_shown >= total / 200 || done == total) {
            last_shown = done;
            let frac = done as f64 / total.max(1) as f64;
            let filled = (frac * 40.0) as usize;
            let bar = format!("{}{}", "#".repeat(filled), "-".repeat(40 - filled));
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r[{bar}] {:>5.1}% {done}/{total} jobs", frac * 100.0);
            if done == total {
                let _ = writeln!(err);
            }
        }
    };
    let started = std::time::Instant::now();
    let out = if fast_path(args, &trace) && fast::supports(&sched) {
        let cpus: Vec<u32> = cfg.nodes.iter().map(|n| n.cpus).collect();
        fast::simulate(
            &trace,
            &cpus,
            sched.policy,
            args.csv.is_some(),
            &mut progress,
        )
    } else {
        driver::simulate(&trace, &cfg, sched.clone(), false, &mut progress)
    };
    let secs = started.elapsed().as_secs_f64();
    for (id, why) in &out.refused {
        eprintln!("muster sim: job {id} refused: {why}");
    }
    let summary = report::summarize(&out.records, procs, out.passes, secs);
    if let Some(p) = &args.csv {
        let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
        std::fs::write(p, report::csv(&out.records, &names))
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &args.svg {
        let title = format!(
            "{} - {:?}, {} nodes x {} CPUs, {} jobs",
            args.trace.file_name().map_or_else(
                || args.trace.display().to_string(),
                |f| f.to_string_lossy().into_owned()
            ),
            sched.policy,
            cfg.nodes.len(),
            cfg.nodes.first().map_or(0, |n| n.cpus),
            summary.jobs
        );
        std::fs::write(
            p,
            report::svg(
                &title,
                &out.records,
                &out.samples,
                procs,
                trace.unix_start.map(|u| u + trace.shift),
            ),
        )
        .with_context(|| format!("writing {}", p.display()))?;
    }
    let topo = cfg
        .topology
        .as_ref()
        .map(|t| topology_report(&out.records, &cfg, t));
    Ok(match (args.json, topo) {
        (true, None) => format!("{}\n", summary.json()),
        (true, Some(t)) => {
            let mut v: serde_json::Value = serde_json::from_str(&summary.json())?;
            v["topology"] = t.json();
            format!("{v}\n")
        }
        (false, None) => summary.text(),
        (false, Some(t)) => summary.text() + &t.text(),
    })
}

/// Whether this run takes `fast`'s loop: the trace's own machine (no
/// `--config`, no `--topology`, no `--engine`), with no job the loop
/// leaves to the engine (`fast::ineligible`); `run` checks the settings
/// too (`fast::supports`).
pub fn fast_path(args: &Args, trace: &swf::Trace) -> bool {
    may_take_fast_path(args) && fast::ineligible(trace).is_none()
}

/// Whether the options allow `fast`'s loop (the trace decides the rest:
/// `fast_path`).
pub fn may_take_fast_path(args: &Args) -> bool {
    args.config.is_none() && args.topology.is_none() && !args.engine
}

/// Reads `path` (topology.conf) into `cfg`, with the plugin its lines are
/// for where jobs are to be `place`d by it (else the report alone reads
/// it); unknown keys and nodes are warned on stderr.
fn with_topology(cfg: &mut conf::Config, path: &Path, place: bool) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (topo, warnings) =
        conf::parse_topology_conf(&text, path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let names: std::collections::BTreeSet<&str> =
        cfg.nodes.iter().map(|n| n.name.as_str()).collect();
    for w in warnings
        .iter()
        .chain(&conf::check_topology_nodes(&topo, &names, path))
    {
        eprintln!("muster sim: {w}");
    }
    let plugin = if topo.blocks.is_empty() {
        "topology/tree"
    } else {
        "topology/block"
    };
    if place {
        cfg.other.insert(
            "topologyplugin".into(),
            ("TopologyPlugin".into(), plugin.into()),
        );
    }
    cfg.topology = Some(topo);
    Ok(())
}

/// The placement report of a run with a topology.
fn topology_report(
    records: &[driver::JobRecord],
    cfg: &conf::Config,
    topo: &conf::TopologyConf,
) -> report::TopoReport {
    let leaves: Vec<&Vec<String>> = if topo.blocks.is_empty() {
        topo.switches.iter().map(|s| &s.nodes).collect()
    } else {
        topo.blocks.iter().map(|b| &b.nodes).collect()
    };
    let mut by_name: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    for (k, nodes) in leaves.iter().enumerate() {
        for n in nodes.iter() {
            by_name.entry(n.as_str()).or_insert(k as u32);
        }
    }
    let leaf_of: Vec<Option<u32>> = cfg
        .nodes
        .iter()
        .map(|n| by_name.get(n.name.as_str()).copied())
        .collect();
    let largest = leaves.iter().map(|l| l.len()).max().unwrap_or(1);
    let unit = if topo.blocks.is_empty() {
        "switches"
    } else {
        "blocks"
    };
    report::topology(records, &leaf_of, largest, unit)
}

/// `muster sim ...`: the exit status.
pub fn main(args: Vec<String>) -> i32 {
    let parsed = match parse_args(&args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("muster sim: {e}\n");
            eprint!("{USAGE}");
            return 1;
        }
    };
    match run(&parsed) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            eprintln!("muster sim: {e:#}");
            1
        }
    }
}
