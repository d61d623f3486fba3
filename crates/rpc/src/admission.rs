//! Admission of connections: which peers may hold a daemon's sockets, and
//! for how long, before and after they prove who they are.
//!
//! ```text
//!  accept (never waits) --> Ticket: unauthenticated
//!     | a small pool (`Limits::unauthenticated`, and per peer address
//!     | `unauthenticated_per_peer`): when full, the OLDEST unauthenticated
//!     | connection is closed at once (`Ticket::shed` resolves), so a new
//!     | one always gets in; each must send a valid credential before its
//!     | deadline (`Limits::deadline`, longer for a large first frame)
//!     v
//!  Ticket::authenticate(uid) --> authenticated: `Limits::authenticated`
//!     connections in all, `authenticated_per_uid` per user; the daemons'
//!     own users (root, SlurmUser) are held to neither
//! ```
//!
//! Why the oldest is closed: a real client sends its credential in its
//! first frame, in the same moment it connects, so it leaves the pool
//! within milliseconds; a connection that has waited longest without one
//! is the likeliest to be hostile. A flood therefore costs a real client
//! nothing unless the flood replaces the whole pool (a few hundred
//! connections) in the time the client takes to send one frame.
//!
//! This module owns the counts and the choice of whom to close; it does
//! no I/O. The daemons (ctld, noded) read the frames, check credentials and
//! close what a ticket tells them to.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The budgets of one listening daemon.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections that have not yet presented a valid credential.
    pub unauthenticated: usize,
    /// Of those, from one peer address.
    pub unauthenticated_per_peer: usize,
    /// How long a connection may take to present a valid credential (its
    /// first frame, whole, for a frame up to `DEADLINE_BYTES`).
    pub deadline: Duration,
    /// Authenticated connections of the users the daemons do not exempt.
    pub authenticated: usize,
    /// Of those, of one user.
    pub authenticated_per_uid: usize,
}

/// A first frame up to this size must arrive within `Limits::deadline`; a
/// larger one (a submission with a large script) gets one second more per
/// this many bytes, so a slow link can still carry it.
pub const DEADLINE_BYTES: u32 = 1 << 20;

/// Why an authenticated connection was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The user already holds `authenticated_per_uid` connections.
    #[error("uid {uid} already holds {held} connections (the limit per user)")]
    PerUser {
        /// The user.
        uid: u32,
        /// How many it holds.
        held: usize,
    },
    /// `authenticated` connections are open.
    #[error("{held} authenticated connections are open (the limit)")]
    Full {
        /// How many are open.
        held: usize,
    },
}

/// The shared counts of one listening daemon.
pub struct Admission {
    limits: Limits,
    state: Mutex<State>,
    /// Unauthenticated connections closed to make room, since start.
    shed: AtomicU64,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// Unauthenticated connections by age (ids grow): peer and the signal
    /// that closes it.
    pending: BTreeMap<u64, (IpAddr, Arc<Notify>)>,
    /// The same, by peer.
    by_peer: HashMap<IpAddr, BTreeSet<u64>>,
    authenticated: usize,
    by_uid: HashMap<u32, usize>,
    /// When a shed was last logged, and how many since.
    last_log: Option<Instant>,
    unlogged: u64,
    /// The same for connections closed for what they sent (or did not)
    /// before authenticating.
    last_failure_log: Option<Instant>,
    failures_unlogged: u64,
}

/// Whether a line counted since `last` is due (at most one per 10 s).
fn log_due(last: Option<Instant>) -> bool {
    match last {
        Some(t) => t.elapsed() >= Duration::from_secs(10),
        None => true,
    }
}

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Pending,
    /// Counted against `uid` (unless exempt).
    Admitted {
        uid: u32,
        exempt: bool,
    },
    /// Refused an authenticated place: counted nowhere.
    Out,
}

/// One accepted connection's place. Dropping it gives the place back.
pub struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    peer: IpAddr,
    opened: Instant,
    shed: Arc<Notify>,
    phase: Mutex<Phase>,
}

/// An IPv4 peer seen through an IPv6 socket counts as the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

