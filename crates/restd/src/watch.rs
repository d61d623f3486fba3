//! `GET /muster/v1/watch`: the controller's job and node changes as
//! Server-Sent Events (docs/rest.md, "Watch stream").
//!
//! ```text
//!  HTTP client <-- SSE (SseBody) <-- channel <-- a thread: Client::watch
//!                                                  <-- ctld (proto::watch)
//! ```
//!
//! Each event is one change: `id: EPOCH.SEQ` (the controller process and
//! the change's number), `event: job` or `event: node`, and one line of
//! JSON (the schema `muster_v1_watch_event` of the OpenAPI document). A
//! client that reconnects with `Last-Event-ID` (browsers' EventSource do)
//! gets the changes it missed, as far as the controller's ring goes; when
//! it does not go back that far, the first event is `event: reset`: read
//! the state afresh (`GET /slurm/v0.0.38/jobs`, `/nodes`) and carry on.
//! A comment line (`: keepalive`) comes every 15 s on a quiet stream.

use crate::api::{Ctx, Resp};
use crate::json::{obj, J};
use crate::v0038;
use hyper::body::{Bytes, Frame};
use proto::watch::{JobChange, NodeChange, WatchBatch, WatchChange, WatchEvent, WatchPosition};
use proto::{CtldRequest, Identity};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The route's path.
pub const PATH: &str = "/muster/v1/watch";

/// The route's operation id (`api::ROUTES`); the server streams this one
/// instead of calling its handler.
pub const OP: &str = "muster_v1_watch";

/// The query parameters taken (any other is refused by name).
pub const QUERY: &[(&str, &str)] = &[
    (
        "user",
        "Only the jobs of this user (name or uid); node changes are not filtered by user",
    ),
    (
        "job",
        "Only this job (or the tasks of this array); node changes are not filtered by job",
    ),
    ("partition", "Only jobs and nodes of this partition"),
    ("kinds", "Comma separated: job, node (default: both)"),
    (
        "last_event_id",
        "Resume after this event id, as the Last-Event-ID header does",
    ),
];

/// SSE frames waiting for a slow HTTP client before the stream is ended
/// (it reconnects with Last-Event-ID).
const QUEUE: usize = 1024;

