//! Transport for muster's messages: a 4-byte big-endian length, then one
//! `proto::Envelope`: a JSON document, or (`Encoding::Binary`, between
//! commands and controller of one build) a magic byte and postcard. Both a blocking form (for the
//! commands, which make one request and exit) and a tokio form (for the
//! daemons) over the same framing.
//!
//! Frames larger than `proto::MAX_FRAME_BYTES` are refused before any
//! allocation, and every read has a timeout, so a hostile or stuck peer
//! cannot make a daemon allocate without bound or hang.
//!
//! # Performance notes: several requests on one connection
//!
//! `Conn` is a blocking connection that carries several requests, in turn or
//! several at once (`Conn::call_many`, frames built with `append_frame`). The
//! controller reads up to 64 requests ahead on a connection while earlier ones
//! wait for the engine and the journal, passes them to the engine in the order
//! read, answers them in that order (answers that are ready together in one
//! write, a binary request in binary), and drops a connection idle for
//! `IO_TIMEOUT`.

pub mod admission;
pub mod lobby;

use proto::{Envelope, Identity, MAX_FRAME_BYTES, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION};
use serde::{de::DeserializeOwned, Serialize};
use std::io::{Read, Write};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a peer may take to send a whole frame.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// Transport failures.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The socket failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The peer announced a frame above the limit.
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Announced length.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// The frame was not a valid message.
    #[error("malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A binary frame was not a valid message (or came from a controller
    /// of another build: the binary form is positional).
    #[error("malformed binary message (a controller of another version?): {0}")]
    MalformedBinary(#[from] postcard::Error),
    /// The peer speaks a protocol version this build does not.
    #[error("protocol version {found} is not supported (this build speaks {min}..={max})")]
    Version {
        /// The peer's version.
        found: u32,
        /// Oldest supported.
        min: u32,
        /// Newest supported.
        max: u32,
    },
    /// The peer did not answer in time.
    #[error("timed out")]
    Timeout,
}

fn check_len(len: u32, max: u32) -> Result<(), RpcError> {
    if len > max {
        return Err(RpcError::TooLarge { len, max });
    }
    Ok(())
}

fn check_version<T>(env: &Envelope<T>) -> Result<(), RpcError> {
    if env.version < MIN_PROTOCOL_VERSION || env.version > PROTOCOL_VERSION {
        return Err(RpcError::Version {
            found: env.version,
            min: MIN_PROTOCOL_VERSION,
            max: PROTOCOL_VERSION,
        });
    }
    Ok(())
}

/// How much of a frame's buffer is reserved before its bytes arrive. The
/// buffer grows as they do, so a peer that announces a large frame and then
/// stalls or hangs up costs this much, not the announced length.
const INITIAL_FRAME_CAPACITY: u32 = 64 * 1024;

fn initial_capacity(len: u32) -> usize {
    len.min(INITIAL_FRAME_CAPACITY) as usize
}

/// A frame cut short by the peer closing the connection is an
/// `UnexpectedEof`, as `read_exact` would report it.
fn check_complete(buf: &[u8], len: u32) -> Result<(), RpcError> {
    if buf.len() < len as usize {
        return Err(RpcError::Io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("frame truncated at {} of {len} bytes", buf.len()),
        )));
    }
    Ok(())
}

/// Only the envelope's version, to tell a peer of another protocol version
/// from a malformed message when the body does not decode.
#[derive(serde::Deserialize)]
struct VersionOnly {
    version: u32,
}

