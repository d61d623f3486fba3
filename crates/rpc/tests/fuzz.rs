//! Hostile input for the framing: arbitrary bytes, oversized and truncated
//! frames, JSON of the wrong shape, deep nesting, other protocol versions,
//! and peers that stall. Every case must end in `Ok` or an `RpcError`,
//! never a panic, a hang, or an allocation near the announced length of a
//! frame that never arrives.

use proptest::prelude::*;
use proto::{CtldRequest, CtldResponse, Envelope, Identity, NodeRequest, NodeResponse};
use proto::{MAX_FRAME_BYTES, PROTOCOL_VERSION};
use rpc::RpcError;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Read;
use std::time::{Duration, Instant};

/// Records the largest single allocation made by the current thread, so a
/// test can check what reading one frame reserved.
struct PeakAlloc;

thread_local! {
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the thread's slot may already be gone while it exits.
    let _ = PEAK.try_with(|p| p.set(p.get().max(size)));
}

// SAFETY: every call is forwarded to `System` unchanged; the bookkeeping
// only touches a const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// The largest allocation `f` made on this thread.
fn peak_alloc_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    PEAK.with(|p| p.set(0));
    let out = f();
    (out, PEAK.with(Cell::get))
}

fn ident() -> Identity {
    Identity {
        uid: 1000,
        gid: 1000,
        user: "u".into(),
        host: "h".into(),
    }
}

/// `body` behind a 4-byte big-endian length.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn read_ctld(bytes: &[u8]) -> Result<Envelope<CtldRequest>, RpcError> {
    rpc::read_frame(&mut &bytes[..])
}

/// Reads with every message type a daemon or command decodes; none may panic.
fn read_all_kinds(bytes: &[u8]) {
    let _ = rpc::read_frame::<_, CtldRequest>(&mut &bytes[..]);
    let _ = rpc::read_frame::<_, CtldResponse>(&mut &bytes[..]);
    let _ = rpc::read_frame::<_, NodeRequest>(&mut &bytes[..]);
    let _ = rpc::read_frame::<_, NodeResponse>(&mut &bytes[..]);
    let _ = rpc::read_frame::<_, serde_json::Value>(&mut &bytes[..]);
}

/// A reader that hands out at most `chunk` bytes per `read`, as a socket may.
struct Dribble<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Arbitrary JSON, a few levels deep.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("Ping"),
            Just("Submit"),
            Just("Cancel"),
            Just("LaunchBatch"),
            Just("version"),
            Just("body")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("version".to_string()),
                    Just("identity".to_string()),
                    Just("body".to_string()),
                    Just("Submit".to_string()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        read_all_kinds(&bytes);
    }

    #[test]
    fn arbitrary_body_in_a_well_formed_frame_never_panics(
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        read_all_kinds(&framed(&body));
    }

    #[test]
    fn arbitrary_binary_body_never_panics(
        version in prop::sample::select(vec![0u8, 1, 2, 0x7f]),
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        // A binary frame (magic byte, the version's varint, then anything)
        // as the controller reads submissions.
        let mut frame = vec![rpc::BINARY_MAGIC, version];
        frame.extend_from_slice(&body);
        read_all_kinds(&framed(&frame));
        let mut r = &framed(&frame)[..];
        let _ = runtime().block_on(rpc::read_frame_async::<_, CtldRequest>(
            &mut r,
            Duration::from_secs(5),
        ));
    }

    #[test]
    fn oversized_length_is_refused_after_reading_only_the_prefix(
        len in (MAX_FRAME_BYTES + 1)..=u32::MAX,
        tail in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(&tail);
        let mut cursor = std::io::Cursor::new(&bytes[..]);
        let (res, peak) = peak_alloc_of(|| rpc::read_frame::<_, CtldRequest>(&mut cursor));
        let refused_as_too_large = matches!(res, Err(RpcError::TooLarge { len: l, max }) if l == len && max == MAX_FRAME_BYTES);
        prop_assert!(refused_as_too_large);
        prop_assert_eq!(cursor.position(), 4);
        prop_assert!(peak < 4096, "allocated {} bytes for a refused frame", peak);
    }

    #[test]
    fn truncated_frame_is_an_eof_and_allocates_little(
        len in 1u32..=MAX_FRAME_BYTES,
        have in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        prop_assume!((have.len() as u64) < u64::from(len));
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(&have);
        let (res, peak) = peak_alloc_of(|| read_ctld(&bytes));
        let eof = matches!(&res, Err(RpcError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof);
        prop_assert!(eof, "{:?}", res);
        prop_assert!(peak <= 256 * 1024, "allocated {} bytes for {} received", peak, have.len());
    }

    #[test]
    fn truncated_valid_frame_never_decodes(cut in any::<prop::sample::Index>()) {
        let mut full = Vec::new();
        rpc::write_frame(&mut full, &rpc::envelope(ident(), CtldRequest::Ping)).unwrap();
        prop_assert!(read_ctld(&full[..cut.index(full.len())]).is_err());
    }

    #[test]
    fn valid_frame_decodes_whatever_the_read_sizes(chunk in 1usize..64) {
        let mut full = Vec::new();
        rpc::write_frame(&mut full, &rpc::envelope(ident(), CtldRequest::Ping)).unwrap();
        let env: Envelope<CtldRequest> =
            rpc::read_frame(&mut Dribble { data: &full, chunk }).unwrap();
        prop_assert!(matches!(env.body, CtldRequest::Ping));
    }

    #[test]
    fn json_of_the_wrong_shape_is_refused_not_panicked_on(value in json_value()) {
        let body = serde_json::to_vec(&value).unwrap();
        read_all_kinds(&framed(&body));
        // The same value as the body of an otherwise valid envelope.
        let env = serde_json::json!({"version": PROTOCOL_VERSION, "identity": ident(), "body": value});
        read_all_kinds(&framed(&serde_json::to_vec(&env).unwrap()));
    }

    #[test]
    fn any_other_version_is_a_version_error_whatever_the_body(
        version in any::<u32>(),
        value in json_value(),
    ) {
        prop_assume!(version != PROTOCOL_VERSION);
        let env = serde_json::json!({"version": version, "identity": ident(), "body": value});
        let res = read_ctld(&framed(&serde_json::to_vec(&env).unwrap()));
        let refused = matches!(res, Err(RpcError::Version { found, .. }) if found == version);
        prop_assert!(refused, "{:?}", res);
    }

    #[test]
    fn async_reader_agrees_with_the_blocking_one(bytes in prop::collection::vec(any::<u8>(), 0..128)) {
        let framed_bytes = framed(&bytes);
        for input in [&bytes[..], &framed_bytes[..]] {
            let blocking = rpc::read_frame::<_, CtldRequest>(&mut &input[..]);
            let mut reader = input;
            let asynch = runtime().block_on(rpc::read_frame_async::<_, CtldRequest>(
                &mut reader,
                Duration::from_secs(5),
            ));
            // Only the blocking (client) side reads binary frames; the
            // servers' async side refuses them as malformed JSON.
            if input.len() > 4 && input[4] == rpc::BINARY_MAGIC {
                prop_assert!(asynch.is_err());
                continue;
            }
            prop_assert_eq!(
                blocking.as_ref().err().map(std::mem::discriminant),
                asynch.as_ref().err().map(std::mem::discriminant)
            );
        }
    }
}

