//! The lobby: where a daemon keeps connections that have sent no request
//! yet while a flood of them is on, so that the daemon's own runtime (the
//! requests of clients that did send one, the engine) never queues behind
//! them.
//!
//! ```text
//!  accept (daemon runtime)
//!     | a request is waiting (peeked, not read), or few connections
//!     | are unauthenticated (`Lobby::CROWD`):  served at once, as ever
//!     v
//!  otherwise: the socket moves to the lobby, a thread with a runtime
//!  of its own, until
//!     - a request has arrived: the socket moves back and is served
//!     - its deadline passes or a newer connection takes its place
//!       (`admission::Ticket`) with no request waiting: it is closed
//!       there, on the lobby's thread
//! ```
//!
//! A real client sends its request the moment it connects, so during a
//! flood its connection usually has the request waiting when accepted and
//! never enters the lobby; one that does leaves at its first bytes. The
//! flood's connections, which send nothing or half a frame, cost the
//! daemon's runtime one accept and one peek each; their timers, wake-ups
//! and closes run on the lobby's thread, so the daemon's tasks (the
//! engine, the answers) never wait in a run queue behind thousands of
//! theirs. The lobby's thread keeps the daemon's priority: a lower one
//! starves it on a busy host, and a client that did land there with it.
//! Outside a flood nothing moves: a quiet daemon serves every connection
//! where it accepted it.

use crate::admission::{Admission, Ticket};
use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::runtime::Handle;

/// What a peek at a new connection found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// A whole frame, or at least `PEEK_BYTES` of one.
    Request,
    /// Nothing yet, or part of a frame.
    Nothing,
    /// The peer closed (or the socket failed).
    Closed,
}

/// How much of a first frame must be waiting for a connection to count as
/// a client's: a whole small frame, or this much of a large one (a
/// submission whose script does not fit the socket buffer at once).
pub const PEEK_BYTES: usize = 4096;

/// Looks, without reading, at what `stream` has received.
pub fn peek(stream: &TcpStream) -> Waiting {
    use nix::sys::socket::{recv, MsgFlags};
    let mut buf = [0u8; PEEK_BYTES];
    match recv(
        stream.as_raw_fd(),
        &mut buf,
        MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
    ) {
        Ok(0) => Waiting::Closed,
        Ok(n) => classify(&buf[..n]),
        Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => Waiting::Nothing,
        Err(_) => Waiting::Closed,
    }
}

/// Whether `bytes`, the start of what a connection sent, hold a request:
/// a frame's length prefix and the whole frame, or `PEEK_BYTES` of it.
fn classify(bytes: &[u8]) -> Waiting {
    let Some(prefix) = bytes.first_chunk::<4>() else {
        return Waiting::Nothing;
    };
    let len = u32::from_be_bytes(*prefix) as usize;
    if bytes.len() >= PEEK_BYTES || bytes.len() - 4 >= len {
        Waiting::Request
    } else {
        Waiting::Nothing
    }
}

/// A lobby thread and the daemon runtime its connections go back to.
pub struct Lobby {
    handle: Handle,
    daemon: Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Lobby {
    /// Unauthenticated connections a daemon holds before new ones without
    /// a request waiting go to the lobby.
    pub const CROWD: usize = 64;

    /// Starts the lobby's thread (named `name`); connections leave it for
    /// the runtime this is called from.
    pub fn start(name: &str) -> io::Result<Lobby> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = stopped.await;
                });
                // Dropping the runtime drops its tasks: their sockets
                // close.
            })?;
        Ok(Lobby {
            handle,
            daemon: Handle::current(),
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Serves `stream` with `serve`: at once on the daemon's runtime (the
    /// caller's) where a request is waiting or the daemon is not crowded,
    /// else once its first request arrives, after a stay in the lobby.
    pub fn admit<F, Fut>(&self, admission: &Admission, stream: TcpStream, ticket: Ticket, serve: F)
    where
        F: FnOnce(TcpStream, Ticket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        if admission.pending() <= Self::CROWD {
            tokio::spawn(serve(stream, ticket));
            return;
        }
        match peek(&stream) {
            Waiting::Request => {
                tokio::spawn(serve(stream, ticket));
            }
            Waiting::Closed => {}
            Waiting::Nothing => {
                let Ok(socket) = stream.into_std() else {
                    return;
                };
                let daemon = self.daemon.clone();
                self.handle
                    .spawn(wait_in_lobby(socket, ticket, daemon, serve));
            }
        }
    }
}

/// A connection's stay in the lobby: until its first request is waiting
/// (then it is served on `daemon`), its deadline, or its shedding.
async fn wait_in_lobby<F, Fut>(
    socket: std::net::TcpStream,
    ticket: Ticket,
    daemon: Handle,
    serve: F,
) where
    F: FnOnce(TcpStream, Ticket) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Ok(stream) = TcpStream::from_std(socket) else {
        return;
    };
    let budget = ticket.read_budget(0).unwrap_or(crate::IO_TIMEOUT);
    // Shed by a newer connection, or at the deadline, a request that came
    // in the meantime is served all the same: the lobby's thread may have
    // been slow to look, and a client must not lose its place for that.
    let waited = tokio::select! {
        biased;
        waited = tokio::time::timeout(budget, first_request(&stream)) => match waited {
            Ok(w) => w,
            Err(_) => match peek(&stream) {
                Waiting::Nothing => {
                    ticket.note_closed(&"no request before its deadline");
                    return;
                }
                w => w,
            },
        },
        () = ticket.shed() => peek(&stream),
    };
    if waited != Waiting::Request {
        return;
    }
    ticket.forgive_shed();
    let Ok(socket) = stream.into_std() else {
        return;
    };
    daemon.spawn(async move {
        if let Ok(stream) = TcpStream::from_std(socket) {
            serve(stream, ticket).await;
        }
    });
}