/// Decodes one frame's bytes. A body this build cannot read from a peer of
/// an unsupported version is a `Version` error, not `Malformed`, so the
/// receiver can answer with `SlurmError::ProtocolVersion`.
/// How a frame's message is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// JSON: every request, and every answer but the bulky ones.
    Json,
    /// [`BINARY_MAGIC`], then postcard: large listings the controller sends
    /// to commands (`QueryJobs`), read only by the blocking client side,
    /// and submissions (`CtldRequest::Submit`) from the client library to
    /// the controller (a job description with its environment: about a
    /// third of its JSON size, decoded several times faster). Positional and compact (a JobInfo of about 120 bytes; MessagePack
    /// with field names was measured twice as slow as this at 10,000 jobs),
    /// so types sent this way must not skip fields when serializing, which
    /// their round-trip test checks, and commands and controller must be of
    /// the same build (a mismatch is a decode error, never misread data
    /// passed on silently: field types and lengths are checked).
    Binary,
}

/// First byte of a binary frame. JSON text never starts with it (it is not
/// even a valid UTF-8 lead byte).
pub const BINARY_MAGIC: u8 = 0xB1;

/// A frame: its 4-byte length, then `msg` encoded as `enc`.
fn encode_frame<T: Serialize>(msg: &T, enc: Encoding, max: u32) -> Result<Vec<u8>, RpcError> {
    let mut out = Vec::with_capacity(1024);
    append_frame(&mut out, msg, enc, max)?;
    Ok(out)
}