/// `depth` nested arrays or objects around `null`.
fn nested(depth: usize, object: bool) -> Vec<u8> {
    let (open, close): (&[u8], &[u8]) = if object {
        (b"{\"a\":", b"}")
    } else {
        (b"[", b"]")
    };
    let mut out = Vec::new();
    for _ in 0..depth {
        out.extend_from_slice(open);
    }
    out.extend_from_slice(b"null");
    for _ in 0..depth {
        out.extend_from_slice(close);
    }
    out
}

/// Deep nesting anywhere in a frame: at the top, as the body, as the
/// identity, and under a field the receiver ignores. Each comes with
/// whether it must be refused: an ignored field is skipped without
/// recursion, so a deep one there is harmless and the Ping decodes.
fn deep_frames(depth: usize) -> Vec<(Vec<u8>, bool)> {
    let mut frames = Vec::new();
    let who = r#"{"uid":1,"gid":1,"user":"u","host":"h"}"#;
    for object in [false, true] {
        let deep = String::from_utf8(nested(depth, object)).unwrap();
        for (doc, refused) in [
            (deep.clone(), true),
            (
                format!(r#"{{"version":1,"identity":{who},"body":{deep}}}"#),
                true,
            ),
            (
                format!(r#"{{"version":1,"identity":{deep},"body":"Ping"}}"#),
                true,
            ),
            (
                format!(r#"{{"version":1,"identity":{who},"body":{{"Submit":{deep}}}}}"#),
                true,
            ),
            (
                format!(r#"{{"version":1,"identity":{who},"body":"Ping","extra":{deep}}}"#),
                false,
            ),
        ] {
            frames.push((framed(doc.as_bytes()), refused));
        }
    }
    frames
}

#[test]
fn deeply_nested_json_is_refused_without_overflowing_the_stack() {
    // Test threads have the default 2 MiB stack, as tokio's workers do.
    for (frame, refused) in deep_frames(100_000) {
        read_all_kinds(&frame);
        assert_eq!(read_ctld(&frame).is_err(), refused);
    }
}

#[test]
fn deeply_nested_json_is_refused_on_a_tokio_worker() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::spawn(async {
            for (frame, refused) in deep_frames(100_000) {
                let mut r = &frame[..];
                let res =
                    rpc::read_frame_async::<_, CtldRequest>(&mut r, Duration::from_secs(5)).await;
                assert_eq!(res.is_err(), refused);
            }
        })
        .await
        .unwrap();
    });
}

#[test]
fn future_version_with_an_unknown_request_is_a_version_error() {
    let doc = format!(
        r#"{{"version":{},"identity":{{"uid":1,"gid":1,"user":"u","host":"h"}},"body":{{"RequestFromTheFuture":{{"x":1}}}}}}"#,
        PROTOCOL_VERSION + 1
    );
    let res = read_ctld(&framed(doc.as_bytes()));
    assert!(
        matches!(res, Err(RpcError::Version { found, .. }) if found == PROTOCOL_VERSION + 1),
        "{res:?}"
    );
}

#[test]
fn current_version_with_an_unknown_request_is_malformed() {
    let doc = format!(
        r#"{{"version":{PROTOCOL_VERSION},"identity":{{"uid":1,"gid":1,"user":"u","host":"h"}},"body":"NoSuchRequest"}}"#
    );
    let res = read_ctld(&framed(doc.as_bytes()));
    assert!(matches!(res, Err(RpcError::Malformed(_))), "{res:?}");
}

#[test]
fn announced_maximum_with_a_few_bytes_allocates_little() {
    let mut bytes = MAX_FRAME_BYTES.to_be_bytes().to_vec();
    bytes.extend_from_slice(b"{\"version\":1");
    let (res, peak) = peak_alloc_of(|| read_ctld(&bytes));
    assert!(res.is_err());
    assert!(peak <= 256 * 1024, "allocated {peak} bytes");
    let (res, peak) = peak_alloc_of(|| {
        runtime().block_on(async {
            let mut r = &bytes[..];
            rpc::read_frame_async::<_, CtldRequest>(&mut r, Duration::from_secs(5)).await
        })
    });
    assert!(res.is_err());
    assert!(peak <= 256 * 1024, "allocated {peak} bytes");
}

#[test]
fn idle_peer_times_out() {
    let rt = runtime();
    rt.block_on(async {
        // The write half is kept open and never written: a peer that
        // connected and sends nothing.
        let (_writer, mut reader) = tokio::io::duplex(64);
        let start = Instant::now();
        let res =
            rpc::read_frame_async::<_, CtldRequest>(&mut reader, Duration::from_millis(100)).await;
        assert!(matches!(res, Err(RpcError::Timeout)), "{res:?}");
        assert!(start.elapsed() < Duration::from_secs(2));
    });
}

#[test]
fn peer_that_stalls_mid_frame_times_out() {
    use tokio::io::AsyncWriteExt;
    let rt = runtime();
    rt.block_on(async {
        for prefix in [
            &[0u8, 0][..],
            &0x8000_0000u32.to_be_bytes()[..],
            &[0, 0, 0, 100, b'{'][..],
            &MAX_FRAME_BYTES.to_be_bytes()[..],
        ] {
            let (mut writer, mut reader) = tokio::io::duplex(64);
            writer.write_all(prefix).await.unwrap();
            let res =
                rpc::read_frame_async::<_, CtldRequest>(&mut reader, Duration::from_millis(100))
                    .await;
            // A length above the limit is refused at once; anything else waits
            // for bytes that never come.
            if u32::from_be_bytes(prefix[..4.min(prefix.len())].try_into().unwrap_or([0; 4]))
                > MAX_FRAME_BYTES
            {
                assert!(matches!(res, Err(RpcError::TooLarge { .. })), "{res:?}");
            } else {
                assert!(matches!(res, Err(RpcError::Timeout)), "{res:?}");
            }
        }
    });
}

#[test]
fn peer_that_hangs_up_mid_frame_is_an_eof() {
    use tokio::io::AsyncWriteExt;
    let rt = runtime();
    rt.block_on(async {
        let (mut writer, mut reader) = tokio::io::duplex(64);
        writer.write_all(&[0, 0, 0, 100, b'{']).await.unwrap();
        drop(writer);
        let res =
            rpc::read_frame_async::<_, CtldRequest>(&mut reader, Duration::from_secs(5)).await;
        assert!(
            matches!(&res, Err(RpcError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof),
            "{res:?}"
        );
    });
}

#[test]
fn frame_at_the_limit_is_read_and_one_byte_more_is_refused() {
    // A body of exactly MAX_FRAME_BYTES: JSON whitespace around a Ping.
    let env = serde_json::to_vec(&rpc::envelope(ident(), CtldRequest::Ping)).unwrap();
    let mut body = env.clone();
    body.resize(MAX_FRAME_BYTES as usize, b' ');
    let env_back: Envelope<CtldRequest> = rpc::read_frame(&mut &framed(&body)[..]).unwrap();
    assert!(matches!(env_back.body, CtldRequest::Ping));
    body.push(b' ');
    let res = read_ctld(&framed(&body));
    assert!(matches!(res, Err(RpcError::TooLarge { .. })), "{res:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn a_receiver_limit_below_the_frame_limit_is_enforced(max in 0u32..=u32::MAX, len in any::<u32>()) {
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        let mut r = &bytes[..];
        let res = runtime().block_on(rpc::read_frame_async_max::<_, CtldRequest>(
            &mut r,
            Duration::from_secs(5),
            max,
        ));
        let effective = max.min(MAX_FRAME_BYTES);
        if len > effective {
            let refused = matches!(res, Err(RpcError::TooLarge { len: l, max: m }) if l == len && m == effective);
            prop_assert!(refused, "{:?}", res);
        } else {
            prop_assert!(!matches!(res, Err(RpcError::TooLarge { .. })), "{:?}", res);
        }
    }
}
