//! Hostile clients against a real controller and a real node daemon: idle
//! connections, a 2 GiB length prefix, random garbage, truncated frames
//! and a frame from a future protocol version. Meanwhile and afterwards the
//! ordinary commands keep working promptly and both daemons stay up
//! (docs/limits.md lists the limits these rely on).

use crate::{builder, cluster, secs};
use e2e::Cluster;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The value of `key=` on the first slurm.conf line that `line_has`
/// accepts.
fn conf_value(c: &Cluster, line_has: &str, key: &str) -> String {
    let text = std::fs::read_to_string(c.conf()).expect("reading the cluster's slurm.conf");
    text.lines()
        .filter(|l| l.contains(line_has))
        .find_map(|l| e2e::field(l, key))
        .unwrap_or_else(|| panic!("no {key}= on a line with {line_has:?} in:\n{text}"))
}

fn ctld_addr(c: &Cluster) -> String {
    format!(
        "127.0.0.1:{}",
        conf_value(c, "SlurmctldPort=", "SlurmctldPort")
    )
}

fn node_addr(c: &Cluster, node: &str) -> String {
    format!(
        "127.0.0.1:{}",
        conf_value(c, &format!("NodeName={node} "), "Port")
    )
}

/// A small deterministic generator (xorshift64*), so a failure names the
/// seed that replays it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn ping_frame(version: u32, body: &str) -> Vec<u8> {
    framed(
        format!(
            r#"{{"version":{version},"identity":{{"uid":0,"gid":0,"user":"hostile","host":"h"}},"body":{body}}}"#
        )
        .as_bytes(),
    )
}

/// Connects and writes `bytes` (a peer that hangs up early is fine: the
/// daemon may close on a bad prefix before the rest is written).
fn send(addr: &str, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    let _ = s.write_all(bytes);
    s
}

/// Reads until the peer closes or `limit` passes; what arrived, and whether
/// it closed.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while start.elapsed() < limit {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (got, true),
        }
    }
    (got, false)
}

/// Every kind of hostile connection, opened against `addr` and held open
/// by the returned streams.
fn attack(addr: &str, rng: &mut Rng) -> Vec<TcpStream> {
    let mut held = Vec::new();
    // Idle: connect and send nothing.
    for _ in 0..100 {
        held.push(send(addr, b""));
    }
    // Half a length prefix, and a valid prefix with half a body.
    let ping = ping_frame(1, r#""Ping""#);
    for cut in [2, 4, 10, ping.len() - 1] {
        held.push(send(addr, &ping[..cut]));
    }
    // Random garbage, raw and inside a well-formed length prefix.
    for _ in 0..40 {
        let n = (rng.next() % 512) as usize;
        let junk = rng.bytes(n);
        held.push(send(addr, &junk));
        held.push(send(addr, &framed(&junk)));
    }
    held
}

/// A 2 GiB length prefix is refused at once: the daemon closes the
/// connection without reading (or allocating) the announced body.
fn oversized_prefix_is_closed_at_once(addr: &str) {
    let mut conns: Vec<TcpStream> = (0..20)
        .map(|_| send(addr, &0x8000_0000u32.to_be_bytes()))
        .collect();
    for s in &mut conns {
        let (got, closed) = read_until_closed(s, secs(5));
        assert!(closed, "{addr} kept a 2 GiB frame open");
        assert!(got.is_empty(), "{addr} answered a 2 GiB frame with {got:?}");
    }
}

/// The daemon is still running (not exited, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string))
        })
        .is_some_and(|state| state != "Z" && state != "X")
}

fn commands_work_promptly(c: &Cluster) {
    let start = Instant::now();
    c.ok("squeue", &[]);
    c.ok("sinfo", &[]);
    assert!(
        start.elapsed() < secs(5),
        "squeue and sinfo took {:?} under attack\n{}",
        start.elapsed(),
        c.logs()
    );
    let id = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED");
}

