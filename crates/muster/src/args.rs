//! muster's own subcommands, defined once with clap: the parser, `--help`,
//! `--version`, the shell completions and the man pages all come from
//! [`Cli`]. The Slurm commands (`muster sbatch ...`) are not here: they
//! keep their getopt parsers (`cli::getopt`), which mimic Slurm's, and are
//! dispatched before clap sees the command line (main.rs).

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `0.0.0 (commit 0123456789ab)`: the release and the commit built from
/// (build.rs; `unknown` outside a git checkout).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MUSTER_GIT_COMMIT"),
    ")"
);

const AFTER_HELP: &str = "\
Slurm commands (also available as `muster <name>`, or by their own names
through the links `muster install-links DIR` makes):
  sbatch srun salloc squeue sinfo scancel scontrol sacct sstat sacctmgr sreport sprio sshare sdiag";

/// A Slurm-compatible workload manager: the controller, the node daemon,
/// a local cluster and the Slurm commands in one program.
#[derive(Debug, Parser)]
#[command(
    name = "muster",
    version = VERSION,
    propagate_version = true,
    after_help = AFTER_HELP,
    disable_help_subcommand = false
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Sub,
}

/// muster's own subcommands.
#[derive(Debug, Subcommand)]
pub enum Sub {
    /// Start a local cluster: a controller and N node daemons on loopback,
    /// as the current user; Ctrl-C stops it
    Up(UpArgs),
    /// Stop a cluster started with `muster up --detach`
    Down(DownArgs),
    /// Make the Slurm command names links to this program in DIR
    InstallLinks(InstallLinksArgs),
    /// Run the controller (slurmctld)
    Ctld(CtldArgs),
    /// Run a node daemon (slurmd)
    Noded(NodedArgs),
    /// Run the REST API daemon (slurmrestd)
    Restd(RestdArgs),
    /// Replay a workload trace through the scheduler with a virtual clock
    Sim(SimArgs),
    /// Why a job waits, in plain words, and when it should start
    Explain(ExplainArgs),
    /// Check slurm.conf (with its Includes), gres.conf, cgroup.conf and
    /// topology.conf; with --diff, compare with the running controller;
    /// with --fabric, with what the nodes see of the network
    CheckConfig(CheckConfigArgs),
    /// Write a new cluster key for AuthType=auth/muster (mode 0600)
    Keygen(KeygenArgs),
    /// Print a shell completion script for muster
    Completions(CompletionsArgs),
    /// Write man pages for muster, its subcommands and the Slurm commands
    Man(ManArgs),
}

/// `muster up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Start the daemons in the background and return once they are up
    #[arg(short = 'd', long)]
    pub detach: bool,
    /// Refuse to start unless jobs can run in cgroups
    #[arg(long)]
    pub confine: bool,
    /// The cluster's directory: slurm.conf, key, state, logs [default:
    /// $MUSTER_STATE_DIR, $XDG_STATE_HOME/muster or ~/.local/state/muster]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// How many node daemons (1 to 64)
    #[arg(short = 'N', long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub nodes: u32,
}

