//! The watch stream (`/muster/v1/watch`, Server-Sent Events) and
//! `/metrics` end to end with real daemons: a job's life as events
//! (submitted, started, ended with its exit code) with the node's changes,
//! a resume with `Last-Event-ID`, a reset for a position the controller
//! does not hold, filters; and `/metrics` read by a Prometheus text-format
//! parser (the `prometheus-parse` crate) in both formats.

use crate::rest::{json, jwt_cluster, jwt_key, prometheus_text, token_of, Restd};
use crate::secs;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One server-sent event.
#[derive(Clone, Debug)]
struct Event {
    id: String,
    event: String,
    data: serde_json::Value,
}

/// An open stream: its events arrive on `rx` (read by a thread).
struct Stream {
    rx: mpsc::Receiver<Event>,
    socket: std::net::TcpStream,
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
    }
}

/// Reads the answer's head: (status, headers in lower case).
fn head(r: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut status_line = String::new();
    r.read_line(&mut status_line).expect("a status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status in {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("a header");
        let line = line.trim_end();
        if line.is_empty() {
            return (status, headers);
        }
        let (k, v) = line.split_once(':').expect("name: value");
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Opens `path` as a stream; panics unless it answers 200 with
/// `text/event-stream`.
fn open(restd: &Restd, path: &str, token: &str, last_id: Option<&str>) -> Stream {
    let mut socket = std::net::TcpStream::connect(&restd.addr).expect("connecting to restd");
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nX-SLURM-USER-TOKEN: {token}\r\n",
        restd.addr
    );
    if let Some(id) = last_id {
        req.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    req.push_str("\r\n");
    socket.write_all(req.as_bytes()).expect("sending");
    let mut r = BufReader::new(socket.try_clone().expect("a clone"));
    let (status, headers) = head(&mut r);
    assert_eq!(status, 200, "{headers:?}");
    assert_eq!(header(&headers, "content-type"), Some("text/event-stream"));
    let chunked = header(&headers, "transfer-encoding") == Some("chunked");
    let doc = restd.doc.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // The body, de-chunked, then split into events.
        let mut text = String::new();
        let mut event = (String::new(), String::new(), String::new());
        loop {
            let piece = if chunked {
                let mut size = String::new();
                if r.read_line(&mut size).unwrap_or(0) == 0 {
                    return;
                }
                let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
                    return;
                };
                if n == 0 {
                    return;
                }
                let mut buf = vec![0; n + 2];
                if r.read_exact(&mut buf).is_err() {
                    return;
                }
                buf.truncate(n);
                String::from_utf8(buf).expect("UTF-8")
            } else {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                line
            };
            text.push_str(&piece);
            while let Some(nl) = text.find('\n') {
                let line: String = text.drain(..=nl).collect();
                let line = line.trim_end_matches('\n');
                if line.is_empty() {
                    if !event.2.is_empty() {
                        let data: serde_json::Value = json(&event.2);
                        if event.1 != "reset" {
                            // Every event fits the document restd serves.
                            restd::openapi::validate(&doc, "muster_v1_watch_event", &data)
                                .unwrap_or_else(|e| panic!("{e}: {data}"));
                        }
                        let e = Event {
                            id: std::mem::take(&mut event.0),
                            event: std::mem::take(&mut event.1),
                            data,
                        };
                        event.2.clear();
                        if tx.send(e).is_err() {
                            return;
                        }
                    }
                } else if let Some(v) = line.strip_prefix("id: ") {
                    event.0 = v.to_string();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    event.1 = v.to_string();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    event.2 = v.to_string();
                }
            }
        }
    });
    Stream { rx, socket }
}

impl Stream {
    /// Events until `done` says the last one is the one wanted.
    fn until(&self, what: &str, mut done: impl FnMut(&Event) -> bool) -> Vec<Event> {
        let deadline = Instant::now() + secs(90);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left.max(Duration::from_millis(1))) {
                Ok(e) => {
                    let stop = done(&e);
                    seen.push(e);
                    if stop {
                        return seen;
                    }
                }
                Err(_) => panic!("no {what} on the stream; saw {seen:#?}"),
            }
        }
    }
}

fn job_events(events: &[Event], id: u32) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.event == "job" && e.data["job_id"] == id)
        .map(|e| e.data["event"].as_str().unwrap_or("").to_string())
        .collect()
}

fn ended(e: &Event, id: u32) -> bool {
    e.event == "job" && e.data["job_id"] == id && e.data["event"] == "ended"
}

