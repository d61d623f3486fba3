//! `muster-bench hostile`: the latency of real `squeue` and `sbatch`
//! (processes, as a user runs them) on a quiet cluster, then under a storm
//! of connections without a credential against the controller and the
//! first node daemon (`e2e::storm`: idle ones, two bytes of a length
//! prefix, half a frame, and a set reopened as fast as the daemon closes
//! them; issue 34). Prints one `key=value` line per phase. Measured, never
//! asserted: a failed command is counted, and its time kept with the others.

use anyhow::{bail, Context};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one phase measured.
struct Phase {
    squeue: Vec<Duration>,
    sbatch: Vec<Duration>,
    failed: usize,
}

fn pct(sorted: &[Duration], p: usize) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) * p + 50) / 100;
    sorted[i].as_secs_f64() * 1000.0
}

fn summary(name: &str, v: &mut [Duration]) -> String {
    v.sort();
    let over = v
        .iter()
        .filter(|d| **d > Duration::from_millis(100))
        .count();
    format!(
        "{name}_p50_ms={:.1} {name}_p90_ms={:.1} {name}_max_ms={:.1} {name}_over_100ms={over}",
        pct(v, 50),
        pct(v, 90),
        pct(v, 100),
    )
}

/// Runs `muster <args>` with `SLURM_CONF`: its time, and whether it
/// succeeded (a failure's message goes to stderr).
fn timed(muster: &Path, conf: &Path, args: &[&str]) -> (Duration, bool) {
    let t = Instant::now();
    let out = Command::new(muster)
        .args(args)
        .env("SLURM_CONF", conf)
        .stdin(Stdio::null())
        .output();
    let took = t.elapsed();
    let ok = match out {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            eprintln!(
                "muster-bench hostile: `{}` failed after {took:?}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            );
            false
        }
        Err(e) => {
            eprintln!("muster-bench hostile: cannot run {}: {e}", muster.display());
            false
        }
    };
    (took, ok)
}

/// One round: squeue then sbatch. A failed call's time counts too (a
/// command that gave up after a minute is the stall this measures). A
/// call over 100 ms is named on stderr with when it started, counted from
/// `since` (the storm's start), to tell the storm's opening burst from
/// its steady state.
fn round(muster: &Path, conf: &Path, ph: &mut Phase, since: Instant) {
    for (args, times) in [
        (&["squeue"][..], &mut ph.squeue),
        (&["sbatch", "--wrap", "true"][..], &mut ph.sbatch),
    ] {
        let at = since.elapsed();
        let (d, ok) = timed(muster, conf, args);
        if d > Duration::from_millis(100) {
            eprintln!(
                "muster-bench hostile: `{}` took {:.1} ms, started at +{:.3} s",
                args.join(" "),
                d.as_secs_f64() * 1000.0,
                at.as_secs_f64()
            );
        }
        times.push(d);
        ph.failed += usize::from(!ok);
    }
}

fn rounds(muster: &Path, conf: &Path, n: usize) -> Phase {
    let mut ph = Phase {
        squeue: Vec::new(),
        sbatch: Vec::new(),
        failed: 0,
    };
    let since = Instant::now();
    for _ in 0..n {
        round(muster, conf, &mut ph, since);
    }
    ph
}

fn print(name: &str, mut ph: Phase, extra: &str) {
    println!(
        "hostile phase={name} {} {} failed={}{extra}",
        summary("squeue", &mut ph.squeue),
        summary("sbatch", &mut ph.sbatch),
        ph.failed
    );
}

/// `muster-bench hostile -f slurm.conf --muster PATH [--count ROUNDS]
/// [--held N] [--cycling N] [--storm-cpu CPU]`.
pub fn cmd_hostile(
    conf_path: &Path,
    muster: &Path,
    n_rounds: usize,
    held: usize,
    cycling: usize,
    storm_cpu: Option<usize>,
) -> anyhow::Result<()> {
    let cfg = conf::load(conf_path)
        .with_context(|| format!("reading {}", conf_path.display()))?
        .config;
    let ctld_host = cfg
        .slurmctld_host
        .first()
        .map(|h| h.addr.clone().unwrap_or_else(|| h.name.clone()))
        .context("no SlurmctldHost")?;
    let ctld = format!("{ctld_host}:{}", cfg.slurmctld_port);
    let Some(node) = cfg.nodes.first() else {
        bail!("no node in {}", conf_path.display());
    };
    let node = format!("{}:{}", node.addr, node.port.unwrap_or(cfg.slurmd_port));
    let limit = e2e::storm::raise_open_file_limit();
    println!("hostile controller={ctld} node={node} open_file_limit={limit}");

    print("quiet", rounds(muster, conf_path, n_rounds), "");

    // Nine tenths of the storm on the controller, the rest on the node.
    let plan = |share: usize, of: usize| e2e::storm::StormPlan {
        held: held * share / of,
        held_threads: 2,
        cycling: cycling * share / of,
        cpu: storm_cpu,
    };
    let on_ctld = e2e::storm::Storm::start(&ctld, plan(9, 10));
    let on_node = e2e::storm::Storm::start(&node, plan(1, 10));
    // The rounds start with the storm, so the first ones meet its opening
    // burst, and go on until there have been `n_rounds` and the held
    // connections have all been open for 2 s (a minute at most): the
    // later ones meet the connections that keep coming back.
    let mut storm = Phase {
        squeue: Vec::new(),
        sbatch: Vec::new(),
        failed: 0,
    };
    let start = Instant::now();
    let mut all_opened: Option<Instant> = None;
    loop {
        if all_opened.is_none() && on_ctld.held_all_opened() && on_node.held_all_opened() {
            all_opened = Some(Instant::now());
        }
        let settled = all_opened.is_some_and(|t| t.elapsed() >= Duration::from_secs(2));
        if storm.squeue.len() >= n_rounds && (settled || start.elapsed() > Duration::from_secs(60))
        {
            break;
        }
        round(muster, conf_path, &mut storm, start);
    }
    let all_opened = all_opened.map_or(-1.0, |t| (t - start).as_secs_f64());
    let n_done = storm.squeue.len();
    let s_ctld = on_ctld.stop();
    let s_node = on_node.stop();
    print(
        "storm",
        storm,
        &format!(
            " rounds={} all_opened_after_s={all_opened:.2} ctld_held={} ctld_held_closed={} ctld_cycled={} \
             node_held={} node_held_closed={} node_cycled={} connect_failures={}",
            n_done,
            s_ctld.held_opened,
            s_ctld.held_closed,
            s_ctld.cycled,
            s_node.held_opened,
            s_node.held_closed,
            s_node.cycled,
            s_ctld.connect_failures + s_node.connect_failures,
        ),
    );
    Ok(())
}
