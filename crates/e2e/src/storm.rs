//! A storm of hostile connections against one daemon's port: many held
//! open without a credential (idle ones, and ones that sent part of a
//! frame), and a set that is opened again as fast as the daemon closes it.
//! Used by the hostile end-to-end tests and by `muster-bench hostile`; it
//! measures nothing itself, it only counts what it did.
//!
//! ```text
//!   Storm::start(addr, plan)
//!     held thread(s):  connect, send nothing / 2 bytes of a length prefix /
//!                      a prefix and half a body; keep every socket open
//!     cycling thread:  keep `plan.cycling` sockets open, and reopen each one
//!                      the daemon closes at once
//!   storm.stop() -> StormStats (threads joined, every socket closed)
//! ```

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How many connections of each kind a storm opens.
#[derive(Clone, Copy, Debug)]
pub struct StormPlan {
    /// Connections opened once and held until the storm stops, in turn
    /// idle, two bytes of a length prefix, and a whole prefix announcing
    /// 100 bytes followed by 10 of them.
    pub held: usize,
    /// Threads that open the held connections (a daemon that accepts
    /// slowly makes each connect wait).
    pub held_threads: usize,
    /// Connections kept open by the cycling thread, each opened again (with
    /// half a frame) as soon as the daemon closes it.
    pub cycling: usize,
    /// The CPU the storm's threads run on, where given: a benchmark puts
    /// the storm on a CPU of its own, as connections from other hosts
    /// would cost the measured host nothing but their handling.
    pub cpu: Option<usize>,
}

/// What a storm did.
#[derive(Clone, Copy, Debug, Default)]
pub struct StormStats {
    /// Held connections opened.
    pub held_opened: u64,
    /// Connects that failed or timed out (held and cycling).
    pub connect_failures: u64,
    /// Connections the cycling thread opened, first ones included.
    pub cycled: u64,
    /// Held connections the daemon had closed by the time the storm
    /// stopped.
    pub held_closed: u64,
}

/// A running storm; `stop` ends it.
pub struct Storm {
    stop: Arc<AtomicBool>,
    opened: Arc<AtomicU64>,
    /// Held threads that have opened their share.
    done: Arc<AtomicU64>,
    n_held_threads: u64,
    threads: Vec<JoinHandle<StormStats>>,
}

/// How long one connect may take: a daemon whose listen queue is full
/// drops the handshake, and a storm must not stall on it.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);

/// Half a frame: a length prefix announcing 100 bytes, and 10 of them.
fn half_frame() -> Vec<u8> {
    let mut out = 100u32.to_be_bytes().to_vec();
    out.extend_from_slice(br#"{"version""#);
    out
}

/// Keeps the calling thread on `cpu` (best effort: a CPU the process may
/// not use leaves the thread where it was).
fn pin(cpu: Option<usize>) {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let Some(cpu) = cpu else { return };
    let mut set = CpuSet::new();
    if set.set(cpu).is_ok() {
        let _ = sched_setaffinity(Pid::from_raw(0), &set);
    }
}

fn open(addr: &SocketAddr, kind: usize) -> Option<TcpStream> {
    let mut s = TcpStream::connect_timeout(addr, CONNECT_TIMEOUT).ok()?;
    let _ = match kind % 3 {
        0 => Ok(()),
        1 => s.write_all(&[0, 0]),
        _ => s.write_all(&half_frame()),
    };
    Some(s)
}

/// Whether the daemon closed `s` (nonblocking: an open, silent socket is
/// not closed).
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

impl Storm {
    /// Starts the storm against `addr` (`host:port`).
    pub fn start(addr: &str, plan: StormPlan) -> Storm {
        let addr = addr
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .unwrap_or_else(|| panic!("storm: cannot resolve {addr}"));
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        let n_threads = plan.held_threads.max(1);
        for t in 0..n_threads {
            let share = plan.held / n_threads + usize::from(t < plan.held % n_threads);
            let (stop, opened, done) = (stop.clone(), opened.clone(), done.clone());
            threads.push(std::thread::spawn(move || {
                pin(plan.cpu);
                let mut stats = StormStats::default();
                let mut held = Vec::with_capacity(share);
                for i in 0..share {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    match open(&addr, i) {
                        Some(s) => {
                            held.push(s);
                            stats.held_opened += 1;
                            opened.fetch_add(1, Ordering::Relaxed);
                        }
                        None => stats.connect_failures += 1,
                    }
                }
                done.fetch_add(1, Ordering::Relaxed);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                for s in &mut held {
                    let _ = s.set_nonblocking(true);
                    stats.held_closed += u64::from(closed(s));
                }
                stats
            }));
        }
        if plan.cycling > 0 {
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                pin(plan.cpu);
                let mut stats = StormStats::default();
                let mut kind = 0usize;
                let mut reopen = |stats: &mut StormStats| {
                    kind += 1;
                    let s = open(&addr, kind)?;
                    s.set_nonblocking(true).ok()?;
                    stats.cycled += 1;
                    Some(s)
                };
                let mut socks: Vec<Option<TcpStream>> = Vec::with_capacity(plan.cycling);
                while socks.len() < plan.cycling && !stop.load(Ordering::Relaxed) {
                    socks.push(reopen(&mut stats));
                }
                while !stop.load(Ordering::Relaxed) {
                    let mut any = false;
                    for slot in &mut socks {
                        let gone = match slot {
                            Some(s) => closed(s),
                            None => true,
                        };
                        if gone {
                            any = true;
                            *slot = reopen(&mut stats);
                            if slot.is_none() {
                                stats.connect_failures += 1;
                            }
                        }
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    if !any {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                stats
            }));
        }
        Storm {
            stop,
            opened,
            done,
            n_held_threads: n_threads as u64,
            threads,
        }
    }

    /// Held connections opened so far.
    pub fn held_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Whether every held connection has been opened (or its connect
    /// failed).
    pub fn held_all_opened(&self) -> bool {
        self.done.load(Ordering::Relaxed) == self.n_held_threads
    }

    /// Stops every thread, closes every socket, and sums what they did.
    pub fn stop(self) -> StormStats {
        self.stop.store(true, Ordering::Relaxed);
        let mut sum = StormStats::default();
        for t in self.threads {
            if let Ok(s) = t.join() {
                sum.held_opened += s.held_opened;
                sum.connect_failures += s.connect_failures;
                sum.cycled += s.cycled;
                sum.held_closed += s.held_closed;
            }
        }
        sum
    }
}

/// Raises this process's soft limit on open files to its hard limit (a
/// storm holds thousands of sockets); the limit now in force.
pub fn raise_open_file_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(_) => soft,
        },
        Ok((soft, _)) => soft,
        Err(_) => 0,
    }
}