#[test]
fn hostile_clients_do_not_stop_the_daemons() {
    let c = cluster(1);
    let ctld = ctld_addr(&c);
    let node = node_addr(&c, "node1");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    eprintln!("hostile: garbage seed {seed}");
    let mut rng = Rng(seed);

    let mut held = attack(&ctld, &mut rng);
    held.extend(attack(&node, &mut rng));
    commands_work_promptly(&c);

    oversized_prefix_is_closed_at_once(&ctld);
    oversized_prefix_is_closed_at_once(&node);

    // A future protocol version: the controller answers with Slurm's
    // protocol version error; the node daemon closes the connection.
    let future = ping_frame(
        proto::PROTOCOL_VERSION + 1,
        r#"{"RequestFromTheFuture":{}}"#,
    );
    let mut s = send(&ctld, &future);
    let (got, _) = read_until_closed(&mut s, secs(5));
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.contains("ProtocolVersion"),
        "controller answered a future version with {text:?}"
    );
    let mut s = send(&node, &future);
    let (_, closed) = read_until_closed(&mut s, secs(5));
    assert!(closed, "the node daemon kept a future-version frame open");

    // A valid request on a fresh connection is still answered.
    let mut s = send(&ctld, &ping_frame(proto::PROTOCOL_VERSION, r#""Ping""#));
    let (got, _) = read_until_closed(&mut s, secs(5));
    assert!(got.len() > 4, "no answer to a Ping");

    commands_work_promptly(&c);
    drop(held);
    commands_work_promptly(&c);
    for pid in c.daemon_pids() {
        assert!(alive(pid), "daemon {pid} died\n{}", c.logs());
    }
    assert_eq!(c.node_state("node1"), "idle", "{}", c.logs());
}

/// A Ping frame signed with the cluster's key, as the test's user, for a
/// node daemon or the controller.
fn signed_ping(c: &Cluster, to_node: bool) -> Vec<u8> {
    let me = client::current_identity();
    let key = auth::load_key(&c.root().join(e2e::KEY_FILE)).expect("reading the cluster key");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let cred = auth::Signer::with_key(&key)
        .sign(&me, now)
        .expect("signing");
    let mut out = Vec::new();
    let written = if to_node {
        let env = rpc::signed_envelope(me, Some(cred), proto::NodeRequest::Ping);
        rpc::write_frame(&mut out, &env)
    } else {
        let env = rpc::signed_envelope(me, Some(cred), proto::CtldRequest::Ping);
        rpc::write_frame(&mut out, &env)
    };
    written.expect("a frame");
    out
}

#[test]
fn unauthenticated_connections_are_closed_at_their_deadline_and_authenticated_ones_after_the_io_timeout(
) {
    // A connection must present a valid credential within 1.5 s of its
    // connect; once it has, rpc::IO_TIMEOUT (30 s) of silence ends it
    // (docs/limits.md). This test waits for the latter.
    let c = cluster(1);
    let (ctld, node) = (ctld_addr(&c), node_addr(&c, "node1"));
    let mut unauthenticated = Vec::new();
    for addr in [&ctld, &node] {
        unauthenticated.push((addr.clone(), send(addr, b""), Instant::now()));
        unauthenticated.push((
            addr.clone(),
            send(addr, &[0, 0, 0, 50, b'{']),
            Instant::now(),
        ));
        // A request without a credential is refused, and the connection
        // is still unauthenticated.
        unauthenticated.push((
            addr.clone(),
            send(addr, &ping_frame(proto::PROTOCOL_VERSION, r#""Ping""#)),
            Instant::now(),
        ));
    }
    for (addr, s, opened) in &mut unauthenticated {
        let (_, closed) = read_until_closed(s, secs(10));
        let after = opened.elapsed();
        assert!(
            closed,
            "{addr} kept an unauthenticated connection open past 10 s"
        );
        assert!(
            after >= Duration::from_millis(1_000),
            "{addr} closed an unauthenticated connection after only {after:?}"
        );
    }
    let mut authenticated = vec![
        (ctld.clone(), send(&ctld, &signed_ping(&c, false))),
        (node.clone(), send(&node, &signed_ping(&c, true))),
    ];
    let opened = Instant::now();
    for (addr, s) in &mut authenticated {
        let (got, closed) = read_until_closed(s, secs(45));
        let after = opened.elapsed();
        assert!(got.len() > 4, "{addr} did not answer a signed Ping");
        assert!(closed, "{addr} kept an idle connection open past 45 s");
        assert!(
            after >= secs(25),
            "{addr} closed an idle authenticated connection after only {after:?}"
        );
    }
    for pid in c.daemon_pids() {
        assert!(alive(pid), "daemon {pid} died\n{}", c.logs());
    }
    c.ok("squeue", &[]);
}

/// The request `sbatch script` sends, captured by a stand-in controller,
/// as the JSON text of its envelope (sbatch sends it in binary; the
/// controller reads JSON requests too, and JSON's size is easy to set).
fn captured_submission(c: &Cluster, script: &str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let text = std::fs::read_to_string(c.conf()).unwrap();
    let fake: String = text
        .lines()
        .map(|l| match l.starts_with("SlurmctldPort=") {
            true => format!("SlurmctldPort={port}\n"),
            false => format!("{l}\n"),
        })
        .collect();
    let fake_conf = c.root().join("capture.conf");
    std::fs::write(&fake_conf, fake).unwrap();
    c.write("capture.sh", script);
    let capture = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let env: proto::Envelope<proto::CtldRequest> = rpc::read_frame(&mut s).unwrap();
        serde_json::to_string(&env).unwrap()
    });
    // The stand-in never answers, and sbatch would send its submission
    // again until its timeout (client::Client::call): it is stopped once
    // the request is captured.
    let mut sbatch = c.command("sbatch");
    sbatch.arg("capture.sh").env("SLURM_CONF", &fake_conf);
    let mut sbatch = sbatch.spawn().expect("starting sbatch");
    let captured = capture.join().unwrap();
    let _ = sbatch.kill();
    let _ = sbatch.wait();
    captured
}

/// Sends `body` as one frame; the answer, if any.
fn call_raw(addr: &str, body: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    let _ = s.write_all(&(body.len() as u32).to_be_bytes());
    let _ = s.write_all(body);
    read_until_closed(&mut s, secs(30)).0
}

#[test]
fn a_submission_too_large_to_journal_is_refused_and_the_controller_stays_up() {
    // A request is journaled as one record, and a record above the
    // journal's 64 MiB limit used to stop the controller. The controller
    // now reads requests of at most a quarter of the frame limit.
    // Launching a 4 MiB script (read, spooled and started by a debug
    // build) took over Slurm's default MessageTimeout of 10 s on a loaded
    // machine: the controller then took the node for not responding.
    let c = builder().nodes(1).conf_extra("MessageTimeout=60\n").start();
    let ctld = ctld_addr(&c);
    let marker = "Q".repeat(100);
    let body = captured_submission(&c, &format!("#!/bin/sh\n#{marker}\ntrue\n"));
    let sized = |len: usize| {
        let pad = "Q".repeat(len - body.len());
        body.replacen(&marker, &format!("{marker}{pad}"), 1)
    };
    let limit = proto::MAX_REQUEST_BYTES as usize;
    for len in [proto::MAX_FRAME_BYTES as usize, limit + 1] {
        // Refused with an answer that says why, then closed (issue 34).
        let got = call_raw(&ctld, sized(len).as_bytes());
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.ends_with(r#""body":{"Error":"RequestTooLarge"}}"#),
            "a {len}-byte request was answered {text:?}"
        );
        c.ok("squeue", &[]);
    }
    let got = call_raw(&ctld, sized(limit).as_bytes());
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("Submitted"), "{text}\n{}", c.logs());
    // The largest submission the controller accepts still fits the node
    // daemon's request limit once the launch adds the job's environment:
    // the job runs.
    let id: u32 = text
        .split("job_id\":")
        .nth(1)
        .and_then(|r| r.split(|ch: char| !ch.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {text}"));
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    for pid in c.daemon_pids() {
        assert!(alive(pid), "daemon {pid} died\n{}", c.logs());
    }
}

/// The median and the largest of `v` (sorted here).
fn median_max(v: &mut [Duration]) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() - 1])
}

