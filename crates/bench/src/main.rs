//! `muster-bench`: drives a running controller through the client library,
//! with concurrency, and prints what it measured as one line of `key=value`
//! pairs (read by `bench/run.sh`).
//!
//! Every request goes through the client library. `submit` has three modes:
//! by default each thread has one `client::Client` and makes blocking
//! `Client::call`s, which keep their TCP connection from call to call (the
//! first call on it carries a credential; the later ones travel in the
//! connection's session, authenticated once); `--fresh` makes a new `Client`
//! for every call, so every submission pays what one command pays (reading
//! the key, a TCP connection); `--pipeline N` sends N submissions at a time
//! on the thread's kept connection (`Client::call_pipelined`: several
//! requests in flight, answers in order). Submissions are built
//! as `sbatch --wrap CMD` builds them: the job carries the caller's whole
//! environment (`--export=ALL`, sbatch's default), so the controller stores
//! and journals what it would for a real `sbatch`.
//!
//! ```text
//! muster-bench submit  -f slurm.conf [--threads T] [--count N] [--hold] [--no-env] [--wrap CMD]
//!                      [--fresh | --pipeline N]
//! muster-bench latency -f slurm.conf [--count N] [--method file|poll] [--dir DIR] [--gap-ms MS]
//! muster-bench run     -f slurm.conf [--threads T] [--count N] [--wrap CMD] [--workdir DIR] [--array]
//! muster-bench ping    -f slurm.conf [--timeout S]
//! muster-bench rest-submit|rest-get|rest-watch -f slurm.conf --url HOST:PORT ...  (module `rest`)
//! muster-bench count   -f slurm.conf
//! muster-bench hostile -f slurm.conf --muster PATH [--count ROUNDS] [--held N] [--cycling N]
//!                      [--storm-cpu CPU]
//! ```
//!
//! Benchmarks are measured, never asserted: a failed request is counted and
//! reported, and the exit status is nonzero only when nothing could be done.

mod hostile;
mod rest;

use anyhow::{bail, Context};
use model::{JobId, JobState};
use proto::{CtldRequest, CtldResponse, Identity, JobDesc};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

struct Opts {
    conf: Option<PathBuf>,
    threads: usize,
    count: usize,
    hold: bool,
    env: bool,
    wrap: String,
    method: String,
    dir: Option<PathBuf>,
    workdir: Option<PathBuf>,
    gap_ms: u64,
    timeout_s: u64,
    /// `run --array`: one array of `count` tasks instead of `count` jobs.
    array: bool,
    /// `submit --fresh`: a new client (and connection) for every call.
    fresh: bool,
    /// `submit --pipeline N`: N submissions in flight per connection.
    pipeline: usize,
    /// `hostile --muster PATH`: the binary whose `squeue` and `sbatch`
    /// are timed.
    muster: Option<PathBuf>,
    /// `hostile --held N`: connections without a credential held open.
    held: usize,
    /// `hostile --cycling N`: connections reopened as fast as closed.
    cycling: usize,
    /// `hostile --storm-cpu CPU`: the CPU the storm's threads run on.
    storm_cpu: Option<usize>,
}

fn parse(args: &[String]) -> anyhow::Result<Opts> {
    let mut o = Opts {
        conf: std::env::var_os("SLURM_CONF").map(PathBuf::from),
        threads: 1,
        count: 1000,
        hold: false,
        env: true,
        wrap: "true".into(),
        method: "file".into(),
        dir: None,
        workdir: None,
        gap_ms: 20,
        timeout_s: 60,
        array: false,
        fresh: false,
        pipeline: 0,
        muster: None,
        held: 4_700,
        cycling: 300,
        storm_cpu: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .with_context(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "-f" | "--conf" => o.conf = Some(PathBuf::from(val()?)),
            "--threads" | "-t" => o.threads = val()?.parse().context("--threads")?,
            "--count" | "-n" => o.count = val()?.parse().context("--count")?,
            "--hold" | "-H" => o.hold = true,
            "--array" => o.array = true,
            "--fresh" => o.fresh = true,
            "--pipeline" => o.pipeline = val()?.parse().context("--pipeline")?,
            "--no-env" => o.env = false,
            "--wrap" => o.wrap = val()?,
            "--method" => o.method = val()?,
            "--dir" => o.dir = Some(PathBuf::from(val()?)),
            "--workdir" => o.workdir = Some(PathBuf::from(val()?)),
            "--gap-ms" => o.gap_ms = val()?.parse().context("--gap-ms")?,
            "--timeout" => o.timeout_s = val()?.parse().context("--timeout")?,
            "--muster" => o.muster = Some(PathBuf::from(val()?)),
            "--held" => o.held = val()?.parse().context("--held")?,
            "--cycling" => o.cycling = val()?.parse().context("--cycling")?,
            "--storm-cpu" => o.storm_cpu = Some(val()?.parse().context("--storm-cpu")?),
            other => bail!("unknown option {other:?}"),
        }
    }
    if o.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if o.fresh && o.pipeline > 0 {
        bail!("--fresh and --pipeline exclude each other");
    }
    Ok(o)
}