/// Appends one frame (`msg` encoded as `enc`, at most `max` bytes) to
/// `out`, which may already hold frames: several requests or answers
/// then leave in one write. On error `out` is left as it was.
pub fn append_frame<T: Serialize>(
    out: &mut Vec<u8>,
    msg: &T,
    enc: Encoding,
    max: u32,
) -> Result<(), RpcError> {
    let start = out.len();
    out.extend_from_slice(&[0u8; 4]);
    let encoded = match enc {
        Encoding::Json => serde_json::to_writer(&mut *out, msg).map_err(RpcError::from),
        Encoding::Binary => {
            out.push(BINARY_MAGIC);
            postcard::to_io(msg, &mut *out)
                .map(|_| ())
                .map_err(RpcError::from)
        }
    };
    let len = out.len() - start - 4;
    let checked = encoded.and_then(|()| {
        let len = u32::try_from(len).map_err(|_| RpcError::TooLarge { len: u32::MAX, max })?;
        check_len(len, max)?;
        Ok(len)
    });
    match checked {
        Ok(len) => {
            out[start..start + 4].copy_from_slice(&len.to_be_bytes());
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Decodes a frame that may be binary (see [`Encoding::Binary`]). The
/// envelope's version is its first field: a binary frame of another
/// protocol version is a `Version` error before its positional body is
/// read, since only this very layout can be read back.
fn decode_any<T: DeserializeOwned>(buf: &[u8]) -> Result<Envelope<T>, RpcError> {
    match buf.split_first() {
        Some((&BINARY_MAGIC, rest)) => {
            let (version, _) = postcard::take_from_bytes::<u32>(rest)?;
            if version != PROTOCOL_VERSION {
                return Err(RpcError::Version {
                    found: version,
                    min: PROTOCOL_VERSION,
                    max: PROTOCOL_VERSION,
                });
            }
            let env: Envelope<T> = postcard::from_bytes(rest)?;
            check_version(&env)?;
            Ok(env)
        }
        _ => decode(buf),
    }
}

fn decode<T: DeserializeOwned>(buf: &[u8]) -> Result<Envelope<T>, RpcError> {
    match serde_json::from_slice::<Envelope<T>>(buf) {
        Ok(env) => {
            check_version(&env)?;
            Ok(env)
        }
        Err(e) => match serde_json::from_slice::<VersionOnly>(buf) {
            Ok(v) if !(MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&v.version) => {
                Err(RpcError::Version {
                    found: v.version,
                    min: MIN_PROTOCOL_VERSION,
                    max: PROTOCOL_VERSION,
                })
            }
            _ => Err(RpcError::Malformed(e)),
        },
    }
}

/// Wraps `body` in an envelope of this build's version, without a
/// credential (answers, and tests of refusals).
pub fn envelope<T>(identity: Identity, body: T) -> Envelope<T> {
    signed_envelope(identity, None, body)
}

/// Wraps `body` in an envelope of this build's version carrying
/// `credential` (see crate `auth`).
pub fn signed_envelope<T>(identity: Identity, credential: Option<String>, body: T) -> Envelope<T> {
    Envelope {
        version: PROTOCOL_VERSION,
        identity,
        credential,
        body,
    }
}

/// Writes one frame (blocking).
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), RpcError> {
    write_frame_enc(w, msg, Encoding::Json)
}

/// [`write_frame`] in a chosen encoding. Length and body go out in one
/// write (one TCP segment for a small request, not two).
pub fn write_frame_enc<W: Write, T: Serialize>(
    w: &mut W,
    msg: &T,
    enc: Encoding,
) -> Result<(), RpcError> {
    let out = encode_frame(msg, enc, MAX_FRAME_BYTES)?;
    w.write_all(&out)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame (blocking).
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<Envelope<T>, RpcError> {
    read_frame_max(r, MAX_FRAME_BYTES)
}

/// [`read_frame`] with another limit: commands read the controller's
/// answers under `proto::MAX_RESPONSE_BYTES`.
pub fn read_frame_max<R: Read, T: DeserializeOwned>(
    r: &mut R,
    max: u32,
) -> Result<Envelope<T>, RpcError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    check_len(len, max)?;
    let mut buf = Vec::with_capacity(initial_capacity(len));
    r.take(u64::from(len)).read_to_end(&mut buf)?;
    check_complete(&buf, len)?;
    decode_any(&buf)
}

/// One blocking request and its answer over a fresh TCP connection.
pub fn call_blocking<Req: Serialize, Resp: DeserializeOwned>(
    addr: &str,
    identity: Identity,
    credential: Option<String>,
    req: Req,
    timeout: Duration,
) -> Result<Resp, RpcError> {
    Conn::connect(addr, timeout)?.call(identity, credential, req)
}

/// A blocking connection to a server that answers several requests in
/// turn on one connection (the controller does), so a busy client pays the
/// TCP handshake once. Requests on one connection are answered in order.
pub struct Conn {
    /// Reads through a buffer: an answer's length and body usually come
    /// in one read.
    stream: std::io::BufReader<std::net::TcpStream>,
    last_used: std::time::Instant,
}

impl Conn {
    /// Connects to the first address of `addr` that accepts.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Conn, RpcError> {
        use std::net::ToSocketAddrs;
        let mut last = None;
        for sa in addr.to_socket_addrs()? {
            match std::net::TcpStream::connect_timeout(&sa, timeout) {
                Ok(s) => {
                    s.set_read_timeout(Some(timeout))?;
                    s.set_write_timeout(Some(timeout))?;
                    s.set_nodelay(true)?;
                    return Ok(Conn {
                        stream: std::io::BufReader::with_capacity(16 * 1024, s),
                        last_used: std::time::Instant::now(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(RpcError::Io(last.unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "no address")
        })))
    }

    /// Sets how long a read waits (a stream's answers come when they
    /// come: `proto::watch`).
    pub fn set_read_timeout(&self, timeout: Duration) -> Result<(), RpcError> {
        self.stream.get_ref().set_read_timeout(Some(timeout))?;
        Ok(())
    }

    /// How long since the connection last carried a request.
    pub fn idle(&self) -> Duration {
        self.last_used.elapsed()
    }

    /// One request and its answer.
    pub fn call<Req: Serialize, Resp: DeserializeOwned>(
        &mut self,
        identity: Identity,
        credential: Option<String>,
        req: Req,
    ) -> Result<Resp, RpcError> {
        self.call_enc(identity, credential, &req, Encoding::Json)
    }

    /// [`Conn::call`] with the request borrowed (a retry sends it again
    /// without copying it) and sent in `enc`: [`Encoding::Binary`] only to
    /// a server of this very build, which the controller is for the
    /// commands (it refuses a binary frame of another protocol version).
    pub fn call_enc<Req: Serialize, Resp: DeserializeOwned>(
        &mut self,
        identity: Identity,
        credential: Option<String>,
        req: &Req,
        enc: Encoding,
    ) -> Result<Resp, RpcError> {
        self.last_used = std::time::Instant::now();
        write_frame_enc(
            self.stream.get_mut(),
            &signed_envelope(identity, credential, req),
            enc,
        )?;
        let env: Envelope<Resp> =
            read_frame_max(&mut self.stream, proto::MAX_RESPONSE_BYTES).map_err(timeout_of)?;
        self.last_used = std::time::Instant::now();
        Ok(env.body)
    }

    /// The next answer frame of a request whose answer comes in several
    /// (a streamed job listing: `proto::JobFilter::stream`).
    pub fn read_more<Resp: DeserializeOwned>(&mut self) -> Result<Resp, RpcError> {
        let env: Envelope<Resp> =
            read_frame_max(&mut self.stream, proto::MAX_RESPONSE_BYTES).map_err(timeout_of)?;
        self.last_used = std::time::Instant::now();
        Ok(env.body)
    }
}

impl Conn {
    /// Several requests in flight at once: `frames` holds `count` request
    /// frames back to back (built with [`append_frame`]), sent in one
    /// write; then their `count` answers are read, in order. The server
    /// must answer requests in the order it reads them (the controller
    /// does). Returns the answers that arrived, and the error that ended
    /// the exchange early, if any: requests after the last answer may or
    /// may not have been carried out.
    ///
    /// `count` must stay small (the controller reads ahead a bounded
    /// number of requests, and the answers must fit the socket buffers
    /// while this side is still writing).
    pub fn call_many<Resp: DeserializeOwned>(
        &mut self,
        frames: &[u8],
        count: usize,
    ) -> (Vec<Resp>, Option<RpcError>) {
        self.last_used = std::time::Instant::now();
        let mut answers = Vec::with_capacity(count);
        let sent = self
            .stream
            .get_mut()
            .write_all(frames)
            .and_then(|()| self.stream.get_mut().flush());
        if let Err(e) = sent {
            return (answers, Some(e.into()));
        }
        while answers.len() < count {
            match read_frame_max::<_, Resp>(&mut self.stream, proto::MAX_RESPONSE_BYTES) {
                Ok(env) => answers.push(env.body),
                Err(e) => return (answers, Some(timeout_of(e))),
            }
        }
        self.last_used = std::time::Instant::now();
        (answers, None)
    }
}

/// A read that gave up on the socket's timeout is a `Timeout`.
fn timeout_of(e: RpcError) -> RpcError {
    match e {
        RpcError::Io(ref io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            RpcError::Timeout
        }
        other => other,
    }
}

/// Writes one frame (async).
pub async fn write_frame_async<W, T>(w: &mut W, msg: &T) -> Result<(), RpcError>
where
    W: tokio::io::AsyncWrite + Unpin,
    T: Serialize,
{
    write_frame_async_max(w, msg, MAX_FRAME_BYTES).await
}

/// [`write_frame_async`] with another limit: the controller answers
/// commands under `proto::MAX_RESPONSE_BYTES`.
pub async fn write_frame_async_max<W, T>(w: &mut W, msg: &T, max: u32) -> Result<(), RpcError>
where
    W: tokio::io::AsyncWrite + Unpin,
    T: Serialize,
{
    write_frame_async_enc(w, msg, max, Encoding::Json).await
}

/// [`write_frame_async_max`] in a chosen encoding.
pub async fn write_frame_async_enc<W, T>(
    w: &mut W,
    msg: &T,
    max: u32,
    enc: Encoding,
) -> Result<(), RpcError>
where
    W: tokio::io::AsyncWrite + Unpin,
    T: Serialize,
{
    let out = encode_frame(msg, enc, max)?;
    w.write_all(&out).await?;
    w.flush().await?;
    Ok(())
}

/// Reads one frame (async), failing with `Timeout` unless the whole frame
/// has arrived within `timeout` of the call, so a peer that connects and
/// sends nothing, or half a frame, is dropped as surely as a slow one.
pub async fn read_frame_async<R, T>(r: &mut R, timeout: Duration) -> Result<Envelope<T>, RpcError>
where
    R: tokio::io::AsyncRead + Unpin,
    T: DeserializeOwned,
{
    read_frame_async_max(r, timeout, MAX_FRAME_BYTES).await
}

/// [`read_frame_async`] with a frame limit below `MAX_FRAME_BYTES`, for a
/// receiver that must keep what it stores of a request under a limit of
/// its own (the controller journals each request as one record).
pub async fn read_frame_async_max<R, T>(
    r: &mut R,
    timeout: Duration,
    max: u32,
) -> Result<Envelope<T>, RpcError>
where
    R: tokio::io::AsyncRead + Unpin,
    T: DeserializeOwned,
{
    read_frame_async_enc(r, timeout, max)
        .await
        .map(|(env, _)| env)
}

/// [`read_frame_async_max`], also saying how the frame was encoded, so a
/// server can answer a binary request in binary.
pub async fn read_frame_async_enc<R, T>(
    r: &mut R,
    timeout: Duration,
    max: u32,
) -> Result<(Envelope<T>, Encoding), RpcError>
where
    R: tokio::io::AsyncRead + Unpin,
    T: DeserializeOwned,
{
    read_frame_async_timed(r, max, |_| timeout).await
}

/// [`read_frame_async_enc`] with the time allowed set by the frame's
/// announced length: the whole frame must arrive within `timeout(len)` of
/// the call, and its length prefix within `timeout(0)`. For a peer that
/// must authenticate quickly, except where its first frame is large.
pub async fn read_frame_async_timed<R, T>(
    r: &mut R,
    max: u32,
    timeout: impl Fn(u32) -> Duration,
) -> Result<(Envelope<T>, Encoding), RpcError>
where
    R: tokio::io::AsyncRead + Unpin,
    T: DeserializeOwned,
{
    let max = max.min(MAX_FRAME_BYTES);
    let start = tokio::time::Instant::now();
    let mut len = [0u8; 4];
    match tokio::time::timeout(timeout(0), r.read_exact(&mut len)).await {
        Ok(read) => read?,
        Err(_) => return Err(RpcError::Timeout),
    };
    let len = u32::from_be_bytes(len);
    check_len(len, max)?;
    let body = async {
        let mut buf = Vec::with_capacity(initial_capacity(len));
        (&mut *r).take(u64::from(len)).read_to_end(&mut buf).await?;
        check_complete(&buf, len)?;
        let enc = if buf.first() == Some(&BINARY_MAGIC) {
            Encoding::Binary
        } else {
            Encoding::Json
        };
        decode_any(&buf).map(|env| (env, enc))
    };
    match tokio::time::timeout_at(start + timeout(len), body).await {
        Ok(r) => r,
        Err(_) => Err(RpcError::Timeout),
    }
}

/// One async request and its answer over a fresh TCP connection.
pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
    addr: &str,
    identity: Identity,
    credential: Option<String>,
    req: Req,
    timeout: Duration,
) -> Result<Resp, RpcError> {
    let fut = async {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        write_frame_async(&mut s, &signed_envelope(identity, credential, req)).await?;
        let env: Envelope<Resp> = read_frame_async(&mut s, timeout).await?;
        Ok::<_, RpcError>(env.body)
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(RpcError::Timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident() -> Identity {
        Identity {
            uid: 0,
            gid: 0,
            user: "root".into(),
            host: "h".into(),
        }
    }

    #[test]
    fn frame_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &envelope(ident(), proto::CtldRequest::Ping)).unwrap();
        let env: Envelope<proto::CtldRequest> = read_frame(&mut buf.as_slice()).unwrap();
        assert!(matches!(env.body, proto::CtldRequest::Ping));
    }

    #[test]
    fn appended_frames_read_back_in_order_and_a_failed_one_leaves_nothing() {
        let mut out = Vec::new();
        append_frame(
            &mut out,
            &envelope(ident(), proto::CtldRequest::Ping),
            Encoding::Json,
            MAX_FRAME_BYTES,
        )
        .unwrap();
        let submit = proto::CtldRequest::Submit(Box::new(busy_desc()));
        append_frame(
            &mut out,
            &envelope(ident(), &submit),
            Encoding::Binary,
            MAX_FRAME_BYTES,
        )
        .unwrap();
        let before = out.clone();
        // Over the limit: refused, and the frames already there are intact.
        let err = append_frame(&mut out, &envelope(ident(), &submit), Encoding::Json, 16);
        assert!(matches!(err, Err(RpcError::TooLarge { .. })), "{err:?}");
        assert_eq!(out, before);
        let mut r = out.as_slice();
        let a: Envelope<proto::CtldRequest> = read_frame(&mut r).unwrap();
        assert!(matches!(a.body, proto::CtldRequest::Ping));
        let b: Envelope<proto::CtldRequest> = read_frame(&mut r).unwrap();
        match b.body {
            proto::CtldRequest::Submit(d) => assert_eq!(*d, busy_desc()),
            other => panic!("{other:?}"),
        }
        assert!(r.is_empty());
        // The async reader says how each frame was encoded.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut r = out.as_slice();
        let encs: Vec<Encoding> = (0..2)
            .map(|_| {
                rt.block_on(read_frame_async_enc::<_, proto::CtldRequest>(
                    &mut r,
                    IO_TIMEOUT,
                    MAX_FRAME_BYTES,
                ))
                .unwrap()
                .1
            })
            .collect();
        assert_eq!(encs, [Encoding::Json, Encoding::Binary]);
    }

    #[test]
    fn oversized_frame_is_refused_before_allocation() {
        let mut buf = (MAX_FRAME_BYTES + 1).to_be_bytes().to_vec();
        buf.extend_from_slice(b"{}");
        let err = read_frame::<_, proto::CtldRequest>(&mut buf.as_slice()).unwrap_err();
        assert!(matches!(err, RpcError::TooLarge { .. }));
    }

    #[test]
    fn garbage_frame_is_malformed() {
        let mut buf = 5u32.to_be_bytes().to_vec();
        buf.extend_from_slice(b"hello");
        let err = read_frame::<_, proto::CtldRequest>(&mut buf.as_slice()).unwrap_err();
        assert!(matches!(err, RpcError::Malformed(_)));
    }

    #[test]
    fn future_version_is_refused() {
        let mut env = envelope(ident(), proto::CtldRequest::Ping);
        env.version = PROTOCOL_VERSION + 1;
        let mut buf = Vec::new();
        write_frame(&mut buf, &env).unwrap();
        let err = read_frame::<_, proto::CtldRequest>(&mut buf.as_slice()).unwrap_err();
        assert!(matches!(err, RpcError::Version { .. }));
    }

    fn busy_desc() -> proto::JobDesc {
        proto::JobDesc {
            name: "train \"x\"\n".into(),
            script: "#!/bin/sh\nsrun a.out\n".into(),
            argv: vec!["--flag".into()],
            command: Some("/home/u/job.sh".into()),
            work_dir: "/home/u".into(),
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("WEIRD".into(), "a=b\nc \u{e9}".into()),
            ]
            .into(),
            partitions: vec!["p1".into(), "p2".into()],
            min_nodes: Some(2),
            mem_per_cpu: Some(100),
            time_limit: Some(model::TimeLimit::Minutes(30)),
            stdout: Some("out-%j".into()),
            hold: true,
            begin_time: Some(1_700_000_000),
            comment: Some("c".into()),
            nice: -5,
            uid: 1000,
            gid: 100,
            user: "u".into(),
            array: Some("0-9%2".into()),
            deadline: Some(1_800_000_000),
            ..proto::JobDesc::default()
        }
    }

    #[test]
    fn submissions_round_trip_in_binary_to_the_async_reader() {
        for desc in [proto::JobDesc::default(), busy_desc()] {
            let req = proto::CtldRequest::Submit(Box::new(desc.clone()));
            let env = signed_envelope(ident(), Some("cred".into()), &req);
            let mut buf = Vec::new();
            write_frame_enc(&mut buf, &env, Encoding::Binary).unwrap();
            assert_eq!(buf[4], BINARY_MAGIC);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let back: Envelope<proto::CtldRequest> = rt
                .block_on(read_frame_async(&mut &buf[..], IO_TIMEOUT))
                .unwrap();
            assert_eq!(back.credential.as_deref(), Some("cred"));
            assert_eq!(back.identity, ident());
            match back.body {
                proto::CtldRequest::Submit(d) => assert_eq!(*d, desc),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_binary_frame_of_another_version_is_a_version_error() {
        let req = proto::CtldRequest::Submit(Box::new(busy_desc()));
        let mut env = signed_envelope(ident(), None, &req);
        env.version = PROTOCOL_VERSION + 1;
        let frame = encode_frame(&env, Encoding::Binary, u32::MAX).unwrap();
        let err = read_frame::<_, proto::CtldRequest>(&mut &frame[..]).unwrap_err();
        assert!(matches!(err, RpcError::Version { .. }), "{err:?}");
    }

    #[test]
    fn job_listings_round_trip_in_binary() {
        use proto::{CtldResponse, JobInfo, JobList};
        // A default JobInfo is where a skipped field would show: postcard is
        // positional, so any `skip_serializing_if` on JobInfo breaks this.
        let mut busy = JobInfo {
            name: "train".into(),
            nodes: vec!["node1".into(), "node2".into()],
            start_time: Some(1_700_000_000),
            comment: Some("x".into()),
            sched_nodes: vec!["node3".into()],
            ..JobInfo::default()
        };
        busy.job_id.0 = 42;
        let list = JobList {
            now: 1_700_000_100,
            jobs: vec![JobInfo::default(), busy],
        };
        let msg = envelope(ident(), CtldResponse::Jobs(list.clone()));
        let frame = encode_frame(&msg, Encoding::Binary, u32::MAX).unwrap();
        assert_eq!(frame[4], BINARY_MAGIC);
        let back: Envelope<CtldResponse> = read_frame(&mut &frame[..]).unwrap();
        match back.body {
            CtldResponse::Jobs(l) => assert_eq!(l, list),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn job_rows_round_trip_in_binary() {
        use proto::{CtldResponse, JobFilter, JobInfo, JobList, JobRows};
        let mut busy = JobInfo {
            name: "train".into(),
            nodes: vec!["node1".into(), "node2".into()],
            start_time: Some(1_700_000_000),
            sched_nodes: vec!["node3".into()],
            array_task_str: Some("1-3".into()),
            ..JobInfo::default()
        };
        busy.job_id.0 = 42;
        let list = JobList {
            now: 1_700_000_100,
            jobs: vec![JobInfo::default(), busy],
        };
        let rows = JobRows::from_list(&list, &JobFilter::default());
        let msg = envelope(ident(), CtldResponse::JobRows(rows.clone()));
        let frame = encode_frame(&msg, Encoding::Binary, u32::MAX).unwrap();
        let back: Envelope<CtldResponse> = read_frame(&mut &frame[..]).unwrap();
        match back.body {
            CtldResponse::JobRows(r) => assert_eq!(r, rows),
            other => panic!("{other:?}"),
        }
    }
}