/// Issue 34: about 1,100 idle connections without a credential used to
/// fill the controller's 1,024 connections, and every command waited
/// 24-28 s for one of them to time out. Now a connection that presents no
/// valid credential within a short deadline is closed, unauthenticated
/// connections have a small pool of their own (the oldest is closed when a
/// new one comes), and the commands of a real user are served meanwhile.
/// 5,000 hostile connections (idle, part of a frame, and a set reopened as
/// fast as they are closed) against the controller and the node daemon;
/// meanwhile `squeue`, `sbatch` and an authenticated ping of the node
/// daemon, each timed. Performance is not asserted (bench/hostile.sh
/// measures it against the 100 ms target); a stall is: each call must
/// finish far below the old 24 s.
#[test]
fn issue_34_a_storm_of_unauthenticated_connections_does_not_stall_commands() {
    use e2e::storm::{raise_open_file_limit, Storm, StormPlan};
    let limit = raise_open_file_limit();
    // The storms hold 5,000 sockets in this process, and the commands and
    // the cluster's pipes need a few more.
    let held_ctld = 3_500.min(limit.saturating_sub(1_000) as usize * 3 / 4);
    let held_node = 1_200.min(limit.saturating_sub(1_000) as usize / 4);
    eprintln!("storm: open-file limit {limit}; holding {held_ctld} + {held_node}");
    let c = cluster(1);
    let ctld = ctld_addr(&c);
    let node = node_addr(&c, "node1");
    let ctld_storm = Storm::start(
        &ctld,
        StormPlan {
            held: held_ctld,
            held_threads: 2,
            cycling: 200,
            cpu: None,
        },
    );
    let node_storm = Storm::start(
        &node,
        StormPlan {
            held: held_node,
            held_threads: 1,
            cycling: 100,
            cpu: None,
        },
    );
    let me = client::current_identity();
    let key = auth::load_key(&c.root().join(e2e::KEY_FILE)).expect("reading the cluster key");
    let signer = auth::Signer::with_key(&key);
    let (mut squeue, mut sbatch, mut ping) = (Vec::new(), Vec::new(), Vec::new());
    let mut ids = Vec::new();
    // Rounds while the storms open their connections, and on for a while
    // after (the cycling ones go on): past the deadline of the last held
    // connection, so that all of them should have been closed by then.
    let start = Instant::now();
    let mut all_opened: Option<Instant> = None;
    while squeue.len() < 5 || all_opened.is_none_or(|t| t.elapsed() < secs(2)) {
        if all_opened.is_none() && ctld_storm.held_all_opened() && node_storm.held_all_opened() {
            all_opened = Some(Instant::now());
        }
        if start.elapsed() > secs(30) {
            break;
        }
        let t = Instant::now();
        let out = c.run("squeue", &[]);
        squeue.push(t.elapsed());
        assert!(
            out.ok(),
            "squeue failed under the storm: {out}\n{}",
            c.logs()
        );
        let t = Instant::now();
        let out = c.run("sbatch", &["--parsable", "--wrap", "true"]);
        sbatch.push(t.elapsed());
        assert!(
            out.ok(),
            "sbatch failed under the storm: {out}\n{}",
            c.logs()
        );
        ids.push(out.stdout.trim().parse::<u32>().expect("a job id"));
        let t = Instant::now();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let cred = signer.sign(&me, now).expect("signing");
        let answer: Result<proto::NodeResponse, _> = rpc::call_blocking(
            &node,
            me.clone(),
            Some(cred),
            proto::NodeRequest::Ping,
            secs(30),
        );
        ping.push(t.elapsed());
        assert!(
            matches!(answer, Ok(proto::NodeResponse::Ok)),
            "the node daemon did not answer an authenticated ping under the storm: {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let storm_time = start.elapsed();
    let ctld_stats = ctld_storm.stop();
    let node_stats = node_storm.stop();
    eprintln!("storm on the controller: {ctld_stats:?}; on the node daemon: {node_stats:?}");
    for (name, times) in [
        ("squeue", &mut squeue),
        ("sbatch", &mut sbatch),
        ("node ping", &mut ping),
    ] {
        let (median, max) = median_max(times);
        eprintln!("{name} under the storm: median {median:?}, max {max:?} (target 100 ms)");
        assert!(
            max < secs(5),
            "{name} took {max:?} under the storm ({times:?})\n{}",
            c.logs()
        );
    }
    // The storms got their connections in (a controller that stops
    // accepting leaves them timing out in the listen queue), and every
    // held one was closed while the storm went on (pushed out by newer
    // ones, or at its deadline), not left to the 30 s I/O timeout.
    assert!(
        all_opened.is_some(),
        "the storms had not opened their connections after {storm_time:?}"
    );
    for (name, stats, held) in [
        ("controller", ctld_stats, held_ctld),
        ("node daemon", node_stats, held_node),
    ] {
        assert!(
            stats.held_opened >= held as u64 * 9 / 10,
            "the {name} accepted only {} of {held} connections",
            stats.held_opened
        );
        assert_eq!(
            stats.held_closed, stats.held_opened,
            "the {name} kept unauthenticated connections open"
        );
    }
    for id in ids {
        assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    }
    for pid in c.daemon_pids() {
        assert!(alive(pid), "daemon {pid} died\n{}", c.logs());
    }
    assert_eq!(c.node_state("node1"), "idle", "{}", c.logs());
}

/// The soft and hard open-file limits of a process.
fn nofile_limits(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_else(|| panic!("no open-file limit in /proc/{pid}/limits:\n{text}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1])
}

#[test]
fn the_daemons_raise_their_open_file_limit_and_jobs_keep_the_one_they_started_with() {
    // The daemons take their soft limit to the hard one, so that a storm of
    // connections does not make accept fail; the node daemon's step
    // supervisors put the old one back for the jobs.
    let c = builder().nodes(1).daemon_soft_nofile(1000).start();
    let mut hard = 0;
    for pid in c.daemon_pids() {
        let (soft, h) = nofile_limits(pid);
        assert_eq!(
            soft, h,
            "daemon {pid} kept a soft open-file limit of {soft}"
        );
        hard = h;
    }
    let id = c.submit(&["-o", "nofile.out", "--wrap", "ulimit -Sn"]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(
        c.wait_file("nofile.out", secs(10)).trim(),
        1000.min(hard).to_string(),
        "the job's soft open-file limit"
    );
}
