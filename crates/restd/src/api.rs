//! The routes, who is calling, and the handlers. One table ([`ROUTES`])
//! drives both the dispatch and the OpenAPI document (`openapi`).
//!
//! Handlers are blocking (the client library is): the server runs each in
//! `tokio::task::spawn_blocking`.

use crate::json::{obj, J};
use crate::{metrics, v0038};
use client::ClientError;
use hyper::body::Bytes;
use proto::{CtldRequest, CtldResponse, Identity, SlurmError};

/// What a handler answers.
#[derive(Debug)]
pub struct Resp {
    /// The HTTP status.
    pub status: u16,
    /// The body, in pieces sent one after the other (a job listing's
    /// jobs are texts kept between listings: `jobcache`).
    pub body: Vec<Bytes>,
    /// Its type.
    pub content_type: &'static str,
}

impl Resp {
    /// A JSON answer.
    pub fn json(status: u16, v: &J) -> Resp {
        Resp {
            status,
            body: v.to_slurm_chunks(),
            content_type: "application/json",
        }
    }

    /// An answer of `text`.
    pub fn text(status: u16, text: String, content_type: &'static str) -> Resp {
        Resp {
            status,
            body: vec![Bytes::from(text)],
            content_type,
        }
    }

    /// The body whole, as text.
    pub fn body_text(&self) -> String {
        let bytes: Vec<u8> = self.body.iter().flat_map(|b| b.iter().copied()).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// The reason phrase slurmrestd sends with a status.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "BAD REQUEST",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        404 => "NOT FOUND",
        405 => "METHOD NOT ALLOWED",
        413 => "PAYLOAD TOO LARGE",
        _ => "INTERNAL ERROR",
    }
}

/// A request as the handlers see it.
#[derive(Debug, Default)]
pub struct Call {
    /// `GET`, `POST`, `DELETE`.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query's `key=value` pairs, percent-decoded.
    pub query: Vec<(String, String)>,
    /// The path's `{name}` parts, by name.
    pub params: Params,
    /// The body.
    pub body: Vec<u8>,
    /// The `Accept` header (`/metrics` answers OpenMetrics on request).
    pub accept: String,
}