/// `muster down`.
#[derive(Debug, Args)]
pub struct DownArgs {
    /// The directory `muster up` was given
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// `muster install-links`.
#[derive(Debug, Args)]
pub struct InstallLinksArgs {
    /// Where to make the links (created if missing)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `muster ctld`.
#[derive(Debug, Args)]
pub struct CtldArgs {
    /// The slurm.conf to read [default: $SLURM_CONF or /etc/slurm/slurm.conf]
    #[arg(short = 'f', value_name = "slurm.conf")]
    pub conf: Option<PathBuf>,
    /// Stay in the foreground (accepted for slurmctld's sake: it always does)
    #[arg(short = 'D')]
    pub foreground: bool,
    /// Recover the partitions as `scontrol update/create/delete partition` left them, not slurm.conf's (slurmctld -R; jobs and node states are always recovered)
    #[arg(short = 'R')]
    pub recover: bool,
    /// More log output: each -v one level over SlurmctldDebug (MUSTER_LOG overrides)
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// `muster noded`.
#[derive(Debug, Args)]
pub struct NodedArgs {
    /// This node's name in slurm.conf [default: the host name]
    #[arg(short = 'N', value_name = "nodename")]
    pub node_name: Option<String>,
    /// The slurm.conf to read [default: $SLURM_CONF or /etc/slurm/slurm.conf]
    #[arg(short = 'f', value_name = "slurm.conf")]
    pub conf: Option<PathBuf>,
    /// Configless mode: fetch slurm.conf and the files beside it from the
    /// controller at HOST (port 6817 unless given) and run on the copy
    /// cached in SlurmdSpoolDir/conf-cache (the controller needs
    /// SlurmctldParameters=enable_configless) [default: $SLURM_CONF_SERVER]
    #[arg(long, value_name = "HOST[:PORT]")]
    pub conf_server: Option<String>,
    /// With --conf-server: AuthInfo options to sign the fetch with before
    /// slurm.conf is there: key=PATH for auth/muster, else auth/munge
    /// (socket=PATH for munged's socket)
    #[arg(long, value_name = "OPTIONS")]
    pub authinfo: Option<String>,
    /// Stay in the foreground
    #[arg(short = 'D')]
    pub foreground: bool,
    /// More log output: each -v one level over SlurmdDebug (MUSTER_LOG overrides)
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// `muster restd` (also `slurmrestd` through `muster install-links`).
#[derive(Debug, Args)]
#[command(
    long_about = "Serves Slurm's REST API (slurmrestd 22.05's v0.0.38 paths and answers), \
/openapi/v3 and /metrics, acting towards the controller as each authenticated caller. \
rest_auth/jwt takes tokens from `scontrol token` (X-SLURM-USER-TOKEN or Authorization: Bearer); \
rest_auth/local takes the caller's uid from a Unix socket. See docs/rest.md."
)]
pub struct RestdArgs {
    /// The slurm.conf to read [default: $SLURM_CONF or /etc/slurm/slurm.conf]
    #[arg(short = 'f', value_name = "slurm.conf")]
    pub conf: Option<PathBuf>,
    /// rest_auth/jwt or rest_auth/local [default: jwt on TCP, local on a Unix socket]
    #[arg(short = 'a', value_name = "PLUGIN")]
    pub auth: Option<String>,
    /// More log output
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The dashboard trusts this header (set by an authenticating reverse
    /// proxy) to name the user
    #[arg(long = "ui-user-header", value_name = "NAME")]
    pub ui_user_header: Option<String>,
    /// Where to listen: PORT, ADDR:PORT or unix:PATH (several allowed)
    #[arg(value_name = "[ADDR:]PORT|unix:PATH", required = true)]
    pub listen: Vec<String>,
}

/// A trace's form, for `muster sim --format`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TraceFormat {
    /// Standard Workload Format
    Swf,
    /// A sacct export (parsable with its header, or --json)
    Sacct,
}

/// A scheduling policy, for `muster sim --policy`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Policy {
    /// First come, first served (sched/builtin)
    #[value(alias = "builtin")]
    Fcfs,
    /// Textbook EASY backfilling
    Easy,
    /// Slurm's backfill (sched/backfill)
    #[value(alias = "full")]
    Backfill,
}

/// `muster sim`.
#[derive(Debug, Args)]
#[command(
    long_about = "Replays a workload trace through muster's scheduler with a virtual clock and \
reports utilization, waits and slowdown. The trace is a Standard Workload Format file (plain or \
.gz) or job history exported from muster's accounting: `sacct -a -X -P -o \
JobIDRaw,Submit,Start,End,NCPUS,NNodes,Timelimit,User,Account,Partition,NodeList` or `sacct -a \
-X --json` (recognized by their first line)."
)]
pub struct SimArgs {
    /// The trace
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// The trace's form [default: recognized]
    #[arg(long, value_name = "F")]
    pub format: Option<TraceFormat>,
    /// slurm.conf to take the scheduler settings from (and the nodes, if it
    /// has any; else the trace's machine is used)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override SchedulerType
    #[arg(long, value_name = "P", ignore_case = true)]
    pub policy: Option<Policy>,
    /// Print the summary as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Write one line per job (id,submit,start,end,procs,nodes)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write a picture: utilization, queue length, wait times
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Only the first N jobs of the trace
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Report malformed trace lines and go on (default: refuse)
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// No progress bar
    #[arg(long)]
    pub quiet: bool,
    /// A topology.conf naming the nodes (n1..nN for a trace's machine):
    /// jobs are placed by it (SwitchName= lines: topology/tree; BlockName=
    /// lines: topology/block), and the report says how many switches
    /// (blocks) multi-node jobs spanned and how many were fragmented
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// With --topology: place jobs as without one, and report against it
    #[arg(long, requires = "topology")]
    pub topology_report_only: bool,
    /// Run through the controller's engine, as every run with --config or
    /// --topology does (slower, the same schedule); by default a trace's
    /// own machine takes a loop of its own where that is exact
    /// (docs/simulator.md)
    #[arg(long)]
    pub engine: bool,
}