impl Admission {
    /// Counts for a daemon with these limits.
    pub fn new(limits: Limits) -> Arc<Admission> {
        Arc::new(Admission {
            limits,
            state: Mutex::new(State::default()),
            shed: AtomicU64::new(0),
        })
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Connections open that have not yet presented a valid credential.
    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a few map operations that cannot panic half way.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection from `peer`, unauthenticated. It always gets in:
    /// where the pool (or the peer's share of it) is full, the oldest
    /// unauthenticated connection (of that peer) is told to close.
    pub fn arrive(self: &Arc<Self>, peer: IpAddr) -> Ticket {
        let peer = canonical(peer);
        let shed = Arc::new(Notify::new());
        let mut st = self.lock();
        let of_peer = st.by_peer.get(&peer).map_or(0, BTreeSet::len);
        if of_peer >= self.limits.unauthenticated_per_peer.max(1) {
            let oldest = st.by_peer.get(&peer).and_then(|ids| ids.first().copied());
            if let Some(id) = oldest {
                self.shed_locked(&mut st, id);
            }
        } else if st.pending.len() >= self.limits.unauthenticated.max(1) {
            if let Some((&id, _)) = st.pending.first_key_value() {
                self.shed_locked(&mut st, id);
            }
        }
        let id = st.next_id;
        st.next_id += 1;
        st.pending.insert(id, (peer, shed.clone()));
        st.by_peer.entry(peer).or_default().insert(id);
        drop(st);
        Ticket {
            admission: self.clone(),
            id,
            peer,
            opened: Instant::now(),
            shed,
            phase: Mutex::new(Phase::Pending),
        }
    }

    /// Closes the oldest unauthenticated connection, if any: for an accept
    /// that failed for want of file descriptors. Whether there was one.
    pub fn shed_oldest(&self) -> bool {
        let mut st = self.lock();
        match st.pending.first_key_value() {
            Some((&id, _)) => {
                self.shed_locked(&mut st, id);
                true
            }
            None => false,
        }
    }

    /// Unauthenticated connections closed to make room, since start.
    pub fn shed_count(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// Unauthenticated and authenticated (counted) connections now.
    pub fn counts(&self) -> (usize, usize) {
        let st = self.lock();
        (st.pending.len(), st.authenticated)
    }

    fn forget_pending(st: &mut State, id: u64) -> Option<Arc<Notify>> {
        let (peer, notify) = st.pending.remove(&id)?;
        if let Some(ids) = st.by_peer.get_mut(&peer) {
            ids.remove(&id);
            if ids.is_empty() {
                st.by_peer.remove(&peer);
            }
        }
        Some(notify)
    }

    fn shed_locked(&self, st: &mut State, id: u64) {
        let peer = st.pending.get(&id).map(|(p, _)| *p);
        if let Some(notify) = Self::forget_pending(st, id) {
            notify.notify_one();
            self.shed.fetch_add(1, Ordering::Relaxed);
            st.unlogged += 1;
            // One line per ten seconds at most: a flood must not flood the
            // log too.
            if log_due(st.last_log) {
                tracing::warn!(
                    "closing unauthenticated connections to make room: {} since the last such \
                     line (the latest from {}; {} unauthenticated open, at most {} \
                     and {} per address)",
                    st.unlogged,
                    peer.map_or_else(|| "?".to_string(), |p| p.to_string()),
                    st.pending.len(),
                    self.limits.unauthenticated,
                    self.limits.unauthenticated_per_peer
                );
                st.last_log = Some(Instant::now());
                st.unlogged = 0;
            }
        }
    }
}

/// What a daemon's accept loop does after `accept` failed: out of file
/// descriptors (the limit is raised to the hard limit at start), the
/// oldest unauthenticated connection makes room and the loop pauses 5 ms;
/// other failures (a connection reset before it was accepted) pass with a
/// 50 ms pause. A pause, not a spin, and a warning at most once a second.
#[derive(Debug, Default)]
pub struct AcceptErrors {
    last_warned: Option<Instant>,
}

impl AcceptErrors {
    /// Notes the failure `e` and says how long the loop should pause.
    pub fn pause_after(&mut self, e: &std::io::Error, admission: &Admission) -> Duration {
        let out_of_fds = matches!(
            e.raw_os_error(),
            Some(n) if n == nix::errno::Errno::EMFILE as i32
                || n == nix::errno::Errno::ENFILE as i32
        );
        if self
            .last_warned
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!("accept: {e}");
            self.last_warned = Some(Instant::now());
        }
        if out_of_fds && admission.shed_oldest() {
            Duration::from_millis(5)
        } else {
            Duration::from_millis(50)
        }
    }
}

impl Ticket {
    /// The peer's address.
    pub fn peer(&self) -> IpAddr {
        self.peer
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the connection has presented a valid credential.
    pub fn is_authenticated(&self) -> bool {
        !matches!(*self.phase(), Phase::Pending)
    }

    /// How long a read on a connection not yet authenticated may take
    /// (what is left of its deadline; zero once past it), for a frame of
    /// `len` bytes (0 while the length is not known). `None` once
    /// authenticated: the daemon's own timeouts apply.
    pub fn read_budget(&self, len: u32) -> Option<Duration> {
        if self.is_authenticated() {
            return None;
        }
        let extra = Duration::from_secs(u64::from(len / DEADLINE_BYTES));
        let until = self.opened + self.admission.limits.deadline + extra;
        Some(until.saturating_duration_since(Instant::now()))
    }

    /// Notes that the connection, not yet authenticated, is being closed
    /// for `why` (silence past its deadline, a frame cut short, garbage):
    /// logged once per 10 s at most with a count, since a flood would
    /// otherwise write a line per connection.
    pub fn note_closed(&self, why: &dyn std::fmt::Display) {
        let mut st = self.admission.lock();
        st.failures_unlogged += 1;
        if log_due(st.last_failure_log) {
            tracing::warn!(
                "closed {} unauthenticated connection(s) since the last such line for what \
                 they sent or did not send in time (the latest from {}: {why})",
                st.failures_unlogged,
                self.peer
            );
            st.last_failure_log = Some(Instant::now());
            st.failures_unlogged = 0;
        }
    }

    /// Resolves when a newer connection has taken this one's place in the
    /// unauthenticated pool; never once the connection is authenticated.
    pub async fn shed(&self) {
        self.shed.notified().await;
        if self.is_authenticated() {
            std::future::pending::<()>().await;
        }
    }

    /// Forgets a shedding not acted on: for a connection found with its
    /// request waiting as it was shed (`rpc::lobby`), which is served
    /// rather than closed, so that a later `shed` does not close it for
    /// that.
    pub fn forgive_shed(&self) {
        use std::future::Future;
        let notified = self.shed.notified();
        let mut notified = std::pin::pin!(notified);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        // Polling takes the stored notification, if there is one.
        let _ = notified.as_mut().poll(&mut cx);
    }

    /// The connection presented a valid credential of `uid`: it leaves the
    /// unauthenticated pool for an authenticated place, unless its user
    /// (`exempt`: root and SlurmUser are never refused) or the daemon has
    /// no place left. Authenticating again changes nothing.
    pub fn authenticate(&self, uid: u32, exempt: bool) -> Result<(), Refused> {
        let mut phase = self.phase();
        match *phase {
            Phase::Pending => {}
            Phase::Admitted { .. } => return Ok(()),
            Phase::Out => return Err(Refused::Full { held: 0 }),
        }
        let limits = self.admission.limits;
        let mut st = self.admission.lock();
        Admission::forget_pending(&mut st, self.id);
        if !exempt {
            let held = st.by_uid.get(&uid).copied().unwrap_or(0);
            let refusal = if held >= limits.authenticated_per_uid {
                Some(Refused::PerUser { uid, held })
            } else if st.authenticated >= limits.authenticated {
                Some(Refused::Full {
                    held: st.authenticated,
                })
            } else {
                None
            };
            if let Some(r) = refusal {
                *phase = Phase::Out;
                return Err(r);
            }
            st.authenticated += 1;
            *st.by_uid.entry(uid).or_default() += 1;
        }
        *phase = Phase::Admitted { uid, exempt };
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let phase = *self.phase();
        let mut st = self.admission.lock();
        match phase {
            Phase::Pending => {
                Admission::forget_pending(&mut st, self.id);
            }
            Phase::Admitted { uid, exempt: false } => {
                st.authenticated = st.authenticated.saturating_sub(1);
                if let Some(n) = st.by_uid.get_mut(&uid) {
                    *n -= 1;
                    if *n == 0 {
                        st.by_uid.remove(&uid);
                    }
                }
            }
            Phase::Admitted { exempt: true, .. } | Phase::Out => {}
        }
    }
}

/// Raises the process's soft limit on open files to its hard limit, so
/// that thousands of connections (most of them soon closed) do not make
/// `accept` fail: the soft limit before and after, or the error. Child
/// processes inherit the raised limit; a daemon that starts users'
/// programs puts the old one back for them (noded does).
pub fn raise_open_file_limit() -> Result<(u64, u64), std::io::Error> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
        return Ok((soft, hard));
    }
    Ok((soft, soft))
}

/// The listen queue asked for (the kernel caps it at `net.core.somaxconn`):
/// a burst of connections waits there until the accept loop takes it, and
/// one that finds it full has its handshake dropped and retried a second
/// later, a second's delay for a real client caught in a flood.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds a listening socket to the first address `addr` (`host:port`)
/// resolves to, with `LISTEN_BACKLOG` (tokio's own bind asks for 1024).
pub async fn listen(addr: &str) -> Result<tokio::net::TcpListener, std::io::Error> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let socket = if a.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        // As tokio's bind: a restarted daemon may bind its port while
        // connections of the last one linger in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        match socket.bind(a) {
            Ok(()) => return socket.listen(LISTEN_BACKLOG),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{addr} resolves to no address"),
        )
    }))
}

#[cfg(test)]
mod tests;