fn client(o: &Opts) -> anyhow::Result<client::Client> {
    let path = match &o.conf {
        Some(p) => p.clone(),
        None => client::find_config().context("no slurm.conf: pass -f or set SLURM_CONF")?,
    };
    let loaded = conf::load(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(client::Client::new(
        loaded.config,
        client::current_identity(),
    ))
}

/// Seconds since the epoch, with sub-second precision (comparable with
/// `date +%s.%N` inside a job).
fn epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The description `sbatch [-H] --wrap CMD` sends.
fn job_desc(o: &Opts, id: &Identity, cmd: &str) -> JobDesc {
    let cwd = match &o.workdir {
        Some(d) => d.display().to_string(),
        None => std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "/tmp".into()),
    };
    let mut env: Vec<(String, String)> = if o.env {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect()
    } else {
        Vec::new()
    };
    env.push(("SLURM_PRIO_PROCESS".into(), "0".into()));
    env.push(("SLURM_UMASK".into(), "0022".into()));
    JobDesc {
        name: "wrap".into(),
        script: format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{cmd}\n"),
        work_dir: cwd.clone(),
        submit_dir: cwd,
        submit_host: id.host.clone(),
        submit_line: format!("sbatch{} --wrap {cmd}", if o.hold { " -H" } else { "" }),
        env: env.into(),
        stdout: Some("slurm-%j.out".into()),
        hold: o.hold,
        uid: id.uid,
        gid: id.gid,
        user: id.user.clone(),
        alloc_sid: std::process::id(),
        ..JobDesc::default()
    }
}

/// `sbatch --wrap true` from `dir` without the caller's environment,
/// output to /dev/null (`rest-watch`).
fn job_desc_for(id: &Identity, dir: &str, name: &str) -> JobDesc {
    let mut d = match parse(&[]) {
        Ok(mut o) => {
            o.workdir = Some(PathBuf::from(dir));
            o.env = false;
            job_desc(&o, id, "true")
        }
        Err(_) => JobDesc::default(),
    };
    d.name = name.into();
    d.stdout = Some("/dev/null".into());
    d
}

fn submit_one(c: &client::Client, desc: &JobDesc) -> Result<JobId, String> {
    submitted(c.call(CtldRequest::Submit(Box::new(desc.clone()))))
}

