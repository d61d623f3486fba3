//! The REST benchmarks (`bench/rest.sh`, issue 40 item 6), against a
//! running `muster restd` (or any slurmrestd 22.05: only v0.0.38 paths and
//! the JWT headers are used, except for the watch stream):
//!
//! ```text
//! muster-bench rest-submit -f slurm.conf --url HOST:PORT [--threads 8] [--count N] [--hold]
//! muster-bench rest-get    -f slurm.conf --url HOST:PORT [--path P] [--count R]
//! muster-bench rest-watch  -f slurm.conf --url HOST:PORT [--count N] [--gap-ms MS]
//! ```
//!
//! `rest-submit`: each thread keeps one HTTP/1.1 connection and posts
//! `job/submit` in turn; submissions per second over the whole run.
//! `rest-get`: R timed GETs of one path on a kept connection (the answer
//! read in full, into one buffer kept from call to call); wall time per
//! call. `rest-watch`: opens
//! `/muster/v1/watch?kinds=job`, then submits N short jobs one at a time
//! through the client library on an idle cluster and times each job's
//! `started` event. A job starts inside the batch that takes its
//! submission (before the batch is fsynced and the submission answered),
//! so two spans are reported: from sending the submission to the event
//! (`send_to_event`, covers the start and more) and from its answer to the
//! event (`reply_to_event`, less than the start to the event by the
//! journal commit and the answer's trip). The token is the caller's own,
//! from the controller (`scontrol token`'s request), or for `rest-submit`
//! and `rest-get` against another slurmrestd the one in `SLURM_JWT`
//! (sent with `X-SLURM-USER-NAME: $USER`, as Slurm's guide does).

use anyhow::{bail, Context};
use proto::{CtldRequest, CtldResponse};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Opts {
    conf: Option<PathBuf>,
    url: String,
    threads: usize,
    count: usize,
    hold: bool,
    path: String,
    gap_ms: u64,
}

fn parse(args: &[String]) -> anyhow::Result<Opts> {
    let mut o = Opts {
        conf: std::env::var_os("SLURM_CONF").map(PathBuf::from),
        url: String::new(),
        threads: 8,
        count: 1000,
        hold: false,
        path: "/slurm/v0.0.38/jobs".into(),
        gap_ms: 50,
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
            "--url" => {
                o.url = val()?
                    .trim_start_matches("http://")
                    .trim_end_matches('/')
                    .to_string()
            }
            "--threads" | "-t" => o.threads = val()?.parse().context("--threads")?,
            "--count" | "-n" => o.count = val()?.parse().context("--count")?,
            "--hold" | "-H" => o.hold = true,
            "--path" => o.path = val()?,
            "--gap-ms" => o.gap_ms = val()?.parse().context("--gap-ms")?,
            other => bail!("unknown option {other:?}"),
        }
    }
    if o.url.is_empty() {
        bail!("--url HOST:PORT is required");
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

/// `SLURM_JWT` when set (another slurmrestd: `scontrol token`'s output),
/// else a token from the controller of `-f`.
fn token_of(o: &Opts) -> anyhow::Result<String> {
    match std::env::var("SLURM_JWT") {
        Ok(t) if !t.is_empty() => Ok(t),
        _ => token(&client(o)?),
    }
}

fn token(c: &client::Client) -> anyhow::Result<String> {
    match c.call(CtldRequest::Token {
        username: None,
        lifespan: Some(7200),
    })? {
        CtldResponse::Token(t) => Ok(t),
        other => bail!("no token: {other:?}"),
    }
}

/// One kept HTTP/1.1 connection.
struct Http {
    r: BufReader<TcpStream>,
    host: String,
    token: String,
    /// `X-SLURM-USER-NAME: ...\r\n` with a token from `SLURM_JWT`.
    user_header: String,
}

impl Http {
    fn connect(host: &str, token: &str) -> anyhow::Result<Http> {
        let s = TcpStream::connect(host).with_context(|| format!("connecting to {host}"))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(120)))?;
        Ok(Http {
            r: BufReader::with_capacity(1 << 16, s),
            host: host.to_string(),
            token: token.to_string(),
            user_header: match (std::env::var("SLURM_JWT"), std::env::var("USER")) {
                (Ok(t), Ok(u)) if !t.is_empty() && !u.is_empty() => {
                    format!("X-SLURM-USER-NAME: {u}\r\n")
                }
                _ => String::new(),
            },
        })
    }

    /// One request; (status, body).
    fn call(&mut self, method: &str, path: &str, body: &str) -> anyhow::Result<(u16, Vec<u8>)> {
        let mut out = Vec::new();
        let status = self.call_into(method, path, body, &mut out)?;
        Ok((status, out))
    }

    /// One request, its answer's body read into `out` (emptied first; a
    /// buffer kept from call to call is not allocated and faulted in
    /// again, so `rest-get` times the server more than its own memory).
    fn call_into(
        &mut self,
        method: &str,
        path: &str,
        body: &str,
        out: &mut Vec<u8>,
    ) -> anyhow::Result<u16> {
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{}X-SLURM-USER-TOKEN: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.host,
            self.user_header,
            self.token,
            body.len()
        );
        self.r.get_mut().write_all(req.as_bytes())?;
        let mut line = String::new();
        self.r.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("no status in {line:?}"))?;
        let mut len: Option<usize> = None;
        let mut chunked = false;
        loop {
            line.clear();
            self.r.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                let k = k.trim().to_ascii_lowercase();
                if k == "content-length" {
                    len = v.trim().parse().ok();
                } else if k == "transfer-encoding" && v.trim() == "chunked" {
                    chunked = true;
                }
            }
        }
        let body = out;
        body.clear();
        if chunked {
            loop {
                line.clear();
                self.r.read_line(&mut line)?;
                let n = usize::from_str_radix(line.trim(), 16).context("a chunk size")?;
                let mut chunk = vec![0; n + 2];
                self.r.read_exact(&mut chunk)?;
                chunk.truncate(n);
                body.extend_from_slice(&chunk);
                if n == 0 {
                    break;
                }
            }
        } else {
            let n = len.context("no Content-Length")?;
            body.reserve(n);
            let got = (&mut self.r).take(n as u64).read_to_end(body)?;
            if got < n {
                bail!("the answer ended after {got} of {n} bytes");
            }
        }
        Ok(status)
    }
}

