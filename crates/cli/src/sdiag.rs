//! `sdiag`: the controller's statistics as Slurm 22.05's sdiag(1) prints
//! them, and `sdiag --reset`.
//!
//! ```text
//! args --parse_args--> SdiagArgs --+
//!                                  +--render()--> text (pure)
//! controller --Diag--> DiagStats --+
//! ```

use crate::common;
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use proto::diag::{mean, DiagStats, RpcTypeStat, RpcUserStat};
use std::fmt::Write as _;

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("all", Some('a'), Arg::None),
    opt("cluster", Some('M'), Arg::Required),
    opt("help", Some('h'), Arg::None),
    opt("reset", Some('r'), Arg::None),
    opt("sort-by-id", Some('i'), Arg::None),
    opt("sort-by-time", Some('t'), Arg::None),
    opt("sort-by-time2", Some('T'), Arg::None),
    opt("usage", None, Arg::None),
    opt("version", Some('V'), Arg::None),
];

const USAGE: &str = "Usage: sdiag [-M cluster] [-aritT]\n";

const HELP: &str = "\
Usage: sdiag [OPTIONS]
  -a, --all           all statistics
  -M, --cluster       direct the request to a specific cluster (accepted)
  -r, --reset         reset statistics
  -i, --sort-by-id    sort RPCs by id
  -t, --sort-by-time  sort RPCs by total run time
  -T, --sort-by-time2 sort RPCs by average run time
  -V, --version       display current version number

Help options:
  --help              show this help message
  --usage             display brief usage message
";

/// How the RPC tables are sorted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RpcOrder {
    /// Most calls first (the default).
    #[default]
    Count,
    /// `-i`: by message type number (by uid for users).
    Id,
    /// `-t`: most total time first.
    TotalTime,
    /// `-T`: most average time first.
    AveTime,
}

/// sdiag's options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SdiagArgs {
    /// `-r`.
    pub reset: bool,
    /// `-i`, `-t`, `-T`.
    pub order: RpcOrder,
    /// `--help`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`.
    pub version: bool,
}

/// Parses sdiag's command line.
pub fn parse_args(args: &[String]) -> Result<SdiagArgs, String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| common::usage_error("sdiag", &e.message()))?;
    let mut a = SdiagArgs::default();
    for item in items {
        match item {
            Item::Opt(name, _) => match name {
                "reset" => a.reset = true,
                "sort-by-id" => a.order = RpcOrder::Id,
                "sort-by-time" => a.order = RpcOrder::TotalTime,
                "sort-by-time2" => a.order = RpcOrder::AveTime,
                "help" => a.help = true,
                "usage" => a.usage = true,
                "version" => a.version = true,
                _ => {}
            },
            Item::Positional(p) => {
                return Err(common::usage_error(
                    "sdiag",
                    &format!("unrecognized argument '{p}'"),
                ))
            }
        }
    }
    Ok(a)
}

/// `Wed Dec 02 10:24:13 2026 (1796207053)`, or `N/A (0)` for never.
fn when(ts: i64) -> String {
    if ts == 0 {
        return "N/A (0)".into();
    }
    format!("{} ({ts})", common::fmt_banner(ts))
}