impl Call {
    /// A path parameter.
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// A query parameter.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server holds for the handlers.
pub struct Ctx {
    /// The client, as restd's own user (root or SlurmUser to act for
    /// others: `CtldRequest::OnBehalf`).
    pub client: client::Client,
    /// ClusterName.
    pub cluster: String,
    /// The first SlurmctldHost, for ping.
    pub ctld_host: String,
    /// Counters for `/metrics`.
    pub metrics: metrics::Counters,
    /// The jobs of the last v0.0.38 listing, as written.
    pub jobs_v0038: crate::jobcache::JobCache,
    /// The jobs of the last v0.0.44 listing, as written.
    pub jobs_v0044: crate::jobcache::JobCache,
}

impl Ctx {
    /// `req` as `caller`: directly when restd runs as the caller, else
    /// wrapped in `OnBehalf`, which the controller takes only from root
    /// and SlurmUser.
    pub fn call(&self, caller: &Identity, req: CtldRequest) -> Result<CtldResponse, ClientError> {
        let resp = if caller.uid == self.client.identity().uid {
            self.client.call(req)
        } else {
            self.client.call(CtldRequest::OnBehalf {
                user: caller.clone(),
                request: Box::new(req),
            })
        }?;
        match resp {
            CtldResponse::Error(e) => Err(ClientError::Refused(e)),
            resp => Ok(resp),
        }
    }
}

/// A handler.
pub type Handler = fn(&Ctx, &Identity, &Call) -> Resp;

/// One route.
pub struct Route {
    /// The method.
    pub method: &'static str,
    /// The path, with `{name}` parameters.
    pub path: &'static str,
    /// OpenAPI operationId (slurmrestd's).
    pub op: &'static str,
    /// OpenAPI summary (slurmrestd's).
    pub summary: &'static str,
    /// Query parameters it reads: (name, description).
    pub query: &'static [(&'static str, &'static str)],
    /// The schema of its answer (`#/components/schemas/...`).
    pub schema: &'static str,
    /// Whether it needs an authenticated user (all but the documents).
    pub auth: bool,
    /// The handler.
    pub handler: Handler,
}

/// Every route restd serves.
pub const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/diag",
        op: "slurm_v0_0_38_diag",
        summary: "get diagnostics",
        query: &[],
        schema: "v0.0.38_diag",
        auth: true,
        handler: diag,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/licenses",
        op: "slurm_v0_0_38_slurmctld_get_licenses",
        summary: "get all Slurm tracked license info",
        query: &[],
        schema: "v0.0.38_licenses",
        auth: true,
        handler: licenses,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/ping",
        op: "slurm_v0_0_38_ping",
        summary: "ping test",
        query: &[],
        schema: "v0.0.38_pings",
        auth: true,
        handler: ping,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/jobs",
        op: "slurm_v0_0_38_get_jobs",
        summary: "get list of jobs",
        query: &[(
            "update_time",
            "Filter if changed since update_time. Use of this parameter can result in faster replies.",
        )],
        schema: "v0.0.38_jobs_response",
        auth: true,
        handler: jobs,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/job/{job_id}",
        op: "slurm_v0_0_38_get_job",
        summary: "get job info",
        query: &[],
        schema: "v0.0.38_jobs_response",
        auth: true,
        handler: job,
    },
    Route {
        method: "POST",
        path: "/slurm/v0.0.38/job/{job_id}",
        op: "slurm_v0_0_38_update_job",
        summary: "update job",
        query: &[],
        schema: "v0.0.38_errors",
        auth: true,
        handler: update,
    },
    Route {
        method: "DELETE",
        path: "/slurm/v0.0.38/job/{job_id}",
        op: "slurm_v0_0_38_cancel_job",
        summary: "cancel or signal job",
        query: &[("signal", "signal to send to job")],
        schema: "v0.0.38_errors",
        auth: true,
        handler: cancel,
    },
    Route {
        method: "POST",
        path: "/slurm/v0.0.38/job/submit",
        op: "slurm_v0_0_38_submit_job",
        summary: "submit new job",
        query: &[],
        schema: "v0.0.38_job_submission_response",
        auth: true,
        handler: submit,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/nodes",
        op: "slurm_v0_0_38_get_nodes",
        summary: "get all node info",
        query: &[("update_time", "Filter if changed since update_time.")],
        schema: "v0.0.38_nodes_response",
        auth: true,
        handler: nodes,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/node/{node_name}",
        op: "slurm_v0_0_38_get_node",
        summary: "get node info",
        query: &[],
        schema: "v0.0.38_nodes_response",
        auth: true,
        handler: node,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/partitions",
        op: "slurm_v0_0_38_get_partitions",
        summary: "get all partition info",
        query: &[("update_time", "Filter if changed since update_time.")],
        schema: "v0.0.38_partitions_response",
        auth: true,
        handler: partitions,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/partition/{partition_name}",
        op: "slurm_v0_0_38_get_partition",
        summary: "get partition info",
        query: &[],
        schema: "v0.0.38_partitions_response",
        auth: true,
        handler: partition,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/reservations",
        op: "slurm_v0_0_38_get_reservations",
        summary: "get all reservation info",
        query: &[],
        schema: "v0.0.38_reservations_response",
        auth: true,
        handler: reservations,
    },
    Route {
        method: "GET",
        path: "/slurm/v0.0.38/reservation/{reservation_name}",
        op: "slurm_v0_0_38_get_reservation",
        summary: "get reservation info",
        query: &[],
        schema: "v0.0.38_reservations_response",
        auth: true,
        handler: reservation,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/job/{job_id}",
        op: "slurmdb_v0_0_38_get_job",
        summary: "Get job info",
        query: &[],
        schema: "dbv0.0.38_job_info",
        auth: true,
        handler: db_job,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/jobs",
        op: "slurmdb_v0_0_38_get_jobs",
        summary: "Get job list",
        query: DB_JOB_QUERY,
        schema: "dbv0.0.38_job_info",
        auth: true,
        handler: db_jobs,
    },
    Route {
        method: "GET",
        path: "/openapi/v3",
        op: "openapi_v3",
        summary: "this document",
        query: &[],
        schema: "",
        auth: false,
        handler: openapi_doc,
    },
    Route {
        method: "GET",
        path: "/openapi.json",
        op: "openapi_json",
        summary: "this document",
        query: &[],
        schema: "",
        auth: false,
        handler: openapi_doc,
    },
    Route {
        method: "GET",
        path: "/openapi",
        op: "openapi",
        summary: "this document",
        query: &[],
        schema: "",
        auth: false,
        handler: openapi_doc,
    },
    Route {
        method: "GET",
        path: crate::watch::PATH,
        op: crate::watch::OP,
        summary: "job and node changes as they happen (Server-Sent Events)",
        query: crate::watch::QUERY,
        schema: "muster_v1_watch_event",
        auth: true,
        // Streamed by the server (`watch::open`); never called.
        handler: watch_not_streamed,
    },
    Route {
        method: "GET",
        path: "/metrics",
        op: "muster_metrics",
        summary: "the cluster's state and the controller's statistics in the Prometheus text format",
        query: &[],
        schema: "",
        auth: true,
        handler: metrics_doc,
    },
];