fn submitted(r: Result<CtldResponse, client::ClientError>) -> Result<JobId, String> {
    match r {
        Ok(CtldResponse::Submitted(r)) => Ok(r.job_id),
        Ok(other) => Err(format!("unexpected answer {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// The p-th percentile (0..=1) of sorted samples, nearest rank.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn sort(v: &mut [f64]) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
}

/// One thread's ids, call latencies (ms), error count and first error.
type ThreadResult = (Vec<JobId>, Vec<f64>, usize, Option<String>);

struct Submitted {
    ids: Vec<JobId>,
    lat_ms: Vec<f64>,
    errors: usize,
    first_error: Option<String>,
    secs: f64,
}

/// `count` submissions spread over `threads` threads, each a loop of
/// blocking calls.
fn submit_many(o: &Opts, c: &client::Client, cmd: &str) -> Submitted {
    let desc = job_desc(o, c.identity(), cmd);
    let start = Instant::now();
    let per: Vec<usize> = (0..o.threads)
        .map(|t| o.count / o.threads + usize::from(t < o.count % o.threads))
        .collect();
    let results: Vec<ThreadResult> = std::thread::scope(|s| {
        let handles: Vec<_> = per
            .iter()
            .map(|&n| {
                let c = client::Client::new(c.config().clone(), c.identity().clone());
                let desc = desc.clone();
                s.spawn(move || {
                    let mut ids = Vec::with_capacity(n);
                    let mut lat = Vec::with_capacity(n);
                    let mut errors = 0;
                    let mut first = None;
                    let mut note = |r: Result<JobId, String>| match r {
                        Ok(id) => ids.push(id),
                        Err(e) => {
                            errors += 1;
                            first.get_or_insert(e);
                        }
                    };
                    if o.pipeline > 0 {
                        let mut left = n;
                        while left > 0 {
                            let k = left.min(o.pipeline);
                            left -= k;
                            let t = Instant::now();
                            let reqs: Vec<CtldRequest> = (0..k)
                                .map(|_| CtldRequest::Submit(Box::new(desc.clone())))
                                .collect();
                            for r in c.call_pipelined(&reqs) {
                                note(submitted(r));
                            }
                            // One sample per batch: the time its answers took.
                            lat.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                    } else {
                        for _ in 0..n {
                            let t = Instant::now();
                            if o.fresh {
                                // What one command pays: a new client (the
                                // key read again), a new connection.
                                let c =
                                    client::Client::new(c.config().clone(), c.identity().clone());
                                note(submit_one(&c, &desc));
                            } else {
                                note(submit_one(&c, &desc));
                            }
                            lat.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                    }
                    (ids, lat, errors, first)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("submit thread"))
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut out = Submitted {
        ids: Vec::new(),
        lat_ms: Vec::new(),
        errors: 0,
        first_error: None,
        secs,
    };
    for (ids, lat, errors, first) in results {
        out.ids.extend(ids);
        out.lat_ms.extend(lat);
        out.errors += errors;
        if out.first_error.is_none() {
            out.first_error = first;
        }
    }
    sort(&mut out.lat_ms);
    out
}

fn cmd_submit(o: &Opts) -> anyhow::Result<()> {
    let c = client(o)?;
    let s = submit_many(o, &c, &o.wrap.clone());
    println!(
        "submit mode={} threads={} count={} ok={} errors={} secs={:.3} jobs_per_s={:.0} call_p50_ms={:.3} call_p99_ms={:.3}{}",
        if o.fresh {
            "fresh".to_string()
        } else if o.pipeline > 0 {
            format!("pipeline{}", o.pipeline)
        } else {
            "kept".to_string()
        },
        o.threads,
        o.count,
        s.ids.len(),
        s.errors,
        s.secs,
        s.ids.len() as f64 / s.secs,
        pct(&s.lat_ms, 0.5),
        pct(&s.lat_ms, 0.99),
        s.first_error
            .map(|e| format!(" first_error={:?}", e))
            .unwrap_or_default()
    );
    if s.ids.is_empty() {
        bail!("no submission succeeded");
    }
    Ok(())
}

fn jobs(c: &client::Client) -> anyhow::Result<Vec<proto::JobInfo>> {
    match c.call(CtldRequest::ListJobs)? {
        CtldResponse::Jobs(l) => Ok(l.jobs),
        other => bail!("unexpected answer {other:?}"),
    }
}

fn started(state: JobState) -> bool {
    !matches!(state, JobState::Pending)
}

fn ended(j: &proto::JobInfo) -> bool {
    !matches!(
        j.state,
        JobState::Pending | JobState::Running | JobState::Suspended
    ) && !j.completing
}

/// Submit-to-start latency of one job at a time on an idle cluster.
///
/// `file`: the job writes `date +%s.%N` to DIR/start-$SLURM_JOB_ID; the
/// latency is that time minus the moment before the submit call (the whole
/// path: controller, journal fsync, launch RPC, node fork/exec, shell start).
/// `poll`: ListJobs is polled every millisecond until the job is no longer
/// PENDING (controller and journal only; the poll itself adds up to ~1 ms
/// and a journal batch per poll).
fn cmd_latency(o: &Opts) -> anyhow::Result<()> {
    let c = client(o)?;
    let dir = o
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("muster-bench-latency"));
    std::fs::create_dir_all(&dir)?;
    let file_mode = match o.method.as_str() {
        "file" => true,
        "poll" => false,
        m => bail!("--method {m:?}: expected file or poll"),
    };
    let cmd = if file_mode {
        format!("date +%s.%N > {}/start-$SLURM_JOB_ID", dir.display())
    } else {
        "true".to_string()
    };
    let mut desc_opts = parse(&[])?;
    desc_opts.workdir = Some(dir.clone());
    desc_opts.env = o.env;
    let mut desc = job_desc(&desc_opts, c.identity(), &cmd);
    desc.stdout = Some("/dev/null".into());
    let mut lat = Vec::with_capacity(o.count);
    let mut ack = Vec::with_capacity(o.count);
    let mut missed = 0;
    let limit = Duration::from_secs(o.timeout_s);
    for _ in 0..o.count {
        let t0 = epoch();
        let i0 = Instant::now();
        let id = match submit_one(&c, &desc) {
            Ok(id) => id,
            Err(e) => bail!("submit failed: {e}"),
        };
        ack.push(i0.elapsed().as_secs_f64() * 1e3);
        if file_mode {
            let path = dir.join(format!("start-{}", id.0));
            let got = loop {
                if let Ok(text) = std::fs::read_to_string(&path) {
                    if let Ok(t) = text.trim().parse::<f64>() {
                        break Some(t);
                    }
                }
                if i0.elapsed() > limit {
                    break None;
                }
                std::thread::sleep(Duration::from_micros(200));
            };
            match got {
                Some(t) => lat.push((t - t0) * 1e3),
                None => missed += 1,
            }
            let _ = std::fs::remove_file(&path);
        } else {
            let got = loop {
                let js = jobs(&c)?;
                if js.iter().any(|j| j.job_id == id && started(j.state)) {
                    break Some(i0.elapsed().as_secs_f64() * 1e3);
                }
                if i0.elapsed() > limit {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            match got {
                Some(ms) => lat.push(ms),
                None => missed += 1,
            }
        }
        // Let the job end so that the next one meets an idle cluster.
        std::thread::sleep(Duration::from_millis(o.gap_ms));
    }
    sort(&mut lat);
    sort(&mut ack);
    let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
    println!(
        "latency method={} count={} measured={} missed={} p50_ms={:.2} p90_ms={:.2} p99_ms={:.2} max_ms={:.2} mean_ms={:.2} submit_ack_p50_ms={:.2} submit_ack_p99_ms={:.2}",
        o.method,
        o.count,
        lat.len(),
        missed,
        pct(&lat, 0.5),
        pct(&lat, 0.9),
        pct(&lat, 0.99),
        lat.last().copied().unwrap_or(f64::NAN),
        mean,
        pct(&ack, 0.5),
        pct(&ack, 0.99),
    );
    Ok(())
}

/// Submits `count` runnable jobs, then polls until every one has ended.
/// How long `run` waits between two full listings: longer for big runs,
/// whose listings cost the controller more.
fn poll_gap(count: usize) -> Duration {
    Duration::from_millis(if count > 10_000 { 1000 } else { 100 })
}

/// `run --array`: one `sbatch --array=0-(N-1) --wrap CMD`, then ListJobs
/// until every task has ended; tasks/s from the submit to the last end.
fn cmd_run_array(o: &Opts) -> anyhow::Result<()> {
    let c = client(o)?;
    let mut desc = job_desc(o, c.identity(), &o.wrap);
    desc.array = Some(format!("0-{}", o.count.saturating_sub(1)));
    // One output file per task, as each single job writes one.
    desc.stdout = Some("slurm-%A_%a.out".into());
    let start = Instant::now();
    let id = submit_one(&c, &desc).map_err(|e| anyhow::anyhow!("submit: {e}"))?;
    let submit_secs = start.elapsed().as_secs_f64();
    let limit = Duration::from_secs(o.timeout_s);
    // Ended tasks are purged after MinJobAge: remember each one seen ended.
    let mut seen: std::collections::HashMap<u32, bool> = Default::default();
    while start.elapsed() < limit {
        let js = jobs(&c)?;
        for j in &js {
            if let (Some(a), Some(t)) = (j.array_job_id, j.array_task_id) {
                if a == id.0 && ended(j) {
                    seen.insert(t, j.state == JobState::Completed);
                }
            }
        }
        if seen.len() == o.count {
            break;
        }
        std::thread::sleep(poll_gap(o.count));
    }
    let secs = start.elapsed().as_secs_f64();
    let ended_n = seen.len();
    let completed = seen.values().filter(|ok| **ok).count();
    println!(
        "run_array count={} job={id} submit_secs={submit_secs:.3} total_secs={secs:.3} completed={completed} ended={ended_n} tasks_per_s={:.1}",
        o.count,
        ended_n as f64 / secs
    );
    Ok(())
}

fn cmd_run(o: &Opts) -> anyhow::Result<()> {
    if o.array {
        return cmd_run_array(o);
    }
    let c = client(o)?;
    let start = Instant::now();
    let s = submit_many(o, &c, &o.wrap.clone());
    if s.ids.is_empty() {
        bail!(
            "no submission succeeded: {}",
            s.first_error.unwrap_or_default()
        );
    }
    let ids: std::collections::HashSet<JobId> = s.ids.iter().copied().collect();
    let limit = Duration::from_secs(o.timeout_s);
    let (mut completed, mut failed, mut left) = (0, 0, ids.len());
    // Polls ask only for the jobs still active, in brief (what squeue asks
    // for): the observer's cost shrinks as the jobs end instead of growing
    // with every ended job the controller still holds for MinJobAge. Once
    // none is left, one full listing gives the end states.
    let active = proto::JobFilter {
        active_only: true,
        brief: true,
        ..Default::default()
    };
    let mut secs = 0.0;
    while start.elapsed() < limit {
        let js = c.query_jobs(active.clone())?.jobs;
        left = js.iter().filter(|j| ids.contains(&j.job_id)).count();
        if left == 0 {
            secs = start.elapsed().as_secs_f64();
            let js = jobs(&c)?;
            let mine: Vec<&proto::JobInfo> =
                js.iter().filter(|j| ids.contains(&j.job_id)).collect();
            left = mine.iter().filter(|j| !ended(j)).count();
            completed = mine
                .iter()
                .filter(|j| j.state == JobState::Completed)
                .count();
            failed = mine.len() - completed - left;
            break;
        }
        std::thread::sleep(poll_gap(o.count));
    }
    if secs == 0.0 {
        secs = start.elapsed().as_secs_f64();
    }
    println!(
        "run threads={} count={} submitted={} submit_secs={:.3} total_secs={:.3} completed={} not_completed={} unfinished={} jobs_per_s={:.1}",
        o.threads,
        o.count,
        s.ids.len(),
        s.secs,
        secs,
        completed,
        failed,
        left,
        s.ids.len() as f64 / secs
    );
    Ok(())
}

/// Polls Ping until the controller answers; prints the epoch time it did,
/// then the time the first ListJobs came back and how many jobs it held.
fn cmd_ping(o: &Opts) -> anyhow::Result<()> {
    let c = client(o)?;
    let start = Instant::now();
    let limit = Duration::from_secs(o.timeout_s);
    loop {
        if c.call(CtldRequest::Ping).is_ok() {
            break;
        }
        if start.elapsed() > limit {
            bail!("no answer within {}s", o.timeout_s);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let pinged = epoch();
    // ListJobs may fail where ping does not (a job list over the frame
    // limit): report it, the ping time stands.
    match jobs(&c) {
        Ok(js) => println!(
            "ping answered_at={pinged:.4} listed_at={:.4} jobs={}",
            epoch(),
            js.len()
        ),
        Err(e) => println!(
            "ping answered_at={pinged:.4} listed_at=failed jobs=failed list_error={:?}",
            format!("{e:#}")
        ),
    }
    Ok(())
}

fn cmd_count(o: &Opts) -> anyhow::Result<()> {
    let c = client(o)?;
    let js = jobs(&c)?;
    let mut by: std::collections::BTreeMap<String, usize> = Default::default();
    for j in &js {
        *by.entry(format!("{:?}", j.state).to_lowercase())
            .or_default() += 1;
    }
    let parts: Vec<String> = by.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("count jobs={} {}", js.len(), parts.join(" "));
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprintln!(
            "usage: muster-bench submit|latency|run|ping|count|hostile|rest-submit|rest-get|rest-watch -f slurm.conf [options]"
        );
        std::process::exit(2);
    };
    if cmd.starts_with("rest-") {
        if let Err(e) = rest::main(cmd, rest) {
            eprintln!("muster-bench {cmd}: error: {e:#}");
            std::process::exit(1);
        }
        return;
    }
    let res = parse(rest).and_then(|o| match cmd.as_str() {
        "submit" => cmd_submit(&o),
        "latency" => cmd_latency(&o),
        "run" => cmd_run(&o),
        "ping" => cmd_ping(&o),
        "count" => cmd_count(&o),
        "hostile" => {
            let conf = o.conf.clone().context("hostile needs -f slurm.conf")?;
            let muster = o.muster.clone().context("hostile needs --muster PATH")?;
            hostile::cmd_hostile(&conf, &muster, o.count, o.held, o.cycling, o.storm_cpu)
        }
        other => bail!("unknown command {other:?}"),
    });
    if let Err(e) = res {
        eprintln!("muster-bench {cmd}: error: {e:#}");
        std::process::exit(1);
    }
}