/// sdiag's text for `s`; `latency_us`: what 1000 reads of the clock took
/// here (sdiag measures it on the host it runs on).
pub fn render(s: &DiagStats, latency_us: u64, order: RpcOrder) -> String {
    let mut o = String::new();
    let stars = "*".repeat(55);
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "sdiag output at {}", when(s.req_time));
    let _ = writeln!(o, "Data since      {}", when(s.req_time_start));
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "Server thread count:  {}", s.server_thread_count);
    let _ = writeln!(o, "Agent queue size:     {}", s.agent_queue_size);
    let _ = writeln!(o, "Agent count:          {}", s.agent_count);
    let _ = writeln!(o, "Agent thread count:   {}", s.agent_thread_count);
    let _ = writeln!(o, "DBD Agent queue size: {}", s.dbd_agent_queue_size);
    let _ = writeln!(o);
    let _ = writeln!(o, "Jobs submitted: {}", s.jobs_submitted);
    let _ = writeln!(o, "Jobs started:   {}", s.jobs_started);
    let _ = writeln!(o, "Jobs completed: {}", s.jobs_completed);
    let _ = writeln!(o, "Jobs canceled:  {}", s.jobs_canceled);
    let _ = writeln!(o, "Jobs failed:    {}", s.jobs_failed);
    let _ = writeln!(o);
    let _ = writeln!(o, "Job states ts:  {}", when(s.job_states_ts));
    let _ = writeln!(o, "Jobs pending:   {}", s.jobs_pending);
    let _ = writeln!(o, "Jobs running:   {}", s.jobs_running);
    let _ = writeln!(o);
    let m = &s.schedule;
    let cycles = u64::from(m.total_cycles);
    let _ = writeln!(o, "Main schedule statistics (microseconds):");
    let _ = writeln!(o, "\tLast cycle:   {}", m.last_cycle);
    let _ = writeln!(o, "\tMax cycle:    {}", m.max_cycle);
    let _ = writeln!(o, "\tTotal cycles: {}", m.total_cycles);
    if cycles > 0 {
        let _ = writeln!(o, "\tMean cycle:   {}", mean(m.cycle_sum, cycles));
        let _ = writeln!(o, "\tMean depth cycle:  {}", mean(m.depth_sum, cycles));
    }
    let elapsed = s.req_time - s.req_time_start;
    if elapsed > 60 {
        let per_minute = mean(cycles, (elapsed / 60) as u64);
        let _ = writeln!(o, "\tCycles per minute: {per_minute}");
    }
    let _ = writeln!(o, "\tLast queue length: {}", m.last_queue_length);
    let _ = writeln!(o);
    let b = &s.backfill;
    let bf = u64::from(b.total_cycles);
    let _ = writeln!(o, "Backfilling stats");
    let _ = writeln!(
        o,
        "\tTotal backfilled jobs (since last slurm start): {}",
        b.backfilled_jobs
    );
    let _ = writeln!(
        o,
        "\tTotal backfilled jobs (since last stats cycle start): {}",
        b.last_backfilled_jobs
    );
    let _ = writeln!(o, "\tTotal backfilled heterogeneous job components: 0");
    let _ = writeln!(o, "\tTotal cycles: {}", b.total_cycles);
    let _ = writeln!(o, "\tLast cycle when: {}", when(b.last_cycle_when));
    let _ = writeln!(o, "\tLast cycle: {}", b.last_cycle);
    let _ = writeln!(o, "\tMax cycle:  {}", b.max_cycle);
    if bf > 0 {
        let _ = writeln!(o, "\tMean cycle: {}", mean(b.cycle_sum, bf));
    }
    let _ = writeln!(o, "\tLast depth cycle: {}", b.last_depth);
    let _ = writeln!(o, "\tLast depth cycle (try sched): {}", b.last_depth);
    if bf > 0 {
        let _ = writeln!(o, "\tDepth Mean: {}", mean(b.depth_sum, bf));
        let _ = writeln!(o, "\tDepth Mean (try depth): {}", mean(b.depth_sum, bf));
    }
    let _ = writeln!(o, "\tLast queue length: {}", b.last_queue_length);
    if bf > 0 {
        let _ = writeln!(o, "\tQueue length mean: {}", mean(b.queue_length_sum, bf));
    }
    let _ = writeln!(o, "\tLast table size: {}", b.table_size);
    if bf > 0 {
        let _ = writeln!(o, "\tMean table size: {}", b.table_size);
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Latency for 1000 calls to gettimeofday(): {latency_us} microseconds"
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "Remote Procedure Call statistics by message type");
    for r in sorted_types(&s.rpc_by_type, order) {
        let _ = writeln!(
            o,
            "\t{:<40}({:>5}) count:{:<6} ave_time:{:<6} total_time:{}",
            r.name,
            r.id,
            r.count,
            mean(r.total_time, u64::from(r.count)),
            r.total_time
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Remote Procedure Call statistics by user");
    for r in sorted_users(&s.rpc_by_user, order) {
        let _ = writeln!(
            o,
            "\t{:<16}({:>8}) count:{:<6} ave_time:{:<6} total_time:{}",
            r.user,
            r.uid,
            r.count,
            mean(r.total_time, u64::from(r.count)),
            r.total_time
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Pending RPC statistics");
    let _ = writeln!(o, "\tNo pending RPCs");
    o
}

/// The controller sends most calls first; the other orders are sdiag's.
fn sorted_types(rows: &[RpcTypeStat], order: RpcOrder) -> Vec<&RpcTypeStat> {
    let mut v: Vec<&RpcTypeStat> = rows.iter().collect();
    match order {
        RpcOrder::Count => {}
        RpcOrder::Id => v.sort_by_key(|r| r.id),
        RpcOrder::TotalTime => v.sort_by_key(|r| std::cmp::Reverse(r.total_time)),
        RpcOrder::AveTime => {
            v.sort_by_key(|r| std::cmp::Reverse(mean(r.total_time, u64::from(r.count))))
        }
    }
    v
}

fn sorted_users(rows: &[RpcUserStat], order: RpcOrder) -> Vec<&RpcUserStat> {
    let mut v: Vec<&RpcUserStat> = rows.iter().collect();
    match order {
        RpcOrder::Count => {}
        RpcOrder::Id => v.sort_by_key(|r| r.uid),
        RpcOrder::TotalTime => v.sort_by_key(|r| std::cmp::Reverse(r.total_time)),
        RpcOrder::AveTime => {
            v.sort_by_key(|r| std::cmp::Reverse(mean(r.total_time, u64::from(r.count))))
        }
    }
    v
}

/// What 1000 reads of the clock take here, µs.
fn clock_latency() -> u64 {
    let start = std::time::Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(std::time::SystemTime::now());
    }
    start.elapsed().as_micros() as u64
}

/// Runs `sdiag`.
pub fn main(args: Vec<String>) -> i32 {
    common::run(
        || {
            common::parsed(parse_args(&args), |a| {
                common::info_flags(a.help, a.usage, a.version, HELP, USAGE)
            })
        },
        |a| {
            // Slurm's sdiag names the library call that failed
            // (`slurm_reset_statistics: Access/permission denied`).
            let call = if a.reset {
                "slurm_reset_statistics"
            } else {
                "slurm_get_statistics"
            };
            let fail = |e: &dyn std::fmt::Display| common::Stop::Fail(format!("{call}: {e}\n"));
            let client = client::Client::from_env().map_err(|e| fail(&e))?;
            match client.call(proto::CtldRequest::Diag { reset: a.reset }) {
                Ok(proto::CtldResponse::Diag(stats)) if !a.reset => Ok(Some(*stats)),
                Ok(proto::CtldResponse::Ok) if a.reset => Ok(None),
                Ok(_) => Err(fail(&"Unexpected message received")),
                Err(e) => Err(fail(&e)),
            }
        },
        |a, answer| match answer {
            Some(stats) => common::finish(Ok(render(&stats, clock_latency(), a.order))),
            None => common::finish(Ok("Reset scheduling statistics\n".into())),
        },
    )
}