/// Submits a batch script over REST; its job id.
fn submit(restd: &Restd, token: &str, dir: &str, script: &str) -> u32 {
    let body = serde_json::json!({
        "job": {
            "name": "watched",
            "partition": "debug",
            "tasks": 1,
            "current_working_directory": dir,
            "environment": {"PATH": "/bin:/usr/bin"}
        },
        "script": script
    })
    .to_string();
    let (status, answer) = restd.call(
        "POST",
        "/slurm/v0.0.38/job/submit",
        &[("X-SLURM-USER-TOKEN", token)],
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    json(&answer)["job_id"].as_u64().expect("a job id") as u32
}

/// The event id's number (`EPOCH.SEQ`).
fn seq(id: &str) -> u64 {
    id.split_once('.')
        .expect("EPOCH.SEQ")
        .1
        .parse()
        .expect("a number")
}

#[test]
fn watch_stream_follows_a_job_and_resumes_from_last_event_id() {
    let key = jwt_key();
    let c = jwt_cluster(&key);
    let restd = Restd::start(&c);
    let token = token_of(&c.run("scontrol", &["token", "lifespan=900"]));
    let work = c.work().display().to_string();

    let stream = open(&restd, "/muster/v1/watch?kinds=job,node", &token, None);
    let id = submit(&restd, &token, &work, "#!/bin/sh\nexit 3\n");
    let events = stream.until("the first job's end", |e| ended(e, id));
    assert_eq!(
        job_events(&events, id),
        ["submitted", "started", "ended"],
        "{events:#?}"
    );
    let end = events.last().unwrap();
    assert_eq!(end.data["state"], "FAILED", "{end:?}");
    assert_eq!(end.data["previous_state"], "RUNNING", "{end:?}");
    assert_eq!(end.data["exit_code"]["return_code"], 3, "{end:?}");
    assert_eq!(end.data["nodes"], "node1", "{end:?}");
    let started = events
        .iter()
        .find(|e| e.data["event"] == "started")
        .unwrap();
    assert_eq!(started.data["state"], "RUNNING");
    // The node was busy with it; ids grow by one per change.
    assert!(
        events
            .iter()
            .any(|e| e.event == "node" && e.data["name"] == "node1"),
        "{events:#?}"
    );
    for pair in events.windows(2) {
        assert!(seq(&pair[1].id) > seq(&pair[0].id), "{pair:?}");
    }
    // The node's return to IDLE may come in a later batch.
    let mut all = events;
    if !all
        .iter()
        .any(|e| e.event == "node" && e.data["state"] == "IDLE")
    {
        all.extend(stream.until("node1 idle", |e| {
            e.event == "node" && e.data["state"] == "IDLE"
        }));
    }
    let last = all.last().unwrap().id.clone();
    drop(stream);

    // Missed while away: a second job's whole life, then a resume.
    let id2 = submit(&restd, &token, &work, "#!/bin/sh\nexit 0\n");
    c.wait_until("the second job to end", secs(60), || {
        let out = c.run(
            "squeue",
            &["-h", "-j", &id2.to_string(), "-t", "all", "-o", "%T"],
        );
        (out.stdout.trim() == "COMPLETED").then_some(())
    });
    let resumed = open(&restd, "/muster/v1/watch", &token, Some(&last));
    let events = resumed.until("the second job's end", |e| ended(e, id2));
    assert!(events.iter().all(|e| e.event != "reset"), "{events:#?}");
    assert_eq!(seq(&events[0].id), seq(&last) + 1, "{events:#?}");
    assert_eq!(
        job_events(&events, id2),
        ["submitted", "started", "ended"],
        "{events:#?}"
    );
    assert_eq!(events.last().unwrap().data["exit_code"]["return_code"], 0);
    drop(resumed);

    // Filters: only the second job's events, no node's.
    let epoch = last.split_once('.').unwrap().0;
    let filtered = open(
        &restd,
        &format!("/muster/v1/watch?kinds=job&job={id2}"),
        &token,
        Some(&format!("{epoch}.0")),
    );
    let events = filtered.until("the second job's end", |e| ended(e, id2));
    assert!(
        events
            .iter()
            .all(|e| e.event == "job" && e.data["job_id"] == id2),
        "{events:#?}"
    );
    drop(filtered);

    // A position of another controller process: reset, then live events.
    let stale = open(&restd, "/muster/v1/watch", &token, Some("1.1"));
    let first = stale.until("a reset", |_| true);
    assert_eq!(first[0].event, "reset", "{first:?}");
    let id3 = submit(&restd, &token, &work, "#!/bin/sh\nexit 0\n");
    let events = stale.until("the third job's start", |e| {
        e.event == "job" && e.data["job_id"] == id3 && e.data["event"] == "started"
    });
    assert_eq!(job_events(&events, id3), ["submitted", "started"]);

    // Refusals: a bad filter, no token.
    let (status, body) = restd.call(
        "GET",
        "/muster/v1/watch?kinds=steps",
        &[("X-SLURM-USER-TOKEN", &token)],
        "",
    );
    assert_eq!(status, 400, "{body}");
    let (status, _) = restd.call("GET", "/muster/v1/watch", &[], "");
    assert_eq!(status, 401);
    let doc = &restd.doc;
    assert!(doc["paths"]["/muster/v1/watch"]["get"].is_object());
}

/// One GET with an `Accept` header: (status, content type, body).
fn get_accept(restd: &Restd, path: &str, token: &str, accept: &str) -> (u16, String, String) {
    let mut socket = std::net::TcpStream::connect(&restd.addr).expect("connecting to restd");
    socket.set_read_timeout(Some(secs(60))).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: {accept}\r\nX-SLURM-USER-TOKEN: {token}\r\n\r\n",
        restd.addr
    );
    socket.write_all(req.as_bytes()).expect("sending");
    let mut r = BufReader::new(socket);
    let (status, headers) = head(&mut r);
    let mut body = String::new();
    r.read_to_string(&mut body).expect("the body");
    let ctype = header(&headers, "content-type").unwrap_or("").to_string();
    (status, ctype, body)
}