/// A path's `{name}` parts, by name.
pub type Params = Vec<(&'static str, String)>;

/// Every route restd serves: [`ROUTES`], slurmdbd's other v0.0.38 paths
/// (`dbv0038`) and the newer data parser's (`v0044`).
pub fn all_routes() -> impl Iterator<Item = &'static Route> {
    ROUTES
        .iter()
        .chain(crate::dbv0038::ROUTES)
        .chain(crate::v0044::ROUTES)
}

/// The route for `method` and `path`, with the path's parameters; or the
/// status that says why none: 404 (no such path) or 405 (not this method).
pub fn find(method: &str, path: &str) -> Result<(&'static Route, Params), u16> {
    let mut status = 404;
    // Literal paths first: `job/submit` is not the job `submit`.
    let literal = all_routes().filter(|r| !r.path.contains('{'));
    let templated = all_routes().filter(|r| r.path.contains('{'));
    for route in literal.chain(templated) {
        if let Some(params) = matches(route.path, path) {
            if route.method == method {
                return Ok((route, params));
            }
            status = 405;
        }
    }
    Err(status)
}

fn matches(pattern: &'static str, path: &str) -> Option<Vec<(&'static str, String)>> {
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    let mut params = Vec::new();
    let mut a = pattern.split('/');
    let mut b = path.split('/');
    loop {
        match (a.next(), b.next()) {
            (None, None) => return Some(params),
            (Some(p), Some(v)) => {
                if let Some(name) = p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    if v.is_empty() {
                        return None;
                    }
                    params.push((name, v.to_string()));
                } else if p != v {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

/// Whether a route is slurmdbd's (its answers name `dbv0.0.38`).
fn is_db(call: &Call) -> bool {
    call.path.starts_with("/slurmdb/")
}

/// The answer to a refusal of the controller.
fn refused(call: &Call, e: &ClientError, source: &str, description: &str) -> Resp {
    let (number, text) = match e {
        ClientError::Refused(s) => (v0038::errno(*s), s.as_slurm_str().to_string()),
        ClientError::Unreachable(_) => (
            1001,
            "Unable to contact slurm controller (connect failure)".to_string(),
        ),
        other => (-1, other.to_string()),
    };
    let description = if description.is_empty() {
        text.clone()
    } else {
        description.to_string()
    };
    Resp::json(
        500,
        &v0038::answer(
            is_db(call),
            vec![v0038::error(&description, number, &text, source)],
            vec![],
        ),
    )
}

fn ok(call: &Call, rest: Vec<(&str, J)>) -> Resp {
    Resp::json(200, &v0038::answer(is_db(call), vec![], rest))
}

fn unexpected(call: &Call, source: &str) -> Resp {
    refused(call, &ClientError::Unexpected, source, "")
}

/// The refusal of a request whose token is forged, expired or for another
/// user: what slurmrestd 22.05 answers when the controller refuses the
/// token (`rest_bad_token.response`).
pub fn bad_token() -> Resp {
    Resp::json(
        500,
        &v0038::answer(
            false,
            vec![v0038::error(
                "slurmctld config is unable to load",
                -1,
                "Unspecified error",
                "slurm_load_ctl_conf",
            )],
            vec![],
        ),
    )
}

/// The refusal of a request without any credential (no token headers, or
/// no peer credentials on a socket).
pub fn unauthenticated() -> Resp {
    Resp::json(
        401,
        &v0038::answer(
            false,
            vec![v0038::error(
                "Authentication failure",
                1007,
                "Protocol authentication error",
                "rest_authenticate_http_request",
            )],
            vec![],
        ),
    )
}

fn ping(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let up = ctx.call(who, CtldRequest::Ping).is_ok();
    ok(
        call,
        vec![("pings", J::Arr(vec![v0038::ping(&ctx.ctld_host, up)]))],
    )
}

/// The nodes' shapes, for jobs' `job_resources`; empty when no job holds
/// an allocation or the nodes cannot be listed.
pub(crate) fn topology(
    ctx: &Ctx,
    who: &Identity,
    jobs: &[proto::JobInfo],
) -> Vec<(String, u32, u32, u32)> {
    if jobs.iter().all(|j| j.nodes.is_empty()) {
        return Vec::new();
    }
    node_shapes(ctx, who)
}

/// Job `id` and, for an array's id, its tasks, as `who` may see them
/// (slurmrestd's `job/{id}`): the controller selects them
/// (`JobFilter::job_ids`) rather than sending every job.
pub(crate) fn jobs_of_id(
    ctx: &Ctx,
    who: &Identity,
    id: u32,
) -> Result<Vec<proto::JobInfo>, ClientError> {
    let filter = proto::JobFilter {
        job_ids: vec![id],
        ..proto::JobFilter::default()
    };
    match ctx.call(who, CtldRequest::QueryJobs(filter))? {
        CtldResponse::Jobs(list) => Ok(list
            .jobs
            .into_iter()
            .filter(|j| j.job_id.0 == id || j.array_job_id == Some(id))
            .collect()),
        _ => Err(ClientError::Unexpected),
    }
}

/// Every job `who` may see, written by `render` through `cache`: the
/// controller streams each job's bytes (`JobFilter::wire`, `stream`) and
/// each part is compared with the kept texts while the next is built.
pub(crate) fn job_listing(
    ctx: &Ctx,
    who: &Identity,
    cache: &crate::jobcache::JobCache,
    render: crate::jobcache::Render,
) -> Result<Vec<J>, ClientError> {
    let filter = proto::JobFilter {
        wire: true,
        stream: true,
        ..proto::JobFilter::default()
    };
    let req = if who.uid == ctx.client.identity().uid {
        CtldRequest::QueryJobs(filter)
    } else {
        CtldRequest::OnBehalf {
            user: who.clone(),
            request: Box::new(CtldRequest::QueryJobs(filter)),
        }
    };
    cache.listing_from(
        |each| ctx.client.job_wires(&req, |part| each(&part)),
        &ctx.cluster,
        || node_shapes(ctx, who),
        render,
    )
}

/// The nodes' shapes for a listing (`topology`), asked when a job holds
/// nodes.
pub(crate) fn node_shapes(ctx: &Ctx, who: &Identity) -> Vec<(String, u32, u32, u32)> {
    match ctx.call(who, CtldRequest::ListNodes) {
        Ok(CtldResponse::Nodes(nodes)) => nodes
            .into_iter()
            .map(|n| (n.name, n.sockets, n.cores_per_socket, n.threads_per_core))
            .collect(),
        _ => Vec::new(),
    }
}

fn jobs(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match job_listing(ctx, who, &ctx.jobs_v0038, v0038::job) {
        Ok(rendered) => ok(call, vec![("jobs", J::Arr(rendered))]),
        Err(e) => refused(call, &e, "slurm_load_jobs", ""),
    }
}

fn job_not_found(call: &Call, id: &str) -> Resp {
    Resp::json(
        500,
        &v0038::answer(
            is_db(call),
            vec![v0038::error(
                &format!("Unable to find JobId={id}"),
                2017,
                SlurmError::InvalidJobId.as_slurm_str(),
                "slurm_load_job",
            )],
            vec![("jobs", J::Arr(vec![]))],
        ),
    )
}

fn job(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let Ok(n) = id.parse::<u32>() else {
        return job_not_found(call, id);
    };
    let found = match jobs_of_id(ctx, who, n) {
        Ok(j) => j,
        Err(e) => return refused(call, &e, "slurm_load_job", ""),
    };
    if found.is_empty() {
        return job_not_found(call, id);
    }
    let topo = topology(ctx, who, &found);
    let rendered = found
        .iter()
        .map(|j| v0038::job(j, &ctx.cluster, &topo))
        .collect();
    ok(call, vec![("jobs", J::Arr(rendered))])
}

/// A signal by number or name (`9`, `KILL`, `SIGKILL`).
pub fn parse_signal(s: &str) -> Option<i32> {
    if let Ok(n) = s.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let name = s.to_ascii_uppercase();
    let name = name.strip_prefix("SIG").unwrap_or(&name);
    Some(match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ABRT" => 6,
        "KILL" => 9,
        "USR1" => 10,
        "SEGV" => 11,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        "CONT" => 18,
        "STOP" => 19,
        "TSTP" => 20,
        "URG" => 23,
        "XCPU" => 24,
        "XFSZ" => 25,
        "WINCH" => 28,
        _ => return None,
    })
}

fn cancel(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let Ok(n) = id.parse::<u32>() else {
        return refused(
            call,
            &ClientError::Refused(SlurmError::InvalidJobId),
            "slurm_kill_job",
            &format!("unable to parse job_id: {id}"),
        );
    };
    // slurmrestd sends SIGKILL without `signal`: a cancel.
    let signal = match call.query("signal") {
        None => None,
        Some(s) => match parse_signal(s) {
            Some(9) => None,
            Some(sig) => Some(sig),
            None => {
                return refused(
                    call,
                    &ClientError::Refused(SlurmError::InvalidRequest),
                    "slurm_kill_job",
                    &format!("unable to parse signal: {s}"),
                )
            }
        },
    };
    let req = CtldRequest::Cancel {
        job_id: model::JobId(n),
        signal,
        batch_only: false,
        full: signal.is_some(),
        tasks: None,
    };
    match ctx.call(who, req) {
        Ok(_) => ok(call, vec![]),
        Err(e) => {
            let text = match &e {
                ClientError::Refused(s) => s.as_slurm_str().to_string(),
                other => other.to_string(),
            };
            refused(
                call,
                &e,
                "slurm_kill_job",
                &format!("unable to kill job {n}: {text}"),
            )
        }
    }
}

fn update(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let Ok(n) = id.parse::<u32>() else {
        return refused(
            call,
            &ClientError::Refused(SlurmError::InvalidJobId),
            "slurm_update_job",
            &format!("unable to parse job_id: {id}"),
        );
    };
    let update = serde_json::from_slice::<serde_json::Value>(&call.body)
        .map_err(|e| format!("Unable to parse the request body: {e}"))
        .and_then(|b| crate::submit::job_update(&b));
    let update = match update {
        Ok(u) => u,
        Err(why) => {
            return Resp::json(
                500,
                &v0038::answer(
                    false,
                    vec![v0038::error(
                        &why,
                        -1,
                        "Unspecified error",
                        "slurm_update_job",
                    )],
                    vec![],
                ),
            )
        }
    };
    let req = CtldRequest::UpdateJob {
        job_id: model::JobId(n),
        update,
        tasks: None,
    };
    match ctx.call(who, req) {
        Ok(_) => ok(call, vec![]),
        Err(e) => refused(call, &e, "slurm_update_job", ""),
    }
}

fn submit(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let submit_refusal = |errors: Vec<J>| Resp::json(500, &v0038::answer(false, errors, vec![]));
    let body: serde_json::Value = match serde_json::from_slice(&call.body) {
        Ok(b) => b,
        Err(e) => {
            return submit_refusal(vec![obj(vec![
                ("error_code", J::Int(-1)),
                (
                    "error",
                    J::from(format!("Unable to parse the request body: {e}")),
                ),
            ])])
        }
    };
    // muster has no heterogeneous jobs: Slurm's refusal of an operation
    // the system does not support, in the submission's error shape.
    if body.get("jobs").is_some() {
        return submit_refusal(vec![v0038::submit_error(SlurmError::NotSupported)]);
    }
    let mut desc = match crate::submit::job_desc(&body) {
        Ok(d) => d,
        Err(why) => {
            return submit_refusal(vec![obj(vec![
                ("error_code", J::Int(-1)),
                ("error", J::from(why)),
            ])])
        }
    };
    desc.uid = who.uid;
    desc.gid = who.gid;
    desc.user = who.user.clone();
    desc.submit_host = who.host.clone();
    match ctx.call(who, CtldRequest::Submit(Box::new(desc))) {
        Ok(CtldResponse::Submitted(r)) => ok(
            call,
            vec![
                ("job_id", J::from(r.job_id.0)),
                ("step_id", J::from("BATCH")),
                ("job_submit_user_msg", J::from("")),
            ],
        ),
        Ok(_) => unexpected(call, "slurm_submit_batch_job"),
        Err(ClientError::Refused(e)) => submit_refusal(vec![v0038::submit_error(e)]),
        Err(e) => refused(call, &e, "slurm_submit_batch_job", ""),
    }
}

pub(crate) fn list_nodes(ctx: &Ctx, who: &Identity) -> Result<Vec<proto::NodeInfo>, ClientError> {
    match ctx.call(who, CtldRequest::ListNodes)? {
        CtldResponse::Nodes(n) => Ok(n),
        _ => Err(ClientError::Unexpected),
    }
}

fn nodes(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match list_nodes(ctx, who) {
        Ok(n) => ok(
            call,
            vec![("nodes", J::Arr(n.iter().map(v0038::node).collect()))],
        ),
        Err(e) => refused(call, &e, "slurm_load_node", ""),
    }
}

fn node(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("node_name");
    match list_nodes(ctx, who) {
        Ok(n) => match n.iter().find(|n| n.name == name) {
            Some(n) => ok(call, vec![("nodes", J::Arr(vec![v0038::node(n)]))]),
            None => refused(
                call,
                &ClientError::Refused(SlurmError::InvalidNodeName),
                "slurm_load_node_single",
                &format!("Invalid node name {name}"),
            ),
        },
        Err(e) => refused(call, &e, "slurm_load_node_single", ""),
    }
}

pub(crate) fn list_partitions(
    ctx: &Ctx,
    who: &Identity,
) -> Result<Vec<proto::PartitionInfo>, ClientError> {
    match ctx.call(who, CtldRequest::ListPartitions)? {
        CtldResponse::Partitions(p) => Ok(p),
        _ => Err(ClientError::Unexpected),
    }
}

fn partitions(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match list_partitions(ctx, who) {
        Ok(p) => ok(
            call,
            vec![(
                "partitions",
                J::Arr(p.iter().map(v0038::partition).collect()),
            )],
        ),
        Err(e) => refused(call, &e, "slurm_load_partitions", ""),
    }
}

fn partition(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("partition_name");
    match list_partitions(ctx, who) {
        Ok(p) => match p.iter().find(|p| p.name == name) {
            Some(p) => ok(
                call,
                vec![("partitions", J::Arr(vec![v0038::partition(p)]))],
            ),
            None => refused(
                call,
                &ClientError::Refused(SlurmError::InvalidPartitionName),
                "slurm_load_partitions",
                &format!("Unable to find partition {name}"),
            ),
        },
        Err(e) => refused(call, &e, "slurm_load_partitions", ""),
    }
}

/// The controller's reservations, as the caller may see them.
fn reservations(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match ctx.call(who, CtldRequest::ListReservations) {
        Ok(CtldResponse::Reservations(list)) => ok(
            call,
            vec![(
                "reservations",
                J::Arr(list.iter().map(v0038::reservation).collect()),
            )],
        ),
        Ok(_) => ok(call, vec![("reservations", J::Arr(vec![]))]),
        Err(e) => refused(call, &e, "slurm_load_reservations", ""),
    }
}

fn reservation(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("reservation_name");
    match ctx.call(who, CtldRequest::ListReservations) {
        Ok(CtldResponse::Reservations(list)) if list.iter().any(|r| r.name == name) => ok(
            call,
            vec![(
                "reservations",
                J::Arr(
                    list.iter()
                        .filter(|r| r.name == name)
                        .map(v0038::reservation)
                        .collect(),
                ),
            )],
        ),
        Ok(_) => Resp::json(
            500,
            &v0038::answer(
                false,
                vec![v0038::error(
                    &format!("Unable to find reservation {name}"),
                    -1,
                    "Unspecified error",
                    "slurm_load_reservations",
                )],
                vec![("reservations", J::Arr(vec![]))],
            ),
        ),
        Err(e) => refused(call, &e, "slurm_load_reservations", ""),
    }
}

fn diag(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match ctx.call(who, CtldRequest::Diag { reset: false }) {
        Ok(CtldResponse::Diag(d)) => ok(call, vec![("statistics", v0038::diag(&d))]),
        Ok(_) => unexpected(call, "slurm_get_statistics"),
        Err(e) => refused(call, &e, "slurm_get_statistics", ""),
    }
}

fn licenses(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match ctx.call(who, CtldRequest::ListLicenses) {
        Ok(CtldResponse::Licenses(l)) => ok(
            call,
            vec![("licenses", J::Arr(l.iter().map(v0038::license).collect()))],
        ),
        Ok(_) => unexpected(call, "slurm_load_licenses"),
        Err(e) => refused(call, &e, "slurm_load_licenses", ""),
    }
}

/// The query parameters of `GET /slurmdb/v0.0.38/jobs` that are taken;
/// any other is refused by name (never ignored): `dbquery`.
pub const DB_JOB_QUERY: &[(&str, &str)] = crate::dbquery::TAKEN;

fn db_error(call: &Call, description: &str, source: &str) -> Resp {
    Resp::json(
        500,
        &v0038::answer(
            is_db(call),
            vec![v0038::error(description, -1, "Unspecified error", source)],
            vec![],
        ),
    )
}

/// The name of group `gid`, or the number.
pub(crate) fn group_name(gid: u32) -> String {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map_or_else(|| gid.to_string(), |g| g.name)
}

/// The name of user `uid`, or the number.
pub(crate) fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name)
}

/// The accounting records `q` and `filter` select, or the refusal.
pub(crate) fn acct_jobs(
    ctx: &Ctx,
    who: &Identity,
    q: proto::AcctQuery,
    filter: &crate::dbquery::JobFilter,
) -> Result<Vec<proto::AcctJob>, ClientError> {
    let jobs = match ctx.call(who, CtldRequest::AcctQuery(q))? {
        CtldResponse::AcctJobs(j) => j,
        _ => return Err(ClientError::Unexpected),
    };
    Ok(jobs
        .into_iter()
        .filter(|j| filter.keeps(j, &group_name(j.gid)))
        .map(|mut j| {
            if filter.skip_steps {
                j.steps.clear();
            }
            j
        })
        .collect())
}

fn db_answer(
    ctx: &Ctx,
    who: &Identity,
    call: &Call,
    q: proto::AcctQuery,
    filter: &crate::dbquery::JobFilter,
) -> Resp {
    let jobs = match acct_jobs(ctx, who, q, filter) {
        Ok(j) => j,
        Err(ClientError::Unexpected) => return unexpected(call, "slurmdb_jobs_get"),
        Err(e) => return refused(call, &e, "slurmdb_jobs_get", ""),
    };
    let rendered = jobs
        .iter()
        .map(|j| {
            let killer = j.cancelled_by.map(user_name);
            v0038::db_job(j, &group_name(j.gid), killer.as_deref())
        })
        .collect();
    ok(call, vec![("jobs", J::Arr(rendered))])
}

fn db_job(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let Ok(n) = id.parse::<u32>() else {
        return db_error(call, &format!("Invalid job id: {id}"), "_dump_jobs");
    };
    let q = proto::AcctQuery {
        job_ids: vec![n],
        ..Default::default()
    };
    db_answer(ctx, who, call, q, &Default::default())
}

fn db_jobs(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match crate::dbquery::parse(&call.query) {
        Ok((q, filter)) => db_answer(ctx, who, call, q, &filter),
        Err(why) => db_error(call, &why, "_parse_job_cond"),
    }
}

fn watch_not_streamed(_ctx: &Ctx, _who: &Identity, call: &Call) -> Resp {
    unexpected(call, "muster_watch")
}

/// The answer when the controller refuses (or cannot serve) a watch.
pub fn refused_watch(e: &ClientError) -> Resp {
    let call = Call::default();
    refused(&call, e, "muster_watch", "")
}

fn openapi_doc(_ctx: &Ctx, _who: &Identity, _call: &Call) -> Resp {
    Resp::json(200, &crate::openapi::document())
}

fn metrics_doc(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let format = metrics::Format::of_accept(&call.accept);
    match metrics::render(ctx, who, format) {
        Ok(text) => Resp::text(200, text, format.content_type()),
        Err(e) => Resp::text(
            500,
            format!("# {e}\n"),
            "text/plain; version=0.0.4; charset=utf-8",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_with_their_parameters() {
        let (r, p) = find("GET", "/slurm/v0.0.38/job/42").unwrap();
        assert_eq!(r.op, "slurm_v0_0_38_get_job");
        assert_eq!(p, vec![("job_id", "42".to_string())]);
        let (r, _) = find("POST", "/slurm/v0.0.38/job/42").unwrap();
        assert_eq!(r.op, "slurm_v0_0_38_update_job");
        let (r, _) = find("DELETE", "/slurm/v0.0.38/job/42").unwrap();
        assert_eq!(r.op, "slurm_v0_0_38_cancel_job");
        // `job/submit` is not a job id for POST.
        assert_eq!(
            find("POST", "/slurm/v0.0.38/job/submit").unwrap().0.op,
            "slurm_v0_0_38_submit_job"
        );
        assert_eq!(find("GET", "/slurm/v0.0.38/nope").err(), Some(404));
        assert_eq!(find("PUT", "/slurm/v0.0.38/ping").err(), Some(405));
        assert!(find("GET", "/slurm/v0.0.38/ping/").is_ok());
    }

    #[test]
    fn signals_by_name_and_number() {
        assert_eq!(parse_signal("SIGUSR1"), Some(10));
        assert_eq!(parse_signal("term"), Some(15));
        assert_eq!(parse_signal("9"), Some(9));
        assert_eq!(parse_signal("SIGBOGUS"), None);
        assert_eq!(parse_signal("0"), None);
    }
}