/// The body of a watch answer: frames as the watching thread makes them.
pub struct SseBody {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for SseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

/// A refusal of the request, as the other routes write them.
fn bad_request(why: &str) -> Resp {
    Resp::json(
        400,
        &v0038::answer(
            false,
            vec![v0038::error(why, -1, "Unspecified error", "muster_watch")],
            vec![],
        ),
    )
}

/// `EPOCH.SEQ`, as the stream writes ids.
pub fn parse_event_id(s: &str) -> Option<WatchPosition> {
    let (epoch, seq) = s.trim().split_once('.')?;
    Some(WatchPosition {
        epoch: epoch.parse().ok()?,
        seq: seq.parse().ok()?,
    })
}

/// The watch the query and `Last-Event-ID` ask for, or the refusal.
pub fn request(
    query: &[(String, String)],
    last_event_id: Option<&str>,
) -> Result<proto::watch::WatchRequest, String> {
    let mut req = proto::watch::WatchRequest {
        jobs: true,
        nodes: true,
        ..Default::default()
    };
    let mut after = last_event_id.filter(|s| !s.trim().is_empty());
    for (k, v) in query {
        match k.as_str() {
            "user" => req.user = Some(v.clone()),
            "job" => {
                let id = v.split('_').next().unwrap_or(v);
                req.job = Some(id.parse().map_err(|_| format!("invalid job id {v}"))?);
            }
            "partition" => req.partition = Some(v.clone()),
            "kinds" => {
                req.jobs = false;
                req.nodes = false;
                for kind in v.split(',').filter(|s| !s.is_empty()) {
                    match kind {
                        "job" | "jobs" => req.jobs = true,
                        "node" | "nodes" => req.nodes = true,
                        other => return Err(format!("invalid kind {other}: expected job or node")),
                    }
                }
            }
            "last_event_id" => after = after.or(Some(v.as_str())),
            other => return Err(format!("query parameter {other} is not supported here")),
        }
    }
    if let Some(id) = after {
        req.after = Some(parse_event_id(id).ok_or_else(|| format!("invalid event id {id}"))?);
    }
    Ok(req)
}

fn exit_code(e: model::ExitCode) -> J {
    obj(vec![
        ("return_code", J::from(e.code)),
        ("signal", J::from(e.signal)),
    ])
}

fn opt_u32(v: Option<u32>) -> J {
    v.map_or(J::Null, J::from)
}

fn job_json(time: i64, j: &JobChange) -> J {
    obj(vec![
        ("kind", J::from("job")),
        ("event", J::from(j.event.as_str())),
        ("time", J::from(time)),
        ("job_id", J::from(j.job_id.0)),
        ("array_job_id", opt_u32(j.array_job_id)),
        ("array_task_id", opt_u32(j.array_task_id)),
        ("name", J::from(&j.name)),
        ("user", J::from(&j.user)),
        ("user_id", J::from(j.uid)),
        ("partition", J::from(&j.partition)),
        ("state", J::from(j.state.as_slurm_str())),
        (
            "previous_state",
            j.previous.map_or(J::Null, |s| J::from(s.as_slurm_str())),
        ),
        ("reason", J::from(&j.reason)),
        ("nodes", J::from(&j.nodes)),
        ("exit_code", j.exit_code.map_or(J::Null, exit_code)),
    ])
}

fn node_json(time: i64, n: &NodeChange) -> J {
    obj(vec![
        ("kind", J::from("node")),
        ("event", J::from("state_changed")),
        ("time", J::from(time)),
        ("name", J::from(&n.name)),
        ("state", J::from(&n.state)),
        ("previous_state", J::from(&n.previous)),
        ("reason", n.reason.as_ref().map_or(J::Null, J::from)),
        ("partitions", crate::json::strs(&n.partitions)),
    ])
}

/// An event's data, as the stream writes it (and the document describes).
pub fn event_json(e: &WatchEvent) -> J {
    match &e.change {
        WatchChange::Job(j) => job_json(e.time, j),
        WatchChange::Node(n) => node_json(e.time, n),
    }
}

/// Examples of both kinds of event, for the document's schema.
pub fn examples() -> Vec<J> {
    let job = JobChange {
        event: proto::watch::JobEvent::Ended,
        job_id: model::JobId(1),
        array_job_id: Some(1),
        array_task_id: Some(0),
        name: "job".into(),
        user: "user".into(),
        uid: 1000,
        partition: "debug".into(),
        state: model::JobState::Completed,
        previous: Some(model::JobState::Running),
        reason: "None".into(),
        nodes: "node1".into(),
        exit_code: Some(model::ExitCode::default()),
    };
    let node = NodeChange {
        name: "node1".into(),
        state: "IDLE".into(),
        previous: "ALLOCATED".into(),
        reason: Some("maintenance".into()),
        partitions: vec!["debug".into()],
    };
    vec![job_json(0, &job), node_json(0, &node)]
}

/// One line of JSON, keys in the order given (SSE data is line based).
fn line(v: &J) -> String {
    fn write(v: &J, out: &mut String) {
        match v {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Int(n) => out.push_str(&n.to_string()),
            J::Float(f) => out.push_str(&serde_json::Value::from(*f).to_string()),
            J::Str(s) => out.push_str(&serde_json::Value::from(s.as_str()).to_string()),
            J::Raw(_) => out.push_str(&v.to_value().to_string()),
            J::Arr(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            J::Obj(pairs) => {
                out.push('{');
                for (i, (k, x)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::from(k.as_str()).to_string());
                    out.push(':');
                    write(x, out);
                }
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// A batch as SSE text; empty for an empty batch that is not a reset.
pub fn sse(batch: &WatchBatch) -> String {
    let mut out = String::new();
    if batch.reset {
        out.push_str(&format!(
            "id: {}.{}\nevent: reset\ndata: {}\n\n",
            batch.epoch,
            batch.last,
            line(&obj(vec![(
                "reason",
                J::from(
                    "the controller no longer holds the events after the given id: \
                     read the state again, then go on with this stream",
                ),
            )]))
        ));
    }
    for e in &batch.events {
        let kind = match e.change {
            WatchChange::Job(_) => "job",
            WatchChange::Node(_) => "node",
        };
        out.push_str(&format!(
            "id: {}.{}\nevent: {kind}\ndata: {}\n\n",
            batch.epoch,
            e.seq,
            line(&event_json(e))
        ));
    }
    out
}

/// What the server answers: a stream, or a refusal.
pub enum Answer {
    /// 200, `text/event-stream`.
    Stream(SseBody),
    /// An error.
    Refused(Resp),
}

/// Opens the stream for `who`: waits for the controller's first batch
/// (so that a refusal is an HTTP error), then streams.
pub async fn open<C>(
    owner: Arc<C>,
    who: Identity,
    query: &[(String, String)],
    last_event_id: Option<&str>,
) -> Answer
where
    C: AsRef<Ctx> + Send + Sync + 'static,
{
    let req = match request(query, last_event_id) {
        Ok(r) => r,
        Err(why) => return Answer::Refused(bad_request(&why)),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(QUEUE);
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<Result<(), Resp>>();
    let spawned = std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || {
            let ctx: &Ctx = (*owner).as_ref();
            let req = if who.uid == ctx.client.identity().uid {
                CtldRequest::Watch(req)
            } else {
                CtldRequest::OnBehalf {
                    user: who.clone(),
                    request: Box::new(CtldRequest::Watch(req)),
                }
            };
            let mut first_tx = Some(first_tx);
            let result = ctx.client.watch(req, |batch| {
                if let Some(f) = first_tx.take() {
                    let _ = f.send(Ok(()));
                }
                let text = sse(&batch);
                let text = if text.is_empty() {
                    ": keepalive\n\n".to_string()
                } else {
                    text
                };
                tx.blocking_send(Bytes::from(text)).is_ok()
            });
            if let Err(e) = result {
                match first_tx.take() {
                    Some(f) => {
                        let resp = crate::api::refused_watch(&e);
                        let _ = f.send(Err(resp));
                    }
                    None => {
                        // Ended under way (the controller stopped): the
                        // client reconnects with its last id.
                        tracing::info!("a watch stream ended: {e}");
                    }
                }
            }
        });
    if let Err(e) = spawned {
        return Answer::Refused(bad_request(&format!("cannot start a watch: {e}")));
    }
    match first_rx.await {
        Ok(Ok(())) => Answer::Stream(SseBody { rx }),
        Ok(Err(resp)) => Answer::Refused(resp),
        Err(_) => Answer::Refused(bad_request("the watch ended before it started")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_make_watches_and_bad_ones_are_refused() {
        let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let r = request(&q(&[("kinds", "node"), ("partition", "gpu")]), None).unwrap();
        assert!(!r.jobs && r.nodes);
        assert_eq!(r.partition.as_deref(), Some("gpu"));
        let r = request(&q(&[("job", "12_3")]), Some("17.5")).unwrap();
        assert_eq!(r.job, Some(12));
        assert_eq!(r.after, Some(WatchPosition { epoch: 17, seq: 5 }));
        assert!(request(&q(&[("kinds", "steps")]), None).is_err());
        assert!(request(&q(&[("bogus", "1")]), None).is_err());
        assert!(request(&[], Some("nope")).is_err());
    }

    #[test]
    fn batches_become_sse_events_with_ids() {
        let batch = WatchBatch {
            epoch: 9,
            reset: true,
            last: 3,
            events: vec![WatchEvent {
                seq: 4,
                time: 100,
                change: WatchChange::Node(NodeChange {
                    name: "n1".into(),
                    state: "IDLE".into(),
                    previous: "MIXED".into(),
                    reason: None,
                    partitions: vec!["debug".into()],
                }),
            }],
        };
        let text = sse(&batch);
        assert!(text.starts_with("id: 9.3\nevent: reset\ndata: {"), "{text}");
        assert!(text.contains("id: 9.4\nevent: node\ndata: {\"kind\":\"node\",\"event\":\"state_changed\",\"time\":100,\"name\":\"n1\",\"state\":\"IDLE\",\"previous_state\":\"MIXED\",\"reason\":null,\"partitions\":[\"debug\"]}\n\n"), "{text}");
        assert_eq!(sse(&WatchBatch::default()), "");
    }
}