/// Waits until `stream` has a request waiting or is closed. Part of a
/// frame leaves the socket readable; the readiness is cleared after each
/// look, so the next wake-up is for new bytes. A peer that has finished
/// sending without a whole request is done: its readiness stays set (the
/// kernel reports the close for good), and looking again would spin.
async fn first_request(stream: &TcpStream) -> Waiting {
    loop {
        let Ok(ready) = stream.ready(Interest::READABLE).await else {
            return Waiting::Closed;
        };
        let looked = stream.try_io(Interest::READABLE, || match peek(stream) {
            Waiting::Nothing if ready.is_read_closed() => Ok(Waiting::Closed),
            Waiting::Nothing => Err(io::ErrorKind::WouldBlock.into()),
            other => Ok(other),
        });
        if let Ok(w) = looked {
            return w;
        }
    }
}

impl Drop for Lobby {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_request_is_a_whole_frame_or_a_large_frames_start() {
        assert_eq!(classify(&[]), Waiting::Nothing);
        assert_eq!(classify(&[0, 0]), Waiting::Nothing);
        let mut half = 100u32.to_be_bytes().to_vec();
        half.extend_from_slice(b"{\"version\"");
        assert_eq!(classify(&half), Waiting::Nothing);
        let mut whole = 3u32.to_be_bytes().to_vec();
        whole.extend_from_slice(b"{}\n");
        assert_eq!(classify(&whole), Waiting::Request);
        let mut large = (1u32 << 20).to_be_bytes().to_vec();
        large.resize(PEEK_BYTES, b' ');
        assert_eq!(classify(&large), Waiting::Request);
        assert_eq!(classify(&large[..PEEK_BYTES - 1]), Waiting::Nothing);
        assert_eq!(classify(&0u32.to_be_bytes()), Waiting::Request);
    }

    /// A peer that sent half a frame and closed leaves the lobby at once
    /// (its readiness stays set: looking again and again would spin until
    /// the deadline, and keep the lobby's thread from everything else);
    /// one that sends a whole frame in two parts leaves with it.
    #[test]
    fn a_closed_peer_and_a_late_request_leave_the_lobby_at_once() {
        use std::io::Write;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let mut half = std::net::TcpStream::connect(addr).expect("connect");
            half.write_all(&100u32.to_be_bytes()).expect("write");
            half.write_all(b"{\"version\"").expect("write");
            drop(half);
            let (stream, _) = listener.accept().await.expect("accept");
            let w = tokio::time::timeout(Duration::from_secs(5), first_request(&stream)).await;
            assert_eq!(w, Ok(Waiting::Closed));

            let mut late = std::net::TcpStream::connect(addr).expect("connect");
            let (stream, _) = listener.accept().await.expect("accept");
            assert_eq!(peek(&stream), Waiting::Nothing);
            late.write_all(&3u32.to_be_bytes()).expect("write");
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                late.write_all(b"{}\n").expect("write");
                late
            });
            let w = tokio::time::timeout(Duration::from_secs(5), first_request(&stream)).await;
            assert_eq!(w, Ok(Waiting::Request));
            drop(writer.join());
        });
    }
}
