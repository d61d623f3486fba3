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

#[test]
fn idle_connections_are_closed_after_the_io_timeout() {
    // rpc::IO_TIMEOUT is 30 s (docs/limits.md); this test waits for it.
    let c = cluster(1);
    let mut conns = Vec::new();
    for addr in [ctld_addr(&c), node_addr(&c, "node1")] {
        conns.push((addr.clone(), send(&addr, b""), Instant::now()));
        conns.push((
            addr.clone(),
            send(&addr, &[0, 0, 0, 50, b'{']),
            Instant::now(),
        ));
    }
    for (addr, s, opened) in &mut conns {
        let (_, closed) = read_until_closed(s, secs(45));
        let after = opened.elapsed();
        assert!(closed, "{addr} kept an idle connection open past 45 s");
        assert!(
            after >= secs(25),
            "{addr} closed an idle connection after only {after:?}"
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