#[test]
fn metrics_parse_as_prometheus_text_and_openmetrics() {
    let key = jwt_key();
    let c = jwt_cluster(&key);
    let restd = Restd::start(&c);
    let token = token_of(&c.run("scontrol", &["token", "lifespan=900"]));
    let work = c.work().display().to_string();
    let running = submit(&restd, &token, &work, "#!/bin/sh\nsleep 300\n");
    c.wait_state(running, "RUNNING", secs(30));
    // One that waits for the CPUs the first holds all of.
    let body = serde_json::json!({
        "job": {"name": "waits", "partition": "debug", "tasks": 1, "cpus_per_task": 2,
                "current_working_directory": work, "environment": {"PATH": "/bin"}},
        "script": "#!/bin/sh\ntrue\n"
    });
    let _ = restd.call(
        "POST",
        "/slurm/v0.0.38/job/submit",
        &[("X-SLURM-USER-TOKEN", &token)],
        &body.to_string(),
    );

    let (status, ctype, text) = get_accept(&restd, "/metrics", &token, "text/plain");
    assert_eq!(status, 200, "{text}");
    assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
    prometheus_text(&text);
    let lines: Vec<std::io::Result<String>> = text.lines().map(|l| Ok(l.to_string())).collect();
    let scrape = prometheus_parse::Scrape::parse(lines.into_iter()).expect("a Prometheus scrape");
    let families: std::collections::BTreeSet<&str> =
        scrape.samples.iter().map(|s| s.metric.as_str()).collect();
    for name in [
        "muster_jobs",
        "muster_jobs_pending",
        "muster_nodes",
        "muster_cpus",
        "muster_gpus",
        "muster_memory_megabytes",
        "muster_scheduler_cycles_total",
        "muster_scheduler_pass_duration_seconds",
        "muster_journal_fsync_duration_seconds",
        "muster_backfill_cycles_total",
        "muster_backfilled_jobs_total",
        "muster_rpcs_total",
        "muster_rpcs_by_user_total",
        "muster_accounting_backlog_records",
        "muster_watch_streams",
        "muster_rest_requests_total",
    ] {
        assert!(families.contains(name), "{name} missing in\n{text}");
    }
    let value = |name: &str, label: (&str, &str)| -> Option<f64> {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && s.labels.get(label.0) == Some(label.1))
            .and_then(|s| match s.value {
                prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Untyped(v) => Some(v),
                _ => None,
            })
    };
    assert_eq!(
        value("muster_jobs", ("state", "RUNNING")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value("muster_cpus", ("state", "allocated")),
        Some(1.0),
        "{text}"
    );
    // Histograms: buckets up to +Inf, the count of passes and commits.
    for hist in [
        "muster_scheduler_pass_duration_seconds",
        "muster_journal_fsync_duration_seconds",
    ] {
        let s = scrape
            .samples
            .iter()
            .find(|s| s.metric == hist)
            .unwrap_or_else(|| panic!("{hist}"));
        match &s.value {
            prometheus_parse::Value::Histogram(buckets) => {
                assert!(buckets.len() > 5, "{hist}: {buckets:?}");
                let inf = buckets.last().unwrap();
                assert!(
                    inf.less_than.is_infinite() && inf.count >= 1.0,
                    "{hist}: {buckets:?}"
                );
            }
            other => panic!("{hist} is not a histogram: {other:?}"),
        }
    }
    assert!(
        text.contains("muster_rpcs_total{type=\"REQUEST_SUBMIT_BATCH_JOB\"}"),
        "{text}"
    );

    // OpenMetrics when asked, as Prometheus asks.
    let (status, ctype, om) = get_accept(
        &restd,
        "/metrics",
        &token,
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
    );
    assert_eq!(status, 200, "{om}");
    assert_eq!(
        ctype,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE muster_rpcs counter\n"), "{om}");
    assert!(om.contains("\nmuster_rpcs_total{"), "{om}");
    assert!(om.contains("# TYPE muster_scheduler_pass_duration_seconds histogram\n"));
    let lines: Vec<std::io::Result<String>> = om.lines().map(|l| Ok(l.to_string())).collect();
    let parsed = prometheus_parse::Scrape::parse(lines.into_iter()).expect("an OpenMetrics scrape");
    assert!(parsed.samples.iter().any(|s| s.metric == "muster_jobs"));
}