impl SimArgs {
    /// The simulator's own options.
    pub fn to_sim(&self) -> sim::Args {
        sim::Args {
            trace: self.trace.clone(),
            format: self.format.map(|f| match f {
                TraceFormat::Swf => sim::Format::Swf,
                TraceFormat::Sacct => sim::Format::Sacct,
            }),
            config: self.config.clone(),
            policy: self.policy.map(|p| {
                let name = match p {
                    Policy::Fcfs => "fcfs",
                    Policy::Easy => "easy",
                    Policy::Backfill => "backfill",
                };
                sim::parse_policy(name).expect("the simulator knows fcfs, easy and backfill")
            }),
            json: self.json,
            csv: self.csv.clone(),
            svg: self.svg.clone(),
            limit: self.limit,
            skip_bad_lines: self.skip_bad_lines,
            quiet: self.quiet,
            topology: self.topology.clone(),
            topology_report_only: self.topology_report_only,
            engine: self.engine,
        }
    }
}

/// `muster explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The job
    #[arg(value_name = "JOBID")]
    pub job_id: String,
}

/// `muster check-config`.
#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// The slurm.conf to check [default: $SLURM_CONF, /etc/slurm/slurm.conf
    /// or the local cluster's]; gres.conf, cgroup.conf and topology.conf
    /// beside it are checked too
    #[arg(short = 'f', long = "file", value_name = "slurm.conf")]
    pub file: Option<PathBuf>,
    /// Compare with the configuration the running controller uses, and say
    /// which changes `scontrol reconfigure` applies and which need a restart
    #[arg(long)]
    pub diff: bool,
    /// Compare what the running node daemons report of the network fabric
    /// (MusterTopologyProbe, LLDP, InfiniBand) with topology.conf
    #[arg(long)]
    pub fabric: bool,
}

/// `muster keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write the key [default: AuthInfo's key= in slurm.conf, else
    /// /etc/slurm/muster.key]
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// The slurm.conf to read AuthInfo and SlurmUser from [default:
    /// $SLURM_CONF or /etc/slurm/slurm.conf, where it exists]
    #[arg(short = 'f', long = "conf", value_name = "slurm.conf")]
    pub conf: Option<PathBuf>,
    /// Who owns the key [default: SlurmUser in slurm.conf, else the caller]
    #[arg(long, value_name = "USER")]
    pub owner: Option<String>,
    /// Replace an existing key (every daemon must then be restarted)
    #[arg(long)]
    pub force: bool,
}

/// `muster completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `muster man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Where to write the pages (created if missing)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// The whole command tree, for completions and man pages.
pub fn command() -> clap::Command {
    Cli::command()
}

#[cfg(test)]
mod tests;