fn submission(hold: bool, dir: &str, i: usize) -> String {
    format!(
        r##"{{"job":{{"name":"rest-bench-{i}","tasks":1,"hold":{hold},"current_working_directory":"{dir}","environment":{{"PATH":"/bin:/usr/bin","LANG":"C"}}}},"script":"#!/bin/sh\ntrue\n"}}"##
    )
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn cmd_submit(o: &Opts) -> anyhow::Result<()> {
    let token = token_of(o)?;
    let dir = std::env::current_dir()?.display().to_string();
    // Exactly `count` in all: the first `count % threads` threads one more.
    let share = |t: usize| o.count / o.threads + usize::from(t < o.count % o.threads);
    let first = |t: usize| (0..t).map(share).sum::<usize>();
    let t0 = Instant::now();
    let results: Vec<anyhow::Result<(usize, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..o.threads)
            .map(|t| {
                let (token, dir) = (&token, &dir);
                s.spawn(move || -> anyhow::Result<(usize, usize)> {
                    let mut http = Http::connect(&o.url, token)?;
                    let (mut ok, mut failed) = (0, 0);
                    for i in 0..share(t) {
                        let body = submission(o.hold, dir, first(t) + i);
                        match http.call("POST", "/slurm/v0.0.38/job/submit", &body) {
                            Ok((200, _)) => ok += 1,
                            Ok(_) => {
                                failed += 1;
                                // An error answer closes the connection.
                                http = Http::connect(&o.url, token)?;
                            }
                            Err(_) => {
                                failed += 1;
                                http = Http::connect(&o.url, token)?;
                            }
                        }
                    }
                    Ok((ok, failed))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| bail!("a thread panicked")))
            .collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    let (mut ok, mut failed) = (0, 0);
    for r in results {
        let (a, b) = r?;
        ok += a;
        failed += b;
    }
    println!(
        "rest-submit threads={} submitted={ok} failed={failed} secs={secs:.3} per_sec={:.0}",
        o.threads,
        ok as f64 / secs
    );
    if ok == 0 {
        bail!("nothing was submitted");
    }
    Ok(())
}

fn cmd_get(o: &Opts) -> anyhow::Result<()> {
    let token = token_of(o)?;
    let mut http = Http::connect(&o.url, &token)?;
    let mut ms = Vec::new();
    let mut bytes = 0;
    let mut body = Vec::new();
    for _ in 0..o.count {
        let t = Instant::now();
        let status = http.call_into("GET", &o.path, "", &mut body)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        if status != 200 {
            bail!("{} answered {status}", o.path);
        }
        bytes = body.len();
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "rest-get path={} calls={} bytes={bytes} min_ms={:.1} p50_ms={:.1} p99_ms={:.1} max_ms={:.1}",
        o.path,
        ms.len(),
        pct(&ms, 0.0),
        pct(&ms, 0.5),
        pct(&ms, 0.99),
        pct(&ms, 1.0)
    );
    Ok(())
}

fn cmd_watch(o: &Opts) -> anyhow::Result<()> {
    let c = client(o)?;
    let token = token(&c)?;
    let mut s = TcpStream::connect(&o.url)?;
    s.set_nodelay(true)?;
    write!(
        s,
        "GET /muster/v1/watch?kinds=job HTTP/1.1\r\nHost: {}\r\nX-SLURM-USER-TOKEN: {token}\r\n\r\n",
        o.url
    )?;
    let mut r = BufReader::new(s.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    if !line.contains(" 200 ") {
        bail!("the watch stream answered {line:?}");
    }
    // The events, as (job id, arrival), from a reader thread: the stream
    // is read as lines (chunk sizes are lines too, and skipped).
    let (tx, rx) = std::sync::mpsc::channel::<(u32, Instant)>();
    std::thread::spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if !data.contains("\"event\":\"started\"") {
                continue;
            }
            let now = Instant::now();
            let id = data
                .split("\"job_id\":")
                .nth(1)
                .and_then(|t| t.split(',').next())
                .and_then(|n| n.parse().ok());
            if let Some(id) = id {
                if tx.send((id, now)).is_err() {
                    return;
                }
            }
        }
    });
    let me = client::current_identity();
    let dir = std::env::current_dir()?.display().to_string();
    let (mut send_ms, mut reply_ms) = (Vec::new(), Vec::new());
    let mut missed = 0;
    for i in 0..o.count {
        let desc = crate::job_desc_for(&me, &dir, &format!("rest-watch-{i}"));
        let sent = Instant::now();
        let id = match c.call(CtldRequest::Submit(Box::new(desc)))? {
            CtldResponse::Submitted(r) => r.job_id.0,
            other => bail!("submit: {other:?}"),
        };
        let replied = Instant::now();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut got = None;
        while let Ok((job, at)) =
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if job == id {
                got = Some(at);
                break;
            }
        }
        match got {
            Some(at) => {
                send_ms.push(at.duration_since(sent).as_secs_f64() * 1e3);
                reply_ms.push(at.saturating_duration_since(replied).as_secs_f64() * 1e3);
            }
            None => missed += 1,
        }
        std::thread::sleep(Duration::from_millis(o.gap_ms));
    }
    send_ms.sort_by(f64::total_cmp);
    reply_ms.sort_by(f64::total_cmp);
    println!(
        "rest-watch jobs={} missed={missed} send_to_event_p50_ms={:.2} send_to_event_p99_ms={:.2} reply_to_event_p50_ms={:.2} reply_to_event_p99_ms={:.2} reply_to_event_max_ms={:.2}",
        send_ms.len(),
        pct(&send_ms, 0.5),
        pct(&send_ms, 0.99),
        pct(&reply_ms, 0.5),
        pct(&reply_ms, 0.99),
        pct(&reply_ms, 1.0)
    );
    Ok(())
}

/// `muster-bench rest-*`.
pub fn main(cmd: &str, args: &[String]) -> anyhow::Result<()> {
    let o = parse(args)?;
    match cmd {
        "rest-submit" => cmd_submit(&o),
        "rest-get" => cmd_get(&o),
        "rest-watch" => cmd_watch(&o),
        other => bail!("unknown command {other:?}"),
    }
}
